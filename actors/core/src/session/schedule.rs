//! The schedule: when rounds fall due in each data mode (absolute deadlines for
//! continuous, `y d` for the request modes, arrivals limited to the rate for push new),
//! the wait for every device's first reading, and the quiet-device warning.
//!
//! [`Schedule`] is pure: it decides over the instants it is given and answers with a
//! [`Due`]; the session applies the answer (writes a round, sets its timer). Below it,
//! the session's side: what it asks the schedule when, and what it does with the answer.

use super::Session;
use actix::prelude::*;
use player_proto::DataMode;
use slog::warn;
use std::time::{Duration, Instant};

/// Most `y d` requests that wait for an answer; more are not counted.
const MAX_REQUESTED: u32 = 16;

/// What the schedule asks the session to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Due {
    /// Nothing now.
    Nothing,
    /// Write a round now (only the devices with new readings when `only_new`), unless
    /// the client is not keeping up, in which case it is skipped.
    Round {
        /// Only the devices with readings the client has not had.
        only_new: bool,
    },
    /// Serve the rounds the client requested (`y d`), as far as it takes them
    /// ([`Schedule::next_requested`]).
    Requested,
    /// Set the repeating timer for the next continuous tick, at this instant.
    Tick(Instant),
    /// Wake at this instant and look again (push new waits out its period).
    Wake(Instant),
}

/// When one session's rounds fall due.
#[derive(Debug)]
pub(super) struct Schedule {
    mode: DataMode,
    period: Duration,
    /// The next continuous deadline.
    next_tick: Instant,
    /// Whether the session's timer is set for `next_tick`.
    ticking: bool,
    /// A continuous round fell due while a device had no reading yet.
    round_due: bool,
    /// `y d` requests not yet answered.
    rounds_requested: u32,
    /// When the last push-new round went out.
    last_push: Option<Instant>,
    /// When push new wakes to look again, while it waits out its period.
    push_at: Option<Instant>,
    /// Since when a read device has had no reading yet.
    waiting_since: Option<Instant>,
    /// The quiet-device warning was given for this wait.
    warned_quiet: bool,
}

impl Schedule {
    /// Continuous at 10 Hz (the 0.7.4a default), not ticking yet.
    pub fn new(now: Instant) -> Self {
        Schedule {
            mode: DataMode::Continuous,
            period: Duration::from_millis(100),
            next_tick: now,
            ticking: false,
            round_due: false,
            rounds_requested: 0,
            last_push: None,
            push_at: None,
            waiting_since: None,
            warned_quiet: false,
        }
    }

    /// Rounds per second while the session sends on a schedule (continuous, push new);
    /// 0 in the request modes.
    pub fn rate(&self) -> u64 {
        match self.mode {
            DataMode::Continuous | DataMode::PushNew => {
                (1.0 / self.period.as_secs_f64()).round() as u64
            }
            DataMode::RequestReply | DataMode::PullNew => 0,
        }
    }

    /// Whether the session answers `y d` requests (request/reply, pull new).
    pub fn serves_requests(&self) -> bool {
        matches!(self.mode, DataMode::RequestReply | DataMode::PullNew)
    }

    /// The first continuous deadline from `now`: a period on, on the shared grid.
    pub fn start(&mut self, now: Instant) -> Instant {
        self.next_tick = crate::timer::on_grid(now + self.period, self.period);
        self.arm(now)
    }

    /// The timer is set for `next_tick` (moved on past any deadline more than a period
    /// behind `now`: the process was stopped, say, and missed rounds are not made up).
    fn arm(&mut self, now: Instant) -> Instant {
        if self.next_tick + self.period < now {
            let behind = now.duration_since(self.next_tick).as_nanos() / self.period.as_nanos();
            self.next_tick += self.period * behind as u32;
        }
        self.ticking = true;
        self.next_tick
    }

