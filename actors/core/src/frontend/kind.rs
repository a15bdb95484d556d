//! The one shape of a front end as the binary composes it: how it reads and checks its
//! settings, takes its flags, says whether it runs, starts, tells `--check-config` what it
//! would do and a reload whether it can follow.
//!
//! Each front-end crate implements [`FrontEndKind`] for a type naming it (`player_web::Web`,
//! `player_record::Record`, ...), and the binary lists those types once (`src/frontends.rs`):
//! its configuration, flags, start, `--check-config` summary, reload and `--help` all read
//! that list, so a new front end is one entry there.

use super::{FrontEnd, FrontEndContext};
use crate::access::AccessSettings;
use crate::settings::{FrontEndSyntax, RobotSettings, Settings, SettingsError};
use futures::future::LocalBoxFuture;
use std::path::Path;

/// A port a front end would listen on besides the robots' own, which no other listener may
/// take: `--check-config` names a clash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenPort {
    /// The robot it is for (its place in the configuration).
    pub robot: usize,
    /// The port.
    pub port: u16,
    /// The key that sets it (`robot[2].web_port`).
    pub key: String,
    /// What listens there, for the message (`robot 'c' web viewer`).
    pub who: String,
}

/// A front end: its settings and what the binary does with them.
pub trait FrontEndKind {
    /// Its name in logs and errors (`"web"`, `"record"`, `"zenoh"`, `"ros2"`).
    const NAME: &'static str;

    /// Its sections, robot keys and flags, which the core's parsers take and hand back raw.
    const SYNTAX: FrontEndSyntax;

    /// Its settings: its section (and robot keys) read and checked, its flags applied.
    type Settings: Clone + std::fmt::Debug;

    /// The running front end [`FrontEndKind::start`] returns, which the server stops.
    type Running: FrontEnd + 'static;

    /// Why it could not start.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Reads its part of `core` (the defaults where the file has none) and checks it as
    /// [`FrontEndKind::check`] does; errors name the key.
    fn settings(core: &Settings) -> Result<Self::Settings, SettingsError>;

    /// Applies its flag `flag` (one of [`FrontEndKind::SYNTAX`]'s), with `value` when the
    /// flag takes one; errors name the flag.
    fn apply_flag(
        settings: &mut Self::Settings,
        flag: &str,
        value: Option<&str>,
    ) -> Result<(), SettingsError>;

    /// Checks `settings` against the robots and the `[access]` policy (a policy it cannot
    /// honour is an error naming the key); run when read and again after the flags.
    fn check(
        settings: &Self::Settings,
        robots: &[RobotSettings],
        access: &AccessSettings,
        origin: &str,
    ) -> Result<(), SettingsError>;

    /// Whether a front end started with `running` can honour a reloaded `access` (SIGHUP);
    /// a reload one of them cannot honour is refused whole. By default: whether `running`
    /// passes [`FrontEndKind::check`] against it.
    fn accepts_reload(
        running: &Self::Settings,
        robots: &[RobotSettings],
        access: &AccessSettings,
        origin: &str,
    ) -> Result<(), SettingsError> {
        Self::check(running, robots, access, origin)
    }

    /// Whether it runs.
    fn enabled(settings: &Self::Settings) -> bool;

    /// Starts it on the server's robots. Must run inside an actix system.
    fn start<'a>(
        settings: &'a Self::Settings,
        ctx: &'a FrontEndContext,
    ) -> LocalBoxFuture<'a, Result<Self::Running, Self::Error>>;

    /// What it would do, one line of `--check-config`'s summary (`zenoh bridge: off`);
    /// `base_dir` resolves relative paths.
    fn describe(settings: &Self::Settings, base_dir: &Path) -> String;

    /// What it would do for robot `index`, a line under the robot's in the summary.
    fn describe_robot(_settings: &Self::Settings, _index: usize) -> Option<String> {
        None
    }

    /// The ports it would listen on besides the robots' (`--check-config` names a clash).
    fn ports(_settings: &Self::Settings, _robots: &[RobotSettings]) -> Vec<ListenPort> {
        Vec::new()
    }

    /// The files it reads at start (relative ones from `base_dir`), read and checked as the
    /// start would (`--check-config` of a file to start with, not a reload); the error
    /// names the key.
    fn check_files(
        _settings: &Self::Settings,
        _base_dir: &Path,
        _origin: &str,
    ) -> Result<(), SettingsError> {
        Ok(())
    }

    /// Whether going from `old` to `new` changes something only a restart applies (a reload
    /// applies none of a front end's settings). By default: whether they differ at all.
    fn needs_restart(old: &Self::Settings, new: &Self::Settings) -> bool {
        format!("{old:?}") != format!("{new:?}")
    }
}
