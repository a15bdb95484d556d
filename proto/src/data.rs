//! Device data (manual Table 7) and device commands (manual Table 5).
//!
//! Every type here has a fixed or self-describing size, encodes to big-endian bytes with
//! `encode`, and decodes with `decode`, which checks the size first and never reads past
//! the slice.

use std::fmt;

/// Why a data or command payload could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataError {
    /// The payload does not have the size the device's layout requires.
    WrongSize {
        /// Which layout was being decoded.
        what: &'static str,
        /// The size it requires.
        expected: usize,
        /// The size it had.
        got: usize,
    },
    /// A vision packet's channel counts do not add up to its size.
    BadVision(String),
    /// A full scan (`L`) breaks its layout's bounds.
    BadScan(&'static str),
    /// A navigation layout (`M`, `H`, `G`, their configs and answers) breaks its bounds.
    BadNav(&'static str),
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataError::WrongSize {
                what,
                expected,
                got,
            } => write!(f, "{what} payload must be {expected} bytes, got {got}"),
            DataError::BadVision(why) => write!(f, "bad vision packet: {why}"),
            DataError::BadScan(why) => write!(f, "bad full scan: {why}"),
            DataError::BadNav(why) => write!(f, "bad navigation packet: {why}"),
        }
    }
}

impl std::error::Error for DataError {}

fn check(what: &'static str, expected: usize, b: &[u8]) -> Result<(), DataError> {
    if b.len() == expected {
        Ok(())
    } else {
        Err(DataError::WrongSize {
            what,
            expected,
            got: b.len(),
        })
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Position data, 21 bytes: odometry, speed and stall of the base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    /// Milliseconds since the server started.
    pub time: u32,
    /// X in mm: forward along the heading the robot had when the device was opened.
    pub x: i32,
    /// Y in mm: positive to the left.
    pub y: i32,
    /// Heading in degrees, 0 to 359, counter-clockwise from the initial heading.
    pub heading: u16,
    /// Speed in mm/s, positive forward.
    pub speed: i16,
    /// Turn rate in degrees/s, positive counter-clockwise.
    pub turn_rate: i16,
    /// Compass heading in degrees, 0 to 359, counter-clockwise.
    pub compass: u16,
    /// Zero if no motor stall, otherwise non-zero.
    pub stall: u8,
}

impl Position {
    /// Size on the wire.
    pub const SIZE: usize = 21;

    /// The 21 big-endian bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        v.extend_from_slice(&self.time.to_be_bytes());
        v.extend_from_slice(&self.x.to_be_bytes());
        v.extend_from_slice(&self.y.to_be_bytes());
        v.extend_from_slice(&self.heading.to_be_bytes());
        v.extend_from_slice(&self.speed.to_be_bytes());
        v.extend_from_slice(&self.turn_rate.to_be_bytes());
        v.extend_from_slice(&self.compass.to_be_bytes());
        v.push(self.stall);
        v
    }

    /// Decodes exactly 21 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("position", Self::SIZE, b)?;
        Ok(Position {
            time: be32(b, 0),
            x: be32(b, 4) as i32,
            y: be32(b, 8) as i32,
            heading: be16(b, 12),
            speed: be16(b, 14) as i16,
            turn_rate: be16(b, 16) as i16,
            compass: be16(b, 18),
            stall: b[20],
        })
    }
}

/// The Pioneer 2-DX sonar ring as the sonar device reports it: for each of the 16 ranges,
/// the transducer's x mm forward, y mm left and heading in degrees counter-clockwise. Index
/// 0 is front-left, numbering clockwise to 7 front-right, 8 rear-right .. 15 rear-left.
pub const SONAR_POSES: [(f64, f64, f64); 16] = [
    (115.0, 130.0, 90.0),
    (155.0, 115.0, 50.0),
    (190.0, 80.0, 30.0),
    (210.0, 25.0, 10.0),
    (210.0, -25.0, -10.0),
    (190.0, -80.0, -30.0),
    (155.0, -115.0, -50.0),
    (115.0, -130.0, -90.0),
    (-115.0, -130.0, -90.0),
    (-155.0, -115.0, -130.0),
    (-190.0, -80.0, -150.0),
    (-210.0, -25.0, -170.0),
    (-210.0, 25.0, 170.0),
    (-190.0, 80.0, 150.0),
    (-155.0, 115.0, 130.0),
    (-115.0, 130.0, 90.0),
];

/// Sonar data, 32 bytes: 16 ranges in mm, 0 front-left clockwise to 15 rear-left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sonar {
    /// The ranges in mm.
    pub ranges: [u16; 16],
}

