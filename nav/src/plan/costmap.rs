//! The planner's cost grid: which cells the robot's centre may occupy and what it costs to
//! travel near obstacles, built once per map from the exact distance transform.
//!
//! **Distances** are exact Euclidean distances between cell centres ([`super::edt`]).
//!
//! **Hard inflation.** A cell is *lethal* (never entered) when its centre lies within the
//! robot's `radius` of an occupied cell's centre (`d <= radius`, distances between cell
//! centres, as Nav2's inflation and [`crate::distance::DistanceField::inflate`] measure
//! them), and every
//! occupied cell is lethal whatever the radius.
//!
//! **Unknown cells** are treated as Player's wavefront treats them by default
//! ([`Unknown::Lethal`]): never entered, but not inflated either (Player 1.6's
//! `plan_update_cspace` set their obstacle distance to 0 and spread distances from occupied
//! cells only), so a robot may pass along the edge of unexplored space but not into it;
//! [`Unknown::Obstacle`] inflates them like walls, [`Unknown::Free`] ignores them.
//!
//! **Soft cost.** Every other cell has a weight `w(d)`, the cost per metre of travel there,
//! in units of [`W_FREE`] (the weight of a cell at least `max_radius` from any obstacle):
//!
//! ```text
//! w(d) = W_FREE * (1 + dist_penalty / resolution * (max(0, max_radius - d)
//!                                                  + max(0, radius + safety_dist - d)))
//! ```
//!
//! rounded to an integer. The first term is Player's: its wavefront added
//! `dist_penalty * (max_radius - d)` to the cost `scale` of every cell entered closer than
//! `max_radius`, which per metre is exactly that ratio. The second makes the band Player
//! dilated hard (`radius + safety_dist`) twice as steep instead of forbidden: a path keeps
//! `safety_dist` of extra clearance wherever the map allows, and still squeezes through a
//! gap narrower than that when it is the only way (a hard 0.5 m dilation disconnects 6-15
//! of Nav2's benchmark pairs). With the defaults (0.25, 0.25, 1.0, 1.0) at 0.05 m cells a
//! cell at the robot's radius weighs 21 times a free one, at 0.5 m 11 times, at 1 m 1.
//!
//! **Steps.** The planners move between the 8 neighbours of a cell (a diagonal step only
//! when both cells beside it are enterable: no cutting a lethal corner). A step costs its
//! length times the mean weight of its two cells (the trapezoid rule for the integral of
//! the weight along the step), in integers: [`ORTHO`] `* (w_a + w_b)` straight,
//! [`DIAG`] `* (w_a + w_b)` diagonal. 577/408 is within 2.2e-6 of the square root of 2, so
//! the integer costs are exact sums and the octile heuristic in the same units is exact
//! and consistent with them.

use super::edt::{self, NONE};
use crate::map::{Map, FREE, OCCUPIED, UNKNOWN};

/// The weight of a cell at least `max_radius` from any obstacle (cost units per step unit).
pub const W_FREE: u16 = 16;
/// The weight of a cell the robot's centre may not enter.
pub const LETHAL: u16 = 0;
/// The length of a straight step, in step units.
pub const ORTHO: u64 = 408;
/// The length of a diagonal step, in step units (577/408 ~ the square root of 2).
pub const DIAG: u64 = 577;

/// What unknown cells are to the planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// Never entered and not inflated (Player's wavefront): the default.
    Lethal,
    /// Obstacles: lethal and inflated like occupied cells.
    Obstacle,
    /// Free space.
    Free,
}

/// The costmap's parameters (metres unless said otherwise).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostParams {
    /// The robot's radius: cells this close to an obstacle are lethal (default 0.25 m).
    pub radius: f64,
    /// Extra clearance kept where the map allows it (default 0.25 m, Player's default).
    pub safety_dist: f64,
    /// The reach of the cost near obstacles (default 1.0 m, Player's default).
    pub max_radius: f64,
    /// The cost's gain (default 1.0, Player's default).
    pub dist_penalty: f64,
    /// What unknown cells are (default [`Unknown::Lethal`]).
    pub unknown: Unknown,
}

