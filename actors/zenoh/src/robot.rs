//! One robot on Zenoh: its publishers, command and e-stop subscribers, liveliness token
//! and device-list queryable ([`declare`]), and [`RobotBridge`], the actor that is the
//! robot's registry session for all of them.
//!
//! Zenoh calls its callbacks on its own threads. They never block and never queue without
//! bound: commands go to a newest-wins slot per device ([`Inbox`]) with at most one wake-up
//! message waiting; e-stop requests and device-list queries are dropped past
//! [`MAX_IN_FLIGHT`] waiting ones; readings wait at most one per device in the actor.

use super::{alive_key, data_key, devices_json, devices_key, encode_timestamp, estop_key};
use actix::prelude::*;
use bytes::Bytes;
use player_core::access::Policy;
use player_core::frontend::bridge::{Detach, Stats, Waiting};
use player_core::frontend::{Access, Holdings};
use player_core::logging::{code as show, Throttle};
use player_core::registry::{EStop, EStopState, Grant, ListDevices, Registry, SessionId};
use player_kit::driver::{Command, DataRecipient, DeviceData, DeviceDataBatch, DeviceError};
use player_proto::device;
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use zenoh::pubsub::Publisher;
use zenoh::query::Query;
use zenoh::Wait;

/// How long the bridge keeps write access to a device after its last Zenoh command; then
/// it gives it back and the registry stops the device (as when a TCP writer leaves).
pub const HOLD: Duration = Duration::from_secs(2);

/// Largest command payload taken from Zenoh (a device's exact size is checked later).
pub const MAX_COMMAND: usize = player_core::codec::MAX_PAYLOAD;

/// Largest attachment (the access key) taken with a command.
pub const MAX_ATTACHMENT: usize = player_proto::ext::MAX_KEY;

/// Most e-stop requests and device-list queries waiting for the actor; more are dropped.
pub const MAX_IN_FLIGHT: usize = 32;

/// How often write holds expire and failed devices are retried.
const TICK: Duration = Duration::from_millis(250);

/// Between two setup attempts of a device that failed.
const RETRY: Duration = Duration::from_secs(5);

/// A command's payload, the attachment it came with, and when it was sent as far as its
/// Zenoh timestamp says (a router stamps each sample it forwards unstamped).
type Sent = (Bytes, Option<Vec<u8>>, Option<SystemTime>);

/// What Zenoh's callbacks hand the actor without a message per sample.
#[derive(Default)]
pub struct Inbox {
    /// The newest command per device code, with its attachment.
    commands: Mutex<HashMap<u8, Sent>>,
    /// A [`CommandsReady`] is on its way to the actor.
    woken: AtomicBool,
    /// E-stop requests and queries sent to the actor and not handled yet.
    in_flight: AtomicUsize,
    /// Samples and queries refused here (too large, unknown device, too many waiting).
    refused: AtomicU64,
}

/// Zenoh → actor: the inbox has commands.
#[derive(Message)]
#[rtype(result = "()")]
struct CommandsReady;

/// Zenoh → actor: someone asked to latch (`true`) or release the e-stop.
#[derive(Message)]
#[rtype(result = "()")]
struct EStopAsk {
    latch: bool,
    attachment: Option<Vec<u8>>,
}

/// Zenoh → actor: a query of the device list.
#[derive(Message)]
#[rtype(result = "()")]
struct DevicesQuery(Query);

/// Zenoh → actor: whether some subscriber matches a device's key now.
#[derive(Message)]
#[rtype(result = "()")]
struct Matching {
    code: u8,
    matching: bool,
}

/// Bridge → actor: the publishers are declared.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Attach {
    /// One per device code.
    pub publishers: HashMap<u8, Publisher<'static>>,
}

/// Bridge → actor: the access policy was reloaded (SIGHUP). Write access the bridge holds
/// on behalf of commands whose key is no longer the key is given back at once (the
/// registry then stops the device, as when a TCP writer's key is withdrawn); later
/// commands and e-stop releases are checked against the key in force.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Recheck;

/// Actor → itself: publish the readings that wait.
#[derive(Message)]
#[rtype(result = "()")]
struct Flush;

/// What [`declare`] made besides the publishers; dropping them undeclares them.
pub struct Declared {
    /// `player/<robot>/@alive`.
    pub token: zenoh::liveliness::LivelinessToken,
    /// `player/<robot>/@devices`.
    pub queryable: zenoh::query::Queryable<()>,
    /// `player/<robot>/*/cmd`.
    pub commands: zenoh::pubsub::Subscriber<()>,
    /// `player/<robot>/@estop`.
    pub estop: zenoh::pubsub::Subscriber<()>,
}

