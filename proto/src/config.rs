//! Configuration codes (manual Table 8, plus this server's extensions), and the typed
//! decode of the configs a client sends to the server itself (device `y`).

use crate::DataMode;
use std::fmt;

/// `y f <u16>`: set the client's data frequency in Hz.
pub const FREQUENCY: u8 = b'f';
/// `y r <u8>`: set the client's data mode (0 continuous, 1 request/reply, 2 push new,
/// 3 pull new).
pub const DATA_MODE: u8 = b'r';
/// `y d`: request one round of data (request/reply and pull modes).
pub const REQUEST_DATA: u8 = b'd';
/// `y t <u8>`: timestamps on (non-zero) or off (extension).
pub const TIMESTAMPS: u8 = b't';
/// `y e <u8>`: the error channel on (non-zero) or off (extension; docs/extensions.md).
pub const ERRORS: u8 = b'e';
/// `y E <u8>`: latch (non-zero) or release (0) the robot's emergency stop (extension).
pub const ESTOP: u8 = b'E';
/// `y k <key>`: present the shared access key (extension).
pub const KEY: u8 = b'k';
/// `y l`: ask for the device list (extension).
pub const DEVICE_LIST: u8 = b'l';
/// `p m <u8>`: motor power off (0) or on.
pub const MOTOR_POWER: u8 = b'm';
/// `p v <u8>`: velocity mode: 0 direct wheel, non-zero separate translation/rotation.
pub const VELOCITY_MODE: u8 = b'v';
/// `p R`: reset odometry to (0, 0, 0).
pub const RESET_ODOMETRY: u8 = b'R';

/// The longest shared key a client may present (`x y k <key>`).
pub const MAX_KEY: usize = 64;

/// A config a client sent to the server itself (`x y <code> <args>`), decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerConfig<'a> {
    /// `y f <u16>`: the data frequency in Hz (0 is decoded; the server refuses it).
    Frequency(u16),
    /// `y r <u8>`: the data mode.
    DataMode(DataMode),
    /// `y d`: one round of data, please.
    RequestData,
    /// `y t <u8>`: timestamps on or off.
    Timestamps(bool),
    /// `y e <u8>`: the error channel on or off.
    Errors(bool),
    /// `y E <u8>`: latch (true) or release (false) the emergency stop.
    EStop(bool),
    /// `y k <key>`: the shared key (1 to [`MAX_KEY`] bytes).
    Key(&'a [u8]),
    /// `y l`: the device list, please.
    DeviceList,
}

/// Why a `y` config was not decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerConfigError {
    /// The payload is empty: no config code.
    Empty,
    /// An unknown config code, or a known one with arguments of the wrong size.
    Unknown {
        /// The config code.
        code: u8,
        /// The whole payload's size (code and arguments).
        size: usize,
    },
}

impl fmt::Display for ServerConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerConfigError::Empty => f.write_str("no config code"),
            ServerConfigError::Unknown { code, size } => write!(
                f,
                "unknown server config {} or wrong size ({size} bytes)",
                code.escape_ascii()
            ),
        }
    }
}

impl std::error::Error for ServerConfigError {}

impl<'a> ServerConfig<'a> {
    /// Decodes the payload of a config to `y` (the config code, then its arguments).
    pub fn decode(payload: &'a [u8]) -> Result<ServerConfig<'a>, ServerConfigError> {
        let Some((&code, args)) = payload.split_first() else {
            return Err(ServerConfigError::Empty);
        };
        let flag = || args[0] != 0;
        Ok(match (code, args.len()) {
            (FREQUENCY, 2) => ServerConfig::Frequency(u16::from_be_bytes([args[0], args[1]])),
            (DATA_MODE, 1) => ServerConfig::DataMode(DataMode::from_code(args[0])),
            (REQUEST_DATA, 0) => ServerConfig::RequestData,
            (TIMESTAMPS, 1) => ServerConfig::Timestamps(flag()),
            (ERRORS, 1) => ServerConfig::Errors(flag()),
            (ESTOP, 1) => ServerConfig::EStop(flag()),
            (KEY, 1..=MAX_KEY) => ServerConfig::Key(args),
            (DEVICE_LIST, 0) => ServerConfig::DeviceList,
            _ => {
                return Err(ServerConfigError::Unknown {
                    code,
                    size: payload.len(),
                })
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_config_decodes_to_its_value() {
        let cases: [(&[u8], ServerConfig); 10] = [
            (b"f\x00\x0a", ServerConfig::Frequency(10)),
            (b"f\x00\x00", ServerConfig::Frequency(0)),
            (b"r\x02", ServerConfig::DataMode(DataMode::PushNew)),
            (b"r\x07", ServerConfig::DataMode(DataMode::RequestReply)),
            (b"d", ServerConfig::RequestData),
            (b"t\x01", ServerConfig::Timestamps(true)),
            (b"e\x00", ServerConfig::Errors(false)),
            (b"E\x05", ServerConfig::EStop(true)),
            (b"ksecret", ServerConfig::Key(b"secret")),
            (b"l", ServerConfig::DeviceList),
        ];
        for (payload, want) in cases {
            assert_eq!(ServerConfig::decode(payload), Ok(want), "{payload:?}");
        }
    }

    #[test]
    fn a_wrong_size_or_unknown_code_is_refused_with_the_payload_size() {
        for payload in [
            &b"f\x01"[..],
            b"r",
            b"d\x00",
            b"t",
            b"l\x00",
            b"q\x01\x02",
            b"k",
        ] {
            let e = ServerConfig::decode(payload).unwrap_err();
            assert_eq!(
                e,
                ServerConfigError::Unknown {
                    code: payload[0],
                    size: payload.len()
                }
            );
        }
        let long_key = [&b"k"[..], &[b'x'; 65]].concat();
        assert!(ServerConfig::decode(&long_key).is_err());
        assert_eq!(ServerConfig::decode(&[]), Err(ServerConfigError::Empty));
    }
}
