//! The navigator: the `wavefront` driver's decisions, pure (no actor, no clock: each step
//! is given its instant), so the same inputs give the same `G` data and the same commands
//! byte for byte, live or replayed.
//!
//! It holds the map's planner (`player_nav::plan`), the controller (VFH+ or regulated pure
//! pursuit, `player_nav::control`), the goal and the planner state of the `G` device, and
//! from each step's inputs (the pose on the map, the base's speed, the laser, the instant)
//! decides what the base is told: a command, one stop, or nothing (silence: the registry's
//! command watchdog then keeps the base stopped).
//!
//! **Planning.** A goal is checked against the static map when it arrives (off the map, or
//! in a cell the robot's centre may not occupy: [`PlannerState::NoPath`] and an error).
//! The route is planned from the robot's cell (or the nearest traversable cell within
//! half a metre, for a robot pushed against a wall) and planned again when the laser sees
//! the path blocked (at most once a second), when the robot strays more than [`STRAY`]
//! from it, and every `replan_period` (not within twice the goal tolerance of the goal:
//! a robot turning to the goal's heading keeps its route). A replan first marks what the
//! laser sees in free space (farther from every obstacle of the map than two cells plus
//! `MARK_SLACK` of the point's range: a wall seen through the localizer's small heading
//! error is not an obstacle) on a copy of the map: a route round an obstacle the map does not have. No route on the map
//! itself is [`PlannerState::NoPath`]; no route, or the goal covered, only because of what
//! the laser sees is [`PlannerState::Blocked`], retried every `replan_period`.
//!
//! **States.** Idle (no goal, or disabled), planning (a goal, no map or pose yet), driving,
//! reached, blocked, no path, e-stopped (until the latch is released; then idle and the
//! goal dropped) and pre-empted (until the next goal).

use player_nav::control::pursuit::{Pursuit, PursuitParams};
use player_nav::control::vfh::{Vfh, VfhParams};
use player_nav::control::{self, Command, Scan, State, Tolerance};
use player_nav::map::{Map, OCCUPIED};
use player_nav::plan::{Algorithm, CostParams, Costmap, PlanError, Planner};
use player_nav::pose::Pose;
use player_proto::nav::{Planner as PlannerData, PlannerState, MAX_WAYPOINTS};

/// How far from its route the robot may stray before the route is planned again, metres.
pub const STRAY: f64 = 0.5;

/// The least time between two replans the laser asks for, seconds.
const BLOCKED_REPLAN: f64 = 1.0;

/// How far round the robot the laser's points are marked on the map for a replan, metres.
const OVERLAY_REACH: f64 = 4.0;

/// The heading error of the pose a replan allows for, radians (2 degrees): a wall `r`
/// metres away seen from a pose off by this much lands about `r * MARK_SLACK` from where
/// the map has it, so only points farther than that (plus two cells) from the map's
/// obstacles are marked. With amcl's few centimetres and degrees of error, a fixed two
/// cells marked the far walls' points, and their inflation covered goals near walls.
const MARK_SLACK: f64 = 0.035;

/// Which local controller drives the route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControllerKind {
    /// VFH+ over the laser, steering to the route's waypoints (Player's).
    Vfh,
    /// Regulated pure pursuit along the route's cells (Nav2's default).
    PurePursuit,
}

/// The navigator's parameters, in SI units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NavParams {
    /// Which planner.
    pub algorithm: Algorithm,
    /// The costmap's (the robot's radius, `safety_dist`, `max_radius`).
    pub cost: CostParams,
    /// Which controller.
    pub controller: ControllerKind,
    /// Top speed, m/s.
    pub max_speed: f64,
    /// Top turn rate, rad/s.
    pub max_turn: f64,
    /// When the goal counts as reached.
    pub tolerance: Tolerance,
    /// Seconds between replans while driving.
    pub replan_period: f64,
}

/// The controller with its route.
#[derive(Debug, Clone)]
enum Controller {
    Vfh(Box<Vfh>),
    Pursuit(Box<Pursuit>),
}

/// A planned route: the cells' centres, the waypoints and where each waypoint is among
/// the cells.
#[derive(Debug, Clone, Default)]
struct Route {
    path: Vec<(f64, f64)>,
    waypoints: Vec<(f64, f64)>,
    waypoint_at: Vec<usize>,
}

