//! The messages between the registry, the sessions and the driver actors.
//!
//! A driver is any actor that handles the messages of [`DriverHandle`]. It owns its
//! transport (a serial line, a TCP link, a simulation), publishes each device's newest data
//! as [`DeviceData`] to the recipients the registry gives it ([`Subscribers`]), and takes
//! [`Command`]s (the newest overwrites the previous one) and [`Config`]s. Drivers never know
//! about clients. [`Publisher`] does the bookkeeping most drivers need.
//!
//! Beside this file: [`crate::answer`] (a config's answer), [`crate::source`] (reading,
//! holding and writing other devices of the robot: `DeviceSource`), [`crate::world`]
//! (maps and world solids a driver may have), [`crate::labels`] (devices served under
//! another code).

use crate::answer::AnswerTo;
use crate::fresh::Stamp;
use crate::labels::Labels;
use actix::prelude::*;
use bytes::Bytes;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use crate::world::{
    GridMap, GridRequest, MapOutline, MapRequest, WorldRequest, WorldSolids, MAX_MAP_SEGMENTS,
};

/// When a reading was taken: seconds and microseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Timestamp {
    /// Seconds since the Unix epoch.
    pub sec: u32,
    /// Microseconds within the second.
    pub usec: u32,
}

impl Timestamp {
    /// The current wall-clock time.
    pub fn now() -> Timestamp {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp {
            sec: d.as_secs() as u32,
            usec: d.subsec_micros(),
        }
    }

    /// Nanoseconds since the Unix epoch (MCAP's and Foxglove's timestamps).
    pub fn nanos(self) -> u64 {
        u64::from(self.sec) * 1_000_000_000 + u64::from(self.usec) * 1000
    }

    /// The 8 bytes a timestamped data packet carries (the `x y t` extension's layout:
    /// seconds, then microseconds, both big-endian u32).
    pub fn encode(self) -> [u8; player_proto::message::TIMESTAMP_SIZE] {
        player_proto::message::encode_timestamp(self.sec, self.usec)
    }
}

/// One device's newest reading. Published by drivers to subscribed sessions; the bytes are
/// shared by every recipient, never copied per client.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct DeviceData {
    /// The device code.
    pub device: u8,
    /// The `<data>` field of the data packet, exactly as the manual's Table 7 lays it out.
    pub data: Bytes,
    /// When the reading was taken.
    pub timestamp: Timestamp,
    /// Increases with every reading of this device, so a session can tell new data from
    /// data it has already sent; 0 for a driver that does not number its readings. A
    /// driver may number afresh ([`Publisher::renumber`]); every consumer in the server
    /// tells new readings from old by the one rule of [`crate::fresh`].
    pub seq: u64,
}

impl DeviceData {
    /// What identifies this reading for the rule of [`crate::fresh`]: its number and when
    /// it was taken.
    pub fn stamp(&self) -> Stamp {
        Stamp {
            seq: self.seq,
            at: (self.timestamp.sec, self.timestamp.usec),
        }
    }
}

/// Several devices' readings taken at one instant (one P2OS packet gives position, sonar,
/// misc and gripper; a simulator reads all its sensors at once), published as one message
/// to every session that reads any of them. Each session takes the devices it reads and
/// ignores the rest; the readings are shared, never copied per client. One message instead
/// of one per device is what keeps fan-out to thousands of sessions cheap.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct DeviceDataBatch(pub Arc<[DeviceData]>);

/// Where one session's data goes: single readings and batches, and optionally an
/// [`Inbox`] that takes readings without a message while the session does not need one.
///
/// Cloning one is cheap and allocates nothing: a session subscribes to each of its devices
/// with clones of one recipient, which the registry and each driver keep (an actix
/// recipient's own clone allocates a sender of its own, several per device per session).
/// Both kinds of message go to one address of the actor (one sender, not one per kind),
/// shared by every copy.
#[derive(Clone)]
pub struct DataRecipient {
    /// Where messages go.
    to: Arc<dyn DataSink>,
    /// When set, readings are left here instead of sent while the session says it needs no
    /// message (see [`Inbox`]).
    pub inbox: Option<Arc<Inbox>>,
}

