//! The `passthrough` driver: devices of another Player server served as devices of this
//! one, so one server can present the devices of a whole fleet as one device table.
//!
//! ```toml
//! [[robot.driver]]
//! driver = "passthrough"
//! devices = ["P", "S"]          # the local codes
//! [robot.driver.params]
//! host = "10.0.0.12"
//! port = 6665
//! remote = ["p", "s"]           # the remote codes, one per local code (default: the same)
//! ```
//!
//! Parameters (`[robot.driver.params]`):
//!
//! - `host`, `port`: the remote server (default `127.0.0.1:6665`);
//! - `device`: the remote code of the one local device (default: the local code), or
//!   `remote`: the remote codes of all the local devices, in order; all of an entry's
//!   devices share one connection;
//! - `frequency`: Hz asked of the remote (default 50; in push-new mode, so each reading is
//!   relayed once as soon as it is new, and this caps how often);
//! - `key`: the remote's shared access key (`[access] key` there);
//! - `extensions`: use the remote's extensions (default true: timestamps, push-new data
//!   mode, error channel, device list as a heartbeat); false for a server that speaks only
//!   0.7.4a (readings are then stamped on arrival and relayed every round);
//! - `data_size`, `command_size`, `moving`: what the local devices declare (default: by the
//!   remote code, from `player_proto`: position 21 bytes of data, 4-byte commands, moving;
//!   gripper 2 and 2; ptz 6 and 6; sonar 32, laser 722, misc 3, vision up to 3264, read
//!   only; an unknown code: up to 65535 bytes, read only); `data_size` is the largest
//!   reading relayed (larger ones are dropped and counted), `command_size = 0` makes the
//!   devices read-only, `moving` puts them under the command watchdog. They apply to every
//!   device of the entry;
//! - `connect_timeout`: seconds the first connection may take (default 5);
//! - `silence`: seconds without a byte from the remote before the link is taken for lost
//!   (default 3; with extensions a device-list request is sent every quarter of it, so a
//!   quiet but live remote always answers);
//!
//! What happens: the first local holder of a device opens the connection (if not open) and
//! asks the remote for the device, read-only; setup answers when the remote replies (its
//! `e` is the local `e`). The first command of a local writer asks the remote for `a`
//! (that command is sent once it is granted), and a local writer leaving drops it back to
//! `r`, so the remote sees the relay as a writer exactly while a local writer commands, and
//! a local reader leaving never stops a robot that others drive on the remote. The last
//! holder leaving closes the remote device, and the connection after the last device.
//! Readings are published with the remote's timestamps and payloads byte for byte.
//! Commands are forwarded as they come (newest wins while the connection is busy; never
//! resent: the local controller's resends are what keeps the remote's watchdog fed, so a
//! controller that stops, or a link that dies, stops the remote robot through the remote's
//! own watchdog). The local guard's `Stop` (a writer left, the local watchdog, the local
//! e-stop) is forwarded to a `moving` device as a zero command, and a writer leaving also
//! drops the remote device to `r` (the remote's own writer-left stop). The local e-stop
//! also latches the remote robot's own e-stop (`x y E 1`, when the relay backs a device
//! that takes commands), so the robot stays stopped whoever else drives it there; releasing
//! the local e-stop does not release the remote's: a robot stopped for safety is released
//! on its own server, by someone who can see it (`player-cli estop off` on its port). Configs are
//! forwarded; 0.7.4a configs have no reply, and the remote's refusals (its error channel's
//! `x` notices) are logged. When the connection is lost the open devices are reported
//! reconnecting (clients with the error channel get `f`), it is reopened with the kit's
//! shared reconnect loop (`player_kit::link::run_link`: backoff from 0.2 s to 5 s), the
//! devices are asked for again, and reported up (`u`) once the remote grants them; no
//! command is replayed after a reconnect.

pub mod codec;

use actix::prelude::*;
use bytes::{Bytes, BytesMut};
use codec::Inbound;
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{
    Command, Config, DeviceSpec, DeviceState, DriverError, DriverHandle, Publisher, Setup,
    Shutdown, StatusSink, Stop, StopReason, Subscribers, Terminate, Timestamp,
};
use player_kit::link::{
    close_channel, run_link, CloseReceiver, Ended, Link, LinkError, LinkState, LinkSupervisor,
    LinkUp, LogThrottle,
};
use player_kit::log::{code, escape};
use player_proto::data::{self as wire, PositionCommand, VISION_MAX};
use player_proto::ext::{kind, Extension};
use player_proto::message::ServerMessage;
use player_proto::{access, device, message};
use serde::Deserialize;
use slog::{debug, info, warn, Logger};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Parameters of the `passthrough` driver (see the module documentation).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PassthroughParams {
    /// The remote server's host.
    #[serde(default = "localhost")]
    pub host: String,
    /// The remote server's port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// The remote code of the one local device.
    #[serde(default)]
    pub device: Option<String>,
    /// The remote codes of the local devices, in the order of `devices`.
    #[serde(default)]
    pub remote: Option<Vec<String>>,
    /// Hz asked of the remote.
    #[serde(default = "default_frequency")]
    pub frequency: u16,
    /// The remote's shared access key.
    #[serde(default)]
    pub key: Option<String>,
    /// Whether to use the remote's extensions.
    #[serde(default = "yes")]
    pub extensions: bool,
    /// The largest reading relayed, in bytes.
    #[serde(default)]
    pub data_size: Option<usize>,
    /// The size of the devices' commands (0: read-only).
    #[serde(default)]
    pub command_size: Option<usize>,
    /// Whether the devices' commands keep something moving (command watchdog).
    #[serde(default)]
    pub moving: Option<bool>,
    /// Seconds the first connection may take.
    #[serde(default = "five")]
    pub connect_timeout: f64,
    /// Seconds without a byte from the remote before the link is taken for lost.
    #[serde(default = "three")]
    pub silence: f64,
}

