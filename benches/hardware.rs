//! Latency through the real hardware drivers, on the emulators: from a client's `c p` to
//! the motor command on the serial line (the emulated P2OS has decoded it), and from a SIP
//! or a laser scan leaving the emulated device to the client having it. Prints a table of
//! p50/p99/max. Run with `cargo bench --bench hardware`. The reading client uses push-new
//! mode at 1000 Hz, so the table shows the driver and session path rather than the wait
//! for a 10 Hz round.
//!
//! A second table: the setup time of each newer driver, from the client's `d r` to the
//! server's reply, on its emulator (goal: under 1 s), and the CPU time of the 0.7.4a `l`
//! view of a 1081-reading full scan (goal: under 10 us). `-- --quick` runs only that
//! table, with fewer samples (a few seconds).

use player::emulators::create::CreateEmulator;
use player::emulators::p2os::P2osEmulator;
use player::emulators::rplidar::RplidarEmulator;
use player::emulators::scene::Scene;
use player::emulators::sick::SickEmulator;
use player::emulators::urg::{Model, UrgEmulator};
use player::emulators::TcpEmulator;
use player::emulators::{EmuWorld, SerialEmulator};
use player::settings::Settings;
use player_client::proto::scan::{laser_view, to_urad, Scan};
use player_client::{device, Client, DataMode};
use player_testkit::TestServer;
use std::time::{Duration, Instant};

const SAMPLES: usize = 200;

/// Starts the server configured by `toml` in-process; dropping it shuts it down.
fn start_server(toml: &str) -> TestServer {
    let settings = Settings::from_toml(toml, "bench").expect("configuration");
    TestServer::start(settings, player::builtin_catalog())
}

fn stats(mut v: Vec<Duration>) -> (f64, f64, f64, usize) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(v[((v.len() - 1) as f64 * q).round() as usize]);
    (at(0.5), at(0.99), ms(*v.last().unwrap()), v.len())
}

