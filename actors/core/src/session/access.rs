//! The per-device access state machine: what a client holds on each device of its list,
//! how a `d r` request changes it (merging as the original does), the registry's grants,
//! and commands checked against it.

use super::list::Slot;
use super::Session;
use crate::logging::code as esc;
use crate::notice::{kind, Notice};
use crate::registry::{Subscribe, Unsubscribe};
use actix::prelude::*;
use bytes::Bytes;
use player_kit::driver::{Command, DeviceData};
use player_kit::fresh::{self, Stamp};
use player_proto::message;
use player_proto::{access, device};
use slog::{info, warn};
use std::io::IoSlice;

/// A request or reply as text for the log (`srpw`), unprintable bytes as `?`.
fn pairs_text(pairs: &[(u8, u8)]) -> String {
    pairs
        .iter()
        .flat_map(|&(d, a)| [d, a])
        .map(|b| {
            if b.is_ascii_graphic() {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect()
}

/// The access a client holds after asking for `req` while holding `cur` (`None` when the
/// device is not in its list). See docs/reference/client-protocol-notes.md 3.2; `e` is
/// treated as "not listed".
fn next_access(cur: Option<u8>, req: u8) -> Option<u8> {
    let (r, w) = match cur {
        Some(access::READ) => (true, false),
        Some(access::WRITE) => (false, true),
        Some(access::ALL) => (true, true),
        _ => (false, false),
    };
    match req {
        access::READ if w && !r => Some(access::ALL),
        access::WRITE if r && !w => Some(access::ALL),
        access::READ | access::WRITE | access::ALL => Some(req),
        access::CLOSE if r || w || cur == Some(access::CLOSE) => Some(access::CLOSE),
        _ => cur,
    }
}

impl Session {
    pub(super) fn on_request(
        &mut self,
        second: u8,
        pairs: Vec<(u8, u8)>,
        odd_byte: Option<u8>,
        ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, ()> {
        if second != b'r' {
            warn!(
                self.conn.log,
                "device request with second byte {} instead of 'r'; treated as a request",
                esc(second)
            );
        }
        if let Some(b) = odd_byte {
            warn!(
                self.conn.log,
                "device request of odd size; trailing byte {} ignored",
                esc(b)
            );
        }
        let Some(registry) = self.conn.registry() else {
            // The server has let its registry go: it is shutting down.
            self.conn.closing_reason = Some("server shutting down".into());
            ctx.stop();
            return Box::pin(fut::ready(()));
        };
        // Pairs refused before the registry is asked, with why (for the error channel).
        let mut refused: Vec<(u8, String)> = Vec::new();
        let finals = self.final_access(&pairs, &mut refused);
        // Net changes, in order of first appearance: (device, access, whether the registry
        // was asked), and the registry's answers to come, in the same order.
        let mut calls: Vec<(u8, u8, bool)> = Vec::new();
        let mut asked = Vec::new();
        let recipient = self.data_recipient(ctx);
        // One name for the registry's holders of every device asked for here.
        let client: std::sync::Arc<str> = self.conn.client().into();
        for &(dev, new) in &finals {
            let cur = self.list.access_of(dev);
            // Unchanged (a device not listed before stays unlisted: `new` is `None` only then).
            let Some(new) = new.filter(|&n| Some(n) != cur) else {
                continue;
            };
            if cur.is_none() && self.list.slots.len() + calls.len() >= self.conn.opts.max_devices {
                let why = format!(
                    "more than {} devices for one client",
                    self.conn.opts.max_devices
                );
                refused.push((dev, why));
                continue;
            }
            let call = match new {
                access::READ | access::WRITE | access::ALL => Some(registry.send(Subscribe {
                    session: self.conn.id,
                    device: dev,
                    read: matches!(new, access::READ | access::ALL),
                    write: matches!(new, access::WRITE | access::ALL),
                    recipient: recipient.clone(),
                    client: client.clone(),
                })),
                access::CLOSE => {
                    registry.do_send(Unsubscribe {
                        session: self.conn.id,
                        device: dev,
                    });
                    None
                }
                _ => continue,
            };
            let was_asked = call.is_some();
            if let Some(call) = call {
                self.list.requesting(dev);
                asked.push(call);
            }
            calls.push((dev, new, was_asked));
        }
        // The requests themselves are awaited together (each small: no per-device future
        // around them, which while thousands of clients connect at once is most of what
        // a session holds).
        Box::pin(
            futures::future::join_all(asked)
                .into_actor(self)
                .map(move |answers, act, ctx| {
                    act.unpark(ctx);
                    act.list.answered();
                    let mut answers = answers.into_iter();
                    for (dev, new, was_asked) in calls {
                        let r = if was_asked { answers.next() } else { None };
                        if let Some(why) = act.apply_grant(dev, new, r) {
                            refused.push((dev, why));
                        }
                    }
                    let reply: Vec<(u8, u8)> = pairs
                        .iter()
                        .map(|&(dev, _)| (dev, act.list.access_of(dev).unwrap_or(access::ERROR)))
                        .collect();
                    info!(act.conn.log, "request answered"; "request" => pairs_text(&pairs), "reply" => pairs_text(&reply));
                    let bytes = message::reply(&reply);
                    act.write(&[IoSlice::new(&bytes)], ctx);
                    for (dev, why) in refused {
                        act.notice(Notice::new(kind::REFUSED, dev, why), ctx);
                    }
                    act.after_change(ctx);
                }),
        )
    }

    /// Each device's access once the request's `pairs` are applied left to right, as the
    /// original does: (device, access after the request), in order of first appearance.
    /// The pairs refused on the way are added to `refused`, with why.
    fn final_access(
        &self,
        pairs: &[(u8, u8)],
        refused: &mut Vec<(u8, String)>,
    ) -> Vec<(u8, Option<u8>)> {
        let mut finals: Vec<(u8, Option<u8>)> = Vec::new(); // (device, access after the request)
        for &(dev, req) in pairs {
            if !self.conn.opts.devices[usize::from(dev)] {
                // Unknown here: `e`, without taking a slot.
                refused.push((dev, format!("no device {} on this robot", esc(dev))));
                continue;
            }
            if !matches!(
                req,
                access::READ | access::WRITE | access::ALL | access::CLOSE
            ) {
                warn!(
                    self.conn.log,
                    "unknown access code {} for device {}; ignored",
                    esc(req),
                    esc(dev)
                );
                refused.push((dev, format!("unknown access code {}", esc(req))));
            }
            let req = if !self.rights.may_write() && matches!(req, access::WRITE | access::ALL) {
                refused.push((dev, self.read_only_reason().into()));
                if req == access::WRITE {
                    continue;
                }
                access::READ
            } else {
                req
            };
            let cur = match finals.iter().find(|(d, _)| *d == dev) {
                Some(&(_, a)) => a,
                None => self.list.access_of(dev),
            };
            let new = next_access(cur, req);
            match finals.iter_mut().find(|(d, _)| *d == dev) {
                Some(f) => f.1 = new,
                None => finals.push((dev, new)),
            }
        }
        finals
    }

    /// Applies the registry's answer for one device; returns why it was refused, if it
    /// was. A refused device leaves the client's list (it takes no slot).
    pub(super) fn apply_grant(
        &mut self,
        dev: u8,
        new: u8,
        result: Option<
            Result<Result<crate::registry::Grant, crate::registry::DeviceError>, MailboxError>,
        >,
    ) -> Option<String> {
        // A reading that came before the grant is the device's first, or dropped.
        let early = self.list.take_early(dev);
        let slots = &mut self.list.slots;
        let idx = match slots.iter().position(|s| s.code == dev) {
            Some(i) => i,
            None => {
                // Room for this one only: most clients list a few devices once, and a
                // slot is about 100 bytes (amortized growth would leave room for four).
                slots.reserve_exact(1);
                slots.push(Slot {
                    code: dev,
                    access: access::ERROR,
                    readable: false,
                    command: None,
                    latest: None,
                    sent: Stamp::default(),
                });
                slots.len() - 1
            }
        };
        let slot = &mut slots[idx];
        let refused = match result {
            None => {
                slot.release(access::CLOSE);
                None
            }
            Some(Ok(Ok(grant))) => {
                slot.access = new;
                slot.readable = grant.spec.readable;
                slot.command = grant.command.zip(grant.spec.command_size).map(Box::new);
                if matches!(new, access::WRITE | access::ALL) && grant.spec.command_size.is_none() {
                    info!(self.conn.log, "write access granted to a device that takes no commands; its commands will be ignored"; "device" => player_kit::log::device(dev));
                }
                if !slot.reads() {
                    slot.latest = None;
                } else if let Some(d) = early {
                    let last = slot.latest.as_ref().map(DeviceData::stamp);
                    if fresh::judge(last, d.stamp()).is_new() {
                        slot.latest = Some(d);
                    }
                }
                None
            }
            Some(Ok(Err(e))) => {
                warn!(self.conn.log, "device refused"; "device" => format!("{} ({})", esc(dev), device::name(dev)), "error" => %e);
                Some(e.to_string())
            }
            Some(Err(e)) => {
                warn!(self.conn.log, "registry unavailable"; "error" => %e);
                Some(format!("registry unavailable: {e}"))
            }
        };
        if refused.is_some() {
            self.list.slots.remove(idx);
        }
        refused
    }

    pub(super) fn on_command(&mut self, dev: u8, payload: Bytes, ctx: &mut Context<Self>) {
        let why: Result<(), String> = match self.list.slots.iter().find(|s| s.code == dev) {
            None => Err(format!("command to {} ignored: no write access", esc(dev))),
            Some(slot) if !slot.writes() => Err(format!(
                "command to {} ignored: no write access (holding {})",
                esc(dev),
                esc(slot.access)
            )),
            Some(Slot { command: None, .. }) => Err(format!(
                "command to {} ignored: the device takes no commands",
                esc(dev)
            )),
            Some(Slot {
                command: Some(to), ..
            }) => {
                let (recipient, size) = &**to;
                if payload.len() == *size {
                    recipient.do_send(Command {
                        device: dev,
                        payload,
                        session: self.conn.id,
                    });
                    return;
                }
                Err(format!(
                    "command to {} ignored: {} bytes, the device takes {}",
                    esc(dev),
                    payload.len(),
                    size
                ))
            }
        };
        if let Err(why) = why {
            warn!(self.conn.log, "{}", why);
            self.notice(Notice::new(kind::COMMAND, dev, why), ctx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_state_machine_follows_the_original() {
        let (r, w, a, c, e) = (
            access::READ,
            access::WRITE,
            access::ALL,
            access::CLOSE,
            access::ERROR,
        );
        // A listed device always holds one of `r w a c e`.
        let next = |cur: u8, req: u8| next_access(Some(cur), req);
        // not listed
        assert_eq!(next_access(None, r), Some(r));
        assert_eq!(next_access(None, w), Some(w));
        assert_eq!(next_access(None, a), Some(a));
        assert_eq!(next_access(None, c), None);
        // upgrades merge
        assert_eq!(next(r, w), Some(a));
        assert_eq!(next(w, r), Some(a));
        assert_eq!(next(r, a), Some(a));
        // downgrades
        assert_eq!(next(a, r), Some(r));
        assert_eq!(next(a, w), Some(w));
        // repeats
        assert_eq!(next(r, r), Some(r));
        assert_eq!(next(a, a), Some(a));
        // close
        assert_eq!(next(r, c), Some(c));
        assert_eq!(next(a, c), Some(c));
        assert_eq!(next(c, c), Some(c));
        assert_eq!(next(e, c), Some(e));
        // after an error, a retry is a fresh request
        assert_eq!(next(e, r), Some(r));
        assert_eq!(next(e, w), Some(w));
        // unknown access codes change nothing
        assert_eq!(next(r, b'q'), Some(r));
        assert_eq!(next_access(None, b'q'), None);
    }
}
