//! The binary encodings of the web viewer's channels: the `foxglove.*` channels as protobuf
//! (Foxglove's own message types and descriptors, from the `foxglove` crate), beside the JSON
//! of [`schema`]. Pure: readings in, bytes out.
//!
//! A client chooses per connection, with `?encoding=` on the WebSocket URL (the Foxglove
//! protocol gives a client no other place to say it): `protobuf` (the default) advertises
//! every channel whose schema Foxglove defines (`foxglove.LaserScan`, `foxglove.SceneUpdate`,
//! ...) with `encoding: "protobuf"` and its `FileDescriptorSet` (base64, `schemaEncoding:
//! "protobuf"`); `json` advertises every channel as JSON with a JSON schema. Our own schemas
//! (`player.*`) are JSON either way. A channel keeps its id and topic in both: only the
//! bytes differ, and they carry the same values.
//!
//! The choice itself ([`Encoding`]) and the descriptors ([`descriptor`]) are the pure
//! crate's (`player_foxglove::encoding`), re-exported here; the readings' encoders are
//! [`EncodeReadings`], on the server's reading types.

use crate::grid;
use crate::schema::{self, Channel};
use foxglove::messages as fg;
use player_core::frontend::nav::GridMap;
use player_kit::driver::{DeviceData, MapOutline, Timestamp};
use player_proto::data as wire;
use player_proto::scan::Scan;
use prost::Message;

pub use player_foxglove::encoding::{descriptor, Encoding, UnknownEncoding};

/// The encoders of the server's readings, maps and poses in an [`Encoding`] (protobuf
/// here, JSON in [`schema`] and [`grid`]); the encoding itself and the schemas are the
/// pure crate's (`player_foxglove::encoding`).
pub trait EncodeReadings {
    /// The message a reading becomes on `channel` for a client that prefers `self` (in
    /// [`Encoding::for_channel`]), or `None` when the reading does not decode or the channel
    /// is not a device's.
    fn encode(self, channel: &Channel, d: &DeviceData) -> Option<Vec<u8>>;

    /// [`EncodeReadings::encode`] with the robot's frames under `prefix` (`<prefix>/odom`),
    /// for an endpoint serving several robots.
    fn encode_in(self, channel: &Channel, d: &DeviceData, prefix: Option<&str>) -> Option<Vec<u8>>;

    /// Poses in the `map` frame (x, y in m, heading in rad) as a `foxglove.PosesInFrame`
    /// (`/particles`).
    fn encode_poses(self, poses: &[[f64; 3]], t: Timestamp) -> Vec<u8>;

    /// The `/map` message for the whole map `m`, stamped `t` ([`grid`]).
    fn encode_grid(self, m: &GridMap, t: Timestamp) -> Vec<u8>;

    /// The `/walls` message (see [`schema::encode_map`]).
    fn encode_map(self, map: &MapOutline, t: Timestamp) -> Vec<u8>;

    /// The `/tf_map` message (see [`schema::encode_map_transform`]): `map` to the robot's
    /// `odom`, under `prefix` where the endpoint serves several robots.
    fn encode_map_transform(self, map: &MapOutline, t: Timestamp, prefix: Option<&str>) -> Vec<u8>;
}

impl EncodeReadings for Encoding {
    fn encode(self, channel: &Channel, d: &DeviceData) -> Option<Vec<u8>> {
        self.encode_in(channel, d, None)
    }

    fn encode_in(self, channel: &Channel, d: &DeviceData, prefix: Option<&str>) -> Option<Vec<u8>> {
        match (self.for_channel(channel), prefix) {
            (Encoding::Json, None) => schema::encode(channel, d),
            (Encoding::Json, Some(p)) => {
                schema::encode(channel, d).map(|j| schema::prefix_frames(&j, p))
            }
            (Encoding::Protobuf, _) => encode_in(channel, d, &Frames::of(prefix)),
        }
    }