fn localhost() -> String {
    "127.0.0.1".into()
}
fn default_port() -> u16 {
    6665
}
fn default_frequency() -> u16 {
    50
}
fn yes() -> bool {
    true
}
fn five() -> f64 {
    5.0
}
fn three() -> f64 {
    3.0
}

/// The largest command a passthrough device may declare (the server's bound on a client
/// message's payload).
const MAX_COMMAND: usize = 4096;
/// Configs waiting for the connection; more are dropped (and logged).
const MAX_QUEUED_CONFIGS: usize = 64;
/// How long a write to the remote may take before the link is taken for lost.
const WRITE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a reconnect attempt may take.
const RECONNECT_PATIENCE: Duration = Duration::from_secs(2);
/// How long after a refusal a device wanted again is asked for again.
const RETRY_REFUSED: Duration = Duration::from_secs(2);

/// One local device and the remote device behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mapped {
    local: u8,
    remote: u8,
    data_size: usize,
    command_size: Option<usize>,
    moving: bool,
}

/// Whether an access code includes writing.
fn writes(a: u8) -> bool {
    a == access::ALL || a == access::WRITE
}

impl Mapped {
    fn spec(&self) -> DeviceSpec {
        match (self.command_size, self.moving) {
            (Some(n), true) => DeviceSpec::moving(self.local, n),
            (Some(n), false) => DeviceSpec::read_write(self.local, n),
            (None, _) => DeviceSpec::read_only(self.local),
        }
    }
}

/// What a standard device declares, by its code: data size, command size, moving.
fn standard(remote: u8) -> (usize, Option<usize>, bool) {
    match remote {
        device::POSITION => (wire::Position::SIZE, Some(PositionCommand::SIZE), true),
        device::GRIPPER => (wire::Gripper::SIZE, Some(wire::GripperCommand::SIZE), false),
        device::PTZ => (wire::Ptz::SIZE, Some(wire::Ptz::SIZE), false),
        device::SONAR => (wire::Sonar::SIZE, None, false),
        device::LASER => (wire::Laser::SIZE, None, false),
        device::MISC => (wire::Misc::SIZE, None, false),
        device::VISION => (VISION_MAX, None, false),
        _ => (usize::from(u16::MAX), None, false),
    }
}

fn one_code(what: &str, s: &str) -> Result<u8, DriverError> {
    match s.as_bytes() {
        [c] if c.is_ascii_graphic() && *c != device::SERVER && *c != message::REPLY => Ok(*c),
        _ => Err(DriverError::params(format!(
            "passthrough parameter {what}: '{}' is not a one-character device code (nor 'y' or 'r')",
            escape(s.as_bytes(), 16)
        ))),
    }
}

/// Everything a link task needs to know, fixed for the driver's life.
#[derive(Debug)]
struct LinkConfig {
    host: String,
    port: u16,
    key: Option<Vec<u8>>,
    extensions: bool,
    frequency: u16,
    connect_timeout: Duration,
    silence: Duration,
    devices: Vec<Mapped>,
}

impl LinkConfig {
    fn from_params(p: PassthroughParams, locals: &[u8]) -> Result<LinkConfig, DriverError> {
        let err = |s: String| Err(DriverError::params(format!("passthrough: {s}")));
        if locals.is_empty() {
            return err("no device to serve".into());
        }
        let remotes: Vec<u8> = match (&p.device, &p.remote) {
            (Some(_), Some(_)) => return err("give either `device` or `remote`, not both".into()),
            (Some(d), None) if locals.len() == 1 => vec![one_code("device", d)?],
            (Some(_), None) => {
                return err(
                    "`device` names one remote device; use `remote = [...]` for several".into(),
                )
            }
            (None, Some(r)) if r.len() == locals.len() => r
                .iter()
                .map(|c| one_code("remote", c))
                .collect::<Result<_, _>>()?,
            (None, Some(r)) => {
                return err(format!(
                    "`remote` has {} codes for {} devices",
                    r.len(),
                    locals.len()
                ))
            }
            (None, None) => locals.to_vec(),
        };
        let distinct: BTreeSet<u8> = remotes.iter().copied().collect();
        if distinct.len() != remotes.len() {
            return err("a remote device is named twice".into());
        }
        if !(1..=1000).contains(&p.frequency) {
            return err(format!("frequency = {}: must be 1 to 1000 Hz", p.frequency));
        }
        for (name, v, lo) in [
            ("connect_timeout", p.connect_timeout, 0.0),
            ("silence", p.silence, 0.2),
        ] {
            if !(v.is_finite() && v > lo && v <= 600.0) {
                return err(format!(
                    "{name} = {v}: must be more than {lo} and at most 600 s"
                ));
            }
        }
        if let Some(n) = p.data_size {
            if !(1..=usize::from(u16::MAX)).contains(&n) {
                return err(format!("data_size = {n}: must be 1 to 65535"));
            }
        }
        if let Some(n) = p.command_size {
            if n > MAX_COMMAND {
                return err(format!("command_size = {n}: must be at most {MAX_COMMAND}"));
            }
        }
        let key = p.key.map(String::into_bytes);
        if let Some(k) = &key {
            if k.len() > player_proto::ext::MAX_KEY {
                return err("key: at most 64 bytes".into());
            }
        }
        let devices = locals
            .iter()
            .zip(&remotes)
            .map(|(&local, &remote)| {
                let (data, command, moving) = standard(remote);
                let command_size = match p.command_size {
                    Some(0) => None,
                    Some(n) => Some(n),
                    None => command,
                };
                Mapped {
                    local,
                    remote,
                    data_size: p.data_size.unwrap_or(data),
                    moving: command_size.is_some() && p.moving.unwrap_or(moving),
                    command_size,
                }
            })
            .collect();
        Ok(LinkConfig {
            host: p.host,
            port: p.port,
            key,
            extensions: p.extensions,
            frequency: p.frequency,
            connect_timeout: Duration::from_secs_f64(p.connect_timeout),
            silence: Duration::from_secs_f64(p.silence),
            devices,
        })
    }

