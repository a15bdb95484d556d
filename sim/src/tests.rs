//! Scenario tests for the simulator, against geometry that can be checked by hand.

use std::sync::Arc;

use super::camera::{PtzReading, ZOOM_MAX};
use super::gripper::{beams, cmd, state};
use super::robot::{AXLE_MM, WHEEL_ACCEL_MM_S2};
use super::*;

/// The robot at (x, y) facing `heading_deg` in `map`, its direct-mode commands taking
/// effect at once (so that distances and angles are the kinematics' exactly; the wheels'
/// acceleration has tests of its own, with `ramped_robot_in`).
fn robot_in(map: WorldMap, x: f64, y: f64, heading_deg: f64) -> SimRobot {
    SimRobot::new(
        Arc::new(map),
        RobotParams {
            start_pose: Some((x, y, heading_deg.to_radians())),
            wheel_accel_mm_s2: f64::INFINITY,
            ..RobotParams::default()
        },
    )
}

/// As `robot_in`, with the Pioneer's wheel acceleration (the default).
fn ramped_robot_in(map: WorldMap, x: f64, y: f64, heading_deg: f64) -> SimRobot {
    SimRobot::new(
        Arc::new(map),
        RobotParams {
            start_pose: Some((x, y, heading_deg.to_radians())),
            ..RobotParams::default()
        },
    )
}

/// Steps `seconds` in 10 ms steps.
fn run(r: &mut SimRobot, seconds: f64) {
    for _ in 0..(seconds * 100.0).round() as usize {
        r.step(0.01);
    }
}

fn near(actual: f64, expected: f64, tol: f64) -> bool {
    (actual - expected).abs() <= tol
}

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
fn drives_forward_in_direct_mode() {
    // Facing north: odometry is robot-relative, so x still grows.
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 90.0);
    r.set_velocity(200, 0);
    run(&mut r, 1.0);
    let p = r.position();
    assert_eq!((p.x, p.y, p.heading), (200, 0, 0));
    assert_eq!((p.speed, p.turn_rate, p.stall), (200, 0, 0));
    let (x, y, _) = r.true_pose();
    assert!(near(x, 5000.0, 1e-6) && near(y, 5200.0, 1e-6));
    assert_eq!(p.compass, 90);
}

#[test]
fn turns_counter_clockwise() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    r.set_velocity(0, 90);
    run(&mut r, 1.0);
    let p = r.position();
    assert_eq!(
        (p.x, p.y, p.heading, p.turn_rate, p.speed),
        (0, 0, 90, 90, 0)
    );
    r.set_velocity(0, -90);
    run(&mut r, 2.0);
    let p = r.position();
    // -90 degrees reads 270, never negative; the compass likewise.
    assert_eq!(p.heading, 270);
    assert_eq!(p.compass, 270);
}

#[test]
fn drives_an_arc() {
    // 100 mm/s at 18 degrees/s for 10 s is a half circle of radius 318.3 mm.
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    r.set_velocity(100, 18);
    run(&mut r, 10.0);
    let p = r.position();
    let radius = 100.0 / 18f64.to_radians();
    assert!(near(f64::from(p.x), 0.0, 1.0), "{p:?}");
    assert!(near(f64::from(p.y), 2.0 * radius, 1.0), "{p:?}");
    assert_eq!(p.heading, 180);
}

#[test]
fn heading_is_never_360() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    r.set_velocity(0, -1);
    r.step(0.4); // -0.4 degrees rounds to 0, not 360
    assert_eq!(r.position().heading, 0);
    r.step(0.2); // -0.6 rounds to 359
    assert_eq!(r.position().heading, 359);
    assert_eq!(r.position().compass, 0);
}

