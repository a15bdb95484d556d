//! A world with every robot in it: the robots of a [`WorldMap`] stepped together at a fixed
//! step, each an obstacle for the others' bumpers and sensors, plus the pucks they push, grip
//! and carry, and the ground truth of where everyone is.
//!
//! Like [`SimRobot`], nothing here touches actors, sockets or clocks: the caller decides when
//! to call [`SimWorld::tick`] (the driver: in real time; tests and benches: as fast as they
//! can). The same world file and seed give the same run, tick for tick.
//!
//! Order within a tick: every robot moves against the others' poses at the start of the
//! tick (robots far apart in parallel, on [`SimWorld::set_threads`] threads when the world
//! is large); two that would then overlap move again one after the other, in file order,
//! each against the others' poses as they are by then, so no two robots ever overlap and the
//! outcome is the same whatever the number of threads. Then, in file order, each robot
//! pushes, grips or drags pucks. A [`RobotIndex`] finds the robots near a robot or along a
//! sensor's ray, so a tick and a reading cost the same in a world of ten robots or of ten
//! thousand. The gripper's mouth, in the robot's
//! frame (x forward, y left): between the paddles, `|y| <= MOUTH_HALF_WIDTH_MM`, from the
//! robot's front (`x = ROBOT_RADIUS_MM`) to the paddle tips (`x = PADDLE_TIP_MM`). With the
//! paddles open and the lift down a puck can enter the mouth; closing paddles grip a puck in
//! it; the lift then carries it; opening the paddles lets it go. Last, the world file's
//! events due by the end of the tick fire (`events`: robots carried elsewhere); the truth
//! log's lines are in `truth`.

use player_proto::scan::Scan;
use std::io::{self, Write};
use std::sync::Arc;

use crate::cast::CastKind;
use crate::geom::Vec2;
use crate::gripper::{HOLD_POSITION, INNER_BEAM_MM, OUTER_BEAM_MM};
use crate::index::RobotIndex;
use crate::map::{PuckPlacement, TruthFormat, WorldMap, ROBOT_RADIUS_MM};
use crate::noise::Noise;
use crate::robot::{
    Body, GripperReading, MiscReading, OdometryReading, PositionReading, RobotParams, SimRobot,
    Solids, LASER_SAMPLES, MAX_SPEED_MM_S, ROBOT_HEIGHT_MM, SONAR_HALF_CONE_DEG, SONAR_MAX_MM,
    SONAR_POSES,
};
use crate::{Blob, PtzReading};
use std::collections::HashMap;

mod events;
mod truth;

pub use events::{Carry, RANDOM_TRIES, SEARCH_MM};
pub use truth::TruthRecord;

/// The fixed physics step, seconds (defined at the crate's root, where the world file's
/// events read it too).
pub use crate::STEP_S;
/// Half the gap between the open paddles, mm.
pub const MOUTH_HALF_WIDTH_MM: f64 = 110.0;
/// How far ahead of the robot's centre the paddle tips reach, mm.
pub const PADDLE_TIP_MM: f64 = ROBOT_RADIUS_MM + 160.0;
/// Height of a puck, mm (for the camera).
pub const PUCK_HEIGHT_MM: f64 = 80.0;

/// A puck: pushed by robots, gripped between the paddles, carried by the lift.
#[derive(Debug, Clone, PartialEq)]
pub struct Puck {
    /// Centre, mm.
    pub center: Vec2,
    /// Radius, mm.
    pub radius: f64,
    /// ACTS channel of its colour, if cameras see it.
    pub channel: Option<u8>,
    /// The robot (index) whose paddles hold it.
    pub held_by: Option<usize>,
    /// Whether the holding robot's lift has raised it off the floor.
    pub lifted: bool,
}

#[derive(Debug, Clone)]
struct Member {
    name: String,
    channel: Option<u8>,
    robot: SimRobot,
    /// Where a held puck sits, mm ahead of the centre.
    hold_x: f64,
}

