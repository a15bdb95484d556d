//! Playback control: play, pause, speed and seek for a driver that plays recorded data
//! back (the `replay` driver), asked by any front end through the registry, without the
//! core or a front end knowing what a recording is.
//!
//! A driver that supports it builds its handle `with_playback` and answers [`Playback`]
//! with its [`PlaybackClock`], a small record it shares with whoever asks: where playback
//! is, at what speed, and how the timestamps it published map to the recording's time
//! (a front end that shows the recording's timeline, such as Foxglove's, labels readings
//! with recording time). Speeds asked for are clamped to [`MIN_SPEED`]..=[`MAX_SPEED`]
//! ([`clamp_speed`]); seeks to the recording's span.

use actix::prelude::*;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The slowest playback speed a request may set.
pub const MIN_SPEED: f64 = 0.01;

/// The fastest playback speed a request may set (ten times the recorded rate: a 10 Hz
/// device publishes at 100 Hz).
pub const MAX_SPEED: f64 = 10.0;

/// How many stretches of playback a clock remembers for mapping timestamps: readings
/// still on their way when playback changes map with the stretch they were published in.
const SEGMENTS: usize = 16;

/// `speed` clamped to [`MIN_SPEED`]..=[`MAX_SPEED`]; `None` when it is no positive number.
pub fn clamp_speed(speed: f64) -> Option<f64> {
    (speed.is_finite() && speed > 0.0).then(|| speed.clamp(MIN_SPEED, MAX_SPEED))
}

/// Whether playback runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaybackStatus {
    /// Readings are published on the recorded schedule divided by the speed.
    Playing,
    /// Nothing is published; the position holds (also while no device is set up).
    Paused,
    /// The last reading was played (not looping); a seek starts again.
    Ended,
}

/// What a front end asks of playback; every field is optional (all `None`: only the
/// clock, to read the state). A seek is applied first, then the speed, then play or pause.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PlaybackRequest {
    /// `Some(true)`: play; `Some(false)`: pause.
    pub play: Option<bool>,
    /// The speed factor (clamped by [`clamp_speed`]; not a positive number: ignored).
    pub speed: Option<f64>,
    /// Go to this recording time (nanoseconds since the Unix epoch, clamped to the
    /// recording's span); the devices' readings at that time are published at once.
    pub seek: Option<u64>,
}

/// Front end → registry → driver: change playback (or only read it). The reply is the
/// driver's clock, already changed.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "Arc<PlaybackClock>")]
pub struct Playback(pub PlaybackRequest);

/// Where playback is, read from a [`PlaybackClock`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlaybackState {
    /// Playing, paused or ended.
    pub status: PlaybackStatus,
    /// The recording time playback is at, nanoseconds since the Unix epoch.
    pub current: u64,
    /// The speed factor.
    pub speed: f64,
    /// The recording's first reading time.
    pub start: u64,
    /// The recording's last reading time.
    pub end: u64,
    /// How many times playback jumped (seeks, loops): a front end that sees it change
    /// clears what it shows.
    pub seeks: u64,
    /// How many times the state changed (any request, the end, a loop).
    pub changes: u64,
}

/// One stretch of playback: the reading of recording time `rec` was published with the
/// timestamp `wall` (nanoseconds since the Unix epoch) at `at`, and later readings
/// follow at `speed`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// The published timestamp of recording time `rec`.
    pub wall: u64,
    /// When, on the monotonic clock.
    pub at: Instant,
    /// The recording time.
    pub rec: u64,
    /// The speed factor.
    pub speed: f64,
}

impl Segment {
    /// The recording time whose reading is published with timestamp `wall_ns`.
    pub fn recorded(&self, wall_ns: u64) -> u64 {
        let dt = wall_ns.saturating_sub(self.wall) as f64 * self.speed;
        self.rec.saturating_add(dt as u64)
    }

    /// How far past `rec` a reading of recording time `t` is published (wall-clock
    /// nanoseconds at this speed; 0 for earlier readings).
    pub fn delay(&self, t: u64) -> u64 {
        (t.saturating_sub(self.rec) as f64 / self.speed) as u64
    }
}

struct Inner {
    status: PlaybackStatus,
    /// The position while not playing.
    held: u64,
    speed: f64,
    start: u64,
    end: u64,
    seeks: u64,
    changes: u64,
    segments: VecDeque<Segment>,
}

/// A playback driver's shared record of where it is (see the module documentation). The
/// driver writes it before it publishes anything the change affects, so a front end that
/// reads it on a reading's arrival never sees the reading before the change.
pub struct PlaybackClock {
    inner: Mutex<Inner>,
}

