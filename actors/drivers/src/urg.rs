//! The Hokuyo URG/UTM laser driver (`urg`): SCIP 2.0 over a serial line (USB models such
//! as the URG-04LX) or TCP (Ethernet models such as the UTM-30LX-EW), serving the laser
//! (`l`, the 0.7.4a view) and the full scan (`L`); docs/hardware/urg.md.
//!
//! A link task on the actor's arbiter owns the line. Setup: stop a stream an earlier run
//! may have left going (`QT`), switch a sensor that answers in SCIP 1.1 (a URG-04LX with
//! its original firmware boots so, and again after every power cycle) to SCIP 2.0
//! (`SCIP2.0`; one that refuses is a failed device saying why), read the model (`VV`, `PP`, `II`), ask for continuous scans
//! of every step (`MD`) and succeed on the first good scan. Every line of a scan carries a
//! checksum; a scan with one bad line is dropped (counted and logged), never served.
//! Readings below 20 mm (the sensor's error codes) and past its maximum range are no return.
//! Scans are stamped with the sensor's clock mapped to the host's. A sensor that goes quiet
//! is reopened with backoff; on shutdown the driver sends `QT` before closing the line.

use crate::laser;
use actix::prelude::*;
use codec::{Block, ClockMap, Parser, RawScan, Sensor};
use player_devices::urg as codec;
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{DriverError, Timestamp};
use player_kit::link::{
    self, CloseReceiver, CloseSender, Ended, Link, LinkDriver, LinkError, LinkParts, LinkUp,
    LogThrottle, WRITE_TIMEOUT,
};
use player_proto::scan::Scan;
use serde::Deserialize;
use slog::{info, warn, Logger};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncRead, AsyncWrite};

/// The default TCP port of Ethernet models.
pub const DEFAULT_TCP_PORT: u16 = 10940;

/// Parameters of the `urg` driver.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrgParams {
    /// The serial port of a USB or RS-232 model, e.g. `/dev/ttyACM0`.
    #[serde(default)]
    pub port: Option<String>,
    /// `HOST:PORT` (or `HOST`, port 10940) of an Ethernet model.
    #[serde(default)]
    pub address: Option<String>,
    /// Serial line speed (USB models ignore it; RS-232 URG-04LX ships at 19200).
    #[serde(default = "crate::params::baud_115200")]
    pub baud: u32,
    /// Seconds without a good scan after which the sensor is taken for lost and reopened.
    #[serde(default = "crate::params::one")]
    pub silence: f64,
    /// Seconds to wait for the answer to each command.
    #[serde(default = "crate::params::one")]
    pub reply_timeout: f64,
}

impl UrgParams {
    /// Where the sensor is, for log lines and errors.
    fn place(&self) -> String {
        match (&self.port, &self.address) {
            (Some(p), _) => p.clone(),
            (None, Some(a)) => a.clone(),
            (None, None) => String::new(),
        }
    }

    fn check(&self) -> Result<(), DriverError> {
        match (&self.port, &self.address) {
            (Some(_), None) | (None, Some(_)) => {}
            _ => {
                return Err(DriverError::params(
                    "urg: give exactly one of port (serial) and address (HOST:PORT)",
                ))
            }
        }
        crate::params::check_seconds(
            "urg",
            60.0,
            &[
                ("silence", self.silence),
                ("reply_timeout", self.reply_timeout),
            ],
        )
    }

    /// The TCP address with the default port filled in.
    fn tcp_address(&self) -> Option<String> {
        let a = self.address.as_ref()?;
        let has_port = match a.rsplit_once(':') {
            Some((host, port)) => !host.ends_with(':') && port.parse::<u16>().is_ok(),
            None => false,
        };
        Some(if has_port {
            a.clone()
        } else {
            format!("{a}:{DEFAULT_TCP_PORT}")
        })
    }
}

/// A scan for the actor to publish.
#[derive(Message)]
#[rtype(result = "()")]
struct ScanReading {
    scan: Scan,
    max_range_mm: u32,
    at: Timestamp,
}

/// The Hokuyo driver actor.
pub struct UrgDriver {
    params: UrgParams,
    parts: LinkParts,
}

impl UrgDriver {
    fn new(ctx: &DriverContext) -> Result<UrgDriver, DriverError> {
        let params: UrgParams = ctx.params()?;
        params.check()?;
        laser::check_devices("urg", &ctx.devices)?;
        let log = ctx.logger.new(slog::o!("sensor" => params.place()));
        Ok(UrgDriver {
            params,
            parts: LinkParts::new("laser", ctx, log),
        })
    }
}

