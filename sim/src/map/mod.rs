//! The world as a file describes it: its bounds, walls (segments, polygons or an ASCII or PNG
//! bitmap), obstacles, coloured objects, pucks, and the robots with their poses, colours, ports
//! and devices; read from a hand-written TOML world file (see `config/worlds/room.toml` for the
//! schema) or built in code.
//!
//! The walls, boxes, pillars and objects are static; pucks and robots only get their starting
//! places here (they move in [`crate::SimWorld`]).
//!
//! This module is the model and its queries (rays, clearance, line of sight). Reading a
//! world file is in the parts below it:
//!
//! - `file`: the file's schema (one typed spec per section, unknown keys refused) and the
//!   checks that make a [`WorldMap`] of it, section by section;
//! - `swarm`: placing robots, one by one or `[[swarm]]`s of them by a grid or random
//!   pattern, each checked clear of the solids and of the robots placed before;
//! - `bitmap`: a `[grid]`'s cells from text or a PNG, merged into boxes;
//! - `event`: the `[[event]]`s (robots carried elsewhere at set instants), checked against
//!   the robots and the solids.
//!
//! Lengths are millimetres. In the file headings are degrees; in the Rust API they are radians.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::geom::{Shape, Vec2};
use crate::laser::LaserSpec;
use crate::noise::Noise;
use crate::solids::SolidIndex;

mod bitmap;
mod event;
mod file;
mod swarm;

pub use event::{Destination, WorldEvent, MAX_DESTINATIONS, MAX_EVENTS};
pub use file::ROBOT_KINDS;
pub use swarm::MAX_ROBOTS;

/// The shipped example world, `config/worlds/room.toml`.
pub const ROOM_TOML: &str = include_str!("../../worlds/room.toml");

/// Radius (mm) of the simulated Pioneer 2-DX body, used to check that start poses are free.
pub const ROBOT_RADIUS_MM: f64 = 250.0;

/// Default height (mm) of a coloured object when the file does not give one.
pub const DEFAULT_OBJECT_HEIGHT_MM: f64 = 300.0;

/// Number of ACTS colour channels (objects use channels `0..ACTS_CHANNELS`).
pub const ACTS_CHANNELS: u8 = 32;

/// Colour names a world file may use instead of a channel number: `colour = "red"` is channel
/// 0, `"green"` 1, and so on (the ACTS channels a lab would train for these colours).
pub const COLOUR_NAMES: [&str; 8] = [
    "red", "green", "blue", "yellow", "magenta", "cyan", "orange", "purple",
];

/// Default puck radius, mm (a Pioneer gripper puck, 80 mm across).
pub const DEFAULT_PUCK_RADIUS_MM: f64 = 40.0;

/// Default map resolution (mm per bitmap cell), when `[world]` gives none.
pub const DEFAULT_RESOLUTION_MM: f64 = 100.0;

/// Default odometry noise of a world file (unless `noise = false`): one standard deviation
/// of the error, as a fraction of the distance driven (translation) and of the angle turned
/// (rotation).
pub const DEFAULT_ODOMETRY_NOISE: (f64, f64) = (0.02, 0.02);

/// Where a robot of the world starts, and how it is served.
#[derive(Debug, Clone, PartialEq)]
pub struct RobotPlacement {
    /// The robot's name (`robot0`, `robot1`, ... when the file gives none).
    pub name: String,
    /// Start pose: x mm, y mm, heading radians.
    pub pose: (f64, f64, f64),
    /// The ACTS channel of its colour marking (what other robots' cameras see), if any.
    pub channel: Option<u8>,
    /// The TCP port it is served on, if the file gives one.
    pub port: Option<u16>,
    /// The device codes it serves, if the file lists them (default: all seven).
    pub devices: Option<Vec<u8>>,
    /// Its laser (`laser_fov_deg`, `laser_resolution_deg`, `laser_max_mm`; default the
    /// Pioneer's SICK LMS-200).
    pub laser: LaserSpec,
}

/// A puck's starting place.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PuckPlacement {
    /// Centre (x, y) mm.
    pub center: (f64, f64),
    /// Radius, mm.
    pub radius: f64,
    /// ACTS channel of its colour, if the camera should see it.
    pub channel: Option<u8>,
}

