//! Watches a robot without driving it: asks for read access to every device and prints one
//! line per round (position, a few laser ranges, battery, and what else is open).
//!
//! ```text
//! cargo run -p player-client --example monitor -- [host[:port]] [rounds] [request]
//! ```
//!
//! The server defaults to localhost:6665, the rounds to for ever (0), and the request to
//! `lrsrprgrmrvrzr`, every device of the manual read only. Devices the server refuses are
//! named and left out. Timestamps are turned on, and each line starts with the position
//! packet's time.

use std::process::ExitCode;
use std::time::Duration;

use player_client::{device, with_default_port, Client, Error, Round};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = with_default_port(args.first().map_or("", String::as_str));
    let rounds = match args.get(1).map(|n| n.parse::<u64>()) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: monitor [host[:port]] [rounds] [request]");
            return ExitCode::from(2);
        }
    };
    let spec = args.get(2).map_or("lrsrprgrmrvrzr", String::as_str);
    match monitor(&addr, rounds, spec) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("monitor: {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn monitor(addr: &str, rounds: u64, spec: &str) -> Result<(), Error> {
    let mut robot = Client::connect(addr)?;
    robot.set_read_timeout(Some(Duration::from_secs(15)))?;
    robot.set_timestamps(true)?;
    let grant = robot.request(spec)?;
    for (d, asked, got) in grant.refused() {
        eprintln!(
            "monitor: {} ('{}') asked '{}', granted '{}'",
            device::name(d),
            char::from(d),
            char::from(asked),
            char::from(got)
        );
    }
    let mut n = 0;
    while rounds == 0 || n < rounds {
        let round = robot.read()?;
        println!("{}", line(round));
        n += 1;
    }
    Ok(())
}

fn line(r: &Round) -> String {
    let mut parts = Vec::new();
    if let Some((s, us)) = r.timestamp(device::POSITION) {
        parts.push(format!("{s}.{us:06}"));
    }
    if let Some(p) = &r.position {
        parts.push(format!(
            "pos ({}, {}) mm {}° {} mm/s {}°/s{}",
            p.x,
            p.y,
            p.heading,
            p.speed,
            p.turn_rate,
            if p.stall != 0 { " STALL" } else { "" }
        ));
    }
    if let Some(l) = &r.laser {
        let at = |i: usize| l.ranges[i];
        parts.push(format!(
            "laser R {} FR {} F {} FL {} L {}",
            at(0),
            at(90),
            at(180),
            at(270),
            at(360)
        ));
    }
    if let Some(s) = &r.sonar {
        let front = s.ranges[..8].iter().min().copied().unwrap_or(0);
        parts.push(format!("sonar front min {front}"));
    }
    if let Some(m) = &r.misc {
        parts.push(format!(
            "battery {}.{} V bumpers {:05b}/{:05b}",
            m.voltage / 10,
            m.voltage % 10,
            m.front_bumpers & 0x1F,
            m.rear_bumpers & 0x1F
        ));
    }
    if let Some(g) = &r.gripper {
        parts.push(format!("gripper {:08b}/{:08b}", g.state, g.beams));
    }
    if let Some(z) = &r.ptz {
        parts.push(format!("ptz {}/{}/{}", z.pan, z.tilt, z.zoom));
    }
    if let Some(v) = &r.vision {
        let blobs: usize = v.channels.iter().map(Vec::len).sum();
        parts.push(format!("blobs {blobs}"));
    }
    parts.join(" | ")
}