fn attachment_of(s: &zenoh::sample::Sample) -> Result<Option<Vec<u8>>, ()> {
    match s.attachment() {
        None => Ok(None),
        Some(a) if a.len() <= MAX_ATTACHMENT => Ok(Some(a.to_bytes().into_owned())),
        Some(_) => Err(()),
    }
}

/// Declares robot `name`'s Zenoh entities on `session`, their callbacks feeding `addr`
/// through `inbox`. Blocks: call it off the actix arbiters.
pub fn declare(
    session: &zenoh::Session,
    name: &str,
    devices: &[u8],
    addr: &Addr<RobotBridge>,
    inbox: &Arc<Inbox>,
) -> zenoh::Result<(HashMap<u8, Publisher<'static>>, Declared)> {
    let mut publishers = HashMap::new();
    for &code in devices {
        let p = session
            .declare_publisher(data_key(name, code))
            .congestion_control(zenoh::qos::CongestionControl::Drop)
            .express(true)
            .wait()?;
        let a = addr.clone();
        p.matching_listener()
            .callback(move |s| {
                a.do_send(Matching {
                    code,
                    matching: s.matching(),
                })
            })
            .background()
            .wait()?;
        publishers.insert(code, p);
    }
    let a = addr.clone();
    let ib = inbox.clone();
    let prefix = format!("{}/{name}/", super::PREFIX);
    let known: Vec<u8> = devices.to_vec();
    let commands = session
        .declare_subscriber(format!("{prefix}*/cmd"))
        .callback(move |s| {
            let key = s.key_expr().as_str();
            let code = match key.strip_prefix(&prefix).map(str::as_bytes) {
                Some([c, b'/', b'c', b'm', b'd']) if known.contains(c) => *c,
                _ => {
                    ib.refused.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            };
            let (payload, Ok(att)) = (s.payload(), attachment_of(&s)) else {
                ib.refused.fetch_add(1, Ordering::Relaxed);
                return;
            };
            if payload.len() > MAX_COMMAND {
                ib.refused.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let bytes = Bytes::from(payload.to_bytes().into_owned());
            let sent = s.timestamp().map(|t| t.get_time().to_system_time());
            ib.commands
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(code, (bytes, att, sent));
            if !ib.woken.swap(true, Ordering::AcqRel) {
                a.do_send(CommandsReady);
            }
        })
        .wait()?;
    let a = addr.clone();
    let ib = inbox.clone();
    let estop = session
        .declare_subscriber(estop_key(name))
        .callback(move |s| {
            let p = s.payload();
            let (1, Ok(attachment)) = (p.len(), attachment_of(&s)) else {
                ib.refused.fetch_add(1, Ordering::Relaxed);
                return;
            };
            let latch = p.to_bytes()[0] != 0;
            if ib.in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
                ib.in_flight.fetch_sub(1, Ordering::AcqRel);
                ib.refused.fetch_add(1, Ordering::Relaxed);
                return;
            }
            a.do_send(EStopAsk { latch, attachment });
        })
        .wait()?;
    let a = addr.clone();
    let ib = inbox.clone();
    let queryable = session
        .declare_queryable(devices_key(name))
        .callback(move |q| {
            if ib.in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
                ib.in_flight.fetch_sub(1, Ordering::AcqRel);
                ib.refused.fetch_add(1, Ordering::Relaxed);
                return;
            }
            a.do_send(DevicesQuery(q));
        })
        .wait()?;
    let token = session.liveliness().declare_token(alive_key(name)).wait()?;
    Ok((
        publishers,
        Declared {
            token,
            queryable,
            commands,
            estop,
        },
    ))
}

/// What a robot's bridge actor is started with.
pub struct RobotOptions {
    /// The robot's name.
    pub robot: String,
    /// Its registry.
    pub registry: Addr<Registry>,
    /// The bridge's session id at that registry.
    pub session: SessionId,
    /// The robot's device codes.
    pub devices: Vec<u8>,
    /// Whether Zenoh commands are obeyed at all.
    pub write: bool,
    /// The access policy in force (shared with every front end, swapped by a reload):
    /// with a key, a command must carry it as its attachment.
    pub policy: Arc<Policy>,
    /// Shared with the Zenoh callbacks.
    pub inbox: Arc<Inbox>,
    /// Logger.
    pub log: Logger,
}

