//! Rounds written by the thread's timer, with no wake-up of the session.
//!
//! A session in the steady state of continuous mode (every read device has a reading, no
//! round waits for data, no subscription in flight, nothing unsent in its own buffer)
//! does the same at every deadline: take the readings the drivers left in its inbox,
//! write one round of every read device (or skip it: `pace.rs`), set the next deadline.
//! Waking the session's task for that (a waker per session, the actor's context polled,
//! its mailbox and streams looked at) costs a thread more than the round itself. So such
//! a session *parks*: it moves its device list into a cell its repeating timer can reach
//! (its writer and schedule are there already: the shelf is their one home, so that the
//! session's task does not hold second ones while the tick works with the first), and
//! the thread's timer task, at each wake-up, runs the tick
//! of every due parked session itself, one after the other
//! ([`crate::timer::TickHandle::run_on_thread`]), with the same code as the session's own
//! tick.
//!
//! Whatever needs the actor is handed back to it: the write failed, the kernel did not
//! take a whole round (the rest must be flushed), the client stalled, a reading made
//! something sendable, the session is no longer steady, a round waits for a first
//! reading (the quiet-device warning). The tick then asks its timer to wake the session,
//! which takes its parts back (*unparks*) and does what is left. Every entry into the
//! actor (a message, a continuation of its own futures, the end) unparks first, so the
//! actor's code never sees the parts it lent; a session parks again only at the end of
//! its own tick.

use super::list::{wants_messages, DeviceList};
use super::schedule::{Due, Schedule};
use super::writer::{Sent, Writer};
use super::Session;
use crate::timer::{Fired, OnThread};
use actix::prelude::*;
use std::cell::{RefCell, RefMut};
use std::io;
use std::time::{Duration, Instant};

/// The parts a parked session lends its thread's tick, and what the tick leaves for the
/// session to do.
pub(super) struct Parked {
    list: DeviceList,
    stall_limit: Duration,
    /// The tick asked for the session; until it has taken its parts back, the next
    /// deadline is left to it.
    handed_back: bool,
    /// A deadline came while handed back: the session's own tick is owed.
    owed: bool,
    /// The write failed.
    failed: Option<io::Error>,
    /// The client stalled (rounds skipped this long with nothing acknowledged).
    stalled: Option<Duration>,
    /// A reading may have made something sendable.
    changed: bool,
    /// A round waited for a first reading: check the quiet-device warning.
    quiet: bool,
}

/// The payload of the session's repeating timer, so the thread's timer task finds a due
/// session's timer state and its parts in one allocation, one after the other in memory:
/// the session's writer and schedule, always, and the device list it lends while parked
/// (`None`: with the session). The session and the tick never use the writer or the
/// schedule at once: they run on one thread, and the tick runs only while the session
/// is parked, which every entry into the session ends first.
pub(super) struct Shelf {
    writer: RefCell<Writer>,
    schedule: RefCell<Schedule>,
    parked: RefCell<Option<Parked>>,
}

impl Shelf {
    /// A shelf holding the session's writer and schedule, nothing lent.
    pub(super) fn new(writer: Writer, schedule: Schedule) -> Self {
        Shelf {
            writer: RefCell::new(writer),
            schedule: RefCell::new(schedule),
            parked: RefCell::new(None),
        }
    }

    /// The session's writer.
    pub(super) fn writer(&self) -> RefMut<'_, Writer> {
        self.writer.borrow_mut()
    }

    /// The session's schedule.
    pub(super) fn schedule(&self) -> RefMut<'_, Schedule> {
        self.schedule.borrow_mut()
    }
}

impl OnThread for Shelf {
    fn tick(&self) -> Fired {
        tick(self)
    }

    /// The device slots the round is laid out from, and the inbox.
    fn prefetch(&self) {
        if let Ok(parked) = self.parked.try_borrow() {
            if let Some(p) = parked.as_ref() {
                p.list.prefetch();
            }
        }
    }
}

