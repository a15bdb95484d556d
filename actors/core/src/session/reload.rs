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
use player_kit::driver::DataRecipient;
use player_proto::access;
use slog::{info, warn};

/// Listener → session: the access policy was reloaded; check what this client may do.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Recheck;

impl Handler<Recheck> for Session {
    type Result = ();

    fn handle(&mut self, _msg: Recheck, ctx: &mut Self::Context) {
        let ip = self.peer.ip();
        let policy = self.opts.policy.clone();
        if self.must_present_key {
            // Still within its time to present the key: only its address is checked now;
            // the key is checked when it comes.
            match policy.admit(ip) {
                Err(why) => self.close_refused(why, ctx),
                Ok(r) => {
                    self.must_present_key = r.must_present_key;
                    self.may_write = r.write;
                }
            }
            return;
        }
        let rights = match policy.recheck(ip, self.presented_key.as_deref()) {
            Ok(r) => r,
            Err(why) => return self.close_refused(why, ctx),
        };
        if rights.write == self.may_write {
            return;
        }
        self.may_write = rights.write;
        if rights.write {
            info!(self.log, "configuration reloaded: write access granted");
            let text = "configuration reloaded: write access granted";
            self.notice(Notice::new(kind::ACCESS, 0, text), ctx);
        } else {
            let withdrawn = self.withdraw_write(ctx);
            let why = self.read_only_reason();
            info!(self.log, "configuration reloaded: write access withdrawn"; "reason" => why, "devices" => withdrawn);
            let text = format!("configuration reloaded: write access withdrawn; {why}");
            self.notice(Notice::new(kind::ACCESS, 0, text), ctx);
        }
    }
}

impl Session {
    /// Tells the client why the reloaded policy no longer admits it, and closes it.
    fn close_refused(&mut self, why: &str, ctx: &mut Context<Self>) {
        warn!(self.log, "configuration reloaded: client no longer admitted; closing"; "reason" => why);
        let text = format!("configuration reloaded: {why}; closing");
        self.notice(Notice::new(kind::ACCESS, 0, text), ctx);
        self.closing_reason = Some(format!("no longer admitted after a reload ({why})"));
        ctx.stop();
    }

    /// Drops write access on every device the client commands: `a` becomes `r` (it keeps
    /// reading), `w` becomes `c`. Returns the devices, as text for the log.
    fn withdraw_write(&mut self, ctx: &mut Context<Self>) -> String {
        let recipient = DataRecipient::with_inbox(&ctx.address(), self.inbox.clone());
        let mut devices = String::new();
        for slot in self.slots.iter_mut().filter(|s| s.writes()) {
            devices.push(char::from(slot.code));
            if slot.access == access::ALL {
                self.registry.do_send(Subscribe {
                    session: self.id,
                    device: slot.code,
                    read: true,
                    write: false,
                    recipient: recipient.clone(),
                    client: self.client.clone(),
                });
                slot.access = access::READ;
                slot.command = None;
            } else {
                self.registry.do_send(Unsubscribe {
                    session: self.id,
                    device: slot.code,
                });
                slot.release(access::CLOSE);
            }
        }
        devices
    }
}
