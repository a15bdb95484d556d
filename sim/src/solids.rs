//! A uniform-grid index of a map's static solids (walls, boxes, pillars, objects, the world's
//! edges), so that a robot's bumpers, sonar and laser look only at the solids near it: one
//! lookup per step or per reading, then the few solids of that place, instead of every
//! solid of the map for every ray.
//!
//! The index has a few levels, one per reach a caller needs (bumpers, sonar, laser). At a
//! level of reach `m` every cell lists, in ascending solid index, each solid whose bounding
//! box comes within `m` of the cell (in x and in y). So every solid within `m` of any point
//! of the cell is in its list, and a query at a point is the slice of the one cell the point
//! is in: no merging, no allocation. Listing in index order keeps the first-hit tie-breaks
//! (the lower index wins) of a scan over every solid, so results are the same to the bit.

use crate::geom::{Shape, Vec2};

/// The reaches of the levels, mm: bumpers (a robot radius and a little more), sonar
/// (5 m from a transducer within a robot radius of the centre), the default laser (8 m).
const REACHES: [f64; 3] = [400.0, 5_400.0, 8_400.0];

/// At most this many cells per level (a large world's cells grow instead).
const MAX_CELLS: f64 = 65_536.0;

/// Smallest cell side, mm.
const MIN_CELL_MM: f64 = 1000.0;

/// Extra margin when filing a solid, mm, against rounding at cell edges.
const SLACK_MM: f64 = 1.0;

#[derive(Debug, Clone, Default)]
struct Level {
    reach: f64,
    cell: f64,
    cols: usize,
    rows: usize,
    /// `starts[c]..starts[c + 1]` are cell `c`'s solids in `items`.
    starts: Vec<u32>,
    items: Vec<u32>,
}

impl Level {
    fn build(reach: f64, width: f64, height: f64, boxes: &[(Vec2, Vec2)]) -> Level {
        let (width, height) = (width.max(1.0), height.max(1.0));
        let cell = MIN_CELL_MM
            .max(reach / 2.0)
            .max((width * height / MAX_CELLS).sqrt());
        let cols = ((width / cell).ceil() as usize).max(1);
        let rows = ((height / cell).ceil() as usize).max(1);
        let mut level = Level {
            reach,
            cell,
            cols,
            rows,
            starts: vec![0; cols * rows + 1],
            items: Vec::new(),
        };
        let m = reach + SLACK_MM;
        let spans: Vec<Option<(usize, usize, usize, usize)>> = boxes
            .iter()
            .map(|&(lo, hi)| level.span(lo.x - m, hi.x + m, lo.y - m, hi.y + m))
            .collect();
        for &(c0, c1, r0, r1) in spans.iter().flatten() {
            for row in r0..=r1 {
                for col in c0..=c1 {
                    level.starts[row * cols + col + 1] += 1;
                }
            }
        }
        for k in 0..cols * rows {
            level.starts[k + 1] += level.starts[k];
        }
        level.items = vec![0; level.starts[cols * rows] as usize];
        let mut fill: Vec<u32> = level.starts[..cols * rows].to_vec();
        for (i, span) in spans.iter().enumerate() {
            let Some((c0, c1, r0, r1)) = *span else {
                continue;
            };
            for row in r0..=r1 {
                for col in c0..=c1 {
                    let k = row * cols + col;
                    level.items[fill[k] as usize] = i as u32;
                    fill[k] += 1;
                }
            }
        }
        level
    }

    /// The cells (first col, last col, first row, last row) the box `x0..x1` x `y0..y1`
    /// touches, or `None` when it lies wholly outside the grid.
    fn span(&self, x0: f64, x1: f64, y0: f64, y1: f64) -> Option<(usize, usize, usize, usize)> {
        let (w, h) = (self.cols as f64 * self.cell, self.rows as f64 * self.cell);
        if !(x1 >= 0.0 && y1 >= 0.0 && x0 < w && y0 < h) {
            return None;
        }
        let at = |v: f64, n: usize| ((v / self.cell).floor().max(0.0) as usize).min(n - 1);
        Some((
            at(x0, self.cols),
            at(x1, self.cols),
            at(y0, self.rows),
            at(y1, self.rows),
        ))
    }

    fn cell_of(&self, p: Vec2) -> Option<&[u32]> {
        let (fx, fy) = (p.x / self.cell, p.y / self.cell);
        // Also false for NaN.
        if !(fx >= 0.0 && fy >= 0.0 && fx < self.cols as f64 && fy < self.rows as f64) {
            return None;
        }
        let k = fy as usize * self.cols + fx as usize;
        Some(&self.items[self.starts[k] as usize..self.starts[k + 1] as usize])
    }
}

/// The static solids of a map filed by where they are.
#[derive(Debug, Clone, Default)]
pub struct SolidIndex {
    levels: Vec<Level>,
}

impl SolidIndex {
    /// Files `solids` (in their index order) over a `width` x `height` world.
    pub fn new(width: f64, height: f64, solids: &[Shape]) -> SolidIndex {
        let boxes: Vec<(Vec2, Vec2)> = solids.iter().map(bounding_box).collect();
        SolidIndex {
            levels: REACHES
                .iter()
                .map(|&reach| Level::build(reach, width, height, &boxes))
                .collect(),
        }
    }

