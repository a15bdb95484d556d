//! One robot as a ROS 2 node: its liveliness tokens, publishers, `estop` and `cmd_vel`
//! subscriptions as `rmw_zenoh` lays them out ([`declare`]), and [`RobotNode`], the actor
//! that is the robot's registry session for all of them (a [`BridgeRobot`]: what every
//! bridge's robot actor does is the core's, `player_core::frontend::bridge`).
//!
//! A device is read only while some Zenoh subscriber matches one of its topics (the
//! publishers' matching listeners: an rmw_zenoh subscription is a Zenoh subscriber on the
//! topic's key). The readings of sensors and odometry are converted and published on the
//! thread that has them (the registry's: [`Readings`], no hand-off to the node's actor);
//! those the navigation part follows come to the actor, waiting at most one per device
//! (newest wins). Both publish with congestion control "drop" that never waits for a free
//! batch: a slow ROS network loses readings, never delays a TCP client.
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
use crate::msg::{decode_bool, encode_tf, Odometry, Time, TransformStamped, Twist, TwistStamped};
use crate::rmw::{self, Attachment, EntityKind, Qos, Token};
use crate::settings::Ros2Settings;
use crate::topics::{now_ns, Latest, Pub, Topic, DEPTH};
use crate::types;
use actix::prelude::*;
use bytes::Bytes;
use player_core::frontend::bridge::{
    self, BridgeParts, BridgeRobot, Direct, Mailbox, Matching, PublishNow, Slot, Stamp,
};
use player_core::frontend::nav::Pose2;
use player_core::frontend::{Access, Holdings};
use player_kit::driver::{DataRecipient, DeviceData};
use player_proto::data::PositionCommand;
use player_proto::device;
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use zenoh::Wait;

/// How long the node keeps write access after its last `cmd_vel`.
pub const HOLD: std::time::Duration = std::time::Duration::from_secs(2);

/// Largest `cmd_vel` payload taken (a TwistStamped with a 256-byte frame id is < 400).
pub const MAX_CMD: usize = 1024;

mod nav;

pub use nav::NavPart;

/// What the callbacks leave for the node: the newest of each kind.
#[derive(Debug, Default)]
pub struct Commands {
    /// The newest `cmd_vel`, as the position command, and when its publisher sent it
    /// (rmw_zenoh's attachment: the publisher's clock, its GID naming the clock).
    pub velocity: Option<(PositionCommand, Option<Stamp>)>,
    /// The newest `goal_pose`: x, y (m), heading (rad) in the map.
    pub goal: Option<Pose2>,
    /// The newest `initialpose`: the pose (m, rad) and its planar covariance.
    pub pose: Option<(Pose2, [[f64; 3]; 3])>,
}

/// Zenoh -> node: its `estop` slot has a request.
#[derive(Message)]
#[rtype(result = "()")]
struct EStopReady;

/// One robot as the front end serves it.
pub struct RobotPlan {
    /// The robot's name.
    pub name: String,
    /// Its node's namespace.
    pub namespace: String,
    /// What its node publishes.
    pub topics: Vec<Topic>,
    /// Whether `cmd_vel` is taken.
    pub commands: bool,
    /// Whether `initialpose` is taken (an `H`, and `write`).
    pub initialpose: bool,
    /// Whether `goal_pose` is taken (a `G` that takes goals, and `write`).
    pub goals: bool,
}

/// What [`declare`] made besides the publishers; dropping it undeclares it all.
#[derive(Default)]
pub struct NodeEntities {
    tokens: Vec<zenoh::liveliness::LivelinessToken>,
    subscribers: Vec<zenoh::pubsub::Subscriber<()>>,
    queryables: Vec<zenoh::query::Queryable<()>>,
}

/// What Zenoh's callbacks of one node share with it.
#[derive(Clone)]
pub struct Callbacks {
    /// The node.
    pub addr: Addr<RobotNode>,
    /// The newest command, and what the callbacks refused.
    pub mailbox: Arc<Mailbox<Commands>>,
    /// The newest `estop` request (true: latch).
    pub estop: Arc<Slot<Option<bool>>>,
}

