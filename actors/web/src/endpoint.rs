//! One web endpoint: the listening socket, its accept loop (each connection on one of the
//! server's session arbiters, round robin, with its TLS handshake first where the endpoint
//! speaks TLS), HTTP/1.1 on each connection (the viewer page), and the WebSocket upgrade
//! that admits a client by the access policy and starts its [`WebSession`].

use crate::foxglove;
use crate::protobuf::Encoding;
use crate::schema::{self, Channel, Source};
use crate::session::{Admission, Socket, WebSession};
use crate::shared::{AddressSlot, SessionSignal, Shared};
use crate::tls;
use crate::world::{Robots, WebRobot};
use actix::prelude::*;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use player_core::access::Policy;
use player_core::frontend::SessionIds;
use player_core::registry::{ControlPlayback, GetMap, PlaybackRequest, Registry};
use player_kit::driver::DeviceSpec;
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

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

/// The WebSocket's read buffer. Small: a client sends a few short messages, and every
/// look at the socket (at each of the session's wake-ups, a reading's included) zeroes the
/// free part of this buffer before the read (tungstenite's default of 128 KiB was a fifth
/// of the server's CPU with 50 browsers, and 128 KiB of memory each). Longer messages
/// still arrive whole: the buffer grows to a frame's announced length (at most
/// [`MAX_CLIENT_MESSAGE`]).
const READ_BUFFER: usize = 4 * 1024;

/// Largest HTTP request head.
const MAX_REQUEST_HEAD: usize = 16 * 1024;

