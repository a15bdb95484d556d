//! One browser (or Foxglove) connection: a session of the robot's registry like a TCP
//! client's, speaking the Foxglove WebSocket protocol.
//!
//! The session subscribes to the registry for the devices behind the channels its client
//! subscribed to (with its own [`DataRecipient`](player_kit::driver::DataRecipient)) and
//! gets `Grant.command` for the devices the client publishes commands to. Readings are
//! turned into Foxglove messages (encoded once per reading per thread and encoding, shared
//! by the sessions there) and put in the session's outbox, which keeps at most one message
//! per subscription: a newer reading replaces one the socket has not taken yet. A writer
//! task drains the outbox into the socket, so a slow browser loses rounds, never delays
//! the drivers or anyone else, and never queues a backlog. A client that takes nothing
//! for `stall_timeout` is disconnected.
//!
//! On an endpoint serving several robots ([`crate::world`]) the session keeps what it
//! holds of each robot apart (a `RobotState` per robot it touched: nothing for the others,
//! so a world of 10 000 robots costs a client nothing until it subscribes), and the
//! readings and notices of robot `k > 0` come through a
//! [`RobotTap`](player_core::frontend::tap::RobotTap) that tags them with `k`.
//!
//! By part, each file owning its part's state: `socket.rs` (the socket read by
//! tungstenite and written in our own frames), `connection.rs` (the outbox with its
//! newest-wins and stall rules, unit-tested, and the writer task),
//! `subscriptions.rs` (the subscription table, `subscribe`, `unsubscribe`),
//! `client_channels.rs` (the channels the client advertised, and its messages on them),
//! `robots.rs` (per robot: its `Holdings`, grants, command pacing, notices), `rights.rs`
//! (what the client may do, re-checked after a reload). By job: `commands` (a client's
//! message or service call made into an action: pure, in the wire crate,
//! [`player_foxglove::commands`], unit-tested per topic and fuzzed), `feeds.rs`
//! (readings, `/walls`, `/tf_map`, `/devices`, `/robots`), `nav.rs` (`/particles`, `/plan`:
//! the localizer and planner asked for them, answers tagged per robot), `map.rs` (`/map`:
//! the map device's grid, downloaded tile by tile), `services.rs`
//! (service calls, playback control, [`crate::playback`]), `parameters.rs` and `ops.rs`
//! (parameters, the connection graph, status conditions, the rate cap, the server's
//! clock). This file holds the actor: it routes the client's messages and the registry's,
//! and runs the tick.

mod client_channels;
mod connection;
mod feeds;
mod map;
mod nav;
mod ops;
mod parameters;
mod rights;
mod robots;
mod services;
mod socket;
mod subscriptions;

pub use commands::PUBLISH_TOPICS;
pub use rights::Admission;
pub use socket::Socket;

// A client's messages and service calls made into actions: the pure wire crate's, under
// the name the session's parts use (`super::commands`).
use player_foxglove::commands;

use crate::foxglove::{self, ClientBinary, ClientOp, Level};
use crate::playback::{self, Replay};
use crate::protobuf::Encoding;
use crate::shared::{SessionSignal, Shared};
use actix::prelude::*;
use bytes::Bytes;
use client_channels::ClientChannels;
use connection::Connection;
use feeds::Overview;
use player_core::frontend::tap::Tagged;
use player_core::notice::Notice;
use player_core::registry::SessionId;
use player_kit::driver::{DeviceData, DeviceDataBatch};
use robots::RobotState;
use slog::{debug, info, warn, Logger};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use subscriptions::Subscriptions;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// How often device states, the map transform and the stall check run.
const TICK: Duration = Duration::from_secs(1);

