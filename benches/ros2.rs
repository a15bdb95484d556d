//! The ROS 2 front end's and the Zenoh bridge's routes against the engine's own limit and a
//! TCP client (issue 33), printed as a table.
//!
//! One `player` serves two robots on loopback with both the Zenoh bridge and the ROS 2
//! front end on: `pioneer`, the simulated Pioneer (`p` and the 361-range laser view `l`, 10
//! Hz unless `--hz` says), and `utm`, a UTM-30LX emulated in this process behind the `urg` driver (the
//! 1081-range full scan `L`, 40 Hz). Routes, one subscriber each:
//!
//! - ROS 2: `scan` from `l` and from `L` (sensor_msgs/LaserScan), `odom`, `tf`, on
//!   rmw_zenoh's keys, the stamp in the CDR header;
//! - the Zenoh bridge's plain keys `player/pioneer/l`, `player/utm/L`, `player/pioneer/p`,
//!   the stamp in the attachment;
//! - TCP, push-new with timestamps, of `l`, `L` and `p`;
//! - the reference (`benches/reference/mod.rs`): a minimal publisher of our own, no actix,
//!   putting the bytes captured from each Zenoh route on the same key at the same rate with
//!   the same Zenoh configuration and publisher options, in a process of its own on ports
//!   of its own.
//!
//! Latency is the reading's stamp to receipt (wall clock, same machine). CPU: TCP clients
//! hold every device open in request/reply mode throughout (they ask for nothing), so the
//! drivers do the same work in every phase; a route's cost is its publishing process's CPU
//! above that process's baseline (measured in the same round with no subscriber), per
//! message delivered. Three interleaved rounds (every route once per round); the table gives
//! the medians and each route's ratio to its reference and to the TCP client of its device.
//!
//! `cargo bench --bench ros2` (`-- --quick` for 4-second phases instead of 10, `--secs S`
//! for S; `--hz N` for the simulated Pioneer at N Hz instead of 10; `--only
//! TEXT` for the routes whose name has TEXT and the TCP clients). With `BENCH_THREADS` set,
//! each phase also prints, per thread of the publishing process, its CPU and how many times
//! it ran per message (`/proc/<pid>/task/*/schedstat`).

mod common;
mod reference;

use common::{free_port, percentile, player_binary, process_cpu, wall_us, ServerProcess};
use player::emulators::scene::Scene;
use player::emulators::urg::{Model, UrgEmulator};
use player::emulators::TcpEmulator;
use player_proto::message;
use player_ros2::{rmw, types};
use player_testkit::zenoh_client;
use reference::{Front, Spec, Stamp};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zenoh::Wait;

/// Interleaved rounds; the table gives the medians.
const ROUNDS: usize = 3;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Connects and requests `codes` read: push-new with timestamps, or request/reply
/// (`hold`: the devices stay open, nothing is sent).
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
    assert!(
        reply[0] == b'r' && !reply[3..].chunks(2).any(|p| p[1] == b'e'),
        "a device was refused on port {port}: {reply:?}"
    );
    s
}

#[derive(Default)]
struct Seen {
    lat: Vec<i64>,
    counting: bool,
}

fn record(seen: &Mutex<Seen>, stamp_us: i64) {
    let now = wall_us();
    let mut s = seen.lock().unwrap();
    if s.counting {
        s.lat.push(now - stamp_us);
    }
}

/// Reads push-new packets of `code` with timestamps until `stop`.
fn tcp_reader(mut s: TcpStream, code: u8, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) {
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
        if head[0] == code && n >= 8 {
            let sec = u32::from_be_bytes(body[..4].try_into().unwrap());
            let usec = u32::from_be_bytes(body[4..8].try_into().unwrap());
            record(&seen, i64::from(sec) * 1_000_000 + i64::from(usec));
        }
    }
}

