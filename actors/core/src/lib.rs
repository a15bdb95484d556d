//! The core of the player robot server: a robot runs it; any program on any machine
//! connects over TCP, asks for devices, streams their data at its own rate and sends
//! commands. The parts:
//!
//! - [`access`]: who may connect, read and command (bind, allow-lists, shared key).
//! - [`notice`]: the error channel's notices to clients that asked for them.
//! - [`codec`]: the pure decoder of client messages (`player_proto`'s, re-exported).
//! - [`registry`]: one actor per robot, the device table and subscriptions; the guard every
//!   command passes (watchdog, e-stop, writer-left stop).
//! - [`session`]: one actor per client connection: requests, timing, data modes, writes.
//! - [`settings`]: configuration files and the manual's flags.
//! - [`server`]: starting and stopping it all.
//! - [`frontend`]: the front-end kit: robot handles, holding devices, attaching front ends.
//! - [`placement`]: which session thread a new client's session runs on.
//! - [`timer`]: precise per-thread timers for client schedules (the kit's, re-exported:
//!   drivers time their readings with it too).
//! - [`logging`]: the log drain and its rate limits.
//!
//! Drivers are known only through the driver kit (`player_kit`: messages, catalog), front
//! ends (the web viewer, the recorder, the Zenoh bridge, the ROS 2 front end: crates of
//! their own) as the front-end kit, [`frontend`], describes them; this crate never depends
//! on a driver or a front end. See ARCHITECTURE.md for how data flows.
#![deny(missing_docs)]

pub mod access;
pub use player_proto::codec;
pub mod frontend;
pub mod logging;
pub mod notice;
pub mod placement;
pub mod registry;
pub mod server;
pub mod session;
pub mod settings;
pub use player_kit::timer;

pub use player_kit::{catalog, driver};

/// For the macros of this crate (`bridge_robot_handlers!`), so their users need not name
/// actix.
#[doc(hidden)]
pub use actix as __actix;
