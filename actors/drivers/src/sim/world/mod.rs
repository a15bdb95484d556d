//! A pure 2-D simulation of one Pioneer 2-DX in a world of walls and objects, for the
//! simulated-robot driver actor.
//!
//! Nothing here touches actors, sockets or clocks: the caller owns time and advances the
//! simulation with [`SimRobot::step`]. The pieces:
//!
//! - [`WorldMap`]: the static world (bounds, walls, boxes, pillars, coloured objects, the
//!   robot start pose), read from a TOML world file such as `config/worlds/room.toml` (whose
//!   header comment documents the schema) or built in code.
//! - [`SimRobot`]: the robot's full state: motion with collisions, odometry, compass, bumpers,
//!   battery, sonars, laser, PTZ camera, ACTS vision and gripper, read out in the units of the
//!   Player 0.7.4a manual (Table 7).
//! - [`geom`]: ray casting and distance helpers.
//! - [`cast`]: the noise-free geometry of a robot's last laser and sonar castings, reused
//!   while nothing it was cast from has changed (a robot standing still only draws noise).
//!
//! Sensor mounting: the laser is on the robot's centre line `RobotParams::laser_x_mm` ahead of
//! the centre (default 0, i.e. at the centre); the camera is at the centre, 300 mm above the
//! floor; the sonars are at the P2-DX transducer poses in [`SONAR_POSES`].

pub mod camera;
pub mod cast;
pub mod geom;
pub mod gripper;
pub mod index;
pub mod laser;
pub mod map;
pub mod noise;
pub mod render;
pub mod rng;
pub mod robot;
pub mod simworld;
pub mod solids;

pub use camera::{Blob, CameraView, PtzReading};
pub use map::{
    BoxObstacle, ColouredObject, NearSolids, ObjectShape, Owner, Pillar, PuckPlacement, RayHit,
    RobotPlacement, TruthFormat, TruthLogSpec, Wall, WorldError, WorldMap, COLOUR_NAMES,
    ROBOT_RADIUS_MM,
};
pub use noise::Noise;
pub use robot::{
    Body, GripperReading, LaserSpec, MiscReading, PositionReading, RobotParams, SimRobot, Solids,
    LASER_MAX_MM, LASER_SAMPLES, SONAR_MAX_MM, SONAR_POSES,
};
pub use simworld::{Puck, SimWorld, TruthRecord};

#[cfg(test)]
mod tests;
