//! CDR as ROS 2 puts it on the wire (OMG CDR, "XCDR1", what Fast-CDR writes for
//! `rmw_zenoh` and `rclpy.serialization`): a 4-byte encapsulation header `00 01 00 00`
//! (CDR, little-endian), then the fields in order, each primitive aligned to its own size
//! counted from the end of the header; a string is a `u32` length counting its NUL, the
//! bytes and the NUL; a sequence is a `u32` count then its elements; a fixed array is its
//! elements alone.
//!
//! [`Writer`] builds a payload; [`Reader`] takes one apart without trusting it: every
//! length is checked against the bytes left before anything is allocated.

use thiserror::Error;

/// The encapsulation header of a little-endian CDR payload.
pub const ENCAPSULATION_LE: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// The encapsulation header of a big-endian CDR payload (accepted by [`Reader`]).
pub const ENCAPSULATION_BE: [u8; 4] = [0x00, 0x00, 0x00, 0x00];

/// Why a CDR payload could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CdrError {
    /// The payload is shorter than the 4-byte encapsulation header.
    #[error("CDR payload of {0} bytes has no encapsulation header")]
    NoHeader(usize),
    /// The encapsulation is not plain CDR (e.g. XCDR2 or parameter lists).
    #[error("unsupported CDR encapsulation {0:02x} {1:02x}")]
    Encapsulation(u8, u8),
    /// A field runs past the end of the payload.
    #[error("CDR field at offset {at} needs {need} bytes, {left} left")]
    Truncated {
        /// Offset of the field after the header.
        at: usize,
        /// Bytes it needs.
        need: usize,
        /// Bytes the payload has left.
        left: usize,
    },
    /// A string is not NUL-terminated UTF-8.
    #[error("CDR string at offset {0} is not NUL-terminated UTF-8")]
    BadString(usize),
    /// A sequence or string is longer than the reader allows.
    #[error("CDR length {len} at offset {at} exceeds the limit {max}")]
    TooLong {
        /// Offset of the length field.
        at: usize,
        /// The length read.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// Builds one CDR payload, little-endian, header included.
#[derive(Debug, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Default for Writer {
    fn default() -> Self {
        Self::with_capacity(64)
    }
}

impl Writer {
    /// An empty payload (just the header) with room for `n` bytes of fields.
    pub fn with_capacity(n: usize) -> Self {
        let mut buf = Vec::with_capacity(n + ENCAPSULATION_LE.len());
        buf.extend_from_slice(&ENCAPSULATION_LE);
        Writer { buf }
    }

    /// Pads with zeros until the offset after the header is a multiple of `n`.
    fn align(&mut self, n: usize) {
        let at = self.buf.len() - ENCAPSULATION_LE.len();
        let pad = (n - at % n) % n;
        self.buf.resize(self.buf.len() + pad, 0);
    }

    /// A `uint8`, `char`, `byte` or `bool`.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }

    /// A `bool` (one byte, 0 or 1).
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u8(u8::from(v))
    }

    /// A `uint32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// An `int32`.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A `float32`.
    pub fn f32(&mut self, v: f32) -> &mut Self {
        self.align(4);
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A `float64`.
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.align(8);
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// A `string`: length with the NUL, bytes, NUL. A NUL inside `s` ends it early for a
    /// C reader; callers pass names without one.
    pub fn string(&mut self, s: &str) -> &mut Self {
        self.u32(s.len() as u32 + 1);
        self.buf.extend_from_slice(s.as_bytes());
        self.buf.push(0);
        self
    }

    /// A `float32[]` (unbounded sequence).
    pub fn f32_seq(&mut self, v: &[f32]) -> &mut Self {
        self.f32_iter(v.iter().copied())
    }

    /// A `float32[]` (unbounded sequence) from an iterator of known length.
    pub fn f32_iter(&mut self, v: impl ExactSizeIterator<Item = f32>) -> &mut Self {
        self.u32(v.len() as u32);
        for x in v {
            self.buf.extend_from_slice(&x.to_le_bytes());
        }
        self
    }

    /// An `int8[]` (unbounded sequence).
    pub fn i8_seq(&mut self, v: &[i8]) -> &mut Self {
        self.u32(v.len() as u32);
        self.buf.extend(v.iter().map(|&x| x as u8));
        self
    }

    /// A sequence's count; the caller writes the elements.
    pub fn seq_len(&mut self, n: usize) -> &mut Self {
        self.u32(n as u32)
    }

    /// A `float64[N]` (fixed array: no count).
    pub fn f64_array(&mut self, v: &[f64]) -> &mut Self {
        for &x in v {
            self.f64(x);
        }
        self
    }

    /// The payload, header included.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }

    /// Bytes written so far, header included.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether only the header is written.
    pub fn is_empty(&self) -> bool {
        self.buf.len() == ENCAPSULATION_LE.len()
    }
}

/// Reads one CDR payload; every read is bounds-checked.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    body: &'a [u8],
    at: usize,
    little: bool,
}

impl<'a> Reader<'a> {
    /// A reader over `payload`, which must start with a plain CDR encapsulation header
    /// (little- or big-endian).
    pub fn new(payload: &'a [u8]) -> Result<Self, CdrError> {
        if payload.len() < 4 {
            return Err(CdrError::NoHeader(payload.len()));
        }
        let little = match (payload[0], payload[1]) {
            (0x00, 0x01) => true,
            (0x00, 0x00) => false,
            (a, b) => return Err(CdrError::Encapsulation(a, b)),
        };
        Ok(Reader {
            body: &payload[4..],
            at: 0,
            little,
        })
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.body.len() - self.at
    }

