//! The simulated Pioneer driven over the protocol: position commands, odometry, motor
//! power, sensors that follow the motion, and the robot stopping when its driver leaves.
//!
//! The default room puts the robot at (2000, 2000) mm facing east down a clear 6 m lane
//! towards a red ball; the west wall is 2 m behind it.

use player_proto::data::{Laser, Position, Sonar};
use player_testkit::*;
use std::time::Duration;

/// Reads rounds of `n` packets for about `d`; returns the last one.
fn last_round_after(c: &mut Client, n: usize, d: Duration) -> Vec<Packet> {
    let end = std::time::Instant::now() + d;
    let mut last = c.read_round(n);
    c.resend_held();
    while std::time::Instant::now() < end {
        last = c.read_round(n);
        c.resend_held();
    }
    last
}

#[test]
fn a_speed_command_drives_the_robot_forward() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    let start = c.next_position();
    assert!(start.x.abs() < 5 && start.y.abs() < 5, "{start:?}");
    assert_eq!(start.speed, 0);
    // c p <4> speed 200 turn 0, sent again every round (the command watchdog).
    c.hold(&[0x63, b'p', 0x00, 0x04, 0x00, 0xC8, 0x00, 0x00]);
    let p = c.position_after(Duration::from_millis(1500));
    assert!(p.x > start.x + 150, "x did not increase enough: {p:?}");
    assert!(p.y.abs() < 20, "{p:?}");
    assert!(heading_near_zero(p.heading, 2), "{p:?}");
    assert!((190..=210).contains(&p.speed), "{p:?}");
    assert_eq!(p.stall, 0);
    // Still moving.
    let later = c.position_after(Duration::from_millis(500));
    assert!(later.x > p.x + 50, "{later:?}");
}

#[test]
fn a_turn_command_turns_counterclockwise() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    let start = c.next_position();
    assert!(heading_near_zero(start.heading, 1), "{start:?}");
    c.drive(0, 30);
    let p = c.position_after(Duration::from_millis(1500));
    // About 45 degrees after 1.5 s at 30 degrees/s.
    assert!((20..=80).contains(&p.heading), "{p:?}");
    assert!((25..=35).contains(&p.turn_rate), "{p:?}");
    assert!(p.x.abs() < 30 && p.y.abs() < 30, "turning in place: {p:?}");
    // Clockwise takes it back through 0 to the other side.
    c.drive(0, -60);
    let q = c.position_after(Duration::from_millis(1500));
    assert!((270..=345).contains(&q.heading), "{q:?}");
    assert!(q.turn_rate < 0, "{q:?}");
}

#[test]
fn odometry_reset_brings_the_pose_back_to_zero() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    c.drive(300, 20);
    let moved = c.position_after(Duration::from_millis(1000));
    assert!(moved.x > 100 && moved.heading > 5, "{moved:?}");
    c.drive(0, 0);
    // The wheels slow down at the Pioneer's acceleration: wait until the robot stands.
    assert_stops(&mut c);
    // x p <1> R
    c.send(&[0x78, b'p', 0x00, 0x01, b'R']);
    let p = c.position_after(Duration::from_millis(500));
    assert!(p.x.abs() < 10 && p.y.abs() < 10, "{p:?}");
    assert!(heading_near_zero(p.heading, 1), "{p:?}");
}

#[test]
fn laser_and_sonar_follow_the_motion() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(
        c.request(&[(b'p', b'a'), (b'l', b'r'), (b's', b'r')]),
        b"palrsr"
    );
    let before = c.read_round(3);
    let laser0 = Laser::decode(&before[1].1).unwrap();
    let sonar0 = Sonar::decode(&before[2].1).unwrap();
    // Straight ahead (index 180) is the ball 6 m away; behind are the sonars facing the
    // west wall 2 m back (rear sonars 11 and 12 point at about 180 degrees).
    assert!(
        (5000..7000).contains(&laser0.ranges[180]),
        "{}",
        laser0.ranges[180]
    );
    c.drive(400, 0);
    let round = last_round_after(&mut c, 3, Duration::from_millis(2000));
    c.drive(0, 0);
    let p = Position::decode(&round[0].1).unwrap();
    let laser1 = Laser::decode(&round[1].1).unwrap();
    let sonar1 = Sonar::decode(&round[2].1).unwrap();
    assert!(p.x > 400, "{p:?}");
    let closer = i32::from(laser0.ranges[180]) - i32::from(laser1.ranges[180]);
    assert!(
        closer > 300,
        "front laser range went from {} to {} after moving {} mm",
        laser0.ranges[180],
        laser1.ranges[180],
        p.x
    );
    for k in [11, 12] {
        let farther = i32::from(sonar1.ranges[k]) - i32::from(sonar0.ranges[k]);
        assert!(
            farther > 300,
            "rear sonar {k} went from {} to {} after moving {} mm",
            sonar0.ranges[k],
            sonar1.ranges[k],
            p.x
        );
    }
}

