//! Scan-matched recovery: a search of the whole map for the poses the current scan fits
//! best, so that a filter sure of a wrong pose, or one whose robot was carried away, is
//! offered the right one instead of waiting for a random pose to land on it.
//!
//! Augmented MCL (Thrun et al., table 8.3) injects poses drawn uniformly over free space
//! when the fit drops below its long-term average. Two things defeat it: a filter that
//! converged on a wrong pose from the start learns that pose's fit as its average and
//! never injects; and a uniform pose lands within reach of the truth (a few tenths of a
//! metre and degrees) so rarely that recovery takes minutes on a map of 150 m^2. The
//! search here is in the spirit of sensor resetting (Lenser and Veloso, 2000) and of
//! Mixture-MCL's dual proposal (Thrun et al., 2001), which draw poses from the
//! measurement: many uniform candidates are scored on a few beams against a smoothed
//! field, the best few are refined by a local random search on every beam, and the
//! filter injects a found pose only when it fits clearly better than every particle (a
//! margin in mean log-likelihood per beam), so a filter that is right is left alone.
//!
//! Everything random comes from the filter's generator: the search is deterministic.

use super::sensor::Beams;
use crate::pose::{normalize, Pose};
use crate::rng::Rng;

/// The search's parameters (defaults and why in [`super::Params`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchParams {
    /// Uniform candidates scored per search (0: no search).
    pub candidates: usize,
    /// Beams the candidates are scored on: an even subsample of the filter's.
    pub coarse_beams: usize,
    /// Standard deviation of the smoothed field the candidates are scored on, metres.
    pub coarse_sigma: f64,
    /// How many of the best candidates are refined.
    pub keep: usize,
    /// Refinement rounds, each with half the step of the one before ...
    pub rounds: u32,
    /// ... and this many random steps each.
    pub tries: u32,
    /// The first round's step: standard deviations in metres ...
    pub step_d: f64,
    /// ... and radians.
    pub step_a: f64,
    /// A found pose is injected when its mean log-likelihood per beam beats the filter's
    /// best particle's by this much (nats per beam).
    pub margin: f64,
    /// The search runs every this many updates (and on every update while the fit is
    /// below its long-term average).
    pub every: u32,
    /// The share of the particles a found pose replaces.
    pub share: f64,
}

impl Default for SearchParams {
    fn default() -> Self {
        SearchParams {
            candidates: 2000,
            coarse_beams: 20,
            coarse_sigma: 0.5,
            keep: 8,
            rounds: 4,
            tries: 8,
            step_d: 0.2,
            step_a: 8f64.to_radians(),
            margin: 0.3,
            every: 4,
            share: 0.1,
        }
    }
}

/// The best poses found for one scan: `candidates` poses from `draw`, scored by `coarse`,
/// the `keep` best refined by local random steps scored by `fine`. Returns the refined
/// poses with their `fine` scores, best first.
pub fn search(
    rng: &mut Rng,
    p: &SearchParams,
    mut draw: impl FnMut(&mut Rng) -> Pose,
    coarse: impl Fn(&Pose) -> f64,
    fine: impl Fn(&Pose) -> f64,
) -> Vec<(Pose, f64)> {
    let mut scored: Vec<(f64, Pose)> = (0..p.candidates)
        .map(|_| {
            let c = draw(rng);
            (coarse(&c), c)
        })
        .collect();
    // Best first; a stable sort keeps equal scores in the order drawn (deterministic).
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.truncate(p.keep);
    let mut out: Vec<(Pose, f64)> = scored
        .into_iter()
        .map(|(_, start)| refine(rng, p, start, &fine))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// At most `n` of the valid beams of `b`, evenly spaced.
pub fn subsample(b: &Beams, n: usize) -> Beams {
    let idx: Vec<usize> = (0..b.end.len()).filter(|&k| b.valid[k]).collect();
    let m = n.min(idx.len());
    let mut out = Beams::default();
    for j in 0..m {
        let k = idx[j * idx.len() / m];
        out.end.push(b.end[k]);
        out.dir.push(b.dir[k]);
        out.range.push(b.range[k]);
        out.valid.push(true);
        out.n_valid += 1;
    }
    out
}

/// Local random search from `start`: each round tries `tries` Gaussian steps from the best
/// pose so far and keeps any that scores better; each round's step is half the last's.
fn refine(
    rng: &mut Rng,
    p: &SearchParams,
    start: Pose,
    fine: &impl Fn(&Pose) -> f64,
) -> (Pose, f64) {
    let mut best = (start, fine(&start));
    let mut scale = 1.0;
    for _ in 0..p.rounds {
        for _ in 0..p.tries {
            let b = best.0;
            let c = Pose::new(
                b.x + rng.normal(p.step_d * scale),
                b.y + rng.normal(p.step_d * scale),
                normalize(b.theta + rng.normal(p.step_a * scale)),
            );
            let s = fine(&c);
            if s > best.1 {
                best = (c, s);
            }
        }
        scale *= 0.5;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_peak_of_a_smooth_score_from_uniform_candidates() {
        // A score peaked at (3, -2, 1): the search lands within a few centimetres.
        let peak = Pose::new(3.0, -2.0, 1.0);
        let score = |q: &Pose| {
            let a = crate::pose::angle_diff(q.theta, peak.theta);
            -(q.distance(&peak).powi(2) / 0.5 + a * a / 0.3)
        };
        let mut rng = Rng::new(4);
        let p = SearchParams::default();
        let found = search(
            &mut rng,
            &p,
            |r| Pose::new(r.range(-5.0, 5.0), r.range(-5.0, 5.0), r.range(-3.1, 3.1)),
            score,
            score,
        );
        assert_eq!(found.len(), p.keep);
        assert!(found.windows(2).all(|w| w[0].1 >= w[1].1));
        let best = found[0].0;
        assert!(best.distance(&peak) < 0.1, "{best:?}");
        assert!(
            crate::pose::angle_diff(best.theta, 1.0).abs() < 0.1,
            "{best:?}"
        );
        // The same seed, the same poses.
        let again = search(
            &mut Rng::new(4),
            &p,
            |r| Pose::new(r.range(-5.0, 5.0), r.range(-5.0, 5.0), r.range(-3.1, 3.1)),
            score,
            score,
        );
        assert_eq!(found, again);
    }
}
