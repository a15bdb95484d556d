//! Local control: from the robot's pose on the map, its velocity, what the laser sees and
//! the planned path, the next (speed, turn rate) command for the base. Two controllers, as
//! the `wavefront` driver's `controller` parameter names them:
//!
//! - [`vfh`]: VFH+ (Ulrich and Borenstein, 1998), with Player's `vfh` driver's defaults,
//!   steering towards the current waypoint around what the laser sees;
//! - [`pursuit`]: Regulated Pure Pursuit (Macenski et al., 2023), following the cell path
//!   with its speed reduced in tight turns, near obstacles and on the approach to the goal.
//!
//! Both are pure (no clock, no I/O: the time step comes with each update), bounded by
//! `max_speed` and `max_turn`, stop within `goal_tolerance` of the goal's position and then
//! turn in place to its heading ([`GoalLatch`]), and report `blocked` when the laser sees
//! an obstacle on the path ahead ([`path_blocked`]), for the driver to replan.

pub mod pursuit;
pub mod vfh;

#[cfg(test)]
mod tests;

use crate::pose::{angle_diff, Pose};

/// Laser readings in the robot's frame (x forward, y to the left, metres).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scan {
    /// Each beam's bearing from the robot's heading, radians, in increasing order.
    pub bearings: Vec<f64>,
    /// Each beam's range from the laser, metres (`max_range` or more: nothing seen).
    pub ranges: Vec<f64>,
    /// The laser's maximum range, metres.
    pub max_range: f64,
    /// The points hit, in the robot's frame (beams at or beyond `max_range`, or of zero
    /// range, give none).
    pub points: Vec<(f64, f64)>,
}

/// The 0.7.4a laser view's beam count (`l`: 361 ranges, 0.5 degrees apart from -90).
pub const PLAYER_BEAMS: usize = 361;

/// What a 0.7.4a laser reports when nothing is in range (the SICK LMS-200's 8 m scale).
pub const PLAYER_MAX_RANGE_MM: u16 = 8000;

impl Scan {
    /// A scan from bearings and ranges (metres) of a laser at the robot's centre, facing
    /// forward. Ranges of zero (no return) count as `max_range`.
    pub fn new(bearings: Vec<f64>, ranges: Vec<f64>, max_range: f64) -> Scan {
        Scan::with_mount(bearings, ranges, max_range, Pose::default())
    }

    /// A scan from a laser mounted at `mount` in the robot's frame.
    pub fn with_mount(bearings: Vec<f64>, ranges: Vec<f64>, max_range: f64, mount: Pose) -> Scan {
        assert_eq!(bearings.len(), ranges.len(), "one range per bearing");
        let ranges: Vec<f64> = ranges
            .into_iter()
            .map(|r| {
                if r > 0.0 && r.is_finite() {
                    r
                } else {
                    max_range
                }
            })
            .collect();
        let (s, c) = mount.theta.sin_cos();
        let points = bearings
            .iter()
            .zip(&ranges)
            .filter(|(_, &r)| r < max_range)
            .map(|(&b, &r)| {
                let (lx, ly) = (r * b.cos(), r * b.sin());
                (mount.x + c * lx - s * ly, mount.y + s * lx + c * ly)
            })
            .collect();
        let bearings = bearings.iter().map(|b| b + mount.theta).collect();
        Scan {
            bearings,
            ranges,
            max_range,
            points,
        }
    }

    /// The 0.7.4a laser view `l`: 361 ranges in millimetres, beam `i` at `(i * 0.5 - 90)`
    /// degrees; 0 and [`PLAYER_MAX_RANGE_MM`] or more mean nothing seen.
    pub fn from_player_361(ranges_mm: &[u16; PLAYER_BEAMS]) -> Scan {
        let bearings = (0..PLAYER_BEAMS)
            .map(|i| (i as f64 * 0.5 - 90.0).to_radians())
            .collect();
        let ranges = ranges_mm.iter().map(|&r| f64::from(r) / 1000.0).collect();
        Scan::new(bearings, ranges, f64::from(PLAYER_MAX_RANGE_MM) / 1000.0)
    }

