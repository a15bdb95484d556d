//! World events over real TCP (`-stage` with `[[event]]`, docs/worlds.md): a robot carried
//! elsewhere in `config/worlds/office-maze.toml` jumps in the ground-truth log and in what
//! its laser sees, while its odometry (`p`) does not move; and 200 random carries of a robot
//! driven by `player_client::avoid`'s laser avoider over TCP leave the server serving, the
//! odometry continuous and every carried pose clear of the walls.
//!
//! The server steps its world in real time, so each test lasts a few seconds; the world is
//! the shipped office maze with an event added and the truth log in a temporary directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use player::parse_args;
use player::settings::{Invocation, Settings};
use player_client::avoid::LaserAvoider;
use player_client::Client;
use player_sim::geom::Vec2;
use player_sim::{SimWorld, TruthRecord, WorldMap, ROBOT_RADIUS_MM};
use player_testkit::TestServer;

/// Generous: the machine may be loaded.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A temporary directory holding the office maze with `events` appended and its truth log
/// redirected there (CSV, every 0.1 s); the world file's and the log's paths.
fn office_maze_with(tag: &str, events: &str) -> (PathBuf, PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("player-sim-events-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds/office-maze.toml");
    let text = std::fs::read_to_string(&shipped).unwrap();
    let log = dir.join("truth.csv");
    let text = text.replace(
        "file = \"office-maze-truth.csv\"",
        &format!("file = \"{}\"", log.display()),
    );
    assert!(
        text.contains(&log.display().to_string()),
        "no [truth] file key to redirect"
    );
    let world = dir.join("office-maze.toml");
    std::fs::write(&world, format!("{text}\n{events}")).unwrap();
    (dir, world, log)
}

/// The server of `-stage WORLD` on a free port.
fn serve(world: &Path) -> TestServer {
    let args: Vec<String> = ["-stage", world.to_str().unwrap(), "-gp", "0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let settings: Settings = match parse_args(&args) {
        Ok(Invocation::Run { settings, .. }) => *settings,
        other => panic!("{other:?}"),
    };
    TestServer::start(settings, player::builtin_catalog())
}

fn client(server: &TestServer) -> Client {
    let mut c = Client::connect_timeout(server.addrs()[0], TIMEOUT).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    c.request("lrpa").unwrap().check().unwrap();
    c
}

/// The truth log's records with the event each is marked with.
fn truth_of(log: &Path) -> Vec<(TruthRecord, Option<String>)> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("time,robot,x,y,heading,event"),
        "a world with events has the event column"
    );
    lines
        .map(|l| TruthRecord::parse_with_event(l).unwrap_or_else(|| panic!("bad line {l:?}")))
        .collect()
}

/// The share of the 361 rays of `a` within `tol` mm of `b`'s.
fn agreement(a: &[u16; 361], b: &[u16; 361], tol: u16) -> f64 {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.abs_diff(**y) <= tol)
        .count() as f64
        / 361.0
}

