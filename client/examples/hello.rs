//! The manual's "hello world" (Player 0.7.4a manual, Appendix A.1, Figure 3), translated
//! line for line from the C++ `CRobot` client: read the sonar, turn away from the nearer
//! side, stop when something is close in front, and move on otherwise.
//!
//! ```text
//! cargo run -p player-client --example hello -- [host[:port]] [iterations]
//! ```
//!
//! The server defaults to localhost:6665 and the iterations to the figure's 1000 (100 s at
//! the default 10 Hz); give a smaller count to run it briefly, e.g. `-- localhost:6665 50`.

use std::process::ExitCode;
use std::time::Duration;

use player_client::{manual, with_default_port, Client, Error};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = with_default_port(args.first().map_or("", String::as_str));
    let iterations = match args.get(1).map(|n| n.parse::<u32>()) {
        None => 1000,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("usage: hello [host[:port]] [iterations]");
            return ExitCode::from(2);
        }
    };
    match hello(&addr, iterations) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hello: {addr}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn hello(addr: &str, iterations: u32) -> Result<(), Error> {
    // where addr is the robot's host (the figure's "tanis")
    let mut robot = Client::connect(addr)?;
    // Not in the figure: do not wait for ever on a server that stopped answering.
    robot.set_read_timeout(Some(Duration::from_secs(10)))?;

    robot.request("srpw")?.check()?;

    for _ in 0..iterations {
        let round = robot.read()?;
        let sonar = round.sonar.unwrap_or_default().ranges;

        // robot.Print()
        let ranges: Vec<String> = sonar.iter().map(u16::to_string).collect();
        println!("sonar: {}", ranges.join(" "));

        // The figure's decision, in player_client::manual so tests can run it too.
        let (newspeed, newturnrate) = manual::hello_step(&sonar);

        // robot.Write()
        robot.set_speed(newspeed, newturnrate)?;
    }

    /* close everything */
    robot.request("scpc")?;

    Ok(())
}
