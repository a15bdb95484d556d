//! An emulated iRobot Create 2 for [`SerialEmulator`], following the Open Interface: Off
//! after power-up, START to Passive, SAFE and FULL, DRIVE DIRECT and DRIVE (obeyed in Safe
//! and Full only), STREAM of the packets asked for every 15 ms (header 19, length, id and
//! data pairs, checksum), PAUSE/RESUME, SENSORS, STOP (to Off, stream ended) and RESET. A
//! simulated base drives in a [`Scene`] (differential kinematics, wheel encoders counting
//! 508.8 per turn of a 72 mm wheel, 235 mm between wheels, bumpers that press against
//! walls and obstacles, which it does not pass). In Safe mode a cliff or a wheel drop (set
//! by a test) stops the wheels and drops the OI to Passive, as the real base does. Faults:
//! those of [`Faults`] (a flipped last byte is a bad checksum) and a restart (the OI to Off,
//! the stream ended, as after a battery change).
//!
//! [`SerialEmulator`]: crate::SerialEmulator
//! [`Faults`]: crate::Faults

use crate::scene::{Pose, Scene};
use crate::SerialDevice;
use player_devices::create::{self as codec, mode, Sensors};
use std::time::{Duration, Instant};

/// The base's radius, m.
pub const RADIUS: f64 = 0.17;
/// Stream period.
const STREAM_PERIOD: Duration = Duration::from_millis(15);

/// The emulated base.
pub struct CreateEmulator {
    /// The room it drives in.
    pub scene: Scene,
    /// Its true pose in the room.
    pub pose: Pose,
    /// OI mode (0 off, 1 passive, 2 safe, 3 full).
    pub mode: u8,
    /// Wheel speeds being driven (right, left), mm/s.
    pub wheels: (i16, i16),
    /// Fault: a cliff sensor sees a drop.
    pub cliff: bool,
    /// Fault: a wheel has dropped.
    pub wheel_drop: bool,
    /// Battery voltage, mV.
    pub voltage_mv: u16,
    /// Every opcode received, in order.
    pub opcodes: Vec<u8>,
    /// Total distance the wheels travelled (right, left), mm.
    pub travelled: (f64, f64),
    counts: (f64, f64),
    bumps: (bool, bool),
    stream: Option<Vec<u8>>,
    paused: bool,
    next_frame: Instant,
    last_step: Instant,
    input: Vec<u8>,
}

impl CreateEmulator {
    /// A base as after power-up (OI off) at `pose` in `scene`.
    pub fn new(scene: Scene, pose: Pose) -> CreateEmulator {
        let now = Instant::now();
        CreateEmulator {
            scene,
            pose,
            mode: mode::OFF,
            wheels: (0, 0),
            cliff: false,
            wheel_drop: false,
            voltage_mv: 15_600,
            opcodes: Vec::new(),
            travelled: (0.0, 0.0),
            counts: (0.0, 0.0),
            bumps: (false, false),
            stream: None,
            paused: false,
            next_frame: now,
            last_step: now,
            input: Vec::new(),
        }
    }

    /// A base in the middle of an empty 10 m x 10 m room, facing +x.
    pub fn open_floor() -> CreateEmulator {
        CreateEmulator::new(
            Scene::empty(10.0, 10.0),
            Pose {
                x: 5.0,
                y: 5.0,
                heading: 0.0,
            },
        )
    }

    /// Whether it streams.
    pub fn streaming(&self) -> bool {
        self.stream.is_some() && !self.paused
    }

    /// A battery change: the OI is Off, the stream ends, the wheels stop.
    pub fn restart(&mut self) {
        self.mode = mode::OFF;
        self.stream = None;
        self.wheels = (0, 0);
        self.input.clear();
    }

    /// The sensors now.
    pub fn sensors(&self) -> Sensors {
        let mut bumps_drops = u8::from(self.bumps.0) | u8::from(self.bumps.1) << 1;
        if self.wheel_drop {
            bumps_drops |= 0b1100;
        }
        Sensors {
            bumps_drops,
            cliffs: [false, self.cliff, self.cliff, false],
            voltage_mv: self.voltage_mv,
            mode: self.mode,
            left_counts: (self.counts.1.round() as i64).rem_euclid(65_536) as u16,
            right_counts: (self.counts.0.round() as i64).rem_euclid(65_536) as u16,
        }
    }

