//! A session's rights re-checked after a reload of the access policy (SIGHUP): a client
//! the policy in force still admits keeps its connection and its devices; one whose key
//! is no longer the key keeps reading but its write access is withdrawn (the registry
//! sees the writer leave, which stops a moving device); one that presented the new key
//! may command; one the policy no longer admits is told why on the error channel (if it
//! asked for notices) and closed.

use super::Session;
use crate::notice::{kind, Notice};
use crate::registry::{Subscribe, Unsubscribe};
use actix::prelude::*;
use player_proto::access;
use slog::{info, warn};

/// Listener → session: the access policy was reloaded; check what this client may do.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Recheck;

impl Handler<Recheck> for Session {
    type Result = ();

    fn handle(&mut self, _msg: Recheck, ctx: &mut Self::Context) {
        self.unpark(ctx);
        let policy = self.conn.opts.policy.clone();
        let before = self.rights.may_write();
        let write = match self.rights.recheck(&policy, self.conn.peer.ip()) {
            Ok(w) => w,
            Err(why) => return self.close_refused(why, ctx),
        };
        if write == before {
            return;
        }
        if write {
            info!(
                self.conn.log,
                "configuration reloaded: write access granted"
            );
            let text = "configuration reloaded: write access granted";
            self.notice(Notice::new(kind::ACCESS, 0, text), ctx);
        } else {
            let withdrawn = self.withdraw_write(ctx);
            let why = self.read_only_reason();
            info!(self.conn.log, "configuration reloaded: write access withdrawn"; "reason" => why, "devices" => withdrawn);
            let text = format!("configuration reloaded: write access withdrawn; {why}");
            self.notice(Notice::new(kind::ACCESS, 0, text), ctx);
        }
    }
}

impl Session {
    /// Tells the client why the reloaded policy no longer admits it, and closes it.
    fn close_refused(&mut self, why: &str, ctx: &mut Context<Self>) {
        warn!(self.conn.log, "configuration reloaded: client no longer admitted; closing"; "reason" => why);
        let text = format!("configuration reloaded: {why}; closing");
        self.notice(Notice::new(kind::ACCESS, 0, text), ctx);
        self.conn.closing_reason = Some(format!("no longer admitted after a reload ({why})"));
        ctx.stop();
    }

    /// Drops write access on every device the client commands: `a` becomes `r` (it keeps
    /// reading), `w` becomes `c`. Returns the devices, as text for the log.
    fn withdraw_write(&mut self, ctx: &mut Context<Self>) -> String {
        let mut devices = String::new();
        let Some(registry) = self.conn.registry() else {
            return devices;
        };
        let recipient = self.data_recipient(ctx);
        for slot in self.list.slots.iter_mut().filter(|s| s.writes()) {
            devices.push(char::from(slot.code));
            if slot.access == access::ALL {
                registry.do_send(Subscribe {
                    session: self.conn.id,
                    device: slot.code,
                    read: true,
                    write: false,
                    recipient: recipient.clone(),
                    client: self.conn.client().into(),
                });
                slot.access = access::READ;
                slot.command = None;
            } else {
                registry.do_send(Unsubscribe {
                    session: self.conn.id,
                    device: slot.code,
                });
                slot.release(access::CLOSE);
            }
        }
        devices
    }
}