/// The file format of the ground-truth log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruthFormat {
    /// `time,robot,x,y,heading` lines after a header line.
    Csv,
    /// One JSON object per line: `{"time":..,"robot":"..","x":..,"y":..,"heading":..}`.
    JsonLines,
}

/// The ground-truth log a world file asks for (`[truth]`).
#[derive(Debug, Clone, PartialEq)]
pub struct TruthLogSpec {
    /// The file to write (relative paths: to the server's working directory).
    pub file: PathBuf,
    /// CSV or JSON lines.
    pub format: TruthFormat,
    /// Simulated seconds between records.
    pub period: f64,
}

/// Why a world file could not be loaded.
#[derive(Debug)]
pub enum WorldError {
    /// The file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The text is not valid TOML.
    Syntax {
        /// The file name, or `<string>` for text given directly.
        origin: String,
        /// The TOML parser's message (with line and column).
        message: String,
    },
    /// A key is unknown, missing, of the wrong type, or has a value that makes no sense.
    Key {
        /// The file name, or `<string>` for text given directly.
        origin: String,
        /// Where the problem is, e.g. `wall[2]`, `box[0].max`, `robot.pose`.
        key: String,
        /// What is wrong (names the offending field for unknown or missing fields).
        message: String,
    },
}

impl WorldError {
    fn key(origin: &str, key: impl Into<String>, message: impl Into<String>) -> WorldError {
        WorldError::Key {
            origin: origin.to_string(),
            key: key.into(),
            message: message.into(),
        }
    }

    /// Replaces the origin (`<string>`) with a file name.
    fn with_origin(self, file: &Path) -> WorldError {
        let name = file.display().to_string();
        match self {
            WorldError::Syntax { message, .. } => WorldError::Syntax {
                origin: name,
                message,
            },
            WorldError::Key { key, message, .. } => WorldError::Key {
                origin: name,
                key,
                message,
            },
            other => other,
        }
    }
}

impl fmt::Display for WorldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorldError::Io { path, source } => {
                write!(f, "cannot read world file {}: {source}", path.display())
            }
            WorldError::Syntax { origin, message } => {
                write!(f, "world file {origin}: TOML syntax error: {message}")
            }
            WorldError::Key {
                origin,
                key,
                message,
            } => write!(f, "world file {origin}: key `{key}`: {message}"),
        }
    }
}

impl std::error::Error for WorldError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorldError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A wall: a line segment of no thickness.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wall {
    /// One end (x, y) mm.
    pub from: (f64, f64),
    /// The other end (x, y) mm.
    pub to: (f64, f64),
}

/// An axis-aligned rectangular obstacle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxObstacle {
    /// Lower-left corner (x, y) mm.
    pub min: (f64, f64),
    /// Upper-right corner (x, y) mm.
    pub max: (f64, f64),
}

/// A round obstacle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pillar {
    /// Centre (x, y) mm.
    pub center: (f64, f64),
    /// Radius, mm.
    pub radius: f64,
}

/// The footprint of a coloured object.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ObjectShape {
    /// A ball or round can.
    Circle {
        /// Radius, mm.
        radius: f64,
    },
    /// An axis-aligned box centred on the object's centre.
    Rect {
        /// Extent along x, mm.
        dx: f64,
        /// Extent along y, mm.
        dy: f64,
    },
}

/// A coloured object: an obstacle that the ACTS camera reports as a blob on its channel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColouredObject {
    /// ACTS channel, 0..31.
    pub channel: u8,
    /// Centre (x, y) mm.
    pub center: (f64, f64),
    /// Footprint.
    pub shape: ObjectShape,
    /// Height above the floor, mm (for the blob's height in the image).
    pub height: f64,
}

impl ColouredObject {
    /// The object's outline as a geometric shape.
    pub fn outline(&self) -> Shape {
        let c = Vec2::new(self.center.0, self.center.1);
        match self.shape {
            ObjectShape::Circle { radius } => Shape::Circle(c, radius),
            ObjectShape::Rect { dx, dy } => {
                let h = Vec2::new(dx / 2.0, dy / 2.0);
                Shape::Rect(c - h, c + h)
            }
        }
    }
}

