//! `player-emulate`: runs device emulators so the real hardware drivers can be tried
//! without hardware. Each serial device gets a pseudo-terminal; the program prints the
//! path to give the server (`-pp`, `-lp`, `-zp`); ACTS listens on TCP (`-vp`). The
//! emulated Pioneer, laser and camera share one simulated robot in the built-in room, so
//! the laser sees the robot move and ACTS sees through the camera.
//!
//! ```text
//! player-emulate all [--dir DIR] [--port N]    every device (links DIR/ttyP2OS, ...)
//! player-emulate p2os|sick|ptz [--link PATH]   one serial device
//! player-emulate acts [--port N]               ACTS on 127.0.0.1:N (default 5001)
//! player-emulate urg [--link PATH] [--utm]     a Hokuyo URG-04LX (--utm: UTM-30LX) on a pty
//! player-emulate urg --tcp [--port N]          a Hokuyo UTM-30LX-EW on 127.0.0.1:N (10940)
//!     --scip1          urg: boots in SCIP 1.1, as a URG-04LX with its original firmware
//!     --scip1-only     urg: speaks SCIP 1.1 only (refuses the switch to SCIP 2.0)
//! player-emulate create [--link PATH]          an iRobot Create 2 base in the scene's room
//! player-emulate rplidar [--link PATH] [--c1]  an RPLIDAR A1 (--c1: C1 at 460800 baud) on a pty
//!     --health-error   its health check reports an error (code 0x8001)
//!     --faults         every few seconds a fault: a scan with a bad checksum, junk
//!                      bytes, two seconds of silence, a restart
//!     --left-running   start the base open and the laser streaming at 38400 baud, as a
//!                      crashed server leaves them
//! ```
//! It runs until interrupted.

use player_emulators::acts::ActsEmulator;
use player_emulators::create::CreateEmulator;
use player_emulators::p2os::P2osEmulator;
use player_emulators::ptz::PtzEmulator;
use player_emulators::rplidar::RplidarEmulator;
use player_emulators::scene::{Scene, LASER_POSE};
use player_emulators::sick::SickEmulator;
use player_emulators::urg::{Boot, Model, UrgEmulator};
use player_emulators::{EmuWorld, Faults, SerialDevice, SerialEmulator, TcpEmulator};
use std::path::{Path, PathBuf};

const USAGE: &str = "usage: player-emulate (all [--dir DIR] [--port N] | p2os|sick|ptz [--link PATH] | acts [--port N] | urg [--link PATH] [--utm] [--tcp [--port N]] [--scip1 | --scip1-only] | create [--link PATH] | rplidar [--link PATH] [--c1] [--health-error]) [--left-running] [--faults]";

struct Options {
    what: String,
    link: Option<PathBuf>,
    dir: Option<PathBuf>,
    port: Option<u16>,
    left_running: bool,
    tcp: bool,
    utm: bool,
    c1: bool,
    health_error: bool,
    faults: bool,
    boot: Boot,
}

/// The options, or `None` when help was asked for (wherever it is on the line).
fn parse() -> Result<Option<Options>, String> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "-h" || a == "--help") {
        return Ok(None);
    }
    let what = args.next().ok_or(USAGE)?;
    let mut o = Options {
        what,
        link: None,
        dir: None,
        port: None,
        left_running: false,
        tcp: false,
        utm: false,
        c1: false,
        health_error: false,
        faults: false,
        boot: Boot::Scip2,
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--link" => o.link = Some(args.next().ok_or(USAGE)?.into()),
            "--dir" => o.dir = Some(args.next().ok_or(USAGE)?.into()),
            "--port" => {
                o.port = Some(
                    args.next()
                        .and_then(|p| p.parse().ok())
                        .ok_or("--port needs a TCP port number")?,
                )
            }
            "--left-running" => o.left_running = true,
            "--tcp" => o.tcp = true,
            "--utm" => o.utm = true,
            "--c1" => o.c1 = true,
            "--health-error" => o.health_error = true,
            "--faults" => o.faults = true,
            "--scip1" => o.boot = Boot::Scip1,
            "--scip1-only" => o.boot = Boot::Scip1Only,
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    Ok(Some(o))
}

