//! The web endpoint over real TCP: the page over HTTP, the Foxglove WebSocket protocol with
//! a real WebSocket client, access control, and a browser client that stops reading not
//! slowing a TCP client. (tests/web/ has the tests in a real browser and with Foxglove's own
//! client library.)

use futures::{SinkExt, StreamExt};
use player_testkit::foxglove_ws::{
    channel_id, connect_with as connect, handshake, next_frame, next_json, next_op, runtime as rt,
    subscribe,
};
use player_testkit::{default_settings, free_port, start_server_with, Client};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

fn web_server(
    adjust: impl FnOnce(&mut player::settings::Settings),
) -> (player_testkit::TestServer, u16) {
    let mut s = default_settings();
    let port = free_port();
    s.web.viewer_mut(0).web_port = Some(port);
    adjust(&mut s);
    (start_server_with(s, player::builtin_catalog()), port)
}

fn http_get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn the_page_is_served_and_other_paths_are_not() {
    let (server, port) = web_server(|_| {});
    let page = http_get(port, "/");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("text/html"));
    assert!(page.contains("viewer.js"));
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no CDN"
    );
    let js = http_get(port, "/viewer.js");
    assert!(js.contains("foxglove.websocket.v1"));
    assert!(http_get(port, "/nope").starts_with("HTTP/1.1 404"));
    // An upgrade asking for a protocol we do not speak is refused.
    let rt = rt();
    let e = rt.block_on(connect(port, "mqtt", "")).unwrap_err();
    assert!(e.contains("400"), "{e}");
    server.shutdown();
}

