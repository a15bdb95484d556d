//! Navigation I's goals, measured: `cargo bench --bench nav` (`-- --quick` for 3 seeds a
//! log instead of 20).
//!
//! 1. The likelihood field of Nav2's 2000 x 2000 planner benchmark map (`100by100_20`):
//!    its build time (the exact distance transform and the table), median of 5 (goal
//!    <= 250 ms).
//! 2. One filter at 10 Hz scans with 2000 particles, updating on every scan (the synthetic
//!    floor, 0.5 m/s): its CPU time per update as a share of one core (goal <= 10%).
//! 3. Offline localization on every CARMEN log of `shared/nav/carmen` (as `player-nav
//!    localize carmen` runs it), 20 seeds each at the default odometry noise (alpha1-4 of
//!    0.05 per piece) and at Nav2's default alpha 0.2 per piece: the median ATE (cm, deg),
//!    the largest error of any seed, the median filter time per update, and how many seeds
//!    meet the goal (ATE <= 10 cm and 3 deg, no update over 1 m off; goal: >= 19 of 20 at
//!    the default noise), beside the published figures (IR-MCL's AMCL on real data, Beluga
//!    on synthetic data).
//!
//! 4. Planning on Nav2's planner benchmark map (`100by100_20`, metrics.py's 100 pairs drawn
//!    with seed 33): the costmap's build, A* and the full-grid wavefront (median, p95, max;
//!    wall and processor time), the worst cost ratio to an exact Dijkstra, beside Nav2's
//!    published NavFn and Smac 2D figures.
//!
//! 5. One robot planning and driving at 10 Hz: the `wavefront` driver's navigator (A*
//!    or the wavefront, VFH+ or regulated pure pursuit) driving the simulated robot to 5
//!    seeded goals in the maze world (its physics stepped by hand, outside the measure):
//!    the navigator's CPU time per step as a share of one core at 10 Hz, and with the
//!    filter of part 2 added, the whole "localizing, planning and driving" (goal <= 15%).
//!
//! The data is not in the repository: it is read from `../shared/nav` beside the checkout
//! (or `$PLAYER_NAV_DATA`); without it, parts 1 and 3 say so and are skipped.

// Unsafe code: clock_gettime(CLOCK_THREAD_CPUTIME_ID) (a Linux call).
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use player_nav::amcl::{diagonal, Filter, Init, MapModel, Params};
use player_nav::carmen::{self, mapping::BuildParams, odometry::DEFAULT_NOISE};
use player_nav::distance::DistanceField;
use player_nav::likelihood::{FieldParams, LikelihoodField};
use player_nav::localize::{self, Options, Outcome, Prepared};
use player_nav::plan::cli::{percentile, thread_cpu_ns};
use player_nav::plan::pairs::{draw_pairs, Pair, PairRule, NAV2_PAIRS, NAV2_SEED};
use player_nav::plan::{dijkstra, Algorithm, CostParams, Costmap, Planner};
use player_nav::rng::Rng;
use player_nav::{data, map, synthetic};

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

fn field_build(data: &Path) {
    let yaml = data.join("maps").join("100by100_20.yaml");
    let t0 = Instant::now();
    let m = match map::load::load_yaml(&yaml) {
        Ok(m) => m,
        Err(e) => {
            println!("likelihood field: {e}: skipped");
            return;
        }
    };
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let c = thread_cpu();
        let f = LikelihoodField::from_distance(
            Arc::new(DistanceField::to_occupied(&m)),
            FieldParams::default(),
        );
        std::hint::black_box(f.log_table(30.0));
        cpu.push((thread_cpu() - c).as_secs_f64() * 1e3);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let all: Vec<String> = times.iter().map(|t| format!("{t:.0}")).collect();
    println!(
        "likelihood field of 100by100_20 ({} x {}): {:.0} ms median of 5 [{}], {:.0} ms of CPU (goal <= 250 ms; loading the PGM: {load_ms:.0} ms)",
        m.width(),
        m.height(),
        median(times),
        all.join(" "),
        median(cpu)
    );
}

