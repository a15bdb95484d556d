//! The `passthrough` driver's parameters, checked and made into the mapping it serves by:
//! each local device, the remote device behind it and what the local device declares
//! (data size, command size, moving), and the remote server's address, key and timing.
//! Pure.

use player_kit::driver::{DeviceSpec, DriverError};
use player_kit::log::escape;
use player_proto::data::{self as wire, PositionCommand, VISION_MAX};
use player_proto::{device, message};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::time::Duration;

/// Parameters of the `passthrough` driver (see the module documentation).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PassthroughParams {
    /// The remote server's host.
    #[serde(default = "crate::params::localhost")]
    pub host: String,
    /// The remote server's port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// The remote code of the one local device.
    #[serde(default)]
    pub device: Option<String>,
    /// The remote codes of the local devices, in the order of `devices`.
    #[serde(default)]
    pub remote: Option<Vec<String>>,
    /// Hz asked of the remote.
    #[serde(default = "default_frequency")]
    pub frequency: u16,
    /// The remote's shared access key.
    #[serde(default)]
    pub key: Option<String>,
    /// Whether to use the remote's extensions.
    #[serde(default = "crate::params::yes")]
    pub extensions: bool,
    /// The largest reading relayed, in bytes.
    #[serde(default)]
    pub data_size: Option<usize>,
    /// The size of the devices' commands (0: read-only).
    #[serde(default)]
    pub command_size: Option<usize>,
    /// Whether the devices' commands keep something moving (command watchdog).
    #[serde(default)]
    pub moving: Option<bool>,
    /// Seconds the first connection may take.
    #[serde(default = "crate::params::five")]
    pub connect_timeout: f64,
    /// Seconds without a byte from the remote before the link is taken for lost.
    #[serde(default = "crate::params::three")]
    pub silence: f64,
}

fn default_port() -> u16 {
    6665
}
fn default_frequency() -> u16 {
    50
}

/// The largest command a passthrough device may declare (the server's bound on a client
/// message's payload).
const MAX_COMMAND: usize = 4096;

/// One local device and the remote device behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mapped {
    /// The local code.
    pub local: u8,
    /// The remote code.
    pub remote: u8,
    /// The largest reading relayed.
    pub data_size: usize,
    /// The size of its commands (none: read-only).
    pub command_size: Option<usize>,
    /// Its commands keep something moving (the command watchdog applies).
    pub moving: bool,
}

impl Mapped {
    /// What the local device allows.
    pub fn spec(&self) -> DeviceSpec {
        match (self.command_size, self.moving) {
            (Some(n), true) => DeviceSpec::moving(self.local, n),
            (Some(n), false) => DeviceSpec::read_write(self.local, n),
            (None, _) => DeviceSpec::read_only(self.local),
        }
    }
}

/// What a standard device declares, by its code: data size, command size, moving.
fn standard(remote: u8) -> (usize, Option<usize>, bool) {
    match remote {
        device::POSITION => (wire::Position::SIZE, Some(PositionCommand::SIZE), true),
        device::GRIPPER => (wire::Gripper::SIZE, Some(wire::GripperCommand::SIZE), false),
        device::PTZ => (wire::Ptz::SIZE, Some(wire::Ptz::SIZE), false),
        device::SONAR => (wire::Sonar::SIZE, None, false),
        device::LASER => (wire::Laser::SIZE, None, false),
        device::MISC => (wire::Misc::SIZE, None, false),
        device::VISION => (VISION_MAX, None, false),
        _ => (usize::from(u16::MAX), None, false),
    }
}

/// The device code `s` of parameter `what`: one printable character, not the server's `y`
/// nor a reply's `r`.
fn one_code(what: &str, s: &str) -> Result<u8, DriverError> {
    match s.as_bytes() {
        [c] if c.is_ascii_graphic() && *c != device::SERVER && *c != message::REPLY => Ok(*c),
        _ => Err(DriverError::params(format!(
            "passthrough parameter {what}: '{}' is not a one-character device code (nor 'y' or 'r')",
            escape(s.as_bytes(), 16)
        ))),
    }
}

/// Everything a link task needs to know, fixed for the driver's life.
#[derive(Debug)]
pub(super) struct LinkConfig {
    /// The remote server's host.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// Its shared access key, if it has one.
    pub key: Option<Vec<u8>>,
    /// Whether to use its extensions.
    pub extensions: bool,
    /// Hz asked of it.
    pub frequency: u16,
    /// How long the first connection may take.
    pub connect_timeout: Duration,
    /// How long without a byte from it before the link is taken for lost.
    pub silence: Duration,
    /// The local devices and the remote ones behind them.
    pub devices: Vec<Mapped>,
}

