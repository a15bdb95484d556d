//! Player: a robot device server speaking the Player 0.7.4a protocol, on actix actors.
//!
//! This package is the `player` binary and what wires it: the core (`player_core`), the
//! driver kit (`player_kit`), the shipped drivers (`player_drivers`), the front ends
//! (`player_web`, `player_record`, `player_zenoh`, `player_ros2`) and the device emulators
//! (`player_emulators`). The core's modules are re-exported here under their own names
//! (`player::registry`, ...), the front ends as `player::web`, `player::record`,
//! `player::zenoh` and `player::ros2`, so programs that embed the server need one dependency.
//! [`frontends`] lists the front ends once; [`settings`] composes the core's configuration
//! with their sections, robot keys and flags; [`server`] starts the core and attaches them.
//!
//! See ARCHITECTURE.md for the crates, which may depend on which, and how data flows.
#![deny(missing_docs)]

pub mod frontends;
pub mod server;
pub mod settings;

pub use player_core::{access, codec, frontend, logging, notice, registry, session, timer};
pub use player_drivers as drivers;

pub mod check;
pub mod daemon;
pub use player_emulators as emulators;
pub use player_kit::{answer, catalog, driver, labels, link, source, world};
pub use player_record as record;
pub use player_ros2 as ros2;
pub use player_web as web;
pub use player_zenoh as zenoh;

/// The catalog with every driver shipped with the server.
pub fn builtin_catalog() -> catalog::Catalog {
    let mut c = catalog::Catalog::new();
    drivers::register_all(&mut c);
    c
}

/// Parses the command line (without the program name) with the shipped drivers: what the
/// `player` binary does.
pub fn parse_args(args: &[String]) -> Result<settings::Invocation, settings::SettingsError> {
    settings::parse_args_with(args, &builtin_catalog())
}
