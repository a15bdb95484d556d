//! Readings through the indexes and the kept castings: the same as casting every ray at every
//! solid, and recast when anything they came from moves.

use super::*;

#[test]
fn readings_through_the_indexes_are_those_among_every_robot_and_solid() {
    // A crowd of robots (noisy sensors, the world file's default) among walls, boxes and
    // pillars: the sonar and laser each robot reads through the robot and solid indexes
    // are those cast at every robot and every solid.
    let mut text = String::from(
        "[world]\nwidth = 30000\nheight = 20000\nseed = 4\n\
         [[swarm]]\ncount = 300\npattern = \"random\"\nkind = \"pioneer\"\n",
    );
    for k in 0..12 {
        let x = 1000.0 + 2300.0 * f64::from(k);
        text.push_str(&format!(
            "[[wall]]\nfrom = [{x}, 2000]\nto = [{}, 9000]\n\
             [[pillar]]\ncenter = [{x}, 15000]\nradius = 150\n\
             [[box]]\nmin = [{x}, 11000]\nmax = [{}, 11400]\n",
            x + 900.0,
            x + 500.0
        ));
    }
    let mut w = SimWorld::new(Arc::new(WorldMap::from_toml_str(&text).unwrap()));
    for i in 0..w.len() {
        w.controls(i).set_velocity(200, (i % 7) as i16 * 10 - 30);
    }
    w.run(1.0);
    for i in 0..w.len() {
        let others = w.others(i);
        let r = w.robot(i);
        assert_eq!(w.sonar(i), r.sonar_among(&others), "robot {i}'s sonar");
        assert_eq!(w.laser(i), r.laser_among(&others), "robot {i}'s laser");
        let (x, y, th) = r.true_pose();
        // The whole map cast ray by ray, for the laser (exact sensors only: noise is the
        // same either way).
        let walls = r.map().solids_near(geom::Vec2::new(x, y), LASER_MAX_MM);
        for k in 0..LASER_SAMPLES {
            let a = th + (-90.0 + 0.5 * k as f64).to_radians();
            assert_eq!(
                walls.range(
                    geom::Vec2::new(x, y),
                    geom::Vec2::from_angle(a),
                    LASER_MAX_MM
                ),
                r.map().range(geom::Vec2::new(x, y), a, LASER_MAX_MM),
                "robot {i} ray {k}"
            );
        }
    }
}

#[test]
fn laser_cast_by_windows_reads_as_every_ray_at_every_solid() {
    // Walls, boxes and pillars at every angle, and poses touching them, inside a box or a
    // pillar, on a wall's line and at the world's corners: the laser that casts each solid
    // only at the rays of its angle must read what casting every ray at every solid reads
    // (`laser_with` and `scan_with` do that), noise and all, whatever the laser.
    let map = WorldMap::new("windows", 12000.0, 9000.0)
        .with_wall((1000.0, 1000.0), (5000.0, 1000.0))
        .with_wall((6000.0, 2000.0), (6000.0, 8000.0))
        .with_wall((2000.0, 7000.0), (4000.0, 5000.0))
        .with_box((7000.0, 3000.0), (7600.0, 3400.0))
        .with_box((2500.0, 2500.0), (3000.0, 4000.0))
        .with_pillar((9000.0, 6000.0), 300.0)
        .with_pillar((4500.0, 3000.0), 150.0)
        .with_noise(Noise::PIONEER);
    let lasers = [
        LaserSpec::default(),
        LaserSpec {
            fov_deg: 360.0,
            resolution_deg: 1.0,
            max_mm: 12000.0,
        },
        LaserSpec {
            fov_deg: 270.0,
            resolution_deg: 0.25,
            max_mm: 5600.0,
        },
        LaserSpec {
            fov_deg: 359.0,
            resolution_deg: 0.5,
            max_mm: 8000.0,
        },
    ];
    let mut poses = vec![
        (3000.0, 1000.0, 0.0),
        (500.0, 1000.0, 0.0),
        (6000.0, 1000.0, 90.0),
        (6000.0, 5000.0, 180.0),
        (3000.0, 6000.0, -45.0),
        (7300.0, 3200.0, 10.0),
        (7000.0, 3000.0, 225.0),
        (9000.0, 6000.0, 30.0),
        (9000.0, 6301.0, -90.0),
        (0.0, 0.0, 45.0),
        (12000.0, 9000.0, 180.0),
        (4500.0, 2849.5, 90.0),
    ];
    let mut rng = super::rng::Rng::new(23);
    for _ in 0..300 {
        poses.push((
            rng.uniform() * 12000.0,
            rng.uniform() * 9000.0,
            rng.uniform() * 720.0 - 360.0,
        ));
    }
    let map = Arc::new(map);
    for laser in lasers {
        for (k, &(x, y, h)) in poses.iter().enumerate() {
            let mut r = SimRobot::new(
                map.clone(),
                RobotParams {
                    start_pose: Some((x, y, f64::to_radians(h))),
                    laser_x_mm: if k % 2 == 0 { 0.0 } else { 160.0 },
                    laser,
                    ..RobotParams::default()
                },
            );
            r.set_noise(Noise::PIONEER, k as u64);
            let none: &[Body] = &[];
            assert_eq!(r.laser(), r.laser_with(&none), "{laser:?} at {x}, {y}, {h}");
            assert_eq!(r.scan(), r.scan_with(&none), "{laser:?} at {x}, {y}, {h}");
        }
    }
}

