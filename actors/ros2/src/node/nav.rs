//! The navigation part of a robot's node: `map` (the `M` device's cells, downloaded tile
//! by tile through `x M t` configs whose answers come to the node, re-downloaded when the
//! map's id changes, published transient local), `amcl_pose` and `map` -> `odom` on `tf`
//! from `H` (with the base's odometry from `p`), `particlecloud` from `x H g` answers at
//! most every [`PARTICLES_PERIOD`] while someone listens, `plan` from `x G w` answers when
//! the planner's goal, waypoint count or state changes (and every [`PLAN_PERIOD`]); and the
//! other way `initialpose` (an `x H s` config) and `goal_pose` (the planner's command,
//! through the registry's guard like `cmd_vel`; write access to `G` is held while the
//! goal is being planned or driven to). Both are taken only with `[ros2] write`.
//!
//! The conversions are the front-end kit's (`player_core::frontend::nav`).

use super::{well_formed, Callbacks, Declaring, RobotNode, HOLD};
use crate::convert::{ConvertError, Frames};
use crate::msg::{encode_tf, Header, Time, TransformStamped, Vector3};
use crate::nav_msg::{
    OccupancyGrid, Path, Pose, PoseArray, PoseStamped, PoseWithCovarianceStamped,
};
use crate::topics::{now_ns, Topic};
use crate::{rmw, types};
use actix::prelude::*;
use bytes::Bytes;
use player_core::frontend::bridge::{self, BridgeRobot};
use player_core::frontend::nav::{self as fnav, Asking, GridMap, MapDownload, Pose2};
use player_core::registry::RouteConfig;
use player_kit::answer::{ConfigAnswer, ConfigPlace, ConfigPlaces};
use player_kit::driver::DeviceData;
use player_proto::data::Position;
use player_proto::device;
use player_proto::nav::{code, Localize, MapInfo, Planner, PlannerState};
use slog::{info, warn};
use std::time::{Duration, Instant};

/// The shortest time between two `x H g` (particles) the node asks.
pub const PARTICLES_PERIOD: Duration = Duration::from_millis(500);

/// The longest time between two `x G w` (waypoints) while `plan` is listened to.
pub const PLAN_PERIOD: Duration = Duration::from_secs(2);

/// What the node keeps for the navigation topics.
pub struct NavPart {
    map: MapDownload,
    map_refused: bool,
    map_wanted: bool,
    particles: Asking,
    plan: Asking,
    planner: Option<Planner>,
    /// The base's newest odometry pose.
    odom: Option<Pose2>,
    /// Where the odometry frame lies in the map (from the newest `H` and `p`).
    map_odom: Option<Pose2>,
    /// When the node sent its newest goal.
    goal_at: Option<Instant>,
    /// Whether write access to `G` was last asked for.
    goal_write: bool,
    warned_no_write: bool,
    me: Option<Recipient<ConfigAnswer>>,
    /// The `initialpose` configs waiting at the localizer (ROS peers may publish faster
    /// than it takes them).
    configs: ConfigPlaces,
}

impl Default for NavPart {
    fn default() -> Self {
        NavPart {
            map: MapDownload::new(),
            map_refused: false,
            map_wanted: false,
            particles: Asking::new(PARTICLES_PERIOD),
            plan: Asking::new(PLAN_PERIOD),
            planner: None,
            odom: None,
            map_odom: None,
            goal_at: None,
            goal_write: false,
            warned_no_write: false,
            me: None,
            configs: ConfigPlaces::default(),
        }
    }
}

fn header(stamp: Time, frame: &str) -> Header {
    Header {
        stamp,
        frame_id: frame.to_string(),
    }
}

fn now() -> Time {
    let ns = now_ns();
    Time {
        sec: (ns / 1_000_000_000) as i32,
        nanosec: (ns % 1_000_000_000) as u32,
    }
}

impl NavPart {
    /// Whether write access to `G` is wanted: a goal was sent within [`HOLD`], or the
    /// planner is still planning or driving to it.
    pub fn holds_goal(&self) -> bool {
        self.goal_at.is_some_and(|t| {
            t.elapsed() < HOLD
                || self.planner.is_some_and(|p| {
                    matches!(p.state, PlannerState::Planning | PlannerState::Driving)
                })
        })
    }

