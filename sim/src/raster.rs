//! A world's solids as an occupancy grid: what a map driver serves as the map of a
//! simulated world (`mapfile` with `map = "world"`).
//!
//! The grid covers a rectangle (the world's bounds) with square cells of a given side;
//! cell (col, row) spans `[min.x + col s, min.x + (col + 1) s) x [min.y + row s, min.y +
//! (row + 1) s)`, row 0 at the bottom, stored row-major from the lower-left (the map
//! device's order). A cell is occupied (+1) when a solid meets it, free (-1) otherwise:
//!
//! - a segment (a wall of no thickness) occupies every cell its line passes through, walked
//!   cell by cell (Amanatides and Woo's traversal): a point on a cell's lower or left edge
//!   belongs to that cell, a point on the grid's far edge to the last cell;
//! - a rectangle occupies every cell its area overlaps (a cell only touching its edge from
//!   outside is not occupied; a rectangle of no width still occupies its cells);
//! - a disc occupies every cell whose square comes within its radius of the centre.
//!
//! So a free cell is clear of every solid. Solids outside the rectangle are cut to it.

use crate::geom::{Shape, Vec2};

/// Free.
pub const FREE: i8 = -1;
/// Occupied.
pub const OCCUPIED: i8 = 1;

/// The most cells a grid may have (2^26, as the navigation maps).
pub const MAX_CELLS: u64 = 1 << 26;

/// An occupancy grid of a world's solids.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Side of a cell, mm.
    pub cell_mm: f64,
    /// The lower-left corner of cell (0, 0), mm.
    pub origin: Vec2,
    /// `width * height` cells, row-major from the lower-left: -1 free, +1 occupied.
    pub cells: Vec<i8>,
}

/// Why a grid could not be made.
#[derive(Debug, Clone, PartialEq)]
pub enum RasterError {
    /// The cell side is not a positive finite number.
    BadCell(f64),
    /// The rectangle is empty or not finite.
    BadBounds,
    /// More cells than [`MAX_CELLS`].
    TooBig {
        /// Columns it would have.
        width: u64,
        /// Rows it would have.
        height: u64,
    },
}

impl std::fmt::Display for RasterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RasterError::BadCell(s) => write!(f, "cell side {s} mm is not a positive number"),
            RasterError::BadBounds => f.write_str("the world's bounds are empty"),
            RasterError::TooBig { width, height } => write!(
                f,
                "{width} x {height} cells: more than 2^26 (a coarser resolution fits)"
            ),
        }
    }
}

impl std::error::Error for RasterError {}

impl Grid {
    /// The cell at (`col`, `row`), if on the grid.
    pub fn get(&self, col: usize, row: usize) -> Option<i8> {
        (col < self.width && row < self.height).then(|| self.cells[row * self.width + col])
    }

    fn mark(&mut self, col: usize, row: usize) {
        self.cells[row * self.width + col] = OCCUPIED;
    }

    /// The column (or row) of coordinate `v` along an axis starting at `lo` with `n`
    /// cells: floor, clamped to the grid.
    fn index(&self, v: f64, lo: f64, n: usize) -> usize {
        let k = ((v - lo) / self.cell_mm).floor();
        if k <= 0.0 {
            0
        } else {
            (k as usize).min(n - 1)
        }
    }

    /// Cells `[first, last]` overlapped by `[a, b]` along an axis (a degenerate span: the
    /// cell it lies in), or `None` when it misses the grid.
    fn span(&self, a: f64, b: f64, lo: f64, n: usize) -> Option<(usize, usize)> {
        let hi = lo + n as f64 * self.cell_mm;
        if b < lo || a > hi {
            return None;
        }
        let first = self.index(a, lo, n);
        // The last cell whose interior the span reaches: a span ending on a cell edge does
        // not reach into the next.
        let k = ((b - lo) / self.cell_mm).ceil() - 1.0;
        let last = if k < first as f64 {
            first
        } else {
            (k as usize).min(n - 1)
        };
        Some((first, last))
    }

    fn rect(&mut self, lo: Vec2, hi: Vec2) {
        let (Some((c0, c1)), Some((r0, r1))) = (
            self.span(lo.x, hi.x, self.origin.x, self.width),
            self.span(lo.y, hi.y, self.origin.y, self.height),
        ) else {
            return;
        };
        for row in r0..=r1 {
            for col in c0..=c1 {
                self.mark(col, row);
            }
        }
    }