/// Part 2; returns the filter's share of one core at 10 Hz (%).
fn ten_hz_cpu(quick: bool) -> f64 {
    let map = synthetic::floor();
    let blocked = DistanceField::to_not_free(&map);
    let model = Arc::new(MapModel::new(map));
    // 0.5 m/s at 10 Hz: a scan every 5 cm.
    let truth = synthetic::tour(0.05);
    let n = if quick { 300 } else { truth.len() };
    let mut rng = Rng::new(1);
    let scans: Vec<_> = truth[..n]
        .iter()
        .map(|p| synthetic::scan(model.map(), &blocked, p, 181, 20.0, 0.01, &mut rng))
        .collect();
    let odom = carmen::odometry::noisy(&truth[..n], DEFAULT_NOISE, &mut rng);
    let mut params = Params {
        min_particles: 2000,
        max_particles: 2000,
        update_min_d: 0.0,
        update_min_a: 0.0,
        ..Params::default()
    };
    params.motion.alpha = DEFAULT_NOISE.map(|a| 2.0 * a);
    let mut f = Filter::new(
        model,
        params,
        1,
        Init::Pose(truth[0], diagonal(0.1, 0.1, 0.05)),
    );
    let c0 = thread_cpu();
    let mut updates = 0;
    let mut worst: f64 = 0.0;
    for (k, s) in scans.iter().enumerate() {
        if f.update(odom[k], s) {
            updates += 1;
            worst = worst.max(f.best().map_or(f64::MAX, |h| h.mean.distance(&truth[k])));
        }
    }
    let per = (thread_cpu() - c0).as_secs_f64() / updates.max(1) as f64;
    println!(
        "one filter, 2000 particles, an update on every scan: {:.2} ms CPU per update = {:.1}% of one core at 10 Hz (goal <= 10%); {updates} updates, worst error {:.1} cm",
        per * 1e3,
        per * 10.0 * 100.0,
        worst * 100.0
    );
    per * 10.0 * 100.0
}

/// Part 5: the navigator driving the simulated robot in the maze; `filter_share` is part
/// 2's figure (%), added for the whole loop.
fn driving(filter_share: f64) {
    use player_drivers::wavefront::navigator::{
        scan_of_view, ControllerKind, Inputs, NavParams, Navigator, Order,
    };
    use player_nav::control::Tolerance;
    use player_nav::pose::Pose;
    use player_sim::geom::{Shape, Vec2};
    use player_sim::{SimWorld, WorldMap};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/worlds/maze.toml");
    let wm = Arc::new(WorldMap::from_file(&path).expect("the maze world"));
    let shapes: Vec<Shape> = wm.solids().iter().map(|(s, _)| *s).collect();
    let grid = player_sim::raster::rasterise(
        &shapes,
        Vec2::new(0.0, 0.0),
        Vec2::new(wm.width(), wm.height()),
        50.0,
    )
    .expect("the maze rasterised");
    let m = map::Map::with_cells(grid.width, grid.height, 0.05, Pose::default(), grid.cells)
        .expect("the maze's map");
    // Free cells of the maze (its text bitmap: 0.4 m a character), at least 0.4 m from walls.
    let goals = [(8.9, 1.0), (9.0, 6.0), (6.0, 9.0), (1.0, 9.0), (3.0, 5.5)];
    for (alg, algorithm) in [
        ("astar", Algorithm::AStar),
        ("wavefront", Algorithm::Wavefront),
    ] {
        for (name, controller, speed, turn) in [
            ("vfh", ControllerKind::Vfh, 0.2, 40f64),
            ("pure_pursuit", ControllerKind::PurePursuit, 0.5, 100f64),
        ] {
            let mut nav = Navigator::new(NavParams {
                algorithm,
                cost: CostParams::default(),
                controller,
                max_speed: speed,
                max_turn: turn.to_radians(),
                tolerance: Tolerance::default(),
                replan_period: 2.0,
            });
            let mut world = SimWorld::new(wm.clone());
            let c0 = thread_cpu();
            nav.set_map(&m, 1).expect("a costmap");
            let map_ms = (thread_cpu() - c0).as_secs_f64() * 1e3;
            let (mut cpu, mut steps, mut reached) = (Duration::ZERO, 0u64, 0);
            for &(x, y) in &goals {
                nav.set_goal(Pose::new(x, y, 0.0));
                let end = world.time() + 300.0;
                while world.time() < end {
                    let (tx, ty, th) = world.robot(0).true_pose();
                    let scan = scan_of_view(&world.laser(0), Pose::default());
                    let speed = f64::from(world.position(0).speed) / 1000.0;
                    let c = thread_cpu();
                    let order = nav.step(Inputs {
                        pose: Pose::new(tx / 1000.0, ty / 1000.0, th),
                        speed,
                        scan: Some(&scan),
                        time: world.time(),
                    });
                    std::hint::black_box(nav.data().map(|d| d.encode()));
                    cpu += thread_cpu() - c;
                    steps += 1;
                    match order {
                        Order::Drive(c) => world
                            .controls(0)
                            .set_velocity(c.speed as i16, c.turn as i16),
                        Order::Stop => world.controls(0).set_velocity(0, 0),
                        Order::Silent => {}
                    }
                    for _ in 0..10 {
                        world.tick();
                    }
                    let s = nav.state();
                    if s == player_proto::nav::PlannerState::Reached {
                        reached += 1;
                        break;
                    }
                    if s == player_proto::nav::PlannerState::NoPath {
                        break;
                    }
                }
            }
            let per = cpu.as_secs_f64() / steps.max(1) as f64;
            let share = per * 10.0 * 100.0;
            println!(
                "one robot planning and driving at 10 Hz ({alg}, {name}): {:.3} ms CPU per step = {:.2}% of one core; with the filter above, localizing, planning and driving: {:.1}% (goal <= 15%); {reached}/{} goals, {} plans, {steps} steps, costmap {map_ms:.1} ms",
                per * 1e3,
                share,
                share + filter_share,
                goals.len(),
                nav.plans(),
            );
        }
    }
}

