//! The log's limits, rule by rule, on given instants where the rule is about time.

use super::*;
use slog::{o, Logger};
use std::fmt::Write as _;

/// A drain keeping each line as `message key=value ...` (the record's values, then the
/// logger's).
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

struct Text(String);

impl slog::Serializer for Text {
    fn emit_arguments(&mut self, k: slog::Key, v: &std::fmt::Arguments) -> slog::Result {
        let _ = write!(self.0, " {k}={v}");
        Ok(())
    }
}

impl Drain for Lines {
    type Ok = ();
    type Err = slog::Never;
    fn log(&self, r: &Record, values: &OwnedKVList) -> Result<(), slog::Never> {
        let mut s = Text(format!("{}", r.msg()));
        let _ = slog::KV::serialize(&r.kv(), r, &mut s);
        let _ = slog::KV::serialize(values, r, &mut s);
        self.0.lock().unwrap().push(s.0);
        Ok(())
    }
}

fn limits(client_burst: u32, place_burst: u32) -> (Limits<Lines>, Lines) {
    let lines = Lines::default();
    let config = LimitsConfig {
        client_burst,
        client_total: 1000,
        client_window: Duration::from_secs(10),
        place_burst,
        place_window: Duration::from_secs(1),
    };
    (Limits::new(lines.clone(), config), lines)
}

const HERE: Place = ("session.rs", 10);
const THERE: Place = ("registry.rs", 20);

#[test]
fn a_client_over_its_burst_at_one_place_is_folded_and_the_count_rides_its_next_line() {
    let (l, _) = limits(2, 1000);
    let t0 = Instant::now();
    let c = || Some("127.0.0.1:4000".to_string());
    assert_eq!(l.admit(c(), HERE, t0), Some((0, 0)));
    assert_eq!(l.admit(c(), HERE, t0), Some((0, 0)));
    assert_eq!(l.admit(c(), HERE, t0), None);
    assert_eq!(l.admit(c(), HERE, t0), None);
    // Another place of the same client has its own burst, and carries the fold.
    assert_eq!(l.admit(c(), THERE, t0), Some((2, 0)));
    assert_eq!(l.admit(c(), HERE, t0 + Duration::from_secs(9)), None);
    // A window later the place lets lines through again.
    let later = t0 + Duration::from_secs(10);
    assert_eq!(l.admit(c(), HERE, later), Some((1, 0)));
}

#[test]
fn a_client_over_its_total_is_folded_whatever_the_place() {
    let lines = Lines::default();
    let config = LimitsConfig {
        client_total: 3,
        ..LimitsConfig::default()
    };
    let l = Limits::new(lines, config);
    let t0 = Instant::now();
    let c = || Some("10.0.0.1:1".to_string());
    for line in 1..=3 {
        assert!(l.admit(c(), ("a.rs", line), t0).is_some());
    }
    assert_eq!(l.admit(c(), ("a.rs", 4), t0), None);
    assert_eq!(l.admit(c(), ("a.rs", 5), t0), None);
    assert!(l
        .admit(Some("10.0.0.2:1".into()), ("a.rs", 5), t0)
        .is_some());
    let later = t0 + CLIENT_WINDOW;
    assert_eq!(l.admit(c(), ("a.rs", 6), later), Some((2, 0)));
}

#[test]
fn every_connection_of_a_host_shares_its_allowance_and_hosts_are_apart() {
    let (l, _) = limits(1, 1000);
    let t0 = Instant::now();
    let name = |s: &str| Some(s.to_string());
    assert_eq!(l.admit(name("10.0.0.1:1000"), HERE, t0), Some((0, 0)));
    assert_eq!(l.admit(name("10.0.0.1:1001"), HERE, t0), None, "same host");
    assert_eq!(l.admit(name("10.0.0.2:1000"), HERE, t0), Some((0, 0)));
    assert_eq!(l.admit(name("web 10.0.0.1:7"), HERE, t0), Some((0, 0)));
    assert_eq!(l.admit(name("web 10.0.0.1:8"), HERE, t0), None);
    assert_eq!(l.admit(name("ros2"), HERE, t0), Some((0, 0)));
    assert_eq!(client_key("[::1]:6665"), "::1");
    assert_eq!(client_key("web [2001:db8::1]:443"), "web 2001:db8::1");
    assert_eq!(client_key("zenoh"), "zenoh");
    assert_eq!(client_key(&"x".repeat(500)).len(), MAX_NAME);
}

