//! The simulated world of the player robot server: a pure 2-D simulation of Pioneer 2-DX
//! robots (and TurtleBot-like bases) in a world of walls, objects and pucks.
//!
//! Nothing here touches actors, sockets or clocks, and the crate depends on no actix and no
//! tokio: the caller owns time and advances the simulation with [`SimRobot::step`] or
//! [`SimWorld`]'s steps. The `sim` driver (an actor in `player-drivers`) serves it to
//! clients; the device emulators (`player-emulators`) sense with it; `player-render` draws
//! it. The pieces:
//!
//! - [`WorldMap`]: the static world (bounds, walls, boxes, pillars, coloured objects, the
//!   robot start pose), read from a TOML world file such as `config/worlds/room.toml` (whose
//!   header comment documents the schema; the crate embeds its own copy as [`ROOM_TOML`])
//!   or built in code.
//! - [`SimRobot`]: the robot's full state: motion with collisions, odometry, compass, bumpers,
//!   battery, sonars, laser, PTZ camera, ACTS vision and gripper, read out in the units of the
//!   Player 0.7.4a manual (Table 7).
//! - [`SimWorld`]: the robots and pucks of one world, stepped together, the world file's
//!   events (robots carried elsewhere at set instants, [`WorldEvent`], [`Carry`]) and the
//!   truth log.
//! - [`geom`]: ray casting and distance helpers.
//! - [`cast`]: the noise-free geometry of a robot's last laser and sonar castings, reused
//!   while nothing it was cast from has changed (a robot standing still only draws noise).
//! - [`noise`] and [`rng`]: the seeded sensor and odometry noise.
//! - [`render`]: a world and its robots' readings drawn to an image (`player-render`).
//! - [`raster`]: a world's solids as an occupancy grid (the map of a simulated world).
//!
//! Sensor mounting: the laser is on the robot's centre line `RobotParams::laser_x_mm` ahead of
//! the centre (default 0, i.e. at the centre); the camera is at the centre, 300 mm above the
//! floor; the sonars are at the P2-DX transducer poses in [`SONAR_POSES`].
#![deny(missing_docs)]

pub mod camera;
pub mod cast;
pub mod geom;
pub mod gripper;
pub mod index;
pub mod laser;
pub mod map;
pub mod noise;
pub mod raster;
pub mod render;
pub mod rng;
pub mod robot;
pub mod simworld;
pub mod solids;

pub use camera::{Blob, CameraView, PtzReading};
pub use map::{
    BoxObstacle, ColouredObject, Destination, NearSolids, ObjectShape, Owner, Pillar,
    PuckPlacement, RayHit, RobotPlacement, TruthFormat, TruthLogSpec, Wall, WorldError, WorldEvent,
    WorldMap, COLOUR_NAMES, ROBOT_RADIUS_MM, ROOM_TOML,
};
pub use noise::Noise;
pub use robot::{
    Body, GripperReading, LaserSpec, MiscReading, OdometryReading, PositionReading, RobotParams,
    SimRobot, Solids, LASER_MAX_MM, LASER_SAMPLES, SONAR_MAX_MM, SONAR_POSES,
};
pub use simworld::{Carry, Puck, SimWorld, TruthRecord};

/// The world's fixed physics step, seconds: [`SimWorld`] steps by it, and world events
/// fall on whole steps.
pub const STEP_S: f64 = 0.01;

#[cfg(test)]
mod tests;
