//! The odometry motion model of a differential-drive robot (Thrun, Burgard and Fox,
//! Probabilistic Robotics, table 5.6, `sample_motion_model_odometry`), with the noise
//! parameters Nav2's `nav2_amcl` documents for its "differential" model:
//!
//! - `alpha1`: rotation noise from rotation, `alpha2`: rotation noise from translation,
//! - `alpha3`: translation noise from translation, `alpha4`: translation noise from rotation.
//!
//! A motion from odometry pose `a` to `b` is read as a rotation `rot1` (towards the
//! direction of travel), a translation `trans` and a rotation `rot2`. Each sampled pose gets
//! `rot1` with noise of variance `alpha1 rot1^2 + alpha2 trans^2`, `trans` with variance
//! `alpha3 trans^2 + alpha4 (rot1^2 + rot2^2)` and `rot2` likewise. As Player's and Nav2's
//! model measure a rotation by its smaller angle to forward or backward travel, so that
//! driving backwards is not read as two half turns, a motion whose travel points behind the
//! robot is read here as driving backwards (`rot1 - pi`, `-trans`): the same motion.
//!
//! Two refinements, shared by the filter and the offline tool's noisy odometry:
//! - **Pieces.** A long motion is cut into pieces of at most `piece_d` metres and
//!   `piece_a` radians, each with its own noise: the turn `rot1` in turns on the spot, the
//!   run in straight runs, then the turn `rot2`. Odometry errs as it goes: its error grows
//!   with the distance (a random walk), not with its square as one draw over a long motion
//!   would have it. Each piece is Nav2's model for a motion of that kind (a turn: heading
//!   noise `alpha1`, drift `alpha4`; a run: heading noise `alpha2`, length noise `alpha3`),
//!   and the pieces compose exactly to the motion.
//! - **Pure rotations.** A motion whose travel is under [`PURE_ROTATION_D`] (0.05 m) counts
//!   as a turn on the spot: its creep is a short slide with the noise of its length alone,
//!   then the turn. (Nav2 does this below 0.01 m; a few centimetres of creep while turning
//!   would otherwise read as a sideways `rot1` of up to 90 degrees and spin the particles.)
//!   The nominal motion is kept exactly.

use std::f64::consts::{FRAC_PI_2, PI};

use crate::pose::{angle_diff, normalize, Pose};
use crate::rng::Rng;

/// A motion with less travel than this (metres) counts as a turn on the spot.
pub const PURE_ROTATION_D: f64 = 0.05;

/// The noise parameters (Nav2's alpha1-4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MotionNoise {
    /// Rotation noise from rotation, from translation; translation noise from translation,
    /// from rotation.
    pub alpha: [f64; 4],
    /// The longest piece a motion is cut into, metres.
    pub piece_d: f64,
    /// The largest turn of one piece, radians.
    pub piece_a: f64,
}

impl Default for MotionNoise {
    /// Nav2's documented alphas (0.2 each); pieces of 0.25 m and 0.2 rad.
    fn default() -> Self {
        MotionNoise {
            alpha: [0.2; 4],
            piece_d: 0.25,
            piece_a: 0.2,
        }
    }
}

/// One piece of a motion: its nominal decomposition and the magnitudes its noise is
/// computed from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Piece {
    /// Turn towards the direction of travel, radians.
    pub rot1: f64,
    /// Travel, metres.
    pub trans: f64,
    /// Turn after travelling, radians.
    pub rot2: f64,
    /// Standard deviations of the noise on rot1, trans and rot2.
    pub sigma: [f64; 3],
}

/// A turn on the spot of `step` radians, with Nav2's noise for a motion without travel.
fn turn(step: f64, alpha: &[f64; 4]) -> Piece {
    let a = step.abs();
    Piece {
        rot1: 0.0,
        trans: 0.0,
        rot2: step,
        sigma: [0.0, alpha[3].sqrt() * a, alpha[0].sqrt() * a],
    }
}

