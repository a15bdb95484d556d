//! The ROS 2 messages the front end speaks, with their Jazzy field layouts, encoded to and
//! decoded from CDR ([`crate::cdr`]).
//!
//! Published: `sensor_msgs/LaserScan`, `nav_msgs/Odometry`, `tf2_msgs/TFMessage`,
//! `sensor_msgs/Range` (Jazzy's, with `variance`), `sensor_msgs/BatteryState`. Taken:
//! `geometry_msgs/Twist` and `geometry_msgs/TwistStamped` (`cmd_vel`).

use crate::cdr::{CdrError, Reader, Writer};

/// Longest `frame_id` taken from a received message.
pub const MAX_FRAME_ID: usize = 256;

/// `builtin_interfaces/Time`: seconds and nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Time {
    /// Seconds.
    pub sec: i32,
    /// Nanoseconds, below 1e9.
    pub nanosec: u32,
}

impl Time {
    /// From seconds and microseconds (the driver's timestamp).
    pub fn from_sec_usec(sec: u32, usec: u32) -> Self {
        Time {
            sec: sec as i32,
            nanosec: usec.min(999_999) * 1000,
        }
    }

    /// Nanoseconds since the epoch.
    pub fn as_nanos(&self) -> i64 {
        i64::from(self.sec) * 1_000_000_000 + i64::from(self.nanosec)
    }

    pub(crate) fn write(&self, w: &mut Writer) {
        w.i32(self.sec).u32(self.nanosec);
    }

    fn read(r: &mut Reader) -> Result<Self, CdrError> {
        Ok(Time {
            sec: r.i32()?,
            nanosec: r.u32()?,
        })
    }
}

/// `std_msgs/Header`: stamp and frame.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Header {
    /// When the data was taken.
    pub stamp: Time,
    /// The coordinate frame it is in.
    pub frame_id: String,
}

impl Header {
    pub(crate) fn write(&self, w: &mut Writer) {
        self.stamp.write(w);
        w.string(&self.frame_id);
    }

    pub(crate) fn read(r: &mut Reader) -> Result<Self, CdrError> {
        Ok(Header {
            stamp: Time::read(r)?,
            frame_id: r.string(MAX_FRAME_ID)?,
        })
    }
}

/// `geometry_msgs/Vector3`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Vector3 {
    /// X.
    pub x: f64,
    /// Y.
    pub y: f64,
    /// Z.
    pub z: f64,
}

impl Vector3 {
    pub(crate) fn write(&self, w: &mut Writer) {
        w.f64(self.x).f64(self.y).f64(self.z);
    }

    pub(crate) fn read(r: &mut Reader) -> Result<Self, CdrError> {
        Ok(Vector3 {
            x: r.f64()?,
            y: r.f64()?,
            z: r.f64()?,
        })
    }
}

/// `geometry_msgs/Quaternion`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quaternion {
    /// X.
    pub x: f64,
    /// Y.
    pub y: f64,
    /// Z.
    pub z: f64,
    /// W.
    pub w: f64,
}

impl Default for Quaternion {
    fn default() -> Self {
        Quaternion {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            w: 1.0,
        }
    }
}

impl Quaternion {
    /// A rotation of `yaw` radians about Z.
    pub fn from_yaw(yaw: f64) -> Self {
        let (s, c) = (yaw / 2.0).sin_cos();
        Quaternion {
            x: 0.0,
            y: 0.0,
            z: s,
            w: c,
        }
    }

    pub(crate) fn write(&self, w: &mut Writer) {
        w.f64(self.x).f64(self.y).f64(self.z).f64(self.w);
    }

    pub(crate) fn read(r: &mut Reader) -> Result<Self, CdrError> {
        Ok(Quaternion {
            x: r.f64()?,
            y: r.f64()?,
            z: r.f64()?,
            w: r.f64()?,
        })
    }

    /// The rotation's yaw about Z, rad (`player_proto::nav::si::yaw`, the rule of every
    /// front end).
    pub fn yaw(&self) -> f64 {
        let Quaternion { x, y, z, w } = *self;
        player_proto::nav::si::yaw([x, y, z, w])
    }
}

/// `geometry_msgs/Twist`: linear (m/s) and angular (rad/s) velocity.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Twist {
    /// Linear velocity, m/s.
    pub linear: Vector3,
    /// Angular velocity, rad/s.
    pub angular: Vector3,
}

impl Twist {
    fn write(&self, w: &mut Writer) {
        self.linear.write(w);
        self.angular.write(w);
    }

