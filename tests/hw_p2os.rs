//! The P2OS driver end to end: a TCP client, the server, the real `p2os` driver, a
//! pseudo-terminal and the emulated Pioneer, both ways; and its faults (missing port,
//! corrupt frames, a silent robot, unplugging, a robot left open by a crashed server,
//! shutdown).

use player::emulators::p2os::{P2osEmulator, Phase};
use player::emulators::{EmuWorld, SerialEmulator};
use player_client::{device, grip};
use player_testkit::hw::*;
use std::time::{Duration, Instant};

type Robot = SerialEmulator<P2osEmulator>;

fn robot() -> (Robot, EmuWorld) {
    let world = EmuWorld::room();
    let emu = SerialEmulator::start(P2osEmulator::new(world.clone()), None).unwrap();
    (emu, world)
}

fn p2os_toml(path: &str, extra: &str) -> String {
    robot_toml(&[("p2os", "psmg", &format!("port = \"{path}\"\n{extra}"))])
}

#[test]
fn speed_commands_drive_the_emulated_wheels_and_readings_reach_the_client() {
    let (emu, world) = robot();
    let server = start_server(&p2os_toml(emu.path().to_str().unwrap(), "motors_on = true"));
    let mut c = server.client();
    c.request("pasrmrgr").unwrap().check().unwrap();
    assert_eq!(emu.device(|d| d.phase()), Phase::Open);
    assert!(
        emu.device(|d| d.motors_enabled()),
        "motors_on sends ENABLE 1"
    );

    // Readings: sizes are checked by the client's decoder; values against the world.
    let round = c.read().unwrap().clone();
    let pos = round.position.expect("position");
    assert_eq!(
        (pos.x, pos.y, pos.heading, pos.speed, pos.stall),
        (0, 0, 0, 0, 0)
    );
    let truth = world.with(|r| (r.sonar(), r.misc(), r.position().compass));
    let sonar = round.sonar.expect("sonar").ranges;
    for (i, (&got, &want)) in sonar.iter().zip(truth.0.iter()).enumerate() {
        assert!(
            (i32::from(got) - i32::from(want)).abs() <= 1,
            "sonar {i}: {got} mm, the world says {want} mm"
        );
    }
    assert_eq!(round.misc.expect("misc").voltage, truth.1.voltage);
    assert_eq!(pos.compass, truth.2);
    assert!(round.gripper.is_some());

    // Client → wheels: 200 mm/s straight on is VEL2 10/10.
    c.set_speed(200, 0).unwrap();
    wait_for("the wheels to turn at 200 mm/s", || {
        emu.device(|d| d.wheels()) == (200, 200)
    });
    // ... and the robot moves in the world; the client sees odometry and speed.
    drive_until(&mut c, (200, 0), "odometry to show the robot moving", |r| {
        let p = r.position.unwrap();
        p.x > 100 && p.speed > 150
    });
    // Turning on the spot: 30 deg/s is 83.8 mm/s at each wheel, VEL2 -4/+4.
    c.set_speed(0, 30).unwrap();
    wait_for("the wheels to turn in place", || {
        emu.device(|d| d.wheels()) == (-80, 80)
    });
    drive_until(&mut c, (0, 30), "a counter-clockwise turn rate", |r| {
        r.position.unwrap().turn_rate > 20
    });
    c.set_speed(0, 0).unwrap();
    wait_for("the wheels to stop", || {
        emu.device(|d| d.wheels()) == (0, 0)
    });
}

