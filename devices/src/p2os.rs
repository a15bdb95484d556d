//! The P2OS serial protocol, pure: packet frames and checksums, an incremental parser that
//! resynchronises on the `FA FB` header and counts bad packets, the server information
//! packet (SIP), the command encodings, and the conversion of SIPs into the client
//! protocol's position, sonar, misc and gripper data (docs/reference/p2os.md §2–§12). No I/O
//! here.

use player_proto::data::{Gripper, Misc, Position, Sonar};
use player_proto::odometry::{Odometry, ARCSEC_PER_TURN};

/// The two header bytes of every packet, both directions.
pub const HEADER: [u8; 2] = [0xFA, 0xFB];
/// The largest byte count a packet may have (P2OS doc).
pub const MAX_COUNT: u8 = 200;

/// SYNC0 before the connection is up; PULSE (keep-alive) after.
pub const SYNC0: u8 = 0;
/// SYNC1 before the connection is up; OPEN after.
pub const SYNC1: u8 = 1;
/// SYNC2 before the connection is up; CLOSE after.
pub const SYNC2: u8 = 2;
/// Keep-alive.
pub const PULSE: u8 = 0;
/// Start the servers; SIPs begin.
pub const OPEN: u8 = 1;
/// End the connection; SIPs stop.
pub const CLOSE: u8 = 2;
/// Motors on (1) or off (0).
pub const ENABLE: u8 = 4;
/// Reset the odometry origin.
pub const SETO: u8 = 7;
/// Translational velocity, mm/s.
pub const VEL: u8 = 11;
/// Rotational velocity, degrees/s.
pub const RVEL: u8 = 21;
/// Sonars on or off.
pub const SONAR: u8 = 28;
/// Stop; motors stay enabled.
pub const STOP: u8 = 29;
/// Independent wheel velocities in 20 mm/s units.
pub const VEL2: u8 = 32;
/// A gripper server command.
pub const GRIPPER: u8 = 33;
/// The value for a preceding GRIPpress or LIFTcarry.
pub const GRIPPERVAL: u8 = 36;

/// Argument type byte: a non-negative integer follows.
pub const ARG_POS: u8 = 0x3B;
/// Argument type byte: a negative integer follows (its absolute value).
pub const ARG_NEG: u8 = 0x1B;

/// SIP type bytes: motors stopped, robot moving.
pub const SIP_STOPPED: u8 = 0x32;
/// SIP type byte for a moving robot.
pub const SIP_MOVING: u8 = 0x33;

/// Gripper command that takes a grasp time as GRIPPERVAL.
pub const GRIP_PRESS: u8 = 16;
/// Gripper command that takes a carry time as GRIPPERVAL.
pub const LIFT_CARRY: u8 = 17;

/// P2-DX constants used by 0.7.4a (docs/reference/p2os.md §6).
pub mod p2dx {
    /// XPOS/YPOS units to mm.
    pub const DIST_CONV: f64 = 0.826;
    /// Sonar units to mm.
    pub const RANGE_CONV: f64 = 0.268;
    /// Axle length used for the turn rate, mm.
    pub const AXLE_MM: f64 = 320.0;
    /// VEL2 unit, mm/s.
    pub const VEL2_UNIT: f64 = 20.0;
    /// Wheel speed clamp, mm/s.
    pub const MAX_SPEED: i32 = 500;
    /// Turn rate clamp, degrees/s.
    pub const MAX_TURN: i32 = 100;
    /// THPOS units per turn.
    pub const ANGLE_UNITS: i32 = 4096;
    /// XPOS/YPOS roll over at this value (15 bits).
    pub const POS_MODULUS: i32 = 32768;
}

/// The P2OS checksum of a payload: a 16-bit sum of big-endian byte pairs, an odd last byte
/// XORed into the low byte.
pub fn checksum(payload: &[u8]) -> u16 {
    let mut c: u16 = 0;
    let mut pairs = payload.chunks_exact(2);
    for p in &mut pairs {
        c = c.wrapping_add(u16::from(p[0]) << 8 | u16::from(p[1]));
    }
    if let [last] = pairs.remainder() {
        c ^= u16::from(*last);
    }
    c
}

