//! A session's parameters ([`crate::params`] has their names, values and ranges):
//! `getParameters` is answered with the registry's command timeouts fetched at that
//! moment; a `setParameters` from a client without write access is refused with an error
//! status and changes nothing; one with it sets the registry's watchdog
//! ([`SetCommandTimeout`]) or this connection's rate cap, and every session of the
//! endpoint then sends `parameterValues` to its subscribers of what changed. Each session
//! also looks at the registry's values every second while it has parameter
//! subscriptions, so a change made elsewhere reaches them too.
//!
//! On an endpoint serving several robots ([`crate::world`]) the parameters are `robots`
//! and the endpoint's own, and only `web.max_rate_hz` is writable (a robot's command
//! timeouts are set on its own endpoint or in the configuration).

use super::rights::Admission;
use super::WebSession;
use crate::foxglove::{self, Level};
use crate::params::{self, Setting, Snapshot};
use crate::shared::SessionSignal;
use actix::prelude::*;
use player_core::registry::{CommandTimeouts, SetCommandTimeout, MAX_COMMAND_HOLD};
use player_kit::driver::DeviceSpec;
use serde_json::Value;
use slog::info;

/// Most entries of one `setParameters` looked at.
const MAX_SET: usize = 64;

impl WebSession {
    /// The devices of the endpoint's one robot (none where it serves several: their
    /// parameters are not offered there).
    fn single_specs(&self) -> &[(DeviceSpec, String)] {
        let robots = &self.shared.robots;
        match robots.get(0) {
            Some(r) if !robots.several() => &r.specs,
            _ => &[],
        }
    }

    /// Every parameter's value as this session knows it.
    fn parameter_values(&self) -> Vec<(String, Value)> {
        let robots = &self.shared.robots;
        let snapshot = Snapshot {
            robot: robots.get(0).map_or("", |r| r.name.as_str()),
            specs: self.single_specs(),
            timeouts: &self.ops.timeouts,
            stall_timeout: self.shared.stall_timeout,
            max_clients: self.shared.max_clients,
            max_command_hold: MAX_COMMAND_HOLD,
            max_rate_hz: self.ops.max_rate_hz,
        };
        if robots.several() {
            params::world_values(robots.iter().map(|r| r.name.as_str()), &snapshot)
        } else {
            params::values(&snapshot)
        }
    }

