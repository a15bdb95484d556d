//! Readings numbered afresh reach everyone (issue 34): a driver program serving the laser
//! view `l` (`tests/programs/laser_runs.py`, 200 readings a second) is killed mid-stream;
//! the `program` driver starts it again and numbers the new run's readings afresh
//! (`DeviceData::seq` from 1, where the first run had gone past 1000). Every consumer in
//! the server tells new readings from old by the kit's one rule (`player_kit::fresh`), so
//! every one of them must have the new run's readings at once: four TCP clients, one in
//! each data mode (0 push all, 1 pull all, 2 push new, 3 pull new), a Foxglove WebSocket
//! client of the web viewer, a Zenoh subscriber of the bridge, a Zenoh subscriber of the ROS
//! 2 front end's `scan` topic, and the recorder's MCAP file.
//!
//! Each consumer's readings are told apart by their timestamps (the driver's, carried by
//! every route), and the program writes down when each run published its first reading:
//! every consumer's first reading of the new run must come within 1.5 s of that. Under a
//! rule that drops every reading numbered no higher than the last taken, the new run's
//! first 1200 readings (6 s) were dropped.

// Unsafe code: kill(2) on a server process (a Linux call).
#![allow(unsafe_code)]

use futures::StreamExt;
use player::settings::Settings;
use player_testkit::foxglove_ws::{self, channel_id, message_data, next_op, subscribe};
use player_testkit::*;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zenoh::Wait;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// How long the first run publishes before it is killed (at 200 readings a second).
const FIRST_RUN: Duration = Duration::from_secs(6);
/// How soon after the new run's first reading every consumer must have one.
const AT_ONCE: Duration = Duration::from_millis(1500);

/// Nanoseconds since the epoch.
fn ns(sec: u64, nsec: u64) -> u64 {
    sec * 1_000_000_000 + nsec
}

fn wall_ns() -> u64 {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    ns(d.as_secs(), u64::from(d.subsec_nanos()))
}

/// The reading timestamps (ns since the epoch) one consumer got, in order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<u64>>>);

impl Seen {
    fn push(&self, t: u64) {
        self.0.lock().unwrap().push(t);
    }

    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    /// The first timestamp after `t`, and how many there are after it.
    fn after(&self, t: u64) -> Option<(u64, usize)> {
        let all = self.0.lock().unwrap();
        let later: Vec<u64> = all.iter().copied().filter(|&x| x > t).collect();
        later.first().map(|&f| (f, later.len()))
    }
}

/// A TCP client in data mode `mode` with timestamps, reading `l` until `stop`.
fn tcp(addr: SocketAddr, mode: u8, stop: Arc<AtomicBool>) -> (Seen, std::thread::JoinHandle<()>) {
    let seen = Seen::default();
    let s = seen.clone();
    let h = std::thread::spawn(move || {
        let mut c = Client::connect(addr);
        c.timestamps(true);
        c.data_mode(mode);
        assert_eq!(c.request(&[(b'l', b'r')]), b"lr");
        let pull = matches!(mode, 1 | 3);
        while !stop.load(Ordering::Relaxed) {
            if pull {
                c.request_round();
            }
            if let Some(p) = c.read_message_within(Duration::from_millis(500)) {
                if p.0 == b'l' {
                    let b = &p.1;
                    let sec = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                    let usec = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                    s.push(ns(u64::from(sec), u64::from(usec) * 1000));
                }
            }
            if pull {
                // The client's own pace between its requests.
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    });
    (seen, h)
}

/// A Foxglove WebSocket client of the web viewer on `port`, subscribed to `/laser`.
fn foxglove(port: u16, stop: Arc<AtomicBool>) -> (Seen, std::thread::JoinHandle<()>) {
    let seen = Seen::default();
    let s = seen.clone();
    let h = std::thread::spawn(move || {
        foxglove_ws::runtime().block_on(async {
            let mut ws = foxglove_ws::connect(port, "").await;
            let adv = next_op(&mut ws, "advertise").await;
            subscribe(&mut ws, &[(7, channel_id(&adv, "/laser"))]).await;
            while !stop.load(Ordering::Relaxed) {
                let next = tokio::time::timeout(Duration::from_millis(500), ws.next()).await;
                let Ok(Some(Ok(m))) = next else { continue };
                let tokio_tungstenite::tungstenite::Message::Binary(b) = m else {
                    continue;
                };
                if let Some((7, t, _)) = message_data(&b) {
                    s.push(t);
                }
            }
        });
    });
    (seen, h)
}

/// A Zenoh subscriber of `key` on the session at `port`; `stamp` reads a sample's reading
/// timestamp.
fn zenoh_sub(
    port: u16,
    key: &'static str,
    stamp: fn(&zenoh::sample::Sample) -> Option<u64>,
    stop: Arc<AtomicBool>,
) -> (Seen, std::thread::JoinHandle<()>) {
    let seen = Seen::default();
    let s = seen.clone();
    let h = std::thread::spawn(move || {
        let z = zenoh_client(port);
        let sub = z.declare_subscriber(key).wait().expect("a subscriber");
        while !stop.load(Ordering::Relaxed) {
            if let Ok(Some(sample)) = sub.recv_timeout(Duration::from_millis(500)) {
                if let Some(t) = stamp(&sample) {
                    s.push(t);
                }
            }
        }
        drop(sub);
        let _ = z.close().wait();
    });
    (seen, h)
}

/// The bridge's timestamp attachment.
fn bridge_stamp(s: &zenoh::sample::Sample) -> Option<u64> {
    let a = s.attachment()?.to_bytes();
    let t = player::zenoh::decode_timestamp(&a)?;
    Some(ns(u64::from(t.sec), u64::from(t.usec) * 1000))
}

/// A `sensor_msgs/LaserScan`'s header stamp: after the 4-byte CDR encapsulation, `int32
/// sec`, `uint32 nanosec` (little-endian).
fn ros2_stamp(s: &zenoh::sample::Sample) -> Option<u64> {
    let b = s.payload().to_bytes();
    let sec = i32::from_le_bytes(b.get(4..8)?.try_into().ok()?);
    let nsec = u32::from_le_bytes(b.get(8..12)?.try_into().ok()?);
    Some(ns(u64::try_from(sec).ok()?, u64::from(nsec)))
}

/// The publish times (the reading timestamps) of robot `r`'s `l` messages in an MCAP file.
fn recorded(file: &std::path::Path) -> Seen {
    let seen = Seen::default();
    let bytes = std::fs::read(file).unwrap();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        if m.channel.topic == "/r/l" {
            seen.push(m.publish_time);
        }
    }
    seen
}

/// Pids of this process's children whose command line contains `name`.
fn children_named(name: &str) -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split after the ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).unwrap_or("");
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if ppid == me && String::from_utf8_lossy(&cmdline).contains(name) {
            out.push(pid);
        }
    }
    out
}

