//! The ACTS colour-vision driver (`acts`): the vision device (`v`) fed by an ACTS server
//! over TCP (acts.md).
//!
//! A link task connects to ACTS at `host:port` (retrying every 100 ms for up to
//! `connect_timeout` seconds, since ACTS may still be starting), optionally starting ACTS
//! itself first (`program`, run as `program -t <config> -s <port>`). It then loops: send
//! `'0'`, read the 64-byte header exactly (with a timeout), check it (no count byte of 0,
//! at most 10 blobs a channel) before reading the blobs exactly, and publish the packet
//! unchanged as the manual says. A refused header is counted, logged and skipped (the
//! connection is reopened, since the byte stream can no longer be trusted); a silent or
//! closed connection is reopened with backoff. On shutdown it sends `'1'` (quit), closes,
//! and stops the ACTS process it started.
//!
//! The port is dialled as given: 0.7.4a's unswapped-port quirk (5001 dialled as 35091) is
//! not reproduced; give `-vp 35091` for an ACTS that listens there.

pub mod codec;
pub mod emulator;

use crate::actors::link::{
    close_channel, Backoff, CloseReceiver, LinkState, LinkSupervisor, LogThrottle,
};
use crate::catalog::{Catalog, DriverContext, StartedDriver};
use crate::driver::{
    Command, Config, DeviceSpec, DriverError, DriverHandle, Publisher, Setup, Shutdown, Stop,
    Subscribers, Terminate, Timestamp,
};
use actix::prelude::*;
use bytes::Bytes;
use player_proto::data::ACTS_HEADER;
use player_proto::device;
use serde::Deserialize;
use slog::{debug, info, warn, Logger};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// Parameters of the `acts` driver (`-vp` gives `port`, `-vc` gives `config`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActsParams {
    /// The TCP port ACTS listens on.
    #[serde(default = "default_port")]
    pub port: u16,
    /// The host ACTS runs on.
    #[serde(default = "localhost")]
    pub host: String,
    /// The ACTS configuration file (passed to `program` with `-t`).
    #[serde(default)]
    pub config: Option<String>,
    /// If set, the ACTS program to start (found through `PATH`) before connecting.
    #[serde(default)]
    pub program: Option<String>,
    /// Seconds to keep retrying the first connection.
    #[serde(default = "five")]
    pub connect_timeout: f64,
    /// Seconds to wait for a packet before the connection is taken for lost.
    #[serde(default = "one")]
    pub silence: f64,
}

fn default_port() -> u16 {
    5001
}
fn localhost() -> String {
    "127.0.0.1".into()
}
fn five() -> f64 {
    5.0
}
fn one() -> f64 {
    1.0
}

#[derive(Message)]
#[rtype(result = "()")]
struct Packet {
    data: Bytes,
    at: Timestamp,
}

/// The ACTS driver actor.
pub struct ActsDriver {
    params: ActsParams,
    config_path: Option<String>,
    publisher: Publisher,
    link: LinkSupervisor,
    log: Logger,
}

impl ActsDriver {
    fn new(ctx: &DriverContext) -> Result<ActsDriver, DriverError> {
        let params: ActsParams = ctx.params()?;
        for (name, v) in [
            ("connect_timeout", params.connect_timeout),
            ("silence", params.silence),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= 600.0) {
                return Err(DriverError(format!(
                    "acts parameter {name} = {v}: must be between 0 and 600 s"
                )));
            }
        }
        if ctx.devices != [device::VISION] {
            return Err(DriverError(
                "the acts driver serves exactly the vision device 'v'".into(),
            ));
        }
        let config_path = params
            .config
            .as_deref()
            .map(|c| ctx.path(c).to_string_lossy().into_owned());
        let log = ctx
            .logger
            .new(slog::o!("acts" => format!("{}:{}", params.host, params.port)));
        Ok(ActsDriver {
            params,
            config_path,
            publisher: Publisher::new(),
            link: LinkSupervisor::new("ACTS").report_to(ctx.status.clone(), ctx.devices.clone()),
            log,
        })
    }

    fn start_link(&mut self, ctx: &mut Context<Self>) {
        let (close, close_rx) = close_channel();
        self.link.start(close, |state| {
            LinkTask {
                params: self.params.clone(),
                config_path: self.config_path.clone(),
                log: self.log.clone(),
                packets: ctx.address().recipient(),
                close: close_rx,
                state,
                child: None,
            }
            .run()
        });
    }
}

