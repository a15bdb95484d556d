//! The playback control request a client sends to a robot that plays a recording back
//! (the Foxglove SDK's `playbackControl` capability): binary, opcode 3, then u8 command (0
//! play, 1 pause), f32 speed, u8 had-seek, u64 seek time in ns, u32 request id length and
//! the id; little-endian. Pure: bytes in, a [`ControlRequest`] out. What the server answers
//! and how the request reaches the replaying driver is the web viewer's
//! (`player_web::playback`).

/// Binary opcode of a client's playback control request.
pub const OP_PLAYBACK_CONTROL_REQUEST: u8 = 3;

/// Longest request id accepted (bounded before it is copied).
pub const MAX_REQUEST_ID: usize = 256;

/// Why a playback control request was not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// Shorter than its fixed fields, or than the request id it announces.
    #[error("playback control request shorter than its header")]
    Short,
    /// A command other than play (0) or pause (1).
    #[error("playback control request: unknown command {0}")]
    Command(u8),
    /// A request id longer than [`MAX_REQUEST_ID`] or not UTF-8.
    #[error("playback control request: bad request id")]
    RequestId,
}

/// A client's playback control request.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlRequest {
    /// Play (`true`) or pause.
    pub play: bool,
    /// The speed asked for.
    pub speed: f32,
    /// Where to seek, in recording time (ns since the Unix epoch).
    pub seek: Option<u64>,
    /// The client's id for the request, echoed in the answer.
    pub request_id: String,
}

/// Parses a binary playback control request (the opcode included).
pub fn parse_request(b: &[u8]) -> Result<ControlRequest, RequestError> {
    const FIXED: usize = 1 + 1 + 4 + 1 + 8 + 4;
    if b.len() < FIXED || b[0] != OP_PLAYBACK_CONTROL_REQUEST {
        return Err(RequestError::Short);
    }
    let play = match b[1] {
        0 => true,
        1 => false,
        c => return Err(RequestError::Command(c)),
    };
    let speed = f32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    let had_seek = b[6] != 0;
    let seek_time = u64::from_le_bytes(b[7..15].try_into().map_err(|_| RequestError::Short)?);
    let len = u32::from_le_bytes([b[15], b[16], b[17], b[18]]) as usize;
    if len > MAX_REQUEST_ID {
        return Err(RequestError::RequestId);
    }
    let id = b.get(FIXED..FIXED + len).ok_or(RequestError::Short)?;
    let request_id = std::str::from_utf8(id)
        .map_err(|_| RequestError::RequestId)?
        .to_string();
    Ok(ControlRequest {
        play,
        speed,
        seek: had_seek.then_some(seek_time),
        request_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(cmd: u8, speed: f32, seek: Option<u64>, id: &str) -> Vec<u8> {
        let mut b = vec![OP_PLAYBACK_CONTROL_REQUEST, cmd];
        b.extend_from_slice(&speed.to_le_bytes());
        b.push(u8::from(seek.is_some()));
        b.extend_from_slice(&seek.unwrap_or(0).to_le_bytes());
        b.extend_from_slice(&(id.len() as u32).to_le_bytes());
        b.extend_from_slice(id.as_bytes());
        b
    }

    #[test]
    fn playback_requests_parse_with_and_without_a_seek() {
        let r = parse_request(&request(0, 1.5, Some(100_500_000_000), "some-id")).unwrap();
        assert_eq!(
            r,
            ControlRequest {
                play: true,
                speed: 1.5,
                seek: Some(100_500_000_000),
                request_id: "some-id".into()
            }
        );
        let r = parse_request(&request(1, 2.0, None, "")).unwrap();
        assert!(!r.play);
        assert_eq!(r.seek, None);
        assert_eq!(r.speed, 2.0);
    }

    #[test]
    fn bad_playback_requests_are_refused_before_reading_past_the_end() {
        let good = request(0, 1.0, None, "abc");
        assert_eq!(
            parse_request(&good[..good.len() - 1]),
            Err(RequestError::Short)
        );
        assert_eq!(parse_request(&good[..10]), Err(RequestError::Short));
        assert_eq!(
            parse_request(&request(7, 1.0, None, "")),
            Err(RequestError::Command(7))
        );
        let mut long = request(0, 1.0, None, "");
        long[15..19].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(parse_request(&long), Err(RequestError::RequestId));
        let mut bad_utf8 = request(0, 1.0, None, "ab");
        let n = bad_utf8.len();
        bad_utf8[n - 1] = 0xff;
        assert_eq!(parse_request(&bad_utf8), Err(RequestError::RequestId));
    }
}
