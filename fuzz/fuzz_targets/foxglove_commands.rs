//! Fuzzes what a Foxglove client's published messages and service calls command
//! (`player_foxglove::commands`): the input's first byte picks a publish target (each topic
//! of `PUBLISH_TOPICS`, and the goal and pose estimate as the 3D panel's tools on a robot
//! without a planner or localizer) or a service the server answers (each of `SERVICES`,
//! for a client that may write and one that may not); the rest is the message's or the
//! request's bytes, JSON or not, as a `clientPublish` frame or a service call carries them.
//!
//! Checked, beyond no panic, against the JSON read here on its own: a message is refused
//! exactly when it is not JSON, with the parser's reason; every command has exactly its
//! device's command size and decodes with `player_proto`'s own decoder; each number is the
//! JSON's (missing, not a number or not finite: 0) in the field's unit, rounded, or the
//! field's bound on its side when beyond it, never wrapped; a goal's and a pose estimate's
//! heading is the yaw of the message's quaternion (normalized first, as ROS and Foxglove
//! read it) within rounding; a tool's frame is the message's, cut to its bound. A service
//! call is refused exactly when the client may not make it (releasing the e-stop, or any
//! other service without write rights) or its arguments break the documented rule, with
//! the rule as its reason; a config call's payload is its code and arguments byte for byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_foxglove::commands::{service, Action, Call, CommandError, Target, PUBLISH_TOPICS};
use player_foxglove::protocol::SERVICES;
use player_proto::config as codes;
use player_proto::data::{GripperCommand, PositionCommand, Ptz};
use player_proto::device;
use player_proto::nav::{Goal, SetPose};
use serde_json::Value;

/// Arc-seconds per degree.
const ARCSEC_PER_DEG: f64 = 3600.0;

/// Most characters of a tool's frame id kept (the documented bound).
const MAX_FRAME_ID: usize = 64;

/// Most argument bytes of a `/config` call (the documented bound).
const MAX_CONFIG_ARGS: usize = 64;

/// Every publish target a session hands messages to.
fn targets() -> Vec<Target> {
    let mut all: Vec<Target> = PUBLISH_TOPICS
        .split(", ")
        .map(|t| Target::of_topic(t).expect("a listed topic has a target"))
        .collect();
    // A robot with no planner and no localizer: the 3D panel's tools.
    all.extend([
        Target::Goal.on_robot(b""),
        Target::PoseEstimate.on_robot(b""),
    ]);
    all
}

/// The number at `path` in `v` as the documentation says: 0 where missing, not a number
/// or not finite.
fn num(v: &Value, path: &[&str]) -> f64 {
    let mut at = v;
    for k in path {
        at = match at.get(k) {
            Some(x) => x,
            None => return 0.0,
        };
    }
    at.as_f64().filter(|x| x.is_finite()).unwrap_or(0.0)
}

/// Checks that `got` is `want` rounded, or the bound on `want`'s side of `lo..=hi` when
/// `want` is beyond it (clamped, never wrapped).
fn clamped(what: &str, got: i128, want: f64, lo: i128, hi: i128) {
    assert!(!want.is_nan(), "{what}: NaN wanted");
    assert!(
        (lo..=hi).contains(&got),
        "{what}: {got} outside {lo}..={hi}"
    );
    if want >= hi as f64 {
        assert_eq!(got, hi, "{what}: {want} saturates at the top");
    } else if want <= lo as f64 {
        assert_eq!(got, lo, "{what}: {want} saturates at the bottom");
    } else {
        // The conversions' own rounding (a product, then to the nearest): within half a
        // unit, and within a few ulps of `want` where the f64 is coarser than 1.
        let slack = 0.5 + 1e-9 + want.abs() * 1e-12;
        assert!(
            (got as f64 - want).abs() <= slack,
            "{what}: {got} is not {want} rounded"
        );
    }
}

/// Checks that angle `got` (in `turn` units a turn, within half a turn of 0) is `want`
/// (any angle, same units) within rounding, round the circle.
fn same_angle(what: &str, got: i128, want: f64, turn: f64) {
    assert!(
        (got as f64).abs() <= turn / 2.0,
        "{what}: {got} not within half a turn"
    );
    let d = (got as f64 - want).rem_euclid(turn);
    let d = d.min(turn - d);
    assert!(d <= 0.5 + 1e-6, "{what}: {got} is not {want} rounded");
}

/// A `geometry_msgs/Pose`'s x, y (m) and, where it is defined, yaw (rad): the quaternion
/// normalized (a zero one is no turn), its yaw left out near pitch ±90° where it is not.
fn planar(pose: &Value) -> (f64, f64, Option<f64>) {
    let q = ["x", "y", "z", "w"].map(|k| num(pose, &["orientation", k]));
    let big = q.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    let yaw = if big == 0.0 {
        Some(0.0)
    } else {
        let s = q.map(|c| c / big);
        let n = s.iter().map(|c| c * c).sum::<f64>().sqrt();
        let [x, y, z, w] = s.map(|c| c / n);
        let (a, b) = (2.0 * (w * z + x * y), w * w + x * x - y * y - z * z);
        (a.hypot(b) > 1e-6).then(|| a.atan2(b))
    };
    let at = |k| num(pose, &["position", k]);
    (at("x"), at("y"), yaw)
}

