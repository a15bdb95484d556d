//! What every front end does with the navigation devices (`M`, `H`, `G`,
//! `player_proto::nav`) before it speaks its own format: the map downloaded tile by tile
//! through configs and put together ([`MapDownload`]), the localizer's best hypothesis in
//! metres and radians ([`best_pose`]), where the odometry frame lies in the map
//! ([`map_to_odom`]), the particles of one `x H g` answer put in order ([`particles`]),
//! when to ask again for particles or the plan ([`Asking`]), and the other way the pose
//! estimate and goal a client sends ([`set_pose`], [`goal`]).
//!
//! No actix here: a front end sends the configs (`crate::registry::RouteConfig` with its
//! own address for the answer) and hands the answers' bodies to these functions; the
//! decoding is `player_proto::nav`'s, so a change of a layout reaches every front end.

use player_proto::nav::{
    Goal, Hypothesis, Localize, MapInfo, Particles, SetPose, Tile, TileRequest, Waypoints,
};
use std::time::{Duration, Instant};

/// The largest map a front end downloads, in cells (5000 x 5000): larger maps are
/// refused with a reason before anything is allocated.
pub const MAX_MAP_CELLS: u64 = player_proto::nav::MAX_MAP_CELLS;

/// The most particles put together from one answer (the answer's own bound keeps it far
/// below: [`player_kit::answer::MAX_ANSWER_BYTES`] holds about 8,000).
pub const MAX_PARTICLES: usize = 10_000;

/// How long a front end waits for an answer before it asks again.
pub const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// The longest a map download waits before asking for a tile again: each unanswered ask
/// doubles the wait from [`ANSWER_WAIT`] up to this (a map device that never answers, or
/// refuses, is asked about once a minute, not every 2 s for ever).
pub const ANSWER_WAIT_MAX: Duration = Duration::from_secs(64);

/// Arc-seconds per radian.
const ARCSEC_PER_RAD: f64 = 180.0 * 3600.0 / std::f64::consts::PI;

/// Arc-seconds to radians.
pub fn arcsec_to_rad(a: f64) -> f64 {
    a / ARCSEC_PER_RAD
}

/// Radians to arc-seconds, rounded and saturated to an `i32`.
pub fn rad_to_arcsec(r: f64) -> i32 {
    saturate(r * ARCSEC_PER_RAD)
}

fn saturate(v: f64) -> i32 {
    v.round().clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
}

fn saturate64(v: f64) -> i64 {
    v.round().clamp(i64::MIN as f64, i64::MAX as f64) as i64
}

/// A whole map: its `M` reading and its cells row by row from the lower-left, Player's
/// values (-1 free, 0 unknown, +1 occupied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridMap {
    /// The `M` reading the cells are of.
    pub info: MapInfo,
    /// `width * height` cells.
    pub cells: Vec<i8>,
}

impl GridMap {
    /// The cells in ROS's `nav_msgs/OccupancyGrid` values: 0 free, 100 occupied, -1 unknown.
    pub fn ros_cells(&self) -> Vec<i8> {
        self.cells
            .iter()
            .map(|&c| match c {
                c if c < 0 => 0,
                0 => -1,
                _ => 100,
            })
            .collect()
    }

    /// Metres per cell.
    pub fn resolution_m(&self) -> f64 {
        self.info.resolution_m()
    }

    /// The lower-left cell's corner, m, and the map's heading, rad.
    pub fn origin(&self) -> [f64; 3] {
        [
            f64::from(self.info.origin_x) / 1000.0,
            f64::from(self.info.origin_y) / 1000.0,
            arcsec_to_rad(f64::from(self.info.origin_heading)),
        ]
    }
}

/// Why a map is not downloaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapRefused {
    /// More cells than [`MAX_MAP_CELLS`].
    #[error("a map of {0} cells is over the front ends' bound of {MAX_MAP_CELLS}")]
    TooBig(u64),
}

/// The download of the newest map: which `M` reading it is of, the tiles asked for one at
/// a time (the next asked when the last is answered, or again after [`ANSWER_WAIT`],
/// doubled for each ask left unanswered up to [`ANSWER_WAIT_MAX`]), the cells so far, and
/// the last whole map.
#[derive(Debug, Default)]
pub struct MapDownload {
    info: Option<MapInfo>,
    tiles: Vec<TileRequest>,
    next: usize,
    asked: Option<Instant>,
    /// Asks in a row left unanswered.
    unanswered: u32,
    cells: Vec<i8>,
    done: bool,
}