/// A whole packet around `payload`: header, count, payload, checksum (high byte first).
/// Payloads over 198 bytes are cut (the count byte cannot say more).
pub fn packet(payload: &[u8]) -> Vec<u8> {
    let payload = &payload[..payload.len().min(usize::from(MAX_COUNT) - 2)];
    let c = checksum(payload);
    let mut v = Vec::with_capacity(payload.len() + 5);
    v.extend_from_slice(&HEADER);
    v.push(payload.len() as u8 + 2);
    v.extend_from_slice(payload);
    v.extend_from_slice(&c.to_be_bytes());
    v
}

/// A command without argument.
pub fn command(cmd: u8) -> Vec<u8> {
    packet(&[cmd])
}

/// A command with a signed integer argument (sign in the type byte, absolute value
/// little-endian).
pub fn command_int(cmd: u8, value: i32) -> Vec<u8> {
    let t = if value < 0 { ARG_NEG } else { ARG_POS };
    let a = value.unsigned_abs().min(u32::from(u16::MAX)) as u16;
    let b = a.to_le_bytes();
    packet(&[cmd, t, b[0], b[1]])
}

/// VEL2 with wheel velocities in 20 mm/s units: low byte right, high byte left.
pub fn vel2(right: i8, left: i8) -> Vec<u8> {
    packet(&[VEL2, ARG_POS, right as u8, left as u8])
}

/// SETO as 0.7.4a sends it (with a stray argument-type byte; P2OS accepts it).
pub fn seto() -> Vec<u8> {
    packet(&[SETO, ARG_POS])
}

/// Why bytes on the line were not a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The checksum did not match.
    BadChecksum {
        /// What the packet carried.
        got: u16,
        /// What the payload sums to.
        expected: u16,
    },
    /// The count byte was below 2 or above 200.
    BadCount(u8),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::BadChecksum { got, expected } => {
                write!(f, "bad checksum {got:#06x}, expected {expected:#06x}")
            }
            FrameError::BadCount(c) => write!(f, "bad byte count {c}"),
        }
    }
}

/// An incremental packet parser. Feed it bytes as they come; take packets (their payloads)
/// or errors out. Bytes before a header are skipped and counted; after a bad packet it
/// hunts for the next header from the byte after the bad one's header.
#[derive(Debug, Default)]
pub struct Parser {
    buf: Vec<u8>,
    /// Bytes skipped while hunting for a header.
    pub junk: u64,
    /// Packets dropped for a bad checksum.
    pub bad_checksums: u64,
    /// Packets dropped for an impossible byte count.
    pub bad_counts: u64,
    /// Good packets.
    pub good: u64,
}

impl Parser {
    /// An empty parser.
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Appends bytes from the line.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Forgets buffered bytes (after a flush of the line).
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// The next packet's payload or error, or `None` if more bytes are needed.
    pub fn next_packet(&mut self) -> Option<Result<Vec<u8>, FrameError>> {
        // Hunt for the header.
        let Some(start) = self.buf.windows(2).position(|w| w == HEADER) else {
            // Keep a trailing 0xFA: it may be the first half of a header.
            let keep = usize::from(self.buf.last() == Some(&HEADER[0]));
            let drop = self.buf.len() - keep;
            self.junk += drop as u64;
            self.buf.drain(..drop);
            return None;
        };
        if start > 0 {
            self.junk += start as u64;
            self.buf.drain(..start);
        }
        if self.buf.len() < 3 {
            return None;
        }
        let count = self.buf[2];
        if !(2..=MAX_COUNT).contains(&count) {
            self.bad_counts += 1;
            self.buf.drain(..1);
            return Some(Err(FrameError::BadCount(count)));
        }
        let total = usize::from(count) + 3;
        if self.buf.len() < total {
            return None;
        }
        let payload = &self.buf[3..total - 2];
        let got = u16::from_be_bytes([self.buf[total - 2], self.buf[total - 1]]);
        let expected = checksum(payload);
        if got != expected {
            self.bad_checksums += 1;
            self.buf.drain(..1);
            return Some(Err(FrameError::BadChecksum { got, expected }));
        }
        let p = payload.to_vec();
        self.buf.drain(..total);
        self.good += 1;
        Some(Ok(p))
    }
}

/// The robot's identity from the SYNC2 echo.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Identity {
    /// The robot's (user-settable) name.
    pub name: String,
    /// Its class, e.g. `Pioneer`.
    pub class: String,
    /// Its subclass (model), e.g. `P2DX`.
    pub subclass: String,
}

