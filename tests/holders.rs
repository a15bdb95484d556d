//! Drivers holding other devices of their robot, over real TCP (`player_kit::source`), and
//! devices served under another code (`"p as O"`).
//!
//! The test's `pilot` driver serves device `T` and, once `T` is set up, holds the
//! simulator's base (`p`, or `O` when renamed) for reading and writing as a yielding
//! holder (a planner's way): on config `T g` it drives (a command every 100 ms) until told
//! `T s`, or until it is pre-empted. Each event the registry tells it is appended to its
//! `T` data as a letter (`E` e-stop latched, `e` released, `w` watchdog stop, `n`
//! pre-empted, `r` a command refused), so a client reads what the driver was told.

use actix::prelude::*;
use bytes::Bytes;
use player::catalog::{DriverContext, StartedDriver};
use player::driver::{
    Command, Config, DataRecipient, DeviceData, DeviceDataBatch, DeviceSpec, DriverError,
    DriverHandle, Publisher, Setup, Shutdown, Stop, Subscribers, Terminate,
};
use player::settings::Settings;
use player::source::{DeviceSource, DeviceWriter, Hold, HolderEvent};
use player_proto::data::{Position, PositionCommand};
use player_proto::ext::kind;
use player_proto::odometry::Odometry;
use player_testkit::*;
use std::time::{Duration, Instant};

const PILOT: u8 = b'T';

struct Pilot {
    base: u8,
    source: DeviceSource,
    writer: Option<DeviceWriter>,
    driving: bool,
    events: Vec<u8>,
    publisher: Publisher,
}

impl Pilot {
    fn publish(&mut self) {
        let data = if self.events.is_empty() {
            vec![b'-']
        } else {
            self.events.clone()
        };
        self.publisher.publish(PILOT, Bytes::from(data));
    }
}

impl Actor for Pilot {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(Duration::from_millis(100), |act, _| {
            if act.driving {
                if let Some(w) = &act.writer {
                    let c = PositionCommand {
                        speed: 200,
                        turn_rate: 0,
                    };
                    w.command(Bytes::from(c.encode())).unwrap();
                }
            }
            act.publish();
        });
    }
}

impl Handler<Setup> for Pilot {
    type Result = ResponseActFuture<Self, Result<(), DriverError>>;

    fn handle(&mut self, _msg: Setup, ctx: &mut Self::Context) -> Self::Result {
        let hold = Hold::read_write(DataRecipient::of(&ctx.address()))
            .yielding()
            .events(ctx.address().recipient());
        Box::pin(
            self.source
                .hold(self.base, hold)
                .into_actor(self)
                .map(|held, act, _| {
                    let held = held.map_err(DriverError::from)?;
                    act.writer = held.writer;
                    act.publish();
                    Ok(())
                }),
        )
    }
}

impl Handler<HolderEvent> for Pilot {
    type Result = ();

    fn handle(&mut self, msg: HolderEvent, _ctx: &mut Self::Context) {
        let letter = match msg {
            HolderEvent::EStop { latched: true, .. } => b'E',
            HolderEvent::EStop { latched: false, .. } => b'e',
            HolderEvent::Watchdog { .. } => b'w',
            HolderEvent::Preempted { .. } => {
                // A planner stops driving when a client takes over.
                self.driving = false;
                b'n'
            }
            HolderEvent::Refused { .. } => b'r',
        };
        if self.events.last() != Some(&letter) && self.events.len() < 64 {
            self.events.push(letter);
        }
    }
}

impl Handler<Config> for Pilot {
    type Result = ();

    fn handle(&mut self, msg: Config, _ctx: &mut Self::Context) {
        match msg.payload.first() {
            Some(b'g') => self.driving = true,
            Some(b's') => self.driving = false,
            Some(b'c') => self.events.clear(),
            Some(b'x') => {
                self.driving = false;
                self.writer = None;
                self.source.release(self.base);
            }
            _ => {}
        }
    }
}

impl Handler<DeviceData> for Pilot {
    type Result = ();
    fn handle(&mut self, _msg: DeviceData, _ctx: &mut Self::Context) {}
}

impl Handler<DeviceDataBatch> for Pilot {
    type Result = ();
    fn handle(&mut self, _msg: DeviceDataBatch, _ctx: &mut Self::Context) {}
}

impl Handler<Shutdown> for Pilot {
    type Result = ();
    fn handle(&mut self, _msg: Shutdown, _ctx: &mut Self::Context) {}
}

impl Handler<Command> for Pilot {
    type Result = ();
    fn handle(&mut self, _msg: Command, _ctx: &mut Self::Context) {}
}

