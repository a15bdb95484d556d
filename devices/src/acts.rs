//! The ACTS 1.0 request/reply protocol, pure: the one-byte requests and the checks on a
//! blob packet's 64-byte header before its blobs are read (docs/reference/acts.md §2–§3).
//! The packet itself is forwarded to clients unchanged; `player_proto::data::Vision` knows its
//! layout.

use player_proto::data::{ACTS_BLOB, ACTS_CHANNELS, ACTS_HEADER, ACTS_MAX_BLOBS};

/// Ask for one blob packet.
pub const REQUEST: u8 = b'0';
/// Tell ACTS to quit.
pub const QUIT: u8 = b'1';

/// Why a header is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderError {
    /// A count byte of 0 (counts are stored plus one).
    ZeroCount {
        /// The channel.
        channel: usize,
    },
    /// More than 10 blobs on a channel.
    TooMany {
        /// The channel.
        channel: usize,
        /// Its count.
        count: usize,
    },
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderError::ZeroCount { channel } => {
                write!(f, "channel {channel} has a count byte of 0")
            }
            HeaderError::TooMany { channel, count } => {
                write!(
                    f,
                    "channel {channel} claims {count} blobs (at most {ACTS_MAX_BLOBS})"
                )
            }
        }
    }
}

/// The number of blob bytes that follow a header, checked: every count byte at least 1
/// and at most 11 (10 blobs), so at most 3200 bytes follow.
pub fn blob_bytes(header: &[u8; ACTS_HEADER]) -> Result<usize, HeaderError> {
    let mut total = 0;
    for channel in 0..ACTS_CHANNELS {
        let byte = header[2 * channel + 1];
        if byte == 0 {
            return Err(HeaderError::ZeroCount { channel });
        }
        let count = usize::from(byte - 1);
        if count > ACTS_MAX_BLOBS {
            return Err(HeaderError::TooMany { channel, count });
        }
        total += count;
    }
    Ok(total * ACTS_BLOB)
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_proto::data::{Blob, Vision};

    #[test]
    fn the_worked_example_has_one_blob() {
        let mut channels = vec![Vec::new(); ACTS_CHANNELS];
        channels[2].push(Blob {
            area: 100,
            x: 80,
            y: 60,
            left: 75,
            right: 85,
            top: 55,
            bottom: 65,
        });
        let p = Vision { channels }.encode();
        assert_eq!(p.len(), 74);
        assert_eq!(&p[64..], &[1, 1, 2, 37, 0x51, 0x3D, 0x4C, 0x56, 0x38, 0x42]);
        let header: [u8; ACTS_HEADER] = p[..ACTS_HEADER].try_into().unwrap();
        assert_eq!(blob_bytes(&header), Ok(10));
    }

    #[test]
    fn bad_headers_are_refused() {
        let mut h = [1u8; ACTS_HEADER];
        assert_eq!(blob_bytes(&h), Ok(0));
        h[5] = 0;
        assert_eq!(blob_bytes(&h), Err(HeaderError::ZeroCount { channel: 2 }));
        h[5] = 12;
        assert_eq!(
            blob_bytes(&h),
            Err(HeaderError::TooMany {
                channel: 2,
                count: 11
            })
        );
        let full = [11u8; ACTS_HEADER];
        assert_eq!(blob_bytes(&full), Ok(3200));
    }
}
