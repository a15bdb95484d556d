//! Fuzzes the ROS 2 front end's CDR decoders (`player_ros2_msg`), the ones fed by whatever
//! host of the network publishes on the robot's topics. The input's first byte picks what
//! the rest is: a `cmd_vel` `Twist` or `TwistStamped`, an `initialpose`
//! `PoseWithCovarianceStamped`, a `goal_pose` `PoseStamped`, an `estop` `Bool`, a script
//! of raw CDR reads (the reader's primitives and strings under any limit), or a device's
//! reading (`l`, `L`, `p`, `s`, `m`: what a driver or a replayed recording gives) converted
//! to its messages.
//!
//! What decodes must re-encode to bytes that decode to the same value (NaN-aware: compared
//! by bits) and that re-encode to themselves; a frame id stays within `MAX_FRAME_ID`; a
//! `cmd_vel` becomes a position command within the robot's limits; a refused payload is
//! refused for a reason that holds (a length past the limit, a field past the end). A
//! reading's message and the payload written straight from the reading are the same bytes,
//! with one range per reading and finite values where the message wants them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_proto::scan::MAX_COUNT;
use player_ros2_msg::cdr::{CdrError, Reader, Writer, ENCAPSULATION_LE};
use player_ros2_msg::convert::{self, command_from_twist, Frames};
use player_ros2_msg::msg::{
    decode_bool, encode_bool, Header, LaserScan, Time, Twist, TwistStamped, MAX_FRAME_ID,
};
use player_ros2_msg::nav_msg::{PoseStamped, PoseWithCovarianceStamped};
use std::fmt::Debug;

/// The limits a `cmd_vel` is clamped to: a Pioneer's, none, the widest, and a nonsense
/// negative one (taken as zero).
const LIMITS: [(i16, i16); 4] = [(500, 40), (0, 0), (i16::MAX, i16::MAX), (-5, i16::MIN)];

/// Decoding `payload` with `decode` and, if that succeeds, re-encoding: the re-encoded
/// bytes decode to the same value (bit for bit, so NaN and -0.0 count) and re-encode to
/// themselves. Returns the value.
fn round_trip<T: Debug>(
    payload: &[u8],
    decode: impl Fn(&[u8]) -> Result<T, CdrError>,
    encode: impl Fn(&T) -> Vec<u8>,
) -> Option<T> {
    let v = match decode(payload) {
        Ok(v) => v,
        Err(e) => {
            check_refusal(payload, &e);
            return None;
        }
    };
    let bytes = encode(&v);
    assert_eq!(bytes[..4], ENCAPSULATION_LE);
    let again = decode(&bytes).unwrap_or_else(|e| panic!("{v:?} re-encoded does not decode: {e}"));
    // Debug prints every float in full (NaN as NaN, -0.0 as -0.0): equal text, equal value.
    assert_eq!(format!("{again:?}"), format!("{v:?}"));
    assert_eq!(encode(&again), bytes, "{v:?}: the encoding is not stable");
    Some(v)
}

/// A refusal's reason holds for `payload`.
fn check_refusal(payload: &[u8], e: &CdrError) {
    match *e {
        CdrError::NoHeader(n) => assert!(n == payload.len() && n < 4),
        CdrError::Encapsulation(a, b) => {
            assert!([a, b] == payload[..2] && [a, b] != [0, 0] && [a, b] != [0, 1])
        }
        CdrError::Truncated { at, need, left } => {
            assert!(left < need);
            assert_eq!(left, (payload.len() - 4).saturating_sub(at));
        }
        CdrError::TooLong { len, max, .. } => assert!(len > max),
        CdrError::BadString(at) => assert!(at + 4 <= payload.len() - 4),
    }
}

fn check_header(h: &Header) {
    assert!(h.frame_id.len() <= MAX_FRAME_ID, "{}", h.frame_id.len());
}

