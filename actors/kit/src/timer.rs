//! Precise per-thread timers for client schedules and drivers' periodic readings.
//!
//! tokio's timer wheel works in whole milliseconds and wakes through `epoll_wait`'s
//! millisecond timeout, so a 10 Hz schedule on it wakes anywhere up to a millisecond late,
//! at random: rounds arrive on average 0.3-0.5 ms off their interval. A deadline more than
//! 64 ms away also costs a second wake-up: the wheel's coarser level must move it to the
//! finer one first. This module keeps,
//! per thread, one `timerfd` armed at the earliest pending deadline (absolute
//! `CLOCK_MONOTONIC`, nanosecond resolution, no timer slack) and the pending deadlines in
//! order, each with what is due at it (schedules on the shared grid, [`on_grid`], share
//! their deadlines, so a wake-up takes a few lists off the front rather than popping a
//! heap entry per timer).
//! [`sleep_until`] returns a future that completes at its deadline, to within the time it
//! takes the thread to get to it; deadlines within 100 µs of a wake-up share it.
//!
//! It must be used from within a tokio runtime with a `LocalSet` (every actix arbiter is
//! one); the first use on a thread starts that thread's timer task.

// Unsafe code: the per-thread timerfd (timerfd_create, timerfd_settime, clock_gettime:
// Linux calls with no safe std equivalent), reading a live repeating timer through its
// weak pointer on the tick path, and the cache prefetch hint.
#![allow(unsafe_code)]

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;

/// Deadlines this close after a wake-up are fired with it rather than by a wake-up of their
/// own: with thousands of schedules a thread would otherwise wake for each one, and a
/// wake-up costs far more than the round it sends. Schedules stay absolute, so this moves
/// single rounds earlier by at most this much and never shifts a mean interval.
pub const COALESCE: Duration = Duration::from_micros(100);

/// Schedules that start at [`on_grid`] deadlines fall on multiples of at most this since
/// the process started (a quarter of the period for periods under 20 ms), so that
/// thousands of schedules share a few wake-ups per period instead of each waking the
/// thread at a phase of its own: a wake-up costs a thread far more than a round.
pub const GRID: Duration = Duration::from_millis(5);

/// `at` rounded up to the next multiple of the grid for `period` (the smaller of [`GRID`]
/// and a quarter of `period`, counted from the first call in the process): for the first
/// deadline of a schedule, whose later deadlines follow at exact periods. This moves the
/// schedule's phase by less than the grid, never its intervals.
pub fn on_grid(at: Instant, period: Duration) -> Instant {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    let since = at.saturating_duration_since(epoch).as_nanos();
    let grid = GRID.min(period / 4).as_nanos().max(1);
    let up = since.div_ceil(grid) * grid;
    epoch + Duration::from_nanos(up as u64)
}

struct Slot {
    fired: Cell<bool>,
    waker: RefCell<Option<Waker>>,
    /// The `seq` of the queued entry that may fire this slot (0: none). A repeating timer
    /// re-armed or cancelled leaves its old entry queued; this makes it inert.
    armed: Cell<u64>,
}

impl Slot {
    fn new(waker: Option<Waker>) -> Slot {
        Slot {
            fired: Cell::new(false),
            waker: RefCell::new(waker),
            armed: Cell::new(0),
        }
    }

    fn wake(&self) {
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    /// Keeps the poller's waker (unless the one kept wakes the same task).
    fn keep_waker(&self, cx: &Context<'_>) {
        let mut w = self.waker.borrow_mut();
        if !w.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *w = Some(cx.waker().clone());
        }
    }
}

/// What the timer task does with a due slot: wake its owner, or run a repeating timer's
/// tick itself ([`TickHandle::run_on_thread`]).
enum Target {
    Wake(Weak<Slot>),
    Repeat(Weak<DynRepeat>),
}

