//! Fuzzes Hokuyo's SCIP codec (SCIP 2.0 and the SCIP 1.1 answers a URG boots with) with
//! what its serial line or TCP port can deliver: the block parser fed the input in chunks
//! (sizes from the input) and whole, with the same blocks and junk count both ways; every
//! block echoes a known command and re-frames to itself; a SCIP 1.1 answer is never read
//! as parameters or a scan; `VV`/`PP`/`II` parameters re-encode (with their checksums) to
//! the same parameters, and a sensor read from them has a usable geometry; a scan has as
//! many readings as its echo's steps ask for, re-encodes to a block that parses back to
//! it, and becomes a full scan of the same count with ranges of 0 or within the sensor's
//! range; the sensor's clock never maps a scan later than its arrival. Each block is also
//! checked with its checksums made right, to reach parameters and scans of any values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_devices::urg::{
    checksum, decode_chars, encode_chars, line_with_sum, scan_block, Block, ClockMap, Parser,
    RawScan, Sensor, CLOCK_BITS, MAX_BLOCK, MIN_VALID_MM,
};
use std::f64::consts::PI;

/// The commands a block may echo (and SCIP 1.1's `V`, alone).
const COMMANDS: [&[u8]; 11] = [
    b"MD", b"MS", b"GD", b"GS", b"VV", b"PP", b"II", b"BM", b"QT", b"RS", b"SC",
];

/// The blocks of `data` fed `step` bytes at a time, and the junk count.
fn blocks(data: &[u8], step: usize) -> (Vec<Block>, u64) {
    let mut p = Parser::new();
    let mut out = Vec::new();
    for chunk in data.chunks(step) {
        p.push(chunk);
        out.extend(std::iter::from_fn(|| p.next_block()));
    }
    (out, p.junk)
}

/// A block's bytes as the sensor frames it: echo, lines, an empty line.
fn frame(echo: &[u8], lines: &[Vec<u8>]) -> Vec<u8> {
    let mut v = echo.to_vec();
    for l in lines {
        v.push(b'\n');
        v.extend_from_slice(l);
    }
    v.extend_from_slice(b"\n\n");
    v
}

fn reparse(bytes: &[u8]) -> Block {
    let mut p = Parser::new();
    p.push(bytes);
    let b = p.next_block().expect("a framed block parses");
    assert!(p.next_block().is_none());
    assert_eq!(p.junk, 0);
    b
}

/// The sensors every scan is also turned into a full scan for: a URG-04LX and a UTM-30LX.
fn known_sensors() -> Vec<Sensor> {
    let sensor = |model: &str, dmax, ares, amin, amax, afrt, rpm| Sensor {
        model: model.into(),
        dmin: 20,
        dmax,
        ares,
        amin,
        amax,
        afrt,
        rpm,
    };
    vec![
        sensor("URG-04LX", 5600, 1024, 44, 725, 384, 600),
        sensor("UTM-30LX", 30_000, 1440, 0, 1080, 540, 2400),
    ]
}

fn check_parameters(b: &Block, sensors: &mut Vec<Sensor>) {
    let Ok(params) = b.parameters() else {
        return;
    };
    assert_eq!(b.status(), Ok(&b"00"[..]));
    assert!(params.len() < b.lines.len());
    // Re-encoded as the sensor sends them: `NAME:value;` and the checksum before the `;`.
    let lines: Vec<Vec<u8>> = std::iter::once(b"00P".to_vec())
        .chain(params.iter().map(|(k, v)| {
            let content = format!("{k}:{v}").into_bytes();
            let mut l = content.clone();
            l.extend_from_slice(&[b';', checksum(&content)]);
            l
        }))
        .collect();
    let again = reparse(&frame(&b.echo, &lines));
    assert_eq!(again.parameters().as_ref(), Ok(&params));
    if let Ok(s) = Sensor::from_parameters(&params) {
        assert!(s.ares > 0 && s.amin <= s.amax && s.amax < s.ares);
        assert!(usize::try_from(s.amax - s.amin + 1).unwrap() <= player_proto::scan::MAX_COUNT);
        for step in [s.amin, s.afrt, s.amax] {
            let a = s.angle(step);
            assert!(a.abs() <= 2.0 * PI, "step {step} of {s:?} at {a} rad");
        }
        sensors.push(s);
    }
}

/// The steps an `MD`/`GD`/`MS`/`GS` echo asks for: start, end, cluster.
fn echo_steps(echo: &[u8]) -> (u32, u32, u32) {
    let num =
        |a: usize, b: usize| -> u32 { std::str::from_utf8(&echo[a..b]).unwrap().parse().unwrap() };
    (num(2, 6), num(6, 10), num(10, 12).max(1))
}

