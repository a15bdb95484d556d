//! The `player` binary under systemd (`Type=notify`, sd_notify(3) through the `sd-notify`
//! crate): `READY=1` once every robot listens and the devices set up at start (those the
//! recorder reads, say) are up or have failed with a logged reason; `STATUS=` with the
//! robots, clients and devices in trouble, refreshed every few seconds; `WATCHDOG=1` from
//! the drivers' event loop at half of `WATCHDOG_USEC`, so a loop that is stuck stops
//! petting and systemd restarts the server (a busy one still gets round to it);
//! `STOPPING=1` when asked to stop. Without `NOTIFY_SOCKET` nothing is sent.

use crate::server::{Server, ServerStatus};
use crate::settings::Settings;
use sd_notify::NotifyState;
use slog::{info, warn, Logger};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How often `STATUS=` is refreshed.
pub const STATUS_EVERY: Duration = Duration::from_secs(5);

/// Whether a service manager listens (`NOTIFY_SOCKET` is set).
pub fn enabled() -> bool {
    std::env::var_os("NOTIFY_SOCKET").is_some()
}

/// Sends `states` to the service manager, if one listens, from a thread of its own: a
/// datagram socket blocks its sender while the receiver's queue is full (ten messages
/// here by default), and the event loop must never wait for systemd. When that thread
/// cannot keep up, messages are dropped (a watchdog pet then comes late, as it should).
/// The first failure to send is logged (a vanished socket would otherwise be logged at
/// every pet).
pub fn notify(log: &Logger, states: &[NotifyState]) {
    send(log, states, None);
}

/// A message for the sending thread, and who waits until it is sent.
type Note = (String, Option<std::sync::mpsc::Sender<()>>);

fn send(log: &Logger, states: &[NotifyState], sent: Option<std::sync::mpsc::Sender<()>>) {
    static SENDER: OnceLock<Option<SyncSender<Note>>> = OnceLock::new();
    if !enabled() {
        return;
    }
    let sender = SENDER.get_or_init(|| {
        let (tx, rx) = sync_channel::<Note>(64);
        let log = log.clone();
        std::thread::Builder::new()
            .name("sd-notify".into())
            .spawn(move || {
                let mut warned = false;
                for (text, sent) in rx {
                    let state = NotifyState::Custom(text.trim_end());
                    if let Err(e) = sd_notify::notify(&[state]) {
                        if !std::mem::replace(&mut warned, true) {
                            warn!(log, "cannot notify the service manager"; "error" => %e, "message" => text.trim_end());
                        }
                    }
                    if let Some(s) = sent {
                        let _ = s.send(());
                    }
                }
            })
            .ok()
            .map(|_| tx)
    });
    let text: String = states.iter().map(|s| format!("{s}\n")).collect();
    match sender {
        Some(tx) => {
            let _ = tx.try_send((text, sent));
        }
        None => {
            let _ = sd_notify::notify(states);
        }
    }
}

/// The interval the watchdog is petted at: half of `WATCHDOG_USEC` (when it is meant for
/// this process), as sd_watchdog_enabled(3) advises.
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled()
        .filter(|d| !d.is_zero())
        .map(|d| d / 2)
}

/// Pets the systemd watchdog (`WATCHDOG=1`) every `every` from the drivers' event loop
/// ([`Server::heartbeat`]), so the petting stops while that loop is stuck.
pub fn pet_watchdog(server: &Server, every: Duration, log: &Logger) {
    info!(log, "petting the systemd watchdog"; "every_ms" => every.as_millis());
    let log = log.clone();
    server.heartbeat(every, move || notify(&log, &[NotifyState::Watchdog]));
}

