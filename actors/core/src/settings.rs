//! Configuration: TOML files read through the `config` crate, and the manual's flags.
//!
//! Order of precedence, lowest first: built-in defaults, the configuration file (the
//! shipped `config/default.toml` when none is named), then command-line flags. A bad file,
//! key or flag is an error that names it.
//!
//! The core reads `[server]`, `[access]` and `[[robot]]`. A front end's section (`[record]`,
//! `[zenoh]`), keys of a robot (the web viewer's `web_port`) and flags (`-record`, `-web`,
//! `--zenoh`) are the front end's: the parsers here take them when told of them
//! ([`FrontEndSyntax`]) and keep them raw ([`Settings::sections`],
//! [`RobotSettings::front_end_keys`], [`Invocation::Run`]'s `flags`) for the binary, which
//! hands each front end its own. Any other section, key or flag is an error naming it.

use crate::access::AccessSettings;
use crate::session::SessionOptions;
pub use player_kit::catalog::DriverSettings;
use player_kit::catalog::{Catalog, DeviceFlag, FlagValue, StageHandler, StageRobot};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The shipped default configuration: the simulated Pioneer 2-DX on port 6665.
pub const DEFAULT_CONFIG: &str = include_str!("../../../config/default.toml");

/// The core's configuration, and the front ends' sections as read.
#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    /// Server-wide settings.
    #[serde(default)]
    pub server: ServerSettings,
    /// Who may connect, read and command (`[access]`).
    #[serde(default)]
    pub access: AccessSettings,
    /// The robots served, each on its own port with its own registry.
    #[serde(default)]
    pub robot: Vec<RobotSettings>,
    /// The front ends' sections present in the file, by name, not yet deserialized (each
    /// front end reads its own).
    #[serde(skip)]
    pub sections: BTreeMap<String, config::Value>,
    /// Where the settings were read from, as errors name it.
    #[serde(skip)]
    pub origin: String,
    /// How many robots, from the first, a `-stage` world made (0 without `-stage`): a
    /// front end may serve a large world differently (the web viewer, on one port).
    #[serde(skip)]
    pub staged: usize,
}

/// A front end's flag, which the core's parser takes and hands back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagSpec {
    /// The flag, e.g. `-record`.
    pub flag: &'static str,
    /// Whether a value follows it.
    pub takes_value: bool,
}

/// What a front end adds to the configuration's syntax.
#[derive(Debug, Clone, Copy, Default)]
pub struct FrontEndSyntax {
    /// Its sections (top-level tables).
    pub sections: &'static [&'static str],
    /// Its keys of a robot (in each `[[robot]]`, beside the core's).
    pub robot_keys: &'static [&'static str],
    /// Its flags.
    pub flags: &'static [FlagSpec],
}

/// A front end's flag as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GivenFlag {
    /// The flag.
    pub flag: &'static str,
    /// Its value, when it takes one.
    pub value: Option<String>,
}

/// The sections the core reads itself.
const CORE_SECTIONS: [&str; 3] = ["server", "access", "robot"];

/// The keys of a robot the core reads itself: [`RobotSettings`]' fields (a field missing
/// here is refused as unknown, so the two cannot drift apart unnoticed).
const CORE_ROBOT_KEYS: [&str; 5] = ["name", "port", "bind", "command_timeout", "driver"];

