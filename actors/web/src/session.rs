//! One browser (or Foxglove) connection: a session of the robot's registry like a TCP
//! client's, speaking the Foxglove WebSocket protocol.
//!
//! The session subscribes to the registry for the devices behind the channels its client
//! subscribed to (with its own [`DataRecipient`]) and gets `Grant.command` for the devices
//! the client publishes commands to. Readings are turned into Foxglove messages (encoded
//! once per reading per thread, shared by the sessions there) and put in the session's
//! outbox, which keeps at most one message per subscription: a newer reading replaces one
//! the socket has not taken yet. A writer task drains the outbox into the socket, so a slow
//! browser loses rounds, never delays the drivers or anyone else, and never queues a
//! backlog. A client that takes nothing for `stall_timeout` is disconnected.
//!
//! On an endpoint serving several robots ([`super::world`]) the session keeps what it holds
//! of each robot apart (a [`RobotState`] per robot it touched: nothing for the others, so
//! a world of 10 000 robots costs a client nothing until it subscribes), and the readings
//! and notices of robot `k > 0` come through a [`RobotTap`] that tags them with `k`.
//!
//! The rest of the protocol (parameters, the connection graph, status conditions, the
//! server's clock) is in `session/ops.rs`; playback control of a replayed robot in
//! [`super::playback`].

use super::foxglove::{self, ClientBinary, ClientOp, Level};
use super::playback::{self, Replay};
use super::protobuf::Encoding;
use super::schema::{self, Channel, Source};
use super::world::{self, Robots};
use super::{AddressSlot, Shared};
use actix::prelude::*;
use bytes::Bytes;
use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use player_core::frontend::tap::{RobotTap, Tagged};
use player_core::frontend::{Access, Change, Holdings};
use player_core::notice::{kind, Notice};
use player_core::registry::{
    CommandHold, ControlPlayback, EStop, GetMap, Grant, ListDevices, RouteConfig, SessionId, Watch,
    MAX_COMMAND_HOLD,
};
use player_kit::driver::{
    Command, DataRecipient, DeviceData, DeviceDataBatch, DeviceError, Inbox, MapOutline, Timestamp,
};
use player_proto::ext::DeviceEntry;
use player_proto::{config as codes, device};
use serde_json::Value;
use slog::{debug, info, warn, Logger};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

mod ops;
mod recheck;

pub use recheck::Recheck;

/// The WebSocket of one connection.
pub type Socket = WebSocketStream<TokioIo<Upgraded>>;

/// Most status and advertise messages waiting for the socket; past this the client is
/// not reading at all and is disconnected.
const MAX_CONTROL: usize = 256;

/// How often device states, the map transform and the stall check run.
const TICK: Duration = Duration::from_secs(1);

/// Server → session: close the connection (server shutdown).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Close;

/// What the client's published messages on a channel do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// `geometry_msgs/Twist` (m/s, rad/s) → position command.
    CmdVel,
    /// `{pan_deg, tilt_deg, zoom}` → PTZ command.
    Ptz,
    /// `{command, arg}` → gripper command.
    Gripper,
    /// `{on}` → motor power config of the position device.
    MotorPower,
    /// `{latch}` → the robot's emergency stop (anyone may latch it; releasing it takes
    /// write rights).
    EStop,
    /// A tool of Foxglove's 3D panel (`/move_base_simple/goal`, `/clicked_point`,
    /// `/initialpose`): accepted and logged; player has no planner or localizer, so the
    /// client is told nothing moves.
    Tool(&'static str),
}

impl Target {
    fn of_topic(topic: &str) -> Option<Target> {
        match topic {
            "/cmd_vel" => Some(Target::CmdVel),
            "/ptz/cmd" => Some(Target::Ptz),
            "/gripper/cmd" => Some(Target::Gripper),
            "/motor_power" => Some(Target::MotorPower),
            "/estop" => Some(Target::EStop),
            "/move_base_simple/goal" => Some(Target::Tool("/move_base_simple/goal")),
            "/clicked_point" => Some(Target::Tool("/clicked_point")),
            "/initialpose" => Some(Target::Tool("/initialpose")),
            _ => None,
        }
    }

    /// The device the target commands (and needs write access to).
    fn writes(self) -> Option<u8> {
        match self {
            Target::CmdVel => Some(device::POSITION),
            Target::Ptz => Some(device::PTZ),
            Target::Gripper => Some(device::GRIPPER),
            Target::MotorPower | Target::EStop | Target::Tool(_) => None,
        }
    }
}

/// The topics a client may publish on, for messages naming them.
pub const PUBLISH_TOPICS: &str = "/cmd_vel, /ptz/cmd, /gripper/cmd, /motor_power, /estop, \
/move_base_simple/goal, /clicked_point, /initialpose";

/// What the socket is waiting to take.
struct Outbox {
    control: VecDeque<Message>,
    /// The newest frame per subscription, oldest first.
    data: VecDeque<(u32, Bytes)>,
    /// The robot whose channels the next `advertise` chunk starts with, while an endpoint
    /// serving several robots has not advertised them all (made when the socket has taken
    /// the chunk before: see [`super::world`]).
    adverts: Option<usize>,
    /// The robots whose channels are advertised (`?robots=`; `None`: all).
    picked: Option<Arc<[usize]>>,
    closed: bool,
    /// When the writer last finished a send (or the outbox was last empty).
    progress: Instant,
    /// Frames replaced before the socket took them.
    dropped: u64,
    /// The server's clock, newest wins; sent after the control messages, before data.
    time: Option<Bytes>,
}

impl Outbox {
    fn pending(&self) -> bool {
        !self.control.is_empty() || !self.data.is_empty() || self.adverts.is_some()
    }
}

/// What this session holds of one robot of its endpoint.
struct RobotState {
    /// The devices this session holds at the robot's registry.
    holdings: Holdings,
    /// Whether the robot's emergency stop is latched (from the registry's notices).
    estop: Option<String>,
    devices: HashMap<u8, DeviceState>,
    commands: HashMap<u8, Recipient<Command>>,
    /// Where the robot's readings and notices go (robot `k > 0`): tagged with `k`.
    tap: Option<Addr<RobotTap<WebSession>>>,
    /// Where its readings wait, newest per device, while only `/robots` reads it (picked
    /// up once a second instead of a message per reading).
    inbox: Arc<Inbox>,
}

/// Per device: what this session asked of the registry and what came of it.
#[derive(Default)]
struct DeviceState {
    setting_up: bool,
    failed: Option<String>,
    last_reading: Option<Instant>,
    count: u32,
    rate: f64,
    /// The client's command rate: when its last command came, the gaps before it.
    pacing: Pacing,
    /// The hold last told to the registry ([`CommandHold`]).
    hold_sent: Option<Duration>,
}

/// How many of a writer's latest gaps between commands its hold follows.
const PACING_WINDOW: usize = 4;