/// Per device: what the bridge asked of the registry and why.
#[derive(Default)]
struct Dev {
    /// Some Zenoh subscriber matches the device's key.
    matching: bool,
    /// Zenoh commands came within [`HOLD`].
    commanding: bool,
    /// The registry's guard for this device, once write access is granted.
    command: Option<Recipient<Command>>,
    command_size: Option<usize>,
    /// The device's command watchdog, as the last grant said (kept after write access
    /// is given back): a command older than this is stale.
    command_timeout: Option<Duration>,
    /// The newest command waiting for the grant, and when it was sent.
    pending: Option<(Bytes, Option<SystemTime>)>,
    /// The attachment of the newest command obeyed (the key it carried).
    keyed_with: Option<Vec<u8>>,
    last_command: Option<Instant>,
    failed_at: Option<Instant>,
}

/// One robot's session of the registry on behalf of every Zenoh peer.
pub struct RobotBridge {
    o: RobotOptions,
    /// The devices the bridge holds at the registry.
    holdings: Holdings,
    publishers: HashMap<u8, Publisher<'static>>,
    devs: HashMap<u8, Dev>,
    /// Readings not published yet: the newest per device.
    waiting: Waiting,
    stats: Stats,
    throttle: Throttle,
    detached: bool,
}

impl RobotBridge {
    /// A bridge actor for one robot (not started).
    pub fn new(o: RobotOptions) -> Self {
        RobotBridge {
            holdings: Holdings::new(o.registry.clone(), o.session, "zenoh"),
            o,
            publishers: HashMap::new(),
            devs: HashMap::new(),
            waiting: Waiting::default(),
            stats: Stats::default(),
            throttle: Throttle::new(Duration::from_secs(10), 5),
            detached: false,
        }
    }

    fn warn_throttled(&mut self, kind: &'static str, text: &str, code: u8) {
        if let Some(unlogged) = self.throttle.allow(kind) {
            warn!(self.o.log, "{}", text; "device" => show(code), "unlogged" => unlogged);
        }
    }

    /// Brings the registry's view of the bridge's access to `code` in line with who
    /// listens (read) and who commands (write).
    fn sync(&mut self, code: u8, ctx: &mut Context<Self>) {
        if self.detached {
            return;
        }
        let d = self.devs.entry(code).or_default();
        let want = Access::new(d.matching, d.commanding);
        if !d.commanding {
            d.command = None;
            d.pending = None;
        }
        let me = ctx.address();
        self.holdings.want_in(
            ctx,
            code,
            want,
            || DataRecipient::of(&me),
            |act: &mut Self| Some(&mut act.holdings),
            move |act, granted, _| act.granted(code, want.write, granted),
        );
    }

    /// The registry's answer to the newest request for `code` (asked with write access
    /// when `write`).
    fn granted(&mut self, code: u8, write: bool, granted: Result<Grant, DeviceError>) {
        let d = self.devs.entry(code).or_default();
        match granted {
            Ok(grant) => {
                d.failed_at = None;
                if !write {
                    return;
                }
                match grant.command {
                    Some(c) => {
                        d.command = Some(c);
                        d.command_size = grant.spec.command_size;
                        d.command_timeout = grant.spec.command_timeout;
                        if let Some((p, sent)) = d.pending.take() {
                            if !self.stale(code, sent) {
                                self.forward(code, p);
                            }
                        }
                    }
                    None => {
                        d.pending = None;
                        self.warn_throttled(
                            "no commands",
                            "zenoh command ignored: the device takes no commands",
                            code,
                        );
                    }
                }
            }
            Err(DeviceError::RegistryStopped) => {
                d.failed_at = Some(Instant::now());
            }
            Err(e) => {
                d.command = None;
                d.failed_at = Some(Instant::now());
                warn!(self.o.log, "zenoh: device not available"; "device" => device::name(code), "error" => %e);
            }
        }
    }

    /// Sends a command through the registry's guard (size checked here, as a TCP session
    /// checks it).
    fn forward(&mut self, code: u8, payload: Bytes) {
        let Some(d) = self.devs.get(&code) else {
            return;
        };
        let (Some(c), size) = (&d.command, d.command_size) else {
            return;
        };
        if size.is_some_and(|n| n != payload.len()) {
            self.stats.ignored += 1;
            let text = format!(
                "zenoh command ignored: {} bytes, the device takes {}",
                payload.len(),
                size.unwrap_or(0)
            );
            if let Some(unlogged) = self.throttle.allow("command size") {
                warn!(self.o.log, "{}", text; "device" => show(code), "unlogged" => unlogged);
            }
            return;
        }
        self.stats.commands += 1;
        c.do_send(Command {
            device: code,
            payload,
            session: self.o.session,
        });
    }