/// Where a [`DataRecipient`] delivers: an actor's address that takes both kinds of data
/// message ([`DataRecipient::of`]), or a subscriber of its own making
/// ([`DataRecipient::sink`]: the recorder queues readings without waking its thread).
/// Called on the publishing driver's thread, for every reading: it must not block.
pub trait DataSink: Send + Sync {
    /// One reading.
    fn single(&self, d: DeviceData);
    /// Several devices' readings of one instant.
    fn batch(&self, b: DeviceDataBatch);
}

impl<A> DataSink for Addr<A>
where
    A: Actor + Handler<DeviceData> + Handler<DeviceDataBatch>,
    A::Context: actix::dev::ToEnvelope<A, DeviceData> + actix::dev::ToEnvelope<A, DeviceDataBatch>,
{
    fn single(&self, d: DeviceData) {
        self.do_send(d);
    }

    fn batch(&self, b: DeviceDataBatch) {
        self.do_send(b);
    }
}

impl DataRecipient {
    /// Sends one reading as a message.
    #[inline]
    pub fn send_single(&self, d: DeviceData) {
        self.to.single(d);
    }

    /// Sends a batch as a message.
    #[inline]
    pub fn send_batch(&self, b: DeviceDataBatch) {
        self.to.batch(b);
    }
}

/// A session's newest-wins shelf for readings it will pick up on its own schedule.
///
/// A session sending rounds on deadlines needs no message per reading: only the newest
/// reading of each device at its next round. While its owner says so
/// ([`Inbox::take`] with `messages = false`), [`Publisher`] leaves each reading here
/// (replacing the device's previous one: one per device code, so at most 256 are ever
/// held) instead of sending a message, which spares the mailbox delivery and the
/// cross-thread wake-up per reader per reading. Otherwise (waiting for a first reading, a
/// round due, push new, request modes) readings are sent as messages as without an inbox.
/// The switch and the shelf share one lock, so no reading is lost between them.
///
/// Two flags mirror the state for the owner's look without the lock: whether anything is
/// shelved, and the switch. A session ticking faster than its devices publish finds the
/// shelf empty most of the time, and then takes nothing without writing the lock's cache
/// line, which the publishing thread writes at each reading.
#[derive(Debug)]
pub struct Inbox {
    state: std::sync::Mutex<InboxState>,
    /// Something is shelved (set by the publisher, cleared by the owner, both under the
    /// lock).
    held: AtomicBool,
    /// The switch as the owner last set it (under the lock).
    messages: AtomicBool,
}

#[derive(Debug)]
struct InboxState {
    readings: Vec<DeviceData>,
    /// Whether readings should be sent as messages now.
    messages: bool,
}

impl InboxState {
    /// Keeps `d` as its device's newest reading (an older one never replaces a newer: the
    /// rule of [`crate::fresh`]).
    fn shelve(&mut self, d: &DeviceData) {
        match self.readings.iter_mut().find(|x| x.device == d.device) {
            Some(x) => {
                if crate::fresh::judge(Some(x.stamp()), d.stamp()).is_new() {
                    *x = d.clone();
                }
            }
            None => {
                // Room for exactly the devices seen (a session reads a few; growth by
                // doubling would leave a slot or more unused for the session's life).
                self.readings.reserve_exact(1);
                self.readings.push(d.clone());
            }
        }
    }
}

impl Default for Inbox {
    fn default() -> Self {
        Inbox {
            state: std::sync::Mutex::new(InboxState {
                readings: Vec::new(),
                messages: true,
            }),
            held: AtomicBool::new(false),
            messages: AtomicBool::new(true),
        }
    }
}

