//! A web session's rights re-checked after a reload of the access policy (SIGHUP), by the
//! rule the TCP sessions follow (`player_core::session`'s reload): a client the policy in
//! force still admits keeps its connection; one whose `?key=` is no longer the key keeps
//! reading but loses write access (its command channels are dropped, so the registry sees
//! the writer leave, which stops a moving device; service calls, parameters and playback
//! control are refused from then on); one that presented the new key, or whose address
//! is now in `write_allow`, may command; one the policy no longer admits gets a Foxglove
//! `status` error with the reason, then a WebSocket close (code 1008, policy violation)
//! with the same reason, and the log names the client.

use super::{Target, WebSession};
use crate::foxglove::Level;
use actix::prelude::*;
use slog::{info, warn};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

/// Endpoint → session: the access policy was reloaded; check what this client may do.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Recheck;

/// Longest close reason (a WebSocket control frame carries at most 125 bytes, 2 of them
/// the code).
const MAX_CLOSE_REASON: usize = 123;

impl Handler<Recheck> for WebSession {
    type Result = ();

    fn handle(&mut self, _msg: Recheck, ctx: &mut Self::Context) {
        let ip = self._slot.ip;
        let rights = self.shared.policy.recheck(ip, self.presented.as_deref());
        let write = match rights {
            Ok(r) => r.write,
            Err(why) => return self.close_refused(why, ctx),
        };
        if write == self.may_write {
            return;
        }
        self.may_write = write;
        if write {
            let text = "configuration reloaded: write access granted";
            info!(self.log, "{}", text);
            self.status(Level::Info, text, ctx);
        } else {
            let dropped = self.withdraw_write(ctx);
            let why = if self.shared.policy.has_key() {
                "this client has not presented the key now in force; reconnect with ?key=KEY"
            } else {
                "its address is not in access.write_allow"
            };
            info!(self.log, "configuration reloaded: web client's write access withdrawn"; "reason" => why, "command_channels_dropped" => dropped);
            let text =
                format!("configuration reloaded: write access withdrawn ({why}); it may read only");
            self.status(Level::Warning, &text, ctx);
        }
    }
}

impl WebSession {
    /// Tells the client why the reloaded policy no longer admits it (a `status` error,
    /// then the close frame's reason), logs it and ends the session.
    fn close_refused(&mut self, why: &str, ctx: &mut Context<Self>) {
        warn!(self.log, "configuration reloaded: web client no longer admitted; closing"; "reason" => why);
        let text = format!("configuration reloaded: {why}; closing");
        self.status(Level::Error, &text, ctx);
        let mut reason = format!("no longer admitted: {why}");
        while reason.len() > MAX_CLOSE_REASON {
            reason.pop();
        }
        self.out
            .borrow_mut()
            .control
            .push_back(Message::Close(Some(CloseFrame {
                code: CloseCode::Policy,
                reason: reason.into(),
            })));
        self.wake.notify_one();
        ctx.stop();
    }

    /// Drops every client channel that commands (all but the e-stop and the 3D panel's
    /// tools) and gives the devices' write access back. Returns how many were dropped.
    fn withdraw_write(&mut self, ctx: &mut Context<Self>) -> usize {
        let dropped: Vec<(u32, (usize, Target))> = self
            .pubs
            .iter()
            .filter(|(_, (_, t))| !matches!(t, Target::EStop | Target::Tool(_)))
            .map(|(id, v)| (*id, *v))
            .collect();
        for (id, _) in &dropped {
            self.pubs.remove(id);
        }
        let mut devices: Vec<(usize, u8)> = dropped
            .iter()
            .filter_map(|(_, (k, t))| t.writes().map(|c| (*k, c)))
            .collect();
        devices.sort_unstable();
        devices.dedup();
        for (k, code) in devices {
            self.sync_device(k, code, ctx);
        }
        dropped.len()
    }
}
