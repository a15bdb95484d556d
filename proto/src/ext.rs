//! The byte layouts of this server's opt-in extensions (docs/extensions.md).
//!
//! Client to server, every extension is a config to the per-client device `y`
//! ([`crate::config`] has the codes). Server to client, every extension message is a packet
//! whose device code is `y`: a notice ([`Notice`]: kind, device, short text) or the device
//! list ([`DeviceEntry`]). `y` never carries data, so a client cannot mistake one of these
//! for a reading. Encoders and decoders here are pure and bounded: a decoder never reads
//! past its slice and rejects counts or lengths that do not fit it.

use std::fmt;

/// The device code of every extension packet from the server.
pub const PACKET: u8 = crate::device::SERVER;

/// The longest notice text, in bytes.
pub const MAX_NOTICE_TEXT: usize = 200;

/// The longest shared key a client may present (`x y k <key>`).
pub use crate::config::MAX_KEY;

/// Kinds of notices (the first byte of a notice packet's payload).
pub mod kind {
    /// A pair of a device request was refused or granted less than asked.
    pub const REFUSED: u8 = b'r';
    /// A command was ignored.
    pub const COMMAND: u8 = b'c';
    /// A config was ignored.
    pub const CONFIG: u8 = b'x';
    /// The command watchdog stopped the device.
    pub const WATCHDOG: u8 = b'w';
    /// The emergency stop was latched.
    pub const ESTOP: u8 = b'E';
    /// The emergency stop was released.
    pub const ESTOP_RELEASED: u8 = b'e';
    /// The device failed (lost link, silent).
    pub const FAILED: u8 = b'f';
    /// The device is up again.
    pub const UP: u8 = b'u';
    /// Access: read-only, wrong key, refused connection.
    pub const ACCESS: u8 = b'a';
    /// The client overloads the server (input or unread output over its bound).
    pub const OVERLOAD: u8 = b'o';
    /// A client's own command pre-empted an internal writer of the device (navigation
    /// driving the base): the client's command went through, the writer stopped.
    pub const PREEMPTED: u8 = b'n';
    /// The device list (not a notice: the answer to `x y l`).
    pub const DEVICE_LIST: u8 = b'l';

    /// Every notice kind and the device list's: a device whose code is one of these
    /// cannot answer configs ([`super::answer_packet`] refuses it), so a client tells a
    /// notice from a config's answer by the first byte alone.
    pub const ALL: [u8; 12] = [
        REFUSED,
        COMMAND,
        CONFIG,
        WATCHDOG,
        ESTOP,
        ESTOP_RELEASED,
        FAILED,
        UP,
        ACCESS,
        OVERLOAD,
        PREEMPTED,
        DEVICE_LIST,
    ];
}

/// The longest body of one config's answer packet (the `y` packet's size field is a u16
/// and counts the kind byte too).
pub const MAX_ANSWER_BODY: usize = u16::MAX as usize - 1;

/// One packet of a device's answer to a config: `y <u16 size> <device> <body>`, the
/// device's code as the kind, the body the device's answer layout ([`crate::nav`]: `M`'s
/// tile as the issue gives it, `H`'s and `G`'s as Player 1.6.5's with the config code in
/// the subtype's place).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer<'a> {
    /// The device that answers (the packet's kind).
    pub device: u8,
    /// The config code it answers ([`crate::nav::answered_code`]: `t` for the map's tile,
    /// else the body's first byte).
    pub code: u8,
    /// The whole body (the layouts of [`crate::nav`] decode it).
    pub body: &'a [u8],
}

/// A whole answer packet `y <u16 size> <device> <body>`. Refused when `device` is a
/// notice kind ([`kind::ALL`]) or 0, when the body is empty or longer than
/// [`MAX_ANSWER_BODY`].
pub fn answer_packet(device: u8, body: &[u8]) -> Result<Vec<u8>, ExtError> {
    if device == 0 || kind::ALL.contains(&device) {
        return Err(ExtError(
            "a device whose code is a notice kind cannot answer configs",
        ));
    }
    if body.is_empty() {
        return Err(ExtError("an answer has a body"));
    }
    if body.len() > MAX_ANSWER_BODY {
        return Err(ExtError("an answer's body is at most 65534 bytes"));
    }
    let mut v = Vec::with_capacity(4 + body.len());
    v.push(PACKET);
    v.extend_from_slice(&((1 + body.len()) as u16).to_be_bytes());
    v.push(device);
    v.extend_from_slice(body);
    Ok(v)
}