impl Inbox {
    /// An inbox whose owner wants messages until it says otherwise.
    pub fn new() -> Arc<Inbox> {
        Arc::new(Inbox::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, InboxState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publisher side: keeps `d` as its device's newest reading and returns true, or
    /// returns false when the owner wants messages now (the caller sends one).
    pub fn offer(&self, d: &DeviceData) -> bool {
        let mut s = self.lock();
        if s.messages {
            return false;
        }
        s.shelve(d);
        self.held.store(true, Ordering::Release);
        true
    }

    /// Publisher side: [`Inbox::offer`] of the readings of `batch` whose bit is set in
    /// `mask`, all under one lock (so the owner never takes some of a batch without the
    /// rest), or none of them and false when the owner wants messages now.
    pub fn offer_all(&self, batch: &[DeviceData], mask: u64) -> bool {
        let mut s = self.lock();
        if s.messages {
            return false;
        }
        for (i, d) in batch.iter().enumerate() {
            if i < 64 && mask & (1 << i) != 0 {
                s.shelve(d);
            }
        }
        if !s.readings.is_empty() {
            self.held.store(true, Ordering::Release);
        }
        true
    }

    /// Owner side: moves the readings kept so far into `into` (which should be empty; its
    /// capacity is reused) and sets whether readings come as messages from now on.
    pub fn take(&self, messages: bool, into: &mut Vec<DeviceData>) {
        let mut s = self.lock();
        self.set_switch(&mut s, messages);
        into.clear();
        std::mem::swap(&mut s.readings, into);
    }

    /// Sets the switch and clears the shelved flag (the caller empties the shelf), under
    /// the lock `s` holds.
    fn set_switch(&self, s: &mut InboxState, messages: bool) {
        s.messages = messages;
        self.messages.store(messages, Ordering::Relaxed);
        self.held.store(false, Ordering::Relaxed);
    }

    /// Owner side: hands every reading kept so far to `f` and sets whether readings come
    /// as messages from now on, all under the inbox's lock (so a batch is seen whole or not
    /// at all); returns how many there were. Unlike [`Inbox::take`] the owner keeps no
    /// buffer of its own: the shelf keeps its room for the next readings, and only it.
    /// `f` must not use this inbox.
    pub fn take_each(&self, messages: bool, f: impl FnMut(DeviceData)) -> usize {
        // Nothing shelved and the switch stays: nothing to do, and no lock to take. A
        // reading shelved just after this look waits for the next take, as it would
        // had it come just after a take under the lock.
        if !self.held.load(Ordering::Acquire) && self.messages.load(Ordering::Relaxed) == messages {
            return 0;
        }
        let mut s = self.lock();
        self.set_switch(&mut s, messages);
        let n = s.readings.len();
        s.readings.drain(..).for_each(f);
        n
    }
}

impl DataRecipient {
    /// A recipient that hands every reading to `to` (on the publisher's thread).
    pub fn sink(to: Arc<dyn DataSink>) -> Self {
        DataRecipient { to, inbox: None }
    }

    /// The recipient of an actor that handles both.
    pub fn of<A>(addr: &Addr<A>) -> Self
    where
        A: Actor + Handler<DeviceData> + Handler<DeviceDataBatch>,
        A::Context:
            actix::dev::ToEnvelope<A, DeviceData> + actix::dev::ToEnvelope<A, DeviceDataBatch>,
    {
        DataRecipient {
            to: Arc::new(addr.clone()),
            inbox: None,
        }
    }

    /// The recipient of an actor that handles both and picks readings up from `inbox`
    /// while it wants no messages.
    pub fn with_inbox<A>(addr: &Addr<A>, inbox: Arc<Inbox>) -> Self
    where
        A: Actor + Handler<DeviceData> + Handler<DeviceDataBatch>,
        A::Context:
            actix::dev::ToEnvelope<A, DeviceData> + actix::dev::ToEnvelope<A, DeviceDataBatch>,
    {
        DataRecipient {
            inbox: Some(inbox),
            ..DataRecipient::of(addr)
        }
    }

    /// A subscriber that picks readings up from `inbox` while it wants no messages, and
    /// otherwise is sent them through `to`, which its owner may share (a session's one
    /// address for its reader and all its subscriptions, instead of a copy each).
    pub fn shared_with_inbox(to: Arc<dyn DataSink>, inbox: Arc<Inbox>) -> Self {
        DataRecipient {
            to,
            inbox: Some(inbox),
        }
    }
}

/// What kind of failure a [`DriverError`] is: what a caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DriverErrorKind {
    /// The driver's parameters are wrong (a configuration error).
    Params,
    /// The driver does not serve the device asked for (here, or at all).
    NotServed,
    /// The device's link (port, socket, program) could not be opened, or failed.
    Link,
    /// The device did not answer in time.
    Timeout,
    /// The device, or the driver's program, refused.
    Refused,
    /// Anything else (the server is stopping, a setup was abandoned).
    Other,
}

/// Why a driver could not do what was asked: a kind to match on and a text for a person
/// (what a log line or a client's notice says).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct DriverError {
    /// What kind of failure.
    pub kind: DriverErrorKind,
    /// Why, for a person.
    pub text: String,
}

