//! A laser scan as the filter and the simulated floor read it, and the geometry both need:
//! where the sensor sits in the grid, and the range a beam would read in a map (the first
//! cell that is not free). Shared by the sensor models (`amcl`) and the synthetic world
//! (`synthetic`), so neither depends on the other.

use crate::distance::DistanceField;
use crate::map::Map;
use crate::pose::Pose;

/// One laser scan, as the filter reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    /// Ranges, metres.
    pub ranges: Vec<f64>,
    /// Each beam's bearing in the sensor's frame, radians (as long as `ranges`).
    pub angles: Vec<f64>,
    /// The laser's maximum range, metres: readings at or above it are "no return".
    pub max_range: f64,
    /// Readings below this (metres) are ignored.
    pub min_range: f64,
    /// The sensor's pose on the robot.
    pub offset: Pose,
}

impl Scan {
    /// A scan whose beams are evenly spaced from `angle_min` by `increment` radians.
    pub fn evenly(ranges: Vec<f64>, angle_min: f64, increment: f64, max_range: f64) -> Scan {
        let angles = (0..ranges.len())
            .map(|i| angle_min + increment * i as f64)
            .collect();
        Scan {
            ranges,
            angles,
            max_range,
            min_range: 0.0,
            offset: Pose::default(),
        }
    }
}

/// The sensor's pose in grid coordinates (cells) and its heading in the grid frame.
#[inline]
pub fn sensor_in_grid(map: &Map, pose: &Pose, offset: &Pose) -> (f64, f64, f64) {
    let s = pose.compose(offset);
    let (gx, gy) = map.world_to_grid(s.x, s.y);
    (gx, gy, s.theta - map.origin_yaw())
}

/// The range (metres) a beam from grid point (`gx`, `gy`) along (`dx`, `dy`) would read:
/// the distance to the first cell that is not free or to the map's edge, at most
/// `max_range`.
pub fn cast(
    map: &Map,
    blocked: &DistanceField,
    gx: f64,
    gy: f64,
    dx: f64,
    dy: f64,
    max_range: f64,
) -> f64 {
    let res = map.resolution();
    let max_cells = max_range / res;
    let (w, h) = (map.width() as i64, map.height() as i64);
    let sq = blocked.squared();
    let mut t = 0.0f64;
    while t < max_cells {
        let (x, y) = (gx + dx * t, gy + dy * t);
        let (col, row) = (x.floor() as i64, y.floor() as i64);
        if col < 0 || row < 0 || col >= w || row >= h {
            return t * res;
        }
        let d2 = sq[(row * w + col) as usize];
        if d2 == 0 {
            return t * res;
        }
        // No blocked cell's square is nearer than (distance between centres - 1.5 cells).
        let d = f64::from(d2).sqrt();
        t += (d - 1.5).max(0.5);
    }
    max_range
}
