//! The P2OS driver: a Pioneer 2 robot base over one serial line, serving the position
//! (`p`), sonar (`s`), misc (`m`) and gripper (`g`) devices as one actor (docs/reference/p2os.md), and
//! `P`, the position at the SIP's own precision, in the same batch as `p`.
//!
//! The actor keeps the devices' subscribers and the client's command; a link task on the
//! same arbiter owns the serial port. The link task opens the port, synchronises (SYNC0,
//! SYNC1, SYNC2, closing first a robot left open by an earlier server), sends OPEN (and
//! ENABLE when `motors_on` is set), and then, for every SIP the robot sends (10 Hz), turns
//! it into the four devices' data and answers with one motor command, which is also the
//! watchdog keep-alive. A changed command goes out at once as well. Configs (motor power,
//! velocity mode, odometry reset) are applied in the order they come. A robot that goes
//! quiet (no SIP for `silence` seconds) or a port that fails is reopened with backoff while
//! the other devices and clients carry on; the setup of the first device succeeds only
//! once the robot answers, and fails with a message naming the port if it does not. On
//! shutdown of the last device (or server exit) the link sends STOP and CLOSE and closes
//! the port.

use actix::prelude::*;
use bytes::Bytes;
use codec::{Identity, Parser, Readings, SeparateMode, Sip, SipState};
use player_devices::p2os as codec;
use player_kit::catalog::{Catalog, DeviceFlag, DriverContext, FlagValue, StartedDriver};
use player_kit::driver::{Command, Config, DeviceSpec, DriverError, Stop, Timestamp};
use player_kit::link::{
    self, CloseAck, Commanded, Ended, Incoming, LinkDriver, LinkError, LinkHandle, LinkParts,
    LinkUp, LogThrottle, Request, RequestReceiver, RequestSender, WRITE_TIMEOUT,
};
use player_proto::data::{GripperCommand, PositionCommand};
use player_proto::{config as codes, device};
use serde::Deserialize;
use slog::{debug, info, warn, Logger};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_serial::SerialStream;

/// The devices served over the P2OS link.
pub const DEVICES: [u8; 4] = [
    device::POSITION,
    device::SONAR,
    device::MISC,
    device::GRIPPER,
];

/// Parameters of the `p2os` driver (`[robot.driver.params]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2osParams {
    /// The serial port, e.g. `/dev/ttyS0`.
    pub port: String,
    /// Send ENABLE 1 when the link opens (P2OS starts with the motors off; 0.7.4a leaves
    /// them off until a client's motor power config or the MOTORS button).
    #[serde(default)]
    pub motors_on: bool,
    /// Seconds without a SIP after which the robot is taken for lost and reopened.
    #[serde(default = "crate::params::one")]
    pub silence: f64,
    /// Seconds to wait for each SYNC echo.
    #[serde(default = "crate::params::short_reply")]
    pub sync_timeout: f64,
}

/// The client's command, newest wins.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Motion {
    speed: i16,
    turn: i16,
    gripper: Option<(u8, u8)>,
    gripper_seq: u64,
}

/// Requests to the link task, applied in order.
#[derive(Debug)]
enum Ctl {
    MotorPower(bool),
    VelocityMode(bool),
    ResetOdometry,
    Stop,
}

impl Request for Ctl {
    /// Configs and stops while the robot is away have nothing to apply to.
    fn dropped(self, log: &Logger) {
        debug!(log, "robot away; dropped"; "request" => format!("{self:?}"))
    }
}

/// A SIP's readings, from the link task to the actor.
#[derive(Message)]
#[rtype(result = "()")]
struct SipReadings {
    readings: Readings,
    at: Timestamp,
}

/// What the actor keeps of a running link: the requests (the close request goes through
/// them like every other request, so it is applied after the configs sent before it) and
/// the client's command.
pub struct P2osLink(Commanded<RequestSender<Ctl>, Motion>);

impl LinkHandle for P2osLink {
    fn request_close(&mut self, ack: CloseAck) -> bool {
        self.0.request_close(ack)
    }
}

/// The P2OS driver actor.
pub struct P2osDriver {
    params: P2osParams,
    parts: LinkParts<P2osLink>,
    started: Instant,
    gripper_seq: u64,
}

