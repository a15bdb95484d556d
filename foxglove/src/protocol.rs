//! The Foxglove WebSocket protocol (`foxglove.websocket.v1`, also offered as
//! `foxglove.sdk.v1`): the server's JSON and binary messages, and the parsing of the
//! client's. Pure: no sockets, no actors.
//!
//! Server → client: `serverInfo`, `status`, `removeStatus`, `advertise`,
//! `parameterValues`, `connectionGraphUpdate` (text, JSON), `messageData` (binary: opcode
//! 1, u32 subscription id, u64 timestamp in ns, payload; little-endian) and `time` (binary:
//! opcode 2, u64 ns).
//! Client → server: `subscribe`, `unsubscribe`, `advertise`, `unadvertise` (text) and
//! client message data (binary: opcode 1, u32 client channel id, payload); `getParameters`,
//! `setParameters`, `(un)subscribeParameterUpdates`, `(un)subscribeConnectionGraph`.
//!
//! Services: the server sends `advertiseServices` ([`SERVICES`]); a client calls one with a
//! binary service call request (opcode 2: u32 service id, u32 call id, u32 encoding
//! length, encoding, payload) and gets a binary service call response (opcode 3, the same
//! layout) or a `serviceCallFailure` (text).

use crate::channels::Channel;
use crate::encoding::Encoding;
use bytes::{BufMut, Bytes, BytesMut};
use serde::Deserialize;
use serde_json::{json, Value};

/// The subprotocol names we accept, in our order of preference.
pub const SUBPROTOCOLS: [&str; 2] = ["foxglove.sdk.v1", "foxglove.websocket.v1"];

/// Binary opcode of server `messageData` and of client message data.
pub const OP_MESSAGE_DATA: u8 = 1;

/// Binary opcode of the server's `time` (its clock, u64 ns).
pub const OP_TIME: u8 = 2;

/// Binary opcode of a client's service call request.
pub const OP_SERVICE_CALL_REQUEST: u8 = 2;

/// Binary opcode of the server's service call response.
pub const OP_SERVICE_CALL_RESPONSE: u8 = 3;

/// Most subscriptions one client may hold.
pub const MAX_SUBSCRIPTIONS: usize = 256;

/// Most channels one client may advertise for publishing.
pub const MAX_CLIENT_CHANNELS: usize = 64;

/// Longest encoding name a service call request may carry (bounded before it is read).
pub const MAX_SERVICE_ENCODING: usize = 64;

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

/// What the server offers (`clientPublish` first): publishing, services, parameters and
/// their updates, the connection graph, its clock.
pub const CAPABILITIES: [&str; 6] = [
    "clientPublish",
    "services",
    "parameters",
    "parametersSubscribe",
    "connectionGraph",
    "time",
];

/// `serverInfo`.
pub fn server_info(name: &str, session: u64, robot: &str) -> String {
    json!({"op": "serverInfo", "name": name, "capabilities": CAPABILITIES,
        "supportedEncodings": ["json"], "metadata": {"robot": robot},
        "sessionId": session.to_string()})
    .to_string()
}

/// `status`.
pub fn status(level: Level, message: &str) -> String {
    json!({"op": "status", "level": level as u8, "message": message}).to_string()
}

/// `status` with an id, for a condition a later [`remove_status`] clears.
pub fn status_with_id(level: Level, message: &str, id: &str) -> String {
    json!({"op": "status", "level": level as u8, "message": message, "id": id}).to_string()
}

/// `removeStatus`: the conditions of these status ids are over.
pub fn remove_status(ids: &[&str]) -> String {
    json!({"op": "removeStatus", "statusIds": ids}).to_string()
}

/// A binary `time` frame: the server's clock in ns.
pub fn time(timestamp_ns: u64) -> Bytes {
    let mut b = BytesMut::with_capacity(9);
    b.put_u8(OP_TIME);
    b.put_u64_le(timestamp_ns);
    b.freeze()
}

/// `advertise` of `channels` for a client that prefers `encoding` (each channel in
/// [`Encoding::for_channel`]).
pub fn advertise(channels: &[Channel], encoding: Encoding) -> String {
    let list: Vec<Value> = channels
        .iter()
        .map(|c| {
            let e = encoding.for_channel(c);
            json!({"id": c.id, "topic": c.topic, "encoding": e.name(),
                "schemaName": c.schema_name, "schema": e.schema_text(c.schema_name),
                "schemaEncoding": e.schema_encoding()})
        })
        .collect();
    json!({"op": "advertise", "channels": list}).to_string()
}

