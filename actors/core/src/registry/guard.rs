//! The robot's safety guard, as plain state over given instants: the emergency-stop
//! latch, the command watchdog of each device whose commands keep something moving, and
//! the admission of every command (the sender must hold write access, nothing passes
//! while the e-stop is latched). The registry acts on its answers (stops devices, sends
//! notices and holder events, arms the timer at [`Guard::next_deadline`]).
//!
//! Pre-emption ([`Guard::admit_as`]): a writer of [`Role::Yielding`] (a driver that
//! drives the base on its own, a planner) gives way to clients. While it is writing a
//! device (its last command still holds), a client's own command to that device passes
//! and pre-empts it (the registry tells it and the client); while a client's last
//! command still holds, the yielding writer's commands are refused. A command "holds"
//! for the device's command timeout (the writer's own hold within its bounds), or
//! [`PREEMPT_WINDOW`] on a device without a watchdog.

use super::SessionId;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The sender does not hold write access to the device.
    #[error("command ignored: no write access")]
    NoWriteAccess,
    /// The emergency stop is latched (by whom).
    #[error("command ignored: emergency stop latched by {0}")]
    EStop(String),
    /// A yielding writer's command while a client is commanding the device.
    #[error("command ignored: a client is commanding the device (navigation pre-empted)")]
    ClientWriting,
}

/// Who sends a command, for pre-emption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A client (any front end's), or a driver that does not yield.
    Client,
    /// A driver that gives way to clients (a planner).
    Yielding,
}

/// How long a command holds, for pre-emption, on a device without a command watchdog.
pub const PREEMPT_WINDOW: Duration = player_kit::driver::DEFAULT_COMMAND_TIMEOUT;

/// Who is writing one device, for pre-emption.
#[derive(Debug, Default)]
struct Writing {
    /// Until when the last client's command holds.
    client_until: Option<Instant>,
    /// The yielding writer whose command holds, and until when.
    yielder: Option<(SessionId, Instant)>,
}

/// A command the guard let through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admitted {
    /// Passed on.
    Pass,
    /// Passed on, and it resumes a device its watchdog had stopped.
    Resumed,
}

/// The longest a writer's own hold (`CommandHold`) may make one command hold.
pub const MAX_COMMAND_HOLD: Duration = Duration::from_millis(1200);

/// The command watchdog of one device.
#[derive(Debug)]
struct Watchdog {
    timeout: Duration,
    /// When the last command arrived, while a command holds (armed).
    last: Option<Instant>,
    /// How long the last command holds: `timeout`, or its writer's own hold.
    hold: Duration,
    /// The hold the last command's writer asked for (`None`: the timeout), kept so a
    /// changed timeout re-bounds it.
    asked: Option<Duration>,
    /// It stopped the device and no command has arrived since.
    tripped: bool,
}

/// How long a command holds: the writer's own `asked` hold within the device's `timeout`
/// (never shorter) and [`MAX_COMMAND_HOLD`] (never longer, unless the timeout is);
/// without one, the timeout.
fn bounded_hold(asked: Option<Duration>, timeout: Duration) -> Duration {
    asked.map_or(timeout, |h| {
        h.min(MAX_COMMAND_HOLD.max(timeout)).max(timeout)
    })
}

/// The e-stop latch and the command watchdogs of one robot.
#[derive(Debug, Default)]
pub struct Guard {
    estop: Option<String>,
    watchdogs: HashMap<u8, Watchdog>,
    writing: HashMap<u8, Writing>,
}

impl Guard {
    /// Watches `device`: it is stopped when no command has come for `timeout` (none, or
    /// zero: not watched).
    pub fn watch(&mut self, device: u8, timeout: Option<Duration>) {
        if let Some(timeout) = timeout.filter(|t| !t.is_zero()) {
            self.watchdogs.insert(
                device,
                Watchdog {
                    timeout,
                    last: None,
                    hold: timeout,
                    asked: None,
                    tripped: false,
                },
            );
        }
    }

    /// Changes `device`'s command timeout at run time (a front end's setting): a device
    /// without a watchdog gets one. A command already holding is judged by the new
    /// timeout (its writer's own hold re-bounded by it). Returns the timeout before, if
    /// any. A zero `timeout` is ignored (turning the watchdog off is the configuration's).
    pub fn set_timeout(&mut self, device: u8, timeout: Duration) -> Option<Duration> {
        if timeout.is_zero() {
            return self.timeout(device);
        }
        match self.watchdogs.get_mut(&device) {
            Some(w) => {
                let before = w.timeout;
                w.timeout = timeout;
                w.hold = bounded_hold(w.asked, timeout);
                Some(before)
            }
            None => {
                self.watch(device, Some(timeout));
                None
            }
        }
    }