impl P2osDriver {
    fn new(ctx: &DriverContext) -> Result<P2osDriver, DriverError> {
        let params: P2osParams = ctx.params()?;
        crate::params::check_seconds("p2os", 60.0, &[("silence", params.silence)])?;
        crate::params::check_seconds("p2os", 10.0, &[("sync_timeout", params.sync_timeout)])?;
        for &d in &ctx.devices {
            if !DEVICES.contains(&d) && d != device::PRECISE_ODOMETRY {
                return Err(DriverError::not_served(format!(
                    "the p2os driver has no device '{}' (it serves p, s, m, g and P)",
                    char::from(d)
                )));
            }
        }
        let log = ctx.logger.new(slog::o!("port" => params.port.clone()));
        Ok(P2osDriver {
            params,
            parts: LinkParts::new("P2OS", ctx, log),
            started: ctx.started,
            gripper_seq: 0,
        })
    }

    fn specs(&self) -> Vec<DeviceSpec> {
        self.parts
            .devices
            .iter()
            .map(|&d| match d {
                device::POSITION => DeviceSpec::moving(d, PositionCommand::SIZE),
                device::GRIPPER => DeviceSpec::read_write(d, GripperCommand::SIZE),
                _ => DeviceSpec::read_only(d),
            })
            .collect()
    }
}

impl Actor for P2osDriver {
    type Context = Context<Self>;
}

impl LinkDriver for P2osDriver {
    type Handle = P2osLink;
    const DRIVER: &'static str = "p2os";
    const LINK: &'static str = "robot";

    fn parts(&mut self) -> &mut LinkParts<P2osLink> {
        &mut self.parts
    }
    // The default device_down: the robot stops and the port closes when the last of its
    // devices is shut down.
    fn start_link(&mut self, ctx: &mut Context<Self>) {
        // A fresh link: no command left over from an earlier session.
        let (ctl, ctl_rx) = link::request_channel(self.parts.log.clone());
        let (handle, motion) = Commanded::new(ctl, Motion::default());
        let task = LinkTask {
            params: self.params.clone(),
            log: self.parts.task_log(),
            readings: ctx.address().recipient(),
            motion,
        };
        self.parts.start(P2osLink(handle), ctl_rx, task);
    }
    /// Only a link that reports failed is dropped: another device may be waiting on it.
    fn drop_on_setup_error(&mut self) -> bool {
        false
    }
    fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
        let Some(P2osLink(link)) = self.parts.link.handle() else {
            return;
        };
        match msg.device {
            device::POSITION => {
                if let Ok(c) = PositionCommand::decode(&msg.payload) {
                    link.command.send_modify(|m| {
                        m.speed = c.speed;
                        m.turn = c.turn_rate;
                    });
                }
            }
            device::GRIPPER => {
                if let Ok(g) = GripperCommand::decode(&msg.payload) {
                    self.gripper_seq += 1;
                    let seq = self.gripper_seq;
                    link.command.send_modify(|m| {
                        m.gripper = Some((g.command, g.arg));
                        m.gripper_seq = seq;
                    });
                }
            }
            _ => {}
        }
    }
    fn config(&mut self, msg: Config, _ctx: &mut Context<Self>) {
        let Some((&code, args)) = msg.payload.split_first() else {
            return;
        };
        let ctl = match (code, args.len()) {
            (codes::MOTOR_POWER, 1) => Ctl::MotorPower(args[0] != 0),
            (codes::VELOCITY_MODE, 1) => Ctl::VelocityMode(args[0] != 0),
            (codes::RESET_ODOMETRY, 0) => Ctl::ResetOdometry,
            _ => {
                warn!(self.parts.log, "config ignored: unknown code or wrong size"; "device" => player_kit::log::device(msg.device), "code" => format!("{code:#04x}"), "size" => msg.payload.len(), "client" => &msg.client);
                return;
            }
        };
        let hint = "open position, sonar, misc or gripper first";
        self.parts
            .send_config(&msg, ctl, hint, |P2osLink(link)| &link.handle);
    }
    fn stop(&mut self, msg: Stop, _ctx: &mut Context<Self>) {
        if msg.device != device::POSITION {
            return;
        }
        if let Some(P2osLink(link)) = self.parts.link.handle() {
            link.command.send_modify(|m| {
                m.speed = 0;
                m.turn = 0;
            });
            link.handle.send(Ctl::Stop);
            info!(self.parts.log, "robot stopped"; "reason" => %msg.reason, "client" => &*msg.client);
        }
    }
}

