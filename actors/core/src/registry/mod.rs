//! The registry actor: one robot's device table.
//!
//! It maps each device code to the driver actor behind it and what the device allows,
//! counts which sessions hold each device, asks the driver to set a device up when its first
//! session arrives and to shut it down after the last one leaves, and tells the driver which
//! sessions read it. A session losing write access to a device makes the registry tell the
//! driver to [`Stop`] it (the robot stops when its driver leaves). Setups run concurrently:
//! a slow device never holds up requests for another one.
//!
//! The registry is also the robot's safety guard. Every front end's commands come through
//! it (the [`Grant`]'s command recipient is the registry): it checks that the sender still
//! holds write access, drops commands while the emergency stop ([`EStop`]) is latched, and
//! runs the command watchdog: a device whose commands keep something moving (its
//! [`DeviceSpec::command_timeout`]) is stopped once when no command has arrived from any
//! writer for that long, and resumes with the next command. It reads every device it has
//! set up (a tap, like one more session) to know each device's rate and notice one that
//! goes silent: while every device is well, from an inbox the drivers leave the newest
//! readings in, taken at the once-a-second check (no message per reading on the drivers'
//! thread); while one is silent, as messages, so "readings again" goes out with the first
//! one. It keeps the state drivers report ([`DeviceStatus`]), answers the device list
//! ([`ListDevices`]) and sends [`Notice`]s to the sessions that asked for them ([`Watch`]).
//!
//! Drivers hold devices of their robot too (a localizer reading the laser, a planner
//! driving the base: `player_kit::source`): a driver holding a device is one more holder,
//! its commands pass the same guard, and it is told what happens to its holding
//! (`HolderEvent`s: the e-stop, a watchdog stop, a client's command pre-empting it).
//! A device may be served under another code than its driver's own (`"p as O"`): the
//! table files it under the served code and every message to the driver names its own.
//!
//! By job: `table.rs` (the devices, their holders and setup states, the device list),
//! `guard.rs` (command admission, pre-emption, the e-stop latch, the command watchdogs,
//! pure), `commands.rs` (the actor's side of the guard: commands, holds, the e-stop, the
//! watchdog's timer, holder events), `drivers.rs` (what drivers ask: reading, holding,
//! configs to other devices, the world), `health.rs` (rates and silence, from the tap's
//! readings), `query.rs` (what front ends ask beyond holding devices); this file holds the
//! messages, the actor, holding and setting up devices, and the health check's timer.

use crate::notice::{kind, Notice};
use crate::timer::RunEvery;
use actix::prelude::*;
use bytes::Bytes;
use futures::channel::oneshot;
use player_kit::answer::{ConfigAnswer, ConfigPlace};
use player_kit::driver::{
    Command, DataRecipient, DeviceData, DeviceDataBatch, DeviceSpec, DeviceState, DeviceStatus,
    DriverHandle, Inbox, MapOutline, Setup, Shutdown, Stop, StopReason, Subscribers, Terminate,
};
use player_kit::labels::Labels;
pub use player_kit::playback::{PlaybackClock, PlaybackRequest};
use player_proto::ext::DeviceEntry;
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use player_kit::driver::{DeviceError, SessionId};
pub use query::{
    CommandTimeouts, DeviceHolders, HolderEntry, ListHolders, SetCommandTimeout, MAX_LISTED_HOLDERS,
};
pub use table::ServedTwice;

mod commands;
mod drivers;
mod guard;
mod health;
mod query;
mod table;

use guard::Guard;
use health::Health;
use table::{Condition, Holder, State, Table};

/// What a client sent to a device, as the registry reports it to a tap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sent {
    /// A command (`c`).
    Command,
    /// A config (`x`).
    Config,
}

/// Registry → tap: a command or config the registry passed on to a driver (commands only
/// when the guard let them through).
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Tapped {
    /// Command or config.
    pub kind: Sent,
    /// The device code.
    pub device: u8,
    /// The bytes as received (a config's code and arguments).
    pub payload: Bytes,
    /// When the registry passed it on.
    pub timestamp: player_kit::driver::Timestamp,
}

/// Observer → registry: send every command and config passed on to a driver to
/// `recipient` as [`Tapped`] (the recorder records them).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Tap {
    /// Where they go.
    pub recipient: Recipient<Tapped>,
    /// The client name the observer sends its own configs under (the recorder's
    /// `"recorder"`, asking for a map's tiles): those are not passed back to it, so a
    /// recording holds what others sent.
    pub name: String,
}