impl Target {
    /// Asks the processor for the target's state (its reference counts and first lines).
    fn prefetch_state(&self) {
        let (p, len): (*const u8, usize) = match self {
            Target::Wake(w) => (w.as_ptr().cast(), std::mem::size_of::<Slot>()),
            // The tick's parts of a parked session follow; those it reaches first.
            Target::Repeat(r) => (r.as_ptr().cast(), 512),
        };
        // The counts are just before the value.
        prefetch(p.wrapping_sub(16), len + 16);
    }

    /// Asks the processor for what a repeating timer's tick on the thread will reach
    /// through pointers ([`OnThread::prefetch`]).
    fn prefetch_parts(&self) {
        if let Target::Repeat(w) = self {
            if w.strong_count() > 0 {
                // SAFETY: the value is alive (a strong reference exists) and only this
                // thread can drop it, which it does not while this reference is held.
                let r = unsafe { &*w.as_ptr() };
                if r.direct.get() {
                    r.payload.prefetch();
                }
            }
        }
    }
}

/// Asks the processor to bring `len` bytes from `p` into its cache; a hint that never
/// faults, whatever the address.
pub fn prefetch(p: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..len).step_by(64) {
        // SAFETY: a prefetch reads nothing and never faults, whatever the address.
        #[allow(unused_unsafe)]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                p.wrapping_add(off).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
}

/// One timer due at a deadline of the queue, by the `seq` it was set with.
struct Entry {
    seq: u64,
    target: Target,
}

/// The pending deadlines, earliest first, each with its entries in the order they were
/// set (the order they fire in), and emptied lists kept for reuse.
#[derive(Default)]
struct Queue {
    due: BTreeMap<Instant, Vec<Entry>>,
    spare: Vec<Vec<Entry>>,
}

impl Queue {
    /// Lists of entries kept for reuse: the few deadlines a thread has pending at once.
    const SPARE: usize = 64;

    fn push(&mut self, deadline: Instant, entry: Entry) {
        let spare = &mut self.spare;
        self.due
            .entry(deadline)
            .or_insert_with(|| spare.pop().unwrap_or_default())
            .push(entry);
    }

    /// The earliest deadline's entries, if it is at or before `until`.
    fn pop_until(&mut self, until: Instant) -> Option<Vec<Entry>> {
        let first = self.due.first_entry()?;
        (*first.key() <= until).then(|| first.remove())
    }

    /// Takes back a list [`Queue::pop_until`] gave out, once its entries are fired.
    fn recycle(&mut self, mut list: Vec<Entry>) {
        list.clear();
        if self.spare.len() < Self::SPARE {
            self.spare.push(list);
        }
    }

    fn earliest(&self) -> Option<Instant> {
        self.due.first_key_value().map(|(d, _)| *d)
    }
}

struct Ticker {
    fd: AsyncFd<OwnedFd>,
    queue: RefCell<Queue>,
    /// The deadline the timerfd is armed for, if any.
    armed: Cell<Option<Instant>>,
    seq: Cell<u64>,
    /// An `Instant` and the `CLOCK_MONOTONIC` reading taken with it, to convert one to the
    /// other (std's `Instant` is `CLOCK_MONOTONIC` on Linux).
    base: (Instant, Duration),
}

thread_local! {
    static TICKER: RefCell<Option<Rc<Ticker>>> = const { RefCell::new(None) };
}

fn monotonic_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

impl Ticker {
    fn new() -> io::Result<Rc<Ticker>> {
        // SAFETY: plain syscall; the descriptor is owned below.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let base = (Instant::now(), monotonic_now());
        // SAFETY: the descriptor is owned by the AsyncFd and neither closed nor replaced
        // while registered.
        let fd = unsafe { AsyncFd::register(fd) }.map_err(io::Error::from)?;
        let ticker = Rc::new(Ticker {
            fd,
            queue: RefCell::new(Queue::default()),
            armed: Cell::new(None),
            seq: Cell::new(0),
            base,
        });
        tokio::task::spawn_local(run(Rc::downgrade(&ticker)));
        Ok(ticker)
    }

