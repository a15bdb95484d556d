//! The writer: a round in one write, replies and notices, the flush of what the
//! kernel did not take, the skip of rounds a client is not reading and the stall rule.

use super::Session;
use actix::prelude::*;
use bytes::BytesMut;
use player_proto::message::{self, TIMESTAMP_SIZE};
use player_proto::DataMode;
use slog::warn;
use std::io::{self, IoSlice};
use std::os::fd::AsRawFd;
use std::time::Instant;
use tokio::net::TcpStream;

impl Session {
    /// Whether a round may be written now (the rule is in [`super::pace`]); notes whether
    /// the client acknowledged something since the last look (it is reading, if slowly).
    pub(super) fn can_send(&mut self) -> bool {
        let look = self.pace.look(
            self.stream.as_raw_fd(),
            !self.out.is_empty(),
            Instant::now(),
        );
        if look.progress {
            self.stalled_since = None;
        }
        look.send
    }

    /// Writes one round (every read device, or only those with new data) in one write,
    /// unless the client is not keeping up, in which case the round is skipped (it will get
    /// the newest data when it can take it). A client that acknowledges nothing for
    /// `stall_timeout` while rounds are skipped is disconnected. Returns whether it was
    /// written.
    pub(super) fn send_round(&mut self, only_new: bool, ctx: &mut Context<Self>) -> bool {
        if !self.can_send() {
            self.skipped += 1;
            let since = *self.stalled_since.get_or_insert_with(Instant::now);
            if !self.opts.stall_timeout.is_zero() && since.elapsed() >= self.opts.stall_timeout {
                warn!(self.log, "client has read nothing for too long; disconnecting"; "seconds" => since.elapsed().as_secs(), "rounds_skipped" => self.skipped);
                self.closing_reason = Some("stalled".into());
                ctx.stop();
            }
            return false;
        }
        self.write_round(only_new, ctx)
    }

    /// Writes one round in one write; returns whether there was anything to send. The
    /// round is laid out in the session's own buffer (kept between rounds, so a round
    /// costs no allocation): copying a few hundred bytes costs less than the kernel's
    /// walk over a vector of a header and a payload per device.
    pub(super) fn write_round(&mut self, only_new: bool, ctx: &mut Context<Self>) -> bool {
        let ts = if self.timestamps { TIMESTAMP_SIZE } else { 0 };
        let mut buf = std::mem::take(&mut self.round_buf);
        buf.clear();
        for slot in self.slots.iter_mut() {
            if !slot.reads() || (only_new && !slot.is_new()) {
                continue;
            }
            let Some(d) = &slot.latest else { continue };
            let len = (d.data.len() + ts).min(usize::from(u16::MAX)) as u16;
            buf.extend_from_slice(&message::data_header(slot.code, len));
            if ts > 0 {
                buf.extend_from_slice(&d.timestamp.sec.to_be_bytes());
                buf.extend_from_slice(&d.timestamp.usec.to_be_bytes());
            }
            buf.extend_from_slice(&d.data);
            slot.sent_seq = d.seq;
        }
        if buf.is_empty() {
            self.round_buf = buf;
            return false;
        }
        self.pace.wrote_round(Instant::now(), buf.len());
        let r = write_whole(&self.stream, &mut self.out, &[IoSlice::new(&buf)]);
        // Keep the buffer for the next round unless an unusually large round grew it.
        if buf.capacity() <= 64 * 1024 {
            self.round_buf = buf;
        }
        self.after_write(r, ctx);
        true
    }

    // ----- writing ---------------------------------------------------------------------

    /// Writes whole messages: at once if the kernel takes them, otherwise the rest is kept
    /// and flushed when the socket is writable (nothing else is sent before it).
    pub(super) fn write(&mut self, iov: &[IoSlice], ctx: &mut Context<Self>) {
        self.pace.wrote(iov.iter().map(|s| s.len()).sum::<usize>());
        let r = write_whole(&self.stream, &mut self.out, iov);
        self.after_write(r, ctx);
    }

