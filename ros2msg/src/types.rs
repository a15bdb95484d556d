//! The ROS 2 message types the front end uses: their names in the three spellings ROS 2
//! uses and their REP-2016 type hashes for ROS 2 Jazzy.
//!
//! A type hash (`RIHS01_` and 64 hex digits) is the SHA-256 of the type's description
//! (its fields and those of every type it nests) in REP-2016's canonical JSON form. The
//! hashes below are the ones in the Jazzy packages' generated type descriptions
//! (`share/<pkg>/msg/<Type>.json`, key `type_hashes`); `tests/ros2/test_ros2.py` compares
//! them with those files at test time. A node whose hash differs is a different type to
//! `rmw_zenoh`: its subscribers would not match ours.

/// One ROS 2 message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RosType {
    /// The package, e.g. `sensor_msgs`.
    pub package: &'static str,
    /// The message, e.g. `LaserScan`.
    pub name: &'static str,
    /// The `RIHS01_…` type hash (Jazzy).
    pub hash: &'static str,
}

impl RosType {
    /// `sensor_msgs/msg/LaserScan`: the name in ROS 2's type descriptions and tools.
    pub fn ros_name(&self) -> String {
        format!("{}/msg/{}", self.package, self.name)
    }

    /// `sensor_msgs::msg::dds_::LaserScan_`: the name `rmw_zenoh` puts in keys and tokens.
    pub fn dds_name(&self) -> String {
        format!("{}::msg::dds_::{}_", self.package, self.name)
    }
}

/// `sensor_msgs/msg/LaserScan`.
pub const LASER_SCAN: RosType = RosType {
    package: "sensor_msgs",
    name: "LaserScan",
    hash: "RIHS01_64c191398013af96509d518dac71d5164f9382553fce5c1f8cca5be7924bd828",
};

/// `nav_msgs/msg/Odometry`.
pub const ODOMETRY: RosType = RosType {
    package: "nav_msgs",
    name: "Odometry",
    hash: "RIHS01_3cc97dc7fb7502f8714462c526d369e35b603cfc34d946e3f2eda2766dfec6e0",
};

/// `tf2_msgs/msg/TFMessage`.
pub const TF_MESSAGE: RosType = RosType {
    package: "tf2_msgs",
    name: "TFMessage",
    hash: "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087",
};

/// `geometry_msgs/msg/TransformStamped`.
pub const TRANSFORM_STAMPED: RosType = RosType {
    package: "geometry_msgs",
    name: "TransformStamped",
    hash: "RIHS01_0a241f87d04668d94099cbb5ba11691d5ad32c2f29682e4eb5653424bd275206",
};

/// `sensor_msgs/msg/Range` (Jazzy's, with `variance`).
pub const RANGE: RosType = RosType {
    package: "sensor_msgs",
    name: "Range",
    hash: "RIHS01_b42b62562e93cbfe9d42b82fe5994dfa3d63d7d5c90a317981703f7388adff3a",
};

/// `sensor_msgs/msg/BatteryState`.
pub const BATTERY_STATE: RosType = RosType {
    package: "sensor_msgs",
    name: "BatteryState",
    hash: "RIHS01_4bee5dfce981c98faa6828b868307a0a73f992ed0789f374ee96c8f840e69741",
};

/// `geometry_msgs/msg/Twist`.
pub const TWIST: RosType = RosType {
    package: "geometry_msgs",
    name: "Twist",
    hash: "RIHS01_9c45bf16fe0983d80e3cfe750d6835843d265a9a6c46bd2e609fcddde6fb8d2a",
};

/// `geometry_msgs/msg/TwistStamped`.
pub const TWIST_STAMPED: RosType = RosType {
    package: "geometry_msgs",
    name: "TwistStamped",
    hash: "RIHS01_5f0fcd4f81d5d06ad9b4c4c63e3ea51b82d6ae4d0558f1d475229b1121db6f64",
};