fn serial<D: SerialDevice>(
    name: &str,
    flag: &str,
    device: D,
    link: Option<&Path>,
) -> Result<SerialEmulator<D>, String> {
    let e = SerialEmulator::start(device, link)
        .map_err(|e| format!("cannot start the {name} emulator: {e}"))?;
    println!(
        "{name:<6} on {}  (player {flag} {})",
        e.slave_path().display(),
        e.path().display()
    );
    Ok(e)
}

fn run(o: Options) -> Result<(), String> {
    let world = EmuWorld::room();
    let link = |file: &str| {
        o.link
            .clone()
            .or_else(|| o.dir.as_ref().map(|d| d.join(file)))
    };
    let base = || {
        if o.left_running {
            P2osEmulator::left_open(world.clone())
        } else {
            P2osEmulator::new(world.clone())
        }
    };
    let laser = || {
        if o.left_running {
            SickEmulator::left_streaming(world.clone())
        } else {
            SickEmulator::new(world.clone())
        }
    };
    let mut keep: Vec<Box<dyn std::any::Any>> = Vec::new();
    match o.what.as_str() {
        "p2os" => keep.push(Box::new(serial(
            "p2os",
            "-pp",
            base(),
            link("ttyP2OS").as_deref(),
        )?)),
        "sick" => keep.push(Box::new(serial(
            "sick",
            "-lp",
            laser(),
            link("ttyLMS").as_deref(),
        )?)),
        "ptz" => keep.push(Box::new(serial(
            "ptz",
            "-zp",
            PtzEmulator::new(world.clone()),
            link("ttyPTZ").as_deref(),
        )?)),
        "acts" | "all" => {
            if o.what == "all" {
                if let Some(d) = &o.dir {
                    std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
                }
                let dir = |f: &str| o.dir.as_ref().map(|d| d.join(f));
                keep.push(Box::new(serial(
                    "p2os",
                    "-pp",
                    base(),
                    dir("ttyP2OS").as_deref(),
                )?));
                keep.push(Box::new(serial(
                    "sick",
                    "-lp",
                    laser(),
                    dir("ttyLMS").as_deref(),
                )?));
                keep.push(Box::new(serial(
                    "ptz",
                    "-zp",
                    PtzEmulator::new(world.clone()),
                    dir("ttyPTZ").as_deref(),
                )?));
            }
            let port = o.port.unwrap_or(5001);
            let acts = ActsEmulator::start(world.clone(), port)
                .map_err(|e| format!("cannot listen on port {port}: {e}"))?;
            println!(
                "acts   on {}  (player -vp {})",
                acts.addr(),
                acts.addr().port()
            );
            keep.push(Box::new(acts));
        }
        "urg" | "create" | "rplidar" => keep.push(range_finder(&o, &link)?),
        other => return Err(format!("unknown device '{other}'\n{USAGE}")),
    }
    println!("running; interrupt to stop");
    park();
}