    fn arm(&self, deadline: Option<Instant>) {
        let value = match deadline {
            Some(d) => {
                let mono = self.base.1 + d.saturating_duration_since(self.base.0);
                // Never zero: a zero it_value would disarm the timer.
                libc::timespec {
                    tv_sec: mono.as_secs() as libc::time_t,
                    tv_nsec: i64::from(mono.subsec_nanos().max(1)) as libc::c_long,
                }
            }
            None => libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        };
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: value,
        };
        // SAFETY: valid descriptor and itimerspec.
        unsafe {
            libc::timerfd_settime(
                self.fd.get_ref().as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        self.armed.set(deadline);
    }

    /// Adds `target` at `deadline`; `armed` (its slot's) is set to the entry's `seq`.
    fn insert(&self, deadline: Instant, armed: &Cell<u64>, target: Target) {
        let seq = self.seq.get().wrapping_add(1).max(1);
        self.seq.set(seq);
        armed.set(seq);
        self.queue
            .borrow_mut()
            .push(deadline, Entry { seq, target });
        if self.armed.get().is_none_or(|a| deadline < a) {
            self.arm(Some(deadline));
        }
    }

    /// Fires every due entry, and those due within [`COALESCE`] of now, then re-arms for
    /// the next. A repeating timer with a tick of its own ([`TickHandle::run_on_thread`])
    /// has it run here, one after the other, with no wake-up of its owner's task.
    fn fire_due(&self) {
        let woke = Instant::now();
        let now = woke + COALESCE;
        loop {
            // The queue is not borrowed while entries fire: a tick may set timers (at a
            // deadline already due, too: then it fires in this pass, after these).
            let Some(list) = self.queue.borrow_mut().pop_until(now) else {
                break;
            };
            for i in 0..list.len() {
                // The timers fire one after the other, each with its own state spread
                // over memory, and a round's `send` leaves time to fetch the next ones':
                // the timer state two ahead, the parts its tick will reach one ahead.
                if let Some(e) = list.get(i + 2) {
                    e.target.prefetch_state();
                }
                if let Some(e) = list.get(i + 1) {
                    e.target.prefetch_parts();
                }
                let e = &list[i];
                match &e.target {
                    Target::Wake(slot) => {
                        if let Some(slot) = slot.upgrade().filter(|s| s.armed.get() == e.seq) {
                            slot.armed.set(0);
                            slot.fired.set(true);
                            slot.wake();
                        }
                    }
                    Target::Repeat(r) => {
                        if let Some(r) = r.upgrade().filter(|r| r.slot.armed.get() == e.seq) {
                            self.fire_repeat(&r);
                        }
                    }
                }
            }
            self.queue.borrow_mut().recycle(list);
        }
        let next = self.queue.borrow().earliest();
        if next.is_none() && self.armed.get().is_some_and(|a| a <= woke) {
            // Armed for a deadline already past: the timerfd (one-shot) has disarmed
            // itself, and a call to say so again would be a system call per wake-up.
            self.armed.set(None);
        } else {
            self.arm(next);
        }
    }

    /// A repeating timer's deadline came: its own tick when it runs on the thread, else a
    /// wake-up of its stream.
    fn fire_repeat(&self, r: &Rc<DynRepeat>) {
        r.slot.armed.set(0);
        if !r.direct.get() {
            r.slot.fired.set(true);
            r.slot.wake();
            return;
        }
        r.deadline.set(None);
        let fired = r.payload.tick();
        if let Some(at) = fired.next {
            r.deadline.set(Some(at));
            self.insert(at, &r.slot.armed, Target::Repeat(Rc::downgrade(r)));
        }
        if fired.wake {
            r.kicked.set(true);
            r.slot.wake();
        }
    }
}

/// The thread's timer task: waits for the timerfd and fires what is due.
async fn run(ticker: Weak<Ticker>) {
    loop {
        let Some(t) = ticker.upgrade() else { return };
        let ready = t.fd.readable().await;
        match ready {
            Ok(mut guard) => {
                let mut buf = [0u8; 8];
                // SAFETY: reading the 8-byte expiry count of a timerfd.
                let _ = unsafe {
                    libc::read(
                        t.fd.get_ref().as_raw_fd(),
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                    )
                };
                guard.clear_ready();
            }
            Err(_) => return,
        }
        t.fire_due();
    }
}

/// Creates this thread's timer now (its timerfd), so that a thread started early never
/// has to open a descriptor later, when the process may be at its descriptor limit.
/// Returns whether the timer is there.
pub fn init_thread() -> bool {
    ticker().is_some()
}

fn ticker() -> Option<Rc<Ticker>> {
    TICKER.with(|t| {
        let mut t = t.borrow_mut();
        if t.is_none() {
            *t = Ticker::new().ok();
        }
        t.clone()
    })
}

/// A future completing at a deadline; see [`sleep_until`].
pub struct Sleep {
    deadline: Instant,
    slot: Option<Rc<Slot>>,
    fallback: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// Completes at `deadline`, precisely (see the module docs), or up to [`COALESCE`] before it
/// when another deadline woke the thread just then. Dropping it cancels it.
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        slot: None,
        fallback: None,
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(f) = self.fallback.as_mut() {
            return f.as_mut().poll(cx);
        }
        if let Some(slot) = &self.slot {
            if slot.fired.get() || Instant::now() >= self.deadline {
                return Poll::Ready(());
            }
            slot.keep_waker(cx);
            return Poll::Pending;
        }
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        match ticker() {
            Some(t) => {
                let slot = Rc::new(Slot::new(Some(cx.waker().clone())));
                t.insert(
                    self.deadline,
                    &slot.armed,
                    Target::Wake(Rc::downgrade(&slot)),
                );
                self.slot = Some(slot);
                Poll::Pending
            }
            None => {
                // No timerfd (should not happen on Linux): tokio's timer will do.
                let mut f = Box::pin(tokio::time::sleep_until(self.deadline.into()));
                let r = f.as_mut().poll(cx);
                self.fallback = Some(f);
                r
            }
        }
    }
}