    fn by_local(&self, local: u8) -> Option<&Mapped> {
        self.devices.iter().find(|m| m.local == local)
    }

    fn by_remote(&self, remote: u8) -> Option<&Mapped> {
        self.devices.iter().find(|m| m.remote == remote)
    }

    fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// What the actor hands the link task: bounded by construction (a set of devices, one
/// command per device, at most [`MAX_QUEUED_CONFIGS`] configs).
#[derive(Default)]
struct Outbox {
    /// The local devices set up here (each must be open on the remote).
    wanted: BTreeSet<u8>,
    /// The newest command of each local device, not yet sent.
    commands: BTreeMap<u8, Bytes>,
    /// The local devices a local writer commands: opened `a` on the remote, the others
    /// `r` (so a local reader leaving never looks like a writer leaving to the remote).
    write: BTreeSet<u8>,
    /// Configs not yet sent: local device, payload, client.
    configs: VecDeque<(u8, Bytes, String)>,
    /// Local devices reported failed or reconnecting and not yet reported up again.
    down: BTreeSet<u8>,
    /// The local emergency stop was latched: latch the remote's at the next write (kept
    /// across a reconnect, so it reaches the remote once the link is back).
    estop: bool,
}

/// The outbox and the bell that says it changed, shared by the actor and its link task.
#[derive(Default)]
struct Shared {
    outbox: Mutex<Outbox>,
    wake: Notify,
}

impl Shared {
    fn with<T>(&self, f: impl FnOnce(&mut Outbox) -> T) -> T {
        let mut o = self.outbox.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut o)
    }
}

/// Link task → actor: a reading of a local device.
#[derive(Message)]
#[rtype(result = "()")]
struct Reading {
    device: u8,
    data: Bytes,
    at: Timestamp,
}

/// Link task → actor: the remote answered the request for a local device.
#[derive(Message)]
#[rtype(result = "()")]
struct Granted {
    device: u8,
    result: Result<(), String>,
}

/// The passthrough driver actor.
pub struct PassthroughDriver {
    cfg: Arc<LinkConfig>,
    shared: Arc<Shared>,
    publisher: Publisher,
    link: LinkSupervisor,
    pending: BTreeMap<u8, Vec<tokio::sync::oneshot::Sender<Result<(), String>>>>,
    status: StatusSink,
    dropped_configs: LogThrottle,
    log: Logger,
}

impl PassthroughDriver {
    fn new(ctx: &DriverContext) -> Result<PassthroughDriver, DriverError> {
        let params: PassthroughParams = ctx.params()?;
        let cfg = LinkConfig::from_params(params, &ctx.devices)?;
        let log = ctx.logger.new(slog::o!("remote" => cfg.address()));
        Ok(PassthroughDriver {
            cfg: Arc::new(cfg),
            shared: Arc::default(),
            publisher: ctx.publisher(),
            link: LinkSupervisor::new("passthrough"),
            pending: BTreeMap::new(),
            status: ctx.status.clone(),
            dropped_configs: LogThrottle::default(),
            log,
        })
    }

    /// Starts the link task; its log lines name the client whose request opened it.
    fn start_link(&mut self, opened_by: &str, ctx: &mut Context<Self>) {
        let (close, close_rx) = close_channel();
        self.shared.with(|o| {
            o.commands.clear();
            o.configs.clear();
        });
        let task = LinkTask {
            cfg: self.cfg.clone(),
            shared: self.shared.clone(),
            readings: ctx.address().recipient(),
            granted: ctx.address().recipient(),
            status: self.status.clone(),
            log: self.log.new(slog::o!("opened_by" => opened_by.to_string())),
            notices: LogThrottle::default(),
            oversized: LogThrottle::default(),
        };
        self.link
            .start(close, move |state| run_link(task, close_rx, state));
    }