/// The answer a `y` payload (without its 3-byte header) is, if it is one: its kind is
/// neither a notice kind nor 0, and it has a body. (A client asks this before
/// [`decode`], which reads every other kind as a notice.)
pub fn decode_answer(payload: &[u8]) -> Option<Answer<'_>> {
    match payload {
        [device, body @ ..] if *device != 0 && !kind::ALL.contains(device) && !body.is_empty() => {
            Some(Answer {
                device: *device,
                code: crate::nav::answered_code(*device, body).unwrap_or(body[0]),
                body,
            })
        }
        _ => None,
    }
}

/// A short message from the server about a request, a device or the robot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// What happened (one of [`kind`]; clients ignore kinds they do not know).
    pub kind: u8,
    /// The device it is about, or 0 for the robot or the connection.
    pub device: u8,
    /// A reason for a person.
    pub text: String,
}

/// Makes `text` fit a notice: control characters become spaces, and it is cut to
/// [`MAX_NOTICE_TEXT`] bytes on a character boundary.
pub fn clean_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_NOTICE_TEXT));
    for c in text.chars() {
        let c = if c.is_control() { ' ' } else { c };
        if out.len() + c.len_utf8() > MAX_NOTICE_TEXT {
            break;
        }
        out.push(c);
    }
    out
}

/// A whole notice packet `y <size> <kind> <device> <text>` (the text cleaned with
/// [`clean_text`]).
pub fn notice(kind: u8, device: u8, text: &str) -> Vec<u8> {
    let text = clean_text(text);
    let len = 2 + text.len();
    let mut v = Vec::with_capacity(3 + len);
    v.push(PACKET);
    v.extend_from_slice(&(len as u16).to_be_bytes());
    v.push(kind);
    v.push(device);
    v.extend_from_slice(text.as_bytes());
    v
}

/// One device in the device list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceEntry {
    /// The device code.
    pub code: u8,
    /// What it allows: `r`, `w` or `a`.
    pub access: u8,
    /// `u` up, `i` idle, `s` setting up, `f` failed, `c` reconnecting.
    pub state: u8,
    /// Sessions reading it.
    pub readers: u16,
    /// Sessions holding write access.
    pub writers: u16,
    /// Size of its latest reading (0 before the first).
    pub data_size: u16,
    /// Readings per second over the last seconds, in tenths of a hertz.
    pub rate_x10: u16,
    /// The driver's catalog name (at most 255 bytes).
    pub driver: String,
}

/// Device states in the device list.
pub mod state {
    /// Set up and working.
    pub const UP: u8 = b'u';
    /// No holder; not set up.
    pub const IDLE: u8 = b'i';
    /// Being set up.
    pub const SETTING_UP: u8 = b's';
    /// Failed (setup failed, link lost, silent).
    pub const FAILED: u8 = b'f';
    /// The driver is reconnecting its link.
    pub const RECONNECTING: u8 = b'c';
}

/// The most entries a device list can carry.
pub const MAX_DEVICES: usize = 255;

/// A whole device-list packet `y <size> l 0 <count> <entries>`. At most [`MAX_DEVICES`]
/// entries; driver names are cut to 255 bytes, and entries that would overflow the packet's
/// u16 size are left out.
pub fn device_list(entries: &[DeviceEntry]) -> Vec<u8> {
    let mut body = vec![kind::DEVICE_LIST, 0, 0];
    let mut count = 0u8;
    for e in entries.iter().take(MAX_DEVICES) {
        let name = &e.driver.as_bytes()[..e.driver.len().min(255)];
        if body.len() + 12 + name.len() > usize::from(u16::MAX) {
            break;
        }
        body.extend_from_slice(&[e.code, e.access, e.state]);
        for v in [e.readers, e.writers, e.data_size, e.rate_x10] {
            body.extend_from_slice(&v.to_be_bytes());
        }
        body.push(name.len() as u8);
        body.extend_from_slice(name);
        count += 1;
    }
    body[2] = count;
    let mut v = Vec::with_capacity(3 + body.len());
    v.push(PACKET);
    v.extend_from_slice(&(body.len() as u16).to_be_bytes());
    v.extend_from_slice(&body);
    v
}

