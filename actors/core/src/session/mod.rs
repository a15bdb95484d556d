//! The session actor: one client connection.
//!
//! A session reads the client's messages (a reader task decodes them with
//! [`crate::codec`] and hands them to the actor one at a time, so a request is finished
//! before the next message is looked at), keeps the client's devices in the order first
//! requested with the newest [`DeviceData`] of each, and writes data on its own schedule:
//!
//! - continuous (mode 0, the default at 10 Hz): on absolute deadlines `start + k/f`, one
//!   round of every read device;
//! - request/reply (mode 1): one round per `y d`;
//! - push new (mode 2): each reading that is new to this client, as soon as it arrives, but
//!   rounds at most `f` per second;
//! - pull new (mode 3): per `y d`, the devices with new readings (waiting for one if none).
//!
//! A round is laid out in a buffer the session keeps and written with one write. A
//! client's first round waits until every read device has a reading. The session never
//! queues stale data: while an earlier round is still unsent (in our buffer or the
//! kernel's), or, on a link that queues, still unacknowledged, due rounds are skipped
//! (`pace.rs`), so a slow client or link gets the newest data when it can take it and
//! nobody else waits for it.
//!
//! By job: `access.rs` (the per-device access state machine, grants, commands),
//! `config.rs` (the client's modes, frequency, timestamps), `extensions.rs` (error channel,
//! e-stop, key, device list), `schedule.rs` (ticks, deadlines, when a round falls due),
//! `writer.rs` (rounds, writes, flush, stall), `pace.rs` (what may be left unsent or in
//! flight) and `reader.rs` (the reader task); this file
//! holds the actor, its state and its message handlers.

mod access;
mod config;
mod extensions;
mod pace;
mod reader;
mod reload;
mod schedule;
mod writer;

use crate::access::Policy;
use crate::codec::ClientMessage;
use crate::logging::{code as esc, Throttle};
use crate::notice::{kind, Notice};
use crate::registry::{Disconnect, Registry, SessionId};
use crate::timer::{TickHandle, Ticks};
use actix::prelude::*;
use bytes::BytesMut;
use player_kit::driver::{DeviceData, DeviceDataBatch, Inbox};
use player_proto::{device, DataMode};
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;

/// Per-session limits and timings, from the server settings.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Highest data frequency a client may ask for; higher requests are clamped.
    pub max_frequency: u16,
    /// Most distinct devices one client may list; more get `e`.
    pub max_devices: usize,
    /// How long a first round may wait for a device before the device is named in the log.
    pub quiet_after: Duration,
    /// How long a client may leave its data unread before it is disconnected (zero: never).
    pub stall_timeout: Duration,
    /// How long a client may take to finish a message it has started (zero: forever).
    pub partial_timeout: Duration,
    /// Bytes of replies and notices a client may leave unread before its input is no
    /// longer read.
    pub max_output: usize,
    /// Who may do what.
    pub policy: Arc<Policy>,
    /// The robot's device codes (`true` where a device is served): an unknown device is
    /// answered `e` at once and never takes one of the client's slots.
    pub devices: Arc<[bool; 256]>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            max_frequency: 1000,
            max_devices: 16,
            quiet_after: Duration::from_secs(3),
            stall_timeout: Duration::from_secs(60),
            partial_timeout: Duration::from_secs(10),
            max_output: 256 * 1024,
            policy: Arc::new(Policy::default()),
            devices: Arc::new([true; 256]),
        }
    }
}

/// Listener → session: the server is shutting down; close the connection.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Close;

/// Session → listener: this session has ended.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SessionClosed {
    /// The session.
    pub id: SessionId,
}

/// Reader task → session: the next decoded client message.
#[derive(Message)]
#[rtype(result = "()")]
struct Incoming(ClientMessage);

/// Reader task → session: the connection ended (with the reason, if it was not clean).
#[derive(Message)]
#[rtype(result = "()")]
struct ReadEnded(Option<String>);

