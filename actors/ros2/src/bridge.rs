//! The ROS 2 front end at run time: one Zenoh session for the server, and per robot a node
//! ([`RobotNode`], an actor that is a session of the robot's registry like a TCP client's)
//! with its publishers, `cmd_vel` subscriptions and liveliness tokens as `rmw_zenoh` lays
//! them out ([`crate::rmw`]).
//!
//! A device is read only while some Zenoh subscriber matches one of its topics (the
//! publishers' matching listeners: an rmw_zenoh subscription is a Zenoh subscriber on the
//! topic's key). Readings wait at most one per device (newest wins) and are published with
//! congestion control "drop": a slow ROS network loses readings, never delays a TCP client.
//!
//! `tf_static` is transient local as rmw_zenoh makes it: besides the put, a queryable and a
//! liveliness token at `<key>/@adv/pub/<zid>/<eid>/_` (zenoh-ext's advanced publisher
//! layout), so a late subscriber's history query, or its detection of a late publisher,
//! gets the transforms.
//!
//! `estop` (std_msgs/Bool) latches the robot's emergency stop with `true` (always allowed,
//! as on TCP and the Zenoh bridge) and releases it with `false` (only with `write`).
//!
//! `cmd_vel` (Twist or TwistStamped) becomes the position command and goes through the
//! registry's guard like a TCP client's (write access, e-stop, command watchdog); the node
//! takes write access at the first command and gives it back [`HOLD`] after the last (the
//! registry then stops the base); the watchdog stops it within `command_timeout` when a
//! publisher goes silent or vanishes.

use crate::convert::{self, Frames};
use crate::msg::{decode_bool, encode_tf, Time, Twist, TwistStamped};
use crate::rmw::{self, Attachment, EntityKind, Qos, Token};
use crate::settings::{AccessRules, Ros2Settings};
use crate::types::{self, RosType};
use actix::prelude::*;
use bytes::Bytes;
use futures::future::LocalBoxFuture;
use player_core::frontend::bridge::{off_runtime, Blocking, Detach, Stats, Waiting};
use player_core::frontend::{Access, FrontEnd, FrontEndContext, Holdings};
use player_core::registry::{Disconnect, EStop, Grant};
use player_kit::driver::{
    Command, DataRecipient, DeviceData, DeviceDataBatch, DeviceError, DeviceSpec,
};
use player_proto::device;
use slog::{info, warn, Logger};
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use thiserror::Error;
use zenoh::pubsub::Publisher;
use zenoh::Wait;

/// How long the node keeps write access after its last `cmd_vel`.
pub const HOLD: Duration = Duration::from_secs(2);

/// Largest `cmd_vel` payload taken (a TwistStamped with a 256-byte frame id is < 400).
pub const MAX_CMD: usize = 1024;

/// History depth written in the publishers' tokens.
pub const DEPTH: usize = 10;

const TICK: Duration = Duration::from_millis(250);

/// At most one warning per this about `cmd_vel` samples refused (malformed CDR, too long,
/// no `rmw_zenoh` attachment): a publisher sending garbage at any rate costs one log line
/// a second, carrying how many were refused and why the newest was.
pub const REFUSED_LOG_EVERY: Duration = Duration::from_secs(1);

/// Why the front end could not start.
#[derive(Debug, Error)]
pub enum Ros2Error {
    /// The section is inconsistent.
    #[error(transparent)]
    Settings(#[from] crate::settings::Ros2SettingsError),
    /// Zenoh refused something.
    #[error("ros2: {0}")]
    Zenoh(String),
}

/// What a publisher carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    /// `scan` from this laser device (`L` or `l`).
    Scan(u8),
    /// `odom` from `p`.
    Odom,
    /// `tf` from `p`.
    Tf,
    /// `tf_static`.
    TfStatic,
    /// `sonar` from `s`.
    Sonar,
    /// `battery` from `m`.
    Battery,
}