    pub(super) fn after_write(&mut self, r: io::Result<()>, ctx: &mut Context<Self>) {
        match r {
            Ok(()) if self.out.is_empty() => {}
            Ok(()) => self.start_flush(ctx),
            Err(e) => self.fail(e, ctx),
        }
    }

    pub(super) fn start_flush(&mut self, ctx: &mut Context<Self>) {
        if self.flushing {
            return;
        }
        self.flushing = true;
        let stream = self.stream.clone();
        ctx.spawn(
            async move { stream.writable().await }
                .into_actor(self)
                .map(|r, act, ctx| {
                    act.flushing = false;
                    match r {
                        Ok(()) => act.flush(ctx),
                        Err(e) => act.fail(e, ctx),
                    }
                }),
        );
    }

    pub(super) fn flush(&mut self, ctx: &mut Context<Self>) {
        while !self.out.is_empty() {
            match self.stream.try_write(&self.out) {
                Ok(n) => {
                    let _ = self.out.split_to(n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.start_flush(ctx);
                    return;
                }
                Err(e) => {
                    self.fail(e, ctx);
                    return;
                }
            }
        }
        // Drained: release the buffer of a burst and answer what waited for it.
        self.out = BytesMut::new();
        if let Some(tx) = self.drained.take() {
            let _ = tx.send(());
        }
        if matches!(self.mode, DataMode::RequestReply | DataMode::PullNew) {
            self.serve_requests(ctx);
        }
    }

    pub(super) fn fail(&mut self, e: io::Error, ctx: &mut Context<Self>) {
        if self.closing_reason.is_none() {
            self.closing_reason = Some(format!("write failed: {e}"));
        }
        ctx.stop();
    }
}

impl Session {
    /// Resolves at once while the client's unread replies and notices are within
    /// `max_output`; otherwise when they have drained, or ends the session when they have
    /// not within `stall_timeout` (its input is not read meanwhile).
    pub(super) fn until_drained(
        &mut self,
        _ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, ()> {
        if self.out.len() < self.opts.max_output {
            return Box::pin(fut::ready(()));
        }
        if let Some(n) = self.throttle.allow("output-backlog") {
            warn!(self.log, "client leaves its replies unread; its input waits"; "unread_bytes" => self.out.len(), "suppressed" => n);
        }
        let (tx, rx) = futures::channel::oneshot::channel();
        self.drained = Some(tx);
        let limit = self.opts.stall_timeout;
        Box::pin(
            async move {
                if limit.is_zero() {
                    rx.await.is_ok()
                } else {
                    matches!(tokio::time::timeout(limit, rx).await, Ok(Ok(())))
                }
            }
            .into_actor(self)
            .map(|drained, act, ctx| {
                if !drained {
                    warn!(act.log, "client has read none of its replies for too long; disconnecting"; "unread_bytes" => act.out.len());
                    act.closing_reason = Some("stalled (replies unread)".into());
                    ctx.stop();
                }
            }),
        )
    }
}

/// Writes `iov` to the socket without blocking; whatever the kernel does not take is
/// appended to `out` (which must then be flushed). When `out` already holds bytes, all of
/// `iov` goes after them, keeping messages whole and in order.
fn write_whole(stream: &TcpStream, out: &mut BytesMut, iov: &[IoSlice]) -> io::Result<()> {
    let total: usize = iov.iter().map(|s| s.len()).sum();
    let mut written = 0;
    if out.is_empty() {
        // One slice (a round, a reply) is a plain write: cheaper in the kernel than writev.
        let r = match iov {
            [one] => stream.try_write(one),
            _ => stream.try_write_vectored(iov),
        };
        match r {
            Ok(n) => written = n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    if written < total {
        let mut skip = written;
        for s in iov {
            if skip >= s.len() {
                skip -= s.len();
                continue;
            }
            out.extend_from_slice(&s[skip..]);
            skip = 0;
        }
    }
    Ok(())
}