    fn read(r: &mut Reader) -> Result<Self, CdrError> {
        Ok(Twist {
            linear: Vector3::read(r)?,
            angular: Vector3::read(r)?,
        })
    }

    /// Decodes a `geometry_msgs/Twist` payload.
    pub fn decode(payload: &[u8]) -> Result<Self, CdrError> {
        Self::read(&mut Reader::new(payload)?)
    }

    /// The payload of this twist as a `geometry_msgs/Twist`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(48);
        self.write(&mut w);
        w.finish()
    }
}

/// `geometry_msgs/TwistStamped`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TwistStamped {
    /// Stamp and frame.
    pub header: Header,
    /// The velocity.
    pub twist: Twist,
}

impl TwistStamped {
    /// Decodes a `geometry_msgs/TwistStamped` payload (the frame id bounded by
    /// [`MAX_FRAME_ID`]).
    pub fn decode(payload: &[u8]) -> Result<Self, CdrError> {
        let mut r = Reader::new(payload)?;
        Ok(TwistStamped {
            header: Header::read(&mut r)?,
            twist: Twist::read(&mut r)?,
        })
    }

    /// The payload as a `geometry_msgs/TwistStamped`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(64 + self.header.frame_id.len());
        self.header.write(&mut w);
        self.twist.write(&mut w);
        w.finish()
    }
}

/// `sensor_msgs/LaserScan`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LaserScan {
    /// Stamp of the first ray and the laser's frame.
    pub header: Header,
    /// Angle of the first ray, rad.
    pub angle_min: f32,
    /// Angle of the last ray, rad.
    pub angle_max: f32,
    /// Between two rays, rad.
    pub angle_increment: f32,
    /// Between two measurements, s.
    pub time_increment: f32,
    /// Between two scans, s.
    pub scan_time: f32,
    /// Shortest valid range, m.
    pub range_min: f32,
    /// Longest valid range, m.
    pub range_max: f32,
    /// Ranges, m.
    pub ranges: Vec<f32>,
    /// Intensities (may be empty).
    pub intensities: Vec<f32>,
}

impl LaserScan {
    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        encode_scan(
            &ScanHead {
                stamp: self.header.stamp,
                frame: &self.header.frame_id,
                angle_min: self.angle_min,
                angle_max: self.angle_max,
                angle_increment: self.angle_increment,
                time_increment: self.time_increment,
                scan_time: self.scan_time,
                range_min: self.range_min,
                range_max: self.range_max,
            },
            self.ranges.iter().copied(),
            self.intensities.iter().copied(),
        )
    }
}

/// Everything of a `sensor_msgs/LaserScan` but its two sequences, borrowed: what
/// [`encode_scan`] writes before them.
#[derive(Debug, Clone, Copy)]
pub struct ScanHead<'a> {
    /// Stamp of the first ray.
    pub stamp: Time,
    /// The laser's frame.
    pub frame: &'a str,
    /// Angle of the first ray, rad.
    pub angle_min: f32,
    /// Angle of the last ray, rad.
    pub angle_max: f32,
    /// Between two rays, rad.
    pub angle_increment: f32,
    /// Between two measurements, s.
    pub time_increment: f32,
    /// Between two scans, s.
    pub scan_time: f32,
    /// Shortest valid range, m.
    pub range_min: f32,
    /// Longest valid range, m.
    pub range_max: f32,
}

/// A `sensor_msgs/LaserScan` payload written straight from its parts: the ranges and
/// intensities as they are converted, into one buffer of the exact size (no message, no
/// sequence of floats, no frame string built first).
pub fn encode_scan(
    head: &ScanHead,
    ranges: impl ExactSizeIterator<Item = f32>,
    intensities: impl ExactSizeIterator<Item = f32>,
) -> Vec<u8> {
    let n = 48 + head.frame.len() + 4 * (ranges.len() + intensities.len());
    let mut w = Writer::with_capacity(n);
    head.stamp.write(&mut w);
    w.string(head.frame)
        .f32(head.angle_min)
        .f32(head.angle_max)
        .f32(head.angle_increment)
        .f32(head.time_increment)
        .f32(head.scan_time)
        .f32(head.range_min)
        .f32(head.range_max)
        .f32_iter(ranges)
        .f32_iter(intensities);
    w.finish()
}

