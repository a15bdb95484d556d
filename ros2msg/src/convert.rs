//! From the player devices' readings (manual Table 7, and the `L` full-scan extension) to
//! ROS 2 messages, and from `cmd_vel` to the position command: units (mm, degrees ->
//! m, rad), frames, and the clamp to the robot's limits. Pure functions.

use crate::msg::{
    encode_scan, BatteryState, Header, LaserScan, Odometry, Quaternion, Range, ScanHead, Time,
    TransformStamped, Twist, Vector3,
};
use player_proto::data::{Laser, Misc, Position, PositionCommand, Sonar, SONAR_POSES};
use player_proto::scan::Scan;
use std::f64::consts::PI;
use thiserror::Error;

/// The frames messages are stamped with (each already carrying the robot's prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frames {
    /// Odometry's fixed frame (`odom`).
    pub odom: String,
    /// The robot's body (`base_link`).
    pub base: String,
    /// The laser (`laser`).
    pub laser: String,
    /// Prefix of the sonar transducers' frames (`sonar_`, then the index).
    pub sonar: String,
    /// The map's frame (`map`, under the robots' frame prefix).
    pub map: String,
}

impl Frames {
    /// The frame of sonar transducer `i`.
    pub fn sonar(&self, i: usize) -> String {
        format!("{}{i}", self.sonar)
    }
}

/// Why a reading could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConvertError {
    /// A fixed-size reading had another size.
    #[error(transparent)]
    Data(#[from] player_proto::data::DataError),
}

fn header(stamp: Time, frame: &str) -> Header {
    Header {
        stamp,
        frame_id: frame.to_string(),
    }
}

/// A `LaserScan` from the 0.7.4a laser view `l`: 361 ranges in mm, index i at
/// (i/2 - 90) degrees counter-clockwise from straight ahead. `range_max` (m) is the
/// sensor's: readings at or past it mean no return, and consumers drop them.
pub fn scan_from_l(
    data: &[u8],
    stamp: Time,
    frame: &str,
    range_max: f32,
) -> Result<LaserScan, ConvertError> {
    let l = Laser::decode(data)?;
    Ok(scan_message(
        &l_head(stamp, frame, range_max),
        l_ranges(&l).collect(),
        Vec::new(),
    ))
}

/// The payload of [`scan_from_l`]'s message, written straight from the reading (the
/// publishing path: no message built first).
pub fn scan_payload_from_l(
    data: &[u8],
    stamp: Time,
    frame: &str,
    range_max: f32,
) -> Result<Vec<u8>, ConvertError> {
    let l = Laser::decode(data)?;
    let head = l_head(stamp, frame, range_max);
    Ok(encode_scan(&head, l_ranges(&l), std::iter::empty()))
}

/// The laser view's angles and limits.
fn l_head(stamp: Time, frame: &str, range_max: f32) -> ScanHead<'_> {
    ScanHead {
        stamp,
        frame,
        angle_min: -(PI / 2.0) as f32,
        angle_max: (PI / 2.0) as f32,
        angle_increment: (PI / 360.0) as f32,
        time_increment: 0.0,
        scan_time: 0.0,
        range_min: 0.01,
        range_max,
    }
}

/// The laser view's ranges in m.
fn l_ranges(l: &Laser) -> impl ExactSizeIterator<Item = f32> + '_ {
    l.ranges.iter().map(|&mm| f32::from(mm) / 1000.0)
}

/// The message of a scan's head and sequences.
fn scan_message(h: &ScanHead, ranges: Vec<f32>, intensities: Vec<f32>) -> LaserScan {
    LaserScan {
        header: header(h.stamp, h.frame),
        angle_min: h.angle_min,
        angle_max: h.angle_max,
        angle_increment: h.angle_increment,
        time_increment: h.time_increment,
        scan_time: h.scan_time,
        range_min: h.range_min,
        range_max: h.range_max,
        ranges,
        intensities,
    }
}

/// A `LaserScan` from the full-scan extension `L` (big-endian): `i32` first angle and
/// `i32` increment in microradians (counter-clockwise, 0 straight ahead), `u16` count (at
/// most [`player_proto::scan::MAX_COUNT`]), `u16` flags (bit 0: intensities follow), the
/// ranges as `u16` mm (0: no return, published as +inf as REP-117 asks), then one `u8`
/// intensity each if flagged. Sizes are checked before anything is allocated.
pub fn scan_from_wide_l(
    data: &[u8],
    stamp: Time,
    frame: &str,
    range_max: f32,
) -> Result<LaserScan, ConvertError> {
    // Decoded (and bounded) by the protocol crate, as every other reader of `L` does.
    let scan = Scan::decode(data)?;
    let head = wide_head(&scan, stamp, frame, range_max);
    let (ranges, intensities) = wide_values(&scan);
    Ok(scan_message(&head, ranges.collect(), intensities.collect()))
}

