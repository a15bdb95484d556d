//! The Slamtec RPLIDAR laser driver (`rplidar`, A1/A2/C1): the RPLIDAR serial protocol,
//! serving the laser (`l`, the 0.7.4a view) and the full scan (`L`);
//! docs/hardware/rplidar.md.
//!
//! A link task on the actor's arbiter owns the line. Setup: stop a scan an earlier run may
//! have left going (`STOP`), check the health (`GET_HEALTH`: a warning is logged; an error
//! gets one `RESET` and, if it stays, fails the device with the error code), read the
//! model (`GET_INFO`), start the motor (the A1's DTR line, where the port has one), start
//! a standard (`SCAN`) or express (`EXPRESS_SCAN`) scan and succeed on the first full
//! revolution. Express capsules carry a checksum: a revolution with a bad capsule (or, in
//! a standard scan, bytes out of step) is dropped, never served. Device angles run
//! clockwise; the scans served run counter-clockwise. A sensor that goes quiet is reopened
//! with backoff; on shutdown the driver sends `STOP` and stops the motor before closing.

use crate::laser;
use actix::prelude::*;
use codec::{Descriptor, ExpressDecoder, Health, Info, Item, Measurement, Parser, Revolutions};
use player_devices::rplidar as codec;
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{DriverError, Timestamp};
use player_kit::link::{
    self, CloseReceiver, CloseSender, Ended, Link, LinkDriver, LinkError, LinkParts, LinkUp,
    LogThrottle, WRITE_TIMEOUT,
};
use player_proto::scan::Scan;
use serde::Deserialize;
use slog::{info, warn, Logger};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio_serial::{SerialPort, SerialStream};

/// Which scan the driver asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScanMode {
    /// `SCAN`: 5-byte nodes, every model.
    Standard,
    /// `EXPRESS_SCAN` (legacy capsules): twice the samples, checksummed.
    Express,
}

/// Parameters of the `rplidar` driver.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RplidarParams {
    /// The serial port, e.g. `/dev/ttyUSB0`.
    pub port: String,
    /// Line speed: 115200 for the A1 and A2, 460800 for the C1 (and A2M12, A3).
    #[serde(default = "crate::params::baud_115200")]
    pub baud: u32,
    /// `standard` or `express`.
    #[serde(default = "standard")]
    pub scan: ScanMode,
    /// Readings past this range (m) are no return; the `l` view reads it for no return.
    #[serde(default = "twelve")]
    pub max_range: f64,
    /// Seconds without a full revolution after which the sensor is taken for lost and
    /// reopened.
    #[serde(default = "crate::params::one")]
    pub silence: f64,
    /// Seconds to wait for the answer to each request.
    #[serde(default = "crate::params::one")]
    pub reply_timeout: f64,
    /// Seconds the motor may take to spin up before the first revolution.
    #[serde(default = "crate::params::three")]
    pub spin_up: f64,
}

fn standard() -> ScanMode {
    ScanMode::Standard
}
fn twelve() -> f64 {
    12.0
}

impl RplidarParams {
    fn check(&self) -> Result<(), DriverError> {
        crate::params::check_positive(
            "rplidar",
            &[
                ("silence", self.silence, 60.0),
                ("reply_timeout", self.reply_timeout, 60.0),
                ("spin_up", self.spin_up, 60.0),
                ("max_range", self.max_range, 65.0),
            ],
        )?;
        if self.baud == 0 {
            return Err(DriverError::params("rplidar parameter baud = 0"));
        }
        Ok(())
    }

    fn max_range_mm(&self) -> u32 {
        (self.max_range * 1000.0).round() as u32
    }
}

/// A scan for the actor to publish.
#[derive(Message)]
#[rtype(result = "()")]
struct ScanReading {
    scan: Scan,
    at: Timestamp,
}

/// The RPLIDAR driver actor.
pub struct RplidarDriver {
    params: RplidarParams,
    parts: LinkParts,
    said_no_motor: std::sync::Arc<AtomicBool>,
}

impl RplidarDriver {
    fn new(ctx: &DriverContext) -> Result<RplidarDriver, DriverError> {
        let params: RplidarParams = ctx.params()?;
        params.check()?;
        laser::check_devices("rplidar", &ctx.devices)?;
        let log = ctx.logger.new(slog::o!("sensor" => params.port.clone()));
        Ok(RplidarDriver {
            params,
            parts: LinkParts::new("laser", ctx, log),
            said_no_motor: Default::default(),
        })
    }
}

impl Actor for RplidarDriver {
    type Context = Context<Self>;
}

