//! What the registry's tap sees of each device's readings, as plain state over given
//! instants: the reading rate (over windows of about two seconds), the size of the last
//! reading, and whether a device has gone silent (no reading for `quiet_after`, or three
//! of its own periods for a device that publishes slowly).
//!
//! Readings come numbered (the publisher counts each device's readings), and the tap
//! mostly sees only the newest of them: while every device is well, the registry takes
//! its readings from an inbox at its once-a-second check, not as a message per reading
//! (`mod.rs`). The numbers say how many came since the one seen before, so the rate is
//! exact; the instant of a reading taken from the inbox is the check's, so a device is
//! called silent up to one check later than its last reading would say. Which readings
//! are new, and how many each stands for, is the kit's one rule ([`player_kit::fresh`]):
//! a driver that numbers afresh goes on being counted, a reading seen again is not.

use player_kit::fresh::{SeqGate, Stamp};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The shortest window a rate is counted over.
const RATE_WINDOW: Duration = Duration::from_secs(2);

/// A device that has gone silent, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Silent {
    /// The device code.
    pub device: u8,
    /// How long since its last reading.
    pub quiet: Duration,
}

/// Readings seen of one device.
#[derive(Debug, Default)]
struct Seen {
    last: Option<Instant>,
    /// The newest reading seen.
    gate: SeqGate,
    data_size: u16,
    count: u32,
    window_start: Option<Instant>,
    rate_x10: u16,
    /// Longest gap between two readings seen lately (a device that publishes slowly is not
    /// called silent).
    period: Duration,
}

/// The readings seen of every device of a robot.
#[derive(Debug)]
pub struct Health {
    quiet_after: Duration,
    seen: HashMap<u8, Seen>,
}

impl Health {
    /// Calls a device silent after `quiet_after` without a reading (or three of its
    /// periods, when that is longer).
    pub fn new(quiet_after: Duration) -> Self {
        Health {
            quiet_after,
            seen: HashMap::new(),
        }
    }

    /// Readings of `device` up to `reading` (the newest, of `size` bytes), seen at `now`:
    /// the readings since the one seen before count (by the rule of
    /// [`player_kit::fresh`]). Returns false for a reading that is not new (seen already,
    /// or older than the one seen), which changes nothing.
    pub fn seen(&mut self, device: u8, reading: Stamp, size: usize, now: Instant) -> bool {
        let s = self.seen.entry(device).or_default();
        let Some(n) = s.gate.take(reading) else {
            return false;
        };
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        if let Some(last) = s.last {
            // The mean gap between the readings since the last one seen.
            let gap = now.saturating_duration_since(last) / n;
            s.period = if gap > s.period {
                gap
            } else {
                (s.period * 7 + gap) / 8
            };
        }
        s.last = Some(now);
        s.data_size = size.min(usize::from(u16::MAX)) as u16;
        s.count = s.count.saturating_add(n);
        s.window_start.get_or_insert(now);
        true
    }

    /// Forgets `device`'s readings (it was shut down).
    pub fn forget(&mut self, device: u8) {
        self.seen.remove(&device);
    }

    /// The periodic check at `now`: updates each device's rate once its window is long
    /// enough, and returns the devices `watched` says may go silent (set up and thought
    /// well) that have had no reading for too long (their rate drops to zero).
    pub fn check(&mut self, now: Instant, watched: impl Fn(u8) -> bool) -> Vec<Silent> {
        let mut silent = Vec::new();
        for (&device, s) in self.seen.iter_mut() {
            if let Some(start) = s.window_start {
                let span = now.saturating_duration_since(start);
                if span >= RATE_WINDOW {
                    let rate = f64::from(s.count) / span.as_secs_f64();
                    s.rate_x10 = (rate * 10.0).round().min(f64::from(u16::MAX)) as u16;
                    s.count = 0;
                    s.window_start = Some(now);
                }
            }
            if !watched(device) {
                continue;
            }
            let Some(last) = s.last else { continue };
            let quiet = now.saturating_duration_since(last);
            if quiet >= self.quiet_after.max(s.period * 3) {
                s.rate_x10 = 0;
                silent.push(Silent { device, quiet });
            }
        }
        silent.sort_unstable_by_key(|s| s.device);
        silent
    }

    /// The size of `device`'s last reading (0 before any).
    pub fn data_size(&self, device: u8) -> u16 {
        self.seen.get(&device).map_or(0, |s| s.data_size)
    }