/// A `cmd_vel` twist as the base's command: within every limit, a stop when not finite.
fn check_command(t: &Twist) {
    for (max_speed, max_turn) in LIMITS {
        let c = command_from_twist(t, max_speed, max_turn);
        assert!(
            i32::from(c.speed).abs() <= i32::from(max_speed.max(0)),
            "{t:?} -> {c:?}"
        );
        assert!(
            i32::from(c.turn_rate).abs() <= i32::from(max_turn.max(0)),
            "{t:?} -> {c:?}"
        );
        if !t.linear.x.is_finite() {
            assert_eq!(c.speed, 0);
        }
        if !t.angular.z.is_finite() {
            assert_eq!(c.turn_rate, 0);
        }
    }
}

fn twist(payload: &[u8]) {
    if let Some(t) = round_trip(payload, Twist::decode, Twist::encode) {
        assert!(payload.len() >= 4 + 48);
        check_command(&t);
    }
}

fn twist_stamped(payload: &[u8]) {
    if let Some(t) = round_trip(payload, TwistStamped::decode, TwistStamped::encode) {
        check_header(&t.header);
        check_command(&t.twist);
    }
}

fn pose_with_covariance(payload: &[u8]) {
    let decoded = round_trip(
        payload,
        PoseWithCovarianceStamped::decode,
        PoseWithCovarianceStamped::encode,
    );
    if let Some(p) = decoded {
        check_header(&p.header);
        let planar = p.planar_covariance();
        let full = PoseWithCovarianceStamped::from_planar(planar);
        let again = PoseWithCovarianceStamped {
            covariance: full,
            ..p.clone()
        };
        assert_eq!(
            format!("{:?}", again.planar_covariance()),
            format!("{planar:?}")
        );
        let _ = p.pose.xy_yaw();
    }
}

fn pose_stamped(payload: &[u8]) {
    if let Some(p) = round_trip(payload, PoseStamped::decode, PoseStamped::encode) {
        check_header(&p.header);
        let _ = p.pose.xy_yaw();
    }
}

fn boolean(payload: &[u8]) {
    if let Some(v) = round_trip(payload, decode_bool, |v| encode_bool(*v)) {
        assert_eq!(v, payload[4] != 0);
    }
}

/// One value read by a script.
#[derive(Debug, PartialEq)]
enum Value {
    U8(u8),
    U32(u32),
    I32(i32),
    F32(u32),
    F64(u64),
    Str(String),
}

/// Reads `ops` (each byte: the primitive, and a string's limit) from `r` until one fails.
fn run_script(ops: &[u8], r: &mut Reader) -> (Vec<Value>, Option<CdrError>) {
    let mut out = Vec::new();
    for &op in ops {
        let before = r.remaining();
        let v = match op % 6 {
            0 => r.u8().map(Value::U8),
            1 => r.u32().map(Value::U32),
            2 => r.i32().map(Value::I32),
            3 => r.f32().map(|x| Value::F32(x.to_bits())),
            4 => r.f64().map(|x| Value::F64(x.to_bits())),
            _ => {
                let max = usize::from(op / 6) * 8;
                let s = r.string(max);
                if let Ok(s) = &s {
                    assert!(s.len() <= max, "{} bytes past the limit {max}", s.len());
                }
                s.map(Value::Str)
            }
        };
        match v {
            Ok(v) => {
                assert!(r.remaining() < before, "{v:?} read nothing");
                out.push(v);
            }
            Err(e) => {
                assert!(r.remaining() <= before);
                return (out, Some(e));
            }
        }
    }
    (out, None)
}

