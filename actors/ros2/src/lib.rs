//! The ROS 2 face of the player server: what a ROS 2 node using `rmw_zenoh` (Jazzy and
//! later) expects to find on a Zenoh network, so `ros2 topic list`, rviz2 and nav2 see a
//! robot with no ROS installed on it.
//!
//! - [`cdr`]: the CDR encoding of ROS 2 messages (little-endian, 4-byte encapsulation
//!   header, natural alignment), writer and bounded reader.
//! - [`msg`]: the messages published (`LaserScan`, `Odometry`, `TFMessage`, `Range`,
//!   `BatteryState`) and taken (`Twist`, `TwistStamped`).
//! - [`types`]: their ROS 2 Jazzy type names and REP-2016 `RIHS01` type hashes.
//! - [`rmw`]: `rmw_zenoh`'s key expressions, liveliness tokens, QoS encoding, entity GIDs
//!   and the 33-byte attachment of every sample.
//! - [`convert`]: the player devices' readings as ROS 2 messages, `cmd_vel` as the
//!   position command.
//! - [`settings`]: the `[ros2]` section.
//! - [`bridge`]: the front end itself: a Zenoh session, a ROS 2 node per robot.
#![deny(missing_docs)]

pub mod bridge;
pub mod cdr;
pub mod convert;
pub mod msg;
pub mod rmw;
pub mod settings;
pub mod types;

pub use bridge::{start, Ros2Error, Ros2FrontEnd};
pub use settings::{Ros2Settings, SYNTAX};

use futures::future::LocalBoxFuture;
use player_core::access::AccessSettings;
use player_core::frontend::{FrontEndContext, FrontEndKind};
use player_core::settings::{FrontEndSyntax, RobotSettings, Settings, SettingsError};

/// The ROS 2 front end as a front end of the server: on with `[ros2] enabled` or `--ros2`.
pub struct Ros2;

impl FrontEndKind for Ros2 {
    const NAME: &'static str = "ros2";
    const SYNTAX: FrontEndSyntax = SYNTAX;
    type Settings = Ros2Settings;
    type Running = Ros2FrontEnd;
    type Error = Ros2Error;

    fn settings(core: &Settings) -> Result<Ros2Settings, SettingsError> {
        Ros2Settings::from_settings(core)
    }

    /// `--ros2`: on.
    fn apply_flag(
        settings: &mut Ros2Settings,
        _flag: &str,
        _value: Option<&str>,
    ) -> Result<(), SettingsError> {
        settings.enabled = true;
        Ok(())
    }

    fn check(
        settings: &Ros2Settings,
        robots: &[RobotSettings],
        access: &AccessSettings,
        origin: &str,
    ) -> Result<(), SettingsError> {
        settings.check_against(robots, access, origin)
    }

    fn enabled(settings: &Ros2Settings) -> bool {
        settings.enabled
    }

    fn start<'a>(
        settings: &'a Ros2Settings,
        ctx: &'a FrontEndContext,
    ) -> LocalBoxFuture<'a, Result<Ros2FrontEnd, Ros2Error>> {
        Box::pin(start(settings, ctx))
    }

    fn describe(settings: &Ros2Settings, _base_dir: &std::path::Path) -> String {
        if !settings.enabled {
            return "ros2 front end: off".into();
        }
        format!(
            "ros2 front end: {} mode, domain {}, listen {:?}, connect {:?}, cmd_vel {}",
            settings.mode,
            settings.domain_id,
            settings.listen,
            settings.connect,
            if settings.write { "obeyed" } else { "ignored" }
        )
    }
}