    /// `device`'s readings per second times ten, as of the last check.
    pub fn rate_x10(&self, device: u8) -> u16 {
        self.seen.get(&device).map_or(0, |s| s.rate_x10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LASER: u8 = b'l';
    const SONAR: u8 = b's';

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn all(_: u8) -> bool {
        true
    }

    /// Reading number `seq`, taken `ms` milliseconds into the test.
    fn r(seq: u64, ms: u64) -> Stamp {
        Stamp {
            seq,
            at: ((ms / 1000) as u32, (ms % 1000 * 1000) as u32),
        }
    }

    /// Readings of `device` every `period` from `from`, `n` of them; returns the last
    /// instant.
    fn publish(h: &mut Health, device: u8, from: Instant, period: Duration, n: u32) -> Instant {
        for k in 0..n {
            let last = h.seen.get(&device).and_then(|s| s.gate.last());
            let seq = last.map_or(0, |l| l.seq) + 1;
            let ms = last.map_or(0, |l| {
                u64::from(l.at.0) * 1000 + u64::from(l.at.1) / 1000 + 1
            });
            assert!(h.seen(device, r(seq, ms), 10, from + period * k));
        }
        from + period * (n - 1)
    }

    #[test]
    fn a_steady_device_is_silent_after_quiet_after() {
        let mut h = Health::new(Duration::from_secs(3));
        let last = publish(&mut h, LASER, Instant::now(), ms(100), 50);
        assert!(h.check(last + ms(2999), all).is_empty());
        let silent = h.check(last + ms(3000), all);
        assert_eq!(
            silent,
            vec![Silent {
                device: LASER,
                quiet: ms(3000)
            }]
        );
        assert_eq!(h.rate_x10(LASER), 0, "a silent device's rate is zero");
    }

    #[test]
    fn a_device_publishing_slowly_is_not_called_silent() {
        let mut h = Health::new(Duration::from_secs(3));
        // One reading every 5 s: three periods (15 s) are allowed, not 3 s.
        let last = publish(&mut h, SONAR, Instant::now(), Duration::from_secs(5), 6);
        assert!(h.check(last + Duration::from_secs(6), all).is_empty());
        assert!(h.check(last + ms(14_900), all).is_empty());
        assert_eq!(h.check(last + Duration::from_secs(15), all).len(), 1);
    }

    #[test]
    fn a_device_not_watched_is_never_called_silent() {
        let mut h = Health::new(Duration::from_secs(3));
        let last = publish(&mut h, LASER, Instant::now(), ms(100), 10);
        publish(&mut h, SONAR, Instant::now(), ms(100), 10);
        let silent = h.check(last + Duration::from_secs(60), |d| d == SONAR);
        assert_eq!(silent.iter().map(|s| s.device).collect::<Vec<_>>(), [SONAR]);
    }

    #[test]
    fn the_rate_is_counted_over_windows_of_two_seconds() {
        let mut h = Health::new(Duration::from_secs(3));
        let t0 = Instant::now();
        publish(&mut h, LASER, t0, ms(100), 20);
        // The window is not two seconds long yet: no rate.
        assert!(h.check(t0 + ms(1900), all).is_empty());
        assert_eq!(h.rate_x10(LASER), 0);
        assert!(h.check(t0 + ms(2000), all).is_empty());
        assert_eq!(h.rate_x10(LASER), 100);
        // The next window counts from the check: 5 Hz for two more seconds.
        publish(&mut h, LASER, t0 + ms(2100), ms(200), 10);
        h.check(t0 + ms(4000), all);
        assert_eq!(h.rate_x10(LASER), 50);
        assert_eq!(h.data_size(LASER), 10);
    }

    #[test]
    fn a_forgotten_device_starts_over() {
        let mut h = Health::new(Duration::from_secs(3));
        let t0 = Instant::now();
        publish(&mut h, LASER, t0, ms(100), 30);
        h.check(t0 + ms(3000), all);
        h.forget(LASER);
        assert_eq!(h.rate_x10(LASER), 0);
        assert_eq!(h.data_size(LASER), 0);
        assert!(h.check(t0 + Duration::from_secs(60), all).is_empty());
    }

    #[test]
    fn readings_taken_at_the_check_count_by_their_numbers() {
        // A 10 Hz device whose readings the check takes from the inbox once a second: the
        // newest each time, ten numbers on.
        let mut h = Health::new(Duration::from_secs(3));
        let t0 = Instant::now();
        for k in 0..=4u32 {
            let at = 1000 * u64::from(k);
            h.seen(LASER, r(100 + 10 * u64::from(k), at), 361, t0 + ms(at));
        }
        h.check(t0 + ms(4000), all);
        // 41 readings over the window from the first check (the first counts as one).
        assert_eq!(h.rate_x10(LASER), 103);
        assert_eq!(h.data_size(LASER), 361);
        // Its period is 100 ms, not the checks' second: silent after quiet_after.
        assert!(h.check(t0 + ms(6999), all).is_empty());
        assert_eq!(h.check(t0 + ms(7000), all).len(), 1);
    }

    #[test]
    fn a_driver_that_numbers_afresh_goes_on_being_counted() {
        let mut h = Health::new(Duration::from_secs(3));
        let t0 = Instant::now();
        assert!(h.seen(SONAR, r(5, 0), 10, t0));
        assert!(h.seen(SONAR, r(25, 1000), 10, t0 + ms(1000)));
        // The driver's publisher starts over: 3, then ten more by the next check.
        assert!(h.seen(SONAR, r(3, 1100), 10, t0 + ms(1100)));
        assert!(h.seen(SONAR, r(13, 2000), 10, t0 + ms(2000)));
        h.check(t0 + ms(2000), all);
        assert_eq!(
            h.rate_x10(SONAR),
            160,
            "1 + 20 + 1 + 10 readings over two seconds"
        );
        assert!(h.check(t0 + ms(4999), all).is_empty(), "not silent");
    }

    #[test]
    fn a_reading_seen_again_or_overtaken_is_not_counted() {
        let mut h = Health::new(Duration::from_secs(3));
        let t0 = Instant::now();
        assert!(h.seen(SONAR, r(10, 0), 10, t0));
        assert!(h.seen(SONAR, r(20, 1000), 10, t0 + ms(1000)));
        // A message overtaken by the inbox's newer reading, and the newest sent again.
        assert!(!h.seen(SONAR, r(15, 500), 10, t0 + ms(1100)));
        assert!(!h.seen(SONAR, r(20, 1000), 10, t0 + ms(1200)));
        h.check(t0 + ms(2000), all);
        assert_eq!(h.rate_x10(SONAR), 55, "1 + 10 readings over two seconds");
        // Only new readings keep a device from being called silent.
        assert_eq!(h.check(t0 + ms(4000), all).len(), 1);
    }
}
