//! The `[ros2]` section of the configuration, the `--ros2` flag ([`SYNTAX`]) and their
//! checks.

use crate::convert::Frames;
use player_core::access::AccessSettings;
use player_core::settings::{FlagSpec, FrontEndSyntax, RobotSettings, Settings, SettingsError};
use serde::Deserialize;
use thiserror::Error;

/// The section and the flag this front end adds to the configuration.
pub const SYNTAX: FrontEndSyntax = FrontEndSyntax {
    sections: &["ros2"],
    robot_keys: &[],
    flags: &[FlagSpec {
        flag: "--ros2",
        takes_value: false,
    }],
};

/// The `[ros2]` section.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Ros2Settings {
    /// Whether the ROS 2 front end runs (`--ros2` sets it).
    pub enabled: bool,
    /// The ROS domain id (`ROS_DOMAIN_ID`, 0 to 232).
    pub domain_id: u32,
    /// The namespace of every robot's node and topics (default: `/<robot>` when the server
    /// serves several robots, else `/`). `{robot}` is replaced by the robot's name.
    pub namespace: Option<String>,
    /// The node's name.
    pub node: String,
    /// `"peer"` (default, as every rmw_zenoh node), `"client"`, or `"router"` (the robot is
    /// the ROS network's router: ROS machines connect to it instead of running
    /// `rmw_zenohd`).
    pub mode: String,
    /// Endpoints to listen on in peer or router mode (default `["tcp/localhost:0"]`, as
    /// rmw_zenoh's nodes: other peers learn it from the router).
    pub listen: Vec<String>,
    /// Endpoints to connect to (default `["tcp/localhost:7447"]`: the `rmw_zenohd` router
    /// on the robot); retried in the background.
    pub connect: Vec<String>,
    /// Multicast scouting (default off, as rmw_zenoh's).
    pub scouting: bool,
    /// Whether `cmd_vel` is obeyed (default false: ROS 2 reads only).
    pub write: bool,
    /// The robots served, by name (empty: every robot).
    pub robots: Vec<String>,
    /// Accept that every Zenoh peer reaching the session may read (and, with `write`,
    /// command) although `[access]` restricts readers or writers: ROS 2 samples carry
    /// neither an address nor a key. Without it such a configuration is refused.
    pub public: bool,
    /// Prefix of every frame id (default: `<robot>/` when the server serves several
    /// robots, else none).
    pub frame_prefix: Option<String>,
    /// Odometry's fixed frame.
    pub odom_frame: String,
    /// The robot's body frame.
    pub base_frame: String,
    /// The laser's frame.
    pub laser_frame: String,
    /// Prefix of the sonar transducers' frames (the index follows).
    pub sonar_frame: String,
    /// The laser on the body: x, y, z in m, yaw in degrees.
    pub laser_pose: [f64; 4],
    /// The laser's longest range, m (`range_max` of `scan`).
    pub laser_range_max: f32,
    /// Fastest `cmd_vel` speed passed on, m/s (faster is clamped).
    pub max_speed: f64,
    /// Fastest `cmd_vel` turn passed on, rad/s.
    pub max_turn: f64,
}

impl Default for Ros2Settings {
    fn default() -> Self {
        Ros2Settings {
            enabled: false,
            domain_id: 0,
            namespace: None,
            node: "player".into(),
            mode: "peer".into(),
            listen: vec!["tcp/localhost:0".into()],
            connect: vec!["tcp/localhost:7447".into()],
            scouting: false,
            write: false,
            robots: Vec::new(),
            public: false,
            frame_prefix: None,
            odom_frame: "odom".into(),
            base_frame: "base_link".into(),
            laser_frame: "laser".into(),
            sonar_frame: "sonar_".into(),
            laser_pose: [0.0; 4],
            laser_range_max: 8.0,
            max_speed: 1.0,
            max_turn: 1.75,
        }
    }
}

/// A `[ros2]` section that cannot work; the message names the key.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct Ros2SettingsError(pub String);

/// What of `[access]` the checks need.
#[derive(Debug, Clone, Default)]
pub struct AccessRules {
    /// `[access] key` is set.
    pub keyed: bool,
    /// Keyless clients are refused (`keyless = "refuse"`).
    pub refuse_keyless: bool,
    /// `read_allow` is not empty.
    pub read_limited: bool,
    /// `write_allow` is not empty.
    pub write_limited: bool,
}

/// Whether `name` is a valid ROS 2 name chunk (letters, digits, `_`, not starting with a digit).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.as_bytes()[0].is_ascii_digit()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The longest frame name a key gives, and the longest frame id with its prefix.
const MAX_FRAME_NAME: usize = 64;
const MAX_FRAME_ID: usize = 2 * MAX_FRAME_NAME;