    fn take(&mut self, align: usize, n: usize) -> Result<&'a [u8], CdrError> {
        let pad = (align - self.at % align) % align;
        let start = self.at + pad;
        let left = self.body.len().saturating_sub(start);
        if left < n {
            return Err(CdrError::Truncated {
                at: start,
                need: n,
                left,
            });
        }
        self.at = start + n;
        Ok(&self.body[start..start + n])
    }

    fn four(&mut self) -> Result<[u8; 4], CdrError> {
        let b = self.take(4, 4)?;
        let a = [b[0], b[1], b[2], b[3]];
        Ok(if self.little {
            a
        } else {
            [a[3], a[2], a[1], a[0]]
        })
    }

    /// A `uint8`.
    pub fn u8(&mut self) -> Result<u8, CdrError> {
        Ok(self.take(1, 1)?[0])
    }

    /// A `uint32`.
    pub fn u32(&mut self) -> Result<u32, CdrError> {
        Ok(u32::from_le_bytes(self.four()?))
    }

    /// An `int32`.
    pub fn i32(&mut self) -> Result<i32, CdrError> {
        Ok(i32::from_le_bytes(self.four()?))
    }

    /// A `float32`.
    pub fn f32(&mut self) -> Result<f32, CdrError> {
        Ok(f32::from_le_bytes(self.four()?))
    }

    /// A `float64`.
    pub fn f64(&mut self) -> Result<f64, CdrError> {
        let b = self.take(8, 8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        if !self.little {
            a.reverse();
        }
        Ok(f64::from_le_bytes(a))
    }

    /// A `string` of at most `max` bytes (without its NUL). The length is checked against
    /// `max` and the bytes left before the string is copied.
    pub fn string(&mut self, max: usize) -> Result<String, CdrError> {
        let at = self.at;
        let len = self.u32()? as usize;
        if len == 0 {
            // Some writers send an empty string as length 0 with no NUL.
            return Ok(String::new());
        }
        if len - 1 > max {
            return Err(CdrError::TooLong {
                at,
                len: len - 1,
                max,
            });
        }
        let b = self.take(1, len)?;
        let (text, nul) = b.split_at(len - 1);
        if nul != [0] {
            return Err(CdrError::BadString(at));
        }
        std::str::from_utf8(text)
            .map(str::to_owned)
            .map_err(|_| CdrError::BadString(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_start_with_the_little_endian_cdr_header() {
        let w = Writer::default();
        assert!(w.is_empty());
        assert_eq!(w.finish(), vec![0, 1, 0, 0]);
    }

    #[test]
    fn primitives_align_to_their_size_after_the_header() {
        let mut w = Writer::default();
        w.u8(7).u32(1).u8(2).f64(1.5).u8(3).f32(2.0);
        let b = w.finish();
        // u8 at 0, pad 3, u32 at 4, u8 at 8, pad 7, f64 at 16, u8 at 24, pad 3, f32 at 28.
        assert_eq!(b.len(), 4 + 32);
        assert_eq!(b[4], 7);
        assert_eq!(&b[5..8], &[0, 0, 0]);
        assert_eq!(&b[8..12], &1u32.to_le_bytes());
        assert_eq!(&b[20..28], &1.5f64.to_le_bytes());
        assert_eq!(&b[32..36], &2.0f32.to_le_bytes());
        let mut r = Reader::new(&b).unwrap();
        assert_eq!(r.u8().unwrap(), 7);
        assert_eq!(r.u32().unwrap(), 1);
        assert_eq!(r.u8().unwrap(), 2);
        assert_eq!(r.f64().unwrap(), 1.5);
        assert_eq!(r.u8().unwrap(), 3);
        assert_eq!(r.f32().unwrap(), 2.0);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn strings_carry_their_nul_in_the_length() {
        let mut w = Writer::default();
        w.string("laser").u32(9);
        let b = w.finish();
        assert_eq!(&b[4..8], &6u32.to_le_bytes());
        assert_eq!(&b[8..14], b"laser\0");
        assert_eq!(&b[14..16], &[0, 0]);
        let mut r = Reader::new(&b).unwrap();
        assert_eq!(r.string(64).unwrap(), "laser");
        assert_eq!(r.u32().unwrap(), 9);
    }

    #[test]
    fn lengths_are_bounded_before_anything_is_allocated() {
        let mut b = ENCAPSULATION_LE.to_vec();
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        let e = Reader::new(&b).unwrap().string(usize::MAX - 1).unwrap_err();
        assert!(matches!(e, CdrError::Truncated { .. }), "{e}");
        let e = Reader::new(&b).unwrap().string(255).unwrap_err();
        assert!(matches!(e, CdrError::TooLong { .. }), "{e}");
        let mut b = ENCAPSULATION_LE.to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(b"abc");
        assert_eq!(
            Reader::new(&b).unwrap().string(8).unwrap_err(),
            CdrError::BadString(0)
        );
    }

    #[test]
    fn short_or_foreign_payloads_are_refused() {
        assert_eq!(Reader::new(&[0, 1]).unwrap_err(), CdrError::NoHeader(2));
        assert_eq!(
            Reader::new(&[0, 0x0b, 0, 0]).unwrap_err(),
            CdrError::Encapsulation(0, 0x0b)
        );
        let mut r = Reader::new(&[0, 1, 0, 0, 1, 2]).unwrap();
        assert!(matches!(r.f64(), Err(CdrError::Truncated { need: 8, .. })));
    }

    #[test]
    fn big_endian_payloads_read_the_same_values() {
        let mut b = ENCAPSULATION_BE.to_vec();
        b.extend_from_slice(&5u32.to_be_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&(-0.25f64).to_be_bytes());
        let mut r = Reader::new(&b).unwrap();
        assert_eq!(r.u32().unwrap(), 5);
        assert_eq!(r.f64().unwrap(), -0.25);
    }
}
