//! The Hokuyo driver (`urg`) end to end: a TCP client, the server, the real driver, and the
//! emulated sensor speaking SCIP 2.0 on a pseudo-terminal (URG-04LX) or a TCP port
//! (UTM-30LX-EW); the readings against the emulator's scene, the direction of angles, bad
//! checksums, silence and a restarted sensor, and closing. A URG-04LX that boots in SCIP
//! 1.1 (as one with its original firmware does) is switched to SCIP 2.0 at setup and after
//! every power cycle (unplugging a USB sensor is one); one that refuses is a failed device.

use player::emulators::scene::Scene;
use player::emulators::urg::{Boot, Model, UrgEmulator, POISON_MM};
use player::emulators::{SerialEmulator, TcpEmulator};
use player_client::{device, proto::scan::laser_view, DataMode, Scan};
use player_testkit::hw::*;
use std::time::{Duration, Instant};

fn serial_urg(model: Model) -> SerialEmulator<UrgEmulator> {
    SerialEmulator::start(UrgEmulator::new(model, Scene::room()), None).unwrap()
}

fn urg_toml(params: &str) -> String {
    robot_toml(&[("urg", "lL", params)])
}

fn port_param(emu: &SerialEmulator<UrgEmulator>, extra: &str) -> String {
    format!("port = \"{}\"\n{extra}", emu.path().display())
}

/// The range the driver must serve for `step`: the emulator's reading, error codes and
/// far readings as no return (0).
fn expected(e: &UrgEmulator, step: u32) -> u16 {
    let v = e.reading(step);
    if v < 20 || v > e.model().dmax {
        0
    } else {
        v as u16
    }
}

fn check_scan_matches_the_scene(e: &UrgEmulator, scan: &Scan) {
    let m = e.model();
    assert_eq!(scan.ranges.len() as u32, m.amax - m.amin + 1);
    for (i, &r) in scan.ranges.iter().enumerate() {
        let step = m.amin + i as u32;
        // The header's angles are whole microradians: half a microradian of error
        // per reading at most.
        assert!(
            (scan.angle(i) - m.angle(step)).abs() <= 1e-6 * (1.0 + i as f64 / 2.0),
            "angle of reading {i}"
        );
        assert_eq!(r, expected(e, step), "reading {i} (step {step})");
    }
}

/// The obstacle 60 degrees to the left at 0.9 m is seen on the left (index 300 of `l`),
/// and the mirror bin on the right sees the wall 3.46 m away: a clockwise mix-up fails.
fn check_left_is_left(l: &[u16; 361]) {
    assert!(
        (l[300] as i32 - 900).abs() <= 5,
        "60 degrees left must see the obstacle at 0.9 m, got {}",
        l[300]
    );
    assert!(
        (l[60] as i32 - 3464).abs() <= 10,
        "60 degrees right must see the wall at 3.46 m, got {}",
        l[60]
    );
}

#[test]
fn an_urg_04lx_on_a_pty_serves_l_and_l_full_as_its_scene() {
    let emu = serial_urg(Model::urg_04lx());
    let server = start_server(&urg_toml(&port_param(&emu, "")));
    let mut c = server.client();
    let t = Instant::now();
    c.request("lrLr").unwrap().check().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "setup {:?}",
        t.elapsed()
    );
    let sent = emu.device(|d| d.received.clone());
    assert_eq!(sent, vec!["QT", "VV", "PP", "II", "MD0044072501000"]);
    read_until(&mut c, "both devices", |r| {
        r.scan.is_some() && r.laser.is_some()
    });
    let round = c.read().unwrap().clone();
    let scan = round.scan.clone().unwrap();
    emu.device(|d| check_scan_matches_the_scene(d, &scan));
    assert!(
        scan.ranges.contains(&0),
        "the far corners are past 5.6 m: error code 1, served as no return"
    );
    let l = round.laser.unwrap().ranges;
    assert_eq!(l, laser_view(&scan, 5600).ranges, "l is the view of L");
    assert!(l.iter().all(|&r| r > 0), "never 0 in l");
    assert_eq!(
        l[0], 3000,
        "-90 degrees (in the 240-degree field): the wall 3 m away"
    );
    check_left_is_left(&l);
    // Every bin reads the scene at the sensor's step nearest to it (the sensor's angular
    // resolution), or the maximum range for no return and outside the field of view.
    emu.device(|e| {
        let m = e.model().clone();
        for (i, &r) in l.iter().enumerate() {
            let a = (i as f64 * 0.5 - 90.0).to_radians();
            let step = (f64::from(m.afrt) + a * f64::from(m.ares) / (2.0 * std::f64::consts::PI))
                .round() as u32;
            let want = match expected(e, step) {
                0 => 5600,
                mm => mm,
            };
            assert_eq!(r, want, "bin {i} (step {step})");
        }
    });
}

