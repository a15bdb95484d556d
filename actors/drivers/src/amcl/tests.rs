//! Unit tests of the amcl driver's parameters and conversions.

use super::params::{AmclParams, InitialPose, MAX_BEAMS};
use super::wire;
use player_nav::amcl::cluster::Hypothesis;
use player_nav::amcl::Init;
use player_nav::pose::Pose;
use player_proto::data::Laser;
use player_proto::nav::{Localize, Particles, SetPose};
use player_proto::odometry::Odometry;

#[test]
fn defaults_are_the_documented_ones() {
    let s = AmclParams::default().check().unwrap();
    assert_eq!(
        (s.filter.min_particles, s.filter.max_particles),
        (500, 5000)
    );
    assert_eq!(s.seed, 1);
    assert_eq!(s.init, Init::Global);
    assert!(s.filter.recovery);
    assert!((s.filter.update_min_d - 0.2).abs() < 1e-12);
    assert!((s.filter.update_min_a - 10f64.to_radians()).abs() < 1e-12);
    assert_eq!(s.filter.motion.alpha, [0.2; 4]);
    assert_eq!(
        (s.odometry, s.laser, s.map, s.base),
        (b'P', None, b'M', b'O')
    );
    assert!((s.laser_max - 8.0).abs() < 1e-12);
    assert_eq!(s.filter.max_beams, 60);
}

#[test]
fn bad_values_name_their_key() {
    let cases: Vec<(AmclParams, &str)> = vec![
        (
            AmclParams {
                model: Some("sonar".into()),
                ..Default::default()
            },
            "'model'",
        ),
        (
            AmclParams {
                particles: Some([600, 500]),
                ..Default::default()
            },
            "'particles'",
        ),
        (
            AmclParams {
                particles: Some([1, 10_000_000]),
                ..Default::default()
            },
            "'particles'",
        ),
        (
            AmclParams {
                initial_pose: Some(InitialPose::Word("here".into())),
                ..Default::default()
            },
            "'initial_pose'",
        ),
        (
            AmclParams {
                initial_pose: Some(InitialPose::Pose([0.0, 0.0, 0.0, -1.0, 1.0, 1.0])),
                ..Default::default()
            },
            "'initial_pose'",
        ),
        (
            AmclParams {
                alpha3: Some(f64::NAN),
                ..Default::default()
            },
            "'alpha3'",
        ),
        (
            AmclParams {
                laser: Some("s".into()),
                ..Default::default()
            },
            "'laser'",
        ),
        (
            AmclParams {
                odometry: Some("PP".into()),
                ..Default::default()
            },
            "'odometry'",
        ),
        (
            AmclParams {
                max_beams: Some(0),
                ..Default::default()
            },
            "'max_beams'",
        ),
        (
            AmclParams {
                max_beams: Some(MAX_BEAMS + 1),
                ..Default::default()
            },
            "'max_beams'",
        ),
    ];
    for (p, key) in cases {
        let e = p.check().unwrap_err();
        assert!(e.text.contains(key), "{e} should name {key}");
    }
}

