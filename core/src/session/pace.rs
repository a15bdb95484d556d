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
//! Everything comes from one `getsockopt(TCP_INFO)`. After a look that found the path calm
//! (not queueing, nothing unsent), the kernel is not asked again until what was written
//! since could amount to two rounds unsent or put the client past the unread limit: on
//! loopback and fast links that is one look every two or three rounds.
//!
//! A client is stalled when rounds are skipped and for `stall_timeout` it has neither
//! acknowledged anything new nor opened its window: a client that reads slowly does one
//! or the other, and is kept.

use std::os::fd::RawFd;
use std::time::{Duration, Instant};

/// Queueing delay on the path (smoothed round trip minus the lowest seen) up to which a
/// session may put a round in flight behind unacknowledged ones.
pub const QUEUE_BUDGET: Duration = Duration::from_millis(50);

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

/// The send queue of `fd` from one `TCP_INFO`; `None` if the kernel will not say.
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
        let Some(q) = send_queue(fd) else {
            // The kernel will not say: keep only our own buffer's rule.
            return Look {
                send: !own_unsent,
                progress: false,
            };
        };
        // Reading: it acknowledged more, or its window opened (it read what it had).
        let progress = q.acked > self.acked || q.window > self.window;
        self.acked = self.acked.max(q.acked);
        self.window = q.window;
        self.max_window = self.max_window.max(q.window);
        let unread = self.max_window - q.window;
        let since = self.last_round.map(|t| now.saturating_duration_since(t));
        let send = !own_unsent && may_write(&q, since, unread, unread_limit(self.last_round_len));
        let calm = q.unsent == 0 && q.srtt.saturating_sub(q.min_rtt) <= QUEUE_BUDGET;
        if send && calm {
            self.calm_unread = Some(unread);
        }
        Look { send, progress }
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
}
