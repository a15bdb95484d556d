//! The registry actor: one robot's device table.
//!
//! It maps each device code to the driver actor behind it and what the device allows,
//! counts which sessions hold each device, asks the driver to set a device up when its first
//! session arrives and to shut it down after the last one leaves, and tells the driver which
//! sessions read it. A session losing write access to a device makes the registry tell the
//! driver to [`Stop`] it (the robot stops when its driver leaves). Setups run concurrently:
//! a slow device never holds up requests for another one.

use crate::driver::{
    Command, Config, DataRecipient, DeviceSpec, DriverError, DriverHandle, MapOutline, MapRequest,
    Setup, Shutdown, Stop, Subscribers, Terminate,
};
use actix::prelude::*;
use bytes::Bytes;
use futures::channel::oneshot;
use player_proto::device;
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::time::Duration;

pub use crate::driver::SessionId;

/// What a session was granted on a device.
#[derive(Debug, Clone)]
pub struct Grant {
    /// What the device allows.
    pub spec: DeviceSpec,
    /// Where to send commands, when the session asked for write access and the device
    /// takes commands.
    pub command: Option<Recipient<Command>>,
}

/// Session → registry: set this session's access to a device (read and/or write). The
/// first session to hold a device sets it up; the reply comes when the device is ready.
#[derive(Message)]
#[rtype(result = "Result<Grant, DriverError>")]
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
#[rtype(result = "Result<(), DriverError>")]
pub struct RouteConfig {
    /// The device code.
    pub device: u8,
    /// The config code and arguments.
    pub payload: Bytes,
    /// The client's address, for log lines.
    pub client: String,
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
}

enum State {
    Down,
    SettingUp(Vec<oneshot::Sender<Result<(), DriverError>>>),
    Up,
}

struct Device {
    spec: DeviceSpec,
    driver: DriverHandle,
    driver_name: String,
    holders: HashMap<SessionId, Holder>,
    state: State,
}

/// The registry actor of one robot.
pub struct Registry {
    robot: String,
    devices: HashMap<u8, Device>,
    drivers: Vec<(String, DriverHandle)>,
    setup_timeout: Duration,
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
            log,
        }
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

    /// Removes a session from a device; stops the device if it lost a writer and shuts it
    /// down if it lost its last holder.
    fn release(&mut self, session: SessionId, code: u8) {
        let Some(d) = self.devices.get_mut(&code) else {
            return;
        };
        let Some(h) = d.holders.remove(&session) else {
            return;
        };
        if h.write && d.spec.command_size.is_some() && !matches!(d.state, State::Down) {
            d.driver.stop.do_send(Stop { device: code });
        }
        if h.read {
            self.tell_reader(code, session, None);
        }
        let Some(d) = self.devices.get_mut(&code) else {
            return;
        };
        if d.holders.is_empty() && matches!(d.state, State::Up) {
            d.state = State::Down;
            info!(self.log, "device shut down"; "device" => device::name(code), "driver" => &d.driver_name);
            d.driver.shutdown.do_send(Shutdown { device: code });
        }
    }

    fn setup_done(&mut self, code: u8, result: Result<(), DriverError>) {
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
                info!(self.log, "device set up"; "device" => device::name(code), "driver" => &d.driver_name);
                d.state = State::Up;
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
                }
            }
            Err(e) => {
                warn!(self.log, "device setup failed"; "device" => device::name(code), "driver" => &d.driver_name, "error" => %e);
                d.holders.clear();
            }
        }
        for w in waiters {
            let _ = w.send(result.clone());
        }
    }
}

impl Actor for Registry {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Self::Context) {
        let codes: String = self.device_codes().into_iter().map(char::from).collect();
        info!(self.log, "registry ready"; "devices" => codes);
    }
}

impl Handler<Subscribe> for Registry {
    type Result = ResponseActFuture<Self, Result<Grant, DriverError>>;

    fn handle(&mut self, msg: Subscribe, _ctx: &mut Self::Context) -> Self::Result {
        let code = msg.device;
        let Some(d) = self.devices.get_mut(&code) else {
            let e = DriverError(format!("no device '{}' on this robot", char::from(code)));
            return Box::pin(fut::ready(Err(e)));
        };
        let spec = d.spec;
        let command = if msg.write {
            spec.command_size.map(|_| d.driver.command.clone())
        } else {
            None
        };
        let had_write = d.holders.get(&msg.session).is_some_and(|h| h.write);
        let had_read = d.holders.get(&msg.session).is_some_and(|h| h.read);
        d.holders.insert(
            msg.session,
            Holder {
                read: msg.read,
                write: msg.write,
                recipient: msg.recipient.clone(),
            },
        );
        if had_write && !msg.write && spec.command_size.is_some() {
            d.driver.stop.do_send(Stop { device: code });
        }
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
                    async move {
                        rx.await
                            .unwrap_or_else(|_| Err(DriverError("setup abandoned".into())))
                    }
                    .into_actor(self)
                    .map(move |r, _, _| r.map(|()| grant)),
                )
            }
            State::Down => {
                let (tx, rx) = oneshot::channel();
                d.state = State::SettingUp(vec![tx]);
                info!(self.log, "setting up device"; "device" => device::name(code), "driver" => &d.driver_name, "client" => &msg.client);
                let setup = d
                    .driver
                    .setup
                    .send(Setup { device: code })
                    .timeout(self.setup_timeout);
                let timeout = self.setup_timeout;
                Box::pin(
                    async move {
                        let result = match setup.await {
                            Ok(r) => r,
                            Err(MailboxError::Timeout) => Err(DriverError(format!(
                                "setup did not finish within {:.1} s",
                                timeout.as_secs_f64()
                            ))),
                            Err(MailboxError::Closed) => {
                                Err(DriverError("driver has stopped".into()))
                            }
                        };
                        (result, rx)
                    }
                    .into_actor(self)
                    .then(move |(result, rx), act, _| {
                        act.setup_done(code, result);
                        async move {
                            rx.await
                                .unwrap_or_else(|_| Err(DriverError("setup abandoned".into())))
                        }
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

    fn handle(&mut self, msg: Unsubscribe, _ctx: &mut Self::Context) {
        self.release(msg.session, msg.device);
    }
}

impl Handler<Disconnect> for Registry {
    type Result = ();

    fn handle(&mut self, msg: Disconnect, _ctx: &mut Self::Context) {
        let codes: Vec<u8> = self
            .devices
            .iter()
            .filter(|(_, d)| d.holders.contains_key(&msg.session))
            .map(|(c, _)| *c)
            .collect();
        for code in codes {
            self.release(msg.session, code);
        }
    }
}

impl Handler<RouteConfig> for Registry {
    type Result = Result<(), DriverError>;

    fn handle(&mut self, msg: RouteConfig, _ctx: &mut Self::Context) -> Self::Result {
        let Some(d) = self.devices.get(&msg.device) else {
            return Err(DriverError(format!(
                "no device '{}' on this robot",
                char::from(msg.device)
            )));
        };
        d.driver.config.do_send(Config {
            device: msg.device,
            payload: msg.payload,
            client: msg.client,
        });
        Ok(())
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
