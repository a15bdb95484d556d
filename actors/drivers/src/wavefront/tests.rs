//! The navigator in a closed loop with the simulator's physics, stepped by hand (no clock,
//! no actor): the maze world (config/worlds/maze.toml) rasterised at 0.05 m as `mapfile`
//! does, the robot's true pose as the pose, its laser view and speed, one navigator step
//! every 100 ms of simulated time. Checks goals reached (the truth within the tolerance),
//! no stall and no bumper, goals in walls refused, and that two identical runs give
//! byte-identical `G` data.

use super::navigator::{ControllerKind, Inputs, NavParams, Navigator, Order};
use super::params::WavefrontParams;
use player_nav::map::Map;
use player_nav::pose::{angle_diff, Pose};
use player_proto::nav::PlannerState;
use player_sim::geom::{Shape, Vec2};
use player_sim::{SimWorld, WorldMap};
use std::path::Path;
use std::sync::Arc;

fn maze() -> (Arc<WorldMap>, Map) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/worlds/maze.toml");
    let wm = Arc::new(WorldMap::from_file(&path).unwrap());
    let shapes: Vec<Shape> = wm.solids().iter().map(|(s, _)| *s).collect();
    let grid = player_sim::raster::rasterise(
        &shapes,
        Vec2::new(0.0, 0.0),
        Vec2::new(wm.width(), wm.height()),
        50.0,
    )
    .unwrap();
    let map = Map::with_cells(
        grid.width,
        grid.height,
        0.05,
        Pose::new(grid.origin.x / 1000.0, grid.origin.y / 1000.0, 0.0),
        grid.cells,
    )
    .unwrap();
    (wm, map)
}

fn params(controller: &str) -> NavParams {
    let p: WavefrontParams = config::Config::builder()
        .add_source(config::File::from_str(
            &format!("controller = \"{controller}\""),
            config::FileFormat::Toml,
        ))
        .build()
        .unwrap()
        .try_deserialize()
        .unwrap();
    p.check().unwrap().nav
}

/// A closed loop: the world, its map, the navigator.
struct Loop {
    world: SimWorld,
    nav: Navigator,
    /// Every `G` reading, encoded.
    data: Vec<Vec<u8>>,
    collisions: usize,
}

impl Loop {
    fn new(controller: &str) -> Loop {
        let (wm, map) = maze();
        let mut nav = Navigator::new(params(controller));
        nav.set_map(&map, 1).unwrap();
        Loop {
            world: SimWorld::new(wm),
            nav,
            data: Vec::new(),
            collisions: 0,
        }
    }

    fn truth(&self) -> Pose {
        let (x, y, th) = self.world.robot(0).true_pose();
        Pose::new(x / 1000.0, y / 1000.0, th)
    }

    /// Steps until the state is final or `seconds` of simulated time pass; the state.
    fn run(&mut self, seconds: f64) -> PlannerState {
        let end = self.world.time() + seconds;
        while self.world.time() < end {
            let ranges = self.world.laser(0);
            let scan = super::navigator::scan_of_view(&ranges, Pose::default());
            let speed = f64::from(self.world.position(0).speed) / 1000.0;
            let order = self.nav.step(Inputs {
                pose: self.truth(),
                speed,
                scan: Some(&scan),
                time: self.world.time(),
            });
            self.data
                .push(self.nav.data().expect("a pose was given").encode());
            match order {
                Order::Drive(c) => self
                    .world
                    .controls(0)
                    .set_velocity(c.speed as i16, c.turn as i16),
                Order::Stop => self.world.controls(0).set_velocity(0, 0),
                Order::Silent => {}
            }
            for _ in 0..10 {
                self.world.tick();
                let misc = self.world.misc(0);
                if self.world.robot(0).stalled()
                    || misc.front_bumpers != 0
                    || misc.rear_bumpers != 0
                {
                    self.collisions += 1;
                }
            }
            let s = self.nav.state();
            if !matches!(
                s,
                PlannerState::Planning | PlannerState::Driving | PlannerState::Blocked
            ) {
                return s;
            }
        }
        self.nav.state()
    }
}

/// Free cells of the maze at least 0.5 m from every wall, drawn with a fixed generator.
fn goals(map: &Map, n: usize, seed: u64) -> Vec<Pose> {
    let c = player_nav::plan::Costmap::new(map, Default::default()).unwrap();
    let mut s = seed;
    let mut next = || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (s >> 33) as f64 / (1u64 << 31) as f64
    };
    let mut out = Vec::new();
    while out.len() < n {
        let (x, y, a) = (next() * 10.0, next() * 10.0, (next() * 360.0).round());
        let Some((col, row)) = c.cell_of(x, y) else {
            continue;
        };
        if c.clearance(i64::from(col), i64::from(row)).unwrap_or(0.0) >= 0.5 {
            out.push(Pose::new(x, y, a.to_radians()));
        }
    }
    out
}

/// Drives to `n` seeded goals in turn; returns how many were reached with the truth
/// within the tolerance, and the collisions.
fn tour(controller: &str, n: usize) -> (usize, usize, Vec<Vec<u8>>) {
    let mut l = Loop::new(controller);
    let (_, map) = maze();
    let tol = params(controller).tolerance;
    let mut reached = 0;
    for g in goals(&map, n, 7) {
        l.nav.set_goal(g);
        let from = l.truth();
        let state = l.run(240.0);
        let t = l.truth();
        let (d, h) = (
            (t.x - g.x).hypot(t.y - g.y),
            angle_diff(t.theta, g.theta).abs(),
        );
        if state == PlannerState::Reached && d <= tol.distance && h <= tol.heading {
            reached += 1;
        } else {
            eprintln!("{controller}: goal {g:?} from {from:?}: {state:?}, ended at {t:?}");
        }
    }
    (reached, l.collisions, l.data)
}

