//! `/particles` and `/plan`: while a client reads a robot's `/particles` (or `/plan`), the
//! session asks its localizer for them, `x H g` (or its planner for the waypoints,
//! `x G w`), at each tick, at most every [`PARTICLES_PERIOD`] (or [`PLAN_PERIOD`]) and never
//! while an earlier question waits ([`Asking`]); the answers are decoded by the front-end
//! kit ([`fnav::particles`], [`fnav::waypoints`]) and sent as `foxglove.PosesInFrame` in
//! `map`. Each robot's answers come through a small tap that tags them with the robot, so
//! the robots of a world keep apart; the map's tiles (`x M t`, `map.rs`) come the same way.

use super::WebSession;
use crate::foxglove;
use crate::protobuf::EncodeReadings;
use crate::schema::Source;
use actix::prelude::*;
use bytes::Bytes;
use player_core::frontend::nav::{self as fnav, Asking, Pose2};
use player_core::frontend::tap::Tagged;
use player_core::registry::RouteConfig;
use player_kit::answer::ConfigAnswer;
use player_kit::driver::Timestamp;
use player_proto::device;
use player_proto::nav::code;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The shortest time between two `x H g` a session asks of one robot.
pub const PARTICLES_PERIOD: Duration = Duration::from_millis(500);

/// The shortest time between two `x G w` a session asks of one robot (the session's
/// 1 s tick bounds both more).
pub const PLAN_PERIOD: Duration = Duration::from_millis(500);

/// Per robot and device: when it was asked, and per robot the tap its answers come through.
#[derive(Default)]
pub(super) struct NavAsks {
    asking: HashMap<(usize, u8), Asking>,
    taps: HashMap<usize, Recipient<ConfigAnswer>>,
}

impl NavAsks {
    /// The tap robot `k`'s answers come through, once made ([`WebSession::answer_tap`]).
    pub(super) fn tap(&self, k: usize) -> Option<Recipient<ConfigAnswer>> {
        self.taps.get(&k).cloned()
    }
}

/// Tags robot `robot`'s config answers for the session.
struct AnswerTap {
    robot: usize,
    to: actix::WeakAddr<WebSession>,
}

impl Actor for AnswerTap {
    type Context = Context<Self>;
}

impl Handler<ConfigAnswer> for AnswerTap {
    type Result = ();

    fn handle(&mut self, message: ConfigAnswer, ctx: &mut Self::Context) {
        match self.to.upgrade() {
            Some(to) => to.do_send(Tagged {
                robot: self.robot,
                message,
            }),
            None => ctx.stop(),
        }
    }
}

impl WebSession {
    /// The tap robot `k`'s config answers come through to this session, made on first use.
    pub(super) fn answer_tap(
        &mut self,
        k: usize,
        ctx: &mut Context<Self>,
    ) -> Recipient<ConfigAnswer> {
        let me = ctx.address().downgrade();
        self.nav
            .taps
            .entry(k)
            .or_insert_with(|| AnswerTap { robot: k, to: me }.start().recipient())
            .clone()
    }

    /// Asks each robot whose `/particles` or `/plan` someone here reads, when due.
    pub(super) fn ask_nav(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        for (k, source) in self.subs.nav_reads(&self.shared.robots) {
            let (code, config, period) = match source {
                Source::Plan => (device::PLANNER, code::WAYPOINTS, PLAN_PERIOD),
                _ => (device::LOCALIZE, code::PARTICLES, PARTICLES_PERIOD),
            };
            let due = self
                .nav
                .asking
                .entry((k, code))
                .or_insert_with(|| Asking::new(period))
                .due(now);
            let Some(registry) = self.registry(k).filter(|_| due) else {
                continue;
            };
            let tap = self.answer_tap(k, ctx);
            registry.do_send(RouteConfig {
                device: code,
                payload: Bytes::from(vec![config]),
                client: self.client.clone(),
                answer: Some(tap),
                place: None,
            });
        }
    }
}

impl Handler<Tagged<ConfigAnswer>> for WebSession {
    type Result = ();

    /// Robot `k`'s answer to `x H g` or `x G w`: the poses to the subscriptions of its
    /// `/particles` or `/plan`; to `x M t`: a tile of its map (`map.rs`).
    fn handle(&mut self, msg: Tagged<ConfigAnswer>, _ctx: &mut Self::Context) {
        let (k, code) = (msg.robot, msg.message.device);
        if code == device::MAP {
            return self.on_tiles(k, &msg.message);
        }
        if let Some(a) = self.nav.asking.get_mut(&(k, code)) {
            a.answered();
        }
        let bodies = msg.message.bodies.iter().map(|b| &b[..]);
        let (source, poses): (Source, Vec<Pose2>) = match code {
            device::LOCALIZE => (
                Source::Particles,
                fnav::particles(bodies).iter().map(|(p, _)| *p).collect(),
            ),
            device::PLANNER => {
                let Some(w) = msg.message.bodies.first().and_then(|b| fnav::waypoints(b)) else {
                    return;
                };
                (Source::Plan, w)
            }
            _ => return,
        };
        let subs = self.subs.of(&self.shared.robots, k, source);
        if subs.is_empty() {
            return;
        }
        let ts = Timestamp::now();
        let payload = self.encoding.encode_poses(&poses, ts);
        for sub in subs {
            self.send_frame(sub, foxglove::message_data(sub, ts.nanos(), &payload));
        }
    }
}