fn settings(dir: &std::path::Path, web: u16, zenoh: u16, ros2: u16) -> Settings {
    let text = format!(
        "[record]\npath = \"{rec}\"\n\n\
         [zenoh]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{zenoh}\"]\n\n\
         [ros2]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{ros2}\"]\n\n\
         [[robot]]\nname = \"r\"\nport = 0\nbind = \"127.0.0.1\"\nweb_port = {web}\n\n\
         [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\"]\n\
         [robot.driver.params]\nworld = \"room\"\n\n\
         [[robot.driver]]\ndriver = \"program\"\ndevices = [\"l\"]\n\
         [robot.driver.params]\ncommand = [\"python3\", \"{ROOT}/tests/programs/laser_runs.py\"]\n\
         env = {{ PYTHONPATH = \"{ROOT}/python\" }}\n\
         restart_backoff = {{ initial = 0.2, max = 1.0 }}\n\
         options = {{ rate = 200, runs = \"{runs}\" }}\n\
         [[robot.driver.params.device]]\ncode = \"l\"\ndata_size = 722\naccess = \"r\"\n",
        rec = dir.join("r.mcap").display(),
        runs = dir.join("runs").display(),
    );
    Settings::from_toml(&text, "renumber.toml").unwrap()
}

#[test]
fn after_a_driver_program_restarts_its_numbering_every_consumer_has_its_readings_at_once() {
    let dir: PathBuf = std::env::temp_dir().join(format!("player-renumber-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (web, zp, rp) = (free_port(), free_port(), free_port());
    let server = start_server_with(settings(&dir, web, zp, rp), player::builtin_catalog());
    let stop = Arc::new(AtomicBool::new(false));
    let mut consumers: Vec<(String, Seen)> = Vec::new();
    let mut threads = Vec::new();
    for mode in 0..4u8 {
        let (seen, h) = tcp(server.addr(), mode, stop.clone());
        consumers.push((format!("TCP, data mode {mode}"), seen));
        threads.push(h);
    }
    let (seen, h) = foxglove(web, stop.clone());
    consumers.push(("web viewer (Foxglove /laser)".into(), seen));
    threads.push(h);
    let (seen, h) = zenoh_sub(zp, "player/r/l", bridge_stamp, stop.clone());
    consumers.push(("Zenoh bridge (player/r/l)".into(), seen));
    threads.push(h);
    let (seen, h) = zenoh_sub(rp, "0/scan/**", ros2_stamp, stop.clone());
    consumers.push(("ROS 2 (scan)".into(), seen));
    threads.push(h);

    // The first run: every consumer reads, for long enough to number 1200 readings.
    wait_until(Duration::from_secs(30), "every consumer's readings", || {
        consumers.iter().all(|(_, s)| s.count() >= 3)
    });
    std::thread::sleep(FIRST_RUN);
    let pids = children_named("laser_runs.py");
    assert_eq!(pids.len(), 1, "one driver program runs: {pids:?}");
    let killed = wall_ns();
    // SAFETY: kill(2) on a child process of this test (the in-process server's program).
    assert_eq!(unsafe { libc::kill(pids[0], libc::SIGKILL) }, 0);
    wait_until(
        Duration::from_secs(30),
        "the new run's readings everywhere",
        || {
            consumers
                .iter()
                .all(|(_, s)| s.after(killed).is_some_and(|(_, n)| n >= 5))
        },
    );
    // A sleep on purpose: the recorder closes a chunk a second.
    std::thread::sleep(Duration::from_millis(1200));
    stop.store(true, Ordering::Relaxed);
    for h in threads {
        h.join().unwrap();
    }
    server.shutdown();
    consumers.push(("recorder (MCAP /r/l)".into(), recorded(&dir.join("r.mcap"))));

    // When each run published its first reading, as the program wrote it down.
    let runs: Vec<u64> = std::fs::read_to_string(dir.join("runs"))
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(runs.len(), 2, "two runs of the program: {runs:?}");
    let began = runs[1];
    assert!(began > killed);
    for (name, s) in &consumers {
        let (first, n) = s
            .after(killed)
            .unwrap_or_else(|| panic!("{name}: no reading of the new run"));
        let late = Duration::from_nanos(first.saturating_sub(began));
        eprintln!(
            "renumber: {name}: the new run's first reading {:.3} s after the kill, {late:?} after the run's first, {n} readings",
            (first - killed) as f64 / 1e9
        );
        assert!(
            late <= AT_ONCE,
            "{name}: the new run's first reading came {late:?} after the run began"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
