//! `player-nav`: offline maps, localization and planning on public data
//! (docs/navigation.md).
//!
//! ```text
//! player-nav plan MAP.yaml [--pairs N] [--seed S] [--algorithm astar|wavefront] [--radius M]
//! ```
//!
//! Exit status: 0 on success, 1 when a file cannot be read, 2 on a usage error.

use std::process::ExitCode;

use player_nav::plan::cli::{self, CliError};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("plan") => cli::run(&args[1..]),
        Some(other) => Err(CliError::Usage(format!("unknown command '{other}'"))),
        None => Err(CliError::Usage("which command?".into())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage(m)) => {
            eprintln!("player-nav: {m}\nusage:\n  {}", cli::USAGE);
            ExitCode::from(2)
        }
        Err(CliError::Run(m)) => {
            eprintln!("player-nav: {m}");
            ExitCode::from(1)
        }
    }
}