impl Identity {
    /// Reads the three NUL-terminated strings after the `0x02` of a SYNC2 echo payload.
    pub fn parse(payload: &[u8]) -> Identity {
        let mut parts = payload
            .get(1..)
            .unwrap_or_default()
            .split(|&b| b == 0)
            .map(|s| String::from_utf8_lossy(s).into_owned());
        Identity {
            name: parts.next().unwrap_or_default(),
            class: parts.next().unwrap_or_default(),
            subclass: parts.next().unwrap_or_default(),
        }
    }

    /// The SYNC2 echo payload announcing this identity.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![SYNC2];
        for s in [&self.name, &self.class, &self.subclass] {
            v.extend_from_slice(s.as_bytes());
            v.push(0);
        }
        v
    }
}

/// A standard SIP, raw fields as P2OS sends them (docs/reference/p2os.md §6).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sip {
    /// 0x32 stopped or 0x33 moving.
    pub status: u8,
    /// Integrated x, rolling, DistConv units.
    pub xpos: u16,
    /// Integrated y, rolling, DistConv units.
    pub ypos: u16,
    /// Heading, 4096 units per turn, counter-clockwise.
    pub thpos: i16,
    /// Left wheel velocity, mm/s.
    pub lvel: i16,
    /// Right wheel velocity, mm/s.
    pub rvel: i16,
    /// Battery, decivolts.
    pub battery: u8,
    /// Bit 0 left wheel stalled; bits 1–5 rear bumpers.
    pub stall_low: u8,
    /// Bit 0 right wheel stalled; bits 1–5 front bumpers.
    pub stall_high: u8,
    /// Angular servo set-point.
    pub control: i16,
    /// PTU / flags.
    pub ptu: u16,
    /// Compass in 2-degree units plus one; 0, 181 or 255 for no reading.
    pub compass: u8,
    /// New sonar readings: (disc number, raw range).
    pub sonars: Vec<(u8, u16)>,
    /// High byte: gripper state; low byte: selected analog port.
    pub timer: u16,
    /// User analog input.
    pub analog: u8,
    /// User digital inputs (gripper break-beams and switches).
    pub digin: u8,
    /// User digital outputs.
    pub digout: u8,
}

/// Why a payload is not a SIP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SipError {
    /// The type byte is not 0x32 or 0x33.
    NotASip(u8),
    /// The payload is shorter than its sonar count says.
    TooShort {
        /// Bytes needed.
        need: usize,
        /// Bytes present.
        got: usize,
    },
}

impl std::fmt::Display for SipError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SipError::NotASip(t) => write!(f, "packet type {t:#04x} is not a SIP"),
            SipError::TooShort { need, got } => {
                write!(f, "SIP too short: {got} bytes, need {need}")
            }
        }
    }
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

impl Sip {
    /// Whether a payload's type byte marks a SIP.
    pub fn is_sip(payload: &[u8]) -> bool {
        matches!(payload.first(), Some(&SIP_STOPPED) | Some(&SIP_MOVING))
    }

    /// Parses a SIP payload (type byte first). Bytes after DIGOUT (later firmware) are
    /// ignored.
    pub fn parse(p: &[u8]) -> Result<Sip, SipError> {
        let status = *p.first().ok_or(SipError::TooShort { need: 25, got: 0 })?;
        if status != SIP_STOPPED && status != SIP_MOVING {
            return Err(SipError::NotASip(status));
        }
        if p.len() < 20 {
            return Err(SipError::TooShort {
                need: 25,
                got: p.len(),
            });
        }
        let n = usize::from(p[19]);
        let need = 25 + 3 * n;
        if p.len() < need {
            return Err(SipError::TooShort { need, got: p.len() });
        }
        let sonars = (0..n)
            .map(|i| (p[20 + 3 * i], le16(p, 21 + 3 * i)))
            .collect();
        let at = 20 + 3 * n;
        Ok(Sip {
            status,
            xpos: le16(p, 1),
            ypos: le16(p, 3),
            thpos: le16(p, 5) as i16,
            lvel: le16(p, 7) as i16,
            rvel: le16(p, 9) as i16,
            battery: p[11],
            stall_low: p[12],
            stall_high: p[13],
            control: le16(p, 14) as i16,
            ptu: le16(p, 16),
            compass: p[18],
            sonars,
            timer: le16(p, at),
            analog: p[at + 2],
            digin: p[at + 3],
            digout: p[at + 4],
        })
    }

