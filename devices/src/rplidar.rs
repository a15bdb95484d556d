//! Slamtec's RPLIDAR serial protocol, pure: requests (`A5 cmd`, or `A5 cmd len payload
//! checksum`), response descriptors (`A5 5A`, 30 bits of length and 2 bits of send mode,
//! a data type), the health and device-info answers, the 5-byte nodes of a standard scan,
//! the 84-byte capsules of a (legacy) express scan and their decoding between consecutive
//! capsules, and the assembly of measurements into one revolution, a [`Scan`]. Both sides
//! are here (the emulator encodes with it). No I/O here.
//!
//! Device angles run clockwise seen from above, 0 = the front; ours (in a [`Scan`]) run
//! counter-clockwise.

use player_proto::scan::{to_urad, Scan, MAX_COUNT};
use std::f64::consts::PI;
use std::fmt;

/// The first byte of every request and response descriptor.
pub const SYNC: u8 = 0xA5;
/// The second byte of a response descriptor.
pub const SYNC2: u8 = 0x5A;
/// Stop scanning (no answer).
pub const STOP: u8 = 0x25;
/// Reboot the core (no answer).
pub const RESET: u8 = 0x40;
/// Start a standard scan.
pub const SCAN: u8 = 0x20;
/// Start an express scan (with a 5-byte payload).
pub const EXPRESS_SCAN: u8 = 0x82;
/// Ask for the model, firmware, hardware and serial number.
pub const GET_INFO: u8 = 0x50;
/// Ask for the health status.
pub const GET_HEALTH: u8 = 0x52;

/// The data type of the device-info answer.
pub const TYPE_INFO: u8 = 0x04;
/// The data type of the health answer.
pub const TYPE_HEALTH: u8 = 0x06;
/// The data type of standard scan nodes.
pub const TYPE_SCAN: u8 = 0x81;
/// The data type of legacy express scan capsules.
pub const TYPE_EXPRESS: u8 = 0x82;

/// A response descriptor's length in bytes.
pub const DESCRIPTOR_LEN: usize = 7;
/// The length of a device-info answer.
pub const INFO_LEN: usize = 20;
/// The length of a health answer.
pub const HEALTH_LEN: usize = 3;
/// The length of a standard scan node.
pub const NODE_LEN: usize = 5;
/// The length of an express capsule.
pub const CAPSULE_LEN: usize = 84;
/// Cabins in a capsule (two measurements each).
pub const CABINS: usize = 16;
/// Measurements in a capsule.
pub const PER_CAPSULE: usize = 2 * CABINS;

/// The send mode of a response that goes on until stopped (scans).
pub const MODE_MULTIPLE: u8 = 1;

/// A request: `A5 cmd`, or with a payload `A5 cmd len payload checksum` (the checksum is
/// the XOR of every byte before it).
pub fn request(cmd: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![SYNC, cmd];
    if !payload.is_empty() {
        v.push(payload.len() as u8);
        v.extend_from_slice(payload);
        v.push(v.iter().fold(0, |a, b| a ^ b));
    }
    v
}

/// The express scan request in legacy mode (working mode 0, no flags, no parameter).
pub fn express_request() -> Vec<u8> {
    request(EXPRESS_SCAN, &[0, 0, 0, 0, 0])
}

/// Why bytes from the device are not what the protocol says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RplidarError {
    /// A descriptor of another length or type than the request's answer has.
    UnexpectedDescriptor(Descriptor),
    /// An express capsule whose checksum does not match.
    BadChecksum {
        /// The checksum the capsule carries.
        carried: u8,
        /// The checksum of its bytes.
        computed: u8,
    },
    /// An express capsule whose checksum holds but whose start angle is a turn or more (a
    /// corruption the 8-bit checksum missed).
    BadAngle {
        /// The start angle it carries, 1/64 degree.
        angle_q6: u16,
    },
}

