//! What a driver knows of the world around its robot, for others to use: the outlines a
//! viewer draws ([`MapOutline`], asked with [`MapRequest`]), the solids a map driver
//! rasterises ([`WorldSolids`], asked with [`WorldRequest`]) and the occupancy grid a map
//! driver serves ([`GridMap`], asked with [`GridRequest`]: how a localizer gets the map's
//! cells inside the server). A simulator has the first two; a driver of real hardware
//! usually has none.

use actix::prelude::*;
use std::sync::Arc;

/// What a driver knows of the space around its robot, for viewers: the outlines of a
/// simulated world, say. Read-only; a driver of real hardware usually has none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MapOutline {
    /// Line segments `[x1, y1, x2, y2]` in metres, in the map frame (x east, y north).
    pub segments: Vec<[f64; 4]>,
    /// Where the odometry frame of the robot's position device lies in the map frame:
    /// `[x m, y m, heading rad]` (its origin and x axis). Changes when odometry is reset
    /// or drifts, so ask again now and then.
    pub odometry_origin: [f64; 3],
}

/// Most segments a [`MapOutline`] may hold; a driver cuts a larger map here.
pub const MAX_MAP_SEGMENTS: usize = 20_000;

/// Registry → driver: what map, if any, does the driver have of `device`'s surroundings.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "Option<MapOutline>")]
pub struct MapRequest {
    /// One of the driver's device codes.
    pub device: u8,
    /// Whether to include the segments (false: only the odometry origin, for the
    /// once-a-second transform).
    pub walls: bool,
}

/// One solid of a world, in metres in the map frame (x east, y north): what occupies the
/// space, filled (a rectangle or a disc is solid inside, a segment is a wall of no
/// thickness).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Solid {
    /// A wall of no thickness from `a` to `b`.
    Segment {
        /// One end `[x, y]`.
        a: [f64; 2],
        /// The other end.
        b: [f64; 2],
    },
    /// An axis-aligned filled rectangle.
    Rect {
        /// Lower-left corner `[x, y]`.
        min: [f64; 2],
        /// Upper-right corner.
        max: [f64; 2],
    },
    /// A filled disc.
    Circle {
        /// Centre `[x, y]`.
        center: [f64; 2],
        /// Radius.
        radius: f64,
    },
}

/// The most solids a [`WorldSolids`] holds (a world file's bitmap merged into boxes stays
/// far below it); a driver stops there.
pub const MAX_WORLD_SOLIDS: usize = 1_000_000;

/// A world's static solids and bounds, in metres in the map frame: what a map driver
/// rasterises into an occupancy grid (`player_sim::raster` does it). Pucks and robots
/// move, so they are not in it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorldSolids {
    /// The world's lower-left corner `[x, y]`.
    pub min: [f64; 2],
    /// Its upper-right corner.
    pub max: [f64; 2],
    /// Every static solid (the world's edges among them), at most [`MAX_WORLD_SOLIDS`].
    pub solids: Vec<Solid>,
}

/// Driver → registry → driver: the world's solids, from the first driver of the robot
/// that has a world (its handle built [`crate::driver::DriverHandle::with_world`]); `None`
/// when no driver has one. A driver asks through its
/// [`DeviceSource::world`](crate::source::DeviceSource::world).
#[derive(Message, Debug, Clone, Copy, Default)]
#[rtype(result = "Option<Arc<WorldSolids>>")]
pub struct WorldRequest;

/// An occupancy grid as a map driver holds it, for another driver of the robot to use (a
/// localizer): the map device's geometry and every cell, shared, never copied per reader.
/// Cells are Player's: -1 free, 0 unknown, +1 occupied, row-major from the lower-left
/// cell.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GridMap {
    /// The map's id, as its readings carry it (it changes when the map does).
    pub map_id: u32,
    /// Width in cells.
    pub width: u32,
    /// Height in cells.
    pub height: u32,
    /// Metres per cell.
    pub resolution: f64,
    /// The lower-left cell's outer corner and the map's heading: `[x m, y m, heading
    /// rad]`.
    pub origin: [f64; 3],
    /// `width * height` cells.
    pub cells: Arc<[i8]>,
}

impl GridMap {
    /// The grid of a map device's `M` reading `info` and its `cells` (shared): the
    /// reading's millimetres, micrometres and arc-seconds in metres and radians.
    pub fn of(info: &player_proto::nav::MapInfo, cells: Arc<[i8]>) -> GridMap {
        GridMap {
            map_id: info.map_id,
            width: info.width,
            height: info.height,
            resolution: info.resolution_m(),
            origin: [
                f64::from(info.origin_x) / 1000.0,
                f64::from(info.origin_y) / 1000.0,
                f64::from(info.origin_heading) / player_proto::odometry::ARCSEC_PER_RAD,
            ],
            cells,
        }
    }
}

/// Driver → registry → the driver serving `device`: its occupancy grid, if it serves one
/// and has it (the map device's set up); `None` otherwise. A driver asks through its
/// [`DeviceSource::grid`](crate::source::DeviceSource::grid); the map driver's handle is
/// built [`crate::driver::DriverHandle::with_grid`].
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "Option<Arc<GridMap>>")]
pub struct GridRequest {
    /// The map device: the code the robot serves it as when asked of the registry, the
    /// driver's own code when the registry passes the request on.
    pub device: u8,
}
