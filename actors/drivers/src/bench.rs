//! The `bench` driver: a robot of canned readings, for load tests that measure the server
//! rather than a robot.
//!
//! It serves the seven devices of the 0.7.4a manual (or the subset the configuration gives
//! it) with readings built once at start, of the sizes the manual's Table 7 gives them (the
//! laser 722 bytes, the sonar 32, the position 21, ...), and publishes every device that is
//! up as one batch per period at `hz` (10 by default, the simulated Pioneer's rates), on
//! the thread's precise timer: what the C reference of the stress bench
//! (`ideal_server.c`, prebuilt zero rounds) serves, so the bench's ratio measures the
//! serving path and not the simulator's ray casting. No timer runs while no device is up.
//! Commands and configs are taken and ignored; the position, gripper and PTZ devices take
//! commands as the simulated robot's do, so the registry's guard (access, watchdog, e-stop)
//! runs as it does for a real base.

use actix::prelude::*;
use bytes::Bytes;
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{
    DeviceSpec, DriverError, DriverHandle, Publisher, Setup, Shutdown, Timestamp,
};
use player_kit::plain::{Driver, Reply};
use player_kit::timer::RunEvery;
use player_proto::data::{self as wire, GripperCommand, PositionCommand};
use player_proto::device;
use serde::Deserialize;
use std::time::Duration;

/// Parameters of the `bench` driver (`[robot.driver.params]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchParams {
    /// Readings a second of every device, Hz (0 < hz <= 1000).
    #[serde(default = "crate::params::ten")]
    pub hz: f64,
}

/// The range every laser beam and sonar reads, mm: a robot in the middle of a 4 m room.
const RANGE_MM: u16 = 2000;

/// The canned reading of `code`, of the size Table 7 gives the device.
fn canned(code: u8) -> Vec<u8> {
    match code {
        device::POSITION => wire::Position::default().encode(),
        device::SONAR => wire::Sonar {
            ranges: [RANGE_MM; 16],
        }
        .encode(),
        device::LASER => wire::Laser {
            ranges: [RANGE_MM; 361],
        }
        .encode(),
        device::MISC => wire::Misc {
            voltage: 130,
            ..Default::default()
        }
        .encode(),
        device::GRIPPER => wire::Gripper::default().encode(),
        device::PTZ => wire::Ptz::default().encode(),
        // The vision device with no blob in sight (32 empty channels).
        _ => wire::Vision {
            channels: vec![Vec::new(); wire::ACTS_CHANNELS],
        }
        .encode(),
    }
}

/// The bench robot's driver actor.
pub struct BenchDriver {
    period: Duration,
    /// Each served device and its canned reading, in the order of the configuration.
    readings: Vec<(u8, Bytes)>,
    /// The devices up (set up by a first reader, not yet shut down).
    up: Vec<u8>,
    /// The publishing timer, running while any device is up.
    timer: Option<SpawnHandle>,
    publisher: Publisher,
}

impl BenchDriver {
    fn new(ctx: &DriverContext) -> Result<BenchDriver, DriverError> {
        let params: BenchParams = ctx.params()?;
        if !(params.hz.is_finite() && params.hz > 0.0 && params.hz <= 1000.0) {
            return Err(DriverError::params(format!(
                "bench parameter hz = {}: must be between 0 and 1000 Hz",
                params.hz
            )));
        }
        let mut readings = Vec::with_capacity(ctx.devices.len());
        for &d in &ctx.devices {
            if !device::ALL.contains(&d) {
                return Err(DriverError::not_served(format!(
                    "the bench robot has no device '{}'",
                    char::from(d)
                )));
            }
            readings.push((d, Bytes::from(canned(d))));
        }
        Ok(BenchDriver {
            period: Duration::from_secs_f64(1.0 / params.hz),
            readings,
            up: Vec::new(),
            timer: None,
            publisher: ctx.publisher(),
        })
    }

    fn specs(&self) -> Vec<DeviceSpec> {
        self.readings
            .iter()
            .map(|&(d, _)| match d {
                device::POSITION => DeviceSpec::moving(d, PositionCommand::SIZE),
                device::GRIPPER => DeviceSpec::read_write(d, GripperCommand::SIZE),
                device::PTZ => DeviceSpec::read_write(d, wire::Ptz::SIZE),
                _ => DeviceSpec::read_only(d),
            })
            .collect()
    }

    /// Publishes the canned readings of `devices` that are up as one batch (the bytes are
    /// shared, never copied).
    fn publish(&mut self, devices: Option<u8>) {
        let batch: Vec<(u8, Bytes)> = self
            .readings
            .iter()
            .filter(|(d, _)| self.up.contains(d) && devices.is_none_or(|only| only == *d))
            .map(|(d, b)| (*d, b.clone()))
            .collect();
        if !batch.is_empty() {
            self.publisher.publish_batch(batch, Timestamp::now());
        }
    }

    /// Starts the timer with the first device up, stops it after the last goes down.
    fn update_timer(&mut self, ctx: &mut Context<Self>) {
        match (self.up.is_empty(), self.timer.is_some()) {
            (false, false) => {
                self.timer = Some(ctx.run_every(self.period, |act, _| act.publish(None)));
            }
            (true, true) => {
                if let Some(h) = self.timer.take() {
                    ctx.cancel_future(h);
                }
            }
            _ => {}
        }
    }
}

impl Actor for BenchDriver {
    type Context = Context<Self>;
}

impl Driver for BenchDriver {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        msg: Setup,
        ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        if !self.readings.iter().any(|(d, _)| *d == msg.device) {
            return Reply::Now(Err(DriverError::not_served(format!(
                "the bench robot does not serve '{}' here",
                char::from(msg.device)
            ))));
        }
        if !self.up.contains(&msg.device) {
            self.up.push(msg.device);
        }
        self.update_timer(ctx);
        // A first reading at once, as the simulator gives one.
        self.publish(Some(msg.device));
        Reply::Now(Ok(()))
    }

    fn shutdown(&mut self, msg: Shutdown, ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.up.retain(|&d| d != msg.device);
        self.update_timer(ctx);
        Reply::Now(())
    }
}

player_kit::driver_handlers!(BenchDriver);

/// Registers the `bench` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("bench", |ctx: DriverContext| {
        let driver = BenchDriver::new(&ctx)?;
        let devices = driver.specs();
        let addr = driver.start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices,
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canned_readings_have_the_sizes_of_table_7() {
        for (code, size) in [
            (device::POSITION, 21),
            (device::SONAR, 32),
            (device::LASER, 722),
            (device::MISC, wire::Misc::SIZE),
            (device::GRIPPER, wire::Gripper::SIZE),
            (device::PTZ, wire::Ptz::SIZE),
        ] {
            assert_eq!(canned(code).len(), size, "{}", char::from(code));
        }
        let vision = canned(device::VISION);
        assert!(wire::Vision::decode(&vision).is_ok(), "{vision:?}");
    }
}