impl Sonar {
    /// Size on the wire.
    pub const SIZE: usize = 32;

    /// The 32 big-endian bytes.
    pub fn encode(&self) -> Vec<u8> {
        self.ranges.iter().flat_map(|r| r.to_be_bytes()).collect()
    }

    /// Decodes exactly 32 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("sonar", Self::SIZE, b)?;
        let mut ranges = [0u16; 16];
        for (i, r) in ranges.iter_mut().enumerate() {
            *r = be16(b, 2 * i);
        }
        Ok(Sonar { ranges })
    }
}

/// Laser data, 722 bytes: 361 ranges in mm, index 0 at the right, counter-clockwise to 360
/// at the left, every half degree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Laser {
    /// The ranges in mm.
    pub ranges: [u16; 361],
}

impl Default for Laser {
    fn default() -> Self {
        Laser { ranges: [0; 361] }
    }
}

impl Laser {
    /// Size on the wire.
    pub const SIZE: usize = 722;

    /// The 722 big-endian bytes.
    pub fn encode(&self) -> Vec<u8> {
        self.ranges.iter().flat_map(|r| r.to_be_bytes()).collect()
    }

    /// Decodes exactly 722 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("laser", Self::SIZE, b)?;
        let mut ranges = [0u16; 361];
        for (i, r) in ranges.iter_mut().enumerate() {
            *r = be16(b, 2 * i);
        }
        Ok(Laser { ranges })
    }
}

/// Miscellaneous data, 3 bytes: bumpers and battery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Misc {
    /// Lowest five bits: the front bumpers.
    pub front_bumpers: u8,
    /// Lowest five bits: the rear bumpers.
    pub rear_bumpers: u8,
    /// Battery voltage in decivolts.
    pub voltage: u8,
}

impl Misc {
    /// Size on the wire.
    pub const SIZE: usize = 3;

    /// The 3 bytes.
    pub fn encode(&self) -> Vec<u8> {
        vec![self.front_bumpers, self.rear_bumpers, self.voltage]
    }

    /// Decodes exactly 3 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("misc", Self::SIZE, b)?;
        Ok(Misc {
            front_bumpers: b[0],
            rear_bumpers: b[1],
            voltage: b[2],
        })
    }
}

/// Gripper data, 2 bytes (bit meanings in the manual's Table 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gripper {
    /// Bit 0 paddles open, 1 closed, 2 moving, 3 error, 4 lift up, 5 down, 6 moving, 7 error.
    pub state: u8,
    /// Bit 0 gripper limit, 1 lift limit, 2 outer beam, 3 inner beam, 4 left paddle open,
    /// 5 right paddle open.
    pub beams: u8,
}

impl Gripper {
    /// Size on the wire.
    pub const SIZE: usize = 2;

    /// The 2 bytes.
    pub fn encode(&self) -> Vec<u8> {
        vec![self.state, self.beams]
    }

    /// Decodes exactly 2 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("gripper", Self::SIZE, b)?;
        Ok(Gripper {
            state: b[0],
            beams: b[1],
        })
    }
}

/// Pan-tilt-zoom data and command, 6 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ptz {
    /// Pan, -100 to 100 degrees, positive counter-clockwise.
    pub pan: i16,
    /// Tilt, -25 to 25 degrees, positive up.
    pub tilt: i16,
    /// Zoom, 0 (wide) to 1023 (telephoto).
    pub zoom: i16,
}

impl Ptz {
    /// Size on the wire.
    pub const SIZE: usize = 6;

    /// The 6 big-endian bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        v.extend_from_slice(&self.pan.to_be_bytes());
        v.extend_from_slice(&self.tilt.to_be_bytes());
        v.extend_from_slice(&self.zoom.to_be_bytes());
        v
    }

    /// Decodes exactly 6 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("ptz", Self::SIZE, b)?;
        Ok(Ptz {
            pan: be16(b, 0) as i16,
            tilt: be16(b, 2) as i16,
            zoom: be16(b, 4) as i16,
        })
    }
}

/// Position command, 4 bytes: speed (mm/s) and turn rate (degrees/s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PositionCommand {
    /// Speed in mm/s, positive forward.
    pub speed: i16,
    /// Turn rate in degrees/s, positive counter-clockwise.
    pub turn_rate: i16,
}

impl PositionCommand {
    /// Size on the wire.
    pub const SIZE: usize = 4;

    /// The 4 big-endian bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        v.extend_from_slice(&self.speed.to_be_bytes());
        v.extend_from_slice(&self.turn_rate.to_be_bytes());
        v
    }

    /// Decodes exactly 4 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("position command", Self::SIZE, b)?;
        Ok(PositionCommand {
            speed: be16(b, 0) as i16,
            turn_rate: be16(b, 2) as i16,
        })
    }
}