/// `[n][n ops][CDR payload]`: the values a script reads, written again, read back the same.
fn script(input: &[u8]) {
    let Some((&n, rest)) = input.split_first() else {
        return;
    };
    let n = usize::from(n % 32).min(rest.len());
    let (ops, payload) = rest.split_at(n);
    let Ok(mut r) = Reader::new(payload) else {
        return;
    };
    let (values, err) = run_script(ops, &mut r);
    if let Some(e) = &err {
        check_refusal(payload, e);
    }
    let mut w = Writer::default();
    for v in &values {
        match v {
            Value::U8(x) => w.u8(*x),
            Value::U32(x) => w.u32(*x),
            Value::I32(x) => w.i32(*x),
            Value::F32(x) => w.f32(f32::from_bits(*x)),
            Value::F64(x) => w.f64(f64::from_bits(*x)),
            Value::Str(s) => w.string(s),
        };
    }
    let written = w.finish();
    let mut again = Reader::new(&written).expect("our header");
    let (back, err) = run_script(&ops[..values.len()], &mut again);
    assert!(err.is_none(), "{err:?} reading back {values:?}");
    assert_eq!(back, values);
    assert_eq!(again.remaining(), 0);
}

/// The stamp and frames readings are converted with.
const STAMP: Time = Time {
    sec: 1_700_000_000,
    nanosec: 5,
};

fn frames() -> Frames {
    Frames {
        odom: "r/odom".into(),
        base: "r/base_link".into(),
        laser: "r/laser".into(),
        sonar: "r/sonar_".into(),
        map: "r/map".into(),
    }
}

/// A scan's fixed fields are finite, its ranges not negative (no return: 0 in the `l`
/// view, +inf from `L`), its intensities none or one per range.
fn check_scan(s: &LaserScan) {
    for v in [s.angle_min, s.angle_max, s.angle_increment, s.range_min] {
        assert!(v.is_finite(), "{s:?}");
    }
    assert!(s.ranges.iter().all(|&r| r >= 0.0), "{:?}", s.ranges);
    assert!(s.intensities.is_empty() || s.intensities.len() == s.ranges.len());
}

/// `[which][reading]`: one of the readings the front end publishes, converted.
fn reading(input: &[u8]) {
    let Some((&which, data)) = input.split_first() else {
        return;
    };
    let f = frames();
    match which % 5 {
        0 => {
            let msg = convert::scan_from_l(data, STAMP, &f.laser, 8.0);
            let payload = convert::scan_payload_from_l(data, STAMP, &f.laser, 8.0);
            assert_eq!(msg.as_ref().ok().map(LaserScan::encode), payload.ok());
            if let Ok(s) = msg {
                assert_eq!(s.ranges.len(), 361);
                check_scan(&s);
            }
        }
        1 => {
            let msg = convert::scan_from_wide_l(data, STAMP, &f.laser, 8.0);
            let payload = convert::scan_payload_from_wide_l(data, STAMP, &f.laser, 8.0);
            assert_eq!(msg.as_ref().ok().map(LaserScan::encode), payload.ok());
            if let Ok(s) = msg {
                assert!(s.ranges.len() <= MAX_COUNT);
                check_scan(&s);
            }
        }
        2 => {
            if let Ok((odom, tf)) = convert::odometry_from_p(data, STAMP, &f) {
                let q = odom.orientation;
                let norm = q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w;
                assert!((norm - 1.0).abs() < 1e-9, "{q:?}");
                assert_eq!(tf.translation, odom.position);
                assert_eq!(tf.rotation, odom.orientation);
                let p = [odom.position.x, odom.position.y, odom.twist.linear.x];
                assert!(p.iter().all(|v| v.is_finite()), "{odom:?}");
            }
        }
        3 => {
            if let Ok(ranges) = convert::ranges_from_s(data, STAMP, &f) {
                assert_eq!(ranges.len(), 16);
                assert!(ranges.iter().all(|r| r.range.is_finite() && r.range >= 0.0));
            }
        }
        _ => {
            if let Ok(b) = convert::battery_from_m(data, STAMP, &f) {
                assert!(b.voltage.is_finite() && b.voltage >= 0.0);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 7 {
        0 => twist(rest),
        1 => twist_stamped(rest),
        2 => pose_with_covariance(rest),
        3 => pose_stamped(rest),
        4 => boolean(rest),
        5 => script(rest),
        _ => reading(rest),
    }
});
