//! `scan` to a subscriber three ways, printed as a table: the ROS 2 front end's
//! sensor_msgs/LaserScan in CDR (rmw_zenoh's key), the Zenoh bridge's plain key
//! (`player/<robot>/l`, the 0.7.4a bytes), and a TCP client (push-new with timestamps).
//!
//! One `player` serves the simulated Pioneer with both the Zenoh bridge and the ROS 2 front
//! end on (loopback). Latency is the driver's timestamp (the header stamp of the CDR
//! message, the attachment of the plain key, the timestamp extension on TCP) to receipt
//! (wall clock, same machine). CPU: a TCP client holds the laser open in request/reply mode
//! throughout, so the driver does the same work in every phase; the table gives the
//! server's CPU per second above that baseline and per scan delivered.
//!
//! `cargo bench --bench ros2` (`-- --quick` for 4-second phases instead of 15).

mod common;

use common::{free_port, percentile, player_binary, process_cpu, wall_us, ServerProcess};
use player_proto::message;
use player_testkit::zenoh_client;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zenoh::Wait;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Connects and requests the laser read: push-new with timestamps, or request/reply
/// (`hold`: the device stays open, nothing is sent).
fn open(port: u16, hold: bool) -> TcpStream {
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
    hello.extend(message::request(&[(b'l', b'r')]));
    s.write_all(&hello).unwrap();
    let mut reply = [0u8; 5];
    s.read_exact(&mut reply).unwrap();
    assert_eq!((reply[0], reply[4]), (b'r', b'r'), "the laser was refused");
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
        if head[0] == b'l' && n >= 8 {
            let sec = u32::from_be_bytes(body[..4].try_into().unwrap());
            let usec = u32::from_be_bytes(body[4..8].try_into().unwrap());
            record(&seen, i64::from(sec) * 1_000_000 + i64::from(usec));
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
    cpu_us_per_scan: f64,
}

fn measure(name: &'static str, secs: f64, baseline: f64, pid: u32, seen: &Mutex<Seen>) -> Row {
    std::thread::sleep(Duration::from_secs(2));
    let c0 = process_cpu(pid);
    let t0 = Instant::now();
    seen.lock().unwrap().counting = true;
    std::thread::sleep(Duration::from_secs_f64(secs));
    let mut lat = {
        let mut s = seen.lock().unwrap();
        s.counting = false;
        std::mem::take(&mut s.lat)
    };
    let elapsed = t0.elapsed().as_secs_f64();
    let used = (process_cpu(pid) - c0).as_secs_f64() * 1000.0 / elapsed;
    lat.sort_unstable();
    let v: Vec<u64> = lat.iter().map(|&x| x.max(0) as u64).collect();
    let extra = (used - baseline).max(0.0);
    Row {
        name,
        readings: v.len(),
        rate: v.len() as f64 / elapsed,
        p50: percentile(&v, 0.5),
        p99: percentile(&v, 0.99),
        cpu_ms_per_s: extra,
        cpu_us_per_scan: extra * 1000.0 / (v.len() as f64 / elapsed).max(1.0),
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let secs: f64 = if quick { 4.0 } else { 15.0 };
    let (port, zport, rport) = (free_port(), free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("player-ros2-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("ros2.toml");
    std::fs::write(
        &cfg,
        format!(
            "[zenoh]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{zport}\"]\n\n\
             [ros2]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{rport}\"]\nconnect = []\n\n\
             [[robot]]\nname = \"pioneer\"\nport = {port}\nbind = \"127.0.0.1\"\nweb_port = 0\n\
             [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\", \"l\"]\n\
             [robot.driver.params]\nworld = \"room\"\nmotors_on = true\n"
        ),
    )
    .unwrap();
    let server = ServerProcess::start(
        &player_binary(),
        &["--config".to_string(), cfg.display().to_string()],
        addr(port),
    );
    let pid = server.child.id();
    let _holder = open(port, true);
    std::thread::sleep(Duration::from_secs(2));
    let c0 = process_cpu(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs.min(5.0)));
    let baseline = (process_cpu(pid) - c0).as_secs_f64() * 1000.0 / t0.elapsed().as_secs_f64();
    let mut rows = Vec::new();

    // ROS 2: sensor_msgs/LaserScan in CDR on rmw_zenoh's key; the stamp is in the header.
    {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let z = zenoh_client(rport);
        let key = player_ros2::rmw::topic_key(0, "/scan", &player_ros2::types::LASER_SCAN);
        let s2 = seen.clone();
        let sub = z
            .declare_subscriber(key)
            .callback(move |s| {
                let b = s.payload().to_bytes();
                if b.len() >= 12 {
                    let sec = i32::from_le_bytes(b[4..8].try_into().unwrap());
                    let nsec = u32::from_le_bytes(b[8..12].try_into().unwrap());
                    record(&s2, i64::from(sec) * 1_000_000 + i64::from(nsec / 1000));
                }
            })
            .wait()
            .unwrap();
        rows.push(measure("ROS 2 scan (CDR)", secs, baseline, pid, &seen));
        drop(sub);
        z.close().wait().unwrap();
    }

    // The Zenoh bridge's plain key: 0.7.4a bytes, the timestamp as the attachment.
    {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let z = zenoh_client(zport);
        let s2 = seen.clone();
        let sub = z
            .declare_subscriber("player/pioneer/l")
            .callback(move |s| {
                if let Some(a) = s.attachment() {
                    if let Some(t) = player::zenoh::decode_timestamp(&a.to_bytes()) {
                        record(&s2, i64::from(t.sec) * 1_000_000 + i64::from(t.usec));
                    }
                }
            })
            .wait()
            .unwrap();
        rows.push(measure("Zenoh plain key", secs, baseline, pid, &seen));
        drop(sub);
        z.close().wait().unwrap();
    }

    // TCP: push-new with timestamps.
    {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let s = open(port, false);
        let reader = {
            let (seen, stop) = (seen.clone(), stop.clone());
            std::thread::spawn(move || tcp_reader(s, seen, stop))
        };
        rows.push(measure("TCP", secs, baseline, pid, &seen));
        stop.store(true, Ordering::Relaxed);
        let _ = reader.join();
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);

    println!(
        "\nros2: the simulated Pioneer's laser (361 ranges), one subscriber per route; {secs} s \
         per route; server baseline (laser held open, nothing sent) {baseline:.1} ms CPU/s\n"
    );
    println!(
        "| route | scans | per s | p50 us | p99 us | CPU ms/s above baseline | CPU us per scan |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {:.1} | {} | {} | {:.2} | {:.1} |",
            r.name, r.readings, r.rate, r.p50, r.p99, r.cpu_ms_per_s, r.cpu_us_per_scan
        );
    }
}
