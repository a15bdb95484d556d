//! One simulated Pioneer 2-DX in a `WorldMap`: differential-drive motion with collisions,
//! odometry, compass, bumpers, battery, 16 sonars, a SICK LMS-200 laser, a Sony PTZ camera
//! with ACTS blob tracking, and the gripper.
//!
//! Frames and units. The world frame is the map's: x east, y north, mm, headings radians
//! counter-clockwise from +x (the Rust API) or degrees (readings). Readings use the units of
//! the Player 0.7.4a manual, Table 7.
//!
//! Mounting. The laser sits on the robot's centre line `RobotParams::laser_x_mm` ahead of the
//! centre (default 0: at the centre), scanning from the robot's right (index 0) through straight
//! ahead (180) to its left (360). The camera sits at the robot centre. Sonars are at the P2-DX
//! transducer poses of `SONAR_POSES`.
//!
//! Realism. A robot made with [`SimRobot::new`] has exact sensors; [`SimRobot::set_noise`]
//! (which `SimWorld` calls with the world's settings, [`Noise::PIONEER`] unless the world file
//! says otherwise) makes its sonar, laser and odometry stray as a real Pioneer's do. Its
//! drive accelerates as the Pioneer's controller does: each wheel at
//! [`RobotParams::wheel_accel_mm_s2`] in direct wheel mode, translation and rotation at
//! [`TRANS_ACCEL_MM_S2`] and [`ROT_ACCEL_DEG_S2`] in separate mode.
//!
//! This module is the robot's state, its motion and its other devices; the sonars' casting
//! is in `sonar`, the laser's (`l` and `L`) in `scan`.

use std::sync::Arc;

use crate::camera::{Blob, CameraView, Ptz, PtzReading};
use crate::cast::{CastInputs, CastKind, Castings};
pub use crate::geom::Body;
use crate::geom::{normalize_angle, ray_circle, Vec2};
use crate::gripper::Gripper;
pub use crate::laser::{LaserSpec, LASER_MAX_MM};
use crate::map::{WorldMap, ROBOT_RADIUS_MM};
use crate::noise::{self, Noise, NoiseKey};
use crate::rng::Rng;

mod scan;
mod sonar;

/// Translational speed limit, mm/s.
pub const MAX_SPEED_MM_S: f64 = 500.0;
/// Rotational speed limit, degrees/s.
pub const MAX_TURN_DEG_S: f64 = 100.0;
/// Translational acceleration in separate (VEL/RVEL) mode, mm/s^2.
pub const TRANS_ACCEL_MM_S2: f64 = 300.0;
/// Rotational acceleration in separate (VEL/RVEL) mode, degrees/s^2.
pub const ROT_ACCEL_DEG_S2: f64 = 100.0;
/// Acceleration of each wheel in direct wheel (VEL2) mode, mm/s^2. The manual (section 3.6)
/// calls direct mode "faster but jerkier (higher acceleration)" than the separate mode's
/// profile; P2OS has no figure for it, so this is the separate mode's translational
/// acceleration doubled: a stop from 500 mm/s takes a quarter of a second.
pub const WHEEL_ACCEL_MM_S2: f64 = 2.0 * TRANS_ACCEL_MM_S2;
/// Distance between the drive wheels, mm.
pub const AXLE_MM: f64 = 320.0;
/// Longest physics sub-step, seconds; `step` splits longer steps.
pub const PHYSICS_STEP_S: f64 = 0.01;
/// `step` simulates at most this many seconds per call.
pub const MAX_STEP_S: f64 = 10.0;
/// Sonar maximum range (reported when nothing is in the cone), mm.
pub const SONAR_MAX_MM: f64 = 5000.0;
/// Half-width of a sonar cone, degrees.
pub const SONAR_HALF_CONE_DEG: f64 = 15.0;
/// Rays cast across each sonar cone (evenly spaced, edges included).
pub const SONAR_RAYS: usize = 7;
/// Laser samples per scan (180 degrees at 0.5 degree steps).
pub const LASER_SAMPLES: usize = 361;
/// Battery voltage at start, volts.
pub const BATTERY_FULL_V: f64 = 13.0;
/// The battery never reads below this, volts.
pub const BATTERY_FLOOR_V: f64 = 10.0;
/// Battery drain per mm of wheel travel (left + right averaged, including turning), volts.
/// About 100 minutes of driving at full speed from full to the floor.
pub const BATTERY_DRAIN_V_PER_MM: f64 = 1e-6;

/// The Pioneer 2-DX sonar ring (one table, in the protocol crate).
pub use player_proto::data::SONAR_POSES;

/// Height of a robot's colour marking above the floor, mm (what other cameras see).
pub const ROBOT_HEIGHT_MM: f64 = 500.0;

