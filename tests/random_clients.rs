//! Random clients against a real server over TCP (issue 8, fuzzing): several clients send
//! seeded random messages for a bounded time while a watcher streams position and sonar at
//! 10 Hz. The clients are the test harness's (`player_testkit::random`).
//!
//! Afterwards: the watcher got well-formed rounds at most of its rate throughout, fresh
//! clients are served, and no thread of the process panicked. The run is seeded
//! (`RANDOM_CLIENTS_SEED`, printed) and lasts `RANDOM_CLIENTS_SECS` seconds (default 8).

use player_testkit::random::{random_client, Tally};
use player_testkit::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Panics seen in any thread of this test process (the server runs in-process).
static PANICS: AtomicUsize = AtomicUsize::new(0);

#[test]
fn random_clients_harm_neither_the_server_nor_a_watching_client() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        previous(info);
    }));
    let seed: u64 = std::env::var("RANDOM_CLIENTS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_0008);
    let secs: u64 = std::env::var("RANDOM_CLIENTS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    eprintln!("random clients: RANDOM_CLIENTS_SEED={seed} RANDOM_CLIENTS_SECS={secs}");

    let server = start_server();
    let watcher = Streamer::start(server.addr(), &[(b'p', b'r'), (b's', b'r')], None);
    watcher.wait_rounds(3);

    let t0 = Instant::now();
    let until = t0 + Duration::from_secs(secs);
    let received = Arc::new(AtomicUsize::new(0));
    let clients: Vec<JoinHandle<Tally>> = (0..4u64)
        .map(|i| {
            let addr = server.addr();
            let received = received.clone();
            std::thread::spawn(move || {
                random_client(addr, None, seed ^ (i << 56 | i), until, received)
            })
        })
        .collect();
    let tallies: Vec<Tally> = clients
        .into_iter()
        .map(|h| h.join().expect("a random client thread"))
        .collect();
    let t1 = Instant::now();
    eprintln!(
        "random clients: {tallies:?}, {} bytes received",
        received.load(Ordering::Relaxed)
    );

    // The clients did what they were meant to.
    let framed: usize = tallies.iter().map(|t| t.framed).sum();
    let unframed: usize = tallies.iter().map(|t| t.unframed).sum();
    let connections: usize = tallies.iter().map(|t| t.connections).sum();
    assert!(
        framed >= 100 && unframed >= 1 && connections >= 8,
        "too little random traffic: {tallies:?}"
    );
    assert!(
        received.load(Ordering::Relaxed) > 0,
        "the random clients got no reply and no data at all"
    );

    // The watcher kept most of its rate, with well-formed rounds, until the end.
    let rounds = watcher.rounds_between(t0, t1);
    let elapsed = t1.duration_since(t0).as_secs_f64();
    let rate = rounds.len() as f64 / elapsed;
    eprintln!(
        "random clients: the watcher got {} rounds in {elapsed:.1} s",
        rounds.len()
    );
    assert!(
        rate >= 5.0,
        "the watcher got {} rounds in {elapsed:.1} s ({rate:.1}/s, expected about 10/s)",
        rounds.len()
    );
    for (_, round) in &rounds {
        let shape: Vec<(u8, usize)> = round.iter().map(|(d, p)| (*d, p.len())).collect();
        assert_eq!(shape, vec![(b'p', 21), (b's', 32)]);
    }
    let last = rounds.last().map_or(t0, |(t, _)| *t);
    assert!(
        t1.duration_since(last) < Duration::from_secs(2),
        "the watcher's last round came {:?} before the end",
        t1.duration_since(last)
    );

    // Fresh clients are served (on every session thread: sessions are dealt round robin).
    for _ in 0..4 {
        assert_fresh_client_served(server.addr());
    }
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    c.drive(0, 0);
    assert_eq!(c.read_message().0, b'p');

    // The watcher still streams after all of that.
    let t2 = Instant::now();
    watcher.wait_rounds(watcher.rounds().len() + 1);
    assert!(
        !watcher.rounds_between(t2, Instant::now()).is_empty(),
        "the watcher stopped getting data"
    );
    drop(c);
    drop(watcher);
    drop(server);
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a thread panicked");
}