#[test]
fn goals_in_the_maze_are_reached_with_vfh() {
    let (reached, collisions, _) = tour("vfh", 3);
    assert_eq!((reached, collisions), (3, 0));
}

#[test]
fn goals_in_the_maze_are_reached_with_pure_pursuit() {
    let (reached, collisions, _) = tour("pure_pursuit", 3);
    assert_eq!((reached, collisions), (3, 0));
}

/// The maze goal: 20 seeded goals, at least 19 reached, no collision (here with the
/// true pose, not a localizer's). `cargo test -p player-drivers maze_tour -- --ignored`.
fn maze_tour(controller: &str) {
    let (reached, collisions, _) = tour(controller, 20);
    eprintln!("{controller}: {reached}/20 reached, {collisions} collisions");
    assert!(
        reached >= 19 && collisions == 0,
        "{controller}: {reached} {collisions}"
    );
}

#[test]
#[ignore]
fn maze_tour_pure_pursuit() {
    maze_tour("pure_pursuit");
}

#[test]
#[ignore]
fn maze_tour_vfh() {
    maze_tour("vfh");
}

#[test]
fn two_identical_runs_give_identical_planner_data() {
    let (_, _, a) = tour("vfh", 1);
    let (_, _, b) = tour("vfh", 1);
    assert!(a.len() > 50);
    assert_eq!(a, b);
}

#[test]
fn a_goal_in_a_wall_or_off_the_map_is_no_path_with_a_reason() {
    let mut l = Loop::new("pure_pursuit");
    // The maze's outer wall (x 0 to 0.4 m).
    l.nav.set_goal(Pose::new(0.1, 5.0, 0.0));
    assert_eq!(l.nav.state(), PlannerState::NoPath);
    let why = l.nav.take_error().unwrap();
    assert!(why.contains("in an obstacle"), "{why}");
    l.nav.set_goal(Pose::new(20.0, 5.0, 0.0));
    assert_eq!(l.nav.state(), PlannerState::NoPath);
    assert!(l.nav.take_error().unwrap().contains("off the map"));
    // The robot stays still: nothing was ever ordered.
    assert_eq!(l.run(1.0), PlannerState::NoPath);
    assert_eq!(l.world.position(0).speed, 0);
}

#[test]
fn pre_emption_and_the_estop_stop_driving_until_a_new_goal_or_the_release() {
    let mut l = Loop::new("vfh");
    l.nav.set_goal(Pose::new(5.0, 1.0, 0.0));
    l.run(3.0);
    assert_eq!(l.nav.state(), PlannerState::Driving);
    l.nav.preempt();
    assert_eq!(l.run(1.0), PlannerState::Preempted);
    l.nav.set_goal(Pose::new(5.0, 1.0, 0.0));
    l.run(1.0);
    assert_eq!(l.nav.state(), PlannerState::Driving);
    l.nav.estop(true);
    l.nav.set_goal(Pose::new(1.0, 1.0, 0.0));
    assert_eq!(l.run(1.0), PlannerState::EStopped);
    l.nav.estop(false);
    assert_eq!(l.nav.state(), PlannerState::Idle);
    assert_eq!(
        l.nav.data().expect("a pose was given").goal,
        [0; 3],
        "the goal is dropped at the release"
    );
}

#[test]
fn the_planner_data_follows_the_layout() {
    let mut l = Loop::new("pure_pursuit");
    l.nav
        .set_goal(Pose::new(5.0, 1.0, std::f64::consts::FRAC_PI_2));
    l.run(1.0);
    let d = l.nav.data().expect("a pose was given");
    assert!(d.valid && !d.done);
    assert_eq!(d.goal, [5000, 1000, 90]);
    assert!(d.waypoint_count >= 2);
    let w = l.nav.waypoints();
    assert_eq!(w.len(), usize::from(d.waypoint_count));
    assert_eq!(w.last().unwrap()[2], 90);
    assert_eq!(d.encode().len(), 43);
    let _ = ControllerKind::Vfh;
}

#[test]
fn a_goal_covered_only_by_what_the_laser_sees_is_blocked_not_no_path() {
    let mut l = Loop::new("pure_pursuit");
    // The bottom corridor is free from x 0.4 to 9.6 m; the laser sees something at the
    // goal, 2 m ahead (as a localizer's error can put a wall there).
    let goal = Pose::new(3.0, 1.0, 0.0);
    l.nav.set_goal(goal);
    let bearings: Vec<f64> = (-90..=90).map(|d| f64::from(d).to_radians()).collect();
    let ranges: Vec<f64> = bearings
        .iter()
        .map(|&b| if b == 0.0 { 2.0 } else { 8.0 })
        .collect();
    let scan = player_nav::control::Scan::with_mount(bearings, ranges, 8.0, Pose::default());
    l.nav.step(Inputs {
        pose: Pose::new(1.0, 1.0, 0.0),
        speed: 0.0,
        scan: Some(&scan),
        time: 0.0,
    });
    assert_eq!(l.nav.state(), PlannerState::Blocked);
    assert_eq!(l.nav.take_error(), None);
}

#[test]
fn no_reading_before_the_first_pose_and_the_last_pose_kept_after() {
    let mut l = Loop::new("pure_pursuit");
    assert!(
        l.nav.data().is_none(),
        "a reading before any pose would put the robot at (0, 0)"
    );
    l.nav.set_goal(Pose::new(5.0, 1.0, 0.0));
    assert!(l.nav.data().is_none(), "a goal gives no pose");
    l.run(0.5);
    let before = l.nav.data().expect("a pose was given").pose;
    l.nav.cancel();
    assert_eq!(l.nav.data().expect("the pose is kept").pose, before);
}