impl Actor for UrgDriver {
    type Context = Context<Self>;
}

impl LinkDriver for UrgDriver {
    type Handle = CloseSender;
    const DRIVER: &'static str = "urg";
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
        });
    }
    /// Only a link that reports failed is dropped: the other device may be waiting on it.
    fn drop_on_setup_error(&mut self) -> bool {
        false
    }
}

player_kit::link_driver_handlers!(UrgDriver);

impl Handler<ScanReading> for UrgDriver {
    type Result = ();

    fn handle(&mut self, msg: ScanReading, _ctx: &mut Self::Context) {
        let readings = laser::readings(&msg.scan, msg.max_range_mm, &self.parts.devices);
        self.parts.publisher.publish_batch(readings, msg.at);
    }
}

/// A line to the sensor: a serial port or a TCP stream.
pub trait Line: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Line for T {}

struct LinkTask {
    params: UrgParams,
    log: Logger,
    scans: Recipient<ScanReading>,
}

/// An open, streaming sensor.
pub struct Conn {
    line: Box<dyn Line>,
    parser: Parser,
    sensor: Sensor,
    clock: ClockMap,
    first: RawScan,
}

impl Link for LinkTask {
    type Conn = Conn;
    type Close = CloseReceiver;
    const NAME: &'static str = "laser";

    fn log(&self) -> &Logger {
        &self.log
    }

    async fn connect(&self, _ever_up: bool) -> Result<Conn, LinkError> {
        connect(&self.params, &self.log).await
    }

    async fn serve(
        &mut self,
        mut conn: Conn,
        close: &mut CloseReceiver,
        mut up: LinkUp<'_>,
    ) -> Ended {
        let first = conn.first.clone();
        self.publish(&mut conn, &first);
        up.mark();
        self.stream(&mut conn, close).await
    }
}

fn host_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1000.0
}

fn timestamp(ms: f64) -> Timestamp {
    let us = (ms * 1000.0).max(0.0) as u64;
    Timestamp {
        sec: (us / 1_000_000) as u32,
        usec: (us % 1_000_000) as u32,
    }
}

impl LinkTask {
    fn publish(&self, conn: &mut Conn, raw: &RawScan) {
        let at = conn.clock.map(raw.time, host_ms());
        self.scans.do_send(ScanReading {
            scan: raw.to_scan(&conn.sensor),
            max_range_mm: conn.sensor.max_range_mm(),
            at: timestamp(at),
        });
    }

    async fn stream(&mut self, conn: &mut Conn, close: &mut CloseReceiver) -> Ended {
        let silence = Duration::from_secs_f64(self.params.silence);
        let mut last_scan = Instant::now();
        let mut bad = LogThrottle::default();
        let place = self.params.place();
        let mut buf = [0u8; 4096];
        loop {
            let deadline = tokio::time::Instant::from_std(last_scan + silence);
            tokio::select! {
                r = link::read_served(&mut conn.line, &mut buf, &place, "line") => {
                    let n = match r {
                        Ok(n) => n,
                        Err(e) => return Ended::Lost(e),
                    };
                    conn.parser.push(&buf[..n]);
                    while let Some(block) = conn.parser.next_block() {
                        if block.command() != b"MD" {
                            continue;
                        }
                        match block.status() {
                            Ok(b"99") => {}
                            Ok(b"00") => continue,
                            _ => {}
                        }
                        match RawScan::parse(&block) {
                            Ok(raw) => {
                                last_scan = Instant::now();
                                self.publish(conn, &raw);
                            }
                            Err(e) => {
                                if bad.hit() {
                                    warn!(self.log, "bad scan dropped"; "error" => %e, "bad_scans" => bad.count(), "junk_bytes" => conn.parser.junk);
                                }
                            }
                        }
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    return Ended::Lost(LinkError::timeout(self.params.place(), format!("no scan for {:.1} s", silence.as_secs_f64())));
                }
                ack = &mut *close => {
                    match link::write_all(&mut conn.line, b"QT\n", WRITE_TIMEOUT).await {
                        Ok(()) => info!(self.log, "scans stopped (QT); line closed"; "bad_scans" => bad.count()),
                        Err(e) => warn!(self.log, "could not send QT"; "error" => %e),
                    }
                    return Ended::acknowledged(ack);
                }
            }
        }
    }
}

/// Sends `cmd` and waits for the block echoing it (skipping scans and anything else).
async fn request(
    line: &mut Box<dyn Line>,
    parser: &mut Parser,
    cmd: &[u8],
    timeout: Duration,
) -> Result<Option<Block>, std::io::Error> {
    link::write_all(line, cmd, WRITE_TIMEOUT).await?;
    let want = &cmd[..cmd.len() - 1];
    link::read_until(
        line,
        &mut [0u8; 4096],
        timeout,
        parser,
        Parser::push,
        |parser| std::iter::from_fn(|| parser.next_block()).find(|b| b.echo == want),
    )
    .await
}

/// Opens the line.
async fn open(params: &UrgParams) -> Result<Box<dyn Line>, LinkError> {
    if let Some(port) = &params.port {
        return Ok(Box::new(link::open_serial(port, params.baud)?));
    }
    let addr = params.tcp_address().unwrap_or_default();
    let wait = Duration::from_secs_f64(params.reply_timeout * 2.0);
    match tokio::time::timeout(wait, tokio::net::TcpStream::connect(&addr)).await {
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Ok(Box::new(s))
        }
        Ok(Err(e)) => Err(LinkError::io(
            &addr,
            &e,
            format!("cannot connect to the laser at {addr}: {e}"),
        )),
        Err(_) => Err(LinkError::timeout(
            &addr,
            format!("cannot connect to the laser at {addr}: no answer"),
        )),
    }
}

