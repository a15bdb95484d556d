//! Latency of our server on loopback, printed as a table.
//!
//! - Push new: clients in data mode 2 with timestamps on read the position device; for each
//!   packet, latency = arrival time - the driver's timestamp (taken when it published). This
//!   is driver publish → session → socket → client.
//! - Request/reply: clients in data mode 1 send `x y d` ten times a second (each at its own
//!   phase) and time the round trip to the complete round (position + sonar).
//!
//! At 1, 50 and 500 clients. `cargo bench --bench latency` (`-- --quick` for a short run).

mod common;

use common::{connect, free_port, percentile, player_binary, push_client, ServerProcess};
use player_proto::message;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Request/reply round trips in microseconds.
async fn rr_client(addr: SocketAddr, until: Instant, from: Instant, phase: Duration) -> Vec<i64> {
    let setup = vec![message::config(b'y', b'r', &[1])];
    let mut s = connect(addr, &[(b'p', b'r'), (b's', b'r')], &setup).await;
    let d = message::config(b'y', b'd', &[]);
    let round = (3 + 21) + (3 + 32);
    let mut buf = vec![0u8; round];
    let mut out = Vec::new();
    let mut next = Instant::now() + phase;
    while next < until {
        tokio::time::sleep_until(next.into()).await;
        next += Duration::from_millis(100);
        let t = Instant::now();
        if s.write_all(&d).await.is_err() {
            break;
        }
        match tokio::time::timeout(Duration::from_secs(2), s.read_exact(&mut buf)).await {
            Ok(Ok(_)) => {
                if t >= from {
                    out.push(t.elapsed().as_micros() as i64);
                }
            }
            _ => break,
        }
    }
    out
}

fn stats(mut v: Vec<i64>) -> (usize, u64, u64, u64) {
    v.sort_unstable();
    let u: Vec<u64> = v.iter().map(|&x| x.max(0) as u64).collect();
    (
        u.len(),
        percentile(&u, 0.5),
        percentile(&u, 0.99),
        u.last().copied().unwrap_or(0),
    )
}

/// What this machine itself costs, whatever the server: the time to write 32 bytes to each
/// of 50 loopback connections (one core, no wake-ups: the readers are not waiting), and how
/// late a thread sleeping on a timer wakes.
fn machine_floor() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut pairs = Vec::new();
    for _ in 0..50 {
        let c = std::net::TcpStream::connect(addr).expect("connect");
        let (s, _) = listener.accept().expect("accept");
        c.set_nodelay(true).expect("nodelay");
        s.set_nodelay(true).expect("nodelay");
        pairs.push((s, c));
    }
    let data = [7u8; 32];
    let mut buf = [0u8; 32];
    let mut bursts = Vec::new();
    for _ in 0..500 {
        let t = Instant::now();
        for (s, _) in pairs.iter_mut() {
            s.write_all(&data).expect("write");
        }
        bursts.push(t.elapsed().as_micros() as u64);
        for (_, c) in pairs.iter_mut() {
            c.read_exact(&mut buf).expect("read");
        }
    }
    bursts.sort_unstable();
    let burst = percentile(&bursts, 0.5);
    println!(
        "machine: 50 writes of 32 bytes to loopback sockets take {burst} us (p50), {:.1} us each",
        burst as f64 / 50.0
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    let mut late: Vec<u64> = local.block_on(&rt, async {
        let mut late = Vec::new();
        for _ in 0..100 {
            let at = Instant::now() + Duration::from_millis(5);
            player::timer::sleep_until(at).await;
            late.push(Instant::now().saturating_duration_since(at).as_micros() as u64);
        }
        late
    });
    late.sort_unstable();
    println!(
        "machine: a thread sleeping on a timer wakes {} us late (p50), {} us (p90)",
        percentile(&late, 0.5),
        percentile(&late, 0.9)
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    machine_floor();
    let secs = if quick { 2.0 } else { 6.0 };
    let port = free_port();
    let server = ServerProcess::start(
        &player_binary(),
        &["-gp".to_string(), port.to_string()],
        ([127, 0, 0, 1], port).into(),
    );
    let addr = server.addr;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("latency: loopback, our server, {secs} s per row");
    println!(
        "{:<14} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "test", "clients", "samples", "p50 us", "p99 us", "max us"
    );
    for clients in [1usize, 50, 500] {
        let (push, rr) = rt.block_on(async {
            let warm = Instant::now() + Duration::from_millis(800 + 2 * clients as u64);
            let until = warm + Duration::from_secs_f64(secs);
            let tasks: Vec<_> = (0..clients)
                .map(|_| tokio::spawn(push_client(addr, until, warm)))
                .collect();
            let mut push = Vec::new();
            for t in tasks {
                push.extend(t.await.unwrap_or_default());
            }
            let warm = Instant::now() + Duration::from_millis(800 + 2 * clients as u64);
            let until = warm + Duration::from_secs_f64(secs);
            let tasks: Vec<_> = (0..clients)
                .map(|i| {
                    let phase =
                        Duration::from_micros((i as u64 * 100_000 / clients as u64) % 100_000);
                    tokio::spawn(rr_client(addr, until, warm, phase))
                })
                .collect();
            let mut rr = Vec::new();
            for t in tasks {
                rr.extend(t.await.unwrap_or_default());
            }
            (push, rr)
        });
        for (name, v) in [("push-new", push), ("request/reply", rr)] {
            let (n, p50, p99, max) = stats(v);
            println!("{name:<14} {clients:>7} {n:>9} {p50:>9} {p99:>9} {max:>9}");
        }
    }
    println!(
        "push-new: driver timestamp to client arrival (wall clock); request/reply: `x y d` sent \
         to the whole round received. Targets: push-new p99 < 200 us at 50 clients; \
         request/reply p50 < 100 us at 1 client."
    );
}
