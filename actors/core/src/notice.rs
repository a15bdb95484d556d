//! Notices: short messages from the server to a client that opted in to the error channel
//! (`x y e 1`, docs/extensions.md) about a refused request, an ignored command or config,
//! a watchdog stop, an emergency stop, or a device that failed or came back.
//!
//! The registry and the sessions make them; a session that opted in writes each one as a
//! `y` packet between rounds (the byte layout is [`player_proto::ext`]). Other front ends
//! (the web viewer) turn them into their own status messages.

use actix::prelude::*;
pub use player_proto::ext::kind;

/// One notice for one client.
#[derive(Message, Debug, Clone, PartialEq, Eq)]
#[rtype(result = "()")]
pub struct Notice {
    /// What happened (one of [`kind`]).
    pub kind: u8,
    /// The device it is about; 0 for the robot or the connection.
    pub device: u8,
    /// A reason for a person.
    pub text: String,
}

impl Notice {
    /// A notice of `kind` about `device` (0: the robot).
    pub fn new(kind: u8, device: u8, text: impl Into<String>) -> Self {
        Notice {
            kind,
            device,
            text: text.into(),
        }
    }

    /// The whole `y` packet for the wire.
    pub fn encode(&self) -> Vec<u8> {
        player_proto::ext::notice(self.kind, self.device, &self.text)
    }
}