    /// Forgets a device that is no longer wanted; closes the link after the last one.
    fn unwant(&mut self, device: u8) -> Option<impl std::future::Future<Output = ()>> {
        let empty = self.shared.with(|o| {
            o.wanted.remove(&device);
            o.write.remove(&device);
            o.wanted.is_empty()
        });
        self.shared.wake.notify_one();
        empty.then(|| self.link.close())
    }
}

impl Actor for PassthroughDriver {
    type Context = Context<Self>;
}

impl Handler<Setup> for PassthroughDriver {
    type Result = ResponseActFuture<Self, Result<(), DriverError>>;

    fn handle(&mut self, msg: Setup, ctx: &mut Self::Context) -> Self::Result {
        let fail = |e: DriverError| -> Self::Result { Box::pin(actix::fut::ready(Err(e))) };
        if self.cfg.by_local(msg.device).is_none() {
            return fail(DriverError::not_served(format!(
                "the passthrough driver does not serve {}",
                code(msg.device)
            )));
        }
        if !self.link.is_running() {
            self.start_link(&msg.client, ctx);
        } else if self
            .link
            .state()
            .is_some_and(|s| *s == LinkState::Reconnecting)
        {
            return fail(DriverError::link(format!(
                "the remote server {} is unreachable (reconnecting)",
                self.cfg.address()
            )));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pending.entry(msg.device).or_default().push(tx);
        self.shared.with(|o| o.wanted.insert(msg.device));
        self.shared.wake.notify_one();
        let ready = self.link.wait_ready();
        let device = msg.device;
        let client = msg.client;
        Box::pin(
            async move {
                ready.await?;
                match rx.await {
                    Ok(r) => r.map_err(DriverError::refused),
                    Err(_) => Err(DriverError::link("the passthrough link ended during setup")),
                }
            }
            .into_actor(self)
            .then(move |res, act, _| {
                let close = match &res {
                    Ok(()) => None,
                    Err(e) => {
                        warn!(act.log, "remote device setup failed"; "device" => code(device), "error" => %e, "client" => &*client);
                        act.pending.remove(&device);
                        // After the last wanted device the link is closed (a link whose
                        // first connection failed has ended; closing it only forgets it).
                        act.unwant(device)
                    }
                };
                async move {
                    if let Some(c) = close {
                        c.await;
                    }
                    res
                }
                .into_actor(act)
            }),
        )
    }
}

impl Handler<Granted> for PassthroughDriver {
    type Result = ();

    fn handle(&mut self, msg: Granted, _ctx: &mut Self::Context) {
        for tx in self.pending.remove(&msg.device).unwrap_or_default() {
            let _ = tx.send(msg.result.clone());
        }
    }
}

impl Handler<Shutdown> for PassthroughDriver {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: Shutdown, _ctx: &mut Self::Context) -> Self::Result {
        self.publisher.clear(msg.device);
        match self.unwant(msg.device) {
            Some(close) => Box::pin(close.into_actor(self)),
            None => Box::pin(actix::fut::ready(())),
        }
    }
}

impl Handler<Command> for PassthroughDriver {
    type Result = ();

    fn handle(&mut self, msg: Command, _ctx: &mut Self::Context) {
        self.shared.with(|o| {
            if o.wanted.contains(&msg.device) {
                o.commands.insert(msg.device, msg.payload);
                o.write.insert(msg.device);
            }
        });
        self.shared.wake.notify_one();
    }
}

impl Handler<Stop> for PassthroughDriver {
    type Result = ();

    fn handle(&mut self, msg: Stop, _ctx: &mut Self::Context) {
        let Some(m) = self.cfg.by_local(msg.device).copied() else {
            return;
        };
        // A moving device gets a zero command; when a writer left, the remote device is
        // also dropped to read-only (asked `a` again with the next command), so the
        // remote's own writer-left stop applies too, whatever the device.
        let zero = match m.command_size {
            Some(n) if m.moving => Some(Bytes::from(vec![0u8; n])),
            _ => None,
        };
        debug!(self.log, "stop forwarded"; "device" => code(m.local), "reason" => %msg.reason, "zero_command" => zero.is_some());
        self.shared.with(|o| {
            if let Some(z) = zero {
                if o.write.contains(&m.local) {
                    o.commands.insert(m.local, z);
                }
            }
            if msg.reason == StopReason::WriterLeft {
                o.write.remove(&m.local);
            }
            if msg.reason == StopReason::EmergencyStop && m.command_size.is_some() {
                o.estop = true;
            }
        });
        self.shared.wake.notify_one();
    }
}

impl Handler<Config> for PassthroughDriver {
    type Result = ();

    fn handle(&mut self, msg: Config, _ctx: &mut Self::Context) {
        let queued = self.shared.with(|o| {
            if !o.wanted.contains(&msg.device) || o.configs.len() >= MAX_QUEUED_CONFIGS {
                return false;
            }
            o.configs
                .push_back((msg.device, msg.payload, msg.client.clone()));
            true
        });
        if queued {
            self.shared.wake.notify_one();
        } else if self.dropped_configs.hit() {
            warn!(self.log, "config not forwarded: the device is not open or too many wait";
                "device" => code(msg.device), "client" => &msg.client, "dropped" => self.dropped_configs.count());
        }
    }
}

