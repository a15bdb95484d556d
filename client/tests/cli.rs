//! `player-cli` against a real server: the shipped simulated robot, in-process on
//! 127.0.0.1 port 0, and the built binary run as a process. `joy` runs on a real
//! pseudo-terminal whose master side the test types into (arrow-key escape sequences at a
//! keyboard's repeat rate, Ctrl-C), while a second client watches the robot's speed.
//!
//! Timeouts are generous (the machine is small and shared); nothing asserts a duration
//! beyond "within seconds".

// Unsafe code: kill(2) to signal the joystick client (a Linux call).
#![allow(unsafe_code)]

use std::net::SocketAddr;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use player::emulators::pty::{Pty, Ready};
use player_client::Client;
use player_testkit::start_server;

/// How long anything a test waits for may take on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_player-cli"))
}

fn run_cli(args: &[&str]) -> Output {
    let mut child = cli()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("player-cli starts");
    let deadline = Instant::now() + PATIENCE * 2;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("player-cli {args:?} did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn print_decodes_every_field_of_a_device() {
    let server = start_server();
    let addr = server.addr().to_string();
    let out = run_cli(&["-h", &addr, "print", "position", "-n", "3"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.matches("position (p) at ").count(), 3, "{text}");
    for field in [
        "time ",
        "x ",
        "heading ",
        "speed ",
        "turn rate ",
        "compass ",
        "stall ",
    ] {
        assert_eq!(text.matches(field).count(), 3, "{field:?} in {text}");
    }
    let out = run_cli(&["-h", &addr, "print", "l", "-n", "1", "-f", "5"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.contains(" ray ")).count(), 37);
    // A device the server does not have: refused, exit status 1, the reason on stderr.
    let out = run_cli(&["-h", &addr, "print", "q", "-n", "1"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not granted"));
    // Usage errors: status 2.
    assert_eq!(run_cli(&["print"]).status.code(), Some(2));
}

/// `player-cli joy` on a pseudo-terminal.
struct Joy {
    pty: Pty,
    child: Child,
    screen: Vec<u8>,
}

impl Joy {
    fn start(addr: SocketAddr) -> Joy {
        let pty = Pty::open().expect("a pty");
        let slave = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(pty.slave_path())
                .expect("open the pty slave")
        };
        let child = cli()
            .args(["-h", &addr.to_string(), "joy", "-s", "300"])
            .stdin(slave())
            .stdout(slave())
            .stderr(slave())
            .spawn()
            .expect("player-cli joy starts");
        let mut joy = Joy {
            pty,
            child,
            screen: Vec::new(),
        };
        joy.wait_for_screen("joy: arrows");
        joy
    }

    /// Reads what the program printed until `text` appears.
    fn wait_for_screen(&mut self, text: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !String::from_utf8_lossy(&self.screen).contains(text) {
            assert!(
                Instant::now() < deadline,
                "no {text:?} on the terminal; it shows {:?}",
                String::from_utf8_lossy(&self.screen)
            );
            self.drain(Duration::from_millis(50));
        }
    }

    fn drain(&mut self, wait: Duration) {
        if self.pty.wait(wait) == Ready::Data {
            let mut buf = [0u8; 4096];
            let n = self.pty.read(&mut buf).unwrap_or(0);
            self.screen.extend_from_slice(&buf[..n]);
        }
    }

    fn type_keys(&mut self, bytes: &[u8]) {
        assert_eq!(
            self.pty.write(bytes),
            bytes.len(),
            "the terminal took the keys"
        );
    }

    /// Holds a key as a keyboard does: the sequence every 40 ms (25 Hz auto-repeat).
    fn hold(&mut self, key: &[u8], how_long: Duration) {
        let end = Instant::now() + how_long;
        while Instant::now() < end {
            self.type_keys(key);
            self.drain(Duration::from_millis(40));
        }
    }

    fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            self.drain(Duration::from_millis(20));
            if let Some(status) = self.child.try_wait().unwrap() {
                self.drain(Duration::from_millis(100));
                return status;
            }
            assert!(Instant::now() < deadline, "player-cli joy did not exit");
        }
    }
}

impl Drop for Joy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const UP: &[u8] = b"\x1b[A";
const LEFT: &[u8] = b"\x1b[D";

/// A client reading the position device, to see what the robot does.
fn watcher(addr: SocketAddr) -> Client {
    let mut w = Client::connect(addr).unwrap();
    w.set_read_timeout(Some(PATIENCE)).unwrap();
    w.request("pr").unwrap().check().unwrap();
    w
}

/// The latest (speed, turn rate) the watcher has read.
fn motion(w: &mut Client) -> (i16, i16) {
    let _ = w.read_new(Duration::from_millis(150)).unwrap();
    w.round()
        .position
        .map(|p| (p.speed, p.turn_rate))
        .unwrap_or_default()
}

#[test]
fn joy_drives_while_a_key_is_held_and_stops_on_release_and_on_ctrl_c() {
    let server = start_server();
    let mut w = watcher(server.addr());
    let mut joy = Joy::start(server.addr());
    w.read().unwrap();
    assert_eq!(motion(&mut w), (0, 0), "the robot starts still");

    // Up held for two seconds: the robot drives forward at the chosen speed.
    let mut fastest = 0;
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        joy.hold(UP, Duration::from_millis(200));
        fastest = fastest.max(motion(&mut w).0);
    }
    assert!(fastest > 0, "the robot never moved forward");
    assert!(fastest <= 300, "faster than asked: {fastest}");

    // Let go: within a second or two the robot is stopped, by joy (still running).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        joy.drain(Duration::from_millis(10));
        if motion(&mut w).0 == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the robot kept going after release"
        );
    }
    assert!(
        joy.child.try_wait().unwrap().is_none(),
        "joy is still running"
    );
    let stopped_at = Instant::now();
    // And it stays stopped: no command goes out while no key is held.
    while stopped_at.elapsed() < Duration::from_millis(800) {
        assert_eq!(motion(&mut w).0, 0);
    }

    // Left held: turning in place, counter-clockwise.
    let mut turn = 0;
    let end = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < end {
        joy.hold(LEFT, Duration::from_millis(200));
        turn = turn.max(motion(&mut w).1);
    }
    assert!(turn > 0, "the robot never turned left");

    // Ctrl-C while the key is still held: joy sends a zero, restores the terminal, exits 0.
    joy.type_keys(LEFT);
    joy.type_keys(b"\x03");
    let status = joy.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    assert!(
        String::from_utf8_lossy(&joy.screen).contains("stopped; bye"),
        "{:?}",
        String::from_utf8_lossy(&joy.screen)
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while motion(&mut w) != (0, 0) {
        assert!(
            Instant::now() < deadline,
            "the robot kept moving after exit"
        );
    }
}

#[test]
fn joy_stops_the_robot_on_sigterm() {
    let server = start_server();
    let mut w = watcher(server.addr());
    let mut joy = Joy::start(server.addr());
    let mut fastest = 0;
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        joy.hold(UP, Duration::from_millis(200));
        fastest = fastest.max(motion(&mut w).0);
    }
    assert!(fastest > 0, "the robot never moved");
    // SAFETY: a signal to our own child.
    unsafe {
        libc::kill(joy.child.id() as i32, libc::SIGTERM);
    }
    let status = joy.wait_exit();
    assert!(status.success(), "exit status {status:?}: the handler ran");
    assert!(String::from_utf8_lossy(&joy.screen).contains("stopped; bye"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while motion(&mut w).0 != 0 {
        assert!(Instant::now() < deadline, "the robot kept moving");
    }
}
