//! A client's service calls (the e-stop, motor power, odometry reset, any device config:
//! the request made into an action by [`commands::service`], answered with a JSON
//! response or a `serviceCallFailure`), and playback control of a replayed robot
//! ([`crate::playback`]: requests, the replay's clock and its state).

use super::commands::{self, Call};
use super::rights::Admission;
use super::WebSession;
use crate::foxglove::{self, Level};
use crate::playback;
use actix::prelude::*;
use player_core::registry::{ControlPlayback, EStop, RouteConfig};
use serde_json::Value;
use slog::info;

impl WebSession {
    /// A service call: the robot named (where the endpoint serves several), the request
    /// made into an action and taken, the client answered.
    pub(super) fn on_service_call(
        &mut self,
        service: u32,
        call: u32,
        encoding: &str,
        payload: &[u8],
        ctx: &mut Context<Self>,
    ) {
        let fail = move |act: &mut Self, ctx: &mut Context<Self>, m: &str| {
            act.send_text(foxglove::service_call_failure(service, call, m), ctx);
        };
        let Some(svc) = foxglove::SERVICES.iter().find(|s| s.id == service) else {
            return fail(self, ctx, &format!("no service {service}"));
        };
        if encoding != "json" {
            return fail(self, ctx, "only json requests are accepted");
        }
        let v = match commands::parse(payload) {
            Ok(v) => v,
            Err(e) => return fail(self, ctx, &format!("request is {e}")),
        };
        let respond = move |act: &mut Self, ctx: &mut Context<Self>, v: Value| {
            let body = v.to_string();
            let frame = foxglove::service_call_response(service, call, "json", body.as_bytes());
            act.send_binary_control(frame, ctx);
        };
        // Several robots on this endpoint: the request names one (`"robot": NAME`).
        let robots = &self.shared.robots;
        let k = match v["robot"].as_str().and_then(|n| robots.by_name(n)) {
            _ if !robots.several() => 0,
            Some(k) => k,
            None => {
                let m = "this endpoint serves several robots: name one with \"robot\"";
                return fail(self, ctx, m);
            }
        };
        let Some(registry) = self.registry(k) else {
            return fail(self, ctx, "no such robot");
        };
        match commands::service(svc.name, &v, self.admission.may_write()) {
            Ok(Call::EStop { latch }) => {
                let fut = registry.send(EStop {
                    latch,
                    client: self.client.clone(),
                });
                ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| match r {
                    Ok(changed) => {
                        let v = serde_json::json!({"latched": latch, "changed": changed});
                        respond(act, ctx, v)
                    }
                    Err(e) => fail(act, ctx, &e.to_string()),
                }));
            }
            Ok(Call::Config { device, payload }) => {
                let place = match self.configs.take() {
                    Ok(place) => place,
                    Err(e) => return fail(self, ctx, &format!("refused: {e}")),
                };
                info!(self.log, "service config"; "service" => svc.name, "device" => %char::from(device));
                let fut = registry.send(RouteConfig {
                    device,
                    payload,
                    client: self.client.clone(),
                    answer: None,
                    place: Some(place),
                });
                ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| match r {
                    Ok(Ok(())) => respond(act, ctx, serde_json::json!({"ok": true, "message": ""})),
                    Ok(Err(e)) => fail(act, ctx, &e.to_string()),
                    Err(e) => fail(act, ctx, &e.to_string()),
                }));
            }
            Err(e) => fail(self, ctx, &e.to_string()),
        }
    }

    /// A playback control request: refused without write access (it changes what every
    /// client of the robot sees), else passed to the registry and answered with the
    /// playback state.
    pub(super) fn on_playback_request(&mut self, b: &[u8], ctx: &mut Context<Self>) {
        let Some(replay) = &mut self.replay else {
            let m = "playback control: this robot is not replaying a recording";
            return self.status(Level::Warning, m, ctx);
        };
        let req = match playback::parse_request(b) {
            Ok(r) => r,
            Err(e) => return self.status(Level::Error, &e.to_string(), ctx),
        };
        if !self.admission.may_write() {
            let frame = replay.answer(false, &req.request_id);
            self.send_binary_control(frame, ctx);
            let why = Admission::refusal(&self.shared.policy);
            let m = format!("playback control refused: {why}");
            return self.status(Level::Warning, &m, ctx);
        }
        // A replay is only ever the endpoint's one robot (`Shared::replay`).
        let Some(registry) = self.registry(0) else {
            return;
        };
        let fut = registry.send(ControlPlayback(playback::to_kit(&req)));
        let did_seek = req.seek.is_some();
        ctx.spawn(fut.into_actor(self).map(move |_, act, ctx| {
            if let Some(r) = &mut act.replay {
                let frame = r.answer(did_seek, &req.request_id);
                act.send_binary_control(frame, ctx);
            }
        }));
    }

    /// The replay's clock as `time` (newest wins, like a subscription), and its state when
    /// it changed without this client asking.
    pub(super) fn playback_tick(&mut self, ctx: &mut Context<Self>) {
        let Some(r) = &mut self.replay else {
            return;
        };
        let (time, state) = r.tick();
        if let Some(t) = time {
            // Its own slot in the newest-wins outbox (a subscription id refused to clients).
            self.send_frame(playback::TIME_SLOT, t);
        }
        if let Some(s) = state {
            self.send_binary_control(s, ctx);
        }
    }
}