impl Topic {
    /// The topic's name relative to the robot's namespace.
    pub fn name(self) -> &'static str {
        match self {
            Topic::Scan(_) => "scan",
            Topic::Odom => "odom",
            Topic::Tf => "tf",
            Topic::TfStatic => "tf_static",
            Topic::Sonar => "sonar",
            Topic::Battery => "battery",
        }
    }

    /// Its message type.
    pub fn ros_type(self) -> RosType {
        match self {
            Topic::Scan(_) => types::LASER_SCAN,
            Topic::Odom => types::ODOMETRY,
            Topic::Tf | Topic::TfStatic => types::TF_MESSAGE,
            Topic::Sonar => types::RANGE,
            Topic::Battery => types::BATTERY_STATE,
        }
    }

    /// The device it is made from.
    pub fn device(self) -> Option<u8> {
        match self {
            Topic::Scan(code) => Some(code),
            Topic::Odom | Topic::Tf => Some(device::POSITION),
            Topic::TfStatic => None,
            Topic::Sonar => Some(device::SONAR),
            Topic::Battery => Some(device::MISC),
        }
    }

    /// Its QoS (`tf_static` transient local, depth 1).
    pub fn qos(self) -> Qos {
        match self {
            Topic::TfStatic => Qos::latched(1),
            _ => Qos::reliable(DEPTH),
        }
    }
}

/// The topics a robot with these readable devices publishes: `scan` from `L` if there is
/// one, else from `l`; `odom` and `tf` from `p`; `sonar` from `s`; `battery` from `m`;
/// `tf_static` when there is anything to place on the body.
pub fn plan(readable: &[u8]) -> Vec<Topic> {
    let has = |c: u8| readable.contains(&c);
    let mut v = Vec::new();
    if has(b'L') {
        v.push(Topic::Scan(b'L'));
    } else if has(device::LASER) {
        v.push(Topic::Scan(device::LASER));
    }
    if has(device::POSITION) {
        v.extend([Topic::Odom, Topic::Tf]);
    }
    if has(device::SONAR) {
        v.push(Topic::Sonar);
    }
    if has(device::MISC) {
        v.push(Topic::Battery);
    }
    if v.iter().any(|t| matches!(t, Topic::Scan(_) | Topic::Sonar)) {
        v.push(Topic::TfStatic);
    }
    v
}

/// Nanoseconds since the Unix epoch.
fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// One publisher: its Zenoh publisher, GID and sequence numbers.
pub struct Pub {
    topic: Topic,
    publisher: Publisher<'static>,
    gid: [u8; rmw::GID_LEN],
    seq: i64,
}

impl Pub {
    fn put(&mut self, payload: Vec<u8>) -> zenoh::Result<()> {
        self.seq += 1;
        let a = Attachment {
            seq: self.seq,
            timestamp_ns: now_ns(),
            gid: self.gid,
        };
        self.publisher
            .put(payload)
            .attachment(a.encode().to_vec())
            .wait()
    }
}

/// Zenoh's callbacks -> the node, without a message per sample.
#[derive(Default)]
struct Inbox {
    /// The newest command from `cmd_vel`.
    command: Mutex<Option<player_proto::data::PositionCommand>>,
    woken: AtomicBool,
    /// The newest `estop` request (true: latch).
    estop: Mutex<Option<bool>>,
    estop_woken: AtomicBool,
    /// `cmd_vel` samples refused so far.
    refused: AtomicU64,
    /// Why the newest refused one was.
    refused_why: Mutex<String>,
}

impl Inbox {
    /// Counts a refused `cmd_vel` sample and keeps why.
    fn refuse(&self, why: String) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        *self.refused_why.lock().unwrap_or_else(|e| e.into_inner()) = why;
    }
}

/// What [`declare`] made besides the publishers; dropping it undeclares it all.
struct Declared {
    _tokens: Vec<zenoh::liveliness::LivelinessToken>,
    _subscribers: Vec<zenoh::pubsub::Subscriber<()>>,
    _queryables: Vec<zenoh::query::Queryable<()>>,
}

