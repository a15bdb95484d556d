//! Bytes from the wire (or from a device) for log lines: printed escaped, never raw, so no
//! client or device can split or forge a log line.

use std::fmt::Write;

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