/// Switches a sensor that answered in SCIP 1.1 to SCIP 2.0 (`SCIP2.0`, answered with the
/// status `0`). A sensor that refuses (another status, or no answer: firmware older than
/// 3.0 speaks only SCIP 1.1) is an error saying so, with its firmware as its answer to
/// SCIP 1.1's `V` gives it.
async fn leave_scip1(
    line: &mut Box<dyn Line>,
    parser: &mut Parser,
    params: &UrgParams,
    log: &Logger,
) -> Result<(), LinkError> {
    let place = params.place();
    let io = |e: std::io::Error| LinkError::io(&place, &e, format!("laser on {place}: {e}"));
    let wait = Duration::from_secs_f64(params.reply_timeout);
    parser.clear();
    let answer = request(line, parser, codec::SCIP2_SWITCH, wait)
        .await
        .map_err(io)?;
    let status = answer
        .as_ref()
        .map(|b| b.status().unwrap_or_default().to_vec());
    if status.as_deref() == Some(b"0") {
        info!(
            log,
            "the laser answered in SCIP 1.1; switched it to SCIP 2.0"
        );
        return Ok(());
    }
    let refused = match status {
        Some(s) => format!("refused SCIP2.0 (status {})", String::from_utf8_lossy(&s)),
        None => "did not answer SCIP2.0".to_string(),
    };
    parser.clear();
    let firmware = match request(line, parser, b"V\n", wait).await {
        Ok(Some(v)) => v.scip1_value("FIRM"),
        _ => None,
    }
    .map(|f| format!(" (firmware {f})"))
    .unwrap_or_default();
    Err(LinkError::protocol(
        &place,
        format!(
            "the laser on {place} speaks SCIP 1.1 only{firmware}: it {refused}; \
             this driver needs SCIP 2.0 (URG-04LX firmware 3.0 or later)"
        ),
    ))
}