/// What a session was granted on a device.
#[derive(Debug, Clone)]
pub struct Grant {
    /// What the device allows.
    pub spec: DeviceSpec,
    /// Where to send commands (the registry's guard, which forwards them to the driver),
    /// when the session asked for write access and the device takes commands.
    pub command: Option<Recipient<Command>>,
}

/// Session → registry: send this session [`Notice`]s (`Some`) about the devices it holds
/// and the robot's emergency stop, or stop sending them (`None`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Watch {
    /// The session.
    pub session: SessionId,
    /// Where its notices go.
    pub recipient: Option<Recipient<Notice>>,
}

/// Anyone → registry: latch (`latch`) or release the robot's emergency stop. While it is
/// latched every command is dropped and every device that takes commands has been stopped.
/// Whether the sender may release it is the caller's decision (a session asks its access
/// rights). The reply says whether the state changed.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct EStop {
    /// Latch (true) or release (false).
    pub latch: bool,
    /// Who, for the log and the notices.
    pub client: String,
}

/// Anyone → registry: the robot's device list, sorted by code.
#[derive(Message)]
#[rtype(result = "Vec<DeviceEntry>")]
pub struct ListDevices;

/// Anyone → registry: whether the emergency stop is latched, and by whom.
#[derive(Message)]
#[rtype(result = "Option<String>")]
pub struct EStopState;

/// Session → registry: set this session's access to a device (read and/or write). The
/// first session to hold a device sets it up; the reply comes when the device is ready.
#[derive(Message)]
#[rtype(result = "Result<Grant, DeviceError>")]
pub struct Subscribe {
    /// The session.
    pub session: SessionId,
    /// The device code.
    pub device: u8,
    /// Whether the session reads the device's data.
    pub read: bool,
    /// Whether the session may command the device.
    pub write: bool,
    /// Where the device's data goes.
    pub recipient: DataRecipient,
    /// The client's address, for log lines (shared by the subscriptions of one request).
    pub client: Arc<str>,
}

/// Session → registry: the session no longer holds the device (it closed it).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unsubscribe {
    /// The session.
    pub session: SessionId,
    /// The device code.
    pub device: u8,
}

/// Session → registry: the session ended; release every device it held.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Disconnect {
    /// The session.
    pub session: SessionId,
}

/// Session → registry: a client's configuration request for a device; forwarded to the
/// device's driver. The error names an unknown device.
#[derive(Message)]
#[rtype(result = "Result<(), DeviceError>")]
pub struct RouteConfig {
    /// The device code.
    pub device: u8,
    /// The config code and arguments.
    pub payload: Bytes,
    /// The client's address, for log lines.
    pub client: String,
    /// Where the device's answer goes, if it answers (a TCP session's address: it writes
    /// the answer as `y` packets; `None` for a front end that takes no answers).
    pub answer: Option<Recipient<ConfigAnswer>>,
    /// The config's place among its sender's waiting configs (a client's; none for the
    /// server's own paced asks), held until the driver answers or drops the config.
    pub place: Option<ConfigPlace>,
}

pub use guard::MAX_COMMAND_HOLD;

/// Session → registry: how long each of this session's commands to `device` holds before
/// the command watchdog stops the device, for a writer that renews its command at its own
/// rate (a browser panel at 1 Hz). The guard honours it within the device's
/// `command_timeout` (never shorter) and [`MAX_COMMAND_HOLD`] (never longer); `None` goes
/// back to the device's `command_timeout`. Unwatched devices stay unwatched.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct CommandHold {
    /// The writing session.
    pub session: SessionId,
    /// The device code.
    pub device: u8,
    /// How long one command holds.
    pub hold: Option<Duration>,
}

/// Any front end → registry: the map of the robot's surroundings, from the first driver
/// that has one (the simulator has its world's walls); `None` when no driver has a map.
#[derive(Message)]
#[rtype(result = "Option<MapOutline>")]
pub struct GetMap {
    /// Whether to include the walls (false: only where odometry lies in the map).
    pub walls: bool,
}

/// Any front end → registry: change (or read) the playback of the robot's first driver
/// that plays a recording back (its handle built `with_playback`), which replies with its
/// shared clock; `None` when no driver plays back. The registry only routes: who may ask
/// is the front end's decision (the web session asks for write access).
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "Option<Arc<PlaybackClock>>")]
pub struct ControlPlayback(pub PlaybackRequest);

/// Server → registry: the server is exiting. Shut every open device down and terminate
/// every driver; the reply comes when all have finished.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ShutdownAll;

