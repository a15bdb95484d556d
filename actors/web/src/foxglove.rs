//! The Foxglove WebSocket protocol (`foxglove.websocket.v1`, also offered as
//! `foxglove.sdk.v1`): the server's JSON and binary messages, and the parsing of the
//! client's. Pure: no sockets, no actors.
//!
//! Server → client: `serverInfo`, `status`, `advertise` (text, JSON) and `messageData`
//! (binary: opcode 1, u32 subscription id, u64 timestamp in ns, payload; little-endian).
//! Client → server: `subscribe`, `unsubscribe`, `advertise`, `unadvertise` (text) and
//! client message data (binary: opcode 1, u32 client channel id, payload).

use super::schema::{self, Channel};
use bytes::{BufMut, Bytes, BytesMut};
use serde::Deserialize;
use serde_json::{json, Value};

/// The subprotocol names we accept, in our order of preference.
pub const SUBPROTOCOLS: [&str; 2] = ["foxglove.sdk.v1", "foxglove.websocket.v1"];

/// Binary opcode of server `messageData` and of client message data.
pub const OP_MESSAGE_DATA: u8 = 1;

/// Most subscriptions one client may hold.
pub const MAX_SUBSCRIPTIONS: usize = 256;

/// Most channels one client may advertise for publishing.
pub const MAX_CLIENT_CHANNELS: usize = 64;

/// Status levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Information.
    Info = 0,
    /// Something was refused or ignored.
    Warning = 1,
    /// Something failed.
    Error = 2,
}

/// The subprotocol to answer with, from the client's `Sec-WebSocket-Protocol` header; the
/// first of the client's list that we speak. `Err` when the client offered protocols but
/// none of ours.
pub fn choose_subprotocol(header: Option<&str>) -> Result<Option<&'static str>, String> {
    let Some(h) = header else {
        return Ok(None);
    };
    for offered in h.split(',').map(str::trim) {
        if let Some(p) = SUBPROTOCOLS.iter().find(|p| **p == offered) {
            return Ok(Some(p));
        }
    }
    Err(format!(
        "none of the offered subprotocols ({h}) is spoken here; use {}",
        SUBPROTOCOLS.join(" or ")
    ))
}

/// `serverInfo`.
pub fn server_info(name: &str, session: u64, robot: &str) -> String {
    json!({"op": "serverInfo", "name": name, "capabilities": ["clientPublish"],
        "supportedEncodings": ["json"], "metadata": {"robot": robot},
        "sessionId": session.to_string()})
    .to_string()
}

/// `status`.
pub fn status(level: Level, message: &str) -> String {
    json!({"op": "status", "level": level as u8, "message": message}).to_string()
}

/// `advertise` of `channels`.
pub fn advertise(channels: &[Channel]) -> String {
    let list: Vec<Value> = channels
        .iter()
        .map(|c| {
            json!({"id": c.id, "topic": c.topic, "encoding": "json",
                "schemaName": c.schema_name, "schema": schema::schema(c.schema_name),
                "schemaEncoding": "jsonschema"})
        })
        .collect();
    json!({"op": "advertise", "channels": list}).to_string()
}

/// A binary `messageData` frame.
pub fn message_data(subscription: u32, timestamp_ns: u64, payload: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(13 + payload.len());
    b.put_u8(OP_MESSAGE_DATA);
    b.put_u32_le(subscription);
    b.put_u64_le(timestamp_ns);
    b.put_slice(payload);
    b.freeze()
}

/// One subscription of a `subscribe`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
pub struct Subscription {
    /// The client's id for it.
    pub id: u32,
    /// The channel.
    #[serde(rename = "channelId")]
    pub channel_id: u32,
}

/// One channel of a client `advertise`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct ClientChannel {
    /// The client's id for it.
    pub id: u32,
    /// Its topic.
    pub topic: String,
    /// Its encoding (we take `json`).
    pub encoding: String,
    /// Its schema name.
    #[serde(rename = "schemaName", default)]
    pub schema_name: String,
}

/// A text message from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientOp {
    /// Start receiving channels.
    Subscribe(Vec<Subscription>),
    /// Stop receiving, by subscription id.
    Unsubscribe(Vec<u32>),
    /// The client will publish on these channels.
    Advertise(Vec<ClientChannel>),
    /// The client stops publishing on these channels.
    Unadvertise(Vec<u32>),
    /// An operation we do not support (named, for the status reply).
    Unsupported(String),
}

