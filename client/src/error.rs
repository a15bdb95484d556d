//! The client's error type.

use std::fmt;
use std::io;

use player_proto::data::DataError;
use player_proto::device;
use player_proto::ext::ExtError;
use player_proto::message::FrameError;

/// Everything that can go wrong talking to a Player server.
///
/// Messages name the device involved by its code and name, for example
/// `data packet from 's' (sonar) ...`.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The socket failed (connection reset, broken pipe, ...).
    Io(io::Error),
    /// Nothing arrived within the read timeout (see [`Client::set_read_timeout`]).
    ///
    /// The connection stays usable: bytes of a message that had partly arrived are kept
    /// and the next read carries on from them.
    ///
    /// [`Client::set_read_timeout`]: crate::Client::set_read_timeout
    Timeout,
    /// The server closed the connection.
    Disconnected {
        /// Bytes of an unfinished message left when the connection closed (0 if it
        /// closed between messages).
        pending: usize,
    },
    /// A server message could not be framed (a reply of odd size, a data packet too
    /// small for its timestamp). The message was skipped; the stream is still in step.
    Frame(FrameError),
    /// A data packet's payload does not fit its device's layout (manual Table 7).
    /// The packet was skipped; the other devices' data was kept.
    Data {
        /// The device code.
        device: u8,
        /// What was wrong.
        error: DataError,
    },
    /// A device request was not granted as asked (see [`Grant::check`]).
    ///
    /// [`Grant::check`]: crate::Grant::check
    Refused {
        /// The device code.
        device: u8,
        /// The access asked for.
        requested: u8,
        /// The access the server granted (`e` on error).
        granted: u8,
    },
    /// The reply to a device request does not list the requested devices in order.
    ReplyMismatch {
        /// The pairs sent.
        requested: Vec<(u8, u8)>,
        /// The pairs the server replied with.
        reply: Vec<(u8, u8)>,
    },
    /// A data packet came from a device this client does not hold with read access.
    UnexpectedDevice {
        /// The device code of the packet.
        device: u8,
        /// The access this client holds on it, if it ever asked for it.
        access: Option<u8>,
    },
    /// A command for a device this client does not hold with write access
    /// (`w` or `a`). Nothing was sent.
    NotWritable {
        /// The device code.
        device: u8,
        /// The access this client holds on it, if it ever asked for it.
        access: Option<u8>,
    },
    /// A request string is not pairs of device and access codes (`r w a c`).
    BadSpec {
        /// The request string.
        spec: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A message does not fit the protocol's 16-bit size field. Nothing was sent.
    TooLarge {
        /// Which message.
        what: &'static str,
        /// Its payload size in bytes.
        len: usize,
    },
    /// [`Client::read`] was called while no device is held with read access, so no
    /// data will ever come.
    ///
    /// [`Client::read`]: crate::Client::read
    NothingToRead,
    /// An argument the server would refuse (for example a frequency of 0 Hz). Nothing
    /// was sent.
    InvalidArgument(&'static str),
    /// A `y` packet of the extensions (a notice, the device list) could not be decoded.
    /// It was skipped; the stream is still in step.
    Extension(ExtError),
}

/// Prints a device code as `'s' (sonar)`, or `0x00 (unknown)` when not printable.
pub(crate) struct Dev(pub u8);

impl fmt::Display for Dev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = device::name(self.0);
        if self.0.is_ascii_graphic() {
            write!(f, "'{}' ({name})", char::from(self.0))
        } else {
            write!(f, "0x{:02x} ({name})", self.0)
        }
    }
}

/// Prints an access code as `'w' (write)`.
pub(crate) struct Acc(pub u8);

impl fmt::Display for Acc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.0 {
            b'r' => "read",
            b'w' => "write",
            b'a' => "all",
            b'c' => "close",
            b'e' => "error",
            _ => "unknown",
        };
        if self.0.is_ascii_graphic() {
            write!(f, "'{}' ({name})", char::from(self.0))
        } else {
            write!(f, "0x{:02x} ({name})", self.0)
        }
    }
}

struct Pairs<'a>(&'a [(u8, u8)]);

