//! What the recorder writes besides the raw payloads: a description of each 0.7.4a data
//! layout (the raw channels' schema text) and Foxglove JSON messages converted from the
//! laser and position readings, so Foxglove Studio draws the scan and the robot's pose.
//!
//! Pure: bytes in, text out. The layouts are those of the manual's Table 7 (decoded with
//! `player_proto::data`); a device code this module does not know gets a generic schema
//! text and no Foxglove channel.

use player_proto::data::{Laser, Position};
use player_proto::device;
use std::fmt::Write as _;

/// The message encoding of the raw channels: the `<data>` field of a 0.7.4a data packet.
pub const RAW_ENCODING: &str = "player-0.7.4a";

/// The schema encoding of the raw channels (the schema is a text describing the layout).
pub const RAW_SCHEMA_ENCODING: &str = "player-0.7.4a-layout";

/// A text describing the byte layout of `code`'s data (big-endian, manual Table 7).
pub fn layout(code: u8) -> String {
    let body = match code {
        device::LASER => {
            "722 bytes: 361 x u16 range in mm, index 0 at the right (-90 deg), every 0.5 deg \
             counter-clockwise to index 360 at the left (+90 deg)"
        }
        device::SONAR => "32 bytes: 16 x u16 range in mm, sonar 0 to 15",
        device::POSITION => {
            "21 bytes: u32 time ms, i32 x mm, i32 y mm, u16 heading deg, i16 speed mm/s, \
             i16 turn rate deg/s, u16 compass deg, u8 stall"
        }
        device::MISC => "3 bytes: u8 front bumpers, u8 rear bumpers, u8 battery decivolts",
        device::GRIPPER => "2 bytes: u8 state, u8 beams",
        device::PTZ => "6 bytes: i16 pan deg, i16 tilt deg, i16 zoom",
        device::VISION => {
            "64 + 10 per blob: ACTS 1.0 packet, per channel (first blob + 1, count + 1), \
             then each blob as 4 area digits of 6 bits and x, y, left, right, top, bottom, \
             every byte + 1"
        }
        _ => "raw bytes as the driver publishes them",
    };
    format!(
        "Player 0.7.4a data of device '{}' ({}), big-endian. {body}.",
        char::from(code),
        device::name(code)
    )
}

/// The command layout text of `code` (manual Table 5), for the command channels.
pub fn command_layout(code: u8) -> String {
    let body = match code {
        device::POSITION => "4 bytes: i16 speed mm/s, i16 turn rate deg/s",
        device::GRIPPER => "2 bytes: u8 command, u8 argument",
        device::PTZ => "6 bytes: i16 pan deg, i16 tilt deg, i16 zoom",
        _ => "raw bytes as the client sent them",
    };
    format!(
        "Player 0.7.4a command of device '{}' ({}), big-endian. {body}.",
        char::from(code),
        device::name(code)
    )
}

/// The Foxglove schemas this module converts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Foxglove {
    /// `foxglove.LaserScan` from the laser.
    LaserScan,
    /// `foxglove.FrameTransform` (odometry frame to the robot's base) from the position.
    FrameTransform,
}

impl Foxglove {
    /// The Foxglove schemas converted from `code`'s readings.
    pub fn of(code: u8) -> &'static [Foxglove] {
        match code {
            device::LASER => &[Foxglove::LaserScan],
            device::POSITION => &[Foxglove::FrameTransform],
            _ => &[],
        }
    }

    /// The schema name Foxglove recognises.
    pub fn schema_name(self) -> &'static str {
        match self {
            Foxglove::LaserScan => "foxglove.LaserScan",
            Foxglove::FrameTransform => "foxglove.FrameTransform",
        }
    }

    /// The last part of the channel's topic (after `/<robot>/<code>/`).
    pub fn topic_suffix(self) -> &'static str {
        match self {
            Foxglove::LaserScan => "scan",
            Foxglove::FrameTransform => "tf",
        }
    }

    /// A JSON Schema of the fields this module writes.
    pub fn json_schema(self) -> &'static str {
        match self {
            Foxglove::LaserScan => LASER_SCAN_SCHEMA,
            Foxglove::FrameTransform => FRAME_TRANSFORM_SCHEMA,
        }
    }

    /// The JSON message for one reading of `robot` taken at `sec`/`nsec`, or `None` when
    /// the payload does not have the layout's size.
    pub fn convert(self, robot: &str, data: &[u8], sec: u32, nsec: u32) -> Option<String> {
        match self {
            Foxglove::LaserScan => laser_scan(robot, data, sec, nsec),
            Foxglove::FrameTransform => frame_transform(robot, data, sec, nsec),
        }
    }
}

