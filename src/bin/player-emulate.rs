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
//!     --left-running   start the base open and the laser streaming at 38400 baud, as a
//!                      crashed server leaves them
//! ```
//! It runs until interrupted.

use player_emulators::acts::ActsEmulator;
use player_emulators::p2os::P2osEmulator;
use player_emulators::ptz::PtzEmulator;
use player_emulators::sick::SickEmulator;
use player_emulators::{EmuWorld, SerialDevice, SerialEmulator};
use std::path::{Path, PathBuf};

const USAGE: &str = "usage: player-emulate (all [--dir DIR] [--port N] | p2os|sick|ptz [--link PATH] | acts [--port N]) [--left-running]";

struct Options {
    what: String,
    link: Option<PathBuf>,
    dir: Option<PathBuf>,
    port: u16,
    left_running: bool,
}

fn parse() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let what = args.next().ok_or(USAGE)?;
    let mut o = Options {
        what,
        link: None,
        dir: None,
        port: 5001,
        left_running: false,
    };
    while let Some(a) = args.next() {
        match a.as_str() {
            "--link" => o.link = Some(args.next().ok_or(USAGE)?.into()),
            "--dir" => o.dir = Some(args.next().ok_or(USAGE)?.into()),
            "--port" => {
                o.port = args
                    .next()
                    .and_then(|p| p.parse().ok())
                    .ok_or("--port needs a TCP port number")?
            }
            "--left-running" => o.left_running = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    Ok(o)
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
            let acts = ActsEmulator::start(world.clone(), o.port)
                .map_err(|e| format!("cannot listen on port {}: {e}", o.port))?;
            println!(
                "acts   on {}  (player -vp {})",
                acts.addr(),
                acts.addr().port()
            );
            keep.push(Box::new(acts));
        }
        other => return Err(format!("unknown device '{other}'\n{USAGE}")),
    }
    println!("running; interrupt to stop");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

fn main() {
    if let Err(e) = parse().and_then(run) {
        eprintln!("player-emulate: {e}");
        std::process::exit(2);
    }
}
