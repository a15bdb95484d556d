//! The `player` binary: the manual's flags (section 2.2), configuration errors, and an
//! orderly exit on SIGTERM and SIGINT.

// Unsafe code: kill(2) to signal the server (a Linux call).
#![allow(unsafe_code)]

use player_testkit::*;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PLAYER: &str = env!("CARGO_BIN_EXE_player");

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(PLAYER)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run player");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_exits_zero_and_names_every_manual_flag() {
    let (code, out, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    for flag in [
        "-gp", "-pp", "-lp", "-zp", "-vp", "-vc", "-stage", "-debug", "-exp",
    ] {
        assert!(out.contains(flag), "--help does not mention {flag}:\n{out}");
    }
}

#[test]
fn a_bad_flag_value_exits_nonzero_naming_the_flag() {
    let (code, _, err) = run(&["-gp", "notaport"]);
    assert_ne!(code, Some(0));
    assert!(code.is_some(), "killed by a signal?");
    assert!(err.contains("-gp") && err.contains("notaport"), "{err}");
}

#[test]
fn an_unknown_flag_exits_nonzero_naming_it() {
    let (code, _, err) = run(&["-bogus"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("-bogus"), "{err}");
}

#[test]
fn a_config_file_with_an_unknown_key_exits_nonzero_naming_key_and_file() {
    let dir = std::env::temp_dir().join(format!("player-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad-key.toml");
    std::fs::write(
        &path,
        "[server]\nmax_clientz = 3\n\n[[robot]]\nport = 0\n[[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\"]\n",
    )
    .unwrap();
    let (code, _, err) = run(&["--config", path.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_ne!(code, Some(0));
    assert!(err.contains("max_clientz"), "{err}");
    assert!(err.contains("bad-key.toml"), "{err}");
}

/// The binary running with `-gp <port>`, its standard error collected.
struct Running {
    child: Child,
    port: u16,
    stderr: Arc<Mutex<String>>,
}

impl Running {
    fn start() -> Running {
        let port = free_port();
        let mut child = Command::new(PLAYER)
            .args(["-gp", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start player");
        let stderr = collect_stderr(&mut child);
        Running {
            child,
            port,
            stderr,
        }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) on our own child's pid.
        let rc = unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill failed");
    }

    /// Waits for the exit; its status code, or a failure after `within`.
    fn wait(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "player did not exit within {within:?}; its log:\n{}",
                    self.log()
                );
            }
            // Polls for the exit (the deadline above fails the test).
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn serves_a_driving_client_then_exits_on(sig: libc::c_int) {
    let mut player = Running::start();
    let mut c = Client::connect(player.addr());
    assert_eq!(c.request(&[(b'p', b'a'), (b's', b'r')]), b"pasr");
    c.drive(200, 0);
    let p = c.position_after(Duration::from_millis(800));
    assert!(p.speed > 100, "{p:?}");
    let mut watcher = Client::connect(player.addr());
    assert_eq!(watcher.request(&[(b'm', b'r')]), b"mr");
    player.signal(sig);
    let code = player.wait(Duration::from_secs(10));
    assert_eq!(code, Some(0), "exit status; log:\n{}", player.log());
    c.expect_closed(Duration::from_secs(5));
    watcher.expect_closed(Duration::from_secs(5));
    // The port is free again.
    assert!(TcpListener::bind(player.addr()).is_ok());
}

#[test]
fn sigterm_closes_clients_and_exits_zero() {
    serves_a_driving_client_then_exits_on(libc::SIGTERM);
}

#[test]
fn sigint_closes_clients_and_exits_zero() {
    serves_a_driving_client_then_exits_on(libc::SIGINT);
}

#[test]
fn a_port_in_use_exits_nonzero_naming_it() {
    let busy = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = busy.local_addr().unwrap().port().to_string();
    let (code, _, err) = run(&["-gp", &port]);
    assert_ne!(code, Some(0));
    assert!(err.contains(&port), "{err}");
}

/// Reads messages until a notice of `kind` arrives; returns its text.
fn wait_notice(c: &mut Client, kind: u8) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(
            Instant::now() < deadline,
            "no notice '{}'",
            char::from(kind)
        );
        if let Some((b'y', p)) = c.read_message_within(Duration::from_millis(200)) {
            if p.first() == Some(&kind) {
                return String::from_utf8_lossy(&p[2..]).into_owned();
            }
        }
    }
}

#[test]
fn sigusr1_latches_the_emergency_stop() {
    let player = Running::start();
    let mut c = Client::connect(player.addr());
    c.config(b'y', b'e', &[1]);
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    c.drive(200, 0);
    let p = c.position_after(Duration::from_millis(800));
    assert!(p.speed > 100, "{p:?}");
    player.signal(libc::SIGUSR1);
    let text = wait_notice(&mut c, b'E');
    assert!(text.contains("SIGUSR1"), "{text}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.next_position().speed != 0 {
        assert!(Instant::now() < deadline, "still moving after SIGUSR1");
    }
    assert!(
        player.log().contains("EMERGENCY STOP latched"),
        "{}",
        player.log()
    );
}

#[test]
fn bytes_from_the_wire_never_split_a_log_line() {
    let player = Running::start();
    let mut c = Client::connect(player.addr());
    // A request for device 0x0a with access '\n', an unknown message type 0x0a, a command
    // to device '\r', a config to device 0x1b (ESC): each is logged, escaped.
    c.send(&[b'd', b'r', 0, 2, 0x0a, 0x0a]);
    assert_eq!(c.read_reply(), [0x0a, b'e']);
    c.send(&[0x0a, 0x0a, 0, 1, 0x0a]);
    c.send(&[b'c', b'\r', 0, 1, 0x0a]);
    c.send(&[b'x', 0x1b, 0, 1, b'\n']);
    assert_eq!(c.request(&[(b'p', b'r')]), b"pr");
    wait_for_text(&player.stderr, "0x1b", Duration::from_secs(5));
    let log = player.log();
    // The last line may still be being written as the log is read: only whole lines count.
    for line in log
        .split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n'))
    {
        // Every line is a whole slog-term record: "Mon DD HH:MM:SS.mmm LEVEL ...".
        let b = line.as_bytes();
        let well_formed = b.len() > 24
            && b[..3].iter().all(u8::is_ascii_alphabetic)
            && b[3] == b' '
            && b[6] == b' '
            && b[9] == b':'
            && b[15] == b'.';
        assert!(well_formed, "a log line was split: {line:?}\n{log}");
        assert!(
            !line.contains('\r') && !line.contains('\u{1b}'),
            "raw control byte in {line:?}"
        );
    }
    for escaped in ["0x0a", "0x0d"] {
        assert!(log.contains(escaped), "{escaped} missing from\n{log}");
    }
}