    /// `device`'s command timeout, if it is watched.
    pub fn timeout(&self, device: u8) -> Option<Duration> {
        self.watchdogs.get(&device).map(|w| w.timeout)
    }

    /// Whether `device` has a command watchdog.
    pub fn watches(&self, device: u8) -> bool {
        self.watchdogs.contains_key(&device)
    }

    /// Decides on a command from `session` to `device` at `now`; `holds_write` says
    /// whether the sender holds write access ([`SessionId::SERVER`] needs none). A command
    /// let through arms the device's watchdog. `hold` is how long the writer asked its commands to hold (renewing them at its own
    /// rate; `None`: the device's timeout): the watchdog is armed for it, never less than
    /// the device's timeout and never more than [`MAX_COMMAND_HOLD`] (or the timeout, if
    /// longer).
    pub fn admit(
        &mut self,
        device: u8,
        session: SessionId,
        holds_write: bool,
        now: Instant,
        hold: Option<Duration>,
    ) -> Result<Admitted, Refusal> {
        if session != SessionId::SERVER && !holds_write {
            return Err(Refusal::NoWriteAccess);
        }
        if let Some(by) = &self.estop {
            return Err(Refusal::EStop(by.clone()));
        }
        let Some(w) = self.watchdogs.get_mut(&device) else {
            return Ok(Admitted::Pass);
        };
        w.last = Some(now);
        w.asked = hold;
        w.hold = bounded_hold(hold, w.timeout);
        if std::mem::take(&mut w.tripped) {
            Ok(Admitted::Resumed)
        } else {
            Ok(Admitted::Pass)
        }
    }

    /// Decides on a command from `session` in `role` to `device` at `now`, as
    /// [`Guard::admit`] does, with pre-emption (see the module's documentation): the
    /// admission, and the yielding writer the command pre-empted, if any. A yielding
    /// writer's command is refused ([`Refusal::ClientWriting`]) while a client's holds.
    pub fn admit_as(
        &mut self,
        device: u8,
        session: SessionId,
        holds_write: bool,
        now: Instant,
        hold: Option<Duration>,
        role: Role,
    ) -> Result<(Admitted, Option<SessionId>), Refusal> {
        if session != SessionId::SERVER && !holds_write {
            return Err(Refusal::NoWriteAccess);
        }
        if let Some(by) = &self.estop {
            return Err(Refusal::EStop(by.clone()));
        }
        let window = self
            .watchdogs
            .get(&device)
            .map_or(PREEMPT_WINDOW, |w| bounded_hold(hold, w.timeout));
        let w = self.writing.entry(device).or_default();
        let preempted = match role {
            Role::Yielding => {
                if w.client_until.is_some_and(|until| now < until) {
                    return Err(Refusal::ClientWriting);
                }
                w.yielder = Some((session, now + window));
                None
            }
            Role::Client => {
                w.client_until = Some(now + window);
                match w.yielder.take() {
                    Some((s, until)) if now < until && s != session => Some(s),
                    _ => None,
                }
            }
        };
        let admitted = self.admit(device, session, holds_write, now, hold)?;
        Ok((admitted, preempted))
    }

    /// Forgets `session` as a yielding writer of every device (it let go).
    pub fn forget_writer(&mut self, session: SessionId) {
        for w in self.writing.values_mut() {
            if w.yielder.is_some_and(|(s, _)| s == session) {
                w.yielder = None;
            }
        }
    }

    /// The device was stopped (for any reason): its watchdog waits for the next command.
    pub fn disarm(&mut self, device: u8) {
        if let Some(w) = self.watchdogs.get_mut(&device) {
            w.last = None;
        }
    }

    /// The devices whose last command is at least its hold (the timeout, or its writer's
    /// own) old at `now`, with the hold: each is to be stopped, once (it is disarmed and marked tripped; the next
    /// command re-arms it).
    pub fn expire(&mut self, now: Instant) -> Vec<(u8, Duration)> {
        let mut expired = Vec::new();
        for (&device, w) in self.watchdogs.iter_mut() {
            if w.last.is_some_and(|last| now >= last + w.hold) {
                w.last = None;
                w.tripped = true;
                expired.push((device, w.hold));
            }
        }
        expired.sort_unstable();
        expired
    }

