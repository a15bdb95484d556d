//! Logging: slog with a terminal drain on standard error, written by a background thread
//! so that a slow terminal never delays a client, plus the tools that keep the log readable
//! under attack: [`Throttle`] (per-client, per-kind rate limits with a count of what was
//! suppressed) and [`code`]/[`escape`] (bytes from the wire printed escaped, never raw, so
//! a client cannot split or forge a log line).

use slog::{o, BorrowedKV, Drain, Level, Logger, OwnedKVList, Record, RecordStatic, SingleKV};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A logger printing to standard error at info level, or debug level when `debug` is set.
/// Debug records are compiled into release builds too (`-debug` works there). When the
/// terminal cannot keep up, the background drain drops records and reports how many it
/// dropped in a line of its own, so nothing is lost silently.
pub fn terminal(debug: bool) -> Logger {
    let decorator = slog_term::TermDecorator::new().stderr().build();
    let drain = slog_term::FullFormat::new(decorator).build().fuse();
    let drain = Backstop::new(drain, Duration::from_secs(1), 50).fuse();
    let drain = slog_async::Async::new(drain)
        .chan_size(16384)
        .overflow_strategy(slog_async::OverflowStrategy::DropAndReport)
        .build()
        .fuse();
    let level = if debug { Level::Debug } else { Level::Info };
    Logger::root(drain.filter_level(level).fuse(), o!())
}

/// A logger that discards everything (for embedding and tests).
pub fn discard() -> Logger {
    Logger::root(slog::Discard, o!())
}

pub use player_kit::log::{code, device, escape, Throttle};

/// The log's last line of defence against floods: at most `burst` records per `window`
/// from one place in the code (file and line), whoever causes them; the records over
/// that are counted, and the next one let through from that place carries the count as
/// `suppressed_here`. Per-client limits ([`Throttle`]) come first; this catches what no
/// one limited (a driver's warning about every bad config, say).
pub struct Backstop<D> {
    inner: D,
    window: Duration,
    burst: u32,
    places: Mutex<HashMap<Place, Window>>,
}

/// A place in the code: file and line.
type Place = (&'static str, u32);
/// A window's start, records let through in it, records dropped since the last one let
/// through.
type Window = (Instant, u32, u64);

impl<D> Backstop<D> {
    /// Wraps `inner`.
    pub fn new(inner: D, window: Duration, burst: u32) -> Self {
        Backstop {
            inner,
            window,
            burst,
            places: Mutex::new(HashMap::new()),
        }
    }
}

impl<D: Drain> Drain for Backstop<D> {
    type Ok = Option<D::Ok>;
    type Err = D::Err;

    fn log(&self, record: &Record, values: &OwnedKVList) -> Result<Self::Ok, Self::Err> {
        let key = (record.file(), record.line());
        let suppressed = {
            let mut places = self.places.lock().unwrap_or_else(|e| e.into_inner());
            if places.len() > 4096 {
                places.clear();
            }
            let now = Instant::now();
            let p = places.entry(key).or_insert((now, 0, 0));
            if now.duration_since(p.0) >= self.window {
                p.0 = now;
                p.1 = 0;
            }
            if p.1 >= self.burst {
                p.2 += 1;
                return Ok(None);
            }
            p.1 += 1;
            std::mem::take(&mut p.2)
        };
        if suppressed == 0 {
            return self.inner.log(record, values).map(Some);
        }
        let rs = RecordStatic {
            location: record.location(),
            tag: record.tag(),
            level: record.level(),
        };
        let kv = (SingleKV::from(("suppressed_here", suppressed)), record.kv());
        let r = Record::new(&rs, record.msg(), BorrowedKV(&kv));
        self.inner.log(&r, values).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    #[test]
    fn control_bytes_are_escaped() {
        assert_eq!(code(b'p'), "'p'");
        assert_eq!(code(b'\n'), "0x0a");
        assert_eq!(code(0xff), "0xff");
        assert_eq!(escape(b"ab\ncd\\", 64), "ab\\x0acd\\x5c");
        assert_eq!(escape(b"abcdef", 3), "abc... (6 bytes)");
    }

    #[test]
    fn the_backstop_counts_what_it_drops_per_place() {
        use std::sync::Arc;
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<String>>>);
        impl Drain for Lines {
            type Ok = ();
            type Err = slog::Never;
            fn log(&self, r: &Record, _: &OwnedKVList) -> Result<(), slog::Never> {
                struct S(String);
                impl slog::Serializer for S {
                    fn emit_arguments(
                        &mut self,
                        k: slog::Key,
                        v: &std::fmt::Arguments,
                    ) -> slog::Result {
                        let _ = write!(self.0, " {k}={v}");
                        Ok(())
                    }
                }
                let mut s = S(format!("{}", r.msg()));
                let _ = slog::KV::serialize(&r.kv(), r, &mut s);
                self.0.lock().unwrap().push(s.0);
                Ok(())
            }
        }
        let lines = Lines::default();
        let log = Logger::root(
            Backstop::new(lines.clone(), Duration::from_millis(300), 3).fuse(),
            o!(),
        );
        let flood = |i: i32| slog::warn!(log, "flood"; "i" => i);
        for i in 0..10 {
            flood(i);
        }
        slog::warn!(log, "elsewhere");
        std::thread::sleep(Duration::from_millis(350));
        flood(10);
        let got = lines.0.lock().unwrap().clone();
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got[3], "elsewhere");
        assert!(got[4].contains("suppressed_here=7"), "{got:?}");
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
