//! The server's decoder of client messages (the core reads every TCP client's bytes with it, as
//! `player_core::codec`).
//!
//! Pure: bytes in, typed [`ClientMessage`]s out; no sockets, actors or clocks. Every client
//! message has a 4-byte header (type, device or `r`, u16 size) and `size` bytes of payload
//! (manual Table 9). "Not enough bytes yet" is a normal state ([`ClientDecoder::decode`]
//! returns `None`). A message the stream can survive (an unknown type, a payload larger than
//! [`MAX_PAYLOAD`]) is reported as an item and its payload is skipped as it arrives, without
//! ever buffering it: a size field is bounded before anything is allocated for it. The only
//! framing error is a connection that ends in the middle of a message
//! ([`ClientDecoder::decode_eof`]).

use crate::message::{CLIENT_HEADER, COMMAND, CONFIG, REQUEST};
use bytes::{Buf, Bytes, BytesMut};
use std::fmt;

pub use crate::MAX_PAYLOAD;

/// One message from a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientMessage {
    /// `dr`: a device request, its `<device><access>` pairs in order.
    Request {
        /// The second header byte (the manual requires `r`; 0.7.4a does not check it).
        second: u8,
        /// The pairs.
        pairs: Vec<(u8, u8)>,
        /// A trailing byte left over by an odd size, ignored.
        odd_byte: Option<u8>,
    },
    /// `c`: a command for one device.
    Command {
        /// The device code.
        device: u8,
        /// The `<command>` field.
        payload: Bytes,
    },
    /// `x`: a configuration request.
    Config {
        /// The device code (`y` for the server itself).
        device: u8,
        /// The config code and its arguments (may be empty if the client sent size 0).
        payload: Bytes,
    },
    /// A message whose first byte is not `d`, `c` or `x`; its payload is skipped.
    Unknown {
        /// The first byte.
        kind: u8,
        /// The second byte.
        second: u8,
        /// The size field.
        size: usize,
    },
    /// A message whose size field exceeds [`MAX_PAYLOAD`]; its payload is skipped.
    Oversized {
        /// The first byte.
        kind: u8,
        /// The second byte.
        second: u8,
        /// The size field.
        size: usize,
    },
}

/// The connection ended in the middle of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncated {
    /// Bytes of the unfinished message that had arrived.
    pub have: usize,
    /// Bytes the message needed (header plus payload), when the header was complete.
    pub need: Option<usize>,
}

impl fmt::Display for Truncated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.need {
            Some(need) => write!(
                f,
                "connection closed mid-message: {} of {} bytes",
                self.have, need
            ),
            None => write!(
                f,
                "connection closed mid-header: {} of {} bytes",
                self.have, CLIENT_HEADER
            ),
        }
    }
}

impl std::error::Error for Truncated {}

/// Incremental decoder of one client's byte stream.
#[derive(Debug, Default)]
pub struct ClientDecoder {
    /// Payload bytes still to discard from a skipped message.
    skip: usize,
    /// Total of the message being skipped, for error reports.
    skip_total: usize,
}

