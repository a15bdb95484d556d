//! An emulated Pioneer 2-DX microcontroller running P2OS, for [`SerialEmulator`]: the SYNC
//! handshake, OPEN/CLOSE, a standard SIP every 100 ms while open, ENABLE, SETO, VEL2,
//! VEL/RVEL (ramped), STOP, SONAR, GRIPPER/GRIPPERVAL and the 2 s watchdog
//! (docs/reference/p2os.md §14).
//! The robot moves in an [`EmuWorld`]: its odometry, sonars, bumpers, battery and gripper
//! come from the simulated robot there, in P2OS units.
//!
//! [`SerialEmulator`]: crate::SerialEmulator

use crate::{EmuWorld, SerialDevice};
use player_devices::p2os::{self as codec, p2dx, HostCommand, Identity, Parser, Sip};
use std::time::{Duration, Instant};

/// The SIP period.
pub const SIP_PERIOD: Duration = Duration::from_millis(100);
/// The watchdog: no packet for this long stops the drives.
pub const WATCHDOG: Duration = Duration::from_secs(2);

/// Where the emulated robot is in the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for SYNC0 (or in the middle of the handshake: the next expected SYNC).
    Unsynced(u8),
    /// Handshake done, waiting for OPEN.
    Synced,
    /// Open: SIPs flow.
    Open,
}

/// What the emulated robot has received, for tests to check.
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// SYNC0 packets (including PULSEs sent before the handshake).
    pub sync0: u64,
    /// OPEN packets that opened the connection.
    pub opens: u64,
    /// CLOSE packets that closed an open connection.
    pub closes: u64,
    /// STOP packets.
    pub stops: u64,
    /// PULSE packets while open.
    pub pulses: u64,
    /// ENABLE arguments, in order.
    pub enables: Vec<i32>,
    /// SETO packets.
    pub setos: u64,
    /// VEL2 packets.
    pub vel2: u64,
    /// VEL packets.
    pub vel: u64,
    /// RVEL packets.
    pub rvel: u64,
    /// GRIPPER and GRIPPERVAL packets: (command number, argument).
    pub gripper: Vec<(u8, i32)>,
    /// Packets dropped for a bad checksum or count.
    pub bad: u64,
    /// Times the watchdog stopped the drives.
    pub watchdog_trips: u64,
}

/// The emulated P2OS robot.
pub struct P2osEmulator {
    world: EmuWorld,
    /// The name, class and subclass announced in the SYNC2 echo.
    pub identity: Identity,
    phase: Phase,
    parser: Parser,
    next_sip: Instant,
    last_packet: Instant,
    watchdog_tripped: bool,
    motors: bool,
    /// Commanded wheel velocities (left, right), mm/s.
    wheels: (i32, i32),
    /// When the commanded wheel velocities last changed.
    wheels_changed: Option<Instant>,
    separate: (i32, i32),
    pending_grip: Option<u8>,
    /// Everything received so far.
    pub received: Received,
    /// Sonar readings per SIP (16: all of them every SIP).
    pub sonars_per_sip: usize,
    next_sonar: usize,
    /// When the last SIP was queued for the line.
    pub last_sip: Option<Instant>,
}

impl P2osEmulator {
    /// A robot (unsynced, motors off) living in `world`.
    pub fn new(world: EmuWorld) -> P2osEmulator {
        let now = Instant::now();
        world.with(|r| {
            r.set_motor_power(false);
            r.stop();
        });
        P2osEmulator {
            world,
            identity: Identity {
                name: "emulated".into(),
                class: "Pioneer".into(),
                subclass: "P2DX".into(),
            },
            phase: Phase::Unsynced(0),
            parser: Parser::new(),
            next_sip: now,
            last_packet: now,
            watchdog_tripped: false,
            motors: false,
            wheels: (0, 0),
            wheels_changed: None,
            separate: (0, 0),
            pending_grip: None,
            received: Received::default(),
            sonars_per_sip: 16,
            next_sonar: 0,
            last_sip: None,
        }
    }

