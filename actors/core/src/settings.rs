//! Configuration: TOML files read through the `config` crate, and the manual's flags.
//!
//! Order of precedence, lowest first: built-in defaults, the configuration file (the
//! shipped `config/default.toml` when none is named), then command-line flags. A bad file,
//! key or flag is an error that names it.

use crate::access::AccessSettings;
use crate::session::SessionOptions;
pub use player_kit::catalog::DriverSettings;
use player_kit::catalog::{Catalog, DeviceFlag, FlagValue, StageHandler, StageRobot};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The shipped default configuration: the simulated Pioneer 2-DX on port 6665.
pub const DEFAULT_CONFIG: &str = include_str!("../../../config/default.toml");

/// `-stage` gives each robot of a world with at most this many robots a web viewer port
/// of its own; in a larger world only the first robot has one (a `-web` flag still sets
/// every robot's).
pub const STAGE_WEB_VIEWERS_MAX: usize = 64;

/// The first robot's web viewer port when none is configured (Foxglove's default port).
pub const DEFAULT_WEB_PORT: u16 = 8765;

/// The whole configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// Recording to MCAP (`[record]`, `-record FILE`).
    #[serde(default)]
    pub record: crate::record::RecordSettings,
    /// The Zenoh bridge (`[zenoh]`, `--zenoh`).
    #[serde(default)]
    pub zenoh: crate::zenoh_bridge::ZenohSettings,
}

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
    /// The web viewer's port (HTTP and Foxglove WebSocket); 0 turns it off. Unset: robot
    /// `i` of the configuration gets [`DEFAULT_WEB_PORT`]` + i`, and a busy default port
    /// is logged, not fatal (a configured one that cannot be bound is an error).
    #[serde(default)]
    pub web_port: Option<u16>,
    /// Seconds a moving device's command holds without a fresh one before the watchdog
    /// stops it, for every driver of this robot that has no `command_timeout` of its own
    /// (0: no watchdog; unset: the driver's default, 0.5 s for a base).
    #[serde(default)]
    pub command_timeout: Option<f64>,
    /// The drivers backing this robot's devices.
    #[serde(default)]
    pub driver: Vec<DriverSettings>,
}

