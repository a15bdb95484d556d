//! A bridge's robot actor: one per robot, a session of the robot's registry on behalf of
//! everyone on the other network (the Zenoh bridge's `ZenohRobot`, the ROS 2 front end's
//! `RobotNode`), written once here.
//!
//! The actor publishes a device's readings while someone on the network listens to them
//! and takes write access to a device while commands for it come; it asks the registry for
//! exactly that ([`sync`], through [`Holdings`]). Readings wait at most one per device
//! ([`Waiting`]) until the actor's message to itself ([`Flush`]) publishes them. The
//! network's callbacks run on the library's threads, never block and never queue without
//! bound: commands go to a [`Mailbox`] (a slot the front end fills as it likes, newest
//! wins) with at most one [`CommandsReady`] on its way; whether a publisher is matched comes
//! as [`Matching`]. A command goes through the registry's guard like a TCP client's, once
//! write access is granted (the newest one waits for the grant).
//!
//! What differs between bridges is the [`BridgeRobot`] trait (what is wanted of a device,
//! what a publisher is, how readings are encoded and commands decoded, the tick);
//! [`bridge_robot_handlers!`](crate::bridge_robot_handlers) writes the actor's handlers
//! of the shared messages, as `player_kit::link_driver_handlers!` does for link drivers.

use super::clock::{Age, SenderClocks, Stamp};
use crate::frontend::{Access, Holdings};
use crate::registry::{EStop, Grant};
use actix::prelude::*;
use bytes::Bytes;
use player_kit::driver::{Command, DataRecipient, DeviceData, DeviceDataBatch, DeviceError};
use player_kit::log::{code as show, Throttle};
use player_proto::device;
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often a robot actor's tick runs ([`BridgeRobot::tick`]).
pub const TICK: Duration = Duration::from_millis(250);

/// How often it runs while the actor is quiet ([`BridgeRobot::quiet`]: nobody on the
/// network listens or commands): an idle server's bridges wake their threads once in this
/// long each, not eight times a second (tokio's interval woke twice a tick). On the
/// precise timer's grid, so every quiet actor of a thread wakes it once. What a quiet tick
/// still looks after (samples refused while quiet) waits at most this long.
pub const QUIET_TICK: Duration = Duration::from_secs(4);

/// At most one warning per this about the samples a robot actor's callbacks refused
/// ([`BridgeParts::log_refused`]): a peer sending garbage at any rate costs one line a
/// second, with how many and why the newest was refused.
pub const REFUSED_LOG_EVERY: Duration = Duration::from_secs(1);

/// How long after its last warning about refused samples an actor may be quiet again.
const REFUSALS_QUIET: Duration = Duration::from_secs(10);

/// Front end → one of its robot actors: leave the registry (a device it commanded stops),
/// drop what it publishes on and stop (server shutdown).
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Detach;

/// Front end → robot actor: its publishers are declared.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Attach<P>(pub P);

/// The network's callback → robot actor: whether some subscriber matches publisher number
/// `publisher` (the actor's own numbering) now.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Matching {
    /// Which publisher.
    pub publisher: usize,
    /// Whether a subscriber matches it.
    pub matching: bool,
}

/// The network's callback → robot actor: its [`Mailbox`] has commands.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct CommandsReady;

/// Robot actor → itself: publish the readings that wait.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Flush;

/// A value the network's callbacks leave for the actor without a message per sample, and
/// whether the message that wakes the actor for it is on its way (at most one is).
#[derive(Debug, Default)]
pub struct Slot<T> {
    value: Mutex<T>,
    woken: AtomicBool,
}

impl<T: Default> Slot<T> {
    /// Changes the value with `put` (on a callback's thread). Returns whether the caller is
    /// to send the wake-up message now (none is on its way).
    pub fn put(&self, put: impl FnOnce(&mut T)) -> bool {
        put(&mut self.value.lock().unwrap_or_else(PoisonError::into_inner));
        !self.woken.swap(true, Ordering::AcqRel)
    }

