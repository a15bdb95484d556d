//! Fuzzes what a Foxglove WebSocket client sends the web viewer (`player_foxglove`): the
//! first byte says what the rest is. `0`: a text frame, through `parse_text` (the JSON
//! operations); `1`: a binary frame, through `parse_binary` (`clientPublish` message data,
//! service call requests) and the playback control request parser, as the session hands
//! it to both by its opcode; `2`: a `Sec-WebSocket-Protocol` header and an `?encoding=`
//! value. Any other first byte picks one of these by its remainder.
//!
//! Checked, beyond no panic: an accepted operation written back as JSON parses to the same
//! operation, and its lists and names are no larger than the text could hold; a parsed
//! binary frame's payload is the input's tail and framing its fields again gives the input
//! back (the server's service call response has the request's layout); a playback request's
//! id is bounded and the request frames back to its bytes; a chosen subprotocol is one of
//! ours the client offered.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_foxglove::encoding::Encoding;
use player_foxglove::playback::{self, MAX_REQUEST_ID, OP_PLAYBACK_CONTROL_REQUEST};
use player_foxglove::protocol::{
    self as fox, ClientBinary, ClientOp, MAX_SERVICE_ENCODING, OP_MESSAGE_DATA,
    OP_SERVICE_CALL_REQUEST, SUBPROTOCOLS,
};
use serde_json::{json, Value};