    fn encode_poses(self, poses: &[[f64; 3]], t: Timestamp) -> Vec<u8> {
        match self {
            Encoding::Json => schema::encode_poses(t, poses),
            Encoding::Protobuf => fg::PosesInFrame {
                timestamp: time(t),
                frame_id: "map".into(),
                poses: poses
                    .iter()
                    .map(|&[x, y, th]| fg::Pose {
                        position: vec3(x, y, 0.0),
                        orientation: quat_z(th),
                    })
                    .collect(),
            }
            .encode_to_vec(),
        }
    }

    fn encode_grid(self, m: &GridMap, t: Timestamp) -> Vec<u8> {
        match self {
            Encoding::Json => grid::json(m, t),
            Encoding::Protobuf => grid::protobuf(m, t),
        }
    }

    fn encode_map(self, map: &MapOutline, t: Timestamp) -> Vec<u8> {
        match self {
            Encoding::Json => schema::encode_map(map, t),
            Encoding::Protobuf => encode_map(map, t),
        }
    }

    fn encode_map_transform(self, map: &MapOutline, t: Timestamp, prefix: Option<&str>) -> Vec<u8> {
        match (self, prefix) {
            (Encoding::Json, None) => schema::encode_map_transform(map, t),
            (Encoding::Json, Some(p)) => {
                schema::prefix_frames(&schema::encode_map_transform(map, t), p)
            }
            (Encoding::Protobuf, _) => {
                let [x, y, th] = map.odometry_origin;
                let odom = Frames::of(prefix).odom;
                frame_transform(t, "map", &odom, x, y, th).encode_to_vec()
            }
        }
    }
}

fn time(t: Timestamp) -> Option<fg::Timestamp> {
    Some(fg::Timestamp::new(t.sec, t.usec.min(999_999) * 1000))
}

fn vec3(x: f64, y: f64, z: f64) -> Option<fg::Vector3> {
    Some(fg::Vector3 { x, y, z })
}

fn quat_z(theta: f64) -> Option<fg::Quaternion> {
    Some(fg::Quaternion {
        x: 0.0,
        y: 0.0,
        z: (theta / 2.0).sin(),
        w: (theta / 2.0).cos(),
    })
}

fn identity_pose() -> Option<fg::Pose> {
    Some(fg::Pose {
        position: vec3(0.0, 0.0, 0.0),
        orientation: quat_z(0.0),
    })
}

fn rgba(r: f64, g: f64, b: f64, a: f64) -> Option<fg::Color> {
    Some(fg::Color { r, g, b, a })
}

fn point3(x: f64, y: f64) -> fg::Point3 {
    fg::Point3 { x, y, z: 0.0 }
}

fn frame_transform(
    t: Timestamp,
    parent: &str,
    child: &str,
    x: f64,
    y: f64,
    th: f64,
) -> fg::FrameTransform {
    fg::FrameTransform {
        timestamp: time(t),
        parent_frame_id: parent.into(),
        child_frame_id: child.into(),
        translation: vec3(x, y, 0.0),
        rotation: quat_z(th),
    }
}

fn scene_entity(t: Timestamp, frame: &str, id: &str) -> fg::SceneEntity {
    fg::SceneEntity {
        timestamp: time(t),
        frame_id: frame.into(),
        id: id.into(),
        lifetime: Some(fg::Duration::new(0, 0)),
        frame_locked: true,
        ..Default::default()
    }
}

fn laser_scan(
    t: Timestamp,
    frame: &str,
    start: f64,
    end: f64,
    ranges: Vec<f64>,
    intensities: Vec<f64>,
) -> fg::LaserScan {
    fg::LaserScan {
        timestamp: time(t),
        frame_id: frame.into(),
        pose: identity_pose(),
        start_angle: start,
        end_angle: end,
        ranges,
        intensities,
    }
}

/// A robot's two frames: `odom` and `base_link`, or under its name (`<robot>/odom`) on an
/// endpoint serving several robots (`world.rs`); `map` is shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frames {
    /// The odometry frame.
    pub odom: String,
    /// The robot's body frame.
    pub base_link: String,
}

