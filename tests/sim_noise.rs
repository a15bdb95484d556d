//! The simulated robot's sensor noise as a client sees it over TCP: on by default (a robot
//! standing still reads a laser scan that jitters from one reading to the next, about the
//! geometry's ranges, and sonar ranges that barely change: a sonar's error follows the
//! geometry, as a Polaroid ranger's does), off with the `sim` driver's `noise = false` (every
//! reading the geometry's exactly).

use player::settings::Settings;
use player_proto::data::{Laser, Sonar};
use player_sim::{SimRobot, WorldMap};
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

#[test]
fn the_sonar_of_a_robot_standing_still_reads_almost_the_same_every_round() {
    let server = server("");
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b's', b'r')]), b"sr");
    let rounds: Vec<[u16; 16]> = (0..50)
        .map(|_| Sonar::decode(&c.read_round(1)[0].1).unwrap().ranges)
        .collect();
    for k in 0..16 {
        let xs: Vec<f64> = rounds.iter().map(|r| f64::from(r[k])).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64).sqrt();
        // The fresh share of the error is 1 mm a metre (at least 1 mm); a fresh 1% error
        // at every reading would be 10 mm a metre, and a lost echo thousands.
        assert!(
            sd <= 3.0 * mean.max(1000.0) / 1000.0,
            "sonar {k}: sd {sd:.1} mm about {mean:.0} mm"
        );
    }
    // The two sides the 2000 C++ avoider compares keep their order.
    let sides = |r: &[u16; 16]| {
        (u32::from(r[0]) + u32::from(r[1])).cmp(&(u32::from(r[6]) + u32::from(r[7])))
    };
    assert!(
        rounds.iter().all(|r| sides(r) == sides(&rounds[0])),
        "left and right sums swapped order: {rounds:?}"
    );
}