    /// Takes the value, leaving the default (the actor, woken); the next `put` wakes it
    /// again.
    pub fn take(&self) -> T {
        self.woken.store(false, Ordering::Release);
        std::mem::take(&mut *self.value.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// What a bridge's network callbacks share with one robot actor: the commands not taken
/// yet (`C`: the front end decides how they pile up, newest per device or newest of all),
/// woken with [`CommandsReady`], and how many samples they refused (too large, unknown,
/// undecodable, too many waiting).
#[derive(Debug, Default)]
pub struct Mailbox<C> {
    /// The commands not taken yet.
    pub commands: Slot<C>,
    refused: AtomicU64,
    /// Why the newest refused sample was (empty: not said).
    why: Mutex<String>,
}

impl<C> Mailbox<C> {
    /// Counts a refused sample (or query).
    pub fn refuse(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a refused sample and keeps why (the newest reason is logged).
    pub fn refuse_because(&self, why: String) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        *self.why.lock().unwrap_or_else(PoisonError::into_inner) = why;
    }

    /// How many were refused.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

/// What a robot actor counts, logged when it leaves.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Samples published.
    pub published: u64,
    /// Readings replaced by a newer one of their device before they were published.
    pub replaced: u64,
    /// Commands passed to a device.
    pub commands: u64,
    /// Commands (and e-stop releases) ignored: not allowed, or the wrong size.
    pub ignored: u64,
}

impl Stats {
    /// Logs `what` (the actor leaving its robot) with the counts and `refused` (samples
    /// its network callbacks refused before they reached it).
    pub fn log_leave(&self, log: &Logger, what: &str, refused: u64) {
        info!(log, "{}", what; "published" => self.published, "replaced_unsent" => self.replaced,
            "commands" => self.commands, "ignored" => self.ignored, "refused" => refused);
    }
}

/// A robot actor's readings not published yet: the newest per device (a slow network
/// loses the older ones, never delays the drivers), and whether the actor's message to
/// itself to publish them (a [`Flush`]) is on its way.
#[derive(Debug, Default)]
pub struct Waiting {
    readings: HashMap<u8, DeviceData>,
    flush_sent: bool,
}

impl Waiting {
    /// Keeps `d`, replacing a reading of its device not published yet (counted in
    /// `stats`). Returns whether the actor is to send itself a flush now (none is on its
    /// way).
    pub fn keep(&mut self, d: &DeviceData, stats: &mut Stats) -> bool {
        if self.readings.insert(d.device, d.clone()).is_some() {
            stats.replaced += 1;
        }
        self.wake()
    }

    /// Whether the actor is to send itself a flush now: readings wait and none is on its
    /// way (say, when it has just got somewhere to publish them).
    pub fn wake(&mut self) -> bool {
        if self.readings.is_empty() || self.flush_sent {
            return false;
        }
        self.flush_sent = true;
        true
    }

    /// The flush came: the readings waiting, taken.
    pub fn take(&mut self) -> HashMap<u8, DeviceData> {
        self.flush_sent = false;
        std::mem::take(&mut self.readings)
    }

    /// The flush came but there is nowhere to publish yet: the readings keep waiting (the
    /// next reading, or [`Waiting::wake`], asks for a flush again).
    pub fn postpone(&mut self) {
        self.flush_sent = false;
    }

    /// Drops device `code`'s reading (no one listens to it now).
    pub fn forget(&mut self, code: u8) {
        self.readings.remove(&code);
    }
}

/// Per device the actor commands: the registry's guard once write access is granted (with
/// the command size the device takes), and the newest command waiting for the grant.
#[derive(Default)]
struct Writer {
    guard: Option<Recipient<Command>>,
    size: Option<usize>,
    /// The newest command waiting for the grant, and its age when it came (if known).
    pending: Option<(Bytes, Option<Age>)>,
}

/// What every robot actor holds, whatever the network: its registry session, the readings
/// waiting, its counts, its mailbox, the commands it may send, its log.
pub struct BridgeParts<C> {
    /// The devices it holds at the registry.
    pub holdings: Holdings,
    /// Readings not published yet: the newest per device.
    pub waiting: Waiting,
    /// What it did.
    pub stats: Stats,
    /// Shared with the network's callbacks.
    pub mailbox: Arc<Mailbox<C>>,
    /// Its logger (robot and front end named).
    pub log: Logger,
    /// Limits its warnings about what the network sends.
    pub throttle: Throttle,
    writers: HashMap<u8, Writer>,
    /// Per device, its command watchdog as the last grant said (kept when write access is
    /// given back): a command sent longer ago than this is stale.
    watchdogs: HashMap<u8, Duration>,
    /// How old a stamped command is, per stamping clock.
    clocks: SenderClocks,
    /// Refused samples already logged, and when the last warning was.
    refused_logged: (u64, Option<Instant>),
    detached: bool,
    /// The tick running, and whether at the quiet period ([`tick_as_needed`]).
    ticking: Option<(SpawnHandle, bool)>,
}

impl<C> BridgeParts<C> {
    /// Holds nothing yet through `holdings`.
    pub fn new(holdings: Holdings, mailbox: Arc<Mailbox<C>>, log: Logger) -> Self {
        BridgeParts {
            holdings,
            waiting: Waiting::default(),
            stats: Stats::default(),
            mailbox,
            log,
            throttle: Throttle::new(Duration::from_secs(10), 5),
            writers: HashMap::new(),
            watchdogs: HashMap::new(),
            clocks: SenderClocks::default(),
            refused_logged: (0, None),
            detached: false,
            ticking: None,
        }
    }

    /// Warns (`what`, e.g. "ros2: samples refused") of the samples refused since the last
    /// warning, with how many and why the newest was; at most once per
    /// [`REFUSED_LOG_EVERY`]. Call it from the tick.
    pub fn log_refused(&mut self, what: &str) {
        let (logged, last) = self.refused_logged;
        let now = self.mailbox.refused();
        if now == logged || last.is_some_and(|t| t.elapsed() < REFUSED_LOG_EVERY) {
            return;
        }
        let why = self
            .mailbox
            .why
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        warn!(self.log, "{}", what; "count" => now - logged, "newest" => why);
        self.refused_logged = (now, Some(Instant::now()));
    }

    /// Whether no sample was refused lately: every refusal is logged and the newest warning
    /// is older than the throttle's window (10 s). An actor with refusals to report is not
    /// quiet ([`BridgeRobot::quiet`]), so they are reported at [`TICK`]; a refusal that
    /// comes while it is quiet is seen at its next quiet tick.
    pub fn no_refusals_lately(&self) -> bool {
        let (logged, last) = self.refused_logged;
        self.mailbox.refused() == logged && last.is_none_or(|t| t.elapsed() >= REFUSALS_QUIET)
    }

    /// Whether a command for `code` of age `age` (measured against its stamping clock,
    /// [`SenderClocks`]) is older than the device's watchdog (held back by a link that
    /// came back before the network gave the session up, or queued on the way): then it is
    /// ignored, counted, and said (at most 5 per 10 s, how old). Commands without a time,
    /// and devices with no watchdog or no grant yet, are not checked.
    fn stale(&mut self, name: &str, code: u8, age: Option<Age>) -> bool {
        let (Some(&limit), Some(age)) = (self.watchdogs.get(&code), age) else {
            return false;
        };
        let old = age.now();
        if old <= limit {
            return false;
        }
        self.stats.ignored += 1;
        if let Some(unlogged) = self.throttle.allow("stale") {
            let why = if age.first {
                "the first from its sender's clock, stamped further behind this host's clock than the device's command_timeout; later ones are measured against it"
            } else {
                "older than the device's command_timeout: held back by the network"
            };
            warn!(self.log, "{} command ignored: {}", name, why;
                "device" => show(code), "age_ms" => old.as_millis() as u64,
                "command_timeout_ms" => limit.as_millis() as u64, "unlogged" => unlogged);
        }
        true
    }

    /// Whether it has left its registry for good.
    pub fn detached(&self) -> bool {
        self.detached
    }

    /// Whether commands for `code` go straight to the registry's guard (write access is
    /// granted).
    pub fn can_command(&self, code: u8) -> bool {
        self.writers.get(&code).is_some_and(|w| w.guard.is_some())
    }

    /// A command for `code`, sent at `sent` when the network says: sent through the guard
    /// when write access is granted, else kept (the newest) until the grant; ignored when
    /// older than the device's watchdog. Returns whether it was kept: the caller then
    /// wants write access ([`sync`]).
    pub fn command(&mut self, name: &str, code: u8, payload: Bytes, sent: Option<Stamp>) -> bool {
        let sent = sent.map(|s| self.clocks.age(s));
        if self.stale(name, code, sent) {
            return false;
        }
        if self.can_command(code) {
            self.forward(name, code, payload);
            return false;
        }
        self.writers.entry(code).or_default().pending = Some((payload, sent));
        true
    }

    /// Write access to `code` is no longer wanted (or was lost): the guard and the command
    /// waiting are dropped.
    fn release(&mut self, code: u8) {
        self.writers.remove(&code);
    }

    /// Write access to `code` granted: commands now go to `grant`'s guard, the one waiting
    /// first. False when the device takes no commands.
    fn grant(&mut self, name: &str, code: u8, grant: Grant) -> bool {
        if let Some(t) = grant.spec.command_timeout.filter(|t| !t.is_zero()) {
            self.watchdogs.insert(code, t);
        }
        let w = self.writers.entry(code).or_default();
        w.size = grant.spec.command_size;
        w.guard = grant.command;
        if w.guard.is_none() {
            w.pending = None;
            return false;
        }
        if let Some((p, sent)) = w.pending.take() {
            if !self.stale(name, code, sent) {
                self.forward(name, code, p);
            }
        }
        true
    }

    /// Sends a command through the registry's guard; one of the wrong size is ignored
    /// (counted and logged, `name` the front end), as a TCP session checks it.
    fn forward(&mut self, name: &str, code: u8, payload: Bytes) {
        let Some(w) = self.writers.get(&code) else {
            return;
        };
        let (Some(guard), size) = (&w.guard, w.size) else {
            return;
        };
        if let Some(takes) = size.filter(|&n| n != payload.len()) {
            self.stats.ignored += 1;
            if let Some(unlogged) = self.throttle.allow("command size") {
                warn!(self.log, "{} command ignored: {} bytes, the device takes {}", name, payload.len(), takes;
                    "device" => show(code), "unlogged" => unlogged);
            }
            return;
        }
        self.stats.commands += 1;
        guard.do_send(Command {
            device: code,
            payload,
            session: self.holdings.session(),
        });
    }
}

/// What a bridge's robot actor does its own way; the rest is shared (the functions of
/// this module, the handlers [`bridge_robot_handlers!`](crate::bridge_robot_handlers)
/// writes).
pub trait BridgeRobot: Actor<Context = Context<Self>> + Sized {
    /// The front end, in log lines (`"zenoh"`, `"ros2"`) and as the e-stop's client.
    const NAME: &'static str;

    /// The line logged when it leaves its robot (with its counts).
    const LEAVES: &'static str;

    /// What it publishes on, given once declared ([`Attach`]).
    type Publishers: Send + 'static;

    /// The commands its network callbacks leave in its [`Mailbox`].
    type Commands: Default + Send + 'static;

    /// The shared part.
    fn parts(&mut self) -> &mut BridgeParts<Self::Commands>;

    /// The access it wants to `code` now: read while someone listens, write while
    /// commands come.
    fn want(&self, code: u8) -> Access;

    /// Its publishers came.
    fn attach(&mut self, publishers: Self::Publishers);

    /// Whether it has publishers (readings wait until then).
    fn attached(&self) -> bool;

    /// Drops its publishers (it leaves).
    fn detach(&mut self);

    /// Publishes the readings that waited, the newest per device.
    fn publish(&mut self, readings: HashMap<u8, DeviceData>);

    /// Whether some subscriber matches its publisher number `publisher` now: the device
    /// whose wants this changed, if any.
    fn matching(&mut self, publisher: usize, matching: bool) -> Option<u8>;

    /// The commands its callbacks left ([`Mailbox::commands`], taken).
    fn commands(&mut self, commands: Self::Commands, ctx: &mut Context<Self>);

    /// Every [`TICK`] ([`QUIET_TICK`] while quiet): what holds expire, what failed to
    /// retry.
    fn tick(&mut self, ctx: &mut Context<Self>);

    /// Whether nothing its tick looks after can come due soon: nobody listens, nothing is
    /// commanded (so the tick may run every [`QUIET_TICK`]). Default: never quiet.
    fn quiet(&self) -> bool {
        false
    }

    /// Write access to `code` was granted, but the device takes no commands.
    fn no_commands(&mut self, code: u8);

    /// The registry answered the newest request for `code`: granted, or why not (a
    /// refusal is logged already).
    fn answered(&mut self, _code: u8, _granted: Result<(), &DeviceError>) {}

    /// Where the registry is to send `code`'s readings: `None` (the default) for the actor
    /// itself, which publishes them at its [`Flush`]; or a subscriber that publishes them
    /// on the registry's thread ([`Direct`](super::direct::Direct)).
    fn direct(&self, _code: u8) -> Option<DataRecipient> {
        None
    }
}

/// Runs the actor's tick at the period it needs now: [`TICK`], or [`QUIET_TICK`] while it
/// is quiet. Called as the actor starts, after each tick and after each message that may
/// end the quiet (a subscriber matched, commands came), on the thread's precise timer (one
/// wake-up a period; tokio's interval wakes twice beyond 64 ms).
pub fn tick_as_needed<R: BridgeRobot>(r: &mut R, ctx: &mut Context<R>) {
    use player_kit::timer::RunEvery;
    let quiet = r.quiet();
    match r.parts().ticking {
        Some((_, q)) if q == quiet => return,
        Some((h, _)) => {
            ctx.cancel_future(h);
        }
        None => {}
    }
    let period = if quiet { QUIET_TICK } else { TICK };
    let h = ctx.run_every(period, |act: &mut R, ctx| {
        act.tick(ctx);
        tick_as_needed(act, ctx);
    });
    r.parts().ticking = Some((h, quiet));
}

/// Brings the registry's view of the actor's access to `code` in line with what it wants
/// ([`BridgeRobot::want`]); nothing once it has left. The registry's answer is handled
/// when it comes, unless a later change superseded the request.
pub fn sync<R>(r: &mut R, code: u8, ctx: &mut Context<R>)
where
    R: BridgeRobot + Handler<DeviceData> + Handler<DeviceDataBatch>,
{
    if r.parts().detached {
        return;
    }
    let want = r.want(code);
    let direct = r.direct(code);
    let parts = r.parts();
    if !want.write {
        parts.release(code);
    }
    if !want.read {
        parts.waiting.forget(code);
    }
    let me = ctx.address();
    parts.holdings.want_in(
        ctx,
        code,
        want,
        || direct.unwrap_or_else(|| DataRecipient::of(&me)),
        |r: &mut R| Some(&mut r.parts().holdings),
        move |r, granted, _| answered(r, code, want.write, granted),
    );
}

/// The registry's answer to the newest request for `code` (asked with write access when
/// `write`).
fn answered<R: BridgeRobot>(r: &mut R, code: u8, write: bool, granted: Result<Grant, DeviceError>) {
    match granted {
        Ok(grant) => {
            r.answered(code, Ok(()));
            if write && !r.parts().grant(R::NAME, code, grant) {
                r.no_commands(code);
            }
        }
        Err(e) => {
            if !matches!(e, DeviceError::RegistryStopped) {
                let parts = r.parts();
                parts.release(code);
                warn!(parts.log, "{}: device not available", R::NAME; "device" => device::name(code), "error" => %e);
            }
            r.answered(code, Err(&e));
        }
    }
}

/// Latches (`latch`) or releases the robot's emergency stop for the network; a release is
/// ignored (counted; false, for the caller to say why) unless `may_release`.
pub fn estop<R: BridgeRobot>(r: &mut R, latch: bool, may_release: bool) -> bool {
    let parts = r.parts();
    if !latch && !may_release {
        parts.stats.ignored += 1;
        return false;
    }
    parts.holdings.registry().do_send(EStop {
        latch,
        client: R::NAME.into(),
    });
    true
}

/// A reading from the registry: kept for the next flush if it is new and wanted.
pub fn take_reading<R: BridgeRobot + Handler<Flush>>(
    r: &mut R,
    d: &DeviceData,
    ctx: &mut Context<R>,
) {
    let parts = r.parts();
    if parts.holdings.take(d) && parts.waiting.keep(d, &mut parts.stats) {
        ctx.notify(Flush);
    }
}

/// The publishers came: readings that waited for them are flushed.
pub fn attach<R: BridgeRobot + Handler<Flush>>(
    r: &mut R,
    publishers: R::Publishers,
    ctx: &mut Context<R>,
) {
    r.attach(publishers);
    if r.parts().waiting.wake() {
        ctx.notify(Flush);
    }
}

/// The flush came: what waits is published, or keeps waiting for publishers.
pub fn flush<R: BridgeRobot>(r: &mut R) {
    if !r.attached() {
        return r.parts().waiting.postpone();
    }
    let readings = r.parts().waiting.take();
    r.publish(readings);
}

/// Leaves the registry for good (a device it commanded stops), drops the publishers, logs
/// the counts and stops the actor.
pub fn detach<R: BridgeRobot>(r: &mut R, ctx: &mut Context<R>) {
    leave(r.parts());
    r.detach();
    let parts = r.parts();
    parts
        .stats
        .log_leave(&parts.log, R::LEAVES, parts.mailbox.refused());
    ctx.stop();
}

/// The actor stopped: it leaves the registry, if it has not.
pub fn stopped<R: BridgeRobot>(r: &mut R) {
    leave(r.parts());
}

fn leave<C>(parts: &mut BridgeParts<C>) {
    if !parts.detached {
        parts.detached = true;
        parts.holdings.leave();
    }
}

/// Implements `Actor` (the tick, leaving when stopped) and the handlers of the shared
/// messages ([`Attach`], [`Detach`], [`Matching`], [`CommandsReady`], [`Flush`], and the
/// registry's `DeviceData` and `DeviceDataBatch`) for a [`BridgeRobot`], by the shared
/// bodies in [`player_core::frontend::bridge`](crate::frontend::bridge).
#[macro_export]
macro_rules! bridge_robot_handlers {
    ($t:ty) => {
        impl $crate::__actix::Actor for $t {
            type Context = $crate::__actix::Context<Self>;

            fn started(&mut self, ctx: &mut Self::Context) {
                $crate::frontend::bridge::tick_as_needed(self, ctx);
            }

            fn stopped(&mut self, _ctx: &mut Self::Context) {
                $crate::frontend::bridge::stopped(self);
            }
        }
        impl
            $crate::__actix::Handler<
                $crate::frontend::bridge::Attach<
                    <$t as $crate::frontend::bridge::BridgeRobot>::Publishers,
                >,
            > for $t
        {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::frontend::bridge::Attach<
                    <$t as $crate::frontend::bridge::BridgeRobot>::Publishers,
                >,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::frontend::bridge::attach(self, msg.0, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::frontend::bridge::Detach> for $t {
            type Result = ();
            fn handle(
                &mut self,
                _msg: $crate::frontend::bridge::Detach,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::frontend::bridge::detach(self, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::frontend::bridge::Matching> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::frontend::bridge::Matching,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                let changed = $crate::frontend::bridge::BridgeRobot::matching(
                    self,
                    msg.publisher,
                    msg.matching,
                );
                if let Some(code) = changed {
                    $crate::frontend::bridge::sync(self, code, ctx);
                }
                $crate::frontend::bridge::tick_as_needed(self, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::frontend::bridge::CommandsReady> for $t {
            type Result = ();
            fn handle(
                &mut self,
                _msg: $crate::frontend::bridge::CommandsReady,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                let commands = $crate::frontend::bridge::BridgeRobot::parts(self)
                    .mailbox
                    .commands
                    .take();
                $crate::frontend::bridge::BridgeRobot::commands(self, commands, ctx);
                $crate::frontend::bridge::tick_as_needed(self, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::frontend::bridge::Flush> for $t {
            type Result = ();
            fn handle(
                &mut self,
                _msg: $crate::frontend::bridge::Flush,
                _ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::frontend::bridge::flush(self);
            }
        }
        impl $crate::__actix::Handler<$crate::driver::DeviceData> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::DeviceData,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::frontend::bridge::take_reading(self, &msg, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::driver::DeviceDataBatch> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::DeviceDataBatch,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                for d in msg.0.iter() {
                    $crate::frontend::bridge::take_reading(self, d, ctx);
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_kit::driver::Timestamp;

    fn reading(device: u8, seq: u64) -> DeviceData {
        DeviceData {
            device,
            seq,
            data: Bytes::from(vec![seq as u8]),
            timestamp: Timestamp { sec: 0, usec: 0 },
        }
    }

    #[test]
    fn one_flush_is_asked_for_and_the_newest_reading_per_device_waits() {
        let (mut w, mut stats) = (Waiting::default(), Stats::default());
        assert!(!w.wake(), "nothing waits");
        assert!(w.keep(&reading(b'p', 1), &mut stats));
        assert!(
            !w.keep(&reading(b'p', 2), &mut stats),
            "a flush is on its way"
        );
        assert!(!w.keep(&reading(b'l', 1), &mut stats));
        assert_eq!(stats.replaced, 1);
        let taken = w.take();
        assert_eq!(taken.len(), 2);
        assert_eq!(taken[&b'p'].seq, 2);
        assert!(
            w.keep(&reading(b'p', 3), &mut stats),
            "the flush came: a new one"
        );
        w.take();
        w.keep(&reading(b'l', 2), &mut stats);
        w.postpone();
        assert!(w.wake(), "postponed: asked for again");
        w.forget(b'l');
        assert!(w.take().is_empty());
        assert!(!w.wake());
    }

    #[test]
    fn a_slot_wakes_its_actor_once_until_taken_and_keeps_what_was_put() {
        let slot: Slot<Vec<u8>> = Slot::default();
        assert!(slot.put(|v| v.push(1)), "the first put wakes");
        assert!(!slot.put(|v| v.push(2)), "a wake-up is on its way");
        assert_eq!(slot.take(), [1, 2]);
        assert!(slot.take().is_empty());
        assert!(slot.put(|v| v.push(3)), "taken: the next put wakes again");
        let mailbox: Mailbox<Option<u8>> = Mailbox::default();
        mailbox.refuse();
        mailbox.refuse();
        assert_eq!(mailbox.refused(), 2);
    }
}
