//! The `player` binary: parses the flags, starts the server, and shuts it down in order on
//! SIGINT or SIGTERM; SIGUSR1 latches every robot's emergency stop.

use player::server::Server;
use player::settings::{parse_args_with, Invocation, HELP};
use slog::{error, info};
use std::process::ExitCode;
use tokio::signal::unix::{signal, SignalKind};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let catalog = player::builtin_catalog();
    let (settings, base_dir) = match parse_args_with(&args, &catalog) {
        Ok(Invocation::Run { settings, base_dir }) => (settings, base_dir),
        Ok(Invocation::Help) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::Version) => {
            println!("player {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("player: {e}");
            return ExitCode::from(2);
        }
    };
    let log = player::logging::terminal(settings.server.debug);
    let system = actix_rt::System::new();
    let result = system.block_on(async {
        // Install the handlers before anything can block, so no signal is lost.
        let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
        let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
        let mut usr1 = signal(SignalKind::user_defined1()).map_err(|e| e.to_string())?;
        let server = Server::start(&settings, &catalog, base_dir, log.clone())
            .await
            .map_err(|e| e.to_string())?;
        let which = loop {
            tokio::select! {
                _ = int.recv() => break "SIGINT",
                _ = term.recv() => break "SIGTERM",
                _ = usr1.recv() => {
                    info!(log, "signal received: latching the emergency stop"; "signal" => "SIGUSR1");
                    server.emergency_stop("SIGUSR1");
                }
            }
        };
        info!(log, "signal received"; "signal" => which);
        server.shutdown().await;
        Ok::<(), String>(())
    });
    match result {
        Ok(()) => {
            drop(log);
            ExitCode::SUCCESS
        }
        Err(e) => {
            error!(log, "cannot start"; "error" => &e);
            drop(log);
            eprintln!("player: {e}");
            ExitCode::from(1)
        }
    }
}