/// The stamp of a sample, us since the epoch.
fn stamp_of(sample: &zenoh::sample::Sample, stamp: Stamp) -> Option<i64> {
    match stamp {
        Stamp::Attachment => {
            let t = player::zenoh::decode_timestamp(&sample.attachment()?.to_bytes())?;
            Some(i64::from(t.sec) * 1_000_000 + i64::from(t.usec))
        }
        Stamp::Cdr(at) => {
            let b = sample.payload().to_bytes();
            let t = b.get(at..at + 8)?;
            let sec = i32::from_le_bytes(t[..4].try_into().unwrap());
            let nsec = u32::from_le_bytes(t[4..].try_into().unwrap());
            Some(i64::from(sec) * 1_000_000 + i64::from(nsec / 1000))
        }
    }
}

/// How a route's subscriber reads.
#[derive(Clone)]
enum Via {
    /// A Zenoh client of the session listening on `port`, subscribed to `key`.
    Zenoh {
        port: u16,
        key: String,
        stamp: Stamp,
    },
    /// A TCP client of the robot on `port`, push-new, reading `code`.
    Tcp { port: u16, code: u8 },
}

/// Whose CPU a route costs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Who {
    Server,
    Reference,
}

struct Route {
    name: String,
    via: Via,
    who: Who,
    /// Ours: the reference route and the TCP route it is compared with.
    compare: Option<(usize, usize)>,
    samples: Vec<Sample>,
}

#[derive(Clone, Copy)]
struct Sample {
    rate: f64,
    p50: u64,
    p99: u64,
    cpu_us: f64,
}

/// Per thread of process `pid`: its name, CPU time (ns) and how many times it ran
/// (`/proc/<pid>/task/*/schedstat`).
fn threads(pid: u32) -> std::collections::BTreeMap<u32, (String, u64, u64)> {
    let mut m = std::collections::BTreeMap::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        let v: Vec<u64> = stat
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if let (Ok(tid), &[ns, _, runs]) = (t.file_name().to_string_lossy().parse(), &v[..]) {
            m.insert(tid, (comm.trim_end().to_string(), ns, runs));
        }
    }
    m
}

/// With `BENCH_THREADS` set: what each thread of `pid` did per message over a phase.
fn print_threads(
    name: &str,
    before: &std::collections::BTreeMap<u32, (String, u64, u64)>,
    pid: u32,
    messages: usize,
) {
    let n = messages.max(1) as f64;
    let mut line = format!("  {name} per message:");
    for (tid, (comm, ns, runs)) in threads(pid) {
        let (ns0, runs0) = before.get(&tid).map_or((0, 0), |b| (b.1, b.2));
        if runs > runs0 {
            line.push_str(&format!(
                " {comm}[{tid}] {:.1} us {:.2} runs;",
                (ns - ns0) as f64 / 1000.0 / n,
                (runs - runs0) as f64 / n
            ));
        }
    }
    eprintln!("{line}");
}

/// Subscribes as `via` says for a warm-up second, then counts for `secs`; returns the
/// latencies, the window and the CPU of process `pid` over it, ms per s (the caller takes
/// the baseline off).
fn phase(name: &str, via: &Via, secs: f64, pid: u32) -> (Vec<u64>, f64, f64) {
    let cpu = || process_cpu(pid);
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut reader = None;
    let mut zenoh = None;
    match via.clone() {
        Via::Zenoh { port, key, stamp } => {
            let z = zenoh_client(port);
            let s2 = seen.clone();
            let sub = z
                .declare_subscriber(key)
                .callback(move |s| {
                    if let Some(t) = stamp_of(&s, stamp) {
                        record(&s2, t);
                    }
                })
                .wait()
                .unwrap();
            zenoh = Some((z, sub));
        }
        Via::Tcp { port, code } => {
            let s = open(port, &[code], false);
            let (seen, stop) = (seen.clone(), stop.clone());
            reader = Some(std::thread::spawn(move || tcp_reader(s, code, seen, stop)));
        }
    }
    std::thread::sleep(Duration::from_secs(1));
    let detail = std::env::var_os("BENCH_THREADS").is_some();
    let before = if detail {
        threads(pid)
    } else {
        Default::default()
    };
    let c0 = cpu();
    let t0 = Instant::now();
    seen.lock().unwrap().counting = true;
    std::thread::sleep(Duration::from_secs_f64(secs));
    let lat = {
        let mut s = seen.lock().unwrap();
        s.counting = false;
        std::mem::take(&mut s.lat)
    };
    let elapsed = t0.elapsed().as_secs_f64();
    let used = (cpu() - c0).as_secs_f64() * 1000.0 / elapsed;
    if detail {
        print_threads(name, &before, pid, lat.len());
    }
    stop.store(true, Ordering::Relaxed);
    if let Some(r) = reader {
        let _ = r.join();
    }
    if let Some((z, sub)) = zenoh {
        drop(sub);
        z.close().wait().unwrap();
    }
    let mut v: Vec<u64> = lat.iter().map(|&x| x.max(0) as u64).collect();
    v.sort_unstable();
    (v, elapsed, used)
}

