//! The navigation devices' layouts (extensions, docs/extensions.md): the map `M`, the
//! localizer `H` (Player 1.6.5's localize interface, byte for byte) and the planner `G`
//! (Player 1.6.5's planner interface, plus a state byte), with their configs and the
//! answers the server sends to them.
//!
//! All big-endian. A config is `x <device> <u16 size> <code> <args>` (the code is
//! [`code`]); its answer, when it has one, is a `y` packet of the device's kind
//! ([`crate::ext::answer_packet`] frames it). Where Player 1.6.5 had a request structure
//! starting with a subtype byte (`H`'s particles, `G`'s waypoints), the body is that
//! structure with the config code in the subtype's place, so the rest is byte-identical to
//! 1.6.5. The map's tile answer has no such byte: it is exactly the layout the issue gives
//! ([`Tile`]); [`answered_code`] tells which config an answer is for.
//!
//! Every decoder checks sizes and counts against the slice and the bounds here before it
//! allocates. [`si`] has the layouts in metres and radians, as the front ends speak them.

use crate::data::DataError;

pub mod si;

/// Config codes of the navigation devices (the first byte of a config's payload, and of
/// the body of `H`'s and `G`'s answers, in 1.6.5's subtype place).
pub mod code {
    /// `x M t <u32 col> <u32 row> <u32 width> <u32 height>`: one tile of the map's cells.
    pub const TILE: u8 = b't';
    /// `x H s <i32 mean[3]> <i64 cov[9]>`: set the pose estimate (1.6.5's set_pose).
    pub const SET_POSE: u8 = b's';
    /// `x H g`: the particles (1.6.5's get_particles), answered in packets of at most
    /// [`super::MAX_PARTICLES_PER_ANSWER`].
    pub const PARTICLES: u8 = b'g';
    /// `x H G`: start global localization (particles spread over the free space).
    pub const GLOBAL: u8 = b'G';
    /// `x G w`: the plan's waypoints (1.6.5's get_waypoints).
    pub const WAYPOINTS: u8 = b'w';
    /// `x G e <u8 on>`: enable (1) or disable (0) the planner's motion (1.6.5's enable).
    pub const ENABLE: u8 = b'e';
    /// `x G c`: cancel the goal; the base stops.
    pub const CANCEL: u8 = b'c';
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

fn wrong_size(what: &'static str, expected: usize, got: usize) -> DataError {
    DataError::WrongSize {
        what,
        expected,
        got,
    }
}

fn check(what: &'static str, expected: usize, b: &[u8]) -> Result<(), DataError> {
    if b.len() == expected {
        Ok(())
    } else {
        Err(wrong_size(what, expected, b.len()))
    }
}

/// Checks that a body starts with `code`.
fn check_code(what: &'static str, code: u8, b: &[u8]) -> Result<(), DataError> {
    match b.first() {
        Some(&c) if c == code => Ok(()),
        _ => Err(DataError::BadNav(what)),
    }
}

// ----- M: the map -----------------------------------------------------------------------

/// The most cells one tile answer carries.
pub const MAX_TILE_CELLS: usize = 60_000;

/// The largest map a front end downloads or a recording's reader takes whole, in cells
/// (5000 x 5000): larger maps are refused with a reason before anything is allocated.
pub const MAX_MAP_CELLS: u64 = 25_000_000;

/// `M` data, 28 bytes: which map, its size and where it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MapInfo {
    /// Changes whenever the map changes (a client downloads the cells again).
    pub map_id: u32,
    /// Width in cells.
    pub width: u32,
    /// Height in cells.
    pub height: u32,
    /// Micrometres per cell.
    pub resolution: u32,
    /// X of the lower-left cell's outer corner, mm.
    pub origin_x: i32,
    /// Y of the lower-left cell's outer corner, mm.
    pub origin_y: i32,
    /// Heading of the map's x axis in the world, arc-seconds counter-clockwise.
    pub origin_heading: i32,
}

impl MapInfo {
    /// Size on the wire.
    pub const SIZE: usize = 28;

