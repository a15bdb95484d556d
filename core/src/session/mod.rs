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
//! A round is written with one vectored write of shared buffers (no per-client copy). A
//! client's first round waits until every read device has a reading. The session never
//! queues stale data: while a written round is still unsent (in our buffer, or more than a
//! couple of rounds in the kernel's send queue), due rounds are skipped, so a slow client
//! gets the newest data when it can take it and nobody else waits for it.

mod extensions;
mod reader;

use crate::access::Policy;
use crate::codec::ClientMessage;
use crate::logging::{code as esc, Throttle};
use crate::notice::{kind, Notice};
use crate::registry::{Disconnect, Registry, RouteConfig, SessionId, Subscribe, Unsubscribe};
use actix::prelude::*;
use bytes::{Bytes, BytesMut};
use player_kit::driver::{Command, DataRecipient, DeviceData, DeviceDataBatch};
use player_proto::message::{self, TIMESTAMP_SIZE};
use player_proto::{access, config, device, DataMode};
use slog::{debug, info, warn, Logger};
use std::collections::HashMap;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
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

/// One device in the client's list.
struct Slot {
    code: u8,
    /// r, w, a, c or e.
    access: u8,
    readable: bool,
    command: Option<(Recipient<Command>, usize)>,
    latest: Option<DeviceData>,
    /// Sequence number of the last reading sent to this client.
    sent_seq: u64,
}

impl Slot {
    fn reads(&self) -> bool {
        self.readable && matches!(self.access, access::READ | access::ALL)
    }

    fn writes(&self) -> bool {
        matches!(self.access, access::WRITE | access::ALL)
    }

    /// Leaves the device holding `access` (`c` or `e`): no commands, no data.
    fn release(&mut self, access: u8) {
        self.access = access;
        self.command = None;
        self.latest = None;
    }

    fn is_new(&self) -> bool {
        self.latest.as_ref().is_some_and(|d| d.seq != self.sent_seq)
    }
}

