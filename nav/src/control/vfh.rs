//! VFH+ (Ulrich and Borenstein, "VFH+: Reliable Obstacle Avoidance for Fast Mobile
//! Robots", ICRA 1998) as Player's `vfh` driver ran it over the laser, steering towards the
//! current waypoint of the plan.
//!
//! Each update builds, from the current scan alone (no memory of earlier ones):
//!
//! 1. the **primary polar histogram**: a window of `window_diameter` x `window_diameter`
//!    cells of `cell_size` round the robot; a cell in front of the robot (within 90
//!    degrees of its heading; the laser sees nothing behind) counts as occupied when it
//!    lies at or beyond the laser's range in its direction (Player's rule: the hit and its
//!    shadow), and adds its magnitude `((R - d) [mm])^4 / 1e8` (R the window's radius,
//!    Player's 3000 mm) to every sector within the enlargement angle
//!    `asin((robot_radius + safety_dist) / d)` of its direction; on the final approach
//!    (the target is the goal) cells farther than the goal plus that enlargement are left
//!    out (ours: nothing beyond the goal can be hit on the way to it, and a goal in a dead
//!    end was otherwise walled off by the end wall behind it);
//! 2. the **binary histogram**: a sector is blocked above `obs_cutoff`, free below
//!    `free_space_cutoff`, as before in between (hysteresis; Player's defaults make the
//!    two equal);
//! 3. the **masked histogram**: directions the robot cannot turn into at its speed are
//!    blocked too: the circles of its tightest turns (radius `speed / max_turn`) to either
//!    side, grown by `robot_radius + safety_dist`, cut off every direction beyond the
//!    first occupied cell inside them; and nothing behind the robot is taken;
//! 4. the **direction**: each run of free sectors is an opening; one under 10 degrees is
//!    ignored, a narrow one (under 80 degrees) offers its middle, a wide one its middle,
//!    the directions 40 degrees inside each border and the target direction when that lies
//!    between them; the candidate of least `weight_desired_dir * |c - target| +
//!    weight_current_dir * |c - previous choice|` wins.
//!
//! The turn rate is Player's: the chosen direction over 75 degrees times `max_turn`. The
//! speed is `max_speed` less in proportion to that direction's angle (none at 90
//! degrees), slowed on the approach to the goal, raised by at most `max_acceleration` per
//! second. With no opening at all the robot stops and turns in place (Player's vfh did).
//! The target is the current waypoint; the next one is taken within `waypoint_tolerance`
//! of it. A target behind the robot is first turned to in place.

use super::{path_blocked, Command, GoalLatch, Output, Scan, State, Tolerance};
use crate::pose::{angle_diff, normalize, Pose};

use std::f64::consts::{FRAC_PI_2, PI};

/// VFH's parameters. Defaults are Player's `vfh` driver's unless said otherwise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VfhParams {
    /// Histogram grid cell, metres (Player: 0.1).
    pub cell_size: f64,
    /// The window's width in cells (Player: 61, a 6.1 m window).
    pub window_diameter: usize,
    /// Sector width, degrees (Player: 5).
    pub sector_angle: f64,
    /// The robot's radius, metres (Player read it from the base's geometry; 0.25 here).
    pub robot_radius: f64,
    /// Clearance kept while turning round obstacles, metres (Player: 0.1).
    pub safety_dist: f64,
    /// Top speed, m/s (Player: 0.2).
    pub max_speed: f64,
    /// Top turn rate, rad/s (Player: 40 deg/s).
    pub max_turn: f64,
    /// Speed increase per second at most, m/s^2 (Player 2.0's `max_acceleration`: 0.2).
    pub max_acceleration: f64,
    /// A sector is free below this (Player: 2,000,000; ours 4,000,000, scaled for 1.2 m
    /// corridors: docs/navigation.md, "The local controllers").
    pub free_space_cutoff: f64,
    /// A sector is blocked above this (Player: the same as `free_space_cutoff`).
    pub obs_cutoff: f64,
    /// Weight of a candidate's distance from the target direction (Player: 5).
    pub weight_desired_dir: f64,
    /// Weight of its distance from the previous choice (Player: 3).
    pub weight_current_dir: f64,
    /// The next waypoint is taken within this of the current one, metres (Player 2's
    /// wavefront `distance_epsilon`: 0.5).
    pub waypoint_tolerance: f64,
    /// The approach: speed at most `approach_gain` times the distance to the goal (1/s;
    /// ours, 1.0), not below 0.05 m/s.
    pub approach_gain: f64,
    /// How far along the path ahead the laser is checked for `blocked`, metres (ours: 1.0).
    pub blocked_lookahead: f64,
    /// The goal tolerance (default [250 mm, 15 deg]).
    pub tolerance: Tolerance,
}

