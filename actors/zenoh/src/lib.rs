//! The Zenoh bridge: every robot of the server on a Zenoh network, next to its TCP port.
//!
//! A front end like the web viewer, not a driver: one Zenoh session per server process
//! (peer mode by default, listening on `tcp/[::]:7447`, or client mode towards a router),
//! and per robot a [`robot::ZenohRobot`] actor that is a session of the robot's registry
//! like a TCP client's. Off unless the configuration has `[zenoh] enabled = true` or the
//! command line `--zenoh`.
//!
//! Key layout (the robot's name from the configuration, the device's code letter):
//!
//! | Key | What |
//! |---|---|
//! | `player/<robot>/<code>` | each reading: payload = the 0.7.4a `<data>` bytes (Table 7), attachment = the driver's timestamp ([`encode_timestamp`]) |
//! | `player/<robot>/<code>/cmd` | commands in: payload = the 0.7.4a command bytes (4 for `p`) |
//! | `player/<robot>/@estop` | emergency stop in: one byte, 1 latches, 0 releases |
//! | `player/<robot>/@alive` | liveliness token, present while the robot is served |
//! | `player/<robot>/@devices` | queryable: the device list as JSON ([`devices_json`]) |
//!
//! A device is read from the registry only while some Zenoh subscriber matches its key
//! (the publisher's matching listener), so an unwatched robot costs nothing. Readings are
//! published as they arrive, on the thread that has them (the registry's: no hand-off to
//! the bridge's actor, [`player_core::frontend::bridge::Direct`]), with congestion control
//! "drop" that never waits for a free batch: a slow Zenoh network loses
//! readings, never delays a TCP client or the drivers.
//!
//! Commands go through the registry's guard like every front end's (write access,
//! e-stop, command watchdog). Whether Zenoh may command at all is [`ZenohSettings::write`]
//! (default: no); with `[access] key` set, a command (and an e-stop release) must carry the
//! key as its attachment. The bridge takes write access to a device when its first command
//! arrives and gives it back [`robot::HOLD`] after the last one (the registry then stops the
//! device, as when a TCP writer leaves); the watchdog stops a moving device much sooner.
//!
//! Zenoh runs its own threads; its blocking calls (opening, declaring, closing the session)
//! are made on a plain thread, never on an actix arbiter (Zenoh refuses to block inside a
//! single-threaded tokio runtime). The robots' bridge actors share one arbiter of their own.
//!
//! A front end of the server ([`player_core::frontend`]): the `[zenoh]` section
//! ([`ZenohSettings`]) and the `--zenoh` flag ([`SYNTAX`]) are this crate's; [`start`]
//! returns the [`ZenohBridge`] the server attaches.
#![deny(missing_docs)]

pub mod robot;

use actix::prelude::*;
use futures::future::LocalBoxFuture;
use player_core::access::{AccessSettings, Policy};
use player_core::frontend::bridge::{set_up, Attach, BridgeSession, Mailbox};
use player_core::frontend::{FrontEnd, FrontEndContext, FrontEndKind, SessionIds};
use player_core::registry::Registry;
use player_core::settings::{FlagSpec, FrontEndSyntax, RobotSettings, Settings, SettingsError};
use player_kit::driver::Timestamp;
use player_proto::device;
use player_proto::ext::DeviceEntry;
use robot::{Callbacks, InFlight, RecheckKeys, RobotOptions, ZenohRobot};
use serde::Deserialize;
use slog::{info, Logger};
use std::any::Any;
use std::sync::Arc;
use zenoh::Wait;

/// The first chunk of every key the bridge uses.
pub const PREFIX: &str = "player";

/// Bytes of the timestamp attachment of a reading.
pub const TIMESTAMP_LEN: usize = 8;

/// The `[zenoh]` section of the configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ZenohSettings {
    /// Whether the bridge runs (`--zenoh` sets it).
    pub enabled: bool,
    /// `"peer"` (default: other peers and clients connect to this one, it connects to
    /// `connect`) or `"client"` (it only connects, to a router or peer in `connect`).
    pub mode: String,
    /// Endpoints to listen on in peer mode (default `["tcp/[::]:7447"]`).
    pub listen: Vec<String>,
    /// Endpoints to connect to: routers (`zenohd`) or other peers, e.g.
    /// `["tcp/192.168.1.10:7447"]`. Retried in the background until they answer.
    pub connect: Vec<String>,
    /// Whether commands (and e-stop releases) from Zenoh are obeyed (default false:
    /// Zenoh reads only; latching the e-stop is always allowed).
    pub write: bool,
    /// The robots bridged, by name (empty: every robot).
    pub robots: Vec<String>,
    /// Multicast scouting (finding peers on the LAN without `connect`; default off).
    pub scouting: bool,
    /// Accept that readings reach every Zenoh peer although `[access]` restricts who may
    /// read (`read_allow`, `keyless = "refuse"`): Zenoh samples carry no address the
    /// bridge could check. Without it such a configuration is refused.
    pub public: bool,
}

