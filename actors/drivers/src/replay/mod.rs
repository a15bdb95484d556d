//! The `replay` driver: serves a recording (an MCAP file written by `-record`) as the
//! robot's devices.
//!
//! Parameters (`[robot.driver.params]`):
//!
//! - `file`: the recording (relative to the configuration file);
//! - `speed`: playback speed factor (default 1.0; 2.0 plays twice as fast);
//! - `loop`: start again from `offset` after the last reading (default false);
//! - `offset`: seconds into the recording to start from (default 0);
//! - `robot`: which recorded robot to serve (default: the first in the file);
//! - `max_bytes`: largest recording accepted (default 4 GiB; it is held in memory).
//!
//! Each device publishes the recorded payloads byte for byte, on the recorded schedule
//! scaled by `speed`; readings recorded at one instant are published as one batch. The
//! timestamps are the recorded ones shifted to now: the first played reading gets the time
//! playback started, the others keep their recorded spacing divided by `speed`. Playback
//! starts when the first device is set up and stops after the last one is shut down (the
//! next setup starts again from `offset`, playing, at `speed`). Commands and configs are
//! accepted, logged and ignored: a replayed base does not move. One config is answered:
//! `x M t`, a tile of the map the replayed `M` serves, cut from the map the recorder wrote
//! whole (`/<robot>/M/map`), as the live map device answered it; and that map's grid goes
//! to the robot's other drivers as a map driver's does (`GridRequest`: a localizer or a
//! planner runs on a replayed map).
//!
//! Front ends control playback through the registry with the kit's
//! [`player_kit::playback::Playback`]: play, pause, speed (clamped to the kit's
//! range) and seek. The recording is in memory, sorted by time, with each device's
//! readings indexed: a seek is a binary search, and publishes each device's latest reading
//! at or before the new time at once (so every client, TCP or web, sees the robot as it
//! was then). While paused nothing is published. Each change starts a new stretch of
//! timestamps after every one already published, and the driver's
//! [`PlaybackClock`] maps a timestamp back to recording time (for Foxglove's timeline).

/// The reader of recordings, in the protocol crate (pure, so the fuzz target reaches it).
pub use player_proto::recording;

use actix::prelude::*;
use bytes::Bytes;
use player_kit::catalog::{Catalog, DeviceFlag, DriverContext, FlagValue, StartedDriver};
use player_kit::driver::{
    Command, Config, DeviceSpec, DriverError, DriverHandle, Publisher, Setup, Shutdown, Stop,
    Timestamp,
};
use player_kit::plain::{Driver, Reply};
use player_kit::playback::{
    clamp_speed, Playback, PlaybackClock, PlaybackRequest, PlaybackStatus, Segment,
};
use player_kit::world::{GridMap, GridRequest};
use player_proto::device;
use player_proto::nav::{self, MapInfo, Tile, TileRequest};
use recording::{RecordedMap, Recording};
use serde::Deserialize;
use slog::{debug, info, warn, Logger};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn four_gib() -> u64 {
    4 << 30
}

/// The driver's parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    file: String,
    #[serde(default = "crate::params::one")]
    speed: f64,
    #[serde(default, rename = "loop")]
    looping: bool,
    #[serde(default)]
    offset: f64,
    #[serde(default)]
    robot: Option<String>,
    #[serde(default = "four_gib")]
    max_bytes: u64,
}

/// Commands one device was sent, for rate-limited log lines.
#[derive(Default)]
struct Ignored {
    count: u64,
    logged: Option<Instant>,
}

/// The replay driver actor.
pub struct ReplayDriver {
    rec: Recording,
    /// Per device, the positions of its readings in `rec.readings` (in time order): the
    /// index a seek searches.
    by_device: BTreeMap<u8, Vec<usize>>,
    /// The speed now, and the configured one (back after the last device is shut down).
    speed: f64,
    config_speed: f64,
    looping: bool,
    /// The first reading at or after `offset`.
    first: usize,
    /// The gap put between the last reading and the first when looping.
    loop_gap: u64,
    up: HashSet<u8>,
    /// The next reading to play.
    pos: usize,
    /// The recording time playback is at while it does not run.
    held: u64,
    /// A client paused playback.
    paused: bool,
    /// The last reading was played (not looping).
    ended: bool,
    /// The stretch being played, while playback runs.
    run: Option<Segment>,
    /// The timestamp (ns) of the last reading published: a new stretch starts after it.
    last_ts: u64,
    clock: Arc<PlaybackClock>,
    timer: Option<SpawnHandle>,
    publisher: Publisher,
    ignored: HashMap<u8, Ignored>,
    /// The map the robot serves now: the last `M` reading published's `map_id`.
    map_id: Option<u32>,
    log: Logger,
}