fn check_scan(b: &Block, sensors: &[Sensor], clock: &mut ClockMap, host_ms: f64) {
    let Ok(raw) = RawScan::parse(b) else {
        return;
    };
    let width = if matches!(b.command(), b"MD" | b"GD") {
        3
    } else {
        2
    };
    assert!(matches!(b.command(), b"MD" | b"GD" | b"MS" | b"GS"));
    let status = b.status().unwrap();
    assert!(status == b"99" || status == b"00");
    let (start, end, cluster) = echo_steps(&b.echo);
    assert_eq!((raw.start, raw.cluster), (start, cluster));
    assert_eq!(
        raw.values.len(),
        ((end - start) / cluster + 1) as usize,
        "the echo's count"
    );
    assert!(raw.values.len() <= player_proto::scan::MAX_COUNT);
    assert!(raw.time < 1 << CLOCK_BITS);
    assert!(raw.values.iter().all(|&v| v < 1 << (6 * width)));
    // Re-encoded, 64 characters a line, it parses back to itself.
    let status = [status[0], status[1]];
    let bytes = if width == 3 {
        scan_block(&b.echo, &status, raw.time, &raw.values)
    } else {
        let mut lines = vec![
            line_with_sum(&status),
            line_with_sum(&encode_chars(raw.time, 4)),
        ];
        let data: Vec<u8> = raw
            .values
            .iter()
            .flat_map(|&v| encode_chars(v, 2))
            .collect();
        lines.extend(data.chunks(64).map(line_with_sum));
        let lines: Vec<Vec<u8>> = lines
            .into_iter()
            .map(|mut l| {
                l.pop();
                l
            })
            .collect();
        frame(&b.echo, &lines)
    };
    assert_eq!(RawScan::parse(&reparse(&bytes)).as_ref(), Ok(&raw));
    for s in sensors {
        let scan = raw.to_scan(s);
        assert_eq!(scan.ranges.len(), raw.values.len());
        for (&r, &v) in scan.ranges.iter().zip(&raw.values) {
            if r != 0 {
                assert_eq!(u32::from(r), v);
                assert!((MIN_VALID_MM..=s.dmax).contains(&v));
            }
        }
        assert!(scan.angle_increment > 0);
    }
    let at = clock.map(raw.time, host_ms);
    assert!(at.is_finite() && at <= host_ms);
}

fn check_block(b: &Block, sensors: &mut Vec<Sensor>, clock: &mut ClockMap, host_ms: f64) {
    assert!(
        b.echo == b"V" || COMMANDS.iter().any(|c| b.echo.starts_with(c)),
        "echo {:?}",
        b.echo
    );
    assert!(!b.echo.contains(&b'\n'));
    assert!(b.lines.iter().all(|l| !l.is_empty() && !l.contains(&b'\n')));
    assert_eq!(
        &reparse(&frame(&b.echo, &b.lines)),
        b,
        "a block re-frames to itself"
    );
    match b.status() {
        Ok(s) if b.lines[0].len() == 3 => {
            assert_eq!(s.len(), 2);
            assert_eq!(checksum(s), b.lines[0][2]);
        }
        Ok(s) => assert_eq!(s, &b.lines[0][..]),
        Err(_) => {}
    }
    if b.is_scip1() {
        assert_eq!(b.status().map(<[u8]>::len), Ok(1));
        assert!(b.parameters().is_err());
        assert!(RawScan::parse(b).is_err());
        let _ = b.scip1_value("FIRM");
    }
    check_parameters(b, sensors);
    check_scan(b, sensors, clock, host_ms);
}

/// `b` with its checksums made right, read as parameters (status `00`, each line after it
/// `content;sum` from all but its last two characters) and as a scan (status `99`, each
/// line's last character its checksum): the checks then reach any values, not only those
/// whose checksums the fuzzer has matched.
fn made_right(b: &Block) -> [Block; 2] {
    let fix = |status: &[u8], cut: usize, semicolon: bool| Block {
        echo: b.echo.clone(),
        lines: std::iter::once(status.to_vec())
            .chain(b.lines.iter().skip(1).map(|l| {
                let content = &l[..l.len().saturating_sub(cut)];
                let mut v = content.to_vec();
                if semicolon {
                    v.push(b';');
                }
                v.push(checksum(content));
                v
            }))
            .collect(),
    };
    [fix(b"00P", 2, true), fix(b"99b", 1, false)]
}

fuzz_target!(|data: &[u8]| {
    let step = usize::from(data.first().copied().unwrap_or(1) % 17) + 1;
    let (chunked, junk) = blocks(data, step);
    // Only an input longer than a block can be cut differently whole and in chunks.
    if data.len() <= MAX_BLOCK {
        assert_eq!(
            blocks(data, data.len().max(1)),
            (chunked.clone(), junk),
            "whole or in chunks"
        );
    }
    assert!(junk <= data.len() as u64);
    let mut sensors = known_sensors();
    let mut clock = ClockMap::new();
    for (i, b) in chunked.iter().enumerate() {
        let host_ms = 1e9 + 25.0 * i as f64;
        check_block(b, &mut sensors, &mut clock, host_ms);
        for right in made_right(b) {
            check_block(&right, &mut sensors, &mut clock, host_ms);
        }
    }
    for w in data.chunks(4) {
        let v = decode_chars(w);
        assert_eq!(decode_chars(&encode_chars(v, w.len())), v);
    }
});
