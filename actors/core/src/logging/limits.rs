//! The log's limits, applied where a record is made, before it takes a place in the log
//! writer's queue: no client, however busy, can fill that queue or the log.
//!
//! - **Per client** ([`Limits`]): a record that names a client (its `client` value, or
//!   `opened_by` for the lines of a device or link a client's request opened) is one of that
//!   client's lines. A client is its address without the port (every connection from a host
//!   shares one allowance, so reconnecting gains nothing), or the front end's name for one.
//!   Each client may log [`CLIENT_BURST`] lines from each place in the code (file and line),
//!   and [`CLIENT_TOTAL`] in all, per [`CLIENT_WINDOW`]; the rest are folded: counted, and
//!   the next line of that client that gets through carries the count as `folded`. A client that has lines folded and then
//!   falls silent gets a line of its own saying how many ("log lines folded"), one window
//!   after its last line, from a background thread (which sleeps without a timer while no
//!   client is tracked: an idle server does not wake for it). At most [`MAX_CLIENTS`] are tracked;
//!   past that, new ones share one allowance ("other clients").
//! - **Per place** (the backstop): whoever causes them, at most [`PLACE_BURST`] records per
//!   [`PLACE_WINDOW`] from one place; the next one let through carries the count of the
//!   rest as `suppressed_here`.
//! - **The queue** ([`Overflow`]): if the writer still cannot keep up (a terminal slower than
//!   these limits), a record that finds the queue full is counted, and at most once a second
//!   one line says how many were lost ("log records dropped").
//!
//! One mechanism, [`Throttle`], counts both the clients' lines and the places'.

use player_kit::log::Throttle;
use slog::{BorrowedKV, Drain, Level, OwnedKVList, Record, RecordLocation, RecordStatic, SingleKV};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

/// Lines one client may log from one place in the code per [`CLIENT_WINDOW`].
pub const CLIENT_BURST: u32 = 5;
/// Lines one client may log in all per [`CLIENT_WINDOW`]: 4 a second at most, however many
/// places its bytes reach.
pub const CLIENT_TOTAL: u32 = 40;
/// The window of [`CLIENT_BURST`] and [`CLIENT_TOTAL`].
pub const CLIENT_WINDOW: Duration = Duration::from_secs(10);
/// Records one place in the code may log per [`PLACE_WINDOW`], whoever causes them.
pub const PLACE_BURST: u32 = 50;
/// The window of [`PLACE_BURST`].
pub const PLACE_WINDOW: Duration = Duration::from_secs(1);
/// Clients tracked at once; more share one allowance.
pub const MAX_CLIENTS: usize = 4096;
/// The keys that name the client a record is about, in the order they are looked for.
pub const CLIENT_KEYS: [&str; 2] = ["client", "opened_by"];
/// The name of the allowance clients share once [`MAX_CLIENTS`] are tracked.
const OTHER_CLIENTS: &str = "(other clients)";
/// The longest client name kept (names come from the code, but a front end may build one
/// from what a peer sent).
const MAX_NAME: usize = 64;

/// A place in the code: file and line.
type Place = (&'static str, u32);

/// How a [`Limits`] counts.
#[derive(Debug, Clone, Copy)]
pub struct LimitsConfig {
    /// Lines per client and place per `client_window`.
    pub client_burst: u32,
    /// Lines per client in all per `client_window`.
    pub client_total: u32,
    /// See `client_burst`.
    pub client_window: Duration,
    /// Records per place per `place_window`.
    pub place_burst: u32,
    /// See `place_burst`.
    pub place_window: Duration,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            client_burst: CLIENT_BURST,
            client_total: CLIENT_TOTAL,
            client_window: CLIENT_WINDOW,
            place_burst: PLACE_BURST,
            place_window: PLACE_WINDOW,
        }
    }
}

/// One client's allowance.
struct Client {
    throttle: Throttle<Place>,
    /// Its lines in all (one kind).
    total: Throttle<()>,
    /// Lines folded since its last line that got through.
    folded: u64,
    /// When its last line got through (or its fold was reported).
    last: Instant,
}

struct State {
    clients: HashMap<String, Client>,
    places: Throttle<Place>,
}

struct Shared<D> {
    inner: D,
    config: LimitsConfig,
    state: Mutex<State>,
    /// Wakes the flusher thread (if any) when a first client is tracked, and when these
    /// limits go.
    park: Arc<Park>,
}