/// Every robot and puck of one world, stepped together.
#[derive(Debug, Clone)]
pub struct SimWorld {
    map: Arc<WorldMap>,
    members: Vec<Member>,
    names: HashMap<String, usize>,
    pucks: Vec<Puck>,
    ticks: u64,
    /// The robots where they are now (rebuilt after every tick and pose change).
    index: RobotIndex,
    /// The index is out of date (a pose was set from outside).
    stale: bool,
    threads: usize,
    /// The fewest robots each thread of a parallel tick moves.
    tick_chunk: usize,
    scratch: Vec<Vec2>,
    /// The world file's events: when each fires next.
    schedule: events::Schedule,
    /// The carries the last tick made.
    carries: Vec<Carry>,
}

/// The fewest robots each thread of a parallel tick moves (by default): a tick of a robot
/// costs about a third of a microsecond, and each thread costs its start and a wake-up,
/// which on a loaded machine can be a scheduler's time slice; so a tick goes parallel only
/// when every thread has a few hundred microseconds of work.
pub const PARALLEL_MIN_ROBOTS: usize = 1024;

/// The fewest robots each thread of a parallel batch of readings reads (a sonar reading
/// costs a few microseconds, a laser scan tens).
pub const PARALLEL_MIN_READINGS: usize = 64;

/// How far a robot's centre can move in one tick, mm (with a margin).
const MAX_MOVE_MM: f64 = MAX_SPEED_MM_S * STEP_S * 1.5 + 1.0;

/// The other robots in the index as sensors see them: discs of the robot radius, except one.
struct Others<'a> {
    index: &'a RobotIndex,
    except: usize,
}

impl Solids for Others<'_> {
    fn first_hit(&self, origin: Vec2, dir: Vec2, max: f64) -> Option<(f64, Vec2)> {
        self.index
            .first_hit(origin, dir, max, self.except)
            .map(|(t, j)| (t, self.index.center(j)))
    }
}

/// The robots around one robot as its sonar ring sees them: each with its direction from
/// the robot's centre and the cosine of the widest angle off a sonar's axis at which it can
/// still meet that sonar's cone, worked out once per reading, so that sorting out each
/// sonar's few is a dot product per robot.
struct Ring<'a> {
    bodies: &'a [Body],
    /// Per body: the unit vector from the centre to it (zero when it overlaps the centre's
    /// neighbourhood: in every cone), and the cosine limit.
    seen: Vec<(Vec2, f64)>,
    half: f64,
}

impl Ring<'_> {
    /// The ring of a robot at `centre` among `bodies`, for cones of `half` radians from
    /// transducers within `offset` of the centre.
    fn new(centre: Vec2, bodies: &[Body], half: f64, offset: f64) -> Ring<'_> {
        let (sin_half, cos_half) = half.sin_cos();
        let seen = bodies
            .iter()
            .map(|b| {
                // A cone from a transducer is the cone from the centre moved by at most
                // `offset`: a disc it meets, widened by `offset`, meets the centre's cone.
                let d = b.center - centre;
                let dist = d.length();
                let r = b.radius + offset;
                if dist <= r {
                    return (Vec2::new(0.0, 0.0), f64::NEG_INFINITY);
                }
                let (sin_b, cos_b) = (r / dist, (1.0 - (r / dist) * (r / dist)).sqrt());
                // cos(half + b), or -1 when half + b reaches round to the back.
                let limit = if half + sin_b.asin() >= std::f64::consts::PI {
                    -1.0
                } else {
                    cos_half * cos_b - sin_half * sin_b
                };
                (d * (1.0 / dist), limit - 1e-9)
            })
            .collect();
        Ring { bodies, seen, half }
    }
}

impl Solids for Ring<'_> {
    fn first_hit(&self, origin: Vec2, dir: Vec2, max: f64) -> Option<(f64, Vec2)> {
        self.bodies.first_hit(origin, dir, max)
    }

    fn cone(&self, origin: Vec2, axis: Vec2, half: f64, out: &mut Vec<Body>) -> bool {
        if half != self.half {
            return self.bodies.cone(origin, axis, half, out);
        }
        // A superset of the bodies the cone can meet, in their order: the rays then find
        // the same first hits as among every body.
        out.clear();
        out.extend(
            self.bodies
                .iter()
                .zip(&self.seen)
                .filter(|(_, &(u, limit))| u.dot(axis) >= limit)
                .map(|(b, _)| *b),
        );
        true
    }
}

