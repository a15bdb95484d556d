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
//! goes silent, keeps the state drivers report ([`DeviceStatus`]), answers the device list
//! ([`ListDevices`]) and sends [`Notice`]s to the sessions that asked for them ([`Watch`]).

use crate::notice::{kind, Notice};
use actix::prelude::*;
use bytes::Bytes;
use futures::channel::oneshot;
use player_kit::driver::{
    Command, Config, DataRecipient, DeviceData, DeviceDataBatch, DeviceSpec, DeviceState,
    DeviceStatus, DriverError, DriverHandle, MapOutline, MapRequest, ReadDevice, Setup, Shutdown,
    Stop, StopReason, Subscribers, Terminate,
};
use player_proto::access;
use player_proto::ext::{state as list_state, DeviceEntry};
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub use player_kit::driver::SessionId;

/// The session id the registry's own tap reads devices under (recording, [`ReadDevice`]).
pub const TAP: SessionId = u64::MAX;

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
}

/// Why a device could not be had: what a front end gets instead of a [`Grant`] (and what
/// a config to an unknown device gets). A front end matches on it; its text is what a
/// log line or a notice says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// The robot has no device with this code.
    #[error("no device {} on this robot", crate::logging::code(*.0))]
    Unknown(u8),
    /// The driver did not finish setting the device up in time.
    #[error("setup did not finish within {:.1} s", .0.as_secs_f64())]
    SetupTimeout(Duration),
    /// The driver refused or failed the setup (its reason).
    #[error("{0}")]
    SetupFailed(DriverError),
    /// The driver's actor has stopped.
    #[error("driver has stopped")]
    DriverStopped,
    /// The setup this request waited on was abandoned (the server is stopping).
    #[error("setup abandoned")]
    SetupAbandoned,
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
    /// The client's address, for log lines.
    pub client: String,
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
}

/// The longest a writer's [`CommandHold`] may make one command hold.
pub const MAX_COMMAND_HOLD: Duration = Duration::from_millis(1200);

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

/// Server → registry: the server is exiting. Shut every open device down and terminate
/// every driver; the reply comes when all have finished.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ShutdownAll;

struct Holder {
    read: bool,
    write: bool,
    recipient: DataRecipient,
    /// How long this writer's commands hold ([`CommandHold`]); `None`: `command_timeout`.
    hold: Option<Duration>,
}

enum State {
    Down,
    SettingUp(Vec<oneshot::Sender<Result<(), DeviceError>>>),
    Up,
}

/// How a device is doing, beyond being set up.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Health {
    Ok,
    /// The driver reported a failure or a reconnect.
    Driver(DeviceState, String),
    /// No reading for too long (seen by the tap).
    Silent,
    /// Its last setup failed.
    SetupFailed,
}

/// The command watchdog of one device.
#[derive(Debug, Default)]
struct Watchdog {
    /// `None`: the device is not watched.
    timeout: Option<Duration>,
    /// When the last command arrived, while a command holds (armed).
    last: Option<Instant>,
    /// How long the last command holds: `timeout`, or its writer's [`CommandHold`].
    hold: Duration,
    /// It stopped the device and no command has arrived since.
    tripped: bool,
}

/// Readings seen by the tap, for the device list and the silence check.
#[derive(Debug, Default)]
struct Seen {
    last: Option<Instant>,
    data_size: u16,
    count: u32,
    window_start: Option<Instant>,
    rate_x10: u16,
    /// Longest gap between two readings seen lately (a device that publishes slowly is not
    /// called silent).
    period: Duration,
}

struct Device {
    spec: DeviceSpec,
    driver: DriverHandle,
    driver_name: String,
    holders: HashMap<SessionId, Holder>,
    state: State,
    health: Health,
    watchdog: Watchdog,
    seen: Seen,
}

/// The registry actor of one robot.
pub struct Registry {
    robot: String,
    devices: HashMap<u8, Device>,
    drivers: Vec<(String, DriverHandle)>,
    setup_timeout: Duration,
    quiet_after: Duration,
    watchers: HashMap<SessionId, Recipient<Notice>>,
    estop: Option<String>,
    watchdog_check: Option<(SpawnHandle, Instant)>,
    health_check: Option<SpawnHandle>,
    taps: Vec<Recipient<Tapped>>,
    log: Logger,
}

