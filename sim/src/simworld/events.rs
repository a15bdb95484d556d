//! Firing the world file's `[[event]]`s ([`crate::map::WorldEvent`]): each at the end of
//! the physics step that brings the simulated time to its instant (an event at 0 as the
//! world is made), in file order, so a seeded run with events is the same run every time
//! and at any speed. A carry moves the robot with [`crate::SimRobot::carry_to`] (odometry
//! untouched, wheels at rest) and is listed in [`SimWorld::carries`] until the next step.
//!
//! Where the robot is put down:
//!
//! - a fixed destination (`move_to = [x, y, deg]`, `to = [...]`) was checked clear of the
//!   walls and obstacles when the file was read; if another robot stands there when the
//!   event fires, the carried robot goes to the nearest spot clear of everything, searched
//!   on rings 50 mm apart out to [`SEARCH_MM`], in sight of the destination (not through a
//!   wall), facing the destination's heading;
//! - a random one (`move_to = "random"`) is drawn from the event's own sequence (the
//!   world's seed mixed with the event's number): a cell of a grid of the places a robot
//!   can stand that are connected to where the world's robots start (so never inside a
//!   closed shape, nor in a part of the world no robot can reach), a point within it and a
//!   heading, drawn again (at most [`RANDOM_TRIES`] times) while the robot there would
//!   overlap anything;
//! - when neither finds a spot, the robot stays where it is, and the carry says so
//!   ([`Carry::to`] is `None`).

use super::SimWorld;
use crate::geom::Vec2;
use crate::map::{Destination, WorldMap, ROBOT_RADIUS_MM};
use crate::rng::Rng;
use crate::simworld::TruthRecord;
use crate::TruthFormat;

/// How far from a fixed destination another robot standing there may push the carried one,
/// mm.
pub const SEARCH_MM: f64 = 3000.0;

/// How many random poses a random carry draws before it gives up.
pub const RANDOM_TRIES: usize = 1000;

/// The most cells of the grid of reachable places (a world too large for 100 mm cells gets
/// larger ones).
const MAX_CELLS: f64 = 250_000.0;

/// One carry made by an event: which robot, from where, to where.
#[derive(Debug, Clone, PartialEq)]
pub struct Carry {
    /// Simulated seconds since the world started.
    pub time: f64,
    /// The event (its index in [`WorldMap::events`]).
    pub event: usize,
    /// Which firing of the event this is, from 0.
    pub firing: u64,
    /// The robot carried (index).
    pub robot: usize,
    /// Its name.
    pub name: String,
    /// Where it was: x, y mm, heading radians.
    pub from: (f64, f64, f64),
    /// Where the event meant to put it (for a random carry, the pose drawn last), if
    /// anywhere.
    pub wanted: Option<(f64, f64, f64)>,
    /// Where it was put down; `None` when no free spot was found (it stays at `from`).
    pub to: Option<(f64, f64, f64)>,
}

impl Carry {
    /// The truth log's line for this carry: the robot's true pose right after it, marked
    /// `carried` ([`TruthRecord::line_with_event`]); `None` when it was not moved.
    pub fn truth_line(&self, format: TruthFormat) -> Option<String> {
        let (x, y, th) = self.to?;
        let record = TruthRecord {
            time: self.time,
            robot: self.name.clone(),
            x,
            y,
            heading: th.to_degrees(),
        };
        Some(record.line_with_event(format, "carried"))
    }
}

/// Where the world's events stand: the step each fires next at, and how often each fired.
#[derive(Debug, Clone, Default)]
pub(super) struct Schedule {
    /// Per event: its next step (`None`: done) and the firings so far.
    next: Vec<(Option<u64>, u64)>,
    /// Per event: its random sequence (drawn from by random carries only).
    rngs: Vec<Rng>,
    /// The earliest step of any event (`u64::MAX` when none is left): a step before it
    /// looks at nothing else.
    soonest: u64,
    /// The reachable places, worked out at the first random carry.
    reachable: Option<Reachable>,
}

impl Schedule {
    /// The schedule of `map`'s events, none fired yet.
    pub(super) fn new(map: &WorldMap) -> Schedule {
        let events = map.events();
        let next: Vec<(Option<u64>, u64)> = events.iter().map(|e| (e.tick_of(0), 0)).collect();
        let soonest = next.iter().filter_map(|n| n.0).min().unwrap_or(u64::MAX);
        let rngs = (0..events.len())
            .map(|k| Rng::new(event_seed(map.seed(), k)))
            .collect();
        Schedule {
            next,
            rngs,
            soonest,
            reachable: None,
        }
    }

