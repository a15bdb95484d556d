//! Fuzzes the ACTS codec: the driver's check of a blob packet's 64-byte header, which
//! decides how many bytes it then reads from the socket, must agree with the vision packet
//! decoder (a header it accepts, followed by that many bytes, is a packet `Vision::decode`
//! accepts), and decoding then encoding reaches a fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_devices::acts::blob_bytes;
use player_proto::data::{Vision, ACTS_HEADER, VISION_MAX};

fn fixed_point(v: &Vision) {
    let e = v.encode();
    assert!(e.len() <= VISION_MAX);
    let w = Vision::decode(&e).expect("an encoded vision packet decodes");
    assert_eq!(w.encode(), e);
}

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = Vision::decode(data) {
        fixed_point(&v);
    }
    let Some(header) = data.get(..ACTS_HEADER) else {
        return;
    };
    let header: &[u8; ACTS_HEADER] = header.try_into().unwrap();
    if let Ok(n) = blob_bytes(header) {
        assert!(ACTS_HEADER + n <= VISION_MAX);
        if let Some(packet) = data.get(..ACTS_HEADER + n) {
            let v = Vision::decode(packet).expect("a packet whose header the driver accepts");
            fixed_point(&v);
        }
    }
});
