//! The ROS 2 front end's `cmd_vel` under faults (issue 34), against a real server and a
//! real Zenoh session publishing as `rmw_zenoh` does (the topic's key, the 33-byte
//! attachment): a publisher that stops or vanishes has the base stopped within the
//! command timeout; a flood costs a bounded amount and the robot obeys the newest command;
//! malformed samples get one clear warning a second (how many, and why) and do not keep
//! good commands out; a publisher whose clock is a minute behind drives the robot, and a
//! burst stamped seconds older than its others (held back on the way) does not. The truth is the robot's odometry, read by a TCP client.
//! (tests/ros2/test_ros2.py has the happy paths with rclpy itself.)

use player::ros2::msg::{Twist, Vector3};
use player::ros2::rmw::{self, Attachment};
use player::ros2::types;
use player::settings::Settings;
use player_testkit::*;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zenoh::qos::CongestionControl;
use zenoh::Wait;

/// The robot's command watchdog (seconds).
const WATCHDOG: f64 = 0.5;

/// The default robot with the ROS 2 front end on (`write = true`), listening on
/// `tcp/127.0.0.1:<port>`, its watchdog at `watchdog` seconds.
fn start(watchdog: f64, log: &LogCapture) -> (TestServer, u16) {
    let port = free_port();
    let mut s: Settings = default_settings();
    s.robot[0].command_timeout = Some(watchdog);
    s.ros2.enabled = true;
    s.ros2.write = true;
    s.ros2.listen = vec![format!("tcp/127.0.0.1:{port}")];
    let server = start_server_logged(s, player::builtin_catalog(), log.logger());
    (server, port)
}

/// A `cmd_vel` publisher as rmw_zenoh makes one (Twist, domain 0, root namespace).
struct CmdVel {
    publisher: zenoh::pubsub::Publisher<'static>,
    seq: i64,
    /// How far the publisher's clock is behind this host's (its stamps say so).
    behind: Duration,
}

impl CmdVel {
    /// `block`: every sample is delivered (congestion control "block"), as a flood needs
    /// to be a flood at the server.
    fn new(z: &zenoh::Session, block: bool) -> CmdVel {
        let key = rmw::topic_key(0, "/cmd_vel", &types::TWIST);
        let cc = if block {
            CongestionControl::Block
        } else {
            CongestionControl::Drop
        };
        let publisher = z
            .declare_publisher(key)
            .congestion_control(cc)
            .wait()
            .expect("a cmd_vel publisher");
        CmdVel {
            publisher,
            seq: 0,
            behind: Duration::ZERO,
        }
    }

    fn attachment(&mut self) -> [u8; rmw::ATTACHMENT_LEN] {
        self.seq += 1;
        let ns = (SystemTime::now() - self.behind)
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i64;
        Attachment {
            seq: self.seq,
            timestamp_ns: ns,
            gid: [7; rmw::GID_LEN],
        }
        .encode()
    }

    /// Sends `payload` with (or without) the attachment.
    fn raw(&mut self, payload: Vec<u8>, attached: bool) {
        let a = self.attachment();
        let put = self.publisher.put(payload);
        let r = if attached {
            put.attachment(a.to_vec()).wait()
        } else {
            put.wait()
        };
        r.expect("publish on cmd_vel");
    }

    /// Sends linear `vx` m/s.
    fn send(&mut self, vx: f64) {
        let t = Twist {
            linear: Vector3 {
                x: vx,
                ..Vector3::default()
            },
            angular: Vector3::default(),
        };
        self.raw(t.encode(), true);
    }

    /// Sends `vx` every 100 ms (a teleop's pace) until the robot's speed satisfies `f`.
    fn drive_until(&mut self, w: &mut Client, vx: f64, f: impl Fn(i16) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            self.send(vx);
            if f(w.position_after(Duration::from_millis(100)).speed) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "cmd_vel {vx} m/s did not move the robot"
            );
        }
    }
}

fn watcher(server: &TestServer) -> Client {
    let mut w = Client::connect(server.addr());
    assert_eq!(w.request(&[(b'p', b'r')]), b"pr");
    w
}

