//! The registry's device table: each device's spec and driver, the sessions holding it
//! and how (read, write), its setup state (down, setting up with the requests waiting on
//! it, up) and its condition (well, failed as its driver says, silent, setup failed), and
//! the device-list entry made of all of it.

use super::health::Health;
use super::{DeviceError, SessionId};
use futures::channel::oneshot;
use player_kit::driver::{DataRecipient, DeviceSpec, DeviceState, DriverHandle};
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
    /// `zenoh`, `ros2`, `recorder`), for the connection graph.
    pub client: String,
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
    pub spec: DeviceSpec,
    pub driver: DriverHandle,
    pub driver_name: String,
    pub holders: HashMap<SessionId, Holder>,
    pub state: State,
    pub condition: Condition,
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

    /// Adds a driver and the devices it serves (none of them, if one is served already).
    pub fn add(
        &mut self,
        name: &str,
        handle: DriverHandle,
        specs: &[DeviceSpec],
    ) -> Result<(), ServedTwice> {
        for spec in specs {
            if let Some(d) = self.devices.get(&spec.code) {
                return Err(ServedTwice {
                    robot: self.robot.clone(),
                    device: spec.code,
                    first: d.driver_name.clone(),
                    second: name.to_string(),
                });
            }
        }
        for spec in specs {
            self.devices.insert(
                spec.code,
                Device {
                    spec: *spec,
                    driver: handle.clone(),
                    driver_name: name.to_string(),
                    holders: HashMap::new(),
                    state: State::Down,
                    condition: Condition::Ok,
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