use access::Slot;
pub use reload::Recheck;

/// The session actor of one client connection.
pub struct Session {
    id: SessionId,
    peer: SocketAddr,
    client: String,
    log: Logger,
    stream: Rc<TcpStream>,
    registry: Addr<Registry>,
    listener: Option<Recipient<SessionClosed>>,
    opts: SessionOptions,
    slots: Vec<Slot>,
    /// Readings that arrived for a device before its grant was applied.
    early: HashMap<u8, DeviceData>,
    /// Devices whose subscription is in flight.
    requesting: Vec<u8>,
    mode: DataMode,
    period: Duration,
    timestamps: bool,
    next_tick: Instant,
    /// The session's repeating timer (its stream is added to the context at start).
    ticks: TickHandle,
    tick_stream: Option<Ticks>,
    /// Whether `ticks` is set.
    ticking: bool,
    /// A continuous round fell due while a device had no reading yet.
    round_due: bool,
    /// `y d` requests not yet answered.
    rounds_requested: u32,
    /// When the last push-new round went out; a timer is pending when `push_timer` is set.
    last_push: Option<Instant>,
    push_timer: Option<SpawnHandle>,
    /// Bytes written by us but not yet taken by the kernel.
    out: BytesMut,
    flushing: bool,
    /// What may be left unsent or in flight (`pace`).
    pace: pace::Pacer,
    /// Where the drivers leave readings while this session wants no message per reading.
    inbox: Arc<Inbox>,
    /// This session's part of its thread's load (rounds per second on a schedule), kept
    /// current for the placement of new sessions; `None` outside a server.
    load: Option<crate::placement::LoadShare>,
    /// Whether the inbox was last told to have readings sent as messages.
    inbox_messages: bool,
    /// The inbox's readings, taken out (kept for its capacity).
    inbox_buf: Vec<DeviceData>,
    /// Where a round is laid out before its one write (kept for its capacity).
    round_buf: Vec<u8>,
    /// Since when due rounds have been skipped because the client is not reading.
    stalled_since: Option<Instant>,
    skipped: u64,
    waiting_since: Option<Instant>,
    warned_quiet: bool,
    reader: Option<actix_rt::task::JoinHandle<()>>,
    closing_reason: Option<String>,
    /// Whether the client may command (its address may, and it presented the key when
    /// one is set).
    may_write: bool,
    /// It must present the key before anything else.
    must_present_key: bool,
    /// The key it presented and had accepted (re-checked when the policy is reloaded).
    presented_key: Option<Vec<u8>>,
    /// It asked for notices (`x y e 1`).
    notices: bool,
    /// Notices dropped because the client left too much unread.
    notices_dropped: u64,
    /// Woken when `out` drains, for input paused on unread output.
    drained: Option<futures::channel::oneshot::Sender<()>>,
    throttle: Throttle,
}

impl Session {
    /// A session for an accepted connection. `listener` is told when it ends.
    pub fn new(
        id: SessionId,
        stream: TcpStream,
        peer: SocketAddr,
        registry: Addr<Registry>,
        listener: Option<Recipient<SessionClosed>>,
        opts: SessionOptions,
        log: &Logger,
    ) -> Self {
        let client = peer.to_string();
        let (ticks, tick_stream) = crate::timer::ticks();
        let log = log.new(slog::o!("client" => client.clone(), "session" => id));
        let rights = opts
            .policy
            .admit(peer.ip())
            .unwrap_or(crate::access::Rights {
                write: false,
                must_present_key: false,
            });
        Session {
            may_write: rights.write,
            must_present_key: rights.must_present_key,
            presented_key: None,
            notices: false,
            notices_dropped: 0,
            drained: None,
            throttle: Throttle::default(),
            id,
            peer,
            client,
            log,
            stream: Rc::new(stream),
            registry,
            listener,
            opts,
            slots: Vec::new(),
            early: HashMap::new(),
            requesting: Vec::new(),
            mode: DataMode::Continuous,
            period: Duration::from_millis(100),
            timestamps: false,
            next_tick: Instant::now(),
            ticks,
            tick_stream: Some(tick_stream),
            ticking: false,
            round_due: false,
            rounds_requested: 0,
            last_push: None,
            push_timer: None,
            out: BytesMut::new(),
            flushing: false,
            pace: pace::Pacer::default(),
            inbox: Inbox::new(),
            load: None,
            inbox_messages: true,
            inbox_buf: Vec::new(),
            round_buf: Vec::new(),
            stalled_since: None,
            skipped: 0,
            waiting_since: None,
            warned_quiet: false,
            reader: None,
            closing_reason: None,
        }
    }