#[test]
fn commands_are_clamped() {
    let mut r = robot_in(WorldMap::new("t", 20000.0, 20000.0), 10000.0, 10000.0, 0.0);
    r.set_velocity(2000, 0);
    r.step(0.01);
    assert_eq!(r.position().speed, 500);
    r.set_velocity(0, -500);
    r.step(0.01);
    assert_eq!(r.position().turn_rate, -100);
    // Both at their limits: each wheel is clamped to 500 mm/s as P2OS clamps them (left
    // 500 + 279 -> 500, right 500 - 279 = 221), which slows the turn too.
    r.set_velocity(2000, -500);
    r.step(0.01);
    let p = r.position();
    let right = 500.0 - 100f64.to_radians() * AXLE_MM / 2.0;
    assert_eq!(p.speed, ((500.0 + right) / 2.0).round() as i16);
    let turn = ((right - 500.0) / AXLE_MM).to_degrees();
    assert_eq!(p.turn_rate, turn.round() as i16, "{p:?}");
}

#[test]
fn direct_mode_ramps_each_wheel() {
    let a = WHEEL_ACCEL_MM_S2;
    let mut r = ramped_robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    r.set_velocity(300, 0);
    run(&mut r, 0.1);
    assert_eq!(r.position().speed, (a * 0.1).round() as i16);
    run(&mut r, 1.0);
    assert_eq!(r.position().speed, 300);
    // Up to speed, it lost v^2 / 2a of distance to the ramp.
    let (x, _, _) = r.true_pose();
    let expected = 5000.0 + 300.0 * 1.1 - 300.0 * 300.0 / (2.0 * a);
    assert!(near(x, expected, 4.0), "{x} {expected}");
    // Slowing down takes as long.
    r.set_velocity(0, 0);
    run(&mut r, 0.25);
    assert_eq!(r.position().speed, (300.0 - a * 0.25).round() as i16);
    run(&mut r, 1.0);
    assert_eq!(r.position().speed, 0);
    // A turn in place: the wheels reach +-(100 degrees/s * 160 mm) after 0.47 s.
    r.set_velocity(0, 100);
    run(&mut r, 0.2);
    let p = r.position();
    assert_eq!(p.speed, 0);
    let wheel = a * 0.2;
    assert_eq!(
        p.turn_rate,
        (wheel / (AXLE_MM / 2.0)).to_degrees().round() as i16
    );
    run(&mut r, 0.5);
    assert_eq!(r.position().turn_rate, 100);
    // Reversing the turn passes through zero.
    r.set_velocity(0, -100);
    run(&mut r, 0.2);
    assert!(r.position().turn_rate > 0, "{:?}", r.position());
    run(&mut r, 1.0);
    assert_eq!(r.position().turn_rate, -100);
}

#[test]
fn separate_mode_accelerates_gradually() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    r.set_velocity_mode(true);
    r.set_velocity(200, 50);
    run(&mut r, 0.1);
    let p = r.position();
    assert!(near(f64::from(p.speed), 30.0, 1.0), "{p:?}");
    assert!(near(f64::from(p.turn_rate), 10.0, 1.0), "{p:?}");
    run(&mut r, 1.0);
    assert_eq!(r.position().speed, 200);
    assert_eq!(r.position().turn_rate, 50);
    // Back in direct mode a new command takes effect within one step.
    r.set_velocity_mode(false);
    r.set_velocity(-100, 0);
    r.step(0.01);
    assert_eq!(r.position().speed, -100);
}

#[test]
fn stop_is_immediate_even_in_separate_mode() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    r.set_velocity_mode(true);
    r.set_velocity(300, 0);
    run(&mut r, 2.0);
    r.stop();
    let before = r.true_pose();
    assert_eq!(r.position().speed, 0);
    r.step(0.1);
    assert_eq!(r.true_pose(), before);
}

#[test]
fn driving_into_a_wall_stalls_without_penetrating() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_wall((3000.0, 0.0), (3000.0, 10000.0));
    let mut r = robot_in(map, 2000.0, 5000.0, 0.0);
    r.set_velocity(300, 0);
    for _ in 0..500 {
        r.step(0.01);
        let (x, _, _) = r.true_pose();
        assert!(x <= 3000.0 - ROBOT_RADIUS_MM + 1e-6, "penetrated: x = {x}");
    }
    let (x, y, _) = r.true_pose();
    assert!(near(x, 2750.0, 0.5), "stopped at {x}");
    assert!(near(y, 5000.0, 1e-6));
    let p = r.position();
    assert_eq!(p.stall, 1);
    assert_eq!(p.speed, 0);
    assert!(near(f64::from(p.x), 750.0, 1.0));
    let m = r.misc();
    // Head-on: the middle front segment.
    assert_eq!(m.front_bumpers, 0b00100);
    assert_eq!(m.rear_bumpers, 0);
    // The gripper's break beams see the wall right in front.
    let g = r.gripper();
    assert_eq!(
        g.beams & (beams::OUTER_BEAM | beams::INNER_BEAM),
        beams::OUTER_BEAM | beams::INNER_BEAM
    );

    // Turning in place while pushing is allowed; backing off clears the stall.
    r.set_velocity(0, 30);
    r.step(0.01);
    assert_eq!(r.position().stall, 0);
    r.set_velocity(-200, 0);
    run(&mut r, 0.5);
    let p = r.position();
    assert_eq!((p.stall, r.misc().front_bumpers), (0, 0));
    assert!(r.true_pose().0 < 2700.0);
}

