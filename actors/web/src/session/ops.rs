//! A session's protocol operations beyond channels, commands and services: what they
//! keep per session ([`Ops`], the parameters' part used by `parameters.rs`), the
//! connection graph, status conditions (frames a slow client lost, the e-stop, a failed
//! device: `status` with an id, `removeStatus` when over), this connection's rate cap and
//! the server's clock (`time`).
//!
//! - Connection graph ([`crate::graph`]): the whole graph on `subscribeConnectionGraph`,
//!   then once a second what changed (the registry's [`ListHolders`], diffed). On an
//!   endpoint serving several robots ([`crate::world`]) it is that of the robots this
//!   session reads or commands, at most [`GRAPH_ROBOTS`] of them (the first by index),
//!   their topics under their names.
//! - Status conditions: a device's status id is `device/<code>`, the e-stop's `estop`,
//!   under the robot's name where the endpoint serves several (`<robot>/estop`).
//! - Time: the wall clock, in a newest-wins slot the socket writer sends before any data
//!   queued after it: once a second, and before data at most every [`TIME_EVERY`], so a
//!   client that stamps messages with the server's clock (Foxglove does, with the `time`
//!   capability) sees them within that of their arrival.

use super::{WebSession, TICK};
use crate::foxglove::{self, Level};
use crate::graph::{self, Graph};
use crate::world;
use actix::prelude::*;
use player_core::notice::kind;
use player_core::registry::ListHolders;
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
/// Most robots of an endpoint serving several whose holders one session's connection
/// graph shows (a registry asked per robot per second).
pub(super) const GRAPH_ROBOTS: usize = 32;

/// What the operations keep per session.
#[derive(Default)]
pub(super) struct Ops {
    /// The registry's command timeouts, as last fetched.
    pub(super) timeouts: HashMap<u8, Option<Duration>>,
    /// Parameter names the client subscribed to.
    pub(super) param_subs: HashSet<String>,
    /// The values last sent to them.
    pub(super) param_sent: HashMap<String, Value>,
    /// This connection's cap on messages per second per subscription (0: none).
    pub(super) max_rate_hz: f64,
    /// When each subscription's last message was let through the cap.
    pub(super) last_sent: HashMap<u32, Instant>,
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
        Timestamp::now().nanos()
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
        self.conn.time(frame);
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
                    let topic = match self.subs.channel(*sub) {
                        Some(c) if c == world::ROBOTS_CHANNEL && self.shared.robots.several() => {
                            world::ROBOTS_TOPIC.to_string()
                        }
                        Some(c) => self
                            .shared
                            .robots
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
        let robots = &self.shared.robots;
        let mut ks: Vec<usize> = self
            .subs
            .iter()
            .filter_map(|(_, c)| robots.channel(c).map(|(k, _)| k))
            .chain(self.pubs.robots())
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
