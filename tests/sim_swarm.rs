//! Swarms in the simulator: worlds of hundreds or thousands of robots placed by a pattern,
//! stepped on one thread or several with the same outcome, robots that never pass through
//! each other or the walls, and a large world served over TCP, one port per robot.
//!
//! The worlds run in simulated time, as fast as the CPU allows.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use player::parse_args;
use player::server::Server;
use player::settings::{Invocation, Settings};
use player_client::Client;
use player_sim::{SimWorld, WorldMap, ROBOT_RADIUS_MM};

/// Simulated seconds a swarm runs.
const RUN_S: f64 = 60.0;
/// The controllers' round (the server's default 10 Hz).
const ROUND_S: f64 = 0.1;

/// A world file of `count` robots placed by `pattern` lines, in a `size` mm square room with
/// a wall and a pillar in it.
fn swarm_world(size: f64, pattern: &str) -> WorldMap {
    let text = format!(
        "[world]\nwidth = {size}\nheight = {size}\nseed = 5\n\
         [[wall]]\nfrom = [{a}, {b}]\nto = [{c}, {b}]\n\
         [[pillar]]\ncenter = [{b}, {c}]\nradius = 400\n\
         [[swarm]]\n{pattern}\n",
        a = size * 0.1,
        b = size * 0.5,
        c = size * 0.8,
    );
    WorldMap::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// Wander and avoid: straight on, turning away from the nearer side when the front sonars
/// see something within 700 mm, backing off when something is within 350 mm.
fn wander(sonar: &[u16; 16]) -> (i16, i16) {
    let front = sonar[2..6].iter().copied().min().unwrap_or(5000);
    let left = u32::from(sonar[0]) + u32::from(sonar[1]) + u32::from(sonar[2]);
    let right = u32::from(sonar[5]) + u32::from(sonar[6]) + u32::from(sonar[7]);
    let away = if left > right { 40 } else { -40 };
    match front {
        0..=349 => (-100, away),
        350..=699 => (0, away),
        _ => (300, 0),
    }
}

/// Runs `world` for `RUN_S` with every robot driven by `wander` on its sonar at 5 Hz (a
/// slower controller than the server's 10 Hz keeps this test quick in a debug build).
/// Returns every sonar reading it drove by, round by round.
fn run_wandering(world: &mut SimWorld) -> Vec<Vec<[u16; 16]>> {
    let all: Vec<usize> = (0..world.len()).collect();
    let round = 2.0 * ROUND_S;
    let rounds = (RUN_S / round).round() as usize;
    let mut readings = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let sonars = world.sonar_many(&all);
        for (i, s) in sonars.iter().enumerate() {
            let (v, w) = wander(s);
            world.controls(i).set_velocity(v, w);
        }
        readings.push(sonars);
        world.run(round);
    }
    readings
}

#[test]
fn the_same_seed_gives_the_same_poses_and_readings_on_one_thread_or_two() {
    let map = Arc::new(swarm_world(
        30_000.0,
        "count = 260\npattern = \"random\"\nkind = \"simple\"",
    ));
    let all: Vec<usize> = (0..260).collect();
    let run = |threads: usize| {
        let mut w = SimWorld::new(map.clone());
        w.set_threads(threads);
        // Ticks of these 260 robots in parallel too (by default only from 2048).
        w.set_tick_chunk(64);
        let sonars = run_wandering(&mut w);
        let poses = (0..w.len())
            .map(|i| w.robot(i).true_pose())
            .collect::<Vec<_>>();
        // The readings at the end, in one batch (on `threads` threads) and robot by robot.
        let batch: Vec<_> = w
            .sonar_many(&all)
            .into_iter()
            .zip(w.laser_many(&all))
            .collect();
        let alone: Vec<_> = all.iter().map(|&i| (w.sonar(i), w.laser(i))).collect();
        assert!(
            batch == alone,
            "readings in a batch on {threads} threads differ"
        );
        (poses, sonars, batch)
    };
    let (one, sonars_one, end_one) = run(1);
    let (two, sonars_two, end_two) = run(2);
    assert_eq!(one.len(), 260);
    // Every sonar reading of the run and every reading at the end are the same whatever
    // the threads.
    let rounds_differ: Vec<usize> = (0..sonars_one.len())
        .filter(|&k| sonars_one[k] != sonars_two[k])
        .collect();
    assert!(
        rounds_differ.is_empty(),
        "sonar rounds that differ: {rounds_differ:?}"
    );
    assert!(end_one == end_two, "the readings at the end differ");
    assert!(
        one == two,
        "robots that differ: {:?}",
        (0..one.len())
            .filter(|&i| one[i] != two[i])
            .collect::<Vec<_>>()
    );
    // And they went somewhere.
    let start: Vec<_> = map.robots().iter().map(|r| r.pose).collect();
    let moved = one
        .iter()
        .zip(&start)
        .filter(|(a, b)| (a.0 - b.0).hypot(a.1 - b.1) > 1000.0)
        .count();
    assert!(moved > 130, "only {moved} of 260 robots got a metre away");
}

