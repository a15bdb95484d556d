//! A plan's result, and its reduction to waypoints.
//!
//! Player's wavefront handed its `vfh`/position layer a short list of waypoints, not the
//! cell path: from the robot's cell it walked down the path and kept the farthest cell it
//! could still reach in a straight line that stayed out of the dilated obstacles, made
//! that a waypoint, and went on from there (`plan_update_waypoints`). We do the same with
//! two differences, both making the straight segments no worse than the path they replace:
//!
//! - a segment is accepted when every cell it touches (the segment between cell centres,
//!   all cells it passes through, both cells where it crosses a corner exactly) is
//!   traversable **and no costlier** than the costliest cell of the stretch of path it
//!   replaces: a shortcut never passes closer to an obstacle than the planned path did
//!   (Player only kept out of its hard dilation, which here is the bare radius);
//! - the farthest acceptable cell is found by doubling the stride along the path, then
//!   bisecting between the last acceptable and the first refused cell (Player scanned cell
//!   by cell and stopped at the first refusal), so a long straight path costs O(n log n)
//!   cell tests instead of O(n^2).
//!
//! The first waypoint is the start cell and the last the goal cell, as in Player's list.

use super::costmap::{Costmap, LETHAL};

/// A plan: the cells from the start to the goal, their cost and the waypoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Every cell from the start to the goal, each a neighbour of the one before.
    pub cells: Vec<(u32, u32)>,
    /// The path's cost in the costmap's integer units ([`Costmap::path_cost`]).
    pub cost: u64,
    /// The waypoints, a subset of `cells` that includes the first and the last.
    pub waypoints: Vec<(u32, u32)>,
}

impl Plan {
    /// The cell path as world points (cell centres).
    pub fn path_world(&self, costmap: &Costmap) -> Vec<(f64, f64)> {
        self.cells.iter().map(|&c| costmap.center(c)).collect()
    }

    /// The waypoints as world points (cell centres).
    pub fn waypoints_world(&self, costmap: &Costmap) -> Vec<(f64, f64)> {
        self.waypoints.iter().map(|&c| costmap.center(c)).collect()
    }

    /// The path's length in metres (through the cell centres).
    pub fn length(&self, costmap: &Costmap) -> f64 {
        let res = costmap.map().resolution();
        self.cells
            .windows(2)
            .map(|p| {
                let diagonal = p[0].0 != p[1].0 && p[0].1 != p[1].1;
                if diagonal {
                    res * std::f64::consts::SQRT_2
                } else {
                    res
                }
            })
            .sum()
    }
}

/// Calls `visit` on every cell the segment between the centres of `a` and `b` touches, in
/// order (both cells beside a corner it crosses exactly), until `visit` returns false;
/// returns whether it never did.
pub fn supercover(a: (u32, u32), b: (u32, u32), mut visit: impl FnMut(i64, i64) -> bool) -> bool {
    let (mut x, mut y) = (i64::from(a.0), i64::from(a.1));
    let (bx, by) = (i64::from(b.0), i64::from(b.1));
    let (dx, dy) = ((bx - x).abs(), (by - y).abs());
    let (sx, sy) = ((bx - x).signum(), (by - y).signum());
    if !visit(x, y) {
        return false;
    }
    let (mut ix, mut iy) = (0i64, 0i64);
    while ix < dx || iy < dy {
        // Which grid line the segment crosses next: x = ix + 1/2 at parameter
        // (1 + 2 ix) / (2 dx), y likewise; compared without division.
        let decision = (1 + 2 * ix) * dy - (1 + 2 * iy) * dx;
        if decision == 0 {
            if !(visit(x + sx, y) && visit(x, y + sy)) {
                return false;
            }
            x += sx;
            y += sy;
            ix += 1;
            iy += 1;
        } else if decision < 0 {
            x += sx;
            ix += 1;
        } else {
            y += sy;
            iy += 1;
        }
        if !visit(x, y) {
            return false;
        }
    }
    true
}