/// Why `id` cannot be a frame id of at most `most` bytes, if it cannot: tf2 refuses ids
/// that start with `/`, and the CDR string of an id with a NUL or another control
/// character is cut or garbled by ROS 2's readers.
fn frame_fault(id: &str, most: usize) -> Option<String> {
    let why = |w: &str| Some(w.to_string());
    if id.is_empty() {
        why("empty")
    } else if id.len() > most {
        Some(format!("longer than {most} bytes"))
    } else if id.starts_with('/') {
        why("tf2 refuses a frame id that starts with '/'")
    } else if id.contains(char::is_control) {
        why("a control character such as NUL")
    } else if id.contains(char::is_whitespace) {
        why("white space")
    } else {
        None
    }
}

impl AccessRules {
    /// The rules of an `[access]` section.
    pub fn of(a: &AccessSettings) -> Self {
        AccessRules {
            keyed: !a.key.is_empty(),
            refuse_keyless: a.keyless == "refuse",
            read_limited: !a.read_allow.is_empty(),
            write_limited: !a.write_allow.is_empty(),
        }
    }
}

impl Ros2Settings {
    /// The `[ros2]` section of settings read with [`SYNTAX`] (the defaults when there is
    /// none), checked against their robots and access policy; errors name the section.
    pub fn from_settings(settings: &Settings) -> Result<Self, SettingsError> {
        let s: Ros2Settings = settings.section("ros2")?;
        s.check_against(&settings.robot, &settings.access, &settings.origin)?;
        Ok(s)
    }

    /// [`Ros2Settings::check`] against the configuration's robots and `[access]`, as a
    /// settings error. Call it again after the flags (`--ros2`, `-stage`).
    pub fn check_against(
        &self,
        robots: &[RobotSettings],
        access: &AccessSettings,
        origin: &str,
    ) -> Result<(), SettingsError> {
        let names: Vec<String> = robots.iter().map(|r| r.name.clone()).collect();
        self.check(&names, &AccessRules::of(access))
            .map_err(|e| SettingsError::value(origin, "ros2", e.0))
    }

    /// Whether robot `name` is served.
    pub fn serves(&self, name: &str) -> bool {
        self.robots.is_empty() || self.robots.iter().any(|r| r == name)
    }

    /// The namespace of robot `name` (`several`: the server serves more than one robot).
    pub fn namespace_of(&self, name: &str, several: bool) -> String {
        match &self.namespace {
            Some(ns) => {
                let ns = ns.replace("{robot}", name);
                let ns = ns.trim_end_matches('/');
                if ns.is_empty() {
                    "/".into()
                } else if ns.starts_with('/') {
                    ns.to_string()
                } else {
                    format!("/{ns}")
                }
            }
            None if several => format!("/{name}"),
            None => "/".into(),
        }
    }

    /// The frames of robot `name`.
    pub fn frames_of(&self, name: &str, several: bool) -> Frames {
        let prefix = match &self.frame_prefix {
            Some(p) => p.replace("{robot}", name),
            None if several => format!("{name}/"),
            None => String::new(),
        };
        Frames {
            odom: format!("{prefix}{}", self.odom_frame),
            base: format!("{prefix}{}", self.base_frame),
            laser: format!("{prefix}{}", self.laser_frame),
            sonar: format!("{prefix}{}", self.sonar_frame),
            map: format!("{prefix}map"),
        }
    }

    /// `max_speed` in mm/s and `max_turn` in deg/s, as the position command takes them.
    pub fn limits(&self) -> (i16, i16) {
        let mm = (self.max_speed * 1000.0)
            .round()
            .clamp(0.0, f64::from(i16::MAX)) as i16;
        let deg = self
            .max_turn
            .to_degrees()
            .round()
            .clamp(0.0, f64::from(i16::MAX)) as i16;
        (mm, deg)
    }