/// Gripper command, 2 bytes: a Pioneer gripper command and its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GripperCommand {
    /// The command (1 open, 2 close, 3 stop, 4 lift up, 5 lift down, 6 lift stop, 7 store,
    /// 8 deploy, 15 halt, 16 press, 17 carry).
    pub command: u8,
    /// The argument of the press and carry commands.
    pub arg: u8,
}

impl GripperCommand {
    /// Size on the wire.
    pub const SIZE: usize = 2;

    /// The 2 bytes.
    pub fn encode(&self) -> Vec<u8> {
        vec![self.command, self.arg]
    }

    /// Decodes exactly 2 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        check("gripper command", Self::SIZE, b)?;
        Ok(GripperCommand {
            command: b[0],
            arg: b[1],
        })
    }
}

/// Number of ACTS colour channels.
pub const ACTS_CHANNELS: usize = 32;
/// Most blobs ACTS reports on one channel.
pub const ACTS_MAX_BLOBS: usize = 10;
/// Size of the ACTS header: two bytes per channel.
pub const ACTS_HEADER: usize = 2 * ACTS_CHANNELS;
/// Size of one ACTS blob.
pub const ACTS_BLOB: usize = 10;
/// Largest vision packet: 32 channels of 10 blobs.
pub const VISION_MAX: usize = ACTS_HEADER + ACTS_CHANNELS * ACTS_MAX_BLOBS * ACTS_BLOB;

/// One colour blob (values as they mean, without ACTS's +1 offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Blob {
    /// Area in pixels (at most 2^24 - 1).
    pub area: u32,
    /// Centroid column.
    pub x: u8,
    /// Centroid row.
    pub y: u8,
    /// Bounding box left column.
    pub left: u8,
    /// Bounding box right column.
    pub right: u8,
    /// Bounding box top row.
    pub top: u8,
    /// Bounding box bottom row.
    pub bottom: u8,
}

/// Vision data: the blobs seen on each of the 32 ACTS channels.
///
/// On the wire this is the ACTS 1.0 packet forwarded unchanged (manual 3.5.1): a 64-byte
/// header of (first blob index + 1, blob count + 1) per channel, then 10 bytes per blob, each
/// byte offset by +1, the area as four 6-bit digits. Size 64 + 10 per blob.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Vision {
    /// Blobs per channel, at most 10 each, channel 0 first.
    pub channels: Vec<Vec<Blob>>,
}

impl Vision {
    /// The ACTS packet bytes. Channels past 32 and blobs past 10 per channel are dropped;
    /// coordinates above 254 are clamped so every byte stays non-zero.
    pub fn encode(&self) -> Vec<u8> {
        let total: usize = self
            .channels
            .iter()
            .take(ACTS_CHANNELS)
            .map(|c| c.len().min(ACTS_MAX_BLOBS))
            .sum();
        let mut v = Vec::with_capacity(ACTS_HEADER + ACTS_BLOB * total);
        let mut index = 0usize;
        for k in 0..ACTS_CHANNELS {
            let n = self
                .channels
                .get(k)
                .map_or(0, |c| c.len().min(ACTS_MAX_BLOBS));
            v.push((index + 1).min(255) as u8);
            v.push((n + 1) as u8);
            index += n;
        }
        for channel in self.channels.iter().take(ACTS_CHANNELS) {
            for b in channel.iter().take(ACTS_MAX_BLOBS) {
                let area = b.area.min((1 << 24) - 1);
                for shift in [18, 12, 6, 0] {
                    v.push(((area >> shift) & 0x3F) as u8 + 1);
                }
                for c in [b.x, b.y, b.left, b.right, b.top, b.bottom] {
                    v.push(c.min(254) + 1);
                }
            }
        }
        v
    }