/// One Foxglove WebSocket client.
pub struct WebSession {
    id: SessionId,
    /// Its address, for logs and the registry's (`web ADDR`).
    client: String,
    subprotocol: &'static str,
    /// The encoding the client asked for (`?encoding=`).
    encoding: Encoding,
    shared: Arc<Shared>,
    /// What it may do (`rights.rs`).
    admission: Admission,
    /// The socket, the outbox, the writer (`connection.rs`).
    conn: Connection,
    /// Its subscriptions (`subscriptions.rs`).
    subs: Subscriptions,
    /// The channels it publishes on (`client_channels.rs`).
    pubs: ClientChannels,
    /// What it holds of each robot it touched, by robot index in the endpoint
    /// (`robots.rs`).
    robots: HashMap<usize, RobotState>,
    /// The robots' poses for the world's `/robots` (`feeds.rs`).
    overview: Overview,
    /// Playback control, when the endpoint's one robot is a replay (`services.rs`).
    replay: Option<Replay>,
    /// Parameters, connection graph, status conditions, clock (`ops.rs`).
    ops: ops::Ops,
    /// When each robot's particles and plan were asked for, and where its answers come
    /// (`nav.rs`).
    nav: nav::NavAsks,
    /// Each robot's map, where its `/map` is read (`map.rs`).
    maps: map::Maps,
    /// The configs the client's requests sent that wait at drivers (service calls, pose
    /// estimates, motor power): bounded as a TCP client's are.
    configs: player_kit::answer::ConfigPlaces,
    log: Logger,
}

impl WebSession {
    /// A session for an upgraded connection from `client` (its address, for logs), with
    /// what the upgrade decided: the subprotocol and the client's admission.
    pub fn new(
        id: SessionId,
        socket: Socket,
        client: String,
        subprotocol: &'static str,
        admission: Admission,
        shared: Arc<Shared>,
    ) -> WebSession {
        let log = shared.log.new(slog::o!("client" => client.clone()));
        WebSession {
            replay: shared.replay.clone().map(Replay::new),
            robots: HashMap::new(),
            id,
            client,
            subprotocol,
            admission,
            encoding: Encoding::default(),
            shared,
            subs: Subscriptions::default(),
            pubs: ClientChannels::default(),
            overview: Overview::default(),
            conn: Connection::new(socket),
            ops: ops::Ops::default(),
            nav: nav::NavAsks::default(),
            maps: map::Maps::default(),
            configs: Default::default(),
            log,
        }
    }

    /// Encodes the channels in `encoding` (`?encoding=`; protobuf by default).
    pub fn with_encoding(mut self, encoding: Encoding) -> WebSession {
        self.encoding = encoding;
        self
    }

    /// Advertises only the robots a `?robots=` value picks (an endpoint serving several
    /// robots; see [`crate::world`]).
    pub fn with_robots(self, picked: Option<Vec<usize>>) -> WebSession {
        self.conn.pick(picked);
        self
    }

    /// Queues a control message; a client with
    /// [`MAX_CONTROL`](connection::MAX_CONTROL) waiting already does not read at all and
    /// is disconnected.
    fn send_control(&mut self, message: Message, ctx: &mut Context<Self>) {
        if !self.conn.control(message) {
            warn!(
                self.log,
                "web client does not read its messages; disconnecting"
            );
            ctx.stop();
        }
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

    /// Puts a message for subscription `sub` in the outbox (newest wins), the server's
    /// clock before it when due.
    fn send_frame(&mut self, sub: u32, frame: Bytes) {
        self.push_time(false);
        if self.conn.frame(sub, frame) {
            self.ops.note_dropped(sub);
        }
    }

    /// Puts a reading's `messageData` for subscription `sub` in the outbox like
    /// [`Self::send_frame`]: its header and the payload every subscriber shares, put
    /// together only in the writer's buffer.
    fn send_reading(&mut self, sub: u32, timestamp_ns: u64, payload: Bytes) {
        self.push_time(false);
        let head = foxglove::message_data_head(sub, timestamp_ns);
        if self
            .conn
            .frame(sub, connection::Data::Reading(head, payload))
        {
            self.ops.note_dropped(sub);
        }
    }

    fn on_text(&mut self, text: &str, ctx: &mut Context<Self>) {
        let op = match foxglove::parse_text(text) {
            Ok(op) => op,
            Err(e) => return self.status(Level::Error, &e, ctx),
        };
        match op {
            ClientOp::Subscribe(list) => self.subscribe(list, ctx),
            ClientOp::Unsubscribe(ids) => self.unsubscribe(ids, ctx),
            ClientOp::Advertise(channels) => self.advertise(channels, ctx),
            ClientOp::Unadvertise(ids) => self.unadvertise(ids, ctx),
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
        match foxglove::parse_binary(b) {
            Ok(ClientBinary::Message { channel, payload }) => self.publish(channel, payload, ctx),
            Ok(ClientBinary::ServiceCall {
                service,
                call,
                encoding,
                payload,
            }) => self.on_service_call(service, call, encoding, payload, ctx),
            Err(e) => self.status(Level::Error, &e, ctx),
        }
    }

    /// Once a [`TICK`]: received rates, `/devices` and `/tf_map` of the robots whose
    /// channels are read, `/robots`, the operations' tick, and the stall check.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        for rs in self.robots.values_mut() {
            for st in rs.devices.values_mut() {
                st.rate = f64::from(st.count) / TICK.as_secs_f64();
                st.count = 0;
            }
        }
        // The robots whose `/devices` or `/tf_map` someone here reads (no other robot
        // costs anything).
        let (devices, tf) = self.subs.device_lists_and_transforms(&self.shared.robots);
        for k in devices {
            self.fetch_devices(k, ctx);
        }
        for k in tf {
            self.fetch_map(k, false, ctx);
        }
        self.send_overview(ctx);
        self.ask_nav(ctx);
        self.map_tick(ctx);
        self.ops_tick(ctx);
        let stall = self.shared.stall_timeout;
        if self.conn.stalled(stall) {
            warn!(self.log, "web client read nothing for too long; disconnecting"; "seconds" => stall.as_secs_f64());
            // First in line for the socket, should the client read again within the
            // writer's grace; else the socket just closes.
            self.conn.close_with(CloseFrame {
                code: CloseCode::Policy,
                reason: format!("read nothing for {} s", stall.as_secs_f64()).into(),
            });
            ctx.stop();
        }
    }

