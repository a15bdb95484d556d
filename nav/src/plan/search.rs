//! The two planners over a [`Costmap`]: A* from the start to the goal, and Player's
//! wavefront (a full-grid Dijkstra from the goal, after which the path from any start is
//! read off without searching again).
//!
//! Both work on one flat array of 8-byte nodes over the grid padded with a lethal border
//! (so no neighbour needs a bounds check): the cell's weight, its cost so far as a `u32`,
//! and a mark holding the search's generation, a "closed" bit and the direction the cell
//! was reached from. A search starts by incrementing the generation instead of clearing
//! the array: a node whose mark is of an older generation is unvisited. Eight bytes a cell
//! (32 MB for Nav2's 2000 x 2000 benchmark map, against 64 MB with 64-bit costs) halve the
//! memory a full-grid search walks through.
//!
//! **Costs beyond 32 bits.** A cost that would not fit a `u32` is not stored: its cell is
//! left as it was and the search notes it. Leaving out every cell dearer than the limit
//! changes nothing for the cells within it (their best paths only pass through cheaper
//! cells), so an A* that reaches its goal is still exact; an A* that does not, or a
//! wavefront that left any cell out, is run again with 64-bit costs kept in a second array
//! (allocated the first time it is needed: only costmaps with very high weights or very
//! long paths get there; see [`Planner::wide_searches`]).
//!
//! **Open lists.** A* keeps a binary heap of packed keys ([`super::heap`]) with lazy
//! deletion (an entry whose cost is above its node's is stale). The wavefront, which has
//! no heuristic, keeps a bucket queue ([`super::bucket`]) whose buckets are no wider than
//! the cheapest step (`2 * ORTHO` times the lowest weight), which makes it an exact
//! Dijkstra in O(1) a push and pop; a cell is expanded once (the closed bit skips its
//! stale entries), and the cells a few entries ahead in the bucket are prefetched while one
//! is expanded. Costs are integers ([`super::costmap`]), so both planners return paths of
//! exactly the least cost, which the tests check against independent Dijkstras.

use super::bucket::BucketQueue;
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

/// One grid cell's search state: 8 bytes, 8 cells a cache line.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(8))]
struct Node {
    /// Cost from the search's root (when it fits; else in [`Planner`]'s wide array).
    g: u32,
    /// The costmap's weight ([`LETHAL`] for the padding border too).
    weight: u16,
    /// `generation << 5 | CLOSED? | direction` (direction 0-7 of the step that reached
    /// the node, [`ROOT`] for the root).
    mark: u16,
}

/// The direction of the search's root.
const ROOT: u16 = 8;
/// The direction's bits in a mark.
const DIRECTION: u16 = 15;
/// A mark's bit set when the wavefront has expanded the node.
const CLOSED: u16 = 16;
/// Where the generation starts in a mark.
const GEN_SHIFT: u32 = 5;
/// The last generation before the marks are cleared and it starts again from 1.
const MAX_GENERATION: u16 = (1 << (16 - GEN_SHIFT)) - 1;
/// The dearest cost a node's `g` holds.
const NARROW_MAX: u64 = u32::MAX as u64;
/// How many bucket entries ahead of the one expanded the wavefront prefetches.
const AHEAD: usize = 8;

/// For each diagonal step (4-7), the two straight steps beside it.
const SIDES: [(usize, usize); 4] = [(0, 1), (2, 1), (2, 3), (0, 3)];

/// The heuristic as the heap's tie-breaker (saturated: only the order of ties depends on
/// it; the cost is recomputed from the cell when the entry is taken).
#[inline]
fn tie(h: u64) -> u32 {
    h.min(u64::from(u32::MAX)) as u32
}

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
// Unsafe code: the x86-64 cache prefetch hint (`_mm_prefetch`, an unsafe intrinsic on the
// crate's minimum Rust, 1.82); std has no stable safe prefetch.
#[allow(unsafe_code)]
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

/// Prefetches the three rows of padded cell `n`'s neighbourhood.
#[inline(always)]
fn prefetch_around(nodes: &[Node], n: usize, pw: usize) {
    prefetch(&nodes[n - pw]);
    prefetch(&nodes[n]);
    prefetch(&nodes[n + pw]);
}

/// Where a search keeps its costs: `WIDE` in the 64-bit array, else in the nodes.
#[inline(always)]
fn cost_of<const WIDE: bool>(nodes: &[Node], wide: &[u64], i: usize) -> u64 {
    if WIDE {
        wide[i]
    } else {
        u64::from(nodes[i].g)
    }
}

