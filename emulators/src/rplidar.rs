//! An emulated Slamtec RPLIDAR (A1 at 115200 baud, or C1 at 460800) for
//! [`SerialEmulator`]: it answers `GET_HEALTH`, `GET_INFO`, `STOP`, `RESET`, `SCAN` and
//! `EXPRESS_SCAN` (legacy) with the response descriptors and answers the protocol
//! specifies, and while a scan runs it streams 5-byte nodes (about 359 a turn) or 84-byte
//! capsules (about 719 measurements a turn, each capsule's angles interpolated to the
//! next one's start, with angle compensations), five turns a second, ray-cast in a
//! [`Scene`]. Its angles run clockwise, as the device's do. Faults of its own: a health
//! status (an error survives `RESET`, as a hardware fault does), nodes and capsules that
//! fail their check (their distances a "poison" range, so a test can tell if one got
//! through), and a restart (power cycle: the scan stops).
//!
//! [`SerialEmulator`]: crate::SerialEmulator

use crate::scene::{Pose, Scene, LASER_POSE};
use crate::SerialDevice;
use player_devices::rplidar::{
    self as codec, Cabin, Capsule, Descriptor, Health, Info, Node, CABINS, PER_CAPSULE,
};
use std::time::{Duration, Instant};

/// The distance every measurement of a bad node or capsule carries, mm: nothing in
/// [`Scene::room`] is that close, so a test can tell a poisoned reading from a real one.
pub const POISON_MM: u16 = 150;

/// Turns a second.
pub const TURNS_PER_SECOND: f64 = 5.0;
/// Standard-scan samples a turn (not whole, so each turn starts at another angle).
pub const STANDARD_PER_TURN: f64 = 359.3;
/// Express-scan samples a turn.
pub const EXPRESS_PER_TURN: f64 = 719.3;
/// The range past which it reads no return, mm.
pub const MAX_RANGE_MM: f64 = 12_000.0;

/// The boot banner a reset prints (not a response: drivers must skip it).
const BANNER: &[u8] = b"RP LIDAR System.\r\nFirmware Ver 1.29 - rc9, HW Ver 7\r\nModel: 24\r\n";

struct Stream {
    express: bool,
    /// The next sample (standard) or capsule (express) to send.
    n: u64,
    zero: Instant,
}

/// The emulated sensor.
pub struct RplidarEmulator {
    /// What it sees.
    pub scene: Scene,
    /// Where it is in the scene.
    pub pose: Pose,
    /// What `GET_INFO` answers.
    pub info: Info,
    /// What `GET_HEALTH` answers.
    pub health: Health,
    baud: u32,
    input: Vec<u8>,
    stream: Option<Stream>,
    /// Every request's command byte, in order.
    pub received: Vec<u8>,
    /// Nodes or capsules sent.
    pub frames: u64,
    /// Fault: this many coming nodes or capsules carry the poison range and fail their check.
    pub bad_checksums: u32,
}

impl RplidarEmulator {
    /// An RPLIDAR A1 (115200 baud) at [`LASER_POSE`] in `scene`, healthy, as after power-up.
    pub fn a1(scene: Scene) -> RplidarEmulator {
        RplidarEmulator {
            scene,
            pose: LASER_POSE,
            info: Info {
                model: 0x18,
                firmware_minor: 29,
                firmware_major: 1,
                hardware: 7,
                serial: *b"player-emulate01",
            },
            health: Health { status: 0, code: 0 },
            baud: 115_200,
            input: Vec::new(),
            stream: None,
            received: Vec::new(),
            frames: 0,
            bad_checksums: 0,
        }
    }

    /// An RPLIDAR C1 (460800 baud).
    pub fn c1(scene: Scene) -> RplidarEmulator {
        let mut e = RplidarEmulator::a1(scene);
        e.info.model = 0x41;
        e.info.firmware_minor = 2;
        e.info.hardware = 18;
        e.baud = 460_800;
        e
    }

    /// Puts it in the error state with `code` (`GET_HEALTH` answers status 2; it will not
    /// scan, and a `RESET` does not clear it).
    pub fn fail(&mut self, code: u16) {
        self.health = Health {
            status: Health::ERROR,
            code,
        };
    }

    /// Whether a scan runs.
    pub fn scanning(&self) -> bool {
        self.stream.is_some()
    }

    /// Whether the running scan is an express scan.
    pub fn express(&self) -> bool {
        self.stream.as_ref().is_some_and(|s| s.express)
    }

    /// A power cycle: the scan stops, half-received requests are lost.
    pub fn restart(&mut self) {
        self.stream = None;
        self.input.clear();
    }