impl LinkDriver for RplidarDriver {
    type Handle = CloseSender;
    const DRIVER: &'static str = "rplidar";
    const LINK: &'static str = "laser";

    fn parts(&mut self) -> &mut LinkParts {
        &mut self.parts
    }
    // The default device_down: the line closes when neither `l` nor `L` is open any more.
    fn start_link(&mut self, ctx: &mut Context<Self>) {
        self.parts.start_task(LinkTask {
            params: self.params.clone(),
            log: self.parts.task_log(),
            scans: ctx.address().recipient(),
            said_no_motor: self.said_no_motor.clone(),
        });
    }
    /// Only a link that reports failed is dropped: the other device may be waiting on it.
    fn drop_on_setup_error(&mut self) -> bool {
        false
    }
}

player_kit::link_driver_handlers!(RplidarDriver);

impl Handler<ScanReading> for RplidarDriver {
    type Result = ();

    fn handle(&mut self, msg: ScanReading, _ctx: &mut Self::Context) {
        let max_range_mm = self.params.max_range_mm();
        let readings = laser::readings(&msg.scan, max_range_mm, &self.parts.devices);
        self.parts.publisher.publish_batch(readings, msg.at);
    }
}

struct LinkTask {
    params: RplidarParams,
    log: Logger,
    scans: Recipient<ScanReading>,
    said_no_motor: std::sync::Arc<AtomicBool>,
}

/// What turns the stream into revolutions.
#[derive(Default)]
struct Assembler {
    parser: Parser,
    express: ExpressDecoder,
    revolutions: Revolutions,
    measurements: Vec<Measurement>,
    /// Bad capsules or out-of-step bytes seen.
    bad: u64,
}

impl Assembler {
    /// Feeds bytes; calls `done` with each good revolution.
    fn push(&mut self, bytes: &[u8], mut done: impl FnMut(Vec<Measurement>), bad: impl FnOnce()) {
        self.parser.push(bytes);
        let mut saw_bad = false;
        while let Some(item) = self.parser.next_item() {
            if self.parser.take_skipped() {
                self.revolutions.damage();
                saw_bad = true;
            }
            match item {
                Item::Node(n) => self.measurements.push(n.measurement()),
                Item::Capsule(c) => self.express.push(c, &mut self.measurements),
                Item::BadCapsule(_) => {
                    saw_bad = true;
                    self.revolutions.damage();
                    // The interpolation must not span the missing capsule.
                    self.express.reset();
                }
                Item::Descriptor(_) => {
                    self.express.reset();
                    self.revolutions.reset();
                }
                Item::Answer(_) => {}
            }
            for m in self.measurements.drain(..) {
                if let Some(rev) = self.revolutions.push(m) {
                    done(rev);
                }
            }
        }
        if self.parser.take_skipped() {
            self.revolutions.damage();
            saw_bad = true;
        }
        if saw_bad {
            self.bad += 1;
            bad();
        }
    }
}

/// An open, scanning sensor.
pub struct Conn {
    line: SerialStream,
    assembler: Assembler,
    first: Vec<Measurement>,
}

impl Link for LinkTask {
    type Conn = Conn;
    type Close = CloseReceiver;
    const NAME: &'static str = "laser";

    fn log(&self) -> &Logger {
        &self.log
    }

    async fn connect(&self, _ever_up: bool) -> Result<Conn, LinkError> {
        connect(&self.params, &self.log, &self.said_no_motor).await
    }

    async fn serve(
        &mut self,
        mut conn: Conn,
        close: &mut CloseReceiver,
        mut up: LinkUp<'_>,
    ) -> Ended {
        let first = std::mem::take(&mut conn.first);
        self.publish(&first);
        up.mark();
        self.stream(&mut conn, close).await
    }
}

impl LinkTask {
    fn publish(&self, revolution: &[Measurement]) {
        self.scans.do_send(ScanReading {
            scan: codec::to_scan(revolution, self.params.max_range_mm()),
            at: Timestamp::now(),
        });
    }

    fn lost(&self, kind: fn(String, String) -> LinkError, text: String) -> Ended {
        Ended::Lost(kind(self.params.port.clone(), text))
    }

