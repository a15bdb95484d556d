//! Sony VISCA for the EVI-D30, pure: packets, nibble-encoded positions, the replies
//! (ACK, completion, information, errors) with a parser that resynchronises on the `0x90`
//! header and the `0xFF` terminator, and the conversion between the client protocol's
//! degrees and the camera's units, pan sign flipped (docs/reference/sony-ptz.md). No I/O here.

/// Header of packets from the controller to camera 1.
pub const TO_CAMERA: u8 = 0x81;
/// Header of packets from camera 1.
pub const FROM_CAMERA: u8 = 0x90;
/// Terminator of every packet.
pub const END: u8 = 0xFF;
/// The longest packet either way.
pub const MAX_PACKET: usize = 16;
/// Maximum pan speed code.
pub const PAN_SPEED: u8 = 0x18;
/// Maximum tilt speed code.
pub const TILT_SPEED: u8 = 0x14;
/// Camera pan units per degree (0x370 for 100°).
pub const PAN_UNITS_PER_DEG: f64 = 8.8;
/// Camera tilt units per degree (0x12C for 25°).
pub const TILT_UNITS_PER_DEG: f64 = 12.0;
/// Client pan limit, degrees.
pub const MAX_PAN: i16 = 100;
/// Client tilt limit, degrees.
pub const MAX_TILT: i16 = 25;
/// Largest zoom.
pub const MAX_ZOOM: i16 = 1023;
/// Pan/tilt position inquiry.
pub const PAN_TILT_INQ: [u8; 5] = [TO_CAMERA, 0x09, 0x06, 0x12, END];
/// Zoom position inquiry.
pub const ZOOM_INQ: [u8; 5] = [TO_CAMERA, 0x09, 0x04, 0x47, END];

/// A 16-bit value as four nibble bytes, most significant first.
pub fn nibbles(v: i16) -> [u8; 4] {
    let u = v as u16;
    [
        (u >> 12) as u8 & 0xF,
        (u >> 8) as u8 & 0xF,
        (u >> 4) as u8 & 0xF,
        u as u8 & 0xF,
    ]
}

/// Four nibble bytes back to a 16-bit value (only the low nibble of each byte counts).
pub fn from_nibbles(b: &[u8]) -> i16 {
    b.iter()
        .take(4)
        .fold(0u16, |acc, &n| acc << 4 | u16::from(n & 0xF)) as i16
}

/// Absolute pan/tilt at maximum speed, in camera units.
pub fn absolute_pan_tilt(pan: i16, tilt: i16) -> Vec<u8> {
    let mut v = vec![TO_CAMERA, 0x01, 0x06, 0x02, PAN_SPEED, TILT_SPEED];
    v.extend_from_slice(&nibbles(pan));
    v.extend_from_slice(&nibbles(tilt));
    v.push(END);
    v
}

/// Zoom to an absolute position, 0 (wide) to 0x3FF (tele).
pub fn zoom_direct(zoom: i16) -> Vec<u8> {
    let mut v = vec![TO_CAMERA, 0x01, 0x04, 0x47];
    v.extend_from_slice(&nibbles(zoom));
    v.push(END);
    v
}

/// Cancel the command in socket 1 or 2.
pub fn cancel(socket: u8) -> Vec<u8> {
    vec![TO_CAMERA, 0x20 | (socket & 0xF), END]
}

/// A reply from the camera.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The command went into this socket.
    Ack(u8),
    /// The command in this socket finished.
    Completion(u8),
    /// An inquiry's answer: the bytes between `90 50` and `FF`.
    Info(Vec<u8>),
    /// An error: socket and code (2 syntax, 3 buffer full, 4 cancelled, 5 no socket,
    /// 0x41 not executable).
    Error(u8, u8),
}

/// An incremental reply parser: packets end at `0xFF` and start at `0x90`; bytes before
/// the header, and packets too long or of no known shape, are skipped and counted.
#[derive(Debug, Default)]
pub struct Parser {
    buf: Vec<u8>,
    /// Bytes skipped.
    pub junk: u64,
    /// Packets that could not be read.
    pub bad: u64,
}