/// What a solid shape of the world belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// One of the four edges of the world rectangle (0 south, 1 east, 2 north, 3 west).
    Boundary(usize),
    /// `walls()[i]`.
    Wall(usize),
    /// `boxes()[i]`.
    Box(usize),
    /// `pillars()[i]`.
    Pillar(usize),
    /// `objects()[i]`.
    Object(usize),
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Owner::Boundary(i) => {
                let side = ["south", "east", "north", "west"].get(i).copied();
                write!(f, "the world's {} edge", side.unwrap_or("outer"))
            }
            Owner::Wall(i) => write!(f, "wall[{i}]"),
            Owner::Box(i) => write!(f, "box[{i}]"),
            Owner::Pillar(i) => write!(f, "pillar[{i}]"),
            Owner::Object(i) => write!(f, "object[{i}]"),
        }
    }
}

/// The first thing a ray meets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RayHit {
    /// Distance from the ray origin, mm.
    pub distance: f64,
    /// What was hit.
    pub owner: Owner,
    /// The unit normal of the surface where the ray met it (its sign is not significant).
    pub normal: Vec2,
}

/// A world: static geometry (bounds, walls, obstacles, coloured objects), the robots' and
/// pucks' starting places, and the simulation settings (seed, noise, truth log).
#[derive(Debug, Clone, PartialEq)]
pub struct WorldMap {
    name: String,
    width: f64,
    height: f64,
    resolution: f64,
    start_pose: (f64, f64, f64),
    walls: Vec<Wall>,
    boxes: Vec<BoxObstacle>,
    pillars: Vec<Pillar>,
    objects: Vec<ColouredObject>,
    robots: Vec<RobotPlacement>,
    pucks: Vec<PuckPlacement>,
    seed: u64,
    noise: Noise,
    truth: Option<TruthLogSpec>,
    events: Vec<WorldEvent>,
    /// Every solid outline with its owner, boundary first. Rebuilt by every `with_*`.
    solids: Vec<(Shape, Owner)>,
    /// The solids filed by place, built when first asked for (after the last `with_*`).
    index: LazyIndex,
}

/// A [`SolidIndex`] of the map's solids, built on first use. It is derived from the
/// solids, so it never makes two maps differ.
#[derive(Debug, Clone, Default)]
struct LazyIndex(std::sync::OnceLock<SolidIndex>);

impl PartialEq for LazyIndex {
    fn eq(&self, _: &LazyIndex) -> bool {
        true
    }
}

/// The solids of a map a query near one place has to look at: those the index lists for
/// it, or every one when the index cannot say ([`WorldMap::solids_near`]).
#[derive(Debug, Clone, Copy)]
pub struct NearSolids<'a> {
    map: &'a WorldMap,
    ids: Option<&'a [u32]>,
}

impl NearSolids<'_> {
    fn each(&self, mut f: impl FnMut(usize, &Shape)) {
        match self.ids {
            Some(ids) => {
                for &i in ids {
                    f(i as usize, &self.map.solids[i as usize].0);
                }
            }
            None => {
                for (i, (shape, _)) in self.map.solids.iter().enumerate() {
                    f(i, shape);
                }
            }
        }
    }

    /// Calls `f` with each solid a query looks at.
    pub fn each_shape(&self, mut f: impl FnMut(&Shape)) {
        self.each(|_, shape| f(shape));
    }

    /// How many solids a query looks at.
    pub fn len(&self) -> usize {
        self.ids.map_or(self.map.solids.len(), <[u32]>::len)
    }

    /// Whether a query looks at no solid.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As [`WorldMap::cast_ray_along`] for a ray from within the range these solids were
    /// asked for: the same hit whenever it is within that range of where they were asked
    /// for (farther hits may be missed).
    pub fn cast_ray_along(&self, origin: Vec2, dir: Vec2) -> Option<RayHit> {
        self.cast_ray_within(origin, dir, f64::INFINITY)
    }

    /// [`NearSolids::cast_ray_along`]'s hit if it is closer than `max` (the surface's normal
    /// is worked out only then).
    pub fn cast_ray_within(&self, origin: Vec2, dir: Vec2, max: f64) -> Option<RayHit> {
        let mut best: Option<(f64, usize)> = None;
        self.each(|i, shape| {
            if let Some(t) = shape.ray_hit(origin, dir) {
                if best.is_none_or(|(b, _)| t < b) {
                    best = Some((t, i));
                }
            }
        });
        best.filter(|&(distance, _)| distance < max)
            .map(|(distance, i)| self.map.hit(origin, dir, distance, i))
    }

    /// As [`WorldMap::range`] (along the unit `dir`), for a ray from where these solids were
    /// asked for whose `max_range` is within the range they were asked for.
    pub fn range(&self, origin: Vec2, dir: Vec2, max_range: f64) -> f64 {
        self.cast_ray_along(origin, dir)
            .map_or(max_range, |h| h.distance.min(max_range))
    }

    /// As [`WorldMap::clearance`] at the point these solids were asked for with a range of
    /// `radius + reach`: the same whenever the clearance is at most `reach`, else some value
    /// above `reach`.
    pub fn clearance(&self, p: Vec2, radius: f64) -> (f64, Option<(Vec2, Owner)>) {
        let mut best = f64::INFINITY;
        let mut what = None;
        self.each(|i, shape| {
            let d = shape.signed_distance(p) - radius;
            if d < best {
                best = d;
                what = Some((shape.closest_point(p), self.map.solids[i].1));
            }
        });
        self.map.outside(p, radius, best, what)
    }
}

