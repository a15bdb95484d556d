//! The iRobot Create 2 driver (`create`): the base over its Open Interface on a serial line,
//! serving the position (`p`, as the Pioneer's; `P` at full precision, in the same batch)
//! and misc (`m`: front bumpers, battery) devices; docs/hardware/create.md.
//!
//! A link task on the actor's arbiter owns the port. Setup: START, SAFE (or stay Passive if
//! a client turned the motors off), and a STREAM of the packets the driver needs (bumps and
//! wheel drops, cliffs, voltage, OI mode, both wheel encoders), every 15 ms; it succeeds on
//! the first good frame. Odometry is integrated from the encoder counts (not the OI's
//! distance and angle packets, which truncate). A command becomes DRIVE DIRECT wheel
//! speeds, sent when it changes and again every half second. A cliff or wheel drop stops
//! the base and is reported on the error channel until it clears. A base that stops
//! streaming (a reset, a battery change, a pulled cable) is reopened with backoff, and
//! START, SAFE and STREAM are sent again; a base that drops to Passive by itself (not for a
//! hazard) is put back in Safe mode. Watchdog, writer-left and e-stop stops zero the
//! wheels; shutdown and server exit send a stop, then the OI's STOP.

use actix::prelude::*;
use bytes::Bytes;
use codec::{Event, Odometry, Parser, Sensors};
use player_devices::create as codec;
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{
    Command, Config, DeviceSpec, DeviceState, DriverError, StatusSink, Stop, Timestamp,
};
use player_kit::link::{
    self, CloseAck, Commanded, Ended, Incoming, LinkDriver, LinkError, LinkHandle, LinkParts,
    LinkUp, LogThrottle, Request, RequestReceiver, RequestSender, WRITE_TIMEOUT,
};
use player_proto::data::{Misc, Position, PositionCommand};
use player_proto::{config as codes, device};
use serde::Deserialize;
use slog::{debug, info, warn, Logger};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_serial::SerialStream;

/// The devices the Create serves.
pub const DEVICES: [u8; 2] = [device::POSITION, device::MISC];

/// Parameters of the `create` driver.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateParams {
    /// The serial port, e.g. `/dev/ttyUSB0`.
    pub port: String,
    /// Line speed: 115200 for a Create 2 (19200 after its baud-rate button dance).
    #[serde(default = "crate::params::baud_115200")]
    pub baud: u32,
    /// Seconds without a sensor frame after which the base is taken for lost and reopened.
    #[serde(default = "silence")]
    pub silence: f64,
}

fn silence() -> f64 {
    0.5
}

/// Requests to the link task, applied in order.
#[derive(Debug)]
enum Ctl {
    MotorPower(bool),
    ResetOdometry,
    Stop,
}

impl Request for Ctl {
    /// Requests while the base is away are dropped.
    fn dropped(self, log: &Logger) {
        match self {
            Ctl::MotorPower(on) => debug!(log, "base away; motor power dropped"; "on" => on),
            other => debug!(log, "base away; dropped"; "request" => format!("{other:?}")),
        }
    }
}

/// Wheel speeds (right, left), mm/s.
type Wheels = (i16, i16);

/// The client's command, newest wins: wheel speeds and a count of changed commands (a stop
/// for a hazard holds until the count moves on).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Motion {
    wheels: Wheels,
    seq: u64,
}

/// A frame's readings, from the link task to the actor.
#[derive(Message)]
#[rtype(result = "()")]
struct Readings {
    position: Position,
    /// The same odometry at full precision (`P`).
    odometry: player_proto::odometry::Odometry,
    misc: Misc,
    at: Timestamp,
}

/// What the actor keeps of a running link: the requests and the client's wheel speeds.
pub struct CreateLink(Commanded<RequestSender<Ctl>, Motion>);

impl LinkHandle for CreateLink {
    fn request_close(&mut self, ack: CloseAck) -> bool {
        self.0.request_close(ack)
    }
}

/// The Create driver actor.
pub struct CreateDriver {
    params: CreateParams,
    parts: LinkParts<CreateLink>,
    status: StatusSink,
    started: Instant,
}

