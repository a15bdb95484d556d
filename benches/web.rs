//! Browser-protocol clients next to TCP clients: does the web viewer slow the TCP clients,
//! and what does it cost?
//!
//! Against one `player` process (the simulated robot) we run two points, each with 50 TCP
//! clients reading laser + sonar + position at 10 Hz (the stress bench's "large" round):
//! first alone, then with 50 Foxglove WebSocket clients (`foxglove.websocket.v1`) each
//! subscribed to `/laser`, `/sonar`, `/position` and `/tf`. Per point: the TCP clients' mean
//! interval, deviation (|mean interval - 100 ms| per client, averaged: the paper's figure),
//! jitter and p99; the web messages received per second; and the server's CPU per 1000
//! TCP rounds and per 1000 messages of any kind. The load generator runs in this process on
//! the same two cores.
//!
//! `cargo bench --bench web` (about a minute); `-- --quick` measures 4 s per point.

mod common;

use common::{free_port, percentile, player_binary, read_rounds, ServerProcess};
use futures::{SinkExt, StreamExt};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const TCP_CLIENTS: usize = 50;
const WEB_CLIENTS: usize = 50;
const RATE: u16 = 10;
const ROUND: usize = (3 + 722) + (3 + 32) + (3 + 21);

/// A Foxglove WebSocket client: subscribes to the four topics and counts the messages
/// received in the window.
async fn web_client(url: String, start: Instant, window: (Instant, Instant)) -> u64 {
    tokio::time::sleep_until(start.into()).await;
    let mut req = url.into_client_request().expect("request");
    req.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        "foxglove.websocket.v1".parse().expect("header"),
    );
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async(req).await else {
        return 0;
    };
    let mut count = 0u64;
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
                            return count;
                        }
                    }
                }
                // messageData (opcode 1); the server's clock (`time`) is not a message.
                Some(Ok(Message::Binary(b))) if b.first() == Some(&1) => {
                    let now = Instant::now();
                    if now >= window.0 && now < window.1 {
                        count += 1;
                    }
                }
                Some(Ok(_)) => {}
                _ => return count,
            },
            _ = &mut end => break,
        }
    }
    count
}

struct Point {
    mean_ms: f64,
    dev_us: f64,
    jitter_us: f64,
    p99_ms: f64,
    served: usize,
    tcp_rounds: u64,
    web_msgs: u64,
    cpu: Duration,
}

fn run(web: bool, measure: Duration) -> Point {
    let gp = free_port();
    let wp = free_port();
    let args = vec![
        "-gp".to_string(),
        gp.to_string(),
        "-web".to_string(),
        wp.to_string(),
    ];
    let server = ServerProcess::start(&player_binary(), &args, ([127, 0, 0, 1], gp).into());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let t0 = Instant::now();
    let ramp = Duration::from_millis(500);
    let w0 = t0 + ramp + Duration::from_millis(2000);
    let w1 = w0 + measure;
    let (arrivals, web_msgs, cpu) = rt.block_on(async {
        let mut tcp = Vec::new();
        for i in 0..TCP_CLIENTS {
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
        if web {
            for i in 0..WEB_CLIENTS {
                let start = t0 + ramp * (i as u32) / WEB_CLIENTS as u32;
                let url = format!("ws://127.0.0.1:{wp}/");
                webs.push(tokio::spawn(web_client(url, start, (w0, w1))));
            }
        }
        tokio::time::sleep_until(w0.into()).await;
        let c0 = server.cpu();
        tokio::time::sleep_until(w1.into()).await;
        let c1 = server.cpu();
        let mut arrivals = Vec::new();
        for t in tcp {
            arrivals.push(t.await.unwrap_or_default());
        }
        let mut msgs = 0;
        for w in webs {
            msgs += w.await.unwrap_or_default();
        }
        (arrivals, msgs, c1.saturating_sub(c0))
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
        cpu,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let measure = Duration::from_secs(if quick { 4 } else { 15 });
    println!(
        "{TCP_CLIENTS} TCP clients (laser + sonar + position) at {RATE} Hz, with and without \
         {WEB_CLIENTS} Foxglove WebSocket clients (/laser /sonar /position /tf); {} s per point",
        measure.as_secs()
    );
    println!(
        "{:<10} | {:>6} {:>8} {:>7} {:>7} {:>7} | {:>9} | {:>10} {:>10}",
        "point",
        "served",
        "mean ms",
        "dev us",
        "jit us",
        "p99 ms",
        "web msg/s",
        "cpu/1k tcp",
        "cpu/1k all"
    );
    let mut base = None;
    for web in [false, true] {
        let p = run(web, measure);
        let secs = measure.as_secs_f64();
        let cpu_ms = p.cpu.as_secs_f64() * 1000.0;
        let per_tcp = cpu_ms / (p.tcp_rounds.max(1) as f64 / 1000.0);
        let per_all = cpu_ms / ((p.tcp_rounds + p.web_msgs).max(1) as f64 / 1000.0);
        println!(
            "{:<10} | {:>6} {:>8.3} {:>7.1} {:>7.1} {:>7.2} | {:>9.0} | {:>10.1} {:>10.1}",
            if web { "tcp + web" } else { "tcp only" },
            p.served,
            p.mean_ms,
            p.dev_us,
            p.jitter_us,
            p.p99_ms,
            p.web_msgs as f64 / secs,
            per_tcp,
            per_all
        );
        match base {
            None => base = Some((per_tcp, cpu_ms / secs)),
            Some((b, bcpu)) => println!(
                "web clients cost: server CPU {:.0} ms/s against {:.0} ms/s TCP-only ({:.2}x); \
                 CPU per TCP round {:.2}x",
                cpu_ms / secs,
                bcpu,
                (cpu_ms / secs) / bcpu.max(1e-9),
                per_tcp / b.max(1e-9)
            ),
        }
    }
}