impl WorldMap {
    /// An empty world `width` x `height` mm (its edges are solid), with the robot starting in
    /// the middle facing +x, and exact sensors ([`Noise::NONE`]; a world file's default is
    /// [`Noise::PIONEER`], see [`WorldMap::with_noise`]).
    pub fn new(name: &str, width: f64, height: f64) -> WorldMap {
        let mut map = WorldMap {
            name: name.to_string(),
            width,
            height,
            resolution: DEFAULT_RESOLUTION_MM,
            start_pose: (width / 2.0, height / 2.0, 0.0),
            walls: Vec::new(),
            boxes: Vec::new(),
            pillars: Vec::new(),
            objects: Vec::new(),
            robots: Vec::new(),
            pucks: Vec::new(),
            seed: 0,
            noise: Noise::NONE,
            truth: None,
            events: Vec::new(),
            solids: Vec::new(),
            index: LazyIndex::default(),
        };
        map.rebuild();
        map
    }

    /// Sets the robot start pose: x, y mm and heading in radians (counter-clockwise from +x).
    pub fn with_start_pose(mut self, x: f64, y: f64, heading_rad: f64) -> WorldMap {
        self.start_pose = (x, y, heading_rad);
        self
    }

    /// Adds a wall segment.
    pub fn with_wall(mut self, from: (f64, f64), to: (f64, f64)) -> WorldMap {
        self.walls.push(Wall { from, to });
        self.rebuild();
        self
    }

    /// Adds an axis-aligned box obstacle (corners in any order).
    pub fn with_box(mut self, a: (f64, f64), b: (f64, f64)) -> WorldMap {
        self.boxes.push(BoxObstacle {
            min: (a.0.min(b.0), a.1.min(b.1)),
            max: (a.0.max(b.0), a.1.max(b.1)),
        });
        self.rebuild();
        self
    }

    /// Adds a round pillar.
    pub fn with_pillar(mut self, center: (f64, f64), radius: f64) -> WorldMap {
        self.pillars.push(Pillar { center, radius });
        self.rebuild();
        self
    }

    /// Adds a coloured object.
    pub fn with_object(mut self, object: ColouredObject) -> WorldMap {
        self.objects.push(object);
        self.rebuild();
        self
    }

    /// Adds a robot (the first one added also sets the start pose). No overlap check.
    pub fn with_robot(mut self, robot: RobotPlacement) -> WorldMap {
        if self.robots.is_empty() {
            self.start_pose = robot.pose;
        }
        self.robots.push(robot);
        self
    }

    /// Adds a puck.
    pub fn with_puck(mut self, puck: PuckPlacement) -> WorldMap {
        self.pucks.push(puck);
        self
    }

    /// Sets the random seed (sensor and odometry noise).
    pub fn with_seed(mut self, seed: u64) -> WorldMap {
        self.seed = seed;
        self
    }

    /// Turns odometry noise on with these standard deviations (fractions of distance driven
    /// and of angle turned), or off with `None`.
    pub fn with_odometry_noise(mut self, noise: Option<(f64, f64)>) -> WorldMap {
        self.noise.odometry = noise;
        self
    }

    /// Sets how the robots' sensors and odometry stray from the truth.
    pub fn with_noise(mut self, noise: Noise) -> WorldMap {
        self.noise = noise;
        self
    }