    /// Decodes an ACTS packet, checking that the channel counts match the size (as the
    /// original Java client does).
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        if b.len() < ACTS_HEADER {
            return Err(DataError::WrongSize {
                what: "vision",
                expected: ACTS_HEADER,
                got: b.len(),
            });
        }
        let mut counts = [0usize; ACTS_CHANNELS];
        for (k, c) in counts.iter_mut().enumerate() {
            let byte = b[2 * k + 1];
            if byte == 0 {
                return Err(DataError::BadVision(format!("channel {k} count byte is 0")));
            }
            *c = usize::from(byte - 1);
        }
        let total: usize = counts.iter().sum();
        if b.len() != ACTS_HEADER + ACTS_BLOB * total {
            return Err(DataError::BadVision(format!(
                "{} blobs need {} bytes, packet has {}",
                total,
                ACTS_HEADER + ACTS_BLOB * total,
                b.len()
            )));
        }
        let mut channels = Vec::with_capacity(ACTS_CHANNELS);
        let mut at = ACTS_HEADER;
        for &n in &counts {
            let mut blobs = Vec::with_capacity(n);
            for _ in 0..n {
                let d = |i: usize| u32::from(b[at + i].wrapping_sub(1));
                let area = (d(0) << 18) | (d(1) << 12) | (d(2) << 6) | d(3);
                let u = |i: usize| b[at + i].wrapping_sub(1);
                blobs.push(Blob {
                    area,
                    x: u(4),
                    y: u(5),
                    left: u(6),
                    right: u(7),
                    top: u(8),
                    bottom: u(9),
                });
                at += ACTS_BLOB;
            }
            channels.push(blobs);
        }
        Ok(Vision { channels })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_matches_the_worked_example() {
        // docs/reference/client-protocol-notes.md 1.2: time 1000, x -100, y 250, heading 90,
        // speed -50, turn 10, compass 180, no stall.
        let p = Position {
            time: 1000,
            x: -100,
            y: 250,
            heading: 90,
            speed: -50,
            turn_rate: 10,
            compass: 180,
            stall: 0,
        };
        let bytes = p.encode();
        assert_eq!(
            bytes,
            [
                0x00, 0x00, 0x03, 0xE8, 0xFF, 0xFF, 0xFF, 0x9C, 0x00, 0x00, 0x00, 0xFA, 0x00, 0x5A,
                0xFF, 0xCE, 0x00, 0x0A, 0x00, 0xB4, 0x00
            ]
        );
        assert_eq!(Position::decode(&bytes), Ok(p));
    }

    #[test]
    fn sizes_are_table_7() {
        assert_eq!(Position::default().encode().len(), 21);
        assert_eq!(Sonar::default().encode().len(), 32);
        assert_eq!(Laser::default().encode().len(), 722);
        assert_eq!(Misc::default().encode().len(), 3);
        assert_eq!(Gripper::default().encode().len(), 2);
        assert_eq!(Ptz::default().encode().len(), 6);
        assert_eq!(Vision::default().encode().len(), 64);
    }

    #[test]
    fn wrong_sizes_are_refused() {
        assert!(Position::decode(&[0; 20]).is_err());
        assert!(Sonar::decode(&[0; 33]).is_err());
        assert!(Laser::decode(&[]).is_err());
        assert!(Ptz::decode(&[0; 5]).is_err());
        assert!(PositionCommand::decode(&[0; 6]).is_err());
    }

    #[test]
    fn vision_matches_the_acts_worked_example() {
        // docs/reference/acts.md 3: one blob on channel 2, area 100, centroid (80, 60),
        // box 75..85 x 55..65.
        let mut channels = vec![Vec::new(); 32];
        channels[2].push(Blob {
            area: 100,
            x: 80,
            y: 60,
            left: 75,
            right: 85,
            top: 55,
            bottom: 65,
        });
        let v = Vision { channels };
        let bytes = v.encode();
        assert_eq!(bytes.len(), 74);
        assert_eq!(&bytes[0..6], &[1, 1, 1, 1, 1, 2]);
        assert_eq!(&bytes[6..8], &[2, 1]);
        assert_eq!(
            &bytes[64..],
            &[0x01, 0x01, 0x02, 0x25, 0x51, 0x3D, 0x4C, 0x56, 0x38, 0x42]
        );
        assert_eq!(Vision::decode(&bytes), Ok(v));
    }

    #[test]
    fn vision_with_inconsistent_counts_is_refused() {
        let mut bytes = Vision::default().encode();
        bytes[1] = 3; // channel 0 claims two blobs, none follow
        assert!(Vision::decode(&bytes).is_err());
        bytes[1] = 0;
        assert!(Vision::decode(&bytes).is_err());
    }

    #[test]
    fn commands_round_trip() {
        let c = PositionCommand {
            speed: -200,
            turn_rate: 45,
        };
        assert_eq!(c.encode(), [0xFF, 0x38, 0x00, 0x2D]);
        assert_eq!(PositionCommand::decode(&c.encode()), Ok(c));
        let z = Ptz {
            pan: -100,
            tilt: 25,
            zoom: 1023,
        };
        assert_eq!(Ptz::decode(&z.encode()), Ok(z));
        let g = GripperCommand {
            command: 16,
            arg: 20,
        };
        assert_eq!(GripperCommand::decode(&g.encode()), Ok(g));
    }
}
