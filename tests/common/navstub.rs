//! A stand-in localizer and planner for the tests of what carries `H` and `G` (config
//! answers, front ends, recording), until the real `amcl` and `wavefront` drivers serve
//! them: the `navstub` driver publishes `H` (one hypothesis) and `G` every 50 ms with the
//! layouts of `player_proto::nav`, answers `x H g` with particles in several packets and
//! `x G w` with waypoints, and takes `x H s`, `x H G`, goals, `x G e` and `x G c`.
//! Used as `common::navstub` (`tests/common/mod.rs`).

#![allow(dead_code)]

use actix::prelude::*;
use bytes::Bytes;
use player::catalog::{Catalog, DriverContext, StartedDriver};
use player::driver::{
    Command, Config, DeviceSpec, DriverError, DriverHandle, Publisher, Setup, Shutdown, Stop,
    Subscribers, Terminate,
};
use player_proto::device;
use player_proto::nav::{
    code, Goal, Hypothesis, Localize, Particle, Particles, Planner, PlannerState, SetPose,
    Waypoints,
};
use std::time::Duration;

/// How many particles the stub's set has (three answers: 100, 100, 50).
pub const PARTICLES: u32 = 250;

struct NavStub {
    localize: Localize,
    planner: Planner,
    publisher: Publisher,
}

impl NavStub {
    fn publish(&mut self) {
        let h = Bytes::from(self.localize.encode().unwrap());
        let g = Bytes::from(self.planner.encode());
        self.publisher.publish_batch(
            vec![(device::LOCALIZE, h), (device::PLANNER, g)],
            player::driver::Timestamp::now(),
        );
    }

    fn particles(&self) -> Vec<Bytes> {
        let all: Vec<Particle> = (0..PARTICLES as i32)
            .map(|i| Particle {
                pose: [i, -i, i * 100],
                alpha: 4000,
            })
            .collect();
        all.chunks(100)
            .enumerate()
            .map(|(k, chunk)| {
                Bytes::from(
                    Particles {
                        mean: self.localize.hypotheses[0].mean,
                        variance: 2500,
                        particles: chunk.to_vec(),
                        first: (k * 100) as u32,
                        total: PARTICLES,
                    }
                    .encode()
                    .unwrap(),
                )
            })
            .collect()
    }
}

impl Actor for NavStub {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(Duration::from_millis(50), |act, _| act.publish());
    }
}

impl Handler<Config> for NavStub {
    type Result = ();

    fn handle(&mut self, msg: Config, _ctx: &mut Self::Context) {
        match (msg.device, msg.payload.first().copied()) {
            (device::LOCALIZE, Some(code::PARTICLES)) => {
                msg.answer.send(self.particles()).unwrap();
            }
            (device::LOCALIZE, Some(code::SET_POSE)) => {
                let p = SetPose::decode(&msg.payload).unwrap();
                self.localize.hypotheses[0].mean = p.mean;
                self.localize.hypotheses[0].cov = p.cov;
            }
            (device::LOCALIZE, Some(code::GLOBAL)) => self.localize.pending_count = 999,
            (device::PLANNER, Some(code::WAYPOINTS)) => {
                let w = Waypoints(vec![[0, 0, 0], [500, 0, 0], self.planner.goal]);
                msg.answer.send_one(w.encode().unwrap()).unwrap();
            }
            (device::PLANNER, Some(code::ENABLE)) => {
                self.planner.state = if msg.payload.get(1) == Some(&1) {
                    PlannerState::Driving
                } else {
                    PlannerState::Idle
                };
            }
            (device::PLANNER, Some(code::CANCEL)) => {
                self.planner.state = PlannerState::Idle;
                self.planner.goal = [0; 3];
            }
            _ => {}
        }
    }
}

impl Handler<Command> for NavStub {
    type Result = ();

    fn handle(&mut self, msg: Command, _ctx: &mut Self::Context) {
        let g = Goal::decode(&msg.payload).unwrap();
        self.planner.goal = [g.x, g.y, g.a];
        self.planner.state = PlannerState::Planning;
    }
}

impl Handler<Setup> for NavStub {
    type Result = Result<(), DriverError>;
    fn handle(&mut self, _msg: Setup, _ctx: &mut Self::Context) -> Self::Result {
        self.publish();
        Ok(())
    }
}

impl Handler<Shutdown> for NavStub {
    type Result = ();
    fn handle(&mut self, _msg: Shutdown, _ctx: &mut Self::Context) {}
}

impl Handler<Stop> for NavStub {
    type Result = ();
    fn handle(&mut self, _msg: Stop, _ctx: &mut Self::Context) {}
}

impl Handler<Subscribers> for NavStub {
    type Result = ();
    fn handle(&mut self, msg: Subscribers, _ctx: &mut Self::Context) {
        self.publisher.set_subscribers(msg);
    }
}

impl Handler<Terminate> for NavStub {
    type Result = ();
    fn handle(&mut self, _msg: Terminate, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// Registers the `navstub` driver (devices `H`, read only, and `G`, taking 12-byte goals)
/// in `catalog`.
pub fn register(catalog: &mut Catalog) {
    catalog.register("navstub", |ctx: DriverContext| {
        let addr = NavStub {
            localize: Localize {
                hypotheses: vec![Hypothesis {
                    mean: [1000, 2000, 3600],
                    cov: [[100, 0, 0], [0, 100, 0], [0, 0, 3600]],
                    alpha: 1_000_000,
                }],
                ..Localize::default()
            },
            planner: Planner::default(),
            publisher: ctx.publisher(),
        }
        .start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices: vec![
                DeviceSpec::read_only(device::LOCALIZE),
                DeviceSpec::read_write(device::PLANNER, Goal::SIZE),
            ],
        })
    });
}