/// Most bytes of one URL query value looked at.
const MAX_QUERY_VALUE: usize = 256;

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
    /// The certificate and key when the endpoint speaks TLS ([`crate::WebSettings`]).
    pub tls: Option<tls::TlsConfig>,
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
            .map(|r| web_robot(r, has_map))
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
        let accept = actix_rt::spawn(accept_loop(listener, opts.workers, shared.clone()));
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
    /// a reload, SIGHUP; see [`SessionSignal::PolicyReloaded`]); returns how many were
    /// told.
    pub fn recheck(&self) -> usize {
        self.shared.signal_all(SessionSignal::PolicyReloaded)
    }

    /// Stops accepting and closes every session (each releases its devices: a writer
    /// leaving stops the robot); returns when they have ended or after 3 s.
    pub async fn stop(self) {
        self.accept.abort();
        self.shared.signal_all(SessionSignal::End);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
        while tokio::time::Instant::now() < deadline && !self.shared.open_sessions().is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A robot as the endpoint serves it: the channels of its devices (and of the walls where
/// there are some).
fn web_robot(r: RobotOptions, has_map: bool) -> WebRobot {
    let channels: Vec<Channel> = schema::CHANNELS
        .iter()
        .filter(|c| match c.source {
            Source::Device(d) => r.devices.contains(&d),
            Source::Map | Source::MapTransform => has_map,
            Source::Devices => true,
            Source::Particles => r.devices.contains(&player_proto::device::LOCALIZE),
            Source::Plan => r.devices.contains(&player_proto::device::PLANNER),
            Source::Grid => r.devices.contains(&player_proto::device::MAP),
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
}

/// Accepts connections for ever, each served on the next of `workers`.
async fn accept_loop(
    listener: tokio::net::TcpListener,
    workers: Vec<ArbiterHandle>,
    shared: Arc<Shared>,
) {
    let mut next = 0usize;
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                warn!(shared.log, "web accept failed"; "error" => %e);
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
        let s = shared.clone();
        worker.spawn_fn(move || {
            actix_rt::spawn(serve_connection(std_stream, peer, s));
        });
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

/// `%XX` escapes of a URL query value decoded to bytes (`+` is a space); at most
/// [`MAX_QUERY_VALUE`] bytes are looked at.
fn percent_decode(s: &str) -> Vec<u8> {
    let b = &s.as_bytes()[..s.len().min(MAX_QUERY_VALUE)];
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

/// The first value of `name` in the URL query `query`, decoded.
fn query_value(query: Option<&str>, name: &str) -> Option<Vec<u8>> {
    query?.split('&').find_map(|kv| {
        kv.strip_prefix(name)
            .and_then(|v| v.strip_prefix('='))
            .map(percent_decode)
    })
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

/// A WebSocket upgrade: the handshake checked, the client admitted, its session started
/// once the connection is upgraded; answered `101 Switching Protocols` or why not.
fn upgrade(
    req: &mut Request<Incoming>,
    peer: SocketAddr,
    shared: Arc<Shared>,
) -> Response<Full<Bytes>> {
    let handshake = match Handshake::read(req) {
        Ok(h) => h,
        Err(refusal) => return refusal.response(),
    };
    let admitted = match Admitted::check(req, peer, &shared) {
        Ok(a) => a,
        Err(refusal) => return refusal.response(),
    };
    let on_upgrade = hyper::upgrade::on(req);
    let id = shared.ids.next();
    let subprotocol = handshake.protocol.unwrap_or("foxglove.websocket.v1");
    actix_rt::spawn(async move {
        let upgraded = match on_upgrade.await {
            Ok(u) => u,
            Err(e) => {
                warn!(shared.log, "web upgrade failed"; "client" => %peer, "error" => %e);
                return;
            }
        };
        let config = WebSocketConfig::default()
            .read_buffer_size(READ_BUFFER)
            .max_message_size(Some(MAX_CLIENT_MESSAGE))
            .max_frame_size(Some(MAX_CLIENT_MESSAGE));
        let socket = Socket::open(TokioIo::new(upgraded), config).await;
        let client = format!("web {peer}");
        WebSession::new(id, socket, client, subprotocol, admitted.admission, shared)
            .with_encoding(admitted.encoding)
            .with_robots(admitted.picked)
            .start();
    });
    handshake.accept()
}

/// Why an upgrade is refused: the status, the text the client reads, and a header that
/// says what would do.
struct Refusal {
    status: StatusCode,
    text: String,
    header: Option<(header::HeaderName, &'static str)>,
}

impl Refusal {
    fn new(status: StatusCode, text: impl Into<String>) -> Refusal {
        Refusal {
            status,
            text: text.into(),
            header: None,
        }
    }

    fn response(self) -> Response<Full<Bytes>> {
        let mut r = plain(self.status, &self.text);
        if let Some((name, value)) = self.header {
            r.headers_mut()
                .insert(name, HeaderValue::from_static(value));
        }
        r
    }
}

/// A WebSocket handshake's request, checked.
struct Handshake {
    key: HeaderValue,
    /// The subprotocol chosen of those offered (none offered: none).
    protocol: Option<&'static str>,
}

impl Handshake {
    /// The key and subprotocol of an upgrade request (a GET with `Connection: upgrade`,
    /// version 13, a key, a subprotocol we speak if any is offered), or the refusal.
    fn read(req: &Request<Incoming>) -> Result<Handshake, Refusal> {
        if req.method() != Method::GET || !header_has(req, header::CONNECTION, "upgrade") {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "a WebSocket upgrade is a GET with Connection: upgrade\n",
            ));
        }
        if req
            .headers()
            .get(header::SEC_WEBSOCKET_VERSION)
            .map(|v| v.as_bytes())
            != Some(b"13")
        {
            return Err(Refusal {
                header: Some((header::SEC_WEBSOCKET_VERSION, "13")),
                ..Refusal::new(StatusCode::BAD_REQUEST, "WebSocket version 13 only\n")
            });
        }
        let Some(key) = req.headers().get(header::SEC_WEBSOCKET_KEY).cloned() else {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "no Sec-WebSocket-Key\n",
            ));
        };
        let offered: Vec<String> = req
            .headers()
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect();
        let offered = (!offered.is_empty()).then(|| offered.join(","));
        match foxglove::choose_subprotocol(offered.as_deref()) {
            Ok(protocol) => Ok(Handshake { key, protocol }),
            Err(e) => Err(Refusal::new(StatusCode::BAD_REQUEST, format!("{e}\n"))),
        }
    }

    /// `101 Switching Protocols` with the accept key and the subprotocol chosen.
    fn accept(&self) -> Response<Full<Bytes>> {
        let mut r = Response::new(Full::new(Bytes::new()));
        *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let h = r.headers_mut();
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        if let Ok(v) = HeaderValue::from_str(&derive_accept_key(self.key.as_bytes())) {
            h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
        }
        if let Some(p) = self.protocol {
            h.insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(p));
        }
        r
    }
}

/// A client the access policy and the endpoint's limits let in, and what its URL asks.
struct Admitted {
    /// From where, with what key (`?key=`), whether it may command.
    admission: Admission,
    /// The channels' encoding (`?encoding=json` or `protobuf`, the default).
    encoding: Encoding,
    /// The robots whose channels it wants advertised (`?robots=NAME,...`).
    picked: Option<Vec<usize>>,
}

impl Admitted {
    /// Lets `peer` in by the access policy, as a TCP client (a key comes as `?key=` on the
    /// URL: the Foxglove protocol has no other place for one), unless the endpoint is full
    /// or the address has its `max_per_address` sessions; or the refusal, logged.
    fn check(
        req: &Request<Incoming>,
        peer: SocketAddr,
        shared: &Arc<Shared>,
    ) -> Result<Admitted, Refusal> {
        let refuse = |status, text: &str| Err(Refusal::new(status, text));
        let rights = match shared.policy.admit(peer.ip()) {
            Ok(r) => r,
            Err(why) => {
                warn!(shared.log, "web connection refused"; "client" => %peer, "reason" => why);
                return refuse(StatusCode::FORBIDDEN, &format!("{why}\n"));
            }
        };
        let query = req.uri().query();
        let presented = query_value(query, "key");
        let may_write = match &presented {
            Some(k) if shared.policy.has_key() => {
                if !shared.policy.key_matches(k) {
                    warn!(shared.log, "web connection refused: wrong key"; "client" => %peer);
                    return refuse(StatusCode::FORBIDDEN, "wrong key\n");
                }
                shared.policy.may_write(peer.ip())
            }
            _ if rights.must_present_key => {
                return refuse(StatusCode::FORBIDDEN, "this server needs ?key=KEY\n");
            }
            _ => rights.write,
        };
        let encoding = match query_value(query, "encoding") {
            Some(e) => Encoding::parse(&String::from_utf8_lossy(&e)),
            None => Ok(Encoding::default()),
        };
        let encoding = match encoding {
            Ok(e) => e,
            Err(e) => return refuse(StatusCode::BAD_REQUEST, &format!("{e}\n")),
        };
        if shared.open_sessions().len() >= shared.max_clients {
            warn!(shared.log, "web connection refused: too many clients"; "client" => %peer);
            return refuse(StatusCode::SERVICE_UNAVAILABLE, "too many clients\n");
        }
        let Some(slot) = AddressSlot::take(shared, peer.ip()) else {
            warn!(shared.log, "web connection refused: too many from this address"; "client" => %peer);
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many connections from this address (max_per_address)\n",
            );
        };
        let picked = query_value(query, "robots")
            .map(|v| shared.robots.select(&String::from_utf8_lossy(&v)));
        Ok(Admitted {
            admission: Admission::new(slot, may_write, presented),
            encoding,
            picked,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_decoded_and_plus_is_a_space() {
        let q = Some("encoding=json&key=a%2Bb+c%zz&robots=r1,r2*");
        assert_eq!(query_value(q, "key").as_deref(), Some(&b"a+b c%zz"[..]));
        assert_eq!(query_value(q, "encoding").as_deref(), Some(&b"json"[..]));
        assert_eq!(query_value(q, "robots").as_deref(), Some(&b"r1,r2*"[..]));
        assert_eq!(query_value(q, "ke"), None, "a name is matched whole");
        assert_eq!(query_value(None, "key"), None);
    }

    #[test]
    fn a_query_value_is_read_up_to_its_bound() {
        let long = "x".repeat(MAX_QUERY_VALUE * 4);
        let q = format!("key={long}");
        assert_eq!(
            query_value(Some(&q), "key").map(|v| v.len()),
            Some(MAX_QUERY_VALUE)
        );
    }
}