impl Default for CostParams {
    fn default() -> CostParams {
        CostParams {
            radius: 0.25,
            safety_dist: 0.25,
            max_radius: 1.0,
            dist_penalty: 1.0,
            unknown: Unknown::Lethal,
        }
    }
}

impl CostParams {
    /// Checks every value is finite and not negative (an error names the parameter).
    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [
            ("radius", self.radius),
            ("safety_dist", self.safety_dist),
            ("max_radius", self.max_radius),
            ("dist_penalty", self.dist_penalty),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} = {v}: must be a finite number >= 0"));
            }
        }
        if self.radius > 100.0 || self.max_radius > 100.0 || self.safety_dist > 100.0 {
            return Err("radius, safety_dist and max_radius must be at most 100 m".into());
        }
        Ok(())
    }

    /// A cell's weight at `d` metres from the nearest obstacle, on a grid of `resolution`
    /// m/cell ([`LETHAL`] within the radius), as the module documentation gives it.
    pub fn weight_at(&self, d: f64, resolution: f64) -> u16 {
        if d <= self.radius || d <= 0.0 {
            return LETHAL;
        }
        let near = (self.max_radius - d).max(0.0) + (self.radius + self.safety_dist - d).max(0.0);
        let w = f64::from(W_FREE) * (1.0 + self.dist_penalty / resolution * near);
        w.round().clamp(f64::from(W_FREE), f64::from(u16::MAX)) as u16
    }
}

/// The cost grid of a map: a weight per cell ([`LETHAL`] or at least [`W_FREE`]) and each
/// cell's distance to the nearest obstacle.
#[derive(Debug, Clone)]
pub struct Costmap {
    map: Map,
    params: CostParams,
    weights: Vec<u16>,
    sq: Vec<u32>,
}

impl Costmap {
    /// Builds the costmap of `map`: the distance transform and the weights, in one pass
    /// over each row ([`super::edt`]).
    pub fn new(map: &Map, params: CostParams) -> Result<Costmap, String> {
        params.check()?;
        let res = map.resolution();
        // Squared distances (in cells) beyond `far` all weigh W_FREE: a table for the rest.
        let reach = params.max_radius.max(params.radius + params.safety_dist) / res;
        let far = (reach * reach).ceil().min(f64::from(1u32 << 24)) as u32 + 1;
        let table: Vec<u16> = (0..=far)
            .map(|s| params.weight_at(f64::from(s).sqrt() * res, res))
            .collect();
        let nowhere = params.weight_at(f64::INFINITY, res);
        let (w, h) = (map.width(), map.height());
        let cells = map.cells();
        let mut weights = vec![LETHAL; w * h];
        let mut sq = vec![NONE; w * h];
        let inflate_unknown = params.unknown == Unknown::Obstacle;
        let block_unknown = params.unknown != Unknown::Free;
        let target = |i: usize| cells[i] == OCCUPIED || (inflate_unknown && cells[i] == UNKNOWN);
        edt::squared_rows(w, h, target, |row, d| {
            let span = row * w..(row + 1) * w;
            sq[span.clone()].copy_from_slice(d);
            for ((wt, &c), &s) in weights[span.clone()].iter_mut().zip(&cells[span]).zip(d) {
                *wt = if c == OCCUPIED || (block_unknown && c == UNKNOWN) {
                    LETHAL
                } else if s == NONE {
                    nowhere
                } else {
                    table[s.min(far) as usize]
                };
            }
        });
        Ok(Costmap {
            map: map.clone(),
            params,
            weights,
            sq,
        })
    }

    /// Every cell's squared distance, in cells, to the nearest obstacle cell (occupied,
    /// or also unknown for [`Unknown::Obstacle`]; [`NONE`] when there is none), row-major
    /// from the lower-left.
    pub fn squared_distances(&self) -> &[u32] {
        &self.sq
    }