/// The shared state of a repeating timer, with the owner's `payload` (what its tick on the
/// thread works on) in the same allocation: the timer task reaches a due timer's state and
/// the tick's parts with one pointer, not one per part.
struct Repeat<P: ?Sized> {
    /// Its queued entry's `seq`, whether the deadline passed with the payload's tick not
    /// run (the stream yields), and the stream's waker.
    slot: Slot,
    /// The payload's tick runs on the thread at each deadline
    /// ([`TickHandle::run_on_thread`]).
    direct: Cell<bool>,
    /// That tick asked for the owner: the stream yields once.
    kicked: Cell<bool>,
    deadline: Cell<Option<Instant>>,
    /// Without a timerfd (should not happen on Linux): tokio's timer.
    fallback: RefCell<Option<Pin<Box<tokio::time::Sleep>>>>,
    payload: P,
}

/// A repeating timer as the thread's timer task holds it, whatever its payload.
type DynRepeat = Repeat<dyn OnThread>;

/// What the thread's timer task runs itself at a repeating timer's deadlines while its
/// owner lets it ([`TickHandle::run_on_thread`]): the timer's payload.
pub trait OnThread {
    /// One deadline came: what was done, and what is next.
    fn tick(&self) -> Fired;

    /// The tick is next but one: ask the processor for what it will reach through
    /// pointers (a prefetch). Nothing by default.
    fn prefetch(&self) {}
}

/// No tick of its own: the owner is woken.
impl OnThread for () {
    fn tick(&self) -> Fired {
        Fired::TO_OWNER
    }
}

/// What an [`OnThread`] tick did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    /// The next deadline to run it at (`None`: none; the owner sets one).
    pub next: Option<Instant>,
    /// The owner must look: its stream yields once.
    pub wake: bool,
}

impl Fired {
    /// No next deadline, and the owner must look: the deadlines are its stream's again.
    pub const TO_OWNER: Fired = Fired {
        next: None,
        wake: true,
    };
}