    async fn stream(&mut self, conn: &mut Conn, close: &mut CloseReceiver) -> Ended {
        let silence = Duration::from_secs_f64(self.params.silence);
        let mut last_scan = Instant::now();
        let mut bad = LogThrottle::default();
        let mut buf = [0u8; 4096];
        loop {
            let deadline = tokio::time::Instant::from_std(last_scan + silence);
            tokio::select! {
                r = link::read_served(&mut conn.line, &mut buf, &self.params.port, "line") => {
                    let n = match r {
                        Ok(n) => n,
                        Err(e) => return Ended::Lost(e),
                    };
                    let mut revs = Vec::new();
                    let junk = conn.assembler.parser.junk;
                    conn.assembler.push(&buf[..n], |r| revs.push(r), || {
                        if bad.hit() {
                            warn!(self.log, "bad capsule or out-of-step bytes: revolution dropped"; "bad" => bad.count(), "junk_bytes" => junk);
                        }
                    });
                    for r in revs {
                        last_scan = Instant::now();
                        self.publish(&r);
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    return self.lost(LinkError::timeout, format!("no revolution for {:.1} s", silence.as_secs_f64()));
                }
                ack = &mut *close => {
                    match stop(&mut conn.line).await {
                        Ok(()) => info!(self.log, "scan stopped (STOP); line closed"; "bad" => conn.assembler.bad),
                        Err(e) => warn!(self.log, "could not send STOP"; "error" => %e),
                    }
                    return Ended::acknowledged(ack);
                }
            }
        }
    }
}

/// Stops the scan and the motor.
async fn stop(line: &mut SerialStream) -> std::io::Result<()> {
    let r = link::write_all(line, &codec::request(codec::STOP, &[]), WRITE_TIMEOUT).await;
    let _ = motor(line, false);
    r
}

/// Turns the A1's motor on or off through DTR (low = on, as its USB adapter wires it).
/// A port without modem lines (a pseudo-terminal, some adapters) answers ENOTTY/EINVAL.
fn motor(line: &mut SerialStream, on: bool) -> Result<(), tokio_serial::Error> {
    line.write_data_terminal_ready(!on)
}

/// Sends a request and waits for the descriptor `want` and its answer.
async fn ask(
    line: &mut SerialStream,
    parser: &mut Parser,
    cmd: u8,
    want: Descriptor,
    timeout: Duration,
) -> Result<Option<Vec<u8>>, std::io::Error> {
    link::write_all(line, &codec::request(cmd, &[]), WRITE_TIMEOUT).await?;
    let mut seen = false;
    link::read_until(
        line,
        &mut [0u8; 1024],
        timeout,
        parser,
        Parser::push,
        |parser| {
            while let Some(item) = parser.next_item() {
                match item {
                    Item::Descriptor(d) => seen = d == want,
                    Item::Answer(a) if seen => return Some(a),
                    _ => {}
                }
            }
            None
        },
    )
    .await
}

/// Reads and discards what comes for `quiet` (a scan still draining after STOP, a boot
/// banner after RESET).
async fn drain(line: &mut SerialStream, quiet: Duration) -> Result<(), std::io::Error> {
    let mut buf = [0u8; 4096];
    let until = Instant::now() + quiet;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        link::read_some(line, &mut buf, left).await?;
    }
}

async fn health(
    line: &mut SerialStream,
    parser: &mut Parser,
    wait: Duration,
) -> Result<Option<Health>, std::io::Error> {
    parser.clear();
    let a = ask(line, parser, codec::GET_HEALTH, Descriptor::HEALTH, wait).await?;
    Ok(a.map(|a| Health::parse(&[a[0], a[1], a[2]])))
}

/// Asks the sensor's health: an error is reset once (and is the failure if the reset does
/// not clear it), a warning is logged.
async fn check_health(
    line: &mut SerialStream,
    parser: &mut Parser,
    params: &RplidarParams,
    log: &Logger,
) -> Result<(), LinkError> {
    let port = params.port.as_str();
    let io = |e: std::io::Error| LinkError::io(port, &e, format!("laser on {port}: {e}"));
    let wait = Duration::from_secs_f64(params.reply_timeout);
    let Some(mut h) = health(line, parser, wait).await.map_err(io)? else {
        return Err(LinkError::timeout(
            port,
            format!(
                "laser not connected or not on {port}: no answer to GET_HEALTH (is it an RPLIDAR at {} baud?)",
                params.baud
            ),
        ));
    };
    if h.status == Health::ERROR {
        warn!(log, "RPLIDAR health error; resetting it"; "error_code" => format!("0x{:04X}", h.code));
        link::write_all(line, &codec::request(codec::RESET, &[]), WRITE_TIMEOUT)
            .await
            .map_err(io)?;
        // The core reboots and prints a banner.
        drain(line, Duration::from_millis(600)).await.map_err(io)?;
        h = health(line, parser, wait).await.map_err(io)?.unwrap_or(h);
        if h.status == Health::ERROR {
            return Err(LinkError::protocol(
                port,
                format!(
                    "the RPLIDAR on {port} reports a health error (error code 0x{:04X}) that a RESET did not clear",
                    h.code
                ),
            ));
        }
    }
    if h.status == Health::WARNING {
        warn!(log, "RPLIDAR health warning"; "error_code" => format!("0x{:04X}", h.code));
    }
    Ok(())
}

