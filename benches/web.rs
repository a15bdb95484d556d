//! Browser-protocol clients next to TCP clients: does the web viewer slow the TCP clients,
//! and what does a browser client cost in JSON and in protobuf?
//!
//! Against one `player` process (the simulated robot) per point: no client at all (the
//! server's own CPU); 50 TCP clients reading laser + sonar + position at 10 Hz (the stress
//! bench's "large" round) alone; then with 50 Foxglove WebSocket clients
//! (`foxglove.websocket.v1`) each subscribed to `/laser`, `/sonar`, `/position` and `/tf`,
//! once with `?encoding=json` and once with the default (protobuf for the `foxglove.*`
//! channels). Per point: the TCP clients' mean interval, deviation (|mean interval - 100
//! ms| per client, averaged: the paper's figure), jitter and p99; the web messages
//! received per second; the server's CPU per 1000 TCP rounds and its peak RSS. Then the
//! costs side by side: the CPU one TCP client adds (over the idle server) per second and per
//! round, and the CPU one browser client adds (over the TCP-only point) per second and per
//! message, in JSON and in protobuf, and the browser client's ratio to the TCP client. The
//! four points run three times, interleaved, so that each run's ratio is of points under
//! the same load; the costs printed are the medians of the three runs. The load generator
//! runs in this process on the same two cores.
//!
//! `cargo bench --bench web` (about four minutes); quick mode, 2 s per point and about a
//! minute in all: `WEB_BENCH_QUICK=1` or `-- --quick`. `WEB_BENCH_PLAYER=path` measures
//! another build of `player` (a baseline to compare with).

mod common;

use common::{free_port, percentile, player_binary, read_rounds, ServerProcess};
use futures::{SinkExt, StreamExt};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const TCP_CLIENTS: usize = 50;
const WEB_CLIENTS: usize = 50;
const RATE: u16 = 10;
/// Runs of the four points, interleaved (idle, TCP, JSON, protobuf, idle, ...): each
/// figure printed is the median of the runs, each ratio the median of the runs' ratios.
const RUNS: usize = 3;
const ROUND: usize = (3 + 722) + (3 + 32) + (3 + 21);

/// A Foxglove WebSocket client: subscribes to the four topics and counts the messages
/// received in the window and their bytes (`messageData` whole, without the WebSocket's
/// frame header).
async fn web_client(url: String, start: Instant, window: (Instant, Instant)) -> (u64, u64) {
    tokio::time::sleep_until(start.into()).await;
    let mut req = url.into_client_request().expect("request");
    req.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        "foxglove.websocket.v1".parse().expect("header"),
    );
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async(req).await else {
        return (0, 0);
    };
    let (mut count, mut bytes) = (0u64, 0u64);
    let end = tokio::time::sleep_until(window.1.into());
    tokio::pin!(end);
    loop {
        tokio::select! {
            m = ws.next() => match m {
                Some(Ok(Message::Text(t))) => {
                    let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                    if v["op"] == "advertise" {
                        let subs: Vec<serde_json::Value> = v["channels"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|c| {
                                matches!(c["topic"].as_str(), Some("/laser" | "/sonar" | "/position" | "/tf"))
                            })
                            .map(|c| serde_json::json!({"id": c["id"], "channelId": c["id"]}))
                            .collect();
                        let msg = serde_json::json!({"op": "subscribe", "subscriptions": subs});
                        if ws.send(Message::Text(msg.to_string().into())).await.is_err() {
                            return (count, bytes);
                        }
                    }
                }
                // messageData (opcode 1); the server's clock (`time`) is not a message.
                Some(Ok(Message::Binary(b))) if b.first() == Some(&1) => {
                    let now = Instant::now();
                    if now >= window.0 && now < window.1 {
                        count += 1;
                        bytes += b.len() as u64;
                    }
                }
                Some(Ok(_)) => {}
                _ => return (count, bytes),
            },
            _ = &mut end => break,
        }
    }
    (count, bytes)
}

struct Point {
    mean_ms: f64,
    dev_us: f64,
    jitter_us: f64,
    p99_ms: f64,
    served: usize,
    tcp_rounds: u64,
    web_msgs: u64,
    web_bytes: u64,
    cpu: Duration,
    rss: u64,
}

/// Which clients a point runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Load {
    /// None: the server's own CPU.
    Idle,
    /// The TCP clients alone.
    Tcp,
    /// The TCP clients and the web clients, with this `?encoding=`.
    TcpAndWeb(&'static str),
}

