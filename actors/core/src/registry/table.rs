//! The registry's device table: each device's spec and driver, the sessions holding it
//! and how (read, write), its setup state (down, setting up with the requests waiting on
//! it, up) and its condition (well, failed as its driver says, silent, setup failed), and
//! the device-list entry made of all of it.

use super::health::Health;
use super::{DeviceError, SessionId};
use futures::channel::oneshot;
use player_kit::driver::{DataRecipient, DeviceSpec, DeviceState, DriverHandle};
use player_kit::labels::Labels;
use player_kit::source::HolderEvent;
use player_proto::access;
use player_proto::ext::{state as list_state, DeviceEntry};
use std::collections::HashMap;

/// A device code served by two drivers of one robot (a configuration error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "robot '{robot}': device '{}' is served by both driver '{first}' and driver '{second}'",
    char::from(*device)
)]
pub struct ServedTwice {
    /// The robot.
    pub robot: String,
    /// The device code.
    pub device: u8,
    /// The driver added first.
    pub first: String,
    /// The driver that also serves it.
    pub second: String,
}

/// How a session holds a device.
pub(super) struct Holder {
    pub read: bool,
    pub write: bool,
    pub recipient: DataRecipient,
    /// How long this writer's commands hold (`CommandHold`); `None`: `command_timeout`.
    pub hold: Option<std::time::Duration>,
    /// Who holds it, as its front end names it (a TCP client's address, `web ...`,
    /// `zenoh`, `ros2`, `recorder`, `driver <name>`), for the connection graph.
    pub client: std::sync::Arc<str>,
    /// Set for a driver holding the device (`HoldDevice`): whether it yields to clients
    /// and where its events go. Boxed: few holders are drivers, and a client's entry is
    /// kept for each device of each client (16 bytes less each).
    pub internal: Option<Box<Internal>>,
}

/// A driver holding a device of its robot (a virtual device's source or target).
#[derive(Clone)]
pub(super) struct Internal {
    /// It gives way to clients' own commands (a planner).
    pub yields: bool,
    /// Where its [`HolderEvent`]s go.
    pub events: Option<actix::Recipient<HolderEvent>>,
}

/// The sessions holding one device, by session id: a vector kept sorted, which holds
/// thousands of subscribers in about half the memory of a hash map (no empty buckets:
/// a hash map of 2000 entries has 4096) and lets its room go as they leave. Ids are
/// handed out in increasing order, so a new holder is pushed at the end.
/// (Generic over what is held only for its tests.)
pub(super) struct Holders<H = Holder>(Vec<(SessionId, H)>);

impl<H> Default for Holders<H> {
    fn default() -> Self {
        Holders(Vec::new())
    }
}

impl<H> Holders<H> {
    fn find(&self, session: SessionId) -> Result<usize, usize> {
        self.0.binary_search_by_key(&session, |(s, _)| *s)
    }

    /// How `session` holds the device, if it does.
    pub fn get(&self, session: &SessionId) -> Option<&H> {
        self.find(*session).ok().map(|i| &self.0[i].1)
    }

    /// The same, to change.
    pub fn get_mut(&mut self, session: &SessionId) -> Option<&mut H> {
        self.find(*session).ok().map(|i| &mut self.0[i].1)
    }

    /// Whether `session` holds the device.
    pub fn contains_key(&self, session: &SessionId) -> bool {
        self.find(*session).is_ok()
    }

    /// Sets how `session` holds the device.
    pub fn insert(&mut self, session: SessionId, holder: H) {
        match self.find(session) {
            Ok(i) => self.0[i].1 = holder,
            Err(i) => self.0.insert(i, (session, holder)),
        }
    }

    /// Forgets `session`, returning how it held the device. Room for more than twice
    /// the holders left is given back.
    pub fn remove(&mut self, session: &SessionId) -> Option<H> {
        let i = self.find(*session).ok()?;
        let (_, h) = self.0.remove(i);
        if self.0.capacity() > 8 && self.0.len() < self.0.capacity() / 4 {
            self.0.shrink_to(2 * self.0.len());
        }
        Some(h)
    }

    /// Whether nobody holds the device.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Forgets every holder and the room they took.
    pub fn clear(&mut self) {
        self.0 = Vec::new();
    }

