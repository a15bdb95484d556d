//! The ROS 2 front end's navigation topics against a real server and a real Zenoh session:
//! `map` put together from the `mapfile` driver's tiles (and given to a late joiner's
//! history query), `amcl_pose`, `particlecloud` and `map` -> `odom` on `tf` from a stand-in
//! localizer, `plan` from a stand-in planner (`common/navstub.rs`), and `initialpose` and
//! `goal_pose` reaching them (an `x H s` config, a planner command through the guard),
//! and ignored with `write = false`. The messages are read here with the crate's CDR
//! reader; tests/ros2/test_ros2.py decodes the same encoders' output with the official
//! Jazzy packages.

mod common;

use common::navstub;

use player::settings::Settings;
use player_ros2::cdr::Reader;
use player_ros2::msg::{Header, Quaternion, Time};
use player_ros2::nav_msg::{Pose, PoseStamped, PoseWithCovarianceStamped};
use player_ros2::rmw::{self, Attachment};
use player_ros2::types::{self, RosType};
use player_ros2::Ros2Settings;
use player_testkit::*;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zenoh::Wait;

/// A 40 x 30 map: walls round the edge, a column of unknown cells at x = 20, free floor.
fn map_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("player-ros2-nav-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let (w, h) = (40, 30);
    let mut pgm = format!("P5\n{w} {h}\n255\n").into_bytes();
    for y in 0..h {
        for x in 0..w {
            pgm.push(if x == 0 || y == 0 || x == w - 1 || y == h - 1 {
                0
            } else if x == 20 {
                205
            } else {
                254
            });
        }
    }
    std::fs::write(d.join("m.pgm"), pgm).unwrap();
    std::fs::write(
        d.join("m.yaml"),
        "image: m.pgm\nresolution: 0.1\norigin: [-2.0, -1.5, 0.0]\nnegate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n",
    )
    .unwrap();
    d
}