    fn drives(&self) -> bool {
        self.mode == mode::SAFE || self.mode == mode::FULL
    }

    fn step(&mut self, dt: f64) {
        if self.mode == mode::SAFE && (self.cliff || self.wheel_drop) {
            self.mode = mode::PASSIVE;
            self.wheels = (0, 0);
        }
        if !self.drives() {
            self.wheels = (0, 0);
        }
        let (r, l) = (
            f64::from(self.wheels.0) / 1000.0,
            f64::from(self.wheels.1) / 1000.0,
        );
        let v = (r + l) / 2.0;
        let w = (r - l) / (codec::WHEEL_BASE_MM / 1000.0);
        let mid = self.pose.heading + w * dt / 2.0;
        let (nx, ny) = (
            self.pose.x + v * dt * mid.cos(),
            self.pose.y + v * dt * mid.sin(),
        );
        // The wheels turn (and count) even against a wall; the base slides no further.
        let per = codec::mm_per_count();
        self.counts.0 += r * 1000.0 * dt / per;
        self.counts.1 += l * 1000.0 * dt / per;
        self.travelled.0 += r * 1000.0 * dt;
        self.travelled.1 += l * 1000.0 * dt;
        self.pose.heading = (self.pose.heading + w * dt).rem_euclid(2.0 * std::f64::consts::PI);
        // The base does not pass into a wall or obstacle; moving away from one is allowed.
        let blocked = self.scene.contact(nx, ny, RADIUS).is_some_and(|dir| {
            (nx - self.pose.x) * dir.cos() + (ny - self.pose.y) * dir.sin() >= 0.0
        });
        if !blocked {
            self.pose.x = nx;
            self.pose.y = ny;
        }
        // Bumpers: a contact (within 2 mm) ahead, to the left or to the right.
        self.bumps = match self.scene.contact(self.pose.x, self.pose.y, RADIUS + 0.002) {
            Some(dir) => {
                let rel = (dir - self.pose.heading + std::f64::consts::PI)
                    .rem_euclid(2.0 * std::f64::consts::PI)
                    - std::f64::consts::PI;
                if rel.abs() > std::f64::consts::FRAC_PI_2 {
                    (false, false)
                } else if rel.abs() < 0.35 {
                    (true, true)
                } else {
                    (rel < 0.0, rel > 0.0)
                }
            }
            None => (false, false),
        };
    }

    /// Argument bytes of `op`, or `None` for an opcode the emulator ignores.
    fn args(&self, op: u8) -> Option<usize> {
        Some(match op {
            codec::START | codec::SAFE | codec::FULL | codec::OI_STOP | codec::RESET => 0,
            codec::SENSORS | codec::PAUSE_RESUME => 1,
            codec::DRIVE | codec::DRIVE_DIRECT => 4,
            codec::STREAM => 1 + usize::from(*self.input.get(1)?),
            _ => return None,
        })
    }

    fn command(&mut self, op: u8, a: &[u8], out: &mut Vec<Vec<u8>>) {
        self.opcodes.push(op);
        if self.mode == mode::OFF && op != codec::START && op != codec::RESET {
            return; // The OI ignores everything until START.
        }
        let i16_at = |i: usize| i16::from_be_bytes([a[i], a[i + 1]]);
        match op {
            codec::START => {
                if self.mode == mode::OFF {
                    self.mode = mode::PASSIVE;
                } else {
                    self.mode = mode::PASSIVE;
                    self.wheels = (0, 0);
                }
            }
            codec::SAFE => self.mode = mode::SAFE,
            codec::FULL => self.mode = mode::FULL,
            codec::OI_STOP => {
                self.mode = mode::OFF;
                self.stream = None;
                self.wheels = (0, 0);
            }
            codec::RESET => {
                self.restart();
                out.push(b"bl-start\r\nRoomba by iRobot!\r\n".to_vec());
            }
            codec::DRIVE_DIRECT if self.drives() => {
                self.wheels = (i16_at(0).clamp(-500, 500), i16_at(2).clamp(-500, 500));
            }
            codec::DRIVE if self.drives() => {
                let (v, radius) = (i16_at(0).clamp(-500, 500), i16_at(2));
                self.wheels = match radius {
                    -32768 | 32767 => (v, v),
                    1 => (v, -v),
                    -1 => (-v, v),
                    r => {
                        let half = codec::WHEEL_BASE_MM / 2.0;
                        let r = f64::from(r);
                        let vr = f64::from(v) * (r + half) / r;
                        let vl = f64::from(v) * (r - half) / r;
                        (vr.round() as i16, vl.round() as i16)
                    }
                };
            }
            codec::STREAM => {
                self.stream = Some(a[1..].to_vec());
                self.paused = false;
            }
            codec::PAUSE_RESUME => self.paused = a[0] == 0,
            codec::SENSORS if a[0] == codec::BUMPS_DROPS => {
                out.push(vec![self.sensors().bumps_drops]);
            }
            _ => {}
        }
    }
}