    /// The holders' sessions, in increasing order.
    pub fn keys(&self) -> impl Iterator<Item = &SessionId> {
        self.0.iter().map(|(s, _)| s)
    }

    /// How each holds it.
    pub fn values(&self) -> impl Iterator<Item = &H> {
        self.0.iter().map(|(_, h)| h)
    }

    /// Each session and how it holds the device, by session.
    pub fn iter(&self) -> impl Iterator<Item = (&SessionId, &H)> {
        self.0.iter().map(|(s, h)| (s, h))
    }
}

/// Where a device's setup is.
pub(super) enum State {
    Down,
    /// Setting up; the requests that wait for it.
    SettingUp(Vec<oneshot::Sender<Result<(), DeviceError>>>),
    Up,
}

/// How a device is doing, beyond being set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Condition {
    Ok,
    /// The driver reported a failure or a reconnect.
    Driver(DeviceState, String),
    /// No reading for too long (seen by the tap).
    Silent,
    /// Its last setup failed.
    SetupFailed,
}

/// One device of the robot.
pub(super) struct Device {
    /// What it allows, under the code the robot serves it as.
    pub spec: DeviceSpec,
    /// The driver's own code for it (the served code unless renamed, `"p as O"`): every
    /// message to the driver names it so.
    pub own: u8,
    pub driver: DriverHandle,
    pub driver_name: String,
    pub holders: Holders,
    pub state: State,
    pub condition: Condition,
    /// The client whose request set it up last, for the log lines about it (its limits
    /// count them as that client's).
    pub opened_by: std::sync::Arc<str>,
}

impl Device {
    /// Whether the device is set up.
    pub fn is_up(&self) -> bool {
        matches!(self.state, State::Up)
    }

    /// Whether the device takes commands.
    pub fn commandable(&self) -> bool {
        self.spec.command_size.is_some()
    }

    /// Whether `session` holds write access.
    pub fn writer(&self, session: SessionId) -> bool {
        self.holders.get(&session).is_some_and(|h| h.write)
    }

    /// How long `session`'s commands hold, if it asked (`CommandHold`).
    pub fn hold(&self, session: SessionId) -> Option<std::time::Duration> {
        self.holders.get(&session).and_then(|h| h.hold)
    }

    /// The internal holders of the device and how they hold it.
    pub fn internal(&self) -> impl Iterator<Item = (SessionId, &Holder, &Internal)> {
        self.holders
            .iter()
            .filter_map(|(s, h)| h.internal.as_deref().map(|i| (*s, h, i)))
    }

    /// The client of a session holding write access (the one the watchdog stops), or an
    /// empty name.
    pub fn writer_client(&self) -> std::sync::Arc<str> {
        self.holders
            .values()
            .find(|h| h.write)
            .map_or_else(|| "".into(), |h| h.client.clone())
    }

    /// Whether `session` reads it.
    pub fn reader(&self, session: SessionId) -> bool {
        self.holders.get(&session).is_some_and(|h| h.read)
    }

    /// Ends a setup in flight: the requests that waited on it (none if it was not being
    /// set up, and then the state is kept). The state is left `Down`.
    pub fn end_setup(&mut self) -> Option<Vec<oneshot::Sender<Result<(), DeviceError>>>> {
        match std::mem::replace(&mut self.state, State::Down) {
            State::SettingUp(w) => Some(w),
            other => {
                self.state = other;
                None
            }
        }
    }
}

/// Every device of one robot, and its drivers.
pub(super) struct Table {
    pub robot: String,
    pub devices: HashMap<u8, Device>,
    pub drivers: Vec<(String, DriverHandle)>,
}

impl Table {
    pub fn new(robot: &str) -> Self {
        Table {
            robot: robot.to_string(),
            devices: HashMap::new(),
            drivers: Vec::new(),
        }
    }

    /// Adds a driver and the devices it serves (none of them, if one is served already),
    /// `specs` under the driver's own codes, filed under the codes `labels` serves them as.
    pub fn add(
        &mut self,
        name: &str,
        handle: DriverHandle,
        specs: &[DeviceSpec],
        labels: &Labels,
    ) -> Result<(), ServedTwice> {
        for spec in specs {
            if let Some(d) = self.devices.get(&labels.served(spec.code)) {
                return Err(ServedTwice {
                    robot: self.robot.clone(),
                    device: labels.served(spec.code),
                    first: d.driver_name.clone(),
                    second: name.to_string(),
                });
            }
        }
        for spec in specs {
            let served = labels.served(spec.code);
            self.devices.insert(
                served,
                Device {
                    spec: DeviceSpec {
                        code: served,
                        ..*spec
                    },
                    own: spec.code,
                    driver: handle.clone(),
                    driver_name: name.to_string(),
                    holders: Holders::default(),
                    state: State::Down,
                    condition: Condition::Ok,
                    opened_by: "".into(),
                },
            );
        }
        self.drivers.push((name.to_string(), handle));
        Ok(())
    }