/// Whether two JSON values are the same, numbers within a rounding of each other (the JSON
/// parser's floats are not always the nearest, so a written-back float may move an ulp).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            _ if x == y => true,
            (Some(x), Some(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// `op` written as the JSON a client sends.
fn to_json(op: &ClientOp) -> Value {
    let names = |op: &str, n: &[String]| json!({"op": op, "parameterNames": n});
    let with_id = |mut v: Value, id: &Option<String>| {
        if let Some(id) = id {
            v["id"] = json!(id);
        }
        v
    };
    match op {
        ClientOp::Subscribe(list) => json!({"op": "subscribe", "subscriptions": list
            .iter().map(|s| json!({"id": s.id, "channelId": s.channel_id})).collect::<Vec<_>>()}),
        ClientOp::Unsubscribe(ids) => json!({"op": "unsubscribe", "subscriptionIds": ids}),
        ClientOp::Advertise(list) => json!({"op": "advertise", "channels": list.iter()
            .map(|c| json!({"id": c.id, "topic": c.topic, "encoding": c.encoding,
                "schemaName": c.schema_name}))
            .collect::<Vec<_>>()}),
        ClientOp::Unadvertise(ids) => json!({"op": "unadvertise", "channelIds": ids}),
        ClientOp::GetParameters { names: n, id } => with_id(names("getParameters", n), id),
        ClientOp::SetParameters { parameters, id } => with_id(
            json!({"op": "setParameters", "parameters": parameters.iter()
                .map(|(name, value)| json!({"name": name, "value": value}))
                .collect::<Vec<_>>()}),
            id,
        ),
        ClientOp::SubscribeParameterUpdates(n) => names("subscribeParameterUpdates", n),
        ClientOp::UnsubscribeParameterUpdates(n) => names("unsubscribeParameterUpdates", n),
        ClientOp::SubscribeConnectionGraph => json!({"op": "subscribeConnectionGraph"}),
        ClientOp::UnsubscribeConnectionGraph => json!({"op": "unsubscribeConnectionGraph"}),
        ClientOp::Unsupported(name) => json!({"op": name}),
    }
}

/// Checks that `n` JSON items of at least `min` bytes each (with their comma) fit in
/// `text`: no list the parser returns may be longer than the text holds.
fn fits(text: &str, n: usize, min: usize) {
    assert!(
        n.saturating_mul(min) <= text.len() + 1,
        "{n} items of at least {min} bytes in {} bytes",
        text.len()
    );
}

fn text_frame(text: &str) {
    let Ok(op) = fox::parse_text(text) else {
        return;
    };
    let strings = |v: &[String]| v.iter().map(String::len).sum::<usize>();
    match &op {
        // The shortest subscription is `[0,0]` and a comma (serde takes a struct as an
        // array of its fields too).
        ClientOp::Subscribe(list) => fits(text, list.len(), 6),
        ClientOp::Unsubscribe(ids) | ClientOp::Unadvertise(ids) => fits(text, ids.len(), 2),
        // `[0,"",""]` and a comma.
        ClientOp::Advertise(list) => {
            fits(text, list.len(), 10);
            let bytes: usize = list
                .iter()
                .map(|c| c.topic.len() + c.encoding.len() + c.schema_name.len())
                .sum();
            assert!(bytes <= text.len());
        }
        ClientOp::GetParameters { names, .. }
        | ClientOp::SubscribeParameterUpdates(names)
        | ClientOp::UnsubscribeParameterUpdates(names) => {
            fits(text, names.len(), 3);
            assert!(strings(names) <= text.len());
        }
        // `[""]` and a comma.
        ClientOp::SetParameters { parameters, .. } => fits(text, parameters.len(), 5),
        ClientOp::Unsupported(name) => assert!(name.chars().count() <= 40),
        ClientOp::SubscribeConnectionGraph | ClientOp::UnsubscribeConnectionGraph => {}
    }
    let again = fox::parse_text(&to_json(&op).to_string())
        .unwrap_or_else(|e| panic!("{op:?} written back does not parse: {e}"));
    match (&op, &again) {
        (
            ClientOp::SetParameters {
                parameters: a,
                id: i,
            },
            ClientOp::SetParameters {
                parameters: b,
                id: j,
            },
        ) => {
            assert_eq!(i, j);
            assert_eq!(a.len(), b.len());
            for ((n, v), (m, w)) in a.iter().zip(b) {
                assert_eq!(n, m);
                assert!(same_value(v, w), "{v} became {w}");
            }
        }
        _ => assert_eq!(op, again),
    }
}

fn binary_frame(b: &[u8]) {
    match fox::parse_binary(b) {
        Ok(ClientBinary::Message { channel, payload }) => {
            assert_eq!(b[0], OP_MESSAGE_DATA);
            assert_eq!(payload.len() + 5, b.len());
            assert!(std::ptr::eq(
                payload.as_ptr_range().end,
                b.as_ptr_range().end
            ));
            let mut again = vec![OP_MESSAGE_DATA];
            again.extend_from_slice(&channel.to_le_bytes());
            again.extend_from_slice(payload);
            assert_eq!(again, b);
        }
        Ok(ClientBinary::ServiceCall {
            service,
            call,
            encoding,
            payload,
        }) => {
            assert_eq!(b[0], OP_SERVICE_CALL_REQUEST);
            assert!(encoding.len() <= MAX_SERVICE_ENCODING);
            assert_eq!(13 + encoding.len() + payload.len(), b.len());
            assert!(std::ptr::eq(
                payload.as_ptr_range().end,
                b.as_ptr_range().end
            ));
            // The answer has the request's layout: the same bytes after the opcode.
            let answer = fox::service_call_response(service, call, encoding, payload);
            assert_eq!(&answer[1..], &b[1..]);
        }
        Err(_) => {}
    }
    if let Ok(r) = playback::parse_request(b) {
        assert_eq!(b[0], OP_PLAYBACK_CONTROL_REQUEST);
        assert!(r.request_id.len() <= MAX_REQUEST_ID);
        let mut again = vec![OP_PLAYBACK_CONTROL_REQUEST, u8::from(!r.play)];
        again.extend_from_slice(&r.speed.to_le_bytes());
        again.push(u8::from(r.seek.is_some()));
        again.extend_from_slice(&r.seek.unwrap_or(0).to_le_bytes());
        again.extend_from_slice(&(r.request_id.len() as u32).to_le_bytes());
        again.extend_from_slice(r.request_id.as_bytes());
        assert!(again.len() <= b.len());
        let back = playback::parse_request(&again).expect("a framed request parses");
        assert_eq!(
            (back.play, back.speed.to_bits(), back.seek, &back.request_id),
            (r.play, r.speed.to_bits(), r.seek, &r.request_id)
        );
        // The fields the request keeps are its bytes (the seek time only with its flag).
        assert_eq!(again[..2], b[..2]);
        assert_eq!(again[2..6], b[2..6]);
        assert_eq!(again[15..], b[15..again.len()]);
    }
}

fn header(text: &str) {
    match fox::choose_subprotocol(Some(text)) {
        Ok(Some(p)) => {
            assert!(SUBPROTOCOLS.contains(&p));
            assert!(text.split(',').map(str::trim).any(|o| o == p));
        }
        Ok(None) => unreachable!("a header was given"),
        Err(_) => assert!(!text
            .split(',')
            .map(str::trim)
            .any(|o| SUBPROTOCOLS.contains(&o))),
    }
    if let Ok(e) = Encoding::parse(text) {
        assert_eq!(e.name(), text);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&select, rest)) = data.split_first() else {
        return;
    };
    match select % 3 {
        0 => {
            // A WebSocket text frame is UTF-8 (the WebSocket library refuses others).
            if let Ok(text) = std::str::from_utf8(rest) {
                text_frame(text);
            }
        }
        1 => binary_frame(rest),
        _ => {
            if let Ok(text) = std::str::from_utf8(rest) {
                header(text);
            }
        }
    }
});
