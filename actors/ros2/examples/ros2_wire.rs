//! The pure parts of player-ros2 on the command line, for `tests/ros2/test_ros2.py` to
//! check against real ROS 2 code (rclpy, the official type descriptions, xxhash):
//!
//! - `ros2_wire types`: one line per type, `<pkg>/msg/<Type> <RIHS01 hash>`;
//! - `ros2_wire samples`: a JSON object, per type name `{"cdr": hex, "fields": {...}}`;
//! - `ros2_wire twist <hex>` / `ros2_wire twist_stamped <hex>`: the decoded command as
//!   JSON, or `{"error": ...}`;
//! - `ros2_wire pose_cov <hex>` / `ros2_wire pose_stamped <hex>`: an `initialpose` or a
//!   `goal_pose` decoded (x, y, yaw, the planar covariance), or `{"error": ...}`;
//! - `ros2_wire token`: a publisher token, its GID and an attachment, as JSON.

use player_ros2::msg::*;
use player_ros2::nav_msg::*;
use player_ros2::rmw::{Attachment, EntityKind, Qos, Token};
use player_ros2::types;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

fn header(frame: &str) -> Header {
    Header {
        stamp: Time {
            sec: 1_700_000_123,
            nanosec: 456_000_000,
        },
        frame_id: frame.into(),
    }
}

