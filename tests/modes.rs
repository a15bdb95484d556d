//! Per-client data delivery (manual 3.6, DESIGN "Protocol decisions"): request/reply
//! (`x y r 1`), push new (2), pull new (3), and the timestamp extension (`x y t`).

use player::settings::Settings;
use player_testkit::*;
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A simulated robot whose laser scans at `laser_hz` (the base stays at 10 Hz).
fn server_with_laser_at(laser_hz: f64) -> TestServer {
    let text = format!(
        r#"
[[robot]]
[[robot.driver]]
driver = "sim"
devices = ["p", "s", "m", "g", "l", "z", "v"]
[robot.driver.params]
laser_hz = {laser_hz:?}
"#
    );
    let settings = Settings::from_toml(&text, "test").unwrap();
    start_server_with(settings, player::builtin_catalog())
}

/// Splits a timestamped payload into ((seconds, microseconds), data).
fn stamp(payload: &[u8]) -> ((u32, u32), &[u8]) {
    assert!(payload.len() >= 8, "no room for a timestamp: {payload:?}");
    let s = u32::from_be_bytes(payload[0..4].try_into().unwrap());
    let us = u32::from_be_bytes(payload[4..8].try_into().unwrap());
    ((s, us), &payload[8..])
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

// ----- request/reply ---------------------------------------------------------------------

#[test]
fn request_reply_mode_sends_nothing_until_d_then_one_round_per_d() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    // x y r 1, then the request (as the Tcl client does).
    c.send(&[0x78, 0x79, 0x00, 0x02, 0x72, 0x01]);
    assert_eq!(c.request(&[(b'p', b'r'), (b's', b'r')]), b"prsr");
    c.expect_silence(600);
    for _ in 0..3 {
        // x y d
        c.send(&[0x78, 0x79, 0x00, 0x01, 0x64]);
        let round = c.read_round(2);
        let got: Vec<(u8, usize)> = round.iter().map(|(d, p)| (*d, p.len())).collect();
        assert_eq!(got, [(b'p', 21), (b's', 32)]);
        c.expect_silence(400);
    }
}

#[test]
fn several_d_requests_give_one_round_each() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    c.data_mode(1);
    assert_eq!(c.request(&[(b'p', b'r'), (b'm', b'r')]), b"prmr");
    let mut three = Vec::new();
    for _ in 0..3 {
        three.extend(player_proto::message::config(b'y', b'd', &[]));
    }
    c.send(&three);
    for _ in 0..3 {
        assert_eq!(c.read_round_codes(2), [b'p', b'm']);
    }
    c.expect_silence(500);
}

#[test]
fn switching_to_request_reply_while_streaming_stops_the_stream() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r'), (b's', b'r')]), b"prsr");
    c.read_round(2);
    c.data_mode(1);
    // Whatever was already on its way comes in whole rounds; then nothing.
    let late = c.drain(Duration::from_millis(400));
    assert!(
        late.len() % 2 == 0 && late.len() <= 4,
        "{} packets",
        late.len()
    );
    c.expect_silence(500);
    c.request_round();
    assert_eq!(c.read_round_codes(2), [b'p', b's']);
    c.expect_silence(400);
    // Back to continuous: a round at once, then 10 Hz.
    c.data_mode(0);
    assert!(c.read_message_within(Duration::from_secs(2)).is_some());
    c.read_message();
    let (n, secs) = count_rounds(&mut c, 2, Duration::from_secs(2));
    assert_rate(n, secs, 10.0, "continuous again");
}

#[test]
fn repeating_the_mode_change_is_harmless() {
    // The original deadlocked on a second `x y r 1` (notes 6.3); here it changes nothing.
    let server = start_server();
    let mut c = Client::connect(server.addr());
    c.data_mode(1);
    c.data_mode(1);
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    c.data_mode(1);
    c.expect_silence(400);
    c.request_round();
    assert_eq!(c.read_round_codes(1), [b'p']);
    c.expect_silence(300);
    assert_eq!(c.request(&[(b's', b'r')]), b"sr");
}

