//! The RPLIDAR driver (`rplidar`) end to end: a TCP client, the server, the real driver,
//! and the emulated sensor speaking Slamtec's protocol on a pseudo-terminal (an A1 with
//! standard scans, a C1 at 460800 baud with express scans); the health check, the
//! readings against the emulator's scene, the direction of angles, nodes and capsules that
//! fail their check, silence and a restarted sensor, and STOP at shutdown.

use player::emulators::rplidar::{RplidarEmulator, POISON_MM};
use player::emulators::scene::Scene;
use player::emulators::SerialEmulator;
use player_client::{device, proto::scan::laser_view, DataMode, Scan};
use player_devices::rplidar as codec;
use player_testkit::hw::*;
use player_testkit::TIMEOUT;
use std::time::{Duration, Instant};

fn serial(device: RplidarEmulator) -> SerialEmulator<RplidarEmulator> {
    SerialEmulator::start(device, None).unwrap()
}

fn a1() -> SerialEmulator<RplidarEmulator> {
    serial(RplidarEmulator::a1(Scene::room()))
}

fn rplidar_toml(emu: &SerialEmulator<RplidarEmulator>, extra: &str) -> String {
    robot_toml(&[(
        "rplidar",
        "lL",
        &format!("port = \"{}\"\n{extra}", emu.path().display()),
    )])
}

/// What the sensor measures (mm) within `half_width` degrees either side of `ccw` (our
/// angle, degrees counter-clockwise): the band a reading served at `ccw` must fall in.
fn band(e: &RplidarEmulator, ccw: f64, half_width: f64) -> (f64, f64) {
    let steps = 40;
    (0..=steps)
        .map(|k| e.measure(-(ccw - half_width + 2.0 * half_width * f64::from(k) / 40.0)))
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        })
}

/// Every reading of `scan` is what the scene shows within one reading's width of its
/// angle (the sensor's resolution; its measurements do not fall on a fixed grid).
fn check_scan_matches_the_scene(e: &RplidarEmulator, scan: &Scan, per_turn: f64) {
    assert!(
        (scan.ranges.len() as f64 - per_turn).abs() <= 2.0,
        "{} readings for {per_turn} measurements a turn",
        scan.ranges.len()
    );
    let inc = scan.angle_increment as f64 * 1e-6;
    assert!((scan.angle(0).to_degrees() + 180.0).abs() < 1e-3);
    for (i, &r) in scan.ranges.iter().enumerate() {
        let a = scan.angle(i).to_degrees();
        let (lo, hi) = band(e, a, inc.to_degrees() * 1.5);
        assert!(
            f64::from(r) >= lo - 1.0 && f64::from(r) <= hi + 1.0,
            "reading {i} at {a:.2} degrees: {r} mm, the scene shows {lo:.0}..{hi:.0}"
        );
    }
}

/// The obstacle 60 degrees to the left at 0.9 m is seen on the left (index 300 of `l`),
/// and the mirror bin on the right sees the wall 3.46 m away: a clockwise mix-up fails.
fn check_left_is_left(l: &[u16; 361]) {
    assert!(
        (l[300] as i32 - 900).abs() <= 15,
        "60 degrees left must see the obstacle at 0.9 m, got {}",
        l[300]
    );
    assert!(
        (l[60] as i32 - 3464).abs() <= 40,
        "60 degrees right must see the wall at 3.46 m, got {}",
        l[60]
    );
    assert!(
        (l[180] as i32 - 6000).abs() <= 10,
        "ahead: the wall at 6 m, got {}",
        l[180]
    );
}

#[test]
fn an_a1_with_standard_scans_serves_l_and_l_full_as_its_scene() {
    let emu = a1();
    let server = start_server(&rplidar_toml(&emu, ""));
    let mut c = server.client();
    let t = Instant::now();
    c.request("lrLr").unwrap().check().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "setup {:?}",
        t.elapsed()
    );
    assert_eq!(
        emu.device(|d| d.received.clone()),
        vec![codec::STOP, codec::GET_HEALTH, codec::GET_INFO, codec::SCAN]
    );
    assert!(
        server
            .log
            .has(&["RPLIDAR found", "firmware=1.29", "model=0x18"]),
        "{}",
        server.log.dump()
    );
    assert!(
        server.log.has(&["no motor control"]),
        "a pty has no DTR line: {}",
        server.log.dump()
    );
    read_until(&mut c, "both devices", |r| {
        r.scan.is_some() && r.laser.is_some()
    });
    let round = c.read().unwrap().clone();
    let scan = round.scan.clone().unwrap();
    emu.device(|d| {
        check_scan_matches_the_scene(d, &scan, player::emulators::rplidar::STANDARD_PER_TURN)
    });
    let l = round.laser.unwrap().ranges;
    assert_eq!(l, laser_view(&scan, 12_000).ranges, "l is the view of L");
    assert!(l.iter().all(|&r| r > 0), "never 0 in l");
    check_left_is_left(&l);
}