/// The registry actor of one robot.
pub struct Registry {
    table: Table,
    guard: Guard,
    health: Health,
    setup_timeout: Duration,
    watchers: HashMap<SessionId, Recipient<Notice>>,
    watchdog_check: Option<(SpawnHandle, Instant)>,
    /// The watchdog has stopped a device once: the log line naming the key that turns it
    /// off (for clients of 0.7.4a that send one command) has been written.
    watchdog_explained: bool,
    health_check: Option<SpawnHandle>,
    /// Where the drivers leave the tap's readings while no device is silent.
    tap_inbox: Arc<Inbox>,
    /// The observers of passed-on commands and configs, each with the client name of
    /// its own configs (not passed back to it).
    taps: Vec<(Recipient<Tapped>, String)>,
    log: Logger,
}

impl Registry {
    /// A registry with no devices; add drivers with [`Registry::add_driver`] before
    /// starting it.
    pub fn new(robot: &str, setup_timeout: Duration, log: Logger) -> Self {
        Registry {
            table: Table::new(robot),
            guard: Guard::default(),
            health: Health::new(Duration::from_secs(3)),
            setup_timeout,
            watchers: HashMap::new(),
            watchdog_check: None,
            watchdog_explained: false,
            health_check: None,
            tap_inbox: Inbox::new(),
            taps: Vec::new(),
            log,
        }
    }

    /// How long a device that has published may stay silent before clients are told it
    /// failed (default 3 s; a device that publishes slowly gets three of its periods).
    pub fn with_quiet_after(mut self, quiet_after: Duration) -> Self {
        self.health = Health::new(quiet_after);
        self
    }

    /// Adds a started driver and the devices it serves. A device code served twice is an
    /// error naming it.
    pub fn add_driver(
        &mut self,
        name: &str,
        handle: DriverHandle,
        specs: &[DeviceSpec],
    ) -> Result<(), ServedTwice> {
        self.add_driver_labelled(name, handle, specs, &Labels::none())
    }

    /// Adds a started driver whose devices (`specs`, under its own codes) are served
    /// under the codes `labels` gives (`"p as O"`; `player_kit::labels`). A served code
    /// served twice is an error naming it.
    pub fn add_driver_labelled(
        &mut self,
        name: &str,
        handle: DriverHandle,
        specs: &[DeviceSpec],
        labels: &Labels,
    ) -> Result<(), ServedTwice> {
        self.table.add(name, handle, specs, labels)?;
        for spec in specs {
            self.guard
                .watch(labels.served(spec.code), spec.command_timeout);
        }
        Ok(())
    }

    /// The device codes in the table, sorted.
    pub fn device_codes(&self) -> Vec<u8> {
        self.table.codes()
    }

    /// Tells the driver that `session` starts (`Some`) or stops (`None`) reading `code`;
    /// nothing while the device is not up (setup sends the whole list when it is).
    fn tell_reader(&self, code: u8, session: SessionId, recipient: Option<DataRecipient>) {
        let Some(d) = self.table.devices.get(&code) else {
            return;
        };
        if !d.is_up() || !d.spec.readable {
            return;
        }
        d.driver.subscribers.do_send(Subscribers {
            device: d.own,
            session,
            recipient,
        });
    }

    /// Sends `notice` to every watching session that holds `code`.
    fn notify_holders(&self, code: u8, notice: Notice) {
        let Some(d) = self.table.devices.get(&code) else {
            return;
        };
        for session in d.holders.keys() {
            if let Some(w) = self.watchers.get(session) {
                w.do_send(notice.clone());
            }
        }
    }

    /// Sends `notice` to one session, if it watches.
    fn notify(&self, session: SessionId, notice: Notice) {
        if let Some(w) = self.watchers.get(&session) {
            w.do_send(notice);
        }
    }

    /// Stops a device that is set up (or being set up) for `reason`, caused by `client`.
    fn stop_device(&mut self, code: u8, reason: StopReason, client: Arc<str>) {
        let Some(d) = self.table.devices.get(&code) else {
            return;
        };
        self.guard.disarm(code);
        if !matches!(d.state, State::Down) {
            d.driver.stop.do_send(Stop {
                device: d.own,
                reason,
                client,
            });
        }
    }