/// Where the flusher thread sleeps while no client is tracked.
#[derive(Default)]
struct Park {
    /// A client came (or the limits went) since the thread last looked.
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Park {
    fn wake(&self) {
        *self.woken.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_one();
    }
}

impl<D> Drop for Shared<D> {
    fn drop(&mut self) {
        self.park.wake();
    }
}

/// The per-client and per-place limits in front of `D` (see the module's documentation).
/// Clones share their counts.
pub struct Limits<D>(Arc<Shared<D>>);

impl<D> Clone for Limits<D> {
    fn clone(&self) -> Self {
        Limits(self.0.clone())
    }
}

impl<D: Drain<Ok = (), Err = slog::Never> + Send + Sync + 'static> Limits<D> {
    /// The limits of `config` in front of `inner`, without the background thread that
    /// reports the folds of silent clients (call [`Limits::flush`] for that).
    pub fn new(inner: D, config: LimitsConfig) -> Self {
        Limits(Arc::new(Shared {
            inner,
            config,
            state: Mutex::new(State {
                clients: HashMap::new(),
                places: Throttle::new(config.place_window, config.place_burst),
            }),
            park: Arc::default(),
        }))
    }

    /// [`Limits::new`] with a thread that calls [`Limits::flush`] every second while some
    /// client is tracked, and sleeps without a timer while none is, for as long as a clone
    /// of these limits lives.
    pub fn with_flusher(inner: D, config: LimitsConfig) -> Self {
        let limits = Limits::new(inner, config);
        let weak: Weak<Shared<D>> = Arc::downgrade(&limits.0);
        let park = limits.0.park.clone();
        let _ = std::thread::Builder::new()
            .name("log-limits".into())
            .spawn(move || loop {
                // Cleared before looking, so a client tracked after the look wakes the wait.
                *park.woken.lock().unwrap_or_else(|e| e.into_inner()) = false;
                let tracking = match weak.upgrade() {
                    Some(shared) => !shared
                        .state
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .clients
                        .is_empty(),
                    None => return,
                };
                if tracking {
                    std::thread::sleep(Duration::from_secs(1));
                    match weak.upgrade() {
                        Some(shared) => Limits(shared).flush(Instant::now()),
                        None => return,
                    }
                } else {
                    let woken = park.woken.lock().unwrap_or_else(|e| e.into_inner());
                    drop(
                        park.cv
                            .wait_while(woken, |w| !*w)
                            .unwrap_or_else(|e| e.into_inner()),
                    );
                }
            });
        limits
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Says, for each client whose lines were folded and who has logged nothing for a
    /// client window, how many ("log lines folded"), and forgets clients with nothing to
    /// count any more.
    pub fn flush(&self, now: Instant) {
        let window = self.0.config.client_window;
        let due: Vec<(String, u64)> = {
            let mut st = self.state();
            let due = st
                .clients
                .iter_mut()
                .filter(|(_, c)| c.folded > 0 && now.duration_since(c.last) >= window)
                .map(|(name, c)| {
                    c.last = now;
                    (name.clone(), std::mem::take(&mut c.folded))
                })
                .collect();
            st.clients
                .retain(|_, c| c.folded > 0 || !(c.throttle.idle(now) && c.total.idle(now)));
            due
        };
        static FOLDED: RecordLocation = RecordLocation {
            file: file!(),
            line: line!(),
            column: column!(),
            function: "",
            module: module_path!(),
        };
        let rs = RecordStatic {
            location: &FOLDED,
            tag: "",
            level: Level::Info,
        };
        for (client, folded) in due {
            let kv = (
                SingleKV::from(("client", client.as_str())),
                SingleKV::from(("folded", folded)),
            );
            let args = format_args!("log lines folded");
            let r = Record::new(&rs, &args, BorrowedKV(&kv));
            let _ = self.0.inner.log(&r, &OwnedKVList::from(slog::o!()));
        }
    }

    /// The counts a record may carry, or `None` if it is held back.
    fn admit(&self, client: Option<String>, place: Place, now: Instant) -> Option<(u64, u64)> {
        let mut st = self.state();
        let mut folded = 0;
        let mut key = None;
        if let Some(name) = client {
            let mut name = client_key(&name);
            if !st.clients.contains_key(&name) && st.clients.len() >= MAX_CLIENTS {
                st.clients
                    .retain(|_, c| c.folded > 0 || !(c.throttle.idle(now) && c.total.idle(now)));
                if st.clients.len() >= MAX_CLIENTS {
                    name = OTHER_CLIENTS.to_string();
                }
            }
            let config = self.0.config;
            if st.clients.is_empty() {
                // The first client tracked: the flusher thread has work again.
                self.0.park.wake();
            }
            let c = st.clients.entry(name.clone()).or_insert_with(|| Client {
                throttle: Throttle::new(config.client_window, config.client_burst),
                total: Throttle::new(config.client_window, config.client_total),
                folded: 0,
                last: now,
            });
            if c.throttle.allow_at(place, now).is_none() || c.total.allow_at((), now).is_none() {
                c.folded += 1;
                return None;
            }
            folded = std::mem::take(&mut c.folded);
            c.last = now;
            key = Some(name);
        }
        match st.places.allow_at(place, now) {
            Some(suppressed) => Some((folded, suppressed)),
            None => {
                // Held back by the backstop: counted there; the client's fold waits for its
                // next line.
                if let Some(c) = key.and_then(|k| st.clients.get_mut(&k)) {
                    c.folded += folded;
                }
                None
            }
        }
    }
}

impl<D: Drain<Ok = (), Err = slog::Never> + Send + Sync + 'static> Drain for Limits<D> {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record, values: &OwnedKVList) -> Result<(), slog::Never> {
        let client = client_of(record, values);
        let Some((folded, suppressed)) =
            self.admit(client, (record.file(), record.line()), Instant::now())
        else {
            return Ok(());
        };
        if folded == 0 && suppressed == 0 {
            return self.0.inner.log(record, values);
        }
        let rs = RecordStatic {
            location: record.location(),
            tag: record.tag(),
            level: record.level(),
        };
        let counts = (
            SingleKV::from(("folded", folded)),
            SingleKV::from(("suppressed_here", suppressed)),
        );
        match (folded, suppressed) {
            (0, _) => {
                let kv = (counts.1, record.kv());
                let r = Record::new(&rs, record.msg(), BorrowedKV(&kv));
                self.0.inner.log(&r, values)
            }
            (_, 0) => {
                let kv = (counts.0, record.kv());
                let r = Record::new(&rs, record.msg(), BorrowedKV(&kv));
                self.0.inner.log(&r, values)
            }
            _ => {
                let kv = (counts, record.kv());
                let r = Record::new(&rs, record.msg(), BorrowedKV(&kv));
                self.0.inner.log(&r, values)
            }
        }
    }
}