impl Parser {
    /// An empty parser.
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Appends bytes from the line.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        // A terminator must come within MAX_PACKET bytes of a header.
        if self.buf.len() > 4 * MAX_PACKET && !self.buf.contains(&END) {
            self.junk += self.buf.len() as u64;
            self.buf.clear();
        }
    }

    /// The next reply, `Some(Err(()))` for a skipped bad packet, or `None` for more bytes.
    pub fn next_reply(&mut self) -> Option<Result<Reply, ()>> {
        let end = self.buf.iter().position(|&b| b == END)?;
        // The packet starts at the last header before the terminator (a header byte cannot
        // occur inside a packet); an earlier header starts a packet that was cut short.
        let Some(start) = self.buf[..end].iter().rposition(|&b| b == FROM_CAMERA) else {
            self.junk += end as u64 + 1;
            self.bad += 1;
            self.buf.drain(..=end);
            return Some(Err(()));
        };
        if self.buf[..start].contains(&FROM_CAMERA) {
            self.junk += start as u64;
            self.bad += 1;
            self.buf.drain(..start);
            return Some(Err(()));
        }
        self.junk += start as u64;
        let packet: Vec<u8> = self.buf.drain(..=end).collect();
        let start = start.min(packet.len() - 1);
        let p = &packet[start..];
        if p.len() > MAX_PACKET {
            self.bad += 1;
            return Some(Err(()));
        }
        let body = &p[1..p.len() - 1];
        let r = match body {
            [k] if k & 0xF0 == 0x40 => Ok(Reply::Ack(k & 0xF)),
            [k] if k & 0xF0 == 0x50 => Ok(Reply::Completion(k & 0xF)),
            [0x50, rest @ ..] if !rest.is_empty() => Ok(Reply::Info(rest.to_vec())),
            [k, code] if k & 0xF0 == 0x60 => Ok(Reply::Error(k & 0xF, *code)),
            _ => Err(()),
        };
        if r.is_err() {
            self.bad += 1;
        }
        Some(r)
    }
}

/// Client degrees and zoom to camera units: pan negated, each axis clamped to the manual's
/// limits, rounded (0.7.4a truncates; rounding makes every integer pan read back as sent).
pub fn to_camera(pan: i16, tilt: i16, zoom: i16) -> (i16, i16, i16) {
    let pan = -pan.clamp(-MAX_PAN, MAX_PAN);
    let tilt = tilt.clamp(-MAX_TILT, MAX_TILT);
    (
        (f64::from(pan) * PAN_UNITS_PER_DEG).round() as i16,
        (f64::from(tilt) * TILT_UNITS_PER_DEG).round() as i16,
        zoom.clamp(0, MAX_ZOOM),
    )
}

/// Camera units back to client degrees (pan negated), rounded.
pub fn from_camera(pan: i16, tilt: i16, zoom: i16) -> (i16, i16, i16) {
    (
        -(f64::from(pan) / PAN_UNITS_PER_DEG).round() as i16,
        (f64::from(tilt) / TILT_UNITS_PER_DEG).round() as i16,
        zoom,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::hex;

    #[test]
    fn the_fact_sheet_example_encodes_byte_for_byte() {
        // Client pan 10, tilt 5, zoom 512 -> camera pan -88, tilt 60.
        let (p, t, z) = to_camera(10, 5, 512);
        assert_eq!((p, t, z), (-88, 60, 512));
        assert_eq!(
            absolute_pan_tilt(p, t),
            hex("81 01 06 02 18 14 0F 0F 0A 08 00 00 03 0C FF")
        );
        assert_eq!(zoom_direct(z), hex("81 01 04 47 00 02 00 00 FF"));
        assert_eq!(cancel(1), hex("81 21 FF"));
    }

    #[test]
    fn units_round_trip_and_clamp() {
        for pan in -100..=100 {
            let (p, t, z) = to_camera(pan, -25, 0);
            assert_eq!(from_camera(p, t, z), (pan, -25, 0));
        }
        assert_eq!(to_camera(150, 40, 2000), (-880, 300, 1023));
        assert_eq!(to_camera(-150, -40, -5), (880, -300, 0));
        assert_eq!(from_nibbles(&nibbles(-880)), -880);
        assert_eq!(nibbles(0x370), [0, 3, 7, 0]);
    }

    #[test]
    fn replies_parse_and_junk_is_skipped() {
        let mut p = Parser::new();
        p.push(&hex(
            "12 34 90 41 FF 90 51 FF 90 50 0F 0F 0A 08 00 00 03 0C FF",
        ));
        p.push(&hex(
            "90 60 03 FF 77 FF 90 62 04 FF 90 50 00 90 50 00 02 00 00 FF",
        ));
        let mut got = Vec::new();
        while let Some(r) = p.next_reply() {
            got.push(r);
        }
        assert_eq!(
            got,
            vec![
                Ok(Reply::Ack(1)),
                Ok(Reply::Completion(1)),
                Ok(Reply::Info(hex("0F 0F 0A 08 00 00 03 0C"))),
                Ok(Reply::Error(0, 3)),
                Err(()),
                Ok(Reply::Error(2, 4)),
                Err(()),
                Ok(Reply::Info(hex("00 02 00 00"))),
            ]
        );
        assert_eq!(p.junk, 7);
        // A stream with no terminator is dropped rather than grown without bound.
        p.push(&[0x90; 100]);
        assert!(p.next_reply().is_none());
        assert!(p.junk >= 100);
    }
}
