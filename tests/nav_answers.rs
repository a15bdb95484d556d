//! Config answers over real TCP, through the Rust client: a stand-in localizer and planner
//! (the test's `navstub` driver, serving `H` and `G` with the layouts of
//! `player_proto::nav`) answer `x H g` with particles in several packets, `x G w` with
//! waypoints, and take `x H s`, `x H G`, goals, `x G e` and `x G c`. The real `amcl` and
//! `wavefront` drivers answer the same way; this checks the path every answer takes (the
//! driver's `AnswerTo`, the registry, the session's `y` packets) and the client's side.

use actix::prelude::*;
use bytes::Bytes;
use player::catalog::{DriverContext, StartedDriver};
use player::driver::{
    Command, Config, DeviceSpec, DriverError, DriverHandle, Publisher, Setup, Shutdown, Stop,
    Subscribers, Terminate,
};
use player::settings::Settings;
use player_client::{device, Client};
use player_proto::nav::{
    code, Goal, Hypothesis, Localize, Particle, Particles, Planner, PlannerState, SetPose,
    Waypoints,
};
use player_testkit::*;
use std::time::Duration;

/// How many particles the stub's set has (three answers: 100, 100, 50).
const PARTICLES: u32 = 250;

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

fn server() -> TestServer {
    let mut catalog = player::builtin_catalog();
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
    let text = r#"
[[robot]]
[[robot.driver]]
driver = "navstub"
devices = ["H", "G"]
"#;
    start_server_with(Settings::from_toml(text, "answers").unwrap(), catalog)
}

fn connect(server: &TestServer) -> Client {
    let mut c = Client::connect(server.addr()).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    c
}

/// Reads rounds until `pred` holds of one.
fn until(c: &mut Client, pred: impl Fn(&player_client::Round) -> bool) -> player_client::Round {
    for _ in 0..200 {
        let r = c.read().unwrap();
        if pred(r) {
            return r.clone();
        }
    }
    panic!("no round as wanted in 200");
}

#[test]
fn particles_come_in_several_answers_and_are_put_together_in_order() {
    let server = server();
    let mut c = connect(&server);
    c.request("HrGa").unwrap().check().unwrap();
    let p = c.particles().unwrap();
    assert_eq!((p.first, p.total, p.particles.len()), (0, PARTICLES, 250));
    for (i, q) in p.particles.iter().enumerate() {
        assert_eq!(q.pose, [i as i32, -(i as i32), i as i32 * 100]);
    }
    assert_eq!(p.mean, [1000, 2000, 3600]);
    // Twice: the second set arrives whole too, nothing left queued.
    assert_eq!(c.particles().unwrap().particles.len(), 250);
    assert!(c.take_answers().is_empty());
}

#[test]
fn the_localizer_and_the_planner_take_their_configs_and_goals() {
    let server = server();
    let mut c = connect(&server);
    c.request("HrGa").unwrap().check().unwrap();
    c.set_pose(-1500, 250, 90.0, 300.0, 10.0).unwrap();
    let r = until(&mut c, |r| {
        r.localize
            .as_ref()
            .is_some_and(|l| l.hypotheses[0].mean[0] == -1500)
    });
    let h = r.localize.unwrap().hypotheses[0];
    assert_eq!(h.mean, [-1500, 250, 324_000]);
    assert_eq!(h.cov[0][0], 90_000);
    assert_eq!(
        h.cov[2][2], 1_296_000_000,
        "10 degrees = 36000 arc-seconds, squared"
    );
    c.global_localization().unwrap();
    until(&mut c, |r| {
        r.localize.as_ref().is_some_and(|l| l.pending_count == 999)
    });
    // A goal (write access), its waypoints, enable, cancel.
    c.set_goal(3000, -400, 45).unwrap();
    let r = until(&mut c, |r| {
        r.planner.is_some_and(|p| p.goal == [3000, -400, 45])
    });
    assert_eq!(r.planner.unwrap().state, PlannerState::Planning);
    assert_eq!(
        c.waypoints().unwrap(),
        vec![[0, 0, 0], [500, 0, 0], [3000, -400, 45]]
    );
    c.planner_enable(true).unwrap();
    until(&mut c, |r| {
        r.planner.is_some_and(|p| p.state == PlannerState::Driving)
    });
    c.planner_cancel().unwrap();
    until(&mut c, |r| {
        r.planner
            .is_some_and(|p| p.state == PlannerState::Idle && p.goal == [0; 3])
    });
}

#[test]
fn a_read_only_client_gets_answers_too_and_a_client_that_asks_nothing_gets_none() {
    let server = server();
    let mut asker = connect(&server);
    let mut other = connect(&server);
    asker.request("Gr").unwrap().check().unwrap();
    other.request("Gr").unwrap().check().unwrap();
    assert_eq!(asker.waypoints().unwrap().len(), 3);
    // The other client reads on; no answer reaches it.
    for _ in 0..10 {
        other.read().unwrap();
    }
    assert!(other.take_answers().is_empty());
}