/// The payload of [`scan_from_wide_l`]'s message, written straight from the reading (the
/// publishing path: no message built first).
pub fn scan_payload_from_wide_l(
    data: &[u8],
    stamp: Time,
    frame: &str,
    range_max: f32,
) -> Result<Vec<u8>, ConvertError> {
    let scan = Scan::decode(data)?;
    let head = wide_head(&scan, stamp, frame, range_max);
    let (ranges, intensities) = wide_values(&scan);
    Ok(encode_scan(&head, ranges, intensities))
}

/// A full scan's angles and limits.
fn wide_head<'a>(scan: &Scan, stamp: Time, frame: &'a str, range_max: f32) -> ScanHead<'a> {
    let angle_min = f64::from(scan.angle_min) * 1e-6;
    let increment = f64::from(scan.angle_increment) * 1e-6;
    let count = scan.ranges.len();
    ScanHead {
        stamp,
        frame,
        angle_min: angle_min as f32,
        angle_max: (angle_min + increment * count.saturating_sub(1) as f64) as f32,
        angle_increment: increment as f32,
        time_increment: 0.0,
        scan_time: 0.0,
        range_min: 0.01,
        range_max,
    }
}

/// A full scan's ranges in m (no return: +inf) and its intensities (none if not flagged).
fn wide_values(
    scan: &Scan,
) -> (
    impl ExactSizeIterator<Item = f32> + '_,
    impl ExactSizeIterator<Item = f32> + '_,
) {
    let ranges = scan.ranges.iter().map(|&mm| match mm {
        0 => f32::INFINITY,
        mm => f32::from(mm) / 1000.0,
    });
    let intensities = scan.intensities.as_deref().unwrap_or_default();
    (ranges, intensities.iter().map(|&v| f32::from(v)))
}

/// `nav_msgs/Odometry` and the `odom` -> `base_link` transform from a position reading.
pub fn odometry_from_p(
    data: &[u8],
    stamp: Time,
    frames: &Frames,
) -> Result<(Odometry, TransformStamped), ConvertError> {
    let p = Position::decode(data)?;
    let position = Vector3 {
        x: f64::from(p.x) / 1000.0,
        y: f64::from(p.y) / 1000.0,
        z: 0.0,
    };
    let orientation = Quaternion::from_yaw(f64::from(p.heading).to_radians());
    let odom = Odometry {
        header: header(stamp, &frames.odom),
        child_frame_id: frames.base.clone(),
        position,
        orientation,
        twist: Twist {
            linear: Vector3 {
                x: f64::from(p.speed) / 1000.0,
                ..Vector3::default()
            },
            angular: Vector3 {
                z: f64::from(p.turn_rate).to_radians(),
                ..Vector3::default()
            },
        },
        ..Odometry::default()
    };
    let tf = TransformStamped {
        header: header(stamp, &frames.odom),
        child_frame_id: frames.base.clone(),
        translation: position,
        rotation: orientation,
    };
    Ok((odom, tf))
}

/// Field of view of a Pioneer sonar transducer, rad (about 15 degrees).
pub const SONAR_FOV: f32 = 0.26;
/// Shortest range a Pioneer sonar reports, m.
pub const SONAR_MIN: f32 = 0.1;
/// Longest range a Pioneer sonar reports, m.
pub const SONAR_MAX: f32 = 5.0;

/// One `sensor_msgs/Range` per transducer of a sonar reading, in transducer order.
pub fn ranges_from_s(
    data: &[u8],
    stamp: Time,
    frames: &Frames,
) -> Result<Vec<Range>, ConvertError> {
    let s = Sonar::decode(data)?;
    Ok(s.ranges
        .iter()
        .enumerate()
        .map(|(i, &mm)| Range {
            header: header(stamp, &frames.sonar(i)),
            radiation_type: Range::ULTRASOUND,
            field_of_view: SONAR_FOV,
            min_range: SONAR_MIN,
            max_range: SONAR_MAX,
            range: f32::from(mm) / 1000.0,
            variance: 0.0,
        })
        .collect())
}

/// `sensor_msgs/BatteryState` from the misc reading's voltage (decivolts); what it does
/// not know stays NaN, as the message asks.
pub fn battery_from_m(
    data: &[u8],
    stamp: Time,
    frames: &Frames,
) -> Result<BatteryState, ConvertError> {
    let m = Misc::decode(data)?;
    Ok(BatteryState {
        header: header(stamp, &frames.base),
        voltage: f32::from(m.voltage) / 10.0,
        present: true,
        ..BatteryState::default()
    })
}

