//! The parameters a web client sees (`getParameters`, `parameterValues`) and the few it
//! may set (`setParameters`, with write access only). Pure: values in, JSON values out.
//!
//! Read-only: `robot`, `devices`, each device's `<code>.driver`, the endpoint's
//! `web.stall_timeout`, `web.max_clients` and `web.max_command_hold`.
//!
//! Writable by a client with write access:
//! - `<code>.command_timeout` (seconds, [`MIN_COMMAND_TIMEOUT`] to [`MAX_COMMAND_TIMEOUT`];
//!   0 when unwatched) of each device that takes commands: the registry's command
//!   watchdog, so the change holds for every front end (TCP clients, Zenoh, ROS 2, every
//!   web client) until the server restarts. Turning the watchdog off (0) is left to the
//!   configuration.
//! - `web.max_rate_hz`: the most messages per second this connection gets on each device
//!   channel (0: every reading, the default). Readings between are skipped, not queued;
//!   for a viewer on a slow link. It is this connection's own: each connection has its
//!   own value.

use player_kit::driver::DeviceSpec;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// The shortest command timeout a client may set, in seconds.
pub const MIN_COMMAND_TIMEOUT: f64 = 0.1;
/// The longest command timeout a client may set, in seconds.
pub const MAX_COMMAND_TIMEOUT: f64 = 10.0;
/// The highest `web.max_rate_hz`.
pub const MAX_RATE_HZ: f64 = 1000.0;
/// The name of this connection's rate cap.
pub const MAX_RATE: &str = "web.max_rate_hz";
/// Most parameter names one client may subscribe to.
pub const MAX_PARAMETER_SUBSCRIPTIONS: usize = 256;

/// A change a client asked for, checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    /// A device's command watchdog timeout.
    CommandTimeout {
        /// The device code.
        device: u8,
        /// The new timeout.
        timeout: Duration,
    },
    /// This connection's most messages per second per channel (0: no cap).
    MaxRate(f64),
}

/// Why a parameter cannot be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// No parameter of that name.
    #[error("{0}: no such parameter")]
    Unknown(String),
    /// The parameter is read-only.
    #[error("{0} is read-only")]
    ReadOnly(String),
    /// The value is not a number in range.
    #[error("{name}: {why}")]
    Value {
        /// The parameter.
        name: String,
        /// What is wrong with the value.
        why: String,
    },
}

/// What the values are made of: the robot's configuration and the state in force.
pub struct Snapshot<'a> {
    /// The robot's name.
    pub robot: &'a str,
    /// Its devices and their drivers.
    pub specs: &'a [(DeviceSpec, String)],
    /// The registry's command timeouts, per device that takes commands.
    pub timeouts: &'a HashMap<u8, Option<Duration>>,
    /// The endpoint's stall timeout.
    pub stall_timeout: Duration,
    /// The endpoint's most clients.
    pub max_clients: usize,
    /// The longest a web writer's own hold may be.
    pub max_command_hold: Duration,
    /// This connection's rate cap (0: none).
    pub max_rate_hz: f64,
}

/// A name shown to a client in a message: at most 40 characters.
fn shown(name: &str) -> String {
    name.chars().take(40).collect()
}

/// Every parameter and its value, in a stable order.
pub fn values(s: &Snapshot) -> Vec<(String, Value)> {
    let mut v = vec![
        ("robot".to_string(), json!(s.robot)),
        (
            "devices".to_string(),
            json!(s
                .specs
                .iter()
                .map(|(d, _)| char::from(d.code).to_string())
                .collect::<Vec<String>>()),
        ),
    ];
    for (spec, driver) in s.specs {
        let c = char::from(spec.code);
        v.push((format!("{c}.driver"), json!(driver)));
        // The registry's value once known; the configured one until then.
        let t = match s.timeouts.get(&spec.code) {
            Some(t) => *t,
            None => spec.command_timeout,
        };
        v.push((
            format!("{c}.command_timeout"),
            json!(t.map_or(0.0, |t| t.as_secs_f64())),
        ));
    }
    v.push((
        "web.stall_timeout".into(),
        json!(s.stall_timeout.as_secs_f64()),
    ));
    v.push(("web.max_clients".into(), json!(s.max_clients)));
    v.push((
        "web.max_command_hold".into(),
        json!(s.max_command_hold.as_secs_f64()),
    ));
    v.push((MAX_RATE.into(), json!(s.max_rate_hz)));
    v
}

/// Checks a `setParameters` entry: `name` must be writable and `value` a number in its
/// range. `specs` are the robot's devices (a command timeout is only for devices that
/// take commands).
pub fn parse_setting(
    name: &str,
    value: &Value,
    specs: &[(DeviceSpec, String)],
) -> Result<Setting, ParamError> {
    let number = |lo: f64, hi: f64, unit: &str| -> Result<f64, ParamError> {
        match value.as_f64() {
            Some(x) if x.is_finite() && (lo..=hi).contains(&x) => Ok(x),
            _ => Err(ParamError::Value {
                name: shown(name),
                why: format!(
                    "{} is not a number from {lo} to {hi} {unit}",
                    shown(&value.to_string())
                ),
            }),
        }
    };
    if name == MAX_RATE {
        return number(0.0, MAX_RATE_HZ, "Hz").map(Setting::MaxRate);
    }
    if let Some(code) = name.strip_suffix(".command_timeout") {
        let spec = match code.as_bytes() {
            [c] => specs.iter().find(|(s, _)| s.code == *c).map(|(s, _)| s),
            _ => None,
        };
        let Some(spec) = spec else {
            return Err(ParamError::Unknown(shown(name)));
        };
        if spec.command_size.is_none() {
            return Err(ParamError::ReadOnly(shown(name)));
        }
        let secs = number(MIN_COMMAND_TIMEOUT, MAX_COMMAND_TIMEOUT, "s")?;
        return Ok(Setting::CommandTimeout {
            device: spec.code,
            timeout: Duration::from_secs_f64(secs),
        });
    }
    let known = name == "robot"
        || name == "devices"
        || name.starts_with("web.")
        || name
            .strip_suffix(".driver")
            .is_some_and(|c| specs.iter().any(|(s, _)| c.as_bytes() == [s.code]));
    if known {
        Err(ParamError::ReadOnly(shown(name)))
    } else {
        Err(ParamError::Unknown(shown(name)))
    }
}