impl Registry {
    /// A registry with no devices; add drivers with [`Registry::add_driver`] before
    /// starting it.
    pub fn new(robot: &str, setup_timeout: Duration, log: Logger) -> Self {
        Registry {
            robot: robot.to_string(),
            devices: HashMap::new(),
            drivers: Vec::new(),
            setup_timeout,
            quiet_after: Duration::from_secs(3),
            watchers: HashMap::new(),
            estop: None,
            watchdog_check: None,
            health_check: None,
            taps: Vec::new(),
            log,
        }
    }

    /// How long a device that has published may stay silent before clients are told it
    /// failed (default 3 s; a device that publishes slowly gets three of its periods).
    pub fn with_quiet_after(mut self, quiet_after: Duration) -> Self {
        self.quiet_after = quiet_after;
        self
    }

    /// Adds a started driver and the devices it serves. A device code served twice is an
    /// error naming it.
    pub fn add_driver(
        &mut self,
        name: &str,
        handle: DriverHandle,
        specs: &[DeviceSpec],
    ) -> Result<(), String> {
        for spec in specs {
            if let Some(d) = self.devices.get(&spec.code) {
                return Err(format!(
                    "robot '{}': device '{}' is served by both driver '{}' and driver '{name}'",
                    self.robot,
                    char::from(spec.code),
                    d.driver_name
                ));
            }
        }
        for spec in specs {
            self.devices.insert(
                spec.code,
                Device {
                    spec: *spec,
                    driver: handle.clone(),
                    driver_name: name.to_string(),
                    holders: HashMap::new(),
                    state: State::Down,
                    health: Health::Ok,
                    watchdog: Watchdog {
                        timeout: spec.command_timeout.filter(|t| !t.is_zero()),
                        ..Watchdog::default()
                    },
                    seen: Seen::default(),
                },
            );
        }
        self.drivers.push((name.to_string(), handle));
        Ok(())
    }