    /// The client set its frequency (at most `max`; 0 is refused before); in continuous
    /// mode the next deadline is a new period on.
    pub fn set_frequency(&mut self, hz: u16, now: Instant) -> Due {
        self.period = Duration::from_secs_f64(1.0 / f64::from(hz));
        if self.mode == DataMode::Continuous {
            Due::Tick(self.start(now))
        } else {
            Due::Nothing
        }
    }

    /// The client switched to `mode` at `now` (`any_new`: a read device has a reading the
    /// client has not had). `None` when it is the mode already; otherwise the session
    /// clears its timers, then applies the answer: continuous sends a round at once and
    /// then every period, push new pushes what is new, the request modes wait for `y d`
    /// (requests made before the switch are forgotten).
    pub fn set_mode(&mut self, mode: DataMode, now: Instant, any_new: bool) -> Option<Due> {
        if mode == self.mode {
            return None;
        }
        self.mode = mode;
        self.rounds_requested = 0;
        self.round_due = false;
        self.ticking = false;
        self.push_at = None;
        Some(match mode {
            DataMode::Continuous => {
                self.next_tick = now;
                Due::Tick(self.arm(now))
            }
            DataMode::PushNew => self.push(now, any_new),
            DataMode::RequestReply | DataMode::PullNew => Due::Nothing,
        })
    }

    /// The continuous timer fired at `now` (`reads`: the session reads a device). The
    /// answer is the next deadline to set, or nothing: out of continuous mode, or reading
    /// nothing (the ticks stop until a device is granted: [`Schedule::restart`]).
    pub fn on_tick(&mut self, now: Instant, reads: bool) -> Due {
        self.ticking = false;
        if self.mode != DataMode::Continuous || !reads {
            return Due::Nothing;
        }
        self.next_tick += self.period;
        Due::Tick(self.arm(now))
    }

    /// The round of a tick: now if every read device has a reading (`ready`), else it
    /// waits for them (sent by [`Schedule::on_change`] when they come).
    pub fn tick_round(&mut self, ready: bool) -> Due {
        if ready {
            Due::Round { only_new: false }
        } else {
            self.round_due = true;
            Due::Nothing
        }
    }

    /// Ticking stopped while the session read nothing; a device now read (`reads`)
    /// starts it again, a period on.
    pub fn restart(&mut self, now: Instant, reads: bool) -> Due {
        if self.mode == DataMode::Continuous && !self.ticking && reads {
            Due::Tick(self.start(now))
        } else {
            Due::Nothing
        }
    }

    /// The session's devices or readings changed at `now` (`ready`: every read device has
    /// a reading; `any_new`: one has a reading the client has not had): what became due.
    pub fn on_change(&mut self, now: Instant, ready: bool, any_new: bool) -> Due {
        if !ready {
            if self.waiting_since.is_none() {
                self.waiting_since = Some(now);
                self.warned_quiet = false;
            }
            return Due::Nothing;
        }
        self.waiting_since = None;
        match self.mode {
            DataMode::Continuous if self.round_due => {
                self.round_due = false;
                Due::Round { only_new: false }
            }
            DataMode::Continuous => Due::Nothing,
            DataMode::PushNew => self.push(now, any_new),
            DataMode::RequestReply | DataMode::PullNew => Due::Requested,
        }
    }

    /// Push new at `now`: a round of what is new (`any_new`), unless the last one went out
    /// less than a period ago (then wake when the period is up) or a wake is pending.
    pub fn push(&mut self, now: Instant, any_new: bool) -> Due {
        if self.push_at.is_some() || !any_new {
            return Due::Nothing;
        }
        match self.last_push {
            Some(last) if now < last + self.period => {
                let at = last + self.period;
                self.push_at = Some(at);
                Due::Wake(at)
            }
            _ => Due::Round { only_new: true },
        }
    }

    /// The push-new wake fired (or was cancelled).
    pub fn woke(&mut self) {
        self.push_at = None;
    }