fn run(load: Load, measure: Duration) -> Point {
    // The server under test: the one built with the bench, or another build to compare
    // with (`WEB_BENCH_PLAYER=path`).
    let binary = std::env::var("WEB_BENCH_PLAYER").unwrap_or_else(|_| player_binary());
    let gp = free_port();
    // Two distinct ports (the system may hand the same free one out twice).
    let wp = std::iter::repeat_with(free_port)
        .find(|&p| p != gp)
        .expect("a free port");
    let args = vec![
        "-gp".to_string(),
        gp.to_string(),
        "-web".to_string(),
        wp.to_string(),
    ];
    let server = ServerProcess::start(&binary, &args, ([127, 0, 0, 1], gp).into());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let t0 = Instant::now();
    let ramp = Duration::from_millis(500);
    let w0 = t0 + ramp + Duration::from_millis(2000);
    let w1 = w0 + measure;
    let (arrivals, (web_msgs, web_bytes), cpu, rss) = rt.block_on(async {
        let mut tcp = Vec::new();
        let tcp_clients = if load == Load::Idle { 0 } else { TCP_CLIENTS };
        for i in 0..tcp_clients {
            let start = t0 + ramp * (i as u32) / TCP_CLIENTS as u32;
            let addr = server.addr;
            tcp.push(tokio::spawn(async move {
                let pairs = [(b'l', b'r'), (b's', b'r'), (b'p', b'r')];
                read_rounds(addr, &pairs, RATE, ROUND, start, (w0, w1))
                    .await
                    .at
            }));
        }
        let mut webs = Vec::new();
        if let Load::TcpAndWeb(encoding) = load {
            for i in 0..WEB_CLIENTS {
                let start = t0 + ramp * (i as u32) / WEB_CLIENTS as u32;
                let url = format!("ws://127.0.0.1:{wp}/?encoding={encoding}");
                webs.push(tokio::spawn(web_client(url, start, (w0, w1))));
            }
        }
        tokio::time::sleep_until(w0.into()).await;
        let c0 = server.cpu();
        let mut rss = server.rss();
        while Instant::now() < w1 {
            let next = (Instant::now() + Duration::from_millis(250)).min(w1);
            tokio::time::sleep_until(next.into()).await;
            rss = rss.max(server.rss());
        }
        let c1 = server.cpu();
        let mut arrivals = Vec::new();
        for t in tcp {
            arrivals.push(t.await.unwrap_or_default());
        }
        let mut msgs = (0, 0);
        for w in webs {
            let (n, b) = w.await.unwrap_or_default();
            msgs = (msgs.0 + n, msgs.1 + b);
        }
        (arrivals, msgs, c1.saturating_sub(c0), rss)
    });
    let target = 1e6 / f64::from(RATE);
    let (mut sum_mean, mut sum_dev, mut sum_jit, mut n) = (0.0, 0.0, 0.0, 0usize);
    let mut all: Vec<u64> = Vec::new();
    let mut rounds = 0u64;
    let mut served = 0;
    for a in &arrivals {
        rounds += a.len() as u64;
        if !a.is_empty() {
            served += 1;
        }
        if a.len() < 3 {
            continue;
        }
        let iv: Vec<u64> = a
            .windows(2)
            .map(|w| (w[1] - w[0]).as_micros() as u64)
            .collect();
        let mean = iv.iter().sum::<u64>() as f64 / iv.len() as f64;
        let jit = iv.iter().map(|&i| (i as f64 - target).abs()).sum::<f64>() / iv.len() as f64;
        sum_mean += mean;
        sum_dev += (mean - target).abs();
        sum_jit += jit;
        n += 1;
        all.extend(iv);
    }
    all.sort_unstable();
    let k = n.max(1) as f64;
    Point {
        mean_ms: sum_mean / k / 1000.0,
        dev_us: sum_dev / k,
        jitter_us: sum_jit / k,
        p99_ms: percentile(&all, 0.99) as f64 / 1000.0,
        served,
        tcp_rounds: rounds,
        web_msgs,
        web_bytes,
        cpu,
        rss,
    }
}

/// The median of `v` (the middle one of three).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One run's `(CPU us per second, us per message)` of a TCP, a JSON and a protobuf client.
type Costs = [(f64, f64); 3];

