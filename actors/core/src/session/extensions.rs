//! The session's side of the opt-in extensions (docs/extensions.md): the error channel
//! (`x y e`), the emergency stop (`x y E`), the shared key (`x y k`) and the device list
//! (`x y l`), and the notices written to clients that asked for them.

use super::Session;
use crate::logging::escape;
use crate::notice::{kind, Notice};
use crate::registry::{EStop, ListDevices, Watch};
use actix::prelude::*;
use player_proto::{config, ext};
use slog::{info, warn};
use std::io::IoSlice;

impl Session {
    /// Handles an extension config to `y`; false when `code` is none of them or its size
    /// is wrong.
    pub(super) fn on_extension(&mut self, code: u8, args: &[u8], ctx: &mut Context<Self>) -> bool {
        match (code, args.len()) {
            (config::ERRORS, 1) => {
                self.notices = args[0] != 0;
                let recipient = self.notices.then(|| ctx.address().recipient());
                self.registry.do_send(Watch {
                    session: self.id,
                    recipient,
                });
            }
            (config::ESTOP, 1) if args[0] != 0 => {
                self.registry.do_send(EStop {
                    latch: true,
                    client: self.client.clone(),
                });
            }
            (config::ESTOP, 1) => {
                if self.may_write {
                    self.registry.do_send(EStop {
                        latch: false,
                        client: self.client.clone(),
                    });
                } else {
                    let why = format!(
                        "releasing the emergency stop needs write access; {}",
                        self.read_only_reason()
                    );
                    if let Some(n) = self.throttle.allow("estop") {
                        warn!(self.log, "emergency stop release refused: read-only client"; "suppressed" => n);
                    }
                    self.notice(Notice::new(kind::ACCESS, 0, why), ctx);
                }
            }
            (config::KEY, 1..=ext::MAX_KEY) => self.on_key(args, ctx),
            (config::DEVICE_LIST, 0) => {
                let list = self.registry.send(ListDevices);
                ctx.spawn(list.into_actor(self).map(|r, act, ctx| {
                    if let Ok(entries) = r {
                        let bytes = ext::device_list(&entries);
                        act.write(&[IoSlice::new(&bytes)], ctx);
                    }
                }));
            }
            _ => return false,
        }
        true
    }

    /// Checks a presented key: right, the client gets write access (where its address may
    /// command); wrong, it is told and closed (one guess per connection).
    fn on_key(&mut self, key: &[u8], ctx: &mut Context<Self>) {
        let policy = self.opts.policy.clone();
        if policy.key_matches(key) {
            self.must_present_key = false;
            self.presented_key = Some(key.to_vec());
            self.may_write = policy.may_write(self.peer.ip());
            info!(self.log, "key accepted"; "write" => self.may_write);
            let text = if self.may_write {
                "key accepted: write access"
            } else {
                "key accepted, but this address may not command (access.write_allow)"
            };
            self.notice(Notice::new(kind::ACCESS, 0, text), ctx);
        } else {
            let what = if policy.has_key() {
                "wrong key"
            } else {
                "no key is configured"
            };
            warn!(self.log, "key refused; closing"; "reason" => what, "presented" => escape(key, 0));
            self.notice(
                Notice::new(kind::ACCESS, 0, format!("{what}; closing")),
                ctx,
            );
            self.closing_reason = Some(format!("key refused ({what})"));
            ctx.stop();
        }
    }

    /// Why this client may not command.
    pub(super) fn read_only_reason(&self) -> &'static str {
        if !self.opts.policy.may_write(self.peer.ip()) {
            "read-only: this address may not command (access.write_allow)"
        } else {
            "read-only: present the key (x y k <key>) for write access"
        }
    }

    /// Writes a notice if the client asked for them; drops it (counted) while the client
    /// leaves too much unread.
    pub(super) fn notice(&mut self, n: Notice, ctx: &mut Context<Self>) {
        if !self.notices {
            return;
        }
        if self.out.len() >= self.opts.max_output {
            self.notices_dropped += 1;
            if let Some(s) = self.throttle.allow("notices-dropped") {
                warn!(self.log, "notice dropped: the client leaves its output unread"; "dropped" => self.notices_dropped, "suppressed" => s);
            }
            return;
        }
        let bytes = n.encode();
        self.write(&[IoSlice::new(&bytes)], ctx);
    }
}

impl Handler<Notice> for Session {
    type Result = ();

    fn handle(&mut self, msg: Notice, ctx: &mut Self::Context) {
        self.notice(msg, ctx);
    }
}
