//! The `player` binary: parses the flags, starts the server, and shuts it down in order on
//! SIGINT or SIGTERM; SIGUSR1 latches every robot's emergency stop; SIGHUP reloads the
//! access policy and log level. Under systemd it notifies readiness, state and the watchdog
//! (`player::daemon`); `--check-config FILE` checks a configuration (`player::check`).

use player::daemon;
use player::settings::{parse_args_with, Invocation};
use slog::{error, info};
use std::process::ExitCode;
use tokio::signal::unix::{signal, Signal, SignalKind};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let catalog = player::builtin_catalog();
    if args.first().is_some_and(|a| a == "--check-config") {
        return check_config(&args[1..], &catalog);
    }
    let (settings, base_dir) = match parse_args_with(&args, &catalog) {
        Ok(Invocation::Run { settings, base_dir }) => (settings, base_dir),
        Ok(Invocation::Help) => {
            print!("{}", help());
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
    let (log, level) =
        player::logging::stderr(settings.server.debug, player::logging::Output::detect());
    daemon::raise_open_files(&log);
    let system = actix_rt::System::new();
    let task_log = log.clone();
    let result = system.block_on(async move {
        // Install the handlers before anything can block, so no signal is lost.
        let signals = Signals {
            int: signal(SignalKind::interrupt()).map_err(|e| e.to_string())?,
            term: signal(SignalKind::terminate()).map_err(|e| e.to_string())?,
            usr1: signal(SignalKind::user_defined1()).map_err(|e| e.to_string())?,
            hup: signal(SignalKind::hangup()).map_err(|e| e.to_string())?,
        };
        // The server runs as a task of its own on this (the drivers') thread: the future
        // given to `block_on` is polled whenever any task of the thread wakes (ten times a
        // second per simulated robot), and `serve`'s wait on four signals and a timer
        // would be set up anew each time.
        let main = tokio::task::spawn_local(serve(
            args, catalog, *settings, base_dir, level, task_log, signals,
        ));
        main.await
            .unwrap_or_else(|e| Err(format!("the server's task failed: {e}")))
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

/// The signals the server answers, installed before it starts.
struct Signals {
    int: Signal,
    term: Signal,
    usr1: Signal,
    hup: Signal,
}

/// Starts the server and runs it until SIGINT or SIGTERM, then shuts it down in order:
/// SIGUSR1 latches every robot's emergency stop, SIGHUP reloads, and under systemd the
/// status is refreshed.
async fn serve(
    args: Vec<String>,
    catalog: player::catalog::Catalog,
    settings: player::settings::Settings,
    base_dir: std::path::PathBuf,
    level: player::logging::LogLevel,
    log: slog::Logger,
    mut signals: Signals,
) -> Result<(), String> {
    let setup_timeout = std::time::Duration::from_secs_f64(settings.server.setup_timeout);
    let mut server = player::server::start(&settings, &catalog, base_dir, log.clone())
        .await
        .map_err(|e| e.to_string())?;
    // The watchdog is petted from this (the drivers') arbiter: a stuck loop stops it.
    if let Some(every) = daemon::watchdog_interval() {
        daemon::pet_watchdog(&server, every, &log);
    }
    // The recorder sets every device up at start: ready once each is up or has failed.
    let status = daemon::settle(&server, setup_timeout, settings.record.enabled()).await;
    daemon::ready(&log, &status);
    // The configuration in force (a reload changes its [access] and log level).
    let mut running = settings.clone();
    let mut status_tick = tokio::time::interval(daemon::STATUS_EVERY);
    status_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let which = loop {
        tokio::select! {
            _ = signals.int.recv() => break "SIGINT",
            _ = signals.term.recv() => break "SIGTERM",
            _ = signals.usr1.recv() => {
                info!(log, "signal received: latching the emergency stop"; "signal" => "SIGUSR1");
                server.emergency_stop("SIGUSR1");
            }
            _ = signals.hup.recv() => {
                info!(log, "signal received: reloading the configuration"; "signal" => "SIGHUP");
                daemon::reload(&args, &catalog, &mut server, &mut running, &level, &log).await;
            }
            _ = status_tick.tick(), if daemon::enabled() => {
                daemon::refresh_status(&log, &server).await;
            }
        }
    };
    daemon::stopping(&log, which);
    info!(log, "signal received"; "signal" => which);
    server.shutdown().await;
    Ok(())
}

/// `player --check-config FILE`: prints what the file would serve and exits 0, or lists
/// every error (key and line) and exits 1.
fn check_config(rest: &[String], catalog: &player::catalog::Catalog) -> ExitCode {
    let [file] = rest else {
        eprintln!("player: --check-config takes one file: player --check-config FILE");
        return ExitCode::from(2);
    };
    let path = std::path::Path::new(file);
    match player::check::check_file(path, catalog, player::check::Scope::Start) {
        Ok(checked) => {
            println!("{}: OK", path.display());
            print!("{}", player::check::describe(&checked));
            ExitCode::SUCCESS
        }
        Err(problems) => {
            let n = problems.len();
            eprintln!(
                "{}: {n} error{}",
                path.display(),
                if n == 1 { "" } else { "s" }
            );
            for p in problems {
                eprintln!("  {p}");
            }
            ExitCode::from(1)
        }
    }
}

/// The `--help` text: the manual's flags, the front ends' ([`player::frontends`]: their
/// flags, sections and robot keys where the markers stand), the configuration file, the
/// shipped drivers.
fn help() -> String {
    let all = player::frontends::ALL;
    let flags: String = all.iter().map(|e| e.help.flags).collect();
    let sections: Vec<&str> = all.iter().map(|e| e.help.section).collect();
    let robot_keys: String = all.iter().map(|e| e.help.robot_keys).collect();
    HELP.replace("@FRONT_END_FLAGS@\n", &flags)
        .replace("@FRONT_END_SECTIONS@\n", &sections.join("\n"))
        .replace("@FRONT_END_ROBOT_KEYS@\n", &robot_keys)
}

/// [`help`]'s text without the front ends.
const HELP: &str = "\
player: a Player 0.7.4a compatible robot device server

USAGE:
    player [FLAGS]

With no flags, serves a simulated Pioneer 2-DX (position, sonar, laser, misc, gripper,
PTZ camera and ACTS vision in a simulated room) on TCP port 6665.

FLAGS (the manual's, a flag overrides the configuration file):
    -gp <port>       TCP port the (first) robot listens on. Default 6665.
    -pp <port>       P2OS robot base on serial port <port> (e.g. /dev/ttyS0): the position,
                     sonar, misc and gripper devices use the 'p2os' driver.
    -lp <port>       SICK LMS-200 laser on serial port <port>: the laser uses the
                     'sicklms200' driver.
    -zp <port>       Sony PTZ camera on serial port <port>: the ptz device uses the
                     'sonyptz' driver.
    -vp <port>       ACTS vision server TCP port: the vision device uses the 'acts' driver.
    -vc <path>       ACTS configuration file (with -vp, or alone: 'acts' driver).
    -stage <path>    Serve every robot of the world file <path> (TOML), each on its own
                     port (the file's, else 6665 + i; with -gp P, P + i).
    -replay <file>   Serve a recording (MCAP, as -record writes) as the robot's devices.
    -debug           Debug logging.
    -exp             Enable experimental features.
    -bind <addr>     Listen on <addr> only (e.g. 127.0.0.1; default 0.0.0.0, every
                     interface).

FRONT ENDS (besides TCP; each flag turns one on or sets its section below):
@FRONT_END_FLAGS@

OTHER FLAGS:
    --config <file>  Read the configuration from <file> (TOML) instead of the built-in
                     config/default.toml. Relative paths in it are relative to its folder.
    --check-config <file>
                     Check the configuration file <file> as the server would at start
                     (keys, drivers, device codes, ports, serial ports, access, front
                     ends): print what it would serve and exit 0, or every error with its
                     key and line and exit 1.
    --help, -h       Print this text.
    --version        Print the version.

CONFIGURATION FILE (TOML; see config/default.toml):
    [server]
    max_clients = 4096     # clients per robot port
    workers = 0            # session threads, 0 = one per core
    setup_timeout = 30.0   # seconds a device setup may take
    quiet_after = 3.0      # seconds before a silent device is named in the log
    stall_timeout = 60.0   # seconds a client may leave data unread (0 = forever)
    max_frequency = 1000   # highest data rate a client may set, Hz
    max_devices = 16       # distinct devices per client
    listen_backlog = 1024  # pending connections the kernel queues
    keepalive_idle = 2.0   # TCP keepalive: idle seconds before probes (0 = off)
    keepalive_interval = 1.0
    keepalive_count = 3    # unanswered probes before a vanished peer is dropped
    user_timeout = 5.0     # seconds unacknowledged data may wait (TCP_USER_TIMEOUT)
    partial_timeout = 10.0 # seconds a client may take to finish a started message
    max_output = 262144    # bytes of unread replies/notices before input is paused
    debug = false
    experimental = false

    [access]               # who may connect and command (defaults: anyone, as 0.7.4a)
    key = \"\"               # shared key: a client sends x y k <key> to get write access
    keyless = \"read\"       # without the key: \"read\" (read-only) or \"refuse\"
    read_allow = []        # addresses/networks that may connect, e.g. [\"10.0.0.0/8\"]
    write_allow = []       # addresses/networks that may command
    max_per_address = 0    # connections per address and robot port (0 = no limit)

@FRONT_END_SECTIONS@

    [[robot]]              # one per robot; each has its own port and device table
    name = \"pioneer\"
    port = 6665
    bind = \"0.0.0.0\"       # -bind sets it
    command_timeout = 0.5  # command watchdog (below); 0 turns it off for this robot
@FRONT_END_ROBOT_KEYS@

    [[robot.driver]]       # which driver backs which device codes
    driver = \"sim\"
    devices = [\"p\", \"s\", \"m\", \"g\", \"l\", \"z\", \"v\"]
    command_timeout = 0.5  # per driver; overrides the robot's (0 = off)
    [robot.driver.params]  # driver-specific
    world = \"room\"

DRIVERS (the driver key): sim, p2os, sicklms200, sonyptz, acts, replay;
    passthrough (a device of another Player server: params host, port, device; README
    \"Fleets\", config/fleet.toml); program (devices served by a program in any
    language over stdin/stdout: params command = [..], env, and a
    [[robot.driver.params.device]] table per code; docs/plugins.md, config/obstacle.toml).

SAFETY:
    Command watchdog: a device whose commands keep it moving (the base) is stopped when
    no command has reached it from any writer for command_timeout seconds (default 0.5,
    the same for the simulator and real hardware; 0 disables it). The next command
    resumes it. Send a command every round (the manual's examples do, at 10 Hz).
    A writer that disconnects, closes the device or drops to read-only stops it too.
    Emergency stop: any client can latch it (x y E 1); every command is then ignored and
    the base held stopped until a client with write access releases it (x y E 0).
    SIGUSR1 latches it too. Vanished peers are dropped by TCP keepalive within about
    keepalive_idle + keepalive_interval * keepalive_count seconds.
    Extensions (error channel, e-stop, key, device list): README, docs/extensions.md.

SIGNALS: SIGINT or SIGTERM stops the robot, closes the devices and exits with status 0;
SIGUSR1 latches the emergency stop of every robot; SIGHUP reads the configuration again
and applies [access] (clients the new policy refuses are closed, a client whose key is no
longer the key keeps reading but may not command) and the log level; other changes are
named in the log as needing a restart, and a file with errors is refused whole.

SYSTEMD (config/player.service, Type=notify): READY=1 once every robot listens, STATUS=
with robots, clients and devices in trouble, WATCHDOG=1 at half of WatchdogSec,
STOPPING=1 on SIGTERM. Under the journal, each log line carries its priority.
";
