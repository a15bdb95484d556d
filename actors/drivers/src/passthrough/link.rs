//! The passthrough driver's link: the connection to the remote server as a [`Link`] of the
//! kit's reconnect loop. It says hello, asks the remote for the devices the actor wants
//! (read-only, or `a` while a local writer commands), relays the readings and the remote's
//! answers to the actor, and writes what the actor hands over ([`Handoff`]: commands,
//! configs, the e-stop) until the connection is lost or closed.

use super::codec::{self, Inbound};
use super::mapping::LinkConfig;
use actix::prelude::*;
use bytes::{Bytes, BytesMut};
use player_kit::driver::{DeviceState, StatusSink, Timestamp};
use player_kit::link::{CloseReceiver, Ended, Link, LinkError, LinkUp, LogThrottle};
use player_kit::log::{code, escape};
use player_proto::access;
use player_proto::ext::{kind, Extension};
use player_proto::message::{self, ServerMessage};
use slog::{debug, info, warn, Logger};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// How long a write to the remote may take before the link is taken for lost.
const WRITE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a reconnect attempt may take.
const RECONNECT_PATIENCE: Duration = Duration::from_secs(2);
/// How long after a refusal a device wanted again is asked for again.
const RETRY_REFUSED: Duration = Duration::from_secs(2);

/// Whether an access code includes writing.
fn writes(a: u8) -> bool {
    a == access::ALL || a == access::WRITE
}

/// What the actor hands the link task: bounded by construction (a set of devices, one
/// command per device, at most [`MAX_QUEUED_CONFIGS`](super::MAX_QUEUED_CONFIGS) configs).
#[derive(Default)]
pub(super) struct Handoff {
    /// The local devices set up here (each must be open on the remote).
    pub wanted: BTreeSet<u8>,
    /// The newest command of each local device, not yet sent.
    pub commands: BTreeMap<u8, Bytes>,
    /// The local devices a local writer commands: opened `a` on the remote, the others
    /// `r` (so a local reader leaving never looks like a writer leaving to the remote).
    pub write: BTreeSet<u8>,
    /// Configs not yet sent: local device, payload, client.
    pub configs: VecDeque<(u8, Bytes, String)>,
    /// Local devices reported failed or reconnecting and not yet reported up again.
    pub down: BTreeSet<u8>,
    /// The local emergency stop was latched: latch the remote's at the next write (kept
    /// across a reconnect, so it reaches the remote once the link is back).
    pub estop: bool,
}

/// The handoff and the bell that says it changed, shared by the actor and its link task.
#[derive(Default)]
pub(super) struct Shared {
    handoff: Mutex<Handoff>,
    /// Rung when the handoff changed.
    pub wake: Notify,
}

impl Shared {
    /// Runs `f` on the handoff.
    pub fn with<T>(&self, f: impl FnOnce(&mut Handoff) -> T) -> T {
        let mut o = self.handoff.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut o)
    }
}

/// Link task → actor: a reading of a local device.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Reading {
    pub device: u8,
    pub data: Bytes,
    pub at: Timestamp,
}

/// Link task → actor: the remote answered the request for a local device.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Granted {
    pub device: u8,
    pub result: Result<(), String>,
}

/// The connection to the remote server, as a [`Link`] of the kit's reconnect loop: connects,
/// asks for the wanted devices, relays, until the connection is lost or closed.
pub(super) struct LinkTask {
    cfg: Arc<LinkConfig>,
    shared: Arc<Shared>,
    readings: Recipient<Reading>,
    granted: Recipient<Granted>,
    status: StatusSink,
    log: Logger,
    notices: LogThrottle,
    oversized: LogThrottle,
}