/// Whether the straight segment from `cells[i]` to `cells[j]` may replace the path between
/// them (see the module documentation).
fn acceptable(costmap: &Costmap, cells: &[(u32, u32)], i: usize, j: usize) -> bool {
    if j == i + 1 {
        return true;
    }
    let worst = cells[i..=j]
        .iter()
        .map(|&(c, r)| costmap.weight(i64::from(c), i64::from(r)).unwrap_or(LETHAL))
        .max()
        .unwrap_or(LETHAL);
    supercover(cells[i], cells[j], |c, r| {
        costmap
            .weight(c, r)
            .is_some_and(|w| w != LETHAL && w <= worst)
    })
}

/// The waypoints of a cell path (see the module documentation).
pub fn waypoints(costmap: &Costmap, cells: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let Some(&first) = cells.first() else {
        return out;
    };
    out.push(first);
    let last = cells.len() - 1;
    let mut i = 0;
    while i < last {
        // Doubling: `good` acceptable, `bad` refused (or past the end).
        let mut good = i + 1;
        let mut stride = 2;
        let mut bad = loop {
            let j = i + stride;
            if j > last {
                break if acceptable(costmap, cells, i, last) {
                    good = last;
                    last + 1
                } else {
                    last
                };
            }
            if !acceptable(costmap, cells, i, j) {
                break j;
            }
            good = j;
            stride *= 2;
        };
        while bad > good + 1 {
            let mid = good + (bad - good) / 2;
            if acceptable(costmap, cells, i, mid) {
                good = mid;
            } else {
                bad = mid;
            }
        }
        out.push(cells[good]);
        i = good;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{Map, FREE, OCCUPIED};
    use crate::plan::costmap::CostParams;
    use crate::pose::Pose;

    #[test]
    fn supercover_touches_every_cell_once_in_order() {
        let mut seen = Vec::new();
        supercover((0, 0), (3, 1), |c, r| {
            seen.push((c, r));
            true
        });
        // The segment from (0.5, 0.5) to (3.5, 1.5) crosses the corner at (2, 1) exactly.
        assert_eq!(seen, [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (3, 1)]);
        seen.clear();
        supercover((0, 0), (2, 2), |c, r| {
            seen.push((c, r));
            true
        });
        assert_eq!(
            seen,
            [(0, 0), (1, 0), (0, 1), (1, 1), (2, 1), (1, 2), (2, 2)]
        );
        seen.clear();
        assert!(!supercover((5, 5), (5, 0), |c, r| {
            seen.push((c, r));
            r > 2
        }));
        assert_eq!(seen, [(5, 5), (5, 4), (5, 3), (5, 2)]);
    }

    #[test]
    fn waypoints_at_corners_and_never_closer_to_walls() {
        // An L-shaped corridor: free row band 2..=8 for columns 0..30, and column band
        // 22..=28 going up to row 30; walls elsewhere.
        let mut m = Map::new(31, 31, 0.1, Pose::default(), OCCUPIED).unwrap();
        for r in 2..=8 {
            for c in 1..=28 {
                m.set(c, r, FREE);
            }
        }
        for r in 2..=29 {
            for c in 22..=28 {
                m.set(c, r, FREE);
            }
        }
        let cm = Costmap::new(
            &m,
            CostParams {
                radius: 0.1,
                ..CostParams::default()
            },
        )
        .unwrap();
        let mut path: Vec<(u32, u32)> = (3..=25).map(|c| (c, 5)).collect();
        path.extend((6..=26).map(|r| (25, r)));
        let w = waypoints(&cm, &path);
        assert_eq!(w.first(), Some(&(3, 5)));
        assert_eq!(w.last(), Some(&(25, 26)));
        assert!(w.len() >= 3 && w.len() <= 5, "{w:?}");
        for seg in w.windows(2) {
            supercover(seg[0], seg[1], |c, r| {
                assert!(cm.traversable(c, r), "{seg:?} crosses ({c}, {r})");
                true
            });
        }
        // A straight path reduces to its two ends.
        let line: Vec<(u32, u32)> = (3..=20).map(|c| (c, 5)).collect();
        assert_eq!(waypoints(&cm, &line), [(3, 5), (20, 5)]);
        assert_eq!(waypoints(&cm, &[(4, 4)]), [(4, 4)]);
    }
}
