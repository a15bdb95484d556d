//! Regulated Pure Pursuit (Macenski, Singh, Martin and Gines, "Regulated Pure Pursuit for
//! Robot Path Tracking", Autonomous Robots 2023), as Nav2's default controller documents
//! it, with what the laser sees standing in for Nav2's local costmap.
//!
//! Each update: the path is pruned to the point nearest the robot (searched forward from
//! the last one); the **carrot** is the first path point at least the lookahead distance
//! from the robot (interpolated on the segment that crosses that circle; the path's end
//! when none); the arc to it has curvature `2 y / L^2` (carrot at (x, y) in the robot's
//! frame, `L` its distance). When the carrot is more than `rotate_to_heading_min_angle`
//! off the heading the robot first turns in place towards it. Otherwise the speed is
//! `max_speed`, regulated:
//!
//! - by **curvature**: times `r / regulated_min_radius` when the arc's radius `r` is under
//!   `regulated_min_radius`;
//! - by **proximity**: times `cost_scaling_gain * d / cost_scaling_dist` when the nearest
//!   point the laser sees is `d` < `cost_scaling_dist` from the robot's centre (Nav2 reads
//!   that distance back from its inflated costmap's cost);
//! - but not below `regulated_min_speed` by these two;
//! - on the **approach**: times `remaining / approach_dist` within `approach_dist` of the
//!   path's end, not below `min_approach_speed`;
//!
//! and the turn rate is speed times curvature; when that exceeds `max_turn` the speed is
//! lowered instead, so the robot stays on the arc. **Collision**: the arc is projected
//! `collision_time` seconds ahead (at least the robot's radius, at most to the carrot);
//! when a laser point comes within `robot_radius` of it the robot stops, and the state is
//! [`State::Blocked`]. The laser seeing an obstacle on the path itself within
//! `blocked_lookahead` sets `blocked` (the driver should replan) while the robot keeps
//! going until its arc is at risk.

use super::{nearest_index, path_blocked, Command, GoalLatch, Output, Scan, State, Tolerance};
use crate::pose::Pose;

/// The controller's parameters; defaults are Nav2's unless said otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PursuitParams {
    /// Top speed, m/s (Nav2's `desired_linear_vel`: 0.5).
    pub max_speed: f64,
    /// Top turn rate, rad/s (ours: 1.8, Nav2's `rotate_to_heading_angular_vel`).
    pub max_turn: f64,
    /// Lookahead distance, metres (0.6).
    pub lookahead: f64,
    /// Turn in place first when the carrot is more than this off the heading, radians
    /// (0.785).
    pub rotate_to_heading_min_angle: f64,
    /// Curvature regulation below this radius, metres (0.9).
    pub regulated_min_radius: f64,
    /// The least speed curvature and proximity regulation leave, m/s (Nav2: 0.25 for a
    /// 0.5 m/s robot; ours: 0.25, but at most half of `max_speed`).
    pub regulated_min_speed: f64,
    /// Proximity regulation within this of an obstacle, metres (0.6).
    pub cost_scaling_dist: f64,
    /// Proximity regulation's gain (1.0).
    pub cost_scaling_gain: f64,
    /// Approach slow-down within this of the end, metres (0.6).
    pub approach_dist: f64,
    /// The least approach speed, m/s (0.05).
    pub min_approach_speed: f64,
    /// How far ahead, in seconds of travel, the arc is checked for collision (1.0).
    pub collision_time: f64,
    /// The robot's radius for the collision check and `blocked`, metres (ours: 0.2).
    pub robot_radius: f64,
    /// How far along the path the laser is checked for `blocked`, metres (ours: 1.0).
    pub blocked_lookahead: f64,
    /// The goal tolerance (default [250 mm, 15 deg]).
    pub tolerance: Tolerance,
}

impl Default for PursuitParams {
    fn default() -> PursuitParams {
        PursuitParams {
            max_speed: 0.5,
            max_turn: 1.8,
            lookahead: 0.6,
            rotate_to_heading_min_angle: 0.785,
            regulated_min_radius: 0.9,
            regulated_min_speed: 0.25,
            cost_scaling_dist: 0.6,
            cost_scaling_gain: 1.0,
            approach_dist: 0.6,
            min_approach_speed: 0.05,
            collision_time: 1.0,
            robot_radius: 0.2,
            blocked_lookahead: 1.0,
            tolerance: Tolerance::default(),
        }
    }
}

/// The Regulated Pure Pursuit controller and its route.
#[derive(Debug, Clone)]
pub struct Pursuit {
    p: PursuitParams,
    path: Vec<(f64, f64)>,
    nearest: usize,
    goal: Option<Pose>,
    latch: GoalLatch,
}

impl Pursuit {
    /// A controller with `p`.
    pub fn new(p: PursuitParams) -> Pursuit {
        Pursuit {
            p,
            path: Vec::new(),
            nearest: 0,
            goal: None,
            latch: GoalLatch::default(),
        }
    }

    /// Its parameters.
    pub fn params(&self) -> &PursuitParams {
        &self.p
    }

    /// A new route: the path (world points, metres, from the start) and the goal pose.
    pub fn set_route(&mut self, path: Vec<(f64, f64)>, goal: Pose) {
        self.path = path;
        self.path.push((goal.x, goal.y));
        self.nearest = 0;
        self.goal = Some(goal);
        self.latch.reset();
    }

