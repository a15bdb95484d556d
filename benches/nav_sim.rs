//! Navigation I's simulator goals, measured in-process, faster than real time:
//! `cargo bench --bench nav_sim` (`-- --quick` for a smoke run: fewer seeds, shorter runs).
//!
//! The world is `config/worlds/office-maze.toml` (player-sim's `SimWorld`, stepped by hand
//! in rounds of 0.1 s, its default Pioneer noise), the robot driven by
//! `player_client::avoid::LaserAvoider` on its `l` reading. The filter is what the `amcl`
//! driver runs: the map is the world's solids rasterised at 0.05 m as the `mapfile` driver
//! does with `map = "world"`, with only the walls' faces occupied (`amcl::surfaces`); the
//! parameters are the driver's defaults, checked by its own `AmclParams::check`; the
//! odometry (`P`) and the full scan (`L`) are encoded as the `sim` driver serves them and
//! decoded by the driver's own `amcl::wire`. Both are read at the same instant each round,
//! so the driver's interpolation between odometry readings is the identity here.
//!
//! 1. Tracking: 600 s of driving, the filter started at the true pose (spread 0.1 m,
//!    5 deg): RMS error of the best hypothesis against the truth after each update (goal
//!    <= 5 cm and 1.5 deg) and the largest (goal <= 20 cm).
//! 2. Global localization: 20 seeds, `initial_pose = "global"`: the simulated time from
//!    which the best hypothesis stays within 0.5 m and 15 deg of the truth (goal: within
//!    30 s in >= 19 of 20).
//! 3. Kidnap: 20 seeds started at the true pose, carried at t = 60 s to a random reachable
//!    pose (a world event, `move_to = "random"`): the time from the carry until the best
//!    hypothesis stays within 0.5 m and 15 deg (goal: within 45 s in >= 18 of 20).
//! 4. 200 carries, one every 3 s, with the filter updating throughout: no panic (goal), and
//!    how often the filter was localized in the last second before the next carry.
//!
//! Diagnosis: `-- --trace global|kidnap SEED` prints one run's every update (the error,
//! the per-beam fit at the truth and at the best hypothesis, the recovery averages, the
//! poses injected, what the scan-matched search found); `-- --set KEY=VALUE` (repeatable)
//! runs with a filter parameter other than the driver's default (the keys of
//! `player_nav::amcl::Params::set`).