/// `nav_msgs/Odometry` (pose in `header.frame_id`, twist in `child_frame_id`).
#[derive(Debug, Clone, PartialEq)]
pub struct Odometry {
    /// Stamp and the odometry frame.
    pub header: Header,
    /// The robot's frame.
    pub child_frame_id: String,
    /// Position, m.
    pub position: Vector3,
    /// Orientation.
    pub orientation: Quaternion,
    /// Row-major 6x6 covariance of (x, y, z, roll, pitch, yaw).
    pub pose_covariance: [f64; 36],
    /// Velocity in the child frame.
    pub twist: Twist,
    /// Row-major 6x6 covariance of the twist.
    pub twist_covariance: [f64; 36],
}

impl Default for Odometry {
    fn default() -> Self {
        Odometry {
            header: Header::default(),
            child_frame_id: String::new(),
            position: Vector3::default(),
            orientation: Quaternion::default(),
            pose_covariance: [0.0; 36],
            twist: Twist::default(),
            twist_covariance: [0.0; 36],
        }
    }
}

impl Odometry {
    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(720 + self.header.frame_id.len());
        self.header.write(&mut w);
        w.string(&self.child_frame_id);
        self.position.write(&mut w);
        self.orientation.write(&mut w);
        w.f64_array(&self.pose_covariance);
        self.twist.write(&mut w);
        w.f64_array(&self.twist_covariance);
        w.finish()
    }
}

/// `geometry_msgs/TransformStamped`: where `child_frame_id` is in `header.frame_id`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TransformStamped {
    /// Stamp and the parent frame.
    pub header: Header,
    /// The child frame.
    pub child_frame_id: String,
    /// Translation, m.
    pub translation: Vector3,
    /// Rotation.
    pub rotation: Quaternion,
}

impl TransformStamped {
    fn write(&self, w: &mut Writer) {
        self.header.write(w);
        w.string(&self.child_frame_id);
        self.translation.write(w);
        self.rotation.write(w);
    }

    /// The payload as a lone `geometry_msgs/TransformStamped`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(128);
        self.write(&mut w);
        w.finish()
    }
}

/// `tf2_msgs/TFMessage`: the payload of `tf` and `tf_static`.
pub fn encode_tf(transforms: &[TransformStamped]) -> Vec<u8> {
    let mut w = Writer::with_capacity(8 + 128 * transforms.len());
    w.seq_len(transforms.len());
    for t in transforms {
        t.write(&mut w);
    }
    w.finish()
}

/// `sensor_msgs/Range` (Jazzy's layout, ending with `variance`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Range {
    /// Stamp and the ranger's frame.
    pub header: Header,
    /// [`Range::ULTRASOUND`] or [`Range::INFRARED`].
    pub radiation_type: u8,
    /// Width of the cone, rad.
    pub field_of_view: f32,
    /// Shortest range, m.
    pub min_range: f32,
    /// Longest range, m.
    pub max_range: f32,
    /// The range, m.
    pub range: f32,
    /// Its variance, m² (0: unknown).
    pub variance: f32,
}

impl Range {
    /// `radiation_type` of a sonar.
    pub const ULTRASOUND: u8 = 0;
    /// `radiation_type` of an infrared ranger.
    pub const INFRARED: u8 = 1;

    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(48 + self.header.frame_id.len());
        self.header.write(&mut w);
        w.u8(self.radiation_type)
            .f32(self.field_of_view)
            .f32(self.min_range)
            .f32(self.max_range)
            .f32(self.range)
            .f32(self.variance);
        w.finish()
    }
}

/// `sensor_msgs/BatteryState` (the fields a robot without a fuel gauge knows; the rest NaN
/// as the message asks for unmeasured values).
#[derive(Debug, Clone, PartialEq)]
pub struct BatteryState {
    /// Stamp and frame.
    pub header: Header,
    /// Volts.
    pub voltage: f32,
    /// °C (NaN: unmeasured).
    pub temperature: f32,
    /// A, negative when discharging (NaN: unmeasured).
    pub current: f32,
    /// Ah (NaN: unmeasured).
    pub charge: f32,
    /// Ah, last full (NaN: unmeasured).
    pub capacity: f32,
    /// Ah, design (NaN: unmeasured).
    pub design_capacity: f32,
    /// 0 to 1 (NaN: unmeasured).
    pub percentage: f32,
    /// `POWER_SUPPLY_STATUS_*`.
    pub power_supply_status: u8,
    /// `POWER_SUPPLY_HEALTH_*`.
    pub power_supply_health: u8,
    /// `POWER_SUPPLY_TECHNOLOGY_*`.
    pub power_supply_technology: u8,
    /// A battery is there.
    pub present: bool,
    /// Per cell, V.
    pub cell_voltage: Vec<f32>,
    /// Per cell, °C.
    pub cell_temperature: Vec<f32>,
    /// Slot or plug.
    pub location: String,
    /// Serial number.
    pub serial_number: String,
}