/// What a sensor ray meets besides the map: other robots and solid bodies, as discs.
pub trait Solids {
    /// The nearest solid disc the ray from `origin` along unit `dir` meets closer than
    /// `max`: the distance to it and its centre.
    fn first_hit(&self, origin: Vec2, dir: Vec2, max: f64) -> Option<(f64, Vec2)>;

    /// Puts into `out` the solids that can meet a ray from `origin` within `half` radians
    /// (less than a right angle) of the unit vector `axis`, and says `true`; or says `false` (the default) when the rays are to be
    /// cast at `self` itself.
    fn cone(&self, _origin: Vec2, _axis: Vec2, _half: f64, _out: &mut Vec<Body>) -> bool {
        false
    }
}

impl Solids for &[Body] {
    fn cone(&self, origin: Vec2, axis: Vec2, half: f64, out: &mut Vec<Body>) -> bool {
        out.clear();
        let (sin_half, cos_half) = half.sin_cos();
        out.extend(self.iter().filter(|b| {
            if !b.solid {
                return false;
            }
            // Within the cone widened by the disc's half-angle b (sin b = r / dist): the
            // angle a to the axis satisfies a <= half + b, i.e. cos a >= cos(half + b).
            let d = b.center - origin;
            let dist2 = d.dot(d);
            let r2 = b.radius * b.radius;
            if dist2 <= r2 {
                return true;
            }
            let dist = dist2.sqrt();
            let (sin_b, cos_b) = (b.radius / dist, (1.0 - r2 / dist2).sqrt());
            let cos_a = d.dot(axis) / dist;
            // cos(half + b) = cos half cos b - sin half sin b (when half + b < pi).
            let limit = cos_half * cos_b - sin_half * sin_b;
            cos_a >= limit - 1e-9
        }));
        true
    }

    fn first_hit(&self, origin: Vec2, dir: Vec2, max: f64) -> Option<(f64, Vec2)> {
        let mut best: Option<(f64, Vec2)> = None;
        for b in self.iter().filter(|b| b.solid) {
            if let Some(t) = ray_circle(origin, dir, b.center, b.radius) {
                if t < max && best.is_none_or(|(d, _)| t < d) {
                    best = Some((t, b.center));
                }
            }
        }
        best
    }
}

/// Odometry that drifts: integrated from the wheels' motion with random errors.
#[derive(Debug, Clone)]
struct NoisyOdometry {
    rng: Rng,
    /// Standard deviations: translation error as a fraction of distance, rotation error as a
    /// fraction of angle turned (and radians of heading error per metre driven).
    sigma: (f64, f64),
    /// The pose odometry believes, in the odometry frame: x, y mm, heading radians.
    pose: (f64, f64, f64),
}

impl NoisyOdometry {
    /// Adds one sub-step's motion: `ds` mm driven, `dth` radians turned.
    fn integrate(&mut self, ds: f64, dth: f64) {
        let (st, sr) = self.sigma;
        if ds.to_bits() == 0 && dth.to_bits() == 0 && st.is_finite() && sr.is_finite() {
            // Standing still (the common case of a served robot nobody drives): each error
            // below is a finite draw times zero, so `ds_m` and `dth_m` come out +0.0
            // whatever the draws. Skip the draws' logarithms and cosines, not their place
            // in the sequence (two uniforms per normal draw), and move the pose by the same
            // zeros as the general case does.
            self.rng.skip(6);
            let (x, y, th) = self.pose;
            let mid = th + 0.0;
            self.pose = (
                x + 0.0 * mid.cos(),
                y + 0.0 * mid.sin(),
                normalize_angle(th + 0.0),
            );
            return;
        }
        self.integrate_drawn(ds, dth);
    }

    /// [`NoisyOdometry::integrate`] with every draw made.
    fn integrate_drawn(&mut self, ds: f64, dth: f64) {
        let (st, sr) = self.sigma;
        // Random-walk errors whose variance grows with distance and angle: over 1 m the
        // translation error is about `st` of it, over a full turn the rotation error `sr`.
        let ds_m = ds + self.rng.gaussian() * st * (ds.abs() * 1000.0).sqrt();
        let dth_m = dth
            + self.rng.gaussian() * sr * (dth.abs() * std::f64::consts::TAU).sqrt()
            + self.rng.gaussian() * sr * (ds.abs() / 1000.0).sqrt();
        let (x, y, th) = self.pose;
        let mid = th + dth_m / 2.0;
        self.pose = (
            x + ds_m * mid.cos(),
            y + ds_m * mid.sin(),
            normalize_angle(th + dth_m),
        );
    }
}