/// How far the farthest sonar transducer sits from the robot's centre, mm.
fn sonar_offset() -> f64 {
    SONAR_POSES
        .iter()
        .map(|&(x, y, _)| Vec2::new(x, y).length())
        .fold(0.0, f64::max)
}

impl SimWorld {
    /// The world of `map` with its robots at their start poses (one robot, `robot0`, at the
    /// start pose when the map places none), motors on, odometry zeroed, and sensor and
    /// odometry noise as the map says (each robot with its own random sequence derived from
    /// the seed).
    pub fn new(map: Arc<WorldMap>) -> SimWorld {
        let mut world = SimWorld {
            map: map.clone(),
            members: Vec::new(),
            names: HashMap::new(),
            pucks: map.pucks().iter().map(puck_of).collect(),
            ticks: 0,
            index: RobotIndex::default(),
            stale: true,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tick_chunk: PARALLEL_MIN_ROBOTS,
            scratch: Vec::new(),
            schedule: events::Schedule::new(&map),
            carries: Vec::new(),
        };
        if map.robots().is_empty() {
            world.add_robot("robot0", map.start_pose(), None);
        } else {
            for r in map.robots() {
                let i = world.add_robot(&r.name, r.pose, r.channel);
                world.members[i].robot.set_laser(r.laser);
            }
        }
        // Events at 0 happen as the world is made.
        world.fire_events();
        world
    }

    /// Adds a robot at `pose` (x, y mm, heading radians) with colour `channel`; returns its
    /// index. No overlap check.
    pub fn add_robot(&mut self, name: &str, pose: (f64, f64, f64), channel: Option<u8>) -> usize {
        let i = self.members.len();
        let mut robot = SimRobot::new(
            self.map.clone(),
            RobotParams {
                start_pose: Some(pose),
                ..RobotParams::default()
            },
        );
        robot.set_noise(*self.map.noise(), robot_seed(self.map.seed(), i));
        self.names.entry(name.to_string()).or_insert(i);
        self.stale = true;
        self.members.push(Member {
            name: name.to_string(),
            channel,
            robot,
            hold_x: 0.0,
        });
        i
    }

    /// Sets robot `i`'s noise, with its own random sequence derived from `seed` as for the
    /// world's robots (the same `seed` gives the same readings). Restarts its odometry.
    /// Panics if there is no such robot.
    pub fn set_noise(&mut self, i: usize, noise: Noise, seed: u64) {
        self.members[i].robot.set_noise(noise, robot_seed(seed, i));
    }

    /// Adds a puck; returns its index.
    pub fn add_puck(&mut self, puck: PuckPlacement) -> usize {
        self.pucks.push(puck_of(&puck));
        self.pucks.len() - 1
    }

    /// The world's map.
    pub fn map(&self) -> &Arc<WorldMap> {
        &self.map
    }

    /// Number of robots.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the world has no robot.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The robots' names, in index order.
    pub fn names(&self) -> Vec<&str> {
        self.members.iter().map(|m| m.name.as_str()).collect()
    }

