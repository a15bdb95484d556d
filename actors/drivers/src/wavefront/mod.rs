//! The `wavefront` driver: "go there" as the planner device `G` (Player 1.6.5's planner
//! layouts plus a state byte; docs/navigation.md, "The planner device", and the rules in
//! docs/protocol.md).
//!
//! When a client opens `G` the driver reads the map (`map`, default `M`), the pose on the
//! map (`pose`: a map-frame `p`, `P`, or a localizer's `H`), the laser (`laser`, its
//! 361-bin view) and holds the base (`base`, default `p`) for reading and writing as a
//! yielding holder: its commands pass the registry's guard as a client's do (write access,
//! the e-stop, the command watchdog), and a client's own command to the base pre-empts it.
//!
//! - a command to `G` (12 bytes: x mm, y mm, heading deg; needs write access to `G`) is the
//!   goal, replacing the last;
//! - `x G w` answers the route's waypoints, `x G e <u8>` enables or disables motion, `x G
//!   c` cancels (the base stops);
//! - each reading of the base is one step of the navigator ([`navigator`]): its command
//!   goes to the base, and `G` is published (43 bytes) with the state;
//! - the e-stop latched: state 6, the goal dropped, goals refused (by the guard) until it
//!   is released; a client's own command to the base: state 7 until the next goal; the
//!   writer of `G` leaving: the goal cancelled; a goal off the map or in an obstacle:
//!   state 5 and a notice (kind `c`) to the client that sent it, saying why.
//!
//! The map is the map device's occupancy grid, handed over inside the server by the map
//! driver ([`DeviceSource::grid`], as `amcl` gets it), fetched again whenever the map's id
//! in `M` changes.

pub mod inputs;
pub mod navigator;
pub mod params;

use actix::prelude::*;
use bytes::Bytes;
use inputs::PoseReading;
use navigator::{Inputs, Navigator, Order};
use params::{Checked, WavefrontParams};
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{
    Command, Config, DataRecipient, DeviceData, DeviceSpec, DriverError, DriverHandle, Publisher,
    SessionId, Setup, Shutdown, Stop, StopReason, Timestamp,
};
use player_kit::intake::{Intake, Readings};
use player_kit::link::LogThrottle;
use player_kit::plain::{Driver, Reply};
use player_kit::source::{DeviceSource, DeviceWriter, Hold, HolderEvent};
use player_kit::thread::{start_on_own_thread, OnOwnThread, OwnThread};
use player_nav::control::Scan;
use player_nav::pose::Pose;
use player_proto::data::PositionCommand;
use player_proto::device;
use player_proto::nav::{code, Goal, MapInfo, Waypoints};
use slog::{debug, info, warn, Logger};
use std::sync::Arc;

/// The most base readings waiting for the driver, the one being stepped on included: when
/// a step takes longer than the base's period (a replan over a building's map with a short
/// `replan_period`), the driver steps on the newest reading there is instead of falling
/// behind without end and commanding the base from where the robot was seconds ago
/// ([`player_kit::intake`]).
pub const MOST_BASE_READINGS_WAITING: usize = 2;

/// The `wavefront` driver's actor.
pub struct WavefrontDriver {
    p: Checked,
    nav: Navigator,
    source: DeviceSource,
    publisher: Publisher,
    writer: Option<DeviceWriter>,
    up: bool,
    /// The id of the map whose grid is being fetched.
    fetching: Option<u32>,
    scan: Option<Scan>,
    pose: Option<Pose>,
    /// Where the pose device's frame lies on the map (moved when odometry restarts).
    frame: crate::odom::OdomFrame,
    speed: f64,
    /// The last base reading stepped on (its sequence number and time).
    last_base: Option<(u64, Timestamp)>,
    /// Who sent the goal (told if it fails).
    goal_from: Option<SessionId>,
    log: Logger,
    /// The thread the driver runs on (a plan over a large map, and the costmap with the
    /// laser's obstacles, would hold up the registry's thread).
    own_thread: OwnThread,
    /// Where its readings come in (made at the first setup; kept to stop reading), and the
    /// skipped readings' log.
    intake: Option<Arc<Intake>>,
    skips: LogThrottle,
}

