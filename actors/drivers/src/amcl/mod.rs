//! The `amcl` driver: where the robot is on a map, served as the localize device `H`
//! (Player 1.6.5's layout, byte for byte) and optionally as a map-frame `p` for the
//! clients of 2000 (docs/navigation.md, "How to localize a robot").
//!
//! It reads three devices of its robot: the base's odometry (`P`, full precision, by
//! default), a laser (`L` where the robot serves it, else `l`) and the map (`M`: its cells
//! come whole from the map driver, [`DeviceSource::grid`]), and runs `player_nav`'s
//! particle filter over them ([`player_nav::amcl`]): KLD sampling, the likelihood field or
//! beam model, recovery; the sensor model sees only the faces of solids ([`surfaces`]).
//! Nothing in it reads a clock: each scan is paired with the odometry
//! of its instant (interpolated between the readings before and after it, by the readings'
//! own timestamps, in twentieths of their interval; a scan waits for the odometry after
//! it), so the same readings and seed
//! give the same `H`, byte for byte, at any speed the filter keeps up with (a slower filter
//! skips scans past the few its intake lets wait: [`MOST_SCANS_WAITING`]). `H` is published after every scan (the
//! filter itself updates only when the robot has moved `update_min`); its pending time is
//! the scan's on the base's clock (ms since the server started, as `p`'s time field).
//!
//! Configs of `H`: `x H s` sets the pose, `x H g` is answered with the particles (`y`
//! packets of kind `H`, at most 100 particles each, with their index; at most 80 packets,
//! 8000 particles, what one answer may carry), `x H G` starts global localization.
//!
//! With `p` among its devices (`devices = ["H", "p"]`, the base's own position then served
//! as `"p as O"`), it serves the robot's pose on the map in `p`'s 21-byte layout: the best
//! hypothesis carried forward by odometry at every odometry reading. Commands to this `p`
//! go to the base (held with write access, through the registry's guard, as a client's
//! command goes), configs are relayed to it unchanged (their answers too). An odometry
//! reset on the base shows as a jump in its readings: the driver takes a jump of more than
//! 0.5 m plus 3 m/s over the readings' interval as a new origin, not as motion.

mod params;
#[cfg(test)]
mod tests;
pub mod wire;

use crate::odom::OdomFrame;
use actix::prelude::*;
use bytes::Bytes;
use player_kit::answer::MAX_ANSWER_BYTES;
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{
    Command, Config, DataRecipient, DeviceData, DeviceError, DeviceSpec, DriverError, DriverHandle,
    GridMap, Publisher, Setup, Shutdown, Stop, Timestamp,
};
use player_kit::link::LogThrottle;
use player_kit::plain::{Driver, Reply};
use player_kit::source::{DeviceSource, DeviceWriter, Hold};
use player_kit::thread::{start_on_own_thread, OnOwnThread, OwnThread};
use player_nav::amcl::{Filter, MapModel};
use player_nav::map::Map;
use player_nav::pose::Pose;
use player_nav::scan::Scan;
use player_proto::data::PositionCommand;
use player_proto::device;
use player_proto::nav::{code, SetPose, MAX_PARTICLES_PER_ANSWER};
use slog::{info, warn, Logger};
use std::sync::Arc;

pub use params::{AmclParams, InitialPose, Settings, MAX_BEAMS, MAX_PARTICLES};
use player_kit::intake::{Intake, Readings};

/// The most scans waiting for the filter, the one being weighed included: 0.4 s of a
/// 10 Hz laser, room for a slow update or two without a skip (so a replay the filter
/// follows still gives the same `H`); a scan past that is skipped
/// ([`player_kit::intake`]), as Nav2's `amcl` drops the scans its filter cannot take.
pub const MOST_SCANS_WAITING: usize = 4;

/// The localize device.
const H: u8 = device::LOCALIZE;
/// The map-frame position device.
const P: u8 = device::POSITION;

/// Interpolation between odometry readings goes in steps of `1 / STEPS` of their
/// interval.
const STEPS: f64 = 20.0;

