//! The web endpoint's navigation channels over real TCP, with a real WebSocket client:
//! `/amcl_pose` (`foxglove.PoseInFrame` in the `map` frame) from the localizer's best
//! hypothesis, `/particles` (`foxglove.PosesInFrame`) from its `x H g` answers and
//! `/plan` (`foxglove.PosesInFrame`) from the planner's `x G w` answers after a goal
//! published on `/goal_pose`, in protobuf and in JSON, with the stand-in localizer and
//! planner of `common/navstub.rs`; a single goal published right after its channel is
//! advertised (before write access to `G` is granted) reaches the planner.

mod common;

use common::navstub;
use futures::{SinkExt, StreamExt};
use player::settings::Settings;
use player_testkit::foxglove_ws::{
    channel, channel_id, connect_with as connect, message_data, next_frame, next_json, next_op,
    runtime as rt, subscribe,
};
use player_testkit::{free_port, start_server_with, TestServer};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(20);

/// A robot with a simulated base and the stand-in localizer and planner, served on a web
/// port.
fn start() -> (TestServer, u16) {
    let text = r#"
[[robot]]
name = "bot"
[[robot.driver]]
driver = "sim"
devices = ["p", "l"]
[[robot.driver]]
driver = "navstub"
devices = ["H", "G"]
"#;
    let mut settings = Settings::from_toml(text, "web nav").unwrap();
    let port = free_port();
    settings.web.viewer_mut(0).web_port = Some(port);
    let mut catalog = player::builtin_catalog();
    navstub::register(&mut catalog);
    (start_server_with(settings, catalog), port)
}

#[test]
fn amcl_pose_is_the_localizers_best_hypothesis_in_the_map_in_both_encodings() {
    let (server, port) = start();
    rt().block_on(async {
        // The stand-in's hypothesis: (1000 mm, 2000 mm, 3600 arc-seconds = 1 degree).
        let yaw = 1f64.to_radians();
        let (qz, qw) = ((yaw / 2.0).sin(), (yaw / 2.0).cos());
        // Protobuf (the default).
        let mut ws = connect(port, "foxglove.websocket.v1", "").await.unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        let ch = channel(&adv, "/amcl_pose");
        assert_eq!(ch["schemaName"], "foxglove.PoseInFrame");
        assert_eq!(ch["encoding"], "protobuf");
        subscribe(&mut ws, &[(7, ch["id"].as_u64().unwrap())]).await;
        let payload = next_frame(&mut ws, "/amcl_pose", WAIT, |m| {
            let Message::Binary(b) = m else { return None };
            let (sub, _, p) = message_data(&b)?;
            (sub == 7).then(|| p.to_vec())
        })
        .await;
        use prost::Message as _;
        let pose = foxglove::messages::PoseInFrame::decode(&payload[..]).unwrap();
        assert_eq!(pose.frame_id, "map");
        let p = pose.pose.unwrap();
        let at = p.position.unwrap();
        assert_eq!((at.x, at.y, at.z), (1.0, 2.0, 0.0));
        let q = p.orientation.unwrap();
        assert!((q.z - qz).abs() < 1e-9 && (q.w - qw).abs() < 1e-9, "{q:?}");
        ws.close(None).await.unwrap();
        // JSON: the same values.
        let mut ws = connect(port, "foxglove.websocket.v1", "?encoding=json")
            .await
            .unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        subscribe(&mut ws, &[(8, channel_id(&adv, "/amcl_pose"))]).await;
        let v = next_json(&mut ws, 8, WAIT).await;
        assert_eq!(v["frame_id"], "map");
        assert_eq!(v["pose"]["position"]["x"], 1.0);
        assert_eq!(v["pose"]["position"]["y"], 2.0);
        let z = v["pose"]["orientation"]["z"].as_f64().unwrap();
        assert!((z - qz).abs() < 1e-9, "{v}");
        ws.close(None).await.unwrap();
    });
    server.shutdown();
}

/// The stand-in's particle `i`: (i mm, -i mm, 100 i arc-seconds).
fn particle(i: f64) -> (f64, f64, f64) {
    (i / 1000.0, -i / 1000.0, (i * 100.0 / 3600.0).to_radians())
}

