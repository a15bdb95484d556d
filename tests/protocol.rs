//! The socket protocol of the Player 0.7.4a manual, section 3, over real TCP: requests and
//! replies, data order and sizes, rates, and the access rules
//! (docs/reference/client-protocol-notes.md 3.2).

mod common;

use common::*;
use player_proto::data::{Gripper, Laser, Misc, Position, Ptz, Sonar, Vision};
use std::time::{Duration, Instant};

#[test]
fn server_sends_nothing_on_connect() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    c.expect_silence(500);
}

#[test]
fn multi_device_request_is_echoed_byte_for_byte() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    // d r <size 6> s r p a l r
    c.send(&[0x64, 0x72, 0x00, 0x06, 0x73, 0x72, 0x70, 0x61, 0x6C, 0x72]);
    // r <size 6> s r p a l r
    assert_eq!(
        c.read_exact(9),
        [0x72, 0x00, 0x06, 0x73, 0x72, 0x70, 0x61, 0x6C, 0x72]
    );
}

#[test]
fn manual_example_request_gets_the_manual_example_reply() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    // docs/reference/client-protocol-notes.md 1.2: "srpw"
    c.send(&[0x64, 0x72, 0x00, 0x04, 0x73, 0x72, 0x70, 0x77]);
    assert_eq!(c.read_exact(7), [0x72, 0x00, 0x04, 0x73, 0x72, 0x70, 0x77]);
}

#[test]
fn unknown_device_gets_e_while_the_others_are_granted() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    // d r <6> s r q r p r
    c.send(&[0x64, 0x72, 0x00, 0x06, b's', b'r', b'q', b'r', b'p', b'r']);
    assert_eq!(
        c.read_exact(9),
        [0x72, 0x00, 0x06, b's', b'r', b'q', b'e', b'p', b'r']
    );
    // Data for s and p only, in that order, never for q.
    for _ in 0..3 {
        assert_eq!(c.read_round_codes(2), [b's', b'p']);
    }
}

#[test]
fn empty_request_gets_an_empty_reply() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    c.send(&[0x64, 0x72, 0x00, 0x00]);
    assert_eq!(c.read_exact(3), [0x72, 0x00, 0x00]);
    c.expect_silence(300);
}

#[test]
fn an_odd_sized_request_ignores_the_trailing_byte() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    // d r <3> p r s: the lone `s` is ignored (the original echoed it with a stale byte).
    c.send(&[0x64, 0x72, 0x00, 0x03, b'p', b'r', b's']);
    assert_eq!(c.read_exact(5), [0x72, 0x00, 0x02, b'p', b'r']);
    assert_eq!(c.read_round_codes(1), [b'p']);
    assert_eq!(c.read_round_codes(1), [b'p']);
}

#[test]
fn an_unknown_access_code_changes_nothing() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    // Not held: the reply shows e. Held: the reply shows the access held.
    assert_eq!(c.request(&[(b'p', b'x')]), b"pe");
    assert_eq!(c.request(&[(b's', b'r')]), b"sr");
    assert_eq!(c.request(&[(b's', b'x'), (b'p', b'?')]), b"srpe");
    for _ in 0..3 {
        assert_eq!(c.read_message().0, b's');
    }
}

#[test]
fn a_request_with_a_second_byte_other_than_r_is_still_a_request() {
    // The manual requires `dr`; the original accepted any `d?` (notes 1.1), and so do we.
    let server = start_server();
    let mut c = Client::connect(server.addr());
    c.send(&[0x64, b'x', 0x00, 0x02, b'm', b'r']);
    assert_eq!(c.read_exact(5), [0x72, 0x00, 0x02, b'm', b'r']);
    assert_eq!(c.read_message().0, b'm');
}

#[test]
fn a_device_listed_twice_shows_its_final_access_both_times() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    // p r then p w in one request merge to a (notes 3.1, 3.2).
    c.send(&[0x64, 0x72, 0x00, 0x04, b'p', b'r', b'p', b'w']);
    assert_eq!(c.read_exact(7), [0x72, 0x00, 0x04, b'p', b'a', b'p', b'a']);
}

