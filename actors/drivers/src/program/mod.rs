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
//! ([`answers`]).

mod answers;

use actix::prelude::*;
use answers::PendingAnswers;
use bytes::Bytes;
use frame::{DeviceInfo, FrameReader, FromProgram, Hello, ToProgram};
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{
    Command, Config, DataRecipient, DeviceData, DeviceDataBatch, DeviceSource, DeviceSpec,
    DeviceState, DriverError, DriverHandle, Publisher, SessionId, Setup, Shutdown, StatusSink,
    Stop, StopReason, Subscribers, Terminate, Timestamp, DEFAULT_COMMAND_TIMEOUT,
};
use player_kit::link::Backoff;
use player_kit::log::{code, escape, Throttle};
use player_kit::program::frame;
use serde::Deserialize;
use slog::{debug, error, info, o, warn, Logger};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::oneshot;
use tokio::sync::Notify;

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

/// One device the program serves (`[[robot.driver.params.device]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceParams {
    /// The device code (one character).
    pub code: String,
    /// The largest data payload the program may publish (bytes).
    #[serde(default)]
    pub data_size: u16,
    /// The exact size of its commands (for access `w` or `a`).
    #[serde(default)]
    pub command_size: u16,
    /// `r` (data only), `w` (commands only) or `a` (both).
    #[serde(default = "read_access")]
    pub access: String,
    /// Its commands keep something moving: the command watchdog applies.
    #[serde(default)]
    pub moving: bool,
}

fn read_access() -> String {
    "r".into()
}

/// The restart backoff, seconds.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackoffParams {
    /// The first restart's delay.
    #[serde(default = "half")]
    pub initial: f64,
    /// The longest delay (it doubles after each failure up to this).
    #[serde(default = "ten")]
    pub max: f64,
}

impl Default for BackoffParams {
    fn default() -> Self {
        BackoffParams {
            initial: half(),
            max: ten(),
        }
    }
}

fn half() -> f64 {
    0.5
}
fn ten() -> f64 {
    10.0
}
fn default_max_rate() -> u32 {
    2000
}

/// Parameters of the `program` driver.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramParams {
    /// The program and its arguments. A first element containing `/` is resolved against
    /// the configuration file's directory, which is also the program's working directory.
    pub command: Vec<String>,
    /// Its name in the log (default: the file name of the script or program).
    #[serde(default)]
    pub name: Option<String>,
    /// Environment variables added to the server's.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The devices it serves.
    pub device: Vec<DeviceParams>,
    /// Seconds the program may take to answer a setup.
    #[serde(default = "ten")]
    pub setup_timeout: f64,
    /// Delays between restarts.
    #[serde(default)]
    pub restart_backoff: BackoffParams,
    /// Most frames a second the program may send (bursts of one second's worth allowed);
    /// more is a flood and the program is restarted.
    #[serde(default = "default_max_rate")]
    pub max_rate: u32,
    /// The program's own settings, any table: sent to it as JSON in its hello.
    #[serde(default)]
    pub options: Option<serde_json::Value>,
}

fn seconds(what: &str, v: f64) -> Result<Duration, DriverError> {
    if v.is_finite() && v > 0.0 && v <= 1e6 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(DriverError::params(format!(
            "driver 'program': {what} must be a positive number of seconds"
        )))
    }
}

/// What the actor needs to start the program, checked from the parameters.
#[derive(Debug, Clone)]
struct Plan {
    name: String,
    argv: Vec<String>,
    env: BTreeMap<String, String>,
    cwd: PathBuf,
    devices: Vec<DeviceInfo>,
    setup_timeout: Duration,
    backoff_initial: Duration,
    backoff_max: Duration,
    max_rate: u32,
    max_frame: usize,
    options: String,
}