    fn circle(&mut self, c: Vec2, r: f64) {
        let (Some((c0, c1)), Some((r0, r1))) = (
            self.span(c.x - r, c.x + r, self.origin.x, self.width),
            self.span(c.y - r, c.y + r, self.origin.y, self.height),
        ) else {
            return;
        };
        let s = self.cell_mm;
        for row in r0..=r1 {
            let y0 = self.origin.y + row as f64 * s;
            let dy = (y0 - c.y).max(0.0).max(c.y - (y0 + s));
            for col in c0..=c1 {
                let x0 = self.origin.x + col as f64 * s;
                let dx = (x0 - c.x).max(0.0).max(c.x - (x0 + s));
                if dx * dx + dy * dy <= r * r {
                    self.mark(col, row);
                }
            }
        }
    }

    /// Marks the cells segment `a`-`b` passes through, after cutting it to the grid.
    fn segment(&mut self, a: Vec2, b: Vec2) {
        let s = self.cell_mm;
        let lo = self.origin;
        let hi = lo + Vec2::new(self.width as f64 * s, self.height as f64 * s);
        let Some((a, b)) = clip(a, b, lo, hi) else {
            return;
        };
        let (mut col, mut row) = (
            self.index(a.x, lo.x, self.width),
            self.index(a.y, lo.y, self.height),
        );
        let (end_col, end_row) = (
            self.index(b.x, lo.x, self.width),
            self.index(b.y, lo.y, self.height),
        );
        self.mark(col, row);
        let d = b - a;
        // Along each axis: the step, the parameter t at the next cell edge, the t per cell.
        let axis = |p: f64, d: f64, k: usize, o: f64| -> (i64, f64, f64) {
            if d > 0.0 {
                let edge = o + (k + 1) as f64 * s;
                (1, (edge - p) / d, s / d)
            } else if d < 0.0 {
                let edge = o + k as f64 * s;
                (-1, (edge - p) / d, -s / d)
            } else {
                (0, f64::INFINITY, f64::INFINITY)
            }
        };
        let (step_x, mut t_x, dt_x) = axis(a.x, d.x, col, lo.x);
        let (step_y, mut t_y, dt_y) = axis(a.y, d.y, row, lo.y);
        // At most one step per cell between the ends along each axis.
        let steps = col.abs_diff(end_col) + row.abs_diff(end_row);
        for _ in 0..steps {
            if (col, row) == (end_col, end_row) {
                break;
            }
            if t_x <= t_y && col != end_col {
                col = (col as i64 + step_x) as usize;
                t_x += dt_x;
            } else if row != end_row {
                row = (row as i64 + step_y) as usize;
                t_y += dt_y;
            } else {
                col = (col as i64 + step_x) as usize;
                t_x += dt_x;
            }
            self.mark(col, row);
        }
    }
}

/// Segment `a`-`b` cut to the closed rectangle `[lo, hi]` (Liang and Barsky), or `None`
/// when it misses it.
fn clip(a: Vec2, b: Vec2, lo: Vec2, hi: Vec2) -> Option<(Vec2, Vec2)> {
    let d = b - a;
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-d.x, a.x - lo.x),
        (d.x, hi.x - a.x),
        (-d.y, a.y - lo.y),
        (d.y, hi.y - a.y),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                t0 = t0.max(r);
            } else {
                t1 = t1.min(r);
            }
        }
    }
    (t0 <= t1).then(|| (a + d * t0, a + d * t1))
}

/// The occupancy grid of `shapes` over the rectangle `[min, max]` (mm) with cells of
/// `cell_mm` (the rectangle's size rounded up to whole cells). Sizes are checked before
/// anything is allocated.
pub fn rasterise(
    shapes: &[Shape],
    min: Vec2,
    max: Vec2,
    cell_mm: f64,
) -> Result<Grid, RasterError> {
    if !(cell_mm.is_finite() && cell_mm > 0.0) {
        return Err(RasterError::BadCell(cell_mm));
    }
    let (w, h) = (max.x - min.x, max.y - min.y);
    if !(w.is_finite() && h.is_finite() && w > 0.0 && h > 0.0) {
        return Err(RasterError::BadBounds);
    }
    let (width, height) = ((w / cell_mm).ceil(), (h / cell_mm).ceil());
    if width * height > MAX_CELLS as f64 {
        return Err(RasterError::TooBig {
            width: width as u64,
            height: height as u64,
        });
    }
    let (width, height) = (width as usize, height as usize);
    let mut grid = Grid {
        width,
        height,
        cell_mm,
        origin: min,
        cells: vec![FREE; width * height],
    };
    for shape in shapes {
        match *shape {
            Shape::Segment(a, b) => grid.segment(a, b),
            Shape::Rect(lo, hi) => grid.rect(lo, hi),
            Shape::Circle(c, r) => grid.circle(c, r),
        }
    }
    Ok(grid)
}
