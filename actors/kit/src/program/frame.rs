//! The driver-program protocol's frames: pure encoding and decoding, no I/O.
//!
//! A driver program talks to the server over its standard input (server → program) and
//! standard output (program → server) in frames:
//!
//! ```text
//! u32 length (big-endian; counts the type byte and the body)   1 ..= MAX_FRAME
//! u8  type
//! ... body (length - 1 bytes)
//! ```
//!
//! Types sent by the server are upper-case letters ([`ToProgram`]), types sent by the
//! program lower-case ([`FromProgram`]). Device payloads (data, commands, configs) are
//! carried byte for byte as they are on the 0.7.4a wire. `docs/plugins.md` is the
//! protocol's reference; this module is its one implementation in Rust, usable by the
//! server (which encodes [`ToProgram`] and decodes [`FromProgram`]) and by a driver
//! program written in Rust (the other way round).
//!
//! Every length is checked before anything is allocated: [`FrameReader`] refuses a frame
//! longer than its maximum as soon as it has seen the 4-byte length.

use std::fmt;

/// The protocol version the server announces in [`Hello`].
pub const VERSION: u8 = 1;

/// The longest frame (type byte and body) either side may send: room for a 64 KiB
/// payload and its header.
pub const MAX_FRAME: usize = 128 * 1024;

/// Bytes of the frame header (the length).
pub const HEADER: usize = 4;

/// Why bytes are not a valid frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The length field is 0 or above the maximum (nothing was allocated).
    Length {
        /// The announced length.
        length: u32,
        /// The maximum allowed.
        max: usize,
    },
    /// A type byte this direction of the protocol does not have.
    UnknownType(u8),
    /// A body too short, or of the wrong size, for its type.
    Body {
        /// The frame type.
        kind: u8,
        /// What is wrong.
        what: &'static str,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Length { length, max } => {
                write!(f, "frame length {length} outside 1..={max}")
            }
            FrameError::UnknownType(t) => write!(f, "unknown frame type {t:#04x}"),
            FrameError::Body { kind, what } => {
                write!(f, "bad frame of type {:?}: {what}", char::from(*kind))
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// One device of the program, as the configuration declares it (sent in [`Hello`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The device code.
    pub code: u8,
    /// `b'r'`, `b'w'` or `b'a'`: what clients may do with it.
    pub access: u8,
    /// The largest data payload the program may publish for it.
    pub data_size: u16,
    /// The exact size of its commands (0: it takes none).
    pub command_size: u16,
    /// Whether its commands keep something moving (the server's watchdog stops it).
    pub moving: bool,
}

/// The first frame the server sends: who the program serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The protocol version ([`VERSION`]).
    pub version: u8,
    /// The robot's name.
    pub robot: String,
    /// The devices the configuration gives the program.
    pub devices: Vec<DeviceInfo>,
    /// The driver entry's `options` table as JSON text (an object; `{}` when none).
    pub params: String,
}

/// Why the server stops a device ([`ToProgram::Stop`]).
pub mod stop {
    /// No command within the device's command timeout.
    pub const WATCHDOG: u8 = 1;
    /// A client with write access left.
    pub const WRITER_LEFT: u8 = 2;
    /// The emergency stop was latched.
    pub const EMERGENCY: u8 = 3;
}

/// Log levels of [`FromProgram::Log`].
pub mod level {
    /// Errors.
    pub const ERROR: u8 = 1;
    /// Warnings.
    pub const WARNING: u8 = 2;
    /// Information.
    pub const INFO: u8 = 3;
    /// Debugging detail (shown with `-debug`).
    pub const DEBUG: u8 = 4;
}

