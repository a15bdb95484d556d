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

/// Rate limits for log lines (one client's warnings, one program's output), per kind: at most `burst` lines of a kind per
/// `window`; what is over is counted, and the next line of that kind that is let through
/// carries the count.
#[derive(Debug)]
pub struct Throttle {
    window: Duration,
    burst: u32,
    kinds: Vec<(&'static str, Instant, u32, u64)>,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new(Duration::from_secs(10), 5)
    }
}

impl Throttle {
    /// At most `burst` lines per kind per `window`.
    pub fn new(window: Duration, burst: u32) -> Self {
        Throttle {
            window,
            burst,
            kinds: Vec::new(),
        }
    }

    /// Whether a line of `kind` may be logged now; `Some(n)`: yes, and `n` lines of this
    /// kind were suppressed since the last one logged.
    pub fn allow(&mut self, kind: &'static str) -> Option<u64> {
        let now = Instant::now();
        let i = match self.kinds.iter().position(|k| k.0 == kind) {
            Some(i) => i,
            None => {
                self.kinds.push((kind, now, 0, 0));
                self.kinds.len() - 1
            }
        };
        let k = &mut self.kinds[i];
        if now.duration_since(k.1) >= self.window {
            k.1 = now;
            k.2 = 0;
        }
        if k.2 < self.burst {
            k.2 += 1;
            Some(std::mem::take(&mut k.3))
        } else {
            k.3 += 1;
            None
        }
    }

    /// Lines suppressed and never reported, per kind (for a last line when the client
    /// leaves).
    pub fn pending(&self) -> u64 {
        self.kinds.iter().map(|k| k.3).sum()
    }
}
