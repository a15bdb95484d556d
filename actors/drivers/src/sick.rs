//! The SICK LMS-200 laser driver (`sicklms200`): the laser device (`l`) over a serial line
//! (docs/reference/sick-lms200.md).
//!
//! A link task on the actor's arbiter owns the port. Setup: open at 9600 baud, enter
//! installation mode, switch the scanner and the port to 38400 baud, ask for continuous
//! output, and succeed on the first good scan. A scanner that does not answer at 9600 is
//! tried at 38400 (where a crashed earlier server leaves it, still streaming). Every `B0`
//! scan with a good CRC becomes a 361-range laser reading (flag bits masked, counted and
//! logged); corrupt telegrams and junk are counted, logged and skipped. A scanner that goes
//! quiet is reopened with backoff; on shutdown the driver stops the stream and returns the
//! scanner to 9600 before closing the port, so the next setup starts clean.

use actix::prelude::*;
use bytes::Bytes;
use codec::{Event, Parser, Scan};
use player_devices::sick as codec;
use player_kit::catalog::{Catalog, DeviceFlag, DriverContext, FlagValue, StartedDriver};
use player_kit::driver::{DriverError, Timestamp};
use player_kit::link::{
    self, CloseReceiver, CloseSender, Ended, Link, LinkDriver, LinkError, LinkParts, LinkUp,
    LogThrottle, WRITE_TIMEOUT,
};
use player_proto::data::Laser;
use player_proto::device;
use player_proto::scan::{self as full, to_urad};
use serde::Deserialize;
use slog::{debug, info, warn, Logger};
use std::time::{Duration, Instant};
use tokio_serial::SerialStream;

/// Parameters of the `sicklms200` driver.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SickParams {
    /// The serial port, e.g. `/dev/ttyS1`.
    pub port: String,
    /// Seconds without a scan after which the scanner is taken for lost and reopened.
    #[serde(default = "crate::params::one")]
    pub silence: f64,
    /// Seconds to wait for the reply to each configuration telegram.
    #[serde(default = "crate::params::short_reply")]
    pub reply_timeout: f64,
}

#[derive(Message)]
#[rtype(result = "()")]
struct ScanReading {
    ranges: [u16; codec::SCAN_VALUES],
    at: Timestamp,
}

/// The SICK LMS-200 driver actor.
pub struct SickDriver {
    params: SickParams,
    parts: LinkParts,
}

impl SickDriver {
    fn new(ctx: &DriverContext) -> Result<SickDriver, DriverError> {
        let params: SickParams = ctx.params()?;
        crate::params::check_seconds(
            "sicklms200",
            60.0,
            &[
                ("silence", params.silence),
                ("reply_timeout", params.reply_timeout),
            ],
        )?;
        crate::laser::check_devices("sicklms200", &ctx.devices)?;
        let log = ctx.logger.new(slog::o!("port" => params.port.clone()));
        Ok(SickDriver {
            params,
            parts: LinkParts::new("laser", ctx, log),
        })
    }
}

impl Actor for SickDriver {
    type Context = Context<Self>;
}

impl LinkDriver for SickDriver {
    type Handle = CloseSender;
    const DRIVER: &'static str = "sicklms200";
    const LINK: &'static str = "laser";

    fn parts(&mut self) -> &mut LinkParts {
        &mut self.parts
    }
    // The default device_down: the scanner stops when neither `l` nor `L` is open any more.
    fn start_link(&mut self, ctx: &mut Context<Self>) {
        self.parts.start_task(LinkTask {
            params: self.params.clone(),
            log: self.parts.task_log(),
            scans: ctx.address().recipient(),
        });
    }
}

player_kit::link_driver_handlers!(SickDriver);

impl Handler<ScanReading> for SickDriver {
    type Result = ();

    fn handle(&mut self, msg: ScanReading, _ctx: &mut Self::Context) {
        // `l` is the scanner's own 361 values; `L` the same readings with their angles
        // (-90 to +90 degrees every half degree).
        let readings = self
            .parts
            .devices
            .iter()
            .filter_map(|&d| match d {
                device::LASER => Some((d, Bytes::from(Laser { ranges: msg.ranges }.encode()))),
                _ => full::Scan {
                    angle_min: to_urad(-std::f64::consts::FRAC_PI_2),
                    angle_increment: to_urad(std::f64::consts::PI / 360.0),
                    ranges: msg.ranges.to_vec(),
                    intensities: None,
                }
                .encode()
                .ok()
                .map(|b| (d, Bytes::from(b))),
            })
            .collect();
        self.parts.publisher.publish_batch(readings, msg.at);
    }
}