/// Server-wide settings (`[server]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSettings {
    /// Most clients connected at once per robot port; more are closed at accept.
    pub max_clients: usize,
    /// Threads serving client sessions (the drivers' thread included); 0 means one per core.
    pub workers: usize,
    /// Debug logging (`-debug`).
    pub debug: bool,
    /// Experimental features (`-exp`).
    pub experimental: bool,
    /// Seconds a device setup may take before the client gets `e`.
    pub setup_timeout: f64,
    /// Seconds a first round may wait for a device before the device is named in the log.
    pub quiet_after: f64,
    /// Seconds a client may leave its data unread before it is disconnected (0: never).
    pub stall_timeout: f64,
    /// Highest data frequency a client may set, in Hz.
    pub max_frequency: u16,
    /// Most distinct devices in one client's list.
    pub max_devices: usize,
    /// Depth of the listening sockets' accept queue.
    pub listen_backlog: u32,
    /// Seconds a connection may be idle before TCP keepalive probes start (0: no
    /// keepalive).
    pub keepalive_idle: f64,
    /// Seconds between keepalive probes.
    pub keepalive_interval: f64,
    /// Unanswered probes before the connection is dropped.
    pub keepalive_count: u32,
    /// Seconds written data may stay unacknowledged (or the peer's window shut) before the
    /// kernel drops the connection (`TCP_USER_TIMEOUT`; 0: the kernel's default, minutes).
    pub user_timeout: f64,
    /// Seconds a client may take to finish a message it has started (0: forever).
    pub partial_timeout: f64,
    /// Bytes of replies and notices a client may leave unread before its input is no
    /// longer read (it is disconnected after `stall_timeout`).
    pub max_output: usize,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            max_clients: 4096,
            workers: 0,
            debug: false,
            experimental: false,
            setup_timeout: 30.0,
            quiet_after: 3.0,
            stall_timeout: 60.0,
            max_frequency: 1000,
            max_devices: 16,
            listen_backlog: 1024,
            keepalive_idle: 2.0,
            keepalive_interval: 1.0,
            keepalive_count: 3,
            user_timeout: 5.0,
            partial_timeout: 10.0,
            max_output: 256 * 1024,
        }
    }
}

/// One robot (`[[robot]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotSettings {
    /// A name for logs.
    #[serde(default = "default_robot_name")]
    pub name: String,
    /// The TCP port clients connect to (`-gp` sets the first robot's).
    #[serde(default = "default_port")]
    pub port: u16,
    /// The address to listen on (`-bind` sets every robot's).
    #[serde(default = "default_bind")]
    pub bind: String,
    /// Seconds a moving device's command holds without a fresh one before the watchdog
    /// stops it, for every driver of this robot that has no `command_timeout` of its own
    /// (0: no watchdog; unset: the driver's default, 0.5 s for a base).
    #[serde(default)]
    pub command_timeout: Option<f64>,
    /// The drivers backing this robot's devices.
    #[serde(default)]
    pub driver: Vec<DriverSettings>,
    /// The front ends' keys of this robot (the web viewer's `web_port`), by name, not yet
    /// deserialized: each front end reads its own ([`Settings::robot_keys`]).
    #[serde(skip)]
    pub front_end_keys: BTreeMap<String, config::Value>,
}

/// Checks that `v` is a number of seconds a timer can take; the error names `key`.
pub fn check_seconds(origin: &str, key: &str, v: f64) -> Result<(), SettingsError> {
    if v.is_finite() && (0.0..=1e9).contains(&v) {
        Ok(())
    } else {
        Err(SettingsError::value(
            origin,
            key,
            "must be a non-negative number of seconds",
        ))
    }
}

fn default_robot_name() -> String {
    "robot".into()
}
fn default_port() -> u16 {
    6665
}
fn default_bind() -> String {
    "0.0.0.0".into()
}

/// A configuration or command-line error, naming the file, key or flag.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The configuration file cannot be read.
    #[error("cannot read configuration file '{}': {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not TOML, or a key is unknown or of the wrong type.
    #[error("{origin}: {source}")]
    Parse {
        /// The file (or text) it came from.
        origin: String,
        /// What the parser said (it names the key).
        source: Box<config::ConfigError>,
    },
    /// A value is out of range or inconsistent with others.
    #[error("{origin}: {key}: {why}")]
    Value {
        /// The file (or text, or `command line`) it came from.
        origin: String,
        /// The key (or section, or robot) at fault.
        key: String,
        /// What is wrong.
        why: String,
    },
    /// A flag's value is missing or wrong.
    #[error("flag {flag}: {why}")]
    Flag {
        /// The flag.
        flag: String,
        /// What is wrong.
        why: String,
    },
    /// A flag no one takes.
    #[error("unknown flag '{flag}' (see --help)")]
    UnknownFlag {
        /// The flag.
        flag: String,
    },
}