impl Handler<Stop> for Pilot {
    type Result = ();
    fn handle(&mut self, _msg: Stop, _ctx: &mut Self::Context) {}
}

impl Handler<Subscribers> for Pilot {
    type Result = ();
    fn handle(&mut self, msg: Subscribers, _ctx: &mut Self::Context) {
        self.publisher.set_subscribers(msg);
    }
}

impl Handler<Terminate> for Pilot {
    type Result = ();
    fn handle(&mut self, _msg: Terminate, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// The builtin catalog and the pilot, which drives the device named by its `base`
/// parameter (default `p`).
fn catalog() -> player::catalog::Catalog {
    let mut catalog = player::builtin_catalog();
    catalog.register("pilot", |ctx: DriverContext| {
        let base = ctx
            .params
            .clone()
            .into_table()
            .ok()
            .and_then(|t| t.get("base").cloned())
            .and_then(|v| v.into_string().ok())
            .map_or(b'p', |s| s.as_bytes()[0]);
        let addr = Pilot {
            base,
            source: ctx.source.clone(),
            writer: None,
            driving: false,
            events: Vec::new(),
            publisher: ctx.publisher(),
        }
        .start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices: vec![DeviceSpec::read_only(PILOT)],
        })
    });
    catalog
}

fn server(base_devices: &str, pilot_base: &str) -> TestServer {
    let text = format!(
        r#"
[[robot]]
[[robot.driver]]
driver = "sim"
devices = [{base_devices}]

[[robot.driver]]
driver = "pilot"
devices = ["T"]
[robot.driver.params]
base = "{pilot_base}"
"#
    );
    let settings = Settings::from_toml(&text, "holders test").unwrap_or_else(|e| panic!("{e}"));
    start_server_with(settings, catalog())
}

/// Reads until a reading of `device` satisfies `pred` (re-sending the held command with
/// each position reading); returns it. Fails after `within`.
fn until(c: &mut Client, device: u8, within: Duration, pred: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let deadline = Instant::now() + within;
    loop {
        assert!(
            Instant::now() < deadline,
            "no reading of '{}' as wanted within {within:?}",
            char::from(device)
        );
        let Some((code, payload)) = c.read_message_within(Duration::from_millis(200)) else {
            continue;
        };
        if code == b'p' {
            c.resend_held();
        }
        if code == device && pred(&payload) {
            return payload;
        }
    }
}

fn speed(payload: &[u8]) -> i16 {
    Position::decode(payload).unwrap().speed
}

fn has(letter: u8) -> impl Fn(&[u8]) -> bool {
    move |events: &[u8]| events.contains(&letter)
}

#[test]
fn a_yielding_driver_drives_under_the_guard_and_a_clients_command_pre_empts_it() {
    let server = server(r#""p", "s""#, "p");
    let mut c = Client::connect(server.addr());
    c.config(b'y', b'e', &[1]);
    assert_eq!(c.request(&[(b'T', b'r'), (b'p', b'a')]), b"Trpa");
    // The pilot drives: its commands pass the guard, the base moves.
    c.config(PILOT, b'g', &[]);
    until(&mut c, b'p', TIMEOUT, |p| speed(p) > 150);
    // The client's own command pre-empts it: the client is told, the driver too, and the
    // base obeys the client (stop).
    c.drive(0, 0);
    let (dev, why) = c.wait_notice(kind::PREEMPTED, TIMEOUT);
    assert_eq!(dev, b'p');
    assert!(why.contains("driver pilot"), "{why}");
    until(&mut c, PILOT, TIMEOUT, has(b'n'));
    until(&mut c, b'p', TIMEOUT, |p| speed(p) == 0);
    // While the client keeps commanding, the pilot's commands are refused.
    c.config(PILOT, b'g', &[]);
    until(&mut c, PILOT, TIMEOUT, has(b'r'));
    let p = until(&mut c, b'p', Duration::from_secs(1), |_| true);
    assert_eq!(speed(&p), 0, "the client's stop holds");
    // Once the client's command no longer holds (it falls silent), the pilot drives
    // again; and when the pilot falls silent, the watchdog stops the base and tells it.
    c.send_request(&[(b'p', b'r')]);
    until(&mut c, b'p', TIMEOUT, |p| speed(p) > 150);
    c.config(PILOT, b's', &[]);
    until(&mut c, PILOT, TIMEOUT, has(b'w'));
    until(&mut c, b'p', TIMEOUT, |p| speed(p) == 0);
}

#[test]
fn the_estop_stops_a_drivers_writing_and_tells_it() {
    let server = server(r#""p", "s""#, "p");
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'T', b'r'), (b'p', b'r')]), b"Trpr");
    c.config(PILOT, b'g', &[]);
    until(&mut c, b'p', TIMEOUT, |p| speed(p) > 150);
    c.config(b'y', b'E', &[1]);
    until(&mut c, PILOT, TIMEOUT, has(b'E'));
    until(&mut c, b'p', TIMEOUT, |p| speed(p) == 0);
    // Refused while latched: the base stays stopped.
    until(&mut c, PILOT, TIMEOUT, has(b'r'));
    let p = until(&mut c, b'p', Duration::from_secs(1), |_| true);
    assert_eq!(speed(&p), 0);
    // Released (a client that may command): told, and it drives again.
    c.config(b'y', b'E', &[0]);
    until(&mut c, PILOT, TIMEOUT, has(b'e'));
    until(&mut c, b'p', TIMEOUT, |p| speed(p) > 150);
    // Letting go of the base stops it (a writer left).
    c.config(PILOT, b'x', &[]);
    until(&mut c, b'p', TIMEOUT, |p| speed(p) == 0);
}