/// Checks a published message's action against the JSON `v`.
fn check_action(target: Target, v: &Value, action: Action) {
    let command = |device: u8, size: usize, action: &Action| match action {
        Action::Command { device: d, payload } => {
            assert_eq!((*d, Some(*d)), (device, target.writes()), "{target:?}");
            assert_eq!(payload.len(), size, "{target:?}: the device's command size");
            payload.to_vec()
        }
        other => panic!("{target:?} made {other:?}"),
    };
    match target {
        Target::CmdVel => {
            let p = command(device::POSITION, PositionCommand::SIZE, &action);
            let c = PositionCommand::decode(&p).unwrap();
            let (lo, hi) = (i16::MIN.into(), i16::MAX.into());
            let speed = num(v, &["linear", "x"]) * 1000.0;
            clamped("speed", c.speed.into(), speed, lo, hi);
            let turn = num(v, &["angular", "z"]) * 180.0 / std::f64::consts::PI;
            clamped("turn rate", c.turn_rate.into(), turn, lo, hi);
        }
        Target::Ptz => {
            let p = command(device::PTZ, Ptz::SIZE, &action);
            let z = Ptz::decode(&p).unwrap();
            let (lo, hi) = (i16::MIN.into(), i16::MAX.into());
            clamped("pan", z.pan.into(), num(v, &["pan_deg"]), lo, hi);
            clamped("tilt", z.tilt.into(), num(v, &["tilt_deg"]), lo, hi);
            clamped("zoom", z.zoom.into(), num(v, &["zoom"]), lo, hi);
        }
        Target::Gripper => {
            let p = command(device::GRIPPER, GripperCommand::SIZE, &action);
            let g = GripperCommand::decode(&p).unwrap();
            clamped("gripper", g.command.into(), num(v, &["command"]), 0, 255);
            clamped("gripper arg", g.arg.into(), num(v, &["arg"]), 0, 255);
        }
        Target::MotorPower => {
            let on = v.get("on").and_then(Value::as_bool) == Some(true);
            assert_eq!(action, Action::MotorPower(on));
        }
        Target::EStop => {
            let latch = v.get("latch").and_then(Value::as_bool).unwrap_or(true);
            assert_eq!(action, Action::EStop { latch });
        }
        Target::Tool(topic) => check_tool(topic, v, action),
        Target::Goal => {
            let p = command(device::PLANNER, Goal::SIZE, &action);
            let g = Goal::decode(&p).unwrap();
            let (x, y, yaw) = planar(v.get("pose").unwrap_or(&Value::Null));
            let (lo, hi) = (i32::MIN.into(), i32::MAX.into());
            clamped("goal x", g.x.into(), x * 1000.0, lo, hi);
            clamped("goal y", g.y.into(), y * 1000.0, lo, hi);
            if let Some(yaw) = yaw {
                same_angle("goal heading", g.a.into(), yaw.to_degrees(), 360.0);
            }
        }
        Target::PoseEstimate => check_pose_estimate(v, action),
    }
}

/// Checks a pose estimate's config against the JSON `v`.
fn check_pose_estimate(v: &Value, action: Action) {
    let Action::Config { device: d, payload } = action else {
        panic!("a pose estimate made {action:?}");
    };
    assert_eq!(d, device::LOCALIZE);
    assert_eq!(payload.len(), SetPose::SIZE, "the set pose config's size");
    let s = SetPose::decode(&payload).unwrap();
    let with_cov = v.get("pose").unwrap_or(&Value::Null);
    let (x, y, yaw) = planar(with_cov.get("pose").unwrap_or(&Value::Null));
    let (lo, hi) = (i32::MIN.into(), i32::MAX.into());
    clamped("pose x", s.mean[0].into(), x * 1000.0, lo, hi);
    clamped("pose y", s.mean[1].into(), y * 1000.0, lo, hi);
    if let Some(yaw) = yaw {
        let turn = 360.0 * ARCSEC_PER_DEG;
        same_angle(
            "pose heading",
            s.mean[2].into(),
            yaw.to_degrees() * ARCSEC_PER_DEG,
            turn,
        );
    }
    // x, y and yaw of ROS's 6 x 6 (x, y, z, roll, pitch, yaw), in mm and arc-seconds.
    let idx = [0, 1, 5];
    let unit = [1e3, 1e3, (180.0 / std::f64::consts::PI) * ARCSEC_PER_DEG];
    let cov = with_cov.get("covariance");
    for i in 0..3 {
        for j in 0..3 {
            let c = cov
                .and_then(|c| c.get(idx[i] * 6 + idx[j]))
                .and_then(Value::as_f64)
                .filter(|c| c.is_finite())
                .unwrap_or(0.0);
            let what = format!("covariance {i},{j}");
            let (lo, hi) = (i64::MIN.into(), i64::MAX.into());
            clamped(&what, s.cov[i][j].into(), c * unit[i] * unit[j], lo, hi);
        }
    }
}

