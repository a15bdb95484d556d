//! One robot on Zenoh: its publishers, command and e-stop subscribers, liveliness token
//! and device-list queryable ([`declare`]), and [`ZenohRobot`], the actor that is the
//! robot's registry session for all of them (a [`BridgeRobot`]: what every bridge's robot
//! actor does is the core's, `player_core::frontend::bridge`).
//!
//! Zenoh calls its callbacks on its own threads. They never block and never queue without
//! bound: commands go to a newest-wins slot per device (the robot's [`Mailbox`]) with at
//! most one wake-up message waiting; e-stop requests and device-list queries are dropped
//! past [`MAX_IN_FLIGHT`] waiting ones. Readings never reach the actor: [`Publishers`] puts
//! them on the registry's thread.

use super::{alive_key, data_key, devices_json, devices_key, encode_timestamp, estop_key};
use actix::prelude::*;
use bytes::Bytes;
use player_core::access::Policy;
use player_core::frontend::bridge::{
    self, BridgeParts, BridgeRobot, Direct, Mailbox, Matching, PublishNow, Stamp,
};
use player_core::frontend::{Access, Holdings};
use player_core::logging::code as show;
use player_core::registry::{EStopState, ListDevices, Registry, SessionId};
use player_kit::driver::{DataRecipient, DataSink, DeviceData, DeviceError};
use player_proto::device;
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
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

/// Between two setup attempts of a device that failed.
const RETRY: Duration = Duration::from_secs(5);

/// A command as Zenoh delivered it: its payload, the attachment it came with (the key),
/// and when it was sent as far as its Zenoh timestamp says (a router stamps each sample
/// it forwards unstamped; a command older than the device's watchdog is not obeyed).
#[derive(Debug, Clone)]
pub struct CommandSample {
    payload: Bytes,
    attachment: Option<Vec<u8>>,
    sent: Option<Stamp>,
}

/// The commands Zenoh's callbacks leave for the actor: the newest per device code.
pub type Commands = HashMap<u8, CommandSample>;

/// E-stop requests and device-list queries sent to the actor as messages (each must be
/// answered, none replaces another) and not handled yet: at most [`MAX_IN_FLIGHT`].
#[derive(Debug, Default)]
pub struct InFlight(AtomicUsize);

