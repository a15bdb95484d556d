//! The two planners over a [`Costmap`]: A* from the start to the goal, and Player's
//! wavefront (a full-grid Dijkstra from the goal, after which the path from any start is
//! read off without searching again).
//!
//! Both work on one flat array of 16-byte nodes over the grid padded with a lethal border
//! (so no neighbour needs a bounds check): the cell's weight, its cost so far and a mark
//! holding the search's generation and the direction the cell was reached from. A search
//! starts by incrementing the generation instead of clearing the array: a node whose mark
//! is of an older generation is unvisited. The open list is a binary heap of packed keys
//! ([`super::heap`]) with lazy deletion (an entry whose cost is above its node's is
//! stale); costs are integers ([`super::costmap`]), so both planners return paths of
//! exactly the least cost, which the tests check against independent Dijkstras.

use super::costmap::{Costmap, DIAG, LETHAL, ORTHO, W_FREE};
use super::heap::{key, unpack, Heap};
use super::path::{self, Plan};

/// Which planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// A* with the octile heuristic, from the start, stopping at the goal.
    AStar,
    /// Player's: every cell's cost to the goal, then the path from the start.
    Wavefront,
}

impl std::str::FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Algorithm, String> {
        match s {
            "astar" => Ok(Algorithm::AStar),
            "wavefront" => Ok(Algorithm::Wavefront),
            _ => Err(format!(
                "algorithm '{s}': expected \"astar\" or \"wavefront\""
            )),
        }
    }
}

/// Why there is no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The start or goal is off the map.
    #[error("the {0} is off the map")]
    OffMap(&'static str),
    /// The start or goal is in a lethal cell (an obstacle, unknown, or too near one).
    #[error("the {0} is in an obstacle or within the robot's radius of one")]
    Blocked(&'static str),
    /// No path joins them.
    #[error("no path from the start to the goal")]
    NoPath,
}

/// One grid cell's search state.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(16))]
struct Node {
    /// Cost from the search's root.
    g: u64,
    /// `generation << 4 | direction` (direction 0-7 of the step that reached the node, 8
    /// for the root).
    mark: u32,
    /// The costmap's weight ([`LETHAL`] for the padding border too).
    weight: u16,
}

const ROOT: u32 = 8;

/// For each diagonal step (4-7), the two straight steps beside it.
const SIDES: [(usize, usize); 4] = [(0, 1), (2, 1), (2, 3), (0, 3)];

/// The heuristic as the heap's tie-breaker (saturated: only the order of ties depends on
/// it; the cost is recomputed from the cell when the entry is taken).
#[inline]
fn tie(h: u64) -> u32 {
    h.min(u64::from(u32::MAX)) as u32
}
const MAX_GENERATION: u32 = (1 << 28) - 1;

/// Steps (dx, dy): four straight ones, then four diagonal ones.
const STEPS: [(i32, i32); 8] = [
    (1, 0),
    (0, 1),
    (-1, 0),
    (0, -1),
    (1, 1),
    (-1, 1),
    (-1, -1),
    (1, -1),
];

/// Asks the processor to bring `node`'s cache line in (a hint; nothing on other targets).
#[inline(always)]
fn prefetch(node: &Node) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache; it reads nothing and cannot fault, and the
    // pointer comes from a live reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((node as *const Node).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = node;
}

/// A planner with its search arrays, reused plan after plan.
pub struct Planner {
    costmap: Costmap,
    /// Padded width and height.
    pw: usize,
    ph: usize,
    nodes: Vec<Node>,
    offsets: [isize; 8],
    generation: u32,
    heap: Heap,
    /// The goal (padded index) and generation of the last complete wavefront.
    field: Option<(usize, u32)>,
    expanded: usize,
}