#[test]
fn laser_and_scan_of_one_casting_read_as_each_alone() {
    let mut w = SimWorld::new(Arc::new(WorldMap::default_room()));
    w.add_robot("other", (3000.0, 2500.0, 0.5), None);
    for k in 0..20 {
        w.controls(0)
            .set_velocity(300, if k % 4 < 2 { 30 } else { -40 });
        w.run(0.3);
        let (laser, scan) = w.laser_and_scan(0);
        assert_eq!(laser, w.laser(0), "after {k} steps");
        assert_eq!(scan, w.scan(0), "after {k} steps");
    }
}

/// A robot's laser (`l`), full scan ranges (`L`) and sonar.
type Readings = (Vec<u16>, Vec<u16>, [u16; 16]);

/// Robot `i`'s laser, full scan and sonar, and the same read by a copy of it (a copy keeps
/// no casting: it casts afresh).
fn readings_and_fresh(w: &SimWorld, i: usize) -> (Readings, Readings) {
    let read = |w: &SimWorld| {
        let (l, scan) = w.laser_and_scan(i);
        (l.to_vec(), scan.ranges, w.sonar(i))
    };
    let kept = read(w);
    let fresh = read(&w.clone());
    (kept, fresh)
}

/// Two robots in the room facing east, `robot1` out of `robot0`'s sight behind it.
fn two_robot_world() -> SimWorld {
    let map = WorldMap::new("t", 12000.0, 8000.0)
        .with_wall((9000.0, 0.0), (9000.0, 8000.0))
        .with_robot(RobotPlacement {
            name: "a".into(),
            pose: (3000.0, 4000.0, 0.0),
            channel: None,
            port: None,
            devices: None,
            laser: LaserSpec::default(),
        })
        .with_robot(RobotPlacement {
            name: "b".into(),
            pose: (1000.0, 1000.0, std::f64::consts::PI),
            channel: None,
            port: None,
            devices: None,
            laser: LaserSpec::default(),
        });
    SimWorld::new(Arc::new(map))
}

#[test]
fn a_still_robot_reuses_its_casting_and_reads_as_if_cast_afresh() {
    let mut w = SimWorld::new(Arc::new(WorldMap::default_room()));
    let mut last_laser = Vec::new();
    for t in 0..30 {
        w.run(0.1);
        let (kept, fresh) = readings_and_fresh(&w, 0);
        assert_eq!(kept, fresh, "tick {t}");
        // The noise is drawn anew each instant: the readings are not a copy of the last.
        assert_ne!(kept.0, last_laser, "tick {t}");
        last_laser = kept.0;
    }
    // Two castings for 30 readings of each sensor (l and L share theirs): the first, and
    // the second, kept once the robot was seen standing still.
    assert_eq!(w.robot(0).castings(), (2, 2));
}

#[test]
fn a_robot_driven_into_view_changes_a_still_robots_readings() {
    let mut w = two_robot_world();
    let before = readings_and_fresh(&w, 0).0;
    // b drives round into the space ahead of a: every reading matches a fresh casting,
    // and a's laser ahead ends up seeing b.
    w.robot_mut(1)
        .set_true_pose(6000.0, 1000.0, std::f64::consts::FRAC_PI_2);
    w.refresh_index();
    w.controls(1).set_velocity(500, 0);
    for t in 0..64 {
        w.run(0.1);
        let (kept, fresh) = readings_and_fresh(&w, 0);
        assert_eq!(kept, fresh, "tick {t}");
    }
    let after = readings_and_fresh(&w, 0).0;
    let (by, ahead) = (w.robot(1).true_pose().1, after.0[180]);
    assert!((by - 4000.0).abs() < 3000.0, "b at y {by}");
    assert!(
        ahead < 3000 - 200,
        "a's laser ahead reads {ahead}: b not seen"
    );
    assert!(before.0[180] > 5500, "{}", before.0[180]);
    let (laser_casts, sonar_casts) = w.robot(0).castings();
    assert!(
        laser_casts > 1 && sonar_casts > 1,
        "{laser_casts} {sonar_casts}"
    );
}