impl InFlight {
    /// Whether one more may be sent (then it counts until [`InFlight::done`]).
    fn admit(&self) -> bool {
        if self.0.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
            self.0.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// One was handled.
    fn done(&self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

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

/// Bridge → actor: the access policy was reloaded (SIGHUP). Write access the bridge holds
/// on behalf of commands whose key is no longer the key is given back at once (the
/// registry then stops the device, as when a TCP writer's key is withdrawn); later
/// commands and e-stop releases are checked against the key in force.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RecheckKeys;

/// What [`declare`] made besides the publishers; dropping them undeclares them.
pub struct RobotEntities {
    /// `player/<robot>/@alive`.
    pub token: zenoh::liveliness::LivelinessToken,
    /// `player/<robot>/@devices`.
    pub queryable: zenoh::query::Queryable<()>,
    /// `player/<robot>/*/cmd`.
    pub commands: zenoh::pubsub::Subscriber<()>,
    /// `player/<robot>/@estop`.
    pub estop: zenoh::pubsub::Subscriber<()>,
}

/// What Zenoh's callbacks of one robot share with its actor.
#[derive(Clone)]
pub struct Callbacks {
    /// The actor.
    pub addr: Addr<ZenohRobot>,
    /// The commands, and what the callbacks refused.
    pub mailbox: Arc<Mailbox<Commands>>,
    /// E-stop requests and queries on their way.
    pub in_flight: Arc<InFlight>,
}

fn attachment_of(s: &zenoh::sample::Sample) -> Result<Option<Vec<u8>>, ()> {
    match s.attachment() {
        None => Ok(None),
        Some(a) if a.len() <= MAX_ATTACHMENT => Ok(Some(a.to_bytes().into_owned())),
        Some(_) => Err(()),
    }
}

/// Declares robot `name`'s Zenoh entities on `session`, their callbacks feeding the actor
/// through `to`. Blocks: call it off the actix arbiters. The publishers are in the order of
/// `devices` (the actor's numbering in [`Matching`]).
pub fn declare(
    session: &zenoh::Session,
    name: &str,
    devices: &[u8],
    to: &Callbacks,
) -> zenoh::Result<(HashMap<u8, Publisher<'static>>, RobotEntities)> {
    let mut publishers = HashMap::new();
    for (i, &code) in devices.iter().enumerate() {
        let p = session
            .declare_publisher(data_key(name, code))
            .congestion_control(zenoh::qos::CongestionControl::Drop)
            .express(true)
            .wait()?;
        let a = to.addr.clone();
        p.matching_listener()
            .callback(move |s| {
                a.do_send(Matching {
                    publisher: i,
                    matching: s.matching(),
                })
            })
            .background()
            .wait()?;
        publishers.insert(code, p);
    }
    let cb = to.clone();
    let prefix = format!("{}/{name}/", super::PREFIX);
    let known: Vec<u8> = devices.to_vec();
    let commands = session
        .declare_subscriber(format!("{prefix}*/cmd"))
        .callback(move |s| {
            let key = s.key_expr().as_str();
            let code = match key.strip_prefix(&prefix).map(str::as_bytes) {
                Some([c, b'/', b'c', b'm', b'd']) if known.contains(c) => *c,
                _ => return cb.mailbox.refuse(),
            };
            let (payload, Ok(attachment)) = (s.payload(), attachment_of(&s)) else {
                return cb.mailbox.refuse();
            };
            if payload.len() > MAX_COMMAND {
                return cb.mailbox.refuse();
            }
            let sample = CommandSample {
                payload: Bytes::from(payload.to_bytes().into_owned()),
                attachment,
                sent: s.timestamp().map(|t| Stamp {
                    at: t.get_time().to_system_time(),
                    source: u128::from_le_bytes(t.get_id().to_le_bytes()),
                }),
            };
            if cb.mailbox.commands.put(|c| {
                c.insert(code, sample);
            }) {
                cb.addr.do_send(bridge::CommandsReady);
            }
        })
        .wait()?;
    let cb = to.clone();
    let estop = session
        .declare_subscriber(estop_key(name))
        .callback(move |s| {
            let p = s.payload();
            let (1, Ok(attachment)) = (p.len(), attachment_of(&s)) else {
                return cb.mailbox.refuse();
            };
            let latch = p.to_bytes()[0] != 0;
            if !cb.in_flight.admit() {
                return cb.mailbox.refuse();
            }
            cb.addr.do_send(EStopAsk { latch, attachment });
        })
        .wait()?;
    let cb = to.clone();
    let queryable = session
        .declare_queryable(devices_key(name))
        .callback(move |q| {
            if !cb.in_flight.admit() {
                return cb.mailbox.refuse();
            }
            cb.addr.do_send(DevicesQuery(q));
        })
        .wait()?;
    let token = session.liveliness().declare_token(alive_key(name)).wait()?;
    Ok((
        publishers,
        RobotEntities {
            token,
            queryable,
            commands,
            estop,
        },
    ))
}

/// What a robot's actor is started with.
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
    pub mailbox: Arc<Mailbox<Commands>>,
    /// Shared with the Zenoh callbacks.
    pub in_flight: Arc<InFlight>,
    /// Logger.
    pub log: Logger,
}

/// Per device: why the bridge holds it.
#[derive(Default)]
struct Dev {
    /// Some Zenoh subscriber matches the device's key.
    matching: bool,
    /// Zenoh commands came within [`HOLD`].
    commanding: bool,
    /// The attachment of the newest command obeyed (the key it carried).
    keyed_with: Option<Vec<u8>>,
    last_command: Option<Instant>,
    failed_at: Option<Instant>,
}

/// One robot's session of the registry on behalf of every Zenoh peer.
pub struct ZenohRobot {
    parts: BridgeParts<Commands>,
    robot: String,
    /// The device codes, in the order of the publishers (as [`Matching`] numbers them).
    codes: Vec<u8>,
    write: bool,
    policy: Arc<Policy>,
    in_flight: Arc<InFlight>,
    /// Publishes the readings on the registry's thread, with the publishers once attached.
    direct: Arc<Direct<Publishers>>,
    attached: bool,
    devs: HashMap<u8, Dev>,
}

/// The robot's publishers, by device code: each reading on its device's key, the driver's
/// timestamp as the attachment, published on the thread that has the reading
/// ([`Direct`]); the session's congestion control drops rather than waits
/// ([`super::ZenohSettings::zenoh_config`]).
pub struct Publishers(pub HashMap<u8, Publisher<'static>>);

impl PublishNow for Publishers {
    fn publish_now(&self, d: &DeviceData) -> Result<u64, String> {
        let Some(p) = self.0.get(&d.device) else {
            return Ok(0);
        };
        p.put(d.data.clone())
            .attachment(encode_timestamp(d.timestamp))
            .wait()
            .map(|()| 1)
            .map_err(|e| e.to_string())
    }
}

player_core::bridge_robot_handlers!(ZenohRobot);

impl ZenohRobot {
    /// An actor for one robot (not started).
    pub fn new(o: RobotOptions) -> Self {
        let holdings = Holdings::new(o.registry, o.session, "zenoh");
        ZenohRobot {
            parts: BridgeParts::new(holdings, o.mailbox, o.log.clone()),
            robot: o.robot,
            codes: o.devices,
            write: o.write,
            policy: o.policy,
            in_flight: o.in_flight,
            direct: Direct::new("zenoh", o.log.clone()),
            attached: false,
            devs: HashMap::new(),
        }
    }

    fn warn_throttled(&mut self, kind: &'static str, text: &str, code: u8) {
        if let Some(unlogged) = self.parts.throttle.allow(kind) {
            warn!(self.parts.log, "{}", text; "device" => show(code), "unlogged" => unlogged);
        }
    }

    fn on_command(&mut self, code: u8, c: CommandSample, ctx: &mut Context<Self>) {
        if !self.write {
            self.parts.stats.ignored += 1;
            return self.warn_throttled(
                "no write",
                "zenoh command ignored: [zenoh] write is false",
                code,
            );
        }
        if !self.keyed(c.attachment.as_deref()) {
            self.parts.stats.ignored += 1;
            return self.warn_throttled(
                "key",
                "zenoh command ignored: its attachment is not the access key",
                code,
            );
        }
        let d = self.devs.entry(code).or_default();
        d.last_command = Some(Instant::now());
        d.keyed_with = c.attachment;
        if self.parts.command(Self::NAME, code, c.payload, c.sent) {
            d.commanding = true;
            bridge::sync(self, code, ctx);
        }
    }

    /// Whether a command (or e-stop release) with this attachment may command under the
    /// policy in force: any when no key is set, else only one carrying the key.
    fn keyed(&self, att: Option<&[u8]>) -> bool {
        !self.policy.has_key() || att.is_some_and(|a| self.policy.key_matches(a))
    }
}

impl BridgeRobot for ZenohRobot {
    const NAME: &'static str = "zenoh";
    const LEAVES: &'static str = "zenoh bridge leaves the robot";
    type Publishers = HashMap<u8, Publisher<'static>>;
    type Commands = Commands;

    fn parts(&mut self) -> &mut BridgeParts<Commands> {
        &mut self.parts
    }

    /// Read while a Zenoh subscriber matches the device's key, write while commands come.
    fn want(&self, code: u8) -> Access {
        let d = self.devs.get(&code);
        Access::new(
            d.is_some_and(|d| d.matching),
            d.is_some_and(|d| d.commanding),
        )
    }

    fn attach(&mut self, publishers: Self::Publishers) {
        self.direct.attach(Publishers(publishers));
        self.attached = true;
    }

    fn attached(&self) -> bool {
        self.attached
    }

    fn detach(&mut self) {
        self.direct.detach();
        self.attached = false;
        self.parts.stats.published = self.direct.published();
    }

    /// Readings come to [`Direct`] on the registry's thread, not to the actor; one that
    /// came here all the same goes the same way.
    fn publish(&mut self, readings: HashMap<u8, DeviceData>) {
        for d in readings.into_values() {
            self.direct.single(d);
        }
    }

    /// Every device's readings go to [`Direct`].
    fn direct(&self, _code: u8) -> Option<DataRecipient> {
        Some(DataRecipient::sink(self.direct.clone()))
    }

    fn matching(&mut self, publisher: usize, matching: bool) -> Option<u8> {
        let code = *self.codes.get(publisher)?;
        let d = self.devs.entry(code).or_default();
        if d.matching == matching {
            return None;
        }
        d.matching = matching;
        Some(code)
    }

    fn commands(&mut self, commands: Commands, ctx: &mut Context<Self>) {
        for (code, c) in commands {
            self.on_command(code, c, ctx);
        }
    }

    /// Write access is given back [`HOLD`] after the last command; a device that failed is
    /// asked for again after `RETRY` (5 s).
    fn tick(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let codes: Vec<u8> = self.devs.keys().copied().collect();
        for code in codes {
            let d = self.devs.get_mut(&code).expect("listed above");
            if d.commanding && d.last_command.is_none_or(|t| now - t >= HOLD) {
                d.commanding = false;
                info!(self.parts.log, "zenoh commands stopped; write access given back"; "device" => device::name(code));
            }
            let retry = d.failed_at.is_some_and(|t| now - t >= RETRY);
            if retry {
                d.failed_at = None;
            }
            let failed = d.failed_at.is_some();
            let held = self.parts.holdings.held(code).unwrap_or_default();
            if self.want(code) != held && (!failed || retry) {
                bridge::sync(self, code, ctx);
            }
        }
    }

    /// Nobody listens to a device or commands it, nothing is held and nothing failed.
    fn quiet(&self) -> bool {
        let idle = Access::default();
        self.devs
            .values()
            .all(|d| !d.matching && !d.commanding && d.failed_at.is_none())
            && self
                .codes
                .iter()
                .all(|&c| self.parts.holdings.held(c).unwrap_or_default() == idle)
    }

    fn no_commands(&mut self, code: u8) {
        self.warn_throttled(
            "no commands",
            "zenoh command ignored: the device takes no commands",
            code,
        );
    }

    /// A device that failed is retried by the tick.
    fn answered(&mut self, code: u8, granted: Result<(), &DeviceError>) {
        self.devs.entry(code).or_default().failed_at = granted.err().map(|_| Instant::now());
    }
}

impl Handler<RecheckKeys> for ZenohRobot {
    type Result = ();

    fn handle(&mut self, _msg: RecheckKeys, ctx: &mut Self::Context) {
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
            info!(self.parts.log, "configuration reloaded: the zenoh commands' key is no longer the key; write access given back"; "device" => device::name(code));
            bridge::sync(self, code, ctx);
        }
    }
}

impl Handler<EStopAsk> for ZenohRobot {
    type Result = ();

    fn handle(&mut self, msg: EStopAsk, _ctx: &mut Self::Context) {
        self.in_flight.done();
        let may_release = self.write && self.keyed(msg.attachment.as_deref());
        if !bridge::estop(self, msg.latch, may_release) {
            self.warn_throttled(
                "release",
                "zenoh e-stop release ignored: Zenoh may not command this robot (write, key)",
                0,
            );
        }
    }
}

impl Handler<DevicesQuery> for ZenohRobot {
    type Result = ();

    fn handle(&mut self, msg: DevicesQuery, ctx: &mut Self::Context) {
        self.in_flight.done();
        let registry = self.parts.holdings.registry().clone();
        let robot = self.robot.clone();
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
