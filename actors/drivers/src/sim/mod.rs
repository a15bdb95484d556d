//! The built-in simulator (a Stage for Player): simulated Pioneer 2-DX robots in a shared
//! 2-D world, each served as a driver actor.
//!
//! One actor serves every device of one simulated robot (position, sonar, misc, gripper,
//! laser, PTZ camera, ACTS vision; or whichever subset the configuration gives it). All the
//! robots of one world file live in one [`player_sim::SimWorld`], shared by their drivers (they all
//! run on the main arbiter): they see and bump into each other. The physics runs at a fixed
//! 10 ms step in real time, stepped by one timer per world; readings are published at the
//! rates a real Pioneer produces them (10 Hz by default, configurable). As on the real robot,
//! position, sonar, misc and gripper are one device group (with `P`, the position at full
//! precision, published in the same batch as `p`): the first of them to be set up resets
//! the odometry and zeroes the command, and the robot stops when the last of them is shut
//! down. The driver answers a map driver's [`WorldRequest`] with its world's solids.
//!
//! [`stage_robots`] turns `-stage WORLD` into one served robot per robot of the world file,
//! each on its own port with its own registry. If the world file asks for a ground-truth log
//! (`[truth]`), the world writes it as it runs. The world file's events (`[[event]]`: robots
//! carried elsewhere) fire as the world steps; each carry is logged at info and, in the
//! truth log, written as a line marked `carried`.

use actix::prelude::*;
use bytes::Bytes;
use player_kit::catalog::{
    Catalog, DriverContext, DriverSettings, StageError, StageRobot, StartedDriver,
};
use player_kit::driver::{
    Command, Config, DeviceSpec, DriverError, DriverHandle, MapOutline, MapRequest, Publisher,
    Setup, Shutdown, Stop, Timestamp, WorldRequest, WorldSolids, MAX_MAP_SEGMENTS,
};
use player_kit::plain::{Driver, Reply};
use player_kit::timer::RunEvery;
use player_kit::world::{Solid, MAX_WORLD_SOLIDS};
use player_proto::data::{self as wire, GripperCommand, PositionCommand};
use player_proto::{config as codes, device};
use player_sim::{Noise, SimWorld, TruthFormat, TruthRecord, WorldMap};
use serde::Deserialize;
use slog::{info, warn, Logger};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The devices that share the robot's microcontroller.
const BASE: [u8; 5] = [
    device::POSITION,
    device::PRECISE_ODOMETRY,
    device::SONAR,
    device::MISC,
    device::GRIPPER,
];

/// The physics step.
const STEP: f64 = player_sim::simworld::STEP_S;

/// How often the world is brought up to date when nothing else asks for it.
const CATCH_UP: Duration = Duration::from_millis(100);

/// Parameters of the `sim` driver (`[robot.driver.params]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimParams {
    /// `"room"` for the built-in room, or the path of a world file.
    #[serde(default = "default_world")]
    pub world: String,
    /// Which robot of the world this driver serves, by name (default: the first).
    #[serde(default)]
    pub robot: Option<String>,
    /// Whether the motors are powered when the base is opened (there is no button to push).
    #[serde(default = "crate::params::yes")]
    pub motors_on: bool,
    /// Start pose `[x mm, y mm, heading degrees]`, overriding the world's.
    #[serde(default)]
    pub pose: Option<[f64; 3]>,
    /// Rate of position, sonar, misc and gripper readings (the P2OS SIP rate), Hz.
    #[serde(default = "crate::params::ten")]
    pub base_hz: f64,
    /// Rate of laser scans, Hz.
    #[serde(default = "crate::params::ten")]
    pub laser_hz: f64,
    /// Rate of PTZ readings, Hz.
    #[serde(default = "crate::params::ten")]
    pub ptz_hz: f64,
    /// Rate of vision readings, Hz.
    #[serde(default = "crate::params::ten")]
    pub vision_hz: f64,
    /// Sensor and odometry noise of this robot: `true` as the world file sets it (the
    /// Pioneer's by default), `false` exact readings. Default: the world's.
    #[serde(default)]
    pub noise: Option<bool>,
    /// Random seed of this robot's noise, overriding the world's `seed` (the same seed and
    /// the same commands at the same instants give the same readings).
    #[serde(default)]
    pub seed: Option<u64>,
}

