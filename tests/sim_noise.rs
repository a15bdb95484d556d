//! The simulated robot's sensor noise as a client sees it over TCP: on by default (a robot
//! standing still reads a laser scan that jitters from one reading to the next, about the
//! geometry's ranges), off with the `sim` driver's `noise = false` (every reading the
//! geometry's exactly).

use player::drivers::sim::world::{SimRobot, WorldMap};
use player::settings::Settings;
use player_proto::data::Laser;
use player_testkit::*;
use std::sync::Arc;

/// A simulated robot in the built-in room with `extra` lines in its driver's parameters.
fn server(extra: &str) -> TestServer {
    let text = format!(
        r#"
[[robot]]
[[robot.driver]]
driver = "sim"
devices = ["p", "s", "m", "g", "l", "z", "v"]
[robot.driver.params]
{extra}
"#
    );
    let settings = Settings::from_toml(&text, "test").unwrap();
    start_server_with(settings, player::builtin_catalog())
}

/// `n` laser scans in a row from a client reading only the laser.
fn scans(server: &TestServer, n: usize) -> Vec<[u16; 361]> {
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'l', b'r')]), b"lr");
    (0..n)
        .map(|_| Laser::decode(&c.read_round(1)[0].1).unwrap().ranges)
        .collect()
}

/// The room's laser scan from the start pose, computed without noise.
fn exact_scan() -> [u16; 361] {
    SimRobot::new(Arc::new(WorldMap::default_room()), Default::default()).laser()
}

#[test]
fn the_laser_jitters_about_the_truth_by_default() {
    let server = server("");
    let exact = exact_scan();
    let got = scans(&server, 4);
    // The robot stands still: the geometry is the same every time, the readings are not.
    let changed = got.windows(2).filter(|w| w[0] != w[1]).count();
    assert!(
        changed >= 2,
        "scans of a robot standing still never changed"
    );
    for scan in &got {
        let mut off = 0;
        for (k, (&g, &e)) in scan.iter().zip(exact.iter()).enumerate() {
            // Within six sigmas of the 5 mm noise; nothing beyond 8 m is ever seen.
            assert!(g.abs_diff(e) <= 30, "ray {k}: {g} vs {e}");
            if e == 8000 {
                assert_eq!(g, 8000, "ray {k}");
            }
            off += usize::from(g != e);
        }
        assert!(off > 100, "only {off} of 361 rays differ from the geometry");
    }
}

#[test]
fn noise_false_gives_the_geometry_exactly() {
    let server = server("noise = false");
    let exact = exact_scan();
    for scan in scans(&server, 3) {
        assert_eq!(scan, exact);
    }
}