impl Plan {
    fn new(ctx: &DriverContext) -> Result<(Plan, Vec<DeviceSpec>), DriverError> {
        let p: ProgramParams = ctx.params()?;
        let err = |m: String| DriverError::params(format!("driver 'program': {m}"));
        let Some(first) = p.command.first() else {
            return Err(err("command is empty".into()));
        };
        let mut argv = p.command.clone();
        if first.contains('/') {
            argv[0] = ctx.path(first).to_string_lossy().into_owned();
        }
        let name = p.name.clone().unwrap_or_else(|| {
            let script = p.command[1..]
                .iter()
                .map(|a| ctx.path(a))
                .find(|path| path.is_file());
            let path = script.unwrap_or_else(|| PathBuf::from(first));
            path.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| first.clone())
        });
        let mut devices = Vec::new();
        let mut specs = Vec::new();
        for d in &p.device {
            let c = match d.code.as_bytes() {
                [c] if c.is_ascii_graphic() => *c,
                _ => {
                    return Err(err(format!(
                        "device '{}' is not a one-character code",
                        d.code
                    )))
                }
            };
            if !ctx.devices.contains(&c) {
                return Err(err(format!(
                    "device '{}' is described but not in this driver's devices",
                    d.code
                )));
            }
            let (readable, writable) = match d.access.as_str() {
                "r" => (true, false),
                "w" => (false, true),
                "a" => (true, true),
                other => {
                    return Err(err(format!(
                        "device '{}': access '{other}' is not r, w or a",
                        d.code
                    )))
                }
            };
            if readable && d.data_size == 0 {
                return Err(err(format!(
                    "device '{}': data_size must be 1 to 65535",
                    d.code
                )));
            }
            if writable && d.command_size == 0 {
                return Err(err(format!(
                    "device '{}': access '{}' needs a command_size of 1 to 65535",
                    d.code, d.access
                )));
            }
            if d.moving && !writable {
                return Err(err(format!(
                    "device '{}': moving needs access w or a",
                    d.code
                )));
            }
            devices.push(DeviceInfo {
                code: c,
                access: d.access.as_bytes()[0],
                data_size: if readable { d.data_size } else { 0 },
                command_size: if writable { d.command_size } else { 0 },
                moving: d.moving,
            });
            specs.push(DeviceSpec {
                code: c,
                readable,
                command_size: writable.then_some(usize::from(d.command_size)),
                command_timeout: d.moving.then_some(DEFAULT_COMMAND_TIMEOUT),
            });
        }
        for c in &ctx.devices {
            if !devices.iter().any(|d| d.code == *c) {
                return Err(err(format!(
                    "device {} has no [[robot.driver.params.device]] entry",
                    code(*c)
                )));
            }
        }
        let largest = devices.iter().map(|d| usize::from(d.data_size)).max();
        // Room for the largest reading and its 10 header bytes, and for text frames.
        let max_frame = (largest.unwrap_or(0) + 16).clamp(8192, frame::MAX_FRAME);
        let rate = p.max_rate.max(1);
        Ok((
            Plan {
                name,
                argv,
                env: p.env.clone(),
                cwd: ctx.base_dir.clone(),
                devices,
                setup_timeout: seconds("setup_timeout", p.setup_timeout)?,
                backoff_initial: seconds("restart_backoff.initial", p.restart_backoff.initial)?,
                backoff_max: seconds("restart_backoff.max", p.restart_backoff.max)?,
                max_rate: rate,
                max_frame,
                options: p
                    .options
                    .as_ref()
                    .map_or_else(|| "{}".to_string(), |v| v.to_string()),
            },
            specs,
        ))
    }

    fn device(&self, c: u8) -> Option<&DeviceInfo> {
        self.devices.iter().find(|d| d.code == c)
    }
}

/// The frames waiting for the program's input, in order, with the newest-wins slots
/// merged in place (see the module documentation).
#[derive(Default)]
struct Outbox {
    queue: VecDeque<ToProgram>,
    configs: usize,
    closed: bool,
}

impl Outbox {
    /// Replaces a queued frame `same` matches, or appends `frame`.
    fn merge(&mut self, frame: ToProgram, same: impl Fn(&ToProgram) -> bool) {
        match self.queue.iter_mut().find(|f| same(f)) {
            Some(slot) => *slot = frame,
            None => self.queue.push_back(frame),
        }
    }