    /// The payloads of `H` reading `d` for `topic` (`amcl_pose`, or `map` -> `odom`).
    pub fn encode(
        &self,
        topic: Topic,
        d: &DeviceData,
        f: &Frames,
    ) -> Result<Vec<Vec<u8>>, ConvertError> {
        let stamp = Time::from_sec_usec(d.timestamp.sec, d.timestamp.usec);
        let l = Localize::decode(&d.data)?;
        let Some((mean, cov, _)) = fnav::best_pose(&l) else {
            return Ok(Vec::new());
        };
        Ok(match topic {
            Topic::AmclPose => vec![PoseWithCovarianceStamped {
                header: header(stamp, &f.map),
                pose: Pose::planar(mean[0], mean[1], mean[2]),
                covariance: PoseWithCovarianceStamped::from_planar(cov),
            }
            .encode()],
            Topic::TfMap => self
                .map_odom
                .map(|t| encode_tf(&[map_transform(t, stamp, f)]))
                .into_iter()
                .collect(),
            _ => Vec::new(),
        })
    }
}

/// `map` -> `odom` as a transform.
fn map_transform(t: Pose2, stamp: Time, f: &Frames) -> TransformStamped {
    let p = Pose::planar(t[0], t[1], t[2]);
    TransformStamped {
        header: header(stamp, &f.map),
        child_frame_id: f.odom.clone(),
        translation: Vector3 {
            x: t[0],
            y: t[1],
            z: 0.0,
        },
        rotation: p.orientation,
    }
}

/// The map as an `OccupancyGrid` in frame `frame`.
fn grid(m: &GridMap, frame: &str) -> Vec<u8> {
    let o = m.origin();
    let stamp = now();
    OccupancyGrid {
        header: header(stamp, frame),
        map_load_time: stamp,
        resolution: m.resolution_m() as f32,
        width: m.info.width,
        height: m.info.height,
        origin: Pose::planar(o[0], o[1], o[2]),
        data: m.ros_cells(),
    }
    .encode()
}

impl Declaring<'_> {
    /// `initialpose` (PoseWithCovarianceStamped, rviz2's "2D Pose Estimate"): the newest
    /// to the node's mailbox.
    pub(super) fn initialpose(&mut self) -> zenoh::Result<()> {
        let name = rmw::qualify(self.namespace, "initialpose");
        let to: Callbacks = self.to.clone();
        self.subscription(&name, types::POSE_WITH_COVARIANCE_STAMPED, move |sample| {
            if let Err(why) = well_formed(&sample) {
                return to.mailbox.refuse_because(format!("initialpose: {why}"));
            }
            let Ok(p) = PoseWithCovarianceStamped::decode(&sample.payload().to_bytes()) else {
                return to
                    .mailbox
                    .refuse_because("initialpose: not a PoseWithCovarianceStamped".into());
            };
            let pose = (p.pose.xy_yaw(), p.planar_covariance());
            if to.mailbox.commands.put(|c| c.pose = Some(pose)) {
                to.addr.do_send(bridge::CommandsReady);
            }
        })
    }

    /// `goal_pose` (PoseStamped, rviz2's "Nav2 Goal"): the newest to the node's mailbox.
    pub(super) fn goal_pose(&mut self) -> zenoh::Result<()> {
        let name = rmw::qualify(self.namespace, "goal_pose");
        let to: Callbacks = self.to.clone();
        self.subscription(&name, types::POSE_STAMPED, move |sample| {
            if let Err(why) = well_formed(&sample) {
                return to.mailbox.refuse_because(format!("goal_pose: {why}"));
            }
            let Ok(p) = PoseStamped::decode(&sample.payload().to_bytes()) else {
                return to
                    .mailbox
                    .refuse_because("goal_pose: not a PoseStamped".into());
            };
            if to.mailbox.commands.put(|c| c.goal = Some(p.pose.xy_yaw())) {
                to.addr.do_send(bridge::CommandsReady);
            }
        })
    }
}

impl RobotNode {
    /// Whether some subscriber matches a publisher of `topic`.
    fn listened(&self, topic: Topic) -> bool {
        self.any_matched(|t| t == topic)
    }