/// The step a search takes from padded cell `i` (expanded at cost `g`) to each
/// neighbour: a neighbour reached more cheaply than before gets the cost and the
/// direction, and is handed to `push` with its cost. Returns whether a cost was left out
/// for not fitting 32 bits (never when `WIDE`).
#[inline(always)]
fn relax<const WIDE: bool>(
    nodes: &mut [Node],
    wide: &mut [u64],
    offsets: &[isize; 8],
    gen: u16,
    i: usize,
    g: u64,
    mut push: impl FnMut(u64, usize),
) -> bool {
    let at = |d: usize| (i as isize + offsets[d]) as usize;
    let wi = u64::from(nodes[i].weight);
    // The neighbours' weights, read once into registers (every use below has a constant
    // direction once the calls are inlined: no array on the stack to store and reload).
    let w = [
        nodes[at(0)].weight,
        nodes[at(1)].weight,
        nodes[at(2)].weight,
        nodes[at(3)].weight,
        nodes[at(4)].weight,
        nodes[at(5)].weight,
        nodes[at(6)].weight,
        nodes[at(7)].weight,
    ];
    let open = |d: usize| w[d] != LETHAL;
    let mut dropped = false;
    let mut step = |d: usize, len: u64| {
        let ng = g + len * (wi + u64::from(w[d]));
        let j = at(d);
        if nodes[j].mark >> GEN_SHIFT == gen && ng >= cost_of::<WIDE>(nodes, wide, j) {
            return;
        }
        if WIDE {
            wide[j] = ng;
        } else if ng > NARROW_MAX {
            dropped = true;
            return;
        } else {
            nodes[j].g = ng as u32;
        }
        nodes[j].mark = gen << GEN_SHIFT | d as u16;
        push(ng, j);
    };
    for d in 0..4 {
        if open(d) {
            step(d, ORTHO);
        }
    }
    for (d, (a, b)) in (4..8).zip(SIDES) {
        if open(d) && open(a) && open(b) {
            step(d, DIAG);
        }
    }
    dropped
}

/// A planner with its search arrays, reused plan after plan.
pub struct Planner {
    costmap: Costmap,
    /// Padded width and height.
    pw: usize,
    ph: usize,
    nodes: Vec<Node>,
    /// 64-bit costs, for the searches whose costs outgrow 32 bits (empty until one does).
    wide: Vec<u64>,
    offsets: [isize; 8],
    generation: u16,
    heap: Heap,
    queue: BucketQueue,
    /// The wavefront's bucket being expanded (kept for its allocation).
    batch: Vec<u32>,
    /// The goal (padded index) and generation of the last complete wavefront.
    field: Option<(usize, u16)>,
    /// Whether the last search kept its costs in `wide`.
    last_wide: bool,
    expanded: usize,
    wide_searches: usize,
}

