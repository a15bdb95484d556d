//! Byte layouts of the opt-in protocol extensions (`docs/extensions.md`): the configs a
//! client sends to its `y` device to turn the error channel on, latch or release the
//! emergency stop, present the shared key and ask for the device list; and the `y`
//! packets the server sends back, notices and the device list.
//!
//! A `y` packet (`y <u16 size> <payload>`) is never data: `y` is no data device, and the
//! server never puts the timestamp prefix of `y t` in front of one. Its payload starts with
//! a kind byte; [`decode_packet`] tells a [`Notice`] from a device list. Every decoder here
//! checks each length against the bytes present before reading, and the device list's
//! entry count is a `u8`, so nothing allocates more than the packet it was given.

use std::fmt;

use crate::{device, message};

/// Config codes of the extensions, sent as `x y <size> <code> <args>`.
pub mod code {
    /// `y e <u8 on>`: the error channel on (1) or off (0).
    pub const ERROR_CHANNEL: u8 = b'e';
    /// `y E <u8 latch>`: latch (1) or release (0) the robot's emergency stop.
    pub const ESTOP: u8 = b'E';
    /// `y k <key bytes>`: present the shared access key.
    pub const KEY: u8 = b'k';
    /// `y l`: ask for the device list.
    pub const DEVICE_LIST: u8 = b'l';
}

/// The longest key a client may present, in bytes.
pub const MAX_KEY: usize = 64;

/// The longest text a server puts in a notice, in bytes.
pub const MAX_NOTICE_TEXT: usize = 200;

/// Size of a device list entry without its driver name (code, access, state, four `u16`s
/// and the name length).
pub const ENTRY_FIXED: usize = 12;

/// Notice kinds (the first byte of a notice's payload). A client must ignore kinds it does
/// not know; [`kind_name`] names the known ones.
pub mod kind {
    /// A pair of a device request was refused or granted a lower access than asked.
    pub const REFUSED: u8 = b'r';
    /// A command was ignored.
    pub const COMMAND_IGNORED: u8 = b'c';
    /// A config was ignored.
    pub const CONFIG_IGNORED: u8 = b'x';
    /// The command watchdog stopped the device.
    pub const WATCHDOG: u8 = b'w';
    /// The emergency stop was latched.
    pub const ESTOP_LATCHED: u8 = b'E';
    /// The emergency stop was released.
    pub const ESTOP_RELEASED: u8 = b'e';
    /// The device failed (link lost, silent, ...).
    pub const FAILED: u8 = b'f';
    /// The device is up again.
    pub const UP: u8 = b'u';
    /// Access: read-only, wrong key, refused connection.
    pub const ACCESS: u8 = b'a';
    /// The client is overloading the server.
    pub const OVERLOAD: u8 = b'o';
    /// Not a notice: the kind byte of the device list.
    pub const DEVICE_LIST: u8 = b'l';
}

/// A short name for a notice kind, for printing (`"unknown"` for kinds this crate does not
/// know).
pub fn kind_name(k: u8) -> &'static str {
    match k {
        kind::REFUSED => "refused",
        kind::COMMAND_IGNORED => "command ignored",
        kind::CONFIG_IGNORED => "config ignored",
        kind::WATCHDOG => "watchdog stop",
        kind::ESTOP_LATCHED => "e-stop latched",
        kind::ESTOP_RELEASED => "e-stop released",
        kind::FAILED => "device failed",
        kind::UP => "device up",
        kind::ACCESS => "access",
        kind::OVERLOAD => "overload",
        kind::DEVICE_LIST => "device list",
        _ => "unknown",
    }
}

/// Device states in the device list.
pub mod state {
    /// Up: set up and serving.
    pub const UP: u8 = b'u';
    /// Idle: no holder, not set up.
    pub const IDLE: u8 = b'i';
    /// Being set up.
    pub const SETTING_UP: u8 = b's';
    /// Failed.
    pub const FAILED: u8 = b'f';
    /// Reconnecting to its hardware.
    pub const RECONNECTING: u8 = b'c';
}

/// A short name for a device state (`"unknown"` for other bytes).
pub fn state_name(s: u8) -> &'static str {
    match s {
        state::UP => "up",
        state::IDLE => "idle",
        state::SETTING_UP => "setting up",
        state::FAILED => "failed",
        state::RECONNECTING => "reconnecting",
        _ => "unknown",
    }
}