impl DriverError {
    /// An error of `kind` saying `text`.
    pub fn new(kind: DriverErrorKind, text: impl Into<String>) -> Self {
        DriverError {
            kind,
            text: text.into(),
        }
    }

    /// Wrong parameters.
    pub fn params(text: impl Into<String>) -> Self {
        Self::new(DriverErrorKind::Params, text)
    }

    /// A device the driver does not serve.
    pub fn not_served(text: impl Into<String>) -> Self {
        Self::new(DriverErrorKind::NotServed, text)
    }

    /// The link could not be opened or failed.
    pub fn link(text: impl Into<String>) -> Self {
        Self::new(DriverErrorKind::Link, text)
    }

    /// No answer in time.
    pub fn timeout(text: impl Into<String>) -> Self {
        Self::new(DriverErrorKind::Timeout, text)
    }

    /// The device or the program refused.
    pub fn refused(text: impl Into<String>) -> Self {
        Self::new(DriverErrorKind::Refused, text)
    }

    /// Anything else.
    pub fn other(text: impl Into<String>) -> Self {
        Self::new(DriverErrorKind::Other, text)
    }
}

/// Why a device could not be had: what a front end gets instead of a grant, and what a
/// driver reading another device (`ReadDevice`, [`crate::source`]) gets. A caller matches on it; its text
/// is what a log line or a notice says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// The robot has no device with this code.
    #[error("no device {} on this robot", crate::log::code(*.0))]
    Unknown(u8),
    /// The device produces no data (a reader asked to read it).
    #[error("device {} produces no data", crate::log::code(*.0))]
    Unreadable(u8),
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
    /// A driver started outside a server has no devices to read.
    #[error("this driver has no devices to read")]
    NoRegistry,
    /// The robot's registry has stopped.
    #[error("the registry has stopped")]
    RegistryStopped,
}

impl From<DeviceError> for DriverError {
    /// A device a driver depends on could not be had (a virtual device's source): a
    /// failed setup keeps its kind, a timeout is [`DriverErrorKind::Timeout`], a device
    /// the robot lacks or that produces no data [`DriverErrorKind::NotServed`], anything
    /// else [`DriverErrorKind::Other`]. The text is the device error's.
    fn from(e: DeviceError) -> Self {
        let kind = match &e {
            DeviceError::SetupFailed(d) => return d.clone(),
            DeviceError::SetupTimeout(_) => DriverErrorKind::Timeout,
            DeviceError::Unknown(_) | DeviceError::Unreadable(_) => DriverErrorKind::NotServed,
            DeviceError::DriverStopped
            | DeviceError::SetupAbandoned
            | DeviceError::NoRegistry
            | DeviceError::RegistryStopped => DriverErrorKind::Other,
        };
        DriverError::new(kind, e.to_string())
    }
}

/// Registry → driver: the first client subscribed to `device`; open it. The reply comes
/// when the device is ready (or failed, which the client sees as `e`).
#[derive(Message, Debug, Clone)]
#[rtype(result = "Result<(), DriverError>")]
pub struct Setup {
    /// The device code.
    pub device: u8,
    /// The client whose request opens it, for log lines (`"opened_by"`: the log's limits
    /// count a driver's lines about opening a device as that client's).
    pub client: Arc<str>,
}

/// Registry → driver: the last client left `device`; close it (a driver that serves several
/// devices over one link closes the link after the last of them).
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Shutdown {
    /// The device code.
    pub device: u8,
    /// The client that left it last, for log lines (`"client"`); empty when the server
    /// closes every device as it stops.
    pub client: Arc<str>,
}

