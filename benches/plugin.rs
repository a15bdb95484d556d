//! A device served by a driver program (docs/plugins.md) against the same device served by
//! an in-process driver, printed as a table.
//!
//! Both publish the wall-clock time (CLOCK_REALTIME, u64 ns) as their 8-byte reading, at
//! 100 and 1000 readings a second: the in-process `stamp` driver from a timer on the
//! drivers' thread, the program (`tests/programs/stamp.py`, Python, on
//! `python/player_driver.py`) from its run loop's timer. One client reads one device at a
//! time in push-new mode (data mode 2, frequency 1000); latency = arrival time - the time in the payload,
//! that is from the writer's clock read (the program's `publish`, the driver's timer)
//! through the server to the client's `read`. CPU per reading: the server's threads (this
//! process, the client's thread included, which is the same work for both) and the
//! program's, from /proc schedstat over the run, less what each uses with nobody reading
//! (the drivers' and programs' timers tick regardless; measured first).
//!
//! `cargo bench --bench plugin` (`-- --quick` for a short run). python3 must be on PATH.

mod common;

use actix::prelude::*;
use bytes::Bytes;
use common::{percentile, process_cpu};
use player::catalog::{DriverContext, StartedDriver};
use player::driver::{DeviceSpec, DriverError, Publisher, Setup, Shutdown};
use player::settings::Settings;
use player_kit::plain::{Driver, Reply};
use player_proto::message;
use player_testkit::TestServer;
use serde::Deserialize;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn realtime_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos() as u64
}

#[derive(Deserialize)]
struct StampParams {
    rate: f64,
}

/// The in-process driver: publishes the time `rate` times a second while set up.
struct Stamp {
    code: u8,
    period: Duration,
    up: bool,
    publisher: Publisher,
}

impl Actor for Stamp {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.period, |act, _| {
            if act.up {
                let now = Bytes::copy_from_slice(&realtime_ns().to_be_bytes());
                act.publisher.publish(act.code, now);
            }
        });
    }
}

impl Driver for Stamp {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        _msg: Setup,
        _ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        self.up = true;
        Reply::Now(Ok(()))
    }

    fn shutdown(&mut self, _msg: Shutdown, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.up = false;
        Reply::Now(())
    }
}

player_kit::driver_handlers!(Stamp);

fn program_entry(code: char, rate: u32) -> String {
    format!(
        "[[robot.driver]]\ndriver = \"program\"\ndevices = [\"{code}\"]\n\
         [robot.driver.params]\nname = \"stamp{rate}\"\noptions = {{ rate = {rate} }}\n\
         command = [\"python3\", \"{ROOT}/tests/programs/stamp.py\", \"{code}\"]\n\
         env = {{ PYTHONPATH = \"{ROOT}/python\" }}\n\
         [[robot.driver.params.device]]\ncode = \"{code}\"\ndata_size = 8\n\n"
    )
}

/// Starts the server in-process (on its own thread); dropping it shuts it down.
fn start_server() -> TestServer {
    let text = format!(
        "[[robot]]\nname = \"bench\"\nport = 0\nbind = \"127.0.0.1\"\nweb_port = 0\n\n\
         [[robot.driver]]\ndriver = \"stamp\"\ndevices = [\"n\"]\n[robot.driver.params]\nrate = 100\n\n\
         [[robot.driver]]\ndriver = \"stamp\"\ndevices = [\"N\"]\n[robot.driver.params]\nrate = 1000\n\n{}{}",
        program_entry('b', 100),
        program_entry('B', 1000)
    );
    let settings = Settings::from_toml(&text, "bench").expect("bench settings");
    let mut catalog = player::builtin_catalog();
    catalog.register("stamp", |ctx: DriverContext| {
        let p: StampParams = ctx.params()?;
        let code = ctx.devices[0];
        let addr = Stamp {
            code,
            period: Duration::from_secs_f64(1.0 / p.rate),
            up: false,
            publisher: Publisher::new(),
        }
        .start();
        Ok(StartedDriver::of(&addr, vec![DeviceSpec::read_only(code)]))
    });
    TestServer::start(settings, catalog)
}

/// Pids of this process's children whose command line contains `name`.
fn children_named(name: &str) -> Vec<u32> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if rest.split_whitespace().nth(1) == Some(me.as_str())
            && String::from_utf8_lossy(&cmdline).contains(name)
        {
            out.push(pid);
        }
    }
    out
}

struct Row {
    route: &'static str,
    rate: u32,
    readings: usize,
    p50_us: u64,
    p99_us: u64,
    server_us: f64,
    program_us: f64,
}

/// CPU per second of this process and of `program` while nobody reads anything (timers
/// that tick whether or not their device is read: subtracted from the rows).
struct Idle {
    server: f64,
    program: HashMap<u32, f64>,
}