#[test]
fn a_robot_placed_by_hand_in_view_changes_a_still_robots_readings_at_once() {
    let mut w = two_robot_world();
    let before = readings_and_fresh(&w, 0).0;
    // Placed 1 m ahead of a, with and without the index filed again.
    w.robot_mut(1).set_true_pose(4000.0, 4000.0, 0.0);
    let (kept, fresh) = readings_and_fresh(&w, 0);
    assert_eq!(kept, fresh);
    assert!(kept.0[180] < 800, "{}", kept.0[180]);
    assert!(kept.2[3].min(kept.2[4]) < 800, "{:?}", kept.2);
    w.refresh_index();
    assert_eq!(readings_and_fresh(&w, 0).0 .0[180], kept.0[180]);
    // Taken away again: the wall at 6 m again.
    w.robot_mut(1).set_true_pose(1000.0, 1000.0, 0.0);
    w.refresh_index();
    let (kept, fresh) = readings_and_fresh(&w, 0);
    assert_eq!(kept, fresh);
    assert!(kept.0[180] > 5500 && before.0[180] > 5500);
}

#[test]
fn moving_turning_or_resetting_the_robot_itself_recasts() {
    let mut w = two_robot_world();
    let (x, y, th) = w.robot(0).true_pose();
    // Read twice: the second reading keeps its casting (the robot stood still since the
    // first), which the next change must then not reuse.
    let ahead = |w: &SimWorld| {
        let _ = readings_and_fresh(w, 0);
        readings_and_fresh(w, 0)
    };
    let start = ahead(&w).0;
    // Moved 1 m toward the wall.
    w.robot_mut(0).set_true_pose(x + 1000.0, y, th);
    let (kept, fresh) = ahead(&w);
    assert_eq!(kept, fresh);
    assert!(
        kept.0[180] + 900 < start.0[180],
        "{} {}",
        kept.0[180],
        start.0[180]
    );
    // Turned a quarter: the wall is to the right now.
    w.robot_mut(0)
        .set_true_pose(x, y, th + std::f64::consts::FRAC_PI_2);
    let (kept, fresh) = ahead(&w);
    assert_eq!(kept, fresh);
    // The map's north edge is 4 m ahead now, the wall 6 m to the right.
    assert!(
        kept.0[180].abs_diff(4000) < 50 && kept.0[0].abs_diff(6000) < 50,
        "{kept:?}"
    );
    // Another laser: 720 rays all round.
    w.robot_mut(0).set_laser(LaserSpec {
        fov_deg: 360.0,
        resolution_deg: 0.5,
        max_mm: 8000.0,
    });
    let (kept, fresh) = ahead(&w);
    assert_eq!(kept, fresh);
    assert_eq!(kept.1.len(), 720);
    // Noise off: exact readings, the same as a fresh robot's.
    w.robot_mut(0).set_noise(Noise::NONE, 0);
    let (kept, fresh) = ahead(&w);
    assert_eq!(kept, fresh);
    let exact = {
        let mut r = w.robot(0).clone();
        r.set_noise(Noise::NONE, 0);
        r.sonar_among(&w.others(0))
    };
    assert_eq!(kept.2, exact);
}

#[test]
fn a_robot_among_bodies_recasts_when_a_body_moves() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_wall((8000.0, 0.0), (8000.0, 10000.0));
    let mut r = robot_in(map, 2000.0, 5000.0, 0.0);
    r.set_noise(Noise::PIONEER, 5);
    let body = |x: f64| Body {
        center: geom::Vec2::new(x, 5000.0),
        radius: 250.0,
        height: 500.0,
        channel: None,
        solid: true,
    };
    let far = r.laser_among(&[body(7000.0)]);
    let near = r.laser_among(&[body(3000.0)]);
    assert!(
        far[180] > 4000 && near[180] < 1000,
        "{} {}",
        far[180],
        near[180]
    );
    // The same body's centre one bit further: cast afresh.
    let casts = r.castings().0;
    let nudged = 3000.0f64.next_up();
    let _ = r.laser_among(&[body(nudged)]);
    assert_eq!(r.castings().0, casts + 1);
    let _ = r.laser_among(&[body(nudged)]);
    assert_eq!(r.castings().0, casts + 1);
    assert_eq!(
        r.sonar_among(&[body(3000.0)]),
        r.clone().sonar_among(&[body(3000.0)])
    );
    assert_ne!(r.sonar_among(&[body(3000.0)])[3], r.sonar_among(&[])[3]);
}
