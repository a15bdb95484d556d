//! The manual's two sonar obstacle avoiders (Figure 3's "hello world" and Appendix C.4's
//! Java example, as ported in `player_client::manual`) and the C++ sonar avoider of 2000
//! driving the simulated Pioneer of every shipped world whose robot has sonar for 60 s of
//! simulated time: the robot must keep moving, as a real Pioneer running them does, instead
//! of wiggling or parking in place (bar C.4's own set point: met head-on, a wall 300 mm
//! ahead stops it, as its arithmetic says). The C++ avoider stops and turns on the spot toward the
//! more open side whenever something is ahead; were the sonar's noise a fresh coin per
//! reading, a robot standing still would see the two sides swap order reading by reading and
//! the avoider would flip its turn for good: it must not dither so. Their laser cousin (a
//! 2000-style client reading only `l`) drives the TurtleBot-like robot of
//! `config/worlds/turtlebot.toml` (which has no sonar) the same way, and
//! `player_client::avoid`'s laser avoider wanders the office maze for ten simulated minutes.
//! Figure 3 is not run in the office maze, where a door jamb stops it ([`HELLO_STUCK_IN`]).
//!
//! The loop is the examples' own, at the server's default 10 Hz: read the sonar, compute
//! the command, send it, let 100 ms of simulated time pass. The world runs as fast as the
//! CPU allows (a minute of simulated time takes well under a second of it in release).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use player_client::manual;
use player_sim::{SimWorld, WorldMap};

/// Simulated seconds each avoider runs.
const RUN_S: f64 = 60.0;
/// The examples' round period (the server's default 10 Hz).
const ROUND_S: f64 = 0.1;
/// No window this long ...
const WINDOW_S: f64 = 20.0;
/// ... may keep the robot within this distance of where the window started, mm.
const MIN_WINDOW_MM: f64 = 200.0;

type Step = fn(&[u16; 16]) -> (i16, i16);

/// Every world file shipped in `config/worlds/`.
fn shipped_worlds() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds");
    let mut worlds: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    worlds.sort();
    assert!(worlds.len() >= 3, "shipped worlds: {worlds:?}");
    worlds
}

/// Whether the driven robot (robot 0) of `map` has sonar (its devices, when listed, name
/// `s`).
fn has_sonar(map: &WorldMap) -> bool {
    map.robots()
        .first()
        .and_then(|r| r.devices.as_deref())
        .is_none_or(|d| d.contains(&b's'))
}

/// The seeds each sonar world's avoider runs are repeated with (the noise, hence the path,
/// differs).
const DITHER_SEEDS: u64 = 8;

/// `step` driven in every shipped world with sonar (not the TurtleBot-like robot's: the
/// laser avoider's world), once per seed in `0..DITHER_SEEDS`: (world file name, seed,
/// run), each run made as it is asked for.
fn seeded_sonar_runs(step: Step) -> impl Iterator<Item = (String, u64, Run)> {
    shipped_worlds()
        .into_iter()
        .filter(|path| has_sonar(&WorldMap::from_file(path).unwrap_or_else(|e| panic!("{e}"))))
        .flat_map(move |path| {
            let world = path.file_name().unwrap().to_string_lossy().into_owned();
            (0..DITHER_SEEDS).map(move |seed| {
                let map = WorldMap::from_file(&path)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .with_seed(seed);
                let run = Run::drive(SimWorld::new(Arc::new(map)), step);
                (world.clone(), seed, run)
            })
        })
}

/// What one run did: the true positions of the driven robot after every round, and its
/// turn commands.
struct Run {
    path: Vec<(f64, f64)>,
    turns: Vec<i16>,
    /// The command of every round, `(speed, turn)`.
    commands: Vec<(i16, i16)>,
    /// The sonar readings every round's command was computed from.
    seen: Vec<[u16; 16]>,
}

impl Run {
    /// Drives robot 0 of `world` with `step` for `RUN_S` simulated seconds.
    fn drive(mut world: SimWorld, step: Step) -> Run {
        let rounds = (RUN_S / ROUND_S).round() as usize;
        let mut path = Vec::with_capacity(rounds + 1);
        let mut turns = Vec::with_capacity(rounds);
        let mut commands = Vec::with_capacity(rounds);
        let mut seen = Vec::with_capacity(rounds);
        let (x, y, _) = world.robot(0).true_pose();
        path.push((x, y));
        for _ in 0..rounds {
            let sonar = world.sonar(0);
            let (speed, turn) = step(&sonar);
            world.robot_mut(0).set_velocity(speed, turn);
            turns.push(turn);
            commands.push((speed, turn));
            seen.push(sonar);
            world.run(ROUND_S);
            let (x, y, _) = world.robot(0).true_pose();
            path.push((x, y));
        }
        Run {
            path,
            turns,
            commands,
            seen,
        }
    }