impl Default for ZenohSettings {
    fn default() -> Self {
        ZenohSettings {
            enabled: false,
            mode: "peer".into(),
            listen: vec!["tcp/[::]:7447".into()],
            connect: Vec::new(),
            write: false,
            robots: Vec::new(),
            scouting: false,
            public: false,
        }
    }
}

/// The bridge's section and flag: `[zenoh]`, `--zenoh` (turns it on).
pub const SYNTAX: FrontEndSyntax = FrontEndSyntax {
    sections: &["zenoh"],
    robot_keys: &[],
    flags: &[FlagSpec {
        flag: "--zenoh",
        takes_value: false,
    }],
};

/// The Zenoh bridge as a front end of the server: on with `[zenoh] enabled` or `--zenoh`.
pub struct Zenoh;

impl FrontEndKind for Zenoh {
    const NAME: &'static str = "zenoh";
    const SYNTAX: FrontEndSyntax = SYNTAX;
    type Settings = ZenohSettings;
    type Running = ZenohBridge;
    type Error = ZenohError;

    fn settings(core: &Settings) -> Result<ZenohSettings, SettingsError> {
        ZenohSettings::from_settings(core)
    }

    /// `--zenoh`: on.
    fn apply_flag(
        settings: &mut ZenohSettings,
        _flag: &str,
        _value: Option<&str>,
    ) -> Result<(), SettingsError> {
        settings.enabled = true;
        Ok(())
    }

    fn check(
        settings: &ZenohSettings,
        robots: &[RobotSettings],
        access: &AccessSettings,
        origin: &str,
    ) -> Result<(), SettingsError> {
        settings.check(robots, access, origin)
    }

    fn enabled(settings: &ZenohSettings) -> bool {
        settings.enabled
    }

    fn start<'a>(
        settings: &'a ZenohSettings,
        ctx: &'a FrontEndContext,
    ) -> LocalBoxFuture<'a, Result<ZenohBridge, ZenohError>> {
        Box::pin(start(settings, ctx))
    }

    fn describe(settings: &ZenohSettings, _base_dir: &std::path::Path) -> String {
        if !settings.enabled {
            return "zenoh bridge: off".into();
        }
        format!(
            "zenoh bridge: {} mode, listen {:?}, connect {:?}, commands {}",
            settings.mode,
            settings.listen,
            settings.connect,
            if settings.write { "obeyed" } else { "ignored" }
        )
    }
}