impl Handler<Subscribers> for PassthroughDriver {
    type Result = ();

    fn handle(&mut self, msg: Subscribers, _ctx: &mut Self::Context) {
        self.publisher.set_subscribers(msg);
    }
}

impl Handler<Reading> for PassthroughDriver {
    type Result = ();

    fn handle(&mut self, msg: Reading, _ctx: &mut Self::Context) {
        // A reading still in flight when its device was shut down must not become the
        // reading a later holder is sent first.
        if self.shared.with(|o| o.wanted.contains(&msg.device)) {
            self.publisher.publish_at(msg.device, msg.data, msg.at);
        }
    }
}

impl Handler<Terminate> for PassthroughDriver {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: Terminate, _ctx: &mut Self::Context) -> Self::Result {
        self.shared.with(|o| o.wanted.clear());
        let close = self.link.close();
        Box::pin(close.into_actor(self).map(|_, act, ctx| {
            info!(act.log, "passthrough driver stopped");
            ctx.stop();
        }))
    }
}

/// The connection to the remote server, as a [`Link`] of the kit's reconnect loop: connects,
/// asks for the wanted devices, relays, until the connection is lost or closed.
struct LinkTask {
    cfg: Arc<LinkConfig>,
    shared: Arc<Shared>,
    readings: Recipient<Reading>,
    granted: Recipient<Granted>,
    status: StatusSink,
    log: Logger,
    notices: LogThrottle,
    oversized: LogThrottle,
}

async fn connect(addr: &str, patience: Duration) -> Result<TcpStream, LinkError> {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        let attempt = tokio::time::timeout_at(deadline, TcpStream::connect(addr)).await;
        match attempt {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Ok(Err(_)) if tokio::time::Instant::now() + Duration::from_millis(100) < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(Err(e)) => {
                return Err(LinkError::io(
                    addr,
                    &e,
                    format!("cannot connect to {addr}: {e}"),
                ))
            }
            Err(_) => {
                return Err(LinkError::timeout(
                    addr,
                    format!(
                        "cannot connect to {addr} within {:.1} s",
                        patience.as_secs_f64()
                    ),
                ))
            }
        }
    }
}

async fn send(w: &mut OwnedWriteHalf, bytes: &[u8], addr: &str) -> Result<(), LinkError> {
    match tokio::time::timeout(WRITE_TIMEOUT, w.write_all(bytes)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(LinkError::io(addr, &e, format!("write failed: {e}"))),
        Err(_) => Err(LinkError::timeout(
            addr,
            format!(
                "the remote took no bytes for {:.0} s",
                WRITE_TIMEOUT.as_secs_f64()
            ),
        )),
    }
}

/// One connection's view of the remote devices.
#[derive(Default)]
struct Remote {
    /// Local devices open on the remote, with the access granted.
    open: BTreeMap<u8, u8>,
    /// Remote codes asked for and not yet answered: the local device.
    requested: BTreeMap<u8, u8>,
    /// Local devices refused, and when (asked again after [`RETRY_REFUSED`]).
    refused: BTreeMap<u8, Instant>,
    /// Whether a first reading of each local device has been seen.
    seen: BTreeSet<u8>,
    /// Commands waiting for the remote to grant write access (the first command of a
    /// local writer asks for it): the newest per local device.
    held: BTreeMap<u8, Bytes>,
    /// Local devices the remote would not give write access (not asked again on this
    /// connection).
    no_write: BTreeSet<u8>,
    /// Whether the remote has answered a request on this connection (the link is up).
    answered: bool,
}