/// The time from `d r` to the reply for `spec`, on a fresh server each time.
fn setup_time(toml: &str, spec: &str) -> Duration {
    let server = start_server(toml);
    let mut c = Client::connect(server.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let t0 = Instant::now();
    c.request(spec).unwrap().check().unwrap();
    let took = t0.elapsed();
    drop(c);
    server.shutdown();
    took
}

fn driver_toml(driver: &str, devices: &str, params: &str) -> String {
    let devs: Vec<String> = devices.chars().map(|c| format!("\"{c}\"")).collect();
    format!(
        "[[robot]]\n[[robot.driver]]\ndriver = \"{driver}\"\ndevices = [{}]\n[robot.driver.params]\n{params}\n",
        devs.join(", ")
    )
}

/// Setup times and the `l` view's CPU time.
fn setups_and_view(quick: bool) {
    let runs = if quick { 3 } else { 10 };
    let urg =
        SerialEmulator::start(UrgEmulator::new(Model::urg_04lx(), Scene::room()), None).unwrap();
    let utm = TcpEmulator::start(UrgEmulator::new(Model::utm_30lx(), Scene::room())).unwrap();
    let create = SerialEmulator::start(CreateEmulator::open_floor(), None).unwrap();
    let sick = SerialEmulator::start(SickEmulator::new(EmuWorld::room()), None).unwrap();
    let a1 = SerialEmulator::start(RplidarEmulator::a1(Scene::room()), None).unwrap();
    let c1 = SerialEmulator::start(RplidarEmulator::c1(Scene::room()), None).unwrap();
    let cases = [
        (
            "urg (URG-04LX, pty)",
            driver_toml("urg", "lL", &format!("port = \"{}\"", urg.path().display())),
            "lrLr",
        ),
        (
            "urg (UTM-30LX-EW, TCP)",
            driver_toml("urg", "lL", &format!("address = \"{}\"", utm.addr())),
            "lrLr",
        ),
        (
            "create (pty)",
            driver_toml(
                "create",
                "pm",
                &format!("port = \"{}\"", create.path().display()),
            ),
            "pamr",
        ),
        (
            "rplidar (A1, standard scan, pty)",
            driver_toml(
                "rplidar",
                "lL",
                &format!("port = \"{}\"", a1.path().display()),
            ),
            "lrLr",
        ),
        (
            "rplidar (C1, express scan, 460800 baud, pty)",
            driver_toml(
                "rplidar",
                "lL",
                &format!(
                    "port = \"{}\"\nbaud = 460800\nscan = \"express\"",
                    c1.path().display()
                ),
            ),
            "lrLr",
        ),
        (
            "sicklms200 (pty)",
            driver_toml(
                "sicklms200",
                "l",
                &format!("port = \"{}\"", sick.path().display()),
            ),
            "lr",
        ),
    ];
    println!();
    println!("setup time, `d r` to reply, {runs} fresh servers per row (goal < 1000 ms)");
    println!(
        "{:<44} {:>9} {:>9} {:>6}",
        "driver", "p50 ms", "max ms", "n"
    );
    for (name, toml, spec) in &cases {
        let v: Vec<Duration> = (0..runs).map(|_| setup_time(toml, spec)).collect();
        let (p50, _, max, n) = stats(v);
        println!("{name:<44} {p50:>9.1} {max:>9.1} {n:>6}");
    }
    // The l view of a UTM-30LX scan: 1081 readings over 270 degrees.
    let inc = to_urad(0.25_f64.to_radians());
    let scan = Scan {
        angle_min: -540 * inc,
        angle_increment: inc,
        ranges: (0..1081).map(|i| 500 + (i * 13 % 5000) as u16).collect(),
        intensities: None,
    };
    let n = if quick { 20_000 } else { 200_000 };
    let t0 = Instant::now();
    let mut sum = 0u64;
    for _ in 0..n {
        let l = laser_view(std::hint::black_box(&scan), 30_000);
        sum += u64::from(l.ranges[180]);
    }
    let per = t0.elapsed().as_secs_f64() / f64::from(n) * 1e6;
    std::hint::black_box(sum);
    println!();
    println!("l view of a 1081-reading L scan: {per:.2} us per scan over {n} scans (goal < 10 us)");
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    setups_and_view(quick);
    if quick {
        return;
    }
    let world = EmuWorld::room();
    let base = SerialEmulator::start(P2osEmulator::new(world.clone()), None).unwrap();
    let laser = SerialEmulator::start(SickEmulator::new(world.clone()), None).unwrap();
    let toml = format!(
        "[[robot]]\n[[robot.driver]]\ndriver = \"p2os\"\ndevices = [\"p\", \"s\", \"m\", \"g\"]\n[robot.driver.params]\nport = \"{}\"\nmotors_on = true\n[[robot.driver]]\ndriver = \"sicklms200\"\ndevices = [\"l\"]\n[robot.driver.params]\nport = \"{}\"\n",
        base.path().display(),
        laser.path().display()
    );
    let server = start_server(&toml);
    let addr = server.addr();

    // Command latency: c p -> VEL2 decoded by the emulated robot.
    let mut c = Client::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.request("pw").unwrap().check().unwrap();
    let mut cmd = Vec::new();
    for i in 0..SAMPLES {
        let speed = if i % 2 == 0 { 100 } else { 200 };
        let before = base.device(|d| d.wheels_changed_at());
        let t0 = Instant::now();
        c.set_speed(speed, 0).unwrap();
        let deadline = t0 + Duration::from_secs(5);
        loop {
            let now = base.device(|d| d.wheels_changed_at());
            if now != before && base.device(|d| d.wheels()) == (i32::from(speed), i32::from(speed))
            {
                cmd.push(now.unwrap().saturating_duration_since(t0));
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the command never reached the line"
            );
            std::thread::sleep(Duration::from_micros(100));
        }
        std::thread::sleep(Duration::from_millis(3));
    }
    c.set_speed(0, 0).unwrap();
    drop(c);

    // Reading latency: SIP / scan leaves the emulator -> the client has it (push-new mode).
    let mut r = Client::connect(addr).unwrap();
    r.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    r.request("prlr").unwrap().check().unwrap();
    r.set_data_mode(DataMode::PushNew).unwrap();
    // Push-new rounds go out on the client's clock: at 1000 Hz the wait for the next round
    // is at most 1 ms (at the default 10 Hz it would add up to 100 ms).
    r.set_frequency(1000).unwrap();
    let (mut sip, mut scan) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(120);
    while (sip.len() < SAMPLES || scan.len() < SAMPLES / 2) && Instant::now() < deadline {
        let round = r.read_new(Duration::from_secs(2)).unwrap();
        let now = Instant::now();
        if round.updated.contains(&device::POSITION) {
            if let Some(t) = base.device(|d| d.last_sip) {
                sip.push(now.saturating_duration_since(t));
            }
        }
        if round.updated.contains(&device::LASER) {
            if let Some(t) = laser.device(|d| d.last_scan) {
                scan.push(now.saturating_duration_since(t));
            }
        }
    }
    drop(r);
    server.shutdown();

    println!();
    println!(
        "hardware drivers on emulators (pty serial lines), {} samples per row",
        SAMPLES
    );
    println!(
        "{:<44} {:>9} {:>9} {:>9} {:>6}",
        "path", "p50 ms", "p99 ms", "max ms", "n"
    );
    for (name, v) in [
        ("command: client `c p` -> VEL2 on the line", cmd),
        ("reading: SIP on the line -> client `p`", sip),
        ("reading: LMS scan on the line -> client `l`", scan),
    ] {
        let (p50, p99, max, n) = stats(v);
        println!("{name:<44} {p50:>9.3} {p99:>9.3} {max:>9.3} {n:>6}");
    }
}
