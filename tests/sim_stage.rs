//! `-stage WORLD`: one process serves every robot of a world file, each on its own port with
//! its own registry; the robots share one world and see each other. Checked over real TCP
//! with the `player-client` crate, and at the level of the parsed settings.

use std::path::Path;
use std::time::{Duration, Instant};

use player::parse_args;
use player::settings::{Invocation, Settings, SettingsError};
use player_client::Client;
use player_sim::TruthRecord;
use player_testkit::TestServer;

/// Generous: the machine may be loaded.
const TIMEOUT: Duration = Duration::from_secs(10);

fn world(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("config/worlds")
        .join(name)
        .display()
        .to_string()
}

fn settings(args: &[&str]) -> Result<Settings, SettingsError> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match parse_args(&args) {
        Ok(Invocation::Run { settings, .. }) => Ok(*settings),
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e),
    }
}

/// A client of robot `i` of `server`.
fn client(server: &TestServer, i: usize) -> Client {
    let mut c = Client::connect_timeout(server.addrs()[i], TIMEOUT).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    c
}

#[test]
fn stage_flag_makes_one_served_robot_per_world_robot() {
    let s = settings(&["-stage", &world("arena.toml")]).unwrap();
    let robots: Vec<(&str, u16)> = s.robot.iter().map(|r| (r.name.as_str(), r.port)).collect();
    assert_eq!(robots, [("leader", 6665), ("left", 6666), ("right", 6667)]);
    for r in &s.robot {
        assert_eq!(r.driver.len(), 1);
        let d = &r.driver[0];
        assert_eq!(d.driver, "sim");
        let mut codes = d.device_codes().unwrap();
        codes.sort_unstable();
        assert_eq!(codes, b"glmpsvz");
        let params = d.params.clone().into_table().unwrap();
        assert_eq!(params["robot"].clone().into_string().unwrap(), r.name);
        assert!(params["world"]
            .clone()
            .into_string()
            .unwrap()
            .ends_with("arena.toml"));
    }
    // -gp, before or after -stage, numbers the ports from its value.
    for args in [
        ["-gp", "7000", "-stage", &world("arena.toml")],
        ["-stage", &world("arena.toml"), "-gp", "7000"],
    ] {
        let s = settings(&args).unwrap();
        let ports: Vec<u16> = s.robot.iter().map(|r| r.port).collect();
        assert_eq!(ports, [7000, 7001, 7002]);
    }
    // -gp 0: every robot on a free port of the system's choosing.
    let s = settings(&["-stage", &world("arena.toml"), "-gp", "0"]).unwrap();
    assert!(s.robot.iter().all(|r| r.port == 0));
}

#[test]
fn stage_flag_with_a_one_robot_world_keeps_the_configured_robot() {
    let s = settings(&["-stage", &world("maze.toml")]).unwrap();
    assert_eq!(s.robot.len(), 1);
    assert_eq!(s.robot[0].port, 6665);
    assert_eq!(s.robot[0].name, "pioneer");
    let params = s.robot[0].driver[0].params.clone().into_table().unwrap();
    assert!(params["world"]
        .clone()
        .into_string()
        .unwrap()
        .ends_with("maze.toml"));
    // Devices of other drivers stay theirs.
    let s = settings(&["-pp", "/dev/ttyS0", "-stage", &world("arena.toml")]).unwrap();
    let first: Vec<&str> = s.robot[0]
        .driver
        .iter()
        .map(|d| d.driver.as_str())
        .collect();
    assert_eq!(first, ["sim", "p2os"]);
    assert_eq!(s.robot[1].driver[0].devices.len(), 7);
}

