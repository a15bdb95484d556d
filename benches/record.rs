//! What recording costs, printed as a table.
//!
//! The `player` binary serves the simulated robot (all seven devices at 10 Hz) twice: once
//! without recording and once with `-record`. In both runs one client holds every device
//! open (request/reply mode, asking for nothing, so every device runs and nothing is
//! written to it), so the only difference is the recorder. Per run:
//!
//! - server CPU per second of the whole process (all threads, /proc schedstat);
//! - with recording: the recorder thread's own CPU (`player-record`) per reading written,
//!   the readings per second and the file's bytes per second (read back with the `mcap`
//!   crate);
//! - push-new latency at 1 and 50 clients reading the position with timestamps (driver
//!   timestamp to client arrival), as `benches/latency.rs` measures it.
//!
//! `cargo bench --bench record` (`-- --quick` for a short run).

mod common;

use common::{
    connect, free_port, percentile, player_binary, process_cpu, push_client, thread_cpu,
    ServerProcess,
};
use player_proto::message;
use std::path::Path;
use std::time::{Duration, Instant};

fn p50_p99(v: Vec<i64>) -> (usize, u64, u64) {
    let mut v: Vec<u64> = v.into_iter().map(|x| x.max(0) as u64).collect();
    v.sort_unstable();
    (v.len(), percentile(&v, 0.5), percentile(&v, 0.99))
}

/// Raw readings in a finished recording and the span of their timestamps in seconds.
fn readings_in(file: &Path) -> (u64, f64) {
    let bytes = std::fs::read(file).expect("read the recording");
    let (mut n, mut first, mut last) = (0u64, u64::MAX, 0u64);
    for m in mcap::MessageStream::new(&bytes)
        .expect("an MCAP file")
        .flatten()
    {
        if m.channel.message_encoding == player::record::RAW_ENCODING
            && m.channel.topic.matches('/').count() == 2
        {
            n += 1;
            first = first.min(m.log_time);
            last = last.max(m.log_time);
        }
    }
    (n, last.saturating_sub(first) as f64 / 1e9)
}

struct Row {
    cpu_ms_per_s: f64,
    latency: Vec<(usize, usize, u64, u64)>,
}

fn run(
    secs: f64,
    record: Option<&Path>,
    rt: &tokio::runtime::Runtime,
) -> (Row, u32, ServerProcess) {
    let port = free_port();
    let mut args = vec!["-gp".to_string(), port.to_string()];
    if let Some(f) = record {
        args.push("-record".into());
        args.push(f.display().to_string());
    }
    let server = ServerProcess::start(&player_binary(), &args, ([127, 0, 0, 1], port).into());
    let addr = server.addr;
    let pid = server.child.id();
    let holder = rt.block_on(async {
        let all: Vec<(u8, u8)> = b"pslmgzv".iter().map(|&c| (c, b'r')).collect();
        connect(addr, &all, &[message::config(b'y', b'r', &[1])]).await
    });
    std::thread::sleep(Duration::from_millis(1000));
    let c0 = process_cpu(pid);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let cpu_ms_per_s = (process_cpu(pid) - c0).as_secs_f64() * 1000.0 / t0.elapsed().as_secs_f64();
    let mut latency = Vec::new();
    for clients in [1usize, 50] {
        let v = rt.block_on(async {
            let warm = Instant::now() + Duration::from_millis(800 + 2 * clients as u64);
            let until = warm + Duration::from_secs_f64(secs);
            let tasks: Vec<_> = (0..clients)
                .map(|_| tokio::spawn(push_client(addr, until, warm)))
                .collect();
            let mut v = Vec::new();
            for t in tasks {
                v.extend(t.await.unwrap_or_default());
            }
            v
        });
        let (n, p50, p99) = p50_p99(v);
        latency.push((clients, n, p50, p99));
    }
    drop(holder);
    (
        Row {
            cpu_ms_per_s,
            latency,
        },
        pid,
        server,
    )
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let secs = if quick { 3.0 } else { 10.0 };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = std::env::temp_dir().join(format!("player-record-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let file = dir.join("bench.mcap");

    let (plain, _, server) = run(secs, None, &rt);
    drop(server);
    let (rec, pid, server) = run(secs, Some(&file), &rt);
    let recorder_cpu = thread_cpu(pid, "player-record");
    drop(server); // SIGTERM: the recording is finished (summary, footer)
    let (readings, span) = readings_in(&file);
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());
    let _ = std::fs::remove_dir_all(&dir);

    println!("record: loopback, simulated robot, all seven devices at 10 Hz, {secs} s per row");
    println!(
        "{:<12} {:>10} | {:>11} {:>9} {:>9} | {:>12} {:>9} {:>9}",
        "run", "cpu ms/s", "push 1c n", "p50 us", "p99 us", "push 50c n", "p50 us", "p99 us"
    );
    for (name, r) in [("no record", &plain), ("-record", &rec)] {
        let (_, n1, a50, a99) = r.latency[0];
        let (_, n50, b50, b99) = r.latency[1];
        println!(
            "{name:<12} {:>10.1} | {n1:>11} {a50:>9} {a99:>9} | {n50:>12} {b50:>9} {b99:>9}",
            r.cpu_ms_per_s
        );
    }
    let per_reading_us = recorder_cpu.as_secs_f64() * 1e6 / readings.max(1) as f64;
    println!(
        "recording: {readings} readings over {span:.1} s ({:.1}/s), {bytes} bytes ({:.1} kB/s, \
         Foxglove JSON channels included); recorder thread {:.0} ms CPU, {per_reading_us:.1} us \
         per reading; whole server +{:.1} ms CPU per second",
        readings as f64 / span.max(1e-9),
        bytes as f64 / 1000.0 / span.max(1e-9),
        recorder_cpu.as_secs_f64() * 1000.0,
        rec.cpu_ms_per_s - plain.cpu_ms_per_s
    );
}