#[test]
fn a_utm_30lx_over_tcp_serves_1081_readings_as_its_scene() {
    let emu = TcpEmulator::start(UrgEmulator::new(Model::utm_30lx(), Scene::room())).unwrap();
    let server = start_server(&urg_toml(&format!("address = \"{}\"", emu.addr())));
    let mut c = server.client();
    c.request("lrLr").unwrap().check().unwrap();
    read_until(&mut c, "both devices", |r| {
        r.scan.is_some() && r.laser.is_some()
    });
    let round = c.read().unwrap().clone();
    let scan = round.scan.unwrap();
    assert_eq!(scan.ranges.len(), 1081);
    emu.device(|d| check_scan_matches_the_scene(d, &scan));
    // Reading 780 is 60 degrees left (540 + 240 quarter degrees).
    // (Whole microradians in the header: 0.015 degrees off after 780 readings.)
    assert!((scan.angle(780).to_degrees() - 60.0).abs() < 0.02);
    assert_eq!(scan.ranges[780], 900);
    let l = round.laser.unwrap().ranges;
    check_left_is_left(&l);
    assert_eq!(l, laser_view(&scan, 30000).ranges);
}

#[test]
fn a_scan_with_a_bad_checksum_never_reaches_a_client() {
    let emu = serial_urg(Model::urg_04lx());
    let server = start_server(&urg_toml(&port_param(&emu, "")));
    let mut c = server.client();
    c.request("lrLr").unwrap().check().unwrap();
    c.set_data_mode(DataMode::PushNew).unwrap();
    read_new_until(&mut c, "a scan", |r| r.is_updated(device::FULL_SCAN));
    let before = emu.device(|d| d.scans);
    emu.device(|d| d.bad_checksums = 3);
    emu.faults(|f| f.junk = 2);
    let mut good = 0;
    while emu.device(|d| d.scans) < before + 10 || good < 5 {
        c.read_new(TIMEOUT).unwrap();
        let r = c.round();
        if r.is_updated(device::FULL_SCAN) {
            let s = r.scan.as_ref().unwrap();
            assert!(
                s.ranges.iter().all(|&v| u32::from(v) != POISON_MM),
                "a poisoned scan was served"
            );
            good += 1;
        }
        if r.is_updated(device::LASER) {
            let l = r.laser.as_ref().unwrap();
            assert!(
                l.ranges
                    .iter()
                    .filter(|&&v| u32::from(v) == POISON_MM)
                    .count()
                    < 10
            );
        }
    }
    assert_eq!(emu.device(|d| d.bad_checksums), 0, "the faults went out");
    assert!(
        server.log.has(&["bad scan dropped", "bad checksum"]),
        "{}",
        server.log.dump()
    );
}

#[test]
fn silence_then_a_restarted_sensor_resumes_within_5_s_while_other_devices_serve() {
    let emu = serial_urg(Model::urg_04lx());
    let toml = robot_toml(&[
        ("urg", "lL", &port_param(&emu, "silence = 0.5")),
        ("sim", "s", "world = \"room\""),
    ]);
    let server = start_server(&toml);
    let mut c = server.client();
    c.request("Lrsr").unwrap().check().unwrap();
    c.set_timestamps(true).unwrap();
    read_until(&mut c, "a scan", |r| r.scan.is_some());
    emu.faults(|f| f.silent = true);
    wait_for("the driver to notice", || {
        server.log.has(&["laser link lost"])
    });
    // The sonar keeps coming while the laser is away.
    let s0 = c.read().unwrap().timestamp(device::SONAR);
    read_until(&mut c, "fresh sonar while the laser is silent", |r| {
        r.timestamp(device::SONAR) > s0
    });
    emu.device(UrgEmulator::restart);
    emu.faults(|f| f.silent = false);
    let back = Instant::now();
    let t0 = c.read().unwrap().timestamp(device::FULL_SCAN);
    read_until(&mut c, "fresh scans", |r| {
        r.timestamp(device::FULL_SCAN) > t0
    });
    assert!(
        back.elapsed() < Duration::from_secs(5),
        "data resumed after {:?}",
        back.elapsed()
    );
    assert!(emu.device(|d| d.streaming()));
}