impl MapDownload {
    /// Nothing downloaded.
    pub fn new() -> Self {
        Self::default()
    }

    /// An `M` reading: a new download starts when the map's id or size changed (true);
    /// a map over [`MAX_MAP_CELLS`] is refused.
    pub fn reading(&mut self, info: MapInfo) -> Result<bool, MapRefused> {
        if self.info == Some(info) {
            return Ok(false);
        }
        let n = u64::from(info.width) * u64::from(info.height);
        if n > MAX_MAP_CELLS {
            self.info = Some(info);
            self.tiles.clear();
            self.done = false;
            return Err(MapRefused::TooBig(n));
        }
        *self = MapDownload {
            info: Some(info),
            tiles: info.tiles(),
            next: 0,
            asked: None,
            unanswered: 0,
            cells: vec![0; n as usize],
            done: false,
        };
        Ok(true)
    }

    /// The tile to ask for now, if any: the next one when nothing is asked, or the one
    /// asked again when its answer is overdue ([`MapDownload::wait`]). Marks it asked at
    /// `now`.
    pub fn ask(&mut self, now: Instant) -> Option<TileRequest> {
        let t = *self.tiles.get(self.next)?;
        if let Some(at) = self.asked {
            if now.duration_since(at) < self.wait() {
                return None;
            }
            self.unanswered = self.unanswered.saturating_add(1);
        }
        self.asked = Some(now);
        Some(t)
    }

    /// How long the tile asked is waited for: [`ANSWER_WAIT`], doubled for each ask of it
    /// left unanswered, at most [`ANSWER_WAIT_MAX`].
    pub fn wait(&self) -> Duration {
        ANSWER_WAIT
            .saturating_mul(1 << self.unanswered.min(16))
            .min(ANSWER_WAIT_MAX)
    }

    /// An answer's body: the tile placed if it is the one asked for of the map being
    /// downloaded (anything else is ignored: an old map's, a repeat). Returns the whole map
    /// when this was its last tile.
    pub fn answer(&mut self, body: &[u8]) -> Option<GridMap> {
        let tile = Tile::decode(body).ok()?;
        let info = self.info?;
        if tile.map_id != info.map_id || self.tiles.get(self.next) != Some(&tile.rect) {
            return None;
        }
        let w = info.width as usize;
        let r = tile.rect;
        for (k, row) in tile.cells.chunks(r.width as usize).enumerate() {
            let at = (r.row as usize + k) * w + r.col as usize;
            self.cells[at..at + row.len()].copy_from_slice(row);
        }
        self.next += 1;
        self.asked = None;
        self.unanswered = 0;
        if self.next < self.tiles.len() {
            return None;
        }
        self.done = true;
        Some(GridMap {
            info,
            cells: self.cells.clone(),
        })
    }

    /// Whether the current map is whole.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Whether tiles of the current map are still to come (asked or not yet).
    pub fn downloading(&self) -> bool {
        self.next < self.tiles.len()
    }
}

/// A pose in the map: x, y (m), heading (rad).
pub type Pose2 = [f64; 3];

/// The localizer's heaviest hypothesis: its mean (m, m, rad), its covariance (row-major
/// 3 x 3 of x, y, heading in m and rad) and its weight (0 to 1). `None` without one.
pub fn best_pose(l: &Localize) -> Option<(Pose2, [[f64; 3]; 3], f64)> {
    let h: &Hypothesis = l.hypotheses.first()?;
    let mean = [
        f64::from(h.mean[0]) / 1000.0,
        f64::from(h.mean[1]) / 1000.0,
        arcsec_to_rad(f64::from(h.mean[2])),
    ];
    // Per axis: mm -> m, arc-seconds -> rad.
    let unit = [1e-3, 1e-3, arcsec_to_rad(1.0)];
    let mut cov = [[0.0; 3]; 3];
    for (i, row) in cov.iter_mut().enumerate() {
        for (j, c) in row.iter_mut().enumerate() {
            *c = h.cov[i][j] as f64 * unit[i] * unit[j];
        }
    }
    Some((mean, cov, f64::from(h.alpha) / 1e6))
}

/// Where the odometry frame lies in the map, given the robot's pose in the map and in its
/// odometry frame at the same time: `map_pose * odom_pose^-1`.
pub fn map_to_odom(map_pose: Pose2, odom_pose: Pose2) -> Pose2 {
    let th = normalize(map_pose[2] - odom_pose[2]);
    let (s, c) = th.sin_cos();
    [
        map_pose[0] - (c * odom_pose[0] - s * odom_pose[1]),
        map_pose[1] - (s * odom_pose[0] + c * odom_pose[1]),
        th,
    ]
}