    /// The device codes in the table, sorted.
    pub fn device_codes(&self) -> Vec<u8> {
        let mut v: Vec<u8> = self.devices.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// Tells the driver that `session` starts (`Some`) or stops (`None`) reading `code`;
    /// nothing while the device is not up (setup sends the whole list when it is).
    fn tell_reader(&self, code: u8, session: SessionId, recipient: Option<DataRecipient>) {
        let Some(d) = self.devices.get(&code) else {
            return;
        };
        if !matches!(d.state, State::Up) || !d.spec.readable {
            return;
        }
        d.driver.subscribers.do_send(Subscribers {
            device: code,
            session,
            recipient,
        });
    }

    /// Sends `notice` to every watching session that holds `code`.
    fn notify_holders(&self, code: u8, notice: Notice) {
        let Some(d) = self.devices.get(&code) else {
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

    /// Stops a device that is set up (or being set up) for `reason`.
    fn stop_device(&mut self, code: u8, reason: StopReason) {
        let Some(d) = self.devices.get_mut(&code) else {
            return;
        };
        d.watchdog.last = None;
        if !matches!(d.state, State::Down) {
            d.driver.stop.do_send(Stop {
                device: code,
                reason,
            });
        }
    }

    /// Removes a session from a device; stops the device if it lost a writer and shuts it
    /// down if it lost its last holder.
    fn release(&mut self, session: SessionId, code: u8, ctx: &mut Context<Self>) {
        let Some(d) = self.devices.get_mut(&code) else {
            return;
        };
        let Some(h) = d.holders.remove(&session) else {
            return;
        };
        if h.write && d.spec.command_size.is_some() {
            self.stop_device(code, StopReason::WriterLeft);
        }
        if h.read {
            self.tell_reader(code, session, None);
        }
        let Some(d) = self.devices.get_mut(&code) else {
            return;
        };
        if d.holders.is_empty() && matches!(d.state, State::Up) {
            if d.spec.readable {
                d.driver.subscribers.do_send(Subscribers {
                    device: code,
                    session: TAP,
                    recipient: None,
                });
            }
            d.state = State::Down;
            d.seen = Seen::default();
            if d.health == Health::Silent {
                d.health = Health::Ok;
            }
            info!(self.log, "device shut down"; "device" => player_kit::log::device(code), "driver" => &d.driver_name);
            d.driver.shutdown.do_send(Shutdown { device: code });
        }
        self.update_health_check(ctx);
    }

    fn setup_done(&mut self, code: u8, result: Result<(), DeviceError>, ctx: &mut Context<Self>) {
        let tap = DataRecipient::of(&ctx.address());
        let Some(d) = self.devices.get_mut(&code) else {
            return;
        };
        let waiters = match std::mem::replace(&mut d.state, State::Down) {
            State::SettingUp(w) => w,
            other => {
                d.state = other;
                return;
            }
        };
        match &result {
            Ok(()) => {
                info!(self.log, "device set up"; "device" => player_kit::log::device(code), "driver" => &d.driver_name);
                d.state = State::Up;
                if matches!(d.health, Health::SetupFailed | Health::Silent) {
                    d.health = Health::Ok;
                }
                if d.holders.is_empty() {
                    d.state = State::Down;
                    d.driver.shutdown.do_send(Shutdown { device: code });
                } else if d.spec.readable {
                    for (&session, h) in d.holders.iter().filter(|(_, h)| h.read) {
                        d.driver.subscribers.do_send(Subscribers {
                            device: code,
                            session,
                            recipient: Some(h.recipient.clone()),
                        });
                    }
                    d.driver.subscribers.do_send(Subscribers {
                        device: code,
                        session: TAP,
                        recipient: Some(tap),
                    });
                }
            }
            Err(e) => {
                warn!(self.log, "device setup failed"; "device" => player_kit::log::device(code), "driver" => &d.driver_name, "error" => %e);
                d.health = Health::SetupFailed;
                d.holders.clear();
            }
        }
        for w in waiters {
            let _ = w.send(result.clone());
        }
        self.update_health_check(ctx);
    }

    // ----- command watchdog ------------------------------------------------------------

    /// Arms the watchdog check at the earliest deadline of any armed device.
    fn schedule_watchdog(&mut self, ctx: &mut Context<Self>) {
        let next = self
            .devices
            .values()
            .filter_map(|d| Some(d.watchdog.last? + d.watchdog.timeout.map(|_| d.watchdog.hold)?))
            .min();
        let Some(at) = next else { return };
        match self.watchdog_check {
            // A check is due no later: it re-arms for later deadlines when it runs.
            Some((_, pending)) if pending <= at => return,
            Some((h, _)) => {
                ctx.cancel_future(h);
            }
            None => {}
        }
        let wait = at.saturating_duration_since(Instant::now());
        let h = ctx.run_later(wait, |act, ctx| {
            act.watchdog_check = None;
            act.check_watchdogs(ctx);
        });
        self.watchdog_check = Some((h, at));
    }

    /// Stops every device whose command has not been renewed within its timeout (once:
    /// the next command re-arms it).
    fn check_watchdogs(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let expired: Vec<(u8, Duration)> = self
            .devices
            .iter()
            .filter_map(|(&code, d)| {
                let (last, _) = (d.watchdog.last?, d.watchdog.timeout?);
                let hold = d.watchdog.hold;
                (now >= last + hold).then_some((code, hold))
            })
            .collect();
        for (code, timeout) in expired {
            self.stop_device(code, StopReason::Watchdog);
            let d = self.devices.get_mut(&code).expect("listed above");
            d.watchdog.tripped = true;
            warn!(self.log, "command watchdog: no command in time; device stopped"; "device" => player_kit::log::device(code), "command_timeout_s" => timeout.as_secs_f64());
            self.notify_holders(
                code,
                Notice::new(
                    kind::WATCHDOG,
                    code,
                    format!(
                        "no command for {:.2} s (command_timeout): stopped until the next command",
                        timeout.as_secs_f64()
                    ),
                ),
            );
        }
        self.schedule_watchdog(ctx);
    }

    // ----- health: readings seen by the tap, states reported by drivers ------------------

    fn update_health_check(&mut self, ctx: &mut Context<Self>) {
        let any_up = self
            .devices
            .values()
            .any(|d| matches!(d.state, State::Up) && d.spec.readable);
        match (any_up, self.health_check.is_some()) {
            (true, false) => {
                self.health_check = Some(ctx.run_interval(Duration::from_secs(1), |act, _| {
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
        let now = Instant::now();
        let quiet_after = self.quiet_after;
        let mut silent = Vec::new();
        for (&code, d) in self.devices.iter_mut() {
            let s = &mut d.seen;
            if let Some(start) = s.window_start {
                let span = now.duration_since(start);
                if span >= Duration::from_secs(2) {
                    let rate = f64::from(s.count) / span.as_secs_f64();
                    s.rate_x10 = (rate * 10.0).round().min(f64::from(u16::MAX)) as u16;
                    s.count = 0;
                    s.window_start = Some(now);
                }
            }
            if !matches!(d.state, State::Up) || d.health != Health::Ok {
                continue;
            }
            let Some(last) = s.last else { continue };
            let allowed = quiet_after.max(s.period * 3);
            if now.duration_since(last) >= allowed {
                s.rate_x10 = 0;
                d.health = Health::Silent;
                silent.push((code, now.duration_since(last)));
            }
        }
        for (code, quiet) in silent {
            warn!(self.log, "device silent"; "device" => player_kit::log::device(code), "seconds" => quiet.as_secs());
            self.notify_holders(
                code,
                Notice::new(
                    kind::FAILED,
                    code,
                    format!("no reading for {} s", quiet.as_secs()),
                ),
            );
        }
    }

    /// The tap saw a reading of `code`.
    fn seen(&mut self, code: u8, size: usize) {
        let now = Instant::now();
        let Some(d) = self.devices.get_mut(&code) else {
            return;
        };
        // A batch carries every device of a link, set up or not.
        if !matches!(d.state, State::Up) {
            return;
        }
        let s = &mut d.seen;
        if let Some(last) = s.last {
            let gap = now.duration_since(last);
            s.period = if gap > s.period {
                gap
            } else {
                (s.period * 7 + gap) / 8
            };
        }
        s.last = Some(now);
        s.data_size = size.min(usize::from(u16::MAX)) as u16;
        s.count += 1;
        s.window_start.get_or_insert(now);
        if d.health == Health::Silent {
            d.health = Health::Ok;
            info!(self.log, "device publishing again"; "device" => player_kit::log::device(code));
            self.notify_holders(code, Notice::new(kind::UP, code, "readings again"));
        }
    }

    fn entry(code: u8, d: &Device) -> DeviceEntry {
        let access = match (d.spec.readable, d.spec.command_size.is_some()) {
            (true, true) => access::ALL,
            (false, true) => access::WRITE,
            _ => access::READ,
        };
        let state = match (&d.state, &d.health) {
            (State::SettingUp(_), _) => list_state::SETTING_UP,
            (_, Health::Driver(DeviceState::Reconnecting, _)) => list_state::RECONNECTING,
            (_, Health::Driver(DeviceState::Failed, _) | Health::Silent | Health::SetupFailed) => {
                list_state::FAILED
            }
            (State::Up, _) => list_state::UP,
            (State::Down, _) => list_state::IDLE,
        };
        let count = |f: fn(&Holder) -> bool| {
            d.holders
                .values()
                .filter(|h| f(h))
                .count()
                .min(usize::from(u16::MAX)) as u16
        };
        DeviceEntry {
            code,
            access,
            state,
            readers: count(|h| h.read),
            writers: count(|h| h.write),
            data_size: d.seen.data_size,
            rate_x10: d.seen.rate_x10,
            driver: d.driver_name.clone(),
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
            .filter(|c| self.devices[c].watchdog.timeout.is_some())
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
        let Some(d) = self.devices.get_mut(&code) else {
            return Box::pin(fut::ready(Err(DeviceError::Unknown(code))));
        };
        let spec = d.spec;
        let command = if msg.write {
            spec.command_size.map(|_| guard)
        } else {
            None
        };
        let had_write = d.holders.get(&msg.session).is_some_and(|h| h.write);
        let had_read = d.holders.get(&msg.session).is_some_and(|h| h.read);
        let hold = d.holders.get(&msg.session).and_then(|h| h.hold);
        d.holders.insert(
            msg.session,
            Holder {
                read: msg.read,
                write: msg.write,
                recipient: msg.recipient.clone(),
                hold: hold.filter(|_| msg.write),
            },
        );
        if had_write && !msg.write && spec.command_size.is_some() {
            self.stop_device(code, StopReason::WriterLeft);
        }
        let d = self.devices.get_mut(&code).expect("looked up above");
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
                info!(self.log, "setting up device"; "device" => player_kit::log::device(code), "driver" => &d.driver_name, "client" => &msg.client);
                let setup = d
                    .driver
                    .setup
                    .send(Setup { device: code })
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
        let codes: Vec<u8> = self
            .devices
            .iter()
            .filter(|(_, d)| d.holders.contains_key(&msg.session))
            .map(|(c, _)| *c)
            .collect();
        for code in codes {
            self.release(msg.session, code, ctx);
        }
    }
}

impl Handler<Command> for Registry {
    type Result = ();

    /// The guard on every command: the sender must still hold write access, nothing passes
    /// while the emergency stop is latched, and a watched device's command re-arms its
    /// watchdog.
    fn handle(&mut self, msg: Command, ctx: &mut Self::Context) {
        let code = msg.device;
        let Some(d) = self.devices.get_mut(&code) else {
            return;
        };
        if msg.session != 0 && !d.holders.get(&msg.session).is_some_and(|h| h.write) {
            self.notify(
                msg.session,
                Notice::new(kind::COMMAND, code, "command ignored: no write access"),
            );
            return;
        }
        if let Some(by) = &self.estop {
            let text = format!("command ignored: emergency stop latched by {by}");
            self.notify(msg.session, Notice::new(kind::COMMAND, code, text));
            return;
        }
        for t in &self.taps {
            t.do_send(Tapped {
                kind: Sent::Command,
                device: code,
                payload: msg.payload.clone(),
                timestamp: player_kit::driver::Timestamp::now(),
            });
        }
        if let Some(timeout) = d.watchdog.timeout {
            let asked = d.holders.get(&msg.session).and_then(|h| h.hold);
            d.watchdog.hold = asked.map_or(timeout, |h| {
                h.min(MAX_COMMAND_HOLD.max(timeout)).max(timeout)
            });
            d.watchdog.last = Some(Instant::now());
            if d.watchdog.tripped {
                d.watchdog.tripped = false;
                info!(self.log, "command watchdog: commands again; device resumed"; "device" => player_kit::log::device(code));
            }
            d.driver.command.do_send(msg);
            self.schedule_watchdog(ctx);
        } else {
            d.driver.command.do_send(msg);
        }
    }
}

impl Handler<CommandHold> for Registry {
    type Result = ();

    /// Records how long this writer's commands hold; the next command it sends arms the
    /// watchdog with it.
    fn handle(&mut self, msg: CommandHold, _ctx: &mut Self::Context) {
        if let Some(h) = self
            .devices
            .get_mut(&msg.device)
            .and_then(|d| d.holders.get_mut(&msg.session))
            .filter(|h| h.write)
        {
            h.hold = msg.hold;
        }
    }
}

impl Handler<ReadDevice> for Registry {
    type Result = ResponseActFuture<Self, Result<(), DriverError>>;

    /// A driver reading another device (a virtual device): a read-only holder, set up and
    /// released like a session's (it never gets write access, so it never stops a device).
    fn handle(&mut self, msg: ReadDevice, ctx: &mut Self::Context) -> Self::Result {
        if !msg.on {
            self.release(msg.session, msg.device, ctx);
            return Box::pin(fut::ready(Ok(())));
        }
        if self
            .devices
            .get(&msg.device)
            .is_some_and(|d| !d.spec.readable)
        {
            let e = DriverError(format!(
                "device {} produces no data",
                crate::logging::code(msg.device)
            ));
            return Box::pin(fut::ready(Err(e)));
        }
        let subscribe = Subscribe {
            session: msg.session,
            device: msg.device,
            read: true,
            write: false,
            recipient: msg.recipient,
            client: format!("driver reader {}", msg.session),
        };
        Box::pin(
            <Self as Handler<Subscribe>>::handle(self, subscribe, ctx)
                .map(|r, _, _| r.map(|_| ()).map_err(|e| DriverError(e.to_string()))),
        )
    }
}

impl Handler<Watch> for Registry {
    type Result = ();

    fn handle(&mut self, msg: Watch, _ctx: &mut Self::Context) {
        match msg.recipient {
            Some(r) => {
                if let Some(by) = &self.estop {
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

impl Handler<EStop> for Registry {
    type Result = bool;

    fn handle(&mut self, msg: EStop, ctx: &mut Self::Context) -> bool {
        let notice = match (msg.latch, &self.estop) {
            (true, None) => {
                self.estop = Some(msg.client.clone());
                let codes: Vec<u8> = self
                    .devices
                    .iter()
                    .filter(|(_, d)| d.spec.command_size.is_some())
                    .map(|(c, _)| *c)
                    .collect();
                for code in codes {
                    self.stop_device(code, StopReason::EmergencyStop);
                }
                if let Some((h, _)) = self.watchdog_check.take() {
                    ctx.cancel_future(h);
                }
                warn!(self.log, "EMERGENCY STOP latched: every command is ignored until it is released"; "by" => &msg.client);
                Notice::new(
                    kind::ESTOP,
                    0,
                    format!("emergency stop latched by {}", msg.client),
                )
            }
            (false, Some(_)) => {
                self.estop = None;
                warn!(self.log, "emergency stop released"; "by" => &msg.client);
                Notice::new(
                    kind::ESTOP_RELEASED,
                    0,
                    format!("emergency stop released by {}", msg.client),
                )
            }
            _ => return false,
        };
        for w in self.watchers.values() {
            w.do_send(notice.clone());
        }
        true
    }
}

impl Handler<EStopState> for Registry {
    type Result = Option<String>;

    fn handle(&mut self, _msg: EStopState, _ctx: &mut Self::Context) -> Option<String> {
        self.estop.clone()
    }
}

impl Handler<ListDevices> for Registry {
    type Result = Vec<DeviceEntry>;

    fn handle(&mut self, _msg: ListDevices, _ctx: &mut Self::Context) -> Vec<DeviceEntry> {
        self.device_codes()
            .into_iter()
            .map(|c| Registry::entry(c, &self.devices[&c]))
            .collect()
    }
}

impl Handler<DeviceStatus> for Registry {
    type Result = ();

    fn handle(&mut self, msg: DeviceStatus, _ctx: &mut Self::Context) {
        let code = msg.device;
        let Some(d) = self.devices.get_mut(&code) else {
            return;
        };
        let (health, k) = match msg.state {
            DeviceState::Up => (Health::Ok, kind::UP),
            other => (Health::Driver(other, msg.reason.clone()), kind::FAILED),
        };
        if d.health == health {
            return;
        }
        d.health = health;
        match msg.state {
            DeviceState::Up => {
                info!(self.log, "device up again"; "device" => player_kit::log::device(code), "reason" => &msg.reason)
            }
            _ => {
                warn!(self.log, "device failed"; "device" => player_kit::log::device(code), "reason" => &msg.reason)
            }
        }
        self.notify_holders(code, Notice::new(k, code, msg.reason));
    }
}

impl Handler<DeviceData> for Registry {
    type Result = ();

    fn handle(&mut self, msg: DeviceData, _ctx: &mut Self::Context) {
        self.seen(msg.device, msg.data.len());
    }
}

impl Handler<DeviceDataBatch> for Registry {
    type Result = ();

    fn handle(&mut self, msg: DeviceDataBatch, _ctx: &mut Self::Context) {
        for d in msg.0.iter() {
            self.seen(d.device, d.data.len());
        }
    }
}

impl Handler<RouteConfig> for Registry {
    type Result = Result<(), DeviceError>;

    fn handle(&mut self, msg: RouteConfig, _ctx: &mut Self::Context) -> Self::Result {
        let Some(d) = self.devices.get(&msg.device) else {
            return Err(DeviceError::Unknown(msg.device));
        };
        for t in &self.taps {
            t.do_send(Tapped {
                kind: Sent::Config,
                device: msg.device,
                payload: msg.payload.clone(),
                timestamp: player_kit::driver::Timestamp::now(),
            });
        }
        d.driver.config.do_send(Config {
            device: msg.device,
            payload: msg.payload,
            client: msg.client,
        });
        Ok(())
    }
}

impl Handler<Tap> for Registry {
    type Result = ();

    fn handle(&mut self, msg: Tap, _ctx: &mut Self::Context) {
        self.taps.push(msg.recipient);
    }
}

impl Handler<GetMap> for Registry {
    type Result = ResponseFuture<Option<MapOutline>>;

    fn handle(&mut self, msg: GetMap, _ctx: &mut Self::Context) -> Self::Result {
        let asks: Vec<_> = self
            .devices
            .iter()
            .filter_map(|(code, d)| d.driver.map.clone().map(|m| (*code, m)))
            .collect();
        Box::pin(async move {
            for (device, map) in asks {
                let answer = map
                    .send(MapRequest {
                        device,
                        walls: msg.walls,
                    })
                    .timeout(Duration::from_secs(5))
                    .await;
                if let Ok(Some(outline)) = answer {
                    return Some(outline);
                }
            }
            None
        })
    }
}

impl Handler<ShutdownAll> for Registry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: ShutdownAll, _ctx: &mut Self::Context) -> Self::Result {
        let mut shutdowns = Vec::new();
        for (code, d) in self.devices.iter_mut() {
            d.holders.clear();
            if !matches!(d.state, State::Down) {
                d.state = State::Down;
                shutdowns.push(d.driver.shutdown.send(Shutdown { device: *code }));
            }
        }
        let drivers: Vec<(String, DriverHandle)> = self.drivers.clone();
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