    /// A round asked for by [`Due::Round`] was written at `now` (not skipped).
    pub fn sent(&mut self, now: Instant) {
        if self.mode == DataMode::PushNew {
            self.last_push = Some(now);
        }
    }

    /// The client asked for a round (`y d`); false when it is not in a request mode.
    pub fn request_round(&mut self) -> bool {
        if !self.serves_requests() {
            return false;
        }
        self.rounds_requested = (self.rounds_requested + 1).min(MAX_REQUESTED);
        true
    }

    /// The next requested round to write, if one can go now: the client has taken what
    /// was written (`drained`), every read device has a reading (`ready`) and, in pull
    /// new, one has a new reading (`any_new`). `Some(only_new)`: write it (never skipped:
    /// the client asked for it).
    pub fn next_requested(&mut self, ready: bool, any_new: bool, drained: bool) -> Option<bool> {
        if self.rounds_requested == 0 || !drained || !ready {
            return None;
        }
        let only_new = self.mode == DataMode::PullNew;
        if only_new && !any_new {
            return None; // wait for something new
        }
        self.rounds_requested -= 1;
        Some(only_new)
    }

    /// Whether requested rounds wait for first readings (`ready` false).
    pub fn requests_wait(&self, ready: bool) -> bool {
        self.rounds_requested > 0 && !ready
    }

    /// How long the session has waited for a first reading, once, when that is at least
    /// `quiet_after` at `now` (the session names the devices in the log).
    pub fn quiet(&mut self, now: Instant, quiet_after: Duration) -> Option<Duration> {
        let waited = now.saturating_duration_since(self.waiting_since?);
        if self.warned_quiet || waited < quiet_after {
            return None;
        }
        self.warned_quiet = true;
        Some(waited)
    }

    /// Whether a reading must wake the session: unless it sends rounds on deadlines with
    /// its timer set and no round waits for data.
    pub fn wants_every_reading(&self) -> bool {
        self.mode != DataMode::Continuous || self.round_due || !self.ticking
    }

    /// Whether a reading may make something sendable (`first`: the device's first).
    pub fn reading_matters(&self, first: bool) -> bool {
        self.mode != DataMode::Continuous || first || self.round_due
    }
}

impl Session {
    /// Applies the schedule's answer.
    pub(super) fn apply(&mut self, due: Due, ctx: &mut Context<Self>) {
        match due {
            Due::Nothing => {}
            Due::Round { only_new } => {
                let now = Instant::now();
                if self.send_round(only_new, ctx) {
                    self.timers.schedule().sent(now);
                }
            }
            Due::Requested => self.serve_requests(ctx),
            Due::Tick(at) => self.timers.ticks.set(at),
            Due::Wake(at) => self.wake_at(at, ctx),
        }
    }

    /// After a change of devices or data: send what became sendable.
    pub(super) fn after_change(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let due = self.timers.schedule().restart(now, self.list.any_reads());
        self.apply(due, ctx);
        let due = self
            .timers
            .schedule()
            .on_change(now, self.list.ready(), self.list.any_new());
        self.apply(due, ctx);
    }

    /// A tick of the session's timer: a continuous round may be due.
    pub(super) fn on_tick(&mut self, ctx: &mut Context<Self>) {
        let due = self
            .timers
            .schedule()
            .on_tick(Instant::now(), self.list.any_reads());
        if due == Due::Nothing {
            return;
        }
        self.apply(due, ctx);
        // The readings left in the inbox since the last round.
        self.sync_inbox(ctx);
        let due = self.timers.schedule().tick_round(self.list.ready());
        match due {
            Due::Nothing => self.check_quiet(),
            due => self.apply(due, ctx),
        }
        self.refresh_inbox(ctx);
    }

    /// Push new: a round of what is new, or a wake when the period is up.
    pub(super) fn push_new(&mut self, ctx: &mut Context<Self>) {
        let due = self
            .timers
            .schedule()
            .push(Instant::now(), self.list.any_new());
        self.apply(due, ctx);
    }

