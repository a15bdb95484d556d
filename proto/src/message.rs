//! Message framing in both directions (manual Tables 9 and 10).
//!
//! Client to server, a 4-byte header: `d r <size u16>` then pairs, `c <device> <size u16>`
//! then a command, `x <device> <size u16>` then a config code and its arguments.
//! Server to client, a 3-byte header: `r <size u16>` then pairs, or `<device> <size u16>`
//! then data (with the timestamp extension on, 8 bytes of timestamp lead the data and are
//! counted in the size).
//!
//! The encoders here build whole messages. [`decode_server`] is an incremental decoder of
//! the server's messages for clients: it says how many bytes one message needs and never
//! reads past the slice.

use std::fmt;

/// Size of a client message header.
pub const CLIENT_HEADER: usize = 4;
/// Size of a server message header.
pub const SERVER_HEADER: usize = 3;
/// Size of the timestamp that leads each data payload when timestamps are on.
pub const TIMESTAMP_SIZE: usize = 8;
/// First byte of a device request.
pub const REQUEST: u8 = b'd';
/// Second byte of a device request.
pub const REQUEST_SECOND: u8 = b'r';
/// First byte of a command.
pub const COMMAND: u8 = b'c';
/// First byte of a config.
pub const CONFIG: u8 = b'x';
/// First byte of a reply.
pub const REPLY: u8 = b'r';

fn with_header(first: u8, second: u8, payload: &[u8]) -> Vec<u8> {
    let len = u16::try_from(payload.len()).expect("payload fits a u16 size field");
    let mut v = Vec::with_capacity(CLIENT_HEADER + payload.len());
    v.push(first);
    v.push(second);
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// A device request `dr<size><device><access>...`.
pub fn request(pairs: &[(u8, u8)]) -> Vec<u8> {
    let payload: Vec<u8> = pairs.iter().flat_map(|&(d, a)| [d, a]).collect();
    with_header(REQUEST, REQUEST_SECOND, &payload)
}

/// A command `c<device><size><command>`.
pub fn command(device: u8, payload: &[u8]) -> Vec<u8> {
    with_header(COMMAND, device, payload)
}

/// A config `x<device><size><code><args>`.
pub fn config(device: u8, code: u8, args: &[u8]) -> Vec<u8> {
    let mut payload = Vec::with_capacity(1 + args.len());
    payload.push(code);
    payload.extend_from_slice(args);
    with_header(CONFIG, device, &payload)
}

/// A reply `r<size><device><access>...`.
pub fn reply(pairs: &[(u8, u8)]) -> Vec<u8> {
    let len = u16::try_from(2 * pairs.len()).expect("reply fits a u16 size field");
    let mut v = Vec::with_capacity(SERVER_HEADER + 2 * pairs.len());
    v.push(REPLY);
    v.extend_from_slice(&len.to_be_bytes());
    for &(d, a) in pairs {
        v.push(d);
        v.push(a);
    }
    v
}

/// The 3-byte header of a data packet whose `<data>` field is `len` bytes.
pub fn data_header(device: u8, len: u16) -> [u8; 3] {
    let [hi, lo] = len.to_be_bytes();
    [device, hi, lo]
}

/// The 8-byte timestamp of a data packet (the `x y t` extension): u32 seconds, then u32
/// microseconds since the Unix epoch, both big-endian.
pub fn encode_timestamp(sec: u32, usec: u32) -> [u8; TIMESTAMP_SIZE] {
    let mut b = [0u8; TIMESTAMP_SIZE];
    b[..4].copy_from_slice(&sec.to_be_bytes());
    b[4..].copy_from_slice(&usec.to_be_bytes());
    b
}

/// The timestamp (seconds, microseconds) at the start of `b`, if `b` holds one.
pub fn decode_timestamp(b: &[u8]) -> Option<(u32, u32)> {
    let s = u32::from_be_bytes(b.get(..4)?.try_into().ok()?);
    let us = u32::from_be_bytes(b.get(4..TIMESTAMP_SIZE)?.try_into().ok()?);
    Some((s, us))
}

/// A whole data packet, optionally with a timestamp (seconds, microseconds).
pub fn data(device: u8, timestamp: Option<(u32, u32)>, payload: &[u8]) -> Vec<u8> {
    let ts = if timestamp.is_some() {
        TIMESTAMP_SIZE
    } else {
        0
    };
    let len = u16::try_from(ts + payload.len()).expect("data fits a u16 size field");
    let mut v = Vec::with_capacity(SERVER_HEADER + ts + payload.len());
    v.extend_from_slice(&data_header(device, len));
    if let Some((s, us)) = timestamp {
        v.extend_from_slice(&encode_timestamp(s, us));
    }
    v.extend_from_slice(payload);
    v
}

/// A message from the server, as a client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMessage {
    /// The reply to a device request: each device with the access now held (`e` on error).
    Reply(Vec<(u8, u8)>),
    /// One device's data.
    Data {
        /// The device code.
        device: u8,
        /// The driver's timestamp (seconds, microseconds since the Unix epoch), when the
        /// client turned timestamps on.
        timestamp: Option<(u32, u32)>,
        /// The `<data>` field.
        payload: Vec<u8>,
    },
}