    /// The 28 big-endian bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        for x in [self.map_id, self.width, self.height, self.resolution] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        for x in [self.origin_x, self.origin_y, self.origin_heading] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        v
    }

    /// Decodes exactly 28 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("map", Self::SIZE, b)?;
        Ok(MapInfo {
            map_id: be32(b, 0),
            width: be32(b, 4),
            height: be32(b, 8),
            resolution: be32(b, 12),
            origin_x: be32(b, 16) as i32,
            origin_y: be32(b, 20) as i32,
            origin_heading: be32(b, 24) as i32,
        })
    }

    /// Metres per cell.
    pub fn resolution_m(&self) -> f64 {
        f64::from(self.resolution) / 1e6
    }

    /// The cells as tiles of at most [`MAX_TILE_CELLS`] cells, row by row from the
    /// lower-left: what a client asks for, in order, to download the whole map.
    pub fn tiles(&self) -> Vec<TileRequest> {
        let (w, h) = (self.width, self.height);
        if w == 0 || h == 0 {
            return Vec::new();
        }
        // Whole rows where a row fits; otherwise square-ish tiles.
        let (tw, th) = if (w as usize) <= MAX_TILE_CELLS {
            (w, (MAX_TILE_CELLS / w as usize).max(1) as u32)
        } else {
            (244, 244)
        };
        let mut out = Vec::new();
        let mut row = 0;
        while row < h {
            let mut col = 0;
            while col < w {
                out.push(TileRequest {
                    col,
                    row,
                    width: tw.min(w - col),
                    height: th.min(h - row),
                });
                col += tw;
            }
            row += th;
        }
        out
    }
}

/// The arguments of `x M t`: a rectangle of cells, column and row of its lower-left cell
/// (row 0 is the map's bottom row) and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TileRequest {
    /// First column.
    pub col: u32,
    /// First row (from the bottom).
    pub row: u32,
    /// Columns.
    pub width: u32,
    /// Rows.
    pub height: u32,
}

impl TileRequest {
    /// Size of the config's payload (code and arguments).
    pub const SIZE: usize = 17;

    /// The config's payload: `t` and the four u32.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![code::TILE];
        for x in [self.col, self.row, self.width, self.height] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        v
    }

    /// Decodes a config payload (with its code).
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("tile request", Self::SIZE, b)?;
        check_code("a tile request starts with 't'", code::TILE, b)?;
        Ok(TileRequest {
            col: be32(b, 1),
            row: be32(b, 5),
            width: be32(b, 9),
            height: be32(b, 13),
        })
    }

    /// The number of cells asked for, if it is at most [`MAX_TILE_CELLS`].
    pub fn cells(&self) -> Option<usize> {
        let n = u64::from(self.width) * u64::from(self.height);
        (n <= MAX_TILE_CELLS as u64).then_some(n as usize)
    }
}

/// The answer to `x M t`, a `y` packet of kind `M` whose payload after the kind is exactly
/// `<u32 map_id, col, row, w, h>` then `w * h` `i8` cells, row by row from the lower-left:
/// -1 free, 0 unknown, +1 occupied. The rectangle is the one asked for, cut to the map. No
/// config code comes first: `M` has this one answer, so its kind says what it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tile {
    /// The map the cells are of ([`MapInfo::map_id`]).
    pub map_id: u32,
    /// The rectangle (cut to the map).
    pub rect: TileRequest,
    /// `width * height` cells.
    pub cells: Vec<i8>,
}

impl Tile {
    /// Size of the body before the cells (map id and rectangle).
    pub const HEADER: usize = 20;

    /// The answer's body: map id, col, row, width, height, cells. Fails when the cells
    /// are not `width * height` or more than [`MAX_TILE_CELLS`].
    pub fn encode(&self) -> Result<Vec<u8>, DataError> {
        let Some(n) = self.rect.cells() else {
            return Err(DataError::BadNav("more than 60000 cells in a tile"));
        };
        if n != self.cells.len() {
            return Err(wrong_size("tile cells", n, self.cells.len()));
        }
        let mut v = Vec::with_capacity(Self::HEADER + n);
        v.extend_from_slice(&self.map_id.to_be_bytes());
        v.extend_from_slice(&self.rect.encode()[1..]);
        v.extend(self.cells.iter().map(|&c| c as u8));
        Ok(v)
    }