    /// Fetches the registry's command timeouts (the endpoint's one robot's; none where it
    /// serves several), then runs `then`.
    pub(super) fn with_timeouts(
        &mut self,
        ctx: &mut Context<Self>,
        then: impl FnOnce(&mut Self, &mut Context<Self>) + 'static,
    ) {
        let registry = match self.shared.robots.get(0) {
            Some(r) if !self.shared.robots.several() => r.registry.clone(),
            _ => return then(self, ctx),
        };
        let fut = registry.send(CommandTimeouts);
        ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| {
            if let Ok(list) = r {
                act.ops.timeouts = list.into_iter().collect();
            }
            then(act, ctx);
        }));
    }

    /// `getParameters`: the values of `names` (all when empty), with `id`.
    pub(super) fn get_parameters(
        &mut self,
        names: Vec<String>,
        id: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        self.with_timeouts(ctx, move |act, ctx| {
            let picked: Vec<(String, Value)> = act
                .parameter_values()
                .into_iter()
                .filter(|(n, _)| names.is_empty() || names.contains(n))
                .collect();
            act.send_text(foxglove::parameter_values(&picked, id.as_deref()), ctx);
        });
    }

    /// Answers a `setParameters` carrying `id` with the values of `names` now.
    fn answer_set(&mut self, names: &[String], id: Option<&str>, ctx: &mut Context<Self>) {
        let Some(id) = id else {
            return;
        };
        let current: Vec<(String, Value)> = self
            .parameter_values()
            .into_iter()
            .filter(|(n, _)| names.contains(n))
            .collect();
        self.send_text(foxglove::parameter_values(&current, Some(id)), ctx);
    }

    /// `setParameters`: refused as a whole without write access; with it, each writable
    /// parameter in range is set and the rest named in a status.
    pub(super) fn set_parameters(
        &mut self,
        parameters: Vec<(String, Value)>,
        id: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        let names: Vec<String> = parameters
            .iter()
            .take(MAX_SET)
            .map(|(n, _)| n.clone())
            .collect();
        if !self.admission.may_write() {
            return self.refuse_set(names, id, ctx);
        }
        let mut refused = Vec::new();
        let mut timeouts = Vec::new();
        let mut local_change = false;
        let several = self.shared.robots.several();
        for (name, value) in parameters.iter().take(MAX_SET) {
            if several && name.ends_with(".command_timeout") {
                refused.push(format!(
                    "{}: command timeouts are set on a robot's own endpoint (this one serves {} robots)",
                    name.chars().take(40).collect::<String>(),
                    self.shared.robots.len()
                ));
                continue;
            }
            match params::parse_setting(name, value, self.single_specs()) {
                Ok(Setting::MaxRate(hz)) => {
                    info!(self.log, "web rate cap set"; "max_rate_hz" => hz);
                    self.ops.max_rate_hz = hz;
                    self.ops.last_sent.clear();
                    local_change = true;
                }
                Ok(Setting::CommandTimeout { device, timeout }) => {
                    let Some(registry) = self.registry(0) else {
                        continue;
                    };
                    timeouts.push(registry.send(SetCommandTimeout {
                        device,
                        timeout,
                        client: self.client.clone(),
                    }));
                }
                Err(e) => refused.push(e.to_string()),
            }
        }
        if !refused.is_empty() {
            let m = format!(
                "parameters not set: {}",
                refused
                    .iter()
                    .take(8)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            self.status(Level::Warning, &m, ctx);
        }
        let any_timeout = !timeouts.is_empty();
        let all = futures::future::join_all(timeouts);
        ctx.spawn(all.into_actor(self).map(move |_, act, ctx| {
            act.with_timeouts(ctx, move |act, ctx| {
                act.answer_set(&names, id.as_deref(), ctx);
                if any_timeout {
                    // Every session of the endpoint (this one too) tells its subscribers.
                    act.shared.signal_all(SessionSignal::ParametersChanged);
                } else if local_change {
                    act.send_parameter_updates(ctx);
                }
            });
        }));
    }

    /// A `setParameters` of a client that may not command: refused as a whole, and
    /// answered with the values unchanged.
    fn refuse_set(&mut self, names: Vec<String>, id: Option<String>, ctx: &mut Context<Self>) {
        let shown: Vec<String> = names
            .iter()
            .take(8)
            .map(|n| n.chars().take(40).collect())
            .collect();
        let why = Admission::refusal(&self.shared.policy);
        let m = format!("parameters not set ({}): {why}", shown.join(", "));
        self.status(Level::Error, &m, ctx);
        self.with_timeouts(ctx, move |act, ctx| {
            act.answer_set(&names, id.as_deref(), ctx);
        });
    }

    /// Sends this session's parameter subscribers the values that changed.
    fn send_parameter_updates(&mut self, ctx: &mut Context<Self>) {
        if self.ops.param_subs.is_empty() {
            return;
        }
        let now = self.parameter_values();
        let changed = params::changed(&now, &self.ops.param_subs, &mut self.ops.param_sent);
        if !changed.is_empty() {
            self.send_text(foxglove::parameter_values(&changed, None), ctx);
        }
    }

    /// Fetches the registry's values and sends the subscribers what changed.
    pub(super) fn refresh_parameters(&mut self, ctx: &mut Context<Self>) {
        self.with_timeouts(ctx, |act, ctx| act.send_parameter_updates(ctx));
    }

    /// `subscribeParameterUpdates`: later changes of `names` are sent (at most
    /// [`params::MAX_PARAMETER_SUBSCRIPTIONS`] names).
    pub(super) fn subscribe_parameters(&mut self, names: Vec<String>, ctx: &mut Context<Self>) {
        let now = self.parameter_values();
        for n in names {
            if self.ops.param_subs.len() >= params::MAX_PARAMETER_SUBSCRIPTIONS {
                self.status(Level::Warning, "too many parameter subscriptions", ctx);
                break;
            }
            if let Some((_, v)) = now.iter().find(|(k, _)| *k == n) {
                self.ops.param_sent.insert(n.clone(), v.clone());
                self.ops.param_subs.insert(n);
            }
        }
    }

    /// `unsubscribeParameterUpdates`.
    pub(super) fn unsubscribe_parameters(&mut self, names: &[String]) {
        for n in names {
            self.ops.param_subs.remove(n);
            self.ops.param_sent.remove(n);
        }
    }
}