#[test]
fn particles_are_the_localizers_whole_set_in_the_map_in_both_encodings() {
    let (server, port) = start();
    rt().block_on(async {
        let mut ws = connect(port, "foxglove.websocket.v1", "").await.unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        let ch = channel(&adv, "/particles");
        assert_eq!(ch["schemaName"], "foxglove.PosesInFrame");
        assert_eq!(ch["encoding"], "protobuf");
        subscribe(&mut ws, &[(3, ch["id"].as_u64().unwrap())]).await;
        let payload = next_frame(&mut ws, "/particles", WAIT, |m| {
            let Message::Binary(b) = m else { return None };
            let (sub, _, p) = message_data(&b)?;
            (sub == 3).then(|| p.to_vec())
        })
        .await;
        use prost::Message as _;
        let set = foxglove::messages::PosesInFrame::decode(&payload[..]).unwrap();
        assert_eq!(set.frame_id, "map");
        // Three answers (100, 100, 50) put together in order.
        assert_eq!(set.poses.len(), navstub::PARTICLES as usize);
        for i in [0usize, 99, 100, 249] {
            let (x, y, th) = particle(i as f64);
            let p = &set.poses[i];
            let at = p.position.unwrap();
            assert!(
                (at.x - x).abs() < 1e-9 && (at.y - y).abs() < 1e-9,
                "{i}: {at:?}"
            );
            let q = p.orientation.unwrap();
            assert!((q.z - (th / 2.0).sin()).abs() < 1e-9, "{i}: {q:?}");
        }
        ws.close(None).await.unwrap();
        let mut ws = connect(port, "foxglove.websocket.v1", "?encoding=json")
            .await
            .unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        subscribe(&mut ws, &[(4, channel_id(&adv, "/particles"))]).await;
        let v = next_json(&mut ws, 4, WAIT).await;
        assert_eq!(v["frame_id"], "map");
        let poses = v["poses"].as_array().unwrap();
        assert_eq!(poses.len(), navstub::PARTICLES as usize);
        let (x, y, _) = particle(249.0);
        assert!((poses[249]["position"]["x"].as_f64().unwrap() - x).abs() < 1e-9);
        assert!((poses[249]["position"]["y"].as_f64().unwrap() - y).abs() < 1e-9);
        ws.close(None).await.unwrap();
    });
    server.shutdown();
}

#[test]
fn a_goal_published_comes_back_as_the_plan_in_both_encodings() {
    let (server, port) = start();
    rt().block_on(async {
        let mut ws = connect(port, "foxglove.websocket.v1", "").await.unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        let ch = channel(&adv, "/plan");
        assert_eq!(ch["schemaName"], "foxglove.PosesInFrame");
        // The 3D panel's goal: (1.5 m, -2 m), yaw 2 atan2(0.6, 0.8) = 73.7 degrees (74 on
        // the wire).
        let m = serde_json::json!({"op": "advertise", "channels": [{"id": 1,
            "topic": "/goal_pose", "encoding": "json",
            "schemaName": "geometry_msgs/PoseStamped"}]});
        ws.send(Message::Text(m.to_string().into())).await.unwrap();
        let goal = serde_json::json!({"header": {"frame_id": "map",
            "stamp": {"sec": 0, "nsec": 0}}, "pose": {
            "position": {"x": 1.5, "y": -2.0, "z": 0.0},
            "orientation": {"x": 0.0, "y": 0.0, "z": 0.6, "w": 0.8}}});
        let mut frame = vec![1u8];
        frame.extend_from_slice(&1u32.to_le_bytes());
        frame.extend_from_slice(goal.to_string().as_bytes());
        subscribe(&mut ws, &[(5, ch["id"].as_u64().unwrap())]).await;
        // The stand-in's plan: the origin, 0.5 m ahead, then the goal. The goal is sent
        // again until the plan shows it, as a panel repeating it would (one goal alone:
        // `a_single_goal_published_right_after_advertising_reaches_the_planner`).
        let want = 74f64.to_radians();
        let deadline = Instant::now() + WAIT;
        let plan = loop {
            assert!(
                Instant::now() < deadline,
                "no /plan to the goal within {WAIT:?}"
            );
            ws.send(Message::Binary(frame.clone().into()))
                .await
                .unwrap();
            let next = tokio::time::timeout(Duration::from_millis(300), ws.next()).await;
            let Ok(Some(Ok(Message::Binary(b)))) = next else {
                continue;
            };
            use prost::Message as _;
            let Some((5, _, p)) = message_data(&b) else {
                continue;
            };
            let plan = foxglove::messages::PosesInFrame::decode(p).unwrap();
            if plan
                .poses
                .last()
                .and_then(|p| p.position)
                .map(|at| (at.x, at.y))
                == Some((1.5, -2.0))
            {
                break plan;
            }
        };
        assert_eq!(plan.frame_id, "map");
        assert_eq!(plan.poses.len(), 3);
        assert_eq!(plan.poses[1].position.unwrap().x, 0.5);
        let q = plan.poses[2].orientation.unwrap();
        assert!((q.z - (want / 2.0).sin()).abs() < 1e-9, "{q:?}");
        ws.close(None).await.unwrap();
        // JSON: the same plan (the stand-in keeps its goal).
        let mut ws = connect(port, "foxglove.websocket.v1", "?encoding=json")
            .await
            .unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        subscribe(&mut ws, &[(6, channel_id(&adv, "/plan"))]).await;
        let v = next_json(&mut ws, 6, WAIT).await;
        assert_eq!(v["frame_id"], "map");
        let poses = v["poses"].as_array().unwrap();
        assert_eq!(poses.len(), 3);
        assert_eq!(poses[2]["position"]["x"], 1.5);
        assert_eq!(poses[2]["position"]["y"], -2.0);
        ws.close(None).await.unwrap();
    });
    server.shutdown();
}