impl Frames {
    /// `odom` and `base_link`, under `prefix` (`<prefix>/odom`) when there is one.
    pub fn of(prefix: Option<&str>) -> Frames {
        match prefix {
            Some(p) => Frames {
                odom: format!("{p}/odom"),
                base_link: format!("{p}/base_link"),
            },
            None => Frames {
                odom: "odom".into(),
                base_link: "base_link".into(),
            },
        }
    }
}

/// The protobuf message a reading becomes on a `foxglove.*` `channel` (the same values as
/// [`schema::encode`]'s JSON), or `None` when the reading does not decode or the channel has
/// no protobuf encoding.
pub fn encode(channel: &Channel, d: &DeviceData) -> Option<Vec<u8>> {
    encode_in(channel, d, &Frames::of(None))
}

/// [`encode`] with the robot's frames named `frames`.
pub fn encode_in(channel: &Channel, d: &DeviceData, frames: &Frames) -> Option<Vec<u8>> {
    let t = d.timestamp;
    Some(match channel.id {
        1 | 2 => {
            let p = wire::Position::decode(&d.data).ok()?;
            let (x, y) = (f64::from(p.x) / 1000.0, f64::from(p.y) / 1000.0);
            let th = f64::from(p.heading).to_radians();
            if channel.id == 1 {
                frame_transform(t, &frames.odom, &frames.base_link, x, y, th).encode_to_vec()
            } else {
                fg::PoseInFrame {
                    timestamp: time(t),
                    frame_id: frames.odom.clone(),
                    pose: Some(fg::Pose {
                        position: vec3(x, y, 0.0),
                        orientation: quat_z(th),
                    }),
                }
                .encode_to_vec()
            }
        }
        15 | 19 => {
            let [x, y, th] = schema::map_pose(channel, d)?;
            fg::PoseInFrame {
                timestamp: time(t),
                frame_id: "map".into(),
                pose: Some(fg::Pose {
                    position: vec3(x, y, 0.0),
                    orientation: quat_z(th),
                }),
            }
            .encode_to_vec()
        }
        4 => {
            let l = wire::Laser::decode(&d.data).ok()?;
            let ranges = l.ranges.iter().map(|&r| f64::from(r) / 1000.0).collect();
            let half = std::f64::consts::FRAC_PI_2;
            laser_scan(t, &frames.base_link, -half, half, ranges, Vec::new()).encode_to_vec()
        }
        14 => {
            let s = Scan::decode(&d.data).ok()?;
            let ranges: Vec<f64> = s.ranges.iter().map(|&r| f64::from(r) / 1000.0).collect();
            let (start, end) = (s.angle(0), s.angle(ranges.len().saturating_sub(1)));
            let intensities = s
                .intensities
                .unwrap_or_default()
                .into_iter()
                .map(f64::from)
                .collect();
            laser_scan(t, &frames.base_link, start, end, ranges, intensities).encode_to_vec()
        }
        5 => {
            let s = wire::Sonar::decode(&d.data).ok()?;
            let points = schema::sonar_cones(&s.ranges)
                .into_iter()
                .map(|[x, y]| point3(x, y))
                .collect();
            let ranges: Vec<String> = s.ranges.iter().map(u16::to_string).collect();
            let mut e = scene_entity(t, &frames.base_link, "sonar");
            e.metadata.push(fg::KeyValuePair {
                key: "ranges_mm".into(),
                value: ranges.join(","),
            });
            e.triangles.push(fg::TriangleListPrimitive {
                pose: identity_pose(),
                points,
                color: rgba(0.16, 0.47, 1.0, 0.25),
                ..Default::default()
            });
            fg::SceneUpdate {
                deletions: Vec::new(),
                entities: vec![e],
            }
            .encode_to_vec()
        }
        9 => {
            let v = wire::Vision::decode(&d.data).ok()?;
            let mut ann = fg::ImageAnnotations::default();
            for (c, blobs) in v.channels.iter().enumerate() {
                let (r, g, b) = schema::channel_rgb(c);
                for blob in blobs {
                    ann.circles.push(fg::CircleAnnotation {
                        timestamp: time(t),
                        position: Some(fg::Point2 {
                            x: f64::from(blob.x),
                            y: f64::from(blob.y),
                        }),
                        diameter: 4.0,
                        thickness: 1.0,
                        fill_color: rgba(r, g, b, 1.0),
                        outline_color: rgba(r, g, b, 1.0),
                        ..Default::default()
                    });
                    let (l, rt) = (f64::from(blob.left), f64::from(blob.right));
                    let (tp, bt) = (f64::from(blob.top), f64::from(blob.bottom));
                    let corner = |x, y| fg::Point2 { x, y };
                    ann.points.push(fg::PointsAnnotation {
                        timestamp: time(t),
                        r#type: fg::points_annotation::Type::LineLoop as i32,
                        points: vec![corner(l, tp), corner(rt, tp), corner(rt, bt), corner(l, bt)],
                        outline_color: rgba(r, g, b, 1.0),
                        fill_color: rgba(0.0, 0.0, 0.0, 0.0),
                        thickness: 1.0,
                        ..Default::default()
                    });
                }
            }
            ann.encode_to_vec()
        }
        _ => return None,
    })
}