#[test]
fn reversing_into_a_pillar_sets_rear_bumpers() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_pillar((4000.0, 5000.0), 200.0);
    let mut r = robot_in(map, 5000.0, 5000.0, 0.0);
    r.set_velocity(-300, 0);
    run(&mut r, 3.0);
    let (x, _, _) = r.true_pose();
    assert!(near(x, 4000.0 + 200.0 + ROBOT_RADIUS_MM, 0.5), "{x}");
    let m = r.misc();
    assert_eq!((m.front_bumpers, m.rear_bumpers), (0, 0b00100));
    assert_eq!(r.position().stall, 1);
}

#[test]
fn glancing_contact_presses_a_side_segment() {
    // A box whose corner the robot's front-left clips while driving east.
    let map = WorldMap::new("t", 10000.0, 10000.0).with_box((5500.0, 5150.0), (6000.0, 6000.0));
    let mut r = robot_in(map, 5000.0, 5000.0, 0.0);
    r.set_velocity(200, 0);
    run(&mut r, 3.0);
    let m = r.misc();
    assert_eq!(r.position().stall, 1);
    assert!(
        m.front_bumpers == 0b00001 || m.front_bumpers == 0b00010,
        "{m:?}"
    );
}

#[test]
fn world_edge_is_solid() {
    let mut r = robot_in(WorldMap::new("t", 2000.0, 2000.0), 1000.0, 1000.0, 90.0);
    r.set_velocity(500, 0);
    run(&mut r, 3.0);
    let (_, y, _) = r.true_pose();
    assert!(near(y, 2000.0 - ROBOT_RADIUS_MM, 0.5), "{y}");
    assert_eq!(r.position().stall, 1);
}

#[test]
fn motor_power_off_means_no_motion() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    r.set_motor_power(false);
    r.set_velocity(300, 40);
    run(&mut r, 1.0);
    let p = r.position();
    assert_eq!((p.x, p.y, p.heading, p.speed, p.turn_rate), (0, 0, 0, 0, 0));
    r.set_motor_power(true);
    run(&mut r, 0.5);
    assert_eq!(r.position().speed, 300);

    let off = SimRobot::new(
        Arc::new(WorldMap::new("t", 10000.0, 10000.0)),
        RobotParams {
            motors_on_at_start: false,
            ..RobotParams::default()
        },
    );
    assert!(!off.motor_power());
}

#[test]
fn reset_odometry_zeroes_the_origin() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    r.set_velocity(200, 20);
    run(&mut r, 2.0);
    assert_ne!(r.position().x, 0);
    r.reset_odometry();
    let p = r.position();
    assert_eq!((p.x, p.y, p.heading), (0, 0, 0));
    // The compass is unaffected: 40 degrees turned in the world.
    assert_eq!(p.compass, 40);
    // New motion is measured from the new origin and its heading.
    r.set_velocity(100, 0);
    run(&mut r, 1.0);
    let p = r.position();
    assert_eq!((p.x, p.y, p.heading), (100, 0, 0));
}

