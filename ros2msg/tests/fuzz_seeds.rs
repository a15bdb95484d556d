//! The seeds of the fuzz targets `ros2_msg` and `rmw_attachment` (`fuzz/seeds/<target>/`,
//! docs/fuzzing.md), made with this crate's own encoders: this test checks that the files
//! are what the encoders write today, and `WRITE_FUZZ_SEEDS=1 cargo test -p
//! player-ros2-msg --test fuzz_seeds` writes them again after a change to the wire.
//!
//! Each seed is the target's selector byte then its input (see the targets' module docs).

use player_proto::data::{Laser, Misc, Position, Sonar};
use player_proto::scan::Scan;
use player_ros2_msg::cdr::Writer;
use player_ros2_msg::msg::{encode_bool, Header, Time, Twist, TwistStamped, Vector3};
use player_ros2_msg::nav_msg::{Pose, PoseStamped, PoseWithCovarianceStamped};
use player_ros2_msg::rmw::{Attachment, EntityKind, Qos, Token};
use player_ros2_msg::types;
use std::path::{Path, PathBuf};

fn seeds_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/seeds")
        .join(target)
}

fn seed(selector: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![selector];
    v.extend_from_slice(body);
    v
}

fn header(frame: &str) -> Header {
    Header {
        stamp: Time {
            sec: 1_700_000_000,
            nanosec: 250_000_000,
        },
        frame_id: frame.into(),
    }
}

/// `ros2_msg`'s readings (selector 6): the `l`, `L`, `p`, `s` and `m` data converted.
fn readings() -> Vec<(&'static str, Vec<u8>)> {
    let mut laser = Laser::default();
    laser.ranges[0] = 1000;
    laser.ranges[180] = 2500;
    let scan = Scan {
        angle_min: -2_356_194,
        angle_increment: 4_363,
        ranges: vec![0, 1500, 65535, 20],
        intensities: Some(vec![0, 200, 255, 1]),
    };
    let position = Position {
        x: 1500,
        y: -250,
        heading: 90,
        speed: 300,
        turn_rate: -20,
        ..Position::default()
    };
    let mut sonar = Sonar::default();
    sonar.ranges[3] = 5000;
    let misc = Misc {
        voltage: 125,
        ..Misc::default()
    };
    let reading = |which: u8, data: &[u8]| seed(6, &seed(which, data));
    vec![
        ("reading_l", reading(0, &laser.encode())),
        ("reading_wide_l", reading(1, &scan.encode().unwrap())),
        ("reading_p", reading(2, &position.encode())),
        ("reading_s", reading(3, &sonar.encode())),
        ("reading_m", reading(4, &misc.encode())),
    ]
}

/// `ros2_msg`'s seeds: one per message type it decodes, a script of raw reads, and
/// the readings converted.
fn ros2_msg() -> Vec<(&'static str, Vec<u8>)> {
    let twist = Twist {
        linear: Vector3 {
            x: 0.3,
            ..Vector3::default()
        },
        angular: Vector3 {
            z: -0.5,
            ..Vector3::default()
        },
    };
    let stamped = TwistStamped {
        header: header("base_link"),
        twist,
    };
    let initialpose = PoseWithCovarianceStamped {
        header: header("map"),
        pose: Pose::planar(1.0, -2.0, 0.5),
        covariance: PoseWithCovarianceStamped::from_planar([
            [0.25, 0.0, 0.0],
            [0.0, 0.25, 0.0],
            [0.0, 0.0, 0.07],
        ]),
    };
    let goal = PoseStamped {
        header: header("map"),
        pose: Pose::planar(3.0, 4.0, -1.0),
    };
    // The script `u8, u32, string (at most 32 bytes), f64, i32, f32` and a payload of them.
    let ops = [0u8, 1, 5 + 6 * 4, 4, 2, 3];
    let mut w = Writer::default();
    w.u8(7).u32(42).string("laser").f64(-1.5).i32(-3).f32(0.25);
    let mut script = vec![ops.len() as u8];
    script.extend_from_slice(&ops);
    script.extend_from_slice(&w.finish());
    vec![
        ("twist", seed(0, &twist.encode())),
        ("twist_stamped", seed(1, &stamped.encode())),
        ("initialpose", seed(2, &initialpose.encode())),
        ("goal_pose", seed(3, &goal.encode())),
        ("estop", seed(4, &encode_bool(true))),
        ("script", seed(5, &script)),
    ]
    .into_iter()
    .chain(readings())
    .collect()
}

/// `rmw_attachment`'s seeds: an attachment, a node's and a subscription's tokens, names.
fn rmw_attachment() -> Vec<(&'static str, Vec<u8>)> {
    let node = Token::node(
        0,
        "aac3178e146ba6f1fc6e6a4085e77f21",
        0,
        "/robot1",
        "player",
    );
    let sub = node.entity(
        3,
        EntityKind::Subscription,
        "/robot1/cmd_vel",
        &types::TWIST,
        Qos::reliable(10),
    );
    let a = Attachment {
        seq: 1,
        timestamp_ns: 1_700_000_000_250_000_000,
        gid: sub.gid(),
    };
    vec![
        ("attachment", seed(0, &a.encode())),
        ("node_token", seed(1, node.key().as_bytes())),
        ("subscription_token", seed(1, sub.key().as_bytes())),
        ("names", seed(2, b"/robot1/\0cmd_vel")),
    ]
}

#[test]
fn the_fuzz_seeds_are_what_the_encoders_write() {
    let write = std::env::var_os("WRITE_FUZZ_SEEDS").is_some();
    for (target, seeds) in [
        ("ros2_msg", ros2_msg()),
        ("rmw_attachment", rmw_attachment()),
    ] {
        let dir = seeds_dir(target);
        for (name, bytes) in seeds {
            let path = dir.join(name);
            if write {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &bytes).unwrap();
            }
            let on_disk = std::fs::read(&path).unwrap_or_else(|e| {
                panic!("{}: {e} (WRITE_FUZZ_SEEDS=1 writes it)", path.display())
            });
            assert_eq!(
                on_disk,
                bytes,
                "{} is stale (WRITE_FUZZ_SEEDS=1 writes it again)",
                path.display()
            );
        }
    }
}