/// What a step tells the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// This command (the navigator is driving).
    Drive(Command),
    /// One stop (it was driving and now is not).
    Stop,
    /// Nothing: the base is already stopped, or a client or the e-stop has it.
    Silent,
}

/// One step's inputs.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The robot's pose on the map.
    pub pose: Pose,
    /// The base's forward speed, m/s.
    pub speed: f64,
    /// The newest laser scan in the robot's frame, if any.
    pub scan: Option<&'a Scan>,
    /// The instant of the step, seconds (the base reading's time).
    pub time: f64,
}

/// The navigator (see the module's documentation).
pub struct Navigator {
    p: NavParams,
    /// The planner over the static map, and the map's id.
    planner: Option<(Planner, u32)>,
    goal: Option<Pose>,
    enabled: bool,
    state: PlannerState,
    controller: Controller,
    route: Option<Route>,
    last_plan: f64,
    last_blocked_replan: f64,
    replan_now: bool,
    last_time: Option<f64>,
    pose: Option<Pose>,
    /// The last order was a non-zero command: a stop is owed when driving ends.
    moving: bool,
    /// Why the last goal failed, once, for the driver to tell its sender.
    error: Option<String>,
    /// Plans made (for the bench and the tests).
    plans: u64,
}

impl Navigator {
    /// A navigator with `p`, no map, no goal.
    pub fn new(p: NavParams) -> Navigator {
        let tolerance = p.tolerance;
        let controller = match p.controller {
            ControllerKind::Vfh => Controller::Vfh(Box::new(Vfh::new(VfhParams {
                robot_radius: p.cost.radius,
                max_speed: p.max_speed,
                max_turn: p.max_turn,
                tolerance,
                ..VfhParams::default()
            }))),
            ControllerKind::PurePursuit => {
                let d = PursuitParams::default();
                Controller::Pursuit(Box::new(Pursuit::new(PursuitParams {
                    max_speed: p.max_speed,
                    max_turn: p.max_turn,
                    regulated_min_speed: d.regulated_min_speed.min(p.max_speed / 2.0),
                    // Nav2's 0.2 m for a 0.25 m robot: the arc's check keeps off what the
                    // laser sees without stopping beside every wall the route passes.
                    robot_radius: 0.8 * p.cost.radius,
                    tolerance,
                    ..d
                })))
            }
        };
        Navigator {
            p,
            planner: None,
            goal: None,
            enabled: true,
            state: PlannerState::Idle,
            controller,
            route: None,
            last_plan: f64::NEG_INFINITY,
            last_blocked_replan: f64::NEG_INFINITY,
            replan_now: false,
            last_time: None,
            pose: None,
            moving: false,
            error: None,
            plans: 0,
        }
    }

    /// The map's id, once a map is set.
    pub fn map_id(&self) -> Option<u32> {
        self.planner.as_ref().map(|(_, id)| *id)
    }

    /// A new map (`id` its `M` id): the costmap is built, the route planned again.
    pub fn set_map(&mut self, map: &Map, id: u32) -> Result<(), String> {
        let costmap = Costmap::new(map, self.p.cost)?;
        self.planner = Some((Planner::new(costmap), id));
        self.drop_route();
        if let Some(goal) = self.goal {
            if matches!(
                self.state,
                PlannerState::Planning | PlannerState::Driving | PlannerState::Blocked
            ) {
                self.state = PlannerState::Planning;
                self.check_goal(goal);
            }
        }
        Ok(())
    }

    /// The state now.
    pub fn state(&self) -> PlannerState {
        self.state
    }

    /// Plans made so far.
    pub fn plans(&self) -> u64 {
        self.plans
    }

    /// Why the last goal failed, once.
    pub fn take_error(&mut self) -> Option<String> {
        self.error.take()
    }

    /// A new goal (replacing the old). Checked at once when the map is known: off the map
    /// or in an obstacle, the state is [`PlannerState::NoPath`] and the error is kept
    /// ([`Navigator::take_error`]). Ignored while the e-stop is latched.
    pub fn set_goal(&mut self, goal: Pose) {
        if self.state == PlannerState::EStopped {
            return;
        }
        self.goal = Some(goal);
        self.drop_route();
        self.state = PlannerState::Planning;
        self.check_goal(goal);
    }

