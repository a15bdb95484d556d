//! The paper's stress test (Gerkey et al. 2000, section 5) on loopback, against our server
//! and against a minimal baseline server, printed as a table.
//!
//! A load generator in this process opens N client connections. Each requests a small set
//! (sonar + position) or a large set (laser + sonar + position), sets its rate with
//! `x y f`, and records the arrival time of every round. Per point of the grid we report:
//! clients served, mean interval, mean |interval - target| (per client, then averaged: the
//! paper's figure), p99 and max interval, clients dropped, rounds delivered, server CPU per
//! 1000 rounds delivered, and resident memory; then the same for the baseline: a
//! single-threaded tokio server with absolute deadlines that answers the same requests with
//! rounds of the same sizes (no actors, no drivers; the same precise timer as ours,
//! `player::timer`). The CPU ratio to the baseline is the
//! figure to steer by: absolute times drift on a shared machine.
//!
//! `cargo bench --bench stress` runs the paper's 18 loopback points plus 500 and 2000
//! clients at 10 and 50 Hz (large). `cargo bench --bench stress -- --quick` runs a few
//! points briefly (CI). `-- --only N,RATE,SIZE` runs one point.

mod common;

use common::{free_port, percentile, player_binary, ServerProcess};
use player_proto::message;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Size {
    Small,
    Large,
}

impl Size {
    fn pairs(self) -> Vec<(u8, u8)> {
        match self {
            Size::Small => vec![(b's', b'r'), (b'p', b'r')],
            Size::Large => vec![(b'l', b'r'), (b's', b'r'), (b'p', b'r')],
        }
    }

