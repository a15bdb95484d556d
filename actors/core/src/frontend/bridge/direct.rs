//! Publishing a bridge's readings on the thread that has them: [`Direct`], a subscriber
//! (a [`DataSink`]) that the registry and the drivers call for every reading, which
//! encodes it and hands it to the network library at once, with no hand-off to the
//! bridge's robot actor.
//!
//! A reading sent to the robot actor as a message crosses threads: the actor's arbiter is
//! woken (a context switch and its scheduling latency, 15-25 us on a virtual machine),
//! and the actor then publishes it. Measured against a plain program that publishes the
//! same bytes from the thread that has them, that hand-off was most of the bridges' extra
//! cost per message and of their extra latency (docs/performance.md, "Where the time
//! goes"). With a [`Direct`] the robot actor still decides what is read (its registry
//! session, its wants, its commands) and owns the publishers; the readings skip it.
//!
//! What a [`Direct`] calls must never wait: it runs on the registry's thread, whose TCP
//! clients and drivers would wait with it. The network's put must drop rather than wait
//! for a free batch (Zenoh: congestion control "drop" with `wait_before_drop` 0, and a
//! transmit queue long enough for a burst); encoding is the only work.
//!
//! Until the actor attaches its publishers ([`Direct::attach`]) the newest reading per
//! device is kept (at most one per device code, so at most 256) and published when they
//! come: a device that publishes once (a map, a configuration) is not lost to the order in
//! which the network's matching callbacks and the declaration's end arrive.

use player_kit::driver::{DataSink, DeviceData, DeviceDataBatch};
use player_kit::fresh::SeqGate;
use player_kit::log::{code as show, Throttle};
use slog::{warn, Logger};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What publishes one reading on the calling thread: a bridge's publishers with their
/// encoding.
pub trait PublishNow: Send + Sync + 'static {
    /// Publishes `d` now, without waiting on the network: how many samples went out, or
    /// why it failed (a warning, at most five per 10 s).
    fn publish_now(&self, d: &DeviceData) -> Result<u64, String>;
}

/// The publishers (once attached), the readings waiting for them, and the newest reading
/// taken per device.
struct State<P> {
    publishers: Option<Arc<P>>,
    waiting: HashMap<u8, DeviceData>,
    taken: HashMap<u8, SeqGate>,
}

/// A bridge's readings published on the publishing thread (see the module's docs).
pub struct Direct<P> {
    state: Mutex<State<P>>,
    published: AtomicU64,
    log: Logger,
    throttle: Mutex<Throttle>,
    /// The front end, in warnings.
    name: &'static str,
}

impl<P: PublishNow> Direct<P> {
    /// Nothing attached yet; `name` is the front end's in warnings.
    pub fn new(name: &'static str, log: Logger) -> Arc<Self> {
        Arc::new(Direct {
            state: Mutex::new(State {
                publishers: None,
                waiting: HashMap::new(),
                taken: HashMap::new(),
            }),
            published: AtomicU64::new(0),
            log,
            throttle: Mutex::new(Throttle::new(Duration::from_secs(10), 5)),
            name,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<P>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The publishers are declared: what waited for them is published now (on the caller's
    /// thread, the actor's).
    pub fn attach(&self, publishers: P) {
        let p = Arc::new(publishers);
        let waiting = {
            let mut s = self.lock();
            s.publishers = Some(p.clone());
            std::mem::take(&mut s.waiting)
        };
        for d in waiting.values() {
            self.put(&p, d);
        }
    }

    /// The actor leaves: nothing more is published, the publishers are dropped (once no
    /// reading is being published with them).
    pub fn detach(&self) {
        let mut s = self.lock();
        s.publishers = None;
        s.waiting.clear();
    }

    /// Samples published so far.
    pub fn published(&self) -> u64 {
        self.published.load(Ordering::Relaxed)
    }

    /// One reading: published if it is new (the kit's rule: the registry hands a new
    /// reader the newest reading, which it may have had), kept if the publishers are not
    /// there yet.
    fn take(&self, d: &DeviceData) {
        let p = {
            let mut s = self.lock();
            if s.taken
                .entry(d.device)
                .or_default()
                .take(d.stamp())
                .is_none()
            {
                return;
            }
            match &s.publishers {
                Some(p) => p.clone(),
                None => {
                    s.waiting.insert(d.device, d.clone());
                    return;
                }
            }
        };
        self.put(&p, d);
    }

    fn put(&self, p: &P, d: &DeviceData) {
        match p.publish_now(d) {
            Ok(n) => {
                self.published.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => {
                let allowed = self
                    .throttle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .allow("put");
                if let Some(unlogged) = allowed {
                    warn!(self.log, "{}: publish failed", self.name; "device" => show(d.device),
                        "error" => e, "unlogged" => unlogged);
                }
            }
        }
    }
}

impl<P: PublishNow> DataSink for Direct<P> {
    fn single(&self, d: DeviceData) {
        self.take(&d);
    }

    fn batch(&self, b: DeviceDataBatch) {
        for d in b.0.iter() {
            self.take(d);
        }
    }
}

impl<T: PublishNow> PublishNow for Arc<T> {
    fn publish_now(&self, d: &DeviceData) -> Result<u64, String> {
        (**self).publish_now(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use player_kit::driver::Timestamp;

    /// Publishes into a list.
    #[derive(Default)]
    struct Into(Mutex<Vec<(u8, u64)>>);

    impl PublishNow for Into {
        fn publish_now(&self, d: &DeviceData) -> Result<u64, String> {
            self.0.lock().unwrap().push((d.device, d.seq));
            Ok(1)
        }
    }

    fn reading(device: u8, seq: u64) -> DeviceData {
        DeviceData {
            device,
            seq,
            data: Bytes::from(vec![seq as u8]),
            timestamp: Timestamp {
                sec: 1,
                usec: seq as u32,
            },
        }
    }

    #[test]
    fn readings_wait_for_the_publishers_then_go_once_each_and_none_after_detach() {
        let log = Logger::root(slog::Discard, slog::o!());
        let d: Arc<Direct<Arc<Into>>> = Direct::new("test", log);
        d.single(reading(b'p', 1));
        d.single(reading(b'p', 2));
        d.batch(DeviceDataBatch(Arc::new([reading(b'l', 1)])));
        let sink = Arc::new(Into::default());
        d.attach(sink.clone());
        let mut got = sink.0.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, [(b'l', 1), (b'p', 2)], "the newest per device waited");
        d.single(reading(b'p', 2));
        d.single(reading(b'p', 3));
        assert_eq!(
            sink.0.lock().unwrap().len(),
            3,
            "the same reading again is not new"
        );
        assert_eq!(d.published(), 3);
        d.detach();
        d.single(reading(b'p', 4));
        assert_eq!(
            sink.0.lock().unwrap().len(),
            3,
            "detached: nothing published"
        );
    }
}