fn wall_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// `nanos` as a reading's timestamp (whole microseconds, as the protocol carries them).
fn timestamp(nanos: u64) -> Timestamp {
    Timestamp {
        sec: (nanos / 1_000_000_000) as u32,
        usec: ((nanos % 1_000_000_000) / 1000) as u32,
    }
}

impl ReplayDriver {
    fn new(ctx: &DriverContext) -> Result<(ReplayDriver, Vec<DeviceSpec>), DriverError> {
        let p: Params = ctx.params()?;
        if !(p.speed.is_finite() && p.speed > 0.0) {
            return Err(DriverError::params(format!(
                "driver 'replay': speed must be a positive number, not {}",
                p.speed
            )));
        }
        if !(p.offset.is_finite() && p.offset >= 0.0) {
            return Err(DriverError::params(
                "driver 'replay': offset must be a non-negative number of seconds",
            ));
        }
        let path = ctx.path(&p.file);
        let rec =
            recording::load(&path, p.robot.as_deref(), p.max_bytes).map_err(DriverError::params)?;
        let log = ctx.logger.clone();
        if let Some(why) = &rec.truncated {
            warn!(log, "recording ends early (its writer was stopped?); replaying what it holds"; "file" => %path.display(), "error" => why);
        }
        if rec.oversized > 0 {
            warn!(log, "readings larger than a data packet skipped"; "count" => rec.oversized);
        }
        let mut specs = Vec::new();
        let mut missing = String::new();
        for &code in &ctx.devices {
            match rec.devices.get(&code) {
                Some(Some(size)) => specs.push(DeviceSpec::read_write(code, *size)),
                Some(None) => specs.push(DeviceSpec::read_only(code)),
                None => missing.push(char::from(code)),
            }
        }
        if !missing.is_empty() {
            info!(log, "devices not in the recording, not served"; "codes" => &missing);
        }
        if specs.is_empty() {
            return Err(DriverError::not_served(format!(
                "recording '{}' has none of the devices {} for robot '{}'",
                path.display(),
                String::from_utf8_lossy(&ctx.devices),
                rec.robot
            )));
        }
        let served: HashSet<u8> = specs.iter().map(|s| s.code).collect();
        let mut rec = rec;
        rec.readings.retain(|r| served.contains(&r.device));
        let t0 = rec.readings.first().map_or(0, |r| r.time);
        let t_end = rec.readings.last().map_or(0, |r| r.time);
        let offset_ns = (p.offset * 1e9) as u64;
        let first = rec
            .readings
            .partition_point(|r| r.time < t0.saturating_add(offset_ns));
        if first >= rec.readings.len() {
            return Err(DriverError::params(format!(
                "driver 'replay': offset {} s is past the end of the recording ({:.1} s)",
                p.offset,
                (t_end - t0) as f64 / 1e9
            )));
        }
        // Loop with the gap between the first device's first two readings (its period).
        let d0 = rec.readings[first].device;
        let loop_gap = rec.readings[first..]
            .iter()
            .filter(|r| r.device == d0)
            .nth(1)
            .map_or(100_000_000, |r| r.time - rec.readings[first].time)
            .max(1_000_000);
        let mut by_device: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
        for (i, r) in rec.readings.iter().enumerate() {
            by_device.entry(r.device).or_default().push(i);
        }
        info!(log, "replaying"; "file" => %path.display(), "robot" => &rec.robot, "readings" => rec.readings.len() - first,
            "devices" => String::from_utf8_lossy(&specs.iter().map(|s| s.code).collect::<Vec<u8>>()).into_owned(),
            "speed" => p.speed, "loop" => p.looping, "offset_s" => p.offset);
        let held = rec.readings[first].time;
        let clock = Arc::new(PlaybackClock::new(t0, t_end, p.speed));
        clock.hold(PlaybackStatus::Paused, held, p.speed);
        Ok((
            ReplayDriver {
                rec,
                by_device,
                speed: p.speed,
                config_speed: p.speed,
                looping: p.looping,
                first,
                loop_gap,
                up: HashSet::new(),
                pos: first,
                held,
                paused: false,
                ended: false,
                run: None,
                last_ts: 0,
                clock,
                timer: None,
                publisher: ctx.publisher(),
                ignored: HashMap::new(),
                map_id: None,
                log,
            },
            specs,
        ))
    }

