//! Sonar and laser against geometry checked by hand, and how fast a robot senses.

use super::*;

#[test]
fn laser_and_front_sonars_see_a_wall_ahead() {
    // Wall across x = 3000; the robot (laser at its centre) at x = 2000 facing +x.
    let map = WorldMap::new("t", 10000.0, 10000.0).with_wall((3000.0, 0.0), (3000.0, 10000.0));
    let r = robot_in(map, 2000.0, 5000.0, 0.0);
    let laser = r.laser();
    assert!(near(f64::from(laser[180]), 1000.0, 10.0), "{}", laser[180]);
    // 10 degrees off axis: 1000 / cos 10 = 1015.4.
    assert!(near(f64::from(laser[160]), 1015.0, 2.0), "{}", laser[160]);
    let sonar = r.sonar();
    // Sonars 3 and 4 sit at x = 210 mm: 1000 - 210 = 790 along their perpendicular ray.
    assert!(near(f64::from(sonar[3]), 790.0, 30.0), "{sonar:?}");
    assert!(near(f64::from(sonar[4]), 790.0, 30.0), "{sonar:?}");
    // Sonars 11 and 12 (x = -210 mm) look back at the world's west edge, 2000 mm behind.
    assert!(near(f64::from(sonar[11]), 1790.0, 1.0), "{sonar:?}");
    assert!(near(f64::from(sonar[12]), 1790.0, 1.0), "{sonar:?}");
    // Sonar 0 (at x = 115 mm, facing left) catches the wall with the right edge of its cone,
    // the ray at 90 - 15 = 75 degrees: (1000 - 115) / cos 75.
    assert!(near(f64::from(sonar[0]), 3419.0, 1.0), "{sonar:?}");
}

#[test]
fn laser_mounted_ahead_of_centre_measures_from_its_mount() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_wall((3000.0, 0.0), (3000.0, 10000.0));
    let r = SimRobot::new(
        Arc::new(map),
        RobotParams {
            start_pose: Some((2000.0, 5000.0, 0.0)),
            laser_x_mm: 160.0,
            ..RobotParams::default()
        },
    );
    assert_eq!(r.laser()[180], 840);
}

#[test]
fn laser_index_0_is_right_and_360_is_left() {
    // A big world (edges > 8 m away) with one wall 1500 mm to the robot's left only.
    let map = WorldMap::new("t", 20000.0, 20000.0).with_wall((9000.0, 11500.0), (11000.0, 11500.0));
    let r = robot_in(map, 10000.0, 10000.0, 0.0);
    let laser = r.laser();
    assert_eq!(laser[360], 1500);
    assert_eq!(laser[0], 8000);
    assert_eq!(laser[180], 8000);
    // Turned round (facing -x) the same wall is on the right.
    let map = WorldMap::new("t", 20000.0, 20000.0).with_wall((9000.0, 11500.0), (11000.0, 11500.0));
    let r = robot_in(map, 10000.0, 10000.0, 180.0);
    let laser = r.laser();
    assert_eq!(laser[0], 1500);
    assert_eq!(laser[360], 8000);
    // Sonar 0 looks left, sonar 7 right (mounted 130 mm off the centre line).
    let sonar = r.sonar();
    assert_eq!(sonar[7], 1500 - 130);
    assert_eq!(sonar[0], 5000);
}

#[test]
fn sensing_is_fast() {
    let map = Arc::new(WorldMap::default_room());
    let r = SimRobot::new(map, RobotParams::default());
    let start = std::time::Instant::now();
    let n = 20;
    for _ in 0..n {
        std::hint::black_box(r.laser());
        std::hint::black_box(r.sonar());
        std::hint::black_box(r.vision());
    }
    let per_scan = start.elapsed() / n;
    // Well under 1 ms in release; allow an unoptimised test build plenty of slack.
    assert!(per_scan.as_millis() < 20, "{per_scan:?}");
}