/// A frame from the server to the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToProgram {
    /// `H`: sent once, first.
    Hello(Hello),
    /// `S`: open `device`; answer with [`FromProgram::SetupAnswer`].
    Setup {
        /// The device code.
        device: u8,
    },
    /// `Q`: the last client left `device`: close it.
    Shutdown {
        /// The device code.
        device: u8,
    },
    /// `N`: how many readers `device` has now.
    Subscribers {
        /// The device code.
        device: u8,
        /// Readers (the server's own monitor included).
        count: u32,
    },
    /// `C`: a client's command, exactly the 0.7.4a `<command>` bytes (newest wins: the
    /// server drops a command the program has not yet read when a newer one comes).
    Command {
        /// The device code.
        device: u8,
        /// The command bytes.
        payload: Vec<u8>,
    },
    /// `X`: a client's configuration request (the config code and its arguments).
    Config {
        /// The device code.
        device: u8,
        /// Identifies it for [`FromProgram::ConfigReply`].
        id: u32,
        /// The bytes after the 0.7.4a header.
        payload: Vec<u8>,
    },
    /// `T`: put `device` in its safe state (zero its command).
    Stop {
        /// The device code.
        device: u8,
        /// Why ([`stop`]).
        reason: u8,
    },
    /// `R`: a reading of another device the program reads ([`FromProgram::Read`]).
    Reading {
        /// The device code.
        device: u8,
        /// When it was taken: seconds since the Unix epoch.
        sec: u32,
        /// Microseconds.
        usec: u32,
        /// The 0.7.4a data bytes.
        payload: Vec<u8>,
    },
    /// `A`: the answer to [`FromProgram::Read`] (on): `Err` names why the device cannot be
    /// read.
    ReadAnswer {
        /// The device code.
        device: u8,
        /// Ok, or why not.
        result: Result<(), Refusal>,
    },
}

/// Why a device cannot be opened or read, in the words of the side that refuses (free
/// text on the wire: a program's reason, the server's).
// Written out: this module builds without the kit's dependencies (no thiserror).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

impl From<&str> for Refusal {
    fn from(text: &str) -> Self {
        Refusal(text.to_string())
    }
}

impl From<String> for Refusal {
    fn from(text: String) -> Self {
        Refusal(text)
    }
}

/// A frame from the program to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromProgram {
    /// `a`: the answer to [`ToProgram::Setup`].
    SetupAnswer {
        /// The device code.
        device: u8,
        /// Ok, or why the device cannot be opened (the client gets `e`).
        result: Result<(), Refusal>,
    },
    /// `d`: a reading of one of the program's devices.
    Data {
        /// The device code.
        device: u8,
        /// When it was taken (seconds, microseconds since the Unix epoch); `None`: now
        /// (sent as 0, 0).
        timestamp: Option<(u32, u32)>,
        /// The 0.7.4a data bytes (at most the device's `data_size`).
        payload: Vec<u8>,
    },
    /// `x`: the answer to [`ToProgram::Config`].
    ConfigReply {
        /// The request's id.
        id: u32,
        /// The reply bytes.
        payload: Vec<u8>,
    },
    /// `l`: a line for the server's log.
    Log {
        /// [`level`].
        level: u8,
        /// The text (UTF-8; shown escaped).
        text: String,
    },
    /// `e`: a device has failed (clients that asked for the error channel are told).
    Error {
        /// The device code.
        device: u8,
        /// Why.
        text: String,
    },
    /// `r`: start (`on`) or stop reading another device of the same robot; its readings
    /// come as [`ToProgram::Reading`].
    Read {
        /// The device code.
        device: u8,
        /// Start or stop.
        on: bool,
    },
}

fn put_frame(out: &mut Vec<u8>, kind: u8, body: &[&[u8]]) {
    let len: usize = 1 + body.iter().map(|b| b.len()).sum::<usize>();
    out.extend_from_slice(&(len as u32).to_be_bytes());
    out.push(kind);
    for b in body {
        out.extend_from_slice(b);
    }
}

fn result_body(device: u8, result: &Result<(), Refusal>) -> Vec<u8> {
    let mut b = vec![device];
    match result {
        Ok(()) => b.push(0),
        Err(e) => {
            b.push(1);
            b.extend_from_slice(e.0.as_bytes());
        }
    }
    b
}