/// Why the bridge could not start.
#[derive(Debug, thiserror::Error)]
pub enum ZenohError {
    /// A value of the section is not a valid Zenoh configuration.
    #[error("zenoh: {key} = {value}: {why}")]
    Config {
        /// The Zenoh configuration key.
        key: String,
        /// The value given.
        value: String,
        /// What Zenoh said.
        why: String,
    },
    /// The Zenoh session cannot be opened.
    #[error("zenoh: cannot open the session: {0}")]
    Open(#[source] zenoh::Error),
    /// A robot's keys cannot be declared.
    #[error("zenoh: robot '{robot}': {source}")]
    Declare {
        /// The robot.
        robot: String,
        /// What Zenoh said.
        source: zenoh::Error,
    },
    /// The thread that opens the session failed.
    #[error("zenoh: the setup thread failed")]
    Setup,
}

/// Whether `name` can be a chunk of a Zenoh key (letters, digits, `_`, `-`, `.`).
pub fn valid_robot_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl ZenohSettings {
    /// Whether robot `name` is bridged.
    pub fn serves(&self, name: &str) -> bool {
        self.robots.is_empty() || self.robots.iter().any(|r| r == name)
    }

    /// The `[zenoh]` section of settings read with [`SYNTAX`] (the defaults when there is
    /// none), checked against their robots and access policy; errors name the key.
    pub fn from_settings(settings: &Settings) -> Result<Self, SettingsError> {
        let s: ZenohSettings = settings.section("zenoh")?;
        s.check(&settings.robot, &settings.access, &settings.origin)?;
        Ok(s)
    }

    /// Checks the section against the robots and the access policy; errors name the key.
    /// Call it again after the flags (`--zenoh`, `-stage`).
    pub fn check(
        &self,
        robots: &[RobotSettings],
        access: &AccessSettings,
        origin: &str,
    ) -> Result<(), SettingsError> {
        self.problem(robots, access)
            .map_err(|(key, why)| SettingsError::value(origin, &key, why))
    }

    /// What is wrong, if anything: the key and why.
    fn problem(
        &self,
        robots: &[RobotSettings],
        access: &AccessSettings,
    ) -> Result<(), (String, String)> {
        let bad = |key: &str, why: String| Err((key.to_string(), why));
        if !matches!(self.mode.as_str(), "peer" | "client") {
            return bad(
                "zenoh.mode",
                format!("'{}' is neither \"peer\" nor \"client\"", self.mode),
            );
        }
        for r in &self.robots {
            if !robots.iter().any(|x| &x.name == r) {
                return bad("zenoh.robots", format!("no robot named '{r}'"));
            }
        }
        if !self.enabled {
            return Ok(());
        }
        if self.mode == "client" && self.connect.is_empty() && !self.scouting {
            return bad(
                "zenoh.connect",
                "mode \"client\" needs zenoh.connect (a router's endpoint, e.g. \
                 [\"tcp/10.0.0.1:7447\"]) or zenoh.scouting = true"
                    .into(),
            );
        }
        let mut names = std::collections::HashSet::new();
        for r in robots.iter().filter(|r| self.serves(&r.name)) {
            if !valid_robot_name(&r.name) {
                return bad(
                    "robot.name",
                    format!(
                        "robot name '{}' cannot be a Zenoh key chunk (use letters, digits, _ - .)",
                        r.name
                    ),
                );
            }
            if !names.insert(r.name.as_str()) {
                return bad(
                    "robot.name",
                    format!(
                        "two robots are named '{}'; their Zenoh keys would collide",
                        r.name
                    ),
                );
            }
        }
        if self.write && !access.write_allow.is_empty() && access.key.is_empty() {
            return bad(
                "zenoh.write",
                "zenoh.write = true cannot honour access.write_allow (Zenoh samples carry \
                 no client address): set access.key, which Zenoh commands must then carry as \
                 their attachment, or leave write_allow empty"
                    .into(),
            );
        }
        let restricted =
            !access.read_allow.is_empty() || (!access.key.is_empty() && access.keyless == "refuse");
        if restricted && !self.public {
            return bad(
                "zenoh.public",
                "[access] restricts who may read (read_allow or keyless = \
                 \"refuse\"), but Zenoh readings reach every Zenoh peer; restrict zenoh.listen \
                 to a trusted interface and set zenoh.public = true to accept that"
                    .into(),
            );
        }
        match self.zenoh_config() {
            Ok(_) => Ok(()),
            Err(e) => bad("zenoh", e.to_string()),
        }
    }

    /// The Zenoh configuration: mode, endpoints, scouting.
    pub fn zenoh_config(&self) -> Result<zenoh::Config, ZenohError> {
        let mut c = zenoh::Config::default();
        let json = |v: &[String]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
        let set = |c: &mut zenoh::Config, key: &str, value: &str| {
            c.insert_json5(key, value).map_err(|e| ZenohError::Config {
                key: key.to_string(),
                value: value.to_string(),
                why: e.to_string(),
            })
        };
        set(&mut c, "mode", &format!("\"{}\"", self.mode))?;
        if self.mode == "peer" {
            set(&mut c, "listen/endpoints", &json(&self.listen))?;
        }
        set(&mut c, "connect/endpoints", &json(&self.connect))?;
        // A robot serves its TCP clients whether or not the router is up: connect in the
        // background, retrying, never fail the start for it.
        set(&mut c, "connect/timeout_ms", "0")?;
        set(&mut c, "connect/exit_on_failure", "false")?;
        // Readings are put on the registry's thread (robot::Publishers): a put must never
        // wait for a free batch there, or the TCP clients and the drivers would wait with
        // it. A congested link drops at once; a queue of 16 batches (Zenoh's most; lazily
        // allocated) absorbs a burst of readings while the transmit thread is busy.
        set(
            &mut c,
            "transport/link/tx/queue/congestion_control/drop/wait_before_drop",
            "0",
        )?;
        set(
            &mut c,
            "transport/link/tx/queue/congestion_control/drop/max_wait_before_drop_fragments",
            "0",
        )?;
        set(&mut c, "transport/link/tx/queue/size/data", "16")?;
        let scout = if self.scouting { "true" } else { "false" };
        set(&mut c, "scouting/multicast/enabled", scout)?;
        Ok(c)
    }
}

/// `player/<robot>/<code>`: where a device's readings are published.
pub fn data_key(robot: &str, code: u8) -> String {
    format!("{PREFIX}/{robot}/{}", char::from(code))
}

/// `player/<robot>/<code>/cmd`: where a device's commands are taken.
pub fn command_key(robot: &str, code: u8) -> String {
    format!("{}/cmd", data_key(robot, code))
}

/// `player/<robot>/@alive`: the robot's liveliness token.
pub fn alive_key(robot: &str) -> String {
    format!("{PREFIX}/{robot}/@alive")
}

/// `player/<robot>/@devices`: the robot's device list queryable.
pub fn devices_key(robot: &str) -> String {
    format!("{PREFIX}/{robot}/@devices")
}

/// `player/<robot>/@estop`: the robot's emergency stop.
pub fn estop_key(robot: &str) -> String {
    format!("{PREFIX}/{robot}/@estop")
}

/// A reading's attachment: the driver's timestamp as 8 bytes, u32 seconds then u32
/// microseconds since the Unix epoch, both big-endian (the layout of the 0.7.4a
/// timestamp extension, `x y t`).
pub fn encode_timestamp(ts: Timestamp) -> [u8; TIMESTAMP_LEN] {
    ts.encode()
}

/// The timestamp of an attachment made by [`encode_timestamp`].
pub fn decode_timestamp(b: &[u8]) -> Option<Timestamp> {
    if b.len() != TIMESTAMP_LEN {
        return None;
    }
    Some(Timestamp {
        sec: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        usec: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
    })
}

/// The device list as the `@devices` queryable answers it: `{"robot", "estop",
/// "estop_by", "devices": [{"code", "name", "access", "state", "readers", "writers",
/// "data_size", "rate_hz", "driver"}]}` (the fields of the device list extension, `x y l`).
pub fn devices_json(robot: &str, list: &[DeviceEntry], estop: Option<&str>) -> Vec<u8> {
    let devices: Vec<serde_json::Value> = list
        .iter()
        .map(|e| {
            let state = e.state_name();
            serde_json::json!({
                "code": char::from(e.code).to_string(),
                "name": device::name(e.code),
                "access": char::from(e.access).to_string(),
                "state": state,
                "readers": e.readers,
                "writers": e.writers,
                "data_size": e.data_size,
                "rate_hz": f64::from(e.rate_x10) / 10.0,
                "driver": e.driver,
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "robot": robot,
        "estop": estop.is_some(),
        "estop_by": estop,
        "devices": devices,
    }))
    .unwrap_or_default()
}

/// One robot the bridge serves.
pub struct BridgedRobot {
    /// Its name (a key chunk).
    pub name: String,
    /// Its registry.
    pub registry: Addr<Registry>,
    /// Its device codes.
    pub devices: Vec<u8>,
}

/// Starts the bridge for the robots of `ctx` that `settings` serves. Must run inside an
/// actix system.
pub async fn start(
    settings: &ZenohSettings,
    ctx: &FrontEndContext,
) -> Result<ZenohBridge, ZenohError> {
    let robots = ctx
        .robots
        .iter()
        .filter(|r| settings.serves(&r.name))
        .map(|r| BridgedRobot {
            name: r.name.clone(),
            registry: r.registry.clone(),
            devices: r.codes(),
        })
        .collect();
    ZenohBridge::start(
        settings,
        ctx.policy.clone(),
        robots,
        ctx.ids.clone(),
        ctx.log.clone(),
    )
    .await
}

impl FrontEnd for ZenohBridge {
    fn name(&self) -> &str {
        "zenoh"
    }

    fn stop(self: Box<Self>) -> futures::future::LocalBoxFuture<'static, ()> {
        Box::pin((*self).stop())
    }

    fn recheck(&self) -> usize {
        for a in &self.robots {
            a.do_send(RecheckKeys);
        }
        self.robots.len()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The Zenoh session and, per robot, its token, queryable and subscribers (dropping them
/// undeclares them).
type Session = (zenoh::Session, Vec<robot::RobotEntities>);

/// Undeclares the robots' entities and closes the session (blocks).
fn close((session, declared): Session) {
    drop(declared);
    let _ = session.close().wait();
}

/// The running bridge: the Zenoh session and one actor per robot.
pub struct ZenohBridge {
    session: BridgeSession<Session>,
    robots: Vec<Addr<ZenohRobot>>,
    log: Logger,
}

impl ZenohBridge {
    /// Opens the Zenoh session and starts bridging `robots`. `ids` numbers the bridge's
    /// registry sessions (shared with the listeners so ids are unique); `policy` (the
    /// server's, which a reload swaps) gives the key commands must carry. Must run inside
    /// an actix system.
    pub async fn start(
        settings: &ZenohSettings,
        policy: Arc<Policy>,
        robots: Vec<BridgedRobot>,
        ids: SessionIds,
        log: Logger,
    ) -> Result<ZenohBridge, ZenohError> {
        let config = settings.zenoh_config()?;
        let arbiter = Arbiter::new();
        let mut callbacks = Vec::new();
        for r in &robots {
            let (mailbox, in_flight) =
                (Arc::new(Mailbox::default()), Arc::new(InFlight::default()));
            let opts = RobotOptions {
                mailbox: mailbox.clone(),
                in_flight: in_flight.clone(),
                robot: r.name.clone(),
                registry: r.registry.clone(),
                session: ids.next(),
                devices: r.devices.clone(),
                write: settings.write,
                policy: policy.clone(),
                log: log.new(slog::o!("robot" => r.name.clone(), "front" => "zenoh")),
            };
            let addr =
                ZenohRobot::start_in_arbiter(&arbiter.handle(), move |_| ZenohRobot::new(opts));
            let to = Callbacks {
                addr,
                mailbox,
                in_flight,
            };
            callbacks.push((r.name.clone(), r.devices.clone(), to));
        }
        let actors: Vec<Addr<ZenohRobot>> =
            callbacks.iter().map(|(_, _, c)| c.addr.clone()).collect();
        let (session, all) = set_up("zenoh", &arbiter, ZenohError::Setup, move || {
            let session = zenoh::open(config).wait().map_err(ZenohError::Open)?;
            let mut all = Vec::new();
            for (name, devices, to) in callbacks {
                match robot::declare(&session, &name, &devices, &to) {
                    Ok(x) => all.push(x),
                    Err(source) => {
                        let _ = session.close().wait();
                        return Err(ZenohError::Declare {
                            robot: name,
                            source,
                        });
                    }
                }
            }
            Ok((session, all))
        })
        .await?;
        let zid = session.zid().to_string();
        let mut declared = Vec::new();
        for ((publishers, d), addr) in all.into_iter().zip(&actors) {
            addr.do_send(Attach(publishers));
            declared.push(d);
        }
        let mode = settings.mode.clone();
        let listen = if mode == "peer" {
            settings.listen.join(", ")
        } else {
            String::new()
        };
        info!(log, "zenoh bridge up"; "mode" => mode, "zid" => zid, "listen" => listen,
            "connect" => settings.connect.join(", "), "commands" => settings.write,
            "robots" => robots.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", "));
        if !settings.write {
            info!(
                log,
                "zenoh commands are ignored (set [zenoh] write = true to accept them)"
            );
        }
        Ok(ZenohBridge {
            session: BridgeSession::new("zenoh", (session, declared), close, arbiter, log.clone()),
            robots: actors,
            log,
        })
    }

    /// The Zenoh id of the server's session.
    pub fn zid(&self) -> String {
        self.session
            .session()
            .map(|(s, _)| s.zid().to_string())
            .unwrap_or_default()
    }

    /// Stops bridging: the robots' sessions leave their registries (a device the bridge
    /// commanded is stopped), the liveliness tokens go, the Zenoh session closes.
    pub async fn stop(self) {
        self.session.shutdown(self.robots).await;
        info!(self.log, "zenoh bridge stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_big_endian() {
        let ts = Timestamp {
            sec: 0x0102_0304,
            usec: 999_999,
        };
        let b = encode_timestamp(ts);
        assert_eq!(&b[..4], &[1, 2, 3, 4]);
        assert_eq!(&b[4..], &999_999u32.to_be_bytes());
        assert_eq!(decode_timestamp(&b), Some(ts));
        assert_eq!(decode_timestamp(&b[..7]), None);
    }

    #[test]
    fn keys_follow_the_documented_layout() {
        assert_eq!(data_key("pioneer", b'l'), "player/pioneer/l");
        // Keys are case-sensitive: the full scan `L` is not the laser view `l`.
        assert_eq!(data_key("pioneer", b'L'), "player/pioneer/L");
        assert_eq!(command_key("pioneer", b'p'), "player/pioneer/p/cmd");
        assert_eq!(alive_key("a"), "player/a/@alive");
        assert_eq!(devices_key("a"), "player/a/@devices");
        assert!(valid_robot_name("leader-1.a_b"));
        for bad in ["", "a/b", "a*", "$x", "a b", "@x"] {
            assert!(!valid_robot_name(bad), "{bad}");
        }
    }

    fn robots(names: &[&str]) -> Vec<RobotSettings> {
        let mut text = String::new();
        for n in names {
            text.push_str(&format!("[[robot]]\nname = \"{n}\"\n"));
        }
        player_core::settings::Settings::from_toml(&text, "t")
            .unwrap()
            .robot
    }

    /// The key a refusal names, and its text.
    fn refusal(r: Result<(), SettingsError>) -> (String, String) {
        match r {
            Err(SettingsError::Value { key, why, .. }) => (key, why),
            other => panic!("expected a refused value, got {other:?}"),
        }
    }

    #[test]
    fn unsafe_or_impossible_sections_are_refused_with_their_key() {
        let on = ZenohSettings {
            enabled: true,
            ..Default::default()
        };
        let a = AccessSettings::default();
        assert!(on.check(&robots(&["pioneer"]), &a, "t").is_ok());
        let (key, why) = refusal(on.check(&robots(&["a/b"]), &a, "t"));
        assert!(key == "robot.name" && why.contains("a/b"), "{key}: {why}");
        let (key, why) = refusal(on.check(&robots(&["x", "x"]), &a, "t"));
        assert!(
            key == "robot.name" && why.contains("collide"),
            "{key}: {why}"
        );
        let bad_mode = ZenohSettings {
            mode: "router".into(),
            ..on.clone()
        };
        assert_eq!(
            refusal(bad_mode.check(&robots(&["x"]), &a, "t")).0,
            "zenoh.mode"
        );
        let client = ZenohSettings {
            mode: "client".into(),
            ..on.clone()
        };
        assert_eq!(
            refusal(client.check(&robots(&["x"]), &a, "t")).0,
            "zenoh.connect"
        );
        let write = ZenohSettings {
            write: true,
            ..on.clone()
        };
        let limited = AccessSettings {
            write_allow: vec!["10.0.0.0/8".into()],
            ..AccessSettings::default()
        };
        let (key, why) = refusal(write.check(&robots(&["x"]), &limited, "t"));
        assert!(
            key == "zenoh.write" && why.contains("write_allow"),
            "{key}: {why}"
        );
        let keyed = AccessSettings {
            key: "k".into(),
            ..limited.clone()
        };
        assert!(write.check(&robots(&["x"]), &keyed, "t").is_ok());
        let read_limited = AccessSettings {
            read_allow: vec!["127.0.0.1".into()],
            ..AccessSettings::default()
        };
        assert_eq!(
            refusal(on.check(&robots(&["x"]), &read_limited, "t")).0,
            "zenoh.public"
        );
        let public = ZenohSettings {
            public: true,
            ..on.clone()
        };
        assert!(public.check(&robots(&["x"]), &read_limited, "t").is_ok());
        let bad_endpoint = ZenohSettings {
            listen: vec!["nonsense".into()],
            ..on.clone()
        };
        assert_eq!(
            refusal(bad_endpoint.check(&robots(&["x"]), &a, "t")).0,
            "zenoh"
        );
        let unknown = ZenohSettings {
            robots: vec!["nobody".into()],
            ..on
        };
        let (key, why) = refusal(unknown.check(&robots(&["x"]), &a, "t"));
        assert!(
            key == "zenoh.robots" && why.contains("nobody"),
            "{key}: {why}"
        );
    }
}