#[test]
fn a_c1_with_express_scans_serves_its_scene_too() {
    let emu = serial(RplidarEmulator::c1(Scene::room()));
    let server = start_server(&rplidar_toml(&emu, "baud = 460800\nscan = \"express\""));
    let mut c = server.client();
    c.request("lrLr").unwrap().check().unwrap();
    assert!(emu.device(|d| d.express()));
    assert_eq!(
        emu.device(|d| d.received.last().copied()),
        Some(codec::EXPRESS_SCAN)
    );
    read_until(&mut c, "both devices", |r| {
        r.scan.is_some() && r.laser.is_some()
    });
    for _ in 0..3 {
        let round = c.read().unwrap().clone();
        let scan = round.scan.clone().unwrap();
        emu.device(|d| {
            check_scan_matches_the_scene(d, &scan, player::emulators::rplidar::EXPRESS_PER_TURN)
        });
        let l = round.laser.unwrap().ranges;
        check_left_is_left(&l);
        assert_eq!(l, laser_view(&scan, 12_000).ranges);
    }
}

#[test]
fn a_health_error_fails_the_device_with_its_code() {
    let emu = a1();
    emu.device(|d| d.fail(0x8001));
    let server = start_server(&rplidar_toml(&emu, ""));
    let mut c = server.client();
    assert_eq!(c.request("lr").unwrap().access(device::LASER), Some(b'e'));
    assert!(
        server.log.has(&["health error", "0x8001"]),
        "{}",
        server.log.dump()
    );
    let sent = emu.device(|d| d.received.clone());
    assert!(sent.contains(&codec::RESET), "one RESET tried: {sent:?}");
    assert!(
        !sent.contains(&codec::SCAN),
        "never asked to scan: {sent:?}"
    );
}

/// Poisoned nodes (standard) or capsules (express) carry a distance nothing in the scene
/// has; none may reach a client, in `L` or in `l`.
fn bad_frames_never_reach_a_client(device: RplidarEmulator, extra: &str) {
    let emu = serial(device);
    let server = start_server(&rplidar_toml(&emu, extra));
    let mut c = server.client();
    c.request("lrLr").unwrap().check().unwrap();
    c.set_data_mode(DataMode::PushNew).unwrap();
    read_new_until(&mut c, "a scan", |r| r.is_updated(device::FULL_SCAN));
    let before = emu.device(|d| d.frames);
    emu.device(|d| d.bad_checksums = 3);
    emu.faults(|f| f.junk = 2);
    let mut good = 0;
    // Well past the faults: two turns' worth of frames and five scans served.
    while emu.device(|d| d.frames) < before + 1500 || good < 5 {
        c.read_new(TIMEOUT).unwrap();
        let r = c.round();
        if r.is_updated(device::FULL_SCAN) {
            let s = r.scan.as_ref().unwrap();
            assert!(
                s.ranges.iter().all(|&v| v != POISON_MM),
                "a poisoned reading was served"
            );
            good += 1;
        }
        if r.is_updated(device::LASER) {
            let l = r.laser.as_ref().unwrap();
            assert!(l.ranges.iter().all(|&v| v != POISON_MM));
        }
    }
    assert_eq!(emu.device(|d| d.bad_checksums), 0, "the faults went out");
    assert!(
        server.log.has(&["revolution dropped"]),
        "{}",
        server.log.dump()
    );
}

#[test]
fn a_capsule_with_a_bad_checksum_never_reaches_a_client() {
    bad_frames_never_reach_a_client(
        RplidarEmulator::c1(Scene::room()),
        "baud = 460800\nscan = \"express\"",
    );
}