#[test]
fn battery_drains_with_use_down_to_the_floor() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    assert_eq!(r.misc().voltage, 130);
    r.set_velocity(0, 100);
    r.step(5.0);
    let v = r.battery_volts();
    assert!(v < 13.0 && v > 12.9, "{v}");
    let mut idle = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    idle.step(5.0);
    assert_eq!(idle.battery_volts(), 13.0);
    let mut flat = SimRobot::new(
        Arc::new(WorldMap::new("t", 10000.0, 10000.0)),
        RobotParams {
            battery_volts: 10.01,
            ..RobotParams::default()
        },
    );
    flat.set_velocity(0, 100);
    for _ in 0..10 {
        flat.step(10.0);
    }
    assert_eq!(flat.misc().voltage, 100);
}

#[test]
fn ptz_slews_and_clamps() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    assert_eq!(
        r.ptz(),
        PtzReading {
            pan: 0,
            tilt: 0,
            zoom: 0
        }
    );
    r.set_ptz(90, -20, 800);
    run(&mut r, 0.1);
    let p = r.ptz();
    assert!(p.pan > 0 && p.pan < 90, "{p:?}");
    assert!(p.tilt < 0 && p.tilt > -20, "{p:?}");
    assert!(p.zoom > 0 && p.zoom < 800, "{p:?}");
    run(&mut r, 2.0);
    assert_eq!(
        r.ptz(),
        PtzReading {
            pan: 90,
            tilt: -20,
            zoom: 800
        }
    );
    r.set_ptz(i16::MAX, i16::MIN, i16::MAX);
    run(&mut r, 5.0);
    assert_eq!(
        r.ptz(),
        PtzReading {
            pan: 100,
            tilt: -25,
            zoom: ZOOM_MAX
        }
    );
    r.set_ptz(-300, 300, -300);
    run(&mut r, 5.0);
    assert_eq!(
        r.ptz(),
        PtzReading {
            pan: -100,
            tilt: 25,
            zoom: 0
        }
    );
}

fn ball(channel: u8, x: f64, y: f64) -> ColouredObject {
    ColouredObject {
        channel,
        center: (x, y),
        shape: ObjectShape::Circle { radius: 150.0 },
        height: 300.0,
    }
}

#[test]
fn object_ahead_makes_one_centred_blob() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_object(ball(3, 7000.0, 5000.0));
    let mut r = robot_in(map, 5000.0, 5000.0, 0.0);
    let blobs = r.vision();
    assert_eq!(blobs.len(), 1, "{blobs:?}");
    let b = blobs[0];
    assert_eq!(b.channel, 3);
    assert!((79..=81).contains(&b.x), "{b:?}");
    // 150 mm at 2 m subtends +-4.3 degrees: about 26 pixels wide at zoom 0.
    let width = u32::from(b.right - b.left) + 1;
    assert!((24..=29).contains(&width), "{b:?}");
    assert_eq!(b.area, width * (u32::from(b.bottom - b.top) + 1));
    assert!(b.left < b.x && b.x < b.right && b.top <= b.y && b.y <= b.bottom);
    // The camera is 300 mm up and the ball 300 mm tall: it is in the lower half of the image.
    assert!(b.y > 60 && b.bottom < 120, "{b:?}");

    // Zooming in makes it bigger.
    r.set_ptz(0, 0, 512);
    run(&mut r, 1.0);
    let zoomed = r.vision();
    assert_eq!(zoomed.len(), 1);
    assert!(zoomed[0].area > b.area);

    // Panned 90 degrees away it is out of view.
    r.set_ptz(90, 0, 0);
    run(&mut r, 2.0);
    assert!(r.vision().is_empty());

    // Panned back, and the robot turned left 15 degrees: the ball sits right of centre.
    r.set_ptz(0, 0, 0);
    run(&mut r, 2.0);
    r.set_velocity(0, 30);
    run(&mut r, 0.5);
    r.stop();
    let b = r.vision()[0];
    assert!(b.x > 100, "{b:?}");
}

#[test]
fn tilting_moves_the_blob_in_the_image() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_object(ball(0, 7000.0, 5000.0));
    let mut r = robot_in(map, 5000.0, 5000.0, 0.0);
    let level = r.vision()[0];
    r.set_ptz(0, -10, 0);
    run(&mut r, 1.0);
    let down = r.vision()[0];
    assert!(down.y < level.y, "{level:?} {down:?}");
}