/// The deepest overlap of two robots, or of a robot and a solid of the map, mm (0 if none).
fn deepest_overlap(w: &SimWorld) -> (f64, String) {
    let mut worst = (0.0, String::new());
    let centres: Vec<(f64, f64)> = (0..w.len())
        .map(|i| {
            let (x, y, _) = w.robot(i).true_pose();
            (x, y)
        })
        .collect();
    // Robots by cell of 2 radii: only neighbouring cells can overlap.
    let cell = 2.0 * ROBOT_RADIUS_MM;
    let mut cells: std::collections::HashMap<(i64, i64), Vec<usize>> = Default::default();
    for (i, &(x, y)) in centres.iter().enumerate() {
        cells
            .entry(((x / cell).floor() as i64, (y / cell).floor() as i64))
            .or_default()
            .push(i);
    }
    for (i, &(x, y)) in centres.iter().enumerate() {
        let (cx, cy) = ((x / cell).floor() as i64, (y / cell).floor() as i64);
        for dx in -1..=1 {
            for dy in -1..=1 {
                for &j in cells.get(&(cx + dx, cy + dy)).into_iter().flatten() {
                    if j > i {
                        let d = (centres[j].0 - x).hypot(centres[j].1 - y);
                        let depth = 2.0 * ROBOT_RADIUS_MM - d;
                        if depth > worst.0 {
                            worst = (depth, format!("robots {i} and {j}"));
                        }
                    }
                }
            }
        }
        let (clear, what) = w
            .map()
            .clearance(player_sim::geom::Vec2::new(x, y), ROBOT_RADIUS_MM);
        if -clear > worst.0 {
            let owner = what.map(|(_, o)| o.to_string()).unwrap_or_default();
            worst = (-clear, format!("robot {i} and {owner}"));
        }
    }
    worst
}

#[test]
fn a_thousand_robots_in_a_crowd_never_pass_through_each_other_or_the_walls() {
    // 1000 robots 600 mm apart (100 mm between bodies) in a 24 m room with a wall and a
    // pillar, all driving at once with random turns: they jostle for 60 simulated seconds.
    let map = Arc::new(swarm_world(
        24_000.0,
        "count = 1000\npattern = \"grid\"\nspacing = 600\nregion = [[500, 500], [23500, 23500]]\nkind = \"simple\"",
    ));
    let mut w = SimWorld::new(map);
    assert_eq!(w.len(), 1000);
    // Moved on two threads (500 robots each), as a larger world would be.
    w.set_threads(2);
    w.set_tick_chunk(128);
    let rounds = (RUN_S / ROUND_S).round() as usize;
    let mut rng = 0x1234_5678_u64;
    let mut blocked = 0;
    for round in 0..rounds {
        for i in 0..w.len() {
            // A fixed pseudo-random sequence of speeds and turns (xorshift).
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let speed = (rng % 1000) as i16 - 300;
            let turn = ((rng >> 20) % 200) as i16 - 100;
            w.controls(i).set_velocity(speed, turn);
        }
        w.run(ROUND_S);
        blocked += (0..w.len()).filter(|&i| w.robot(i).stalled()).count();
        // Every robot at every round (1 um: rounding in the contact search).
        let (depth, who) = deepest_overlap(&w);
        assert!(
            depth < 1e-3,
            "at t = {:.1} s {who} overlap by {depth:.3} mm",
            (round + 1) as f64 * ROUND_S
        );
    }
    // The crowd was dense enough to matter: robots pushed against each other often.
    assert!(blocked > 1000, "only {blocked} stalls in the crowd");
}

#[test]
fn swarm_patterns_place_robots_with_their_device_sets_and_name_mistakes() {
    let map = swarm_world(
        20_000.0,
        "count = 50\nkind = \"simple\"\nname = \"s\"\nport = 9000\nregion = [[0, 0], [20000, 9000]]\n\
         [[swarm]]\ncount = 20\npattern = \"random\"\nseed = 3\nkind = \"base-laser\"\n\
         region = [[1000, 1000], [9000, 9000]]",
    );
    assert_eq!(map.robots().len(), 70);
    assert_eq!(map.robots()[0].name, "s0");
    assert_eq!(map.robots()[49].port, Some(9049));
    assert_eq!(map.robots()[0].devices.as_deref(), Some(&b"ps"[..]));
    assert_eq!(map.robots()[50].name, "robot50");
    assert_eq!(map.robots()[50].devices.as_deref(), Some(&b"pml"[..]));
    for r in &map.robots()[50..] {
        let (x, y, _) = r.pose;
        assert!((1250.0..=8750.0).contains(&x) && (1250.0..=8750.0).contains(&y));
    }
    // The same seed, the same places.
    let again = swarm_world(
        20_000.0,
        "count = 50\nkind = \"simple\"\nname = \"s\"\nport = 9000\nregion = [[0, 0], [20000, 9000]]\n\
         [[swarm]]\ncount = 20\npattern = \"random\"\nseed = 3\nkind = \"base-laser\"\n\
         region = [[1000, 1000], [9000, 9000]]",
    );
    assert_eq!(map.robots(), again.robots());
    let err = |pattern: &str| {
        WorldMap::from_toml_str(&format!(
            "[world]\nwidth = 5000\nheight = 5000\n[[swarm]]\n{pattern}\n"
        ))
        .unwrap_err()
        .to_string()
    };
    let e = err("count = 500");
    assert!(
        e.contains("swarm[0].count") && e.contains("do not fit"),
        "{e}"
    );
    let e = err("count = 5\nkind = \"tank\"");
    assert!(e.contains("swarm[0].kind") && e.contains("simple"), "{e}");
    let e = err("count = 5\npattern = \"spiral\"");
    assert!(e.contains("swarm[0].pattern"), "{e}");
    let e = err("count = 100\npattern = \"random\"");
    assert!(e.contains("too crowded"), "{e}");
    let e = err("count = 5\nport = 65533");
    assert!(e.contains("65535"), "{e}");
}