/// Session → registry → driver: a client's command. Every front end sends it to the
/// recipient of its `Grant` (player-core's registry), which is the registry's guard (it checks
/// the sender still holds write access, drops it while the emergency stop is latched and
/// feeds the command watchdog) and forwards it to the driver. The newest command overwrites
/// the previous one.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Command {
    /// The device code.
    pub device: u8,
    /// The `<command>` field (its size was checked against the device's command size).
    pub payload: Bytes,
    /// The session that sent it ([`SessionId::SERVER`] for the server itself).
    pub session: SessionId,
}

/// Registry → driver: a client's configuration request for one of this driver's devices
/// (the config code followed by its arguments). Applied in the order received.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Config {
    /// The device code.
    pub device: u8,
    /// The config code and its arguments.
    pub payload: Bytes,
    /// Who sent it, for log lines.
    pub client: String,
    /// Where the config's answer goes, if the driver answers it ([`crate::answer`]): a
    /// driver that does not answer configs ignores it.
    pub answer: AnswerTo,
}

/// Why the registry stops a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A client that held write access left it (disconnected, closed it, dropped to
    /// read-only).
    WriterLeft,
    /// No command arrived within the device's `command_timeout` (the command watchdog).
    Watchdog,
    /// The emergency stop was latched.
    EmergencyStop,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StopReason::WriterLeft => "a client with write access left",
            StopReason::Watchdog => "command watchdog: no command within command_timeout",
            StopReason::EmergencyStop => "emergency stop",
        })
    }
}

/// Registry → driver: put `device` in its safe state, with its command zeroed: the
/// position device stops the wheels. Sent when a writer leaves, when the command watchdog
/// expires and when the emergency stop is latched.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Stop {
    /// The device code.
    pub device: u8,
    /// Why.
    pub reason: StopReason,
    /// The client that caused it, for log lines (`"client"`): the writer that left or
    /// fell silent, the client that latched the emergency stop.
    pub client: Arc<str>,
}

/// The state of a device as its driver sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceState {
    /// Working.
    Up,
    /// Failed: the link is lost, the device is silent or refuses.
    Failed,
    /// The driver is reconnecting its link.
    Reconnecting,
}

/// Driver → registry: a device changed state (its link was lost, it is reconnecting, it
/// is back). The registry keeps it for the device list and tells clients that asked for
/// notices.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct DeviceStatus {
    /// The device code.
    pub device: u8,
    /// The new state.
    pub state: DeviceState,
    /// Why, for a person.
    pub reason: String,
}

/// Where a driver reports [`DeviceStatus`] changes: the registry of its robot. A sink
/// made with [`StatusSink::none`] drops them (for drivers started outside a server). A
/// sink [`StatusSink::labelled`] reports each device under the code the robot serves it as.
#[derive(Clone, Default)]
pub struct StatusSink(Option<Recipient<DeviceStatus>>, Labels);

impl StatusSink {
    /// A sink reporting to `recipient`.
    pub fn new(recipient: Recipient<DeviceStatus>) -> Self {
        StatusSink(Some(recipient), Labels::none())
    }

    /// A sink that drops every report.
    pub fn none() -> Self {
        StatusSink(None, Labels::none())
    }

    /// The same sink, reporting a driver's own codes under the codes `labels` serves them
    /// as.
    pub fn labelled(mut self, labels: Labels) -> Self {
        self.1 = labels;
        self
    }

    /// Reports that each of `devices` (the driver's own codes) is now in `state`.
    pub fn report(&self, devices: &[u8], state: DeviceState, reason: &str) {
        if let Some(r) = &self.0 {
            for &device in devices {
                r.do_send(DeviceStatus {
                    device: self.1.served(device),
                    state,
                    reason: reason.to_string(),
                });
            }
        }
    }
}

/// Identifies one holder of devices within the server: a client session, a front end's
/// session, a recorder, a driver reading other devices. Ids are handed out by one counter
/// per server ([`SessionId::next`]); two ids are reserved: [`SessionId::SERVER`] and
/// [`SessionId::TAP`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(u64);