    /// The answer to `req` from a whole map (`cells`: `info.width * info.height`, row by
    /// row from the lower-left): the rectangle cut to the map, then to [`MAX_TILE_CELLS`]
    /// (fewer rows, or one row of fewer columns). `None` when `cells` is not the map's
    /// size. What every driver that serves a map answers (`mapfile`, `replay`).
    pub fn cut(info: &MapInfo, cells: &[i8], req: TileRequest) -> Option<Tile> {
        let (w, h) = (info.width, info.height);
        if u64::from(w) * u64::from(h) != cells.len() as u64 {
            return None;
        }
        let col = req.col.min(w);
        let row = req.row.min(h);
        let mut width = req.width.min(w - col);
        let mut height = req.height.min(h - row);
        let max = MAX_TILE_CELLS as u32;
        if width > max {
            width = max;
            height = height.min(1);
        } else if width > 0 && u64::from(width) * u64::from(height) > u64::from(max) {
            height = max / width;
        }
        let mut out = Vec::with_capacity((width * height) as usize);
        for r in row..row + height {
            let at = (r as usize) * (w as usize) + col as usize;
            out.extend_from_slice(&cells[at..at + width as usize]);
        }
        Some(Tile {
            map_id: info.map_id,
            rect: TileRequest {
                col,
                row,
                width,
                height,
            },
            cells: out,
        })
    }

    /// Decodes an answer's body (the `y` payload after the kind `M`).
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        if b.len() < Self::HEADER {
            return Err(DataError::BadNav("tile answer shorter than its header"));
        }
        let rect = TileRequest {
            col: be32(b, 4),
            row: be32(b, 8),
            width: be32(b, 12),
            height: be32(b, 16),
        };
        let Some(n) = rect.cells() else {
            return Err(DataError::BadNav("more than 60000 cells in a tile"));
        };
        check("tile answer", Self::HEADER + n, b)?;
        Ok(Tile {
            map_id: be32(b, 0),
            rect,
            cells: b[Self::HEADER..].iter().map(|&c| c as i8).collect(),
        })
    }
}

/// The config an answer of `device` answers, from its body: the map's one answer is the
/// tile (no code byte: [`Tile`]); the other devices' answers are Player 1.6.5's request
/// structures with the config code in the subtype's place, so it is their first byte.
pub fn answered_code(device: u8, body: &[u8]) -> Option<u8> {
    if device == crate::device::MAP {
        Some(code::TILE)
    } else {
        body.first().copied()
    }
}

// ----- H: the localizer (Player 1.6.5) ---------------------------------------------------

/// The most hypotheses a localize reading carries (1.6.5's `PLAYER_LOCALIZE_MAX_HYPOTHS`).
pub const MAX_HYPOTHESES: usize = 10;

/// The most particles one answer to `x H g` carries (1.6.5's
/// `PLAYER_LOCALIZE_PARTICLES_MAX`); more come in further answers.
pub const MAX_PARTICLES_PER_ANSWER: usize = 100;

/// One pose hypothesis, 88 bytes (1.6.5's `player_localize_hypoth_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hypothesis {
    /// Mean pose: x mm, y mm, heading arc-seconds.
    pub mean: [i32; 3],
    /// Covariance: mm², mm·mm, ... arc-seconds² (row-major 3 x 3).
    pub cov: [[i64; 3]; 3],
    /// Weight x 10^6.
    pub alpha: u32,
}

/// One line: `(x, y) mm H° (sd X mm, Y mm, A°), weight W`, the standard deviations the
/// square roots of the covariance's diagonal.
impl std::fmt::Display for Hypothesis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sd = |v: i64| (v.max(0) as f64).sqrt();
        write!(
            f,
            "({}, {}) mm {:.2}° (sd {:.0} mm, {:.0} mm, {:.2}°), weight {:.3}",
            self.mean[0],
            self.mean[1],
            f64::from(self.mean[2]) / 3600.0,
            sd(self.cov[0][0]),
            sd(self.cov[1][1]),
            sd(self.cov[2][2]) / 3600.0,
            f64::from(self.alpha) / 1e6
        )
    }
}

impl Hypothesis {
    /// Size on the wire.
    pub const SIZE: usize = 88;

