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

use std::sync::Arc;

use crate::camera::{Blob, CameraView, Ptz, PtzReading};
use crate::cast::{CastInputs, CastKind, Castings, SonarEcho};
pub use crate::geom::Body;
use crate::geom::{normalize_angle, ray_circle, Shape, Vec2};
use crate::gripper::Gripper;
pub use crate::laser::{LaserSpec, LASER_MAX_MM};
use crate::map::{NearSolids, WorldMap, ROBOT_RADIUS_MM};
use crate::noise::{self, Noise, NoiseKey};
use crate::rng::Rng;
use player_proto::scan::{self, Scan};

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

/// The unit direction of ray `ray` of sonar `k` in the robot's frame.
fn sonar_ray(k: usize, ray: usize) -> Vec2 {
    static RAYS: std::sync::OnceLock<[[Vec2; SONAR_RAYS]; 16]> = std::sync::OnceLock::new();
    RAYS.get_or_init(|| {
        let half = SONAR_HALF_CONE_DEG.to_radians();
        let span = (SONAR_RAYS - 1) as f64;
        let mut t = [[Vec2::new(0.0, 0.0); SONAR_RAYS]; 16];
        for (k, rays) in t.iter_mut().enumerate() {
            let axis = SONAR_POSES[k].2.to_radians();
            for (r, v) in rays.iter_mut().enumerate() {
                *v = Vec2::from_angle(axis - half + 2.0 * half * r as f64 / span);
            }
        }
        t
    })[k][ray]
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

    /// Odometry, speeds, compass and stall.
    pub fn position(&self) -> PositionReading {
        let (x, y, th) = self.pose;
        let (d, odom_th) = match &self.noisy_odometry {
            Some(o) => (Vec2::new(o.pose.0, o.pose.1), o.pose.2),
            None => {
                let (ox, oy, oth) = self.odom_origin;
                (Vec2::new(x - ox, y - oy).rotated(-oth), th - oth)
            }
        };
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

    /// The 16 sonar ranges in mm, nearest obstacle in each +-15 degree cone, 5000 for nothing.
    /// With noise (see [`SimRobot::set_noise`]), rays meeting a surface at a grazing angle may
    /// get no echo, a reading may be lost (5000), and ranges err: whether and by how much
    /// follow the spot of the surface the echo comes from (a robot standing still reads
    /// the same bar a millimetre's jitter a metre), see [`Noise`].
    pub fn sonar(&self) -> [u16; 16] {
        self.sonar_among(&[])
    }

    /// As [`SimRobot::sonar`], with `others` in the world (solid ones echo).
    pub fn sonar_among(&self, others: &[Body]) -> [u16; 16] {
        let (x, y, _) = self.pose;
        let centre = Vec2::new(x, y);
        let near = within(others, centre, SONAR_MAX_MM + ROBOT_RADIUS_MM);
        self.sonar_seen(CastKind::SonarList, centre, &near, || near.as_slice())
    }

    /// As [`SimRobot::sonar`], with `solids` (other robots and solid bodies) in the world.
    pub fn sonar_with(&self, solids: &impl Solids) -> [u16; 16] {
        self.sonar_finish(&self.sonar_echoes(solids))
    }

    /// As [`SimRobot::sonar_with`] with the solids `view()` gives, a view of `bodies` (and
    /// of nothing else) taken from `from`: the echoes' geometry is reused when this robot,
    /// `bodies`, `from` and the settings are the same to the bit as at the last such reading
    /// (see [`crate::cast`]), and only the fresh draws are made.
    pub(crate) fn sonar_seen<S: Solids>(
        &self,
        kind: CastKind,
        from: Vec2,
        bodies: &[Body],
        view: impl FnOnce() -> S,
    ) -> [u16; 16] {
        let inputs = self.cast_inputs(kind, from, bodies);
        self.castings.sonar.read(
            &inputs,
            || self.sonar_echoes(&view()),
            |echoes| self.sonar_finish(echoes),
        )
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

    /// Each sonar's echo among `solids`, all but the draws fresh at every instant.
    fn sonar_echoes(&self, solids: &impl Solids) -> [SonarEcho; 16] {
        let (x, y, th) = self.pose;
        let centre = Vec2::new(x, y);
        let mut out = [SonarEcho::Reading(0); 16];
        let noisy = !self.noise.is_none();
        let half = SONAR_HALF_CONE_DEG.to_radians();
        let (sin_th, cos_th) = th.sin_cos();
        let turn = |v: Vec2| Vec2::new(cos_th * v.x - sin_th * v.y, sin_th * v.x + cos_th * v.y);
        let mut cone: Vec<Body> = Vec::new();
        // The map's solids within a sonar's reach (transducers sit within a robot radius of
        // the centre): one lookup for all 112 rays.
        let walls = self.map.solids_near(centre, SONAR_MAX_MM + ROBOT_RADIUS_MM);
        for (k, (reading, &(sx, sy, sh))) in out.iter_mut().zip(SONAR_POSES.iter()).enumerate() {
            let origin = centre + turn(Vec2::new(sx, sy));
            let axis = turn(Vec2::from_angle(sh.to_radians()));
            // Only the solids that can be in this cone (when they are known as a list).
            let narrowed = solids.cone(origin, axis, half, &mut cone);
            if narrowed && cone.is_empty() && walls.is_empty() {
                // Nothing within reach of this cone: no ray can echo.
                *reading = SonarEcho::Reading(SONAR_MAX_MM as u16);
                continue;
            }
            let mut nearest = SONAR_MAX_MM;
            // Where the nearest echo came from (its noise follows that spot).
            let mut echo_at = None;
            for ray in 0..SONAR_RAYS {
                let dir = turn(sonar_ray(k, ray));
                let echo = if narrowed {
                    echo_with(&walls, origin, dir, SONAR_MAX_MM, &cone.as_slice())
                } else {
                    echo_with(&walls, origin, dir, SONAR_MAX_MM, solids)
                };
                let Some((d, cos_incidence)) = echo else {
                    continue;
                };
                let at = origin + dir * d;
                if noisy && cos_incidence < self.noise.specular_cos() {
                    // A ray meeting the surface far from its normal reflects away. Whether
                    // it does is the surface's and the angle's doing, not chance at each
                    // ping: each stretch of surface has its own critical angle within the
                    // ramp, and a ray met beyond it never echoes.
                    let incidence = cos_incidence.clamp(0.0, 1.0).acos().to_degrees();
                    let critical =
                        self.spot_uniform(k, noise::SPECULAR, at, noise::SPECULAR_CELL_MM);
                    if critical < self.noise.specular_miss(incidence) {
                        continue;
                    }
                }
                if d < nearest {
                    nearest = d;
                    echo_at = Some(at);
                }
            }
            if let (true, Some(at)) = (noisy, echo_at) {
                // Whether the echo is lost and most of its range error follow the spot it
                // came from: a robot standing still reads the same, bar a fresh jitter of
                // SONAR_JITTER_SHARE of the error; as the robot moves they change.
                if self.spot_uniform(k, noise::DROPOUT, at, noise::DROPOUT_CELL_MM)
                    < self.noise.sonar_dropout
                {
                    nearest = SONAR_MAX_MM;
                } else {
                    let sigma =
                        self.noise.sonar_sigma * nearest.max(noise::SONAR_SIGMA_FLOOR_RANGE_MM);
                    let spot = self.spot_gaussian(k, at);
                    *reading = SonarEcho::Jitter {
                        nearest,
                        sigma,
                        spot,
                    };
                    continue;
                }
            }
            *reading = SonarEcho::Reading(nearest.round().clamp(0.0, SONAR_MAX_MM) as u16);
        }
        out
    }

    /// The readings of `echoes`, with the draws fresh at this instant.
    fn sonar_finish(&self, echoes: &[SonarEcho; 16]) -> [u16; 16] {
        let mut out = [0u16; 16];
        for (k, (reading, echo)) in out.iter_mut().zip(echoes).enumerate() {
            *reading = match *echo {
                SonarEcho::Reading(r) => r,
                SonarEcho::Jitter {
                    mut nearest,
                    sigma,
                    spot,
                } => {
                    let fresh = self.noise_rng(noise::SONAR + k as u64).gaussian();
                    nearest += sigma
                        * (spot * noise::SONAR_SPOT_SHARE + fresh * noise::SONAR_JITTER_SHARE);
                    nearest.round().clamp(0.0, SONAR_MAX_MM) as u16
                }
            };
        }
        out
    }

    /// The 361 laser ranges in mm of the 0.7.4a `l` device: index 0 at the robot's right,
    /// 180 straight ahead, 360 at its left, 0.5 degrees apart; the laser's maximum range
    /// when nothing is hit. For the default laser (a SICK LMS-200) these are its own rays;
    /// for any other ([`SimRobot::set_laser`]) the `l` view of its scan
    /// ([`player_proto::scan::laser_view`]: bins outside its field of view read its maximum
    /// range).
    pub fn laser(&self) -> [u16; LASER_SAMPLES] {
        self.laser_among(&[])
    }

    /// As [`SimRobot::laser`], with `others` in the world (solid ones reflect).
    pub fn laser_among(&self, others: &[Body]) -> [u16; LASER_SAMPLES] {
        if self.params.laser == LaserSpec::default() {
            // The rays are the `l` bins: noise and rounding straight into them.
            let mut out = [0u16; LASER_SAMPLES];
            self.cast_among(others, |ranges| self.finish_rays_into(ranges, &mut out));
            return out;
        }
        self.view(self.rays_among(others))
    }

    /// As [`SimRobot::laser`], with `solids` (other robots and solid bodies) in the world:
    /// each ray is cast at the map, then at the solids up to what the map gave.
    pub fn laser_with(&self, solids: &impl Solids) -> [u16; LASER_SAMPLES] {
        self.view(self.rays_with(solids))
    }

    /// The full scan (`L`) of this robot's laser: its own rays, counter-clockwise from the
    /// right end of its field of view, 0 where a ray hits nothing within its range.
    pub fn scan(&self) -> Scan {
        self.scan_among(&[])
    }

    /// As [`SimRobot::scan`], with `others` in the world (solid ones reflect).
    pub fn scan_among(&self, others: &[Body]) -> Scan {
        self.scan_of(self.rays_among(others))
    }

    /// As [`SimRobot::scan`], with `solids` (other robots and solid bodies) in the world.
    pub fn scan_with(&self, solids: &impl Solids) -> Scan {
        self.scan_of(self.rays_with(solids))
    }

    /// [`SimRobot::laser_among`] and [`SimRobot::scan_among`] of the same instant from one
    /// casting of the rays (the same readings as the two calls).
    pub fn laser_and_scan_among(&self, others: &[Body]) -> ([u16; LASER_SAMPLES], Scan) {
        let rays = self.rays_among(others);
        (self.view(rays.clone()), self.scan_of(rays))
    }

    /// The laser this robot carries.
    pub fn laser_spec(&self) -> LaserSpec {
        self.params.laser
    }

    /// Gives this robot another laser (field of view, resolution, range).
    pub fn set_laser(&mut self, laser: LaserSpec) {
        self.params.laser = laser;
    }

    fn scan_of(&self, rays: Vec<u16>) -> Scan {
        let l = self.params.laser;
        let far = l.max_mm.round() as u16;
        Scan {
            angle_min: scan::to_urad(l.first_deg().to_radians()),
            angle_increment: scan::to_urad(l.resolution_deg.to_radians()),
            ranges: rays
                .into_iter()
                .map(|r| if r >= far { 0 } else { r })
                .collect(),
            intensities: None,
        }
    }

    /// The `l` reading of the rays: the rays themselves for the default laser (whose rays
    /// are the `l` bins), else the `l` view of the scan.
    fn view(&self, rays: Vec<u16>) -> [u16; LASER_SAMPLES] {
        if self.params.laser == LaserSpec::default() {
            let mut out = [0u16; LASER_SAMPLES];
            out.copy_from_slice(&rays);
            return out;
        }
        let max = self.params.laser.max_mm.round() as u32;
        self.scan_of(rays).laser_view(max).ranges
    }

    /// The laser's rays, mm (its maximum range where nothing is hit), with `others`.
    fn rays_among(&self, others: &[Body]) -> Vec<u16> {
        self.cast_among(others, |ranges| self.finish_rays(ranges))
    }

    /// `read` of the laser's rays before noise, mm, with `others`: the last casting's when
    /// this robot, the others within the laser's reach and the settings are the same to
    /// the bit as then (see [`crate::cast`]), else a fresh one.
    fn cast_among<R>(&self, others: &[Body], read: impl FnOnce(&[f64]) -> R) -> R {
        let (x, y, _) = self.pose;
        let centre = Vec2::new(x, y);
        let near = within(others, centre, self.params.laser.max_mm + ROBOT_RADIUS_MM);
        let inputs = self.cast_inputs(CastKind::Laser, centre, &near);
        self.castings
            .laser
            .read(&inputs, || self.cast_rays(&near), |ranges| read(ranges))
    }

    /// The laser's rays before noise, mm (its maximum range where nothing is hit), with
    /// `near`, the solid bodies within its reach.
    fn cast_rays(&self, near: &[Body]) -> Vec<f64> {
        let l = self.params.laser;
        let n = l.count();
        let th = self.pose.2;
        let origin = self.laser_origin();
        let first = l.first_deg();
        let res = l.resolution_deg;
        let angle = |i: usize| th + (first + res * i as f64).to_radians();
        let walls = self.map.solids_near(origin, l.max_mm);
        let dirs: Vec<Vec2> = (0..n).map(|i| Vec2::from_angle(angle(i))).collect();
        // Each ray's range is the nearest of the map's hits (or the maximum): each solid is
        // cast only at the rays of the angle it covers, the others cannot meet it. The
        // nearest of the same hits, so the same ranges as casting every ray at every solid.
        let mut ranges = vec![l.max_mm; n];
        walls.each_shape(|shape| {
            let Some((lo, hi)) = ray_span(shape_window(origin, shape), th, first, res, n) else {
                return;
            };
            for (r, &dir) in ranges[lo..=hi].iter_mut().zip(&dirs[lo..=hi]) {
                if let Some(t) = shape.ray_hit(origin, dir) {
                    if t < *r {
                        *r = t;
                    }
                }
            }
        });
        // Each body only against the rays of the angle it covers (a full circle: all rays,
        // as the window may wrap).
        for b in near {
            let (lo, hi) = match angular_window(origin, b) {
                Some((bearing, width)) if !l.full_circle() => {
                    let rel = normalize_angle(bearing - th).to_degrees();
                    let w = width.to_degrees();
                    let lo = ((rel - w - first) / res).floor();
                    let hi = ((rel + w - first) / res).ceil();
                    if hi < 0.0 || lo > (n - 1) as f64 {
                        continue;
                    }
                    (lo.max(0.0) as usize, (hi as usize).min(n - 1))
                }
                _ => (0, n - 1),
            };
            for (r, &dir) in ranges[lo..=hi].iter_mut().zip(&dirs[lo..=hi]) {
                if let Some(t) = ray_circle(origin, dir, b.center, b.radius) {
                    *r = r.min(t);
                }
            }
        }
        ranges
    }

    /// The laser's rays, mm (its maximum range where nothing is hit), with `solids`.
    fn rays_with(&self, solids: &impl Solids) -> Vec<u16> {
        let l = self.params.laser;
        let th = self.pose.2;
        let origin = self.laser_origin();
        let walls = self.map.solids_near(origin, l.max_mm);
        let mut ranges = vec![0.0f64; l.count()];
        for (i, r) in ranges.iter_mut().enumerate() {
            let angle = th + (l.first_deg() + l.resolution_deg * i as f64).to_radians();
            let dir = Vec2::from_angle(angle);
            let d = walls.range(origin, dir, l.max_mm);
            *r = match solids.first_hit(origin, dir, d) {
                Some((t, _)) => t.min(d),
                None => d,
            };
        }
        self.finish_rays(&ranges)
    }

    /// Noise on the rays that hit something, then whole millimetres.
    fn finish_rays(&self, ranges: &[f64]) -> Vec<u16> {
        let mut out = vec![0u16; ranges.len()];
        self.finish_rays_into(ranges, &mut out);
        out
    }

    /// [`SimRobot::finish_rays`] into `out` (as long as `ranges`): the noise drawn ray by
    /// ray in order, only for the rays that hit something.
    fn finish_rays_into(&self, ranges: &[f64], out: &mut [u16]) {
        let max = self.params.laser.max_mm;
        let sigma = self.noise.laser_sigma_mm;
        let mut rng = (sigma > 0.0).then(|| self.noise_rng(noise::LASER));
        for (o, &r) in out.iter_mut().zip(ranges) {
            let mut r = r;
            if let Some(rng) = rng.as_mut().filter(|_| r < max) {
                r += rng.gaussian() * sigma;
            }
            *o = r.round().clamp(0.0, max) as u16;
        }
    }

    /// Where the laser sits in the world, mm.
    pub fn laser_origin(&self) -> Vec2 {
        let (x, y, th) = self.pose;
        Vec2::new(x, y) + Vec2::from_angle(th) * self.params.laser_x_mm
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

/// Distance along a ray to the first solid of the map (of `walls`, those near the ray's
/// origin) or of `solids` within `max`, and the cosine of the angle between the ray and that
/// surface's normal; `None` if nothing is that close.
fn echo_with(
    walls: &NearSolids<'_>,
    origin: Vec2,
    dir: Vec2,
    max: f64,
    solids: &impl Solids,
) -> Option<(f64, f64)> {
    let best = walls
        .cast_ray_within(origin, dir, max)
        .map(|h| (h.distance, h.normal.dot(dir).abs()));
    let limit = best.map_or(max, |(d, _)| d);
    match solids.first_hit(origin, dir, limit) {
        Some((t, center)) if t < limit => {
            let n = origin + dir * t - center;
            let len = n.length();
            let cos = if len > 0.0 {
                n.dot(dir).abs() / len
            } else {
                1.0
            };
            Some((t, cos))
        }
        _ => best,
    }
}

/// The bearing (radians) of a body's centre seen from `origin`, and the half-angle its disc
/// covers; `None` when `origin` is inside the disc (it covers every direction).
fn angular_window(origin: Vec2, b: &Body) -> Option<(f64, f64)> {
    let d = b.center - origin;
    let dist = d.length();
    if dist <= b.radius {
        return None;
    }
    Some((d.angle(), (b.radius / dist).asin()))
}

/// How much wider than the geometry the ray windows of the laser are, degrees: far more
/// than the rounding of a ray's direction (about 1e-14 radians), so no ray that can meet a
/// solid is left out.
const WINDOW_MARGIN_DEG: f64 = 0.01;

/// The angle (radians, from `.0` counter-clockwise to `.1`, less than a half turn apart)
/// within which a ray from `origin` can meet `shape`; `None` when rays in any direction can
/// (the origin within a millimetre of the shape, or of a segment's line).
fn shape_window(origin: Vec2, shape: &Shape) -> Option<(f64, f64)> {
    const NEAR_MM: f64 = 1.0;
    let mut points = [Vec2::new(0.0, 0.0); 4];
    let (centre, k) = match *shape {
        Shape::Circle(c, r) => {
            let d = c - origin;
            let dist = d.length();
            if dist <= r + NEAR_MM {
                return None;
            }
            let (bearing, half) = (d.angle(), (r / dist).asin());
            return Some((bearing - half, bearing + half));
        }
        Shape::Segment(a, b) => {
            let e = b - a;
            let len = e.length();
            if len < NEAR_MM || (origin - a).cross(e).abs() / len < NEAR_MM {
                return None;
            }
            points[0] = a;
            points[1] = b;
            ((a + b) * 0.5, 2)
        }
        Shape::Rect(lo, hi) => {
            let inside = |v: f64, lo: f64, hi: f64| v > lo - NEAR_MM && v < hi + NEAR_MM;
            if inside(origin.x, lo.x, hi.x) && inside(origin.y, lo.y, hi.y) {
                return None;
            }
            points = [lo, Vec2::new(hi.x, lo.y), hi, Vec2::new(lo.x, hi.y)];
            ((lo + hi) * 0.5, 4)
        }
    };
    // A convex shape seen from outside covers less than a half turn, its centre's
    // direction within it: its corners' angles from that direction bound it.
    let axis = (centre - origin).angle();
    let (mut from, mut to) = (0.0f64, 0.0f64);
    for p in &points[..k] {
        let rel = normalize_angle((*p - origin).angle() - axis);
        from = from.min(rel);
        to = to.max(rel);
    }
    Some((axis + from, axis + to))
}

/// The rays (first and last index, of `n` from `first` degrees off the heading `th` at
/// `res` degree steps) that a window of [`shape_window`] covers, with a margin; every ray
/// when the window is `None` or reaches round behind the laser; `None` when it covers no
/// ray.
fn ray_span(
    window: Option<(f64, f64)>,
    th: f64,
    first: f64,
    res: f64,
    n: usize,
) -> Option<(usize, usize)> {
    let Some((from, to)) = window else {
        return Some((0, n - 1));
    };
    let lo = normalize_angle(from - th).to_degrees() - WINDOW_MARGIN_DEG;
    let hi = lo + (to - from).to_degrees() + 2.0 * WINDOW_MARGIN_DEG;
    if lo <= -180.0 || hi >= 180.0 {
        return Some((0, n - 1));
    }
    let lo = ((lo - first) / res).floor();
    let hi = ((hi - first) / res).ceil();
    if hi < 0.0 || lo > (n - 1) as f64 {
        return None;
    }
    Some((lo.max(0.0) as usize, (hi as usize).min(n - 1)))
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
