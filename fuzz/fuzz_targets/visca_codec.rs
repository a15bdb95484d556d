//! Fuzzes the Sony VISCA codec: the reply parser fed the input in chunks (sizes from the
//! input) with its buffer bounded, the nibble encoding of positions, and the conversion
//! between client degrees and camera units (every in-range client value reads back as
//! sent).
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_devices::visca::{
    absolute_pan_tilt, from_camera, from_nibbles, nibbles, to_camera, zoom_direct, Parser, Reply,
    MAX_PACKET, MAX_PAN, MAX_TILT, MAX_ZOOM,
};

fuzz_target!(|data: &[u8]| {
    let step = usize::from(data.first().copied().unwrap_or(1) % 11) + 1;
    let mut parser = Parser::new();
    for chunk in data.chunks(step) {
        parser.push(chunk);
        while let Some(r) = parser.next_reply() {
            match r {
                Ok(Reply::Info(b)) => assert!(!b.is_empty() && b.len() <= MAX_PACKET),
                Ok(Reply::Ack(s)) | Ok(Reply::Completion(s)) | Ok(Reply::Error(s, _)) => {
                    assert!(s < 16)
                }
                Err(()) => {}
            }
        }
    }
    for w in data.chunks_exact(6) {
        let v = |i: usize| i16::from_be_bytes([w[i], w[i + 1]]);
        let (pan, tilt, zoom) = (v(0), v(2), v(4));
        assert_eq!(from_nibbles(&nibbles(pan)), pan);
        assert_eq!(absolute_pan_tilt(pan, tilt).len(), 15);
        assert_eq!(zoom_direct(zoom).len(), 9);
        let (cp, ct, cz) = to_camera(pan, tilt, zoom);
        assert_eq!(
            from_camera(cp, ct, cz),
            (
                pan.clamp(-MAX_PAN, MAX_PAN),
                tilt.clamp(-MAX_TILT, MAX_TILT),
                zoom.clamp(0, MAX_ZOOM)
            )
        );
        let _ = from_camera(pan, tilt, zoom);
    }
    let _ = from_nibbles(data);
});