    fn put(&self, v: &mut Vec<u8>) {
        put_mean_cov(v, &self.mean, &self.cov);
        v.extend_from_slice(&self.alpha.to_be_bytes());
    }

    fn get(b: &[u8]) -> Self {
        let (mean, cov) = get_mean_cov(b);
        Hypothesis {
            mean,
            cov,
            alpha: be32(b, 84),
        }
    }
}

fn put_mean_cov(v: &mut Vec<u8>, mean: &[i32; 3], cov: &[[i64; 3]; 3]) {
    for m in mean {
        v.extend_from_slice(&m.to_be_bytes());
    }
    for row in cov {
        for c in row {
            v.extend_from_slice(&c.to_be_bytes());
        }
    }
}

/// Mean and covariance from 84 bytes.
fn get_mean_cov(b: &[u8]) -> ([i32; 3], [[i64; 3]; 3]) {
    let mean = [be32(b, 0) as i32, be32(b, 4) as i32, be32(b, 8) as i32];
    let mut cov = [[0i64; 3]; 3];
    for (k, c) in cov.iter_mut().flatten().enumerate() {
        *c = be64(b, 12 + 8 * k) as i64;
    }
    (mean, cov)
}

/// `H` data (1.6.5's `player_localize_data_t`): `u16 pending_count, u32
/// pending_time_sec, u32 pending_time_usec, u32 hypoth_count`, then the hypotheses,
/// heaviest first, at most [`MAX_HYPOTHESES`]. Size `14 + 88 x count`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Localize {
    /// Readings not processed yet.
    pub pending_count: u16,
    /// When the last processed reading was taken: seconds.
    pub pending_time_sec: u32,
    /// And microseconds.
    pub pending_time_usec: u32,
    /// The hypotheses, heaviest first.
    pub hypotheses: Vec<Hypothesis>,
}

impl Localize {
    /// Size of the fields before the hypotheses.
    pub const HEADER: usize = 14;

    /// The big-endian bytes; fails beyond [`MAX_HYPOTHESES`].
    pub fn encode(&self) -> Result<Vec<u8>, DataError> {
        let n = self.hypotheses.len();
        if n > MAX_HYPOTHESES {
            return Err(DataError::BadNav("more than 10 hypotheses"));
        }
        let mut v = Vec::with_capacity(Self::HEADER + Hypothesis::SIZE * n);
        v.extend_from_slice(&self.pending_count.to_be_bytes());
        v.extend_from_slice(&self.pending_time_sec.to_be_bytes());
        v.extend_from_slice(&self.pending_time_usec.to_be_bytes());
        v.extend_from_slice(&(n as u32).to_be_bytes());
        for h in &self.hypotheses {
            h.put(&mut v);
        }
        Ok(v)
    }

    /// Decodes a reading; the count must match the size and be at most 10.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        if b.len() < Self::HEADER {
            return Err(DataError::BadNav("localize data shorter than 14 bytes"));
        }
        let n = be32(b, 10) as usize;
        if n > MAX_HYPOTHESES {
            return Err(DataError::BadNav("more than 10 hypotheses"));
        }
        check("localize", Self::HEADER + Hypothesis::SIZE * n, b)?;
        Ok(Localize {
            pending_count: be16(b, 0),
            pending_time_sec: be32(b, 2),
            pending_time_usec: be32(b, 6),
            hypotheses: (0..n)
                .map(|k| Hypothesis::get(&b[Self::HEADER + Hypothesis::SIZE * k..]))
                .collect(),
        })
    }
}

/// The payload of `x H s` (1.6.5's `player_localize_set_pose_t`, the code in the
/// subtype's place): 85 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetPose {
    /// Mean: x mm, y mm, heading arc-seconds.
    pub mean: [i32; 3],
    /// Covariance (mm², arc-seconds²), row-major 3 x 3.
    pub cov: [[i64; 3]; 3],
}

impl SetPose {
    /// Size of the config's payload (code and arguments).
    pub const SIZE: usize = 85;

    /// The config's payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        v.push(code::SET_POSE);
        put_mean_cov(&mut v, &self.mean, &self.cov);
        v
    }

    /// Decodes a config payload (with its code).
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("set pose", Self::SIZE, b)?;
        check_code("a set pose config starts with 's'", code::SET_POSE, b)?;
        let (mean, cov) = get_mean_cov(&b[1..]);
        Ok(SetPose { mean, cov })
    }
}