#[test]
fn reply_arrives_before_any_data() {
    let server = start_server();
    // Another client is already streaming the same devices, so data is flowing.
    let _other = Streamer::start(
        server.addr(),
        &[(b'p', b'r'), (b'l', b'r'), (b's', b'r')],
        Some(50),
    );
    for _ in 0..5 {
        let mut c = Client::connect(server.addr());
        c.frequency(100);
        let pairs = [(b'p', b'r'), (b'l', b'r'), (b's', b'r')];
        c.send_request(&pairs);
        let (kind, payload) = c.read_message();
        assert_eq!(kind, b'r', "the first message must be the reply");
        assert_eq!(payload, pairs_bytes(&pairs));
        assert_eq!(c.read_round_codes(3), [b'p', b'l', b's']);
    }
}

#[test]
fn data_comes_in_request_order_with_table_7_sizes() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    let order = [b'z', b'v', b'm', b'g', b'p', b's', b'l'];
    let pairs: Vec<(u8, u8)> = order.iter().map(|&d| (d, b'r')).collect();
    c.send_request(&pairs);
    assert_eq!(c.read_reply(), pairs_bytes(&pairs));
    for _ in 0..5 {
        let round = c.read_round(order.len());
        let codes: Vec<u8> = round.iter().map(|(d, _)| *d).collect();
        assert_eq!(codes, order, "data must come in the order requested");
        for (d, p) in &round {
            match d {
                b'l' => {
                    assert_eq!(p.len(), 722);
                    Laser::decode(p).unwrap();
                }
                b's' => {
                    assert_eq!(p.len(), 32);
                    Sonar::decode(p).unwrap();
                }
                b'p' => {
                    assert_eq!(p.len(), 21);
                    // Time: ms since the server started.
                    let pos = Position::decode(p).unwrap();
                    let now = server.server_ms();
                    assert!(
                        u64::from(pos.time) <= now && u64::from(pos.time) + 1000 >= now,
                        "position time {} ms, server up {now} ms",
                        pos.time
                    );
                }
                b'm' => {
                    assert_eq!(p.len(), 3);
                    Misc::decode(p).unwrap();
                }
                b'g' => {
                    assert_eq!(p.len(), 2);
                    Gripper::decode(p).unwrap();
                }
                b'z' => {
                    assert_eq!(p.len(), 6);
                    Ptz::decode(p).unwrap();
                }
                b'v' => {
                    // 64-byte ACTS header, then 10 bytes per blob; the counts in the header
                    // (count + 1 per channel) must match the size.
                    assert!(p.len() >= 64 && (p.len() - 64) % 10 == 0, "{}", p.len());
                    let blobs: usize = (0..32).map(|k| usize::from(p[2 * k + 1] - 1)).sum();
                    assert_eq!(p.len(), 64 + 10 * blobs);
                    Vision::decode(p).unwrap();
                }
                other => panic!("unexpected device {other}"),
            }
        }
    }
}

#[test]
fn the_simulated_camera_sees_the_red_ball_ahead() {
    // The default room puts a red ball (channel 0) 6 m straight ahead of the robot: the
    // vision packet is not just an empty header.
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'v', b'r')]), b"vr");
    let (d, p) = c.read_message();
    assert_eq!(d, b'v');
    let v = Vision::decode(&p).unwrap();
    assert!(!v.channels[0].is_empty(), "no blob on channel 0: {v:?}");
    assert_eq!(
        p.len(),
        64 + 10 * v.channels.iter().map(Vec::len).sum::<usize>()
    );
}

#[test]
fn default_rate_is_10_hz() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r'), (b's', b'r')]), b"prsr");
    let (n, secs) = count_rounds(&mut c, 2, Duration::from_secs(3));
    assert_rate(n, secs, 10.0, "default rate");
}

#[test]
fn two_clients_get_their_own_rates() {
    let server = start_server();
    let addr = server.addr();
    let measure = move |hz: u16| {
        std::thread::spawn(move || {
            let mut c = Client::connect(addr);
            // x y f <hz>, bytes spelled out as Table 8 gives them.
            let [hi, lo] = hz.to_be_bytes();
            c.send(&[0x78, 0x79, 0x00, 0x03, 0x66, hi, lo]);
            assert_eq!(c.request(&[(b'p', b'r'), (b'm', b'r')]), b"prmr");
            count_rounds(&mut c, 2, Duration::from_secs(3))
        })
    };
    let slow = measure(5);
    let fast = measure(25);
    let (n, secs) = slow.join().unwrap();
    assert_rate(n, secs, 5.0, "5 Hz client");
    let (n, secs) = fast.join().unwrap();
    assert_rate(n, secs, 25.0, "25 Hz client");
}