/// One sample of `key` from the session on `port`: its payload.
fn capture(port: u16, key: &str) -> Vec<u8> {
    let z = zenoh_client(port);
    let sub = z.declare_subscriber(key).wait().unwrap();
    let s = sub
        .recv_timeout(Duration::from_secs(20))
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("no sample on {key} in 20 s"));
    let payload = s.payload().to_bytes().into_owned();
    drop(sub);
    z.close().wait().unwrap();
    payload
}

/// Waits until something listens on each of `ports`.
fn wait_listening(ports: &[u16]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    for &p in ports {
        while TcpStream::connect_timeout(&addr(p), Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "nothing listens on {p}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The server's configuration: both robots, both front ends on loopback, the simulated
/// Pioneer's base and laser at `hz`.
fn server_config(ports: [u16; 4], urg: SocketAddr, hz: f64) -> String {
    let [pioneer, utm, zport, rport] = ports;
    format!(
        "[zenoh]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{zport}\"]\n\n\
         [ros2]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{rport}\"]\nconnect = []\n\n\
         [[robot]]\nname = \"pioneer\"\nport = {pioneer}\nbind = \"127.0.0.1\"\nweb_port = 0\n\
         [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\", \"l\"]\n\
         [robot.driver.params]\nworld = \"room\"\nmotors_on = true\n\
         base_hz = {hz}\nlaser_hz = {hz}\n\n\
         [[robot]]\nname = \"utm\"\nport = {utm}\nbind = \"127.0.0.1\"\nweb_port = 0\n\
         [[robot.driver]]\ndriver = \"urg\"\ndevices = [\"l\", \"L\"]\n\
         [robot.driver.params]\naddress = \"{urg}\"\n"
    )
}

/// The Zenoh routes: name, front, key, stamp, rate (Hz), TCP port and device compared.
fn zenoh_routes(
    pioneer: u16,
    utm: u16,
    hz: f64,
) -> Vec<(&'static str, Front, String, Stamp, f64, u16, u8)> {
    let ros = |ns: &str, topic: &str, ty: &types::RosType| {
        rmw::topic_key(0, &rmw::qualify(ns, topic), ty)
    };
    // CDR: the header's stamp right after the encapsulation; a TFMessage's first
    // transform's after the sequence's count.
    vec![
        (
            "ROS 2 scan, 361 ranges",
            Front::Ros2,
            ros("/pioneer", "scan", &types::LASER_SCAN),
            Stamp::Cdr(4),
            hz,
            pioneer,
            b'l',
        ),
        (
            "ROS 2 scan, 1081 ranges",
            Front::Ros2,
            ros("/utm", "scan", &types::LASER_SCAN),
            Stamp::Cdr(4),
            40.0,
            utm,
            b'L',
        ),
        (
            "ROS 2 odom",
            Front::Ros2,
            ros("/pioneer", "odom", &types::ODOMETRY),
            Stamp::Cdr(4),
            hz,
            pioneer,
            b'p',
        ),
        (
            "ROS 2 tf",
            Front::Ros2,
            ros("/pioneer", "tf", &types::TF_MESSAGE),
            Stamp::Cdr(8),
            hz,
            pioneer,
            b'p',
        ),
        (
            "Zenoh player/pioneer/l",
            Front::Zenoh,
            "player/pioneer/l".into(),
            Stamp::Attachment,
            hz,
            pioneer,
            b'l',
        ),
        (
            "Zenoh player/utm/L",
            Front::Zenoh,
            "player/utm/L".into(),
            Stamp::Attachment,
            40.0,
            utm,
            b'L',
        ),
        (
            "Zenoh player/pioneer/p",
            Front::Zenoh,
            "player/pioneer/p".into(),
            Stamp::Attachment,
            hz,
            pioneer,
            b'p',
        ),
    ]
}

/// Whether the server's publishers of `front` are express (the bridge's are; the ROS 2
/// front end's are batched, as rmw_zenoh's).
fn express(front: Front) -> bool {
    front == Front::Zenoh
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(reference::FLAG) {
        return reference::serve(&args[2..]);
    }
    let quick = args.iter().any(|a| a == "--quick");
    let secs: f64 = match args.iter().position(|a| a == "--secs") {
        Some(i) => args
            .get(i + 1)
            .and_then(|s| s.parse().ok())
            .expect("--secs S"),
        None if quick => 4.0,
        None => 10.0,
    };
    // The simulated Pioneer's rate: 10 Hz is a real one's; more readings a second give the
    // CPU per message more signal above the server's baseline on a loaded machine.
    let hz: f64 = match args.iter().position(|a| a == "--hz") {
        Some(i) => args
            .get(i + 1)
            .and_then(|s| s.parse().ok())
            .expect("--hz N"),
        None => 10.0,
    };
    let ports = [free_port(), free_port(), free_port(), free_port()];
    let [pioneer, utm, zport, rport] = ports;
    let urg = TcpEmulator::start(UrgEmulator::new(Model::utm_30lx(), Scene::room())).unwrap();
    let dir = std::env::temp_dir().join(format!("player-ros2-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("ros2.toml");
    std::fs::write(&cfg, server_config(ports, urg.addr(), hz)).unwrap();
    let server = ServerProcess::start(
        &player_binary(),
        &["--config".to_string(), cfg.display().to_string()],
        addr(pioneer),
    );
    let pid = server.child.id();
    let _holders = [open(pioneer, b"pl", true), open(utm, b"L", true)];

    // Our routes, each with its reference (the captured bytes) and its TCP client.
    let (ref_z, ref_r) = (free_port(), free_port());
    let mut routes: Vec<Route> = Vec::new();
    let mut specs = Vec::new();
    let tcp_names = [
        (b'l', pioneer, "TCP l"),
        (b'L', utm, "TCP L"),
        (b'p', pioneer, "TCP p"),
    ];
    for (code, port, name) in tcp_names {
        routes.push(Route {
            name: name.into(),
            via: Via::Tcp { port, code },
            who: Who::Server,
            compare: None,
            samples: Vec::new(),
        });
    }
    for (name, front, key, stamp, rate_hz, _, code) in zenoh_routes(pioneer, utm, hz) {
        let port = if front == Front::Zenoh { zport } else { rport };
        let payload = capture(port, &key);
        specs.push((
            front,
            Spec {
                key: key.clone(),
                payload,
                rate_hz,
                stamp,
                express: express(front),
            },
        ));
        let ref_port = if front == Front::Zenoh { ref_z } else { ref_r };
        let tcp = tcp_names.iter().position(|t| t.0 == code).unwrap();
        routes.push(Route {
            name: format!("reference: {name}"),
            via: Via::Zenoh {
                port: ref_port,
                key: key.clone(),
                stamp,
            },
            who: Who::Reference,
            compare: None,
            samples: Vec::new(),
        });
        routes.push(Route {
            name: name.into(),
            via: Via::Zenoh { port, key, stamp },
            who: Who::Server,
            compare: Some((routes.len() - 1, tcp)),
            samples: Vec::new(),
        });
    }
    let mut reference: Child = Command::new(std::env::current_exe().unwrap())
        .args(reference::arguments(&dir, &specs, ref_z, ref_r))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("the reference publisher");
    wait_listening(&[ref_z, ref_r]);
    let rpid = reference.id();

    let server_cpu = move || process_cpu(pid);
    let reference_cpu = move || process_cpu(rpid);
    // `--only TEXT`: the routes whose name has TEXT (and the TCP clients).
    let only = args
        .iter()
        .position(|a| a == "--only")
        .map(|i| args.get(i + 1).expect("--only TEXT").clone());
    let mut baselines = Vec::new();
    for round in 0..ROUNDS {
        std::thread::sleep(Duration::from_secs(1));
        let (s0, r0, t0) = (server_cpu(), reference_cpu(), Instant::now());
        std::thread::sleep(Duration::from_secs_f64(secs));
        let t = t0.elapsed().as_secs_f64();
        let base = [
            (server_cpu() - s0).as_secs_f64() * 1000.0 / t,
            (reference_cpu() - r0).as_secs_f64() * 1000.0 / t,
        ];
        baselines.push(base);
        for r in routes.iter_mut() {
            let tcp = matches!(r.via, Via::Tcp { .. });
            if only
                .as_ref()
                .is_some_and(|o| !tcp && !r.name.contains(o.as_str()))
            {
                continue;
            }
            let (p, b) = match r.who {
                Who::Server => (pid, base[0]),
                Who::Reference => (rpid, base[1]),
            };
            let (lat, elapsed, used) = phase(&r.name, &r.via, secs, p);
            let rate = lat.len() as f64 / elapsed;
            let extra = (used - b).max(0.0);
            r.samples.push(Sample {
                rate,
                p50: percentile(&lat, 0.5),
                p99: percentile(&lat, 0.99),
                cpu_us: extra * 1000.0 / rate.max(1.0),
            });
            eprintln!(
                "round {round}: {}: {rate:.1}/s p50 {} us, {:.1} us CPU per message",
                r.name,
                percentile(&lat, 0.5),
                extra * 1000.0 / rate.max(1.0)
            );
        }
    }
    drop(reference.stdin.take());
    let _ = reference.wait();
    drop(server);
    drop(urg);
    let _ = std::fs::remove_dir_all(&dir);
    report(&routes, &baselines, secs, hz);
}

/// Prints the medians and the ratios.
fn report(routes: &[Route], baselines: &[[f64; 2]], secs: f64, hz: f64) {
    let med = |r: &Route, f: fn(&Sample) -> f64| median(r.samples.iter().map(f).collect());
    let cpu = |r: &Route| med(r, |s| s.cpu_us);
    let p50 = |r: &Route| med(r, |s| s.p50 as f64);
    println!(
        "\nros2: one subscriber per route, {secs} s per route, medians of {ROUNDS} interleaved \
         rounds, the simulated Pioneer at {hz} Hz; baselines (devices held open, nobody subscribed): server {:.1} ms CPU/s, \
         reference {:.2} ms CPU/s\n",
        median(baselines.iter().map(|b| b[0]).collect()),
        median(baselines.iter().map(|b| b[1]).collect()),
    );
    println!(
        "| route | per s | p50 us | p99 us | CPU us per message | CPU x reference | p50 x reference | CPU x TCP | p50 x TCP |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in routes.iter().filter(|r| !r.samples.is_empty()) {
        let ratios = match r.compare {
            Some((re, tcp)) => {
                let (re, tcp) = (&routes[re], &routes[tcp]);
                format!(
                    "{:.2} | {:.2} | {:.2} | {:.2}",
                    cpu(r) / cpu(re).max(0.1),
                    p50(r) / p50(re).max(1.0),
                    cpu(r) / cpu(tcp).max(0.1),
                    p50(r) / p50(tcp).max(1.0)
                )
            }
            None => " | | |".into(),
        };
        println!(
            "| {} | {:.1} | {:.0} | {:.0} | {:.1} | {ratios} |",
            r.name,
            med(r, |s| s.rate),
            p50(r),
            med(r, |s| s.p99 as f64),
            cpu(r),
        );
    }
}