/// Why a `y` packet could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtError {
    /// The payload is empty or too short for its kind and device bytes.
    Short(usize),
    /// The device list ends before its declared entries do.
    TruncatedList {
        /// Entries declared.
        count: usize,
        /// Entries complete before the end.
        complete: usize,
    },
    /// Bytes follow the last entry of the device list.
    TrailingBytes(usize),
    /// A key longer than [`MAX_KEY`] (encoding only).
    KeyTooLong(usize),
}

impl fmt::Display for ExtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExtError::Short(n) => write!(f, "server packet of {n} bytes is too short"),
            ExtError::TruncatedList { count, complete } => write!(
                f,
                "device list declares {count} entries but only {complete} are complete"
            ),
            ExtError::TrailingBytes(n) => {
                write!(f, "device list has {n} bytes after its last entry")
            }
            ExtError::KeyTooLong(n) => {
                write!(f, "key of {n} bytes is longer than the {MAX_KEY} allowed")
            }
        }
    }
}

impl std::error::Error for ExtError {}

/// A notice from the server's error channel: `<u8 kind> <u8 device> <text>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// What happened (see [`kind`]).
    pub kind: u8,
    /// The device it is about, or 0 for the whole robot or the connection.
    pub device: u8,
    /// A short reason for a person. Decoding replaces invalid UTF-8 and control characters,
    /// so it is safe to print.
    pub text: String,
}

impl Notice {
    /// The notice's payload (the bytes after the `y` packet's header). Text past
    /// [`MAX_NOTICE_TEXT`] bytes is cut at a character boundary and control characters
    /// become spaces.
    pub fn encode(&self) -> Vec<u8> {
        let clean = clean_text(&self.text);
        let mut end = clean.len().min(MAX_NOTICE_TEXT);
        while !clean.is_char_boundary(end) {
            end -= 1;
        }
        let mut v = Vec::with_capacity(2 + end);
        v.push(self.kind);
        v.push(self.device);
        v.extend_from_slice(&clean.as_bytes()[..end]);
        v
    }

    /// Decodes a notice payload. Invalid UTF-8 and control characters in the text are
    /// replaced; the text's length is the payload's (the framing bounds it).
    pub fn decode(payload: &[u8]) -> Result<Notice, ExtError> {
        if payload.len() < 2 {
            return Err(ExtError::Short(payload.len()));
        }
        Ok(Notice {
            kind: payload[0],
            device: payload[1],
            text: clean_text(&String::from_utf8_lossy(&payload[2..])),
        })
    }

    /// The kind's name (see [`kind_name`]).
    pub fn kind_name(&self) -> &'static str {
        kind_name(self.kind)
    }
}

impl fmt::Display for Notice {
    /// `device failed: 'p' (position): link lost`, or without the device when it is 0.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind_name())?;
        if self.kind_name() == "unknown" {
            write!(f, " (0x{:02x})", self.kind)?;
        }
        if self.device != 0 {
            if self.device.is_ascii_graphic() {
                write!(
                    f,
                    ": '{}' ({})",
                    char::from(self.device),
                    device::name(self.device)
                )?;
            } else {
                write!(f, ": 0x{:02x}", self.device)?;
            }
        }
        if !self.text.is_empty() {
            write!(f, ": {}", self.text)?;
        }
        Ok(())
    }
}

fn clean_text(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// One device of the device list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceEntry {
    /// The device code.
    pub code: u8,
    /// The access the device allows: `r`, `w` or `a`.
    pub access: u8,
    /// Its state (see [`state`]).
    pub state: u8,
    /// Sessions reading it.
    pub readers: u16,
    /// Sessions commanding it.
    pub writers: u16,
    /// Size of its latest reading (0 before the first).
    pub data_size: u16,
    /// Publish rate over the last seconds, in tenths of a hertz.
    pub rate_x10: u16,
    /// The catalog name of its driver (`sim`, `p2os`, ...), with invalid UTF-8 and control
    /// characters replaced.
    pub driver: String,
}

impl DeviceEntry {
    /// The publish rate in hertz.
    pub fn rate_hz(&self) -> f64 {
        f64::from(self.rate_x10) / 10.0
    }

