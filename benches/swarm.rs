//! Swarm scale: `cargo bench --bench swarm`.
//!
//! A table of robots (1, 10, 100, 1000, 10 000) x device set (simple: position + 16 sonars
//! read at 10 Hz; full: + the 361-ray laser at 10 Hz), every robot driven by a small
//! wander-and-avoid rule on its own sonar, in a world whose size grows with the robots (one
//! robot per 9 m^2, placed at random with a seed, a few walls and pillars). Columns: the
//! real-time factor on one thread and on all cores (simulated seconds per wall second,
//! physics at 100 Hz, sensors at 10 Hz), CPU per robot-second (CPU time of the one-thread
//! run per simulated robot-second), memory per robot (bytes the world holds once running,
//! counted by the allocator, divided by the robots), and the figures Stage reported in 2008
//! (Vaughan, "Massively multi-robot simulation in Stage": one simple robot about 1000x
//! real time, 1000 about real time).
//!
//! Then the served rows, through the `player` binary over TCP: how long `-stage` takes to
//! start a 10 000-robot world (until the last robot's port accepts), and 1000 robots served
//! with one client per robot reading `p` and `s` at 10 Hz: rounds delivered (of those due),
//! |mean interval - 100 ms| and mean |interval - 100 ms| (per client, then averaged: the
//! stress bench's `dev` and `jit`). `-- --served` runs only the 1000-robot served row.
//!
//! The machine is often shared: the header prints `/proc/loadavg` before and after, and the
//! column "vs 1 robot" gives each row's CPU per robot-second over the one-robot row's of the
//! same run (how the cost grows with the population, which a loaded machine disturbs less
//! than the absolute figures). Under the table, the goals, each with the figure
//! measured and whether it was met.
//!
//! `SWARM_QUICK=1` (or `-- --quick`) runs shorter windows and leaves out the 10 000-robot
//! full row: under a minute. `SWARM_SECS` sets the simulated seconds of the 1000-robot
//! rows (every row runs as many robot-seconds: 1 robot a thousand times longer). `-- --only N`
//! runs only the rows of N robots and no served row (for a profile of one population;
//! `-- --set simple` or `full` only that device set).

// Unsafe code: the counting global allocator (a GlobalAlloc is unsafe to implement).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use player_proto::message;
use player_sim::{SimWorld, WorldMap};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

/// The allocator, counting the bytes currently allocated.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new as isize - layout.size() as isize, Ordering::Relaxed);
        System.realloc(ptr, layout, new)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[derive(Clone, Copy, PartialEq)]
enum Set {
    Simple,
    Full,
}

impl Set {
    fn name(self) -> &'static str {
        match self {
            Set::Simple => "simple",
            Set::Full => "full",
        }
    }
}

/// A world for `n` robots: a square of 9 m^2 per robot, walls and pillars, the robots at
/// random places (seeded).
fn world(n: usize) -> WorldMap {
    let side = ((n as f64 * 9.0e6).sqrt()).max(6000.0).round();
    let text = format!(
        "[world]\nwidth = {side}\nheight = {side}\nseed = 2008\n\
         [[wall]]\nfrom = [{a}, {h}]\nto = [{b}, {h}]\n\
         [[wall]]\nfrom = [{h}, {a}]\nto = [{h}, {b}]\n\
         [[pillar]]\ncenter = [{q}, {q}]\nradius = 300\n\
         [[pillar]]\ncenter = [{r}, {r}]\nradius = 300\n\
         [[swarm]]\ncount = {n}\npattern = \"random\"\nkind = \"simple\"\n",
        a = side * 0.2,
        b = side * 0.45,
        h = side * 0.5,
        q = side * 0.25,
        r = side * 0.75,
    );
    WorldMap::from_toml_str(&text).expect("the bench world is valid")
}