/// A straight run of `t` metres (negative: backwards), with Nav2's noise for a motion
/// without turns.
fn run(t: f64, alpha: &[f64; 4]) -> Piece {
    let d = t.abs();
    Piece {
        rot1: 0.0,
        trans: t,
        rot2: 0.0,
        sigma: [
            alpha[1].sqrt() * d,
            alpha[2].sqrt() * d,
            alpha[1].sqrt() * d,
        ],
    }
}

/// Pushes `total` radians of turning as turns of at most `max` each.
fn turns(out: &mut Vec<Piece>, total: f64, max: f64, alpha: &[f64; 4]) {
    if total == 0.0 {
        return;
    }
    let n = split(total.abs(), max);
    for _ in 0..n {
        out.push(turn(total / n as f64, alpha));
    }
}

/// How many pieces of at most `max` make `total` (at least 1, at most 10 000 however
/// long the motion: a jump in odometry).
fn split(total: f64, max: f64) -> usize {
    if max > 0.0 {
        (total / max).ceil().clamp(1.0, 10_000.0) as usize
    } else {
        1
    }
}

/// Cuts the motion from odometry pose `a` to `b` into pieces with their noise.
pub fn pieces(a: &Pose, b: &Pose, noise: &MotionNoise) -> Vec<Piece> {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let trans = dx.hypot(dy);
    let dtheta = angle_diff(b.theta, a.theta);
    let alpha = &noise.alpha;
    let mut out = Vec::new();
    if trans < PURE_ROTATION_D {
        // A turn on the spot: the creep as a short slide (exact, with the noise of its
        // length alone), then the turn.
        if trans > 0.0 {
            let dir = angle_diff(dy.atan2(dx), a.theta);
            let mut slide = run(trans, alpha);
            slide.rot1 = dir;
            slide.rot2 = -dir;
            out.push(slide);
        }
        turns(&mut out, dtheta, noise.piece_a, alpha);
        return out;
    }
    // Nav2's decomposition, driven backwards when the travel points behind the robot (the
    // same motion: turn rot1 - pi and run -trans).
    let mut rot1 = angle_diff(dy.atan2(dx), a.theta);
    let mut t = trans;
    if rot1.abs() > FRAC_PI_2 {
        rot1 = angle_diff(rot1, PI);
        t = -trans;
    }
    let rot2 = angle_diff(dtheta, rot1);
    turns(&mut out, rot1, noise.piece_a, alpha);
    let n = split(trans, noise.piece_d);
    for _ in 0..n {
        out.push(run(t / n as f64, alpha));
    }
    turns(&mut out, rot2, noise.piece_a, alpha);
    out
}

/// Moves `pose` by `piece` with noise drawn from `rng`.
#[inline]
pub fn sample(pose: &mut Pose, piece: &Piece, rng: &mut Rng) {
    let rot1 = piece.rot1 - rng.normal(piece.sigma[0]);
    let trans = piece.trans - rng.normal(piece.sigma[1]);
    let rot2 = piece.rot2 - rng.normal(piece.sigma[2]);
    let heading = pose.theta + rot1;
    pose.x += trans * heading.cos();
    pose.y += trans * heading.sin();
    pose.theta = normalize(heading + rot2);
}