impl Planner {
    /// A planner over `costmap`.
    pub fn new(costmap: Costmap) -> Planner {
        let (w, h) = (costmap.width(), costmap.height());
        let (pw, ph) = (w + 2, h + 2);
        let mut nodes = vec![Node::default(); pw * ph];
        for (row, chunk) in costmap.weights().chunks(w).enumerate() {
            let base = (row + 1) * pw + 1;
            for (n, &wt) in nodes[base..base + w].iter_mut().zip(chunk) {
                n.weight = wt;
            }
        }
        let offsets = STEPS.map(|(dx, dy)| dx as isize + dy as isize * pw as isize);
        Planner {
            costmap,
            pw,
            ph,
            nodes,
            offsets,
            generation: 0,
            heap: Heap::new(),
            field: None,
            expanded: 0,
        }
    }

    /// The costmap it plans on.
    pub fn costmap(&self) -> &Costmap {
        &self.costmap
    }

    /// Cells expanded by the last search.
    pub fn expanded(&self) -> usize {
        self.expanded
    }

    fn padded(&self, cell: (u32, u32)) -> usize {
        (cell.1 as usize + 1) * self.pw + cell.0 as usize + 1
    }

    fn unpadded(&self, i: usize) -> (u32, u32) {
        ((i % self.pw - 1) as u32, (i / self.pw - 1) as u32)
    }

    fn check(&self, cell: (u32, u32), what: &'static str) -> Result<usize, PlanError> {
        if cell.0 as usize >= self.costmap.width() || cell.1 as usize >= self.costmap.height() {
            return Err(PlanError::OffMap(what));
        }
        let i = self.padded(cell);
        if self.nodes[i].weight == LETHAL {
            return Err(PlanError::Blocked(what));
        }
        Ok(i)
    }

    fn next_generation(&mut self) -> u32 {
        if self.generation >= MAX_GENERATION {
            for n in &mut self.nodes {
                n.mark = 0;
            }
            self.generation = 0;
        }
        self.generation += 1;
        self.field = None;
        self.heap.clear();
        self.expanded = 0;
        self.generation
    }

    /// Plans from cell `start` to cell `goal` with `algorithm`: the cell path, its cost
    /// and its waypoints ([`super::path`]).
    pub fn plan(
        &mut self,
        algorithm: Algorithm,
        start: (u32, u32),
        goal: (u32, u32),
    ) -> Result<Plan, PlanError> {
        let s = self.check(start, "start")?;
        let t = self.check(goal, "goal")?;
        let cells = match algorithm {
            Algorithm::AStar => {
                self.astar(s, t)?;
                let mut cells = self.chain(t);
                cells.reverse();
                cells
            }
            Algorithm::Wavefront => {
                self.wavefront_from(t);
                self.path_from_field(s)?
            }
        };
        let cost = self.nodes[if algorithm == Algorithm::AStar { t } else { s }].g;
        let waypoints = path::waypoints(&self.costmap, &cells);
        Ok(Plan {
            cells,
            cost,
            waypoints,
        })
    }

