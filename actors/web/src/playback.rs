//! Playback control over the Foxglove WebSocket protocol, for a robot served by a driver
//! that plays a recording back (`-replay`): Foxglove's timeline plays, pauses, changes the
//! speed and seeks.
//!
//! The protocol (the Foxglove SDK's `playbackControl` capability): the server's
//! `serverInfo` lists the capability (also under its earlier name `rangedPlayback`) and
//! `time`, and gives the recording's span as `dataStartTime` / `dataEndTime`
//! (`{sec, nsec}`). A client sends a binary playback control request (opcode 3: u8 command
//! 0 play / 1 pause, f32 speed, u8 had-seek, u64 seek time in ns, u32 request id length,
//! the id); the server answers with a binary playback state (opcode 5: u8 status 0 playing /
//! 1 paused / 2 buffering / 3 ended, u64 current time in ns, f32 speed, u8 did-seek, u32
//! request id length, the id), and sends one without an id when playback changes otherwise
//! (another client, the end, a loop). Binary `time` messages (opcode 2, u64 ns) carry the
//! recording's clock. All little-endian. Message timestamps are the recording's times, so
//! the data lines up with the timeline.
//!
//! The request goes to the registry as the kit's generic
//! [`PlaybackRequest`]; the driver answers with its
//! shared [`PlaybackClock`], which this module reads.

use bytes::{BufMut, Bytes, BytesMut};
use player_kit::driver::{DeviceData, Timestamp};
use player_kit::playback::{PlaybackClock, PlaybackRequest, PlaybackState, PlaybackStatus};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// Binary opcode of the server's `time`.
pub const OP_TIME: u8 = 2;

/// Binary opcode of the server's playback state.
pub const OP_PLAYBACK_STATE: u8 = 5;

/// How often a session sends the recording's clock while it plays.
pub const TIME_PERIOD: Duration = Duration::from_millis(100);

/// The outbox slot of a session's `time` messages (newest wins, like a subscription's):
/// a subscription id a replaying endpoint refuses to its clients.
pub const TIME_SLOT: u32 = u32::MAX;

/// The capabilities a replaying endpoint adds to `serverInfo`.
pub const CAPABILITIES: [&str; 3] = ["playbackControl", "rangedPlayback", "time"];

/// The client's request, parsed by the pure crate (bytes in, a [`ControlRequest`] out).
pub use player_foxglove::playback::{
    parse_request, ControlRequest, RequestError, MAX_REQUEST_ID, OP_PLAYBACK_CONTROL_REQUEST,
};

/// The kit's request for the client's `r`.
pub fn to_kit(r: &ControlRequest) -> PlaybackRequest {
    PlaybackRequest {
        play: Some(r.play),
        speed: Some(f64::from(r.speed)),
        seek: r.seek,
    }
}

/// A binary playback state.
pub fn state_frame(state: &PlaybackState, did_seek: bool, request_id: Option<&str>) -> Bytes {
    let id = request_id.unwrap_or("");
    let mut b = BytesMut::with_capacity(19 + id.len());
    b.put_u8(OP_PLAYBACK_STATE);
    b.put_u8(match state.status {
        PlaybackStatus::Playing => 0,
        PlaybackStatus::Paused => 1,
        PlaybackStatus::Ended => 3,
    });
    b.put_u64_le(state.current);
    b.put_f32_le(state.speed as f32);
    b.put_u8(u8::from(did_seek));
    b.put_u32_le(u32::try_from(id.len()).unwrap_or(0));
    b.put_slice(id.as_bytes());
    b.freeze()
}

/// A binary `time`.
pub fn time_frame(nanos: u64) -> Bytes {
    let mut b = BytesMut::with_capacity(9);
    b.put_u8(OP_TIME);
    b.put_u64_le(nanos);
    b.freeze()
}

fn sec_nsec(nanos: u64) -> Value {
    json!({"sec": nanos / 1_000_000_000, "nsec": nanos % 1_000_000_000})
}

/// `info` (a `serverInfo`) with the playback capabilities and the recording's span.
pub fn server_info(info: &str, state: &PlaybackState) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(info) else {
        return info.to_string();
    };
    if let Some(caps) = v["capabilities"].as_array_mut() {
        for c in CAPABILITIES {
            if !caps.iter().any(|x| x == c) {
                caps.push(json!(c));
            }
        }
    }
    v["dataStartTime"] = sec_nsec(state.start);
    v["dataEndTime"] = sec_nsec(state.end);
    v.to_string()
}