impl LinkTask {
    /// Serves one connection until it is lost or closed.
    async fn serve_conn(
        &mut self,
        stream: TcpStream,
        close: &mut CloseReceiver,
        up: &mut LinkUp<'_>,
    ) -> Ended {
        info!(self.log, "connected to the remote server");
        let addr = self.cfg.address();
        let (mut rd, mut wr) = stream.into_split();
        let hello = codec::Hello {
            key: self.cfg.key.as_deref(),
            extensions: self.cfg.extensions,
            frequency: self.cfg.frequency,
        };
        let hello = match hello.encode() {
            Ok(h) => h,
            Err(e) => {
                let why = format!("cannot present the key: {e}");
                return Ended::Lost(LinkError::protocol(addr, why));
            }
        };
        if let Err(e) = send(&mut wr, &hello, &addr).await {
            return Ended::Lost(e);
        }
        // Whatever waited for the previous connection is stale now.
        self.shared.with(|o| {
            o.commands.clear();
            o.configs.clear();
        });
        let mut remote = Remote::default();
        let mut buf = BytesMut::with_capacity(16 * 1024);
        let mut last_rx = Instant::now();
        let tick_every = (self.cfg.silence / 4).max(Duration::from_millis(50));
        let mut tick = tokio::time::interval(tick_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ended = None;
        if let Err(e) = self.flush(&mut wr, &mut remote).await {
            ended = Some(Ended::Lost(e));
        }
        while ended.is_none() {
            tokio::select! {
                ack = &mut *close => {
                    // Send what waits (a stop, the last closes) before hanging up.
                    let _ = self.flush(&mut wr, &mut remote).await;
                    let _ = tokio::time::timeout(Duration::from_millis(500), wr.shutdown()).await;
                    info!(self.log, "connection to the remote server closed");
                    if let Ok(ack) = ack { let _ = ack.send(()); }
                    return Ended::Closed;
                }
                _ = self.shared.wake.notified() => {
                    if let Err(e) = self.flush(&mut wr, &mut remote).await {
                        ended = Some(Ended::Lost(e));
                    }
                }
                r = async {
                    buf.reserve(16 * 1024);
                    rd.read_buf(&mut buf).await
                } => {
                    match r {
                        Ok(0) => ended = Some(Ended::Lost(LinkError::protocol(&addr, "the remote server closed the connection"))),
                        Err(e) => ended = Some(Ended::Lost(LinkError::io(&addr, &e, format!("read failed: {e}")))),
                        Ok(_) => {
                            last_rx = Instant::now();
                            if let Err(e) = self.take(&mut buf, &mut remote, up) {
                                ended = Some(Ended::Lost(LinkError::protocol(&addr, e)));
                            } else if !remote.requested.is_empty() || self.retry_due(&remote) {
                                if let Err(e) = self.flush(&mut wr, &mut remote).await {
                                    ended = Some(Ended::Lost(e));
                                }
                            }
                        }
                    }
                }
                _ = tick.tick() => {
                    let live = self.cfg.extensions
                        || !remote.open.is_empty()
                        || !remote.requested.is_empty();
                    if live && last_rx.elapsed() > self.cfg.silence {
                        ended = Some(Ended::Lost(LinkError::timeout(&addr, format!(
                            "no byte from the remote for {:.1} s", self.cfg.silence.as_secs_f64()
                        ))));
                    } else {
                        let mut out = Vec::new();
                        if self.cfg.extensions {
                            out.extend(player_proto::ext::device_list_request());
                        }
                        let r = match send(&mut wr, &out, &addr).await {
                            Ok(()) if self.retry_due(&remote) => self.flush(&mut wr, &mut remote).await,
                            r => r,
                        };
                        if let Err(e) = r {
                            ended = Some(Ended::Lost(e));
                        }
                    }
                }
            }
        }
        // Lost: every device that was open is down until the remote grants it again.
        let lost: Vec<u8> = remote.open.keys().copied().collect();
        let wanted_lost: Vec<u8> = self.shared.with(|o| {
            let l: Vec<u8> = lost
                .iter()
                .copied()
                .filter(|d| o.wanted.contains(d) && !o.down.contains(d))
                .collect();
            o.down.extend(&l);
            l
        });
        if up.ever_up() {
            let why = format!(
                "connection to the remote server {} lost; reconnecting",
                self.cfg.address()
            );
            self.status
                .report(&wanted_lost, DeviceState::Reconnecting, &why);
        }
        // Setups still waiting learn that this connection ended.
        for (_, local) in std::mem::take(&mut remote.requested) {
            if !up.ever_up() {
                self.granted.do_send(Granted {
                    device: local,
                    result: Err("the remote server closed the connection before answering".into()),
                });
            }
        }
        ended.unwrap_or(Ended::Lost(LinkError::protocol(addr, String::new())))
    }

    fn retry_due(&self, remote: &Remote) -> bool {
        remote
            .refused
            .values()
            .any(|t| t.elapsed() >= RETRY_REFUSED)
    }

    /// Writes what the actor queued: commands of open devices (before any close, so a stop
    /// reaches the remote), configs, then requests for devices to open and close.
    async fn flush(
        &mut self,
        wr: &mut OwnedWriteHalf,
        remote: &mut Remote,
    ) -> Result<(), LinkError> {
        let (wanted, write, commands, configs, estop) = self.shared.with(|o| {
            (
                o.wanted.clone(),
                o.write.clone(),
                std::mem::take(&mut o.commands),
                std::mem::take(&mut o.configs),
                std::mem::take(&mut o.estop),
            )
        });
        let mut out = Vec::new();
        if estop {
            // First, before any command: the remote robot's own e-stop, which any client
            // may latch; releasing it is left to the remote (see the module docs).
            warn!(
                self.log,
                "local emergency stop: latching the remote robot's"
            );
            out.extend(player_proto::ext::estop(true));
        }
        for (local, payload) in commands {
            let Some(m) = self.cfg.by_local(local) else {
                continue;
            };
            let pending =
                remote.open.contains_key(&local) || remote.requested.contains_key(&m.remote);
            match remote.open.get(&local) {
                Some(&a) if writes(a) => {
                    out.extend(message::command(m.remote, &payload));
                }
                _ if pending && write.contains(&local) && !remote.no_write.contains(&local) => {
                    remote.held.insert(local, payload);
                }
                _ => {
                    debug!(self.log, "command not forwarded: the remote device is not open for writing"; "device" => code(local))
                }
            }
        }
        remote.held.retain(|d, _| write.contains(d));
        for (local, payload, client) in configs {
            let Some(m) = self.cfg.by_local(local) else {
                continue;
            };
            match payload.split_first() {
                Some((&c, args)) if remote.open.contains_key(&local) => {
                    out.extend(message::config(m.remote, c, args));
                }
                _ => {
                    debug!(self.log, "config not forwarded"; "device" => code(local), "client" => client)
                }
            }
        }
        let mut pairs = Vec::new();
        for &local in &wanted {
            let Some(m) = self.cfg.by_local(local) else {
                continue;
            };
            let asked = remote.requested.contains_key(&m.remote);
            let waiting = remote
                .refused
                .get(&local)
                .is_some_and(|t| t.elapsed() < RETRY_REFUSED);
            let want = if write.contains(&local)
                && m.command_size.is_some()
                && !remote.no_write.contains(&local)
            {
                access::ALL
            } else {
                access::READ
            };
            let ask = match remote.open.get(&local) {
                None => !waiting,
                // A local writer came (ask `a`) or the last one left (drop to `r`).
                Some(&now) => writes(now) != writes(want),
            };
            if ask && !asked {
                remote.refused.remove(&local);
                remote.requested.insert(m.remote, local);
                pairs.push((m.remote, want));
            }
        }
        remote.refused.retain(|d, _| wanted.contains(d));
        let closing: Vec<u8> = remote
            .open
            .keys()
            .copied()
            .filter(|d| !wanted.contains(d))
            .collect();
        for local in closing {
            remote.open.remove(&local);
            remote.seen.remove(&local);
            if let Some(m) = self.cfg.by_local(local) {
                pairs.push((m.remote, access::CLOSE));
            }
        }
        if !pairs.is_empty() {
            out.extend(message::request(&pairs));
        }
        if out.is_empty() {
            return Ok(());
        }
        send(wr, &out, &self.cfg.address()).await
    }

    /// Decodes and handles every whole message in `buf`.
    fn take(
        &mut self,
        buf: &mut BytesMut,
        remote: &mut Remote,
        up: &mut LinkUp<'_>,
    ) -> Result<(), String> {
        loop {
            let (m, n) = match codec::decode(buf, self.cfg.extensions) {
                Ok(Some(x)) => x,
                Ok(None) => {
                    debug_assert!(buf.len() < codec::MAX_MESSAGE);
                    return Ok(());
                }
                Err(e) => return Err(format!("bad message from the remote: {e}")),
            };
            let _ = buf.split_to(n);
            match m {
                Inbound::Message(ServerMessage::Reply(pairs)) => self.on_reply(pairs, remote, up),
                Inbound::Message(ServerMessage::Data {
                    device,
                    timestamp,
                    payload,
                }) => self.on_data(device, timestamp, payload, remote),
                Inbound::Extension(Extension::Notice(n)) => self.on_notice(n, remote),
                Inbound::Extension(Extension::DeviceList(_)) => {}
                Inbound::BadExtension(e) => {
                    debug!(self.log, "unreadable extension packet from the remote skipped"; "error" => e)
                }
            }
        }
    }

    fn on_reply(&mut self, pairs: Vec<(u8, u8)>, remote: &mut Remote, up: &mut LinkUp<'_>) {
        for (rcode, granted) in pairs {
            if granted == access::CLOSE {
                continue;
            }
            let Some(local) = remote.requested.remove(&rcode) else {
                continue;
            };
            let Some(m) = self.cfg.by_local(local).copied() else {
                continue;
            };
            // Up on each connection's first answer (so a recovery is reported too).
            if !remote.answered {
                remote.answered = true;
                up.mark();
            }
            let (was_down, wants_write) = self
                .shared
                .with(|o| (o.down.contains(&local), o.write.contains(&local)));
            let was_open = remote.open.contains_key(&local);
            if granted == access::ERROR || granted == 0 {
                let why = format!("the remote server refused device {}", code(rcode));
                if was_down || was_open {
                    self.shared.with(|o| o.down.insert(local));
                    self.status.report(&[local], DeviceState::Failed, &why);
                }
                remote.open.remove(&local);
                remote.held.remove(&local);
                remote.refused.insert(local, Instant::now());
                self.granted.do_send(Granted {
                    device: local,
                    result: Err(why),
                });
                continue;
            }
            if wants_write && m.command_size.is_some() && !writes(granted) {
                if remote.no_write.insert(local) {
                    warn!(self.log, "the remote gave no write access (a key?): commands will not reach it";
                        "device" => code(local), "granted" => code(granted));
                }
                remote.held.remove(&local);
            }
            remote.open.insert(local, granted);
            if writes(granted) {
                // The command that asked for write access goes out now (unless a newer
                // one already waits).
                if let Some(c) = remote.held.remove(&local) {
                    self.shared.with(|o| {
                        o.commands.entry(local).or_insert(c);
                    });
                    self.shared.wake.notify_one();
                }
            }
            if was_down {
                self.shared.with(|o| o.down.remove(&local));
                self.status.report(
                    &[local],
                    DeviceState::Up,
                    &format!("the remote server {} serves it again", self.cfg.address()),
                );
            }
            if !was_open {
                self.granted.do_send(Granted {
                    device: local,
                    result: Ok(()),
                });
            }
        }
    }

    fn on_data(
        &mut self,
        rcode: u8,
        timestamp: Option<(u32, u32)>,
        payload: Vec<u8>,
        remote: &mut Remote,
    ) {
        let Some(m) = self.cfg.by_remote(rcode).copied() else {
            return;
        };
        if !remote.open.contains_key(&m.local) {
            return;
        }
        if payload.len() > m.data_size {
            if self.oversized.hit() {
                warn!(self.log, "reading larger than data_size dropped"; "device" => code(m.local),
                    "size" => payload.len(), "data_size" => m.data_size, "dropped" => self.oversized.count());
            }
            return;
        }
        if remote.seen.insert(m.local) {
            debug!(self.log, "first reading"; "device" => code(m.local), "size" => payload.len());
        }
        let at = match timestamp {
            Some((sec, usec)) => Timestamp { sec, usec },
            None => Timestamp::now(),
        };
        self.readings.do_send(Reading {
            device: m.local,
            data: Bytes::from(payload),
            at,
        });
    }

    fn on_notice(&mut self, n: player_proto::ext::Notice, remote: &mut Remote) {
        let local = self.cfg.by_remote(n.device).map(|m| m.local);
        match (n.kind, local) {
            (kind::FAILED, Some(local)) if remote.open.contains_key(&local) => {
                self.shared.with(|o| o.down.insert(local));
                let why = format!("remote: {}", n.text);
                self.status.report(&[local], DeviceState::Failed, &why);
            }
            (kind::UP, Some(local)) if remote.open.contains_key(&local) => {
                self.shared.with(|o| o.down.remove(&local));
                let why = format!("remote: {}", n.text);
                self.status.report(&[local], DeviceState::Up, &why);
            }
            (kind::WATCHDOG, _) => {
                debug!(self.log, "the remote's watchdog stopped a device"; "device" => code(n.device), "text" => escape(n.text.as_bytes(), 200));
            }
            _ => {
                if self.notices.hit() {
                    info!(self.log, "notice from the remote server"; "notice" => n.to_string(), "count" => self.notices.count());
                }
            }
        }
    }
}

impl Link for LinkTask {
    type Conn = TcpStream;
    type Close = CloseReceiver;
    const NAME: &'static str = "passthrough";

