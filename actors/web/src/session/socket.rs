//! A web connection's socket, read and written apart: tungstenite reads the client's
//! frames (unmasking, reassembly, size limits, answering pings and the close handshake),
//! and the session's writer frames what it sends itself, straight into one buffer per
//! round that goes to the socket in one write.
//!
//! Writing our own frames is what keeps a browser client as cheap as a TCP client: a
//! server's frames are never masked, so a frame is a 2-10 byte header before the payload
//! (RFC 6455 5.2), and making it ourselves spares a copy of each message into its own
//! `Message` and tungstenite's per-frame bookkeeping. What tungstenite itself writes (a
//! pong, the echo of a client's close) it writes into [`Replies`], which the writer sends
//! ahead of its own frames at its next round, whole frames only: nothing of ours can land
//! inside one of tungstenite's.

use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf, ReadHalf, WriteHalf};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// The upgraded connection under a WebSocket.
type Io = TokioIo<Upgraded>;

/// Frame opcodes (RFC 6455 5.2).
const OP_TEXT: u8 = 0x1;
pub(super) const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

/// The half of the connection the writer writes to.
pub(super) type WriteSide = WriteHalf<Io>;

/// The bytes tungstenite wrote (its pongs and close echoes), waiting for the writer.
pub(super) type Replies = Rc<RefCell<Vec<u8>>>;

/// One web connection: the WebSocket that reads the client's messages, and the write half
/// the session's writer frames its messages into.
pub struct Socket {
    pub(super) stream: WebSocketStream<ReadSide>,
    pub(super) write: WriteSide,
    pub(super) replies: Replies,
    /// Wakes the writer when tungstenite has written a reply.
    pub(super) wake: Rc<Notify>,
}

impl Socket {
    /// The WebSocket over an upgraded connection (the handshake done), reading by
    /// `config`.
    pub async fn open(io: Io, config: WebSocketConfig) -> Socket {
        let (read, write) = tokio::io::split(io);
        let replies = Replies::default();
        let wake = Rc::new(Notify::new());
        let side = ReadSide {
            read,
            replies: replies.clone(),
            wake: wake.clone(),
        };
        let stream = WebSocketStream::from_raw_socket(side, Role::Server, Some(config)).await;
        Socket {
            stream,
            write,
            replies,
            wake,
        }
    }
}

/// What tungstenite reads from and writes to: the connection's read half, and
/// [`Replies`] for what it writes.
pub struct ReadSide {
    read: ReadHalf<Io>,
    replies: Replies,
    wake: Rc<Notify>,
}

impl AsyncRead for ReadSide {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.read).poll_read(cx, buf)
    }
}

impl AsyncWrite for ReadSide {
    /// Takes all of `buf` (whole frames stay whole) and wakes the writer.
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.replies.borrow_mut().extend_from_slice(buf);
        self.wake.notify_one();
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Appends a final (unfragmented), unmasked frame of `opcode` whose payload is `parts`
/// one after the other.
pub(super) fn frame_into(out: &mut Vec<u8>, opcode: u8, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    out.reserve(10 + len);
    out.push(0x80 | opcode);
    match len {
        0..=125 => out.push(len as u8),
        126..=0xFFFF => {
            out.push(126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    for p in parts {
        out.extend_from_slice(p);
    }
}

/// Appends `message` as one frame; says whether it was the close frame (after which
/// nothing more may be sent).
pub(super) fn message_into(out: &mut Vec<u8>, message: &Message) -> bool {
    match message {
        Message::Text(t) => frame_into(out, OP_TEXT, &[t.as_bytes()]),
        Message::Binary(b) => frame_into(out, OP_BINARY, &[b]),
        Message::Ping(b) => frame_into(out, OP_PING, &[b]),
        Message::Pong(b) => frame_into(out, OP_PONG, &[b]),
        Message::Close(c) => {
            close_into(out, c.as_ref());
            return true;
        }
        // Never queued: the session sends whole messages only.
        Message::Frame(_) => {}
    }
    false
}

/// Appends a close frame: the code and reason, if any (a reason is cut to what fits a
/// control frame's 125 bytes, at a character boundary).
fn close_into(out: &mut Vec<u8>, close: Option<&CloseFrame>) {
    let Some(c) = close else {
        return frame_into(out, OP_CLOSE, &[]);
    };
    let code = u16::from(c.code).to_be_bytes();
    let mut reason: &str = &c.reason;
    while reason.len() > 123 {
        let mut end = 123;
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        reason = &reason[..end];
    }
    frame_into(out, OP_CLOSE, &[&code, reason.as_bytes()]);
}

/// A `messageData` frame made of its parts (the Foxglove header before the shared
/// payload), for the tests: the same bytes as a binary frame of the whole.
#[cfg(test)]
fn binary_of(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    frame_into(&mut out, OP_BINARY, parts);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

    /// Reads back what `frame_into` made with tungstenite's own client-side reader.
    fn read_back(bytes: Vec<u8>) -> Vec<Message> {
        let mut ws = tokio_tungstenite::tungstenite::WebSocket::from_raw_socket(
            io::Cursor::new(bytes),
            Role::Client,
            None,
        );
        let mut got = Vec::new();
        while let Ok(m) = ws.read() {
            got.push(m);
        }
        got
    }

    #[test]
    fn frames_of_every_length_class_read_back_as_the_messages() {
        let mut out = Vec::new();
        let sizes = [0usize, 1, 125, 126, 65_535, 65_536, 200_000];
        for &n in &sizes {
            let payload: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            message_into(&mut out, &Message::Binary(Bytes::from(payload)));
        }
        message_into(&mut out, &Message::Text("héllo".into()));
        let got = read_back(out);
        assert_eq!(got.len(), sizes.len() + 1);
        for (m, &n) in got.iter().zip(&sizes) {
            match m {
                Message::Binary(b) => {
                    assert_eq!(b.len(), n);
                    assert!(b.iter().enumerate().all(|(i, &x)| x == (i % 251) as u8));
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(got[sizes.len()], Message::Text("héllo".into()));
    }

    #[test]
    fn a_frame_of_parts_is_the_frame_of_the_whole() {
        let whole = binary_of(&[b"\x01abcd12345678payload"]);
        assert_eq!(binary_of(&[b"\x01abcd", b"12345678", b"payload"]), whole);
    }

    #[test]
    fn a_close_frame_carries_its_code_and_a_reason_cut_to_fit() {
        let mut out = Vec::new();
        let long = "é".repeat(100);
        let closing = message_into(
            &mut out,
            &Message::Close(Some(CloseFrame {
                code: CloseCode::Policy,
                reason: long.clone().into(),
            })),
        );
        assert!(closing);
        match read_back(out).first() {
            Some(Message::Close(Some(c))) => {
                assert_eq!(c.code, CloseCode::Policy);
                assert!(c.reason.len() <= 123 && long.starts_with(c.reason.as_str()));
            }
            other => panic!("{other:?}"),
        }
    }
}