#[test]
fn hidden_objects_make_no_blob() {
    let map = WorldMap::new("t", 10000.0, 10000.0)
        .with_object(ball(1, 7000.0, 5000.0))
        .with_box((6000.0, 4900.0), (6100.0, 5100.0));
    let r = robot_in(map, 5000.0, 5000.0, 0.0);
    assert!(r.vision().is_empty());
}

#[test]
fn blobs_sort_by_channel_then_area_and_cap_at_ten() {
    // Robot at (10000, 10000) facing +x. A channel-5 ball 23 degrees left and a channel-2 ball
    // 23 degrees right, 1.5 m away; twelve channel-7 balls fanned out from -16 to +16 degrees,
    // 5 to 6.1 m away (farther ones smaller), never hiding one another.
    let at = |channel: u8, bearing_deg: f64, dist: f64| {
        let (s, c) = bearing_deg.to_radians().sin_cos();
        ball(channel, 10000.0 + dist * c, 10000.0 + dist * s)
    };
    let mut map = WorldMap::new("t", 20000.0, 20000.0)
        .with_object(at(5, 23.0, 1500.0))
        .with_object(at(2, -23.0, 1500.0));
    for i in 0..12 {
        let i = f64::from(i);
        map = map.with_object(at(7, -16.0 + i * 32.0 / 11.0, 5000.0 + 100.0 * i));
    }
    let r = robot_in(map, 10000.0, 10000.0, 0.0);
    let blobs = r.vision();
    let channels: Vec<u8> = blobs.iter().map(|b| b.channel).collect();
    assert_eq!(channels[..2], [2, 5], "{blobs:?}");
    let sevens: Vec<&Blob> = blobs.iter().filter(|b| b.channel == 7).collect();
    assert_eq!(sevens.len(), 10, "{blobs:?}");
    assert!(sevens.windows(2).all(|w| w[0].area >= w[1].area));
    // The two largest channel-7 blobs are the two nearest balls (leftmost in view = rightmost
    // in the image is the farthest).
    assert!(sevens[0].x > 80 && sevens[0].x > sevens[9].x, "{sevens:?}");
}

#[test]
fn box_object_is_seen() {
    let map = WorldMap::new("t", 10000.0, 10000.0).with_object(ColouredObject {
        channel: 1,
        center: (6500.0, 5000.0),
        shape: ObjectShape::Rect {
            dx: 400.0,
            dy: 400.0,
        },
        height: 500.0,
    });
    let r = robot_in(map, 5000.0, 5000.0, 0.0);
    let blobs = r.vision();
    assert_eq!(blobs.len(), 1);
    // The near corners are +-200 mm across at 1300 mm: columns 80 -+ 176.6 * 200 / 1300.
    let b = blobs[0];
    assert!((53..=57).contains(&(b.right - b.left + 1)), "{b:?}");
}

#[test]
fn gripper_commands_and_state() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    assert_eq!(r.gripper().state, state::PADDLES_CLOSED | state::LIFT_UP);
    r.gripper_command(cmd::GRIP_DEPLOY, 0);
    run(&mut r, 0.5);
    assert_eq!(
        r.gripper().state,
        state::PADDLES_MOVING | state::LIFT_MOVING
    );
    run(&mut r, 2.0);
    let g = r.gripper();
    assert_eq!(g.state, state::PADDLES_OPEN | state::LIFT_DOWN);
    assert_eq!(g.beams & 0x30, 0x30);
    assert_eq!(g.beams & (beams::OUTER_BEAM | beams::INNER_BEAM), 0);
}

