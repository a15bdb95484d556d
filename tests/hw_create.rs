//! The iRobot Create 2 driver (`create`) end to end: a TCP client, the server, the real
//! driver, a pseudo-terminal and the emulated base (Open Interface, kinematics, encoders,
//! bumpers); driving, odometry, motor power, the watchdog, hazards, a base reset, bad
//! frames, shutdown and SIGTERM of the `player` binary.

use player::emulators::create::CreateEmulator;
use player::emulators::SerialEmulator;
use player_client::device;
use player_devices::create::{self as codec, mode};
use player_testkit::hw::*;
use std::time::{Duration, Instant};

type Base = SerialEmulator<CreateEmulator>;

fn base() -> Base {
    SerialEmulator::start(CreateEmulator::open_floor(), None).unwrap()
}

fn create_toml(emu: &Base, robot_keys: &str) -> String {
    format!(
        "[server]\nsetup_timeout = 20.0\n[[robot]]\nname = \"hw\"\n{robot_keys}\n\
         [[robot.driver]]\ndriver = \"create\"\ndevices = [\"p\", \"m\"]\n\
         [robot.driver.params]\nport = \"{}\"\n",
        emu.path().display()
    )
}

/// The distance the emulated base has driven from its start, mm.
fn driven(emu: &Base) -> f64 {
    emu.device(|d| (d.pose.x - 5.0).hypot(d.pose.y - 5.0) * 1000.0)
}

#[test]
fn setup_starts_the_oi_in_safe_mode_and_streams() {
    let emu = base();
    let server = start_server(&create_toml(&emu, ""));
    let mut c = server.client();
    let t = Instant::now();
    c.request("pamr").unwrap().check().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "setup {:?}",
        t.elapsed()
    );
    let ops = emu.device(|d| d.opcodes.clone());
    assert_eq!(
        &ops[..4],
        &[
            codec::START,
            codec::SAFE,
            codec::DRIVE_DIRECT,
            codec::STREAM
        ]
    );
    assert_eq!(emu.device(|d| d.mode), mode::SAFE);
    read_until(&mut c, "position and misc", |r| {
        r.position.is_some() && r.misc.is_some()
    });
    let m = c.round().misc.unwrap();
    assert_eq!(m.voltage, 156, "15.6 V in decivolts");
    assert_eq!(m.front_bumpers, 0);
}

#[test]
fn driven_at_10_hz_the_base_moves_and_p_follows() {
    let emu = base();
    let server = start_server(&create_toml(&emu, ""));
    let mut c = server.client();
    c.request("pa").unwrap().check().unwrap();
    c.set_frequency(10).unwrap();
    // Forward at 200 mm/s for about 1.5 s, a command with every round (10 Hz).
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(1500) {
        c.set_speed(200, 0).unwrap();
        c.read().unwrap();
    }
    assert_eq!(emu.device(|d| d.wheels), (200, 200));
    let truth = driven(&emu);
    assert!(truth > 200.0, "the base moved {truth} mm");
    read_until(&mut c, "odometry to catch up", |r| {
        let p = r.position.unwrap();
        (f64::from(p.x) - driven(&emu)).abs() < 20.0
    });
    let p = c.round().position.unwrap();
    assert!(p.y.abs() < 10, "{p:?}");
    assert!(p.heading == 0 || p.heading == 359, "{p:?}");
    assert!((p.speed - 200).abs() < 30, "speed {p:?}");
    // Turning left in place at 45 deg/s for 2 s: about 90 degrees counter-clockwise.
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(2000) {
        c.set_speed(0, 45).unwrap();
        c.read().unwrap();
    }
    c.set_speed(0, 0).unwrap();
    wait_for("the base to stop", || emu.device(|d| d.wheels) == (0, 0));
    let truth = emu.device(|d| d.pose.heading.to_degrees());
    assert!(
        (60.0..120.0).contains(&truth),
        "the base turned {truth} deg"
    );
    read_until(&mut c, "the heading to follow", |r| {
        let h = f64::from(r.position.unwrap().heading);
        (h - truth).abs() < 3.0
    });
    // Reset: back to (0, 0, 0), and odometry goes on from there.
    c.reset_odometry().unwrap();
    read_until(&mut c, "odometry reset", |r| {
        let p = r.position.unwrap();
        p.x == 0 && p.y == 0 && p.heading == 0
    });
}

