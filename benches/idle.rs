//! Idle means idle: how often the server wakes, and whether its memory stays put, with the
//! web viewer, the Zenoh bridge and the ROS 2 front end enabled and nobody connected.
//!
//! The `player` binary serves the simulated robot (the default configuration's) with its
//! web port, `[zenoh]` and `[ros2]` on (peer mode, listening on loopback ports of their
//! own) and no client of any kind. After a settling time, every thread's `schedstat`
//! (`/proc/PID/task/TID/schedstat`: CPU time and the number of times the thread was run,
//! which for a thread that sleeps is its wake-ups) is read at the start and end of each
//! row, with the process's RSS. A row every `--row SECS` (10), then the whole window per
//! thread, then the verdicts: wake-ups a second of the whole process (goal, issue 33: at
//! most 1) and the RSS of the last row against the first (flat: within 2% and 256 kB).
//!
//! `cargo bench --bench idle` (60 s); `-- --quick` (20 s), `-- --secs N`, `-- --minutes N`
//! (the hour: `-- --minutes 60`).

mod common;

use common::{free_port, player_binary, ServerProcess};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One thread's counters: its name, CPU nanoseconds, times run.
type Threads = BTreeMap<u32, (String, u64, u64)>;

fn threads(pid: u32) -> Threads {
    let mut out = Threads::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in dir.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
        let v: Vec<u64> = stat
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() >= 3 {
            out.insert(tid, (comm.trim().to_string(), v[0], v[2]));
        }
    }
    out
}

/// Wake-ups and CPU nanoseconds per thread between two readings (threads in both).
fn deltas(a: &Threads, b: &Threads) -> Vec<(u32, String, u64, u64)> {
    b.iter()
        .filter_map(|(tid, (name, ns, runs))| {
            let (_, ns0, runs0) = a.get(tid)?;
            Some((*tid, name.clone(), runs - runs0, ns - ns0))
        })
        .collect()
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn arg(args: &[String], name: &str) -> Option<f64> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let secs = arg(&args, "--minutes")
        .map(|m| m * 60.0)
        .or_else(|| arg(&args, "--secs"))
        .unwrap_or(if args.iter().any(|a| a == "--quick") {
            20.0
        } else {
            60.0
        });
    let row = arg(&args, "--row").unwrap_or(10.0).min(secs);
    let dir = std::env::temp_dir().join(format!("player-idle-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let config = dir.join("idle.toml");
    let (port, web, zenoh, ros2) = (free_port(), free_port(), free_port(), free_port());
    std::fs::write(
        &config,
        format!(
            "[[robot]]\nname = \"pioneer\"\nport = {port}\nbind = \"127.0.0.1\"\nweb_port = {web}\n\n\
             [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\", \"s\", \"m\", \"g\", \"l\", \"z\", \"v\"]\n\n\
             [zenoh]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{zenoh}\"]\n\n\
             [ros2]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{ros2}\"]\n"
        ),
    )
    .expect("write the configuration");
    let server = ServerProcess::start(
        &player_binary(),
        &["--config".to_string(), config.display().to_string()],
        ([127, 0, 0, 1], port).into(),
    );
    let pid = server.child.id();
    // The front ends come up after the robot's port; let every start-up task finish.
    std::thread::sleep(Duration::from_secs(5));
    println!(
        "idle: `player` with the web viewer, Zenoh and ROS 2 enabled, nobody connected; \
         {secs:.0} s in rows of {row:.0} s; load average at start: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!(
        "{:>7} | {:>9} {:>9} {:>8} | {:>7}",
        "t s", "wakes/s", "cpu us/s", "threads", "RSS kB"
    );
    let first = threads(pid);
    let t0 = Instant::now();
    let mut rss = Vec::new();
    let mut last = first.clone();
    let rows = (secs / row).round().max(1.0) as u32;
    for i in 1..=rows {
        let due = t0 + Duration::from_secs_f64(row * f64::from(i));
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let now = threads(pid);
        let d = deltas(&last, &now);
        let kb = rss_kb(pid);
        rss.push(kb);
        println!(
            "{:>7.0} | {:>9.2} {:>9.1} {:>8} | {:>7}",
            t0.elapsed().as_secs_f64(),
            d.iter().map(|x| x.2).sum::<u64>() as f64 / row,
            d.iter().map(|x| x.3).sum::<u64>() as f64 / 1e3 / row,
            now.len(),
            kb
        );
        last = now;
    }
    let window = t0.elapsed().as_secs_f64();
    let whole = deltas(&first, &last);
    println!("per thread over the {window:.0} s (threads that woke):");
    println!(
        "{:>8} {:<18} {:>9} {:>9}",
        "tid", "name", "wakes/s", "cpu us/s"
    );
    for (tid, name, runs, ns) in whole.iter().filter(|x| x.2 > 0) {
        println!(
            "{tid:>8} {name:<18} {:>9.3} {:>9.1}",
            *runs as f64 / window,
            *ns as f64 / 1e3 / window
        );
    }
    let wakes = whole.iter().map(|x| x.2).sum::<u64>() as f64 / window;
    let (a, b) = (rss[0], *rss.last().unwrap_or(&rss[0]));
    let flat = b <= a + (a / 50).max(256);
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    println!(
        "idle wake-ups: {wakes:.2} a second, the whole process (goal <= 1: {}); RSS {a} kB in \
         the first row, {b} kB in the last ({}: within 2% and 256 kB)",
        verdict(wakes <= 1.0),
        if flat { "flat" } else { "GROWING" }
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