/// One particle, 16 bytes (1.6.5's `player_localize_particle_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Particle {
    /// Pose: x mm, y mm, heading arc-seconds.
    pub pose: [i32; 3],
    /// Weight x 10^6.
    pub alpha: u32,
}

/// One answer to `x H g`: 1.6.5's `player_localize_get_particles_t` (the code `g` in the
/// subtype's place: `u8 code, i32 mean[3], u64 variance, u32 num_particles`, then the
/// particles), followed by `u32 first` (the index of this answer's first particle in the
/// whole set) and `u32 total` (the set's size), so a client puts the answers of one `x H
/// g` together. Size `25 + 16 x count + 8`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Particles {
    /// The set's mean: x mm, y mm, heading arc-seconds.
    pub mean: [i32; 3],
    /// The variance of the mean position, mm².
    pub variance: u64,
    /// At most [`MAX_PARTICLES_PER_ANSWER`] particles.
    pub particles: Vec<Particle>,
    /// Index of `particles[0]` in the whole set.
    pub first: u32,
    /// How many particles the whole set has.
    pub total: u32,
}

impl Particles {
    /// Size of the fields before the particles.
    pub const HEADER: usize = 25;

    /// The answer's body; fails beyond [`MAX_PARTICLES_PER_ANSWER`].
    pub fn encode(&self) -> Result<Vec<u8>, DataError> {
        let n = self.particles.len();
        if n > MAX_PARTICLES_PER_ANSWER {
            return Err(DataError::BadNav("more than 100 particles in an answer"));
        }
        let mut v = Vec::with_capacity(Self::HEADER + 16 * n + 8);
        v.push(code::PARTICLES);
        for m in self.mean {
            v.extend_from_slice(&m.to_be_bytes());
        }
        v.extend_from_slice(&self.variance.to_be_bytes());
        v.extend_from_slice(&(n as u32).to_be_bytes());
        for p in &self.particles {
            for x in p.pose {
                v.extend_from_slice(&x.to_be_bytes());
            }
            v.extend_from_slice(&p.alpha.to_be_bytes());
        }
        v.extend_from_slice(&self.first.to_be_bytes());
        v.extend_from_slice(&self.total.to_be_bytes());
        Ok(v)
    }

    /// Decodes an answer's body.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        if b.len() < Self::HEADER {
            return Err(DataError::BadNav("particles answer shorter than 25 bytes"));
        }
        check_code("a particles answer starts with 'g'", code::PARTICLES, b)?;
        let n = be32(b, 21) as usize;
        if n > MAX_PARTICLES_PER_ANSWER {
            return Err(DataError::BadNav("more than 100 particles in an answer"));
        }
        check("particles answer", Self::HEADER + 16 * n + 8, b)?;
        let at = |k: usize| Self::HEADER + 16 * k;
        Ok(Particles {
            mean: [be32(b, 1) as i32, be32(b, 5) as i32, be32(b, 9) as i32],
            variance: be64(b, 13),
            particles: (0..n)
                .map(|k| Particle {
                    pose: [
                        be32(b, at(k)) as i32,
                        be32(b, at(k) + 4) as i32,
                        be32(b, at(k) + 8) as i32,
                    ],
                    alpha: be32(b, at(k) + 12),
                })
                .collect(),
            first: be32(b, at(n)),
            total: be32(b, at(n) + 4),
        })
    }
}

// ----- G: the planner (Player 1.6.5, plus a state) ---------------------------------------

/// The most waypoints the answer to `x G w` carries (1.6.5's
/// `PLAYER_PLANNER_MAX_WAYPOINTS`).
pub const MAX_WAYPOINTS: usize = 128;

/// The planner's command, 12 bytes (1.6.5's `player_planner_cmd_t`): a goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Goal {
    /// X, mm.
    pub x: i32,
    /// Y, mm.
    pub y: i32,
    /// Heading, degrees.
    pub a: i32,
}

impl Goal {
    /// Size on the wire.
    pub const SIZE: usize = 12;