/// What one client costs in one run: `(CPU us per second, us per message)` of a TCP client
/// (over the idle point, a message being a round) and of a browser client in JSON and in
/// protobuf (over the TCP-only point).
fn costs(points: &[Point], secs: f64) -> Costs {
    let cpu_us = |p: &Point| p.cpu.as_secs_f64() * 1e6;
    let (idle, tcp) = (&points[0], &points[1]);
    let tcp_us = (cpu_us(tcp) - cpu_us(idle)).max(0.0);
    let web = |p: &Point| {
        let us = (cpu_us(p) - cpu_us(tcp)).max(0.0);
        (
            us / WEB_CLIENTS as f64 / secs,
            us / p.web_msgs.max(1) as f64,
        )
    };
    [
        (
            tcp_us / TCP_CLIENTS as f64 / secs,
            tcp_us / tcp.tcp_rounds.max(1) as f64,
        ),
        web(&points[2]),
        web(&points[3]),
    ]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick")
        || std::env::var("WEB_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let measure = Duration::from_secs(if quick { 2 } else { 15 });
    let secs = measure.as_secs_f64();
    println!(
        "{TCP_CLIENTS} TCP clients (laser + sonar + position) at {RATE} Hz, alone and with \
         {WEB_CLIENTS} Foxglove WebSocket clients (/laser /sonar /position /tf) in JSON or \
         protobuf; {} s per point, {RUNS} runs of the four points interleaved",
        measure.as_secs()
    );
    println!(
        "{:<20} | {:>6} {:>8} {:>7} {:>7} {:>7} | {:>9} | {:>9} {:>10} {:>7}",
        "point (run)",
        "served",
        "mean ms",
        "dev us",
        "jit us",
        "p99 ms",
        "web msg/s",
        "cpu ms/s",
        "cpu/1k tcp",
        "rss MiB"
    );
    let loads = [
        ("idle", Load::Idle),
        ("tcp only", Load::Tcp),
        ("tcp + web json", Load::TcpAndWeb("json")),
        ("tcp + web proto", Load::TcpAndWeb("protobuf")),
    ];
    let mut runs: Vec<Vec<Point>> = Vec::new();
    for run_no in 1..=RUNS {
        let mut points = Vec::new();
        for (name, load) in loads {
            let p = run(load, measure);
            let cpu_ms = p.cpu.as_secs_f64() * 1000.0;
            let per_tcp = cpu_ms / (p.tcp_rounds.max(1) as f64 / 1000.0);
            println!(
                "{:<20} | {:>6} {:>8.3} {:>7.1} {:>7.1} {:>7.2} | {:>9.0} | {:>9.0} {:>10.1} {:>7.1}",
                format!("{name} ({run_no})"),
                p.served,
                p.mean_ms,
                p.dev_us,
                p.jitter_us,
                p.p99_ms,
                p.web_msgs as f64 / secs,
                cpu_ms / secs,
                if load == Load::Idle { 0.0 } else { per_tcp },
                p.rss as f64 / (1024.0 * 1024.0)
            );
            points.push(p);
        }
        runs.push(points);
    }
    let per_run: Vec<Costs> = runs.iter().map(|p| costs(p, secs)).collect();
    println!();
    println!(
        "{:<38} | {:>14} | {:>10} | {:>6} | vs TCP in each run",
        "one client costs", "CPU us/s each", "us/message", "vs TCP"
    );
    let names = [
        format!("TCP (a round of 3, {ROUND} B)"),
        "web JSON".to_string(),
        "web protobuf".to_string(),
    ];
    for (row, name) in names.iter().enumerate() {
        let each = |f: &dyn Fn(&Costs) -> f64| -> Vec<f64> { per_run.iter().map(f).collect() };
        let per_s = median(each(&|c| c[row].0));
        let per_msg = median(each(&|c| c[row].1));
        // The ratio within each run (its points ran under the same load), then their median.
        let ratios = each(&|c| c[row].0 / c[0].0.max(1e-9));
        let label = if row == 0 {
            name.to_string()
        } else {
            let msgs = median(runs.iter().map(|p| p[row + 1].web_msgs as f64).collect());
            let bytes = median(runs.iter().map(|p| p[row + 1].web_bytes as f64).collect());
            format!(
                "{name} ({:.0} msg/s, {:.0} B/msg)",
                msgs / secs / WEB_CLIENTS as f64,
                bytes / msgs.max(1.0)
            )
        };
        let list: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        println!(
            "{:<38} | {:>14.0} | {:>10.1} | {:>5.2}x | {}",
            label,
            per_s,
            per_msg,
            median(ratios.clone()),
            list.join(" ")
        );
    }
}