/// A service the server offers (every one takes and answers JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Service {
    /// Its id.
    pub id: u32,
    /// Its name.
    pub name: &'static str,
    /// Its type (also the request's and response's schema names, with `_Request` and
    /// `_Response`).
    pub kind: &'static str,
}

/// The services: the emergency stop, and the device configurations a Player client sends
/// with `x` (motor power, odometry reset, or any config by device and code).
pub const SERVICES: [Service; 4] = [
    Service {
        id: 1,
        name: "/estop",
        kind: "player.EStop",
    },
    Service {
        id: 2,
        name: "/motor_power",
        kind: "player.MotorPower",
    },
    Service {
        id: 3,
        name: "/reset_odometry",
        kind: "player.ResetOdometry",
    },
    Service {
        id: 4,
        name: "/config",
        kind: "player.Config",
    },
];

/// The JSON schemas of a service's request and response.
pub fn service_schemas(kind: &str) -> (Value, Value) {
    let obj = |props: Value| json!({"type": "object", "properties": props});
    let ok = obj(json!({"ok": {"type": "boolean"}, "message": {"type": "string"}}));
    match kind {
        "player.EStop" => (
            obj(json!({"latch": {"type": "boolean"}})),
            obj(json!({"latched": {"type": "boolean"}, "changed": {"type": "boolean"}})),
        ),
        "player.MotorPower" => (obj(json!({"on": {"type": "boolean"}})), ok),
        "player.Config" => (
            obj(
                json!({"device": {"type": "string"}, "code": {"type": "string"},
                "args": {"type": "array", "items": {"type": "integer"}}}),
            ),
            ok,
        ),
        _ => (obj(json!({})), ok),
    }
}

/// `advertiseServices` of `services`.
pub fn advertise_services(services: &[Service]) -> String {
    let list: Vec<Value> = services
        .iter()
        .map(|s| {
            let (req, resp) = service_schemas(s.kind);
            let def = |suffix: &str, schema: &Value| {
                json!({"encoding": "json", "schemaName": format!("{}{suffix}", s.kind),
                    "schemaEncoding": "jsonschema", "schema": schema.to_string()})
            };
            json!({"id": s.id, "name": s.name, "type": s.kind,
                "request": def("_Request", &req), "response": def("_Response", &resp),
                "requestSchema": req.to_string(), "responseSchema": resp.to_string()})
        })
        .collect();
    json!({"op": "advertiseServices", "services": list}).to_string()
}

/// A binary service call response.
pub fn service_call_response(service: u32, call: u32, encoding: &str, payload: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(13 + encoding.len() + payload.len());
    b.put_u8(OP_SERVICE_CALL_RESPONSE);
    b.put_u32_le(service);
    b.put_u32_le(call);
    b.put_u32_le(u32::try_from(encoding.len()).unwrap_or(0));
    b.put_slice(encoding.as_bytes());
    b.put_slice(payload);
    b.freeze()
}

/// `serviceCallFailure`.
pub fn service_call_failure(service: u32, call: u32, message: &str) -> String {
    json!({"op": "serviceCallFailure", "serviceId": service, "callId": call,
        "message": message})
    .to_string()
}

/// `parameterValues`: `(name, value)` pairs, answering request `id`.
pub fn parameter_values(params: &[(String, Value)], id: Option<&str>) -> String {
    let list: Vec<Value> = params
        .iter()
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect();
    let mut v = json!({"op": "parameterValues", "parameters": list});
    if let Some(id) = id {
        v["id"] = json!(id);
    }
    v.to_string()
}

/// A binary `messageData` frame.
pub fn message_data(subscription: u32, timestamp_ns: u64, payload: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(13 + payload.len());
    b.put_slice(&message_data_head(subscription, timestamp_ns));
    b.put_slice(payload);
    b.freeze()
}