    /// Whether an event is due at step `tick`.
    pub(super) fn due(&self, tick: u64) -> bool {
        self.soonest <= tick
    }
}

/// The places a robot can stand and reach from where the robots start, as cells of a grid.
#[derive(Debug, Clone)]
struct Reachable {
    /// Side of a cell, mm.
    cell: f64,
    /// Cells per row.
    cols: usize,
    /// The reachable cells (row-major index), in index order.
    cells: Vec<usize>,
}

impl Reachable {
    /// The cells of `map` whose centres a robot can stand on, connected (4-neighbours)
    /// to a cell at or next to one of `starts`.
    fn new(map: &WorldMap, starts: &[(f64, f64)]) -> Reachable {
        let (w, h) = (map.width(), map.height());
        let cell = (w * h / MAX_CELLS).sqrt().max(100.0);
        let cols = ((w / cell).ceil() as usize).max(1);
        let rows = ((h / cell).ceil() as usize).max(1);
        let centre = |c: usize| {
            Vec2::new(
                (c % cols) as f64 * cell + cell / 2.0,
                (c / cols) as f64 * cell + cell / 2.0,
            )
        };
        let free = |p: Vec2| {
            p.x <= w
                && p.y <= h
                && map
                    .solids_near(p, ROBOT_RADIUS_MM)
                    .clearance(p, ROBOT_RADIUS_MM)
                    .0
                    >= 0.0
        };
        // 0 unknown, 1 free and reached, 2 not free.
        let mut state = vec![0u8; cols * rows];
        let mut stack = Vec::new();
        let visit = |c: usize, state: &mut Vec<u8>, stack: &mut Vec<usize>| {
            if state[c] == 0 {
                if free(centre(c)) {
                    state[c] = 1;
                    stack.push(c);
                } else {
                    state[c] = 2;
                }
            }
        };
        for &(x, y) in starts {
            let (sc, sr) = ((x / cell).floor() as i64, (y / cell).floor() as i64);
            for (dc, dr) in [(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)] {
                let (c, r) = (sc + dc, sr + dr);
                if c >= 0 && r >= 0 && (c as usize) < cols && (r as usize) < rows {
                    visit(r as usize * cols + c as usize, &mut state, &mut stack);
                }
            }
        }
        while let Some(c) = stack.pop() {
            let (col, row) = (c % cols, c / cols);
            if col > 0 {
                visit(c - 1, &mut state, &mut stack);
            }
            if col + 1 < cols {
                visit(c + 1, &mut state, &mut stack);
            }
            if row > 0 {
                visit(c - cols, &mut state, &mut stack);
            }
            if row + 1 < rows {
                visit(c + cols, &mut state, &mut stack);
            }
        }
        let cells = (0..state.len()).filter(|&c| state[c] == 1).collect();
        Reachable { cell, cols, cells }
    }
}

impl SimWorld {
    /// Fires every event due by now, in file order.
    pub(super) fn fire_events(&mut self) {
        if !self.schedule.due(self.ticks) {
            return;
        }
        let map = self.map.clone();
        for (k, event) in map.events().iter().enumerate() {
            let (next, fired) = self.schedule.next[k];
            if next.is_none_or(|t| t > self.ticks) {
                continue;
            }
            let i = event.robot;
            if i < self.members.len() {
                self.refresh();
                let from = self.members[i].robot.true_pose();
                let (wanted, to) = match &event.destination {
                    Destination::Poses(poses) => {
                        let wanted = poses[(fired % poses.len() as u64) as usize];
                        (Some(wanted), self.free_spot_near(i, wanted))
                    }
                    Destination::Random => {
                        let drawn = self.random_pose(k, i);
                        (drawn.last, drawn.found)
                    }
                };
                if let Some((x, y, th)) = to {
                    self.members[i].robot.carry_to(x, y, th);
                    self.stale = true;
                }
                self.carries.push(Carry {
                    time: self.time(),
                    event: k,
                    firing: fired,
                    robot: i,
                    name: self.members[i].name.clone(),
                    from,
                    wanted,
                    to: to.map(|_| self.members[i].robot.true_pose()),
                });
            }
            self.schedule.next[k] = (event.tick_of(fired + 1), fired + 1);
        }
        self.schedule.soonest = self
            .schedule
            .next
            .iter()
            .filter_map(|n| n.0)
            .min()
            .unwrap_or(u64::MAX);
        self.refresh();
    }

