//! The writer: a round in one write, replies and notices, the flush of what the
//! kernel did not take, the skip of rounds a client is not reading and the stall rule.

use super::list::Slot;
use super::{pace, Session};
use actix::prelude::*;
use bytes::BytesMut;
use player_proto::message::{self, TIMESTAMP_SIZE};
use slog::warn;
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// The session's output: the socket and what it has not taken yet.
pub(super) struct Writer {
    stream: Rc<TcpStream>,
    /// The socket's descriptor, kept beside the rest of the writer: a round's look and
    /// write need nothing else of the socket (`send_now`).
    fd: RawFd,
    /// Bytes written by us but not yet taken by the kernel.
    out: BytesMut,
    flushing: bool,
    /// What may be left unsent or in flight (`pace`).
    pace: pace::Pacer,
    /// Since when due rounds have been skipped because the client is not reading.
    stalled_since: Option<Instant>,
    skipped: u64,
    /// Woken when `out` drains, for input paused on unread output.
    drained: Option<futures::channel::oneshot::Sender<()>>,
    /// Whether data packets carry timestamps (`x y t`).
    timestamps: bool,
}

impl Writer {
    pub(super) fn new(stream: TcpStream) -> Self {
        Writer {
            fd: stream.as_raw_fd(),
            stream: Rc::new(stream),
            out: BytesMut::new(),
            flushing: false,
            pace: pace::Pacer::default(),
            stalled_since: None,
            skipped: 0,
            drained: None,
            timestamps: false,
        }
    }

    /// The socket (the reader task reads it).
    pub(super) fn stream(&self) -> Rc<TcpStream> {
        self.stream.clone()
    }

    /// Bytes the client has left unread in our buffer.
    pub(super) fn backlog(&self) -> usize {
        self.out.len()
    }

    /// Whether everything written has been taken by the kernel.
    pub(super) fn drained(&self) -> bool {
        self.out.is_empty()
    }

    /// Rounds skipped so far.
    pub(super) fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Data packets carry timestamps (`x y t`) from now on, or not.
    pub(super) fn set_timestamps(&mut self, on: bool) {
        self.timestamps = on;
    }

    /// Whether a round may be written at `now` (the rule is in [`super::pace`]); notes
    /// whether the client acknowledged something since the last look (it is reading, if
    /// slowly).
    fn can_send(&mut self, now: Instant) -> bool {
        let look = self.pace.look(self.fd, !self.out.is_empty(), now);
        if look.progress {
            self.stalled_since = None;
        }
        look.send
    }

    /// A round skipped at `now`: how long the client has been stalled, when that is at
    /// least `limit` (zero: never).
    fn skip(&mut self, now: Instant, limit: Duration) -> Option<Duration> {
        self.skipped += 1;
        let since = *self.stalled_since.get_or_insert(now);
        let stalled = now.saturating_duration_since(since);
        (!limit.is_zero() && stalled >= limit).then_some(stalled)
    }

    /// Lays out one round (every read device, or only those with new data) in the round
    /// buffer, marking what it sends as sent; the buffer is empty when nothing is to go.
    fn lay_out(&mut self, slots: &mut [Slot], only_new: bool) -> Vec<u8> {
        let ts = if self.timestamps { TIMESTAMP_SIZE } else { 0 };
        let mut buf = ROUND_BUF.take();
        buf.clear();
        for slot in slots.iter_mut() {
            if !slot.reads() || (only_new && !slot.is_new()) {
                continue;
            }
            let Some(d) = &slot.latest else { continue };
            let len = (d.data.len() + ts).min(usize::from(u16::MAX)) as u16;
            buf.extend_from_slice(&message::data_header(slot.code, len));
            if ts > 0 {
                buf.extend_from_slice(&d.timestamp.encode());
            }
            buf.extend_from_slice(&d.data);
            slot.sent = d.stamp();
        }
        buf
    }

    /// Keeps the round buffer for the thread's next round unless an unusually large round
    /// grew it.
    fn keep(&mut self, buf: Vec<u8>) {
        if buf.capacity() <= 64 * 1024 {
            ROUND_BUF.set(buf);
        }
    }
}