/// Wander and avoid: straight on at 300 mm/s; when the front sonars see something within
/// 600 mm, turn on the spot toward the more open side (backing off within 300 mm).
fn wander(s: &[u16; 16]) -> (i16, i16) {
    let front = s[2..6].iter().copied().min().unwrap_or(5000);
    let left = u32::from(s[0]) + u32::from(s[1]);
    let right = u32::from(s[6]) + u32::from(s[7]);
    let turn = if left >= right { 45 } else { -45 };
    match front {
        0..=299 => (-100, turn),
        300..=599 => (0, turn),
        _ => (300, 0),
    }
}

/// CPU time of this process so far (every thread).
fn cpu_now() -> Duration {
    common::process_cpu(std::process::id())
}

/// CPU time of the calling thread so far, to the nanosecond (the scheduler's own account,
/// `/proc/thread-self/schedstat`), or the process's when that cannot be read: the one-thread
/// runs of the small worlds take milliseconds, below the process counters' 10 ms ticks.
fn thread_cpu_now() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or_else(cpu_now, Duration::from_nanos)
}

struct Row {
    rtf_one: f64,
    rtf_all: f64,
    cpu_us_per_robot_s: f64,
    bytes_per_robot: f64,
}

/// Runs `n` robots of `set` for `secs` simulated seconds on `threads` threads: (wall, cpu;
/// on one thread the calling thread's CPU time, else the process's).
fn run(map: &Arc<WorldMap>, set: Set, threads: usize, secs: f64) -> (Duration, Duration) {
    let mut w = SimWorld::new(map.clone());
    w.set_threads(threads);
    let all: Vec<usize> = (0..w.len()).collect();
    let rounds = (secs * 10.0).round() as usize;
    let cpu_now = if threads == 1 {
        thread_cpu_now
    } else {
        cpu_now
    };
    let (t0, c0) = (Instant::now(), cpu_now());
    for _ in 0..rounds {
        let sonars = w.sonar_many(&all);
        if set == Set::Full {
            std::hint::black_box(w.laser_many(&all));
        }
        for (i, s) in sonars.iter().enumerate() {
            let (v, t) = wander(s);
            w.controls(i).set_velocity(v, t);
        }
        w.run(0.1);
    }
    (t0.elapsed(), cpu_now().saturating_sub(c0))
}

/// Bytes a running world of `map` holds per robot (after `rounds` tenths of a second of
/// simulated time, so every scratch buffer has grown).
fn bytes_per_robot(map: &Arc<WorldMap>, set: Set, rounds: usize) -> f64 {
    let before = LIVE.load(Ordering::Relaxed);
    let mut w = SimWorld::new(map.clone());
    w.set_threads(1);
    let all: Vec<usize> = (0..w.len()).collect();
    for _ in 0..rounds {
        let s = w.sonar_many(&all);
        if set == Set::Full {
            std::hint::black_box(w.laser_many(&all));
        }
        drop(s);
        w.run(0.1);
    }
    let held = LIVE.load(Ordering::Relaxed) - before;
    let n = w.len();
    drop(w);
    held as f64 / n as f64
}

fn measure(n: usize, set: Set, secs: f64, cores: usize, quick: bool) -> Row {
    let map = Arc::new(world(n));
    // The same robot-seconds per row (longer windows for the small worlds, shorter for the
    // big ones), at least a few rounds.
    let secs = (secs * 1000.0 / n as f64).max(if quick { 0.2 } else { 0.5 });
    let (wall1, cpu1) = run(&map, set, 1, secs);
    let (wall_all, _) = if cores > 1 {
        run(&map, set, cores, secs)
    } else {
        (wall1, cpu1)
    };
    Row {
        rtf_one: secs / wall1.as_secs_f64(),
        rtf_all: secs / wall_all.as_secs_f64(),
        cpu_us_per_robot_s: cpu1.as_secs_f64() * 1e6 / (n as f64 * secs),
        bytes_per_robot: bytes_per_robot(&map, set, if quick { 3 } else { 10 }),
    }
}

/// The system's load averages (1, 5, 15 minutes), as `/proc/loadavg` gives them.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