    /// The distance in metres from cell (`col`, `row`)'s centre to the nearest obstacle
    /// cell's centre (infinite when there is none), or `None` off the map.
    pub fn clearance(&self, col: i64, row: i64) -> Option<f64> {
        if col < 0 || row < 0 || col as usize >= self.width() || row as usize >= self.height() {
            return None;
        }
        Some(match self.sq[row as usize * self.width() + col as usize] {
            NONE => f64::INFINITY,
            s => f64::from(s).sqrt() * self.map.resolution(),
        })
    }

    /// The map it was built from.
    pub fn map(&self) -> &Map {
        &self.map
    }

    /// Its parameters.
    pub fn params(&self) -> &CostParams {
        &self.params
    }

    /// Width in cells.
    pub fn width(&self) -> usize {
        self.map.width()
    }

    /// Height in cells.
    pub fn height(&self) -> usize {
        self.map.height()
    }

    /// Every cell's weight, row-major from the lower-left as [`Map::cells`].
    pub fn weights(&self) -> &[u16] {
        &self.weights
    }

    /// The weight of cell (`col`, `row`), or `None` off the map.
    pub fn weight(&self, col: i64, row: i64) -> Option<u16> {
        if col < 0 || row < 0 || col as usize >= self.width() || row as usize >= self.height() {
            return None;
        }
        Some(self.weights[row as usize * self.width() + col as usize])
    }

    /// Whether the robot's centre may be in cell (`col`, `row`) (false off the map).
    pub fn traversable(&self, col: i64, row: i64) -> bool {
        self.weight(col, row).is_some_and(|w| w != LETHAL)
    }

    /// Whether the map says cell (`col`, `row`) is known free (false off the map).
    pub fn is_free(&self, col: i64, row: i64) -> bool {
        self.map.get(col, row) == Some(FREE)
    }

    /// The cost of a step between two neighbouring cells of weights `wa` and `wb`.
    pub fn step_cost(diagonal: bool, wa: u16, wb: u16) -> u64 {
        (if diagonal { DIAG } else { ORTHO }) * (u64::from(wa) + u64::from(wb))
    }

