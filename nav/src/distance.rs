//! The exact Euclidean distance transform of a grid: for every cell, the distance from its
//! centre to the centre of the nearest target cell (an occupied cell, or any cell a mask
//! picks), in cells and in metres.
//!
//! The algorithm is Felzenszwalb and Huttenlocher's ("Distance Transforms of Sampled
//! Functions", 2012), separable in two passes over flat arrays: first, down every column,
//! the distance to the nearest target in that column (two linear sweeps, done row by row so
//! the memory is read in order); then, along every row, the lower envelope of the parabolas
//! `(x - q)^2 + g(q)^2`, which gives the exact squared distance. Distances are kept squared
//! as integers (`u32`), so they are exact; [`NONE`] marks a cell with no target anywhere.
//!
//! The likelihood field of the sensor model reads it ([`crate::likelihood`]), and so will
//! the planner's inflation and its cost near obstacles ([`DistanceField::inflate`]).

use crate::map::{Map, FREE, OCCUPIED};

/// The squared distance of a cell when the grid has no target at all.
pub const NONE: u32 = u32::MAX;

/// Squared Euclidean distances, in cells, from every cell to the nearest target cell.
#[derive(Debug, Clone, PartialEq)]
pub struct DistanceField {
    width: usize,
    height: usize,
    resolution: f64,
    sq: Vec<u32>,
}

impl DistanceField {
    /// Distances to the nearest occupied cell (what the likelihood field and inflation use).
    pub fn to_occupied(map: &Map) -> DistanceField {
        DistanceField::from_mask(map, |c| c == OCCUPIED)
    }

    /// Distances to the nearest cell that is not free (occupied or unknown: where a ray
    /// cast by the beam model stops, as in Player's `map_calc_range`).
    pub fn to_not_free(map: &Map) -> DistanceField {
        DistanceField::from_mask(map, |c| c != FREE)
    }

