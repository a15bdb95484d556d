//! Malformed input, abrupt disconnects, connection storms and slow or stalled readers
//! (docs/reference/client-protocol-notes.md 9; ARCHITECTURE.md, "Invariants": "A session
//! never queues stale data, and no client can delay another").
//!
//! Every episode runs while another client streams position and sonar at 10 Hz; afterwards
//! that client must have kept its rate throughout, and a fresh client must be served
//! correctly.

use player_proto::data::Position;
use player_proto::message;
use player_testkit::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Runs `episode` against a server while a client streams p and s at 10 Hz; checks that
/// client's rate over the episode (at least 2.5 s) and serves a fresh client afterwards.
fn survives(what: &str, episode: impl FnOnce(&TestServer, &Streamer)) {
    let server = start_server();
    let streamer = Streamer::start(server.addr(), &[(b'p', b'r'), (b's', b'r')], None);
    streamer.wait_rounds(3);
    let t0 = Instant::now();
    episode(&server, &streamer);
    sleep_until(t0 + Duration::from_millis(2500));
    let t1 = Instant::now();
    streamer.assert_rate(t0, t1, 10.0, what);
    assert_fresh_client_served(server.addr());
    // The streamer is still going after the fresh client.
    let t2 = Instant::now();
    // A sleep on purpose: the stream must keep its rate for a second (measured over it).
    std::thread::sleep(Duration::from_millis(1000));
    streamer.assert_rate(t2, Instant::now(), 10.0, what);
}