    /// Checks the section against the robots' names and the access rules.
    pub fn check(&self, robots: &[String], access: &AccessRules) -> Result<(), Ros2SettingsError> {
        let err = |s: String| Err(Ros2SettingsError(s));
        if !matches!(self.mode.as_str(), "peer" | "client" | "router") {
            return err(format!(
                "ros2.mode: '{}' is not \"peer\", \"client\" or \"router\"",
                self.mode
            ));
        }
        if self.domain_id > 232 {
            return err(format!(
                "ros2.domain_id: {} is past 232, the largest ROS domain id",
                self.domain_id
            ));
        }
        for r in &self.robots {
            if !robots.contains(r) {
                return err(format!("ros2.robots: no robot named '{r}'"));
            }
        }
        if !valid_name(&self.node) {
            return err(format!(
                "ros2.node: '{}' is not a ROS 2 node name (letters, digits, _)",
                self.node
            ));
        }
        for (key, v) in [
            ("odom_frame", &self.odom_frame),
            ("base_frame", &self.base_frame),
            ("laser_frame", &self.laser_frame),
            ("sonar_frame", &self.sonar_frame),
        ] {
            if let Some(why) = frame_fault(v, MAX_FRAME_NAME) {
                return err(format!(
                    "ros2.{key}: '{}' is not a frame id ({why})",
                    v.escape_debug()
                ));
            }
        }
        if !(self.max_speed.is_finite()
            && self.max_speed >= 0.0
            && self.max_turn.is_finite()
            && self.max_turn >= 0.0)
        {
            return err("ros2.max_speed and ros2.max_turn must be 0 or more".into());
        }
        if self.laser_range_max.is_nan() || self.laser_range_max <= 0.0 {
            return err("ros2.laser_range_max must be more than 0".into());
        }
        if !self.enabled {
            return Ok(());
        }
        if self.mode == "client" && self.connect.is_empty() && !self.scouting {
            return err("ros2: mode \"client\" needs ros2.connect (rmw_zenohd's endpoint, e.g. [\"tcp/localhost:7447\"]) or ros2.scouting = true".into());
        }
        let served: Vec<&String> = robots.iter().filter(|r| self.serves(r)).collect();
        let several = served.len() > 1;
        let mut namespaces = std::collections::HashSet::new();
        for r in &served {
            let ns = self.namespace_of(r, several);
            let ok = ns == "/" || ns[1..].split('/').all(valid_name);
            if !ok {
                return err(format!("ros2: robot '{r}' gives the namespace '{ns}', not a ROS 2 namespace (use letters, digits, _)"));
            }
            let frames = self.frames_of(r, several);
            for f in [&frames.odom, &frames.base, &frames.laser, &frames.sonar] {
                if let Some(why) = frame_fault(f, MAX_FRAME_ID) {
                    return err(format!(
                        "ros2.frame_prefix: robot '{r}' gives the frame id '{}' ({why})",
                        f.escape_debug()
                    ));
                }
            }
            if !namespaces.insert(ns.clone()) {
                return err(format!("ros2: two robots in the namespace '{ns}'; their topics would collide (set ros2.namespace = \"/{{robot}}\")"));
            }
        }
        if self.write && (access.keyed || access.write_limited) && !self.public {
            return err("ros2.write = true cannot honour access.key or access.write_allow: ROS 2 commands carry neither a key nor an address; restrict ros2.listen/connect to a trusted network and set ros2.public = true to accept that".into());
        }
        let restricted = access.read_limited || (access.keyed && access.refuse_keyless);
        if restricted && !self.public {
            return err("ros2: [access] restricts who may read (read_allow or keyless = \"refuse\"), but ROS 2 topics reach every Zenoh peer; restrict ros2.listen/connect to a trusted network and set ros2.public = true to accept that".into());
        }
        self.zenoh_config().map(|_| ())
    }

