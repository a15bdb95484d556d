//! The controllers driving a simulated robot: a unicycle moved by the commands exactly
//! (10 ms steps), in a grid world, seeing it through a ray-cast 361-beam laser (0.7.4a's
//! `l` view), on routes planned on a map of that world. Each run checks every command
//! against the bounds, that the robot's disc (0.2 m) never touches an occupied cell, and
//! where and how it ends.

use super::pursuit::{Pursuit, PursuitParams};
use super::vfh::{Vfh, VfhParams};
use super::{Command, GoalLatch, Output, Scan, State, Tolerance, PLAYER_BEAMS};
use crate::map::{Map, FREE, OCCUPIED};
use crate::plan::{Algorithm, CostParams, Costmap, Planner};
use crate::pose::{angle_diff, Pose};

const BODY: f64 = 0.2;
const RES: f64 = 0.05;

/// A world of `w` x `h` metres with walls round it.
fn room(w: f64, h: f64) -> Map {
    let (cw, ch) = ((w / RES) as usize, (h / RES) as usize);
    let mut m = Map::new(cw, ch, RES, Pose::default(), FREE).unwrap();
    for c in 0..cw {
        m.set(c, 0, OCCUPIED);
        m.set(c, ch - 1, OCCUPIED);
    }
    for r in 0..ch {
        m.set(0, r, OCCUPIED);
        m.set(cw - 1, r, OCCUPIED);
    }
    m
}

/// Fills the rectangle [x0, x1] x [y0, y1] (metres).
fn block(m: &mut Map, x0: f64, y0: f64, x1: f64, y1: f64) {
    let rows = (y0 / RES) as usize..=((y1 / RES) as usize).min(m.height() - 1);
    for r in rows {
        for c in (x0 / RES) as usize..=((x1 / RES) as usize).min(m.width() - 1) {
            m.set(c, r, OCCUPIED);
        }
    }
}

/// The range along a ray to the first occupied cell (cell-by-cell traversal), up to 8 m.
fn raycast(m: &Map, x: f64, y: f64, a: f64) -> f64 {
    let (dx, dy) = a.cos_sin_pair();
    let (mut c, mut r) = ((x / RES).floor() as i64, (y / RES).floor() as i64);
    let (sc, sr) = (dx.signum() as i64, dy.signum() as i64);
    let next = |p: f64, d: f64, i: i64| {
        if d > 0.0 {
            ((i + 1) as f64 * RES - p) / d
        } else if d < 0.0 {
            (i as f64 * RES - p) / d
        } else {
            f64::INFINITY
        }
    };
    let (mut tx, mut ty) = (next(x, dx, c), next(y, dy, r));
    let (ddx, ddy) = (RES / dx.abs(), RES / dy.abs());
    loop {
        let t = tx.min(ty);
        if t > 8.0 {
            return 8.0;
        }
        if tx < ty {
            c += sc;
            tx += ddx;
        } else {
            r += sr;
            ty += ddy;
        }
        match m.get(c, r) {
            Some(FREE) => {}
            _ => return t,
        }
    }
}

trait CosSin {
    fn cos_sin_pair(self) -> (f64, f64);
}
impl CosSin for f64 {
    fn cos_sin_pair(self) -> (f64, f64) {
        (self.cos(), self.sin())
    }
}

/// The 0.7.4a laser view from `pose`.
fn laser(m: &Map, pose: Pose) -> [u16; PLAYER_BEAMS] {
    let mut out = [0u16; PLAYER_BEAMS];
    for (i, o) in out.iter_mut().enumerate() {
        let a = pose.theta + (i as f64 * 0.5 - 90.0).to_radians();
        *o = (raycast(m, pose.x, pose.y, a) * 1000.0).round().min(8000.0) as u16;
    }
    out
}

/// The distance from (x, y) to the nearest occupied cell's square, within 1 m.
fn clearance(m: &Map, x: f64, y: f64) -> f64 {
    let (c0, r0) = ((x / RES).floor() as i64, (y / RES).floor() as i64);
    let mut best = 1.0f64;
    for r in r0 - 20..=r0 + 20 {
        for c in c0 - 20..=c0 + 20 {
            if m.get(c, r).is_some_and(|v| v == FREE) {
                continue;
            }
            let (lx, ly) = (c as f64 * RES, r as f64 * RES);
            let qx = x.clamp(lx, lx + RES);
            let qy = y.clamp(ly, ly + RES);
            best = best.min((x - qx).hypot(y - qy));
        }
    }
    best
}

enum Ctl {
    Vfh(Vfh),
    Pursuit(Pursuit),
}

struct Run {
    pose: Pose,
    state: State,
    seconds: f64,
    min_clearance: f64,
    blocked_seen: bool,
}

