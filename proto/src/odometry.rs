//! The full-precision odometry device `P` (an extension, docs/extensions.md): the base's
//! own position as the 0.7.4a `p` reports it, but with its heading and turn rate in
//! arc-seconds instead of whole degrees and its speeds as 32-bit values. The server's
//! localizer reads it (a whole-degree heading would make the filter's motion model err by
//! up to half a degree a reading); a client may read it too.
//!
//! 25 bytes, big-endian: `u32 time` (ms since the server started, as `p`), `i32 x` mm,
//! `i32 y` mm, `i32 heading` arc-seconds in `[0, 1296000)` counter-clockwise, `i32 speed`
//! mm/s, `i32 turn_rate` arc-seconds/s counter-clockwise, `u8 stall`. A driver that
//! serves `P` publishes it with `p`, in one batch with one timestamp (the same instant).
//!
//! The device `O` (the base's own position when another driver serves `p`, the
//! localizer's map-frame pose) has exactly `p`'s 21-byte layout,
//! [`crate::data::Position`].

use crate::data::DataError;

/// Arc-seconds in a full turn.
pub const ARCSEC_PER_TURN: i32 = 360 * 3600;

/// Arc-seconds per radian.
pub const ARCSEC_PER_RAD: f64 = 3600.0 * 180.0 / std::f64::consts::PI;

/// `P` data, 25 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Odometry {
    /// Milliseconds since the server started (as the position device's).
    pub time: u32,
    /// X, mm (the odometry frame of `p`).
    pub x: i32,
    /// Y, mm.
    pub y: i32,
    /// Heading, arc-seconds counter-clockwise, 0 to 1295999.
    pub heading: i32,
    /// Speed, mm/s, positive forward.
    pub speed: i32,
    /// Turn rate, arc-seconds/s, positive counter-clockwise.
    pub turn_rate: i32,
    /// Zero if no motor stall, otherwise non-zero.
    pub stall: u8,
}

impl Odometry {
    /// Size on the wire.
    pub const SIZE: usize = 25;

    /// The 25 big-endian bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::SIZE);
        v.extend_from_slice(&self.time.to_be_bytes());
        for x in [self.x, self.y, self.heading, self.speed, self.turn_rate] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        v.push(self.stall);
        v
    }

    /// Decodes exactly 25 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, DataError> {
        if b.len() != Self::SIZE {
            return Err(DataError::WrongSize {
                what: "odometry",
                expected: Self::SIZE,
                got: b.len(),
            });
        }
        let i = |at: usize| i32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        Ok(Odometry {
            time: i(0) as u32,
            x: i(4),
            y: i(8),
            heading: i(12),
            speed: i(16),
            turn_rate: i(20),
            stall: b[24],
        })
    }

    /// A heading in radians as arc-seconds in `[0, 1296000)`.
    pub fn heading_of(rad: f64) -> i32 {
        let a = (rad * ARCSEC_PER_RAD).round() as i64;
        a.rem_euclid(i64::from(ARCSEC_PER_TURN)) as i32
    }

    /// The heading in radians.
    pub fn heading_rad(&self) -> f64 {
        f64::from(self.heading) / ARCSEC_PER_RAD
    }

    /// The turn rate in radians per second.
    pub fn turn_rate_rad(&self) -> f64 {
        f64::from(self.turn_rate) / ARCSEC_PER_RAD
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odometry_decodes_from_the_layout() {
        // time 1000 ms, x -2 mm, y 300 mm, heading 90 deg = 324000", speed -150,
        // turn rate -3600"/s (1 deg/s clockwise), stalled.
        let b = [
            0, 0, 0x03, 0xe8, // time
            0xff, 0xff, 0xff, 0xfe, // x
            0, 0, 0x01, 0x2c, // y
            0, 0x04, 0xf1, 0xa0, // heading
            0xff, 0xff, 0xff, 0x6a, // speed
            0xff, 0xff, 0xf1, 0xf0, // turn rate
            1,    // stall
        ];
        let o = Odometry::decode(&b).unwrap();
        assert_eq!(
            o,
            Odometry {
                time: 1000,
                x: -2,
                y: 300,
                heading: 324_000,
                speed: -150,
                turn_rate: -3600,
                stall: 1
            }
        );
        assert_eq!(o.encode(), b);
        assert!((o.heading_rad() - std::f64::consts::FRAC_PI_2).abs() < 1e-9);
        assert!(Odometry::decode(&b[..24]).is_err());
    }

    #[test]
    fn headings_wrap_into_one_turn() {
        assert_eq!(Odometry::heading_of(0.0), 0);
        assert_eq!(Odometry::heading_of(-std::f64::consts::FRAC_PI_2), 972_000);
        assert_eq!(Odometry::heading_of(std::f64::consts::TAU), 0);
        assert_eq!(Odometry::heading_of(1.0_f64.to_radians() / 3600.0), 1);
    }
}