#[test]
fn a_tcp_sensor_that_drops_the_connection_is_reconnected() {
    let emu = TcpEmulator::start(UrgEmulator::new(Model::utm_30lx(), Scene::room())).unwrap();
    let server = start_server(&urg_toml(&format!(
        "address = \"{}\"\nsilence = 0.5",
        emu.addr()
    )));
    let mut c = server.client();
    c.request("Lr").unwrap().check().unwrap();
    c.set_timestamps(true).unwrap();
    c.read().unwrap();
    emu.device(UrgEmulator::restart);
    emu.drop_client();
    wait_for("a second connection", || emu.connections() >= 2);
    let t0 = c.read().unwrap().timestamp(device::FULL_SCAN);
    read_until(&mut c, "fresh scans", |r| {
        r.timestamp(device::FULL_SCAN) > t0
    });
}

#[test]
fn scans_carry_the_sensor_clock_mapped_to_the_hosts() {
    let emu = serial_urg(Model::urg_04lx());
    // Start the sensor's clock just before its 24-bit wrap.
    emu.device(|d| d.clock_offset_ms = 0xFF_FFFF - 300);
    let server = start_server(&urg_toml(&port_param(&emu, "")));
    let mut c = server.client();
    c.request("Lr").unwrap().check().unwrap();
    c.set_timestamps(true).unwrap();
    c.set_data_mode(DataMode::PushNew).unwrap();
    let mut last = (0, 0);
    for _ in 0..8 {
        read_new_until(&mut c, "a scan", |r| r.is_updated(device::FULL_SCAN));
        let t = c.round().timestamp(device::FULL_SCAN).unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let stamp = Duration::new(u64::from(t.0), t.1 * 1000);
        assert!(stamp <= now, "never in the future");
        assert!(
            now - stamp < Duration::from_millis(500),
            "recent: {:?}",
            now - stamp
        );
        assert!(t > last, "monotonic across the clock's wrap");
        last = t;
    }
}

#[test]
fn closing_both_devices_stops_the_stream_with_qt() {
    let emu = serial_urg(Model::urg_04lx());
    let server = start_server(&urg_toml(&port_param(&emu, "")));
    let mut c = server.client();
    c.request("lrLr").unwrap().check().unwrap();
    c.read().unwrap();
    c.request("lc").unwrap();
    // Still streaming for L.
    assert!(emu.device(|d| d.streaming()));
    c.request("Lc").unwrap();
    wait_for("the stream to stop", || emu.device(|d| !d.streaming()));
    assert_eq!(
        emu.device(|d| d.received.last().cloned()),
        Some("QT".into())
    );
    drop(c);
    server.shutdown();
}

#[test]
fn a_port_without_a_sensor_gives_e_naming_it() {
    let pty = player::emulators::pty::Pty::open().unwrap();
    let path = pty.slave_path().to_str().unwrap().to_string();
    let server = start_server(&urg_toml(&format!(
        "port = \"{path}\"\nreply_timeout = 0.2"
    )));
    let mut c = server.client();
    assert_eq!(c.request("lr").unwrap().access(device::LASER), Some(b'e'));
    assert!(
        server.log.has(&["laser not connected or not on", &path]),
        "{}",
        server.log.dump()
    );
}

/// The commands the driver sends a URG-04LX booting in `boot` at setup.
fn setup_commands(boot: Boot) -> Vec<&'static str> {
    match boot {
        Boot::Scip1 => vec!["QT", "SCIP2.0", "VV", "PP", "II", "MD0044072501000"],
        _ => vec!["QT", "VV", "PP", "II", "MD0044072501000"],
    }
}