    /// Puts `payload` on the publishers of `topic` (matched ones, or all with `always`).
    fn put_on(&mut self, topic: Topic, payload: &[u8], always: bool) {
        for i in 0..self.pubs.len() {
            if self.pubs[i].topic != topic || !(always || self.is_matched(i)) {
                continue;
            }
            match self.pubs[i].put(payload.to_vec()) {
                Ok(()) => self.parts.stats.published += 1,
                Err(e) => {
                    warn!(self.parts.log, "ros2: publish failed"; "topic" => topic.name(), "error" => %e)
                }
            }
        }
    }

    /// Sends config `payload` to `code`, its answer to the node; `place` its place among
    /// the configs a ROS peer's message made (none for the node's own paced asks).
    fn ask(&self, code: u8, payload: Vec<u8>, answer: bool, place: Option<ConfigPlace>) {
        self.parts.holdings.registry().do_send(RouteConfig {
            device: code,
            payload: Bytes::from(payload),
            client: "ros2".into(),
            answer: answer.then(|| self.nav.me.clone()).flatten(),
            place,
        });
    }

    /// Asks for the map's next tile, if one is due.
    fn ask_tile(&mut self) {
        if self.nav.me.is_none() {
            return;
        }
        if let Some(t) = self.nav.map.ask(Instant::now()) {
            self.ask(device::MAP, t.encode(), true, None);
        }
    }

    /// What a reading changes for the navigation topics (before it is published).
    pub(super) fn nav_reading(&mut self, d: &DeviceData) {
        match d.device {
            device::POSITION => {
                let Ok(p) = Position::decode(&d.data) else {
                    return;
                };
                let odom = [
                    f64::from(p.x) / 1000.0,
                    f64::from(p.y) / 1000.0,
                    f64::from(p.heading).to_radians(),
                ];
                self.nav.odom = Some(odom);
                // map -> odom again at the odometry's rate, so tf stays fresh.
                if let (Some(t), true) = (self.nav.map_odom, self.listened(Topic::TfMap)) {
                    let stamp = Time::from_sec_usec(d.timestamp.sec, d.timestamp.usec);
                    let tf = encode_tf(&[map_transform(t, stamp, &self.frames)]);
                    self.put_on(Topic::TfMap, &tf, false);
                }
            }
            device::LOCALIZE => {
                let best = Localize::decode(&d.data)
                    .ok()
                    .and_then(|l| fnav::best_pose(&l));
                if let (Some((mean, _, _)), Some(odom)) = (best, self.nav.odom) {
                    self.nav.map_odom = Some(fnav::map_to_odom(mean, odom));
                }
            }
            device::MAP => {
                let Ok(info) = MapInfo::decode(&d.data) else {
                    return;
                };
                match self.nav.map.reading(info) {
                    Ok(true) => {
                        info!(self.parts.log, "ros2: downloading the map"; "map_id" => info.map_id,
                            "width" => info.width, "height" => info.height);
                        self.ask_tile();
                    }
                    Ok(false) => {}
                    Err(e) if !self.nav.map_refused => {
                        self.nav.map_refused = true;
                        warn!(self.parts.log, "ros2: map not published"; "error" => %e);
                    }
                    Err(_) => {}
                }
            }
            device::PLANNER => {
                let Ok(p) = Planner::decode(&d.data) else {
                    return;
                };
                let changed = self.nav.planner.is_none_or(|q| {
                    (q.goal, q.waypoint_count, q.state) != (p.goal, p.waypoint_count, p.state)
                });
                if changed {
                    self.nav.plan.soon();
                }
                self.nav.planner = Some(p);
            }
            _ => {}
        }
    }

    /// Every tick: the node's own address for answers, `M` held for the latched map, the
    /// next tile, particles and the plan when due, write access to `G` as wanted.
    /// Whether the navigation topics need no tick: the first tick has run, the map (if
    /// the node publishes it) is asked for and not being fetched, and no goal is held.
    pub(super) fn nav_quiet(&self) -> bool {
        let n = &self.nav;
        n.me.is_some()
            && (n.map_wanted || !self.topics.contains(&Topic::Map))
            && !n.map.downloading()
            && !n.goal_write
            && n.goal_at.is_none()
    }

