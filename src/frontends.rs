//! The front ends the `player` binary serves, listed once: the web viewer, the recorder, the
//! Zenoh bridge and the ROS 2 front end.
//!
//! Each is a crate on the core's front-end kit that describes itself as a [`FrontEndKind`]:
//! its sections, robot keys and flags, how it reads and checks its settings and takes its
//! flags, whether it runs, how it starts, its `--check-config` line, whether a reloaded
//! `[access]` suits it. An entry of the list below adds its field of [`Settings`] and its
//! lines of `--help` ([`Help`]). The configuration ([`crate::settings`]), the start
//! ([`crate::server::start`]), the reload ([`crate::daemon`]), `--check-config`
//! ([`crate::check`]) and `--help` read this list, and `tests/man_pages.rs` checks that each
//! entry's flags, sections and robot keys are in `player(1)`, `player.toml(5)` and `--help`:
//! a new front end is one entry here.

use player_core::access::AccessSettings;
use player_core::frontend::{FrontEndKind, ListenPort};
use player_core::server::{Server, StartError};
use player_core::settings::{
    FrontEndSyntax, RobotSettings, Settings as CoreSettings, SettingsError,
};
use std::path::Path;

/// What `player --help` says of a front end, in its own lines (each indented by four).
#[derive(Debug, Clone, Copy)]
pub struct Help {
    /// Its flags, under `FRONT ENDS`.
    pub flags: &'static str,
    /// Its section, under `CONFIGURATION FILE`.
    pub section: &'static str,
    /// Its keys of a robot, in the `[[robot]]` table there (may be empty).
    pub robot_keys: &'static str,
}

/// One front end of the list, as `--help` and the tests read it.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Its name (`"web"`).
    pub name: &'static str,
    /// Its sections, robot keys and flags.
    pub syntax: FrontEndSyntax,
    /// Its lines of `--help`.
    pub help: Help,
}

