//! Placing a world file's robots: each one checked inside the world, clear of the solids
//! and of the robots placed before it, and named uniquely ([`WorldMap::place`]); and
//! `[[swarm]]`s, `count` robots placed by a grid or a seeded random pattern in a region
//! (the swarm as the file gave it is checked in `file`, which hands over a [`Swarm`]).

use std::collections::{HashMap, HashSet};

use super::{RobotPlacement, WorldError, WorldMap, ROBOT_RADIUS_MM};
use crate::geom::Vec2;
use crate::laser::LaserSpec;
use crate::rng::Rng;

/// Tries to find a free place for one robot of a random swarm before giving up.
const RANDOM_TRIES: usize = 1000;

/// Most robots one world file may place.
pub const MAX_ROBOTS: usize = 100_000;

/// The robots placed so far, filed by where they are (to check overlaps in linear time).
#[derive(Default)]
pub(super) struct Spots {
    cells: HashMap<(i64, i64), Vec<usize>>,
}

impl Spots {
    const CELL: f64 = 2.0 * ROBOT_RADIUS_MM;

    fn key(x: f64, y: f64) -> (i64, i64) {
        (
            (x / Spots::CELL).floor() as i64,
            (y / Spots::CELL).floor() as i64,
        )
    }

    /// The first placed robot closer than two radii to (x, y).
    fn clash(&self, robots: &[RobotPlacement], x: f64, y: f64) -> Option<usize> {
        let (cx, cy) = Spots::key(x, y);
        let mut found: Option<usize> = None;
        for dx in -1..=1 {
            for dy in -1..=1 {
                for &j in self.cells.get(&(cx + dx, cy + dy)).into_iter().flatten() {
                    let (ox, oy, _) = robots[j].pose;
                    if Vec2::new(x - ox, y - oy).length() < 2.0 * ROBOT_RADIUS_MM {
                        found = Some(found.map_or(j, |f| f.min(j)));
                    }
                }
            }
        }
        found
    }

    fn add(&mut self, i: usize, x: f64, y: f64) {
        self.cells.entry(Spots::key(x, y)).or_default().push(i);
    }
}

/// How a swarm's robots are laid out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Pattern {
    /// Columns and rows: `spacing` mm apart (checked above 0), or as square as the region
    /// allows.
    Grid {
        /// The step between robots, mm.
        spacing: Option<f64>,
    },
    /// Uniformly at random in the region, drawn from `seed`.
    Random {
        /// The swarm's own random seed.
        seed: u64,
    },
}

/// One `[[swarm]]`, checked: its key for errors, its region and pattern, and what each of
/// its robots gets but a pose.
pub(super) struct Swarm<'a> {
    /// The file, as errors name it.
    pub(super) origin: &'a str,
    /// `swarm[s]`.
    pub(super) key: String,
    /// How many robots (1 to [`MAX_ROBOTS`]).
    pub(super) count: usize,
    /// Lower-left and upper-right corners, mm.
    pub(super) region: ((f64, f64), (f64, f64)),
    pub(super) pattern: Pattern,
    /// Every robot's heading, degrees (finite); else 0 on a grid, random at random.
    pub(super) heading: Option<f64>,
    /// The robots' names are this and their number in the swarm.
    pub(super) name: Option<&'a str>,
    /// The first robot's port; the others count up from it.
    pub(super) port: Option<u16>,
    pub(super) channel: Option<u8>,
    pub(super) devices: Option<Vec<u8>>,
    /// The index its first robot gets in the world (default names count from it).
    pub(super) first: usize,
}

impl Swarm<'_> {
    /// Robot `k` of the swarm at `pose`: named from the swarm's prefix (or its place in
    /// the world), on the `k`-th port from the swarm's.
    fn robot(&self, k: usize, pose: (f64, f64, f64)) -> Result<RobotPlacement, WorldError> {
        let port = match self.port {
            None => None,
            Some(p) => Some(u16::try_from(usize::from(p) + k).map_err(|_| {
                WorldError::key(
                    self.origin,
                    format!("{}.port", self.key),
                    format!("{} robots from port {p} run past port 65535", self.count),
                )
            })?),
        };
        let name = match self.name {
            Some(prefix) => format!("{prefix}{k}"),
            None => format!("robot{}", self.first + k),
        };
        Ok(RobotPlacement {
            name,
            pose,
            channel: self.channel,
            port,
            devices: self.devices.clone(),
            laser: LaserSpec::default(),
        })
    }

    /// The error for a swarm that does not fit its region.
    fn crowded(&self, why: String) -> WorldError {
        WorldError::key(self.origin, format!("{}.count", self.key), why)
    }

    /// The region, as errors print it.
    fn region_text(&self) -> String {
        let ((x0, y0), (x1, y1)) = self.region;
        format!("({x0}, {y0})-({x1}, {y1})")
    }
}

