//! An emulated iRobot Create 2 for [`SerialEmulator`], following the Open Interface: Off
//! after power-up, START to Passive, SAFE (or CONTROL) and FULL, DRIVE DIRECT and DRIVE
//! (obeyed in Safe and Full only), SENSORS and QUERY LIST (the data of the packets asked
//! for), STREAM of the packets asked for every 15 ms (header 19, length, id and data pairs,
//! checksum), PAUSE/RESUME, STOP (to Off, stream ended) and RESET. Every sensor packet
//! (7-58) and group (0-6, 100, 101, 106, 107) is served, with the sizes the OI gives them
//! (group 100 is packets 7-58 in order, 80 bytes): distance and angle since they were last
//! sent, the encoders, OI mode, bumps, wheel drops and cliffs from the simulation, a
//! battery that is not charging; sensors the emulator does not simulate (wall, light
//! bumper, buttons, infrared, motor currents) read nothing seen. The other opcodes of the
//! OI have their argument bytes taken off the line, so none is read as an opcode; POWER,
//! SPOT, CLEAN, MAX and SEEK DOCK drop it to Passive and stop the wheels (their cleaning
//! and docking behaviours are not emulated). A simulated base drives in a [`Scene`] (differential kinematics, wheel encoders counting
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

/// Opcodes the codec does not name (Create 2 Open Interface): their argument counts.
mod opcode {
    pub const BAUD: u8 = 129;
    pub const CONTROL: u8 = 130;
    pub const POWER: u8 = 133;
    pub const SPOT: u8 = 134;
    pub const CLEAN: u8 = 135;
    pub const MAX: u8 = 136;
    pub const MOTORS: u8 = 138;
    pub const LEDS: u8 = 139;
    pub const SONG: u8 = 140;
    pub const PLAY: u8 = 141;
    pub const SEEK_DOCK: u8 = 143;
    pub const PWM_MOTORS: u8 = 144;
    pub const DRIVE_PWM: u8 = 146;
    pub const QUERY_LIST: u8 = 149;
    pub const SCHEDULING_LEDS: u8 = 162;
    pub const DIGIT_LEDS_RAW: u8 = 163;
    pub const DIGIT_LEDS_ASCII: u8 = 164;
    pub const BUTTONS: u8 = 165;
    pub const SCHEDULE: u8 = 167;
    pub const SET_DAY_TIME: u8 = 168;
}

/// The battery's charge and capacity (packets 25 and 26), mAh.
const BATTERY_MAH: (u16, u16) = (2600, 2700);
/// The current drawn (packet 23, negative: discharging), mA.
const CURRENT_MA: i16 = -250;
/// The battery's temperature (packet 24), degrees C.
const TEMPERATURE_C: i8 = 24;
/// What a cliff sensor's light reads over the floor and over a drop (packets 28-31).
const CLIFF_SIGNAL: (u16, u16) = (2400, 12);

/// The packets a group packet stands for.
fn group(id: u8) -> Option<std::ops::RangeInclusive<u8>> {
    Some(match id {
        0 => 7..=26,
        1 => 7..=16,
        2 => 17..=20,
        3 => 21..=26,
        4 => 27..=34,
        5 => 35..=42,
        6 => 7..=42,
        100 => 7..=58,
        101 => 43..=58,
        106 => 46..=51,
        107 => 54..=58,
        _ => return None,
    })
}

