//! Lasers other than the default SICK: full scans (`L`), full circles, narrow fields of view
//! and the laser keys of a world file.

use super::*;

/// A TurtleBot-like laser: the full circle at 1 degree steps, 12 m.
const RPLIDAR: LaserSpec = LaserSpec {
    fov_deg: 360.0,
    resolution_deg: 1.0,
    max_mm: 12000.0,
};

#[test]
fn the_default_laser_s_full_scan_has_the_l_rays_and_0_for_no_return() {
    // A wall 1210 mm ahead; nothing within 8 m to the sides (no return there).
    let map = WorldMap::new("t", 30000.0, 30000.0).with_wall((6210.0, 0.0), (6210.0, 30000.0));
    let mut r = noisy(robot_in(map, 5000.0, 15000.0, 0.0), 5);
    r.step(0.01);
    let (scan, l) = (r.scan(), r.laser());
    assert_eq!(scan.angle_min, -1_570_796, "right end first: -90 degrees");
    assert_eq!(scan.angle_increment, 8727, "0.5 degrees");
    assert_eq!(scan.ranges.len(), LASER_SAMPLES);
    assert!(scan.intensities.is_none());
    for (k, (&s, &v)) in scan.ranges.iter().zip(l.iter()).enumerate() {
        let expected = if v == LASER_MAX_MM as u16 { 0 } else { v };
        assert_eq!(s, expected, "reading {k}");
    }
    assert!(l[180] > 1190 && l[180] < 1230, "ahead {}", l[180]);
    assert_eq!(scan.ranges[0], 0, "nothing to the right within range");
    // Its `l` view is exactly the `l` device.
    assert_eq!(scan.laser_view(LASER_MAX_MM as u32).ranges, l);
}

#[test]
fn a_full_circle_laser_scans_counter_clockwise_from_behind() {
    // A box 1 m to the robot's left (+y), nothing else within 12 m but the far walls.
    let map = WorldMap::new("t", 40000.0, 40000.0)
        .with_box((19500.0, 21000.0), (20500.0, 21500.0))
        .with_wall((0.0, 15000.0), (40000.0, 15000.0));
    let mut r = robot_in(map, 20000.0, 20000.0, 0.0);
    r.set_laser(RPLIDAR);
    let scan = r.scan();
    assert_eq!(scan.ranges.len(), 360);
    assert_eq!(scan.angle_min, -3_141_593, "first reading straight behind");
    assert_eq!(scan.angle_increment, 17453, "1 degree");
    // Angle of reading k: -180 + k degrees, counter-clockwise: the box (left, +90) is
    // reading 270; the wall 5 m to the right (-90) is reading 90.
    assert_eq!(scan.ranges[270], 1000, "left");
    assert_eq!(scan.ranges[90], 5000, "right");
    assert_eq!(scan.ranges[180], 0, "nothing ahead within 12 m");
    assert_eq!(scan.ranges[0], 0, "nothing behind within 12 m");
    // The `l` device is the view of this scan: the bins on whole degrees are its rays, no
    // return reads the maximum range, never 0.
    let l = r.laser();
    assert_eq!(l, scan.laser_view(12000).ranges);
    for j in 0..=180 {
        let ray = scan.ranges[j + 90];
        assert_eq!(
            l[2 * j],
            if ray == 0 { 12000 } else { ray },
            "bin {}",
            2 * j
        );
    }
    assert_eq!((l[360], l[0], l[180]), (1000, 5000, 12000));
}

#[test]
fn a_narrow_laser_s_l_view_reads_its_range_outside_its_field_of_view() {
    // Walls close on both sides; the laser sees only 90 degrees ahead.
    let map = WorldMap::new("t", 40000.0, 40000.0)
        .with_wall((0.0, 19000.0), (40000.0, 19000.0))
        .with_wall((0.0, 21000.0), (40000.0, 21000.0))
        .with_wall((22000.0, 0.0), (22000.0, 40000.0));
    let mut r = robot_in(map, 20000.0, 20000.0, 0.0);
    r.set_laser(LaserSpec {
        fov_deg: 90.0,
        resolution_deg: 0.25,
        max_mm: 6000.0,
    });
    let scan = r.scan();
    assert_eq!(scan.ranges.len(), 361, "both ends of 90 degrees at 0.25");
    let l = r.laser();
    assert_eq!(l[180], 2000, "the wall ahead");
    for i in (0..90).chain(271..361) {
        assert_eq!(l[i], 6000, "bin {i} is outside the field of view");
    }
    // The side walls are within the field of view at its ends (45 degrees): 1414 mm.
    assert!((l[90] as i32 - 1414).abs() <= 1 && (l[270] as i32 - 1414).abs() <= 1);
}

#[test]
fn other_robots_show_in_a_full_circle_scan_behind_too() {
    let map = WorldMap::from_toml_str(
        "[world]\nwidth = 40000\nheight = 40000\nnoise = false\n\
         [[robot]]\nname = \"tb\"\npose = [20000, 20000, 0]\nkind = \"turtlebot\"\n\
         laser_fov_deg = 360\nlaser_resolution_deg = 1.0\nlaser_max_mm = 12000\n\
         [[robot]]\nname = \"behind\"\npose = [18500, 20000, 0]\n",
    )
    .unwrap();
    assert_eq!(map.robots()[0].laser, RPLIDAR);
    assert_eq!(map.robots()[0].devices.as_deref(), Some(&b"pmlL"[..]));
    assert_eq!(map.robots()[1].laser, LaserSpec::default());
    let world = SimWorld::new(Arc::new(map));
    let scan = world.scan(0);
    assert_eq!(
        scan.ranges[0],
        1500 - ROBOT_RADIUS_MM as u16,
        "the robot behind"
    );
    assert_eq!(scan.ranges[180], 0);
    // The `l` view has no bin behind: the other robot is out of it.
    assert!(world.laser(0).iter().all(|&r| r == 12000));
}

#[test]
fn bad_laser_keys_are_rejected_by_name() {
    for (key, value) in [
        ("laser_fov_deg", "400"),
        ("laser_fov_deg", "0"),
        ("laser_resolution_deg", "-1"),
        ("laser_resolution_deg", "0.01"),
        ("laser_max_mm", "70000"),
    ] {
        let text = format!(
            "[world]\nwidth = 10000\nheight = 10000\n\
             [[robot]]\npose = [5000, 5000, 0]\n{key} = {value}\n"
        );
        let e = WorldMap::from_toml_str(&text).unwrap_err().to_string();
        assert!(e.contains(key), "{key} = {value}: {e}");
    }
}
