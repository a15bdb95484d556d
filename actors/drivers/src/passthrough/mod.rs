//! The `passthrough` driver: devices of another Player server served as devices of this
//! one, so one server can present the devices of a whole fleet as one device table.
//!
//! ```toml
//! [[robot.driver]]
//! driver = "passthrough"
//! devices = ["P", "S"]          # the local codes
//! [robot.driver.params]
//! host = "10.0.0.12"
//! port = 6665
//! remote = ["p", "s"]           # the remote codes, one per local code (default: the same)
//! ```
//!
//! Parameters (`[robot.driver.params]`):
//!
//! - `host`, `port`: the remote server (default `127.0.0.1:6665`);
//! - `device`: the remote code of the one local device (default: the local code), or
//!   `remote`: the remote codes of all the local devices, in order; all of an entry's
//!   devices share one connection;
//! - `frequency`: Hz asked of the remote (default 50; in push-new mode, so each reading is
//!   relayed once as soon as it is new, and this caps how often);
//! - `key`: the remote's shared access key (`[access] key` there);
//! - `extensions`: use the remote's extensions (default true: timestamps, push-new data
//!   mode, error channel, device list as a heartbeat); false for a server that speaks only
//!   0.7.4a (readings are then stamped on arrival and relayed every round);
//! - `data_size`, `command_size`, `moving`: what the local devices declare (default: by the
//!   remote code, from `player_proto`: position 21 bytes of data, 4-byte commands, moving;
//!   gripper 2 and 2; ptz 6 and 6; sonar 32, laser 722, misc 3, vision up to 3264, read
//!   only; an unknown code: up to 65535 bytes, read only); `data_size` is the largest
//!   reading relayed (larger ones are dropped and counted), `command_size = 0` makes the
//!   devices read-only, `moving` puts them under the command watchdog. They apply to every
//!   device of the entry;
//! - `connect_timeout`: seconds the first connection may take (default 5);
//! - `silence`: seconds without a byte from the remote before the link is taken for lost
//!   (default 3; with extensions a device-list request is sent every quarter of it, so a
//!   quiet but live remote always answers);
//!
//! What happens: the first local holder of a device opens the connection (if not open) and
//! asks the remote for the device, read-only; setup answers when the remote replies (its
//! `e` is the local `e`). The first command of a local writer asks the remote for `a`
//! (that command is sent once it is granted), and a local writer leaving drops it back to
//! `r`, so the remote sees the relay as a writer exactly while a local writer commands, and
//! a local reader leaving never stops a robot that others drive on the remote. The last
//! holder leaving closes the remote device, and the connection after the last device.
//! Readings are published with the remote's timestamps and payloads byte for byte.
//! Commands are forwarded as they come (newest wins while the connection is busy; never
//! resent: the local controller's resends are what keeps the remote's watchdog fed, so a
//! controller that stops, or a link that dies, stops the remote robot through the remote's
//! own watchdog). The local guard's `Stop` (a writer left, the local watchdog, the local
//! e-stop) is forwarded to a `moving` device as a zero command, and a writer leaving also
//! drops the remote device to `r` (the remote's own writer-left stop). The local e-stop
//! also latches the remote robot's own e-stop (`x y E 1`, when the relay backs a device
//! that takes commands), so the robot stays stopped whoever else drives it there; releasing
//! the local e-stop does not release the remote's: a robot stopped for safety is released
//! on its own server, by someone who can see it (`player-cli estop off` on its port). Configs are
//! forwarded; 0.7.4a configs have no reply, and the remote's refusals (its error channel's
//! `x` notices) are logged. When the connection is lost the open devices are reported
//! reconnecting (clients with the error channel get `f`), it is reopened with the kit's
//! shared reconnect loop (`player_kit::link::run_link`: backoff from 0.2 s to 5 s), the
//! devices are asked for again, and reported up (`u`) once the remote grants them; no
//! command is replayed after a reconnect.

pub mod codec;
mod link;
mod mapping;

