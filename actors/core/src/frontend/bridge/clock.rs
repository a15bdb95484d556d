//! How old a command from another host is, when the clock that stamped it is not ours.
//!
//! A bridge ignores a command older than its device's watchdog: one held back by a link
//! that came back, or queued on the way, must not move the robot after the fact. Zenoh
//! says when a sample was sent by its timestamp, made by the clock of whichever node
//! stamped it (the sender's session or the first router on its way). Compared with this
//! host's clock, a stamping clock running behind by more than the watchdog made every
//! command look stale, so a robot whose fleet's clocks were not synchronised could not be
//! driven at all.
//!
//! [`SenderClocks`] measures an age the way NTP does without a server: per stamping clock
//! (the timestamp's node ID), the smallest difference "our clock at receipt minus the
//! stamp" seen lately is that clock's offset plus the fastest delivery; a command's age is
//! how far its own difference is above that floor. That is skew free, and a command held
//! back shows as old: the floor was set by the commands that came through on time.
//!
//! - The floor is the minimum over two windows of [`WINDOW`] by time of receipt, the
//!   current and the one before it; a window turns over once however long nothing came,
//!   so a burst held back through a partition of any length is measured against the
//!   floor from before it.
//! - A stamping clock that steps back (its stamps suddenly older) has its commands
//!   ignored until the older floor has left both windows: at most twice [`WINDOW`], the
//!   robot stopped by its watchdog meanwhile (the safe way to be wrong).
//! - The first command from a clock not heard before has no floor: its age is the plain
//!   difference (clamped at zero), as when the clocks agree. If that is over the watchdog
//!   it is ignored, once, and sets the floor for the next one ([`Age::first`]).
//! - At most [`MAX_SOURCES`] clocks are remembered; the one heard from least recently
//!   makes room.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

/// How long one window of the floor lasts (the floor is the minimum over two).
pub const WINDOW: Duration = Duration::from_secs(10);

/// Most stamping clocks remembered.
pub const MAX_SOURCES: usize = 64;

/// When a command was sent, as the network stamped it: the time and which node's clock
/// made it (the 16 bytes of Zenoh's node ID, read as one number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The sending node's time.
    pub at: SystemTime,
    /// The node whose clock made `at`.
    pub source: u128,
}

/// A command's age at receipt, as [`SenderClocks::age`] measured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Age {
    /// How old it was when it came.
    pub age: Duration,
    /// Whether its clock was heard for the first time (then `age` is measured against this
    /// host's clock, there being nothing else yet).
    pub first: bool,
    /// When it came.
    pub received: Instant,
}

impl Age {
    /// How old it is now.
    pub fn now(&self) -> Duration {
        self.age + self.received.elapsed()
    }
}

/// What is known of one stamping clock: the floors of the current and the previous
/// window, in nanoseconds of "our clock minus its stamp".
#[derive(Debug, Clone, Copy)]
struct Floor {
    current: i128,
    since: Instant,
    previous: Option<i128>,
    heard: Instant,
}

impl Floor {
    fn lowest(&self) -> i128 {
        self.previous.map_or(self.current, |p| p.min(self.current))
    }
}

/// The floor of each stamping clock heard from (see the module's documentation).
#[derive(Debug, Default)]
pub struct SenderClocks {
    sources: HashMap<u128, Floor>,
}

impl SenderClocks {
    /// Measures the age of a command stamped `stamp` that came now, and learns from it.
    pub fn age(&mut self, stamp: Stamp) -> Age {
        self.age_at(stamp, SystemTime::now(), Instant::now())
    }

    /// [`SenderClocks::age`] with this host's clocks read as `wall` and `now`.
    fn age_at(&mut self, stamp: Stamp, wall: SystemTime, now: Instant) -> Age {
        let offset = match wall.duration_since(stamp.at) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        };
        let Some(f) = self.sources.get_mut(&stamp.source) else {
            self.make_room();
            self.sources.insert(
                stamp.source,
                Floor {
                    current: offset,
                    since: now,
                    previous: None,
                    heard: now,
                },
            );
            return Age {
                age: nanos(offset),
                first: true,
                received: now,
            };
        };
        if now.duration_since(f.since) >= WINDOW {
            f.previous = Some(f.current);
            f.current = offset;
            f.since = now;
        } else {
            f.current = f.current.min(offset);
        }
        f.heard = now;
        Age {
            age: nanos(offset - f.lowest()),
            first: false,
            received: now,
        }
    }

    /// Forgets the clock heard from least recently when [`MAX_SOURCES`] are known.
    fn make_room(&mut self) {
        if self.sources.len() < MAX_SOURCES {
            return;
        }
        if let Some(&oldest) = self
            .sources
            .iter()
            .min_by_key(|(_, f)| f.heard)
            .map(|(k, _)| k)
        {
            self.sources.remove(&oldest);
        }
    }
}