    /// Adds an event (after the file's). Unchecked: its robot must be one of the world's
    /// and its fixed destinations clear, as a world file's are.
    pub fn with_event(mut self, event: WorldEvent) -> WorldMap {
        self.events.push(event);
        self
    }

    /// The shipped `config/worlds/room.toml` (embedded in the binary).
    pub fn default_room() -> WorldMap {
        match WorldMap::parse(ROOM_TOML, "config/worlds/room.toml", Path::new(".")) {
            Ok(map) => map,
            // The file is checked by a unit test; this cannot happen in a tested build.
            Err(e) => panic!("the embedded room.toml is invalid: {e}"),
        }
    }

    /// Parses a world from TOML text. Errors name the offending key and say `<string>` as the
    /// origin. A bitmap `file` is looked for relative to the current directory.
    pub fn from_toml_str(s: &str) -> Result<WorldMap, WorldError> {
        WorldMap::parse(s, "<string>", Path::new("."))
    }

    /// Reads and parses a world file. Errors name the file; a bitmap `file` is looked for
    /// relative to the world file's folder.
    pub fn from_file(path: &Path) -> Result<WorldMap, WorldError> {
        let text = std::fs::read_to_string(path).map_err(|source| WorldError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        WorldMap::parse(&text, "<string>", dir).map_err(|e| e.with_origin(path))
    }

    /// The world's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Width (x extent), mm.
    pub fn width(&self) -> f64 {
        self.width
    }

    /// Height (y extent), mm.
    pub fn height(&self) -> f64 {
        self.height
    }

    /// Robot start pose: x mm, y mm, heading radians.
    pub fn start_pose(&self) -> (f64, f64, f64) {
        self.start_pose
    }

    /// Map resolution: mm per bitmap cell (and the natural pixel size for pictures).
    pub fn resolution(&self) -> f64 {
        self.resolution
    }

    /// The robots the file places, in file order (empty when it places none: one robot is
    /// then simulated at the start pose).
    pub fn robots(&self) -> &[RobotPlacement] {
        &self.robots
    }

    /// The pucks' starting places.
    pub fn pucks(&self) -> &[PuckPlacement] {
        &self.pucks
    }

    /// The random seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Odometry noise (standard deviations as fractions of distance and of angle), or `None`
    /// when odometry is exact.
    pub fn odometry_noise(&self) -> Option<(f64, f64)> {
        self.noise.odometry
    }

    /// How the robots' sensors and odometry stray from the truth.
    pub fn noise(&self) -> &Noise {
        &self.noise
    }

    /// The ground-truth log the file asks for, if any.
    pub fn truth_log(&self) -> Option<&TruthLogSpec> {
        self.truth.as_ref()
    }

    /// The events (`[[event]]`), in file order.
    pub fn events(&self) -> &[WorldEvent] {
        &self.events
    }

    /// The walls.
    pub fn walls(&self) -> &[Wall] {
        &self.walls
    }

    /// The box obstacles.
    pub fn boxes(&self) -> &[BoxObstacle] {
        &self.boxes
    }

    /// The pillars.
    pub fn pillars(&self) -> &[Pillar] {
        &self.pillars
    }

    /// The coloured objects.
    pub fn objects(&self) -> &[ColouredObject] {
        &self.objects
    }

    /// Every solid outline (world edges, walls, boxes, pillars, objects) with its owner.
    pub fn solids(&self) -> &[(Shape, Owner)] {
        &self.solids
    }

    /// The first solid the ray from `origin` at `angle` radians meets, if any.
    pub fn cast_ray(&self, origin: Vec2, angle: f64) -> Option<RayHit> {
        self.cast_ray_along(origin, Vec2::from_angle(angle))
    }

    /// The first solid the ray from `origin` along the unit vector `dir` meets, if any.
    pub fn cast_ray_along(&self, origin: Vec2, dir: Vec2) -> Option<RayHit> {
        NearSolids {
            map: self,
            ids: None,
        }
        .cast_ray_along(origin, dir)
    }

    /// The hit of a ray from `origin` along `dir` on solid `i` at `distance`.
    fn hit(&self, origin: Vec2, dir: Vec2, distance: f64, i: usize) -> RayHit {
        let (shape, owner) = &self.solids[i];
        RayHit {
            distance,
            owner: *owner,
            normal: shape.normal_at(origin + dir * distance),
        }
    }

    /// The solids a query within `range` of `p` (a ray cast from there whose hits matter
    /// only that far, a clearance that matters only that close) has to look at: a few,
    /// from the map's index, or all of them.
    pub fn solids_near(&self, p: Vec2, range: f64) -> NearSolids<'_> {
        let index = self.index.0.get_or_init(|| {
            let shapes: Vec<Shape> = self.solids.iter().map(|(s, _)| *s).collect();
            SolidIndex::new(self.width, self.height, &shapes)
        });
        NearSolids {
            map: self,
            ids: index.near(p, range),
        }
    }

