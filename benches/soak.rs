//! Soak bench: one `player` process (release build) under minutes of hostile but legal
//! load, sampled every interval for resource growth.
//!
//! ```text
//! cargo bench --bench soak                    10 minutes, a row every 10 s
//! cargo bench --bench soak -- --quick         45 s, a row every 2 s
//! cargo bench --bench soak -- --minutes 3     3 minutes (--interval S to change the rows)
//! ... -- --server-log FILE                    the server's debug log to FILE
//! ```
//!
//! The server serves two robots: robot A, the simulated Pioneer (all seven devices), and
//! robot B, a Pioneer base (`p2os`) on an emulated P2OS behind a pseudo-terminal
//! (`player-emulate p2os`), which the bench kills (SIGKILL, like a cable pulled) and
//! restarts every few seconds, so the driver's reconnect path runs again and again.
//! Load, all on loopback, every loop bounded by timeouts and a stop flag:
//!
//! - churn: clients connecting (one thread to A, one to A or B), asking for a few
//!   devices, reading a round or three (or nothing), closing; every fifth turns the error
//!   channel on, asks for the device list and makes a refused request; every seventh sends
//!   half a message and hangs up;
//! - stalled: clients that ask for laser, sonar and position at 100 Hz and never read
//!   (the server must skip their rounds and drop them after `stall_timeout`), replaced
//!   every few seconds;
//! - flood: clients writing commands and configs (valid, refused and unknown) to both
//!   robots as fast as batches of 50 every 10 ms go; one of them has the error channel on
//!   and never reads its notices;
//! - e-stop: robot A's emergency stop latched for a second every 15 s, then released;
//! - watchers: one 10 Hz client on A (continuous rounds) and one on B in push-new mode,
//!   counting readings (B's rate falls to 0 while its emulator is down);
//! - the front ends on robot A (`soak_fronts`): a web watcher of `/laser`, churning web
//!   clients and a stalled one; a Zenoh watcher and commander, Zenoh sessions churning; a
//!   ROS 2 watcher of `odom` and `cmd_vel` publisher (every tenth sample malformed), its
//!   session reopened every 30 s; the recorder, a new file every minute.
//!
//! Each row: elapsed time, the server's resident memory (`/proc/PID/status`), open
//! descriptors (`/proc/PID/fd`) and how many are sockets, threads, CPU over the interval
//! (`/proc/PID/stat`), the watchers' rates (TCP A and B, web, Zenoh, ROS 2), the bench's
//! open client connections, churn connections and flood messages per second, the bytes
//! recorded per second, and whether the emulator is up. The verdict compares the last
//! third of the rows with the middle third: resident memory, descriptors and threads must
//! not grow (the first third is warm-up); robot B must come back (readings in some row of
//! the last half); and every front end's watcher must be served in every row of the last
//! half. Exit status 1 when any fails.

// Unsafe code: sysconf(_SC_CLK_TCK) (a Linux call).
#![allow(unsafe_code)]

mod common;
mod soak_fronts;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{free_port, ServerProcess};
use player_client::{Client, Error};

/// Seconds a client may leave its data unread before the server drops it (set low so the
/// stalled clients are dropped many times per run).
const STALL_TIMEOUT: f64 = 4.0;
/// Any single read or write of a load client gives up after this.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

