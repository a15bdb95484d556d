//! The `program` driver's parameters, checked and made into the [`Plan`] the actor starts
//! the program by: its command line, name, devices (what each allows, and what the program
//! is told of them in its hello), timeouts, backoff and limits. Pure: no process is
//! started here.

use player_kit::driver::{DeviceSpec, DriverError, DEFAULT_COMMAND_TIMEOUT};
use player_kit::log::code;
use player_kit::program::frame::{self, DeviceInfo};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One device the program serves (`[[robot.driver.params.device]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceParams {
    /// The device code (one character).
    pub code: String,
    /// The largest data payload the program may publish (bytes).
    #[serde(default)]
    pub data_size: u16,
    /// The exact size of its commands (for access `w` or `a`).
    #[serde(default)]
    pub command_size: u16,
    /// `r` (data only), `w` (commands only) or `a` (both).
    #[serde(default = "read_access")]
    pub access: String,
    /// Its commands keep something moving: the command watchdog applies.
    #[serde(default)]
    pub moving: bool,
}

fn read_access() -> String {
    "r".into()
}

/// The restart backoff, seconds.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffParams {
    /// The first restart's delay.
    #[serde(default = "half")]
    pub initial: f64,
    /// The longest delay (it doubles after each failure up to this).
    #[serde(default = "crate::params::ten")]
    pub max: f64,
}

impl Default for BackoffParams {
    fn default() -> Self {
        BackoffParams {
            initial: half(),
            max: crate::params::ten(),
        }
    }
}

fn half() -> f64 {
    0.5
}
fn default_max_rate() -> u32 {
    2000
}

/// Parameters of the `program` driver.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramParams {
    /// The program and its arguments. A first element containing `/` is resolved against
    /// the configuration file's directory, which is also the program's working directory.
    pub command: Vec<String>,
    /// Its name in the log (default: the file name of the script or program).
    #[serde(default)]
    pub name: Option<String>,
    /// Environment variables added to the server's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The devices it serves.
    pub device: Vec<DeviceParams>,
    /// Seconds the program may take to answer a setup.
    #[serde(default = "crate::params::ten")]
    pub setup_timeout: f64,
    /// Delays between restarts.
    #[serde(default)]
    pub restart_backoff: BackoffParams,
    /// Most frames a second the program may send (bursts of one second's worth allowed);
    /// more is a flood and the program is restarted.
    #[serde(default = "default_max_rate")]
    pub max_rate: u32,
    /// The program's own settings, any table: sent to it as JSON in its hello.
    #[serde(default)]
    pub options: Option<serde_json::Value>,
}

fn seconds(what: &str, v: f64) -> Result<Duration, DriverError> {
    if v.is_finite() && v > 0.0 && v <= 1e6 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(DriverError::params(format!(
            "driver 'program': {what} must be a positive number of seconds"
        )))
    }
}

fn params_error(m: String) -> DriverError {
    DriverError::params(format!("driver 'program': {m}"))
}

/// What the actor needs to start the program, checked from the parameters.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// Its name in the log.
    pub name: String,
    /// The command line, the program resolved against the configuration's directory.
    pub argv: Vec<String>,
    /// Environment variables added to the server's.
    pub env: BTreeMap<String, String>,
    /// Its working directory: the configuration file's.
    pub cwd: PathBuf,
    /// Its devices, as its hello describes them.
    pub devices: Vec<DeviceInfo>,
    /// How long it may take to answer a setup.
    pub setup_timeout: Duration,
    /// The first restart's delay.
    pub backoff_initial: Duration,
    /// The longest restart delay.
    pub backoff_max: Duration,
    /// Most frames a second it may send.
    pub max_rate: u32,
    /// The longest frame it may send.
    pub max_frame: usize,
    /// Its options, as the JSON of its hello.
    pub options: String,
}

impl Plan {
    /// The plan for the parameters `p` of a driver serving `served`, with relative paths
    /// resolved against (and the program run in) `base`; with the devices' specs.
    pub fn new(
        p: ProgramParams,
        served: &[u8],
        base: &Path,
    ) -> Result<(Plan, Vec<DeviceSpec>), DriverError> {
        let Some(first) = p.command.first() else {
            return Err(params_error("command is empty".into()));
        };
        let mut argv = p.command.clone();
        if first.contains('/') {
            argv[0] = base.join(first).to_string_lossy().into_owned();
        }
        let name = p
            .name
            .clone()
            .unwrap_or_else(|| default_name(&p.command, base));
        let mut devices = Vec::new();
        let mut specs = Vec::new();
        for d in &p.device {
            let (info, spec) = device_entry(d, served).map_err(params_error)?;
            devices.push(info);
            specs.push(spec);
        }
        for c in served {
            if !devices.iter().any(|d| d.code == *c) {
                return Err(params_error(format!(
                    "device {} has no [[robot.driver.params.device]] entry",
                    code(*c)
                )));
            }
        }
        let largest = devices.iter().map(|d| usize::from(d.data_size)).max();
        // Room for the largest reading and its 10 header bytes, and for text frames.
        let max_frame = (largest.unwrap_or(0) + 16).clamp(8192, frame::MAX_FRAME);
        let plan = Plan {
            name,
            argv,
            env: p.env,
            cwd: base.to_path_buf(),
            devices,
            setup_timeout: seconds("setup_timeout", p.setup_timeout)?,
            backoff_initial: seconds("restart_backoff.initial", p.restart_backoff.initial)?,
            backoff_max: seconds("restart_backoff.max", p.restart_backoff.max)?,
            max_rate: p.max_rate.max(1),
            max_frame,
            options: p
                .options
                .as_ref()
                .map_or_else(|| "{}".to_string(), |v| v.to_string()),
        };
        Ok((plan, specs))
    }

    /// The device `c` of the program, if it is one.
    pub fn device(&self, c: u8) -> Option<&DeviceInfo> {
        self.devices.iter().find(|d| d.code == c)
    }
}

/// The program's name in the log when none is given: the file name (without extension) of
/// the first argument that is a file (the script an interpreter runs), else of the program.
fn default_name(command: &[String], base: &Path) -> String {
    let first = &command[0];
    let script = command[1..]
        .iter()
        .map(|a| base.join(a))
        .find(|path| path.is_file());
    let path = script.unwrap_or_else(|| PathBuf::from(first));
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| first.clone())
}

/// One `[[robot.driver.params.device]]` entry of a driver serving `served`, checked: what
/// the program is told of it, and what the registry allows of it.
fn device_entry(d: &DeviceParams, served: &[u8]) -> Result<(DeviceInfo, DeviceSpec), String> {
    let c = match d.code.as_bytes() {
        [c] if c.is_ascii_graphic() => *c,
        _ => return Err(format!("device '{}' is not a one-character code", d.code)),
    };
    if !served.contains(&c) {
        return Err(format!(
            "device '{}' is described but not in this driver's devices",
            d.code
        ));
    }
    let (readable, writable) = match d.access.as_str() {
        "r" => (true, false),
        "w" => (false, true),
        "a" => (true, true),
        other => {
            return Err(format!(
                "device '{}': access '{other}' is not r, w or a",
                d.code
            ))
        }
    };
    if readable && d.data_size == 0 {
        return Err(format!("device '{}': data_size must be 1 to 65535", d.code));
    }
    if writable && d.command_size == 0 {
        return Err(format!(
            "device '{}': access '{}' needs a command_size of 1 to 65535",
            d.code, d.access
        ));
    }
    if d.moving && !writable {
        return Err(format!("device '{}': moving needs access w or a", d.code));
    }
    let info = DeviceInfo {
        code: c,
        access: d.access.as_bytes()[0],
        data_size: if readable { d.data_size } else { 0 },
        command_size: if writable { d.command_size } else { 0 },
        moving: d.moving,
    };
    let spec = DeviceSpec {
        code: c,
        readable,
        command_size: writable.then_some(usize::from(d.command_size)),
        command_timeout: d.moving.then_some(DEFAULT_COMMAND_TIMEOUT),
    };
    Ok((info, spec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_kit::driver::DriverErrorKind;

    fn params(toml: &str) -> ProgramParams {
        config::Config::builder()
            .add_source(config::File::from_str(toml, config::FileFormat::Toml))
            .build()
            .unwrap()
            .try_deserialize()
            .unwrap()
    }

    const BASE: &str = "/etc/player";

    fn plan(toml: &str, served: &[u8]) -> Result<(Plan, Vec<DeviceSpec>), DriverError> {
        Plan::new(params(toml), served, Path::new(BASE))
    }

    #[test]
    fn a_relative_program_runs_from_the_configurations_directory_under_its_file_name() {
        let toml = "command = [\"./bin/obstacle.sh\", \"-v\"]\n\
                    [[device]]\ncode = \"o\"\ndata_size = 4";
        let (p, _) = plan(toml, b"o").unwrap();
        assert_eq!(p.argv, ["/etc/player/./bin/obstacle.sh", "-v"]);
        assert_eq!(p.cwd, Path::new(BASE));
        assert_eq!(p.name, "obstacle");
        // A program found on the PATH is left to it; a given name wins.
        let toml = "command = [\"python3\", \"/no/such/dir/odo.py\"]\nname = \"odometer\"\n\
                    [[device]]\ncode = \"o\"\ndata_size = 4";
        let (p, _) = plan(toml, b"o").unwrap();
        assert_eq!(
            (p.argv[0].as_str(), p.name.as_str()),
            ("python3", "odometer")
        );
    }

    #[test]
    fn a_script_run_by_an_interpreter_names_the_program() {
        let dir = std::env::temp_dir().join(format!("plan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("stamp.py"), "").unwrap();
        let toml = "command = [\"python3\", \"stamp.py\"]\n[[device]]\ncode = \"n\"\ndata_size = 8";
        let (p, _) = Plan::new(params(toml), b"n", &dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(p.name, "stamp");
    }

    #[test]
    fn each_device_declares_what_its_access_allows() {
        let toml = "command = [\"prog\"]\n\
                    [[device]]\ncode = \"r\"\ndata_size = 100\n\
                    [[device]]\ncode = \"w\"\naccess = \"w\"\ncommand_size = 4\ndata_size = 9\n\
                    [[device]]\ncode = \"a\"\naccess = \"a\"\ndata_size = 20000\ncommand_size = 2\nmoving = true";
        let (p, specs) = plan(toml, b"rwa").unwrap();
        assert_eq!(specs[0], DeviceSpec::read_only(b'r'));
        let w = DeviceSpec {
            readable: false,
            ..DeviceSpec::read_write(b'w', 4)
        };
        assert_eq!(specs[1], w);
        assert_eq!(specs[2], DeviceSpec::moving(b'a', 2));
        // A write-only device is told no data size; the frames leave room for the largest
        // reading and its header.
        assert_eq!(p.device(b'w').unwrap().data_size, 0);
        assert_eq!(p.max_frame, 20016);
        assert_eq!(p.device(b'x'), None);
    }

    #[test]
    fn defaults_are_ten_seconds_to_set_up_and_a_backoff_from_half_a_second() {
        let (p, _) = plan(
            "command = [\"prog\"]\n[[device]]\ncode = \"o\"\ndata_size = 4",
            b"o",
        )
        .unwrap();
        assert_eq!(p.setup_timeout, Duration::from_secs(10));
        assert_eq!(p.backoff_initial, Duration::from_millis(500));
        assert_eq!(p.backoff_max, Duration::from_secs(10));
        assert_eq!((p.max_rate, p.max_frame), (2000, 8192));
        assert_eq!(p.options, "{}");
    }

    #[test]
    fn bad_parameters_are_refused_naming_what_is_wrong() {
        let dev = "[[device]]\ncode = \"o\"\ndata_size = 4";
        for (toml, served, says) in [
            (
                format!("command = []\n{dev}"),
                &b"o"[..],
                "command is empty",
            ),
            (
                format!("command = [\"p\"]\n{dev}"),
                b"oq",
                "device 'q' has no",
            ),
            (
                "command = [\"p\"]\n[[device]]\ncode = \"oo\"".into(),
                b"o",
                "not a one-character code",
            ),
            (
                format!("command = [\"p\"]\n{dev}"),
                b"",
                "not in this driver's devices",
            ),
            (
                "command = [\"p\"]\n[[device]]\ncode = \"o\"\naccess = \"x\"".into(),
                b"o",
                "access 'x' is not r, w or a",
            ),
            (
                "command = [\"p\"]\n[[device]]\ncode = \"o\"".into(),
                b"o",
                "data_size must be",
            ),
            (
                "command = [\"p\"]\n[[device]]\ncode = \"o\"\naccess = \"w\"".into(),
                b"o",
                "needs a command_size",
            ),
            (
                format!("command = [\"p\"]\n{dev}\nmoving = true"),
                b"o",
                "moving needs access",
            ),
            (
                format!("command = [\"p\"]\nsetup_timeout = 0\n{dev}"),
                b"o",
                "setup_timeout must be a positive",
            ),
        ] {
            let e = plan(&toml, served).unwrap_err();
            assert_eq!(e.kind, DriverErrorKind::Params, "{toml}: {e}");
            assert!(e.text.starts_with("driver 'program': "), "{toml}: {e}");
            assert!(e.text.contains(says), "{toml}: {e}");
        }
    }
}