#[test]
fn a_foxglove_client_gets_laser_scans_with_the_drivers_timestamps() {
    let (server, port) = web_server(|_| {});
    let rt = rt();
    rt.block_on(async {
        // Protobuf by default, JSON when the URL asks for it; the same channel ids.
        for (protocol, query) in [
            ("foxglove.websocket.v1", ""),
            ("foxglove.sdk.v1", "?encoding=json"),
        ] {
            let mut ws = connect(port, protocol, query).await.unwrap();
            let info = next_op(&mut ws, "serverInfo").await;
            assert_eq!(info["capabilities"][0], "clientPublish");
            let adv = next_op(&mut ws, "advertise").await;
            let laser = channel_id(&adv, "/laser");
            let advertised = |topic: &str| {
                adv["channels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["topic"] == topic)
                    .unwrap()
                    .clone()
            };
            let json = !query.is_empty();
            let want = if json { "json" } else { "protobuf" };
            assert_eq!(advertised("/laser")["encoding"], want);
            assert_eq!(
                advertised("/laser")["schemaEncoding"],
                if json { "jsonschema" } else { "protobuf" }
            );
            assert_eq!(advertised("/sonar")["encoding"], want);
            // Our own schemas are JSON either way.
            assert_eq!(advertised("/position")["encoding"], "json");
            subscribe(&mut ws, &[(42, laser)]).await;
            // messageData (opcode 1); the server's clock (`time`, opcode 2) is not one.
            let frame = next_frame(
                &mut ws,
                "laser message",
                Duration::from_secs(20),
                |m| match m {
                    Message::Binary(b) if b[0] == 1 => Some(b),
                    _ => None,
                },
            )
            .await;
            assert_eq!(frame[0], 1, "messageData");
            assert_eq!(u32::from_le_bytes(frame[1..5].try_into().unwrap()), 42);
            let ns = u64::from_le_bytes(frame[5..13].try_into().unwrap());
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64;
            assert!(
                ns <= now && now - ns < 30_000_000_000,
                "driver time {ns}, now {now}"
            );
            let sec = if json {
                let v: serde_json::Value = serde_json::from_slice(&frame[13..]).unwrap();
                assert_eq!(v["ranges"].as_array().unwrap().len(), 361);
                v["timestamp"]["sec"].as_u64().unwrap()
            } else {
                use prost::Message;
                let s = foxglove::messages::LaserScan::decode(&frame[13..]).unwrap();
                assert_eq!(s.ranges.len(), 361);
                assert_eq!(s.frame_id, "base_link");
                u64::from(s.timestamp.expect("a timestamp").sec())
            };
            assert_eq!(
                sec,
                ns / 1_000_000_000,
                "JSON and frame carry the same time"
            );
            // Nonsense is answered with a status, and the connection stays.
            ws.send(Message::Text("{\"op\":\"fly\"}".into()))
                .await
                .unwrap();
            let st = next_op(&mut ws, "status").await;
            assert!(st["message"].as_str().unwrap().contains("fly"));
            ws.close(None).await.unwrap();
        }
        // An encoding we do not know is refused at the upgrade.
        let e = connect(port, "foxglove.websocket.v1", "?encoding=cbor")
            .await
            .unwrap_err();
        assert!(e.contains("400"), "{e}");
    });
    server.shutdown();
}

#[test]
fn a_laser_serving_the_full_scan_gets_a_scan_channel_beside_laser() {
    use player::emulators::scene::Scene;
    use player::emulators::urg::{Model, UrgEmulator};
    use player::emulators::TcpEmulator;
    let emu = TcpEmulator::start(UrgEmulator::new(Model::utm_30lx(), Scene::room())).unwrap();
    let toml =
        player_testkit::hw::robot_toml(&[("urg", "lL", &format!("address = \"{}\"", emu.addr()))]);
    let mut s = player::settings::Settings::from_toml(&toml, "test").unwrap();
    let port = free_port();
    s.web.viewer_mut(0).web_port = Some(port);
    let server = start_server_with(s, player::builtin_catalog());
    let rt = rt();
    rt.block_on(async {
        let mut ws = connect(port, "foxglove.websocket.v1", "?encoding=json")
            .await
            .unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        let scan_channel = adv["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["topic"] == "/scan")
            .expect("/scan advertised");
        assert_eq!(scan_channel["schemaName"], "foxglove.LaserScan");
        let (laser, scan) = (channel_id(&adv, "/laser"), channel_id(&adv, "/scan"));
        assert_ne!(laser, scan);
        subscribe(&mut ws, &[(1, laser), (2, scan)]).await;
        let v = next_json(&mut ws, 2, Duration::from_secs(20)).await;
        // The UTM-30LX: 1081 readings a quarter degree apart from 135 degrees right.
        let ranges = v["ranges"].as_array().unwrap();
        assert_eq!(ranges.len(), 1081);
        let start = v["start_angle"].as_f64().unwrap().to_degrees();
        let end = v["end_angle"].as_f64().unwrap().to_degrees();
        assert!((start + 135.0).abs() < 0.05, "start {start}");
        assert!((end - 135.0).abs() < 0.05, "end {end}");
        // Metres: reading 780 (60 degrees left) is the room's 900 mm.
        assert_eq!(ranges[780], 0.9);
        let l = next_json(&mut ws, 1, Duration::from_secs(20)).await;
        assert_eq!(l["ranges"].as_array().unwrap().len(), 361);
        assert_eq!(v["frame_id"], l["frame_id"]);
        ws.close(None).await.unwrap();
    });
    server.shutdown();
}

#[test]
fn a_read_only_web_client_cannot_command_and_a_wrong_key_is_refused() {
    let (server, port) = web_server(|s| {
        s.access.key = "sesame".into();
    });
    let rt = rt();
    rt.block_on(async {
        let e = connect(port, "foxglove.websocket.v1", "?key=wrong")
            .await
            .unwrap_err();
        assert!(e.contains("403"), "{e}");
        // Without the key: read-only (keyless = "read").
        let mut ws = connect(port, "foxglove.websocket.v1", "").await.unwrap();
        next_op(&mut ws, "advertise").await;
        let m = serde_json::json!({"op": "advertise", "channels": [
            {"id": 1, "topic": "/cmd_vel", "encoding": "json", "schemaName": "geometry_msgs/Twist"}]});
        ws.send(Message::Text(m.to_string().into())).await.unwrap();
        let st = next_op(&mut ws, "status").await;
        assert!(st["message"].as_str().unwrap().contains("may not command"), "{st}");
        // Nor call a service that commands (motor power, id 2); latching the e-stop is
        // anyone's, releasing it is not.
        let call = |service: u32, id: u32, body: &str| {
            let mut b = vec![2u8];
            b.extend_from_slice(&service.to_le_bytes());
            b.extend_from_slice(&id.to_le_bytes());
            b.extend_from_slice(&4u32.to_le_bytes());
            b.extend_from_slice(b"json");
            b.extend_from_slice(body.as_bytes());
            Message::Binary(b.into())
        };
        ws.send(call(2, 7, r#"{"on":true}"#)).await.unwrap();
        let f = next_op(&mut ws, "serviceCallFailure").await;
        assert_eq!(f["callId"], 7);
        assert!(f["message"].as_str().unwrap().contains("may not command"), "{f}");
        ws.send(call(1, 8, r#"{"latch":false}"#)).await.unwrap();
        let f = next_op(&mut ws, "serviceCallFailure").await;
        assert_eq!(f["callId"], 8);
        // With it: accepted (no refusal status; a command moves nothing here, the grant
        // is what matters).
        let mut ws = connect(port, "foxglove.websocket.v1", "?key=sesame").await.unwrap();
        next_op(&mut ws, "advertise").await;
        ws.send(Message::Text(m.to_string().into())).await.unwrap();
        let quiet = tokio::time::timeout(Duration::from_secs(2), next_op(&mut ws, "status")).await;
        assert!(quiet.is_err(), "no refusal: {quiet:?}");
    });
    server.shutdown();
}

#[test]
fn a_web_client_that_stops_reading_does_not_slow_a_tcp_client() {
    let (server, port) = web_server(|_| {});
    let rt = rt();
    // A web client subscribed to everything that then reads nothing at all, with a tiny
    // receive buffer so the server's side fills within a second.
    let mut ws = rt.block_on(async {
        let sock =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.set_recv_buffer_size(4096).unwrap();
        let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
        sock.connect(&addr.into()).unwrap();
        sock.set_nonblocking(true).unwrap();
        let stream = tokio::net::TcpStream::from_std(sock.into()).unwrap();
        let mut ws = handshake(stream, &format!("ws://127.0.0.1:{port}/"))
            .await
            .unwrap();
        let adv = next_op(&mut ws, "advertise").await;
        let subs: Vec<(u64, u64)> = adv["channels"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, c)| (i as u64 + 1, c["id"].as_u64().unwrap()))
            .collect();
        subscribe(&mut ws, &subs).await;
        ws
    });
    // A 0.7.4a client reading laser, sonar and position at 10 Hz meanwhile.
    let mut c = Client::connect(server.addr());
    c.send_request(&[(b'l', b'r'), (b's', b'r'), (b'p', b'r')]);
    c.read_reply();
    c.read_round(3);
    let t = Instant::now();
    let mut rounds = 0;
    while t.elapsed() < Duration::from_secs(4) {
        c.read_round(3);
        rounds += 1;
    }
    // 10 Hz for 4 s: 40 rounds; a generous floor for a loaded machine.
    assert!(rounds >= 30, "{rounds} rounds in 4 s");
    // The web client, reading again, soon gets current data: what queued while it did
    // not read is bounded (one message per subscription plus socket buffers), not 4 s of
    // rounds.
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut n = 0;
        let fresh = loop {
            let m = tokio::time::timeout_at(deadline, ws.next())
                .await
                .expect("messages again")
                .unwrap()
                .unwrap();
            if let Message::Binary(b) = m {
                if b[0] != 1 {
                    continue; // the server's clock (`time`), not a reading
                }
                n += 1;
                let ns = u64::from_le_bytes(b[5..13].try_into().unwrap());
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64;
                if now.saturating_sub(ns) < 1_000_000_000 {
                    break n;
                }
            }
        };
        eprintln!("a current reading after {fresh} messages");
        assert!(fresh <= 200, "a current reading after {fresh} messages");
    });
    server.shutdown();
}

#[test]
fn max_per_address_limits_web_connections_too() {
    let (server, port) = web_server(|s| s.access.max_per_address = 2);
    let rt = rt();
    rt.block_on(async {
        let mut first = connect(port, "foxglove.websocket.v1", "").await.unwrap();
        next_op(&mut first, "advertise").await;
        let second = connect(port, "foxglove.websocket.v1", "").await.unwrap();
        let e = connect(port, "foxglove.websocket.v1", "")
            .await
            .unwrap_err();
        assert!(e.contains("503"), "{e}");
        // A place is given back when a session ends.
        drop(second);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            // Polls until a place is free (the deadline below fails the test).
            tokio::time::sleep(Duration::from_millis(100)).await;
            if connect(port, "foxglove.websocket.v1", "").await.is_ok() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no place given back"
            );
        }
    });
    server.shutdown();
}

#[test]
fn a_web_writer_at_1_hz_drives_without_stopping_and_stops_within_1_5_s_of_its_last_command() {
    let (server, port) = web_server(|_| {});
    let mut c = Client::connect(server.addr());
    c.send_request(&[(b'p', b'r')]);
    c.read_reply();
    // A browser's Teleop panel: a Twist on /cmd_vel once a second, four times, then
    // silence with the connection kept open (not a writer leaving).
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        rt().block_on(async move {
            let mut ws = connect(port, "foxglove.websocket.v1", "").await.unwrap();
            next_op(&mut ws, "advertise").await;
            let adv = serde_json::json!({"op": "advertise", "channels": [
                {"id": 7, "topic": "/cmd_vel", "encoding": "json",
                 "schemaName": "geometry_msgs/Twist"}]});
            ws.send(Message::Text(adv.to_string().into()))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(500)).await; // the grant
            let twist = br#"{"linear":{"x":0.3,"y":0,"z":0},"angular":{"x":0,"y":0,"z":0}}"#;
            let mut frame = vec![1u8];
            frame.extend_from_slice(&7u32.to_le_bytes());
            frame.extend_from_slice(twist);
            for _ in 0..4 {
                ws.send(Message::Binary(frame.clone().into()))
                    .await
                    .unwrap();
                tx.send(Instant::now()).unwrap();
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            // Keep the connection open while the robot is watched.
            tokio::time::sleep(Duration::from_secs(4)).await;
            drop(ws);
        })
    });
    let first = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    let mut sent = vec![first];
    let mut readings: Vec<(Instant, i16)> = Vec::new();
    while first.elapsed() < Duration::from_secs(6) {
        let p = c.next_position();
        readings.push((Instant::now(), p.speed));
        while let Ok(t) = rx.try_recv() {
            sent.push(t);
        }
    }
    assert_eq!(sent.len(), 4, "four commands sent");
    let last = *sent.last().unwrap();
    let moving_from = readings
        .iter()
        .find(|(_, s)| *s > 0)
        .expect("the robot moved")
        .0;
    let held: Vec<i16> = readings
        .iter()
        .filter(|(t, _)| *t > moving_from && *t < last)
        .map(|(_, s)| *s)
        .collect();
    assert!(held.len() >= 15, "{} readings while held", held.len());
    assert!(
        held.iter().all(|&s| s > 0),
        "no stop between 1 Hz commands: {held:?}"
    );
    let stopped = readings
        .iter()
        .find(|(t, s)| *t > last && *s == 0)
        .expect("stopped after the last command")
        .0;
    let after = stopped.duration_since(last);
    eprintln!("stopped {after:?} after the last command");
    assert!(
        after <= Duration::from_millis(1500),
        "stopped {after:?} after the last command"
    );
    assert!(
        after >= Duration::from_millis(1000),
        "held past the device's own 0.5 s: {after:?}"
    );
    writer.join().unwrap();
    server.shutdown();
}