impl LinkConfig {
    /// The mapping of the local devices `locals` by the parameters `p`; an error names the
    /// parameter that is wrong.
    pub fn from_params(p: PassthroughParams, locals: &[u8]) -> Result<LinkConfig, DriverError> {
        let err = |s: String| Err(DriverError::params(format!("passthrough: {s}")));
        if locals.is_empty() {
            return err("no device to serve".into());
        }
        let remotes: Vec<u8> = match (&p.device, &p.remote) {
            (Some(_), Some(_)) => return err("give either `device` or `remote`, not both".into()),
            (Some(d), None) if locals.len() == 1 => vec![one_code("device", d)?],
            (Some(_), None) => {
                return err(
                    "`device` names one remote device; use `remote = [...]` for several".into(),
                )
            }
            (None, Some(r)) if r.len() == locals.len() => r
                .iter()
                .map(|c| one_code("remote", c))
                .collect::<Result<_, _>>()?,
            (None, Some(r)) => {
                return err(format!(
                    "`remote` has {} codes for {} devices",
                    r.len(),
                    locals.len()
                ))
            }
            (None, None) => locals.to_vec(),
        };
        let distinct: BTreeSet<u8> = remotes.iter().copied().collect();
        if distinct.len() != remotes.len() {
            return err("a remote device is named twice".into());
        }
        if !(1..=1000).contains(&p.frequency) {
            return err(format!("frequency = {}: must be 1 to 1000 Hz", p.frequency));
        }
        for (name, v, lo) in [
            ("connect_timeout", p.connect_timeout, 0.0),
            ("silence", p.silence, 0.2),
        ] {
            if !(v.is_finite() && v > lo && v <= 600.0) {
                return err(format!(
                    "{name} = {v}: must be more than {lo} and at most 600 s"
                ));
            }
        }
        if let Some(n) = p.data_size {
            if !(1..=usize::from(u16::MAX)).contains(&n) {
                return err(format!("data_size = {n}: must be 1 to 65535"));
            }
        }
        if let Some(n) = p.command_size {
            if n > MAX_COMMAND {
                return err(format!("command_size = {n}: must be at most {MAX_COMMAND}"));
            }
        }
        let key = p.key.map(String::into_bytes);
        if let Some(k) = &key {
            if k.len() > player_proto::ext::MAX_KEY {
                return err("key: at most 64 bytes".into());
            }
        }
        let devices = locals
            .iter()
            .zip(&remotes)
            .map(|(&local, &remote)| {
                let (data, command, moving) = standard(remote);
                let command_size = match p.command_size {
                    Some(0) => None,
                    Some(n) => Some(n),
                    None => command,
                };
                Mapped {
                    local,
                    remote,
                    data_size: p.data_size.unwrap_or(data),
                    moving: command_size.is_some() && p.moving.unwrap_or(moving),
                    command_size,
                }
            })
            .collect();
        Ok(LinkConfig {
            host: p.host,
            port: p.port,
            key,
            extensions: p.extensions,
            frequency: p.frequency,
            connect_timeout: Duration::from_secs_f64(p.connect_timeout),
            silence: Duration::from_secs_f64(p.silence),
            devices,
        })
    }

    /// The device served as local `local`.
    pub fn by_local(&self, local: u8) -> Option<&Mapped> {
        self.devices.iter().find(|m| m.local == local)
    }

    /// The device behind remote `remote`.
    pub fn by_remote(&self, remote: u8) -> Option<&Mapped> {
        self.devices.iter().find(|m| m.remote == remote)
    }

    /// `host:port`.
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_kit::driver::DriverErrorKind;

    fn params(toml: &str) -> PassthroughParams {
        config::Config::builder()
            .add_source(config::File::from_str(toml, config::FileFormat::Toml))
            .build()
            .unwrap()
            .try_deserialize()
            .unwrap()
    }

    #[test]
    fn devices_take_the_remote_codes_defaults() {
        let c = LinkConfig::from_params(params("remote = [\"p\", \"l\"]"), b"Pq").unwrap();
        assert_eq!(c.devices[0].spec(), DeviceSpec::moving(b'P', 4));
        assert_eq!(c.devices[1].spec(), DeviceSpec::read_only(b'q'));
        assert_eq!(c.devices[1].data_size, 722);
        let c = LinkConfig::from_params(params("device = \"g\""), b"G").unwrap();
        assert_eq!(c.devices[0].spec(), DeviceSpec::read_write(b'G', 2));
        let c = LinkConfig::from_params(params(""), b"s").unwrap();
        assert_eq!((c.devices[0].remote, c.devices[0].data_size), (b's', 32));
        let c = LinkConfig::from_params(
            params("device = \"k\"\ncommand_size = 8\nmoving = true\ndata_size = 100"),
            b"k",
        )
        .unwrap();
        assert_eq!(c.devices[0].spec(), DeviceSpec::moving(b'k', 8));
        assert_eq!(c.devices[0].data_size, 100);
        let c = LinkConfig::from_params(params("command_size = 0"), b"p").unwrap();
        assert_eq!(c.devices[0].spec(), DeviceSpec::read_only(b'p'));
    }

    #[test]
    fn bad_parameters_are_refused_with_their_name() {
        for (toml, locals, says) in [
            ("device = \"p\"\nremote = [\"p\"]", &b"p"[..], "not both"),
            ("device = \"p\"", b"ps", "remote = [...]"),
            ("remote = [\"p\"]", b"ps", "1 codes for 2"),
            ("remote = [\"p\", \"p\"]", b"ps", "twice"),
            ("device = \"pp\"", b"p", "one-character"),
            ("device = \"y\"", b"p", "one-character"),
            ("frequency = 0", b"p", "frequency"),
            ("silence = 0", b"p", "silence"),
            ("data_size = 70000", b"p", "data_size"),
            ("command_size = 5000", b"p", "command_size"),
        ] {
            let e = LinkConfig::from_params(params(toml), locals).unwrap_err();
            assert_eq!(e.kind, DriverErrorKind::Params, "{toml}: {e}");
            assert!(e.text.contains(says), "{toml}: {e}");
        }
    }
}