#[test]
fn one_command_then_silence_stops_the_base_within_the_watchdog() {
    let emu = base();
    let server = start_server(&create_toml(&emu, "command_timeout = 0.5"));
    let mut c = server.client();
    c.request("pa").unwrap().check().unwrap();
    c.set_notices(true).unwrap();
    c.set_speed(150, 0).unwrap();
    wait_for("the wheels to turn", || {
        emu.device(|d| d.wheels) == (150, 150)
    });
    let hung = Instant::now();
    wait_for("the base to get the zero command", || {
        emu.device(|d| d.wheels) == (0, 0)
    });
    let took = hung.elapsed();
    assert!(took <= Duration::from_millis(1500), "{took:?}");
    assert!(
        took >= Duration::from_millis(300),
        "{took:?}: not the watchdog"
    );
    let n = c.wait_notice(TIMEOUT).unwrap().expect("a watchdog notice");
    assert_eq!((n.kind, n.device), (b'w', b'p'), "{n:?}");
}

#[test]
fn motor_power_off_is_passive_and_on_is_safe() {
    let emu = base();
    let server = start_server(&create_toml(&emu, ""));
    let mut c = server.client();
    c.request("pa").unwrap().check().unwrap();
    c.read().unwrap();
    c.set_motor_power(false).unwrap();
    wait_for("passive mode", || emu.device(|d| d.mode) == mode::PASSIVE);
    c.set_speed(100, 0).unwrap();
    // Nothing may move while the motors are off (a sleep: proving that nothing happens).
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(emu.device(|d| d.wheels), (0, 0));
    c.set_motor_power(true).unwrap();
    wait_for("safe mode", || emu.device(|d| d.mode) == mode::SAFE);
    // The command from before is not obeyed (a sleep: proving nothing moves); a new one is.
    c.set_speed(100, 0).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(emu.device(|d| d.wheels), (0, 0));
    c.set_speed(120, 0).unwrap();
    wait_for("the wheels to turn", || {
        emu.device(|d| d.wheels) == (120, 120)
    });
}

#[test]
fn a_cliff_stops_the_base_and_says_so_on_the_error_channel() {
    let emu = base();
    let server = start_server(&create_toml(&emu, "command_timeout = 60.0"));
    let mut c = server.client();
    c.request("pa").unwrap().check().unwrap();
    c.set_notices(true).unwrap();
    c.set_speed(200, 0).unwrap();
    wait_for("the wheels to turn", || {
        emu.device(|d| d.wheels) == (200, 200)
    });
    emu.device(|d| d.cliff = true);
    let n = c.wait_notice(TIMEOUT).unwrap().expect("a hazard notice");
    assert_eq!((n.kind, n.device), (b'f', b'p'), "{n:?}");
    assert!(n.text.contains("cliff"), "{n:?}");
    assert_eq!(emu.device(|d| d.wheels), (0, 0));
    // The command sent before the cliff is not obeyed again once it clears.
    emu.device(|d| d.cliff = false);
    let n = c.wait_notice(TIMEOUT).unwrap().expect("a cleared notice");
    assert_eq!((n.kind, n.device), (b'u', b'p'), "{n:?}");
    wait_for("safe mode again", || emu.device(|d| d.mode) == mode::SAFE);
    // Still stopped (a sleep: proving the old command does not come back).
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(emu.device(|d| d.wheels), (0, 0));
    c.set_speed(100, 0).unwrap();
    wait_for("a new command to drive", || {
        emu.device(|d| d.wheels) == (100, 100)
    });
    // A wheel drop too.
    emu.device(|d| d.wheel_drop = true);
    let n = c
        .wait_notice(TIMEOUT)
        .unwrap()
        .expect("a wheel drop notice");
    assert!(n.text.contains("wheel drop"), "{n:?}");
    assert_eq!(emu.device(|d| d.wheels), (0, 0));
}

#[test]
fn bumping_a_wall_shows_on_the_misc_bumpers() {
    let emu = SerialEmulator::start(
        CreateEmulator::new(
            player::emulators::scene::Scene::empty(2.0, 2.0),
            player::emulators::scene::Pose {
                x: 1.5,
                y: 1.0,
                heading: 0.0,
            },
        ),
        None,
    )
    .unwrap();
    let server = start_server(&create_toml(&emu, ""));
    let mut c = server.client();
    c.request("pamr").unwrap().check().unwrap();
    drive_until(&mut c, (200, 0), "the front bumpers", |r| {
        r.misc.is_some_and(|m| m.front_bumpers == 0b11111)
    });
}