/// When a sample with rmw_zenoh's attachment `a` was sent, by its publisher's clock (none
/// for a zero or negative time): the bridge's stale-command rule measures its age against
/// that publisher's own stamps, so the clocks need not agree ([`player_core::frontend::
/// bridge::clock`]).
fn sent_stamp(a: &Attachment) -> Option<Stamp> {
    let ns = u64::try_from(a.timestamp_ns).ok().filter(|&n| n > 0)?;
    Some(Stamp {
        at: std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns),
        source: u128::from_le_bytes(a.gid),
    })
}

/// Whether a sample carries rmw_zenoh's attachment and a payload of at most [`MAX_CMD`];
/// why not.
fn well_formed(sample: &zenoh::sample::Sample) -> Result<(), String> {
    let len = sample.payload().len();
    if len > MAX_CMD {
        return Err(format!("{len} bytes, more than {MAX_CMD}"));
    }
    match sample.attachment() {
        Some(a) if a.len() == rmw::ATTACHMENT_LEN => Ok(()),
        _ => Err(format!(
            "no rmw_zenoh attachment of {} bytes",
            rmw::ATTACHMENT_LEN
        )),
    }
}

/// One node being declared on a session: what its entities need and what was made.
struct Declaring<'a> {
    session: &'a zenoh::Session,
    settings: &'a Ros2Settings,
    zid: String,
    node: Token,
    namespace: &'a str,
    ids: &'a mut u64,
    to: &'a Callbacks,
    made: NodeEntities,
}

