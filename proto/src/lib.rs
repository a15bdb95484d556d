//! Byte layouts of the Player 0.7.4a client protocol.
//!
//! This crate is the one place that knows how Player messages and device data look on the
//! wire (the manual's Tables 2-10, all big-endian). It is pure: slices in, typed values out,
//! and typed values in, bytes out. No sockets, clocks or threads. Both the server (whose
//! drivers encode device data and whose codec decodes client messages) and the client
//! library (which encodes client messages and decodes data) use it, so the two sides cannot
//! drift apart.
//!
//! - [`device`] and [`access`]: the one-byte device and access codes (Table 3).
//! - [`data`]: the `<data>` field of each device's data packet (Table 7) and the
//!   `<command>` field of each commandable device (Table 5).
//! - [`ext`]: the opt-in extensions' messages (notices, device list).
//! - [`scan`]: the full scan device `L` (an extension) and the 0.7.4a `l` view of any
//!   laser.
//! - [`nav`]: the navigation devices `M` (map), `H` (localizer, Player 1.6.5's layout) and
//!   `G` (planner, Player 1.6.5's plus a state), their configs and answers; [`nav::si`]
//!   the same in metres and radians, as the front ends speak them.
//! - [`odometry`]: the full-precision odometry device `P`.
//! - [`message`]: the framing of every message in both directions (Tables 9 and 10), and
//!   an incremental decoder of server messages for clients.
//! - `codec` (feature `codec`): the server's incremental decoder of client messages, on
//!   `bytes`' buffers.
//! - `recording` (feature `recording`): the reader of recordings (MCAP) the replay driver
//!   plays.
#![deny(missing_docs)]

/// Largest client message payload the server buffers. Every message of the manual is far
/// smaller (a request for all seven devices is 14 bytes); larger ones are skipped unread,
/// and a recording's message larger than this is not replayed.
pub const MAX_PAYLOAD: usize = 4096;

/// The MCAP message encoding of raw 0.7.4a device data (the `<data>` field of a data
/// packet, byte for byte), as recordings carry it.
pub const RAW_ENCODING: &str = "player-0.7.4a";

#[cfg(any(feature = "codec", test))]
pub mod codec;
pub mod data;
pub mod ext;
pub mod message;
pub mod nav;
pub mod odometry;
#[cfg(feature = "recording")]
pub mod recording;
pub mod scan;

/// Device codes (manual Table 3a), plus the server's own configurable device `y`.
pub mod device {
    /// SICK LMS-200 laser range finder.
    pub const LASER: u8 = b'l';
    /// The 16 Pioneer sonars.
    pub const SONAR: u8 = b's';
    /// The Pioneer base: odometry, speed, wheels.
    pub const POSITION: u8 = b'p';
    /// The Pioneer gripper.
    pub const GRIPPER: u8 = b'g';
    /// Miscellaneous: bumpers and battery voltage.
    pub const MISC: u8 = b'm';
    /// ACTS colour blob vision.
    pub const VISION: u8 = b'v';
    /// Sony pan-tilt-zoom camera.
    pub const PTZ: u8 = b'z';
    /// The server itself, as seen by one client (configuration only).
    pub const SERVER: u8 = b'y';
    /// A laser's full scan as the sensor measured it (extension; docs/extensions.md).
    pub const FULL_SCAN: u8 = b'L';
    /// The occupancy grid map (extension; [`crate::nav`]).
    pub const MAP: u8 = b'M';
    /// The localizer's pose hypotheses (extension; Player 1.6.5's localize layout).
    pub const LOCALIZE: u8 = b'H';
    /// The planner: goals in, progress out (extension; Player 1.6.5's planner layout).
    pub const PLANNER: u8 = b'G';
    /// The base's own odometry position when `p` is served by another driver (the
    /// localizer's map-frame pose): `p`'s 21-byte layout (extension).
    pub const ODOMETRY: u8 = b'O';
    /// The base's odometry at full precision (extension; [`crate::odometry`]).
    pub const PRECISE_ODOMETRY: u8 = b'P';

    /// The seven devices of the 0.7.4a manual.
    pub const ALL: [u8; 7] = [LASER, SONAR, POSITION, GRIPPER, MISC, VISION, PTZ];

    /// A printable name for a device code, for logs and errors.
    pub fn name(code: u8) -> &'static str {
        match code {
            LASER => "laser",
            SONAR => "sonar",
            POSITION => "position",
            GRIPPER => "gripper",
            MISC => "misc",
            VISION => "vision",
            PTZ => "ptz",
            SERVER => "server",
            FULL_SCAN => "scan",
            MAP => "map",
            LOCALIZE => "localize",
            PLANNER => "planner",
            ODOMETRY => "odometry",
            PRECISE_ODOMETRY => "precise odometry",
            _ => "unknown",
        }
    }
}

/// Access codes (manual Table 3b).
pub mod access {
    /// Read: the server streams this device's data.
    pub const READ: u8 = b'r';
    /// Write: the client may command this device.
    pub const WRITE: u8 = b'w';
    /// All: read and write.
    pub const ALL: u8 = b'a';
    /// Close: no access.
    pub const CLOSE: u8 = b'c';
    /// Error: only in replies, for a device that is unknown or failed to set up.
    pub const ERROR: u8 = b'e';
}

pub mod config;

/// The per-client data delivery modes set with `x y r`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataMode {
    /// 0: every tick, the current data of every read device (the 0.7.4a default).
    Continuous,
    /// 1: one round of every read device's current data per `y d` request.
    RequestReply,
    /// 2 (extension): data pushed as it becomes new, at most at the client's frequency.
    PushNew,
    /// 3 (extension): per `y d`, only the devices with data new since the last round.
    PullNew,
}

impl DataMode {
    /// The mode's byte on the wire.
    pub fn code(self) -> u8 {
        match self {
            DataMode::Continuous => 0,
            DataMode::RequestReply => 1,
            DataMode::PushNew => 2,
            DataMode::PullNew => 3,
        }
    }

    /// The mode for a byte on the wire. 0.7.4a treats every non-zero byte as request/reply;
    /// so do we for bytes other than 2 and 3.
    pub fn from_code(code: u8) -> DataMode {
        match code {
            0 => DataMode::Continuous,
            2 => DataMode::PushNew,
            3 => DataMode::PullNew,
            _ => DataMode::RequestReply,
        }
    }
}