    /// Whether a command to `code` sent at `sent` is older than the device's watchdog
    /// (held back by a link that came back before Zenoh gave it up, or queued at a
    /// router): then it is ignored, with a warning (at most 5 per 10 s) saying how old.
    /// Commands without a timestamp (no router on their way), and devices without a
    /// watchdog, are not checked.
    fn stale(&mut self, code: u8, sent: Option<SystemTime>) -> bool {
        let limit = self.devs.get(&code).and_then(|d| d.command_timeout);
        let (Some(limit), Some(sent)) = (limit, sent) else {
            return false;
        };
        let age = SystemTime::now().duration_since(sent).unwrap_or_default();
        if age <= limit {
            return false;
        }
        self.stats.ignored += 1;
        if let Some(unlogged) = self.throttle.allow("stale") {
            warn!(self.o.log, "zenoh command ignored: older than the device's command_timeout (held back by the network, or this host's clock and the Zenoh router's differ)";
                "device" => show(code), "age_ms" => age.as_millis() as u64,
                "command_timeout_ms" => limit.as_millis() as u64, "unlogged" => unlogged);
        }
        true
    }

    fn on_command(
        &mut self,
        code: u8,
        payload: Bytes,
        att: Option<Vec<u8>>,
        sent: Option<SystemTime>,
        ctx: &mut Context<Self>,
    ) {
        if !self.o.write {
            self.stats.ignored += 1;
            return self.warn_throttled(
                "no write",
                "zenoh command ignored: [zenoh] write is false",
                code,
            );
        }
        if !self.keyed(att.as_deref()) {
            self.stats.ignored += 1;
            return self.warn_throttled(
                "key",
                "zenoh command ignored: its attachment is not the access key",
                code,
            );
        }
        if self.stale(code, sent) {
            return;
        }
        let d = self.devs.entry(code).or_default();
        d.last_command = Some(Instant::now());
        d.keyed_with = att;
        if d.command.is_some() {
            self.forward(code, payload);
        } else {
            d.pending = Some((payload, sent));
            d.commanding = true;
            self.sync(code, ctx);
        }
    }

    /// Whether a command (or e-stop release) with this attachment may command under the
    /// policy in force: any when no key is set, else only one carrying the key.
    fn keyed(&self, att: Option<&[u8]>) -> bool {
        !self.o.policy.has_key() || att.is_some_and(|a| self.o.policy.key_matches(a))
    }

    fn take_reading(&mut self, d: &DeviceData, ctx: &mut Context<Self>) {
        if !self.holdings.take(d) {
            return;
        }
        if self.waiting.keep(d, &mut self.stats) {
            ctx.notify(Flush);
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let codes: Vec<u8> = self.devs.keys().copied().collect();
        for code in codes {
            let d = self.devs.get_mut(&code).expect("listed above");
            if d.commanding && d.last_command.is_none_or(|t| now - t >= HOLD) {
                d.commanding = false;
                info!(self.o.log, "zenoh commands stopped; write access given back"; "device" => device::name(code));
            }
            let retry = d.failed_at.is_some_and(|t| now - t >= RETRY);
            if retry {
                d.failed_at = None;
            }
            let d = &self.devs[&code];
            let want = Access::new(d.matching, d.commanding);
            let held = self.holdings.held(code).unwrap_or_default();
            if want != held && (d.failed_at.is_none() || retry) {
                self.sync(code, ctx);
            }
        }
    }
}

impl Actor for RobotBridge {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(TICK, |act, ctx| act.tick(ctx));
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        if !self.detached {
            self.holdings.leave();
        }
    }
}

impl Handler<Attach> for RobotBridge {
    type Result = ();

    fn handle(&mut self, msg: Attach, ctx: &mut Self::Context) {
        self.publishers = msg.publishers;
        if self.waiting.wake() {
            ctx.notify(Flush);
        }
    }
}

impl Handler<Detach> for RobotBridge {
    type Result = ();

    fn handle(&mut self, _msg: Detach, ctx: &mut Self::Context) {
        if !self.detached {
            self.detached = true;
            self.holdings.leave();
        }
        self.publishers.clear();
        let refused = self.o.inbox.refused.load(Ordering::Relaxed);
        self.stats
            .log_leave(&self.o.log, "zenoh bridge leaves the robot", refused);
        ctx.stop();
    }
}