use player_drivers::amcl::{self, AmclParams, InitialPose};
use player_nav::amcl::{Filter, MapModel};
use player_nav::map::Map;
use player_nav::pose::{angle_diff, Pose};
use player_proto::odometry::Odometry;
use player_sim::geom::{Shape, Vec2};
use player_sim::{SimWorld, WorldMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One round of the world, s (the sensors' 10 Hz).
const ROUND_S: f64 = 0.1;
/// The map's cell, mm (the `mapfile` driver's default for `map = "world"`).
const CELL_MM: f64 = 50.0;
/// Localized: the best hypothesis within this of the truth, m and degrees.
const NEAR_M: f64 = 0.5;
/// See [`NEAR_M`].
const NEAR_DEG: f64 = 15.0;

/// The run's sizes: full, or `--quick`.
struct Sizes {
    tracking_s: f64,
    seeds: u64,
    global_s: f64,
    kidnap_after_s: f64,
    carries: u32,
}

/// The office maze with `events` appended, written to a temporary file (its truth log
/// off: the bench reads the truth from the world).
fn maze_with(tag: &str, events: &str) -> PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds/office-maze.toml");
    let text = std::fs::read_to_string(&shipped).expect("office-maze.toml");
    let dir = std::env::temp_dir().join(format!("player-nav-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let file = dir.join(format!("{tag}.toml"));
    std::fs::write(&file, format!("{text}\n{events}")).expect("world file");
    file
}

/// The world of `file` with `seed`.
fn world_of(file: &Path, seed: u64) -> SimWorld {
    let map = WorldMap::from_file(file)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_seed(seed);
    let mut w = SimWorld::new(Arc::new(map));
    w.set_threads(1);
    w
}

/// The filter's map model of the world: its solids rasterised as the `mapfile` driver
/// does for `map = "world"`, then the driver's `surfaces`.
fn model_of(world: &SimWorld) -> MapModel {
    let map = world.map();
    let shapes: Vec<Shape> = map.solids().iter().map(|(s, _)| *s).collect();
    let grid = player_sim::raster::rasterise(
        &shapes,
        Vec2::new(0.0, 0.0),
        Vec2::new(map.width(), map.height()),
        CELL_MM,
    )
    .expect("the maze rasterises");
    let cells = amcl::surfaces(&grid.cells, grid.width, grid.height);
    let m = Map::with_cells(
        grid.width,
        grid.height,
        CELL_MM / 1000.0,
        Pose::new(grid.origin.x / 1000.0, grid.origin.y / 1000.0, 0.0),
        cells,
    )
    .expect("a usable map");
    MapModel::new(m)
}

/// The driver's settings for `seed`, started at `start` (x, y mm, heading rad) or global.
fn settings(seed: u64, start: Option<(f64, f64, f64)>) -> amcl::Settings {
    let initial_pose = Some(match start {
        Some((x, y, h)) => InitialPose::Pose([x, y, h.to_degrees(), 100.0, 100.0, 5.0]),
        None => InitialPose::Word("global".into()),
    });
    let mut s = AmclParams {
        seed: Some(seed),
        initial_pose,
        ..AmclParams::default()
    }
    .check()
    .expect("the driver's defaults check");
    // `--set key=value` (repeatable): a filter parameter other than the driver's default.
    let args: Vec<String> = std::env::args().collect();
    for w in args.windows(2).filter(|w| w[0] == "--set") {
        let (k, v) = w[1].split_once('=').expect("--set key=value");
        s.filter.set(k, v).unwrap_or_else(|e| panic!("{e}"));
    }
    s
}

/// The robot's odometry as the `sim` driver serves `P`, decoded by the driver.
fn odometry(world: &SimWorld, time: u32) -> Pose {
    let o = world.odometry(0);
    let bytes = Odometry {
        time,
        x: o.x.round() as i32,
        y: o.y.round() as i32,
        heading: Odometry::heading_of(o.heading),
        speed: o.speed.round() as i32,
        turn_rate: (o.turn_rate * 3600.0).round() as i32,
        stall: u8::from(o.stall),
    }
    .encode();
    amcl::wire::odometry(&bytes).expect("P decodes").pose
}

/// One update's outcome: simulated time (s), position error (m), heading error (deg),
/// poses recovery injected.
type Sample = (f64, f64, f64, usize);

/// A robot driven in `file`'s world with `seed` for `seconds`, the filter of `s` fed each
/// round; the error after each filter update.
fn drive(file: &Path, seed: u64, start_at_truth: bool, seconds: f64) -> Vec<Sample> {
    let mut world = world_of(file, seed);
    let model = Arc::new(model_of(&world));
    let (x, y, h) = world.robot(0).true_pose();
    let s = settings(seed, start_at_truth.then_some((x, y, h)));
    let mut filter = Filter::new(model, s.filter.clone(), s.seed, s.init);
    let mut avoider = player_client::avoid::LaserAvoider::default();
    let rounds = (seconds / ROUND_S).round() as usize;
    let mut out = Vec::new();
    for _ in 0..rounds {
        let (speed, turn) = avoider.step(&world.laser(0));
        world.controls(0).set_velocity(speed, turn);
        world.run(ROUND_S);
        let t = world.time();
        let odom = odometry(&world, (t * 1000.0).round() as u32);
        let bytes = world.scan(0).encode().expect("L encodes");
        let scan = amcl::wire::full_scan(&bytes, s.laser_max, s.laser_pose).expect("L decodes");
        if filter.update(odom, &scan) {
            let best = filter.best().expect("a hypothesis").mean;
            let (x, y, h) = world.robot(0).true_pose();
            let d = (best.x - x / 1000.0).hypot(best.y - y / 1000.0);
            let a = angle_diff(best.theta, h).abs().to_degrees();
            out.push((t, d, a, filter.stats().injected));
        }
    }
    out
}

/// The per-beam geometric mean likelihood of `scan` seen from `pose` (the filter's model).
fn fit_at(filter: &Filter, scan: &player_nav::scan::Scan, pose: &Pose) -> f64 {
    use player_nav::amcl::sensor;
    let map = filter.model().map();
    let field = player_nav::likelihood::LikelihoodField::from_distance(
        filter.model().occupied().clone(),
        filter.params().field,
    );
    let table = field.log_table(scan.max_range);
    let beams = sensor::select(scan, filter.params().max_beams, map.resolution());
    let g = sensor::sensor_in_grid(map, pose, &scan.offset);
    let l = sensor::field_log_likelihood(map, &field, &table, &beams, g);
    (l / beams.n_valid.max(1) as f64).exp()
}

/// `--trace global|kidnap SEED`: every update of one run, with the fit at the truth and
/// at the best hypothesis.
fn trace(kind: &str, seed: u64) {
    let events = if kind == "kidnap" {
        "[[event]]\nat = 60\nmove_to = \"random\"\n"
    } else {
        ""
    };
    let file = maze_with("trace", events);
    let mut world = world_of(&file, seed);
    let model = Arc::new(model_of(&world));
    let (x, y, h) = world.robot(0).true_pose();
    let s = settings(seed, (kind == "kidnap").then_some((x, y, h)));
    let mut filter = Filter::new(model, s.filter.clone(), s.seed, s.init);
    let mut avoider = player_client::avoid::LaserAvoider::default();
    let seconds = if kind == "kidnap" { 150.0 } else { 60.0 };
    for _ in 0..(seconds / ROUND_S).round() as usize {
        let (speed, turn) = avoider.step(&world.laser(0));
        world.controls(0).set_velocity(speed, turn);
        world.run(ROUND_S);
        let t = world.time();
        let odom = odometry(&world, (t * 1000.0).round() as u32);
        let bytes = world.scan(0).encode().expect("L encodes");
        let scan = amcl::wire::full_scan(&bytes, s.laser_max, s.laser_pose).expect("L decodes");
        if filter.update(odom, &scan) {
            let best = filter.best().expect("a hypothesis").clone();
            let (x, y, h) = world.robot(0).true_pose();
            let truth = Pose::new(x / 1000.0, y / 1000.0, h);
            let d = best.mean.distance(&truth);
            let a = angle_diff(best.mean.theta, h).abs().to_degrees();
            let st = filter.stats();
            let (ws, wf) = filter.fit_averages();
            println!(
                "t {t:6.1} err {d:5.2} m {a:5.1} deg | best ({:5.2},{:5.2},{:4.0}) w {:.2} nh {} | fit truth {:.3} best {:.3} | w_avg {:.3} slow {:.3} fast {:.3} | n {} inj {} beta {:.3} ess {:.0} exp {}",
                best.mean.x, best.mean.y, best.mean.theta.to_degrees(), best.weight,
                filter.hypotheses().len(),
                fit_at(&filter, &scan, &truth), fit_at(&filter, &scan, &best.mean),
                st.w_avg, ws, wf, st.particles, st.injected, st.beta, st.ess, st.expansions
            );
        }
    }
}

/// The first update's time from which every later one (from `from` s on) is localized;
/// `None` when the last one is not.
fn settled(samples: &[Sample], from: f64) -> Option<f64> {
    let mut at = None;
    for &(t, d, a, _) in samples.iter().filter(|s| s.0 > from) {
        if d <= NEAR_M && a <= NEAR_DEG {
            at.get_or_insert(t);
        } else {
            at = None;
        }
    }
    at
}

/// `f` over the seeds on every core, in seed order.
fn per_seed<T: Send>(seeds: u64, f: impl Fn(u64) -> T + Sync) -> Vec<T> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let mut out: Vec<(u64, T)> = std::thread::scope(|sc| {
        let f = &f;
        let handles: Vec<_> = (0..cores)
            .map(|c| {
                sc.spawn(move || {
                    (0..seeds)
                        .filter(|s| s % cores == c)
                        .map(|s| (s, f(s)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a seed's run"))
            .collect()
    });
    out.sort_by_key(|p| p.0);
    out.into_iter().map(|p| p.1).collect()
}

/// A run's outcome: when it settled, its last update, the poses recovery injected.
type Outcome = (Option<f64>, Option<Sample>, usize);

/// The outcome of `samples` settled from `from` s on (times after `from`).
fn outcome(samples: &[Sample], from: f64) -> Outcome {
    let injected = samples.iter().filter(|s| s.0 > from).map(|s| s.3).sum();
    (
        settled(samples, from).map(|t| t - from),
        samples.last().copied(),
        injected,
    )
}

/// Times (s) as a short list; a run never settled shows the error of its last update and
/// the poses recovery injected (`-(2.4m/170deg/0inj)`).
fn times(ts: &[Outcome]) -> String {
    ts.iter()
        .map(|(t, last, inj)| match (t, last) {
            (Some(t), _) => format!("{t:.0}"),
            (None, Some((_, d, a, _))) => format!("-({d:.1}m/{a:.0}deg/{inj}inj)"),
            (None, None) => "-".into(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--trace") {
        let kind = args.get(i + 1).map_or("global", |s| s.as_str());
        let seed = args.get(i + 2).and_then(|s| s.parse().ok()).unwrap_or(1);
        trace(kind, seed);
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let z = if quick {
        Sizes {
            tracking_s: 120.0,
            seeds: 4,
            global_s: 45.0,
            kidnap_after_s: 60.0,
            carries: 20,
        }
    } else {
        Sizes {
            tracking_s: 600.0,
            seeds: 20,
            global_s: 60.0,
            kidnap_after_s: 90.0,
            carries: 200,
        }
    };
    let began = std::time::Instant::now();
    println!("nav_sim: the amcl driver's filter in the office maze, the laser avoider driving");
    println!("{:<44} {:>16} {:>16}", "measure", "measured", "goal");

    // 1. Tracking.
    let plain = maze_with("plain", "");
    let track = drive(&plain, 1, true, z.tracking_s);
    let n = track.len().max(1) as f64;
    let rmse_cm = (track.iter().map(|s| s.1 * s.1).sum::<f64>() / n).sqrt() * 100.0;
    let rmse_deg = (track.iter().map(|s| s.2 * s.2).sum::<f64>() / n).sqrt();
    let max_cm = track.iter().map(|s| s.1).fold(0.0, f64::max) * 100.0;
    let label = format!("tracking {:.0} s, {} updates:", z.tracking_s, track.len());
    println!("{label}");
    println!("{:<44} {:>16.1} {:>16}", "  RMSE cm", rmse_cm, "<= 5");
    println!("{:<44} {:>16.2} {:>16}", "  RMSE deg", rmse_deg, "<= 1.5");
    println!("{:<44} {:>16.1} {:>16}", "  max cm", max_cm, "<= 20");

    // 2. Global localization.
    let global = per_seed(z.seeds, |seed| {
        outcome(&drive(&plain, seed, false, z.global_s), 0.0)
    });
    let within = global
        .iter()
        .filter(|t| t.0.is_some_and(|t| t <= 30.0))
        .count();
    println!(
        "{:<44} {:>16} {:>16}",
        "global: seeds localized within 30 s",
        format!("{within} of {}", z.seeds),
        ">= 19 of 20"
    );
    println!("  times (s): {}", times(&global));

    // 3. Kidnap at 60 s.
    let kidnap = maze_with("kidnap", "[[event]]\nat = 60\nmove_to = \"random\"\n");
    let recovered = per_seed(z.seeds, |seed| {
        let samples = drive(&kidnap, seed, true, 60.0 + z.kidnap_after_s);
        outcome(&samples, 60.0)
    });
    let within = recovered
        .iter()
        .filter(|t| t.0.is_some_and(|t| t <= 45.0))
        .count();
    println!(
        "{:<44} {:>16} {:>16}",
        "kidnap at 60 s: found again within 45 s",
        format!("{within} of {}", z.seeds),
        ">= 18 of 20"
    );
    println!("  times after the carry (s): {}", times(&recovered));

    // 4. Many carries.
    let every = 3.0;
    let many = maze_with(
        "carries",
        &format!(
            "[[event]]\nat = 5\nevery = {every}\ntimes = {}\nmove_to = \"random\"\n",
            z.carries
        ),
    );
    let end = 5.0 + every * f64::from(z.carries);
    let samples = drive(&many, 7, true, end);
    let found = (0..z.carries)
        .filter(|k| {
            let at = 5.0 + every * f64::from(*k);
            samples
                .iter()
                .filter(|s| s.0 > at + 2.0 && s.0 <= at + every)
                .any(|s| s.1 <= NEAR_M && s.2 <= NEAR_DEG)
        })
        .count();
    println!(
        "{:<44} {:>16} {:>16}",
        format!("{} carries every {every} s: no panic", z.carries),
        "ok",
        "no crash"
    );
    println!(
        "  localized in the last second before the next carry: {found} of {} ({} updates)",
        z.carries,
        samples.len()
    );
    println!(
        "nav_sim: {:.0} s of wall time",
        began.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(plain.parent().expect("a directory"));
}