    /// At connection: the server's info and channels, then the services; the tick.
    fn greet(&mut self, ctx: &mut Context<Self>) {
        let robots = &self.shared.robots;
        match robots.get(0) {
            Some(r) if !robots.several() => {
                let name = format!("player ({})", r.name);
                let mut info = foxglove::server_info(&name, self.id.get(), &r.name);
                if let Some(rp) = &self.replay {
                    info = playback::server_info(&info, &rp.state());
                    ctx.run_interval(playback::TIME_PERIOD, |act, ctx| act.playback_tick(ctx));
                }
                let advertise = foxglove::advertise(&r.channels, self.encoding);
                self.send_text(info, ctx);
                self.ops_started(ctx);
                self.send_text(advertise, ctx);
                // Its notices from the start (a world's robots: once a client touches one).
                self.robot(0, ctx);
            }
            _ => {
                let name = format!("player ({} robots)", robots.len());
                let info = foxglove::server_info(&name, self.id.get(), "");
                self.send_text(info, ctx);
                self.ops_started(ctx);
                self.conn.advertise_all();
            }
        }
        self.send_text(foxglove::advertise_services(&foxglove::SERVICES), ctx);
    }
}

impl Actor for WebSession {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        info!(self.log, "web client connected"; "subprotocol" => self.subprotocol, "session" => self.id);
        let (shared, encoding) = (self.shared.clone(), self.encoding);
        let advertise =
            move |picked: Option<&[usize]>, k| shared.robots.advertise_from(picked, k, encoding);
        if let Some(stream) = self.conn.start(Box::new(advertise)) {
            ctx.add_stream(stream);
        }
        self.greet(ctx);
        ctx.run_interval(TICK, |act, ctx| act.tick(ctx));
        let me = ctx.address().recipient();
        self.shared.open_sessions().insert(self.id, me);
    }

    fn stopped(&mut self, _ctx: &mut Self::Context) {
        for rs in self.robots.values_mut() {
            rs.holdings.leave();
            rs.tap = None;
        }
        self.conn.end();
        self.shared.open_sessions().remove(&self.id);
        info!(self.log, "web client disconnected"; "dropped_frames" => self.conn.dropped());
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

impl Handler<SessionSignal> for WebSession {
    type Result = ();

    fn handle(&mut self, signal: SessionSignal, ctx: &mut Self::Context) {
        match signal {
            SessionSignal::End => ctx.stop(),
            SessionSignal::PolicyReloaded => self.recheck_rights(ctx),
            SessionSignal::ParametersChanged => self.refresh_parameters(ctx),
        }
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