    /// The index of the robot called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.names.get(name).copied()
    }

    /// How many threads a tick of a large world may use (at least 1; default: the
    /// machine's cores). The outcome of a tick is the same whatever this is.
    pub fn set_threads(&mut self, threads: usize) {
        self.threads = threads.max(1);
    }

    /// How many threads a tick of a large world may use.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The fewest robots each thread of a parallel tick moves (at least 1; default
    /// [`PARALLEL_MIN_ROBOTS`]): a tick of fewer than twice this many robots runs on the
    /// calling thread. The outcome of a tick is the same whatever this is.
    pub fn set_tick_chunk(&mut self, robots: usize) {
        self.tick_chunk = robots.max(1);
    }

    /// Robot `i`'s colour channel.
    pub fn channel(&self, i: usize) -> Option<u8> {
        self.members[i].channel
    }

    /// Robot `i`. Panics if there is no such robot.
    pub fn robot(&self, i: usize) -> &SimRobot {
        &self.members[i].robot
    }

    /// Robot `i`, to command it or to move it by hand. Panics if there is no such robot.
    /// Until the next tick (or [`SimWorld::refresh_index`]) readings then look at every
    /// robot, not only the ones near: for commands alone use [`SimWorld::controls`].
    pub fn robot_mut(&mut self, i: usize) -> &mut SimRobot {
        // It may be moved (`set_true_pose`): file the robots again before they are next
        // looked up.
        self.stale = true;
        &mut self.members[i].robot
    }

    /// Robot `i`, to command it (velocity, motor power, modes, odometry, PTZ, gripper) but
    /// not to move it by hand: a pose set through this is seen by the others' sensors only
    /// after the next tick. Panics if there is no such robot.
    pub fn controls(&mut self, i: usize) -> &mut SimRobot {
        &mut self.members[i].robot
    }

    /// The pucks.
    pub fn pucks(&self) -> &[Puck] {
        &self.pucks
    }

    /// Simulated seconds since the world started.
    pub fn time(&self) -> f64 {
        self.ticks as f64 * STEP_S
    }

    /// Ticks so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Advances every robot and puck by one fixed step.
    pub fn tick(&mut self) {
        self.refresh();
        let n = self.members.len();
        let threads = self.threads.min(n / self.tick_chunk).max(1);
        // 1. Everyone moves against where the others were at the start of the tick; a robot
        //    with a neighbour close enough to meet keeps its state from before, in case.
        let index = &self.index;
        let move_one = |i: usize, m: &mut Member, bodies: &mut Vec<Body>| -> Option<SimRobot> {
            bodies.clear();
            let p = index.center(i);
            index.near(p, 2.0 * ROBOT_RADIUS_MM + 2.0 * MAX_MOVE_MM, |j| {
                if j != i {
                    bodies.push(robot_body(index.center(j), None));
                }
            });
            let before = (!bodies.is_empty()).then(|| m.robot.clone());
            m.robot.step_among(STEP_S, bodies);
            before
        };
        // The robots that kept their state from before, in index order.
        let mut saved: Vec<(usize, SimRobot)> = Vec::new();
        if threads <= 1 {
            let mut bodies = Vec::new();
            for (i, m) in self.members.iter_mut().enumerate() {
                if let Some(before) = move_one(i, m, &mut bodies) {
                    saved.push((i, before));
                }
            }
        } else {
            let chunk = n.div_ceil(threads);
            let move_chunk = |c: usize, members: &mut [Member]| {
                let mut bodies = Vec::new();
                let mut kept = Vec::new();
                for (k, m) in members.iter_mut().enumerate() {
                    let i = c * chunk + k;
                    if let Some(before) = move_one(i, m, &mut bodies) {
                        kept.push((i, before));
                    }
                }
                kept
            };
            // The first chunk on this thread, the others on threads of their own.
            let parts: Vec<Vec<(usize, SimRobot)>> = std::thread::scope(|scope| {
                let mut chunks = self.members.chunks_mut(chunk).enumerate();
                let first = chunks.next();
                let handles: Vec<_> = chunks
                    .map(|(c, members)| {
                        let move_chunk = &move_chunk;
                        scope.spawn(move || move_chunk(c, members))
                    })
                    .collect();
                let mut parts: Vec<_> = first.map(|(c, m)| move_chunk(c, m)).into_iter().collect();
                parts.extend(
                    handles
                        .into_iter()
                        .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))),
                );
                parts
            });
            saved.extend(parts.into_iter().flatten());
        }
        // 2. Two that now overlap (they moved into the same gap) move again, one after the
        //    other, against the others as they are by then.
        let mut now = std::mem::take(&mut self.scratch);
        now.clear();
        now.extend(self.members.iter().map(|m| center_of(&m.robot)));
        // Robots (by index) that clash, in index order.
        let mut clash: Vec<usize> = Vec::new();
        for (k, &(i, _)) in saved.iter().enumerate() {
            let p = now[i];
            let mut hit = false;
            index.near(p, 2.0 * ROBOT_RADIUS_MM + 4.0 * MAX_MOVE_MM, |j| {
                if j != i && (now[j] - p).length() < 2.0 * ROBOT_RADIUS_MM - 1e-9 {
                    let was = (index.center(j) - index.center(i)).length();
                    // Only if they came closer (robots placed overlapping may part).
                    hit |= (now[j] - p).length() < was;
                }
            });
            if hit {
                clash.push(k);
            }
        }
        if !clash.is_empty() {
            // Every clashing robot back where it was, then each moves again in turn.
            for k in clash.iter_mut() {
                let (i, before) = &mut saved[*k];
                std::mem::swap(&mut self.members[*i].robot, before);
                now[*i] = center_of(&self.members[*i].robot);
                *k = *i;
            }
            let mut bodies = Vec::new();
            for &i in &clash {
                bodies.clear();
                let p = now[i];
                self.index
                    .near(p, 2.0 * ROBOT_RADIUS_MM + 4.0 * MAX_MOVE_MM, |j| {
                        if j != i {
                            bodies.push(robot_body(now[j], None));
                        }
                    });
                self.members[i].robot.step_among(STEP_S, &bodies);
                now[i] = center_of(&self.members[i].robot);
            }
        }
        // 3. Pucks, robot by robot.
        if !self.pucks.is_empty() {
            for i in 0..n {
                self.move_pucks(i);
            }
        }
        self.scratch = now;
        self.stale = true;
        self.refresh();
        self.ticks += 1;
        // The events due by the end of this tick.
        self.carries.clear();
        self.fire_events();
    }

    /// Files the robots where they are, if anything moved since they were last filed.
    fn refresh(&mut self) {
        if !self.stale {
            return;
        }
        let mut centers = std::mem::take(&mut self.scratch);
        centers.clear();
        centers.extend(self.members.iter().map(|m| center_of(&m.robot)));
        self.index.rebuild(
            self.map.width(),
            self.map.height(),
            ROBOT_RADIUS_MM,
            &centers,
        );
        self.scratch = centers;
        self.stale = false;
    }

    /// Runs `seconds` of simulated time (rounded to whole ticks) as fast as it can.
    pub fn run(&mut self, seconds: f64) {
        let n = (seconds / STEP_S).round().max(0.0) as u64;
        for _ in 0..n {
            self.tick();
        }
    }

    /// Every robot but `i` as a solid body, appended to `out`.
    fn robots_except(&self, i: usize, out: &mut Vec<Body>) {
        for (j, m) in self.members.iter().enumerate() {
            if j != i {
                out.push(robot_body(center_of(&m.robot), m.channel));
            }
        }
    }

    /// What robot `i`'s sensors see besides the map: the other robots and the pucks.
    pub fn others(&self, i: usize) -> Vec<Body> {
        let mut out = Vec::with_capacity(self.members.len() + self.pucks.len());
        self.robots_except(i, &mut out);
        out.extend(self.pucks.iter().map(|p| Body {
            center: p.center,
            radius: p.radius,
            height: PUCK_HEIGHT_MM,
            channel: p.channel,
            solid: false,
        }));
        out
    }

    /// The other robots as robot `i`'s sonar, laser and gripper beams see them (through the
    /// index: only those along a ray are looked at). The index must be fresh: `&self`
    /// methods are called between ticks, after `tick` or `refresh`.
    fn solids_for(&self, i: usize) -> Result<Others<'_>, Vec<Body>> {
        if self.stale {
            // Poses were set since the last tick: look at everyone (slower, still right).
            let mut out = Vec::with_capacity(self.members.len());
            self.robots_except(i, &mut out);
            Err(out)
        } else {
            Ok(Others {
                index: &self.index,
                except: i,
            })
        }
    }

    /// Robot `i`'s odometry, speeds, compass and stall.
    pub fn position(&self, i: usize) -> PositionReading {
        self.robot(i).position()
    }

    /// Robot `i`'s odometry at full precision (the `P` device).
    pub fn odometry(&self, i: usize) -> OdometryReading {
        self.robot(i).odometry_reading()
    }

    /// Robot `i`'s 16 sonar ranges, mm (other robots echo).
    pub fn sonar(&self, i: usize) -> [u16; 16] {
        match self.solids_for(i) {
            Ok(others) => {
                // The robots within the sonar's reach, each sonar's cone then sorting out
                // its own few: cheaper than walking the index ray by ray.
                let mut near = Vec::new();
                let p = others.index.center(i);
                others
                    .index
                    .near(p, SONAR_MAX_MM + 2.0 * ROBOT_RADIUS_MM, |j| {
                        if j != i {
                            near.push(robot_body(others.index.center(j), None));
                        }
                    });
                // The ring is a view of `near` from `p` alone: the robot reuses its last
                // echoes when `near`, `p` and itself are as they were.
                self.robot(i).sonar_seen(CastKind::SonarRing, p, &near, || {
                    Ring::new(
                        p,
                        &near,
                        SONAR_HALF_CONE_DEG.to_radians(),
                        sonar_offset() + 1.0,
                    )
                })
            }
            Err(all) => self.robot(i).sonar_among(&all),
        }
    }

    /// The robots within reach of robot `i`'s laser, as solid discs (from the index when
    /// it is fresh, else every robot): each then meets only the rays of the angle it covers.
    fn laser_targets(&self, i: usize) -> Vec<Body> {
        match self.solids_for(i) {
            Ok(others) => {
                let robot = self.robot(i);
                let reach = robot.laser_spec().max_mm + 2.0 * ROBOT_RADIUS_MM;
                let mut near = Vec::new();
                others.index.near(others.index.center(i), reach, |j| {
                    if j != i {
                        near.push(robot_body(others.index.center(j), None));
                    }
                });
                near
            }
            Err(all) => all,
        }
    }

    /// Robot `i`'s laser scan, mm (other robots reflect).
    pub fn laser(&self, i: usize) -> [u16; LASER_SAMPLES] {
        self.robot(i).laser_among(&self.laser_targets(i))
    }

    /// Robot `i`'s full laser scan (`L`), from the same rays as [`SimWorld::laser`].
    pub fn scan(&self, i: usize) -> Scan {
        self.robot(i).scan_among(&self.laser_targets(i))
    }

    /// [`SimWorld::laser`] and [`SimWorld::scan`] of robot `i` from one casting of its
    /// rays (for a robot whose `l` and `L` are both read).
    pub fn laser_and_scan(&self, i: usize) -> ([u16; LASER_SAMPLES], Scan) {
        self.robot(i).laser_and_scan_among(&self.laser_targets(i))
    }

    /// Files the robots where they are now, after poses were set from outside
    /// ([`SimWorld::robot_mut`]), so that readings look only at the robots near each one.
    /// A tick does this by itself.
    pub fn refresh_index(&mut self) {
        self.refresh();
    }

    /// The sonar of each robot of `robots`, computed on up to [`SimWorld::threads`]
    /// threads when there are many (the same readings as [`SimWorld::sonar`] one by one).
    pub fn sonar_many(&mut self, robots: &[usize]) -> Vec<[u16; 16]> {
        self.refresh();
        self.read_many(robots, [0; 16], |w, i| w.sonar(i))
    }

    /// The laser scan of each robot of `robots`, computed on up to [`SimWorld::threads`]
    /// threads when there are many (the same readings as [`SimWorld::laser`] one by one).
    pub fn laser_many(&mut self, robots: &[usize]) -> Vec<[u16; LASER_SAMPLES]> {
        self.refresh();
        self.read_many(robots, [0; LASER_SAMPLES], |w, i| w.laser(i))
    }

    fn read_many<T: Send + Copy>(
        &self,
        robots: &[usize],
        blank: T,
        read: impl Fn(&SimWorld, usize) -> T + Sync,
    ) -> Vec<T> {
        let threads = self
            .threads
            .min(robots.len() / PARALLEL_MIN_READINGS)
            .max(1);
        if threads <= 1 {
            return robots.iter().map(|&i| read(self, i)).collect();
        }
        let mut out = vec![blank; robots.len()];
        let chunk = robots.len().div_ceil(threads);
        let read_chunk = |ids: &[usize], outs: &mut [T]| {
            for (&i, o) in ids.iter().zip(outs.iter_mut()) {
                *o = read(self, i);
            }
        };
        // The first chunk on this thread, the others on threads of their own.
        std::thread::scope(|scope| {
            let mut chunks = robots.chunks(chunk).zip(out.chunks_mut(chunk));
            let first = chunks.next();
            for (ids, outs) in chunks {
                let read_chunk = &read_chunk;
                scope.spawn(move || read_chunk(ids, outs));
            }
            if let Some((ids, outs)) = first {
                read_chunk(ids, outs);
            }
        });
        out
    }

    /// Robot `i`'s bumpers and battery.
    pub fn misc(&self, i: usize) -> MiscReading {
        self.robot(i).misc()
    }

    /// Robot `i`'s pan, tilt and zoom.
    pub fn ptz(&self, i: usize) -> PtzReading {
        self.robot(i).ptz()
    }

    /// The blobs robot `i`'s camera sees (coloured objects, robots and pucks).
    pub fn vision(&self, i: usize) -> Vec<Blob> {
        self.robot(i).vision_among(&self.others(i))
    }

    /// Robot `i`'s gripper state and beams (pucks in the mouth break the beams).
    pub fn gripper(&self, i: usize) -> GripperReading {
        let robot = self.robot(i);
        let (x, y, th) = robot.true_pose();
        let centre = Vec2::new(x, y);
        let (mut outer, mut inner) = (false, false);
        for p in &self.pucks {
            if p.held_by.is_some_and(|h| h != i) {
                continue;
            }
            let local = (p.center - centre).rotated(-th);
            if local.y.abs() <= MOUTH_HALF_WIDTH_MM + p.radius {
                outer |= (local.x - (ROBOT_RADIUS_MM + OUTER_BEAM_MM)).abs() <= p.radius;
                inner |= (local.x - (ROBOT_RADIUS_MM + INNER_BEAM_MM)).abs() <= p.radius;
            }
        }
        match self.solids_for(i) {
            Ok(others) => robot.gripper_with(&others, (outer, inner)),
            Err(all) => robot.gripper_among(&all, (outer, inner)),
        }
    }

    /// Where every robot truly is now.
    pub fn truth(&self) -> Vec<TruthRecord> {
        let time = self.time();
        self.members
            .iter()
            .map(|m| {
                let (x, y, th) = m.robot.true_pose();
                TruthRecord {
                    time,
                    robot: m.name.clone(),
                    x,
                    y,
                    heading: th.to_degrees(),
                }
            })
            .collect()
    }

    /// Writes one truth line per robot in `format`.
    pub fn write_truth(&self, out: &mut dyn Write, format: TruthFormat) -> io::Result<()> {
        for r in self.truth() {
            out.write_all(r.line(format).as_bytes())?;
        }
        Ok(())
    }

    /// After robot `i` moved: drag the puck it holds, push the free pucks it touches, grip
    /// or let go.
    fn move_pucks(&mut self, i: usize) {
        let member = &self.members[i];
        let (x, y, th) = member.robot.true_pose();
        let centre = Vec2::new(x, y);
        // The turns into and out of the robot's frame, worked out once for every puck.
        let (to_world, to_robot) = (th.sin_cos(), (-th).sin_cos());
        let g = member.robot.gripper_mechanism();
        let (paddles, lift, closing, holding) = (g.paddles(), g.lift(), g.closing(), g.holding());
        let hold_x = member.hold_x;
        let mut grip: Option<(usize, f64)> = None;
        let mut released = false;
        for (k, puck) in self.pucks.iter_mut().enumerate() {
            match puck.held_by {
                Some(h) if h == i => {
                    if paddles > HOLD_POSITION + 0.05 {
                        // The paddles opened: the puck drops where it is.
                        puck.held_by = None;
                        puck.lifted = false;
                        released = true;
                    } else {
                        puck.center =
                            centre + Vec2::new(hold_x, 0.0).rotated_by(to_world.0, to_world.1);
                        puck.lifted = lift > 0.5;
                    }
                    continue;
                }
                Some(_) => continue,
                None => {}
            }
            let r = puck.radius;
            let mut local = (puck.center - centre).rotated_by(to_robot.0, to_robot.1);
            let in_lane = local.x > 0.0 && local.y.abs() <= MOUTH_HALF_WIDTH_MM - r;
            let mut moved = false;
            if in_lane {
                // Between the paddles: open (or raised) paddles let the puck up to the
                // robot's front; closed lowered paddles keep it beyond their tips.
                let reach = if paddles > HOLD_POSITION || lift > 0.5 {
                    ROBOT_RADIUS_MM + r
                } else {
                    PADDLE_TIP_MM + r
                };
                if local.x < reach {
                    local.x = reach;
                    moved = true;
                }
            } else {
                let d = local.length();
                let min = ROBOT_RADIUS_MM + r;
                if d < min {
                    local = if d > 1e-9 {
                        local * (min / d)
                    } else {
                        Vec2::new(min, 0.0)
                    };
                    moved = true;
                }
            }
            if moved {
                puck.center = centre + local.rotated_by(to_world.0, to_world.1);
                puck.center = out_of_walls(&self.map, puck.center, r);
            }
            let local = (puck.center - centre).rotated_by(to_robot.0, to_robot.1);
            let in_mouth = local.x >= ROBOT_RADIUS_MM + r - 1.0
                && local.x <= PADDLE_TIP_MM - r
                && local.y.abs() <= MOUTH_HALF_WIDTH_MM - r;
            if grip.is_none()
                && !holding
                && closing
                && lift <= 0.1
                && paddles <= HOLD_POSITION + 0.05
                && in_mouth
            {
                grip = Some((k, local.x));
            }
        }
        if let Some((k, at)) = grip {
            let puck = &mut self.pucks[k];
            puck.held_by = Some(i);
            puck.center = centre + Vec2::new(at, 0.0).rotated_by(to_world.0, to_world.1);
            let m = &mut self.members[i];
            m.hold_x = at;
            m.robot.gripper_mechanism_mut().set_holding(true);
        } else if released {
            self.members[i]
                .robot
                .gripper_mechanism_mut()
                .set_holding(false);
        }
    }
}