/// Reads positions until the speed is 0; when that was.
fn until_stopped(w: &mut Client) -> Instant {
    let deadline = Instant::now() + TIMEOUT;
    while w.next_position().speed != 0 {
        assert!(Instant::now() < deadline, "the robot never stopped");
    }
    Instant::now()
}

/// This process's resident set (KiB).
fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[test]
fn a_cmd_vel_publisher_that_stops_or_vanishes_has_the_base_stopped_within_the_command_timeout() {
    let log = LogCapture::default();
    let (server, port) = start(WATCHDOG, &log);
    let mut w = watcher(&server);
    // Within the watchdog, plus a position reading's period (10 Hz) and scheduling.
    let bound = Duration::from_secs_f64(WATCHDOG + 0.6);

    // Stops publishing, its session still open.
    let z = zenoh_client(port);
    let mut p = CmdVel::new(&z, false);
    p.drive_until(&mut w, 0.3, |s| s >= 250);
    let last = Instant::now();
    let took = until_stopped(&mut w).duration_since(last);
    eprintln!("publisher stopped: the base stopped {took:?} after its last cmd_vel");
    assert!(took <= bound, "the base drove on for {took:?}");

    // Vanishes: its session closes (the process of a teleop killed).
    p.drive_until(&mut w, 0.3, |s| s >= 250);
    drop(p);
    let last = Instant::now();
    z.close().wait().unwrap();
    let took = until_stopped(&mut w).duration_since(last);
    eprintln!("publisher vanished: the base stopped {took:?} after its last cmd_vel");
    assert!(took <= bound, "the base drove on for {took:?}");
    // And stays stopped.
    let end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < end {
        assert_eq!(w.next_position().speed, 0, "nothing drives it any more");
    }
    server.shutdown();
}

#[test]
fn a_publisher_whose_clock_is_behind_drives_the_robot_and_a_burst_held_back_does_not() {
    let log = LogCapture::default();
    let (server, port) = start(WATCHDOG, &log);
    let mut w = watcher(&server);
    let z = zenoh_client(port);
    // Its host's clock a minute behind: its commands are measured against its own stamps.
    let mut p = CmdVel::new(&z, false);
    p.behind = Duration::from_secs(60);
    p.drive_until(&mut w, 0.3, |s| s >= 250);
    until_stopped(&mut w);
    // A burst held back on the way: stamped 5 s to 4 s older than the rest.
    let start = Instant::now();
    for i in 0..10 {
        p.behind = Duration::from_secs(65) - Duration::from_millis(100 * i);
        p.send(0.3);
        std::thread::sleep(Duration::from_millis(50));
    }
    while start.elapsed() < Duration::from_secs(2) {
        assert_eq!(
            w.next_position().speed,
            0,
            "a held-back cmd_vel moved the robot"
        );
    }
    log.wait_for("ros2 command ignored: older than the device's command_timeout: held back");
    // The same publisher, on time again, drives it.
    p.behind = Duration::from_secs(60);
    p.drive_until(&mut w, 0.3, |s| s >= 250);
    server.shutdown();
}

