//! A driver's way to reach other devices of its robot (a virtual device: a localizer
//! reading the laser, a planner driving the base): [`DeviceSource`], the robot's registry
//! behind one holder id of the driver's own.
//!
//! - [`DeviceSource::read`]: read a device (a read-only holder, like a session reading it).
//! - [`DeviceSource::hold`]: hold a device for reading and/or writing ([`Hold`]); with
//!   write access the reply carries a [`DeviceWriter`] whose commands go through the
//!   registry's guard exactly as a client's do (write access, the e-stop, the command
//!   watchdog), marked as this holder's. A holder marked [`Hold::yielding`] (a planner)
//!   gives way to clients: a client's own command to the device pre-empts it, and its
//!   commands are refused while a client writer is commanding. What happens to a holder is
//!   told as [`HolderEvent`]s.
//! - [`DeviceSource::config`]: send a config to a device, its answer going where the
//!   caller says (a driver serving a device on behalf of another relays its clients'
//!   configs so).
//! - [`DeviceSource::world`]: the simulated world's solids, for a map driver.
//! - [`DeviceSource::tell`]: a notice to the client whose command to one of the driver's
//!   own devices could not be carried out (a planner's goal in an obstacle).
//! - [`DeviceSource::grid`]: a map device's occupancy grid, cells and all, for a
//!   localizer (inside the server; a client downloads the same cells as tiles).

use crate::answer::AnswerTo;
use crate::driver::{Command, DataRecipient, DeviceError, DeviceSpec, SessionId};
use crate::world::{GridMap, GridRequest, WorldRequest, WorldSolids};
use actix::prelude::*;
use bytes::Bytes;
use std::sync::Arc;

/// Driver → registry: read (`on`) or stop reading another device of the same robot, as a
/// read-only subscriber (a virtual device processing other devices' data). The registry
/// sets the device up for its first holder and shuts it down after its last, as for a
/// session; a reader never gets write access. The reply comes when the device is set up
/// (or names why it cannot be read); stopping always succeeds.
#[derive(Message, Clone)]
#[rtype(result = "Result<(), DeviceError>")]
pub struct ReadDevice {
    /// The reader's id (the [`DeviceSource`]'s own session id).
    pub session: SessionId,
    /// The device code.
    pub device: u8,
    /// Where its readings go.
    pub recipient: DataRecipient,
    /// Start or stop reading.
    pub on: bool,
}

/// A driver's way to reach other devices of its robot (see the module's documentation):
/// the registry, behind one holder id of its own. [`DeviceSource::none`] refuses
/// everything (a driver started outside a server).
#[derive(Clone)]
pub struct DeviceSource {
    session: SessionId,
    /// How the registry's holder list and log lines name this holder.
    name: Arc<str>,
    registry: Option<Recipient<ReadDevice>>,
    hold: Option<Recipient<HoldDevice>>,
    config: Option<Recipient<SendConfig>>,
    world: Option<Recipient<WorldRequest>>,
    tell: Option<Recipient<TellClient>>,
    grid: Option<Recipient<GridRequest>>,
}

impl Default for DeviceSource {
    fn default() -> Self {
        DeviceSource {
            session: SessionId::SERVER,
            name: "".into(),
            registry: None,
            hold: None,
            config: None,
            world: None,
            tell: None,
            grid: None,
        }
    }
}

impl DeviceSource {
    /// A source that can only read, through `registry`, as reader `session` (unique in
    /// the server). [`DeviceSource::of`] gives the whole of it.
    pub fn new(session: SessionId, registry: Recipient<ReadDevice>) -> Self {
        DeviceSource {
            session,
            name: format!("driver reader {session}").into(),
            registry: Some(registry),
            ..DeviceSource::default()
        }
    }

    /// A source reaching the devices of `registry` as holder `session` (unique in the
    /// server), named `name` in the registry's holder list and log lines (`driver
    /// <name>`, say).
    pub fn of<A>(session: SessionId, registry: &Addr<A>, name: &str) -> Self
    where
        A: Actor
            + Handler<ReadDevice>
            + Handler<HoldDevice>
            + Handler<SendConfig>
            + Handler<WorldRequest>
            + Handler<TellClient>
            + Handler<GridRequest>,
        A::Context: actix::dev::ToEnvelope<A, ReadDevice>
            + actix::dev::ToEnvelope<A, HoldDevice>
            + actix::dev::ToEnvelope<A, SendConfig>
            + actix::dev::ToEnvelope<A, WorldRequest>
            + actix::dev::ToEnvelope<A, TellClient>
            + actix::dev::ToEnvelope<A, GridRequest>,
    {
        DeviceSource {
            session,
            name: name.into(),
            registry: Some(registry.clone().recipient()),
            hold: Some(registry.clone().recipient()),
            config: Some(registry.clone().recipient()),
            world: Some(registry.clone().recipient()),
            tell: Some(registry.clone().recipient()),
            grid: Some(registry.clone().recipient()),
        }
    }