    /// The state's name (see [`state_name`]).
    pub fn state_name(&self) -> &'static str {
        state_name(self.state)
    }
}

/// The payload of a device list packet: `'l' 0 <u8 count>` then the entries. At most 255
/// entries are written (the count is a `u8`) and driver names are cut to 255 bytes.
pub fn encode_device_list(entries: &[DeviceEntry]) -> Vec<u8> {
    let entries = &entries[..entries.len().min(usize::from(u8::MAX))];
    let mut v = vec![kind::DEVICE_LIST, 0, entries.len() as u8];
    for e in entries {
        v.extend_from_slice(&[e.code, e.access, e.state]);
        for n in [e.readers, e.writers, e.data_size, e.rate_x10] {
            v.extend_from_slice(&n.to_be_bytes());
        }
        let name = &e.driver.as_bytes()[..e.driver.len().min(usize::from(u8::MAX))];
        v.push(name.len() as u8);
        v.extend_from_slice(name);
    }
    v
}

/// Decodes the payload of a device list packet (starting with its `'l' 0`).
pub fn decode_device_list(payload: &[u8]) -> Result<Vec<DeviceEntry>, ExtError> {
    if payload.len() < 3 {
        return Err(ExtError::Short(payload.len()));
    }
    let count = usize::from(payload[2]);
    let mut entries = Vec::with_capacity(count);
    let mut at = 3;
    let be16 = |i: usize| u16::from_be_bytes([payload[i], payload[i + 1]]);
    for complete in 0..count {
        let truncated = ExtError::TruncatedList { count, complete };
        if payload.len() < at + ENTRY_FIXED {
            return Err(truncated);
        }
        let name_len = usize::from(payload[at + ENTRY_FIXED - 1]);
        let end = at + ENTRY_FIXED + name_len;
        if payload.len() < end {
            return Err(truncated);
        }
        entries.push(DeviceEntry {
            code: payload[at],
            access: payload[at + 1],
            state: payload[at + 2],
            readers: be16(at + 3),
            writers: be16(at + 5),
            data_size: be16(at + 7),
            rate_x10: be16(at + 9),
            driver: clean_text(&String::from_utf8_lossy(&payload[at + ENTRY_FIXED..end])),
        });
        at = end;
    }
    if at != payload.len() {
        return Err(ExtError::TrailingBytes(payload.len() - at));
    }
    Ok(entries)
}

/// What a `y` packet carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerPacket {
    /// A notice of the error channel.
    Notice(Notice),
    /// The answer to `x y l`.
    DeviceList(Vec<DeviceEntry>),
}

/// Decodes the payload of a `y` packet: a device list when its kind byte is `l`, else a
/// notice (of a kind the caller may not know).
pub fn decode_packet(payload: &[u8]) -> Result<ServerPacket, ExtError> {
    match payload.first() {
        None => Err(ExtError::Short(0)),
        Some(&kind::DEVICE_LIST) => decode_device_list(payload).map(ServerPacket::DeviceList),
        Some(_) => Notice::decode(payload).map(ServerPacket::Notice),
    }
}

/// The whole `y` packet (header and payload) for a notice, as a server sends it.
pub fn notice_packet(n: &Notice) -> Vec<u8> {
    message::data(device::SERVER, None, &n.encode())
}

/// `x y e <on>`: the error channel on or off.
pub fn error_channel(on: bool) -> Vec<u8> {
    message::config(device::SERVER, code::ERROR_CHANNEL, &[u8::from(on)])
}

/// `x y E <latch>`: latch (true) or release (false) the emergency stop.
pub fn estop(latch: bool) -> Vec<u8> {
    message::config(device::SERVER, code::ESTOP, &[u8::from(latch)])
}

/// `x y k <key>`: present the shared key; refused here if longer than [`MAX_KEY`].
pub fn key(key: &[u8]) -> Result<Vec<u8>, ExtError> {
    if key.len() > MAX_KEY {
        return Err(ExtError::KeyTooLong(key.len()));
    }
    Ok(message::config(device::SERVER, code::KEY, key))
}

