//! The built-in simulated Pioneer 2-DX, as a driver actor.
//!
//! One actor serves every device of one simulated robot (position, sonar, misc, gripper,
//! laser, PTZ camera, ACTS vision; or whichever subset the configuration gives it). The
//! physics of [`world`] runs at a fixed 10 ms step in real time; readings are published at
//! the rates a real Pioneer produces them (10 Hz by default, configurable). As on the real
//! robot, position, sonar, misc and gripper are one device group: the first of them to be
//! set up resets the odometry and zeroes the command, and the robot stops when the last of
//! them is shut down.

pub mod world;

use crate::catalog::{Catalog, DriverContext, StartedDriver};
use crate::driver::{
    Command, Config, DeviceSpec, DriverError, DriverHandle, Publisher, Setup, Shutdown, Stop,
    Subscribers, Terminate,
};
use actix::prelude::*;
use bytes::Bytes;
use player_proto::data::{self as wire, GripperCommand, PositionCommand};
use player_proto::{config as codes, device};
use serde::Deserialize;
use slog::{info, warn, Logger};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use world::{RobotParams, SimRobot, WorldMap};

/// The devices that share the robot's microcontroller.
const BASE: [u8; 4] = [
    device::POSITION,
    device::SONAR,
    device::MISC,
    device::GRIPPER,
];

/// The physics step.
const STEP: f64 = 0.01;

/// Parameters of the `sim` driver (`[robot.driver.params]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimParams {
    /// `"room"` for the built-in room, or the path of a world file.
    #[serde(default = "default_world")]
    pub world: String,
    /// Whether the motors are powered when the base is opened (there is no button to push).
    #[serde(default = "yes")]
    pub motors_on: bool,
    /// Start pose `[x mm, y mm, heading degrees]`, overriding the world's.
    #[serde(default)]
    pub pose: Option<[f64; 3]>,
    /// Rate of position, sonar, misc and gripper readings (the P2OS SIP rate), Hz.
    #[serde(default = "ten")]
    pub base_hz: f64,
    /// Rate of laser scans, Hz.
    #[serde(default = "ten")]
    pub laser_hz: f64,
    /// Rate of PTZ readings, Hz.
    #[serde(default = "ten")]
    pub ptz_hz: f64,
    /// Rate of vision readings, Hz.
    #[serde(default = "ten")]
    pub vision_hz: f64,
}

fn default_world() -> String {
    "room".into()
}
fn yes() -> bool {
    true
}
fn ten() -> f64 {
    10.0
}

/// The simulated robot's driver actor.
pub struct SimDriver {
    robot: SimRobot,
    params: SimParams,
    devices: Vec<u8>,
    up: BTreeSet<u8>,
    publisher: Publisher,
    started: Instant,
    last_step: Instant,
    pending: f64,
    log: Logger,
}

impl SimDriver {
    fn new(ctx: &DriverContext) -> Result<SimDriver, DriverError> {
        let params: SimParams = ctx.params()?;
        for (name, hz) in [
            ("base_hz", params.base_hz),
            ("laser_hz", params.laser_hz),
            ("ptz_hz", params.ptz_hz),
            ("vision_hz", params.vision_hz),
        ] {
            if !(hz.is_finite() && hz > 0.0 && hz <= 1000.0) {
                return Err(DriverError(format!(
                    "sim parameter {name} = {hz}: must be between 0 and 1000 Hz"
                )));
            }
        }
        let map = if params.world == "room" {
            WorldMap::default_room()
        } else {
            let path = ctx.path(&params.world);
            WorldMap::from_file(&path).map_err(|e| DriverError(e.to_string()))?
        };
        let robot_params = RobotParams {
            motors_on_at_start: params.motors_on,
            start_pose: params.pose.map(|[x, y, h]| (x, y, h.to_radians())),
            ..RobotParams::default()
        };
        for &d in &ctx.devices {
            if !device::ALL.contains(&d) {
                return Err(DriverError(format!(
                    "the simulator has no device '{}'",
                    char::from(d)
                )));
            }
        }
        Ok(SimDriver {
            robot: SimRobot::new(Arc::new(map), robot_params),
            params,
            devices: ctx.devices.clone(),
            up: BTreeSet::new(),
            publisher: Publisher::new(),
            started: ctx.started,
            last_step: Instant::now(),
            pending: 0.0,
            log: ctx.logger.clone(),
        })
    }