    fn push(&mut self, frame: ToProgram) {
        match &frame {
            ToProgram::Command { device, .. } => {
                let d = *device;
                self.merge(
                    frame,
                    |f| matches!(f, ToProgram::Command { device, .. } if *device == d),
                )
            }
            ToProgram::Subscribers { device, .. } => {
                let d = *device;
                self.merge(
                    frame,
                    |f| matches!(f, ToProgram::Subscribers { device, .. } if *device == d),
                )
            }
            ToProgram::Reading { device, .. } => {
                let d = *device;
                self.merge(
                    frame,
                    |f| matches!(f, ToProgram::Reading { device, .. } if *device == d),
                )
            }
            ToProgram::Stop { device, .. } => {
                let d = *device;
                // The unsent command of this device is void: the stop must be its last word.
                self.queue
                    .retain(|f| !matches!(f, ToProgram::Command { device, .. } if *device == d));
                self.merge(
                    frame,
                    |f| matches!(f, ToProgram::Stop { device, .. } if *device == d),
                )
            }
            ToProgram::Config { .. } => {
                self.configs += 1;
                self.queue.push_back(frame)
            }
            _ => self.queue.push_back(frame),
        }
    }

    /// Every queued frame, encoded.
    fn take(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.queue.drain(..) {
            f.encode(&mut out);
        }
        self.configs = 0;
        out
    }
}

/// Where a setup's answer goes (the registry's `Setup` waits on it).
type SetupWaiter = oneshot::Sender<Result<(), DriverError>>;

/// A running program.
struct Running {
    gen: u64,
    pid: i32,
    started: Instant,
    outbox: Rc<RefCell<Outbox>>,
    wake: Rc<Notify>,
    exited: Option<oneshot::Receiver<()>>,
}

impl Running {
    fn send(&self, frame: ToProgram) -> usize {
        let mut o = self.outbox.borrow_mut();
        o.push(frame);
        self.wake.notify_one();
        o.queue.len()
    }

