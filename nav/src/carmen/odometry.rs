//! Seeded noisy odometry made from a log's reference motion, as a real robot's wheel
//! odometry errs: between each pair of consecutive reference poses, the motion is cut into
//! pieces of at most 0.25 m and 0.2 rad, and each piece is travelled with noise drawn from
//! Nav2's differential model with the given alpha1-4 ([`crate::amcl::motion`]; a motion of
//! under 0.05 m of travel counts as a pure rotation). The odometry starts at the origin of
//! its own frame, which is not the map's: the filter sees only its increments.

use crate::amcl::motion::{self, MotionNoise};
use crate::pose::Pose;
use crate::rng::Rng;

/// The noise the offline tool adds by default: alpha1-4 of 0.05 each.
pub const DEFAULT_NOISE: [f64; 4] = [0.05; 4];

/// The odometry pose at each reference pose, drawn from `rng`.
pub fn noisy(reference: &[Pose], alpha: [f64; 4], rng: &mut Rng) -> Vec<Pose> {
    let noise = MotionNoise {
        alpha,
        ..MotionNoise::default()
    };
    let mut odom = Pose::default();
    let mut out = Vec::with_capacity(reference.len());
    for (k, r) in reference.iter().enumerate() {
        if k > 0 {
            for piece in motion::pieces(&reference[k - 1], r, &noise) {
                motion::sample(&mut odom, &piece, rng);
            }
        }
        out.push(odom);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pose::angle_diff;

    #[test]
    fn without_noise_the_odometry_follows_the_reference_in_its_own_frame() {
        let reference = [
            Pose::new(3.0, 1.0, 0.5),
            Pose::new(3.8, 1.6, 0.9),
            Pose::new(3.8, 1.61, 2.0),
            Pose::new(1.0, 2.0, -2.5),
        ];
        let odom = noisy(&reference, [0.0; 4], &mut Rng::new(1));
        assert_eq!(odom[0], Pose::default());
        for k in 1..reference.len() {
            let want = reference[k - 1].relative(&reference[k]);
            let got = odom[k - 1].relative(&odom[k]);
            assert!((want.x - got.x).abs() < 1e-9 && (want.y - got.y).abs() < 1e-9);
            assert!(angle_diff(want.theta, got.theta).abs() < 1e-9);
        }
    }

    #[test]
    fn the_error_grows_with_the_distance_and_repeats_with_the_seed() {
        let reference: Vec<Pose> = (0..41)
            .map(|i| Pose::new(i as f64 * 0.5, 0.0, 0.0))
            .collect();
        let a = noisy(&reference, DEFAULT_NOISE, &mut Rng::new(5));
        let b = noisy(&reference, DEFAULT_NOISE, &mut Rng::new(5));
        assert_eq!(a, b);
        // Heading error after 20 m (80 pieces): sd sqrt(80 * 2 * 0.05) * 0.25 = 0.71 rad;
        // over many seeds its spread matches.
        let mut s2 = 0.0;
        for seed in 0..400 {
            let o = noisy(&reference, DEFAULT_NOISE, &mut Rng::new(seed));
            s2 += o[40].theta.powi(2);
        }
        let sd = (s2 / 400.0).sqrt();
        // Headings wrap at pi, which trims the spread a little.
        assert!((0.55..0.8).contains(&sd), "{sd}");
    }
}