    /// The SIP payload (type byte first). At most 57 sonar readings fit a packet; more are
    /// dropped.
    pub fn encode(&self) -> Vec<u8> {
        let sonars = &self.sonars[..self.sonars.len().min(57)];
        let mut v = Vec::with_capacity(25 + 3 * sonars.len());
        v.push(self.status);
        v.extend_from_slice(&self.xpos.to_le_bytes());
        v.extend_from_slice(&self.ypos.to_le_bytes());
        v.extend_from_slice(&self.thpos.to_le_bytes());
        v.extend_from_slice(&self.lvel.to_le_bytes());
        v.extend_from_slice(&self.rvel.to_le_bytes());
        v.push(self.battery);
        v.push(self.stall_low);
        v.push(self.stall_high);
        v.extend_from_slice(&self.control.to_le_bytes());
        v.extend_from_slice(&self.ptu.to_le_bytes());
        v.push(self.compass);
        v.push(sonars.len() as u8);
        for &(n, r) in sonars {
            v.push(n);
            v.extend_from_slice(&r.to_le_bytes());
        }
        v.extend_from_slice(&self.timer.to_le_bytes());
        v.push(self.analog);
        v.push(self.digin);
        v.push(self.digout);
        v
    }
}

/// A command packet from the host, as the robot reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCommand {
    /// The command number.
    pub code: u8,
    /// The integer argument, if the packet has a `0x3B`/`0x1B` argument with two bytes.
    pub arg: Option<i32>,
    /// The two raw argument bytes, if present (VEL2 reads them as two signed bytes).
    pub raw: Option<[u8; 2]>,
}

impl HostCommand {
    /// Reads a host packet's payload. `None` for an empty payload.
    pub fn parse(p: &[u8]) -> Option<HostCommand> {
        let code = *p.first()?;
        let (arg, raw) = match p.get(1..4) {
            Some([t, lo, hi]) => {
                let v = i32::from(u16::from_le_bytes([*lo, *hi]));
                let arg = match *t {
                    ARG_POS => Some(v),
                    ARG_NEG => Some(-v),
                    _ => None,
                };
                (arg, Some([*lo, *hi]))
            }
            _ => (None, None),
        };
        Some(HostCommand { code, arg, raw })
    }
}

/// The direct-wheel command for a client's speed (mm/s) and turn rate (degrees/s), as
/// 0.7.4a computes it (docs/reference/p2os.md §11): returns (right, left) in VEL2 units.
pub fn wheel_units(speed: i16, turn: i16) -> (i8, i8) {
    let rot = f64::from(turn).to_radians() * p2dx::AXLE_MM / 2.0;
    let max = f64::from(p2dx::MAX_SPEED);
    let left = (f64::from(speed) - rot).clamp(-max, max);
    let right = (f64::from(speed) + rot).clamp(-max, max);
    (
        (right / p2dx::VEL2_UNIT).trunc() as i8,
        (left / p2dx::VEL2_UNIT).trunc() as i8,
    )
}

/// Chooses VEL or RVEL each cycle in separate trans/rot mode (docs/reference/p2os.md §11).
#[derive(Debug, Clone)]
pub struct SeparateMode {
    since_rvel: u32,
    last: Option<(i16, i16)>,
}

impl Default for SeparateMode {
    fn default() -> Self {
        SeparateMode {
            since_rvel: 2,
            last: None,
        }
    }
}

impl SeparateMode {
    /// A fresh chooser (the first packet is RVEL).
    pub fn new() -> SeparateMode {
        SeparateMode::default()
    }

    /// The packet to send this cycle for `speed` and `turn`.
    pub fn next(&mut self, speed: i16, turn: i16) -> Vec<u8> {
        let (speed_changed, turn_changed) = match self.last {
            Some((s, t)) => (s != speed, t != turn),
            None => (true, true),
        };
        self.last = Some((speed, turn));
        let send_vel = (speed_changed || !turn_changed) && self.since_rvel < 2;
        if send_vel {
            self.since_rvel += 1;
            let v = i32::from(speed).clamp(-p2dx::MAX_SPEED, p2dx::MAX_SPEED);
            command_int(VEL, v)
        } else {
            self.since_rvel = 0;
            let t = i32::from(turn).clamp(-p2dx::MAX_TURN, p2dx::MAX_TURN);
            command_int(RVEL, t)
        }
    }
}