/// The static transforms: `base_link` -> `laser` at `laser_pose` (x, y, z in m, yaw in
/// degrees) when there is a laser, `base_link` -> each sonar transducer when there is a sonar.
pub fn static_transforms(
    stamp: Time,
    frames: &Frames,
    laser_pose: Option<[f64; 4]>,
    sonar: bool,
) -> Vec<TransformStamped> {
    let mut v = Vec::new();
    if let Some([x, y, z, yaw]) = laser_pose {
        v.push(TransformStamped {
            header: header(stamp, &frames.base),
            child_frame_id: frames.laser.clone(),
            translation: Vector3 { x, y, z },
            rotation: Quaternion::from_yaw(yaw.to_radians()),
        });
    }
    if sonar {
        for (i, (x, y, heading)) in SONAR_POSES.iter().enumerate() {
            v.push(TransformStamped {
                header: header(stamp, &frames.base),
                child_frame_id: frames.sonar(i),
                translation: Vector3 {
                    x: x / 1000.0,
                    y: y / 1000.0,
                    z: 0.0,
                },
                rotation: Quaternion::from_yaw(heading.to_radians()),
            });
        }
    }
    v
}

/// The position command for a `cmd_vel` twist: forward m/s -> mm/s, yaw rad/s -> deg/s,
/// rounded, each clamped to `max_speed` (mm/s) and `max_turn` (deg/s); anything not finite
/// is a stop. The other components (a holonomic base's) are ignored.
pub fn command_from_twist(t: &Twist, max_speed: i16, max_turn: i16) -> PositionCommand {
    let clamp = |v: f64, max: i16| -> i16 {
        if !v.is_finite() {
            return 0;
        }
        let m = f64::from(max.max(0));
        v.round().clamp(-m, m) as i16
    };
    PositionCommand {
        speed: clamp(t.linear.x * 1000.0, max_speed),
        turn_rate: clamp(t.angular.z.to_degrees(), max_turn),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames() -> Frames {
        Frames {
            odom: "r/odom".into(),
            base: "r/base_link".into(),
            laser: "r/laser".into(),
            sonar: "r/sonar_".into(),
            map: "r/map".into(),
        }
    }

    const T: Time = Time {
        sec: 100,
        nanosec: 5,
    };

    #[test]
    fn the_laser_view_spans_half_degrees_from_right_to_left() {
        let mut l = Laser::default();
        l.ranges[0] = 1000;
        l.ranges[180] = 2500;
        let s = scan_from_l(&l.encode(), T, "laser", 8.0).unwrap();
        assert_eq!(s.ranges.len(), 361);
        assert_eq!((s.ranges[0], s.ranges[180]), (1.0, 2.5));
        let last = s.angle_min + 360.0 * s.angle_increment;
        assert!((last - s.angle_max).abs() < 1e-5);
        assert!((s.angle_min + 1.5707964).abs() < 1e-6);
        assert_eq!(s.header.stamp, T);
        assert!(scan_from_l(&[0; 720], T, "laser", 8.0).is_err());
    }

    fn wide(count: u16, flags: u16, ranges: &[u16], intensities: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&(-2_356_194i32).to_be_bytes());
        b.extend_from_slice(&4_363i32.to_be_bytes());
        b.extend_from_slice(&count.to_be_bytes());
        b.extend_from_slice(&flags.to_be_bytes());
        for r in ranges {
            b.extend_from_slice(&r.to_be_bytes());
        }
        b.extend_from_slice(intensities);
        b
    }

    #[test]
    fn full_scans_keep_their_angles_and_mark_no_return_infinite() {
        let s =
            scan_from_wide_l(&wide(3, 1, &[500, 0, 1200], &[9, 0, 200]), T, "laser", 30.0).unwrap();
        assert_eq!(s.ranges, vec![0.5, f32::INFINITY, 1.2]);
        assert_eq!(s.intensities, vec![9.0, 0.0, 200.0]);
        assert!((s.angle_min + 2.356194).abs() < 1e-6);
        assert!((s.angle_increment - 0.004363).abs() < 1e-7);
        assert!((s.angle_max - (s.angle_min + 2.0 * s.angle_increment)).abs() < 1e-6);
        let plain = scan_from_wide_l(&wide(2, 0, &[1, 2], &[]), T, "laser", 30.0).unwrap();
        assert!(plain.intensities.is_empty());
    }

    #[test]
    fn scan_payloads_written_straight_are_the_messages_encodings() {
        let mut l = Laser::default();
        l.ranges[7] = 4321;
        let data = l.encode();
        assert_eq!(
            scan_payload_from_l(&data, T, "r/laser", 8.0).unwrap(),
            scan_from_l(&data, T, "r/laser", 8.0).unwrap().encode()
        );
        for (flags, intensities) in [(0, &[][..]), (1, &[9, 0, 200][..])] {
            let data = wide(3, flags, &[500, 0, 1200], intensities);
            assert_eq!(
                scan_payload_from_wide_l(&data, T, "laser", 30.0).unwrap(),
                scan_from_wide_l(&data, T, "laser", 30.0).unwrap().encode()
            );
        }
        assert!(scan_payload_from_l(&[0; 720], T, "laser", 8.0).is_err());
        assert!(scan_payload_from_wide_l(&wide(3, 0, &[1, 2], &[]), T, "l", 1.0).is_err());
    }

    #[test]
    fn inconsistent_full_scans_are_refused_before_allocating() {
        assert!(scan_from_wide_l(&[0; 11], T, "l", 1.0).is_err());
        // count says 10001: refused from the header alone.
        assert!(scan_from_wide_l(&wide(10_001, 0, &[], &[]), T, "l", 1.0).is_err());
        // count 3 with two ranges, or intensities flagged and missing.
        assert!(scan_from_wide_l(&wide(3, 0, &[1, 2], &[]), T, "l", 1.0).is_err());
        assert!(scan_from_wide_l(&wide(2, 1, &[1, 2], &[]), T, "l", 1.0).is_err());
    }

    #[test]
    fn odometry_is_in_metres_and_radians_with_a_matching_transform() {
        let p = Position {
            x: 1500,
            y: -250,
            heading: 90,
            speed: 300,
            turn_rate: -45,
            ..Position::default()
        };
        let (o, tf) = odometry_from_p(&p.encode(), T, &frames()).unwrap();
        assert_eq!(
            (o.header.frame_id.as_str(), o.child_frame_id.as_str()),
            ("r/odom", "r/base_link")
        );
        assert_eq!((o.position.x, o.position.y), (1.5, -0.25));
        let half = std::f64::consts::FRAC_PI_4;
        assert!(
            (o.orientation.z - half.sin()).abs() < 1e-12
                && (o.orientation.w - half.cos()).abs() < 1e-12
        );
        assert_eq!(o.twist.linear.x, 0.3);
        assert!((o.twist.angular.z + std::f64::consts::FRAC_PI_4).abs() < 1e-12);
        assert_eq!(tf.translation, o.position);
        assert_eq!(tf.rotation, o.orientation);
        assert_eq!(tf.header, o.header);
    }

    #[test]
    fn each_sonar_transducer_is_a_range_in_its_own_frame() {
        let mut s = Sonar::default();
        s.ranges[3] = 1250;
        let r = ranges_from_s(&s.encode(), T, &frames()).unwrap();
        assert_eq!(r.len(), 16);
        assert_eq!(r[3].range, 1.25);
        assert_eq!(r[15].header.frame_id, "r/sonar_15");
        let tfs = static_transforms(T, &frames(), None, true);
        assert_eq!(tfs.len(), 16);
        assert_eq!(tfs[0].child_frame_id, "r/sonar_0");
        assert_eq!((tfs[0].translation.x, tfs[0].translation.y), (0.115, 0.13));
    }

    #[test]
    fn battery_voltage_is_in_volts() {
        let m = Misc {
            voltage: 125,
            ..Misc::default()
        };
        let b = battery_from_m(&m.encode(), T, &frames()).unwrap();
        assert_eq!(b.voltage, 12.5);
        assert!(b.present && b.percentage.is_nan());
    }

    #[test]
    fn cmd_vel_becomes_mm_per_s_and_degrees_per_s_within_the_limits() {
        let t = |vx: f64, wz: f64| Twist {
            linear: Vector3 {
                x: vx,
                y: 9.0,
                z: 0.0,
            },
            angular: Vector3 {
                x: 0.0,
                y: 0.0,
                z: wz,
            },
        };
        let c = command_from_twist(&t(0.25, std::f64::consts::FRAC_PI_2), 1000, 100);
        assert_eq!((c.speed, c.turn_rate), (250, 90));
        let c = command_from_twist(&t(-3.0, -10.0), 1000, 100);
        assert_eq!((c.speed, c.turn_rate), (-1000, -100));
        let c = command_from_twist(&t(f64::NAN, f64::INFINITY), 1000, 100);
        assert_eq!((c.speed, c.turn_rate), (0, 0));
        let c = command_from_twist(&t(1e12, 0.0), i16::MAX, 100);
        assert_eq!(c.speed, i16::MAX);
    }
}
