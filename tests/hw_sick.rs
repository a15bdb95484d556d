//! The SICK LMS-200 driver end to end: a TCP client, the server, the real `sicklms200`
//! driver, a pseudo-terminal and the emulated scanner; and its faults (missing port,
//! corrupt telegrams, a silent scanner, unplugging, a scanner left streaming at 38400 by a
//! crashed server, shutdown).

use player::emulators::sick::SickEmulator;
use player::emulators::{EmuWorld, SerialEmulator};
use player_client::device;
use player_devices::sick as codec;
use player_testkit::hw::*;
use std::time::{Duration, Instant};

type Laser = SerialEmulator<SickEmulator>;

fn laser(left_streaming: bool) -> (Laser, EmuWorld) {
    let world = EmuWorld::room();
    let dev = if left_streaming {
        SickEmulator::left_streaming(world.clone())
    } else {
        SickEmulator::new(world.clone())
    };
    (SerialEmulator::start(dev, None).unwrap(), world)
}

fn sick_toml(path: &str, extra: &str) -> String {
    robot_toml(&[("sicklms200", "l", &format!("port = \"{path}\"\n{extra}"))])
}

#[test]
fn scans_reach_the_client_as_361_ranges_in_mm() {
    let (emu, world) = laser(false);
    let server = start_server(&sick_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    c.request("lr").unwrap().check().unwrap();
    let sent: Vec<Vec<u8>> = emu.device(|d| d.received.telegrams.clone());
    assert_eq!(
        sent,
        vec![
            codec::INSTALL_MODE.to_vec(),
            codec::BAUD_38400.to_vec(),
            codec::START_CONTINUOUS.to_vec()
        ]
    );
    assert_eq!(emu.device(|d| (d.speed(), d.streaming())), (38400, true));
    let ranges = c.read().unwrap().laser.clone().expect("laser").ranges;
    let truth = world.with(|r| r.laser());
    assert_eq!(ranges.len(), 361);
    assert_eq!(ranges, truth, "index 0 at the right, mm, as the world says");
    assert!(
        ranges.iter().any(|&r| r < 8000),
        "the room's walls are in view"
    );
}

#[test]
fn flag_bits_are_masked() {
    let (emu, world) = laser(false);
    emu.device(|d| d.flag_values = true);
    let server = start_server(&sick_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    c.request("lr").unwrap().check().unwrap();
    let ranges = c.read().unwrap().laser.clone().unwrap().ranges;
    let truth = world.with(|r| r.laser());
    assert_eq!((ranges[10], ranges[20]), (truth[10], truth[20]));
}

#[test]
fn a_port_that_does_not_exist_gives_e_and_a_log_line_naming_it() {
    assert_missing_port(
        |port| sick_toml(port, ""),
        "/dev/ttyNOLASER-hw-test",
        "lr",
        device::LASER,
    );
}

#[test]
fn a_silent_port_fails_setup_naming_the_port() {
    assert_silent_port(
        |port| sick_toml(port, "reply_timeout = 0.1"),
        "lr",
        device::LASER,
        "laser not connected or not on",
    );
}

#[test]
fn a_scanner_left_streaming_at_38400_by_a_crashed_server_is_recovered() {
    let (emu, _world) = laser(true);
    wait_for("the abandoned stream", || emu.device(|d| d.scans) > 2);
    let server = start_server(&sick_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    let t = Instant::now();
    c.request("lr").unwrap().check().unwrap();
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    c.read().unwrap();
    assert!(
        emu.stats().garbled_in > 0,
        "the 9600 attempt was garbage to the scanner"
    );
}

#[test]
fn closing_the_laser_stops_the_stream_and_restores_9600() {
    let (emu, _world) = laser(false);
    let server = start_server(&sick_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    c.request("lr").unwrap().check().unwrap();
    c.read().unwrap();
    c.request("lc").unwrap();
    wait_for("the stream to stop", || emu.device(|d| !d.streaming()));
    wait_for("9600 baud", || emu.device(|d| d.speed()) == 9600);
    assert_eq!(emu.device(|d| d.received.stops), 1);
    wait_for("the port to close", || !emu.stats().port_open);
    // The next setup starts from the power-up state, quickly.
    c.request("lr").unwrap().check().unwrap();
    c.read().unwrap();
    drop(c);
    server.shutdown();
    assert_eq!(emu.device(|d| (d.streaming(), d.speed())), (false, 9600));
}

#[test]
fn corrupt_telegrams_are_counted_logged_skipped_and_scans_keep_coming() {
    let (emu, _world) = laser(false);
    let server = start_server(&sick_toml(emu.path().to_str().unwrap(), ""));
    let mut c = server.client();
    c.request("lr").unwrap().check().unwrap();
    c.set_data_mode(player_client::DataMode::PushNew).unwrap();
    emu.faults(|f| {
        f.corrupt = 2;
        f.junk = 2;
        f.truncate = 1;
    });
    wait_for("the faults to go out", || {
        emu.faults(|f| f.corrupt == 0 && f.junk == 0 && f.truncate == 0)
    });
    for _ in 0..3 {
        read_new_until(&mut c, "a fresh scan", |r| {
            r.updated.contains(&device::LASER)
        });
    }
    assert!(
        server
            .log
            .has(&["corrupt telegram skipped", "bad_telegrams"]),
        "{}",
        server.log.dump()
    );
}

#[test]
fn a_scanner_that_stops_answering_is_reopened() {
    let (emu, _world) = laser(false);
    let server = start_server(&sick_toml(emu.path().to_str().unwrap(), "silence = 0.6"));
    let mut c = server.client();
    c.request("lr").unwrap().check().unwrap();
    c.set_timestamps(true).unwrap();
    c.read().unwrap();
    emu.faults(|f| f.silent = true);
    server.log.wait_for("laser link lost");
    let before = emu.device(|d| d.received.telegrams.len());
    emu.faults(|f| f.silent = false);
    wait_for("the scanner to be set up again", || {
        emu.device(|d| d.received.telegrams.len()) > before
    });
    let t0 = c.read().unwrap().timestamp(device::LASER);
    read_until(&mut c, "fresh scans", |r| r.timestamp(device::LASER) > t0);
}

#[test]
fn unplugging_and_plugging_back_in_recovers_without_a_restart() {
    let dir = scratch_dir("sick-unplug");
    let link = dir.join("ttyLaser");
    let emu = SerialEmulator::start(SickEmulator::new(EmuWorld::room()), Some(&link)).unwrap();
    let server = start_server(&sick_toml(link.to_str().unwrap(), "silence = 0.6"));
    let mut c = server.client();
    c.request("lr").unwrap().check().unwrap();
    c.set_timestamps(true).unwrap();
    c.read().unwrap();
    let opens = emu.stats().opens;
    emu.unplug();
    server.log.wait_for("laser link lost");
    // A sleep on purpose: the scanner stays unplugged for a while.
    std::thread::sleep(Duration::from_millis(400));
    emu.replug();
    wait_for("the port to be opened again", || emu.stats().opens > opens);
    let t0 = c.read().unwrap().timestamp(device::LASER);
    read_until(&mut c, "fresh scans", |r| r.timestamp(device::LASER) > t0);
}

#[test]
fn the_full_scan_l_carries_the_same_361_readings_with_their_angles() {
    let (emu, world) = laser(false);
    let server = start_server(&robot_toml(&[(
        "sicklms200",
        "lL",
        &format!("port = \"{}\"", emu.path().display()),
    )]));
    let mut c = server.client();
    c.request("lrLr").unwrap().check().unwrap();
    read_until(&mut c, "both devices", |r| {
        r.laser.is_some() && r.scan.is_some()
    });
    let r = c.read().unwrap().clone();
    let (l, s) = (r.laser.unwrap(), r.scan.unwrap());
    assert_eq!(s.ranges, l.ranges.to_vec());
    assert!((s.angle(0).to_degrees() + 90.0).abs() < 0.01);
    assert!((s.angle(360).to_degrees() - 90.0).abs() < 0.01);
    assert_eq!(l.ranges, world.with(|r| r.laser()));
    // Closing one keeps the scanner streaming for the other.
    c.request("lc").unwrap();
    assert!(emu.device(|d| d.streaming()));
    c.request("Lc").unwrap();
    wait_for("the stream to stop", || emu.device(|d| !d.streaming()));
}
