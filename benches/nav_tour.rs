//! Navigation II's maze goal, measured: `cargo bench --bench nav_tour` (options: `--goals
//! N`, default 20; `--seed S`, default 7; `--controller vfh|pure_pursuit`, default both).
//!
//! The server in-process over real TCP (`tests/common/tour.rs`): the simulated robot in the
//! maze with the Pioneer's noise, `mapfile`, `amcl` and `wavefront` with the pose from the
//! localizer's `H`, never the truth. A TCP client sends N seeded reachable goals one after
//! the other on `G` and reads `G`, `p` (stall) and `m` (bumpers); the truth and the
//! simulated time come from the world's `[truth]` log. The simulator runs in real time (no
//! faster-than-real-time setting), so both controllers tour at once, each on its own server
//! and world, and the bench takes as long as the slower tour (about 15 minutes with VFH+
//! at Player's 200 mm/s).
//!
//! Per goal: reached (the planner reads reached and the truth is within [250 mm, 15 deg]),
//! the simulated time against the shortest path's at the speed limits (its length at the
//! top speed plus the turning in place it needs at the top turn rate; the goal: at most
//! 2x), collisions. Per controller: the goal's figures (>= 19 of 20 reached, 0 collisions,
//! each within 2x). A goal is given up after 3x its shortest time plus 20 s.

mod common;

use common::tour;

use std::time::Instant;
use tour::{Outcome, Tour};

/// A controller, its default top speed (m/s) and top turn rate (deg/s).
const CONTROLLERS: [(&str, f64, f64); 2] = [("vfh", 0.2, 40.0), ("pure_pursuit", 0.5, 100.0)];

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// One controller's tour: its outcomes and the wall time.
fn run(
    controller: &str,
    max_speed: f64,
    max_turn: f64,
    n: usize,
    seed: u64,
) -> (Vec<Outcome>, f64) {
    let goals = tour::goals(&tour::maze_map(), n, seed, f64::INFINITY);
    let t0 = Instant::now();
    let mut t = Tour::start("bench", controller);
    let mut out = Vec::new();
    for (k, g) in goals.into_iter().enumerate() {
        let o = t.go(g, |len| 3.0 * len / max_speed + 20.0);
        eprintln!(
            "{controller} goal {}: ({:.2}, {:.2}) state {} in {:.1} s (shortest {:.1} s), off {:.0} mm {:.1} deg, {} collisions",
            k + 1,
            g.x,
            g.y,
            o.state,
            o.seconds,
            o.shortest_time(max_speed, max_turn),
            o.error.0,
            o.error.1,
            o.collisions
        );
        for n in &o.notices {
            eprintln!("{controller} goal {}: notice: {n}", k + 1);
        }
        out.push(o);
    }
    (out, t0.elapsed().as_secs_f64())
}

fn print(controller: &str, max_speed: f64, max_turn: f64, outcomes: &[Outcome], wall: f64) {
    println!(
        "\n{controller} (max_speed {:.0} mm/s, amcl in the loop):",
        max_speed * 1000.0
    );
    println!(
        "{:>4} {:>14} {:>9} {:>7} {:>9} {:>6} {:>8} {:>8} {:>5}",
        "goal",
        "x, y (m)",
        "shortest",
        "state",
        "time (s)",
        "ratio",
        "off (mm)",
        "off (deg)",
        "coll"
    );
    for (k, o) in outcomes.iter().enumerate() {
        let ideal = o.shortest_time(max_speed, max_turn);
        println!(
            "{:>4} {:>14} {:>8.1}m {:>7} {:>9.1} {:>6.2} {:>8.0} {:>8.1} {:>5}",
            k + 1,
            format!("{:.2}, {:.2}", o.goal.x, o.goal.y),
            o.shortest,
            if o.reached() {
                "reached".to_string()
            } else {
                format!("s{}", o.state)
            },
            o.seconds,
            o.seconds / ideal,
            o.error.0,
            o.error.1,
            o.collisions
        );
    }
    let n = outcomes.len();
    let reached = outcomes.iter().filter(|o| o.reached()).count();
    let in_time = outcomes
        .iter()
        .filter(|o| o.reached() && o.seconds <= 2.0 * o.shortest_time(max_speed, max_turn))
        .count();
    let collisions: usize = outcomes.iter().map(|o| o.collisions).sum();
    let worst = outcomes
        .iter()
        .filter(|o| o.reached())
        .map(|o| o.seconds / o.shortest_time(max_speed, max_turn))
        .fold(0.0, f64::max);
    println!(
        "{controller}: {reached}/{n} reached (goal >= {}), {in_time}/{n} within 2x the shortest path's time (worst {worst:.2}x), {collisions} collision readings (goal 0); {wall:.0} s wall",
        n.saturating_sub(n / 20),
    );
}

/// The processor time this process has used, its ended threads' too (`/proc/self/stat`'s
/// user and system ticks, 100 a second).
fn process_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are the 14th and 15th fields; `after` starts at the 3rd.
    (tick(11) + tick(12)) / 100.0
}

fn main() {
    let n: usize = arg("--goals").and_then(|s| s.parse().ok()).unwrap_or(20);
    let seed: u64 = arg("--seed").and_then(|s| s.parse().ok()).unwrap_or(7);
    let only = arg("--controller");
    let chosen: Vec<(&str, f64, f64)> = CONTROLLERS
        .iter()
        .copied()
        .filter(|(c, _, _)| only.as_deref().is_none_or(|o| o == *c))
        .collect();
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    let runs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = chosen
            .iter()
            .map(|&(c, v, w)| s.spawn(move || (c, v, w, run(c, v, w.to_radians(), n, seed))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let cpu = process_cpu() - cpu0;
    let wall = t0.elapsed().as_secs_f64();
    for (c, v, turn, (outcomes, w)) in &runs {
        print(c, *v, turn.to_radians(), outcomes, *w);
    }
    println!(
        "\nthe whole process (robots: {}, each sim + mapfile + amcl + wavefront; the clients): {:.1} s CPU over {wall:.0} s wall = {:.1}% of one core per robot",
        runs.len(),
        cpu,
        cpu / wall / runs.len().max(1) as f64 * 100.0
    );
}