#[test]
fn a_node_failing_its_check_bits_never_reaches_a_client() {
    bad_frames_never_reach_a_client(RplidarEmulator::a1(Scene::room()), "");
}

#[test]
fn silence_then_a_restarted_sensor_resumes_within_5_s_while_other_devices_serve() {
    let emu = a1();
    let toml = robot_toml(&[
        (
            "rplidar",
            "lL",
            &format!("port = \"{}\"\nsilence = 0.5", emu.path().display()),
        ),
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
    emu.device(RplidarEmulator::restart);
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
    assert!(emu.device(|d| d.scanning()));
}

#[test]
fn closing_both_devices_sends_stop() {
    let emu = a1();
    let server = start_server(&rplidar_toml(&emu, ""));
    let mut c = server.client();
    c.request("lrLr").unwrap().check().unwrap();
    c.read().unwrap();
    c.request("lc").unwrap();
    assert!(emu.device(|d| d.scanning()), "still scanning for L");
    c.request("Lc").unwrap();
    wait_for("the scan to stop", || emu.device(|d| !d.scanning()));
    assert_eq!(
        emu.device(|d| d.received.last().copied()),
        Some(codec::STOP)
    );
}

#[test]
fn the_server_exiting_sends_stop() {
    let emu = a1();
    let server = start_server(&rplidar_toml(&emu, ""));
    let mut c = server.client();
    c.request("Lr").unwrap().check().unwrap();
    c.read().unwrap();
    assert!(emu.device(|d| d.scanning()));
    server.shutdown();
    wait_for("the STOP to arrive", || emu.device(|d| !d.scanning()));
    assert_eq!(
        emu.device(|d| d.received.last().copied()),
        Some(codec::STOP)
    );
}

#[test]
fn a_port_without_a_sensor_gives_e_naming_it() {
    let pty = player::emulators::pty::Pty::open().unwrap();
    let path = pty.slave_path().to_str().unwrap().to_string();
    let server = start_server(&robot_toml(&[(
        "rplidar",
        "lL",
        &format!("port = \"{path}\"\nreply_timeout = 0.2"),
    )]));
    let mut c = server.client();
    assert_eq!(c.request("lr").unwrap().access(device::LASER), Some(b'e'));
    assert!(
        server.log.has(&["laser not connected or not on", &path]),
        "{}",
        server.log.dump()
    );
}

/// The shipped `config/create-rplidar.toml` with its ports pointed at emulators: the
/// `player` binary serves the base and the laser, and SIGTERM leaves the laser stopped
/// (`STOP`) and the base in the OI's Off mode.
#[test]
fn the_shipped_create_rplidar_config_runs_and_sigterm_stops_the_laser() {
    use player::emulators::create::CreateEmulator;
    let laser = a1();
    let base = SerialEmulator::start(
        CreateEmulator::new(Scene::room(), player::emulators::scene::LASER_POSE),
        None,
    )
    .unwrap();
    let port = player_testkit::free_port();
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/create-rplidar.toml"
    ))
    .unwrap();
    let toml = shipped
        .replace(
            "port = \"/dev/ttyUSB0\"",
            &format!("port = \"{}\"", base.path().display()),
        )
        .replace(
            "port = \"/dev/ttyUSB1\"",
            &format!("port = \"{}\"", laser.path().display()),
        )
        .replace("port = 6665", &format!("port = {port}"))
        .replace("bind = \"0.0.0.0\"", "bind = \"127.0.0.1\"");
    assert_ne!(toml, shipped);
    let dir = scratch_dir("create-rplidar");
    let config = dir.join("create-rplidar.toml");
    std::fs::write(&config, toml).unwrap();
    let mut player = PlayerProcess::start(env!("CARGO_BIN_EXE_player"), &config, port);
    let c = &mut player.client;
    c.request("prlrLr").unwrap().check().unwrap();
    read_until(c, "the laser and the base", |r| {
        r.laser.is_some() && r.scan.is_some() && r.position.is_some()
    });
    let l = c.read().unwrap().laser.clone().unwrap().ranges;
    check_left_is_left(&l);
    assert_eq!(player.terminate(), Some(0));
    wait_for("the laser's STOP", || laser.device(|d| !d.scanning()));
    assert_eq!(
        laser.device(|d| d.received.last().copied()),
        Some(codec::STOP)
    );
    assert!(base.device(|d| !d.streaming()), "the base was stopped too");
}
