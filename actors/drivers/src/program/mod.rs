//! The `program` driver: devices served by a separate program, in any language, that the
//! server starts and talks to over its standard input and output (docs/plugins.md).
//!
//! One actor per configured program. It starts the program (working directory: the
//! configuration file's directory; its own process group; killed if the server dies),
//! sends it [`frame::Hello`], and then translates: the registry's `Setup`, `Shutdown`,
//! `Subscribers`, `Command`, `Config` and `Stop` become frames on the program's input; its
//! setup answers, data, log lines, errors and read requests come back as frames on its
//! output. Its devices are served like any other driver's: readings go out through a
//! [`Publisher`], commands pass the registry's guard (watchdog, writer-left stop, e-stop)
//! before they reach it.
//!
//! Supervision: a program that exits, does not answer a setup within `setup_timeout`,
//! writes a frame that is malformed, too long (checked from its 4-byte length, before
//! anything is allocated) or bigger than its device's `data_size`, sends more than
//! `max_rate` frames a second, or leaves more than [`MAX_QUEUED`] frames of its input
//! unread, is killed (its whole process group), logged under its name, and its devices
//! are reported failed (clients waiting on a setup get `e`; clients with the error channel
//! get `f`); it is started again after a backoff (doubling from `restart_backoff.initial`
//! to `restart_backoff.max`) and the devices that still have clients are set up again. A
//! new run's readings are numbered afresh (`DeviceData::seq` from 1), and reach every
//! client and front end at once (the kit's one rule, `player_kit::fresh`).
//! Its standard error is logged line by line under its name (lines cut at
//! [`MAX_LINE`] bytes, escaped, rate-limited).
//!
//! Input to the program never queues without bound: commands, readings of the devices it
//! reads and subscriber counts keep only the newest unsent one per device; a stop drops the
//! unsent command of its device; configs beyond [`MAX_QUEUED_CONFIGS`] unsent are dropped
//! and logged.
//!
//! A program may read other devices of its robot (a virtual device): its read requests go
//! to the registry through the [`DeviceSource`] as a read-only holder.
//!
//! The frames are the kit's [`player_kit::program::frame`], shared with driver programs
//! written in Rust. A program serving `M`, `H` or `G` answers configs with its `x` replies
//! (`answers`).

use actix::prelude::*;
use answers::PendingAnswers;
use bytes::Bytes;
use child::{Failed, FromChild, Running};
use frame::{FromProgram, Hello, Refusal, ToProgram};
use plan::Plan;
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{
    Command, Config, DataRecipient, DeviceData, DeviceDataBatch, DeviceState, DriverError,
    Publisher, SessionId, Setup, Shutdown, StatusSink, Stop, StopReason, Subscribers, Timestamp,
};
use player_kit::link::Backoff;
use player_kit::log::{code, escape, Throttle};
use player_kit::plain::{Driver, Reply};
use player_kit::program::frame;
use player_kit::source::DeviceSource;
use slog::{debug, error, info, o, warn, Logger};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;
use tokio::sync::oneshot;

mod answers;
mod child;
mod outbox;
mod plan;

pub use plan::{BackoffParams, DeviceParams, ProgramParams};

/// Longest standard-error line logged; the rest of a longer line is dropped.
pub const MAX_LINE: usize = 1000;

/// Most frames waiting in the program's input before it is taken as stuck and restarted.
pub const MAX_QUEUED: usize = 1024;

/// Most client configs waiting in the program's input; more are dropped and logged.
pub const MAX_QUEUED_CONFIGS: usize = 256;

/// Bytes read from the program's output at once (then the reader yields).
const CHUNK: usize = 16 * 1024;

/// A program that ran this long before failing restarts after the initial backoff again.
const STABLE: Duration = Duration::from_secs(30);

/// Where a setup's answer goes (the registry's `Setup` waits on it).
type SetupWaiter = oneshot::Sender<Result<(), DriverError>>;