/// One deadline of a parked session: what [`Session::on_tick`] does, without the actor.
fn tick(shelf: &Shelf) -> Fired {
    let mut parked = shelf.parked.borrow_mut();
    let Some(p) = parked.as_mut() else {
        // Not parked (the session took its parts back): its stream takes the deadlines.
        return Fired::TO_OWNER;
    };
    if p.handed_back {
        p.owed = true;
        return Fired::TO_OWNER;
    }
    let now = Instant::now();
    let mut schedule = shelf.schedule();
    let next = match schedule.on_tick(now, p.list.any_reads()) {
        Due::Tick(at) => at,
        _ => {
            // Ticking stops (nothing read, or out of continuous mode): the session's.
            p.handed_back = true;
            return Fired::TO_OWNER;
        }
    };
    // The readings left in the inbox since the last round.
    p.changed |= p.list.drain_inbox(&schedule);
    let mut writer = shelf.writer();
    match schedule.tick_round(p.list.ready()) {
        Due::Round { only_new } => {
            match writer.send_round(&mut p.list.slots, only_new, now, p.stall_limit) {
                Sent::Written(Err(e)) => p.failed = Some(e),
                Sent::Written(Ok(())) => schedule.sent(now),
                Sent::Stalled(stalled) => p.stalled = Some(stalled),
                Sent::Empty | Sent::Skipped => {}
            }
        }
        _ => p.quiet = true,
    }
    let wake = p.changed
        || p.quiet
        || p.failed.is_some()
        || p.stalled.is_some()
        || !writer.idle()
        || wants_messages(&p.list, &schedule) != p.list.inbox_messages();
    p.handed_back = wake;
    Fired {
        next: Some(next),
        wake,
    }
}

impl Session {
    /// Whether the session is in the steady state a thread's tick can serve alone.
    fn steady(&self) -> bool {
        self.conn.closing_reason.is_none()
            && self.timers.push.is_none()
            && self.timers.ticks.deadline().is_some()
            && self.list.any_reads()
            && !self.wants_messages()
            && !self.list.inbox_messages()
            && self.timers.writer().idle()
    }

    /// Lends the session's device list and schedule to its thread's tick when it is
    /// steady (at the end of its own tick); the tick writes through the writer they share.
    pub(super) fn park(&mut self) {
        let shelf = &self.timers.ticks.payload().parked;
        if shelf.borrow().is_some() || !self.steady() || !crate::timer::init_thread() {
            return;
        }
        let parked = Parked {
            list: {
                let lent = self.list.lent();
                std::mem::replace(&mut self.list, lent)
            },
            stall_limit: self.conn.opts.stall_timeout,
            handed_back: false,
            owed: false,
            failed: None,
            stalled: None,
            changed: false,
            quiet: false,
        };
        *shelf.borrow_mut() = Some(parked);
        self.timers.ticks.run_on_thread(true);
    }

    /// Takes the session's parts back from its thread's tick, if it lent them; returns
    /// what the tick left to do.
    fn take_back(&mut self) -> Option<Parked> {
        let mut p = self.timers.ticks.payload().parked.borrow_mut().take()?;
        self.timers.ticks.run_on_thread(false);
        std::mem::swap(&mut self.list, &mut p.list);
        Some(p)
    }

    /// Takes the session's parts back, if it lent them, and does what its thread's tick
    /// left to do (a write's failure or rest, a stall, a change, the tick owed). Returns
    /// whether it was parked. Every entry into the actor calls this first.
    pub(super) fn unpark(&mut self, ctx: &mut Context<Self>) -> bool {
        let Some(p) = self.take_back() else {
            return false;
        };
        if let Some(e) = p.failed {
            self.fail(e, ctx);
        } else if !self.timers.writer().drained() {
            self.start_flush(ctx);
        }
        if let Some(stalled) = p.stalled {
            self.after_round(Sent::Stalled(stalled), ctx);
        }
        if p.changed {
            self.after_change(ctx);
        }
        if p.quiet {
            self.check_quiet();
        }
        self.refresh_inbox(ctx);
        if p.owed {
            self.on_tick(ctx);
        }
        true
    }

    /// At the session's end: its parts back, whatever the tick left undone.
    pub(super) fn unpark_at_end(&mut self) {
        self.take_back();
    }
}