/// A watcher reading position, and a driver that made `request` (answered by `reply`) and
/// drives at 300 mm/s, checked to be moving.
fn watched_driver(server: &TestServer, request: &[(u8, u8)], reply: &[u8]) -> (Client, Client) {
    let mut watcher = Client::connect(server.addr());
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    let mut driver = Client::connect(server.addr());
    assert_eq!(driver.request(request), reply);
    driver.drive(300, 0);
    let moving = watcher.position_after(Duration::from_millis(800));
    assert!(moving.speed > 250, "{moving:?}");
    (watcher, driver)
}

#[test]
fn the_robot_stops_when_its_driving_client_disconnects() {
    // A long command watchdog: only the writer leaving can stop the robot here.
    let server = start_server_command_timeout(60.0);
    let (mut watcher, driver) = watched_driver(&server, &[(b'p', b'a')], b"pa");
    drop(driver);
    assert_stops(&mut watcher);
}

#[test]
fn the_robot_stops_when_a_write_only_client_disconnects() {
    // A long command watchdog: only the writer leaving can stop the robot here.
    let server = start_server_command_timeout(60.0);
    let (mut watcher, driver) = watched_driver(&server, &[(b'p', b'w')], b"pw");
    drop(driver);
    assert_stops(&mut watcher);
}

#[test]
fn closing_position_stops_the_robot() {
    // A long command watchdog: only the writer leaving can stop the robot here.
    let server = start_server_command_timeout(60.0);
    let (mut watcher, mut driver) = watched_driver(&server, &[(b'p', b'a'), (b's', b'r')], b"pasr");
    assert_eq!(driver.request(&[(b'p', b'c')]), b"pc");
    assert_stops(&mut watcher);
}

#[test]
fn dropping_to_read_only_stops_the_robot() {
    // A long command watchdog: only the writer leaving can stop the robot here.
    let server = start_server_command_timeout(60.0);
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    c.drive(300, 0);
    let moving = c.position_after(Duration::from_millis(800));
    assert!(moving.speed > 250, "{moving:?}");
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    assert_stops(&mut c);
}

#[test]
fn motor_power_off_stops_the_robot_and_on_resumes_the_command() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    c.drive(300, 0);
    let moving = c.position_after(Duration::from_millis(800));
    assert!(moving.speed > 250, "{moving:?}");
    // x p <2> m 0
    c.send(&[0x78, b'p', 0x00, 0x02, b'm', 0x00]);
    assert_stops(&mut c);
    // Commands do not move it while the power is off.
    c.drive(300, 0);
    let p = c.position_after(Duration::from_millis(300));
    let q = c.position_after(Duration::from_millis(700));
    assert_eq!(q.speed, 0, "{q:?}");
    assert!((q.x - p.x).abs() < 5, "{p:?} {q:?}");
    // Power back on: the last command takes effect again (the simulator keeps it).
    c.send(&[0x78, b'p', 0x00, 0x02, b'm', 0x01]);
    let r = c.position_after(Duration::from_millis(800));
    assert!(r.speed > 250 && r.x > q.x + 50, "{r:?}");
}

#[test]
fn two_robots_on_two_ports_are_independent() {
    // Two robots of the shipped arena world (the paper's formation), one port each.
    let text = r#"
[[robot]]
name = "one"
[[robot.driver]]
driver = "sim"
devices = ["p", "s"]
[robot.driver.params]
world = "config/worlds/arena.toml"
robot = "leader"

[[robot]]
name = "two"
[[robot.driver]]
driver = "sim"
devices = ["p", "l"]
[robot.driver.params]
world = "config/worlds/arena.toml"
robot = "left"
"#;
    let settings = player::settings::Settings::from_toml(text, "two robots").unwrap();
    let server = start_server_with(settings, player::builtin_catalog());
    let [one, two] = [server.addrs()[0], server.addrs()[1]];
    assert_ne!(one, two);
    let mut a = Client::connect(one);
    let mut b = Client::connect(two);
    // Each robot has its own device table.
    assert_eq!(a.request(&[(b'p', b'a'), (b'l', b'r')]), b"pale");
    assert_eq!(b.request(&[(b'p', b'a'), (b's', b'r')]), b"pase");
    a.drive(300, 0);
    let pa = a.position_after(Duration::from_millis(1000));
    let pb = b.position_after(Duration::from_millis(100));
    assert!(pa.x > 150, "{pa:?}");
    assert_eq!(pb.speed, 0, "{pb:?}");
    assert!(pb.x.abs() < 5, "{pb:?}");
}

/// The watcher sees the speed go to 0 within a second and x stop increasing.
fn assert_stops(watcher: &mut Client) {
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    let mut p = watcher.next_position();
    while p.speed != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the robot did not stop: {p:?}"
        );
        p = watcher.next_position();
    }
    let a = watcher.position_after(Duration::from_millis(200));
    let b = watcher.position_after(Duration::from_millis(600));
    assert_eq!(b.speed, 0, "{b:?}");
    assert!(
        (b.x - a.x).abs() < 5,
        "x still changing after the stop: {a:?} then {b:?}"
    );
}
