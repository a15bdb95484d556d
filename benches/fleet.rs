//! Three simulated robots to one consumer, three ways and the engine's own limit, printed
//! as a table.
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
//!   one TCP connection to it, push-new with timestamps;
//! - **reference (zenoh)**: the engine's own limit (`benches/reference/mod.rs`): a minimal
//!   publisher of our own, no actix, putting the bytes captured from the bridge's nine keys
//!   on the same keys at 10 Hz each with the bridge's Zenoh configuration, in a process of
//!   its own (its own Zenoh network), read by the same consumer as **zenoh**.
//!
//! Latency is the driver's timestamp to receipt (wall clock, same machine). CPU: every
//! phase runs with a TCP client holding every device open in request/reply mode (it asks
//! for nothing), so the drivers do the same work throughout; the table gives the robot
//! server's CPU per second above that baseline, and per reading delivered (for
//! passthrough, the second server's CPU is added; for the reference, its own process's above
//! its own idle ticking). The bridge's cost per reading is the zenoh row's. Three
//! interleaved rounds (each route once per round, a baseline each); the table gives the
//! medians and each route's ratio to the reference.
//!
//! `cargo bench --bench fleet` (`-- --quick` for 4-second phases instead of 10).

mod common;
mod reference;

use common::{free_port, percentile, player_binary, process_cpu, wall_us, ServerProcess};
use player_proto::message;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
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

/// One route's figures in one round.
#[derive(Clone, Copy)]
struct Sample {
    rate: f64,
    p50: u64,
    p99: u64,
    cpu_ms_per_s: f64,
    cpu_us_per_reading: f64,
}

/// Runs a phase: consumption into `seen` has begun; after a warm-up second the counting
/// window of `secs` starts; `cpu` is sampled around it and `baseline_ms_per_s` taken off.
fn measure(
    secs: f64,
    baseline_ms_per_s: f64,
    cpu: &dyn Fn() -> Duration,
    seen: &Mutex<Seen>,
) -> Sample {
    std::thread::sleep(Duration::from_secs(1));
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
    Sample {
        rate: v.len() as f64 / elapsed,
        p50: percentile(&v, 0.5),
        p99: percentile(&v, 0.99),
        cpu_ms_per_s: extra,
        cpu_us_per_reading: extra * 1000.0 / (v.len() as f64 / elapsed).max(1.0),
    }
}

/// One Zenoh session (client mode, to `port`) subscribed to `player/*/<code>` for each
/// device, timestamps from the attachment, for one phase.
fn zenoh_phase(port: u16, secs: f64, baseline: f64, cpu: &dyn Fn() -> Duration) -> Sample {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let z = player_testkit::zenoh_client(port);
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
    let row = measure(secs, baseline, cpu, &seen);
    drop(subs);
    z.close().wait().unwrap();
    row
}

/// Direct TCP: one connection per robot.
fn tcp_phase(base: u16, secs: f64, baseline: f64, cpu: &dyn Fn() -> Duration) -> Sample {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|i| {
            let s = open(base + i, &DEVICES, false);
            let (seen, stop) = (seen.clone(), stop.clone());
            std::thread::spawn(move || tcp_reader(s, seen, stop))
        })
        .collect();
    let row = measure(secs, baseline, cpu, &seen);
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        let _ = r.join();
    }
    row
}

/// Passthrough: a second server relaying the nine devices as one table, one TCP client of
/// it; its CPU (idle cost included) is added to the robot server's.
fn passthrough_phase(
    base: u16,
    dir: &std::path::Path,
    secs: f64,
    baseline: f64,
    pid: u32,
) -> Sample {
    let fleet_port = free_port();
    let mut text = format!(
        "[[robot]]\nname = \"fleet\"\nport = {fleet_port}\nbind = \"127.0.0.1\"\nweb_port = 0\n"
    );
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
    let row = measure(secs, baseline, &both, &seen);
    stop.store(true, Ordering::Relaxed);
    let _ = reader.join();
    drop(fleet);
    row
}