    fn log(&self) -> &Logger {
        &self.log
    }

    async fn connect(&self, ever_up: bool) -> Result<TcpStream, LinkError> {
        let patience = if ever_up {
            RECONNECT_PATIENCE
        } else {
            self.cfg.connect_timeout
        };
        connect(&self.cfg.address(), patience).await
    }

    async fn serve(
        &mut self,
        conn: TcpStream,
        close: &mut CloseReceiver,
        mut up: LinkUp<'_>,
    ) -> Ended {
        self.serve_conn(conn, close, &mut up).await
    }
}

/// Registers the `passthrough` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("passthrough", |ctx: DriverContext| {
        let driver = PassthroughDriver::new(&ctx)?;
        let devices = driver.cfg.devices.iter().map(Mapped::spec).collect();
        let addr = driver.start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices,
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_kit::driver::DriverErrorKind;

    fn params(toml: &str) -> PassthroughParams {
        config::Config::builder()
            .add_source(config::File::from_str(toml, config::FileFormat::Toml))
            .build()
            .unwrap()
            .try_deserialize()
            .unwrap()
    }

    #[test]
    fn devices_take_the_remote_codes_defaults() {
        let c = LinkConfig::from_params(params("remote = [\"p\", \"l\"]"), b"Pq").unwrap();
        assert_eq!(c.devices[0].spec(), DeviceSpec::moving(b'P', 4));
        assert_eq!(c.devices[1].spec(), DeviceSpec::read_only(b'q'));
        assert_eq!(c.devices[1].data_size, 722);
        let c = LinkConfig::from_params(params("device = \"g\""), b"G").unwrap();
        assert_eq!(c.devices[0].spec(), DeviceSpec::read_write(b'G', 2));
        let c = LinkConfig::from_params(params(""), b"s").unwrap();
        assert_eq!((c.devices[0].remote, c.devices[0].data_size), (b's', 32));
        let c = LinkConfig::from_params(
            params("device = \"k\"\ncommand_size = 8\nmoving = true\ndata_size = 100"),
            b"k",
        )
        .unwrap();
        assert_eq!(c.devices[0].spec(), DeviceSpec::moving(b'k', 8));
        assert_eq!(c.devices[0].data_size, 100);
        let c = LinkConfig::from_params(params("command_size = 0"), b"p").unwrap();
        assert_eq!(c.devices[0].spec(), DeviceSpec::read_only(b'p'));
    }

    #[test]
    fn bad_parameters_are_refused_with_their_name() {
        for (toml, locals, says) in [
            ("device = \"p\"\nremote = [\"p\"]", &b"p"[..], "not both"),
            ("device = \"p\"", b"ps", "remote = [...]"),
            ("remote = [\"p\"]", b"ps", "1 codes for 2"),
            ("remote = [\"p\", \"p\"]", b"ps", "twice"),
            ("device = \"pp\"", b"p", "one-character"),
            ("device = \"y\"", b"p", "one-character"),
            ("frequency = 0", b"p", "frequency"),
            ("silence = 0", b"p", "silence"),
            ("data_size = 70000", b"p", "data_size"),
            ("command_size = 5000", b"p", "command_size"),
        ] {
            let e = LinkConfig::from_params(params(toml), locals).unwrap_err();
            assert_eq!(e.kind, DriverErrorKind::Params, "{toml}: {e}");
            assert!(e.text.contains(says), "{toml}: {e}");
        }
    }
}
