//! The web endpoint of one robot, or of several on one port: HTTP and WebSocket.
//!
//! `GET /` serves the built-in viewer page (embedded in the binary: no CDN, works with no
//! internet on the robot's network). A WebSocket upgrade with the subprotocol
//! `foxglove.websocket.v1` or `foxglove.sdk.v1` starts a [`session::WebSession`]: the
//! Foxglove WebSocket protocol, which the page, Foxglove and Lichtblick speak. Each
//! connection is served on one of the server's session arbiters (round robin), like a TCP
//! client's session, and is a session of the robot's registry: not a second data path.
//!
//! Robots whose web port is the same (and every robot of a large `-stage` world, which
//! shares the first robot's) are served by one endpoint, each robot's topics under its
//! name ([`world`] has the rule).
//!
//! Built on hyper (HTTP/1.1 with upgrades) and tokio-tungstenite (the WebSocket framing),
//! both on the actix arbiters' tokio runtimes: no second runtime, no extra threads.
//!
//! A front end of the server ([`player_core::frontend`]): [`start`] serves every robot
//! whose web port is on ([`port_of`]; the `-web` flag, [`apply_flag`], sets them) and
//! returns the [`WebViewer`] the server attaches. With `[web] tls_cert` and `tls_key`
//! ([`WebSettings`]) every endpoint speaks `https://` and `wss://` only ([`tls`]).
#![deny(missing_docs)]

pub mod foxglove;
pub mod graph;
pub mod params;
pub mod playback;
pub mod protobuf;
pub mod schema;
pub mod session;
pub mod settings;
pub mod tls;
pub mod world;

pub use settings::WebSettings;

use actix::prelude::*;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use player_core::access::Policy;
use player_core::frontend::{FrontEnd, FrontEndContext, RobotHandle, SessionIds};
use player_core::registry::{
    ControlPlayback, GetMap, PlaybackClock, PlaybackRequest, Registry, SessionId,
};
use player_core::server::listen;
use player_core::settings::{FlagSpec, FrontEndSyntax, RobotSettings, SettingsError};
use player_kit::driver::DeviceSpec;
use schema::{Channel, Source};
use session::{Close, WebSession};
use slog::{info, warn, Logger};
use std::any::Any;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;
use world::{Robots, WebRobot};

/// The viewer page.
pub const INDEX_HTML: &str = include_str!("../page/index.html");
/// The viewer's script.
pub const VIEWER_JS: &str = include_str!("../page/viewer.js");

/// Largest WebSocket message a client may send (commands and subscriptions are small).
pub const MAX_CLIENT_MESSAGE: usize = 64 * 1024;

/// Send buffer of a web connection (the kernel doubles it). Small, so what a browser has
/// not read yet is at most a fraction of a second of data, as the TCP sessions' bound on
/// unsent bytes; the newest-wins outbox holds the rest.
const SEND_BUFFER: usize = 32 * 1024;

/// Largest HTTP request head.
const MAX_REQUEST_HEAD: usize = 16 * 1024;

/// What every session of one endpoint shares.
pub struct Shared {
    /// The robots served (one, or a world's), their channels and topics.
    pub robots: Robots,
    /// A number unique to this endpoint (keys the per-thread encoding cache).
    pub uid: u64,
    /// How long a client may take nothing before it is disconnected (zero: never).
    pub stall_timeout: Duration,
    /// Most sessions at once.
    pub max_clients: usize,
    /// The open sessions.
    pub sessions: Mutex<HashMap<SessionId, Addr<WebSession>>>,
    /// Numbers sessions, shared with the TCP listeners so ids are unique in the registry.
    pub ids: SessionIds,
    /// Who may connect and command (the same policy as the TCP listeners').
    pub policy: Arc<Policy>,
    /// Open sessions per client address (`access.max_per_address`).
    pub per_address: Mutex<HashMap<IpAddr, usize>>,
    /// The clock of the driver that plays the robot back from a recording (`-replay`),
    /// if one does and it is the endpoint's only robot: its clients control playback (the
    /// `playbackControl` capability).
    pub replay: Option<Arc<PlaybackClock>>,
    /// Logger carrying the robot name.
    pub log: Logger,
    /// TLS, when `[web]` has a certificate: every connection's handshake first.
    pub tls: Option<tls::TlsEndpoint>,
}