struct Options {
    duration: Duration,
    interval: Duration,
    /// Emulator up for this long, then killed and down for `emu_down`.
    emu_up: Duration,
    emu_down: Duration,
    /// Where the server's log goes (`--server-log PATH`, with `-debug`); else nowhere.
    server_log: Option<PathBuf>,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let value = |flag: &str| -> Option<f64> {
        let i = args.iter().position(|a| a == flag)?;
        let v = args.get(i + 1).and_then(|v| v.parse::<f64>().ok());
        Some(v.filter(|v| *v > 0.0).unwrap_or_else(|| {
            eprintln!("soak: {flag} needs a positive number");
            std::process::exit(2)
        }))
    };
    let mut o = if quick {
        Options {
            duration: Duration::from_secs(45),
            interval: Duration::from_secs(2),
            emu_up: Duration::from_secs(8),
            emu_down: Duration::from_secs(3),
            server_log: None,
        }
    } else {
        Options {
            duration: Duration::from_secs(600),
            interval: Duration::from_secs(10),
            emu_up: Duration::from_secs(20),
            emu_down: Duration::from_secs(5),
            server_log: None,
        }
    };
    if let Some(m) = value("--minutes") {
        o.duration = Duration::from_secs_f64(m * 60.0);
    }
    if let Some(i) = args.iter().position(|a| a == "--server-log") {
        o.server_log = args.get(i + 1).map(PathBuf::from);
    }
    if let Some(s) = value("--interval") {
        o.interval = Duration::from_secs_f64(s);
    }
    o
}

/// Counters the load threads share with the sampler.
#[derive(Default)]
struct Counters {
    stop: AtomicBool,
    /// Client connections the bench holds open right now.
    open: AtomicUsize,
    churn: AtomicU64,
    churn_errors: AtomicU64,
    flood: AtomicU64,
    stalled_dropped: AtomicU64,
    watch_a: AtomicU64,
    watch_b: AtomicU64,
    watch_errors: AtomicU64,
    emu_up: AtomicBool,
    emu_restarts: AtomicU64,
    estops: AtomicU64,
}

impl Counters {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Sleeps up to `d`, waking early when the bench stops. False once stopped.
    fn nap(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        while !self.stopped() {
            let now = Instant::now();
            if now >= end {
                return true;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(50)));
        }
        false
    }
}

/// A client connection counted in [`Counters::open`] while it lives.
struct Counted<'a, T> {
    inner: T,
    open: &'a AtomicUsize,
}

impl<'a, T> Counted<'a, T> {
    fn new(inner: T, open: &'a AtomicUsize) -> Self {
        open.fetch_add(1, Ordering::Relaxed);
        Counted { inner, open }
    }
}

impl<T> Drop for Counted<'_, T> {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

fn connect(addr: SocketAddr) -> Result<Client, Error> {
    let mut c = Client::connect_timeout(addr, IO_TIMEOUT)?;
    c.set_read_timeout(Some(IO_TIMEOUT))?;
    c.set_write_timeout(Some(IO_TIMEOUT))?;
    Ok(c)
}

/// A small xorshift generator: the load's choices, reproducible per thread.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn churn(c: &Counters, robots: &[SocketAddr], seed: u64) {
    const SPECS: [&str; 7] = ["pr", "srlr", "lrpr", "mrgr", "vrzr", "pa", "prsrlrmr"];
    let mut rng = Rng(seed);
    let mut n: u64 = 0;
    while !c.stopped() {
        n += 1;
        let addr = robots[rng.below(robots.len() as u64) as usize];
        let result: Result<(), Error> = (|| {
            if n % 7 == 0 {
                // Half a request, then hang up.
                let mut s = Counted::new(TcpStream::connect_timeout(&addr, IO_TIMEOUT)?, &c.open);
                s.inner.write_all(&[b'd', b'r', 0, 8, b'p'])?;
                return Ok(());
            }
            let mut cl = Counted::new(connect(addr)?, &c.open);
            if n % 5 == 0 {
                // The extensions: notices on, the device list, a refused request.
                cl.inner.set_notices(true)?;
                cl.inner.device_list()?;
                cl.inner.request("qr")?;
            }
            let spec = SPECS[rng.below(SPECS.len() as u64) as usize];
            let grant = cl.inner.request(spec)?;
            if grant.all_granted() {
                for _ in 0..rng.below(4) {
                    cl.inner.read()?;
                }
                if rng.below(3) == 0 {
                    cl.inner.request("pcscmclc")?;
                }
            }
            Ok(())
        })();
        c.churn.fetch_add(1, Ordering::Relaxed);
        if result.is_err() {
            c.churn_errors.fetch_add(1, Ordering::Relaxed);
        }
        c.nap(Duration::from_millis(15));
    }
}