impl ClientDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the stream is in the middle of a message (after [`ClientDecoder::decode`]
    /// returned `None`): part of a header or payload has arrived, or a skipped payload is
    /// still streaming past.
    pub fn mid_message(&self, buf: &[u8]) -> bool {
        self.skip > 0 || !buf.is_empty()
    }

    /// Takes the next complete message from the front of `buf`, or returns `None` when more
    /// bytes are needed. Bytes of skipped payloads are consumed as they arrive.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Option<ClientMessage> {
        if self.skip > 0 {
            let n = self.skip.min(buf.len());
            buf.advance(n);
            self.skip -= n;
            if self.skip > 0 {
                return None;
            }
        }
        if buf.len() < CLIENT_HEADER {
            return None;
        }
        let kind = buf[0];
        let second = buf[1];
        let size = usize::from(u16::from_be_bytes([buf[2], buf[3]]));
        let known = matches!(kind, REQUEST | COMMAND | CONFIG);
        if !known || size > MAX_PAYLOAD {
            buf.advance(CLIENT_HEADER);
            let n = size.min(buf.len());
            buf.advance(n);
            self.skip = size - n;
            self.skip_total = CLIENT_HEADER + size;
            return Some(if known {
                ClientMessage::Oversized { kind, second, size }
            } else {
                ClientMessage::Unknown { kind, second, size }
            });
        }
        if buf.len() < CLIENT_HEADER + size {
            buf.reserve(CLIENT_HEADER + size - buf.len());
            return None;
        }
        buf.advance(CLIENT_HEADER);
        let payload = buf.split_to(size).freeze();
        Some(match kind {
            REQUEST => {
                let pairs = payload.chunks_exact(2).map(|p| (p[0], p[1])).collect();
                let odd_byte = (size % 2 == 1).then(|| payload[size - 1]);
                ClientMessage::Request {
                    second,
                    pairs,
                    odd_byte,
                }
            }
            COMMAND => ClientMessage::Command {
                device: second,
                payload,
            },
            _ => ClientMessage::Config {
                device: second,
                payload,
            },
        })
    }

    /// Checks the stream's end: bytes of an unfinished message are an error.
    pub fn decode_eof(&self, buf: &BytesMut) -> Result<(), Truncated> {
        if self.skip > 0 {
            return Err(Truncated {
                have: self.skip_total - self.skip,
                need: Some(self.skip_total),
            });
        }
        if buf.is_empty() {
            return Ok(());
        }
        let need = (buf.len() >= CLIENT_HEADER)
            .then(|| CLIENT_HEADER + usize::from(u16::from_be_bytes([buf[2], buf[3]])));
        Err(Truncated {
            have: buf.len(),
            need,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message;

    fn decode_all(stream: &[u8]) -> Vec<ClientMessage> {
        let mut d = ClientDecoder::new();
        let mut buf = BytesMut::from(stream);
        let mut out = Vec::new();
        while let Some(m) = d.decode(&mut buf) {
            out.push(m);
        }
        assert!(buf.is_empty(), "left over: {buf:?}");
        out
    }

    fn sample_stream() -> (Vec<u8>, Vec<ClientMessage>) {
        let mut s = Vec::new();
        s.extend(message::request(&[(b's', b'r'), (b'p', b'w')]));
        s.extend(message::command(b'p', &[0, 100, 0, 20]));
        s.extend(message::config(b'y', b'f', &[0, 5]));
        s.extend([b'q', b'z', 0, 3, 1, 2, 3]);
        s.extend(message::config(b'p', b'R', &[]));
        let expected = vec![
            ClientMessage::Request {
                second: b'r',
                pairs: vec![(b's', b'r'), (b'p', b'w')],
                odd_byte: None,
            },
            ClientMessage::Command {
                device: b'p',
                payload: Bytes::from_static(&[0, 100, 0, 20]),
            },
            ClientMessage::Config {
                device: b'y',
                payload: Bytes::from_static(b"f\x00\x05"),
            },
            ClientMessage::Unknown {
                kind: b'q',
                second: b'z',
                size: 3,
            },
            ClientMessage::Config {
                device: b'p',
                payload: Bytes::from_static(b"R"),
            },
        ];
        (s, expected)
    }

    #[test]
    fn round_trip_of_every_message_kind() {
        let (s, expected) = sample_stream();
        assert_eq!(decode_all(&s), expected);
    }

    #[test]
    fn split_at_every_byte_offset() {
        let (s, expected) = sample_stream();
        for cut in 0..=s.len() {
            let mut d = ClientDecoder::new();
            let mut buf = BytesMut::from(&s[..cut]);
            let mut out = Vec::new();
            while let Some(m) = d.decode(&mut buf) {
                out.push(m);
            }
            buf.extend_from_slice(&s[cut..]);
            while let Some(m) = d.decode(&mut buf) {
                out.push(m);
            }
            assert_eq!(out, expected, "cut at {cut}");
            assert!(d.decode_eof(&buf).is_ok());
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let (s, expected) = sample_stream();
        let mut d = ClientDecoder::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for &b in &s {
            buf.extend_from_slice(&[b]);
            while let Some(m) = d.decode(&mut buf) {
                out.push(m);
            }
        }
        assert_eq!(out, expected);
    }

    #[test]
    fn hostile_size_is_skipped_without_buffering() {
        let mut d = ClientDecoder::new();
        let mut buf = BytesMut::from(&[b'c', b'p', 0xFF, 0xFF][..]);
        assert_eq!(
            d.decode(&mut buf),
            Some(ClientMessage::Oversized {
                kind: b'c',
                second: b'p',
                size: 65535
            })
        );
        // Feed the 65535 payload bytes in chunks: none of them is kept.
        let mut fed = 0;
        while fed < 65535 {
            let n = 1000.min(65535 - fed);
            buf.extend_from_slice(&vec![0xAB; n]);
            assert_eq!(d.decode(&mut buf), None);
            assert!(buf.is_empty());
            fed += n;
        }
        assert!(buf.capacity() < 8192, "capacity {}", buf.capacity());
        // Framing is kept: the next message decodes.
        buf.extend_from_slice(&message::config(b'y', b'd', &[]));
        assert_eq!(
            d.decode(&mut buf),
            Some(ClientMessage::Config {
                device: b'y',
                payload: Bytes::from_static(b"d")
            })
        );
    }

    #[test]
    fn a_size_just_under_the_bound_is_buffered_and_just_over_is_skipped() {
        let mut s = vec![b'x', b'z'];
        s.extend((MAX_PAYLOAD as u16).to_be_bytes());
        s.extend(vec![1; MAX_PAYLOAD]);
        assert!(matches!(
            decode_all(&s)[0],
            ClientMessage::Config { device: b'z', .. }
        ));
        let mut s = vec![b'x', b'z'];
        s.extend((MAX_PAYLOAD as u16 + 1).to_be_bytes());
        s.extend(vec![1; MAX_PAYLOAD + 1]);
        assert!(matches!(
            decode_all(&s)[0],
            ClientMessage::Oversized { size, .. } if size == MAX_PAYLOAD + 1
        ));
    }

    #[test]
    fn a_partial_header_never_reserves_more_than_the_bound() {
        let mut d = ClientDecoder::new();
        let mut buf = BytesMut::from(&[b'd', b'r', 0x10, 0x00][..]);
        assert_eq!(d.decode(&mut buf), None);
        assert!(buf.capacity() <= CLIENT_HEADER + MAX_PAYLOAD);
    }

    #[test]
    fn odd_request_keeps_the_pairs_and_reports_the_byte() {
        let s = [b'd', b'r', 0, 3, b's', b'r', b'p'];
        assert_eq!(
            decode_all(&s),
            vec![ClientMessage::Request {
                second: b'r',
                pairs: vec![(b's', b'r')],
                odd_byte: Some(b'p')
            }]
        );
    }

    #[test]
    fn empty_request_and_empty_config() {
        let s = [b'd', b'r', 0, 0, b'x', b'y', 0, 0];
        assert_eq!(
            decode_all(&s),
            vec![
                ClientMessage::Request {
                    second: b'r',
                    pairs: vec![],
                    odd_byte: None
                },
                ClientMessage::Config {
                    device: b'y',
                    payload: Bytes::new()
                }
            ]
        );
    }

    #[test]
    fn eof_mid_message_is_an_error_naming_the_sizes() {
        let mut d = ClientDecoder::new();
        let mut buf = BytesMut::from(&[b'c', b'p', 0, 4, 0][..]);
        assert_eq!(d.decode(&mut buf), None);
        assert_eq!(
            d.decode_eof(&buf),
            Err(Truncated {
                have: 5,
                need: Some(8)
            })
        );
        let buf = BytesMut::from(&[b'c', b'p'][..]);
        assert_eq!(
            ClientDecoder::new().decode_eof(&buf),
            Err(Truncated {
                have: 2,
                need: None
            })
        );
        let mut d = ClientDecoder::new();
        let mut buf = BytesMut::from(&[b'x', b'y', 0xFF, 0xFF, 1, 2][..]);
        assert!(d.decode(&mut buf).is_some());
        assert_eq!(
            d.decode_eof(&buf),
            Err(Truncated {
                have: 6,
                need: Some(65539)
            })
        );
    }

    #[test]
    fn random_garbage_never_panics_and_is_consumed() {
        // A small deterministic generator: garbage of every shape is framed or skipped.
        let mut x: u32 = 0x1234_5678;
        for _ in 0..200 {
            let mut s = Vec::new();
            for _ in 0..512 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                s.push(x as u8);
            }
            let mut d = ClientDecoder::new();
            let mut buf = BytesMut::from(&s[..]);
            while d.decode(&mut buf).is_some() {}
            assert!(buf.len() < CLIENT_HEADER + MAX_PAYLOAD);
        }
    }
}
