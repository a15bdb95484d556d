//! The world file's schema and its reading: each section deserialized into a typed spec
//! that refuses unknown keys, then checked and made into the [`WorldMap`], section by
//! section, every error naming its key (`wall[2]`, `box[0].max`, `robot.pose`).
//!
//! The sections are read in a fixed order, and checked in a fixed order (the world, its
//! walls, polygons, boxes, grid, pillars and objects; then pucks, robots and swarms, which
//! must be clear of those; then the events, which name the robots; then the truth log), so
//! the same bad file always gets the same error.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use config::{Config, File, FileFormat, Source, Value};
use serde::Deserialize;

use super::event::EventSpec;
use super::swarm::{Pattern, Spots, Swarm, MAX_ROBOTS};
use super::{
    bitmap, BoxObstacle, ColouredObject, ObjectShape, Pillar, PuckPlacement, RobotPlacement,
    TruthFormat, TruthLogSpec, Wall, WorldError, WorldMap, ACTS_CHANNELS, COLOUR_NAMES,
    DEFAULT_OBJECT_HEIGHT_MM, DEFAULT_PUCK_RADIUS_MM, ROBOT_RADIUS_MM,
};
use crate::geom::Vec2;
use crate::laser::LaserSpec;
use crate::noise::Noise;

/// The device codes of the simulated robot.
const DEVICE_CODES: &[u8] = b"psmglzvL";

/// Top-level sections a world file may have.
const SECTIONS: [&str; 12] = [
    "world", "robot", "swarm", "wall", "polygon", "box", "pillar", "object", "puck", "grid",
    "event", "truth",
];

/// The device sets a world file can name with `kind`: a "simple" robot (wheels and sonar,
/// the swarm researcher's robot), the full Pioneer, and a base with a laser and bumpers
/// (the TurtleBot-like robot: a round base, its bumpers and a scanning laser), and the same
/// with the full scan device `L` too (`turtlebot`, as `config/create-rplidar.toml` serves).
pub const ROBOT_KINDS: [(&str, &[u8]); 4] = [
    ("simple", b"ps"),
    ("pioneer", b"psmglzv"),
    ("base-laser", b"pml"),
    ("turtlebot", b"pmlL"),
];

/// `[world]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorldSpec {
    name: Option<String>,
    width: f64,
    height: f64,
    resolution: Option<f64>,
    seed: Option<u64>,
    noise: Option<bool>,
    odometry_noise: Option<Vec<f64>>,
    sonar_noise: Option<f64>,
    sonar_dropout: Option<f64>,
    sonar_specular: Option<f64>,
    laser_noise: Option<f64>,
}

/// `[robot]` or `[[robot]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RobotSpec {
    name: Option<String>,
    pose: Vec<f64>,
    port: Option<u16>,
    channel: Option<u8>,
    colour: Option<String>,
    kind: Option<String>,
    devices: Option<Vec<String>>,
    laser_fov_deg: Option<f64>,
    laser_resolution_deg: Option<f64>,
    laser_max_mm: Option<f64>,
}

/// `[[swarm]]`: `count` robots placed by a pattern.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SwarmSpec {
    count: usize,
    pattern: Option<String>,
    region: Option<Vec<Vec<f64>>>,
    spacing: Option<f64>,
    heading: Option<f64>,
    seed: Option<u64>,
    name: Option<String>,
    port: Option<u16>,
    channel: Option<u8>,
    colour: Option<String>,
    kind: Option<String>,
    devices: Option<Vec<String>>,
}

/// `[[wall]]`: one segment.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WallSpec {
    from: Vec<f64>,
    to: Vec<f64>,
}

/// `[[polygon]]`: walls from point to point, closed unless it says not.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolygonSpec {
    points: Vec<Vec<f64>>,
    closed: Option<bool>,
}

/// `[[box]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BoxSpec {
    min: Vec<f64>,
    max: Vec<f64>,
}

/// `[[pillar]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PillarSpec {
    center: Vec<f64>,
    radius: f64,
}

/// `[[object]]`: a coloured object, round or a box.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ObjectSpec {
    channel: Option<u8>,
    colour: Option<String>,
    center: Vec<f64>,
    radius: Option<f64>,
    size: Option<Vec<f64>>,
    height: Option<f64>,
}