fn center_of(robot: &SimRobot) -> Vec2 {
    let (x, y, _) = robot.true_pose();
    Vec2::new(x, y)
}

/// A robot as the others' bumpers and sensors see it.
fn robot_body(center: Vec2, channel: Option<u8>) -> Body {
    Body {
        center,
        radius: ROBOT_RADIUS_MM,
        height: ROBOT_HEIGHT_MM,
        channel,
        solid: true,
    }
}

/// Robot `i`'s random sequence: the world's seed mixed with the index.
fn robot_seed(seed: u64, i: usize) -> u64 {
    seed ^ (i as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)
}

fn puck_of(p: &PuckPlacement) -> Puck {
    Puck {
        center: Vec2::new(p.center.0, p.center.1),
        radius: p.radius,
        channel: p.channel,
        held_by: None,
        lifted: false,
    }
}

/// Moves a disc at `p` of radius `r` out of the map's solids it overlaps (a few passes, for
/// corners).
fn out_of_walls(map: &WorldMap, mut p: Vec2, r: f64) -> Vec2 {
    for _ in 0..3 {
        let (clear, what) = map.clearance(p, r);
        let Some((q, _)) = what else { break };
        if clear >= 0.0 {
            break;
        }
        let inside = clear + r < 0.0;
        let d = if inside { q - p } else { p - q };
        let len = d.length();
        if len < 1e-9 {
            break;
        }
        p = q + d * (r / len);
    }
    p
}