/// A 16-bit packet's bytes for `v`, saturated.
fn be16(v: f64) -> [u8; 2] {
    (v.round().clamp(-32768.0, 32767.0) as i16).to_be_bytes()
}

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
    /// Distance (mm) and angle (degrees, counter-clockwise) since packets 19 and 20 were
    /// last sent.
    since: (f64, f64),
    /// The last DRIVE's velocity and radius (packets 39 and 40).
    requested: (i16, i16),
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
            since: (0.0, 0.0),
            requested: (0, 0),
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
        self.since.0 += v * 1000.0 * dt;
        self.since.1 += (w * dt).to_degrees();
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
    /// `None` too while a count the length depends on has not arrived.
    fn args(&self, op: u8) -> Option<usize> {
        Some(match op {
            codec::START | codec::SAFE | codec::FULL | codec::OI_STOP | codec::RESET => 0,
            opcode::CONTROL
            | opcode::POWER
            | opcode::SPOT
            | opcode::CLEAN
            | opcode::MAX
            | opcode::SEEK_DOCK => 0,
            codec::SENSORS | codec::PAUSE_RESUME => 1,
            opcode::BAUD | opcode::MOTORS | opcode::PLAY | opcode::BUTTONS => 1,
            opcode::SCHEDULING_LEDS => 2,
            opcode::LEDS | opcode::PWM_MOTORS | opcode::SET_DAY_TIME => 3,
            codec::DRIVE | codec::DRIVE_DIRECT | opcode::DRIVE_PWM => 4,
            opcode::DIGIT_LEDS_RAW | opcode::DIGIT_LEDS_ASCII => 4,
            opcode::SCHEDULE => 15,
            codec::STREAM | opcode::QUERY_LIST => 1 + usize::from(*self.input.get(1)?),
            opcode::SONG => 2 + 2 * usize::from(*self.input.get(2)?),
            _ => return None,
        })
    }

    /// Whether `op` is one whose length depends on a count byte (held back until the
    /// count arrives).
    fn counted(op: u8) -> bool {
        matches!(op, codec::STREAM | opcode::QUERY_LIST | opcode::SONG)
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
            codec::SAFE | opcode::CONTROL => self.mode = mode::SAFE,
            codec::FULL => self.mode = mode::FULL,
            opcode::POWER | opcode::SPOT | opcode::CLEAN | opcode::MAX | opcode::SEEK_DOCK => {
                self.mode = mode::PASSIVE;
                self.wheels = (0, 0);
            }
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
                self.requested = (v, radius);
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
            codec::SENSORS => {
                let mut data = Vec::new();
                if self.packet(a[0], &mut data) {
                    out.push(data);
                }
            }
            opcode::QUERY_LIST => {
                let mut data = Vec::new();
                for &id in &a[1..] {
                    self.packet(id, &mut data);
                }
                out.push(data);
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
                if Self::counted(op) {
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
        if let (Some(ids), false) = (self.stream.clone(), self.paused) {
            out.push(self.stream_frame(&ids));
        }
    }
}

impl CreateEmulator {
    /// Appends the data of packet (or group) `id` to `out`; false for an id the OI does
    /// not have. Sending packet 19 or 20 starts its distance or angle again from zero.
    pub fn packet(&mut self, id: u8, out: &mut Vec<u8>) -> bool {
        if let Some(ids) = group(id) {
            for i in ids {
                self.packet(i, out);
            }
            return true;
        }
        let s = self.sensors();
        let cliff_signal = |c: bool| if c { CLIFF_SIGNAL.1 } else { CLIFF_SIGNAL.0 };
        match id {
            codec::BUMPS_DROPS => out.push(s.bumps_drops),
            codec::CLIFF_LEFT..=codec::CLIFF_RIGHT => {
                out.push(u8::from(s.cliffs[usize::from(id - codec::CLIFF_LEFT)]))
            }
            // Wall, virtual wall, overcurrents, dirt, unused, infrared, buttons; charging
            // state (not charging); unused; charging sources (none); song number, song
            // playing; light bumper; infrared left and right; stasis.
            8 | 13..=18 | 21 | 32 | 34 | 36 | 37 | 45 | 52 | 53 | 58 => out.push(0),
            19 => {
                let d = self.since.0.round().clamp(-32768.0, 32767.0);
                self.since.0 -= d;
                out.extend_from_slice(&be16(d));
            }
            20 => {
                let a = self.since.1.round().clamp(-32768.0, 32767.0);
                self.since.1 -= a;
                out.extend_from_slice(&be16(a));
            }
            codec::VOLTAGE => out.extend_from_slice(&s.voltage_mv.to_be_bytes()),
            23 => out.extend_from_slice(&CURRENT_MA.to_be_bytes()),
            24 => out.extend_from_slice(&TEMPERATURE_C.to_be_bytes()),
            25 => out.extend_from_slice(&BATTERY_MAH.0.to_be_bytes()),
            26 => out.extend_from_slice(&BATTERY_MAH.1.to_be_bytes()),
            28..=31 => {
                let signal = cliff_signal(s.cliffs[usize::from(id - 28)]);
                out.extend_from_slice(&signal.to_be_bytes());
            }
            // Wall signal, unused, light bump signals, motor currents.
            27 | 33 | 46..=51 | 54..=57 => out.extend_from_slice(&[0, 0]),
            codec::OI_MODE => out.push(s.mode),
            38 => out.push(self.stream.as_ref().map_or(0, |ids| ids.len() as u8)),
            39 => out.extend_from_slice(&self.requested.0.to_be_bytes()),
            40 => out.extend_from_slice(&self.requested.1.to_be_bytes()),
            41 => out.extend_from_slice(&self.wheels.0.to_be_bytes()),
            42 => out.extend_from_slice(&self.wheels.1.to_be_bytes()),
            codec::LEFT_ENCODER => out.extend_from_slice(&s.left_counts.to_be_bytes()),
            codec::RIGHT_ENCODER => out.extend_from_slice(&s.right_counts.to_be_bytes()),
            _ => return false,
        }
        true
    }

    /// A stream frame of the packets `ids` (those the OI does not have left out).
    fn stream_frame(&mut self, ids: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        for &id in ids {
            body.push(id);
            if !self.packet(id, &mut body) {
                body.pop();
            }
        }
        let mut v = vec![codec::STREAM_HEADER, body.len() as u8];
        v.extend_from_slice(&body);
        let sum = v.iter().fold(0u8, |s, &b| s.wrapping_add(b));
        v.push(0u8.wrapping_sub(sum));
        v
    }

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

    #[test]
    fn packets_and_groups_have_the_sizes_of_the_open_interface() {
        let mut e = CreateEmulator::open_floor();
        let size = |e: &mut CreateEmulator, id| {
            let mut v = Vec::new();
            e.packet(id, &mut v).then_some(v.len())
        };
        let groups = [
            (0, 26),
            (1, 10),
            (2, 6),
            (3, 10),
            (4, 14),
            (5, 12),
            (6, 52),
            (100, 80),
            (101, 28),
            (106, 12),
            (107, 9),
        ];
        for (id, n) in groups {
            assert_eq!(size(&mut e, id), Some(n), "group {id}");
        }
        let two: [u8; 25] = [
            19, 20, 22, 23, 25, 26, 27, 28, 29, 30, 31, 33, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49,
            50, 51, 54,
        ];
        for id in 7..=58u8 {
            let n = if two.contains(&id) || (55..=57).contains(&id) {
                2
            } else {
                1
            };
            assert_eq!(size(&mut e, id), Some(n), "packet {id}");
        }
        assert_eq!(size(&mut e, 59), None);
        // The driver's packets, streamed, are the frame its codec decodes.
        assert_eq!(e.stream_frame(&codec::STREAMED), e.sensors().frame());
    }

    #[test]
    fn group_100_reports_distance_and_angle_since_last_sent() {
        let mut e = CreateEmulator::open_floor();
        let t0 = Instant::now();
        let mut out = Vec::new();
        let mut cmd = vec![codec::START, codec::SAFE];
        cmd.extend_from_slice(&codec::drive_direct(200, 200));
        e.receive(&cmd, t0, &mut out);
        e.receive(
            &[codec::SENSORS, 100],
            t0 + Duration::from_secs(1),
            &mut out,
        );
        let g = out.pop().unwrap();
        assert_eq!(g.len(), 80);
        let i16_at = |g: &[u8], i: usize| i16::from_be_bytes([g[i], g[i + 1]]);
        assert!(
            (i16_at(&g, 12) - 200).abs() <= 1,
            "distance {}",
            i16_at(&g, 12)
        );
        assert_eq!(
            (g[40], i16_at(&g, 48), i16_at(&g, 50)),
            (mode::SAFE, 200, 200)
        );
        let mut cmd = codec::drive_direct(100, -100).to_vec();
        cmd.extend_from_slice(&[codec::SENSORS, 100]);
        e.receive(&cmd, t0 + Duration::from_secs(1), &mut out);
        assert_eq!(i16_at(&out.pop().unwrap(), 12), 0, "reset once sent");
        // Half a second turning in place at 100 mm/s a wheel: 0.1 m / 0.235 m rad.
        e.receive(
            &[codec::SENSORS, 20],
            t0 + Duration::from_millis(1500),
            &mut out,
        );
        let angle = i16_at(&out.pop().unwrap(), 0);
        assert!((angle - 24).abs() <= 1, "{angle} deg counter-clockwise");
    }

    #[test]
    fn argument_bytes_of_other_opcodes_are_not_read_as_opcodes() {
        let mut e = CreateEmulator::open_floor();
        let mut out = Vec::new();
        // LEDS with the power LED's colour 131 (SAFE) and intensity 128 (START); a song
        // of two notes whose durations are 132 (FULL) and 145 (DRIVE DIRECT); PLAY it.
        let cmd = [
            codec::START,
            139,
            0,
            131,
            128,
            140,
            0,
            2,
            60,
            132,
            62,
            145,
            141,
            0,
            opcode::QUERY_LIST,
            2,
            codec::OI_MODE,
            codec::BUMPS_DROPS,
        ];
        e.receive(&cmd, Instant::now(), &mut out);
        assert_eq!(e.mode, mode::PASSIVE);
        assert_eq!(out, [vec![mode::PASSIVE, 0]]);
        e.receive(
            &[opcode::CONTROL, opcode::SEEK_DOCK],
            Instant::now(),
            &mut out,
        );
        assert_eq!(e.mode, mode::PASSIVE);
    }
}
