//! How readings reach the `amcl` driver: through an [`Intake`], which bounds the scans
//! waiting for the filter.
//!
//! The driver weighs every scan it is given, in order, each paired with the odometry of
//! its instant. When an update takes longer than the laser's period (many particles, the
//! beam model, a small board), scans would pile up in the driver's mailbox without end:
//! the memory the server holds would grow, the estimate would fall further behind the
//! robot every second, and the driver would answer its shutdown only after the whole
//! backlog. The intake lets at most [`MOST_SCANS_WAITING`] scans wait (the one being
//! weighed included); a scan arriving past that is skipped, counted, and the driver logs
//! the skips (rate-limited), as Nav2's `amcl` drops the scans its filter cannot take. The
//! odometry and every other reading always pass: they are cheap, and a scan is paired
//! with the odometry after it. While the filter keeps up, nothing is skipped, so a
//! replayed run still gives the same `H` bytes at any speed the filter can follow.

use actix::prelude::*;
use player_kit::driver::{DataSink, DeviceData, DeviceDataBatch};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// The most scans waiting for the filter, the one being weighed included: 0.4 s of a
/// 10 Hz laser, room for a slow update or two without a skip.
pub const MOST_SCANS_WAITING: usize = 4;

/// Readings for the driver, as the intake passed them on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Readings {
    /// One reading or a batch of one instant.
    pub data: Data,
    /// Whether they carry a scan the intake counted (to be given back when handled).
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
    /// The laser's device code once the driver holds it (0: none yet).
    laser: AtomicU8,
    /// Scans sent to the driver and not yet handled.
    waiting: AtomicUsize,
    /// Scans skipped since the driver last looked.
    skipped: AtomicU64,
}

impl Intake {
    /// An intake delivering to `to` (the driver).
    pub fn new(to: Recipient<Readings>) -> Arc<Intake> {
        Arc::new(Intake {
            to,
            laser: AtomicU8::new(0),
            waiting: AtomicUsize::new(0),
            skipped: AtomicU64::new(0),
        })
    }

    /// The laser the driver reads: its readings are the scans counted.
    pub fn set_laser(&self, code: u8) {
        self.laser.store(code, Ordering::Relaxed);
    }

    /// A counted scan was handled.
    pub fn handled(&self) {
        let _ = self
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Scans skipped since the last call.
    pub fn take_skipped(&self) -> u64 {
        self.skipped.swap(0, Ordering::Relaxed)
    }

    fn is_scan(&self, d: &DeviceData) -> bool {
        let laser = self.laser.load(Ordering::Relaxed);
        laser != 0 && d.device == laser
    }

    /// Takes a place for one more waiting scan, or counts a skip.
    fn admit(&self) -> bool {
        let ok = self
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MOST_SCANS_WAITING).then_some(n + 1)
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
        let scan = self.is_scan(&d);
        if scan && !self.admit() {
            return;
        }
        self.to.do_send(Readings {
            data: Data::One(d),
            counted: scan,
        });
    }

    fn batch(&self, b: DeviceDataBatch) {
        let scan = b.0.iter().any(|d| self.is_scan(d));
        if scan && !self.admit() {
            // The instant's other readings (the odometry) still go.
            let rest: Vec<DeviceData> = b.0.iter().filter(|d| !self.is_scan(d)).cloned().collect();
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
    use bytes::Bytes;
    use player_kit::driver::Timestamp;
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

    #[actix::test]
    async fn at_most_four_scans_wait_and_the_rest_of_an_instant_still_goes() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let intake = Intake::new(Keep(got.clone()).start().recipient());
        let settle = || tokio::time::sleep(std::time::Duration::from_millis(50));
        // No laser known yet: nothing is counted, nothing skipped.
        for _ in 0..6 {
            intake.single(reading(b'L'));
        }
        settle().await;
        assert_eq!(got.lock().unwrap().len(), 6);
        assert!(got.lock().unwrap().iter().all(|(_, counted)| !counted));
        got.lock().unwrap().clear();

        intake.set_laser(b'L');
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
            assert_eq!(scans(&got), MOST_SCANS_WAITING, "{got:?}");
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
        assert_eq!(scans(&got.lock().unwrap()), MOST_SCANS_WAITING + 2);
        assert_eq!(intake.take_skipped(), 1);
    }
}