/// One row of the table: a log at one noise, over the seeds.
struct Row {
    log: String,
    scans: usize,
    noise: f64,
    outcomes: Vec<Outcome>,
    /// Each seed's filter CPU time per update, ms.
    cpu_ms: Vec<f64>,
}

fn print_row(r: &Row) {
    let ate: Vec<f64> = r.outcomes.iter().map(|o| o.ate_m * 100.0).collect();
    let deg: Vec<f64> = r.outcomes.iter().map(|o| o.ate_rad.to_degrees()).collect();
    let max = r.outcomes.iter().map(|o| o.max_m).fold(0.0, f64::max) * 100.0;
    let per = r.cpu_ms.clone();
    let pass = r.outcomes.iter().filter(|o| o.meets_goal()).count();
    println!(
        "{:<24} {:>6.2} {:>6} {:>8.1} {:>8.2} {:>8.0} {:>10.2} {:>4}/{:<3}",
        r.log,
        r.noise,
        r.scans,
        median(ate),
        median(deg),
        max,
        median(per),
        pass,
        r.outcomes.len()
    );
}

/// One run: log index, noise index, seed, its outcome, its filter CPU ms per update.
type RunResult = (usize, usize, u64, Outcome, f64);

/// Runs every seed of every (log, noise) on up to two threads.
fn localization(logs: &[PathBuf], seeds: u64) {
    let prepared: Vec<Prepared> = logs
        .iter()
        .filter_map(|p| match carmen::read(p) {
            Ok(log) => localize::prepare(log, &BuildParams::default()).ok(),
            Err(e) => {
                println!("{e}: skipped");
                None
            }
        })
        .collect();
    let noises = [DEFAULT_NOISE[0], 0.2];
    let jobs: Vec<(usize, usize, u64)> = (0..prepared.len())
        .flat_map(|l| (0..noises.len()).flat_map(move |n| (1..=seeds).map(move |s| (l, n, s))))
        .collect();
    let next = AtomicUsize::new(0);
    // Each run's filter CPU time per update (ms): on a shared machine the wall time of a
    // run says more about the neighbours than about the filter.
    let results: Mutex<Vec<RunResult>> = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(l, n, s)) = jobs.get(i) else { break };
                let opts = Options::new(s, false, [noises[n]; 4]);
                let c0 = thread_cpu();
                let o = localize::run(&prepared[l], &opts);
                let cpu_ms = (thread_cpu() - c0).as_secs_f64() * 1e3 / o.updates.max(1) as f64;
                results.lock().unwrap().push((l, n, s, o, cpu_ms));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|r| (r.0, r.1, r.2));
    println!();
    println!(
        "{:<24} {:>6} {:>6} {:>8} {:>8} {:>8} {:>10} {:>8}",
        "log", "alpha", "scans", "ATE cm", "ATE deg", "max cm", "cpu ms/upd", "passed"
    );
    for (n, _) in noises.iter().enumerate() {
        for (l, p) in prepared.iter().enumerate() {
            let mine: Vec<_> = results.iter().filter(|r| r.0 == l && r.1 == n).collect();
            print_row(&Row {
                log: p.log.name.clone(),
                scans: p.scans.len(),
                noise: noises[n],
                outcomes: mine.iter().map(|r| r.3.clone()).collect(),
                cpu_ms: mine.iter().map(|r| r.4).collect(),
            });
        }
    }
    println!(
        "{:<24} {:>6} {:>6} {:>8.1} {:>8.2}   (published: real data, Nav2 AMCL)",
        "IR-MCL's AMCL", "", "", 11.1, 4.15
    );
    println!(
        "{:<24} {:>6} {:>6} {:>8}   (published: synthetic data)",
        "Beluga AMCL", "", "", "3-7"
    );
    println!(
        "ATE: median over seeds of the RMS error of the best hypothesis after each update; max cm: the largest error of any seed; cpu ms/upd: median filter CPU time per update; passed: seeds with ATE <= 10 cm and 3 deg and no update over 1 m off (goal >= 19 of 20 at alpha 0.05)"
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = data::dir(root);
    match &data {
        Some(d) => field_build(d),
        None => println!(
            "likelihood field: no navigation data at {} (or ${}): skipped",
            root.join("../shared/nav").display(),
            data::ENV
        ),
    }
    let filter_share = ten_hz_cpu(quick);
    driving(filter_share);
    planning(data.as_deref());
    let Some(d) = data else {
        println!("localization: no navigation data: skipped");
        return;
    };
    let logs = data::carmen_logs(&d);
    if logs.is_empty() {
        println!(
            "localization: no CARMEN log in {}: skipped",
            d.join("carmen").display()
        );
        return;
    }
    let seeds = if quick { 3 } else { 20 };
    let t0 = Instant::now();
    localization(&logs, seeds);
    println!(
        "({seeds} seeds per log and noise, {:.0} s)",
        t0.elapsed().as_secs_f64()
    );
}