#[test]
fn a_base_that_resets_is_started_again_and_bad_frames_are_dropped() {
    let emu = base();
    let server = start_server(&create_toml(&emu, ""));
    let mut c = server.client();
    c.request("pamr").unwrap().check().unwrap();
    c.set_timestamps(true).unwrap();
    emu.faults(|f| {
        f.corrupt = 3;
        f.junk = 3;
    });
    wait_for("the faults to go out", || {
        emu.faults(|f| f.corrupt == 0 && f.junk == 0)
    });
    c.read().unwrap();
    assert!(
        server.log.has(&["bad sensor frame dropped", "BadChecksum"]),
        "{}",
        server.log.dump()
    );
    let starts = emu.device(|d| d.opcodes.iter().filter(|&&o| o == codec::START).count());
    emu.device(CreateEmulator::restart);
    wait_for("the driver to notice", || {
        server.log.has(&["base link lost"])
    });
    wait_for("START, SAFE and STREAM again", || {
        emu.device(|d| {
            d.mode == mode::SAFE
                && d.streaming()
                && d.opcodes.iter().filter(|&&o| o == codec::START).count() > starts
        })
    });
    let t0 = c.read().unwrap().timestamp(device::POSITION);
    read_until(&mut c, "fresh readings", |r| {
        r.timestamp(device::POSITION) > t0
    });
    c.set_speed(100, 0).unwrap();
    wait_for("the restarted base to drive", || {
        emu.device(|d| d.wheels) == (100, 100)
    });
}

#[test]
fn closing_and_server_exit_stop_the_base_then_the_oi() {
    let emu = base();
    let server = start_server(&create_toml(&emu, "command_timeout = 60.0"));
    let mut c = server.client();
    c.request("pa").unwrap().check().unwrap();
    c.set_speed(200, 0).unwrap();
    wait_for("the wheels to turn", || {
        emu.device(|d| d.wheels) == (200, 200)
    });
    let before = emu.device(|d| d.opcodes.len());
    drop(c);
    server.shutdown();
    wait_for("the OI's STOP", || {
        emu.device(|d| d.opcodes[before..].contains(&codec::OI_STOP))
    });
    let ops = emu.device(|d| d.opcodes[before..].to_vec());
    let stop = ops
        .iter()
        .position(|&o| o == codec::OI_STOP)
        .expect("OI STOP");
    assert!(ops[..stop].contains(&codec::DRIVE_DIRECT), "{ops:?}");
    assert_eq!(emu.device(|d| (d.mode, d.wheels)), (mode::OFF, (0, 0)));
}

#[test]
fn sigterm_of_the_player_binary_leaves_the_base_stopped() {
    let emu = base();
    let port = player_testkit::free_port();
    let dir = scratch_dir("create-sigterm");
    let config = dir.join("create.toml");
    let toml = create_toml(
        &emu,
        &format!("port = {port}\nbind = \"127.0.0.1\"\ncommand_timeout = 60.0"),
    );
    std::fs::write(&config, toml).unwrap();
    let mut player = PlayerProcess::start(env!("CARGO_BIN_EXE_player"), &config, port);
    let c = &mut player.client;
    c.request("pa").unwrap().check().unwrap();
    c.set_speed(200, 0).unwrap();
    wait_for("the wheels to turn", || {
        emu.device(|d| d.wheels) == (200, 200)
    });
    assert_eq!(player.terminate(), Some(0));
    wait_for("the OI's STOP", || emu.device(|d| d.mode) == mode::OFF);
    assert_eq!(emu.device(|d| (d.mode, d.wheels)), (mode::OFF, (0, 0)));
    assert_eq!(
        emu.device(|d| d.opcodes.last().copied()),
        Some(codec::OI_STOP)
    );
}

#[test]
fn the_precise_odometry_p_comes_with_p_from_the_integrated_encoders() {
    let emu = base();
    let toml = create_toml(&emu, "").replace(
        "devices = [\"p\", \"m\"]",
        "devices = [\"p\", \"P\", \"m\"]",
    );
    let server = start_server(&toml);
    let mut c = server.client();
    c.request("paPr").unwrap().check().unwrap();
    drive_until(&mut c, (100, 20), "a turn of some degrees", |r| {
        r.position.is_some_and(|p| (5..90).contains(&p.heading))
    });
    let r = c.read().unwrap().clone();
    let (p, o) = (r.position.unwrap(), r.precise.expect("P in the same round"));
    assert_eq!(
        (o.time, o.x, o.y),
        (p.time, p.x, p.y),
        "one frame, one instant"
    );
    let deg = f64::from(o.heading) / 3600.0;
    assert!((deg - f64::from(p.heading)).abs() <= 0.5, "{p:?} {o:?}");
    assert!(o.turn_rate != 0 && o.speed != 0, "{o:?}");
}
