//! Driving: the drive in direct and separate mode, acceleration, clamping, collisions and
//! bumpers, motor power, odometry reset, battery, and long steps.

use super::*;

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