/// An extension packet the client received (the payload of a `y` packet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extension {
    /// A notice.
    Notice(Notice),
    /// The device list.
    DeviceList(Vec<DeviceEntry>),
}

/// A `y` payload that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtError(pub &'static str);

impl fmt::Display for ExtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for ExtError {}

/// Decodes the payload of a `y` packet (without the 3-byte header).
pub fn decode(payload: &[u8]) -> Result<Extension, ExtError> {
    if payload.len() < 2 {
        return Err(ExtError("extension packet shorter than 2 bytes"));
    }
    let (k, device) = (payload[0], payload[1]);
    if k != kind::DEVICE_LIST {
        let text = String::from_utf8_lossy(&payload[2..]).into_owned();
        return Ok(Extension::Notice(Notice {
            kind: k,
            device,
            text,
        }));
    }
    let Some(&count) = payload.get(2) else {
        return Err(ExtError("device list without a count"));
    };
    let mut rest = &payload[3..];
    let mut entries = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        if rest.len() < 12 {
            return Err(ExtError("device list entry cut short"));
        }
        let u = |i: usize| u16::from_be_bytes([rest[i], rest[i + 1]]);
        let n = usize::from(rest[11]);
        if rest.len() < 12 + n {
            return Err(ExtError("device list driver name cut short"));
        }
        entries.push(DeviceEntry {
            code: rest[0],
            access: rest[1],
            state: rest[2],
            readers: u(3),
            writers: u(5),
            data_size: u(7),
            rate_x10: u(9),
            driver: String::from_utf8_lossy(&rest[12..12 + n]).into_owned(),
        });
        rest = &rest[12 + n..];
    }
    Ok(Extension::DeviceList(entries))
}

// ----- client side: the configs a client sends, names for printing -----------------------

/// `x y e <on>`: the error channel on or off.
pub fn error_channel(on: bool) -> Vec<u8> {
    crate::message::config(PACKET, crate::config::ERRORS, &[u8::from(on)])
}

/// `x y E <latch>`: latch (true) or release (false) the emergency stop.
pub fn estop(latch: bool) -> Vec<u8> {
    crate::message::config(PACKET, crate::config::ESTOP, &[u8::from(latch)])
}

/// `x y k <key>`: present the shared key; refused here if longer than [`MAX_KEY`].
pub fn key(key: &[u8]) -> Result<Vec<u8>, ExtError> {
    if key.len() > MAX_KEY {
        return Err(ExtError("a key is at most 64 bytes long"));
    }
    Ok(crate::message::config(PACKET, crate::config::KEY, key))
}

/// `x y l`: ask for the device list.
pub fn device_list_request() -> Vec<u8> {
    crate::message::config(PACKET, crate::config::DEVICE_LIST, &[])
}

/// A short name for a notice kind, for printing (`"unknown"` for kinds this crate does not
/// know).
pub fn kind_name(k: u8) -> &'static str {
    match k {
        kind::REFUSED => "refused",
        kind::COMMAND => "command ignored",
        kind::CONFIG => "config ignored",
        kind::WATCHDOG => "watchdog stop",
        kind::ESTOP => "e-stop latched",
        kind::ESTOP_RELEASED => "e-stop released",
        kind::FAILED => "device failed",
        kind::UP => "device up",
        kind::ACCESS => "access",
        kind::OVERLOAD => "overload",
        kind::PREEMPTED => "pre-empted",
        kind::DEVICE_LIST => "device list",
        _ => "unknown",
    }
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

impl Notice {
    /// The kind's name (see [`kind_name`]).
    pub fn kind_name(&self) -> &'static str {
        kind_name(self.kind)
    }
}