impl SettingsError {
    /// A [`SettingsError::Value`].
    pub fn value(origin: &str, key: &str, why: impl Into<String>) -> Self {
        SettingsError::Value {
            origin: origin.to_string(),
            key: key.to_string(),
            why: why.into(),
        }
    }

    /// A [`SettingsError::Flag`].
    pub fn flag(flag: &str, why: impl Into<String>) -> Self {
        SettingsError::Flag {
            flag: flag.to_string(),
            why: why.into(),
        }
    }
}

impl Settings {
    /// Parses TOML text holding the core's sections only; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Settings, SettingsError> {
        Self::from_toml_with(text, origin, &[])
    }

    /// Parses TOML text that may also hold the sections and robot keys of `front_ends`.
    pub fn from_toml_with(
        text: &str,
        origin: &str,
        front_ends: &[FrontEndSyntax],
    ) -> Result<Settings, SettingsError> {
        let parse = |source| SettingsError::Parse {
            origin: origin.to_string(),
            source: Box::new(source),
        };
        let c = config::Config::builder()
            .add_source(config::File::from_str(text, config::FileFormat::Toml))
            .build()
            .map_err(parse)?;
        let top: BTreeMap<String, serde::de::IgnoredAny> =
            c.clone().try_deserialize().map_err(parse)?;
        let theirs = |key: &str| front_ends.iter().any(|f| f.sections.contains(&key));
        let mut sections = BTreeMap::new();
        for key in top.keys() {
            if CORE_SECTIONS.contains(&key.as_str()) {
                continue;
            }
            if !theirs(key) {
                let known: Vec<&str> = CORE_SECTIONS
                    .iter()
                    .chain(front_ends.iter().flat_map(|f| f.sections))
                    .copied()
                    .collect();
                return Err(SettingsError::value(
                    origin,
                    key,
                    format!("unknown section (expected one of {})", known.join(", ")),
                ));
            }
            sections.insert(key.clone(), c.get::<config::Value>(key).map_err(parse)?);
        }
        let mut root: config::Value = c.try_deserialize().map_err(parse)?;
        let robot_keys = take_robot_keys(&mut root, front_ends).map_err(parse)?;
        let mut s: Settings = root.try_deserialize().map_err(parse)?;
        for (r, keys) in s.robot.iter_mut().zip(robot_keys) {
            r.front_end_keys = keys;
        }
        s.sections = sections;
        s.origin = origin.to_string();
        s.check(origin)?;
        Ok(s)
    }

    /// Reads a TOML file holding the core's sections only.
    pub fn from_file(path: &Path) -> Result<Settings, SettingsError> {
        Self::from_file_with(path, &[])
    }

    /// Reads a TOML file that may also hold the sections and robot keys of `front_ends`.
    pub fn from_file_with(
        path: &Path,
        front_ends: &[FrontEndSyntax],
    ) -> Result<Settings, SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|source| SettingsError::File {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml_with(
            &text,
            &format!("configuration file '{}'", path.display()),
            front_ends,
        )
    }

    /// Front-end section `name` read as a `T` (`T::default()` when the file has none); an
    /// unknown key or a wrong type is an error naming the section and the key.
    pub fn section<T: serde::de::DeserializeOwned + Default>(
        &self,
        name: &str,
    ) -> Result<T, SettingsError> {
        match self.sections.get(name) {
            None => Ok(T::default()),
            Some(v) => v
                .clone()
                .try_deserialize()
                .map_err(|e| SettingsError::value(&self.origin, name, e.to_string())),
        }
    }

    /// The robot keys `keys` (a front end's) of every robot, read as a `T` each (from the
    /// keys the robot has: `T` gives the defaults), in configuration order; a wrong type is
    /// an error naming the robot and the key, as the parser names the core's keys.
    pub fn robot_keys<T: serde::de::DeserializeOwned>(
        &self,
        keys: &[&str],
    ) -> Result<Vec<T>, SettingsError> {
        #[derive(Deserialize)]
        struct Robots<T> {
            robot: Vec<T>,
        }
        let table = |m: config::Map<String, config::Value>| {
            config::Value::new(None, config::ValueKind::Table(m))
        };
        let robots = self
            .robot
            .iter()
            .map(|r| {
                table(
                    r.front_end_keys
                        .iter()
                        .filter(|(k, _)| keys.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                )
            })
            .collect();
        let robots = config::Value::new(None, config::ValueKind::Array(robots));
        table(config::Map::from_iter([("robot".to_string(), robots)]))
            .try_deserialize::<Robots<T>>()
            .map(|r| r.robot)
            .map_err(|source| SettingsError::Parse {
                origin: self.origin.clone(),
                source: Box::new(source),
            })
    }

    /// The shipped default configuration.
    pub fn default_config() -> Settings {
        Self::default_config_with(&[])
    }

    /// The shipped default configuration, read with `front_ends`.
    pub fn default_config_with(front_ends: &[FrontEndSyntax]) -> Settings {
        Self::from_toml_with(DEFAULT_CONFIG, "built-in config/default.toml", front_ends)
            .expect("the shipped default configuration is valid")
    }

    fn check(&self, origin: &str) -> Result<(), SettingsError> {
        if self.robot.is_empty() {
            return Err(SettingsError::value(
                origin,
                "robot",
                "no [[robot]] is configured",
            ));
        }
        for r in &self.robot {
            for d in &r.driver {
                d.device_codes().map_err(|e| {
                    SettingsError::value(origin, &format!("robot '{}'", r.name), e.to_string())
                })?;
                if let Some(t) = d.command_timeout {
                    check_seconds(
                        origin,
                        &format!("robot '{}' driver '{}' command_timeout", r.name, d.driver),
                        t,
                    )?;
                }
            }
            if let Some(t) = r.command_timeout {
                check_seconds(origin, &format!("robot '{}' command_timeout", r.name), t)?;
            }
        }
        crate::access::Policy::new(&self.access)
            .map_err(|e| SettingsError::value(origin, &format!("access.{}", e.key), e.why))?;
        if self.server.max_frequency == 0 {
            return Err(SettingsError::value(
                origin,
                "server.max_frequency",
                "must be at least 1",
            ));
        }
        for (key, v) in [
            ("server.setup_timeout", self.server.setup_timeout),
            ("server.quiet_after", self.server.quiet_after),
            ("server.stall_timeout", self.server.stall_timeout),
            ("server.keepalive_idle", self.server.keepalive_idle),
            ("server.keepalive_interval", self.server.keepalive_interval),
            ("server.user_timeout", self.server.user_timeout),
            ("server.partial_timeout", self.server.partial_timeout),
        ] {
            check_seconds(origin, key, v)?;
        }
        Ok(())
    }

    /// The per-session options (without the robot's device table, which the server adds).
    pub fn session_options(&self) -> SessionOptions {
        let policy = crate::access::Policy::new(&self.access).unwrap_or_default();
        SessionOptions {
            max_frequency: self.server.max_frequency,
            max_devices: self.server.max_devices,
            quiet_after: Duration::from_secs_f64(self.server.quiet_after),
            stall_timeout: Duration::from_secs_f64(self.server.stall_timeout),
            partial_timeout: Duration::from_secs_f64(self.server.partial_timeout),
            max_output: self.server.max_output.max(4096),
            policy: std::sync::Arc::new(policy),
            devices: std::sync::Arc::new([false; 256]),
        }
    }

    /// The command watchdog timeout for a device of `driver` on `robot` whose driver
    /// declared `declared` (`None`: not a moving device, never watched).
    pub fn command_timeout(
        robot: &RobotSettings,
        driver: &DriverSettings,
        declared: Option<Duration>,
    ) -> Option<Duration> {
        let declared = declared?;
        let t = match driver.command_timeout.or(robot.command_timeout) {
            Some(secs) => Duration::from_secs_f64(secs),
            None => declared,
        };
        (!t.is_zero()).then_some(t)
    }

    /// Makes driver `name` (with `params`) back `codes` on the first robot, taking them
    /// from the drivers that had them (by the code the robot serves: `"p as O"` is taken
    /// for `O`); drivers left with no device are dropped.
    pub fn assign(&mut self, name: &str, codes: &[u8], params: Vec<(&str, config::Value)>) {
        let robot = &mut self.robot[0];
        let taken = |entry: &String| {
            player_kit::catalog::device_entry(entry).is_some_and(|(_, s)| codes.contains(&s))
        };
        for d in &mut robot.driver {
            d.devices.retain(|e| !taken(e));
        }
        robot.driver.retain(|d| !d.devices.is_empty());
        let mut table = config::Map::new();
        for (k, v) in params {
            table.insert(k.to_string(), v);
        }
        robot.driver.push(DriverSettings {
            command_timeout: None,
            driver: name.into(),
            devices: codes.iter().map(|&c| char::from(c).to_string()).collect(),
            params: config::Value::new(None, config::ValueKind::Table(table)),
        });
    }
}