fn parse_result(kind: u8, body: &[u8]) -> Result<(u8, Result<(), Refusal>), FrameError> {
    match body {
        [device, 0] => Ok((*device, Ok(()))),
        [device, 1, text @ ..] => Ok((
            *device,
            Err(Refusal(String::from_utf8_lossy(text).into_owned())),
        )),
        _ => Err(FrameError::Body {
            kind,
            what: "expected device, 0 (ok) or 1 (error) and text",
        }),
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn one_byte(kind: u8, body: &[u8]) -> Result<u8, FrameError> {
    match body {
        [device] => Ok(*device),
        _ => Err(FrameError::Body {
            kind,
            what: "expected one byte (the device)",
        }),
    }
}

fn short(kind: u8) -> FrameError {
    FrameError::Body {
        kind,
        what: "too short",
    }
}

impl Hello {
    fn body(&self) -> Vec<u8> {
        let robot = self.robot.as_bytes();
        let robot = &robot[..robot.len().min(usize::from(u16::MAX))];
        let mut b = vec![self.version];
        b.extend_from_slice(&(robot.len() as u16).to_be_bytes());
        b.extend_from_slice(robot);
        b.push(self.devices.len().min(255) as u8);
        for d in self.devices.iter().take(255) {
            b.extend_from_slice(&[d.code, d.access]);
            b.extend_from_slice(&d.data_size.to_be_bytes());
            b.extend_from_slice(&d.command_size.to_be_bytes());
            b.push(u8::from(d.moving));
        }
        b.extend_from_slice(self.params.as_bytes());
        b
    }

    fn parse(body: &[u8]) -> Result<Hello, FrameError> {
        let k = b'H';
        if body.len() < 4 {
            return Err(short(k));
        }
        let version = body[0];
        let n = usize::from(u16::from_be_bytes([body[1], body[2]]));
        let robot = body.get(3..3 + n).ok_or_else(|| short(k))?;
        let mut at = 3 + n;
        let count = usize::from(*body.get(at).ok_or_else(|| short(k))?);
        at += 1;
        let mut devices = Vec::with_capacity(count);
        for _ in 0..count {
            let d = body.get(at..at + 7).ok_or_else(|| short(k))?;
            devices.push(DeviceInfo {
                code: d[0],
                access: d[1],
                data_size: u16::from_be_bytes([d[2], d[3]]),
                command_size: u16::from_be_bytes([d[4], d[5]]),
                moving: d[6] != 0,
            });
            at += 7;
        }
        Ok(Hello {
            version,
            robot: String::from_utf8_lossy(robot).into_owned(),
            devices,
            params: String::from_utf8_lossy(&body[at..]).into_owned(),
        })
    }
}

impl ToProgram {
    /// Appends the frame to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            ToProgram::Hello(h) => put_frame(out, b'H', &[&h.body()]),
            ToProgram::Setup { device } => put_frame(out, b'S', &[&[*device]]),
            ToProgram::Shutdown { device } => put_frame(out, b'Q', &[&[*device]]),
            ToProgram::Subscribers { device, count } => {
                put_frame(out, b'N', &[&[*device], &count.to_be_bytes()])
            }
            ToProgram::Command { device, payload } => put_frame(out, b'C', &[&[*device], payload]),
            ToProgram::Config {
                device,
                id,
                payload,
            } => put_frame(out, b'X', &[&[*device], &id.to_be_bytes(), payload]),
            ToProgram::Stop { device, reason } => put_frame(out, b'T', &[&[*device, *reason]]),
            ToProgram::Reading {
                device,
                sec,
                usec,
                payload,
            } => put_frame(
                out,
                b'R',
                &[&[*device], &sec.to_be_bytes(), &usec.to_be_bytes(), payload],
            ),
            ToProgram::ReadAnswer { device, result } => {
                put_frame(out, b'A', &[&result_body(*device, result)])
            }
        }
    }

    /// Decodes a frame's type and body (as [`FrameReader`] returns them).
    pub fn decode(kind: u8, body: &[u8]) -> Result<ToProgram, FrameError> {
        Ok(match kind {
            b'H' => ToProgram::Hello(Hello::parse(body)?),
            b'S' => ToProgram::Setup {
                device: one_byte(kind, body)?,
            },
            b'Q' => ToProgram::Shutdown {
                device: one_byte(kind, body)?,
            },
            b'N' => match body {
                [device, a, b, c, d] => ToProgram::Subscribers {
                    device: *device,
                    count: u32::from_be_bytes([*a, *b, *c, *d]),
                },
                _ => {
                    return Err(FrameError::Body {
                        kind,
                        what: "expected device and u32 count",
                    })
                }
            },
            b'C' => match body {
                [device, payload @ ..] => ToProgram::Command {
                    device: *device,
                    payload: payload.to_vec(),
                },
                [] => return Err(short(kind)),
            },
            b'X' => {
                if body.len() < 5 {
                    return Err(short(kind));
                }
                ToProgram::Config {
                    device: body[0],
                    id: u32_at(body, 1),
                    payload: body[5..].to_vec(),
                }
            }
            b'T' => match body {
                [device, reason] => ToProgram::Stop {
                    device: *device,
                    reason: *reason,
                },
                _ => {
                    return Err(FrameError::Body {
                        kind,
                        what: "expected device and reason",
                    })
                }
            },
            b'R' => {
                if body.len() < 9 {
                    return Err(short(kind));
                }
                ToProgram::Reading {
                    device: body[0],
                    sec: u32_at(body, 1),
                    usec: u32_at(body, 5),
                    payload: body[9..].to_vec(),
                }
            }
            b'A' => {
                let (device, result) = parse_result(kind, body)?;
                ToProgram::ReadAnswer { device, result }
            }
            other => return Err(FrameError::UnknownType(other)),
        })
    }
}