impl CreateDriver {
    fn new(ctx: &DriverContext) -> Result<CreateDriver, DriverError> {
        let params: CreateParams = ctx.params()?;
        crate::params::check_seconds("create", 60.0, &[("silence", params.silence)])?;
        if ctx.devices.is_empty()
            || ctx
                .devices
                .iter()
                .any(|d| !DEVICES.contains(d) && *d != device::PRECISE_ODOMETRY)
        {
            return Err(DriverError::params(
                "the create driver serves the position 'p', its full-precision 'P' and misc 'm' devices only",
            ));
        }
        let log = ctx.logger.new(slog::o!("port" => params.port.clone()));
        Ok(CreateDriver {
            params,
            parts: LinkParts::new("base", ctx, log),
            status: ctx.status.clone(),
            started: ctx.started,
        })
    }

    fn specs(&self) -> Vec<DeviceSpec> {
        self.parts
            .devices
            .iter()
            .map(|&d| match d {
                device::POSITION => DeviceSpec::moving(d, PositionCommand::SIZE),
                _ => DeviceSpec::read_only(d),
            })
            .collect()
    }
}

impl Actor for CreateDriver {
    type Context = Context<Self>;
}

impl LinkDriver for CreateDriver {
    type Handle = CreateLink;
    const DRIVER: &'static str = "create";
    const LINK: &'static str = "base";

    fn parts(&mut self) -> &mut LinkParts<CreateLink> {
        &mut self.parts
    }
    // The default device_down: the base stops and the port closes when the last of its
    // devices is shut down.
    fn start_link(&mut self, ctx: &mut Context<Self>) {
        let (ctl, ctl_rx) = link::request_channel(self.parts.log.clone());
        let (handle, wheels) = Commanded::new(ctl, Motion::default());
        let task = LinkTask {
            params: self.params.clone(),
            log: self.parts.task_log(),
            readings: ctx.address().recipient(),
            wheels,
            status: self.status.clone(),
            started: self.started,
            odometry: Odometry::default(),
            motors_on: true,
        };
        self.parts.start(CreateLink(handle), ctl_rx, task);
    }
    fn drop_on_setup_error(&mut self) -> bool {
        false
    }
    fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
        let Some(CreateLink(link)) = self.parts.link.handle() else {
            return;
        };
        if msg.device == device::POSITION {
            if let Ok(c) = PositionCommand::decode(&msg.payload) {
                // A client's command reaches the driver again and again (0.7.4a keeps
                // it); only a changed one wakes the link, so after a hazard or a stop only
                // a new command drives again.
                let w = codec::wheel_speeds(c.speed, c.turn_rate);
                link.command.send_if_modified(|m| {
                    let changed = m.wheels != w;
                    if changed {
                        m.wheels = w;
                        m.seq += 1;
                    }
                    changed
                });
            }
        }
    }
    fn config(&mut self, msg: Config, _ctx: &mut Context<Self>) {
        let Some((&code, args)) = msg.payload.split_first() else {
            return;
        };
        let ctl = match (msg.device, code, args.len()) {
            (device::POSITION, codes::MOTOR_POWER, 1) => Ctl::MotorPower(args[0] != 0),
            (device::POSITION, codes::RESET_ODOMETRY, 0) => Ctl::ResetOdometry,
            _ => {
                warn!(self.parts.log, "config ignored: unknown code or wrong size"; "device" => player_kit::log::device(msg.device), "code" => format!("{code:#04x}"), "size" => msg.payload.len(), "client" => &msg.client);
                return;
            }
        };
        let hint = "open position or misc first";
        self.parts
            .send_config(&msg, ctl, hint, |CreateLink(link)| &link.handle);
    }
    fn stop(&mut self, msg: Stop, _ctx: &mut Context<Self>) {
        if msg.device != device::POSITION {
            return;
        }
        if let Some(CreateLink(link)) = self.parts.link.handle() {
            link.command.send_modify(|m| {
                m.wheels = (0, 0);
                m.seq += 1;
            });
            link.handle.send(Ctl::Stop);
            info!(self.parts.log, "base stopped"; "reason" => %msg.reason, "client" => &*msg.client);
        }
    }
}

