//! The driver catalog: driver factories found by name.
//!
//! The configuration file names, for each robot, which driver backs which device codes and
//! with what parameters. The server looks each driver name up here and calls its factory,
//! which starts the driver actor and declares the devices it serves. Adding a driver means
//! registering one more factory; the registry and the sessions never change.

use crate::driver::{
    Command, Config, DeviceSpec, DriverError, DriverHandle, Publisher, Setup, Shutdown, StatusSink,
    Stop, Subscribers, Terminate,
};
use crate::labels::Labels;
use crate::source::DeviceSource;
use actix::{Actor, Addr, Context, Handler};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use slog::Logger;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Everything a factory gets to start one driver instance.
#[derive(Clone)]
pub struct DriverContext {
    /// The driver's name in the catalog.
    pub driver: String,
    /// The robot this instance serves (for log lines).
    pub robot: String,
    /// The device codes the configuration gives this instance (its own codes: a device
    /// served under another code, `"p as O"`, is `p` here).
    pub devices: Vec<u8>,
    /// The devices served under another code than their own ([`crate::labels`]); make the
    /// instance's publisher with [`DriverContext::publisher`] so its readings carry them.
    pub labels: Labels,
    /// The instance's parameters from the configuration file (a table, maybe empty).
    pub params: config::Value,
    /// The directory relative paths in the parameters are resolved against.
    pub base_dir: PathBuf,
    /// A logger carrying the robot and driver names.
    pub logger: Logger,
    /// When the server started (position time is "ms since the server started").
    pub started: Instant,
    /// Where the driver reports its devices' state changes (link lost, reconnecting,
    /// up again): the robot's registry.
    pub status: StatusSink,
    /// Where the driver reads other devices of its robot (a virtual device): the robot's
    /// registry, under a reader id of its own.
    pub source: DeviceSource,
}

impl DriverContext {
    /// Deserialises the parameters into a driver's own settings type. Errors name the
    /// driver and the offending key.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, DriverError> {
        self.params
            .clone()
            .try_deserialize()
            .map_err(|e| DriverError::params(format!("driver '{}' parameters: {e}", self.driver)))
    }

    /// A publisher for this instance: its readings carry the codes the robot serves its
    /// devices as. Every driver should make its publisher here.
    pub fn publisher(&self) -> Publisher {
        Publisher::labelled(self.labels.clone())
    }

    /// Resolves a path from the parameters against the configuration file's directory.
    pub fn path(&self, p: &str) -> PathBuf {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            self.base_dir.join(p)
        }
    }
}

/// A started driver: its actor's addresses and the devices it serves.
pub struct StartedDriver {
    /// The actor's addresses.
    pub handle: DriverHandle,
    /// The devices it serves, with what each allows.
    pub devices: Vec<DeviceSpec>,
}

impl StartedDriver {
    /// The driver actor at `addr`, serving `devices`: what a factory returns.
    pub fn of<A>(addr: &Addr<A>, devices: Vec<DeviceSpec>) -> Self
    where
        A: Actor<Context = Context<A>>
            + Handler<Setup>
            + Handler<Shutdown>
            + Handler<Command>
            + Handler<Config>
            + Handler<Stop>
            + Handler<Subscribers>
            + Handler<Terminate>,
    {
        StartedDriver {
            handle: DriverHandle::of(addr),
            devices,
        }
    }
}

/// A function that starts one driver instance on the current arbiter.
pub type Factory = Arc<dyn Fn(DriverContext) -> Result<StartedDriver, DriverError> + Send + Sync>;

/// A robot as `-stage` sees it: its name, port and drivers.
#[derive(Debug, Clone)]
pub struct StageRobot {
    /// The robot's name.
    pub name: String,
    /// Its TCP port (0: any free port).
    pub port: u16,
    /// The drivers backing its devices.
    pub drivers: Vec<DriverSettings>,
}