/// The `program` driver actor.
pub struct ProgramDriver {
    plan: Plan,
    hello: Hello,
    publisher: Publisher,
    readers: HashMap<u8, HashSet<SessionId>>,
    source: DeviceSource,
    status: StatusSink,
    log: Logger,
    throttle: Throttle,
    /// The program's own log lines (`l` frames): at most 50 a second.
    log_lines: Throttle,
    child: Option<Running>,
    gen: u64,
    backoff: Backoff,
    /// Devices the registry has set up (they have clients).
    up: BTreeSet<u8>,
    /// Devices reported failed (by a program's failure or its `e` frame).
    failed: BTreeSet<u8>,
    /// Setups sent to the program and not yet answered, with who waits for them (none:
    /// a setup again after a restart).
    pending: HashMap<u8, (u64, Vec<SetupWaiter>)>,
    /// Numbers the setups sent, so a timeout only fails the setup it was armed for.
    setup_seq: u64,
    /// Devices of the robot the program reads.
    reads: BTreeSet<u8>,
    next_config: u32,
    /// Where replies to recent configs of answering devices go.
    answers: PendingAnswers,
    terminating: bool,
    /// The client whose request set a device up last, for the lines about its answer.
    opened_by: std::sync::Arc<str>,
}

impl ProgramDriver {
    fn new(ctx: &DriverContext, plan: Plan) -> Self {
        let hello = Hello {
            version: frame::VERSION,
            robot: ctx.robot.clone(),
            devices: plan.devices.clone(),
            params: plan.options.clone(),
        };
        ProgramDriver {
            log: ctx.logger.new(o!("program" => plan.name.clone())),
            backoff: Backoff::new(plan.backoff_initial, plan.backoff_max),
            plan,
            hello,
            publisher: Publisher::new(),
            readers: HashMap::new(),
            source: ctx.source.clone(),
            status: ctx.status.clone(),
            throttle: Throttle::new(Duration::from_secs(10), 5),
            log_lines: Throttle::new(Duration::from_secs(1), 50),
            child: None,
            gen: 0,
            up: BTreeSet::new(),
            failed: BTreeSet::new(),
            pending: HashMap::new(),
            setup_seq: 0,
            reads: BTreeSet::new(),
            next_config: 0,
            answers: PendingAnswers::default(),
            terminating: false,
            opened_by: "".into(),
        }
    }

    fn running(&self, gen: u64) -> bool {
        self.child.as_ref().is_some_and(|c| c.gen == gen)
    }

    /// Queues a frame for the program; one that leaves too much unread is dropped.
    fn send(&mut self, frame: ToProgram, ctx: &mut Context<Self>) {
        let Some(c) = &self.child else { return };
        let gen = c.gen;
        if c.send(frame) > MAX_QUEUED {
            self.fail(
                gen,
                format!("does not read its input ({MAX_QUEUED} frames unread)"),
                ctx,
            );
        }
    }

    /// Sends a setup (once per device at a time) and arms its timeout.
    fn setup_on_program(
        &mut self,
        device: u8,
        waiter: Option<SetupWaiter>,
        ctx: &mut Context<Self>,
    ) {
        let Some(gen) = self.child.as_ref().map(|c| c.gen) else {
            if let Some(w) = waiter {
                let _ = w.send(Err(self.not_running()));
            }
            return;
        };
        if let Some((_, waiters)) = self.pending.get_mut(&device) {
            waiters.extend(waiter);
            return;
        }
        self.setup_seq += 1;
        let seq = self.setup_seq;
        self.pending
            .insert(device, (seq, waiter.into_iter().collect()));
        self.send(ToProgram::Setup { device }, ctx);
        let timeout = self.plan.setup_timeout;
        ctx.run_later(timeout, move |act, ctx| {
            if act.running(gen) && act.pending.get(&device).is_some_and(|p| p.0 == seq) {
                let reason = format!(
                    "did not answer the setup of device {} within {:.1} s (setup_timeout)",
                    code(device),
                    timeout.as_secs_f64()
                );
                act.fail(gen, reason, ctx);
            }
        });
    }