    /// The 12 big-endian bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        for x in [self.x, self.y, self.a] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        v
    }

    /// Decodes exactly 12 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("planner command", Self::SIZE, b)?;
        Ok(Goal {
            x: be32(b, 0) as i32,
            y: be32(b, 4) as i32,
            a: be32(b, 8) as i32,
        })
    }
}

/// What the planner is doing (the byte after 1.6.5's 42).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlannerState {
    /// No goal.
    #[default]
    Idle,
    /// Planning a path.
    Planning,
    /// Driving along the path.
    Driving,
    /// The goal is reached.
    Reached,
    /// Blocked: the path is obstructed and no other is found yet.
    Blocked,
    /// No path to the goal (inside an obstacle, off the map, unreachable).
    NoPath,
    /// The emergency stop is latched.
    EStopped,
    /// A client's own command pre-empted navigation.
    Preempted,
    /// A state byte this crate does not know.
    Other(u8),
}

impl PlannerState {
    /// The byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            PlannerState::Idle => 0,
            PlannerState::Planning => 1,
            PlannerState::Driving => 2,
            PlannerState::Reached => 3,
            PlannerState::Blocked => 4,
            PlannerState::NoPath => 5,
            PlannerState::EStopped => 6,
            PlannerState::Preempted => 7,
            PlannerState::Other(b) => b,
        }
    }

    /// The state of a byte on the wire.
    pub fn from_code(b: u8) -> Self {
        match b {
            0 => PlannerState::Idle,
            1 => PlannerState::Planning,
            2 => PlannerState::Driving,
            3 => PlannerState::Reached,
            4 => PlannerState::Blocked,
            5 => PlannerState::NoPath,
            6 => PlannerState::EStopped,
            7 => PlannerState::Preempted,
            other => PlannerState::Other(other),
        }
    }

    /// Whether a goal in this state has ended: reached, or failed (no path, the e-stop
    /// latched, pre-empted by a client's own command, or cancelled back to idle).
    pub fn ends_goal(self) -> bool {
        matches!(
            self,
            PlannerState::Idle
                | PlannerState::Reached
                | PlannerState::NoPath
                | PlannerState::EStopped
                | PlannerState::Preempted
        )
    }

    /// A short name for printing.
    pub fn name(self) -> &'static str {
        match self {
            PlannerState::Idle => "idle",
            PlannerState::Planning => "planning",
            PlannerState::Driving => "driving",
            PlannerState::Reached => "reached",
            PlannerState::Blocked => "blocked",
            PlannerState::NoPath => "no path",
            PlannerState::EStopped => "e-stopped",
            PlannerState::Preempted => "pre-empted",
            PlannerState::Other(_) => "unknown",
        }
    }
}

/// `G` data, 43 bytes: 1.6.5's `player_planner_data_t` (42 bytes) and a state byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Planner {
    /// A valid path was found.
    pub valid: bool,
    /// The goal is reached.
    pub done: bool,
    /// The robot's pose: mm, mm, degrees.
    pub pose: [i32; 3],
    /// The goal: mm, mm, degrees.
    pub goal: [i32; 3],
    /// The current waypoint: mm, mm, degrees.
    pub waypoint: [i32; 3],
    /// Index of the current waypoint; negative with no plan or when done.
    pub curr_waypoint: i16,
    /// Number of waypoints in the plan.
    pub waypoint_count: u16,
    /// What the planner is doing.
    pub state: PlannerState,
}

impl Planner {
    /// Size on the wire.
    pub const SIZE: usize = 43;

    /// Whether this reading says the goal `goal` (mm, mm, degrees) has ended: a reading
    /// about that goal in a state that ends one ([`PlannerState::ends_goal`]), or one
    /// saying no path or e-stop whatever goal it names (a goal the planner refused may
    /// never be taken as its goal). A reading from before the goal was sent can say so
    /// too: see the client's `GoalWatch`.
    pub fn goal_ended(&self, goal: [i32; 3]) -> bool {
        (self.goal == goal && self.state.ends_goal())
            || matches!(self.state, PlannerState::NoPath | PlannerState::EStopped)
    }