    /// Removes a session from a device; stops the device if it lost a writer and shuts it
    /// down if it lost its last holder.
    fn release(&mut self, session: SessionId, code: u8, ctx: &mut Context<Self>) {
        let Some(d) = self.table.devices.get_mut(&code) else {
            return;
        };
        let Some(h) = d.holders.remove(&session) else {
            return;
        };
        if h.write && d.commandable() {
            self.stop_device(code, StopReason::WriterLeft, h.client.clone());
        }
        if h.read {
            self.tell_reader(code, session, None);
        }
        let Some(d) = self.table.devices.get_mut(&code) else {
            return;
        };
        if d.holders.is_empty() && d.is_up() {
            if d.spec.readable {
                d.driver.subscribers.do_send(Subscribers {
                    device: d.own,
                    session: SessionId::TAP,
                    recipient: None,
                });
            }
            d.state = State::Down;
            self.health.forget(code);
            if d.condition == Condition::Silent {
                d.condition = Condition::Ok;
            }
            info!(self.log, "device shut down"; "device" => player_kit::log::device(code), "driver" => &d.driver_name, "client" => &*h.client);
            d.driver.shutdown.do_send(Shutdown {
                device: d.own,
                client: h.client.clone(),
            });
        }
        self.update_health_check(ctx);
    }

    fn setup_done(&mut self, code: u8, result: Result<(), DeviceError>, ctx: &mut Context<Self>) {
        let tap = DataRecipient::with_inbox(&ctx.address(), self.tap_inbox.clone());
        let Some(d) = self.table.devices.get_mut(&code) else {
            return;
        };
        let Some(waiters) = d.end_setup() else {
            return;
        };
        match &result {
            Ok(()) => {
                info!(self.log, "device set up"; "device" => player_kit::log::device(code), "driver" => &d.driver_name, "opened_by" => &*d.opened_by);
                d.state = State::Up;
                if matches!(d.condition, Condition::SetupFailed | Condition::Silent) {
                    d.condition = Condition::Ok;
                }
                if d.holders.is_empty() {
                    d.state = State::Down;
                    d.driver.shutdown.do_send(Shutdown {
                        device: d.own,
                        client: d.opened_by.clone(),
                    });
                } else if d.spec.readable {
                    for (&session, h) in d.holders.iter().filter(|(_, h)| h.read) {
                        d.driver.subscribers.do_send(Subscribers {
                            device: d.own,
                            session,
                            recipient: Some(h.recipient.clone()),
                        });
                    }
                    d.driver.subscribers.do_send(Subscribers {
                        device: d.own,
                        session: SessionId::TAP,
                        recipient: Some(tap),
                    });
                }
            }
            Err(e) => {
                warn!(self.log, "device setup failed"; "device" => player_kit::log::device(code), "driver" => &d.driver_name, "error" => %e, "opened_by" => &*d.opened_by);
                d.condition = Condition::SetupFailed;
                d.holders.clear();
            }
        }
        for w in waiters {
            let _ = w.send(result.clone());
        }
        self.update_health_check(ctx);
    }

    // ----- health: the periodic check while a readable device is up ----------------------

    fn update_health_check(&mut self, ctx: &mut Context<Self>) {
        match (self.table.any_readable_up(), self.health_check.is_some()) {
            (true, false) => {
                // On the thread's precise timer: one wake-up a second, on the grid the
                // drivers' readings use (tokio's interval would wake twice).
                self.health_check = Some(ctx.run_every(Duration::from_secs(1), |act, _| {
                    act.check_health();
                }));
            }
            (false, true) => {
                if let Some(h) = self.health_check.take() {
                    ctx.cancel_future(h);
                }
            }
            _ => {}
        }
    }

    /// Updates each device's rate, and tells holders about a device that has gone silent.
    fn check_health(&mut self) {
        self.take_tap_inbox();
        let devices = &self.table.devices;
        let silent = self.health.check(Instant::now(), |code| {
            devices
                .get(&code)
                .is_some_and(|d| d.is_up() && d.condition == Condition::Ok)
        });
        for s in silent {
            if let Some(d) = self.table.devices.get_mut(&s.device) {
                d.condition = Condition::Silent;
            }
            warn!(self.log, "device silent"; "device" => player_kit::log::device(s.device), "seconds" => s.quiet.as_secs());
            self.notify_holders(
                s.device,
                Notice::new(
                    kind::FAILED,
                    s.device,
                    format!("no reading for {} s", s.quiet.as_secs()),
                ),
            );
        }
        if self.any_silent() {
            // From now on readings come as messages: the first one of a silent device
            // makes "readings again" at once, not at the next check.
            self.take_tap_inbox();
        }
    }