/// A server message that cannot be framed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A reply with an odd number of bytes.
    OddReply(usize),
    /// A data packet too short to hold the timestamp the client asked for.
    NoTimestamp {
        /// The device code.
        device: u8,
        /// The packet's size field.
        size: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::OddReply(n) => write!(f, "reply of odd size {n}"),
            FrameError::NoTimestamp { device, size } => write!(
                f,
                "data packet for '{}' of size {size} cannot hold an 8-byte timestamp",
                char::from(*device)
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// Decodes one server message from the front of `buf`.
///
/// Returns `Ok(None)` when more bytes are needed, or the message and how many bytes it
/// took. `timestamps` says whether the client turned the timestamp extension on.
pub fn decode_server(
    buf: &[u8],
    timestamps: bool,
) -> Result<Option<(ServerMessage, usize)>, FrameError> {
    if buf.len() < SERVER_HEADER {
        return Ok(None);
    }
    let size = usize::from(u16::from_be_bytes([buf[1], buf[2]]));
    let total = SERVER_HEADER + size;
    if buf.len() < total {
        return Ok(None);
    }
    let body = &buf[SERVER_HEADER..total];
    let message = if buf[0] == REPLY {
        if size % 2 != 0 {
            return Err(FrameError::OddReply(size));
        }
        ServerMessage::Reply(body.chunks(2).map(|p| (p[0], p[1])).collect())
    } else if timestamps {
        if size < TIMESTAMP_SIZE {
            return Err(FrameError::NoTimestamp {
                device: buf[0],
                size,
            });
        }
        ServerMessage::Data {
            device: buf[0],
            timestamp: decode_timestamp(body),
            payload: body[TIMESTAMP_SIZE..].to_vec(),
        }
    } else {
        ServerMessage::Data {
            device: buf[0],
            timestamp: None,
            payload: body.to_vec(),
        }
    };
    Ok(Some((message, total)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_matches_the_manual_example() {
        assert_eq!(
            request(&[(b's', b'r'), (b'p', b'w')]),
            [0x64, 0x72, 0x00, 0x04, 0x73, 0x72, 0x70, 0x77]
        );
        assert_eq!(
            reply(&[(b's', b'r'), (b'p', b'w')]),
            [0x72, 0x00, 0x04, 0x73, 0x72, 0x70, 0x77]
        );
    }

    #[test]
    fn configs_match_table_8() {
        assert_eq!(config(b'y', b'f', &[0, 5]), [0x78, 0x79, 0, 3, 0x66, 0, 5]);
        assert_eq!(config(b'y', b'd', &[]), [0x78, 0x79, 0, 1, 0x64]);
        assert_eq!(config(b'p', b'R', &[]), [0x78, 0x70, 0, 1, 0x52]);
    }

    #[test]
    fn server_messages_decode_at_every_split() {
        let mut stream = reply(&[(b'p', b'a')]);
        stream.extend(data(b'p', None, &[7; 21]));
        stream.extend(data(b'm', None, &[1, 2, 3]));
        for cut in 0..=stream.len() {
            let mut got = Vec::new();
            let mut buf: Vec<u8> = stream[..cut].to_vec();
            let mut rest = &stream[cut..];
            loop {
                while let Some((m, n)) = decode_server(&buf, false).unwrap() {
                    got.push(m);
                    buf.drain(..n);
                }
                if rest.is_empty() {
                    break;
                }
                buf.push(rest[0]);
                rest = &rest[1..];
            }
            assert_eq!(got.len(), 3, "cut at {cut}");
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn timestamps_are_counted_in_the_size() {
        let packet = data(b'm', Some((1, 2)), &[1, 2, 3]);
        assert_eq!(&packet[..3], &[b'm', 0, 11]);
        let (m, n) = decode_server(&packet, true).unwrap().unwrap();
        assert_eq!(n, packet.len());
        assert_eq!(
            m,
            ServerMessage::Data {
                device: b'm',
                timestamp: Some((1, 2)),
                payload: vec![1, 2, 3]
            }
        );
        assert!(decode_server(&[b'm', 0, 3, 1, 2, 3], true).is_err());
    }
}
