//! Starting and stopping a server: drivers, registries, listeners and worker arbiters.
//!
//! [`Server::start`] reads the [`Settings`], starts every robot's drivers through the
//! [`Catalog`], builds one [`Registry`] per robot and one [`Listener`] per robot port, and
//! spreads client sessions over one worker arbiter per core. It names no front end: the
//! binary starts each on the server's [`FrontEndContext`] and [attaches](Server::attach)
//! it. [`Server::shutdown`] closes the listeners and sessions, stops the front ends, then
//! has the registries shut every device down and terminate every driver (the robot stops,
//! ports close).

use crate::access::Policy;
use crate::frontend::{FrontEnd, FrontEndContext, RobotHandle, SessionIds};
use crate::logging::Throttle;
use crate::notice::{kind, Notice};
use crate::placement::Workers;
use crate::registry::{EStop, Registry, SessionId, ShutdownAll};
use crate::session::{Close, Session, SessionClosed, SessionOptions};
use crate::settings::{RobotSettings, Settings, SettingsError};
use actix::prelude::*;
use actix::WeakAddr;
use futures::channel::oneshot;
use futures::FutureExt;
use player_kit::catalog::{Catalog, DriverContext};
use player_kit::driver::{DeviceSpec, DriverError, StatusSink};
use player_kit::source::DeviceSource;
use slog::{info, o, warn, Logger};
use std::cell::Cell;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod running;
pub use running::{Reloaded, RobotStatus, ServerStatus};

