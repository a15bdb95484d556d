//! Player: a robot device server speaking the Player 0.7.4a protocol, on actix actors.
//!
//! A robot runs the server; any program on any machine connects over TCP, asks for devices
//! (laser, sonar, wheels, camera, gripper...), streams their data at its own rate and sends
//! commands. The parts:
//!
//! - [`access`]: who may connect, read and command (bind, allow-lists, shared key).
//! - [`notice`]: the error channel's notices to clients that asked for them.
//! - [`codec`]: the pure decoder of client messages (byte layouts are in `player_proto`).
//! - [`registry`]: one actor per robot, the device table and subscriptions.
//! - [`session`]: one actor per client connection: requests, timing, data modes, writes.
//! - [`driver`]: the messages between registry, sessions and driver actors.
//! - [`catalog`]: driver factories found by name, so configuration decides which driver
//!   backs which device.
//! - [`settings`]: configuration files and the manual's flags.
//! - [`record`]: recording every reading (and the commands and configs) to MCAP files.
//! - [`server`]: starting and stopping it all.
//! - [`timer`]: precise per-thread timers for client schedules.
//! - [`web`]: the web viewer and Foxglove WebSocket endpoint of each robot.
//! - [`zenoh_bridge`]: the robots on a Zenoh network (readings, commands, liveliness).
//! - [`actors`]: the driver actors (the simulated robot; real hardware drivers).
//!
//! See ARCHITECTURE.md for how data flows between them.
#![deny(missing_docs)]

pub mod access;
#[path = "../actors/mod.rs"]
pub mod actors;
pub mod catalog;
pub mod codec;
pub mod driver;
pub mod logging;
pub mod notice;
pub mod record;
pub mod registry;
pub mod server;
pub mod session;
pub mod settings;
pub mod timer;
pub mod web;
#[path = "zenoh/mod.rs"]
pub mod zenoh_bridge;

/// The catalog with every driver shipped with the server.
pub fn builtin_catalog() -> catalog::Catalog {
    let mut c = catalog::Catalog::new();
    actors::register_all(&mut c);
    c
}