#[test]
fn d_in_continuous_mode_is_ignored() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    c.read_round(1);
    let mut many = Vec::new();
    for _ in 0..20 {
        many.extend(player_proto::message::config(b'y', b'd', &[]));
    }
    c.send(&many);
    let (n, secs) = count_rounds(&mut c, 1, Duration::from_secs(2));
    assert_rate(n, secs, 10.0, "continuous rate with stray d requests");
}

// ----- push new (mode 2) -----------------------------------------------------------------

#[test]
fn push_new_mode_sends_each_reading_once() {
    let server = server_with_laser_at(2.0);
    let mut c = Client::connect(server.addr());
    c.timestamps(true);
    c.frequency(50);
    c.data_mode(2);
    assert_eq!(c.request(&[(b'p', b'r'), (b'l', b'r')]), b"prlr");
    let t0 = Instant::now();
    let mut seen: HashMap<u8, Vec<(u32, u32)>> = HashMap::new();
    while t0.elapsed() < Duration::from_secs(3) {
        let (d, p) = c.read_message();
        let (ts, data) = stamp(&p);
        let expected = match d {
            b'p' => 21,
            b'l' => 722,
            other => panic!("unexpected device {other}"),
        };
        assert_eq!(data.len(), expected);
        seen.entry(d).or_default().push(ts);
    }
    for (d, stamps) in &seen {
        for w in stamps.windows(2) {
            assert!(
                w[1] > w[0],
                "device {}: a reading sent twice or out of order: {:?} then {:?}",
                char::from(*d),
                w[0],
                w[1]
            );
        }
    }
    // Each device at its own rate: position about 10/s, laser about 2/s (not 50/s).
    let p = seen.get(&b'p').map_or(0, Vec::len);
    let l = seen.get(&b'l').map_or(0, Vec::len);
    assert!((20..=40).contains(&p), "{p} position packets in 3 s");
    assert!((3..=9).contains(&l), "{l} laser packets in 3 s");
}

#[test]
fn push_new_mode_is_capped_by_the_clients_frequency() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    c.timestamps(true);
    c.frequency(4);
    c.data_mode(2);
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    c.read_message();
    let t0 = Instant::now();
    let mut n = 0;
    let mut last = (0, 0);
    while t0.elapsed() < Duration::from_secs(3) {
        let (d, p) = c.read_message();
        assert_eq!(d, b'p');
        let (ts, _) = stamp(&p);
        assert!(ts > last);
        last = ts;
        n += 1;
    }
    assert!((8..=16).contains(&n), "{n} packets in 3 s at 4 Hz");
}

// ----- pull new (mode 3) -----------------------------------------------------------------

#[test]
fn pull_new_mode_sends_only_devices_with_new_data() {
    let server = server_with_laser_at(1.0);
    let mut c = Client::connect(server.addr());
    c.timestamps(true);
    c.data_mode(3);
    assert_eq!(c.request(&[(b'p', b'r'), (b'l', b'r')]), b"prlr");
    c.expect_silence(400);
    let mut seen: HashMap<u8, Vec<(u32, u32)>> = HashMap::new();
    let mut responses = 0;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(3) {
        c.request_round();
        // A response is never empty: it waits for something new (the first one also waits
        // for every device's first reading).
        let first = c.read_message_within(Duration::from_secs(3));
        let Some(first) = first else {
            panic!("a d request got nothing within 3 s");
        };
        let mut got = vec![first];
        got.extend(c.drain(Duration::from_millis(60)));
        // The client's pace between its requests (new data comes meanwhile).
        std::thread::sleep(Duration::from_millis(150));
        responses += 1;
        let codes: Vec<u8> = got.iter().map(|(d, _)| *d).collect();
        assert!(
            codes == [b'p'] || codes == [b'l'] || codes == [b'p', b'l'],
            "one packet per new device, in request order: {codes:?}"
        );
        for (d, p) in &got {
            seen.entry(*d).or_default().push(stamp(p).0);
        }
    }
    for (d, stamps) in &seen {
        for w in stamps.windows(2) {
            assert!(
                w[1] > w[0],
                "device {}: old data sent again",
                char::from(*d)
            );
        }
    }
    let p = seen.get(&b'p').map_or(0, Vec::len);
    let l = seen.get(&b'l').map_or(0, Vec::len);
    assert!(
        p + 2 >= responses,
        "position new at 10 Hz: {p} of {responses}"
    );
    assert!(
        (1..=5).contains(&l),
        "laser new at 1 Hz: {l} in {responses} rounds"
    );
}