#[test]
fn step_splits_long_steps_and_ignores_bad_ones() {
    let mut r = robot_in(WorldMap::new("t", 10000.0, 10000.0), 5000.0, 5000.0, 0.0);
    r.set_velocity(200, 0);
    r.step(1.0);
    assert_eq!(r.position().x, 200);
    r.step(-1.0);
    r.step(f64::NAN);
    assert_eq!(r.position().x, 200);
    assert!(near(r.elapsed(), 1.0, 1e-9));
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

#[test]
fn shipped_room_parses() {
    let map = WorldMap::default_room();
    assert_eq!(map.name(), "room");
    assert_eq!((map.width(), map.height()), (10000.0, 8000.0));
    assert_eq!(map.start_pose(), (2000.0, 2000.0, (-18f64).to_radians()));
    // Sensors and odometry of a world file are noisy unless it says otherwise.
    assert_eq!(*map.noise(), Noise::PIONEER);
    assert!(map.walls().len() >= 4);
    assert!(!map.boxes().is_empty() && !map.pillars().is_empty());
    let channels: Vec<u8> = map.objects().iter().map(|o| o.channel).collect();
    assert_eq!(channels, [0, 1, 2]);
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/worlds/room.toml");
    assert_eq!(WorldMap::from_file(&file).unwrap().objects(), map.objects());

    // From the start pose the red ball (channel 0) is in view, 18 degrees to the left of
    // the axis (left of the image's centre column, 80), and straight ahead is the south wall,
    // met obliquely: nothing in the room sits squarely on the start axis.
    let r = SimRobot::new(Arc::new(map), RobotParams::default());
    let blobs = r.vision();
    let red: Vec<_> = blobs.iter().filter(|b| b.channel == 0).collect();
    assert_eq!(red.len(), 1, "{blobs:?}");
    assert!(red[0].x < 40, "{red:?}");
    assert_eq!(
        f64::from(r.laser()[180]),
        (2000.0 / 18f64.to_radians().sin()).round()
    );
}

/// The crate embeds its own copy of the shipped room (`sim/worlds/room.toml`, so the crate
/// builds alone); `config/worlds/room.toml` is the copy users read and serve. They must
/// stay the same file.
#[test]
fn the_embedded_room_is_the_shipped_config_worlds_room_toml() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/worlds/room.toml");
    let shipped = std::fs::read_to_string(&file).unwrap();
    assert!(
        shipped == ROOM_TOML,
        "config/worlds/room.toml and sim/worlds/room.toml differ: edit both (the sim crate \
         embeds its copy, users read config's)"
    );
}

#[test]
fn toml_schema_round_trip() {
    let map = WorldMap::from_toml_str(
        r#"
        [world]
        width = 5000
        height = 4000.5
        [robot]
        pose = [1000, 1000, 90]
        [[wall]]
        from = [2500, 0]
        to = [2500, 2000]
        [[box]]
        min = [3000, 3000]
        max = [3500, 3500]
        [[pillar]]
        center = [4000, 1000]
        radius = 100
        [[object]]
        channel = 31
        center = [1000, 3000]
        size = [200, 300]
        "#,
    )
    .unwrap();
    assert_eq!(map.name(), "world");
    assert_eq!(map.height(), 4000.5);
    let (x, y, th) = map.start_pose();
    assert_eq!((x, y), (1000.0, 1000.0));
    assert!(near(th, std::f64::consts::FRAC_PI_2, 1e-12));
    assert_eq!(map.objects()[0].height, 300.0);
    assert_eq!(
        map.objects()[0].shape,
        ObjectShape::Rect {
            dx: 200.0,
            dy: 300.0
        }
    );
    // 4 edges + 1 wall + 1 box + 1 pillar + 1 object.
    assert_eq!(map.solids().len(), 8);
}

fn err(text: &str) -> String {
    WorldMap::from_toml_str(text).unwrap_err().to_string()
}

#[test]
fn unknown_keys_are_named() {
    let base = "[world]\nwidth = 5000\nheight = 5000\n";
    let e = err(&format!(
        "{base}[[wall]]\nfrom = [0, 0]\nto = [1, 1]\ncolour = \"red\"\n"
    ));
    assert!(e.contains("colour") && e.contains("wall[0]"), "{e}");
    let e = err(&format!(
        "{base}[[box]]\nmin = [0, 0]\nmax = [1, 1]\n[[boxes]]\nmin = [0, 0]\n"
    ));
    assert!(e.contains("boxes"), "{e}");
    let e = err("[world]\nwidth = 5000\nheight = 5000\ndepth = 3\n");
    assert!(e.contains("depth") && e.contains("world"), "{e}");
    let e = err(&format!("{base}[robot]\npose = [100, 100]\n"));
    assert!(e.contains("robot.pose"), "{e}");
}

