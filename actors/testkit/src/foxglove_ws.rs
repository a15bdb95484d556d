//! A Foxglove WebSocket test client: the plumbing the web tests share (connect with a
//! subprotocol and a query, read the next message within a time, read the advertisement's
//! topic → channel id, subscribe, read a `messageData` frame). Generic over the stream, so
//! the same reads serve a plain `ws://` connection, a hand-made socket and `wss://` over
//! rustls. What a test checks in what it reads stays in the test.

use futures::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// A plain `ws://` connection as [`connect`] makes it.
pub type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// The Foxglove WebSocket subprotocol the web endpoint speaks by default.
pub const SUBPROTOCOL: &str = "foxglove.websocket.v1";

/// How long [`next_op`] waits for its message (a debug build on a loaded machine).
pub const WAIT: Duration = Duration::from_secs(20);

/// A current-thread tokio runtime with time and I/O, to `block_on` a test's client.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The upgrade request for `url` asking for `protocol`.
fn request(url: &str, protocol: &str) -> Request {
    let mut req = url.into_client_request().unwrap();
    req.headers_mut()
        .insert("Sec-WebSocket-Protocol", protocol.parse().unwrap());
    req
}

/// Connects to `ws://127.0.0.1:<port>/<query>` asking for `protocol`, and checks the
/// server chose it; the error's text when the connection or the upgrade is refused.
pub async fn connect_with(port: u16, protocol: &str, query: &str) -> Result<Ws, String> {
    let req = request(&format!("ws://127.0.0.1:{port}/{query}"), protocol);
    let (ws, resp) = tokio_tungstenite::connect_async(req)
        .await
        .map_err(|e| e.to_string())?;
    let p = resp.headers().get("Sec-WebSocket-Protocol").unwrap();
    assert_eq!(p.to_str().unwrap(), protocol);
    Ok(ws)
}

/// Connects to `ws://127.0.0.1:<port>/<query>` with [`SUBPROTOCOL`]; panics if refused.
pub async fn connect(port: u16, query: &str) -> Ws {
    connect_with(port, SUBPROTOCOL, query).await.unwrap()
}

/// The WebSocket upgrade for `url` with [`SUBPROTOCOL`] over a stream the test opened
/// itself (a TLS stream, a socket with a small buffer), checking the server chose it; the
/// error's text when refused.
pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    url: &str,
) -> Result<WebSocketStream<S>, String> {
    let (ws, resp) = tokio_tungstenite::client_async(request(url, SUBPROTOCOL), stream)
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(
        resp.headers().get("Sec-WebSocket-Protocol").unwrap(),
        SUBPROTOCOL
    );
    Ok(ws)
}

/// The next message `pick` accepts (others are skipped), within `wait`; panics naming
/// `what` if none comes in time or the connection ends.
pub async fn next_frame<S: AsyncRead + AsyncWrite + Unpin, T>(
    ws: &mut WebSocketStream<S>,
    what: &str,
    wait: Duration,
    mut pick: impl FnMut(Message) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let m = tokio::time::timeout_at(deadline, ws.next())
            .await
            .unwrap_or_else(|_| panic!("no {what} within {wait:?}"))
            .expect("open")
            .expect("ok");
        if let Some(v) = pick(m) {
            return v;
        }
    }
}

/// The next text message whose JSON `pick` accepts, within `wait`.
pub async fn next_text<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
    what: &str,
    wait: Duration,
    mut pick: impl FnMut(&serde_json::Value) -> bool,
) -> serde_json::Value {
    next_frame(ws, what, wait, |m| match m {
        Message::Text(t) => {
            let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
            pick(&v).then_some(v)
        }
        _ => None,
    })
    .await
}

/// The next text message with this `op`, within [`WAIT`].
pub async fn next_op<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
    op: &str,
) -> serde_json::Value {
    next_text(ws, &format!("'{op}'"), WAIT, |v| v["op"] == op).await
}

/// The channel an `advertise` message gives `topic` (its id, schema, encoding...); panics
/// if not advertised.
pub fn channel(advertise: &serde_json::Value, topic: &str) -> serde_json::Value {
    advertise["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["topic"] == topic)
        .unwrap_or_else(|| panic!("{topic} advertised"))
        .clone()
}

/// The id of the channel an `advertise` message gives `topic`; panics if not advertised.
pub fn channel_id(advertise: &serde_json::Value, topic: &str) -> u64 {
    channel(advertise, topic)["id"].as_u64().unwrap()
}

/// Sends `v` as a text message.
pub async fn send_json<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
    v: serde_json::Value,
) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// Subscribes to channels: each pair is (subscription id, channel id).
pub async fn subscribe<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
    subs: &[(u64, u64)],
) {
    let list: Vec<serde_json::Value> = subs
        .iter()
        .map(|(id, ch)| serde_json::json!({"id": id, "channelId": ch}))
        .collect();
    send_json(
        ws,
        serde_json::json!({"op": "subscribe", "subscriptions": list}),
    )
    .await;
}

/// A binary `messageData` frame (opcode 1): its subscription id, its time (ns) and its
/// payload; `None` for any other frame (the server's clock, `time`, is opcode 2).
pub fn message_data(frame: &[u8]) -> Option<(u32, u64, &[u8])> {
    if frame.len() < 13 || frame[0] != 1 {
        return None;
    }
    let sub = u32::from_le_bytes(frame[1..5].try_into().unwrap());
    let ns = u64::from_le_bytes(frame[5..13].try_into().unwrap());
    Some((sub, ns, &frame[13..]))
}

/// The JSON payload of the next `messageData` frame on subscription `sub`, within `wait`
/// (a connection asking `?encoding=json`).
pub async fn next_json<S: AsyncRead + AsyncWrite + Unpin>(
    ws: &mut WebSocketStream<S>,
    sub: u32,
    wait: Duration,
) -> serde_json::Value {
    next_frame(ws, &format!("message on subscription {sub}"), wait, |m| {
        let Message::Binary(b) = m else { return None };
        let (s, _, payload) = message_data(&b)?;
        (s == sub).then(|| serde_json::from_slice(payload).unwrap())
    })
    .await
}
