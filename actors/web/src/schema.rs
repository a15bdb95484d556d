//! The channels the web endpoint advertises and how each Player reading becomes a Foxglove
//! message (JSON, described by a JSON schema). Pure: readings in, JSON bytes out.
//!
//! Frames: `odom` is the position device's odometry frame (x forward at the last odometry
//! reset, y left, metres); `base_link` is the robot; `map` is the simulated world, when the
//! driver has one. `/tf` carries `odom → base_link`, `/tf_map` carries `map → odom`. On an
//! endpoint serving several robots a robot's `odom` and `base_link` are under its name
//! ([`prefix_frames`]).
//!
//! The channel table ([`CHANNELS`]) and the JSON schemas ([`schema`]) are the pure crate's
//! (`player_foxglove::channels`, `player_foxglove::jsonschema`), re-exported here.

use player_kit::driver::{DeviceData, MapOutline, Timestamp};
use player_proto::data::{self as wire};
use player_proto::scan::Scan;
use serde_json::{json, Value};

mod text;

use text::{scan_json, sonar_json};

/// The channel table (the pure crate's).
pub use player_foxglove::channels::{Channel, Source, CHANNELS};
/// The JSON schema of a schema name (the pure crate's).
pub use player_foxglove::jsonschema::schema;

/// The Pioneer 2-DX sonar ring (one table, in the protocol crate).
pub use player_proto::data::SONAR_POSES;

/// Half the opening of a sonar cone, degrees.
pub const SONAR_HALF_CONE_DEG: f64 = 15.0;

/// ACTS image size in pixels (the vision device's blob coordinates).
pub const IMAGE_SIZE: (u32, u32) = (160, 120);

/// A JSON `{sec, nsec}` for a driver timestamp.
pub fn time(t: Timestamp) -> Value {
    json!({"sec": t.sec, "nsec": u64::from(t.usec) * 1000})
}

fn quat_z(theta: f64) -> Value {
    json!({"x": 0.0, "y": 0.0, "z": (theta / 2.0).sin(), "w": (theta / 2.0).cos()})
}

