//! Two hosts for real: two network namespaces joined by a veth pair. In the first, the
//! `player` binary serves the simulated robot (the remote); in the second, another `player`
//! serves that robot's position and laser through the `passthrough` driver, and a
//! controller in the second namespace drives it through that server while a watcher in the
//! first reads the robot directly.
//!
//! Checked: readings and commands cross the link; taking the link down stops the robot
//! (the remote's own command watchdog: the controller keeps commanding, but nothing
//! arrives), and the relayed device reports `f` to the controller; bringing the link back
//! up, the device reports `u` and the controller's commands drive the robot again.
//!
//! Needs root (network namespaces, veth); says so and passes vacuously otherwise.

use player_proto::data::{Laser, Position, PositionCommand};
use player_proto::ext::{decode, Extension};
use player_testkit::netns::{is_root, Netns, ServerInNetns, Veth};
use player_testkit::*;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PLAYER: &str = env!("CARGO_BIN_EXE_player");

/// Connects to `port` on the namespace's loopback.
fn connect_in(ns: &Netns, port: u16) -> Client {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    Client::from_stream(ns.run_in(move || TcpStream::connect(addr).expect("connect")))
}

/// What the controller has seen, shared with the test.
#[derive(Default)]
struct Seen {
    lasers: AtomicU32,
    speed: Mutex<Option<i16>>,
    notices: Mutex<Vec<(u8, u8, String)>>,
}

/// The controller: reads its rounds (position and laser, continuous mode) and sends its
/// command every round, as the manual's examples do, until `stop`.
fn controller(mut c: Client, seen: Arc<Seen>, stop: Arc<AtomicBool>) {
    let forward = PositionCommand {
        speed: 200,
        turn_rate: 0,
    }
    .encode();
    while !stop.load(Ordering::Relaxed) {
        let Some((code, payload)) = c.read_message_within(Duration::from_millis(300)) else {
            continue;
        };
        match code {
            b'p' => {
                *seen.speed.lock().unwrap() = Some(Position::decode(&payload).unwrap().speed);
                c.command(b'p', &forward);
            }
            b'l' => {
                Laser::decode(&payload).expect("a 722-byte laser packet");
                seen.lasers.fetch_add(1, Ordering::Relaxed);
            }
            b'y' => {
                if let Ok(Extension::Notice(n)) = decode(&payload) {
                    seen.notices
                        .lock()
                        .unwrap()
                        .push((n.kind, n.device, n.text));
                }
            }
            _ => {}
        }
    }
}

/// Reads the robot's position directly until `f` holds; when.
fn watch_until(c: &mut Client, what: &str, f: impl Fn(&Position) -> bool) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if f(&c.next_position()) {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

/// Waits until the controller has had a notice of `kind` about `p`.
fn wait_notice(seen: &Seen, kind: u8, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        if let Some(n) = seen
            .notices
            .lock()
            .unwrap()
            .iter()
            .find(|n| n.0 == kind && n.1 == b'p')
        {
            return n.2.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no '{}' notice for 'p' within {within:?}: {:?}",
            kind as char,
            seen.notices.lock().unwrap()
        );
        // Polls (the deadline above fails the test).
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn passthrough_across_a_link_relays_and_a_cut_link_stops_the_robot() {
    if !is_root() {
        eprintln!("SKIPPED: needs root for network namespaces (run the tests as root)");
        return;
    }
    let (Some(robot_ns), Some(fleet_ns)) = (Netns::create("r"), Netns::create("f")) else {
        eprintln!("SKIPPED: cannot create network namespaces here");
        return;
    };
    let (robot_addr, fleet_addr) = ("10.213.78.1", "10.213.78.2");
    let Some(link) = Veth::join(Some(&robot_ns), robot_addr, &fleet_ns, fleet_addr) else {
        eprintln!("SKIPPED: cannot create a veth pair here");
        return;
    };
    // The robot's host: the simulated robot on 6665 (its default watchdog, 0.5 s).
    let robot = ServerInNetns::start(&robot_ns, PLAYER, &["-gp", "6665", "-web", "0"], 6665);
    // The fleet host: position and laser of the robot across the link, on 7000.
    let config =
        std::env::temp_dir().join(format!("player-fleet-netns-{}.toml", std::process::id()));
    std::fs::write(
        &config,
        format!(
            "[[robot]]\nname = \"fleet\"\nport = 7000\nweb_port = 0\n\
             [[robot.driver]]\ndriver = \"passthrough\"\ndevices = [\"p\", \"l\"]\n\
             [robot.driver.params]\nhost = \"{robot_addr}\"\nport = 6665\n"
        ),
    )
    .unwrap();
    let fleet = ServerInNetns::start(
        &fleet_ns,
        PLAYER,
        &["--config", config.to_str().unwrap()],
        7000,
    );
    let _ = std::fs::remove_file(&config);

    let mut watcher = connect_in(&robot_ns, 6665);
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    let mut c = connect_in(&fleet_ns, 7000);
    c.config(b'y', b'e', &[1]);
    assert_eq!(c.request(&[(b'p', b'a'), (b'l', b'r')]), b"palr");
    let seen = Arc::new(Seen::default());
    let stop = Arc::new(AtomicBool::new(false));
    let driving = {
        let (seen, stop) = (seen.clone(), stop.clone());
        std::thread::spawn(move || controller(c, seen, stop))
    };

    // Across the link: the commands move the robot, its readings come back.
    watch_until(&mut watcher, "the robot to move", |p| p.speed >= 150);
    let deadline = Instant::now() + TIMEOUT;
    while seen.lasers.load(Ordering::Relaxed) < 5 || seen.speed.lock().unwrap().unwrap_or(0) < 150 {
        assert!(
            Instant::now() < deadline,
            "the relayed readings did not arrive (robot: {}; fleet: {})",
            robot.stderr.lock().unwrap(),
            fleet.stderr.lock().unwrap()
        );
        // Polls (the deadline above fails the test with both servers' logs).
        std::thread::sleep(Duration::from_millis(50));
    }

    // Cut the link at the robot's end: no FIN, no RST. The controller goes on commanding,
    // nothing reaches the robot, and its own watchdog stops it.
    let cut = Instant::now();
    assert!(link.set_a(false));
    let slowing = watch_until(&mut watcher, "the robot to slow down", |p| p.speed < 150);
    let took = slowing.duration_since(cut);
    assert!(
        took <= Duration::from_millis(700 + 800),
        "drove on for {took:?} after the link went down"
    );
    watch_until(&mut watcher, "the robot to stop", |p| p.speed == 0);
    // The fleet server finds the link silent and reports the device failed.
    let why = wait_notice(&seen, b'f', Duration::from_secs(20));
    assert!(why.contains("reconnecting"), "{why}");

    // The link comes back: the device is up again and the commands drive the robot.
    assert!(link.set_a(true));
    let why = wait_notice(&seen, b'u', Duration::from_secs(30));
    assert!(why.contains("again"), "{why}");
    watch_until(&mut watcher, "the robot to move again", |p| p.speed >= 150);

    stop.store(true, Ordering::Relaxed);
    driving.join().unwrap();
    drop(fleet);
    drop(robot);
    drop(link);
}