/// Starts the laser range finder or base `o.what` names (urg, create, rplidar), with the
/// fault cycle if asked for; `link` names where its serial port is linked to.
fn range_finder(
    o: &Options,
    link: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<Box<dyn std::any::Any>, String> {
    match o.what.as_str() {
        "urg" if o.tcp => {
            let port = o.port.unwrap_or(10940);
            let e = TcpEmulator::start_on(
                UrgEmulator::new(Model::utm_30lx(), Scene::room()).booting(o.boot),
                &format!("127.0.0.1:{port}"),
            )
            .map_err(|e| format!("cannot listen on port {port}: {e}"))?;
            println!(
                "urg    on {}  (driver = \"urg\", address = \"{}\")",
                e.addr(),
                e.addr()
            );
            if o.faults {
                let e = std::sync::Arc::new(e);
                let f = e.clone();
                fault_cycle(
                    move |g| f.faults(g),
                    move || {
                        e.device(|d| d.bad_checksums += 1);
                    },
                    || {},
                );
                println!("running with faults; interrupt to stop");
                park();
            }
            Ok(Box::new(e))
        }
        "create" => {
            let e = serial(
                "create",
                "port =",
                CreateEmulator::new(Scene::room(), LASER_POSE),
                link("ttyUSB-Create").as_deref(),
            )?;
            if o.faults {
                let e = std::sync::Arc::new(e);
                let (f, g, h) = (e.clone(), e.clone(), e);
                fault_cycle(
                    move |x| f.faults(x),
                    // The last byte of a frame is its checksum.
                    move || h.faults(|x| x.corrupt += 1),
                    move || g.device(CreateEmulator::restart),
                );
                println!("running with faults; interrupt to stop");
                park();
            }
            Ok(Box::new(e))
        }
        "urg" => {
            let model = if o.utm {
                Model::utm_30lx()
            } else {
                Model::urg_04lx()
            };
            let e = serial(
                "urg",
                "port =",
                UrgEmulator::new(model, Scene::room()).booting(o.boot),
                link("ttyACM-URG").as_deref(),
            )?;
            if o.faults {
                let e = std::sync::Arc::new(e);
                let (f, g, h) = (e.clone(), e.clone(), e);
                fault_cycle(
                    move |x| f.faults(x),
                    move || g.device(|d| d.bad_checksums += 1),
                    move || h.device(UrgEmulator::restart),
                );
                println!("running with faults; interrupt to stop");
                park();
            }
            Ok(Box::new(e))
        }
        "rplidar" => {
            let mut device = if o.c1 {
                RplidarEmulator::c1(Scene::room())
            } else {
                RplidarEmulator::a1(Scene::room())
            };
            if o.health_error {
                device.fail(0x8001);
            }
            let e = serial(
                "rplidar",
                "port =",
                device,
                link("ttyUSB-RPLIDAR").as_deref(),
            )?;
            if o.faults {
                let e = std::sync::Arc::new(e);
                let (f, g, h) = (e.clone(), e.clone(), e);
                fault_cycle(
                    move |x| f.faults(x),
                    move || g.device(|d| d.bad_checksums += 1),
                    move || h.device(RplidarEmulator::restart),
                );
                println!("running with faults; interrupt to stop");
                park();
            }
            Ok(Box::new(e))
        }
        other => Err(format!("unknown device '{other}'\n{USAGE}")),
    }
}

fn park() -> ! {
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// Every 5 s the next fault of a cycle: a bad checksum, junk before a frame, 2 s of
/// silence, a restart (power cycle) of the device.
fn fault_cycle(
    faults: impl Fn(&mut dyn FnMut(&mut Faults)) + Send + 'static,
    bad_checksum: impl Fn() + Send + 'static,
    restart: impl Fn() + Send + 'static,
) {
    std::thread::spawn(move || {
        let pause = std::time::Duration::from_secs(5);
        loop {
            std::thread::sleep(pause);
            println!("fault: a frame with a bad checksum");
            bad_checksum();
            std::thread::sleep(pause);
            println!("fault: junk bytes before a frame");
            faults(&mut |f| f.junk += 1);
            std::thread::sleep(pause);
            println!("fault: 2 s of silence");
            faults(&mut |f| f.silent = true);
            std::thread::sleep(std::time::Duration::from_secs(2));
            faults(&mut |f| f.silent = false);
            std::thread::sleep(pause);
            println!("fault: restart");
            restart();
        }
    });
}

fn main() {
    let options = match parse() {
        Ok(Some(o)) => Ok(o),
        Ok(None) => {
            println!("{USAGE}");
            return;
        }
        Err(e) => Err(e),
    };
    if let Err(e) = options.and_then(run) {
        eprintln!("player-emulate: {e}");
        std::process::exit(2);
    }
}