/// Waits (at most `limit`) until no device is being set up, and with `early` (something
/// sets every device up at start: the recorder) until every device is up or has failed
/// (with its reason logged); returns the state then.
pub async fn settle(server: &Server, limit: Duration, early: bool) -> ServerStatus {
    let until = Instant::now() + limit;
    loop {
        let status = server.status().await;
        let settled = if early {
            status.all_set_up()
        } else {
            !status.settling()
        };
        if settled || Instant::now() >= until {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Tells the service manager the server is ready, with its state; logs it.
pub fn ready(log: &Logger, status: &ServerStatus) {
    let line = status.line();
    info!(log, "ready"; "status" => &line);
    notify(
        log,
        &[
            NotifyState::Ready,
            NotifyState::Status(&format!("serving: {line}")),
        ],
    );
}

/// Refreshes `STATUS=`.
pub async fn refresh_status(log: &Logger, server: &Server) {
    let line = server.status().await.line();
    notify(log, &[NotifyState::Status(&format!("serving: {line}"))]);
}

/// Tells the service manager the server is stopping (`STOPPING=1`) and why; waits (up to
/// a second) until the message is sent, so it goes out before the process ends.
pub fn stopping(log: &Logger, why: &str) {
    let (tx, rx) = std::sync::mpsc::channel();
    send(
        log,
        &[
            NotifyState::Stopping,
            NotifyState::Status(&format!("stopping ({why})")),
        ],
        Some(tx),
    );
    let _ = rx.recv_timeout(Duration::from_secs(1));
}

/// The keys whose values differ between `old` and `new` and that only a restart applies
/// (everything but `[access]` and `server.debug`: the core's and every front end's), for
/// one log line.
pub fn needs_restart(old: &Settings, new: &Settings) -> Vec<String> {
    fn differs<T: std::fmt::Debug>(a: &T, b: &T) -> bool {
        format!("{a:?}") != format!("{b:?}")
    }
    let mut keys = Vec::new();
    let (mut a, mut b) = (old.server.clone(), new.server.clone());
    a.debug = false;
    b.debug = false;
    if differs(&a, &b) {
        keys.push("[server]".to_string());
    }
    if old.robot.len() != new.robot.len() {
        keys.push("[[robot]] (robots added or removed)".to_string());
    }
    for (a, b) in old.robot.iter().zip(&new.robot) {
        if differs(a, b) {
            keys.push(format!("[[robot]] '{}'", b.name));
        }
    }
    keys.extend(old.front_ends().needing_restart(new));
    keys
}

/// Whether the front ends running now (their settings as they started, which only a
/// restart changes) can honour a reloaded `[access]`: each front end's check against the
/// new rules (for the bridges: a key the ROS 2 commands cannot carry, a `read_allow` their
/// readers bypass). A reload one of them cannot honour is refused whole.
pub fn front_ends_accept(
    running: &Settings,
    access: &crate::access::AccessSettings,
) -> Result<(), crate::settings::SettingsError> {
    running.front_ends().accept_reload(access)
}

/// Reads the configuration again (the same command line: `--config FILE` and the flags
/// over it) on SIGHUP and applies what can change while running: the `[access]` section
/// (every session re-checks its rights) and the log level (`server.debug`, `-debug`).
/// What else differs from `running` (the configuration in force, updated here) is named in
/// one log line as needing a restart. A file with any error is refused whole and the
/// running configuration kept.
pub async fn reload(
    args: &[String],
    catalog: &crate::catalog::Catalog,
    server: &mut Server,
    running: &mut Settings,
    level: &crate::logging::LogLevel,
    log: &Logger,
) {
    use crate::settings::{parse_args_with, Invocation};
    notify(log, &[NotifyState::Status("reloading the configuration")]);
    let parsed = match parse_args_with(args, catalog) {
        Ok(Invocation::Run { settings, base_dir }) => {
            let problems = crate::check::check_settings(
                &settings,
                catalog,
                &base_dir,
                crate::check::Scope::Reload,
                None,
            );
            if problems.is_empty() {
                Ok(settings)
            } else {
                Err(problems
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "))
            }
        }
        Ok(_) => Err("the command line no longer asks to run".to_string()),
        Err(e) => Err(e.to_string()),
    };
    let settings = match parsed {
        Ok(s) => s,
        Err(e) => {
            slog::error!(log, "reload refused: the configuration has errors; the running configuration is kept"; "errors" => e);
            refresh_status(log, server).await;
            return;
        }
    };
    if let Err(e) = front_ends_accept(running, &settings.access) {
        slog::error!(log, "reload refused: the new [access] cannot be honoured by a bridge started with other settings; the running configuration is kept (restart to change both)"; "error" => %e);
        refresh_status(log, server).await;
        return;
    }
    match server.reload(&settings.access).await {
        Ok(r) => {
            level.set_debug(settings.server.debug);
            slog::debug!(log, "debug records are logged");
            info!(log, "configuration reloaded"; "access_changed" => r.access_changed, "sessions_rechecked" => r.sessions_rechecked, "front_end_clients_rechecked" => r.front_end_rechecked, "debug" => settings.server.debug);
            let restart = needs_restart(running, &settings);
            if !restart.is_empty() {
                warn!(log, "configuration reloaded, but these changes take effect only after a restart"; "restart_needed_for" => restart.join(", "));
            }
            running.access = settings.access.clone();
            running.server.debug = settings.server.debug;
        }
        Err(e) => {
            slog::error!(log, "reload refused; the running configuration is kept"; "error" => %e);
        }
    }
    refresh_status(log, server).await;
}

/// Raises the process's soft limit on open descriptors to its hard limit, as servers do:
/// each robot holds a listening socket and each client a connection, so a world of 10 000
/// robots needs more than the usual soft limit of 1024. Returns the limit now in force
/// (`None` if it cannot be read).
// Unsafe code: getrlimit(2)/setrlimit(2) (Linux calls).
#[allow(unsafe_code)]
pub fn raise_open_files(log: &Logger) -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    if lim.rlim_cur < lim.rlim_max {
        let was = lim.rlim_cur;
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            warn!(log, "cannot raise the open-descriptor limit"; "soft" => was, "hard" => lim.rlim_max);
            return Some(was);
        }
    }
    Some(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_access_and_the_log_level_reload_without_a_restart() {
        let old = Settings::default_config();
        let mut new = old.clone();
        new.access.key = "k".into();
        new.server.debug = true;
        assert!(needs_restart(&old, &new).is_empty());
        new.server.max_clients = 3;
        new.robot[0].port = 7000;
        new.record.path = "run.mcap".into();
        new.web.tls_cert = "robot.crt".into();
        new.web.tls_key = "robot.key".into();
        assert_eq!(
            needs_restart(&old, &new),
            vec![
                "[server]".to_string(),
                "[[robot]] 'pioneer'".to_string(),
                "[web]".to_string(),
                "[record]".to_string()
            ]
        );
        let mut ros = old.clone();
        ros.ros2.write = true;
        assert_eq!(needs_restart(&old, &ros), vec!["[ros2]".to_string()]);
    }

    #[test]
    fn a_reloaded_access_the_running_bridges_cannot_honour_is_refused_naming_the_key() {
        let mut running = Settings::default_config();
        let keyed = crate::access::AccessSettings {
            key: "k".into(),
            ..Default::default()
        };
        let read_limited = crate::access::AccessSettings {
            read_allow: vec!["10.0.0.0/8".into()],
            ..Default::default()
        };
        // Bridges off: anything goes.
        assert!(front_ends_accept(&running, &keyed).is_ok());
        assert!(front_ends_accept(&running, &read_limited).is_ok());
        // A ROS 2 front end obeying cmd_vel cannot ask for a key.
        running.ros2.enabled = true;
        running.ros2.write = true;
        let e = front_ends_accept(&running, &keyed).unwrap_err().to_string();
        assert!(e.contains("ros2") && e.contains("access.key"), "{e}");
        running.ros2.public = true;
        assert!(front_ends_accept(&running, &keyed).is_ok());
        // A Zenoh bridge not made public cannot honour read_allow; a key it follows.
        running.zenoh.enabled = true;
        running.zenoh.write = true;
        let e = front_ends_accept(&running, &read_limited)
            .unwrap_err()
            .to_string();
        assert!(e.contains("zenoh.public"), "{e}");
        assert!(front_ends_accept(&running, &keyed).is_ok());
    }
}
