//! The driver kit of the player robot server: everything a driver needs, and nothing of
//! the server's insides.
//!
//! A driver is an actix actor that serves one or more device codes. It gets `Setup`,
//! `Shutdown`, `Command`, `Config`, `Stop`, `Subscribers` and `Terminate` from the robot's
//! registry and publishes readings through a [`driver::Publisher`]. The kit holds:
//!
//! - [`driver`]: those messages, the published data, [`driver::DeviceSpec`] (what a device
//!   allows) and [`driver::DriverHandle`] (the addresses the registry talks to).
//! - [`catalog`]: driver factories by name, the configuration a factory gets
//!   ([`catalog::DriverContext`]), `-stage` and the manual's device flags.
//! - [`link`]: links to hardware (serial ports, sockets): supervision, one reconnect loop
//!   with backoff, and the message handlers every such driver shares.
//! - [`plain`]: the message handlers every driver without a link shares (the simulator,
//!   replay, driver programs, passthrough, virtual devices): a [`plain::Driver`] writes
//!   only its own hooks.
//! - [`answer`]: a driver's answer to a config, for the client that sent it.
//! - [`source`]: reading, holding and writing other devices of the robot (virtual
//!   devices: a localizer, a planner driving the base under the registry's guard).
//! - [`world`]: what a driver knows of its robot's surroundings (outlines for viewers,
//!   solids for a map driver).
//! - [`labels`]: devices served under another code than their driver's own.
//! - [`fresh`]: the one rule for telling a new reading from one already taken (numbers,
//!   numbering afresh, readings overtaken), for every consumer of readings.
//! - [`log`]: bytes from outside, escaped for log lines; the rate limit of log lines.
//! - [`playback`]: play, pause, speed and seek for a driver that plays a recording back.
//! - [`thread`]: a driver on a thread of its own, for drivers that compute for long (a
//!   planner, a particle filter) and would otherwise hold up the registry and the others.
//! - [`intake`]: such a driver's subscriptions, with a bound on the readings waiting for
//!   it (a slow driver skips readings instead of falling behind without end).
//! - [`timer`]: precise per-thread timers (one `timerfd` per thread, deadlines on a shared
//!   grid): the sessions' schedules and the drivers' periodic readings.
//! - [`program`]: driver programs written in Rust: the framed protocol a program speaks
//!   with the server over its standard input and output, and a small blocking runtime.
//!
//! The actor parts (`driver`, `answer`, `source`, `world`, `labels`, `catalog`, `fresh`,
//! `link`, `plain`, `playback`, `thread`, `intake`, `timer`) are the default feature `actors`; a driver program
//! depends on the kit with `default-features = false` and gets `program` and `log` with no
//! dependencies at all.
//!
//! The core crate (sessions, registry, listener) depends on this crate; drivers depend on
//! it and never on the core, so a driver cannot reach into a session and the core names
//! no driver.
#![deny(missing_docs)]

#[cfg(feature = "actors")]
pub mod answer;
#[cfg(feature = "actors")]
pub mod catalog;
#[cfg(feature = "actors")]
pub mod driver;
#[cfg(feature = "actors")]
pub mod fresh;
#[cfg(feature = "actors")]
pub mod intake;
#[cfg(feature = "actors")]
pub mod labels;
#[cfg(feature = "actors")]
pub mod link;
pub mod log;
#[cfg(feature = "actors")]
pub mod plain;
#[cfg(feature = "actors")]
pub mod playback;
pub mod program;
#[cfg(feature = "actors")]
pub mod source;
#[cfg(feature = "actors")]
pub mod thread;
#[cfg(feature = "actors")]
pub mod timer;
#[cfg(feature = "actors")]
pub mod world;

/// actix, for the handlers [`link_driver_handlers!`] and [`driver_handlers!`] write in a
/// driver's crate.
#[cfg(feature = "actors")]
#[doc(hidden)]
pub use actix as __actix;