/// `std_msgs/msg/Bool` (the `estop` topic).
pub const BOOL: RosType = RosType {
    package: "std_msgs",
    name: "Bool",
    hash: "RIHS01_feb91e995ff9ebd09c0cb3d2aed18b11077585839fb5db80193b62d74528f6c9",
};

/// `std_msgs/msg/Header`.
pub const HEADER: RosType = RosType {
    package: "std_msgs",
    name: "Header",
    hash: "RIHS01_f49fb3ae2cf070f793645ff749683ac6b06203e41c891e17701b1cb597ce6a01",
};

/// `builtin_interfaces/msg/Time`.
pub const TIME: RosType = RosType {
    package: "builtin_interfaces",
    name: "Time",
    hash: "RIHS01_b106235e25a4c5ed35098aa0a61a3ee9c9b18d197f398b0e4206cea9acf9c197",
};

/// `nav_msgs/msg/OccupancyGrid` (`map`).
pub const OCCUPANCY_GRID: RosType = RosType {
    package: "nav_msgs",
    name: "OccupancyGrid",
    hash: "RIHS01_8d348150c12913a31ee0ec170fbf25089e4745d17035792a1ba94d6f0bc0cfc7",
};

/// `nav_msgs/msg/Path` (`plan`).
pub const PATH: RosType = RosType {
    package: "nav_msgs",
    name: "Path",
    hash: "RIHS01_1957a5bb3cee5da65c4e52e52b65a93df227efce4c20f8458b36e73066ca334b",
};

/// `geometry_msgs/msg/PoseWithCovarianceStamped` (`amcl_pose`, `initialpose`).
pub const POSE_WITH_COVARIANCE_STAMPED: RosType = RosType {
    package: "geometry_msgs",
    name: "PoseWithCovarianceStamped",
    hash: "RIHS01_26432f9803e43727d3c8f668d1fdb3c630f548af631e2f4e31382371bfea3b6e",
};

/// `geometry_msgs/msg/PoseArray` (`particlecloud`).
pub const POSE_ARRAY: RosType = RosType {
    package: "geometry_msgs",
    name: "PoseArray",
    hash: "RIHS01_af0cc36d190e104d546d168d6b39df04fa4b4ccecf59cb4c9ed328d3d5004aa0",
};

/// `geometry_msgs/msg/PoseStamped` (`goal_pose`).
pub const POSE_STAMPED: RosType = RosType {
    package: "geometry_msgs",
    name: "PoseStamped",
    hash: "RIHS01_10f3786d7d40fd2b54367835614bff85d4ad3b5dab62bf8bca0cc232d73b4cd8",
};

/// Every type above.
pub const ALL: [RosType; 16] = [
    LASER_SCAN,
    ODOMETRY,
    TF_MESSAGE,
    TRANSFORM_STAMPED,
    RANGE,
    BATTERY_STATE,
    TWIST,
    TWIST_STAMPED,
    BOOL,
    HEADER,
    TIME,
    OCCUPANCY_GRID,
    PATH,
    POSE_WITH_COVARIANCE_STAMPED,
    POSE_ARRAY,
    POSE_STAMPED,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_ros_and_rmw_zenoh_spellings() {
        assert_eq!(LASER_SCAN.ros_name(), "sensor_msgs/msg/LaserScan");
        assert_eq!(LASER_SCAN.dds_name(), "sensor_msgs::msg::dds_::LaserScan_");
    }

    #[test]
    fn hashes_are_rihs01_with_64_lowercase_hex_digits() {
        let mut seen = std::collections::HashSet::new();
        for t in ALL {
            let hex = t.hash.strip_prefix("RIHS01_").expect(t.name);
            assert_eq!(hex.len(), 64, "{}", t.name);
            assert!(
                hex.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
                "{}",
                t.name
            );
            assert!(seen.insert(t.hash), "{} repeats a hash", t.name);
        }
    }
}