impl Declaring<'_> {
    /// The session's next entity id.
    fn next_id(&mut self) -> u64 {
        let id = *self.ids;
        *self.ids += 1;
        id
    }

    /// The liveliness token at `key`.
    fn token(&mut self, key: String) -> zenoh::Result<()> {
        let t = self.session.liveliness().declare_token(key).wait()?;
        self.made.tokens.push(t);
        Ok(())
    }

    /// Publisher number `index` of `topic`, its matching listener feeding the node; for
    /// `tf_static` also the queryable late joiners ask for `transforms`.
    fn publisher(&mut self, index: usize, topic: Topic, transforms: &[u8]) -> zenoh::Result<Pub> {
        let id = self.next_id();
        let name = rmw::qualify(self.namespace, topic.name());
        let ty = topic.ros_type();
        let key = rmw::topic_key(self.settings.domain_id, &name, &ty);
        let token = self
            .node
            .entity(id, EntityKind::Publisher, &name, &ty, topic.qos());
        let publisher = self
            .session
            .declare_publisher(key.clone())
            .congestion_control(zenoh::qos::CongestionControl::Drop)
            .wait()?;
        let a = self.to.addr.clone();
        publisher
            .matching_listener()
            .callback(move |m| {
                a.do_send(Matching {
                    publisher: index,
                    matching: m.matching(),
                })
            })
            .background()
            .wait()?;
        let gid = token.gid();
        let mut made = Pub::new(topic, publisher, gid);
        if topic.qos().durability == crate::rmw::Durability::TransientLocal {
            let first = if topic == Topic::TfStatic {
                transforms.to_vec()
            } else {
                Vec::new()
            };
            let latest: Latest = Arc::new(Mutex::new(first));
            self.history(&key, id, gid, latest.clone())?;
            made = made.keeping(latest);
        }
        self.token(token.key())?;
        Ok(made)
    }

    /// Transient local: late joiners' history queries (at `<key>/@adv/pub/<zid>/<id>/_`,
    /// with a token there) answered with the newest payload (none while there is none).
    fn history(
        &mut self,
        key: &str,
        id: u64,
        gid: [u8; rmw::GID_LEN],
        latest: Latest,
    ) -> zenoh::Result<()> {
        let adv = format!("{key}/@adv/pub/{}/{id}/_", self.zid);
        let att = Attachment {
            seq: 1,
            timestamp_ns: now_ns(),
            gid,
        }
        .encode()
        .to_vec();
        let reply_key = key.to_string();
        let q = self
            .session
            .declare_queryable(adv.clone())
            .callback(move |q| {
                let payload = latest
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone();
                if payload.is_empty() {
                    return;
                }
                let _ = q
                    .reply(reply_key.clone(), payload)
                    .attachment(att.clone())
                    .wait();
            })
            .wait()?;
        self.made.queryables.push(q);
        self.token(adv)
    }

    /// A subscription of `name` (type `ty`) whose samples go to `callback`, with its token.
    fn subscription(
        &mut self,
        name: &str,
        ty: types::RosType,
        callback: impl Fn(zenoh::sample::Sample) + Send + Sync + 'static,
    ) -> zenoh::Result<()> {
        let id = self.next_id();
        let token = self.node.entity(
            id,
            EntityKind::Subscription,
            name,
            &ty,
            Qos::reliable(DEPTH),
        );
        let sub = self
            .session
            .declare_subscriber(rmw::topic_key(self.settings.domain_id, name, &ty))
            .callback(callback)
            .wait()?;
        self.made.subscribers.push(sub);
        self.token(token.key())
    }

    /// `estop` (std_msgs/Bool): the newest request to the node's e-stop slot.
    fn estop(&mut self) -> zenoh::Result<()> {
        let name = rmw::qualify(self.namespace, "estop");
        let to = self.to.clone();
        self.subscription(&name, types::BOOL, move |sample| {
            let latch = match well_formed(&sample) {
                Ok(()) => decode_bool(&sample.payload().to_bytes())
                    .map_err(|e| format!("estop: not a Bool: {e}")),
                Err(why) => Err(format!("estop: {why}")),
            };
            let latch = match latch {
                Ok(l) => l,
                Err(why) => return to.mailbox.refuse_because(why),
            };
            if to.estop.put(|e| *e = Some(latch)) {
                to.addr.do_send(EStopReady);
            }
        })
    }

    /// `cmd_vel` as Twist and as TwistStamped: the newest, clamped to the settings'
    /// limits, to the node's mailbox.
    fn cmd_vel(&mut self) -> zenoh::Result<()> {
        let (max_speed, max_turn) = self.settings.limits();
        let name = rmw::qualify(self.namespace, "cmd_vel");
        for ty in [types::TWIST, types::TWIST_STAMPED] {
            let to = self.to.clone();
            let stamped = ty == types::TWIST_STAMPED;
            let what = ty.name;
            self.subscription(&name, ty, move |sample| {
                if let Err(why) = well_formed(&sample) {
                    return to.mailbox.refuse_because(format!("cmd_vel: {why}"));
                }
                let bytes = sample.payload().to_bytes();
                let twist = if stamped {
                    TwistStamped::decode(&bytes).map(|t| t.twist)
                } else {
                    Twist::decode(&bytes)
                };
                let twist = match twist {
                    Ok(t) => t,
                    Err(e) => {
                        return to
                            .mailbox
                            .refuse_because(format!("cmd_vel: not a {what}: {e}"))
                    }
                };
                let c = convert::command_from_twist(&twist, max_speed, max_turn);
                let sent = sample
                    .attachment()
                    .and_then(|a| Attachment::decode(&a.to_bytes()).ok())
                    .and_then(|a| sent_stamp(&a));
                if to
                    .mailbox
                    .commands
                    .put(|slot| slot.velocity = Some((c, sent)))
                {
                    to.addr.do_send(bridge::CommandsReady);
                }
            })?;
        }
        Ok(())
    }
}

/// Declares robot `r`'s node on `session`: tokens, publishers (their matching listeners
/// feeding the node through `to`), `tf_static`'s history (`tf_static`, the transforms),
/// `estop` and, with commands, `cmd_vel`. Blocks: call it off the actix arbiters. `ids`
/// numbers the session's entities.
pub fn declare(
    session: &zenoh::Session,
    settings: &Ros2Settings,
    r: &RobotPlan,
    ids: &mut u64,
    to: &Callbacks,
    tf_static: &[u8],
) -> zenoh::Result<(Vec<Pub>, NodeEntities)> {
    let zid = session.zid().to_string();
    let nid = *ids;
    *ids += 1;
    let node = Token::node(settings.domain_id, &zid, nid, &r.namespace, &settings.node);
    let mut d = Declaring {
        session,
        settings,
        zid,
        namespace: &r.namespace,
        ids,
        to,
        made: NodeEntities::default(),
        node,
    };
    d.token(d.node.key())?;
    let mut pubs = Vec::new();
    for (i, &topic) in r.topics.iter().enumerate() {
        pubs.push(d.publisher(i, topic, tf_static)?);
    }
    d.estop()?;
    if r.commands {
        d.cmd_vel()?;
    }
    if r.initialpose {
        d.initialpose()?;
    }
    if r.goals {
        d.goal_pose()?;
    }
    Ok((pubs, d.made))
}

