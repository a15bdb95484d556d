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
//! By part, each file owning its part's state: `list.rs` (the client's devices, their
//! newest readings, the inbox), `schedule.rs` (when rounds fall due: a pure `Schedule`
//! tested on made-up instants, and the session's side that applies its answers),
//! `writer.rs` (rounds, writes, flush, stall), `rights.rs` (what the client may do),
//! `pace.rs` (what may be left unsent or in flight), `park.rs` (a steady session's rounds
//! written by its thread's timer, with no wake-up of the actor) and `reader.rs` (the
//! reader task). By job: `access.rs` (the per-device access state machine, grants, commands), `config.rs`
//! (the client's `y` configs: modes, frequency, timestamps), `extensions.rs` (error
//! channel, e-stop, key, device list). This file holds the actor and its connection,
//! routes its messages and sets its timers.

mod access;
mod config;
mod extensions;
mod list;
mod pace;
mod park;
mod reader;
mod reload;
mod rights;
mod schedule;
mod writer;

use crate::access::Policy;
use crate::codec::ClientMessage;
use crate::logging::code as esc;
use crate::notice::{kind, Notice};
use crate::registry::{Disconnect, Registry, SessionId};
use crate::timer::{TickHandle, Ticks};
use actix::prelude::*;
use actix::{WeakAddr, WeakRecipient};
use player_kit::driver::{DataRecipient, DeviceData, DeviceDataBatch};
use player_proto::device;
use slog::{info, warn, Logger};
use std::net::SocketAddr;
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

pub use reload::Recheck;

/// The connection: who the client is, where the session reports, its limits and its end.
struct Conn {
    id: SessionId,
    /// The client's address (its name in the log and to the registry).
    peer: SocketAddr,
    log: Logger,
    /// Weak: a strong address costs two allocations a client, and the registry outlives
    /// its listener's sessions (the listener holds it strongly).
    registry: WeakAddr<Registry>,
    /// Told when the session ends (weak: it is used once, and a strong recipient costs
    /// three allocations a client).
    listener: Option<WeakRecipient<SessionClosed>>,
    /// Shared by every session of a listener.
    opts: Arc<SessionOptions>,
    reader: Option<actix_rt::task::JoinHandle<()>>,
    /// The session's own address, made once at start and shared by its reader task and
    /// every subscription (an address copy is two allocations).
    me: Option<Arc<Addr<Session>>>,
    closing_reason: Option<String>,
    /// It asked for notices (`x y e 1`).
    notices: bool,
    /// Notices dropped because the client left too much unread.
    notices_dropped: u64,
    /// This session's part of its thread's load (rounds per second on a schedule), kept
    /// current for the placement of new sessions; `None` outside a server.
    load: Option<crate::placement::LoadShare>,
    /// Its configs waiting at drivers (made at its first config: most clients send none).
    configs: Option<player_kit::answer::ConfigPlaces>,
}

impl Conn {
    /// The registry, for one message: `None` only once the server has let it go, after
    /// its sessions were told to close.
    fn registry(&self) -> Option<Addr<Registry>> {
        self.registry.upgrade()
    }

    /// The client's address as text (how the registry and the drivers name it).
    fn client(&self) -> String {
        self.peer.to_string()
    }
}

/// The session's timers: the repeating tick of continuous mode and the push-new wake.
struct Timers {
    /// The session's repeating timer (its stream is added to the context at start), with
    /// its shelf (`park.rs`): the session's writer and schedule, and the device list its
    /// thread's tick borrows to write its rounds.
    ticks: TickHandle<park::Shelf>,
    tick_stream: Option<Ticks>,
    /// Set while push new waits out its period.
    push: Option<SpawnHandle>,
}

/// The session actor of one client connection.
pub struct Session {
    conn: Conn,
    list: list::DeviceList,
    timers: Timers,
    rights: rights::Rights,
}

impl Timers {
    /// The session's writer. It lives in the timer's shelf, not in the session: its
    /// thread's tick writes through the same one while the session is parked, so the
    /// session's own task is not a copy's size larger (`park.rs`).
    fn writer(&self) -> std::cell::RefMut<'_, writer::Writer> {
        self.ticks.payload().writer()
    }

    /// The session's schedule: in the timer's shelf for the same reason as the writer.
    fn schedule(&self) -> std::cell::RefMut<'_, schedule::Schedule> {
        self.ticks.payload().schedule()
    }
}

