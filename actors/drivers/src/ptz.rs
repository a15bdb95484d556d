//! The Sony EVI-D30 pan-tilt-zoom camera driver (`sonyptz`): the ptz device (`z`) over a
//! serial line speaking VISCA (docs/reference/sony-ptz.md).
//!
//! A link task owns the port. Setup succeeds once the camera answers a position inquiry
//! (else it fails naming the port). Then, ten times a second and at once when a client's
//! command changes, the task sends an absolute pan/tilt and a direct zoom when the command
//! differs from what was last sent (cancelling both sockets first if the camera says its
//! buffer is full), asks for the pan/tilt and zoom positions, and publishes them in the
//! manual's units (pan −100…100° counter-clockwise positive, so the camera's sign is
//! flipped; tilt −25…25°; zoom 0…1023). Every wait has a timeout; replies that cannot be
//! read are counted, logged and skipped. A camera that stops answering is reopened with
//! backoff. On shutdown the camera is recentred and zoomed out, as 0.7.4a does.

use actix::prelude::*;
use bytes::Bytes;
use codec::{Parser, Reply};
use player_devices::visca as codec;
use player_kit::catalog::{Catalog, DeviceFlag, DriverContext, FlagValue, StartedDriver};
use player_kit::driver::{Command, DeviceSpec, DriverError, Timestamp};
use player_kit::link::{
    self, close_channel, CloseReceiver, CloseSender, Commanded, Ended, LinkDriver, LinkError,
    LinkParts, LinkUp, LogThrottle, WRITE_TIMEOUT,
};
use player_proto::data::Ptz;
use player_proto::device;
use serde::Deserialize;
use slog::{debug, info, warn, Logger};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_serial::SerialStream;

/// Parameters of the `sonyptz` driver.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PtzParams {
    /// The serial port, e.g. `/dev/ttyS2`.
    pub port: String,
    /// Position readings per second.
    #[serde(default = "crate::params::ten")]
    pub rate: f64,
    /// Seconds to wait for each reply.
    #[serde(default = "crate::params::short_reply")]
    pub reply_timeout: f64,
    /// Seconds without any good reply after which the camera is reopened.
    #[serde(default = "crate::params::one")]
    pub silence: f64,
}

#[derive(Message)]
#[rtype(result = "()")]
struct PtzReading {
    ptz: Ptz,
    at: Timestamp,
}

/// What the actor keeps of a running link: the close request and the client's newest
/// target (pan, tilt, zoom in the manual's units).
type PtzLink = Commanded<CloseSender, (i16, i16, i16)>;

/// The Sony PTZ driver actor.
pub struct PtzDriver {
    params: PtzParams,
    parts: LinkParts<PtzLink>,
}

impl PtzDriver {
    fn new(ctx: &DriverContext) -> Result<PtzDriver, DriverError> {
        let params: PtzParams = ctx.params()?;
        crate::params::check_positive(
            "sonyptz",
            &[
                ("rate", params.rate, 100.0),
                ("reply_timeout", params.reply_timeout, 10.0),
                ("silence", params.silence, 60.0),
            ],
        )?;
        if ctx.devices != [device::PTZ] {
            return Err(DriverError::not_served(
                "the sonyptz driver serves exactly the ptz device 'z'",
            ));
        }
        let log = ctx.logger.new(slog::o!("port" => params.port.clone()));
        Ok(PtzDriver {
            params,
            parts: LinkParts::new("camera", ctx, log),
        })
    }
}

impl Actor for PtzDriver {
    type Context = Context<Self>;
}

impl LinkDriver for PtzDriver {
    type Handle = PtzLink;
    const DRIVER: &'static str = "sonyptz";
    const LINK: &'static str = "camera";

    fn parts(&mut self) -> &mut LinkParts<PtzLink> {
        &mut self.parts
    }
    fn start_link(&mut self, ctx: &mut Context<Self>) {
        let (close, close_rx) = close_channel();
        let (handle, target) = PtzLink::new(close, (0, 0, 0));
        let task = LinkTask {
            params: self.params.clone(),
            log: self.parts.task_log(),
            readings: ctx.address().recipient(),
            target,
        };
        self.parts.start(handle, close_rx, task);
    }
    fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
        if let (Some(link), Ok(z)) = (self.parts.link.handle(), Ptz::decode(&msg.payload)) {
            let _ = link.command.send((z.pan, z.tilt, z.zoom));
        }
    }
}

player_kit::link_driver_handlers!(PtzDriver);

impl Handler<PtzReading> for PtzDriver {
    type Result = ();

    fn handle(&mut self, msg: PtzReading, _ctx: &mut Self::Context) {
        self.parts
            .publisher
            .publish_at(device::PTZ, Bytes::from(msg.ptz.encode()), msg.at);
    }
}