/// One robot as the front end serves it.
struct RobotPlan {
    name: String,
    namespace: String,
    topics: Vec<Topic>,
    /// Whether `cmd_vel` is taken.
    commands: bool,
}

/// Declares robot `r`'s node on `session`: tokens, publishers (their matching listeners
/// feeding `addr`), `tf_static`'s cache, `cmd_vel`'s subscribers. Blocks: call it off the
/// actix arbiters. `ids` numbers the session's entities.
#[allow(clippy::too_many_arguments)]
fn declare(
    session: &zenoh::Session,
    s: &Ros2Settings,
    r: &RobotPlan,
    ids: &mut u64,
    addr: &Addr<RobotNode>,
    inbox: &Arc<Inbox>,
    tf_static: Vec<u8>,
) -> zenoh::Result<(Vec<Pub>, Declared)> {
    let zid = session.zid().to_string();
    let nid = *ids;
    *ids += 1;
    let node = Token::node(s.domain_id, &zid, nid, &r.namespace, &s.node);
    let mut tokens = vec![session.liveliness().declare_token(node.key()).wait()?];
    let mut pubs = Vec::new();
    let mut queryables = Vec::new();
    for (i, &topic) in r.topics.iter().enumerate() {
        let id = *ids;
        *ids += 1;
        let name = rmw::qualify(&r.namespace, topic.name());
        let ty = topic.ros_type();
        let key = rmw::topic_key(s.domain_id, &name, &ty);
        let token = node.entity(id, EntityKind::Publisher, &name, &ty, topic.qos());
        let publisher = session
            .declare_publisher(key.clone())
            .congestion_control(zenoh::qos::CongestionControl::Drop)
            .wait()?;
        let a = addr.clone();
        publisher
            .matching_listener()
            .callback(move |m| {
                a.do_send(Matching {
                    index: i,
                    matching: m.matching(),
                })
            })
            .background()
            .wait()?;
        let gid = token.gid();
        if topic == Topic::TfStatic {
            // Transient local: answer late joiners' history queries with the transforms.
            let adv = format!("{key}/@adv/pub/{zid}/{id}/_");
            let att = Attachment {
                seq: 1,
                timestamp_ns: now_ns(),
                gid,
            }
            .encode()
            .to_vec();
            let reply_key = key.clone();
            let payload = tf_static.clone();
            queryables.push(
                session
                    .declare_queryable(adv.clone())
                    .callback(move |q| {
                        let _ = q
                            .reply(reply_key.clone(), payload.clone())
                            .attachment(att.clone())
                            .wait();
                    })
                    .wait()?,
            );
            tokens.push(session.liveliness().declare_token(adv).wait()?);
        }
        tokens.push(session.liveliness().declare_token(token.key()).wait()?);
        pubs.push(Pub {
            topic,
            publisher,
            gid,
            seq: 0,
        });
    }
    let mut subscribers = Vec::new();
    {
        let name = rmw::qualify(&r.namespace, "estop");
        let ty = types::BOOL;
        let id = *ids;
        *ids += 1;
        let token = node.entity(
            id,
            EntityKind::Subscription,
            &name,
            &ty,
            Qos::reliable(DEPTH),
        );
        let a = addr.clone();
        let ib = inbox.clone();
        let sub = session
            .declare_subscriber(rmw::topic_key(s.domain_id, &name, &ty))
            .callback(move |sample| {
                let p = sample.payload();
                let ok_attachment = sample
                    .attachment()
                    .is_some_and(|att| att.len() == rmw::ATTACHMENT_LEN);
                let v = (p.len() <= MAX_CMD && ok_attachment)
                    .then(|| decode_bool(&p.to_bytes()).ok())
                    .flatten();
                let Some(latch) = v else {
                    ib.refused.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                *ib.estop.lock().unwrap_or_else(|e| e.into_inner()) = Some(latch);
                if !ib.estop_woken.swap(true, Ordering::AcqRel) {
                    a.do_send(EStopReady);
                }
            })
            .wait()?;
        subscribers.push(sub);
        tokens.push(session.liveliness().declare_token(token.key()).wait()?);
    }
    if r.commands {
        let (max_speed, max_turn) = s.limits();
        let name = rmw::qualify(&r.namespace, "cmd_vel");
        for ty in [types::TWIST, types::TWIST_STAMPED] {
            let id = *ids;
            *ids += 1;
            let token = node.entity(
                id,
                EntityKind::Subscription,
                &name,
                &ty,
                Qos::reliable(DEPTH),
            );
            let a = addr.clone();
            let ib = inbox.clone();
            let stamped = ty == types::TWIST_STAMPED;
            let what = ty.name;
            let sub = session
                .declare_subscriber(rmw::topic_key(s.domain_id, &name, &ty))
                .callback(move |sample| {
                    let p = sample.payload();
                    let ok_attachment = sample
                        .attachment()
                        .is_some_and(|att| att.len() == rmw::ATTACHMENT_LEN);
                    if p.len() > MAX_CMD {
                        ib.refuse(format!("{} bytes, more than {MAX_CMD}", p.len()));
                        return;
                    }
                    if !ok_attachment {
                        ib.refuse(format!(
                            "no rmw_zenoh attachment of {} bytes",
                            rmw::ATTACHMENT_LEN
                        ));
                        return;
                    }
                    let bytes = p.to_bytes();
                    let twist = if stamped {
                        TwistStamped::decode(&bytes).map(|t| t.twist)
                    } else {
                        Twist::decode(&bytes)
                    };
                    let twist = match twist {
                        Ok(t) => t,
                        Err(e) => return ib.refuse(format!("not a {what}: {e}")),
                    };
                    let c = convert::command_from_twist(&twist, max_speed, max_turn);
                    *ib.command.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
                    if !ib.woken.swap(true, Ordering::AcqRel) {
                        a.do_send(CommandReady);
                    }
                })
                .wait()?;
            subscribers.push(sub);
            tokens.push(session.liveliness().declare_token(token.key()).wait()?);
        }
    }
    Ok((
        pubs,
        Declared {
            _tokens: tokens,
            _subscribers: subscribers,
            _queryables: queryables,
        },
    ))
}

/// Zenoh -> node: whether some subscriber matches publisher `index` now.
#[derive(Message)]
#[rtype(result = "()")]
struct Matching {
    index: usize,
    matching: bool,
}

/// Zenoh -> node: the inbox has a command.
#[derive(Message)]
#[rtype(result = "()")]
struct CommandReady;

/// Zenoh -> node: the inbox has an e-stop request.
#[derive(Message)]
#[rtype(result = "()")]
struct EStopReady;

/// Front end -> node: the publishers are declared.
#[derive(Message)]
#[rtype(result = "()")]
struct Attach(Vec<Pub>);

/// Node -> itself: publish what waits.
#[derive(Message)]
#[rtype(result = "()")]
struct Flush;

/// One robot's ROS 2 node: its registry session on behalf of every ROS subscriber and
/// `cmd_vel` publisher.
pub struct RobotNode {
    frames: Frames,
    laser_range_max: f32,
    write: bool,
    holdings: Holdings,
    inbox: Arc<Inbox>,
    pubs: Vec<Pub>,
    /// Per publisher: matched by some subscriber.
    matched: Vec<bool>,
    topics: Vec<Topic>,
    /// Readings not published yet: the newest per device.
    waiting: Waiting,
    /// `cmd_vel` came within [`HOLD`].
    last_command: Option<Instant>,
    command: Option<Recipient<Command>>,
    pending: Option<Bytes>,
    warned_no_write: bool,
    /// Refused `cmd_vel` samples already logged, and when the last warning was.
    refused_logged: (u64, Option<Instant>),
    stats: Stats,
    detached: bool,
    log: Logger,
}

impl RobotNode {
    fn commanding(&self) -> bool {
        self.last_command.is_some_and(|t| t.elapsed() < HOLD)
    }

    /// Brings the registry's view of the node's access to `code` in line with who listens
    /// and who commands.
    fn sync(&mut self, code: u8, ctx: &mut Context<Self>) {
        if self.detached {
            return;
        }
        let read = self
            .topics
            .iter()
            .zip(&self.matched)
            .any(|(t, &m)| m && t.device() == Some(code));
        let write = code == device::POSITION && self.commanding();
        if !write {
            self.command = None;
            self.pending = None;
        }
        if !read {
            self.waiting.forget(code);
        }
        let me = ctx.address();
        self.holdings.want_in(
            ctx,
            code,
            Access::new(read, write),
            || DataRecipient::of(&me),
            |act: &mut Self| Some(&mut act.holdings),
            move |act, granted, _| act.granted(code, write, granted),
        );
    }

    /// The registry's answer to the newest request for `code` (asked with write access
    /// when `write`).
    fn granted(&mut self, code: u8, write: bool, granted: Result<Grant, DeviceError>) {
        match granted {
            Ok(grant) if write => {
                self.command = grant.command;
                if self.command.is_none() {
                    warn!(
                        self.log,
                        "ros2: cmd_vel ignored: the base takes no commands"
                    );
                } else if let Some(p) = self.pending.take() {
                    self.forward(p);
                }
            }
            Ok(_) | Err(DeviceError::RegistryStopped) => {}
            Err(e) => {
                warn!(self.log, "ros2: device not available"; "device" => device::name(code), "error" => %e)
            }
        }
    }

    fn forward(&mut self, payload: Bytes) {
        if let Some(c) = &self.command {
            self.stats.commands += 1;
            c.do_send(Command {
                device: device::POSITION,
                payload,
                session: self.holdings.session(),
            });
        }
    }

    fn take(&mut self, d: &DeviceData, ctx: &mut Context<Self>) {
        if self.holdings.take(d) && self.waiting.keep(d, &mut self.stats) {
            ctx.notify(Flush);
        }
    }

    /// The payloads of reading `d` for publisher `topic`.
    fn encode(&self, topic: Topic, d: &DeviceData) -> Result<Vec<Vec<u8>>, convert::ConvertError> {
        let stamp = Time::from_sec_usec(d.timestamp.sec, d.timestamp.usec);
        let f = &self.frames;
        Ok(match topic {
            Topic::Scan(b'L') => {
                vec![
                    convert::scan_from_wide_l(&d.data, stamp, &f.laser, self.laser_range_max)?
                        .encode(),
                ]
            }
            Topic::Scan(_) => {
                vec![convert::scan_from_l(&d.data, stamp, &f.laser, self.laser_range_max)?.encode()]
            }
            Topic::Odom => vec![convert::odometry_from_p(&d.data, stamp, f)?.0.encode()],
            Topic::Tf => vec![encode_tf(&[convert::odometry_from_p(&d.data, stamp, f)?.1])],
            Topic::Sonar => convert::ranges_from_s(&d.data, stamp, f)?
                .iter()
                .map(|r| r.encode())
                .collect(),
            Topic::Battery => vec![convert::battery_from_m(&d.data, stamp, f)?.encode()],
            Topic::TfStatic => Vec::new(),
        })
    }

    /// Warns of `cmd_vel` samples refused since the last warning, at most once per
    /// [`REFUSED_LOG_EVERY`].
    fn log_refused(&mut self) {
        let (logged, last) = self.refused_logged;
        let now = self.inbox.refused.load(Ordering::Relaxed);
        if now == logged || last.is_some_and(|t| t.elapsed() < REFUSED_LOG_EVERY) {
            return;
        }
        let why = self
            .inbox
            .refused_why
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        warn!(self.log, "ros2: cmd_vel refused"; "count" => now - logged, "newest" => why);
        self.refused_logged = (now, Some(Instant::now()));
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        self.log_refused();
        if self.last_command.is_some() && !self.commanding() {
            self.last_command = None;
            info!(self.log, "ros2: cmd_vel stopped; write access given back");
            self.sync(device::POSITION, ctx);
        }
    }
}

impl Actor for RobotNode {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(TICK, |act, ctx| act.tick(ctx));
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        if !self.detached {
            self.holdings.registry().do_send(Disconnect {
                session: self.holdings.session(),
            });
        }
    }
}

