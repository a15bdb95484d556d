//! Waiting on events rather than on the clock: polling a condition with a deadline, a
//! server log a test can search and wait on, a child process's standard error; and the
//! few clock helpers tests share.

use slog::{Drain, Key, OwnedKVList, Record, Serializer, KV};
use std::fmt;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long any single expected read or event may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// How often the waits here look again.
const POLL: Duration = Duration::from_millis(20);

/// Polls `f` until it returns true; fails the test with `what` if that takes longer than
/// `within`.
pub fn wait_until(within: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !f() {
        if Instant::now() > deadline {
            panic!("timed out after {within:?} waiting for {what}");
        }
        std::thread::sleep(POLL);
    }
}

/// Sleeps until `t` (for a test that measures over a given span of time).
pub fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// A TCP port on 127.0.0.1 that was free a moment ago (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Collects a child process's standard error (which must be piped) into a string, on a
/// thread of its own, so a test can read the log while the process runs (and wait on it
/// with [`wait_for_text`]).
pub fn collect_stderr(child: &mut std::process::Child) -> Arc<Mutex<String>> {
    let log = Arc::new(Mutex::new(String::new()));
    let mut pipe = child.stderr.take().expect("stderr is piped");
    let sink = log.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    log
}

/// Waits until `log` (as filled by [`collect_stderr`]) contains `text`; fails with the log
/// after `within`.
pub fn wait_for_text(log: &Mutex<String>, text: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while !log.lock().unwrap().contains(text) {
        assert!(
            Instant::now() < deadline,
            "the log never said {text:?}; it is:\n{}",
            log.lock().unwrap()
        );
        std::thread::sleep(POLL);
    }
}

/// Every log line a server wrote, as `LEVEL message key=value ...`: an slog drain
/// ([`LogCapture::logger`]) that keeps them for the test to search and wait on.
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<String>>>);

impl LogCapture {
    /// A logger that writes into this capture (and to standard error too when the
    /// environment has `PLAYER_TEST_LOG`).
    pub fn logger(&self) -> slog::Logger {
        let drain = Capture {
            lines: self.clone(),
            echo: std::env::var_os("PLAYER_TEST_LOG").is_some(),
        };
        slog::Logger::root(Mutex::new(drain).fuse(), slog::o!())
    }

    /// Whether some line contains every one of `parts`.
    pub fn has(&self, parts: &[&str]) -> bool {
        self.0
            .lock()
            .unwrap()
            .iter()
            .any(|l| parts.iter().all(|p| l.contains(p)))
    }

    /// Waits until some line contains `text`; fails with the whole log after [`TIMEOUT`].
    pub fn wait_for(&self, text: &str) {
        self.wait_for_all(&[text]);
    }

    /// Waits until some line contains every one of `parts`; fails with the whole log
    /// after [`TIMEOUT`].
    pub fn wait_for_all(&self, parts: &[&str]) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.has(parts) {
            assert!(
                Instant::now() < deadline,
                "no log line said {parts:?} within {TIMEOUT:?}; the log:\n{}",
                self.dump()
            );
            std::thread::sleep(POLL);
        }
    }

    /// All lines so far, one per line (for failure messages).
    pub fn dump(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }
}

/// One log line being written.
struct Line(String);

impl Serializer for Line {
    fn emit_arguments(&mut self, key: Key, val: &fmt::Arguments) -> slog::Result {
        self.0.push_str(&format!(" {key}={val}"));
        Ok(())
    }
}

/// The drain behind [`LogCapture::logger`].
struct Capture {
    lines: LogCapture,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_until_returns_once_the_condition_holds() {
        let mut calls = 0;
        wait_until(TIMEOUT, "the third call", || {
            calls += 1;
            calls == 3
        });
        assert_eq!(calls, 3);
    }

    #[test]
    #[should_panic(expected = "waiting for nothing")]
    fn wait_until_fails_after_its_deadline() {
        wait_until(Duration::from_millis(50), "nothing", || false);
    }

    #[test]
    fn a_captured_log_line_is_found_with_its_key_values() {
        let log = LogCapture::default();
        let logger = log.logger();
        slog::info!(logger, "robot link lost"; "port" => "/dev/ttyS0");
        log.wait_for("robot link lost");
        assert!(
            log.has(&["INFO robot link lost", "port=/dev/ttyS0"]),
            "{}",
            log.dump()
        );
        assert!(!log.has(&["robot link lost", "port=/dev/ttyS1"]));
    }

    #[test]
    fn text_from_another_thread_is_waited_for() {
        let text = Arc::new(Mutex::new(String::new()));
        let writer = text.clone();
        std::thread::spawn(move || writer.lock().unwrap().push_str("listening on 6665\n"));
        wait_for_text(&text, "listening", TIMEOUT);
    }
}