    fn start_time(&self) -> u64 {
        self.rec.readings.first().map_or(0, |r| r.time)
    }

    fn end_time(&self) -> u64 {
        self.rec.readings.last().map_or(0, |r| r.time)
    }

    /// A timestamp for a new stretch: now, in whole microseconds, and after every reading
    /// already published (so the stretches' timestamps never overlap).
    fn fresh_wall(&self) -> u64 {
        let now = wall_nanos().div_ceil(1000) * 1000;
        now.max(self.last_ts + 1000)
    }

    /// The recording time playback is at.
    fn current(&self) -> u64 {
        match &self.run {
            Some(s) => {
                let dt = s.at.elapsed().as_nanos() as f64 * s.speed;
                s.rec.saturating_add(dt as u64).min(self.end_time())
            }
            None => self.held,
        }
    }

    fn cancel_timer(&mut self, ctx: &mut Context<Self>) {
        if let Some(h) = self.timer.take() {
            ctx.cancel_future(h);
        }
    }

    /// Starts playing from `held` if a device is up and nobody paused (nor did it end).
    fn resume(&mut self, ctx: &mut Context<Self>) {
        if self.run.is_some() || self.up.is_empty() || self.paused || self.ended {
            return;
        }
        let seg = Segment {
            wall: self.fresh_wall(),
            at: Instant::now(),
            rec: self.held,
            speed: self.speed,
        };
        self.clock.anchor(seg, true);
        self.run = Some(seg);
        self.step(ctx);
    }

    /// Stops playing where playback is now; the clock says `status`.
    fn halt(&mut self, status: PlaybackStatus, ctx: &mut Context<Self>) {
        if self.run.is_some() {
            self.held = self.current();
            self.run = None;
        }
        self.cancel_timer(ctx);
        self.clock.hold(status, self.held, self.speed);
    }

    fn status(&self) -> PlaybackStatus {
        if self.run.is_some() {
            PlaybackStatus::Playing
        } else if self.ended {
            PlaybackStatus::Ended
        } else {
            PlaybackStatus::Paused
        }
    }

    /// Publishes `batch` (readings of one instant) with timestamp `ts` (ns).
    fn publish(&mut self, mut batch: Vec<(u8, Bytes)>, ts: u64) {
        if let Some((_, m)) = batch.iter().find(|(d, _)| *d == device::MAP) {
            self.map_id = MapInfo::decode(m).ok().map(|i| i.map_id);
        }
        let stamp = timestamp(ts);
        self.last_ts = self.last_ts.max(ts / 1000 * 1000);
        if batch.len() == 1 {
            let (d, data) = batch.pop().expect("one reading");
            self.publisher.publish_at(d, data, stamp);
        } else if !batch.is_empty() {
            self.publisher.publish_batch(batch, stamp);
        }
    }

    /// Goes to recording time `t` (clamped to the recording): the next reading is the
    /// first after it, and each device's latest reading at or before it is published at
    /// once. Two binary searches per device: bounded however long the recording.
    fn seek(&mut self, t: u64, ctx: &mut Context<Self>) {
        let t = t.clamp(self.start_time(), self.end_time());
        let running = self.run.is_some();
        self.run = None;
        self.cancel_timer(ctx);
        self.pos = self.rec.readings.partition_point(|r| r.time <= t);
        self.held = t;
        self.ended = false;
        self.clock.jumped();
        self.clock.hold(PlaybackStatus::Paused, t, self.speed);
        if !self.up.is_empty() {
            let batch: Vec<(u8, Bytes)> = self
                .by_device
                .iter()
                .filter_map(|(&d, idx)| {
                    let k = idx.partition_point(|&i| self.rec.readings[i].time <= t);
                    let r = &self.rec.readings[*idx.get(k.checked_sub(1)?)?];
                    Some((d, r.data.clone()))
                })
                .collect();
            let seg = Segment {
                wall: self.fresh_wall(),
                at: Instant::now(),
                rec: t,
                speed: self.speed,
            };
            self.clock.anchor(seg, false);
            self.publish(batch, seg.wall);
        }
        debug!(self.log, "replay: seek"; "to_s" => (t - self.start_time()) as f64 / 1e9, "playing" => running && !self.paused);
        self.resume(ctx);
    }