    /// Distances to the nearest cell whose state `target` accepts.
    pub fn from_mask(map: &Map, target: impl Fn(i8) -> bool) -> DistanceField {
        let mask: Vec<bool> = map.cells().iter().map(|&c| target(c)).collect();
        DistanceField {
            width: map.width(),
            height: map.height(),
            resolution: map.resolution(),
            sq: squared_edt(map.width(), map.height(), &mask),
        }
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

    /// Every cell's squared distance in cells ([`NONE`] where there is no target), row-major
    /// from the lower-left as [`Map::cells`].
    pub fn squared(&self) -> &[u32] {
        &self.sq
    }

    /// Distance in cells from cell `i` (an index into [`Map::cells`]) to the nearest target;
    /// infinite when there is none.
    pub fn cells_at(&self, i: usize) -> f64 {
        match self.sq[i] {
            NONE => f64::INFINITY,
            s => f64::from(s).sqrt(),
        }
    }

    /// Distance in metres from cell `i` to the nearest target; infinite when there is none.
    pub fn metres_at(&self, i: usize) -> f64 {
        self.cells_at(i) * self.resolution
    }

    /// Distance in metres from cell (`col`, `row`) to the nearest target, or `None` off the
    /// grid.
    pub fn metres(&self, col: i64, row: i64) -> Option<f64> {
        if col < 0 || row < 0 || col as usize >= self.width || row as usize >= self.height {
            return None;
        }
        Some(self.metres_at(row as usize * self.width + col as usize))
    }

    /// The cells whose centre lies within `radius` metres of a target cell's centre (the
    /// targets included): a map inflated by a robot's radius.
    pub fn inflate(&self, radius: f64) -> Vec<bool> {
        let r = radius / self.resolution;
        let limit = if r < 0.0 { -1.0 } else { r * r };
        self.sq
            .iter()
            .map(|&s| s != NONE && f64::from(s) <= limit)
            .collect()
    }
}

/// The squared Euclidean distance transform of a `width` x `height` row-major mask: for every
/// cell, the squared distance in cells to the nearest `true` cell ([`NONE`] if none).
pub fn squared_edt(width: usize, height: usize, mask: &[bool]) -> Vec<u32> {
    assert_eq!(mask.len(), width * height, "mask size");
    // Pass 1: per column, the distance to the nearest target in the same column, swept
    // upwards then downwards, a whole row at a time.
    let mut g = vec![NONE; width * height];
    for row in 0..height {
        let (done, rest) = g.split_at_mut(row * width);
        let cur = &mut rest[..width];
        let m = &mask[row * width..(row + 1) * width];
        if row == 0 {
            for (c, &t) in cur.iter_mut().zip(m) {
                *c = if t { 0 } else { NONE };
            }
        } else {
            let prev = &done[(row - 1) * width..];
            for ((c, &t), &p) in cur.iter_mut().zip(m).zip(prev) {
                *c = if t { 0 } else { p.saturating_add(1) };
            }
        }
    }
    for row in (0..height.saturating_sub(1)).rev() {
        let (head, tail) = g.split_at_mut((row + 1) * width);
        let cur = &mut head[row * width..];
        for (c, &n) in cur.iter_mut().zip(&tail[..width]) {
            let via = n.saturating_add(1);
            if via < *c {
                *c = via;
            }
        }
    }
    // Pass 2: per row, the lower envelope of the parabolas.
    let mut out = vec![NONE; width * height];
    let mut v: Vec<(usize, f64)> = Vec::with_capacity(width);
    let mut z: Vec<f64> = Vec::with_capacity(width + 1);
    for row in 0..height {
        let f = &g[row * width..(row + 1) * width];
        envelope(f, &mut out[row * width..(row + 1) * width], &mut v, &mut z);
    }
    out
}

/// One line of pass 2: `out[x] = min over q of (x - q)^2 + f[q]^2`, skipping `f[q] = NONE`.
/// `v` and `z` hold the envelope: the parabolas' positions (with their `f[q]^2 + q^2`) and
/// where each starts to be the lowest.
fn envelope(f: &[u32], out: &mut [u32], v: &mut Vec<(usize, f64)>, z: &mut Vec<f64>) {
    v.clear();
    z.clear();
    for (q, &fq) in f.iter().enumerate() {
        if fq == NONE {
            continue;
        }
        let fq = f64::from(fq);
        let hq = fq * fq + (q * q) as f64;
        loop {
            match v.last() {
                None => {
                    v.push((q, hq));
                    z.push(f64::NEG_INFINITY);
                    break;
                }
                Some(&(p, hp)) => {
                    // Where parabola q starts to lie below parabola p.
                    let s = (hq - hp) / (2.0 * (q - p) as f64);
                    if s <= z[z.len() - 1] {
                        v.pop();
                        z.pop();
                    } else {
                        v.push((q, hq));
                        z.push(s);
                        break;
                    }
                }
            }
        }
    }
    if v.is_empty() {
        out.fill(NONE);
        return;
    }
    let mut k = 0;
    for (x, o) in out.iter_mut().enumerate() {
        while k + 1 < v.len() && z[k + 1] < x as f64 {
            k += 1;
        }
        let q = v[k].0;
        let dx = x.abs_diff(q) as u64;
        let fq = u64::from(f[q]);
        *o = (dx * dx + fq * fq).min(u64::from(NONE - 1)) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    fn brute(width: usize, height: usize, mask: &[bool]) -> Vec<u32> {
        let targets: Vec<(i64, i64)> = (0..width * height)
            .filter(|&i| mask[i])
            .map(|i| ((i % width) as i64, (i / width) as i64))
            .collect();
        (0..width * height)
            .map(|i| {
                let (x, y) = ((i % width) as i64, (i / width) as i64);
                targets
                    .iter()
                    .map(|&(tx, ty)| ((tx - x).pow(2) + (ty - y).pow(2)) as u32)
                    .min()
                    .unwrap_or(NONE)
            })
            .collect()
    }

    #[test]
    fn exact_against_brute_force_on_random_grids() {
        let mut rng = Rng::new(3);
        for trial in 0..60 {
            let w = 1 + rng.below(40) as usize;
            let h = 1 + rng.below(40) as usize;
            let density = [0.0, 0.002, 0.02, 0.2, 0.7][trial % 5];
            let mask: Vec<bool> = (0..w * h).map(|_| rng.uniform() < density).collect();
            assert_eq!(
                squared_edt(w, h, &mask),
                brute(w, h, &mask),
                "{w}x{h} d={density}"
            );
        }
    }

    #[test]
    fn map_distances_inflation_and_no_target() {
        use crate::pose::Pose;
        let mut m = Map::new(5, 4, 0.5, Pose::default(), FREE).unwrap();
        m.set(0, 0, OCCUPIED);
        let d = DistanceField::to_occupied(&m);
        assert_eq!(d.squared()[m.index(3, 2)], 13);
        assert!((d.metres(3, 2).unwrap() - 13f64.sqrt() * 0.5).abs() < 1e-12);
        assert_eq!(d.metres(5, 0), None);
        let infl = d.inflate(0.5);
        let n: usize = infl.iter().filter(|&&b| b).count();
        assert_eq!(n, 3); // the cell and its two neighbours 1 cell away
        let empty = Map::new(3, 3, 1.0, Pose::default(), FREE).unwrap();
        let d = DistanceField::to_occupied(&empty);
        assert!(d.squared().iter().all(|&s| s == NONE));
        assert_eq!(d.cells_at(4), f64::INFINITY);
        // Unknown cells count for the beam model's distances, not the likelihood field's.
        let mut u = Map::new(3, 1, 1.0, Pose::default(), FREE).unwrap();
        u.set(2, 0, 0);
        assert_eq!(DistanceField::to_not_free(&u).squared(), [4, 1, 0]);
        assert_eq!(DistanceField::to_occupied(&u).squared(), [NONE; 3]);
    }
}