impl Handler<Recheck> for RobotBridge {
    type Result = ();

    fn handle(&mut self, _msg: Recheck, ctx: &mut Self::Context) {
        let stale: Vec<u8> = self
            .devs
            .iter()
            .filter(|(_, d)| d.commanding && !self.keyed(d.keyed_with.as_deref()))
            .map(|(c, _)| *c)
            .collect();
        for code in stale {
            if let Some(d) = self.devs.get_mut(&code) {
                d.commanding = false;
                d.last_command = None;
                d.keyed_with = None;
            }
            info!(self.o.log, "configuration reloaded: the zenoh commands' key is no longer the key; write access given back"; "device" => device::name(code));
            self.sync(code, ctx);
        }
    }
}

impl Handler<Matching> for RobotBridge {
    type Result = ();

    fn handle(&mut self, msg: Matching, ctx: &mut Self::Context) {
        let d = self.devs.entry(msg.code).or_default();
        if d.matching != msg.matching {
            d.matching = msg.matching;
            if !msg.matching {
                self.waiting.forget(msg.code);
            }
            self.sync(msg.code, ctx);
        }
    }
}

impl Handler<DeviceData> for RobotBridge {
    type Result = ();

    fn handle(&mut self, msg: DeviceData, ctx: &mut Self::Context) {
        self.take_reading(&msg, ctx);
    }
}

impl Handler<DeviceDataBatch> for RobotBridge {
    type Result = ();

    fn handle(&mut self, msg: DeviceDataBatch, ctx: &mut Self::Context) {
        for d in msg.0.iter() {
            self.take_reading(d, ctx);
        }
    }
}

impl Handler<Flush> for RobotBridge {
    type Result = ();

    fn handle(&mut self, _msg: Flush, _ctx: &mut Self::Context) {
        if self.publishers.is_empty() {
            return self.waiting.postpone();
        }
        for (code, d) in self.waiting.take() {
            let Some(p) = self.publishers.get(&code) else {
                continue;
            };
            let r = p
                .put(d.data)
                .attachment(encode_timestamp(d.timestamp))
                .wait();
            match r {
                Ok(()) => self.stats.published += 1,
                Err(e) => {
                    if let Some(unlogged) = self.throttle.allow("put") {
                        warn!(self.o.log, "zenoh publish failed"; "device" => show(code), "error" => %e, "unlogged" => unlogged);
                    }
                }
            }
        }
    }
}

impl Handler<CommandsReady> for RobotBridge {
    type Result = ();

    fn handle(&mut self, _msg: CommandsReady, ctx: &mut Self::Context) {
        self.o.inbox.woken.store(false, Ordering::Release);
        let taken = std::mem::take(
            &mut *self
                .o
                .inbox
                .commands
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for (code, (payload, att, sent)) in taken {
            self.on_command(code, payload, att, sent, ctx);
        }
    }
}

impl Handler<EStopAsk> for RobotBridge {
    type Result = ();

    fn handle(&mut self, msg: EStopAsk, _ctx: &mut Self::Context) {
        self.o.inbox.in_flight.fetch_sub(1, Ordering::AcqRel);
        if !msg.latch && (!self.o.write || !self.keyed(msg.attachment.as_deref())) {
            return self.warn_throttled(
                "release",
                "zenoh e-stop release ignored: Zenoh may not command this robot (write, key)",
                0,
            );
        }
        self.o.registry.do_send(EStop {
            latch: msg.latch,
            client: "zenoh".into(),
        });
    }
}

impl Handler<DevicesQuery> for RobotBridge {
    type Result = ();

    fn handle(&mut self, msg: DevicesQuery, ctx: &mut Self::Context) {
        self.o.inbox.in_flight.fetch_sub(1, Ordering::AcqRel);
        let registry = self.o.registry.clone();
        let robot = self.o.robot.clone();
        let key = devices_key(&robot);
        let query = msg.0;
        ctx.spawn(
            async move {
                let list = registry.send(ListDevices).await.unwrap_or_default();
                let estop = registry.send(EStopState).await.ok().flatten();
                let body = devices_json(&robot, &list, estop.as_deref());
                // Replying only queues the sample (no blocking call).
                let _ = query.reply(key, body).wait();
            }
            .into_actor(self),
        );
    }
}
