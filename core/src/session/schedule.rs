//! The schedule: when rounds fall due in each data mode (absolute deadlines for
//! continuous, `y d` for the request modes, arrivals limited to the rate for push new),
//! the wait for every device's first reading, and the quiet-device warning.

use super::access::Slot;
use super::Session;
use actix::prelude::*;
use player_proto::{device, DataMode};
use slog::warn;
use std::time::Instant;

impl Session {
    /// Whether every read device has a reading.
    pub(super) fn ready(&self) -> bool {
        self.slots.iter().all(|s| !s.reads() || s.latest.is_some())
    }

    /// After a change of devices or data: send what became sendable.
    pub(super) fn after_change(&mut self, ctx: &mut Context<Self>) {
        if self.mode == DataMode::Continuous
            && self.tick.is_none()
            && self.slots.iter().any(Slot::reads)
        {
            // Ticking stopped while the client read nothing; start again, one period on.
            self.next_tick = Instant::now() + self.period;
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

    pub(super) fn schedule_tick(&mut self, ctx: &mut Context<Self>) {
        if let Some(h) = self.tick.take() {
            ctx.cancel_future(h);
        }
        let now = Instant::now();
        if self.next_tick + self.period < now {
            // Far behind (the process was stopped, say): skip the missed ticks.
            let behind = now.duration_since(self.next_tick).as_nanos() / self.period.as_nanos();
            self.next_tick += self.period * behind as u32;
        }
        let at = self.next_tick;
        self.tick = Some(
            ctx.spawn(
                crate::timer::sleep_until(at)
                    .into_actor(self)
                    .map(|_, act, ctx| act.on_tick(ctx)),
            ),
        );
    }

    pub(super) fn on_tick(&mut self, ctx: &mut Context<Self>) {
        self.tick = None;
        if self.mode != DataMode::Continuous {
            return;
        }
        if !self.slots.iter().any(Slot::reads) {
            // Nothing to send: stop ticking until a device is granted (`after_change`).
            return;
        }
        self.next_tick += self.period;
        self.schedule_tick(ctx);
        if self.ready() {
            self.send_round(false, ctx);
        } else {
            self.round_due = true;
            self.check_quiet();
        }
    }

    pub(super) fn check_quiet(&mut self) {
        let Some(since) = self.waiting_since else {
            return;
        };
        if !self.warned_quiet && since.elapsed() >= self.opts.quiet_after {
            self.warned_quiet = true;
            let quiet: Vec<&str> = self
                .slots
                .iter()
                .filter(|s| s.reads() && s.latest.is_none())
                .map(|s| device::name(s.code))
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
}