impl PlaybackClock {
    /// A paused clock at `start` of a recording spanning `start..=end`, at `speed`.
    pub fn new(start: u64, end: u64, speed: f64) -> PlaybackClock {
        PlaybackClock {
            inner: Mutex::new(Inner {
                status: PlaybackStatus::Paused,
                held: start,
                speed,
                start,
                end,
                seeks: 0,
                changes: 0,
                segments: VecDeque::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state now.
    pub fn state(&self) -> PlaybackState {
        let g = self.lock();
        let current = match (g.status, g.segments.back()) {
            (PlaybackStatus::Playing, Some(s)) => {
                let dt = s.at.elapsed().as_nanos() as f64 * s.speed;
                s.rec.saturating_add(dt as u64).min(g.end)
            }
            _ => g.held,
        };
        PlaybackState {
            status: g.status,
            current,
            speed: g.speed,
            start: g.start,
            end: g.end,
            seeks: g.seeks,
            changes: g.changes,
        }
    }

    /// The recording time of a reading published with timestamp `wall_ns` (nanoseconds
    /// since the Unix epoch): mapped through the stretch of playback it was published in.
    pub fn recorded(&self, wall_ns: u64) -> u64 {
        let g = self.lock();
        let seg = g
            .segments
            .iter()
            .rev()
            .find(|s| s.wall <= wall_ns)
            .or(g.segments.front());
        seg.map_or(wall_ns, |s| s.recorded(wall_ns))
    }

    /// Driver: readings are published from now on along `seg` (playing when `playing`;
    /// a paused seek also anchors the readings it publishes).
    pub fn anchor(&self, seg: Segment, playing: bool) {
        let mut g = self.lock();
        if g.segments.len() == SEGMENTS {
            g.segments.pop_front();
        }
        g.segments.push_back(seg);
        g.speed = seg.speed;
        g.held = seg.rec;
        if playing {
            g.status = PlaybackStatus::Playing;
        }
        g.changes += 1;
    }

    /// Driver: playback stopped (paused, ended, or no device set up) at recording time
    /// `at`, with `speed` for when it plays again.
    pub fn hold(&self, status: PlaybackStatus, at: u64, speed: f64) {
        let mut g = self.lock();
        g.status = status;
        g.held = at;
        g.speed = speed;
        g.changes += 1;
    }

    /// Driver: playback jumped (a seek, a loop).
    pub fn jumped(&self) {
        let mut g = self.lock();
        g.seeks += 1;
        g.changes += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn speeds_are_clamped_and_nonsense_is_refused() {
        assert_eq!(clamp_speed(2.0), Some(2.0));
        assert_eq!(clamp_speed(1000.0), Some(MAX_SPEED));
        assert_eq!(clamp_speed(1e-9), Some(MIN_SPEED));
        assert_eq!(clamp_speed(0.0), None);
        assert_eq!(clamp_speed(-1.0), None);
        assert_eq!(clamp_speed(f64::NAN), None);
        assert_eq!(clamp_speed(f64::INFINITY), None);
    }

    #[test]
    fn timestamps_map_through_the_stretch_they_were_published_in() {
        let c = PlaybackClock::new(1_000, 100_000, 1.0);
        let t0 = Instant::now();
        c.anchor(
            Segment {
                wall: 5_000_000,
                at: t0,
                rec: 1_000,
                speed: 1.0,
            },
            true,
        );
        // A seek back at wall 5 010 000 to recording time 2 000, at twice the speed.
        c.anchor(
            Segment {
                wall: 5_010_000,
                at: t0 + Duration::from_millis(10),
                rec: 2_000,
                speed: 2.0,
            },
            true,
        );
        assert_eq!(c.recorded(5_000_500), 1_500, "the first stretch");
        assert_eq!(c.recorded(5_010_000), 2_000);
        assert_eq!(c.recorded(5_010_100), 2_200, "twice as fast");
        assert_eq!(c.recorded(4_000_000), 1_000, "older than any: the first");
        let s = c.state();
        assert_eq!(s.status, PlaybackStatus::Playing);
        assert_eq!(s.speed, 2.0);
        assert!(s.current >= 2_000 && s.current <= 100_000);
    }

    #[test]
    fn a_held_clock_stays_where_it_stopped() {
        let c = PlaybackClock::new(1_000, 100_000, 1.0);
        c.anchor(
            Segment {
                wall: 0,
                at: Instant::now(),
                rec: 1_000,
                speed: 1.0,
            },
            true,
        );
        c.hold(PlaybackStatus::Paused, 42_000, 0.5);
        let s = c.state();
        assert_eq!(
            (s.status, s.current, s.speed),
            (PlaybackStatus::Paused, 42_000, 0.5)
        );
        let before = s.changes;
        c.jumped();
        assert_eq!(c.state().seeks, 1);
        assert_eq!(c.state().changes, before + 1);
    }
}