/// How a `SimRobot` starts.
#[derive(Debug, Clone, PartialEq)]
pub struct RobotParams {
    /// Motor power on at start (a real P2OS starts with it off; the simulator defaults to on).
    pub motors_on_at_start: bool,
    /// Start pose (x mm, y mm, heading **radians**) overriding the map's start pose.
    pub start_pose: Option<(f64, f64, f64)>,
    /// Battery voltage at start, volts.
    pub battery_volts: f64,
    /// Laser mount: distance ahead of the robot centre on its centre line, mm.
    pub laser_x_mm: f64,
    /// Acceleration of each wheel in direct wheel mode, mm/s^2 (default
    /// [`WHEEL_ACCEL_MM_S2`]; `f64::INFINITY` makes commands take effect at once).
    pub wheel_accel_mm_s2: f64,
    /// The laser: field of view, resolution, range (default: the Pioneer's SICK LMS-200).
    pub laser: LaserSpec,
}

impl Default for RobotParams {
    fn default() -> RobotParams {
        RobotParams {
            motors_on_at_start: true,
            start_pose: None,
            battery_volts: BATTERY_FULL_V,
            laser_x_mm: 0.0,
            wheel_accel_mm_s2: WHEEL_ACCEL_MM_S2,
            laser: LaserSpec::default(),
        }
    }
}

/// Odometry and state for the `p` device (manual Table 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositionReading {
    /// mm forward along the odometry origin's heading.
    pub x: i32,
    /// mm to the left of the odometry origin's heading.
    pub y: i32,
    /// Degrees counter-clockwise from the odometry origin's heading, 0..359.
    pub heading: u16,
    /// Actual translational speed, mm/s, positive forward.
    pub speed: i16,
    /// Actual turn rate, degrees/s, positive counter-clockwise.
    pub turn_rate: i16,
    /// World heading (0 = east), even degrees 0..358.
    pub compass: u16,
    /// 1 while the robot is pushing against something, else 0.
    pub stall: u8,
}

/// Odometry at full precision, for the `P` device (the `p` device rounds it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OdometryReading {
    /// mm forward along the odometry origin's heading.
    pub x: f64,
    /// mm to the left of the odometry origin's heading.
    pub y: f64,
    /// Radians counter-clockwise from the odometry origin's heading, in [0, 2 pi).
    pub heading: f64,
    /// Actual translational speed, mm/s, positive forward.
    pub speed: f64,
    /// Actual turn rate, degrees/s, positive counter-clockwise.
    pub turn_rate: f64,
    /// Whether the robot is pushing against something.
    pub stall: bool,
}

/// Bumpers and battery for the `m` device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MiscReading {
    /// Front bumper segments (low 5 bits; bit 0 = the robot's left end .. bit 4 = right end).
    pub front_bumpers: u8,
    /// Rear bumper segments (low 5 bits; bit 0 = the robot's right end .. bit 4 = left end).
    pub rear_bumpers: u8,
    /// Battery voltage, decivolts.
    pub voltage: u8,
}

/// The two bytes of the `g` device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GripperReading {
    /// Paddle and lift state bits (see `gripper::state`).
    pub state: u8,
    /// Break-beam and paddle switch bits (see `gripper::beams`).
    pub beams: u8,
}

/// The full state of one simulated robot in a world.
#[derive(Debug, Clone)]
pub struct SimRobot {
    map: Arc<WorldMap>,
    params: RobotParams,
    /// True pose: x, y mm, heading radians in (-pi, pi].
    pose: (f64, f64, f64),
    odom_origin: (f64, f64, f64),
    /// Commanded speed (mm/s) and turn rate (degrees/s), clamped.
    command: (f64, f64),
    /// Velocities the drive is producing (mm/s, degrees/s); ramps in separate mode.
    drive: (f64, f64),
    /// Velocities actually achieved in the last sub-step (mm/s, degrees/s).
    actual: (f64, f64),
    motors_on: bool,
    separate_mode: bool,
    stalled: bool,
    front_bumpers: u8,
    rear_bumpers: u8,
    battery_v: f64,
    ptz: Ptz,
    gripper: Gripper,
    elapsed: f64,
    /// Physics sub-steps so far (what sensor noise is keyed on).
    substeps: u64,
    noisy_odometry: Option<NoisyOdometry>,
    noise: Noise,
    seed: u64,
    /// The noise-free geometry of the last laser and sonar castings and their inputs.
    castings: Castings,
}

impl SimRobot {
    /// A robot at `params.start_pose`, or the map's start pose, with odometry zeroed there.
    pub fn new(map: Arc<WorldMap>, params: RobotParams) -> SimRobot {
        let (x, y, th) = params.start_pose.unwrap_or_else(|| map.start_pose());
        let pose = (x, y, normalize_angle(th));
        SimRobot {
            map,
            motors_on: params.motors_on_at_start,
            battery_v: params.battery_volts.max(BATTERY_FLOOR_V),
            params,
            pose,
            odom_origin: pose,
            command: (0.0, 0.0),
            drive: (0.0, 0.0),
            actual: (0.0, 0.0),
            separate_mode: false,
            stalled: false,
            front_bumpers: 0,
            rear_bumpers: 0,
            ptz: Ptz::default(),
            gripper: Gripper::default(),
            elapsed: 0.0,
            substeps: 0,
            noisy_odometry: None,
            noise: Noise::NONE,
            seed: 0,
            castings: Castings::default(),
        }
    }

