//! A blocking client for Player 0.7.4a robot device servers.
//!
//! This is the Rust counterpart of the C++ `CRobot` class of the Player 0.7.4a manual
//! (Appendix A): connect over TCP, request access to devices with the manual's request
//! strings (`"srpw"`: read the sonar, write the position device), read rounds of data,
//! send commands and configs. It uses `std::net` only; the byte layouts come from
//! [`player_proto`], shared with the server.
//!
//! The manual's "hello world" (its Figure 3), which wanders about avoiding obstacles with
//! the sonar:
//!
//! ```no_run
//! use player_client::{Client, Error};
//!
//! fn main() -> Result<(), Error> {
//!     let mut robot = Client::connect("localhost:6665")?;
//!     robot.request("srpw")?.check()?; // sonar read, position write
//!     for _ in 0..1000 {
//!         let sonar = robot.read()?.sonar.unwrap_or_default().ranges;
//!         let turn = if u32::from(sonar[0]) + u32::from(sonar[1])
//!             < u32::from(sonar[6]) + u32::from(sonar[7])
//!         {
//!             -20 // turn 20 degrees per second
//!         } else {
//!             20
//!         };
//!         let speed = if sonar[3] < 500 { 0 } else { 100 };
//!         robot.set_speed(speed, turn)?;
//!     }
//!     robot.request("scpc")?; // close everything
//!     Ok(())
//! }
//! ```
//!
//! # The parts
//! - [`Client`]: the connection. [`Client::request`] sends a `dr` request and waits for the
//!   reply, returning a [`Grant`]; [`Client::read`] reads one round (one packet per device
//!   held with read access) into a [`Round`] that keeps every device's latest data;
//!   [`Client::read_packet`] and [`Client::read_new`] read single packets and the partial
//!   rounds of the push-new and pull-new data modes; [`Client::set_speed`],
//!   [`Client::set_ptz`], [`Client::gripper`] send commands; [`Client::set_frequency`],
//!   [`Client::set_data_mode`], [`Client::request_data`], [`Client::set_timestamps`],
//!   [`Client::set_motor_power`], [`Client::set_velocity_mode`] and
//!   [`Client::reset_odometry`] send configs.
//! - [`Round`]: the typed data of each device ([`Position`], [`Sonar`], [`Laser`], [`Misc`],
//!   [`Gripper`], [`Ptz`], [`Vision`]) and its timestamp.
//! - [`Grant`]: what a request was granted; [`parse_spec`] parses request strings.
//! - [`Error`]: one enum for everything, whose messages name the device involved.
//! - [`manual`]: the control steps of the manual's two sonar examples (Figure 3 and
//!   Appendix C.4) as pure functions, shared by the examples and the simulator's tests.
//! - [`avoid`]: a laser obstacle avoider that wanders a building for hours, as a pure step
//!   over one `l` scan (the `laser_avoid` example and the simulator's tests).
//!
//! # Data modes
//! By default the server sends a round of every readable device's current data 10 times a
//! second (continuous mode), and [`Client::read`] takes one round per call. In
//! request/reply mode each [`Client::request_data`] releases one round, read with
//! [`Client::read`]. This server's extensions: in push-new mode the server sends each
//! device's data only when it is new, and in pull-new mode each [`Client::request_data`]
//! releases a round of only the devices with new data (nothing at all if none is new);
//! read those with [`Client::read_new`] or [`Client::read_packet`].
//!
//! # Extensions: notices, emergency stop, key, device list
//! [`Client::set_notices`] turns on the server's error channel: notices saying why a
//! request, command or config was refused, that the watchdog or the emergency stop stopped
//! the robot, that a device failed or came back. They are queued as they arrive during
//! any read; take them with [`Client::take_notices`] or wait for one with
//! [`Client::wait_notice`]. [`Client::estop`] latches or releases the robot's emergency
//! stop, [`Client::present_key`] presents the server's shared key, and
//! [`Client::device_list`] asks for every device with its driver, state, readers and rate
//! ([`DeviceEntry`]). The wire format is in `docs/extensions.md`, the byte layouts in
//! [`player_proto::ext`].
//!
//! # Navigation devices
//! The map `M`, the localizer `H` (Player 1.6.5's layout), the planner `G`, the base's own
//! position `O` and its full-precision odometry `P` are read into [`Round`] like any
//! device. Their configs answer with data ([`Client::ask`], answers queued as they arrive):
//! [`Client::map_info`] and [`Client::download_map`] fetch the map tile by tile,
//! [`Client::particles`] the localizer's particles; [`Client::set_pose`],
//! [`Client::global_localization`], [`Client::set_goal`], [`Client::waypoints`],
//! [`Client::planner_enable`] and [`Client::planner_cancel`] do the rest.
//!
//! # Timestamps
//! With [`Client::set_timestamps`] on, the server puts the driver's timestamp (seconds and
//! microseconds since the Unix epoch) in front of each data payload; the client strips it
//! into [`Round::timestamps`].
#![deny(missing_docs)]