fn default_world() -> String {
    "room".into()
}

/// One world and the clock that steps it, shared by the drivers of its robots.
pub struct SharedWorld {
    world: SimWorld,
    last_step: Instant,
    pending: f64,
    truth: Option<TruthLog>,
    /// The world robots already served, with the server robot serving each.
    claimed: std::collections::HashMap<usize, String>,
    log: Logger,
}

/// The ground-truth log file being written.
struct TruthLog {
    out: BufWriter<File>,
    path: PathBuf,
    format: TruthFormat,
    period: f64,
    next: f64,
}

impl SharedWorld {
    fn new(world: SimWorld, log: Logger) -> Result<SharedWorld, DriverError> {
        let truth = match world.map().truth_log() {
            None => None,
            Some(spec) => {
                let file = File::create(&spec.file).map_err(|e| {
                    DriverError::other(format!(
                        "cannot create the truth log {}: {e}",
                        spec.file.display()
                    ))
                })?;
                let mut out = BufWriter::new(file);
                let header = if world.map().events().is_empty() {
                    TruthRecord::header(spec.format)
                } else {
                    TruthRecord::header_with_events(spec.format)
                };
                if let Some(h) = header {
                    let _ = out.write_all(h.as_bytes());
                }
                info!(log, "writing ground truth"; "file" => %spec.file.display(), "period_s" => spec.period);
                Some(TruthLog {
                    out,
                    path: spec.file.clone(),
                    format: spec.format,
                    period: spec.period,
                    next: 0.0,
                })
            }
        };
        let mut shared = SharedWorld {
            world,
            last_step: Instant::now(),
            pending: 0.0,
            truth,
            claimed: std::collections::HashMap::new(),
            log,
        };
        // Events at 0 fired as the world was made.
        shared.report_carries();
        shared.log_truth();
        Ok(shared)
    }

    /// The simulated world.
    pub fn world(&self) -> &SimWorld {
        &self.world
    }

    /// The simulated world, to command it.
    pub fn world_mut(&mut self) -> &mut SimWorld {
        &mut self.world
    }

    /// Advances the physics to now in fixed steps (at most a second's worth after a pause).
    pub fn advance(&mut self) {
        let now = Instant::now();
        self.pending += now.duration_since(self.last_step).as_secs_f64();
        self.last_step = now;
        // After a long pause (a stopped process), do not replay minutes of physics.
        self.pending = self.pending.min(1.0);
        while self.pending >= STEP {
            self.world.tick();
            self.pending -= STEP;
            self.report_carries();
            self.log_truth();
        }
        // Robots placed by hand since the last tick: file them where they are.
        self.world.refresh_index();
    }

    /// Logs the carries the last step made, and writes them to the truth log.
    fn report_carries(&mut self) {
        for c in self.world.carries() {
            let (fx, fy, fth) = c.from;
            let from = format!("({fx:.0}, {fy:.0}, {:.1})", fth.to_degrees());
            match c.to {
                Some((x, y, th)) => {
                    let to = format!("({x:.0}, {y:.0}, {:.1})", th.to_degrees());
                    info!(self.log, "world event: robot carried"; "event" => c.event, "firing" => c.firing, "robot" => &c.name, "time_s" => c.time, "from" => from, "to" => to);
                }
                None => {
                    warn!(self.log, "world event: no free spot to carry the robot to; it stays"; "event" => c.event, "firing" => c.firing, "robot" => &c.name, "time_s" => c.time, "at" => from);
                }
            }
            let Some(t) = self.truth.as_mut() else {
                continue;
            };
            if let Some(line) = c.truth_line(t.format) {
                if let Err(e) = t.out.write_all(line.as_bytes()) {
                    warn!(self.log, "truth log write failed; logging stops"; "file" => %t.path.display(), "error" => %e);
                    self.truth = None;
                }
            }
        }
    }