    /// The indices (ascending) of a superset of the solids within `range` of `p`; `None`
    /// when the index cannot say (`p` outside the world, or `range` beyond every level's
    /// reach): then every solid must be looked at.
    pub fn near(&self, p: Vec2, range: f64) -> Option<&[u32]> {
        self.levels
            .iter()
            .find(|l| l.reach >= range)
            .and_then(|l| l.cell_of(p))
    }

    /// How many entries the index holds (every level), for memory accounting.
    pub fn entries(&self) -> usize {
        self.levels
            .iter()
            .map(|l| l.items.len() + l.starts.len())
            .sum()
    }
}

/// The axis-aligned box around a shape.
fn bounding_box(s: &Shape) -> (Vec2, Vec2) {
    match *s {
        Shape::Segment(a, b) => (
            Vec2::new(a.x.min(b.x), a.y.min(b.y)),
            Vec2::new(a.x.max(b.x), a.y.max(b.y)),
        ),
        Shape::Circle(c, r) => (Vec2::new(c.x - r, c.y - r), Vec2::new(c.x + r, c.y + r)),
        Shape::Rect(lo, hi) => (lo, hi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::WorldMap;

    #[test]
    fn every_solid_within_reach_of_a_point_is_in_its_cell() {
        let mut rng = Rng::new(9);
        let (w, h) = (60_000.0, 40_000.0);
        let mut solids = Vec::new();
        for k in 0..300 {
            let p = Vec2::new(rng.uniform() * w, rng.uniform() * h);
            let q = p + Vec2::new(rng.uniform() * 4000.0 - 2000.0, rng.uniform() * 4000.0);
            solids.push(match k % 3 {
                0 => Shape::Segment(p, q),
                1 => Shape::Circle(p, 50.0 + rng.uniform() * 500.0),
                _ => Shape::Rect(p, p + Vec2::new(rng.uniform() * 900.0, 10.0)),
            });
        }
        // Some beyond the world's edges too.
        solids.push(Shape::Segment(
            Vec2::new(-500.0, -500.0),
            Vec2::new(-500.0, 500.0),
        ));
        let index = SolidIndex::new(w, h, &solids);
        for _ in 0..3000 {
            let p = Vec2::new(rng.uniform() * w, rng.uniform() * h);
            for range in [0.0, 300.0, 400.0, 5000.0, 5_400.0, 8_400.0] {
                let got = index
                    .near(p, range)
                    .expect("inside the world, within reach");
                assert!(got.windows(2).all(|w| w[0] < w[1]), "ascending, once each");
                for (i, s) in solids.iter().enumerate() {
                    if s.signed_distance(p) <= range {
                        assert!(got.contains(&(i as u32)), "solid {i} near {p:?} ({range})");
                    }
                }
            }
        }
        assert!(index.near(Vec2::new(-1.0, 5.0), 100.0).is_none());
        assert!(index.near(Vec2::new(5.0, 5.0), 9_000.0).is_none());
        assert!(index.near(Vec2::new(f64::NAN, 5.0), 100.0).is_none());
    }

    #[test]
    fn rays_and_clearances_through_the_index_are_those_of_every_solid() {
        // A map with walls, boxes and pillars all over it.
        let mut rng = Rng::new(11);
        let (w, h) = (50_000.0, 30_000.0);
        let mut map = WorldMap::new("many", w, h);
        for _ in 0..60 {
            let p = (rng.uniform() * w, rng.uniform() * h);
            let q = (
                p.0 + rng.uniform() * 6000.0 - 3000.0,
                p.1 + rng.uniform() * 200.0,
            );
            map = map.with_wall(p, q);
            let c = (rng.uniform() * w, rng.uniform() * h);
            map = map.with_box(c, (c.0 + 100.0 + rng.uniform() * 800.0, c.1 + 300.0));
            let c = (rng.uniform() * w, rng.uniform() * h);
            map = map.with_pillar(c, 100.0 + rng.uniform() * 300.0);
        }
        for _ in 0..4000 {
            let p = Vec2::new(rng.uniform() * w, rng.uniform() * h);
            let dir = Vec2::from_angle(rng.uniform() * std::f64::consts::TAU);
            for range in [5_000.0, 8_000.0] {
                let near = map.solids_near(p, range);
                assert!(near.len() < map.solids().len());
                let want = map.cast_ray_along(p, dir).filter(|h| h.distance < range);
                let got = near.cast_ray_along(p, dir).filter(|h| h.distance < range);
                assert_eq!(got, want, "ray from {p:?} along {dir:?} within {range}");
                let angle = rng.uniform() * std::f64::consts::TAU;
                assert_eq!(
                    near.range(p, Vec2::from_angle(angle), range),
                    map.range(p, angle, range)
                );
            }
            // A clearance of a robot's disc: the same whenever the disc touches something.
            let (want, want_at) = map.clearance(p, 250.0);
            let (got, got_at) = map.solids_near(p, 250.0).clearance(p, 250.0);
            if want <= 0.0 || got <= 0.0 {
                assert_eq!((got, got_at), (want, want_at), "at {p:?}");
            }
        }
    }
}
