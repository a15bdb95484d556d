//! An emulated Hokuyo laser speaking SCIP 2.0, for [`SerialEmulator`] (a USB model on a
//! pseudo-terminal) or [`TcpEmulator`] (an Ethernet model on a TCP port): it answers `VV`,
//! `PP`, `II`, `BM`, `QT`, `RS`, `TM`, `GD` and `MD` with the blocks the protocol specifies
//! (echo, status with checksum, `NAME:value;` lines with checksums, an empty line). `GD`
//! answers with one scan when the turn under way ends; while an `MD` runs it streams one scan per turn (100 ms for a
//! URG-04LX, 25 ms for a UTM-30LX), skipping as many turns between scans as asked, and
//! stops after the number of scans asked for (00: until `QT`), each scan's echo carrying
//! the number still to come. Scans are ray-cast in a [`Scene`] and stamped with the
//! sensor's own 24-bit millisecond clock, which `TM1` reads (between `TM0` and `TM2`, the
//! time adjustment state). Far readings carry the error code 1, as a URG-04LX sends.
//! Faults of its own: scans with a bad checksum (their values are a "poison" range, so a
//! test can tell if one got through) and a restart (power cycle: the stream stops, the
//! clock starts again).
//!
//! A URG-04LX with its original firmware boots in SCIP 1.1 ([`Boot::Scip1`]): it answers
//! `V` with the version lines a real one (firmware 3.1.04) sent, `SCIP2.0` with its echo,
//! the status `0` and an empty line (and speaks SCIP 2.0 from then until it restarts), and
//! any other command with its echo, the status `E` and an empty line; SCIP 1.1 frames
//! lines with LF alone and puts no checksums on them. [`Boot::Scip1Only`] is a sensor whose
//! firmware predates SCIP 2.0: it answers `SCIP2.0` like any other unknown command.
//!
//! [`SerialEmulator`]: crate::SerialEmulator
//! [`TcpEmulator`]: crate::TcpEmulator

use crate::scene::{Pose, Scene, LASER_POSE};
use crate::SerialDevice;
use player_devices::urg::{checksum, encode_chars, line_with_sum, scan_block};
use std::f64::consts::PI;
use std::time::{Duration, Instant};

/// The range every reading of a bad-checksum scan carries, mm.
pub const POISON_MM: u32 = 4321;

/// A Hokuyo model's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    /// `PROD`.
    pub product: &'static str,
    /// `MODL`.
    pub model: &'static str,
    /// `DMIN`, mm.
    pub dmin: u32,
    /// `DMAX`, mm.
    pub dmax: u32,
    /// `ARES`.
    pub ares: u32,
    /// `AMIN`.
    pub amin: u32,
    /// `AMAX`.
    pub amax: u32,
    /// `AFRT`.
    pub afrt: u32,
    /// `SCAN`, rpm.
    pub rpm: u32,
}

impl Model {
    /// The URG-04LX (USB): 240 degrees in 683 steps, 5.6 m, 10 scans a second.
    pub fn urg_04lx() -> Model {
        Model {
            product: "SOKUIKI Sensor URG-04LX",
            model: "URG-04LX(Hokuyo Automatic Co.,Ltd.)",
            dmin: 20,
            dmax: 5600,
            ares: 1024,
            amin: 44,
            amax: 725,
            afrt: 384,
            rpm: 600,
        }
    }

    /// The UTM-30LX(-EW): 270 degrees in 1081 steps, 30 m, 40 scans a second.
    pub fn utm_30lx() -> Model {
        Model {
            product: "SOKUIKI Sensor TOP-URG UTM-30LX-EW",
            model: "UTM-30LX-EW",
            dmin: 23,
            dmax: 30000,
            ares: 1440,
            amin: 0,
            amax: 1080,
            afrt: 540,
            rpm: 2400,
        }
    }

    /// The angle of `step`, rad, counter-clockwise from straight ahead.
    pub fn angle(&self, step: u32) -> f64 {
        (f64::from(step) - f64::from(self.afrt)) * 2.0 * PI / f64::from(self.ares)
    }
}

/// What protocol the sensor speaks when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Boot {
    /// SCIP 2.0 (every model with a firmware of its time).
    #[default]
    Scip2,
    /// SCIP 1.1, switched to SCIP 2.0 by `SCIP2.0` (a URG-04LX as shipped).
    Scip1,
    /// SCIP 1.1 only: `SCIP2.0` is refused (firmware older than 3.0).
    Scip1Only,
}