    /// The distance (mm) it measures at `angle` (degrees, clockwise, as the device's), 0 for
    /// no return.
    pub fn measure(&self, angle: f64) -> f64 {
        let mm = self.scene.range(self.pose, -angle.to_radians()) * 1000.0;
        if mm > MAX_RANGE_MM {
            0.0
        } else {
            mm
        }
    }

    fn q6(deg: f64) -> u16 {
        ((deg.rem_euclid(360.0) * 64.0).round() as u32 % (360 * 64)) as u16
    }

    fn node(&mut self, n: u64) -> Vec<u8> {
        let step = 360.0 / STANDARD_PER_TURN;
        let turn = |n: u64| (n as f64 * step / 360.0).floor();
        let angle_q6 = Self::q6(n as f64 * step);
        let start = n == 0 || turn(n) > turn(n - 1);
        let mm = self.measure(f64::from(angle_q6) / 64.0);
        let mut node = Node {
            quality: if mm > 0.0 { 47 } else { 0 },
            start,
            angle_q6,
            distance_q2: (mm * 4.0).round().min(f64::from(u16::MAX)) as u16,
        };
        if self.bad_checksums > 0 {
            self.bad_checksums -= 1;
            node.distance_q2 = POISON_MM * 4;
            node.quality = 47;
            let mut b = node.encode();
            b[1] &= !1;
            return b.to_vec();
        }
        node.encode().to_vec()
    }

    fn capsule_start(i: u64) -> u16 {
        Self::q6(i as f64 * PER_CAPSULE as f64 * 360.0 / EXPRESS_PER_TURN)
    }

    /// The angle compensation of measurement `k` of capsule `i`, 1/8 degree (0..=2: small
    /// next to the 1/2 degree between measurements, and read alike by every decoder).
    fn dtheta(i: u64, k: usize) -> u8 {
        ((i as usize + k) % 3) as u8
    }

    fn capsule(&mut self, i: u64) -> Vec<u8> {
        let mut c = Capsule {
            start_angle_q6: Self::capsule_start(i),
            start: i == 0,
            cabins: [Cabin::default(); CABINS],
        };
        for k in 0..PER_CAPSULE {
            c.cabins[k / 2].dtheta_q3[k % 2] = Self::dtheta(i, k);
        }
        let next = Self::capsule_start(i + 1);
        let poison = self.bad_checksums > 0;
        for k in 0..PER_CAPSULE {
            let mm = if poison {
                f64::from(POISON_MM)
            } else {
                self.measure(c.angle(next, k))
            };
            c.cabins[k / 2].distance[k % 2] = mm.round().min(16383.0) as u16;
        }
        let mut b = c.encode();
        if poison {
            self.bad_checksums -= 1;
            b[0] ^= 0x01;
        }
        b.to_vec()
    }

    fn command(&mut self, cmd: u8, payload: Option<&[u8]>, out: &mut Vec<Vec<u8>>) {
        self.received.push(cmd);
        match cmd {
            codec::STOP => self.stream = None,
            codec::RESET => {
                self.stream = None;
                out.push(BANNER.to_vec());
            }
            codec::GET_HEALTH => {
                let mut v = Descriptor::HEALTH.encode().to_vec();
                v.extend_from_slice(&self.health.encode());
                out.push(v);
            }
            codec::GET_INFO => {
                let mut v = Descriptor::INFO.encode().to_vec();
                v.extend_from_slice(&self.info.encode());
                out.push(v);
            }
            codec::SCAN | codec::EXPRESS_SCAN => {
                // A device in the error state does not scan.
                if self.health.status == Health::ERROR {
                    return;
                }
                let express = cmd == codec::EXPRESS_SCAN;
                // Only the legacy express mode (working mode 0) is emulated.
                if express && payload.is_none_or(|p| p.first() != Some(&0)) {
                    return;
                }
                let d = if express {
                    Descriptor::EXPRESS
                } else {
                    Descriptor::SCAN
                };
                out.push(d.encode().to_vec());
                self.stream = Some(Stream {
                    express,
                    n: 0,
                    zero: Instant::now(),
                });
            }
            _ => {}
        }
    }
}

impl SerialDevice for RplidarEmulator {
    fn baud(&self) -> u32 {
        self.baud
    }

