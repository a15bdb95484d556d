//! A session's protocol operations beyond channels, commands and services: parameters
//! (read; set with write access; update subscriptions), the connection graph, status
//! conditions (frames a slow client lost, the e-stop, a failed device: `status` with an
//! id, `removeStatus` when over) and the server's clock (`time`).
//!
//! - Parameters ([`crate::params`]): `getParameters` is answered with the registry's
//!   command timeouts fetched at that moment; a `setParameters` from a client without
//!   write access is refused with an error status and changes nothing; one with it sets
//!   the registry's watchdog ([`SetCommandTimeout`]) or this connection's rate cap, and
//!   every session of the endpoint then sends `parameterValues` to its subscribers of
//!   what changed. Each session also looks at the registry's values every second while
//!   it has parameter subscriptions, so a change made elsewhere reaches them too.
//! - Connection graph ([`crate::graph`]): the whole graph on `subscribeConnectionGraph`,
//!   then once a second what changed (the registry's [`ListHolders`], diffed).
//!
//! On an endpoint serving several robots ([`crate::world`]): the parameters are `robots`
//! and the endpoint's own, and only `web.max_rate_hz` is writable (a robot's command
//! timeouts are set on its own endpoint or in the configuration); the graph is that of
//! the robots this session reads or commands, at most [`GRAPH_ROBOTS`] of them (the
//! first by index), their topics under their names; a device's status id is
//! `<robot>/device/<code>` and the e-stop's `<robot>/estop`.
//! - Time: the wall clock, in a newest-wins slot the socket writer sends before any data
//!   queued after it: once a second, and before data at most every [`TIME_EVERY`], so a
//!   client that stamps messages with the server's clock (Foxglove does, with the `time`
//!   capability) sees them within that of their arrival.

use super::{WebSession, TICK};
use crate::foxglove::{self, Level};
use crate::graph::{self, Graph};
use crate::params::{self, Setting, Snapshot};
use crate::world;
use actix::prelude::*;
use player_core::notice::kind;
use player_core::registry::{CommandTimeouts, ListHolders, SetCommandTimeout, MAX_COMMAND_HOLD};
use player_kit::driver::DeviceSpec;
use player_kit::driver::Timestamp;
use serde_json::Value;
use slog::info;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// The longest the server's clock goes unsent while data flows.
const TIME_EVERY: Duration = Duration::from_millis(100);
/// At most one report of lost frames per this long.
const DROP_REPORT_EVERY: Duration = Duration::from_secs(10);
/// Frames lost since the last report before a report is made (a single replaced frame is
/// not worth one).
const DROP_REPORT_MIN: u64 = 5;
/// The status id of the lost-frames condition.
const DROPPED_ID: &str = "dropped";
/// The status id of the e-stop.
const ESTOP_ID: &str = "estop";
/// Most entries of one `setParameters` looked at.
const MAX_SET: usize = 64;
/// Most robots of an endpoint serving several whose holders one session's connection
/// graph shows (a registry asked per robot per second).
pub(super) const GRAPH_ROBOTS: usize = 32;

/// Endpoint's sessions → session: a parameter changed; send its new value to this
/// session's subscribers.
#[derive(Message)]
#[rtype(result = "()")]
pub struct RefreshParameters;

/// What the operations keep per session.
#[derive(Default)]
pub(super) struct Ops {
    /// The registry's command timeouts, as last fetched.
    timeouts: HashMap<u8, Option<Duration>>,
    /// Parameter names the client subscribed to.
    param_subs: HashSet<String>,
    /// The values last sent to them.
    param_sent: HashMap<String, Value>,
    /// This connection's cap on messages per second per subscription (0: none).
    max_rate_hz: f64,
    /// When each subscription's last message was let through the cap.
    last_sent: HashMap<u32, Instant>,
    /// The graph the client has, while it subscribes to it.
    graph: Option<Graph>,
    /// Frames replaced before the socket took them, per subscription, since `window`.
    dropped: HashMap<u32, u64>,
    /// When the counting in `dropped` began.
    window: Option<Instant>,
    /// When lost frames were last reported.
    reported: Option<Instant>,
    /// A lost-frames status stands (to be removed once a window passes without).
    standing: bool,
    /// When the clock was last put in the outbox.
    time_sent: Option<Instant>,
}