thread_local! {
    /// Where a round is laid out before its one write: one buffer per session thread,
    /// shared by its sessions (a round is laid out and written in one go, so no two
    /// sessions need it at once), instead of one per session (a kilobyte per client).
    static ROUND_BUF: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// What became of a round the schedule asked for ([`Writer::send_round`]).
pub(super) enum Sent {
    /// Written (the result of the write: whatever the kernel did not take is in the
    /// session's buffer, to be flushed).
    Written(io::Result<()>),
    /// Nothing to send.
    Empty,
    /// Skipped: the client is not keeping up.
    Skipped,
    /// Skipped, and the client has acknowledged nothing for this long, past the limit: it
    /// is to be disconnected.
    Stalled(Duration),
}

impl Writer {
    /// Whether nothing is being flushed and nothing waits for the buffer to drain.
    pub(super) fn idle(&self) -> bool {
        self.out.is_empty() && !self.flushing && self.drained.is_none()
    }

    /// Writes one round of `slots` at `now` (every read device, or only those with new
    /// data) in one write, unless the client is not keeping up, in which case the round
    /// is skipped (it will get the newest data when it can take it); a client that
    /// acknowledges nothing for `stall_limit` while rounds are skipped is to be
    /// disconnected.
    pub(super) fn send_round(
        &mut self,
        slots: &mut [Slot],
        only_new: bool,
        now: Instant,
        stall_limit: Duration,
    ) -> Sent {
        if !self.can_send(now) {
            return match self.skip(now, stall_limit) {
                Some(stalled) => Sent::Stalled(stalled),
                None => Sent::Skipped,
            };
        }
        match self.write_round(slots, only_new, now) {
            Some(r) => Sent::Written(r),
            None => Sent::Empty,
        }
    }

    /// Writes one round at `now` in one write; `None` when there was nothing to send. The
    /// round is laid out in the thread's round buffer (kept between rounds, so a round costs no
    /// allocation): copying a few hundred bytes costs less than the kernel's walk over a
    /// vector of a header and a payload per device.
    pub(super) fn write_round(
        &mut self,
        slots: &mut [Slot],
        only_new: bool,
        now: Instant,
    ) -> Option<io::Result<()>> {
        let buf = self.lay_out(slots, only_new);
        if buf.is_empty() {
            self.keep(buf);
            return None;
        }
        self.pace.wrote_round(now, buf.len());
        let r = write_whole(&self.stream, self.fd, &mut self.out, &[IoSlice::new(&buf)]);
        self.keep(buf);
        Some(r)
    }
}

impl Session {
    /// Writes one round ([`Writer::send_round`]); disconnects a client stalled for
    /// `stall_timeout`. Returns whether it was written.
    pub(super) fn send_round(&mut self, only_new: bool, ctx: &mut Context<Self>) -> bool {
        let now = Instant::now();
        let sent = self.timers.writer().send_round(
            &mut self.list.slots,
            only_new,
            now,
            self.conn.opts.stall_timeout,
        );
        self.after_round(sent, ctx)
    }

    /// Applies what became of a round; returns whether it was written.
    pub(super) fn after_round(&mut self, sent: Sent, ctx: &mut Context<Self>) -> bool {
        match sent {
            Sent::Written(r) => {
                self.after_write(r, ctx);
                true
            }
            Sent::Empty | Sent::Skipped => false,
            Sent::Stalled(stalled) => {
                warn!(self.conn.log, "client has read nothing for too long; disconnecting"; "seconds" => stalled.as_secs(), "rounds_skipped" => self.timers.writer().skipped);
                self.conn.closing_reason = Some("stalled".into());
                ctx.stop();
                false
            }
        }
    }

    /// Writes one round in one write, whether or not the client keeps up (it asked for
    /// it); returns whether there was anything to send.
    pub(super) fn write_round(&mut self, only_new: bool, ctx: &mut Context<Self>) -> bool {
        let sent = self
            .timers
            .writer()
            .write_round(&mut self.list.slots, only_new, Instant::now())
            .map_or(Sent::Empty, Sent::Written);
        self.after_round(sent, ctx)
    }

    // ----- writing ---------------------------------------------------------------------

    /// Writes whole messages: at once if the kernel takes them, otherwise the rest is kept
    /// and flushed when the socket is writable (nothing else is sent before it).
    pub(super) fn write(&mut self, iov: &[IoSlice], ctx: &mut Context<Self>) {
        let r = {
            let mut w = self.timers.writer();
            let w = &mut *w;
            w.pace.wrote(iov.iter().map(|s| s.len()).sum::<usize>());
            write_whole(&w.stream, w.fd, &mut w.out, iov)
        };
        self.after_write(r, ctx);
    }

    pub(super) fn after_write(&mut self, r: io::Result<()>, ctx: &mut Context<Self>) {
        match r {
            Ok(()) if self.timers.writer().out.is_empty() => {}
            Ok(()) => self.start_flush(ctx),
            Err(e) => self.fail(e, ctx),
        }
    }

    pub(super) fn start_flush(&mut self, ctx: &mut Context<Self>) {
        let stream = {
            let mut w = self.timers.writer();
            if w.flushing {
                return;
            }
            w.flushing = true;
            w.stream.clone()
        };
        ctx.spawn(
            async move { stream.writable().await }
                .into_actor(self)
                .map(|r, act, ctx| {
                    act.unpark(ctx);
                    act.timers.writer().flushing = false;
                    match r {
                        Ok(()) => act.flush(ctx),
                        Err(e) => act.fail(e, ctx),
                    }
                }),
        );
    }

    pub(super) fn flush(&mut self, ctx: &mut Context<Self>) {
        let drained = {
            let mut w = self.timers.writer();
            let w = &mut *w;
            loop {
                if w.out.is_empty() {
                    // Drained: release the buffer of a burst and answer what waited for it.
                    w.out = BytesMut::new();
                    break Ok(w.drained.take());
                }
                match w.stream.try_write(&w.out) {
                    Ok(n) => {
                        let _ = w.out.split_to(n);
                    }
                    Err(e) => break Err(e),
                }
            }
        };
        match drained {
            Ok(Some(tx)) => {
                let _ = tx.send(());
            }
            Ok(None) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.start_flush(ctx);
                return;
            }
            Err(e) => {
                self.fail(e, ctx);
                return;
            }
        }
        if self.timers.schedule().serves_requests() {
            self.serve_requests(ctx);
        }
    }

    pub(super) fn fail(&mut self, e: io::Error, ctx: &mut Context<Self>) {
        if self.conn.closing_reason.is_none() {
            self.conn.closing_reason = Some(format!("write failed: {e}"));
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
        let unread = self.timers.writer().out.len();
        if unread < self.conn.opts.max_output {
            return Box::pin(fut::ready(()));
        }
        warn!(self.conn.log, "client leaves its replies unread; its input waits"; "unread_bytes" => unread);
        let (tx, rx) = futures::channel::oneshot::channel();
        self.timers.writer().drained = Some(tx);
        let limit = self.conn.opts.stall_timeout;
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
                act.unpark(ctx);
                if !drained {
                    warn!(act.conn.log, "client has read none of its replies for too long; disconnecting"; "unread_bytes" => act.timers.writer().out.len());
                    act.conn.closing_reason = Some("stalled (replies unread)".into());
                    ctx.stop();
                }
            }),
        )
    }
}

