//! The static world: its bounds, walls, obstacles and coloured objects, read from a
//! hand-written TOML world file (see `config/worlds/room.toml` for the schema) or built in code.
//!
//! Lengths are millimetres. In the file headings are degrees; in the Rust API they are radians.

use std::fmt;
use std::path::{Path, PathBuf};

use config::{Config, File, FileFormat, Source, Value};
use serde::Deserialize;

use super::geom::{Shape, Vec2};

/// The shipped example world, `config/worlds/room.toml`.
pub const ROOM_TOML: &str = include_str!("../../../config/worlds/room.toml");

/// Radius (mm) of the simulated Pioneer 2-DX body, used to check that start poses are free.
pub const ROBOT_RADIUS_MM: f64 = 250.0;

/// Default height (mm) of a coloured object when the file does not give one.
pub const DEFAULT_OBJECT_HEIGHT_MM: f64 = 300.0;

/// Number of ACTS colour channels (objects use channels `0..ACTS_CHANNELS`).
pub const ACTS_CHANNELS: u8 = 32;

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
}

/// Static world geometry: bounds, walls, obstacles, coloured objects and the robot start pose.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldMap {
    name: String,
    width: f64,
    height: f64,
    start_pose: (f64, f64, f64),
    walls: Vec<Wall>,
    boxes: Vec<BoxObstacle>,
    pillars: Vec<Pillar>,
    objects: Vec<ColouredObject>,
    /// Every solid outline with its owner, boundary first. Rebuilt by every `with_*`.
    solids: Vec<(Shape, Owner)>,
}

impl WorldMap {
    /// An empty world `width` x `height` mm (its edges are solid), with the robot starting in
    /// the middle facing +x.
    pub fn new(name: &str, width: f64, height: f64) -> WorldMap {
        let mut map = WorldMap {
            name: name.to_string(),
            width,
            height,
            start_pose: (width / 2.0, height / 2.0, 0.0),
            walls: Vec::new(),
            boxes: Vec::new(),
            pillars: Vec::new(),
            objects: Vec::new(),
            solids: Vec::new(),
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

    /// The shipped `config/worlds/room.toml` (embedded in the binary).
    pub fn default_room() -> WorldMap {
        match WorldMap::parse(ROOM_TOML, "config/worlds/room.toml") {
            Ok(map) => map,
            // The file is checked by a unit test; this cannot happen in a tested build.
            Err(e) => panic!("the embedded room.toml is invalid: {e}"),
        }
    }

    /// Parses a world from TOML text. Errors name the offending key and say `<string>` as the
    /// origin.
    pub fn from_toml_str(s: &str) -> Result<WorldMap, WorldError> {
        WorldMap::parse(s, "<string>")
    }

    /// Reads and parses a world file. Errors name the file.
    pub fn from_file(path: &Path) -> Result<WorldMap, WorldError> {
        let text = std::fs::read_to_string(path).map_err(|source| WorldError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        WorldMap::from_toml_str(&text).map_err(|e| e.with_origin(path))
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
        let dir = Vec2::from_angle(angle);
        let mut best: Option<RayHit> = None;
        for (shape, owner) in &self.solids {
            if let Some(t) = shape.ray_hit(origin, dir) {
                if best.map_or(true, |b| t < b.distance) {
                    best = Some(RayHit {
                        distance: t,
                        owner: *owner,
                    });
                }
            }
        }
        best
    }

    /// Distance (mm) along the ray to the first solid, capped at `max_range`.
    pub fn range(&self, origin: Vec2, angle: f64, max_range: f64) -> f64 {
        self.cast_ray(origin, angle)
            .map_or(max_range, |h| h.distance.min(max_range))
    }

    /// Clearance between a disc of `radius` at `p` and the nearest solid: negative when they
    /// overlap. Also returns the nearest solid's closest point to `p` (for contact direction).
    pub fn clearance(&self, p: Vec2, radius: f64) -> (f64, Option<(Vec2, Owner)>) {
        let mut best = f64::INFINITY;
        let mut what = None;
        for (shape, owner) in &self.solids {
            let d = shape.signed_distance(p) - radius;
            if d < best {
                best = d;
                what = Some((shape.closest_point(p), *owner));
            }
        }
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
            Some(*owner) == except || shape.ray_hit(a, dir).map_or(true, |t| t >= len)
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
    }

    /// Parses `text`; `origin` names it in errors.
    fn parse(text: &str, origin: &str) -> Result<WorldMap, WorldError> {
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
        let robot: Option<RobotSpec> = match root.remove("robot") {
            Some(v) => Some(table(origin, "robot", v)?),
            None => None,
        };
        let walls: Vec<WallSpec> = array(origin, "wall", root.remove("wall"))?;
        let boxes: Vec<BoxSpec> = array(origin, "box", root.remove("box"))?;
        let pillars: Vec<PillarSpec> = array(origin, "pillar", root.remove("pillar"))?;
        let objects: Vec<ObjectSpec> = array(origin, "object", root.remove("object"))?;

        positive(origin, "world.width", world.width)?;
        positive(origin, "world.height", world.height)?;
        let mut map = WorldMap::new(
            world.name.as_deref().unwrap_or("world"),
            world.width,
            world.height,
        );

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

        if let Some(robot) = robot {
            let key = "robot.pose";
            if robot.pose.len() != 3 || robot.pose.iter().any(|v| !v.is_finite()) {
                return Err(WorldError::key(
                    origin,
                    key,
                    format!(
                        "expected [x, y, heading_degrees], got {} values",
                        robot.pose.len()
                    ),
                ));
            }
            map.start_pose = (robot.pose[0], robot.pose[1], robot.pose[2].to_radians());
        }
        map.rebuild();

        let (x, y, _) = map.start_pose;
        let (clear, what) = map.clearance(Vec2::new(x, y), ROBOT_RADIUS_MM);
        if clear < 0.0 {
            let hit = what.map_or_else(|| "something".to_string(), |(_, owner)| owner.to_string());
            return Err(WorldError::key(
                origin,
                "robot.pose",
                format!("the robot (radius {ROBOT_RADIUS_MM} mm) at ({x}, {y}) overlaps {hit}"),
            ));
        }
        Ok(map)
    }
}

/// Top-level sections a world file may have.
const SECTIONS: [&str; 6] = ["world", "robot", "wall", "box", "pillar", "object"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WorldSpec {
    name: Option<String>,
    width: f64,
    height: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RobotSpec {
    pose: Vec<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WallSpec {
    from: Vec<f64>,
    to: Vec<f64>,
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
    channel: u8,
    center: Vec<f64>,
    radius: Option<f64>,
    size: Option<Vec<f64>>,
    height: Option<f64>,
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
    if o.channel >= ACTS_CHANNELS {
        return Err(WorldError::key(
            origin,
            format!("object[{i}].channel"),
            format!(
                "ACTS channels are 0..{}, got {}",
                ACTS_CHANNELS - 1,
                o.channel
            ),
        ));
    }
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
        channel: o.channel,
        center,
        shape,
        height,
    })
}
