//! The full scan device `L` (an extension, docs/extensions.md) and the 0.7.4a `l` view of
//! any laser.
//!
//! `L` carries a laser's scan as the sensor measured it, big-endian: `i32 angle_min` in
//! microradians (counter-clockwise, 0 straight ahead), `i32 angle_increment` in
//! microradians, `u16 count` (at most [`MAX_COUNT`]), `u16 flags` (bit 0: intensities
//! follow), `count x u16 range` in mm (0 = no return), then, if flag bit 0, `count x u8
//! intensity`.
//!
//! [`laser_view`] makes the 0.7.4a laser reading (`l`: 361 ranges, index i at
//! (i * 0.5 - 90) degrees) of any scan, so a client written in 2000 reads a modern laser
//! unchanged.

use crate::data::{DataError, Laser};
use std::f64::consts::PI;

/// The most readings an `L` packet carries.
pub const MAX_COUNT: usize = 10_000;
/// Size of the header before the ranges.
pub const HEADER: usize = 12;
/// Flag bit 0: intensities follow the ranges.
pub const FLAG_INTENSITIES: u16 = 1;
/// The largest value the `l` view reads (the 2000 Java client reads signed shorts).
pub const VIEW_CAP: u16 = 32767;
/// Microradians per radian.
pub const URAD: f64 = 1e6;

/// A full scan (`L` data).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scan {
    /// Angle of the first reading, microradians, counter-clockwise, 0 straight ahead.
    pub angle_min: i32,
    /// Angle from one reading to the next, microradians (positive: counter-clockwise).
    pub angle_increment: i32,
    /// Ranges in mm; 0 means no return.
    pub ranges: Vec<u16>,
    /// One intensity per range, if the sensor gives them.
    pub intensities: Option<Vec<u8>>,
}

fn bad(what: &'static str) -> DataError {
    DataError::BadScan(what)
}

impl Scan {
    /// Angle of reading `i`, radians.
    pub fn angle(&self, i: usize) -> f64 {
        (f64::from(self.angle_min) + i as f64 * f64::from(self.angle_increment)) / URAD
    }

    /// The size of this scan on the wire.
    pub fn size(&self) -> usize {
        HEADER + 2 * self.ranges.len() + self.intensities.as_ref().map_or(0, Vec::len)
    }

    /// The big-endian bytes. Fails if there are more than [`MAX_COUNT`] ranges or the
    /// intensities are not one per range.
    pub fn encode(&self) -> Result<Vec<u8>, DataError> {
        let n = self.ranges.len();
        if n > MAX_COUNT {
            return Err(bad("more than 10000 readings"));
        }
        if self.intensities.as_ref().is_some_and(|i| i.len() != n) {
            return Err(bad("intensities are not one per range"));
        }
        let mut v = Vec::with_capacity(self.size());
        v.extend_from_slice(&self.angle_min.to_be_bytes());
        v.extend_from_slice(&self.angle_increment.to_be_bytes());
        v.extend_from_slice(&(n as u16).to_be_bytes());
        let flags = if self.intensities.is_some() {
            FLAG_INTENSITIES
        } else {
            0
        };
        v.extend_from_slice(&flags.to_be_bytes());
        for r in &self.ranges {
            v.extend_from_slice(&r.to_be_bytes());
        }
        if let Some(i) = &self.intensities {
            v.extend_from_slice(i);
        }
        Ok(v)
    }

    /// Decodes an `L` payload; its size must be exactly what its count and flags say.
    pub fn decode(b: &[u8]) -> Result<Scan, DataError> {
        if b.len() < HEADER {
            return Err(DataError::WrongSize {
                what: "full scan header",
                expected: HEADER,
                got: b.len(),
            });
        }
        let angle_min = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let angle_increment = i32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        let n = usize::from(u16::from_be_bytes([b[8], b[9]]));
        let flags = u16::from_be_bytes([b[10], b[11]]);
        if n > MAX_COUNT {
            return Err(bad("count over 10000"));
        }
        let with = flags & FLAG_INTENSITIES != 0;
        let expected = HEADER + 2 * n + if with { n } else { 0 };
        if b.len() != expected {
            return Err(DataError::WrongSize {
                what: "full scan",
                expected,
                got: b.len(),
            });
        }
        let ranges = b[HEADER..HEADER + 2 * n]
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        let intensities = with.then(|| b[HEADER + 2 * n..].to_vec());
        Ok(Scan {
            angle_min,
            angle_increment,
            ranges,
            intensities,
        })
    }