impl Default for BatteryState {
    fn default() -> Self {
        BatteryState {
            header: Header::default(),
            voltage: f32::NAN,
            temperature: f32::NAN,
            current: f32::NAN,
            charge: f32::NAN,
            capacity: f32::NAN,
            design_capacity: f32::NAN,
            percentage: f32::NAN,
            power_supply_status: 0,
            power_supply_health: 0,
            power_supply_technology: 0,
            present: true,
            cell_voltage: Vec::new(),
            cell_temperature: Vec::new(),
            location: String::new(),
            serial_number: String::new(),
        }
    }
}

impl BatteryState {
    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(96 + self.header.frame_id.len());
        self.header.write(&mut w);
        w.f32(self.voltage)
            .f32(self.temperature)
            .f32(self.current)
            .f32(self.charge)
            .f32(self.capacity)
            .f32(self.design_capacity)
            .f32(self.percentage)
            .u8(self.power_supply_status)
            .u8(self.power_supply_health)
            .u8(self.power_supply_technology)
            .bool(self.present)
            .f32_seq(&self.cell_voltage)
            .f32_seq(&self.cell_temperature)
            .string(&self.location)
            .string(&self.serial_number);
        w.finish()
    }
}

/// Decodes a `std_msgs/Bool` payload.
pub fn decode_bool(payload: &[u8]) -> Result<bool, CdrError> {
    Ok(Reader::new(payload)?.u8()? != 0)
}

