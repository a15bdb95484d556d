//! A running server seen from outside: its state for the service manager
//! ([`Server::status`]: robots, clients, devices in trouble), a heartbeat from the drivers'
//! event loop ([`Server::heartbeat`], for systemd's watchdog), and reloads of what can
//! change without a restart ([`Server::reload`]: the `[access]` section; the log level is
//! the caller's, see [`crate::logging::LogLevel`]).

use super::{Listener, Server};
use crate::access::{AccessError, AccessSettings, Policy};
use crate::registry::ListDevices;
use crate::session::Recheck;
use actix::prelude::*;
use player_proto::ext::{state, DeviceEntry};
use std::fmt::Write as _;
use std::time::Duration;

/// Server → listener: how many clients are connected.
#[derive(Message)]
#[rtype(result = "usize")]
struct CountClients;

impl Handler<CountClients> for Listener {
    type Result = usize;

    fn handle(&mut self, _msg: CountClients, _ctx: &mut Self::Context) -> usize {
        self.sessions.len()
    }
}

/// Server → listener: the access policy was reloaded; every session re-checks its rights.
#[derive(Message)]
#[rtype(result = "usize")]
struct RecheckAll;

impl Handler<RecheckAll> for Listener {
    type Result = usize;

    fn handle(&mut self, _msg: RecheckAll, _ctx: &mut Self::Context) -> usize {
        let mut n = 0;
        for addr in self
            .sessions
            .values()
            .filter_map(|(a, _)| a.as_ref()?.upgrade())
        {
            addr.do_send(Recheck);
            n += 1;
        }
        n
    }
}

/// One robot's state.
#[derive(Debug, Clone)]
pub struct RobotStatus {
    /// The robot's name.
    pub name: String,
    /// Clients connected to its port.
    pub clients: usize,
    /// Its devices (the extension's device list).
    pub devices: Vec<DeviceEntry>,
}

/// The server's state: what `systemctl status` shows (`STATUS=`).
#[derive(Debug, Clone, Default)]
pub struct ServerStatus {
    /// Each robot, in configuration order.
    pub robots: Vec<RobotStatus>,
}

impl ServerStatus {
    /// Whether a device is being set up (the server is not ready while one is).
    pub fn settling(&self) -> bool {
        self.robots
            .iter()
            .flat_map(|r| &r.devices)
            .any(|d| d.state == state::SETTING_UP)
    }

    /// Whether every device has been set up or has failed (none idle or being set up):
    /// what a server whose devices are all set up at start (by a recorder) waits for.
    pub fn all_set_up(&self) -> bool {
        self.robots
            .iter()
            .flat_map(|r| &r.devices)
            .all(|d| !matches!(d.state, state::IDLE | state::SETTING_UP))
    }

    /// The devices failed or reconnecting, as `robot:code (state)`.
    pub fn in_trouble(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.robots {
            for d in &r.devices {
                if matches!(d.state, state::FAILED | state::RECONNECTING) {
                    out.push(format!(
                        "{}:{} ({})",
                        r.name,
                        crate::logging::code(d.code).trim_matches('\''),
                        d.state_name()
                    ));
                }
            }
        }
        out
    }

    /// One line: `1 robot, 3 clients, 7 devices; in trouble: pioneer:l (failed)`.
    pub fn line(&self) -> String {
        let clients: usize = self.robots.iter().map(|r| r.clients).sum();
        let devices: usize = self.robots.iter().map(|r| r.devices.len()).sum();
        let plural = |n: usize, one: &str| {
            if n == 1 {
                format!("1 {one}")
            } else {
                format!("{n} {one}s")
            }
        };
        let mut s = format!(
            "{}, {}, {}",
            plural(self.robots.len(), "robot"),
            plural(clients, "client"),
            plural(devices, "device")
        );
        let trouble = self.in_trouble();
        if trouble.is_empty() {
            s.push_str("; all devices fine");
        } else {
            let _ = write!(s, "; in trouble: {}", trouble.join(", "));
        }
        s
    }
}