/// A non-negative number of nanoseconds as a duration (negative ones as zero).
fn nanos(n: i128) -> Duration {
    Duration::from_nanos(n.clamp(0, u64::MAX as i128) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// This host's clocks at the start of a test, and what it learnt.
    struct Scene {
        wall0: SystemTime,
        now0: Instant,
        clocks: SenderClocks,
    }

    impl Scene {
        fn new() -> Self {
            Scene {
                wall0: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
                now0: Instant::now(),
                clocks: SenderClocks::default(),
            }
        }

        /// The age measured of a command sent at host time `sent` (from the scene's
        /// start) by `source`, whose clock is `behind` this host's, received `delay` later.
        fn send(&mut self, source: u128, behind: Duration, sent: Duration, delay: Duration) -> Age {
            let stamp = Stamp {
                at: self.wall0 + sent - behind,
                source,
            };
            let t = sent + delay;
            self.clocks.age_at(stamp, self.wall0 + t, self.now0 + t)
        }
    }

    #[test]
    fn a_clock_behind_is_measured_from_its_own_floor() {
        let mut s = Scene::new();
        let behind = Duration::from_secs(12);
        // The first command: nothing to measure against but this host's clock.
        let a = s.send(1, behind, Duration::ZERO, 2 * MS);
        assert!(a.first);
        assert_eq!(a.age, behind + 2 * MS);
        // Then ten a second for a minute, 2-5 ms on the way: each a few ms old.
        for i in 1..600u64 {
            let delay = (2 + (i % 4) as u32) * MS;
            let a = s.send(1, behind, 100 * MS * i as u32, delay);
            assert!(!a.first);
            assert!(a.age <= 3 * MS, "command {i}: {:?}", a.age);
        }
    }

    #[test]
    fn a_burst_held_back_through_a_partition_is_old_however_long_it_was() {
        for gap_s in [1u64, 9, 25, 3600] {
            let mut s = Scene::new();
            let behind = Duration::from_secs(30);
            for i in 0..100u32 {
                s.send(7, behind, 100 * MS * i, 3 * MS);
            }
            // Partitioned from 10 s on; what was sent meanwhile comes when it heals.
            let heal = Duration::from_secs(10 + gap_s);
            let held = s.send(
                7,
                behind,
                Duration::from_secs(10),
                heal - Duration::from_secs(10),
            );
            // As old as it was held, less the fastest delivery the floor holds (3 ms).
            let held_for = heal - Duration::from_secs(10);
            assert_eq!(held.age, held_for - 3 * MS, "gap {gap_s} s");
            // A command sent after the heal is fresh again at once.
            let fresh = s.send(7, behind, heal + 50 * MS, 3 * MS);
            assert!(fresh.age <= MS, "gap {gap_s} s: {fresh:?}");
        }
    }

    #[test]
    fn a_clock_ahead_and_a_clock_that_steps_back() {
        let mut s = Scene::new();
        // Stamps from the future (a clock ahead): measured as fresh, not as negative.
        let stamp = Stamp {
            at: s.wall0 + Duration::from_secs(5),
            source: 3,
        };
        let a = s.clocks.age_at(stamp, s.wall0, s.now0);
        assert_eq!(a.age, Duration::ZERO);
        let later = Stamp {
            at: s.wall0 + Duration::from_secs(6),
            source: 3,
        };
        let t = Duration::from_secs(1) + 4 * MS;
        let b = s.clocks.age_at(later, s.wall0 + t, s.now0 + t);
        assert_eq!(b.age, 4 * MS);
        // The same clock steps back by 3 s at t = 2 s: its commands look 3 s old until
        // the floor from before the step has left both windows (at most 2 x WINDOW).
        let mut last_old = Duration::ZERO;
        for i in 20..400u32 {
            let t = 100 * MS * i;
            let stamp = Stamp {
                at: s.wall0 + Duration::from_secs(5) + t - Duration::from_secs(3),
                source: 3,
            };
            let a = s.clocks.age_at(stamp, s.wall0 + t, s.now0 + t);
            if a.age >= Duration::from_secs(3) {
                last_old = t;
            } else {
                assert_eq!(a.age, Duration::ZERO, "at {t:?}");
            }
        }
        assert!(last_old >= WINDOW, "{last_old:?}");
        assert!(
            last_old < 2 * WINDOW + Duration::from_secs(2),
            "{last_old:?}"
        );
    }

    #[test]
    fn each_clock_has_its_own_floor_and_at_most_max_sources_are_kept() {
        let mut s = Scene::new();
        s.send(1, Duration::from_secs(20), Duration::ZERO, MS);
        s.send(2, Duration::ZERO, Duration::ZERO, MS);
        assert_eq!(
            s.send(1, Duration::from_secs(20), 100 * MS, MS).age,
            Duration::ZERO
        );
        assert_eq!(s.send(2, Duration::ZERO, 100 * MS, MS).age, Duration::ZERO);
        for n in 0..(2 * MAX_SOURCES as u128) {
            s.send(100 + n, Duration::ZERO, 200 * MS + MS * n as u32, MS);
        }
        assert_eq!(s.clocks.sources.len(), MAX_SOURCES);
        // Clock 1 was forgotten: heard again, it is new.
        assert!(
            s.send(1, Duration::from_secs(20), Duration::from_secs(1), MS)
                .first
        );
    }
}
