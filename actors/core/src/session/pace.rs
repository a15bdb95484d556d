//! Pacing: what a session may leave unsent or in flight before it writes the next round,
//! and when a client that is not keeping up counts as stalled.
//!
//! A round that cannot reach the client soon is better skipped than queued: the next one
//! carries newer data. Where rounds wait:
//!
//! - in the client's own receive buffer, received (acknowledged) but not yet read: the
//!   client's advertised window has shrunk from the largest it has shown. More than
//!   [`unread_limit`] (three rounds) unread, and rounds are skipped until it reads;
//! - in the session's own buffer (the kernel did not take a whole write): nothing more is
//!   written until it has drained;
//! - in the kernel, unsent (`tcpi_notsent_bytes`): the client is not reading (its window is
//!   closed) or the congestion window is full. A round is written only when nothing of an
//!   earlier one is unsent;
//! - in flight, sent and not acknowledged: on a slow or shared link these wait
//!   in the link's queue, behind each other. While the path's queueing delay (the kernel's
//!   smoothed round trip minus the lowest it has seen) is within [`QUEUE_BUDGET`], rounds
//!   may follow each other into flight (a fast link, or one with room to spare); above it
//!   a round is written only once the previous one is acknowledged: one round in flight
//!   per client, so a client's rate adapts to what its link drains and what it gets is at
//!   most one queue's wait old, never a backlog. Should the acknowledgement be later than
//!   the kernel's round trip plus four deviations (a lost segment or acknowledgement), one
//!   more round is written anyway: it is fresh data, and its arrival makes the kernel
//!   recover the loss at once instead of after its tail-loss timer.
//!
//! The path's lowest round trip is shared: a connection opened while the link already
//! queued saw that queue in every round trip it measured, so by its own lowest figure
//! the path would look calm and it would put rounds in flight behind each other while
//! its neighbours keep one each (on the 802.11 link at 50 clients x 50 Hz the late
//! joiners got up to 2.5 times the rounds of the slowest client). So each session reports its lowest
//! round trip to a process-wide table keyed by the peer's network (/24, or /64 for IPv6;
//! [`PathFloors`], lock-free), and measures queueing from the lowest any session to that
//! network saw in the last 30 seconds. Loopback peers have no entry.
//!
//! Everything comes from one `getsockopt(TCP_INFO)` (and, once per session, one
//! `getpeername`). After a look that found the path calm (not queueing, nothing unsent),
//! the kernel is not asked again until what was written since could amount to two rounds
//! unsent or put the client past the unread limit: on loopback and fast links that is one
//! look every two or three rounds.
//!
//! The window a client last advertised can be stale. A Linux receiver announces a window
//! that reopened on a read only when it at least doubles, so a client that fell a few
//! rounds behind, acknowledged them with a smaller window and then read them all still
//! looks, to us, as if they waited unread; with no round sent, it sends nothing that would
//! say otherwise (until a keepalive probe, seconds later, or never with keepalive off).
//! So while the unread rule alone holds rounds back and nothing is in flight, one round
//! goes anyway after [`PROBE_FIRST`], its acknowledgement carrying the client's current
//! window. The wait doubles with each such round, up to [`PROBE_MAX`], and is back to the
//! first step only once a window shows the client keeping up (a round or less unread): a
//! client that really does not read, or reads slower than it is sent, gets at most one
//! round a second more than the unread rule alone would give it.
//!
//! A client is stalled when rounds are skipped and for `stall_timeout` it has neither
//! acknowledged anything new nor opened its window: a client that reads slowly does one
//! or the other, and is kept. (The acknowledgement of a round sent only to hear the
//! window is not progress: a client that does not read is still stalled.)

use std::net::IpAddr;
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Queueing delay on the path (smoothed round trip minus the lowest seen) up to which a
/// session may put a round in flight behind unacknowledged ones.
pub const QUEUE_BUDGET: Duration = Duration::from_millis(50);

/// How long after the last round, while only the unread rule holds rounds back and nothing
/// is in flight, one round goes anyway to hear the client's current window.
pub const PROBE_FIRST: Duration = Duration::from_millis(50);