/// An angle in (-pi, pi].
pub fn normalize(a: f64) -> f64 {
    let t = a.rem_euclid(std::f64::consts::TAU);
    if t > std::f64::consts::PI {
        t - std::f64::consts::TAU
    } else {
        t
    }
}

/// The particles of one `x H g` answer (its bodies, in any order) as poses in metres and
/// radians with their weights, in index order; bodies that do not decode are skipped and
/// at most [`MAX_PARTICLES`] are taken.
pub fn particles<'a>(bodies: impl IntoIterator<Item = &'a [u8]>) -> Vec<(Pose2, f64)> {
    let mut parts: Vec<Particles> = bodies
        .into_iter()
        .filter_map(|b| Particles::decode(b).ok())
        .collect();
    parts.sort_by_key(|p| p.first);
    parts
        .iter()
        .flat_map(|p| &p.particles)
        .take(MAX_PARTICLES)
        .map(|p| {
            let pose = [
                f64::from(p.pose[0]) / 1000.0,
                f64::from(p.pose[1]) / 1000.0,
                arcsec_to_rad(f64::from(p.pose[2])),
            ];
            (pose, f64::from(p.alpha) / 1e6)
        })
        .collect()
}

/// The waypoints of an `x G w` answer's body: x, y (m) and heading (rad).
pub fn waypoints(body: &[u8]) -> Option<Vec<Pose2>> {
    let w = Waypoints::decode(body).ok()?;
    Some(
        w.0.iter()
            .map(|p| {
                [
                    f64::from(p[0]) / 1000.0,
                    f64::from(p[1]) / 1000.0,
                    f64::from(p[2]).to_radians(),
                ]
            })
            .collect(),
    )
}

/// A pose estimate from a client (m, rad; covariance of x, y, heading in m and rad) as
/// the `x H s` config's payload. Non-finite values are refused.
pub fn set_pose(mean: Pose2, cov: [[f64; 3]; 3]) -> Option<Vec<u8>> {
    if mean
        .iter()
        .chain(cov.iter().flatten())
        .any(|v| !v.is_finite())
    {
        return None;
    }
    let unit = [1e3, 1e3, ARCSEC_PER_RAD];
    let mut c = [[0i64; 3]; 3];
    for (i, row) in c.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = saturate64(cov[i][j] * unit[i] * unit[j]);
        }
    }
    let p = SetPose {
        mean: [
            saturate(mean[0] * 1e3),
            saturate(mean[1] * 1e3),
            rad_to_arcsec(normalize(mean[2])),
        ],
        cov: c,
    };
    Some(p.encode())
}

/// A goal from a client (m, m, rad) as the planner's 12-byte command. Non-finite values
/// are refused.
pub fn goal(pose: Pose2) -> Option<Vec<u8>> {
    if pose.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let g = Goal {
        x: saturate(pose[0] * 1e3),
        y: saturate(pose[1] * 1e3),
        a: saturate(normalize(pose[2]).to_degrees()),
    };
    Some(g.encode())
}

/// The yaw of a quaternion (x, y, z, w).
pub fn yaw(q: [f64; 4]) -> f64 {
    let [x, y, z, w] = q;
    (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))
}

/// When to ask for something again (particles, waypoints): at most once per `period`,
/// never while an earlier question waits (up to [`ANSWER_WAIT`]).
#[derive(Debug, Clone, Copy)]
pub struct Asking {
    period: Duration,
    asked: Option<Instant>,
    waiting: bool,
}

impl Asking {
    /// At most once per `period`.
    pub fn new(period: Duration) -> Self {
        Asking {
            period,
            asked: None,
            waiting: false,
        }
    }

    /// Whether to ask now (and if so, it counts as asked at `now`).
    pub fn due(&mut self, now: Instant) -> bool {
        let due = match self.asked {
            None => true,
            Some(at) => {
                let since = now.duration_since(at);
                since >= self.period && (!self.waiting || since >= ANSWER_WAIT)
            }
        };
        if due {
            self.asked = Some(now);
            self.waiting = true;
        }
        due
    }

    /// The answer came.
    pub fn answered(&mut self) {
        self.waiting = false;
    }

    /// Ask at the next chance, whatever the period (something changed).
    pub fn soon(&mut self) {
        if !self.waiting {
            self.asked = None;
        }
    }
}

#[cfg(test)]
mod tests;
