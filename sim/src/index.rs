//! A uniform-grid spatial index of the robots of a world, so that a robot's bumpers and its
//! sonar and laser look only at the robots near it or along its rays: the cost of a step
//! grows with the robots, not with their square.
//!
//! Every robot is a disc of the same radius. Each is filed under the cell its centre is in,
//! in robot index order, in one flat array (counting sort): building the index is linear and
//! allocation-free once the arrays have grown. A cell is at least a robot wide, so a disc
//! reaches at most into the cells next to its own. Queries visit cells in a fixed order and
//! robots within a cell in index order, so their results never depend on threads or timing.

use crate::geom::{ray_circle, Vec2};

/// Side of a cell at least, mm (four robot diameters: a neighbour query touches at most
/// four cells, a ray a few cells per metre).
pub const MIN_CELL_MM: f64 = 1000.0;

/// At most this many cells per robot (a sparse world's cells grow instead).
const CELLS_PER_ROBOT: f64 = 4.0;

/// The robots of a world filed by where they are.
#[derive(Debug, Clone, Default)]
pub struct RobotIndex {
    lo: Vec2,
    cell: f64,
    cols: usize,
    rows: usize,
    radius: f64,
    /// `starts[c]..starts[c + 1]` are cell `c`'s entries in `items`.
    starts: Vec<u32>,
    items: Vec<u32>,
    /// Robot `i`'s cell.
    cells: Vec<u32>,
    /// Robot `i`'s centre.
    centers: Vec<Vec2>,
    /// The width, height and radius (bits) it was last built for, if it was.
    built_for: Option<[u64; 3]>,
}

impl RobotIndex {
    /// Files robots of `radius` at `centers` in a grid over `width` x `height` (robots
    /// outside it are filed in the border cells).
    /// The index is a function of its arguments alone: when they are those of the last
    /// rebuild to the bit (no robot moved), it is left as it is.
    pub fn rebuild(&mut self, width: f64, height: f64, radius: f64, centers: &[Vec2]) {
        let built_for = [width.to_bits(), height.to_bits(), radius.to_bits()];
        let same =
            |a: &Vec2, b: &Vec2| a.x.to_bits() == b.x.to_bits() && a.y.to_bits() == b.y.to_bits();
        if self.built_for == Some(built_for)
            && self.centers.len() == centers.len()
            && self.centers.iter().zip(centers).all(|(a, b)| same(a, b))
        {
            return;
        }
        self.built_for = Some(built_for);
        let n = centers.len().max(1) as f64;
        let area = (width * height).max(1.0);
        let cell = MIN_CELL_MM
            .max((area / (n * CELLS_PER_ROBOT)).sqrt())
            .max(2.0 * radius);
        self.lo = Vec2::new(0.0, 0.0);
        self.cell = cell;
        self.cols = ((width / cell).ceil() as usize).clamp(1, 1 << 15);
        self.rows = ((height / cell).ceil() as usize).clamp(1, 1 << 15);
        self.radius = radius;
        self.centers.clear();
        self.centers.extend_from_slice(centers);
        let cells = self.cols * self.rows;
        self.starts.clear();
        self.starts.resize(cells + 1, 0);
        // Count, then place (each robot in the cell of its centre).
        self.cells.clear();
        for c in centers {
            let k = self.row_of(c.y) * self.cols + self.col_of(c.x);
            self.cells.push(k as u32);
            self.starts[k + 1] += 1;
        }
        for k in 0..cells {
            self.starts[k + 1] += self.starts[k];
        }
        self.items.clear();
        self.items.resize(centers.len(), 0);
        // Place from the back, each cell filled from its end: robots stay in index order.
        for (i, &k) in self.cells.iter().enumerate().rev() {
            let end = &mut self.starts[k as usize + 1];
            *end -= 1;
            self.items[*end as usize] = i as u32;
        }
        // Every end moved back to its cell's start: shift them up again.
        self.starts.rotate_left(1);
        self.starts[cells] = centers.len() as u32;
    }

    /// Number of robots filed.
    pub fn len(&self) -> usize {
        self.centers.len()
    }

    /// Whether no robot is filed.
    pub fn is_empty(&self) -> bool {
        self.centers.is_empty()
    }

    /// Robot `i`'s centre as filed.
    pub fn center(&self, i: usize) -> Vec2 {
        self.centers[i]
    }

    fn col_of(&self, x: f64) -> usize {
        (((x - self.lo.x) / self.cell).floor().max(0.0) as usize).min(self.cols - 1)
    }

    fn row_of(&self, y: f64) -> usize {
        (((y - self.lo.y) / self.cell).floor().max(0.0) as usize).min(self.rows - 1)
    }

    /// The cells (first col, first row, last col, last row) a box of half-side `r` at `p`
    /// touches.
    fn span(&self, p: Vec2, r: f64) -> (usize, usize, usize, usize) {
        (
            self.col_of(p.x - r),
            self.row_of(p.y - r),
            self.col_of(p.x + r),
            self.row_of(p.y + r),
        )
    }

    /// Calls `f(j)` once for every robot `j` whose filed centre is within `range` of `p`
    /// (robots in index order within each cell, cells row by row).
    pub fn near(&self, p: Vec2, range: f64, mut f: impl FnMut(usize)) {
        if self.centers.is_empty() {
            return;
        }
        let (c0, r0, c1, r1) = self.span(p, range);
        let range2 = range * range;
        for row in r0..=r1 {
            // The cells of a row are next to each other in `items`.
            let (a, b) = (row * self.cols + c0, row * self.cols + c1);
            for &j in &self.items[self.starts[a] as usize..self.starts[b + 1] as usize] {
                let j = j as usize;
                let d = self.centers[j] - p;
                if d.dot(d) <= range2 {
                    f(j);
                }
            }
        }
    }