    fn check_goal(&mut self, goal: Pose) {
        let Some((planner, _)) = &self.planner else {
            return;
        };
        let c = planner.costmap();
        let why = match c.cell_of(goal.x, goal.y) {
            None => Some("is off the map".to_string()),
            Some((col, row)) if !c.traversable(i64::from(col), i64::from(row)) => Some(format!(
                "is in an obstacle or within the robot's radius ({} m) of one",
                self.p.cost.radius
            )),
            Some(_) => None,
        };
        if let Some(why) = why {
            self.fail(format!(
                "goal ({:.3}, {:.3}) m {why}: no path",
                goal.x, goal.y
            ));
        }
    }

    fn fail(&mut self, why: String) {
        self.state = PlannerState::NoPath;
        self.error = Some(why);
        self.drop_route();
    }

    /// Cancels the goal: idle, the base stopped by the next step.
    pub fn cancel(&mut self) {
        self.goal = None;
        self.drop_route();
        if self.state != PlannerState::EStopped {
            self.state = PlannerState::Idle;
        }
    }

    /// Enables or disables motion. Disabled, the base is stopped and the goal kept (state
    /// idle); enabled again, the route to it is planned anew.
    pub fn enable(&mut self, on: bool) {
        self.enabled = on;
        self.drop_route();
        if matches!(self.state, PlannerState::EStopped | PlannerState::Preempted) {
            return;
        }
        self.state = match (on, self.goal) {
            (true, Some(_)) => PlannerState::Planning,
            _ => PlannerState::Idle,
        };
    }

    /// The e-stop latched (state e-stopped, the route dropped: the registry has stopped
    /// the base) or released (idle, the goal dropped).
    pub fn estop(&mut self, latched: bool) {
        self.drop_route();
        self.moving = false;
        if latched {
            self.state = PlannerState::EStopped;
        } else if self.state == PlannerState::EStopped {
            self.goal = None;
            self.state = PlannerState::Idle;
        }
    }

    /// A client's own command took the base: pre-empted until the next goal.
    pub fn preempt(&mut self) {
        self.drop_route();
        self.moving = false;
        if self.state != PlannerState::EStopped {
            self.state = PlannerState::Preempted;
        }
    }

    fn drop_route(&mut self) {
        self.route = None;
        match &mut self.controller {
            Controller::Vfh(v) => v.clear(),
            Controller::Pursuit(p) => p.clear(),
        }
    }

    /// Stops if the last order moved the base, else stays silent.
    pub fn halt(&mut self) -> Order {
        if std::mem::take(&mut self.moving) {
            Order::Stop
        } else {
            Order::Silent
        }
    }

    /// One step: what the base is told now.
    pub fn step(&mut self, inp: Inputs<'_>) -> Order {
        self.pose = Some(inp.pose);
        let dt = self
            .last_time
            .map_or(0.1, |t| (inp.time - t).clamp(0.0, 1.0));
        self.last_time = Some(inp.time);
        let Some(goal) = self.goal else {
            return self.halt();
        };
        if !self.enabled
            || !matches!(
                self.state,
                PlannerState::Planning | PlannerState::Driving | PlannerState::Blocked
            )
            || self.planner.is_none()
        {
            return self.halt();
        }
        let empty = Scan::default();
        let scan = inp.scan.unwrap_or(&empty);
        let near_goal =
            (goal.x - inp.pose.x).hypot(goal.y - inp.pose.y) <= 2.0 * self.p.tolerance.distance;
        let due = match &self.route {
            None => {
                self.state == PlannerState::Planning
                    || inp.time - self.last_plan >= self.p.replan_period
            }
            Some(r) => {
                self.replan_now
                    || (!near_goal && inp.time - self.last_plan >= self.p.replan_period)
                    || (!near_goal && stray(r, inp.pose) > STRAY)
            }
        };
        if due {
            self.replan_now = false;
            self.last_plan = inp.time;
            if !self.replan(inp.pose, goal, scan) {
                return self.halt();
            }
        }
        if self.route.is_none() {
            return self.halt();
        }
        let out = match &mut self.controller {
            Controller::Vfh(v) => v.update(inp.pose, inp.speed, scan, dt),
            Controller::Pursuit(p) => p.update(inp.pose, scan),
        };
        if out.blocked && inp.time - self.last_blocked_replan >= BLOCKED_REPLAN {
            self.last_blocked_replan = inp.time;
            self.replan_now = true;
        }
        self.state = match out.state {
            State::Reached => PlannerState::Reached,
            State::Blocked => PlannerState::Blocked,
            State::Idle => PlannerState::Idle,
            State::Driving | State::Turning => PlannerState::Driving,
        };
        if self.state == PlannerState::Reached {
            return self.halt();
        }
        self.moving = out.command != Command::STOP;
        Order::Drive(out.command)
    }