impl Actor for ActsDriver {
    type Context = Context<Self>;
}

impl Handler<Setup> for ActsDriver {
    type Result = ResponseActFuture<Self, Result<(), DriverError>>;

    fn handle(&mut self, msg: Setup, ctx: &mut Self::Context) -> Self::Result {
        if msg.device != device::VISION {
            let e = DriverError(format!(
                "the acts driver does not serve '{}'",
                char::from(msg.device)
            ));
            return Box::pin(actix::fut::ready(Err(e)));
        }
        if !self.link.is_running() {
            self.start_link(ctx);
        }
        let wait = self.link.wait_ready();
        Box::pin(wait.into_actor(self).map(|res, act, _| {
            if let Err(e) = &res {
                warn!(act.log, "vision setup failed"; "error" => %e);
                act.link.abandon();
            }
            res
        }))
    }
}

impl Handler<Shutdown> for ActsDriver {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: Shutdown, _ctx: &mut Self::Context) -> Self::Result {
        self.publisher.clear(device::VISION);
        let close = self.link.close();
        Box::pin(close.into_actor(self))
    }
}

impl Handler<Command> for ActsDriver {
    type Result = ();

    fn handle(&mut self, _msg: Command, _ctx: &mut Self::Context) {}
}

impl Handler<Config> for ActsDriver {
    type Result = ();

    fn handle(&mut self, msg: Config, _ctx: &mut Self::Context) {
        info!(self.log, "config ignored: vision takes no configs"; "client" => &msg.client);
    }
}

impl Handler<Stop> for ActsDriver {
    type Result = ();

    fn handle(&mut self, _msg: Stop, _ctx: &mut Self::Context) {}
}

impl Handler<Subscribers> for ActsDriver {
    type Result = ();

    fn handle(&mut self, msg: Subscribers, _ctx: &mut Self::Context) {
        self.publisher.set_subscribers(msg);
    }
}

impl Handler<Packet> for ActsDriver {
    type Result = ();

    fn handle(&mut self, msg: Packet, _ctx: &mut Self::Context) {
        self.publisher.publish_at(device::VISION, msg.data, msg.at);
    }
}

impl Handler<Terminate> for ActsDriver {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: Terminate, _ctx: &mut Self::Context) -> Self::Result {
        let close = self.link.close();
        Box::pin(close.into_actor(self).map(|_, act, ctx| {
            info!(act.log, "acts driver stopped");
            ctx.stop();
        }))
    }
}

struct LinkTask {
    params: ActsParams,
    config_path: Option<String>,
    log: Logger,
    packets: Recipient<Packet>,
    close: CloseReceiver,
    state: watch::Sender<LinkState>,
    child: Option<std::process::Child>,
}

enum Ended {
    Closed,
    Lost(String),
}

async fn read_exact_within(s: &mut TcpStream, buf: &mut [u8], t: Duration) -> Result<(), String> {
    match tokio::time::timeout(t, s.read_exact(buf)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("read failed: {e}")),
        Err(_) => Err(format!("no packet within {:.1} s", t.as_secs_f64())),
    }
}

impl LinkTask {
    fn spawn_acts(&mut self) -> Result<(), String> {
        let Some(program) = &self.params.program else {
            return Ok(());
        };
        let mut cmd = std::process::Command::new(program);
        if let Some(c) = &self.config_path {
            cmd.arg("-t").arg(c);
        }
        cmd.arg("-s").arg(self.params.port.to_string());
        let child = cmd
            .spawn()
            .map_err(|e| format!("cannot start ACTS program '{program}': {e}"))?;
        info!(self.log, "started ACTS"; "program" => program, "pid" => child.id());
        self.child = Some(child);
        Ok(())
    }
}