    /// The cost of a path of cells (each one a neighbour of the one before), or `None`
    /// when it enters a lethal cell, jumps, or cuts a lethal corner.
    pub fn path_cost(&self, cells: &[(u32, u32)]) -> Option<u64> {
        let mut total = 0u64;
        let first = cells.first()?;
        self.weight(i64::from(first.0), i64::from(first.1))
            .filter(|&w| w != LETHAL)?;
        for pair in cells.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let (ax, ay, bx, by) = (
                i64::from(a.0),
                i64::from(a.1),
                i64::from(b.0),
                i64::from(b.1),
            );
            let (dx, dy) = (bx - ax, by - ay);
            if dx.abs() > 1 || dy.abs() > 1 || (dx, dy) == (0, 0) {
                return None;
            }
            let wa = self.weight(ax, ay).filter(|&w| w != LETHAL)?;
            let wb = self.weight(bx, by).filter(|&w| w != LETHAL)?;
            let diagonal = dx != 0 && dy != 0;
            if diagonal && !(self.traversable(ax + dx, ay) && self.traversable(ax, ay + dy)) {
                return None;
            }
            total += Costmap::step_cost(diagonal, wa, wb);
        }
        Some(total)
    }

    /// The cell containing world point (`x`, `y`), if on the map.
    pub fn cell_of(&self, x: f64, y: f64) -> Option<(u32, u32)> {
        let (c, r) = self.map.world_to_cell(x, y);
        self.map.get(c, r).map(|_| (c as u32, r as u32))
    }

    /// The world position of a cell's centre.
    pub fn center(&self, cell: (u32, u32)) -> (f64, f64) {
        self.map.cell_center(i64::from(cell.0), i64::from(cell.1))
    }

    /// The traversable cell nearest to `cell` (by centre distance, the lowest index on a
    /// tie) within `max_cells`, or `None`: where to start from when the robot's own cell
    /// has become lethal (pushed against a wall, or a localization jump).
    pub fn nearest_traversable(&self, cell: (u32, u32), max_cells: u32) -> Option<(u32, u32)> {
        let (c0, r0) = (i64::from(cell.0), i64::from(cell.1));
        let m = i64::from(max_cells);
        let mut best: Option<(i64, (u32, u32))> = None;
        for dr in -m..=m {
            for dc in -m..=m {
                let d2 = dc * dc + dr * dr;
                if d2 > m * m || best.is_some_and(|(b, _)| d2 >= b) {
                    continue;
                }
                if self.traversable(c0 + dc, r0 + dr) {
                    best = Some((d2, ((c0 + dc) as u32, (r0 + dr) as u32)));
                }
            }
        }
        best.map(|(_, c)| c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pose::Pose;

    #[test]
    fn weights_follow_the_documented_formula() {
        let p = CostParams::default();
        assert_eq!(p.weight_at(0.0, 0.05), LETHAL);
        assert_eq!(p.weight_at(0.25, 0.05), LETHAL);
        // Just outside the radius: 16 * (1 + 20 * (0.7499 + 0.2499)) ~ 336.
        assert_eq!(p.weight_at(0.2501, 0.05), 336);
        assert_eq!(p.weight_at(0.5, 0.05), 16 * 11);
        assert_eq!(p.weight_at(0.75, 0.05), 16 * 6);
        assert_eq!(p.weight_at(1.0, 0.05), W_FREE);
        assert_eq!(p.weight_at(7.0, 0.05), W_FREE);
        assert_eq!(p.weight_at(f64::INFINITY, 0.05), W_FREE);
        let bad = CostParams {
            radius: f64::NAN,
            ..p
        };
        assert!(bad.check().unwrap_err().contains("radius"));
    }

    fn room() -> Map {
        // 20 x 10 cells of 0.1 m: a wall at column 10, an unknown cell at (3, 3).
        let mut m = Map::new(20, 10, 0.1, Pose::default(), FREE).unwrap();
        for r in 0..10 {
            m.set(10, r, OCCUPIED);
        }
        m.set(3, 3, UNKNOWN);
        m
    }

    #[test]
    fn inflation_and_unknown_cells() {
        let m = room();
        let cm = Costmap::new(&m, CostParams::default()).unwrap();
        // Columns 8..=12 are within 0.25 m (2.5 cells) of the wall.
        for c in 0..20 {
            let lethal = (8..=12).contains(&c);
            assert_eq!(!cm.traversable(c, 5), lethal, "column {c}");
        }
        // Player's rule: the unknown cell is lethal, its neighbours are not.
        assert!(!cm.traversable(3, 3));
        assert!(cm.traversable(4, 3) && cm.traversable(3, 4));
        assert_eq!(cm.weight(2, 3), Some(cm.weight(2, 5).unwrap()));
        let obstacle = CostParams {
            unknown: Unknown::Obstacle,
            ..CostParams::default()
        };
        let cm = Costmap::new(&m, obstacle).unwrap();
        assert!(!cm.traversable(4, 3) && !cm.traversable(5, 3));
        let free = CostParams {
            unknown: Unknown::Free,
            ..CostParams::default()
        };
        let cm = Costmap::new(&m, free).unwrap();
        assert!(cm.traversable(3, 3));
        assert_eq!(cm.weight(-1, 0), None);
    }

    #[test]
    fn path_cost_checks_steps() {
        let cm = Costmap::new(&room(), CostParams::default()).unwrap();
        let w = |c, r| u64::from(cm.weight(c, r).unwrap());
        let cost = cm.path_cost(&[(0, 0), (1, 1), (2, 1)]).unwrap();
        assert_eq!(
            cost,
            DIAG * (w(0, 0) + w(1, 1)) + ORTHO * (w(1, 1) + w(2, 1))
        );
        assert_eq!(cm.path_cost(&[(0, 0), (2, 0)]), None);
        assert_eq!(cm.path_cost(&[(7, 0), (8, 0)]), None);
        assert_eq!(cm.path_cost(&[(0, 0)]), Some(0));
        assert_eq!(cm.nearest_traversable((9, 5), 4), Some((7, 5)));
        assert_eq!(cm.nearest_traversable((10, 5), 1), None);
    }
}
