//! Per-client configuration: the `x y` configs of data mode, frequency, one round
//! (`y d`) and timestamps (the extensions are in `extensions.rs`), and configs routed
//! to devices.

use super::Session;
use crate::logging::code as esc;
use crate::notice::{kind, Notice};
use crate::registry::RouteConfig;
use actix::prelude::*;
use bytes::Bytes;
use player_proto::{config, device, DataMode};
use slog::{debug, warn};
use std::time::{Duration, Instant};

impl Session {
    /// Logs (rate limited) and tells the client (when it asked) that a config was ignored.
    pub(super) fn config_ignored(&mut self, dev: u8, why: String, ctx: &mut Context<Self>) {
        if let Some(n) = self.throttle.allow("config") {
            warn!(self.log, "{}", why; "suppressed" => n);
        }
        self.notice(Notice::new(kind::CONFIG, dev, why), ctx);
    }

    pub(super) fn on_config(&mut self, dev: u8, payload: Bytes, ctx: &mut Context<Self>) {
        if payload.is_empty() {
            let why = format!("config to {} ignored: no config code", esc(dev));
            self.config_ignored(dev, why, ctx);
            return;
        }
        if dev != device::SERVER {
            let fut = self.registry.send(RouteConfig {
                device: dev,
                payload,
                client: self.client.clone(),
            });
            ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| {
                let why = match r {
                    Ok(Ok(())) => return,
                    Ok(Err(e)) => format!("config ignored: {e}"),
                    Err(e) => format!("config ignored: registry unavailable: {e}"),
                };
                act.config_ignored(dev, why, ctx);
            }));
            return;
        }
        let code = payload[0];
        let args = &payload[1..];
        match (code, args.len()) {
            (config::FREQUENCY, 2) => {
                let f = u16::from_be_bytes([args[0], args[1]]);
                if f == 0 {
                    self.config_ignored(dev, "frequency 0 refused".into(), ctx);
                    return;
                }
                let f = if f > self.opts.max_frequency {
                    warn!(self.log, "frequency clamped"; "asked" => f, "max" => self.opts.max_frequency);
                    self.opts.max_frequency
                } else {
                    f
                };
                debug!(self.log, "frequency set"; "hz" => f);
                self.period = Duration::from_secs_f64(1.0 / f64::from(f));
                self.account_load();
                if self.mode == DataMode::Continuous {
                    self.next_tick =
                        crate::timer::on_grid(Instant::now() + self.period, self.period);
                    self.schedule_tick(ctx);
                }
            }
            (config::DATA_MODE, 1) => {
                let mode = DataMode::from_code(args[0]);
                if mode == self.mode {
                    return;
                }
                debug!(self.log, "data mode set"; "mode" => mode.code());
                self.mode = mode;
                self.account_load();
                self.rounds_requested = 0;
                self.round_due = false;
                self.stop_ticking();
                if let Some(h) = self.push_timer.take() {
                    ctx.cancel_future(h);
                }
                match mode {
                    DataMode::Continuous => {
                        // A round at once, then every period.
                        self.next_tick = Instant::now();
                        self.schedule_tick(ctx);
                    }
                    DataMode::PushNew => self.push_new(ctx),
                    DataMode::RequestReply | DataMode::PullNew => {}
                }
            }
            (config::REQUEST_DATA, 0) => match self.mode {
                DataMode::RequestReply | DataMode::PullNew => {
                    self.rounds_requested = (self.rounds_requested + 1).min(16);
                    self.serve_requests(ctx);
                }
                _ => self.config_ignored(
                    dev,
                    "data request ignored: not in a request/reply mode".into(),
                    ctx,
                ),
            },
            (config::TIMESTAMPS, 1) => {
                self.timestamps = args[0] != 0;
                debug!(self.log, "timestamps"; "on" => self.timestamps);
            }
            _ => {
                if !self.on_extension(code, args, ctx) {
                    let why = format!(
                        "config ignored: unknown server config {} or wrong size ({} bytes)",
                        esc(code),
                        payload.len()
                    );
                    self.config_ignored(dev, why, ctx);
                }
            }
        }
    }
}