impl Handler<Attach> for RobotNode {
    type Result = ();

    fn handle(&mut self, msg: Attach, ctx: &mut Self::Context) {
        self.pubs = msg.0;
        if self.waiting.wake() {
            ctx.notify(Flush);
        }
    }
}

impl Handler<Matching> for RobotNode {
    type Result = ();

    fn handle(&mut self, msg: Matching, ctx: &mut Self::Context) {
        let Some(m) = self.matched.get_mut(msg.index) else {
            return;
        };
        if *m == msg.matching {
            return;
        }
        *m = msg.matching;
        if let Some(code) = self.topics[msg.index].device() {
            self.sync(code, ctx);
        }
    }
}

impl Handler<DeviceData> for RobotNode {
    type Result = ();

    fn handle(&mut self, msg: DeviceData, ctx: &mut Self::Context) {
        self.take(&msg, ctx);
    }
}

impl Handler<DeviceDataBatch> for RobotNode {
    type Result = ();

    fn handle(&mut self, msg: DeviceDataBatch, ctx: &mut Self::Context) {
        for d in msg.0.iter() {
            self.take(d, ctx);
        }
    }
}

impl Handler<Flush> for RobotNode {
    type Result = ();

    fn handle(&mut self, _msg: Flush, _ctx: &mut Self::Context) {
        if self.pubs.is_empty() {
            return self.waiting.postpone();
        }
        let waiting = self.waiting.take();
        for d in waiting.values() {
            for i in 0..self.pubs.len() {
                let topic = self.pubs[i].topic;
                if !self.matched[i] || topic.device() != Some(d.device) {
                    continue;
                }
                let payloads = match self.encode(topic, d) {
                    Ok(p) => p,
                    Err(e) => {
                        warn!(self.log, "ros2: reading not converted"; "topic" => topic.name(), "error" => %e);
                        continue;
                    }
                };
                for p in payloads {
                    match self.pubs[i].put(p) {
                        Ok(()) => self.stats.published += 1,
                        Err(e) => {
                            warn!(self.log, "ros2: publish failed"; "topic" => topic.name(), "error" => %e)
                        }
                    }
                }
            }
        }
    }
}