fn stalled(c: &Counters, robots: [SocketAddr; 2], count: usize) {
    while !c.stopped() {
        let mut held = Vec::new();
        for i in 0..count {
            let r: Result<Client, Error> = (|| {
                let mut cl = connect(robots[i % 2])?;
                cl.set_frequency(100)?;
                cl.request(if i % 2 == 0 { "lrsrpr" } else { "srpr" })?;
                Ok(cl)
            })();
            if let Ok(cl) = r {
                held.push(Counted::new(cl, &c.open));
            }
        }
        // Never read; give the server time to find them stalled and drop them.
        c.nap(Duration::from_secs_f64(STALL_TIMEOUT * 2.0));
        c.stalled_dropped
            .fetch_add(held.len() as u64, Ordering::Relaxed);
    }
}

/// Commands and configs as fast as batches of 50 every 10 ms go. With `notices`, the
/// error channel is on and never read: the server must bound what it keeps for this
/// client (its notices about the refused configs pile up).
fn flood(c: &Counters, addr: SocketAddr, seed: u64, notices: bool) {
    let mut rng = Rng(seed);
    while !c.stopped() {
        let r: Result<(), Error> = (|| {
            let mut cl = Counted::new(connect(addr)?, &c.open);
            cl.inner.set_notices(notices)?;
            cl.inner.request("pwzwgw")?;
            let until = Instant::now() + Duration::from_secs(5 + rng.below(10));
            while Instant::now() < until && !c.stopped() {
                for _ in 0..50 {
                    let v = rng.below(600) as i16 - 300;
                    match rng.below(10) {
                        0 => cl.inner.set_frequency(1 + rng.below(200) as u16)?,
                        1 => cl.inner.set_velocity_mode(rng.below(2) == 0)?,
                        2 => cl.inner.set_motor_power(true)?,
                        3 => cl.inner.config(b'p', b'?', &[1, 2, 3])?, // unknown code
                        4 => cl.inner.config(b'q', b'x', &[])?,        // unknown device
                        5 => cl.inner.command(b'p', &[0; 3])?,         // wrong size
                        6 => cl.inner.set_ptz(v / 3, v / 12, rng.below(1024) as i16)?,
                        _ => cl.inner.set_speed(v, v / 10)?,
                    }
                    c.flood.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            cl.inner.set_speed(0, 0)?;
            Ok(())
        })();
        if r.is_err() {
            // Robot B refuses while its base is down; wait a little.
            c.nap(Duration::from_millis(500));
        }
    }
}

/// Latches the emergency stop of `addr` for a second every 15 s (every client with the
/// error channel on is told), then releases it.
fn estop_cycle(c: &Counters, addr: SocketAddr) {
    while c.nap(Duration::from_secs(15)) {
        let r: Result<(), Error> = (|| {
            let mut cl = Counted::new(connect(addr)?, &c.open);
            cl.inner.set_notices(true)?;
            cl.inner.estop(true)?;
            c.nap(Duration::from_secs(1));
            cl.inner.estop(false)?;
            while cl.inner.wait_notice(Duration::from_millis(300))?.is_some() {}
            Ok(())
        })();
        if r.is_ok() {
            c.estops.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Counts the position readings `addr` delivers: in continuous mode, every 10 Hz round
/// (robot A); in push-new mode, only readings new to this client, so a robot whose link
/// is down shows 0 Hz (robot B).
fn watcher(c: &Counters, addr: SocketAddr, rounds: &AtomicU64, push_new: bool) {
    while !c.stopped() {
        let r: Result<(), Error> = (|| {
            let mut cl = Counted::new(connect(addr)?, &c.open);
            if push_new {
                cl.inner.set_data_mode(player_client::DataMode::PushNew)?;
            }
            cl.inner.request("pr")?.check()?;
            while !c.stopped() {
                cl.inner.read()?;
                rounds.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })();
        if r.is_err() {
            c.watch_errors.fetch_add(1, Ordering::Relaxed);
            c.nap(Duration::from_millis(500));
        }
    }
}

/// `player-emulate p2os --link LINK`, killed and restarted on a cycle.
fn emulator(c: &Counters, link: &Path, up: Duration, down: Duration) {
    let start = || -> Child {
        Command::new(env!("CARGO_BIN_EXE_player-emulate"))
            .args(["p2os", "--link"])
            .arg(link)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("player-emulate starts")
    };
    let mut child = Some(start());
    c.emu_up.store(true, Ordering::Relaxed);
    loop {
        let alive = c.nap(up);
        if let Some(mut ch) = child.take() {
            let _ = ch.kill(); // SIGKILL: the pty vanishes as if the cable were pulled
            let _ = ch.wait();
        }
        c.emu_up.store(false, Ordering::Relaxed);
        if !alive || !c.nap(down) {
            return;
        }
        child = Some(start());
        c.emu_up.store(true, Ordering::Relaxed);
        c.emu_restarts.fetch_add(1, Ordering::Relaxed);
    }
}

/// What /proc says about the server at one instant.
#[derive(Clone, Copy, Default)]
struct Sample {
    rss_kb: u64,
    fds: usize,
    sockets: usize,
    threads: u64,
    /// utime + stime in clock ticks.
    cpu_ticks: u64,
}

fn sample(pid: u32) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (mut fds, mut sockets) = (0, 0);
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
        for e in dir.flatten() {
            fds += 1;
            if std::fs::read_link(e.path())
                .is_ok_and(|t| t.to_string_lossy().starts_with("socket:"))
            {
                sockets += 1;
            }
        }
    }
    // /proc/PID/stat: fields after the ")" of the command name; utime and stime are the
    // 14th and 15th fields of the line, the 12th and 13th after the name.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let cpu_ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Sample {
        rss_kb: field("VmRSS:"),
        fds,
        sockets,
        threads: field("Threads:"),
        cpu_ticks,
    }
}

fn config(dir: &Path, port_a: u16, port_b: u16, fronts: soak_fronts::Ports) -> PathBuf {
    let link = dir.join("ttyP2OS");
    let toml = format!(
        "[server]\nstall_timeout = {STALL_TIMEOUT}\nsetup_timeout = 10.0\n\n{}\
         [[robot]]\nname = \"sim\"\nport = {port_a}\nbind = \"127.0.0.1\"\nweb_port = {}\n\
         [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\", \"s\", \"m\", \"g\", \"l\", \"z\", \"v\"]\n\n\
         [[robot]]\nname = \"base\"\nport = {port_b}\nbind = \"127.0.0.1\"\nweb_port = 0\n\
         [[robot.driver]]\ndriver = \"p2os\"\ndevices = [\"p\", \"s\", \"m\", \"g\"]\n\
         [robot.driver.params]\nport = \"{}\"\nmotors_on = true\nsilence = 1.0\n",
        soak_fronts::config(fronts, dir),
        fronts.web,
        link.display()
    );
    let path = dir.join("soak.toml");
    std::fs::write(&path, toml).expect("write the configuration");
    path
}

/// Starts `player --config CFG` and waits until robot A's port accepts connections.
fn start_server(cfg: &Path, port_a: u16, log: Option<&Path>) -> ServerProcess {
    let mut cmd = Command::new(common::player_binary());
    cmd.arg("--config")
        .arg(cfg)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    match log {
        Some(path) => {
            let f = std::fs::File::create(path).expect("create the server log");
            cmd.arg("-debug").stderr(f);
        }
        None => {
            cmd.stderr(Stdio::null());
        }
    }
    let child = cmd.spawn().expect("the player binary starts");
    let addr: SocketAddr = ([127, 0, 0, 1], port_a).into();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    ServerProcess { child, addr }
}

/// Starts the front-end load (`soak_fronts`) on robot A's web, Zenoh and ROS 2 ports.
fn spawn_fronts(
    threads: &mut Vec<JoinHandle<()>>,
    counters: &Arc<Counters>,
    fronts: &Arc<soak_fronts::Fronts>,
    ports: soak_fronts::Ports,
) {
    type Load = fn(&AtomicBool, &Arc<soak_fronts::Fronts>, soak_fronts::Ports);
    let loads: [(&str, Load); 5] = [
        ("web-watch", |s, f, p| soak_fronts::web_watcher(s, f, p.web)),
        ("web-churn", |s, f, p| soak_fronts::web_churn(s, f, p.web)),
        ("web-stalled", |s, f, p| {
            soak_fronts::web_stalled(s, f, p.web, Duration::from_secs_f64(STALL_TIMEOUT * 2.0))
        }),
        ("zenoh", |s, f, p| soak_fronts::zenoh_load(s, f, p.zenoh)),
        ("ros2", |s, f, p| soak_fronts::ros2_load(s, f, p.ros2)),
    ];
    for (name, load) in loads {
        let (c, f) = (Arc::clone(counters), Arc::clone(fronts));
        threads.push(
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || load(&c.stop, &f, ports))
                .expect("spawn a front-end load thread"),
        );
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn main() {
    let o = options();
    let dir = std::env::temp_dir().join(format!("player-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let (port_a, port_b) = (free_port(), free_port());
    let ports = soak_fronts::Ports {
        web: free_port(),
        zenoh: free_port(),
        ros2: free_port(),
    };
    let cfg = config(&dir, port_a, port_b, ports);
    let counters = Arc::new(Counters::default());
    let fronts = Arc::new(soak_fronts::Fronts::default());
    let link = dir.join("ttyP2OS");

    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let spawn = |threads: &mut Vec<JoinHandle<()>>, name: &str, f: Box<dyn FnOnce() + Send>| {
        threads.push(
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .expect("spawn a load thread"),
        );
    };
    {
        let (c, link) = (Arc::clone(&counters), link.clone());
        let (up, down) = (o.emu_up, o.emu_down);
        spawn(
            &mut threads,
            "emulator",
            Box::new(move || emulator(&c, &link, up, down)),
        );
    }
    let server = start_server(&cfg, port_a, o.server_log.as_deref());
    let pid = server.child.id();
    let a: SocketAddr = ([127, 0, 0, 1], port_a).into();
    let b: SocketAddr = ([127, 0, 0, 1], port_b).into();

    for (i, robots) in [vec![a], vec![a, b]].into_iter().enumerate() {
        let c = Arc::clone(&counters);
        spawn(
            &mut threads,
            "churn",
            Box::new(move || churn(&c, &robots, 0x9E37_79B9 + i as u64)),
        );
    }
    {
        let c = Arc::clone(&counters);
        spawn(
            &mut threads,
            "stalled",
            Box::new(move || stalled(&c, [a, b], 6)),
        );
    }
    for (i, (addr, notices)) in [(a, false), (b, false), (a, true)].into_iter().enumerate() {
        let c = Arc::clone(&counters);
        spawn(
            &mut threads,
            "flood",
            Box::new(move || flood(&c, addr, 0x5EED + i as u64, notices)),
        );
    }
    {
        let c = Arc::clone(&counters);
        spawn(&mut threads, "estop", Box::new(move || estop_cycle(&c, a)));
    }
    {
        let c = Arc::clone(&counters);
        spawn(
            &mut threads,
            "watch-a",
            Box::new(move || watcher(&c, a, &c.watch_a, false)),
        );
        let c = Arc::clone(&counters);
        spawn(
            &mut threads,
            "watch-b",
            Box::new(move || watcher(&c, b, &c.watch_b, true)),
        );
    }

    spawn_fronts(&mut threads, &counters, &fronts, ports);

    // SAFETY: sysconf has no preconditions.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    println!(
        "soak: {:.0} s, a row every {:.0} s; server pid {pid} (robot A sim on {port_a}, robot B p2os on {port_b}); emulator up {:.0} s / down {:.0} s; stall_timeout {STALL_TIMEOUT} s",
        o.duration.as_secs_f64(),
        o.interval.as_secs_f64(),
        o.emu_up.as_secs_f64(),
        o.emu_down.as_secs_f64()
    );
    println!(
        "{:>6} {:>7} {:>5} {:>5} {:>4} {:>6} | {:>6} {:>6} {:>6} {:>6} {:>6} | {:>6} {:>7} {:>8} {:>8} {:>3}",
        "t s",
        "RSS MB",
        "fds",
        "socks",
        "thr",
        "cpu %",
        "A Hz",
        "B Hz",
        "web Hz",
        "zen Hz",
        "ros Hz",
        "conns",
        "churn/s",
        "flood/s",
        "rec kB/s",
        "emu"
    );
    let started = Instant::now();
    // Per row: the sample, watcher A's rate, watcher B's rate.
    let mut rows: Vec<(Sample, f64, f64)> = Vec::new();
    // Per row: the web, Zenoh and ROS 2 watchers' rates.
    let mut front_rows: Vec<[f64; 3]> = Vec::new();
    let mut prev_recorded = 0;
    let mut prev = sample(pid);
    let mut prev_t = Instant::now();
    let take = |x: &AtomicU64| x.swap(0, Ordering::Relaxed);
    take(&counters.watch_a);
    take(&counters.watch_b);
    take(&counters.churn);
    take(&counters.flood);
    for x in [&fronts.web, &fronts.zenoh, &fronts.ros2] {
        take(x);
    }
    let mut exited = None;
    while started.elapsed() < o.duration {
        let next = prev_t + o.interval;
        while Instant::now() < next {
            std::thread::sleep(Duration::from_millis(50));
        }
        let s = sample(pid);
        let now = Instant::now();
        let dt = now.duration_since(prev_t).as_secs_f64();
        let cpu = 100.0 * (s.cpu_ticks.saturating_sub(prev.cpu_ticks)) as f64 / ticks_per_s / dt;
        let a_hz = take(&counters.watch_a) as f64 / dt;
        let b_hz = take(&counters.watch_b) as f64 / dt;
        let front = [&fronts.web, &fronts.zenoh, &fronts.ros2].map(|x| take(x) as f64 / dt);
        let recorded = soak_fronts::recorded(&fronts, &dir);
        let rec_kbs = recorded.saturating_sub(prev_recorded) as f64 / 1024.0 / dt;
        prev_recorded = recorded;
        println!(
            "{:>6.0} {:>7.1} {:>5} {:>5} {:>4} {:>6.1} | {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>6.1} | {:>6} {:>7.0} {:>8.0} {:>8.1} {:>3}",
            started.elapsed().as_secs_f64(),
            s.rss_kb as f64 / 1024.0,
            s.fds,
            s.sockets,
            s.threads,
            cpu,
            a_hz,
            b_hz,
            front[0],
            front[1],
            front[2],
            counters.open.load(Ordering::Relaxed),
            take(&counters.churn) as f64 / dt,
            take(&counters.flood) as f64 / dt,
            rec_kbs,
            if counters.emu_up.load(Ordering::Relaxed) { "up" } else { "--" },
        );
        rows.push((s, a_hz, b_hz));
        front_rows.push(front);
        prev = s;
        prev_t = now;
        if s.rss_kb == 0 {
            exited = Some("the server process is gone");
            break;
        }
    }

    counters.stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);

    println!(
        "load: {} emulator restarts, {} e-stop latch/release cycles, {} stalled clients cycled, {} churn errors (refusals while B is down count), {} watcher reconnects",
        counters.emu_restarts.load(Ordering::Relaxed),
        counters.estops.load(Ordering::Relaxed),
        counters.stalled_dropped.load(Ordering::Relaxed),
        counters.churn_errors.load(Ordering::Relaxed),
        counters.watch_errors.load(Ordering::Relaxed)
    );
    println!(
        "front ends: {} web connections (churn and stalled), {} Zenoh/ROS 2 sessions opened, {} malformed cmd_vel, {} front-end load errors, {:.1} MB recorded",
        fronts.web_churn.load(Ordering::Relaxed),
        fronts.sessions.load(Ordering::Relaxed),
        fronts.ros2_bad.load(Ordering::Relaxed),
        fronts.errors.load(Ordering::Relaxed),
        prev_recorded as f64 / 1e6
    );
    if let Some(why) = exited {
        println!("verdict: FAILED: {why}");
        std::process::exit(1);
    }
    if rows.len() < 3 {
        println!("verdict: too short to judge ({} rows)", rows.len());
        return;
    }
    let third = rows.len() / 3;
    let middle = &rows[third..2 * third];
    let last = &rows[rows.len() - third..];
    let m = |r: &[(Sample, f64, f64)], f: fn(&Sample) -> f64| {
        mean(&r.iter().map(|(s, _, _)| f(s)).collect::<Vec<_>>())
    };
    let rss = (
        m(middle, |s| s.rss_kb as f64 / 1024.0),
        m(last, |s| s.rss_kb as f64 / 1024.0),
    );
    let fds = (m(middle, |s| s.fds as f64), m(last, |s| s.fds as f64));
    let thr = (
        m(middle, |s| s.threads as f64),
        m(last, |s| s.threads as f64),
    );
    let rates: Vec<f64> = rows.iter().map(|(_, r, _)| *r).collect();
    // Robot B must keep coming back: some row of the last half has its readings again.
    let b_back = rows[rows.len() / 2..].iter().any(|(_, _, b)| *b >= 1.0);
    let min_rate = rates.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "middle third vs last third: RSS {:.1} -> {:.1} MB, fds {:.1} -> {:.1}, threads {:.1} -> {:.1}; watcher A {:.2} Hz mean, {:.2} Hz lowest row",
        rss.0, rss.1, fds.0, fds.1, thr.0, thr.1, mean(&rates), min_rate
    );
    let mut growing = Vec::new();
    if rss.1 > rss.0 * 1.10 + 1.0 {
        growing.push("RSS");
    }
    if fds.1 > fds.0 * 1.10 + 8.0 {
        growing.push("descriptors");
    }
    if thr.1 > thr.0 + 2.0 {
        growing.push("threads");
    }
    let half = &front_rows[front_rows.len() / 2..];
    let mut starved = Vec::new();
    for (i, name) in ["web", "Zenoh", "ROS 2"].into_iter().enumerate() {
        let all: Vec<f64> = front_rows.iter().map(|r| r[i]).collect();
        let lowest = half.iter().map(|r| r[i]).fold(f64::INFINITY, f64::min);
        println!(
            "{name} watcher: {:.2} Hz mean, {lowest:.2} Hz lowest row of the last half",
            mean(&all)
        );
        if lowest <= 0.0 {
            starved.push(name);
        }
    }
    if !starved.is_empty() {
        println!(
            "front ends NOT SERVED in some row of the last half: {}",
            starved.join(", ")
        );
    }
    if !b_back {
        println!("robot B: NOT RECOVERING: no readings in any row of the last half, though its emulator keeps coming back");
    }
    if growing.is_empty() {
        println!("verdict: flat");
    } else {
        println!("verdict: GROWING ({})", growing.join(", "));
    }
    if !growing.is_empty() || !b_back || !starved.is_empty() {
        std::process::exit(1);
    }
}