impl SessionId {
    /// The server itself: a command it sends passes the guard without write access (the
    /// e-stop still holds). Never handed out by [`SessionId::next`] from a counter that
    /// starts at 1.
    pub const SERVER: SessionId = SessionId(0);
    /// The registry's own tap, which reads every device it has set up (rates, silence,
    /// recording).
    pub const TAP: SessionId = SessionId(u64::MAX);

    /// The next id from a server's counter (which starts at 1, so it never hands out
    /// [`SessionId::SERVER`]).
    pub fn next(counter: &std::sync::atomic::AtomicU64) -> SessionId {
        SessionId(counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// The id as a number (for log lines and wire formats).
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for SessionId {
    fn from(n: u64) -> Self {
        SessionId(n)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl slog::Value for SessionId {
    fn serialize(
        &self,
        _record: &slog::Record,
        key: slog::Key,
        serializer: &mut dyn slog::Serializer,
    ) -> slog::Result {
        serializer.emit_u64(key, self.0)
    }
}

/// Registry → driver: a session starts or stops reading `device`. A session that starts
/// reading is sent the device's current reading at once (by [`Publisher`]), so a client
/// never waits a whole period, or forever for a device that has gone quiet, for its first
/// data.
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct Subscribers {
    /// The device code.
    pub device: u8,
    /// The session.
    pub session: SessionId,
    /// Where its data goes; `None` when it stops reading.
    pub recipient: Option<DataRecipient>,
}

/// Server → driver: the server is exiting. Stop the robot, close the ports, stop the actor.
/// The reply comes when that is done.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Terminate;

/// The default `command_timeout` of a device whose commands keep something moving.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_millis(500);

/// What a device allows, declared by its driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceSpec {
    /// The device code.
    pub code: u8,
    /// Whether it produces data.
    pub readable: bool,
    /// The exact size of its commands, if it takes commands.
    pub command_size: Option<usize>,
    /// For a device whose commands keep something moving (a base): how long its command
    /// holds without a fresh one before the registry's watchdog stops it. `None`: no
    /// watchdog. The configuration's `command_timeout` overrides the driver's default.
    pub command_timeout: Option<Duration>,
}

impl DeviceSpec {
    /// A device that only produces data.
    pub fn read_only(code: u8) -> Self {
        DeviceSpec {
            code,
            readable: true,
            command_size: None,
            command_timeout: None,
        }
    }

    /// A device that produces data and takes commands of `size` bytes.
    pub fn read_write(code: u8, size: usize) -> Self {
        DeviceSpec {
            code,
            readable: true,
            command_size: Some(size),
            command_timeout: None,
        }
    }

    /// A device that produces data and takes commands of `size` bytes that keep it moving
    /// (a base): watched by the command watchdog, [`DEFAULT_COMMAND_TIMEOUT`] unless the
    /// configuration says otherwise.
    pub fn moving(code: u8, size: usize) -> Self {
        DeviceSpec {
            command_timeout: Some(DEFAULT_COMMAND_TIMEOUT),
            ..DeviceSpec::read_write(code, size)
        }
    }
}

/// The addresses of a running driver actor, one per message it handles.
#[derive(Clone)]
pub struct DriverHandle {
    /// Where [`Setup`] goes.
    pub setup: Recipient<Setup>,
    /// Where [`Shutdown`] goes.
    pub shutdown: Recipient<Shutdown>,
    /// Where [`Command`] goes.
    pub command: Recipient<Command>,
    /// Where [`Config`] goes.
    pub config: Recipient<Config>,
    /// Where [`Stop`] goes.
    pub stop: Recipient<Stop>,
    /// Where [`Subscribers`] goes.
    pub subscribers: Recipient<Subscribers>,
    /// Where [`Terminate`] goes.
    pub terminate: Recipient<Terminate>,
    /// Where [`MapRequest`] goes, for a driver that has a map (see [`DriverHandle::with_map`]).
    pub map: Option<Recipient<MapRequest>>,
    /// Where [`WorldRequest`] goes, for a driver that has a world's solids (see
    /// [`DriverHandle::with_world`]).
    pub world: Option<Recipient<WorldRequest>>,
    /// Where [`GridRequest`] goes, for a driver that serves an occupancy grid (see
    /// [`DriverHandle::with_grid`]).
    pub grid: Option<Recipient<GridRequest>>,
    /// Where [`Playback`](crate::playback::Playback) goes, for a driver that plays a
    /// recording back (see [`DriverHandle::with_playback`]).
    pub playback: Option<Recipient<crate::playback::Playback>>,
}

impl DriverHandle {
    /// The handle of a driver actor.
    pub fn of<A>(addr: &Addr<A>) -> Self
    where
        A: Actor
            + Handler<Setup>
            + Handler<Shutdown>
            + Handler<Command>
            + Handler<Config>
            + Handler<Stop>
            + Handler<Subscribers>
            + Handler<Terminate>,
        A::Context: actix::dev::ToEnvelope<A, Setup>
            + actix::dev::ToEnvelope<A, Shutdown>
            + actix::dev::ToEnvelope<A, Command>
            + actix::dev::ToEnvelope<A, Config>
            + actix::dev::ToEnvelope<A, Stop>
            + actix::dev::ToEnvelope<A, Subscribers>
            + actix::dev::ToEnvelope<A, Terminate>,
    {
        DriverHandle {
            setup: addr.clone().recipient(),
            shutdown: addr.clone().recipient(),
            command: addr.clone().recipient(),
            config: addr.clone().recipient(),
            stop: addr.clone().recipient(),
            subscribers: addr.clone().recipient(),
            terminate: addr.clone().recipient(),
            map: None,
            world: None,
            grid: None,
            playback: None,
        }
    }

    /// The same handle, answering [`GridRequest`]s with `grid`.
    pub fn with_grid(mut self, grid: Recipient<GridRequest>) -> Self {
        self.grid = Some(grid);
        self
    }

    /// The same handle, answering [`WorldRequest`]s with `world`.
    pub fn with_world(mut self, world: Recipient<WorldRequest>) -> Self {
        self.world = Some(world);
        self
    }

    /// The same handle, answering [`MapRequest`]s with `map`.
    pub fn with_map(mut self, map: Recipient<MapRequest>) -> Self {
        self.map = Some(map);
        self
    }

    /// The same handle, answering [`Playback`](crate::playback::Playback) requests with
    /// `playback`.
    pub fn with_playback(mut self, playback: Recipient<crate::playback::Playback>) -> Self {
        self.playback = Some(playback);
        self
    }
}

#[derive(Default)]
struct Channel {
    recipients: Vec<(SessionId, DataRecipient)>,
    latest: Option<DeviceData>,
    seq: u64,
}

/// A driver's side of publishing: the readers and newest reading of each device.
///
/// The driver names its devices by its own codes throughout; a publisher made with the
/// instance's [`Labels`] ([`Publisher::labelled`], or
/// [`DriverContext::publisher`](crate::catalog::DriverContext::publisher)) stamps each
/// reading with the code the robot serves the device as ([`crate::labels`]).
#[derive(Default)]
pub struct Publisher {
    /// By the driver's own code.
    channels: HashMap<u8, Channel>,
    labels: Labels,
    /// Scratch of [`Publisher::publish_batch`]: the own code of each reading of the batch.
    owns: Vec<u8>,
    /// Scratch of [`Publisher::publish_batch`], kept for its memory: each reader's place in
    /// `readers`.
    at: HashMap<SessionId, usize, foldhash::fast::FixedState>,
    /// Scratch of [`Publisher::publish_batch`]: each reader once (the device and place of
    /// its first subscription) with the readings of the batch it reads (bit i: reading i).
    readers: Vec<(u8, usize, u64)>,
}

impl Publisher {
    /// An empty publisher, its readings under the driver's own codes.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty publisher stamping readings with the codes `labels` serves them as.
    pub fn labelled(labels: Labels) -> Self {
        Publisher {
            labels,
            ..Self::default()
        }
    }

    /// Applies the registry's change of readers; sends the current reading, if any, to a
    /// session that starts reading.
    pub fn set_subscribers(&mut self, msg: Subscribers) {
        let ch = self.channels.entry(msg.device).or_default();
        let at = ch.recipients.iter().position(|(id, _)| *id == msg.session);
        match (msg.recipient, at) {
            (Some(r), at) => {
                if let Some(latest) = &ch.latest {
                    r.send_single(latest.clone());
                }
                match at {
                    Some(i) => ch.recipients[i].1 = r,
                    None => ch.recipients.push((msg.session, r)),
                }
            }
            (None, Some(i)) => {
                ch.recipients.swap_remove(i);
            }
            (None, None) => {}
        }
    }

    /// Publishes a reading of `device` taken now.
    pub fn publish(&mut self, device: u8, data: Bytes) {
        self.publish_at(device, data, Timestamp::now());
    }

    /// Publishes a reading of `device` taken at `timestamp` to every subscriber.
    pub fn publish_at(&mut self, device: u8, data: Bytes, timestamp: Timestamp) {
        let msg = self.record(device, data, timestamp);
        for (_, r) in &self.channels[&device].recipients {
            if r.inbox.as_ref().is_some_and(|i| i.offer(&msg)) {
                continue;
            }
            r.send_single(msg.clone());
        }
    }

    /// Publishes readings of several devices taken at `timestamp` as one
    /// [`DeviceDataBatch`] to every session reading any of them. A session whose inbox
    /// takes readings gets the ones it reads there, all under one lock: a round built
    /// meanwhile sees all of them or none (an `l` and an `L` of the same scan, say), never
    /// one new and another old.
    pub fn publish_batch(&mut self, readings: Vec<(u8, Bytes)>, timestamp: Timestamp) {
        let mut owns = std::mem::take(&mut self.owns);
        owns.clear();
        let batch: Arc<[DeviceData]> = readings
            .into_iter()
            .map(|(device, data)| {
                owns.push(device);
                self.record(device, data, timestamp)
            })
            .collect();
        self.owns = owns;
        // Each reader once, with the readings of the batch it reads (bit i: batch[i]).
        let Publisher {
            channels,
            at,
            readers,
            owns,
            ..
        } = self;
        at.clear();
        readers.clear();
        for (i, &own) in owns.iter().enumerate() {
            let Some(ch) = channels.get(&own) else {
                continue;
            };
            let bit = 1u64.checked_shl(i as u32).unwrap_or(0);
            for (k, (id, _)) in ch.recipients.iter().enumerate() {
                match at.get(id) {
                    Some(&j) => readers[j].2 |= bit,
                    None => {
                        at.insert(*id, readers.len());
                        readers.push((own, k, bit));
                    }
                }
            }
        }
        // (A batch of more than 64 readings, more than a robot has devices, goes as a
        // message whole.)
        let shelvable = batch.len() <= 64;
        for &(device, k, mask) in readers.iter() {
            let r = &channels[&device].recipients[k].1;
            if shelvable && r.inbox.as_ref().is_some_and(|i| i.offer_all(&batch, mask)) {
                continue;
            }
            r.send_batch(DeviceDataBatch(batch.clone()));
        }
    }

    /// Numbers a new reading of `device` (the driver's own code) and keeps it as the
    /// latest, stamped with the code the device is served as.
    fn record(&mut self, device: u8, data: Bytes, timestamp: Timestamp) -> DeviceData {
        let served = self.labels.served(device);
        let ch = self.channels.entry(device).or_default();
        ch.seq += 1;
        let msg = DeviceData {
            device: served,
            data,
            timestamp,
            seq: ch.seq,
        };
        ch.latest = Some(msg.clone());
        msg
    }

    /// Numbers `device`'s readings afresh: the next is number 1 (a new run of what
    /// produces them, a driver program restarted, say). Consumers take the new numbering's
    /// readings at once ([`crate::fresh`]).
    pub fn renumber(&mut self, device: u8) {
        if let Some(ch) = self.channels.get_mut(&device) {
            ch.seq = 0;
        }
    }

    /// Forgets `device`'s reading (after its shutdown, so the next setup starts fresh).
    pub fn clear(&mut self, device: u8) {
        if let Some(ch) = self.channels.get_mut(&device) {
            ch.latest = None;
        }
    }
}

#[cfg(test)]
mod tests;