#[test]
fn a_single_goal_published_right_after_advertising_reaches_the_planner() {
    let (server, port) = start();
    rt().block_on(async {
        let mut ws = connect(port, "foxglove.websocket.v1", "").await.unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        subscribe(&mut ws, &[(9, channel_id(&adv, "/plan"))]).await;
        // What the 3D panel's publish tool does: advertise, then one message at once,
        // before write access to `G` can have been granted. Sent once, never again.
        let m = serde_json::json!({"op": "advertise", "channels": [{"id": 2,
            "topic": "/move_base_simple/goal", "encoding": "json",
            "schemaName": "geometry_msgs/PoseStamped"}]});
        let goal = serde_json::json!({"header": {"frame_id": "map",
            "stamp": {"sec": 0, "nsec": 0}}, "pose": {
            "position": {"x": -0.75, "y": 1.25, "z": 0.0},
            "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}}});
        let mut frame = vec![1u8];
        frame.extend_from_slice(&2u32.to_le_bytes());
        frame.extend_from_slice(goal.to_string().as_bytes());
        ws.send(Message::Text(m.to_string().into())).await.unwrap();
        ws.send(Message::Binary(frame.into())).await.unwrap();
        // The stand-in plans to the goal it was sent: the plan ends there. No status
        // says the command was ignored or dropped.
        let deadline = Instant::now() + WAIT;
        let mut statuses = Vec::new();
        loop {
            assert!(
                Instant::now() < deadline,
                "no /plan to the goal within {WAIT:?}; statuses {statuses:?}"
            );
            let next = tokio::time::timeout(Duration::from_millis(300), ws.next()).await;
            match next {
                Ok(Some(Ok(Message::Binary(b)))) => {
                    use prost::Message as _;
                    let Some((9, _, p)) = message_data(&b) else {
                        continue;
                    };
                    let plan = foxglove::messages::PosesInFrame::decode(p).unwrap();
                    let last = plan.poses.last().and_then(|p| p.position);
                    if last.map(|at| (at.x, at.y)) == Some((-0.75, 1.25)) {
                        break;
                    }
                }
                Ok(Some(Ok(Message::Text(t)))) => {
                    let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                    if v["op"] == "status" {
                        statuses.push(v["message"].to_string());
                    }
                }
                Ok(Some(Ok(_))) | Err(_) => {}
                Ok(other) => panic!("connection ended: {other:?}"),
            }
        }
        assert!(
            !statuses
                .iter()
                .any(|s| s.contains("ignored") || s.contains("dropped")),
            "{statuses:?}"
        );
        ws.close(None).await.unwrap();
    });
    server.shutdown();
}