    /// Sets how the robot's sensors and odometry stray from the truth, with the random
    /// sequence of `seed` (the same seed and commands give the same readings). Restarts
    /// odometry at the current pose. [`Noise::NONE`] (the default of `new`) is exact.
    pub fn set_noise(&mut self, noise: Noise, seed: u64) {
        self.set_odometry_noise(noise.odometry, seed);
        self.noise = noise;
        self.seed = seed;
    }

    /// The robot's noise settings.
    pub fn noise(&self) -> &Noise {
        &self.noise
    }

    /// How many laser and sonar readings so far cast their rays afresh; the others reused
    /// the geometry of the last casting, their inputs unchanged (a copy of the robot
    /// starts counting from 0 with nothing kept).
    pub fn castings(&self) -> (u64, u64) {
        (self.castings.laser.casts(), self.castings.sonar.casts())
    }

    /// The noise draws of `draw` (a sensor's base plus an index) at the current instant.
    fn noise_rng(&self, draw: u64) -> Rng {
        NoiseKey {
            seed: self.seed,
            step: self.substeps,
            draw,
        }
        .rng()
    }

    /// A uniform draw in [0, 1) of sonar `k` for the spot `at` of the world: the same for the
    /// same seed, sonar, `what` and cell of `cell_mm` whenever the reading is taken.
    fn spot_uniform(&self, k: usize, what: u64, at: Vec2, cell_mm: f64) -> f64 {
        let cell = (
            (at.x / cell_mm).floor() as i64,
            (at.y / cell_mm).floor() as i64,
        );
        self.spot_rng(k, what, cell).uniform()
    }

    /// A standard normal draw of sonar `k` for the spot `at` of the world that varies
    /// smoothly with `at`: normal draws at the corners of cells of
    /// [`noise::RANGE_CELL_MM`], interpolated (and scaled back to a unit variance), so a
    /// robot moving a little reads a little differently.
    fn spot_gaussian(&self, k: usize, at: Vec2) -> f64 {
        let (fx, fy) = (at.x / noise::RANGE_CELL_MM, at.y / noise::RANGE_CELL_MM);
        let (cx, cy) = (fx.floor(), fy.floor());
        let (tx, ty) = (fx - cx, fy - cy);
        let (cx, cy) = (cx as i64, cy as i64);
        let mut sum = 0.0;
        let mut weights = 0.0;
        for (dx, wx) in [(0, 1.0 - tx), (1, tx)] {
            for (dy, wy) in [(0, 1.0 - ty), (1, ty)] {
                let w = wx * wy;
                sum += w * self
                    .spot_rng(k, noise::RANGE, (cx + dx, cy + dy))
                    .gaussian();
                weights += w * w;
            }
        }
        sum / weights.sqrt()
    }