impl fmt::Display for RplidarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RplidarError::UnexpectedDescriptor(d) => write!(
                f,
                "unexpected response descriptor (length {}, mode {}, type 0x{:02X})",
                d.len, d.mode, d.kind
            ),
            RplidarError::BadChecksum { carried, computed } => write!(
                f,
                "bad checksum (carried 0x{carried:02X}, computed 0x{computed:02X})"
            ),
            RplidarError::BadAngle { angle_q6 } => write!(
                f,
                "start angle {:.2} degrees, past a turn",
                f64::from(*angle_q6) / 64.0
            ),
        }
    }
}

impl std::error::Error for RplidarError {}

/// A response descriptor: the length of each answer, its send mode (0 once, 1 until
/// stopped) and its data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// Bytes per answer (30 bits).
    pub len: u32,
    /// Send mode (2 bits).
    pub mode: u8,
    /// Data type.
    pub kind: u8,
}

impl Descriptor {
    /// The descriptor of a device-info answer.
    pub const INFO: Descriptor = Descriptor {
        len: INFO_LEN as u32,
        mode: 0,
        kind: TYPE_INFO,
    };
    /// The descriptor of a health answer.
    pub const HEALTH: Descriptor = Descriptor {
        len: HEALTH_LEN as u32,
        mode: 0,
        kind: TYPE_HEALTH,
    };
    /// The descriptor of a standard scan.
    pub const SCAN: Descriptor = Descriptor {
        len: NODE_LEN as u32,
        mode: MODE_MULTIPLE,
        kind: TYPE_SCAN,
    };
    /// The descriptor of a legacy express scan.
    pub const EXPRESS: Descriptor = Descriptor {
        len: CAPSULE_LEN as u32,
        mode: MODE_MULTIPLE,
        kind: TYPE_EXPRESS,
    };

    /// Its 7 bytes: `A5 5A`, length and mode little-endian in 32 bits (mode on top), type.
    pub fn encode(&self) -> [u8; DESCRIPTOR_LEN] {
        let word = (self.len & 0x3FFF_FFFF) | (u32::from(self.mode & 3) << 30);
        let w = word.to_le_bytes();
        [SYNC, SYNC2, w[0], w[1], w[2], w[3], self.kind]
    }

    /// Reads one from 7 bytes starting `A5 5A`.
    pub fn parse(b: &[u8]) -> Option<Descriptor> {
        if b.len() < DESCRIPTOR_LEN || b[0] != SYNC || b[1] != SYNC2 {
            return None;
        }
        let word = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
        Some(Descriptor {
            len: word & 0x3FFF_FFFF,
            mode: (word >> 30) as u8,
            kind: b[6],
        })
    }
}

/// The health status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Health {
    /// 0 good, 1 warning, 2 error.
    pub status: u8,
    /// The device's error code.
    pub code: u16,
}

impl Health {
    /// Good.
    pub const GOOD: u8 = 0;
    /// Warning: the device works, but something is off.
    pub const WARNING: u8 = 1;
    /// Error: the device cannot scan until the fault is cleared.
    pub const ERROR: u8 = 2;

    /// From its 3 bytes.
    pub fn parse(b: &[u8; HEALTH_LEN]) -> Health {
        Health {
            status: b[0],
            code: u16::from_le_bytes([b[1], b[2]]),
        }
    }

    /// Its 3 bytes.
    pub fn encode(&self) -> [u8; HEALTH_LEN] {
        let c = self.code.to_le_bytes();
        [self.status, c[0], c[1]]
    }
}

/// The device information.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// Model code (upper nibble: the series, e.g. 1 for the A1).
    pub model: u8,
    /// Firmware version, minor.
    pub firmware_minor: u8,
    /// Firmware version, major.
    pub firmware_major: u8,
    /// Hardware version.
    pub hardware: u8,
    /// Serial number.
    pub serial: [u8; 16],
}

impl Info {
    /// From its 20 bytes.
    pub fn parse(b: &[u8; INFO_LEN]) -> Info {
        let mut serial = [0; 16];
        serial.copy_from_slice(&b[4..]);
        Info {
            model: b[0],
            firmware_minor: b[1],
            firmware_major: b[2],
            hardware: b[3],
            serial,
        }
    }