/// The payload of a `std_msgs/Bool`.
pub fn encode_bool(v: bool) -> Vec<u8> {
    let mut w = Writer::with_capacity(1);
    w.bool(v);
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(frame: &str) -> Header {
        Header {
            stamp: Time {
                sec: 0x0102_0304,
                nanosec: 5,
            },
            frame_id: frame.into(),
        }
    }

    #[test]
    fn a_laser_scan_has_the_bytes_rclpy_serializes() {
        // rclpy.serialization.serialize_message(LaserScan(header.frame_id='laser',
        // ranges=[1.0, 2.0])) on Jazzy, every other field zero.
        let expected = "000100000000000000000000060000006c617365720000000000000000000000\
                        0000000000000000000000000000000000000000020000000000803f00000040\
                        00000000";
        let scan = LaserScan {
            header: Header {
                frame_id: "laser".into(),
                ..Header::default()
            },
            ranges: vec![1.0, 2.0],
            ..LaserScan::default()
        };
        let hex: String = scan.encode().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, expected);
    }

    #[test]
    fn odometry_aligns_its_doubles_after_the_frame_names() {
        let o = Odometry {
            header: header("odom"),
            child_frame_id: "base_link".into(),
            position: Vector3 {
                x: 1.0,
                y: 2.0,
                z: 0.0,
            },
            ..Odometry::default()
        };
        let b = o.encode();
        // stamp 8, "odom" 4+5 -> 17, pad 3 -> 20, "base_link" 4+10 -> 34, pad 6 -> 40.
        assert_eq!(&b[4 + 40..4 + 48], &1.0f64.to_le_bytes());
        // position 24 + orientation 32 + 36 doubles + twist 48 + 36 doubles.
        assert_eq!(b.len(), 4 + 40 + 24 + 32 + 288 + 48 + 288);
        // the identity quaternion's w
        assert_eq!(&b[4 + 88..4 + 96], &1.0f64.to_le_bytes());
    }

    #[test]
    fn tf_messages_count_their_transforms() {
        let t = TransformStamped {
            header: header("odom"),
            child_frame_id: "base_link".into(),
            translation: Vector3 {
                x: 0.5,
                ..Vector3::default()
            },
            rotation: Quaternion::from_yaw(std::f64::consts::PI),
        };
        let b = encode_tf(&[t.clone(), t.clone()]);
        assert_eq!(&b[4..8], &2u32.to_le_bytes());
        // alone: stamp 8, "odom" 4+5 -> 17, pad -> 20, "base_link" 4+10 -> 34, pad -> 40,
        // translation and rotation 56 -> 96.
        assert_eq!(t.encode().len(), 4 + 96);
        // after the count the strings shift but the doubles stay 8-aligned: each transform
        // ends at 96 and 192.
        assert_eq!(b.len(), 4 + 192);
        assert_eq!(&b[4 + 40..4 + 48], &0.5f64.to_le_bytes());
        let q = Quaternion::from_yaw(std::f64::consts::PI);
        assert!((q.z - 1.0).abs() < 1e-12 && q.w.abs() < 1e-12);
    }

    #[test]
    fn a_range_ends_with_its_variance() {
        let r = Range {
            header: header("sonar_0"),
            radiation_type: Range::ULTRASOUND,
            field_of_view: 0.26,
            min_range: 0.1,
            max_range: 5.0,
            range: 1.25,
            variance: 0.0004,
        };
        let b = r.encode();
        // stamp 8, "sonar_0" 4+8 -> 20, u8 -> 21, pad -> 24, 5 floats -> 44.
        assert_eq!(b.len(), 4 + 44);
        assert_eq!(b[4 + 20], 0);
        assert_eq!(&b[4 + 36..4 + 40], &1.25f32.to_le_bytes());
        assert_eq!(&b[4 + 40..4 + 44], &0.0004f32.to_le_bytes());
    }

    #[test]
    fn a_battery_state_puts_its_flags_between_floats_and_sequences() {
        let s = BatteryState {
            header: header(""),
            voltage: 12.5,
            location: "base".into(),
            ..BatteryState::default()
        };
        let b = s.encode();
        // stamp 8, "" 4+1 -> 13, pad -> 16, 7 floats -> 44, 4 bytes -> 48, two empty
        // sequences -> 56, "base" 4+5 -> 65, pad -> 68, "" 4+1 -> 73.
        assert_eq!(b.len(), 4 + 73);
        assert_eq!(&b[4 + 16..4 + 20], &12.5f32.to_le_bytes());
        assert!(f32::from_le_bytes([b[24], b[25], b[26], b[27]]).is_nan());
        assert_eq!(b[4 + 47], 1, "present");
    }

    #[test]
    fn twists_round_trip_and_stamped_ones_keep_their_frame() {
        let t = Twist {
            linear: Vector3 {
                x: 0.3,
                y: 0.0,
                z: 0.0,
            },
            angular: Vector3 {
                x: 0.0,
                y: 0.0,
                z: -0.5,
            },
        };
        assert_eq!(t.encode().len(), 4 + 48);
        assert_eq!(Twist::decode(&t.encode()).unwrap(), t);
        let s = TwistStamped {
            header: header("base_link"),
            twist: t,
        };
        assert_eq!(TwistStamped::decode(&s.encode()).unwrap(), s);
    }

    #[test]
    fn truncated_or_oversized_commands_are_refused() {
        let t = Twist::default().encode();
        for n in 0..t.len() {
            assert!(Twist::decode(&t[..n]).is_err(), "{n} bytes");
        }
        let s = TwistStamped {
            header: header(&"x".repeat(MAX_FRAME_ID + 1)),
            twist: Twist::default(),
        };
        assert!(matches!(
            TwistStamped::decode(&s.encode()),
            Err(CdrError::TooLong { .. })
        ));
        // A frame id claiming 4 GiB in a short payload is refused without allocating.
        let mut b = vec![0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(TwistStamped::decode(&b).is_err());
    }

    #[test]
    fn bools_are_one_byte_after_the_header() {
        assert_eq!(encode_bool(true), vec![0, 1, 0, 0, 1]);
        assert!(decode_bool(&encode_bool(true)).unwrap());
        assert!(!decode_bool(&encode_bool(false)).unwrap());
        assert!(decode_bool(&[0, 1, 0, 0]).is_err());
    }

    #[test]
    fn a_yaw_comes_back_from_its_quaternion() {
        for yaw in [0.0, 0.5, -1.25, 3.0] {
            assert!(
                (Quaternion::from_yaw(yaw).yaw() - yaw).abs() < 1e-12,
                "{yaw}"
            );
        }
        assert_eq!(Quaternion::default().yaw(), 0.0);
    }

    #[test]
    fn driver_timestamps_become_stamps() {
        let t = Time::from_sec_usec(1_700_000_000, 250_000);
        assert_eq!(t.sec, 1_700_000_000);
        assert_eq!(t.nanosec, 250_000_000);
        assert_eq!(t.as_nanos(), 1_700_000_000_250_000_000);
    }
}