    /// Player's way of replanning: once [`Algorithm::Wavefront`] has planned to a goal,
    /// the path from any other start to that goal, without searching again (`None` when
    /// the last search was not a wavefront to `goal`).
    pub fn replan_from(
        &mut self,
        start: (u32, u32),
        goal: (u32, u32),
    ) -> Option<Result<Plan, PlanError>> {
        let t = self.padded(goal);
        if goal.0 as usize >= self.costmap.width()
            || goal.1 as usize >= self.costmap.height()
            || self.field.map(|(g, _)| g) != Some(t)
        {
            return None;
        }
        let s = match self.check(start, "start") {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        Some(self.path_from_field(s).map(|cells| {
            let waypoints = path::waypoints(&self.costmap, &cells);
            Plan {
                cost: self.nodes[s].g,
                cells,
                waypoints,
            }
        }))
    }

    /// The octile distance between padded cells, in cost units for [`W_FREE`] cells (a
    /// lower bound of every path's cost, and consistent with the step costs).
    #[inline]
    fn heuristic(x: usize, y: usize, tx: usize, ty: usize) -> u64 {
        let dx = x.abs_diff(tx) as u64;
        let dy = y.abs_diff(ty) as u64;
        let (lo, hi) = if dx < dy { (dx, dy) } else { (dy, dx) };
        2 * u64::from(W_FREE) * (DIAG * lo + ORTHO * (hi - lo))
    }

    /// A* from padded cell `s` to `t`; the nodes then hold the search tree.
    fn astar(&mut self, s: usize, t: usize) -> Result<u64, PlanError> {
        self.search::<true>(s, t).ok_or(PlanError::NoPath)
    }

    /// Dijkstra from padded cell `t` over the whole reachable grid (Player's wavefront).
    fn wavefront_from(&mut self, t: usize) {
        self.search::<false>(t, usize::MAX);
        self.field = Some((t, self.generation));
    }

    /// The search both planners share: from `s`, with the octile heuristic towards `t`
    /// and stopping there when `ASTAR`, over everything reachable otherwise.
    fn search<const ASTAR: bool>(&mut self, s: usize, t: usize) -> Option<u64> {
        let gen = self.next_generation();
        let pw = self.pw;
        let (tx, ty) = (t % pw, t / pw);
        let h = |i: usize| {
            if ASTAR {
                Planner::heuristic(i % pw, i / pw, tx, ty)
            } else {
                0
            }
        };
        let h0 = h(s);
        self.nodes[s].g = 0;
        self.nodes[s].mark = gen << 4 | ROOT;
        self.heap.push(key(h0, tie(h0), s as u32));
        let nodes = &mut self.nodes;
        let offsets = self.offsets;
        while let Some(k) = self.heap.pop() {
            let (f, _, i) = unpack(k);
            let i = i as usize;
            // The next entry's cell and the rows beside it are most likely cold: ask for
            // them now, while this one is expanded.
            if let Some(next) = self.heap.peek() {
                let n = unpack(next).2 as usize;
                prefetch(&nodes[n - pw]);
                prefetch(&nodes[n]);
                prefetch(&nodes[n + pw]);
            }
            let g = f - h(i);
            if g > nodes[i].g {
                continue;
            }
            self.expanded += 1;
            if ASTAR && i == t {
                return Some(g);
            }
            let wi = u64::from(nodes[i].weight);
            let ws = offsets.map(|off| nodes[(i as isize + off) as usize].weight);
            for d in 0..8 {
                let wj = ws[d];
                if wj == LETHAL {
                    continue;
                }
                let len = if d >= 4 {
                    let (a, b) = SIDES[d - 4];
                    if ws[a] == LETHAL || ws[b] == LETHAL {
                        continue;
                    }
                    DIAG
                } else {
                    ORTHO
                };
                let ng = g + len * (wi + u64::from(wj));
                let j = (i as isize + offsets[d]) as usize;
                let nj = &mut nodes[j];
                if nj.mark >> 4 == gen && ng >= nj.g {
                    continue;
                }
                nj.g = ng;
                nj.mark = gen << 4 | d as u32;
                let hj = h(j);
                self.heap.push(key(ng + hj, tie(hj), j as u32));
            }
        }
        None
    }

    /// The cells from padded cell `s` along the wavefront's field to its goal.
    fn path_from_field(&self, s: usize) -> Result<Vec<(u32, u32)>, PlanError> {
        let gen = self.field.map_or(0, |(_, g)| g);
        if self.nodes[s].mark >> 4 != gen {
            return Err(PlanError::NoPath);
        }
        Ok(self.chain(s))
    }

    /// The cells from padded cell `i` back along the directions to the search's root.
    fn chain(&self, mut i: usize) -> Vec<(u32, u32)> {
        let mut cells = Vec::new();
        let limit = self.pw * self.ph;
        loop {
            cells.push(self.unpadded(i));
            let d = self.nodes[i].mark & 15;
            if d == ROOT || cells.len() > limit {
                break;
            }
            i = (i as isize - self.offsets[d as usize]) as usize;
        }
        cells
    }
}