/// The `/walls` message in protobuf: the walls as one line list in the `map` frame.
pub fn encode_map(map: &MapOutline, t: Timestamp) -> Vec<u8> {
    let mut points = Vec::with_capacity(map.segments.len() * 2);
    for s in &map.segments {
        points.push(point3(s[0], s[1]));
        points.push(point3(s[2], s[3]));
    }
    let mut e = scene_entity(t, "map", "walls");
    e.lines.push(fg::LinePrimitive {
        r#type: fg::line_primitive::Type::LineList as i32,
        pose: identity_pose(),
        thickness: 0.03,
        scale_invariant: false,
        points,
        color: rgba(0.1, 0.1, 0.1, 1.0),
        ..Default::default()
    });
    fg::SceneUpdate {
        deletions: Vec::new(),
        entities: vec![e],
    }
    .encode_to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::tests::{channel, one_blob, reading};
    use crate::schema::CHANNELS;
    use base64::Engine;
    use prost_types::field_descriptor_proto::Type;
    use prost_types::{DescriptorProto, FileDescriptorSet};
    use serde_json::Value;

    fn proto(topic: &str, d: &DeviceData) -> Vec<u8> {
        let c = channel(topic);
        assert_eq!(Encoding::Protobuf.for_channel(c), Encoding::Protobuf);
        Encoding::Protobuf.encode(c, d).expect("encodes")
    }

    fn json(topic: &str, d: &DeviceData) -> Value {
        serde_json::from_slice(&Encoding::Json.encode(channel(topic), d).unwrap()).unwrap()
    }

    /// Every message type of a descriptor set, by full name (`.foxglove.LaserScan`).
    fn message_types(set: &FileDescriptorSet) -> Vec<(String, &DescriptorProto)> {
        let mut out = Vec::new();
        for f in &set.file {
            for m in &f.message_type {
                out.push((format!(".{}.{}", f.package(), m.name()), m));
                for n in &m.nested_type {
                    out.push((format!(".{}.{}.{}", f.package(), m.name(), n.name()), n));
                }
            }
        }
        out
    }

    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (byte, rest) = b.split_first().expect("a varint");
            *b = rest;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return v;
            }
        }
        panic!("varint too long")
    }

    /// Walks protobuf bytes against message `name` of the descriptor: every field on the
    /// wire is one the descriptor declares, with a wire type its declared type allows, and
    /// nested messages are walked likewise. Returns the field numbers seen.
    fn walk(set: &FileDescriptorSet, name: &str, mut b: &[u8]) -> Vec<i32> {
        let types = message_types(set);
        let (_, m) = types
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} is not in the descriptor"));
        let mut seen = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            let (number, wire) = ((key >> 3) as i32, key & 7);
            let f = m
                .field
                .iter()
                .find(|f| f.number() == number)
                .unwrap_or_else(|| panic!("{name}: field {number} is not declared"));
            let allowed: &[u64] = match f.r#type() {
                Type::Double | Type::Fixed64 => &[1, 2],
                Type::Fixed32 | Type::Float => &[5, 2],
                Type::Message | Type::String | Type::Bytes => &[2],
                _ => &[0, 2],
            };
            assert!(
                allowed.contains(&wire),
                "{name}.{}: wire type {wire} for {:?}",
                f.name(),
                f.r#type()
            );
            match wire {
                0 => {
                    varint(&mut b);
                }
                1 => b = &b[8..],
                5 => b = &b[4..],
                2 => {
                    let len = varint(&mut b) as usize;
                    let (body, rest) = b.split_at(len);
                    if f.r#type() == Type::Message {
                        walk(set, f.type_name(), body);
                    }
                    b = rest;
                }
                other => panic!("wire type {other}"),
            }
            seen.push(number);
        }
        seen
    }

    fn descriptor_set(name: &str) -> FileDescriptorSet {
        FileDescriptorSet::decode(descriptor(name).expect("a descriptor")).unwrap()
    }

    #[test]
    fn a_laser_scan_round_trips_with_its_values_and_matches_the_descriptor() {
        let mut l = wire::Laser::default();
        l.ranges[0] = 1500;
        l.ranges[180] = 8183;
        l.ranges[360] = 250;
        let bytes = proto("/laser", &reading(b'l', l.encode()));
        let set = descriptor_set("foxglove.LaserScan");
        let fields = walk(&set, ".foxglove.LaserScan", &bytes);
        for n in [1, 2, 3, 4, 5, 6] {
            assert!(fields.contains(&n), "field {n} missing: {fields:?}");
        }
        let s = fg::LaserScan::decode(&bytes[..]).unwrap();
        assert_eq!(s.ranges.len(), 361);
        assert_eq!(s.ranges[0], 1.5);
        assert_eq!(s.ranges[180], 8.183);
        assert_eq!(s.ranges[360], 0.25);
        assert_eq!(s.start_angle, -std::f64::consts::FRAC_PI_2);
        assert_eq!(s.end_angle, std::f64::consts::FRAC_PI_2);
        assert_eq!(s.frame_id, "base_link");
        assert_eq!(
            s.timestamp,
            Some(fg::Timestamp::new(1_700_000_000, 250_000_000))
        );
        assert!(s.intensities.is_empty());
        // The descriptor's field 6 is the repeated double `ranges`: a reader going by the
        // descriptor (Foxglove's) finds the ranges where we put them.
        let types = message_types(&set);
        let (_, m) = types
            .iter()
            .find(|(n, _)| n == ".foxglove.LaserScan")
            .unwrap();
        let f6 = m.field.iter().find(|f| f.number() == 6).unwrap();
        assert_eq!((f6.name(), f6.r#type()), ("ranges", Type::Double));
    }

    #[test]
    fn a_full_scan_keeps_its_intensities_in_protobuf() {
        let s = Scan {
            angle_min: -2_094_395,
            angle_increment: 6_136,
            ranges: vec![1500, 0, 250],
            intensities: Some(vec![7, 0, 255]),
        };
        let d = reading(b'L', s.encode().unwrap());
        let bytes = proto("/scan", &d);
        walk(
            &descriptor_set("foxglove.LaserScan"),
            ".foxglove.LaserScan",
            &bytes,
        );
        let p = fg::LaserScan::decode(&bytes[..]).unwrap();
        let j = json("/scan", &d);
        assert_eq!(p.ranges, vec![1.5, 0.0, 0.25]);
        assert_eq!(p.intensities, vec![7.0, 0.0, 255.0]);
        assert_eq!(Value::from(p.start_angle), j["start_angle"]);
        assert_eq!(Value::from(p.end_angle), j["end_angle"]);
    }

    #[test]
    fn a_position_is_the_same_transform_and_pose_as_in_json() {
        let p = wire::Position {
            x: 1000,
            y: -500,
            heading: 90,
            ..Default::default()
        };
        let d = reading(b'p', p.encode());
        let bytes = proto("/tf", &d);
        walk(
            &descriptor_set("foxglove.FrameTransform"),
            ".foxglove.FrameTransform",
            &bytes,
        );
        let tf = fg::FrameTransform::decode(&bytes[..]).unwrap();
        let j = json("/tf", &d);
        assert_eq!(
            (tf.parent_frame_id.as_str(), tf.child_frame_id.as_str()),
            ("odom", "base_link")
        );
        let tr = tf.translation.unwrap();
        assert_eq!((tr.x, tr.y), (1.0, -0.5));
        assert_eq!(Value::from(tf.rotation.unwrap().w), j["rotation"]["w"]);
        let bytes = proto("/pose", &d);
        walk(
            &descriptor_set("foxglove.PoseInFrame"),
            ".foxglove.PoseInFrame",
            &bytes,
        );
        let pose = fg::PoseInFrame::decode(&bytes[..]).unwrap();
        assert_eq!(pose.frame_id, "odom");
        assert_eq!(pose.pose.unwrap().position.unwrap().x, 1.0);
        // The plain position is ours: JSON for every client.
        assert_eq!(
            Encoding::Protobuf.for_channel(channel("/position")),
            Encoding::Json
        );
    }

    #[test]
    fn the_localizers_best_hypothesis_is_a_pose_in_the_map_in_both_encodings() {
        use player_proto::nav::{Hypothesis, Localize};
        let l = Localize {
            hypotheses: vec![Hypothesis {
                mean: [1000, -2000, 324_000],
                cov: [[100, 0, 0], [0, 100, 0], [0, 0, 3600]],
                alpha: 1_000_000,
            }],
            ..Localize::default()
        };
        let d = reading(b'H', l.encode().unwrap());
        let bytes = proto("/amcl_pose", &d);
        walk(
            &descriptor_set("foxglove.PoseInFrame"),
            ".foxglove.PoseInFrame",
            &bytes,
        );
        let pose = fg::PoseInFrame::decode(&bytes[..]).unwrap();
        assert_eq!(pose.frame_id, "map");
        let p = pose.pose.unwrap();
        let at = p.position.unwrap();
        assert_eq!((at.x, at.y, at.z), (1.0, -2.0, 0.0));
        // 324 000 arc-seconds: 90 degrees.
        let q = p.orientation.unwrap();
        assert!(
            (q.z - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-9,
            "{q:?}"
        );
        let j = json("/amcl_pose", &d);
        assert_eq!(j["frame_id"], "map");
        assert_eq!(j["pose"]["position"]["y"], -2.0);
        assert_eq!(Value::from(q.w), j["pose"]["orientation"]["w"]);
        // No hypothesis (or a reading that does not decode): nothing sent.
        let none = reading(b'H', Localize::default().encode().unwrap());
        assert!(encode(channel("/amcl_pose"), &none).is_none());
        assert!(encode(channel("/amcl_pose"), &reading(b'H', vec![1, 2])).is_none());
    }

    #[test]
    fn sonar_cones_and_blobs_carry_the_json_geometry() {
        let mut ranges = [1000; 16];
        ranges[3] = 2000;
        let d = reading(b's', wire::Sonar { ranges }.encode());
        let bytes = proto("/sonar", &d);
        walk(
            &descriptor_set("foxglove.SceneUpdate"),
            ".foxglove.SceneUpdate",
            &bytes,
        );
        let u = fg::SceneUpdate::decode(&bytes[..]).unwrap();
        let j = json("/sonar", &d);
        let pts = &u.entities[0].triangles[0].points;
        let jpts = j["entities"][0]["triangles"][0]["points"]
            .as_array()
            .unwrap();
        assert_eq!(pts.len(), 48);
        for (p, jp) in pts.iter().zip(jpts) {
            // (serde_json's parser may round the last bit of a double.)
            let (jx, jy) = (jp["x"].as_f64().unwrap(), jp["y"].as_f64().unwrap());
            assert!(
                (p.x - jx).abs() < 1e-12 && (p.y - jy).abs() < 1e-12,
                "{p:?} {jp}"
            );
        }
        assert_eq!(
            u.entities[0].metadata[0].value,
            j["entities"][0]["metadata"][0]["value"]
        );
        let d = one_blob();
        let bytes = proto("/vision", &d);
        walk(
            &descriptor_set("foxglove.ImageAnnotations"),
            ".foxglove.ImageAnnotations",
            &bytes,
        );
        let a = fg::ImageAnnotations::decode(&bytes[..]).unwrap();
        assert_eq!(a.circles[0].position.unwrap().x, 80.0);
        assert_eq!(a.points[0].points.len(), 4);
        assert_eq!(a.points[0].r#type, 2, "LINE_LOOP, as in the JSON");
        assert_eq!(a.points[0].points[2].x, 90.0);
        assert_eq!(a.points[0].outline_color.unwrap().g, 0.8);
        assert_eq!(
            Encoding::Protobuf.for_channel(channel("/vision/blobs")),
            Encoding::Json
        );
    }

    #[test]
    fn the_map_is_a_line_list_and_a_transform_in_protobuf() {
        let m = MapOutline {
            segments: vec![[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 1.0]],
            odometry_origin: [2.0, 3.0, 0.0],
        };
        let bytes = Encoding::Protobuf.encode_map(&m, Timestamp::now());
        walk(
            &descriptor_set("foxglove.SceneUpdate"),
            ".foxglove.SceneUpdate",
            &bytes,
        );
        let u = fg::SceneUpdate::decode(&bytes[..]).unwrap();
        let line = &u.entities[0].lines[0];
        assert_eq!(line.points.len(), 4);
        assert_eq!(line.r#type, fg::line_primitive::Type::LineList as i32);
        assert_eq!(line.points[3].y, 1.0);
        let tf = fg::FrameTransform::decode(
            &Encoding::Protobuf.encode_map_transform(&m, Timestamp::now(), None)[..],
        )
        .unwrap();
        assert_eq!(tf.translation.unwrap().x, 2.0);
        assert_eq!(tf.child_frame_id, "odom");
    }

    #[test]
    fn the_planners_goal_is_the_same_pose_in_protobuf() {
        let p = player_proto::nav::Planner {
            goal: [8500, -1000, 90],
            state: player_proto::nav::PlannerState::Driving,
            ..Default::default()
        };
        let d = reading(b'G', p.encode());
        let pose = fg::PoseInFrame::decode(&proto("/goal", &d)[..]).unwrap();
        assert_eq!(pose.frame_id, "map");
        let p = pose.pose.unwrap();
        let at = p.position.unwrap();
        assert_eq!((at.x, at.y), (8.5, -1.0));
        let j = json("/goal", &d);
        assert_eq!(j["pose"]["position"]["x"], at.x);
        assert_eq!(j["pose"]["orientation"]["z"], p.orientation.unwrap().z);
    }

    #[test]
    fn a_wrong_size_reading_is_not_sent_in_protobuf_either() {
        assert!(Encoding::Protobuf
            .encode(channel("/laser"), &reading(b'l', vec![0; 10]))
            .is_none());
    }

    #[test]
    fn every_foxglove_channel_has_a_protobuf_schema_and_json_stays_json() {
        for c in CHANNELS {
            let is_foxglove = c.schema_name.starts_with("foxglove.");
            assert_eq!(
                Encoding::Protobuf.for_channel(c) == Encoding::Protobuf,
                is_foxglove,
                "{}",
                c.topic
            );
            assert_eq!(Encoding::Json.for_channel(c), Encoding::Json);
            if is_foxglove {
                let text = Encoding::Protobuf.schema_text(c.schema_name);
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .unwrap();
                let set = FileDescriptorSet::decode(&raw[..]).unwrap();
                let full = format!(".{}", c.schema_name);
                assert!(
                    message_types(&set).iter().any(|(n, _)| *n == full),
                    "{full}"
                );
            }
        }
        assert_eq!(Encoding::parse("json"), Ok(Encoding::Json));
        assert_eq!(Encoding::parse("protobuf"), Ok(Encoding::Protobuf));
        assert!(Encoding::parse("cbor").is_err());
    }
}