/// An odometry jump above this (m), plus [`JUMP_SPEED`] times the readings' interval, is a
/// new origin (a reset), not motion.
const JUMP_M: f64 = 0.5;
/// See [`JUMP_M`], m/s.
const JUMP_SPEED: f64 = 3.0;

/// The most `y` packets one answer to `x H g` carries (each 100 particles, 1633 bytes).
const MAX_PARTICLE_PACKETS: usize = MAX_ANSWER_BYTES / (33 + 16 * MAX_PARTICLES_PER_ANSWER);

/// An odometry reading with when it was taken.
#[derive(Debug, Clone, Copy)]
struct Timed {
    /// In the driver's odometry frame (resets taken out).
    odom: wire::Odom,
    at: Timestamp,
}

/// Microseconds since the epoch.
fn micros(t: Timestamp) -> i64 {
    i64::from(t.sec) * 1_000_000 + i64::from(t.usec)
}

/// What a setup got: the map's id and, when the filter needs it, its model; the laser
/// held; the base's writer.
type Inputs = (u32, Option<MapModel>, u8, Option<DeviceWriter>);

/// The `amcl` driver's actor.
pub struct AmclDriver {
    settings: Settings,
    serves_p: bool,
    source: DeviceSource,
    publisher: Publisher,
    log: Logger,
    /// The devices set up (own codes).
    up: Vec<u8>,
    /// The laser held.
    laser: Option<u8>,
    /// The map the filter runs on, and one being fetched.
    map_id: Option<u32>,
    fetching: Option<u32>,
    filter: Option<Filter>,
    last: Option<Timed>,
    prev: Option<Timed>,
    /// Raw odometry to the driver's odometry frame (moves at a reset, and follows the
    /// base's odometry restarting at zero from one session to the next).
    frame: OdomFrame,
    /// A scan waiting for the odometry after it.
    pending: Option<(Scan, Timestamp)>,
    /// When the last scan processed was taken: its timestamp, and its time on the base's
    /// clock (ms since the server started).
    scan_time: Option<(Timestamp, u32)>,
    writer: Option<DeviceWriter>,
    compass: u16,
    /// The thread the driver runs on (a particle filter's update, and more so the search
    /// of global localization, would hold up the registry's thread).
    own_thread: OwnThread,
    /// Where its readings come in (made at the first setup), and the skipped scans' log.
    intake: Option<Arc<Intake>>,
    skips: LogThrottle,
}

impl AmclDriver {
    fn new(ctx: &DriverContext) -> Result<AmclDriver, DriverError> {
        let ok = ctx.devices.contains(&H)
            && ctx.devices.iter().all(|&d| d == H || d == P)
            && ctx.devices.len() <= 2;
        if !ok {
            return Err(DriverError::params(
                "driver 'amcl' serves \"H\" and optionally \"p\" (the map-frame position)",
            ));
        }
        let params: AmclParams = ctx.params()?;
        let settings = params.check()?;
        Ok(AmclDriver {
            settings,
            serves_p: ctx.devices.contains(&P),
            source: ctx.source.clone(),
            publisher: ctx.publisher(),
            log: ctx.logger.clone(),
            own_thread: OwnThread::default(),
            up: Vec::new(),
            laser: None,
            map_id: None,
            fetching: None,
            filter: None,
            last: None,
            prev: None,
            frame: OdomFrame::new(Pose::default()),
            pending: None,
            scan_time: None,
            writer: None,
            compass: 0,
            intake: None,
            skips: LogThrottle::default(),
        })
    }

    /// The intake its subscriptions deliver to.
    fn intake(&mut self, ctx: &Context<Self>) -> Arc<Intake> {
        self.intake
            .get_or_insert_with(|| Intake::new(ctx.address().recipient(), MOST_SCANS_WAITING))
            .clone()
    }

    /// Starts a filter on `model` as the configuration says.
    fn start_filter(&mut self, model: MapModel, map_id: u32) {
        let s = &self.settings;
        self.filter = Some(Filter::new(
            Arc::new(model),
            s.filter.clone(),
            s.seed,
            s.init,
        ));
        self.map_id = Some(map_id);
        self.pending = None;
        info!(self.log, "filter started"; "map_id" => map_id, "seed" => s.seed,
            "particles" => s.filter.max_particles);
    }

