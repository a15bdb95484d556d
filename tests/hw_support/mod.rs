//! Shared helpers of the hardware-driver tests (`tests/hw_*.rs`): an in-process server
//! configured from TOML text, a log that tests can search, and polling with generous
//! deadlines (the suite must not be flaky on a loaded two-core machine).
//!
//! Set `PLAYER_TEST_LOG=1` to also see the server's log on standard error.
#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;

use player::settings::Settings;
use player_client::Client;
use slog::{Drain, Key, OwnedKVList, Record, Serializer, KV};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
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

/// A server running in-process on its own thread (the integration tests' harness), with
/// its log captured. Dropping it shuts it down.
pub struct TestServer {
    inner: common::TestServer,
    /// The server's log.
    pub log: LogLines,
}

/// Starts a server configured by `toml` (one robot; its port and address are replaced by
/// 127.0.0.1 port 0).
pub fn start_server(toml: &str) -> TestServer {
    let settings = Settings::from_toml(toml, "test").expect("test configuration");
    let log = LogLines::default();
    let drain = Capture {
        lines: log.clone(),
        echo: std::env::var_os("PLAYER_TEST_LOG").is_some(),
    };
    let logger = slog::Logger::root(Mutex::new(drain).fuse(), slog::o!());
    TestServer {
        inner: common::start_server_logged(settings, player::builtin_catalog(), logger),
        log,
    }
}

impl TestServer {
    /// The robot's address.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr()
    }

    /// A connected client with a generous read timeout.
    pub fn client(&self) -> Client {
        let mut c = Client::connect(self.addr()).expect("connect to the test server");
        c.set_read_timeout(Some(TIMEOUT)).unwrap();
        c
    }

    /// Shuts the server down and waits for it (at most 15 s).
    pub fn shutdown(self) {
        self.inner.shutdown();
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

/// Drives at (`speed`, `turn`), sending the command again with every round read (as a
/// controller does, so the command watchdog sees it alive), until `f` accepts a round;
/// fails with `what` after [`TIMEOUT`].
pub fn drive_until(
    client: &mut Client,
    (speed, turn): (i16, i16),
    what: &str,
    mut f: impl FnMut(&player_client::Round) -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        client
            .set_speed(speed, turn)
            .unwrap_or_else(|e| panic!("commanding while waiting for {what}: {e}"));
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