fn idle(programs: &[u32], secs: f64) -> Idle {
    let me = std::process::id();
    let before: Vec<Duration> = programs.iter().map(|&p| process_cpu(p)).collect();
    let cpu0 = process_cpu(me);
    let t = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let elapsed = t.elapsed().as_secs_f64();
    let server = (process_cpu(me) - cpu0).as_secs_f64() * 1e6 / elapsed;
    let program = programs
        .iter()
        .zip(before)
        .map(|(&p, b)| (p, (process_cpu(p) - b).as_secs_f64() * 1e6 / elapsed))
        .collect();
    Idle { server, program }
}

/// Reads `device` in push-new mode for `secs`: latencies (us), and CPU per reading (us)
/// of this process and of `program`, their idle CPU subtracted.
fn measure(
    addr: SocketAddr,
    device: u8,
    program: Option<u32>,
    idle: &Idle,
    secs: f64,
) -> (Vec<u64>, f64, f64) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&message::config(b'y', b'r', &[2])).unwrap();
    // Push new data as it comes, up to the server's highest frequency.
    s.write_all(&message::config(b'y', b'f', &1000u16.to_be_bytes()))
        .unwrap();
    s.write_all(&message::request(&[(device, b'r')])).unwrap();
    let mut head = [0u8; 3];
    let mut body = [0u8; 64];
    let mut read = |s: &mut TcpStream| {
        s.read_exact(&mut head).expect("read");
        let n = usize::from(u16::from_be_bytes([head[1], head[2]]));
        assert!(n <= body.len(), "unexpected packet of {n} bytes");
        s.read_exact(&mut body[..n]).expect("read");
        (head[0], n, body)
    };
    // The reply, then a second of warm-up.
    let warm = Instant::now() + Duration::from_secs(1);
    while read(&mut s).0 != device || Instant::now() < warm {}
    let me = std::process::id();
    let (cpu0, prog0) = (process_cpu(me), program.map(process_cpu));
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    let mut lat = Vec::new();
    while Instant::now() < end {
        let (code, n, body) = read(&mut s);
        let now = realtime_ns();
        assert_eq!((code, n), (device, 8), "one 8-byte reading at a time");
        let sent = u64::from_be_bytes(body[..8].try_into().unwrap());
        lat.push(now.saturating_sub(sent) / 1000);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = (process_cpu(me) - cpu0).as_secs_f64() * 1e6 - idle.server * elapsed;
    let prog = match (program, prog0) {
        (Some(p), Some(c0)) => {
            let quiet = idle.program.get(&p).copied().unwrap_or(0.0);
            (process_cpu(p) - c0).as_secs_f64() * 1e6 - quiet * elapsed
        }
        _ => 0.0,
    };
    let n = lat.len().max(1) as f64;
    lat.sort_unstable();
    (lat, cpu / n, prog / n)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let secs: f64 = if quick { 2.0 } else { 8.0 };
    let server = start_server();
    let addr = server.addr();
    // Both programs are started with the server; each is told apart by the device code
    // on its command line.
    let program = |code: u8| {
        let tag = format!("stamp.py\0{}", char::from(code));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let [pid] = children_named(&tag)[..] {
                return pid;
            }
            assert!(
                Instant::now() < deadline,
                "the program serving {tag} did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let programs = [program(b'b'), program(b'B')];
    std::thread::sleep(Duration::from_millis(500));
    let idle = idle(&programs, secs.min(4.0));
    let mut rows = Vec::new();
    for (rate, native, served) in [(100, b'n', b'b'), (1000, b'N', b'B')] {
        let (lat, server_us, _) = measure(addr, native, None, &idle, secs);
        rows.push(Row {
            route: "in-process driver",
            rate,
            readings: lat.len(),
            p50_us: percentile(&lat, 0.5),
            p99_us: percentile(&lat, 0.99),
            server_us,
            program_us: 0.0,
        });
        let (lat, server_us, program_us) =
            measure(addr, served, Some(program(served)), &idle, secs);
        rows.push(Row {
            route: "driver program (Python)",
            rate,
            readings: lat.len(),
            p50_us: percentile(&lat, 0.5),
            p99_us: percentile(&lat, 0.99),
            server_us,
            program_us,
        });
    }
    println!();
    println!(
        "Driver program vs in-process driver: one push-new client, 8-byte readings, {secs} s per row"
    );
    println!();
    println!("| route | readings/s | readings | latency p50 (us) | latency p99 (us) | server CPU/reading (us) | program CPU/reading (us) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {:.1} | {:.1} |",
            r.route, r.rate, r.readings, r.p50_us, r.p99_us, r.server_us, r.program_us
        );
    }
    println!();
    println!(
        "CPU per reading, idle CPU subtracted (measured first with no reader: this process {:.0} us/s, programs {:?} us/s):",
        idle.server, idle.program.values().map(|v| v.round()).collect::<Vec<_>>()
    );
    println!("server: every thread of the bench process (the server and the reading client);");
    println!("program: the Python program serving the device (python/player_driver.py).");
    // The server thread runs until the process ends; the programs die with it (their
    // parent-death signal and process groups).
    std::process::exit(0);
}
