//! The SI conversions of the navigation layouts, checked through the layouts' own decoders
//! and encoders.

use super::*;
use crate::nav::Particle;

#[test]
fn the_best_hypothesis_is_in_metres_and_radians() {
    let l = Localize {
        hypotheses: vec![Hypothesis {
            mean: [1500, -250, 324_000],
            cov: [[10_000, 0, 0], [0, 40_000, 0], [0, 0, 1_296_000_000]],
            alpha: 750_000,
        }],
        ..Localize::default()
    };
    let (m, c, w) = best_pose(&l).unwrap();
    assert_eq!(m[..2], [1.5, -0.25]);
    assert!((m[2] - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    assert!((c[0][0] - 0.01).abs() < 1e-12 && (c[1][1] - 0.04).abs() < 1e-12);
    assert!((c[2][2] - 10f64.to_radians().powi(2)).abs() < 1e-12);
    assert_eq!(w, 0.75);
    assert!(best_pose(&Localize::default()).is_none());
}

#[test]
fn the_odometry_frame_lands_where_the_two_poses_agree() {
    let map = [2.0, 1.0, std::f64::consts::FRAC_PI_2];
    let odom = [1.0, 0.0, 0.0];
    let t = map_to_odom(map, odom);
    // The odometry pose carried by t gives the map pose back.
    let (s, c) = t[2].sin_cos();
    let back = [
        t[0] + c * odom[0] - s * odom[1],
        t[1] + s * odom[0] + c * odom[1],
        t[2] + odom[2],
    ];
    for k in 0..3 {
        assert!((back[k] - map[k]).abs() < 1e-12, "{back:?}");
    }
}

#[test]
fn particles_of_several_bodies_come_in_index_order() {
    let body = |first: u32, n: i32| {
        Particles {
            particles: (0..n)
                .map(|i| Particle {
                    pose: [first as i32 + i, 0, 0],
                    alpha: 1000,
                })
                .collect(),
            first,
            total: 150,
            ..Particles::default()
        }
        .encode()
        .unwrap()
    };
    let (a, b) = (body(0, 100), body(100, 50));
    let p = particles([&b[..], &a[..], &b"junk"[..]]);
    assert_eq!(p.len(), 150);
    for (i, (pose, w)) in p.iter().enumerate() {
        assert_eq!(pose[0], i as f64 / 1000.0);
        assert_eq!(*w, 0.001);
    }
}

#[test]
fn a_pose_estimate_and_a_goal_become_the_devices_layouts() {
    let cov = [[0.25, 0.0, 0.0], [0.0, 0.25, 0.0], [0.0, 0.0, 0.0685]];
    let p = set_pose([1.0, -2.0, -std::f64::consts::FRAC_PI_2], cov).unwrap();
    let s = SetPose::decode(&p).unwrap();
    assert_eq!(s.mean, [1000, -2000, -324_000]);
    assert_eq!(s.cov[0][0], 250_000);
    assert!(set_pose([f64::NAN, 0.0, 0.0], cov).is_none());
    let g = Goal::decode(&goal([3.0, -0.4, std::f64::consts::FRAC_PI_4]).unwrap()).unwrap();
    assert_eq!((g.x, g.y, g.a), (3000, -400, 45));
    assert!(goal([0.0, f64::INFINITY, 0.0]).is_none());
    let w = Waypoints(vec![[500, 0, 90]]).encode().unwrap();
    let got = waypoints(&w).unwrap();
    assert_eq!(got[0][..2], [0.5, 0.0]);
    assert!((yaw([0.0, 0.0, (0.3f64).sin(), (0.3f64).cos()]) - 0.6).abs() < 1e-12);
}

#[test]
fn values_beyond_a_field_saturate_and_angles_come_back_normalized() {
    let g = Goal::decode(&goal([1e300, -1e300, 3.0 * std::f64::consts::PI]).unwrap()).unwrap();
    assert_eq!((g.x, g.y, g.a), (i32::MAX, i32::MIN, 180));
    let huge = [[1e300, 0.0, 0.0], [0.0, -1e300, 0.0], [0.0, 0.0, 1e300]];
    let s = SetPose::decode(&set_pose([0.0, 0.0, -7.0], huge).unwrap()).unwrap();
    assert_eq!(
        [s.cov[0][0], s.cov[1][1], s.cov[2][2]],
        [i64::MAX, i64::MIN, i64::MAX]
    );
    assert_eq!(s.mean[2], rad_to_arcsec(normalize(-7.0)));
    assert_eq!(rad_to_arcsec(1e20), i32::MAX);
    assert_eq!(normalize(-std::f64::consts::PI), std::f64::consts::PI);
    assert!((arcsec_to_rad(f64::from(rad_to_arcsec(1.0))) - 1.0).abs() < 1e-5);
}

#[test]
fn yaw_is_the_rotations_whatever_the_quaternions_length() {
    use std::f64::consts::FRAC_PI_2;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // A quarter turn about Z, of length sqrt 2, huge, tiny.
    for s in [1.0, 1e200, 1e-200, -3.0] {
        assert!(close(yaw([0.0, 0.0, s, s]), FRAC_PI_2), "scale {s}");
    }
    // w z and x y overflow to +inf and -inf when multiplied as they come.
    let q = [-1e200, 2e200, 3e200, 1e200];
    assert!(close(yaw(q), 2f64.atan2(-11.0)), "{}", yaw(q));
    // A unit quaternion of roll and yaw.
    let (r, y) = (0.3f64, -2.0f64);
    let (sr, cr, sy, cy) = (
        (r / 2.0).sin(),
        (r / 2.0).cos(),
        (y / 2.0).sin(),
        (y / 2.0).cos(),
    );
    assert!(close(yaw([sr * cy, sr * sy, cr * sy, cr * cy]), y));
    assert_eq!(yaw([0.0; 4]), 0.0, "no orientation, no turn");
    assert!(yaw([f64::NAN, 0.0, 0.0, 1.0]).is_nan());
}