/// The lines after the status of a real URG-04LX's answer to SCIP 1.1's `V` (firmware
/// 3.1.04; the Player project's recording, as in the driver's `testdata/`).
const SCIP1_VERSION: [&str; 6] = [
    "VEND:Hokuyo Automatic Co.,Ltd.",
    "PROD:SOKUIKI Sensor URG-04LX",
    "FIRM:3.1.04,07/08/02(20-4095[mm],240[deg],44-725[step],600[rpm])",
    "PROT:00003,(SCIP 1.0)",
    "SERI:H0706400",
    "STAT:FW Normal[FinalDist with shadow  ]",
];

/// The firmware line [`Boot::Scip1Only`] gives (the last SCIP 1.1-only firmware the SCIP
/// 2.0 specification names is 0.2.91a).
const SCIP1_ONLY_FIRMWARE: &str = "FIRM:0.2.91a(player-emulate: SCIP 1.1 only)";

/// What a `GD` or `MD` asks for: steps `start..=end`, `cluster` steps to a reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
    cluster: u32,
}

struct Stream {
    /// The command's first 13 characters (`MD`, steps, cluster, skips).
    head: String,
    /// What followed the scan count (`;` and the host's string, echoed in every scan).
    tail: String,
    span: Span,
    /// Turns skipped between two scans sent.
    skips: u32,
    /// Turns skipped since the last scan sent.
    skipped: u32,
    /// Scans still to send; `None` until `QT`.
    remaining: Option<u32>,
    next: Instant,
}

/// The emulated sensor.
pub struct UrgEmulator {
    model: Model,
    /// What it sees.
    pub scene: Scene,
    /// Where it is in the scene.
    pub pose: Pose,
    baud: u32,
    input: Vec<u8>,
    laser_on: bool,
    stream: Option<Stream>,
    clock_zero: Instant,
    /// Every command line received, in order.
    pub received: Vec<String>,
    /// Scans sent.
    pub scans: u64,
    /// Fault: this many coming scans carry the poison range and a bad checksum.
    pub bad_checksums: u32,
    /// Offset added to its clock, ms (to start it near the 24-bit wrap).
    pub clock_offset_ms: u32,
    /// The protocol it starts in (at power-up and after every restart).
    boot: Boot,
    /// Whether it speaks SCIP 1.1 now.
    scip1: bool,
    /// Whether it is in the time adjustment state (`TM0` to `TM2`).
    time_adjust: bool,
    /// `GD` requests waiting for the end of the turn: the line, its steps, when.
    single: Vec<(String, Span, Instant)>,
}

impl UrgEmulator {
    /// A sensor of `model` at [`LASER_POSE`] in `scene`, as after power-up.
    pub fn new(model: Model, scene: Scene) -> UrgEmulator {
        UrgEmulator {
            model,
            scene,
            pose: LASER_POSE,
            baud: 115_200,
            input: Vec::new(),
            laser_on: false,
            stream: None,
            clock_zero: Instant::now(),
            received: Vec::new(),
            scans: 0,
            bad_checksums: 0,
            clock_offset_ms: 0,
            boot: Boot::Scip2,
            scip1: false,
            time_adjust: false,
            single: Vec::new(),
        }
    }

    /// The same sensor starting in `boot` (now, and after every restart).
    pub fn booting(mut self, boot: Boot) -> UrgEmulator {
        self.boot = boot;
        self.scip1 = boot != Boot::Scip2;
        self
    }

    /// Whether it speaks SCIP 1.1 now.
    pub fn speaks_scip1(&self) -> bool {
        self.scip1
    }

    /// Its model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Whether an `MD` stream runs.
    pub fn streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// A power cycle: the stream stops, the laser goes off, the clock starts again.
    pub fn restart(&mut self) {
        self.stream = None;
        self.laser_on = false;
        self.input.clear();
        self.clock_zero = Instant::now();
        self.scip1 = self.boot != Boot::Scip2;
        self.time_adjust = false;
        self.single.clear();
    }

    /// Its clock now, ms (24 bits).
    pub fn clock(&self, now: Instant) -> u32 {
        let ms = now.duration_since(self.clock_zero).as_millis() as u64;
        ((ms + u64::from(self.clock_offset_ms)) & 0xFF_FFFF) as u32
    }