    fn receive(&mut self, bytes: &[u8], _now: Instant, out: &mut Vec<Vec<u8>>) {
        self.input.extend_from_slice(bytes);
        loop {
            match self.input.iter().position(|&b| b == codec::SYNC) {
                Some(i) => {
                    self.input.drain(..i);
                }
                None => {
                    self.input.clear();
                    return;
                }
            }
            let Some(&cmd) = self.input.get(1) else {
                return;
            };
            if cmd & 0x80 == 0 {
                self.input.drain(..2);
                self.command(cmd, None, out);
                continue;
            }
            // A request with a payload: size, payload, checksum.
            let Some(&len) = self.input.get(2) else {
                return;
            };
            let total = 3 + usize::from(len) + 1;
            if self.input.len() < total {
                return;
            }
            let req: Vec<u8> = self.input.drain(..total).collect();
            let sum = req[..total - 1].iter().fold(0, |a, b| a ^ b);
            if sum == req[total - 1] {
                self.command(cmd, Some(&req[3..total - 1]), out);
            }
        }
    }

    fn tick(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        let Some(s) = self.stream.as_ref() else {
            return;
        };
        let (express, zero, mut n) = (s.express, s.zero, s.n);
        let per_second = if express {
            EXPRESS_PER_TURN * TURNS_PER_SECOND / PER_CAPSULE as f64
        } else {
            STANDARD_PER_TURN * TURNS_PER_SECOND
        };
        let due = (now.saturating_duration_since(zero).as_secs_f64() * per_second) as u64;
        // A late tick sends at most a second's worth; the rest is skipped, as a line that
        // fell behind loses it.
        let first = n.max(due.saturating_sub(per_second as u64));
        n = first;
        while n < due {
            let frame = if express {
                self.capsule(n)
            } else {
                self.node(n)
            };
            out.push(frame);
            self.frames += 1;
            n += 1;
        }
        if let Some(s) = self.stream.as_mut() {
            s.n = n;
        }
    }
}

/// How long the emulator takes for one turn.
pub fn turn_period() -> Duration {
    Duration::from_secs_f64(1.0 / TURNS_PER_SECOND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_devices::rplidar::{ExpressDecoder, Item, Parser, Revolutions};

    fn talk(e: &mut RplidarEmulator, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        e.receive(bytes, Instant::now(), &mut out);
        out.concat()
    }

    fn revolutions(e: &mut RplidarEmulator, p: &mut Parser) -> Vec<Vec<codec::Measurement>> {
        let mut out = Vec::new();
        let t0 = Instant::now();
        for ms in (0..700).step_by(10) {
            e.tick(t0 + Duration::from_millis(ms), &mut out);
        }
        p.push(&out.concat());
        let (mut d, mut r, mut revs, mut ms) = (
            ExpressDecoder::new(),
            Revolutions::new(),
            Vec::new(),
            Vec::new(),
        );
        while let Some(item) = p.next_item() {
            match item {
                Item::Node(n) => ms.push(n.measurement()),
                Item::Capsule(c) => d.push(c, &mut ms),
                Item::BadCapsule(_) => r.damage(),
                _ => {}
            }
            for m in ms.drain(..) {
                revs.extend(r.push(m));
            }
        }
        revs
    }

    #[test]
    fn answers_parse_with_the_drivers_codec_and_turns_match_the_scene() {
        let mut e = RplidarEmulator::a1(Scene::room());
        let mut p = Parser::new();
        p.push(&talk(&mut e, &codec::request(codec::GET_HEALTH, &[])));
        assert_eq!(p.next_item(), Some(Item::Descriptor(Descriptor::HEALTH)));
        assert_eq!(p.next_item(), Some(Item::Answer(vec![0, 0, 0])));
        for (req, per_turn) in [
            (codec::request(codec::SCAN, &[]), STANDARD_PER_TURN),
            (codec::express_request(), EXPRESS_PER_TURN),
        ] {
            let mut p = Parser::new();
            p.push(&talk(&mut e, &req));
            let revs = revolutions(&mut e, &mut p);
            assert!(revs.len() >= 2, "{} turns", revs.len());
            for rev in &revs {
                let scan = codec::to_scan(rev, 12_000);
                assert!(
                    scan.ranges.iter().all(|&r| r > 0),
                    "a reading without a measurement near it"
                );
                assert!((rev.len() as f64 - per_turn).abs() <= 1.0, "{}", rev.len());
                for m in rev {
                    let want = e.measure(m.angle);
                    assert!((m.distance - want).abs() <= 0.5, "{m:?} vs {want}");
                }
            }
            talk(&mut e, &codec::request(codec::STOP, &[]));
            assert!(!e.scanning());
        }
    }

    #[test]
    fn the_obstacle_on_the_left_is_at_300_degrees_clockwise() {
        let e = RplidarEmulator::a1(Scene::room());
        assert!((e.measure(300.0) - 900.0).abs() < 1e-6);
        assert!((e.measure(0.0) - 6000.0).abs() < 1e-6);
    }
}