    /// Plans from `pose` to `goal` (see the module's documentation); false when there is
    /// no route (the state says why).
    fn replan(&mut self, pose: Pose, goal: Pose, scan: &Scan) -> bool {
        let Some((planner, _)) = &mut self.planner else {
            return false;
        };
        self.plans += 1;
        let overlay = overlay_map(planner.costmap(), pose, scan);
        let (result, with_overlay) = match overlay {
            Some(map) => match Costmap::new(&map, self.p.cost) {
                Ok(c) => (
                    plan_on(&mut Planner::new(c), self.p.algorithm, pose, goal),
                    true,
                ),
                Err(_) => (plan_on(planner, self.p.algorithm, pose, goal), false),
            },
            None => (plan_on(planner, self.p.algorithm, pose, goal), false),
        };
        match result {
            Ok(route) => {
                self.set_route(route, goal);
                if self.state != PlannerState::Driving {
                    self.state = PlannerState::Driving;
                }
                true
            }
            // The goal was traversable on the map when it came (`check_goal`): blocked only
            // by what the laser sees now (a localizer's error moves the walls it sees).
            Err(PlanError::NoPath | PlanError::Blocked("goal")) if with_overlay => {
                self.drop_route();
                self.state = PlannerState::Blocked;
                false
            }
            Err(PlanError::Blocked("start")) => {
                self.drop_route();
                self.state = PlannerState::Blocked;
                false
            }
            Err(e) => {
                let why = match e {
                    PlanError::OffMap("start") => "the robot is off the map".to_string(),
                    PlanError::NoPath => format!(
                        "no path from the robot to the goal ({:.3}, {:.3}) m",
                        goal.x, goal.y
                    ),
                    e => format!("goal ({:.3}, {:.3}) m: {e}", goal.x, goal.y),
                };
                self.fail(why);
                false
            }
        }
    }

    fn set_route(&mut self, route: Route, goal: Pose) {
        match &mut self.controller {
            Controller::Vfh(v) => v.set_route(route.waypoints.clone(), goal),
            Controller::Pursuit(p) => p.set_route(route.path.clone(), goal),
        }
        self.route = Some(route);
    }

    /// The index of the waypoint steered to now.
    fn current_waypoint(&self) -> Option<usize> {
        let r = self.route.as_ref()?;
        Some(match &self.controller {
            Controller::Vfh(v) => v
                .current_waypoint()
                .min(r.waypoints.len().saturating_sub(1)),
            Controller::Pursuit(p) => {
                let at = p.nearest_point();
                r.waypoint_at
                    .iter()
                    .position(|&c| c > at)
                    .unwrap_or(r.waypoints.len().saturating_sub(1))
            }
        })
    }

    /// The route's waypoints as `x G w` answers them: mm, mm, degrees (0 but the last,
    /// which carries the goal's heading); at most [`MAX_WAYPOINTS`] (the first 127 and
    /// the last when the route has more).
    pub fn waypoints(&self) -> Vec<[i32; 3]> {
        let (Some(r), Some(goal)) = (&self.route, self.goal) else {
            return Vec::new();
        };
        let n = r.waypoints.len();
        let mut out: Vec<[i32; 3]> = r
            .waypoints
            .iter()
            .enumerate()
            .filter(|&(i, _)| i < MAX_WAYPOINTS - 1 || i + 1 == n)
            .map(|(_, &(x, y))| [mm(x), mm(y), 0])
            .collect();
        if let Some(last) = out.last_mut() {
            last[2] = deg(goal.theta);
        }
        out
    }

    /// The `G` reading now, once the navigator has had a pose: the layout has no "pose
    /// unknown", and a reading of (0, 0) before the first pose would put the robot at the
    /// map's origin for every client that reads it.
    pub fn data(&self) -> Option<PlannerData> {
        let pose = self.pose?;
        let goal = self.goal.unwrap_or_default();
        let wps = self.waypoints();
        let (waypoint, curr) = match self.current_waypoint() {
            Some(i) if !wps.is_empty() => {
                let i = i.min(wps.len() - 1);
                (wps[i], i as i16)
            }
            _ => ([0; 3], -1),
        };
        Some(PlannerData {
            valid: self.route.is_some(),
            done: self.state == PlannerState::Reached,
            pose: [mm(pose.x), mm(pose.y), deg(pose.theta)],
            goal: if self.goal.is_some() {
                [mm(goal.x), mm(goal.y), deg(goal.theta)]
            } else {
                [0; 3]
            },
            waypoint,
            curr_waypoint: curr,
            waypoint_count: wps.len() as u16,
            state: self.state,
        })
    }
}