    fn specs(&self) -> Vec<DeviceSpec> {
        self.devices
            .iter()
            .map(|&d| match d {
                device::POSITION => DeviceSpec::read_write(d, PositionCommand::SIZE),
                device::GRIPPER => DeviceSpec::read_write(d, GripperCommand::SIZE),
                device::PTZ => DeviceSpec::read_write(d, wire::Ptz::SIZE),
                _ => DeviceSpec::read_only(d),
            })
            .collect()
    }

    fn base_open(&self) -> bool {
        BASE.iter().any(|d| self.up.contains(d))
    }

    /// Advances the physics to now in fixed steps.
    fn advance(&mut self) {
        let now = Instant::now();
        self.pending += now.duration_since(self.last_step).as_secs_f64();
        self.last_step = now;
        // After a long pause (a stopped process), do not replay minutes of physics.
        self.pending = self.pending.min(1.0);
        while self.pending >= STEP {
            self.robot.step(STEP);
            self.pending -= STEP;
        }
    }

    fn reading(&self, d: u8) -> Bytes {
        let bytes = match d {
            device::POSITION => {
                let p = self.robot.position();
                wire::Position {
                    time: self.started.elapsed().as_millis() as u32,
                    x: p.x,
                    y: p.y,
                    heading: p.heading,
                    speed: p.speed,
                    turn_rate: p.turn_rate,
                    compass: p.compass,
                    stall: p.stall,
                }
                .encode()
            }
            device::SONAR => wire::Sonar {
                ranges: self.robot.sonar(),
            }
            .encode(),
            device::LASER => wire::Laser {
                ranges: self.robot.laser(),
            }
            .encode(),
            device::MISC => {
                let m = self.robot.misc();
                wire::Misc {
                    front_bumpers: m.front_bumpers,
                    rear_bumpers: m.rear_bumpers,
                    voltage: m.voltage,
                }
                .encode()
            }
            device::GRIPPER => {
                let g = self.robot.gripper();
                wire::Gripper {
                    state: g.state,
                    beams: g.beams,
                }
                .encode()
            }
            device::PTZ => {
                let z = self.robot.ptz();
                wire::Ptz {
                    pan: z.pan,
                    tilt: z.tilt,
                    zoom: z.zoom,
                }
                .encode()
            }
            _ => {
                let mut channels = vec![Vec::new(); wire::ACTS_CHANNELS];
                for b in self.robot.vision() {
                    if let Some(c) = channels.get_mut(usize::from(b.channel)) {
                        c.push(wire::Blob {
                            area: b.area,
                            x: b.x,
                            y: b.y,
                            left: b.left,
                            right: b.right,
                            top: b.top,
                            bottom: b.bottom,
                        });
                    }
                }
                wire::Vision { channels }.encode()
            }
        };
        Bytes::from(bytes)
    }

    fn publish(&mut self, devices: &[u8]) {
        self.advance();
        for &d in devices {
            if self.up.contains(&d) {
                let data = self.reading(d);
                self.publisher.publish(d, data);
            }
        }
    }

    fn every(&self, hz: f64, ctx: &mut Context<Self>, devices: Vec<u8>) {
        let devices: Vec<u8> = devices
            .into_iter()
            .filter(|d| self.devices.contains(d))
            .collect();
        if devices.is_empty() {
            return;
        }
        ctx.run_interval(Duration::from_secs_f64(1.0 / hz), move |act, _| {
            act.publish(&devices)
        });
    }

    fn apply_config(&mut self, msg: &Config) {
        let code = msg.payload[0];
        let args = &msg.payload[1..];
        if !BASE.contains(&msg.device) {
            info!(self.log, "config ignored: this device takes no configs"; "device" => device::name(msg.device), "client" => &msg.client);
            return;
        }
        if !self.base_open() {
            warn!(self.log, "config ignored: open position, sonar, misc or gripper first"; "client" => &msg.client, "code" => format!("{}", char::from(code)));
            return;
        }
        self.advance();
        match (code, args.len()) {
            (codes::MOTOR_POWER, 1) => {
                info!(self.log, "motor power"; "on" => args[0] != 0, "client" => &msg.client);
                self.robot.set_motor_power(args[0] != 0);
            }
            (codes::VELOCITY_MODE, 1) => {
                info!(self.log, "velocity mode"; "separate" => args[0] != 0, "client" => &msg.client);
                self.robot.set_velocity_mode(args[0] != 0);
            }
            (codes::RESET_ODOMETRY, 0) => {
                info!(self.log, "odometry reset"; "client" => &msg.client);
                self.robot.reset_odometry();
            }
            _ => {
                warn!(self.log, "config ignored: unknown code or wrong size"; "device" => device::name(msg.device), "code" => format!("{:#04x}", code), "size" => msg.payload.len(), "client" => &msg.client)
            }
        }
    }
}