impl Ops {
    /// Whether a message on `sub` may go at `now` under the rate cap (then it counts as
    /// sent). A message within 5 % of the interval passes, so a device publishing at the
    /// cap is not halved by jitter.
    pub(super) fn rate_allows(&mut self, sub: u32, now: Instant) -> bool {
        if self.max_rate_hz <= 0.0 {
            return true;
        }
        let interval = Duration::from_secs_f64(0.95 / self.max_rate_hz);
        match self.last_sent.get(&sub) {
            Some(&t) if now.saturating_duration_since(t) < interval => false,
            _ => {
                self.last_sent.insert(sub, now);
                true
            }
        }
    }

    /// A frame of `sub` was replaced before the socket took it.
    pub(super) fn note_dropped(&mut self, sub: u32) {
        *self.dropped.entry(sub).or_default() += 1;
        self.window.get_or_insert_with(Instant::now);
    }

    /// The client unsubscribed `sub`.
    pub(super) fn forget(&mut self, sub: u32) {
        self.last_sent.remove(&sub);
        self.dropped.remove(&sub);
    }
}

/// What to say about lost frames at `now`, given the counts since the window began.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum DropVerdict {
    /// Nothing (yet).
    Quiet,
    /// Report these counts (and start a new window).
    Report,
    /// A whole window passed without enough losses: a standing report is over.
    Clear,
}

/// The rule: report when at least [`DROP_REPORT_MIN`] frames were lost and no report was
/// made in the last [`DROP_REPORT_EVERY`]; that long after the report with fewer losses
/// (in a window of that length) ends a standing report.
pub(super) fn drop_verdict(
    lost: u64,
    window: Option<Instant>,
    reported: Option<Instant>,
    standing: bool,
    now: Instant,
) -> DropVerdict {
    let since = |t: Option<Instant>| t.map(|t| now.saturating_duration_since(t));
    if lost >= DROP_REPORT_MIN && since(reported).is_none_or(|d| d >= DROP_REPORT_EVERY) {
        return DropVerdict::Report;
    }
    let quiet_long = since(reported).is_none_or(|d| d >= DROP_REPORT_EVERY)
        && since(window).is_none_or(|d| d >= DROP_REPORT_EVERY);
    if lost < DROP_REPORT_MIN && standing && quiet_long {
        return DropVerdict::Clear;
    }
    DropVerdict::Quiet
}

impl WebSession {
    /// The server's clock, in ns since the epoch.
    fn server_time_ns(&self) -> u64 {
        crate::schema::nanos(Timestamp::now())
    }

    /// Puts the server's clock in the outbox's slot: always when `force`, else when it
    /// was last put there [`TIME_EVERY`] ago or more.
    /// A replay's clock is the recording's and goes out from `playback_tick` instead.
    pub(super) fn push_time(&mut self, force: bool) {
        if self.replay.is_some() {
            return;
        }
        let now = Instant::now();
        if !force
            && self
                .ops
                .time_sent
                .is_some_and(|t| now.saturating_duration_since(t) < TIME_EVERY)
        {
            return;
        }
        self.ops.time_sent = Some(now);
        let frame = foxglove::time(self.server_time_ns());
        self.out.borrow_mut().time = Some(frame);
        self.wake.notify_one();
    }

    /// At connection: the clock before anything else that carries a time.
    pub(super) fn ops_started(&mut self, ctx: &mut Context<Self>) {
        self.push_time(true);
        self.with_timeouts(ctx, |_, _| {});
    }

    /// Every [`TICK`]: the clock, lost frames, parameter and graph updates.
    pub(super) fn ops_tick(&mut self, ctx: &mut Context<Self>) {
        self.push_time(true);
        self.report_drops(ctx);
        if !self.ops.param_subs.is_empty() {
            self.refresh_parameters(ctx);
        }
        if self.ops.graph.is_some() {
            self.refresh_graph(ctx);
        }
    }

    // ----- status conditions ------------------------------------------------------------