    fn log_truth(&mut self) {
        let Some(t) = self.truth.as_mut() else {
            return;
        };
        // Compare in ticks so the records fall on exact multiples of the period.
        if self.world.time() + STEP / 2.0 < t.next {
            return;
        }
        t.next += t.period;
        let result = self
            .world
            .write_truth(&mut t.out, t.format)
            .and_then(|_| t.out.flush());
        if let Err(e) = result {
            warn!(self.log, "truth log write failed; logging stops"; "file" => %t.path.display(), "error" => %e);
            self.truth = None;
        }
    }
}

/// Which world a driver belongs to: the world file (or `room`) of one server start.
#[derive(Clone, PartialEq, Eq)]
struct WorldKey {
    source: PathBuf,
    started: Instant,
}

thread_local! {
    /// The worlds the drivers on this thread (the main arbiter) share, by key. Weak, so a
    /// world goes away with its last driver.
    static WORLDS: RefCell<Vec<(WorldKey, Weak<RefCell<SharedWorld>>)>> = const { RefCell::new(Vec::new()) };
}

/// The shared world for `key`, and whether this call created it.
fn shared_world(
    key: WorldKey,
    make: impl FnOnce() -> Result<SharedWorld, DriverError>,
) -> Result<(Rc<RefCell<SharedWorld>>, bool), DriverError> {
    WORLDS.with(|worlds| {
        let mut worlds = worlds.borrow_mut();
        worlds.retain(|(_, w)| w.strong_count() > 0);
        if let Some(w) = worlds
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, w)| w.upgrade())
        {
            return Ok((w, false));
        }
        let w = Rc::new(RefCell::new(make()?));
        worlds.push((key, Rc::downgrade(&w)));
        Ok((w, true))
    })
}