struct LinkTask {
    params: SickParams,
    log: Logger,
    scans: Recipient<ScanReading>,
}

struct Conn {
    port: SerialStream,
    parser: Parser,
    bad: LogThrottle,
    flagged: LogThrottle,
}

impl Link for LinkTask {
    type Conn = (SerialStream, Parser, Scan);
    type Close = CloseReceiver;
    const NAME: &'static str = "laser";

    fn log(&self) -> &Logger {
        &self.log
    }

    async fn connect(&self, _ever_up: bool) -> Result<Self::Conn, LinkError> {
        connect(&self.params, &self.log).await
    }

    async fn serve(
        &mut self,
        (port, parser, first): Self::Conn,
        close: &mut CloseReceiver,
        mut up: LinkUp<'_>,
    ) -> Ended {
        let mut conn = Conn {
            port,
            parser,
            bad: LogThrottle::default(),
            flagged: LogThrottle::default(),
        };
        self.publish(&mut conn, first);
        up.mark();
        self.stream(&mut conn, close).await
    }
}

impl LinkTask {
    fn publish(&self, conn: &mut Conn, scan: Scan) {
        if scan.flagged > 0 && conn.flagged.hit() {
            debug!(self.log, "scan values with flag bits (field or dazzle) masked"; "values" => scan.flagged, "scans" => conn.flagged.count());
        }
        self.scans.do_send(ScanReading {
            ranges: scan.ranges,
            at: Timestamp::now(),
        });
    }

