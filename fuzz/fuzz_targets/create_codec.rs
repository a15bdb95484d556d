//! Fuzzes the iRobot Create 2 Open Interface codec with what its serial line can deliver:
//! the sensor-stream parser fed the input in chunks (sizes from the input) and whole, with
//! the same events both ways; every good frame re-encoded to the bytes it was read from
//! (found from the junk count: every byte is junk or in a frame), every bad checksum
//! reported at a header whose length checks out, every unexpected frame whole and summing
//! to 0. The good frames' encoder counts are then integrated into odometry (finite, the
//! heading in [0, 2π), no step longer than the 16-bit counters allow), and the input read
//! as wheel speeds, which stay within the OI's ±500 mm/s.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_devices::create::{
    drive_direct, mm_per_count, wheel_speeds, Event, Odometry, Parser, Sensors, DRIVE_DIRECT,
    MAX_FRAME, MAX_WHEEL, STREAM_HEADER,
};
use std::f64::consts::PI;

/// The events of `data` fed `step` bytes at a time, each checked against the bytes it came
/// from.
fn events(data: &[u8], step: usize) -> Vec<Event> {
    let len = Sensors::default().frame().len();
    let body = u8::try_from(len - 3).unwrap();
    let mut p = Parser::new();
    let mut framed = 0usize;
    let mut out = Vec::new();
    for chunk in data.chunks(step) {
        p.push(chunk);
        while let Some(e) = p.next_event() {
            let junk = usize::try_from(p.junk).unwrap();
            match &e {
                Event::Frame(s) => {
                    let at = junk + framed;
                    assert_eq!(
                        s.frame(),
                        &data[at..at + len],
                        "a frame re-encodes to its bytes"
                    );
                    framed += len;
                }
                Event::Unexpected => {
                    let f = &data[junk + framed..junk + framed + len];
                    assert_eq!((f[0], f[1]), (STREAM_HEADER, body));
                    assert_eq!(f.iter().fold(0u8, |s, &b| s.wrapping_add(b)), 0);
                    framed += len;
                }
                Event::BadChecksum => {
                    // The header byte was skipped as junk: the frame started just before.
                    let at = junk - 1 + framed;
                    let f = &data[at..at + len];
                    assert_eq!((f[0], f[1]), (STREAM_HEADER, body));
                    assert_ne!(f.iter().fold(0u8, |s, &b| s.wrapping_add(b)), 0);
                }
            }
            out.push(e);
        }
    }
    assert!(usize::try_from(p.junk).unwrap() + framed <= data.len());
    assert!(len <= MAX_FRAME);
    out
}

fn check_sensors(s: &Sensors) {
    assert_eq!(u16::from(s.decivolts()), (s.voltage_mv / 100).min(255));
    assert!(s.front_bumpers() <= 0b11111);
    assert_eq!(s.hazard().is_some(), s.cliff() || s.wheel_drop());
}

fn check_speeds(data: &[u8]) {
    for w in data.chunks_exact(4) {
        let speed = i16::from_be_bytes([w[0], w[1]]);
        let turn = i16::from_be_bytes([w[2], w[3]]);
        let (r, l) = wheel_speeds(speed, turn);
        assert!(
            r.abs() <= MAX_WHEEL && l.abs() <= MAX_WHEEL,
            "{speed} {turn}: {r} {l}"
        );
        let c = drive_direct(speed, turn);
        assert_eq!(c[0], DRIVE_DIRECT);
        assert_eq!(
            i16::from_be_bytes([c[1], c[2]]),
            speed.clamp(-MAX_WHEEL, MAX_WHEEL)
        );
        assert_eq!(
            i16::from_be_bytes([c[3], c[4]]),
            turn.clamp(-MAX_WHEEL, MAX_WHEEL)
        );
    }
}

fn check_odometry(counts: impl Iterator<Item = (u16, u16)>) {
    let mut o = Odometry::default();
    // The longest step: both wheels half the counters' range.
    let longest = 32_768.0 * mm_per_count() + 1e-6;
    for (i, (left, right)) in counts.enumerate() {
        let (x, y) = (o.x, o.y);
        o.update(left, right, i as f64 * 0.015);
        assert!(o.x.is_finite() && o.y.is_finite() && o.speed.is_finite() && o.turn.is_finite());
        assert!((0.0..2.0 * PI).contains(&o.heading), "{}", o.heading);
        assert!((o.x - x).hypot(o.y - y) <= longest);
        if i % 97 == 96 {
            o.reset();
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let step = usize::from(data.first().copied().unwrap_or(1) % 29) + 1;
    let chunked = events(data, step);
    assert_eq!(
        events(data, data.len().max(1)),
        chunked,
        "whole or in chunks"
    );
    let frames: Vec<Sensors> = chunked
        .iter()
        .filter_map(|e| match e {
            Event::Frame(s) => Some(*s),
            _ => None,
        })
        .collect();
    frames.iter().for_each(check_sensors);
    check_odometry(frames.iter().map(|s| (s.left_counts, s.right_counts)));
    // The raw input as counts too (good frames are rare in random bytes).
    check_odometry(data.chunks_exact(4).map(|w| {
        (
            u16::from_be_bytes([w[0], w[1]]),
            u16::from_be_bytes([w[2], w[3]]),
        )
    }));
    check_speeds(data);
});