/// When a web client's commands to one device came.
#[derive(Default)]
struct Pacing {
    last: Option<Instant>,
    gaps: VecDeque<Duration>,
}

impl Pacing {
    /// Notes a command at `now`. A gap longer than [`MAX_COMMAND_HOLD`] starts afresh
    /// (the device was stopped in between: a new press, not a rate).
    fn note(&mut self, now: Instant) {
        match self.last.map(|t| now.saturating_duration_since(t)) {
            Some(gap) if gap <= MAX_COMMAND_HOLD => {
                if self.gaps.len() == PACING_WINDOW {
                    self.gaps.pop_front();
                }
                self.gaps.push_back(gap);
            }
            _ => self.gaps.clear(),
        }
        self.last = Some(now);
    }

    /// The rule for web writers: a command holds for 1.25 times the longest of the
    /// writer's latest gaps between commands, rounded up to 50 ms, at most
    /// [`MAX_COMMAND_HOLD`]; before it has kept a rate, [`MAX_COMMAND_HOLD`]. (The registry
    /// never lets it fall below the device's `command_timeout`.) So a panel that repeats its
    /// command at 1 Hz drives without a stop between messages, stops at most 1.2 s after
    /// its last one (release, a frozen tab, a lost link), and a 10 Hz page keeps the
    /// device's own 0.5 s.
    fn hold(&self) -> Duration {
        let Some(&longest) = self.gaps.iter().max() else {
            return MAX_COMMAND_HOLD;
        };
        let step = 50u128;
        let ms = (longest.as_millis() * 5).div_ceil(4).div_ceil(step) * step;
        Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX)).min(MAX_COMMAND_HOLD)
    }
}

/// A channel's newest encoded payload: the reading's sequence number and timestamp, and
/// its encoding (`None` when it did not decode).
type Encoded = (u64, Timestamp, Option<Bytes>);

thread_local! {
    /// Encoded payloads by (endpoint, channel, encoding): the newest reading's, so the
    /// sessions on one thread encode each reading once per encoding.
    static ENCODED: RefCell<HashMap<(u64, u32, Encoding), Encoded>> =
        RefCell::new(HashMap::new());
}

/// Robot `robot`'s reading `d` on `channel` in `encoding`, encoded (frames under the
/// robot's name where the endpoint serves several robots).
fn encoded(
    shared: &Shared,
    robot: usize,
    channel: &Channel,
    encoding: Encoding,
    d: &DeviceData,
) -> Option<Bytes> {
    let encoding = encoding.for_channel(channel);
    ENCODED.with(|cache| {
        let mut cache = cache.borrow_mut();
        let key = (shared.uid, Robots::channel_id(robot, channel), encoding);
        if let Some((seq, ts, bytes)) = cache.get(&key) {
            if *seq == d.seq && *ts == d.timestamp {
                return bytes.clone();
            }
        }
        let bytes = encoding
            .encode_in(channel, d, frame_prefix(shared, robot))
            .map(Bytes::from);
        cache.insert(key, (d.seq, d.timestamp, bytes.clone()));
        bytes
    })
}

/// The prefix of robot `robot`'s frames (its name) where the endpoint serves several robots.
fn frame_prefix(shared: &Shared, robot: usize) -> Option<&str> {
    match shared.robots.get(robot) {
        Some(r) if shared.robots.several() => Some(&r.name),
        _ => None,
    }
}

/// One Foxglove WebSocket client.
pub struct WebSession {
    id: SessionId,
    client: String,
    subprotocol: &'static str,
    /// Whether the access policy lets this client command (and release the e-stop).
    may_write: bool,
    /// The key it presented (`?key=`), for the re-check after a reload.
    presented: Option<Vec<u8>>,
    /// The encoding the client asked for (`?encoding=`).
    encoding: Encoding,
    shared: Arc<Shared>,
    /// What it holds of each robot it touched (robot index in the endpoint).
    robots: HashMap<usize, RobotState>,
    /// This session's place in the per-address count, given back when it is dropped.
    _slot: AddressSlot,
    /// Subscription id → channel id.
    subs: HashMap<u32, u32>,
    /// Client channel id → the robot and what it commands there.
    pubs: HashMap<u32, (usize, Target)>,
    /// Map subscriptions already sent the walls.
    map_sent: HashSet<u32>,
    /// For the world's `/robots`: each robot's newest odometry pose (x, y m, heading rad,
    /// speed m/s) and where its odometry lies in the map.
    overview: HashMap<usize, (f64, f64, f64, f64)>,
    origins: HashMap<usize, [f64; 3]>,
    map: Option<Rc<MapOutline>>,
    /// Playback control, when the endpoint's one robot is a replay (`playback.rs`).
    replay: Option<Replay>,
    out: Rc<RefCell<Outbox>>,
    wake: Rc<Notify>,
    sink: Option<SplitSink<Socket, Message>>,
    stream: Option<SplitStream<Socket>>,
    /// The writer task, ended at the latest 2 s after the session (a client that reads
    /// nothing would hold it forever).
    writer: Option<tokio::task::JoinHandle<()>>,
    /// Parameters, connection graph, status conditions, clock (`ops.rs`).
    ops: ops::Ops,
    log: Logger,
}

