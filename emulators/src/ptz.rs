//! An emulated Sony EVI-D30 for [`SerialEmulator`]: VISCA absolute pan/tilt and direct zoom
//! with ACK into one of two sockets and a completion when the camera arrives (buffer full
//! when both are busy), position inquiries answered with the moving position, cancels,
//! and syntax errors for anything else (docs/reference/sony-ptz.md §7). The camera slews at its
//! maximum speeds (about 80°/s pan, 50°/s tilt, 2 s wide to tele). Out-of-range positions are
//! clamped to the D30's limits (the real camera's answer is not pinned down). The camera's
//! position is mirrored into the [`EmuWorld`] so the emulated ACTS sees through it.
//!
//! [`SerialEmulator`]: crate::SerialEmulator

use crate::{EmuWorld, SerialDevice};
use player_devices::visca::{self as codec, from_nibbles, nibbles, FROM_CAMERA};
use std::time::Instant;

/// Pan speed, camera units per second (80°/s).
pub const PAN_RATE: f64 = 80.0 * codec::PAN_UNITS_PER_DEG;
/// Tilt speed, camera units per second (50°/s).
pub const TILT_RATE: f64 = 50.0 * codec::TILT_UNITS_PER_DEG;
/// Zoom speed, units per second (wide to tele in 2 s).
pub const ZOOM_RATE: f64 = 1023.0 / 2.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Job {
    PanTilt,
    Zoom,
}

/// What the emulated camera has received.
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// Absolute pan/tilt commands: (pan, tilt) in camera units.
    pub pan_tilt: Vec<(i16, i16)>,
    /// Direct zoom commands.
    pub zoom: Vec<i16>,
    /// Position inquiries.
    pub inquiries: u64,
    /// Cancels.
    pub cancels: u64,
    /// Packets answered with a syntax error.
    pub syntax_errors: u64,
}

/// The emulated camera.
pub struct PtzEmulator {
    world: EmuWorld,
    pos: (f64, f64, f64),
    target: (f64, f64, f64),
    sockets: [Option<Job>; 2],
    buf: Vec<u8>,
    last: Instant,
    /// Everything received.
    pub received: Received,
    /// Never send completions (a fault).
    pub no_completions: bool,
}

impl PtzEmulator {
    /// A camera centred and zoomed out, on the robot in `world`.
    pub fn new(world: EmuWorld) -> PtzEmulator {
        PtzEmulator {
            world,
            pos: (0.0, 0.0, 0.0),
            target: (0.0, 0.0, 0.0),
            sockets: [None; 2],
            buf: Vec::new(),
            last: Instant::now(),
            received: Received::default(),
            no_completions: false,
        }
    }

    /// The current position in camera units (pan + clockwise, tilt, zoom).
    pub fn position(&self) -> (i16, i16, i16) {
        (
            self.pos.0.round() as i16,
            self.pos.1.round() as i16,
            self.pos.2.round() as i16,
        )
    }

    fn start(&mut self, job: Job, out: &mut Vec<Vec<u8>>) -> bool {
        // A new command of the same kind replaces the one in progress.
        if let Some(i) = self.sockets.iter().position(|s| *s == Some(job)) {
            out.push(vec![FROM_CAMERA, 0x41 + i as u8, codec::END]);
            return true;
        }
        match self.sockets.iter().position(Option::is_none) {
            Some(i) => {
                self.sockets[i] = Some(job);
                out.push(vec![FROM_CAMERA, 0x41 + i as u8, codec::END]);
                true
            }
            None => {
                out.push(vec![FROM_CAMERA, 0x60, 0x03, codec::END]);
                false
            }
        }
    }

    fn packet(&mut self, p: &[u8], out: &mut Vec<Vec<u8>>) {
        let syntax = |me: &mut Self, out: &mut Vec<Vec<u8>>| {
            me.received.syntax_errors += 1;
            out.push(vec![FROM_CAMERA, 0x60, 0x02, codec::END]);
        };
        match p {
            [0x81, 0x01, 0x06, 0x02, _vv, _ww, rest @ ..] if rest.len() == 8 => {
                let pan = from_nibbles(&rest[..4]).clamp(-880, 880);
                let tilt = from_nibbles(&rest[4..]).clamp(-300, 300);
                self.received.pan_tilt.push((pan, tilt));
                if self.start(Job::PanTilt, out) {
                    self.target.0 = f64::from(pan);
                    self.target.1 = f64::from(tilt);
                }
            }
            [0x81, 0x01, 0x04, 0x47, rest @ ..] if rest.len() == 4 => {
                let zoom = from_nibbles(rest).clamp(0, 1023);
                self.received.zoom.push(zoom);
                if self.start(Job::Zoom, out) {
                    self.target.2 = f64::from(zoom);
                }
            }
            [0x81, 0x09, 0x06, 0x12] => {
                self.received.inquiries += 1;
                let (pan, tilt, _) = self.position();
                let mut v = vec![FROM_CAMERA, 0x50];
                v.extend_from_slice(&nibbles(pan));
                v.extend_from_slice(&nibbles(tilt));
                v.push(codec::END);
                out.push(v);
            }
            [0x81, 0x09, 0x04, 0x47] => {
                self.received.inquiries += 1;
                let mut v = vec![FROM_CAMERA, 0x50];
                v.extend_from_slice(&nibbles(self.position().2));
                v.push(codec::END);
                out.push(v);
            }
            [0x81, c] if c & 0xF0 == 0x20 && matches!(c & 0xF, 1 | 2) => {
                self.received.cancels += 1;
                let y = c & 0xF;
                let i = usize::from(y - 1);
                let code = match self.sockets[i].take() {
                    // Stop the cancelled motion where it is.
                    Some(Job::PanTilt) => {
                        self.target.0 = self.pos.0;
                        self.target.1 = self.pos.1;
                        0x04
                    }
                    Some(Job::Zoom) => {
                        self.target.2 = self.pos.2;
                        0x04
                    }
                    None => 0x05,
                };
                out.push(vec![FROM_CAMERA, 0x60 | y, code, codec::END]);
            }
            _ => syntax(self, out),
        }
    }