#[test]
fn stage_flag_errors_name_the_problem() {
    /// The flag a refusal names, and why.
    fn refusal(e: SettingsError) -> (String, String) {
        match e {
            SettingsError::Flag { flag, why } => (flag, why),
            other => panic!("expected a refused flag, got {other}"),
        }
    }
    let (flag, e) = refusal(settings(&["-stage", "/no/such/world.toml"]).unwrap_err());
    assert_eq!(flag, "-stage");
    assert!(e.contains("/no/such/world.toml"), "{e}");
    let dir = std::env::temp_dir().join(format!("player-stage-flag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[world]\nwidth = 5000\nheight = 5000\ncolour = 3\n").unwrap();
    let clash = dir.join("clash.toml");
    std::fs::write(
        &clash,
        "[world]\nwidth = 5000\nheight = 5000\n\
         [[robot]]\nname = \"a\"\npose = [1000, 1000, 0]\nport = 7100\n\
         [[robot]]\nname = \"b\"\npose = [3000, 1000, 0]\nport = 7100\n",
    )
    .unwrap();
    let (flag1, e1) = refusal(settings(&["-stage", bad.to_str().unwrap()]).unwrap_err());
    let (flag2, e2) = refusal(settings(&["-stage", clash.to_str().unwrap()]).unwrap_err());
    assert_eq!((flag1.as_str(), flag2.as_str()), ("-stage", "-stage"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(e1.contains("bad.toml") && e1.contains("colour"), "{e1}");
    assert!(
        e2.contains("7100") && e2.contains("'a'") && e2.contains("'b'"),
        "{e2}"
    );
}

/// Drives at `speed` mm/s, sending the command with every round (the command watchdog),
/// until `pred` holds for a round (or the deadline passes).
fn drive_until(
    c: &mut Client,
    speed: i16,
    what: &str,
    pred: impl Fn(&player_client::Round) -> bool,
) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        c.set_speed(speed, 0).unwrap();
        let round = c.read().unwrap();
        if pred(round) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

/// Reads rounds until `pred` holds for one of them (or the deadline passes).
fn read_until(c: &mut Client, what: &str, pred: impl Fn(&player_client::Round) -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let round = c.read().unwrap();
        if pred(round) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

/// How far a laser range may be from the geometry's: six standard deviations of the shipped
/// worlds' laser noise (readings over TCP are taken at wall-clock instants, so their noise
/// is not the same from run to run).
const LASER_TOLERANCE: u16 = 30;

#[test]
fn each_robot_of_a_world_answers_on_its_own_port_and_sees_the_others() {
    let server = TestServer::start(
        settings(&["-stage", &world("arena.toml"), "-gp", "0"]).unwrap(),
        player::builtin_catalog(),
    );
    assert_eq!(server.addrs().len(), 3);
    let mut ports: Vec<u16> = server.addrs().iter().map(|a| a.port()).collect();
    ports.dedup();
    assert_eq!(ports.len(), 3, "{:?}", server.addrs());

    let mut leader = client(&server, 0);
    let mut left = client(&server, 1);
    let mut right = client(&server, 2);
    for c in [&mut leader, &mut left, &mut right] {
        c.request("lrsrpa").unwrap().check().unwrap();
    }
    // The followers see the leader 1.5 m ahead and 1.2 m to the side (range 1921 - 250).
    // The world's laser noise (5 mm, one sigma) gets LASER_TOLERANCE.
    let l = left.read().unwrap().laser.clone().unwrap();
    let r = right.read().unwrap().laser.clone().unwrap();
    assert!(
        l.ranges[103].abs_diff(1671) <= LASER_TOLERANCE,
        "{}",
        l.ranges[103]
    );
    assert!(
        r.ranges[257].abs_diff(1671) <= LASER_TOLERANCE,
        "{}",
        r.ranges[257]
    );
    // The leader's rear sonars see the followers behind it.
    let s = leader.read().unwrap().sonar.unwrap();
    assert!(s.ranges[9] < 2000 && s.ranges[14] < 2000, "{:?}", s.ranges);

    // The left follower's rightmost laser ray (index 0) meets the right follower, 2400 mm
    // to its right: 2400 - 250.
    assert!(
        l.ranges[0].abs_diff(2150) <= LASER_TOLERANCE,
        "{}",
        l.ranges[0]
    );

    // Drive only the right follower, through its own port: it moves, the others do not.
    right.set_speed(300, 0).unwrap();
    drive_until(&mut right, 300, "the right follower to move", |round| {
        round.position.as_ref().is_some_and(|p| p.x > 300)
    });
    right.set_speed(0, 0).unwrap();
    for c in [&mut leader, &mut left] {
        let p = c.read().unwrap().position.unwrap();
        assert_eq!((p.x, p.y, p.speed), (0, 0, 0));
    }
    // It has left the left follower's rightmost ray, which now reaches the south wall,
    // 6200 mm away.
    read_until(&mut left, "the right follower to leave the ray", |round| {
        round
            .laser
            .as_ref()
            .is_some_and(|l| l.ranges[0].abs_diff(6200) <= LASER_TOLERANCE)
    });
}

#[test]
fn a_served_world_writes_its_ground_truth_log() {
    let dir = std::env::temp_dir().join(format!("player-stage-truth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("truth.jsonl");
    let world = dir.join("two.toml");
    std::fs::write(
        &world,
        format!(
            "[world]\nwidth = 6000\nheight = 4000\n\
             [[robot]]\nname = \"a\"\npose = [1000, 1000, 0]\n\
             [[robot]]\nname = \"b\"\npose = [4000, 3000, 180]\n\
             [truth]\nfile = \"{}\"\nperiod = 0.1\n",
            log.display()
        ),
    )
    .unwrap();
    let server = TestServer::start(
        settings(&["-stage", world.to_str().unwrap(), "-gp", "0"]).unwrap(),
        player::builtin_catalog(),
    );
    // Drive robot a for a while so its truth changes.
    let mut a = client(&server, 0);
    a.request("pa").unwrap().check().unwrap();
    a.set_speed(200, 0).unwrap();
    drive_until(&mut a, 200, "robot a to move", |round| {
        round.position.as_ref().is_some_and(|p| p.x > 100)
    });
    drop(a);
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let records: Vec<TruthRecord> = text.lines().filter_map(TruthRecord::parse).collect();
    assert_eq!(records.len(), text.lines().count(), "{text}");
    let a: Vec<&TruthRecord> = records.iter().filter(|r| r.robot == "a").collect();
    let b: Vec<&TruthRecord> = records.iter().filter(|r| r.robot == "b").collect();
    assert_eq!(a.len(), b.len());
    assert!(a.len() >= 5, "{text}");
    // Records every 0.1 s of simulated time, from 0.
    for (k, r) in a.iter().enumerate() {
        assert!((r.time - 0.1 * k as f64).abs() < 1e-6, "{text}");
    }
    assert_eq!((a[0].x, a[0].y, a[0].heading), (1000.0, 1000.0, 0.0));
    assert!(a.last().unwrap().x > 1100.0, "{text}");
    assert!(b.iter().all(|r| (r.x, r.y) == (4000.0, 3000.0)));
    assert!((b[0].heading - 180.0).abs() < 1e-9);
}