fn stage_2008(n: usize, set: Set) -> &'static str {
    match (n, set) {
        (1, Set::Simple) => "~1000x",
        (1000, Set::Simple) => "~1x",
        _ => "-",
    }
}

/// Writes a world file of `n` simple robots for the served rows; returns its path.
fn served_world(n: usize, dir: &std::path::Path) -> std::path::PathBuf {
    let side = ((n as f64 * 9.0e6).sqrt()).max(6000.0).round();
    let path = dir.join(format!("swarm-{n}.toml"));
    std::fs::write(
        &path,
        format!(
            "[world]\nwidth = {side}\nheight = {side}\nseed = 2008\n\
             [[swarm]]\ncount = {n}\npattern = \"random\"\nkind = \"simple\"\n"
        ),
    )
    .expect("write the world file");
    path
}

/// Starts `player -stage WORLD -gp PORT -web 0` and waits until the last robot's port
/// accepts: the server and the time that took.
fn serve(world: &std::path::Path, n: usize) -> (common::ServerProcess, Duration, u16) {
    // A run of n free ports (other programs on a shared machine hold some).
    let free = |base: u16| {
        (0..n as u16).all(|k| std::net::TcpListener::bind(("0.0.0.0", base + k)).is_ok())
    };
    // Below the system's ephemeral ports (32768 up), which outgoing connections take.
    let base = (0..60)
        .map(|k| 10000 + (std::process::id() % 20) as u16 * 100 + k * 211)
        .find(|&b| usize::from(b) + n <= 32768 && free(b))
        .expect("a run of free ports below 32768");
    let last: SocketAddr = ([127, 0, 0, 1], base + n as u16 - 1).into();
    let args = vec![
        "-stage".to_string(),
        world.display().to_string(),
        "-gp".to_string(),
        base.to_string(),
        "-web".to_string(),
        "0".to_string(),
    ];
    let t0 = Instant::now();
    let server = common::ServerProcess::start(&common::player_binary(), &args, last);
    // `start` waits 100 ms after the first successful connection.
    let took = t0.elapsed().saturating_sub(Duration::from_millis(100));
    (server, took, base)
}

/// What the served row measured.
struct Served {
    /// Rounds delivered, percent of those due.
    delivered: f64,
    /// |mean interval - 100 ms| per client, averaged over clients, microseconds (the
    /// stress bench's `dev`, the paper's figure).
    dev_us: f64,
    /// mean |interval - 100 ms| per client, averaged over clients, microseconds (the
    /// stress bench's `jit`).
    jitter_us: f64,
    /// Median, 99th percentile and longest interval over all clients, microseconds.
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    /// Server CPU, share of a core.
    cpu: f64,
}