impl Shared {
    /// The open sessions, locked (a poisoned lock's map is still the map).
    pub fn open_sessions(&self) -> MutexGuard<'_, HashMap<SessionId, Addr<WebSession>>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The addresses of the sessions open now.
    pub fn session_addrs(&self) -> Vec<Addr<WebSession>> {
        self.open_sessions().values().cloned().collect()
    }
}

/// One session's place in the per-address count; given back when dropped (when the
/// session ends, or when its upgrade fails).
pub struct AddressSlot {
    shared: Arc<Shared>,
    ip: IpAddr,
}

impl AddressSlot {
    /// Takes a place for `ip`, unless it already has `access.max_per_address` sessions.
    fn take(shared: &Arc<Shared>, ip: IpAddr) -> Option<AddressSlot> {
        let limit = shared.policy.max_per_address();
        let mut map = shared.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let n = map.entry(ip).or_default();
        if limit > 0 && *n >= limit {
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            shared: shared.clone(),
            ip,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut map = self
            .shared
            .per_address
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.ip);
            }
        }
    }
}

/// One robot an endpoint is to serve.
pub struct RobotOptions {
    /// The robot's name.
    pub robot: String,
    /// The robot's registry.
    pub registry: Addr<Registry>,
    /// The robot's device codes.
    pub devices: Vec<u8>,
    /// The robot's devices and their drivers.
    pub specs: Vec<(DeviceSpec, String)>,
}

/// What an endpoint needs to start.
pub struct WebOptions {
    /// The robots it serves (at least one), in configuration order.
    pub robots: Vec<RobotOptions>,
    /// The session arbiters, for connections round robin.
    pub workers: Vec<ArbiterHandle>,
    /// Session ids, shared with the TCP listeners.
    pub ids: SessionIds,
    /// See [`Shared::stall_timeout`].
    pub stall_timeout: Duration,
    /// See [`Shared::max_clients`].
    pub max_clients: usize,
    /// See [`Shared::policy`].
    pub policy: Arc<Policy>,
    /// Logger.
    pub log: Logger,
    /// The certificate and key when the endpoint speaks TLS ([`WebSettings`]).
    pub tls: Option<tls::TlsConfig>,
}

/// The first robot's web viewer port when none is configured (Foxglove's default port).
pub const DEFAULT_WEB_PORT: u16 = 8765;

/// The web viewer's section and flag: `[web]` ([`WebSettings`]) and `-web PORT` (robot `i`
/// on `PORT + i`, 0 turns them off).
pub const SYNTAX: FrontEndSyntax = FrontEndSyntax {
    sections: &["web"],
    flags: &[FlagSpec {
        flag: "-web",
        takes_value: true,
    }],
};

/// Applies `-web <value>`: robot `i` gets port `value + i` (0: every viewer off); a robot
/// served on the first robot's port (a large `-stage` world) stays there. Run it after
/// `-stage`, so every robot of a world gets its port.
pub fn apply_flag(robots: &mut [RobotSettings], value: &str) -> Result<(), SettingsError> {
    let base: u16 = value
        .parse()
        .map_err(|_| SettingsError::flag("-web", format!("'{value}' is not a TCP port number")))?;
    for (i, r) in robots.iter_mut().enumerate() {
        if r.web_shared {
            continue;
        }
        r.web_port = Some(if base == 0 {
            0
        } else {
            u16::try_from(usize::from(base) + i).map_err(|_| {
                SettingsError::flag(
                    "-web",
                    format!("robot {i}'s port {base} + {i} is past 65535"),
                )
            })?
        });
    }
    Ok(())
}

