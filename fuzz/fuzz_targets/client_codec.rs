//! Fuzzes both framers of the client protocol with the same bytes:
//!
//! - the server's `ClientDecoder` (what every TCP client's bytes go through): the input
//!   decoded in one piece and split into chunks (sizes taken from the input) must give the
//!   same messages and the same end-of-stream verdict; every framed message must re-encode
//!   to exactly the bytes it came from; what stays buffered is bounded by one message.
//! - the client library's `decode_server` (what a client does with the server's bytes),
//!   with timestamps off and on: each message re-encodes to its bytes, each data payload
//!   of a fixed-size device decodes and re-encodes to itself, and each `y` packet (the
//!   extensions' notices and device lists) decodes, a device list back to itself.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use player_proto::codec::{ClientDecoder, ClientMessage, MAX_PAYLOAD};
use player_proto::data::{Gripper, Laser, Misc, Position, PositionCommand, Ptz, Sonar, Vision};
use player_proto::ext::{self, Extension};
use player_proto::message::{self, ServerMessage, CLIENT_HEADER};

/// The bytes a framed client message was sent as.
fn encode_client(m: &ClientMessage) -> Option<Vec<u8>> {
    let (first, second, payload) = match m {
        ClientMessage::Request {
            second,
            pairs,
            odd_byte,
        } => {
            let mut p: Vec<u8> = pairs.iter().flat_map(|&(d, a)| [d, a]).collect();
            p.extend(odd_byte);
            (message::REQUEST, *second, p)
        }
        ClientMessage::Command { device, payload } => {
            return Some(message::command(*device, payload));
        }
        ClientMessage::Config { device, payload } => (message::CONFIG, *device, payload.to_vec()),
        ClientMessage::Unknown { .. } | ClientMessage::Oversized { .. } => return None,
    };
    let mut v = vec![first, second];
    v.extend(u16::try_from(payload.len()).unwrap().to_be_bytes());
    v.extend(payload);
    Some(v)
}

fn decode_client(data: &[u8], chunks: &[usize]) -> (Vec<ClientMessage>, String) {
    let mut d = ClientDecoder::new();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut rest = data;
    let mut sizes = chunks.iter().cycle();
    while !rest.is_empty() {
        let n = (*sizes.next().unwrap()).clamp(1, rest.len());
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
        while let Some(m) = d.decode(&mut buf) {
            out.push(m);
        }
        assert!(
            buf.len() < CLIENT_HEADER + MAX_PAYLOAD,
            "{} bytes stay buffered",
            buf.len()
        );
    }
    (out, format!("{:?}", d.decode_eof(&buf)))
}

fn check_client_decoder(data: &[u8], chunks: &[usize]) {
    // Whole: each message checked against the bytes it consumed.
    let mut d = ClientDecoder::new();
    let mut buf = BytesMut::from(data);
    let mut whole = Vec::new();
    let mut at = 0;
    loop {
        let before = buf.len();
        let Some(m) = d.decode(&mut buf) else { break };
        let used = before - buf.len();
        if let Some(bytes) = encode_client(&m) {
            assert_eq!(&data[at..at + used], &bytes[..], "{m:?}");
        }
        at += used;
        whole.push(m);
    }
    assert!(buf.len() < CLIENT_HEADER + MAX_PAYLOAD);
    let whole_eof = format!("{:?}", d.decode_eof(&buf));
    let (split, split_eof) = decode_client(data, chunks);
    assert_eq!(whole, split, "chunks {chunks:?}");
    assert_eq!(whole_eof, split_eof);
}

/// A data payload of a fixed-layout device decodes and re-encodes to itself.
fn check_payload(device: u8, p: &[u8]) {
    let again = match device {
        b'p' => Position::decode(p).map(|x| x.encode()),
        b's' => Sonar::decode(p).map(|x| x.encode()),
        b'l' => Laser::decode(p).map(|x| x.encode()),
        b'm' => Misc::decode(p).map(|x| x.encode()),
        b'g' => Gripper::decode(p).map(|x| x.encode()),
        b'z' => Ptz::decode(p).map(|x| x.encode()),
        b'c' => PositionCommand::decode(p).map(|x| x.encode()),
        b'v' => {
            // Vision is not a bijection (counts over 10, bytes of 0); its encoding is a
            // fixed point of decode-then-encode.
            if let Ok(v) = Vision::decode(p) {
                let e = v.encode();
                let w = Vision::decode(&e).expect("an encoded vision packet decodes");
                assert_eq!(w.encode(), e);
            }
            return;
        }
        ext::PACKET => {
            if let Ok(Extension::DeviceList(entries)) = ext::decode(p) {
                if entries.iter().all(|e| e.driver.len() <= 255) {
                    let packet = ext::device_list(&entries);
                    assert_eq!(
                        ext::decode(&packet[3..]),
                        Ok(Extension::DeviceList(entries))
                    );
                }
            }
            return;
        }
        _ => return,
    };
    if let Ok(bytes) = again {
        assert_eq!(bytes, p, "device {device}");
    }
}

fn check_server_decoder(data: &[u8], timestamps: bool) {
    let mut rest = data;
    while let Ok(Some((m, used))) = message::decode_server(rest, timestamps) {
        assert!(used >= message::SERVER_HEADER && used <= rest.len());
        let bytes = match &m {
            ServerMessage::Reply(pairs) => message::reply(pairs),
            ServerMessage::Data {
                device,
                timestamp,
                payload,
            } => {
                assert_eq!(timestamp.is_some(), timestamps);
                check_payload(*device, payload);
                message::data(*device, *timestamp, payload)
            }
        };
        assert_eq!(bytes, &rest[..used]);
        rest = &rest[used..];
    }
}

fuzz_target!(|data: &[u8]| {
    // The first bytes choose the chunk sizes; all of the input is decoded.
    let chunks: Vec<usize> = match data.first() {
        Some(&b) => vec![usize::from(b % 7) + 1, usize::from(b >> 3) + 1, 4096, 3],
        None => vec![1],
    };
    check_client_decoder(data, &chunks);
    check_server_decoder(data, false);
    check_server_decoder(data, true);
});
