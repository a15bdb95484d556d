//! A plain, exact Dijkstra on a [`Costmap`], written apart from the planners (no padding,
//! no generations, the standard library's heap, bounds checked at every step) to check
//! their costs against: `player-nav plan` reports the worst ratio of a planned path's cost
//! to this one's as `cost_ratio`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::costmap::{Costmap, LETHAL};

/// The least cost from `start` to `goal` (cells), or `None` when the goal cannot be
/// reached (or either end is lethal or off the map).
pub fn least_cost(costmap: &Costmap, start: (u32, u32), goal: (u32, u32)) -> Option<u64> {
    let (w, h) = (costmap.width(), costmap.height());
    let weights = costmap.weights();
    let at = |c: usize, r: usize| weights[r * w + c];
    let (sc, sr) = (start.0 as usize, start.1 as usize);
    let (gc, gr) = (goal.0 as usize, goal.1 as usize);
    if sc >= w || sr >= h || gc >= w || gr >= h || at(sc, sr) == LETHAL || at(gc, gr) == LETHAL {
        return None;
    }
    let target = gr * w + gc;
    let mut best = vec![u64::MAX; w * h];
    let mut heap = BinaryHeap::new();
    best[sr * w + sc] = 0;
    heap.push(Reverse((0u64, sr * w + sc)));
    while let Some(Reverse((cost, i))) = heap.pop() {
        if cost > best[i] {
            continue;
        }
        if i == target {
            return Some(cost);
        }
        let (c, r) = (i % w, i / w);
        let here = weights[i];
        for (dc, dr) in [
            (1, 0),
            (-1, 0),
            (0, 1),
            (0, -1),
            (1, 1),
            (-1, 1),
            (-1, -1),
            (1, -1),
        ] {
            let (nc, nr) = (c as i64 + dc, r as i64 + dr);
            if nc < 0 || nr < 0 || nc as usize >= w || nr as usize >= h {
                continue;
            }
            let (nc, nr) = (nc as usize, nr as usize);
            let there = at(nc, nr);
            if there == LETHAL {
                continue;
            }
            let diagonal = dc != 0 && dr != 0;
            // Both cells beside a diagonal step are on the map when its ends are.
            if diagonal && (at(nc, r) == LETHAL || at(c, nr) == LETHAL) {
                continue;
            }
            let next = cost + Costmap::step_cost(diagonal, here, there);
            let k = nr * w + nc;
            if next < best[k] {
                best[k] = next;
                heap.push(Reverse((next, k)));
            }
        }
    }
    None
}