impl Settings {
    /// Applies `-stage WORLD` through the simulator's [`StageHandler`]: the configuration's
    /// first robot is replaced by the first robot the handler returns, every further one
    /// becomes a robot of its own (on the first robot's bind address), and the robots of the
    /// configuration beyond the first are served as before. Errors name a port clash.
    pub fn apply_stage(
        &mut self,
        stage: StageHandler,
        world: &str,
        gp: Option<u16>,
    ) -> Result<(), SettingsError> {
        let first = self
            .robot
            .first()
            .cloned()
            .ok_or_else(|| SettingsError::flag("-stage", "the configuration has no robot"))?;
        let planned = stage(
            &StageRobot {
                name: first.name.clone(),
                port: first.port,
                drivers: first.driver.clone(),
            },
            world,
            gp,
        )
        .map_err(|e| SettingsError::flag("-stage", e.to_string()))?;
        let mut robots = Vec::with_capacity(planned.len() + self.robot.len());
        let staged = planned.len();
        for (i, p) in planned.into_iter().enumerate() {
            let mut r = if i == 0 {
                first.clone()
            } else {
                RobotSettings {
                    command_timeout: None,
                    name: String::new(),
                    port: 0,
                    bind: first.bind.clone(),
                    driver: Vec::new(),
                    front_end_keys: BTreeMap::new(),
                }
            };
            r.name = p.name;
            r.port = p.port;
            r.driver = p.drivers;
            robots.push(r);
        }
        robots.extend(self.robot.iter().skip(1).cloned());
        for (i, a) in robots.iter().enumerate() {
            if a.port != 0 {
                if let Some(b) = robots[..i].iter().find(|b| b.port == a.port) {
                    return Err(SettingsError::flag(
                        "-stage",
                        format!(
                            "robots '{}' and '{}' would both listen on port {}",
                            b.name, a.name, a.port
                        ),
                    ));
                }
            }
        }
        self.robot = robots;
        self.staged = staged;
        Ok(())
    }
}

