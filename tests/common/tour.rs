//! The maze tour with the localizer in the loop, over real TCP, shared by
//! `tests/wavefront.rs` (a few goals) and `benches/nav_tour.rs` (the issue's 20): the
//! simulated robot in the maze (config/worlds/maze.toml, the Pioneer's odometry and laser
//! noise on, a `[truth]` log written), `mapfile` serving the world as `M`, `amcl` serving
//! `H` from `P`, the scan `L` and `M`, and `wavefront` serving `G` with the pose from `H`
//! (never the truth). A client sends each goal on `G` (12 bytes) and reads `G`, `p` (its
//! stall flag) and `m` (the bumpers); the true pose and the simulated time come from the
//! truth log. Goals are seeded free cells at least 0.5 m from every wall, each reachable
//! from the one before and at least 1 m from it; the shortest path (the robot's centre
//! kept 0.25 m from the walls, no soft cost, the line-of-sight waypoints' polyline) gives
//! the time a goal should take at the speed limits: its length at the top speed, and the
//! turning in place it needs (onto its first leg, and from its last leg to the goal's
//! heading) at the top turn rate.
//!
//! A module of `tests/common` (`common::tour` in a test); benches reach it through
//! `benches/common`.

#![allow(dead_code)]

use player::settings::Settings;
use player_nav::map::Map;
use player_nav::plan::{Algorithm, CostParams, Costmap, Planner};
use player_nav::pose::{angle_diff, Pose};
use player_proto::data::{Misc, Position};
use player_sim::geom::{Shape, Vec2};
use player_sim::{TruthRecord, WorldMap};
use player_testkit::*;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The maze's start pose: mm, mm, degrees.
pub const START: [i32; 3] = [1000, 1000, 0];

/// The goal tolerance the driver is given and the truth is held to: mm, degrees.
pub const TOLERANCE: [f64; 2] = [250.0, 15.0];

/// The maze world file.
fn maze_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds/maze.toml")
}

/// The maze world with a `[truth]` log (CSV, every 0.1 s), written into a fresh directory
/// `name`-<pid> under the tests' temporary directory: the world's file and the log's.
pub fn maze_with_truth(name: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let truth = dir.join("truth.csv");
    let mut text = std::fs::read_to_string(maze_file()).unwrap();
    text.push_str(&format!(
        "\n[truth]\nfile = \"{}\"\nformat = \"csv\"\nperiod = 0.1\n",
        truth.display()
    ));
    let world = dir.join("maze.toml");
    std::fs::write(&world, text).unwrap();
    (world, truth)
}

/// The maze rasterised at 0.05 m, as `mapfile` serves it with `map = "world"`.
pub fn maze_map() -> Map {
    let wm = WorldMap::from_file(&maze_file()).expect("the maze world");
    let shapes: Vec<Shape> = wm.solids().iter().map(|(s, _)| *s).collect();
    let grid = player_sim::raster::rasterise(
        &shapes,
        Vec2::new(0.0, 0.0),
        Vec2::new(wm.width(), wm.height()),
        50.0,
    )
    .expect("the maze rasterised");
    Map::with_cells(
        grid.width,
        grid.height,
        0.05,
        Pose::new(grid.origin.x / 1000.0, grid.origin.y / 1000.0, 0.0),
        grid.cells,
    )
    .expect("the maze's map")
}

/// The shortest path's planner: the robot's centre 0.25 m from every wall, no soft cost.
pub fn shortest_planner(map: &Map) -> Planner {
    let c = Costmap::new(
        map,
        CostParams {
            safety_dist: 0.0,
            dist_penalty: 0.0,
            ..CostParams::default()
        },
    )
    .expect("the costmap");
    Planner::new(c)
}

/// The shortest path from `a` to `b`: its length (metres) and the directions of its first
/// and last legs (radians); `None` when there is none.
pub fn shortest(planner: &mut Planner, a: (f64, f64), b: (f64, f64)) -> Option<(f64, f64, f64)> {
    let c = planner.costmap();
    let start = c.cell_of(a.0, a.1)?;
    let start = if c.traversable(i64::from(start.0), i64::from(start.1)) {
        start
    } else {
        c.nearest_traversable(start, 10)?
    };
    let goal = c.cell_of(b.0, b.1)?;
    let plan = planner.plan(Algorithm::AStar, start, goal).ok()?;
    let mut points = vec![a];
    points.extend(plan.waypoints_world(planner.costmap()));
    points.push(b);
    points.dedup_by(|p, q| (p.0 - q.0).hypot(p.1 - q.1) < 1e-6);
    let dir = |p: (f64, f64), q: (f64, f64)| (q.1 - p.1).atan2(q.0 - p.0);
    let n = points.len();
    let (first, last) = if n >= 2 {
        (dir(points[0], points[1]), dir(points[n - 2], points[n - 1]))
    } else {
        (0.0, 0.0)
    };
    let len = points
        .windows(2)
        .map(|w| (w[1].0 - w[0].0).hypot(w[1].1 - w[0].1))
        .sum();
    Some((len, first, last))
}