    /// When the earliest armed watchdog expires.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.watchdogs
            .values()
            .filter_map(|w| Some(w.last? + w.hold))
            .min()
    }

    /// Latches the emergency stop for `by`; false if it was latched already. The caller
    /// stops every device that takes commands (and disarms its watchdog).
    pub fn latch(&mut self, by: &str) -> bool {
        if self.estop.is_some() {
            return false;
        }
        self.estop = Some(by.to_string());
        true
    }

    /// Releases the emergency stop; false if it was not latched.
    pub fn release(&mut self) -> bool {
        self.estop.take().is_some()
    }

    /// Who latched the emergency stop, while it is latched.
    pub fn estop(&self) -> Option<&str> {
        self.estop.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHEELS: u8 = b'p';
    const GRIPPER: u8 = b'g';

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn guard() -> Guard {
        let mut g = Guard::default();
        g.watch(WHEELS, Some(ms(500)));
        g.watch(GRIPPER, None);
        g
    }

    fn writer() -> SessionId {
        SessionId::from(7)
    }

    #[test]
    fn a_tripped_watchdog_stops_once_and_the_next_command_rearms_it() {
        let mut g = guard();
        let t0 = Instant::now();
        assert_eq!(
            g.admit(WHEELS, writer(), true, t0, None),
            Ok(Admitted::Pass)
        );
        assert_eq!(g.next_deadline(), Some(t0 + ms(500)));
        assert!(g.expire(t0 + ms(499)).is_empty());
        assert_eq!(g.expire(t0 + ms(500)), vec![(WHEELS, ms(500))]);
        // Stopped once: later checks find nothing to stop.
        assert!(g.expire(t0 + ms(5000)).is_empty());
        assert_eq!(g.next_deadline(), None);
        let t1 = t0 + ms(6000);
        assert_eq!(
            g.admit(WHEELS, writer(), true, t1, None),
            Ok(Admitted::Resumed)
        );
        assert_eq!(
            g.admit(WHEELS, writer(), true, t1, None),
            Ok(Admitted::Pass)
        );
        assert_eq!(g.expire(t1 + ms(500)), vec![(WHEELS, ms(500))]);
    }

    #[test]
    fn each_command_pushes_the_watchdog_deadline_on() {
        let mut g = guard();
        let t0 = Instant::now();
        for k in 0..10 {
            let t = t0 + ms(400 * k);
            g.admit(WHEELS, writer(), true, t, None).unwrap();
            assert!(g.expire(t).is_empty());
        }
        assert_eq!(g.next_deadline(), Some(t0 + ms(3600 + 500)));
    }

    #[test]
    fn a_device_without_a_command_timeout_is_never_stopped_by_the_watchdog() {
        let mut g = guard();
        let t0 = Instant::now();
        g.admit(GRIPPER, writer(), true, t0, None).unwrap();
        assert!(!g.watches(GRIPPER));
        assert!(g.expire(t0 + Duration::from_secs(3600)).is_empty());
        assert_eq!(g.next_deadline(), None);
        g.watch(GRIPPER, Some(Duration::ZERO));
        assert!(!g.watches(GRIPPER), "a zero timeout watches nothing");
    }

    #[test]
    fn a_stopped_device_waits_for_the_next_command_before_its_watchdog_runs_again() {
        let mut g = guard();
        let t0 = Instant::now();
        g.admit(WHEELS, writer(), true, t0, None).unwrap();
        g.disarm(WHEELS);
        assert_eq!(g.next_deadline(), None);
        assert!(g.expire(t0 + ms(1000)).is_empty());
        // Disarmed is not tripped: the next command does not count as a resumption.
        assert_eq!(
            g.admit(WHEELS, writer(), true, t0 + ms(1000), None),
            Ok(Admitted::Pass)
        );
    }

    #[test]
    fn a_command_without_write_access_is_refused_and_arms_nothing() {
        let mut g = guard();
        let t0 = Instant::now();
        assert_eq!(
            g.admit(WHEELS, writer(), false, t0, None),
            Err(Refusal::NoWriteAccess)
        );
        assert_eq!(g.next_deadline(), None);
        // The server itself needs no write access.
        assert_eq!(
            g.admit(WHEELS, SessionId::SERVER, false, t0, None),
            Ok(Admitted::Pass)
        );
    }

    #[test]
    fn a_latched_estop_refuses_every_command_until_it_is_released() {
        let mut g = guard();
        let t0 = Instant::now();
        assert!(g.latch("10.0.0.1:5000"));
        assert!(!g.latch("10.0.0.2:5000"), "latched once");
        assert_eq!(g.estop(), Some("10.0.0.1:5000"));
        let refused = Err(Refusal::EStop("10.0.0.1:5000".into()));
        assert_eq!(g.admit(WHEELS, writer(), true, t0, None), refused);
        assert_eq!(g.admit(WHEELS, SessionId::SERVER, true, t0, None), refused);
        assert_eq!(g.admit(GRIPPER, writer(), true, t0, None), refused);
        assert_eq!(g.next_deadline(), None, "a refused command arms nothing");
        assert!(g.release());
        assert!(!g.release(), "released once");
        assert_eq!(g.estop(), None);
        assert_eq!(
            g.admit(WHEELS, writer(), true, t0, None),
            Ok(Admitted::Pass)
        );
    }

    #[test]
    fn a_refusal_reads_as_the_notice_a_client_gets() {
        assert_eq!(
            Refusal::EStop("web 10.0.0.1".into()).to_string(),
            "command ignored: emergency stop latched by web 10.0.0.1"
        );
        assert_eq!(
            Refusal::NoWriteAccess.to_string(),
            "command ignored: no write access"
        );
    }

    #[test]
    fn a_changed_timeout_judges_the_command_already_holding_and_the_next() {
        let mut g = guard();
        let t0 = Instant::now();
        g.admit(WHEELS, writer(), true, t0, None).unwrap();
        assert_eq!(g.set_timeout(WHEELS, ms(2000)), Some(ms(500)));
        assert_eq!(g.timeout(WHEELS), Some(ms(2000)));
        assert!(g.expire(t0 + ms(1999)).is_empty(), "not at the old 0.5 s");
        assert_eq!(g.expire(t0 + ms(2000)), vec![(WHEELS, ms(2000))]);
        // Shorter again: the next command holds for it.
        g.set_timeout(WHEELS, ms(300));
        let t1 = t0 + ms(5000);
        g.admit(WHEELS, writer(), true, t1, None).unwrap();
        assert_eq!(g.next_deadline(), Some(t1 + ms(300)));
        // A writer's own hold is re-bounded by the new timeout.
        g.admit(WHEELS, writer(), true, t1, Some(ms(1000))).unwrap();
        assert_eq!(g.next_deadline(), Some(t1 + ms(1000)));
        g.set_timeout(WHEELS, ms(1500));
        assert_eq!(g.next_deadline(), Some(t1 + ms(1500)));
        // Zero is not a setting here; an unwatched device gets a watchdog.
        assert_eq!(g.set_timeout(WHEELS, Duration::ZERO), Some(ms(1500)));
        assert!(g.watches(WHEELS));
        assert_eq!(g.set_timeout(GRIPPER, ms(800)), None);
        assert_eq!(g.timeout(GRIPPER), Some(ms(800)));
    }

    #[test]
    fn a_writers_own_hold_counts_within_the_timeout_and_the_bound() {
        let mut g = Guard::default();
        let half = Duration::from_millis(500);
        g.watch(b'p', Some(half));
        let t = Instant::now();
        let writer = SessionId::from(7);
        let long = Some(Duration::from_secs(1));
        g.admit(b'p', writer, true, t, long).unwrap();
        assert_eq!(g.next_deadline(), Some(t + Duration::from_secs(1)));
        assert!(g.expire(t + Duration::from_millis(900)).is_empty());
        assert_eq!(
            g.expire(t + Duration::from_secs(1)),
            vec![(b'p', Duration::from_secs(1))]
        );
        // Past the bound: cut to it; below the timeout: raised to it.
        g.admit(b'p', writer, true, t, Some(Duration::from_secs(9)))
            .unwrap();
        assert_eq!(g.next_deadline(), Some(t + MAX_COMMAND_HOLD));
        g.admit(b'p', writer, true, t, Some(Duration::from_millis(100)))
            .unwrap();
        assert_eq!(g.next_deadline(), Some(t + half));
        // A plain command goes back to the timeout.
        g.admit(b'p', writer, true, t, None).unwrap();
        assert_eq!(g.next_deadline(), Some(t + half));
    }

    fn planner() -> SessionId {
        SessionId::from(99)
    }

    #[test]
    fn a_clients_command_pre_empts_a_yielding_writer_and_goes_through() {
        let mut g = guard();
        let t0 = Instant::now();
        // The planner drives; a client's own command passes and names the planner.
        assert_eq!(
            g.admit_as(WHEELS, planner(), true, t0, None, Role::Yielding),
            Ok((Admitted::Pass, None))
        );
        assert_eq!(
            g.admit_as(WHEELS, writer(), true, t0 + ms(100), None, Role::Client),
            Ok((Admitted::Pass, Some(planner())))
        );
        // Pre-empted once: the client's next command pre-empts nobody.
        assert_eq!(
            g.admit_as(WHEELS, writer(), true, t0 + ms(200), None, Role::Client),
            Ok((Admitted::Pass, None))
        );
        // The watchdog runs for the client's command as for any.
        assert_eq!(g.next_deadline(), Some(t0 + ms(700)));
    }

    #[test]
    fn a_yielding_writer_is_refused_while_a_clients_command_holds() {
        let mut g = guard();
        let t0 = Instant::now();
        g.admit_as(WHEELS, writer(), true, t0, None, Role::Client)
            .unwrap();
        assert_eq!(
            g.admit_as(WHEELS, planner(), true, t0 + ms(499), None, Role::Yielding),
            Err(Refusal::ClientWriting)
        );
        // A refused command arms nothing: the deadline is still the client's.
        assert_eq!(g.next_deadline(), Some(t0 + ms(500)));
        // Once the client's command no longer holds, the planner drives again.
        assert_eq!(
            g.admit_as(WHEELS, planner(), true, t0 + ms(500), None, Role::Yielding),
            Ok((Admitted::Pass, None))
        );
        // A client's long hold (its own rate) keeps the planner off that long.
        g.admit_as(
            WHEELS,
            writer(),
            true,
            t0 + ms(600),
            Some(ms(1000)),
            Role::Client,
        )
        .unwrap();
        assert_eq!(
            g.admit_as(WHEELS, planner(), true, t0 + ms(1599), None, Role::Yielding),
            Err(Refusal::ClientWriting)
        );
        assert!(g
            .admit_as(WHEELS, planner(), true, t0 + ms(1600), None, Role::Yielding)
            .is_ok());
    }

    #[test]
    fn a_yielding_writer_that_stopped_writing_is_not_pre_empted() {
        let mut g = guard();
        let t0 = Instant::now();
        g.admit_as(WHEELS, planner(), true, t0, None, Role::Yielding)
            .unwrap();
        // Its command no longer holds (it fell silent; the watchdog stopped the base).
        assert_eq!(
            g.admit_as(WHEELS, writer(), true, t0 + ms(500), None, Role::Client),
            Ok((Admitted::Pass, None))
        );
        // A yielding writer that let go is forgotten at once.
        g.admit_as(GRIPPER, planner(), true, t0, None, Role::Yielding)
            .unwrap();
        g.forget_writer(planner());
        assert_eq!(
            g.admit_as(GRIPPER, writer(), true, t0 + ms(1), None, Role::Client),
            Ok((Admitted::Pass, None))
        );
    }

    #[test]
    fn pre_emption_on_an_unwatched_device_uses_the_window() {
        let mut g = guard();
        let t0 = Instant::now();
        g.admit_as(GRIPPER, writer(), true, t0, None, Role::Client)
            .unwrap();
        assert_eq!(
            g.admit_as(
                GRIPPER,
                planner(),
                true,
                t0 + PREEMPT_WINDOW - ms(1),
                None,
                Role::Yielding
            ),
            Err(Refusal::ClientWriting)
        );
        assert!(g
            .admit_as(
                GRIPPER,
                planner(),
                true,
                t0 + PREEMPT_WINDOW,
                None,
                Role::Yielding
            )
            .is_ok());
    }

    #[test]
    fn write_access_and_the_estop_come_before_pre_emption() {
        let mut g = guard();
        let t0 = Instant::now();
        g.admit_as(WHEELS, planner(), true, t0, None, Role::Yielding)
            .unwrap();
        // A client without write access pre-empts nothing.
        assert_eq!(
            g.admit_as(WHEELS, writer(), false, t0, None, Role::Client),
            Err(Refusal::NoWriteAccess)
        );
        g.latch("10.0.0.1:5000");
        let refused = Err(Refusal::EStop("10.0.0.1:5000".into()));
        assert_eq!(
            g.admit_as(WHEELS, writer(), true, t0, None, Role::Client),
            refused
        );
        assert_eq!(
            g.admit_as(WHEELS, planner(), true, t0, None, Role::Yielding),
            refused
        );
        g.release();
        // The planner's command from before still holds: the client pre-empts it.
        assert_eq!(
            g.admit_as(WHEELS, writer(), true, t0 + ms(10), None, Role::Client),
            Ok((Admitted::Pass, Some(planner())))
        );
        assert_eq!(
            Refusal::ClientWriting.to_string(),
            "command ignored: a client is commanding the device (navigation pre-empted)"
        );
    }
}