    /// A robot left open by a server that crashed: streaming SIPs, waiting for nobody.
    pub fn left_open(world: EmuWorld) -> P2osEmulator {
        let mut e = P2osEmulator::new(world);
        e.phase = Phase::Open;
        e
    }

    /// The connection phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Whether the motors are enabled.
    pub fn motors_enabled(&self) -> bool {
        self.motors
    }

    /// The commanded wheel velocities (left, right) in mm/s.
    pub fn wheels(&self) -> (i32, i32) {
        self.wheels
    }

    /// When the commanded wheel velocities last changed.
    pub fn wheels_changed_at(&self) -> Option<Instant> {
        self.wheels_changed
    }

    /// The simulated world the robot lives in.
    pub fn world(&self) -> &EmuWorld {
        &self.world
    }

    fn set_wheels(&mut self, left: i32, right: i32, now: Instant) {
        if (left, right) != self.wheels {
            self.wheels_changed = Some(now);
        }
        self.wheels = (left, right);
        let speed = (left + right) / 2;
        let turn = (f64::from(right - left) / p2dx::AXLE_MM)
            .to_degrees()
            .round() as i32;
        self.world.with(|r| {
            r.set_velocity_mode(false);
            r.set_velocity(clamp16(speed), clamp16(turn));
        });
    }

    fn set_separate(&mut self, now: Instant) {
        let (v, w) = self.separate;
        let rot = f64::from(w).to_radians() * p2dx::AXLE_MM / 2.0;
        let wheels = (v - rot.round() as i32, v + rot.round() as i32);
        if wheels != self.wheels {
            self.wheels_changed = Some(now);
        }
        self.wheels = wheels;
        self.world.with(|r| {
            r.set_velocity_mode(true);
            r.set_velocity(clamp16(v), clamp16(w));
        });
    }

    fn halt(&mut self, now: Instant) {
        self.separate = (0, 0);
        if self.wheels != (0, 0) {
            self.wheels_changed = Some(now);
        }
        self.wheels = (0, 0);
        self.world.with(|r| r.stop());
    }

    fn handle(&mut self, cmd: HostCommand, now: Instant, out: &mut Vec<Vec<u8>>) {
        self.last_packet = now;
        if self.watchdog_tripped {
            self.watchdog_tripped = false;
        }
        match self.phase {
            Phase::Unsynced(_) | Phase::Synced if cmd.code == codec::SYNC0 => {
                self.received.sync0 += 1;
                out.push(codec::command(codec::SYNC0));
                self.phase = Phase::Unsynced(1);
            }
            Phase::Unsynced(1) if cmd.code == codec::SYNC1 => {
                out.push(codec::command(codec::SYNC1));
                self.phase = Phase::Unsynced(2);
            }
            Phase::Unsynced(2) if cmd.code == codec::SYNC2 => {
                out.push(codec::packet(&self.identity.encode()));
                self.phase = Phase::Synced;
            }
            Phase::Unsynced(_) => {}
            Phase::Synced => {
                if cmd.code == codec::OPEN {
                    self.received.opens += 1;
                    self.phase = Phase::Open;
                    // Motors are disabled at every connection, whatever they were.
                    self.motors = false;
                    self.world.with(|r| r.set_motor_power(false));
                    self.halt(now);
                    self.next_sip = now + SIP_PERIOD / 2;
                }
            }
            Phase::Open => self.open_command(cmd, now),
        }
    }

