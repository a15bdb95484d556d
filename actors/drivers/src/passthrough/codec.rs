//! The passthrough driver's byte layouts, as a client of the remote server: the configs it
//! sends when it connects, and the framing of what the remote sends back (replies, data
//! with or without the timestamp prefix, and the extensions' `y` packets, which never carry
//! the prefix). Pure: slices in, typed values out. The layouts themselves are
//! `player_proto`'s.

use player_proto::ext::{self, Extension};
use player_proto::message::{self, FrameError, ServerMessage};
use player_proto::{config, device};

/// The most bytes one message from the remote can take: the 3-byte header and a u16 size.
pub const MAX_MESSAGE: usize = message::SERVER_HEADER + u16::MAX as usize;

/// One message from the remote server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A 0.7.4a message: the reply to a device request, or a reading of a remote device
    /// (with the remote driver's timestamp when the timestamp extension is on).
    Message(ServerMessage),
    /// An extension packet (a notice or the device list).
    Extension(Extension),
    /// A `y` packet that does not parse (skipped: the framing is intact).
    BadExtension(&'static str),
}

/// Decodes one message from the front of `buf`: `Ok(None)` when more bytes are needed,
/// else the message and how many bytes it took. `timestamps`: whether the timestamp
/// extension was turned on (data payloads then lead with 8 timestamp bytes).
pub fn decode(buf: &[u8], timestamps: bool) -> Result<Option<(Inbound, usize)>, FrameError> {
    // `y` packets (notices, device list) never carry the timestamp prefix.
    let is_ext = buf.first() == Some(&ext::PACKET);
    let Some((m, n)) = message::decode_server(buf, timestamps && !is_ext)? else {
        return Ok(None);
    };
    let inbound = match m {
        ServerMessage::Data { payload, .. } if is_ext => match ext::decode(&payload) {
            Ok(e) => Inbound::Extension(e),
            Err(e) => Inbound::BadExtension(e.0),
        },
        m => Inbound::Message(m),
    };
    Ok(Some((inbound, n)))
}

/// What the driver asks of the remote when it connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello<'a> {
    /// The remote's shared access key, if it has one.
    pub key: Option<&'a [u8]>,
    /// Whether to use the extensions (error channel, timestamps, push-new data mode, device
    /// list): false for a server that speaks only 0.7.4a.
    pub extensions: bool,
    /// The data frequency asked of the remote, in Hz.
    pub frequency: u16,
}

impl Hello<'_> {
    /// The configs to send, in order, as one buffer: the key first (a remote that refuses
    /// keyless clients wants it before anything else), then the error channel, timestamps,
    /// push-new data mode (each reading once, as soon as it is new) and the frequency.
    pub fn encode(&self) -> Result<Vec<u8>, ext::ExtError> {
        let mut v = Vec::new();
        if let Some(k) = self.key {
            v.extend(ext::key(k)?);
        }
        if self.extensions {
            v.extend(ext::error_channel(true));
            v.extend(message::config(device::SERVER, config::TIMESTAMPS, &[1]));
            let push_new = player_proto::DataMode::PushNew.code();
            v.extend(message::config(
                device::SERVER,
                config::DATA_MODE,
                &[push_new],
            ));
        }
        v.extend(message::config(
            device::SERVER,
            config::FREQUENCY,
            &self.frequency.to_be_bytes(),
        ));
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_proto::ext::kind;

    #[test]
    fn data_notices_and_replies_decode_at_every_split() {
        let mut stream = message::reply(&[(b'p', b'a')]);
        stream.extend(message::data(b'p', Some((7, 8)), &[5; 21]));
        stream.extend(ext::notice(kind::FAILED, b'p', "link lost"));
        stream.extend(message::data(b'l', Some((9, 10)), &[1; 722]));
        for cut in 0..=stream.len() {
            let mut got = Vec::new();
            let mut buf = stream[..cut].to_vec();
            let mut rest = &stream[cut..];
            loop {
                while let Some((m, n)) = decode(&buf, true).unwrap() {
                    got.push(m);
                    buf.drain(..n);
                }
                if rest.is_empty() {
                    break;
                }
                buf.push(rest[0]);
                rest = &rest[1..];
            }
            assert!(buf.is_empty(), "cut at {cut}");
            assert_eq!(got.len(), 4, "cut at {cut}");
            assert_eq!(
                got[0],
                Inbound::Message(ServerMessage::Reply(vec![(b'p', b'a')]))
            );
            assert_eq!(
                got[1],
                Inbound::Message(ServerMessage::Data {
                    device: b'p',
                    timestamp: Some((7, 8)),
                    payload: vec![5; 21]
                })
            );
            match &got[2] {
                Inbound::Extension(Extension::Notice(n)) => {
                    assert_eq!(
                        (n.kind, n.device, n.text.as_str()),
                        (b'f', b'p', "link lost")
                    )
                }
                other => panic!("not a notice: {other:?}"),
            }
        }
    }

    #[test]
    fn a_short_timestamped_packet_and_a_bad_extension() {
        assert!(decode(&[b'm', 0, 3, 1, 2, 3], true).is_err());
        let (m, n) = decode(&[b'y', 0, 1, b'l'], true).unwrap().unwrap();
        assert_eq!(n, 4);
        assert!(matches!(m, Inbound::BadExtension(_)), "{m:?}");
        assert_eq!(decode(&[b'l', 0xff, 0xff, 0], true).unwrap(), None);
    }

    #[test]
    fn the_hello_presents_the_key_first() {
        let h = Hello {
            key: Some(b"k1"),
            extensions: true,
            frequency: 50,
        };
        let v = h.encode().unwrap();
        assert_eq!(&v[..7], &[b'x', b'y', 0, 3, b'k', b'k', b'1']);
        assert_eq!(&v[v.len() - 7..], &[b'x', b'y', 0, 3, b'f', 0, 50]);
        let plain = Hello {
            key: None,
            extensions: false,
            frequency: 10,
        };
        assert_eq!(plain.encode().unwrap(), [b'x', b'y', 0, 3, b'f', 0, 10]);
        let long = [b'k'; 65];
        let bad = Hello {
            key: Some(&long),
            ..plain
        };
        assert!(bad.encode().is_err());
    }
}