/// Why `-stage WORLD` could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StageError {
    /// The world file could not be read or parsed (why, naming the file).
    #[error("{0}")]
    World(String),
    /// The configuration's first robot has no `sim` driver to load the world into.
    #[error("the configuration has no 'sim' driver to load the world into")]
    NoSim,
    /// The ports run out: robot `robot`'s port, `base + robot`, would be past 65535.
    #[error(
        "the ports run out: the world has {robots} robots, and from port {base} robot {robot} \
         ('{name}') would listen on port {base} + {robot}, past 65535; start lower (-gp), give \
         the robots ports in the world file, or use -gp 0 (any free port)"
    )]
    PortRange {
        /// The robot's place in the world file.
        robot: usize,
        /// Its name.
        name: String,
        /// How many robots the world has.
        robots: usize,
        /// The first robot's port.
        base: u16,
    },
}

/// Expands `-stage WORLD` into the robots to serve, given the configuration's first robot,
/// the world file and the `-gp` port if one was given. The first robot returned replaces
/// the configuration's first; every further one is a robot of its own. Registered by the
/// simulator.
pub type StageHandler = fn(&StageRobot, &str, Option<u16>) -> Result<Vec<StageRobot>, StageError>;

/// A device in a driver's `devices` that is not a one-character device code (or `"c as
/// C"`, a code served under another), or that is listed twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "driver '{driver}': device '{device}' is not a one-character device code, or \
     'c as C' (its code c served as C), or is listed twice"
)]
pub struct BadDeviceCode {
    /// The driver.
    pub driver: String,
    /// The device as configured.
    pub device: String,
}

/// What a driver flag's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagValue {
    /// A string, as given (a serial port path, a file of settings).
    Text,
    /// A TCP port number.
    Port,
    /// The path of a file that must exist, made absolute.
    File,
}

/// One of the manual's device flags (`-pp /dev/ttyS0` and the like): which driver it
/// starts on which devices of the first robot, and which parameter its value sets.
/// Drivers register their flags, so the core names no driver.
#[derive(Debug, Clone, Copy)]
pub struct DeviceFlag {
    /// The flag, with its dash (`"-pp"`).
    pub flag: &'static str,
    /// The driver it starts.
    pub driver: &'static str,
    /// The device codes that driver then serves.
    pub devices: &'static [u8],
    /// The parameter the flag's value sets.
    pub key: &'static str,
    /// What the value is.
    pub value: FlagValue,
}

/// The catalog of driver factories, by name.
#[derive(Clone, Default)]
pub struct Catalog {
    factories: BTreeMap<String, Factory>,
    stage: Option<StageHandler>,
    flags: Vec<DeviceFlag>,
}

impl Catalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers (or replaces) the factory for `name`.
    pub fn register<F>(&mut self, name: &str, factory: F)
    where
        F: Fn(DriverContext) -> Result<StartedDriver, DriverError> + Send + Sync + 'static,
    {
        self.factories.insert(name.to_string(), Arc::new(factory));
    }

    /// The factory registered as `name`.
    pub fn get(&self, name: &str) -> Option<&Factory> {
        self.factories.get(name)
    }

    /// Registers what `-stage WORLD` does (a simulator driver registers it).
    pub fn set_stage_handler(&mut self, handler: StageHandler) {
        self.stage = Some(handler);
    }

    /// What `-stage WORLD` does, if a simulator is registered.
    pub fn stage_handler(&self) -> Option<StageHandler> {
        self.stage
    }

    /// Registers one of the manual's device flags (replacing one of the same name).
    pub fn add_flag(&mut self, flag: DeviceFlag) {
        self.flags.retain(|f| f.flag != flag.flag);
        self.flags.push(flag);
    }

    /// The device flag named `flag` (with its dash), if a driver registered it.
    pub fn flag(&self, flag: &str) -> Option<&DeviceFlag> {
        self.flags.iter().find(|f| f.flag == flag)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.factories.keys().map(String::as_str).collect()
    }
}