    fn not_running(&self) -> DriverError {
        DriverError::link(format!(
            "driver program '{}' is not running (it is restarted with backoff)",
            self.plan.name
        ))
    }

    fn protocol_error(&mut self, gen: u64, what: String, ctx: &mut Context<Self>) {
        self.fail(gen, format!("broke the protocol: {what}"), ctx);
    }

    fn handle_frame(&mut self, gen: u64, frame: FromProgram, ctx: &mut Context<Self>) {
        match frame {
            FromProgram::SetupAnswer { device, result } => {
                self.setup_answer(gen, device, result, ctx)
            }
            FromProgram::Data {
                device,
                timestamp,
                payload,
            } => self.data(gen, device, timestamp, payload, ctx),
            FromProgram::ConfigReply { id, payload } => {
                // 0.7.4a has no config replies to clients: the reply is logged, and sent
                // as an answer when the device is one that answers (answers.rs).
                debug!(self.log, "config reply"; "id" => id, "payload" => escape(&payload, 64));
                if let Some(to) = self.answers.to(id) {
                    if let Err(e) = to.send_one(payload) {
                        warn!(self.log, "config reply not answered"; "id" => id, "error" => %e);
                    }
                }
            }
            FromProgram::Log { level, text } => self.program_log(level, &text),
            FromProgram::Error { device, text } => {
                if self.plan.device(device).is_none() {
                    return self.protocol_error(
                        gen,
                        format!("error for unknown device {}", code(device)),
                        ctx,
                    );
                }
                let text = escape(text.as_bytes(), 300);
                self.status.report(&[device], DeviceState::Failed, &text);
                self.failed.insert(device);
            }
            FromProgram::Read { device, on } => self.read(gen, device, on, ctx),
        }
    }

    /// The program answered the setup of `device`: the clients waiting get the answer.
    fn setup_answer(
        &mut self,
        gen: u64,
        device: u8,
        result: Result<(), Refusal>,
        ctx: &mut Context<Self>,
    ) {
        if self.plan.device(device).is_none() {
            return self.protocol_error(
                gen,
                format!("setup answer for unknown device {}", code(device)),
                ctx,
            );
        }
        let Some((_, waiters)) = self.pending.remove(&device) else {
            debug!(self.log, "setup answer nobody waits for"; "device" => code(device));
            return;
        };
        let result = result.map_err(|e| {
            DriverError::refused(format!(
                "driver program '{}': {}",
                self.plan.name,
                escape(e.0.as_bytes(), 300)
            ))
        });
        match &result {
            Ok(()) => {
                self.up.insert(device);
                if self.failed.remove(&device) {
                    self.status
                        .report(&[device], DeviceState::Up, "driver program running again");
                }
            }
            Err(e) => {
                info!(self.log, "driver program refused a setup"; "device" => code(device), "error" => %e, "opened_by" => &*self.opened_by);
                if waiters.is_empty() {
                    // A setup again after a restart: the device stays failed.
                    self.status.report(&[device], DeviceState::Failed, &e.text);
                    self.failed.insert(device);
                }
            }
        }
        for w in waiters {
            let _ = w.send(result.clone());
        }
    }

    /// A reading of `device` from the program, published if it fits and the device is
    /// set up (or being set up).
    fn data(
        &mut self,
        gen: u64,
        device: u8,
        timestamp: Option<(u32, u32)>,
        payload: Vec<u8>,
        ctx: &mut Context<Self>,
    ) {
        let Some(info) = self.plan.device(device) else {
            return self.protocol_error(
                gen,
                format!("data for unknown device {}", code(device)),
                ctx,
            );
        };
        if payload.len() > usize::from(info.data_size) {
            let what = format!(
                "{} bytes of data for device {} (data_size {})",
                payload.len(),
                code(device),
                info.data_size
            );
            return self.protocol_error(gen, what, ctx);
        }
        // A reading sent while its setup is answered is kept for the first readers.
        if !self.up.contains(&device) && !self.pending.contains_key(&device) {
            return;
        }
        if self.failed.remove(&device) {
            self.status.report(
                &[device],
                DeviceState::Up,
                "driver program publishing again",
            );
        }
        let at = timestamp.map_or_else(Timestamp::now, |(sec, usec)| Timestamp { sec, usec });
        self.publisher.publish_at(device, Bytes::from(payload), at);
    }