/// Writes `iov` to the socket without blocking; whatever the kernel does not take is
/// appended to `out` (which must then be flushed). When `out` already holds bytes, all of
/// `iov` goes after them, keeping messages whole and in order.
fn write_whole(
    stream: &TcpStream,
    fd: RawFd,
    out: &mut BytesMut,
    iov: &[IoSlice],
) -> io::Result<()> {
    let total: usize = iov.iter().map(|s| s.len()).sum();
    let mut written = 0;
    if out.is_empty() {
        // One slice (a round, a reply) is a plain write: cheaper in the kernel than writev.
        let r = match iov {
            [one] => send_now(fd, one),
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

/// One `send` on the session's socket, not through the runtime's readiness bookkeeping (a
/// round costs one system call and touches nothing of the socket but its descriptor).
/// When it would block, the flush waits through the runtime (`start_flush`): its
/// readiness may still say writable, in which case the flush's own write finds out and
/// clears it, then waits.
// Unsafe code: send(2) with MSG_DONTWAIT on the session's socket (a Linux call).
#[allow(unsafe_code)]
fn send_now(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `fd` is the socket the writer's `TcpStream` owns and keeps open; `buf`
        // is valid for `buf.len()` bytes.
        let n = unsafe {
            libc::send(
                fd,
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
            )
        };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