    /// The range of the beam nearest to `bearing` (radians), or `max_range` when no beam
    /// is within one beam spacing of it (a direction the laser does not see).
    pub fn range_towards(&self, bearing: f64) -> f64 {
        let n = self.bearings.len();
        if n == 0 {
            return self.max_range;
        }
        let k = self.bearings.partition_point(|&b| b < bearing);
        let candidates = [k.saturating_sub(1), k.min(n - 1)];
        let best = candidates
            .into_iter()
            .min_by(|&a, &b| {
                (self.bearings[a] - bearing)
                    .abs()
                    .total_cmp(&(self.bearings[b] - bearing).abs())
            })
            .unwrap_or(0);
        let spacing = if n > 1 {
            (self.bearings[n - 1] - self.bearings[0]).abs() / (n - 1) as f64
        } else {
            f64::INFINITY
        };
        if (self.bearings[best] - bearing).abs() <= spacing {
            self.ranges[best]
        } else {
            self.max_range
        }
    }

    /// The distance from the robot's centre to the nearest point seen (infinite if none).
    pub fn nearest(&self) -> f64 {
        self.points
            .iter()
            .map(|&(x, y)| x.hypot(y))
            .fold(f64::INFINITY, f64::min)
    }
}

/// A command for the base, in the units of the 0.7.4a position command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Command {
    /// Forward speed, mm/s.
    pub speed: i32,
    /// Turn rate, deg/s (counter-clockwise positive).
    pub turn: i32,
}

impl Command {
    /// Stopped.
    pub const STOP: Command = Command { speed: 0, turn: 0 };

    /// From metres and radians per second, rounded, each within its bound.
    pub fn from_si(v: f64, w: f64, max_speed: f64, max_turn: f64) -> Command {
        let v = v.clamp(-max_speed, max_speed);
        let w = w.clamp(-max_turn, max_turn);
        Command {
            speed: (v * 1000.0).round() as i32,
            turn: w.to_degrees().round() as i32,
        }
    }
}

/// What a controller is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No path to follow.
    Idle,
    /// Moving along the path.
    Driving,
    /// At the goal's position, turning to its heading.
    Turning,
    /// At the goal: position and heading within the tolerance; stopped.
    Reached,
    /// Stopped: the path ahead is blocked.
    Blocked,
}

/// One update's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// The command for the base.
    pub command: Command,
    /// What the controller is doing.
    pub state: State,
    /// The laser sees an obstacle on the path ahead (the driver should replan), whether or
    /// not the controller could steer round it.
    pub blocked: bool,
}

impl Output {
    fn stopped(state: State, blocked: bool) -> Output {
        Output {
            command: Command::STOP,
            state,
            blocked,
        }
    }
}

/// The tolerance within which the goal counts as reached (the `goal_tolerance = [mm,
/// deg]` parameter, default [250, 15]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Distance, metres (default 0.25).
    pub distance: f64,
    /// Heading, radians (default 15 degrees).
    pub heading: f64,
}

impl Default for Tolerance {
    fn default() -> Tolerance {
        Tolerance {
            distance: 0.25,
            heading: 15f64.to_radians(),
        }
    }
}

/// The end of a route, shared by both controllers. The robot drives on until it is within
/// half the distance tolerance of the goal (or within the whole tolerance with the goal
/// behind it: it has passed it), stops moving forward and turns in place to the goal's
/// heading until within half the heading tolerance: then the goal is reached, well inside
/// the tolerance rather than on its edge. It lets go (drives again) only if it drifts
/// beyond twice the distance tolerance.
#[derive(Debug, Clone, Copy, Default)]
pub struct GoalLatch {
    at_position: bool,
}