impl LinkTask {
    /// The link to the remote of `cfg`, taking what the actor hands over in `shared`,
    /// sending readings and answers to the actor, reporting state changes to `status`.
    pub fn new(
        cfg: Arc<LinkConfig>,
        shared: Arc<Shared>,
        to: (Recipient<Reading>, Recipient<Granted>),
        status: StatusSink,
        log: Logger,
    ) -> Self {
        LinkTask {
            cfg,
            shared,
            readings: to.0,
            granted: to.1,
            status,
            log,
            notices: LogThrottle::default(),
            oversized: LogThrottle::default(),
        }
    }
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
        if let Err(e) = self.greet(&mut wr, &addr).await {
            return Ended::Lost(e);
        }
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
                    if let Err(e) = self.on_tick(&mut wr, &mut remote, last_rx, &addr).await {
                        ended = Some(Ended::Lost(e));
                    }
                }
            }
        }
        self.lost(&mut remote, up);
        ended.unwrap_or(Ended::Lost(LinkError::protocol(addr, String::new())))
    }

    /// Says hello on a new connection (the key, extensions, frequency); what waited for the
    /// previous connection is dropped.
    async fn greet(&mut self, wr: &mut OwnedWriteHalf, addr: &str) -> Result<(), LinkError> {
        let hello = codec::Hello {
            key: self.cfg.key.as_deref(),
            extensions: self.cfg.extensions,
            frequency: self.cfg.frequency,
        };
        let hello = hello.encode().map_err(|e| {
            let why = format!("cannot present the key: {e}");
            LinkError::protocol(addr, why)
        })?;
        send(wr, &hello, addr).await?;
        // Whatever waited for the previous connection is stale now.
        self.shared.with(|o| {
            o.commands.clear();
            o.configs.clear();
        });
        Ok(())
    }

    /// A tick of the connection: lost if the remote has been silent too long (when it
    /// should speak), else the heartbeat (with extensions) and the refused devices asked
    /// for again when due.
    async fn on_tick(
        &mut self,
        wr: &mut OwnedWriteHalf,
        remote: &mut Remote,
        last_rx: Instant,
        addr: &str,
    ) -> Result<(), LinkError> {
        let live = self.cfg.extensions || !remote.open.is_empty() || !remote.requested.is_empty();
        if live && last_rx.elapsed() > self.cfg.silence {
            let why = format!(
                "no byte from the remote for {:.1} s",
                self.cfg.silence.as_secs_f64()
            );
            return Err(LinkError::timeout(addr, why));
        }
        let mut out = Vec::new();
        if self.cfg.extensions {
            out.extend(player_proto::ext::device_list_request());
        }
        send(wr, &out, addr).await?;
        if self.retry_due(remote) {
            self.flush(wr, remote).await?;
        }
        Ok(())
    }

    /// The connection is lost: every device that was open is down until the remote grants
    /// it again (reported reconnecting, if the link was ever up), and the setups still
    /// waiting learn that it ended.
    fn lost(&mut self, remote: &mut Remote, up: &LinkUp<'_>) {
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
        self.commands(commands, &write, remote, &mut out);
        self.configs(configs, remote, &mut out);
        let pairs = self.requests(&wanted, &write, remote);
        if !pairs.is_empty() {
            out.extend(message::request(&pairs));
        }
        if out.is_empty() {
            return Ok(());
        }
        send(wr, &out, &self.cfg.address()).await
    }

    /// The commands of devices open for writing, into `out`; the command of a device whose
    /// write access is being asked for (a local writer's first) is held until it is granted.
    fn commands(
        &self,
        commands: BTreeMap<u8, Bytes>,
        write: &BTreeSet<u8>,
        remote: &mut Remote,
        out: &mut Vec<u8>,
    ) {
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
    }

    /// The configs of open devices, into `out` (the others are dropped, logged).
    fn configs(&self, configs: VecDeque<(u8, Bytes, String)>, remote: &Remote, out: &mut Vec<u8>) {
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
    }

    /// The requests to make (remote code, access): the wanted devices not open (unless
    /// refused a moment ago) or open with the wrong access (a local writer came, or the
    /// last one left), and closes of the open devices no longer wanted.
    fn requests(
        &self,
        wanted: &BTreeSet<u8>,
        write: &BTreeSet<u8>,
        remote: &mut Remote,
    ) -> Vec<(u8, u8)> {
        let mut pairs = Vec::new();
        for &local in wanted {
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
        pairs
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
