//! The manual's Java example "Obstacle avoidance using sonar" (Player 0.7.4a manual,
//! Appendix C.4), in Rust: the nearest obstacle on each side of the front sonar ring sets
//! the speed of the wheel on the other side.
//!
//! ```text
//! cargo run -p player-client --example sonar_avoid -- [host[:port]] [steps]
//! ```
//!
//! The server defaults to localhost:6665 and the steps to the example's 400 (40 s at the
//! default 10 Hz). Unlike the Java original, which asks for `"srpw"`, this asks for all
//! access to the position device (`"srpa"`) so that it can print the robot's position
//! every 10 steps; and it stops the robot at the end.

use std::process::ExitCode;
use std::time::Duration;

use player_client::{manual, with_default_port, Client, Error};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = with_default_port(args.first().map_or("", String::as_str));
    let steps = match args.get(1).map(|n| n.parse::<u32>()) {
        None => 400,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: sonar_avoid [host[:port]] [steps]");
            return ExitCode::from(2);
        }
    };
    match avoid(&addr, steps) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sonar_avoid: {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn avoid(addr: &str, steps: u32) -> Result<(), Error> {
    // Setup communications with robot
    let mut ant = Client::connect(addr)?;
    ant.set_read_timeout(Some(Duration::from_secs(10)))?;

    // Setup requests for 'ant': (Sonar, Read), (Position, All)
    ant.request("srpa")?.check()?;

    // Do obstacle avoidance for 400 time steps (40 sec.)
    for i in 0..steps {
        let round = ant.read()?; // Blocking read of data
        let sonar = round.sonar.unwrap_or_default().ranges;
        if i % 10 == 0 {
            if let Some(p) = round.position {
                println!(
                    "step {i:3}: x {} mm, y {} mm, heading {}°, speed {} mm/s, turn {}°/s",
                    p.x, p.y, p.heading, p.speed, p.turn_rate
                );
            }
        }

        // The example's arithmetic, in player_client::manual so tests can run it too.
        let (speed, turn) = manual::sonar_avoid_step(&sonar);
        ant.set_speed(speed, turn)?;
    }

    ant.set_speed(0, 0)?;
    Ok(())
}