/// The simulated robot's driver actor.
pub struct SimDriver {
    world: Rc<RefCell<SharedWorld>>,
    index: usize,
    /// This driver's timer steps the world (it created it).
    stepper: bool,
    params: SimParams,
    devices: Vec<u8>,
    up: BTreeSet<u8>,
    /// The publishing timers, running while any device is up.
    timers: Vec<SpawnHandle>,
    publisher: Publisher,
    /// The world's solids for map drivers, made at the first ask.
    solids: Option<Arc<WorldSolids>>,
    started: Instant,
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
                return Err(DriverError::params(format!(
                    "sim parameter {name} = {hz}: must be between 0 and 1000 Hz"
                )));
            }
        }
        for &d in &ctx.devices {
            if !device::ALL.contains(&d) && d != device::FULL_SCAN && d != device::PRECISE_ODOMETRY
            {
                return Err(DriverError::not_served(format!(
                    "the simulator has no device '{}'",
                    char::from(d)
                )));
            }
        }
        let source = if params.world == "room" {
            PathBuf::from("room")
        } else {
            let p = ctx.path(&params.world);
            p.canonicalize().unwrap_or(p)
        };
        let key = WorldKey {
            source: source.clone(),
            started: ctx.started,
        };
        let (world, stepper) = shared_world(key, || {
            let map = if params.world == "room" {
                WorldMap::default_room()
            } else {
                WorldMap::from_file(&source).map_err(|e| DriverError::params(e.to_string()))?
            };
            SharedWorld::new(SimWorld::new(Arc::new(map)), ctx.logger.clone())
        })?;
        let index = {
            let mut w = world.borrow_mut();
            let sim = w.world_mut();
            let index = match &params.robot {
                None => 0,
                Some(name) => sim.index_of(name).ok_or_else(|| {
                    DriverError::params(format!(
                        "the world has no robot named '{name}' (it has: {})",
                        sim.names().join(", ")
                    ))
                })?,
            };
            if let Some(by) = w.claimed.get(&index).cloned() {
                let name = w
                    .world_mut()
                    .names()
                    .get(index)
                    .cloned()
                    .unwrap_or_default();
                return Err(DriverError::params(format!(
                    "world robot '{name}' is already served by robot '{by}'; give each \
                     [[robot]] its own `robot = \"NAME\"` parameter"
                )));
            }
            w.claimed.insert(index, ctx.robot.clone());
            let sim = w.world_mut();
            let robot = sim.robot_mut(index);
            if let Some([x, y, h]) = params.pose {
                robot.set_true_pose(x, y, h.to_radians());
            }
            robot.set_motor_power(params.motors_on);
            robot.reset_odometry();
            if params.noise.is_some() || params.seed.is_some() {
                let world_noise = *sim.map().noise();
                let noise = match params.noise {
                    Some(false) => Noise::NONE,
                    Some(true) if world_noise.is_none() => Noise::PIONEER,
                    _ => world_noise,
                };
                let seed = params.seed.unwrap_or(sim.map().seed());
                sim.set_noise(index, noise, seed);
            }
            index
        };
        Ok(SimDriver {
            world,
            index,
            stepper,
            params,
            devices: ctx.devices.clone(),
            up: BTreeSet::new(),
            timers: Vec::new(),
            publisher: ctx.publisher(),
            solids: None,
            started: ctx.started,
            log: ctx.logger.clone(),
        })
    }

    /// Runs `f` on this driver's robot, after bringing the world up to now.
    fn with_robot<T>(&mut self, f: impl FnOnce(&mut player_sim::SimRobot) -> T) -> T {
        let mut w = self.world.borrow_mut();
        w.advance();
        f(w.world_mut().controls(self.index))
    }

    fn specs(&self) -> Vec<DeviceSpec> {
        self.devices
            .iter()
            .map(|&d| match d {
                device::POSITION => DeviceSpec::moving(d, PositionCommand::SIZE),
                device::GRIPPER => DeviceSpec::read_write(d, GripperCommand::SIZE),
                device::PTZ => DeviceSpec::read_write(d, wire::Ptz::SIZE),
                _ => DeviceSpec::read_only(d),
            })
            .collect()
    }

    fn base_open(&self) -> bool {
        BASE.iter().any(|d| self.up.contains(d))
    }

    /// Advances the shared world's physics to now.
    fn advance(&mut self) {
        self.world.borrow_mut().advance();
    }

    /// A reading of device `d`, its time field (position devices) `time` ms since the
    /// server started.
    fn reading(&self, d: u8, time: u32) -> Bytes {
        let shared = self.world.borrow();
        let sim = shared.world();
        let i = self.index;
        let bytes = match d {
            device::PRECISE_ODOMETRY => {
                let o = sim.odometry(i);
                player_proto::odometry::Odometry {
                    time,
                    x: o.x.round() as i32,
                    y: o.y.round() as i32,
                    heading: player_proto::odometry::Odometry::heading_of(o.heading),
                    speed: o.speed.round() as i32,
                    turn_rate: (o.turn_rate * 3600.0).round() as i32,
                    stall: u8::from(o.stall),
                }
                .encode()
            }
            device::POSITION => {
                let p = sim.position(i);
                wire::Position {
                    time,
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
                ranges: sim.sonar(i),
            }
            .encode(),
            device::LASER => wire::Laser {
                ranges: sim.laser(i),
            }
            .encode(),
            // At most 10000 readings (the world file's check), so this encodes.
            device::FULL_SCAN => sim.scan(i).encode().unwrap_or_default(),
            device::MISC => {
                let m = sim.misc(i);
                wire::Misc {
                    front_bumpers: m.front_bumpers,
                    rear_bumpers: m.rear_bumpers,
                    voltage: m.voltage,
                }
                .encode()
            }
            device::GRIPPER => {
                let g = sim.gripper(i);
                wire::Gripper {
                    state: g.state,
                    beams: g.beams,
                }
                .encode()
            }
            device::PTZ => {
                let z = sim.ptz(i);
                wire::Ptz {
                    pan: z.pan,
                    tilt: z.tilt,
                    zoom: z.zoom,
                }
                .encode()
            }
            _ => {
                let mut channels = vec![Vec::new(); wire::ACTS_CHANNELS];
                for b in sim.vision(i) {
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

    /// Takes a reading of each of `devices` that is up, then publishes them as one batch
    /// with one timestamp: the readings are of one instant, none waits for the others to
    /// be computed after its timestamp was taken, and each session gets one message.
    fn publish(&mut self, devices: &[u8]) {
        self.advance();
        let up = |d: u8| devices.contains(&d) && self.up.contains(&d);
        // `l` and `L` both read: one casting of the rays gives both.
        let mut laser_and_scan = (up(device::LASER) && up(device::FULL_SCAN)).then(|| {
            let (laser, scan) = self.world.borrow().world().laser_and_scan(self.index);
            (
                Bytes::from(wire::Laser { ranges: laser }.encode()),
                Bytes::from(scan.encode().unwrap_or_default()),
            )
        });
        // One time for the batch: `p` and `P` are of one instant.
        let time = self.started.elapsed().as_millis() as u32;
        let readings: Vec<(u8, Bytes)> = devices
            .iter()
            .filter(|d| self.up.contains(d))
            .map(|&d| match (&mut laser_and_scan, d) {
                (Some((l, _)), device::LASER) => (d, std::mem::take(l)),
                (Some((_, s)), device::FULL_SCAN) => (d, std::mem::take(s)),
                _ => (d, self.reading(d, time)),
            })
            .collect();
        if !readings.is_empty() {
            self.publisher.publish_batch(readings, Timestamp::now());
        }
    }

    /// Publishes `devices` (those this driver serves) at `hz`, on the thread's precise
    /// timer: one wake-up a period, at grid points that the other robots' drivers on the
    /// thread share (tokio's interval would wake twice a period beyond 64 ms, and up to a
    /// millisecond late).
    fn every(&mut self, hz: f64, ctx: &mut Context<Self>, devices: Vec<u8>) {
        let devices: Vec<u8> = devices
            .into_iter()
            .filter(|d| self.devices.contains(d))
            .collect();
        if devices.is_empty() {
            return;
        }
        let h = ctx.run_every(Duration::from_secs_f64(1.0 / hz), move |act, _| {
            act.publish(&devices)
        });
        self.timers.push(h);
    }

    /// Starts publishing when the first device comes up, stops after the last goes down:
    /// an unused simulator costs no wake-ups. Devices published at the same rate share one
    /// timer and one batch.
    fn update_timers(&mut self, ctx: &mut Context<Self>) {
        if self.up.is_empty() {
            for h in self.timers.drain(..) {
                ctx.cancel_future(h);
            }
        } else if self.timers.is_empty() {
            let mut groups: Vec<(f64, Vec<u8>)> = Vec::new();
            for (hz, devices) in [
                (self.params.base_hz, BASE.to_vec()),
                (self.params.laser_hz, vec![device::LASER, device::FULL_SCAN]),
                (self.params.ptz_hz, vec![device::PTZ]),
                (self.params.vision_hz, vec![device::VISION]),
            ] {
                match groups.iter_mut().find(|(h, _)| *h == hz) {
                    Some((_, d)) => d.extend(devices),
                    None => groups.push((hz, devices)),
                }
            }
            for (hz, devices) in groups {
                self.every(hz, ctx, devices);
            }
        }
    }

    fn apply_config(&mut self, msg: &Config) {
        let code = msg.payload[0];
        let args = &msg.payload[1..];
        if !BASE.contains(&msg.device) {
            info!(self.log, "config ignored: this device takes no configs"; "device" => player_kit::log::device(msg.device), "client" => &msg.client);
            return;
        }
        if !self.base_open() {
            warn!(self.log, "config ignored: open position, sonar, misc or gripper first"; "client" => &msg.client, "code" => player_kit::log::code(code));
            return;
        }
        self.advance();
        match (code, args.len()) {
            (codes::MOTOR_POWER, 1) => {
                info!(self.log, "motor power"; "on" => args[0] != 0, "client" => &msg.client);
                self.with_robot(|r| r.set_motor_power(args[0] != 0));
            }
            (codes::VELOCITY_MODE, 1) => {
                info!(self.log, "velocity mode"; "separate" => args[0] != 0, "client" => &msg.client);
                self.with_robot(|r| r.set_velocity_mode(args[0] != 0));
            }
            (codes::RESET_ODOMETRY, 0) => {
                info!(self.log, "odometry reset"; "client" => &msg.client);
                self.with_robot(|r| r.reset_odometry());
            }
            _ => {
                warn!(self.log, "config ignored: unknown code or wrong size"; "device" => player_kit::log::device(msg.device), "code" => format!("{:#04x}", code), "size" => msg.payload.len(), "client" => &msg.client)
            }
        }
    }
}

impl Actor for SimDriver {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let keep_moving = {
            let w = self.world.borrow();
            w.truth.is_some() || !w.world().map().events().is_empty()
        };
        if self.stepper && keep_moving {
            // Physics runs in fixed 10 ms steps, caught up lazily before every reading and
            // command; this timer only keeps the world, its events and its truth log moving
            // when nobody reads. Waking every step would cost more than the steps themselves.
            ctx.run_every(CATCH_UP, |act, _| act.advance());
        }
    }
}

impl Driver for SimDriver {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        msg: Setup,
        ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        if !self.devices.contains(&msg.device) {
            return Reply::Now(Err(DriverError::not_served(format!(
                "the simulator does not serve '{}' here",
                char::from(msg.device)
            ))));
        }
        if BASE.contains(&msg.device) && !self.base_open() {
            // Opening the microcontroller: odometry from (0, 0, 0), no command left over.
            let motors_on = self.params.motors_on;
            self.with_robot(|r| {
                r.stop();
                r.reset_odometry();
                r.set_velocity_mode(false);
                r.set_motor_power(motors_on);
            });
            info!(self.log, "simulated base opened"; "motors_on" => self.params.motors_on, "opened_by" => &*msg.client);
        }
        self.up.insert(msg.device);
        self.update_timers(ctx);
        // A first reading at once, so a client's first round need not wait a period.
        self.publish(&[msg.device]);
        Reply::Now(Ok(()))
    }

    fn shutdown(&mut self, msg: Shutdown, ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.up.remove(&msg.device);
        self.update_timers(ctx);
        if BASE.contains(&msg.device) && !self.base_open() {
            self.with_robot(|r| r.stop());
            info!(self.log, "simulated base closed; robot stopped"; "client" => &*msg.client);
        }
        Reply::Now(())
    }

    fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
        match msg.device {
            device::POSITION => {
                if let Ok(c) = PositionCommand::decode(&msg.payload) {
                    self.with_robot(|r| r.set_velocity(c.speed, c.turn_rate));
                }
            }
            device::PTZ => {
                if let Ok(z) = wire::Ptz::decode(&msg.payload) {
                    self.with_robot(|r| r.set_ptz(z.pan, z.tilt, z.zoom));
                }
            }
            device::GRIPPER => {
                if let Ok(g) = GripperCommand::decode(&msg.payload) {
                    self.with_robot(|r| r.gripper_command(g.command, g.arg));
                }
            }
            _ => {}
        }
    }

    fn config(&mut self, msg: Config, _ctx: &mut Context<Self>) {
        if !msg.payload.is_empty() {
            self.apply_config(&msg);
        }
    }

    fn stop(&mut self, msg: Stop, _ctx: &mut Context<Self>) {
        if msg.device == device::POSITION {
            self.with_robot(|r| r.stop());
            info!(self.log, "robot stopped"; "reason" => %msg.reason, "client" => &*msg.client);
        }
    }

    fn terminate(&mut self, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        // Stopped where the world last got to, without advancing it first: at shutdown
        // every robot of a world is terminated one after another, and advancing a world
        // of 10 000 robots by the time the previous termination took, each time, made a
        // shutdown take as long as the world's physics per robot.
        self.world
            .borrow_mut()
            .world_mut()
            .controls(self.index)
            .stop();
        self.up.clear();
        info!(self.log, "simulator stopped");
        Reply::Now(())
    }
}

player_kit::driver_handlers!(SimDriver);

impl Handler<MapRequest> for SimDriver {
    type Result = Option<MapOutline>;

    /// The world's solids as line segments (discs as 16-gons) and where the robot's
    /// odometry frame lies in the world: the pose that makes the current odometry reading
    /// coincide with the robot's true pose, so a viewer draws the walls where the robot's
    /// sensors see them (with odometry noise too).
    fn handle(&mut self, msg: MapRequest, _ctx: &mut Self::Context) -> Self::Result {
        self.advance();
        let shared = self.world.borrow();
        let sim = shared.world();
        let mut segments = Vec::new();
        let solids = if msg.walls { sim.map().solids() } else { &[] };
        let mut push = |a: (f64, f64), b: (f64, f64)| {
            if segments.len() < MAX_MAP_SEGMENTS {
                segments.push([a.0 / 1000.0, a.1 / 1000.0, b.0 / 1000.0, b.1 / 1000.0]);
            }
        };
        for (shape, _) in solids {
            match *shape {
                player_sim::geom::Shape::Segment(a, b) => push((a.x, a.y), (b.x, b.y)),
                player_sim::geom::Shape::Rect(lo, hi) => {
                    let c = [(lo.x, lo.y), (hi.x, lo.y), (hi.x, hi.y), (lo.x, hi.y)];
                    for k in 0..4 {
                        push(c[k], c[(k + 1) % 4]);
                    }
                }
                player_sim::geom::Shape::Circle(c, r) => {
                    let at = |k: usize| {
                        let a = k as f64 * std::f64::consts::TAU / 16.0;
                        (c.x + r * a.cos(), c.y + r * a.sin())
                    };
                    for k in 0..16 {
                        push(at(k), at(k + 1));
                    }
                }
            }
        }
        let robot = sim.robot(self.index);
        let (tx, ty, th) = robot.true_pose();
        let odom = robot.position();
        let oth = th - f64::from(odom.heading).to_radians();
        let (ox, oy) = (f64::from(odom.x), f64::from(odom.y));
        let origin_x = tx - (ox * oth.cos() - oy * oth.sin());
        let origin_y = ty - (ox * oth.sin() + oy * oth.cos());
        Some(MapOutline {
            segments,
            odometry_origin: [origin_x / 1000.0, origin_y / 1000.0, oth],
        })
    }
}

impl Handler<WorldRequest> for SimDriver {
    type Result = Option<Arc<WorldSolids>>;

    /// The world's static solids in metres (its edges, walls, boxes, pillars, objects) and
    /// its bounds, for a map driver; made once (the world does not change).
    fn handle(&mut self, _msg: WorldRequest, _ctx: &mut Self::Context) -> Self::Result {
        if self.solids.is_none() {
            let shared = self.world.borrow();
            let map = shared.world().map();
            let m = |v: player_sim::geom::Vec2| [v.x / 1000.0, v.y / 1000.0];
            let solids = map
                .solids()
                .iter()
                .take(MAX_WORLD_SOLIDS)
                .map(|(shape, _)| match *shape {
                    player_sim::geom::Shape::Segment(a, b) => Solid::Segment { a: m(a), b: m(b) },
                    player_sim::geom::Shape::Rect(lo, hi) => Solid::Rect {
                        min: m(lo),
                        max: m(hi),
                    },
                    player_sim::geom::Shape::Circle(c, r) => Solid::Circle {
                        center: m(c),
                        radius: r / 1000.0,
                    },
                })
                .collect();
            self.solids = Some(Arc::new(WorldSolids {
                min: [0.0, 0.0],
                max: [map.width() / 1000.0, map.height() / 1000.0],
                solids,
            }));
        }
        self.solids.clone()
    }
}

/// Registers the `sim` driver and what `-stage WORLD` does.
pub fn register(catalog: &mut Catalog) {
    catalog.set_stage_handler(stage_robots);
    catalog.register("sim", |ctx: DriverContext| {
        let driver = SimDriver::new(&ctx)?;
        let devices = driver.specs();
        let addr = driver.start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr)
                .with_map(addr.clone().recipient())
                .with_world(addr.clone().recipient()),
            devices,
        })
    });
}