#[test]
fn a_device_served_under_another_code_is_the_drivers_own_under_it() {
    // The base's own position as `O`; nothing serves `p`.
    let server = server(r#""p as O", "P", "s""#, "O");
    let mut c = Client::connect(server.addr());
    c.config(b'y', b'e', &[1]);
    assert_eq!(c.request(&[(b'p', b'r')]), b"pe");
    assert_eq!(c.request(&[(b'O', b'a'), (b'P', b'r')]), b"OaPr");
    // The manual's position layout under `O`; `P` of the same instant at full precision.
    let mut pair = || loop {
        let round = c.read_round(2);
        if round[0].0 == b'O' && round[1].0 == b'P' {
            break (
                Position::decode(&round[0].1).expect("21 bytes under O"),
                Odometry::decode(&round[1].1).expect("25 bytes of P"),
            );
        }
    };
    // The first rounds may pair the first readings the simulator takes as each device is
    // set up (`O`, then `P` a millisecond later); from its first step with both up, one
    // batch carries both, and every round has one instant.
    let (o, p) = pair();
    let setup = o.time.max(p.time);
    let (o, p) = loop {
        let (o, p) = pair();
        if o.time > setup || p.time > setup {
            break (o, p);
        }
    };
    assert_eq!(o.time, p.time, "one batch, one instant");
    // Commands to `O` move the robot.
    c.command(
        b'O',
        &PositionCommand {
            speed: 300,
            turn_rate: 20,
        }
        .encode(),
    );
    let moving = until(&mut c, b'O', TIMEOUT, |d| speed(d) > 200);
    let o = Position::decode(&moving).unwrap();
    let p = Odometry::decode(&until(&mut c, b'P', TIMEOUT, |_| true)).unwrap();
    assert!(
        (p.x - o.x).abs() < 100 && (p.y - o.y).abs() < 100,
        "{o:?} {p:?}"
    );
    // The watchdog applies to `O`: one command, then silence.
    let (dev, _) = c.wait_notice(kind::WATCHDOG, TIMEOUT);
    assert_eq!(dev, b'O');
    until(&mut c, b'O', TIMEOUT, |d| speed(d) == 0);
    // At rest, `P` is `O` at full precision: the same mm, the heading within half a degree.
    let o = Position::decode(&until(&mut c, b'O', TIMEOUT, |_| true)).unwrap();
    let p = Odometry::decode(&until(&mut c, b'P', TIMEOUT, |_| true)).unwrap();
    assert_eq!((p.x, p.y), (o.x, o.y));
    let dh = (f64::from(p.heading) / 3600.0 - f64::from(o.heading)).rem_euclid(360.0);
    assert!(dh <= 0.5 || dh >= 359.5, "{o:?} {p:?}");
    // A driver holds the renamed base by its served code, and drives it.
    assert_eq!(c.request(&[(b'T', b'r')]), b"Tr");
    c.config(PILOT, b'g', &[]);
    until(&mut c, b'O', TIMEOUT, |d| speed(d) > 150);
    // The device list names the served codes.
    c.config(b'y', b'l', &[]);
    let list = loop {
        let (code, payload) = c.read_message();
        if code == b'y' && payload.first() == Some(&b'l') {
            break payload;
        }
    };
    let Ok(player_proto::ext::Extension::DeviceList(entries)) = player_proto::ext::decode(&list)
    else {
        panic!("a device list");
    };
    let codes: Vec<u8> = entries.iter().map(|e| e.code).collect();
    assert_eq!(codes, b"OPTs");
}