/// The longest wait between such rounds (it doubles from [`PROBE_FIRST`] until the client
/// is seen keeping up): below the 2 s keepalive that would otherwise be the only thing to
/// refresh a stale window.
pub const PROBE_MAX: Duration = Duration::from_secs(1);

/// What the kernel says about a connection's sending side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendQueue {
    /// Bytes written and not yet acknowledged, unsent ones included.
    pub outstanding: u32,
    /// Of those, bytes not yet sent.
    pub unsent: u32,
    /// Smoothed round trip.
    pub srtt: Duration,
    /// Its mean deviation.
    pub rttvar: Duration,
    /// The lowest round trip seen lately (zero: unknown).
    pub min_rtt: Duration,
    /// Bytes the client has acknowledged since the connection opened.
    pub acked: u64,
    /// The client's advertised receive window (its free buffer space, as last told).
    pub window: u32,
}

/// Whether a round the unread rule holds back goes anyway to hear the client's window
/// (module documentation): the client's last window says more than `unread_limit` bytes
/// wait unread, nothing is in flight or unsent (so no acknowledgement is coming), and the
/// last round was at least `wait` ago. Pure.
pub fn probe_due(
    q: &SendQueue,
    since_last_round: Option<Duration>,
    unread: u32,
    unread_limit: u32,
    wait: Duration,
) -> bool {
    unread > unread_limit
        && q.outstanding == 0
        && q.unsent == 0
        && since_last_round.is_some_and(|d| d >= wait)
}

/// The wait before the next such round after one was sent.
pub fn next_probe_wait(wait: Duration) -> Duration {
    (wait * 2).clamp(PROBE_FIRST, PROBE_MAX)
}

/// Whether a round may be written now, given the send queue, how long ago the last round
/// was written (`None`: never), and how many bytes the client has received but not read
/// (`unread`, from its advertised window) against `unread_limit`. Pure: the rule of the
/// module's documentation.
pub fn may_write(
    q: &SendQueue,
    since_last_round: Option<Duration>,
    unread: u32,
    unread_limit: u32,
) -> bool {
    if unread > unread_limit {
        return false;
    }
    if q.outstanding == 0 {
        return true;
    }
    if q.unsent > 0 {
        return false;
    }
    let queueing = q.srtt.saturating_sub(q.min_rtt);
    if queueing <= QUEUE_BUDGET {
        return true;
    }
    // Above the budget: one round in flight, unless its acknowledgement is overdue.
    let overdue = q.srtt + 4 * q.rttvar;
    since_last_round.is_none_or(|d| d >= overdue)
}

/// `q` with its lowest round trip taken as the path's floor when that is lower: what a
/// connection that opened while the path already queued saw as its lowest round trip
/// includes that queue, so by its own figure alone it would see no queueing and put
/// rounds in flight behind each other while its neighbours keep one each.
pub fn with_floor(q: SendQueue, floor: Option<Duration>) -> SendQueue {
    match floor {
        Some(f) if !f.is_zero() && (q.min_rtt.is_zero() || f < q.min_rtt) => {
            SendQueue { min_rtt: f, ..q }
        }
        _ => q,
    }
}

// ----- path floors ---------------------------------------------------------------------

/// Seconds a path floor stands without a session confirming it.
const FLOOR_TTL_S: u64 = 30;
/// Seconds after which a session that sees the same floor renews its stamp.
const FLOOR_RENEW_S: u64 = 2;

