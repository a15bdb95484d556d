//! The recorder's queue: the drivers hand their readings to it on their own threads,
//! without a message to the recorder and without waking its thread; the recorder takes
//! everything queued at its tick (every `chunk_seconds`, when it closes a chunk anyway) and
//! writes it then. A recorder that woke for every publish paid a thread wake-up and two
//! actor hand-offs (the robot's tap, then the recorder) per batch, more than the writing
//! itself, and took a share of the cores from the sessions' writes at the very moment
//! they were sending the same reading.
//!
//! A reading's log time is taken when it is queued (the recorder's clock, as before, when
//! it came), so what the file says does not depend on when the recorder got to it. The
//! queue is bounded: past [`WAKE_BYTES`] it asks the recorder once to come early, and past
//! [`MAX_BYTES`] (a recorder stuck on a slow disk) a reading is dropped and counted, never
//! queued without limit.

use player_kit::driver::{DataSink, DeviceData, DeviceDataBatch, Timestamp};
use std::sync::{Arc, Mutex, MutexGuard};

/// Queued bytes past which the recorder is asked to drain before its tick.
pub const WAKE_BYTES: usize = 256 * 1024;

/// Queued bytes past which readings are dropped (and counted) until the recorder drains.
pub const MAX_BYTES: usize = 64 * 1024 * 1024;

/// What a queued entry counts for at least, whatever its readings' sizes: the entry itself
/// (so a flood of empty readings is bounded too).
const ENTRY_COST: usize = 64;

/// Readings as the registry's subscribers get them: one, or one instant's batch (shared,
/// not copied).
pub enum Readings {
    /// One reading.
    One(DeviceData),
    /// A batch.
    Batch(Arc<[DeviceData]>),
}

impl Readings {
    /// The readings, in order.
    pub fn as_slice(&self) -> &[DeviceData] {
        match self {
            Readings::One(d) => std::slice::from_ref(d),
            Readings::Batch(b) => b,
        }
    }
}

/// Readings of robot `robot` queued at `log_time` (nanoseconds since the Unix epoch).
pub struct Queued {
    /// The robot's index among the recorder's sources.
    pub robot: usize,
    /// When they were queued.
    pub log_time: u64,
    /// The readings.
    pub readings: Readings,
}

#[derive(Default)]
struct State {
    entries: Vec<Queued>,
    bytes: usize,
    /// The recorder has been asked to drain and has not yet.
    wake_asked: bool,
    /// Readings dropped since the last drain.
    dropped: u64,
    /// Recording has finished: nothing more is queued.
    closed: bool,
}

/// The queue shared by the recorder and its subscriptions' sinks.
pub struct Queue {
    state: Mutex<State>,
    /// Asks the recorder to drain now (sent at most once per drain).
    wake: Box<dyn Fn() + Send + Sync>,
}

impl Queue {
    /// An empty queue; `wake` asks the recorder to drain early (called on a driver's
    /// thread, at most once between two drains).
    pub fn new(wake: impl Fn() + Send + Sync + 'static) -> Arc<Queue> {
        Arc::new(Queue {
            state: Mutex::new(State::default()),
            wake: Box::new(wake),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `readings` of robot `robot`, stamped now.
    fn push(&self, robot: usize, readings: Readings) {
        let size = ENTRY_COST
            + readings
                .as_slice()
                .iter()
                .map(|d| d.data.len())
                .sum::<usize>();
        let log_time = Timestamp::now().nanos();
        let wake = {
            let mut s = self.lock();
            if s.closed {
                return;
            }
            if s.bytes + size > MAX_BYTES {
                s.dropped += readings.as_slice().len() as u64;
                return;
            }
            s.entries.push(Queued {
                robot,
                log_time,
                readings,
            });
            s.bytes += size;
            let wake = s.bytes >= WAKE_BYTES && !s.wake_asked;
            s.wake_asked |= wake;
            wake
        };
        if wake {
            (self.wake)();
        }
    }

    /// Moves everything queued into `into` (which should be empty: its room is kept for
    /// the next drain, and the queue takes `into`'s old room); returns how many readings
    /// were dropped since the last drain.
    pub fn take(&self, into: &mut Vec<Queued>) -> u64 {
        let mut s = self.lock();
        std::mem::swap(&mut s.entries, into);
        s.bytes = 0;
        s.wake_asked = false;
        std::mem::take(&mut s.dropped)
    }

    /// Stops queueing (recording finished); what is queued is let go.
    pub fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        s.entries = Vec::new();
        s.bytes = 0;
    }

    /// The sink of robot `robot`'s subscriptions.
    pub fn sink(self: &Arc<Self>, robot: usize) -> Arc<dyn DataSink> {
        Arc::new(Sink {
            queue: self.clone(),
            robot,
        })
    }
}

/// One robot's subscriptions' end: queues what the drivers publish.
struct Sink {
    queue: Arc<Queue>,
    robot: usize,
}

impl DataSink for Sink {
    fn single(&self, d: DeviceData) {
        self.queue.push(self.robot, Readings::One(d));
    }

    fn batch(&self, b: DeviceDataBatch) {
        self.queue.push(self.robot, Readings::Batch(b.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn reading(seq: u64, len: usize) -> DeviceData {
        DeviceData {
            device: b'l',
            data: Bytes::from(vec![0; len]),
            timestamp: Timestamp::default(),
            seq,
        }
    }

    #[test]
    fn readings_wait_in_order_and_the_recorder_is_woken_once_past_the_mark() {
        let woken = Arc::new(AtomicUsize::new(0));
        let w = woken.clone();
        let q = Queue::new(move || {
            w.fetch_add(1, Ordering::Relaxed);
        });
        let (a, b) = (q.sink(0), q.sink(3));
        a.single(reading(1, 10));
        b.batch(DeviceDataBatch(Arc::from(vec![
            reading(2, 10),
            reading(3, 10),
        ])));
        assert_eq!(woken.load(Ordering::Relaxed), 0);
        let mut got = Vec::new();
        assert_eq!(q.take(&mut got), 0);
        let seen: Vec<(usize, u64)> = got
            .iter()
            .flat_map(|e| e.readings.as_slice().iter().map(move |d| (e.robot, d.seq)))
            .collect();
        assert_eq!(seen, [(0, 1), (3, 2), (3, 3)]);
        assert!(got[0].log_time <= got[1].log_time && got[0].log_time > 0);
        // Past the mark: one wake, however many more come before the drain.
        let big = WAKE_BYTES / 4;
        for i in 0..8 {
            a.single(reading(10 + i, big));
        }
        assert_eq!(woken.load(Ordering::Relaxed), 1);
        got.clear();
        q.take(&mut got);
        for i in 0..8 {
            a.single(reading(20 + i, big));
        }
        assert_eq!(
            woken.load(Ordering::Relaxed),
            2,
            "asked again after a drain"
        );
    }

    #[test]
    fn a_queue_nobody_drains_stops_at_its_bound_and_counts_what_it_dropped() {
        let q = Queue::new(|| {});
        let s = q.sink(0);
        let n = MAX_BYTES / (1 << 20) + 10;
        for i in 0..n {
            s.single(reading(i as u64, 1 << 20));
        }
        let mut got = Vec::new();
        let dropped = q.take(&mut got);
        assert!(got.len() < MAX_BYTES / (1 << 20), "{}", got.len());
        assert_eq!(got.len() as u64 + dropped, n as u64);
        q.close();
        s.single(reading(0, 1));
        got.clear();
        assert_eq!(q.take(&mut got), 0);
        assert!(got.is_empty(), "nothing is queued once closed");
    }
}