#[test]
fn a_carried_robot_jumps_in_the_truth_log_and_its_laser_but_not_its_odometry() {
    // From the corridor's west end into twin B, facing north, at 3 s of simulated time.
    let (dir, world, log) =
        office_maze_with("carry", "[[event]]\nat = 3\nmove_to = [9800, 3000, 90]\n");
    let server = serve(&world);
    let mut c = client(&server);
    // Drive east a little first, so the odometry has something to keep.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        c.set_speed(300, 0).unwrap();
        let p = c.read().unwrap().position.unwrap();
        if p.x > 150 {
            break;
        }
        assert!(Instant::now() < deadline, "the robot did not move");
    }
    c.set_speed(0, 0).unwrap();
    // Let it come to rest (it ramps down at 600 mm/s^2), then note its odometry.
    let deadline = Instant::now() + TIMEOUT;
    let before = loop {
        let p = c.read().unwrap().position.unwrap();
        if p.speed == 0 {
            let again = c.read().unwrap().position.unwrap();
            if (again.x, again.y, again.heading) == (p.x, p.y, p.heading) {
                break again;
            }
        }
        assert!(Instant::now() < deadline, "the robot did not stop");
    };
    let before_laser = c.round().laser.clone().unwrap().ranges;

    // What the laser sees at the destination, worked out by a world of our own.
    let map = WorldMap::from_file(&world).unwrap();
    let mut own = SimWorld::new(Arc::new(map));
    own.robot_mut(0)
        .set_true_pose(9800.0, 3000.0, std::f64::consts::FRAC_PI_2);
    let expected = own.laser(0);
    assert!(
        agreement(&before_laser, &expected, 30) < 0.5,
        "the corridor and twin B look too alike for this test"
    );
    // Wait for the carry: the client's laser shows twin B.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let ranges = c.read().unwrap().laser.clone().unwrap().ranges;
        if agreement(&ranges, &expected, 30) >= 0.95 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the laser never showed twin B: {:.2} of the rays agree",
            agreement(&ranges, &expected, 30)
        );
    }
    // Odometry did not move.
    let after = c.read().unwrap().position.unwrap();
    assert_eq!(
        (
            after.x,
            after.y,
            after.heading,
            after.speed,
            after.turn_rate
        ),
        (before.x, before.y, before.heading, 0, 0),
        "odometry before {before:?}, after {after:?}"
    );
    drop(c);
    drop(server);

    let truth = truth_of(&log);
    std::fs::remove_dir_all(&dir).unwrap();
    let carried: Vec<&TruthRecord> = truth
        .iter()
        .filter(|(_, e)| e.as_deref() == Some("carried"))
        .map(|(r, _)| r)
        .collect();
    assert_eq!(carried.len(), 1, "{carried:?}");
    let r = carried[0];
    assert_eq!(
        (r.time, r.robot.as_str(), r.x, r.y, r.heading),
        (3.0, "robot0", 9800.0, 3000.0, 90.0)
    );
    // Before the carry the truth is in the corridor, near the start; after it, at the
    // destination (the robot is at rest).
    let plain = |pred: &dyn Fn(f64) -> bool| {
        truth
            .iter()
            .filter(|(r, e)| e.is_none() && pred(r.time))
            .map(|(r, _)| r)
            .collect::<Vec<_>>()
    };
    let earlier = plain(&|t| t < 3.0 - 1e-6);
    let later = plain(&|t| t > 3.0 + 1e-6);
    assert!(earlier.len() >= 20 && !later.is_empty(), "{truth:?}");
    assert!(earlier
        .iter()
        .all(|r| (r.y - 5800.0).abs() < 50.0 && (1000.0..2000.0).contains(&r.x)));
    assert!(later
        .iter()
        .all(|r| (r.x, r.y, r.heading) == (9800.0, 3000.0, 90.0)));
}

#[test]
fn two_hundred_random_carries_while_the_laser_avoider_drives_over_tcp() {
    const CARRIES: usize = 200;
    let (dir, world, log) = office_maze_with(
        "random",
        "[[event]]\nat = 0.5\nevery = 0.05\ntimes = 200\nmove_to = \"random\"\n",
    );
    let server = serve(&world);
    let mut c = client(&server);
    let mut avoider = LaserAvoider::default();
    let mut last: Option<player_client::Position> = None;
    let start = Instant::now();
    // The carries end at 10.45 s of simulated time; drive on a little after.
    while start.elapsed() < Duration::from_secs(12) {
        let round = c.read().unwrap();
        let (p, l) = (round.position.unwrap(), round.laser.clone().unwrap());
        // Odometry moves only as the wheels do (at most 500 mm/s), however often the robot
        // is carried.
        if let Some(q) = last {
            let dt = f64::from(p.time.wrapping_sub(q.time)) / 1000.0;
            let moved = f64::from(p.x - q.x).hypot(f64::from(p.y - q.y));
            assert!(
                moved <= 500.0 * dt + 20.0,
                "odometry jumped {moved:.0} mm in {dt} s"
            );
        }
        last = Some(p);
        let (speed, turn) = avoider.step(&l.ranges);
        c.set_speed(speed, turn).unwrap();
    }
    c.set_speed(0, 0).unwrap();
    // The server still serves.
    c.read().unwrap();
    drop(c);
    drop(server);

    let truth = truth_of(&log);
    let map = WorldMap::from_file(&world).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let carried: Vec<&TruthRecord> = truth
        .iter()
        .filter(|(_, e)| e.as_deref() == Some("carried"))
        .map(|(r, _)| r)
        .collect();
    assert_eq!(carried.len(), CARRIES);
    for (k, r) in carried.iter().enumerate() {
        assert!((r.time - (0.5 + 0.05 * k as f64)).abs() < 1e-6, "{r:?}");
        // The log rounds to 0.1 mm.
        let (clear, _) = map.clearance(Vec2::new(r.x, r.y), ROBOT_RADIUS_MM);
        assert!(
            clear >= -0.1,
            "carry {k} put the robot down on a wall: {r:?}"
        );
        assert!(
            (0.0..16000.0).contains(&r.x) && (0.0..12000.0).contains(&r.y),
            "{r:?}"
        );
    }
    // They spread over the maze, north and south of the corridor.
    assert!(carried.iter().any(|r| r.y < 5000.0));
    assert!(carried.iter().any(|r| r.y > 6600.0));
    // Every record of the log, carried or not, has the robot clear of the walls.
    for (r, _) in &truth {
        let (clear, _) = map.clearance(Vec2::new(r.x, r.y), ROBOT_RADIUS_MM);
        assert!(clear >= -1.0, "the robot overlaps a wall: {r:?}");
    }
}