    /// Drops the route: the robot stops.
    pub fn clear(&mut self) {
        self.goal = None;
        self.path.clear();
    }

    /// The index of the path point nearest the robot at the last update.
    pub fn nearest_point(&self) -> usize {
        self.nearest
    }

    /// One control step: `pose` on the map and the scan (the speed now and the time step
    /// are not needed: the regulation is on the command).
    pub fn update(&mut self, pose: Pose, scan: &Scan) -> Output {
        let Some(goal) = self.goal else {
            return Output::stopped(State::Idle, false);
        };
        let p = self.p;
        if let Some(out) = self.latch.update(pose, goal, p.tolerance, p.max_turn) {
            return out;
        }
        // Prune: the nearest point, searched forward within a few metres of path.
        self.nearest = nearest_index(&self.path, self.nearest, 200, pose.x, pose.y);
        let blocked_at = path_blocked(
            pose,
            &self.path,
            self.nearest,
            scan,
            p.robot_radius,
            p.blocked_lookahead,
        );
        let (carrot, remaining) = self.carrot(pose);
        let (s, c) = pose.theta.sin_cos();
        let (dx, dy) = (carrot.0 - pose.x, carrot.1 - pose.y);
        let (x, y) = (c * dx + s * dy, -s * dx + c * dy);
        let l2 = x * x + y * y;
        let angle = y.atan2(x);
        if angle.abs() > p.rotate_to_heading_min_angle {
            let w = (1.5 * angle.abs()).clamp(super::MIN_TURN.min(p.max_turn), p.max_turn);
            return Output {
                command: Command::from_si(0.0, w * angle.signum(), 0.0, p.max_turn),
                state: State::Driving,
                blocked: blocked_at.is_some(),
            };
        }
        let curvature = if l2 > 1e-9 { 2.0 * y / l2 } else { 0.0 };
        let v = self.regulated_speed(curvature, scan.nearest(), remaining);
        // Keep to the arc: lower the speed rather than exceed max_turn.
        let v = if (v * curvature).abs() > p.max_turn {
            p.max_turn / curvature.abs()
        } else {
            v
        };
        let w = v * curvature;
        if self.arc_collides(scan, v, w, l2.sqrt()) {
            return Output::stopped(State::Blocked, true);
        }
        Output {
            command: Command::from_si(v, w, p.max_speed, p.max_turn),
            state: State::Driving,
            blocked: blocked_at.is_some(),
        }
    }

    /// The carrot (world point) and the path length left from the nearest point.
    fn carrot(&self, pose: Pose) -> ((f64, f64), f64) {
        let path = &self.path;
        let l = self.p.lookahead;
        let from = self.nearest.min(path.len() - 1);
        let remaining: f64 = path[from..]
            .windows(2)
            .map(|w| (w[1].0 - w[0].0).hypot(w[1].1 - w[0].1))
            .sum();
        let d = |q: (f64, f64)| (q.0 - pose.x).hypot(q.1 - pose.y);
        for k in from..path.len() {
            if d(path[k]) >= l {
                if k == from {
                    return (path[k], remaining);
                }
                // Interpolate on the segment crossing the circle of radius l.
                let (a, b) = (path[k - 1], path[k]);
                let (da, db) = (d(a), d(b));
                let t = if db > da {
                    ((l - da) / (db - da)).clamp(0.0, 1.0)
                } else {
                    1.0
                };
                return ((a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1)), remaining);
            }
        }
        (path[path.len() - 1], remaining)
    }

    /// The regulated speed (module documentation).
    fn regulated_speed(&self, curvature: f64, nearest: f64, remaining: f64) -> f64 {
        let p = &self.p;
        let mut v = p.max_speed;
        let floor = p.regulated_min_speed.min(p.max_speed / 2.0);
        let radius = if curvature.abs() > 1e-9 {
            1.0 / curvature.abs()
        } else {
            f64::INFINITY
        };
        if radius < p.regulated_min_radius {
            v *= radius / p.regulated_min_radius;
        }
        if nearest < p.cost_scaling_dist {
            v *= p.cost_scaling_gain * nearest / p.cost_scaling_dist;
        }
        v = v.max(floor).min(p.max_speed);
        if remaining < p.approach_dist {
            let approach = (v * remaining / p.approach_dist).max(p.min_approach_speed);
            v = v.min(approach);
        }
        v
    }

    /// Whether driving the arc (v, w) for `collision_time` (at least the robot's radius,
    /// at most `limit` metres) brings a laser point within `robot_radius` of the robot.
    fn arc_collides(&self, scan: &Scan, v: f64, w: f64, limit: f64) -> bool {
        let p = &self.p;
        let dist = (v * p.collision_time)
            .max(p.robot_radius)
            .min(limit.max(p.robot_radius));
        let steps = (dist / 0.05).ceil().max(1.0) as usize;
        let r2 = p.robot_radius * p.robot_radius;
        let k = if v.abs() > 1e-9 { w / v } else { 0.0 };
        (1..=steps).any(|i| {
            let sdist = dist * i as f64 / steps as f64;
            // The pose after `sdist` along the arc of curvature k, in the robot's frame.
            let (x, y) = if k.abs() < 1e-9 {
                (sdist, 0.0)
            } else {
                let th = k * sdist;
                (th.sin() / k, (1.0 - th.cos()) / k)
            };
            scan.points
                .iter()
                .any(|&(px, py)| (px - x).powi(2) + (py - y).powi(2) < r2)
        })
    }
}
