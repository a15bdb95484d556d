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
//! next setup starts again from `offset`). Commands and configs are accepted, logged and
//! ignored: a replayed base does not move.

pub mod recording;

use actix::prelude::*;
use bytes::Bytes;
use player_kit::catalog::{Catalog, DeviceFlag, DriverContext, FlagValue, StartedDriver};
use player_kit::driver::{
    Command, Config, DeviceSpec, DriverError, DriverHandle, Publisher, Setup, Shutdown, Stop,
    Subscribers, Terminate, Timestamp,
};
use recording::Recording;
use serde::Deserialize;
use slog::{debug, info, warn, Logger};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn one() -> f64 {
    1.0
}

fn four_gib() -> u64 {
    4 << 30
}

/// The driver's parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    file: String,
    #[serde(default = "one")]
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

/// Where playback is.
struct Playing {
    /// When the reading at `first` was (re)played.
    started: Instant,
    /// Its timestamp: `started` on the wall clock, in nanoseconds since the epoch.
    started_wall: u64,
    /// The next reading to play.
    next: usize,
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
    speed: f64,
    looping: bool,
    /// The first reading at or after `offset`.
    first: usize,
    /// The gap put between the last reading and the first when looping.
    loop_gap: u64,
    up: HashSet<u8>,
    playing: Option<Playing>,
    timer: Option<SpawnHandle>,
    publisher: Publisher,
    ignored: HashMap<u8, Ignored>,
    log: Logger,
}

fn wall_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

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
        for &code in &ctx.devices {
            match rec.devices.get(&code) {
                Some(Some(size)) => specs.push(DeviceSpec::read_write(code, *size)),
                Some(None) => specs.push(DeviceSpec::read_only(code)),
                None => {
                    info!(log, "device not in the recording, not served"; "device" => player_kit::log::device(code), "code" => %char::from(code))
                }
            }
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
        let offset_ns = (p.offset * 1e9) as u64;
        let first = rec
            .readings
            .partition_point(|r| r.time < t0.saturating_add(offset_ns));
        if first >= rec.readings.len() {
            return Err(DriverError::params(format!(
                "driver 'replay': offset {} s is past the end of the recording ({:.1} s)",
                p.offset,
                (rec.readings.last().map_or(0, |r| r.time) - t0) as f64 / 1e9
            )));
        }
        // Loop with the gap between the first device's first two readings (its period).
        let d0 = rec.readings[first].device;
        let loop_gap = rec.readings[first..]
            .iter()
            .filter(|r| r.device == d0)
            .nth(1)
            .map_or(100_000_000, |r| r.time - rec.readings[first].time);
        info!(log, "replaying"; "file" => %path.display(), "robot" => &rec.robot, "readings" => rec.readings.len() - first,
            "devices" => String::from_utf8_lossy(&specs.iter().map(|s| s.code).collect::<Vec<u8>>()).into_owned(),
            "speed" => p.speed, "loop" => p.looping, "offset_s" => p.offset);
        Ok((
            ReplayDriver {
                rec,
                speed: p.speed,
                looping: p.looping,
                first,
                loop_gap,
                up: HashSet::new(),
                playing: None,
                timer: None,
                publisher: Publisher::new(),
                ignored: HashMap::new(),
                log,
            },
            specs,
        ))
    }

    /// Recording time of reading `i`, relative to the first played reading, in wall-clock
    /// nanoseconds at this speed.
    fn due(&self, i: usize) -> u64 {
        let dt = self.rec.readings[i].time - self.rec.readings[self.first].time;
        (dt as f64 / self.speed) as u64
    }

    fn start(&mut self, ctx: &mut Context<Self>) {
        self.playing = Some(Playing {
            started: Instant::now(),
            started_wall: wall_nanos(),
            next: self.first,
        });
        self.step(ctx);
    }

    fn stop(&mut self, ctx: &mut Context<Self>) {
        self.playing = None;
        if let Some(h) = self.timer.take() {
            ctx.cancel_future(h);
        }
    }

    /// Publishes every reading that is due, then sleeps until the next one.
    fn step(&mut self, ctx: &mut Context<Self>) {
        self.timer = None;
        loop {
            let Some(p) = &self.playing else {
                return;
            };
            let (started, started_wall, mut next) = (p.started, p.started_wall, p.next);
            let now = started.elapsed().as_nanos() as u64;
            if next >= self.rec.readings.len() {
                if !self.looping {
                    info!(
                        self.log,
                        "replay finished: the devices keep their last readings"
                    );
                    return;
                }
                let last = self.due(self.rec.readings.len() - 1);
                let gap = (self.loop_gap as f64 / self.speed) as u64;
                let shift = Duration::from_nanos(last + gap);
                self.playing = Some(Playing {
                    started: started + shift,
                    started_wall: started_wall + last + gap,
                    next: self.first,
                });
                debug!(self.log, "replay looping");
                continue;
            }
            let due = self.due(next);
            if due > now {
                let wait = Duration::from_nanos(due - now);
                self.timer = Some(ctx.run_later(wait, |act, ctx| act.step(ctx)));
                return;
            }
            // The readings of one recorded instant go out as one batch.
            let t = self.rec.readings[next].time;
            let mut batch: Vec<(u8, Bytes)> = Vec::new();
            while next < self.rec.readings.len() && self.rec.readings[next].time == t {
                let r = &self.rec.readings[next];
                batch.push((r.device, r.data.clone()));
                next += 1;
            }
            let ts = timestamp(started_wall + due);
            if batch.len() == 1 {
                let (d, data) = batch.pop().expect("one reading");
                self.publisher.publish_at(d, data, ts);
            } else {
                self.publisher.publish_batch(batch, ts);
            }
            if let Some(p) = &mut self.playing {
                p.next = next;
            }
        }
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

impl Handler<Setup> for ReplayDriver {
    type Result = Result<(), DriverError>;

    fn handle(&mut self, msg: Setup, ctx: &mut Self::Context) -> Self::Result {
        self.up.insert(msg.device);
        if self.playing.is_none() {
            self.start(ctx);
        }
        Ok(())
    }
}

impl Handler<Shutdown> for ReplayDriver {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, ctx: &mut Self::Context) {
        self.up.remove(&msg.device);
        if self.up.is_empty() {
            self.stop(ctx);
            for &d in self.rec.devices.keys() {
                self.publisher.clear(d);
            }
        }
    }
}