fn check_seconds(origin: &str, key: &str, v: f64) -> Result<(), SettingsError> {
    if v.is_finite() && (0.0..=1e9).contains(&v) {
        Ok(())
    } else {
        Err(SettingsError(format!(
            "{origin}: {key} must be a non-negative number of seconds"
        )))
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError(pub String);

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    /// Parses TOML text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Settings, SettingsError> {
        let s: Settings = config::Config::builder()
            .add_source(config::File::from_str(text, config::FileFormat::Toml))
            .build()
            .and_then(|c| c.try_deserialize())
            .map_err(|e| SettingsError(format!("{origin}: {e}")))?;
        s.check(origin)?;
        Ok(s)
    }

    /// Reads a TOML file.
    pub fn from_file(path: &Path) -> Result<Settings, SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            SettingsError(format!(
                "cannot read configuration file '{}': {e}",
                path.display()
            ))
        })?;
        Self::from_toml(&text, &format!("configuration file '{}'", path.display()))
    }

    /// The shipped default configuration.
    pub fn default_config() -> Settings {
        Self::from_toml(DEFAULT_CONFIG, "built-in config/default.toml")
            .expect("the shipped default configuration is valid")
    }

    fn check(&self, origin: &str) -> Result<(), SettingsError> {
        if self.robot.is_empty() {
            return Err(SettingsError(format!(
                "{origin}: no [[robot]] is configured"
            )));
        }
        for r in &self.robot {
            for d in &r.driver {
                d.device_codes()
                    .map_err(|e| SettingsError(format!("{origin}: robot '{}': {e}", r.name)))?;
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
        self.record
            .check()
            .map_err(|e| SettingsError(format!("{origin}: {e}")))?;
        crate::access::Policy::new(&self.access)
            .map_err(|e| SettingsError(format!("{origin}: {e}")))?;
        self.zenoh
            .check(&self.robot, &self.access)
            .map_err(|e| SettingsError(format!("{origin}: {e}")))?;
        if self.server.max_frequency == 0 {
            return Err(SettingsError(format!(
                "{origin}: server.max_frequency must be at least 1"
            )));
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

    /// Robot `i`'s web viewer port and whether it was configured (a configured port that
    /// cannot be bound stops the server; the default is best effort); `None` when off.
    pub fn web_port_of(&self, i: usize) -> Option<(u16, bool)> {
        match self.robot.get(i)?.web_port {
            Some(0) => None,
            Some(p) => Some((p, true)),
            None => u16::try_from(usize::from(DEFAULT_WEB_PORT) + i)
                .ok()
                .map(|p| (p, false)),
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
    /// from the drivers that had them; drivers left with no device are dropped.
    pub fn assign(&mut self, name: &str, codes: &[u8], params: Vec<(&str, config::Value)>) {
        let robot = &mut self.robot[0];
        for d in &mut robot.driver {
            d.devices
                .retain(|c| !codes.iter().any(|&k| c.as_bytes() == [k]));
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
    ) -> Result<(), String> {
        let first = self
            .robot
            .first()
            .cloned()
            .ok_or_else(|| "flag -stage: the configuration has no robot".to_string())?;
        let planned = stage(
            &StageRobot {
                name: first.name.clone(),
                port: first.port,
                drivers: first.driver.clone(),
            },
            world,
            gp,
        )?;
        let mut robots = Vec::with_capacity(planned.len() + self.robot.len());
        // A large world: one web viewer (the first robot's), not a listening port per robot.
        let web_each = planned.len() <= STAGE_WEB_VIEWERS_MAX;
        for (i, p) in planned.into_iter().enumerate() {
            let mut r = if i == 0 {
                first.clone()
            } else {
                RobotSettings {
                    command_timeout: None,
                    name: String::new(),
                    port: 0,
                    bind: first.bind.clone(),
                    web_port: if web_each { None } else { Some(0) },
                    driver: Vec::new(),
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
                    return Err(format!(
                        "flag -stage: robots '{}' and '{}' would both listen on port {}",
                        b.name, a.name, a.port
                    ));
                }
            }
        }
        self.robot = robots;
        Ok(())
    }
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
        .ok_or_else(|| SettingsError(format!("flag {flag} needs a value (see --help)")))
}

fn text(s: &str) -> config::Value {
    config::Value::new(None, config::ValueKind::String(s.to_string()))
}

/// `p` made absolute against the current directory (a flag's path means what it means
/// where the command was typed, not where the configuration file is).
fn absolute(p: &str) -> PathBuf {
    let p = PathBuf::from(p);
    if p.is_absolute() {
        p
    } else {
        std::env::current_dir().unwrap_or_default().join(p)
    }
}

/// Parses the command line (without the program name). `catalog` says what `-stage` does
/// and which device flags (`-pp`, `-lp`, ...) its drivers take.
pub fn parse_args_with(args: &[String], catalog: &Catalog) -> Result<Invocation, SettingsError> {
    let mut config_file: Option<PathBuf> = None;
    let mut flags: Vec<(&str, Option<&String>)> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--help" | "-h" | "-help" => return Ok(Invocation::Help),
            "--version" | "-version" => return Ok(Invocation::Version),
            "--config" | "-config" => {
                config_file = Some(PathBuf::from(value_of(a, &mut it)?));
            }
            "-gp" | "-stage" | "-bind" | "-record" | "-web" => {
                let v = value_of(a, &mut it)?;
                flags.push((a.as_str(), Some(v)));
            }
            f if catalog.flag(f).is_some() => {
                let v = value_of(a, &mut it)?;
                flags.push((a.as_str(), Some(v)));
            }
            "-debug" | "-exp" | "--zenoh" => flags.push((a.as_str(), None)),
            other => {
                return Err(SettingsError(format!(
                    "unknown flag '{other}' (see --help)"
                )))
            }
        }
    }
    let (mut settings, base_dir) = match &config_file {
        Some(p) => (
            Settings::from_file(p)?,
            p.parent()
                .map(Path::to_path_buf)
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or_else(|| PathBuf::from(".")),
        ),
        None => (Settings::default_config(), PathBuf::from(".")),
    };
    let mut driver_flags: Vec<(&DeviceFlag, Vec<(&str, config::Value)>)> = Vec::new();
    let mut web: Option<u16> = None;
    let mut bind: Option<String> = None;
    for (flag, value) in flags {
        let v = value.map(String::as_str).unwrap_or_default();
        match flag {
            "-gp" => {
                settings.robot[0].port = v.parse().map_err(|_| {
                    SettingsError(format!("flag -gp: '{v}' is not a TCP port number"))
                })?;
            }
            "-stage" => {
                if !Path::new(v).exists() {
                    return Err(SettingsError(format!(
                        "flag -stage: world file '{v}' does not exist"
                    )));
                }
                // Every robot of the world on its own port; -gp (wherever it is on the
                // command line) sets the first port.
                let gp = args
                    .windows(2)
                    .rev()
                    .find(|w| w[0] == "-gp")
                    .and_then(|w| w[1].parse::<u16>().ok());
                let stage = catalog.stage_handler().ok_or_else(|| {
                    SettingsError("flag -stage: no simulator driver is registered".into())
                })?;
                settings.apply_stage(stage, v, gp).map_err(SettingsError)?;
            }
            "-record" => settings.record.path = absolute(v).display().to_string(),
            "-web" => {
                web = Some(v.parse().map_err(|_| {
                    SettingsError(format!("flag -web: '{v}' is not a TCP port number"))
                })?);
            }
            "-bind" => {
                if v.parse::<std::net::IpAddr>().is_err() {
                    return Err(SettingsError(format!(
                        "flag -bind: '{v}' is not an IP address (e.g. 127.0.0.1 or ::)"
                    )));
                }
                bind = Some(v.to_string());
            }
            "-debug" => settings.server.debug = true,
            "--zenoh" => settings.zenoh.enabled = true,
            "-exp" => settings.server.experimental = true,
            f => {
                let Some(df) = catalog.flag(f) else {
                    unreachable!("flag list above")
                };
                let value = match df.value {
                    FlagValue::Text => text(v),
                    FlagValue::Port => {
                        let port: u16 = v.parse().map_err(|_| {
                            SettingsError(format!("flag {f}: '{v}' is not a TCP port number"))
                        })?;
                        config::Value::new(None, config::ValueKind::U64(u64::from(port)))
                    }
                    FlagValue::File => {
                        if !Path::new(v).is_file() {
                            return Err(SettingsError(format!(
                                "flag {f}: file '{v}' does not exist"
                            )));
                        }
                        text(&absolute(v).display().to_string())
                    }
                };
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
    // After -stage, so every robot of the world gets its port.
    if let Some(base) = web {
        for (i, r) in settings.robot.iter_mut().enumerate() {
            r.web_port = Some(if base == 0 {
                0
            } else {
                u16::try_from(usize::from(base) + i).map_err(|_| {
                    SettingsError(format!(
                        "flag -web: robot {i}'s port {base} + {i} is past 65535"
                    ))
                })?
            });
        }
    }
    // After -stage, so the robots of a world listen there too.
    if let Some(bind) = bind {
        for r in &mut settings.robot {
            r.bind = bind.clone();
        }
    }
    // After -stage and --zenoh: the robots' names and the bridge's section as they are now.
    if settings.zenoh.enabled {
        settings
            .zenoh
            .check(&settings.robot, &settings.access)
            .map_err(SettingsError)?;
    }
    Ok(Invocation::Run {
        settings: Box::new(settings),
        base_dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    /// A catalog with device flags shaped like the shipped drivers' (the core's tests
    /// cannot see the drivers).
    fn catalog() -> Catalog {
        let mut c = Catalog::new();
        let flags: [(
            &'static str,
            &'static str,
            &'static [u8],
            &'static str,
            FlagValue,
        ); 6] = [
            ("-pp", "p2os", b"psmg", "port", FlagValue::Text),
            ("-lp", "sicklms200", b"l", "port", FlagValue::Text),
            ("-zp", "sonyptz", b"z", "port", FlagValue::Text),
            ("-vp", "acts", b"v", "port", FlagValue::Port),
            ("-vc", "acts", b"v", "config", FlagValue::Text),
            ("-replay", "replay", b"psmglzv", "file", FlagValue::File),
        ];
        for (flag, driver, devices, key, value) in flags {
            c.add_flag(DeviceFlag {
                flag,
                driver,
                devices,
                key,
                value,
            });
        }
        c
    }

    fn run(a: &[&str]) -> Result<Settings, SettingsError> {
        match parse_args_with(&args(a), &catalog())? {
            Invocation::Run { settings, .. } => Ok(*settings),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_arguments_serve_the_simulated_robot_on_6665() {
        let s = run(&[]).unwrap();
        assert_eq!(s.robot.len(), 1);
        assert_eq!(s.robot[0].port, 6665);
        assert_eq!(s.robot[0].driver.len(), 1);
        assert_eq!(s.robot[0].driver[0].driver, "sim");
        let mut codes = s.robot[0].driver[0].device_codes().unwrap();
        codes.sort_unstable();
        assert_eq!(codes, b"glmpsvz");
    }

    #[test]
    fn flags_override_the_file() {
        let s = run(&["-gp", "7000", "-debug", "-exp"]).unwrap();
        assert_eq!(s.robot[0].port, 7000);
        assert!(s.server.debug && s.server.experimental);
    }

    #[test]
    fn device_flags_switch_devices_to_real_drivers() {
        let s = run(&["-pp", "/dev/ttyS0", "-lp", "/dev/ttyS1"]).unwrap();
        let names: Vec<(&str, Vec<u8>)> = s.robot[0]
            .driver
            .iter()
            .map(|d| (d.driver.as_str(), d.device_codes().unwrap()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("sim", b"zv".to_vec()),
                ("p2os", b"psmg".to_vec()),
                ("sicklms200", b"l".to_vec())
            ]
        );
    }

    #[test]
    fn bad_flags_name_themselves() {
        assert_eq!(
            run(&["-gp", "seventy"]).unwrap_err().0,
            "flag -gp: 'seventy' is not a TCP port number"
        );
        assert!(run(&["-gp"]).unwrap_err().0.contains("-gp needs a value"));
        assert!(run(&["-bogus"]).unwrap_err().0.contains("'-bogus'"));
        assert!(run(&["-stage", "/no/such/world.toml"])
            .unwrap_err()
            .0
            .contains("/no/such/world.toml"));
    }

    #[test]
    fn web_ports_default_per_robot_and_the_flag_sets_or_turns_them_off() {
        let s = run(&[]).unwrap();
        assert_eq!(s.web_port_of(0), Some((DEFAULT_WEB_PORT, false)));
        let s = run(&["-web", "9000"]).unwrap();
        assert_eq!(s.web_port_of(0), Some((9000, true)));
        let s = run(&["-web", "0"]).unwrap();
        assert_eq!(s.web_port_of(0), None);
        assert!(run(&["-web", "x"]).unwrap_err().0.contains("-web"));
        let t = "[[robot]]\nweb_port = 0\n[[robot]]\nport = 7\n[[robot]]\nweb_port = 9100\n";
        let s = Settings::from_toml(t, "t").unwrap();
        assert_eq!(s.web_port_of(0), None);
        assert_eq!(s.web_port_of(1), Some((DEFAULT_WEB_PORT + 1, false)));
        assert_eq!(s.web_port_of(2), Some((9100, true)));
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_key() {
        let e =
            Settings::from_toml("[server]\nmax_clientz = 3\n[[robot]]\n", "test.toml").unwrap_err();
        assert!(e.0.contains("max_clientz"), "{e}");
        assert!(e.0.contains("test.toml"), "{e}");
        let e = Settings::from_toml("[[robot]]\nport = \"x\"\n", "t").unwrap_err();
        assert!(e.0.contains("port"), "{e}");
        let e = Settings::from_toml(
            "[[robot]]\n[[robot.driver]]\ndriver = \"sim\"\ndevices = [\"pp\"]\n",
            "t",
        )
        .unwrap_err();
        assert!(e.0.contains("'pp'"), "{e}");
    }

    #[test]
    fn shipped_config_files_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "toml") {
                Settings::from_file(&p).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 1);
    }
}
