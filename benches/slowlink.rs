//! The paper's slow links (Gerkey et al., section 5: 10 Mbit/s Ethernet and 802.11 at about
//! 1.9 Mbit/s): our server and the C reference (`../shared/bench/ideal_server.c`) served
//! over a shaped link to N clients reading large rounds, printed as a table.
//!
//! Needs root: the server runs in one network namespace and the clients in another, joined
//! by two TAP devices that this bench bridges in user space. Each side's outgoing
//! interface is shaped with `tc` (tbf at the link's rate over a packet-limited fifo: the
//! link's queue); the bridge adds the link's one-way delay and random loss in each
//! direction (the kernel here has no netem). Without root it says so and exits.
//!
//! Per row (clients x rate x link x server) it reports: clients kept to the end; rounds
//! delivered (% of clients x rate x seconds) and ours against the reference's; fairness
//! (the slowest client's rounds over the fastest's, and Jain's index); the reading age
//! (driver timestamp of the position reading to its receipt, asked for with `x y t 1` by
//! one client in five, so that the others' rounds are the same size as the reference's;
//! the reference sends zeros and ignores it, so it has none); and the p99 interval between
//! a client's rounds.
//!
//! `cargo bench --bench slowlink` runs the full grid (1, 10, 50 clients at 1, 10, 50 Hz over
//! both links, both servers; about 17 minutes). `SLOWLINK_QUICK=1` (or `-- --quick`) runs
//! the four overloaded points briefly. `-- --only wifi,50,10` runs one point (repeat it
//! for more); `-- --ours` leaves out the reference; `SLOWLINK_SECS=N` sets the measured
//! seconds per row; `SLOWLINK_PLAYER=PATH` measures another `player` binary;
//! `SLOWLINK_DUMP=DIR` writes each row's arrival times per client to a file in `DIR`.
//!
//! Besides rounds, it reads the server side's counters: how busy the shaped link was
//! (`util%`), what the clients read (`read%`, bytes over the link's capacity: a server
//! cannot exceed its payload share of full frames, 1448 of 1514 bytes, over a window
//! unless bytes that crossed the link earlier are read in it) and the share of TCP
//! segments retransmitted. And it prints what pure chance gives for the min/max figure
//! (`chance`): dealt at random, N rounds per client spread by about the square root of N,
//! so over 20 s of 5 rounds a second the slowest of 50 clients gets about 0.65 of the
//! fastest's count by luck alone.

// Unsafe code: setns(2), a TUN device (open, ioctl), ppoll, read and write on it, and
// kill(2) (Linux calls).
#![allow(unsafe_code)]

mod common;

use common::{percentile, player_binary, wall_us};
use player_proto::message;
use std::ffi::CString;
use std::fs::File;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A shaped link: rate, one-way delay, random loss and the queue of each side.
#[derive(Clone, Copy, Debug)]
struct Link {
    name: &'static str,
    kbit: u32,
    delay: Duration,
    /// Probability that a frame is lost, per direction.
    loss: f64,
    /// Packets the queue before the link holds (tc pfifo limit).
    queue: u32,
}

const ETHERNET: Link = Link {
    name: "eth",
    kbit: 10_000,
    delay: Duration::from_micros(500),
    loss: 0.0,
    // Linux's default transmit queue length.
    queue: 1000,
};

const WIFI: Link = Link {
    name: "wifi",
    kbit: 1_900,
    delay: Duration::from_millis(2),
    loss: 0.005,
    queue: 100,
};

const SERVER_ADDR: &str = "10.213.0.1";
const CLIENT_ADDR: &str = "10.213.0.2";

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

// ----- namespaces, TAP devices, shaping -------------------------------------------------

/// Two network namespaces, server side and client side; deleted on drop.
struct Namespaces {
    server: String,
    client: String,
}

impl Namespaces {
    fn create() -> Result<Namespaces, String> {
        let id = std::process::id() % 100_000;
        let ns = Namespaces {
            server: format!("pslow{id}s"),
            client: format!("pslow{id}c"),
        };
        for name in [&ns.server, &ns.client] {
            run("ip", &["netns", "add", name])?;
            run("ip", &["-n", name, "link", "set", "lo", "up"])?;
        }
        Ok(ns)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        let _ = run("ip", &["netns", "del", &self.server]);
        let _ = run("ip", &["netns", "del", &self.client]);
    }
}

