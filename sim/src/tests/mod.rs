//! Scenario tests for the simulator, against geometry that can be checked by hand, by
//! topic; here the helpers they share.

use std::sync::Arc;

use crate::camera::{PtzReading, ZOOM_MAX};
use crate::gripper::{beams, cmd, state};
use crate::robot::{AXLE_MM, WHEEL_ACCEL_MM_S2};
use crate::*;

/// The robot at (x, y) facing `heading_deg` in `map`, its direct-mode commands taking
/// effect at once (so that distances and angles are the kinematics' exactly; the wheels'
/// acceleration has tests of its own, with `ramped_robot_in`).
fn robot_in(map: WorldMap, x: f64, y: f64, heading_deg: f64) -> SimRobot {
    SimRobot::new(
        Arc::new(map),
        RobotParams {
            start_pose: Some((x, y, heading_deg.to_radians())),
            wheel_accel_mm_s2: f64::INFINITY,
            ..RobotParams::default()
        },
    )
}

/// As `robot_in`, with the Pioneer's wheel acceleration (the default).
fn ramped_robot_in(map: WorldMap, x: f64, y: f64, heading_deg: f64) -> SimRobot {
    SimRobot::new(
        Arc::new(map),
        RobotParams {
            start_pose: Some((x, y, heading_deg.to_radians())),
            ..RobotParams::default()
        },
    )
}

/// Steps `seconds` in 10 ms steps.
fn run(r: &mut SimRobot, seconds: f64) {
    for _ in 0..(seconds * 100.0).round() as usize {
        r.step(0.01);
    }
}

fn near(actual: f64, expected: f64, tol: f64) -> bool {
    (actual - expected).abs() <= tol
}

fn err(text: &str) -> String {
    WorldMap::from_toml_str(text).unwrap_err().to_string()
}

/// `r` with the Pioneer's noise and `seed`.
fn noisy(mut r: SimRobot, seed: u64) -> SimRobot {
    r.set_noise(Noise::PIONEER, seed);
    r
}

mod camera;
mod casting;
mod dump;
mod events;
mod file;
mod laser;
mod motion;
mod noise;
mod raster;
mod sensors;