fn mm(m: f64) -> i32 {
    (m * 1000.0).round() as i32
}

/// A heading in whole degrees, 0 to 359.
fn deg(rad: f64) -> i32 {
    (rad.to_degrees().round() as i32).rem_euclid(360)
}

/// How far `pose` is from the route's path.
fn stray(r: &Route, pose: Pose) -> f64 {
    r.path
        .iter()
        .map(|&(x, y)| (x - pose.x).hypot(y - pose.y))
        .fold(f64::INFINITY, f64::min)
}

/// The map with what the laser sees in free space marked occupied, or `None` when it sees
/// nothing the map lacks.
fn overlay_map(c: &Costmap, pose: Pose, scan: &Scan) -> Option<Map> {
    let res = c.map().resolution();
    let (s, co) = pose.theta.sin_cos();
    let mut map: Option<Map> = None;
    for &(x, y) in &scan.points {
        let range = x.hypot(y);
        if range > OVERLAY_REACH {
            continue;
        }
        let (wx, wy) = (pose.x + co * x - s * y, pose.y + s * x + co * y);
        let Some((col, row)) = c.cell_of(wx, wy) else {
            continue;
        };
        let clear = c.clearance(i64::from(col), i64::from(row)).unwrap_or(0.0);
        if clear <= 2.0 * res + range * MARK_SLACK + 1e-9 {
            continue;
        }
        map.get_or_insert_with(|| c.map().clone())
            .set(col as usize, row as usize, OCCUPIED);
    }
    map
}

/// Plans on `planner` from `pose` (or the nearest traversable cell within half a metre)
/// to `goal`.
fn plan_on(
    planner: &mut Planner,
    algorithm: Algorithm,
    pose: Pose,
    goal: Pose,
) -> Result<Route, PlanError> {
    let c = planner.costmap();
    let res = c.map().resolution();
    let start = c
        .cell_of(pose.x, pose.y)
        .ok_or(PlanError::OffMap("start"))?;
    let start = if c.traversable(i64::from(start.0), i64::from(start.1)) {
        start
    } else {
        let reach = (0.5 / res).ceil().max(1.0) as u32;
        c.nearest_traversable(start, reach)
            .ok_or(PlanError::Blocked("start"))?
    };
    let goal_cell = c.cell_of(goal.x, goal.y).ok_or(PlanError::OffMap("goal"))?;
    let plan = match algorithm {
        Algorithm::Wavefront => match planner.replan_from(start, goal_cell) {
            Some(r) => r,
            None => planner.plan(algorithm, start, goal_cell),
        },
        Algorithm::AStar => planner.plan(algorithm, start, goal_cell),
    }?;
    let c = planner.costmap();
    let mut waypoint_at = Vec::with_capacity(plan.waypoints.len());
    let mut k = 0;
    for w in &plan.waypoints {
        while k < plan.cells.len() && plan.cells[k] != *w {
            k += 1;
        }
        waypoint_at.push(k.min(plan.cells.len().saturating_sub(1)));
    }
    Ok(Route {
        path: plan.path_world(c),
        waypoints: plan.waypoints_world(c),
        waypoint_at,
    })
}

/// The laser's 361-bin view (mm; 0 and the maximum mean nothing seen) as a scan from a
/// laser mounted at `mount` on the robot.
pub fn scan_of_view(ranges_mm: &[u16; control::PLAYER_BEAMS], mount: Pose) -> Scan {
    let bearings = (0..control::PLAYER_BEAMS)
        .map(|i| (i as f64 * 0.5 - 90.0).to_radians())
        .collect();
    let ranges = ranges_mm.iter().map(|&r| f64::from(r) / 1000.0).collect();
    Scan::with_mount(
        bearings,
        ranges,
        f64::from(control::PLAYER_MAX_RANGE_MM) / 1000.0,
        mount,
    )
}