/// What a reload changed.
#[derive(Debug, Clone, Default)]
pub struct Reloaded {
    /// The access rules differ from the ones they replaced.
    pub access_changed: bool,
    /// Sessions told to re-check their rights.
    pub sessions_rechecked: usize,
    /// Front-end clients (web sessions, the Zenoh bridge's robots) told to re-check theirs.
    pub front_end_rechecked: usize,
}

/// Calls its `pet` every `every` from the arbiter it runs on (see [`Server::heartbeat`]).
struct Heartbeat {
    every: Duration,
    pet: Box<dyn Fn() + Send>,
}

impl Actor for Heartbeat {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        (self.pet)();
        ctx.run_interval(self.every, |act, _| (act.pet)());
    }
}

impl Server {
    /// The state of every robot: clients connected, devices and their states.
    pub async fn status(&self) -> ServerStatus {
        let mut robots = Vec::with_capacity(self.registries.len());
        for (i, registry) in self.registries.iter().enumerate() {
            let clients = match self.listeners.get(i) {
                Some((l, _)) => l.send(CountClients).await.unwrap_or(0),
                None => 0,
            };
            let devices = registry.send(ListDevices).await.unwrap_or_default();
            let name = self
                .context
                .robots
                .get(i)
                .map_or_else(|| format!("robot {i}"), |r| r.name.clone());
            robots.push(RobotStatus {
                name,
                clients,
                devices,
            });
        }
        ServerStatus { robots }
    }

    /// Calls `pet` every `every`, and once now, on the drivers' thread (the arbiter the
    /// registries and drivers run on): while that event loop is stuck, `pet` is not
    /// called. For systemd's watchdog (`WATCHDOG=1`).
    pub fn heartbeat(&self, every: Duration, pet: impl Fn() + Send + 'static) {
        let pet: Box<dyn Fn() + Send> = Box::new(pet);
        match self.context.workers.first() {
            Some(drivers) => {
                Heartbeat::start_in_arbiter(drivers, move |_| Heartbeat { every, pet });
            }
            None => {
                Heartbeat { every, pet }.start();
            }
        }
    }

    /// Puts the rules of `access` (a configuration read again on SIGHUP, already checked
    /// whole) in force for every front end sharing the policy, and has every session
    /// re-check its rights (see [`crate::session::Recheck`]) and every attached front end
    /// its clients' ([`crate::frontend::FrontEnd::recheck`]).
    pub async fn reload(&mut self, access: &AccessSettings) -> Result<Reloaded, AccessError> {
        let policy = Policy::new(access)?;
        let access_changed = self.context.policy.replace(&policy);
        let (mut sessions_rechecked, mut front_end_rechecked) = (0, 0);
        if access_changed {
            for (l, _) in &self.listeners {
                sessions_rechecked += l.send(RecheckAll).await.unwrap_or(0);
            }
            for f in &self.front_ends {
                front_end_rechecked += f.recheck();
            }
        }
        self.context.access = access.clone();
        Ok(Reloaded {
            access_changed,
            sessions_rechecked,
            front_end_rechecked,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(code: u8, state: u8) -> DeviceEntry {
        DeviceEntry {
            code,
            access: b'r',
            state,
            readers: 0,
            writers: 0,
            data_size: 0,
            rate_x10: 0,
            driver: "sim".into(),
        }
    }

    #[test]
    fn the_status_line_counts_clients_and_names_devices_in_trouble() {
        let s = ServerStatus {
            robots: vec![
                RobotStatus {
                    name: "pioneer".into(),
                    clients: 2,
                    devices: vec![entry(b'p', state::UP), entry(b'l', state::FAILED)],
                },
                RobotStatus {
                    name: "create".into(),
                    clients: 1,
                    devices: vec![entry(b'p', state::RECONNECTING)],
                },
            ],
        };
        assert_eq!(
            s.line(),
            "2 robots, 3 clients, 3 devices; in trouble: pioneer:l (failed), create:p (reconnecting)"
        );
        assert!(!s.settling());
        assert!(s.all_set_up());
        let mut idle = s.clone();
        idle.robots[0].devices[0].state = state::IDLE;
        assert!(!idle.all_set_up() && !idle.settling());
    }
}
