//! A Foxglove WebSocket client that stops reading (issue 34), against a real server over
//! real TCP: what waits for it stays bounded, another web client keeps its rate meanwhile,
//! and after the stall timeout it is closed, the reason in the log and in the close frame
//! it gets should it read again. Pings answered whole between the server's own frames, and
//! a device whose setup fails told to the client while the others stream. (tests/web.rs
//! has the TCP client beside a stalled web client; tests/web_tls.rs the TLS faults.)

use futures::{SinkExt, StreamExt};
use player_testkit::foxglove_ws::{
    channel_id, connect, handshake, message_data, next_op, runtime, subscribe, Ws,
};
use player_testkit::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

/// The server's stall timeout (seconds).
const STALL: f64 = 2.0;

/// Subscribes `ws` to every channel it was advertised.
async fn subscribe_all<S>(ws: &mut tokio_tungstenite::WebSocketStream<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let adv = next_op(ws, "advertise").await;
    let subs: Vec<(u64, u64)> = adv["channels"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, c)| (i as u64 + 1, c["id"].as_u64().unwrap()))
        .collect();
    subscribe(ws, &subs).await;
}

/// Reads `ws` (subscribed to `/laser` as subscription 1) until it ends, counting laser
/// frames.
async fn count_laser(mut ws: Ws, laser: Arc<AtomicU64>) {
    while let Some(Ok(m)) = ws.next().await {
        if let Message::Binary(b) = m {
            if message_data(&b).is_some_and(|(sub, _, _)| sub == 1) {
                laser.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[test]
fn a_foxglove_client_that_stops_reading_is_closed_after_the_stall_timeout_with_the_reason() {
    let mut s = default_settings();
    let port = free_port();
    s.web.viewer_mut(0).web_port = Some(port);
    s.server.stall_timeout = STALL;
    let log = LogCapture::default();
    let server = start_server_logged(s, player::builtin_catalog(), log.logger());
    let rt = runtime();

    // Another web client, reading the laser throughout.
    let laser = Arc::new(AtomicU64::new(0));
    let (ready, subscribed) = std::sync::mpsc::channel();
    let counted = laser.clone();
    let reader = std::thread::spawn(move || {
        // A runtime of its own: it reads while this thread waits.
        runtime().block_on(async {
            let mut ws = connect(port, "").await;
            let adv = next_op(&mut ws, "advertise").await;
            subscribe(&mut ws, &[(1, channel_id(&adv, "/laser"))]).await;
            ready.send(()).unwrap();
            count_laser(ws, counted).await;
        })
    });
    subscribed
        .recv_timeout(TIMEOUT)
        .expect("the other client subscribed");

    // The stalled one: subscribed to everything, then reads nothing, with a tiny receive
    // buffer so the server's side fills within a second.
    let (mut stalled, stalled_at) = rt.block_on(async {
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
        subscribe_all(&mut ws).await;
        (ws, Instant::now())
    });
    let laser_at_stall = laser.load(Ordering::Relaxed);

    // Closed after the stall timeout (checked once a second), and the log says why.
    log.wait_for_all(&["web client read nothing for too long", "seconds=2"]);
    let closed_after = stalled_at.elapsed();
    eprintln!("the stalled client was closed {closed_after:?} after it stopped reading");
    assert!(
        closed_after >= Duration::from_secs_f64(STALL)
            && closed_after <= Duration::from_secs_f64(STALL + 2.5),
        "closed after {closed_after:?}"
    );
    // The other web client kept its rate (the simulated laser: 10 Hz).
    let got = laser.load(Ordering::Relaxed) - laser_at_stall;
    let rate = got as f64 / closed_after.as_secs_f64();
    eprintln!("the other web client meanwhile: {got} laser scans ({rate:.1} Hz)");
    assert!(rate >= 7.0, "the other web client got {rate:.1} Hz");

    // Reading again (within the writer's grace): what waited for it is bounded (socket
    // buffers and a frame per subscription, not the seconds of readings it missed), then
    // the close frame with the reason, then the end.
    let (bytes, frames, close) = rt.block_on(async {
        let (mut bytes, mut frames, mut close) = (0usize, 0usize, None);
        loop {
            let next = tokio::time::timeout(Duration::from_secs(5), stalled.next()).await;
            match next.expect("the stalled client's socket ends") {
                Some(Ok(Message::Close(c))) => close = c,
                Some(Ok(m)) => {
                    bytes += m.len();
                    frames += 1;
                }
                Some(Err(_)) | None => break,
            }
        }
        (bytes, frames, close)
    });
    eprintln!("after the stall it read {frames} messages, {bytes} bytes, then {close:?}");
    let close = close.expect("a close frame");
    assert_eq!(close.code, CloseCode::Policy);
    assert_eq!(close.reason.as_str(), "read nothing for 2 s");
    assert!(
        bytes < 4 << 20,
        "{bytes} bytes waited for the stalled client"
    );

    // The other client is still served, and a new one is.
    let before = laser.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        laser.load(Ordering::Relaxed) >= before + 5,
        "the other client goes on"
    );
    rt.block_on(async {
        let mut ws = connect(port, "").await;
        next_op(&mut ws, "advertise").await;
    });
    drop(rt);
    server.shutdown();
    reader.join().unwrap();
}

/// A server of `s` with its web endpoint on a free port.
fn web_server(mut s: player::settings::Settings) -> (TestServer, u16) {
    let port = free_port();
    s.web.viewer_mut(0).web_port = Some(port);
    (start_server_with(s, player::builtin_catalog()), port)
}

#[test]
fn pings_are_answered_in_order_between_the_readings_and_no_frame_is_torn() {
    let (server, port) = web_server(default_settings());
    runtime().block_on(async {
        let mut ws = connect(port, "").await;
        let adv = next_op(&mut ws, "advertise").await;
        subscribe(&mut ws, &[(1, channel_id(&adv, "/laser"))]).await;
        // Pings of every size a control frame may have (0 to 125 bytes) while the laser
        // streams: the server's frames and tungstenite's pongs share one socket, and a
        // pong must come whole, between messages, never inside one.
        let sizes = [0usize, 1, 7, 64, 125, 3, 100, 63, 124, 9];
        let (mut pongs, mut scans) = (Vec::new(), 0u32);
        for (i, &n) in sizes.iter().enumerate() {
            let payload: Vec<u8> = (0..n).map(|k| (i * 31 + k) as u8).collect();
            ws.send(Message::Ping(payload.into())).await.unwrap();
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let deadline = Instant::now() + TIMEOUT;
        while (pongs.len() < sizes.len() || scans < 20) && Instant::now() < deadline {
            let next = tokio::time::timeout(Duration::from_secs(5), ws.next()).await;
            match next.expect("frames keep coming") {
                Some(Ok(Message::Pong(p))) => pongs.push(p.to_vec()),
                // The server's clock (`time`: op 2 and 8 bytes of nanoseconds).
                Some(Ok(Message::Binary(b))) if b.len() == 9 && b[0] == 2 => {}
                Some(Ok(Message::Binary(b))) => {
                    let (sub, _, data) = message_data(&b).expect("a whole messageData frame");
                    assert_eq!(sub, 1);
                    // A Foxglove LaserScan of the simulated laser: 361 ranges as doubles.
                    assert!(data.len() > 361 * 8, "{} bytes", data.len());
                    scans += 1;
                }
                Some(Ok(_)) => {}
                other => panic!("the connection ended: {other:?}"),
            }
        }
        let want: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| (0..n).map(|k| (i * 31 + k) as u8).collect())
            .collect();
        assert_eq!(pongs, want, "each ping's own payload, in order");
        assert!(scans >= 20, "{scans} scans");
    });
    server.shutdown();
}

#[test]
fn a_device_that_cannot_be_set_up_is_an_error_status_and_the_others_stream() {
    let missing = "/dev/ttyNOLASER-web-test";
    let text = player_testkit::hw::robot_toml(&[
        ("sim", "ps", ""),
        ("sicklms200", "l", &format!("port = \"{missing}\"")),
    ]);
    let s = player::settings::Settings::from_toml(&text, "web refused")
        .unwrap_or_else(|e| panic!("{e}"));
    let (server, port) = web_server(s);
    runtime().block_on(async {
        let mut ws = connect(port, "").await;
        let adv = next_op(&mut ws, "advertise").await;
        subscribe(
            &mut ws,
            &[
                (1, channel_id(&adv, "/laser")),
                (2, channel_id(&adv, "/tf")),
            ],
        )
        .await;
        // The laser's setup fails (no such port): the client is told, at error level,
        // naming the port.
        let status = next_op(&mut ws, "status").await;
        assert_eq!(status["level"], 2, "{status}");
        let text = status["message"].as_str().unwrap();
        eprintln!("the client was told: {text}");
        assert!(text.contains(missing), "{text}");
        assert!(
            text.starts_with("laser: ") && !text.starts_with("laser: laser"),
            "{text}"
        );
        // The base streams on: ten transforms from the simulated robot.
        let mut tf = 0;
        let deadline = Instant::now() + TIMEOUT;
        while tf < 10 && Instant::now() < deadline {
            let next = tokio::time::timeout(Duration::from_secs(5), ws.next()).await;
            match next.expect("frames keep coming") {
                Some(Ok(Message::Binary(b))) if b.len() == 9 && b[0] == 2 => {}
                Some(Ok(Message::Binary(b))) => {
                    let (sub, _, _) = message_data(&b).expect("a messageData frame");
                    assert_eq!(sub, 2, "nothing on the refused laser");
                    tf += 1;
                }
                Some(Ok(_)) => {}
                other => panic!("the connection ended: {other:?}"),
            }
        }
        assert_eq!(tf, 10);
    });
    server.shutdown();
}