    /// The 43 big-endian bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        v.push(u8::from(self.valid));
        v.push(u8::from(self.done));
        for x in self.pose.iter().chain(&self.goal).chain(&self.waypoint) {
            v.extend_from_slice(&x.to_be_bytes());
        }
        v.extend_from_slice(&self.curr_waypoint.to_be_bytes());
        v.extend_from_slice(&self.waypoint_count.to_be_bytes());
        v.push(self.state.code());
        v
    }

    /// Decodes exactly 43 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("planner", Self::SIZE, b)?;
        let three = |at: usize| {
            [
                be32(b, at) as i32,
                be32(b, at + 4) as i32,
                be32(b, at + 8) as i32,
            ]
        };
        Ok(Planner {
            valid: b[0] != 0,
            done: b[1] != 0,
            pose: three(2),
            goal: three(14),
            waypoint: three(26),
            curr_waypoint: be16(b, 38) as i16,
            waypoint_count: be16(b, 40),
            state: PlannerState::from_code(b[42]),
        })
    }
}

/// The answer to `x G w` (1.6.5's `player_planner_waypoints_req_t`, the code `w` in the
/// subtype's place): `u8 code, u16 count`, then `count x (i32 x mm, i32 y mm, i32 a deg)`,
/// at most [`MAX_WAYPOINTS`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Waypoints(pub Vec<[i32; 3]>);

impl Waypoints {
    /// The answer's body; fails beyond [`MAX_WAYPOINTS`].
    pub fn encode(&self) -> Result<Vec<u8>, DataError> {
        let n = self.0.len();
        if n > MAX_WAYPOINTS {
            return Err(DataError::BadNav("more than 128 waypoints"));
        }
        let mut v = Vec::with_capacity(3 + 12 * n);
        v.push(code::WAYPOINTS);
        v.extend_from_slice(&(n as u16).to_be_bytes());
        for w in &self.0 {
            for x in w {
                v.extend_from_slice(&x.to_be_bytes());
            }
        }
        Ok(v)
    }

    /// Decodes an answer's body.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        if b.len() < 3 {
            return Err(DataError::BadNav("waypoints answer shorter than 3 bytes"));
        }
        check_code("a waypoints answer starts with 'w'", code::WAYPOINTS, b)?;
        let n = usize::from(be16(b, 1));
        if n > MAX_WAYPOINTS {
            return Err(DataError::BadNav("more than 128 waypoints"));
        }
        check("waypoints answer", 3 + 12 * n, b)?;
        Ok(Waypoints(
            (0..n)
                .map(|k| {
                    let at = 3 + 12 * k;
                    [
                        be32(b, at) as i32,
                        be32(b, at + 4) as i32,
                        be32(b, at + 8) as i32,
                    ]
                })
                .collect(),
        ))
    }
}

// ----- client side: the configs as whole messages ----------------------------------------

/// `x M t`: one tile of the map.
pub fn tile_config(rect: TileRequest) -> Vec<u8> {
    let p = rect.encode();
    crate::message::config(crate::device::MAP, p[0], &p[1..])
}

/// `x H s`: set the localizer's pose estimate.
pub fn set_pose_config(pose: SetPose) -> Vec<u8> {
    let p = pose.encode();
    crate::message::config(crate::device::LOCALIZE, p[0], &p[1..])
}

/// `x H g`: ask for the particles.
pub fn particles_config() -> Vec<u8> {
    crate::message::config(crate::device::LOCALIZE, code::PARTICLES, &[])
}

/// `x H G`: start global localization.
pub fn global_config() -> Vec<u8> {
    crate::message::config(crate::device::LOCALIZE, code::GLOBAL, &[])
}

/// `x G w`: ask for the waypoints.
pub fn waypoints_config() -> Vec<u8> {
    crate::message::config(crate::device::PLANNER, code::WAYPOINTS, &[])
}

/// `x G e <on>`: enable or disable the planner's motion.
pub fn enable_config(on: bool) -> Vec<u8> {
    crate::message::config(crate::device::PLANNER, code::ENABLE, &[u8::from(on)])
}

/// `x G c`: cancel the goal.
pub fn cancel_config() -> Vec<u8> {
    crate::message::config(crate::device::PLANNER, code::CANCEL, &[])
}

#[cfg(test)]
mod tests;