#[test]
fn bad_values_are_named() {
    let base = "[world]\nwidth = 5000\nheight = 5000\n";
    let e = err(&format!(
        "{base}[[pillar]]\ncenter = [1000, 1000]\nradius = \"big\"\n"
    ));
    assert!(e.contains("pillar[0]") && e.contains("radius"), "{e}");
    let e = err(&format!(
        "{base}[[pillar]]\ncenter = [1000, 1000]\nradius = -5\n"
    ));
    assert!(e.contains("pillar[0].radius"), "{e}");
    let e = err(&format!(
        "{base}[[object]]\nchannel = 32\ncenter = [1, 1]\nradius = 5\n"
    ));
    assert!(e.contains("object[0].channel"), "{e}");
    let e = err(&format!("{base}[[object]]\nchannel = 3\ncenter = [1, 1]\n"));
    assert!(e.contains("object[0]") && e.contains("radius"), "{e}");
    let e = err(&format!(
        "{base}[[box]]\nmin = [100, 100]\nmax = [50, 200]\n"
    ));
    assert!(e.contains("box[0].max"), "{e}");
    let e = err(&format!("{base}[[wall]]\nfrom = [0, 0]\n"));
    assert!(e.contains("wall[0]") && e.contains("to"), "{e}");
    let e = err(&format!("{base}[wall]\nfrom = [0, 0]\nto = [1, 1]\n"));
    assert!(e.contains("[[wall]]"), "{e}");
    let e = err("[robot]\npose = [1, 1, 0]\n");
    assert!(e.contains("[world]"), "{e}");
    let e = err(&format!("{base}[robot]\npose = [100, 2500, 0]\n"));
    assert!(e.contains("robot.pose") && e.contains("west edge"), "{e}");
    let e = err(&format!(
        "{base}[robot]\npose = [1000, 1000, 0]\n[[box]]\nmin = [900, 900]\nmax = [1100, 1100]\n"
    ));
    assert!(e.contains("overlaps box[0]"), "{e}");
    let e = err("[world\nwidth = 1");
    assert!(e.contains("syntax"), "{e}");
}