    /// A source with no devices.
    pub fn none() -> Self {
        Self::default()
    }

    /// This holder's id: its commands carry it, the registry's holder list shows it.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Starts (`on`) or stops reading `device`; readings go to `recipient`. The future
    /// resolves when the device is set up, or with why it cannot be read.
    pub fn read(
        &self,
        device: u8,
        recipient: DataRecipient,
        on: bool,
    ) -> impl std::future::Future<Output = Result<(), DeviceError>> + 'static {
        let send = self.registry.as_ref().map(|r| {
            r.send(ReadDevice {
                session: self.session,
                device,
                recipient,
                on,
            })
        });
        async move {
            match send {
                None => Err(DeviceError::NoRegistry),
                Some(f) => f.await.unwrap_or(Err(DeviceError::RegistryStopped)),
            }
        }
    }

    /// Holds `device` as `hold` says (replacing how this source held it before). The
    /// future resolves when the device is set up, with what it allows and, for write
    /// access to a device that takes commands, the [`DeviceWriter`]; or with why it
    /// cannot be held. Readings, if `hold` reads, go to its recipient.
    pub fn hold(
        &self,
        device: u8,
        hold: Hold,
    ) -> impl std::future::Future<Output = Result<Held, DeviceError>> + 'static {
        let send = self.hold.as_ref().map(|r| {
            r.send(HoldDevice {
                session: self.session,
                device,
                hold: Some(hold),
                name: self.name.clone(),
            })
        });
        async move {
            match send {
                None => Err(DeviceError::NoRegistry),
                Some(f) => f.await.unwrap_or(Err(DeviceError::RegistryStopped)),
            }
        }
    }

    /// Stops holding `device` (read or write: a writer leaving stops the device, as a
    /// client leaving does). Nothing happens if it was not held.
    pub fn release(&self, device: u8) {
        if let Some(r) = &self.hold {
            r.do_send(HoldDevice {
                session: self.session,
                device,
                hold: None,
                name: self.name.clone(),
            });
        }
    }

    /// Sends `payload` (config code and arguments) to `device` as a config, the way a
    /// client's config goes; its answer, if the device answers, goes to `answer` (a
    /// driver relaying a client's config passes that config's [`AnswerTo`] on, so the
    /// client gets the answer). The future's error names an unknown device.
    pub fn config(
        &self,
        device: u8,
        payload: Bytes,
        answer: AnswerTo,
    ) -> impl std::future::Future<Output = Result<(), DeviceError>> + 'static {
        let send = self.config.as_ref().map(|r| {
            r.send(SendConfig {
                device,
                payload,
                answer,
                client: self.name.clone(),
            })
        });
        async move {
            match send {
                None => Err(DeviceError::NoRegistry),
                Some(f) => f.await.unwrap_or(Err(DeviceError::RegistryStopped)),
            }
        }
    }

    /// The robot's world (its static solids), from the first driver that has one (the
    /// simulator); `None` when none has, or outside a server.
    pub fn world(&self) -> impl std::future::Future<Output = Option<Arc<WorldSolids>>> + 'static {
        let send = self.world.as_ref().map(|r| r.send(WorldRequest));
        async move { send?.await.ok().flatten() }
    }

    /// Tells client `session` (the sender of a [`Command`] to one of this driver's own
    /// devices, `device`) why its command could not be carried out: a notice of kind `c`
    /// (a command ignored) if the client watches notices. Nothing happens outside a
    /// server or for a session that has gone.
    pub fn tell(&self, session: SessionId, device: u8, text: impl Into<String>) {
        if let Some(r) = &self.tell {
            r.do_send(TellClient {
                session,
                device,
                text: text.into(),
            });
        }
    }

    /// The occupancy grid of the map device `device` (as the robot serves it), from the
    /// driver serving it; `None` when that driver serves no grid or has none yet (the
    /// device is not set up: hold it first), or outside a server.
    pub fn grid(
        &self,
        device: u8,
    ) -> impl std::future::Future<Output = Option<Arc<GridMap>>> + 'static {
        let send = self.grid.as_ref().map(|r| r.send(GridRequest { device }));
        async move { send?.await.ok().flatten() }
    }
}

/// How a driver wants to hold a device ([`DeviceSource::hold`]): read it, write it, and
/// whether it yields to clients.
#[derive(Clone)]
pub struct Hold {
    /// Where its readings go (and, with `read`, that it reads them).
    pub recipient: DataRecipient,
    /// Whether it reads the device's data.
    pub read: bool,
    /// Whether it may command the device.
    pub write: bool,
    /// Whether it gives way to clients: a client's own command pre-empts it, its commands
    /// are refused while a client writer is commanding (a planner).
    pub yields: bool,
    /// Where [`HolderEvent`]s about this holding go, if anywhere.
    pub events: Option<Recipient<HolderEvent>>,
}