impl Planner {
    /// A planner over `costmap`.
    pub fn new(costmap: Costmap) -> Planner {
        let (w, h) = (costmap.width(), costmap.height());
        let (pw, ph) = (w + 2, h + 2);
        let mut nodes = vec![Node::default(); pw * ph];
        // The lightest and heaviest weight of a cell that may be entered.
        let mut span: Option<(u16, u16)> = None;
        for (row, chunk) in costmap.weights().chunks(w).enumerate() {
            let base = (row + 1) * pw + 1;
            for (n, &wt) in nodes[base..base + w].iter_mut().zip(chunk) {
                n.weight = wt;
                if wt != LETHAL {
                    span = Some(span.map_or((wt, wt), |(lo, hi)| (lo.min(wt), hi.max(wt))));
                }
            }
        }
        // The cheapest step sets the widest exact bucket (a power of two for the shift),
        // the dearest one how far ahead of the cell expanded a push may land.
        let (lightest, heaviest) = span.unwrap_or((W_FREE, W_FREE));
        let cheapest = 2 * ORTHO * u64::from(lightest);
        let queue = BucketQueue::new(cheapest.ilog2(), 2 * DIAG * u64::from(heaviest));
        let offsets = STEPS.map(|(dx, dy)| dx as isize + dy as isize * pw as isize);
        Planner {
            costmap,
            pw,
            ph,
            nodes,
            wide: Vec::new(),
            offsets,
            generation: 0,
            heap: Heap::new(),
            queue,
            batch: Vec::new(),
            field: None,
            last_wide: false,
            expanded: 0,
            wide_searches: 0,
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

    /// How many searches, since the planner was made, were run again with 64-bit costs
    /// because a cost outgrew 32 bits (see the module documentation).
    pub fn wide_searches(&self) -> usize {
        self.wide_searches
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

    /// Starts a search: a new generation (clearing the marks when the generations run
    /// out), no field, empty open lists, costs kept `wide` or not.
    fn next_generation(&mut self, wide: bool) -> u16 {
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
        self.last_wide = wide;
        if wide {
            self.wide_searches += 1;
            // Allocated on the first wide search only (its values are read only where the
            // generation says they were written).
            if self.wide.len() != self.nodes.len() {
                self.wide = vec![0; self.nodes.len()];
            }
        }
        self.generation
    }

    /// The cost the last search gave padded cell `i` (meaningful when it reached it).
    fn cost(&self, i: usize) -> u64 {
        if self.last_wide {
            self.wide[i]
        } else {
            u64::from(self.nodes[i].g)
        }
    }

    /// Marks padded cell `i` as the root of a search of generation `gen`, at cost 0.
    fn set_root(&mut self, i: usize, gen: u16) {
        self.nodes[i].g = 0;
        self.nodes[i].mark = gen << GEN_SHIFT | ROOT;
        if self.last_wide {
            self.wide[i] = 0;
        }
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
                self.wavefront(t);
                self.path_from_field(s)?
            }
        };
        let cost = self.cost(if algorithm == Algorithm::AStar { t } else { s });
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
                cost: self.cost(s),
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

    /// A* from padded cell `s` to `t`, with 32-bit costs and again with 64-bit ones if a
    /// cost left out may have hidden the goal; the nodes then hold the search tree.
    fn astar(&mut self, s: usize, t: usize) -> Result<u64, PlanError> {
        match self.astar_with::<false>(s, t) {
            (Some(g), _) => Ok(g),
            (None, false) => Err(PlanError::NoPath),
            (None, true) => self.astar_with::<true>(s, t).0.ok_or(PlanError::NoPath),
        }
    }

    /// Dijkstra from padded cell `t` over the whole reachable grid (Player's wavefront),
    /// with 32-bit costs and again with 64-bit ones if any cost was left out.
    fn wavefront(&mut self, t: usize) {
        if self.wavefront_with::<false>(t) {
            self.wavefront_with::<true>(t);
        }
        self.field = Some((t, self.generation));
    }

    /// A* from `s` to `t` with the octile heuristic: the goal's cost if reached, and
    /// whether a cost was left out for not fitting 32 bits.
    fn astar_with<const WIDE: bool>(&mut self, s: usize, t: usize) -> (Option<u64>, bool) {
        let gen = self.next_generation(WIDE);
        let pw = self.pw;
        let (tx, ty) = (t % pw, t / pw);
        let h = |i: usize| Planner::heuristic(i % pw, i / pw, tx, ty);
        self.set_root(s, gen);
        let h0 = h(s);
        self.heap.push(key(h0, tie(h0), s as u32));
        let (nodes, wide, heap) = (&mut self.nodes[..], &mut self.wide[..], &mut self.heap);
        let offsets = self.offsets;
        let mut dropped = false;
        let mut expanded = 0;
        let mut found = None;
        while let Some(k) = heap.pop() {
            let (f, _, i) = unpack(k);
            let i = i as usize;
            // The next entry's cell and the rows beside it are most likely cold: ask for
            // them now, while this one is expanded.
            if let Some(next) = heap.peek() {
                prefetch_around(nodes, unpack(next).2 as usize, pw);
            }
            let g = f - h(i);
            if g > cost_of::<WIDE>(nodes, wide, i) {
                continue;
            }
            expanded += 1;
            if i == t {
                found = Some(g);
                break;
            }
            dropped |= relax::<WIDE>(nodes, wide, &offsets, gen, i, g, |ng, j| {
                let hj = h(j);
                heap.push(key(ng + hj, tie(hj), j as u32));
            });
        }
        self.expanded = expanded;
        (found, dropped)
    }

    /// The full-grid Dijkstra from `t` on the bucket queue; whether a cost was left out
    /// for not fitting 32 bits.
    fn wavefront_with<const WIDE: bool>(&mut self, t: usize) -> bool {
        let gen = self.next_generation(WIDE);
        self.set_root(t, gen);
        self.queue.reset(0);
        self.queue.push(0, t as u32);
        let mut batch = std::mem::take(&mut self.batch);
        let (nodes, wide, queue) = (&mut self.nodes[..], &mut self.wide[..], &mut self.queue);
        let (offsets, pw) = (self.offsets, self.pw);
        let mut dropped = false;
        let mut expanded = 0;
        let ahead: usize = std::env::var("AHEAD")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(AHEAD);
        while queue.next_bucket(&mut batch) {
            for k in 0..batch.len() {
                if let Some(&n) = batch.get(k + ahead) {
                    prefetch_around(nodes, n as usize, pw);
                }
                let i = batch[k] as usize;
                let mark = nodes[i].mark;
                if mark & CLOSED != 0 {
                    continue;
                }
                nodes[i].mark = mark | CLOSED;
                expanded += 1;
                let g = cost_of::<WIDE>(nodes, wide, i);
                dropped |= relax::<WIDE>(nodes, wide, &offsets, gen, i, g, |ng, j| {
                    queue.push(ng, j as u32)
                });
            }
        }
        self.batch = batch;
        self.expanded = expanded;
        dropped
    }

    /// The cells from padded cell `s` along the wavefront's field to its goal.
    fn path_from_field(&self, s: usize) -> Result<Vec<(u32, u32)>, PlanError> {
        let gen = self.field.map_or(0, |(_, g)| g);
        if self.nodes[s].mark >> GEN_SHIFT != gen {
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
            let d = self.nodes[i].mark & DIRECTION;
            if d == ROOT || cells.len() > limit {
                break;
            }
            i = (i as isize - self.offsets[d as usize]) as usize;
        }
        cells
    }
}