/// Plans on `plan_map` and drives in `world` until reached, blocked for 3 s, or `limit`
/// seconds.
fn drive(world: &Map, plan_map: &Map, start: Pose, goal: Pose, mut ctl: Ctl, limit: f64) -> Run {
    let cm = Costmap::new(plan_map, CostParams::default()).unwrap();
    let mut planner = Planner::new(cm.clone());
    let s = cm.cell_of(start.x, start.y).unwrap();
    let g = cm.cell_of(goal.x, goal.y).unwrap();
    let plan = planner.plan(Algorithm::AStar, s, g).expect("a path");
    let (max_v, max_w) = match &mut ctl {
        Ctl::Vfh(v) => {
            v.set_route(plan.waypoints_world(&cm), goal);
            (v.params().max_speed, v.params().max_turn)
        }
        Ctl::Pursuit(p) => {
            p.set_route(plan.path_world(&cm), goal);
            (p.params().max_speed, p.params().max_turn)
        }
    };
    let (mut pose, mut v) = (start, 0.0f64);
    let mut run = Run {
        pose,
        state: State::Driving,
        seconds: 0.0,
        min_clearance: f64::INFINITY,
        blocked_seen: false,
    };
    let mut blocked_for = 0.0;
    while run.seconds < limit {
        let scan = Scan::from_player_361(&laser(world, pose));
        let out: Output = match &mut ctl {
            Ctl::Vfh(c) => c.update(pose, v, &scan, 0.1),
            Ctl::Pursuit(c) => c.update(pose, &scan),
        };
        let Command { speed, turn } = out.command;
        assert!(
            f64::from(speed.abs()) <= max_v * 1000.0 + 0.5,
            "speed {speed}"
        );
        assert!(
            f64::from(turn.abs()) <= max_w.to_degrees() + 0.5,
            "turn {turn}"
        );
        run.blocked_seen |= out.blocked;
        run.state = out.state;
        if out.state == State::Reached {
            break;
        }
        blocked_for = if out.state == State::Blocked {
            blocked_for + 0.1
        } else {
            0.0
        };
        if blocked_for > 3.0 {
            break;
        }
        v = f64::from(speed) / 1000.0;
        let w = f64::from(turn).to_radians();
        for _ in 0..10 {
            let dt = 0.01;
            if w.abs() < 1e-9 {
                pose.x += v * dt * pose.theta.cos();
                pose.y += v * dt * pose.theta.sin();
            } else {
                let th = pose.theta + w * dt;
                pose.x += v / w * (th.sin() - pose.theta.sin());
                pose.y -= v / w * (th.cos() - pose.theta.cos());
                pose.theta = th;
            }
            let c = clearance(world, pose.x, pose.y);
            run.min_clearance = run.min_clearance.min(c);
            assert!(
                c > BODY,
                "touched an obstacle at {pose:?} (clearance {c:.3} m)"
            );
        }
        run.seconds += 0.1;
    }
    run.pose = pose;
    run
}

/// A room with a wall across most of it: the route goes round the wall's end.
fn wall_room() -> Map {
    let mut m = room(8.0, 6.0);
    block(&mut m, 3.9, 0.0, 4.1, 4.2);
    m
}

fn check_reached(run: &Run, goal: Pose, what: &str) {
    assert_eq!(
        run.state,
        State::Reached,
        "{what}: ended {:?} at {:?}",
        run.state,
        run.pose
    );
    let d = (run.pose.x - goal.x).hypot(run.pose.y - goal.y);
    let a = angle_diff(goal.theta, run.pose.theta).abs();
    assert!(
        d <= 0.25 && a <= 15f64.to_radians(),
        "{what}: {d:.3} m, {:.1} deg",
        a.to_degrees()
    );
    eprintln!(
        "{what}: reached in {:.1} s, {d:.3} m and {:.1} deg off, least clearance {:.3} m",
        run.seconds,
        a.to_degrees(),
        run.min_clearance
    );
}

#[test]
fn both_controllers_go_round_a_wall_and_turn_to_the_goal_heading() {
    let m = wall_room();
    let start = Pose::new(1.5, 1.5, 0.0);
    let goal = Pose::new(6.5, 1.5, 180f64.to_radians());
    let run = drive(
        &m,
        &m,
        start,
        goal,
        Ctl::Vfh(Vfh::new(VfhParams::default())),
        200.0,
    );
    check_reached(&run, goal, "vfh");
    let run = drive(
        &m,
        &m,
        start,
        goal,
        Ctl::Pursuit(Pursuit::new(PursuitParams::default())),
        120.0,
    );
    check_reached(&run, goal, "pure_pursuit");
}

#[test]
fn both_controllers_reach_goals_in_a_cluttered_room() {
    let mut m = room(10.0, 8.0);
    block(&mut m, 2.5, 2.0, 3.3, 6.0);
    block(&mut m, 5.5, 0.0, 6.0, 3.0);
    block(&mut m, 5.5, 5.0, 6.0, 8.0);
    block(&mut m, 7.5, 3.5, 8.2, 4.3);
    let start = Pose::new(1.2, 4.0, -90f64.to_radians());
    for (k, goal) in [
        Pose::new(8.8, 1.5, 90f64.to_radians()),
        Pose::new(8.8, 6.5, 0.0),
        Pose::new(4.3, 7.0, -135f64.to_radians()),
    ]
    .into_iter()
    .enumerate()
    {
        let vfh = Vfh::new(VfhParams {
            max_speed: 0.4,
            max_turn: 60f64.to_radians(),
            ..VfhParams::default()
        });
        let run = drive(&m, &m, start, goal, Ctl::Vfh(vfh), 240.0);
        check_reached(&run, goal, &format!("vfh goal {k}"));
        let pp = Pursuit::new(PursuitParams::default());
        let run = drive(&m, &m, start, goal, Ctl::Pursuit(pp), 120.0);
        check_reached(&run, goal, &format!("pure_pursuit goal {k}"));
    }
}