#[test]
fn configs_motor_power_velocity_mode_odometry_reset_and_gripper_reach_the_robot() {
    let (emu, _world) = robot();
    let server = start_server(&p2os_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    c.request("pagw").unwrap().check().unwrap();
    assert!(
        !emu.device(|d| d.motors_enabled()),
        "motors stay off by default"
    );
    c.set_motor_power(true).unwrap();
    wait_for("ENABLE 1", || emu.device(|d| d.received.enables == vec![1]));
    c.set_velocity_mode(true).unwrap();
    c.set_speed(150, 10).unwrap();
    wait_for("VEL and RVEL in separate mode", || {
        emu.device(|d| d.received.vel > 0 && d.received.rvel > 0)
    });
    drive_until(&mut c, (150, 10), "the robot to move", |r| {
        r.position.unwrap().x > 20
    });
    c.set_speed(0, 0).unwrap();
    read_until(&mut c, "the robot to ramp down to a stop", |r| {
        r.position.unwrap().speed == 0
    });
    c.reset_odometry().unwrap();
    wait_for("SETO", || emu.device(|d| d.received.setos == 1));
    read_until(&mut c, "odometry back to zero", |r| {
        let p = r.position.unwrap();
        p.x.abs() <= 1 && p.y.abs() <= 1
    });
    c.gripper(grip::CLOSE, 0).unwrap();
    wait_for("GRIPPER close", || {
        emu.device(|d| d.received.gripper == vec![(33, 2)])
    });
    c.gripper(grip::PRESS, 20).unwrap();
    wait_for("GRIPPER press with its value", || {
        emu.device(|d| d.received.gripper[1..] == [(33, 16), (36, 20)])
    });
    c.set_motor_power(false).unwrap();
    wait_for("ENABLE 0", || {
        emu.device(|d| d.received.enables == vec![1, 0])
    });
}

#[test]
fn a_port_that_does_not_exist_gives_e_and_a_log_line_naming_it() {
    assert_missing_port(
        |port| p2os_toml(port, ""),
        "/dev/ttyNOPE-hw-test",
        "pr",
        device::POSITION,
    );
}

#[test]
fn a_silent_port_fails_setup_naming_the_port() {
    assert_silent_port(
        |port| p2os_toml(port, "sync_timeout = 0.1"),
        "sr",
        device::SONAR,
        "no P2OS robot answers",
    );
}

#[test]
fn a_robot_left_open_by_a_crashed_server_is_closed_and_resynced() {
    let world = EmuWorld::room();
    let emu = SerialEmulator::start(P2osEmulator::left_open(world), None).unwrap();
    // It streams SIPs to nobody, as after a crash.
    wait_for("the left-open robot to stream", || emu.stats().frames > 3);
    let server = start_server(&p2os_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    let t = Instant::now();
    c.request("pr").unwrap().check().unwrap();
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    let r = emu.device(|d| d.received.clone());
    assert!(
        r.closes >= 1,
        "the driver closes the open robot first: {r:?}"
    );
    assert_eq!(r.opens, 1);
    c.read().unwrap();
}

#[test]
fn closing_the_last_device_and_server_exit_stop_the_robot_and_close_the_link() {
    let (emu, _world) = robot();
    let server = start_server(&p2os_toml(emu.path().to_str().unwrap(), "motors_on = true"));
    let mut c = server.client();
    c.request("pasr").unwrap().check().unwrap();
    c.set_speed(100, 0).unwrap();
    wait_for("the wheels to turn", || {
        emu.device(|d| d.wheels()) == (100, 100)
    });
    // Closing p leaves s open: the link stays up.
    c.request("pc").unwrap();
    // A sleep on purpose: for a while nothing may close the link.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(emu.device(|d| d.phase()), Phase::Open);
    c.request("sc").unwrap();
    wait_for("STOP and CLOSE", || {
        emu.device(|d| d.received.stops >= 1 && d.received.closes == 1)
    });
    assert_eq!(
        emu.device(|d| (d.phase(), d.wheels())),
        (Phase::Unsynced(0), (0, 0))
    );
    wait_for("the port to be closed", || !emu.stats().port_open);

    // Open again, then exit the server with the link up.
    c.request("pa").unwrap().check().unwrap();
    c.set_speed(100, 0).unwrap();
    wait_for("the wheels to turn again", || {
        emu.device(|d| d.wheels()) == (100, 100)
    });
    drop(c);
    server.shutdown();
    // The server has written STOP and CLOSE before it exits; the emulator's thread may
    // take a moment to read them from the pty.
    wait_for("STOP and CLOSE at exit", || {
        emu.device(|d| d.received.closes >= 2)
    });
    let r = emu.device(|d| d.received.clone());
    assert_eq!(r.closes, 2, "{r:?}");
    assert_eq!(emu.device(|d| d.wheels()), (0, 0));
    wait_for("the port to be closed at exit", || !emu.stats().port_open);
}

#[test]
fn a_disconnecting_writer_stops_the_wheels() {
    let (emu, _world) = robot();
    // A long command watchdog: only the writer leaving can stop the wheels here.
    let toml = p2os_toml(emu.path().to_str().unwrap(), "motors_on = true")
        .replace("name = \"hw\"\n", "name = \"hw\"\ncommand_timeout = 60.0\n");
    let server = start_server(&toml);
    let mut reader = server.client();
    reader.request("sr").unwrap().check().unwrap();
    let mut driver = server.client();
    driver.request("pw").unwrap().check().unwrap();
    driver.set_speed(-100, 0).unwrap();
    wait_for("the wheels to reverse", || {
        emu.device(|d| d.wheels()) == (-100, -100)
    });
    drop(driver);
    wait_for("the wheels to stop", || {
        emu.device(|d| d.wheels()) == (0, 0)
    });
    reader.read().unwrap();
}

#[test]
fn corrupt_frames_are_counted_logged_skipped_and_data_keeps_flowing() {
    let (emu, _world) = robot();
    let server = start_server(&p2os_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    c.request("pr").unwrap().check().unwrap();
    c.set_data_mode(player_client::DataMode::PushNew).unwrap();
    emu.faults(|f| {
        f.corrupt = 3;
        f.junk = 3;
        f.truncate = 2;
    });
    wait_for("the faults to go out", || {
        emu.faults(|f| f.corrupt == 0 && f.junk == 0 && f.truncate == 0)
    });
    // Fresh readings still arrive after the damage.
    for _ in 0..5 {
        c.read_new(TIMEOUT).unwrap();
    }
    assert!(
        server.log.has(&["corrupt packet skipped", "bad_frames"]),
        "{}",
        server.log.dump()
    );
}

#[test]
fn a_robot_that_stops_answering_is_reopened_while_other_devices_carry_on() {
    let (emu, _world) = robot();
    let toml = robot_toml(&[
        (
            "p2os",
            "psmg",
            &format!("port = \"{}\"\nsilence = 0.5", emu.path().display()),
        ),
        ("sim", "l", "world = \"room\""),
    ]);
    let server = start_server(&toml);
    let mut c = server.client();
    c.request("prlr").unwrap().check().unwrap();
    c.set_timestamps(true).unwrap();
    let mut other = server.client();
    other.request("lr").unwrap().check().unwrap();
    emu.faults(|f| f.silent = true);
    server.log.wait_for_all(&["robot link lost", "no SIP"]);
    // Meanwhile the laser keeps coming, to this client and to another one, while the
    // position reading stands still.
    let stamps = |c: &mut player_client::Client| {
        let r = c.read().unwrap();
        (r.timestamp(device::POSITION), r.timestamp(device::LASER))
    };
    let (p0, l0) = stamps(&mut c);
    let before = Instant::now();
    for _ in 0..3 {
        other.read().unwrap();
    }
    assert!(before.elapsed() < Duration::from_secs(5));
    read_until(&mut c, "new laser data while the base is away", |r| {
        r.timestamp(device::LASER) > l0
    });
    assert_eq!(
        c.round().timestamp(device::POSITION),
        p0,
        "no SIPs, no new position"
    );
    emu.faults(|f| f.silent = false);
    wait_for("the robot to be reopened", || {
        emu.device(|d| d.received.opens >= 2)
    });
    read_until(&mut c, "position data again", |r| {
        r.timestamp(device::POSITION) > p0
    });
}

/// A server on an emulated robot behind a link that a test can unplug and plug back in,
/// and a client reading position in push-new mode.
struct Pluggable {
    emu: Robot,
    server: HwServer,
    client: player_client::Client,
    opens: u64,
}

impl Pluggable {
    fn start(name: &str) -> Pluggable {
        let link = scratch_dir(name).join("ttyPioneer");
        let emu = SerialEmulator::start(P2osEmulator::new(EmuWorld::room()), Some(&link)).unwrap();
        let server = start_server(&p2os_toml(link.to_str().unwrap(), "silence = 0.5"));
        let mut client = server.client();
        client.request("pa").unwrap().check().unwrap();
        client
            .set_data_mode(player_client::DataMode::PushNew)
            .unwrap();
        client.read_new(TIMEOUT).unwrap();
        Pluggable {
            emu,
            server,
            client,
            opens: 0,
        }
    }

    /// Unplugs the robot and waits until the driver has noticed.
    fn unplug(&mut self) {
        self.opens = self.emu.stats().opens;
        self.emu.unplug();
        self.server.log.wait_for("robot link lost");
    }

    /// Plugs it back in: the robot stayed powered (still open) while unplugged; the driver
    /// closes it, syncs and opens it again, and SIPs reach the client again.
    fn replug_and_recover(&mut self) {
        self.emu.replug();
        wait_for("the driver to reopen the port", || {
            self.emu.stats().opens > self.opens
        });
        let mut seen = 0;
        let deadline = Instant::now() + TIMEOUT;
        while seen < 3 {
            assert!(Instant::now() < deadline, "{}", self.server.log.dump());
            if let Ok(r) = self.client.read_new(Duration::from_secs(1)) {
                if r.updated.contains(&device::POSITION) {
                    seen += 1;
                }
            }
        }
    }
}

#[test]
fn unplugging_and_plugging_back_in_recovers_without_a_restart() {
    let mut robot = Pluggable::start("p2os-unplug");
    robot.unplug();
    // A sleep on purpose: the robot stays unplugged for half a second.
    std::thread::sleep(Duration::from_millis(500));
    robot.replug_and_recover();
}

#[test]
fn a_hung_controller_is_stopped_on_the_robot_itself() {
    let (emu, _world) = robot();
    let server = start_server(&p2os_toml(emu.path().to_str().unwrap(), "motors_on = true"));
    let mut c = server.client();
    c.request("pa").unwrap().check().unwrap();
    c.set_notices(true).unwrap();
    c.set_speed(200, 0).unwrap();
    wait_for("the wheels to turn", || {
        emu.device(|d| d.wheels()) == (200, 200)
    });
    // No more commands: within command_timeout (0.5 s) + 0.2 s the robot itself receives
    // the zero command (with slack for a loaded machine).
    let hung = Instant::now();
    wait_for("the emulated robot to get the zero command", || {
        emu.device(|d| d.wheels()) == (0, 0)
    });
    let took = hung.elapsed();
    assert!(took <= Duration::from_millis(700 + 800), "{took:?}");
    assert!(
        took >= Duration::from_millis(300),
        "{took:?}: not the watchdog"
    );
    let n = c.wait_notice(TIMEOUT).unwrap().expect("a watchdog notice");
    assert_eq!((n.kind, n.device), (b'w', b'p'), "{n:?}");
    // A fresh command drives again.
    c.set_speed(200, 0).unwrap();
    wait_for("the wheels to turn again", || {
        emu.device(|d| d.wheels()) == (200, 200)
    });
}

#[test]
fn a_lost_and_recovered_link_is_reported_and_listed() {
    let dir = scratch_dir("p2os-status");
    let link = dir.join("ttyPioneer");
    let world = EmuWorld::room();
    let emu = SerialEmulator::start(P2osEmulator::new(world), Some(&link)).unwrap();
    let server = start_server(&p2os_toml(link.to_str().unwrap(), "silence = 0.5"));
    let mut c = server.client();
    c.request("pr").unwrap().check().unwrap();
    c.set_notices(true).unwrap();
    let state = |c: &mut player_client::Client| {
        let list = c.device_list().unwrap();
        list.iter().find(|e| e.code == b'p').unwrap().state
    };
    wait_for("the position device to be listed up", || {
        state(&mut c) == b'u'
    });
    emu.unplug();
    let n = c
        .wait_notice(TIMEOUT)
        .unwrap()
        .expect("a notice of the lost link");
    assert_eq!((n.kind, n.device), (b'f', b'p'), "{n:?}");
    assert!(n.text.contains("reconnecting"), "{n:?}");
    assert_eq!(state(&mut c), b'c', "listed as reconnecting");
    emu.replug();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let n = c
            .wait_notice(TIMEOUT)
            .unwrap()
            .expect("a notice of the recovery");
        if n.kind == b'u' {
            assert_eq!(n.device, b'p');
            break;
        }
        assert!(Instant::now() < deadline, "no recovery notice");
    }
    assert_eq!(state(&mut c), b'u', "listed as up again");
}

#[test]
fn configs_sent_while_the_robot_is_away_do_not_stop_the_reconnect() {
    // Found by the soak bench: a config arriving while the link task was reconnecting
    // ended the task (the robot never came back), and a flood of them cut the backoff.
    let mut robot = Pluggable::start("p2os-configs-away");
    robot.unplug();
    // Configs while it is away (a flood, then a few spread over the backoff).
    for i in 0..2000 {
        robot.client.set_velocity_mode(i % 2 == 0).unwrap();
    }
    for _ in 0..5 {
        robot.client.set_motor_power(true).unwrap();
        // The pace of the configs spread over the backoff.
        std::thread::sleep(Duration::from_millis(100));
    }
    // And while it comes back (configs during the connection attempt itself).
    robot.emu.replug();
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        robot.client.set_velocity_mode(false).unwrap();
        // The pace of the configs during the connection attempt.
        std::thread::sleep(Duration::from_millis(10));
    }
    robot.replug_and_recover();
    let attempts = robot.emu.stats().opens - robot.opens;
    assert!(attempts < 50, "the backoff was cut short: {attempts} opens");
}

#[test]
fn the_precise_odometry_p_comes_with_p_at_the_sips_own_resolution() {
    let (emu, _world) = robot();
    let toml = robot_toml(&[(
        "p2os",
        "psmgP",
        &format!("port = \"{}\"\nmotors_on = true", emu.path().display()),
    )]);
    let server = start_server(&toml);
    let mut c = server.client();
    c.request("paPr").unwrap().check().unwrap();
    // Turning: P's heading is the SIP's 4096ths of a turn, p's the same rounded to degrees.
    drive_until(&mut c, (0, 30), "a heading of 40 degrees", |r| {
        r.position.is_some_and(|p| (40..90).contains(&p.heading))
    });
    c.set_speed(0, 0).unwrap();
    let r = c.read().unwrap().clone();
    let (p, o) = (r.position.unwrap(), r.precise.expect("P in the same round"));
    assert_eq!(
        (o.time, o.x, o.y),
        (p.time, p.x, p.y),
        "one SIP, one instant"
    );
    let deg = f64::from(o.heading) / 3600.0;
    assert!((deg - f64::from(p.heading)).abs() <= 0.5, "{p:?} {o:?}");
    // A multiple of 360/4096 degrees (316.40625 arc-seconds), to the arc-second.
    let units = f64::from(o.heading) / 316.40625;
    assert!((units - units.round()).abs() * 316.40625 <= 0.5, "{o:?}");
}