/// The reference publisher (`benches/reference/mod.rs`) of the nine keys: the bytes
/// captured from the bridge's, at 10 Hz each, with the bridge's Zenoh configuration.
fn start_reference(zport: u16, dir: &std::path::Path) -> (Child, u16) {
    let z = player_testkit::zenoh_client(zport);
    let mut specs = Vec::new();
    for robot in ["leader", "left", "right"] {
        for d in DEVICES {
            let key = format!("player/{robot}/{}", char::from(d));
            let sub = z.declare_subscriber(&key).wait().unwrap();
            let s = sub
                .recv_timeout(Duration::from_secs(20))
                .ok()
                .flatten()
                .unwrap_or_else(|| panic!("no sample on {key} in 20 s"));
            let payload = s.payload().to_bytes().into_owned();
            specs.push((
                reference::Front::Zenoh,
                reference::Spec {
                    key,
                    payload,
                    rate_hz: 10.0,
                    stamp: reference::Stamp::Attachment,
                    express: true,
                },
            ));
        }
    }
    z.close().wait().unwrap();
    let (port, unused) = (free_port(), free_port());
    let child = Command::new(std::env::current_exe().unwrap())
        .args(reference::arguments(dir, &specs, port, unused))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("the reference publisher");
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect_timeout(&addr(port), Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "the reference does not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, port)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Interleaved rounds; the table gives the medians.
const ROUNDS: usize = 3;

const ROUTES: [&str; 4] = ["direct TCP", "zenoh", "passthrough", "reference (zenoh)"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(reference::FLAG) {
        return reference::serve(&args[2..]);
    }
    let quick = args.iter().any(|a| a == "--quick");
    let secs: f64 = if quick { 4.0 } else { 10.0 };
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
    let (mut reference, ref_port) = start_reference(zport, &dir);
    let rpid = reference.id();
    let arena_cpu = move || process_cpu(pid);
    let reference_cpu = move || process_cpu(rpid);
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); ROUTES.len()];
    let mut baselines = Vec::new();
    for _ in 0..ROUNDS {
        std::thread::sleep(Duration::from_secs(1));
        let (a0, r0, t0) = (arena_cpu(), reference_cpu(), Instant::now());
        std::thread::sleep(Duration::from_secs_f64(secs.min(5.0)));
        let t = t0.elapsed().as_secs_f64();
        let b = [
            (arena_cpu() - a0).as_secs_f64() * 1000.0 / t,
            (reference_cpu() - r0).as_secs_f64() * 1000.0 / t,
        ];
        baselines.push(b);
        samples[0].push(tcp_phase(base, secs, b[0], &arena_cpu));
        samples[1].push(zenoh_phase(zport, secs, b[0], &arena_cpu));
        samples[2].push(passthrough_phase(base, &dir, secs, b[0], pid));
        samples[3].push(zenoh_phase(ref_port, secs, b[1], &reference_cpu));
    }
    drop(reference.stdin.take());
    let _ = reference.wait();
    drop(arena);
    let _ = std::fs::remove_dir_all(&dir);

    let med = |i: usize, f: fn(&Sample) -> f64| median(samples[i].iter().map(f).collect());
    println!(
        "\nfleet: 3 simulated robots (arena.toml), p s l each, one consumer; {secs} s per route, \
         medians of {ROUNDS} interleaved rounds; baselines (devices held open, nothing sent): \
         robot server {:.1} ms CPU/s, reference {:.2} ms CPU/s\n",
        median(baselines.iter().map(|b| b[0]).collect()),
        median(baselines.iter().map(|b| b[1]).collect()),
    );
    println!(
        "| route | per s | p50 us | p99 us | CPU ms/s above baseline | CPU us per reading | CPU x reference | p50 x reference |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let (ref_cpu, ref_p50) = (med(3, |s| s.cpu_us_per_reading), med(3, |s| s.p50 as f64));
    for (i, name) in ROUTES.iter().enumerate() {
        let (cpu, p50) = (med(i, |s| s.cpu_us_per_reading), med(i, |s| s.p50 as f64));
        println!(
            "| {name} | {:.1} | {p50:.0} | {:.0} | {:.2} | {cpu:.1} | {:.2} | {:.2} |",
            med(i, |s| s.rate),
            med(i, |s| s.p99 as f64),
            med(i, |s| s.cpu_ms_per_s),
            cpu / ref_cpu.max(0.1),
            p50 / ref_p50.max(1.0),
        );
    }
}
