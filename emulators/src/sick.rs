//! An emulated SICK LMS-200 for [`SerialEmulator`]: it starts at 9600 baud in monitoring
//! mode, answers every good host telegram with ACK and an `A0` reply (a bad CRC gets NAK),
//! takes installation mode with the `SICK_LMS` password, changes its speed on `20 40/41/42`,
//! and on `20 24` streams one `B0` scan per transmit time (about 190 ms at 38400 baud),
//! ray-cast from the robot's pose in an [`EmuWorld`] (docs/reference/sick-lms200.md §9). A line at
//! a different speed than the scanner's garbles both ways (the runner checks the driver's
//! termios). Scans can carry flag bits on a few values, for the driver to mask.
//!
//! [`SerialEmulator`]: crate::SerialEmulator

use crate::{EmuWorld, SerialDevice};
use player_devices::sick::{self as codec, Event, Parser, Scan};
use std::time::{Duration, Instant};

/// What the emulated scanner has received, for tests to check.
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// Good host telegrams (their data), in order.
    pub telegrams: Vec<Vec<u8>>,
    /// Telegrams with a bad CRC (answered with NAK).
    pub bad_crc: u64,
    /// `20 25` (stop continuous output) telegrams.
    pub stops: u64,
}

/// The emulated scanner.
pub struct SickEmulator {
    world: EmuWorld,
    baud: u32,
    installation: bool,
    streaming: bool,
    next_scan: Instant,
    parser: Parser,
    /// Everything received.
    pub received: Received,
    /// Scans sent.
    pub scans: u64,
    /// When the last scan was queued for the line.
    pub last_scan: Option<Instant>,
    /// Set field-A and dazzle bits on a few values of each scan.
    pub flag_values: bool,
}

impl SickEmulator {
    /// A scanner as after power-up (9600 baud, not streaming), mounted on the robot in
    /// `world`.
    pub fn new(world: EmuWorld) -> SickEmulator {
        SickEmulator {
            world,
            baud: 9600,
            installation: false,
            streaming: false,
            next_scan: Instant::now(),
            parser: Parser::new(),
            received: Received::default(),
            scans: 0,
            last_scan: None,
            flag_values: false,
        }
    }

    /// A scanner left streaming at 38400 baud by a server that crashed.
    pub fn left_streaming(world: EmuWorld) -> SickEmulator {
        let mut s = SickEmulator::new(world);
        s.baud = 38400;
        s.streaming = true;
        s
    }

    /// The scanner's current speed.
    pub fn speed(&self) -> u32 {
        self.baud
    }

    /// Whether it is streaming scans.
    pub fn streaming(&self) -> bool {
        self.streaming
    }

    /// Transmit time of one scan telegram at the current speed (10 bits per byte).
    pub fn scan_period(&self) -> Duration {
        Duration::from_secs_f64(732.0 * 10.0 / f64::from(self.baud.max(1)))
    }

    fn answer(&mut self, data: &[u8], now: Instant, out: &mut Vec<Vec<u8>>) {
        self.received.telegrams.push(data.to_vec());
        let result = match data {
            [0x20, 0x00, password @ ..] => {
                if password == b"SICK_LMS" {
                    self.installation = true;
                    0
                } else {
                    1
                }
            }
            [0x20, 0x24] => {
                self.streaming = true;
                self.next_scan = now + self.scan_period() / 2;
                0
            }
            [0x20, 0x25] => {
                self.received.stops += 1;
                self.streaming = false;
                0
            }
            [0x20, 0x40] | [0x20, 0x41] | [0x20, 0x42] => 0,
            _ => {
                // Not a command this emulator knows: "not acknowledged".
                out.push(vec![codec::ACK]);
                out.push(codec::telegram(codec::LMS_ADDR, &[0x92, codec::STATUS_OK]));
                return;
            }
        };
        out.push(vec![codec::ACK]);
        out.push(codec::telegram(
            codec::LMS_ADDR,
            &[codec::MODE_REPLY, result, codec::STATUS_OK],
        ));
        // The speed changes after the reply has gone out at the old one.
        match data {
            [0x20, 0x40] => self.baud = 38400,
            [0x20, 0x41] => self.baud = 19200,
            [0x20, 0x42] => self.baud = 9600,
            _ => {}
        }
    }
}

impl SerialDevice for SickEmulator {
    fn baud(&self) -> u32 {
        self.baud
    }

    fn receive(&mut self, bytes: &[u8], now: Instant, out: &mut Vec<Vec<u8>>) {
        self.parser.push(bytes);
        while let Some(ev) = self.parser.next_event() {
            match ev {
                Event::Telegram { addr, data } if addr == codec::HOST_ADDR => {
                    self.answer(&data, now, out)
                }
                Event::BadCrc => {
                    self.received.bad_crc += 1;
                    out.push(vec![codec::NAK]);
                }
                _ => {}
            }
        }
    }

    fn tick(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        if !self.streaming || now < self.next_scan {
            return;
        }
        let period = self.scan_period();
        self.next_scan += period;
        if self.next_scan < now {
            self.next_scan = now + period;
        }
        let mut values = self
            .world
            .with(|r| r.laser())
            .map(|v| v.min(codec::RANGE_MASK));
        if self.flag_values {
            values[10] |= 1 << 13;
            values[20] |= 1 << 15;
        }
        out.push(Scan::telegram(&values, codec::STATUS_OK));
        self.scans += 1;
        self.last_scan = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send(e: &mut SickEmulator, data: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        e.receive(&codec::command(data), Instant::now(), &mut out);
        out
    }

    #[test]
    fn init_baud_change_and_streaming() {
        let mut e = SickEmulator::new(EmuWorld::room());
        let out = send(&mut e, codec::INSTALL_MODE);
        assert_eq!(out[0], vec![codec::ACK]);
        assert_eq!(out[1], codec::telegram(0x80, &[0xA0, 0, 0x10]));
        send(&mut e, codec::BAUD_38400);
        assert_eq!(e.speed(), 38400);
        send(&mut e, codec::START_CONTINUOUS);
        let mut out = Vec::new();
        e.tick(Instant::now() + Duration::from_secs(1), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len(), 732);
        let s = Scan::parse(&out[0][4..730]).unwrap();
        assert!(s.ranges.iter().all(|&r| r > 0 && r <= 8191));
        send(&mut e, codec::STOP_CONTINUOUS);
        assert!(!e.streaming());
    }

    #[test]
    fn wrong_password_and_bad_crc() {
        let mut e = SickEmulator::new(EmuWorld::room());
        let out = send(&mut e, b"\x20\x00SICK_XXX");
        assert_eq!(out[1][5], 1);
        let mut bad = codec::command(codec::START_CONTINUOUS);
        bad[6] ^= 1;
        let mut out = Vec::new();
        e.receive(&bad, Instant::now(), &mut out);
        assert_eq!(out, vec![vec![codec::NAK]]);
        assert!(!e.streaming());
    }
}