impl Handler<CommandReady> for RobotNode {
    type Result = ();

    fn handle(&mut self, _msg: CommandReady, ctx: &mut Self::Context) {
        self.inbox.woken.store(false, Ordering::Release);
        let Some(c) = self
            .inbox
            .command
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        if !self.write {
            self.stats.ignored += 1;
            if !self.warned_no_write {
                self.warned_no_write = true;
                warn!(self.log, "ros2: cmd_vel ignored: [ros2] write is false");
            }
            return;
        }
        let payload = Bytes::from(c.encode());
        self.last_command = Some(Instant::now());
        if self.command.is_some() {
            self.forward(payload);
        } else {
            self.pending = Some(payload);
            self.sync(device::POSITION, ctx);
        }
    }
}

impl Handler<EStopReady> for RobotNode {
    type Result = ();

    fn handle(&mut self, _msg: EStopReady, _ctx: &mut Self::Context) {
        self.inbox.estop_woken.store(false, Ordering::Release);
        let Some(latch) = self
            .inbox
            .estop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        if !latch && !self.write {
            self.stats.ignored += 1;
            warn!(
                self.log,
                "ros2: e-stop release ignored: [ros2] write is false"; "client" => "ros2"
            );
            return;
        }
        self.holdings.registry().do_send(EStop {
            latch,
            client: "ros2".into(),
        });
    }
}