/// Checks a 3D panel tool's use against the JSON `v`.
fn check_tool(topic: &'static str, v: &Value, action: Action) {
    let Action::Tool(t) = action else {
        panic!("tool {topic} made {action:?}");
    };
    assert_eq!(t.topic, topic);
    let (x, y) = if topic == "/clicked_point" {
        (num(v, &["point", "x"]), num(v, &["point", "y"]))
    } else {
        let outer = v.get("pose").unwrap_or(&Value::Null);
        let pose = match outer.get("pose") {
            Some(p) if p.is_object() => p,
            _ => outer,
        };
        (num(pose, &["position", "x"]), num(pose, &["position", "y"]))
    };
    assert_eq!((t.x.to_bits(), t.y.to_bits()), (x.to_bits(), y.to_bits()));
    let frame = v
        .get("header")
        .and_then(|h| h.get("frame_id"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let kept: String = frame.chars().take(MAX_FRAME_ID).collect();
    assert_eq!(t.frame, kept, "the frame, cut to its bound");
    assert!(t.reply().starts_with(topic), "{}", t.reply());
}

/// Checks a service call's outcome against the request `v`.
fn check_call(name: &str, v: &Value, may_write: bool, got: Result<Call, CommandError>) {
    let config = |device: u8, payload: &[u8]| Call::Config {
        device,
        payload: payload.to_vec().into(),
    };
    if name == "/estop" {
        let latch = v.get("latch").and_then(Value::as_bool).unwrap_or(true);
        let want = if latch || may_write {
            Ok(Call::EStop { latch })
        } else {
            Err(CommandError::Refused)
        };
        return assert_eq!(got, want);
    }
    if !may_write {
        return assert_eq!(got, Err(CommandError::Refused), "{name} without rights");
    }
    match name {
        "/motor_power" => {
            let on = v.get("on").and_then(Value::as_bool) == Some(true);
            let want = config(device::POSITION, &[codes::MOTOR_POWER, u8::from(on)]);
            assert_eq!(got, Ok(want));
        }
        "/reset_odometry" => {
            let want = config(device::POSITION, &[codes::RESET_ODOMETRY]);
            assert_eq!(got, Ok(want));
        }
        _ => check_config(v, got),
    }
}

/// Checks a `/config` call's outcome against the request `v`.
fn check_config(v: &Value, got: Result<Call, CommandError>) {
    let one = |k: &str| match v.get(k).and_then(Value::as_str) {
        Some(s) if s.len() == 1 => Some(s.as_bytes()[0]),
        _ => None,
    };
    let (Some(device), Some(code)) = (one("device"), one("code")) else {
        return assert_eq!(got, Err(CommandError::DeviceAndCode));
    };
    let args: Option<Vec<u8>> = match v.get("args").and_then(Value::as_array) {
        None => Some(Vec::new()),
        Some(a) if a.len() > MAX_CONFIG_ARGS => None,
        Some(a) => a
            .iter()
            .map(|x| x.as_u64().filter(|&n| n <= 255).map(|n| n as u8))
            .collect(),
    };
    let Some(args) = args else {
        return assert_eq!(got, Err(CommandError::Args));
    };
    let Ok(Call::Config { device: d, payload }) = got else {
        panic!("a good config call made {got:?}");
    };
    assert_eq!(d, device);
    assert_eq!(payload[0], code);
    assert_eq!(&payload[1..], &args[..]);
    assert!(payload.len() <= 1 + MAX_CONFIG_ARGS);
}

/// A refusal names its reason.
fn has_reason(e: &CommandError) {
    let why = e.to_string();
    assert!(!why.is_empty());
    if let CommandError::NotJson(parser) = e {
        assert!(!parser.is_empty() && why.starts_with("not JSON: "), "{why}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&select, rest)) = data.split_first() else {
        return;
    };
    let targets = targets();
    let json: Option<Value> = serde_json::from_slice(rest).ok();
    let k = usize::from(select) % (targets.len() + 2 * SERVICES.len());
    if let Some(&target) = targets.get(k) {
        let got = target.command(rest);
        match (&json, got) {
            (Some(v), Ok(action)) => check_action(target, v, action),
            (None, Err(e)) => {
                assert!(matches!(e, CommandError::NotJson(_)), "{e:?}");
                has_reason(&e);
            }
            (json, got) => panic!("{target:?}: JSON {json:?} made {got:?}"),
        }
        return;
    }
    let k = k - targets.len();
    let (svc, may_write) = (SERVICES[k / 2], k % 2 == 1);
    // As the session does: the request parsed, then made into a call.
    let v = match player_foxglove::commands::parse(rest) {
        Ok(v) => v,
        Err(e) => {
            assert!(json.is_none(), "{} parsed here", svc.name);
            return has_reason(&e);
        }
    };
    assert_eq!(Some(&v), json.as_ref());
    let got = service(svc.name, &v, may_write);
    if let Err(e) = &got {
        has_reason(e);
    }
    check_call(svc.name, &v, may_write, got);
});
