//! The session's reader task: reads the client's bytes, decodes them and hands the actor
//! one message at a time, waiting until each has been dealt with (so a request finishes
//! before the next message is looked at, and a client whose output is backed up is not
//! read at all: its input waits in the kernel, bounded by the socket buffer). A message
//! that was started but not finished within `partial_timeout` ends the session.
//!
//! Most clients send a few messages at the start and then only read, so an idle reader
//! holds as little as it can: no read buffer (one is allocated when bytes arrive and let
//! go once every message in it has been handed over, so only a partial message keeps
//! one), and the task's state is small: it waits on the socket's own readiness, and the
//! hand-over to the actor and the partial-message deadline, which are large futures, are
//! boxed while they run (about 250 bytes a client instead of about 900).

use super::{Incoming, ReadEnded, Session};
use crate::codec::ClientDecoder;
use actix::prelude::*;
use bytes::BytesMut;
use std::io;
use std::rc::Rc;
use std::time::Duration;
use tokio::net::TcpStream;

/// Room a read buffer is given when bytes arrive (more when a message needs it).
const READ_ROOM: usize = 256;

/// Reads until the connection ends or the session goes away.
pub(super) async fn read_loop(
    stream: Rc<TcpStream>,
    addr: std::sync::Arc<Addr<Session>>,
    partial: Duration,
) {
    let mut buf = BytesMut::new();
    let mut decoder = ClientDecoder::new();
    // When the message now arriving was started, while one is.
    let mut started: Option<tokio::time::Instant> = None;
    loop {
        // Each message is handed over before the next is decoded. `let`, not `while let`:
        // a `while let` keeps its scrutinee's temporary (the decoded message's room) in the
        // task's state across the send's await, 40 bytes that took tokio's task cell (in
        // steps of 128 bytes) from 256 bytes to 384 for every client.
        loop {
            let Some(msg) = decoder.decode(&mut buf) else {
                break;
            };
            let sent = Box::pin(addr.send(Incoming(msg)));
            if sent.await.is_err() {
                return;
            }
        }
        if decoder.mid_message(&buf) {
            started.get_or_insert_with(tokio::time::Instant::now);
        } else {
            started = None;
        }
        if buf.is_empty() {
            // Nothing pending: the buffer is not kept while the client is quiet.
            buf = BytesMut::new();
        }
        // `poll_read_ready` keeps its waker in the socket's registration: waiting on it
        // adds nothing to the task's state (`readable()` would add a future of its own).
        let readable = std::future::poll_fn(|cx| stream.poll_read_ready(cx));
        let ready = match started {
            Some(at) if !partial.is_zero() => {
                match Box::pin(tokio::time::timeout_at(at + partial, readable)).await {
                    Ok(r) => r,
                    Err(_) => {
                        addr.do_send(ReadEnded(Some(format!(
                            "message not finished within partial_timeout ({:.1} s; {} bytes of it arrived)",
                            partial.as_secs_f64(),
                            buf.len()
                        ))));
                        return;
                    }
                }
            }
            _ => readable.await,
        };
        if let Err(e) = ready {
            addr.do_send(ReadEnded(Some(format!("read failed: {e}"))));
            return;
        }
        if buf.capacity() - buf.len() < 64 {
            buf.reserve(READ_ROOM);
        }
        match stream.try_read_buf(&mut buf) {
            Ok(0) => {
                let why = decoder.decode_eof(&buf).err().map(|e| e.to_string());
                addr.do_send(ReadEnded(why));
                return;
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => {
                addr.do_send(ReadEnded(Some(format!("read failed: {e}"))));
                return;
            }
        }
    }
}