impl FromProgram {
    /// Appends the frame to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            FromProgram::SetupAnswer { device, result } => {
                put_frame(out, b'a', &[&result_body(*device, result)])
            }
            FromProgram::Data {
                device,
                timestamp,
                payload,
            } => {
                let (sec, usec) = timestamp.unwrap_or((0, 0));
                put_frame(
                    out,
                    b'd',
                    &[&[*device], &sec.to_be_bytes(), &usec.to_be_bytes(), payload],
                )
            }
            FromProgram::ConfigReply { id, payload } => {
                put_frame(out, b'x', &[&id.to_be_bytes(), payload])
            }
            FromProgram::Log { level, text } => put_frame(out, b'l', &[&[*level], text.as_bytes()]),
            FromProgram::Error { device, text } => {
                put_frame(out, b'e', &[&[*device], text.as_bytes()])
            }
            FromProgram::Read { device, on } => put_frame(out, b'r', &[&[*device, u8::from(*on)]]),
        }
    }

    /// Decodes a frame's type and body (as [`FrameReader`] returns them).
    pub fn decode(kind: u8, body: &[u8]) -> Result<FromProgram, FrameError> {
        Ok(match kind {
            b'a' => {
                let (device, result) = parse_result(kind, body)?;
                FromProgram::SetupAnswer { device, result }
            }
            b'd' => {
                if body.len() < 9 {
                    return Err(short(kind));
                }
                let (sec, usec) = (u32_at(body, 1), u32_at(body, 5));
                if usec >= 1_000_000 {
                    return Err(FrameError::Body {
                        kind,
                        what: "microseconds not below 1000000",
                    });
                }
                FromProgram::Data {
                    device: body[0],
                    timestamp: (sec != 0 || usec != 0).then_some((sec, usec)),
                    payload: body[9..].to_vec(),
                }
            }
            b'x' => {
                if body.len() < 4 {
                    return Err(short(kind));
                }
                FromProgram::ConfigReply {
                    id: u32_at(body, 0),
                    payload: body[4..].to_vec(),
                }
            }
            b'l' => match body {
                [level, text @ ..] => FromProgram::Log {
                    level: *level,
                    text: String::from_utf8_lossy(text).into_owned(),
                },
                [] => return Err(short(kind)),
            },
            b'e' => match body {
                [device, text @ ..] => FromProgram::Error {
                    device: *device,
                    text: String::from_utf8_lossy(text).into_owned(),
                },
                [] => return Err(short(kind)),
            },
            b'r' => match body {
                [device, on @ (0 | 1)] => FromProgram::Read {
                    device: *device,
                    on: *on == 1,
                },
                _ => {
                    return Err(FrameError::Body {
                        kind,
                        what: "expected device and 0 or 1",
                    })
                }
            },
            other => return Err(FrameError::UnknownType(other)),
        })
    }
}

/// Splits a byte stream into frames. Feed it what was read with [`FrameReader::extend`]
/// (it never holds more than one frame and one read's worth of bytes), then take frames
/// with [`FrameReader::next_frame`] until it returns `Ok(None)`.
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    start: usize,
    max: usize,
}

impl FrameReader {
    /// A reader refusing frames longer than `max` bytes (type byte and body).
    pub fn new(max: usize) -> Self {
        FrameReader {
            buf: Vec::new(),
            start: 0,
            max,
        }
    }

