//! The filter's bins and what is built on them: the KLD-sampling bound (Fox, "Adapting the
//! Sample Size in Particle Filters Through KLD-Sampling", 2003) and the hypotheses, made
//! as Player's `pf` makes its clusters: particles are put in bins of the pose space
//! (x, y, heading), bins that touch (the 26 around each, heading wrapping around) form one
//! cluster, and each cluster is a hypothesis with its weight (the sum of its particles'),
//! mean and covariance.
//!
//! Everything here is deterministic: bins are kept sorted, never read in a hash order.

use std::collections::HashSet;

use crate::pose::{angle_diff, Pose};

/// A bin's integer coordinates.
pub type BinKey = (i32, i32, i32);

/// The bin grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bins {
    /// Bin size in x and y, metres.
    pub size_d: f64,
    /// Bin size in heading, radians.
    pub size_a: f64,
}

impl Bins {
    /// How many heading bins make a full turn.
    fn turns(&self) -> i32 {
        ((2.0 * std::f64::consts::PI / self.size_a).ceil() as i32).max(1)
    }

    /// The bin of a pose.
    pub fn key(&self, p: &Pose) -> BinKey {
        let n = self.turns();
        let a = ((p.theta / self.size_a).floor() as i32).rem_euclid(n);
        (
            (p.x / self.size_d).floor() as i32,
            (p.y / self.size_d).floor() as i32,
            a,
        )
    }
}

/// KLD-sampling's sample count for `k` occupied bins: with probability given by the normal
/// quantile `z`, the Kullback-Leibler distance between the sample's and the true
/// distribution stays below `err` (Wilson-Hilferty's approximation of the chi-square
/// quantile).
pub fn kld_bound(k: usize, err: f64, z: f64) -> f64 {
    if k <= 1 || err <= 0.0 {
        return 0.0;
    }
    let k1 = (k - 1) as f64;
    let b = 2.0 / (9.0 * k1);
    let x = 1.0 - b + b.sqrt() * z;
    k1 / (2.0 * err) * x * x * x
}

/// Counts occupied bins as samples are drawn (for the KLD bound).
#[derive(Debug)]
pub struct BinCounter {
    bins: Bins,
    seen: HashSet<BinKey, std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>>,
}

impl BinCounter {
    /// An empty counter.
    pub fn new(bins: Bins) -> BinCounter {
        BinCounter {
            bins,
            seen: HashSet::default(),
        }
    }

    /// Adds a sample; returns the number of occupied bins.
    pub fn add(&mut self, p: &Pose) -> usize {
        self.seen.insert(self.bins.key(p));
        self.seen.len()
    }
}

/// One hypothesis: a cluster of particles.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypothesis {
    /// Weighted mean pose (the heading a circular mean).
    pub mean: Pose,
    /// Weighted covariance of (x, y, heading): m^2, m*rad, rad^2.
    pub cov: [[f64; 3]; 3],
    /// The cluster's share of the total weight (0..1).
    pub weight: f64,
}

/// The most hypotheses reported (as Player's localize device).
pub const MAX_HYPOTHESES: usize = 10;

fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// Clusters weighted particles into hypotheses, heaviest first, at most
/// [`MAX_HYPOTHESES`]. `weights` are normalised (sum 1).
pub fn hypotheses(poses: &[Pose], weights: &[f64], bins: &Bins) -> Vec<Hypothesis> {
    if poses.is_empty() {
        return Vec::new();
    }
    let keys: Vec<BinKey> = poses.iter().map(|p| bins.key(p)).collect();
    let mut uniq = keys.clone();
    uniq.sort_unstable();
    uniq.dedup();
    let mut parent: Vec<usize> = (0..uniq.len()).collect();
    let n_turns = bins.turns();
    for (i, &(x, y, a)) in uniq.iter().enumerate() {
        for dx in -1..=1 {
            for dy in -1..=1 {
                for da in -1..=1 {
                    if (dx, dy, da) <= (0, 0, 0) {
                        continue; // each pair once
                    }
                    let nb = (x + dx, y + dy, (a + da).rem_euclid(n_turns));
                    if let Ok(j) = uniq.binary_search(&nb) {
                        let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
                        if ri != rj {
                            parent[ri.max(rj)] = ri.min(rj);
                        }
                    }
                }
            }
        }
    }
    // Component of every particle, numbered by its smallest bin (deterministic).
    let comp_of_bin: Vec<usize> = (0..uniq.len()).map(|i| find(&mut parent, i)).collect();
    let mut roots: Vec<usize> = comp_of_bin.clone();
    roots.sort_unstable();
    roots.dedup();
    let ncomp = roots.len();
    let comp: Vec<usize> = keys
        .iter()
        .map(|k| {
            let b = uniq.binary_search(k).unwrap_or(0);
            roots.binary_search(&comp_of_bin[b]).unwrap_or(0)
        })
        .collect();
    // First pass: weights, positions, heading vectors.
    let mut sw = vec![0.0; ncomp];
    let mut sx = vec![0.0; ncomp];
    let mut sy = vec![0.0; ncomp];
    let mut sc = vec![0.0; ncomp];
    let mut ss = vec![0.0; ncomp];
    for ((p, &w), &c) in poses.iter().zip(weights).zip(&comp) {
        sw[c] += w;
        sx[c] += w * p.x;
        sy[c] += w * p.y;
        sc[c] += w * p.theta.cos();
        ss[c] += w * p.theta.sin();
    }
    let means: Vec<Pose> = (0..ncomp)
        .map(|c| {
            if sw[c] > 0.0 {
                Pose::new(sx[c] / sw[c], sy[c] / sw[c], ss[c].atan2(sc[c]))
            } else {
                Pose::default()
            }
        })
        .collect();
    // Second pass: covariances about the means, headings as wrapped differences.
    let mut cov = vec![[[0.0; 3]; 3]; ncomp];
    for ((p, &w), &c) in poses.iter().zip(weights).zip(&comp) {
        let m = &means[c];
        let d = [p.x - m.x, p.y - m.y, angle_diff(p.theta, m.theta)];
        for i in 0..3 {
            for j in 0..3 {
                cov[c][i][j] += w * d[i] * d[j];
            }
        }
    }
    let mut out: Vec<Hypothesis> = (0..ncomp)
        .filter(|&c| sw[c] > 0.0)
        .map(|c| {
            let mut k = cov[c];
            k.iter_mut().flatten().for_each(|v| *v /= sw[c]);
            Hypothesis {
                mean: means[c],
                cov: k,
                weight: sw[c],
            }
        })
        .collect();
    // Heaviest first; equal weights in a fixed order of their means.
    out.sort_by(|a, b| {
        b.weight
            .total_cmp(&a.weight)
            .then(a.mean.x.total_cmp(&b.mean.x))
            .then(a.mean.y.total_cmp(&b.mean.y))
            .then(a.mean.theta.total_cmp(&b.mean.theta))
    });
    out.truncate(MAX_HYPOTHESES);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kld_bound_grows_with_bins() {
        assert_eq!(kld_bound(1, 0.05, 3.0), 0.0);
        let a = kld_bound(10, 0.05, 3.0);
        let b = kld_bound(100, 0.05, 3.0);
        let c = kld_bound(100, 0.01, 3.0);
        assert!(a < b && b < c, "{a} {b} {c}");
        // 100 bins, err 0.05: about (k - 1) / (2 err) times a factor a little above 1.
        assert!((990.0..1700.0).contains(&b), "{b}");
        let mut counter = BinCounter::new(Bins {
            size_d: 0.5,
            size_a: 0.2,
        });
        assert_eq!(counter.add(&Pose::new(0.1, 0.1, 0.0)), 1);
        assert_eq!(counter.add(&Pose::new(0.2, 0.3, 0.1)), 1);
        assert_eq!(counter.add(&Pose::new(0.6, 0.3, 0.1)), 2);
    }

    #[test]
    fn two_clusters_sorted_by_weight_with_wrapped_heading() {
        let bins = Bins {
            size_d: 0.5,
            size_a: 10f64.to_radians(),
        };
        let mut poses = Vec::new();
        let mut weights = Vec::new();
        // A light cluster near (5, 5) and a heavy one at (0, 0) straddling +-pi.
        for i in 0..10 {
            poses.push(Pose::new(5.0 + 0.01 * i as f64, 5.0, 0.0));
            weights.push(0.02);
        }
        for i in 0..20 {
            let th = if i % 2 == 0 { 3.1 } else { -3.1 };
            poses.push(Pose::new(0.01 * i as f64, 0.0, th));
            weights.push(0.04);
        }
        let h = hypotheses(&poses, &weights, &bins);
        assert_eq!(h.len(), 2);
        assert!((h[0].weight - 0.8).abs() < 1e-12 && (h[1].weight - 0.2).abs() < 1e-12);
        assert!((h[0].mean.theta.abs() - std::f64::consts::PI).abs() < 1e-9);
        // Heading spread is about 0.0416 rad either side of pi, not 3.1 rad.
        assert!(h[0].cov[2][2] < 0.002, "{:?}", h[0].cov);
        assert!((h[1].mean.x - 5.045).abs() < 1e-9);
        assert!(h[0].cov[0][0] > 0.0 && h[0].cov[1][1] == 0.0);
    }
}