/// One driver instance (`[[robot.driver]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverSettings {
    /// The driver's name in the catalog.
    pub driver: String,
    /// The device codes it serves, one character each (for example `["p", "s"]`); `"p as
    /// O"` serves the driver's `p` as `O` ([`crate::labels`]).
    pub devices: Vec<String>,
    /// Seconds its moving devices' commands hold (overrides the robot's; 0: no watchdog).
    #[serde(default)]
    pub command_timeout: Option<f64>,
    /// Driver-specific parameters.
    #[serde(default = "empty_table")]
    pub params: config::Value,
}

fn empty_table() -> config::Value {
    config::Value::new(None, config::ValueKind::Table(Default::default()))
}

impl DriverSettings {
    /// The driver's own device codes, each checked to be one ASCII character (`"p as O"`
    /// gives `p`).
    pub fn device_codes(&self) -> Result<Vec<u8>, BadDeviceCode> {
        Ok(self.served()?.into_iter().map(|(own, _)| own).collect())
    }

    /// The codes the robot serves this instance's devices as (`"p as O"` gives `O`).
    pub fn served_codes(&self) -> Result<Vec<u8>, BadDeviceCode> {
        Ok(self.served()?.into_iter().map(|(_, s)| s).collect())
    }

    /// The instance's renames ([`crate::labels`]).
    pub fn labels(&self) -> Result<Labels, BadDeviceCode> {
        Ok(Labels::new(self.served()?))
    }

    /// Each device as `(own code, served code)`: `"p"` is `(p, p)`, `"p as O"` is `(p,
    /// O)`. A code that is not one ASCII character, or an own or served code listed
    /// twice, is an error naming the entry.
    pub fn served(&self) -> Result<Vec<(u8, u8)>, BadDeviceCode> {
        let bad = |d: &str| BadDeviceCode {
            driver: self.driver.clone(),
            device: d.to_string(),
        };
        let mut out: Vec<(u8, u8)> = Vec::with_capacity(self.devices.len());
        for d in &self.devices {
            let (own, served) = device_entry(d).ok_or_else(|| bad(d))?;
            if out.iter().any(|&(o, s)| o == own || s == served) {
                return Err(bad(d));
            }
            out.push((own, served));
        }
        Ok(out)
    }
}

/// One entry of a driver's `devices` as `(own code, served code)`: `"p"` is `(p, p)`,
/// `"p as O"` is `(p, O)`; `None` when a code is not one printable ASCII character.
pub fn device_entry(entry: &str) -> Option<(u8, u8)> {
    let code = |s: &str| match s.as_bytes() {
        [c] if c.is_ascii_graphic() => Some(*c),
        _ => None,
    };
    match entry.split_once(" as ") {
        None => code(entry).map(|c| (c, c)),
        Some((own, served)) => code(own.trim()).zip(code(served.trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(devices: &[&str]) -> DriverSettings {
        DriverSettings {
            driver: "sim".into(),
            devices: devices.iter().map(|d| d.to_string()).collect(),
            command_timeout: None,
            params: empty_table(),
        }
    }

    #[test]
    fn devices_may_be_served_under_another_code() {
        let s = settings(&["p as O", "s", "l"]);
        assert_eq!(
            s.served().unwrap(),
            vec![(b'p', b'O'), (b's', b's'), (b'l', b'l')]
        );
        assert_eq!(s.device_codes().unwrap(), b"psl");
        assert_eq!(s.served_codes().unwrap(), b"Osl");
        assert_eq!(s.labels().unwrap().pairs(), &[(b'p', b'O')]);
        for bad in [
            &["pp"][..],
            &["p as"],
            &["p as OO"],
            &["p", "p as O"],
            &["p as O", "O"],
            &["as O"],
            &[""],
        ] {
            let e = settings(bad).served().unwrap_err();
            assert!(e.to_string().contains("'c as C'"), "{e}");
        }
    }
}