/// Opens the line and brings the sensor to streaming scans.
async fn connect(params: &UrgParams, log: &Logger) -> Result<Conn, LinkError> {
    let place = params.place();
    let io = |e: std::io::Error| LinkError::io(&place, &e, format!("laser on {place}: {e}"));
    let fail = |text: String| LinkError::protocol(&place, text);
    let silent = |text: String| LinkError::timeout(&place, text);
    let wait = Duration::from_secs_f64(params.reply_timeout);
    let mut line = open(params).await?;
    let mut parser = Parser::new();
    // A stream left running by an earlier run ends here; its answer may be lost among
    // scans, which is fine. A sensor that booted in SCIP 1.1 answers it as a command it
    // does not know, and is switched to SCIP 2.0.
    let qt = request(&mut line, &mut parser, b"QT\n", wait / 2)
        .await
        .map_err(io)?;
    let mut switched = false;
    if qt.as_ref().is_some_and(Block::is_scip1) {
        leave_scip1(&mut line, &mut parser, params, log).await?;
        switched = true;
    }
    parser.clear();
    let mut vv = request(&mut line, &mut parser, b"VV\n", wait)
        .await
        .map_err(io)?;
    if !switched && vv.as_ref().is_some_and(Block::is_scip1) {
        // The answer to QT was lost; VV tells the same.
        leave_scip1(&mut line, &mut parser, params, log).await?;
        vv = request(&mut line, &mut parser, b"VV\n", wait)
            .await
            .map_err(io)?;
    }
    let Some(vv) = vv else {
        return Err(silent(format!(
            "laser not connected or not on {place}: no answer to VV (is it a SCIP 2.0 Hokuyo?)"
        )));
    };
    let vv = vv
        .parameters()
        .map_err(|e| fail(format!("laser on {place}: VV: {e}")))?;
    let field = |p: &[(String, String)], k: &str| {
        p.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let Some(pp) = request(&mut line, &mut parser, b"PP\n", wait)
        .await
        .map_err(io)?
    else {
        return Err(silent(format!("the laser on {place} does not answer PP")));
    };
    let pp = pp
        .parameters()
        .map_err(|e| fail(format!("laser on {place}: PP: {e}")))?;
    let sensor =
        Sensor::from_parameters(&pp).map_err(|e| fail(format!("laser on {place}: {e}")))?;
    if let Some(ii) = request(&mut line, &mut parser, b"II\n", wait)
        .await
        .map_err(io)?
    {
        if let Ok(ii) = ii.parameters() {
            info!(log, "laser state"; "laser" => field(&ii, "LASR"), "status" => field(&ii, "STAT"));
        }
    }
    info!(log, "Hokuyo found"; "product" => field(&vv, "PROD"), "firmware" => field(&vv, "FIRM"),
        "serial" => field(&vv, "SERI"), "model" => &sensor.model, "steps" => format!("{}..{} of {}", sensor.amin, sensor.amax, sensor.ares),
        "range_mm" => format!("{}..{}", sensor.dmin, sensor.dmax));
    let md = codec::md_command(sensor.amin, sensor.amax);
    let Some(ack) = request(&mut line, &mut parser, &md, wait)
        .await
        .map_err(io)?
    else {
        return Err(silent(format!("the laser on {place} does not answer MD")));
    };
    match ack.status() {
        Ok(b"00") | Ok(b"99") => {}
        Ok(s) => {
            return Err(fail(format!(
                "the laser on {place} refused to scan: status {}",
                String::from_utf8_lossy(s)
            )))
        }
        Err(e) => return Err(fail(format!("laser on {place}: MD: {e}"))),
    }
    // The first good scan.
    let patience = Duration::from_secs_f64(params.silence.max(0.5));
    let first = link::read_until(
        &mut line,
        &mut [0u8; 4096],
        patience,
        &mut parser,
        Parser::push,
        |parser| {
            std::iter::from_fn(|| parser.next_block())
                .filter(|b| b.command() == b"MD" && b.status() == Ok(b"99"))
                .find_map(|b| RawScan::parse(&b).ok())
        },
    )
    .await
    .map_err(io)?;
    let Some(first) = first else {
        return Err(silent(format!(
            "the laser on {place} accepted MD but sends no scans"
        )));
    };
    info!(log, "laser streaming");
    Ok(Conn {
        line,
        parser,
        sensor,
        clock: ClockMap::new(),
        first,
    })
}

/// Registers the `urg` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("urg", |ctx: DriverContext| {
        let driver = UrgDriver::new(&ctx)?;
        let devices = laser::specs(&driver.parts.devices);
        Ok(StartedDriver::of(&driver.start(), devices))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(port: Option<&str>, address: Option<&str>) -> UrgParams {
        UrgParams {
            port: port.map(Into::into),
            address: address.map(Into::into),
            baud: 115_200,
            silence: 1.0,
            reply_timeout: 1.0,
        }
    }

    #[test]
    fn exactly_one_of_port_and_address() {
        assert!(params(Some("/dev/ttyACM0"), None).check().is_ok());
        assert!(params(None, Some("192.168.0.10")).check().is_ok());
        assert!(params(None, None).check().is_err());
        assert!(params(Some("/dev/ttyACM0"), Some("192.168.0.10"))
            .check()
            .is_err());
    }

    #[test]
    fn the_tcp_port_defaults_to_10940() {
        let a = |s| params(None, Some(s)).tcp_address().unwrap();
        assert_eq!(a("192.168.0.10"), "192.168.0.10:10940");
        assert_eq!(a("192.168.0.10:2000"), "192.168.0.10:2000");
        assert_eq!(a("laser.local"), "laser.local:10940");
    }
}