/// What a node is started with.
pub struct NodeOptions {
    /// The robot's frames.
    pub frames: Frames,
    /// The laser's longest range, m.
    pub laser_range_max: f32,
    /// Whether `cmd_vel` (and an `estop` release) is obeyed.
    pub write: bool,
    /// Its session at the robot's registry.
    pub holdings: Holdings,
    /// What it publishes, in its publishers' order.
    pub topics: Vec<Topic>,
    /// Shared with the Zenoh callbacks.
    pub mailbox: Arc<Mailbox<Commands>>,
    /// Shared with the Zenoh callbacks.
    pub estop: Arc<Slot<Option<bool>>>,
    /// Logger.
    pub log: Logger,
}

/// One robot's ROS 2 node: its registry session on behalf of every ROS subscriber and
/// `cmd_vel` publisher.
pub struct RobotNode {
    parts: BridgeParts<Commands>,
    estop: Arc<Slot<Option<bool>>>,
    frames: Frames,
    laser_range_max: f32,
    write: bool,
    pubs: Arc<Vec<Pub>>,
    /// Per publisher: matched by some subscriber (set by the node, read by [`Readings`] on
    /// the registry's thread too).
    matched: Arc<[AtomicBool]>,
    /// Publishes the readings of the devices whose topics are conversions of the reading
    /// alone ([`Readings`]) on the registry's thread.
    direct: Arc<Direct<Readings>>,
    topics: Vec<Topic>,
    /// When the newest `cmd_vel` came (write access is held until [`HOLD`] after it).
    last_command: Option<Instant>,
    warned_no_write: bool,
    nav: NavPart,
}

player_core::bridge_robot_handlers!(RobotNode);

impl RobotNode {
    /// A node (not started).
    pub fn new(o: NodeOptions) -> Self {
        RobotNode {
            direct: Direct::new("ros2", o.log.clone()),
            parts: BridgeParts::new(o.holdings, o.mailbox, o.log),
            estop: o.estop,
            frames: o.frames,
            laser_range_max: o.laser_range_max,
            write: o.write,
            pubs: Arc::new(Vec::new()),
            matched: o.topics.iter().map(|_| AtomicBool::new(false)).collect(),
            topics: o.topics,
            last_command: None,
            warned_no_write: false,
            nav: NavPart::default(),
        }
    }

    /// Whether some subscriber matches publisher `i`.
    fn is_matched(&self, i: usize) -> bool {
        self.matched[i].load(Ordering::Relaxed)
    }

    /// Whether some subscriber matches a publisher whose topic `wanted` accepts.
    fn any_matched(&self, wanted: impl Fn(Topic) -> bool) -> bool {
        (0..self.topics.len()).any(|i| self.is_matched(i) && wanted(self.topics[i]))
    }

    fn commanding(&self) -> bool {
        self.last_command.is_some_and(|t| t.elapsed() < HOLD)
    }

    /// The payloads of reading `d` for publisher `topic` ([`encode_reading`]; the
    /// navigation topics from the navigation part's state).
    fn encode(
        &self,
        topic: Topic,
        d: &DeviceData,
        odometry: &mut Option<(Odometry, TransformStamped)>,
    ) -> Result<Vec<Vec<u8>>, convert::ConvertError> {
        match topic {
            Topic::AmclPose | Topic::TfMap => self.nav.encode(topic, d, &self.frames),
            _ => encode_reading(topic, d, &self.frames, self.laser_range_max, odometry),
        }
    }

    /// Publishes `d` on every matched publisher made from its device.
    fn publish_reading(&mut self, d: &DeviceData) {
        self.nav_reading(d);
        let mut odometry = None;
        for i in 0..self.pubs.len() {
            let topic = self.pubs[i].topic;
            if !self.is_matched(i) || topic.device() != Some(d.device) {
                continue;
            }
            let payloads = match self.encode(topic, d, &mut odometry) {
                Ok(p) => p,
                Err(e) => {
                    warn!(self.parts.log, "ros2: reading not converted"; "topic" => topic.name(), "error" => %e);
                    continue;
                }
            };
            for p in payloads {
                match self.pubs[i].put(p) {
                    Ok(()) => self.parts.stats.published += 1,
                    Err(e) => {
                        warn!(self.parts.log, "ros2: publish failed"; "topic" => topic.name(), "error" => %e)
                    }
                }
            }
        }
    }
}