    /// Distance (mm) along the ray to the first solid, capped at `max_range`.
    pub fn range(&self, origin: Vec2, angle: f64, max_range: f64) -> f64 {
        self.cast_ray(origin, angle)
            .map_or(max_range, |h| h.distance.min(max_range))
    }

    /// Clearance between a disc of `radius` at `p` and the nearest solid: negative when they
    /// overlap. Also returns the nearest solid's closest point to `p` (for contact direction).
    pub fn clearance(&self, p: Vec2, radius: f64) -> (f64, Option<(Vec2, Owner)>) {
        NearSolids {
            map: self,
            ids: None,
        }
        .clearance(p, radius)
    }

    /// `best` and `what` of a clearance at `p`, or leaving the world's rectangle if that is
    /// deeper.
    fn outside(
        &self,
        p: Vec2,
        radius: f64,
        mut best: f64,
        mut what: Option<(Vec2, Owner)>,
    ) -> (f64, Option<(Vec2, Owner)>) {
        // The world edges are segments, so a disc entirely outside the world would look free;
        // treat leaving the rectangle as overlapping.
        let outside = (-p.x)
            .max(p.x - self.width)
            .max(-p.y)
            .max(p.y - self.height);
        if outside > 0.0 {
            let d = -outside - radius;
            if d < best {
                best = d;
                let q = Vec2::new(p.x.clamp(0.0, self.width), p.y.clamp(0.0, self.height));
                what = Some((q, Owner::Boundary(0)));
            }
        }
        (best, what)
    }

    /// True if nothing solid lies on the straight line from `a` to `b` (ignoring `except`).
    pub fn line_of_sight(&self, a: Vec2, b: Vec2, except: Option<Owner>) -> bool {
        let d = b - a;
        let len = d.length();
        if len <= 0.0 {
            return true;
        }
        let dir = d * (1.0 / len);
        self.solids.iter().all(|(shape, owner)| {
            Some(*owner) == except || !shape.ray_hit(a, dir).is_some_and(|t| t < len)
        })
    }

    fn rebuild(&mut self) {
        let (w, h) = (self.width, self.height);
        let corners = [
            Vec2::new(0.0, 0.0),
            Vec2::new(w, 0.0),
            Vec2::new(w, h),
            Vec2::new(0.0, h),
        ];
        let mut solids = Vec::with_capacity(
            4 + self.walls.len() + self.boxes.len() + self.pillars.len() + self.objects.len(),
        );
        for i in 0..4 {
            solids.push((
                Shape::Segment(corners[i], corners[(i + 1) % 4]),
                Owner::Boundary(i),
            ));
        }
        for (i, wall) in self.walls.iter().enumerate() {
            let a = Vec2::new(wall.from.0, wall.from.1);
            let b = Vec2::new(wall.to.0, wall.to.1);
            solids.push((Shape::Segment(a, b), Owner::Wall(i)));
        }
        for (i, bx) in self.boxes.iter().enumerate() {
            let lo = Vec2::new(bx.min.0, bx.min.1);
            let hi = Vec2::new(bx.max.0, bx.max.1);
            solids.push((Shape::Rect(lo, hi), Owner::Box(i)));
        }
        for (i, p) in self.pillars.iter().enumerate() {
            let c = Vec2::new(p.center.0, p.center.1);
            solids.push((Shape::Circle(c, p.radius), Owner::Pillar(i)));
        }
        for (i, o) in self.objects.iter().enumerate() {
            solids.push((o.outline(), Owner::Object(i)));
        }
        self.solids = solids;
        self.index = LazyIndex::default();
    }
}