/// `[[puck]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PuckSpec {
    center: Vec<f64>,
    radius: Option<f64>,
    channel: Option<u8>,
    colour: Option<String>,
}

/// `[grid]`: walls drawn as a bitmap.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GridSpec {
    rows: Option<String>,
    file: Option<String>,
    resolution: Option<f64>,
    origin: Option<Vec<f64>>,
}

/// `[truth]`: the ground-truth log.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TruthSpec {
    file: String,
    format: Option<String>,
    period: Option<f64>,
}

/// Every section of a world file, deserialized and not yet checked.
struct Sections {
    world: WorldSpec,
    /// Each robot with the key its errors name (`robot` or `robot[i]`).
    robots: Vec<(String, RobotSpec)>,
    walls: Vec<WallSpec>,
    polygons: Vec<PolygonSpec>,
    boxes: Vec<BoxSpec>,
    pillars: Vec<PillarSpec>,
    objects: Vec<ObjectSpec>,
    pucks: Vec<PuckSpec>,
    swarms: Vec<SwarmSpec>,
    grid: Option<GridSpec>,
    events: Vec<EventSpec>,
    truth: Option<TruthSpec>,
}

impl Sections {
    /// Reads the TOML `text` into its sections: an unknown section, a missing `[world]` or a
    /// section of the wrong shape is an error naming it.
    fn read(text: &str, origin: &str) -> Result<Sections, WorldError> {
        let syntax = |e: config::ConfigError| WorldError::Syntax {
            origin: origin.to_string(),
            message: e.to_string(),
        };
        let cfg = Config::builder()
            .add_source(File::from_str(text, FileFormat::Toml))
            .build()
            .map_err(syntax)?;
        let mut root = cfg.collect().map_err(syntax)?;
        let mut unknown: Vec<&String> = root
            .keys()
            .filter(|k| !SECTIONS.contains(&k.as_str()))
            .collect();
        unknown.sort();
        if let Some(k) = unknown.first() {
            return Err(WorldError::key(
                origin,
                k.as_str(),
                format!(
                    "unknown section `{k}` (expected one of: {})",
                    SECTIONS.join(", ")
                ),
            ));
        }
        let world: WorldSpec = match root.remove("world") {
            Some(v) => table(origin, "world", v)?,
            None => return Err(WorldError::key(origin, "world", "missing [world] section")),
        };
        let robots = robot_tables(origin, root.remove("robot"))?;
        Ok(Sections {
            world,
            robots,
            walls: array(origin, "wall", root.remove("wall"))?,
            polygons: array(origin, "polygon", root.remove("polygon"))?,
            boxes: array(origin, "box", root.remove("box"))?,
            pillars: array(origin, "pillar", root.remove("pillar"))?,
            objects: array(origin, "object", root.remove("object"))?,
            pucks: array(origin, "puck", root.remove("puck"))?,
            swarms: array(origin, "swarm", root.remove("swarm"))?,
            grid: root
                .remove("grid")
                .map(|v| table(origin, "grid", v))
                .transpose()?,
            events: array(origin, "event", root.remove("event"))?,
            truth: root
                .remove("truth")
                .map(|v| table(origin, "truth", v))
                .transpose()?,
        })
    }
}

/// `[robot]` (one robot) or `[[robot]]` (any number), each with its key.
fn robot_tables(origin: &str, v: Option<Value>) -> Result<Vec<(String, RobotSpec)>, WorldError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    match v.clone().into_array() {
        Ok(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                let key = format!("robot[{i}]");
                table(origin, &key, item).map(|r| (key, r))
            })
            .collect(),
        Err(_) => Ok(vec![("robot".to_string(), table(origin, "robot", v)?)]),
    }
}

impl WorldMap {
    /// Parses `text`; `origin` names it in errors; bitmap files are relative to `dir`.
    pub(super) fn parse(text: &str, origin: &str, dir: &Path) -> Result<WorldMap, WorldError> {
        let s = Sections::read(text, origin)?;
        let mut map = world(origin, &s.world)?;
        map.add_walls(origin, &s.walls)?;
        map.add_polygons(origin, &s.polygons)?;
        map.add_boxes(origin, &s.boxes)?;
        if let Some(grid) = &s.grid {
            map.add_grid(origin, dir, grid)?;
        }
        map.add_pillars(origin, &s.pillars)?;
        for (i, o) in s.objects.iter().enumerate() {
            map.objects.push(object(origin, i, o)?);
        }
        map.rebuild();
        map.add_pucks(origin, &s.pucks)?;
        map.add_robots(origin, &s.robots, &s.swarms)?;
        map.add_events(origin, &s.events)?;
        if let Some(t) = s.truth {
            map.truth = Some(truth_log(origin, t)?);
        }
        Ok(map)
    }