fn identity_pose() -> Value {
    json!({"position": {"x": 0.0, "y": 0.0, "z": 0.0},
        "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}})
}

fn frame_transform(t: Timestamp, parent: &str, child: &str, x: f64, y: f64, th: f64) -> Value {
    json!({"timestamp": time(t), "parent_frame_id": parent, "child_frame_id": child,
        "translation": {"x": x, "y": y, "z": 0.0}, "rotation": quat_z(th)})
}

fn rgba(r: f64, g: f64, b: f64, a: f64) -> Value {
    json!({"r": r, "g": g, "b": b, "a": a})
}

fn scene_entity(t: Timestamp, frame: &str, id: &str) -> serde_json::Map<String, Value> {
    let mut e = serde_json::Map::new();
    e.insert("timestamp".into(), time(t));
    e.insert("frame_id".into(), frame.into());
    e.insert("id".into(), id.into());
    e.insert("lifetime".into(), json!({"sec": 0, "nsec": 0}));
    e.insert("frame_locked".into(), true.into());
    for k in [
        "metadata",
        "arrows",
        "cubes",
        "spheres",
        "cylinders",
        "lines",
        "triangles",
        "texts",
        "models",
    ] {
        e.insert(k.into(), json!([]));
    }
    e
}

/// Poses in the `map` frame (x, y in m, heading in rad) as a `foxglove.PosesInFrame`.
pub fn encode_poses(t: Timestamp, poses: &[[f64; 3]]) -> Vec<u8> {
    let poses: Vec<Value> = poses
        .iter()
        .map(|&[x, y, th]| {
            json!({"position": {"x": x, "y": y, "z": 0.0}, "orientation": quat_z(th)})
        })
        .collect();
    let v = json!({"timestamp": time(t), "frame_id": "map", "poses": poses});
    serde_json::to_vec(&v).unwrap_or_default()
}

/// The localizer's (`H`) best hypothesis in the map: x, y (m), heading (rad); `None`
/// when the reading does not decode or holds no hypothesis.
pub fn amcl_pose(d: &DeviceData) -> Option<[f64; 3]> {
    let l = player_proto::nav::Localize::decode(&d.data).ok()?;
    player_core::frontend::nav::best_pose(&l).map(|(mean, _, _)| mean)
}

/// The planner's (`G`) goal in the map: x, y (m), heading (rad); `None` when the reading
/// does not decode or the planner has no goal (idle).
pub fn planner_goal(d: &DeviceData) -> Option<[f64; 3]> {
    let p = player_proto::nav::Planner::decode(&d.data).ok()?;
    if p.state == player_proto::nav::PlannerState::Idle {
        return None;
    }
    let [x, y, a] = p.goal;
    Some([
        f64::from(x) / 1000.0,
        f64::from(y) / 1000.0,
        f64::from(a).to_radians(),
    ])
}

/// The pose in the map a reading carries on a map-frame pose channel: the localizer's best
/// hypothesis (`/amcl_pose`) or the planner's goal (`/goal`); `None` otherwise.
pub fn map_pose(channel: &Channel, d: &DeviceData) -> Option<[f64; 3]> {
    match channel.id {
        15 => amcl_pose(d),
        19 => planner_goal(d),
        _ => None,
    }
}

/// The message a reading becomes on `channel`, or `None` when the reading does not decode
/// (a wrong size from a misbehaving driver) or the channel is not a device's.
pub fn encode(channel: &Channel, d: &DeviceData) -> Option<Vec<u8>> {
    let t = d.timestamp;
    let v = match channel.id {
        1..=3 => {
            let p = wire::Position::decode(&d.data).ok()?;
            let (x, y) = (f64::from(p.x) / 1000.0, f64::from(p.y) / 1000.0);
            let th = f64::from(p.heading).to_radians();
            match channel.id {
                1 => frame_transform(t, "odom", "base_link", x, y, th),
                2 => json!({"timestamp": time(t), "frame_id": "odom", "pose": {
                    "position": {"x": x, "y": y, "z": 0.0}, "orientation": quat_z(th)}}),
                _ => json!({"timestamp": time(t), "time_ms": p.time, "x_mm": p.x, "y_mm": p.y,
                    "heading_deg": p.heading, "speed_mm_s": p.speed,
                    "turn_rate_deg_s": p.turn_rate, "compass_deg": p.compass,
                    "stall": p.stall != 0}),
            }
        }
        15 | 19 => {
            let [x, y, th] = map_pose(channel, d)?;
            json!({"timestamp": time(t), "frame_id": "map", "pose": {
                "position": {"x": x, "y": y, "z": 0.0}, "orientation": quat_z(th)}})
        }
        4 => {
            let l = wire::Laser::decode(&d.data).ok()?;
            let (start, end) = (-std::f64::consts::FRAC_PI_2, std::f64::consts::FRAC_PI_2);
            return Some(scan_json(t, start, end, &l.ranges, &[]));
        }
        14 => {
            // The full scan `L` as the sensor measured it, in the laser's frame (the `l`
            // view's): 0 m is no return, as on `/laser`.
            let s = Scan::decode(&d.data).ok()?;
            let (start, end) = (s.angle(0), s.angle(s.ranges.len().saturating_sub(1)));
            let intensities = s.intensities.as_deref().unwrap_or_default();
            return Some(scan_json(t, start, end, &s.ranges, intensities));
        }
        5 => {
            let s = wire::Sonar::decode(&d.data).ok()?;
            return Some(sonar_json(t, &s.ranges));
        }
        6 => {
            let m = wire::Misc::decode(&d.data).ok()?;
            let bits = |b: u8| (0..5).map(|i| b & (1 << i) != 0).collect::<Vec<bool>>();
            json!({"timestamp": time(t), "front_bumpers": bits(m.front_bumpers),
                "rear_bumpers": bits(m.rear_bumpers),
                "battery_volts": f64::from(m.voltage) / 10.0})
        }
        7 => {
            let g = wire::Gripper::decode(&d.data).ok()?;
            let bit = |b: u8, i: u8| b & (1 << i) != 0;
            json!({"timestamp": time(t), "state": g.state, "beams": g.beams,
                "paddles_open": bit(g.state, 0), "paddles_closed": bit(g.state, 1),
                "lift_up": bit(g.state, 4), "lift_down": bit(g.state, 5),
                "outer_beam": bit(g.beams, 2), "inner_beam": bit(g.beams, 3)})
        }
        8 => {
            let z = wire::Ptz::decode(&d.data).ok()?;
            json!({"timestamp": time(t), "pan_deg": z.pan, "tilt_deg": z.tilt, "zoom": z.zoom})
        }
        9 | 10 => {
            let v = wire::Vision::decode(&d.data).ok()?;
            let blobs = v
                .channels
                .iter()
                .enumerate()
                .flat_map(|(c, bs)| bs.iter().map(move |b| (c, *b)));
            if channel.id == 10 {
                let list: Vec<Value> = blobs
                    .map(|(c, b)| {
                        json!({"channel": c, "area": b.area, "x": b.x, "y": b.y,
                            "left": b.left, "right": b.right, "top": b.top, "bottom": b.bottom})
                    })
                    .collect();
                json!({"timestamp": time(t), "width": IMAGE_SIZE.0, "height": IMAGE_SIZE.1,
                    "blobs": list})
            } else {
                let mut circles = Vec::new();
                let mut boxes = Vec::new();
                for (c, b) in blobs {
                    let colour = channel_colour(c);
                    circles.push(json!({"timestamp": time(t),
                        "position": {"x": f64::from(b.x), "y": f64::from(b.y)},
                        "diameter": 4.0, "thickness": 1.0, "fill_color": colour.clone(),
                        "outline_color": colour.clone()}));
                    let (l, r) = (f64::from(b.left), f64::from(b.right));
                    let (tp, bt) = (f64::from(b.top), f64::from(b.bottom));
                    boxes.push(json!({"timestamp": time(t), "type": 2,
                        "points": [{"x": l, "y": tp}, {"x": r, "y": tp},
                            {"x": r, "y": bt}, {"x": l, "y": bt}],
                        "outline_color": colour, "outline_colors": [],
                        "fill_color": rgba(0.0, 0.0, 0.0, 0.0), "thickness": 1.0}));
                }
                json!({"circles": circles, "points": boxes, "texts": []})
            }
        }
        _ => return None,
    };
    serde_json::to_vec(&v).ok()
}

/// The sonar cones as triangles: per sonar (in [`SONAR_POSES`] order) its position and the
/// two far corners of its cone, `[x, y]` in metres in `base_link`.
pub fn sonar_cones(ranges: &[u16]) -> Vec<[f64; 2]> {
    let mut points = Vec::with_capacity(3 * ranges.len());
    for (r, &(sx, sy, sh)) in ranges.iter().zip(SONAR_POSES.iter()) {
        let r = f64::from(*r) / 1000.0;
        let (sx, sy) = (sx / 1000.0, sy / 1000.0);
        points.push([sx, sy]);
        for side in [-1.0, 1.0] {
            let a = (sh + side * SONAR_HALF_CONE_DEG).to_radians();
            points.push([sx + r * a.cos(), sy + r * a.sin()]);
        }
    }
    points
}

/// The colour (red, green, blue) of ACTS channel `c` (the same on the built-in page).
pub fn channel_rgb(c: usize) -> (f64, f64, f64) {
    const COLOURS: [(f64, f64, f64); 6] = [
        (1.0, 0.2, 0.2),
        (0.2, 0.8, 0.2),
        (0.2, 0.4, 1.0),
        (1.0, 0.8, 0.1),
        (0.9, 0.3, 0.9),
        (0.1, 0.8, 0.8),
    ];
    COLOURS[c % COLOURS.len()]
}

/// A colour for ACTS channel `c` (the same on the built-in page).
pub fn channel_colour(c: usize) -> Value {
    let (r, g, b) = channel_rgb(c);
    rgba(r, g, b, 1.0)
}

/// The `/walls` message: the walls as one line list in the `map` frame.
pub fn encode_map(map: &MapOutline, t: Timestamp) -> Vec<u8> {
    let mut points = Vec::with_capacity(map.segments.len() * 2);
    for s in &map.segments {
        points.push(json!({"x": s[0], "y": s[1], "z": 0.0}));
        points.push(json!({"x": s[2], "y": s[3], "z": 0.0}));
    }
    let mut e = scene_entity(t, "map", "walls");
    e.insert(
        "lines".into(),
        json!([{"type": 2, "pose": identity_pose(), "thickness": 0.03,
            "scale_invariant": false, "points": points, "color": rgba(0.1, 0.1, 0.1, 1.0),
            "colors": [], "indices": []}]),
    );
    serde_json::to_vec(&json!({"deletions": [], "entities": [Value::Object(e)]}))
        .unwrap_or_default()
}

/// The `/tf_map` message: `map → odom`.
pub fn encode_map_transform(map: &MapOutline, t: Timestamp) -> Vec<u8> {
    let [x, y, th] = map.odometry_origin;
    serde_json::to_vec(&frame_transform(t, "map", "odom", x, y, th)).unwrap_or_default()
}

/// A message encoded for one robot with its frames renamed for an endpoint serving several
/// robots (`world.rs` has the rule): every `*_id` field naming `odom` or `base_link` names
/// `<prefix>/odom`, `<prefix>/base_link`.
/// (The encoder writes compact JSON, so the fields are exactly `"frame_id":"odom"` and the
/// like.)
pub fn prefix_frames(json: &[u8], prefix: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 64);
    let mut i = 0;
    while i < json.len() {
        let rest = &json[i..];
        let hit = [&b"_id\":\"odom\""[..], &b"_id\":\"base_link\""[..]]
            .into_iter()
            .find(|p| rest.starts_with(p));
        match hit {
            Some(p) => {
                out.extend_from_slice(b"_id\":\"");
                out.extend_from_slice(prefix.as_bytes());
                out.push(b'/');
                out.extend_from_slice(&p[6..]);
                i += p.len();
            }
            None => {
                out.push(json[i]);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use bytes::Bytes;

    /// A reading of `device` with `data`, stamped 1 700 000 000.25 s (seq 1).
    pub(crate) fn reading(device: u8, data: Vec<u8>) -> DeviceData {
        DeviceData {
            device,
            data: Bytes::from(data),
            timestamp: Timestamp {
                sec: 1_700_000_000,
                usec: 250_000,
            },
            seq: 1,
        }
    }

    /// The channel of `topic`.
    pub(crate) fn channel(topic: &str) -> &'static Channel {
        CHANNELS.iter().find(|c| c.topic == topic).unwrap()
    }

    /// A blobfinder reading: no blob on channel 0, one 20 × 20 blob at (80, 60) on channel 1.
    pub(crate) fn one_blob() -> DeviceData {
        let vis = wire::Vision {
            channels: vec![
                vec![],
                vec![wire::Blob {
                    area: 40,
                    x: 80,
                    y: 60,
                    left: 70,
                    right: 90,
                    top: 50,
                    bottom: 70,
                }],
            ],
        };
        reading(b'v', vis.encode())
    }

    fn decode(channel: &Channel, d: &DeviceData) -> Value {
        serde_json::from_slice(&encode(channel, d).expect("encodes")).unwrap()
    }

    #[test]
    fn a_laser_scan_is_in_metres_right_to_left() {
        let mut l = wire::Laser::default();
        l.ranges[0] = 1500;
        l.ranges[360] = 250;
        let v = decode(channel("/laser"), &reading(b'l', l.encode()));
        assert_eq!(v["ranges"].as_array().unwrap().len(), 361);
        assert_eq!(v["ranges"][0], 1.5);
        assert_eq!(v["ranges"][360], 0.25);
        assert!(v["start_angle"].as_f64().unwrap() < 0.0);
        assert_eq!(v["timestamp"]["sec"], 1_700_000_000);
        assert_eq!(v["timestamp"]["nsec"], 250_000_000);
    }

    #[test]
    fn a_full_scan_keeps_its_angles_ranges_and_intensities() {
        let s = Scan {
            angle_min: -2_094_395,
            angle_increment: 6_136,
            ranges: vec![1500, 0, 250],
            intensities: Some(vec![7, 0, 255]),
        };
        let v = decode(channel("/scan"), &reading(b'L', s.encode().unwrap()));
        assert_eq!(v["ranges"], json!([1.5, 0.0, 0.25]));
        assert_eq!(v["intensities"], json!([7, 0, 255]));
        assert_eq!(v["start_angle"], -2.094395);
        assert!((v["end_angle"].as_f64().unwrap() - (-2.094395 + 2.0 * 0.006136)).abs() < 1e-9);
        assert_eq!(
            v["frame_id"],
            decode(
                channel("/laser"),
                &reading(b'l', wire::Laser::default().encode())
            )["frame_id"]
        );
        assert_eq!(v["timestamp"]["sec"], 1_700_000_000);
        let plain = Scan {
            intensities: None,
            ..s
        };
        let v = decode(channel("/scan"), &reading(b'L', plain.encode().unwrap()));
        assert_eq!(v["intensities"], json!([]));
        // A scan whose size disagrees with its count is not sent.
        let mut short = plain.encode().unwrap();
        short.pop();
        assert!(encode(channel("/scan"), &reading(b'L', short)).is_none());
    }

    #[test]
    fn a_position_is_a_transform_a_pose_and_plain_json() {
        let p = wire::Position {
            x: 1000,
            y: -500,
            heading: 90,
            stall: 1,
            ..Default::default()
        };
        let d = reading(b'p', p.encode());
        let tf = decode(channel("/tf"), &d);
        assert_eq!(tf["parent_frame_id"], "odom");
        assert_eq!(tf["child_frame_id"], "base_link");
        assert_eq!(tf["translation"]["x"], 1.0);
        assert_eq!(tf["translation"]["y"], -0.5);
        let w = tf["rotation"]["w"].as_f64().unwrap();
        assert!((w - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-9);
        let pose = decode(channel("/pose"), &d);
        assert_eq!(pose["pose"]["position"]["x"], 1.0);
        let plain = decode(channel("/position"), &d);
        assert_eq!(plain["stall"], true);
        assert_eq!(plain["heading_deg"], 90);
    }

    #[test]
    fn sonar_cones_are_triangles_as_long_as_the_ranges() {
        let mut ranges = [1000; 16];
        ranges[3] = 2000;
        let s = wire::Sonar { ranges };
        let v = decode(channel("/sonar"), &reading(b's', s.encode()));
        let pts = v["entities"][0]["triangles"][0]["points"]
            .as_array()
            .unwrap();
        assert_eq!(pts.len(), 48);
        // Sonar 3 points 10 degrees left: its cone spans -5 to 25 degrees, 2 m long.
        let far = pts[3 * 3 + 1]["x"].as_f64().unwrap();
        assert!(
            (far - (0.21 + 2.0 * 5f64.to_radians().cos())).abs() < 1e-6,
            "{far}"
        );
    }

    #[test]
    fn the_planners_goal_is_a_pose_in_the_map_while_it_has_one() {
        use player_proto::nav::{Planner, PlannerState};
        let mut p = Planner {
            goal: [8500, -1000, 90],
            state: PlannerState::Driving,
            ..Default::default()
        };
        let d = reading(b'G', p.encode());
        let v = decode(channel("/goal"), &d);
        assert_eq!(v["frame_id"], "map");
        assert_eq!(v["pose"]["position"]["x"], 8.5);
        assert_eq!(v["pose"]["position"]["y"], -1.0);
        let z = v["pose"]["orientation"]["z"].as_f64().unwrap();
        assert!((z - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-9, "{v}");
        // Idle: no goal, nothing sent.
        p.state = PlannerState::Idle;
        assert!(encode(channel("/goal"), &reading(b'G', p.encode())).is_none());
    }

    #[test]
    fn a_wrong_size_reading_is_not_sent() {
        assert!(encode(channel("/laser"), &reading(b'l', vec![0; 10])).is_none());
    }

    #[test]
    fn blobs_become_annotations_and_a_list() {
        let d = one_blob();
        let list = decode(channel("/vision/blobs"), &d);
        assert_eq!(list["blobs"][0]["channel"], 1);
        assert_eq!(list["blobs"][0]["right"], 90);
        let ann = decode(channel("/vision"), &d);
        assert_eq!(ann["points"][0]["points"].as_array().unwrap().len(), 4);
        assert_eq!(ann["circles"][0]["position"]["x"], 80.0);
    }

    #[test]
    fn the_map_is_a_line_list_and_a_transform() {
        let m = MapOutline {
            segments: vec![[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 1.0]],
            odometry_origin: [2.0, 3.0, 0.0],
        };
        let v: Value = serde_json::from_slice(&encode_map(&m, Timestamp::now())).unwrap();
        assert_eq!(
            v["entities"][0]["lines"][0]["points"]
                .as_array()
                .unwrap()
                .len(),
            4
        );
        let tf: Value =
            serde_json::from_slice(&encode_map_transform(&m, Timestamp::now())).unwrap();
        assert_eq!(tf["translation"]["x"], 2.0);
        assert_eq!(tf["child_frame_id"], "odom");
    }

    #[test]
    fn frames_of_a_world_robot_are_under_its_name_and_the_map_is_shared() {
        let j = br#"{"parent_frame_id":"odom","child_frame_id":"base_link","id":"odom","frame_id":"map"}"#;
        let p = prefix_frames(j, "r7");
        assert_eq!(
            std::str::from_utf8(&p).unwrap(),
            r#"{"parent_frame_id":"r7/odom","child_frame_id":"r7/base_link","id":"odom","frame_id":"map"}"#
        );
    }
}