impl WavefrontDriver {
    fn new(ctx: &DriverContext) -> Result<WavefrontDriver, DriverError> {
        if ctx.devices != [device::PLANNER] {
            return Err(DriverError::params(
                "driver 'wavefront' serves exactly one device, \"G\"",
            ));
        }
        let params: WavefrontParams = ctx.params()?;
        let p = params.check()?;
        Ok(WavefrontDriver {
            nav: Navigator::new(p.nav),
            p,
            source: ctx.source.clone(),
            publisher: ctx.publisher(),
            writer: None,
            up: false,
            fetching: None,
            scan: None,
            pose: None,
            frame: crate::odom::OdomFrame::new({
                let o = p.pose_origin;
                Pose::new(o[0], o[1], o[2])
            }),
            speed: 0.0,
            last_base: None,
            goal_from: None,
            log: ctx.logger.clone(),
            own_thread: OwnThread::default(),
            intake: None,
            skips: LogThrottle::default(),
        })
    }

    /// Publishes the `G` reading, once there is a pose to put in it (the navigator keeps
    /// the last one between sessions, so only a first session waits for its base).
    fn publish(&mut self) {
        if !self.up {
            return;
        }
        if let Some(data) = self.nav.data() {
            self.publisher
                .publish(device::PLANNER, Bytes::from(data.encode()));
        }
    }

    /// Sends what the navigator ordered to the base.
    fn order(&mut self, order: Order) {
        let command = match order {
            Order::Silent => return,
            Order::Stop => PositionCommand::default(),
            Order::Drive(c) => PositionCommand {
                speed: c.speed.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16,
                turn_rate: c.turn.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16,
            },
        };
        if let Some(w) = &self.writer {
            if let Err(e) = w.command(Bytes::from(command.encode())) {
                warn!(self.log, "base command not sent"; "error" => %e);
            }
        }
    }

    /// Tells the goal's sender why it failed, if it did.
    fn tell_failure(&mut self) {
        if let Some(why) = self.nav.take_error() {
            info!(self.log, "goal failed"; "reason" => &why);
            if let Some(s) = self.goal_from {
                self.source
                    .tell(s, device::PLANNER, format!("goal refused: {why}"));
            }
        }
    }

    /// One reading of a device the driver reads.
    fn reading(&mut self, d: &DeviceData, ctx: &mut Context<Self>) -> bool {
        let devs = self.p.devices;
        let mut base_step = false;
        if d.device == devs.map {
            if let Ok(info) = MapInfo::decode(&d.data) {
                self.map_info(info, ctx);
            }
        }
        if d.device == devs.laser {
            if let Some(r) = inputs::laser_of(&d.data) {
                let m = self.p.laser_pose;
                self.scan = Some(navigator::scan_of_view(&r, Pose::new(m[0], m[1], m[2])));
            }
        }
        if d.device == devs.pose {
            match inputs::pose_of(&d.data) {
                Some(PoseReading::Odometry(raw)) => {
                    // A map-frame `p` (a localizer's) may jump: only a session's start is
                    // checked.
                    let (pose, moved) = self.frame.pose(raw, |_| false);
                    if moved {
                        info!(self.log, "odometry started again at zero: the robot is taken to be where the last session left it";
                            "x_mm" => (pose.x * 1000.0).round(), "y_mm" => (pose.y * 1000.0).round(),
                            "a_deg" => pose.theta.to_degrees().round());
                    }
                    self.pose = Some(pose);
                }
                Some(PoseReading::Localized(pose)) => {
                    let o = self.p.pose_origin;
                    self.pose = Some(Pose::new(o[0], o[1], o[2]).compose(&pose));
                }
                None => {}
            }
        }
        if d.device == devs.base {
            let stamp = (d.seq, d.timestamp);
            if self.last_base != Some(stamp) {
                self.last_base = Some(stamp);
                if let Some(v) = inputs::speed_of(&d.data) {
                    self.speed = v;
                }
                base_step = true;
            }
        }
        base_step
    }

    /// A step of the navigator on the newest inputs.
    fn step(&mut self) {
        let Some(pose) = self.pose else {
            return;
        };
        let time = self
            .last_base
            .map_or(0.0, |(_, t)| f64::from(t.sec) + f64::from(t.usec) / 1e6);
        let order = self.nav.step(Inputs {
            pose,
            speed: self.speed,
            scan: self.scan.as_ref(),
            time,
        });
        self.order(order);
        self.tell_failure();
        self.publish();
    }