    /// A line for the log from the program (at most 50 a second, with a count of the rest).
    fn program_log(&mut self, level: u8, text: &str) {
        let Some(unlogged) = self.log_lines.allow("log") else {
            return;
        };
        let text = escape(text.as_bytes(), MAX_LINE);
        let log = if unlogged > 0 {
            self.log.new(o!("log_lines_unlogged" => unlogged))
        } else {
            self.log.clone()
        };
        match level {
            frame::level::ERROR => error!(log, "{}", text),
            frame::level::WARNING => warn!(log, "{}", text),
            frame::level::INFO => info!(log, "{}", text),
            _ => debug!(log, "{}", text),
        }
    }

    fn read(&mut self, gen: u64, device: u8, on: bool, ctx: &mut Context<Self>) {
        let me = DataRecipient::of(&ctx.address());
        if !on {
            if self.reads.remove(&device) {
                let release = self.source.read(device, me, false);
                actix::spawn(async move {
                    let _ = release.await;
                });
            }
            return;
        }
        if self.plan.device(device).is_some() {
            let result = Err(format!("device {} is the program's own", code(device)).into());
            return self.send(ToProgram::ReadAnswer { device, result }, ctx);
        }
        if !self.reads.insert(device) {
            return self.send(
                ToProgram::ReadAnswer {
                    device,
                    result: Ok(()),
                },
                ctx,
            );
        }
        let read = self.source.read(device, me.clone(), true);
        let source = self.source.clone();
        ctx.spawn(read.into_actor(self).map(move |result, act, ctx| {
            if !act.running(gen) || !act.reads.contains(&device) {
                // The program went away or stopped reading meanwhile: give the device back.
                if result.is_ok() && !act.reads.contains(&device) {
                    let release = source.read(device, me, false);
                    actix::spawn(async move {
                        let _ = release.await;
                    });
                }
                return;
            }
            if result.is_err() {
                act.reads.remove(&device);
            }
            let result = result.map_err(|e| e.to_string().into());
            act.send(ToProgram::ReadAnswer { device, result }, ctx);
        }));
    }
}

impl Actor for ProgramDriver {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(256);
        self.start_program(ctx);
    }
}

