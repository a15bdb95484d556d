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
//! whose web port is on ([`WebSettings::port_of`]; the `-web` flag,
//! [`WebSettings::apply_flag`], sets them) and
//! returns the [`WebViewer`] the server attaches. With `[web] tls_cert` and `tls_key`
//! ([`WebSettings`]) every endpoint speaks `https://` and `wss://` only ([`tls`]).
//!
//! By part: [`endpoint`] (the listener, HTTP, the upgrade that admits a client), [`shared`]
//! (what the sessions of an endpoint share), [`session`] (one client, in parts by job),
//! [`world`] (naming on a shared port); the pure encoders of the server's readings
//! [`schema`] (JSON), [`protobuf`], [`grid`] (`/map`); the pure parts of the client's
//! operations [`params`], [`graph`], [`playback`]; [`settings`] and [`tls`]. This file
//! starts the endpoints of a server's robots.
//!
//! The protocol's wire itself (the parsing of what a client sends, the server's messages,
//! the channel table, the encodings and schemas) is the pure crate `player-foxglove`;
//! [`foxglove`] is its `protocol`, and [`schema`], [`protobuf`] and [`playback`] re-export
//! what of it they used to hold.
#![deny(missing_docs)]

pub mod endpoint;
/// The Foxglove WebSocket protocol's messages, both ways: the pure crate's
/// (`player_foxglove::protocol`), under the name the sessions use.
pub use player_foxglove::protocol as foxglove;
pub mod graph;
pub mod grid;
pub mod params;
pub mod playback;
pub mod protobuf;
pub mod schema;
pub mod session;
pub mod settings;
pub mod shared;
pub mod tls;
pub mod world;

pub use endpoint::{RobotOptions, WebEndpoint, WebOptions};
pub use settings::{Viewer, WebSettings, DEFAULT_WEB_PORT, STAGE_WEB_VIEWERS_MAX};

use futures::future::LocalBoxFuture;
use player_core::access::AccessSettings;
use player_core::frontend::{FrontEnd, FrontEndContext, FrontEndKind, ListenPort, RobotHandle};
use player_core::server::listen;
use player_core::settings::{FlagSpec, FrontEndSyntax, RobotSettings, Settings, SettingsError};
use slog::warn;
use std::any::Any;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The web viewer's section, robot key and flag: `[web]` ([`WebSettings`]), each robot's
/// `web_port` and `-web PORT` (robot `i` on `PORT + i`, 0 turns them off).
pub const SYNTAX: FrontEndSyntax = FrontEndSyntax {
    sections: &["web"],
    robot_keys: &["web_port"],
    flags: &[FlagSpec {
        flag: "-web",
        takes_value: true,
    }],
};

/// The web viewer as a front end of the server: on for every robot whose port is on (by
/// default every robot's, [`DEFAULT_WEB_PORT`]` + i`).
pub struct Web;

impl FrontEndKind for Web {
    const NAME: &'static str = "web";
    const SYNTAX: FrontEndSyntax = SYNTAX;
    type Settings = WebSettings;
    type Running = WebViewer;
    type Error = WebError;

    fn settings(core: &Settings) -> Result<WebSettings, SettingsError> {
        WebSettings::from_settings(core)
    }

    fn apply_flag(
        settings: &mut WebSettings,
        _flag: &str,
        value: Option<&str>,
    ) -> Result<(), SettingsError> {
        settings.apply_flag(value.unwrap_or_default())
    }

    fn check(
        settings: &WebSettings,
        _robots: &[RobotSettings],
        _access: &AccessSettings,
        origin: &str,
    ) -> Result<(), SettingsError> {
        settings.check(origin)
    }

    /// Always: each robot whose viewer is on gets one (a server with every viewer off runs
    /// a viewer serving no port).
    fn enabled(_settings: &WebSettings) -> bool {
        true
    }

    fn start<'a>(
        settings: &'a WebSettings,
        ctx: &'a FrontEndContext,
    ) -> LocalBoxFuture<'a, Result<WebViewer, WebError>> {
        Box::pin(start(settings, ctx))
    }

    fn describe(settings: &WebSettings, base_dir: &Path) -> String {
        let tls = match settings.tls_files(base_dir) {
            Some(f) => format!(
                "https and wss only, certificate {}, key {}",
                f.cert.display(),
                f.key.display()
            ),
            None => "off (http and ws)".into(),
        };
        format!("web viewer TLS: {tls}")
    }

    fn describe_robot(settings: &WebSettings, index: usize) -> Option<String> {
        let port = match settings.port_of(index) {
            _ if settings.viewer(index).shared => {
                "the first robot's port, topics under its name".into()
            }
            Some((p, true)) => format!("port {p}"),
            Some((p, false)) => format!("port {p} (default; skipped if busy)"),
            None => "off".into(),
        };
        Some(format!("web viewer: {port}"))
    }

    /// Each configured port, once: robots given the same port share one endpoint, and a
    /// default port is skipped when busy, so neither is a clash.
    fn ports(settings: &WebSettings, robots: &[RobotSettings]) -> Vec<ListenPort> {
        let mut out: Vec<ListenPort> = Vec::new();
        for (i, r) in robots.iter().enumerate() {
            let Some((port, explicit)) = settings.port_of(i) else {
                continue;
            };
            let taken = out.iter().any(|l| l.port == port);
            if explicit && !settings.viewer(i).shared && !taken {
                out.push(ListenPort {
                    robot: i,
                    port,
                    key: format!("robot[{i}].web_port"),
                    who: format!("robot '{}' web viewer", r.name),
                });
            }
        }
        out
    }

    /// The certificate and key, read and paired as the start would.
    fn check_files(
        settings: &WebSettings,
        base_dir: &Path,
        origin: &str,
    ) -> Result<(), SettingsError> {
        match settings.tls_files(base_dir).map(|f| f.load()) {
            Some(Err(e)) => Err(SettingsError::value(origin, e.key(), e.to_string())),
            _ => Ok(()),
        }
    }

    /// The `[web]` section; a robot's `web_port` is named with its robot.
    fn needs_restart(old: &WebSettings, new: &WebSettings) -> bool {
        (&old.tls_cert, &old.tls_key) != (&new.tls_cert, &new.tls_key)
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
/// robot whose port ([`WebSettings::port_of`]) it is, in configuration order; a robot whose
/// viewer is [`Viewer::shared`] is on the first robot's. Robots whose viewer is off are on
/// none.
pub fn endpoints_of(
    settings: &WebSettings,
    robots: &[RobotHandle],
) -> Vec<(u16, bool, Vec<usize>)> {
    let first = robots.first().and_then(|r| settings.port_of(r.index));
    let mut out: Vec<(u16, bool, Vec<usize>)> = Vec::new();
    for (i, r) in robots.iter().enumerate() {
        let target = if settings.viewer(r.index).shared {
            first
        } else {
            settings.port_of(r.index)
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
    for (port, explicit, members) in endpoints_of(settings, &ctx.robots) {
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
