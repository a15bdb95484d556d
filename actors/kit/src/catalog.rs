//! The driver catalog: driver factories found by name.
//!
//! The configuration file names, for each robot, which driver backs which device codes and
//! with what parameters. The server looks each driver name up here and calls its factory,
//! which starts the driver actor and declares the devices it serves. Adding a driver means
//! registering one more factory; the registry and the sessions never change.

use crate::driver::{
    Command, Config, DeviceSource, DeviceSpec, DriverError, DriverHandle, Setup, Shutdown,
    StatusSink, Stop, Subscribers, Terminate,
};
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
    /// The device codes the configuration gives this instance.
    pub devices: Vec<u8>,
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

/// A device in a driver's `devices` that is not a one-character device code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("driver '{driver}': device '{device}' is not a one-character device code")]
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
    /// The device codes it serves, one character each (for example `["p", "s"]`).
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
    /// The device codes, each checked to be one ASCII character.
    pub fn device_codes(&self) -> Result<Vec<u8>, BadDeviceCode> {
        self.devices
            .iter()
            .map(|d| match d.as_bytes() {
                [c] if c.is_ascii_graphic() => Ok(*c),
                _ => Err(BadDeviceCode {
                    driver: self.driver.clone(),
                    device: d.clone(),
                }),
            })
            .collect()
    }
}