/// Deterministic pseudo-random bytes (xorshift).
fn garbage(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.max(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

fn raw(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).unwrap();
    s.set_write_timeout(Some(TIMEOUT)).unwrap();
    s
}

/// Closes with a reset (SO_LINGER 0) instead of an orderly FIN.
fn reset(s: TcpStream) {
    socket2::SockRef::from(&s)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
    drop(s);
}

#[test]
fn garbage_bytes_harm_no_one() {
    survives("garbage", |server, _| {
        for seed in 1..=4u64 {
            let mut s = raw(server.addr());
            // Garbage can parse as anything, including huge sizes the server then waits
            // for; the connection is closed at the end either way.
            let _ = s.write_all(&garbage(seed * 7919, 32 * 1024));
            if seed % 2 == 0 {
                reset(s);
            }
        }
    });
}

#[test]
fn an_unknown_message_type_is_skipped_and_framing_is_kept() {
    survives("unknown message type", |server, _| {
        let mut c = Client::connect(server.addr());
        // q z <3> 01 02 03, then an empty unknown message, then a request.
        c.send(&[b'q', b'z', 0x00, 0x03, 0x01, 0x02, 0x03]);
        c.send(&[0x00, 0x00, 0x00, 0x00]);
        // A config without a code and an empty command: both ignored.
        c.send(&[b'x', b'y', 0x00, 0x00]);
        c.send(&[b'c', b'p', 0x00, 0x00]);
        // A reply-shaped message from a client: unknown type `r`, 2 bytes.
        c.send(&[b'r', b'p', 0x00, 0x02, b'p', b'r']);
        // A header split over two writes: x y <1> d (a harmless `d` in continuous mode).
        c.send(b"xy");
        // A sleep on purpose: the two writes must reach the server as two segments.
        std::thread::sleep(Duration::from_millis(50));
        c.send(&[0x00, 0x01, b'd']);
        c.send(&[0x64, 0x72, 0x00, 0x02, b'p', b'r']);
        assert_eq!(c.read_exact(5), [0x72, 0x00, 0x02, b'p', b'r']);
        let (d, p) = c.read_message();
        assert_eq!((d, p.len()), (b'p', 21));
    });
}

#[test]
fn a_truncated_message_then_close_harms_no_one() {
    survives("truncated message", |server, _| {
        // Half a header.
        let mut s = raw(server.addr());
        s.write_all(&[0x64, 0x72, 0x00]).unwrap();
        drop(s);
        // A whole header, part of the payload.
        let mut s = raw(server.addr());
        s.write_all(&[0x64, 0x72, 0x00, 0x06, b'p', b'r']).unwrap();
        drop(s);
        // A request that is answered, then half a command.
        let mut c = Client::connect(server.addr());
        assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
        c.send(&[0x63, b'p', 0x00, 0x04, 0x01]);
        drop(c);
    });
}

#[test]
fn a_disconnect_mid_message_harms_no_one() {
    survives("disconnect mid-message", |server, _| {
        let mut s = raw(server.addr());
        s.write_all(&[0x78, b'y', 0x00, 0x03, b'f']).unwrap();
        reset(s);
        let mut c = Client::connect(server.addr());
        assert_eq!(c.request(&[(b's', b'r'), (b'l', b'r')]), b"srlr");
        c.read_round(2);
        c.send(&[0x64, 0x72, 0x00, 0x04, b'p']);
        reset(c.stream);
    });
}

#[test]
fn a_size_of_0xffff_is_skipped_and_the_connection_goes_on() {
    survives("size 0xFFFF", |server, _| {
        let mut c = Client::connect(server.addr());
        let mut big = vec![0x64, 0x72, 0xFF, 0xFF];
        // 65535 bytes that would be valid pairs if the server tried to parse them.
        big.extend(b"pa".iter().cycle().take(65535));
        c.send(&big);
        c.send(&[0x64, 0x72, 0x00, 0x02, b's', b'r']);
        assert_eq!(c.read_exact(5), [0x72, 0x00, 0x02, b's', b'r']);
        let (d, p) = c.read_message();
        assert_eq!((d, p.len()), (b's', 32));
        // The same for a command and an unknown type.
        let mut cmd = vec![0x63, b'p', 0xFF, 0xFF];
        cmd.extend(vec![0x7F; 65535]);
        c.send(&cmd);
        let mut unknown = vec![b'?', b'?', 0xFF, 0xFF];
        unknown.extend(vec![0x64; 65535]);
        c.send(&unknown);
        c.send(&message::request(&[(b'm', b'r')]));
        let (before, reply) = c.read_reply_skipping_data();
        assert_eq!(reply, b"mr");
        assert!(before.iter().all(|(d, _)| *d == b's'));
        // The 0xFFFF header, a few bytes, then close.
        let mut s = raw(server.addr());
        s.write_all(&[0x64, 0x72, 0xFF, 0xFF, b'p', b'r', b's'])
            .unwrap();
        drop(s);
        let mut s = raw(server.addr());
        s.write_all(&[0x78, b'y', 0xFF, 0xFF, b'f', 0, 0]).unwrap();
        reset(s);
    });
}

#[test]
fn a_command_without_write_access_moves_nothing() {
    survives("command without write access", |server, streamer| {
        let t0 = Instant::now();
        let mut c = Client::connect(server.addr());
        assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
        let mut none = Client::connect(server.addr());
        for _ in 0..20 {
            c.drive(300, 40);
            none.drive(300, 40);
        }
        // A sleep on purpose: for a second and a half nothing may move the robot.
        std::thread::sleep(Duration::from_millis(1500));
        for (_, round) in streamer.rounds_between(t0, Instant::now()) {
            let p = Position::decode(&round[0].1).unwrap();
            assert_eq!((p.speed, p.turn_rate), (0, 0), "{p:?}");
            assert!(p.x.abs() < 5, "{p:?}");
        }
    });
}

#[test]
fn two_hundred_rapid_connects_and_disconnects_harm_no_one() {
    survives("connection storm", |server, _| {
        let request = message::request(&[(b'p', b'a'), (b'l', b'r'), (b's', b'r')]);
        for i in 0..200 {
            let mut s = raw(server.addr());
            if i % 3 == 0 {
                s.write_all(&request).unwrap();
            }
            if i % 15 == 0 {
                s.set_read_timeout(Some(TIMEOUT)).unwrap();
                let mut reply = [0u8; 9];
                s.read_exact(&mut reply).expect("reply during the storm");
                assert_eq!(reply[0], b'r');
            }
            if i % 7 == 0 {
                reset(s);
            }
        }
    });
}

#[test]
fn a_client_that_never_reads_the_laser_at_100_hz_delays_no_one() {
    survives("stalled laser client", |server, _| {
        let mut stalled = Client::connect(server.addr());
        stalled.frequency(100);
        stalled.send_request(&[(b'l', b'r'), (b'p', b'r'), (b'v', b'r')]);
        // Never read it. Meanwhile the server answers others promptly.
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(4) {
            let asked = Instant::now();
            let mut c = Client::connect(server.addr());
            assert_eq!(c.request(&[(b'm', b'r')]), b"mr");
            c.read_message();
            let took = asked.elapsed();
            assert!(took < Duration::from_secs(2), "a request took {took:?}");
            // The pace of the probing clients (the test runs for four seconds of them).
            std::thread::sleep(Duration::from_millis(400));
        }
        drop(stalled);
    });
}

#[test]
fn a_reader_that_pauses_gets_recent_data_not_a_backlog() {
    survives("pausing reader", |server, _| {
        // The client's own receive buffer is kept small: what sits in it is beyond the
        // server's reach; everything the server holds back must be skipped, not queued.
        let sock =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.set_recv_buffer_size(8 * 1024).unwrap();
        sock.connect(&server.addr().into()).unwrap();
        let mut c = Client::from_stream(sock.into());
        c.frequency(100);
        assert_eq!(c.request(&[(b'p', b'r'), (b'l', b'r')]), b"prlr");
        c.read_round(2);
        // A sleep on purpose: the client reads nothing for three seconds.
        std::thread::sleep(Duration::from_secs(3));
        // 3 s at 100 Hz is some 220 KB of rounds; a backlog would replay them all.
        let resumed = Instant::now();
        let mut stale_bytes = 0usize;
        loop {
            let (d, p) = c.read_message();
            if d == b'p' {
                let pos = Position::decode(&p).unwrap();
                let age = server.server_ms().saturating_sub(u64::from(pos.time));
                if age <= 1000 {
                    break;
                }
            }
            stale_bytes += 3 + p.len();
            assert!(
                stale_bytes < 64 * 1024 && resumed.elapsed() < Duration::from_secs(2),
                "still reading old data after {stale_bytes} bytes and {:?}",
                resumed.elapsed()
            );
        }
        // And from then on the data stays recent.
        for _ in 0..20 {
            let (d, p) = c.read_message();
            if d == b'p' {
                let pos = Position::decode(&p).unwrap();
                let age = server.server_ms().saturating_sub(u64::from(pos.time));
                assert!(age <= 1000, "position {age} ms old");
            }
        }
    });
}

#[test]
fn a_client_that_reads_nothing_is_disconnected_after_the_stall_timeout() {
    let mut settings = default_settings();
    settings.server.stall_timeout = 1.0;
    let server = start_server_with(settings, player::builtin_catalog());
    let streamer = Streamer::start(server.addr(), &[(b'p', b'r')], None);
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(8 * 1024).unwrap();
    sock.connect(&server.addr().into()).unwrap();
    let mut c = Client::from_stream(sock.into());
    c.frequency(100);
    assert_eq!(c.request(&[(b'l', b'r')]), b"lr");
    let t0 = Instant::now();
    // A sleep on purpose: this client reads nothing for 4 s (its buffers fill and stay full
    // past the 1 s stall timeout); reading now, before the server closed it, would unstall it.
    std::thread::sleep(Duration::from_secs(4));
    c.expect_closed(Duration::from_secs(10));
    streamer.assert_rate(t0, Instant::now(), 10.0, "while another client stalled");
}

#[test]
fn connections_beyond_max_clients_are_closed_without_a_byte() {
    let mut settings = default_settings();
    settings.server.max_clients = 2;
    let server = start_server_with(settings, player::builtin_catalog());
    let mut a = Client::connect(server.addr());
    assert_eq!(a.request(&[(b'p', b'r')]), b"pr");
    let mut b = Client::connect(server.addr());
    assert_eq!(b.request(&[(b's', b'r')]), b"sr");
    let mut third = Client::connect(server.addr());
    third.expect_closed(Duration::from_secs(5));
    // The first two are unaffected; after one leaves, a new client is served.
    assert_eq!(a.read_message().0, b'p');
    drop(b);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut c = Client::connect(server.addr());
        c.send_request(&[(b'm', b'r')]);
        match c.read_message_within_or_closed(Duration::from_secs(2)) {
            Some((b'r', reply)) => {
                assert_eq!(reply, b"mr");
                break;
            }
            other => {
                assert!(
                    Instant::now() < deadline,
                    "no room for a new client after one left: {other:?}"
                );
                // Before asking again: the server notices the departure on its own time.
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

#[test]
fn shutdown_closes_streaming_and_stalled_clients() {
    let server = start_server();
    let mut reading = Client::connect(server.addr());
    assert_eq!(reading.request(&[(b'p', b'a'), (b'l', b'r')]), b"palr");
    reading.drive(200, 0);
    reading.read_round(2);
    let mut stalled = Client::connect(server.addr());
    stalled.frequency(100);
    assert_eq!(stalled.request(&[(b'l', b'r')]), b"lr");
    let mut half = Client::connect(server.addr());
    half.send(&[0x64, 0x72, 0x00]);
    // A sleep on purpose: the stalled client's buffers fill and the half message waits at
    // the server (nothing a test can see from outside) before the shutdown.
    std::thread::sleep(Duration::from_millis(500));
    let took = server.shutdown();
    assert!(took < Duration::from_secs(8), "shutdown took {took:?}");
    reading.expect_closed(Duration::from_secs(5));
    stalled.expect_closed(Duration::from_secs(5));
    half.expect_closed(Duration::from_secs(5));
}

#[test]
fn twenty_clients_each_get_their_own_rate() {
    let server = start_server();
    let streamers: Vec<Streamer> = (0..20)
        .map(|i| {
            let hz = if i % 2 == 0 { 10 } else { 20 };
            Streamer::start(
                server.addr(),
                &[(b'p', b'r'), (b's', b'r'), (b'l', b'r')],
                Some(hz),
            )
        })
        .collect();
    for s in &streamers {
        s.wait_rounds(2);
    }
    let t0 = Instant::now();
    // A sleep on purpose: every client's rate is measured over these three seconds.
    std::thread::sleep(Duration::from_secs(3));
    let t1 = Instant::now();
    for (i, s) in streamers.iter().enumerate() {
        let hz = if i % 2 == 0 { 10.0 } else { 20.0 };
        s.assert_rate(t0, t1, hz, &format!("client {i} of 20"));
    }
}

#[test]
fn configs_sent_faster_than_a_driver_takes_them_are_refused_past_the_bound() {
    // The localizer answers each `x H g` with its particles (20,000 here, 8000 of them
    // answered): far slower than a client can send the five bytes of one. Before the
    // bound, every config waited in the driver's mailbox: a client flooding `x H g`
    // grew the server by 12 MB a second (its RSS 22 -> 120 MB in 8 s, and on after the
    // client left) and starved the localizer's own readings.
    let world = concat!(env!("CARGO_MANIFEST_DIR"), "/config/worlds/maze.toml");
    let text = format!(
        r#"
[[robot]]
[[robot.driver]]
driver = "sim"
devices = ["p as O", "P", "l", "L"]
[robot.driver.params]
world = "{world}"

[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
map = "world"

[[robot.driver]]
driver = "amcl"
devices = ["H"]
[robot.driver.params]
initial_pose = "global"
particles = [20000, 20000]
"#
    );
    let settings = player::settings::Settings::from_toml(&text, "config flood").unwrap();
    let server = start_server_with(settings, player::builtin_catalog());
    let mut c = Client::connect(server.addr());
    c.config(b'y', b'e', &[1]);
    assert_eq!(c.request(&[(b'H', b'r')]), vec![b'H', b'r']);
    let flood: Vec<u8> = (0..5000)
        .flat_map(|_| message::config(b'H', b'g', &[]))
        .collect();
    c.send(&flood);
    let (dev, text) = c.wait_notice(b'x', Duration::from_secs(30));
    assert_eq!(dev, b'H', "{text}");
    assert!(
        text.contains("256 of this client's configs wait at their drivers"),
        "{text}"
    );
    // Another client is served meanwhile, and the localizer still publishes.
    let mut other = Client::connect(server.addr());
    assert_eq!(other.request(&[(b'H', b'r')]), vec![b'H', b'r']);
    other.data_mode(2);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !matches!(
        other.read_message_within(Duration::from_millis(200)),
        Some((b'H', _))
    ) {
        assert!(
            Instant::now() < deadline,
            "no H reading within 10 s of the flood"
        );
    }
}