player_kit::link_driver_handlers!(P2osDriver);

impl Handler<SipReadings> for P2osDriver {
    type Result = ();

    fn handle(&mut self, msg: SipReadings, _ctx: &mut Self::Context) {
        let r = msg.readings;
        let mut position = r.position;
        position.time = self.started.elapsed().as_millis() as u32;
        let mut odometry = r.odometry;
        odometry.time = position.time;
        // One SIP, one instant: the four readings go to each session as one batch.
        let readings = self
            .parts
            .devices
            .iter()
            .map(|&d| {
                let data = match d {
                    device::POSITION => position.encode(),
                    device::PRECISE_ODOMETRY => odometry.encode(),
                    device::SONAR => r.sonar.encode(),
                    device::MISC => r.misc.encode(),
                    _ => r.gripper.encode(),
                };
                (d, Bytes::from(data))
            })
            .collect();
        self.parts.publisher.publish_batch(readings, msg.at);
    }
}

struct LinkTask {
    params: P2osParams,
    log: Logger,
    readings: Recipient<SipReadings>,
    motion: watch::Receiver<Motion>,
}

/// The link task's end of the requests.
type CtlReceiver = RequestReceiver<Ctl>;

/// The per-connection state of the link.
struct Conn {
    port: SerialStream,
    parser: Parser,
    sip: SipState,
    separate: Option<SeparateMode>,
    last_gripper_seq: u64,
    last_motion: (i16, i16),
    bad: LogThrottle,
    foreign: LogThrottle,
}

enum Echo {
    Got(Vec<u8>),
    SawSip,
    Timeout,
}

impl link::Link for LinkTask {
    type Conn = (SerialStream, Parser, Identity, Sip);
    type Close = CtlReceiver;
    const NAME: &'static str = "robot";

    fn log(&self) -> &Logger {
        &self.log
    }

    async fn connect(&self, _ever_up: bool) -> Result<Self::Conn, LinkError> {
        connect(&self.params, &self.log).await
    }

    async fn serve(
        &mut self,
        (port, parser, identity, first): Self::Conn,
        ctl: &mut CtlReceiver,
        mut up: LinkUp<'_>,
    ) -> Ended {
        info!(self.log, "connected to the robot"; "name" => &identity.name, "class" => &identity.class, "subclass" => &identity.subclass);
        let mut conn = Conn {
            port,
            parser,
            sip: SipState::new(),
            separate: None,
            last_gripper_seq: self.motion.borrow().gripper_seq,
            last_motion: (0, 0),
            bad: LogThrottle::default(),
            foreign: LogThrottle::default(),
        };
        self.publish(&mut conn, &first);
        up.mark();
        self.stream(&mut conn, ctl).await
    }
}

impl LinkTask {
    fn publish(&self, conn: &mut Conn, sip: &Sip) {
        let readings = conn.sip.apply(sip);
        self.readings.do_send(SipReadings {
            readings,
            at: Timestamp::now(),
        });
    }

    fn motion_packet(&self, conn: &mut Conn) -> Vec<u8> {
        let m = *self.motion.borrow();
        conn.last_motion = (m.speed, m.turn);
        match &mut conn.separate {
            Some(sep) => sep.next(m.speed, m.turn),
            None => {
                let (r, l) = codec::wheel_units(m.speed, m.turn);
                codec::vel2(r, l)
            }
        }
    }