impl Actor for SimDriver {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.last_step = Instant::now();
        ctx.run_interval(Duration::from_secs_f64(STEP), |act, _| act.advance());
        self.every(self.params.base_hz, ctx, BASE.to_vec());
        self.every(self.params.laser_hz, ctx, vec![device::LASER]);
        self.every(self.params.ptz_hz, ctx, vec![device::PTZ]);
        self.every(self.params.vision_hz, ctx, vec![device::VISION]);
    }
}

impl Handler<Setup> for SimDriver {
    type Result = Result<(), DriverError>;

    fn handle(&mut self, msg: Setup, _ctx: &mut Self::Context) -> Self::Result {
        if !self.devices.contains(&msg.device) {
            return Err(DriverError(format!(
                "the simulator does not serve '{}' here",
                char::from(msg.device)
            )));
        }
        self.advance();
        if BASE.contains(&msg.device) && !self.base_open() {
            // Opening the microcontroller: odometry from (0, 0, 0), no command left over.
            self.robot.stop();
            self.robot.reset_odometry();
            self.robot.set_velocity_mode(false);
            self.robot.set_motor_power(self.params.motors_on);
            info!(self.log, "simulated base opened"; "motors_on" => self.params.motors_on);
        }
        self.up.insert(msg.device);
        // A first reading at once, so a client's first round need not wait a period.
        self.publish(&[msg.device]);
        Ok(())
    }
}

impl Handler<Shutdown> for SimDriver {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, _ctx: &mut Self::Context) {
        self.up.remove(&msg.device);
        self.publisher.clear(msg.device);
        if BASE.contains(&msg.device) && !self.base_open() {
            self.advance();
            self.robot.stop();
            info!(self.log, "simulated base closed; robot stopped");
        }
    }
}

impl Handler<Command> for SimDriver {
    type Result = ();

    fn handle(&mut self, msg: Command, _ctx: &mut Self::Context) {
        self.advance();
        match msg.device {
            device::POSITION => {
                if let Ok(c) = PositionCommand::decode(&msg.payload) {
                    self.robot.set_velocity(c.speed, c.turn_rate);
                }
            }
            device::PTZ => {
                if let Ok(z) = wire::Ptz::decode(&msg.payload) {
                    self.robot.set_ptz(z.pan, z.tilt, z.zoom);
                }
            }
            device::GRIPPER => {
                if let Ok(g) = GripperCommand::decode(&msg.payload) {
                    self.robot.gripper_command(g.command, g.arg);
                }
            }
            _ => {}
        }
    }
}

impl Handler<Config> for SimDriver {
    type Result = ();

    fn handle(&mut self, msg: Config, _ctx: &mut Self::Context) {
        if !msg.payload.is_empty() {
            self.apply_config(&msg);
        }
    }
}

impl Handler<Stop> for SimDriver {
    type Result = ();

    fn handle(&mut self, msg: Stop, _ctx: &mut Self::Context) {
        if msg.device == device::POSITION {
            self.advance();
            self.robot.stop();
            info!(self.log, "a client with write access left; robot stopped");
        }
    }
}

impl Handler<Subscribers> for SimDriver {
    type Result = ();

    fn handle(&mut self, msg: Subscribers, _ctx: &mut Self::Context) {
        self.publisher.set_subscribers(msg);
    }
}

impl Handler<Terminate> for SimDriver {
    type Result = ();

    fn handle(&mut self, _msg: Terminate, ctx: &mut Self::Context) {
        self.advance();
        self.robot.stop();
        self.up.clear();
        info!(self.log, "simulator stopped");
        ctx.stop();
    }
}

/// Registers the `sim` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("sim", |ctx: DriverContext| {
        let driver = SimDriver::new(&ctx)?;
        let devices = driver.specs();
        let addr = driver.start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices,
        })
    });
}