#[test]
fn file_errors_name_the_file() {
    let missing = std::path::Path::new("/nonexistent/dir/nowhere.toml");
    let e = WorldMap::from_file(missing).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/dir/nowhere.toml"), "{e}");

    let dir = std::env::temp_dir().join(format!("player-world-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "[world]\nwidth = 100\nheight = 100\nfloor = \"wood\"\n",
    )
    .unwrap();
    let e = WorldMap::from_file(&path).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(e.contains("bad.toml") && e.contains("floor"), "{e}");
}

/// `r` with the Pioneer's noise and `seed`.
fn noisy(mut r: SimRobot, seed: u64) -> SimRobot {
    r.set_noise(Noise::PIONEER, seed);
    r
}

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

/// A seeded run of `world` for `ticks` ticks, every reading of every robot written to
/// `out`: each tick the true poses (bits) and `p`; every few ticks (a cadence per robot)
/// sonar, laser, full scan, gripper and misc, some read twice in the same tick and some
/// through the batch readers. Robots drive by a per-index plan: `i % 4 == 0` stand still,
/// 1 wander (turning away from what the front sonars see), 2 turn on the spot then stand,
/// 3 drive a while then stand with its gripper working; robot 1 is moved by hand once.
fn dump_world(name: &str, mut world: SimWorld, ticks: u64, out: &mut String) {
    use std::fmt::Write as _;
    let n = world.len();
    let _ = writeln!(out, "world {name} robots {n} pucks {}", world.pucks().len());
    for t in 0..ticks {
        for i in 0..n {
            let phase = t / 200;
            match i % 4 {
                1 => {
                    let s = world.sonar(i);
                    let front = s[2..6].iter().copied().min().unwrap_or(5000);
                    if front < 700 {
                        world.controls(i).set_velocity(0, 40);
                    } else {
                        world
                            .controls(i)
                            .set_velocity(300, (phase as i16 % 3 - 1) * 10);
                    }
                }
                2 if phase < 3 => world.controls(i).set_velocity(0, 30),
                2 => world.controls(i).set_velocity(0, 0),
                3 if phase % 2 == 0 => world.controls(i).set_velocity(200, 0),
                3 => {
                    world.controls(i).set_velocity(0, 0);
                    if t % 200 == 0 {
                        world.controls(i).gripper_command(cmd::GRIP_OPEN, 0);
                    }
                    if t % 200 == 100 {
                        world.controls(i).gripper_command(cmd::GRIP_CLOSE, 0);
                    }
                }
                _ => {}
            }
        }
        if t == ticks / 2 && n > 1 {
            let (x, y, th) = world.robot(1).true_pose();
            world.robot_mut(1).set_true_pose(x + 30.0, y, th + 0.1);
        }
        world.tick();
        for i in 0..n {
            let (x, y, th) = world.robot(i).true_pose();
            let _ = writeln!(
                out,
                "{t} {i} pose {:x} {:x} {:x} p {:?}",
                x.to_bits(),
                y.to_bits(),
                th.to_bits(),
                world.position(i)
            );
            let every = 5 + (i as u64 % 3) * 5;
            if t % every == 0 {
                let _ = writeln!(out, "{t} {i} s {:?}", world.sonar(i));
                let _ = writeln!(out, "{t} {i} l {:?}", world.laser(i));
                if i % 2 == 0 {
                    // Twice in the same instant: the same readings.
                    let _ = writeln!(out, "{t} {i} s2 {:?}", world.sonar(i));
                    let (l, scan) = world.laser_and_scan(i);
                    let _ = writeln!(out, "{t} {i} lL {:?} {:?}", l, scan.ranges);
                }
                let _ = writeln!(
                    out,
                    "{t} {i} g {:?} m {:?}",
                    world.gripper(i),
                    world.misc(i)
                );
            }
        }
        if t % 50 == 25 {
            let all: Vec<usize> = (0..n).collect();
            let _ = writeln!(out, "{t} many s {:?}", world.sonar_many(&all));
            let _ = writeln!(out, "{t} many l {:?}", world.laser_many(&all));
        }
        for (k, p) in world.pucks().iter().enumerate() {
            let _ = writeln!(
                out,
                "{t} puck {k} {:x} {:x} {:?}",
                p.center.x.to_bits(),
                p.center.y.to_bits(),
                p.held_by
            );
        }
    }
}

/// Writes the seeded dump of several worlds (30 simulated seconds each) to the file named
/// by `SIM_DUMP`, to compare two builds of the simulator byte for byte (md5 of the file):
/// `SIM_DUMP=/tmp/a.txt cargo test -p player-sim --lib -- --ignored seeded_dump`.
#[test]
#[ignore = "writes a file for comparing builds; run by hand with SIM_DUMP set"]
fn seeded_dump_of_worlds_for_comparing_builds() {
    let Ok(path) = std::env::var("SIM_DUMP") else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/worlds");
    let ticks = 3000;
    let mut out = String::new();
    dump_world(
        "room",
        SimWorld::new(Arc::new(WorldMap::default_room())),
        ticks,
        &mut out,
    );
    for file in ["arena", "maze", "turtlebot"] {
        let map = WorldMap::from_file(&dir.join(format!("{file}.toml"))).unwrap();
        dump_world(file, SimWorld::new(Arc::new(map)), ticks, &mut out);
    }
    // Twelve robots in the room, three pucks among them, a seed of its own.
    let mut map = WorldMap::default_room().with_seed(99);
    for k in 0..12 {
        let (x, y) = (
            1500.0 + 1100.0 * (k % 4) as f64,
            1500.0 + 1300.0 * (k / 4) as f64,
        );
        map = map.with_robot(RobotPlacement {
            name: format!("r{k}"),
            pose: (x, y, f64::from(k) * 0.7),
            channel: Some((k % 8) as u8),
            port: None,
            devices: None,
            laser: LaserSpec::default(),
        });
    }
    let mut world = SimWorld::new(Arc::new(map));
    for k in 0..3 {
        let (x, y, th) = world.robot(4 * k + 3).true_pose();
        world.add_puck(PuckPlacement {
            center: (x + 600.0 * th.cos(), y + 600.0 * th.sin()),
            radius: 40.0,
            channel: Some(1),
        });
    }
    dump_world("room12", world, ticks, &mut out);
    std::fs::write(path, out).unwrap();
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
