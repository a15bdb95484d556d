//! The simulated world against geometry a person can check by hand: ranges to walls, robots
//! that stall on walls and on each other, robots that see each other, the gripper picking up
//! a puck, the camera following pan and zoom, and the same seed giving the same run.
//!
//! These run the pure simulation (`SimWorld`) as fast as it goes: no actors, no clocks.

use std::sync::Arc;

use player_sim::camera::horizontal_fov;
use player_sim::gripper::{beams, cmd, state};
use player_sim::{
    ColouredObject, LaserSpec, Noise, ObjectShape, PuckPlacement, RobotPlacement, SimWorld,
    TruthFormat, WorldMap,
};

fn placed(name: &str, x: f64, y: f64, heading_deg: f64, channel: Option<u8>) -> RobotPlacement {
    RobotPlacement {
        name: name.into(),
        pose: (x, y, heading_deg.to_radians()),
        channel,
        port: None,
        devices: None,
        laser: LaserSpec::default(),
    }
}

/// A 10 m x 10 m world with the given robots.
fn world_with(robots: &[RobotPlacement], extra: impl FnOnce(WorldMap) -> WorldMap) -> SimWorld {
    let mut map = WorldMap::new("test", 10000.0, 10000.0);
    for r in robots {
        map = map.with_robot(r.clone());
    }
    SimWorld::new(Arc::new(extra(map)))
}

/// A shipped world file, with its sensors made exact (`noise = false`) for tests of its
/// geometry.
fn shipped_exact(name: &str) -> WorldMap {
    shipped(name).with_noise(Noise::NONE)
}