impl WorldMap {
    /// Adds a robot after checking it is inside, clear of the solids and of the robots
    /// placed so far, and named uniquely. Errors name `pose_key`.
    pub(super) fn place(
        &mut self,
        origin: &str,
        pose_key: &str,
        spots: &mut Spots,
        names: &mut HashSet<String>,
        robot: RobotPlacement,
    ) -> Result<(), WorldError> {
        if self.robots.len() >= MAX_ROBOTS {
            return Err(WorldError::key(
                origin,
                pose_key,
                format!("a world holds at most {MAX_ROBOTS} robots"),
            ));
        }
        let (x, y, _) = robot.pose;
        let (clear, what) = self.clearance(Vec2::new(x, y), ROBOT_RADIUS_MM);
        if clear < 0.0 {
            let hit = what.map_or_else(|| "something".to_string(), |(_, owner)| owner.to_string());
            return Err(WorldError::key(
                origin,
                pose_key,
                format!("the robot (radius {ROBOT_RADIUS_MM} mm) at ({x}, {y}) overlaps {hit}"),
            ));
        }
        if let Some(j) = spots.clash(&self.robots, x, y) {
            return Err(WorldError::key(
                origin,
                pose_key,
                format!(
                    "the robot at ({x}, {y}) overlaps robot `{}`",
                    self.robots[j].name
                ),
            ));
        }
        if robot.name.is_empty() || !names.insert(robot.name.clone()) {
            let key = pose_key.trim_end_matches(".pose");
            return Err(WorldError::key(
                origin,
                format!("{key}.name"),
                format!(
                    "robot names must be unique and not empty, got `{}`",
                    robot.name
                ),
            ));
        }
        if self.robots.is_empty() {
            self.start_pose = robot.pose;
        }
        spots.add(self.robots.len(), x, y);
        self.robots.push(robot);
        Ok(())
    }

    /// Places the robots of `swarm`.
    pub(super) fn place_swarm(
        &mut self,
        swarm: &Swarm,
        spots: &mut Spots,
        names: &mut HashSet<String>,
    ) -> Result<(), WorldError> {
        match swarm.pattern {
            Pattern::Random { seed } => self.place_random(swarm, Rng::new(seed), spots, names),
            Pattern::Grid { spacing } => self.place_grid(swarm, spacing, spots, names),
        }
    }

    /// Whether a robot at (x, y) would overlap a solid or a robot placed before.
    fn blocked(&self, spots: &Spots, x: f64, y: f64) -> bool {
        self.clearance(Vec2::new(x, y), ROBOT_RADIUS_MM).0 < 0.0
            || spots.clash(&self.robots, x, y).is_some()
    }

    /// Places robot `k` of `swarm` at `pose`.
    fn place_robot(
        &mut self,
        swarm: &Swarm,
        k: usize,
        pose: (f64, f64, f64),
        spots: &mut Spots,
        names: &mut HashSet<String>,
    ) -> Result<(), WorldError> {
        let robot = swarm.robot(k, pose)?;
        let pose_key = format!("{}.pose", swarm.key);
        self.place(swarm.origin, &pose_key, spots, names, robot)
    }

    /// The random pattern: each robot at the first free place of up to [`RANDOM_TRIES`]
    /// drawn uniformly in the region (a radius in from its edges), facing the swarm's
    /// heading or a random one.
    fn place_random(
        &mut self,
        swarm: &Swarm,
        mut rng: Rng,
        spots: &mut Spots,
        names: &mut HashSet<String>,
    ) -> Result<(), WorldError> {
        let r = ROBOT_RADIUS_MM;
        let ((x0, y0), (x1, y1)) = swarm.region;
        let (w, h) = (x1 - x0, y1 - y0);
        for k in 0..swarm.count {
            let mut placed = false;
            for _ in 0..RANDOM_TRIES {
                let x = x0 + r + rng.uniform() * (w - 2.0 * r).max(0.0);
                let y = y0 + r + rng.uniform() * (h - 2.0 * r).max(0.0);
                let heading = match swarm.heading {
                    Some(d) => d.to_radians(),
                    None => (rng.uniform() * 360.0 - 180.0).to_radians(),
                };
                if self.blocked(spots, x, y) {
                    continue;
                }
                self.place_robot(swarm, k, (x, y, heading), spots, names)?;
                placed = true;
                break;
            }
            if !placed {
                return Err(swarm.crowded(format!(
                    "found no free place for robot {k} of {} in the region {} after \
                     {RANDOM_TRIES} tries: the region is too crowded",
                    swarm.count,
                    swarm.region_text()
                )));
            }
        }
        Ok(())
    }