    /// Its 20 bytes.
    pub fn encode(&self) -> [u8; INFO_LEN] {
        let mut v = [0; INFO_LEN];
        v[..4].copy_from_slice(&[
            self.model,
            self.firmware_minor,
            self.firmware_major,
            self.hardware,
        ]);
        v[4..].copy_from_slice(&self.serial);
        v
    }

    /// The firmware version as `major.minor`.
    pub fn firmware(&self) -> String {
        format!("{}.{:02}", self.firmware_major, self.firmware_minor)
    }

    /// The serial number in hex, as Slamtec prints it.
    pub fn serial_hex(&self) -> String {
        self.serial.iter().map(|b| format!("{b:02X}")).collect()
    }
}

/// One measurement, in the device's terms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Degrees, clockwise from the front, in [0, 360).
    pub angle: f64,
    /// Millimetres; 0 = no return.
    pub distance: f64,
    /// The first measurement of a new revolution.
    pub start: bool,
}

/// A standard scan node: `quality<<2 | !S<<1 | S`, `angle_q6<<1 | 1` (15 bits of angle in
/// 1/64 degree, the check bit), `distance_q2` (1/4 mm), little-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    /// Signal quality, 6 bits (0 = no return).
    pub quality: u8,
    /// The first node of a new revolution.
    pub start: bool,
    /// Angle, 1/64 degree, clockwise.
    pub angle_q6: u16,
    /// Distance, 1/4 mm.
    pub distance_q2: u16,
}

impl Node {
    /// Reads a node; `None` if its check bits are wrong (S equal to !S, or the check bit
    /// clear: not a node, or a node out of step).
    pub fn parse(b: &[u8]) -> Option<Node> {
        if b.len() < NODE_LEN {
            return None;
        }
        let s = b[0] & 1;
        let not_s = (b[0] >> 1) & 1;
        if s == not_s || b[1] & 1 != 1 {
            return None;
        }
        let angle_q6 = (u16::from(b[1]) >> 1) | (u16::from(b[2]) << 7);
        if u32::from(angle_q6) >= 360 * 64 {
            return None;
        }
        Some(Node {
            quality: b[0] >> 2,
            start: s == 1,
            angle_q6,
            distance_q2: u16::from_le_bytes([b[3], b[4]]),
        })
    }

    /// Its 5 bytes.
    pub fn encode(&self) -> [u8; NODE_LEN] {
        let s = u8::from(self.start);
        let d = self.distance_q2.to_le_bytes();
        [
            (self.quality << 2) | ((1 - s) << 1) | s,
            (((self.angle_q6 & 0x7F) as u8) << 1) | 1,
            (self.angle_q6 >> 7) as u8,
            d[0],
            d[1],
        ]
    }

    /// As a measurement (quality 0 reads as no return).
    pub fn measurement(&self) -> Measurement {
        Measurement {
            angle: f64::from(self.angle_q6) / 64.0,
            distance: if self.quality == 0 {
                0.0
            } else {
                f64::from(self.distance_q2) / 4.0
            },
            start: self.start,
        }
    }
}

/// A cabin: two distances (mm, 14 bits) and their angle compensations (1/8 degree, 6
/// bits; read as Slamtec's own SDK reads them, without a sign).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cabin {
    /// Distances, mm (0 = no return).
    pub distance: [u16; 2],
    /// Angle compensations dθ, 1/8 degree (0..=63).
    pub dtheta_q3: [u8; 2],
}

/// A legacy express capsule: the sync nibbles `A` and `5` with the checksum's nibbles,
/// the start angle (1/64 degree, 15 bits) with the new-scan flag on top, 16 cabins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capsule {
    /// The angle of its first measurement before compensation, 1/64 degree.
    pub start_angle_q6: u16,
    /// The first capsule after the scan started.
    pub start: bool,
    /// The cabins.
    pub cabins: [Cabin; CABINS],
}

/// The XOR of a capsule's bytes after its first two.
fn capsule_sum(b: &[u8]) -> u8 {
    b[2..CAPSULE_LEN].iter().fold(0, |a, c| a ^ c)
}

impl Capsule {
    /// Whether `b` starts with the sync nibbles of a capsule.
    pub fn synced(b: &[u8]) -> bool {
        b.len() >= 2 && b[0] >> 4 == 0xA && b[1] >> 4 == 0x5
    }