    /// The true range (m) at `step`, from the scene.
    pub fn truth(&self, step: u32) -> f64 {
        self.scene.range(self.pose, self.model.angle(step))
    }

    /// The reading it sends for `step`: mm, or the error code 1 past its range.
    pub fn reading(&self, step: u32) -> u32 {
        let mm = (self.truth(step) * 1000.0).round() as u32;
        if mm > self.model.dmax {
            1
        } else {
            mm.max(self.model.dmin)
        }
    }

    fn period(&self) -> Duration {
        Duration::from_secs_f64(60.0 / f64::from(self.model.rpm.max(1)))
    }

    fn block(echo: &str, status: &[u8; 2], lines: &[String]) -> Vec<u8> {
        let mut v = echo.as_bytes().to_vec();
        v.push(b'\n');
        v.extend_from_slice(&line_with_sum(status));
        for l in lines {
            let content = l.as_bytes();
            v.extend_from_slice(content);
            v.push(b';');
            v.push(checksum(content));
            v.push(b'\n');
        }
        v.push(b'\n');
        v
    }

    /// A SCIP 1.1 answer: echo, a one-character status, lines without checksums, an
    /// empty line.
    fn scip1_block(echo: &str, status: u8, lines: &[&str]) -> Vec<u8> {
        let mut v = format!("{echo}\n").into_bytes();
        v.extend_from_slice(&[status, b'\n']);
        for l in lines {
            v.extend_from_slice(l.as_bytes());
            v.push(b'\n');
        }
        v.push(b'\n');
        v
    }

    fn scip1_command(&mut self, line: &str) -> Vec<u8> {
        match line {
            "V" => {
                let mut lines = SCIP1_VERSION;
                if self.boot == Boot::Scip1Only {
                    lines[2] = SCIP1_ONLY_FIRMWARE;
                }
                Self::scip1_block(line, b'0', &lines)
            }
            "SCIP2.0" if self.boot == Boot::Scip1 => {
                self.scip1 = false;
                Self::scip1_block(line, b'0', &[])
            }
            _ => Self::scip1_block(line, b'E', &[]),
        }
    }

    fn command(&mut self, line: &str, now: Instant, out: &mut Vec<Vec<u8>>) {
        self.received.push(line.to_string());
        if self.scip1 {
            let reply = self.scip1_command(line);
            out.push(reply);
            return;
        }
        let m = self.model.clone();
        let reply = match line.get(..2).unwrap_or(line) {
            "VV" => Self::block(
                line,
                b"00",
                &[
                    "VEND:Hokuyo Automatic Co.,Ltd.".into(),
                    format!("PROD:{}", m.product),
                    "FIRM:1.0.0(player-emulate)".into(),
                    "PROT:SCIP 2.0".into(),
                    "SERI:H0000001".into(),
                ],
            ),
            "PP" => Self::block(
                line,
                b"00",
                &[
                    format!("MODL:{}", m.model),
                    format!("DMIN:{}", m.dmin),
                    format!("DMAX:{}", m.dmax),
                    format!("ARES:{}", m.ares),
                    format!("AMIN:{}", m.amin),
                    format!("AMAX:{}", m.amax),
                    format!("AFRT:{}", m.afrt),
                    format!("SCAN:{}", m.rpm),
                ],
            ),
            "II" => Self::block(
                line,
                b"00",
                &[
                    format!("MODL:{}", m.model),
                    format!("LASR:{}", if self.laser_on { "ON" } else { "OFF" }),
                    format!("SCSP:{}", m.rpm),
                    format!(
                        "MESM:{}",
                        if self.stream.is_some() {
                            "Measuring"
                        } else {
                            "Idle"
                        }
                    ),
                    "SBPS:USB only".into(),
                    format!("TIME:{:06X}", self.clock(now)),
                    "STAT:Sensor works well.".into(),
                ],
            ),
            "BM" if self.laser_on => Self::block(line, b"02", &[]),
            "BM" => {
                self.laser_on = true;
                Self::block(line, b"00", &[])
            }
            "QT" => {
                self.stream = None;
                self.laser_on = false;
                Self::block(line, b"00", &[])
            }
            "RS" => {
                self.restart();
                Self::block(line, b"00", &[])
            }
            "MD" => match self.start_md(line, now) {
                Ok(()) => Self::block(line, b"00", &[]),
                Err(status) => Self::block(line, status, &[]),
            },
            "GD" => self.single_scan(line, now),
            "TM" => self.time_command(line, now),
            _ => Self::block(line, b"0E", &[]),
        };
        if !reply.is_empty() {
            out.push(reply);
        }
    }