    /// The nearest robot other than `except` that the ray from `origin` along unit `dir`
    /// meets within `max`: its distance and index.
    pub fn first_hit(
        &self,
        origin: Vec2,
        dir: Vec2,
        max: f64,
        except: usize,
    ) -> Option<(f64, usize)> {
        if self.centers.len() <= 1 && except < self.centers.len() {
            return None;
        }
        let mut best: Option<(f64, usize)> = None;
        // Walk the cells along the ray (Amanatides-Woo).
        let mut col = self.col_of(origin.x) as isize;
        let mut row = self.row_of(origin.y) as isize;
        let step_c: isize = if dir.x >= 0.0 { 1 } else { -1 };
        let step_r: isize = if dir.y >= 0.0 { 1 } else { -1 };
        let next_edge =
            |i: isize, lo: f64, step: isize| lo + (i + isize::from(step > 0)) as f64 * self.cell;
        let mut t_max_c = if dir.x.abs() < 1e-12 {
            f64::INFINITY
        } else {
            (next_edge(col, self.lo.x, step_c) - origin.x) / dir.x
        };
        let mut t_max_r = if dir.y.abs() < 1e-12 {
            f64::INFINITY
        } else {
            (next_edge(row, self.lo.y, step_r) - origin.y) / dir.y
        };
        let dt_c = if dir.x.abs() < 1e-12 {
            f64::INFINITY
        } else {
            self.cell / dir.x.abs()
        };
        let dt_r = if dir.y.abs() < 1e-12 {
            f64::INFINITY
        } else {
            self.cell / dir.y.abs()
        };
        // An origin outside the grid is clamped into a border cell: its exits are then
        // no earlier than the true ones would be.
        t_max_c = t_max_c.max(0.0);
        t_max_r = t_max_r.max(0.0);
        loop {
            // A disc the ray meets in this cell has its centre here or in a cell next to it
            // (a cell is at least a robot radius wide). Cells are looked at more than once
            // along a ray; the nearest hit (then the lowest index) does not depend on that.
            let (r0, r1) = (
                row.max(1) as usize - 1,
                (row as usize + 1).min(self.rows - 1),
            );
            let (c0, c1) = (
                col.max(1) as usize - 1,
                (col as usize + 1).min(self.cols - 1),
            );
            for r in r0..=r1 {
                let (a, b) = (r * self.cols + c0, r * self.cols + c1);
                for &j in &self.items[self.starts[a] as usize..self.starts[b + 1] as usize] {
                    let j = j as usize;
                    if j == except {
                        continue;
                    }
                    if let Some(t) = ray_circle(origin, dir, self.centers[j], self.radius) {
                        if t < max && best.is_none_or(|(b, bj)| t < b || (t == b && j < bj)) {
                            best = Some((t, j));
                        }
                    }
                }
            }
            let exit = t_max_c.min(t_max_r);
            if best.is_some_and(|(t, _)| t <= exit) || exit >= max {
                return best;
            }
            if t_max_c < t_max_r {
                col += step_c;
                if col < 0 || col >= self.cols as isize {
                    return best;
                }
                t_max_c += dt_c;
            } else {
                row += step_r;
                if row < 0 || row >= self.rows as isize {
                    return best;
                }
                t_max_r += dt_r;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn scatter(n: usize, seed: u64) -> Vec<Vec2> {
        let mut rng = Rng::new(seed);
        (0..n)
            .map(|_| Vec2::new(rng.uniform() * 20_000.0, rng.uniform() * 15_000.0))
            .collect()
    }

    #[test]
    fn near_finds_exactly_the_robots_in_range_once_each() {
        let centers = scatter(500, 1);
        let mut index = RobotIndex::default();
        index.rebuild(20_000.0, 15_000.0, 250.0, &centers);
        let mut rng = Rng::new(2);
        for _ in 0..200 {
            let p = Vec2::new(rng.uniform() * 22_000.0 - 1000.0, rng.uniform() * 16_000.0);
            let range = rng.uniform() * 3000.0;
            let mut got = Vec::new();
            index.near(p, range, |j| got.push(j));
            got.sort_unstable();
            let want: Vec<usize> = (0..centers.len())
                .filter(|&j| (centers[j] - p).length() <= range)
                .collect();
            assert_eq!(got, want, "at {p:?} within {range}");
        }
    }

    #[test]
    fn first_hit_matches_casting_at_every_robot() {
        let centers = scatter(400, 3);
        let mut index = RobotIndex::default();
        index.rebuild(20_000.0, 15_000.0, 250.0, &centers);
        let mut rng = Rng::new(4);
        for k in 0..2000 {
            let origin = Vec2::new(rng.uniform() * 20_000.0, rng.uniform() * 15_000.0);
            let dir = Vec2::from_angle(rng.uniform() * std::f64::consts::TAU);
            let except = k % centers.len();
            let max = 8000.0;
            let want = centers
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != except)
                .filter_map(|(j, &c)| ray_circle(origin, dir, c, 250.0).map(|t| (t, j)))
                .filter(|&(t, _)| t < max)
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            assert_eq!(index.first_hit(origin, dir, max, except), want);
        }
    }
}