#[test]
fn frequency_zero_is_refused_and_the_rate_is_unchanged() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    c.frequency(5);
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    c.read_round(1);
    // x y f 0
    c.send(&[0x78, 0x79, 0x00, 0x03, 0x66, 0x00, 0x00]);
    let (n, secs) = count_rounds(&mut c, 1, Duration::from_secs(3));
    assert_rate(n, secs, 5.0, "rate after f 0");
}

#[test]
fn first_round_does_not_wait_for_the_drivers_next_reading() {
    // A slow base (one reading every 5 s): the reading taken when the device is set up
    // must reach the client that set it up, not only the next periodic one.
    let text = r#"
[[robot]]
[[robot.driver]]
driver = "sim"
devices = ["p", "s", "m", "g", "l", "z", "v"]
[robot.driver.params]
base_hz = 0.2
"#;
    let settings = player::settings::Settings::from_toml(text, "test").unwrap();
    let server = start_server_with(settings, player::builtin_catalog());
    let mut c = Client::connect(server.addr());
    let t = Instant::now();
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    let got = c.read_message_within(Duration::from_secs(2));
    assert!(
        got.is_some(),
        "no position data within 2 s of the request (waited for the driver's next reading?)"
    );
    assert_eq!(got.unwrap().0, b'p');
    assert!(t.elapsed() < Duration::from_secs(3));
}

// ----- close and on-the-fly requests ---------------------------------------------------------

#[test]
fn closing_a_device_stops_its_data_while_others_continue() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r'), (b's', b'r')]), b"prsr");
    assert_eq!(c.read_round_codes(2), [b'p', b's']);
    // d r <2> p c
    c.send(&[0x64, 0x72, 0x00, 0x02, b'p', b'c']);
    let (before, reply) = c.read_reply_skipping_data();
    assert_eq!(reply, b"pc");
    assert!(before.iter().all(|(d, _)| matches!(d, b'p' | b's')));
    for _ in 0..5 {
        let (d, p) = c.read_message();
        assert_eq!(
            (d, p.len()),
            (b's', 32),
            "only sonar after closing position"
        );
    }
}

#[test]
fn closing_a_device_never_opened_replies_e() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    c.send(&[0x64, 0x72, 0x00, 0x02, b'l', b'c']);
    assert_eq!(c.read_exact(5), [0x72, 0x00, 0x02, b'l', b'e']);
    c.expect_silence(300);
    // Closing an already closed device changes nothing and shows c.
    assert_eq!(c.request(&[(b'm', b'r')]), b"mr");
    assert_eq!(c.request(&[(b'm', b'c')]), b"mc");
    assert_eq!(c.request(&[(b'm', b'c')]), b"mc");
    c.drain(Duration::from_millis(300));
    c.expect_silence(300);
}

#[test]
fn adding_a_device_while_streaming_appends_it_to_the_rounds() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    for _ in 0..3 {
        assert_eq!(c.read_round_codes(1), [b'p']);
    }
    c.send_request(&[(b's', b'r')]);
    let (before, reply) = c.read_reply_skipping_data();
    assert_eq!(reply, b"sr");
    assert!(
        before.iter().all(|(d, _)| *d == b'p'),
        "only p before the reply"
    );
    for _ in 0..5 {
        assert_eq!(c.read_round_codes(2), [b'p', b's']);
    }
}

#[test]
fn a_reopened_device_keeps_its_place_in_the_data_order() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r'), (b's', b'r')]), b"prsr");
    assert_eq!(c.read_round_codes(2), [b'p', b's']);
    assert_eq!(c.request(&[(b'p', b'c')]), b"pc");
    assert_eq!(c.read_message().0, b's');
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    // Skip to a round boundary: rounds are p s again.
    let mut last = c.read_message().0;
    while last != b's' {
        last = c.read_message().0;
    }
    for _ in 0..3 {
        assert_eq!(c.read_round_codes(2), [b'p', b's']);
    }
}