/// Runs `f` on a thread that has entered network namespace `ns` (sockets and devices it
/// creates belong to that namespace; file descriptors stay usable from any thread).
fn in_namespace<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on a namespace descriptor we hold open; affects this thread only.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
}

/// `struct ifreq` as TUNSETIFF reads it: the name, the flags, padding to 40 bytes.
#[repr(C)]
struct IfReq {
    name: [u8; 16],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Creates TAP device `name` in namespace `ns`, returning its descriptor (non-blocking).
/// The device lives as long as the descriptor.
fn open_tap(ns: &str, name: &str) -> Result<OwnedFd, String> {
    let name = name.to_string();
    in_namespace(ns, move || {
        let path = CString::new("/dev/net/tun").expect("no NUL");
        // SAFETY: open(2) with a valid C string.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK) };
        if fd < 0 {
            return Err(format!("/dev/net/tun: {}", std::io::Error::last_os_error()));
        }
        // SAFETY: fd was just opened and is owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = IfReq {
            name: [0; 16],
            flags: (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short,
            _pad: [0; 22],
        };
        req.name[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: TUNSETIFF reads an ifreq we own for the duration of the call.
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut req) };
        if rc < 0 {
            return Err(format!(
                "TUNSETIFF {name}: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(fd)
    })
    .join()
    .map_err(|_| "TAP thread panicked".to_string())?
}

/// Addresses, and the shaping of `dev`'s outgoing traffic: tbf at the link's rate over a
/// pfifo of the link's queue length.
fn configure(ns: &str, dev: &str, addr: &str, link: Link) -> Result<(), String> {
    run(
        "ip",
        &["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev],
    )?;
    run("ip", &["-n", ns, "link", "set", dev, "up"])?;
    let rate = format!("{}kbit", link.kbit);
    // At least two full frames, or 2 ms at the rate: the bucket a NIC would have.
    let burst = (3028).max(link.kbit as usize * 1000 / 8 / 500).to_string();
    run(
        "ip",
        &[
            "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf",
            "rate", &rate, "burst", &burst, "latency", "1s",
        ],
    )?;
    run(
        "ip",
        &[
            "netns",
            "exec",
            ns,
            "tc",
            "qdisc",
            "add",
            "dev",
            dev,
            "parent",
            "1:1",
            "handle",
            "10:",
            "pfifo",
            "limit",
            &link.queue.to_string(),
        ],
    )?;
    Ok(())
}

/// Frames the bridge forwarded and dropped.
#[derive(Default)]
struct BridgeStats {
    forwarded: AtomicU64,
    lost: AtomicU64,
}

/// The user-space bridge between the two TAP devices: each frame read from one is written
/// to the other after the link's delay, unless lost (random, per frame).
struct Bridge {
    stop: Arc<AtomicBool>,
    stats: Arc<BridgeStats>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Bridge {
    fn start(a: OwnedFd, b: OwnedFd, link: Link) -> Bridge {
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(BridgeStats::default());
        let (s2, st2) = (stop.clone(), stats.clone());
        let thread = std::thread::spawn(move || bridge_loop(a, b, link, &s2, &st2));
        Bridge {
            stop,
            stats,
            thread: Some(thread),
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn bridge_loop(a: OwnedFd, b: OwnedFd, link: Link, stop: &AtomicBool, stats: &BridgeStats) {
    use std::collections::VecDeque;
    let fds = [a.as_raw_fd(), b.as_raw_fd()];
    // Frames in flight towards fds[i]: (due, frame).
    let mut lines: [VecDeque<(Instant, Vec<u8>)>; 2] = [VecDeque::new(), VecDeque::new()];
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id());
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        // Deliver what is due.
        for (i, line) in lines.iter_mut().enumerate() {
            while line.front().is_some_and(|(due, _)| *due <= now) {
                let (_, frame) = line.pop_front().expect("front");
                // SAFETY: write(2) of a buffer we own to a descriptor we hold.
                unsafe { libc::write(fds[i], frame.as_ptr().cast(), frame.len()) };
                stats.forwarded.fetch_add(1, Ordering::Relaxed);
            }
        }
        let next = lines
            .iter()
            .filter_map(|l| l.front().map(|(due, _)| *due))
            .min();
        let wait = next
            .map_or(Duration::from_millis(20), |d| {
                d.saturating_duration_since(now)
            })
            .min(Duration::from_millis(20));
        let mut pfd = [
            libc::pollfd {
                fd: fds[0],
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: fds[1],
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        // SAFETY: ppoll on two pollfds we own.
        let n = unsafe { libc::ppoll(pfd.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        if n <= 0 {
            continue;
        }
        let now = Instant::now();
        for (i, p) in pfd.iter().enumerate() {
            if p.revents & libc::POLLIN == 0 {
                continue;
            }
            loop {
                // SAFETY: read(2) into a buffer we own.
                let r = unsafe { libc::read(fds[i], buf.as_mut_ptr().cast(), buf.len()) };
                if r <= 0 {
                    break;
                }
                // xorshift64*
                rng ^= rng >> 12;
                rng ^= rng << 25;
                rng ^= rng >> 27;
                let x = rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
                if (x as f64) / ((1u64 << 53) as f64) < link.loss {
                    stats.lost.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                lines[1 - i].push_back((now + link.delay, buf[..r as usize].to_vec()));
            }
        }
    }
}

/// Both namespaces joined by the shaped, bridged link.
struct Testbed {
    bridge: Bridge,
    ns: Namespaces,
}

impl Testbed {
    fn new(link: Link) -> Result<Testbed, String> {
        let ns = Namespaces::create()?;
        let a = open_tap(&ns.server, "slows")?;
        let b = open_tap(&ns.client, "slowc")?;
        configure(&ns.server, "slows", SERVER_ADDR, link)?;
        configure(&ns.client, "slowc", CLIENT_ADDR, link)?;
        let bridge = Bridge::start(a, b, link);
        Ok(Testbed { bridge, ns })
    }
}

// ----- servers -----------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Server {
    Ours,
    Reference,
}

/// A server process in the server namespace, killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        // SAFETY: kill with the pid of our own child.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(ns: &str, which: Server, port: u16, reference: &str) -> Running {
    let port = port.to_string();
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]);
    match which {
        Server::Ours => cmd.args([&our_binary(), "-gp", &port, "-web", "0"]),
        Server::Reference => cmd.args([reference, "-p", &port, "-H", SERVER_ADDR, "-q"]),
    };
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start server");
    Running(child)
}

/// The `player` binary cargo built, or `SLOWLINK_PLAYER` (to measure another build, such
/// as a copy of an older commit's, for a before/after table).
fn our_binary() -> String {
    std::env::var("SLOWLINK_PLAYER").unwrap_or_else(|_| player_binary())
}

/// Builds the C reference with the system compiler; its path.
fn build_reference() -> Result<String, String> {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/bench/ideal_server.c"
    );
    let out = std::env::temp_dir().join(format!("slowlink-ideal-{}", std::process::id()));
    let out = out.to_str().expect("utf-8 temp dir").to_string();
    run("cc", &["-O2", "-o", &out, src])?;
    Ok(out)
}

// ----- the load ----------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct Point {
    link: Link,
    clients: usize,
    rate: u16,
}

/// What one client saw in the measurement window.
#[derive(Default)]
struct ClientResult {
    /// Arrival of each round (its position packet).
    arrivals: Vec<Instant>,
    /// Reading age of each round's position, microseconds (when timestamps came).
    ages: Vec<i64>,
    /// Bytes read in the window.
    bytes: u64,
    kept: bool,
}

const PAIRS: [(u8, u8); 3] = [(b'l', b'r'), (b's', b'r'), (b'p', b'r')];

async fn one_client(
    addr: SocketAddr,
    rate: u16,
    timestamps: bool,
    start: Instant,
    window: (Instant, Instant),
) -> ClientResult {
    tokio::time::sleep_until(start.into()).await;
    let mut result = ClientResult::default();
    let Ok(Ok(mut s)) = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::net::TcpStream::connect(addr),
    )
    .await
    else {
        return result;
    };
    let mut hello = Vec::new();
    if timestamps {
        hello.extend(message::config(b'y', b't', &[1]));
    }
    hello.extend(message::config(b'y', b'f', &rate.to_be_bytes()));
    hello.extend(message::request(&PAIRS));
    if s.write_all(&hello).await.is_err() {
        return result;
    }
    let mut reply = [0u8; 3 + 2 * PAIRS.len()];
    if s.read_exact(&mut reply).await.is_err() {
        return result;
    }
    // Packets: <device> <u16 size> <payload>; a round ends with its position packet.
    let mut buf = vec![0u8; 64 * 1024];
    let mut have = 0usize;
    let end = tokio::time::sleep_until(window.1.into());
    tokio::pin!(end);
    loop {
        tokio::select! {
            r = s.read(&mut buf[have..]) => match r {
                Ok(0) | Err(_) => return result,
                Ok(n) => {
                    let now = Instant::now();
                    let wall = wall_us();
                    have += n;
                    if now >= window.0 && now < window.1 {
                        result.bytes += n as u64;
                    }
                    let mut off = 0;
                    while have - off >= 3 {
                        let size = usize::from(u16::from_be_bytes([buf[off + 1], buf[off + 2]]));
                        if have - off < 3 + size {
                            break;
                        }
                        if buf[off] == b'p' && now >= window.0 && now < window.1 {
                            result.arrivals.push(now);
                            if size == 21 + 8 {
                                let p = &buf[off + 3..];
                                let sec = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                                let usec = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
                                result.ages.push(wall - (i64::from(sec) * 1_000_000 + i64::from(usec)));
                            }
                        }
                        off += 3 + size;
                    }
                    buf.copy_within(off..have, 0);
                    have -= off;
                }
            },
            _ = &mut end => break,
        }
    }
    result.kept = true;
    result
}

/// Waits until the server accepts connections (from the client namespace).
async fn wait_listening(addr: SocketAddr) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Ok(Ok(s)) =
            tokio::time::timeout(Duration::from_secs(1), tokio::net::TcpStream::connect(addr)).await
        {
            drop(s);
            tokio::time::sleep(Duration::from_millis(200)).await;
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// One row's figures.
#[derive(Default)]
struct Row {
    kept: usize,
    rounds: u64,
    asked: f64,
    min_max: f64,
    jain: f64,
    ages: Vec<i64>,
    interval_p99_ms: f64,
    /// Bytes the clients read in the window.
    bytes: u64,
    /// The expected `min_max` had the same rounds been dealt to the clients at random.
    chance: f64,
    /// The server side's counters at the window's start and end.
    link: Option<(LinkCounters, LinkCounters)>,
}

/// The server namespace's link and TCP counters: what its shaper sent, and the TCP
/// segments it sent and retransmitted.
#[derive(Clone, Copy, Debug, Default)]
struct LinkCounters {
    bytes: u64,
    out_segs: u64,
    retrans_segs: u64,
}

impl LinkCounters {
    /// Reads them in namespace `ns` (`tc -s qdisc` of the shaped device, `/proc/net/snmp`).
    fn read(ns: &str) -> Option<LinkCounters> {
        let tc = Command::new("ip")
            .args([
                "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", "slows",
            ])
            .output()
            .ok()?;
        let tc = String::from_utf8_lossy(&tc.stdout);
        // The root qdisc (tbf) comes first: " Sent <bytes> bytes <packets> pkt ...".
        let sent = tc.lines().find_map(|l| l.trim().strip_prefix("Sent "))?;
        let bytes = sent.split_whitespace().next()?.parse().ok()?;
        let snmp = Command::new("ip")
            .args(["netns", "exec", ns, "cat", "/proc/net/snmp"])
            .output()
            .ok()?;
        let snmp = String::from_utf8_lossy(&snmp.stdout);
        // Two "Tcp:" lines: the field names, then the values.
        let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
        let (names, values) = (tcp.next()?, tcp.next()?);
        let field = |name: &str| -> Option<u64> {
            let i = names.split_whitespace().position(|n| n == name)?;
            values.split_whitespace().nth(i)?.parse().ok()
        };
        Some(LinkCounters {
            bytes,
            out_segs: field("OutSegs")?,
            retrans_segs: field("RetransSegs")?,
        })
    }
}

/// The mean of the slowest client's count over the fastest's when `total` rounds are dealt
/// to `clients` clients at random (each round to each client with equal chance): what
/// pure chance gives for the min/max figure over a window of that many rounds.
fn chance_min_max(total: u64, clients: usize) -> f64 {
    if clients == 0 || total == 0 {
        return 0.0;
    }
    const DRAWS: usize = 200;
    let mut rng: u64 = 0x2545_F491_4F6C_DD1D;
    let mut sum = 0.0;
    let mut counts = vec![0u64; clients];
    for _ in 0..DRAWS {
        counts.iter_mut().for_each(|c| *c = 0);
        for _ in 0..total {
            rng ^= rng >> 12;
            rng ^= rng << 25;
            rng ^= rng >> 27;
            let x = rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
            counts[(((x >> 32) * clients as u64) >> 32) as usize] += 1;
        }
        let max = *counts.iter().max().expect("clients") as f64;
        let min = *counts.iter().min().expect("clients") as f64;
        sum += if max > 0.0 { min / max } else { 0.0 };
    }
    sum / DRAWS as f64
}

fn run_load(ns: &Namespaces, port: u16, point: Point, warmup: Duration, measure: Duration) -> Row {
    let addr: SocketAddr = format!("{SERVER_ADDR}:{port}").parse().expect("address");
    let server_ns = ns.server.clone();
    let (w0, results, link) = in_namespace(&ns.client, move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            if !wait_listening(addr).await {
                return (Instant::now(), Vec::new(), None);
            }
            let t0 = Instant::now();
            let ramp = Duration::from_millis(10 * point.clients as u64);
            let w0 = t0 + ramp + warmup;
            let w1 = w0 + measure;
            let counters = tokio::spawn(async move {
                let mut read = Vec::new();
                for at in [w0, w1] {
                    tokio::time::sleep_until(at.into()).await;
                    let ns = server_ns.clone();
                    read.push(
                        tokio::task::spawn_blocking(move || LinkCounters::read(&ns))
                            .await
                            .ok()
                            .flatten(),
                    );
                }
                match read[..] {
                    [Some(a), Some(b)] => Some((a, b)),
                    _ => None,
                }
            });
            let mut tasks = Vec::new();
            for i in 0..point.clients {
                let start = t0 + ramp * i as u32 / point.clients as u32;
                // One client in five asks for timestamps (8 bytes more per packet, 3% of a
                // round): enough ages, and the others' rounds are the reference's size.
                let stamps = i % 5 == 0;
                tasks.push(tokio::spawn(one_client(
                    addr,
                    point.rate,
                    stamps,
                    start,
                    (w0, w1),
                )));
            }
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.unwrap_or_default());
            }
            (w0, out, counters.await.ok().flatten())
        })
    })
    .join()
    .expect("load thread");
    let mut row = Row {
        asked: point.clients as f64 * f64::from(point.rate) * measure.as_secs_f64(),
        link,
        ..Row::default()
    };
    if let Ok(dir) = std::env::var("SLOWLINK_DUMP") {
        dump(&dir, port, point, w0, &results);
    }
    let counts: Vec<f64> = (0..point.clients)
        .map(|i| results.get(i).map_or(0.0, |r| r.arrivals.len() as f64))
        .collect();
    let mut intervals: Vec<u64> = Vec::new();
    for r in &results {
        row.kept += usize::from(r.kept);
        row.rounds += r.arrivals.len() as u64;
        row.bytes += r.bytes;
        row.ages.extend(&r.ages);
        intervals.extend(
            r.arrivals
                .windows(2)
                .map(|w| w[1].duration_since(w[0]).as_micros() as u64),
        );
    }
    let max = counts.iter().copied().fold(0.0, f64::max);
    let min = counts.iter().copied().fold(f64::INFINITY, f64::min);
    row.min_max = if max > 0.0 { min / max } else { 0.0 };
    row.chance = chance_min_max(row.rounds, point.clients);
    let sum: f64 = counts.iter().sum();
    let sq: f64 = counts.iter().map(|c| c * c).sum();
    row.jain = if sq > 0.0 {
        sum * sum / (counts.len() as f64 * sq)
    } else {
        0.0
    };
    intervals.sort_unstable();
    row.interval_p99_ms = percentile(&intervals, 0.99) as f64 / 1e3;
    row.ages.sort_unstable();
    row
}