/// The 13 bytes of a `messageData` before its payload (opcode, subscription, time), for
/// a writer that puts them before a payload shared with other subscribers.
pub fn message_data_head(subscription: u32, timestamp_ns: u64) -> [u8; 13] {
    let mut h = [0u8; 13];
    h[0] = OP_MESSAGE_DATA;
    h[1..5].copy_from_slice(&subscription.to_le_bytes());
    h[5..].copy_from_slice(&timestamp_ns.to_le_bytes());
    h
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
    /// `getParameters`: these names (empty: all), answered with `parameterValues`
    /// carrying `id`.
    GetParameters {
        /// The names asked for.
        names: Vec<String>,
        /// The request id to answer with.
        id: Option<String>,
    },
    /// `setParameters`: the names and values the client tries to set.
    SetParameters {
        /// The names and values.
        parameters: Vec<(String, Value)>,
        /// The request id to answer with.
        id: Option<String>,
    },
    /// `subscribeParameterUpdates`: send `parameterValues` when these change.
    SubscribeParameterUpdates(Vec<String>),
    /// `unsubscribeParameterUpdates`.
    UnsubscribeParameterUpdates(Vec<String>),
    /// `subscribeConnectionGraph`: send `connectionGraphUpdate`s.
    SubscribeConnectionGraph,
    /// `unsubscribeConnectionGraph`.
    UnsubscribeConnectionGraph,
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
    #[serde(rename = "parameterNames", default)]
    parameter_names: Vec<String>,
    #[serde(default)]
    parameters: Vec<NamedParameter>,
    #[serde(default)]
    id: Option<String>,
}

#[derive(Deserialize)]
struct NamedParameter {
    name: String,
    #[serde(default)]
    value: Value,
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
        "getParameters" => ClientOp::GetParameters {
            names: e.parameter_names,
            id: e.id,
        },
        "setParameters" => ClientOp::SetParameters {
            parameters: e
                .parameters
                .into_iter()
                .map(|p| (p.name, p.value))
                .collect(),
            id: e.id,
        },
        "subscribeParameterUpdates" => ClientOp::SubscribeParameterUpdates(e.parameter_names),
        "unsubscribeParameterUpdates" => ClientOp::UnsubscribeParameterUpdates(e.parameter_names),
        "subscribeConnectionGraph" => ClientOp::SubscribeConnectionGraph,
        "unsubscribeConnectionGraph" => ClientOp::UnsubscribeConnectionGraph,
        other => ClientOp::Unsupported(other.chars().take(40).collect()),
    })
}

/// A binary message from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientBinary<'a> {
    /// Message data on a client channel.
    Message {
        /// The client channel id.
        channel: u32,
        /// The message.
        payload: &'a [u8],
    },
    /// A service call request.
    ServiceCall {
        /// The service id.
        service: u32,
        /// The client's id for this call.
        call: u32,
        /// The request's encoding.
        encoding: &'a str,
        /// The request.
        payload: &'a [u8],
    },
}