fn start(write: bool) -> (TestServer, zenoh::Session) {
    let port = free_port();
    let yaml = map_dir().join("m.yaml");
    let text = format!(
        r#"
[[robot]]
name = "bot"
[[robot.driver]]
driver = "sim"
devices = ["p", "l"]
[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
yaml = "{}"
[[robot.driver]]
driver = "navstub"
devices = ["H", "G"]
"#,
        yaml.display()
    );
    let mut settings = Settings::from_toml(&text, "ros2 nav").unwrap();
    settings.ros2 = Ros2Settings {
        enabled: true,
        listen: vec![format!("tcp/127.0.0.1:{port}")],
        write,
        ..Ros2Settings::default()
    };
    let mut catalog = player::builtin_catalog();
    navstub::register(&mut catalog);
    let server = start_server_with(settings, catalog);
    (server, zenoh_client(port))
}

fn key(name: &str, ty: &RosType) -> String {
    let ns = Ros2Settings::default().namespace_of("bot", false);
    rmw::topic_key(0, &rmw::qualify(&ns, name), ty)
}

/// The payloads arriving on `name` (type `ty`), kept by a subscriber.
struct Topic {
    got: Arc<Mutex<Vec<Vec<u8>>>>,
    _sub: zenoh::pubsub::Subscriber<()>,
}

impl Topic {
    fn new(z: &zenoh::Session, name: &str, ty: &RosType) -> Topic {
        let got = Arc::new(Mutex::new(Vec::new()));
        let g = got.clone();
        let sub = z
            .declare_subscriber(key(name, ty))
            .callback(move |s| g.lock().unwrap().push(s.payload().to_bytes().to_vec()))
            .wait()
            .unwrap();
        Topic { got, _sub: sub }
    }

    /// The first payload for which `f` gives something, within `within`.
    fn wait<T>(&self, within: Duration, f: impl Fn(&[u8]) -> Option<T>) -> Option<T> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            let found = self.got.lock().unwrap().iter().find_map(|p| f(p));
            if found.is_some() {
                return found;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    fn count(&self) -> usize {
        self.got.lock().unwrap().len()
    }
}

fn header(r: &mut Reader) -> (Time, String) {
    let t = Time {
        sec: r.i32().unwrap(),
        nanosec: r.u32().unwrap(),
    };
    (t, r.string(256).unwrap())
}

fn pose(r: &mut Reader) -> [f64; 3] {
    let v: Vec<f64> = (0..7).map(|_| r.f64().unwrap()).collect();
    let q = Quaternion {
        x: v[3],
        y: v[4],
        z: v[5],
        w: v[6],
    };
    [v[0], v[1], q.yaw()]
}

/// An OccupancyGrid: frame, resolution, width, height, origin, cells.
fn grid(b: &[u8]) -> (String, f32, u32, u32, [f64; 3], Vec<i8>) {
    let mut r = Reader::new(b).unwrap();
    let (_, frame) = header(&mut r);
    let _load = (r.i32().unwrap(), r.u32().unwrap());
    let (res, w, h) = (r.f32().unwrap(), r.u32().unwrap(), r.u32().unwrap());
    let origin = pose(&mut r);
    let n = r.u32().unwrap() as usize;
    let cells = (0..n).map(|_| r.u8().unwrap() as i8).collect();
    (frame, res, w, h, origin, cells)
}

/// A PoseArray's or a Path's frame and poses.
fn poses(b: &[u8], stamped: bool) -> (String, Vec<[f64; 3]>) {
    let mut r = Reader::new(b).unwrap();
    let (_, frame) = header(&mut r);
    let n = r.u32().unwrap();
    let mut v = Vec::new();
    for _ in 0..n {
        if stamped {
            header(&mut r);
        }
        v.push(pose(&mut r));
    }
    (frame, v)
}

/// Publishes `payload` on `name` once a second for `times` seconds, with rmw_zenoh's
/// attachment.
fn send(z: &zenoh::Session, name: &str, ty: &RosType, payload: Vec<u8>, times: u32) {
    let p = z.declare_publisher(key(name, ty)).wait().unwrap();
    for seq in 1..=times {
        let a = Attachment {
            seq: i64::from(seq),
            timestamp_ns: 1,
            gid: [7; rmw::GID_LEN],
        };
        p.put(payload.clone())
            .attachment(a.encode().to_vec())
            .wait()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn stamped(frame: &str) -> Header {
    Header {
        stamp: Time::default(),
        frame_id: frame.into(),
    }
}

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn the_map_is_put_together_from_its_tiles_and_kept_for_late_joiners() {
    let (_server, z) = start(false);
    let map = Topic::new(&z, "map", &types::OCCUPANCY_GRID);
    let (frame, res, w, h, origin, cells) = map.wait(WAIT, |b| Some(grid(b))).expect("a map");
    assert_eq!((frame.as_str(), w, h), ("map", 40, 30));
    assert!((res - 0.1).abs() < 1e-6);
    assert!((origin[0] + 2.0).abs() < 1e-9 && (origin[1] + 1.5).abs() < 1e-9);
    assert_eq!(cells.len(), 1200);
    // Row 0 is the image's bottom row: all wall; row 1 is wall, free, ..., unknown at 20.
    assert!(cells[..40].iter().all(|&c| c == 100));
    assert_eq!(
        (cells[40], cells[41], cells[60], cells[79]),
        (100, 0, -1, 100)
    );
    // A late joiner's history query (as zenoh-ext's advanced subscriber asks it, replies
    // on the topic's key accepted) gets the same map.
    let late = z
        .get(format!(
            "{}/@adv/pub/**",
            key("map", &types::OCCUPANCY_GRID)
        ))
        .accept_replies(zenoh::query::ReplyKeyExpr::Any)
        .wait()
        .unwrap();
    let reply = late.recv_timeout(WAIT).unwrap().expect("a history reply");
    let payload = reply.result().unwrap().payload().to_bytes().to_vec();
    assert_eq!(grid(&payload).5, cells);
}

#[test]
fn pose_particles_and_the_map_frame_come_from_the_localizer() {
    let (_server, z) = start(true);
    let amcl = Topic::new(&z, "amcl_pose", &types::POSE_WITH_COVARIANCE_STAMPED);
    let cloud = Topic::new(&z, "particlecloud", &types::POSE_ARRAY);
    let tf = Topic::new(&z, "tf", &types::TF_MESSAGE);
    let p = amcl
        .wait(WAIT, |b| PoseWithCovarianceStamped::decode(b).ok())
        .expect("amcl_pose");
    assert_eq!(p.header.frame_id, "map");
    let xy = p.pose.xy_yaw();
    assert!((xy[0] - 1.0).abs() < 1e-9 && (xy[1] - 2.0).abs() < 1e-9);
    assert!((xy[2] - 1f64.to_radians()).abs() < 1e-9, "3600 arc-seconds");
    assert!((p.covariance[0] - 1e-4).abs() < 1e-12, "100 mm^2");
    let (frame, particles) = cloud
        .wait(WAIT, |b| Some(poses(b, false)))
        .expect("particlecloud");
    assert_eq!(
        (frame.as_str(), particles.len()),
        ("map", navstub::PARTICLES as usize)
    );
    assert!((particles[3][0] - 0.003).abs() < 1e-12);
    // map -> odom, beside odom -> base_link.
    let found = tf.wait(WAIT, |b| {
        let mut r = Reader::new(b).ok()?;
        let n = r.u32().ok()?;
        (0..n).find_map(|_| {
            let (_, parent) = header(&mut r);
            let child = r.string(256).ok()?;
            let t: Vec<f64> = (0..7).map(|_| r.f64().unwrap()).collect();
            (parent == "map" && child == "odom").then_some(t)
        })
    });
    assert!(found.is_some(), "map -> odom on tf");
    // Particles come at a bounded rate: at most 2 a second (and a few in flight).
    let before = cloud.count();
    std::thread::sleep(Duration::from_secs(2));
    assert!(cloud.count() - before <= 5, "{}", cloud.count() - before);
    // initialpose sets the localizer's pose.
    let estimate = PoseWithCovarianceStamped {
        header: stamped("map"),
        pose: Pose::planar(-1.5, 0.25, std::f64::consts::FRAC_PI_2),
        covariance: PoseWithCovarianceStamped::from_planar([
            [0.09, 0.0, 0.0],
            [0.0, 0.09, 0.0],
            [0.0, 0.0, 0.03],
        ]),
    };
    send(
        &z,
        "initialpose",
        &types::POSE_WITH_COVARIANCE_STAMPED,
        estimate.encode(),
        3,
    );
    let moved = amcl.wait(WAIT, |b| {
        let p = PoseWithCovarianceStamped::decode(b).ok()?;
        ((p.pose.position.x + 1.5).abs() < 1e-9).then_some(p)
    });
    let moved = moved.expect("amcl_pose at the estimate");
    assert!((moved.pose.xy_yaw()[2] - std::f64::consts::FRAC_PI_2).abs() < 1e-5);
    assert!((moved.covariance[0] - 0.09).abs() < 1e-9);
}

#[test]
fn a_goal_reaches_the_planner_and_its_plan_comes_back() {
    let (_server, z) = start(true);
    let plan = Topic::new(&z, "plan", &types::PATH);
    let goal = PoseStamped {
        header: stamped("map"),
        pose: Pose::planar(3.0, -0.4, std::f64::consts::FRAC_PI_4),
    };
    send(&z, "goal_pose", &types::POSE_STAMPED, goal.encode(), 3);
    let (frame, w) = plan
        .wait(WAIT, |b| {
            let (f, w) = poses(b, true);
            (w.len() == 3 && (w[2][0] - 3.0).abs() < 1e-9).then_some((f, w))
        })
        .expect("the plan to the goal");
    assert_eq!(frame, "map");
    assert_eq!(w[1][..2], [0.5, 0.0]);
    assert!((w[2][1] + 0.4).abs() < 1e-9 && (w[2][2] - std::f64::consts::FRAC_PI_4).abs() < 1e-9);
}

#[test]
fn without_write_goals_and_pose_estimates_are_not_taken() {
    let (_server, z) = start(false);
    let amcl = Topic::new(&z, "amcl_pose", &types::POSE_WITH_COVARIANCE_STAMPED);
    let plan = Topic::new(&z, "plan", &types::PATH);
    let estimate = PoseWithCovarianceStamped {
        header: stamped("map"),
        pose: Pose::planar(-1.5, 0.25, 0.0),
        ..PoseWithCovarianceStamped::default()
    };
    let goal = PoseStamped {
        header: stamped("map"),
        pose: Pose::planar(3.0, -0.4, 0.0),
    };
    send(
        &z,
        "initialpose",
        &types::POSE_WITH_COVARIANCE_STAMPED,
        estimate.encode(),
        2,
    );
    send(&z, "goal_pose", &types::POSE_STAMPED, goal.encode(), 2);
    std::thread::sleep(Duration::from_secs(1));
    assert!(amcl.count() > 5, "amcl_pose is published all the same");
    let moved = amcl.wait(Duration::from_millis(100), |b| {
        let p = PoseWithCovarianceStamped::decode(b).ok()?;
        ((p.pose.position.x + 1.5).abs() < 1e-9).then_some(())
    });
    assert!(moved.is_none(), "the estimate was not taken");
    let planned = plan.wait(Duration::from_millis(100), |b| {
        let (_, w) = poses(b, true);
        w.last()
            .is_some_and(|g| (g[0] - 3.0).abs() < 1e-9)
            .then_some(())
    });
    assert!(planned.is_none(), "the goal was not taken");
}