    /// The draws of sonar `k` for the world's cell `cell` (of whatever size `what` uses).
    fn spot_rng(&self, k: usize, what: u64, cell: (i64, i64)) -> Rng {
        NoiseKey {
            seed: self.seed,
            step: (cell.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ (cell.1 as u64).rotate_left(32),
            draw: noise::SONAR_SPOT + what + ((k as u64) << 8),
        }
        .rng()
    }

    /// Turns odometry noise on (`Some((translation, rotation))` standard deviations: fractions
    /// of the distance driven per metre and of the angle turned per full turn; the heading also
    /// drifts by `rotation` radians per square-root metre) with the random sequence of `seed`,
    /// or off (`None`: odometry is exact, the default). Restarts odometry at the current pose.
    /// Sensor noise is left as it is (see [`SimRobot::set_noise`]).
    pub fn set_odometry_noise(&mut self, noise: Option<(f64, f64)>, seed: u64) {
        self.noise.odometry = noise;
        self.odom_origin = self.pose;
        self.noisy_odometry = noise.map(|sigma| NoisyOdometry {
            rng: Rng::new(seed),
            sigma,
            pose: (0.0, 0.0, 0.0),
        });
    }

    /// The world the robot lives in.
    pub fn map(&self) -> &Arc<WorldMap> {
        &self.map
    }

    /// The parameters the robot was made with.
    pub fn params(&self) -> &RobotParams {
        &self.params
    }

    /// Simulated seconds so far.
    pub fn elapsed(&self) -> f64 {
        self.elapsed
    }

    /// Advances the simulation by `dt` seconds, in sub-steps of at most `PHYSICS_STEP_S`.
    /// Non-positive or non-finite `dt` does nothing; more than `MAX_STEP_S` is cut to it.
    pub fn step(&mut self, dt: f64) {
        self.step_among(dt, &[]);
    }

    /// As [`SimRobot::step`], with `others` (other robots, pucks) in the world: solid ones
    /// stop the robot as walls do.
    pub fn step_among(&mut self, dt: f64, others: &[Body]) {
        if !dt.is_finite() || dt <= 0.0 {
            return;
        }
        let dt = dt.min(MAX_STEP_S);
        let n = (dt / PHYSICS_STEP_S).ceil().max(1.0);
        let h = dt / n;
        for _ in 0..n as usize {
            self.substep(h, others);
        }
    }

    /// The client's position command: speed mm/s (clamped to +-500) and turn rate degrees/s
    /// counter-clockwise (clamped to +-100).
    pub fn set_velocity(&mut self, speed_mm_s: i16, turn_deg_s: i16) {
        self.command = (
            f64::from(speed_mm_s).clamp(-MAX_SPEED_MM_S, MAX_SPEED_MM_S),
            f64::from(turn_deg_s).clamp(-MAX_TURN_DEG_S, MAX_TURN_DEG_S),
        );
    }

    /// Motor power. While off the robot does not move; the last command is kept and takes
    /// effect again when power returns.
    pub fn set_motor_power(&mut self, on: bool) {
        self.motors_on = on;
        if !on {
            self.drive = (0.0, 0.0);
            self.actual = (0.0, 0.0);
        }
    }

    /// Whether motor power is on.
    pub fn motor_power(&self) -> bool {
        self.motors_on
    }

    /// `true`: separate translational/rotational control, translation and rotation each
    /// ramped at its own acceleration; `false` (the default): direct wheel control, each
    /// wheel ramped at the (higher) [`RobotParams::wheel_accel_mm_s2`].
    pub fn set_velocity_mode(&mut self, separate: bool) {
        self.separate_mode = separate;
    }

    /// Whether separate (ramped) velocity mode is on.
    pub fn velocity_mode_separate(&self) -> bool {
        self.separate_mode
    }

    /// Makes the current true pose the odometry origin: x, y and heading read 0 afterwards.
    pub fn reset_odometry(&mut self) {
        self.odom_origin = self.pose;
        if let Some(o) = self.noisy_odometry.as_mut() {
            o.pose = (0.0, 0.0, 0.0);
        }
    }

    /// PTZ targets (pan, tilt degrees; zoom 0..1023), clamped to the camera's ranges.
    pub fn set_ptz(&mut self, pan: i16, tilt: i16, zoom: i16) {
        self.ptz.command(pan, tilt, zoom);
    }

    /// A P2OS gripper command (see `gripper::cmd`); `arg` matters only for LIFTcarry.
    pub fn gripper_command(&mut self, cmd: u8, arg: u8) {
        self.gripper.command(cmd, arg);
    }

    /// Speed 0, turn 0 at once, without ramps (the safe state).
    pub fn stop(&mut self) {
        self.command = (0.0, 0.0);
        self.drive = (0.0, 0.0);
        self.actual = (0.0, 0.0);
    }

    /// Moves the robot to a world pose (x, y mm, heading radians) without touching odometry's
    /// origin, e.g. to set up a scene. No collision check.
    pub fn set_true_pose(&mut self, x: f64, y: f64, heading_rad: f64) {
        self.pose = (x, y, normalize_angle(heading_rad));
    }

    /// The robot picked up and put down at a world pose (x, y mm, heading radians), as
    /// someone carries a real one: its wheels turned nothing meanwhile, so its odometry
    /// reads what it read before (exact odometry's origin moves with the robot); its wheels
    /// stand still (the command is kept: a driven robot speeds up again at its
    /// acceleration); nothing presses its bumpers. No collision check.
    pub fn carry_to(&mut self, x: f64, y: f64, heading_rad: f64) {
        let heading = normalize_angle(heading_rad);
        if self.noisy_odometry.is_none() {
            // The odometry pose relative to the origin, kept: the new origin is where that
            // pose, taken from the new true pose backwards, starts.
            let (px, py, th) = self.pose;
            let (ox, oy, oth) = self.odom_origin;
            let d = Vec2::new(px - ox, py - oy).rotated(-oth);
            let new_oth = heading - (th - oth);
            let o = Vec2::new(x, y) - d.rotated(new_oth);
            self.odom_origin = (o.x, o.y, new_oth);
        }
        self.pose = (x, y, heading);
        self.drive = (0.0, 0.0);
        self.actual = (0.0, 0.0);
        self.release();
    }

    /// True pose in the world frame: x mm, y mm, heading radians in (-pi, pi].
    pub fn true_pose(&self) -> (f64, f64, f64) {
        self.pose
    }

    /// Whether the last sub-step was blocked by an obstacle.
    pub fn stalled(&self) -> bool {
        self.stalled
    }

    /// Battery voltage, volts.
    pub fn battery_volts(&self) -> f64 {
        self.battery_v
    }

    /// Odometry (x mm, y mm, heading radians, not wrapped) as the odometry frame has it.
    fn odometry_pose(&self) -> (Vec2, f64) {
        let (x, y, th) = self.pose;
        match &self.noisy_odometry {
            Some(o) => (Vec2::new(o.pose.0, o.pose.1), o.pose.2),
            None => {
                let (ox, oy, oth) = self.odom_origin;
                (Vec2::new(x - ox, y - oy).rotated(-oth), th - oth)
            }
        }
    }

    /// Odometry, speeds and stall at full precision (the same instant's `position`
    /// rounded is the 0.7.4a reading).
    pub fn odometry_reading(&self) -> OdometryReading {
        let (d, th) = self.odometry_pose();
        OdometryReading {
            x: d.x,
            y: d.y,
            heading: th.rem_euclid(std::f64::consts::TAU),
            speed: self.actual.0,
            turn_rate: self.actual.1,
            stall: self.stalled,
        }
    }

    /// Odometry, speeds, compass and stall.
    pub fn position(&self) -> PositionReading {
        let th = self.pose.2;
        let (d, odom_th) = self.odometry_pose();
        let heading = odom_th.to_degrees().round().rem_euclid(360.0);
        let compass = (th.to_degrees() / 2.0).round().rem_euclid(180.0) * 2.0;
        PositionReading {
            x: d.x.round() as i32,
            y: d.y.round() as i32,
            heading: heading as u16,
            speed: self.actual.0.round() as i16,
            turn_rate: self.actual.1.round() as i16,
            compass: compass as u16,
            stall: u8::from(self.stalled),
        }
    }

    /// What a casting depends on, for the cache.
    fn cast_inputs<'a>(&'a self, kind: CastKind, from: Vec2, bodies: &'a [Body]) -> CastInputs<'a> {
        CastInputs {
            kind,
            pose: self.pose,
            from,
            laser: self.params.laser,
            laser_x_mm: self.params.laser_x_mm,
            noise: &self.noise,
            seed: self.seed,
            bodies,
        }
    }

    /// Distance along a ray to the first solid of the map or of `solids`, capped at `max`.
    fn range_with(&self, origin: Vec2, angle: f64, max: f64, solids: &impl Solids) -> f64 {
        let dir = Vec2::from_angle(angle);
        let d = self.map.solids_near(origin, max).range(origin, dir, max);
        match solids.first_hit(origin, dir, d) {
            Some((t, _)) => t.min(d),
            None => d,
        }
    }

    /// Bumpers and battery.
    pub fn misc(&self) -> MiscReading {
        MiscReading {
            front_bumpers: self.front_bumpers,
            rear_bumpers: self.rear_bumpers,
            voltage: (self.battery_v * 10.0).round().clamp(0.0, 255.0) as u8,
        }
    }

    /// Gripper state and beams. The break beams look straight ahead from the robot's front.
    pub fn gripper(&self) -> GripperReading {
        self.gripper_among(&[], (false, false))
    }

    /// As [`SimRobot::gripper`], with `others` in the world (solid ones break the beams as
    /// walls do) and whether a puck breaks the outer and the inner beam.
    pub fn gripper_among(&self, others: &[Body], puck_beams: (bool, bool)) -> GripperReading {
        let (x, y, _) = self.pose;
        let near = within(others, Vec2::new(x, y), ROBOT_RADIUS_MM * 3.0);
        self.gripper_with(&near.as_slice(), puck_beams)
    }

    /// As [`SimRobot::gripper_among`], with `solids` (other robots and solid bodies).
    pub fn gripper_with(&self, solids: &impl Solids, puck_beams: (bool, bool)) -> GripperReading {
        let (x, y, th) = self.pose;
        let centre = Vec2::new(x, y);
        let ahead = self.range_with(centre, th, LASER_MAX_MM, solids) - ROBOT_RADIUS_MM;
        GripperReading {
            state: self.gripper.state_byte(),
            beams: self
                .gripper
                .beams_byte_with(ahead, puck_beams.0, puck_beams.1),
        }
    }

    /// The paddles and lift.
    pub fn gripper_mechanism(&self) -> &Gripper {
        &self.gripper
    }

    /// The paddles and lift, for the world to say when they hold a puck.
    pub fn gripper_mechanism_mut(&mut self) -> &mut Gripper {
        &mut self.gripper
    }

    /// Current pan, tilt and zoom.
    pub fn ptz(&self) -> PtzReading {
        self.ptz.reading()
    }

    /// The blobs the camera sees now, sorted by channel then area (largest first).
    pub fn vision(&self) -> Vec<Blob> {
        self.camera().blobs(&self.map)
    }

    /// As [`SimRobot::vision`], with `others` in the world: coloured ones are seen, solid
    /// ones hide what is behind them.
    pub fn vision_among(&self, others: &[Body]) -> Vec<Blob> {
        self.camera().blobs_among(&self.map, others)
    }

    /// The camera's current view (position, axis, tilt, focal length).
    pub fn camera(&self) -> CameraView {
        let (x, y, th) = self.pose;
        CameraView {
            position: Vec2::new(x, y),
            axis: th + self.ptz.pan_rad(),
            tilt: self.ptz.tilt_rad(),
            focal: self.ptz.focal_px(),
        }
    }

    /// Clearance between the robot's disc at `p` and the nearest solid of the map or of
    /// `others` (negative when they overlap), and the nearest point of it.
    fn clearance_among(&self, p: Vec2, others: &[Body]) -> (f64, Option<Vec2>) {
        // Exact whenever the map's solids touch the disc (all the caller needs: whether it
        // is clear, and where it touches).
        let (mut best, what) = self
            .map
            .solids_near(p, ROBOT_RADIUS_MM)
            .clearance(p, ROBOT_RADIUS_MM);
        let mut point = what.map(|(q, _)| q);
        for b in others.iter().filter(|b| b.solid) {
            let d = p - b.center;
            let len = d.length();
            let c = len - b.radius - ROBOT_RADIUS_MM;
            if c < best {
                best = c;
                point = Some(if len > 0.0 {
                    b.center + d * (b.radius / len)
                } else {
                    b.center
                });
            }
        }
        (best, point)
    }

    fn substep(&mut self, h: f64, others: &[Body]) {
        self.elapsed += h;
        self.substeps += 1;
        self.ptz.advance(h);
        self.gripper.advance(h);

        if !self.motors_on {
            self.drive = (0.0, 0.0);
            self.actual = (0.0, 0.0);
            self.release();
            return;
        }
        self.drive = if self.separate_mode {
            (
                slew(self.drive.0, self.command.0, TRANS_ACCEL_MM_S2 * h),
                slew(self.drive.1, self.command.1, ROT_ACCEL_DEG_S2 * h),
            )
        } else {
            wheels_slewed(self.drive, self.command, self.params.wheel_accel_mm_s2 * h)
        };
        let (v, w_deg) = self.drive;
        let w = w_deg.to_radians();

        let wheel_travel = (v.abs() + w.abs() * AXLE_MM / 2.0) * h;
        self.battery_v =
            (self.battery_v - wheel_travel * BATTERY_DRAIN_V_PER_MM).max(BATTERY_FLOOR_V);

        let (x, y, th) = self.pose;
        let new_th = normalize_angle(th + w * h);
        if v == 0.0 {
            self.pose.2 = new_th;
            self.actual = (0.0, w_deg);
            self.odometry(0.0, w * h);
            self.release();
            return;
        }
        let here = Vec2::new(x, y);
        let there = arc_end(here, th, v, w, h);
        let (clear_there, contact) = self.clearance_among(there, others);
        // Where the robot is now matters only when where it would go is not clear.
        let clear_here = if clear_there >= 0.0 {
            f64::INFINITY
        } else {
            self.clearance_among(here, others).0
        };
        if clear_there >= 0.0 || clear_there > clear_here {
            self.pose = (there.x, there.y, new_th);
            self.actual = (v, w_deg);
            self.odometry(v * h, w * h);
            self.release();
            return;
        }

        // Blocked: advance along the arc up to the contact, keep the rotation, report a stall.
        let mut reached = here;
        if clear_here >= 0.0 {
            let (mut lo, mut hi) = (0.0, 1.0);
            for _ in 0..30 {
                let mid = (lo + hi) / 2.0;
                let p = arc_end(here, th, v, w, h * mid);
                if self.clearance_among(p, others).0 >= 0.0 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            reached = arc_end(here, th, v, w, h * lo);
        }
        self.pose = (reached.x, reached.y, new_th);
        self.actual = (0.0, w_deg);
        self.odometry((reached - here).length() * v.signum(), w * h);
        // The obstacle stops the wheels' forward motion; they speed up again from rest.
        self.drive.0 = 0.0;
        self.stalled = true;
        let (front, rear) = match contact {
            Some(point) => bumper_bits((point - there).angle() - th, v > 0.0),
            None => bumper_bits(if v > 0.0 { 0.0 } else { std::f64::consts::PI }, v > 0.0),
        };
        self.front_bumpers = front;
        self.rear_bumpers = rear;
    }

    /// Feeds one sub-step's motion to noisy odometry, if it is on.
    fn odometry(&mut self, ds: f64, dth: f64) {
        if let Some(o) = self.noisy_odometry.as_mut() {
            o.integrate(ds, dth);
        }
    }

    /// Nothing is being pushed: clear stall and bumpers.
    fn release(&mut self) {
        self.stalled = false;
        self.front_bumpers = 0;
        self.rear_bumpers = 0;
    }
}

/// The bodies of `others` whose discs come within `range` of `p`.
fn within(others: &[Body], p: Vec2, range: f64) -> Vec<Body> {
    others
        .iter()
        .filter(|b| b.solid && (b.center - p).length() - b.radius <= range)
        .copied()
        .collect()
}

/// The drive's `(mm/s, degrees/s)` after one sub-step of direct wheel control: each wheel's
/// speed moves from `current`'s toward `target`'s by at most `max_step` mm/s (wheels clamped
/// to +-500 mm/s as P2OS clamps them).
fn wheels_slewed(current: (f64, f64), target: (f64, f64), max_step: f64) -> (f64, f64) {
    let half_axle = AXLE_MM / 2.0;
    let wheels = |(v, w_deg): (f64, f64)| {
        let rot = w_deg.to_radians() * half_axle;
        (v - rot, v + rot)
    };
    let (l0, r0) = wheels(current);
    let (l1, r1) = wheels(target);
    let l = slew(l0, l1.clamp(-MAX_SPEED_MM_S, MAX_SPEED_MM_S), max_step);
    let r = slew(r0, r1.clamp(-MAX_SPEED_MM_S, MAX_SPEED_MM_S), max_step);
    ((l + r) / 2.0, ((r - l) / (2.0 * half_axle)).to_degrees())
}

/// Moves `current` toward `target` by at most `max_step`.
fn slew(current: f64, target: f64, max_step: f64) -> f64 {
    if (target - current).abs() <= max_step {
        target
    } else {
        current + (target - current).signum() * max_step
    }
}

/// End point of driving at `v` mm/s and `w` rad/s for `t` seconds from `p` heading `th`
/// (the exact circular arc).
fn arc_end(p: Vec2, th: f64, v: f64, w: f64, t: f64) -> Vec2 {
    if (w * t).abs() < 1e-9 {
        return p + Vec2::from_angle(th) * (v * t);
    }
    let r = v / w;
    let th2 = th + w * t;
    p + Vec2::new(r * (th2.sin() - th.sin()), -r * (th2.cos() - th.cos()))
}

/// Bumper bits for a contact at `bearing` (radians, relative to the heading, positive left):
/// `(front, rear)`. Moving forward presses the front segment facing the contact, moving
/// backward the rear one; each bumper is five 36-degree segments. Front bits run from the
/// robot's left (bit 0) to its right (bit 4); rear bits from its right (bit 0) to its left
/// (bit 4), i.e. both go clockwise like the sonar numbering. A contact outside the bumper's
/// half counts as its nearest end segment.
fn bumper_bits(bearing: f64, forward: bool) -> (u8, u8) {
    let deg = normalize_angle(bearing).to_degrees();
    if forward {
        let from_left = (90.0 - deg.clamp(-90.0, 90.0)) / 36.0;
        (1 << (from_left.floor() as u32).min(4), 0)
    } else {
        // Angle clockwise from the robot's right (-90) round the back to its left (+90).
        let from_right = (-90.0 - deg).rem_euclid(360.0);
        let from_right = if from_right > 270.0 {
            0.0
        } else {
            from_right.min(180.0)
        };
        (0, 1 << ((from_right / 36.0).floor() as u32).min(4))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odometry_standing_still_reads_and_draws_as_the_general_formula() {
        let starts = [
            (0.0, 0.0, 0.0),
            (-0.0, -0.0, -0.0),
            (1234.5, -0.0, std::f64::consts::PI),
            (-0.0, 77.25, -3.0),
            (-5e-300, 5e-300, 1.5),
        ];
        for (k, &pose) in starts.iter().enumerate() {
            let odometry = NoisyOdometry {
                rng: Rng::new(k as u64 * 7919),
                sigma: (0.02, 0.05),
                pose,
            };
            let (mut fast, mut drawn) = (odometry.clone(), odometry);
            // Standing, then moving (the sequence must be where the draws left it), then
            // standing again.
            for (ds, dth) in [
                (0.0, 0.0),
                (0.0, 0.0),
                (3.0, 0.01),
                (0.0, 0.0),
                (0.0, -0.02),
            ] {
                fast.integrate(ds, dth);
                drawn.integrate_drawn(ds, dth);
                let bits = |p: (f64, f64, f64)| (p.0.to_bits(), p.1.to_bits(), p.2.to_bits());
                assert_eq!(bits(fast.pose), bits(drawn.pose), "from {pose:?}");
                assert_eq!(fast.rng, drawn.rng, "from {pose:?}");
            }
        }
    }
}