pub mod avoid;
mod client;
mod error;
mod grant;
pub mod manual;
mod nav;
mod round;

pub use client::{Answer, Client, MAX_QUEUED_ANSWERS, MAX_QUEUED_NOTICES};
pub use error::Error;
pub use grant::{parse_spec, satisfies, Grant, MAX_PAIRS};
pub use nav::{GoalWatch, GOAL_SETTLE};
pub use round::Round;

pub use player_proto as proto;
pub use player_proto::data::{Blob, Gripper, Laser, Misc, Position, Ptz, Sonar, Vision};
pub use player_proto::ext::{DeviceEntry, Notice};
pub use player_proto::message::ServerMessage;
pub use player_proto::scan::Scan;
pub use player_proto::{access, device, DataMode};

/// Gripper commands for [`Client::gripper`] (Pioneer 2 Gripper manual, Table 3-3).
pub mod grip {
    /// Open the paddles.
    pub const OPEN: u8 = 1;
    /// Close the paddles.
    pub const CLOSE: u8 = 2;
    /// Stop the paddles.
    pub const STOP: u8 = 3;
    /// Raise the lift.
    pub const LIFT_UP: u8 = 4;
    /// Lower the lift.
    pub const LIFT_DOWN: u8 = 5;
    /// Stop the lift.
    pub const LIFT_STOP: u8 = 6;
    /// Close the paddles and raise the lift.
    pub const STORE: u8 = 7;
    /// Lower the lift and open the paddles.
    pub const DEPLOY: u8 = 8;
    /// Stop paddles and lift.
    pub const HALT: u8 = 15;
    /// Close the paddles with pressure; the argument is the grasp time (1 to 100, in 20 ms).
    pub const PRESS: u8 = 16;
    /// Move the lift for a time; the argument is the carry time in 20 ms.
    pub const CARRY: u8 = 17;
}

/// Turns a command-line server address into one for [`Client::connect`]: `host` or an IP
/// address without a port gets the default port 6665, `host:port` and `[v6]:port` are
/// kept, and an empty string means `localhost:6665`.
///
/// ```
/// use player_client::with_default_port;
/// assert_eq!(with_default_port("tanis"), "tanis:6665");
/// assert_eq!(with_default_port("tanis:7000"), "tanis:7000");
/// assert_eq!(with_default_port("::1"), "[::1]:6665");
/// assert_eq!(with_default_port(""), "localhost:6665");
/// ```
pub fn with_default_port(addr: &str) -> String {
    use std::net::{IpAddr, SocketAddr};
    let addr = addr.trim();
    if addr.is_empty() {
        return format!("localhost:{}", Client::DEFAULT_PORT);
    }
    if addr.parse::<SocketAddr>().is_ok() {
        return addr.to_owned();
    }
    if let Ok(ip) = addr.parse::<IpAddr>() {
        return SocketAddr::new(ip, Client::DEFAULT_PORT).to_string();
    }
    if addr.contains(':') {
        addr.to_owned()
    } else {
        format!("{addr}:{}", Client::DEFAULT_PORT)
    }
}

#[cfg(test)]
mod peer_tests;