    /// The odometry at `at` and its time field (ms since the server started): interpolated
    /// between the readings around it, else the newest.
    fn odom_at(&self, at: Timestamp) -> Option<(Pose, u32)> {
        let last = self.last.as_ref()?;
        match &self.prev {
            Some(prev) if prev.at < at && at < last.at => {
                let t = (micros(at) - micros(prev.at)) as f64
                    / (micros(last.at) - micros(prev.at)) as f64;
                // In steps of a twentieth: a replay at another speed, whose timestamps
                // round otherwise, pairs the scan with the same odometry, bit for bit.
                let t = (t * STEPS).round() / STEPS;
                let span = f64::from(last.odom.time.wrapping_sub(prev.odom.time));
                let time = prev.odom.time.wrapping_add((span * t).round() as u32);
                Some((wire::between(&prev.odom.pose, &last.odom.pose, t), time))
            }
            _ => Some((last.odom.pose, last.odom.time)),
        }
    }

    /// Feeds one scan to the filter and publishes `H`.
    fn process(&mut self, scan: Scan, at: Timestamp) {
        let Some((odom, time)) = self.odom_at(at) else {
            return;
        };
        let Some(f) = self.filter.as_mut() else {
            return;
        };
        f.update(odom, &scan);
        self.scan_time = Some((at, time));
        self.publish_h();
    }

    /// Publishes `H`: its pending time is the last scan's on the base's clock (the
    /// odometry's time field, ms since the server started, interpolated as the pose is),
    /// so a replay of the same readings gives the same bytes; the reading is stamped with
    /// that scan's timestamp.
    fn publish_h(&mut self) {
        let Some(f) = &self.filter else {
            return;
        };
        if !self.up.contains(&H) {
            return;
        }
        let (at, ms) = match self.scan_time {
            Some(t) => t,
            // Nothing processed yet (a reading for the client that opens H).
            None => (self.last.map_or_else(Timestamp::now, |l| l.at), 0),
        };
        let loc = wire::localize(
            f.hypotheses(),
            u16::from(self.pending.is_some()),
            (ms / 1000, (ms % 1000) * 1000),
        );
        if let Ok(b) = loc.encode() {
            self.publisher.publish_at(H, Bytes::from(b), at);
        }
    }

    fn on_odometry(&mut self, d: &DeviceData) {
        let Some(mut o) = wire::odometry(&d.data) else {
            warn!(self.log, "odometry reading of an unknown layout ignored";
                "device" => player_kit::log::code(d.device), "bytes" => d.data.len());
            return;
        };
        let raw = o.pose;
        let dt = self.last.map_or(0.0, |last| {
            f64::from(o.time.wrapping_sub(last.odom.time) as i32).max(0.0) / 1000.0
        });
        let (pose, moved) = self
            .frame
            .pose(raw, |last| last.distance(&raw) > JUMP_M + JUMP_SPEED * dt);
        if moved {
            info!(self.log, "odometry jumped or started again at zero: taken as a new origin, the robot where it was";
                "to_mm" => format!("{:.0},{:.0}", raw.x * 1000.0, raw.y * 1000.0));
        }
        o.pose = pose;
        if let Some(c) = o.compass {
            self.compass = c;
        }
        self.prev = self.last.take();
        self.last = Some(Timed {
            odom: o,
            at: d.timestamp,
        });
        if self
            .pending
            .as_ref()
            .is_some_and(|(_, t)| *t <= d.timestamp)
        {
            if let Some((scan, at)) = self.pending.take() {
                self.process(scan, at);
            }
        }
        if self.up.contains(&P) {
            if let Some(pose) = self.filter.as_ref().and_then(|f| f.pose_at(&o.pose)) {
                let pos = wire::map_position(&pose, &o, self.compass);
                self.publisher
                    .publish_at(P, Bytes::from(pos.encode()), d.timestamp);
            }
        }
    }