/// Takes the front ends' keys out of each `[[robot]]` table of `root` (the whole file), for
/// [`RobotSettings::front_end_keys`]; a key neither the core's nor a front end's is an error
/// listing the keys a robot may have, as the core's own parser lists them.
fn take_robot_keys(
    root: &mut config::Value,
    front_ends: &[FrontEndSyntax],
) -> Result<Vec<BTreeMap<String, config::Value>>, config::ConfigError> {
    let config::ValueKind::Table(top) = &mut root.kind else {
        return Ok(Vec::new());
    };
    let Some(config::Value {
        kind: config::ValueKind::Array(robots),
        ..
    }) = top.get_mut("robot")
    else {
        return Ok(Vec::new());
    };
    let theirs = |k: &str| front_ends.iter().any(|f| f.robot_keys.contains(&k));
    let mut all = Vec::with_capacity(robots.len());
    for r in robots {
        let mut keys = BTreeMap::new();
        if let config::ValueKind::Table(t) = &mut r.kind {
            let unknown = t
                .keys()
                .find(|k| !CORE_ROBOT_KEYS.contains(&k.as_str()) && !theirs(k));
            if let Some(k) = unknown {
                let expected: Vec<String> = CORE_ROBOT_KEYS
                    .iter()
                    .chain(front_ends.iter().flat_map(|f| f.robot_keys))
                    .map(|k| format!("`{k}`"))
                    .collect();
                return Err(config::ConfigError::Message(format!(
                    "unknown field `{k}`, expected one of {}",
                    expected.join(", ")
                )));
            }
            let mine: Vec<String> = t.keys().filter(|k| theirs(k)).cloned().collect();
            for k in mine {
                if let Some(v) = t.remove(&k) {
                    keys.insert(k, v);
                }
            }
        }
        all.push(keys);
    }
    Ok(all)
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Invocation {
    /// Run the server.
    Run {
        /// The configuration, flags applied.
        settings: Box<Settings>,
        /// The directory relative paths in the configuration are resolved against.
        base_dir: PathBuf,
        /// The front ends' flags, in command-line order.
        flags: Vec<GivenFlag>,
    },
    /// Print the help text.
    Help,
    /// Print the version.
    Version,
}

fn value_of<'a>(
    flag: &str,
    it: &mut impl Iterator<Item = &'a String>,
) -> Result<&'a String, SettingsError> {
    it.next()
        .ok_or_else(|| SettingsError::flag(flag, "needs a value (see --help)"))
}