impl Session {
    /// A session for an accepted connection. `listener` is told when it ends.
    pub fn new(
        id: SessionId,
        stream: TcpStream,
        peer: SocketAddr,
        registry: Addr<Registry>,
        listener: Option<WeakRecipient<SessionClosed>>,
        opts: impl Into<Arc<SessionOptions>>,
        log: &Logger,
    ) -> Self {
        let opts = opts.into();
        let shelf = park::Shelf::new(
            writer::Writer::new(stream),
            schedule::Schedule::new(Instant::now()),
        );
        let (ticks, tick_stream) = crate::timer::ticks_with(shelf);
        // The address itself, shown as `ip:port` (no text of it kept per session).
        let log = log.new(slog::o!("client" => peer, "session" => id));
        let rights = rights::Rights::admit(&opts.policy, peer.ip());
        Session {
            conn: Conn {
                id,
                peer,
                log,
                registry: registry.downgrade(),
                listener,
                opts,
                reader: None,
                me: None,
                closing_reason: None,
                notices: false,
                notices_dropped: 0,
                load: None,
                configs: None,
            },
            list: list::DeviceList::new(),
            timers: Timers {
                ticks,
                tick_stream: Some(tick_stream),
                push: None,
            },
            rights,
        }
    }

    /// Counts this session in its thread's load through `share` (see
    /// [`crate::placement`]).
    pub fn with_load(mut self, share: crate::placement::LoadShare) -> Self {
        self.conn.load = Some(share);
        self
    }

    /// Updates this session's share of its thread's load: its rate while it sends on a
    /// schedule, nothing in the request modes.
    fn account_load(&mut self) {
        let rate = self.timers.schedule().rate();
        if let Some(share) = &mut self.conn.load {
            share.set(rate);
        }
    }

    /// The session's one shared address (made at the first use: at start, for the reader).
    fn me(&mut self, ctx: &mut Context<Self>) -> Arc<Addr<Session>> {
        self.conn
            .me
            .get_or_insert_with(|| Arc::new(ctx.address()))
            .clone()
    }

    /// Where the drivers deliver this session's readings: its inbox, or messages to its
    /// one shared address.
    fn data_recipient(&mut self, ctx: &mut Context<Self>) -> DataRecipient {
        DataRecipient::shared_with_inbox(self.me(ctx), self.list.inbox())
    }

    /// Clears both timers (the data mode changed; the schedule has forgotten them).
    fn stop_timers(&mut self, ctx: &mut Context<Self>) {
        self.timers.ticks.clear();
        if let Some(h) = self.timers.push.take() {
            ctx.cancel_future(h);
        }
    }

    /// Wakes push new at `at`, to look again.
    fn wake_at(&mut self, at: Instant, ctx: &mut Context<Self>) {
        let wake = crate::timer::sleep_until(at)
            .into_actor(self)
            .map(|_, act, ctx| {
                act.unpark(ctx);
                act.timers.push = None;
                act.timers.schedule().woke();
                act.push_new(ctx);
            });
        self.timers.push = Some(ctx.spawn(wake));
    }
}

impl Actor for Session {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        info!(self.conn.log, "client connected");
        let me = self.me(ctx);
        self.conn.reader = Some(actix_rt::spawn(reader::read_loop(
            self.timers.writer().stream(),
            me,
            self.conn.opts.partial_timeout,
        )));
        if let Some(s) = self.timers.tick_stream.take() {
            ctx.add_stream(s);
        }
        let first = self.timers.schedule().start(Instant::now());
        self.timers.ticks.set(first);
        if self.rights.must_present_key() {
            let wait = if self.conn.opts.partial_timeout.is_zero() {
                Duration::from_secs(10)
            } else {
                self.conn.opts.partial_timeout
            };
            ctx.run_later(wait, |act, ctx| {
                if act.rights.must_present_key() {
                    warn!(act.conn.log, "refused: no key presented in time");
                    act.conn.closing_reason = Some("no key presented".into());
                    ctx.stop();
                }
            });
        }
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        self.unpark_at_end();
        let skipped = self.timers.writer().skipped();
        let c = &mut self.conn;
        if let Some(r) = c.reader.take() {
            r.abort();
        }
        if let Some(r) = c.registry() {
            r.do_send(Disconnect { session: c.id });
        }
        let reason = c.closing_reason.take().unwrap_or_else(|| "closed".into());
        info!(c.log, "client disconnected"; "reason" => reason, "peer" => %c.peer, "rounds_skipped" => skipped);
        if let Some(l) = c.listener.take().and_then(|l| l.upgrade()) {
            l.do_send(SessionClosed { id: c.id });
        }
    }
}