    /// Bytes of one round.
    fn round_len(self) -> usize {
        match self {
            Size::Small => (3 + 32) + (3 + 21),
            Size::Large => (3 + 722) + (3 + 32) + (3 + 21),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Size::Small => "small",
            Size::Large => "large",
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Point {
    clients: usize,
    rate: u16,
    size: Size,
}

/// What the load generator saw in the measurement window.
#[derive(Default)]
struct Load {
    served: usize,
    dropped: usize,
    rounds: u64,
    expected: f64,
    mean_interval_us: f64,
    /// |mean interval - target| per client, averaged over clients (the paper's figure).
    mean_dev_us: f64,
    /// mean |interval - target| per client, averaged over clients (jitter).
    jitter_us: f64,
    p99_us: u64,
    max_us: u64,
    cpu: Duration,
    rss: u64,
}

struct ClientResult {
    arrivals: Vec<Instant>,
    dropped: bool,
}

async fn one_client(
    addr: SocketAddr,
    point: Point,
    start: Instant,
    window: (Instant, Instant),
) -> ClientResult {
    tokio::time::sleep_until(start.into()).await;
    let mut result = ClientResult {
        arrivals: Vec::new(),
        dropped: true,
    };
    let mut s = match tokio::net::TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(_) => return result,
    };
    let _ = s.set_nodelay(true);
    let pairs = point.size.pairs();
    let mut hello = message::request(&pairs);
    hello.extend(message::config(b'y', b'f', &point.rate.to_be_bytes()));
    if s.write_all(&hello).await.is_err() {
        return result;
    }
    let mut reply = vec![0u8; 3 + 2 * pairs.len()];
    if s.read_exact(&mut reply).await.is_err() {
        return result;
    }
    let round = point.size.round_len();
    let mut buf = vec![0u8; 16 * 1024];
    let mut partial = 0usize;
    let end = tokio::time::sleep_until(window.1.into());
    tokio::pin!(end);
    loop {
        tokio::select! {
            r = s.read(&mut buf) => match r {
                Ok(0) | Err(_) => return result,
                Ok(n) => {
                    let now = Instant::now();
                    partial += n;
                    while partial >= round {
                        partial -= round;
                        if now >= window.0 && now < window.1 {
                            result.arrivals.push(now);
                        }
                    }
                }
            },
            _ = &mut end => break,
        }
    }
    result.dropped = false;
    result
}

/// Runs the load of `point` against `server` and measures it.
fn run_load(server: &ServerProcess, point: Point, measure: Duration) -> Load {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let addr = server.addr;
    let t_start = Instant::now();
    // Connect in batches so the accept queue never overflows.
    let ramp = Duration::from_millis(2 * point.clients as u64 / 10);
    let warmup = Duration::from_millis(1200);
    let w0 = t_start + ramp + warmup;
    let w1 = w0 + measure;
    let (results, cpu, rss) = rt.block_on(async {
        let mut tasks = Vec::with_capacity(point.clients);
        for i in 0..point.clients {
            let start = t_start + ramp * (i as u32) / (point.clients as u32).max(1);
            tasks.push(tokio::spawn(one_client(addr, point, start, (w0, w1))));
        }
        tokio::time::sleep_until(w0.into()).await;
        let cpu0 = server.cpu();
        tokio::time::sleep_until(w1.into()).await;
        let cpu1 = server.cpu();
        let rss = server.rss();
        let mut results = Vec::with_capacity(tasks.len());
        for t in tasks {
            if let Ok(r) = t.await {
                results.push(r);
            }
        }
        (results, cpu1.saturating_sub(cpu0), rss)
    });
    let target_us = 1e6 / f64::from(point.rate);
    let mut load = Load {
        cpu,
        rss,
        expected: point.clients as f64 * f64::from(point.rate) * measure.as_secs_f64(),
        ..Load::default()
    };
    let mut all: Vec<u64> = Vec::new();
    let (mut sum_mean, mut sum_dev, mut sum_jitter, mut n_stats) = (0.0, 0.0, 0.0, 0usize);
    for r in &results {
        if r.dropped {
            load.dropped += 1;
            continue;
        }
        load.rounds += r.arrivals.len() as u64;
        if r.arrivals.len() >= 2 {
            load.served += 1;
            let iv: Vec<u64> = r
                .arrivals
                .windows(2)
                .map(|w| w[1].duration_since(w[0]).as_micros() as u64)
                .collect();
            let mean = iv.iter().sum::<u64>() as f64 / iv.len() as f64;
            let jitter = iv
                .iter()
                .map(|&v| (v as f64 - target_us).abs())
                .sum::<f64>()
                / iv.len() as f64;
            sum_mean += mean;
            sum_dev += (mean - target_us).abs();
            sum_jitter += jitter;
            n_stats += 1;
            all.extend(iv);
        }
    }
    load.dropped += point.clients - results.len();
    if n_stats > 0 {
        load.mean_interval_us = sum_mean / n_stats as f64;
        load.mean_dev_us = sum_dev / n_stats as f64;
        load.jitter_us = sum_jitter / n_stats as f64;
    }
    all.sort_unstable();
    load.p99_us = percentile(&all, 0.99);
    load.max_us = all.last().copied().unwrap_or(0);
    load
}

fn cpu_per_1000(l: &Load) -> f64 {
    if l.rounds == 0 {
        return f64::NAN;
    }
    l.cpu.as_secs_f64() * 1e3 / l.rounds as f64 * 1000.0
}

fn measure_time(point: Point, quick: bool) -> Duration {
    let base: f64 = if quick { 2.0 } else { 5.0 };
    // At least thirty intervals per client: the mean of fewer is set by the window's edges.
    Duration::from_secs_f64(base.max(30.0 / f64::from(point.rate)))
}

fn ours(port: u16) -> ServerProcess {
    let args = vec!["-gp".to_string(), port.to_string()];
    ServerProcess::start(&player_binary(), &args, ([127, 0, 0, 1], port).into())
}

fn baseline(port: u16) -> ServerProcess {
    let me = std::env::current_exe().expect("bench path");
    let args = vec!["--baseline-server".to_string(), port.to_string()];
    ServerProcess::start(
        me.to_str().expect("utf-8 path"),
        &args,
        ([127, 0, 0, 1], port).into(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--baseline-server") {
        let port: u16 = args[i + 1].parse().expect("port");
        baseline_server::run(port);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let mut grid: Vec<Point> = Vec::new();
    if let Some(i) = args.iter().position(|a| a == "--only") {
        let v: Vec<&str> = args[i + 1].split(',').collect();
        grid.push(Point {
            clients: v[0].parse().expect("clients"),
            rate: v[1].parse().expect("rate"),
            size: if v[2] == "small" {
                Size::Small
            } else {
                Size::Large
            },
        });
    } else if quick {
        for (clients, rate, size) in [
            (1, 10, Size::Small),
            (10, 50, Size::Large),
            (50, 10, Size::Large),
            (500, 10, Size::Large),
        ] {
            grid.push(Point {
                clients,
                rate,
                size,
            });
        }
    } else {
        for size in [Size::Small, Size::Large] {
            for clients in [1, 10, 50] {
                for rate in [1, 10, 50] {
                    grid.push(Point {
                        clients,
                        rate,
                        size,
                    });
                }
            }
        }
        for clients in [500, 2000] {
            for rate in [10, 50] {
                grid.push(Point {
                    clients,
                    rate,
                    size: Size::Large,
                });
            }
        }
    }
    println!(
        "stress: {} point(s), loopback, {} core(s){}",
        grid.len(),
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        if quick { ", quick" } else { "" }
    );
    println!(
        "{:>7} {:>4} {:>5} | {:>6} {:>4} {:>7} | {:>8} {:>7} {:>7} {:>7} {:>7} | {:>7} {:>6} | {:>7} {:>7} {:>7} {:>7} {:>7} {:>4} | {:>5} | {:>5}",
        "clients", "Hz", "size", "served", "drop", "deliv%", "mean ms", "dev us", "jit us", "p99 ms",
        "max ms", "cpu/1k", "RSS MB", "b del%", "b dev", "b jit", "b p99", "b cpu", "b dr", "ratio", "secs"
    );
    for point in grid {
        let measure = measure_time(point, quick);
        let t = Instant::now();
        let ours_load = {
            let s = ours(free_port());
            run_load(&s, point, measure)
        };
        let base_load = {
            let s = baseline(free_port());
            run_load(&s, point, measure)
        };
        let ratio = cpu_per_1000(&ours_load) / cpu_per_1000(&base_load);
        println!(
            "{:>7} {:>4} {:>5} | {:>6} {:>4} {:>7.2} | {:>8.3} {:>7.1} {:>7.1} {:>7.3} {:>7.3} | {:>7.2} {:>6.1} | {:>7.2} {:>7.1} {:>7.1} {:>7.3} {:>7.2} {:>4} | {:>5.2} | {:>5.1}",
            point.clients,
            point.rate,
            point.size.name(),
            ours_load.served,
            ours_load.dropped,
            100.0 * ours_load.rounds as f64 / ours_load.expected,
            ours_load.mean_interval_us / 1e3,
            ours_load.mean_dev_us,
            ours_load.jitter_us,
            ours_load.p99_us as f64 / 1e3,
            ours_load.max_us as f64 / 1e3,
            cpu_per_1000(&ours_load),
            ours_load.rss as f64 / (1024.0 * 1024.0),
            100.0 * base_load.rounds as f64 / base_load.expected,
            base_load.mean_dev_us,
            base_load.jitter_us,
            base_load.p99_us as f64 / 1e3,
            cpu_per_1000(&base_load),
            base_load.dropped,
            ratio,
            t.elapsed().as_secs_f64(),
        );
    }
    println!(
        "columns: served/drop = clients with rounds / clients whose connection failed or closed; \
         deliv% = rounds received / (clients x rate x seconds); mean ms = mean interval; \
         dev us = |mean interval - 1/rate| per client, averaged over clients (the paper's figure); \
         jit us = mean |interval - 1/rate| per client, averaged; p99/max = over all intervals; \
         cpu/1k = server CPU ms per 1000 rounds delivered; RSS = server resident memory; \
         b * = the same for the minimal baseline server; ratio = our cpu/1k over the baseline's"
    );
}

/// The baseline: a minimal single-threaded tokio server speaking just enough of the
/// protocol (a `dr` request, `x y f`) to serve rounds of the same sizes on absolute
/// deadlines. No actors, no drivers, no data: zero-filled payloads.
mod baseline_server {
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    pub fn run(port: u16) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
            loop {
                if let Ok((s, _)) = listener.accept().await {
                    let _ = s.set_nodelay(true);
                    tokio::task::spawn_local(serve(s));
                }
            }
        });
    }

    fn size_of(device: u8) -> usize {
        match device {
            b'l' => 722,
            b's' => 32,
            b'p' => 21,
            b'm' => 3,
            b'g' => 2,
            b'z' => 6,
            _ => 0,
        }
    }

    async fn serve(mut s: TcpStream) {
        let mut round: Vec<u8> = Vec::new();
        let mut period = Duration::from_millis(100);
        let mut next = Instant::now() + period;
        let mut buf = vec![0u8; 4096];
        let mut have = 0usize;
        loop {
            tokio::select! {
                r = s.read(&mut buf[have..]) => {
                    let n = match r { Ok(0) | Err(_) => return, Ok(n) => n };
                    have += n;
                    loop {
                        if have < 4 { break; }
                        let size = usize::from(u16::from_be_bytes([buf[2], buf[3]]));
                        if size > 1024 { return; }
                        if have < 4 + size { break; }
                        let (kind, dev) = (buf[0], buf[1]);
                        let body = buf[4..4 + size].to_vec();
                        if kind == b'd' {
                            let mut reply = vec![b'r'];
                            reply.extend_from_slice(&(body.len() as u16).to_be_bytes());
                            reply.extend_from_slice(&body);
                            if s.write_all(&reply).await.is_err() { return; }
                            round.clear();
                            for p in body.chunks_exact(2) {
                                if p[1] == b'r' || p[1] == b'a' {
                                    let n = size_of(p[0]);
                                    round.push(p[0]);
                                    round.extend_from_slice(&(n as u16).to_be_bytes());
                                    round.resize(round.len() + n, 0);
                                }
                            }
                        } else if kind == b'x' && dev == b'y' && body.len() == 3 && body[0] == b'f' {
                            let f = u16::from_be_bytes([body[1], body[2]]).max(1);
                            period = Duration::from_secs_f64(1.0 / f64::from(f));
                            next = Instant::now() + period;
                        }
                        buf.copy_within(4 + size..have, 0);
                        have -= 4 + size;
                    }
                }
                _ = player::timer::sleep_until(next) => {
                    next += period;
                    if !round.is_empty() && s.write_all(&round).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}