impl Hold {
    /// Reading the device, its readings going to `recipient`.
    pub fn read(recipient: DataRecipient) -> Self {
        Hold {
            recipient,
            read: true,
            write: false,
            yields: false,
            events: None,
        }
    }

    /// Writing the device only (`recipient` is kept for a later change to reading; it gets
    /// nothing meanwhile).
    pub fn write(recipient: DataRecipient) -> Self {
        Hold {
            read: false,
            write: true,
            ..Hold::read(recipient)
        }
    }

    /// Reading and writing the device.
    pub fn read_write(recipient: DataRecipient) -> Self {
        Hold {
            write: true,
            ..Hold::read(recipient)
        }
    }

    /// The same holding, yielding to clients (see [`Hold::yields`]); implies writing.
    pub fn yielding(mut self) -> Self {
        self.write = true;
        self.yields = true;
        self
    }

    /// The same holding, with its [`HolderEvent`]s sent to `events`.
    pub fn events(mut self, events: Recipient<HolderEvent>) -> Self {
        self.events = Some(events);
        self
    }
}

/// Driver → registry: hold `device` as `hold` says, or (`None`) stop holding it. The reply
/// comes when the device is set up (stopping always succeeds, with the device's spec when
/// it is known).
#[derive(Message, Clone)]
#[rtype(result = "Result<Held, DeviceError>")]
pub struct HoldDevice {
    /// The holder's id (the [`DeviceSource`]'s).
    pub session: SessionId,
    /// The device code (as the robot serves it).
    pub device: u8,
    /// How, or `None` to let go.
    pub hold: Option<Hold>,
    /// The holder's name, for the holder list and log lines.
    pub name: Arc<str>,
}

/// What a driver holding a device got.
#[derive(Clone)]
pub struct Held {
    /// What the device allows.
    pub spec: DeviceSpec,
    /// Its commands' way to the device (through the registry's guard), when it asked for
    /// write access and the device takes commands.
    pub writer: Option<DeviceWriter>,
}

/// A driver's commands to a device it holds with write access: each goes to the registry's
/// guard marked as this holder's, exactly as a client's command does.
#[derive(Clone)]
pub struct DeviceWriter {
    /// The device code.
    pub device: u8,
    /// The holder's id.
    pub session: SessionId,
    /// The device's command size.
    pub size: usize,
    /// The registry's guard.
    pub to: Recipient<Command>,
}

/// A command of the wrong size for its device ([`DeviceWriter::command`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("command of {got} bytes to a device that takes {size}")]
pub struct WrongCommandSize {
    /// What the device takes.
    pub size: usize,
    /// What was given.
    pub got: usize,
}

impl DeviceWriter {
    /// Sends one command (the device's exact command size). What the guard does with it
    /// comes back as [`HolderEvent`]s, if the holding asked for them.
    pub fn command(&self, payload: Bytes) -> Result<(), WrongCommandSize> {
        if payload.len() != self.size {
            return Err(WrongCommandSize {
                size: self.size,
                got: payload.len(),
            });
        }
        self.to.do_send(Command {
            device: self.device,
            payload,
            session: self.session,
        });
        Ok(())
    }
}

/// Registry → a driver holding a device: what happened to its holding.
#[derive(Message, Debug, Clone, PartialEq, Eq)]
#[rtype(result = "()")]
pub enum HolderEvent {
    /// The robot's emergency stop was latched (`latched`) or released, by `by`. While it
    /// is latched every command is refused and every device that takes commands is
    /// stopped.
    EStop {
        /// Latched (true) or released.
        latched: bool,
        /// Who.
        by: String,
    },
    /// The command watchdog stopped `device`: no command came within its
    /// `command_timeout` (the next command resumes it).
    Watchdog {
        /// The device.
        device: u8,
    },
    /// A client's own command to `device` pre-empted this yielding holder: the client's
    /// command went through and this holder's are refused while it keeps commanding.
    Preempted {
        /// The device.
        device: u8,
        /// The client, as its front end names it.
        by: String,
    },
    /// A command of this holder to `device` was refused (why, as a client's notice says).
    Refused {
        /// The device.
        device: u8,
        /// Why.
        reason: String,
    },
}

/// Driver → registry: a config for `device`, as a client's config goes, its answer to
/// `answer` ([`DeviceSource::config`]).
#[derive(Message, Debug, Clone)]
#[rtype(result = "Result<(), DeviceError>")]
pub struct SendConfig {
    /// The device code (as the robot serves it).
    pub device: u8,
    /// The config code and arguments.
    pub payload: Bytes,
    /// Where its answer goes.
    pub answer: AnswerTo,
    /// Who sends it, for log lines.
    pub client: Arc<str>,
}

/// Driver → registry: a notice of kind `c` (a command ignored) for one client, about a
/// command it sent to one of the driver's own devices ([`DeviceSource::tell`]).
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct TellClient {
    /// The client (the command's `session`).
    pub session: SessionId,
    /// The device the command was for.
    pub device: u8,
    /// Why it was not carried out.
    pub text: String,
}
