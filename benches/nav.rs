//! Navigation on public data (`cargo bench --bench nav`): the planners on Nav2's planner
//! benchmark map, beside Nav2's published figures. The data are not part of the repository:
//! ../shared/nav beside the checkout (or `PLAYER_NAV_DATA`); without them the bench says
//! so and skips.
//!
//! Sections: **Planning** (this file's [`planning`]); the localization section sits beside
//! it.

use std::time::Instant;

use player_nav::map::load::load_yaml;
use player_nav::plan::cli::{percentile, thread_cpu_ns};
use player_nav::plan::pairs::{draw_pairs, Pair, PairRule, NAV2_PAIRS, NAV2_SEED};
use player_nav::plan::{dijkstra, Algorithm, CostParams, Costmap, Planner};

fn main() {
    planning();
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
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
fn planning() {
    println!("== Planning: Nav2's planner benchmark map, metrics.py's pairs (seed 33) ==");
    let Some(dir) = player_nav::plan::shared_data_dir() else {
        println!("skipped: no ../shared/nav beside the checkout (or set PLAYER_NAV_DATA)");
        return;
    };
    let yaml = dir.join("maps/100by100_20.yaml");
    let map = match load_yaml(&yaml) {
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