    /// Counts this session in its thread's load through `share` (see
    /// [`crate::placement`]).
    pub fn with_load(mut self, share: crate::placement::LoadShare) -> Self {
        self.load = Some(share);
        self
    }

    /// Updates this session's share of its thread's load: its rate while it sends on a
    /// schedule, nothing in the request modes.
    pub(super) fn account_load(&mut self) {
        let rate = match self.mode {
            DataMode::Continuous | DataMode::PushNew => {
                (1.0 / self.period.as_secs_f64()).round() as u64
            }
            DataMode::RequestReply | DataMode::PullNew => 0,
        };
        if let Some(share) = &mut self.load {
            share.set(rate);
        }
    }
}

impl Actor for Session {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        info!(self.log, "client connected");
        let addr = ctx.address();
        let stream = self.stream.clone();
        self.reader = Some(actix_rt::spawn(reader::read_loop(
            stream,
            addr,
            self.opts.partial_timeout,
        )));
        if let Some(s) = self.tick_stream.take() {
            ctx.add_stream(s);
        }
        self.next_tick = crate::timer::on_grid(Instant::now() + self.period, self.period);
        self.schedule_tick(ctx);
        if self.must_present_key {
            let wait = if self.opts.partial_timeout.is_zero() {
                Duration::from_secs(10)
            } else {
                self.opts.partial_timeout
            };
            ctx.run_later(wait, |act, ctx| {
                if act.must_present_key {
                    warn!(act.log, "refused: no key presented in time");
                    act.closing_reason = Some("no key presented".into());
                    ctx.stop();
                }
            });
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        if let Some(r) = self.reader.take() {
            r.abort();
        }
        self.registry.do_send(Disconnect { session: self.id });
        let reason = self
            .closing_reason
            .take()
            .unwrap_or_else(|| "closed".into());
        info!(self.log, "client disconnected"; "reason" => reason, "peer" => %self.peer, "rounds_skipped" => self.skipped, "warnings_suppressed" => self.throttle.pending());
        if let Some(l) = self.listener.take() {
            l.do_send(SessionClosed { id: self.id });
        }
    }
}

impl Handler<Incoming> for Session {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: Incoming, ctx: &mut Self::Context) -> Self::Result {
        if self.must_present_key && !is_key(&msg.0) {
            warn!(
                self.log,
                "refused: the key must be the first message (access.keyless = \"refuse\")"
            );
            self.closing_reason = Some("no key presented".into());
            ctx.stop();
            return Box::pin(fut::ready(()));
        }
        let handled: ResponseActFuture<Self, ()> = match msg.0 {
            ClientMessage::Request {
                second,
                pairs,
                odd_byte,
            } => self.on_request(second, pairs, odd_byte, ctx),
            ClientMessage::Command { device, payload } => {
                self.on_command(device, payload, ctx);
                Box::pin(fut::ready(()))
            }
            ClientMessage::Config { device, payload } => {
                self.on_config(device, payload, ctx);
                Box::pin(fut::ready(()))
            }
            ClientMessage::Unknown { kind, second, size } => {
                if let Some(n) = self.throttle.allow("unknown") {
                    warn!(self.log, "unknown message type; skipped"; "type" => esc(kind), "second" => esc(second), "size" => size, "suppressed" => n);
                }
                let why = format!("unknown message type {} skipped", esc(kind));
                self.notice(Notice::new(kind::OVERLOAD, 0, why), ctx);
                Box::pin(fut::ready(()))
            }
            ClientMessage::Oversized { kind, second, size } => {
                if let Some(n) = self.throttle.allow("oversized") {
                    warn!(self.log, "message too big; skipped"; "type" => esc(kind), "second" => esc(second), "size" => size, "max" => crate::codec::MAX_PAYLOAD, "suppressed" => n);
                }
                let why = format!(
                    "message of {size} bytes skipped (at most {})",
                    crate::codec::MAX_PAYLOAD
                );
                self.notice(Notice::new(kind::OVERLOAD, second, why), ctx);
                Box::pin(fut::ready(()))
            }
        };
        // The next message is read only when the client has taken its replies.
        Box::pin(handled.then(|(), act, ctx| {
            act.refresh_inbox(ctx);
            act.until_drained(ctx)
        }))
    }
}

