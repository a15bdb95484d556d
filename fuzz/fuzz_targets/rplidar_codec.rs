//! Fuzzes Slamtec's RPLIDAR codec with what its serial line can deliver: the stream parser
//! fed the input in chunks (sizes from the input) and whole, with the same items and junk
//! count both ways; every item re-encodes to the bytes it was read from (found from the
//! junk count: every byte is junk or in an item), answers are as long as their descriptor
//! said, bad capsules really fail their checksum. The items then go through the driver's
//! assembly (nodes and express capsules to measurements, measurements to revolutions, a
//! bad capsule or skipped bytes damaging the revolution in progress): measurements in
//! range, 32 a capsule, each k/32 of the way to the next capsule's start angle less its
//! compensation, every revolution undamaged, opened by its only start flag, within
//! the scan's bounds, and a full scan of as many ranges. The input is also read as express
//! capsules and standard nodes with their checks made right, to reach the assembly with
//! any angles and distances (a capsule's start angle past a turn refused, as a node's).
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_devices::rplidar::{
    to_scan, Capsule, Descriptor, ExpressDecoder, Health, Info, Item, Measurement, Node, Parser,
    Revolutions, RplidarError, CAPSULE_LEN, DESCRIPTOR_LEN, HEALTH_LEN, INFO_LEN,
    MIN_PER_REVOLUTION, NODE_LEN, PER_CAPSULE, TYPE_HEALTH, TYPE_INFO,
};
use player_proto::scan::MAX_COUNT;

/// The parser's bound on its buffer: longer inputs may be cut differently in chunks.
const MAX_BUFFER: usize = 16 * 1024;
/// The A1's range, mm.
const MAX_RANGE_MM: u32 = 12_000;

/// The driver's assembly of items into revolutions, each revolution checked.
#[derive(Default)]
struct Assembly {
    express: ExpressDecoder,
    revolutions: Revolutions,
    /// Whether nothing damaged the revolution in progress since its start flag.
    clean: bool,
    served: usize,
    /// The last capsule decoded.
    prev: Option<Capsule>,
}

impl Assembly {
    fn damage(&mut self) {
        self.revolutions.damage();
        self.clean = false;
    }

    fn measurements(&mut self, ms: Vec<Measurement>) {
        for m in ms {
            assert!((0.0..360.0).contains(&m.angle), "{m:?}");
            assert!((0.0..16_384.0).contains(&m.distance), "{m:?}");
            let was_clean = self.clean;
            if m.start {
                self.clean = true;
            }
            if let Some(rev) = self.revolutions.push(m) {
                assert!(m.start && was_clean, "a damaged revolution was served");
                check_revolution(&rev);
                self.served += 1;
            }
        }
    }

    fn capsule(&mut self, c: Capsule) {
        let mut ms = Vec::new();
        self.express.push(c, &mut ms);
        assert!(ms.is_empty() || ms.len() == PER_CAPSULE);
        if let (Some(p), false) = (self.prev, ms.is_empty()) {
            // Measurement k is k/32 of the way clockwise (less than a turn) from the
            // capsule's start angle to the next one's, less its compensation.
            let here = f64::from(p.start_angle_q6) / 64.0;
            let way = (f64::from(c.start_angle_q6) / 64.0 - here).rem_euclid(360.0);
            for (k, m) in ms.iter().enumerate() {
                let cabin = p.cabins[k / 2];
                let dtheta = f64::from(cabin.dtheta_q3[k % 2]) / 8.0;
                let want = here + way * k as f64 / PER_CAPSULE as f64 - dtheta;
                let off = (m.angle - want).rem_euclid(360.0);
                assert!(
                    off.min(360.0 - off) < 1e-6,
                    "measurement {k} of {p:?} before {c:?}: {} not {want}",
                    m.angle
                );
                assert_eq!(m.distance, f64::from(cabin.distance[k % 2]));
            }
        }
        self.prev = Some(c);
        self.measurements(ms);
    }
}

fn check_revolution(rev: &[Measurement]) {
    assert!((MIN_PER_REVOLUTION..=MAX_COUNT).contains(&rev.len()));
    assert!(rev[0].start && rev[1..].iter().all(|m| !m.start));
    let scan = to_scan(rev, MAX_RANGE_MM);
    assert_eq!(scan.ranges.len(), rev.len());
    assert!(scan.ranges.iter().all(|&r| u32::from(r) <= MAX_RANGE_MM));
    assert!(scan.angle_increment > 0);
}

fn check_node(n: &Node) {
    assert!(n.quality < 64 && u32::from(n.angle_q6) < 360 * 64);
    assert_eq!(Node::parse(&n.encode()), Some(*n));
    let m = n.measurement();
    assert_eq!(m.start, n.start);
    if n.quality == 0 {
        assert_eq!(m.distance, 0.0);
    }
}

