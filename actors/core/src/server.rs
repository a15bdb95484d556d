//! Starting and stopping a server: drivers, registries, listeners and worker arbiters.
//!
//! [`Server::start`] reads the [`Settings`], starts every robot's drivers through the
//! [`Catalog`], builds one [`Registry`] per robot and one [`Listener`] per robot port, and
//! spreads client sessions over one worker arbiter per core. [`Server::shutdown`] closes
//! the listeners and sessions, then has the registries shut every device down and
//! terminate every driver (the robot stops, ports close).

use crate::access::Policy;
use crate::logging::Throttle;
use crate::notice::{kind, Notice};
use crate::placement::Workers;
use crate::record::{RecordSource, RecorderHandle};
use crate::registry::{EStop, Registry, SessionId, ShutdownAll, Tap};
use crate::session::{Close, Session, SessionClosed, SessionOptions};
use crate::settings::Settings;
use crate::web::{WebEndpoint, WebOptions};
use crate::zenoh_bridge::{BridgedRobot, ZenohBridge};
use actix::prelude::*;
use futures::channel::oneshot;
use futures::FutureExt;
use player_kit::catalog::{Catalog, DriverContext};
use player_kit::driver::{DeviceSource, StatusSink};
use slog::{info, o, warn, Logger};
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Why the server could not start.
#[derive(Debug)]
pub struct StartError(pub String);

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

/// Server → listener: stop accepting, close every session, and reply when all have ended.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopListening;

/// Worker → listener: a session has been started for an accepted connection.
#[derive(Message)]
#[rtype(result = "()")]
struct Registered {
    id: SessionId,
    addr: Addr<Session>,
}

/// TCP options every client socket gets: keepalive, so a peer that vanished (link down,
/// no FIN) is noticed within seconds, and `TCP_USER_TIMEOUT`, so data it never
/// acknowledges (or a window it never opens) does not hold the connection for minutes.
#[derive(Debug, Clone)]
pub struct SocketOptions {
    /// Keepalive probing, if on.
    pub keepalive: Option<socket2::TcpKeepalive>,
    /// `TCP_USER_TIMEOUT`, if set.
    pub user_timeout: Option<Duration>,
}

impl SocketOptions {
    /// The options the settings ask for.
    pub fn from_settings(settings: &Settings) -> Self {
        let s = &settings.server;
        let keepalive = (s.keepalive_idle > 0.0).then(|| {
            socket2::TcpKeepalive::new()
                .with_time(Duration::from_secs_f64(s.keepalive_idle))
                .with_interval(Duration::from_secs_f64(s.keepalive_interval.max(0.001)))
                .with_retries(s.keepalive_count.max(1))
        });
        let user_timeout = (s.user_timeout > 0.0).then(|| Duration::from_secs_f64(s.user_timeout));
        SocketOptions {
            keepalive,
            user_timeout,
        }
    }

    /// Applies them to an accepted socket.
    pub fn apply(&self, stream: &TcpStream) -> std::io::Result<()> {
        let sock = socket2::SockRef::from(stream);
        if let Some(k) = &self.keepalive {
            sock.set_tcp_keepalive(k)?;
        }
        if self.user_timeout.is_some() {
            sock.set_tcp_user_timeout(self.user_timeout)?;
        }
        stream.set_nodelay(true)
    }
}

/// The most refused connections told why at once; past this they are just closed.
const MAX_REFUSALS_IN_FLIGHT: usize = 16;

/// The listener actor of one robot port: accepts connections, admits them by the access
/// policy and the connection limits, and starts their sessions on the worker arbiters
/// ([`crate::placement`]: the first until it is busy, then the least loaded). At the descriptor limit it keeps one descriptor in reserve, so it can
/// still take a waiting connection and close it instead of leaving it queued unserved.
pub struct Listener {
    robot: String,
    listener: Option<TcpListener>,
    accepting: Option<SpawnHandle>,
    registry: Addr<Registry>,
    workers: Workers,
    sessions: HashMap<SessionId, (Option<Addr<Session>>, IpAddr)>,
    per_address: HashMap<IpAddr, usize>,
    ids: Arc<AtomicU64>,
    max_clients: usize,
    opts: SessionOptions,
    policy: Arc<Policy>,
    sockets: SocketOptions,
    refusals_in_flight: Rc<Cell<usize>>,
    /// The listener's own log lines ("refused", "accept failed"): once a second each, with
    /// a count of the rest.
    throttle: Throttle,
    stopping: Option<oneshot::Sender<()>>,
    log: Logger,
}

