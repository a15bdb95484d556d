//! Bytes from the wire (or from a device) for log lines: printed escaped, never raw, so no
//! client or device can split or forge a log line.

use std::fmt::Write;
use std::time::{Duration, Instant};

/// A device code (or any byte from the wire) for a log line: `'p'` when printable,
/// `0x0a` otherwise.
pub fn code(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("'{}'", char::from(b))
    } else {
        format!("{b:#04x}")
    }
}

/// Bytes from the wire for a log line: printable ASCII as is, everything else (and the
/// backslash) as `\xNN`; at most `max` bytes shown, with the total when cut.
pub fn escape(bytes: &[u8], max: usize) -> String {
    let mut s = String::with_capacity(bytes.len().min(max) + 8);
    for &b in bytes.iter().take(max) {
        if (b.is_ascii_graphic() || b == b' ') && b != b'\\' {
            s.push(char::from(b));
        } else {
            let _ = write!(s, "\\x{b:02x}");
        }
    }
    if bytes.len() > max {
        let _ = write!(s, "... ({} bytes)", bytes.len());
    }
    s
}

/// A device code for a log line: the manual's name (`position`) for its codes, the code
/// itself (`'o'`) for any other, so a plugin's device is never just "unknown".
pub fn device(code: u8) -> String {
    #[cfg(feature = "actors")]
    {
        let name = player_proto::device::name(code);
        if name != "unknown" {
            return name.to_string();
        }
    }
    self::code(code)
}

/// Rate limits for log lines, per kind: at most `burst` lines of a kind per `window`; what
/// is over is counted, and the next line of that kind that is let through carries the count.
/// The kind is any key: a `&'static str` naming the line (one client's warnings, one
/// program's output), or a place in the code (the log drain's limit on each client's lines,
/// `player_core::logging`). Its memory is one entry per kind seen.
#[derive(Debug)]
pub struct Throttle<K = &'static str> {
    window: Duration,
    burst: u32,
    kinds: Vec<Kind<K>>,
}

/// One kind's window: its key, when the window began, lines let through in it, lines
/// held back since the last one let through.
#[derive(Debug)]
struct Kind<K> {
    key: K,
    since: Instant,
    passed: u32,
    held: u64,
}

impl<K> Default for Throttle<K> {
    fn default() -> Self {
        Throttle::new(Duration::from_secs(10), 5)
    }
}

impl<K> Throttle<K> {
    /// At most `burst` lines per kind per `window`.
    pub fn new(window: Duration, burst: u32) -> Self {
        Throttle {
            window,
            burst,
            kinds: Vec::new(),
        }
    }

    /// Lines suppressed and never reported, over every kind (for a last line when the
    /// client leaves).
    pub fn pending(&self) -> u64 {
        self.kinds.iter().map(|k| k.held).sum()
    }

    /// Whether every kind's window has ended: the throttle would let a line of any kind
    /// through now, as a new one would (an owner that keeps its own count of what was held
    /// back may drop it).
    pub fn idle(&self, now: Instant) -> bool {
        self.kinds
            .iter()
            .all(|k| now.duration_since(k.since) >= self.window)
    }
}

impl<K: PartialEq> Throttle<K> {
    /// Whether a line of `kind` may be logged now; `Some(n)`: yes, and `n` lines of this
    /// kind were suppressed since the last one logged.
    pub fn allow(&mut self, kind: K) -> Option<u64> {
        self.allow_at(kind, Instant::now())
    }

    /// [`Throttle::allow`] at the instant `now`.
    pub fn allow_at(&mut self, key: K, now: Instant) -> Option<u64> {
        let i = match self.kinds.iter().position(|k| k.key == key) {
            Some(i) => i,
            None => {
                self.kinds.push(Kind {
                    key,
                    since: now,
                    passed: 0,
                    held: 0,
                });
                self.kinds.len() - 1
            }
        };
        let k = &mut self.kinds[i];
        if now.duration_since(k.since) >= self.window {
            k.since = now;
            k.passed = 0;
        }
        if k.passed < self.burst {
            k.passed += 1;
            Some(std::mem::take(&mut k.held))
        } else {
            k.held += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_over_its_burst_is_held_back_and_counted_until_its_window_ends() {
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut t = Throttle::new(10 * s, 2);
        assert_eq!(t.allow_at(("a.rs", 1), t0), Some(0));
        assert_eq!(t.allow_at(("a.rs", 1), t0), Some(0));
        assert_eq!(t.allow_at(("a.rs", 1), t0 + s), None);
        assert_eq!(
            t.allow_at(("a.rs", 2), t0 + s),
            Some(0),
            "kinds are separate"
        );
        assert_eq!(t.pending(), 1);
        assert!(t.idle(t0 + 11 * s), "every window is over");
        assert_eq!(t.allow_at(("a.rs", 1), t0 + 10 * s), Some(1));
        assert!(t.idle(t0 + 21 * s));
        assert!(!t.idle(t0 + 15 * s), "a window still runs");
    }
}