/// One session's view of the replay: the driver's clock and what the client was last
/// told.
pub struct Replay {
    clock: Arc<PlaybackClock>,
    told_changes: u64,
    told_seeks: u64,
    told_time: Option<u64>,
}

impl Replay {
    /// A view of `clock`, nothing told yet.
    pub fn new(clock: Arc<PlaybackClock>) -> Replay {
        let s = clock.state();
        Replay {
            clock,
            told_changes: s.changes,
            told_seeks: s.seeks,
            told_time: None,
        }
    }

    /// The state now.
    pub fn state(&self) -> PlaybackState {
        self.clock.state()
    }

    /// `d` with its timestamp in recording time.
    pub fn recorded(&self, d: &DeviceData) -> DeviceData {
        let ns = u64::from(d.timestamp.sec) * 1_000_000_000 + u64::from(d.timestamp.usec) * 1000;
        let t = self.clock.recorded(ns);
        DeviceData {
            timestamp: Timestamp {
                sec: u32::try_from(t / 1_000_000_000).unwrap_or(u32::MAX),
                usec: ((t % 1_000_000_000) / 1000) as u32,
            },
            ..d.clone()
        }
    }

    /// The answer to the client's request `request_id` (the state now); `did_seek` when
    /// the request sought.
    pub fn answer(&mut self, did_seek: bool, request_id: &str) -> Bytes {
        let s = self.clock.state();
        self.told_changes = s.changes;
        self.told_seeks = s.seeks;
        state_frame(&s, did_seek, Some(request_id))
    }

    /// What to send at a tick: the clock as a `time` while it moves (or when it moved
    /// since the last), and a playback state when playback changed without this client
    /// asking.
    pub fn tick(&mut self) -> (Option<Bytes>, Option<Bytes>) {
        let s = self.clock.state();
        let time = (self.told_time != Some(s.current)).then(|| {
            self.told_time = Some(s.current);
            time_frame(s.current)
        });
        let state = (s.changes != self.told_changes).then(|| {
            let did_seek = s.seeks != self.told_seeks;
            self.told_changes = s.changes;
            self.told_seeks = s.seeks;
            state_frame(&s, did_seek, None)
        });
        (time, state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_becomes_the_kits_with_every_field() {
        let r = ControlRequest {
            play: false,
            speed: 2.0,
            seek: Some(7),
            request_id: "a".into(),
        };
        let k = to_kit(&r);
        assert_eq!((k.play, k.speed, k.seek), (Some(false), Some(2.0), Some(7)));
    }

    #[test]
    fn a_playback_state_frames_as_the_protocol_lays_it_out() {
        let s = PlaybackState {
            status: PlaybackStatus::Paused,
            current: 12345,
            speed: 1.0,
            start: 0,
            end: 20000,
            seeks: 0,
            changes: 0,
        };
        let f = state_frame(&s, true, Some("id"));
        let mut want = vec![OP_PLAYBACK_STATE, 1];
        want.extend_from_slice(&12345u64.to_le_bytes());
        want.extend_from_slice(&1.0f32.to_le_bytes());
        want.push(1);
        want.extend_from_slice(&2u32.to_le_bytes());
        want.extend_from_slice(b"id");
        assert_eq!(&f[..], &want[..]);
        let t = time_frame(1_234_567_890);
        assert_eq!(t[0], OP_TIME);
        assert_eq!(
            u64::from_le_bytes(t[1..9].try_into().unwrap()),
            1_234_567_890
        );
    }

    #[test]
    fn server_info_gains_the_capabilities_and_the_span() {
        let s = PlaybackState {
            status: PlaybackStatus::Playing,
            current: 0,
            speed: 1.0,
            start: 1_700_000_000_000_000_001,
            end: 1_700_000_010_500_000_000,
            seeks: 0,
            changes: 0,
        };
        let info = r#"{"op":"serverInfo","capabilities":["clientPublish","time"]}"#;
        let v: Value = serde_json::from_str(&server_info(info, &s)).unwrap();
        let caps = v["capabilities"].as_array().unwrap();
        assert_eq!(caps.iter().filter(|c| *c == "time").count(), 1);
        assert!(caps.iter().any(|c| c == "playbackControl"));
        assert_eq!(
            v["dataStartTime"],
            json!({"sec": 1_700_000_000u64, "nsec": 1})
        );
        assert_eq!(
            v["dataEndTime"],
            json!({"sec": 1_700_000_010u64, "nsec": 500_000_000})
        );
    }
}
