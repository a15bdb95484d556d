//! The Sony PTZ driver end to end: a TCP client, the server, the real `sonyptz` driver, a
//! pseudo-terminal and the emulated EVI-D30; units, sign and limits both ways; and its
//! faults (missing port, unreadable replies, a silent camera, shutdown).

use player::emulators::ptz::PtzEmulator;
use player::emulators::{EmuWorld, SerialEmulator};
use player_client::device;
use player_testkit::hw::*;

fn camera() -> SerialEmulator<PtzEmulator> {
    SerialEmulator::start(PtzEmulator::new(EmuWorld::room()), None).unwrap()
}

fn ptz_toml(path: &str, extra: &str) -> String {
    robot_toml(&[("sonyptz", "z", &format!("port = \"{path}\"\n{extra}"))])
}

fn ptz_of(r: &player_client::Round) -> (i16, i16, i16) {
    let z = r.ptz.unwrap();
    (z.pan, z.tilt, z.zoom)
}

#[test]
fn commands_slew_the_camera_and_its_position_comes_back_in_the_manuals_units() {
    let emu = camera();
    let server = start_server(&ptz_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    c.request("za").unwrap().check().unwrap();
    assert_eq!(ptz_of(c.read().unwrap()), (0, 0, 0));
    // 30 degrees counter-clockwise is -264 camera units (the camera's + is clockwise).
    c.set_ptz(30, -10, 500).unwrap();
    wait_for("the camera to get the command", || {
        emu.device(|d| d.received.pan_tilt.last() == Some(&(-264, -120)))
    });
    read_until(&mut c, "the camera to arrive", |r| {
        ptz_of(r) == (30, -10, 500)
    });
    assert_eq!(emu.device(|d| d.position()), (-264, -120, 500));
    // Beyond the limits: clamped to the manual's ranges.
    c.set_ptz(150, 40, 2000).unwrap();
    read_until(&mut c, "the camera at its limits", |r| {
        ptz_of(r) == (100, 25, 1023)
    });
    assert_eq!(emu.device(|d| d.position()), (-880, 300, 1023));
}

#[test]
fn a_port_that_does_not_exist_gives_e_and_a_log_line_naming_it() {
    assert_missing_port(
        |port| ptz_toml(port, ""),
        "/dev/ttyNOCAMERA-hw-test",
        "zr",
        device::PTZ,
    );
}

#[test]
fn a_silent_port_fails_setup_naming_the_port() {
    assert_silent_port(
        |port| ptz_toml(port, "reply_timeout = 0.1"),
        "zr",
        device::PTZ,
        "camera not connected or not on",
    );
}

#[test]
fn unreadable_replies_are_skipped_and_a_silent_camera_is_reopened() {
    let emu = camera();
    let server = start_server(&ptz_toml(emu.path().to_str().unwrap(), "silence = 0.6"));
    let mut c = server.client();
    c.request("za").unwrap().check().unwrap();
    c.set_timestamps(true).unwrap();
    emu.faults(|f| {
        f.junk = 3;
        f.truncate = 2;
    });
    wait_for("the faults to go out", || {
        emu.faults(|f| f.junk == 0 && f.truncate == 0)
    });
    c.set_ptz(-20, 5, 100).unwrap();
    read_until(&mut c, "the camera to arrive despite the noise", |r| {
        ptz_of(r) == (-20, 5, 100)
    });
    assert!(
        server.log.has(&["skipped", "junk_bytes"]),
        "{}",
        server.log.dump()
    );
    emu.faults(|f| f.silent = true);
    server.log.wait_for("camera link lost");
    emu.faults(|f| f.silent = false);
    let t0 = c.read().unwrap().timestamp(device::PTZ);
    read_until(&mut c, "fresh readings", |r| r.timestamp(device::PTZ) > t0);
}

#[test]
fn closing_the_camera_recentres_it() {
    let emu = camera();
    let server = start_server(&ptz_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    c.request("za").unwrap().check().unwrap();
    c.set_ptz(45, 10, 800).unwrap();
    read_until(&mut c, "the camera to arrive", |r| {
        ptz_of(r) == (45, 10, 800)
    });
    c.request("zc").unwrap();
    wait_for("the recentring commands", || {
        emu.device(|d| {
            d.received.pan_tilt.last() == Some(&(0, 0)) && d.received.zoom.last() == Some(&0)
        })
    });
    wait_for("the port to close", || !emu.stats().port_open);
}