    fn report_drops(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        let lost: u64 = self.ops.dropped.values().sum();
        match drop_verdict(
            lost,
            self.ops.window,
            self.ops.reported,
            self.ops.standing,
            now,
        ) {
            DropVerdict::Quiet => {
                if self
                    .ops
                    .window
                    .is_some_and(|w| now.saturating_duration_since(w) >= DROP_REPORT_EVERY)
                {
                    self.ops.dropped.clear();
                    self.ops.window = None;
                }
            }
            DropVerdict::Clear => {
                self.ops.standing = false;
                self.ops.dropped.clear();
                self.ops.window = None;
                self.send_text(foxglove::remove_status(&[DROPPED_ID]), ctx);
            }
            DropVerdict::Report => {
                let since = self
                    .ops
                    .window
                    .map_or(TICK, |w| now.saturating_duration_since(w))
                    .max(TICK);
                // Per topic, most first.
                let mut by_topic: BTreeMap<String, u64> = BTreeMap::new();
                for (sub, n) in &self.ops.dropped {
                    let topic = match self.subs.get(sub) {
                        Some(&c) if c == world::ROBOTS_CHANNEL && self.shared.robots.several() => {
                            world::ROBOTS_TOPIC.to_string()
                        }
                        Some(&c) => self
                            .channel(c)
                            .map_or("?".into(), |(k, ch)| self.shared.robots.topic(k, ch)),
                        None => "?".into(),
                    };
                    *by_topic.entry(topic).or_default() += n;
                }
                let mut list: Vec<(String, u64)> = by_topic.into_iter().collect();
                list.sort_by_key(|e| std::cmp::Reverse(e.1));
                let shown: Vec<String> = list
                    .iter()
                    .take(8)
                    .map(|(t, n)| format!("{t} {n}"))
                    .collect();
                let m = format!(
                    "this connection reads slower than the data comes: {lost} messages dropped in {:.0} s, newest kept ({})",
                    since.as_secs_f64(),
                    shown.join(", ")
                );
                info!(self.log, "web client told"; "status" => &m);
                self.send_text(
                    foxglove::status_with_id(Level::Warning, &m, DROPPED_ID),
                    ctx,
                );
                self.ops.dropped.clear();
                self.ops.window = None;
                self.ops.reported = Some(now);
                self.ops.standing = true;
            }
        }
    }

    /// A registry notice of robot `k` as a status: the e-stop and a failed device are
    /// conditions with an id, cleared by `removeStatus` when released or up again (ids
    /// under the robot's name where the endpoint serves several).
    pub(super) fn notice_status(
        &mut self,
        k: usize,
        notice_kind: u8,
        device: u8,
        level: Level,
        text: &str,
        ctx: &mut Context<Self>,
    ) {
        let prefix = match self.shared.robots.get(k) {
            Some(r) if self.shared.robots.several() => format!("{}/", r.name),
            _ => String::new(),
        };
        let device_id = format!("{prefix}device/{}", char::from(device));
        let estop_id = format!("{prefix}{ESTOP_ID}");
        match notice_kind {
            kind::ESTOP => {
                self.send_text(foxglove::status_with_id(level, text, &estop_id), ctx);
            }
            kind::ESTOP_RELEASED => {
                self.send_text(foxglove::remove_status(&[&estop_id]), ctx);
                self.send_text(foxglove::status(level, text), ctx);
            }
            kind::FAILED if device != 0 => {
                self.send_text(foxglove::status_with_id(level, text, &device_id), ctx);
            }
            kind::UP if device != 0 => {
                self.send_text(foxglove::remove_status(&[&device_id]), ctx);
                self.send_text(foxglove::status(level, text), ctx);
            }
            _ => self.send_text(foxglove::status(level, text), ctx),
        }
    }

