//! A bucket queue (Dial's) of cell indices keyed by integer costs, for the full-grid
//! wavefront's open list.
//!
//! Costs are grouped into buckets of width `2^shift`; the buckets live in a ring, the
//! queue hands them out whole and in cost order, and the order inside a bucket is the
//! order of the pushes. That is an exact Dijkstra when every step of the graph costs at
//! least the bucket's width: a cell taken from bucket `k` only pushes cells into buckets
//! after `k`, and every cell in bucket `k` has already been reached by its best
//! predecessor (which cost at least one width less, so sat in an earlier bucket). The ring
//! must hold more buckets than the dearest step spans ([`BucketQueue::new`] sizes it).
//! Push and pop are O(1), against the binary heap's O(log n) with a cache miss a level;
//! and the next cells to expand are known in advance, so they can be prefetched.

/// The queue: a ring of buckets, each a vector kept between searches (after the first
/// search the queue no longer allocates).
#[derive(Debug, Clone)]
pub struct BucketQueue {
    buckets: Vec<Vec<u32>>,
    shift: u32,
    mask: u64,
    /// The number of the next bucket to hand out.
    cur: u64,
    len: usize,
}

impl BucketQueue {
    /// A queue of buckets `2^shift` cost units wide, for pushes at most `max_step` above
    /// the cost of the cell being expanded.
    pub fn new(shift: u32, max_step: u64) -> BucketQueue {
        let span = (max_step >> shift) + 2;
        let ring = span.next_power_of_two();
        BucketQueue {
            buckets: vec![Vec::new(); ring as usize],
            shift,
            mask: ring - 1,
            cur: 0,
            len: 0,
        }
    }

    /// Empties it (keeping the buckets' allocations) and starts again at cost `from`.
    pub fn reset(&mut self, from: u64) {
        if self.len > 0 {
            for b in &mut self.buckets {
                b.clear();
            }
        }
        self.len = 0;
        self.cur = from >> self.shift;
    }

    /// The number of entries waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of buckets in the ring.
    pub fn ring(&self) -> usize {
        self.buckets.len()
    }

    /// Adds `item` at `cost`, which must lie in a bucket not yet handed out and within the
    /// ring's reach of the last one handed out.
    #[inline]
    pub fn push(&mut self, cost: u64, item: u32) {
        let b = cost >> self.shift;
        debug_assert!(
            b >= self.cur && b - self.cur <= self.mask,
            "bucket {b} at {}",
            self.cur
        );
        self.buckets[(b & self.mask) as usize].push(item);
        self.len += 1;
    }

    /// Moves the next non-empty bucket's entries into `out` (emptied first, its allocation
    /// given to the bucket in exchange); false when the queue is empty.
    pub fn next_bucket(&mut self, out: &mut Vec<u32>) -> bool {
        out.clear();
        if self.len == 0 {
            return false;
        }
        loop {
            let slot = (self.cur & self.mask) as usize;
            self.cur += 1;
            if !self.buckets[slot].is_empty() {
                std::mem::swap(&mut self.buckets[slot], out);
                self.len -= out.len();
                return true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn hands_out_buckets_in_cost_order() {
        // A Dijkstra-like run: each taken entry pushes a few more between `min_step` and
        // `max_step` above its own cost; the buckets come out in cost order, each holding
        // what was pushed into it in push order.
        let mut rng = Rng::new(3);
        let (shift, min_step, max_step) = (4u32, 16u64, 300u64);
        let mut q = BucketQueue::new(shift, max_step);
        assert_eq!(q.ring(), 32);
        for round in 0..3 {
            let from = round * 1000;
            q.reset(from);
            let mut cost = vec![from];
            q.push(from, 0);
            let mut out = Vec::new();
            let mut last_bucket = None;
            let mut taken = 0;
            while q.next_bucket(&mut out) {
                let b = cost[out[0] as usize] >> shift;
                assert!(last_bucket.is_none_or(|l| b > l), "round {round}");
                last_bucket = Some(b);
                let mut prev = 0;
                for &item in &out {
                    assert_eq!(cost[item as usize] >> shift, b);
                    assert!(item >= prev, "push order within a bucket");
                    prev = item;
                    taken += 1;
                    if cost.len() < 5000 {
                        for _ in 0..rng.below(4) {
                            let c =
                                cost[item as usize] + min_step + rng.below(max_step - min_step + 1);
                            q.push(c, cost.len() as u32);
                            cost.push(c);
                        }
                    }
                }
            }
            assert!(q.is_empty());
            assert_eq!(q.len(), 0);
            assert_eq!(taken, cost.len(), "round {round}");
        }
    }
}
