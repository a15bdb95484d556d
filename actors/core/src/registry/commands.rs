//! The actor's side of the guard (`guard.rs` decides): every command passes here (write
//! access, the e-stop, pre-emption of a yielding driver by a client, the watchdog
//! re-armed), writers' own holds, the e-stop latched and released, the watchdog's timer
//! and its stops, and the events drivers holding devices are told of all of it.

use super::guard::{Admitted, Role};
use super::{CommandHold, EStop, Registry, Sent, SessionId, Tapped};
use crate::notice::{kind, Notice};
use actix::prelude::*;
use player_kit::driver::{Command, StopReason};
use player_kit::source::HolderEvent;
use slog::{info, warn};
use std::sync::Arc;
use std::time::Instant;

impl Registry {
    /// Arms the watchdog check at the guard's earliest deadline.
    pub(super) fn schedule_watchdog(&mut self, ctx: &mut Context<Self>) {
        let Some(at) = self.guard.next_deadline() else {
            return;
        };
        match self.watchdog_check {
            // A check is due no later: it re-arms for later deadlines when it runs.
            Some((_, pending)) if pending <= at => return,
            Some((h, _)) => {
                ctx.cancel_future(h);
            }
            None => {}
        }
        let wait = at.saturating_duration_since(Instant::now());
        let h = ctx.run_later(wait, |act, ctx| {
            act.watchdog_check = None;
            act.check_watchdogs(ctx);
        });
        self.watchdog_check = Some((h, at));
    }

    /// Stops every device whose command has not been renewed within its timeout (once:
    /// the next command re-arms it).
    fn check_watchdogs(&mut self, ctx: &mut Context<Self>) {
        for (code, timeout) in self.guard.expire(Instant::now()) {
            let writer = self
                .table
                .devices
                .get(&code)
                .map_or_else(|| "".into(), |d| d.writer_client());
            self.stop_device(code, StopReason::Watchdog, writer.clone());
            self.tell_drivers(Some(code), &HolderEvent::Watchdog { device: code });
            if self.watchdog_explained {
                warn!(self.log, "command watchdog: no command in time; device stopped"; "device" => player_kit::log::device(code), "command_timeout_s" => timeout.as_secs_f64(), "client" => &*writer);
            } else {
                // The first time only: a client written for 0.7.4a may send one command
                // and expect it to hold (docs/clients-of-2000.md).
                self.watchdog_explained = true;
                let driver = self
                    .table
                    .devices
                    .get(&code)
                    .map_or("", |d| d.driver_name.as_str());
                let key = format!(
                    "command_timeout = 0 in [[robot]] '{}' (or in its [[robot.driver]] '{driver}')",
                    self.table.robot
                );
                warn!(self.log, "command watchdog: no command in time; device stopped (a client written for Player 0.7.4a that sends one command expects it to hold: set the key below to restore that for this robot, see docs/clients-of-2000.md)"; "device" => player_kit::log::device(code), "command_timeout_s" => timeout.as_secs_f64(), "restore_0_7_4a" => key, "client" => &*writer);
            }
            self.notify_holders(
                code,
                Notice::new(
                    kind::WATCHDOG,
                    code,
                    format!(
                        "no command for {:.2} s (command_timeout): stopped until the next command",
                        timeout.as_secs_f64()
                    ),
                ),
            );
        }
        self.schedule_watchdog(ctx);
    }

    /// Sends `event` to the drivers holding devices: those holding `only` with write
    /// access, or (`None`) every driver holding any device, once each.
    pub(super) fn tell_drivers(&self, only: Option<u8>, event: &HolderEvent) {
        let mut told: Vec<SessionId> = Vec::new();
        for (&code, d) in &self.table.devices {
            if only.is_some_and(|o| o != code) {
                continue;
            }
            for (session, h, i) in d.internal() {
                if (only.is_some() && !h.write) || told.contains(&session) {
                    continue;
                }
                if let Some(e) = &i.events {
                    e.do_send(event.clone());
                }
                told.push(session);
            }
        }
    }

    /// A client's command to `code` pre-empted the yielding driver `yielder`: the driver
    /// is told (it stops driving), and so is the client (if it watches notices).
    fn preempted(&self, code: u8, yielder: SessionId, by: SessionId, client: &str) {
        let Some(d) = self.table.devices.get(&code) else {
            return;
        };
        let name = d
            .holders
            .get(&yielder)
            .map_or_else(String::new, |h| h.client.to_string());
        if let Some(e) = d
            .holders
            .get(&yielder)
            .and_then(|h| h.internal.as_ref())
            .and_then(|i| i.events.as_ref())
        {
            e.do_send(HolderEvent::Preempted {
                device: code,
                by: client.to_string(),
            });
        }
        info!(self.log, "navigation pre-empted: a client's own command went through"; "device" => player_kit::log::device(code), "holder" => &name, "client" => client);
        self.notify(
            by,
            Notice::new(
                kind::PREEMPTED,
                code,
                format!("navigation pre-empted: {name} stopped; this client's commands drive the device"),
            ),
        );
    }
}