impl Driver for ProgramDriver {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        msg: Setup,
        ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        let (tx, rx) = oneshot::channel();
        self.opened_by = msg.client;
        if self.terminating {
            let _ = tx.send(Err(DriverError::other("the server is shutting down")));
        } else {
            self.setup_on_program(msg.device, Some(tx), ctx);
        }
        Reply::later(
            async move {
                rx.await
                    .unwrap_or_else(|_| Err(DriverError::other("setup abandoned")))
            }
            .into_actor(self),
        )
    }

    fn shutdown(&mut self, msg: Shutdown, ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.up.remove(&msg.device);
        self.failed.remove(&msg.device);
        self.send(ToProgram::Shutdown { device: msg.device }, ctx);
        Reply::Now(())
    }

    fn command(&mut self, msg: Command, ctx: &mut Context<Self>) {
        let payload = msg.payload.to_vec();
        self.send(
            ToProgram::Command {
                device: msg.device,
                payload,
            },
            ctx,
        );
    }

    fn config(&mut self, msg: Config, ctx: &mut Context<Self>) {
        let Some(c) = &self.child else { return };
        if c.outbox.borrow().configs >= MAX_QUEUED_CONFIGS {
            if let Some(unlogged) = self.throttle.allow("config dropped") {
                warn!(self.log, "config dropped: the driver program has not read the ones before"; "client" => &msg.client, "device" => code(msg.device), "dropped_unlogged" => unlogged);
            }
            return;
        }
        self.next_config = self.next_config.wrapping_add(1);
        self.answers
            .expect(self.next_config, msg.device, msg.answer.clone());
        let frame = ToProgram::Config {
            device: msg.device,
            id: self.next_config,
            payload: msg.payload.to_vec(),
        };
        self.send(frame, ctx);
    }

    fn stop(&mut self, msg: Stop, ctx: &mut Context<Self>) {
        let reason = match msg.reason {
            StopReason::Watchdog => frame::stop::WATCHDOG,
            StopReason::WriterLeft => frame::stop::WRITER_LEFT,
            StopReason::EmergencyStop => frame::stop::EMERGENCY,
        };
        self.send(
            ToProgram::Stop {
                device: msg.device,
                reason,
            },
            ctx,
        );
    }

    fn subscribers(&mut self, msg: Subscribers, ctx: &mut Context<Self>) {
        let device = msg.device;
        let set = self.readers.entry(device).or_default();
        if msg.recipient.is_some() {
            set.insert(msg.session);
        } else {
            set.remove(&msg.session);
        }
        let count = set.len().min(u32::MAX as usize) as u32;
        self.publisher.set_subscribers(msg);
        self.send(ToProgram::Subscribers { device, count }, ctx);
    }

    fn terminate(&mut self, ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.terminating = true;
        let exited = self.child.as_mut().and_then(|c| c.exited.take());
        if let Some(gen) = self.child.as_ref().map(|c| c.gen) {
            self.fail(gen, "stopped: the server is shutting down".into(), ctx);
        }
        info!(self.log, "driver program stopped");
        Reply::later(
            async move {
                if let Some(rx) = exited {
                    let _ = tokio::time::timeout(Duration::from_secs(2), rx).await;
                }
            }
            .into_actor(self),
        )
    }
}

player_kit::driver_handlers!(ProgramDriver);

impl Handler<FromChild> for ProgramDriver {
    type Result = ();

    fn handle(&mut self, msg: FromChild, ctx: &mut Self::Context) {
        if self.running(msg.gen) {
            self.handle_frame(msg.gen, msg.frame, ctx);
        }
    }
}

impl Handler<Failed> for ProgramDriver {
    type Result = ();

    fn handle(&mut self, msg: Failed, ctx: &mut Self::Context) {
        if !msg.eof {
            return self.fail(msg.gen, msg.reason, ctx);
        }
        // Give its exit status a moment to arrive: it says more than "closed its output".
        ctx.run_later(Duration::from_millis(300), move |act, ctx| {
            act.fail(msg.gen, msg.reason, ctx);
        });
    }
}

impl Handler<DeviceData> for ProgramDriver {
    type Result = ();

    fn handle(&mut self, msg: DeviceData, ctx: &mut Self::Context) {
        if self.reads.contains(&msg.device) {
            self.send(reading(&msg), ctx);
        }
    }
}

impl Handler<DeviceDataBatch> for ProgramDriver {
    type Result = ();

    fn handle(&mut self, msg: DeviceDataBatch, ctx: &mut Self::Context) {
        for d in msg.0.iter() {
            if self.reads.contains(&d.device) {
                self.send(reading(d), ctx);
            }
        }
    }
}

fn reading(d: &DeviceData) -> ToProgram {
    ToProgram::Reading {
        device: d.device,
        sec: d.timestamp.sec,
        usec: d.timestamp.usec,
        payload: d.data.to_vec(),
    }
}

/// Registers the `program` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("program", |ctx: DriverContext| {
        let (plan, specs) = Plan::new(ctx.params()?, &ctx.devices, &ctx.base_dir)?;
        Ok(StartedDriver::of(
            &ProgramDriver::new(&ctx, plan).start(),
            specs,
        ))
    });
}