    /// `[[wall]]`s.
    fn add_walls(&mut self, origin: &str, walls: &[WallSpec]) -> Result<(), WorldError> {
        for (i, w) in walls.iter().enumerate() {
            let from = point(origin, &format!("wall[{i}].from"), &w.from)?;
            let to = point(origin, &format!("wall[{i}].to"), &w.to)?;
            if from == to {
                return Err(WorldError::key(
                    origin,
                    format!("wall[{i}]"),
                    "`from` and `to` are the same point",
                ));
            }
            self.walls.push(Wall { from, to });
        }
        Ok(())
    }

    /// `[[polygon]]`s, as walls (a segment from a point to itself is left out).
    fn add_polygons(&mut self, origin: &str, polygons: &[PolygonSpec]) -> Result<(), WorldError> {
        for (i, poly) in polygons.iter().enumerate() {
            let key = format!("polygon[{i}].points");
            if poly.points.len() < 2 {
                return Err(WorldError::key(
                    origin,
                    key,
                    "a polygon needs at least two points",
                ));
            }
            let pts: Vec<(f64, f64)> = poly
                .points
                .iter()
                .enumerate()
                .map(|(k, p)| point(origin, &format!("{key}[{k}]"), p))
                .collect::<Result<_, _>>()?;
            let closed = poly.closed.unwrap_or(true) && pts.len() > 2;
            let n = if closed { pts.len() } else { pts.len() - 1 };
            for k in 0..n {
                let (from, to) = (pts[k], pts[(k + 1) % pts.len()]);
                if from != to {
                    self.walls.push(Wall { from, to });
                }
            }
        }
        Ok(())
    }

    /// `[[box]]`es.
    fn add_boxes(&mut self, origin: &str, boxes: &[BoxSpec]) -> Result<(), WorldError> {
        for (i, b) in boxes.iter().enumerate() {
            let min = point(origin, &format!("box[{i}].min"), &b.min)?;
            let max = point(origin, &format!("box[{i}].max"), &b.max)?;
            if !(max.0 > min.0 && max.1 > min.1) {
                return Err(WorldError::key(
                    origin,
                    format!("box[{i}].max"),
                    format!("must be above and to the right of `min` ({min:?}), got {max:?}"),
                ));
            }
            self.boxes.push(BoxObstacle { min, max });
        }
        Ok(())
    }

    /// `[grid]`: its solid cells as boxes, merged into as few as the bitmap allows.
    fn add_grid(&mut self, origin: &str, dir: &Path, grid: &GridSpec) -> Result<(), WorldError> {
        if let Some(r) = grid.resolution {
            positive(origin, "grid.resolution", r)?;
        }
        let file = grid.file.as_deref().map(|f| dir.join(f));
        let cells = bitmap::grid_cells(origin, grid.rows.as_deref(), file.as_deref())?;
        let res = grid.resolution.unwrap_or(self.resolution);
        let (ox, oy) = match &grid.origin {
            Some(o) => point(origin, "grid.origin", o)?,
            None => (0.0, 0.0),
        };
        let rows = cells.len();
        for (x0, x1, top, bottom) in bitmap::merge_cells(&cells) {
            // Row 0 is the top (north) of the picture.
            self.boxes.push(BoxObstacle {
                min: (ox + x0 as f64 * res, oy + (rows - bottom) as f64 * res),
                max: (ox + x1 as f64 * res, oy + (rows - top) as f64 * res),
            });
        }
        Ok(())
    }

    /// `[[pillar]]`s.
    fn add_pillars(&mut self, origin: &str, pillars: &[PillarSpec]) -> Result<(), WorldError> {
        for (i, p) in pillars.iter().enumerate() {
            let center = point(origin, &format!("pillar[{i}].center"), &p.center)?;
            positive(origin, &format!("pillar[{i}].radius"), p.radius)?;
            self.pillars.push(Pillar {
                center,
                radius: p.radius,
            });
        }
        Ok(())
    }