impl fmt::Display for Notice {
    /// `device failed: 'p' (position): link lost`; no device part when it is 0. The text
    /// goes through [`clean_text`], so a line never carries control characters.
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
                    crate::device::name(self.device)
                )?;
            } else {
                write!(f, ": 0x{:02x}", self.device)?;
            }
        }
        if !self.text.is_empty() {
            write!(f, ": {}", clean_text(&self.text))?;
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_and_stay_one_line() {
        let v = notice(kind::COMMAND, b'p', "bad\ncode \u{7}x");
        assert_eq!(v[0], b'y');
        assert_eq!(usize::from(u16::from_be_bytes([v[1], v[2]])), v.len() - 3);
        match decode(&v[3..]).unwrap() {
            Extension::Notice(n) => {
                assert_eq!(n.kind, kind::COMMAND);
                assert_eq!(n.device, b'p');
                assert_eq!(n.text, "bad code  x");
            }
            other => panic!("{other:?}"),
        }
        let long = "é".repeat(300);
        let v = notice(kind::FAILED, 0, &long);
        assert!(v.len() - 5 <= MAX_NOTICE_TEXT);
        assert!(std::str::from_utf8(&v[5..]).is_ok());
    }

    #[test]
    fn device_lists_round_trip_and_bad_ones_are_refused() {
        let entries = vec![
            DeviceEntry {
                code: b'p',
                access: b'a',
                state: state::UP,
                readers: 3,
                writers: 1,
                data_size: 21,
                rate_x10: 100,
                driver: "sim".into(),
            },
            DeviceEntry {
                code: b'l',
                access: b'r',
                state: state::IDLE,
                readers: 0,
                writers: 0,
                data_size: 0,
                rate_x10: 0,
                driver: "sicklms200".into(),
            },
        ];
        let v = device_list(&entries);
        assert_eq!(decode(&v[3..]).unwrap(), Extension::DeviceList(entries));
        for cut in 3..v.len() - 1 {
            assert!(decode(&v[3..cut]).is_err(), "cut at {cut}");
        }
    }
}

#[cfg(test)]
mod answer_tests {
    use super::*;

    #[test]
    fn an_answer_packet_is_y_size_device_body() {
        // Written from the layout: `y`, u16 size counting the kind byte and the body, the
        // device code as the kind, the body (for `G`, 1.6.5's layout, the code `w` in the
        // subtype's place).
        let v = answer_packet(b'G', &[b'w', 0, 0]).unwrap();
        assert_eq!(v, [b'y', 0, 4, b'G', b'w', 0, 0]);
        let a = decode_answer(&v[3..]).unwrap();
        assert_eq!((a.device, a.code, a.body), (b'G', b'w', &[b'w', 0, 0][..]));
        // `M`'s one answer, the tile, starts with the map id: it answers `t` all the same.
        let v = answer_packet(b'M', &[0, 0, 0, 7]).unwrap();
        assert_eq!(v, [b'y', 0, 5, b'M', 0, 0, 0, 7]);
        let a = decode_answer(&v[3..]).unwrap();
        assert_eq!((a.device, a.code, a.body), (b'M', b't', &[0, 0, 0, 7][..]));
    }

    #[test]
    fn notice_kinds_never_answer_and_notices_are_never_answers() {
        for k in kind::ALL {
            assert!(answer_packet(k, b"x").is_err(), "{}", char::from(k));
            assert_eq!(decode_answer(&notice(k, b'p', "text")[3..]), None);
        }
        assert!(answer_packet(0, b"x").is_err());
        assert!(answer_packet(b'G', b"").is_err());
        assert!(answer_packet(b'G', &vec![b'w'; MAX_ANSWER_BODY]).is_ok());
        assert!(answer_packet(b'G', &vec![b'w'; MAX_ANSWER_BODY + 1]).is_err());
        assert_eq!(decode_answer(b"G"), None, "no body");
        assert_eq!(decode_answer(&[]), None);
    }
}

#[cfg(test)]
mod client_tests {
    use super::*;

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
        assert!(key(&[0; 65]).is_err());
    }

    #[test]
    fn notices_print_as_one_clean_line() {
        let n = Notice {
            kind: kind::FAILED,
            device: b'p',
            text: "serial link lost".into(),
        };
        assert_eq!(
            n.to_string(),
            "device failed: 'p' (position): serial link lost"
        );
        let odd = Notice {
            kind: b'Q',
            device: 0,
            text: "a\x1b[2Jb\nc".into(),
        };
        assert_eq!(odd.to_string(), "unknown (0x51): a [2Jb c");
    }

    #[test]
    fn entries_name_their_state_and_rate() {
        let e = DeviceEntry {
            code: b'p',
            access: b'a',
            state: state::RECONNECTING,
            readers: 0,
            writers: 0,
            data_size: 0,
            rate_x10: 95,
            driver: "p2os".into(),
        };
        assert_eq!(e.state_name(), "reconnecting");
        assert_eq!(e.rate_hz(), 9.5);
        assert_eq!(state_name(0), "unknown");
    }
}