impl Handler<Command> for ReplayDriver {
    type Result = ();

    fn handle(&mut self, msg: Command, _ctx: &mut Self::Context) {
        self.ignore(msg.device, "command", None);
    }
}

impl Handler<Config> for ReplayDriver {
    type Result = ();

    fn handle(&mut self, msg: Config, _ctx: &mut Self::Context) {
        self.ignore(msg.device, "config", Some(&msg.client));
    }
}

impl Handler<Stop> for ReplayDriver {
    type Result = ();

    fn handle(&mut self, msg: Stop, _ctx: &mut Self::Context) {
        debug!(self.log, "replay: stop (nothing moves)"; "device" => player_kit::log::device(msg.device));
    }
}

impl Handler<Subscribers> for ReplayDriver {
    type Result = ();

    fn handle(&mut self, msg: Subscribers, _ctx: &mut Self::Context) {
        self.publisher.set_subscribers(msg);
    }
}

impl Handler<Terminate> for ReplayDriver {
    type Result = ();

    fn handle(&mut self, _msg: Terminate, ctx: &mut Self::Context) {
        self.stop(ctx);
        ctx.stop();
    }
}

/// Registers the `replay` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.add_flag(DeviceFlag {
        flag: "-replay",
        driver: "replay",
        devices: b"psmglzv",
        key: "file",
        value: FlagValue::File,
    });
    catalog.register("replay", |ctx: DriverContext| {
        let (driver, devices) = ReplayDriver::new(&ctx)?;
        let addr = driver.start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices,
        })
    });
}