    /// The grid pattern: columns and rows from the spacing, or as square as the region
    /// allows; places on a solid or on a robot placed before are skipped.
    fn place_grid(
        &mut self,
        swarm: &Swarm,
        spacing: Option<f64>,
        spots: &mut Spots,
        names: &mut HashSet<String>,
    ) -> Result<(), WorldError> {
        let (count, r) = (swarm.count, ROBOT_RADIUS_MM);
        let ((x0, y0), (_, y1)) = swarm.region;
        let (cols, sx, sy) = grid_steps(swarm, spacing)?;
        let rows = count.div_ceil(cols);
        // With a spacing, the grid starts a radius in from the region's corner;
        // without, each robot sits in the middle of its share of the region.
        let (ox, oy) = match spacing {
            Some(_) => (x0 + r, y0 + r),
            None => (x0 + sx / 2.0, y0 + sy / 2.0),
        };
        let heading = swarm.heading.map_or(0.0, f64::to_radians);
        let mut k = 0;
        let mut spot = 0;
        while k < count {
            let (row, col) = (spot / cols, spot % cols);
            spot += 1;
            let x = ox + col as f64 * sx;
            let y = oy + row as f64 * sy;
            if y > y1 - r + 1e-6 || row > rows + count {
                return Err(swarm.crowded(format!(
                    "{count} robots do not fit in the region {} {sx:.0} x {sy:.0} mm apart: \
                     only {k} places are free",
                    swarm.region_text()
                )));
            }
            if self.blocked(spots, x, y) {
                continue;
            }
            self.place_robot(swarm, k, (x, y, heading), spots, names)?;
            k += 1;
        }
        Ok(())
    }
}

/// The grid's columns and its steps along x and y, mm: from `spacing`, or as square as the
/// region allows. Robots closer than their width are an error.
fn grid_steps(swarm: &Swarm, spacing: Option<f64>) -> Result<(usize, f64, f64), WorldError> {
    let (count, r) = (swarm.count, ROBOT_RADIUS_MM);
    let ((x0, y0), (x1, y1)) = swarm.region;
    let (w, h) = (x1 - x0, y1 - y0);
    let (cols, sx, sy) = match spacing {
        Some(sp) => {
            let cols = (((w - 2.0 * r) / sp).floor() as usize + 1).max(1);
            (cols, sp, sp)
        }
        None => {
            let n = count as f64;
            let cols = ((n * w / h.max(1.0)).sqrt().ceil() as usize).clamp(1, count);
            let rows = count.div_ceil(cols);
            (cols, w / cols as f64, h / rows as f64)
        }
    };
    if sx < 2.0 * r || sy < 2.0 * r {
        return Err(swarm.crowded(format!(
            "{count} robots do not fit in the region {}: they would be {:.0} mm apart, \
             less than a robot's {:.0} mm width",
            swarm.region_text(),
            sx.min(sy),
            2.0 * r
        )));
    }
    Ok((cols, sx, sy))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(swarm: &str) -> Result<WorldMap, String> {
        WorldMap::from_toml_str(&format!(
            "[world]\nwidth = 5000\nheight = 4000\nseed = 9\n[[swarm]]\n{swarm}\n"
        ))
        .map_err(|e| e.to_string())
    }

    fn poses(map: &WorldMap) -> Vec<(f64, f64, f64)> {
        map.robots().iter().map(|r| r.pose).collect()
    }

    #[test]
    fn a_grid_without_spacing_puts_each_robot_in_the_middle_of_its_share() {
        // 6 robots in 5 x 4 m: 3 columns of 1667 mm, 2 rows of 2000 mm.
        let map = world("count = 6").unwrap();
        let p = poses(&map);
        assert_eq!(p.len(), 6);
        assert!((p[0].0 - 5000.0 / 6.0).abs() < 1e-9 && (p[0].1 - 1000.0).abs() < 1e-9);
        assert!((p[5].0 - 5.0 * 5000.0 / 6.0).abs() < 1e-9 && (p[5].1 - 3000.0).abs() < 1e-9);
        let names: Vec<&str> = map.robots().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["robot0", "robot1", "robot2", "robot3", "robot4", "robot5"]
        );
    }

    #[test]
    fn a_random_swarm_is_the_same_for_the_same_seed_and_another_for_another() {
        let a = poses(&world("count = 8\npattern = \"random\"\nseed = 1").unwrap());
        let b = poses(&world("count = 8\npattern = \"random\"\nseed = 1").unwrap());
        let c = poses(&world("count = 8\npattern = \"random\"\nseed = 2").unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        // Without a seed of its own, the world's seed decides.
        let d = poses(&world("count = 8\npattern = \"random\"").unwrap());
        assert_ne!(a, d);
    }

    #[test]
    fn swarm_robots_count_their_ports_and_names_from_the_swarm_s() {
        let map = world("count = 3\nname = \"bee\"\nport = 7000").unwrap();
        let got: Vec<(&str, Option<u16>)> = map
            .robots()
            .iter()
            .map(|r| (r.name.as_str(), r.port))
            .collect();
        assert_eq!(
            got,
            [
                ("bee0", Some(7000)),
                ("bee1", Some(7001)),
                ("bee2", Some(7002))
            ]
        );
        let e = world("count = 3\nport = 65534").unwrap_err();
        assert!(e.contains("swarm[0].port") && e.contains("65535"), "{e}");
    }

    #[test]
    fn a_region_too_small_for_the_swarm_is_an_error_naming_its_count() {
        let e = world("count = 5\nregion = [[0, 0], [600, 600]]").unwrap_err();
        assert!(
            e.contains("swarm[0].count") && e.contains("do not fit"),
            "{e}"
        );
        let e =
            world("count = 40\npattern = \"random\"\nregion = [[0, 0], [1500, 1500]]").unwrap_err();
        assert!(
            e.contains("swarm[0].count") && e.contains("too crowded"),
            "{e}"
        );
    }
}