fn text(s: &str) -> config::Value {
    config::Value::new(None, config::ValueKind::String(s.to_string()))
}

/// `-stage WORLD` (given `args`, the whole command line): every robot of the world on its
/// own port, the first on `-gp`'s, wherever that is on the command line.
fn stage(
    settings: &mut Settings,
    catalog: &Catalog,
    args: &[String],
    world: &str,
) -> Result<(), SettingsError> {
    if !Path::new(world).exists() {
        return Err(SettingsError::flag(
            "-stage",
            format!("world file '{world}' does not exist"),
        ));
    }
    let gp = args
        .windows(2)
        .rev()
        .find(|w| w[0] == "-gp")
        .and_then(|w| w[1].parse::<u16>().ok());
    let stage = catalog
        .stage_handler()
        .ok_or_else(|| SettingsError::flag("-stage", "no simulator driver is registered"))?;
    settings.apply_stage(stage, world, gp)
}

/// The front end's flag `flag`, if one of `front_ends` takes it.
fn front_end_flag(front_ends: &[FrontEndSyntax], flag: &str) -> Option<&'static FlagSpec> {
    front_ends
        .iter()
        .flat_map(|e| e.flags)
        .find(|s| s.flag == flag)
}

/// The parameter a driver's device flag `df` sets, from the flag's value `v`: text, a TCP
/// port, or a file that must exist (made absolute).
fn device_flag_value(df: &DeviceFlag, v: &str) -> Result<config::Value, SettingsError> {
    let f = df.flag;
    Ok(match df.value {
        FlagValue::Text => text(v),
        FlagValue::Port => {
            let port: u16 = v
                .parse()
                .map_err(|_| SettingsError::flag(f, format!("'{v}' is not a TCP port number")))?;
            config::Value::new(None, config::ValueKind::U64(u64::from(port)))
        }
        FlagValue::File => {
            if !Path::new(v).is_file() {
                return Err(SettingsError::flag(f, format!("file '{v}' does not exist")));
            }
            text(&absolute(v).display().to_string())
        }
    })
}