    fn any_silent(&self) -> bool {
        self.table
            .devices
            .values()
            .any(|d| d.condition == Condition::Silent)
    }

    /// Takes the readings the drivers left in the tap's inbox, and sets whether the next
    /// ones come as messages (while a device is silent) or are left there.
    fn take_tap_inbox(&mut self) {
        let inbox = self.tap_inbox.clone();
        inbox.take_each(self.any_silent(), |d| self.seen(&d));
    }

    /// The tap saw readings of a device up to `d`, the newest.
    fn seen(&mut self, data: &DeviceData) {
        let code = data.device;
        let Some(d) = self.table.devices.get_mut(&code) else {
            return;
        };
        // A batch carries every device of a link, set up or not.
        if !d.is_up() {
            return;
        }
        let reading = data.stamp();
        if !self
            .health
            .seen(code, reading, data.data.len(), Instant::now())
        {
            return;
        }
        if d.condition == Condition::Silent {
            d.condition = Condition::Ok;
            info!(self.log, "device publishing again"; "device" => player_kit::log::device(code));
            self.notify_holders(code, Notice::new(kind::UP, code, "readings again"));
        }
    }
}

impl Actor for Registry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Many sessions on other threads send here; the default mailbox (16) would make
        // them wait on each other.
        ctx.set_mailbox_capacity(4096);
        let codes: String = self.device_codes().into_iter().map(char::from).collect();
        let watched: String = self
            .device_codes()
            .into_iter()
            .filter(|&c| self.guard.watches(c))
            .map(char::from)
            .collect();
        info!(self.log, "registry ready"; "devices" => codes, "watchdog" => watched);
    }
}

impl Handler<Subscribe> for Registry {
    type Result = ResponseActFuture<Self, Result<Grant, DeviceError>>;

    fn handle(&mut self, msg: Subscribe, ctx: &mut Self::Context) -> Self::Result {
        let code = msg.device;
        let guard = ctx.address().recipient::<Command>();
        let Some(d) = self.table.devices.get_mut(&code) else {
            return Box::pin(fut::ready(Err(DeviceError::Unknown(code))));
        };
        let spec = d.spec;
        let command = if msg.write {
            spec.command_size.map(|_| guard)
        } else {
            None
        };
        let had_write = d.writer(msg.session);
        let had_read = d.reader(msg.session);
        let hold = d.hold(msg.session).filter(|_| msg.write);
        let internal = d.holders.get(&msg.session).and_then(|h| h.internal.clone());
        d.holders.insert(
            msg.session,
            Holder {
                read: msg.read,
                write: msg.write,
                recipient: msg.recipient.clone(),
                hold,
                client: msg.client.clone(),
                internal,
            },
        );
        if had_write && !msg.write && spec.command_size.is_some() {
            self.stop_device(code, StopReason::WriterLeft, msg.client.clone());
        }
        let d = self.table.devices.get_mut(&code).expect("looked up above");
        let grant = Grant { spec, command };
        match &mut d.state {
            State::Up => {
                if msg.read != had_read {
                    let r = msg.read.then_some(msg.recipient);
                    self.tell_reader(code, msg.session, r);
                }
                Box::pin(fut::ready(Ok(grant)))
            }
            State::SettingUp(waiters) => {
                let (tx, rx) = oneshot::channel();
                waiters.push(tx);
                Box::pin(
                    async move { rx.await.unwrap_or(Err(DeviceError::SetupAbandoned)) }
                        .into_actor(self)
                        .map(move |r, _, _| r.map(|()| grant)),
                )
            }
            State::Down => {
                let (tx, rx) = oneshot::channel();
                d.state = State::SettingUp(vec![tx]);
                info!(self.log, "setting up device"; "device" => player_kit::log::device(code), "driver" => &d.driver_name, "client" => &*msg.client);
                d.opened_by = msg.client.clone();
                let setup = d
                    .driver
                    .setup
                    .send(Setup {
                        device: d.own,
                        client: msg.client.clone(),
                    })
                    .timeout(self.setup_timeout);
                let timeout = self.setup_timeout;
                Box::pin(
                    async move {
                        let result = match setup.await {
                            Ok(r) => r.map_err(DeviceError::SetupFailed),
                            Err(MailboxError::Timeout) => Err(DeviceError::SetupTimeout(timeout)),
                            Err(MailboxError::Closed) => Err(DeviceError::DriverStopped),
                        };
                        (result, rx)
                    }
                    .into_actor(self)
                    .then(move |(result, rx), act, ctx| {
                        act.setup_done(code, result, ctx);
                        async move { rx.await.unwrap_or(Err(DeviceError::SetupAbandoned)) }
                            .into_actor(act)
                    })
                    .map(move |r, _, _| r.map(|()| grant)),
                )
            }
        }
    }
}