    /// The Zenoh configuration: mode, endpoints, scouting.
    pub fn zenoh_config(&self) -> Result<zenoh::Config, Ros2SettingsError> {
        let mut c = zenoh::Config::default();
        let json = |v: &[String]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
        let set = |c: &mut zenoh::Config, key: &str, value: &str| {
            c.insert_json5(key, value)
                .map_err(|e| Ros2SettingsError(format!("ros2: {key} = {value}: {e}")))
        };
        set(&mut c, "mode", &format!("\"{}\"", self.mode))?;
        if self.mode != "client" {
            set(&mut c, "listen/endpoints", &json(&self.listen))?;
        }
        set(&mut c, "connect/endpoints", &json(&self.connect))?;
        // Serve ROS whether or not rmw_zenohd is up yet: connect in the background.
        set(&mut c, "connect/timeout_ms", "0")?;
        set(&mut c, "connect/exit_on_failure", "false")?;
        // Readings are put on the registry's thread (node::Readings): a put must never wait
        // for a free batch there, or the TCP clients and the drivers would wait with it. A
        // congested link drops at once; a queue of 16 batches (Zenoh's most; lazily
        // allocated) takes a burst (16 sonar ranges at once) while the transmit thread is
        // busy. Fragmented messages (the map, put by the node's own thread) keep Zenoh's
        // 50 ms for their fragments' batches.
        set(
            &mut c,
            "transport/link/tx/queue/congestion_control/drop/wait_before_drop",
            "0",
        )?;
        set(&mut c, "transport/link/tx/queue/size/data", "16")?;
        let scout = if self.scouting { "true" } else { "false" };
        set(&mut c, "scouting/multicast/enabled", scout)?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    fn on() -> Ros2Settings {
        Ros2Settings {
            enabled: true,
            listen: vec!["tcp/127.0.0.1:0".into()],
            ..Ros2Settings::default()
        }
    }

    #[test]
    fn one_robot_lives_at_the_root_several_in_their_own_namespaces() {
        let s = Ros2Settings::default();
        assert_eq!(s.namespace_of("pioneer", false), "/");
        assert_eq!(s.namespace_of("pioneer", true), "/pioneer");
        assert_eq!(s.frames_of("pioneer", false).base, "base_link");
        assert_eq!(s.frames_of("pioneer", true).odom, "pioneer/odom");
        let custom = Ros2Settings {
            namespace: Some("fleet/{robot}/".into()),
            frame_prefix: Some("{robot}_".into()),
            ..s
        };
        assert_eq!(custom.namespace_of("a", false), "/fleet/a");
        assert_eq!(custom.frames_of("a", false).sonar(2), "a_sonar_2");
    }

    #[test]
    fn limits_are_mm_per_s_and_degrees_per_s() {
        assert_eq!(Ros2Settings::default().limits(), (1000, 100));
    }

    #[test]
    fn impossible_or_unsafe_sections_are_refused_with_their_key() {
        let a = AccessRules::default();
        assert!(on().check(&names(&["pioneer"]), &a).is_ok());
        let router = Ros2Settings {
            mode: "router".into(),
            ..on()
        };
        assert!(router.check(&names(&["pioneer"]), &a).is_ok());
        let e = |s: Ros2Settings, r: &[&str], a: &AccessRules| s.check(&names(r), a).unwrap_err().0;
        assert!(e(
            Ros2Settings {
                mode: "broker".into(),
                ..on()
            },
            &["x"],
            &a
        )
        .contains("ros2.mode"));
        assert!(e(
            Ros2Settings {
                domain_id: 233,
                ..on()
            },
            &["x"],
            &a
        )
        .contains("domain_id"));
        assert!(e(
            Ros2Settings {
                robots: names(&["nobody"]),
                ..on()
            },
            &["x"],
            &a
        )
        .contains("nobody"));
        assert!(e(
            Ros2Settings {
                node: "9lives".into(),
                ..on()
            },
            &["x"],
            &a
        )
        .contains("ros2.node"));
        assert!(e(on(), &["a-b", "c"], &a).contains("namespace"));
        for (bad, why) in [
            ("base\0link", "control character"),
            ("/odom", "'/'"),
            ("base link", "white space"),
            ("", "empty"),
        ] {
            let m = e(
                Ros2Settings {
                    base_frame: bad.into(),
                    ..on()
                },
                &["x"],
                &a,
            );
            assert!(m.contains("ros2.base_frame") && m.contains(why), "{m}");
        }
        let m = e(
            Ros2Settings {
                odom_frame: "o".repeat(65),
                ..on()
            },
            &["x"],
            &a,
        );
        assert!(
            m.contains("ros2.odom_frame") && m.contains("longer than 64"),
            "{m}"
        );
        let m = e(
            Ros2Settings {
                frame_prefix: Some("/{robot}/".into()),
                ..on()
            },
            &["x", "y"],
            &a,
        );
        assert!(
            m.contains("ros2.frame_prefix") && m.contains("'/x/odom'"),
            "{m}"
        );
        let m = e(
            Ros2Settings {
                frame_prefix: Some("{robot}\u{1}".into()),
                ..on()
            },
            &["x"],
            &a,
        );
        assert!(m.contains("'x\\u{1}odom'"), "the id is escaped: {m}");
        assert!(
            on().check(&names(&["a-b"]), &a).is_ok(),
            "one robot: at the root"
        );
        let same = Ros2Settings {
            namespace: Some("/fleet".into()),
            ..on()
        };
        assert!(e(same, &["a", "b"], &a).contains("collide"));
        let keyed = AccessRules {
            keyed: true,
            ..AccessRules::default()
        };
        let write = Ros2Settings {
            write: true,
            ..on()
        };
        assert!(e(write.clone(), &["x"], &keyed).contains("ros2.public"));
        assert!(Ros2Settings {
            public: true,
            ..write
        }
        .check(&names(&["x"]), &keyed)
        .is_ok());
        let readers = AccessRules {
            read_limited: true,
            ..AccessRules::default()
        };
        assert!(e(on(), &["x"], &readers).contains("read"));
        assert!(e(
            Ros2Settings {
                listen: vec!["nonsense".into()],
                ..on()
            },
            &["x"],
            &a
        )
        .contains("listen"));
        assert!(e(
            Ros2Settings {
                mode: "client".into(),
                connect: vec![],
                ..on()
            },
            &["x"],
            &a
        )
        .contains("connect"));
    }
}