/// One client per robot reading `p` and `s` at 10 Hz for `window`.
fn served_load(base: u16, n: usize, window: Duration, server: &common::ServerProcess) -> Served {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let t0 = Instant::now();
    let ramp = Duration::from_millis(2 * n as u64);
    let w0 = t0 + ramp + Duration::from_millis(1500);
    let w1 = w0 + window;
    let (arrivals, cpu) = rt.block_on(async {
        let mut tasks = Vec::with_capacity(n);
        for i in 0..n {
            let addr: SocketAddr = ([127, 0, 0, 1], base + i as u16).into();
            let start = t0 + ramp * i as u32 / n as u32;
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep_until(start.into()).await;
                let mut got: Vec<Instant> = Vec::new();
                let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
                    return got;
                };
                let _ = s.set_nodelay(true);
                let mut hello = message::request(&[(b'p', b'r'), (b's', b'r')]);
                hello.extend(message::config(b'y', b'f', &10u16.to_be_bytes()));
                if s.write_all(&hello).await.is_err() {
                    return got;
                }
                let mut reply = [0u8; 7];
                if s.read_exact(&mut reply).await.is_err() {
                    return got;
                }
                let round = (3 + 21) + (3 + 32);
                let mut buf = vec![0u8; 4096];
                let mut partial = 0usize;
                let end = tokio::time::sleep_until(w1.into());
                tokio::pin!(end);
                loop {
                    tokio::select! {
                        r = s.read(&mut buf) => match r {
                            Ok(0) | Err(_) => return got,
                            Ok(k) => {
                                let now = Instant::now();
                                partial += k;
                                while partial >= round {
                                    partial -= round;
                                    if now >= w0 && now < w1 {
                                        got.push(now);
                                    }
                                }
                            }
                        },
                        _ = &mut end => return got,
                    }
                }
            }));
        }
        tokio::time::sleep_until(w0.into()).await;
        let c0 = server.cpu();
        tokio::time::sleep_until(w1.into()).await;
        let c1 = server.cpu();
        let mut all = Vec::with_capacity(n);
        for t in tasks {
            all.push(t.await.unwrap_or_default());
        }
        (all, c1.saturating_sub(c0))
    });
    let due = n as f64 * 10.0 * window.as_secs_f64();
    let delivered: usize = arrivals.iter().map(Vec::len).sum();
    let (mut dev, mut jitter, mut clients) = (0.0, 0.0, 0usize);
    let mut all: Vec<f64> = Vec::new();
    for a in &arrivals {
        if a.len() >= 2 {
            let iv: Vec<f64> = a
                .windows(2)
                .map(|w| w[1].duration_since(w[0]).as_secs_f64() * 1e6)
                .collect();
            all.extend(&iv);
            let mean = iv.iter().sum::<f64>() / iv.len() as f64;
            dev += (mean - 100_000.0).abs();
            jitter += iv.iter().map(|v| (v - 100_000.0).abs()).sum::<f64>() / iv.len() as f64;
            clients += 1;
        }
    }
    let clients = clients.max(1) as f64;
    all.sort_by(f64::total_cmp);
    let at = |q: f64| all.get((q * all.len() as f64) as usize).copied();
    Served {
        p50_us: at(0.5).unwrap_or(f64::NAN),
        p99_us: at(0.99).unwrap_or(f64::NAN),
        max_us: all.last().copied().unwrap_or(f64::NAN),
        delivered: 100.0 * delivered as f64 / due,
        dev_us: dev / clients,
        jitter_us: jitter / clients,
        cpu: cpu.as_secs_f64() / window.as_secs_f64(),
    }
}

/// The goals for the simulator, judged on the table's rows.
fn goals(rows: &[(usize, Set, Row)], cores: usize) {
    let row = |n: usize, set: Set| rows.iter().find(|r| r.0 == n && r.1 == set).map(|r| &r.2);
    let best = |r: &Row| r.rtf_one.max(r.rtf_all);
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    println!("goals ({cores} cores; real-time factors the better of 1 and {cores} threads):");
    for (n, set, goal) in [
        (1000, Set::Simple, 10.0),
        (10_000, Set::Simple, 1.0),
        (100, Set::Full, 2.0),
    ] {
        if let Some(r) = row(n, set) {
            // What the CPU time of the one-thread run gives on one core of its own: on a
            // loaded machine the wall-clock figure is the share of a core the run got.
            let own_core = 1e6 / (r.cpu_us_per_robot_s * n as f64);
            println!(
                "- {n} {} robots at >= {goal}x real time: {:.1}x, {} ({own_core:.1}x on one \
                 core of its own, from the CPU time)",
                set.name(),
                best(r),
                verdict(best(r) >= goal)
            );
        }
    }
    let costs: Vec<f64> = [100, 1000, 10_000]
        .iter()
        .filter_map(|&n| row(n, Set::Simple))
        .map(|r| r.cpu_us_per_robot_s)
        .collect();
    if costs.len() == 3 {
        let (lo, hi) = costs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &c| {
            (lo.min(c), hi.max(c))
        });
        println!(
            "- CPU per robot-second flat within 2x from 100 to 10 000 simple robots: {:.2}x, {}",
            hi / lo,
            verdict(hi / lo <= 2.0)
        );
    }
    let most = rows
        .iter()
        .filter(|r| r.1 == Set::Simple)
        .map(|r| r.2.bytes_per_robot)
        .fold(0.0f64, f64::max);
    println!(
        "- memory under 20 KB per simple robot: at most {:.2} KB, {}",
        most / 1024.0,
        verdict(most < 20.0 * 1024.0)
    );
}