/// Parses a binary client message. The error says what is wrong with it.
pub fn parse_binary(b: &[u8]) -> Result<ClientBinary<'_>, String> {
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    match b {
        [OP_MESSAGE_DATA, rest @ ..] if rest.len() >= 4 => Ok(ClientBinary::Message {
            channel: u32_at(rest, 0),
            payload: &rest[4..],
        }),
        [OP_MESSAGE_DATA, ..] => Err("client message data shorter than its header".into()),
        [OP_SERVICE_CALL_REQUEST, rest @ ..] if rest.len() >= 12 => {
            let len = u32_at(rest, 8) as usize;
            let body = &rest[12..];
            if len > body.len() || len > MAX_SERVICE_ENCODING {
                return Err("service call request: bad encoding length".into());
            }
            let encoding = std::str::from_utf8(&body[..len])
                .map_err(|_| "service call request: encoding is not UTF-8".to_string())?;
            Ok(ClientBinary::ServiceCall {
                service: u32_at(rest, 0),
                call: u32_at(rest, 4),
                encoding,
                payload: &body[len..],
            })
        }
        [OP_SERVICE_CALL_REQUEST, ..] => Err("service call request shorter than its header".into()),
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
            parse_text(r#"{"op":"fetchAsset","uri":"x","requestId":1}"#).unwrap(),
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
        assert_eq!(
            parse_binary(&c).unwrap(),
            ClientBinary::Message {
                channel: 3,
                payload: &b"{\"a\":1}"[..]
            }
        );
        assert!(parse_binary(&[2, 0]).is_err());
        assert!(parse_binary(&[9, 0]).is_err());
        assert!(parse_binary(&[1, 0]).is_err());
        assert!(parse_binary(&[]).is_err());
    }

    #[test]
    fn service_calls_parse_and_answers_frame() {
        let mut req = vec![OP_SERVICE_CALL_REQUEST];
        req.extend_from_slice(&4u32.to_le_bytes());
        req.extend_from_slice(&9u32.to_le_bytes());
        req.extend_from_slice(&4u32.to_le_bytes());
        req.extend_from_slice(b"json{}");
        assert_eq!(
            parse_binary(&req).unwrap(),
            ClientBinary::ServiceCall {
                service: 4,
                call: 9,
                encoding: "json",
                payload: b"{}"
            }
        );
        // An encoding longer than the message is refused, not read past the end.
        let mut bad = req.clone();
        bad[9..13].copy_from_slice(&100u32.to_le_bytes());
        assert!(parse_binary(&bad).is_err());
        let r = service_call_response(4, 9, "json", b"{}");
        assert_eq!(r[0], OP_SERVICE_CALL_RESPONSE);
        assert_eq!(&r[1..], &req[1..], "the same layout as the request");
        let adv: Value = serde_json::from_str(&advertise_services(&SERVICES)).unwrap();
        assert_eq!(adv["services"].as_array().unwrap().len(), SERVICES.len());
        assert_eq!(adv["services"][0]["request"]["encoding"], "json");
    }

    #[test]
    fn a_service_calls_encoding_is_bounded_even_when_the_frame_holds_it() {
        let call = |n: usize| {
            let mut req = vec![OP_SERVICE_CALL_REQUEST];
            req.extend_from_slice(&1u32.to_le_bytes());
            req.extend_from_slice(&2u32.to_le_bytes());
            req.extend_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
            req.extend_from_slice("j".repeat(n).as_bytes());
            req.extend_from_slice(b"{}");
            req
        };
        match parse_binary(&call(MAX_SERVICE_ENCODING)) {
            Ok(ClientBinary::ServiceCall {
                encoding, payload, ..
            }) => {
                assert_eq!(
                    (encoding.len(), payload),
                    (MAX_SERVICE_ENCODING, &b"{}"[..])
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_binary(&call(MAX_SERVICE_ENCODING + 1)).is_err());
    }

    #[test]
    fn parameter_requests_parse_and_values_carry_the_id() {
        let g = parse_text(r#"{"op":"getParameters","parameterNames":["robot"],"id":"a"}"#);
        assert_eq!(
            g.unwrap(),
            ClientOp::GetParameters {
                names: vec!["robot".into()],
                id: Some("a".into())
            }
        );
        let s = parse_text(r#"{"op":"setParameters","parameters":[{"name":"x","value":1}]}"#);
        assert_eq!(
            s.unwrap(),
            ClientOp::SetParameters {
                parameters: vec![("x".into(), json!(1))],
                id: None
            }
        );
        let s = r#"{"op":"subscribeParameterUpdates","parameterNames":["p.command_timeout"]}"#;
        assert_eq!(
            parse_text(s).unwrap(),
            ClientOp::SubscribeParameterUpdates(vec!["p.command_timeout".into()])
        );
        assert_eq!(
            parse_text(r#"{"op":"unsubscribeConnectionGraph"}"#).unwrap(),
            ClientOp::UnsubscribeConnectionGraph
        );
        let v: Value = serde_json::from_str(&parameter_values(
            &[("robot".into(), json!("r"))],
            Some("a"),
        ))
        .unwrap();
        assert_eq!(v["id"], "a");
        assert_eq!(v["parameters"][0]["value"], "r");
    }

    #[test]
    fn time_frames_and_status_ids_follow_the_protocol() {
        let t = time(1_700_000_000_123_456_789);
        assert_eq!(t.len(), 9);
        assert_eq!(t[0], OP_TIME);
        assert_eq!(
            u64::from_le_bytes(t[1..9].try_into().unwrap()),
            1_700_000_000_123_456_789
        );
        let s: Value = serde_json::from_str(&status_with_id(Level::Error, "m", "estop")).unwrap();
        assert_eq!(
            s,
            json!({"op": "status", "level": 2, "message": "m", "id": "estop"})
        );
        let r: Value = serde_json::from_str(&remove_status(&["estop"])).unwrap();
        assert_eq!(r, json!({"op": "removeStatus", "statusIds": ["estop"]}));
        let info: Value = serde_json::from_str(&server_info("n", 1, "r")).unwrap();
        assert_eq!(info["capabilities"][0], "clientPublish");
    }
}
