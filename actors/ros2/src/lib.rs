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