fn samples() -> String {
    let scan = LaserScan {
        header: header("laser"),
        angle_min: -1.5707964,
        angle_max: 1.5707964,
        angle_increment: 0.008726646,
        time_increment: 0.0,
        scan_time: 0.1,
        range_min: 0.0,
        range_max: 8.0,
        ranges: vec![1.0, 2.5, 8.0],
        intensities: vec![],
    };
    let odom = Odometry {
        header: header("odom"),
        child_frame_id: "base_link".into(),
        position: Vector3 {
            x: 1.25,
            y: -0.5,
            z: 0.0,
        },
        orientation: Quaternion::from_yaw(0.5),
        twist: Twist {
            linear: Vector3 {
                x: 0.3,
                y: 0.0,
                z: 0.0,
            },
            angular: Vector3 {
                x: 0.0,
                y: 0.0,
                z: -0.2,
            },
        },
        ..Odometry::default()
    };
    let tf = vec![
        TransformStamped {
            header: header("odom"),
            child_frame_id: "base_link".into(),
            translation: Vector3 {
                x: 1.25,
                y: -0.5,
                z: 0.0,
            },
            rotation: Quaternion::from_yaw(0.5),
        },
        TransformStamped {
            header: header("base_link"),
            child_frame_id: "laser".into(),
            translation: Vector3 {
                x: 0.16,
                y: 0.0,
                z: 0.2,
            },
            rotation: Quaternion::default(),
        },
    ];
    let range = Range {
        header: header("sonar_3"),
        radiation_type: Range::ULTRASOUND,
        field_of_view: 0.26,
        min_range: 0.1,
        max_range: 5.0,
        range: 1.5,
        variance: 0.01,
    };
    let battery = BatteryState {
        header: header("base_link"),
        voltage: 12.5,
        present: true,
        location: "base".into(),
        ..BatteryState::default()
    };
    let mut items = vec![
        ("sensor_msgs/msg/LaserScan", scan.encode(), format!(
            r#"{{"frame_id":"laser","sec":1700000123,"nanosec":456000000,"angle_min":{},"angle_max":{},"angle_increment":{},"scan_time":{},"range_max":8.0,"ranges":[1.0,2.5,8.0]}}"#,
            scan.angle_min, scan.angle_max, scan.angle_increment, scan.scan_time)),
        ("nav_msgs/msg/Odometry", odom.encode(), format!(
            r#"{{"frame_id":"odom","child_frame_id":"base_link","x":1.25,"y":-0.5,"qz":{},"qw":{},"vx":0.3,"wz":-0.2}}"#,
            odom.orientation.z, odom.orientation.w)),
        ("tf2_msgs/msg/TFMessage", encode_tf(&tf), format!(
            r#"{{"n":2,"child0":"base_link","parent1":"base_link","child1":"laser","x0":1.25,"z1":0.2,"qz0":{}}}"#,
            tf[0].rotation.z)),
        ("sensor_msgs/msg/Range", range.encode(),
            r#"{"frame_id":"sonar_3","radiation_type":0,"field_of_view":0.26,"min_range":0.1,"max_range":5.0,"range":1.5,"variance":0.01}"#.into()),
        ("sensor_msgs/msg/BatteryState", battery.encode(),
            r#"{"frame_id":"base_link","voltage":12.5,"present":true,"location":"base"}"#.into()),
    ];
    items.extend(nav_samples());
    serde_free_json(&items)
}

/// The navigation messages, as the node makes them, with the fields to compare.
fn nav_samples() -> Vec<(&'static str, Vec<u8>, String)> {
    let grid = OccupancyGrid {
        header: header("map"),
        map_load_time: Time {
            sec: 1_700_000_000,
            nanosec: 0,
        },
        resolution: 0.05,
        width: 3,
        height: 2,
        origin: Pose::planar(-10.5, -7.75, 0.0),
        data: vec![0, 100, -1, 0, 0, 100],
    };
    let amcl = PoseWithCovarianceStamped {
        header: header("map"),
        pose: Pose::planar(1.5, -0.25, 0.75),
        covariance: PoseWithCovarianceStamped::from_planar([
            [0.04, 0.001, 0.0],
            [0.001, 0.09, 0.0],
            [0.0, 0.0, 0.0685],
        ]),
    };
    let cloud = PoseArray {
        header: header("map"),
        poses: (0..5)
            .map(|i| Pose::planar(f64::from(i) * 0.5, -1.0, f64::from(i) * 0.25))
            .collect(),
    };
    let path = Path {
        header: header("map"),
        poses: [(0.0, 0.0), (0.5, 0.0), (3.0, -0.4)]
            .iter()
            .map(|&(x, y)| PoseStamped {
                header: header("map"),
                pose: Pose::planar(x, y, 0.0),
            })
            .collect(),
    };
    let goal = PoseStamped {
        header: header("map"),
        pose: Pose::planar(3.0, -0.4, std::f64::consts::FRAC_PI_4),
    };
    vec![
        (
            "nav_msgs/msg/OccupancyGrid",
            grid.encode(),
            r#"{"frame_id":"map","resolution":0.05,"width":3,"height":2,"ox":-10.5,"oy":-7.75,"data":[0,100,-1,0,0,100],"load_sec":1700000000}"#
                .into(),
        ),
        (
            "geometry_msgs/msg/PoseWithCovarianceStamped",
            amcl.encode(),
            format!(
                r#"{{"frame_id":"map","x":1.5,"y":-0.25,"qz":{},"qw":{},"cov0":0.04,"cov1":0.001,"cov7":0.09,"cov35":0.0685}}"#,
                amcl.pose.orientation.z, amcl.pose.orientation.w
            ),
        ),
        (
            "geometry_msgs/msg/PoseArray",
            cloud.encode(),
            r#"{"frame_id":"map","n":5,"x4":2.0,"y4":-1.0}"#.into(),
        ),
        (
            "nav_msgs/msg/Path",
            path.encode(),
            r#"{"frame_id":"map","n":3,"x2":3.0,"y2":-0.4}"#.into(),
        ),
        (
            "geometry_msgs/msg/PoseStamped",
            goal.encode(),
            format!(
                r#"{{"frame_id":"map","x":3.0,"y":-0.4,"qz":{},"qw":{}}}"#,
                goal.pose.orientation.z, goal.pose.orientation.w
            ),
        ),
    ]
}

/// `{"<type>": {"cdr": "<hex>", "fields": <fields>}, ...}` (no JSON library needed).
fn serde_free_json(items: &[(&str, Vec<u8>, String)]) -> String {
    let body: Vec<String> = items
        .iter()
        .map(|(t, b, f)| format!(r#""{t}":{{"cdr":"{}","fields":{f}}}"#, hex(b)))
        .collect();
    format!("{{{}}}", body.join(","))
}

fn twist_json(t: &Twist) -> String {
    format!(
        r#""linear":[{},{},{}],"angular":[{},{},{}]"#,
        t.linear.x, t.linear.y, t.linear.z, t.angular.x, t.angular.y, t.angular.z
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("types") => {
            for t in types::ALL {
                println!("{} {}", t.ros_name(), t.hash);
            }
        }
        Some("samples") => println!("{}", samples()),
        Some("twist") => match Twist::decode(&unhex(args.get(1).map_or("", |s| s))) {
            Ok(t) => println!("{{{}}}", twist_json(&t)),
            Err(e) => println!(r#"{{"error":"{e}"}}"#),
        },
        Some("twist_stamped") => {
            match TwistStamped::decode(&unhex(args.get(1).map_or("", |s| s))) {
                Ok(t) => println!(
                    r#"{{"frame_id":"{}","sec":{},"nanosec":{},{}}}"#,
                    t.header.frame_id,
                    t.header.stamp.sec,
                    t.header.stamp.nanosec,
                    twist_json(&t.twist)
                ),
                Err(e) => println!(r#"{{"error":"{e}"}}"#),
            }
        }
        Some("pose_cov") => {
            match PoseWithCovarianceStamped::decode(&unhex(args.get(1).map_or("", |s| s))) {
                Ok(p) => {
                    let [x, y, yaw] = p.pose.xy_yaw();
                    let c = p.planar_covariance();
                    println!(
                        r#"{{"frame_id":"{}","x":{x},"y":{y},"yaw":{yaw},"cov":[{},{},{}]}}"#,
                        p.header.frame_id, c[0][0], c[1][1], c[2][2]
                    );
                }
                Err(e) => println!(r#"{{"error":"{e}"}}"#),
            }
        }
        Some("pose_stamped") => match PoseStamped::decode(&unhex(args.get(1).map_or("", |s| s))) {
            Ok(p) => {
                let [x, y, yaw] = p.pose.xy_yaw();
                println!(
                    r#"{{"frame_id":"{}","x":{x},"y":{y},"yaw":{yaw}}}"#,
                    p.header.frame_id
                );
            }
            Err(e) => println!(r#"{{"error":"{e}"}}"#),
        },
        Some("token") => {
            let node = Token::node(0, "8b20917502ee955ac4476e0266340d5c", 0, "/", "player");
            let p = node.entity(
                3,
                EntityKind::Publisher,
                "/scan",
                &types::LASER_SCAN,
                Qos::reliable(10),
            );
            let a = Attachment {
                seq: 1,
                timestamp_ns: 1_700_000_123_456_000_000,
                gid: p.gid(),
            };
            println!(
                r#"{{"key":"{}","gid":"{}","attachment":"{}"}}"#,
                p.key(),
                hex(&p.gid()),
                hex(&a.encode())
            );
        }
        _ => {
            eprintln!(
                "usage: ros2_wire types|samples|token|twist <hex>|twist_stamped <hex>|pose_cov <hex>|pose_stamped <hex>"
            );
            std::process::exit(2);
        }
    }
}