#[test]
fn a_line_naming_no_client_is_held_only_by_its_place() {
    let (l, _) = limits(1, 3);
    let t0 = Instant::now();
    for _ in 0..3 {
        assert_eq!(l.admit(None, HERE, t0), Some((0, 0)));
    }
    assert_eq!(l.admit(None, HERE, t0), None);
    assert_eq!(l.admit(None, HERE, t0), None);
    assert_eq!(l.admit(None, THERE, t0), Some((0, 0)));
    let later = t0 + Duration::from_secs(1);
    assert_eq!(l.admit(None, HERE, later), Some((0, 2)));
}

#[test]
fn clients_together_are_held_by_the_place_and_a_fold_waits_for_the_next_line() {
    let (l, _) = limits(5, 2);
    let t0 = Instant::now();
    let c = |n: u32| Some(format!("10.0.0.{n}:1"));
    assert!(l.admit(c(1), HERE, t0).is_some());
    assert!(l.admit(c(2), HERE, t0).is_some());
    assert_eq!(l.admit(c(3), HERE, t0), None, "the place's burst is spent");
    let later = t0 + Duration::from_secs(1);
    assert_eq!(l.admit(c(3), HERE, later), Some((0, 1)));
}

#[test]
fn tracked_clients_are_bounded_and_the_rest_share_one_allowance() {
    let (l, _) = limits(1, u32::MAX);
    let t0 = Instant::now();
    for n in 0..MAX_CLIENTS as u32 {
        let name = format!("10.{}.{}.{}:1", n >> 16, (n >> 8) & 255, n & 255);
        assert!(l.admit(Some(name), HERE, t0).is_some());
    }
    assert!(l.admit(Some("192.0.2.1:1".into()), HERE, t0).is_some());
    assert_eq!(l.admit(Some("192.0.2.2:1".into()), HERE, t0), None);
    assert_eq!(l.state().clients.len(), MAX_CLIENTS + 1);
    // Once their windows are over, the idle ones are forgotten to make room.
    let later = t0 + Duration::from_secs(10);
    assert_eq!(
        l.admit(Some("192.0.2.3:1".into()), HERE, later),
        Some((0, 0))
    );
    assert!(l.state().clients.len() < 10, "{}", l.state().clients.len());
}

#[test]
fn a_client_that_falls_silent_with_lines_folded_gets_a_line_saying_how_many() {
    let (l, lines) = limits(1, 1000);
    let t0 = Instant::now();
    let c = || Some("10.0.0.9:5".to_string());
    assert!(l.admit(c(), HERE, t0).is_some());
    for _ in 0..7 {
        assert_eq!(l.admit(c(), HERE, t0), None);
    }
    l.flush(t0 + Duration::from_secs(9));
    assert!(lines.all().is_empty(), "not before a window has passed");
    l.flush(t0 + Duration::from_secs(10));
    assert_eq!(lines.all(), ["log lines folded client=10.0.0.9 folded=7"]);
    l.flush(t0 + Duration::from_secs(30));
    assert_eq!(lines.all().len(), 1, "said once");
    assert!(l.state().clients.is_empty(), "then forgotten");
}