impl WebSession {
    /// A session for an upgraded connection from `client` (its address, for logs), with
    /// what the upgrade decided: the subprotocol, the client's rights and its encoding.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: SessionId,
        socket: Socket,
        client: String,
        subprotocol: &'static str,
        may_write: bool,
        encoding: Encoding,
        shared: Arc<Shared>,
        slot: AddressSlot,
    ) -> WebSession {
        let (sink, stream) = socket.split();
        let log = shared.log.new(slog::o!("client" => client.clone()));
        let replay = shared.replay.clone().map(Replay::new);
        WebSession {
            replay,
            robots: HashMap::new(),
            _slot: slot,
            id,
            client,
            subprotocol,
            may_write,
            presented: None,
            encoding,
            shared,
            subs: HashMap::new(),
            pubs: HashMap::new(),
            map_sent: HashSet::new(),
            overview: HashMap::new(),
            origins: HashMap::new(),
            map: None,
            out: Rc::new(RefCell::new(Outbox {
                control: VecDeque::new(),
                data: VecDeque::new(),
                adverts: None,
                picked: None,
                closed: false,
                progress: Instant::now(),
                dropped: 0,
                time: None,
            })),
            wake: Rc::new(Notify::new()),
            sink: Some(sink),
            stream: Some(stream),
            writer: None,
            ops: ops::Ops::default(),
            log,
        }
    }

    /// Advertises only the robots a `?robots=` value picks (an endpoint serving several
    /// robots; see [`super::world`]).
    pub fn with_robots(self, picked: Option<Vec<usize>>) -> WebSession {
        self.out.borrow_mut().picked = picked.map(Arc::from);
        self
    }

    /// Remembers the key the client presented (`?key=`): a reload re-checks it against the
    /// key then in force ([`Recheck`]).
    pub fn with_key(mut self, presented: Option<Vec<u8>>) -> WebSession {
        self.presented = presented;
        self
    }

    /// The subscriptions of the world's `/robots`.
    fn overview_subs(&self) -> Vec<u32> {
        self.subs
            .iter()
            .filter(|(_, c)| **c == world::ROBOTS_CHANNEL && self.shared.robots.several())
            .map(|(s, _)| *s)
            .collect()
    }

    /// Starts (`on`) or ends holding every robot's position for `/robots`; starting also
    /// asks each robot once where its odometry lies in the map.
    fn watch_all(&mut self, on: bool, ctx: &mut Context<Self>) {
        for k in 0..self.shared.robots.len() {
            if !on && !self.robots.contains_key(&k) {
                continue;
            }
            self.sync_device(k, device::POSITION, ctx);
            if on && !self.origins.contains_key(&k) {
                let Some(registry) = self.registry(k) else {
                    continue;
                };
                let fut = registry.send(GetMap { walls: false });
                ctx.spawn(fut.into_actor(self).map(move |r, act, _| {
                    if let Ok(Some(m)) = r {
                        act.origins.insert(k, m.odometry_origin);
                    }
                }));
            }
        }
        if !on {
            self.overview.clear();
        }
    }

    /// Picks up robot `k`'s readings waiting in its inbox, and sets whether its readings
    /// come as messages: yes while a channel of it is subscribed (or `/robots` is not),
    /// else they wait for the next `/robots`.
    fn settle_inbox(&mut self, k: usize, ctx: &mut Context<Self>) {
        let messages = self.overview_subs().is_empty()
            || self.subs.values().any(|&c| {
                self.channel(c)
                    .is_some_and(|(r, ch)| r == k && matches!(ch.source, Source::Device(_)))
            });
        let inbox = self.robot(k, ctx).inbox.clone();
        let mut waiting = Vec::new();
        inbox.take(messages, &mut waiting);
        for d in &waiting {
            self.on_reading(k, d);
        }
    }

    /// Sends `/robots`: every robot's name and newest pose in the map.
    fn send_overview(&mut self, ctx: &mut Context<Self>) {
        let subs = self.overview_subs();
        if subs.is_empty() {
            return;
        }
        let touched: Vec<usize> = self.robots.keys().copied().collect();
        for k in touched {
            self.settle_inbox(k, ctx);
        }
        let mut list = Vec::with_capacity(self.shared.robots.len());
        for (k, r) in self.shared.robots.iter().enumerate() {
            let Some(&(x, y, th, v)) = self.overview.get(&k) else {
                list.push(serde_json::json!({"name": r.name}));
                continue;
            };
            let [ox, oy, oth] = self.origins.get(&k).copied().unwrap_or([0.0; 3]);
            let (c, sn) = (oth.cos(), oth.sin());
            list.push(serde_json::json!({"name": r.name, "x": ox + c * x - sn * y,
                "y": oy + sn * x + c * y, "heading": oth + th, "speed": v}));
        }
        let ts = Timestamp::now();
        let payload =
            serde_json::to_vec(&serde_json::json!({"timestamp": schema::time(ts), "robots": list}))
                .unwrap_or_default();
        for sub in subs {
            self.send_frame(
                sub,
                foxglove::message_data(sub, schema::nanos(ts), &payload),
            );
        }
    }

    /// Queues a control message; a client with [`MAX_CONTROL`] waiting already does not
    /// read at all and is disconnected.
    fn send_control(&mut self, message: Message, ctx: &mut Context<Self>) {
        let mut out = self.out.borrow_mut();
        if out.control.len() >= MAX_CONTROL {
            drop(out);
            warn!(
                self.log,
                "web client does not read its messages; disconnecting"
            );
            ctx.stop();
            return;
        }
        out.control.push_back(message);
        drop(out);
        self.wake.notify_one();
    }

    fn send_text(&mut self, text: String, ctx: &mut Context<Self>) {
        self.send_control(Message::Text(text.into()), ctx);
    }

    /// Queues a binary control message (a service call response) like a text one.
    fn send_binary_control(&mut self, frame: Bytes, ctx: &mut Context<Self>) {
        self.send_control(Message::Binary(frame), ctx);
    }

    fn status(&mut self, level: Level, message: &str, ctx: &mut Context<Self>) {
        if level != Level::Info {
            info!(self.log, "web client told"; "status" => message);
        }
        self.send_text(foxglove::status(level, message), ctx);
    }

    fn send_frame(&mut self, sub: u32, frame: Bytes) {
        self.push_time(false);
        let mut out = self.out.borrow_mut();
        if let Some(slot) = out.data.iter_mut().find(|(s, _)| *s == sub) {
            slot.1 = frame;
            out.dropped += 1;
            self.ops.note_dropped(sub);
        } else {
            if out.data.is_empty() && out.control.is_empty() {
                out.progress = Instant::now();
            }
            out.data.push_back((sub, frame));
        }
        drop(out);
        self.wake.notify_one();
    }

    /// The robot and the channel advertised as `id`.
    fn channel(&self, id: u32) -> Option<(usize, &'static Channel)> {
        self.shared.robots.channel(id)
    }

    /// What this session holds of robot `k`, made on first use: its holdings, and the
    /// registry told where its notices go (`Watch`).
    fn robot(&mut self, k: usize, ctx: &mut Context<Self>) -> &mut RobotState {
        let id = self.id;
        let client = &self.client;
        let shared = &self.shared;
        self.robots.entry(k).or_insert_with(|| {
            let registry = shared
                .robots
                .get(k)
                .map(|r| r.registry.clone())
                .expect("robot index from the endpoint's own list");
            let tap = (k > 0).then(|| RobotTap::new(k, ctx.address()).start());
            let recipient = match &tap {
                Some(t) => t.clone().recipient(),
                None => ctx.address().recipient(),
            };
            registry.do_send(Watch {
                session: id,
                recipient: Some(recipient),
            });
            RobotState {
                inbox: Inbox::new(),
                holdings: Holdings::new(registry, id, client.clone()),
                estop: None,
                devices: HashMap::new(),
                commands: HashMap::new(),
                tap,
            }
        })
    }

    /// Robot `k`'s registry.
    fn registry(&self, k: usize) -> Option<Addr<player_core::registry::Registry>> {
        self.shared.robots.get(k).map(|r| r.registry.clone())
    }

    /// Brings robot `k`'s registry's view of this session's access to `code` in line with
    /// its subscriptions (read) and advertised command channels (write).
    fn sync_device(&mut self, k: usize, code: u8, ctx: &mut Context<Self>) {
        let read = self.subs.values().any(|&c| {
            self.channel(c)
                .is_some_and(|(r, ch)| r == k && ch.source == Source::Device(code))
        }) || (code == device::POSITION && !self.overview_subs().is_empty());
        let write = self
            .pubs
            .values()
            .any(|&(r, t)| r == k && t.writes() == Some(code));
        let me = ctx.address();
        self.settle_inbox(k, ctx);
        let rs = self.robot(k, ctx);
        let tap = rs.tap.clone();
        let inbox = rs.inbox.clone();
        let change = rs.holdings.want_in(
            ctx,
            code,
            Access::new(read, write),
            || match &tap {
                Some(t) => DataRecipient::with_inbox(t, inbox),
                None => DataRecipient::with_inbox(&me, inbox),
            },
            move |act: &mut Self| act.robots.get_mut(&k).map(|rs| &mut rs.holdings),
            move |act, granted, ctx| act.granted(k, code, write, granted, ctx),
        );
        if change == Change::Same {
            return;
        }
        let st = rs.devices.entry(code).or_default();
        if !write {
            st.hold_sent = None;
            st.pacing = Pacing::default();
            rs.commands.remove(&code);
        }
        st.setting_up = change == Change::Asked;
        if change == Change::Asked {
            st.failed = None;
        }
    }

    /// Robot `k`'s registry's answer to the newest request for `code` (asked with write
    /// access when `write`).
    fn granted(
        &mut self,
        k: usize,
        code: u8,
        write: bool,
        granted: Result<Grant, DeviceError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(rs) = self.robots.get_mut(&k) else {
            return;
        };
        let st = rs.devices.entry(code).or_default();
        st.setting_up = false;
        match granted {
            Ok(grant) => {
                if let Some(c) = grant.command {
                    rs.commands.insert(code, c);
                } else if write {
                    let m = format!(
                        "device '{}' ({}) takes no commands",
                        char::from(code),
                        player_kit::log::device(code)
                    );
                    self.status(Level::Warning, &m, ctx);
                }
            }
            Err(e @ DeviceError::RegistryStopped) => st.failed = Some(e.to_string()),
            Err(e) => {
                st.failed = Some(e.to_string());
                let m = format!(
                    "device '{}' ({}): {e}",
                    char::from(code),
                    player_kit::log::device(code)
                );
                self.status(Level::Error, &m, ctx);
            }
        }
    }

    /// Robot `k`'s reading `d`, to every subscription of its channels.
    fn on_reading(&mut self, k: usize, d: &DeviceData) {
        let Some(rs) = self.robots.get_mut(&k) else {
            return;
        };
        if !rs.holdings.take(d) {
            return;
        }
        // A replay's readings carry the recording's time (Foxglove's timeline).
        let replayed = self.replay.as_ref().map(|r| r.recorded(d));
        let d = replayed.as_ref().unwrap_or(d);
        let st = rs.devices.entry(d.device).or_default();
        st.last_reading = Some(Instant::now());
        st.count += 1;
        if d.device == device::POSITION && self.shared.robots.several() {
            if let Ok(p) = player_proto::data::Position::decode(&d.data) {
                let pose = (
                    f64::from(p.x) / 1000.0,
                    f64::from(p.y) / 1000.0,
                    f64::from(p.heading).to_radians(),
                    f64::from(p.speed) / 1000.0,
                );
                if !self.overview_subs().is_empty() {
                    self.overview.insert(k, pose);
                }
            }
        }
        let mut frames = Vec::new();
        for (&sub, &ch) in &self.subs {
            let Some((r, channel)) = self.channel(ch) else {
                continue;
            };
            if r != k || channel.source != Source::Device(d.device) {
                continue;
            }
            if let Some(payload) = encoded(&self.shared, k, channel, self.encoding, d) {
                frames.push((sub, schema::nanos(d.timestamp), payload));
            }
        }
        let now = Instant::now();
        for (sub, ns, payload) in frames {
            if !self.ops.rate_allows(sub, now) {
                continue;
            }
            self.send_frame(sub, foxglove::message_data(sub, ns, &payload));
        }
    }

    fn on_text(&mut self, text: &str, ctx: &mut Context<Self>) {
        let op = match foxglove::parse_text(text) {
            Ok(op) => op,
            Err(e) => return self.status(Level::Error, &e, ctx),
        };
        match op {
            ClientOp::Subscribe(list) => {
                let mut touched = HashSet::new();
                for s in list {
                    if self.subs.len() >= foxglove::MAX_SUBSCRIPTIONS {
                        self.status(Level::Error, "too many subscriptions", ctx);
                        break;
                    }
                    if s.id == playback::TIME_SLOT && self.replay.is_some() {
                        let m = format!("subscription id {} is reserved here", s.id);
                        self.status(Level::Error, &m, ctx);
                        continue;
                    }
                    if self.subs.contains_key(&s.id) {
                        let m = format!("subscription id {} is already in use", s.id);
                        self.status(Level::Error, &m, ctx);
                        continue;
                    }
                    if s.channel_id == world::ROBOTS_CHANNEL && self.shared.robots.several() {
                        let first = self.overview_subs().is_empty();
                        self.subs.insert(s.id, s.channel_id);
                        if first {
                            self.watch_all(true, ctx);
                        }
                        self.send_overview(ctx);
                        continue;
                    }
                    let Some((k, channel)) = self.channel(s.channel_id) else {
                        let m = format!("no channel {}", s.channel_id);
                        self.status(Level::Error, &m, ctx);
                        continue;
                    };
                    self.subs.insert(s.id, s.channel_id);
                    match channel.source {
                        Source::Device(code) => {
                            touched.insert((k, code));
                        }
                        Source::Map | Source::MapTransform => self.fetch_map(k, true, ctx),
                        Source::Devices => {
                            self.robot(k, ctx);
                            self.fetch_devices(k, ctx)
                        }
                    }
                }
                for (k, code) in touched {
                    self.sync_device(k, code, ctx);
                }
            }
            ClientOp::Unsubscribe(ids) => {
                let mut touched = HashSet::new();
                for id in ids {
                    if let Some(ch) = self.subs.remove(&id) {
                        self.map_sent.remove(&id);
                        self.ops.forget(id);
                        self.out.borrow_mut().data.retain(|(s, _)| *s != id);
                        if ch == world::ROBOTS_CHANNEL && self.overview_subs().is_empty() {
                            self.watch_all(false, ctx);
                        }
                        if let Some((k, Source::Device(code))) =
                            self.channel(ch).map(|(k, c)| (k, c.source))
                        {
                            touched.insert((k, code));
                        }
                    }
                }
                for (k, code) in touched {
                    self.sync_device(k, code, ctx);
                }
            }
            ClientOp::Advertise(channels) => {
                for c in channels {
                    if self.pubs.len() >= foxglove::MAX_CLIENT_CHANNELS {
                        self.status(Level::Error, "too many client channels", ctx);
                        break;
                    }
                    let found = self
                        .shared
                        .robots
                        .split_topic(&c.topic)
                        .and_then(|(k, t)| Target::of_topic(t).map(|t| (k, t)));
                    let Some((k, target)) = found else {
                        let m = format!(
                            "topic '{}' is not accepted; publish on {}{PUBLISH_TOPICS}",
                            c.topic.chars().take(60).collect::<String>(),
                            if self.shared.robots.several() {
                                "a robot's name followed by one of "
                            } else {
                                ""
                            }
                        );
                        self.status(Level::Warning, &m, ctx);
                        continue;
                    };
                    if c.encoding != "json" {
                        let m = format!("topic '{}': only json encoding is accepted", c.topic);
                        self.status(Level::Warning, &m, ctx);
                        continue;
                    }
                    let harmless = matches!(target, Target::EStop | Target::Tool(_));
                    if !harmless && !self.may_write {
                        let m = format!(
                            "topic '{}' refused: this client may not command the robot (access policy{})",
                            c.topic,
                            if self.shared.policy.has_key() {
                                "; connect with ?key=KEY"
                            } else {
                                ""
                            }
                        );
                        self.status(Level::Warning, &m, ctx);
                        continue;
                    }
                    self.pubs.insert(c.id, (k, target));
                    self.robot(k, ctx);
                    if let Some(code) = target.writes() {
                        self.sync_device(k, code, ctx);
                    }
                }
            }
            ClientOp::Unadvertise(ids) => {
                for id in ids {
                    if let Some((k, code)) = self
                        .pubs
                        .remove(&id)
                        .and_then(|(k, t)| t.writes().map(|c| (k, c)))
                    {
                        self.sync_device(k, code, ctx);
                    }
                }
            }
            ClientOp::GetParameters { names, id } => self.get_parameters(names, id, ctx),
            ClientOp::SetParameters { parameters, id } => self.set_parameters(parameters, id, ctx),
            ClientOp::SubscribeParameterUpdates(names) => self.subscribe_parameters(names, ctx),
            ClientOp::UnsubscribeParameterUpdates(names) => self.unsubscribe_parameters(&names),
            ClientOp::SubscribeConnectionGraph => self.subscribe_graph(ctx),
            ClientOp::UnsubscribeConnectionGraph => self.unsubscribe_graph(),
            ClientOp::Unsupported(op) => {
                let m = format!("operation '{op}' is not supported");
                self.status(Level::Warning, &m, ctx);
            }
        }
    }

    fn on_binary(&mut self, b: &[u8], ctx: &mut Context<Self>) {
        if b.first() == Some(&playback::OP_PLAYBACK_CONTROL_REQUEST) {
            return self.on_playback_request(b, ctx);
        }
        let (channel, payload) = match foxglove::parse_binary(b) {
            Ok(ClientBinary::Message { channel, payload }) => (channel, payload),
            Ok(ClientBinary::ServiceCall {
                service,
                call,
                encoding,
                payload,
            }) => return self.on_service_call(service, call, encoding, payload, ctx),
            Err(e) => return self.status(Level::Error, &e, ctx),
        };
        let Some(&(k, target)) = self.pubs.get(&channel) else {
            let m = format!("client channel {channel} was not advertised");
            return self.status(Level::Warning, &m, ctx);
        };
        let Some(registry) = self.registry(k) else {
            return;
        };
        let v: Value = match serde_json::from_slice(payload) {
            Ok(v) => v,
            Err(e) => {
                let m = format!("message on client channel {channel} is not JSON: {e}");
                return self.status(Level::Warning, &m, ctx);
            }
        };
        let num = |v: &Value, path: &[&str]| -> f64 {
            let mut at = v;
            for k in path {
                at = &at[*k];
            }
            at.as_f64().filter(|x| x.is_finite()).unwrap_or(0.0)
        };
        let i16_of = |x: f64| x.round().clamp(f64::from(i16::MIN), f64::from(i16::MAX)) as i16;
        let (code, payload): (u8, Vec<u8>) = match target {
            Target::CmdVel => {
                let speed = i16_of(num(&v, &["linear", "x"]) * 1000.0);
                let turn = i16_of(num(&v, &["angular", "z"]).to_degrees());
                let c = player_proto::data::PositionCommand {
                    speed,
                    turn_rate: turn,
                };
                (device::POSITION, c.encode())
            }
            Target::Ptz => {
                let z = player_proto::data::Ptz {
                    pan: i16_of(num(&v, &["pan_deg"])),
                    tilt: i16_of(num(&v, &["tilt_deg"])),
                    zoom: i16_of(num(&v, &["zoom"])),
                };
                (device::PTZ, z.encode())
            }
            Target::Gripper => {
                let byte = |x: f64| x.round().clamp(0.0, 255.0) as u8;
                let g = player_proto::data::GripperCommand {
                    command: byte(num(&v, &["command"])),
                    arg: byte(num(&v, &["arg"])),
                };
                (device::GRIPPER, g.encode())
            }
            Target::MotorPower => {
                let on = v["on"].as_bool().unwrap_or(false);
                registry.do_send(RouteConfig {
                    device: device::POSITION,
                    payload: Bytes::from(vec![codes::MOTOR_POWER, u8::from(on)]),
                    client: self.client.clone(),
                });
                info!(self.log, "motor power asked"; "on" => on);
                return;
            }
            Target::Tool(topic) => {
                // geometry_msgs PoseStamped / PointStamped / PoseWithCovarianceStamped.
                let pose = if v["pose"]["pose"].is_object() {
                    &v["pose"]["pose"]
                } else {
                    &v["pose"]
                };
                let (x, y) = if topic == "/clicked_point" {
                    (num(&v, &["point", "x"]), num(&v, &["point", "y"]))
                } else {
                    (num(pose, &["position", "x"]), num(pose, &["position", "y"]))
                };
                let frame: String = v["header"]["frame_id"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(64)
                    .collect();
                info!(self.log, "3D panel tool"; "topic" => topic, "x" => x, "y" => y, "frame" => &frame);
                let what = match topic {
                    "/move_base_simple/goal" => "goal ignored: player has no planner",
                    "/initialpose" => "pose estimate ignored: player has no localizer",
                    _ => "point noted",
                };
                let m = format!("{topic} ({x:.2}, {y:.2}) in '{frame}': {what}");
                return self.status(Level::Info, &m, ctx);
            }
            Target::EStop => {
                let latch = v["latch"].as_bool().unwrap_or(true);
                if !latch && !self.may_write {
                    return self.status(
                        Level::Warning,
                        "only a client that may command the robot can release the emergency stop",
                        ctx,
                    );
                }
                registry.do_send(EStop {
                    latch,
                    client: self.client.clone(),
                });
                return;
            }
        };
        let id = self.id;
        let rs = self.robot(k, ctx);
        match rs.commands.get(&code) {
            Some(r) => {
                let st = rs.devices.entry(code).or_default();
                st.pacing.note(Instant::now());
                let hold = st.pacing.hold();
                if st.hold_sent != Some(hold) {
                    st.hold_sent = Some(hold);
                    registry.do_send(CommandHold {
                        session: id,
                        device: code,
                        hold: Some(hold),
                    });
                }
                r.do_send(Command {
                    device: code,
                    payload: Bytes::from(payload),
                    session: id,
                })
            }
            None => {
                let st = rs.devices.get(&code);
                let why = match st {
                    Some(s) if s.setting_up => "is still being set up",
                    Some(DeviceState {
                        failed: Some(_), ..
                    }) => "failed",
                    _ => "is not writable for this client",
                };
                let m = format!(
                    "command ignored: device '{}' ({}) {why}",
                    char::from(code),
                    player_kit::log::device(code)
                );
                self.status(Level::Warning, &m, ctx);
            }
        }
    }

    /// A service call: the e-stop (anyone latches; releasing takes write rights), motor
    /// power, odometry reset, or any device config (write rights), answered with a JSON
    /// response or a `serviceCallFailure`.
    fn on_service_call(
        &mut self,
        service: u32,
        call: u32,
        encoding: &str,
        payload: &[u8],
        ctx: &mut Context<Self>,
    ) {
        let fail = move |act: &mut Self, ctx: &mut Context<Self>, m: &str| {
            act.send_text(foxglove::service_call_failure(service, call, m), ctx);
        };
        let Some(svc) = foxglove::SERVICES.iter().find(|s| s.id == service) else {
            return fail(self, ctx, &format!("no service {service}"));
        };
        if encoding != "json" {
            return fail(self, ctx, "only json requests are accepted");
        }
        let v: Value = match serde_json::from_slice(payload) {
            Ok(v) => v,
            Err(e) => return fail(self, ctx, &format!("request is not JSON: {e}")),
        };
        let respond = move |act: &mut Self, ctx: &mut Context<Self>, v: Value| {
            let body = v.to_string();
            let frame = foxglove::service_call_response(service, call, "json", body.as_bytes());
            act.send_binary_control(frame, ctx);
        };
        let refused = "this client may not command the robot (access policy)";
        // Several robots on this endpoint: the request names one (`"robot": NAME`).
        let k = if self.shared.robots.several() {
            match v["robot"]
                .as_str()
                .and_then(|n| self.shared.robots.by_name(n))
            {
                Some(k) => k,
                None => {
                    return fail(
                        self,
                        ctx,
                        "this endpoint serves several robots: name one with \"robot\"",
                    )
                }
            }
        } else {
            0
        };
        let Some(registry) = self.registry(k) else {
            return fail(self, ctx, "no such robot");
        };
        let config = match svc.name {
            "/estop" => {
                let latch = v["latch"].as_bool().unwrap_or(true);
                if !latch && !self.may_write {
                    return fail(self, ctx, refused);
                }
                let fut = registry.send(EStop {
                    latch,
                    client: self.client.clone(),
                });
                ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| match r {
                    Ok(changed) => respond(
                        act,
                        ctx,
                        serde_json::json!({"latched": latch, "changed": changed}),
                    ),
                    Err(e) => fail(act, ctx, &e.to_string()),
                }));
                return;
            }
            _ if !self.may_write => return fail(self, ctx, refused),
            "/motor_power" => {
                let on = v["on"].as_bool().unwrap_or(false);
                (device::POSITION, vec![codes::MOTOR_POWER, u8::from(on)])
            }
            "/reset_odometry" => (device::POSITION, vec![codes::RESET_ODOMETRY]),
            _ => {
                let one_char = |k: &str| match v[k].as_str().map(str::as_bytes) {
                    Some([c]) => Some(*c),
                    _ => None,
                };
                let (Some(dev), Some(code)) = (one_char("device"), one_char("code")) else {
                    return fail(self, ctx, "device and code are one character each");
                };
                let args: Option<Vec<u8>> = match v["args"].as_array() {
                    None => Some(Vec::new()),
                    Some(a) if a.len() <= 64 => a
                        .iter()
                        .map(|x| x.as_u64().and_then(|n| u8::try_from(n).ok()))
                        .collect(),
                    Some(_) => None,
                };
                let Some(args) = args else {
                    return fail(self, ctx, "args: at most 64 bytes (0 to 255)");
                };
                let mut p = vec![code];
                p.extend_from_slice(&args);
                (dev, p)
            }
        };
        let (dev, bytes) = config;
        info!(self.log, "service config"; "service" => svc.name, "device" => %char::from(dev));
        let fut = registry.send(RouteConfig {
            device: dev,
            payload: Bytes::from(bytes),
            client: self.client.clone(),
        });
        ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| match r {
            Ok(Ok(())) => respond(act, ctx, serde_json::json!({"ok": true, "message": ""})),
            Ok(Err(e)) => fail(act, ctx, &e.to_string()),
            Err(e) => fail(act, ctx, &e.to_string()),
        }));
    }

    /// A playback control request: refused without write access (it changes what every
    /// client of the robot sees), else passed to the registry and answered with the
    /// playback state.
    fn on_playback_request(&mut self, b: &[u8], ctx: &mut Context<Self>) {
        let Some(replay) = &mut self.replay else {
            let m = "playback control: this robot is not replaying a recording";
            return self.status(Level::Warning, m, ctx);
        };
        let req = match playback::parse_request(b) {
            Ok(r) => r,
            Err(e) => return self.status(Level::Error, &e.to_string(), ctx),
        };
        if !self.may_write {
            let frame = replay.answer(false, &req.request_id);
            self.send_binary_control(frame, ctx);
            let m = format!(
                "playback control refused: this client may not command the robot (access policy{})",
                if self.shared.policy.has_key() {
                    "; connect with ?key=KEY"
                } else {
                    ""
                }
            );
            return self.status(Level::Warning, &m, ctx);
        }
        // A replay is only ever the endpoint's one robot (`Shared::replay`).
        let Some(registry) = self.registry(0) else {
            return;
        };
        let fut = registry.send(ControlPlayback(req.to_kit()));
        let did_seek = req.seek.is_some();
        ctx.spawn(fut.into_actor(self).map(move |_, act, ctx| {
            if let Some(r) = &mut act.replay {
                let frame = r.answer(did_seek, &req.request_id);
                act.send_binary_control(frame, ctx);
            }
        }));
    }

    /// The replay's clock as `time` (newest wins, like a subscription), and its state when
    /// it changed without this client asking.
    fn playback_tick(&mut self, ctx: &mut Context<Self>) {
        let Some(r) = &mut self.replay else {
            return;
        };
        let (time, state) = r.tick();
        if let Some(t) = time {
            // Its own slot in the newest-wins outbox (a subscription id refused to clients).
            self.send_frame(playback::TIME_SLOT, t);
        }
        if let Some(s) = state {
            self.send_binary_control(s, ctx);
        }
    }

    /// Asks robot `k`'s registry for the map (`walls`) or only where its odometry lies,
    /// and sends it to the subscriptions of its map channels.
    fn fetch_map(&mut self, k: usize, walls: bool, ctx: &mut Context<Self>) {
        let Some(registry) = self.registry(k) else {
            return;
        };
        let fut = registry.send(GetMap { walls });
        ctx.spawn(fut.into_actor(self).map(move |r, act, _| {
            let Ok(Some(m)) = r else {
                return;
            };
            let now = Timestamp::now();
            let m = Rc::new(m);
            let subs: Vec<(u32, u32)> = act.subs.iter().map(|(s, c)| (*s, *c)).collect();
            for (sub, ch) in subs {
                let source = act
                    .channel(ch)
                    .filter(|(r, _)| *r == k)
                    .map(|(_, c)| c.source);
                if walls && source == Some(Source::Map) && act.map_sent.insert(sub) {
                    let payload = act.encoding.encode_map(&m, now);
                    act.send_frame(
                        sub,
                        foxglove::message_data(sub, schema::nanos(now), &payload),
                    );
                }
                if source == Some(Source::MapTransform) {
                    let payload =
                        act.encoding
                            .encode_map_transform(&m, now, frame_prefix(&act.shared, k));
                    act.send_frame(
                        sub,
                        foxglove::message_data(sub, schema::nanos(now), &payload),
                    );
                }
            }
            if walls {
                act.map = Some(m);
            }
        }));
    }

    /// The subscriptions of robot `k`'s `/devices`.
    fn device_subs(&self, k: usize) -> Vec<u32> {
        self.subs
            .iter()
            .filter(|(_, c)| {
                self.channel(**c)
                    .is_some_and(|(r, ch)| r == k && ch.source == Source::Devices)
            })
            .map(|(s, _)| *s)
            .collect()
    }

    /// Asks robot `k`'s registry for its device list and sends `/devices`: each device's
    /// state, publish rate, readers and writers (every front end), and this client's access
    /// and the rate it received.
    fn fetch_devices(&mut self, k: usize, ctx: &mut Context<Self>) {
        if self.device_subs(k).is_empty() {
            return;
        }
        let Some(registry) = self.registry(k) else {
            return;
        };
        let fut = registry.send(ListDevices);
        ctx.spawn(fut.into_actor(self).map(move |r, act, _| {
            if let Ok(list) = r {
                act.send_devices(k, &list);
            }
        }));
    }

    fn send_devices(&mut self, k: usize, list: &[DeviceEntry]) {
        let subs = self.device_subs(k);
        let Some(rs) = self.robots.get(&k) else {
            return;
        };
        let devices: Vec<Value> = list
            .iter()
            .map(|e| {
                let code = e.code;
                let st = rs.devices.get(&code);
                let state = e.state_name();
                let access = match rs.holdings.held(code).map(|a| (a.read, a.write)) {
                    Some((true, true)) => "a",
                    Some((true, false)) => "r",
                    Some((false, true)) => "w",
                    _ => "-",
                };
                serde_json::json!({"code": char::from(code).to_string(),
                    "name": player_kit::log::device(code), "driver": e.driver, "state": state,
                    "rate_hz": f64::from(e.rate_x10) / 10.0,
                    "received_hz": st.map_or(0.0, |s| s.rate),
                    "readers": e.readers, "writers": e.writers, "access": access,
                    "error": st.and_then(|s| s.failed.clone())})
            })
            .collect();
        let ts = Timestamp::now();
        let name = self.shared.robots.get(k).map_or("", |r| r.name.as_str());
        let payload = serde_json::to_vec(&serde_json::json!({
            "timestamp": schema::time(ts), "robot": name,
            "estop": rs.estop.is_some(), "estop_by": rs.estop,
            "may_write": self.may_write, "dropped": self.out.borrow().dropped,
            "devices": devices}))
        .unwrap_or_default();
        for sub in subs {
            self.send_frame(
                sub,
                foxglove::message_data(sub, schema::nanos(ts), &payload),
            );
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        for rs in self.robots.values_mut() {
            for st in rs.devices.values_mut() {
                st.rate = f64::from(st.count) / TICK.as_secs_f64();
                st.count = 0;
            }
        }
        // The robots whose `/devices` or `/tf_map` someone here reads (no other robot
        // costs anything).
        let mut devices = Vec::new();
        let mut tf = Vec::new();
        for c in self.subs.values() {
            match self.channel(*c) {
                Some((k, ch)) if ch.source == Source::Devices => devices.push(k),
                Some((k, ch)) if ch.source == Source::MapTransform => tf.push(k),
                _ => {}
            }
        }
        devices.sort_unstable();
        devices.dedup();
        tf.sort_unstable();
        tf.dedup();
        for k in devices {
            self.fetch_devices(k, ctx);
        }
        for k in tf {
            self.fetch_map(k, false, ctx);
        }
        self.send_overview(ctx);
        self.ops_tick(ctx);
        let stall = self.shared.stall_timeout;
        let out = self.out.borrow();
        if !stall.is_zero() && out.pending() && out.progress.elapsed() > stall {
            drop(out);
            warn!(self.log, "web client read nothing for too long; disconnecting"; "seconds" => stall.as_secs_f64());
            ctx.stop();
        }
    }
}