/// The payloads of reading `d` for publisher `topic`, each encoded once, straight from
/// the reading where the message allows (`scan`); `odometry` keeps the position's
/// conversion for the other of `odom` and `tf`. None for the topics that are not
/// conversions of one reading (the navigation part's).
fn encode_reading(
    topic: Topic,
    d: &DeviceData,
    f: &Frames,
    range_max: f32,
    odometry: &mut Option<(Odometry, TransformStamped)>,
) -> Result<Vec<Vec<u8>>, convert::ConvertError> {
    let stamp = Time::from_sec_usec(d.timestamp.sec, d.timestamp.usec);
    if matches!(topic, Topic::Odom | Topic::Tf) && odometry.is_none() {
        *odometry = Some(convert::odometry_from_p(&d.data, stamp, f)?);
    }
    Ok(match topic {
        Topic::Scan(b'L') => vec![convert::scan_payload_from_wide_l(
            &d.data, stamp, &f.laser, range_max,
        )?],
        Topic::Scan(_) => vec![convert::scan_payload_from_l(
            &d.data, stamp, &f.laser, range_max,
        )?],
        Topic::Odom | Topic::Tf => match (topic, &*odometry) {
            (Topic::Odom, Some((o, _))) => vec![o.encode()],
            (_, Some((_, tf))) => vec![encode_tf(std::slice::from_ref(tf))],
            (_, None) => Vec::new(),
        },
        Topic::Sonar => convert::ranges_from_s(&d.data, stamp, f)?
            .iter()
            .map(|r| r.encode())
            .collect(),
        Topic::Battery => vec![convert::battery_from_m(&d.data, stamp, f)?.encode()],
        Topic::AmclPose
        | Topic::TfMap
        | Topic::TfStatic
        | Topic::Map
        | Topic::Particles
        | Topic::Plan => Vec::new(),
    })
}

/// Whether `topic`'s messages are conversions of one reading of its device (nothing the
/// node keeps between readings): these are published on the registry's thread.
fn of_one_reading(topic: Topic) -> bool {
    matches!(
        topic,
        Topic::Scan(_) | Topic::Odom | Topic::Tf | Topic::Sonar | Topic::Battery
    )
}

/// A node's publishers with what converting a reading takes, publishing on the thread
/// that has the reading (the registry's: [`Direct`], no hand-off to the node's actor)
/// every matched topic made from the reading's device. Only devices whose every topic is
/// `of_one_reading` come here ([`RobotNode`]'s `direct`).
pub struct Readings {
    pubs: Arc<Vec<Pub>>,
    matched: Arc<[AtomicBool]>,
    frames: Frames,
    laser_range_max: f32,
}

impl PublishNow for Readings {
    fn publish_now(&self, d: &DeviceData) -> Result<u64, String> {
        let mut odometry = None;
        let mut published = 0;
        for (p, m) in self.pubs.iter().zip(self.matched.iter()) {
            if !m.load(Ordering::Relaxed) || p.topic.device() != Some(d.device) {
                continue;
            }
            let payloads = encode_reading(
                p.topic,
                d,
                &self.frames,
                self.laser_range_max,
                &mut odometry,
            )
            .map_err(|e| format!("{}: reading not converted: {e}", p.topic.name()))?;
            for payload in payloads {
                p.put(payload)
                    .map_err(|e| format!("{}: {e}", p.topic.name()))?;
                published += 1;
            }
        }
        Ok(published)
    }
}

impl BridgeRobot for RobotNode {
    const NAME: &'static str = "ros2";
    const LEAVES: &'static str = "ros2 node leaves the robot";
    type Publishers = Vec<Pub>;
    type Commands = Commands;

    fn parts(&mut self) -> &mut BridgeParts<Commands> {
        &mut self.parts
    }