    /// Publishes every reading that is due, then sleeps until the next one.
    fn step(&mut self, ctx: &mut Context<Self>) {
        self.timer = None;
        loop {
            let Some(seg) = self.run else {
                return;
            };
            if self.pos >= self.rec.readings.len() {
                if !self.looping {
                    info!(
                        self.log,
                        "replay finished: the devices keep their last readings"
                    );
                    self.run = None;
                    self.ended = true;
                    self.held = self.end_time();
                    self.clock
                        .hold(PlaybackStatus::Ended, self.held, self.speed);
                    return;
                }
                let first_time = self.rec.readings[self.first].time;
                let shift = seg.delay(self.end_time()) + (self.loop_gap as f64 / seg.speed) as u64;
                let next = Segment {
                    wall: (seg.wall + shift).max(self.last_ts + 1000),
                    at: seg.at + Duration::from_nanos(shift),
                    rec: first_time,
                    speed: seg.speed,
                };
                self.pos = self.first;
                self.clock.jumped();
                self.clock.anchor(next, true);
                self.run = Some(next);
                debug!(self.log, "replay looping");
                continue;
            }
            let t = self.rec.readings[self.pos].time;
            let due = seg.delay(t);
            let now = seg.at.elapsed().as_nanos() as u64;
            if due > now {
                let wait = Duration::from_nanos(due - now);
                self.timer = Some(ctx.run_later(wait, |act, ctx| act.step(ctx)));
                return;
            }
            // The readings of one recorded instant go out as one batch.
            let mut batch: Vec<(u8, Bytes)> = Vec::new();
            while self.pos < self.rec.readings.len() && self.rec.readings[self.pos].time == t {
                let r = &self.rec.readings[self.pos];
                batch.push((r.device, r.data.clone()));
                self.pos += 1;
            }
            self.publish(batch, seg.wall + due);
        }
    }

    /// Answers a tile of the map the robot serves now (its last `M` reading's), cut from
    /// the map recorded whole (`/<robot>/M/map`); a recording without it, or a malformed
    /// request, is ignored (counted, the log rate-limited).
    fn answer_tile(&mut self, msg: Config) {
        let req = TileRequest::decode(&msg.payload);
        let map = self.serving_map();
        let tile = match (req, map) {
            (Ok(req), Some(m)) => Tile::cut(&m.info, &m.cells, req),
            _ => None,
        };
        let Some(body) = tile.and_then(|t| t.encode().ok()) else {
            let why = if map.is_none() {
                "tile request (the map's cells are not in the recording)"
            } else {
                "malformed tile request"
            };
            self.ignore(msg.device, why, Some(&msg.client));
            return;
        };
        if let Err(e) = msg.answer.send_one(body) {
            warn!(self.log, "replay: tile not answered"; "error" => %e, "client" => &msg.client);
        }
    }

    /// The map recorded whole that the replayed `M` serves: its last published reading's,
    /// or, before one is published (a localizer asks for the grid as soon as `M` is set
    /// up, before playback's first step), the one playback publishes next (or the last
    /// recorded).
    fn serving_map(&self) -> Option<&RecordedMap> {
        let id = self.map_id.or_else(|| {
            let idx = self.by_device.get(&device::MAP)?;
            let next = idx.iter().find(|&&i| i >= self.pos).or(idx.last())?;
            MapInfo::decode(&self.rec.readings[*next].data)
                .ok()
                .map(|i| i.map_id)
        })?;
        self.rec.maps.iter().find(|m| m.info.map_id == id)
    }

    fn ignore(&mut self, device: u8, what: &str, client: Option<&str>) {
        let e = self.ignored.entry(device).or_default();
        e.count += 1;
        if e.logged
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            e.logged = Some(Instant::now());
            info!(self.log, "replay: ignored"; "what" => what, "device" => player_kit::log::device(device), "total" => e.count, "client" => client.unwrap_or("-"));
        }
    }
}

impl Actor for ReplayDriver {
    type Context = Context<Self>;
}