async fn connect(host: &str, port: u16, patience: Duration) -> Result<TcpStream, String> {
    let addr = format!("{host}:{port}");
    let deadline = Instant::now() + patience;
    loop {
        match TcpStream::connect(&addr).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) if Instant::now() >= deadline => {
                return Err(format!("cannot connect to ACTS at {addr}: {e}"));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

impl LinkTask {
    async fn run(mut self) {
        if let Err(e) = self.spawn_acts() {
            let _ = self.state.send(LinkState::Failed(e));
            return;
        }
        let mut backoff = Backoff::default();
        let mut ever_up = false;
        let mut bad = LogThrottle::default();
        loop {
            let patience = if ever_up {
                Duration::from_millis(100)
            } else {
                Duration::from_secs_f64(self.params.connect_timeout)
            };
            let result = tokio::select! {
                r = connect(&self.params.host, self.params.port, patience) => r,
                ack = &mut self.close => {
                    self.stop_child().await;
                    if let Ok(ack) = ack { let _ = ack.send(()); }
                    return;
                }
            };
            match result {
                Ok(mut s) => {
                    info!(self.log, "connected to ACTS");
                    match self.serve(&mut s, &mut ever_up, &mut bad).await {
                        Ended::Closed => return,
                        Ended::Lost(why) => {
                            if ever_up {
                                warn!(self.log, "ACTS link lost; reconnecting with backoff"; "why" => why);
                                let _ = self.state.send(LinkState::Reconnecting);
                            } else {
                                let _ = self.state.send(LinkState::Failed(why));
                                self.stop_child().await;
                                return;
                            }
                        }
                    }
                }
                Err(e) => {
                    if !ever_up {
                        let _ = self.state.send(LinkState::Failed(e));
                        self.stop_child().await;
                        return;
                    }
                    debug!(self.log, "ACTS reconnect failed"; "error" => e);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff.next_delay()) => {}
                ack = &mut self.close => {
                    self.stop_child().await;
                    if let Ok(ack) = ack { let _ = ack.send(()); }
                    return;
                }
            }
        }
    }

    async fn stop_child(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            // Reap it off the arbiter's thread.
            std::thread::spawn(move || child.wait());
        }
    }
}

/// One request/reply exchange: the whole packet, checked.
async fn exchange(
    s: &mut TcpStream,
    bad: &mut LogThrottle,
    t: Duration,
    log: &Logger,
) -> Result<Bytes, String> {
    s.write_all(&[codec::REQUEST])
        .await
        .map_err(|e| format!("write failed: {e}"))?;
    let mut header = [0u8; ACTS_HEADER];
    read_exact_within(s, &mut header, t).await?;
    let n = match codec::blob_bytes(&header) {
        Ok(n) => n,
        Err(e) => {
            if bad.hit() {
                warn!(log, "bad ACTS header skipped; reconnecting"; "error" => %e, "bad_packets" => bad.count());
            }
            return Err(format!("bad header: {e}"));
        }
    };
    let mut packet = vec![0u8; ACTS_HEADER + n];
    packet[..ACTS_HEADER].copy_from_slice(&header);
    read_exact_within(s, &mut packet[ACTS_HEADER..], t).await?;
    Ok(Bytes::from(packet))
}

impl LinkTask {
    async fn serve(
        &mut self,
        s: &mut TcpStream,
        ever_up: &mut bool,
        bad: &mut LogThrottle,
    ) -> Ended {
        let silence = Duration::from_secs_f64(self.params.silence);
        loop {
            let r = tokio::select! {
                r = exchange(s, bad, silence, &self.log) => r,
                ack = &mut self.close => {
                    let _ = tokio::time::timeout(Duration::from_millis(500), s.write_all(&[codec::QUIT])).await;
                    let _ = s.shutdown().await;
                    self.stop_child().await;
                    info!(self.log, "sent quit to ACTS; connection closed");
                    if let Ok(ack) = ack { let _ = ack.send(()); }
                    return Ended::Closed;
                }
            };
            match r {
                Ok(data) => {
                    self.packets.do_send(Packet {
                        data,
                        at: Timestamp::now(),
                    });
                    if !*ever_up {
                        *ever_up = true;
                        let _ = self.state.send(LinkState::Up);
                    }
                }
                Err(e) => return Ended::Lost(e),
            }
        }
    }
}

/// Registers the `acts` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("acts", |ctx: DriverContext| {
        let driver = ActsDriver::new(&ctx)?;
        let addr = driver.start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices: vec![DeviceSpec::read_only(device::VISION)],
        })
    });
}