/// The packets for a client gripper command: GRIPPER, then GRIPPERVAL for GRIPpress and
/// LIFTcarry (whose carry time is signed: the argument byte is read as an i8).
pub fn gripper_packets(cmd: u8, arg: u8) -> Vec<Vec<u8>> {
    let mut v = vec![command_int(GRIPPER, i32::from(cmd))];
    match cmd {
        GRIP_PRESS => v.push(command_int(GRIPPERVAL, i32::from(arg))),
        LIFT_CARRY => v.push(command_int(GRIPPERVAL, i32::from(arg as i8))),
        _ => {}
    }
    v
}

/// What one SIP turned into, in the client protocol's units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readings {
    /// Position (its `time` field is left 0 for the driver to fill).
    pub position: Position,
    /// The same position at the SIP's own precision (heading in 4096ths of a turn, the
    /// turn rate unrounded) for the `P` device; `time` is left 0 likewise.
    pub odometry: Odometry,
    /// The 16 sonar ranges, mm.
    pub sonar: Sonar,
    /// Bumpers and battery.
    pub misc: Misc,
    /// Gripper state and beams.
    pub gripper: Gripper,
}

/// The state kept across SIPs to turn them into readings (docs/reference/p2os.md §7, with the
/// 0.7.4a bugs fixed: heading 0–359, sonar numbers bounds-checked, odometry on the full 15 bits).
#[derive(Debug, Clone, Default)]
pub struct SipState {
    raw: Option<(i32, i32)>,
    x: i32,
    y: i32,
    compass: u16,
    sonars: [u16; 16],
    /// Sonar readings ignored because their disc number was 16 or more.
    pub bad_sonar_numbers: u64,
    /// Position jumps rejected (more than [`SipState::MAX_JUMP_MM`] between SIPs).
    pub rejected_jumps: u64,
}

fn unwrap_delta(from: i32, to: i32, modulus: i32) -> i32 {
    let d = (to - from).rem_euclid(modulus);
    if d > modulus / 2 {
        d - modulus
    } else {
        d
    }
}

impl SipState {
    /// The largest believable change of x or y between two SIPs, mm.
    pub const MAX_JUMP_MM: i32 = 1000;

    /// Fresh state: the next SIP's position reads (0, 0).
    pub fn new() -> SipState {
        SipState::default()
    }

    /// Odometry reset: the next SIP's raw position becomes the new origin.
    pub fn reset_odometry(&mut self) {
        self.raw = None;
        self.x = 0;
        self.y = 0;
    }

