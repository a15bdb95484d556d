//! The wire side of the ROS 2 front end, pure (no actors, no runtime, no Zenoh): what a
//! ROS 2 node using `rmw_zenoh` puts on the network and what the server takes from it.
//! Every decoder here reads bytes that any host of the network may send, so each one
//! checks its lengths before it allocates; `fuzz/`'s `ros2_msg` and `rmw_attachment`
//! targets feed them (docs/fuzzing.md).
//!
//! - [`cdr`]: the CDR encoding of ROS 2 messages (little-endian, 4-byte encapsulation
//!   header, natural alignment), writer and bounded reader.
//! - [`msg`]: the messages published (`LaserScan`, `Odometry`, `TFMessage`, `Range`,
//!   `BatteryState`) and taken (`Twist`, `TwistStamped`, `Bool`).
//! - [`nav_msg`]: the navigation messages published (`OccupancyGrid`,
//!   `PoseWithCovarianceStamped`, `PoseArray`, `Path`) and taken (`initialpose`,
//!   `goal_pose`).
//! - [`types`]: their ROS 2 Jazzy type names and REP-2016 `RIHS01` type hashes.
//! - [`rmw`]: `rmw_zenoh`'s key expressions, liveliness tokens, QoS encoding, entity GIDs
//!   and the 33-byte attachment of every sample.
//! - [`convert`]: the player devices' readings as ROS 2 messages, `cmd_vel` as the
//!   position command.
//!
//! The front end itself (the Zenoh session, the robots' nodes, the settings) is the actor
//! crate `player-ros2` (`actors/ros2/`), which re-exports these modules under their old
//! paths (`player_ros2::msg`, ...).
#![deny(missing_docs)]

pub mod cdr;
pub mod convert;
pub mod msg;
pub mod nav_msg;
pub mod rmw;
pub mod types;