impl Handler<Unsubscribe> for Registry {
    type Result = ();

    fn handle(&mut self, msg: Unsubscribe, ctx: &mut Self::Context) {
        self.release(msg.session, msg.device, ctx);
    }
}

impl Handler<Disconnect> for Registry {
    type Result = ();

    fn handle(&mut self, msg: Disconnect, ctx: &mut Self::Context) {
        self.watchers.remove(&msg.session);
        for code in self.table.held_by(msg.session) {
            self.release(msg.session, code, ctx);
        }
    }
}

impl Handler<Watch> for Registry {
    type Result = ();

    fn handle(&mut self, msg: Watch, _ctx: &mut Self::Context) {
        match msg.recipient {
            Some(r) => {
                if let Some(by) = self.guard.estop() {
                    r.do_send(Notice::new(
                        kind::ESTOP,
                        0,
                        format!("emergency stop latched by {by}"),
                    ));
                }
                self.watchers.insert(msg.session, r);
            }
            None => {
                self.watchers.remove(&msg.session);
            }
        }
    }
}

impl Handler<EStopState> for Registry {
    type Result = Option<String>;

    fn handle(&mut self, _msg: EStopState, _ctx: &mut Self::Context) -> Option<String> {
        self.guard.estop().map(str::to_string)
    }
}

impl Handler<ListDevices> for Registry {
    type Result = Vec<DeviceEntry>;

    fn handle(&mut self, _msg: ListDevices, _ctx: &mut Self::Context) -> Vec<DeviceEntry> {
        self.table
            .codes()
            .into_iter()
            .map(|c| self.table.entry(c, &self.health))
            .collect()
    }
}

impl Handler<DeviceStatus> for Registry {
    type Result = ();

    fn handle(&mut self, msg: DeviceStatus, _ctx: &mut Self::Context) {
        let code = msg.device;
        let Some(d) = self.table.devices.get_mut(&code) else {
            return;
        };
        let (condition, k) = match msg.state {
            DeviceState::Up => (Condition::Ok, kind::UP),
            other => (Condition::Driver(other, msg.reason.clone()), kind::FAILED),
        };
        if d.condition == condition {
            return;
        }
        d.condition = condition;
        match msg.state {
            DeviceState::Up => {
                info!(self.log, "device up again"; "device" => player_kit::log::device(code), "reason" => &msg.reason, "opened_by" => &*d.opened_by)
            }
            _ => {
                warn!(self.log, "device failed"; "device" => player_kit::log::device(code), "reason" => &msg.reason, "opened_by" => &*d.opened_by)
            }
        }
        self.notify_holders(code, Notice::new(k, code, msg.reason));
    }
}

impl Handler<DeviceData> for Registry {
    type Result = ();

    fn handle(&mut self, msg: DeviceData, _ctx: &mut Self::Context) {
        self.seen(&msg);
    }
}

impl Handler<DeviceDataBatch> for Registry {
    type Result = ();

    fn handle(&mut self, msg: DeviceDataBatch, _ctx: &mut Self::Context) {
        for d in msg.0.iter() {
            self.seen(d);
        }
    }
}

impl Handler<Tap> for Registry {
    type Result = ();

    fn handle(&mut self, msg: Tap, _ctx: &mut Self::Context) {
        self.taps.push((msg.recipient, msg.name));
    }
}

impl Handler<ShutdownAll> for Registry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: ShutdownAll, _ctx: &mut Self::Context) -> Self::Result {
        let mut shutdowns = Vec::new();
        for d in self.table.devices.values_mut() {
            d.holders.clear();
            if !matches!(d.state, State::Down) {
                d.state = State::Down;
                shutdowns.push(d.driver.shutdown.send(Shutdown {
                    device: d.own,
                    client: "".into(),
                }));
            }
        }
        let drivers: Vec<(String, DriverHandle)> = self.table.drivers.clone();
        let log = self.log.clone();
        Box::pin(async move {
            futures::future::join_all(shutdowns).await;
            for (name, handle) in drivers {
                if handle
                    .terminate
                    .send(Terminate)
                    .timeout(Duration::from_secs(5))
                    .await
                    .is_err()
                {
                    warn!(log, "driver did not terminate in time"; "driver" => name);
                }
            }
        })
    }
}