/// Wall-clock and processor milliseconds of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let c0 = thread_cpu_ns();
    let t0 = Instant::now();
    let out = f();
    let wall = t0.elapsed().as_secs_f64() * 1e3;
    let cpu = match (c0, thread_cpu_ns()) {
        (Some(a), Some(b)) => (b - a) as f64 / 1e6,
        _ => f64::NAN,
    };
    (out, wall, cpu)
}

/// One round over `pairs`: (found, sorted wall times, sorted processor times, each pair's
/// cost or None).
type Round = (usize, Vec<f64>, Vec<f64>, Vec<Option<(u64, f64)>>);

fn round(planner: &mut Planner, alg: Algorithm, pairs: &[Pair]) -> Round {
    let (mut wall, mut cpu, mut costs) = (Vec::new(), Vec::new(), Vec::new());
    for &(s, g) in pairs {
        let (plan, w, c) = timed(|| planner.plan(alg, s, g));
        wall.push(w);
        cpu.push(c);
        costs.push(plan.ok().map(|p| (p.cost, p.length(planner.costmap()))));
    }
    let found = costs.iter().filter(|c| c.is_some()).count();
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    (found, wall, cpu, costs)
}

/// The planning section: costmap build, A* over Nav2's 100 pairs (3 rounds), the
/// wavefront over the same pairs (2 rounds: a full-grid search each), the worst cost
/// ratio of each planner's paths to the exact Dijkstra, and the pair whose path is nearest
/// 75 m.
fn planning(data: Option<&Path>) {
    println!("== Planning: Nav2's planner benchmark map, metrics.py's pairs (seed 33) ==");
    let Some(dir) = data else {
        println!("skipped: no ../shared/nav beside the checkout (or set PLAYER_NAV_DATA)");
        return;
    };
    let yaml = dir.join("maps/100by100_20.yaml");
    let map = match map::load::load_yaml(&yaml) {
        Ok(m) => m,
        Err(e) => {
            println!("skipped: {e}");
            return;
        }
    };
    let params = CostParams::default();
    let mut builds = Vec::new();
    let mut costmap = None;
    for _ in 0..5 {
        let (cm, wall, cpu) = timed(|| Costmap::new(&map, params).unwrap());
        builds.push((wall, cpu));
        costmap = Some(cm);
    }
    let costmap = costmap.unwrap();
    let build_wall = median(builds.iter().map(|b| b.0).collect());
    let build_cpu = median(builds.iter().map(|b| b.1).collect());
    let pairs = draw_pairs(&costmap, NAV2_PAIRS, NAV2_SEED, PairRule::default()).unwrap();
    let mut planner = Planner::new(costmap);

    println!(
        "map 100by100_20: 2000 x 2000 cells of 0.05 m; radius {} m, safety_dist {} m, max_radius {} m",
        params.radius, params.safety_dist, params.max_radius
    );
    println!(
        "distance transform + inflation: median of 5 {build_wall:.1} ms wall, {build_cpu:.1} ms processor (goal <= 100 ms)"
    );
    println!(
        "{:<10} {:>5} {:>5} {:>10} {:>8} {:>8} {:>24}",
        "planner", "pairs", "found", "median_ms", "p95_ms", "max_ms", "processor med/p95/max"
    );
    let mut astar_costs = Vec::new();
    let mut wavefront_costs = Vec::new();
    for (alg, name, n, rounds) in [
        (Algorithm::AStar, "astar", pairs.len(), 3),
        (Algorithm::Wavefront, "wavefront", pairs.len(), 2),
    ] {
        let mut stats = Vec::new();
        let mut found = 0;
        for _ in 0..rounds {
            let (f, wall, cpu, costs) = round(&mut planner, alg, &pairs[..n]);
            found = f;
            stats.push([
                percentile(&wall, 0.5),
                percentile(&wall, 0.95),
                *wall.last().unwrap(),
                percentile(&cpu, 0.5),
                percentile(&cpu, 0.95),
                *cpu.last().unwrap(),
            ]);
            if alg == Algorithm::AStar {
                astar_costs = costs;
            } else {
                wavefront_costs = costs;
            }
        }
        // Each figure: the median over the rounds.
        let m: Vec<f64> = (0..6)
            .map(|k| median(stats.iter().map(|s| s[k]).collect()))
            .collect();
        println!(
            "{name:<10} {n:>5} {found:>5} {:>10.2} {:>8.2} {:>8.2} {:>8.2} /{:>7.2} /{:>7.2}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        );
    }
    println!("goals: astar found 100/100, median <= 10, p95 <= 75, max <= 150 ms; wavefront median <= 300, max <= 400 ms");
    // Exactness: every path of both planners against the independent Dijkstra.
    let mut worst = [1.0f64; 2];
    for (k, &(s, g)) in pairs.iter().enumerate() {
        let exact = dijkstra::least_cost(planner.costmap(), s, g);
        for (w, costs) in worst.iter_mut().zip([&astar_costs, &wavefront_costs]) {
            match (costs[k], exact) {
                (Some((cost, _)), Some(best)) => *w = w.max(cost as f64 / best as f64),
                (None, None) => {}
                _ => *w = f64::INFINITY,
            }
        }
    }
    println!(
        "cost_ratio (worst path cost / exact Dijkstra's): astar {:.6}, wavefront {:.6}",
        worst[0], worst[1]
    );
    // The pair whose path is nearest 75 m, against Nav2's published figures.
    if let Some((k, len)) = astar_costs
        .iter()
        .enumerate()
        .filter_map(|(k, c)| c.map(|(_, len)| (k, len)))
        .min_by(|a, b| (a.1 - 75.0).abs().total_cmp(&(b.1 - 75.0).abs()))
    {
        let (s, g) = pairs[k];
        let mut time = |alg| {
            median(
                (0..3)
                    .map(|_| timed(|| planner.plan(alg, s, g)).1)
                    .collect(),
            )
        };
        let (a, w) = (time(Algorithm::AStar), time(Algorithm::Wavefront));
        println!(
            "a {len:.1} m path (pair {k}): astar {a:.1} ms, wavefront {w:.1} ms; Nav2 published for a 75 m path: NavFn 146 ms, Smac 2D 243 ms"
        );
    }
}