/// Opens the line and brings the sensor to scanning.
async fn connect(
    params: &RplidarParams,
    log: &Logger,
    said_no_motor: &AtomicBool,
) -> Result<Conn, LinkError> {
    let port = params.port.as_str();
    let io = |e: std::io::Error| LinkError::io(port, &e, format!("laser on {port}: {e}"));
    let wait = Duration::from_secs_f64(params.reply_timeout);
    let mut line = link::open_serial(port, params.baud)?;
    let mut parser = Parser::new();
    // A scan left running by an earlier run ends here; what it still sends is drained.
    link::write_all(&mut line, &codec::request(codec::STOP, &[]), WRITE_TIMEOUT)
        .await
        .map_err(io)?;
    drain(&mut line, Duration::from_millis(20))
        .await
        .map_err(io)?;
    link::flush_input(&line);
    check_health(&mut line, &mut parser, params, log).await?;
    parser.clear();
    let Some(info) = ask(
        &mut line,
        &mut parser,
        codec::GET_INFO,
        Descriptor::INFO,
        wait,
    )
    .await
    .map_err(io)?
    else {
        return Err(LinkError::timeout(
            port,
            format!("the laser on {port} does not answer GET_INFO"),
        ));
    };
    let mut b = [0u8; codec::INFO_LEN];
    b.copy_from_slice(&info);
    let info = Info::parse(&b);
    info!(log, "RPLIDAR found"; "model" => format!("0x{:02X}", info.model), "firmware" => info.firmware(),
        "hardware" => info.hardware, "serial" => info.serial_hex(), "scan" => ?params.scan);
    if let Err(e) = motor(&mut line, true) {
        if !said_no_motor.swap(true, Ordering::Relaxed) {
            info!(log, "no motor control (the port has no DTR line); the motor runs on its own"; "why" => %e);
        }
    }
    parser.clear();
    let start = match params.scan {
        ScanMode::Standard => codec::request(codec::SCAN, &[]),
        ScanMode::Express => codec::express_request(),
    };
    link::write_all(&mut line, &start, WRITE_TIMEOUT)
        .await
        .map_err(io)?;
    // The first full revolution.
    let mut assembler = Assembler {
        parser,
        ..Default::default()
    };
    let deadline = Instant::now() + Duration::from_secs_f64(params.spin_up.max(params.silence));
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            let _ = stop(&mut line).await;
            return Err(LinkError::timeout(
                port,
                format!(
                    "the laser on {port} accepted the scan request but sends no full revolution"
                ),
            ));
        }
        if let Some(n) = link::read_some(&mut line, &mut buf, left)
            .await
            .map_err(io)?
        {
            let mut first = None;
            assembler.push(&buf[..n], |r| first = first.take().or(Some(r)), || {});
            if let Some(first) = first {
                info!(log, "laser scanning"; "per_revolution" => first.len());
                return Ok(Conn {
                    line,
                    assembler,
                    first,
                });
            }
        }
    }
}

/// Registers the `rplidar` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("rplidar", |ctx: DriverContext| {
        let driver = RplidarDriver::new(&ctx)?;
        let devices = laser::specs(&driver.parts.devices);
        Ok(StartedDriver::of(&driver.start(), devices))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<RplidarParams, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn params_default_to_an_a1_and_refuse_nonsense() {
        let p = parse(r#"{"port": "/dev/ttyUSB0"}"#).unwrap();
        assert_eq!(
            (p.baud, p.scan, p.max_range_mm()),
            (115_200, ScanMode::Standard, 12_000)
        );
        assert!(p.check().is_ok());
        let c1 = parse(r#"{"port": "/dev/ttyUSB0", "baud": 460800, "scan": "express"}"#).unwrap();
        assert_eq!((c1.baud, c1.scan), (460_800, ScanMode::Express));
        assert!(parse(r#"{"port": "x", "silence": 0}"#)
            .unwrap()
            .check()
            .is_err());
        assert!(parse(r#"{"port": "x", "scan": "boost"}"#).is_err());
        assert!(parse(r#"{"port": "x", "speed": 1}"#).is_err());
    }
}