    /// The steps a `GD` or `MD` asks for, or the status that refuses it (SCIP 2.0: 01, 02
    /// and 03 for a start, end or cluster that is not a number, 04 for steps out of the
    /// sensor's range, 05 for an end before the start).
    fn span(&self, line: &str) -> Result<Span, &'static [u8; 2]> {
        let field = |a, z, status| number(line, a, z).ok_or(status);
        let start = field(2, 6, b"01")?;
        let end = field(6, 10, b"02")?;
        let cluster = field(10, 12, b"03")?.max(1);
        if start < self.model.amin || end > self.model.amax {
            return Err(b"04");
        }
        if start > end {
            return Err(b"05");
        }
        Ok(Span {
            start,
            end,
            cluster,
        })
    }

    fn start_md(&mut self, line: &str, now: Instant) -> Result<(), &'static [u8; 2]> {
        let span = self.span(line)?;
        let skips = number(line, 12, 13).ok_or(b"06")?;
        let count = number(line, 13, 15).ok_or(b"07")?;
        self.laser_on = true;
        self.stream = Some(Stream {
            head: line[..13].to_string(),
            tail: line[15..].to_string(),
            span,
            skips,
            skipped: 0,
            remaining: (count > 0).then_some(count),
            next: now + self.period() / 2,
        });
        Ok(())
    }

    /// `GD`: one scan of the steps asked for, answered when the turn under way ends
    /// (nothing now; status 10 at once while the laser is off).
    fn single_scan(&mut self, line: &str, now: Instant) -> Vec<u8> {
        match self.span(line) {
            Err(status) => Self::block(line, status, &[]),
            Ok(_) if !self.laser_on => Self::block(line, b"10", &[]),
            Ok(span) => {
                let period = self.period().as_nanos().max(1);
                let turns = now.duration_since(self.clock_zero).as_nanos() / period + 1;
                let due = self.clock_zero + Duration::from_nanos((turns * period) as u64);
                self.single.push((line.to_string(), span, due));
                Vec::new()
            }
        }
    }

    /// `TM0` enters the time adjustment state (ending a measurement), `TM1` gives the
    /// clock there, `TM2` leaves it; statuses 02, 04 and 03 for each out of place, 01 for
    /// another code.
    fn time_command(&mut self, line: &str, now: Instant) -> Vec<u8> {
        match (line.get(2..3), self.time_adjust) {
            (Some("0"), true) => Self::block(line, b"02", &[]),
            (Some("0"), false) => {
                self.time_adjust = true;
                self.stream = None;
                self.laser_on = false;
                Self::block(line, b"00", &[])
            }
            (Some("1"), true) => {
                let mut v = Self::block(line, b"00", &[]);
                v.pop();
                v.extend_from_slice(&line_with_sum(&encode_chars(self.clock(now), 4)));
                v.push(b'\n');
                v
            }
            (Some("1"), false) => Self::block(line, b"04", &[]),
            (Some("2"), true) => {
                self.time_adjust = false;
                Self::block(line, b"00", &[])
            }
            (Some("2"), false) => Self::block(line, b"03", &[]),
            _ => Self::block(line, b"01", &[]),
        }
    }

    /// The readings for `span`, from the scene.
    fn readings(&self, span: Span) -> Vec<u32> {
        (span.start..=span.end)
            .step_by(span.cluster as usize)
            .map(|st| self.reading(st))
            .collect()
    }

    /// The scan of this turn of the running `MD`, if one is due (none on a skipped turn);
    /// the stream ends after its last scan.
    fn scan(&mut self, now: Instant) -> Option<Vec<u8>> {
        let s = self.stream.as_mut()?;
        if s.skipped < s.skips {
            s.skipped += 1;
            return None;
        }
        s.skipped = 0;
        let left = s.remaining.map(|n| n.saturating_sub(1));
        s.remaining = left;
        let echo = format!("{}{:02}{}", s.head, left.unwrap_or(0), s.tail);
        let span = s.span;
        if left == Some(0) {
            self.stream = None;
        }
        let poison = self.bad_checksums > 0;
        let mut values = self.readings(span);
        if poison {
            values.fill(POISON_MM);
        }
        let mut block = scan_block(echo.as_bytes(), b"99", self.clock(now), &values);
        if poison {
            self.bad_checksums -= 1;
            // The checksum of the first data line (after echo, status and time lines).
            let mut lf = block.iter().enumerate().filter(|(_, &c)| c == b'\n');
            let _ = (lf.next(), lf.next(), lf.next());
            if let Some((end, _)) = lf.next() {
                let sum = &mut block[end - 1];
                *sum = if *sum == 0x6F { 0x30 } else { *sum + 1 };
            }
        }
        Some(block)
    }
}