    /// Writes the requested rounds the client can take now.
    pub(super) fn serve_requests(&mut self, ctx: &mut Context<Self>) {
        loop {
            let drained = self.timers.writer().drained();
            let Some(only_new) = self.timers.schedule().next_requested(
                self.list.ready(),
                self.list.any_new(),
                drained,
            ) else {
                break;
            };
            self.write_round(only_new, ctx);
        }
        if self.timers.schedule().requests_wait(self.list.ready()) {
            self.check_quiet();
        }
    }

    /// Names the devices a first round waits for, once per wait, after `quiet_after`.
    pub(super) fn check_quiet(&mut self) {
        if let Some(waited) = self
            .timers
            .schedule()
            .quiet(Instant::now(), self.conn.opts.quiet_after)
        {
            let quiet = self.list.quiet_devices();
            warn!(self.conn.log, "waiting for a first reading"; "devices" => quiet.join(","), "seconds" => waited.as_secs());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    const ROUND: Due = Due::Round { only_new: false };
    const NEW: Due = Due::Round { only_new: true };

    /// The deadline of a `Due::Tick`.
    fn tick(due: Due) -> Instant {
        match due {
            Due::Tick(at) => at,
            other => panic!("expected a tick, got {other:?}"),
        }
    }

    #[test]
    fn continuous_rounds_fall_on_absolute_deadlines_a_period_apart() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        let first = s.start(t0);
        assert!(first >= t0 + ms(100) && first < t0 + ms(100) + crate::timer::GRID);
        // A late wake-up does not move the deadlines: the next is a period after the last.
        let mut at = first;
        for _ in 0..5 {
            let next = tick(s.on_tick(at + ms(30), true));
            assert_eq!(next, at + ms(100));
            assert_eq!(s.tick_round(true), ROUND);
            at = next;
        }
    }

    #[test]
    fn a_far_behind_tick_skips_missed_rounds() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        let first = s.start(t0);
        // The process was stopped for ten seconds: one round now, not a hundred.
        let now = first + ms(10_030);
        let next = tick(s.on_tick(now, true));
        assert!(next <= now && next + ms(100) > now, "{:?}", next - first);
        assert_eq!((next - first).as_nanos() % ms(100).as_nanos(), 0);
        // Behind by less than a period: the deadline stands (the round goes at once).
        let now = next + ms(150);
        assert_eq!(tick(s.on_tick(now, true)), next + ms(100));
    }

