//! The world as a file describes it: its bounds, walls (segments, polygons or an ASCII or PNG
//! bitmap), obstacles, coloured objects, pucks, and the robots with their poses, colours, ports
//! and devices; read from a hand-written TOML world file (see `config/worlds/room.toml` for the
//! schema) or built in code.
//!
//! The walls, boxes, pillars and objects are static; pucks and robots only get their starting
//! places here (they move in [`crate::SimWorld`]).
//!
//! Lengths are millimetres. In the file headings are degrees; in the Rust API they are radians.

use std::fmt;
use std::path::{Path, PathBuf};

use config::{Config, File, FileFormat, Source, Value};
use serde::Deserialize;

use crate::geom::{Shape, Vec2};
use crate::laser::LaserSpec;
use crate::noise::Noise;
use crate::solids::SolidIndex;

/// The shipped example world, `config/worlds/room.toml`.
pub const ROOM_TOML: &str = include_str!("../worlds/room.toml");

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

    /// Parses `text`; `origin` names it in errors; bitmap files are relative to `dir`.
    fn parse(text: &str, origin: &str, dir: &Path) -> Result<WorldMap, WorldError> {
        let cfg = Config::builder()
            .add_source(File::from_str(text, FileFormat::Toml))
            .build()
            .map_err(|e| WorldError::Syntax {
                origin: origin.to_string(),
                message: e.to_string(),
            })?;
        let mut root = cfg.collect().map_err(|e| WorldError::Syntax {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;

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
        // `[robot]` (one robot) or `[[robot]]` (any number).
        let robots: Vec<(String, RobotSpec)> = match root.remove("robot") {
            None => Vec::new(),
            Some(v) => match v.clone().into_array() {
                Ok(items) => items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| {
                        let key = format!("robot[{i}]");
                        table(origin, &key, item).map(|r| (key, r))
                    })
                    .collect::<Result<_, _>>()?,
                Err(_) => vec![("robot".to_string(), table(origin, "robot", v)?)],
            },
        };
        let walls: Vec<WallSpec> = array(origin, "wall", root.remove("wall"))?;
        let polygons: Vec<PolygonSpec> = array(origin, "polygon", root.remove("polygon"))?;
        let boxes: Vec<BoxSpec> = array(origin, "box", root.remove("box"))?;
        let pillars: Vec<PillarSpec> = array(origin, "pillar", root.remove("pillar"))?;
        let objects: Vec<ObjectSpec> = array(origin, "object", root.remove("object"))?;
        let pucks: Vec<PuckSpec> = array(origin, "puck", root.remove("puck"))?;
        let swarms: Vec<SwarmSpec> = array(origin, "swarm", root.remove("swarm"))?;
        let grid: Option<GridSpec> = match root.remove("grid") {
            Some(v) => Some(table(origin, "grid", v)?),
            None => None,
        };
        let truth: Option<TruthSpec> = match root.remove("truth") {
            Some(v) => Some(table(origin, "truth", v)?),
            None => None,
        };

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
        map.noise = world_noise(origin, &world)?;

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
            map.walls.push(Wall { from, to });
        }
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
                    map.walls.push(Wall { from, to });
                }
            }
        }
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
            map.boxes.push(BoxObstacle { min, max });
        }
        if let Some(grid) = grid {
            let cells = grid_cells(origin, dir, &grid)?;
            let res = grid.resolution.unwrap_or(map.resolution);
            let (ox, oy) = match &grid.origin {
                Some(o) => point(origin, "grid.origin", o)?,
                None => (0.0, 0.0),
            };
            let rows = cells.len();
            for (x0, x1, top, bottom) in merge_cells(&cells) {
                // Row 0 is the top (north) of the picture.
                map.boxes.push(BoxObstacle {
                    min: (ox + x0 as f64 * res, oy + (rows - bottom) as f64 * res),
                    max: (ox + x1 as f64 * res, oy + (rows - top) as f64 * res),
                });
            }
        }
        for (i, p) in pillars.iter().enumerate() {
            let center = point(origin, &format!("pillar[{i}].center"), &p.center)?;
            positive(origin, &format!("pillar[{i}].radius"), p.radius)?;
            map.pillars.push(Pillar {
                center,
                radius: p.radius,
            });
        }
        for (i, o) in objects.iter().enumerate() {
            map.objects.push(object(origin, i, o)?);
        }
        map.rebuild();

        for (i, p) in pucks.iter().enumerate() {
            let key = format!("puck[{i}]");
            let center = point(origin, &format!("{key}.center"), &p.center)?;
            let radius = p.radius.unwrap_or(DEFAULT_PUCK_RADIUS_MM);
            positive(origin, &format!("{key}.radius"), radius)?;
            let channel = colour_channel(origin, &key, p.channel, p.colour.as_deref())?;
            let (clear, what) = map.clearance(Vec2::new(center.0, center.1), radius);
            if clear < 0.0 {
                let hit = what.map_or_else(|| "something".into(), |(_, o)| o.to_string());
                return Err(WorldError::key(
                    origin,
                    format!("{key}.center"),
                    format!("the puck at {center:?} overlaps {hit}"),
                ));
            }
            map.pucks.push(PuckPlacement {
                center,
                radius,
                channel,
            });
        }

        let mut spots = Spots::default();
        let mut names = std::collections::HashSet::new();
        for (i, (key, robot)) in robots.iter().enumerate() {
            let pose_key = format!("{key}.pose");
            if robot.pose.len() != 3 || robot.pose.iter().any(|v| !v.is_finite()) {
                return Err(WorldError::key(
                    origin,
                    pose_key,
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
            map.place(
                origin,
                &pose_key,
                &mut spots,
                &mut names,
                RobotPlacement {
                    name,
                    pose,
                    channel,
                    port: robot.port,
                    devices,
                    laser: laser_spec(origin, key, robot)?,
                },
            )?;
        }
        for (s_i, sw) in swarms.iter().enumerate() {
            map.place_swarm(origin, s_i, sw, &mut spots, &mut names)?;
        }

        if map.robots.is_empty() {
            let (x, y, _) = map.start_pose;
            let (clear, what) = map.clearance(Vec2::new(x, y), ROBOT_RADIUS_MM);
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

        if let Some(t) = truth {
            let format = match t.format.as_deref() {
                Some("csv") => TruthFormat::Csv,
                Some("jsonl") | Some("json") => TruthFormat::JsonLines,
                None if t.file.ends_with(".jsonl") || t.file.ends_with(".json") => {
                    TruthFormat::JsonLines
                }
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
            map.truth = Some(TruthLogSpec {
                file: PathBuf::from(t.file),
                format,
                period,
            });
        }
        Ok(map)
    }
}

/// The device codes of the simulated robot.
const DEVICE_CODES: &[u8] = b"psmglzvL";

/// Top-level sections a world file may have.
const SECTIONS: [&str; 11] = [
    "world", "robot", "swarm", "wall", "polygon", "box", "pillar", "object", "puck", "grid",
    "truth",
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

/// Most robots one world file may place.
pub const MAX_ROBOTS: usize = 100_000;

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

/// The robots placed so far, filed by where they are (to check overlaps in linear time).
#[derive(Default)]
struct Spots {
    cells: std::collections::HashMap<(i64, i64), Vec<usize>>,
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

impl WorldMap {
    /// Adds a robot after checking it is inside, clear of the solids and of the robots
    /// placed so far, and named uniquely. Errors name `pose_key`.
    fn place(
        &mut self,
        origin: &str,
        pose_key: &str,
        spots: &mut Spots,
        names: &mut std::collections::HashSet<String>,
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

    /// Places the robots of `[[swarm]]` number `s`.
    fn place_swarm(
        &mut self,
        origin: &str,
        s: usize,
        sw: &SwarmSpec,
        spots: &mut Spots,
        names: &mut std::collections::HashSet<String>,
    ) -> Result<(), WorldError> {
        let key = format!("swarm[{s}]");
        if sw.count == 0 || sw.count > MAX_ROBOTS {
            return Err(WorldError::key(
                origin,
                format!("{key}.count"),
                format!("expected 1 to {MAX_ROBOTS} robots, got {}", sw.count),
            ));
        }
        let ((x0, y0), (x1, y1)) = match &sw.region {
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
        let channel = colour_channel(origin, &key, sw.channel, sw.colour.as_deref())?;
        let devices = device_set(origin, &key, sw.kind.as_deref(), sw.devices.as_deref())?;
        let random = match sw.pattern.as_deref() {
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
        if let Some(h) = sw.heading {
            if !h.is_finite() {
                return Err(WorldError::key(
                    origin,
                    format!("{key}.heading"),
                    "expected degrees",
                ));
            }
        }
        let first = self.robots.len();
        let port_of = |k: usize| -> Result<Option<u16>, WorldError> {
            match sw.port {
                None => Ok(None),
                Some(p) => u16::try_from(usize::from(p) + k).map(Some).map_err(|_| {
                    WorldError::key(
                        origin,
                        format!("{key}.port"),
                        format!("{} robots from port {p} run past port 65535", sw.count),
                    )
                }),
            }
        };
        let name_of = |k: usize| match &sw.name {
            Some(prefix) => format!("{prefix}{k}"),
            None => format!("robot{}", first + k),
        };
        let r = ROBOT_RADIUS_MM;
        let (w, h) = (x1 - x0, y1 - y0);
        let mut rng =
            crate::rng::Rng::new(sw.seed.unwrap_or(self.seed) ^ 0x5357_4152_4D00 ^ s as u64);
        if random {
            for k in 0..sw.count {
                let mut placed = false;
                for _ in 0..1000 {
                    let x = x0 + r + rng.uniform() * (w - 2.0 * r).max(0.0);
                    let y = y0 + r + rng.uniform() * (h - 2.0 * r).max(0.0);
                    let heading = match sw.heading {
                        Some(d) => d.to_radians(),
                        None => (rng.uniform() * 360.0 - 180.0).to_radians(),
                    };
                    if self.clearance(Vec2::new(x, y), r).0 < 0.0
                        || spots.clash(&self.robots, x, y).is_some()
                    {
                        continue;
                    }
                    self.place(
                        origin,
                        &format!("{key}.pose"),
                        spots,
                        names,
                        RobotPlacement {
                            name: name_of(k),
                            pose: (x, y, heading),
                            channel,
                            port: port_of(k)?,
                            devices: devices.clone(),
                            laser: LaserSpec::default(),
                        },
                    )?;
                    placed = true;
                    break;
                }
                if !placed {
                    return Err(WorldError::key(
                        origin,
                        format!("{key}.count"),
                        format!(
                            "found no free place for robot {k} of {} in the region \
                             ({x0}, {y0})-({x1}, {y1}) after 1000 tries: the region is too \
                             crowded",
                            sw.count
                        ),
                    ));
                }
            }
        } else {
            // Columns and rows: from the spacing, or as square as the region allows.
            let (cols, sx, sy) = match sw.spacing {
                Some(sp) => {
                    positive(origin, &format!("{key}.spacing"), sp)?;
                    let cols = (((w - 2.0 * r) / sp).floor() as usize + 1).max(1);
                    (cols, sp, sp)
                }
                None => {
                    let n = sw.count as f64;
                    let cols = ((n * w / h.max(1.0)).sqrt().ceil() as usize).clamp(1, sw.count);
                    let rows = sw.count.div_ceil(cols);
                    (cols, w / cols as f64, h / rows as f64)
                }
            };
            let rows = sw.count.div_ceil(cols);
            if sx < 2.0 * r || sy < 2.0 * r {
                return Err(WorldError::key(
                    origin,
                    format!("{key}.count"),
                    format!(
                        "{} robots do not fit in the region ({x0}, {y0})-({x1}, {y1}): they \
                         would be {:.0} mm apart, less than a robot's {:.0} mm width",
                        sw.count,
                        sx.min(sy),
                        2.0 * r
                    ),
                ));
            }
            // With a spacing, the grid starts a radius in from the region's corner;
            // without, each robot sits in the middle of its share of the region.
            let (ox, oy) = match sw.spacing {
                Some(_) => (x0 + r, y0 + r),
                None => (x0 + sx / 2.0, y0 + sy / 2.0),
            };
            // Grid places on a solid or on a robot placed before are skipped.
            let mut k = 0;
            let mut spot = 0;
            while k < sw.count {
                let (row, col) = (spot / cols, spot % cols);
                spot += 1;
                let x = ox + col as f64 * sx;
                let y = oy + row as f64 * sy;
                if y > y1 - r + 1e-6 || row > rows + sw.count {
                    return Err(WorldError::key(
                        origin,
                        format!("{key}.count"),
                        format!(
                            "{} robots do not fit in the region ({x0}, {y0})-({x1}, {y1}) \
                             {sx:.0} x {sy:.0} mm apart: only {k} places are free",
                            sw.count
                        ),
                    ));
                }
                if self.clearance(Vec2::new(x, y), r).0 < 0.0
                    || spots.clash(&self.robots, x, y).is_some()
                {
                    continue;
                }
                let heading = match sw.heading {
                    Some(d) => d.to_radians(),
                    None => 0.0,
                };
                self.place(
                    origin,
                    &format!("{key}.pose"),
                    spots,
                    names,
                    RobotPlacement {
                        name: name_of(k),
                        pose: (x, y, heading),
                        channel,
                        port: port_of(k)?,
                        devices: devices.clone(),
                        laser: LaserSpec::default(),
                    },
                )?;
                k += 1;
            }
        }
        Ok(())
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WallSpec {
    from: Vec<f64>,
    to: Vec<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolygonSpec {
    points: Vec<Vec<f64>>,
    closed: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BoxSpec {
    min: Vec<f64>,
    max: Vec<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PillarSpec {
    center: Vec<f64>,
    radius: f64,
}

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PuckSpec {
    center: Vec<f64>,
    radius: Option<f64>,
    channel: Option<u8>,
    colour: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GridSpec {
    rows: Option<String>,
    file: Option<String>,
    resolution: Option<f64>,
    origin: Option<Vec<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TruthSpec {
    file: String,
    format: Option<String>,
    period: Option<f64>,
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

/// The grid's solid cells, row 0 at the top: from `rows` (`#` solid, anything else free) or
/// from a bitmap `file` (`.png`: dark pixels solid; anything else: text like `rows`).
fn grid_cells(origin: &str, dir: &Path, grid: &GridSpec) -> Result<Vec<Vec<bool>>, WorldError> {
    if let Some(r) = grid.resolution {
        positive(origin, "grid.resolution", r)?;
    }
    let cells =
        match (&grid.rows, &grid.file) {
            (Some(rows), None) => text_cells(rows),
            (None, Some(file)) => {
                let path = dir.join(file);
                if path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("png"))
                {
                    png_cells(&path).map_err(|e| {
                        WorldError::key(
                            origin,
                            "grid.file",
                            format!("cannot read {}: {e}", path.display()),
                        )
                    })?
                } else {
                    let text = std::fs::read_to_string(&path).map_err(|e| {
                        WorldError::key(
                            origin,
                            "grid.file",
                            format!("cannot read {}: {e}", path.display()),
                        )
                    })?;
                    text_cells(&text)
                }
            }
            _ => return Err(WorldError::key(
                origin,
                "grid",
                "give exactly one of `rows` (the bitmap as text) or `file` (a .png or text file)",
            )),
        };
    if cells.is_empty() {
        return Err(WorldError::key(origin, "grid", "the bitmap has no rows"));
    }
    Ok(cells)
}

/// Text bitmap: one line per row, `#` solid. Blank lines at the start and end are dropped.
fn text_cells(text: &str) -> Vec<Vec<bool>> {
    let mut rows: Vec<Vec<bool>> = text
        .lines()
        .map(|l| l.trim_end().chars().map(|c| c == '#').collect())
        .collect();
    while rows.first().is_some_and(|r| r.is_empty()) {
        rows.remove(0);
    }
    while rows.last().is_some_and(|r| r.is_empty()) {
        rows.pop();
    }
    rows
}

/// PNG bitmap: a pixel darker than mid-grey (and not transparent) is solid.
fn png_cells(path: &Path) -> Result<Vec<Vec<bool>>, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let (w, h) = {
        let info = reader.info();
        (info.width as usize, info.height as usize)
    };
    if w.saturating_mul(h) > 16_000_000 {
        return Err(format!("{w} x {h} pixels is too big a map"));
    }
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| "image too large".to_string())?;
    let mut buf = vec![0; size];
    let frame = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    let channels = frame.color_type.samples();
    let stride = frame.line_size;
    Ok((0..h)
        .map(|y| {
            (0..w)
                .map(|x| {
                    let px = &buf[y * stride + x * channels..][..channels];
                    let (lum, alpha) = match px {
                        [g] => (u32::from(*g), 255),
                        [g, a] => (u32::from(*g), *a),
                        [r, g, b] => ((u32::from(*r) + u32::from(*g) + u32::from(*b)) / 3, 255),
                        [r, g, b, a, ..] => {
                            ((u32::from(*r) + u32::from(*g) + u32::from(*b)) / 3, *a)
                        }
                        [] => (255, 0),
                    };
                    alpha >= 128 && lum < 128
                })
                .collect()
        })
        .collect())
}

/// Merges solid cells into rectangles: runs along each row, stacked downwards while the
/// run below is identical. Returns `(x0, x1, top, bottom)` in cells, end-exclusive.
fn merge_cells(cells: &[Vec<bool>]) -> Vec<(usize, usize, usize, usize)> {
    let runs = |row: &[bool]| {
        let mut out = Vec::new();
        let mut x = 0;
        while x < row.len() {
            if row[x] {
                let s = x;
                while x < row.len() && row[x] {
                    x += 1;
                }
                out.push((s, x));
            } else {
                x += 1;
            }
        }
        out
    };
    let all: Vec<Vec<(usize, usize)>> = cells.iter().map(|r| runs(r)).collect();
    let mut used: Vec<Vec<bool>> = all.iter().map(|r| vec![false; r.len()]).collect();
    let mut rects = Vec::new();
    for y in 0..all.len() {
        for (k, &(x0, x1)) in all[y].iter().enumerate() {
            if used[y][k] {
                continue;
            }
            used[y][k] = true;
            let mut bottom = y + 1;
            while bottom < all.len() {
                match all[bottom].iter().position(|&r| r == (x0, x1)) {
                    Some(j) if !used[bottom][j] => {
                        used[bottom][j] = true;
                        bottom += 1;
                    }
                    _ => break,
                }
            }
            rects.push((x0, x1, y, bottom));
        }
    }
    rects
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
