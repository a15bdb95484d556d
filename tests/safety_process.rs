//! Controllers that stop answering, for real: a client process frozen with SIGSTOP, and a
//! client in another network namespace whose link is taken down (no FIN, no RST). In both
//! cases the command watchdog stops the robot within `command_timeout` (plus scheduling
//! slack); when the link is down, TCP_USER_TIMEOUT (5 s by default) also ends the session,
//! which releases its write access (seen in the device list).
//!
//! The controller is `tests/clients/drive.py`, a minimal 0.7.4a client in Python. The
//! link test needs root (network namespaces, veth); it says so and passes vacuously
//! otherwise.

// Unsafe code: kill(2) to stop and continue the controller (a Linux call).
#![allow(unsafe_code)]

use player_proto::data::Position;
use player_proto::ext::{decode, Extension};
use player_testkit::*;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Starts the Python controller against `host:port` (inside `netns` if given) and waits
/// until it drives.
fn start_controller(netns: Option<&str>, host: &str, port: u16) -> Child {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/drive.py");
    let mut cmd = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, "python3", script]);
            c
        }
        None => {
            let mut c = Command::new("python3");
            c.arg(script);
            c
        }
    };
    let mut child = cmd
        .args([host, &port.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the test controller");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("driving pa"), "controller said {line:?}");
    child
}

/// Reads positions until `f` holds; returns when.
fn watch_until(c: &mut Client, what: &str, f: impl Fn(&Position) -> bool) -> Instant {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if f(&c.next_position()) {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

/// The position device's writer count from the device list (`x y l`).
fn writers(c: &mut Client) -> u16 {
    c.config(b'y', b'l', &[]);
    loop {
        let (code, payload) = c.read_message();
        if code == b'y' {
            if let Ok(Extension::DeviceList(list)) = decode(&payload) {
                return list.iter().find(|e| e.code == b'p').unwrap().writers;
            }
        }
    }
}

#[test]
fn a_frozen_controller_process_is_stopped_by_the_watchdog() {
    let server = start_server();
    let mut watcher = Client::connect(server.addr());
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    let mut controller = start_controller(None, "127.0.0.1", server.addr().port());
    watch_until(&mut watcher, "the robot to move", |p| p.speed >= 150);
    // Freeze it: its kernel still acknowledges, but it sends nothing.
    unsafe { libc::kill(controller.id() as i32, libc::SIGSTOP) };
    let frozen = Instant::now();
    let slowing = watch_until(&mut watcher, "the robot to slow down", |p| p.speed < 150);
    let took = slowing.duration_since(frozen);
    assert!(
        took <= Duration::from_millis(700 + 800),
        "drove on for {took:?}"
    );
    watch_until(&mut watcher, "the robot to stop", |p| p.speed == 0);
    // Thawed, it commands again and the robot drives again: the watchdog holds nothing
    // against a controller that comes back.
    unsafe { libc::kill(controller.id() as i32, libc::SIGCONT) };
    watch_until(&mut watcher, "the robot to move again", |p| p.speed >= 150);
    let _ = controller.kill();
    let _ = controller.wait();
    watch_until(&mut watcher, "the robot to stop at exit", |p| p.speed == 0);
}

#[test]
fn a_controller_whose_link_goes_down_is_stopped_and_its_session_dropped() {
    if !netns::is_root() {
        eprintln!("SKIPPED: needs root for network namespaces (run the tests as root)");
        return;
    }
    let (host_addr, ns_addr) = ("10.213.77.1", "10.213.77.2");
    let Some(ns) = netns::Netns::create("safe") else {
        eprintln!("SKIPPED: cannot create a network namespace here");
        return;
    };
    let Some(veth) = netns::Veth::join(None, host_addr, &ns, ns_addr) else {
        eprintln!("SKIPPED: cannot create a veth pair here");
        return;
    };
    let mut settings = default_settings();
    settings.robot[0].bind = host_addr.into();
    let server = start_server_with(settings, player::builtin_catalog());
    let mut watcher = Client::connect(server.addr());
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    let mut controller = start_controller(Some(&ns.name), host_addr, server.addr().port());
    watch_until(&mut watcher, "the robot to move", |p| p.speed >= 150);
    assert_eq!(writers(&mut watcher), 1);
    // The link goes down on the host side: no FIN, no RST reaches the server.
    let cut = Instant::now();
    assert!(veth.set_a(false));
    let slowing = watch_until(&mut watcher, "the robot to slow down", |p| p.speed < 150);
    let took = slowing.duration_since(cut);
    assert!(
        took <= Duration::from_millis(700 + 800),
        "drove on for {took:?}"
    );
    watch_until(&mut watcher, "the robot to stop", |p| p.speed == 0);
    // The session ends (TCP_USER_TIMEOUT, 5 s: the server's data goes unacknowledged)
    // and its write access is released.
    wait_until(
        Duration::from_secs(15).saturating_sub(cut.elapsed()),
        "the vanished controller's session to end",
        || writers(&mut watcher) == 0,
    );
    let dropped = cut.elapsed();
    assert!(
        dropped >= Duration::from_secs(3),
        "dropped too soon: {dropped:?}"
    );
    let _ = controller.kill();
    let _ = controller.wait();
}
