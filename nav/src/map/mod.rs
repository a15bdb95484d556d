//! The occupancy grid: Player's cell semantics (-1 free, 0 unknown, +1 occupied), a size in
//! cells, a resolution in metres per cell and the pose of the lower-left cell's outer corner
//! in the world ("origin", as ROS's map_server and Nav2 give it). Row 0 is the bottom row;
//! cells are stored row-major from the lower-left, as the map device `M` sends them.
//!
//! The loaders are in [`load`] (map_server's YAML and Player's `mapfile` rule), the image
//! decoders in [`image`], the YAML reader in [`yaml`], the writer in [`save`].

pub mod image;
pub mod load;
pub mod save;
pub mod yaml;

use std::path::PathBuf;

use crate::pose::Pose;

/// A free cell.
pub const FREE: i8 = -1;
/// A cell of unknown state.
pub const UNKNOWN: i8 = 0;
/// An occupied cell.
pub const OCCUPIED: i8 = 1;

/// The most cells a map may have (2^26, a 8192 x 8192 map): every size read from a file is
/// checked against it before anything is allocated.
pub const MAX_CELLS: u64 = 1 << 26;

/// Why a map could not be made or read. Every variant names the file or key concerned.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The YAML text is not of the flat form a map description has.
    #[error("{path}: line {line}: {reason}")]
    Yaml {
        /// The YAML file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A key is missing from the YAML file.
    #[error("{path}: missing key '{key}'")]
    MissingKey {
        /// The YAML file.
        path: PathBuf,
        /// The key.
        key: &'static str,
    },
    /// A key's value is not acceptable.
    #[error("{path}: key '{key}': {reason}")]
    BadValue {
        /// The YAML (or configuration) file.
        path: PathBuf,
        /// The key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An image file is malformed or unsupported.
    #[error("{path}: {reason}")]
    Image {
        /// The image file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A map is larger than [`MAX_CELLS`] or empty.
    #[error("{what}: {width} x {height} cells: {reason}")]
    Size {
        /// The file or thing whose size it is.
        what: String,
        /// Width in cells.
        width: u64,
        /// Height in cells.
        height: u64,
        /// Why it is refused.
        reason: &'static str,
    },
}

/// Checks a width and height against [`MAX_CELLS`] (and that neither is zero).
pub fn check_size(what: &str, width: u64, height: u64) -> Result<(), MapError> {
    let reason = if width == 0 || height == 0 {
        "a map needs at least one cell"
    } else if width.saturating_mul(height) > MAX_CELLS {
        "more than 2^26 cells"
    } else {
        return Ok(());
    };
    Err(MapError::Size {
        what: what.to_string(),
        width,
        height,
        reason,
    })
}

/// An occupancy grid map.
#[derive(Debug, Clone, PartialEq)]
pub struct Map {
    width: usize,
    height: usize,
    resolution: f64,
    origin: Pose,
    cos_o: f64,
    sin_o: f64,
    cells: Vec<i8>,
}

impl Map {
    /// A map of `width` x `height` cells, all `fill`. Sizes are checked against
    /// [`MAX_CELLS`]; the resolution must be positive and finite.
    pub fn new(
        width: usize,
        height: usize,
        resolution: f64,
        origin: Pose,
        fill: i8,
    ) -> Result<Map, MapError> {
        Map::from_cells(width, height, resolution, origin, Vec::new(), Some(fill))
    }

    /// A map from its cells, row-major from the lower-left (`cells.len()` must be
    /// `width * height`; each cell -1, 0 or +1).
    pub fn with_cells(
        width: usize,
        height: usize,
        resolution: f64,
        origin: Pose,
        cells: Vec<i8>,
    ) -> Result<Map, MapError> {
        Map::from_cells(width, height, resolution, origin, cells, None)
    }

    fn from_cells(
        width: usize,
        height: usize,
        resolution: f64,
        origin: Pose,
        mut cells: Vec<i8>,
        fill: Option<i8>,
    ) -> Result<Map, MapError> {
        check_size("map", width as u64, height as u64)?;
        if !(resolution.is_finite() && resolution > 0.0) {
            return Err(MapError::BadValue {
                path: PathBuf::new(),
                key: "resolution".into(),
                reason: format!("{resolution} is not a positive number of metres"),
            });
        }
        if !(origin.x.is_finite() && origin.y.is_finite() && origin.theta.is_finite()) {
            return Err(MapError::BadValue {
                path: PathBuf::new(),
                key: "origin".into(),
                reason: "not finite".into(),
            });
        }
        match fill {
            Some(f) => cells = vec![f.signum(); width * height],
            None if cells.len() != width * height => {
                return Err(MapError::Size {
                    what: format!("{} cells given", cells.len()),
                    width: width as u64,
                    height: height as u64,
                    reason: "the cell count does not match the size",
                })
            }
            None => cells.iter_mut().for_each(|c| *c = c.signum()),
        }
        let (sin_o, cos_o) = origin.theta.sin_cos();
        Ok(Map {
            width,
            height,
            resolution,
            origin,
            cos_o,
            sin_o,
            cells,
        })
    }

    /// Width in cells.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Height in cells.
    pub fn height(&self) -> usize {
        self.height
    }

    /// Metres per cell.
    pub fn resolution(&self) -> f64 {
        self.resolution
    }

    /// The world pose of the lower-left cell's outer corner (the map frame's origin).
    pub fn origin(&self) -> Pose {
        self.origin
    }

    /// All cells, row-major from the lower-left.
    pub fn cells(&self) -> &[i8] {
        &self.cells
    }

    /// The index of cell (`col`, `row`) in [`Map::cells`].
    pub fn index(&self, col: usize, row: usize) -> usize {
        row * self.width + col
    }

    /// The cell at (`col`, `row`), or `None` off the map.
    pub fn get(&self, col: i64, row: i64) -> Option<i8> {
        if col < 0 || row < 0 || col as usize >= self.width || row as usize >= self.height {
            return None;
        }
        Some(self.cells[row as usize * self.width + col as usize])
    }

    /// Sets cell (`col`, `row`) (which must be on the map) to -1, 0 or +1 (the sign of `v`).
    pub fn set(&mut self, col: usize, row: usize, v: i8) {
        let i = self.index(col, row);
        self.cells[i] = v.signum();
    }

    /// The grid coordinates of a world point, in cells (fractional: cell (c, r) spans
    /// [c, c+1) x [r, r+1)).
    pub fn world_to_grid(&self, x: f64, y: f64) -> (f64, f64) {
        let (dx, dy) = (x - self.origin.x, y - self.origin.y);
        let gx = self.cos_o * dx + self.sin_o * dy;
        let gy = -self.sin_o * dx + self.cos_o * dy;
        (gx / self.resolution, gy / self.resolution)
    }

    /// The cell containing a world point (possibly off the map: check with [`Map::get`]).
    pub fn world_to_cell(&self, x: f64, y: f64) -> (i64, i64) {
        let (gx, gy) = self.world_to_grid(x, y);
        (gx.floor() as i64, gy.floor() as i64)
    }

    /// The world position of the centre of cell (`col`, `row`).
    pub fn cell_center(&self, col: i64, row: i64) -> (f64, f64) {
        self.grid_to_world(col as f64 + 0.5, row as f64 + 0.5)
    }

    /// The world position of grid point (`gx`, `gy`), in cells from the origin corner.
    pub fn grid_to_world(&self, gx: f64, gy: f64) -> (f64, f64) {
        let (gx, gy) = (gx * self.resolution, gy * self.resolution);
        (
            self.origin.x + self.cos_o * gx - self.sin_o * gy,
            self.origin.y + self.sin_o * gx + self.cos_o * gy,
        )
    }

    /// Headings in the map's grid frame differ from world headings by the origin's yaw.
    pub fn origin_yaw(&self) -> f64 {
        self.origin.theta
    }

    /// Indices of every free cell, in index order.
    pub fn free_cells(&self) -> Vec<u32> {
        self.cells
            .iter()
            .enumerate()
            .filter(|(_, &c)| c == FREE)
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Counts of free, unknown and occupied cells.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut n = (0, 0, 0);
        for &c in &self.cells {
            match c {
                FREE => n.0 += 1,
                OCCUPIED => n.2 += 1,
                _ => n.1 += 1,
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_bounded_before_allocating() {
        assert!(Map::new(8192, 8192, 0.05, Pose::default(), FREE).is_ok());
        let e = Map::new(8193, 8192, 0.05, Pose::default(), FREE).unwrap_err();
        assert!(e.to_string().contains("2^26"), "{e}");
        assert!(Map::new(0, 10, 0.05, Pose::default(), FREE).is_err());
        assert!(Map::new(10, 10, 0.0, Pose::default(), FREE).is_err());
        assert!(Map::with_cells(2, 2, 1.0, Pose::default(), vec![0; 3]).is_err());
    }

    #[test]
    fn cell_coordinates_with_origin_and_yaw() {
        let m = Map::new(10, 5, 0.5, Pose::new(-1.0, 2.0, 0.0), UNKNOWN).unwrap();
        assert_eq!(m.world_to_cell(-1.0, 2.0), (0, 0));
        assert_eq!(m.world_to_cell(-0.01, 2.49), (1, 0));
        assert_eq!(m.world_to_cell(-1.01, 2.0), (-1, 0));
        assert_eq!(m.cell_center(0, 0), (-0.75, 2.25));
        assert_eq!(m.get(9, 4), Some(UNKNOWN));
        assert_eq!(m.get(10, 4), None);
        // Rotated by 90 degrees: grid +x is world +y.
        let r = Map::new(
            4,
            4,
            1.0,
            Pose::new(0.0, 0.0, std::f64::consts::FRAC_PI_2),
            FREE,
        )
        .unwrap();
        assert_eq!(r.world_to_cell(-0.5, 2.5), (2, 0));
        let (x, y) = r.cell_center(2, 0);
        assert!((x + 0.5).abs() < 1e-12 && (y - 2.5).abs() < 1e-12);
    }
}
