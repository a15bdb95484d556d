//! Three simulated robots to one consumer, three ways, printed as a table.
//!
//! One `player` serves the three robots of `config/worlds/arena.toml` (leader, left,
//! right: ports P, P+1, P+2) with the Zenoh bridge on (loopback). One consumer takes the
//! position, sonar and laser of all three (9 devices, about 90 readings a second):
//!
//! - **tcp**: three TCP connections, one per robot, push-new mode with timestamps;
//! - **zenoh**: one Zenoh session (client mode, to the server's bridge) subscribed to
//!   `player/*/p`, `player/*/s`, `player/*/l`, timestamps from the attachment;
//! - **passthrough**: a second `player` whose configuration serves the nine devices as one
//!   device table through the passthrough driver (the layout of `config/fleet.toml`), and
//!   one TCP connection to it, push-new with timestamps.
//!
//! Latency is the driver's timestamp to receipt (wall clock, same machine). CPU: every
//! phase runs with a TCP client holding every device open in request/reply mode (it asks
//! for nothing), so the drivers do the same work throughout; the table gives the robot
//! server's CPU per second above that baseline, and per reading delivered (for
//! passthrough, the second server's CPU is added). The bridge's cost per reading is the
//! zenoh row's.
//!
//! `cargo bench --bench fleet` (`-- --quick` for 4-second phases instead of 15).

mod common;

use common::{free_port, percentile, player_binary, process_cpu, wall_us, ServerProcess};
use player_proto::message;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zenoh::Wait;

/// The devices read from each robot.
const DEVICES: [u8; 3] = [b'p', b's', b'l'];