    fn on_scan(&mut self, d: &DeviceData) {
        let s = &self.settings;
        let scan = if d.device == device::FULL_SCAN {
            wire::full_scan(&d.data, s.laser_max, s.laser_pose)
        } else {
            wire::laser(&d.data, s.laser_max, s.laser_pose)
        };
        let Some(scan) = scan else {
            warn!(self.log, "laser reading of an unknown layout ignored";
                "device" => player_kit::log::code(d.device), "bytes" => d.data.len());
            return;
        };
        if self.last.as_ref().is_some_and(|l| l.at >= d.timestamp) {
            self.process(scan, d.timestamp);
            return;
        }
        // No odometry came after the waiting scan: it goes with the newest there is.
        if let Some((old, at)) = self.pending.take() {
            self.process(old, at);
        }
        self.pending = Some((scan, d.timestamp));
    }

    fn on_reading(&mut self, d: &DeviceData, ctx: &mut Context<Self>) {
        let s = &self.settings;
        if d.device == s.odometry {
            self.on_odometry(d);
        } else if Some(d.device) == self.laser {
            self.on_scan(d);
        } else if d.device == s.map {
            self.on_map(d, ctx);
        } else if d.device == s.base {
            if let Some(c) = wire::odometry(&d.data).and_then(|o| o.compass) {
                self.compass = c;
            }
        }
    }

    /// An `M` reading: a map other than the filter's is fetched and the filter restarted
    /// on it.
    fn on_map(&mut self, d: &DeviceData, ctx: &mut Context<Self>) {
        let Ok(info) = player_proto::nav::MapInfo::decode(&d.data) else {
            return;
        };
        if self.map_id.is_none()
            || self.map_id == Some(info.map_id)
            || self.fetching == Some(info.map_id)
        {
            return;
        }
        self.fetching = Some(info.map_id);
        let grid = self.source.grid(self.settings.map);
        ctx.spawn(
            async move {
                let g = grid
                    .await
                    .ok_or_else(|| "the map driver gave no grid".to_string())?;
                model_of(g).await.map_err(|e| e.text)
            }
            .into_actor(self)
            .map(|r, act, _| {
                act.fetching = None;
                match r {
                    Ok((id, model)) if act.map_id.is_some() => act.start_filter(model, id),
                    Ok(_) => {}
                    Err(e) => warn!(act.log, "new map not taken"; "error" => e),
                }
            }),
        );
    }

    /// Lets go of every device read or written.
    fn release_all(&mut self) {
        let s = &self.settings;
        for d in [Some(s.map), Some(s.odometry), self.laser.take()]
            .into_iter()
            .flatten()
        {
            self.source.release(d);
        }
        if self.writer.take().is_some() {
            self.source.release(s.base);
        }
        // The filter and its map stay: the next session carries on from the robot's pose
        // (a client that wants the configured start again sends `x H s`).
        self.frame.reopened();
        (self.last, self.prev, self.pending, self.scan_time) = (None, None, None, None);
    }
}

/// The cells a laser can see: an occupied cell with no free cell among its eight
/// neighbours (inside a solid) becomes unknown. A rasterised world fills its solids, and
/// the likelihood field scores a beam's end by its distance to the nearest occupied cell:
/// an end anywhere inside a thick wall would fit as well as one on its face, so a filter
/// seeing a far wall ahead ran 15% ahead of the robot along the maze's corridor (measured,
/// tests/amcl.rs). Free cells, where poses are drawn, are unchanged.
pub fn surfaces(cells: &[i8], width: usize, height: usize) -> Vec<i8> {
    let mut out = cells.to_vec();
    for row in 0..height {
        for col in 0..width {
            let i = row * width + col;
            if cells[i] <= 0 {
                continue;
            }
            let free_beside = (row.saturating_sub(1)..=(row + 1).min(height - 1)).any(|r| {
                (col.saturating_sub(1)..=(col + 1).min(width - 1)).any(|c| cells[r * width + c] < 0)
            });
            if !free_beside {
                out[i] = 0;
            }
        }
    }
    out
}