impl Default for VfhParams {
    fn default() -> VfhParams {
        VfhParams {
            cell_size: 0.1,
            window_diameter: 61,
            sector_angle: 5.0,
            robot_radius: 0.25,
            safety_dist: 0.1,
            max_speed: 0.2,
            max_turn: 40f64.to_radians(),
            max_acceleration: 0.2,
            free_space_cutoff: 4_000_000.0,
            obs_cutoff: 4_000_000.0,
            weight_desired_dir: 5.0,
            weight_current_dir: 3.0,
            waypoint_tolerance: 0.5,
            approach_gain: 1.0,
            blocked_lookahead: 1.0,
            tolerance: Tolerance::default(),
        }
    }
}

/// One window cell's fixed geometry.
#[derive(Debug, Clone)]
struct Cell {
    x: f64,
    y: f64,
    dist: f64,
    dir: f64,
    magnitude: f64,
    /// The sectors its enlarged direction covers.
    sectors: Vec<u16>,
}

/// The VFH+ controller: its window's geometry and what it keeps between updates (the
/// binary histogram's last state, the last direction chosen, the route).
#[derive(Debug, Clone)]
pub struct Vfh {
    p: VfhParams,
    cells: Vec<Cell>,
    sectors: usize,
    alpha: f64,
    binary: Vec<bool>,
    last_dir: f64,
    waypoints: Vec<(f64, f64)>,
    current: usize,
    goal: Option<Pose>,
    latch: GoalLatch,
}

impl Vfh {
    /// A controller with `p`.
    pub fn new(p: VfhParams) -> Vfh {
        let alpha = p.sector_angle.clamp(1.0, 90.0).to_radians();
        let sectors = (2.0 * PI / alpha).round() as usize;
        let alpha = 2.0 * PI / sectors as f64;
        let half = (p.window_diameter / 2) as i64;
        let radius = half as f64 * p.cell_size;
        let grow = p.robot_radius + p.safety_dist;
        let mut cells = Vec::new();
        for i in -half..=half {
            for j in -half..=half {
                let (x, y) = (i as f64 * p.cell_size, j as f64 * p.cell_size);
                let dist = x.hypot(y);
                let dir = y.atan2(x);
                if dist == 0.0 || dist > radius || dir.abs() > FRAC_PI_2 {
                    continue;
                }
                let magnitude = ((radius - dist) * 1000.0).powi(4) / 1e8;
                let gamma = (grow / dist).min(1.0).asin();
                let sectors = covered(dir - gamma, dir + gamma, alpha, sectors);
                cells.push(Cell {
                    x,
                    y,
                    dist,
                    dir,
                    magnitude,
                    sectors,
                });
            }
        }
        Vfh {
            p,
            cells,
            sectors,
            alpha,
            binary: vec![false; sectors],
            last_dir: 0.0,
            waypoints: Vec::new(),
            current: 0,
            goal: None,
            latch: GoalLatch::default(),
        }
    }

    /// Its parameters.
    pub fn params(&self) -> &VfhParams {
        &self.p
    }

    /// A new route: the waypoints (world, metres; the first may be the start) and the
    /// goal pose (its position normally the last waypoint's).
    pub fn set_route(&mut self, waypoints: Vec<(f64, f64)>, goal: Pose) {
        self.waypoints = waypoints;
        self.current = 0;
        self.goal = Some(goal);
        self.latch.reset();
        self.last_dir = 0.0;
    }

    /// Drops the route: the robot stops.
    pub fn clear(&mut self) {
        self.goal = None;
        self.waypoints.clear();
    }

    /// The waypoint steered to now (an index into the route's waypoints).
    pub fn current_waypoint(&self) -> usize {
        self.current
    }

    /// One control step: `pose` on the map, forward speed `speed` (m/s) now, the scan,
    /// and the time since the last step (s).
    pub fn update(&mut self, pose: Pose, speed: f64, scan: &Scan, dt: f64) -> Output {
        let Some(goal) = self.goal else {
            return Output::stopped(State::Idle, false);
        };
        if let Some(out) = self
            .latch
            .update(pose, goal, self.p.tolerance, self.p.max_turn)
        {
            return out;
        }
        // The current waypoint: the next one once within the tolerance of it.
        while self.current + 1 < self.waypoints.len() {
            let (wx, wy) = self.waypoints[self.current];
            if (wx - pose.x).hypot(wy - pose.y) > self.p.waypoint_tolerance {
                break;
            }
            self.current += 1;
        }
        let target = self
            .waypoints
            .get(self.current)
            .copied()
            .unwrap_or((goal.x, goal.y));
        let ahead: Vec<(f64, f64)> = self.waypoints[self.current.min(self.waypoints.len())..]
            .iter()
            .copied()
            .chain(std::iter::once((goal.x, goal.y)))
            .collect();
        let blocked = path_blocked(
            pose,
            &ahead,
            0,
            scan,
            self.p.robot_radius,
            self.p.blocked_lookahead,
        )
        .is_some();
        let bearing = angle_diff((target.1 - pose.y).atan2(target.0 - pose.x), pose.theta);
        let max_turn = self.p.max_turn;
        if bearing.abs() > FRAC_PI_2 {
            // Behind: turn to it first.
            return Output {
                command: Command::from_si(0.0, max_turn * bearing.signum(), 0.0, max_turn),
                state: State::Driving,
                blocked,
            };
        }
        // On the final approach the window ends just beyond the goal: what lies farther
        // than the goal plus the enlargement cannot be reached on the way there, and a goal
        // in a dead end would otherwise be walled off by the end wall behind it.
        let dist_goal = (goal.x - pose.x).hypot(goal.y - pose.y);
        let window = if self.current + 1 >= self.waypoints.len() {
            dist_goal + self.p.robot_radius + self.p.safety_dist
        } else {
            f64::INFINITY
        };
        let Some(dir) = self.choose(scan, speed.max(0.0), bearing, window) else {
            // Hemmed in: stop and turn in place, towards the target's side.
            let side = if bearing >= 0.0 { 1.0 } else { -1.0 };
            return Output {
                command: Command::from_si(0.0, max_turn * side, 0.0, max_turn),
                state: State::Blocked,
                blocked: true,
            };
        };
        let turn = (dir / 75f64.to_radians() * max_turn).clamp(-max_turn, max_turn);
        let mut v = self.p.max_speed * (1.0 - dir.abs() / FRAC_PI_2).max(0.0);
        v = v.min((self.p.approach_gain * dist_goal).max(0.05));
        v = v.min(speed.max(0.0) + self.p.max_acceleration * dt.max(0.0));
        Output {
            command: Command::from_si(v, turn, self.p.max_speed, max_turn),
            state: State::Driving,
            blocked,
        }
    }

