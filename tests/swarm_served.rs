//! A large world served as one: every robot on its own TCP port, one web viewer port for
//! the whole world with each robot's topics under its name (`/<robot>/pose`, ...), and
//! every robot under its own key on Zenoh. Robot `k`'s data is robot `k`'s, and a command
//! on robot `k`'s topic moves robot `k` only, under the watchdog.

use futures::{SinkExt, StreamExt};
use player::settings::{Invocation, Settings};
use player::zenoh::ZenohSettings;
use player_testkit::foxglove_ws::{
    connect, next_frame, next_text, runtime as rt, send_json, subscribe, Ws,
};
use player_testkit::{start_server_with, zenoh_client, Client, TestServer};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;
use zenoh::Wait;

/// How long anything a test waits for may take (a debug build on a loaded machine).
const WAIT: Duration = Duration::from_secs(30);

/// The settings of `player -stage` on a world of `count` simple robots (wheels and sonar)
/// on a grid 1.2 m apart, named `robot0` ..., and the scratch directory of its world file
/// (`tag` tells the tests' apart).
fn world_settings(count: usize, tag: &str) -> (Settings, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("player-served-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let world = dir.join("world.toml");
    std::fs::write(
        &world,
        format!(
            "[world]\nwidth = 60000\nheight = 60000\n\
             [[swarm]]\ncount = {count}\nspacing = 1200\nkind = \"simple\"\n"
        ),
    )
    .unwrap();
    let args: Vec<String> = ["-stage", world.to_str().unwrap()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let s = match player::parse_args(&args) {
        Ok(Invocation::Run { settings, .. }) => *settings,
        other => panic!("{other:?}"),
    };
    (s, dir)
}

/// A TCP port below the system's ephemeral range (32768 and up on Linux) that is free
/// now: a world's robots take hundreds of ephemeral ports while it starts, so a port
/// `free_port` found free may be one of them by the time the web viewer binds.
fn quiet_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20000 + (std::process::id() as u16).wrapping_mul(31).wrapping_add(n) % 12000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// Starts the world with the first robot's web port at a free port (every robot of the
/// world is served there), every robot on a TCP port of its own, and the Zenoh bridge
/// listening on a port of its own when `zenoh` (its port is returned).
fn start_world(count: usize, tag: &str, zenoh: bool) -> (TestServer, u16, u16) {
    let (mut s, dir) = world_settings(count, tag);
    assert_eq!(s.robot.len(), count);
    let web = quiet_port();
    s.web.viewer_mut(0).web_port = Some(web);
    let zport = quiet_port();
    if zenoh {
        s.zenoh = ZenohSettings {
            enabled: true,
            listen: vec![format!("tcp/127.0.0.1:{zport}")],
            write: true,
            ..ZenohSettings::default()
        };
    }
    let server = start_server_with(s, player::builtin_catalog());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(server.addrs().len(), count);
    (server, web, zport)
}

/// The next message, within [`WAIT`].
async fn next(ws: &mut Ws) -> Message {
    next_frame(ws, "a message", WAIT, Some).await
}

/// What the endpoint advertised: topic → channel id, the largest advertise message's
/// size and channel count, and how many bytes all of them took.
struct Advertised {
    topics: HashMap<String, u64>,
    largest: usize,
    most_channels: usize,
    bytes: usize,
    messages: usize,
}

/// Reads messages until `expected` channels have been advertised.
async fn advertised(ws: &mut Ws, expected: usize) -> Advertised {
    let mut a = Advertised {
        topics: HashMap::new(),
        largest: 0,
        most_channels: 0,
        bytes: 0,
        messages: 0,
    };
    let mut ids = HashSet::new();
    while a.topics.len() < expected {
        let Message::Text(t) = next(ws).await else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
        if v["op"] != "advertise" {
            continue;
        }
        let list = v["channels"].as_array().unwrap();
        a.largest = a.largest.max(t.len());
        a.most_channels = a.most_channels.max(list.len());
        a.bytes += t.len();
        a.messages += 1;
        for c in list {
            let id = c["id"].as_u64().unwrap();
            assert!(ids.insert(id), "channel id {id} advertised twice");
            assert!(c["schema"].as_str().is_some_and(|s| !s.is_empty()));
            a.topics
                .insert(c["topic"].as_str().unwrap().to_string(), id);
        }
    }
    a
}

/// Reads `/pose` messages (protobuf, the default encoding) for `within`, returning the last
/// x (m) per subscription id and every frame id seen.
async fn poses(ws: &mut Ws, within: Duration) -> (HashMap<u32, f64>, HashSet<String>) {
    let mut last = HashMap::new();
    let mut frames = HashSet::new();
    let end = tokio::time::Instant::now() + within;
    while let Ok(m) = tokio::time::timeout_at(end, ws.next()).await {
        let Some(Ok(Message::Binary(b))) = m else {
            continue;
        };
        if b[0] != 1 {
            continue;
        }
        let sub = u32::from_le_bytes(b[1..5].try_into().unwrap());
        // The default encoding: foxglove.PoseInFrame in protobuf.
        use prost::Message as _;
        let p = foxglove::messages::PoseInFrame::decode(&b[13..]).expect("a PoseInFrame");
        if let Some(x) = p.pose.and_then(|p| p.position).map(|v| v.x) {
            last.insert(sub, x);
            frames.insert(p.frame_id);
        }
    }
    (last, frames)
}

/// Channels per simple robot: `/tf`, `/pose`, `/position`, `/sonar`, `/tf_map`,
/// `/devices`; plus the world's `/walls` and `/robots` once.
const SIMPLE_CHANNELS: usize = 6;

#[test]
fn one_web_port_serves_a_200_robot_world_with_each_robot_under_its_name() {
    let (server, web, _) = start_world(200, "web", false);
    let rt = rt();
    rt.block_on(async {
        let mut ws = connect(web, "").await;
        let a = advertised(&mut ws, 200 * SIMPLE_CHANNELS + 2).await;
        for k in 0..200 {
            for t in ["tf", "pose", "position", "sonar", "tf_map", "devices"] {
                let topic = format!("/robot{k}/{t}");
                assert!(a.topics.contains_key(&topic), "{topic} advertised");
            }
        }
        assert!(a.topics.contains_key("/walls"), "the world's walls, once");
        assert!(a.topics.contains_key("/robots"), "the world's overview");
        assert!(
            !a.topics.contains_key("/pose"),
            "no topic outside a robot's name"
        );
        assert!(a.most_channels <= player::web::world::ADVERTISE_CHUNK);

        // Robot 137 driven through its own TCP port: its pose moves, its neighbours' not.
        let (k, others) = (137usize, [136usize, 138, 0]);
        let mut subs = vec![(1000, a.topics[&format!("/robot{k}/pose")])];
        for (i, o) in others.iter().enumerate() {
            subs.push((1001 + i as u64, a.topics[&format!("/robot{o}/pose")]));
        }
        subscribe(&mut ws, &subs).await;
        let mut tcp = Client::connect(server.addrs()[k]);
        assert_eq!(tcp.request(&[(b'p', b'a')]), b"pa");
        let start = Instant::now();
        let mut moved = false;
        while !moved && start.elapsed() < WAIT {
            tcp.drive(300, 0);
            let (last, frames) = poses(&mut ws, Duration::from_millis(300)).await;
            for f in &frames {
                assert!(f.starts_with("robot") && f.ends_with("/odom"), "{f}");
            }
            moved = last.get(&1000).is_some_and(|&x| x > 0.2);
            for i in 0..others.len() as u32 {
                if let Some(x) = last.get(&(1001 + i)) {
                    assert_eq!(*x, 0.0, "robot {} moved", others[i as usize]);
                }
            }
        }
        assert!(moved, "robot {k}'s pose shows it driving");
        drop(tcp);

        // `/robots`: every robot by name, in the map; robot 137 ahead of where robot 136
        // (its neighbour on the grid row) stands.
        subscribe(&mut ws, &[(2000, a.topics["/robots"])]).await;
        let start = Instant::now();
        let all = loop {
            let Message::Binary(b) = next(&mut ws).await else {
                continue;
            };
            if u32::from_le_bytes(b[1..5].try_into().unwrap()) != 2000 {
                continue;
            }
            let v: serde_json::Value = serde_json::from_slice(&b[13..]).unwrap();
            let list = v["robots"].as_array().unwrap().clone();
            assert_eq!(list.len(), 200);
            if list.iter().all(|r| r["x"].is_number()) {
                break list;
            }
            assert!(start.elapsed() < WAIT, "every robot's pose in /robots");
        };
        assert_eq!(all[137]["name"], "robot137");
        let dx = all[137]["x"].as_f64().unwrap() - all[136]["x"].as_f64().unwrap();
        // It stopped just past 0.2 m (the loop above), and the world's placements are
        // not exact to the millimetre: 0.1 m past is what it surely drove.
        assert!(
            dx > 1.2 + 0.1,
            "robot 137 drove on from 1.2 m past robot 136: {dx}"
        );
        send_json(
            &mut ws,
            serde_json::json!({"op": "unsubscribe", "subscriptionIds": [2000]}),
        )
        .await;

        // A client asking for some robots only gets theirs and the world's channels.
        let mut few = connect(web, "?robots=robot7,robot19*").await;
        let f = advertised(&mut few, 12 * SIMPLE_CHANNELS + 2).await;
        let mut names: Vec<&str> = f
            .topics
            .keys()
            .filter_map(|t| t.strip_suffix("/pose"))
            .collect();
        names.sort_unstable();
        assert_eq!(names.len(), 12, "{names:?}");
        assert!(names
            .iter()
            .all(|n| *n == "/robot7" || n.starts_with("/robot19")));
        assert!(f.topics.contains_key("/walls") && f.topics.contains_key("/robots"));
        drop(few);

        // Robot 42 commanded on /robot42/cmd_vel: it moves, robots 41 and 43 do not, and
        // it stops on the watchdog when the commands stop.
        let mut watch = Client::connect(server.addrs()[42]);
        assert_eq!(watch.request(&[(b'p', b'r')]), b"pr");
        let mut still = Client::connect(server.addrs()[43]);
        assert_eq!(still.request(&[(b'p', b'r')]), b"pr");
        let mut before = Client::connect(server.addrs()[41]);
        assert_eq!(before.request(&[(b'p', b'r')]), b"pr");
        let adv = serde_json::json!({"op": "advertise", "channels": [
            {"id": 7, "topic": "/robot42/cmd_vel", "encoding": "json",
             "schemaName": "geometry_msgs/Twist"}]});
        send_json(&mut ws, adv).await;
        let mut frame = vec![1u8];
        frame.extend_from_slice(&7u32.to_le_bytes());
        frame.extend_from_slice(br#"{"linear":{"x":0.3},"angular":{"z":0}}"#);
        let start = Instant::now();
        loop {
            ws.send(Message::Binary(frame.clone().into()))
                .await
                .unwrap();
            // The command's pace (10 Hz, as a teleop panel).
            tokio::time::sleep(Duration::from_millis(100)).await;
            if watch.next_position().speed >= 300 {
                break;
            }
            assert!(
                start.elapsed() < WAIT,
                "robot 42 did not take /robot42/cmd_vel"
            );
        }
        for c in [&mut still, &mut before] {
            let p = c.next_position();
            assert_eq!((p.x, p.y, p.speed), (0, 0, 0), "only robot 42 moves");
        }
        let stopped = Instant::now();
        while watch.next_position().speed != 0 {
            assert!(stopped.elapsed() < WAIT, "the watchdog stops robot 42");
        }
        assert!(
            stopped.elapsed() < Duration::from_millis(2500),
            "stopped {:?} after the last command",
            stopped.elapsed()
        );
    });
    server.shutdown();
}

#[test]
fn a_1000_robot_world_served_a_client_on_the_last_port_drives_it_and_the_one_web_port_lists_all_robots(
) {
    let (server, web, _) = start_world(1000, "thousand", false);
    let last = *server.addrs().last().unwrap();
    let mut c = Client::connect(last);
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    let start = Instant::now();
    loop {
        c.drive(300, 0);
        if c.next_position().x > 300 {
            break;
        }
        assert!(start.elapsed() < WAIT, "robot 999 did not move");
    }
    c.drive(0, 0);
    let rt = rt();
    rt.block_on(async {
        let t = Instant::now();
        let mut ws = connect(web, "").await;
        let a = advertised(&mut ws, 1000 * SIMPLE_CHANNELS + 2).await;
        let names: HashSet<&str> = a
            .topics
            .keys()
            .filter_map(|t| t.strip_suffix("/pose"))
            .collect();
        assert_eq!(names.len(), 1000);
        assert!(names.contains("/robot999") && names.contains("/robot0"));
        println!(
            "1000 robots: {} channels in {} advertise messages, {} bytes, largest {} bytes \
             ({} channels), all read in {:?}",
            a.topics.len(),
            a.messages,
            a.bytes,
            a.largest,
            a.most_channels,
            t.elapsed()
        );
        assert!(a.most_channels <= player::web::world::ADVERTISE_CHUNK);
    });
    server.shutdown();
}

#[test]
fn each_robot_of_a_world_has_its_own_zenoh_key() {
    let (server, _web, port) = start_world(200, "zenoh", true);
    let z = zenoh_client(port);
    // Robot 150 driven on its own command key; its position key shows it moving, robot
    // 151's shows it standing.
    let seen: Arc<Mutex<HashMap<String, (i32, i16)>>> = Arc::default();
    let subs: Vec<_> = ["player/robot150/p", "player/robot151/p"]
        .into_iter()
        .map(|key| {
            let seen = seen.clone();
            z.declare_subscriber(key)
                .callback(move |s| {
                    let bytes = s.payload().to_bytes();
                    if let Ok(p) = player_proto::data::Position::decode(&bytes) {
                        let mut seen = seen.lock().unwrap();
                        let e = seen.entry(s.key_expr().as_str().to_string()).or_default();
                        // The farthest and fastest seen.
                        *e = (e.0.max(p.x.abs()), e.1.max(p.speed.abs()));
                    }
                })
                .wait()
                .unwrap()
        })
        .collect();
    let cmd = z.declare_publisher("player/robot150/p/cmd").wait().unwrap();
    let payload = player_proto::data::PositionCommand {
        speed: 300,
        turn_rate: 0,
    }
    .encode();
    let start = Instant::now();
    loop {
        cmd.put(payload.clone()).wait().unwrap();
        // The command's pace.
        std::thread::sleep(Duration::from_millis(100));
        let seen = seen.lock().unwrap().clone();
        let moved = seen
            .get("player/robot150/p")
            .is_some_and(|&(x, v)| x > 200 && v > 0);
        if moved && seen.contains_key("player/robot151/p") {
            assert_eq!(seen["player/robot151/p"], (0, 0), "robot 151 moved");
            break;
        }
        assert!(
            start.elapsed() < WAIT,
            "robot 150 moved on its key: {seen:?}"
        );
    }
    drop(subs);
    drop(z);
    server.shutdown();
}

#[test]
fn robots_given_one_web_port_share_it_and_the_check_does_not_call_it_a_clash() {
    let text = "[[robot]]\nname = \"a\"\nport = 7001\nweb_port = 9100\n\
                [[robot]]\nname = \"b\"\nport = 7002\nweb_port = 9100\n\
                [[robot]]\nname = \"c\"\nport = 7003\nweb_port = 7001\n";
    let s = player::check::check_text(text, "test.toml").expect("parses");
    let problems = player::check::check_settings(
        &s,
        &player::builtin_catalog(),
        std::path::Path::new("."),
        player::check::Scope::Reload,
        Some(text),
    );
    let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
    // a and b share 9100; c's web port is a's TCP port: that one is a clash.
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(messages[0].contains("7001"), "{messages:?}");
}

/// The next text message for which `pick` is true, within [`WAIT`].
async fn text_until(ws: &mut Ws, pick: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    next_text(ws, "the message", WAIT, pick).await
}

#[test]
fn a_world_port_names_its_robots_in_parameters_and_graph_and_its_status_ids_by_robot() {
    let (_server, web, _) = start_world(70, "ops", false);
    let rt = rt();
    rt.block_on(async {
        let mut ws = connect(web, "?robots=robot3").await;
        let a = advertised(&mut ws, SIMPLE_CHANNELS + 2).await;

        // Parameters: the robots' names and the endpoint's own; no one robot's settings.
        send_json(
            &mut ws,
            serde_json::json!({"op": "getParameters", "parameterNames": [], "id": "all"}),
        )
        .await;
        let v = text_until(&mut ws, |v| {
            v["op"] == "parameterValues" && v["id"] == "all"
        })
        .await;
        let p: HashMap<String, serde_json::Value> = v["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["name"].as_str().unwrap().to_string(), p["value"].clone()))
            .collect();
        assert_eq!(p["robots"].as_array().unwrap().len(), 70);
        assert_eq!(p["robots"][3], "robot3");
        assert!(p.contains_key("web.max_rate_hz") && !p.contains_key("robot"));
        assert!(!p.keys().any(|n| n.ends_with(".command_timeout")));

        // Only the connection's rate cap is writable here; a command timeout is refused
        // with the reason, the rest of the request still set.
        send_json(
            &mut ws,
            serde_json::json!({"op": "setParameters", "id": "set", "parameters": [
                {"name": "p.command_timeout", "value": 2},
                {"name": "web.max_rate_hz", "value": 5}]}),
        )
        .await;
        let warn = text_until(&mut ws, |v| v["op"] == "status").await;
        let m = warn["message"].as_str().unwrap();
        assert!(
            m.contains("p.command_timeout") && m.contains("own endpoint"),
            "{m}"
        );
        let v = text_until(&mut ws, |v| {
            v["op"] == "parameterValues" && v["id"] == "set"
        })
        .await;
        assert_eq!(v["parameters"][0]["name"], "web.max_rate_hz");
        assert_eq!(v["parameters"][0]["value"], 5.0);

        // The graph: the robot this client reads, under its name, and no other robot.
        subscribe(&mut ws, &[(1, a.topics["/robot3/pose"])]).await;
        send_json(
            &mut ws,
            serde_json::json!({"op": "subscribeConnectionGraph"}),
        )
        .await;
        let start = Instant::now();
        loop {
            let g = text_until(&mut ws, |v| v["op"] == "connectionGraphUpdate").await;
            let topics: Vec<&str> = g["publishedTopics"]
                .as_array()
                .unwrap()
                .iter()
                .chain(g["subscribedTopics"].as_array().unwrap())
                .map(|t| t["name"].as_str().unwrap())
                .collect();
            assert!(
                topics.iter().all(|t| t.starts_with("/robot3/")),
                "{topics:?}"
            );
            let readers = g["subscribedTopics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "/robot3/position")
                .map(|t| t["subscriberIds"].to_string());
            if readers.is_some_and(|r| r.contains("web 127.0.0.1")) {
                let drivers = g["publishedTopics"].to_string();
                assert!(drivers.contains("robot3: driver"), "{drivers}");
                break;
            }
            assert!(start.elapsed() < WAIT, "this client in robot3's graph");
        }

        // The e-stop of robot 3, latched and released on its topic: a condition with the
        // robot's own id, taken back by that id.
        send_json(
            &mut ws,
            serde_json::json!({"op": "advertise", "channels": [{"id": 7,
                "topic": "/robot3/estop", "encoding": "json", "schemaName": "player.EStop"}]}),
        )
        .await;
        let publish = |latch: bool| {
            let mut b = vec![1u8];
            b.extend_from_slice(&7u32.to_le_bytes());
            b.extend_from_slice(serde_json::json!({ "latch": latch }).to_string().as_bytes());
            Message::Binary(b.into())
        };
        ws.send(publish(true)).await.unwrap();
        let s = text_until(&mut ws, |v| v["op"] == "status" && v["id"].is_string()).await;
        assert_eq!(s["id"], "robot3/estop", "{s}");
        ws.send(publish(false)).await.unwrap();
        let r = text_until(&mut ws, |v| v["op"] == "removeStatus").await;
        assert_eq!(r["statusIds"], serde_json::json!(["robot3/estop"]));
    });
}
