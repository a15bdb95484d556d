//! Which session thread a new client's session runs on.
//!
//! Every thread that serves sessions pays for each of its wake-ups (the timer, the poll, the
//! scheduler) whatever the number of rounds it then sends; a light load spread over every
//! core pays that once per core and has the threads contend with everything else on the
//! machine for the same cores. So sessions fill one thread until the rounds per second
//! scheduled on it reach [`SPILL_RATE`], then the next; once every thread is past it,
//! each new session goes to the least loaded one. The thread filled first is one without
//! drivers (when there is one): the drivers' thread is filled last. On this project's
//! 2-core machine 50 clients at 50 Hz cost 1.31 x the C reference's CPU per round spread
//! round robin over two threads, 1.08-1.20 x on the drivers' thread alone and 0.97 x on
//! the other alone, while 2000 clients at 50 Hz need both threads (docs/performance.md).
//!
//! A session's load is its data rate while it sends on a schedule (continuous or push new
//! mode): it is counted at accept as the default 10 Hz and kept current by the session
//! through its [`LoadShare`], which gives its share back when the session ends.

use actix::ArbiterHandle;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Rounds per second a session thread takes before the next thread is used.
pub const SPILL_RATE: u64 = 30_000;

/// The rate a new session is counted at until it says otherwise (the manual's default).
pub const DEFAULT_RATE: u64 = 10;

/// The session threads and the rounds per second scheduled on each.
#[derive(Clone)]
pub struct Workers {
    handles: Vec<ArbiterHandle>,
    loads: Arc<[AtomicU64]>,
}

impl Workers {
    /// Session threads `handles` (at least one), none loaded yet.
    pub fn new(mut handles: Vec<ArbiterHandle>) -> Workers {
        assert!(!handles.is_empty(), "at least one session thread");
        // The drivers' arbiter comes first in `handles`; it is filled last: sessions on a
        // thread of their own are cheaper (the simulator's ray casting does not interleave
        // with their rounds) and keep their timing when a driver is busy.
        handles.rotate_left(1);
        let loads = handles.iter().map(|_| AtomicU64::new(0)).collect();
        Workers { handles, loads }
    }

    /// The thread for a new session, with the session's share of its load (counted at
    /// [`DEFAULT_RATE`] from now on).
    pub fn pick(&self) -> (&ArbiterHandle, LoadShare) {
        let i = pick_index(&self.loads(), SPILL_RATE);
        let mut share = LoadShare {
            loads: self.loads.clone(),
            index: i,
            mine: 0,
        };
        share.set(DEFAULT_RATE);
        (&self.handles[i], share)
    }

    /// The rounds per second scheduled on each thread.
    pub fn loads(&self) -> Vec<u64> {
        self.loads
            .iter()
            .map(|l| l.load(Ordering::Relaxed))
            .collect()
    }
}

/// The first thread whose load is under `spill`, or else the least loaded (the first of
/// equals).
pub fn pick_index(loads: &[u64], spill: u64) -> usize {
    if let Some(i) = loads.iter().position(|&l| l < spill) {
        return i;
    }
    loads
        .iter()
        .enumerate()
        .min_by_key(|&(_, &l)| l)
        .map_or(0, |(i, _)| i)
}

/// One session's part of its thread's load; given back when dropped.
#[derive(Debug)]
pub struct LoadShare {
    loads: Arc<[AtomicU64]>,
    index: usize,
    mine: u64,
}

impl LoadShare {
    /// This session now schedules `rate` rounds per second (0: none on a schedule).
    pub fn set(&mut self, rate: u64) {
        let load = &self.loads[self.index];
        if rate > self.mine {
            load.fetch_add(rate - self.mine, Ordering::Relaxed);
        } else {
            load.fetch_sub(self.mine - rate, Ordering::Relaxed);
        }
        self.mine = rate;
    }
}

impl Drop for LoadShare {
    fn drop(&mut self) {
        self.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_fill_the_first_thread_then_spill_to_the_least_loaded() {
        assert_eq!(pick_index(&[0, 0], 100), 0);
        assert_eq!(pick_index(&[99, 0], 100), 0);
        assert_eq!(pick_index(&[100, 0], 100), 1);
        assert_eq!(pick_index(&[100, 99], 100), 1);
        assert_eq!(pick_index(&[150, 120], 100), 1);
        assert_eq!(pick_index(&[120, 150, 120], 100), 0);
        // A thread freed by closed sessions is filled first again.
        assert_eq!(pick_index(&[40, 150], 100), 0);
    }

    #[actix_rt::test]
    async fn a_share_counts_its_rate_and_is_given_back() {
        let w = Workers::new(vec![actix::Arbiter::current(), actix::Arbiter::current()]);
        let (_, mut a) = w.pick();
        assert_eq!(w.loads(), vec![DEFAULT_RATE, 0]);
        a.set(50);
        let (_, b) = w.pick();
        assert_eq!(w.loads(), vec![50 + DEFAULT_RATE, 0]);
        drop(a);
        assert_eq!(w.loads(), vec![DEFAULT_RATE, 0]);
        drop(b);
        assert_eq!(w.loads(), vec![0, 0]);
    }
}