    /// Appends bytes read from the stream.
    pub fn extend(&mut self, bytes: &[u8]) {
        if self.start > 0 && (self.start == self.buf.len() || self.start >= self.max) {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held that are not yet a whole frame.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next whole frame as (type, body), `Ok(None)` when more bytes are needed, or an
    /// error for a length outside `1..=max` (after which the stream cannot be trusted).
    pub fn next_frame(&mut self) -> Result<Option<(u8, &[u8])>, FrameError> {
        let avail = &self.buf[self.start..];
        if avail.len() < HEADER {
            return Ok(None);
        }
        let length = u32_at(avail, 0);
        let len = length as usize;
        if len == 0 || len > self.max {
            return Err(FrameError::Length {
                length,
                max: self.max,
            });
        }
        if avail.len() < HEADER + len {
            return Ok(None);
        }
        let at = self.start + HEADER;
        self.start = at + len;
        Ok(Some((self.buf[at], &self.buf[at + 1..at + len])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_program_samples() -> Vec<ToProgram> {
        vec![
            ToProgram::Hello(Hello {
                version: VERSION,
                robot: "pioneer".into(),
                devices: vec![DeviceInfo {
                    code: b'o',
                    access: b'a',
                    data_size: 4,
                    command_size: 2,
                    moving: true,
                }],
                params: "{\"k\":1}".into(),
            }),
            ToProgram::Setup { device: b'o' },
            ToProgram::Shutdown { device: b'o' },
            ToProgram::Subscribers {
                device: b'o',
                count: 70_000,
            },
            ToProgram::Command {
                device: b'o',
                payload: vec![1, 2],
            },
            ToProgram::Config {
                device: b'o',
                id: 7,
                payload: vec![b's', 0, 3],
            },
            ToProgram::Stop {
                device: b'o',
                reason: stop::WATCHDOG,
            },
            ToProgram::Reading {
                device: b'l',
                sec: 1,
                usec: 2,
                payload: vec![9; 722],
            },
            ToProgram::ReadAnswer {
                device: b'l',
                result: Err("no device".into()),
            },
            ToProgram::ReadAnswer {
                device: b'l',
                result: Ok(()),
            },
        ]
    }

    fn from_program_samples() -> Vec<FromProgram> {
        vec![
            FromProgram::SetupAnswer {
                device: b'o',
                result: Ok(()),
            },
            FromProgram::SetupAnswer {
                device: b'o',
                result: Err("unplugged".into()),
            },
            FromProgram::Data {
                device: b'o',
                timestamp: Some((5, 999_999)),
                payload: vec![1, 2, 3, 4],
            },
            FromProgram::Data {
                device: b'o',
                timestamp: None,
                payload: vec![],
            },
            FromProgram::ConfigReply {
                id: 3,
                payload: vec![1],
            },
            FromProgram::Log {
                level: level::INFO,
                text: "hi".into(),
            },
            FromProgram::Error {
                device: b'o',
                text: "gone".into(),
            },
            FromProgram::Read {
                device: b'l',
                on: true,
            },
        ]
    }

    #[test]
    fn frames_round_trip_split_at_every_byte() {
        let mut wire = Vec::new();
        for m in to_program_samples() {
            m.encode(&mut wire);
        }
        for split in 0..wire.len() {
            let mut r = FrameReader::new(MAX_FRAME);
            let mut got = Vec::new();
            for part in [&wire[..split], &wire[split..]] {
                r.extend(part);
                while let Some((k, body)) = r.next_frame().unwrap() {
                    got.push(ToProgram::decode(k, body).unwrap());
                }
            }
            assert_eq!(got, to_program_samples(), "split at {split}");
            assert_eq!(r.pending(), 0);
        }
        let mut wire = Vec::new();
        for m in from_program_samples() {
            m.encode(&mut wire);
        }
        let mut r = FrameReader::new(MAX_FRAME);
        let mut got = Vec::new();
        for b in &wire {
            r.extend(std::slice::from_ref(b));
            while let Some((k, body)) = r.next_frame().unwrap() {
                got.push(FromProgram::decode(k, body).unwrap());
            }
        }
        assert_eq!(got, from_program_samples());
    }

    #[test]
    fn a_huge_length_is_refused_from_its_header() {
        let mut r = FrameReader::new(MAX_FRAME);
        r.extend(&[0x40, 0, 0, 0, b'd']);
        assert_eq!(
            r.next_frame(),
            Err(FrameError::Length {
                length: 1 << 30,
                max: MAX_FRAME
            })
        );
        let mut r = FrameReader::new(MAX_FRAME);
        r.extend(&[0, 0, 0, 0]);
        assert!(matches!(r.next_frame(), Err(FrameError::Length { .. })));
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        for kind in 0..=255u8 {
            for len in 0..12 {
                let body = vec![0xffu8; len];
                let _ = FromProgram::decode(kind, &body);
                let _ = ToProgram::decode(kind, &body);
            }
        }
        assert_eq!(
            FromProgram::decode(b'?', &[]),
            Err(FrameError::UnknownType(b'?'))
        );
        assert!(FromProgram::decode(b'r', &[b'l', 2]).is_err());
        assert!(FromProgram::decode(b'd', &[b'o', 0, 0, 0, 1, 0, 0x0f, 0x42, 0x40]).is_err());
    }
}