use actix::prelude::*;
use link::{Granted, LinkTask, Reading, Shared};
use mapping::{LinkConfig, Mapped};
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{
    Command, Config, DriverError, Publisher, Setup, Shutdown, StatusSink, Stop, StopReason,
};
use player_kit::link::{close_channel, run_link, LinkState, LinkSupervisor, LogThrottle};
use player_kit::log::code;
use player_kit::plain::{Driver, Reply};
use slog::{debug, info, warn, Logger};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use mapping::PassthroughParams;

/// Configs waiting for the connection; more are dropped (and logged).
const MAX_QUEUED_CONFIGS: usize = 64;

/// The passthrough driver actor.
pub struct PassthroughDriver {
    cfg: Arc<LinkConfig>,
    shared: Arc<Shared>,
    publisher: Publisher,
    link: LinkSupervisor,
    pending: BTreeMap<u8, Vec<tokio::sync::oneshot::Sender<Result<(), String>>>>,
    status: StatusSink,
    dropped_configs: LogThrottle,
    log: Logger,
}

impl PassthroughDriver {
    fn new(ctx: &DriverContext) -> Result<PassthroughDriver, DriverError> {
        let params: PassthroughParams = ctx.params()?;
        let cfg = LinkConfig::from_params(params, &ctx.devices)?;
        let log = ctx.logger.new(slog::o!("remote" => cfg.address()));
        Ok(PassthroughDriver {
            cfg: Arc::new(cfg),
            shared: Arc::default(),
            publisher: ctx.publisher(),
            link: LinkSupervisor::new("passthrough"),
            pending: BTreeMap::new(),
            status: ctx.status.clone(),
            dropped_configs: LogThrottle::default(),
            log,
        })
    }

    /// Starts the link task; its log lines name the client whose request opened it.
    fn start_link(&mut self, opened_by: &str, ctx: &mut Context<Self>) {
        let (close, close_rx) = close_channel();
        self.shared.with(|o| {
            o.commands.clear();
            o.configs.clear();
        });
        let to = (ctx.address().recipient(), ctx.address().recipient());
        let log = self.log.new(slog::o!("opened_by" => opened_by.to_string()));
        let task = LinkTask::new(
            self.cfg.clone(),
            self.shared.clone(),
            to,
            self.status.clone(),
            log,
        );
        self.link
            .start(close, move |state| run_link(task, close_rx, state));
    }

    /// Forgets a device that is no longer wanted; closes the link after the last one.
    fn unwant(&mut self, device: u8) -> Option<impl std::future::Future<Output = ()>> {
        let empty = self.shared.with(|o| {
            o.wanted.remove(&device);
            o.write.remove(&device);
            o.wanted.is_empty()
        });
        self.shared.wake.notify_one();
        empty.then(|| self.link.close())
    }
}

impl Actor for PassthroughDriver {
    type Context = Context<Self>;
}

impl Driver for PassthroughDriver {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        msg: Setup,
        ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        if self.cfg.by_local(msg.device).is_none() {
            return Reply::Now(Err(DriverError::not_served(format!(
                "the passthrough driver does not serve {}",
                code(msg.device)
            ))));
        }
        if !self.link.is_running() {
            self.start_link(&msg.client, ctx);
        } else if self
            .link
            .state()
            .is_some_and(|s| *s == LinkState::Reconnecting)
        {
            return Reply::Now(Err(DriverError::link(format!(
                "the remote server {} is unreachable (reconnecting)",
                self.cfg.address()
            ))));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pending.entry(msg.device).or_default().push(tx);
        self.shared.with(|o| o.wanted.insert(msg.device));
        self.shared.wake.notify_one();
        let ready = self.link.wait_ready();
        let device = msg.device;
        let client = msg.client;
        Reply::later(
            async move {
                ready.await?;
                match rx.await {
                    Ok(r) => r.map_err(DriverError::refused),
                    Err(_) => Err(DriverError::link("the passthrough link ended during setup")),
                }
            }
            .into_actor(self)
            .then(move |res, act, _| {
                let close = match &res {
                    Ok(()) => None,
                    Err(e) => {
                        warn!(act.log, "remote device setup failed"; "device" => code(device), "error" => %e, "client" => &*client);
                        act.pending.remove(&device);
                        // After the last wanted device the link is closed (a link whose
                        // first connection failed has ended; closing it only forgets it).
                        act.unwant(device)
                    }
                };
                async move {
                    if let Some(c) = close {
                        c.await;
                    }
                    res
                }
                .into_actor(act)
            }),
        )
    }