    pub(super) fn nav_tick(&mut self, ctx: &mut Context<Self>) {
        if self.nav.me.is_none() {
            self.nav.me = Some(ctx.address().recipient());
        }
        if !self.nav.map_wanted && self.topics.contains(&Topic::Map) && self.attached() {
            self.nav.map_wanted = true;
            bridge::sync(self, device::MAP, ctx);
        }
        self.ask_tile();
        let now = Instant::now();
        if self.listened(Topic::Particles) && self.nav.particles.due(now) {
            self.ask(device::LOCALIZE, vec![code::PARTICLES], true, None);
        }
        if self.listened(Topic::Plan) && self.nav.planner.is_some() && self.nav.plan.due(now) {
            self.ask(device::PLANNER, vec![code::WAYPOINTS], true, None);
        }
        let hold = self.nav.holds_goal();
        if hold != self.nav.goal_write {
            self.nav.goal_write = hold;
            if !hold {
                self.nav.goal_at = None;
                info!(
                    self.parts.log,
                    "ros2: goal over; write access to the planner given back"
                );
            }
            bridge::sync(self, device::PLANNER, ctx);
        }
    }

    /// The newest `goal_pose` and `initialpose`: a goal to the planner through the guard,
    /// a pose estimate as `x H s`; both only with `[ros2] write`.
    pub(super) fn nav_commands(
        &mut self,
        goal: Option<Pose2>,
        pose: Option<(Pose2, [[f64; 3]; 3])>,
        ctx: &mut Context<Self>,
    ) {
        if goal.is_none() && pose.is_none() {
            return;
        }
        if !self.write {
            self.parts.stats.ignored += 1;
            if !self.nav.warned_no_write {
                self.nav.warned_no_write = true;
                warn!(
                    self.parts.log,
                    "ros2: goal_pose and initialpose ignored: [ros2] write is false"
                );
            }
            return;
        }
        if let Some(payload) = pose.and_then(|(m, c)| fnav::set_pose(m, c)) {
            match self.nav.configs.take() {
                Ok(place) => {
                    info!(self.parts.log, "ros2: initialpose"; "pose" => ?pose.map(|p| p.0));
                    self.ask(device::LOCALIZE, payload, false, Some(place));
                }
                Err(e) => {
                    self.parts.stats.ignored += 1;
                    warn!(self.parts.log, "ros2: initialpose ignored"; "why" => %e);
                }
            }
        }
        if let Some(payload) = goal.and_then(fnav::goal) {
            info!(self.parts.log, "ros2: goal_pose"; "goal" => ?goal);
            self.nav.goal_at = Some(Instant::now());
            self.nav.goal_write = true;
            if self
                .parts
                .command(Self::NAME, device::PLANNER, Bytes::from(payload), None)
            {
                bridge::sync(self, device::PLANNER, ctx);
            }
        }
    }
}

impl Handler<ConfigAnswer> for RobotNode {
    type Result = ();

    /// An answer to one of the node's configs: a tile, the particles, the waypoints.
    fn handle(&mut self, msg: ConfigAnswer, _ctx: &mut Self::Context) {
        match msg.device {
            device::MAP => {
                for b in msg.bodies.iter() {
                    if let Some(m) = self.nav.map.answer(b) {
                        info!(self.parts.log, "ros2: map published"; "map_id" => m.info.map_id);
                        let payload = grid(&m, &self.frames.map);
                        self.put_on(Topic::Map, &payload, true);
                    }
                }
                self.ask_tile();
            }
            device::LOCALIZE => {
                self.nav.particles.answered();
                let poses = fnav::particles(msg.bodies.iter().map(|b| &b[..]));
                let cloud = PoseArray {
                    header: header(now(), &self.frames.map),
                    poses: poses
                        .iter()
                        .map(|(p, _)| Pose::planar(p[0], p[1], p[2]))
                        .collect(),
                };
                self.put_on(Topic::Particles, &cloud.encode(), false);
            }
            device::PLANNER => {
                self.nav.plan.answered();
                let Some(w) = msg.bodies.first().and_then(|b| fnav::waypoints(b)) else {
                    return;
                };
                let stamp = now();
                let path = Path {
                    header: header(stamp, &self.frames.map),
                    poses: w
                        .iter()
                        .map(|p| PoseStamped {
                            header: header(stamp, &self.frames.map),
                            pose: Pose::planar(p[0], p[1], p[2]),
                        })
                        .collect(),
                };
                self.put_on(Topic::Plan, &path.encode(), false);
            }
            _ => {}
        }
    }
}