/// Why the server (or one of its front ends) could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A robot's port (or a front end's) cannot be listened on.
    #[error("robot '{robot}': cannot listen on {addr}: {source}")]
    Listen {
        /// The robot.
        robot: String,
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The configuration names a driver the catalog does not have.
    #[error("robot '{robot}': no driver named '{driver}' (available: {})", available.join(", "))]
    NoDriver {
        /// The robot.
        robot: String,
        /// The driver asked for.
        driver: String,
        /// The drivers the catalog has.
        available: Vec<String>,
    },
    /// A driver refused to start.
    #[error("robot '{robot}': driver '{driver}': {source}")]
    Driver {
        /// The robot.
        robot: String,
        /// The driver.
        driver: String,
        /// Why.
        source: DriverError,
    },
    /// Two drivers of a robot serve the same device.
    #[error("robot '{robot}': device '{}' is served by both driver '{first}' and driver '{second}'", char::from(*device))]
    ServedTwice {
        /// The robot.
        robot: String,
        /// The device code.
        device: u8,
        /// The driver that had it first.
        first: String,
        /// The driver that also wants it.
        second: String,
    },
    /// The settings are inconsistent (settings built in code, not checked by a parser).
    #[error("configuration: {0}")]
    Settings(#[from] SettingsError),
    /// A front end could not start.
    #[error("{source}")]
    FrontEnd {
        /// The front end (`"web"`, `"record"`, `"zenoh"`, `"ros2"`).
        name: String,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl StartError {
    /// A [`StartError::FrontEnd`] of front end `name`.
    pub fn front_end(
        name: &str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        StartError::FrontEnd {
            name: name.to_string(),
            source: source.into(),
        }
    }
}

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
    /// Each session's address once it has started (weak: the listener only tells it to
    /// close at shutdown, and a strong address costs two allocations a client) and its
    /// client's address.
    sessions: HashMap<SessionId, (Option<WeakAddr<Session>>, IpAddr)>,
    per_address: HashMap<IpAddr, usize>,
    ids: SessionIds,
    max_clients: usize,
    opts: Arc<SessionOptions>,
    policy: Arc<Policy>,
    sockets: SocketOptions,
    refusals_in_flight: Rc<Cell<usize>>,
    /// The listener's own log lines ("refused", "accept failed"): once a second each, with
    /// a count of the rest.
    throttle: Throttle,
    stopping: Option<oneshot::Sender<()>>,
    log: Logger,
}

/// The process's one reserve descriptor (a handle on `/dev/null`), given up by whichever
/// listener first finds the process out of descriptors. One for every listener, not one
/// each: a world of 10 000 robots has 10 000 listeners.
static SPARE: std::sync::Mutex<Option<std::fs::File>> = std::sync::Mutex::new(None);

/// Opens the reserve descriptor if it is not held.
fn hold_spare() {
    let mut spare = SPARE.lock().unwrap_or_else(|e| e.into_inner());
    if spare.is_none() {
        *spare = std::fs::File::open("/dev/null").ok();
    }
}

/// Accepts connections one after another. When the process is out of descriptors, the
/// reserve descriptor ([`SPARE`]) is given up to take the waiting connection and close it
/// (the client sees the connection closed instead of waiting unserved), then taken back.
fn accept_stream(
    listener: TcpListener,
) -> impl futures::Stream<Item = std::io::Result<(TcpStream, SocketAddr)>> {
    hold_spare();
    futures::stream::unfold(listener, |l| async move {
        let r = l.accept().await;
        if let Err(e) = &r {
            if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) {
                let had = SPARE.lock().unwrap_or_else(|e| e.into_inner()).take();
                drop(had);
                if let Some(Ok((s, _))) = l.accept().now_or_never() {
                    drop(s);
                }
                hold_spare();
                if SPARE.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
                    // No reserve to be had: do not spin on the full queue.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
        Some((r, l))
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
        let id = self.ids.next();
        self.sessions.insert(id, (None, ip));
        *self.per_address.entry(ip).or_default() += 1;
        let registry = self.registry.clone();
        let me = ctx.address();
        let closed = me.clone().recipient::<SessionClosed>().downgrade();
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
            slot.0 = Some(msg.addr.downgrade());
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
            for addr in self
                .sessions
                .values()
                .filter_map(|(a, _)| a.as_ref()?.upgrade())
            {
                addr.do_send(Close);
            }
        }
        Box::pin(async move {
            let _ = tokio::time::timeout(Duration::from_secs(3), rx).await;
        })
    }
}

/// Binds a listening socket with address reuse (a restarted server can take its port back
/// at once) and a backlog deep enough for many clients connecting together (the robots'
/// ports, and front ends' such as the web viewer's).
pub fn listen(addr: &str, backlog: u32) -> std::io::Result<std::net::TcpListener> {
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

/// Binds each robot's port: (robot, listener, its address, the robot's logger) each.
fn bind_robots<'a>(
    settings: &'a Settings,
    log: &Logger,
) -> Result<Vec<(&'a RobotSettings, std::net::TcpListener, SocketAddr, Logger)>, StartError> {
    let mut bound = Vec::new();
    for robot in &settings.robot {
        let rlog = log.new(o!("robot" => robot.name.clone()));
        let addr = format!("{}:{}", robot.bind, robot.port);
        let listen_error = |source| StartError::Listen {
            robot: robot.name.clone(),
            addr: addr.clone(),
            source,
        };
        let std_listener = listen(&addr, settings.server.listen_backlog).map_err(listen_error)?;
        let local = std_listener.local_addr().map_err(listen_error)?;
        bound.push((robot, std_listener, local, rlog));
    }
    Ok(bound)
}

/// What each robot's drivers are started with, besides their own settings.
struct DriverSite<'a> {
    settings: &'a Settings,
    catalog: &'a Catalog,
    /// Relative paths in driver parameters resolve from here.
    base_dir: &'a PathBuf,
    /// When the server started.
    started: Instant,
    /// The ids of the drivers' device sources (shared with the sessions').
    ids: &'a SessionIds,
}

impl DriverSite<'_> {
    /// Starts `robot`'s drivers and adds them to `registry`, whose context is
    /// `registry_ctx` (the drivers report to its address); returns the devices served, each
    /// with its driver's name.
    fn start_drivers(
        &self,
        robot: &RobotSettings,
        rlog: &Logger,
        registry: &mut Registry,
        registry_ctx: &Context<Registry>,
    ) -> Result<Vec<(DeviceSpec, String)>, StartError> {
        let mut served: Vec<(DeviceSpec, String)> = Vec::new();
        let status = StatusSink::new(registry_ctx.address().recipient());
        for d in &robot.driver {
            let factory = self
                .catalog
                .get(&d.driver)
                .ok_or_else(|| StartError::NoDriver {
                    robot: robot.name.clone(),
                    driver: d.driver.clone(),
                    available: self.catalog.names().iter().map(|n| n.to_string()).collect(),
                })?;
            let (devices, labels) = d
                .device_codes()
                .and_then(|codes| Ok((codes, d.labels()?)))
                .map_err(|e| {
                    let key = format!("robot '{}'", robot.name);
                    SettingsError::value(&self.settings.origin, &key, e.to_string())
                })?;
            let ctx = DriverContext {
                driver: d.driver.clone(),
                robot: robot.name.clone(),
                devices,
                labels: labels.clone(),
                params: d.params.clone(),
                base_dir: self.base_dir.clone(),
                logger: rlog.new(o!("driver" => d.driver.clone())),
                started: self.started,
                status: status.clone().labelled(labels.clone()),
                source: DeviceSource::of(
                    self.ids.next(),
                    &registry_ctx.address(),
                    &format!("driver {}", d.driver),
                ),
            };
            let sd = factory(ctx).map_err(|source| StartError::Driver {
                robot: robot.name.clone(),
                driver: d.driver.clone(),
                source,
            })?;
            let specs: Vec<_> = sd
                .devices
                .iter()
                .map(|spec| DeviceSpec {
                    command_timeout: Settings::command_timeout(robot, d, spec.command_timeout),
                    ..*spec
                })
                .collect();
            registry
                .add_driver_labelled(&d.driver, sd.handle, &specs, &labels)
                .map_err(|e| StartError::ServedTwice {
                    robot: e.robot,
                    device: e.device,
                    first: e.first,
                    second: e.second,
                })?;
            served.extend(specs.iter().map(|s| {
                let code = labels.served(s.code);
                (DeviceSpec { code, ..*s }, d.driver.clone())
            }));
        }
        Ok(served)
    }
}

/// A running server.
pub struct Server {
    listeners: Vec<(Addr<Listener>, SocketAddr)>,
    registries: Vec<Addr<Registry>>,
    workers: Vec<Arbiter>,
    /// What front ends are started with.
    context: FrontEndContext,
    /// The attached front ends, in the order they were attached.
    front_ends: Vec<Box<dyn FrontEnd>>,
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
        let bound = bind_robots(settings, &log)?;
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
        let ids = SessionIds::new();
        let policy = Arc::new(Policy::new(&settings.access).map_err(|e| {
            SettingsError::value(&settings.origin, &format!("access.{}", e.key), e.why)
        })?);
        let sockets = SocketOptions::from_settings(settings);
        let mut robots = Vec::new();
        for (index, (robot, std_listener, local, rlog)) in bound.into_iter().enumerate() {
            let mut registry = Registry::new(
                &robot.name,
                Duration::from_secs_f64(settings.server.setup_timeout),
                rlog.clone(),
            )
            .with_quiet_after(Duration::from_secs_f64(settings.server.quiet_after));
            // The registry's address exists before the drivers, which report to it.
            let registry_ctx = Context::<Registry>::new();
            let site = DriverSite {
                settings,
                catalog,
                base_dir: &base_dir,
                started,
                ids: &ids,
            };
            let served = site.start_drivers(robot, &rlog, &mut registry, &registry_ctx)?;
            let mut devices = [false; 256];
            for c in registry.device_codes() {
                devices[usize::from(c)] = true;
            }
            let mut robot_opts = opts.clone();
            robot_opts.devices = Arc::new(devices);
            robot_opts.policy = policy.clone();
            let registry = registry_ctx.run(registry);
            let listener =
                TcpListener::from_std(std_listener).map_err(|source| StartError::Listen {
                    robot: robot.name.clone(),
                    addr: local.to_string(),
                    source,
                })?;
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
                opts: Arc::new(robot_opts),
                policy: policy.clone(),
                sockets: sockets.clone(),
                refusals_in_flight: Rc::new(Cell::new(0)),
                throttle: Throttle::new(Duration::from_secs(1), 1),
                stopping: None,
                log: rlog,
            }
            .start();
            listeners.push((l, local));
            robots.push(RobotHandle {
                name: robot.name.clone(),
                index,
                bind: robot.bind.clone(),
                registry: registry.clone(),
                devices: served,
            });
            registries.push(registry);
        }
        let context = FrontEndContext {
            robots,
            workers: handles,
            ids,
            policy,
            access: settings.access.clone(),
            server: settings.server.clone(),
            base_dir,
            log: log.clone(),
        };
        Ok(Server {
            listeners,
            registries,
            workers,
            context,
            front_ends: Vec::new(),
            log,
        })
    }

    /// What front ends are started with: the robots, the session threads and ids, the
    /// access policy and the server settings.
    pub fn context(&self) -> &FrontEndContext {
        &self.context
    }

    /// Attaches a running front end: [`Server::shutdown`] stops it (after the listeners,
    /// before the devices shut down; front ends in the reverse order of attaching).
    pub fn attach(&mut self, front_end: Box<dyn FrontEnd>) {
        info!(self.log, "front end attached"; "front_end" => front_end.name());
        self.front_ends.push(front_end);
    }

    /// The attached front ends, in the order they were attached.
    pub fn front_ends(&self) -> impl Iterator<Item = &dyn FrontEnd> {
        self.front_ends.iter().map(|f| f.as_ref())
    }

    /// The first attached front end of type `T`.
    pub fn front_end<T: FrontEnd + 'static>(&self) -> Option<&T> {
        self.front_ends
            .iter()
            .find_map(|f| f.as_any().downcast_ref::<T>())
    }

    /// The robots' registries, in configuration order (for front ends and tests).
    pub fn registries(&self) -> &[Addr<Registry>] {
        &self.registries
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

    /// Shuts down in order: sessions close (their devices are released, a writer leaving
    /// stops its device), the front ends stop (last attached first), then every device is
    /// shut down and every driver terminated (stopping the robot and closing its ports),
    /// then the worker arbiters stop.
    pub async fn shutdown(mut self) {
        info!(self.log, "shutting down");
        for (l, _) in &self.listeners {
            let _ = l.send(StopListening).await;
        }
        while let Some(f) = self.front_ends.pop() {
            f.stop().await;
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
