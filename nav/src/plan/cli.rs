//! `player-nav plan`: plans between Nav2's benchmark start/goal pairs on a map and reports
//! the planning times and how far the path costs are from an exact Dijkstra's.
//!
//! ```text
//! player-nav plan MAP.yaml [--pairs N] [--seed S] [--algorithm astar|wavefront]
//!                          [--radius M] [--safety-dist M] [--max-radius M]
//! ```
//!
//! The last line printed is exactly `plan: map=NAME pairs=N found=F median_ms=X p95_ms=Y
//! max_ms=Z cost_ratio=R` (NAME the YAML's file stem; times per plan, the search and the
//! path's extraction and waypoints, over every pair; R the worst ratio of a found path's
//! cost to [`super::dijkstra::least_cost`]'s, `none` when no path was found).

use std::path::Path;
use std::time::Instant;

use super::costmap::{CostParams, Costmap};
use super::dijkstra;
use super::pairs::{draw_pairs, PairRule, NAV2_PAIRS, NAV2_SEED};
use super::search::{Algorithm, Planner};
use crate::map::load::load_yaml;

/// Why the command failed: bad arguments (exit status 2) or a failure running it (1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// The arguments are wrong.
    Usage(String),
    /// The map could not be read, or the pairs not drawn.
    Run(String),
}

/// The command's usage line.
pub const USAGE: &str = "player-nav plan MAP.yaml [--pairs N] [--seed S] \
[--algorithm astar|wavefront] [--radius M] [--safety-dist M] [--max-radius M]";

/// The parsed arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The map's YAML description.
    pub map: String,
    /// Number of pairs (default 100).
    pub pairs: usize,
    /// Python's seed (default 33).
    pub seed: u64,
    /// The planner (default A*).
    pub algorithm: Algorithm,
    /// The costmap's parameters (`--radius` default 0.25 m).
    pub cost: CostParams,
}

fn value<T: std::str::FromStr>(args: &[String], i: usize, flag: &str) -> Result<T, CliError> {
    let v = args
        .get(i + 1)
        .ok_or_else(|| CliError::Usage(format!("{flag} needs a value")))?;
    v.parse()
        .map_err(|_| CliError::Usage(format!("{flag} {v}: not a valid value")))
}

/// Parses the arguments after `plan`.
pub fn parse(args: &[String]) -> Result<Options, CliError> {
    let mut map = None;
    let mut o = Options {
        map: String::new(),
        pairs: NAV2_PAIRS,
        seed: NAV2_SEED,
        algorithm: Algorithm::AStar,
        cost: CostParams::default(),
    };
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        match flag {
            "--pairs" => o.pairs = value(args, i, flag)?,
            "--seed" => o.seed = value(args, i, flag)?,
            "--algorithm" => {
                let v: String = value(args, i, flag)?;
                o.algorithm = v.parse().map_err(CliError::Usage)?;
            }
            "--radius" => o.cost.radius = value(args, i, flag)?,
            "--safety-dist" => o.cost.safety_dist = value(args, i, flag)?,
            "--max-radius" => o.cost.max_radius = value(args, i, flag)?,
            _ if flag.starts_with('-') => {
                return Err(CliError::Usage(format!("unknown option {flag}")))
            }
            _ if map.is_none() => {
                map = Some(flag.to_string());
                i += 1;
                continue;
            }
            _ => return Err(CliError::Usage(format!("unexpected argument {flag}"))),
        }
        i += 2;
    }
    o.map = map.ok_or_else(|| CliError::Usage("plan: which map (MAP.yaml)?".into()))?;
    if o.pairs == 0 || o.pairs > 100_000 {
        return Err(CliError::Usage("--pairs: between 1 and 100000".into()));
    }
    o.cost.check().map_err(CliError::Usage)?;
    Ok(o)
}

/// The figures of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The map's name (the YAML's file stem).
    pub name: String,
    /// Pairs planned.
    pub pairs: usize,
    /// Pairs with a path.
    pub found: usize,
    /// Planning times per pair, milliseconds, sorted.
    pub times_ms: Vec<f64>,
    /// The worst ratio of a path's cost to the exact least cost (`None` if none found).
    pub cost_ratio: Option<f64>,
    /// Distance transform and inflation of the map, milliseconds.
    pub costmap_ms: f64,
}

impl Report {
    /// The median planning time.
    pub fn median_ms(&self) -> f64 {
        percentile(&self.times_ms, 0.5)
    }

    /// The 95th percentile (nearest rank).
    pub fn p95_ms(&self) -> f64 {
        percentile(&self.times_ms, 0.95)
    }

    /// The longest planning time.
    pub fn max_ms(&self) -> f64 {
        self.times_ms.last().copied().unwrap_or(0.0)
    }

    /// The command's last line.
    pub fn line(&self) -> String {
        let ratio = self
            .cost_ratio
            .map_or("none".to_string(), |r| format!("{r:.6}"));
        format!(
            "plan: map={} pairs={} found={} median_ms={:.2} p95_ms={:.2} max_ms={:.2} cost_ratio={}",
            self.name,
            self.pairs,
            self.found,
            self.median_ms(),
            self.p95_ms(),
            self.max_ms(),
            ratio
        )
    }
}

/// The `q` quantile of sorted values by nearest rank (the median of an even count is the
/// mean of the two middle values).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    if q == 0.5 && n % 2 == 0 {
        return (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
    }
    let rank = (q * n as f64).ceil().max(1.0) as usize;
    sorted[rank.min(n) - 1]
}