/// Accepts connections one after another. When the process is out of descriptors, the
/// reserve descriptor is given up to take the waiting connection and close it (the
/// client sees the connection closed instead of waiting unserved), then taken back.
fn accept_stream(
    listener: TcpListener,
) -> impl futures::Stream<Item = std::io::Result<(TcpStream, SocketAddr)>> {
    let spare = std::fs::File::open("/dev/null").ok();
    futures::stream::unfold((listener, spare), |(l, mut spare)| async move {
        let r = l.accept().await;
        if let Err(e) = &r {
            if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) {
                drop(spare.take());
                if let Some(Ok((s, _))) = l.accept().now_or_never() {
                    drop(s);
                }
                spare = std::fs::File::open("/dev/null").ok();
                if spare.is_none() {
                    // No reserve to be had: do not spin on the full queue.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        Some((r, (l, spare)))
    })
}

/// Tells a refused client why, if its first message (within half a second) asks for
/// notices (`x y e 1`), then closes the connection.
async fn tell_refused(mut stream: TcpStream, reason: String) {
    let mut first = [0u8; 6];
    let asked = matches!(
        tokio::time::timeout(Duration::from_millis(500), stream.read_exact(&mut first)).await,
        Ok(Ok(_))
    ) && first[..5] == [b'x', b'y', 0, 2, player_proto::config::ERRORS]
        && first[5] != 0;
    if asked {
        let n = Notice::new(kind::ACCESS, 0, format!("connection refused: {reason}"));
        let _ =
            tokio::time::timeout(Duration::from_millis(500), stream.write_all(&n.encode())).await;
    }
}

impl Listener {
    /// Closes a connection that may not be served, logging it (once a second at most) and
    /// telling the client why if it asks.
    fn refuse(&mut self, stream: TcpStream, peer: SocketAddr, reason: &str) {
        if let Some(unlogged) = self.throttle.allow("refused") {
            warn!(self.log, "connection refused"; "client" => %peer, "reason" => reason, "refused_unlogged" => unlogged);
        }
        if self.refusals_in_flight.get() >= MAX_REFUSALS_IN_FLIGHT {
            return;
        }
        self.refusals_in_flight
            .set(self.refusals_in_flight.get() + 1);
        let in_flight = self.refusals_in_flight.clone();
        let reason = reason.to_string();
        actix::spawn(async move {
            tell_refused(stream, reason).await;
            in_flight.set(in_flight.get() - 1);
        });
    }
}

impl Actor for Listener {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(listener) = self.listener.take() {
            self.accepting = Some(ctx.add_stream(accept_stream(listener)));
        }
    }
}

impl StreamHandler<std::io::Result<(TcpStream, SocketAddr)>> for Listener {
    fn handle(&mut self, item: std::io::Result<(TcpStream, SocketAddr)>, ctx: &mut Self::Context) {
        let (stream, peer) = match item {
            Ok(x) => x,
            Err(e) => {
                if let Some(unlogged) = self.throttle.allow("accept failed") {
                    warn!(self.log, "accept failed; newcomers are closed, existing clients served"; "error" => %e, "failures_unlogged" => unlogged);
                }
                return;
            }
        };
        if self.stopping.is_some() {
            return;
        }
        let ip = peer.ip();
        if self.sessions.len() >= self.max_clients {
            let why = format!("too many clients (max_clients = {})", self.max_clients);
            return self.refuse(stream, peer, &why);
        }
        if let Err(why) = self.policy.admit(ip) {
            return self.refuse(stream, peer, why);
        }
        let limit = self.policy.max_per_address();
        if limit > 0 && self.per_address.get(&ip).copied().unwrap_or(0) >= limit {
            let why = format!("too many connections from this address (max_per_address = {limit})");
            return self.refuse(stream, peer, &why);
        }
        if let Err(e) = self.sockets.apply(&stream) {
            warn!(self.log, "cannot set socket options"; "client" => %peer, "error" => %e);
        }
        let std_stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                warn!(self.log, "connection dropped"; "client" => %peer, "error" => %e);
                return;
            }
        };
        let id = SessionId::next(&self.ids);
        self.sessions.insert(id, (None, ip));
        *self.per_address.entry(ip).or_default() += 1;
        let registry = self.registry.clone();
        let me = ctx.address();
        let closed = me.clone().recipient::<SessionClosed>();
        let opts = self.opts.clone();
        let log = self.log.clone();
        let (worker, load) = self.workers.pick();
        worker.spawn(async move {
            match tokio::net::TcpStream::from_std(std_stream) {
                Ok(stream) => {
                    let addr = Session::new(id, stream, peer, registry, Some(closed), opts, &log)
                        .with_load(load)
                        .start();
                    me.do_send(Registered { id, addr });
                }
                Err(e) => {
                    warn!(log, "connection dropped"; "client" => %peer, "error" => %e);
                    me.do_send(SessionClosed { id });
                }
            }
        });
    }

    fn finished(&mut self, _ctx: &mut Self::Context) {}
}