#[test]
fn devices_beyond_the_per_client_cap_get_e() {
    let mut settings = default_settings();
    settings.server.max_devices = 2;
    let server = start_server_with(settings, player::builtin_catalog());
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.request(&[(b'p', b'r'), (b's', b'r'), (b'l', b'r')]),
        b"prsrle"
    );
    for _ in 0..3 {
        assert_eq!(c.read_round_codes(2), [b'p', b's']);
    }
}

// ----- access rules (manual 3.3, docs/reference/client-protocol-notes.md 3.2) -----------------

#[test]
fn read_then_write_merges_to_all() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    assert_eq!(c.request(&[(b'p', b'w')]), b"pa");
    // Still reading, and now commanding: the robot moves.
    c.drive(200, 0);
    let p = c.position_after(Duration::from_millis(800));
    assert!(p.speed > 100, "{p:?}");
}

#[test]
fn write_then_read_merges_to_all() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'w')]), b"pw");
    c.expect_silence(300);
    assert_eq!(c.request(&[(b'p', b'r')]), b"pa");
    assert_eq!(c.read_message().0, b'p');
}

#[test]
fn all_then_read_downgrades_to_read() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    // Commands are now ignored: the robot does not move.
    for _ in 0..5 {
        c.drive(300, 0);
    }
    let p = c.position_after(Duration::from_millis(1000));
    assert_eq!(p.speed, 0, "{p:?}");
    assert!(p.x.abs() < 5, "{p:?}");
}

#[test]
fn repeated_requests_echo_the_current_access() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    assert_eq!(c.request(&[(b'p', b'w')]), b"pw");
    assert_eq!(c.request(&[(b'p', b'w')]), b"pw");
    assert_eq!(c.request(&[(b'p', b'c')]), b"pc");
    assert_eq!(c.request(&[(b'p', b'c')]), b"pc");
}

#[test]
fn write_access_to_a_read_only_device_is_granted_but_its_commands_are_ignored() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    // d r <2> l w
    c.send(&[0x64, 0x72, 0x00, 0x02, b'l', b'w']);
    assert_eq!(c.read_exact(5), [0x72, 0x00, 0x02, b'l', b'w']);
    // Write-only: no laser data.
    c.expect_silence(400);
    // A command to the laser is ignored without a reply, and the session goes on.
    c.send(&[0x63, b'l', 0x00, 0x02, 0x01, 0x02]);
    c.expect_silence(300);
    assert_eq!(c.request(&[(b'l', b'r')]), b"la");
    let (d, p) = c.read_message();
    assert_eq!((d, p.len()), (b'l', 722));
}

#[test]
fn a_command_without_write_access_is_ignored() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    let start = c.next_position();
    // c p <4> speed 300 turn 20, from a client that only reads p ...
    c.send(&[0x63, b'p', 0x00, 0x04, 0x01, 0x2C, 0x00, 0x14]);
    // ... and from one that holds nothing at all.
    let mut other = Client::connect(server.addr());
    other.send(&[0x63, b'p', 0x00, 0x04, 0x01, 0x2C, 0x00, 0x14]);
    let p = c.position_after(Duration::from_millis(1200));
    assert_eq!((p.speed, p.turn_rate), (0, 0), "{p:?}");
    assert!(
        (p.x - start.x).abs() < 5 && p.heading == start.heading,
        "{p:?}"
    );
    // Both connections are still served.
    assert_eq!(other.request(&[(b'm', b'r')]), b"mr");
    assert_eq!(other.read_message().0, b'm');
}

#[test]
fn a_command_of_the_wrong_size_is_ignored() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    // 6 bytes instead of 4.
    c.command(b'p', &[0x01, 0x2C, 0x00, 0x00, 0x00, 0x00]);
    let p = c.position_after(Duration::from_millis(1000));
    assert_eq!(p.speed, 0, "{p:?}");
    // A good one afterwards works.
    c.drive(200, 0);
    let p = c.position_after(Duration::from_millis(800));
    assert!(p.speed > 100, "{p:?}");
}