/// The filter's map model of a grid (its distance transform made on the blocking pool).
async fn model_of(g: Arc<GridMap>) -> Result<(u32, MapModel), DriverError> {
    let (w, h) = (g.width as usize, g.height as usize);
    if g.cells.len() != w * h {
        return Err(DriverError::other(
            "amcl: the map's cells are not width x height",
        ));
    }
    let map = Map::with_cells(
        w,
        h,
        g.resolution,
        Pose::new(g.origin[0], g.origin[1], g.origin[2]),
        surfaces(&g.cells, w, h),
    )
    .map_err(|e| DriverError::other(format!("amcl: the map is not usable: {e}")))?;
    let model = tokio::task::spawn_blocking(move || MapModel::new(map))
        .await
        .map_err(|e| DriverError::other(format!("amcl: the map's model was not made: {e}")))?;
    Ok((g.map_id, model))
}

/// Holds the map, the laser, the odometry and (`base`) the base with write access; fetches
/// the map's grid and, unless it is `current`, makes its model.
async fn hold_inputs(
    source: DeviceSource,
    s: Settings,
    me: DataRecipient,
    current: Option<u32>,
    base: bool,
) -> Result<Inputs, DriverError> {
    let read = |d: u8| source.hold(d, Hold::read(me.clone()));
    let named = |what: &'static str, d: u8| {
        move |e: DeviceError| {
            DriverError::new(
                DriverError::from(e.clone()).kind,
                format!("amcl reads the {what} '{}': {e}", d as char),
            )
        }
    };
    read(s.map).await.map_err(named("map", s.map))?;
    let g = source.grid(s.map).await.ok_or_else(|| {
        DriverError::not_served(format!(
            "amcl: device '{}' gives no occupancy grid (serve it with driver \"mapfile\")",
            s.map as char
        ))
    })?;
    let (id, model) = if current == Some(g.map_id) {
        (g.map_id, None)
    } else {
        let (id, m) = model_of(g).await?;
        (id, Some(m))
    };
    let laser = match s.laser {
        Some(l) => {
            read(l).await.map_err(named("laser", l))?;
            l
        }
        None => match read(device::FULL_SCAN).await {
            Ok(_) => device::FULL_SCAN,
            Err(DeviceError::Unknown(_)) => {
                read(device::LASER)
                    .await
                    .map_err(named("laser", device::LASER))?;
                device::LASER
            }
            Err(e) => return Err(named("laser", device::FULL_SCAN)(e)),
        },
    };
    read(s.odometry)
        .await
        .map_err(named("odometry", s.odometry))?;
    let writer = if base {
        let held = source
            .hold(s.base, Hold::read_write(me.clone()))
            .await
            .map_err(named("base", s.base))?;
        if held.writer.is_none() {
            return Err(DriverError::params(format!(
                "amcl: the base '{}' takes no commands",
                s.base as char
            )));
        }
        held.writer
    } else {
        None
    };
    Ok((id, model, laser, writer))
}

impl Actor for AmclDriver {
    type Context = Context<Self>;
}

