//! The Zenoh bridge over loopback, against a real server and a real Zenoh session: the
//! readings a Zenoh subscriber gets are the bytes a TCP client gets, with the driver's
//! timestamp attached; Zenoh commands move the simulated robot through the registry's
//! guard (watchdog, e-stop, `[zenoh] write`, the access key); the device list answers
//! queries; the liveliness token lives as long as the server.

use player::settings::Settings;
use player::zenoh::{decode_timestamp, ZenohSettings};
use player_proto::data::PositionCommand;
use player_testkit::*;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use zenoh::sample::SampleKind;
use zenoh::Wait;

/// The default robot with the bridge on, listening on `tcp/127.0.0.1:<port>`.
fn settings(port: u16, write: bool) -> Settings {
    let mut s = default_settings();
    s.zenoh = ZenohSettings {
        enabled: true,
        listen: vec![format!("tcp/127.0.0.1:{port}")],
        write,
        ..ZenohSettings::default()
    };
    s
}

fn start(write: bool) -> (TestServer, u16) {
    let port = free_port();
    let server = start_server_with(settings(port, write), player::builtin_catalog());
    (server, port)
}

/// Publishes a position command on the bridge every 100 ms on a thread until `stop`.
struct Driver {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Driver {
    fn start(z: &zenoh::Session, speed: i16, attachment: Option<&'static [u8]>) -> Driver {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let publisher = z
            .declare_publisher("player/pioneer/p/cmd")
            .wait()
            .expect("a command publisher");
        let payload = PositionCommand {
            speed,
            turn_rate: 0,
        }
        .encode();
        let thread = std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                let put = publisher.put(payload.clone());
                let r = match attachment {
                    Some(a) => put.attachment(a).wait(),
                    None => put.wait(),
                };
                r.expect("publish a command");
                // The publisher's pace.
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Driver {
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> Instant {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        Instant::now()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Reads positions until `f` accepts one, failing after `within`.
fn watch_until(c: &mut Client, what: &str, within: Duration, f: impl Fn(i16) -> bool) -> Instant {
    let deadline = Instant::now() + within;
    loop {
        let p = c.next_position();
        if f(p.speed) {
            return Instant::now();
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

/// The highest speed seen over `d`.
fn top_speed_over(c: &mut Client, d: Duration) -> i16 {
    let end = Instant::now() + d;
    let mut top = i16::MIN;
    while Instant::now() < end {
        top = top.max(c.next_position().speed);
    }
    top
}

fn watcher(server: &TestServer) -> Client {
    let mut w = Client::connect(server.addr());
    assert_eq!(w.request(&[(b'p', b'r')]), b"pr");
    w
}

#[test]
fn laser_readings_on_zenoh_are_the_tcp_bytes_with_the_driver_timestamp_attached() {
    let (server, port) = start(false);
    let z = zenoh_client(port);
    let sub = z
        .declare_subscriber("player/pioneer/l")
        .wait()
        .expect("a subscriber");
    // A TCP client reading every new laser reading with its timestamp (push new, x y t).
    let mut tcp = Client::connect(server.addr());
    tcp.timestamps(true);
    tcp.data_mode(2);
    assert_eq!(tcp.request(&[(b'l', b'r')]), b"lr");
    let mut by_tcp: HashMap<(u32, u32), Vec<u8>> = HashMap::new();
    let mut by_zenoh: HashMap<(u32, u32), Vec<u8>> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut common = 0;
    while common < 5 {
        assert!(
            Instant::now() < deadline,
            "fewer than 5 readings seen both ways in 20 s (tcp {}, zenoh {})",
            by_tcp.len(),
            by_zenoh.len()
        );
        let (code, payload) = tcp.read_message();
        assert_eq!(code, b'l');
        assert_eq!(payload.len(), 8 + 722, "timestamp and a 722-byte scan");
        let ts = (
            u32::from_be_bytes(payload[..4].try_into().unwrap()),
            u32::from_be_bytes(payload[4..8].try_into().unwrap()),
        );
        by_tcp.insert(ts, payload[8..].to_vec());
        while let Ok(Some(s)) = sub.try_recv() {
            assert_eq!(s.key_expr().as_str(), "player/pioneer/l");
            let att = s.attachment().expect("a timestamp attachment").to_bytes();
            let t = decode_timestamp(&att).expect("8 bytes: sec, usec big-endian");
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            assert!(
                u64::from(t.sec) + 10 >= now && u64::from(t.sec) <= now + 1,
                "timestamp {t:?} is not about now"
            );
            assert!(t.usec < 1_000_000);
            by_zenoh.insert((t.sec, t.usec), s.payload().to_bytes().into_owned());
        }
        common = 0;
        for (ts, bytes) in &by_zenoh {
            if let Some(t) = by_tcp.get(ts) {
                assert_eq!(
                    bytes, t,
                    "the reading at {ts:?} differs between Zenoh and TCP"
                );
                common += 1;
            }
        }
    }
    // Scans change from reading to reading (noise), so equal bytes at equal timestamps
    // are the same readings, not a constant.
    let distinct: std::collections::HashSet<&Vec<u8>> = by_zenoh.values().collect();
    assert!(distinct.len() >= 2, "every Zenoh scan was the same");
    drop(sub);
    z.close().wait().unwrap();
    server.shutdown();
}

#[test]
fn full_scans_go_on_their_own_key_beside_the_laser_view() {
    use player::emulators::scene::Scene;
    use player::emulators::urg::{Model, UrgEmulator};
    use player::emulators::TcpEmulator;
    use player_proto::scan::Scan;
    let emu = TcpEmulator::start(UrgEmulator::new(Model::utm_30lx(), Scene::room())).unwrap();
    let toml = hw::robot_toml(&[("urg", "lL", &format!("address = \"{}\"", emu.addr()))]);
    let mut s = Settings::from_toml(&toml, "test").unwrap();
    let port = free_port();
    s.zenoh = settings(port, false).zenoh;
    let server = start_server_with(s, player::builtin_catalog());
    let z = zenoh_client(port);
    let sub = z
        .declare_subscriber("player/hw/*")
        .wait()
        .expect("a subscriber");
    let (mut full, mut view) = (0, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while full < 3 || view < 3 {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "in 20 s: {full} on L, {view} on l");
        let Ok(Some(sample)) = sub.recv_timeout(left) else {
            continue;
        };
        let payload = sample.payload().to_bytes();
        assert!(sample.attachment().is_some(), "a timestamp attachment");
        match sample.key_expr().as_str() {
            "player/hw/L" => {
                let scan = Scan::decode(&payload).expect("an L payload");
                assert_eq!(scan.ranges.len(), 1081);
                assert_eq!(scan.ranges[780], 900, "60 degrees left: the room's wall");
                full += 1;
            }
            "player/hw/l" => {
                assert_eq!(payload.len(), 722, "the 0.7.4a laser view");
                view += 1;
            }
            other => panic!("a reading on {other}"),
        }
    }
    drop(sub);
    z.close().wait().unwrap();
    server.shutdown();
}

#[test]
fn a_zenoh_command_moves_the_robot_until_the_watchdog_stops_it() {
    let (server, port) = start(true);
    let z = zenoh_client(port);
    let mut w = watcher(&server);
    assert_eq!(w.next_position().speed, 0);
    let d = Driver::start(&z, 200, None);
    watch_until(&mut w, "the robot to move", Duration::from_secs(15), |s| {
        s >= 150
    });
    // Publishing stops: the command watchdog (0.5 s) stops the robot.
    let stopped_publishing = d.stop();
    let stopped = watch_until(&mut w, "the robot to stop", Duration::from_secs(10), |s| {
        s == 0
    });
    let took = stopped.duration_since(stopped_publishing);
    assert!(
        took <= Duration::from_secs(3),
        "the robot drove on for {took:?} after the last command"
    );
    // And stays stopped: nothing drives it any more.
    assert_eq!(top_speed_over(&mut w, Duration::from_secs(1)), 0);
    z.close().wait().unwrap();
    server.shutdown();
}

#[test]
fn a_latched_estop_blocks_zenoh_commands_until_it_is_released() {
    let (server, port) = start(true);
    let z = zenoh_client(port);
    let mut w = watcher(&server);
    // A TCP client latches the e-stop (x y E 1).
    let mut tcp = Client::connect(server.addr());
    tcp.config(b'y', b'E', &[1]);
    let d = Driver::start(&z, 200, None);
    // A sleep on purpose: commands arrive for half a second while the e-stop is
    // latched (and nothing may move, checked below).
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        top_speed_over(&mut w, Duration::from_secs(2)),
        0,
        "the robot moved while the e-stop was latched"
    );
    // Released over TCP: the same Zenoh commands now move it.
    tcp.config(b'y', b'E', &[0]);
    watch_until(&mut w, "the robot to move", Duration::from_secs(15), |s| {
        s >= 150
    });
    // Latched over Zenoh: the robot stops although commands keep coming.
    z.put("player/pioneer/@estop", vec![1u8]).wait().unwrap();
    watch_until(&mut w, "the robot to stop", Duration::from_secs(10), |s| {
        s == 0
    });
    assert_eq!(top_speed_over(&mut w, Duration::from_secs(1)), 0);
    d.stop();
    z.close().wait().unwrap();
    server.shutdown();
}

#[test]
fn commands_are_ignored_unless_write_is_on_and_carry_the_key_when_one_is_set() {
    // Default: [zenoh] write = false.
    let (server, port) = start(false);
    let z = zenoh_client(port);
    let mut w = watcher(&server);
    let d = Driver::start(&z, 200, None);
    assert_eq!(
        top_speed_over(&mut w, Duration::from_secs(2)),
        0,
        "write = false, yet the robot moved"
    );
    d.stop();
    z.close().wait().unwrap();
    server.shutdown();
    // write = true with an access key: commands must carry it as their attachment.
    let port = free_port();
    let mut s = settings(port, true);
    s.access.key = "sesame".into();
    let server = start_server_with(s, player::builtin_catalog());
    let z = zenoh_client(port);
    let mut w = watcher(&server);
    let wrong = Driver::start(&z, 200, Some(b"open"));
    let none = Driver::start(&z, 200, None);
    assert_eq!(
        top_speed_over(&mut w, Duration::from_secs(2)),
        0,
        "a command without the key moved the robot"
    );
    wrong.stop();
    none.stop();
    let right = Driver::start(&z, 200, Some(b"sesame"));
    watch_until(&mut w, "the robot to move", Duration::from_secs(15), |s| {
        s >= 150
    });
    right.stop();
    z.close().wait().unwrap();
    server.shutdown();
}

fn query_devices(z: &zenoh::Session) -> serde_json::Value {
    let replies = z
        .get("player/pioneer/@devices")
        .timeout(Duration::from_secs(10))
        .wait()
        .expect("a query");
    let reply = replies
        .recv_timeout(Duration::from_secs(15))
        .expect("the reply channel")
        .expect("a reply within 15 s");
    let sample = reply.result().expect("an ok reply");
    assert_eq!(sample.key_expr().as_str(), "player/pioneer/@devices");
    serde_json::from_slice(&sample.payload().to_bytes()).expect("JSON")
}

fn laser_readers(v: &serde_json::Value) -> u64 {
    v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "l")
        .expect("the laser in the list")["readers"]
        .as_u64()
        .unwrap()
}

#[test]
fn the_device_list_answers_queries_and_the_bridge_reads_only_what_zenoh_watches() {
    let (server, port) = start(false);
    let z = zenoh_client(port);
    let v = query_devices(&z);
    assert_eq!(v["robot"], "pioneer");
    assert_eq!(v["estop"], false);
    let devices = v["devices"].as_array().expect("a device list");
    let codes: Vec<&str> = devices
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["g", "l", "m", "p", "s", "v", "z"]);
    for d in devices {
        assert_eq!(d["driver"], "sim");
        assert!(d["access"].is_string() && d["state"].is_string());
    }
    let p = devices.iter().find(|d| d["code"] == "p").unwrap();
    assert_eq!(p["access"], "a");
    assert_eq!(p["name"], "position");
    // Nobody watches the laser on Zenoh: the bridge does not read it.
    assert_eq!(laser_readers(&v), 0);
    let sub = z.declare_subscriber("player/pioneer/l").wait().unwrap();
    sub.recv_timeout(Duration::from_secs(15))
        .unwrap()
        .expect("a laser reading once someone subscribes");
    assert_eq!(laser_readers(&query_devices(&z)), 1);
    // The subscriber leaves: the bridge stops reading (the matching status reaches it).
    drop(sub);
    wait_until(
        Duration::from_secs(15),
        "the bridge to stop reading the laser",
        || laser_readers(&query_devices(&z)) == 0,
    );
    // The e-stop shows in the list.
    let mut tcp = Client::connect(server.addr());
    tcp.config(b'y', b'E', &[1]);
    wait_until(
        Duration::from_secs(10),
        "the list to show the e-stop",
        || query_devices(&z)["estop"] == true,
    );
    z.close().wait().unwrap();
    server.shutdown();
}

#[test]
fn the_liveliness_token_lives_while_the_server_runs() {
    let (server, port) = start(false);
    let z = zenoh_client(port);
    // The subscriber is told of the token first (history), so it knows what to see go.
    let events = z
        .liveliness()
        .declare_subscriber("player/*/@alive")
        .history(true)
        .wait()
        .unwrap();
    let first = events
        .recv_timeout(Duration::from_secs(15))
        .unwrap()
        .expect("the token, as the subscriber starts");
    assert_eq!(first.kind(), SampleKind::Put);
    assert_eq!(first.key_expr().as_str(), "player/pioneer/@alive");
    // A liveliness query asked at once can come back empty while the client's routing of
    // the token it was just told of settles (seen about once in ten runs): ask again until
    // one answers, within a deadline; every answer must be exactly the one token.
    let deadline = Instant::now() + Duration::from_secs(20);
    let alive = loop {
        let tokens = z
            .liveliness()
            .get("player/*/@alive")
            .timeout(Duration::from_secs(3))
            .wait()
            .unwrap();
        let mut alive = Vec::new();
        while let Ok(Some(r)) = tokens.recv_timeout(Duration::from_secs(4)) {
            alive.push(r.result().unwrap().key_expr().as_str().to_string());
        }
        if !alive.is_empty() || Instant::now() >= deadline {
            break alive;
        }
    };
    assert_eq!(alive, ["player/pioneer/@alive"]);
    server.shutdown();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(
            !left.is_zero(),
            "no liveliness delete after the server stopped"
        );
        if let Ok(Some(s)) = events.recv_timeout(left) {
            if s.kind() == SampleKind::Delete {
                assert_eq!(s.key_expr().as_str(), "player/pioneer/@alive");
                break;
            }
        }
    }
    z.close().wait().unwrap();
}

#[test]
fn in_client_mode_the_robot_connects_to_the_endpoint_it_is_given() {
    // A Zenoh peer listening (as a router would), the robot connecting to it.
    let port = free_port();
    let mut c = zenoh::Config::default();
    c.insert_json5("mode", "\"peer\"").unwrap();
    c.insert_json5("listen/endpoints", &format!("[\"tcp/127.0.0.1:{port}\"]"))
        .unwrap();
    c.insert_json5("scouting/multicast/enabled", "false")
        .unwrap();
    let z = zenoh::open(c).wait().expect("a listening Zenoh peer");
    let sub = z.declare_subscriber("player/pioneer/p").wait().unwrap();
    let mut s = default_settings();
    s.zenoh = ZenohSettings {
        enabled: true,
        mode: "client".into(),
        connect: vec![format!("tcp/127.0.0.1:{port}")],
        ..ZenohSettings::default()
    };
    let server = start_server_with(s, player::builtin_catalog());
    let sample = sub
        .recv_timeout(Duration::from_secs(20))
        .unwrap()
        .expect("a position reading from the robot that connected");
    assert_eq!(sample.payload().len(), 21);
    server.shutdown();
    z.close().wait().unwrap();
}

#[test]
fn the_flag_turns_the_bridge_on_and_help_documents_it() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match player::parse_args(&args(&["--zenoh"])).unwrap() {
        player::settings::Invocation::Run { settings, .. } => {
            assert!(settings.zenoh.enabled);
            assert_eq!(settings.zenoh.mode, "peer");
            assert_eq!(settings.zenoh.listen, ["tcp/[::]:7447"]);
            assert!(!settings.zenoh.write, "commands must be off by default");
        }
        other => panic!("{other:?}"),
    }
    match player::parse_args(&args(&[])).unwrap() {
        player::settings::Invocation::Run { settings, .. } => assert!(!settings.zenoh.enabled),
        other => panic!("{other:?}"),
    }
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_player"))
        .arg("--help")
        .output()
        .expect("player --help runs");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--zenoh"), "{help}");
    assert!(help.contains("[zenoh]"), "{help}");
    // A bad section is an error naming the key.
    let e = Settings::from_toml("[zenoh]\nmode = \"router\"\n[[robot]]\n", "t.toml").unwrap_err();
    assert!(
        matches!(&e, player::settings::SettingsError::Value { origin, key, .. }
            if key == "zenoh.mode" && origin == "t.toml"),
        "{e}"
    );
}