impl Handler<Registered> for Listener {
    type Result = ();

    fn handle(&mut self, msg: Registered, _ctx: &mut Self::Context) {
        if let Some(slot) = self.sessions.get_mut(&msg.id) {
            if self.stopping.is_some() {
                msg.addr.do_send(Close);
            }
            slot.0 = Some(msg.addr);
        }
    }
}

impl Handler<SessionClosed> for Listener {
    type Result = ();

    fn handle(&mut self, msg: SessionClosed, _ctx: &mut Self::Context) {
        if let Some((_, ip)) = self.sessions.remove(&msg.id) {
            if let Some(n) = self.per_address.get_mut(&ip) {
                *n -= 1;
                if *n == 0 {
                    self.per_address.remove(&ip);
                }
            }
        }
        if self.sessions.is_empty() {
            if let Some(tx) = self.stopping.take() {
                let _ = tx.send(());
            }
        }
    }
}

impl Handler<StopListening> for Listener {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: StopListening, ctx: &mut Self::Context) -> Self::Result {
        info!(self.log, "closing client connections"; "listener" => &self.robot, "clients" => self.sessions.len());
        // Stop accepting: dropping the accept stream closes the listening socket.
        if let Some(h) = self.accepting.take() {
            ctx.cancel_future(h);
        }
        let (tx, rx) = oneshot::channel();
        if self.sessions.is_empty() {
            let _ = tx.send(());
        } else {
            self.stopping = Some(tx);
            for addr in self.sessions.values().filter_map(|(a, _)| a.as_ref()) {
                addr.do_send(Close);
            }
        }
        Box::pin(async move {
            let _ = tokio::time::timeout(Duration::from_secs(3), rx).await;
        })
    }
}

/// Binds a listening socket with address reuse (a restarted server can take its port back
/// at once) and a backlog deep enough for many clients connecting together.
fn listen(addr: &str, backlog: u32) -> std::io::Result<std::net::TcpListener> {
    use std::net::ToSocketAddrs;
    let sa = addr.to_socket_addrs()?.next().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address to bind")
    })?;
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(sa),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&sa.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    Ok(socket.into())
}

/// A running server.
pub struct Server {
    listeners: Vec<(Addr<Listener>, SocketAddr)>,
    /// Each robot's web endpoint, when it has one.
    webs: Vec<Option<WebEndpoint>>,
    registries: Vec<Addr<Registry>>,
    workers: Vec<Arbiter>,
    recorder: Option<RecorderHandle>,
    /// The Zenoh bridge, when `[zenoh]` is enabled.
    zenoh: Option<ZenohBridge>,
    log: Logger,
}

