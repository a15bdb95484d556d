//! Start/goal pairs drawn as Nav2's planner benchmark draws them
//! (`tools/planner_benchmarking/metrics.py` in navigation2): Python's `random` seeded with
//! 33; for each pair a start, then a goal, each drawn as `row = randint(border, height -
//! border)`, `col = randint(border, width - border)` (both ends included, row first) until
//! the cell is clear, followed by one `uniform(0, 1)` for the pose's yaw; a goal must also
//! be more than `min_separation` metres from the start (positions `col * resolution`,
//! `row * resolution`). "Clear" is, in Nav2's script, a global costmap cost below 210; we
//! read it as the benchmark configuration's robot does: a free cell more than `clearance`
//! (0.28 m) from the nearest occupied cell. Nav2 drops a pair when one of its planners
//! fails and draws another; we keep every pair drawn, so ours are Nav2's first N drawn.

use super::costmap::Costmap;
use super::pyrandom::PyRandom;
use crate::map::FREE;

/// The benchmark's seed.
pub const NAV2_SEED: u64 = 33;
/// The benchmark's number of pairs.
pub const NAV2_PAIRS: usize = 100;

/// How pairs are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairRule {
    /// Cells kept off each edge of the map (Nav2's `side_buffer`, 100).
    pub border: i64,
    /// The least distance from an obstacle, metres (0.28).
    pub clearance: f64,
    /// Start and goal more than this far apart, metres (3.0).
    pub min_separation: f64,
}

impl Default for PairRule {
    fn default() -> PairRule {
        PairRule {
            border: 100,
            clearance: 0.28,
            min_separation: 3.0,
        }
    }
}

/// A start cell and a goal cell, (column, row).
pub type Pair = ((u32, u32), (u32, u32));

/// The most draws for one cell before giving up (a map with next to no clear cell).
const MAX_DRAWS: u32 = 10_000_000;

/// Draws `n` pairs on a costmap's map (its distances to obstacles telling which cells are
/// clear), with Python's generator seeded with `seed`.
pub fn draw_pairs(
    costmap: &Costmap,
    n: usize,
    seed: u64,
    rule: PairRule,
) -> Result<Vec<Pair>, String> {
    let map = costmap.map();
    let (w, h) = (map.width() as i64, map.height() as i64);
    if w - 2 * rule.border < 0 || h - 2 * rule.border < 0 {
        return Err(format!(
            "the map ({w} x {h} cells) is smaller than its {}-cell border on each side",
            rule.border
        ));
    }
    let clear = |col: i64, row: i64| {
        map.get(col, row) == Some(FREE)
            && costmap.clearance(col, row).unwrap_or(0.0) > rule.clearance
    };
    let any = (rule.border..=h - rule.border)
        .any(|r| (rule.border..=w - rule.border).any(|c| clear(c, r)));
    if !any {
        return Err(format!(
            "no free cell more than {} m from an obstacle inside the border",
            rule.clearance
        ));
    }
    let res = map.resolution();
    let mut rng = PyRandom::new(seed);
    let draw = |rng: &mut PyRandom, accept: &dyn Fn(i64, i64) -> bool| {
        for _ in 0..MAX_DRAWS {
            let row = rng.randint(rule.border, h - rule.border);
            let col = rng.randint(rule.border, w - rule.border);
            if accept(col, row) {
                let _yaw = rng.uniform(0.0, 1.0);
                return Ok((col as u32, row as u32));
            }
        }
        Err(format!("no acceptable cell in {MAX_DRAWS} draws"))
    };
    let mut pairs = Vec::with_capacity(n);
    for _ in 0..n {
        let start = draw(&mut rng, &clear)?;
        let (sx, sy) = (f64::from(start.0) * res, f64::from(start.1) * res);
        let far = |col: i64, row: i64| {
            let (dx, dy) = (col as f64 * res - sx, row as f64 * res - sy);
            clear(col, row) && (dx * dx + dy * dy).sqrt() > rule.min_separation
        };
        let goal = draw(&mut rng, &far)?;
        pairs.push((start, goal));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{Map, OCCUPIED};
    use crate::plan::costmap::CostParams;
    use crate::pose::Pose;

    /// The pairs python3 draws by metrics.py's rules on the same map, when python3 is here.
    #[test]
    fn same_pairs_as_python_on_a_synthetic_map() {
        // 300 x 260 cells of 0.05 m with a few walls.
        let mut m = Map::new(300, 260, 0.05, Pose::default(), FREE).unwrap();
        for r in 0..260 {
            m.set(150, r, OCCUPIED);
        }
        for c in 0..300 {
            m.set(c, 120, OCCUPIED);
        }
        let cm = Costmap::new(&m, CostParams::default()).unwrap();
        let pairs = draw_pairs(&cm, 20, 33, PairRule::default()).unwrap();
        assert_eq!(pairs.len(), 20);
        for &(s, g) in &pairs {
            for c in [s, g] {
                assert!(
                    (100..=200).contains(&c.0) && (100..=160).contains(&c.1),
                    "{c:?}"
                );
                assert!(cm.clearance(i64::from(c.0), i64::from(c.1)).unwrap() > 0.28);
            }
        }
        // The same rules in Python, on a map given by its walls (column 150, row 120).
        let script = "import random, math\n\
            random.seed(33)\n\
            res = 0.05\n\
            def clear(r, c):\n\
            \x20   d = min(abs(c - 150), abs(r - 120)) * res\n\
            \x20   return d > 0.28\n\
            out = []\n\
            for _ in range(20):\n\
            \x20   while True:\n\
            \x20       r = random.randint(100, 160); c = random.randint(100, 200)\n\
            \x20       if clear(r, c):\n\
            \x20           random.uniform(0, 1); break\n\
            \x20   s = (c, r)\n\
            \x20   while True:\n\
            \x20       r = random.randint(100, 160); c = random.randint(100, 200)\n\
            \x20       dist = math.sqrt((c * res - s[0] * res) ** 2 + (r * res - s[1] * res) ** 2)\n\
            \x20       if clear(r, c) and dist > 3.0:\n\
            \x20           random.uniform(0, 1); break\n\
            \x20   out.append('%d,%d,%d,%d' % (s[0], s[1], c, r))\n\
            print(' '.join(out))\n";
        let Ok(o) = std::process::Command::new("python3")
            .args(["-c", script])
            .output()
        else {
            eprintln!("python3 not available");
            return;
        };
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let ours: Vec<String> = pairs
            .iter()
            .map(|(s, g)| format!("{},{},{},{}", s.0, s.1, g.0, g.1))
            .collect();
        assert_eq!(ours.join(" "), String::from_utf8(o.stdout).unwrap().trim());
    }

    #[test]
    fn refuses_maps_without_room() {
        let m = Map::new(150, 300, 0.05, Pose::default(), FREE).unwrap();
        let cm = Costmap::new(&m, CostParams::default()).unwrap();
        assert!(draw_pairs(&cm, 1, 33, PairRule::default())
            .unwrap_err()
            .contains("border"));
        let m = Map::new(300, 300, 0.05, Pose::default(), OCCUPIED).unwrap();
        let cm = Costmap::new(&m, CostParams::default()).unwrap();
        assert!(draw_pairs(&cm, 1, 33, PairRule::default())
            .unwrap_err()
            .contains("no free cell"));
    }
}