/// A repeating timer for one owner: a [`Stream`](futures::Stream) that yields once each
/// time the deadline last given to its [`TickHandle`] passes. One allocation serves every
/// tick, so a schedule that ticks a thousand times allocates nothing after the first: no
/// future per tick, no entry to free (a re-armed or cancelled deadline's old entry is
/// inert). Same precision and coalescing as [`sleep_until`].
pub struct Ticks(Rc<DynRepeat>);

/// Sets (or clears) the deadline of its [`Ticks`], and holds the timer's payload `P`.
pub struct TickHandle<P: 'static = ()>(Rc<Repeat<P>>);

impl<P> Clone for TickHandle<P> {
    fn clone(&self) -> Self {
        TickHandle(self.0.clone())
    }
}

/// A repeating timer, not set: its handle and its stream (poll the stream from the thread
/// that sets the handle).
pub fn ticks() -> (TickHandle, Ticks) {
    ticks_with(())
}

/// A repeating timer with a payload whose [`OnThread::tick`] the thread's timer task may
/// run at its deadlines ([`TickHandle::run_on_thread`]), in the timer's own allocation.
pub fn ticks_with<P: OnThread + 'static>(payload: P) -> (TickHandle<P>, Ticks) {
    let r = Rc::new(Repeat {
        slot: Slot::new(None),
        direct: Cell::new(false),
        kicked: Cell::new(false),
        deadline: Cell::new(None),
        fallback: RefCell::new(None),
        payload,
    });
    let dynamic: Rc<DynRepeat> = r.clone();
    (TickHandle(r), Ticks(dynamic))
}

impl<P: OnThread + 'static> TickHandle<P> {
    /// The stream yields once at `deadline` (replacing any deadline set before).
    pub fn set(&self, deadline: Instant) {
        let r = &self.0;
        r.deadline.set(Some(deadline));
        r.slot.fired.set(false);
        match ticker() {
            Some(t) => {
                let weak: Weak<DynRepeat> = Rc::downgrade(r) as Weak<DynRepeat>;
                t.insert(deadline, &r.slot.armed, Target::Repeat(weak));
            }
            None => {
                *r.fallback.borrow_mut() =
                    Some(Box::pin(tokio::time::sleep_until(deadline.into())));
                r.slot.wake();
            }
        }
    }

    /// No deadline: the stream yields nothing until the next [`TickHandle::set`].
    pub fn clear(&self) {
        let r = &self.0;
        r.deadline.set(None);
        r.slot.fired.set(false);
        r.slot.armed.set(0);
        r.kicked.set(false);
        *r.fallback.borrow_mut() = None;
    }

    /// While `on`, the thread's timer task runs the payload's [`OnThread::tick`] at each
    /// deadline instead of waking the stream: thousands of timers due at one wake-up are
    /// served in one pass, with no task woken or polled for each. The tick says when it
    /// runs next and whether the stream must yield (once) for its owner to look; `false`
    /// gives the deadlines back to the stream. Without a timerfd the tick is never run
    /// (the stream yields as usual).
    pub fn run_on_thread(&self, on: bool) {
        if !on {
            // The owner took its ticks back and looks now: a wake-up asked for is moot.
            self.0.kicked.set(false);
        }
        self.0.direct.set(on);
    }

    /// The deadline set, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.0.deadline.get()
    }

    /// The timer's payload.
    pub fn payload(&self) -> &P {
        &self.0.payload
    }
}

impl futures::Stream for Ticks {
    type Item = ();

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<()>> {
        let r = &self.0;
        if r.kicked.replace(false) {
            return Poll::Ready(Some(()));
        }
        let direct = r.direct.get() && r.fallback.borrow().is_none();
        let Some(at) = r.deadline.get().filter(|_| !direct) else {
            r.slot.keep_waker(cx);
            return Poll::Pending;
        };
        let due = {
            let mut fb = r.fallback.borrow_mut();
            match fb.as_mut() {
                Some(f) => f.as_mut().poll(cx).is_ready(),
                None => r.slot.fired.get() || Instant::now() >= at,
            }
        };
        if due {
            r.deadline.set(None);
            r.slot.fired.set(false);
            r.slot.armed.set(0);
            *r.fallback.borrow_mut() = None;
            return Poll::Ready(Some(()));
        }
        r.slot.keep_waker(cx);
        Poll::Pending
    }
}