    /// `[[puck]]`s, each clear of the solids.
    fn add_pucks(&mut self, origin: &str, pucks: &[PuckSpec]) -> Result<(), WorldError> {
        for (i, p) in pucks.iter().enumerate() {
            let key = format!("puck[{i}]");
            let center = point(origin, &format!("{key}.center"), &p.center)?;
            let radius = p.radius.unwrap_or(DEFAULT_PUCK_RADIUS_MM);
            positive(origin, &format!("{key}.radius"), radius)?;
            let channel = colour_channel(origin, &key, p.channel, p.colour.as_deref())?;
            let (clear, what) = self.clearance(Vec2::new(center.0, center.1), radius);
            if clear < 0.0 {
                let hit = what.map_or_else(|| "something".into(), |(_, o)| o.to_string());
                return Err(WorldError::key(
                    origin,
                    format!("{key}.center"),
                    format!("the puck at {center:?} overlaps {hit}"),
                ));
            }
            self.pucks.push(PuckPlacement {
                center,
                radius,
                channel,
            });
        }
        Ok(())
    }

    /// The `[[robot]]`s, then the `[[swarm]]`s, each robot clear of the solids and of the
    /// robots before it; with no robot at all, the default pose must be clear.
    fn add_robots(
        &mut self,
        origin: &str,
        robots: &[(String, RobotSpec)],
        swarms: &[SwarmSpec],
    ) -> Result<(), WorldError> {
        let mut spots = Spots::default();
        let mut names = HashSet::new();
        for (i, (key, robot)) in robots.iter().enumerate() {
            let pose_key = format!("{key}.pose");
            let placement = robot_placement(origin, i, key, robot)?;
            self.place(origin, &pose_key, &mut spots, &mut names, placement)?;
        }
        for (s, spec) in swarms.iter().enumerate() {
            let swarm = self.swarm(origin, s, spec)?;
            self.place_swarm(&swarm, &mut spots, &mut names)?;
        }
        if self.robots.is_empty() {
            let (x, y, _) = self.start_pose;
            let (clear, what) = self.clearance(Vec2::new(x, y), ROBOT_RADIUS_MM);
            if clear < 0.0 {
                let hit =
                    what.map_or_else(|| "something".to_string(), |(_, owner)| owner.to_string());
                return Err(WorldError::key(
                    origin,
                    "robot.pose",
                    format!(
                        "no robot is placed and the default pose (the middle, ({x}, {y})) overlaps {hit}"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `[[swarm]]` number `s` checked: its count, region, colour, devices, pattern,
    /// heading and spacing, in that order.
    fn swarm<'a>(
        &self,
        origin: &'a str,
        s: usize,
        spec: &'a SwarmSpec,
    ) -> Result<Swarm<'a>, WorldError> {
        let key = format!("swarm[{s}]");
        if spec.count == 0 || spec.count > MAX_ROBOTS {
            return Err(WorldError::key(
                origin,
                format!("{key}.count"),
                format!("expected 1 to {MAX_ROBOTS} robots, got {}", spec.count),
            ));
        }
        let region = match &spec.region {
            None => ((0.0, 0.0), (self.width, self.height)),
            Some(r) => match r.as_slice() {
                [a, b] => {
                    let a = point(origin, &format!("{key}.region"), a)?;
                    let b = point(origin, &format!("{key}.region"), b)?;
                    ((a.0.min(b.0), a.1.min(b.1)), (a.0.max(b.0), a.1.max(b.1)))
                }
                _ => {
                    return Err(WorldError::key(
                        origin,
                        format!("{key}.region"),
                        "expected [[x0, y0], [x1, y1]], two corners in mm",
                    ))
                }
            },
        };
        let channel = colour_channel(origin, &key, spec.channel, spec.colour.as_deref())?;
        let devices = device_set(origin, &key, spec.kind.as_deref(), spec.devices.as_deref())?;
        let pattern = swarm_pattern(origin, &key, s, spec, self.seed)?;
        Ok(Swarm {
            origin,
            key,
            count: spec.count,
            region,
            pattern,
            heading: spec.heading,
            name: spec.name.as_deref(),
            port: spec.port,
            channel,
            devices,
            first: self.robots.len(),
        })
    }
}

/// A swarm's pattern (`grid`, the default, or `random`), checked with its heading and, on
/// a grid, its spacing; a random swarm's seed is its own or the world's, mixed with its
/// number `s`.
fn swarm_pattern(
    origin: &str,
    key: &str,
    s: usize,
    spec: &SwarmSpec,
    world_seed: u64,
) -> Result<Pattern, WorldError> {
    let random = match spec.pattern.as_deref() {
        None | Some("grid") => false,
        Some("random") => true,
        Some(other) => {
            return Err(WorldError::key(
                origin,
                format!("{key}.pattern"),
                format!("expected \"grid\" or \"random\", got \"{other}\""),
            ))
        }
    };
    if let Some(h) = spec.heading {
        if !h.is_finite() {
            return Err(WorldError::key(
                origin,
                format!("{key}.heading"),
                "expected degrees",
            ));
        }
    }
    if random {
        let seed = spec.seed.unwrap_or(world_seed) ^ 0x5357_4152_4D00 ^ s as u64;
        return Ok(Pattern::Random { seed });
    }
    if let Some(sp) = spec.spacing {
        positive(origin, &format!("{key}.spacing"), sp)?;
    }
    Ok(Pattern::Grid {
        spacing: spec.spacing,
    })
}

/// `[world]`: the empty world with its size, resolution, seed and noise.
fn world(origin: &str, world: &WorldSpec) -> Result<WorldMap, WorldError> {
    positive(origin, "world.width", world.width)?;
    positive(origin, "world.height", world.height)?;
    let mut map = WorldMap::new(
        world.name.as_deref().unwrap_or("world"),
        world.width,
        world.height,
    );
    if let Some(r) = world.resolution {
        positive(origin, "world.resolution", r)?;
        map.resolution = r;
    }
    map.seed = world.seed.unwrap_or(0);
    map.noise = world_noise(origin, world)?;
    Ok(map)
}

/// The `[world]` noise keys: `noise = false` turns everything off; otherwise each magnitude
/// is the file's or [`Noise::PIONEER`]'s.
fn world_noise(origin: &str, world: &WorldSpec) -> Result<Noise, WorldError> {
    if !world.noise.unwrap_or(true) {
        return Ok(Noise::NONE);
    }
    let d = Noise::PIONEER;
    let odometry = match &world.odometry_noise {
        None => d.odometry,
        Some(v) => match v.as_slice() {
            [t, r] if t.is_finite() && r.is_finite() && *t >= 0.0 && *r >= 0.0 => Some((*t, *r)),
            _ => {
                return Err(WorldError::key(
                    origin,
                    "world.odometry_noise",
                    format!("expected [translation, rotation] fractions >= 0, got {v:?}"),
                ))
            }
        },
    };
    let noise = Noise {
        odometry,
        sonar_sigma: world.sonar_noise.unwrap_or(d.sonar_sigma),
        sonar_dropout: world.sonar_dropout.unwrap_or(d.sonar_dropout),
        sonar_specular_deg: world.sonar_specular.unwrap_or(d.sonar_specular_deg),
        laser_sigma_mm: world.laser_noise.unwrap_or(d.laser_sigma_mm),
    };
    for (key, v, max) in [
        ("world.sonar_noise", noise.sonar_sigma, 1.0),
        ("world.sonar_dropout", noise.sonar_dropout, 1.0),
        ("world.sonar_specular", noise.sonar_specular_deg, 90.0),
        ("world.laser_noise", noise.laser_sigma_mm, 1000.0),
    ] {
        if !(v.is_finite() && (0.0..=max).contains(&v)) {
            return Err(WorldError::key(
                origin,
                key,
                format!("expected a number from 0 to {max}, got {v}"),
            ));
        }
    }
    Ok(noise)
}

/// Robot number `i` of the file (named `key` in errors) as placed, before it is checked
/// against the world.
fn robot_placement(
    origin: &str,
    i: usize,
    key: &str,
    robot: &RobotSpec,
) -> Result<RobotPlacement, WorldError> {
    if robot.pose.len() != 3 || robot.pose.iter().any(|v| !v.is_finite()) {
        return Err(WorldError::key(
            origin,
            format!("{key}.pose"),
            format!(
                "expected [x, y, heading_degrees], got {} values",
                robot.pose.len()
            ),
        ));
    }
    let pose = (robot.pose[0], robot.pose[1], robot.pose[2].to_radians());
    let name = robot.name.clone().unwrap_or_else(|| format!("robot{i}"));
    let channel = colour_channel(origin, key, robot.channel, robot.colour.as_deref())?;
    let devices = device_set(origin, key, robot.kind.as_deref(), robot.devices.as_deref())?;
    Ok(RobotPlacement {
        name,
        pose,
        channel,
        port: robot.port,
        devices,
        laser: laser_spec(origin, key, robot)?,
    })
}

/// A robot's laser from its `laser_*` keys (each defaulting to the SICK LMS-200's).
fn laser_spec(origin: &str, key: &str, robot: &RobotSpec) -> Result<LaserSpec, WorldError> {
    let d = LaserSpec::default();
    let laser = LaserSpec {
        fov_deg: robot.laser_fov_deg.unwrap_or(d.fov_deg),
        resolution_deg: robot.laser_resolution_deg.unwrap_or(d.resolution_deg),
        max_mm: robot.laser_max_mm.unwrap_or(d.max_mm),
    };
    let bad = |k: &str, why: String| WorldError::key(origin, format!("{key}.{k}"), why);
    if !(laser.fov_deg.is_finite() && laser.fov_deg > 0.0 && laser.fov_deg <= 360.0) {
        return Err(bad(
            "laser_fov_deg",
            format!(
                "expected degrees above 0, at most 360, got {}",
                laser.fov_deg
            ),
        ));
    }
    let r = laser.resolution_deg;
    if !(r.is_finite() && r > 0.0 && r <= laser.fov_deg) {
        return Err(bad(
            "laser_resolution_deg",
            format!("expected degrees above 0, at most the field of view, got {r}"),
        ));
    }
    if laser.count() > player_proto::scan::MAX_COUNT {
        return Err(bad(
            "laser_resolution_deg",
            format!(
                "{} readings per scan; the full scan device carries at most {}",
                laser.count(),
                player_proto::scan::MAX_COUNT
            ),
        ));
    }
    let m = laser.max_mm;
    if !(m.is_finite() && m >= 100.0 && m <= f64::from(u16::MAX)) {
        return Err(bad(
            "laser_max_mm",
            format!("expected mm from 100 to 65535, got {m}"),
        ));
    }
    Ok(laser)
}

/// `[truth]`: the log's file, format (from `format`, else the file's extension) and period.
fn truth_log(origin: &str, t: TruthSpec) -> Result<TruthLogSpec, WorldError> {
    let format = match t.format.as_deref() {
        Some("csv") => TruthFormat::Csv,
        Some("jsonl") | Some("json") => TruthFormat::JsonLines,
        None if t.file.ends_with(".jsonl") || t.file.ends_with(".json") => TruthFormat::JsonLines,
        None => TruthFormat::Csv,
        Some(other) => {
            return Err(WorldError::key(
                origin,
                "truth.format",
                format!("expected \"csv\" or \"jsonl\", got \"{other}\""),
            ))
        }
    };
    let period = t.period.unwrap_or(0.1);
    if !(period.is_finite() && period > 0.0) {
        return Err(WorldError::key(
            origin,
            "truth.period",
            format!("must be a positive number of seconds, got {period}"),
        ));
    }
    Ok(TruthLogSpec {
        file: PathBuf::from(t.file),
        format,
        period,
    })
}

/// The devices of a robot: `kind` (one of [`ROBOT_KINDS`]) or a `devices` list, not both;
/// `None` (all seven) when neither is given.
fn device_set(
    origin: &str,
    key: &str,
    kind: Option<&str>,
    devices: Option<&[String]>,
) -> Result<Option<Vec<u8>>, WorldError> {
    match (kind, devices) {
        (Some(_), Some(_)) => Err(WorldError::key(
            origin,
            key,
            "give `kind` or `devices`, not both",
        )),
        (Some(kind), None) => ROBOT_KINDS
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, d)| Some(d.to_vec()))
            .ok_or_else(|| {
                WorldError::key(
                    origin,
                    format!("{key}.kind"),
                    format!(
                        "unknown kind `{kind}` (one of: {})",
                        ROBOT_KINDS.map(|(k, _)| k).join(", ")
                    ),
                )
            }),
        (None, Some(list)) => list
            .iter()
            .map(|d| match d.as_bytes() {
                [c] if DEVICE_CODES.contains(c) => Ok(*c),
                _ => Err(WorldError::key(
                    origin,
                    format!("{key}.devices"),
                    format!(
                        "`{d}` is not a simulated device (one of {})",
                        String::from_utf8_lossy(DEVICE_CODES)
                    ),
                )),
            })
            .collect::<Result<Vec<u8>, _>>()
            .map(Some),
        (None, None) => Ok(None),
    }
}

/// The colour of a robot, puck or object: `channel = n` or `colour = "name"`, not both.
fn colour_channel(
    origin: &str,
    key: &str,
    channel: Option<u8>,
    colour: Option<&str>,
) -> Result<Option<u8>, WorldError> {
    match (channel, colour) {
        (Some(_), Some(_)) => Err(WorldError::key(
            origin,
            key,
            "give `channel` or `colour`, not both",
        )),
        (Some(c), None) if c >= ACTS_CHANNELS => Err(WorldError::key(
            origin,
            format!("{key}.channel"),
            format!("ACTS channels are 0..{}, got {c}", ACTS_CHANNELS - 1),
        )),
        (Some(c), None) => Ok(Some(c)),
        (None, Some(name)) => COLOUR_NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .map(|i| Some(i as u8))
            .ok_or_else(|| {
                WorldError::key(
                    origin,
                    format!("{key}.colour"),
                    format!(
                        "unknown colour `{name}` (one of: {}; or give `channel`)",
                        COLOUR_NAMES.join(", ")
                    ),
                )
            }),
        (None, None) => Ok(None),
    }
}

/// Deserializes one table, prefixing errors with its key.
fn table<T: for<'de> Deserialize<'de>>(origin: &str, key: &str, v: Value) -> Result<T, WorldError> {
    v.try_deserialize::<T>()
        .map_err(|e| WorldError::key(origin, key, e.to_string()))
}

/// Deserializes an array of tables (`[[key]]`), naming the element in errors.
fn array<T: for<'de> Deserialize<'de>>(
    origin: &str,
    key: &str,
    v: Option<Value>,
) -> Result<Vec<T>, WorldError> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let items = v.into_array().map_err(|_| {
        WorldError::key(
            origin,
            key,
            format!("must be an array of tables: write each one as [[{key}]]"),
        )
    })?;
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| table(origin, &format!("{key}[{i}]"), item))
        .collect()
}