/// The network a peer address belongs to, as a key of [`PathFloors`]: its /24 (IPv4,
/// IPv4-mapped IPv6 included) or /64 (IPv6). Clients on one network share the path to
/// it, so the lowest round trip any of them has seen is that path's floor. `None` for
/// loopback and unspecified addresses: there is no shared path to learn.
pub fn network_key(addr: IpAddr) -> Option<u64> {
    let addr = match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    if addr.is_loopback() || addr.is_unspecified() {
        return None;
    }
    let raw = match addr {
        IpAddr::V4(v4) => u64::from(u32::from(v4) >> 8) | (4 << 56),
        IpAddr::V6(v6) => ((u128::from(v6) >> 64) as u64) ^ (6 << 56),
    };
    // Spread the bits (a multiplicative hash): slot and tag come from different ones.
    Some(raw.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
}

/// The lowest round trip lately seen on the path to each network (by [`network_key`]),
/// shared by every session of the process without locks: one atomic word per slot
/// holding a 16-bit tag of the key, a 16-bit stamp in seconds and the round trip in
/// microseconds. A slot taken by another network, or not renewed for [`FLOOR_TTL_S`]
/// seconds, knows nothing; the floor is a hint, so a lost race costs nothing but a
/// renewal.
pub struct PathFloors {
    slots: [AtomicU64; PathFloors::SLOTS],
}

impl Default for PathFloors {
    fn default() -> Self {
        PathFloors {
            slots: [const { AtomicU64::new(0) }; PathFloors::SLOTS],
        }
    }
}

impl PathFloors {
    const SLOTS: usize = 256;

    fn slot(&self, key: u64) -> &AtomicU64 {
        &self.slots[(key >> 56) as usize % Self::SLOTS]
    }

    fn tag(key: u64) -> u64 {
        (key >> 16) & 0xffff
    }

    /// The slot's round trip (us) if it is `key`'s and fresh at `now_s`, with its age.
    fn read(v: u64, key: u64, now_s: u64) -> Option<(u32, u64)> {
        if v == 0 || v >> 48 != Self::tag(key) {
            return None;
        }
        let age = now_s.wrapping_sub(v >> 32) & 0xffff;
        (age <= FLOOR_TTL_S).then_some((v as u32, age))
    }

    /// The floor of `key`'s path at `now_s` (seconds on any steady clock).
    pub fn get(&self, key: u64, now_s: u64) -> Option<Duration> {
        Self::read(self.slot(key).load(Ordering::Relaxed), key, now_s)
            .map(|(us, _)| Duration::from_micros(u64::from(us)))
    }

    /// A session on `key`'s path saw `min_rtt` as its lowest round trip: it becomes the
    /// floor if lower than the standing one or if none stands, and renews it if equal.
    pub fn report(&self, key: u64, now_s: u64, min_rtt: Duration) {
        if min_rtt.is_zero() {
            return;
        }
        let us = min_rtt.as_micros().min(u128::from(u32::MAX)) as u32;
        let slot = self.slot(key);
        let v = slot.load(Ordering::Relaxed);
        let renew = match Self::read(v, key, now_s) {
            None => true,
            Some((floor, age)) => us < floor || (us == floor && age >= FLOOR_RENEW_S),
        };
        if renew {
            let new = (Self::tag(key) << 48) | ((now_s & 0xffff) << 32) | u64::from(us);
            // A racing session may have written meanwhile: then its word stands.
            let _ = slot.compare_exchange(v, new, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

/// The process's path floors, and the instant its seconds count from.
fn floors() -> &'static (PathFloors, Instant) {
    static FLOORS: OnceLock<(PathFloors, Instant)> = OnceLock::new();
    FLOORS.get_or_init(|| (PathFloors::default(), Instant::now()))
}

/// The network key of `fd`'s peer (one `getpeername`, once per session).
// Unsafe code: the session's socket borrowed by its raw descriptor, for getpeername(2).
#[allow(unsafe_code)]
fn peer_key(fd: RawFd) -> Option<u64> {
    // SAFETY: the caller's socket stays open for the duration of this call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let addr = socket2::SockRef::from(&fd).peer_addr().ok()?;
    network_key(addr.as_socket()?.ip())
}

/// The send queue of `fd` from one `TCP_INFO`; `None` if the kernel will not say.
// Unsafe code: getsockopt(TCP_INFO) (a Linux call).
#[allow(unsafe_code)]
fn send_queue(fd: RawFd) -> Option<SendQueue> {
    // SAFETY: tcp_info is plain data; all-zero is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `info`, which we own.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    // Older kernels fill less; everything up to `tcpi_snd_wnd` (Linux 5.4) is needed.
    let needed = std::mem::offset_of!(libc::tcp_info, tcpi_snd_wnd) + 4;
    if rc != 0 || (len as usize) < needed {
        return None;
    }
    let us = |v: u32| Duration::from_micros(u64::from(v));
    // Sent and not acknowledged: new data sent (retransmissions aside) less what is acked.
    let in_flight = info
        .tcpi_bytes_sent
        .saturating_sub(info.tcpi_bytes_retrans)
        .saturating_sub(info.tcpi_bytes_acked);
    Some(SendQueue {
        outstanding: (in_flight + u64::from(info.tcpi_notsent_bytes)).min(u64::from(u32::MAX))
            as u32,
        unsent: info.tcpi_notsent_bytes,
        srtt: us(info.tcpi_rtt),
        rttvar: us(info.tcpi_rttvar),
        min_rtt: us(info.tcpi_min_rtt),
        acked: info.tcpi_bytes_acked,
        window: info.tcpi_snd_wnd,
    })
}

/// What one look at the socket found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    /// A round may be written now.
    pub send: bool,
    /// The client acknowledged something since the last look (it is reading).
    pub progress: bool,
}

/// A session's pacing state.
#[derive(Debug, Default)]
pub struct Pacer {
    last_round: Option<Instant>,
    last_round_len: u32,
    /// Bytes written (rounds, replies, notices) since the kernel was last asked.
    written_since_look: usize,
    /// After a look that found a calm path (no queueing, nothing unsent) and let a round
    /// go: the bytes then unread by the client. Until what was written since could take
    /// it past a limit, the next round needs no look.
    calm_unread: Option<u32>,
    acked: u64,
    window: u32,
    /// The largest window the client has advertised: its buffer when it has read all.
    max_window: u32,
    /// The network key of the peer (`None` until first looked up; then `Some(None)` for
    /// loopback and the like).
    peer: Option<Option<u64>>,
    /// The wait before a round sent only to hear the client's window (zero: the first,
    /// [`PROBE_FIRST`]); doubles with each, back to the first once the client keeps up.
    probe_wait: Duration,
    /// The last round was sent only to hear the window: its acknowledgement alone is not
    /// progress.
    probed: bool,
}

impl Pacer {
    /// Looks at socket `fd` before a round; `own_unsent`: the session still holds bytes
    /// the kernel did not take.
    pub fn look(&mut self, fd: RawFd, own_unsent: bool, now: Instant) -> Look {
        if !own_unsent {
            if let Some(unread) = self.calm_unread {
                let w = self.written_since_look as u64;
                let limit = u64::from(unread_limit(self.last_round_len));
                // Unsent and unread can only have grown by what was written since.
                if w <= 2 * u64::from(self.last_round_len) && u64::from(unread) + w <= limit {
                    return Look {
                        send: true,
                        progress: false,
                    };
                }
            }
        }
        self.written_since_look = 0;
        self.calm_unread = None;
        let Some(mut q) = send_queue(fd) else {
            // The kernel will not say: keep only our own buffer's rule.
            return Look {
                send: !own_unsent,
                progress: false,
            };
        };
        if let Some(key) = *self.peer.get_or_insert_with(|| peer_key(fd)) {
            let (table, epoch) = floors();
            let now_s = now.saturating_duration_since(*epoch).as_secs();
            table.report(key, now_s, q.min_rtt);
            q = with_floor(q, table.get(key, now_s));
        }
        // Reading: it acknowledged more (not only a round sent to hear its window), or its
        // window opened (it read what it had).
        let progress = (q.acked > self.acked && !self.probed) || q.window > self.window;
        self.acked = self.acked.max(q.acked);
        self.window = q.window;
        self.max_window = self.max_window.max(q.window);
        let unread = self.max_window - q.window;
        let since = self.last_round.map(|t| now.saturating_duration_since(t));
        let limit = unread_limit(self.last_round_len);
        let send = !own_unsent && may_write(&q, since, unread, limit);
        let wait = self.probe_wait.max(PROBE_FIRST);
        let probe = !own_unsent && !send && probe_due(&q, since, unread, limit, wait);
        if unread <= self.last_round_len {
            // Keeping up (at most the round on its way to being read): probing starts over.
            self.probe_wait = Duration::ZERO;
        }
        if send {
            self.probed = false;
        } else if probe {
            self.probe_wait = next_probe_wait(wait);
            self.probed = true;
        }
        let calm = q.unsent == 0 && q.srtt.saturating_sub(q.min_rtt) <= QUEUE_BUDGET;
        if send && calm {
            self.calm_unread = Some(unread);
        }
        Look {
            send: send || probe,
            progress,
        }
    }

    /// A round of `len` bytes was written at `now`.
    pub fn wrote_round(&mut self, now: Instant, len: usize) {
        self.last_round = Some(now);
        self.last_round_len = len.min(u32::MAX as usize) as u32;
        self.written_since_look += len;
    }

    /// Bytes other than a round (replies, notices) were written.
    pub fn wrote(&mut self, len: usize) {
        self.written_since_look += len;
    }
}

/// Bytes a client may have received and left unread before its rounds are skipped: three
/// rounds (one acknowledged before it was read, one of the window's rounding, one waiting),
/// and at least 2 KiB, so that the window's granularity never holds back a client that
/// reads everything.
pub fn unread_limit(round_len: u32) -> u32 {
    (3 * round_len).max(2048)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn queue(outstanding: u32, unsent: u32, srtt: u64, min_rtt: u64) -> SendQueue {
        SendQueue {
            outstanding,
            unsent,
            srtt: ms(srtt),
            rttvar: ms(5),
            min_rtt: ms(min_rtt),
            acked: 0,
            window: 65535,
        }
    }

    #[test]
    fn a_round_goes_to_hear_a_window_that_may_be_stale() {
        let quiet = queue(0, 0, 1, 1);
        // Rounds unread by the client's last window, nothing in flight: after the wait.
        assert!(!probe_due(&quiet, Some(ms(49)), 2400, 2352, PROBE_FIRST));
        assert!(probe_due(&quiet, Some(ms(50)), 2400, 2352, PROBE_FIRST));
        // Within the limit the unread rule holds nothing back: no reason to probe.
        assert!(!probe_due(&quiet, Some(ms(500)), 2352, 2352, PROBE_FIRST));
        // Something in flight or unsent: its acknowledgement will tell.
        for busy in [queue(784, 0, 1, 1), queue(784, 784, 1, 1)] {
            assert!(!probe_due(&busy, Some(ms(500)), 2400, 2352, PROBE_FIRST));
        }
        // No round yet: nothing can be unread.
        assert!(!probe_due(&quiet, None, 2400, 2352, PROBE_FIRST));
    }

    #[test]
    fn the_wait_between_such_rounds_doubles_up_to_a_second() {
        let mut w = PROBE_FIRST;
        let mut waits = vec![w];
        for _ in 0..6 {
            w = next_probe_wait(w);
            waits.push(w);
        }
        assert_eq!(waits, [50, 100, 200, 400, 800, 1000, 1000].map(ms).to_vec());
    }

    #[test]
    fn nothing_outstanding_always_sends() {
        assert!(may_write(&queue(0, 0, 900, 4), Some(ms(0)), 0, 4096));
    }

    #[test]
    fn unsent_bytes_hold_the_next_round() {
        // Even on a path that does not queue: the client's window is closed.
        assert!(!may_write(&queue(5000, 778, 1, 1), Some(ms(1000)), 0, 4096));
    }

    #[test]
    fn in_flight_rounds_may_follow_each_other_while_the_path_does_not_queue() {
        // A long but empty path (an intercontinental link): 150 ms round trip, no queue.
        assert!(may_write(&queue(1556, 0, 150, 148), Some(ms(1)), 0, 4096));
        // A queue within the budget.
        assert!(may_write(&queue(778, 0, 54, 4), Some(ms(1)), 0, 4096));
        assert!(!may_write(&queue(778, 0, 55, 4), Some(ms(1)), 0, 4096));
    }

    #[test]
    fn a_queueing_path_gets_one_round_in_flight() {
        let q = queue(778, 0, 180, 6);
        assert!(!may_write(&q, Some(ms(100)), 0, 4096));
        assert!(!may_write(&q, Some(ms(199)), 0, 4096));
        // Overdue (180 + 4 x 5 ms): one more round to prompt the recovery.
        assert!(may_write(&q, Some(ms(200)), 0, 4096));
        assert!(may_write(&q, None, 0, 4096));
    }

    #[test]
    fn a_client_with_rounds_unread_in_its_buffer_gets_no_more() {
        // Everything acknowledged, but two rounds and more wait unread at the client.
        assert!(!may_write(
            &queue(0, 0, 1, 1),
            None,
            2335,
            unread_limit(778)
        ));
        assert!(may_write(&queue(0, 0, 1, 1), None, 2334, unread_limit(778)));
        assert_eq!(unread_limit(59), 2048);
    }

    #[test]
    fn a_late_joiner_is_held_to_one_round_in_flight_by_the_path_floor() {
        // It connected while the link queued: its own lowest round trip (140 ms) is
        // mostly queue, so by itself it sees 45 ms of queueing and would pipeline.
        let late = queue(784, 0, 185, 140);
        assert!(may_write(&late, Some(ms(20)), 0, 4096));
        // A neighbour on the same network saw the empty path (4 ms): 181 ms queue.
        let held = with_floor(late, Some(ms(4)));
        assert_eq!(held.min_rtt, ms(4));
        assert!(!may_write(&held, Some(ms(20)), 0, 4096));
        // A floor above its own figure, or none, changes nothing.
        assert_eq!(with_floor(late, Some(ms(150))), late);
        assert_eq!(with_floor(late, None), late);
    }

    #[test]
    fn networks_are_keyed_by_prefix_and_loopback_has_none() {
        let key = |s: &str| network_key(s.parse().unwrap());
        assert_eq!(key("10.213.0.2"), key("10.213.0.77"));
        assert_ne!(key("10.213.0.2"), key("10.213.1.2"));
        assert_eq!(key("::ffff:10.213.0.2"), key("10.213.0.9"));
        assert_eq!(key("2001:db8::1"), key("2001:db8::2:1"));
        assert_ne!(key("2001:db8::1"), key("2001:db8:0:1::1"));
        assert!(key("10.213.0.2").is_some());
        assert_eq!(key("127.0.0.1"), None);
        assert_eq!(key("::1"), None);
        assert_eq!(key("::ffff:127.0.0.1"), None);
        assert_eq!(key("0.0.0.0"), None);
    }

    #[test]
    fn a_path_floor_is_the_lowest_fresh_report() {
        let t = PathFloors::default();
        let a = network_key("10.213.0.2".parse().unwrap()).unwrap();
        let b = network_key("192.168.7.3".parse().unwrap()).unwrap();
        assert_eq!(t.get(a, 100), None);
        t.report(a, 100, ms(140));
        assert_eq!(t.get(a, 100), Some(ms(140)));
        // Lower wins; higher does not raise it.
        t.report(a, 101, ms(4));
        t.report(a, 102, ms(90));
        assert_eq!(t.get(a, 102), Some(ms(4)));
        // Another network knows nothing of it.
        assert_eq!(t.get(b, 102), None);
        // Unrenewed, it lapses; then any report stands.
        assert_eq!(t.get(a, 101 + FLOOR_TTL_S), Some(ms(4)));
        assert_eq!(t.get(a, 102 + FLOOR_TTL_S), None);
        t.report(a, 102 + FLOOR_TTL_S, ms(90));
        assert_eq!(t.get(a, 102 + FLOOR_TTL_S), Some(ms(90)));
        // The session that holds the floor renews it.
        t.report(a, 200, ms(4));
        t.report(a, 200 + FLOOR_TTL_S - 1, ms(4));
        assert_eq!(t.get(a, 200 + FLOOR_TTL_S + 5), Some(ms(4)));
        // Stamps wrap after 2^16 seconds without harm.
        t.report(a, 65_535, ms(3));
        assert_eq!(t.get(a, 65_536 + 10), Some(ms(3)));
        // A zero round trip (unknown) is no report.
        t.report(b, 300, Duration::ZERO);
        assert_eq!(t.get(b, 300), None);
    }
}
