//! The session's side of the opt-in extensions (docs/extensions.md): the error channel
//! (`x y e`), the emergency stop (`x y E`), the shared key (`x y k`) and the device list
//! (`x y l`), the notices written to clients that asked for them, and devices' answers to
//! the client's configs (written whether or not it asked for notices, as the device list).

use super::rights::{KeyOutcome, Rights};
use super::Session;
use crate::logging::escape;
use crate::notice::{kind, Notice};
use crate::registry::{EStop, ListDevices, Watch};
use actix::prelude::*;
use player_kit::answer::ConfigAnswer;
use player_proto::ext;
use slog::{info, warn};
use std::io::IoSlice;

impl Session {
    /// `x y e`: notices on or off.
    pub(super) fn set_notices(&mut self, on: bool, ctx: &mut Context<Self>) {
        self.conn.notices = on;
        let recipient = on.then(|| ctx.address().recipient());
        if let Some(r) = self.conn.registry() {
            r.do_send(Watch {
                session: self.conn.id,
                recipient,
            });
        }
    }

    /// `x y E`: latch the emergency stop (anyone), or release it (a client that may
    /// command).
    pub(super) fn on_estop(&mut self, latch: bool, ctx: &mut Context<Self>) {
        if latch || self.rights.may_write() {
            if let Some(r) = self.conn.registry() {
                r.do_send(EStop {
                    latch,
                    client: self.conn.client(),
                });
            }
            return;
        }
        let why = format!(
            "releasing the emergency stop needs write access; {}",
            self.read_only_reason()
        );
        warn!(
            self.conn.log,
            "emergency stop release refused: read-only client"
        );
        self.notice(Notice::new(kind::ACCESS, 0, why), ctx);
    }

    /// `x y l`: the device list.
    pub(super) fn send_device_list(&mut self, ctx: &mut Context<Self>) {
        let Some(registry) = self.conn.registry() else {
            return;
        };
        let list = registry.send(ListDevices);
        ctx.spawn(list.into_actor(self).map(|r, act, ctx| {
            act.unpark(ctx);
            if let Ok(entries) = r {
                let bytes = ext::device_list(&entries);
                act.write(&[IoSlice::new(&bytes)], ctx);
            }
        }));
    }

    /// Checks a presented key: right, the client gets write access (where its address may
    /// command); wrong, it is told and closed (one guess per connection).
    pub(super) fn on_key(&mut self, key: &[u8], ctx: &mut Context<Self>) {
        let policy = self.conn.opts.policy.clone();
        match self.rights.present_key(&policy, self.conn.peer.ip(), key) {
            KeyOutcome::Accepted { write } => {
                info!(self.conn.log, "key accepted"; "write" => write);
                let text = if write {
                    "key accepted: write access"
                } else {
                    "key accepted, but this address may not command (access.write_allow)"
                };
                self.notice(Notice::new(kind::ACCESS, 0, text), ctx);
            }
            KeyOutcome::Refused(what) => {
                warn!(self.conn.log, "key refused; closing"; "reason" => what, "presented" => escape(key, 0));
                self.notice(
                    Notice::new(kind::ACCESS, 0, format!("{what}; closing")),
                    ctx,
                );
                self.conn.closing_reason = Some(format!("key refused ({what})"));
                ctx.stop();
            }
        }
    }

    /// Why this client may not command.
    pub(super) fn read_only_reason(&self) -> &'static str {
        Rights::read_only_reason(&self.conn.opts.policy, self.conn.peer.ip())
    }

    /// Writes a notice if the client asked for them; drops it (counted) while the client
    /// leaves too much unread.
    pub(super) fn notice(&mut self, n: Notice, ctx: &mut Context<Self>) {
        if !self.conn.notices {
            return;
        }
        if self.timers.writer().backlog() >= self.conn.opts.max_output {
            self.conn.notices_dropped += 1;
            warn!(self.conn.log, "notice dropped: the client leaves its output unread"; "dropped" => self.conn.notices_dropped);
            return;
        }
        let bytes = n.encode();
        self.write(&[IoSlice::new(&bytes)], ctx);
    }
}

impl Handler<Notice> for Session {
    type Result = ();

    fn handle(&mut self, msg: Notice, ctx: &mut Self::Context) {
        self.unpark(ctx);
        self.notice(msg, ctx);
    }
}

impl Handler<ConfigAnswer> for Session {
    type Result = ();

    /// A device's answer to one of this client's configs: each body a `y` packet of the
    /// device's kind (`y <u16 size> <device> <body>`), written between rounds. While the client leaves more than
    /// `max_output` unread, the answer is dropped (logged, and a notice `o` if it asked for
    /// notices): it may ask again.
    fn handle(&mut self, msg: ConfigAnswer, ctx: &mut Self::Context) {
        self.unpark(ctx);
        if self.timers.writer().backlog() >= self.conn.opts.max_output {
            warn!(self.conn.log, "config answer dropped: the client leaves its output unread"; "device" => player_kit::log::device(msg.device));
            let why = "a config's answer was dropped: too much output unread";
            self.notice(Notice::new(kind::OVERLOAD, msg.device, why), ctx);
            return;
        }
        let mut packets = Vec::with_capacity(msg.bodies.len());
        for body in msg.bodies.iter() {
            match ext::answer_packet(msg.device, body) {
                Ok(p) => packets.push(p),
                Err(e) => {
                    warn!(self.conn.log, "config answer dropped"; "device" => player_kit::log::device(msg.device), "error" => %e);
                    return;
                }
            }
        }
        let slices: Vec<IoSlice<'_>> = packets.iter().map(|p| IoSlice::new(p)).collect();
        self.write(&slices, ctx);
    }
}
