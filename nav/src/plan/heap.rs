//! A binary min-heap of `u128` keys, for the planners' open lists.
//!
//! The planners pack what orders an entry and the entry itself into one integer: `f` (the
//! cost so far plus the heuristic) in the top 64 bits, `h` (the heuristic) in the next 32
//! and the cell's index in the low 32. Comparing keys is then comparing `f`, breaking ties
//! by the smaller `h` (the entry nearer the goal: A* runs straight down a corridor of equal
//! `f` instead of widening it) and then by the lower index (so every run is the same). The
//! sift loops move a hole instead of swapping.

/// The heap: a flat vector, the smallest key first.
#[derive(Debug, Default, Clone)]
pub struct Heap {
    v: Vec<u128>,
}

/// Packs an entry: cost `f`, heuristic `h`, cell `index`.
#[inline]
pub fn key(f: u64, h: u32, index: u32) -> u128 {
    (u128::from(f) << 64) | (u128::from(h) << 32) | u128::from(index)
}

/// The parts of a key: (`f`, `h`, `index`).
#[inline]
pub fn unpack(k: u128) -> (u64, u32, u32) {
    ((k >> 64) as u64, (k >> 32) as u32, k as u32)
}

impl Heap {
    /// An empty heap.
    pub fn new() -> Heap {
        Heap::default()
    }

    /// Empties it, keeping its allocation.
    pub fn clear(&mut self) {
        self.v.clear();
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.v.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }

    /// The smallest key, left in place.
    #[inline]
    pub fn peek(&self) -> Option<u128> {
        self.v.first().copied()
    }

    /// Adds a key. Not inlined: A* pushes from eight places (its step to each neighbour
    /// is unrolled), and eight copies of the sift cost more in code size than a call.
    #[inline(never)]
    pub fn push(&mut self, k: u128) {
        let mut i = self.v.len();
        self.v.push(k);
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.v[parent];
            if p <= k {
                break;
            }
            self.v[i] = p;
            i = parent;
        }
        self.v[i] = k;
    }

    /// Removes and returns the smallest key. Floyd's bottom-up way: the hole left at the
    /// top walks down to a leaf along the smaller children (one comparison a level, no
    /// test against the moved key), and the last key is sifted up from there (rarely far:
    /// it came from the bottom).
    #[inline]
    pub fn pop(&mut self) -> Option<u128> {
        let last = self.v.pop()?;
        let v = &mut self.v[..];
        let n = v.len();
        if n == 0 {
            return Some(last);
        }
        let top = v[0];
        let mut i = 0;
        let mut l = 1;
        while l + 1 < n {
            let c = l + usize::from(v[l + 1] < v[l]);
            v[i] = v[c];
            i = c;
            l = 2 * i + 1;
        }
        if l < n {
            v[i] = v[l];
            i = l;
        }
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = v[parent];
            if p <= last {
                break;
            }
            v[i] = p;
            i = parent;
        }
        v[i] = last;
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn pops_in_order_against_a_sort() {
        let mut rng = Rng::new(7);
        let mut h = Heap::new();
        let mut all = Vec::new();
        for round in 0..50 {
            for _ in 0..rng.below(200) {
                let k = key(rng.below(50), rng.below(4) as u32, rng.below(1000) as u32);
                h.push(k);
                all.push(k);
            }
            all.sort_unstable_by(|a, b| b.cmp(a));
            for _ in 0..rng.below(150).min(all.len() as u64) {
                assert_eq!(h.pop(), all.pop(), "round {round}");
            }
            assert_eq!(h.len(), all.len());
        }
        while let Some(k) = all.pop() {
            assert_eq!(h.pop(), Some(k));
        }
        assert!(h.is_empty() && h.pop().is_none());
        assert_eq!(unpack(key(9, 8, 7)), (9, 8, 7));
        assert!(key(5, 1, 9) < key(5, 2, 0) && key(5, 9, 9) < key(6, 0, 0));
    }
}
