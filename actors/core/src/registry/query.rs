//! What front ends may ask the registry beyond holding devices: who holds each device (the
//! web viewer's connection graph), the command watchdog's timeouts, and changing one at
//! run time (a web client with write access sets `command_timeout`), the map outline of
//! the first driver that has one, the playback of the first driver that plays back. Every
//! answer is bounded: at most [`MAX_LISTED_HOLDERS`] holders per device, the rest counted.

use super::{ControlPlayback, GetMap, PlaybackClock, Registry, SessionId};
use actix::prelude::*;
use player_kit::driver::{MapOutline, MapRequest};
use player_kit::playback::Playback;
use slog::info;
use std::sync::Arc;
use std::time::Duration;

/// Most holders of one device [`ListHolders`] names (the lowest session ids); the others
/// are only counted ([`DeviceHolders::more`]).
pub const MAX_LISTED_HOLDERS: usize = 32;

/// One session holding a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderEntry {
    /// The session.
    pub session: SessionId,
    /// Who it is, as its front end named it when it subscribed: a TCP client's address
    /// (`127.0.0.1:41234`), `web <address>`, `zenoh`, `ros2`, `recorder`,
    /// `driver reader <id>`.
    pub client: String,
    /// It reads the device's data.
    pub read: bool,
    /// It holds write access (its commands pass the guard).
    pub write: bool,
}

/// Who holds one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceHolders {
    /// The device code.
    pub code: u8,
    /// The driver behind it.
    pub driver: String,
    /// It produces data.
    pub readable: bool,
    /// It takes commands.
    pub commandable: bool,
    /// Its holders, by session id, at most [`MAX_LISTED_HOLDERS`].
    pub holders: Vec<HolderEntry>,
    /// How many more hold it.
    pub more: usize,
}

/// Anyone → registry: who holds each device, sorted by code.
#[derive(Message)]
#[rtype(result = "Vec<DeviceHolders>")]
pub struct ListHolders;

/// Anyone → registry: the command timeout of each device that takes commands, sorted by
/// code (`None`: not watched).
#[derive(Message)]
#[rtype(result = "Vec<(u8, Option<Duration>)>")]
pub struct CommandTimeouts;

/// Front end → registry: from now on `device` is stopped when no command has come for
/// `timeout` (every front end's writers alike; a command already holding is judged by it
/// too). The caller decides who may (the web viewer: clients with write access) and
/// bounds the value; zero is ignored (turning the watchdog off is the configuration's).
/// The reply is the timeout in force after it, `None` when the robot has no such device
/// that takes commands.
#[derive(Message, Debug, Clone)]
#[rtype(result = "Option<Duration>")]
pub struct SetCommandTimeout {
    /// The device code.
    pub device: u8,
    /// The new timeout.
    pub timeout: Duration,
    /// Who asked, for the log.
    pub client: String,
}

impl Handler<ListHolders> for Registry {
    type Result = Vec<DeviceHolders>;

    fn handle(&mut self, _msg: ListHolders, _ctx: &mut Self::Context) -> Vec<DeviceHolders> {
        self.table
            .codes()
            .into_iter()
            .filter_map(|code| {
                let d = self.table.devices.get(&code)?;
                let mut ids: Vec<SessionId> = d.holders.keys().copied().collect();
                ids.sort_unstable();
                let more = ids.len().saturating_sub(MAX_LISTED_HOLDERS);
                let holders = ids
                    .into_iter()
                    .take(MAX_LISTED_HOLDERS)
                    .filter_map(|s| {
                        let h = d.holders.get(&s)?;
                        Some(HolderEntry {
                            session: s,
                            client: h.client.to_string(),
                            read: h.read,
                            write: h.write,
                        })
                    })
                    .collect();
                Some(DeviceHolders {
                    code,
                    driver: d.driver_name.clone(),
                    readable: d.spec.readable,
                    commandable: d.commandable(),
                    holders,
                    more,
                })
            })
            .collect()
    }
}

impl Handler<CommandTimeouts> for Registry {
    type Result = Vec<(u8, Option<Duration>)>;

    fn handle(
        &mut self,
        _msg: CommandTimeouts,
        _ctx: &mut Self::Context,
    ) -> Vec<(u8, Option<Duration>)> {
        self.table
            .codes()
            .into_iter()
            .filter(|c| self.table.devices.get(c).is_some_and(|d| d.commandable()))
            .map(|c| (c, self.guard.timeout(c)))
            .collect()
    }
}

impl Handler<SetCommandTimeout> for Registry {
    type Result = Option<Duration>;

    fn handle(&mut self, msg: SetCommandTimeout, ctx: &mut Self::Context) -> Option<Duration> {
        let code = msg.device;
        if !self.table.devices.get(&code)?.commandable() {
            return None;
        }
        let before = self.guard.set_timeout(code, msg.timeout);
        let now = self.guard.timeout(code);
        if now != before {
            info!(self.log, "command watchdog timeout changed"; "device" => player_kit::log::device(code),
                "from_s" => before.map_or(0.0, |t| t.as_secs_f64()),
                "to_s" => now.map_or(0.0, |t| t.as_secs_f64()), "client" => &msg.client);
            // An armed watchdog's deadline moved: re-arm the check for it.
            self.schedule_watchdog(ctx);
        }
        now
    }
}

impl Handler<GetMap> for Registry {
    type Result = ResponseFuture<Option<MapOutline>>;

    fn handle(&mut self, msg: GetMap, _ctx: &mut Self::Context) -> Self::Result {
        let asks: Vec<_> = self
            .table
            .devices
            .values()
            .filter_map(|d| d.driver.map.clone().map(|m| (d.own, m)))
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

impl Handler<ControlPlayback> for Registry {
    type Result = ResponseFuture<Option<Arc<PlaybackClock>>>;

    fn handle(&mut self, msg: ControlPlayback, _ctx: &mut Self::Context) -> Self::Result {
        let driver = self
            .table
            .devices
            .values()
            .find_map(|d| d.driver.playback.clone());
        Box::pin(async move {
            let driver = driver?;
            driver
                .send(Playback(msg.0))
                .timeout(Duration::from_secs(5))
                .await
                .ok()
        })
    }
}
