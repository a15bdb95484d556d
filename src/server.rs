//! Starting and stopping a server: drivers, registries, listeners and worker arbiters.
//!
//! [`Server::start`] reads the [`Settings`], starts every robot's drivers through the
//! [`Catalog`], builds one [`Registry`] per robot and one [`Listener`] per robot port, and
//! spreads client sessions over one worker arbiter per core. [`Server::shutdown`] closes
//! the listeners and sessions, then has the registries shut every device down and
//! terminate every driver (the robot stops, ports close).

use crate::catalog::{Catalog, DriverContext};
use crate::registry::{Registry, SessionId, ShutdownAll};
use crate::session::{Close, Session, SessionClosed, SessionOptions};
use crate::settings::Settings;
use crate::web::{WebEndpoint, WebOptions};
use actix::prelude::*;
use futures::channel::oneshot;
use slog::{info, o, warn, Logger};
use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

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

/// The listener actor of one robot port: accepts connections and starts their sessions on
/// the worker arbiters, round robin.
pub struct Listener {
    robot: String,
    listener: Option<TcpListener>,
    accepting: Option<SpawnHandle>,
    registry: Addr<Registry>,
    workers: Vec<ArbiterHandle>,
    next_worker: usize,
    sessions: HashMap<SessionId, Option<Addr<Session>>>,
    ids: Arc<AtomicU64>,
    max_clients: usize,
    opts: SessionOptions,
    stopping: Option<oneshot::Sender<()>>,
    log: Logger,
}

impl Actor for Listener {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(listener) = self.listener.take() {
            let accepts = futures::stream::unfold(listener, |l| async move {
                let r = l.accept().await;
                Some((r, l))
            });
            self.accepting = Some(ctx.add_stream(accepts));
        }
    }
}

impl StreamHandler<std::io::Result<(tokio::net::TcpStream, SocketAddr)>> for Listener {
    fn handle(
        &mut self,
        item: std::io::Result<(tokio::net::TcpStream, SocketAddr)>,
        ctx: &mut Self::Context,
    ) {
        let (stream, peer) = match item {
            Ok(x) => x,
            Err(e) => {
                // Out of descriptors, say: back off a little rather than spin.
                warn!(self.log, "accept failed"; "error" => %e);
                ctx.wait(actix::clock::sleep(Duration::from_millis(50)).into_actor(self));
                return;
            }
        };
        if self.stopping.is_some() {
            return;
        }
        if self.sessions.len() >= self.max_clients {
            warn!(self.log, "connection refused: too many clients"; "client" => %peer, "max" => self.max_clients);
            return;
        }
        let _ = stream.set_nodelay(true);
        let std_stream = match stream.into_std() {
            Ok(s) => s,
            Err(e) => {
                warn!(self.log, "connection dropped"; "client" => %peer, "error" => %e);
                return;
            }
        };
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        self.sessions.insert(id, None);
        let registry = self.registry.clone();
        let me = ctx.address();
        let closed = me.clone().recipient::<SessionClosed>();
        let opts = self.opts.clone();
        let log = self.log.clone();
        let worker = &self.workers[self.next_worker % self.workers.len()];
        self.next_worker = self.next_worker.wrapping_add(1);
        worker.spawn(async move {
            match tokio::net::TcpStream::from_std(std_stream) {
                Ok(stream) => {
                    let addr =
                        Session::new(id, stream, peer, registry, Some(closed), opts, &log).start();
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
            *slot = Some(msg.addr);
        }
    }
}

impl Handler<SessionClosed> for Listener {
    type Result = ();

    fn handle(&mut self, msg: SessionClosed, _ctx: &mut Self::Context) {
        self.sessions.remove(&msg.id);
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
            for addr in self.sessions.values().flatten() {
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
        let ids = Arc::new(AtomicU64::new(1));
        let mut webs = Vec::new();
        for (robot, std_listener, local, rlog, web) in bound {
            let mut registry = Registry::new(
                &robot.name,
                Duration::from_secs_f64(settings.server.setup_timeout),
                rlog.clone(),
            );
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
                };
                let sd = factory(ctx).map_err(|e| {
                    StartError(format!(
                        "robot '{}': driver '{}': {e}",
                        robot.name, d.driver
                    ))
                })?;
                registry
                    .add_driver(&d.driver, sd.handle, &sd.devices)
                    .map_err(StartError)?;
            }
            let registry = registry.start();
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
                workers: handles.clone(),
                next_worker: 0,
                sessions: HashMap::new(),
                ids: ids.clone(),
                max_clients: settings.server.max_clients,
                opts: opts.clone(),
                stopping: None,
                log: rlog,
            }
            .start();
            listeners.push((l, local));
            registries.push(registry);
        }
        Ok(Server {
            listeners,
            webs,
            registries,
            workers,
            log,
        })
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
