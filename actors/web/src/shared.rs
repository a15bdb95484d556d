//! What the sessions of one web endpoint share: the robots served, the limits and the
//! access policy, the open sessions (each reachable by [`SessionSignal`]) and the count of
//! sessions per client address ([`AddressSlot`]).
//!
//! It sits below both the sessions (`session/`), which read it, and the endpoint
//! (`endpoint.rs`), which makes it and starts the sessions: it names neither.

use crate::tls;
use crate::world::Robots;
use actix::prelude::*;
use player_core::access::Policy;
use player_core::frontend::SessionIds;
use player_core::registry::{PlaybackClock, SessionId};
use slog::Logger;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The endpoint, or one of its sessions → every session of the endpoint.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
#[rtype(result = "()")]
pub enum SessionSignal {
    /// The server is shutting down: close the connection.
    End,
    /// The access policy was reloaded (SIGHUP): re-check what this client may do.
    PolicyReloaded,
    /// A session set a robot's parameter: send its new value to this session's
    /// subscribers.
    ParametersChanged,
}

/// What every session of one endpoint shares.
pub struct Shared {
    /// The robots served (one, or a world's), their channels and topics.
    pub robots: Robots,
    /// A number unique to this endpoint (keys the per-thread encoding cache).
    pub uid: u64,
    /// How long a client may take nothing before it is disconnected (zero: never).
    pub stall_timeout: Duration,
    /// Most sessions at once.
    pub max_clients: usize,
    /// The open sessions.
    pub sessions: Mutex<HashMap<SessionId, Recipient<SessionSignal>>>,
    /// Numbers sessions, shared with the TCP listeners so ids are unique in the registry.
    pub ids: SessionIds,
    /// Who may connect and command (the same policy as the TCP listeners').
    pub policy: Arc<Policy>,
    /// Open sessions per client address (`access.max_per_address`).
    pub per_address: Mutex<HashMap<IpAddr, usize>>,
    /// The clock of the driver that plays the robot back from a recording (`-replay`),
    /// if one does and it is the endpoint's only robot: its clients control playback (the
    /// `playbackControl` capability).
    pub replay: Option<Arc<PlaybackClock>>,
    /// Logger carrying the robot name.
    pub log: Logger,
    /// TLS, when `[web]` has a certificate: every connection's handshake first.
    pub tls: Option<tls::TlsEndpoint>,
}

impl Shared {
    /// The open sessions, locked (a poisoned lock's map is still the map).
    pub fn open_sessions(&self) -> MutexGuard<'_, HashMap<SessionId, Recipient<SessionSignal>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells every session open now; returns how many were told.
    pub fn signal_all(&self, signal: SessionSignal) -> usize {
        let open: Vec<Recipient<SessionSignal>> = self.open_sessions().values().cloned().collect();
        for s in &open {
            s.do_send(signal);
        }
        open.len()
    }
}

/// One session's place in the per-address count; given back when dropped (when the
/// session ends, or when its upgrade fails).
pub struct AddressSlot {
    shared: Arc<Shared>,
    ip: IpAddr,
}

impl AddressSlot {
    /// Takes a place for `ip`, unless it already has `access.max_per_address` sessions.
    pub fn take(shared: &Arc<Shared>, ip: IpAddr) -> Option<AddressSlot> {
        let limit = shared.policy.max_per_address();
        let mut map = shared.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry(ip).or_default();
        if limit > 0 && *n >= limit {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            shared: shared.clone(),
            ip,
        })
    }

    /// The client's address.
    pub fn ip(&self) -> IpAddr {
        self.ip
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut map = self
            .shared
            .per_address
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.ip);
            }
        }
    }
}