/// The least turn rate of an in-place turn (Player's `vfh` `min_turnrate`, 10 deg/s), so
/// a small remaining angle is still turned.
pub const MIN_TURN: f64 = 10.0 * std::f64::consts::PI / 180.0;

impl GoalLatch {
    /// Forgets a previous goal.
    pub fn reset(&mut self) {
        self.at_position = false;
    }

    /// The command at the goal, or `None` while the robot is still to drive there.
    /// `max_turn` in rad/s.
    pub fn update(
        &mut self,
        pose: Pose,
        goal: Pose,
        tol: Tolerance,
        max_turn: f64,
    ) -> Option<Output> {
        let dist = (goal.x - pose.x).hypot(goal.y - pose.y);
        let bearing = angle_diff((goal.y - pose.y).atan2(goal.x - pose.x), pose.theta);
        let passed = dist <= tol.distance && bearing.abs() > std::f64::consts::FRAC_PI_2;
        if dist <= tol.distance / 2.0 || passed {
            self.at_position = true;
        } else if dist > 2.0 * tol.distance {
            self.at_position = false;
        }
        if !self.at_position {
            return None;
        }
        let err = angle_diff(goal.theta, pose.theta);
        if err.abs() <= tol.heading / 2.0 {
            return Some(Output::stopped(State::Reached, false));
        }
        // Proportional, at least MIN_TURN, at most max_turn.
        let w = (1.5 * err.abs()).clamp(MIN_TURN.min(max_turn), max_turn) * err.signum();
        Some(Output {
            command: Command::from_si(0.0, w, 0.0, max_turn),
            state: State::Turning,
            blocked: false,
        })
    }
}

/// Whether the laser sees an obstacle on the path ahead: the distance along `path` (world
/// points, from the robot's nearest point `from` on) to the first point of it within
/// `clearance` of a laser point, looking at most `lookahead` metres along it; `None` when
/// the path is clear that far.
pub fn path_blocked(
    pose: Pose,
    path: &[(f64, f64)],
    from: usize,
    scan: &Scan,
    clearance: f64,
    lookahead: f64,
) -> Option<f64> {
    if scan.points.is_empty() || from >= path.len() {
        return None;
    }
    let (s, c) = pose.theta.sin_cos();
    // The laser points in the world.
    let world: Vec<(f64, f64)> = scan
        .points
        .iter()
        .map(|&(x, y)| (pose.x + c * x - s * y, pose.y + s * x + c * y))
        .collect();
    let c2 = clearance * clearance;
    let hits = |p: (f64, f64)| {
        world
            .iter()
            .any(|&(x, y)| (x - p.0).powi(2) + (y - p.1).powi(2) < c2)
    };
    let mut along = 0.0;
    let mut prev = (pose.x, pose.y);
    // Sample every 5 cm along the path.
    for &p in &path[from..] {
        let seg = (p.0 - prev.0).hypot(p.1 - prev.1);
        let steps = (seg / 0.05).ceil().max(1.0) as usize;
        for k in 1..=steps {
            let t = k as f64 / steps as f64;
            let q = (prev.0 + t * (p.0 - prev.0), prev.1 + t * (p.1 - prev.1));
            let d = along + t * seg;
            if d > lookahead {
                return None;
            }
            if hits(q) {
                return Some(d);
            }
        }
        along += seg;
        prev = p;
    }
    None
}

/// The index of the path point nearest to `(x, y)` among `path[from..from + window]`.
pub fn nearest_index(path: &[(f64, f64)], from: usize, window: usize, x: f64, y: f64) -> usize {
    let end = path.len().min(from.saturating_add(window));
    (from.min(path.len().saturating_sub(1))..end)
        .min_by(|&a, &b| {
            let da = (path[a].0 - x).powi(2) + (path[a].1 - y).powi(2);
            let db = (path[b].0 - x).powi(2) + (path[b].1 - y).powi(2);
            da.total_cmp(&db)
        })
        .unwrap_or(from)
}
