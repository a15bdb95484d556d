//! The ACTS colour-vision driver (`acts`): the vision device (`v`) fed by an ACTS server
//! over TCP (docs/reference/acts.md).
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

use actix::prelude::*;
use bytes::Bytes;
use player_devices::acts as codec;
use player_kit::catalog::{Catalog, DeviceFlag, DriverContext, FlagValue, StartedDriver};
use player_kit::driver::{DeviceSpec, DriverError, Timestamp};
use player_kit::link::{
    self, close_channel, CloseReceiver, CloseSender, Ended, LinkDriver, LinkError, LinkParts,
    LinkState, LinkUp, LogThrottle,
};
use player_proto::data::ACTS_HEADER;
use player_proto::device;
use serde::Deserialize;
use slog::{info, warn, Logger};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Parameters of the `acts` driver (`-vp` gives `port`, `-vc` gives `config`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActsParams {
    /// The TCP port ACTS listens on.
    #[serde(default = "default_port")]
    pub port: u16,
    /// The host ACTS runs on.
    #[serde(default = "crate::params::localhost")]
    pub host: String,
    /// The ACTS configuration file (passed to `program` with `-t`).
    #[serde(default)]
    pub config: Option<String>,
    /// If set, the ACTS program to start (found through `PATH`) before connecting.
    #[serde(default)]
    pub program: Option<String>,
    /// Seconds to keep retrying the first connection.
    #[serde(default = "crate::params::five")]
    pub connect_timeout: f64,
    /// Seconds to wait for a packet before the connection is taken for lost.
    #[serde(default = "crate::params::one")]
    pub silence: f64,
}

fn default_port() -> u16 {
    5001
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
    parts: LinkParts,
}

impl ActsDriver {
    fn new(ctx: &DriverContext) -> Result<ActsDriver, DriverError> {
        let params: ActsParams = ctx.params()?;
        crate::params::check_seconds(
            "acts",
            600.0,
            &[
                ("connect_timeout", params.connect_timeout),
                ("silence", params.silence),
            ],
        )?;
        if ctx.devices != [device::VISION] {
            return Err(DriverError::not_served(
                "the acts driver serves exactly the vision device 'v'",
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
            parts: LinkParts::new("ACTS", ctx, log),
        })
    }
}

impl Actor for ActsDriver {
    type Context = Context<Self>;
}

impl LinkDriver for ActsDriver {
    type Handle = CloseSender;
    const DRIVER: &'static str = "acts";
    const LINK: &'static str = "vision";

    fn parts(&mut self) -> &mut LinkParts {
        &mut self.parts
    }
    fn start_link(&mut self, ctx: &mut Context<Self>) {
        let (close, close_rx) = close_channel();
        let mut task = LinkTask {
            params: self.params.clone(),
            config_path: self.config_path.clone(),
            log: self.parts.task_log(),
            packets: ctx.address().recipient(),
            child: None,
            bad: LogThrottle::default(),
        };
        self.parts.link.start(close, |state| async move {
            if let Err(e) = task.spawn_acts() {
                let _ = state.send(LinkState::Failed(e));
                return;
            }
            link::run_link(task, close_rx, state).await
        });
    }
}

player_kit::link_driver_handlers!(ActsDriver);

impl Handler<Packet> for ActsDriver {
    type Result = ();

    fn handle(&mut self, msg: Packet, _ctx: &mut Self::Context) {
        self.parts
            .publisher
            .publish_at(device::VISION, msg.data, msg.at);
    }
}

struct LinkTask {
    params: ActsParams,
    config_path: Option<String>,
    log: Logger,
    packets: Recipient<Packet>,
    child: Option<std::process::Child>,
    /// Bad packets, over every connection.
    bad: LogThrottle,
}

async fn read_exact_within(
    s: &mut TcpStream,
    buf: &mut [u8],
    t: Duration,
    addr: &str,
) -> Result<(), LinkError> {
    match tokio::time::timeout(t, s.read_exact(buf)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(LinkError::io(addr, &e, format!("read failed: {e}"))),
        Err(_) => Err(LinkError::timeout(
            addr,
            format!("no packet within {:.1} s", t.as_secs_f64()),
        )),
    }
}

impl LinkTask {
    /// The ACTS server's address (`host:port`).
    fn addr(&self) -> String {
        format!("{}:{}", self.params.host, self.params.port)
    }

    fn spawn_acts(&mut self) -> Result<(), LinkError> {
        let Some(program) = &self.params.program else {
            return Ok(());
        };
        let mut cmd = std::process::Command::new(program);
        if let Some(c) = &self.config_path {
            cmd.arg("-t").arg(c);
        }
        cmd.arg("-s").arg(self.params.port.to_string());
        let child = cmd.spawn().map_err(|e| {
            let why = format!("cannot start ACTS program '{program}': {e}");
            LinkError::io(self.addr(), &e, why)
        })?;
        info!(self.log, "started ACTS"; "program" => program, "pid" => child.id());
        self.child = Some(child);
        Ok(())
    }
}

async fn connect(host: &str, port: u16, patience: Duration) -> Result<TcpStream, LinkError> {
    let addr = format!("{host}:{port}");
    let deadline = Instant::now() + patience;
    loop {
        match TcpStream::connect(&addr).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) if Instant::now() >= deadline => {
                let why = format!("cannot connect to ACTS at {addr}: {e}");
                return Err(LinkError::io(addr, &e, why));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

impl link::Link for LinkTask {
    type Conn = TcpStream;
    type Close = CloseReceiver;
    const NAME: &'static str = "ACTS";

    fn log(&self) -> &Logger {
        &self.log
    }

    async fn connect(&self, ever_up: bool) -> Result<TcpStream, LinkError> {
        let patience = if ever_up {
            Duration::from_millis(100)
        } else {
            Duration::from_secs_f64(self.params.connect_timeout)
        };
        connect(&self.params.host, self.params.port, patience).await
    }

    async fn serve(
        &mut self,
        mut s: TcpStream,
        close: &mut CloseReceiver,
        mut up: LinkUp<'_>,
    ) -> Ended {
        info!(self.log, "connected to ACTS");
        let silence = Duration::from_secs_f64(self.params.silence);
        let addr = self.addr();
        // Up on each connection's first packet (so a recovery is reported too).
        let mut answered = false;
        loop {
            let r = tokio::select! {
                r = exchange(&mut s, &mut self.bad, silence, &self.log, &addr) => r,
                ack = &mut *close => {
                    let _ = tokio::time::timeout(Duration::from_millis(500), s.write_all(&[codec::QUIT])).await;
                    let _ = s.shutdown().await;
                    self.stop_child().await;
                    info!(self.log, "sent quit to ACTS; connection closed");
                    return Ended::acknowledged(ack);
                }
            };
            match r {
                Ok(data) => {
                    self.packets.do_send(Packet {
                        data,
                        at: Timestamp::now(),
                    });
                    if !answered {
                        answered = true;
                        up.mark();
                    }
                }
                Err(e) => return Ended::Lost(e),
            }
        }
    }

    async fn finish(&mut self) {
        self.stop_child().await;
    }
}

impl LinkTask {
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
    addr: &str,
) -> Result<Bytes, LinkError> {
    s.write_all(&[codec::REQUEST])
        .await
        .map_err(|e| LinkError::io(addr, &e, format!("write failed: {e}")))?;
    let mut header = [0u8; ACTS_HEADER];
    read_exact_within(s, &mut header, t, addr).await?;
    let n = match codec::blob_bytes(&header) {
        Ok(n) => n,
        Err(e) => {
            if bad.hit() {
                warn!(log, "bad ACTS header skipped; reconnecting"; "error" => %e, "bad_packets" => bad.count());
            }
            return Err(LinkError::protocol(addr, format!("bad header: {e}")));
        }
    };
    let mut packet = vec![0u8; ACTS_HEADER + n];
    packet[..ACTS_HEADER].copy_from_slice(&header);
    read_exact_within(s, &mut packet[ACTS_HEADER..], t, addr).await?;
    Ok(Bytes::from(packet))
}

/// Registers the `acts` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.add_flag(DeviceFlag {
        flag: "-vp",
        driver: "acts",
        devices: b"v",
        key: "port",
        value: FlagValue::Port,
    });
    catalog.add_flag(DeviceFlag {
        flag: "-vc",
        driver: "acts",
        devices: b"v",
        key: "config",
        value: FlagValue::Text,
    });
    catalog.register("acts", |ctx: DriverContext| {
        let driver = ActsDriver::new(&ctx)?;
        Ok(StartedDriver::of(
            &driver.start(),
            vec![DeviceSpec::read_only(device::VISION)],
        ))
    });
}