/// A point `[x, y]` in mm.
fn point(origin: &str, key: &str, v: &[f64]) -> Result<(f64, f64), WorldError> {
    match v {
        [x, y] if x.is_finite() && y.is_finite() => Ok((*x, *y)),
        _ => Err(WorldError::key(
            origin,
            key,
            format!("expected a point [x, y] in mm, got {v:?}"),
        )),
    }
}

/// A length in mm above 0.
fn positive(origin: &str, key: &str, v: f64) -> Result<(), WorldError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(WorldError::key(
            origin,
            key,
            format!("must be a positive number of mm, got {v}"),
        ))
    }
}

/// `[[object]]` number `i`.
fn object(origin: &str, i: usize, o: &ObjectSpec) -> Result<ColouredObject, WorldError> {
    let key = format!("object[{i}]");
    let Some(channel) = colour_channel(origin, &key, o.channel, o.colour.as_deref())? else {
        return Err(WorldError::key(
            origin,
            key,
            "a coloured object needs `channel` (0..31) or `colour`",
        ));
    };
    let center = point(origin, &format!("object[{i}].center"), &o.center)?;
    let shape = match (o.radius, &o.size) {
        (Some(radius), None) => {
            positive(origin, &format!("object[{i}].radius"), radius)?;
            ObjectShape::Circle { radius }
        }
        (None, Some(size)) => {
            let key = format!("object[{i}].size");
            let (dx, dy) = point(origin, &key, size)?;
            positive(origin, &key, dx)?;
            positive(origin, &key, dy)?;
            ObjectShape::Rect { dx, dy }
        }
        _ => {
            return Err(WorldError::key(
                origin,
                format!("object[{i}]"),
                "give exactly one of `radius` (a round object) or `size` = [dx, dy] (a box)",
            ))
        }
    };
    let height = o.height.unwrap_or(DEFAULT_OBJECT_HEIGHT_MM);
    positive(origin, &format!("object[{i}].height"), height)?;
    Ok(ColouredObject {
        channel,
        center,
        shape,
        height,
    })
}