impl Handler<Detach> for RobotNode {
    type Result = ();

    fn handle(&mut self, _msg: Detach, ctx: &mut Self::Context) {
        if !self.detached {
            self.detached = true;
            self.holdings.leave();
        }
        self.pubs.clear();
        let refused = self.inbox.refused.load(Ordering::Relaxed);
        self.stats
            .log_leave(&self.log, "ros2 node leaves the robot", refused);
        ctx.stop();
    }
}

/// The Zenoh session and, per robot, its tokens, subscribers and queryables (dropping
/// them undeclares them).
type Session = (zenoh::Session, Vec<Declared>);

/// Undeclares the robots' entities and closes the session (blocks).
fn close((session, declared): Session) {
    drop(declared);
    let _ = session.close().wait();
}

/// The running front end: the Zenoh session and one node per robot.
pub struct Ros2FrontEnd {
    session: Blocking<Session>,
    nodes: Vec<Addr<RobotNode>>,
    zid: String,
    log: Logger,
}

/// Starts the ROS 2 front end for the robots of `ctx` that `settings` serves. Must run
/// inside an actix system.
pub async fn start(
    settings: &Ros2Settings,
    ctx: &FrontEndContext,
) -> Result<Ros2FrontEnd, Ros2Error> {
    let names: Vec<String> = ctx.robots.iter().map(|r| r.name.clone()).collect();
    settings.check(&names, &AccessRules::of(&ctx.access))?;
    let config = settings.zenoh_config()?;
    let served: Vec<_> = ctx
        .robots
        .iter()
        .filter(|r| settings.serves(&r.name))
        .collect();
    let several = served.len() > 1;
    let arbiter = Arbiter::new();
    let boot = Time::from_sec_usec(
        (now_ns() / 1_000_000_000) as u32,
        ((now_ns() / 1000) % 1_000_000) as u32,
    );
    let mut work = Vec::new();
    let mut nodes = Vec::new();
    for r in served {
        let specs: Vec<&DeviceSpec> = r.devices.iter().map(|(s, _)| s).collect();
        let readable: Vec<u8> = specs
            .iter()
            .filter(|s| s.readable)
            .map(|s| s.code)
            .collect();
        let topics = plan(&readable);
        let commands = settings.write
            && specs
                .iter()
                .any(|s| s.code == device::POSITION && s.command_size.is_some());
        let frames = settings.frames_of(&r.name, several);
        let laser = topics.iter().any(|t| matches!(t, Topic::Scan(_)));
        let tf_static = encode_tf(&convert::static_transforms(
            boot,
            &frames,
            laser.then_some(settings.laser_pose),
            topics.contains(&Topic::Sonar),
        ));
        let plan = RobotPlan {
            name: r.name.clone(),
            namespace: settings.namespace_of(&r.name, several),
            topics: topics.clone(),
            commands,
        };
        let inbox = Arc::new(Inbox::default());
        let node_inbox = inbox.clone();
        let holdings = Holdings::new(r.registry.clone(), ctx.ids.next(), "ros2");
        let log = ctx
            .log
            .new(slog::o!("robot" => r.name.clone(), "front" => "ros2"));
        let (write, range_max) = (settings.write, settings.laser_range_max);
        let n = topics.len();
        let addr = RobotNode::start_in_arbiter(&arbiter.handle(), move |_| RobotNode {
            frames,
            laser_range_max: range_max,
            write,
            holdings,
            inbox: node_inbox,
            pubs: Vec::new(),
            matched: vec![false; n],
            topics,
            waiting: Waiting::default(),
            last_command: None,
            command: None,
            pending: None,
            warned_no_write: false,
            refused_logged: (0, None),
            stats: Stats::default(),
            detached: false,
            log,
        });
        work.push((plan, addr.clone(), inbox, tf_static));
        nodes.push(addr);
    }
    let s = settings.clone();
    let opened = off_runtime("ros2-setup", move || -> Result<_, String> {
        let session = zenoh::open(config)
            .wait()
            .map_err(|e| format!("cannot open the Zenoh session: {e}"))?;
        let mut ids = 0u64;
        let mut all = Vec::new();
        for (plan, addr, inbox, tf_static) in &work {
            match declare(&session, &s, plan, &mut ids, addr, inbox, tf_static.clone()) {
                Ok((pubs, declared)) => all.push((pubs, declared, addr.clone(), tf_static.clone())),
                Err(e) => {
                    let _ = session.close().wait();
                    return Err(format!("robot '{}': {e}", plan.name));
                }
            }
        }
        Ok((session, all))
    })
    .await
    .ok_or_else(|| Ros2Error::Zenoh("the setup thread failed".into()))?;
    let (session, all) = match opened {
        Ok(x) => x,
        Err(e) => {
            arbiter.stop();
            return Err(Ros2Error::Zenoh(e));
        }
    };
    let zid = session.zid().to_string();
    let mut declared = Vec::new();
    for (mut pubs, d, addr, tf_static) in all {
        // tf_static once for whoever is there now; late joiners query the cache.
        for p in pubs.iter_mut().filter(|p| p.topic == Topic::TfStatic) {
            let _ = p.put(tf_static.clone());
        }
        addr.do_send(Attach(pubs));
        declared.push(d);
    }
    info!(ctx.log, "ros2 front end up"; "zid" => &zid, "domain" => settings.domain_id,
        "mode" => &settings.mode, "listen" => settings.listen.join(", "),
        "connect" => settings.connect.join(", "), "cmd_vel" => settings.write);
    Ok(Ros2FrontEnd {
        session: Blocking::new("ros2", (session, declared), close, arbiter, ctx.log.clone()),
        nodes,
        zid,
        log: ctx.log.clone(),
    })
}

