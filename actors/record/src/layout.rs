//! The raw channels' encoding names and schema texts: a description of each 0.7.4a data
//! layout (the manual's Table 7) and command layout (Table 5). A device code this module
//! does not know gets a generic text.

use player_proto::device;

pub use player_proto::RAW_ENCODING;

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
        device::MAP => {
            "28 bytes (extension): u32 map_id, u32 width, u32 height (cells), u32 resolution \
             um per cell, i32 origin_x mm, i32 origin_y mm (the lower-left cell's corner), \
             i32 origin_heading arc-seconds; the cells come as answers to x M t configs, on \
             the configs channel"
        }
        device::LOCALIZE => {
            "14 + 88 per hypothesis (Player 1.6.5's localize data): u16 pending_count, u32 \
             pending_time_sec, u32 pending_time_usec, u32 hypoth_count, then per hypothesis \
             i32 mean[3] (mm, mm, arc-seconds), i64 cov[3][3] (mm^2 ... arc-seconds^2), u32 \
             alpha x 10^6, heaviest first, at most 10"
        }
        device::PLANNER => {
            "43 bytes (Player 1.6.5's planner data plus a state): u8 valid, u8 done, i32 \
             pose[3], i32 goal[3], i32 waypoint[3] (mm, mm, deg), i16 curr_waypoint, u16 \
             waypoint_count, u8 state (0 idle, 1 planning, 2 driving, 3 reached, 4 blocked, \
             5 no path, 6 e-stopped, 7 pre-empted)"
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
        device::PLANNER => {
            "12 bytes (Player 1.6.5's planner command): i32 gx mm, i32 gy mm, i32 ga deg"
        }
        _ => "raw bytes as the client sent them",
    };
    format!(
        "Player 0.7.4a command of device '{}' ({}), big-endian. {body}.",
        char::from(code),
        device::name(code)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_device_has_a_layout_text() {
        for code in device::ALL {
            assert!(layout(code).contains(device::name(code)));
        }
        assert!(layout(b'Q').contains("raw bytes"));
        for code in [device::MAP, device::LOCALIZE, device::PLANNER] {
            assert!(!layout(code).contains("raw bytes"), "{}", char::from(code));
        }
        assert!(command_layout(device::PLANNER).contains("i32 gx mm"));
    }
}
