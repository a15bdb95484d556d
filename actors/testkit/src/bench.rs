//! What the load benches share: server processes and their CPU time and memory from /proc,
//! percentiles, and the clients that load a server (the round reader, push-new latency).

use player_proto::message;
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server running as a child process, killed (SIGTERM, then SIGKILL) on drop.
pub struct ServerProcess {
    /// The child.
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl ServerProcess {
    /// Starts `program args...` and waits until `addr` accepts connections. Its output is
    /// discarded, or appended to the file named by `BENCH_SERVER_LOG` (for a look at what
    /// the server logged under load).
    pub fn start(program: &str, args: &[String], addr: SocketAddr) -> ServerProcess {
        let log = || match std::env::var_os("BENCH_SERVER_LOG") {
            Some(path) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_or_else(|_| Stdio::null(), Stdio::from),
            None => Stdio::null(),
        };
        let child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log())
            .stderr(log())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            assert!(Instant::now() < deadline, "{program} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Let it forget the probe connection.
        std::thread::sleep(Duration::from_millis(100));
        ServerProcess { child, addr }
    }

    /// CPU time used so far by all of its threads.
    pub fn cpu(&self) -> Duration {
        process_cpu(self.child.id())
    }

    /// Resident memory in bytes.
    pub fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }
}

impl Drop for ServerProcess {
    // Unsafe code: kill(2) to stop the server process (a Linux call).
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        // SAFETY: kill with a valid pid of our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU time of every thread of process `pid` (nanosecond counters of /proc/PID/task/*/schedstat).
pub fn process_cpu(pid: u32) -> Duration {
    threads_cpu(pid, |_| true)
}

/// CPU time of the threads of process `pid` named `name` (their `comm`).
pub fn thread_cpu(pid: u32, name: &str) -> Duration {
    threads_cpu(pid, |comm| comm.trim_end() == name)
}

/// CPU time of the threads of process `pid` whose name `keep` accepts.
fn threads_cpu(pid: u32, keep: impl Fn(&str) -> bool) -> Duration {
    let mut ns: u64 = 0;
    if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in dir.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if !keep(&comm) {
                continue;
            }
            if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
                ns += s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    Duration::from_nanos(ns)
}

/// Percentile of sorted values.
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Microseconds since the Unix epoch, on the wall clock (the clock of the protocol's
/// timestamps).
pub fn wall_us() -> i64 {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970");
    d.as_micros() as i64
}

/// Connects, sends the `setup` messages and a request for `pairs`, and reads the reply.
pub async fn connect(
    addr: SocketAddr,
    pairs: &[(u8, u8)],
    setup: &[Vec<u8>],
) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.set_nodelay(true).expect("nodelay");
    let mut hello = Vec::new();
    for m in setup {
        hello.extend_from_slice(m);
    }
    hello.extend(message::request(pairs));
    s.write_all(&hello).await.expect("write");
    let mut reply = vec![0u8; 3 + 2 * pairs.len()];
    s.read_exact(&mut reply).await.expect("reply");
    s
}

/// Push-new latencies in microseconds.
pub async fn push_client(addr: SocketAddr, until: Instant, from: Instant) -> Vec<i64> {
    let setup = vec![
        message::config(b'y', b't', &[1]),
        message::config(b'y', b'r', &[2]),
        message::config(b'y', b'f', &1000u16.to_be_bytes()),
    ];
    let mut s = connect(addr, &[(b'p', b'r')], &setup).await;
    let mut out = Vec::new();
    // position with timestamp: 3 + 8 + 21
    let mut packet = [0u8; 32];
    loop {
        let r = tokio::time::timeout_at(until.into(), s.read_exact(&mut packet)).await;
        match r {
            Ok(Ok(_)) => {
                let now = wall_us();
                if Instant::now() < from {
                    continue;
                }
                let sec = u32::from_be_bytes([packet[3], packet[4], packet[5], packet[6]]);
                let usec = u32::from_be_bytes([packet[7], packet[8], packet[9], packet[10]]);
                out.push(now - (i64::from(sec) * 1_000_000 + i64::from(usec)));
            }
            _ => return out,
        }
    }
}

/// What a loading client saw: when each of its rounds arrived within the measuring window,
/// and whether its connection failed or ended before the window did.
#[derive(Debug, Default)]
pub struct Arrivals {
    /// Arrival times of the rounds that came within the window.
    pub at: Vec<Instant>,
    /// The connection failed or ended early.
    pub dropped: bool,
}

/// A loading client: at `start` it connects, requests `pairs` at `rate` rounds per second
/// (`x y f`), and records when each round of `round_len` bytes arrived within `window`;
/// at the window's end it returns.
pub async fn read_rounds(
    addr: SocketAddr,
    pairs: &[(u8, u8)],
    rate: u16,
    round_len: usize,
    start: Instant,
    window: (Instant, Instant),
) -> Arrivals {
    tokio::time::sleep_until(start.into()).await;
    let mut result = Arrivals {
        at: Vec::new(),
        dropped: true,
    };
    let mut s = match tokio::net::TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(_) => return result,
    };
    let _ = s.set_nodelay(true);
    let mut hello = message::request(pairs);
    hello.extend(message::config(b'y', b'f', &rate.to_be_bytes()));
    if s.write_all(&hello).await.is_err() {
        return result;
    }
    let mut reply = vec![0u8; 3 + 2 * pairs.len()];
    if s.read_exact(&mut reply).await.is_err() {
        return result;
    }
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
                    while partial >= round_len {
                        partial -= round_len;
                        if now >= window.0 && now < window.1 {
                            result.at.push(now);
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