player_kit::link_driver_handlers!(CreateDriver);

impl Handler<Readings> for CreateDriver {
    type Result = ();

    fn handle(&mut self, msg: Readings, _ctx: &mut Self::Context) {
        let readings = self
            .parts
            .devices
            .iter()
            .map(|&d| {
                let data = match d {
                    device::POSITION => msg.position.encode(),
                    device::PRECISE_ODOMETRY => msg.odometry.encode(),
                    _ => msg.misc.encode(),
                };
                (d, Bytes::from(data))
            })
            .collect();
        self.parts.publisher.publish_batch(readings, msg.at);
    }
}

struct LinkTask {
    params: CreateParams,
    log: Logger,
    readings: Recipient<Readings>,
    wheels: watch::Receiver<Motion>,
    status: StatusSink,
    started: Instant,
    /// Kept across reconnects: a base that resets does not move the robot.
    odometry: Odometry,
    /// The client's motor power choice, kept across reconnects.
    motors_on: bool,
}

/// The link task's end of the requests.
type CtlReceiver = RequestReceiver<Ctl>;

/// An open, streaming base.
pub struct Conn {
    port: SerialStream,
    parser: Parser,
    first: Sensors,
}

struct Serving {
    /// Set by a hazard and by motor power to the command then current: the wheels stay
    /// stopped until a changed command comes.
    held: Option<u64>,
    sent: Wheels,
    last_sent: Instant,
    hazard: Option<&'static str>,
    last_safe: Instant,
    bad: LogThrottle,
}

/// How often the current wheel speeds are sent again.
const RESEND: Duration = Duration::from_millis(500);
/// How often a base found in Passive mode by itself is put back in Safe mode.
const SAFE_AGAIN: Duration = Duration::from_secs(1);

impl link::Link for LinkTask {
    type Conn = Conn;
    type Close = CtlReceiver;
    const NAME: &'static str = "base";

    fn log(&self) -> &Logger {
        &self.log
    }

    async fn connect(&self, _ever_up: bool) -> Result<Conn, LinkError> {
        connect(&self.params, self.motors_on, &self.log).await
    }

    async fn serve(&mut self, mut conn: Conn, ctl: &mut CtlReceiver, mut up: LinkUp<'_>) -> Ended {
        self.odometry.relink();
        let mut s = Serving {
            held: None,
            sent: (0, 0),
            last_sent: Instant::now(),
            hazard: None,
            last_safe: Instant::now(),
            bad: LogThrottle::default(),
        };
        let first = conn.first;
        if let Err(e) = self.frame(&mut conn, &mut s, &first).await {
            return Ended::Lost(LinkError::protocol(&self.params.port, e));
        }
        up.mark();
        self.stream(&mut conn, &mut s, ctl).await
    }
}

impl LinkTask {
    fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    async fn send(&self, conn: &mut Conn, bytes: &[u8]) -> Result<(), String> {
        link::write_all(&mut conn.port, bytes, WRITE_TIMEOUT)
            .await
            .map_err(|e| format!("write failed: {e}"))
    }