    /// How many times in the last `DITHER_S` seconds the turn command reversed (left to
    /// right or back from one round to the next), and in how many rounds of them it turned.
    fn late_reversals(&self) -> (usize, usize) {
        let n = (DITHER_S / ROUND_S).round() as usize;
        let late = &self.turns[self.turns.len().saturating_sub(n)..];
        let reversals = late
            .windows(2)
            .filter(|w| i32::from(w[0]) * i32::from(w[1]) < 0)
            .count();
        (reversals, late.iter().filter(|&&t| t != 0).count())
    }

    /// Path length, mm.
    fn travelled(&self) -> f64 {
        self.path
            .windows(2)
            .map(|w| (w[1].0 - w[0].0).hypot(w[1].1 - w[0].1))
            .sum()
    }

    /// The least, over every `WINDOW_S` window, of how far the robot got from where the
    /// window started (mm), and the window's start time (s).
    fn worst_window(&self) -> (f64, f64) {
        self.worst_window_ending_by(self.path.len() - 1)
    }

    /// [`Run::worst_window`] over the windows that end by position `last` of the path.
    fn worst_window_ending_by(&self, last: usize) -> (f64, f64) {
        let n = (WINDOW_S / ROUND_S).round() as usize;
        let mut worst = (f64::INFINITY, 0.0);
        for start in 0..(last + 1).saturating_sub(n) {
            let (x0, y0) = self.path[start];
            let reach = self.path[start..=start + n]
                .iter()
                .map(|&(x, y)| (x - x0).hypot(y - y0))
                .fold(0.0, f64::max);
            if reach < worst.0 {
                worst = (reach, start as f64 * ROUND_S);
            }
        }
        worst
    }

    /// The first round from which to the end of the run `parked` holds of what the robot
    /// saw and commanded; the number of rounds when it never parked so.
    fn parked_from(&self, parked: fn(&[u16; 16], (i16, i16)) -> bool) -> usize {
        let mut from = self.commands.len();
        while from > 0 && parked(&self.seen[from - 1], self.commands[from - 1]) {
            from -= 1;
        }
        from
    }
}

