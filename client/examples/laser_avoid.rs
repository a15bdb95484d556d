//! A laser obstacle avoider that wanders a building: `player_client::avoid::LaserAvoider`
//! reading the `l` device and driving `p`, for as long as it is told to.
//!
//! ```text
//! cargo run -p player-client --example laser_avoid -- [host[:port]] [seconds]
//! ```
//!
//! The server defaults to localhost:6665 and the run to 60 s (at the server's default
//! 10 Hz, ten rounds a second). For example, against the simulated office maze:
//! `player -stage config/worlds/office-maze.toml`, then this. It prints the robot's
//! odometry every 10 s and stops the robot at the end.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use player_client::avoid::LaserAvoider;
use player_client::{with_default_port, Client, Error};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = with_default_port(args.first().map_or("", String::as_str));
    let seconds = match args.get(1).map(|n| n.parse::<u64>()) {
        None => 60,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: laser_avoid [host[:port]] [seconds]");
            return ExitCode::from(2);
        }
    };
    match wander(&addr, Duration::from_secs(seconds)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("laser_avoid: {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn wander(addr: &str, run: Duration) -> Result<(), Error> {
    let mut robot = Client::connect(addr)?;
    robot.set_read_timeout(Some(Duration::from_secs(10)))?;
    // The laser to read, the position device to read and command.
    robot.request("lrpa")?.check()?;
    let mut avoider = LaserAvoider::default();
    let start = Instant::now();
    let mut next_print = Duration::ZERO;
    while start.elapsed() < run {
        let round = robot.read()?;
        let Some(laser) = round.laser.clone() else {
            continue;
        };
        if start.elapsed() >= next_print {
            if let Some(p) = round.position {
                println!(
                    "{:4} s: x {} mm, y {} mm, heading {}°, speed {} mm/s",
                    next_print.as_secs(),
                    p.x,
                    p.y,
                    p.heading,
                    p.speed
                );
            }
            next_print += Duration::from_secs(10);
        }
        let (speed, turn) = avoider.step(&laser.ranges);
        robot.set_speed(speed, turn)?;
    }
    robot.set_speed(0, 0)?;
    Ok(())
}