const LASER_SCAN_SCHEMA: &str = concat!(
    r#"{"title":"foxglove.LaserScan","type":"object","properties":{"#,
    r#""timestamp":{"type":"object","properties":{"sec":{"type":"integer"},"nsec":{"type":"integer"}}},"#,
    r#""frame_id":{"type":"string"},"#,
    r#""pose":{"type":"object","properties":{"#,
    r#""position":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"},"z":{"type":"number"}}},"#,
    r#""orientation":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"},"z":{"type":"number"},"w":{"type":"number"}}}}},"#,
    r#""start_angle":{"type":"number"},"end_angle":{"type":"number"},"#,
    r#""ranges":{"type":"array","items":{"type":"number"}},"#,
    r#""intensities":{"type":"array","items":{"type":"number"}}}}"#
);

const FRAME_TRANSFORM_SCHEMA: &str = concat!(
    r#"{"title":"foxglove.FrameTransform","type":"object","properties":{"#,
    r#""timestamp":{"type":"object","properties":{"sec":{"type":"integer"},"nsec":{"type":"integer"}}},"#,
    r#""parent_frame_id":{"type":"string"},"child_frame_id":{"type":"string"},"#,
    r#""translation":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"},"z":{"type":"number"}}},"#,
    r#""rotation":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"},"z":{"type":"number"},"w":{"type":"number"}}}}}"#
);

/// A robot name as a JSON string body: quotes, backslashes and control characters escaped.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

fn laser_scan(robot: &str, data: &[u8], sec: u32, nsec: u32) -> Option<String> {
    let scan = Laser::decode(data).ok()?;
    let robot = json_str(robot);
    let mut s = String::with_capacity(361 * 6 + 300);
    let _ = write!(
        s,
        r#"{{"timestamp":{{"sec":{sec},"nsec":{nsec}}},"frame_id":"{robot}/base_link","pose":{{"position":{{"x":0,"y":0,"z":0}},"orientation":{{"x":0,"y":0,"z":0,"w":1}}}},"start_angle":{},"end_angle":{},"ranges":["#,
        -std::f64::consts::FRAC_PI_2,
        std::f64::consts::FRAC_PI_2
    );
    for (i, r) in scan.ranges.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{}", f64::from(*r) / 1000.0);
    }
    s.push_str(r#"],"intensities":[]}"#);
    Some(s)
}

fn frame_transform(robot: &str, data: &[u8], sec: u32, nsec: u32) -> Option<String> {
    let p = Position::decode(data).ok()?;
    let robot = json_str(robot);
    let half = f64::from(p.heading).to_radians() / 2.0;
    Some(format!(
        r#"{{"timestamp":{{"sec":{sec},"nsec":{nsec}}},"parent_frame_id":"{robot}/odom","child_frame_id":"{robot}/base_link","translation":{{"x":{},"y":{},"z":0}},"rotation":{{"x":0,"y":0,"z":{},"w":{}}}}}"#,
        f64::from(p.x) / 1000.0,
        f64::from(p.y) / 1000.0,
        half.sin(),
        half.cos()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laser_becomes_a_scan_in_metres_over_half_a_turn() {
        let mut l = Laser::default();
        l.ranges[0] = 1500;
        l.ranges[360] = 8000;
        let j = Foxglove::LaserScan
            .convert("pio\"neer", &l.encode(), 5, 7)
            .unwrap();
        assert!(
            j.starts_with(r#"{"timestamp":{"sec":5,"nsec":7},"frame_id":"pio\"neer/base_link""#),
            "{j}"
        );
        assert!(j.contains(r#""ranges":[1.5,0,"#), "{j}");
        assert!(j.contains(r#",8],"intensities":[]}"#), "{j}");
        assert!(j.matches(',').count() >= 360);
        assert!(Foxglove::LaserScan.convert("r", &[0; 10], 0, 0).is_none());
    }

    #[test]
    fn position_becomes_a_transform_with_a_unit_quaternion() {
        let p = Position {
            x: 1000,
            y: -250,
            heading: 90,
            ..Default::default()
        };
        let j = Foxglove::FrameTransform
            .convert("r", &p.encode(), 1, 2)
            .unwrap();
        assert!(
            j.contains(r#""translation":{"x":1,"y":-0.25,"z":0}"#),
            "{j}"
        );
        let z = (45f64).to_radians().sin();
        assert!(j.contains(&format!(r#""z":{z}"#)), "{j}");
    }

    #[test]
    fn every_device_has_a_layout_text() {
        for code in device::ALL {
            assert!(layout(code).contains(device::name(code)));
        }
        assert!(layout(b'Q').contains("raw bytes"));
    }
}
