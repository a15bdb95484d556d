//! Sensor and odometry noise: how readings stray from the truth, what they follow (the spot,
//! the seed, the instant), and the world file's noise keys.

use super::*;

/// Mean and standard deviation.
fn moments(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[test]
fn noisy_sonar_and_laser_jitter_about_the_truth_and_lose_a_few_echoes() {
    // A wall 1 m ahead of the front sonars (at 210 mm), met square on; nothing within the
    // laser's range to the sides.
    let map = || WorldMap::new("t", 30000.0, 30000.0).with_wall((6210.0, 0.0), (6210.0, 30000.0));
    let exact = robot_in(map(), 5000.0, 15000.0, 0.0);
    let (sonar3, laser180) = (exact.sonar()[3], exact.laser()[180]);
    assert_eq!((sonar3, laser180), (1000, 1210));
    let mut r = noisy(robot_in(map(), 5000.0, 15000.0, 0.0), 5);
    let (mut sonar, mut laser, mut lost) = (Vec::new(), Vec::new(), 0);
    let n = 4000;
    for k in 0..n {
        // Along the wall, 7 mm further at each reading: the sonar's error follows the spot
        // of the wall its echo comes from (a robot standing still reads the same, see
        // below), the laser's is fresh at every instant.
        r.set_true_pose(5000.0, 1000.0 + 7.0 * f64::from(k), 0.0);
        r.step(0.01);
        match r.sonar()[3] {
            5000 => lost += 1,
            s => sonar.push(f64::from(s)),
        }
        laser.push(f64::from(r.laser()[180]));
    }
    let (mean, sd) = moments(&sonar);
    assert!((mean - 1000.0).abs() < 2.0, "sonar mean {mean}");
    assert!((sd - 10.0).abs() < 1.5, "sonar sd {sd}");
    let dropout = f64::from(lost) / f64::from(n);
    assert!((0.01..0.03).contains(&dropout), "dropout {dropout}");
    let (mean, sd) = moments(&laser);
    assert!((mean - 1210.0).abs() < 1.0, "laser mean {mean}");
    assert!((sd - 5.0).abs() < 0.6, "laser sd {sd}");
    // Rays that hit nothing still read the maximum.
    assert_eq!(r.laser()[0], LASER_MAX_MM as u16);
}

#[test]
fn a_sonar_standing_still_reads_almost_the_same_every_time() {
    // Facing a box corner-on, where some rays of each cone reflect away and sides' ranges
    // are close: at rest the readings must not flicker.
    let map = || WorldMap::new("t", 10000.0, 10000.0).with_box((6000.0, 4000.0), (7000.0, 6000.0));
    for seed in 0..20 {
        let mut r = noisy(robot_in(map(), 5000.0, 4300.0, 20.0), seed);
        let mut rounds = Vec::new();
        for _ in 0..50 {
            r.step(0.1);
            rounds.push(r.sonar());
        }
        for k in 0..16 {
            let xs: Vec<f64> = rounds.iter().map(|s| f64::from(s[k])).collect();
            let (mean, sd) = moments(&xs);
            // No echo is lost or found at rest (that would be thousands of mm); the fresh
            // share of the error is 0.1 of the 1% (1 mm a metre, at least 1 mm). A fresh
            // 1% error at every reading would give 10 mm a metre.
            let bound = 3.0 * mean.max(1000.0) / 1000.0;
            assert!(
                sd <= bound,
                "seed {seed} sonar {k}: sd {sd:.1} mm about {mean:.0}"
            );
        }
    }
}

#[test]
fn a_robot_standing_still_sees_its_left_and_right_sums_in_the_same_order() {
    // The C++ avoider of 2000 turns toward the side whose sonars 0 + 1 or 6 + 7 sum larger:
    // near a corner of a room, with the two sums a few cm apart, their order must hold
    // reading after reading while the robot stands. (With a fresh 1% error per reading the
    // difference of the sums would jitter by 20 mm and swap every few readings.)
    let order = |s: [u16; 16]| {
        let left = i64::from(s[0]) + i64::from(s[1]);
        let right = i64::from(s[6]) + i64::from(s[7]);
        left - right
    };
    let mut tested = 0;
    for (seed, h) in (0..90).zip(0..90) {
        let heading = 180.0 + f64::from(h);
        let room = || WorldMap::new("t", 5000.0, 5000.0);
        let truth = order(robot_in(room(), 800.0, 900.0, heading).sonar());
        // Only poses whose sums are 2 cm to 30 cm apart: close, but an order to keep.
        if !(20..=300).contains(&truth.abs()) {
            continue;
        }
        tested += 1;
        let mut r = noisy(robot_in(room(), 800.0, 900.0, heading), seed);
        let mut seen = Vec::new();
        for _ in 0..50 {
            r.step(0.1);
            seen.push(order(r.sonar()).signum());
        }
        assert!(
            seen.iter().all(|&o| o == seen[0]),
            "seed {seed}, heading {heading}: left - right exactly {truth}, signs {seen:?}"
        );
    }
    assert!(tested >= 5, "only {tested} poses with close sums");
}

#[test]
fn noise_depends_on_seed_and_instant_not_on_how_often_it_is_read() {
    let map = || WorldMap::new("t", 10000.0, 10000.0).with_box((6000.0, 4000.0), (7000.0, 6000.0));
    let mut a = noisy(robot_in(map(), 5000.0, 5000.0, 0.0), 1);
    let mut b = noisy(robot_in(map(), 5000.0, 5000.0, 0.0), 1);
    let mut c = noisy(robot_in(map(), 5000.0, 5000.0, 0.0), 2);
    for _ in 0..10 {
        a.step(0.01);
        b.step(0.01);
        c.step(0.01);
        // Reading twice, or not at all, changes nothing.
        assert_eq!(a.laser(), a.laser());
        assert_eq!(a.sonar(), b.sonar());
        assert_eq!(a.laser(), b.laser());
    }
    assert_ne!(a.laser(), c.laser());
    let before = a.laser();
    a.step(0.01);
    assert_ne!(a.laser(), before, "a new instant, new noise");
}

#[test]
fn sonar_gets_no_echo_from_a_wall_met_at_a_grazing_angle() {
    // A wall along y = 6000, the robot heading 10 degrees right of it: sonar 3's rays (axis
    // 10 degrees left of the heading, so along the wall, +-15) that reach the wall meet it
    // at 75 to 90 degrees from its normal.
    let map = || WorldMap::new("t", 20000.0, 20000.0).with_wall((0.0, 6000.0), (20000.0, 6000.0));
    let exact = robot_in(map(), 5000.0, 5000.0, -10.0);
    assert!(exact.sonar()[3] < 5000, "{:?}", exact.sonar());
    let mut r = noisy(robot_in(map(), 5000.0, 5000.0, -10.0), 3);
    for _ in 0..200 {
        r.step(0.01);
        assert_eq!(r.sonar()[3], 5000);
        // The left sonar (0) faces the wall squarely and hears it, bar a dropout now and then.
    }
    let heard = (0..200)
        .filter(|_| {
            r.step(0.01);
            r.sonar()[0] < 5000
        })
        .count();
    assert!(heard > 180, "{heard}");
    // Turned to face it at 45 degrees, sonar 3 hears it again (rays 35 to 65 degrees off
    // the normal: some echo).
    let mut r = noisy(robot_in(map(), 5000.0, 5000.0, 35.0), 3);
    let heard = (0..200)
        .filter(|_| {
            r.step(0.01);
            r.sonar()[3] < 5000
        })
        .count();
    assert!(heard > 180, "{heard}");
}

#[test]
fn noisy_odometry_is_on_with_the_pioneer_noise() {
    let mut r = noisy(
        robot_in(WorldMap::new("t", 20000.0, 20000.0), 10000.0, 10000.0, 0.0),
        4,
    );
    r.set_velocity(300, 10);
    run(&mut r, 20.0);
    let p = r.position();
    let exact = {
        let mut e = robot_in(WorldMap::new("t", 20000.0, 20000.0), 10000.0, 10000.0, 0.0);
        e.set_velocity(300, 10);
        run(&mut e, 20.0);
        e.position()
    };
    assert_ne!((p.x, p.y), (exact.x, exact.y));
    assert!(
        (p.x - exact.x).abs() < 500 && (p.y - exact.y).abs() < 500,
        "{p:?} {exact:?}"
    );
}

#[test]
fn world_file_noise_keys() {
    let world = |extra: &str| {
        WorldMap::from_toml_str(&format!("[world]\nwidth = 1000\nheight = 1000\n{extra}"))
    };
    assert_eq!(*world("").unwrap().noise(), Noise::PIONEER);
    assert_eq!(*world("noise = false").unwrap().noise(), Noise::NONE);
    let custom = world(
        "seed = 3\nsonar_noise = 0.05\nsonar_dropout = 0.1\nsonar_specular = 45\n\
         laser_noise = 12\nodometry_noise = [0.1, 0.2]",
    )
    .unwrap();
    assert_eq!(
        *custom.noise(),
        Noise {
            odometry: Some((0.1, 0.2)),
            sonar_sigma: 0.05,
            sonar_dropout: 0.1,
            sonar_specular_deg: 45.0,
            laser_sigma_mm: 12.0,
        }
    );
    for (extra, key) in [
        ("sonar_dropout = 1.5", "world.sonar_dropout"),
        ("sonar_noise = -0.1", "world.sonar_noise"),
        ("sonar_specular = 120", "world.sonar_specular"),
        ("laser_noise = nan", "world.laser_noise"),
        ("odometry_noise = [0.1]", "world.odometry_noise"),
    ] {
        let e = world(extra).unwrap_err().to_string();
        assert!(e.contains(key), "{extra}: {e}");
    }
}