/// `x y l`: ask for the device list.
pub fn device_list_request() -> Vec<u8> {
    message::config(device::SERVER, code::DEVICE_LIST, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(code: u8, driver: &str) -> DeviceEntry {
        DeviceEntry {
            code,
            access: b'a',
            state: state::UP,
            readers: 2,
            writers: 1,
            data_size: 21,
            rate_x10: 100,
            driver: driver.into(),
        }
    }

    #[test]
    fn configs_are_y_configs_with_the_documented_sizes() {
        assert_eq!(error_channel(true), [b'x', b'y', 0, 2, b'e', 1]);
        assert_eq!(estop(true), [b'x', b'y', 0, 2, b'E', 1]);
        assert_eq!(estop(false), [b'x', b'y', 0, 2, b'E', 0]);
        assert_eq!(
            key(b"abc").unwrap(),
            [b'x', b'y', 0, 4, b'k', b'a', b'b', b'c']
        );
        assert_eq!(device_list_request(), [b'x', b'y', 0, 1, b'l']);
        assert_eq!(key(&[b'k'; 64]).unwrap().len(), 4 + 1 + 64);
        assert_eq!(key(&[0; 65]), Err(ExtError::KeyTooLong(65)));
    }

    #[test]
    fn a_notice_is_kind_device_text() {
        let n = Notice {
            kind: kind::FAILED,
            device: b'p',
            text: "serial link lost".into(),
        };
        let packet = notice_packet(&n);
        assert_eq!(&packet[..5], &[b'y', 0, 18, b'f', b'p']);
        assert_eq!(
            decode_packet(&packet[3..]),
            Ok(ServerPacket::Notice(n.clone()))
        );
        assert_eq!(
            n.to_string(),
            "device failed: 'p' (position): serial link lost"
        );
        let whole = Notice {
            kind: b'Q',
            device: 0,
            text: String::new(),
        };
        assert_eq!(whole.to_string(), "unknown (0x51)");
        assert_eq!(Notice::decode(b"E"), Err(ExtError::Short(1)));
        assert_eq!(decode_packet(&[]), Err(ExtError::Short(0)));
    }

    #[test]
    fn notice_text_is_cleaned_and_bounded() {
        let n = Notice::decode(b"c\0bad\x1b[2J\xffend").unwrap();
        assert_eq!(n.text, "bad [2J\u{fffd}end");
        let long = Notice {
            kind: b'x',
            device: 0,
            text: "é".repeat(150),
        };
        let p = long.encode();
        assert!(p.len() - 2 <= MAX_NOTICE_TEXT);
        assert_eq!(Notice::decode(&p).unwrap().text, "é".repeat(100));
    }

    #[test]
    fn device_lists_round_trip() {
        let list = vec![
            entry(b'p', "p2os"),
            entry(b'l', "sicklms200"),
            entry(b'q', ""),
        ];
        let payload = encode_device_list(&list);
        assert_eq!(&payload[..3], &[b'l', 0, 3]);
        // code access state readers writers size rate len name
        assert_eq!(
            &payload[3..3 + ENTRY_FIXED + 4],
            &[b'p', b'a', b'u', 0, 2, 0, 1, 0, 21, 0, 100, 4, b'p', b'2', b'o', b's']
        );
        assert_eq!(
            decode_packet(&payload),
            Ok(ServerPacket::DeviceList(list.clone()))
        );
        assert_eq!(list[0].rate_hz(), 10.0);
        assert_eq!(list[0].state_name(), "up");
        assert_eq!(decode_device_list(&[b'l', 0, 0]), Ok(vec![]));
    }

    #[test]
    fn hostile_device_lists_fail_without_reading_past_the_end() {
        let payload = encode_device_list(&[entry(b'p', "sim"), entry(b's', "sim")]);
        for cut in 0..payload.len() {
            let r = decode_device_list(&payload[..cut]);
            assert!(r.is_err(), "cut at {cut} decoded");
        }
        let mut longer = payload.clone();
        longer.push(0);
        assert_eq!(decode_device_list(&longer), Err(ExtError::TrailingBytes(1)));
        // A count of 255 over three bytes: refused before anything is read.
        assert_eq!(
            decode_device_list(&[b'l', 0, 255]),
            Err(ExtError::TruncatedList {
                count: 255,
                complete: 0
            })
        );
        // A name length past the end.
        let mut bad = payload.clone();
        bad[3 + ENTRY_FIXED - 1] = 200;
        assert!(decode_device_list(&bad).is_err());
    }
}
