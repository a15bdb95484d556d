//! What the hardware-driver tests (`tests/hw_*.rs`) share: a server configured from TOML
//! text with its log captured, reading and driving until a round shows what a test waits
//! for, and the two checks every serial driver gets: a port that does not exist, and a
//! port where nothing answers.
//!
//! Set `PLAYER_TEST_LOG=1` to also see the server's log on standard error.

use crate::{wait_until, LogCapture, TestServer};
use player::settings::Settings;
use player_client::Client;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

pub use crate::TIMEOUT;

/// A server running in-process (a [`TestServer`]) with its log captured. Dropping it
/// shuts it down.
pub struct HwServer {
    inner: TestServer,
    /// The server's log.
    pub log: LogCapture,
}

/// Starts a server configured by `toml` (its robots' ports and addresses are replaced by
/// 127.0.0.1 port 0).
pub fn start_server(toml: &str) -> HwServer {
    let settings = Settings::from_toml(toml, "test").expect("test configuration");
    let log = LogCapture::default();
    HwServer {
        inner: TestServer::start_logged(settings, player::builtin_catalog(), log.logger()),
        log,
    }
}

impl HwServer {
    /// The robot's address.
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr()
    }

    /// A connected client with a generous read timeout.
    pub fn client(&self) -> Client {
        let mut c = Client::connect(self.addr()).expect("connect to the test server");
        c.set_read_timeout(Some(TIMEOUT)).unwrap();
        c
    }

    /// Shuts the server down and waits for it (at most 15 s).
    pub fn shutdown(self) {
        self.inner.shutdown();
    }
}

/// Polls `f` every 20 ms until it returns true; fails with `what` after [`TIMEOUT`].
pub fn wait_for(what: &str, f: impl FnMut() -> bool) {
    wait_until(TIMEOUT, what, f);
}

/// Reads rounds until `f` accepts one; fails with `what` after [`TIMEOUT`].
pub fn read_until(
    client: &mut Client,
    what: &str,
    mut f: impl FnMut(&player_client::Round) -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let round = client
            .read()
            .unwrap_or_else(|e| panic!("reading while waiting for {what}: {e}"));
        if f(round) {
            return;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
    }
}

/// Drives at (`speed`, `turn`), sending the command again with every round read (as a
/// controller does, so the command watchdog sees it alive), until `f` accepts a round;
/// fails with `what` after [`TIMEOUT`].
pub fn drive_until(
    client: &mut Client,
    (speed, turn): (i16, i16),
    what: &str,
    mut f: impl FnMut(&player_client::Round) -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        client
            .set_speed(speed, turn)
            .unwrap_or_else(|e| panic!("commanding while waiting for {what}: {e}"));
        let round = client
            .read()
            .unwrap_or_else(|e| panic!("reading while waiting for {what}: {e}"));
        if f(round) {
            return;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
    }
}

/// Reads partial rounds (push-new or pull-new modes) until `f` accepts one; fails with
/// `what` after [`TIMEOUT`].
pub fn read_new_until(
    client: &mut Client,
    what: &str,
    mut f: impl FnMut(&player_client::Round) -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let round = client
            .read_new(TIMEOUT)
            .unwrap_or_else(|e| panic!("reading while waiting for {what}: {e}"));
        if f(round) {
            return;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
    }
}

/// A fresh directory for symlinks and such, under the system's temporary directory (named
/// by process and thread, so it never collides with another test).
pub fn scratch_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "player-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The TOML of a robot whose devices are served by the given drivers: each entry is
/// (driver name, device codes, parameter lines).
pub fn robot_toml(drivers: &[(&str, &str, &str)]) -> String {
    let mut s = String::from("[server]\nsetup_timeout = 20.0\n[[robot]]\nname = \"hw\"\n");
    for (name, devices, params) in drivers {
        let devs: Vec<String> = devices.chars().map(|c| format!("\"{c}\"")).collect();
        s.push_str(&format!(
            "[[robot.driver]]\ndriver = \"{name}\"\ndevices = [{}]\n[robot.driver.params]\n{params}\n",
            devs.join(", ")
        ));
    }
    s
}

/// A device its driver cannot reach: a server configured by `toml` refuses it (`e`) when a
/// client asks for `request` (e.g. `"pr"`), and some log line contains every one of
/// `log_parts` (the port, and why).
pub fn assert_unreachable(toml: &str, request: &str, device: u8, log_parts: &[&str]) {
    let server = start_server(toml);
    let mut c = server.client();
    let grant = c.request(request).unwrap();
    assert_eq!(grant.access(device), Some(b'e'), "the grant of {request:?}");
    assert!(
        server.log.has(log_parts),
        "no log line says {log_parts:?}:\n{}",
        server.log.dump()
    );
}

/// A port that does not exist: `toml_for(port)` configures the driver on `port`; asking for
/// `request` gets `e` for `device` and a log line names the port.
pub fn assert_missing_port(
    toml_for: impl Fn(&str) -> String,
    port: &str,
    request: &str,
    device: u8,
) {
    assert_unreachable(&toml_for(port), request, device, &[port]);
}

/// A silent port: a pseudo-terminal with nothing behind it, so the port opens but no
/// device answers. `toml_for(path)` configures the driver on it (with a short reply
/// timeout); asking for `request` gets `e` for `device` and a log line says `says` and
/// names the port.
pub fn assert_silent_port(
    toml_for: impl Fn(&str) -> String,
    request: &str,
    device: u8,
    says: &str,
) {
    let pty = player::emulators::pty::Pty::open().unwrap();
    let path = pty.slave_path().to_str().unwrap().to_string();
    assert_unreachable(&toml_for(&path), request, device, &[says, &path]);
}

/// The `player` binary run as a process on a configuration file, for the tests that end it
/// with a signal (what a real robot's driver does at SIGTERM). Dropping it kills it.
pub struct PlayerProcess {
    child: std::process::Child,
    /// A client connected to the robot's port, with a generous read timeout.
    pub client: Client,
}

impl PlayerProcess {
    /// Starts `binary` (a test's `env!("CARGO_BIN_EXE_player")`) with `--config config` and
    /// connects to 127.0.0.1:`port` once it listens.
    pub fn start(binary: &str, config: &std::path::Path, port: u16) -> PlayerProcess {
        let child = std::process::Command::new(binary)
            .args(["--config", config.to_str().expect("a UTF-8 path")])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("the player binary starts");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let mut client = None;
        wait_for("the server to listen", || {
            client = Client::connect(addr).ok();
            client.is_some()
        });
        let mut client = client.unwrap();
        client.set_read_timeout(Some(TIMEOUT)).unwrap();
        PlayerProcess { child, client }
    }

    /// Sends SIGTERM and waits (at most 15 s) for the process to exit; its exit code.
    // Unsafe code: kill(2) to stop the emulator process (a Linux call).
    #[allow(unsafe_code)]
    pub fn terminate(mut self) -> Option<i32> {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) },
            0
        );
        let mut status = None;
        wait_until(
            std::time::Duration::from_secs(15),
            "player to exit on SIGTERM",
            || {
                status = self.child.try_wait().unwrap();
                status.is_some()
            },
        );
        status.unwrap().code()
    }
}

impl Drop for PlayerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
