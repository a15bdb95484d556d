//! The SICK LMS-200 telegram protocol, pure: telegram frames, SICK's CRC-16, an incremental
//! parser that resynchronises on STX and counts bad telegrams and junk, the host commands
//! the driver sends, and the continuous-output scan telegram (`B0`) both ways
//! (docs/reference/sick-lms200.md §2–§8). No I/O here.

/// Start of every telegram.
pub const STX: u8 = 0x02;
/// Acknowledge byte the scanner sends before a response.
pub const ACK: u8 = 0x06;
/// Not-acknowledge byte (a corrupt host telegram).
pub const NAK: u8 = 0x15;
/// Host address byte (to scanner 0).
pub const HOST_ADDR: u8 = 0x00;
/// Scanner address byte in its replies (scanner 0 + 0x80).
pub const LMS_ADDR: u8 = 0x80;
/// The largest LEN accepted (the longest LMS telegram is 812 bytes).
pub const MAX_LEN: usize = 812;
/// Values in a 180°, 0.5° scan.
pub const SCAN_VALUES: usize = 361;
/// Response code of a scan telegram.
pub const SCAN: u8 = 0xB0;
/// Response code of a reply to an operating-mode (`20`) request.
pub const MODE_REPLY: u8 = 0xA0;
/// Status byte of a healthy LMS-200-30106.
pub const STATUS_OK: u8 = 0x10;
/// Range bits of a value (mm mode).
pub const RANGE_MASK: u16 = 0x1FFF;

/// Enter installation mode with the default password.
pub const INSTALL_MODE: &[u8] = b"\x20\x00SICK_LMS";
/// Continuous output of all values.
pub const START_CONTINUOUS: &[u8] = &[0x20, 0x24];
/// Continuous output off (values on request).
pub const STOP_CONTINUOUS: &[u8] = &[0x20, 0x25];
/// Host speed 38400 baud.
pub const BAUD_38400: &[u8] = &[0x20, 0x40];
/// Host speed 19200 baud.
pub const BAUD_19200: &[u8] = &[0x20, 0x41];
/// Host speed 9600 baud.
pub const BAUD_9600: &[u8] = &[0x20, 0x42];

/// SICK's CRC-16 (generator 0x8005, folding each byte with the one before it).
pub fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    let mut prev: u8 = 0;
    for &b in bytes {
        if crc & 0x8000 != 0 {
            crc = ((crc & 0x7FFF) << 1) ^ 0x8005;
        } else {
            crc <<= 1;
        }
        crc ^= u16::from(prev) << 8 | u16::from(b);
        prev = b;
    }
    crc
}

/// A telegram to or from `addr` carrying `data` (command or response byte first; for the
/// scanner's telegrams the status byte last).
pub fn telegram(addr: u8, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(data.len() + 6);
    v.push(STX);
    v.push(addr);
    v.extend_from_slice(&(data.len() as u16).to_le_bytes());
    v.extend_from_slice(data);
    let crc = crc16(&v);
    v.extend_from_slice(&crc.to_le_bytes());
    v
}

/// A host command telegram.
pub fn command(data: &[u8]) -> Vec<u8> {
    telegram(HOST_ADDR, data)
}

/// What the parser found on the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// An ACK byte between telegrams.
    Ack,
    /// A NAK byte between telegrams.
    Nak,
    /// A telegram with a good CRC.
    Telegram {
        /// Its address byte.
        addr: u8,
        /// Command/response byte, data, and (from the scanner) the status byte.
        data: Vec<u8>,
    },
    /// A telegram whose CRC did not match: dropped.
    BadCrc,
    /// A LEN of 0 or over [`MAX_LEN`]: the STX was not a telegram start.
    BadLength(usize),
}

/// An incremental telegram parser.
#[derive(Debug, Default)]
pub struct Parser {
    buf: Vec<u8>,
    /// Bytes skipped while hunting for STX (ACK/NAK not counted).
    pub junk: u64,
    /// Telegrams dropped for a bad CRC.
    pub bad_crc: u64,
    /// Impossible lengths seen.
    pub bad_length: u64,
}

impl Parser {
    /// An empty parser.
    pub fn new() -> Parser {
        Parser::default()
    }