fn shipped(name: &str) -> WorldMap {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("config/worlds")
        .join(name);
    WorldMap::from_file(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn near(actual: impl Into<f64>, expected: f64, tol: f64) -> bool {
    (actual.into() - expected).abs() <= tol
}

#[test]
fn one_metre_from_a_wall_reads_about_1000_mm() {
    // A wall across x = 3000. Robot centre (where the laser sits) at x = 2000 facing it.
    let mut w = world_with(&[placed("a", 2000.0, 5000.0, 0.0, None)], |m| {
        m.with_wall((3000.0, 0.0), (3000.0, 10000.0))
    });
    let laser = w.laser(0);
    assert!(near(laser[180], 1000.0, 2.0), "centre ray {}", laser[180]);
    // The front sonars (3 and 4) sit 210 mm ahead of the centre: 790 mm of air.
    let sonar = w.sonar(0);
    assert!(near(sonar[3], 790.0, 2.0), "{sonar:?}");
    assert!(near(sonar[4], 790.0, 2.0), "{sonar:?}");
    // Put the front sonars themselves 1 m from the wall: they read 1000.
    w.robot_mut(0)
        .set_true_pose(3000.0 - 1000.0 - 210.0, 5000.0, 0.0);
    let sonar = w.sonar(0);
    assert!(near(sonar[3], 1000.0, 2.0), "{sonar:?}");
    assert!(near(sonar[4], 1000.0, 2.0), "{sonar:?}");
    assert!(near(w.laser(0)[180], 1210.0, 2.0));
}

#[test]
fn driving_into_a_wall_stalls_and_stops() {
    let mut w = world_with(&[placed("a", 2000.0, 5000.0, 0.0, None)], |m| {
        m.with_wall((3000.0, 0.0), (3000.0, 10000.0))
    });
    w.robot_mut(0).set_velocity(300, 0);
    w.run(2.0);
    assert_eq!(w.position(0).stall, 0, "not there yet");
    assert_eq!(w.misc(0).front_bumpers, 0);
    w.run(3.0);
    let (x, _, _) = w.robot(0).true_pose();
    // The body (radius 250 mm) touches the wall and goes no further.
    assert!(near(x, 2750.0, 1.0), "x = {x}");
    let p = w.position(0);
    assert_eq!(p.stall, 1);
    assert_eq!(p.speed, 0);
    // Head-on: the middle front bumper segment (bit 2 of 0..4).
    assert_eq!(w.misc(0).front_bumpers, 1 << 2);
    assert!(near(w.laser(0)[180], 250.0, 1.0));
    // Backing off clears the stall.
    w.robot_mut(0).set_velocity(-100, 0);
    w.run(0.5);
    assert_eq!(w.position(0).stall, 0);
    assert_eq!(w.misc(0).front_bumpers, 0);
    assert!(w.robot(0).true_pose().0 < 2750.0);
}

#[test]
fn two_robots_see_each_other() {
    // A (red) at x = 2000 facing east, B (green) at x = 4000 facing west: 2 m apart.
    let robots = [
        placed("a", 2000.0, 5000.0, 0.0, Some(0)),
        placed("b", 4000.0, 5000.0, 180.0, Some(1)),
    ];
    let w = world_with(&robots, |m| m);
    for (me, other_channel) in [(0, 1u8), (1, 0u8)] {
        // Laser: 2000 - 250 (the other's radius).
        let laser = w.laser(me);
        assert!(near(laser[180], 1750.0, 1.0), "robot {me}: {}", laser[180]);
        // Front sonars: from 210 mm ahead, the other's near side.
        let sonar = w.sonar(me);
        assert!(near(sonar[3], 1540.0, 15.0), "robot {me}: {sonar:?}");
        // Camera: one blob of the other's colour, in the middle of the image.
        let blobs = w.vision(me);
        assert_eq!(blobs.len(), 1, "robot {me}: {blobs:?}");
        assert_eq!(blobs[0].channel, other_channel);
        assert!((78..=82).contains(&blobs[0].x), "{blobs:?}");
    }
    // Alone in the same world, A sees the far wall instead (8 m cap: 8000 mm of air).
    let alone = world_with(&robots[..1], |m| m);
    assert_eq!(alone.laser(0)[180], 8000);
    assert!(alone.vision(0).is_empty());
}

#[test]
fn robots_bump_into_each_other() {
    let robots = [
        placed("a", 2000.0, 5000.0, 0.0, None),
        placed("b", 4000.0, 5000.0, 90.0, None),
    ];
    let mut w = world_with(&robots, |m| m);
    w.robot_mut(0).set_velocity(400, 0);
    w.run(6.0);
    let (ax, _, _) = w.robot(0).true_pose();
    // Centres 500 mm apart: the two bodies touch.
    assert!(near(ax, 3500.0, 1.0), "a at {ax}");
    assert_eq!(w.position(0).stall, 1);
    assert_ne!(w.misc(0).front_bumpers, 0);
    // B was only bumped into: not stalled, not moved.
    assert_eq!(w.position(1).stall, 0);
    assert_eq!(w.robot(1).true_pose(), (4000.0, 5000.0, 90f64.to_radians()));
}

#[test]
fn a_robot_hides_what_is_behind_it() {
    let ball = ColouredObject {
        channel: 5,
        center: (6000.0, 5000.0),
        shape: ObjectShape::Circle { radius: 150.0 },
        height: 300.0,
    };
    let robots = [
        placed("a", 2000.0, 5000.0, 0.0, None),
        placed("b", 4000.0, 5000.0, 90.0, None),
    ];
    let mut w = world_with(&robots, |m| m.with_object(ball));
    assert!(w.vision(0).is_empty(), "{:?}", w.vision(0));
    w.robot_mut(1).set_true_pose(4000.0, 7000.0, 0.0);
    let blobs = w.vision(0);
    assert_eq!(blobs.len(), 1);
    assert_eq!(blobs[0].channel, 5);
}

#[test]
fn camera_follows_pan_and_zoom_at_the_slew_limits() {
    // A ball 2 m away, 45 degrees to the left: outside the 48.8 degree field of view.
    let ball = ColouredObject {
        channel: 3,
        center: (
            5000.0 + 2000.0 * std::f64::consts::FRAC_1_SQRT_2,
            5000.0 + 2000.0 * std::f64::consts::FRAC_1_SQRT_2,
        ),
        shape: ObjectShape::Circle { radius: 100.0 },
        height: 300.0,
    };
    let mut w = world_with(&[placed("a", 5000.0, 5000.0, 0.0, None)], |m| {
        m.with_object(ball)
    });
    assert!(w.vision(0).is_empty());
    w.robot_mut(0).set_ptz(45, 0, 0);
    // Pan slews at 80 degrees/s: after 0.2 s it is at 16 degrees, the ball 29 degrees off
    // axis, still out of view.
    w.run(0.2);
    assert_eq!(w.ptz(0).pan, 16);
    assert!(w.vision(0).is_empty());
    w.run(0.5);
    assert_eq!(w.ptz(0).pan, 45);
    let wide = w.vision(0);
    assert_eq!(wide.len(), 1);
    assert!((78..=82).contains(&wide[0].x), "{wide:?}");
    // Zooming in magnifies the blob by the ratio of the focal lengths.
    w.robot_mut(0).set_ptz(45, 0, 1023);
    w.run(1.5);
    assert_eq!(w.ptz(0).zoom, 1023);
    let tele = w.vision(0);
    assert_eq!(tele.len(), 1);
    let width = |b: &player_sim::Blob| f64::from(b.right - b.left + 1);
    let ratio = width(&tele[0]) / width(&wide[0]);
    let expected = (horizontal_fov(0.0) / 2.0).tan() / (horizontal_fov(1023.0) / 2.0).tan();
    // 2 * asin(100 / 2000) = 5.7 degrees: wider than the 4.4 degree tele view, so the
    // blob fills the image and is clipped to 160 pixels.
    assert!(ratio > 5.0 && ratio <= expected, "{ratio} vs {expected}");
    assert_eq!(tele[0].right - tele[0].left + 1, 160);
    // At tele the field is 4.4 degrees: panning 5 degrees off loses the ball.
    w.robot_mut(0).set_ptz(52, 0, 1023);
    w.run(0.5);
    assert!(w.vision(0).is_empty(), "{:?}", w.vision(0));
}

#[test]
fn gripper_picks_up_a_puck_between_its_paddles() {
    let mut w = world_with(&[placed("a", 2000.0, 5000.0, 0.0, None)], |m| {
        m.with_puck(PuckPlacement {
            center: (2800.0, 5000.0),
            radius: 40.0,
            channel: None,
        })
    });
    let g = w.gripper(0);
    assert_eq!(g.beams & (beams::INNER_BEAM | beams::OUTER_BEAM), 0);
    // Open the paddles and lower the lift, then drive up to the puck.
    w.robot_mut(0).gripper_command(cmd::GRIP_DEPLOY, 0);
    w.run(2.1);
    assert_eq!(w.gripper(0).state, state::PADDLES_OPEN | state::LIFT_DOWN);
    w.robot_mut(0).set_velocity(200, 0);
    w.run(1.0);
    // The puck's centre is 800 - 200 = 600 mm ahead: not yet between the paddles.
    assert_eq!(w.gripper(0).beams & beams::OUTER_BEAM, 0);
    w.run(1.0);
    // 400 mm ahead: between the paddle tips (410 mm), across the outer beam (400 mm).
    assert_ne!(w.gripper(0).beams & beams::OUTER_BEAM, 0);
    w.run(1.0);
    // 200 mm more: the puck reached the back of the mouth (250 + 40 mm ahead of the
    // centre) and rides there; the inner beam is broken.
    w.robot_mut(0).set_velocity(0, 0);
    let (x, _, _) = w.robot(0).true_pose();
    let puck = &w.pucks()[0];
    assert!(near(puck.center.x - x, 290.0, 1.0), "{puck:?} robot {x}");
    assert_ne!(w.gripper(0).beams & beams::INNER_BEAM, 0);
    assert_eq!(w.position(0).stall, 0, "pushing a puck is not a stall");
    // Close: the paddles stop on the puck and hold it.
    w.robot_mut(0).gripper_command(cmd::GRIP_CLOSE, 0);
    w.run(1.0);
    assert_eq!(w.pucks()[0].held_by, Some(0));
    assert_eq!(w.gripper(0).state, state::PADDLES_CLOSED | state::LIFT_DOWN);
    // Lift, then drive away backwards and turn: the puck comes along.
    w.robot_mut(0).gripper_command(cmd::LIFT_UP, 0);
    w.run(2.1);
    assert!(w.pucks()[0].lifted);
    w.robot_mut(0).set_velocity(-200, 30);
    w.run(3.0);
    w.robot_mut(0).set_velocity(0, 0);
    // Let the wheels come to rest (they slow down at the Pioneer's acceleration).
    w.run(0.5);
    let (x, y, th) = w.robot(0).true_pose();
    let p = w.pucks()[0].center;
    assert!(near(p.x, x + 290.0 * th.cos(), 1.0) && near(p.y, y + 290.0 * th.sin(), 1.0));
    assert_ne!(w.gripper(0).beams & beams::INNER_BEAM, 0);
    // Lower and open: the puck is put down where it is.
    w.robot_mut(0).gripper_command(cmd::GRIP_DEPLOY, 0);
    w.run(2.1);
    assert_eq!(w.pucks()[0].held_by, None);
    assert!(!w.pucks()[0].lifted);
    w.robot_mut(0).set_velocity(-200, 0);
    w.run(1.0);
    assert_eq!(w.pucks()[0].center, p);
    assert_eq!(w.gripper(0).beams & beams::INNER_BEAM, 0);
}

#[test]
fn closed_paddles_push_a_puck_instead_of_taking_it() {
    let mut w = world_with(&[placed("a", 2000.0, 5000.0, 0.0, None)], |m| {
        m.with_puck(PuckPlacement {
            center: (2800.0, 5000.0),
            radius: 40.0,
            channel: None,
        })
    });
    // Paddles closed, lift down: the paddles sweep the puck ahead of their tips.
    w.robot_mut(0).gripper_command(cmd::LIFT_DOWN, 0);
    w.run(2.1);
    w.robot_mut(0).set_velocity(200, 0);
    w.run(3.0);
    let (x, _, _) = w.robot(0).true_pose();
    assert!(near(w.pucks()[0].center.x - x, 410.0 + 40.0, 1.0));
    w.robot_mut(0).gripper_command(cmd::GRIP_CLOSE, 0);
    w.run(1.0);
    assert_eq!(w.pucks()[0].held_by, None);
}

#[test]
fn velocity_modes_direct_and_separate() {
    let mut w = world_with(&[placed("a", 2000.0, 5000.0, 0.0, None)], |m| m);
    // Direct wheel control (the default): each wheel at 600 mm/s^2, there in half a second.
    w.robot_mut(0).set_velocity(300, 0);
    w.run(0.1);
    assert_eq!(w.position(0).speed, 60);
    w.run(0.4);
    assert_eq!(w.position(0).speed, 300);
    // Separate trans/rot control: 300 mm/s^2 from standstill.
    w.robot_mut(0).stop();
    w.robot_mut(0).set_velocity_mode(true);
    w.robot_mut(0).set_velocity(300, 0);
    w.run(0.5);
    assert!(near(w.position(0).speed, 150.0, 4.0), "{:?}", w.position(0));
    w.run(1.0);
    assert_eq!(w.position(0).speed, 300);
}

#[test]
fn battery_drains_with_motor_use() {
    let robots = [
        placed("idle", 2000.0, 2000.0, 0.0, None),
        placed("busy", 2000.0, 5000.0, 0.0, None),
    ];
    let mut w = world_with(&robots, |m| m);
    let full = w.robot(0).battery_volts();
    w.robot_mut(1).set_velocity(0, 100);
    w.run(60.0);
    assert_eq!(w.robot(0).battery_volts(), full);
    assert!(w.robot(1).battery_volts() < full);
    assert!(w.misc(1).voltage <= w.misc(0).voltage);
}

/// A fixed choreography for three robots in the arena, returning every truth record and
/// every odometry reading along the way.
fn choreography(map: WorldMap) -> (Vec<String>, Vec<(i32, i32, u16)>) {
    let mut w = SimWorld::new(Arc::new(map));
    let mut truth = Vec::new();
    let mut odometry = Vec::new();
    for phase in 0..6 {
        for i in 0..w.len() {
            let turn = [20, -15, 0, 30, -30, 10][(phase + i) % 6];
            w.robot_mut(i).set_velocity(250, turn);
        }
        for _ in 0..10 {
            w.run(0.2);
            truth.extend(w.truth().iter().map(|r| r.line(TruthFormat::Csv)));
            for i in 0..w.len() {
                let p = w.position(i);
                odometry.push((p.x, p.y, p.heading));
            }
        }
    }
    (truth, odometry)
}

fn arena_with_noise(seed: u64) -> WorldMap {
    shipped("arena.toml")
        .with_seed(seed)
        .with_odometry_noise(Some((0.02, 0.02)))
}

#[test]
fn same_seed_same_run() {
    let (truth_a, odo_a) = choreography(arena_with_noise(7));
    let (truth_b, odo_b) = choreography(arena_with_noise(7));
    assert_eq!(truth_a, truth_b);
    assert_eq!(odo_a, odo_b);
    // Another seed: the robots drive the same (the choreography is open loop, and noise is
    // in what they sense, not in how they move), but their odometry drifts differently.
    let (truth_c, odo_c) = choreography(arena_with_noise(8));
    assert_eq!(truth_a, truth_c);
    assert_ne!(odo_a, odo_c);
}

#[test]
fn odometry_is_exact_without_noise_and_drifts_with_it() {
    let drive = |map: WorldMap| {
        let mut w = SimWorld::new(Arc::new(map));
        let (x0, y0, _) = w.robot(0).true_pose();
        // 12 m along a smooth curve at 400 mm/s.
        w.robot_mut(0).set_velocity(400, 12);
        w.run(30.0);
        let (x, y, th) = w.robot(0).true_pose();
        // Odometry frame = start pose, facing +x (the robot starts facing east).
        let truth = ((x - x0), (y - y0), th.to_degrees().rem_euclid(360.0));
        let p = w.position(0);
        let err = (f64::from(p.x) - truth.0).hypot(f64::from(p.y) - truth.1);
        (err, p, truth)
    };
    let map = || {
        WorldMap::new("open", 30000.0, 30000.0).with_robot(placed("a", 15000.0, 8000.0, 0.0, None))
    };
    let (err, p, truth) = drive(map());
    assert!(
        err <= 1.0,
        "exact odometry is off by {err}: {p:?} vs {truth:?}"
    );
    let heading_err = (f64::from(p.heading) - truth.2 + 180.0).rem_euclid(360.0) - 180.0;
    assert!(heading_err.abs() <= 1.0, "{p:?} vs {truth:?}");
    // With noise the estimate wanders: more than a few mm, less than 10% of the distance.
    let (err, p, truth) = drive(map().with_seed(1).with_odometry_noise(Some((0.02, 0.02))));
    assert!(
        err > 5.0 && err < 1200.0,
        "noisy odometry off by {err}: {p:?} vs {truth:?}"
    );
}

#[test]
fn truth_log_lines() {
    let w = world_with(&[placed("a\"b", 2000.0, 5000.0, 90.0, None)], |m| m);
    let r = &w.truth()[0];
    assert_eq!(r.line(TruthFormat::Csv), "0.000,a\"b,2000.0,5000.0,90.00\n");
    assert_eq!(
        r.line(TruthFormat::JsonLines),
        "{\"time\":0.000,\"robot\":\"a\\\"b\",\"x\":2000.0,\"y\":5000.0,\"heading\":90.00}\n"
    );
}

#[test]
fn shipped_worlds_load() {
    let room = shipped("room.toml");
    assert_eq!(room, WorldMap::default_room());
    assert_eq!(room.pucks().len(), 2);
    assert_eq!(SimWorld::new(Arc::new(room)).len(), 1);

    let maze = shipped_exact("maze.toml");
    assert!(maze.boxes().len() >= 20, "{}", maze.boxes().len());
    let mut w = SimWorld::new(Arc::new(maze));
    // East along the bottom corridor: its end wall is 9600 - 1000 = 8600 mm away (past the
    // laser's 8 m); north: the corridor's top wall is 1600 - 1000 = 600 mm away.
    assert_eq!(w.laser(0)[180], 8000);
    let (x, y, _) = w.robot(0).true_pose();
    w.robot_mut(0)
        .set_true_pose(x, y, std::f64::consts::FRAC_PI_2);
    assert_eq!(w.laser(0)[180], 600);

    let arena = shipped("arena.toml");
    let names: Vec<_> = arena.robots().iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["leader", "left", "right"]);
    let ports: Vec<_> = arena.robots().iter().map(|r| r.port).collect();
    assert_eq!(ports, [Some(6665), Some(6666), Some(6667)]);
    let colours: Vec<_> = arena.robots().iter().map(|r| r.channel).collect();
    assert_eq!(colours, [Some(0), Some(1), Some(2)]);
    // In formation the followers see the leader 1.5 m ahead and 1.2 m to the side:
    // bearing atan(1200 / 1500) = 38.7 degrees, range 1921 - 250 mm.
    let mut w = SimWorld::new(Arc::new(arena));
    let left = w.laser(1);
    let right = w.laser(2);
    assert!(near(left[103], 1671.0, 10.0), "{}", left[103]);
    assert!(near(right[257], 1671.0, 10.0), "{}", right[257]);
    // The leader is outside the left follower's camera view (half of 48.8 degrees) until it
    // pans right towards it; then it sees red (channel 0) in the middle of the image.
    assert!(!w.vision(1).iter().any(|b| b.channel == 0));
    w.robot_mut(1).set_ptz(-39, 0, 0);
    w.run(1.0);
    let red: Vec<_> = w.vision(1).into_iter().filter(|b| b.channel == 0).collect();
    assert_eq!(red.len(), 1);
    assert!((75..=85).contains(&red[0].x), "{red:?}");
}

#[test]
fn world_file_robots_polygons_grids_and_pucks() {
    let map = WorldMap::from_toml_str(
        r#"
        [world]
        width = 6000
        height = 4000
        resolution = 500
        seed = 9
        noise = true
        [[robot]]
        name = "one"
        pose = [1000, 1000, 0]
        colour = "cyan"
        port = 7001
        devices = ["p", "l"]
        [[robot]]
        pose = [1000, 3000, 0]
        channel = 12
        [[polygon]]
        points = [[3000, 500], [3500, 500], [3500, 1500], [3000, 1500]]
        [grid]
        rows = """
....#
....#
"""
        origin = [3500, 3000]
        [[puck]]
        center = [2000, 2000]
        colour = "orange"
        [truth]
        file = "t.jsonl"
        "#,
    )
    .unwrap();
    assert_eq!(map.seed(), 9);
    assert_eq!(map.odometry_noise(), Some((0.02, 0.02)));
    let r = map.robots();
    assert_eq!(
        (r[0].name.as_str(), r[0].channel, r[0].port),
        ("one", Some(5), Some(7001))
    );
    assert_eq!(r[0].devices.as_deref(), Some(&b"pl"[..]));
    assert_eq!((r[1].name.as_str(), r[1].channel), ("robot1", Some(12)));
    assert_eq!(map.pucks()[0].channel, Some(6));
    assert_eq!(map.pucks()[0].radius, 40.0);
    let t = map.truth_log().unwrap();
    assert_eq!(t.format, TruthFormat::JsonLines);
    assert_eq!(t.period, 0.1);
    // The grid's column 4 over two rows: one 500 x 1000 mm box at x 5500..6000, y 3000..4000.
    assert_eq!(map.boxes().len(), 1);
    assert_eq!(map.boxes()[0].min, (5500.0, 3000.0));
    assert_eq!(map.boxes()[0].max, (6000.0, 4000.0));
    // The polygon is four walls; robot "one" faces its west side 2000 mm away.
    assert_eq!(map.walls().len(), 4);
    let w = SimWorld::new(Arc::new(map));
    // Within six sigmas of the file's laser noise (5 mm).
    assert!(w.laser(0)[180].abs_diff(2000) <= 30, "{}", w.laser(0)[180]);
}

#[test]
fn world_file_mistakes_are_named() {
    let base = "[world]\nwidth = 5000\nheight = 5000\n";
    let err = |extra: &str| {
        WorldMap::from_toml_str(&format!("{base}{extra}"))
            .unwrap_err()
            .to_string()
    };
    let e = err("[[robot]]\npose = [1000, 1000, 0]\n[[robot]]\npose = [1300, 1000, 0]\n");
    assert!(e.contains("robot[1].pose") && e.contains("robot0"), "{e}");
    let e = err("[[robot]]\npose = [1000, 1000, 0]\ncolour = \"plaid\"\n");
    assert!(e.contains("robot[0].colour") && e.contains("plaid"), "{e}");
    let e = err("[[robot]]\npose = [1000, 1000, 0]\ndevices = [\"x\"]\n");
    assert!(e.contains("robot[0].devices"), "{e}");
    let e = err("[[robot]]\nname = \"a\"\npose = [1000, 1000, 0]\n[[robot]]\nname = \"a\"\npose = [3000, 1000, 0]\n");
    assert!(e.contains("robot[1].name"), "{e}");
    let e = err("[[puck]]\ncenter = [0, 0]\n");
    assert!(e.contains("puck[0].center"), "{e}");
    let e = err("[grid]\nresolution = 100\n");
    assert!(e.contains("grid") && e.contains("rows"), "{e}");
    let e = err("[grid]\nfile = \"/no/such/map.png\"\n");
    assert!(
        e.contains("grid.file") && e.contains("/no/such/map.png"),
        "{e}"
    );
    let e = err("[truth]\nfile = \"x\"\nformat = \"xml\"\n");
    assert!(e.contains("truth.format"), "{e}");
}

#[test]
fn png_bitmap_walls() {
    // A 4 x 2 bitmap: the right column black, the rest white; 1 m per pixel.
    let dir = std::env::temp_dir().join(format!("player-sim-png-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png_path = dir.join("map.png");
    {
        let file = std::fs::File::create(&png_path).unwrap();
        let mut enc = png::Encoder::new(std::io::BufWriter::new(file), 4, 2);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut wr = enc.write_header().unwrap();
        wr.write_image_data(&[255, 255, 255, 0, 255, 255, 255, 0])
            .unwrap();
    }
    let world = dir.join("w.toml");
    std::fs::write(
        &world,
        "[world]\nwidth = 4000\nheight = 2000\n[robot]\npose = [1000, 1000, 0]\n[grid]\nfile = \"map.png\"\nresolution = 1000\n",
    )
    .unwrap();
    let map = WorldMap::from_file(&world).unwrap().with_noise(Noise::NONE);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(map.boxes().len(), 1);
    assert_eq!(map.boxes()[0].min, (3000.0, 0.0));
    assert_eq!(SimWorld::new(Arc::new(map)).laser(0)[180], 2000);
}

#[test]
fn laser_and_sonar_among_many_robots_match_casting_every_ray_at_everything() {
    use player_sim::geom::{ray_circle, Vec2};
    use player_sim::{LASER_MAX_MM, SONAR_MAX_MM, SONAR_POSES};
    // 30 robots on a jittered grid, in all headings.
    let mut robots = Vec::new();
    for k in 0..30 {
        let (row, col) = (k / 6, k % 6);
        let jitter = f64::from((k * 37 % 11) as u8) * 20.0;
        robots.push(placed(
            &format!("r{k}"),
            900.0 + 1400.0 * col as f64 + jitter,
            900.0 + 1700.0 * row as f64 - jitter,
            f64::from(k) * 47.0,
            None,
        ));
    }
    let w = world_with(&robots, |m| m.with_pillar((5000.0, 5000.0), 200.0));
    let brute = |i: usize, origin: Vec2, angle: f64, max: f64| {
        let mut d = w.robot(i).map().range(origin, angle, max);
        for b in w.others(i).iter().filter(|b| b.solid) {
            if let Some(t) = ray_circle(origin, Vec2::from_angle(angle), b.center, b.radius) {
                d = d.min(t);
            }
        }
        d.round() as u16
    };
    for i in 0..w.len() {
        let r = w.robot(i);
        let (x, y, th) = r.true_pose();
        let laser = w.laser(i);
        for (k, &got) in laser.iter().enumerate() {
            let a = th + (-90.0 + 0.5 * k as f64).to_radians();
            assert_eq!(
                got,
                brute(i, r.laser_origin(), a, LASER_MAX_MM),
                "robot {i} ray {k}"
            );
        }
        let sonar = w.sonar(i);
        for (k, &(sx, sy, sh)) in SONAR_POSES.iter().enumerate() {
            let origin = Vec2::new(x, y) + Vec2::new(sx, sy).rotated(th);
            let expected = (0..7)
                .map(|s| {
                    let a = th + (sh - 15.0 + 5.0 * f64::from(s)).to_radians();
                    brute(i, origin, a, SONAR_MAX_MM)
                })
                .min()
                .unwrap();
            assert_eq!(sonar[k], expected, "robot {i} sonar {k}");
        }
    }
}