/// Moves `pose` by every piece, without noise (the nominal motion).
pub fn apply_exact(pose: &mut Pose, pieces: &[Piece]) {
    for p in pieces {
        let heading = pose.theta + p.rot1;
        pose.x += p.trans * heading.cos();
        pose.y += p.trans * heading.sin();
        pose.theta = normalize(heading + p.rot2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nominal_pieces_reproduce_the_motion() {
        let noise = MotionNoise::default();
        for (a, b) in [
            (Pose::new(0.0, 0.0, 0.0), Pose::new(1.0, 0.2, 0.5)),
            (Pose::new(1.0, 2.0, 3.0), Pose::new(0.0, 1.0, -3.0)),
            (Pose::new(0.0, 0.0, 1.0), Pose::new(0.01, 0.0, -0.4)),
            (Pose::new(0.0, 0.0, 0.0), Pose::new(-2.0, 0.0, 0.0)),
            (Pose::new(0.0, 0.0, 0.0), Pose::new(-0.212, -0.033, -0.49)),
        ] {
            let ps = pieces(&a, &b, &noise);
            let mut p = a;
            apply_exact(&mut p, &ps);
            assert!(p.distance(&b) < 1e-9, "{a:?} -> {b:?}: {p:?}");
            assert!(angle_diff(p.theta, b.theta).abs() < 1e-9);
            assert!(ps.iter().all(|q| q.trans.abs() <= 0.25 + 1e-12));
            assert!(ps
                .iter()
                .all(|q| q.trans != 0.0 || q.rot2.abs() <= 0.2 + 1e-9));
        }
        // Straight back 2 m: eight runs backwards, no turn at all.
        let ps = pieces(&Pose::default(), &Pose::new(-2.0, 0.0, 0.0), &noise);
        assert_eq!(ps.len(), 8);
        assert!(ps
            .iter()
            .all(|q| q.trans == -0.25 && q.rot1 == 0.0 && q.rot2 == 0.0));
        // Backwards 21 cm while turning 28 degrees: no half turns, small noise.
        let ps = pieces(&Pose::default(), &Pose::new(-0.212, -0.033, -0.49), &noise);
        assert!(
            ps.iter().all(|q| q.sigma.iter().all(|&s| s < 0.25)),
            "{ps:?}"
        );
        // A 1 cm creep while turning 0.4 rad: a slide, then two turns.
        let ps = pieces(&Pose::default(), &Pose::new(0.0, 0.01, 0.4), &noise);
        assert_eq!(ps.len(), 3);
        assert!(ps[0].sigma[0] < 0.01 && ps[1].trans == 0.0 && ps[2].trans == 0.0);
    }

    #[test]
    fn sampled_spread_matches_the_model() {
        // One piece: 0.25 m straight, alphas 0.05: heading sd sqrt(2 * 0.05) * 0.25,
        // along-track sd sqrt(0.05) * 0.25.
        let noise = MotionNoise {
            alpha: [0.05; 4],
            ..MotionNoise::default()
        };
        let ps = pieces(&Pose::default(), &Pose::new(0.25, 0.0, 0.0), &noise);
        assert_eq!(ps.len(), 1);
        let mut rng = Rng::new(11);
        let n = 100_000;
        let (mut sx, mut sx2, mut st2) = (0.0, 0.0, 0.0);
        for _ in 0..n {
            let mut p = Pose::default();
            sample(&mut p, &ps[0], &mut rng);
            sx += p.x;
            sx2 += p.x * p.x;
            st2 += p.theta * p.theta;
        }
        let mx = sx / n as f64;
        let sdx = (sx2 / n as f64 - mx * mx).sqrt();
        let sdt = (st2 / n as f64).sqrt();
        let want_x = 0.05f64.sqrt() * 0.25;
        let want_t = (2.0 * 0.05f64).sqrt() * 0.25;
        assert!((mx - 0.25).abs() < 0.002, "{mx}");
        assert!((sdx / want_x - 1.0).abs() < 0.03, "{sdx} vs {want_x}");
        assert!((sdt / want_t - 1.0).abs() < 0.03, "{sdt} vs {want_t}");
        // Four runs of a 1 m motion: heading variance adds up, 4 x one run's.
        let ps = pieces(&Pose::default(), &Pose::new(1.0, 0.0, 0.0), &noise);
        assert_eq!(ps.len(), 4);
        let mut st2 = 0.0;
        for _ in 0..n {
            let mut p = Pose::default();
            for q in &ps {
                sample(&mut p, q, &mut rng);
            }
            st2 += p.theta * p.theta;
        }
        let sdt = (st2 / n as f64).sqrt();
        assert!((sdt / (2.0 * want_t) - 1.0).abs() < 0.03, "{sdt}");
    }
}