/// The name a client's lines are counted under: its address without the port (`web
/// 192.0.2.7:40112` counts as `web 192.0.2.7`), or the name as given.
pub fn client_key(name: &str) -> String {
    let (prefix, last) = match name.rsplit_once(' ') {
        Some((p, l)) => (Some(p), l),
        None => (None, name),
    };
    let key = match (prefix, last.parse::<std::net::SocketAddr>()) {
        (None, Ok(a)) => a.ip().to_string(),
        (Some(p), Ok(a)) => format!("{p} {}", a.ip()),
        _ => name.to_string(),
    };
    match key.char_indices().nth(MAX_NAME) {
        Some((cut, _)) => key[..cut].to_string(),
        None => key,
    }
}

/// Finds the first of [`CLIENT_KEYS`] among a record's values, then its logger's.
struct FindClient(Option<String>);

impl slog::Serializer for FindClient {
    fn emit_arguments(&mut self, key: slog::Key, val: &std::fmt::Arguments) -> slog::Result {
        if self.0.is_none() && CLIENT_KEYS.contains(&key) {
            // An empty name is the server itself (closing every device as it stops).
            let name = val.to_string();
            if !name.is_empty() {
                self.0 = Some(name);
            }
        }
        Ok(())
    }
}

/// The client a record is about, if it names one.
fn client_of(record: &Record, values: &OwnedKVList) -> Option<String> {
    let mut find = FindClient(None);
    let _ = slog::KV::serialize(&record.kv(), record, &mut find);
    if find.0.is_none() {
        let _ = slog::KV::serialize(values, record, &mut find);
    }
    find.0
}

/// The log writer's queue, with what it cannot take counted rather than lost without a
/// word: the next record after a loss, at most once a second, is preceded by an error
/// line "log records dropped: the log writer could not keep up" with the count.
pub struct Overflow<D> {
    inner: D,
    dropped: AtomicU64,
    reported: Mutex<Option<Instant>>,
}

impl<D> Overflow<D> {
    /// Counts what `inner` refuses.
    pub fn new(inner: D) -> Self {
        Overflow {
            inner,
            dropped: AtomicU64::new(0),
            reported: Mutex::new(None),
        }
    }

    /// Records lost and not yet reported.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

impl<D: Drain<Ok = ()>> Overflow<D> {
    fn report(&self, values: &OwnedKVList) {
        if self.dropped.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut last = self.reported.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            return;
        }
        let n = self.dropped.swap(0, Ordering::Relaxed);
        static DROPPED: RecordLocation = RecordLocation {
            file: file!(),
            line: line!(),
            column: column!(),
            function: "",
            module: module_path!(),
        };
        let rs = RecordStatic {
            location: &DROPPED,
            tag: "",
            level: Level::Error,
        };
        let kv = SingleKV::from(("count", n));
        let args = format_args!("log records dropped: the log writer could not keep up");
        match self
            .inner
            .log(&Record::new(&rs, &args, BorrowedKV(&kv)), values)
        {
            Ok(()) => *last = Some(now),
            Err(_) => {
                self.dropped.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}

impl<D: Drain<Ok = ()>> Drain for Overflow<D> {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record, values: &OwnedKVList) -> Result<(), slog::Never> {
        self.report(values);
        if self.inner.log(record, values).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