    /// Appends bytes from the line.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Forgets buffered bytes.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    /// The next event, or `None` if more bytes are needed.
    pub fn next_event(&mut self) -> Option<Event> {
        loop {
            let &first = self.buf.first()?;
            match first {
                ACK => {
                    self.buf.drain(..1);
                    return Some(Event::Ack);
                }
                NAK => {
                    self.buf.drain(..1);
                    return Some(Event::Nak);
                }
                STX => {}
                _ => {
                    let n = self
                        .buf
                        .iter()
                        .position(|&b| matches!(b, STX | ACK | NAK))
                        .unwrap_or(self.buf.len());
                    self.junk += n as u64;
                    self.buf.drain(..n);
                    continue;
                }
            }
            if self.buf.len() < 4 {
                return None;
            }
            let len = usize::from(u16::from_le_bytes([self.buf[2], self.buf[3]]));
            if len == 0 || len > MAX_LEN {
                self.bad_length += 1;
                self.junk += 1;
                self.buf.drain(..1);
                return Some(Event::BadLength(len));
            }
            let total = 4 + len + 2;
            if self.buf.len() < total {
                return None;
            }
            let crc = u16::from_le_bytes([self.buf[total - 2], self.buf[total - 1]]);
            if crc != crc16(&self.buf[..total - 2]) {
                self.bad_crc += 1;
                self.buf.drain(..1);
                return Some(Event::BadCrc);
            }
            let addr = self.buf[1];
            let data = self.buf[4..total - 2].to_vec();
            self.buf.drain(..total);
            return Some(Event::Telegram { addr, data });
        }
    }
}

/// Why a `B0` telegram was not a usable scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanError {
    /// Not a `B0` telegram, or too short for its count word.
    NotAScan,
    /// The count word says something else than 361 values in mm, or a partial scan.
    Format {
        /// The count word.
        word: u16,
    },
    /// The telegram is shorter or longer than its count says.
    Size {
        /// Bytes present.
        got: usize,
    },
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::NotAScan => write!(f, "not a scan telegram"),
            ScanError::Format { word } => write!(
                f,
                "scan count word {word:#06x}: expected 361 values in mm, full scan"
            ),
            ScanError::Size { got } => write!(f, "scan telegram of {got} bytes"),
        }
    }
}

/// One scan: 361 ranges in mm, index 0 at the scanner's right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Ranges, mm, flag bits removed.
    pub ranges: [u16; SCAN_VALUES],
    /// Values that carried a flag bit (field A, field B or dazzle).
    pub flagged: usize,
    /// The status byte.
    pub status: u8,
}

impl Scan {
    /// The count word of a full 361-value scan in mm.
    pub const COUNT_WORD: u16 = 0x4169;

    /// Reads a `B0` telegram's data (response byte first, status byte last).
    pub fn parse(data: &[u8]) -> Result<Scan, ScanError> {
        if data.first() != Some(&SCAN) || data.len() < 3 {
            return Err(ScanError::NotAScan);
        }
        let word = u16::from_le_bytes([data[1], data[2]]);
        let count = usize::from(word & 0x3FF);
        let partial = (word >> 11) & 0x3;
        let unit = word >> 14;
        if count != SCAN_VALUES || partial != 0 || unit != 1 {
            return Err(ScanError::Format { word });
        }
        if data.len() != 3 + 2 * SCAN_VALUES + 1 {
            return Err(ScanError::Size { got: data.len() });
        }
        let mut ranges = [0u16; SCAN_VALUES];
        let mut flagged = 0;
        for (i, r) in ranges.iter_mut().enumerate() {
            let v = u16::from_le_bytes([data[3 + 2 * i], data[4 + 2 * i]]);
            flagged += usize::from(v & !RANGE_MASK != 0);
            *r = v & RANGE_MASK;
        }
        Ok(Scan {
            ranges,
            flagged,
            status: data[data.len() - 1],
        })
    }

