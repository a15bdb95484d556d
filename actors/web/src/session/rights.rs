//! What a web client may do: its rights as the upgrade admitted it ([`Admission`]), and
//! those rights re-checked after a reload of the access policy (SIGHUP), by the rule the
//! TCP sessions follow (`player_core::session`'s reload).
//!
//! A client the policy in force still admits keeps its connection; one whose `?key=` is
//! no longer the key keeps reading but loses write access (its command channels are
//! dropped, so the registry sees the writer leave, which stops a moving device; service
//! calls, parameters and playback control are refused from then on); one that presented
//! the new key, or whose address is now in `write_allow`, may command; one the policy no
//! longer admits gets a Foxglove `status` error with the reason, then a WebSocket close
//! (code 1008, policy violation) with the same reason, and the log names the client.

use super::WebSession;
use crate::foxglove::Level;
use crate::shared::AddressSlot;
use actix::prelude::*;
use player_core::access::Policy;
use slog::{info, warn};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;

/// Longest close reason (a WebSocket control frame carries at most 125 bytes, 2 of them
/// the code).
const MAX_CLOSE_REASON: usize = 123;

/// How a client was let in: from where, with what key, whether it may command.
pub struct Admission {
    /// Its place in the per-address count (given back when the session ends), and its
    /// address, for the re-check.
    slot: AddressSlot,
    /// Whether the access policy lets it command (and release the e-stop).
    may_write: bool,
    /// The key it presented (`?key=`), for the re-check.
    presented: Option<Vec<u8>>,
}

impl Admission {
    /// A client at `slot`'s address that presented `presented`, and may command or not.
    pub fn new(slot: AddressSlot, may_write: bool, presented: Option<Vec<u8>>) -> Admission {
        Admission {
            slot,
            may_write,
            presented,
        }
    }

    /// Whether the client may command.
    pub fn may_write(&self) -> bool {
        self.may_write
    }

    /// Why a client that may not command is refused, with the way in where the policy has
    /// a key.
    pub fn refusal(policy: &Policy) -> String {
        let hint = if policy.has_key() {
            "; connect with ?key=KEY"
        } else {
            ""
        };
        format!("this client may not command the robot (access policy{hint})")
    }
}

impl WebSession {
    /// The access policy was reloaded: re-checks what this client may do and tells it
    /// what changed.
    pub(super) fn recheck_rights(&mut self, ctx: &mut Context<Self>) {
        let ip = self.admission.slot.ip();
        let rights = self
            .shared
            .policy
            .recheck(ip, self.admission.presented.as_deref());
        let write = match rights {
            Ok(r) => r.write,
            Err(why) => return self.close_refused(why, ctx),
        };
        if write == self.admission.may_write {
            return;
        }
        self.admission.may_write = write;
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
        self.conn.close_with(CloseFrame {
            code: CloseCode::Policy,
            reason: reason.into(),
        });
        ctx.stop();
    }
}