    /// One sensor frame: odometry, the readings, hazards, the mode.
    async fn frame(&mut self, conn: &mut Conn, s: &mut Serving, f: &Sensors) -> Result<(), String> {
        self.odometry
            .update(f.left_counts, f.right_counts, self.seconds());
        let o = &self.odometry;
        let heading = o.heading.to_degrees().round() as i64;
        let position = Position {
            time: self.started.elapsed().as_millis() as u32,
            x: o.x.round() as i32,
            y: o.y.round() as i32,
            heading: heading.rem_euclid(360) as u16,
            speed: o.speed.round().clamp(-32768.0, 32767.0) as i16,
            turn_rate: o.turn.to_degrees().round().clamp(-32768.0, 32767.0) as i16,
            compass: 0,
            stall: u8::from(f.bumps() != (false, false)),
        };
        let odometry = player_proto::odometry::Odometry {
            time: position.time,
            x: position.x,
            y: position.y,
            heading: player_proto::odometry::Odometry::heading_of(o.heading),
            speed: o.speed.round() as i32,
            turn_rate: (o.turn * player_proto::odometry::ARCSEC_PER_RAD).round() as i32,
            stall: position.stall,
        };
        let misc = Misc {
            front_bumpers: f.front_bumpers(),
            rear_bumpers: 0,
            voltage: f.decivolts(),
        };
        self.readings.do_send(Readings {
            position,
            odometry,
            misc,
            at: Timestamp::now(),
        });
        match (f.hazard(), s.hazard) {
            (Some(h), None) => {
                s.hazard = Some(h);
                // The OI has stopped the wheels and dropped to Passive; so does our command.
                self.wheels_zero(conn, s).await?;
                warn!(self.log, "base stopped"; "hazard" => h);
                self.status.report(
                    &[device::POSITION],
                    DeviceState::Failed,
                    &format!("{h}: the base stopped"),
                );
            }
            (None, Some(h)) => {
                s.hazard = None;
                info!(self.log, "hazard cleared"; "hazard" => h);
                if self.motors_on {
                    self.send(conn, &[codec::SAFE]).await?;
                    s.last_safe = Instant::now();
                }
                self.status.report(
                    &[device::POSITION],
                    DeviceState::Up,
                    &format!("{h} cleared"),
                );
            }
            _ => {}
        }
        if self.motors_on
            && s.hazard.is_none()
            && f.mode == codec::mode::PASSIVE
            && s.last_safe.elapsed() >= SAFE_AGAIN
        {
            info!(self.log, "base in Passive mode by itself; back to Safe");
            self.send(conn, &[codec::SAFE]).await?;
            s.last_safe = Instant::now();
        }
        if s.last_sent.elapsed() >= RESEND && self.motors_on && s.hazard.is_none() {
            self.send_wheels(conn, s).await?;
        }
        Ok(())
    }

    /// Stops the wheels; the command before is not obeyed again, a new one is.
    async fn wheels_zero(&mut self, conn: &mut Conn, s: &mut Serving) -> Result<(), String> {
        s.held = Some(self.wheels.borrow_and_update().seq);
        s.sent = (0, 0);
        s.last_sent = Instant::now();
        self.send(conn, &codec::drive_direct(0, 0)).await
    }

    async fn send_wheels(&mut self, conn: &mut Conn, s: &mut Serving) -> Result<(), String> {
        let m = *self.wheels.borrow_and_update();
        let held = s.held == Some(m.seq);
        let (r, l) = m.wheels;
        let (r, l) = if held || s.hazard.is_some() || !self.motors_on {
            (0, 0)
        } else {
            (r, l)
        };
        s.sent = (r, l);
        s.last_sent = Instant::now();
        self.send(conn, &codec::drive_direct(r, l)).await
    }