impl Driver for AmclDriver {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        msg: Setup,
        ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        let device = msg.device;
        if !(device == H || (device == P && self.serves_p)) {
            return Reply::Now(Err(DriverError::not_served(
                "the amcl driver serves only 'H' and its map-frame 'p'",
            )));
        }
        let inputs = hold_inputs(
            self.source.clone(),
            self.settings.clone(),
            DataRecipient::sink(self.intake(ctx)),
            self.map_id.filter(|_| self.filter.is_some()),
            device == P,
        );
        Reply::later(inputs.into_actor(self).map(move |r, act, _| {
            let (id, model, laser, writer) = r?;
            act.laser = Some(laser);
            if let Some(intake) = &act.intake {
                intake.count(laser);
            }
            if let Some(m) = model {
                act.start_filter(m, id);
            }
            if device == P {
                act.writer = writer;
            }
            if !act.up.contains(&device) {
                act.up.push(device);
            }
            info!(act.log, "device up"; "device" => player_kit::log::code(device),
                "laser" => player_kit::log::code(laser), "opened_by" => &*msg.client);
            act.publish_h();
            Ok(())
        }))
    }

    /// The last client left `msg.device` (its last reading is forgotten by the shared
    /// handler): the base let go with `p`, every input with the last device.
    fn shutdown(&mut self, msg: Shutdown, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.up.retain(|&d| d != msg.device);
        if msg.device == P && self.writer.take().is_some() {
            self.source.release(self.settings.base);
        }
        if self.up.is_empty() {
            self.release_all();
        }
        Reply::Now(())
    }

    fn config(&mut self, msg: Config, ctx: &mut Context<Self>) {
        if msg.device == P {
            // The base's own config: relayed unchanged, its answer to the client.
            let relay = self
                .source
                .config(self.settings.base, msg.payload, msg.answer);
            ctx.spawn(relay.into_actor(self).map(|r, act, _| {
                if let Err(e) = r {
                    warn!(act.log, "config to the base not relayed"; "error" => %e);
                }
            }));
            return;
        }
        let Some(f) = self.filter.as_mut() else {
            warn!(self.log, "config ignored: the localizer is not set up"; "client" => &msg.client);
            return;
        };
        match msg.payload.first().copied() {
            Some(code::SET_POSE) => match SetPose::decode(&msg.payload) {
                Ok(s) => {
                    let (mean, cov) = wire::set_pose(&s);
                    f.set_pose(mean, cov);
                    info!(self.log, "pose set"; "x_m" => mean.x, "y_m" => mean.y,
                        "heading_deg" => mean.theta.to_degrees(), "client" => &msg.client);
                    self.publish_h();
                }
                Err(e) => {
                    warn!(self.log, "set pose ignored"; "error" => %e, "client" => &msg.client)
                }
            },
            Some(code::PARTICLES) => {
                let bodies = wire::particles(f.poses(), f.weights(), MAX_PARTICLE_PACKETS);
                if let Err(e) = msg.answer.send(bodies) {
                    warn!(self.log, "particles not answered"; "error" => %e, "client" => &msg.client);
                }
            }
            Some(code::GLOBAL) => {
                f.global();
                info!(self.log, "global localization started"; "client" => &msg.client);
                self.publish_h();
            }
            c => {
                warn!(self.log, "config ignored: H takes 's', 'g' and 'G'";
                    "code" => player_kit::log::code(c.unwrap_or(0)), "client" => &msg.client)
            }
        }
    }

    /// A command to the map-frame `p`: to the base, unchanged.
    fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
        if msg.device != P {
            return;
        }
        match &self.writer {
            Some(w) => {
                if let Err(e) = w.command(msg.payload) {
                    warn!(self.log, "command not passed to the base"; "error" => %e);
                }
            }
            None => warn!(self.log, "command ignored: the base is not held"),
        }
    }

    /// The map-frame `p` stopped: the base stops.
    fn stop(&mut self, msg: Stop, _ctx: &mut Context<Self>) {
        if let (P, Some(w)) = (msg.device, &self.writer) {
            let zero = PositionCommand {
                speed: 0,
                turn_rate: 0,
            };
            let _ = w.command(Bytes::from(zero.encode()));
        }
    }

    /// The server is exiting: every device held let go.
    fn terminate(&mut self, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.up.clear();
        self.release_all();
        Reply::Now(())
    }
}

player_kit::driver_handlers!(AmclDriver);

impl Handler<Readings> for AmclDriver {
    type Result = ();

    fn handle(&mut self, msg: Readings, ctx: &mut Self::Context) {
        for d in msg.data.iter() {
            self.on_reading(d, ctx);
        }
        if let Some(intake) = &self.intake {
            let skipped = intake.finished(msg.counted);
            if skipped > 0 && self.skips.hit() {
                warn!(self.log, "the filter is behind the laser: scans skipped (fewer particles or max_beams, or the likelihood_field model, would keep up)";
                    "skipped" => skipped, "most_waiting" => MOST_SCANS_WAITING);
            }
        }
    }
}

impl OnOwnThread for AmclDriver {
    fn own_thread(&mut self) -> &mut OwnThread {
        &mut self.own_thread
    }
}

/// Registers the `amcl` driver (on a thread of its own).
pub fn register(catalog: &mut Catalog) {
    catalog.register("amcl", |ctx: DriverContext| {
        let driver = AmclDriver::new(&ctx)?;
        let serves_p = driver.serves_p;
        let addr = start_on_own_thread("amcl", driver);
        let mut devices = vec![DeviceSpec::read_only(H)];
        if serves_p {
            devices.push(DeviceSpec::moving(P, PositionCommand::SIZE));
        }
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices,
        })
    });
}