fn check_keeps_moving(name: &str, step: Step) {
    let mut failures = Vec::new();
    for path in shipped_worlds() {
        let map = WorldMap::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
        if !has_sonar(&map) {
            // A robot without sonar (the TurtleBot-like one): the laser avoider's world.
            continue;
        }
        let world = path.file_name().unwrap().to_string_lossy().into_owned();
        if HELLO_STUCK_IN.contains(&world.as_str()) {
            continue;
        }
        let run = Run::drive(SimWorld::new(Arc::new(map)), step);
        let travelled = run.travelled();
        let (worst, at) = run.worst_window();
        println!(
            "{name} in {world}: travelled {travelled:.0} mm in {RUN_S} s; least progress in a \
             {WINDOW_S} s window {worst:.0} mm (from t = {at:.1} s)"
        );
        if travelled < 2000.0 || worst < MIN_WINDOW_MM {
            failures.push(format!(
                "{world}: travelled {travelled:.0} mm, stayed within {worst:.0} mm for \
                 {WINDOW_S} s from t = {at:.1} s"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{name} got stuck:\n{}",
        failures.join("\n")
    );
}

/// The worlds Figure 3's "hello world" is not expected to get around: in the office maze it
/// drives from the start toward the south-west room's door and meets its east jamb at an
/// angle, about (2240, 5360) heading -40 degrees. There sonar 3 reads under 500 mm, so it
/// stands, and the sums it compares (sonars 0 + 1 against 6 + 7) swap order as it turns, so
/// its turn flips every round or two and it never turns away: the example's own arithmetic,
/// not the simulator's (its laser cousin, `player_client::avoid`, is the office maze's).
const HELLO_STUCK_IN: &[&str] = &["office-maze.toml"];

#[test]
fn hello_world_keeps_moving_in_every_shipped_world() {
    check_keeps_moving("figure 3 (hello)", manual::hello_step);
}

/// Whether Appendix C.4's avoider is at its own set point: the nearest of sonars 1 to 3 and
/// of sonars 4 to 6 both within a few millimetres of 300 mm (295..=305), where its Java
/// arithmetic (`(100 * min) / 300 - 100` per wheel) commands speed and turn of at most 3
/// either way, and it commanded no more.
fn at_c4_set_point(sonar: &[u16; 16], (speed, turn): (i16, i16)) -> bool {
    let left = sonar[1..4].iter().min().copied().unwrap_or(0);
    let right = sonar[4..7].iter().min().copied().unwrap_or(0);
    let near = |d: u16| (295..=305).contains(&d);
    near(left) && near(right) && speed.abs() <= 3 && turn.abs() <= 3
}

/// Appendix C.4's avoider is a Braitenberg vehicle: its speed and turn are proportional to
/// how far its left and right front readings are past 300 mm. Met head-on (within a couple
/// of degrees), a wall brings both to 300-302 mm at once and the robot parks facing it,
/// 300 mm away, for good: that is the example's arithmetic, and a real Pioneer whose sonars
/// read the same while it stands still (as a Polaroid ranger does, bar a millimetre's
/// jitter that makes it command a few mm/s and deg/s either way) parks there too. So in
/// every shipped world, with several seeds, the robot must travel, never stay put anywhere
/// else for `WINDOW_S`, and if it comes to rest, only at that set point to the end of the
/// run ([`at_c4_set_point`]). The old sonar model (a fresh coin per reading, 10 mm at rest)
/// random-walked it out of that point; resting there is no longer counted as stuck.
#[test]
fn sonar_avoidance_keeps_moving_or_parks_at_its_set_point_in_every_shipped_world() {
    let mut failures = Vec::new();
    let mut parked = 0;
    let mut runs = 0;
    for (world, seed, run) in seeded_sonar_runs(manual::sonar_avoid_step) {
        runs += 1;
        let travelled = run.travelled();
        let from = run.parked_from(at_c4_set_point);
        // Windows that end before it parked (the creep towards the set point is the
        // last thing before it rests).
        let (worst, at) = run.worst_window_ending_by(from);
        let rest = if from < run.commands.len() {
            parked += 1;
            format!(
                "parked at its set point from t = {:.1} s",
                from as f64 * ROUND_S
            )
        } else {
            "never parked".into()
        };
        println!(
            "C.4 (sonar_avoid) in {world}, seed {seed}: travelled {travelled:.0} mm in \
             {RUN_S} s, {rest}; least progress in a {WINDOW_S} s window before that \
             {worst:.0} mm (from t = {at:.1} s)"
        );
        if travelled < 2000.0 || worst < MIN_WINDOW_MM {
            failures.push(format!(
                "{world}, seed {seed}: travelled {travelled:.0} mm, {rest}, stayed \
                 within {worst:.0} mm for {WINDOW_S} s from t = {at:.1} s"
            ));
        }
    }
    println!("C.4 parked at its set point in {parked} of {runs} runs");
    assert!(
        failures.is_empty(),
        "C.4 (sonar_avoid) got stuck:\n{}",
        failures.join("\n")
    );
}

/// The C++ sonar avoider of 2000: when any of sonars 2 to 5 reads under 500 mm it stops
/// and turns at 30 degrees/s toward the side whose sonars (0 + 1 or 6 + 7) sum larger;
/// under 300 mm it backs up; otherwise it drives ahead. Its speeds are not in the manual:
/// 200 mm/s ahead and back.
fn cpp_avoid_step(sonar: &[u16; 16]) -> (i16, i16) {
    let nearest = sonar[2..6].iter().copied().min().unwrap_or(5000);
    let left = u32::from(sonar[0]) + u32::from(sonar[1]);
    let right = u32::from(sonar[6]) + u32::from(sonar[7]);
    let turn = if left > right { 30 } else { -30 };
    match nearest {
        0..=299 => (-200, 0),
        300..=499 => (0, turn),
        _ => (200, 0),
    }
}

/// The last stretch of a run in which the C++ avoider's turns are counted, s.
const DITHER_S: f64 = 20.0;

#[test]
fn the_2000_cpp_avoider_does_not_dither_for_good_in_any_shipped_world() {
    let mut failures = Vec::new();
    for (world, seed, run) in seeded_sonar_runs(cpp_avoid_step) {
        let (reversals, turning) = run.late_reversals();
        println!(
            "C++ 2000 avoider in {world}, seed {seed}: in the last {DITHER_S} s, {turning} \
             rounds turning, {reversals} reversals of the turn"
        );
        // Dithering for good: the turn flipping in most rounds of the run's end, as
        // it does when the two sides' sums swap order reading by reading. Turning one
        // way, then the other once the view has changed, is a decision.
        if reversals * 2 > turning && reversals >= 10 {
            failures.push(format!(
                "{world}, seed {seed}: {reversals} reversals in {turning} rounds of turning"
            ));
        }
    }
    assert!(failures.is_empty(), "dithering:\n{}", failures.join("\n"));
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let room = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds/room.toml");
    let run = |seed: u64| {
        let map = WorldMap::from_file(&room).unwrap().with_seed(seed);
        assert!(!map.noise().is_none(), "world files are noisy by default");
        Run::drive(SimWorld::new(Arc::new(map)), manual::sonar_avoid_step).path
    };
    let a = run(11);
    assert_eq!(a, run(11), "seed 11 twice");
    assert_ne!(a, run(12), "seeds 11 and 12");
}

/// The sonar avoiders' laser cousin, written as a 2000 client would write it against the
/// 0.7.4a `l` device only (361 readings, index i at (i * 0.5 - 90) degrees): when anything
/// within 30 degrees of ahead (bins 120 to 240) is under 500 mm, stop and turn at 30 deg/s
/// toward the side (right half or left half of the scan) whose readings sum larger; else
/// drive forward at 200 mm/s.
fn laser_avoid_step(l: &[u16; 361]) -> (i16, i16) {
    if l[120..=240].iter().any(|&r| r < 500) {
        let right: u32 = l[..180].iter().map(|&r| u32::from(r)).sum();
        let left: u32 = l[181..].iter().map(|&r| u32::from(r)).sum();
        (0, if left > right { 30 } else { -30 })
    } else {
        (200, 0)
    }
}

#[test]
fn the_laser_avoider_keeps_moving_on_the_simulated_turtlebot() {
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds/turtlebot.toml");
    let map = WorldMap::from_file(&world).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        map.robots()[0].devices.as_deref(),
        Some(&b"pmlL"[..]),
        "the TurtleBot-like robot"
    );
    let mut world = SimWorld::new(Arc::new(map));
    let rounds = (RUN_S / ROUND_S).round() as usize;
    let mut path = Vec::with_capacity(rounds + 1);
    let mut commands = Vec::with_capacity(rounds);
    let (x, y, _) = world.robot(0).true_pose();
    path.push((x, y));
    let (mut turns, mut reversals, mut last_turn) = (0, 0, 0i16);
    for _ in 0..rounds {
        let (speed, turn) = laser_avoid_step(&world.laser(0));
        if turn != 0 {
            turns += 1;
            if last_turn != 0 && turn.signum() != last_turn.signum() {
                reversals += 1;
            }
            last_turn = turn;
        }
        world.robot_mut(0).set_velocity(speed, turn);
        commands.push(turn);
        world.run(ROUND_S);
        let (x, y, _) = world.robot(0).true_pose();
        path.push((x, y));
    }
    let run = Run {
        path,
        turns: commands,
        commands: Vec::new(),
        seen: Vec::new(),
    };
    let travelled = run.travelled();
    let (worst, at) = run.worst_window();
    let per_metre = f64::from(reversals) / (travelled / 1000.0);
    println!(
        "laser avoider in turtlebot.toml: travelled {travelled:.0} mm in {RUN_S} s; {turns} \
         turning rounds, {reversals} turn reversals ({per_metre:.2} per metre); least progress \
         in a {WINDOW_S} s window {worst:.0} mm (from t = {at:.1} s)"
    );
    assert!(travelled >= 5000.0, "travelled only {travelled:.0} mm");
    assert!(
        worst >= MIN_WINDOW_MM,
        "stayed within {worst:.0} mm for {WINDOW_S} s from t = {at:.1} s"
    );
    assert!(
        per_metre <= 1.0,
        "{reversals} turn reversals in {travelled:.0} mm: dithering"
    );
}

#[test]
fn the_simulated_turtlebot_serves_l_as_the_view_of_its_full_scan_over_tcp() {
    use player_client::{device, DataMode};
    use player_testkit::hw::{read_new_until, robot_toml, start_server};
    let world = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds/turtlebot.toml");
    let server = start_server(&robot_toml(&[(
        "sim",
        "pmlL",
        &format!("world = \"{}\"", world.display()),
    )]));
    let mut c = server.client();
    c.request("lrLr").unwrap().check().unwrap();
    c.set_data_mode(DataMode::PushNew).unwrap();
    read_new_until(&mut c, "l and L in one round", |r| {
        r.is_updated(device::FULL_SCAN) && r.is_updated(device::LASER)
    });
    let r = c.round();
    let (scan, l) = (r.scan.clone().unwrap(), r.laser.clone().unwrap());
    assert_eq!(scan.ranges.len(), 360, "one reading per degree");
    assert_eq!(scan.angle_min, -3_141_593, "the first straight behind");
    assert_eq!(scan.angle_increment, 17453, "counter-clockwise, 1 degree");
    // The room is 8 m x 6 m: every ray hits a wall within 12 m.
    assert!(scan.ranges.iter().all(|&v| v > 0 && v < 10000), "{scan:?}");
    // `l` is the 0.7.4a view of the same rays, taken at the same instant.
    assert_eq!(l.ranges, scan.laser_view(12000).ranges);
}

/// Simulated seconds the laser avoider drives the maze.
const MAZE_RUN_S: f64 = 600.0;

/// The rooms of `config/worlds/office-maze.toml` a point is in, by name (see the file's picture).
fn maze_region(x: f64, y: f64) -> &'static str {
    match (y, x) {
        (y, _) if (5000.0..6600.0).contains(&y) => "corridor",
        (y, x) if y < 5000.0 => match x {
            x if x < 4000.0 => "south-west room",
            x if x < 8000.0 => "twin A",
            x if x < 12000.0 => "twin B",
            _ => "south-east room",
        },
        (_, x) if x < 6000.0 => "hall",
        (_, x) if x < 11000.0 => "bent passage",
        _ => "north room",
    }
}

/// `player_client::avoid`'s laser avoider drives the Pioneer of `config/worlds/office-maze.toml`
/// (reading its `l`, as a client over TCP does, at the server's 10 Hz) for ten minutes of
/// simulated time, with several seeds: it must never stall for long (stuck against a wall),
/// never stay within 1 m of one place for 20 s, and get around: through the doors into most
/// of the maze's rooms. The world runs as fast as the CPU allows; over TCP the simulator
/// runs in real time only.
#[test]
fn the_laser_avoider_wanders_the_maze_for_ten_minutes() {
    use player_client::avoid::LaserAvoider;
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds/office-maze.toml");
    let mut failures = Vec::new();
    for seed in 0..4u64 {
        let map = WorldMap::from_file(&file)
            .unwrap_or_else(|e| panic!("{e}"))
            .with_seed(seed);
        let mut world = SimWorld::new(Arc::new(map));
        let mut avoider = LaserAvoider::default();
        let rounds = (MAZE_RUN_S / ROUND_S).round() as usize;
        let mut path = Vec::with_capacity(rounds + 1);
        let (x, y, _) = world.robot(0).true_pose();
        path.push((x, y));
        let (mut stalled, mut longest_stall, mut stall_run) = (0, 0, 0);
        let mut rooms = std::collections::BTreeSet::new();
        for _ in 0..rounds {
            let (speed, turn) = avoider.step(&world.laser(0));
            world.controls(0).set_velocity(speed, turn);
            world.run(ROUND_S);
            let (x, y, _) = world.robot(0).true_pose();
            path.push((x, y));
            rooms.insert(maze_region(x, y));
            if world.position(0).stall != 0 {
                stalled += 1;
                stall_run += 1;
                longest_stall = longest_stall.max(stall_run);
            } else {
                stall_run = 0;
            }
        }
        let run = Run {
            path,
            turns: Vec::new(),
            commands: Vec::new(),
            seen: Vec::new(),
        };
        let travelled = run.travelled();
        let (worst, at) = run.worst_window();
        println!(
            "laser avoider in office-maze.toml, seed {seed}: travelled {travelled:.0} mm in \
             {MAZE_RUN_S} s; stalled in {stalled} of {rounds} rounds (longest {longest_stall}); \
             least progress in a {WINDOW_S} s window {worst:.0} mm (from t = {at:.1} s); \
             {} regions: {rooms:?}",
            rooms.len()
        );
        if travelled < 60_000.0 || worst < 1000.0 || longest_stall > 10 || rooms.len() < 5 {
            failures.push(format!(
                "seed {seed}: travelled {travelled:.0} mm, within {worst:.0} mm for \
                 {WINDOW_S} s from t = {at:.1} s, stalled {longest_stall} rounds in a row, \
                 {} regions",
                rooms.len()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