/// This thread's processor time so far, nanoseconds (the POSIX thread CPU clock; `None`
/// where there is none): on a shared machine the wall-clock times include waiting for a
/// core, so the report gives both. (Linux's `/proc/thread-self/schedstat` would do without
/// `libc`, but it is brought up to date only at scheduler ticks: 4 ms steps, as long as a
/// whole A* plan.)
// Unsafe code: clock_gettime(CLOCK_THREAD_CPUTIME_ID) (a Linux call).
#[allow(unsafe_code)]
pub fn thread_cpu_ns() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call's duration, and the
        // clock id is a constant every POSIX system with threads knows.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if rc != 0 {
            return None;
        }
        Some(u64::try_from(ts.tv_sec).ok()? * 1_000_000_000 + u64::try_from(ts.tv_nsec).ok()?)
    }
    #[cfg(not(unix))]
    None
}

/// Runs the benchmark with `o`, printing progress lines through `say`.
pub fn run_with(o: &Options, say: &mut dyn FnMut(&str)) -> Result<Report, CliError> {
    let path = Path::new(&o.map);
    let name = path
        .file_stem()
        .map_or_else(|| o.map.clone(), |s| s.to_string_lossy().into_owned());
    let map = load_yaml(path).map_err(|e| CliError::Run(e.to_string()))?;
    let (free, unknown, occupied) = map.counts();
    say(&format!(
        "map: {name}: {} x {} cells of {} m ({free} free, {unknown} unknown, {occupied} occupied)",
        map.width(),
        map.height(),
        map.resolution()
    ));
    let t0 = Instant::now();
    let costmap = Costmap::new(&map, o.cost).map_err(CliError::Usage)?;
    let costmap_ms = t0.elapsed().as_secs_f64() * 1e3;
    say(&format!(
        "costmap: radius {} m, safety_dist {} m, max_radius {} m: distance transform and inflation {costmap_ms:.1} ms",
        o.cost.radius, o.cost.safety_dist, o.cost.max_radius
    ));
    let pairs =
        draw_pairs(&costmap, o.pairs, o.seed, PairRule::default()).map_err(CliError::Run)?;
    let mut planner = Planner::new(costmap);
    let mut times = Vec::with_capacity(pairs.len());
    let mut cpu = Vec::with_capacity(pairs.len());
    let mut found = 0;
    let mut worst: Option<f64> = None;
    for (k, &(start, goal)) in pairs.iter().enumerate() {
        let c = thread_cpu_ns();
        let t = Instant::now();
        let plan = planner.plan(o.algorithm, start, goal);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        if let (Some(c0), Some(c1)) = (c, thread_cpu_ns()) {
            cpu.push((c1 - c0) as f64 / 1e6);
        }
        let exact = dijkstra::least_cost(planner.costmap(), start, goal);
        match (plan, exact) {
            (Ok(plan), Some(best)) => {
                found += 1;
                let cost = planner.costmap().path_cost(&plan.cells);
                if cost != Some(plan.cost) {
                    return Err(CliError::Run(format!(
                        "pair {k}: the path's cost {cost:?} is not the planner's {}",
                        plan.cost
                    )));
                }
                let ratio = plan.cost as f64 / best.max(1) as f64;
                worst = Some(worst.map_or(ratio, |w: f64| w.max(ratio)));
            }
            (Ok(_), None) => {
                return Err(CliError::Run(format!(
                    "pair {k}: a path where the exact Dijkstra finds none"
                )))
            }
            (Err(e), Some(_)) => {
                say(&format!(
                    "pair {k}: {start:?} -> {goal:?}: {e}, but Dijkstra finds a path"
                ));
                worst = Some(f64::INFINITY);
            }
            (Err(e), None) => say(&format!("pair {k}: {start:?} -> {goal:?}: {e}")),
        }
    }
    times.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    if cpu.len() == times.len() {
        say(&format!(
            "processor time per plan (without waiting for a core): median {:.2} ms, p95 {:.2} ms, max {:.2} ms",
            percentile(&cpu, 0.5),
            percentile(&cpu, 0.95),
            cpu.last().copied().unwrap_or(0.0)
        ));
    }
    Ok(Report {
        name,
        pairs: pairs.len(),
        found,
        times_ms: times,
        cost_ratio: worst,
        costmap_ms,
    })
}

/// `player-nav plan ARGS...`: prints progress and, last, the summary line.
pub fn run(args: &[String]) -> Result<(), CliError> {
    let o = parse(args)?;
    let report = run_with(&o, &mut |line| println!("{line}"))?;
    println!("{}", report.line());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_defaults_and_flags() {
        let o = parse(&args("m.yaml")).unwrap();
        assert_eq!((o.pairs, o.seed, o.algorithm), (100, 33, Algorithm::AStar));
        assert_eq!(o.cost, CostParams::default());
        let o = parse(&args(
            "--pairs 7 m.yaml --seed 5 --algorithm wavefront --radius 0.3",
        ))
        .unwrap();
        assert_eq!((o.pairs, o.seed, o.algorithm), (7, 5, Algorithm::Wavefront));
        assert_eq!((o.map.as_str(), o.cost.radius), ("m.yaml", 0.3));
        for bad in [
            "",
            "m.yaml --pairs",
            "m.yaml --pairs 0",
            "m.yaml --algorithm dstar",
            "m.yaml --radius -1",
            "m.yaml --bogus 1",
            "a.yaml b.yaml",
        ] {
            assert!(
                matches!(parse(&args(bad)), Err(CliError::Usage(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.95), 95.0);
        assert_eq!(percentile(&v, 0.5), 50.5);
        assert_eq!(percentile(&[3.0], 0.95), 3.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