/// Whether a client message presents a key (`x y k ...`).
fn is_key(m: &ClientMessage) -> bool {
    matches!(m, ClientMessage::Config { device, payload }
        if *device == device::SERVER && payload.first() == Some(&player_proto::config::KEY))
}

/// A tick of the session's timer: a continuous round may be due.
impl StreamHandler<()> for Session {
    fn handle(&mut self, _tick: (), ctx: &mut Self::Context) {
        self.on_tick(ctx);
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {
        // The timer's stream never ends; nothing to do (the default would stop the actor).
    }
}

impl Handler<ReadEnded> for Session {
    type Result = ();

    fn handle(&mut self, msg: ReadEnded, ctx: &mut Self::Context) {
        if let Some(why) = msg.0 {
            warn!(self.log, "client input ended badly"; "error" => &why);
            self.closing_reason = Some(why);
        }
        ctx.stop();
    }
}

impl Session {
    /// Takes one reading; returns whether it may make something sendable. `pending_only`:
    /// keep a reading for a device not (yet) in the list only if a request for it is in
    /// flight (a batch carries devices this client never asked for).
    fn take(&mut self, msg: DeviceData, pending_only: bool) -> bool {
        let Some(slot) = self.slots.iter_mut().find(|s| s.code == msg.device) else {
            if !pending_only || self.requesting.contains(&msg.device) {
                self.early.insert(msg.device, msg);
            }
            return false;
        };
        if !slot.reads() {
            if slot.access != player_proto::access::CLOSE
                && (!pending_only || self.requesting.contains(&msg.device))
            {
                self.early.insert(msg.device, msg);
            }
            return false;
        }
        if slot
            .latest
            .as_ref()
            .is_some_and(|l| l.seq >= msg.seq && l.seq != 0)
        {
            return false;
        }
        let was_missing = slot.latest.is_none();
        slot.latest = Some(msg);
        !matches!(self.mode, DataMode::Continuous) || was_missing || self.round_due
    }
}

impl Handler<DeviceData> for Session {
    type Result = ();

    fn handle(&mut self, msg: DeviceData, ctx: &mut Self::Context) {
        if self.take(msg, false) {
            self.after_change(ctx);
        }
        self.refresh_inbox(ctx);
    }
}

impl Handler<DeviceDataBatch> for Session {
    type Result = ();

    fn handle(&mut self, msg: DeviceDataBatch, ctx: &mut Self::Context) {
        let mut changed = false;
        for d in msg.0.iter() {
            changed |= self.take(d.clone(), true);
        }
        if changed {
            self.after_change(ctx);
        }
        self.refresh_inbox(ctx);
    }
}

impl Handler<Close> for Session {
    type Result = ();

    fn handle(&mut self, _msg: Close, ctx: &mut Self::Context) {
        self.closing_reason = Some("server shutting down".into());
        ctx.stop();
    }
}
