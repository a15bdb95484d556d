//! A bounded intake for a driver that computes for long on its readings: at most a few
//! of the readings that start its work wait in its mailbox; one arriving past that is
//! skipped and counted, for the driver to log.
//!
//! A driver that subscribes to other devices gets every reading as a message. When its
//! work on one reading takes longer than the readings' period (a particle filter with
//! many particles, a planner replanning over a building's map), the messages would pile
//! up without end: the memory the server holds would grow, the driver would act on
//! readings further in the past every second (a planner commanding the base from where
//! the robot was seconds ago), and it would answer the server's shutdown only after the
//! whole backlog. An [`Intake`] is the [`DataSink`] such a driver subscribes with
//! ([`crate::driver::DataRecipient::sink`]): it counts the readings of one device, the one
//! whose readings start the driver's work (`amcl`'s laser, `wavefront`'s base), lets at
//! most `most` of them wait (the one being handled included) and skips the rest. Every
//! other reading always passes, in order, so the driver's state (the odometry a scan is
//! paired with, the newest scan a planner checks its path with) stays whole. While the
//! driver keeps up nothing is skipped, so what it computes does not change.

use crate::driver::{DataSink, DeviceData, DeviceDataBatch};
use actix::prelude::*;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// Readings for the driver, as the intake passed them on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Readings {
    /// One reading or a batch of one instant.
    pub data: Data,
    /// Whether they carry a counted reading (its place given back with
    /// [`Intake::finished`] once handled).
    pub counted: bool,
}

/// One reading or several of one instant.
pub enum Data {
    /// A single reading.
    One(DeviceData),
    /// Several devices' readings of one instant.
    Batch(DeviceDataBatch),
}

impl Data {
    /// The readings, in order.
    pub fn iter(&self) -> impl Iterator<Item = &DeviceData> {
        let (one, many) = match self {
            Data::One(d) => (Some(d), &[][..]),
            Data::Batch(b) => (None, &b.0[..]),
        };
        one.into_iter().chain(many.iter())
    }
}

/// The driver's side of its subscriptions: called on the publishing thread for every
/// reading, it never blocks.
pub struct Intake {
    to: Recipient<Readings>,
    /// The device whose readings are counted (0: none yet).
    counted: AtomicU8,
    /// The most counted readings waiting.
    most: usize,
    /// Counted readings sent to the driver and not yet handled.
    waiting: AtomicUsize,
    /// Counted readings skipped since the driver last looked.
    skipped: AtomicU64,
}

impl Intake {
    /// An intake delivering to `to` (the driver), letting at most `most` (at least 1)
    /// counted readings wait.
    pub fn new(to: Recipient<Readings>, most: usize) -> Arc<Intake> {
        Arc::new(Intake {
            to,
            counted: AtomicU8::new(0),
            most: most.max(1),
            waiting: AtomicUsize::new(0),
            skipped: AtomicU64::new(0),
        })
    }

    /// The device whose readings are counted (the one that starts the driver's work).
    pub fn count(&self, code: u8) {
        self.counted.store(code, Ordering::Relaxed);
    }

    /// The most counted readings that may wait.
    pub fn most(&self) -> usize {
        self.most
    }

    /// A counted reading was handled (a message whose `counted` is true).
    fn handled(&self) {
        let _ = self
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// After the driver handled a message: its counted place given back (`counted`, the
    /// message's), and the counted readings skipped since the last call, for its log.
    pub fn finished(&self, counted: bool) -> u64 {
        if counted {
            self.handled();
        }
        self.take_skipped()
    }

    /// Counted readings skipped since the last call.
    fn take_skipped(&self) -> u64 {
        self.skipped.swap(0, Ordering::Relaxed)
    }

    fn is_counted(&self, d: &DeviceData) -> bool {
        let code = self.counted.load(Ordering::Relaxed);
        code != 0 && d.device == code
    }

    /// Takes a place for one more waiting reading, or counts a skip.
    fn admit(&self) -> bool {
        let ok = self
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.most).then_some(n + 1)
            })
            .is_ok();
        if !ok {
            self.skipped.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }
}