    /// Kills the program's whole process group (its children too).
    fn kill(&self) {
        // SAFETY: kill(2) on the process group the program leads (it was started with
        // process_group(0), so its pgid is its pid); no memory is involved.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
        self.outbox.borrow_mut().closed = true;
        self.wake.notify_one();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A parsed frame from the program `gen`.
#[derive(Message)]
#[rtype(result = "()")]
struct FromChild {
    gen: u64,
    frame: FromProgram,
}

/// The program `gen` must be dropped: why.
#[derive(Message)]
#[rtype(result = "()")]
struct Failed {
    gen: u64,
    reason: String,
    /// Its output ended: wait a moment for its exit status, which says more.
    eof: bool,
}

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
            publisher: ctx.publisher(),
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

    fn start_program(&mut self, ctx: &mut Context<Self>) {
        if self.terminating || self.child.is_some() {
            return;
        }
        self.gen += 1;
        self.answers.clear();
        let gen = self.gen;
        let mut cmd = tokio::process::Command::new(&self.plan.argv[0]);
        cmd.args(&self.plan.argv[1..])
            .envs(&self.plan.env)
            .current_dir(&self.plan.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        // SAFETY: the closure runs in the child between fork and exec and only calls
        // prctl(2), which is async-signal-safe: the program is killed if the thread that
        // started it (the server's drivers' thread) dies, so a crashed server leaves no
        // orphan.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let reason = format!("cannot start {:?}: {e}", self.plan.argv);
                self.after_failure(reason, Duration::ZERO, ctx);
                return;
            }
        };
        let pid = child.id().map_or(0, |p| p as i32);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            self.after_failure("its pipes were not opened".into(), Duration::ZERO, ctx);
            return;
        };
        info!(self.log, "driver program started"; "pid" => pid, "command" => escape(self.plan.argv.join(" ").as_bytes(), 300));
        let outbox = Rc::new(RefCell::new(Outbox::default()));
        let wake = Rc::new(Notify::new());
        let (exit_tx, exit_rx) = oneshot::channel();
        let me = ctx.address();
        let log = self.log.clone();
        actix::spawn(async move {
            let status = child.wait().await;
            let _ = exit_tx.send(());
            let reason = match status {
                Ok(s) => format!("exited ({s})"),
                Err(e) => format!("could not be waited for: {e}"),
            };
            me.do_send(Failed {
                gen,
                reason,
                eof: false,
            });
        });
        actix::spawn(write_frames(stdin, outbox.clone(), wake.clone()));
        actix::spawn(read_frames(
            stdout,
            ctx.address(),
            gen,
            self.plan.max_frame,
            self.plan.max_rate,
        ));
        actix::spawn(log_stderr(stderr, log));
        let running = Running {
            gen,
            pid,
            started: Instant::now(),
            outbox,
            wake,
            exited: Some(exit_rx),
        };
        running.send(ToProgram::Hello(self.hello.clone()));
        self.child = Some(running);
        // The devices that still have clients are set up again.
        for device in self.up.clone() {
            self.setup_on_program(device, None, ctx);
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

    /// Drops the program `gen`: kills it, fails its devices, schedules a restart.
    fn fail(&mut self, gen: u64, reason: String, ctx: &mut Context<Self>) {
        if !self.running(gen) {
            return;
        }
        let child = self.child.take().expect("running");
        let ran = child.started.elapsed();
        drop(child);
        self.after_failure(reason, ran, ctx);
    }

    fn after_failure(&mut self, reason: String, ran: Duration, ctx: &mut Context<Self>) {
        if ran >= STABLE {
            self.backoff.reset();
        }
        let wait = self.backoff.next_delay();
        if !self.terminating {
            if let Some(unlogged) = self.throttle.allow("failed") {
                warn!(self.log, "driver program failed: killed, restarting"; "reason" => escape(reason.as_bytes(), 300), "restart_in_s" => wait.as_secs_f64(), "failures_unlogged" => unlogged);
            }
        }
        let text = format!("driver program '{}' {reason}", self.plan.name);
        for (_, (_, waiters)) in self.pending.drain() {
            for w in waiters {
                let _ = w.send(Err(DriverError::link(text.clone())));
            }
        }
        let failed: Vec<u8> = self.up.iter().copied().collect();
        self.status.report(&failed, DeviceState::Failed, &text);
        self.failed.extend(failed);
        // The next run's readings are a new stream, numbered afresh; every consumer takes
        // them at once (player_kit::fresh).
        for d in &self.plan.devices {
            self.publisher.clear(d.code);
            self.publisher.renumber(d.code);
        }
        let me = DataRecipient::of(&ctx.address());
        for device in std::mem::take(&mut self.reads) {
            let release = self.source.read(device, me.clone(), false);
            actix::spawn(async move {
                let _ = release.await;
            });
        }
        if !self.terminating {
            ctx.run_later(wait, |act, ctx| act.start_program(ctx));
        }
    }

    fn protocol_error(&mut self, gen: u64, what: String, ctx: &mut Context<Self>) {
        self.fail(gen, format!("broke the protocol: {what}"), ctx);
    }

    fn handle_frame(&mut self, gen: u64, frame: FromProgram, ctx: &mut Context<Self>) {
        let known = |d: u8| self.plan.device(d).cloned();
        match frame {
            FromProgram::SetupAnswer { device, result } => {
                if known(device).is_none() {
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
                            self.status.report(
                                &[device],
                                DeviceState::Up,
                                "driver program running again",
                            );
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
            FromProgram::Data {
                device,
                timestamp,
                payload,
            } => {
                let Some(info) = known(device) else {
                    return self.protocol_error(
                        gen,
                        format!("data for unknown device {}", code(device)),
                        ctx,
                    );
                };
                if payload.len() > usize::from(info.data_size) {
                    return self.protocol_error(
                        gen,
                        format!(
                            "{} bytes of data for device {} (data_size {})",
                            payload.len(),
                            code(device),
                            info.data_size
                        ),
                        ctx,
                    );
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
                let at =
                    timestamp.map_or_else(Timestamp::now, |(sec, usec)| Timestamp { sec, usec });
                self.publisher.publish_at(device, Bytes::from(payload), at);
            }
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
            FromProgram::Log { level, text } => {
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
            FromProgram::Error { device, text } => {
                if known(device).is_none() {
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

/// Writes queued frames to the program's input until it is closed.
async fn write_frames(mut stdin: ChildStdin, outbox: Rc<RefCell<Outbox>>, wake: Rc<Notify>) {
    loop {
        let (bytes, closed) = {
            let mut o = outbox.borrow_mut();
            (o.take(), o.closed)
        };
        if closed {
            return;
        }
        if bytes.is_empty() {
            wake.notified().await;
            continue;
        }
        if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
            // The program is gone; its exit is reported by the task waiting for it.
            return;
        }
    }
}

/// Reads frames from the program's output in bounded chunks, yielding between chunks,
/// and hands them to the actor one at a time (each waits until the actor took the last).
async fn read_frames(
    mut stdout: ChildStdout,
    me: Addr<ProgramDriver>,
    gen: u64,
    max_frame: usize,
    max_rate: u32,
) {
    let fail = |reason: String, eof: bool| me.do_send(Failed { gen, reason, eof });
    let mut reader = FrameReader::new(max_frame);
    let mut buf = vec![0u8; CHUNK];
    let mut tokens = f64::from(max_rate);
    let mut refilled = Instant::now();
    loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) => return fail("closed its output".into(), true),
            Ok(n) => n,
            Err(e) => return fail(format!("output unreadable: {e}"), false),
        };
        reader.extend(&buf[..n]);
        loop {
            let frame = match reader.next_frame() {
                Ok(None) => break,
                Ok(Some((kind, body))) => FromProgram::decode(kind, body),
                Err(e) => return fail(format!("broke the protocol: {e}"), false),
            };
            let frame = match frame {
                Ok(f) => f,
                Err(e) => return fail(format!("broke the protocol: {e}"), false),
            };
            let now = Instant::now();
            tokens = (tokens + now.duration_since(refilled).as_secs_f64() * f64::from(max_rate))
                .min(f64::from(max_rate));
            refilled = now;
            if tokens < 1.0 {
                return fail(
                    format!("floods: more than {max_rate} frames a second (max_rate)"),
                    false,
                );
            }
            tokens -= 1.0;
            if me.send(FromChild { gen, frame }).await.is_err() {
                return;
            }
        }
        tokio::task::yield_now().await;
    }
}

/// Logs the program's standard error line by line (cut at [`MAX_LINE`], escaped, at most
/// 50 lines a second with a count of the rest).
async fn log_stderr(mut stderr: ChildStderr, log: Logger) {
    let mut buf = vec![0u8; 4096];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut throttle = Throttle::new(Duration::from_secs(1), 50);
    let emit = |line: &[u8], throttle: &mut Throttle| {
        if let Some(unlogged) = throttle.allow("stderr") {
            info!(log, "driver program: {}", escape(line, MAX_LINE); "stderr_lines_unlogged" => unlogged);
        }
    };
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                if !cut {
                    emit(&line, &mut throttle);
                }
                line.clear();
                cut = false;
            } else if !cut {
                line.push(b);
                if line.len() >= MAX_LINE {
                    emit(&line, &mut throttle);
                    line.clear();
                    cut = true;
                }
            }
        }
        tokio::task::yield_now().await;
    }
    if !line.is_empty() && !cut {
        emit(&line, &mut throttle);
    }
}

impl Actor for ProgramDriver {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(256);
        self.start_program(ctx);
    }
}

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

impl Handler<Setup> for ProgramDriver {
    type Result = ResponseActFuture<Self, Result<(), DriverError>>;

    fn handle(&mut self, msg: Setup, ctx: &mut Self::Context) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.opened_by = msg.client;
        if self.terminating {
            let _ = tx.send(Err(DriverError::other("the server is shutting down")));
        } else {
            self.setup_on_program(msg.device, Some(tx), ctx);
        }
        Box::pin(
            async move {
                rx.await
                    .unwrap_or_else(|_| Err(DriverError::other("setup abandoned")))
            }
            .into_actor(self),
        )
    }
}

impl Handler<Shutdown> for ProgramDriver {
    type Result = ();