impl SerialDevice for CreateEmulator {
    fn baud(&self) -> u32 {
        115_200
    }

    fn receive(&mut self, bytes: &[u8], now: Instant, out: &mut Vec<Vec<u8>>) {
        self.tick_physics(now);
        self.input.extend_from_slice(bytes);
        while let Some(&op) = self.input.first() {
            let Some(n) = self.args(op) else {
                if op == codec::STREAM {
                    break; // its count has not arrived yet
                }
                self.input.remove(0);
                continue;
            };
            if self.input.len() < 1 + n {
                break;
            }
            let cmd: Vec<u8> = self.input.drain(..1 + n).collect();
            self.command(op, &cmd[1..], out);
        }
    }

    fn tick(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        self.tick_physics(now);
        if now < self.next_frame {
            return;
        }
        self.next_frame += STREAM_PERIOD;
        if self.next_frame < now {
            self.next_frame = now + STREAM_PERIOD;
        }
        if let (Some(ids), false) = (&self.stream, self.paused) {
            if ids.as_slice() == codec::STREAMED {
                out.push(self.sensors().frame());
            }
        }
    }
}

impl CreateEmulator {
    fn tick_physics(&mut self, now: Instant) {
        let mut dt = now.saturating_duration_since(self.last_step).as_secs_f64();
        self.last_step = now;
        dt = dt.min(5.0);
        while dt > 0.0 {
            let h = dt.min(0.005);
            self.step(h);
            dt -= h;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_devices::create::{Event, Parser};

    #[test]
    fn start_safe_stream_and_drive() {
        let mut e = CreateEmulator::open_floor();
        let t0 = Instant::now();
        let mut out = Vec::new();
        let mut cmd = vec![codec::START, codec::SAFE];
        cmd.extend_from_slice(&codec::stream_request());
        cmd.extend_from_slice(&codec::drive_direct(200, 200));
        e.receive(&cmd, t0, &mut out);
        assert_eq!(e.mode, mode::SAFE);
        assert_eq!(e.wheels, (200, 200));
        e.tick(t0 + Duration::from_secs(1), &mut out);
        assert!((e.pose.x - 5.2).abs() < 0.01, "{}", e.pose.x);
        let mut p = Parser::new();
        p.push(&out.concat());
        let Some(Event::Frame(f)) = p.next_event() else {
            panic!("no frame")
        };
        assert_eq!(f.mode, mode::SAFE);
        e.cliff = true;
        e.tick(t0 + Duration::from_millis(1100), &mut out);
        assert_eq!((e.mode, e.wheels), (mode::PASSIVE, (0, 0)));
    }

    #[test]
    fn walls_press_the_bumpers_and_stop_the_base() {
        let mut e = CreateEmulator::new(
            Scene::empty(2.0, 2.0),
            Pose {
                x: 1.0,
                y: 1.0,
                heading: 0.0,
            },
        );
        let t0 = Instant::now();
        let mut out = Vec::new();
        let mut cmd = vec![codec::START, codec::SAFE];
        cmd.extend_from_slice(&codec::drive_direct(300, 300));
        e.receive(&cmd, t0, &mut out);
        e.tick(t0 + Duration::from_secs(4), &mut out);
        assert!(e.pose.x <= 2.0 - RADIUS + 0.01);
        assert_eq!(
            e.sensors().bumps_drops & 3,
            3,
            "both bumpers: {:?} {:?}",
            e.pose,
            e.wheels
        );
    }
}