    /// Whether robot `i`, standing at `p`, would overlap another robot (the index must be
    /// fresh).
    fn meets_robot(&self, i: usize, p: Vec2) -> bool {
        let mut hit = false;
        self.index.near(p, 2.0 * ROBOT_RADIUS_MM, |j| {
            hit |= j != i && (self.index.center(j) - p).length() < 2.0 * ROBOT_RADIUS_MM;
        });
        hit
    }

    /// Whether robot `i` can be put down at `p`: in the world, clear of the solids and of
    /// the other robots.
    fn can_stand(&self, i: usize, p: Vec2) -> bool {
        let map = &self.map;
        map.solids_near(p, ROBOT_RADIUS_MM)
            .clearance(p, ROBOT_RADIUS_MM)
            .0
            >= 0.0
            && !self.meets_robot(i, p)
    }

    /// `wanted` if robot `i` can be put down there, else the nearest spot (on rings 50 mm
    /// apart, out to [`SEARCH_MM`]) where it can, in sight of `wanted`.
    fn free_spot_near(&self, i: usize, wanted: (f64, f64, f64)) -> Option<(f64, f64, f64)> {
        let (x, y, th) = wanted;
        let at = Vec2::new(x, y);
        if self.can_stand(i, at) {
            return Some(wanted);
        }
        let step = 50.0;
        let rings = (SEARCH_MM / step) as usize;
        for ring in 1..=rings {
            let r = ring as f64 * step;
            let n = ((std::f64::consts::TAU * r / step).ceil() as usize).max(8);
            for k in 0..n {
                let p = at + Vec2::from_angle(k as f64 * std::f64::consts::TAU / n as f64) * r;
                if self.can_stand(i, p) && self.map.line_of_sight(at, p, None) {
                    return Some((p.x, p.y, th));
                }
            }
        }
        None
    }

    /// A random pose for robot `i` from event `k`'s sequence.
    fn random_pose(&mut self, k: usize, i: usize) -> Drawn {
        if self.schedule.reachable.is_none() {
            let starts: Vec<(f64, f64)> = if self.map.robots().is_empty() {
                let (x, y, _) = self.map.start_pose();
                vec![(x, y)]
            } else {
                self.map
                    .robots()
                    .iter()
                    .map(|r| (r.pose.0, r.pose.1))
                    .collect()
            };
            self.schedule.reachable = Some(Reachable::new(&self.map, &starts));
        }
        let mut drawn = Drawn {
            last: None,
            found: None,
        };
        let Some(reach) = self.schedule.reachable.as_ref() else {
            return drawn;
        };
        if reach.cells.is_empty() {
            return drawn;
        }
        let mut rng = self.schedule.rngs[k].clone();
        for _ in 0..RANDOM_TRIES {
            let c = reach.cells
                [((rng.uniform() * reach.cells.len() as f64) as usize).min(reach.cells.len() - 1)];
            let x = ((c % reach.cols) as f64 + rng.uniform()) * reach.cell;
            let y = ((c / reach.cols) as f64 + rng.uniform()) * reach.cell;
            let th = (rng.uniform() * 2.0 - 1.0) * std::f64::consts::PI;
            drawn.last = Some((x, y, th));
            if self.can_stand(i, Vec2::new(x, y)) {
                drawn.found = drawn.last;
                break;
            }
        }
        self.schedule.rngs[k] = rng;
        drawn
    }

    /// The carries the last step made (or, before the first step, the events at 0 made as
    /// the world was made), in the order they were made.
    pub fn carries(&self) -> &[Carry] {
        &self.carries
    }
}

/// What a random carry drew: the last pose, and the first where the robot can stand.
struct Drawn {
    last: Option<(f64, f64, f64)>,
    found: Option<(f64, f64, f64)>,
}

/// Event `k`'s random sequence: the world's seed mixed with the event's number (apart from
/// the robots' sequences, which mix in their index another way).
fn event_seed(seed: u64, k: usize) -> u64 {
    seed ^ 0x4556_454E_5453 ^ (k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}