    // ----- parameters --------------------------------------------------------------------

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
    fn with_timeouts(
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
        if !self.may_write {
            let shown: Vec<String> = names
                .iter()
                .take(8)
                .map(|n| n.chars().take(40).collect())
                .collect();
            let m = format!(
                "parameters not set ({}): this client may not command the robot (access policy{})",
                shown.join(", "),
                if self.shared.policy.has_key() {
                    "; connect with ?key=KEY"
                } else {
                    ""
                }
            );
            self.status(Level::Error, &m, ctx);
            return self.with_timeouts(ctx, move |act, ctx| {
                act.answer_set(&names, id.as_deref(), ctx);
            });
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
                    for s in act.shared.session_addrs() {
                        s.do_send(RefreshParameters);
                    }
                } else if local_change {
                    act.send_parameter_updates(ctx);
                }
            });
        }));
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
    fn refresh_parameters(&mut self, ctx: &mut Context<Self>) {
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

    // ----- connection graph --------------------------------------------------------------

    /// `subscribeConnectionGraph`: the whole graph now, changes later.
    pub(super) fn subscribe_graph(&mut self, ctx: &mut Context<Self>) {
        if self.ops.graph.is_none() {
            self.ops.graph = Some(Graph::default());
            self.refresh_graph(ctx);
        }
    }

    /// `unsubscribeConnectionGraph`.
    pub(super) fn unsubscribe_graph(&mut self) {
        self.ops.graph = None;
    }

    /// The robots whose holders the graph shows: the one robot, or (several robots) those
    /// this session reads or commands, at most [`GRAPH_ROBOTS`], in order.
    fn graph_robots(&self) -> Vec<usize> {
        if !self.shared.robots.several() {
            return vec![0];
        }
        let mut ks: Vec<usize> = self
            .subs
            .values()
            .filter_map(|&c| self.channel(c).map(|(k, _)| k))
            .chain(self.pubs.values().map(|&(k, _)| k))
            .collect::<HashSet<usize>>()
            .into_iter()
            .collect();
        ks.sort_unstable();
        ks.truncate(GRAPH_ROBOTS);
        ks
    }

    fn refresh_graph(&mut self, ctx: &mut Context<Self>) {
        let asks: Vec<_> = self
            .graph_robots()
            .into_iter()
            .filter_map(|k| self.registry(k).map(|r| (k, r)))
            .map(|(k, r)| async move { (k, r.send(ListHolders).await) })
            .collect();
        let all = futures::future::join_all(asks);
        ctx.spawn(all.into_actor(self).map(|lists, act, ctx| {
            let Some(old) = act.ops.graph.as_ref() else {
                return; // unsubscribed meanwhile
            };
            let robots = &act.shared.robots;
            let server = match robots.get(0) {
                Some(r) if !robots.several() => format!("player ({})", r.name),
                _ => format!("player ({} robots)", robots.len()),
            };
            let services: Vec<&str> = foxglove::SERVICES.iter().map(|s| s.name).collect();
            if !robots.several() && lists.iter().any(|(_, r)| r.is_err()) {
                return;
            }
            let mut new = graph::Graph::default();
            for (k, r) in lists {
                let Ok(list) = r else {
                    continue;
                };
                let one = graph::build(&list, &server, &services);
                match robots.get(k) {
                    Some(robot) if robots.several() => {
                        graph::merge_prefixed(&mut new, one, &robot.name)
                    }
                    _ => new = one,
                }
            }
            if robots.several() && new.services.is_empty() {
                // No robot read yet: the server's services all the same.
                new = graph::build(&[], &server, &services);
            }
            if let Some(m) = graph::update(old, &new) {
                act.send_text(m, ctx);
            }
            act.ops.graph = Some(new);
        }));
    }
}

impl Handler<RefreshParameters> for WebSession {
    type Result = ();

    fn handle(&mut self, _msg: RefreshParameters, ctx: &mut Self::Context) {
        self.refresh_parameters(ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn lost_frames_are_reported_at_most_once_per_window_and_cleared_after_a_quiet_one() {
        let t0 = Instant::now();
        let w = Some(t0);
        assert_eq!(
            drop_verdict(4, w, None, false, t0 + s(1)),
            DropVerdict::Quiet
        );
        assert_eq!(
            drop_verdict(5, w, None, false, t0 + s(1)),
            DropVerdict::Report
        );
        let reported = Some(t0 + s(1));
        // Within 10 s of a report: quiet however many are lost.
        assert_eq!(
            drop_verdict(500, Some(t0 + s(1)), reported, true, t0 + s(5)),
            DropVerdict::Quiet
        );
        assert_eq!(
            drop_verdict(500, Some(t0 + s(1)), reported, true, t0 + s(11)),
            DropVerdict::Report
        );
        // Few losses, a window not over yet: the report stands.
        assert_eq!(
            drop_verdict(1, Some(t0 + s(5)), reported, true, t0 + s(12)),
            DropVerdict::Quiet
        );
        // A whole window with fewer (or none, no window at all): cleared, once.
        assert_eq!(
            drop_verdict(1, Some(t0 + s(1)), reported, true, t0 + s(12)),
            DropVerdict::Clear
        );
        assert_eq!(
            drop_verdict(0, None, reported, true, t0 + s(12)),
            DropVerdict::Clear
        );
        assert_eq!(
            drop_verdict(0, None, reported, true, t0 + s(2)),
            DropVerdict::Quiet,
            "not cleared a second after the report"
        );
        assert_eq!(
            drop_verdict(0, None, reported, false, t0 + s(12)),
            DropVerdict::Quiet
        );
    }

    #[test]
    fn the_rate_cap_lets_one_message_per_interval_through_per_subscription() {
        let mut o = Ops::default();
        let t0 = Instant::now();
        assert!(o.rate_allows(1, t0), "no cap");
        assert!(o.rate_allows(1, t0));
        o.max_rate_hz = 2.0;
        assert!(o.rate_allows(1, t0));
        assert!(o.rate_allows(2, t0), "each subscription its own");
        assert!(!o.rate_allows(1, t0 + Duration::from_millis(400)));
        assert!(
            o.rate_allows(1, t0 + Duration::from_millis(480)),
            "within 5 %"
        );
        assert!(!o.rate_allows(1, t0 + Duration::from_millis(600)));
    }
}