/// The decimal number in `line[a..z]`, if those characters are all digits.
fn number(line: &str, a: usize, z: usize) -> Option<u32> {
    line.get(a..z)
        .filter(|f| f.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|f| f.parse().ok())
}

impl SerialDevice for UrgEmulator {
    fn baud(&self) -> u32 {
        self.baud
    }

    fn receive(&mut self, bytes: &[u8], now: Instant, out: &mut Vec<Vec<u8>>) {
        self.input.extend_from_slice(bytes);
        while let Some(end) = self.input.iter().position(|&c| c == b'\n' || c == b'\r') {
            let raw: Vec<u8> = self.input.drain(..=end).collect();
            let line = String::from_utf8_lossy(&raw[..raw.len() - 1]).into_owned();
            if !line.is_empty() {
                self.command(&line, now, out);
            }
        }
        if self.input.len() > 1024 {
            self.input.clear();
        }
    }

    fn tick(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        let period = self.period();
        while let Some(i) = self.single.iter().position(|(_, _, due)| *due <= now) {
            let (line, span, _) = self.single.remove(i);
            let values = self.readings(span);
            out.push(scan_block(line.as_bytes(), b"00", self.clock(now), &values));
        }
        let Some(s) = self.stream.as_mut() else {
            return;
        };
        if now < s.next {
            return;
        }
        s.next += period;
        if s.next < now {
            s.next = now + period;
        }
        if let Some(b) = self.scan(now) {
            out.push(b);
            self.scans += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_devices::urg::{Parser, RawScan, Sensor};

    fn talk(e: &mut UrgEmulator, cmd: &str) -> Vec<u8> {
        let mut out = Vec::new();
        e.receive(cmd.as_bytes(), Instant::now(), &mut out);
        out.concat()
    }

    #[test]
    fn answers_parse_with_the_drivers_codec_and_scans_match_the_scene() {
        let mut e = UrgEmulator::new(Model::utm_30lx(), Scene::room());
        let mut p = Parser::new();
        p.push(&talk(&mut e, "PP\n"));
        let sensor =
            Sensor::from_parameters(&p.next_block().unwrap().parameters().unwrap()).unwrap();
        assert_eq!((sensor.amin, sensor.amax, sensor.afrt), (0, 1080, 540));
        p.push(&talk(&mut e, "MD0000108001000\n"));
        assert_eq!(p.next_block().unwrap().status(), Ok(&b"00"[..]));
        let mut out = Vec::new();
        e.tick(Instant::now() + Duration::from_secs(1), &mut out);
        p.push(&out.concat());
        let raw = RawScan::parse(&p.next_block().unwrap()).unwrap();
        assert_eq!(raw.values.len(), 1081);
        assert_eq!(raw.values[540], 6000, "6 m to the wall ahead");
        e.bad_checksums = 1;
        let mut out = Vec::new();
        e.tick(Instant::now() + Duration::from_secs(2), &mut out);
        p.push(&out.concat());
        assert!(RawScan::parse(&p.next_block().unwrap()).is_err());
        talk(&mut e, "QT\n");
        assert!(!e.streaming());
    }

    #[test]
    fn a_sensor_booting_in_scip_1_1_switches_once_told_and_again_after_a_restart() {
        let mut e = UrgEmulator::new(Model::urg_04lx(), Scene::room()).booting(Boot::Scip1);
        assert_eq!(talk(&mut e, "QT\n"), b"QT\nE\n\n");
        let v = talk(&mut e, "V\n");
        assert!(v.starts_with(b"V\n0\nVEND:Hokuyo"), "{v:?}");
        assert!(v.ends_with(b"STAT:FW Normal[FinalDist with shadow  ]\n\n"));
        assert_eq!(talk(&mut e, "SCIP2.0\n"), b"SCIP2.0\n0\n\n");
        assert!(!e.speaks_scip1());
        assert_eq!(talk(&mut e, "QT\n"), b"QT\n00P\n\n");
        e.restart();
        assert!(e.speaks_scip1(), "back in SCIP 1.1 after a power cycle");
        let mut old = UrgEmulator::new(Model::urg_04lx(), Scene::room()).booting(Boot::Scip1Only);
        assert_eq!(talk(&mut old, "SCIP2.0\n"), b"SCIP2.0\nE\n\n");
        assert!(old.speaks_scip1());
        assert!(String::from_utf8_lossy(&talk(&mut old, "V\n")).contains("FIRM:0.2.91a"));
    }

    /// The scans `e` sends over `turns` turns from `t0`, parsed.
    fn scans(e: &mut UrgEmulator, t0: Instant, turns: u32) -> Vec<(String, RawScan)> {
        let mut p = Parser::new();
        for i in 1..=turns {
            let mut out = Vec::new();
            e.tick(t0 + Duration::from_millis(25 * u64::from(i)), &mut out);
            p.push(&out.concat());
        }
        std::iter::from_fn(|| p.next_block())
            .map(|b| {
                let echo = String::from_utf8_lossy(&b.echo).into_owned();
                (echo, RawScan::parse(&b).unwrap())
            })
            .collect()
    }

    #[test]
    fn md_counts_its_scans_down_skips_turns_and_echoes_the_string() {
        let mut e = UrgEmulator::new(Model::utm_30lx(), Scene::room());
        let t0 = Instant::now();
        let mut out = Vec::new();
        e.receive(b"MD0000108002103;abc\n", t0, &mut out);
        assert_eq!(out.concat(), b"MD0000108002103;abc\n00P\n\n");
        let got = scans(&mut e, t0, 12);
        let echoes: Vec<&str> = got.iter().map(|(echo, _)| echo.as_str()).collect();
        // One turn in two (1 skipped between), three scans, then the stream ends.
        assert_eq!(
            echoes,
            [
                "MD0000108002102;abc",
                "MD0000108002101;abc",
                "MD0000108002100;abc"
            ]
        );
        assert_eq!(got[0].1.values.len(), 541, "two steps a reading");
        assert!(!e.streaming());
        assert_eq!(
            talk(&mut e, "MD0000108001x00\n"),
            b"MD0000108001x00\n06V\n\n"
        );
        assert_eq!(
            talk(&mut e, "MD0100000001000\n"),
            b"MD0100000001000\n05U\n\n"
        );
    }

    #[test]
    fn gd_gives_one_scan_with_the_laser_on_and_tm_reads_the_clock() {
        let mut e = UrgEmulator::new(Model::utm_30lx(), Scene::room());
        assert_eq!(talk(&mut e, "GD0000108000\n"), b"GD0000108000\n10Q\n\n");
        assert_eq!(talk(&mut e, "BM\n"), b"BM\n00P\n\n");
        assert_eq!(talk(&mut e, "BM\n"), b"BM\n02R\n\n");
        assert_eq!(
            talk(&mut e, "GD0000108000\n"),
            b"",
            "not before the turn ends"
        );
        let mut out = Vec::new();
        e.tick(Instant::now() + Duration::from_millis(26), &mut out);
        let mut p = Parser::new();
        p.push(&out.concat());
        let b = p.next_block().unwrap();
        assert_eq!(b.status(), Ok(&b"00"[..]));
        let raw = RawScan::parse(&b).unwrap();
        assert_eq!((raw.values.len(), raw.values[540]), (1081, 6000));
        assert!(!e.streaming());
        assert_eq!(talk(&mut e, "TM1\n"), b"TM1\n04T\n\n");
        assert_eq!(talk(&mut e, "TM0\n"), b"TM0\n00P\n\n");
        e.clock_offset_ms = 0x12_3456;
        let tm1 = talk(&mut e, "TM1\n");
        let lines: Vec<&[u8]> = tm1.split(|&c| c == b'\n').collect();
        assert_eq!(&lines[..2], [&b"TM1"[..], b"00P"]);
        assert_eq!(lines[2].len(), 5);
        assert_eq!(lines[2][4], checksum(&lines[2][..4]));
        let t = player_devices::urg::decode_chars(&lines[2][..4]);
        assert!((0x12_3456..0x12_3456 + 1000).contains(&t), "{t:#x}");
        assert_eq!(talk(&mut e, "TM2\n"), b"TM2\n00P\n\n");
        assert_eq!(talk(&mut e, "TM2\n"), b"TM2\n03S\n\n");
    }
}