fn main() {
    let quick = std::env::var_os("SWARM_QUICK").is_some_and(|v| v != "0")
        || std::env::args().any(|a| a == "--quick");
    let secs: f64 = std::env::var("SWARM_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 1.0 } else { 10.0 });
    // `--served`: only the 1000-robot served row.
    let served_only = std::env::args().any(|a| a == "--served");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let args: Vec<String> = std::env::args().collect();
    let only: Option<usize> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok());
    let only_set: Option<String> = args
        .iter()
        .position(|a| a == "--set")
        .and_then(|i| args.get(i + 1))
        .cloned();
    println!(
        "swarm: robots x device set, wander-and-avoid on sonar at 10 Hz, physics at 100 Hz \
         ({cores} cores; {secs} simulated s per 1000-robot row, as many robot-seconds in every row{}; load average {} at the start)",
        if quick { ", quick" } else { "" },
        loadavg()
    );
    println!();
    println!("| robots | devices | RT factor, 1 thread | RT factor, {cores} threads | CPU per robot-second | vs 1 robot | memory per robot | Stage 2008 |");
    println!("|-------:|:--------|--------------------:|------------:|---------------------:|-----------:|-----------------:|-----------:|");
    let mut rows: Vec<(usize, Set, Row)> = Vec::new();
    for set in [Set::Simple, Set::Full] {
        if only_set.as_deref().is_some_and(|o| o != set.name()) {
            continue;
        }
        let mut one = f64::NAN;
        for n in [1usize, 10, 100, 1000, 10_000] {
            if served_only
                || (quick && set == Set::Full && n == 10_000)
                || only.is_some_and(|o| o != n && n != 1)
            {
                continue;
            }
            let r = measure(n, set, secs, cores, quick);
            if n == 1 {
                one = r.cpu_us_per_robot_s;
            }
            println!(
                "| {n:>6} | {:<7} | {:>18.1}x | {:>10.1}x | {:>17.1} us | {:>9.2}x | {:>13.2} KB | {:>10} |",
                set.name(),
                r.rtf_one,
                r.rtf_all,
                r.cpu_us_per_robot_s,
                r.cpu_us_per_robot_s / one,
                r.bytes_per_robot / 1024.0,
                stage_2008(n, set),
            );
            rows.push((n, set, r));
        }
    }
    println!();
    if !served_only {
        println!("load average {} at the end of the table", loadavg());
        goals(&rows, cores);
    }
    if only.is_some() {
        return;
    }
    println!();
    let dir = std::env::temp_dir().join(format!("player-swarm-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    if !served_only {
        let big = 10_000;
        let (server, took, _) = serve(&served_world(big, &dir), big);
        drop(server);
        println!(
            "served: -stage with {big} robots (one port each) listening on every port after \
             {:.2} s",
            took.as_secs_f64()
        );
    }
    let n = 1000;
    println!(
        "load average before the served row: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let (server, took, base) = serve(&served_world(n, &dir), n);
    let window = Duration::from_secs(if quick { 2 } else { 10 });
    let r = served_load(base, n, window, &server);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "served: {n} robots, one client each reading p and s at 10 Hz for {} s (started in \
         {:.2} s): {:.2}% of rounds delivered (goal >= 99.9%), |mean interval - 100 ms| {:.1} us \
         (goal < 10 us), mean |interval - 100 ms| {:.0} us (jitter), intervals p50 {:.3} ms, \
         p99 {:.3} ms, max {:.3} ms, server CPU {:.0}% of a core",
        window.as_secs(),
        took.as_secs_f64(),
        r.delivered,
        r.dev_us,
        r.jitter_us,
        r.p50_us / 1e3,
        r.p99_us / 1e3,
        r.max_us / 1e3,
        r.cpu * 100.0
    );
}