/// The passthrough table's local codes per robot (as config/fleet.toml).
const LOCAL: [[u8; 3]; 3] = [*b"psl", *b"PSL", *b"qtk"];

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Connects, sets push-new mode with timestamps (or request/reply when `hold`), and
/// requests `codes` read.
fn open(port: u16, codes: &[u8], hold: bool) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut s = loop {
        match TcpStream::connect(addr(port)) {
            Ok(s) => break s,
            Err(e) => {
                assert!(Instant::now() < deadline, "connect to {port}: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    s.set_nodelay(true).unwrap();
    let mut hello = Vec::new();
    if hold {
        hello.extend(message::config(b'y', b'r', &[1]));
    } else {
        hello.extend(message::config(b'y', b't', &[1]));
        hello.extend(message::config(b'y', b'r', &[2]));
        hello.extend(message::config(b'y', b'f', &1000u16.to_be_bytes()));
    }
    let pairs: Vec<(u8, u8)> = codes.iter().map(|&c| (c, b'r')).collect();
    hello.extend(message::request(&pairs));
    s.write_all(&hello).unwrap();
    let mut reply = vec![0u8; 3 + 2 * pairs.len()];
    s.read_exact(&mut reply).unwrap();
    assert_eq!(reply[0], b'r');
    assert!(
        !reply[3..].chunks(2).any(|p| p[1] == b'e'),
        "a device was refused on port {port}: {reply:?}"
    );
    s
}

/// Latencies (us) and counts, shared by a phase's readers.
#[derive(Default)]
struct Seen {
    lat: Vec<i64>,
    counting: bool,
}

fn record(seen: &Mutex<Seen>, sec: u32, usec: u32) {
    let now = wall_us();
    let mut s = seen.lock().unwrap();
    if s.counting {
        s.lat
            .push(now - (i64::from(sec) * 1_000_000 + i64::from(usec)));
    }
}

/// Reads push-new packets with timestamps until `stop`.
fn tcp_reader(mut s: TcpStream, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) {
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut head = [0u8; 3];
    let mut body = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        if s.read_exact(&mut head).is_err() {
            continue;
        }
        let n = usize::from(u16::from_be_bytes([head[1], head[2]]));
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.read_exact(&mut body[..n]).expect("a packet's body");
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        if head[0] != b'y' && n >= 8 {
            let sec = u32::from_be_bytes(body[..4].try_into().unwrap());
            let usec = u32::from_be_bytes(body[4..8].try_into().unwrap());
            record(&seen, sec, usec);
        }
    }
}

struct Row {
    name: &'static str,
    readings: usize,
    rate: f64,
    p50: u64,
    p99: u64,
    cpu_ms_per_s: f64,
    cpu_us_per_reading: f64,
}

/// Runs a phase: `start` begins consuming into `seen`; after `warm` the counting window
/// of `secs` starts; `cpu` is sampled around it.
fn measure(
    name: &'static str,
    secs: f64,
    baseline_ms_per_s: f64,
    cpu: &dyn Fn() -> Duration,
    seen: &Mutex<Seen>,
) -> Row {
    std::thread::sleep(Duration::from_secs(2));
    let c0 = cpu();
    let t0 = Instant::now();
    seen.lock().unwrap().counting = true;
    std::thread::sleep(Duration::from_secs_f64(secs));
    let mut lat = {
        let mut s = seen.lock().unwrap();
        s.counting = false;
        std::mem::take(&mut s.lat)
    };
    let elapsed = t0.elapsed().as_secs_f64();
    let used = (cpu() - c0).as_secs_f64() * 1000.0 / elapsed;
    lat.sort_unstable();
    let v: Vec<u64> = lat.iter().map(|&x| x.max(0) as u64).collect();
    let extra = (used - baseline_ms_per_s).max(0.0);
    Row {
        name,
        readings: v.len(),
        rate: v.len() as f64 / elapsed,
        p50: percentile(&v, 0.5),
        p99: percentile(&v, 0.99),
        cpu_ms_per_s: extra,
        cpu_us_per_reading: extra * 1000.0 / (v.len() as f64 / elapsed).max(1.0),
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let secs: f64 = if quick { 4.0 } else { 15.0 };
    let base = loop {
        let p = free_port();
        if p < 65000 && (1..3).all(|i| std::net::TcpListener::bind(addr(p + i)).is_ok()) {
            break p;
        }
    };
    let zport = free_port();
    let dir = std::env::temp_dir().join(format!("player-fleet-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let robots = dir.join("robots.toml");
    std::fs::write(
        &robots,
        format!(
            "[zenoh]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{zport}\"]\n\n\
             # Replaced by the world's robots (-stage), which keep its sim driver's setup.\n\
             [[robot]]\nname = \"placeholder\"\n[[robot.driver]]\ndriver = \"sim\"\n\
             devices = [\"p\", \"s\", \"m\", \"g\", \"l\", \"z\", \"v\"]\n\
             [robot.driver.params]\nmotors_on = true\n"
        ),
    )
    .unwrap();
    let world = concat!(env!("CARGO_MANIFEST_DIR"), "/config/worlds/arena.toml");
    let args: Vec<String> = [
        "--config",
        robots.to_str().unwrap(),
        "-stage",
        world,
        "-gp",
        &base.to_string(),
        "-web",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let arena = ServerProcess::start(&player_binary(), &args, addr(base));
    let pid = arena.child.id();
    // Every device held open, so the drivers do the same work in every phase.
    let _holders: Vec<TcpStream> = (0..3).map(|i| open(base + i, &DEVICES, true)).collect();
    std::thread::sleep(Duration::from_secs(2));
    let arena_cpu = move || process_cpu(pid);
    let c0 = arena_cpu();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs.min(5.0)));
    let baseline = (arena_cpu() - c0).as_secs_f64() * 1000.0 / t0.elapsed().as_secs_f64();
    let mut rows = Vec::new();

    // Direct TCP: one connection per robot.
    {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|i| {
                let s = open(base + i, &DEVICES, false);
                let (seen, stop) = (seen.clone(), stop.clone());
                std::thread::spawn(move || tcp_reader(s, seen, stop))
            })
            .collect();
        rows.push(measure("direct TCP", secs, baseline, &arena_cpu, &seen));
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            let _ = r.join();
        }
    }

    // Zenoh: one session, three subscribers.
    {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let z = player_testkit::zenoh_client(zport);
        let subs: Vec<_> = DEVICES
            .iter()
            .map(|&d| {
                let seen = seen.clone();
                z.declare_subscriber(format!("player/*/{}", char::from(d)))
                    .callback(move |s| {
                        if let Some(a) = s.attachment() {
                            let b = a.to_bytes();
                            if let Some(t) = player::zenoh::decode_timestamp(&b) {
                                record(&seen, t.sec, t.usec);
                            }
                        }
                    })
                    .wait()
                    .unwrap()
            })
            .collect();
        rows.push(measure("zenoh", secs, baseline, &arena_cpu, &seen));
        drop(subs);
        z.close().wait().unwrap();
    }

    // Passthrough: a second server relaying the nine devices as one table.
    {
        let fleet_port = free_port();
        let mut text = format!("[[robot]]\nname = \"fleet\"\nport = {fleet_port}\nbind = \"127.0.0.1\"\nweb_port = 0\n");
        for (i, local) in LOCAL.iter().enumerate() {
            let codes: Vec<String> = local
                .iter()
                .map(|&c| format!("\"{}\"", char::from(c)))
                .collect();
            text.push_str(&format!(
                "\n[[robot.driver]]\ndriver = \"passthrough\"\ndevices = [{}]\n[robot.driver.params]\nhost = \"127.0.0.1\"\nport = {}\nremote = [\"p\", \"s\", \"l\"]\n",
                codes.join(", "),
                base + i as u16
            ));
        }
        let fleet_cfg = dir.join("fleet.toml");
        std::fs::write(&fleet_cfg, text).unwrap();
        let fleet = ServerProcess::start(
            &player_binary(),
            &["--config".to_string(), fleet_cfg.display().to_string()],
            addr(fleet_port),
        );
        let fpid = fleet.child.id();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let all: Vec<u8> = LOCAL.iter().flatten().copied().collect();
        let s = open(fleet_port, &all, false);
        let reader = {
            let (seen, stop) = (seen.clone(), stop.clone());
            std::thread::spawn(move || tcp_reader(s, seen, stop))
        };
        let both = move || process_cpu(pid) + process_cpu(fpid);
        // The second server's own idle cost is part of what passthrough costs.
        rows.push(measure("passthrough", secs, baseline, &both, &seen));
        stop.store(true, Ordering::Relaxed);
        let _ = reader.join();
        drop(fleet);
    }
    drop(arena);
    let _ = std::fs::remove_dir_all(&dir);

    println!(
        "\nfleet: 3 simulated robots (arena.toml), p s l each, one consumer; {secs} s per route; \
         robot server baseline (devices held open, nothing sent) {baseline:.1} ms CPU/s\n"
    );
    println!(
        "| route | readings | per s | p50 us | p99 us | CPU ms/s above baseline | CPU us per reading |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {:.1} | {} | {} | {:.2} | {:.1} |",
            r.name, r.readings, r.rate, r.p50, r.p99, r.cpu_ms_per_s, r.cpu_us_per_reading
        );
    }
}
