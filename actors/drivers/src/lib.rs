//! Device driver actors. Each driver lives in its own module and registers a factory in
//! the catalog under its name; the core never names a device model.
//!
//! - [`sim`]: the simulated Pioneer 2-DX (every device).
//! - [`bench`](mod@bench): canned readings of every device at a fixed rate, for load tests.
//! - [`p2os`]: a real Pioneer 2 base over a serial line (`p s m g`).
//! - [`create`]: an iRobot Create 2 base over its Open Interface (`p m`).
//! - [`sick`]: a real SICK LMS-200 laser over a serial line (`l`).
//! - [`urg`]: a Hokuyo URG/UTM laser, SCIP 2.0 over a serial line or TCP (`l`, `L`).
//! - [`rplidar`]: a Slamtec RPLIDAR A1/A2/C1 laser over a serial line (`l`, `L`).
//! - [`laser`]: what the laser drivers share (the `l` view and the `L` full scan).
//! - [`ptz`]: a real Sony EVI-D30 pan-tilt-zoom camera over a serial line (`z`).
//! - [`acts`]: ACTS colour vision over TCP (`v`).
//! - [`passthrough`]: a device of another Player server served as a local device.
//! - [`replay`]: a recording (MCAP, as `-record` writes it) served as the robot's devices.
//! - [`mapfile`]: an occupancy grid map (a file, or the simulated world) as the map device
//!   `M` (`player_nav`'s loaders, `player_sim`'s rasteriser).
//! - [`odom`]: the base's odometry readings (`P` or `p`) decoded, for `amcl` and `wavefront`.
//! - [`amcl`]: where the robot is on a map (`player_nav`'s particle filter over the
//!   base's odometry, a laser and the map device), served as the localize device `H` and
//!   optionally a map-frame `p`.
//! - [`wavefront`]: the planner device `G`: goals planned on the map (`player_nav`'s A* or
//!   wavefront) and driven by VFH+ or regulated pure pursuit, the base held under the
//!   registry's guard.
//! - [`program`]: devices served by a driver program in any language over its standard
//!   input and output (docs/plugins.md).
//!
//! Drivers know the server only through the driver kit (`player_kit`); this crate does not
//! depend on the core, so no driver can reach into a session or the registry. What is pure
//! lives in crates of its own, beside the actors: the hardware drivers speak their devices'
//! protocols through `player_devices`, and the `sim` driver serves the world of
//! `player_sim`.

#![deny(missing_docs)]

use player_kit::catalog::Catalog;

pub mod acts;
pub mod amcl;
pub mod bench;
pub mod create;
pub mod laser;
pub mod mapfile;
pub mod odom;
pub mod p2os;
mod params;
pub mod passthrough;
pub mod program;
pub mod ptz;
pub mod replay;
pub mod rplidar;
pub mod sick;
pub mod sim;
pub mod urg;
pub mod wavefront;

/// Registers every shipped driver.
pub fn register_all(catalog: &mut Catalog) {
    sim::register(catalog);
    bench::register(catalog);
    p2os::register(catalog);
    create::register(catalog);
    sick::register(catalog);
    urg::register(catalog);
    rplidar::register(catalog);
    ptz::register(catalog);
    acts::register(catalog);
    replay::register(catalog);
    passthrough::register(catalog);
    program::register(catalog);
    mapfile::register(catalog);
    amcl::register(catalog);
    wavefront::register(catalog);
}