/// Writes each client's arrival times (ms into the window, one client a line) to
/// `DIR/<link>-<clients>-<rate>-<port>.txt`, for analysis outside the bench.
fn dump(dir: &str, port: u16, point: Point, w0: Instant, results: &[ClientResult]) {
    let mut text = String::new();
    for r in results {
        let ms: Vec<String> = r
            .arrivals
            .iter()
            .map(|t| format!("{:.1}", t.duration_since(w0).as_secs_f64() * 1e3))
            .collect();
        text.push_str(&ms.join(" "));
        text.push('\n');
    }
    let path = format!(
        "{dir}/{}-{}-{}-{port}.txt",
        point.link.name, point.clients, point.rate
    );
    if let Err(e) = std::fs::write(&path, text) {
        println!("slowlink: cannot write {path}: {e}");
    }
}

/// The first port the servers listen on (each run takes the next one, so no socket of a
/// previous run is in the way).
const FIRST_PORT: u16 = 7000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("slowlink: skipped: needs root (network namespaces, TAP devices, tc)");
        return;
    }
    let quick = args.iter().any(|a| a == "--quick")
        || std::env::var("SLOWLINK_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let ours_only = args.iter().any(|a| a == "--ours");
    let measure = Duration::from_secs(
        std::env::var("SLOWLINK_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if quick { 10 } else { 20 }),
    );
    let warmup = Duration::from_secs(if quick { 4 } else { 5 });
    let mut grid: Vec<Point> = Vec::new();
    for (i, _) in args.iter().enumerate().filter(|(_, a)| *a == "--only") {
        let v: Vec<&str> = args[i + 1].split(',').collect();
        grid.push(Point {
            link: if v[0] == "eth" { ETHERNET } else { WIFI },
            clients: v[1].parse().expect("clients"),
            rate: v[2].parse().expect("rate"),
        });
    }
    if !grid.is_empty() {
        // The points given with --only.
    } else if quick {
        for (link, clients, rate) in [
            (WIFI, 50, 10),
            (WIFI, 50, 50),
            (ETHERNET, 50, 50),
            (WIFI, 10, 50),
        ] {
            grid.push(Point {
                link,
                clients,
                rate,
            });
        }
    } else {
        for link in [ETHERNET, WIFI] {
            for clients in [1, 10, 50] {
                for rate in [1, 10, 50] {
                    grid.push(Point {
                        link,
                        clients,
                        rate,
                    });
                }
            }
        }
    }
    let reference = if ours_only {
        None
    } else {
        match build_reference() {
            Ok(p) => Some(p),
            Err(e) => {
                println!("slowlink: the C reference is left out: {e}");
                None
            }
        }
    };
    println!(
        "slowlink: {} point(s), large rounds (laser + sonar + position, 784 bytes), {} s measured after {} s, {} core(s)",
        grid.len(),
        measure.as_secs(),
        warmup.as_secs(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
    for link in [ETHERNET, WIFI] {
        println!(
            "  {}: {} kbit/s, {} us one way, {}% loss per direction, {}-packet queue each side",
            link.name,
            link.kbit,
            link.delay.as_micros(),
            link.loss * 100.0,
            link.queue
        );
    }
    println!(
        "{:>4} {:>7} {:>3} {:>4} | {:>5} {:>6} {:>6} | {:>5} {:>5} {:>6} | {:>6} {:>6} {:>6} | {:>7} | {:>5} {:>5} {:>4} | {:>5}",
        "link", "clients", "Hz", "srv", "kept", "deliv%", "vs ref", "min/mx", "jain", "chance", "age50", "age99",
        "agemax", "iv99 ms", "util%", "read%", "rtx%", "secs"
    );
    let mut current: Option<(Link, Testbed)> = None;
    let mut port = FIRST_PORT;
    for point in grid {
        if current
            .as_ref()
            .is_none_or(|(l, _)| l.name != point.link.name)
        {
            drop(current.take()); // tear the previous link down first
            match Testbed::new(point.link) {
                Ok(t) => current = Some((point.link, t)),
                Err(e) => {
                    println!("slowlink: skipped: cannot build the link: {e}");
                    return;
                }
            }
        }
        let (_, bed) = current.as_ref().expect("testbed");
        let mut servers = vec![Server::Ours];
        if reference.is_some() {
            servers.push(Server::Reference);
        }
        let mut ref_rounds: Option<u64> = None;
        let mut rows = Vec::new();
        // The reference first, so ours can be compared with it.
        for &which in servers.iter().rev() {
            let t = Instant::now();
            port += 1;
            let row = {
                let _server = start_server(
                    &bed.ns.server,
                    which,
                    port,
                    reference.as_deref().unwrap_or(""),
                );
                run_load(&bed.ns, port, point, warmup, measure)
            };
            if which == Server::Reference {
                ref_rounds = Some(row.rounds);
            }
            rows.push((which, row, t.elapsed()));
        }
        for (which, row, took) in rows.iter().rev() {
            let vs = match (which, ref_rounds) {
                (Server::Ours, Some(r)) if r > 0 => {
                    format!("{:.1}", 100.0 * row.rounds as f64 / r as f64)
                }
                _ => "-".into(),
            };
            let age = |p: f64| {
                if row.ages.is_empty() {
                    "-".to_string()
                } else {
                    format!("{:.3}", percentile_i(&row.ages, p) as f64 / 1e6)
                }
            };
            let (util, rtx) = match row.link {
                Some((a, b)) => {
                    let bits = 8.0 * b.bytes.saturating_sub(a.bytes) as f64;
                    let capacity = f64::from(point.link.kbit) * 1e3 * measure.as_secs_f64();
                    let segs = b.out_segs.saturating_sub(a.out_segs).max(1) as f64;
                    let rtx = b.retrans_segs.saturating_sub(a.retrans_segs) as f64;
                    (
                        format!("{:.1}", 100.0 * bits / capacity),
                        format!("{:.2}", 100.0 * rtx / segs),
                    )
                }
                None => ("-".into(), "-".into()),
            };
            println!(
                "{:>4} {:>7} {:>3} {:>4} | {:>2}/{:<2} {:>6.1} {:>6} | {:>5.2} {:>5.3} {:>6.2} | {:>6} {:>6} {:>6} | {:>7.1} | {:>5} {:>5.1} {:>4} | {:>5.1}",
                point.link.name,
                point.clients,
                point.rate,
                if *which == Server::Ours { "ours" } else { "ref" },
                row.kept,
                point.clients,
                100.0 * row.rounds as f64 / row.asked,
                vs,
                row.min_max,
                row.jain,
                row.chance,
                age(0.5),
                age(0.99),
                age(1.0),
                row.interval_p99_ms,
                util,
                800.0 * row.bytes as f64
                    / (f64::from(point.link.kbit) * 1e3 * measure.as_secs_f64()),
                rtx,
                took.as_secs_f64(),
            );
        }
    }
    if let Some((link, bed)) = &current {
        println!(
            "bridge ({}): {} frames forwarded, {} lost",
            link.name,
            bed.bridge.stats.forwarded.load(Ordering::Relaxed),
            bed.bridge.stats.lost.load(Ordering::Relaxed)
        );
    }
    drop(current);
    if let Some(p) = reference {
        let _ = std::fs::remove_file(p);
    }
    println!(
        "columns: kept = clients still connected at the end; deliv% = rounds received / \
         (clients x Hz x seconds); vs ref = our rounds / the reference's, %; min/mx = the \
         slowest client's rounds / the fastest's; jain = Jain's fairness index of rounds per \
         client; chance = the min/mx that dealing the same rounds to the clients at random \
         would give (mean of 200 deals); age = position reading's age at receipt (driver \
         timestamp to read), s, p50/p99/max; iv99 = p99 interval between a client's rounds, \
         ms; util% = the server side's link busy (bytes its shaper sent / capacity); read% = \
         bytes the clients read / capacity; rtx% = \
         TCP segments the server retransmitted / sent"
    );
}

/// Percentile of sorted signed values.
fn percentile_i(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