/// The device codes a simulated robot serves when its world file does not list them.
const ALL_SIM_DEVICES: &[u8] = b"psmglzv";

fn text_value(s: &str) -> config::Value {
    config::Value::new(None, config::ValueKind::String(s.to_string()))
}

/// A copy of `d` with `params.world` and `params.robot` set (and, for a robot other than the
/// first, no `pose` override: each robot starts where the world file puts it).
fn sim_driver_for(d: &DriverSettings, world: &str, robot: &str, keep_pose: bool) -> DriverSettings {
    let mut table = d.params.clone().into_table().unwrap_or_default();
    table.insert("world".into(), text_value(world));
    table.insert("robot".into(), text_value(robot));
    if !keep_pose {
        table.remove("pose");
    }
    DriverSettings {
        command_timeout: None,
        driver: d.driver.clone(),
        devices: d.devices.clone(),
        params: config::Value::new(None, config::ValueKind::Table(table)),
    }
}

/// Expands `-stage WORLD` (the catalog's `StageHandler`): every robot of the world file,
/// each on its own port with its own registry, as Stage ran one Player per simulated robot.
///
/// - The first world robot is the configuration's first robot: it keeps its drivers (so
///   `-pp` and the like still apply) and its `sim` driver is pointed at the world and robot.
/// - Every further world robot is served by a `sim` driver with the first robot's `sim`
///   parameters (rates, motors) and its own world robot.
/// - Devices: those the world file lists for the robot, else all seven (the first robot's
///   other drivers keep the codes they serve).
/// - Ports: with `gp` (the `-gp` flag), robot `i` listens on `gp + i` (all on 0, i.e. any free
///   port, when `gp` is 0); otherwise on the port the world file gives it, else on the first
///   robot's configured port plus `i`.
///
/// Errors name the world file or a missing `sim` driver.
pub fn stage_robots(
    first: &StageRobot,
    world: &str,
    gp: Option<u16>,
) -> Result<Vec<StageRobot>, StageError> {
    let path = Path::new(world);
    let map = WorldMap::from_file(path).map_err(|e| StageError::World(e.to_string()))?;
    let world_str = path
        .canonicalize()
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string();
    let Some(sim) = first.drivers.iter().find(|d| d.driver == "sim").cloned() else {
        return Err(StageError::NoSim);
    };
    let placements = map.robots().to_vec();
    let base = gp.unwrap_or(first.port);
    let count = placements.len();
    let port_of = |i: usize, file_port: Option<u16>| -> Result<u16, StageError> {
        match (gp, file_port) {
            (None, Some(p)) => Ok(p),
            _ if base == 0 => Ok(0),
            _ => u16::try_from(usize::from(base) + i).map_err(|_| StageError::PortRange {
                robot: i,
                name: placements[i].name.clone(),
                robots: count,
                base,
            }),
        }
    };
    let codes = |list: &Option<Vec<u8>>| -> Vec<String> {
        list.as_deref()
            .unwrap_or(ALL_SIM_DEVICES)
            .iter()
            .map(|&c| char::from(c).to_string())
            .collect()
    };

    let mut robots = Vec::with_capacity(placements.len().max(1));
    // The first robot: the configured one, its sim driver pointed at the world.
    let mut r0 = first.clone();
    let name0 = placements.first().map(|p| p.name.clone());
    for d in &mut r0.drivers {
        if d.driver == "sim" {
            *d = sim_driver_for(d, &world_str, name0.as_deref().unwrap_or("robot0"), true);
        }
    }
    if let Some(p) = placements.first() {
        if p.devices.is_some() {
            let taken: Vec<String> = r0
                .drivers
                .iter()
                .filter(|d| d.driver != "sim")
                .flat_map(|d| d.devices.clone())
                .collect();
            for d in r0.drivers.iter_mut().filter(|d| d.driver == "sim") {
                d.devices = codes(&p.devices)
                    .into_iter()
                    .filter(|c| !taken.contains(c))
                    .collect();
            }
            r0.drivers.retain(|d| !d.devices.is_empty());
        }
        if placements.len() > 1 {
            r0.name = p.name.clone();
        }
        r0.port = port_of(0, p.port)?;
    } else if let Some(g) = gp {
        r0.port = g;
    }
    robots.push(r0);
    for (i, p) in placements.iter().enumerate().skip(1) {
        let mut d = sim_driver_for(&sim, &world_str, &p.name, false);
        d.devices = codes(&p.devices);
        robots.push(StageRobot {
            name: p.name.clone(),
            port: port_of(i, p.port)?,
            drivers: vec![d],
        });
    }
    Ok(robots)
}
