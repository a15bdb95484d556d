//! What recording costs, printed as a table.
//!
//! The `player` binary serves the simulated robot (all seven devices at 10 Hz) without
//! recording and with `-record` (the default channels: raw and Foxglove), in interleaved
//! pairs (`--pairs N`, 3 by default). In each run one client holds every device open
//! (request/reply mode, asking for nothing, so every device runs and nothing is written to
//! it), so the only difference is the recorder. Per run:
//!
//! - server CPU per second of the whole process (all threads, /proc schedstat) over the
//!   measuring window;
//! - with recording: the recorder thread's own CPU (`player-record`) over the same window
//!   per reading recorded in it (the readings whose log time falls in the window, read back
//!   from the finished file with the `mcap` crate; goal, issue 33: at most 10 us), its
//!   wake-ups per second, and over the thread's whole life (start and finish included);
//! - push-new latency at 1 and 50 clients reading the position with timestamps (driver
//!   timestamp to client arrival), as `benches/latency.rs` measures it (goal: no rise of
//!   the 50 clients' p50 while recording; the medians of the pairs are compared).
//!
//! `cargo bench --bench record` (`-- --quick` for a short run).

mod common;

use common::{
    connect, free_port, percentile, player_binary, process_cpu, push_client, thread_cpu, wall_us,
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

/// Raw readings in a finished recording: all of them, those whose log time (ns since the
/// epoch) falls in `window`, and the span of their log times in seconds.
fn readings_in(file: &Path, window: (u64, u64)) -> (u64, u64, f64) {
    let bytes = std::fs::read(file).expect("read the recording");
    let (mut n, mut inside, mut first, mut last) = (0u64, 0u64, u64::MAX, 0u64);
    for m in mcap::MessageStream::new(&bytes)
        .expect("an MCAP file")
        .flatten()
    {
        if m.channel.message_encoding == player::record::RAW_ENCODING
            && m.channel.topic.matches('/').count() == 2
        {
            n += 1;
            inside += u64::from((window.0..window.1).contains(&m.log_time));
            first = first.min(m.log_time);
            last = last.max(m.log_time);
        }
    }
    (n, inside, last.saturating_sub(first) as f64 / 1e9)
}

/// Times a thread of `pid` named `name` was run (its wake-ups), from its schedstat.
fn thread_runs(pid: u32, name: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    dir.flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .filter_map(|t| {
            let s = std::fs::read_to_string(t.path().join("schedstat")).ok()?;
            s.split_whitespace().nth(2)?.parse::<u64>().ok()
        })
        .sum()
}

/// What the recorder did in a run's measuring window.
#[derive(Default, Clone, Copy)]
struct Recorder {
    cpu: Duration,
    wakes: u64,
    /// The window on the wall clock, ns since the epoch.
    window: (u64, u64),
}

struct Row {
    cpu_ms_per_s: f64,
    latency: Vec<(usize, usize, u64, u64)>,
    recorder: Recorder,
}

fn run(
    secs: f64,
    record: Option<&Path>,
    rt: &tokio::runtime::Runtime,
) -> (Row, u32, ServerProcess) {
    let port = free_port();
    // No web viewer (its default port may be taken by another server on the machine).
    let mut args = vec![
        "-gp".to_string(),
        port.to_string(),
        "-web".to_string(),
        "0".to_string(),
    ];
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
    let (r0, w0) = (
        thread_cpu(pid, "player-record"),
        thread_runs(pid, "player-record"),
    );
    let wall0 = wall_us() as u64 * 1000;
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let cpu_ms_per_s = (process_cpu(pid) - c0).as_secs_f64() * 1000.0 / t0.elapsed().as_secs_f64();
    let recorder = Recorder {
        cpu: thread_cpu(pid, "player-record").saturating_sub(r0),
        wakes: thread_runs(pid, "player-record") - w0,
        window: (wall0, wall_us() as u64 * 1000),
    };
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
            recorder,
        },
        pid,
        server,
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let secs = if quick { 3.0 } else { 10.0 };
    let pairs: usize = args
        .iter()
        .position(|a| a == "--pairs")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(3);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = std::env::temp_dir().join(format!("player-record-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");

    println!(
        "record: loopback, simulated robot, all seven devices at 10 Hz, {secs} s per window, \
         {pairs} interleaved pairs; load average at start: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!(
        "{:<12} {:>10} | {:>11} {:>9} {:>9} | {:>12} {:>9} {:>9} | {:>10} {:>8} {:>10} {:>10}",
        "run",
        "cpu ms/s",
        "push 1c n",
        "p50 us",
        "p99 us",
        "push 50c n",
        "p50 us",
        "p99 us",
        "readings/s",
        "wakes/s",
        "us/reading",
        "life us/r"
    );
    let (mut plain_p50, mut rec_p50, mut per_reading) = (Vec::new(), Vec::new(), Vec::new());
    for pair in 0..pairs {
        let file = dir.join(format!("bench{pair}.mcap"));
        let (plain, _, server) = run(secs, None, &rt);
        drop(server);
        let (rec, pid, server) = run(secs, Some(&file), &rt);
        let life_cpu = thread_cpu(pid, "player-record");
        drop(server); // SIGTERM: the recording is finished (summary, footer)
        let (readings, inside, _span) = readings_in(&file, rec.recorder.window);
        let _ = std::fs::remove_file(&file);
        let window_s = (rec.recorder.window.1 - rec.recorder.window.0) as f64 / 1e9;
        let us = rec.recorder.cpu.as_secs_f64() * 1e6 / inside.max(1) as f64;
        per_reading.push(us);
        plain_p50.push(plain.latency[1].2 as f64);
        rec_p50.push(rec.latency[1].2 as f64);
        for (name, r) in [("no record", &plain), ("-record", &rec)] {
            let (_, n1, a50, a99) = r.latency[0];
            let (_, n50, b50, b99) = r.latency[1];
            let rec_cols = if std::ptr::eq(r, &rec) {
                format!(
                    "{:>10.1} {:>8.2} {us:>10.1} {:>10.1}",
                    inside as f64 / window_s,
                    rec.recorder.wakes as f64 / window_s,
                    life_cpu.as_secs_f64() * 1e6 / readings.max(1) as f64
                )
            } else {
                String::new()
            };
            println!(
                "{name:<12} {:>10.1} | {n1:>11} {a50:>9} {a99:>9} | {n50:>12} {b50:>9} {b99:>9} | {rec_cols}",
                r.cpu_ms_per_s
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    let us = median(per_reading);
    let (p, r) = (median(plain_p50), median(rec_p50));
    println!(
        "recorder thread: {us:.1} us of CPU per reading recorded (median of the pairs; goal <= \
         10: {}); push-new p50 of 50 clients {p:.0} us without recording, {r:.0} us with \
         ({:.2}x; goal: no rise, within 10%: {})",
        verdict(us <= 10.0),
        r / p,
        verdict(r <= p * 1.1)
    );
    println!(
        "columns: us/reading = the recorder thread's CPU in the window over the readings \
         recorded in it (the Foxglove channels' encoding and writing included); wakes/s = its \
         wake-ups; life us/r = its CPU over its whole life (file set-up, subscriptions, the \
         latency phases, finishing) over every reading in the file"
    );
}