/// The subscribed parameters whose value differs from the one last sent (`sent`), which
/// is brought up to date: what a `parameterValues` update carries.
pub fn changed(
    now: &[(String, Value)],
    subscribed: &HashSet<String>,
    sent: &mut HashMap<String, Value>,
) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (name, value) in now {
        if !subscribed.contains(name) {
            continue;
        }
        if sent.get(name) != Some(value) {
            sent.insert(name.clone(), value.clone());
            out.push((name.clone(), value.clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs() -> Vec<(DeviceSpec, String)> {
        let mut p = DeviceSpec::read_write(b'p', 4);
        p.command_timeout = Some(Duration::from_millis(500));
        vec![
            (p, "sim".into()),
            (DeviceSpec::read_only(b'l'), "sim".into()),
        ]
    }

    #[test]
    fn a_command_timeout_is_settable_in_range_on_a_device_that_takes_commands() {
        let s = specs();
        assert_eq!(
            parse_setting("p.command_timeout", &json!(2), &s),
            Ok(Setting::CommandTimeout {
                device: b'p',
                timeout: Duration::from_secs(2)
            })
        );
        for bad in [json!(0), json!(0.05), json!(11), json!("2"), json!(null)] {
            assert!(
                matches!(
                    parse_setting("p.command_timeout", &bad, &s),
                    Err(ParamError::Value { .. })
                ),
                "{bad}"
            );
        }
        assert_eq!(
            parse_setting("l.command_timeout", &json!(1), &s),
            Err(ParamError::ReadOnly("l.command_timeout".into()))
        );
        assert_eq!(
            parse_setting("q.command_timeout", &json!(1), &s),
            Err(ParamError::Unknown("q.command_timeout".into()))
        );
    }

    #[test]
    fn the_rate_cap_is_settable_and_the_rest_is_read_only_or_unknown() {
        let s = specs();
        assert_eq!(
            parse_setting(MAX_RATE, &json!(2.5), &s),
            Ok(Setting::MaxRate(2.5))
        );
        assert!(parse_setting(MAX_RATE, &json!(-1), &s).is_err());
        assert!(parse_setting(MAX_RATE, &json!(1e9), &s).is_err());
        for ro in ["robot", "devices", "p.driver", "web.stall_timeout"] {
            assert_eq!(
                parse_setting(ro, &json!(1), &s),
                Err(ParamError::ReadOnly(ro.into()))
            );
        }
        assert_eq!(
            parse_setting("x.driver", &json!(1), &s),
            Err(ParamError::Unknown("x.driver".into()))
        );
        let long = "n".repeat(500);
        let e = parse_setting(&long, &json!(1), &s).unwrap_err().to_string();
        assert!(e.len() < 80, "names are cut in messages: {e}");
    }

    #[test]
    fn values_show_the_registrys_timeout_and_the_configured_one_until_it_is_known() {
        let s = specs();
        let mut timeouts = HashMap::new();
        let snap = |t: &HashMap<u8, Option<Duration>>| {
            values(&Snapshot {
                robot: "r",
                specs: &s,
                timeouts: t,
                stall_timeout: Duration::from_secs(60),
                max_clients: 4,
                max_command_hold: Duration::from_millis(1200),
                max_rate_hz: 0.0,
            })
        };
        let get =
            |v: &[(String, Value)], n: &str| v.iter().find(|(k, _)| k == n).unwrap().1.clone();
        assert_eq!(get(&snap(&timeouts), "p.command_timeout"), json!(0.5));
        assert_eq!(get(&snap(&timeouts), "l.command_timeout"), json!(0.0));
        timeouts.insert(b'p', Some(Duration::from_secs(2)));
        assert_eq!(get(&snap(&timeouts), "p.command_timeout"), json!(2.0));
        assert_eq!(get(&snap(&timeouts), MAX_RATE), json!(0.0));
        assert_eq!(get(&snap(&timeouts), "devices"), json!(["p", "l"]));
    }

    #[test]
    fn updates_carry_only_subscribed_values_that_changed() {
        let subscribed: HashSet<String> = ["a".to_string(), "b".to_string()].into();
        let mut sent = HashMap::new();
        let now = vec![
            ("a".to_string(), json!(1)),
            ("b".to_string(), json!(2)),
            ("c".to_string(), json!(3)),
        ];
        assert_eq!(changed(&now, &subscribed, &mut sent).len(), 2, "first: all");
        assert!(changed(&now, &subscribed, &mut sent).is_empty());
        let now = vec![("a".to_string(), json!(5)), ("c".to_string(), json!(9))];
        assert_eq!(
            changed(&now, &subscribed, &mut sent),
            vec![("a".to_string(), json!(5))]
        );
    }
}