/// The list: for each front end, its field of [`Settings`] (with the field's doc), its
/// [`FrontEndKind`] and its [`Help`]. Makes [`Settings`], [`SYNTAX`], [`ALL`] and what
/// [`FrontEnds`] does with each, in the list's order (the order they start in).
macro_rules! front_ends {
    ($($(#[$doc:meta])* $field:ident: $kind:ty, $help:expr;)*) => {
        /// The whole configuration: the core's part and each front end's settings. It
        /// dereferences to the core's part, so `settings.robot`, `settings.server` and
        /// `settings.access` read as before.
        #[derive(Debug, Clone)]
        pub struct Settings {
            /// `[server]`, `[access]`, `[[robot]]` (the front ends' robot keys kept raw).
            pub core: CoreSettings,
            $($(#[$doc])* pub $field: <$kind as FrontEndKind>::Settings,)*
        }

        /// Every front end's sections, robot keys and flags: what the core's parsers take
        /// for them.
        pub const SYNTAX: &[FrontEndSyntax] = &[$(<$kind as FrontEndKind>::SYNTAX),*];

        /// Every front end, in the list's order.
        pub const ALL: &[Entry] = &[$(Entry {
            name: <$kind as FrontEndKind>::NAME,
            syntax: <$kind as FrontEndKind>::SYNTAX,
            help: $help,
        }),*];

        impl Settings {
            /// `core` and each front end's settings read from it.
            pub fn compose(core: CoreSettings) -> Result<Settings, SettingsError> {
                Ok(Settings {
                    $($field: <$kind as FrontEndKind>::settings(&core)?,)*
                    core,
                })
            }

            /// Applies a front end's flag (as the core's parser handed it back) to the
            /// front end whose flag it is.
            pub fn apply_front_end_flag(
                &mut self,
                flag: &str,
                value: Option<&str>,
            ) -> Result<(), SettingsError> {
                $(if <$kind as FrontEndKind>::SYNTAX.flags.iter().any(|f| f.flag == flag) {
                    return <$kind as FrontEndKind>::apply_flag(&mut self.$field, flag, value);
                })*
                Err(SettingsError::UnknownFlag { flag: flag.to_string() })
            }
        }

        impl FrontEnds<'_> {
            /// Checks each front end against `robots` and `access`; the first error.
            pub fn check(
                &self,
                robots: &[RobotSettings],
                access: &AccessSettings,
                origin: &str,
            ) -> Result<(), SettingsError> {
                $(<$kind as FrontEndKind>::check(&self.0.$field, robots, access, origin)?;)*
                Ok(())
            }

            /// Whether the front ends, running as these settings started them, can honour
            /// a reloaded `access`; the first that cannot is the error.
            pub fn accept_reload(&self, access: &AccessSettings) -> Result<(), SettingsError> {
                let (robots, origin) = (&self.0.core.robot, &self.0.core.origin);
                $(<$kind as FrontEndKind>::accepts_reload(&self.0.$field, robots, access, origin)?;)*
                Ok(())
            }

            /// The sections of the front ends whose settings differ in `new` (`[web]`):
            /// only a restart applies them.
            pub fn needing_restart(&self, new: &Settings) -> Vec<String> {
                let mut out = Vec::new();
                $(if <$kind as FrontEndKind>::needs_restart(&self.0.$field, &new.$field) {
                    out.extend(section_names(&<$kind as FrontEndKind>::SYNTAX));
                })*
                out
            }

            /// Starts each front end that is on and attaches it to `server`, in the list's
            /// order; the first that cannot start is the error.
            pub async fn start(&self, server: &mut Server) -> Result<(), StartError> {
                let ctx = server.context().clone();
                $(if <$kind as FrontEndKind>::enabled(&self.0.$field) {
                    let running = <$kind as FrontEndKind>::start(&self.0.$field, &ctx)
                        .await
                        .map_err(|e| StartError::front_end(<$kind as FrontEndKind>::NAME, e))?;
                    server.attach(Box::new(running));
                })*
                Ok(())
            }

            /// `--check-config`'s line of each front end (`base_dir` resolves paths).
            pub fn describe(&self, base_dir: &Path) -> Vec<String> {
                vec![$(<$kind as FrontEndKind>::describe(&self.0.$field, base_dir)),*]
            }

            /// `--check-config`'s lines of the front ends for robot `index`.
            pub fn describe_robot(&self, index: usize) -> Vec<String> {
                let mut out = Vec::new();
                $(out.extend(<$kind as FrontEndKind>::describe_robot(&self.0.$field, index));)*
                out
            }

            /// The ports the front ends would listen on besides the robots'.
            pub fn ports(&self) -> Vec<ListenPort> {
                let mut out = Vec::new();
                $(out.extend(<$kind as FrontEndKind>::ports(&self.0.$field, &self.0.core.robot));)*
                out
            }

            /// The files the front ends read at start, checked; every error.
            pub fn check_files(&self, base_dir: &Path, origin: &str) -> Vec<SettingsError> {
                let mut out = Vec::new();
                $(out.extend(
                    <$kind as FrontEndKind>::check_files(&self.0.$field, base_dir, origin).err(),
                );)*
                out
            }
        }
    };
}

front_ends! {
    /// The web viewer: `[web]` (TLS), each robot's `web_port`, `-web PORT`.
    web: player_web::Web, WEB;
    /// Recording to MCAP: `[record]`, `-record FILE`.
    record: player_record::Record, RECORD;
    /// The Zenoh bridge: `[zenoh]`, `--zenoh`.
    zenoh: player_zenoh::Zenoh, ZENOH;
    /// The ROS 2 front end: `[ros2]`, `--ros2`.
    ros2: player_ros2::Ros2, ROS2;
}

/// What the binary does with every front end of [`Settings`] ([`Settings::front_ends`]).
pub struct FrontEnds<'a>(&'a Settings);

impl Settings {
    /// The front ends of these settings, to check, start or describe them all.
    pub fn front_ends(&self) -> FrontEnds<'_> {
        FrontEnds(self)
    }
}

/// `[name]` for each section of `syntax`.
fn section_names(syntax: &FrontEndSyntax) -> impl Iterator<Item = String> {
    syntax.sections.iter().map(|s| format!("[{s}]"))
}

const WEB: Help = Help {
    flags:
        "    -web <port>      Web viewer (HTTP page and Foxglove WebSocket) of the first robot on
                     <port>, robot i of a world on <port> + i (a world of more than 64
                     robots: all on <port>, topics under the robots' names); 0 turns it
                     off. Default 8765 (+ i), skipped with a log line when busy. Open
                     http://HOST:8765/ in a browser, or point Foxglove or Lichtblick at
                     ws://HOST:8765.
",
    section:
        "    [web]                  # the web viewer's TLS (docs/web-viewer.md); off by default
    tls_cert = \"\"          # PEM certificate chain; with tls_key: https and wss only
    tls_key = \"\"           # its PEM private key (both or neither)
",
    robot_keys:
        "    web_port = 8765        # web viewer + Foxglove WebSocket; 0 = off; unset = 8765 + i
",
};

const RECORD: Help = Help {
    flags: "    -record <file>   Record every device's readings (and the commands and configs
                     clients send) to the MCAP file <file>, whether or not clients read.
",
    section: "    [record]               # recording to MCAP (Foxglove opens the files)
    path = \"run.mcap\"     # empty = off; -record <file> sets it
    max_bytes = 0          # start a new file (run.1.mcap, ...) past this size, 0 = never
    max_seconds = 0.0      # start a new file after this long, 0 = never
    chunk_bytes = 262144   # chunk size; a killed server loses at most the open chunk
    chunk_seconds = 1.0    # close a chunk at least this often
    foxglove = true        # also write the web viewer's Foxglove channels
    foxglove_encoding = \"protobuf\" # as the viewer serves them; or \"json\"
    retry_seconds = 5.0    # retry a device that could not be opened
",
    robot_keys: "",
};

const ZENOH: Help = Help {
    flags:
        "    --zenoh          Put every robot on Zenoh (the [zenoh] section below, enabled): peer
                     mode listening on tcp/[::]:7447; readings on player/<robot>/<code>,
                     the device list at player/<robot>/@devices, liveliness token
                     player/<robot>/@alive. Commands only with [zenoh] write = true.
",
    section: "    [zenoh]                # the Zenoh bridge (README, \"Fleets\"); off by default
    enabled = false        # --zenoh turns it on
    mode = \"peer\"          # or \"client\" (connects only, to a router in connect)
    listen = [\"tcp/[::]:7447\"]  # peer mode: where other peers and clients connect
    connect = []           # routers (zenohd) or peers, e.g. [\"tcp/10.0.0.1:7447\"]
    write = false          # obey commands on player/<robot>/<code>/cmd (with access.key
                           # set, each must carry the key as its attachment)
    robots = []            # robots bridged by name (empty = all)
    scouting = false       # multicast scouting of peers on the LAN
    public = false         # accept Zenoh readings although [access] restricts readers
",
    robot_keys: "",
};

const ROS2: Help = Help {
    flags: "    --ros2           Every robot a ROS 2 node (the [ros2] section below, enabled), as
                     rmw_zenoh_cpp (Jazzy 0.2.4 or later) lays it out: scan, odom, tf,
                     tf_static, sonar, battery; cmd_vel only with [ros2] write = true.
",
    section: "    [ros2]                 # ROS 2 over rmw_zenoh (docs/ros2.md); off by default
    enabled = false        # --ros2 turns it on
    domain_id = 0          # ROS_DOMAIN_ID
    namespace = \"/\"        # default \"/\" for one robot, \"/<robot>\" for several
    mode = \"peer\"          # or \"client\", or \"router\" (ROS machines connect here)
    connect = [\"tcp/localhost:7447\"]  # rmw_zenohd
    listen = [\"tcp/localhost:0\"]
    write = false          # obey cmd_vel (Twist or TwistStamped)
    max_speed = 1.0        # m/s; cmd_vel is clamped to it and to max_turn (rad/s)
",
    robot_keys: "",
};
