//! `/particles`: while a client reads a robot's `/particles`, the session asks its
//! localizer for them (`x H g`) at each tick, at most every [`PARTICLES_PERIOD`] and never
//! while an earlier question waits ([`Asking`]); the answer's packets are put together by
//! the front-end kit ([`fnav::particles`]) and sent as `foxglove.PosesInFrame` in `map`.
//! Each robot's answers come through a small tap that tags them with the robot, so the
//! robots of a world keep apart.

use super::WebSession;
use crate::foxglove;
use crate::schema::{self, Source};
use actix::prelude::*;
use bytes::Bytes;
use player_core::frontend::nav::{self as fnav, Asking};
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

/// Per robot: when its particles were asked for, and the tap its answers come through.
#[derive(Default)]
pub(super) struct NavAsks {
    asking: HashMap<usize, Asking>,
    taps: HashMap<usize, Recipient<ConfigAnswer>>,
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
    /// Asks each robot whose `/particles` someone here reads for its particles, when due.
    pub(super) fn ask_particles(&mut self, ctx: &mut Context<Self>) {
        let now = Instant::now();
        for k in self.subs.particle_robots(&self.shared.robots) {
            let due = self
                .nav
                .asking
                .entry(k)
                .or_insert_with(|| Asking::new(PARTICLES_PERIOD))
                .due(now);
            let Some(registry) = self.registry(k).filter(|_| due) else {
                continue;
            };
            let me = ctx.address().downgrade();
            let tap = self
                .nav
                .taps
                .entry(k)
                .or_insert_with(|| AnswerTap { robot: k, to: me }.start().recipient())
                .clone();
            registry.do_send(RouteConfig {
                device: device::LOCALIZE,
                payload: Bytes::from(vec![code::PARTICLES]),
                client: self.client.clone(),
                answer: Some(tap),
            });
        }
    }
}

impl Handler<Tagged<ConfigAnswer>> for WebSession {
    type Result = ();

    /// Robot `k`'s answer to `x H g`: its particles to the subscriptions of its
    /// `/particles`.
    fn handle(&mut self, msg: Tagged<ConfigAnswer>, _ctx: &mut Self::Context) {
        let k = msg.robot;
        if msg.message.device != device::LOCALIZE {
            return;
        }
        if let Some(a) = self.nav.asking.get_mut(&k) {
            a.answered();
        }
        let subs = self.subs.of(&self.shared.robots, k, Source::Particles);
        if subs.is_empty() {
            return;
        }
        let particles = fnav::particles(msg.message.bodies.iter().map(|b| &b[..]));
        let poses: Vec<[f64; 3]> = particles.iter().map(|(p, _)| *p).collect();
        let ts = Timestamp::now();
        let payload = self.encoding.encode_poses(&poses, ts);
        for sub in subs {
            self.send_frame(
                sub,
                foxglove::message_data(sub, schema::nanos(ts), &payload),
            );
        }
    }
}