#[test]
fn an_urg_04lx_booting_in_scip_1_1_is_switched_to_scip_2_0_and_serves_its_scene() {
    let emu = SerialEmulator::start(
        UrgEmulator::new(Model::urg_04lx(), Scene::room()).booting(Boot::Scip1),
        None,
    )
    .unwrap();
    let server = start_server(&urg_toml(&port_param(&emu, "")));
    let mut c = server.client();
    c.request("lrLr").unwrap().check().unwrap();
    assert_eq!(
        emu.device(|d| d.received.clone()),
        setup_commands(Boot::Scip1)
    );
    assert!(!emu.device(|d| d.speaks_scip1()));
    assert!(
        server
            .log
            .has(&["answered in SCIP 1.1", "switched it to SCIP 2.0"]),
        "{}",
        server.log.dump()
    );
    read_until(&mut c, "both devices", |r| {
        r.scan.is_some() && r.laser.is_some()
    });
    let round = c.read().unwrap().clone();
    emu.device(|d| check_scan_matches_the_scene(d, round.scan.as_ref().unwrap()));
    check_left_is_left(&round.laser.unwrap().ranges);
}

/// Unplugging a USB sensor powers it off: plugged back in, it boots as it did at first
/// (in SCIP 1.1, if that is how it boots). The driver reopens the port, switches it again
/// and serves fresh scans, in either boot mode.
#[test]
fn unplugged_and_plugged_back_in_the_sensor_serves_again_in_either_boot_mode() {
    for boot in [Boot::Scip2, Boot::Scip1] {
        let link = scratch_dir(&format!("urg-unplug-{boot:?}")).join("ttyACM-URG");
        let emu = SerialEmulator::start(
            UrgEmulator::new(Model::urg_04lx(), Scene::room()).booting(boot),
            Some(&link),
        )
        .unwrap();
        let toml = urg_toml(&format!("port = \"{}\"\nsilence = 0.5", link.display()));
        let server = start_server(&toml);
        let mut c = server.client();
        c.request("Lr").unwrap().check().unwrap();
        c.set_timestamps(true).unwrap();
        read_until(&mut c, "a scan", |r| r.scan.is_some());
        let opens = emu.stats().opens;
        emu.unplug();
        server.log.wait_for("laser link lost");
        // While it is away, the log says why the port cannot be reopened, once.
        server
            .log
            .wait_for("laser reconnect failed; retrying with backoff");
        emu.device(UrgEmulator::restart);
        assert_eq!(emu.device(|d| d.speaks_scip1()), boot == Boot::Scip1);
        emu.device(|d| d.received.clear());
        emu.replug();
        wait_for("the driver to reopen the port", || {
            emu.stats().opens > opens
        });
        let t0 = c.read().unwrap().timestamp(device::FULL_SCAN);
        read_until(&mut c, "fresh scans", |r| {
            r.timestamp(device::FULL_SCAN) > t0
        });
        // The commands of the reconnect that succeeded (one that found the port before the
        // sensor answered may have come first).
        let sent = emu.device(|d| d.received.clone());
        let want: Vec<String> = setup_commands(boot).into_iter().map(Into::into).collect();
        assert!(sent.ends_with(&want), "{boot:?}: {sent:?}");
        assert!(!emu.device(|d| d.speaks_scip1()));
        let dump = server.log.dump();
        let missing = "reconnect failed; retrying with backoff error=cannot open serial port";
        assert_eq!(dump.matches(missing).count(), 1, "{dump}");
    }
}

#[test]
fn a_sensor_that_speaks_only_scip_1_1_is_a_failed_device_saying_why() {
    let emu = SerialEmulator::start(
        UrgEmulator::new(Model::urg_04lx(), Scene::room()).booting(Boot::Scip1Only),
        None,
    )
    .unwrap();
    let server = start_server(&urg_toml(&port_param(&emu, "")));
    let mut c = server.client();
    assert_eq!(c.request("lr").unwrap().access(device::LASER), Some(b'e'));
    assert_eq!(
        emu.device(|d| d.received.clone()),
        vec!["QT", "SCIP2.0", "V"],
        "asked for its firmware once it refused, and nothing more"
    );
    let why = [
        "laser setup failed",
        "speaks SCIP 1.1 only",
        "firmware 0.2.91a",
        "refused SCIP2.0 (status E)",
        "needs SCIP 2.0",
    ];
    assert!(server.log.has(&why), "{}", server.log.dump());
    // The device list says failed; asking again tries again (and fails again).
    let list = c.device_list().unwrap();
    assert_eq!(list.iter().find(|e| e.code == b'l').unwrap().state, b'f');
    assert_eq!(c.request("lr").unwrap().access(device::LASER), Some(b'e'));
    assert_eq!(emu.device(|d| d.received.len()), 6);
}
