//! A client that reads slowly (no root needed: loopback, a small receive buffer, a client
//! that takes one round every few hundred milliseconds while the server writes 50 a
//! second). It must get fresh rounds, not a backlog that grows with time, and it must be
//! kept: the stall timeout ends only clients that acknowledge nothing, not slow ones.
//! The slow links themselves (rate, delay, loss) are measured by `benches/slowlink.rs`.

use player_testkit::{default_settings, start_server_with, Client, Streamer};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn wall_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_micros() as i64
}

/// Reads one round of `l s p` with timestamps; the position reading's age in ms.
fn read_round_age(c: &mut Client) -> i64 {
    let mut age = None;
    for want in [b'l', b's', b'p'] {
        let (code, payload) = c.read_message();
        assert_eq!(code, want, "rounds come whole and in request order");
        assert!(payload.len() >= 8, "timestamped packet");
        if code == b'p' {
            let sec = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
            let usec = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
            age = Some((wall_us() - (i64::from(sec) * 1_000_000 + i64::from(usec))) / 1000);
        }
    }
    age.expect("a position packet")
}

#[test]
fn a_slow_reader_gets_fresh_rounds_and_is_not_dropped() {
    let mut settings = default_settings();
    // Far shorter than the test: a slow reader must outlive it. (It opens its window
    // about every 1.6 s here: every fourth round it reads.)
    settings.server.stall_timeout = 4.0;
    let server = start_server_with(settings, player::builtin_catalog());
    let watcher = Streamer::start(server.addr(), &[(b'p', b'r')], None);

    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4 * 1024).unwrap();
    sock.connect(&server.addr().into()).unwrap();
    let mut c = Client::from_stream(sock.into());
    c.timestamps(true);
    c.frequency(50);
    assert_eq!(
        c.request(&[(b'l', b'r'), (b's', b'r'), (b'p', b'r')]),
        b"lrsrpr"
    );

    // 10 s, one round every 400 ms: 25 rounds read of the 500 the server was asked for.
    let t0 = Instant::now();
    let mut ages = Vec::new();
    while t0.elapsed() < Duration::from_secs(10) {
        // A sleep on purpose: the slow reader's pace.
        std::thread::sleep(Duration::from_millis(400));
        ages.push(read_round_age(&mut c));
    }
    // Still connected: it answers a round within a second once it reads again.
    let last = read_round_age(&mut c);
    let late = &ages[ages.len() / 2..];
    let mut sorted = late.to_vec();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    eprintln!("ages read (ms): {ages:?}, then {last}");
    // What waits is at most a few rounds in the client's buffer (the server stops writing
    // once three rounds wait unread there; its window tells), each read 400 ms apart: about
    // 1.2 s at the median. Writing while the buffer has room would leave it full, about nine
    // rounds here (median 2.3 s); a backlog in the server would grow without bound.
    assert!(
        median <= 1700,
        "rounds read in the second half are {median} ms old (median): a backlog"
    );
    assert!(
        sorted[sorted.len() - 1] <= 3000,
        "a round read in the second half is {} ms old",
        sorted[sorted.len() - 1]
    );
    watcher.assert_rate(t0, Instant::now(), 10.0, "next to a slow reader");
}

/// A client that falls behind now and then (a few rounds) and then reads everything: the
/// acknowledgements it sent while behind carried a window shrunk by the rounds it had not
/// read yet, and a Linux receiver announces a reopened window on a read only when it at
/// least doubles. So the window the server last heard of says "rounds unread" after they
/// were read, and with no round sent nothing refreshes it (a keepalive probe after 2 s;
/// never with keepalive off, as here). Before the pacing rule sent a round to hear the
/// window (`pace.rs`, `probe_due`), this client got nothing for seconds, or ever, while it
/// read; the stress bench's clients at 2000 x 50 Hz lost 2 s at a time.
#[test]
fn a_client_that_fell_behind_and_caught_up_gets_rounds_again() {
    let mut settings = default_settings();
    settings.server.keepalive_idle = 0.0;
    let server = start_server_with(settings, player::builtin_catalog());
    let mut c = Client::connect(server.addr());
    c.frequency(50);
    assert_eq!(
        c.request(&[(b'l', b'r'), (b's', b'r'), (b'p', b'r')]),
        b"lrsrpr"
    );
    let t0 = Instant::now();
    let mut longest = Duration::ZERO;
    let mut messages = 0;
    for behind_ms in [80, 200, 60, 120, 80, 200, 60, 120] {
        // Busy elsewhere for a few rounds (a sleep on purpose: the client's pause).
        std::thread::sleep(Duration::from_millis(behind_ms));
        // Then it reads everything that waits, and keeps reading for 400 ms.
        let reading = Instant::now();
        let mut last = reading;
        while reading.elapsed() < Duration::from_millis(400) {
            let got = c.read_message_within(Duration::from_millis(1500));
            let now = Instant::now();
            assert!(
                got.is_some(),
                "no round for 1.5 s after {messages} messages, though the client reads"
            );
            longest = longest.max(now - last);
            last = now;
            messages += 1;
        }
    }
    eprintln!(
        "{messages} messages in {:?}; longest wait while reading {longest:?}",
        t0.elapsed()
    );
    // The wait for the round that hears the window doubles from 50 ms to at most 1 s
    // while the client is behind; without it the client waited forever here.
    assert!(
        longest < Duration::from_millis(1300),
        "a reading client waited {longest:?} for a round"
    );
    // 50 rounds a second of three messages for 3.2 s of reading: most of them.
    assert!(messages >= 240, "{messages} messages");
}
