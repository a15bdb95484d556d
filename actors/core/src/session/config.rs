//! Per-client configuration: the `x y` configs (decoded by
//! [`player_proto::config::ServerConfig`]) of data mode, frequency, one round (`y d`) and
//! timestamps (the extensions are in `extensions.rs`), and configs routed to devices.

use super::Session;
use crate::logging::code as esc;
use crate::notice::{kind, Notice};
use crate::registry::RouteConfig;
use actix::prelude::*;
use bytes::Bytes;
use player_proto::config::{ServerConfig, ServerConfigError};
use player_proto::device;
use slog::{debug, warn};
use std::time::Instant;

impl Session {
    /// Logs (rate limited) and tells the client (when it asked) that a config was ignored.
    pub(super) fn config_ignored(&mut self, dev: u8, why: String, ctx: &mut Context<Self>) {
        warn!(self.conn.log, "{}", why);
        self.notice(Notice::new(kind::CONFIG, dev, why), ctx);
    }

    pub(super) fn on_config(&mut self, dev: u8, payload: Bytes, ctx: &mut Context<Self>) {
        if payload.is_empty() {
            let why = format!("config to {} ignored: no config code", esc(dev));
            self.config_ignored(dev, why, ctx);
            return;
        }
        if dev != device::SERVER {
            let Some(registry) = self.conn.registry() else {
                let why = "config ignored: registry unavailable (the server is stopping)";
                self.config_ignored(dev, why.into(), ctx);
                return;
            };
            let places = self.conn.configs.get_or_insert_with(Default::default);
            let place = match places.take() {
                Ok(place) => place,
                Err(e) => {
                    let why = format!("config to {} refused: {e}", esc(dev));
                    self.config_ignored(dev, why, ctx);
                    return;
                }
            };
            let fut = registry.send(RouteConfig {
                device: dev,
                payload,
                client: self.conn.client(),
                answer: Some(ctx.address().recipient()),
                place: Some(place),
            });
            ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| {
                act.unpark(ctx);
                let why = match r {
                    Ok(Ok(())) => return,
                    Ok(Err(e)) => format!("config ignored: {e}"),
                    Err(e) => format!("config ignored: registry unavailable: {e}"),
                };
                act.config_ignored(dev, why, ctx);
            }));
            return;
        }
        let config = match ServerConfig::decode(&payload) {
            Ok(c) => c,
            Err(e) => {
                let why = match e {
                    ServerConfigError::Unknown { code, size } => format!(
                        "config ignored: unknown server config {} or wrong size ({size} bytes)",
                        esc(code),
                    ),
                    ServerConfigError::Empty => {
                        format!("config to {} ignored: no config code", esc(dev))
                    }
                };
                self.config_ignored(dev, why, ctx);
                return;
            }
        };
        match config {
            ServerConfig::Frequency(0) => {
                self.config_ignored(dev, "frequency 0 refused".into(), ctx);
            }
            ServerConfig::Frequency(f) => {
                let max = self.conn.opts.max_frequency;
                let f = if f > max {
                    warn!(self.conn.log, "frequency clamped"; "asked" => f, "max" => max);
                    max
                } else {
                    f
                };
                debug!(self.conn.log, "frequency set"; "hz" => f);
                let due = self.timers.schedule().set_frequency(f, Instant::now());
                self.account_load();
                self.apply(due, ctx);
            }
            ServerConfig::DataMode(mode) => {
                let now = Instant::now();
                let Some(due) = self
                    .timers
                    .schedule()
                    .set_mode(mode, now, self.list.any_new())
                else {
                    return;
                };
                debug!(self.conn.log, "data mode set"; "mode" => mode.code());
                self.account_load();
                self.stop_timers(ctx);
                self.apply(due, ctx);
            }
            ServerConfig::RequestData => {
                if self.timers.schedule().request_round() {
                    self.serve_requests(ctx);
                } else {
                    self.config_ignored(
                        dev,
                        "data request ignored: not in a request/reply mode".into(),
                        ctx,
                    );
                }
            }
            ServerConfig::Timestamps(on) => {
                self.timers.writer().set_timestamps(on);
                debug!(self.conn.log, "timestamps"; "on" => on);
            }
            ServerConfig::Errors(on) => self.set_notices(on, ctx),
            ServerConfig::EStop(latch) => self.on_estop(latch, ctx),
            ServerConfig::Key(key) => self.on_key(key, ctx),
            ServerConfig::DeviceList => self.send_device_list(ctx),
        }
    }
}