    fn shutdown(&mut self, msg: Shutdown, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        match self.unwant(msg.device) {
            Some(close) => Reply::later(close.into_actor(self)),
            None => Reply::Now(()),
        }
    }

    fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
        self.shared.with(|o| {
            if o.wanted.contains(&msg.device) {
                o.commands.insert(msg.device, msg.payload);
                o.write.insert(msg.device);
            }
        });
        self.shared.wake.notify_one();
    }

    fn stop(&mut self, msg: Stop, _ctx: &mut Context<Self>) {
        let Some(m) = self.cfg.by_local(msg.device).copied() else {
            return;
        };
        // A moving device gets a zero command; when a writer left, the remote device is
        // also dropped to read-only (asked `a` again with the next command), so the
        // remote's own writer-left stop applies too, whatever the device.
        let zero = match m.command_size {
            Some(n) if m.moving => Some(bytes::Bytes::from(vec![0u8; n])),
            _ => None,
        };
        debug!(self.log, "stop forwarded"; "device" => code(m.local), "reason" => %msg.reason, "zero_command" => zero.is_some());
        self.shared.with(|o| {
            if let Some(z) = zero {
                if o.write.contains(&m.local) {
                    o.commands.insert(m.local, z);
                }
            }
            if msg.reason == StopReason::WriterLeft {
                o.write.remove(&m.local);
            }
            if msg.reason == StopReason::EmergencyStop && m.command_size.is_some() {
                o.estop = true;
            }
        });
        self.shared.wake.notify_one();
    }

    fn config(&mut self, msg: Config, _ctx: &mut Context<Self>) {
        let queued = self.shared.with(|o| {
            if !o.wanted.contains(&msg.device) || o.configs.len() >= MAX_QUEUED_CONFIGS {
                return false;
            }
            o.configs
                .push_back((msg.device, msg.payload, msg.client.clone()));
            true
        });
        if queued {
            self.shared.wake.notify_one();
        } else if self.dropped_configs.hit() {
            warn!(self.log, "config not forwarded: the device is not open or too many wait";
                "device" => code(msg.device), "client" => &msg.client, "dropped" => self.dropped_configs.count());
        }
    }

    fn terminate(&mut self, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        self.shared.with(|o| o.wanted.clear());
        let close = self.link.close();
        Reply::later(close.into_actor(self).map(|_, act, _| {
            info!(act.log, "passthrough driver stopped");
        }))
    }
}

player_kit::driver_handlers!(PassthroughDriver);

impl Handler<Granted> for PassthroughDriver {
    type Result = ();

    fn handle(&mut self, msg: Granted, _ctx: &mut Self::Context) {
        for tx in self.pending.remove(&msg.device).unwrap_or_default() {
            let _ = tx.send(msg.result.clone());
        }
    }
}

impl Handler<Reading> for PassthroughDriver {
    type Result = ();

    fn handle(&mut self, msg: Reading, _ctx: &mut Self::Context) {
        // A reading still in flight when its device was shut down must not become the
        // reading a later holder is sent first.
        if self.shared.with(|o| o.wanted.contains(&msg.device)) {
            self.publisher.publish_at(msg.device, msg.data, msg.at);
        }
    }
}

/// Registers the `passthrough` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("passthrough", |ctx: DriverContext| {
        let driver = PassthroughDriver::new(&ctx)?;
        let devices = driver.cfg.devices.iter().map(Mapped::spec).collect();
        Ok(StartedDriver::of(&driver.start(), devices))
    });
}