#[test]
fn an_obstacle_missing_from_the_map_blocks_the_path() {
    // A corridor 3 m wide; the world has a box in its middle that the map lacks.
    let plan_map = room(10.0, 3.0);
    let mut world = plan_map.clone();
    block(&mut world, 4.8, 1.2, 5.4, 1.8);
    let start = Pose::new(1.0, 1.5, 0.0);
    let goal = Pose::new(9.0, 1.5, 0.0);
    // VFH steers round it, saying the path is blocked on the way.
    let run = drive(
        &world,
        &plan_map,
        start,
        goal,
        Ctl::Vfh(Vfh::new(VfhParams::default())),
        200.0,
    );
    check_reached(&run, goal, "vfh round an unmapped box");
    assert!(run.blocked_seen, "vfh never reported the path blocked");
    // Pure pursuit keeps to the path: it stops short of the box and says so.
    let pp = Pursuit::new(PursuitParams::default());
    let run = drive(&world, &plan_map, start, goal, Ctl::Pursuit(pp), 60.0);
    assert_eq!(run.state, State::Blocked, "ended at {:?}", run.pose);
    assert!(run.blocked_seen);
    assert!(
        run.pose.x < 4.8 - BODY && run.pose.x > 3.5,
        "stopped at {:?}",
        run.pose
    );
    eprintln!(
        "pure_pursuit stopped {:.2} m before the box",
        4.8 - run.pose.x
    );
}

#[test]
fn the_player_laser_view_and_beam_lookup() {
    let mut r = [PLAYER_MAX_RANGE_MM_FOR_TEST; PLAYER_BEAMS];
    r[180] = 1500; // straight ahead
    r[0] = 700; // to the right
    r[360] = 0; // no return
    let s = Scan::from_player_361(&r);
    assert_eq!(s.points.len(), 2);
    let (x, y) = s.points[1];
    assert!((x - 1.5).abs() < 1e-9 && y.abs() < 1e-9);
    let (x, y) = s.points[0];
    assert!(x.abs() < 1e-9 && (y + 0.7).abs() < 1e-9);
    assert_eq!(s.range_towards(0.0), 1.5);
    assert_eq!(s.range_towards(0.2f64.to_radians()), 1.5);
    assert_eq!(s.range_towards(-90f64.to_radians()), 0.7);
    assert_eq!(s.range_towards(170f64.to_radians()), 8.0);
    assert!((s.nearest() - 0.7).abs() < 1e-9);
}

const PLAYER_MAX_RANGE_MM_FOR_TEST: u16 = super::PLAYER_MAX_RANGE_MM;

#[test]
fn at_the_goal_position_the_robot_turns_in_place_then_stops() {
    let mut latch = GoalLatch::default();
    let tol = Tolerance::default();
    let goal = Pose::new(1.0, 1.0, 90f64.to_radians());
    assert!(latch
        .update(Pose::new(0.0, 1.0, 0.0), goal, tol, 1.0)
        .is_none());
    // Within the tolerance but not half of it, the goal ahead: drive on.
    assert!(latch
        .update(Pose::new(0.8, 1.0, 0.0), goal, tol, 1.0)
        .is_none());
    // Passed it: turn.
    assert!(latch
        .update(Pose::new(1.2, 1.0, 0.0), goal, tol, 1.0)
        .is_some());
    latch.reset();
    let out = latch
        .update(Pose::new(0.9, 1.0, 0.0), goal, tol, 1.0)
        .unwrap();
    assert_eq!(out.state, State::Turning);
    assert_eq!(out.command.speed, 0);
    assert!(out.command.turn > 0 && out.command.turn <= 57);
    // Still latched a little further off (within twice the tolerance).
    let out = latch
        .update(Pose::new(0.6, 1.0, 0.0), goal, tol, 1.0)
        .unwrap();
    assert_eq!(out.state, State::Turning);
    let out = latch
        .update(Pose::new(0.9, 1.0, 80f64.to_radians()), goal, tol, 1.0)
        .unwrap();
    assert_eq!(
        out.state,
        State::Turning,
        "10 degrees off: turn on to within 7.5"
    );
    let out = latch
        .update(Pose::new(0.9, 1.0, 85f64.to_radians()), goal, tol, 1.0)
        .unwrap();
    assert_eq!((out.state, out.command), (State::Reached, Command::STOP));
    assert!(latch
        .update(Pose::new(0.0, 0.0, 0.0), goal, tol, 1.0)
        .is_none());
}