    /// Reads a capsule from 84 bytes that start with the sync nibbles. Its start angle
    /// must be below 360 degrees, as a node's.
    pub fn parse(b: &[u8]) -> Result<Capsule, RplidarError> {
        let carried = (b[0] & 0xF) | ((b[1] & 0xF) << 4);
        let computed = capsule_sum(b);
        if carried != computed {
            return Err(RplidarError::BadChecksum { carried, computed });
        }
        let word = u16::from_le_bytes([b[2], b[3]]);
        if u32::from(word & 0x7FFF) >= 360 * 64 {
            // The interpolation to the next capsule would run backwards, or past a turn.
            return Err(RplidarError::BadAngle {
                angle_q6: word & 0x7FFF,
            });
        }
        let mut cabins = [Cabin::default(); CABINS];
        for (i, c) in cabins.iter_mut().enumerate() {
            let o = 4 + 5 * i;
            let d1 = u16::from_le_bytes([b[o], b[o + 1]]);
            let d2 = u16::from_le_bytes([b[o + 2], b[o + 3]]);
            let low = b[o + 4];
            let theta = |d: u16, nibble: u8| (((d & 3) as u8) << 4) | (nibble & 0xF);
            *c = Cabin {
                distance: [d1 >> 2, d2 >> 2],
                dtheta_q3: [theta(d1, low), theta(d2, low >> 4)],
            };
        }
        Ok(Capsule {
            start_angle_q6: word & 0x7FFF,
            start: word & 0x8000 != 0,
            cabins,
        })
    }

    /// Its 84 bytes.
    pub fn encode(&self) -> [u8; CAPSULE_LEN] {
        let mut b = [0u8; CAPSULE_LEN];
        let word = (self.start_angle_q6 & 0x7FFF) | if self.start { 0x8000 } else { 0 };
        b[2..4].copy_from_slice(&word.to_le_bytes());
        for (i, c) in self.cabins.iter().enumerate() {
            let o = 4 + 5 * i;
            let six = |k: usize| c.dtheta_q3[k] & 0x3F;
            let d = |k: usize| ((c.distance[k] & 0x3FFF) << 2) | u16::from(six(k) >> 4);
            b[o..o + 2].copy_from_slice(&d(0).to_le_bytes());
            b[o + 2..o + 4].copy_from_slice(&d(1).to_le_bytes());
            b[o + 4] = (six(0) & 0xF) | ((six(1) & 0xF) << 4);
        }
        let sum = capsule_sum(&b);
        b[0] = 0xA0 | (sum & 0xF);
        b[1] = 0x50 | (sum >> 4);
        b
    }

    /// The angle (degrees, clockwise) of measurement `k` (0..32) of this capsule, given the
    /// next capsule's start angle: the start angle plus `k`/32 of the way to the next
    /// capsule's, less the measurement's compensation.
    pub fn angle(&self, next_start_q6: u16, k: usize) -> f64 {
        let here = f64::from(self.start_angle_q6) / 64.0;
        let mut diff = f64::from(next_start_q6) / 64.0 - here;
        if diff < 0.0 {
            diff += 360.0;
        }
        let dtheta = f64::from(self.cabins[k / 2].dtheta_q3[k % 2]) / 8.0;
        (here + diff * k as f64 / PER_CAPSULE as f64 - dtheta).rem_euclid(360.0)
    }
}

/// Turns capsules into measurements: a capsule's measurements are known once the next
/// capsule's start angle is (the document's interpolation). A capsule that follows a gap
/// (a dropped capsule: the angle advanced more than twice as far as before) ends the
/// interpolation there: the previous capsule's measurements are dropped, not spread over
/// the gap.
#[derive(Debug, Default)]
pub struct ExpressDecoder {
    prev: Option<Capsule>,
    last_step: Option<f64>,
    last_angle: Option<f64>,
}

impl ExpressDecoder {
    /// A decoder waiting for its first capsule.
    pub fn new() -> ExpressDecoder {
        ExpressDecoder::default()
    }

    /// Forgets the previous capsule (after a gap or a restart).
    pub fn reset(&mut self) {
        *self = ExpressDecoder::default();
    }

