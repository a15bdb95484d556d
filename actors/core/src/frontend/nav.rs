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
//! decoding is `player_proto::nav`'s, so a change of a layout reaches every front end. The
//! conversions between the layouts and SI units (poses, particles, waypoints, goals) are
//! `player_proto::nav::si`'s, re-exported here under the names the front ends use.

use player_proto::nav::{MapInfo, Tile, TileRequest};
use std::time::{Duration, Instant};

/// The conversions between the layouts and metres and radians, pure, in `player-proto`
/// (where the pure crates, `player-foxglove` and `player-ros2-msg`, reach them too).
pub use player_proto::nav::si::{
    arcsec_to_rad, best_pose, goal, map_to_odom, normalize, particles, rad_to_arcsec, set_pose,
    waypoints, yaw, Pose2, MAX_PARTICLES,
};

/// The largest map a front end downloads, in cells (5000 x 5000): larger maps are
/// refused with a reason before anything is allocated.
pub const MAX_MAP_CELLS: u64 = player_proto::nav::MAX_MAP_CELLS;

/// How long a front end waits for an answer before it asks again.
pub const ANSWER_WAIT: Duration = Duration::from_secs(2);

/// The longest a map download waits before asking for a tile again: each unanswered ask
/// doubles the wait from [`ANSWER_WAIT`] up to this (a map device that never answers, or
/// refuses, is asked about once a minute, not every 2 s for ever).
pub const ANSWER_WAIT_MAX: Duration = Duration::from_secs(64);

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