    /// Steps 1-4 of the module documentation: the direction to take (radians from the
    /// heading), or `None` when every direction is blocked. Cells farther than `window`
    /// are left out.
    fn choose(&mut self, scan: &Scan, speed: f64, target: f64, window: f64) -> Option<f64> {
        let n = self.sectors;
        // 1. Primary histogram.
        let mut hist = vec![0.0f64; n];
        let mut occupied = vec![false; self.cells.len()];
        for (k, c) in self.cells.iter().enumerate() {
            if c.dist <= window && c.dist + self.p.cell_size / 2.0 > scan.range_towards(c.dir) {
                occupied[k] = true;
                for &s in &c.sectors {
                    hist[s as usize] += c.magnitude;
                }
            }
        }
        // 2. Binary histogram with hysteresis.
        for (b, &h) in self.binary.iter_mut().zip(&hist) {
            if h > self.p.obs_cutoff {
                *b = true;
            } else if h < self.p.free_space_cutoff {
                *b = false;
            }
        }
        // 3. Masked histogram: the turning circles at this speed.
        let r_turn = if self.p.max_turn > 0.0 {
            speed / self.p.max_turn
        } else {
            f64::INFINITY
        };
        let reach =
            r_turn + self.p.robot_radius + if speed > 0.0 { self.p.safety_dist } else { 0.0 };
        let (mut phi_right, mut phi_left) = (-FRAC_PI_2, FRAC_PI_2);
        for (c, _) in self.cells.iter().zip(&occupied).filter(|(_, &o)| o) {
            if c.dir < 0.0 && c.dir >= phi_right && c.x.hypot(c.y + r_turn) < reach {
                phi_right = c.dir;
            } else if c.dir >= 0.0 && c.dir <= phi_left && c.x.hypot(c.y - r_turn) < reach {
                phi_left = c.dir;
            }
        }
        let centre = |k: usize| normalize(-PI + (k as f64 + 0.5) * self.alpha);
        let free: Vec<bool> = (0..n)
            .map(|k| !self.binary[k] && (phi_right..=phi_left).contains(&centre(k)))
            .collect();
        // 4. Openings and candidates (the free runs lie within [-90, 90] degrees, so they
        // do not wrap round).
        let mut candidates = Vec::new();
        let mut k = 0;
        while k < n {
            if !free[k] {
                k += 1;
                continue;
            }
            let first = k;
            while k < n && free[k] {
                k += 1;
            }
            let (right, left) = (centre(first), centre(k - 1));
            let width = left - right;
            if width < 10f64.to_radians() {
                continue;
            }
            candidates.push((right + left) / 2.0);
            if width >= 80f64.to_radians() {
                let (r40, l40) = (right + 40f64.to_radians(), left - 40f64.to_radians());
                candidates.push(r40);
                candidates.push(l40);
                if target > r40 && target < l40 {
                    candidates.push(target);
                }
            }
        }
        let cost = |c: f64| {
            self.p.weight_desired_dir * angle_diff(c, target).abs()
                + self.p.weight_current_dir * angle_diff(c, self.last_dir).abs()
        };
        let best = candidates
            .into_iter()
            .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))?;
        self.last_dir = best;
        Some(best)
    }
}

/// The sectors (of `n`, each `alpha` wide from -pi) that the angular span `[lo, hi]`
/// touches.
fn covered(lo: f64, hi: f64, alpha: f64, n: usize) -> Vec<u16> {
    let first = ((lo + PI) / alpha).floor() as i64;
    let last = ((hi + PI) / alpha).floor() as i64;
    (first..=last)
        .map(|k| k.rem_euclid(n as i64) as u16)
        .collect()
}