impl Handler<Incoming> for Session {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: Incoming, ctx: &mut Self::Context) -> Self::Result {
        self.unpark(ctx);
        if self.rights.must_present_key() && !is_key(&msg.0) {
            warn!(
                self.conn.log,
                "refused: the key must be the first message (access.keyless = \"refuse\")"
            );
            self.conn.closing_reason = Some("no key presented".into());
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
                warn!(self.conn.log, "unknown message type; skipped"; "type" => esc(kind), "second" => esc(second), "size" => size);
                let why = format!("unknown message type {} skipped", esc(kind));
                self.notice(Notice::new(kind::OVERLOAD, 0, why), ctx);
                Box::pin(fut::ready(()))
            }
            ClientMessage::Oversized { kind, second, size } => {
                warn!(self.conn.log, "message too big; skipped"; "type" => esc(kind), "second" => esc(second), "size" => size, "max" => crate::codec::MAX_PAYLOAD);
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
            act.unpark(ctx);
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

/// A tick of the session's timer: a continuous round may be due (or, while parked, its
/// thread's tick handed something back: `park.rs`). Then the session parks if it is
/// steady.
impl StreamHandler<()> for Session {
    fn handle(&mut self, _tick: (), ctx: &mut Self::Context) {
        if !self.unpark(ctx) {
            self.on_tick(ctx);
        }
        self.park();
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {
        // The timer's stream never ends; nothing to do (the default would stop the actor).
    }
}

impl Handler<ReadEnded> for Session {
    type Result = ();

    fn handle(&mut self, msg: ReadEnded, ctx: &mut Self::Context) {
        self.unpark(ctx);
        if let Some(why) = msg.0 {
            warn!(self.conn.log, "client input ended badly"; "error" => &why);
            self.conn.closing_reason = Some(why);
        }
        ctx.stop();
    }
}

impl Handler<DeviceData> for Session {
    type Result = ();

    fn handle(&mut self, msg: DeviceData, ctx: &mut Self::Context) {
        self.unpark(ctx);
        if self.take(msg, false) {
            self.after_change(ctx);
        }
        self.refresh_inbox(ctx);
    }
}

impl Handler<DeviceDataBatch> for Session {
    type Result = ();

    fn handle(&mut self, msg: DeviceDataBatch, ctx: &mut Self::Context) {
        self.unpark(ctx);
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
        self.unpark(ctx);
        self.conn.closing_reason = Some("server shutting down".into());
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of the future an `async fn` of three arguments returns.
    fn future_size<A, B, C, F>(_: fn(A, B, C) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    /// tokio allocates a task as one cell aligned to 128 bytes: a 32-byte header, the
    /// scheduler and id (16), the future, a 48-byte trailer. A client's two tasks stay in
    /// 768 and 256 bytes while the futures stay within 672 and 160 bytes
    /// (docs/performance.md, "Heap per client, third pass"): a field added to the session
    /// or a value kept across the reader's await that crosses a step costs 128 bytes a
    /// client.
    #[test]
    fn a_clients_tasks_stay_within_their_cells() {
        let session = std::mem::size_of::<actix::dev::ContextFut<Session, Context<Session>>>();
        assert!(
            session <= 672,
            "the session's actor future is {session} bytes"
        );
        let reader = future_size(reader::read_loop);
        assert!(reader <= 160, "the reader task's future is {reader} bytes");
    }
}
