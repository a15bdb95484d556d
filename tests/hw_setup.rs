//! Base and laser together on the emulators: a request opening both is answered within
//! 1.5 s, also when a crashed earlier server left the robot open and the laser streaming at
//! 38400 baud; and the laser, riding on the emulated robot, sees it move.

mod hw_support;

use hw_support::*;
use player::emulators::p2os::P2osEmulator;
use player::emulators::sick::SickEmulator;
use player::emulators::{EmuWorld, SerialEmulator};
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
    drive_until(
        &mut c,
        (300, 0),
        "the range straight ahead to shrink",
        |r| r.laser.as_ref().unwrap().ranges[180] + 200 < ahead,
    );
    c.set_speed(0, 0).unwrap();
}

#[test]
fn the_shipped_pioneer_configuration_names_every_real_driver() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/pioneer.toml");
    let s = player::settings::Settings::from_file(&path).unwrap();
    let drivers: Vec<(&str, Vec<String>)> = s.robot[0]
        .driver
        .iter()
        .map(|d| (d.driver.as_str(), d.devices.clone()))
        .collect();
    assert_eq!(
        drivers,
        vec![
            ("p2os", vec!["p".into(), "s".into(), "m".into(), "g".into()]),
            ("sicklms200", vec!["l".into()]),
            ("sonyptz", vec!["z".into()]),
            ("acts", vec!["v".into()]),
        ]
    );
    // Every driver accepts its parameters (the factories start when a server runs; here,
    // at least the catalog knows every name).
    let catalog = player::builtin_catalog();
    for (name, _) in &drivers {
        assert!(catalog.get(name).is_some(), "{name} is not registered");
    }
}

#[test]
fn the_player_emulate_program_serves_a_robot_the_driver_can_drive() {
    let dir = scratch_dir("emulate-bin");
    let link = dir.join("ttyP2OS");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_player-emulate"))
        .args(["p2os", "--link", link.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the emulator's link", || link.exists());
    let server = start_server(&robot_toml(&[(
        "p2os",
        "psmg",
        &format!("port = \"{}\"\nmotors_on = true", link.display()),
    )]));
    let mut c = server.client();
    let ok = c.request("pa").and_then(|g| g.check()).is_ok();
    let moved = ok && {
        c.set_speed(200, 0).unwrap();
        let deadline = Instant::now() + TIMEOUT;
        let mut moved = false;
        while !moved && Instant::now() < deadline {
            c.set_speed(200, 0).unwrap();
            moved = c.read().unwrap().position.unwrap().x > 50;
        }
        moved
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(ok && moved, "{}", server.log.dump());
}

#[test]
fn every_shipped_configuration_loads_and_names_registered_drivers() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let catalog = player::builtin_catalog();
    let mut seen = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = e.path();
        if path.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let s = player::settings::Settings::from_file(&path)
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        for r in &s.robot {
            for d in &r.driver {
                assert!(
                    catalog.get(&d.driver).is_some(),
                    "{}: driver {} is not registered",
                    path.display(),
                    d.driver
                );
            }
        }
        seen.push(path.file_name().unwrap().to_string_lossy().into_owned());
    }
    for name in ["pioneer.toml", "hokuyo.toml", "create.toml"] {
        assert!(seen.iter().any(|s| s == name), "{name} in {seen:?}");
    }
}