#[test]
fn a_cmd_vel_flood_is_bounded_and_the_robot_obeys_the_newest_command() {
    let log = LogCapture::default();
    // A longer watchdog: the newest command must be seen acted on before it stops.
    let (server, port) = start(2.0, &log);
    let mut w = watcher(&server);
    let z = zenoh_client(port);
    let mut p = CmdVel::new(&z, true);
    p.drive_until(&mut w, -0.1, |s| s < 0);
    let rss_before = rss_kib();

    // Backwards commands as fast as they go for 3 s, then one forwards: the newest.
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < Duration::from_secs(3) {
        for _ in 0..100 {
            p.send(-0.2);
        }
        sent += 100;
    }
    p.send(0.3);
    let flood = start.elapsed();
    eprintln!(
        "flood: {sent} cmd_vel in {flood:?} ({:.0}/s)",
        sent as f64 / flood.as_secs_f64()
    );
    assert!(sent >= 3000, "not a flood: {sent} in {flood:?}");

    // The robot obeys the newest: forwards within a second, and once forwards it never
    // goes backwards again (no older command of the flood acted on after it).
    let after = Instant::now();
    let mut forwards = None;
    while after.elapsed() < Duration::from_millis(1800) {
        let s = w.next_position().speed;
        if s > 0 {
            forwards.get_or_insert(after.elapsed());
        } else if forwards.is_some() {
            assert!(
                s >= 0,
                "an older command was acted on after the newest: {s}"
            );
        }
    }
    let forwards = forwards.expect("the newest command (forwards) was never obeyed");
    eprintln!("forwards {forwards:?} after the flood's last command");
    assert!(
        forwards <= Duration::from_secs(1),
        "obeyed after {forwards:?}"
    );

    // Bounded: the server (in this process) kept no backlog of the flood.
    let grown = rss_kib().saturating_sub(rss_before);
    eprintln!("resident set grew by {grown} KiB over the flood");
    assert!(
        grown < 64 * 1024,
        "the flood grew the process by {grown} KiB"
    );
    // And the node stays usable: the watchdog stops the robot, a new command moves it.
    until_stopped(&mut w);
    p.drive_until(&mut w, 0.2, |s| s > 0);
    drop(p);
    z.close().wait().unwrap();
    server.shutdown();
}

/// The `ros2: samples refused` warnings so far.
fn refusals(log: &LogCapture) -> Vec<String> {
    log.dump()
        .lines()
        .filter(|l| l.contains("ros2: samples refused"))
        .map(str::to_string)
        .collect()
}

#[test]
fn malformed_cmd_vel_gets_a_clear_rate_limited_warning_and_good_commands_still_work() {
    let log = LogCapture::default();
    let (server, port) = start(WATCHDOG, &log);
    let mut w = watcher(&server);
    let z = zenoh_client(port);
    let mut p = CmdVel::new(&z, true);
    p.drive_until(&mut w, 0.2, |s| s > 0);
    until_stopped(&mut w);

    // 3 s of garbage at full speed, of four kinds.
    let good = Twist::default().encode();
    let start = Instant::now();
    let mut sent = 0u64;
    while start.elapsed() < Duration::from_secs(3) {
        p.raw(good[..good.len() - 5].to_vec(), true); // truncated
        p.raw(vec![9, 9, 0, 0, 1, 2, 3], true); // no CDR encapsulation header
        p.raw(vec![0; 4096], true); // longer than any command
        p.raw(good.clone(), false); // no rmw_zenoh attachment
        sent += 4;
    }
    // The last window's warning, then the count.
    std::thread::sleep(Duration::from_millis(1500));
    let lines = refusals(&log);
    eprintln!(
        "{sent} malformed cmd_vel in 3 s gave {} warnings:",
        lines.len()
    );
    for l in &lines {
        eprintln!("  {l}");
    }
    // One a second at most: about 4 in 4.5 s (3 s of garbage, then the rest).
    assert!(
        (2..=6).contains(&lines.len()),
        "{} warnings for {sent} refused samples",
        lines.len()
    );
    let counted: u64 = lines
        .iter()
        .map(|l| {
            let c = l.split(" count=").nth(1).expect("a count");
            c.split_whitespace().next().unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert!(
        counted >= sent * 9 / 10 && counted <= sent,
        "the warnings count {counted} of {sent} sent"
    );
    assert!(
        lines.iter().all(|l| l.contains(" newest=")),
        "every warning says why"
    );
    let all = lines.join("\n");
    assert!(
        all.contains("not a Twist") || all.contains("more than 1024") || all.contains("attachment"),
        "the reasons: {all}"
    );
    // The robot did not move on any of it, and a good command still moves it.
    assert_eq!(w.next_position().speed, 0);
    p.drive_until(&mut w, 0.2, |s| s > 0);
    drop(p);
    z.close().wait().unwrap();
    server.shutdown();
}
