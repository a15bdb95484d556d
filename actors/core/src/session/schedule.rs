//! The schedule: when rounds fall due in each data mode (absolute deadlines for
//! continuous, `y d` for the request modes, arrivals limited to the rate for push new),
//! the wait for every device's first reading, and the quiet-device warning.

use super::access::Slot;
use super::Session;
use actix::prelude::*;
use player_proto::DataMode;
use slog::warn;
use std::time::Instant;

impl Session {
    /// Whether every read device has a reading.
    pub(super) fn ready(&self) -> bool {
        self.slots.iter().all(|s| !s.reads() || s.latest.is_some())
    }

    /// After a change of devices or data: send what became sendable.
    pub(super) fn after_change(&mut self, ctx: &mut Context<Self>) {
        if self.mode == DataMode::Continuous && !self.ticking && self.slots.iter().any(Slot::reads)
        {
            // Ticking stopped while the client read nothing; start again, one period on.
            self.next_tick = crate::timer::on_grid(Instant::now() + self.period, self.period);
            self.schedule_tick(ctx);
        }
        if !self.ready() {
            if self.waiting_since.is_none() {
                self.waiting_since = Some(Instant::now());
                self.warned_quiet = false;
            }
            return;
        }
        self.waiting_since = None;
        match self.mode {
            DataMode::Continuous => {
                if self.round_due {
                    self.round_due = false;
                    self.send_round(false, ctx);
                }
            }
            DataMode::PushNew => self.push_new(ctx),
            DataMode::RequestReply | DataMode::PullNew => self.serve_requests(ctx),
        }
    }

    /// Sets the session's repeating timer for `next_tick` (one timer for the session's
    /// life: a tick allocates nothing).
    pub(super) fn schedule_tick(&mut self, _ctx: &mut Context<Self>) {
        let now = Instant::now();
        if self.next_tick + self.period < now {
            // Far behind (the process was stopped, say): skip the missed ticks.
            let behind = now.duration_since(self.next_tick).as_nanos() / self.period.as_nanos();
            self.next_tick += self.period * behind as u32;
        }
        self.ticks.set(self.next_tick);
        self.ticking = true;
    }

    /// Stops the ticks until [`Self::schedule_tick`].
    pub(super) fn stop_ticking(&mut self) {
        self.ticks.clear();
        self.ticking = false;
    }

    pub(super) fn on_tick(&mut self, ctx: &mut Context<Self>) {
        self.ticking = false;
        if self.mode != DataMode::Continuous {
            return;
        }
        if !self.slots.iter().any(Slot::reads) {
            // Nothing to send: stop ticking until a device is granted (`after_change`).
            return;
        }
        self.next_tick += self.period;
        self.schedule_tick(ctx);
        // The readings left in the inbox since the last round.
        self.sync_inbox(ctx);
        if self.ready() {
            self.send_round(false, ctx);
        } else {
            self.round_due = true;
            self.check_quiet();
        }
        self.refresh_inbox(ctx);
    }

    pub(super) fn check_quiet(&mut self) {
        let Some(since) = self.waiting_since else {
            return;
        };
        if !self.warned_quiet && since.elapsed() >= self.opts.quiet_after {
            self.warned_quiet = true;
            let quiet: Vec<String> = self
                .slots
                .iter()
                .filter(|s| s.reads() && s.latest.is_none())
                .map(|s| player_kit::log::device(s.code))
                .collect();
            warn!(self.log, "waiting for a first reading"; "devices" => quiet.join(","), "seconds" => since.elapsed().as_secs());
        }
    }

    pub(super) fn serve_requests(&mut self, ctx: &mut Context<Self>) {
        while self.rounds_requested > 0 && self.out.is_empty() && self.ready() {
            let only_new = self.mode == DataMode::PullNew;
            if only_new && !self.slots.iter().any(|s| s.reads() && s.is_new()) {
                return; // wait for something new
            }
            self.rounds_requested -= 1;
            // A requested round is never skipped: the client asked for it (at most 16 wait).
            self.write_round(only_new, ctx);
        }
        if self.rounds_requested > 0 && !self.ready() {
            self.check_quiet();
        }
    }

    pub(super) fn push_new(&mut self, ctx: &mut Context<Self>) {
        if self.push_timer.is_some() || !self.slots.iter().any(|s| s.reads() && s.is_new()) {
            return;
        }
        let now = Instant::now();
        match self.last_push {
            Some(last) if now < last + self.period => {
                let at = last + self.period;
                self.push_timer =
                    Some(
                        ctx.spawn(crate::timer::sleep_until(at).into_actor(self).map(
                            |_, act, ctx| {
                                act.push_timer = None;
                                act.push_new(ctx);
                            },
                        )),
                    );
            }
            _ => {
                if self.send_round(true, ctx) {
                    self.last_push = Some(now);
                }
            }
        }
    }

    /// Whether this session needs a message per reading now: unless it sends rounds on
    /// deadlines, has every first reading and no round waits for data, a reading must wake
    /// it. Otherwise its next tick picks the newest readings up from the inbox.
    fn wants_messages(&self) -> bool {
        self.mode != DataMode::Continuous
            || self.round_due
            || !self.ticking
            || !self.requesting.is_empty()
            || !self.ready()
    }

    /// Takes the readings left in the inbox (as if they had come as messages) and tells it
    /// whether readings should come as messages from now on, until both agree.
    pub(super) fn sync_inbox(&mut self, ctx: &mut Context<Self>) {
        loop {
            let want = self.wants_messages();
            let mut buf = std::mem::take(&mut self.inbox_buf);
            self.inbox.take(want, &mut buf);
            self.inbox_messages = want;
            if buf.is_empty() {
                self.inbox_buf = buf;
                return;
            }
            let mut changed = false;
            for d in buf.drain(..) {
                changed |= self.take(d, true);
            }
            self.inbox_buf = buf;
            if changed {
                self.after_change(ctx);
            }
        }
    }

    /// [`Self::sync_inbox`] when whether this session wants messages has changed.
    pub(super) fn refresh_inbox(&mut self, ctx: &mut Context<Self>) {
        if self.wants_messages() != self.inbox_messages {
            self.sync_inbox(ctx);
        }
    }
}