fn settings(args: &[&str]) -> Result<Settings, String> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match parse_args(&args) {
        Ok(Invocation::Run { settings, .. }) => Ok(*settings),
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e.to_string()),
    }
}

/// A server on its own thread; dropping it shuts it down.
struct Running {
    addrs: Vec<SocketAddr>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Running {
    fn start(settings: Settings) -> Running {
        let (tx, rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let system = actix_rt::System::new();
            system.block_on(async move {
                let server = Server::start(
                    &settings,
                    &player::builtin_catalog(),
                    PathBuf::from("."),
                    player::logging::discard(),
                )
                .await
                .expect("server starts");
                tx.send(server.local_addrs()).unwrap();
                let _ = stop_rx.await;
                server.shutdown().await;
            });
        });
        let addrs = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("server started in time");
        Running {
            addrs,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_client_on_the_last_port_of_a_thousand_robot_world_drives_that_robot() {
    let dir = std::env::temp_dir().join(format!("player-swarm-served-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let world = dir.join("thousand.toml");
    std::fs::write(
        &world,
        "[world]\nwidth = 40000\nheight = 40000\n\
         [[swarm]]\ncount = 1000\nspacing = 1200\nkind = \"simple\"\n",
    )
    .unwrap();
    let s = settings(&["-stage", world.to_str().unwrap(), "-gp", "0", "-web", "0"]).unwrap();
    assert_eq!(s.robot.len(), 1000);
    let server = Running::start(s);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(server.addrs.len(), 1000);
    let last = *server.addrs.last().unwrap();
    let timeout = Duration::from_secs(20);
    let mut c = Client::connect_timeout(last, timeout).unwrap();
    c.set_read_timeout(Some(timeout)).unwrap();
    c.request("pasr").unwrap().check().unwrap();
    let deadline = Instant::now() + timeout;
    loop {
        c.set_speed(300, 0).unwrap();
        let round = c.read().unwrap();
        let p = round.position.unwrap();
        if p.x > 300 {
            break;
        }
        assert!(Instant::now() < deadline, "robot 999 did not move: {p:?}");
    }
    c.set_speed(0, 0).unwrap();
    // The first robot, on its own port, has not moved.
    let mut first = Client::connect_timeout(server.addrs[0], timeout).unwrap();
    first.set_read_timeout(Some(timeout)).unwrap();
    first.request("pr").unwrap().check().unwrap();
    let p = first.read().unwrap().position.unwrap();
    assert_eq!((p.x, p.y, p.speed), (0, 0, 0));
}

#[test]
fn a_large_world_gets_one_web_viewer_and_a_clear_error_when_ports_run_out() {
    let dir = std::env::temp_dir().join(format!("player-swarm-ports-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let world = dir.join("hundred.toml");
    std::fs::write(
        &world,
        "[world]\nwidth = 20000\nheight = 20000\n[[swarm]]\ncount = 100\nkind = \"simple\"\n",
    )
    .unwrap();
    let w = world.to_str().unwrap();
    let s = settings(&["-stage", w]).unwrap();
    // The first robot's viewer as configured (the default port), every other robot
    // served there under its name.
    assert_eq!(s.robot.len(), 100);
    assert_eq!(s.web.viewer(0).web_port, None);
    assert!(!s.web.viewer(0).shared && (1..s.robot.len()).all(|i| s.web.viewer(i).shared));
    // -web moves that one port.
    let s = settings(&["-stage", w, "-web", "9000"]).unwrap();
    assert_eq!(s.web.viewer(0).web_port, Some(9000));
    assert!((1..s.robot.len()).all(|i| s.web.viewer(i).shared));
    // From port 65500, robot 36 would need 65536.
    let e = settings(&["-stage", w, "-gp", "65500"]).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        e.contains("ports run out") && e.contains("100 robots") && e.contains("robot 36"),
        "{e}"
    );
    // A small world keeps a viewer per robot.
    let arena = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds/arena.toml");
    let s = settings(&["-stage", arena.to_str().unwrap()]).unwrap();
    assert!((0..s.robot.len()).all(|i| s.web.viewer(i) == player::web::Viewer::default()));
}