    /// The map device's reading: a map other than the navigator's is fetched as the map
    /// driver's grid and given to the navigator (its costmap built).
    fn map_info(&mut self, info: MapInfo, ctx: &mut Context<Self>) {
        if self.nav.map_id() == Some(info.map_id) || self.fetching == Some(info.map_id) {
            return;
        }
        self.fetching = Some(info.map_id);
        let grid = self.source.grid(self.p.devices.map);
        ctx.spawn(grid.into_actor(self).map(|g, act, _| {
            act.fetching = None;
            let Some(g) = g else {
                warn!(act.log, "map not loaded: the map device gives no occupancy grid";
                    "device" => char::from(act.p.devices.map).to_string());
                return;
            };
            if act.nav.map_id() == Some(g.map_id) {
                return;
            }
            let built = inputs::map_of(&g).and_then(|m| act.nav.set_map(&m, g.map_id));
            match built {
                Ok(()) => info!(act.log, "map loaded"; "map_id" => g.map_id,
                    "width" => g.width, "height" => g.height),
                Err(e) => warn!(act.log, "map not usable"; "error" => e),
            }
            act.tell_failure();
        }));
    }

    /// Starts reading and holding what the driver needs.
    fn hold_all(
        &mut self,
        ctx: &mut Context<Self>,
    ) -> impl std::future::Future<Output = Result<Option<DeviceWriter>, DriverError>> + 'static
    {
        let me = ctx.address();
        let devs = self.p.devices;
        let intake = self
            .intake
            .get_or_insert_with(|| Intake::new(me.clone().recipient(), MOST_BASE_READINGS_WAITING));
        intake.count(devs.base);
        let to = DataRecipient::sink(intake.clone());
        let hold = Hold::read_write(to.clone())
            .yielding()
            .events(me.recipient());
        let base = self.source.hold(devs.base, hold);
        let mut reads = Vec::new();
        for code in [devs.map, devs.laser, devs.pose] {
            if code != devs.base && !reads.iter().any(|&(c, _)| c == code) {
                reads.push((code, self.source.read(code, to.clone(), true)));
            }
        }
        async move {
            let held = base.await.map_err(DriverError::from)?;
            for (_, r) in reads {
                r.await.map_err(DriverError::from)?;
            }
            Ok(held.writer)
        }
    }

    fn release_all(&mut self) {
        let devs = self.p.devices;
        self.writer = None;
        self.source.release(devs.base);
        // Reading stops by holder: the recipient only has to be the one reading started
        // with.
        let Some(to) = self.intake.clone().map(|i| DataRecipient::sink(i)) else {
            return;
        };
        for code in [devs.map, devs.laser, devs.pose] {
            if code != devs.base {
                let f = self.source.read(code, to.clone(), false);
                actix::spawn(async move {
                    let _ = f.await;
                });
            }
        }
    }
}

impl Actor for WavefrontDriver {
    type Context = Context<Self>;
}

