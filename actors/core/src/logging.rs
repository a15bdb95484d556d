//! Logging: slog with a terminal drain on standard error, written by a background thread
//! so that a slow terminal never delays a client, plus the tools that keep the log readable
//! under attack: [`limits`] (every line that names a client is limited per client and
//! place in the code, every place as a whole too, before it is queued, with counts of what
//! was folded; a full queue is counted and reported, never silent) and [`code`]/[`escape`]
//! (bytes from the wire printed escaped, never raw, so a client cannot split or forge a log
//! line).
//!
//! Under systemd ([`Output::detect`]): no colour codes when standard error is not a
//! terminal, and when it is the journal's stream (`JOURNAL_STREAM`), each line starts with
//! its syslog priority (`<3>` error .. `<7>` debug) and carries no timestamp of its own, so
//! `journalctl -p warning` selects by level. The level can change while the server runs
//! ([`LogLevel`], a reload on SIGHUP).

pub mod limits;

pub use limits::{Limits, LimitsConfig, Overflow};
use slog::{o, Drain, Level, Logger, OwnedKVList, Record};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A logger printing to standard error at info level, or debug level when `debug` is set.
/// Debug records are compiled into release builds too (`-debug` works there). Records pass
/// the log's [`limits`] before they are queued for the writer; if the terminal still cannot
/// keep up, what the queue cannot take is counted and reported once a second at most, so
/// nothing is lost silently.
pub fn terminal(debug: bool) -> Logger {
    stderr(debug, Output::detect()).0
}

/// How log lines are written to standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// A terminal: timestamps, colours.
    Terminal,
    /// A file or pipe: timestamps, no colour codes.
    Plain,
    /// The systemd journal's stream: `<priority>` prefixes, no timestamps.
    Journal,
}

impl Output {
    /// What standard error is: the journal when `JOURNAL_STREAM` names it (the device and
    /// inode systemd sets, which a redirected standard error no longer matches), else a
    /// terminal or not.
    pub fn detect() -> Output {
        if std::env::var("JOURNAL_STREAM").is_ok_and(|v| is_stderr(&v)) {
            Output::Journal
        } else if std::io::stderr().is_terminal() {
            Output::Terminal
        } else {
            Output::Plain
        }
    }
}

/// Whether `journal_stream` (`DEVICE:INODE`) is the file standard error is open on.
fn is_stderr(journal_stream: &str) -> bool {
    let Some((dev, ino)) = journal_stream.split_once(':') else {
        return false;
    };
    let (Ok(dev), Ok(ino)) = (dev.parse::<u64>(), ino.parse::<u64>()) else {
        return false;
    };
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() else {
        return false;
    };
    std::fs::File::from(fd)
        .metadata()
        .is_ok_and(|m| m.dev() == dev && m.ino() == ino)
}

/// The level a logger made by [`stderr`] lets through, changeable while it runs (a
/// reload on SIGHUP). Clones share it.
#[derive(Debug, Clone, Default)]
pub struct LogLevel(Arc<AtomicBool>);

impl LogLevel {
    /// Debug records pass (`true`) or only info and above.
    pub fn set_debug(&self, debug: bool) {
        self.0.store(debug, Ordering::Relaxed);
    }