    /// Takes the next good capsule; appends the previous capsule's measurements to `out`
    /// (a measurement whose angle wrapped past 0 starts a revolution).
    pub fn push(&mut self, capsule: Capsule, out: &mut Vec<Measurement>) {
        if capsule.start {
            self.reset();
        }
        let Some(prev) = self.prev.replace(capsule) else {
            return;
        };
        let mut step = f64::from(capsule.start_angle_q6) - f64::from(prev.start_angle_q6);
        if step < 0.0 {
            step += 360.0 * 64.0;
        }
        let gap = match self.last_step {
            Some(s) => step > 2.0 * s + 64.0,
            None => step > 90.0 * 64.0,
        };
        if gap {
            self.last_step = None;
            self.last_angle = None;
            return;
        }
        self.last_step = Some(step);
        for (k, cabin) in (0..PER_CAPSULE).map(|k| (k, prev.cabins[k / 2])) {
            let angle = prev.angle(capsule.start_angle_q6, k);
            let start = self.last_angle.is_some_and(|a| angle < a - 180.0);
            self.last_angle = Some(angle);
            out.push(Measurement {
                angle,
                distance: f64::from(cabin.distance[k % 2]),
                start,
            });
        }
    }
}

/// Collects measurements into revolutions: a revolution ends where the next starts (the
/// start flag). The first, partial one is dropped, and so is one marked damaged (a bad
/// capsule or out-of-step bytes inside it).
#[derive(Debug, Default)]
pub struct Revolutions {
    current: Vec<Measurement>,
    started: bool,
    damaged: bool,
}

/// Fewer measurements than this make no revolution (a motor that has not spun up).
pub const MIN_PER_REVOLUTION: usize = 32;

impl Revolutions {
    /// An assembler waiting for a start flag.
    pub fn new() -> Revolutions {
        Revolutions::default()
    }

    /// Marks the revolution in progress damaged: it will not be served.
    pub fn damage(&mut self) {
        self.damaged = true;
    }

    /// Starts over (the stream restarted).
    pub fn reset(&mut self) {
        *self = Revolutions::default();
    }

    /// Takes a measurement; returns the revolution it completed, if any.
    pub fn push(&mut self, m: Measurement) -> Option<Vec<Measurement>> {
        let mut done = None;
        if m.start {
            if self.started && !self.damaged && self.current.len() >= MIN_PER_REVOLUTION {
                done = Some(std::mem::take(&mut self.current));
            }
            self.current.clear();
            self.started = true;
            self.damaged = false;
        }
        if self.started && self.current.len() < MAX_COUNT {
            self.current.push(m);
        }
        done
    }
}

/// One revolution as a full scan: as many readings as measurements, evenly spaced
/// counter-clockwise from -180 degrees; each reading is the measurement nearest in angle
/// to it (0 if none is within one increment), distances past `max_range_mm` as 0.
pub fn to_scan(revolution: &[Measurement], max_range_mm: u32) -> Scan {
    let n = revolution.len().clamp(1, MAX_COUNT);
    let inc = 360.0 / n as f64;
    // Counter-clockwise angles in [-180, 180), sorted.
    let mut ccw: Vec<(f64, u16)> = revolution
        .iter()
        .map(|m| {
            let a = (-m.angle + 180.0).rem_euclid(360.0) - 180.0;
            let d = m.distance.round();
            let mm = if d < 1.0 || d > f64::from(max_range_mm) {
                0
            } else {
                d as u16
            };
            (a, mm)
        })
        .collect();
    ccw.sort_by(|a, b| a.0.total_cmp(&b.0));
    if ccw.is_empty() {
        ccw.push((0.0, 0));
    }
    let ranges = (0..n)
        .map(|i| {
            let a = -180.0 + i as f64 * inc;
            let at = ccw.partition_point(|m| m.0 < a);
            // The neighbours on both sides, the ends wrapping round.
            let candidates = [at.checked_sub(1).unwrap_or(ccw.len() - 1), at % ccw.len()];
            candidates
                .iter()
                .map(|&j| {
                    let d = (ccw[j].0 - a).rem_euclid(360.0);
                    (d.min(360.0 - d), ccw[j].1)
                })
                .filter(|(d, _)| *d <= inc)
                .min_by(|x, y| x.0.total_cmp(&y.0))
                .map_or(0, |(_, mm)| mm)
        })
        .collect();
    Scan {
        angle_min: to_urad(-PI),
        angle_increment: to_urad(inc.to_radians()),
        ranges,
        intensities: None,
    }
}