impl Server {
    /// Starts every robot of `settings` with drivers from `catalog`. Must run inside an
    /// actix system; drivers and registries live on the current arbiter, sessions on
    /// worker arbiters. `base_dir` resolves relative paths in driver parameters.
    pub async fn start(
        settings: &Settings,
        catalog: &Catalog,
        base_dir: PathBuf,
        log: Logger,
    ) -> Result<Server, StartError> {
        let started = Instant::now();
        let workers_n = if settings.server.workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            settings.server.workers
        };
        let opts = settings.session_options();
        let mut listeners = Vec::new();
        let mut registries = Vec::new();
        let mut bound = Vec::new();
        for (i, robot) in settings.robot.iter().enumerate() {
            let rlog = log.new(o!("robot" => robot.name.clone()));
            let addr = format!("{}:{}", robot.bind, robot.port);
            let std_listener = listen(&addr, settings.server.listen_backlog).map_err(|e| {
                StartError(format!(
                    "robot '{}': cannot listen on {addr}: {e}",
                    robot.name
                ))
            })?;
            let local = std_listener
                .local_addr()
                .map_err(|e| StartError(e.to_string()))?;
            let web = match settings.web_port_of(i) {
                None => None,
                Some((port, explicit)) => {
                    let addr = format!("{}:{port}", robot.bind);
                    match listen(&addr, settings.server.listen_backlog) {
                        Ok(l) => Some(l),
                        Err(e) if explicit => {
                            return Err(StartError(format!(
                                "robot '{}': web viewer cannot listen on {addr}: {e}",
                                robot.name
                            )))
                        }
                        Err(e) => {
                            warn!(rlog, "web viewer not started (set web_port or -web to choose a port)"; "address" => addr, "error" => %e);
                            None
                        }
                    }
                }
            };
            bound.push((robot, std_listener, local, rlog, web));
        }
        // One session thread per core: this (the drivers') arbiter takes sessions too, so
        // a core is not left to a thread that only publishes, and data for the sessions
        // here needs no cross-thread wake.
        let workers: Vec<Arbiter> = (1..workers_n).map(|_| Arbiter::new()).collect();
        let handles: Vec<ArbiterHandle> = std::iter::once(Arbiter::current())
            .chain(workers.iter().map(Arbiter::handle))
            .collect();
        // The robots' listeners share the threads and what each is loaded with.
        let placement = Workers::new(handles.clone());
        // Each session thread's timer descriptor is opened now, not by its first client
        // (which may come when the process is at its descriptor limit).
        for h in &handles {
            h.spawn_fn(|| {
                crate::timer::init_thread();
            });
        }
        let ids = Arc::new(AtomicU64::new(1));
        let policy = Arc::new(
            Policy::new(&settings.access).map_err(|e| StartError(format!("configuration: {e}")))?,
        );
        let sockets = SocketOptions::from_settings(settings);
        let mut sources = Vec::new();
        let mut webs = Vec::new();
        let mut bridged = Vec::new();
        for (robot, std_listener, local, rlog, web) in bound {
            let mut recorded = Vec::new();
            let mut registry = Registry::new(
                &robot.name,
                Duration::from_secs_f64(settings.server.setup_timeout),
                rlog.clone(),
            )
            .with_quiet_after(Duration::from_secs_f64(settings.server.quiet_after));
            // The registry's address exists before the drivers, which report to it.
            let registry_ctx = Context::<Registry>::new();
            let status = StatusSink::new(registry_ctx.address().recipient());
            for d in &robot.driver {
                let factory = catalog.get(&d.driver).ok_or_else(|| {
                    StartError(format!(
                        "robot '{}': no driver named '{}' (available: {})",
                        robot.name,
                        d.driver,
                        catalog.names().join(", ")
                    ))
                })?;
                let devices = d.device_codes().map_err(StartError)?;
                let ctx = DriverContext {
                    driver: d.driver.clone(),
                    robot: robot.name.clone(),
                    devices,
                    params: d.params.clone(),
                    base_dir: base_dir.clone(),
                    logger: rlog.new(o!("driver" => d.driver.clone())),
                    started,
                    status: status.clone(),
                    source: DeviceSource::new(
                        SessionId::next(&ids),
                        registry_ctx.address().recipient(),
                    ),
                };
                let sd = factory(ctx).map_err(|e| {
                    StartError(format!(
                        "robot '{}': driver '{}': {e}",
                        robot.name, d.driver
                    ))
                })?;
                let specs: Vec<_> = sd
                    .devices
                    .iter()
                    .map(|spec| player_kit::driver::DeviceSpec {
                        command_timeout: Settings::command_timeout(robot, d, spec.command_timeout),
                        ..*spec
                    })
                    .collect();
                registry
                    .add_driver(&d.driver, sd.handle, &specs)
                    .map_err(|e| StartError(e.to_string()))?;
                recorded.extend(specs.iter().map(|s| (*s, d.driver.clone())));
            }
            let mut devices = [false; 256];
            for c in registry.device_codes() {
                devices[usize::from(c)] = true;
            }
            let mut robot_opts = opts.clone();
            robot_opts.devices = Arc::new(devices);
            robot_opts.policy = policy.clone();
            let registry = registry_ctx.run(registry);
            sources.push(RecordSource {
                robot: robot.name.clone(),
                registry: registry.clone(),
                devices: recorded,
                session: SessionId::next(&ids),
            });
            let web = match web {
                None => None,
                Some(l) => {
                    let mut devices = Vec::new();
                    for d in &robot.driver {
                        devices.extend(d.device_codes().map_err(StartError)?);
                    }
                    let opts = WebOptions {
                        robot: robot.name.clone(),
                        registry: registry.clone(),
                        devices,
                        workers: handles.clone(),
                        ids: ids.clone(),
                        stall_timeout: Duration::from_secs_f64(settings.server.stall_timeout),
                        max_clients: settings.server.max_clients,
                        policy: policy.clone(),
                        log: rlog.clone(),
                    };
                    Some(WebEndpoint::start(l, opts).await.map_err(|e| {
                        StartError(format!("robot '{}': web viewer: {e}", robot.name))
                    })?)
                }
            };
            webs.push(web);
            let listener = TcpListener::from_std(std_listener)
                .map_err(|e| StartError(format!("cannot listen on {local}: {e}")))?;
            info!(rlog, "listening"; "address" => %local);
            let l = Listener {
                robot: robot.name.clone(),
                listener: Some(listener),
                accepting: None,
                registry: registry.clone(),
                workers: placement.clone(),
                sessions: HashMap::new(),
                per_address: HashMap::new(),
                ids: ids.clone(),
                max_clients: settings.server.max_clients,
                opts: robot_opts,
                policy: policy.clone(),
                sockets: sockets.clone(),
                refusals_in_flight: Rc::new(Cell::new(0)),
                throttle: Throttle::new(Duration::from_secs(1), 1),
                stopping: None,
                log: rlog,
            }
            .start();
            listeners.push((l, local));
            if settings.zenoh.enabled && settings.zenoh.serves(&robot.name) {
                let mut devices = Vec::new();
                for d in &robot.driver {
                    devices.extend(d.device_codes().map_err(StartError)?);
                }
                bridged.push(BridgedRobot {
                    name: robot.name.clone(),
                    registry: registry.clone(),
                    devices,
                });
            }
            registries.push(registry);
        }
        // The recorder subscribes like a client, on a thread of its own.
        let recorder = if settings.record.enabled() {
            let r = RecorderHandle::start(&settings.record, &base_dir, sources, log.clone())
                .map_err(StartError)?;
            for (i, registry) in registries.iter().enumerate() {
                if let Some(recipient) = r.tap(i) {
                    registry.do_send(Tap { recipient });
                }
            }
            Some(r)
        } else {
            None
        };
        // The Zenoh bridge: one session for the process, a registry session per robot.
        let zenoh = if settings.zenoh.enabled {
            let b = ZenohBridge::start(
                &settings.zenoh,
                &settings.access,
                bridged,
                ids.clone(),
                log.clone(),
            )
            .await
            .map_err(StartError)?;
            Some(b)
        } else {
            None
        };
        Ok(Server {
            listeners,
            webs,
            registries,
            workers,
            recorder,
            zenoh,
            log,
        })
    }

    /// The robots' registries, in configuration order (for front ends and tests).
    pub fn registries(&self) -> &[Addr<Registry>] {
        &self.registries
    }

    /// The Zenoh id of the bridge's session, when the bridge runs.
    pub fn zenoh_zid(&self) -> Option<String> {
        self.zenoh.as_ref().map(ZenohBridge::zid)
    }

    /// Latches the emergency stop of every robot (SIGUSR1).
    pub fn emergency_stop(&self, by: &str) {
        for r in &self.registries {
            r.do_send(EStop {
                latch: true,
                client: by.to_string(),
            });
        }
    }

    /// The address each robot listens on, in configuration order.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listeners.iter().map(|(_, a)| *a).collect()
    }

    /// Each robot's web viewer address (`None` where it is off or its default port was
    /// busy), in configuration order.
    pub fn web_addrs(&self) -> Vec<Option<SocketAddr>> {
        self.webs
            .iter()
            .map(|w| w.as_ref().map(WebEndpoint::local_addr))
            .collect()
    }

    /// Shuts down in order: sessions close (their devices are released, a writer leaving
    /// stops its device), then every device is shut down and every driver terminated
    /// (stopping the robot and closing its ports), then the worker arbiters stop.
    pub async fn shutdown(self) {
        info!(self.log, "shutting down");
        for (l, _) in &self.listeners {
            let _ = l.send(StopListening).await;
        }
        if let Some(z) = self.zenoh {
            z.stop().await;
        }
        if let Some(r) = self.recorder {
            r.finish().await;
        }
        for w in self.webs.into_iter().flatten() {
            w.stop().await;
        }
        for r in &self.registries {
            let _ = r.send(ShutdownAll).await;
        }
        for w in &self.workers {
            w.stop();
        }
        for w in self.workers {
            let _ = w.join();
        }
        info!(self.log, "shutdown complete");
    }
}