impl fmt::Display for Pairs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for &(d, a) in self.0 {
            for b in [d, a] {
                if b.is_ascii_graphic() {
                    write!(f, "{}", char::from(b))?;
                } else {
                    write!(f, "\\x{b:02x}")?;
                }
            }
        }
        f.write_str("\"")
    }
}

fn held(f: &mut fmt::Formatter<'_>, access: Option<u8>) -> fmt::Result {
    match access {
        Some(a) => write!(f, "this client holds {}", Acc(a)),
        None => f.write_str("this client never requested it"),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "connection to the Player server failed: {e}"),
            Error::Timeout => f.write_str("timed out waiting for the Player server"),
            Error::Disconnected { pending: 0 } => {
                f.write_str("the Player server closed the connection")
            }
            Error::Disconnected { pending } => write!(
                f,
                "the Player server closed the connection in the middle of a message \
                 ({pending} bytes of it received)"
            ),
            Error::Frame(e) => write!(f, "bad message from the Player server: {e}"),
            Error::Data { device, error } => {
                write!(f, "bad data packet from {}: {error}", Dev(*device))
            }
            Error::Refused {
                device,
                requested,
                granted,
            } => write!(
                f,
                "device {} was not granted: asked {}, got {}",
                Dev(*device),
                Acc(*requested),
                Acc(*granted)
            ),
            Error::ReplyMismatch { requested, reply } => write!(
                f,
                "the reply {} does not match the request {}",
                Pairs(reply),
                Pairs(requested)
            ),
            Error::UnexpectedDevice { device, access } => {
                write!(f, "data packet from {} although ", Dev(*device))?;
                held(f, *access)?;
                f.write_str(" and no read access")
            }
            Error::NotWritable { device, access } => {
                write!(f, "cannot command {}: ", Dev(*device))?;
                held(f, *access)?;
                f.write_str(", not write access (request 'w' or 'a' first)")
            }
            Error::BadSpec { spec, reason } => {
                write!(f, "bad request string {spec:?}: {reason}")
            }
            Error::TooLarge { what, len } => write!(
                f,
                "{what} of {len} bytes does not fit the protocol's 16-bit size field"
            ),
            Error::NothingToRead => {
                f.write_str("no device is held with read access, so there is nothing to read")
            }
            Error::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
            Error::Extension(e) => write!(f, "bad notice or device list from the server: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            Error::Frame(e) => Some(e),
            Error::Data { error, .. } => Some(error),
            Error::Extension(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    /// Timeouts become [`Error::Timeout`], an unexpected end of stream
    /// [`Error::Disconnected`], everything else [`Error::Io`].
    fn from(e: io::Error) -> Self {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Timeout,
            io::ErrorKind::UnexpectedEof => Error::Disconnected { pending: 0 },
            _ => Error::Io(e),
        }
    }
}

impl From<FrameError> for Error {
    fn from(e: FrameError) -> Self {
        Error::Frame(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_device() {
        let e = Error::Refused {
            device: b'l',
            requested: b'r',
            granted: b'e',
        };
        assert_eq!(
            e.to_string(),
            "device 'l' (laser) was not granted: asked 'r' (read), got 'e' (error)"
        );
        let e = Error::NotWritable {
            device: b'p',
            access: Some(b'r'),
        };
        assert_eq!(
            e.to_string(),
            "cannot command 'p' (position): this client holds 'r' (read), not write access \
             (request 'w' or 'a' first)"
        );
        let e = Error::UnexpectedDevice {
            device: 0,
            access: None,
        };
        assert!(e.to_string().starts_with("data packet from 0x00 (unknown)"));
        let e = Error::ReplyMismatch {
            requested: vec![(b's', b'r')],
            reply: vec![(b'p', b'r')],
        };
        assert_eq!(
            e.to_string(),
            "the reply \"pr\" does not match the request \"sr\""
        );
    }

    #[test]
    fn io_timeouts_become_timeout() {
        let e: Error = io::Error::from(io::ErrorKind::WouldBlock).into();
        assert!(matches!(e, Error::Timeout));
        let e: Error = io::Error::from(io::ErrorKind::TimedOut).into();
        assert!(matches!(e, Error::Timeout));
        let e: Error = io::Error::from(io::ErrorKind::ConnectionReset).into();
        assert!(matches!(e, Error::Io(_)));
    }
}