struct LinkTask {
    params: PtzParams,
    log: Logger,
    readings: Recipient<PtzReading>,
    target: watch::Receiver<(i16, i16, i16)>,
}

struct Conn {
    port: SerialStream,
    parser: Parser,
    /// Camera units last commanded: (pan, tilt), zoom.
    sent_pt: Option<(i16, i16)>,
    sent_zoom: Option<i16>,
    busy: [bool; 2],
    last_good: Instant,
    bad: LogThrottle,
    junk_seen: u64,
}

enum Want {
    /// An ACK (or an error) for a command.
    Ack,
    /// An information reply with this many nibbles.
    Info(usize),
}

impl Conn {
    fn new(port: SerialStream) -> Conn {
        Conn {
            port,
            parser: Parser::new(),
            sent_pt: None,
            sent_zoom: None,
            busy: [false; 2],
            last_good: Instant::now(),
            bad: LogThrottle::default(),
            junk_seen: 0,
        }
    }

    /// Sends `packet` and waits for the wanted reply; `Ok(None)` on timeout.
    async fn exchange(
        &mut self,
        packet: &[u8],
        want: Want,
        timeout: Duration,
        log: &Logger,
    ) -> std::io::Result<Option<Reply>> {
        link::write_all(&mut self.port, packet, WRITE_TIMEOUT).await?;
        let take = |parser: &mut Parser| {
            while let Some(r) = parser.next_reply() {
                match r {
                    Ok(Reply::Completion(s)) => {
                        if let Some(b) = self.busy.get_mut(usize::from(s).wrapping_sub(1)) {
                            *b = false;
                        }
                    }
                    Ok(Reply::Ack(s)) if matches!(want, Want::Ack) => {
                        if let Some(b) = self.busy.get_mut(usize::from(s).wrapping_sub(1)) {
                            *b = true;
                        }
                        self.last_good = Instant::now();
                        return Some(Reply::Ack(s));
                    }
                    Ok(Reply::Error(s, code)) if matches!(want, Want::Ack) => {
                        self.last_good = Instant::now();
                        return Some(Reply::Error(s, code));
                    }
                    Ok(Reply::Info(d)) if matches!(want, Want::Info(n) if n == d.len()) => {
                        self.last_good = Instant::now();
                        return Some(Reply::Info(d));
                    }
                    Ok(other) => {
                        debug!(log, "camera reply not waited for"; "reply" => format!("{other:?}"));
                    }
                    Err(()) => {
                        if self.bad.hit() {
                            warn!(log, "unreadable camera reply skipped; resynchronising"; "bad_replies" => self.bad.count(), "junk_bytes" => parser.junk);
                        }
                    }
                }
            }
            if parser.junk > self.junk_seen {
                self.junk_seen = parser.junk;
                if self.bad.hit() {
                    warn!(log, "junk before a camera reply skipped"; "junk_bytes" => parser.junk);
                }
            }
            None
        };
        let (port, parser) = (&mut self.port, &mut self.parser);
        link::read_until(port, &mut [0u8; 64], timeout, parser, Parser::push, take).await
    }

    /// Sends a motion command; if the camera's two sockets are busy, cancels them and
    /// tries once more. True when the camera took it.
    async fn command(
        &mut self,
        packet: &[u8],
        timeout: Duration,
        log: &Logger,
    ) -> std::io::Result<bool> {
        for attempt in 0..2 {
            match self.exchange(packet, Want::Ack, timeout, log).await? {
                Some(Reply::Ack(_)) => return Ok(true),
                Some(Reply::Error(_, 3)) if attempt == 0 => {
                    debug!(log, "camera buffer full; cancelling both sockets");
                    for s in [1, 2] {
                        let _ = self
                            .exchange(&codec::cancel(s), Want::Ack, timeout, log)
                            .await?;
                        self.busy[usize::from(s) - 1] = false;
                    }
                }
                Some(Reply::Error(s, code)) => {
                    warn!(log, "camera refused a command"; "socket" => s, "code" => code);
                    return Ok(false);
                }
                _ => return Ok(false),
            }
        }
        Ok(false)
    }

    /// The camera's position in camera units, if it answers both inquiries.
    async fn position(
        &mut self,
        timeout: Duration,
        log: &Logger,
    ) -> std::io::Result<Option<(i16, i16, i16)>> {
        let Some(Reply::Info(pt)) = self
            .exchange(&codec::PAN_TILT_INQ, Want::Info(8), timeout, log)
            .await?
        else {
            return Ok(None);
        };
        let Some(Reply::Info(z)) = self
            .exchange(&codec::ZOOM_INQ, Want::Info(4), timeout, log)
            .await?
        else {
            return Ok(None);
        };
        Ok(Some((
            codec::from_nibbles(&pt[..4]),
            codec::from_nibbles(&pt[4..]),
            codec::from_nibbles(&z),
        )))
    }
}