#[test]
fn the_flusher_thread_sleeps_while_no_client_is_tracked_and_reports_folds_once_one_is() {
    let lines = Lines::default();
    let config = LimitsConfig {
        client_burst: 1,
        client_total: 1000,
        client_window: Duration::from_millis(300),
        place_burst: 1000,
        place_window: Duration::from_secs(1),
    };
    let l = Limits::with_flusher(lines.clone(), config);
    // Nobody tracked: the thread is parked on its condition variable (no timer); a client
    // with lines folded wakes it, and a second later it reports them.
    std::thread::sleep(Duration::from_millis(200));
    let c = || Some("10.0.0.7:5".to_string());
    assert!(l.admit(c(), HERE, Instant::now()).is_some());
    assert_eq!(l.admit(c(), HERE, Instant::now()), None);
    let deadline = Instant::now() + Duration::from_secs(10);
    while lines.all().is_empty() {
        assert!(Instant::now() < deadline, "the fold was never reported");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(lines.all(), ["log lines folded client=10.0.0.7 folded=1"]);
    // Forgotten once idle: the thread parks again, and wakes for the next client.
    while !l.state().clients.is_empty() {
        assert!(Instant::now() < deadline, "the client was never forgotten");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(l.admit(c(), HERE, Instant::now()).is_some());
    assert_eq!(l.admit(c(), HERE, Instant::now()), None);
    while lines.all().len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the second fold was never reported"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn records_through_a_logger_carry_the_counts_and_are_attributed_by_client_or_opener() {
    let (l, lines) = limits(2, 1000);
    let log = Logger::root(l.clone(), o!());
    let session = log.new(o!("client" => "127.0.0.1:40000"));
    for i in 0..4 {
        slog::warn!(session, "unknown message type; skipped"; "i" => i);
    }
    slog::info!(session, "client disconnected");
    // A driver's line about a link a client's request opened counts as that client's.
    let link = log.new(o!("opened_by" => "127.0.0.1:40001"));
    for _ in 0..3 {
        slog::info!(link, "laser streaming");
    }
    let got = lines.all();
    assert_eq!(got.len(), 5, "{got:?}");
    assert!(got[0].starts_with("unknown message type; skipped i=0"));
    assert!(
        got[2].starts_with("client disconnected folded=2"),
        "{got:?}"
    );
    assert!(got[4].starts_with("laser streaming opened_by="), "{got:?}");
}

/// A queue that takes `room` records, then refuses.
struct Queue {
    room: Mutex<usize>,
    lines: Lines,
}

impl Drain for Queue {
    type Ok = ();
    type Err = slog_async::AsyncError;
    fn log(&self, r: &Record, v: &OwnedKVList) -> Result<(), slog_async::AsyncError> {
        let mut room = self.room.lock().unwrap();
        if *room == 0 {
            return Err(slog_async::AsyncError::Full);
        }
        *room -= 1;
        let _ = self.lines.log(r, v);
        Ok(())
    }
}

#[test]
fn a_full_queue_loses_records_counted_and_says_how_many_at_most_once_a_second() {
    let lines = Lines::default();
    let queue = Queue {
        room: Mutex::new(2),
        lines: lines.clone(),
    };
    let o = Arc::new(Overflow::new(queue));
    let log = Logger::root(o.clone(), o!());
    for i in 0..10 {
        slog::info!(log, "busy"; "i" => i);
    }
    assert_eq!(o.dropped(), 8);
    *o.inner.room.lock().unwrap() = 100;
    slog::info!(log, "room again");
    slog::info!(log, "and more");
    for _ in 0..5 {
        *o.inner.room.lock().unwrap() = 0;
        slog::info!(log, "lost");
        *o.inner.room.lock().unwrap() = 100;
        slog::info!(log, "kept");
    }
    let got = lines.all();
    let reports: Vec<&String> = got.iter().filter(|l| l.contains("dropped")).collect();
    assert_eq!(
        reports,
        ["log records dropped: the log writer could not keep up count=8"],
        "{got:?}"
    );
    assert_eq!(o.dropped(), 5, "the next report waits a second");
    std::thread::sleep(Duration::from_millis(1000));
    slog::info!(log, "a second later");
    assert!(lines.all().iter().any(|l| l.ends_with("count=5")));
}