/// `p` made absolute against the current directory (a flag's path means what it means
/// where the command was typed, not where the configuration file is).
pub fn absolute(p: &str) -> PathBuf {
    let p = PathBuf::from(p);
    if p.is_absolute() {
        p
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// Parses the command line (without the program name). `catalog` says what `-stage` does
/// and which device flags (`-pp`, `-lp`, ...) its drivers take; `front_ends`, which
/// sections, robot keys and flags the front ends take (handed back raw, for them to read).
pub fn parse_args_with(
    args: &[String],
    catalog: &Catalog,
    front_ends: &[FrontEndSyntax],
) -> Result<Invocation, SettingsError> {
    let mut config_file: Option<PathBuf> = None;
    let mut flags: Vec<(&str, Option<&String>)> = Vec::new();
    let mut given = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--help" | "-h" | "-help" => return Ok(Invocation::Help),
            "--version" | "-version" => return Ok(Invocation::Version),
            "--config" | "-config" => {
                config_file = Some(PathBuf::from(value_of(a, &mut it)?));
            }
            "-gp" | "-stage" | "-bind" => {
                let v = value_of(a, &mut it)?;
                flags.push((a.as_str(), Some(v)));
            }
            f if front_end_flag(front_ends, f).is_some() => {
                let spec = front_end_flag(front_ends, f).expect("found above");
                let value = if spec.takes_value {
                    Some(value_of(a, &mut it)?.clone())
                } else {
                    None
                };
                given.push(GivenFlag {
                    flag: spec.flag,
                    value,
                });
            }
            f if catalog.flag(f).is_some() => {
                let v = value_of(a, &mut it)?;
                flags.push((a.as_str(), Some(v)));
            }
            "-debug" | "-exp" => flags.push((a.as_str(), None)),
            other => {
                return Err(SettingsError::UnknownFlag {
                    flag: other.to_string(),
                })
            }
        }
    }
    let (mut settings, base_dir) = match &config_file {
        Some(p) => (
            Settings::from_file_with(p, front_ends)?,
            p.parent()
                .map(Path::to_path_buf)
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or_else(|| PathBuf::from(".")),
        ),
        None => (
            Settings::default_config_with(front_ends),
            PathBuf::from("."),
        ),
    };
    let mut driver_flags: Vec<(&DeviceFlag, Vec<(&str, config::Value)>)> = Vec::new();
    let mut bind: Option<String> = None;
    for (flag, value) in flags {
        let v = value.map(String::as_str).unwrap_or_default();
        match flag {
            "-gp" => {
                settings.robot[0].port = v.parse().map_err(|_| {
                    SettingsError::flag("-gp", format!("'{v}' is not a TCP port number"))
                })?;
            }
            "-stage" => stage(&mut settings, catalog, args, v)?,
            "-bind" => {
                if v.parse::<std::net::IpAddr>().is_err() {
                    return Err(SettingsError::flag(
                        "-bind",
                        format!("'{v}' is not an IP address (e.g. 127.0.0.1 or ::)"),
                    ));
                }
                bind = Some(v.to_string());
            }
            "-debug" => settings.server.debug = true,
            "-exp" => settings.server.experimental = true,
            f => {
                let Some(df) = catalog.flag(f) else {
                    unreachable!("flag list above")
                };
                let value = device_flag_value(df, v)?;
                match driver_flags.iter_mut().find(|(d, _)| d.driver == df.driver) {
                    Some((_, params)) => params.push((df.key, value)),
                    None => driver_flags.push((df, vec![(df.key, value)])),
                }
            }
        }
    }
    // Each driver's flags together (`-vp` and `-vc` both configure the ACTS driver).
    for (df, params) in driver_flags {
        settings.assign(df.driver, df.devices, params);
    }
    // After -stage, so the robots of a world listen there too.
    if let Some(bind) = bind {
        for r in &mut settings.robot {
            r.bind = bind.clone();
        }
    }
    Ok(Invocation::Run {
        settings: Box::new(settings),
        base_dir,
        flags: given,
    })
}

#[cfg(test)]
mod tests;