    /// Whether debug records pass.
    pub fn debug(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Lets a record through at the level [`LogLevel`] says now.
struct Switched<D> {
    inner: D,
    level: LogLevel,
}

impl<D: Drain> Drain for Switched<D> {
    type Ok = Option<D::Ok>;
    type Err = D::Err;

    fn log(&self, record: &Record, values: &OwnedKVList) -> Result<Self::Ok, Self::Err> {
        let floor = if self.level.debug() {
            Level::Debug
        } else {
            Level::Info
        };
        if record.level().is_at_least(floor) {
            self.inner.log(record, values).map(Some)
        } else {
            Ok(None)
        }
    }
}

/// Records the logging thread may have queued; more are counted and reported
/// ([`Overflow`]). The queue is allocated and touched whole at start (about 100 bytes a
/// record, so 16 384 cost 1.7 MB of resident memory for as long as the server ran); 4096
/// still hold a connect or disconnect line from each of 2000 clients arriving at once
/// twice over, while the thread writes them out in tens of milliseconds.
const LOG_QUEUE: usize = 4096;

/// A logger writing to standard error as `output` says (see [`terminal`]), and the handle
/// that changes its level.
pub fn stderr(debug: bool, output: Output) -> (Logger, LogLevel) {
    match output {
        Output::Journal => limited(JournalFormat, debug),
        Output::Terminal | Output::Plain => {
            let mut decorator = slog_term::TermDecorator::new().stderr();
            if output == Output::Plain {
                decorator = decorator.force_plain();
            }
            let drain = slog_term::FullFormat::new(decorator.build()).build().fuse();
            limited(drain, debug)
        }
    }
}

/// A logger writing to `writer` on a background thread, behind the level switch and the
/// log's [`limits`] (what [`stderr`] builds around its terminal or journal format); the
/// handle that changes its level.
pub fn limited<D>(writer: D, debug: bool) -> (Logger, LogLevel)
where
    D: Drain<Ok = (), Err = slog::Never> + Send + 'static,
{
    let level = LogLevel::default();
    level.set_debug(debug);
    let queue = slog_async::AsyncCore::custom(writer)
        .chan_size(LOG_QUEUE)
        .blocking(false)
        .thread_name("log-writer".into())
        .build();
    let drain = Limits::with_flusher(Overflow::new(queue), LimitsConfig::default());
    let drain = Switched {
        inner: drain,
        level: level.clone(),
    }
    .fuse();
    (Logger::root(drain, o!()), level)
}

/// The syslog priority of a level (`sd-daemon(3)` prefixes).
pub fn priority(level: Level) -> u8 {
    match level {
        Level::Critical => 2,
        Level::Error => 3,
        Level::Warning => 4,
        Level::Info => 6,
        Level::Debug | Level::Trace => 7,
    }
}

/// One journal line per record: `<priority>LEVEL message; key=value, ...` (the journal
/// stamps the time itself).
struct JournalFormat;

/// Gathers a record's key-value pairs as `key=value` text.
struct Pairs(String);

impl slog::Serializer for Pairs {
    fn emit_arguments(&mut self, key: slog::Key, val: &std::fmt::Arguments) -> slog::Result {
        use std::fmt::Write as _;
        let sep = if self.0.is_empty() { "; " } else { ", " };
        let _ = write!(self.0, "{sep}{key}={val}");
        Ok(())
    }
}

/// The journal line of a record (without the newline); values are one line each (the
/// wire's bytes reach the log escaped, [`escape`]), a stray newline is escaped here too.
pub fn journal_line(record: &Record, values: &OwnedKVList) -> String {
    let mut pairs = Pairs(String::new());
    let _ = slog::KV::serialize(&record.kv(), record, &mut pairs);
    let _ = slog::KV::serialize(values, record, &mut pairs);
    let line = format!(
        "<{}>{} {}{}",
        priority(record.level()),
        record.level().as_short_str(),
        record.msg(),
        pairs.0
    );
    line.replace('\n', "\\n")
}

impl Drain for JournalFormat {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record, values: &OwnedKVList) -> Result<(), slog::Never> {
        let mut line = journal_line(record, values);
        line.push('\n');
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
        Ok(())
    }
}

/// A logger that discards everything (for embedding and tests).
pub fn discard() -> Logger {
    Logger::root(slog::Discard, o!())
}

pub use player_kit::log::{code, device, escape, Throttle};

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    #[test]
    fn control_bytes_are_escaped() {
        assert_eq!(code(b'p'), "'p'");
        assert_eq!(code(b'\n'), "0x0a");
        assert_eq!(code(0xff), "0xff");
        assert_eq!(escape(b"ab\ncd\\", 64), "ab\\x0acd\\x5c");
        assert_eq!(escape(b"abcdef", 3), "abc... (6 bytes)");
    }

    #[test]
    fn journal_lines_carry_the_syslog_priority_of_their_level() {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<String>>>);
        impl Drain for Lines {
            type Ok = ();
            type Err = slog::Never;
            fn log(&self, r: &Record, v: &OwnedKVList) -> Result<(), slog::Never> {
                self.0.lock().unwrap().push(journal_line(r, v));
                Ok(())
            }
        }
        let lines = Lines::default();
        let log = Logger::root(lines.clone().fuse(), o!("robot" => "pioneer"));
        slog::error!(log, "cannot open"; "port" => "/dev/ttyS0");
        slog::warn!(log, "watchdog\nforged");
        slog::info!(log, "listening");
        slog::debug!(log, "detail");
        let got = lines.0.lock().unwrap().clone();
        assert_eq!(
            got[0],
            "<3>ERRO cannot open; port=/dev/ttyS0, robot=pioneer"
        );
        assert!(got[1].starts_with("<4>WARN watchdog\\nforged"), "{got:?}");
        assert!(got[2].starts_with("<6>INFO listening"));
        assert!(got[3].starts_with("<7>DEBG detail"));
    }

    #[test]
    fn the_level_switch_changes_what_passes_while_running() {
        #[derive(Clone, Default)]
        struct Count(Arc<Mutex<usize>>);
        impl Drain for Count {
            type Ok = ();
            type Err = slog::Never;
            fn log(&self, _: &Record, _: &OwnedKVList) -> Result<(), slog::Never> {
                *self.0.lock().unwrap() += 1;
                Ok(())
            }
        }
        let count = Count::default();
        let level = LogLevel::default();
        let log = Logger::root(
            Switched {
                inner: count.clone(),
                level: level.clone(),
            }
            .fuse(),
            o!(),
        );
        slog::debug!(log, "hidden");
        slog::info!(log, "shown");
        level.set_debug(true);
        slog::debug!(log, "shown too");
        assert_eq!(*count.0.lock().unwrap(), 2);
    }

    #[test]
    fn journal_stream_must_name_standard_error() {
        assert!(!is_stderr("garbage"));
        assert!(!is_stderr("1:2"));
    }

    #[test]
    fn throttle_counts_what_it_suppresses() {
        let mut t = Throttle::new(Duration::from_millis(200), 2);
        assert_eq!(t.allow("x"), Some(0));
        assert_eq!(t.allow("x"), Some(0));
        assert_eq!(t.allow("x"), None);
        assert_eq!(t.allow("x"), None);
        assert_eq!(t.allow("y"), Some(0), "kinds are separate");
        assert_eq!(t.pending(), 2);
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(t.allow("x"), Some(2));
        assert_eq!(t.pending(), 0);
    }
}