/// Robot number `index`'s web viewer port and whether it was configured (a configured port
/// that cannot be bound stops the server; the default, [`DEFAULT_WEB_PORT`]` + index`, is
/// best effort), from its `web_port`; `None` when off.
pub fn port_of(index: usize, web_port: Option<u16>) -> Option<(u16, bool)> {
    match web_port {
        Some(0) => None,
        Some(p) => Some((p, true)),
        None => u16::try_from(usize::from(DEFAULT_WEB_PORT) + index)
            .ok()
            .map(|p| (p, false)),
    }
}

/// Why the web viewer could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// A configured web port cannot be listened on.
    #[error("robot '{robot}': web viewer cannot listen on {addr}: {source}")]
    Listen {
        /// The robot.
        robot: String,
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The TLS certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
}

/// Every web endpoint: the front end [`start`] returns.
pub struct WebViewer {
    endpoints: Vec<WebEndpoint>,
    /// Each robot's endpoint (an index into `endpoints`), in configuration order.
    of_robot: Vec<Option<usize>>,
}

impl WebViewer {
    /// Each robot's web viewer address (`None` where it is off or its default port was
    /// busy), in configuration order; robots served together have the same address.
    pub fn addrs(&self) -> Vec<Option<SocketAddr>> {
        self.of_robot
            .iter()
            .map(|e| e.map(|i| self.endpoints[i].local_addr()))
            .collect()
    }
}

impl FrontEnd for WebViewer {
    fn name(&self) -> &str {
        "web"
    }