    /// The 0.7.4a view of this scan; see [`laser_view`].
    pub fn laser_view(&self, max_range_mm: u32) -> Laser {
        laser_view(self, max_range_mm)
    }
}

/// Whether a payload of `len` bytes can be an `L` packet at all (the header and a size
/// that some count and flags give).
pub fn size_fits(b: &[u8]) -> bool {
    Scan::decode(b).is_ok()
}

/// Radians to the microradians of the `L` header (saturating).
pub fn to_urad(rad: f64) -> i32 {
    (rad * URAD)
        .round()
        .clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32
}

/// The 0.7.4a `l` view of a scan: 361 ranges in mm, index i at (i * 0.5 - 90) degrees
/// counter-clockwise (180 straight ahead). Each bin takes the reading nearest to it in
/// angle; a bin outside the scan's field of view (farther than half an increment from
/// every reading), a reading of 0 (no return) and a bin of an empty scan read
/// `max_range_mm`, capped at [`VIEW_CAP`] like every value, never 0, so a 2000-era avoider
/// never sees a wall at 0 mm. A scan that covers the full circle wraps around.
pub fn laser_view(scan: &Scan, max_range_mm: u32) -> Laser {
    let far = max_range_mm.clamp(1, u32::from(VIEW_CAP)) as u16;
    let mut out = Laser { ranges: [far; 361] };
    let n = scan.ranges.len();
    let inc = f64::from(scan.angle_increment);
    if n == 0 || inc == 0.0 {
        return out;
    }
    let min = f64::from(scan.angle_min);
    let inv = 1.0 / inc;
    let count = n as i64;
    let full = n as f64 * inc.abs() >= 2.0 * PI * URAD - inc.abs() * 0.5;
    let turn = 2.0 * PI * URAD;
    let step = PI / 360.0 * URAD;
    // The index nearest to position `x` (in increments from the first reading), if any;
    // a cast truncates, so this rounds without a libm call.
    let nearest = |x: f64| -> Option<i64> {
        if x < -0.5 {
            return None;
        }
        let k = (x + 0.5) as i64;
        (k < count).then_some(k)
    };
    for (i, slot) in out.ranges.iter_mut().enumerate() {
        let a = (i as f64 - 180.0) * step;
        let x = (a - min) * inv;
        let k = if full {
            // Any angle is a reading's: wrap into one turn.
            let k = ((x + 0.5).floor() as i64).rem_euclid(count);
            Some(k)
        } else {
            // A bin may be reached a turn away (a scan from 0 to 2 pi that is not full).
            nearest(x)
                .or_else(|| nearest((a + turn - min) * inv))
                .or_else(|| nearest((a - turn - min) * inv))
        };
        let Some(k) = k else {
            continue;
        };
        let r = scan.ranges[k as usize];
        if r != 0 {
            *slot = r.min(VIEW_CAP);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan like a Hokuyo UTM-30LX's: 1081 readings over 270 degrees.
    fn utm(ranges: impl Fn(usize) -> u16) -> Scan {
        let inc = to_urad(0.25_f64.to_radians());
        Scan {
            angle_min: -540 * inc,
            angle_increment: inc,
            ranges: (0..1081).map(ranges).collect(),
            intensities: None,
        }
    }

    #[test]
    fn encode_then_decode_is_the_same_scan_with_and_without_intensities() {
        let mut s = utm(|i| i as u16);
        let b = s.encode().unwrap();
        assert_eq!(b.len(), 12 + 2 * 1081);
        assert_eq!(&b[8..12], &[0x04, 0x39, 0, 0]);
        assert_eq!(Scan::decode(&b).unwrap(), s);
        s.intensities = Some((0..1081).map(|i| (i % 256) as u8).collect());
        let b = s.encode().unwrap();
        assert_eq!(b.len(), 12 + 3 * 1081);
        assert_eq!(&b[10..12], &[0, 1]);
        assert_eq!(Scan::decode(&b).unwrap(), s);
    }

    #[test]
    fn the_header_is_big_endian_signed_microradians() {
        let s = Scan {
            angle_min: -1_570_796,
            angle_increment: 8727,
            ranges: vec![1000, 0],
            intensities: None,
        };
        let b = s.encode().unwrap();
        assert_eq!(
            b,
            vec![0xFF, 0xE8, 0x08, 0x14, 0, 0, 0x22, 0x17, 0, 2, 0, 0, 0x03, 0xE8, 0, 0]
        );
    }

    #[test]
    fn hostile_sizes_and_counts_are_refused_before_allocating() {
        assert!(Scan::decode(&[]).is_err());
        assert!(Scan::decode(&[0; 11]).is_err());
        // Count 65535, no data.
        assert!(Scan::decode(&[0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0]).is_err());
        // Count 10001 with exactly its bytes: over the bound.
        let mut b = vec![0u8; 12 + 2 * 10_001];
        b[8..10].copy_from_slice(&10_001u16.to_be_bytes());
        assert!(Scan::decode(&b).is_err());
        // Flag says intensities, none there.
        let mut b = utm(|_| 1).encode().unwrap();
        b[11] = 1;
        assert!(Scan::decode(&b).is_err());
        // Every truncation of a good packet fails.
        let good = utm(|_| 1).encode().unwrap();
        for cut in 0..good.len() {
            assert!(Scan::decode(&good[..cut]).is_err(), "{cut}");
        }
        let too_many = Scan {
            ranges: vec![1; 10_001],
            ..Scan::default()
        };
        assert!(too_many.encode().is_err());
    }

    #[test]
    fn the_view_puts_each_bin_at_its_angle_counter_clockwise() {
        // Range = 10 x the reading's angle in degrees + 3000: a ramp that tells the
        // direction.
        let s = utm(|i| (3000.0 + 10.0 * (i as f64 * 0.25 - 135.0)).round() as u16);
        let l = laser_view(&s, 30_000);
        for i in 0..361 {
            let deg = i as f64 * 0.5 - 90.0;
            assert_eq!(l.ranges[i], (3000.0 + 10.0 * deg).round() as u16, "bin {i}");
        }
        // Right is low, left is high: counter-clockwise.
        assert!(l.ranges[0] < l.ranges[360]);
    }

    #[test]
    fn no_return_and_outside_the_field_read_the_max_range_never_zero() {
        // A 90-degree scan straight ahead, every reading a return except one.
        let inc = to_urad(1f64.to_radians());
        let mut s = Scan {
            angle_min: -45 * inc,
            angle_increment: inc,
            ranges: vec![1500; 91],
            intensities: None,
        };
        s.ranges[45] = 0;
        let l = laser_view(&s, 5600);
        assert_eq!(l.ranges[180], 5600, "no return straight ahead");
        assert_eq!(l.ranges[0], 5600, "right: outside the field of view");
        assert_eq!(l.ranges[360], 5600, "left: outside the field of view");
        assert_eq!(l.ranges[90], 1500, "45 degrees right: the first reading");
        assert_eq!(l.ranges[270], 1500, "45 degrees left: the last reading");
        assert_eq!(
            l.ranges[89], 5600,
            "45.5 degrees right: past half an increment"
        );
        assert!(l.ranges.iter().all(|&r| r != 0));
        // A huge max range and huge readings are capped for signed-short readers.
        let far = Scan {
            ranges: vec![60_000; 91],
            ..s.clone()
        };
        let l = laser_view(&far, 100_000);
        assert!(l.ranges.iter().all(|&r| r == 32767));
        assert_eq!(laser_view(&Scan::default(), 0).ranges, [1; 361]);
    }

    #[test]
    fn a_full_circle_scan_wraps_and_a_clockwise_scan_reads_the_same() {
        // 360 readings from -180 degrees, one per degree; range = 2000 + 10 x index.
        let inc = to_urad(1f64.to_radians());
        let ccw = Scan {
            angle_min: -180 * inc,
            angle_increment: inc,
            ranges: (0..360).map(|i| 2000 + 10 * i as u16).collect(),
            intensities: None,
        };
        let l = laser_view(&ccw, 12_000);
        assert_eq!(l.ranges[180], 2000 + 1800, "0 degrees is index 180");
        assert_eq!(l.ranges[0], 2000 + 900, "-90 degrees is index 90");
        assert_eq!(l.ranges[360], 2000 + 2700, "+90 degrees is index 270");
        // The same readings listed clockwise from +179 degrees.
        let cw = Scan {
            angle_min: 179 * inc,
            angle_increment: -inc,
            ranges: (0..360).map(|i| ccw.ranges[359 - i]).collect(),
            intensities: None,
        };
        assert_eq!(laser_view(&cw, 12_000), l);
    }

    #[test]
    fn a_sick_scan_views_as_itself() {
        let s = Scan {
            angle_min: to_urad(-PI / 2.0),
            angle_increment: to_urad(PI / 360.0),
            ranges: (0..361).map(|i| 100 + i as u16).collect(),
            intensities: None,
        };
        let l = laser_view(&s, 8191);
        assert_eq!(l.ranges.to_vec(), s.ranges);
    }
}