/// A periodic timer: a [`Stream`](futures::Stream) that yields at each multiple of its
/// period from its first deadline on, on this thread's precise timer. See [`interval`].
pub struct Interval {
    handle: TickHandle,
    ticks: Ticks,
    next: Instant,
    period: Duration,
}

/// Yields every `period`, the first time one period from now, rounded up to the grid
/// ([`on_grid`]): periodic work on a thread shares its wake-ups with the schedules and
/// other intervals due at the same grid points. The deadlines stay exact multiples of the
/// period from the first; a deadline missed (the thread was busy or stopped) yields once,
/// and the next is the first multiple still ahead. Unlike tokio's interval, a deadline
/// costs one wake-up, on time to within [`COALESCE`], whatever the period.
pub fn interval(period: Duration) -> Interval {
    let period = period.max(Duration::from_micros(1));
    let (handle, ticks) = ticks();
    let next = on_grid(Instant::now() + period, period);
    handle.set(next);
    Interval {
        handle,
        ticks,
        next,
        period,
    }
}

impl Interval {
    /// The deadline it yields at next.
    pub fn deadline(&self) -> Instant {
        self.next
    }
}

impl futures::Stream for Interval {
    type Item = ();

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.ticks).poll_next(cx) {
            Poll::Ready(Some(())) => {
                // The first multiple of the period after this deadline that is still ahead
                // (the tick may come up to COALESCE early: then it is the next one).
                let now = Instant::now().max(this.next);
                let behind = (now - this.next).as_nanos() / this.period.as_nanos();
                let skip = u32::try_from(behind + 1).unwrap_or(u32::MAX);
                this.next += this.period.saturating_mul(skip);
                this.handle.set(this.next);
                Poll::Ready(Some(()))
            }
            other => other,
        }
    }
}

/// [`interval`] for an actor, as actix's `run_interval` is tokio's: `ctx.run_every(period,
/// |act, ctx| ...)` runs the closure on the actor at each of the interval's deadlines until
/// the actor stops or the returned handle is cancelled.
pub trait RunEvery<A: actix::Actor> {
    /// Runs `f` every `period` on this thread's precise timer ([`interval`]).
    fn run_every<F>(&mut self, period: Duration, f: F) -> actix::SpawnHandle
    where
        F: FnMut(&mut A, &mut Self) + 'static;
}