    /// Read while a subscriber matches one of the device's topics; write to the base while
    /// `cmd_vel` comes.
    fn want(&self, code: u8) -> Access {
        let read = self.any_matched(|t| t.device() == Some(code));
        let read = read || (code == device::MAP && self.topics.contains(&Topic::Map));
        let write = match code {
            device::POSITION => self.commanding(),
            device::PLANNER => self.nav.holds_goal(),
            _ => false,
        };
        Access::new(read, write)
    }

    fn attach(&mut self, publishers: Vec<Pub>) {
        self.pubs = Arc::new(publishers);
        self.direct.attach(Readings {
            pubs: self.pubs.clone(),
            matched: self.matched.clone(),
            frames: self.frames.clone(),
            laser_range_max: self.laser_range_max,
        });
    }

    fn attached(&self) -> bool {
        !self.pubs.is_empty()
    }

    fn detach(&mut self) {
        self.direct.detach();
        self.pubs = Arc::new(Vec::new());
        self.parts.stats.published += self.direct.published();
    }

    /// A device whose every topic is a conversion of one reading (`of_one_reading`),
    /// and whose readings the navigation part does not follow, is published on the
    /// registry's thread ([`Readings`]); the rest come to the node.
    fn direct(&self, code: u8) -> Option<DataRecipient> {
        let own = self.topics.iter().filter(|t| t.device() == Some(code));
        let nav_follows = code == device::POSITION
            && self
                .topics
                .iter()
                .any(|t| matches!(t, Topic::TfMap | Topic::AmclPose));
        let direct = own.clone().all(|&t| of_one_reading(t)) && own.count() > 0 && !nav_follows;
        direct.then(|| DataRecipient::sink(self.direct.clone()))
    }

    fn publish(&mut self, readings: HashMap<u8, DeviceData>) {
        for d in readings.values() {
            self.publish_reading(d);
        }
    }

    fn matching(&mut self, publisher: usize, matching: bool) -> Option<u8> {
        let m = self.matched.get(publisher)?;
        if m.swap(matching, Ordering::Relaxed) == matching {
            return None;
        }
        self.topics[publisher].device()
    }

    fn commands(&mut self, command: Commands, ctx: &mut Context<Self>) {
        self.nav_commands(command.goal, command.pose, ctx);
        let Some((c, sent)) = command.velocity else {
            return;
        };
        if !self.write {
            self.parts.stats.ignored += 1;
            if !self.warned_no_write {
                self.warned_no_write = true;
                warn!(
                    self.parts.log,
                    "ros2: cmd_vel ignored: [ros2] write is false"
                );
            }
            return;
        }
        self.last_command = Some(Instant::now());
        let payload = Bytes::from(c.encode());
        if self
            .parts
            .command(Self::NAME, device::POSITION, payload, sent)
        {
            bridge::sync(self, device::POSITION, ctx);
        }
    }

    /// Write access to the base is given back [`HOLD`] after the last `cmd_vel`; the
    /// navigation part asks for what it publishes.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        self.nav_tick(ctx);
        self.parts.log_refused("ros2: samples refused");
        if self.last_command.is_some() && !self.commanding() {
            self.last_command = None;
            info!(
                self.parts.log,
                "ros2: cmd_vel stopped; write access given back"
            );
            bridge::sync(self, device::POSITION, ctx);
        }
    }

    /// Nobody listens to a topic, no `cmd_vel` within the hold, no goal held, the map (if
    /// any) fetched, no refused samples lately.
    fn quiet(&self) -> bool {
        !self.any_matched(|_| true)
            && self.last_command.is_none()
            && self.nav_quiet()
            && self.parts.no_refusals_lately()
    }

    fn no_commands(&mut self, _code: u8) {
        warn!(
            self.parts.log,
            "ros2: cmd_vel ignored: the base takes no commands"
        );
    }
}

impl Handler<EStopReady> for RobotNode {
    type Result = ();

    fn handle(&mut self, _msg: EStopReady, _ctx: &mut Self::Context) {
        let Some(latch) = self.estop.take() else {
            return;
        };
        if !bridge::estop(self, latch, self.write) {
            warn!(
                self.parts.log,
                "ros2: e-stop release ignored: [ros2] write is false"; "client" => "ros2"
            );
        }
    }
}