    /// Applies one SIP and returns the readings it gives.
    pub fn apply(&mut self, sip: &Sip) -> Readings {
        let m = p2dx::POS_MODULUS;
        let rx = i32::from(sip.xpos) & (m - 1);
        let ry = i32::from(sip.ypos) & (m - 1);
        if let Some((ox, oy)) = self.raw {
            let cx = (f64::from(unwrap_delta(ox, rx, m)) * p2dx::DIST_CONV).round() as i32;
            let cy = (f64::from(unwrap_delta(oy, ry, m)) * p2dx::DIST_CONV).round() as i32;
            if cx.abs() > Self::MAX_JUMP_MM || cy.abs() > Self::MAX_JUMP_MM {
                self.rejected_jumps += 1;
            } else {
                self.x = self.x.wrapping_add(cx);
                self.y = self.y.wrapping_add(cy);
            }
        }
        self.raw = Some((rx, ry));
        let units = f64::from(i32::from(sip.thpos).rem_euclid(p2dx::ANGLE_UNITS));
        let heading = (units * 360.0 / f64::from(p2dx::ANGLE_UNITS)).round() as u16 % 360;
        if !matches!(sip.compass, 0 | 181 | 255) {
            self.compass = (u16::from(sip.compass) - 1) * 2 % 360;
        }
        for &(n, r) in &sip.sonars {
            match self.sonars.get_mut(usize::from(n)) {
                Some(s) => *s = (f64::from(r) * p2dx::RANGE_CONV).round() as u16,
                None => self.bad_sonar_numbers += 1,
            }
        }
        let (l, r) = (i32::from(sip.lvel), i32::from(sip.rvel));
        let speed = (l + r) / 2;
        let turn_deg = 180.0 * f64::from(r - l) / p2dx::AXLE_MM / std::f64::consts::PI;
        let turn = turn_deg.trunc();
        let stall = (sip.stall_low | sip.stall_high) & 1;
        Readings {
            odometry: Odometry {
                time: 0,
                x: self.x,
                y: self.y,
                heading: (units * f64::from(ARCSEC_PER_TURN) / f64::from(p2dx::ANGLE_UNITS)).round()
                    as i32
                    % ARCSEC_PER_TURN,
                speed,
                turn_rate: (turn_deg * 3600.0).round() as i32,
                stall,
            },
            position: Position {
                time: 0,
                x: self.x,
                y: self.y,
                heading,
                speed: speed as i16,
                turn_rate: turn as i16,
                compass: self.compass,
                stall,
            },
            sonar: Sonar {
                ranges: self.sonars,
            },
            misc: Misc {
                front_bumpers: sip.stall_high >> 1,
                rear_bumpers: sip.stall_low >> 1,
                voltage: sip.battery,
            },
            gripper: Gripper {
                state: (sip.timer >> 8) as u8,
                beams: sip.digin,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::hex;

    #[test]
    fn packets_match_the_fact_sheet_vectors() {
        assert_eq!(command(SYNC0), hex("FA FB 03 00 00 00"));
        assert_eq!(command(SYNC1), hex("FA FB 03 01 00 01"));
        assert_eq!(command(SYNC2), hex("FA FB 03 02 00 02"));
        assert_eq!(command_int(ENABLE, 1), hex("FA FB 06 04 3B 01 00 05 3B"));
        assert_eq!(command_int(ENABLE, 0), hex("FA FB 06 04 3B 00 00 04 3B"));
        assert_eq!(command(STOP), hex("FA FB 03 1D 00 1D"));
        assert_eq!(seto(), hex("FA FB 04 07 3B 07 3B"));
        assert_eq!(command_int(VEL, 200), hex("FA FB 06 0B 3B C8 00 D3 3B"));
        assert_eq!(command_int(VEL, -200), hex("FA FB 06 0B 1B C8 00 D3 1B"));
        assert_eq!(command_int(RVEL, 30), hex("FA FB 06 15 3B 1E 00 33 3B"));
        assert_eq!(command_int(RVEL, -30), hex("FA FB 06 15 1B 1E 00 33 1B"));
        assert_eq!(vel2(7, 2), hex("FA FB 06 20 3B 07 02 27 3D"));
        assert_eq!(vel2(-5, -5), hex("FA FB 06 20 3B FB FB 1C 36"));
        assert_eq!(command_int(SONAR, 1), hex("FA FB 06 1C 3B 01 00 1D 3B"));
        assert_eq!(command_int(GRIPPER, 2), hex("FA FB 06 21 3B 02 00 23 3B"));
        assert_eq!(
            command_int(GRIPPERVAL, 20),
            hex("FA FB 06 24 3B 14 00 38 3B")
        );
    }

    #[test]
    fn sync2_echo_matches_the_checklist() {
        let id = Identity {
            name: "robot1".into(),
            class: "Pioneer".into(),
            subclass: "P2DX".into(),
        };
        let p = packet(&id.encode());
        assert_eq!(
            p,
            hex("FA FB 17 02 72 6F 62 6F 74 31 00 50 69 6F 6E 65 65 72 00 50 32 44 58 00 3E 0E")
        );
        let mut parser = Parser::new();
        parser.push(&p);
        let payload = parser.next_packet().unwrap().unwrap();
        assert_eq!(Identity::parse(&payload), id);
    }

    const WORKED_SIP: &str = "FA FB 21 32 00 00 00 00 00 00 00 00 00 00 78 00 00 00 00 00 00 2E 02 00 4A 07 03 93 0E 05 00 00 00 00 FF D5";

    #[test]
    fn the_worked_sip_decodes_as_the_sheet_says() {
        let mut parser = Parser::new();
        parser.push(&hex(WORKED_SIP));
        let payload = parser.next_packet().unwrap().unwrap();
        let sip = Sip::parse(&payload).unwrap();
        assert_eq!(sip.battery, 120);
        assert_eq!(sip.compass, 46);
        assert_eq!(sip.sonars, vec![(0, 1866), (3, 3731)]);
        assert_eq!(sip.timer, 5);
        assert_eq!(packet(&sip.encode()), hex(WORKED_SIP));
        let r = SipState::new().apply(&sip);
        assert_eq!(r.sonar.ranges[0], 500);
        assert_eq!(r.sonar.ranges[3], 1000);
        assert_eq!(r.position.compass, 90);
        assert_eq!(r.misc.voltage, 120);
        assert_eq!((r.position.x, r.position.y, r.position.heading), (0, 0, 0));
    }

    #[test]
    fn parser_skips_junk_bad_checksums_and_bad_counts_and_resyncs() {
        let good = hex(WORKED_SIP);
        let mut corrupt = good.clone();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0x01;
        let mut stream = vec![0x11, 0xFA, 0x22];
        stream.extend_from_slice(&corrupt);
        stream.extend_from_slice(&[0xFA, 0xFB, 0xF0]); // impossible count
        stream.extend_from_slice(&good);
        let mut p = Parser::new();
        // Byte by byte: the parser must not depend on how the line splits reads.
        let mut out = Vec::new();
        for b in stream {
            p.push(&[b]);
            while let Some(r) = p.next_packet() {
                out.push(r);
            }
        }
        assert_eq!(out.len(), 3, "{out:?}");
        assert!(matches!(out[0], Err(FrameError::BadChecksum { .. })));
        assert_eq!(out[1], Err(FrameError::BadCount(0xF0)));
        assert!(out[2].is_ok());
        assert_eq!(p.bad_checksums, 1);
        assert_eq!(p.bad_counts, 1);
        assert!(p.junk >= 3);
        assert_eq!(p.good, 1);
    }

    #[test]
    fn direct_wheel_example_from_the_sheet() {
        assert_eq!(wheel_units(100, 20), (7, 2));
        assert_eq!(wheel_units(-100, 0), (-5, -5));
        // Each wheel is clamped to 500 mm/s.
        assert_eq!(wheel_units(1000, 0), (25, 25));
        assert_eq!(wheel_units(10, 0), (0, 0));
    }

    #[test]
    fn separate_mode_alternates_as_0_7_4a() {
        let mut m = SeparateMode::new();
        let kinds: Vec<u8> = (0..6).map(|_| m.next(200, 30)[3]).collect();
        assert_eq!(kinds, vec![RVEL, VEL, VEL, RVEL, VEL, VEL]);
        // A turn-only change sends RVEL at once.
        let mut m = SeparateMode::new();
        m.next(200, 30);
        m.next(200, 30);
        assert_eq!(m.next(200, -10)[3], RVEL);
        assert_eq!(SeparateMode::new().next(900, 0), command_int(RVEL, 0));
        let mut m = SeparateMode::new();
        m.next(900, 0);
        assert_eq!(m.next(900, 0), command_int(VEL, 500));
    }

    #[test]
    fn gripper_commands_follow_later_player() {
        assert_eq!(
            gripper_packets(2, 0),
            vec![hex("FA FB 06 21 3B 02 00 23 3B")]
        );
        let press = gripper_packets(GRIP_PRESS, 20);
        assert_eq!(press[1], hex("FA FB 06 24 3B 14 00 38 3B"));
        let carry = gripper_packets(LIFT_CARRY, (-5i8) as u8);
        assert_eq!(HostCommand::parse(&carry[1][3..7]).unwrap().arg, Some(-5));
    }

    #[test]
    fn host_commands_parse_signed_arguments() {
        let c = HostCommand::parse(&[VEL, ARG_NEG, 0xC8, 0x00]).unwrap();
        assert_eq!((c.code, c.arg), (VEL, Some(-200)));
        let c = HostCommand::parse(&[VEL2, ARG_POS, 0xFB, 0x07]).unwrap();
        assert_eq!(c.raw, Some([0xFB, 0x07]));
        assert_eq!(HostCommand::parse(&[SYNC0]).unwrap().arg, None);
        assert_eq!(HostCommand::parse(&[]), None);
    }

    fn sip(x: u16, y: u16, th: i16) -> Sip {
        Sip {
            status: SIP_STOPPED,
            xpos: x,
            ypos: y,
            thpos: th,
            ..Sip::default()
        }
    }

    #[test]
    fn odometry_unwraps_across_the_rollover() {
        let mut s = SipState::new();
        assert_eq!(s.apply(&sip(32700, 10, 0)).position.x, 0);
        // 32700 -> 30 is +98 units forward across the 15-bit rollover.
        let r = s.apply(&sip(30, 10, 0));
        assert_eq!(r.position.x, (98.0 * p2dx::DIST_CONV).round() as i32);
        // And back again.
        let r = s.apply(&sip(32700, 10, 0));
        assert_eq!(r.position.x, 0);
        // A jump of 2000 units (1652 mm) in one SIP is rejected, the raw value adopted.
        let r = s.apply(&sip(2000, 10, 0));
        assert_eq!(r.position.x, 0);
        assert_eq!(s.rejected_jumps, 1);
        let r = s.apply(&sip(2010, 10, 0));
        assert_eq!(r.position.x, 8);
    }

    #[test]
    fn the_precise_odometry_keeps_the_sips_heading_and_turn_rate() {
        let mut s = SipState::new();
        // 1000 of 4096 units: 87.890625 deg = 316406.25 arc-seconds.
        let r = s.apply(&sip(0, 0, 1000));
        assert_eq!(r.odometry.heading, 316_406);
        assert_eq!(r.position.heading, 88);
        assert_eq!((r.odometry.x, r.odometry.y), (r.position.x, r.position.y));
        assert_eq!(s.apply(&sip(0, 0, 4095)).odometry.heading, 1_295_684);
    }

    #[test]
    fn heading_is_0_to_359_never_360() {
        let mut s = SipState::new();
        assert_eq!(s.apply(&sip(0, 0, 4095)).position.heading, 0);
        assert_eq!(s.apply(&sip(0, 0, 4090)).position.heading, 359);
        assert_eq!(s.apply(&sip(0, 0, 1024)).position.heading, 90);
        assert_eq!(s.apply(&sip(0, 0, -1024)).position.heading, 270);
    }

    #[test]
    fn speeds_stall_bumpers_compass_and_bad_sonar_numbers() {
        let mut s = SipState::new();
        let mut x = sip(0, 0, 0);
        x.lvel = 100;
        x.rvel = 200;
        x.stall_low = 0b0000_0101; // left stalled, rear bumper 2
        x.stall_high = 0b0000_0010; // front bumper 1
        x.compass = 181; // no reading: keep the previous (0)
        x.sonars = vec![(16, 100), (15, 1000)];
        x.timer = 0x1205;
        x.digin = 0x0C;
        let r = s.apply(&x);
        assert_eq!(r.position.speed, 150);
        assert_eq!(r.position.turn_rate, 17); // trunc(180*100/320/pi) = 17
        assert_eq!(r.position.stall, 1);
        assert_eq!(r.position.compass, 0);
        assert_eq!(r.misc.front_bumpers, 1);
        assert_eq!(r.misc.rear_bumpers, 2);
        assert_eq!(r.sonar.ranges[15], 268);
        assert_eq!(s.bad_sonar_numbers, 1);
        assert_eq!((r.gripper.state, r.gripper.beams), (0x12, 0x0C));
        x.compass = 1;
        assert_eq!(s.apply(&x).position.compass, 0);
        x.compass = 180;
        assert_eq!(s.apply(&x).position.compass, 358);
        x.lvel = -3;
        x.rvel = 0;
        assert_eq!(s.apply(&x).position.speed, -1); // C division truncates toward zero
    }

    #[test]
    fn short_or_foreign_payloads_are_not_sips() {
        assert_eq!(Sip::parse(&[0x20, 1, 2]), Err(SipError::NotASip(0x20)));
        let p = Sip {
            status: SIP_MOVING,
            sonars: vec![(1, 2)],
            ..Sip::default()
        };
        let mut bytes = p.encode();
        bytes.truncate(bytes.len() - 1);
        assert!(matches!(Sip::parse(&bytes), Err(SipError::TooShort { .. })));
        assert!(Sip::parse(&[]).is_err());
    }
}