#[derive(Deserialize)]
struct Envelope {
    op: String,
    #[serde(default)]
    subscriptions: Vec<Subscription>,
    #[serde(rename = "subscriptionIds", default)]
    subscription_ids: Vec<u32>,
    #[serde(default)]
    channels: Vec<ClientChannel>,
    #[serde(rename = "channelIds", default)]
    channel_ids: Vec<u32>,
}

/// Parses a client text message. The error says what is wrong with it.
pub fn parse_text(text: &str) -> Result<ClientOp, String> {
    let e: Envelope =
        serde_json::from_str(text).map_err(|e| format!("malformed client message: {e}"))?;
    Ok(match e.op.as_str() {
        "subscribe" => ClientOp::Subscribe(e.subscriptions),
        "unsubscribe" => ClientOp::Unsubscribe(e.subscription_ids),
        "advertise" => ClientOp::Advertise(e.channels),
        "unadvertise" => ClientOp::Unadvertise(e.channel_ids),
        other => ClientOp::Unsupported(other.chars().take(40).collect()),
    })
}

/// Parses binary client message data: the client channel id and the payload.
pub fn parse_binary(b: &[u8]) -> Result<(u32, &[u8]), String> {
    match b {
        [OP_MESSAGE_DATA, a, b2, c, d, payload @ ..] => {
            Ok((u32::from_le_bytes([*a, *b2, *c, *d]), payload))
        }
        [OP_MESSAGE_DATA, ..] => Err("client message data shorter than its header".into()),
        [op, ..] => Err(format!("unknown binary opcode {op}")),
        [] => Err("empty binary message".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subprotocols_prefer_the_clients_order() {
        assert_eq!(
            choose_subprotocol(Some("foxglove.websocket.v1")).unwrap(),
            Some("foxglove.websocket.v1")
        );
        assert_eq!(
            choose_subprotocol(Some("x, foxglove.sdk.v1 ,foxglove.websocket.v1")).unwrap(),
            Some("foxglove.sdk.v1")
        );
        assert_eq!(choose_subprotocol(None).unwrap(), None);
        assert!(choose_subprotocol(Some("mqtt")).is_err());
    }

    #[test]
    fn client_messages_parse() {
        let s = r#"{"op":"subscribe","subscriptions":[{"id":7,"channelId":4}]}"#;
        assert_eq!(
            parse_text(s).unwrap(),
            ClientOp::Subscribe(vec![Subscription {
                id: 7,
                channel_id: 4
            }])
        );
        let s = r#"{"op":"unsubscribe","subscriptionIds":[7]}"#;
        assert_eq!(parse_text(s).unwrap(), ClientOp::Unsubscribe(vec![7]));
        let s = r#"{"op":"advertise","channels":[{"id":1,"topic":"/cmd_vel","encoding":"json","schemaName":"geometry_msgs/Twist"}]}"#;
        match parse_text(s).unwrap() {
            ClientOp::Advertise(c) => assert_eq!(c[0].topic, "/cmd_vel"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_text(r#"{"op":"getParameters"}"#).unwrap(),
            ClientOp::Unsupported(_)
        ));
        assert!(parse_text("{").is_err());
        assert!(parse_text(r#"{"op":"subscribe","subscriptions":[{"id":-1}]}"#).is_err());
    }

    #[test]
    fn binary_frames_round_trip() {
        let f = message_data(9, 1_000_000_007, b"{}");
        assert_eq!(f[0], 1);
        assert_eq!(u32::from_le_bytes(f[1..5].try_into().unwrap()), 9);
        assert_eq!(
            u64::from_le_bytes(f[5..13].try_into().unwrap()),
            1_000_000_007
        );
        assert_eq!(&f[13..], b"{}");
        let mut c = vec![1u8, 3, 0, 0, 0];
        c.extend_from_slice(b"{\"a\":1}");
        assert_eq!(parse_binary(&c).unwrap(), (3, &b"{\"a\":1}"[..]));
        assert!(parse_binary(&[2, 0]).is_err());
        assert!(parse_binary(&[1, 0]).is_err());
        assert!(parse_binary(&[]).is_err());
    }
}
