//! The navigation layouts in SI units: what a front end (the web viewer, ROS 2, Zenoh, the
//! recorder) turns the devices' integers into and back, pure (no clock, no I/O). Readings
//! of the localizer and the planner in metres and radians ([`best_pose`], [`particles`],
//! [`waypoints`], [`map_to_odom`]) and the other way a client's pose estimate and goal as
//! the localizer's config and the planner's command ([`set_pose`], [`goal`]), with the
//! unit conversions they share ([`arcsec_to_rad`], [`rad_to_arcsec`], [`normalize`],
//! [`yaw`]).
//!
//! Values going into a layout are rounded and saturated to the field's range, never
//! wrapped; a non-finite value is refused. The front ends' kit
//! (`player_core::frontend::nav`) re-exports all of this, and the pure crates
//! (`player-foxglove`, `player-ros2-msg`) use it from here.

use super::{Goal, Hypothesis, Localize, Particles, SetPose, Waypoints};

/// The most particles put together from one answer (the answer's own bound keeps it far
/// below: the kit's `player_kit::answer::MAX_ANSWER_BYTES`, 128 KiB, holds about 8,000).
pub const MAX_PARTICLES: usize = 10_000;

/// Arc-seconds per radian.
const ARCSEC_PER_RAD: f64 = 180.0 * 3600.0 / std::f64::consts::PI;

/// A pose in the map: x, y (m), heading (rad).
pub type Pose2 = [f64; 3];

/// Arc-seconds to radians.
pub fn arcsec_to_rad(a: f64) -> f64 {
    a / ARCSEC_PER_RAD
}

/// Radians to arc-seconds, rounded and saturated to an `i32`.
pub fn rad_to_arcsec(r: f64) -> i32 {
    saturate(r * ARCSEC_PER_RAD)
}

fn saturate(v: f64) -> i32 {
    v.round().clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
}

fn saturate64(v: f64) -> i64 {
    v.round().clamp(i64::MIN as f64, i64::MAX as f64) as i64
}

/// The localizer's heaviest hypothesis: its mean (m, m, rad), its covariance (row-major
/// 3 x 3 of x, y, heading in m and rad) and its weight (0 to 1). `None` without one.
pub fn best_pose(l: &Localize) -> Option<(Pose2, [[f64; 3]; 3], f64)> {
    let h: &Hypothesis = l.hypotheses.first()?;
    let mean = [
        f64::from(h.mean[0]) / 1000.0,
        f64::from(h.mean[1]) / 1000.0,
        arcsec_to_rad(f64::from(h.mean[2])),
    ];
    // Per axis: mm -> m, arc-seconds -> rad.
    let unit = [1e-3, 1e-3, arcsec_to_rad(1.0)];
    let mut cov = [[0.0; 3]; 3];
    for (i, row) in cov.iter_mut().enumerate() {
        for (j, c) in row.iter_mut().enumerate() {
            *c = h.cov[i][j] as f64 * unit[i] * unit[j];
        }
    }
    Some((mean, cov, f64::from(h.alpha) / 1e6))
}

/// Where the odometry frame lies in the map, given the robot's pose in the map and in its
/// odometry frame at the same time: `map_pose * odom_pose^-1`.
pub fn map_to_odom(map_pose: Pose2, odom_pose: Pose2) -> Pose2 {
    let th = normalize(map_pose[2] - odom_pose[2]);
    let (s, c) = th.sin_cos();
    [
        map_pose[0] - (c * odom_pose[0] - s * odom_pose[1]),
        map_pose[1] - (s * odom_pose[0] + c * odom_pose[1]),
        th,
    ]
}

/// An angle in (-pi, pi].
pub fn normalize(a: f64) -> f64 {
    let t = a.rem_euclid(std::f64::consts::TAU);
    if t > std::f64::consts::PI {
        t - std::f64::consts::TAU
    } else {
        t
    }
}

/// The particles of one `x H g` answer (its bodies, in any order) as poses in metres and
/// radians with their weights, in index order; bodies that do not decode are skipped and
/// at most [`MAX_PARTICLES`] are taken.
pub fn particles<'a>(bodies: impl IntoIterator<Item = &'a [u8]>) -> Vec<(Pose2, f64)> {
    let mut parts: Vec<Particles> = bodies
        .into_iter()
        .filter_map(|b| Particles::decode(b).ok())
        .collect();
    parts.sort_by_key(|p| p.first);
    parts
        .iter()
        .flat_map(|p| &p.particles)
        .take(MAX_PARTICLES)
        .map(|p| {
            let pose = [
                f64::from(p.pose[0]) / 1000.0,
                f64::from(p.pose[1]) / 1000.0,
                arcsec_to_rad(f64::from(p.pose[2])),
            ];
            (pose, f64::from(p.alpha) / 1e6)
        })
        .collect()
}

/// The waypoints of an `x G w` answer's body: x, y (m) and heading (rad).
pub fn waypoints(body: &[u8]) -> Option<Vec<Pose2>> {
    let w = Waypoints::decode(body).ok()?;
    Some(
        w.0.iter()
            .map(|p| {
                [
                    f64::from(p[0]) / 1000.0,
                    f64::from(p[1]) / 1000.0,
                    f64::from(p[2]).to_radians(),
                ]
            })
            .collect(),
    )
}

/// A pose estimate from a client (m, rad; covariance of x, y, heading in m and rad) as
/// the `x H s` config's payload ([`SetPose`], its code first). Non-finite values are
/// refused.
pub fn set_pose(mean: Pose2, cov: [[f64; 3]; 3]) -> Option<Vec<u8>> {
    if mean
        .iter()
        .chain(cov.iter().flatten())
        .any(|v| !v.is_finite())
    {
        return None;
    }
    let unit = [1e3, 1e3, ARCSEC_PER_RAD];
    let mut c = [[0i64; 3]; 3];
    for (i, row) in c.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            *v = saturate64(cov[i][j] * unit[i] * unit[j]);
        }
    }
    let p = SetPose {
        mean: [
            saturate(mean[0] * 1e3),
            saturate(mean[1] * 1e3),
            rad_to_arcsec(normalize(mean[2])),
        ],
        cov: c,
    };
    Some(p.encode())
}

/// A goal from a client (m, m, rad) as the planner's 12-byte command ([`Goal`]).
/// Non-finite values are refused.
pub fn goal(pose: Pose2) -> Option<Vec<u8>> {
    if pose.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let g = Goal {
        x: saturate(pose[0] * 1e3),
        y: saturate(pose[1] * 1e3),
        a: saturate(normalize(pose[2]).to_degrees()),
    };
    Some(g.encode())
}

/// The yaw of a quaternion (x, y, z, w), rad: of the rotation it stands for, whatever its
/// length, as ROS's tf2 reads one (a quaternion written by hand, `{z: 1, w: 1}`, is a
/// quarter turn). Components too large to square or too small are scaled first, so
/// nothing overflows or vanishes. A zero quaternion is no turn; a non-finite component
/// gives NaN.
pub fn yaw(q: [f64; 4]) -> f64 {
    let big = q.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    // Squares and products of components in this range are normal floats.
    let [x, y, z, w] = if big == 0.0 || (1e-100..=1e100).contains(&big) {
        q
    } else {
        q.map(|c| c / big)
    };
    // Both terms scale with the square of the length, so their angle does not.
    (2.0 * (w * z + x * y)).atan2(w * w + x * x - y * y - z * z)
}

#[cfg(test)]
mod tests;