impl Driver for WavefrontDriver {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        msg: Setup,
        ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        if msg.device != device::PLANNER {
            return Reply::Now(Err(DriverError::not_served(
                "the wavefront driver serves only 'G'",
            )));
        }
        Reply::later(self.hold_all(ctx).into_actor(self).map(move |r, act, _| {
            let writer = r?;
            if writer.is_none() {
                return Err(DriverError::not_served(format!(
                    "wavefront: the base '{}' takes no commands",
                    char::from(act.p.devices.base)
                )));
            }
            act.writer = writer;
            act.up = true;
            info!(act.log, "planner up"; "opened_by" => &*msg.client);
            act.publish();
            Ok(())
        }))
    }

    /// The last client left `G`: the goal cancelled, the base stopped and let go (its last
    /// reading is forgotten by the shared handler).
    fn shutdown(&mut self, msg: Shutdown, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        if msg.device == device::PLANNER && self.up {
            self.nav.cancel();
            let order = self.nav.halt();
            self.order(order);
            self.up = false;
            // The next session's pose comes from its own readings.
            self.pose = None;
            self.scan = None;
            self.frame.reopened();
            self.release_all();
        }
        Reply::Now(())
    }

    /// A goal (the guard has checked the sender's write access and the e-stop).
    fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
        let Ok(g) = Goal::decode(&msg.payload) else {
            return;
        };
        let goal = Pose::new(
            f64::from(g.x) / 1000.0,
            f64::from(g.y) / 1000.0,
            f64::from(g.a).to_radians(),
        );
        info!(self.log, "goal"; "x_mm" => g.x, "y_mm" => g.y, "a_deg" => g.a);
        self.goal_from = Some(msg.session);
        self.nav.set_goal(goal);
        self.tell_failure();
        self.publish();
    }

    /// `x G w` (the waypoints, answered), `x G e <u8>` (enable), `x G c` (cancel).
    fn config(&mut self, msg: Config, _ctx: &mut Context<Self>) {
        match msg.payload.first().copied() {
            Some(code::WAYPOINTS) => {
                let body = Waypoints(self.nav.waypoints()).encode();
                match body.map(|b| msg.answer.send_one(b)) {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => warn!(self.log, "waypoints not answered"; "error" => %e),
                    Err(e) => warn!(self.log, "waypoints not encoded"; "error" => %e),
                }
            }
            Some(code::ENABLE) => {
                let on = msg.payload.get(1).is_some_and(|&b| b != 0);
                self.nav.enable(on);
                let order = self.nav.halt();
                self.order(order);
                self.publish();
            }
            Some(code::CANCEL) => {
                info!(self.log, "goal cancelled"; "client" => &msg.client);
                self.nav.cancel();
                let order = self.nav.halt();
                self.order(order);
                self.publish();
            }
            other => {
                warn!(self.log, "config ignored: the planner takes 'w', 'e' and 'c'";
                    "code" => player_kit::log::code(other.unwrap_or(0)), "client" => &msg.client);
            }
        }
    }

    /// The e-stop (state 6), or the goal's writer leaving (cancelled).
    fn stop(&mut self, msg: Stop, _ctx: &mut Context<Self>) {
        if msg.device != device::PLANNER {
            return;
        }
        match msg.reason {
            StopReason::EmergencyStop => self.nav.estop(true),
            StopReason::WriterLeft | StopReason::Watchdog => {
                self.nav.cancel();
                let order = self.nav.halt();
                self.order(order);
            }
        }
        self.publish();
    }
}

player_kit::driver_handlers!(WavefrontDriver);

impl Handler<HolderEvent> for WavefrontDriver {
    type Result = ();

    fn handle(&mut self, msg: HolderEvent, _ctx: &mut Self::Context) {
        match msg {
            HolderEvent::EStop { latched, by } => {
                info!(self.log, "e-stop"; "latched" => latched, "by" => by);
                self.nav.estop(latched);
            }
            HolderEvent::Preempted { by, .. } => {
                info!(self.log, "navigation pre-empted"; "by" => by);
                self.nav.preempt();
            }
            HolderEvent::Watchdog { .. } => debug!(self.log, "the base's watchdog stopped it"),
            HolderEvent::Refused { reason, .. } => {
                debug!(self.log, "base command refused"; "reason" => reason)
            }
        }
        self.publish();
    }
}

impl Handler<Readings> for WavefrontDriver {
    type Result = ();

    /// A reading or a batch (the base's `p` and `P` of one instant): every reading first,
    /// then one step if the base's reading was among them.
    fn handle(&mut self, msg: Readings, ctx: &mut Self::Context) {
        if self.up {
            let mut step = false;
            for d in msg.data.iter() {
                step |= self.reading(d, ctx);
            }
            if step {
                self.step();
            }
        }
        if let Some(intake) = &self.intake {
            let skipped = intake.finished(msg.counted);
            if skipped > 0 && self.skips.hit() {
                warn!(self.log, "the planner is behind the base's readings: readings skipped (a replan_period shorter than a plan takes?)";
                    "skipped" => skipped, "most_waiting" => intake.most());
            }
        }
    }
}

impl OnOwnThread for WavefrontDriver {
    fn own_thread(&mut self) -> &mut OwnThread {
        &mut self.own_thread
    }
}

/// Registers the `wavefront` driver (on a thread of its own).
pub fn register(catalog: &mut Catalog) {
    catalog.register("wavefront", |ctx: DriverContext| {
        let driver = WavefrontDriver::new(&ctx)?;
        let addr = start_on_own_thread("wavefront", driver);
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices: vec![DeviceSpec::read_write(device::PLANNER, Goal::SIZE)],
        })
    });
}

#[cfg(test)]
mod tests;