#[test]
fn an_initial_pose_is_a_gaussian_in_metres_and_radians() {
    let p = AmclParams {
        initial_pose: Some(InitialPose::Pose([
            1000.0, -500.0, 90.0, 100.0, 200.0, 10.0,
        ])),
        update_min: Some([100.0, 5.0]),
        max_beams: Some(30),
        ..Default::default()
    };
    let s = p.check().unwrap();
    assert_eq!(s.filter.max_beams, 30);
    let Init::Pose(m, c) = s.init else {
        panic!("{:?}", s.init)
    };
    assert!((m.x - 1.0).abs() < 1e-12 && (m.y + 0.5).abs() < 1e-12);
    assert!((m.theta - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    assert!((c[0][0] - 0.01).abs() < 1e-12 && (c[1][1] - 0.04).abs() < 1e-12);
    assert!((c[2][2] - 10f64.to_radians().powi(2)).abs() < 1e-12);
    assert!((s.filter.update_min_d - 0.1).abs() < 1e-12);
}

#[test]
fn odometry_of_both_layouts_reads_in_metres_and_radians() {
    let o = Odometry {
        time: 1234,
        x: 1500,
        y: -20,
        heading: 270 * 3600,
        speed: 300,
        turn_rate: -7200,
        stall: 0,
    };
    let r = wire::odometry(&o.encode()).unwrap();
    assert!((r.pose.x - 1.5).abs() < 1e-12 && (r.pose.y + 0.02).abs() < 1e-12);
    assert!((r.pose.theta + std::f64::consts::FRAC_PI_2).abs() < 1e-9);
    assert_eq!((r.time, r.speed, r.compass), (1234, 300, None));
    assert!((r.turn_rate + 2.0).abs() < 1e-12);
    let p = player_proto::data::Position {
        time: 5,
        x: 10,
        y: 20,
        heading: 180,
        speed: -3,
        turn_rate: 4,
        compass: 77,
        stall: 1,
    };
    let r = wire::odometry(&p.encode()).unwrap();
    assert_eq!((r.compass, r.stall, r.time), (Some(77), 1, 5));
    assert!((r.pose.theta - std::f64::consts::PI).abs() < 1e-9);
    assert!(wire::odometry(&[0; 7]).is_none());
}

#[test]
fn a_laser_reading_is_a_scan_from_the_right_with_far_readings_no_return() {
    let mut l = Laser {
        ranges: [8000; 361],
    };
    l.ranges[180] = 1234;
    let s = wire::laser(&l.encode(), 8.0, Pose::default()).unwrap();
    assert_eq!(s.ranges.len(), 361);
    assert!((s.angles[0] + std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    assert!(s.angles[180].abs() < 1e-12);
    assert!((s.ranges[180] - 1.234).abs() < 1e-12 && s.ranges[0] >= s.max_range);
}

#[test]
fn hypotheses_go_out_in_player_units_and_set_pose_comes_back() {
    let h = Hypothesis {
        mean: Pose::new(1.2345, -0.5, -std::f64::consts::FRAC_PI_2),
        cov: [[0.01, 0.0, 0.001], [0.0, 0.04, 0.0], [0.001, 0.0, 0.0025]],
        weight: 0.75,
    };
    let l = wire::localize(&[h], 1, (12, 345_000));
    let b = Localize::decode(&l.encode().unwrap()).unwrap();
    let x = &b.hypotheses[0];
    assert_eq!(x.mean, [1235, -500, -90 * 3600]);
    assert_eq!(x.cov[0][0], 10_000);
    assert_eq!(x.cov[1][1], 40_000);
    let a = player_proto::odometry::ARCSEC_PER_RAD;
    assert_eq!(x.cov[2][2], (0.0025 * a * a).round() as i64);
    assert_eq!(x.cov[0][2], (0.001 * 1000.0 * a).round() as i64);
    assert_eq!(
        (x.alpha, b.pending_count, b.pending_time_sec),
        (750_000, 1, 12)
    );
    let (m, c) = wire::set_pose(&SetPose {
        mean: x.mean,
        cov: x.cov,
    });
    assert!((m.x - 1.235).abs() < 1e-9 && (m.theta + std::f64::consts::FRAC_PI_2).abs() < 1e-9);
    assert!((c[2][2] - 0.0025).abs() < 1e-6 && (c[0][2] - 0.001).abs() < 1e-6);
}

#[test]
fn particles_come_in_packets_of_a_hundred_with_their_index() {
    let poses: Vec<Pose> = (0..250)
        .map(|i| Pose::new(i as f64 * 0.01, 1.0, 0.0))
        .collect();
    let weights = vec![1.0 / 250.0; 250];
    let bodies = wire::particles(&poses, &weights, 80);
    assert_eq!(bodies.len(), 3);
    let p: Vec<Particles> = bodies
        .iter()
        .map(|b| Particles::decode(b).unwrap())
        .collect();
    assert_eq!(
        p.iter()
            .map(|x| (x.first, x.particles.len(), x.total))
            .collect::<Vec<_>>(),
        vec![(0, 100, 250), (100, 100, 250), (200, 50, 250)]
    );
    assert_eq!(p[2].particles[49].pose, [2490, 1000, 0]);
    assert_eq!(p[0].mean, [1245, 1000, 0]);
    assert_eq!(p[0].particles[0].alpha, 4000);
    assert_eq!(wire::particles(&poses, &weights, 2).len(), 2);
}

#[test]
fn interpolation_takes_the_short_way_round() {
    let a = Pose::new(0.0, 0.0, 3.0);
    let b = Pose::new(1.0, 2.0, -3.0);
    let m = wire::between(&a, &b, 0.5);
    assert!((m.x - 0.5).abs() < 1e-12 && (m.y - 1.0).abs() < 1e-12);
    assert!((m.theta.abs() - std::f64::consts::PI).abs() < 1e-9);
}

#[test]
fn only_the_faces_of_a_solid_stay_occupied() {
    // A 5 x 4 grid: free on the left column, a solid block of 4 x 4 to its right.
    let f = -1i8;
    let cells = [
        f, 1, 1, 1, 1, //
        f, 1, 1, 1, 1, //
        f, 1, 1, 1, 1, //
        f, 1, 1, 1, 1, //
    ];
    let s = super::surfaces(&cells, 5, 4);
    for row in 0..4 {
        assert_eq!(&s[row * 5..row * 5 + 5], &[f, 1, 0, 0, 0], "row {row}");
    }
    assert_eq!(super::surfaces(&[f, 1, 0], 3, 1), vec![f, 1, 0]);
    assert_eq!(super::surfaces(&[1, 0, f], 3, 1), vec![0, 0, f]);
}