/// A request or reply as text for the log (`srpw`), unprintable bytes as `?`.
fn pairs_text(pairs: &[(u8, u8)]) -> String {
    pairs
        .iter()
        .flat_map(|&(d, a)| [d, a])
        .map(|b| {
            if b.is_ascii_graphic() {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect()
}

/// The access a client holds after asking for `req` while holding `cur` (0 when the device
/// is not in its list). See client-protocol-notes.md 3.2; `e` is treated as "not listed".
fn next_access(cur: u8, req: u8) -> u8 {
    let (r, w) = match cur {
        access::READ => (true, false),
        access::WRITE => (false, true),
        access::ALL => (true, true),
        _ => (false, false),
    };
    match req {
        access::READ if w && !r => access::ALL,
        access::WRITE if r && !w => access::ALL,
        access::READ | access::WRITE | access::ALL => req,
        access::CLOSE if r || w || cur == access::CLOSE => access::CLOSE,
        access::CLOSE => cur,
        _ => cur,
    }
}

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
    tick: Option<SpawnHandle>,
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
    /// Size of the last round written, to judge the kernel's send queue.
    last_round_len: usize,
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
            tick: None,
            round_due: false,
            rounds_requested: 0,
            last_push: None,
            push_timer: None,
            out: BytesMut::new(),
            flushing: false,
            last_round_len: 0,
            stalled_since: None,
            skipped: 0,
            waiting_since: None,
            warned_quiet: false,
            reader: None,
            closing_reason: None,
        }
    }

    // ----- client messages -------------------------------------------------------------

    /// The access the client holds on `dev`; 0 when the device is not in its list (a listed
    /// device always has one of `r w a c e`).
    fn access_of(&self, dev: u8) -> u8 {
        self.slots
            .iter()
            .find(|s| s.code == dev)
            .map_or(0, |s| s.access)
    }

    fn on_request(
        &mut self,
        second: u8,
        pairs: Vec<(u8, u8)>,
        odd_byte: Option<u8>,
        ctx: &mut Context<Self>,
    ) -> ResponseActFuture<Self, ()> {
        if second != b'r' {
            if let Some(n) = self.throttle.allow("request-second") {
                warn!(self.log, "device request with second byte {} instead of 'r'; treated as a request", esc(second); "suppressed" => n);
            }
        }
        if let Some(b) = odd_byte {
            if let Some(n) = self.throttle.allow("request-odd") {
                warn!(self.log, "device request of odd size; trailing byte {} ignored", esc(b); "suppressed" => n);
            }
        }
        // Pairs refused before the registry is asked, with why (for the error channel).
        let mut refused: Vec<(u8, String)> = Vec::new();
        // Work out each device's final access, left to right, as the original does.
        let mut finals: Vec<(u8, u8)> = Vec::new(); // (device, access after the request)
        for &(dev, req) in &pairs {
            if !self.opts.devices[usize::from(dev)] {
                // Unknown here: `e`, without taking a slot.
                refused.push((dev, format!("no device {} on this robot", esc(dev))));
                continue;
            }
            if !matches!(
                req,
                access::READ | access::WRITE | access::ALL | access::CLOSE
            ) {
                if let Some(n) = self.throttle.allow("access-code") {
                    warn!(self.log, "unknown access code {} for device {}; ignored", esc(req), esc(dev); "suppressed" => n);
                }
                refused.push((dev, format!("unknown access code {}", esc(req))));
            }
            let req = if !self.may_write && matches!(req, access::WRITE | access::ALL) {
                refused.push((dev, self.read_only_reason().into()));
                if req == access::WRITE {
                    continue;
                }
                access::READ
            } else {
                req
            };
            let cur = match finals.iter().find(|(d, _)| *d == dev) {
                Some(&(_, a)) => a,
                None => self.access_of(dev),
            };
            let new = next_access(cur, req);
            match finals.iter_mut().find(|(d, _)| *d == dev) {
                Some(f) => f.1 = new,
                None => finals.push((dev, new)),
            }
        }
        // Net changes, in order of first appearance.
        let mut calls = Vec::new();
        let recipient = DataRecipient::of(&ctx.address());
        for &(dev, new) in &finals {
            let cur = self.access_of(dev);
            if new == cur {
                continue;
            }
            if cur == 0 && self.slots.len() + calls.len() >= self.opts.max_devices {
                let why = format!("more than {} devices for one client", self.opts.max_devices);
                refused.push((dev, why));
                continue;
            }
            let call = match new {
                access::READ | access::WRITE | access::ALL => Some(self.registry.send(Subscribe {
                    session: self.id,
                    device: dev,
                    read: matches!(new, access::READ | access::ALL),
                    write: matches!(new, access::WRITE | access::ALL),
                    recipient: recipient.clone(),
                    client: self.client.clone(),
                })),
                access::CLOSE => {
                    self.registry.do_send(Unsubscribe {
                        session: self.id,
                        device: dev,
                    });
                    None
                }
                _ => continue,
            };
            if call.is_some() {
                self.requesting.push(dev);
            }
            calls.push((dev, new, call));
        }
        let futs: Vec<_> = calls
            .into_iter()
            .map(|(dev, new, call)| async move {
                let r = match call {
                    Some(c) => Some(c.await),
                    None => None,
                };
                (dev, new, r)
            })
            .collect();
        Box::pin(
            futures::future::join_all(futs)
                .into_actor(self)
                .map(move |results, act, ctx| {
                    act.requesting.clear();
                    for (dev, new, r) in results {
                        if let Some(why) = act.apply_grant(dev, new, r) {
                            refused.push((dev, why));
                        }
                    }
                    let reply: Vec<(u8, u8)> = pairs
                        .iter()
                        .map(|&(dev, _)| match act.access_of(dev) {
                            0 => (dev, access::ERROR),
                            a => (dev, a),
                        })
                        .collect();
                    info!(act.log, "request answered"; "request" => pairs_text(&pairs), "reply" => pairs_text(&reply));
                    let bytes = message::reply(&reply);
                    act.write(&[IoSlice::new(&bytes)], ctx);
                    for (dev, why) in refused {
                        act.notice(Notice::new(kind::REFUSED, dev, why), ctx);
                    }
                    act.after_change(ctx);
                }),
        )
    }

    /// Applies the registry's answer for one device; returns why it was refused, if it
    /// was. A refused device leaves the client's list (it takes no slot).
    fn apply_grant(
        &mut self,
        dev: u8,
        new: u8,
        result: Option<
            Result<Result<crate::registry::Grant, crate::registry::DeviceError>, MailboxError>,
        >,
    ) -> Option<String> {
        let idx = match self.slots.iter().position(|s| s.code == dev) {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    code: dev,
                    access: access::ERROR,
                    readable: false,
                    command: None,
                    latest: None,
                    sent_seq: 0,
                });
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[idx];
        let refused = match result {
            None => {
                slot.release(access::CLOSE);
                None
            }
            Some(Ok(Ok(grant))) => {
                slot.access = new;
                slot.readable = grant.spec.readable;
                slot.command = grant.command.zip(grant.spec.command_size);
                if matches!(new, access::WRITE | access::ALL) && grant.spec.command_size.is_none() {
                    info!(self.log, "write access granted to a device that takes no commands; its commands will be ignored"; "device" => device::name(dev));
                }
                if !slot.reads() {
                    slot.latest = None;
                } else if let Some(d) = self.early.remove(&dev) {
                    if slot.latest.as_ref().is_none_or(|l| l.seq < d.seq) {
                        slot.latest = Some(d);
                    }
                }
                None
            }
            Some(Ok(Err(e))) => {
                warn!(self.log, "device refused"; "device" => format!("{} ({})", esc(dev), device::name(dev)), "error" => %e);
                Some(e.to_string())
            }
            Some(Err(e)) => {
                warn!(self.log, "registry unavailable"; "error" => %e);
                Some(format!("registry unavailable: {e}"))
            }
        };
        if refused.is_some() {
            self.slots.remove(idx);
        }
        self.early.remove(&dev);
        refused
    }

    fn on_command(&mut self, dev: u8, payload: Bytes, ctx: &mut Context<Self>) {
        let why: Result<(), String> = match self.slots.iter().find(|s| s.code == dev) {
            None => Err(format!("command to {} ignored: no write access", esc(dev))),
            Some(slot) if !slot.writes() => Err(format!(
                "command to {} ignored: no write access (holding {})",
                esc(dev),
                esc(slot.access)
            )),
            Some(Slot { command: None, .. }) => Err(format!(
                "command to {} ignored: the device takes no commands",
                esc(dev)
            )),
            Some(Slot {
                command: Some((recipient, size)),
                ..
            }) => {
                if payload.len() == *size {
                    recipient.do_send(Command {
                        device: dev,
                        payload,
                        session: self.id,
                    });
                    return;
                }
                Err(format!(
                    "command to {} ignored: {} bytes, the device takes {}",
                    esc(dev),
                    payload.len(),
                    size
                ))
            }
        };
        if let Err(why) = why {
            if let Some(n) = self.throttle.allow("command") {
                warn!(self.log, "{}", why; "suppressed" => n);
            }
            self.notice(Notice::new(kind::COMMAND, dev, why), ctx);
        }
    }

    /// Logs (rate limited) and tells the client (when it asked) that a config was ignored.
    fn config_ignored(&mut self, dev: u8, why: String, ctx: &mut Context<Self>) {
        if let Some(n) = self.throttle.allow("config") {
            warn!(self.log, "{}", why; "suppressed" => n);
        }
        self.notice(Notice::new(kind::CONFIG, dev, why), ctx);
    }

    fn on_config(&mut self, dev: u8, payload: Bytes, ctx: &mut Context<Self>) {
        if payload.is_empty() {
            let why = format!("config to {} ignored: no config code", esc(dev));
            self.config_ignored(dev, why, ctx);
            return;
        }
        if dev != device::SERVER {
            let fut = self.registry.send(RouteConfig {
                device: dev,
                payload,
                client: self.client.clone(),
            });
            ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| {
                let why = match r {
                    Ok(Ok(())) => return,
                    Ok(Err(e)) => format!("config ignored: {e}"),
                    Err(e) => format!("config ignored: registry unavailable: {e}"),
                };
                act.config_ignored(dev, why, ctx);
            }));
            return;
        }
        let code = payload[0];
        let args = &payload[1..];
        match (code, args.len()) {
            (config::FREQUENCY, 2) => {
                let f = u16::from_be_bytes([args[0], args[1]]);
                if f == 0 {
                    self.config_ignored(dev, "frequency 0 refused".into(), ctx);
                    return;
                }
                let f = if f > self.opts.max_frequency {
                    warn!(self.log, "frequency clamped"; "asked" => f, "max" => self.opts.max_frequency);
                    self.opts.max_frequency
                } else {
                    f
                };
                debug!(self.log, "frequency set"; "hz" => f);
                self.period = Duration::from_secs_f64(1.0 / f64::from(f));
                if self.mode == DataMode::Continuous {
                    self.next_tick = Instant::now() + self.period;
                    self.schedule_tick(ctx);
                }
            }
            (config::DATA_MODE, 1) => {
                let mode = DataMode::from_code(args[0]);
                if mode == self.mode {
                    return;
                }
                debug!(self.log, "data mode set"; "mode" => mode.code());
                self.mode = mode;
                self.rounds_requested = 0;
                self.round_due = false;
                if let Some(h) = self.tick.take() {
                    ctx.cancel_future(h);
                }
                if let Some(h) = self.push_timer.take() {
                    ctx.cancel_future(h);
                }
                match mode {
                    DataMode::Continuous => {
                        // A round at once, then every period.
                        self.next_tick = Instant::now();
                        self.schedule_tick(ctx);
                    }
                    DataMode::PushNew => self.push_new(ctx),
                    DataMode::RequestReply | DataMode::PullNew => {}
                }
            }
            (config::REQUEST_DATA, 0) => match self.mode {
                DataMode::RequestReply | DataMode::PullNew => {
                    self.rounds_requested = (self.rounds_requested + 1).min(16);
                    self.serve_requests(ctx);
                }
                _ => self.config_ignored(
                    dev,
                    "data request ignored: not in a request/reply mode".into(),
                    ctx,
                ),
            },
            (config::TIMESTAMPS, 1) => {
                self.timestamps = args[0] != 0;
                debug!(self.log, "timestamps"; "on" => self.timestamps);
            }
            _ => {
                if !self.on_extension(code, args, ctx) {
                    let why = format!(
                        "config ignored: unknown server config {} or wrong size ({} bytes)",
                        esc(code),
                        payload.len()
                    );
                    self.config_ignored(dev, why, ctx);
                }
            }
        }
    }

    // ----- data delivery ---------------------------------------------------------------

    /// Whether every read device has a reading.
    fn ready(&self) -> bool {
        self.slots.iter().all(|s| !s.reads() || s.latest.is_some())
    }

    /// Whether the client is keeping up: nothing of ours unsent, and no more than about two
    /// rounds the kernel has not yet sent (`SIOCOUTQNSD`: bytes sent but not yet
    /// acknowledged do not count, so a slow link with a long round trip is not mistaken
    /// for a client that stopped reading).
    fn can_send(&self) -> bool {
        if !self.out.is_empty() {
            return false;
        }
        /// Linux's SIOCOUTQNSD: bytes in the send queue not yet sent.
        const SIOCOUTQNSD: libc::c_ulong = 0x894B;
        let mut unsent: libc::c_int = 0;
        // SAFETY: SIOCOUTQNSD writes one int for a valid TCP socket descriptor.
        let rc = unsafe { libc::ioctl(self.stream.as_raw_fd(), SIOCOUTQNSD as _, &mut unsent) };
        rc != 0 || (unsent as usize) <= 2 * self.last_round_len.max(1)
    }

    /// After a change of devices or data: send what became sendable.
    fn after_change(&mut self, ctx: &mut Context<Self>) {
        if self.mode == DataMode::Continuous
            && self.tick.is_none()
            && self.slots.iter().any(Slot::reads)
        {
            // Ticking stopped while the client read nothing; start again, one period on.
            self.next_tick = Instant::now() + self.period;
            self.schedule_tick(ctx);
        }
        if !self.ready() {
            if self.waiting_since.is_none() {
                self.waiting_since = Some(Instant::now());
                self.warned_quiet = false;
            }
            return;
        }
        self.waiting_since = None;
        match self.mode {
            DataMode::Continuous => {
                if self.round_due {
                    self.round_due = false;
                    self.send_round(false, ctx);
                }
            }
            DataMode::PushNew => self.push_new(ctx),
            DataMode::RequestReply | DataMode::PullNew => self.serve_requests(ctx),
        }
    }

    fn schedule_tick(&mut self, ctx: &mut Context<Self>) {
        if let Some(h) = self.tick.take() {
            ctx.cancel_future(h);
        }
        let now = Instant::now();
        if self.next_tick + self.period < now {
            // Far behind (the process was stopped, say): skip the missed ticks.
            let behind = now.duration_since(self.next_tick).as_nanos() / self.period.as_nanos();
            self.next_tick += self.period * behind as u32;
        }
        let at = self.next_tick;
        self.tick = Some(
            ctx.spawn(
                crate::timer::sleep_until(at)
                    .into_actor(self)
                    .map(|_, act, ctx| act.on_tick(ctx)),
            ),
        );
    }

    fn on_tick(&mut self, ctx: &mut Context<Self>) {
        self.tick = None;
        if self.mode != DataMode::Continuous {
            return;
        }
        if !self.slots.iter().any(Slot::reads) {
            // Nothing to send: stop ticking until a device is granted (`after_change`).
            return;
        }
        self.next_tick += self.period;
        self.schedule_tick(ctx);
        if self.ready() {
            self.send_round(false, ctx);
        } else {
            self.round_due = true;
            self.check_quiet();
        }
    }

    fn check_quiet(&mut self) {
        let Some(since) = self.waiting_since else {
            return;
        };
        if !self.warned_quiet && since.elapsed() >= self.opts.quiet_after {
            self.warned_quiet = true;
            let quiet: Vec<&str> = self
                .slots
                .iter()
                .filter(|s| s.reads() && s.latest.is_none())
                .map(|s| device::name(s.code))
                .collect();
            warn!(self.log, "waiting for a first reading"; "devices" => quiet.join(","), "seconds" => since.elapsed().as_secs());
        }
    }

    fn serve_requests(&mut self, ctx: &mut Context<Self>) {
        while self.rounds_requested > 0 && self.out.is_empty() && self.ready() {
            let only_new = self.mode == DataMode::PullNew;
            if only_new && !self.slots.iter().any(|s| s.reads() && s.is_new()) {
                return; // wait for something new
            }
            self.rounds_requested -= 1;
            // A requested round is never skipped: the client asked for it (at most 16 wait).
            self.write_round(only_new, ctx);
        }
        if self.rounds_requested > 0 && !self.ready() {
            self.check_quiet();
        }
    }

    fn push_new(&mut self, ctx: &mut Context<Self>) {
        if self.push_timer.is_some() || !self.slots.iter().any(|s| s.reads() && s.is_new()) {
            return;
        }
        let now = Instant::now();
        match self.last_push {
            Some(last) if now < last + self.period => {
                let at = last + self.period;
                self.push_timer =
                    Some(
                        ctx.spawn(crate::timer::sleep_until(at).into_actor(self).map(
                            |_, act, ctx| {
                                act.push_timer = None;
                                act.push_new(ctx);
                            },
                        )),
                    );
            }
            _ => {
                if self.send_round(true, ctx) {
                    self.last_push = Some(now);
                }
            }
        }
    }

    /// Writes one round (every read device, or only those with new data) in one write,
    /// unless the client is not reading, in which case the round is skipped (it will get
    /// the newest data when it reads again). Returns whether it was written.
    fn send_round(&mut self, only_new: bool, ctx: &mut Context<Self>) -> bool {
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
        self.stalled_since = None;
        self.write_round(only_new, ctx)
    }

    /// Writes one round in one vectored write; returns whether there was anything to send.
    fn write_round(&mut self, only_new: bool, ctx: &mut Context<Self>) -> bool {
        const MAX: usize = 64;
        let ts = if self.timestamps { TIMESTAMP_SIZE } else { 0 };
        let mut heads = [[0u8; 3 + TIMESTAMP_SIZE]; MAX];
        let mut picks = [0usize; MAX];
        let mut n = 0;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if n == MAX {
                break;
            }
            if !slot.reads() || (only_new && !slot.is_new()) {
                continue;
            }
            let Some(d) = &slot.latest else { continue };
            let len = (d.data.len() + ts).min(usize::from(u16::MAX)) as u16;
            let h = &mut heads[n];
            h[..3].copy_from_slice(&message::data_header(slot.code, len));
            h[3..7].copy_from_slice(&d.timestamp.sec.to_be_bytes());
            h[7..11].copy_from_slice(&d.timestamp.usec.to_be_bytes());
            slot.sent_seq = d.seq;
            picks[n] = i;
            n += 1;
        }
        if n == 0 {
            return false;
        }
        // On the stack: a round costs no allocation.
        let mut slices = [IoSlice::new(&[]); 2 * MAX];
        let mut k = 0;
        for (head, &i) in heads.iter().zip(&picks[..n]) {
            let Some(d) = &self.slots[i].latest else {
                continue;
            };
            slices[k] = IoSlice::new(&head[..3 + ts]);
            slices[k + 1] = IoSlice::new(&d.data);
            k += 2;
        }
        let iov = &slices[..k];
        self.last_round_len = iov.iter().map(|s| s.len()).sum();
        let r = write_whole(&self.stream, &mut self.out, iov);
        self.after_write(r, ctx);
        true
    }

    // ----- writing ---------------------------------------------------------------------

    /// Writes whole messages: at once if the kernel takes them, otherwise the rest is kept
    /// and flushed when the socket is writable (nothing else is sent before it).
    fn write(&mut self, iov: &[IoSlice], ctx: &mut Context<Self>) {
        let r = write_whole(&self.stream, &mut self.out, iov);
        self.after_write(r, ctx);
    }

    fn after_write(&mut self, r: io::Result<()>, ctx: &mut Context<Self>) {
        match r {
            Ok(()) if self.out.is_empty() => {}
            Ok(()) => self.start_flush(ctx),
            Err(e) => self.fail(e, ctx),
        }
    }

    fn start_flush(&mut self, ctx: &mut Context<Self>) {
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

    fn flush(&mut self, ctx: &mut Context<Self>) {
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

    fn fail(&mut self, e: io::Error, ctx: &mut Context<Self>) {
        if self.closing_reason.is_none() {
            self.closing_reason = Some(format!("write failed: {e}"));
        }
        ctx.stop();
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
        self.next_tick = Instant::now() + self.period;
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
        Box::pin(handled.then(|(), act, ctx| act.until_drained(ctx)))
    }
}

/// Whether a client message presents a key (`x y k ...`).
fn is_key(m: &ClientMessage) -> bool {
    matches!(m, ClientMessage::Config { device, payload }
        if *device == device::SERVER && payload.first() == Some(&config::KEY))
}

impl Session {
    /// Resolves at once while the client's unread replies and notices are within
    /// `max_output`; otherwise when they have drained, or ends the session when they have
    /// not within `stall_timeout` (its input is not read meanwhile).
    fn until_drained(&mut self, _ctx: &mut Context<Self>) -> ResponseActFuture<Self, ()> {
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
            if slot.access != access::CLOSE
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
    }
}

impl Handler<Close> for Session {
    type Result = ();

    fn handle(&mut self, _msg: Close, ctx: &mut Self::Context) {
        self.closing_reason = Some("server shutting down".into());
        ctx.stop();
    }
}

/// Writes `iov` to the socket without blocking; whatever the kernel does not take is
/// appended to `out` (which must then be flushed). When `out` already holds bytes, all of
/// `iov` goes after them, keeping messages whole and in order.
fn write_whole(stream: &TcpStream, out: &mut BytesMut, iov: &[IoSlice]) -> io::Result<()> {
    let total: usize = iov.iter().map(|s| s.len()).sum();
    let mut written = 0;
    if out.is_empty() {
        match stream.try_write_vectored(iov) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_state_machine_follows_the_original() {
        let (r, w, a, c, e) = (
            access::READ,
            access::WRITE,
            access::ALL,
            access::CLOSE,
            access::ERROR,
        );
        // not listed
        assert_eq!(next_access(0, r), r);
        assert_eq!(next_access(0, w), w);
        assert_eq!(next_access(0, a), a);
        assert_eq!(next_access(0, c), 0);
        // upgrades merge
        assert_eq!(next_access(r, w), a);
        assert_eq!(next_access(w, r), a);
        assert_eq!(next_access(r, a), a);
        // downgrades
        assert_eq!(next_access(a, r), r);
        assert_eq!(next_access(a, w), w);
        // repeats
        assert_eq!(next_access(r, r), r);
        assert_eq!(next_access(a, a), a);
        // close
        assert_eq!(next_access(r, c), c);
        assert_eq!(next_access(a, c), c);
        assert_eq!(next_access(c, c), c);
        assert_eq!(next_access(e, c), e);
        // after an error, a retry is a fresh request
        assert_eq!(next_access(e, r), r);
        assert_eq!(next_access(e, w), w);
        // unknown access codes change nothing
        assert_eq!(next_access(r, b'q'), r);
        assert_eq!(next_access(0, b'q'), 0);
    }
}