    async fn stream(&mut self, conn: &mut Conn, ctl: &mut CtlReceiver) -> Ended {
        let silence = Duration::from_secs_f64(self.params.silence);
        let mut last_sip = Instant::now();
        let mut buf = [0u8; 512];
        loop {
            let deadline = tokio::time::Instant::from_std(last_sip + silence);
            tokio::select! {
                r = link::read_served(&mut conn.port, &mut buf, &self.params.port, "port") => {
                    let n = match r {
                        Ok(n) => n,
                        Err(e) => return Ended::Lost(e),
                    };
                    conn.parser.push(&buf[..n]);
                    let mut got_sip = false;
                    while let Some(p) = conn.parser.next_packet() {
                        match p {
                            Ok(payload) if Sip::is_sip(&payload) => match Sip::parse(&payload) {
                                Ok(sip) => {
                                    self.publish(conn, &sip);
                                    got_sip = true;
                                }
                                Err(e) => {
                                    if conn.bad.hit() {
                                        warn!(self.log, "bad SIP skipped"; "error" => %e, "bad_frames" => conn.bad.count());
                                    }
                                }
                            },
                            Ok(payload) => {
                                if conn.foreign.hit() {
                                    debug!(self.log, "non-SIP packet ignored"; "type" => payload.first().copied().unwrap_or(0));
                                }
                            }
                            Err(e) => {
                                if conn.bad.hit() {
                                    warn!(self.log, "corrupt packet skipped; resynchronising on the header"; "error" => %e, "bad_frames" => conn.bad.count(), "junk_bytes" => conn.parser.junk);
                                }
                            }
                        }
                    }
                    if got_sip {
                        last_sip = Instant::now();
                        // One motor command per cycle: also the watchdog keep-alive.
                        let pkt = self.motion_packet(conn);
                        if let Err(e) = link::write_all(&mut conn.port, &pkt, WRITE_TIMEOUT).await {
                            return Ended::Lost(LinkError::io(&self.params.port, &e, format!("write failed: {e}")));
                        }
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    let why = format!("no SIP for {:.1} s", silence.as_secs_f64());
                    return Ended::Lost(LinkError::timeout(&self.params.port, why));
                }
                changed = self.motion.changed() => {
                    if changed.is_err() {
                        return self.close(conn).await;
                    }
                    let m = *self.motion.borrow_and_update();
                    let mut out = Vec::new();
                    if m.gripper_seq != conn.last_gripper_seq {
                        conn.last_gripper_seq = m.gripper_seq;
                        if let Some((cmd, arg)) = m.gripper {
                            for p in codec::gripper_packets(cmd, arg) {
                                out.extend_from_slice(&p);
                            }
                        }
                    }
                    if (m.speed, m.turn) != conn.last_motion {
                        out.extend_from_slice(&self.motion_packet(conn));
                    }
                    if !out.is_empty() {
                        if let Err(e) = link::write_all(&mut conn.port, &out, WRITE_TIMEOUT).await {
                            return Ended::Lost(LinkError::io(&self.params.port, &e, format!("write failed: {e}")));
                        }
                    }
                }
                c = ctl.recv() => {
                    let pkt = match c {
                        None => return self.close(conn).await,
                        Some(Incoming::Close(ack)) => {
                            let r = self.close(conn).await;
                            let _ = ack.send(());
                            return r;
                        }
                        Some(Incoming::Request(Ctl::MotorPower(on))) => codec::command_int(codec::ENABLE, i32::from(on)),
                        Some(Incoming::Request(Ctl::VelocityMode(separate))) => {
                            conn.separate = separate.then(SeparateMode::new);
                            continue;
                        }
                        Some(Incoming::Request(Ctl::ResetOdometry)) => {
                            conn.sip.reset_odometry();
                            codec::seto()
                        }
                        Some(Incoming::Request(Ctl::Stop)) => {
                            conn.last_motion = (0, 0);
                            codec::command(codec::STOP)
                        }
                    };
                    if let Err(e) = link::write_all(&mut conn.port, &pkt, WRITE_TIMEOUT).await {
                        return Ended::Lost(LinkError::io(&self.params.port, &e, format!("write failed: {e}")));
                    }
                }
            }
        }
    }

    /// STOP, CLOSE, drain, and the port closes when `conn` is dropped.
    async fn close(&mut self, conn: &mut Conn) -> Ended {
        let mut out = codec::command(codec::STOP);
        out.extend_from_slice(&codec::command(codec::CLOSE));
        match link::write_flushed(&mut conn.port, &out).await {
            Ok(()) => {
                info!(self.log, "robot stopped and link closed"; "bad_frames" => conn.bad.count())
            }
            Err(e) => warn!(self.log, "could not send STOP and CLOSE"; "error" => %e),
        }
        Ended::Closed
    }
}

/// Waits up to `timeout` for a packet starting with `code` (skipping anything else).
async fn expect(
    port: &mut SerialStream,
    parser: &mut Parser,
    code: u8,
    timeout: Duration,
) -> std::io::Result<Echo> {
    let mut saw_sip = false;
    let echo = link::read_until(
        port,
        &mut [0u8; 256],
        timeout,
        parser,
        Parser::push,
        |parser| {
            while let Some(p) = parser.next_packet() {
                if let Ok(payload) = p {
                    if Sip::is_sip(&payload) {
                        saw_sip = true;
                    } else if payload.first() == Some(&code) {
                        return Some(payload);
                    }
                }
            }
            None
        },
    )
    .await?;
    Ok(match echo {
        Some(payload) => Echo::Got(payload),
        None if saw_sip => Echo::SawSip,
        None => Echo::Timeout,
    })
}

/// Opens the port and brings the robot up: sync, OPEN, ENABLE (if configured), first SIP.
async fn connect(
    params: &P2osParams,
    log: &Logger,
) -> Result<(SerialStream, Parser, Identity, Sip), LinkError> {
    let path = &params.port;
    let mut port = link::open_serial(path, 9600)?;
    let mut parser = Parser::new();
    let step = Duration::from_secs_f64(params.sync_timeout);
    let w = |e: std::io::Error| LinkError::io(path, &e, format!("writing to {path}: {e}"));
    let mut identity = None;
    let mut closed_open_robot = false;
    'attempts: for _ in 0..4 {
        for code in [codec::SYNC0, codec::SYNC1, codec::SYNC2] {
            link::write_all(&mut port, &codec::command(code), WRITE_TIMEOUT)
                .await
                .map_err(w)?;
            match expect(&mut port, &mut parser, code, step)
                .await
                .map_err(|e| LinkError::io(path, &e, format!("reading from {path}: {e}")))?
            {
                Echo::Got(payload) => {
                    if code == codec::SYNC2 {
                        identity = Some(Identity::parse(&payload));
                        break 'attempts;
                    }
                }
                Echo::SawSip => {
                    // A robot left open by an earlier server: close it and sync again.
                    if !closed_open_robot {
                        info!(
                            log,
                            "robot still open from an earlier connection; closing it first"
                        );
                    }
                    closed_open_robot = true;
                    link::write_all(&mut port, &codec::command(codec::CLOSE), WRITE_TIMEOUT)
                        .await
                        .map_err(w)?;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    link::flush_input(&port);
                    parser.clear();
                    continue 'attempts;
                }
                Echo::Timeout => continue 'attempts,
            }
        }
    }
    let Some(identity) = identity else {
        return Err(LinkError::timeout(
            path,
            format!(
                "no P2OS robot answers on {path} (no SYNC echo); is the robot on and connected?"
            ),
        ));
    };
    let mut out = codec::command(codec::OPEN);
    out.extend_from_slice(&codec::command(codec::PULSE));
    if params.motors_on {
        out.extend_from_slice(&codec::command_int(codec::ENABLE, 1));
    }
    link::write_all(&mut port, &out, WRITE_TIMEOUT)
        .await
        .map_err(w)?;
    // The first SIP: a robot that synced but sends nothing is not usable.
    let patience = Duration::from_secs_f64(params.silence.max(0.5));
    let first = link::read_until(
        &mut port,
        &mut [0u8; 256],
        patience,
        &mut parser,
        Parser::push,
        |parser| {
            std::iter::from_fn(|| parser.next_packet())
                .find_map(|p| p.ok().and_then(|payload| Sip::parse(&payload).ok()))
        },
    )
    .await
    .map_err(|e| LinkError::io(path, &e, format!("reading from {path}: {e}")))?;
    match first {
        Some(sip) => Ok((port, parser, identity, sip)),
        None => Err(LinkError::timeout(
            path,
            format!("the robot on {path} synced but sends no SIPs"),
        )),
    }
}

/// Registers the `p2os` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.add_flag(DeviceFlag {
        flag: "-pp",
        driver: "p2os",
        devices: b"psmg",
        key: "port",
        value: FlagValue::Text,
    });
    catalog.register("p2os", |ctx: DriverContext| {
        let driver = P2osDriver::new(&ctx)?;
        let devices = driver.specs();
        Ok(StartedDriver::of(&driver.start(), devices))
    });
}