impl Driver for ReplayDriver {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        msg: Setup,
        ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        self.up.insert(msg.device);
        self.resume(ctx);
        Reply::Now(Ok(()))
    }

    /// Kept while playback goes on: the recording's latest reading of the device is still
    /// its reading (forgotten with every device's when the last is shut down).
    fn forget(&mut self, _device: u8) {}

    fn shutdown(&mut self, msg: Shutdown, ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.up.remove(&msg.device);
        if self.up.is_empty() {
            // The next setup plays again from the offset, at the configured speed.
            self.run = None;
            self.cancel_timer(ctx);
            self.pos = self.first;
            self.map_id = None;
            self.held = self.rec.readings[self.first].time;
            self.paused = false;
            self.ended = false;
            self.speed = self.config_speed;
            self.clock.jumped();
            self.clock
                .hold(PlaybackStatus::Paused, self.held, self.speed);
            for &d in self.rec.devices.keys() {
                self.publisher.clear(d);
            }
        }
        Reply::Now(())
    }

    fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
        self.ignore(msg.device, "command", None);
    }

    /// `x M t` is answered from the map recorded whole; every other config is ignored
    /// (nothing recorded changes).
    fn config(&mut self, msg: Config, _ctx: &mut Context<Self>) {
        if msg.device == device::MAP && msg.payload.first() == Some(&nav::code::TILE) {
            self.answer_tile(msg);
        } else {
            self.ignore(msg.device, "config", Some(&msg.client));
        }
    }

    fn stop(&mut self, msg: Stop, _ctx: &mut Context<Self>) {
        debug!(self.log, "replay: stop (nothing moves)"; "device" => player_kit::log::device(msg.device));
    }

    fn terminate(&mut self, ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.run = None;
        self.cancel_timer(ctx);
        Reply::Now(())
    }
}

player_kit::driver_handlers!(ReplayDriver);

impl Handler<GridRequest> for ReplayDriver {
    type Result = Option<Arc<GridMap>>;

    /// The map the replayed `M` serves, whole as recorded, while `M` is set up: a
    /// localizer or planner of the robot runs on a replayed map as on a live one.
    fn handle(&mut self, msg: GridRequest, _ctx: &mut Self::Context) -> Self::Result {
        if msg.device != device::MAP || !self.up.contains(&device::MAP) {
            return None;
        }
        let m = self.serving_map()?;
        Some(Arc::new(GridMap::of(&m.info, m.cells.clone())))
    }
}

impl Handler<Playback> for ReplayDriver {
    type Result = Arc<PlaybackClock>;

    /// A seek first, then the speed, then play or pause (see [`PlaybackRequest`]).
    fn handle(&mut self, msg: Playback, ctx: &mut Self::Context) -> Self::Result {
        let PlaybackRequest { play, speed, seek } = msg.0;
        if let Some(t) = seek {
            self.seek(t, ctx);
        }
        if let Some(s) = speed.and_then(clamp_speed) {
            if s != self.speed {
                // A new stretch from where playback is, at the new speed.
                if self.run.take().is_some() {
                    self.held = self.current();
                }
                self.cancel_timer(ctx);
                self.speed = s;
                self.clock.hold(self.status(), self.held, s);
                self.resume(ctx);
            }
        }
        match play {
            Some(true) if self.paused => {
                self.paused = false;
                self.resume(ctx);
            }
            Some(false) if !self.paused => {
                self.paused = true;
                let status = if self.ended {
                    PlaybackStatus::Ended
                } else {
                    PlaybackStatus::Paused
                };
                self.halt(status, ctx);
            }
            _ => {}
        }
        if play.is_some() || speed.is_some() || seek.is_some() {
            let st = self.clock.state();
            debug!(self.log, "replay: playback asked"; "status" => ?st.status, "at_s" => (st.current - st.start) as f64 / 1e9, "speed" => st.speed);
        }
        self.clock.clone()
    }
}

/// Registers the `replay` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.add_flag(DeviceFlag {
        flag: "-replay",
        driver: "replay",
        // Every device a recording can hold: the manual's seven and the extensions (the
        // full scan, the base's odometry and its full precision, the map, the localizer,
        // the planner). Those not recorded are not served.
        devices: b"psmglzvLOPMHG",
        key: "file",
        value: FlagValue::File,
    });
    catalog.register("replay", |ctx: DriverContext| {
        let (driver, devices) = ReplayDriver::new(&ctx)?;
        let addr = driver.start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr)
                .with_playback(addr.clone().recipient())
                .with_grid(addr.clone().recipient()),
            devices,
        })
    });
}