    fn open_command(&mut self, cmd: HostCommand, now: Instant) {
        let arg = cmd.arg.unwrap_or(0);
        match cmd.code {
            codec::PULSE => self.received.pulses += 1,
            codec::OPEN => {}
            codec::CLOSE => {
                self.received.closes += 1;
                self.halt(now);
                self.motors = false;
                self.world.with(|r| r.set_motor_power(false));
                self.phase = Phase::Unsynced(0);
            }
            codec::ENABLE => {
                self.received.enables.push(arg);
                self.motors = arg != 0;
                let on = self.motors;
                self.world.with(|r| r.set_motor_power(on));
            }
            codec::SETO => {
                self.received.setos += 1;
                self.world.with(|r| r.reset_odometry());
            }
            codec::VEL => {
                self.received.vel += 1;
                self.separate.0 = arg.clamp(-p2dx::MAX_SPEED, p2dx::MAX_SPEED);
                self.set_separate(now);
            }
            codec::RVEL => {
                self.received.rvel += 1;
                self.separate.1 = arg.clamp(-p2dx::MAX_TURN, p2dx::MAX_TURN);
                self.set_separate(now);
            }
            codec::STOP => {
                self.received.stops += 1;
                self.halt(now);
            }
            codec::VEL2 => {
                if let Some([lo, hi]) = cmd.raw {
                    self.received.vel2 += 1;
                    let right = i32::from(lo as i8) * p2dx::VEL2_UNIT as i32;
                    let left = i32::from(hi as i8) * p2dx::VEL2_UNIT as i32;
                    self.set_wheels(left, right, now);
                }
            }
            codec::GRIPPER => {
                self.received.gripper.push((codec::GRIPPER, arg));
                let c = arg.clamp(0, 255) as u8;
                if c == codec::GRIP_PRESS || c == codec::LIFT_CARRY {
                    self.pending_grip = Some(c);
                } else {
                    self.world.with(|r| r.gripper_command(c, 0));
                }
            }
            codec::GRIPPERVAL => {
                self.received.gripper.push((codec::GRIPPERVAL, arg));
                if let Some(c) = self.pending_grip.take() {
                    let a = arg.clamp(-128, 255) as i16 as u8;
                    self.world.with(|r| r.gripper_command(c, a));
                }
            }
            _ => {} // P2OS ignores unknown commands and sends no NAK.
        }
    }

    fn sip(&mut self) -> Sip {
        let n = self.sonars_per_sip.clamp(1, 16);
        let first = self.next_sonar;
        self.next_sonar = (first + n) % 16;
        self.world.with(|r| {
            let p = r.position();
            let m = r.misc();
            let g = r.gripper();
            let sonar = r.sonar();
            let rot = f64::from(p.turn_rate).to_radians() * p2dx::AXLE_MM / 2.0;
            let lvel = (f64::from(p.speed) - rot).round() as i16;
            let rvel = (f64::from(p.speed) + rot).round() as i16;
            let raw = |mm: i32| {
                ((f64::from(mm) / p2dx::DIST_CONV).round() as i64).rem_euclid(32768) as u16
            };
            let thpos = ((f64::from(p.heading) * 4096.0 / 360.0).round() as i32).rem_euclid(4096);
            Sip {
                status: if lvel == 0 && rvel == 0 {
                    codec::SIP_STOPPED
                } else {
                    codec::SIP_MOVING
                },
                xpos: raw(p.x),
                ypos: raw(p.y),
                thpos: thpos as i16,
                lvel,
                rvel,
                battery: m.voltage,
                stall_low: (m.rear_bumpers << 1) | p.stall,
                stall_high: (m.front_bumpers << 1) | p.stall,
                control: 0,
                ptu: 0,
                compass: (p.compass / 2 + 1).min(180) as u8,
                sonars: (0..n)
                    .map(|k| {
                        let i = (first + k) % 16;
                        let raw = (f64::from(sonar[i]) / p2dx::RANGE_CONV).round();
                        (i as u8, raw.min(65535.0) as u16)
                    })
                    .collect(),
                timer: u16::from(g.state) << 8 | 5,
                analog: 0,
                digin: g.beams,
                digout: 0,
            }
        })
    }
}