#[test]
fn pull_new_mode_waits_for_new_data_rather_than_repeating_old() {
    let server = server_with_laser_at(1.0);
    let mut c = Client::connect(server.addr());
    c.timestamps(true);
    c.data_mode(3);
    assert_eq!(c.request(&[(b'l', b'r')]), b"lr");
    c.request_round();
    let (d, first) = c.read_message();
    assert_eq!(d, b'l');
    c.request_round();
    let (d, second) = c.read_message();
    assert_eq!(d, b'l');
    assert!(stamp(&second).0 > stamp(&first).0, "the same scan twice");
}

// ----- timestamps ------------------------------------------------------------------------

#[test]
fn timestamps_are_counted_in_the_size_and_close_to_now() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    // x y t 1
    c.send(&[0x78, 0x79, 0x00, 0x02, 0x74, 0x01]);
    assert_eq!(
        c.request(&[(b'p', b'r'), (b'm', b'r'), (b'l', b'r')]),
        b"prmrlr"
    );
    for _ in 0..3 {
        let round = c.read_round(3);
        let sizes: Vec<(u8, usize)> = round.iter().map(|(d, p)| (*d, p.len())).collect();
        assert_eq!(sizes, [(b'p', 29), (b'm', 11), (b'l', 730)]);
        for (_, p) in &round {
            let ((s, us), _) = stamp(p);
            let now = now_secs();
            assert!(
                u64::from(s) + 5 >= now && u64::from(s) <= now + 5,
                "timestamp {s} s is not close to now ({now} s)"
            );
            assert!(us < 1_000_000, "microseconds {us}");
        }
    }
    // Off again: the manual's sizes.
    c.timestamps(false);
    let mut last = c.read_message();
    let deadline = Instant::now() + Duration::from_secs(3);
    while last.1.len() != 21 {
        assert!(Instant::now() < deadline, "timestamps did not turn off");
        last = c.read_message();
    }
    let round = c.read_round(2);
    assert_eq!(round[0].1.len(), 3);
    assert_eq!(round[1].1.len(), 722);
    assert_eq!(c.read_message().1.len(), 21);
}

#[test]
fn pipelined_d_requests_each_get_their_round_even_when_the_client_reads_late() {
    // A request/reply client may send several `d`s and then read the rounds. Its receive
    // buffer is small, so the rounds cannot all be on the wire at once: the server must
    // hold the requests until the client reads, not drop them.
    let server = start_server();
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&server.addr().into()).unwrap();
    let mut c = Client::from_stream(sock.into());
    c.data_mode(1);
    assert_eq!(c.request(&[(b'l', b'r'), (b'p', b'r')]), b"lrpr");
    let mut ds = Vec::new();
    for _ in 0..12 {
        ds.extend(player_proto::message::config(b'y', b'd', &[]));
    }
    c.send(&ds);
    // A sleep on purpose: the server answers the queued requests while the client
    // reads nothing.
    std::thread::sleep(Duration::from_millis(500));
    for i in 0..12 {
        match c.read_message_within(Duration::from_secs(3)) {
            Some((b'l', p)) => assert_eq!(p.len(), 722),
            other => panic!("round {i} of 12: expected the laser, got {other:?}"),
        }
        assert_eq!(c.read_message().0, b'p');
    }
    c.expect_silence(300);
}