impl Ros2FrontEnd {
    /// The Zenoh id of the front end's session (the `<zid>` of its tokens).
    pub fn zid(&self) -> &str {
        &self.zid
    }

    /// Stops: the nodes leave their registries (a base they commanded stops), the tokens
    /// go, the session closes.
    pub async fn shutdown(self) {
        self.session.shutdown(self.nodes).await;
        info!(self.log, "ros2 front end stopped");
    }
}

impl FrontEnd for Ros2FrontEnd {
    fn name(&self) -> &str {
        "ros2"
    }

    fn stop(self: Box<Self>) -> LocalBoxFuture<'static, ()> {
        Box::pin((*self).shutdown())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_scan_is_preferred_and_static_transforms_follow_the_sensors() {
        assert_eq!(
            plan(b"plLsm"),
            vec![
                Topic::Scan(b'L'),
                Topic::Odom,
                Topic::Tf,
                Topic::Sonar,
                Topic::Battery,
                Topic::TfStatic
            ]
        );
        assert_eq!(
            plan(b"lp"),
            vec![Topic::Scan(b'l'), Topic::Odom, Topic::Tf, Topic::TfStatic]
        );
        assert_eq!(plan(b"p"), vec![Topic::Odom, Topic::Tf]);
        assert!(plan(b"gzv").is_empty());
    }

    #[test]
    fn tf_static_is_latched_and_the_rest_reliable() {
        assert_eq!(Topic::TfStatic.qos().keyexpr(), ":1:,1:,:,:,,");
        assert_eq!(Topic::Odom.qos().keyexpr(), "::,10:,:,:,,");
        assert_eq!(Topic::Tf.ros_type(), types::TF_MESSAGE);
    }
}