    #[test]
    fn a_mode_switch_to_continuous_sends_one_round_at_once_then_every_period() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        s.start(t0);
        assert_eq!(s.set_mode(DataMode::Continuous, t0, true), None);
        assert_eq!(
            s.set_mode(DataMode::RequestReply, t0, true),
            Some(Due::Nothing)
        );
        let t1 = t0 + ms(1234);
        assert_eq!(
            s.set_mode(DataMode::Continuous, t1, true),
            Some(Due::Tick(t1))
        );
        assert_eq!(tick(s.on_tick(t1, true)), t1 + ms(100));
        assert_eq!(s.tick_round(true), ROUND);
        assert_eq!(tick(s.on_tick(t1 + ms(100), true)), t1 + ms(200));
    }

    #[test]
    fn push_new_waits_out_the_period() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        assert_eq!(s.set_mode(DataMode::PushNew, t0, false), Some(Due::Nothing));
        assert_eq!(s.push(t0, true), NEW);
        s.sent(t0);
        // New data 10 ms later: wait until a period after the last push.
        assert_eq!(s.push(t0 + ms(10), true), Due::Wake(t0 + ms(100)));
        assert_eq!(s.push(t0 + ms(20), true), Due::Nothing, "one wake pending");
        s.woke();
        assert_eq!(s.push(t0 + ms(100), true), NEW);
        s.sent(t0 + ms(100));
        // Nothing new: nothing to push, however long it has been.
        assert_eq!(s.push(t0 + ms(5000), false), Due::Nothing);
        assert_eq!(s.push(t0 + ms(5000), true), NEW);
    }

    #[test]
    fn a_tick_waits_for_every_first_reading_then_sends_its_round_once() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        let first = s.start(t0);
        assert_eq!(s.on_change(t0, false, false), Due::Nothing);
        s.on_tick(first, true);
        assert_eq!(s.tick_round(false), Due::Nothing);
        assert!(s.wants_every_reading(), "a due round waits for readings");
        assert!(s.reading_matters(false));
        assert_eq!(s.on_change(first + ms(30), true, true), ROUND);
        assert_eq!(s.on_change(first + ms(40), true, true), Due::Nothing);
        assert!(!s.wants_every_reading());
        assert!(!s.reading_matters(false));
        assert!(s.reading_matters(true));
    }

    #[test]
    fn a_session_reading_nothing_stops_ticking_until_a_device_is_read() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        let first = s.start(t0);
        assert_eq!(s.on_tick(first, false), Due::Nothing);
        assert!(s.wants_every_reading(), "not ticking");
        assert_eq!(s.restart(first + ms(10), false), Due::Nothing);
        let at = tick(s.restart(first + ms(10), true));
        assert!(at >= first + ms(110) && at < first + ms(110) + crate::timer::GRID);
        assert_eq!(
            s.restart(first + ms(20), true),
            Due::Nothing,
            "ticking already"
        );
    }

    #[test]
    fn requested_rounds_count_up_to_sixteen_and_pull_new_waits_for_something_new() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        assert!(!s.request_round(), "not in a request mode");
        s.set_mode(DataMode::PullNew, t0, false);
        for _ in 0..20 {
            assert!(s.request_round());
        }
        assert_eq!(s.next_requested(true, false, true), None, "nothing new");
        assert_eq!(s.next_requested(true, true, false), None, "not drained");
        assert!(s.requests_wait(false));
        assert_eq!(s.on_change(t0, true, true), Due::Requested);
        let mut sent = 0;
        while s.next_requested(true, true, true) == Some(true) {
            sent += 1;
        }
        assert_eq!(sent, MAX_REQUESTED);
        // Switching modes forgets what was requested.
        s.request_round();
        s.set_mode(DataMode::RequestReply, t0, true);
        assert_eq!(s.next_requested(true, true, true), None);
        s.request_round();
        assert_eq!(s.next_requested(true, false, true), Some(false));
    }

    #[test]
    fn the_quiet_warning_is_given_once_per_wait() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        let quiet_after = Duration::from_secs(3);
        assert_eq!(s.quiet(t0, quiet_after), None, "not waiting");
        s.on_change(t0, false, false);
        assert_eq!(s.quiet(t0 + ms(2999), quiet_after), None);
        assert_eq!(s.quiet(t0 + ms(3000), quiet_after), Some(ms(3000)));
        assert_eq!(s.quiet(t0 + ms(9000), quiet_after), None, "once");
        // A new wait warns again.
        s.on_change(t0 + ms(9100), true, false);
        s.on_change(t0 + ms(9200), false, false);
        assert_eq!(s.quiet(t0 + ms(12_200), quiet_after), Some(ms(3000)));
    }

    #[test]
    fn a_new_frequency_moves_the_next_deadline_and_the_rate() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0);
        s.start(t0);
        assert_eq!(s.rate(), 10);
        let at = tick(s.set_frequency(50, t0 + ms(500)));
        assert!(at >= t0 + ms(520) && at < t0 + ms(525));
        assert_eq!(s.rate(), 50);
        s.set_mode(DataMode::RequestReply, t0, false);
        assert_eq!(s.rate(), 0);
        assert_eq!(s.set_frequency(20, t0), Due::Nothing);
    }
}
