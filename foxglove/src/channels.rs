//! The channels a Foxglove client may subscribe to: each one's fixed id, topic, schema name
//! and where its messages come from ([`Source`]). Pure: a table, no readings.
//!
//! The ids and topics are the wire's: a reconnecting client (and a recording) sees the same
//! ones, so they never change.

use player_proto::device;

/// Where a channel's messages come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// Readings of a device.
    Device(u8),
    /// The driver's walls (`/walls`), sent on subscription and when they change.
    Map,
    /// The map device's cells (`M`, downloaded tile by tile), sent on subscription and
    /// again when the map's id changes (the web viewer's `grid` module).
    Grid,
    /// Where odometry lies in the map, every second.
    MapTransform,
    /// The devices' states and data rates as this session sees them, every second.
    Devices,
    /// The localizer's particles (`x H g` answers), at most once a second.
    Particles,
    /// The planner's waypoints (`x G w` answers), once a second.
    Plan,
}

/// One advertised channel.
#[derive(Debug, Clone, Copy)]
pub struct Channel {
    /// The channel id (fixed per topic, so a reconnecting client sees the same ids).
    pub id: u32,
    /// The topic name.
    pub topic: &'static str,
    /// The schema name Foxglove recognises (`foxglove.LaserScan`) or ours (`player.Misc`).
    pub schema_name: &'static str,
    /// Where the messages come from.
    pub source: Source,
}

/// Every channel the endpoint can advertise; those whose device the robot lacks (or whose
/// map it has not) are left out.
pub const CHANNELS: &[Channel] = &[
    Channel {
        id: 1,
        topic: "/tf",
        schema_name: "foxglove.FrameTransform",
        source: Source::Device(device::POSITION),
    },
    Channel {
        id: 2,
        topic: "/pose",
        schema_name: "foxglove.PoseInFrame",
        source: Source::Device(device::POSITION),
    },
    Channel {
        id: 3,
        topic: "/position",
        schema_name: "player.Position",
        source: Source::Device(device::POSITION),
    },
    Channel {
        id: 4,
        topic: "/laser",
        schema_name: "foxglove.LaserScan",
        source: Source::Device(device::LASER),
    },
    Channel {
        id: 5,
        topic: "/sonar",
        schema_name: "foxglove.SceneUpdate",
        source: Source::Device(device::SONAR),
    },
    Channel {
        id: 6,
        topic: "/misc",
        schema_name: "player.Misc",
        source: Source::Device(device::MISC),
    },
    Channel {
        id: 7,
        topic: "/gripper",
        schema_name: "player.Gripper",
        source: Source::Device(device::GRIPPER),
    },
    Channel {
        id: 8,
        topic: "/ptz",
        schema_name: "player.Ptz",
        source: Source::Device(device::PTZ),
    },
    Channel {
        id: 9,
        topic: "/vision",
        schema_name: "foxglove.ImageAnnotations",
        source: Source::Device(device::VISION),
    },
    Channel {
        id: 10,
        topic: "/vision/blobs",
        schema_name: "player.Blobs",
        source: Source::Device(device::VISION),
    },
    Channel {
        id: 11,
        topic: "/walls",
        schema_name: "foxglove.SceneUpdate",
        source: Source::Map,
    },
    Channel {
        id: 12,
        topic: "/tf_map",
        schema_name: "foxglove.FrameTransform",
        source: Source::MapTransform,
    },
    Channel {
        id: 13,
        topic: "/devices",
        schema_name: "player.Devices",
        source: Source::Devices,
    },
    Channel {
        id: 14,
        topic: "/scan",
        schema_name: "foxglove.LaserScan",
        source: Source::Device(device::FULL_SCAN),
    },
    Channel {
        id: 15,
        topic: "/amcl_pose",
        schema_name: "foxglove.PoseInFrame",
        source: Source::Device(device::LOCALIZE),
    },
    Channel {
        id: 16,
        topic: "/particles",
        schema_name: "foxglove.PosesInFrame",
        source: Source::Particles,
    },
    Channel {
        id: 17,
        topic: "/plan",
        schema_name: "foxglove.PosesInFrame",
        source: Source::Plan,
    },
    Channel {
        id: 18,
        topic: "/map",
        schema_name: "foxglove.Grid",
        source: Source::Grid,
    },
    Channel {
        id: 19,
        topic: "/goal",
        schema_name: "foxglove.PoseInFrame",
        source: Source::Device(device::PLANNER),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_topics_are_unique() {
        for c in CHANNELS {
            assert_eq!(CHANNELS.iter().filter(|d| d.id == c.id).count(), 1);
            assert_eq!(CHANNELS.iter().filter(|d| d.topic == c.topic).count(), 1);
        }
    }
}
