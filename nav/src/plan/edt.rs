//! The costmap's distance transform: the exact squared Euclidean distance from every cell
//! to the nearest obstacle cell, in integers throughout (Meijster, Roerdink and Hesselink,
//! "A general algorithm for computing distance transforms in linear time", 2000), with the
//! cells' weights written in the same pass over each row.
//!
//! The crate's [`crate::distance`] computes the same distances (Felzenszwalb and
//! Huttenlocher's envelope, with floating-point intersections) for the likelihood field;
//! this one exists because the planner's costmap must be built within 100 ms on a 2000 x
//! 2000 map on a shared 2-core machine: its second pass needs no floating point, no
//! growing vectors and no separate sweep to turn distances into weights. A test checks the
//! two transforms agree cell for cell.

/// The squared distance of a cell when the grid has no obstacle at all.
pub const NONE: u32 = u32::MAX;

/// Computes the squared distances (in cells) of a `width` x `height` row-major grid to
/// the nearest cell `target` accepts, and calls `row_done(row, squared)` with each row's
/// distances as soon as they are known.
pub fn squared_rows(
    width: usize,
    height: usize,
    target: impl Fn(usize) -> bool,
    mut row_done: impl FnMut(usize, &[u32]),
) {
    // "Infinity" for the column pass: more than any real distance, small enough to square.
    let inf = (width + height) as u32;
    // Pass 1: per column, the distance to the nearest target in that column, swept up the
    // rows and back down, a whole row at a time (memory in order).
    let mut g = vec![inf; width * height];
    for row in 0..height {
        let (done, rest) = g.split_at_mut(row * width);
        let cur = &mut rest[..width];
        let base = row * width;
        if row == 0 {
            for (x, c) in cur.iter_mut().enumerate() {
                *c = if target(base + x) { 0 } else { inf };
            }
        } else {
            let prev = &done[(row - 1) * width..];
            for (x, (c, &p)) in cur.iter_mut().zip(prev).enumerate() {
                *c = if target(base + x) {
                    0
                } else {
                    (p + 1).min(inf)
                };
            }
        }
    }
    for row in (0..height.saturating_sub(1)).rev() {
        let (head, tail) = g.split_at_mut((row + 1) * width);
        for (c, &n) in head[row * width..].iter_mut().zip(&tail[..width]) {
            *c = (*c).min(n + 1);
        }
    }
    // Pass 2: per row, the lower envelope of the parabolas (x - i)^2 + g(i)^2.
    let mut s = vec![0usize; width];
    let mut t = vec![0usize; width];
    let mut out = vec![NONE; width];
    for row in 0..height {
        let gr = &g[row * width..(row + 1) * width];
        envelope(gr, inf, &mut s, &mut t, &mut out);
        row_done(row, &out);
    }
}

/// One row of pass 2 (Meijster's `Sep` and `f` in integers).
fn envelope(g: &[u32], inf: u32, s: &mut [usize], t: &mut [usize], out: &mut [u32]) {
    let m = g.len();
    let f = |x: usize, i: usize| {
        let d = x.abs_diff(i) as u64;
        let gi = u64::from(g[i]);
        d * d + gi * gi
    };
    let sep = |i: usize, u: usize| {
        let (i2, u2) = ((i * i) as i64, (u * u) as i64);
        let (gi, gu) = (i64::from(g[i]), i64::from(g[u]));
        (u2 - i2 + gu * gu - gi * gi).div_euclid(2 * (u - i) as i64)
    };
    let mut q: isize = 0;
    s[0] = 0;
    t[0] = 0;
    for u in 1..m {
        while q >= 0 && f(t[q as usize], s[q as usize]) > f(t[q as usize], u) {
            q -= 1;
        }
        if q < 0 {
            q = 0;
            s[0] = u;
        } else {
            let w = 1 + sep(s[q as usize], u);
            if w >= 0 && (w as usize) < m {
                q += 1;
                s[q as usize] = u;
                t[q as usize] = w as usize;
            }
        }
    }
    for u in (0..m).rev() {
        let i = s[q as usize];
        out[u] = if g[i] >= inf {
            NONE
        } else {
            f(u, i).min(u64::from(NONE - 1)) as u32
        };
        if u == t[q as usize] {
            q -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distance::squared_edt;
    use crate::rng::Rng;

    #[test]
    fn same_distances_as_the_crates_transform() {
        let mut rng = Rng::new(11);
        for trial in 0..80 {
            let w = 1 + rng.below(60) as usize;
            let h = 1 + rng.below(60) as usize;
            let density = [0.0, 0.001, 0.01, 0.1, 0.5, 0.95][trial % 6];
            let mask: Vec<bool> = (0..w * h).map(|_| rng.uniform() < density).collect();
            let mut ours = vec![0u32; w * h];
            squared_rows(
                w,
                h,
                |i| mask[i],
                |row, d| ours[row * w..(row + 1) * w].copy_from_slice(d),
            );
            assert_eq!(ours, squared_edt(w, h, &mask), "{w}x{h} density {density}");
        }
    }
}