impl DataSink for Intake {
    fn single(&self, d: DeviceData) {
        let scan = self.is_counted(&d);
        if scan && !self.admit() {
            return;
        }
        self.to.do_send(Readings {
            data: Data::One(d),
            counted: scan,
        });
    }

    fn batch(&self, b: DeviceDataBatch) {
        let scan = b.0.iter().any(|d| self.is_counted(d));
        if scan && !self.admit() {
            // The instant's other readings still go.
            let rest: Vec<DeviceData> =
                b.0.iter()
                    .filter(|d| !self.is_counted(d))
                    .cloned()
                    .collect();
            if !rest.is_empty() {
                self.to.do_send(Readings {
                    data: Data::Batch(DeviceDataBatch(rest.into())),
                    counted: false,
                });
            }
            return;
        }
        self.to.do_send(Readings {
            data: Data::Batch(b),
            counted: scan,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Timestamp;
    use bytes::Bytes;
    use std::sync::Mutex;

    /// What a [`Keep`] was given: each message's devices, and whether it was counted.
    type Got = Arc<Mutex<Vec<(Vec<u8>, bool)>>>;

    /// Keeps what it is given.
    struct Keep(Got);

    impl Actor for Keep {
        type Context = Context<Self>;
    }

    impl Handler<Readings> for Keep {
        type Result = ();
        fn handle(&mut self, m: Readings, _: &mut Context<Self>) {
            let devices = m.data.iter().map(|d| d.device).collect();
            self.0.lock().unwrap().push((devices, m.counted));
        }
    }

    fn reading(device: u8) -> DeviceData {
        DeviceData {
            device,
            data: Bytes::from_static(b"x"),
            timestamp: Timestamp { sec: 1, usec: 0 },
            seq: 0,
        }
    }

    #[actix_rt::test]
    async fn at_most_four_counted_readings_wait_and_the_rest_of_an_instant_still_goes() {
        const MOST: usize = 4;
        let got = Arc::new(Mutex::new(Vec::new()));
        let intake = Intake::new(Keep(got.clone()).start().recipient(), MOST);
        let settle = || tokio::time::sleep(std::time::Duration::from_millis(50));
        // No device counted yet: nothing is counted, nothing skipped.
        for _ in 0..6 {
            intake.single(reading(b'L'));
        }
        settle().await;
        assert_eq!(got.lock().unwrap().len(), 6);
        assert!(got.lock().unwrap().iter().all(|(_, counted)| !counted));
        got.lock().unwrap().clear();

        intake.count(b'L');
        for _ in 0..6 {
            intake.single(reading(b'L'));
            intake.single(reading(b'P'));
        }
        // The odometry passes beside a skipped scan; a batch loses only its scan.
        intake.batch(DeviceDataBatch(vec![reading(b'P'), reading(b'L')].into()));
        settle().await;
        let scans =
            |got: &Vec<(Vec<u8>, bool)>| got.iter().filter(|(d, _)| d.contains(&b'L')).count();
        {
            let got = got.lock().unwrap();
            assert_eq!(scans(&got), MOST, "{got:?}");
            assert_eq!(got.iter().filter(|(d, _)| d == b"P").count(), 7, "{got:?}");
            assert_eq!(got.last().unwrap(), &(vec![b'P'], false));
            assert!(got.iter().all(|(d, counted)| *counted == d.contains(&b'L')));
        }
        assert_eq!(intake.take_skipped(), 3);
        assert_eq!(intake.take_skipped(), 0);

        // Two handled: two more may wait.
        intake.handled();
        intake.handled();
        for _ in 0..3 {
            intake.single(reading(b'L'));
        }
        settle().await;
        assert_eq!(scans(&got.lock().unwrap()), MOST + 2);
        assert_eq!(intake.take_skipped(), 1);
    }
}