    /// The device codes, sorted.
    pub fn codes(&self) -> Vec<u8> {
        let mut v: Vec<u8> = self.devices.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The codes of the devices `session` holds.
    pub fn held_by(&self, session: SessionId) -> Vec<u8> {
        self.devices
            .iter()
            .filter(|(_, d)| d.holders.contains_key(&session))
            .map(|(c, _)| *c)
            .collect()
    }

    /// The codes of the devices that take commands.
    pub fn commandable(&self) -> Vec<u8> {
        self.devices
            .iter()
            .filter(|(_, d)| d.commandable())
            .map(|(c, _)| *c)
            .collect()
    }

    /// Whether any readable device is set up (the health check runs while one is).
    pub fn any_readable_up(&self) -> bool {
        self.devices.values().any(|d| d.is_up() && d.spec.readable)
    }

    /// The device-list entry of `code` (which must be in the table).
    pub fn entry(&self, code: u8, health: &Health) -> DeviceEntry {
        let d = &self.devices[&code];
        let access = match (d.spec.readable, d.commandable()) {
            (true, true) => access::ALL,
            (false, true) => access::WRITE,
            _ => access::READ,
        };
        let state = match (&d.state, &d.condition) {
            (State::SettingUp(_), _) => list_state::SETTING_UP,
            (_, Condition::Driver(DeviceState::Reconnecting, _)) => list_state::RECONNECTING,
            (
                _,
                Condition::Driver(DeviceState::Failed, _)
                | Condition::Silent
                | Condition::SetupFailed,
            ) => list_state::FAILED,
            (State::Up, _) => list_state::UP,
            (State::Down, _) => list_state::IDLE,
        };
        let count = |f: fn(&Holder) -> bool| {
            d.holders
                .values()
                .filter(|h| f(h))
                .count()
                .min(usize::from(u16::MAX)) as u16
        };
        DeviceEntry {
            code,
            access,
            state,
            readers: count(|h| h.read),
            writers: count(|h| h.write),
            data_size: health.data_size(code),
            rate_x10: health.rate_x10(code),
            driver: d.driver_name.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u64) -> SessionId {
        SessionId::from(n)
    }

    #[test]
    fn holders_are_found_by_session_in_any_insertion_order_and_listed_in_id_order() {
        let mut h = Holders::<u32>::default();
        for n in [5, 1, 9, 3, 7] {
            h.insert(id(n), n as u32 * 10);
        }
        h.insert(id(3), 33);
        assert_eq!(h.get(&id(3)), Some(&33));
        assert_eq!(h.get(&id(4)), None);
        assert!(h.contains_key(&id(9)));
        *h.get_mut(&id(9)).unwrap() = 99;
        let listed: Vec<(u64, u32)> = h.iter().map(|(s, v)| (s.get(), *v)).collect();
        assert_eq!(listed, vec![(1, 10), (3, 33), (5, 50), (7, 70), (9, 99)]);
        assert_eq!(h.remove(&id(5)), Some(50));
        assert_eq!(h.remove(&id(5)), None);
        assert_eq!(h.keys().count(), 4);
        assert_eq!(h.values().copied().max(), Some(99));
    }

    #[test]
    fn holders_give_their_room_back_as_sessions_leave() {
        let mut h = Holders::<u32>::default();
        for n in 0..2000 {
            h.insert(id(n), 0);
        }
        assert!(h.0.capacity() < 4096, "room for {}", h.0.capacity());
        for n in 10..2000 {
            h.remove(&id(n));
        }
        assert!(h.0.capacity() <= 40, "room for {} kept", h.0.capacity());
        assert_eq!(h.keys().count(), 10);
        h.clear();
        assert!(h.is_empty());
        assert_eq!(h.0.capacity(), 0);
    }
}