fn clamp16(v: i32) -> i16 {
    v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

impl SerialDevice for P2osEmulator {
    fn baud(&self) -> u32 {
        9600
    }

    fn receive(&mut self, bytes: &[u8], now: Instant, out: &mut Vec<Vec<u8>>) {
        self.parser.push(bytes);
        while let Some(p) = self.parser.next_packet() {
            match p {
                Ok(payload) => {
                    if let Some(cmd) = HostCommand::parse(&payload) {
                        self.handle(cmd, now, out);
                    }
                }
                Err(_) => self.received.bad += 1,
            }
        }
    }

    fn tick(&mut self, now: Instant, out: &mut Vec<Vec<u8>>) {
        if self.phase != Phase::Open {
            return;
        }
        if now.duration_since(self.last_packet) > WATCHDOG && !self.watchdog_tripped {
            self.watchdog_tripped = true;
            self.received.watchdog_trips += 1;
            self.halt(now);
        }
        if now >= self.next_sip {
            self.next_sip += SIP_PERIOD;
            if self.next_sip < now {
                self.next_sip = now + SIP_PERIOD;
            }
            let sip = self.sip();
            out.push(codec::packet(&sip.encode()));
            self.last_sip = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(e: &mut P2osEmulator, pkt: Vec<u8>) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        e.receive(&pkt, Instant::now(), &mut out);
        out
    }

    #[test]
    fn handshake_open_sip_and_close() {
        let mut e = P2osEmulator::new(EmuWorld::room());
        assert_eq!(feed(&mut e, codec::command(1)), Vec::<Vec<u8>>::new());
        assert_eq!(feed(&mut e, codec::command(0)), vec![codec::command(0)]);
        assert_eq!(feed(&mut e, codec::command(1)), vec![codec::command(1)]);
        let echo = feed(&mut e, codec::command(2));
        assert_eq!(echo.len(), 1);
        assert_eq!(e.phase(), Phase::Synced);
        feed(&mut e, codec::command(codec::OPEN));
        assert_eq!(e.phase(), Phase::Open);
        let mut out = Vec::new();
        e.tick(Instant::now() + SIP_PERIOD, &mut out);
        assert_eq!(out.len(), 1);
        let mut p = Parser::new();
        p.push(&out[0]);
        let sip = Sip::parse(&p.next_packet().unwrap().unwrap()).unwrap();
        assert_eq!(sip.sonars.len(), 16);
        assert!(sip.battery > 100);
        // VEL2 has no effect on the world until ENABLE, but the set-points are taken.
        feed(&mut e, codec::vel2(7, 2));
        assert_eq!(e.wheels(), (40, 140));
        assert!(!e.motors_enabled());
        feed(&mut e, codec::command_int(codec::ENABLE, 1));
        assert!(e.motors_enabled());
        feed(&mut e, codec::command(codec::STOP));
        assert_eq!(e.wheels(), (0, 0));
        feed(&mut e, codec::command(codec::CLOSE));
        assert_eq!(e.phase(), Phase::Unsynced(0));
        assert_eq!((e.received.stops, e.received.closes), (1, 1));
    }

    #[test]
    fn an_open_robot_treats_sync0_as_pulse_and_ignores_bad_checksums() {
        let mut e = P2osEmulator::left_open(EmuWorld::room());
        assert!(feed(&mut e, codec::command(0)).is_empty());
        assert_eq!(e.received.pulses, 1);
        let mut bad = codec::vel2(5, 5);
        bad[7] ^= 0xFF;
        feed(&mut e, bad);
        assert_eq!(e.received.bad, 1);
        assert_eq!(e.wheels(), (0, 0));
    }

    #[test]
    fn the_watchdog_stops_the_drives() {
        let mut e = P2osEmulator::left_open(EmuWorld::room());
        let t0 = Instant::now();
        let mut out = Vec::new();
        e.receive(&codec::vel2(5, 5), t0, &mut out);
        assert_eq!(e.wheels(), (100, 100));
        e.tick(t0 + WATCHDOG + Duration::from_millis(10), &mut out);
        assert_eq!(e.wheels(), (0, 0));
        assert_eq!(e.received.watchdog_trips, 1);
    }
}