impl Handler<CommandHold> for Registry {
    type Result = ();

    /// Records how long this writer's commands hold; the next command it sends arms the
    /// watchdog with it.
    fn handle(&mut self, msg: CommandHold, _ctx: &mut Self::Context) {
        if let Some(h) = self
            .table
            .devices
            .get_mut(&msg.device)
            .and_then(|d| d.holders.get_mut(&msg.session))
            .filter(|h| h.write)
        {
            h.hold = msg.hold;
        }
    }
}

impl Handler<Command> for Registry {
    type Result = ();

    /// The guard on every command: the sender must still hold write access, nothing passes
    /// while the emergency stop is latched, a client's command pre-empts a yielding
    /// driver's (and a yielding driver's is refused while a client's holds), and a watched
    /// device's command re-arms its watchdog. The driver gets it under its own code.
    fn handle(&mut self, mut msg: Command, ctx: &mut Self::Context) {
        let code = msg.device;
        let Some(d) = self.table.devices.get(&code) else {
            return;
        };
        let holder = d.holders.get(&msg.session);
        let holds_write = holder.is_some_and(|h| h.write);
        let hold = holder.and_then(|h| h.hold);
        let internal = holder.and_then(|h| h.internal.clone());
        let client: Arc<str> = holder.map_or_else(|| "".into(), |h| h.client.clone());
        let role = match &internal {
            Some(i) if i.yields => Role::Yielding,
            _ => Role::Client,
        };
        let (own, driver) = (d.own, d.driver.command.clone());
        match self
            .guard
            .admit_as(code, msg.session, holds_write, Instant::now(), hold, role)
        {
            Err(refusal) => {
                self.notify(
                    msg.session,
                    Notice::new(kind::COMMAND, code, refusal.to_string()),
                );
                if let Some(e) = internal.and_then(|i| i.events) {
                    e.do_send(HolderEvent::Refused {
                        device: code,
                        reason: refusal.to_string(),
                    });
                }
                return;
            }
            Ok((admitted, preempted)) => {
                if admitted == Admitted::Resumed {
                    info!(self.log, "command watchdog: commands again; device resumed"; "device" => player_kit::log::device(code), "client" => &*client);
                }
                if let Some(yielder) = preempted {
                    self.preempted(code, yielder, msg.session, &client);
                }
            }
        }
        for (t, _) in &self.taps {
            t.do_send(Tapped {
                kind: Sent::Command,
                device: code,
                payload: msg.payload.clone(),
                timestamp: player_kit::driver::Timestamp::now(),
            });
        }
        msg.device = own;
        driver.do_send(msg);
        if self.guard.watches(code) {
            self.schedule_watchdog(ctx);
        }
    }
}

impl Handler<EStop> for Registry {
    type Result = bool;

    fn handle(&mut self, msg: EStop, ctx: &mut Self::Context) -> bool {
        let notice = if msg.latch {
            if !self.guard.latch(&msg.client) {
                return false;
            }
            let by: Arc<str> = msg.client.as_str().into();
            for code in self.table.commandable() {
                self.stop_device(code, StopReason::EmergencyStop, by.clone());
            }
            if let Some((h, _)) = self.watchdog_check.take() {
                ctx.cancel_future(h);
            }
            self.tell_drivers(
                None,
                &HolderEvent::EStop {
                    latched: true,
                    by: msg.client.clone(),
                },
            );
            warn!(self.log, "EMERGENCY STOP latched: every command is ignored until it is released"; "client" => &msg.client);
            Notice::new(
                kind::ESTOP,
                0,
                format!("emergency stop latched by {}", msg.client),
            )
        } else {
            if !self.guard.release() {
                return false;
            }
            warn!(self.log, "emergency stop released"; "client" => &msg.client);
            self.tell_drivers(
                None,
                &HolderEvent::EStop {
                    latched: false,
                    by: msg.client.clone(),
                },
            );
            Notice::new(
                kind::ESTOP_RELEASED,
                0,
                format!("emergency stop released by {}", msg.client),
            )
        };
        for w in self.watchers.values() {
            w.do_send(notice.clone());
        }
        true
    }
}
