//! Base and laser together on the emulators: a request opening both is answered within
//! 1.5 s, also when a crashed earlier server left the robot open and the laser streaming at
//! 38400 baud; and the laser, riding on the emulated robot, sees it move.

mod hw_support;

use hw_support::*;
use player::actors::emulators::{EmuWorld, SerialEmulator};
use player::actors::p2os::emulator::P2osEmulator;
use player::actors::sick::emulator::SickEmulator;
use std::time::{Duration, Instant};

fn toml(base: &str, laser: &str) -> String {
    robot_toml(&[
        (
            "p2os",
            "psmg",
            &format!("port = \"{base}\"\nmotors_on = true"),
        ),
        ("sicklms200", "l", &format!("port = \"{laser}\"")),
    ])
}

fn open_both(left_running: bool) -> Duration {
    let world = EmuWorld::room();
    let (base, laser) = if left_running {
        (
            P2osEmulator::left_open(world.clone()),
            SickEmulator::left_streaming(world.clone()),
        )
    } else {
        (
            P2osEmulator::new(world.clone()),
            SickEmulator::new(world.clone()),
        )
    };
    let base = SerialEmulator::start(base, None).unwrap();
    let laser = SerialEmulator::start(laser, None).unwrap();
    let server = start_server(&toml(
        base.path().to_str().unwrap(),
        laser.path().to_str().unwrap(),
    ));
    let mut c = server.client();
    let t = Instant::now();
    c.request("pasrlr").unwrap().check().unwrap();
    let took = t.elapsed();
    let round = c.read().unwrap();
    assert!(round.position.is_some() && round.laser.is_some());
    took
}

#[test]
fn opening_base_and_laser_is_answered_within_1_5_s() {
    let took = open_both(false);
    assert!(took < Duration::from_millis(1500), "took {took:?}");
}

#[test]
fn a_robot_and_laser_left_running_by_a_crashed_server_are_recovered_quickly() {
    let took = open_both(true);
    assert!(took < Duration::from_millis(1500), "took {took:?}");
}

#[test]
fn the_laser_on_the_emulated_robot_sees_it_drive_towards_a_wall() {
    let world = EmuWorld::room();
    let base = SerialEmulator::start(P2osEmulator::new(world.clone()), None).unwrap();
    let laser = SerialEmulator::start(SickEmulator::new(world.clone()), None).unwrap();
    let server = start_server(&toml(
        base.path().to_str().unwrap(),
        laser.path().to_str().unwrap(),
    ));
    let mut c = server.client();
    c.request("palr").unwrap().check().unwrap();
    let ahead = c.read().unwrap().laser.clone().unwrap().ranges[180];
    c.set_speed(300, 0).unwrap();
    read_until(&mut c, "the range straight ahead to shrink", |r| {
        r.laser.as_ref().unwrap().ranges[180] + 200 < ahead
    });
    c.set_speed(0, 0).unwrap();
}