/// `n` seeded goals (x m, y m, heading rad) in free cells at least 0.5 m from every wall,
/// each reachable from the one before (the first from the start) by a shortest path of 1 m
/// (four times the distance tolerance) to `max_len` metres.
pub fn goals(map: &Map, n: usize, seed: u64, max_len: f64) -> Vec<Pose> {
    let mut planner = shortest_planner(map);
    let mut s = seed;
    let mut next = || {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (s >> 33) as f64 / (1u64 << 31) as f64
    };
    let mut out: Vec<Pose> = Vec::new();
    let mut from = (f64::from(START[0]) / 1000.0, f64::from(START[1]) / 1000.0);
    while out.len() < n {
        let (x, y, a) = (next() * 10.0, next() * 10.0, (next() * 360.0).round());
        let c = planner.costmap();
        let Some((col, row)) = c.cell_of(x, y) else {
            continue;
        };
        if c.clearance(i64::from(col), i64::from(row)).unwrap_or(0.0) < 0.5 {
            continue;
        }
        if shortest(&mut planner, from, (x, y))
            .is_some_and(|(len, _, _)| (1.0..=max_len).contains(&len))
        {
            out.push(Pose::new(x, y, a.to_radians()));
            from = (x, y);
        }
    }
    out
}

/// The configuration: the maze with its truth log, `mapfile`, `amcl`, `wavefront` driven
/// by `controller` with its default speed limits.
fn settings(world: &Path, controller: &str) -> Settings {
    let text = format!(
        r#"
[server]
setup_timeout = 30.0

[[robot]]
command_timeout = 0.5

[[robot.driver]]
driver = "sim"
devices = ["p", "P", "m", "l", "L"]
[robot.driver.params]
world = "{world}"
seed = 5
base_hz = 20.0

[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
map = "world"

[[robot.driver]]
driver = "amcl"
devices = ["H"]
[robot.driver.params]
initial_pose = [{x}, {y}, {a}, 200, 200, 10]
particles = [500, 2000]
seed = 1

[[robot.driver]]
driver = "wavefront"
devices = ["G"]
[robot.driver.params]
controller = "{controller}"
pose = "H"
goal_tolerance = [{dist}, {head}]
"#,
        world = world.display(),
        x = START[0],
        y = START[1],
        a = START[2],
        dist = TOLERANCE[0],
        head = TOLERANCE[1],
    );
    Settings::from_toml(&text, "maze tour").unwrap_or_else(|e| panic!("{e}"))
}

/// The newest records of the truth log, read as it grows.
struct TruthTail {
    file: PathBuf,
    at: u64,
    partial: String,
    last: Option<TruthRecord>,
}

impl TruthTail {
    /// Reads what was appended since the last call; the newest record.
    fn poll(&mut self) -> Option<&TruthRecord> {
        if let Ok(mut f) = std::fs::File::open(&self.file) {
            if f.seek(SeekFrom::Start(self.at)).is_ok() {
                let mut text = String::new();
                if let Ok(n) = f.read_to_string(&mut text) {
                    self.at += n as u64;
                    self.partial.push_str(&text);
                    if let Some(end) = self.partial.rfind('\n') {
                        let done: String = self.partial.drain(..=end).collect();
                        if let Some(r) = done.lines().rev().find_map(TruthRecord::parse) {
                            self.last = Some(r);
                        }
                    }
                }
            }
        }
        self.last.as_ref()
    }
}

/// What became of one goal.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The goal: x m, y m, heading rad.
    pub goal: Pose,
    /// The shortest path's length from where the robot truly was, metres.
    pub shortest: f64,
    /// The turning in place that path needs at least: from the robot's heading to its
    /// first leg, and from its last leg to the goal's heading, radians.
    pub turn: f64,
    /// The planner's last state (3 reached, 4 blocked, 5 no path, 2 still driving).
    pub state: u8,
    /// Simulated seconds from the goal sent to the planner reading reached (or to the
    /// give-up).
    pub seconds: f64,
    /// The truth's distance from the goal then, mm, and its heading error, degrees.
    pub error: (f64, f64),
    /// Readings of `p` with the stall flag set, or of `m` with a bumper pressed.
    pub collisions: usize,
    /// The notices (`y` packets of kind `c`: a goal refused, say) that came meanwhile.
    pub notices: Vec<String>,
}

impl Outcome {
    /// The planner said reached and the truth is within the tolerance.
    pub fn reached(&self) -> bool {
        self.state == 3 && self.error.0 <= TOLERANCE[0] && self.error.1 <= TOLERANCE[1]
    }