    async fn stream(&mut self, conn: &mut Conn, close: &mut CloseReceiver) -> Ended {
        let silence = Duration::from_secs_f64(self.params.silence);
        let mut last_scan = Instant::now();
        let mut buf = [0u8; 2048];
        loop {
            let deadline = tokio::time::Instant::from_std(last_scan + silence);
            tokio::select! {
                r = link::read_served(&mut conn.port, &mut buf, &self.params.port, "port") => {
                    let n = match r {
                        Ok(n) => n,
                        Err(e) => return Ended::Lost(e),
                    };
                    conn.parser.push(&buf[..n]);
                    while let Some(ev) = conn.parser.next_event() {
                        match ev {
                            Event::Telegram { data, .. } if data.first() == Some(&codec::SCAN) => {
                                match Scan::parse(&data) {
                                    Ok(scan) => {
                                        last_scan = Instant::now();
                                        self.publish(conn, scan);
                                    }
                                    Err(e) => {
                                        if conn.bad.hit() {
                                            warn!(self.log, "unusable scan skipped"; "error" => %e, "bad_telegrams" => conn.bad.count());
                                        }
                                    }
                                }
                            }
                            Event::BadCrc | Event::BadLength(_) if conn.bad.hit() => {
                                warn!(self.log, "corrupt telegram skipped; resynchronising on STX"; "error" => format!("{ev:?}"), "bad_telegrams" => conn.bad.count(), "junk_bytes" => conn.parser.junk);
                            }
                            _ => {}
                        }
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    let why = format!("no scan for {:.1} s", silence.as_secs_f64());
                    return Ended::Lost(LinkError::timeout(&self.params.port, why));
                }
                ack = &mut *close => {
                    self.stop_scanner(conn).await;
                    return Ended::acknowledged(ack);
                }
            }
        }
    }

    /// Stops the stream and puts the scanner back to 9600 baud, so that the next setup
    /// (or the next program) finds it as after power-up.
    async fn stop_scanner(&mut self, conn: &mut Conn) {
        let wait = Duration::from_secs_f64(self.params.reply_timeout);
        let mut ok = true;
        for cmd in [codec::STOP_CONTINUOUS, codec::BAUD_9600] {
            if link::write_all(&mut conn.port, &codec::command(cmd), WRITE_TIMEOUT)
                .await
                .is_err()
            {
                ok = false;
                break;
            }
            ok &= matches!(
                reply(&mut conn.port, &mut conn.parser, wait).await,
                Ok(Some(_))
            );
        }
        if ok {
            info!(self.log, "scan stream stopped, scanner back at 9600 baud; port closed"; "bad_telegrams" => conn.bad.count());
        } else {
            warn!(
                self.log,
                "the scanner did not confirm stopping; port closed"
            );
        }
    }
}

/// Waits for the first telegram `pick` takes (skipping the others), reading `buf` at a time.
async fn telegram<T>(
    port: &mut SerialStream,
    parser: &mut Parser,
    buf: &mut [u8],
    timeout: Duration,
    mut pick: impl FnMut(&[u8]) -> Option<T>,
) -> std::io::Result<Option<T>> {
    link::read_until(port, buf, timeout, parser, Parser::push, |parser| {
        std::iter::from_fn(|| parser.next_event()).find_map(|ev| match ev {
            Event::Telegram { data, .. } => pick(&data),
            _ => None,
        })
    })
    .await
}

/// Waits for the next `A0` reply (skipping scans and everything else); its result byte.
async fn reply(
    port: &mut SerialStream,
    parser: &mut Parser,
    timeout: Duration,
) -> std::io::Result<Option<u8>> {
    telegram(port, parser, &mut [0u8; 1024], timeout, |data| {
        (data.first() == Some(&codec::MODE_REPLY)).then(|| data.get(1).copied().unwrap_or(0xFF))
    })
    .await
}

/// Waits for the first good scan.
async fn first_scan(
    port: &mut SerialStream,
    parser: &mut Parser,
    timeout: Duration,
) -> std::io::Result<Option<Scan>> {
    telegram(port, parser, &mut [0u8; 2048], timeout, |data| {
        Scan::parse(data).ok()
    })
    .await
}

/// Opens the port and brings the scanner to continuous output at 38400 baud.
async fn connect(
    params: &SickParams,
    log: &Logger,
) -> Result<(SerialStream, Parser, Scan), LinkError> {
    let path = &params.port;
    let io = |e: std::io::Error| LinkError::io(path, &e, format!("laser on {path}: {e}"));
    let wait = Duration::from_secs_f64(params.reply_timeout);
    let mut port = link::open_serial(path, 9600)?;
    let mut parser = Parser::new();
    link::write_all(
        &mut port,
        &codec::command(codec::INSTALL_MODE),
        WRITE_TIMEOUT,
    )
    .await
    .map_err(io)?;
    match reply(&mut port, &mut parser, wait).await.map_err(io)? {
        Some(result) => {
            if result != 0 {
                warn!(log, "the scanner refused installation mode"; "result" => result);
            }
            link::write_all(&mut port, &codec::command(codec::BAUD_38400), WRITE_TIMEOUT)
                .await
                .map_err(io)?;
            if reply(&mut port, &mut parser, wait)
                .await
                .map_err(io)?
                .is_none()
            {
                return Err(LinkError::protocol(
                    path,
                    format!("the laser on {path} did not confirm the change to 38400 baud"),
                ));
            }
        }
        None => info!(
            log,
            "no answer at 9600 baud; trying 38400 (left there by an earlier run?)"
        ),
    }
    link::set_baud(&mut port, 38400).map_err(io)?;
    link::flush_input(&port);
    parser.clear();
    link::write_all(
        &mut port,
        &codec::command(codec::START_CONTINUOUS),
        WRITE_TIMEOUT,
    )
    .await
    .map_err(io)?;
    if reply(&mut port, &mut parser, wait * 2)
        .await
        .map_err(io)?
        .is_none()
    {
        return Err(LinkError::timeout(
            path,
            format!("laser not connected or not on {path}: no answer at 9600 or 38400 baud"),
        ));
    }
    match first_scan(
        &mut port,
        &mut parser,
        Duration::from_secs_f64(params.silence.max(0.5)),
    )
    .await
    .map_err(io)?
    {
        Some(scan) => {
            info!(log, "laser streaming at 38400 baud");
            Ok((port, parser, scan))
        }
        None => Err(LinkError::timeout(
            path,
            format!("the laser on {path} accepted continuous output but sends no scans"),
        )),
    }
}

/// Registers the `sicklms200` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.add_flag(DeviceFlag {
        flag: "-lp",
        driver: "sicklms200",
        devices: b"l",
        key: "port",
        value: FlagValue::Text,
    });
    catalog.register("sicklms200", |ctx: DriverContext| {
        let driver = SickDriver::new(&ctx)?;
        let devices = crate::laser::specs(&driver.parts.devices);
        Ok(StartedDriver::of(&driver.start(), devices))
    });
}