/// What the parser found in the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A response descriptor.
    Descriptor(Descriptor),
    /// An answer of the length the last descriptor gave (health, info).
    Answer(Vec<u8>),
    /// A standard scan node.
    Node(Node),
    /// A good express capsule.
    Capsule(Capsule),
    /// A capsule with a bad checksum or an impossible start angle (dropped).
    BadCapsule(RplidarError),
}

/// What the parser expects after a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Descriptor,
    Answer(usize),
    Nodes,
    Capsules,
}

/// Splits the byte stream into descriptors, answers, nodes and capsules, skipping junk
/// (counted). The input buffer is bounded.
#[derive(Debug)]
pub struct Parser {
    buf: Vec<u8>,
    expect: Expect,
    /// Bytes skipped as junk.
    pub junk: u64,
    /// Whether junk was skipped since the last call of [`Parser::take_skipped`].
    skipped: bool,
}

const MAX_BUFFER: usize = 16 * 1024;

impl Default for Parser {
    fn default() -> Self {
        Parser::new()
    }
}

impl Parser {
    /// A parser waiting for a descriptor.
    pub fn new() -> Parser {
        Parser {
            buf: Vec::new(),
            expect: Expect::Descriptor,
            junk: 0,
            skipped: false,
        }
    }

    /// Adds bytes from the line.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > MAX_BUFFER {
            let cut = self.buf.len() - MAX_BUFFER;
            self.skip(cut);
        }
    }

    /// Forgets everything buffered and waits for a descriptor.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.expect = Expect::Descriptor;
    }

    /// Whether bytes were skipped as junk since the last call.
    pub fn take_skipped(&mut self) -> bool {
        std::mem::take(&mut self.skipped)
    }

    fn skip(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.buf.drain(..n);
        self.junk += n as u64;
        self.skipped = true;
    }

    /// The next item, if the buffer holds one.
    pub fn next_item(&mut self) -> Option<Item> {
        loop {
            match self.expect {
                Expect::Descriptor => {
                    let at = self.buf.windows(2).position(|w| w == [SYNC, SYNC2]);
                    match at {
                        Some(i) => self.skip(i),
                        None => {
                            // Keep a trailing A5 that may begin one.
                            let keep = usize::from(self.buf.last() == Some(&SYNC));
                            let n = self.buf.len() - keep;
                            self.skip(n);
                            return None;
                        }
                    }
                    let d = Descriptor::parse(&self.buf)?;
                    self.buf.drain(..DESCRIPTOR_LEN);
                    self.expect = match (d.mode, d.kind, d.len as usize) {
                        (MODE_MULTIPLE, TYPE_SCAN, NODE_LEN) => Expect::Nodes,
                        (MODE_MULTIPLE, TYPE_EXPRESS, CAPSULE_LEN) => Expect::Capsules,
                        (0, _, len) if len <= 256 => Expect::Answer(len),
                        _ => Expect::Descriptor,
                    };
                    return Some(Item::Descriptor(d));
                }
                Expect::Answer(len) => {
                    if self.buf.len() < len {
                        return None;
                    }
                    self.expect = Expect::Descriptor;
                    return Some(Item::Answer(self.buf.drain(..len).collect()));
                }
                Expect::Nodes => {
                    if self.buf.len() < NODE_LEN {
                        return None;
                    }
                    match Node::parse(&self.buf) {
                        Some(n) => {
                            self.buf.drain(..NODE_LEN);
                            return Some(Item::Node(n));
                        }
                        None => self.skip(1),
                    }
                }
                Expect::Capsules => {
                    match (0..self.buf.len()).find(|&i| Capsule::synced(&self.buf[i..])) {
                        Some(i) if i > 0 => self.skip(i),
                        Some(_) => {}
                        None => {
                            let keep = usize::from(self.buf.last().is_some_and(|b| b >> 4 == 0xA));
                            let n = self.buf.len() - keep;
                            self.skip(n);
                            return None;
                        }
                    }
                    if self.buf.len() < CAPSULE_LEN {
                        return None;
                    }
                    match Capsule::parse(&self.buf) {
                        Ok(c) => {
                            self.buf.drain(..CAPSULE_LEN);
                            return Some(Item::Capsule(c));
                        }
                        Err(e) => {
                            // Not a capsule after all, or a damaged one: look again one
                            // byte on.
                            self.skip(1);
                            return Some(Item::BadCapsule(e));
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_the_xor_checksum() {
        assert_eq!(request(STOP, &[]), vec![0xA5, 0x25]);
        assert_eq!(
            express_request(),
            vec![0xA5, 0x82, 0x05, 0, 0, 0, 0, 0, 0x22]
        );
    }

    #[test]
    fn descriptors_round_trip_with_the_mode_in_the_top_bits() {
        assert_eq!(
            Descriptor::SCAN.encode(),
            [0xA5, 0x5A, 0x05, 0x00, 0x00, 0x40, 0x81]
        );
        assert_eq!(
            Descriptor::HEALTH.encode(),
            [0xA5, 0x5A, 0x03, 0x00, 0x00, 0x00, 0x06]
        );
        assert_eq!(
            Descriptor::parse(&Descriptor::EXPRESS.encode()),
            Some(Descriptor::EXPRESS)
        );
    }

    #[test]
    fn nodes_round_trip_and_bad_check_bits_are_refused() {
        let n = Node {
            quality: 47,
            start: true,
            angle_q6: 300 * 64 + 17,
            distance_q2: 3601,
        };
        let b = n.encode();
        assert_eq!(Node::parse(&b), Some(n));
        let m = n.measurement();
        assert!((m.angle - (300.0 + 17.0 / 64.0)).abs() < 1e-12);
        assert_eq!(m.distance, 900.25);
        let mut bad = b;
        bad[1] &= !1;
        assert_eq!(Node::parse(&bad), None);
        let mut bad = b;
        bad[0] |= 3;
        assert_eq!(Node::parse(&bad), None);
    }

    fn capsule(start_q6: u16) -> Capsule {
        let mut cabins = [Cabin::default(); CABINS];
        for (i, c) in cabins.iter_mut().enumerate() {
            c.distance = [1000 + i as u16, 16383];
            c.dtheta_q3 = [i as u8, 63 - i as u8];
        }
        Capsule {
            start_angle_q6: start_q6,
            start: false,
            cabins,
        }
    }

    #[test]
    fn capsules_round_trip_and_a_bad_checksum_is_refused() {
        let c = capsule(359 * 64);
        let b = c.encode();
        assert!(Capsule::synced(&b));
        assert_eq!(Capsule::parse(&b), Ok(c));
        let mut bad = b;
        bad[50] ^= 0x10;
        assert!(matches!(
            Capsule::parse(&bad),
            Err(RplidarError::BadChecksum { .. })
        ));
    }

    #[test]
    fn a_capsule_whose_start_angle_is_past_a_turn_is_refused() {
        // Found by fuzzing (rplidar_codec): a capsule with a good checksum and a start
        // angle of 362.58 degrees (15 bits reach 511.98) was read, and its measurements
        // interpolated backwards to the next capsule at 0 degrees (a way of -2.58).
        let past = capsule(23_205);
        let b = past.encode();
        assert_eq!(
            Capsule::parse(&b),
            Err(RplidarError::BadAngle { angle_q6: 23_205 })
        );
        assert!(Capsule::parse(&capsule(360 * 64 - 1).encode()).is_ok());
        let mut bytes = Descriptor::EXPRESS.encode().to_vec();
        bytes.extend_from_slice(&b);
        bytes.extend_from_slice(&capsule(0).encode());
        let mut p = Parser::new();
        p.push(&bytes);
        let items: Vec<Item> = std::iter::from_fn(|| p.next_item()).collect();
        assert!(items.contains(&Item::BadCapsule(RplidarError::BadAngle {
            angle_q6: 23_205
        })));
        assert!(!items.contains(&Item::Capsule(past)));
        assert_eq!(items.last(), Some(&Item::Capsule(capsule(0))));
    }

    #[test]
    fn express_angles_interpolate_to_the_next_capsule_across_360() {
        let (a, b) = (capsule(350 * 64), capsule(6 * 64));
        let mut d = ExpressDecoder::new();
        let mut out = Vec::new();
        d.push(a, &mut out);
        assert!(out.is_empty(), "known only once the next capsule comes");
        d.push(b, &mut out);
        assert_eq!(out.len(), 32);
        // 16 degrees over 32 measurements, less each compensation.
        for (k, m) in out.iter().enumerate() {
            let dtheta = f64::from(a.cabins[k / 2].dtheta_q3[k % 2]) / 8.0;
            let want = (350.0 + 0.5 * k as f64 - dtheta).rem_euclid(360.0);
            assert!((m.angle - want).abs() < 1e-9, "{k}: {} vs {want}", m.angle);
        }
        assert!(out.iter().any(|m| m.start), "the wrap past 0 starts a turn");
        // A gap (a dropped capsule) gives nothing for the capsule before it.
        let mut out = Vec::new();
        d.push(capsule(6 * 64 + 16 * 64 * 3), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_clean_stream_read_in_pieces_skips_nothing() {
        let mut bytes = Descriptor::EXPRESS.encode().to_vec();
        for i in 0..3 {
            bytes.extend_from_slice(&capsule(i * 1000).encode());
        }
        let mut p = Parser::new();
        let mut capsules = 0;
        for piece in bytes.chunks(13) {
            p.push(piece);
            while let Some(item) = p.next_item() {
                capsules += usize::from(matches!(item, Item::Capsule(_)));
            }
            assert!(!p.take_skipped());
        }
        assert_eq!((capsules, p.junk), (3, 0));
    }

    #[test]
    fn the_parser_skips_junk_and_drops_bad_capsules() {
        let mut p = Parser::new();
        let mut bytes = vec![0x13, 0xA5, 0x77];
        bytes.extend_from_slice(&Descriptor::EXPRESS.encode());
        let good = capsule(10 * 64).encode();
        let mut bad = good;
        bad[40] ^= 1;
        bytes.extend_from_slice(&bad);
        bytes.extend_from_slice(&[0x01, 0x02]);
        bytes.extend_from_slice(&good);
        p.push(&bytes);
        assert_eq!(p.next_item(), Some(Item::Descriptor(Descriptor::EXPRESS)));
        let mut items = Vec::new();
        while let Some(i) = p.next_item() {
            items.push(i);
        }
        assert!(matches!(items[0], Item::BadCapsule(_)));
        assert_eq!(items.last(), Some(&Item::Capsule(capsule(10 * 64))));
        assert_eq!(
            items
                .iter()
                .filter(|i| matches!(i, Item::Capsule(_)))
                .count(),
            1
        );
    }

    #[test]
    fn a_revolution_becomes_a_counter_clockwise_scan() {
        // 360 measurements, one a degree clockwise; only the one at 90 degrees clockwise
        // (our -90) is near.
        let rev: Vec<Measurement> = (0..360)
            .map(|i| Measurement {
                angle: f64::from(i),
                distance: if i == 90 { 500.0 } else { 3000.0 },
                start: i == 0,
            })
            .collect();
        let s = to_scan(&rev, 12_000);
        assert_eq!(s.ranges.len(), 360);
        assert_eq!(s.ranges[90], 500, "index 90 is -90 degrees: on the right");
        assert_eq!(s.ranges[270], 3000);
        assert!(
            (s.angle(90).to_degrees() + 90.0).abs() < 1e-2,
            "whole microradians"
        );
        let mut r = Revolutions::new();
        let mut done = None;
        for m in rev.iter().chain(rev.iter()).chain(rev.iter().take(1)) {
            if let Some(d) = r.push(*m) {
                done = Some(d);
            }
        }
        assert_eq!(done.map(|d| d.len()), Some(360));
    }
}