    fn stop(self: Box<Self>) -> futures::future::LocalBoxFuture<'static, ()> {
        Box::pin(async move {
            for w in self.endpoints {
                w.stop().await;
            }
        })
    }

    fn recheck(&self) -> usize {
        self.endpoints.iter().map(WebEndpoint::recheck).sum()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The web ports of `robots` and who is served on each: one endpoint per port, with every
/// robot whose port ([`port_of`]) it is, in configuration order; a robot with
/// `web_shared` is on the first robot's. Robots whose viewer is off are on none.
pub fn endpoints_of(robots: &[RobotHandle]) -> Vec<(u16, bool, Vec<usize>)> {
    let first = robots.first().and_then(|r| port_of(r.index, r.web_port));
    let mut out: Vec<(u16, bool, Vec<usize>)> = Vec::new();
    for (i, r) in robots.iter().enumerate() {
        let target = if r.web_shared {
            first
        } else {
            port_of(r.index, r.web_port)
        };
        let Some((port, explicit)) = target else {
            continue;
        };
        match out.iter_mut().find(|(p, _, _)| *p == port) {
            Some((_, e, list)) => {
                *e |= explicit;
                list.push(i);
            }
            None => out.push((port, explicit, vec![i])),
        }
    }
    out
}

/// Starts the web viewer: one endpoint per web port ([`endpoints_of`]), serving each robot
/// whose port it is, with TLS when `settings` has a certificate (relative files from the
/// configuration's folder; every endpoint alike). A configured port that cannot be bound,
/// or a certificate or key that cannot be used, is an error; a busy default port is logged
/// and skipped. Must run on an actix arbiter.
pub async fn start(settings: &WebSettings, ctx: &FrontEndContext) -> Result<WebViewer, WebError> {
    let tls = match settings.tls_files(&ctx.base_dir) {
        Some(files) => Some(files.load()?),
        None => None,
    };
    let mut endpoints = Vec::new();
    let mut of_robot = vec![None; ctx.robots.len()];
    for (port, explicit, members) in endpoints_of(&ctx.robots) {
        let robots: Vec<&RobotHandle> = members.iter().map(|&i| &ctx.robots[i]).collect();
        if let Some(e) = start_endpoint(&robots, port, explicit, ctx, tls.clone()).await? {
            for i in members {
                of_robot[i] = Some(endpoints.len());
            }
            endpoints.push(e);
        }
    }
    Ok(WebViewer {
        endpoints,
        of_robot,
    })
}

async fn start_endpoint(
    members: &[&RobotHandle],
    port: u16,
    explicit: bool,
    ctx: &FrontEndContext,
    tls: Option<tls::TlsConfig>,
) -> Result<Option<WebEndpoint>, WebError> {
    let robot = members[0];
    let rlog = if members.len() == 1 {
        ctx.log.new(slog::o!("robot" => robot.name.clone()))
    } else {
        ctx.log.new(slog::o!("robots" => members.len()))
    };
    let addr = format!("{}:{port}", robot.bind);
    let listen_error = |source| WebError::Listen {
        robot: robot.name.clone(),
        addr: addr.clone(),
        source,
    };
    let listener = match listen(&addr, ctx.server.listen_backlog) {
        Ok(l) => l,
        Err(e) if explicit => return Err(listen_error(e)),
        Err(e) => {
            warn!(rlog, "web viewer not started (set web_port or -web to choose a port)"; "address" => addr, "error" => %e);
            return Ok(None);
        }
    };
    let opts = WebOptions {
        robots: members
            .iter()
            .map(|r| RobotOptions {
                robot: r.name.clone(),
                registry: r.registry.clone(),
                devices: r.codes(),
                specs: r.devices.clone(),
            })
            .collect(),
        workers: ctx.workers.clone(),
        ids: ctx.ids.clone(),
        stall_timeout: Duration::from_secs_f64(ctx.server.stall_timeout),
        max_clients: ctx.server.max_clients,
        policy: ctx.policy.clone(),
        log: rlog,
        tls,
    };
    WebEndpoint::start(listener, opts)
        .await
        .map(Some)
        .map_err(listen_error)
}

/// A running web endpoint.
pub struct WebEndpoint {
    addr: SocketAddr,
    accept: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
}

static UIDS: AtomicU64 = AtomicU64::new(1);

impl WebEndpoint {
    /// Starts serving on `listener` (already bound). Must run on an actix arbiter.
    pub async fn start(listener: std::net::TcpListener, opts: WebOptions) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let listener = tokio::net::TcpListener::from_std(listener)?;
        // Whether there is a map: asked of the first robot (the robots of one endpoint are
        // of one world, or each alone; asking 10 000 registries would slow the start).
        let has_map = match opts.robots.first() {
            Some(r) => r
                .registry
                .send(GetMap { walls: false })
                .await
                .ok()
                .flatten()
                .is_some(),
            None => false,
        };
        let robots: Vec<WebRobot> = opts
            .robots
            .into_iter()
            .map(|r| {
                let channels: Vec<Channel> = schema::CHANNELS
                    .iter()
                    .filter(|c| match c.source {
                        Source::Device(d) => r.devices.contains(&d),
                        Source::Map | Source::MapTransform => has_map,
                        Source::Devices => true,
                    })
                    .copied()
                    .collect();
                WebRobot {
                    name: r.robot,
                    registry: r.registry,
                    devices: r.devices,
                    specs: r.specs,
                    channels,
                }
            })
            .collect();
        // Playback control is a single replayed robot's: asked only where one is served.
        let replay = match robots.as_slice() {
            [one] => one
                .registry
                .send(ControlPlayback(PlaybackRequest::default()))
                .await
                .ok()
                .flatten(),
            _ => None,
        };
        let shared = Arc::new(Shared {
            robots: Robots::new(robots),
            uid: UIDS.fetch_add(1, Ordering::Relaxed),
            stall_timeout: opts.stall_timeout,
            max_clients: opts.max_clients,
            sessions: Mutex::new(HashMap::new()),
            per_address: Mutex::new(HashMap::new()),
            ids: opts.ids,
            policy: opts.policy,
            replay,
            log: opts.log,
            tls: opts.tls.as_ref().map(tls::TlsEndpoint::new),
        });
        let scheme = if shared.tls.is_some() {
            "https"
        } else {
            "http"
        };
        info!(shared.log, "web viewer listening"; "url" => format!("{scheme}://{addr}/"));
        let s = shared.clone();
        let workers = opts.workers;
        let accept = actix_rt::spawn(async move {
            let mut next = 0usize;
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(x) => x,
                    Err(e) => {
                        warn!(s.log, "web accept failed"; "error" => %e);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let Ok(std_stream) = stream.into_std() else {
                    continue;
                };
                let worker = &workers[next % workers.len()];
                next = next.wrapping_add(1);
                let s2 = s.clone();
                worker.spawn_fn(move || {
                    actix_rt::spawn(serve_connection(std_stream, peer, s2));
                });
            }
        });
        Ok(WebEndpoint {
            addr,
            accept,
            shared,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Has every open session re-check its rights under the access policy in force (after
    /// a reload, SIGHUP; see [`session::Recheck`]); returns how many were told.
    pub fn recheck(&self) -> usize {
        let addrs = self.shared.session_addrs();
        for a in &addrs {
            a.do_send(session::Recheck);
        }
        addrs.len()
    }

    /// Stops accepting and closes every session (each releases its devices: a writer
    /// leaving stops the robot); returns when they have ended or after 3 s.
    pub async fn stop(self) {
        self.accept.abort();
        let addrs = self.shared.session_addrs();
        for a in &addrs {
            a.do_send(Close);
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while tokio::time::Instant::now() < deadline && !self.shared.open_sessions().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn serve_connection(std_stream: std::net::TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let Ok(stream) = tokio::net::TcpStream::from_std(std_stream) else {
        return;
    };
    let _ = socket2::SockRef::from(&stream).set_send_buffer_size(SEND_BUFFER);
    match &shared.tls {
        // The handshake on this connection's own task, bounded in time (tls.rs).
        Some(tls) => {
            if let Some(stream) = tls.accept(stream, peer, &shared.log).await {
                serve_http(stream, peer, shared).await;
            }
        }
        None => serve_http(stream, peer, shared).await,
    }
}

/// HTTP/1.1 (the page, WebSocket upgrades) on one connection, plain or TLS.
async fn serve_http<S>(stream: S, peer: SocketAddr, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let s = shared.clone();
    let service = hyper::service::service_fn(move |req| {
        let s = s.clone();
        async move { Ok::<_, Infallible>(respond(req, peer, s)) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(30))
        .max_buf_size(MAX_REQUEST_HEAD.max(8192))
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    if let Err(e) = conn.await {
        slog::debug!(shared.log, "web connection ended"; "client" => %peer, "error" => %e);
    }
}

/// `%XX` escapes of a URL query value decoded to bytes (`+` is a space); at most 256
/// bytes are looked at.
fn percent_decode(s: &str) -> Vec<u8> {
    let b = &s.as_bytes()[..s.len().min(256)];
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match b[i] {
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    out
}

fn plain(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(text.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn header_has(req: &Request<Incoming>, name: header::HeaderName, token: &str) -> bool {
    req.headers().get_all(name).iter().any(|v| {
        v.to_str()
            .is_ok_and(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    })
}

fn respond(
    mut req: Request<Incoming>,
    peer: SocketAddr,
    shared: Arc<Shared>,
) -> Response<Full<Bytes>> {
    if header_has(&req, header::UPGRADE, "websocket") {
        return upgrade(&mut req, peer, shared);
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "only GET here\n");
    }
    let (body, kind) = match req.uri().path() {
        "/" | "/index.html" => (INDEX_HTML, "text/html; charset=utf-8"),
        "/viewer.js" => (VIEWER_JS, "text/javascript; charset=utf-8"),
        _ => return plain(StatusCode::NOT_FOUND, "not found\n"),
    };
    let body = if req.method() == Method::HEAD {
        ""
    } else {
        body
    };
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

fn upgrade(
    req: &mut Request<Incoming>,
    peer: SocketAddr,
    shared: Arc<Shared>,
) -> Response<Full<Bytes>> {
    if req.method() != Method::GET || !header_has(req, header::CONNECTION, "upgrade") {
        return plain(
            StatusCode::BAD_REQUEST,
            "a WebSocket upgrade is a GET with Connection: upgrade\n",
        );
    }
    if req
        .headers()
        .get(header::SEC_WEBSOCKET_VERSION)
        .map(|v| v.as_bytes())
        != Some(b"13")
    {
        let mut r = plain(StatusCode::BAD_REQUEST, "WebSocket version 13 only\n");
        r.headers_mut().insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
        return r;
    }
    let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY).cloned() else {
        return plain(StatusCode::BAD_REQUEST, "no Sec-WebSocket-Key\n");
    };
    let offered: Vec<String> = req
        .headers()
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    let offered = (!offered.is_empty()).then(|| offered.join(","));
    let protocol = match foxglove::choose_subprotocol(offered.as_deref()) {
        Ok(p) => p,
        Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("{e}\n")),
    };
    // The access policy, as for a TCP client; a key comes as `?key=` on the URL (the
    // Foxglove protocol has no other place for one).
    let rights = match shared.policy.admit(peer.ip()) {
        Ok(r) => r,
        Err(why) => {
            warn!(shared.log, "web connection refused"; "client" => %peer, "reason" => why);
            return plain(StatusCode::FORBIDDEN, &format!("{why}\n"));
        }
    };
    let presented = req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("key="))
            .map(percent_decode)
    });
    let may_write = match &presented {
        Some(k) if shared.policy.has_key() => {
            if !shared.policy.key_matches(k) {
                warn!(shared.log, "web connection refused: wrong key"; "client" => %peer);
                return plain(StatusCode::FORBIDDEN, "wrong key\n");
            }
            shared.policy.may_write(peer.ip())
        }
        _ if rights.must_present_key => {
            return plain(StatusCode::FORBIDDEN, "this server needs ?key=KEY\n");
        }
        _ => rights.write,
    };
    // The channels' encoding: `?encoding=json` or `protobuf` (the default; see `protobuf`).
    let encoding = req
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("encoding=")))
        .map(|e| protobuf::Encoding::parse(&String::from_utf8_lossy(&percent_decode(e))))
        .unwrap_or(Ok(protobuf::Encoding::default()));
    let encoding = match encoding {
        Ok(e) => e,
        Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("{e}\n")),
    };
    let open = shared.open_sessions().len();
    if open >= shared.max_clients {
        warn!(shared.log, "web connection refused: too many clients"; "client" => %peer);
        return plain(StatusCode::SERVICE_UNAVAILABLE, "too many clients\n");
    }
    let Some(slot) = AddressSlot::take(&shared, peer.ip()) else {
        warn!(shared.log, "web connection refused: too many from this address"; "client" => %peer);
        return plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many connections from this address (max_per_address)\n",
        );
    };
    // `?robots=NAME,...`: the robots whose channels a client of a world wants advertised.
    let picked = req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("robots="))
            .map(|v| {
                shared
                    .robots
                    .select(&String::from_utf8_lossy(&percent_decode(v)))
            })
    });
    let on_upgrade = hyper::upgrade::on(req);
    let id = shared.ids.next();
    let subprotocol = protocol.unwrap_or("foxglove.websocket.v1");
    actix_rt::spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(u) => u,
            Err(e) => {
                warn!(shared.log, "web upgrade failed"; "client" => %peer, "error" => %e);
                return;
            }
        };
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_CLIENT_MESSAGE))
            .max_frame_size(Some(MAX_CLIENT_MESSAGE))
            .write_buffer_size(64 * 1024)
            .max_write_buffer_size(4 * 1024 * 1024);
        let socket =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await;
        WebSession::new(
            id,
            socket,
            format!("web {peer}"),
            subprotocol,
            may_write,
            encoding,
            shared,
            slot,
        )
        .with_robots(picked)
        .with_key(presented)
        .start();
    });
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if let Some(p) = protocol {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(p));
    }
    r
}
