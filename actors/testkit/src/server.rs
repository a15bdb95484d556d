//! The server in-process: [`TestServer`] runs `player`'s server on its own thread and actix
//! system, as the binary does, and shuts it down when dropped.

use crate::wait::TIMEOUT;
use player::catalog::Catalog;
use player::server::StartError;
use player::settings::Settings;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The repository's root: where the server resolves relative paths (worlds, programs), as
/// the binary does when started there.
fn repository_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The log of a server a test starts: discarded, or on standard error when the environment
/// has `PLAYER_TEST_LOG`.
pub(crate) fn test_logger() -> slog::Logger {
    if std::env::var_os("PLAYER_TEST_LOG").is_some() {
        player::logging::terminal(true)
    } else {
        player::logging::discard()
    }
}

/// Runs `player --check-config file` with the binary at `player` (a test's
/// `env!("CARGO_BIN_EXE_player")`): its exit code (-1 when killed), standard output and
/// standard error.
pub fn check_config(player: &str, file: &std::path::Path) -> (i32, String, String) {
    let out = std::process::Command::new(player)
        .arg("--check-config")
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The shipped default configuration (the simulated Pioneer with all seven devices).
pub fn default_settings() -> Settings {
    Settings::default_config()
}

/// Starts the default server with the command watchdog's timeout set to `secs` (tests of
/// the other ways a robot stops use a long one, so only what they test can stop it).
pub fn start_server_command_timeout(secs: f64) -> TestServer {
    let mut settings = default_settings();
    settings.robot[0].command_timeout = Some(secs);
    start_server_with(settings, player::builtin_catalog())
}

/// Starts the default server (simulated Pioneer, devices l s p g m v z).
pub fn start_server() -> TestServer {
    start_server_with(default_settings(), player::builtin_catalog())
}

/// Starts a server with these settings and catalog (see [`TestServer::start`]).
pub fn start_server_with(settings: Settings, catalog: Catalog) -> TestServer {
    TestServer::start(settings, catalog)
}

/// Starts a server like [`start_server_with`], logging to `logger`.
pub fn start_server_logged(
    settings: Settings,
    catalog: Catalog,
    logger: slog::Logger,
) -> TestServer {
    TestServer::start_logged(settings, catalog, logger)
}

/// A server running in-process on its own thread and actix system. Dropping it shuts the
/// server down (`Server::shutdown`, front ends included) and joins the thread.
pub struct TestServer {
    addrs: Vec<SocketAddr>,
    started: Instant,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: mpsc::Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server with these settings (every robot moved to port 0, and to 127.0.0.1
    /// unless the settings name another address to bind; the web viewer on a port of its
    /// own choosing unless the settings name one) and catalog. Fails the test if it does
    /// not start within [`TIMEOUT`].
    pub fn start(settings: Settings, catalog: Catalog) -> TestServer {
        TestServer::start_logged(settings, catalog, test_logger())
    }

    /// Starts a server like [`TestServer::start`], logging to `logger`.
    pub fn start_logged(settings: Settings, catalog: Catalog, logger: slog::Logger) -> TestServer {
        match TestServer::try_start(settings, catalog, logger) {
            Ok(server) => server,
            Err(e) => panic!("server did not start: {e}"),
        }
    }

    /// Starts a server like [`TestServer::start_logged`]; the server's refusal to start is
    /// returned rather than failing the test.
    pub fn try_start(
        mut settings: Settings,
        catalog: Catalog,
        logger: slog::Logger,
    ) -> Result<TestServer, StartError> {
        for r in &mut settings.robot {
            r.port = 0;
            if r.bind == "0.0.0.0" {
                r.bind = "127.0.0.1".into();
            }
        }
        // The web viewer only where a test asks for it (on a port it chose).
        for i in 0..settings.robot.len() {
            settings.web.viewer_mut(i).web_port.get_or_insert(0);
        }
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("player-server".into())
            .spawn(move || {
                let system = actix::System::new();
                system.block_on(async move {
                    let started = Instant::now();
                    match player::server::start(&settings, &catalog, repository_root(), logger)
                        .await
                    {
                        Ok(server) => {
                            let _ = ready_tx.send(Ok((server.local_addrs(), started)));
                            let _ = stop_rx.await;
                            server.shutdown().await;
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
                drop(system);
                let _ = done_tx.send(());
            })
            .expect("spawn the server thread");
        let (addrs, started) = match ready_rx.recv_timeout(TIMEOUT) {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(e) => panic!("server did not start within {TIMEOUT:?}: {e}"),
        };
        Ok(TestServer {
            addrs,
            started,
            stop: Some(stop_tx),
            done: done_rx,
            thread: Some(thread),
        })
    }

    /// The first robot's address.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// Every robot's address, in configuration order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// An upper bound of the server's "ms since the server started" clock (the position
    /// device's time field) right now: the instant was taken just before the server
    /// started.
    pub fn server_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Shuts the server down and waits for its thread; fails if that takes over 15 s.
    /// Returns how long it took.
    pub fn shutdown(mut self) -> Duration {
        let t = Instant::now();
        self.stop_and_join();
        t.elapsed()
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let Some(thread) = self.thread.take() else {
            return;
        };
        match self.done.recv_timeout(Duration::from_secs(15)) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if !std::thread::panicking() {
                    panic!("the server did not shut down within 15 s");
                }
            }
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}
