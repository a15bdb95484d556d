//! Shared helpers of the hardware-driver tests (`tests/hw_*.rs`): an in-process server
//! configured from TOML text, a log that tests can search, and polling with generous
//! deadlines (the suite must not be flaky on a loaded two-core machine).
//!
//! Set `PLAYER_TEST_LOG=1` to also see the server's log on standard error.
#![allow(dead_code)]

use player::server::Server;
use player::settings::Settings;
use player_client::Client;
use slog::{Drain, Key, OwnedKVList, Record, Serializer, KV};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long any single expected event may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Every log line the server wrote, as `message key=value ...`.
#[derive(Clone, Default)]
pub struct LogLines(Arc<Mutex<Vec<String>>>);

impl LogLines {
    /// Whether some line contains every one of `parts`.
    pub fn has(&self, parts: &[&str]) -> bool {
        self.0
            .lock()
            .unwrap()
            .iter()
            .any(|l| parts.iter().all(|p| l.contains(p)))
    }

    /// All lines so far, one per line (for failure messages).
    pub fn dump(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }
}

struct Line(String);

impl Serializer for Line {
    fn emit_arguments(&mut self, key: Key, val: &fmt::Arguments) -> slog::Result {
        self.0.push_str(&format!(" {key}={val}"));
        Ok(())
    }
}

struct Capture {
    lines: LogLines,
    echo: bool,
}

impl Drain for Capture {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record, values: &OwnedKVList) -> Result<(), slog::Never> {
        let mut line = Line(format!(
            "{} {}",
            record.level().as_short_str(),
            record.msg()
        ));
        let _ = record.kv().serialize(record, &mut line);
        let _ = values.serialize(record, &mut line);
        if self.echo {
            eprintln!("{}", line.0);
        }
        self.lines.0.lock().unwrap().push(line.0);
        Ok(())
    }
}

/// A server running in-process on its own thread. Dropping it shuts it down.
pub struct TestServer {
    addr: SocketAddr,
    /// The server's log.
    pub log: LogLines,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: mpsc::Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

/// Starts a server configured by `toml` (one robot; its port and address are replaced by
/// 127.0.0.1 port 0).
pub fn start_server(toml: &str) -> TestServer {
    let mut settings = Settings::from_toml(toml, "test").expect("test configuration");
    for r in &mut settings.robot {
        r.port = 0;
        r.bind = "127.0.0.1".into();
    }
    let log = LogLines::default();
    let drain = Capture {
        lines: log.clone(),
        echo: std::env::var_os("PLAYER_TEST_LOG").is_some(),
    };
    let logger = slog::Logger::root(Mutex::new(drain).fuse(), slog::o!());
    let (ready_tx, ready_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("player-server".into())
        .spawn(move || {
            let system = actix_rt::System::new();
            system.block_on(async move {
                let base = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
                let catalog = player::builtin_catalog();
                match Server::start(&settings, &catalog, base, logger).await {
                    Ok(server) => {
                        let _ = ready_tx.send(Ok(server.local_addrs()[0]));
                        let _ = stop_rx.await;
                        server.shutdown().await;
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                    }
                }
            });
            drop(system);
            let _ = done_tx.send(());
        })
        .expect("spawn the server thread");
    let addr = match ready_rx.recv_timeout(TIMEOUT) {
        Ok(Ok(a)) => a,
        Ok(Err(e)) => panic!("server did not start: {e}"),
        Err(e) => panic!("server did not start within {TIMEOUT:?}: {e}"),
    };
    TestServer {
        addr,
        log,
        stop: Some(stop_tx),
        done: done_rx,
        thread: Some(thread),
    }
}

impl TestServer {
    /// The robot's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A connected client with a generous read timeout.
    pub fn client(&self) -> Client {
        let mut c = Client::connect(self.addr).expect("connect to the test server");
        c.set_read_timeout(Some(TIMEOUT)).unwrap();
        c
    }

    /// Shuts the server down and waits for it (at most 15 s).
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let Some(thread) = self.thread.take() else {
            return;
        };
        match self.done.recv_timeout(Duration::from_secs(15)) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if !std::thread::panicking() {
                    panic!("the server did not shut down within 15 s");
                }
            }
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Polls `f` every 20 ms until it returns true; fails with `what` after [`TIMEOUT`].
pub fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !f() {
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads rounds until `f` accepts one; fails with `what` after [`TIMEOUT`].
pub fn read_until(
    client: &mut Client,
    what: &str,
    mut f: impl FnMut(&player_client::Round) -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let round = client
            .read()
            .unwrap_or_else(|e| panic!("reading while waiting for {what}: {e}"));
        if f(round) {
            return;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
    }
}

/// Reads partial rounds (push-new or pull-new modes) until `f` accepts one; fails with
/// `what` after [`TIMEOUT`].
pub fn read_new_until(
    client: &mut Client,
    what: &str,
    mut f: impl FnMut(&player_client::Round) -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let round = client
            .read_new(TIMEOUT)
            .unwrap_or_else(|e| panic!("reading while waiting for {what}: {e}"));
        if f(round) {
            return;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
    }
}

/// A fresh directory for symlinks and such, removed by the OS eventually (under the
/// target directory so it never collides with another test run).
pub fn scratch_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The TOML of a robot whose devices are served by the given drivers: each entry is
/// (driver name, device codes, parameter lines).
pub fn robot_toml(drivers: &[(&str, &str, &str)]) -> String {
    let mut s = String::from("[server]\nsetup_timeout = 20.0\n[[robot]]\nname = \"hw\"\n");
    for (name, devices, params) in drivers {
        let devs: Vec<String> = devices.chars().map(|c| format!("\"{c}\"")).collect();
        s.push_str(&format!(
            "[[robot.driver]]\ndriver = \"{name}\"\ndevices = [{}]\n[robot.driver.params]\n{params}\n",
            devs.join(", ")
        ));
    }
    s
}