impl<A, C> RunEvery<A> for C
where
    A: actix::Actor<Context = C>,
    C: actix::AsyncContext<A>,
{
    fn run_every<F>(&mut self, period: Duration, mut f: F) -> actix::SpawnHandle
    where
        F: FnMut(&mut A, &mut C) + 'static,
    {
        use actix::fut::ActorStreamExt;
        self.spawn(
            actix::fut::wrap_stream::<_, A>(interval(period))
                .map(move |(), act, ctx| f(act, ctx))
                .finish(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tick on the thread that runs a closure.
    struct FnTick(Box<dyn Fn() -> Fired>);

    impl OnThread for FnTick {
        fn tick(&self) -> Fired {
            (self.0)()
        }
    }

    /// Runs `f` on a current-thread runtime inside a `LocalSet`, as an arbiter would.
    fn on_local_set<F: Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    #[test]
    fn sleeps_complete_in_deadline_order_and_never_more_than_the_coalescing_window_early() {
        on_local_set(async {
            let start = Instant::now();
            let order = Rc::new(RefCell::new(Vec::new()));
            let mut tasks = Vec::new();
            for (i, ms) in [30u64, 10, 20, 10].into_iter().enumerate() {
                let order = order.clone();
                let deadline = start + Duration::from_millis(ms);
                tasks.push(tokio::task::spawn_local(async move {
                    sleep_until(deadline).await;
                    assert!(Instant::now() + COALESCE >= deadline, "fired too early");
                    order.borrow_mut().push((ms, i));
                }));
            }
            // A dropped sleep fires nothing.
            drop(sleep_until(start + Duration::from_millis(5)));
            for t in tasks {
                t.await.unwrap();
            }
            let got: Vec<u64> = order.borrow().iter().map(|&(ms, _)| ms).collect();
            assert_eq!(got, vec![10, 10, 20, 30]);
        });
    }

    #[test]
    fn a_past_deadline_is_ready_at_once() {
        on_local_set(async {
            let t = Instant::now();
            sleep_until(t - Duration::from_millis(1)).await;
            assert!(t.elapsed() < Duration::from_millis(50));
        });
    }

    #[test]
    fn a_repeating_timer_ticks_at_each_deadline_set_and_not_at_a_replaced_one() {
        use futures::StreamExt;
        on_local_set(async {
            let (handle, mut ticks) = ticks();
            let start = Instant::now();
            for k in 1..=3u32 {
                let at = start + Duration::from_millis(10) * k;
                handle.set(at);
                ticks.next().await;
                assert!(Instant::now() + COALESCE >= at, "tick {k} early");
            }
            // Replaced: the earlier deadline does not fire.
            let t = Instant::now();
            handle.set(t + Duration::from_millis(5));
            handle.set(t + Duration::from_millis(60));
            ticks.next().await;
            assert!(t.elapsed() + COALESCE >= Duration::from_millis(60));
            // Cleared: nothing within 30 ms.
            handle.set(Instant::now() + Duration::from_millis(5));
            handle.clear();
            let r = tokio::time::timeout(Duration::from_millis(30), ticks.next()).await;
            assert!(r.is_err(), "a cleared timer ticked");
        });
    }

    #[test]
    fn a_tick_run_on_the_thread_fires_at_each_deadline_without_the_stream_and_wakes_it_when_asked()
    {
        use futures::StreamExt;
        on_local_set(async {
            let start = Instant::now();
            let period = Duration::from_millis(10);
            let runs = Rc::new(RefCell::new(Vec::new()));
            let tick = {
                let runs = runs.clone();
                FnTick(Box::new(move || {
                    let mut runs = runs.borrow_mut();
                    runs.push(Instant::now());
                    let k = runs.len() as u32;
                    Fired {
                        next: Some(start + period * (k + 1)),
                        // The third run asks for the owner.
                        wake: k == 3,
                    }
                }))
            };
            let (handle, mut ticks) = ticks_with(tick);
            handle.run_on_thread(true);
            handle.set(start + period);
            // The stream yields once: at the third run, not at the deadlines before it.
            ticks.next().await;
            let got = runs.borrow().clone();
            assert_eq!(
                got.len(),
                3,
                "the stream yielded at a deadline the tick had"
            );
            for (k, at) in got.iter().enumerate() {
                assert!(
                    *at + COALESCE >= start + period * (k as u32 + 1),
                    "run {k} early"
                );
            }
            // The tick set the next deadline itself; given back, it is the stream's.
            assert_eq!(handle.deadline(), Some(start + period * 4));
            handle.run_on_thread(false);
            ticks.next().await;
            assert!(Instant::now() + COALESCE >= start + period * 4);
            assert_eq!(
                runs.borrow().len(),
                3,
                "the tick ran after it was taken back"
            );
        });
    }

    #[test]
    fn a_wake_asked_for_by_a_thread_tick_is_dropped_when_the_owner_takes_its_ticks_back() {
        use futures::StreamExt;
        on_local_set(async {
            let (handle, mut ticks) = ticks_with(FnTick(Box::new(|| Fired {
                next: None,
                wake: true,
            })));
            handle.run_on_thread(true);
            handle.set(Instant::now() + Duration::from_millis(5));
            // Let the timer task run the tick (it asks for a wake-up; nobody polls yet).
            tokio::time::sleep(Duration::from_millis(30)).await;
            handle.run_on_thread(false);
            // A sleep that proves nothing comes: the wake-up was taken back with the ticks.
            let r = tokio::time::timeout(Duration::from_millis(30), ticks.next()).await;
            assert!(r.is_err(), "the stream yielded for a wake-up taken back");
        });
    }

    #[test]
    fn an_interval_yields_at_exact_multiples_of_its_period_and_skips_what_it_missed() {
        use futures::StreamExt;
        on_local_set(async {
            let period = Duration::from_millis(20);
            let mut iv = interval(period);
            let first = iv.deadline();
            assert_eq!(
                on_grid(first, period),
                first,
                "the first deadline is on the grid"
            );
            for k in 0..3u32 {
                let at = first + period * k;
                iv.next().await;
                assert!(Instant::now() + COALESCE >= at, "tick {k} early");
                assert_eq!(iv.deadline(), at + period);
            }
            // The thread stops for three and a half periods: one tick for the ones
            // missed, then the next multiple still ahead.
            std::thread::sleep(period * 7 / 2);
            let resumed = Instant::now();
            iv.next().await;
            assert!(
                resumed.elapsed() < period / 2,
                "a missed deadline did not yield at once"
            );
            let next = iv.deadline();
            assert!(next > Instant::now());
            assert_eq!((next - first).as_nanos() % period.as_nanos(), 0);
            assert!(next - Instant::now() <= period);
        });
    }

    #[actix_rt::test]
    async fn run_every_runs_on_the_actor_at_each_deadline_until_its_handle_is_cancelled() {
        use actix::prelude::*;
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Arc;

        struct Counter {
            runs: Arc<AtomicU32>,
            every: Option<SpawnHandle>,
        }
        impl Actor for Counter {
            type Context = actix::Context<Self>;
            fn started(&mut self, ctx: &mut Self::Context) {
                self.every = Some(ctx.run_every(Duration::from_millis(10), |act, _| {
                    act.runs.fetch_add(1, Ordering::SeqCst);
                }));
            }
        }
        #[derive(Message)]
        #[rtype(result = "()")]
        struct Cancel;
        impl Handler<Cancel> for Counter {
            type Result = ();
            fn handle(&mut self, _: Cancel, ctx: &mut Self::Context) {
                if let Some(h) = self.every.take() {
                    ctx.cancel_future(h);
                }
            }
        }

        let runs = Arc::new(AtomicU32::new(0));
        let start = Instant::now();
        let addr = Counter {
            runs: runs.clone(),
            every: None,
        }
        .start();
        while runs.load(Ordering::SeqCst) < 3 {
            assert!(
                start.elapsed() < Duration::from_secs(2),
                "ran {runs:?} times"
            );
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        }
        // Three runs take at least two periods after the first deadline.
        assert!(start.elapsed() + COALESCE >= Duration::from_millis(30));
        addr.send(Cancel).await.unwrap();
        let after = runs.load(Ordering::SeqCst);
        // A sleep that proves nothing comes: cancelled, it runs no more.
        actix_rt::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(runs.load(Ordering::SeqCst), after);
    }

    #[test]
    fn grid_deadlines_are_rounded_up_by_less_than_the_grid() {
        let p = Duration::from_millis(100);
        let t = Instant::now() + Duration::from_micros(1234);
        let g = on_grid(t, p);
        assert!(g >= t && g - t < GRID);
        assert_eq!(on_grid(g, p), g);
        let g2 = on_grid(t + Duration::from_micros(7500), p);
        assert_eq!((g2 - g).as_nanos() % GRID.as_nanos(), 0);
        // A short period: a quarter of it.
        let short = Duration::from_millis(2);
        let g3 = on_grid(t, short);
        assert!(g3 >= t && g3 - t < short / 4);
    }
}