    /// The whole `B0` telegram carrying `values` (flag bits as given) and `status`.
    pub fn telegram(values: &[u16; SCAN_VALUES], status: u8) -> Vec<u8> {
        let mut d = Vec::with_capacity(4 + 2 * SCAN_VALUES);
        d.push(SCAN);
        d.extend_from_slice(&Self::COUNT_WORD.to_le_bytes());
        for v in values {
            d.extend_from_slice(&v.to_le_bytes());
        }
        d.push(status);
        telegram(LMS_ADDR, &d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::hex;

    #[test]
    fn telegrams_match_the_fact_sheet_vectors() {
        assert_eq!(command(START_CONTINUOUS), hex("02 00 02 00 20 24 34 08"));
        assert_eq!(command(STOP_CONTINUOUS), hex("02 00 02 00 20 25 35 08"));
        assert_eq!(command(BAUD_38400), hex("02 00 02 00 20 40 50 08"));
        assert_eq!(command(BAUD_19200), hex("02 00 02 00 20 41 51 08"));
        assert_eq!(command(BAUD_9600), hex("02 00 02 00 20 42 52 08"));
        assert_eq!(
            command(INSTALL_MODE),
            hex("02 00 0A 00 20 00 53 49 43 4B 5F 4C 4D 53 BE C5")
        );
        assert_eq!(
            telegram(LMS_ADDR, &[MODE_REPLY, 0x00, STATUS_OK]),
            hex("02 80 03 00 A0 00 10 16 0A")
        );
    }

    #[test]
    fn scan_telegrams_match_the_fact_sheet_crcs() {
        let t = Scan::telegram(&[1000; SCAN_VALUES], STATUS_OK);
        assert_eq!(t.len(), 732);
        assert_eq!(&t[..7], &hex("02 80 D6 02 B0 69 41")[..]);
        assert_eq!(&t[730..], &[0x55, 0xF1]);
        let mut ramp = [0u16; SCAN_VALUES];
        for (i, v) in ramp.iter_mut().enumerate() {
            *v = i as u16;
        }
        let t = Scan::telegram(&ramp, STATUS_OK);
        assert_eq!(&t[730..], &[0x31, 0x93]);
        let mut p = Parser::new();
        p.push(&t);
        let Some(Event::Telegram { addr, data }) = p.next_event() else {
            panic!("no telegram")
        };
        assert_eq!(addr, LMS_ADDR);
        let s = Scan::parse(&data).unwrap();
        assert_eq!(s.ranges, ramp);
        assert_eq!((s.flagged, s.status), (0, STATUS_OK));
    }

    #[test]
    fn flag_bits_are_masked_and_counted() {
        let mut v = [500u16; SCAN_VALUES];
        v[0] |= 1 << 13;
        v[1] |= 1 << 15;
        let t = Scan::telegram(&v, STATUS_OK);
        let s = Scan::parse(&t[4..730]).unwrap();
        assert_eq!((s.ranges[0], s.ranges[1], s.flagged), (500, 500, 2));
    }

    #[test]
    fn other_formats_are_refused() {
        let t = Scan::telegram(&[1; SCAN_VALUES], STATUS_OK);
        let mut d = t[4..730].to_vec();
        d[2] = 0x01; // cm units
        assert!(matches!(Scan::parse(&d), Err(ScanError::Format { .. })));
        assert_eq!(Scan::parse(&[0xA0, 0, 0x10]), Err(ScanError::NotAScan));
        let mut short = t[4..730].to_vec();
        short.pop();
        assert!(matches!(Scan::parse(&short), Err(ScanError::Size { .. })));
    }

    #[test]
    fn parser_resyncs_after_junk_bad_crcs_and_bad_lengths() {
        let good = Scan::telegram(&[1000; SCAN_VALUES], STATUS_OK);
        let mut bad = good.clone();
        bad[100] ^= 0x40;
        let mut stream = vec![0x99, 0x98, ACK];
        stream.extend_from_slice(&bad);
        stream.extend_from_slice(&[STX, 0x80, 0xFF, 0xFF]); // LEN 65535
        stream.extend_from_slice(&[0x33, NAK]);
        stream.extend_from_slice(&good);
        let mut p = Parser::new();
        let mut events = Vec::new();
        for chunk in stream.chunks(5) {
            p.push(chunk);
            while let Some(e) = p.next_event() {
                events.push(e);
            }
        }
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e {
                Event::Ack => "ack",
                Event::Nak => "nak",
                Event::Telegram { .. } => "telegram",
                Event::BadCrc => "crc",
                Event::BadLength(_) => "len",
            })
            .collect();
        assert_eq!(kinds.first(), Some(&"ack"));
        assert_eq!(kinds.last(), Some(&"telegram"));
        assert!(kinds.contains(&"crc") && kinds.contains(&"len") && kinds.contains(&"nak"));
        assert_eq!(kinds.iter().filter(|k| **k == "telegram").count(), 1);
        assert_eq!(p.bad_crc, 1);
        assert!(p.junk >= 2);
    }
}