    /// The shortest path's time at the speed limits: its length at `max_speed` (m/s) and
    /// its turning in place at `max_turn` (rad/s).
    pub fn shortest_time(&self, max_speed: f64, max_turn: f64) -> f64 {
        self.shortest / max_speed + self.turn / max_turn
    }
}

/// A server running the tour's robot and a client on it.
pub struct Tour {
    _server: TestServer,
    c: Client,
    truth: TruthTail,
    planner: Planner,
    /// `G`'s goal (mm, mm) and state, newest.
    g: Option<([i32; 2], u8)>,
    collisions: usize,
    notices: Vec<String>,
}

impl Tour {
    /// Starts the server with `controller` (the truth log in a directory named by `name`)
    /// and waits for the localizer's first hypothesis.
    pub fn start(name: &str, controller: &str) -> Tour {
        let (world, truth) = maze_with_truth(&format!("tour-{name}-{controller}"));
        let server = start_server_with(settings(&world, controller), player::builtin_catalog());
        let mut c = Client::connect(server.addr());
        c.config(b'y', b'e', &[1]);
        let reply = c.request(&[(b'G', b'a'), (b'p', b'r'), (b'm', b'r'), (b'H', b'r')]);
        assert_eq!(reply, b"GaprmrHr", "every device served");
        let mut tour = Tour {
            _server: server,
            c,
            truth: TruthTail {
                file: truth,
                at: 0,
                partial: String::new(),
                last: None,
            },
            planner: shortest_planner(&maze_map()),
            g: None,
            collisions: 0,
            notices: Vec::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while tour.truth.poll().is_none() || tour.g.is_none() {
            assert!(Instant::now() < deadline, "no truth or no G within 30 s");
            tour.read_one();
        }
        tour
    }

    /// Reads one message (or waits up to 200 ms for one).
    fn read_one(&mut self) {
        let Some((code, payload)) = self.c.read_message_within(Duration::from_millis(200)) else {
            return;
        };
        match code {
            b'G' if payload.len() == 43 => {
                let at = |k: usize| i32::from_be_bytes(payload[k..k + 4].try_into().unwrap());
                self.g = Some(([at(14), at(18)], payload[42]));
            }
            b'p' if Position::decode(&payload).is_ok_and(|p| p.stall != 0) => {
                self.collisions += 1;
            }
            b'm' if Misc::decode(&payload).is_ok_and(|m| m.front_bumpers | m.rear_bumpers != 0) => {
                self.collisions += 1;
            }
            b'y' if payload.len() >= 2 && payload[0] == b'c' => self
                .notices
                .push(String::from_utf8_lossy(&payload[2..]).into_owned()),
            _ => {}
        }
    }

    /// The true pose: x m, y m, heading rad; and the simulated time, s.
    fn truth(&mut self) -> (Pose, f64) {
        let r = self.truth.poll().expect("a truth record");
        (
            Pose::new(r.x / 1000.0, r.y / 1000.0, r.heading.to_radians()),
            r.time,
        )
    }

    /// Sends `goal` and waits until the planner reads reached, no path, or `limit`
    /// simulated seconds pass.
    pub fn go(&mut self, goal: Pose, limit: impl Fn(f64) -> f64) -> Outcome {
        let (from, t0) = self.truth();
        let (shortest, first, last) =
            shortest(&mut self.planner, (from.x, from.y), (goal.x, goal.y))
                .expect("a reachable goal");
        let turn = angle_diff(first, from.theta).abs() + angle_diff(goal.theta, last).abs();
        let limit = limit(shortest);
        let mm = |v: f64| (v * 1000.0).round() as i32;
        let goal_mm = [mm(goal.x), mm(goal.y)];
        let heading = (goal.theta.to_degrees().round() as i32).rem_euclid(360);
        let bytes: Vec<u8> = [goal_mm[0], goal_mm[1], heading]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        self.c.command(b'G', &bytes);
        self.collisions = 0;
        self.notices.clear();
        let wall = Instant::now() + Duration::from_secs_f64(3.0 * limit + 30.0);
        let state = loop {
            self.read_one();
            let (_, t) = self.truth();
            match self.g {
                Some((g, s)) if g == goal_mm && (s == 3 || s == 5) => break s,
                Some((g, s)) if g == goal_mm && (t - t0 > limit || Instant::now() > wall) => {
                    break s
                }
                _ if Instant::now() > wall => break 0,
                _ => {}
            }
        };
        let (at, t1) = self.truth();
        let d = (at.x - goal.x).hypot(at.y - goal.y) * 1000.0;
        let h = angle_diff(at.theta, goal.theta).abs().to_degrees();
        Outcome {
            goal,
            shortest,
            turn,
            state,
            seconds: t1 - t0,
            error: (d, h),
            collisions: self.collisions,
            notices: std::mem::take(&mut self.notices),
        }
    }
}