    fn advance(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        let dt = now
            .saturating_duration_since(self.last)
            .as_secs_f64()
            .min(1.0);
        self.last = now;
        let step = |x: &mut f64, t: f64, rate: f64| {
            let d = t - *x;
            *x += d.clamp(-rate * dt, rate * dt);
        };
        step(&mut self.pos.0, self.target.0, PAN_RATE);
        step(&mut self.pos.1, self.target.1, TILT_RATE);
        step(&mut self.pos.2, self.target.2, ZOOM_RATE);
        for i in 0..2 {
            let done = match self.sockets[i] {
                Some(Job::PanTilt) => self.pos.0 == self.target.0 && self.pos.1 == self.target.1,
                Some(Job::Zoom) => self.pos.2 == self.target.2,
                None => false,
            };
            if done {
                self.sockets[i] = None;
                if !self.no_completions {
                    out.push(vec![FROM_CAMERA, 0x51 + i as u8, codec::END]);
                }
            }
        }
        let (pan, tilt, zoom) = self.position();
        let client = codec::from_camera(pan, tilt, zoom);
        self.world.with(|r| r.set_ptz(client.0, client.1, client.2));
    }
}

impl SerialDevice for PtzEmulator {
    fn baud(&self) -> u32 {
        9600
    }

    fn receive(&mut self, bytes: &[u8], now: Instant, out: &mut Vec<Vec<u8>>) {
        self.advance(now, out);
        self.buf.extend_from_slice(bytes);
        while let Some(end) = self.buf.iter().position(|&b| b == codec::END) {
            let p: Vec<u8> = self.buf.drain(..=end).collect();
            let body = &p[..p.len() - 1];
            if body.len() + 1 > codec::MAX_PACKET {
                self.received.syntax_errors += 1;
                out.push(vec![FROM_CAMERA, 0x60, 0x02, codec::END]);
                continue;
            }
            self.packet(body, out);
        }
        if self.buf.len() > 4 * codec::MAX_PACKET {
            self.buf.clear();
        }
    }

    fn tick(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        self.advance(now, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn slews_acknowledges_completes_and_reports() {
        let mut e = PtzEmulator::new(EmuWorld::room());
        let t0 = Instant::now();
        let mut out = Vec::new();
        e.receive(&codec::absolute_pan_tilt(-88, 60), t0, &mut out);
        assert_eq!(out, vec![vec![0x90, 0x41, 0xFF]]);
        out.clear();
        e.receive(&codec::zoom_direct(512), t0, &mut out);
        assert_eq!(out, vec![vec![0x90, 0x42, 0xFF]]);
        out.clear();
        // Cancel the pan/tilt in socket 1; the zoom goes on.
        e.receive(&codec::cancel(1), t0, &mut out);
        assert_eq!(out, vec![vec![0x90, 0x61, 0x04, 0xFF]]);
        out.clear();
        e.receive(&codec::absolute_pan_tilt(-88, 60), t0, &mut out);
        e.tick(t0 + Duration::from_secs(1), &mut out);
        e.tick(t0 + Duration::from_secs(2), &mut out);
        assert_eq!(e.position(), (-88, 60, 512));
        assert!(out.contains(&vec![0x90, 0x51, 0xFF]) && out.contains(&vec![0x90, 0x52, 0xFF]));
        out.clear();
        e.receive(&codec::PAN_TILT_INQ, t0 + Duration::from_secs(3), &mut out);
        let mut p = codec::Parser::new();
        p.push(&out[0]);
        let Some(Ok(codec::Reply::Info(d))) = p.next_reply() else {
            panic!("{out:?}")
        };
        assert_eq!((from_nibbles(&d[..4]), from_nibbles(&d[4..])), (-88, 60));
        out.clear();
        e.receive(&[0x81, 0x77, 0xFF], t0, &mut out);
        assert_eq!(out, vec![vec![0x90, 0x60, 0x02, 0xFF]]);
    }
}