async fn write_out(
    mut sink: SplitSink<Socket, Message>,
    out: Rc<RefCell<Outbox>>,
    wake: Rc<Notify>,
    shared: Arc<Shared>,
    encoding: Encoding,
) {
    loop {
        let next = {
            let mut o = out.borrow_mut();
            match o.control.pop_front() {
                Some(m) => Some(m),
                None => match o.adverts {
                    Some(k) => {
                        let picked = o.picked.clone();
                        let (text, next) =
                            shared.robots.advertise_from(picked.as_deref(), k, encoding);
                        o.adverts = next;
                        Some(Message::Text(text.into()))
                    }
                    None => match o.time.take() {
                        Some(t) => Some(Message::Binary(t)),
                        None => o.data.pop_front().map(|(_, b)| Message::Binary(b)),
                    },
                },
            }
        };
        match next {
            Some(m) => {
                if sink.send(m).await.is_err() {
                    break;
                }
                out.borrow_mut().progress = Instant::now();
            }
            None => {
                if out.borrow().closed {
                    break;
                }
                wake.notified().await;
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
}

impl Actor for WebSession {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        info!(self.log, "web client connected"; "subprotocol" => self.subprotocol, "session" => self.id);
        if let Some(stream) = self.stream.take() {
            ctx.add_stream(stream);
        }
        if let Some(sink) = self.sink.take() {
            self.writer = Some(actix_rt::spawn(write_out(
                sink,
                self.out.clone(),
                self.wake.clone(),
                self.shared.clone(),
                self.encoding,
            )));
        }
        let robots = &self.shared.robots;
        match robots.get(0) {
            Some(r) if !robots.several() => {
                let name = format!("player ({})", r.name);
                let mut info = foxglove::server_info(&name, self.id.get(), &r.name);
                if let Some(rp) = &self.replay {
                    info = playback::server_info(&info, &rp.state());
                    ctx.run_interval(playback::TIME_PERIOD, |act, ctx| act.playback_tick(ctx));
                }
                let channels: Vec<Channel> = r.channels.clone();
                self.send_text(info, ctx);
                self.ops_started(ctx);
                self.send_text(foxglove::advertise(&channels, self.encoding), ctx);
                // Its notices from the start (a world's robots: once a client touches one).
                self.robot(0, ctx);
            }
            _ => {
                let name = format!("player ({} robots)", robots.len());
                let info = foxglove::server_info(&name, self.id.get(), "");
                self.send_text(info, ctx);
                self.ops_started(ctx);
                self.out.borrow_mut().adverts = Some(0);
            }
        }
        self.send_text(foxglove::advertise_services(&foxglove::SERVICES), ctx);
        ctx.run_interval(TICK, |act, ctx| act.tick(ctx));
        self.shared.open_sessions().insert(self.id, ctx.address());
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        for rs in self.robots.values_mut() {
            rs.holdings.leave();
            rs.tap = None;
        }
        self.out.borrow_mut().closed = true;
        self.wake.notify_one();
        if let Some(w) = self.writer.take() {
            actix_rt::spawn(async move {
                tokio::time::sleep(Duration::from_secs(2)).await;
                w.abort();
            });
        }
        self.shared.open_sessions().remove(&self.id);
        info!(self.log, "web client disconnected"; "dropped_frames" => self.out.borrow().dropped);
    }
}

impl StreamHandler<Result<Message, WsError>> for WebSession {
    fn handle(&mut self, item: Result<Message, WsError>, ctx: &mut Self::Context) {
        match item {
            Ok(Message::Text(t)) => self.on_text(t.as_str(), ctx),
            Ok(Message::Binary(b)) => self.on_binary(&b, ctx),
            Ok(Message::Close(_)) => ctx.stop(),
            Ok(_) => {}
            Err(e) => {
                debug!(self.log, "web socket error"; "error" => %e);
                if !matches!(e, WsError::ConnectionClosed | WsError::AlreadyClosed) {
                    warn!(self.log, "web client dropped"; "error" => %e);
                }
                ctx.stop();
            }
        }
    }

    fn finished(&mut self, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

impl Handler<DeviceData> for WebSession {
    type Result = ();

    /// The first robot's reading (its registry sends to the session itself).
    fn handle(&mut self, msg: DeviceData, _ctx: &mut Self::Context) {
        self.on_reading(0, &msg);
    }
}

impl Handler<DeviceDataBatch> for WebSession {
    type Result = ();

    fn handle(&mut self, msg: DeviceDataBatch, _ctx: &mut Self::Context) {
        for d in msg.0.iter() {
            self.on_reading(0, d);
        }
    }
}

impl Handler<Tagged<DeviceData>> for WebSession {
    type Result = ();

    fn handle(&mut self, msg: Tagged<DeviceData>, _ctx: &mut Self::Context) {
        self.on_reading(msg.robot, &msg.message);
    }
}

impl Handler<Tagged<DeviceDataBatch>> for WebSession {
    type Result = ();

    fn handle(&mut self, msg: Tagged<DeviceDataBatch>, _ctx: &mut Self::Context) {
        for d in msg.message.0.iter() {
            self.on_reading(msg.robot, d);
        }
    }
}

impl Handler<Notice> for WebSession {
    type Result = ();

    /// The first robot's notice.
    fn handle(&mut self, n: Notice, ctx: &mut Self::Context) {
        self.on_notice(0, n, ctx);
    }
}

impl Handler<Tagged<Notice>> for WebSession {
    type Result = ();

    fn handle(&mut self, msg: Tagged<Notice>, ctx: &mut Self::Context) {
        self.on_notice(msg.robot, msg.message, ctx);
    }
}

impl WebSession {
    /// Robot `k`'s notices become Foxglove status messages (beginning with the robot's
    /// name where the endpoint serves several); the e-stop's also update its `/devices` at
    /// once.
    fn on_notice(&mut self, k: usize, n: Notice, ctx: &mut Context<Self>) {
        let level = match n.kind {
            kind::UP | kind::ESTOP_RELEASED => Level::Info,
            kind::ESTOP | kind::FAILED => Level::Error,
            _ => Level::Warning,
        };
        let mut text = String::new();
        if self.shared.robots.several() {
            if let Some(r) = self.shared.robots.get(k) {
                text.push_str(&format!("{}: ", r.name));
            }
        }
        if n.device != 0 {
            text.push_str(&format!("{}: ", player_kit::log::device(n.device)));
        }
        text.push_str(&n.text);
        if let Some(rs) = self.robots.get_mut(&k) {
            match n.kind {
                kind::ESTOP => rs.estop = Some(n.text.clone()),
                kind::ESTOP_RELEASED => rs.estop = None,
                _ => {}
            }
        }
        if matches!(n.kind, kind::ESTOP | kind::ESTOP_RELEASED) {
            self.fetch_devices(k, ctx);
        }
        self.notice_status(k, n.kind, n.device, level, &text, ctx);
    }
}

impl Handler<Close> for WebSession {
    type Result = ();

    fn handle(&mut self, _msg: Close, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paced(gaps_ms: &[u64]) -> Pacing {
        let mut p = Pacing::default();
        let mut t = Instant::now();
        p.note(t);
        for &g in gaps_ms {
            t += Duration::from_millis(g);
            p.note(t);
        }
        p
    }

    #[test]
    fn a_first_command_holds_the_longest() {
        assert_eq!(paced(&[]).hold(), MAX_COMMAND_HOLD);
    }

    #[test]
    fn a_1_hz_writer_holds_past_its_next_message_and_no_longer_than_the_bound() {
        assert_eq!(paced(&[1000, 1000]).hold(), MAX_COMMAND_HOLD);
        assert_eq!(paced(&[800, 790]).hold(), Duration::from_millis(1000));
    }

    #[test]
    fn a_10_hz_writer_holds_briefly_and_follows_its_slowest_recent_gap() {
        assert_eq!(paced(&[100, 100, 100]).hold(), Duration::from_millis(150));
        assert_eq!(
            paced(&[100, 300, 100, 100]).hold(),
            Duration::from_millis(400)
        );
        // Only the latest four gaps count.
        assert_eq!(
            paced(&[300, 100, 100, 100, 100]).hold(),
            Duration::from_millis(150)
        );
    }

    #[test]
    fn a_pause_longer_than_any_hold_starts_afresh() {
        assert_eq!(paced(&[100, 100, 5000]).hold(), MAX_COMMAND_HOLD);
    }
}