impl link::Link for LinkTask {
    type Conn = (Conn, (i16, i16, i16));
    type Close = CloseReceiver;
    const NAME: &'static str = "camera";

    fn log(&self) -> &Logger {
        &self.log
    }

    async fn connect(&self, _ever_up: bool) -> Result<Self::Conn, LinkError> {
        connect(&self.params, &self.log).await
    }

    async fn serve(
        &mut self,
        (mut conn, first): Self::Conn,
        close: &mut CloseReceiver,
        mut up: LinkUp<'_>,
    ) -> Ended {
        self.publish(first);
        up.mark();
        self.stream(&mut conn, close).await
    }
}

impl LinkTask {
    fn publish(&self, cam: (i16, i16, i16)) {
        let (pan, tilt, zoom) = codec::from_camera(cam.0, cam.1, cam.2);
        self.readings.do_send(PtzReading {
            ptz: Ptz { pan, tilt, zoom },
            at: Timestamp::now(),
        });
    }

    /// Sends what changed, reads the position back, publishes it.
    async fn cycle(&mut self, conn: &mut Conn) -> std::io::Result<()> {
        let timeout = Duration::from_secs_f64(self.params.reply_timeout);
        let (pan, tilt, zoom) = *self.target.borrow_and_update();
        let (cp, ct, cz) = codec::to_camera(pan, tilt, zoom);
        if conn.sent_pt != Some((cp, ct))
            && conn
                .command(&codec::absolute_pan_tilt(cp, ct), timeout, &self.log)
                .await?
        {
            conn.sent_pt = Some((cp, ct));
        }
        if conn.sent_zoom != Some(cz)
            && conn
                .command(&codec::zoom_direct(cz), timeout, &self.log)
                .await?
        {
            conn.sent_zoom = Some(cz);
        }
        if let Some(cam) = conn.position(timeout, &self.log).await? {
            self.publish(cam);
        }
        Ok(())
    }

    async fn stream(&mut self, conn: &mut Conn, close: &mut CloseReceiver) -> Ended {
        let period = Duration::from_secs_f64(1.0 / self.params.rate);
        let silence = Duration::from_secs_f64(self.params.silence);
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                changed = self.target.changed() => {
                    if changed.is_err() {
                        return Ended::Closed;
                    }
                }
                ack = &mut *close => {
                    // Recentre and zoom out, as 0.7.4a does, then close.
                    let timeout = Duration::from_secs_f64(self.params.reply_timeout);
                    let _ = conn.command(&codec::absolute_pan_tilt(0, 0), timeout, &self.log).await;
                    let _ = conn.command(&codec::zoom_direct(0), timeout, &self.log).await;
                    info!(self.log, "camera recentred; port closed"; "bad_replies" => conn.bad.count());
                    return Ended::acknowledged(ack);
                }
            }
            if let Err(e) = self.cycle(conn).await {
                return Ended::Lost(LinkError::io(
                    &self.params.port,
                    &e,
                    format!("I/O error: {e}"),
                ));
            }
            if conn.last_good.elapsed() > silence {
                let why = format!(
                    "no answer for {:.1} s",
                    conn.last_good.elapsed().as_secs_f64()
                );
                return Ended::Lost(LinkError::timeout(&self.params.port, why));
            }
        }
    }
}

/// Opens the port and checks that a camera answers.
async fn connect(params: &PtzParams, log: &Logger) -> Result<(Conn, (i16, i16, i16)), LinkError> {
    let path = &params.port;
    let port = link::open_serial(path, 9600)?;
    let mut conn = Conn::new(port);
    let timeout = Duration::from_secs_f64(params.reply_timeout);
    for _ in 0..2 {
        match conn.position(timeout, log).await {
            Ok(Some(cam)) => {
                info!(log, "camera answers"; "pan_units" => cam.0, "tilt_units" => cam.1, "zoom" => cam.2);
                return Ok((conn, cam));
            }
            Ok(None) => {}
            Err(e) => return Err(LinkError::io(path, &e, format!("camera on {path}: {e}"))),
        }
    }
    Err(LinkError::timeout(
        path,
        format!("camera not connected or not on {path}: no answer to the position inquiry"),
    ))
}

/// Registers the `sonyptz` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.add_flag(DeviceFlag {
        flag: "-zp",
        driver: "sonyptz",
        devices: b"z",
        key: "port",
        value: FlagValue::Text,
    });
    catalog.register("sonyptz", |ctx: DriverContext| {
        let driver = PtzDriver::new(&ctx)?;
        Ok(StartedDriver::of(
            &driver.start(),
            vec![DeviceSpec::read_write(device::PTZ, Ptz::SIZE)],
        ))
    });
}