/// The items of `data` fed `step` bytes at a time, each checked against the bytes it came
/// from and assembled as the driver does; the junk count.
fn items(data: &[u8], step: usize, asm: &mut Assembly) -> (Vec<Item>, u64) {
    let mut p = Parser::new();
    let mut used = 0usize;
    let mut last: Option<Descriptor> = None;
    let mut out = Vec::new();
    for chunk in data.chunks(step) {
        p.push(chunk);
        while let Some(item) = p.next_item() {
            let at = usize::try_from(p.junk).unwrap() + used;
            if p.take_skipped() {
                asm.damage();
            }
            match &item {
                Item::Descriptor(d) => {
                    assert_eq!(d.encode(), data[at..at + DESCRIPTOR_LEN]);
                    assert!(d.len < 1 << 30 && d.mode < 4);
                    used += DESCRIPTOR_LEN;
                    last = Some(*d);
                    asm.express.reset();
                    asm.revolutions.reset();
                }
                Item::Answer(a) => {
                    let d = last.expect("an answer follows a descriptor");
                    assert_eq!((d.mode, d.len as usize), (0, a.len()));
                    assert!(a.len() <= 256);
                    assert_eq!(a[..], data[at..at + a.len()]);
                    used += a.len();
                    check_answer(d, a);
                }
                Item::Node(n) => {
                    assert_eq!(n.encode(), data[at..at + NODE_LEN]);
                    check_node(n);
                    used += NODE_LEN;
                    asm.measurements(vec![n.measurement()]);
                }
                Item::Capsule(c) => {
                    assert_eq!(c.encode(), data[at..at + CAPSULE_LEN]);
                    assert_eq!(Capsule::parse(&c.encode()), Ok(*c));
                    used += CAPSULE_LEN;
                    asm.capsule(*c);
                }
                Item::BadCapsule(e) => {
                    // Its first byte was skipped as junk.
                    let b = &data[at - 1..at - 1 + CAPSULE_LEN];
                    assert!(Capsule::synced(b));
                    assert_eq!(Capsule::parse(b).as_ref(), Err(e));
                    assert!(match *e {
                        RplidarError::BadChecksum { carried, computed } => carried != computed,
                        RplidarError::BadAngle { angle_q6 } => u32::from(angle_q6) >= 360 * 64,
                        RplidarError::UnexpectedDescriptor(_) => false,
                    });
                    asm.damage();
                    asm.express.reset();
                }
            }
            out.push(item);
        }
        if p.take_skipped() {
            asm.damage();
        }
    }
    assert!(usize::try_from(p.junk).unwrap() + used <= data.len());
    (out, p.junk)
}

fn check_answer(d: Descriptor, a: &[u8]) {
    match (d.kind, a.len()) {
        (TYPE_HEALTH, HEALTH_LEN) => {
            let h = Health::parse(&[a[0], a[1], a[2]]);
            assert_eq!(h.encode(), a);
        }
        (TYPE_INFO, INFO_LEN) => {
            let info = Info::parse(a.try_into().unwrap());
            assert_eq!(info.encode(), a);
            assert_eq!(info.serial_hex().len(), 32);
            assert!(info.firmware().contains('.'));
        }
        _ => {}
    }
}

/// The input as capsules (82 bytes each, after the sync nibbles and checksum made right)
/// and as nodes (5 bytes each, the check bits made right), through the assembly.
fn made_right(data: &[u8]) {
    let mut asm = Assembly::default();
    for body in data.chunks_exact(CAPSULE_LEN - 2) {
        let mut b = [0u8; CAPSULE_LEN];
        b[2..].copy_from_slice(body);
        let sum = b[2..].iter().fold(0, |a, c| a ^ c);
        b[0] = 0xA0 | (sum & 0xF);
        b[1] = 0x50 | (sum >> 4);
        let angle_q6 = u16::from_le_bytes([b[2], b[3]]) & 0x7FFF;
        match Capsule::parse(&b) {
            Ok(c) => {
                assert!(u32::from(angle_q6) < 360 * 64);
                assert_eq!(c.encode(), b);
                asm.capsule(c);
            }
            Err(e) => {
                assert_eq!(e, RplidarError::BadAngle { angle_q6 });
                asm.damage();
                asm.express.reset();
            }
        }
    }
    let mut asm = Assembly::default();
    for w in data.chunks_exact(NODE_LEN) {
        let mut b = [w[0], w[1], w[2], w[3], w[4]];
        b[0] = (b[0] & !3) | if b[0] & 1 == 1 { 1 } else { 2 };
        b[1] |= 1;
        match Node::parse(&b) {
            Some(n) => {
                assert_eq!(n.encode(), b);
                check_node(&n);
                asm.measurements(vec![n.measurement()]);
            }
            None => assert!((u32::from(b[1]) >> 1 | u32::from(b[2]) << 7) >= 360 * 64),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let step = usize::from(data.first().copied().unwrap_or(1) % 97) + 1;
    let mut asm = Assembly::default();
    let (chunked, junk) = items(data, step, &mut asm);
    if data.len() <= MAX_BUFFER {
        let mut whole = Assembly::default();
        assert_eq!(
            items(data, data.len().max(1), &mut whole),
            (chunked, junk),
            "whole or in chunks"
        );
        assert_eq!(whole.served, asm.served);
    }
    made_right(data);
});