    fn handle(&mut self, msg: Shutdown, ctx: &mut Self::Context) {
        self.up.remove(&msg.device);
        self.failed.remove(&msg.device);
        self.publisher.clear(msg.device);
        self.send(ToProgram::Shutdown { device: msg.device }, ctx);
    }
}

impl Handler<Command> for ProgramDriver {
    type Result = ();

    fn handle(&mut self, msg: Command, ctx: &mut Self::Context) {
        let payload = msg.payload.to_vec();
        self.send(
            ToProgram::Command {
                device: msg.device,
                payload,
            },
            ctx,
        );
    }
}

impl Handler<Config> for ProgramDriver {
    type Result = ();

    fn handle(&mut self, msg: Config, ctx: &mut Self::Context) {
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
}

impl Handler<Stop> for ProgramDriver {
    type Result = ();

    fn handle(&mut self, msg: Stop, ctx: &mut Self::Context) {
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
}

impl Handler<Subscribers> for ProgramDriver {
    type Result = ();

    fn handle(&mut self, msg: Subscribers, ctx: &mut Self::Context) {
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

impl Handler<Terminate> for ProgramDriver {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: Terminate, ctx: &mut Self::Context) -> Self::Result {
        self.terminating = true;
        let exited = self.child.as_mut().and_then(|c| c.exited.take());
        if let Some(gen) = self.child.as_ref().map(|c| c.gen) {
            self.fail(gen, "stopped: the server is shutting down".into(), ctx);
        }
        info!(self.log, "driver program stopped");
        Box::pin(
            async move {
                if let Some(rx) = exited {
                    let _ = tokio::time::timeout(Duration::from_secs(2), rx).await;
                }
            }
            .into_actor(self)
            .map(|_, _, ctx| ctx.stop()),
        )
    }
}

/// Registers the `program` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("program", |ctx: DriverContext| {
        let (plan, specs) = Plan::new(&ctx)?;
        let addr = ProgramDriver::new(&ctx, plan).start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr),
            devices: specs,
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(o: &mut Outbox) -> Vec<ToProgram> {
        let bytes = o.take();
        let mut r = FrameReader::new(frame::MAX_FRAME);
        r.extend(&bytes);
        let mut out = Vec::new();
        while let Some((k, body)) = r.next_frame().unwrap() {
            out.push(ToProgram::decode(k, body).unwrap());
        }
        out
    }

    #[test]
    fn the_outbox_keeps_the_newest_and_a_stop_voids_the_unsent_command() {
        let mut o = Outbox::default();
        let cmd = |v: u8| ToProgram::Command {
            device: b'k',
            payload: vec![0, v],
        };
        let reading = |v: u8| ToProgram::Reading {
            device: b'l',
            sec: 1,
            usec: 0,
            payload: vec![v],
        };
        o.push(ToProgram::Setup { device: b'k' });
        o.push(cmd(1));
        o.push(reading(1));
        o.push(cmd(2));
        o.push(reading(2));
        assert_eq!(
            frames(&mut o),
            vec![ToProgram::Setup { device: b'k' }, cmd(2), reading(2)]
        );
        o.push(cmd(3));
        o.push(ToProgram::Stop {
            device: b'k',
            reason: frame::stop::WATCHDOG,
        });
        o.push(cmd(4));
        assert_eq!(
            frames(&mut o),
            vec![
                ToProgram::Stop {
                    device: b'k',
                    reason: frame::stop::WATCHDOG
                },
                cmd(4)
            ]
        );
    }
}