    async fn stream(&mut self, conn: &mut Conn, s: &mut Serving, ctl: &mut CtlReceiver) -> Ended {
        let silence = Duration::from_secs_f64(self.params.silence);
        let mut last_frame = Instant::now();
        let mut buf = [0u8; 512];
        loop {
            let deadline = tokio::time::Instant::from_std(last_frame + silence);
            let step: Result<(), String> = tokio::select! {
                r = link::read_served(&mut conn.port, &mut buf, &self.params.port, "port") => {
                    let n = match r {
                        Ok(n) => n,
                        Err(e) => return Ended::Lost(e),
                    };
                    conn.parser.push(&buf[..n]);
                    let mut result = Ok(());
                    while let Some(ev) = conn.parser.next_event() {
                        match ev {
                            Event::Frame(f) => {
                                last_frame = Instant::now();
                                result = self.frame(conn, s, &f).await;
                                if result.is_err() {
                                    break;
                                }
                            }
                            other => {
                                if s.bad.hit() {
                                    warn!(self.log, "bad sensor frame dropped"; "error" => format!("{other:?}"), "bad_frames" => s.bad.count(), "junk_bytes" => conn.parser.junk);
                                }
                            }
                        }
                    }
                    result
                }
                _ = tokio::time::sleep_until(deadline) => {
                    return Ended::Lost(LinkError::timeout(&self.params.port, format!("no sensor frame for {:.1} s", silence.as_secs_f64())));
                }
                changed = self.wheels.changed() => {
                    if changed.is_err() {
                        return self.close(conn).await;
                    }
                    self.send_wheels(conn, s).await
                }
                c = ctl.recv() => match c {
                    None => return self.close(conn).await,
                    Some(Incoming::Close(ack)) => {
                        let r = self.close(conn).await;
                        let _ = ack.send(());
                        return r;
                    }
                    Some(Incoming::Request(Ctl::MotorPower(on))) => {
                        self.motors_on = on;
                        let mut out = codec::drive_direct(0, 0).to_vec();
                        // START alone takes any mode to Passive.
                        out.push(if on { codec::SAFE } else { codec::START });
                        s.sent = (0, 0);
                        s.held = Some(self.wheels.borrow_and_update().seq);
                        s.last_safe = Instant::now();
                        self.send(conn, &out).await
                    }
                    Some(Incoming::Request(Ctl::ResetOdometry)) => {
                        self.odometry.reset();
                        Ok(())
                    }
                    Some(Incoming::Request(Ctl::Stop)) => self.wheels_zero(conn, s).await,
                },
            };
            if let Err(e) = step {
                return Ended::Lost(LinkError::protocol(&self.params.port, e));
            }
        }
    }

    /// A stop, then the OI's STOP (the base goes to Off mode and stops streaming).
    async fn close(&mut self, conn: &mut Conn) -> Ended {
        let mut out = codec::drive_direct(0, 0).to_vec();
        out.push(codec::OI_STOP);
        match link::write_flushed(&mut conn.port, &out).await {
            Ok(()) => info!(self.log, "base stopped and OI stopped; port closed"),
            Err(e) => warn!(self.log, "could not send the stop and STOP"; "error" => %e),
        }
        Ended::Closed
    }
}

/// Opens the port and brings the base up: START, SAFE (unless the motors are off), STREAM,
/// the first good frame.
async fn connect(params: &CreateParams, motors_on: bool, log: &Logger) -> Result<Conn, LinkError> {
    let path = &params.port;
    let mut port = link::open_serial(path, params.baud)?;
    let w = |e: std::io::Error| LinkError::io(path, &e, format!("writing to {path}: {e}"));
    let mut out = vec![codec::START];
    if motors_on {
        out.push(codec::SAFE);
    }
    out.extend_from_slice(&codec::drive_direct(0, 0));
    out.extend_from_slice(&codec::stream_request());
    link::write_all(&mut port, &out, WRITE_TIMEOUT)
        .await
        .map_err(w)?;
    let mut parser = Parser::new();
    let patience = Duration::from_secs_f64(params.silence.max(0.5) * 2.0);
    let first = link::read_until(
        &mut port,
        &mut [0u8; 512],
        patience,
        &mut parser,
        Parser::push,
        |parser| {
            std::iter::from_fn(|| parser.next_event()).find_map(|ev| match ev {
                Event::Frame(first) => Some(first),
                _ => None,
            })
        },
    )
    .await
    .map_err(|e| LinkError::io(path, &e, format!("reading from {path}: {e}")))?;
    let Some(first) = first else {
        return Err(LinkError::timeout(
            path,
            format!(
                "no Create answers on {path} (no sensor stream at {} baud); is the base on and connected?",
                params.baud
            ),
        ));
    };
    info!(log, "Create base streaming"; "mode" => first.mode, "battery_mv" => first.voltage_mv);
    Ok(Conn {
        port,
        parser,
        first,
    })
}

/// Registers the `create` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("create", |ctx: DriverContext| {
        let driver = CreateDriver::new(&ctx)?;
        let devices = driver.specs();
        Ok(StartedDriver::of(&driver.start(), devices))
    });
}
