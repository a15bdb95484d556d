//! The ROS 2 face of the player server: what a ROS 2 node using `rmw_zenoh` (Jazzy and
//! later) expects to find on a Zenoh network, so `ros2 topic list`, rviz2 and nav2 see a
//! robot with no ROS installed on it.
//!
//! The wire codecs are the pure crate `player-ros2-msg` (`ros2msg/`), re-exported here
//! under their names: [`cdr`] (CDR writer and bounded reader), [`msg`] and [`nav_msg`]
//! (the messages published and taken), [`types`] (Jazzy type names and hashes), [`rmw`]
//! (`rmw_zenoh`'s keys, tokens, QoS, GIDs and attachment) and [`convert`] (readings as
//! messages, `cmd_vel` as the position command). This crate is what runs them on Zenoh:
//!
//! - [`settings`]: the `[ros2]` section.
//! - [`topics`]: which devices give which topics, and a publisher with its rmw identity.
//! - [`node`]: one robot's node: its entities on Zenoh and the actor that is its registry
//!   session.
//!
//! This file is the front end itself ([`start`]): one Zenoh session for the server (its
//! blocking calls on a plain thread, never on an actix arbiter), a node per robot served,
//! all on one arbiter of their own; [`Ros2FrontEnd`] stops them.
#![deny(missing_docs)]

pub mod node;
pub mod settings;
pub mod topics;

pub use player_ros2_msg::{cdr, convert, msg, nav_msg, rmw, types};

pub use settings::{Ros2Settings, SYNTAX};

use actix::prelude::*;
use futures::future::LocalBoxFuture;
use msg::{encode_tf, Time};
use node::{Callbacks, NodeEntities, NodeOptions, RobotNode, RobotPlan};
use player_core::access::AccessSettings;
use player_core::frontend::bridge::{set_up, Attach, BridgeSession, Mailbox, Slot};
use player_core::frontend::{FrontEnd, FrontEndContext, FrontEndKind, Holdings, RobotHandle};
use player_core::settings::{FrontEndSyntax, RobotSettings, Settings, SettingsError};
use player_proto::device;
use settings::AccessRules;
use slog::{info, Logger};
use std::any::Any;
use std::sync::Arc;
use thiserror::Error;
use topics::{now_ns, plan, Pub, Topic};
use zenoh::Wait;

/// The ROS 2 front end as a front end of the server: on with `[ros2] enabled` or `--ros2`.
pub struct Ros2;

impl FrontEndKind for Ros2 {
    const NAME: &'static str = "ros2";
    const SYNTAX: FrontEndSyntax = SYNTAX;
    type Settings = Ros2Settings;
    type Running = Ros2FrontEnd;
    type Error = Ros2Error;

    fn settings(core: &Settings) -> Result<Ros2Settings, SettingsError> {
        Ros2Settings::from_settings(core)
    }

    /// `--ros2`: on.
    fn apply_flag(
        settings: &mut Ros2Settings,
        _flag: &str,
        _value: Option<&str>,
    ) -> Result<(), SettingsError> {
        settings.enabled = true;
        Ok(())
    }

    fn check(
        settings: &Ros2Settings,
        robots: &[RobotSettings],
        access: &AccessSettings,
        origin: &str,
    ) -> Result<(), SettingsError> {
        settings.check_against(robots, access, origin)
    }

    fn enabled(settings: &Ros2Settings) -> bool {
        settings.enabled
    }

    fn start<'a>(
        settings: &'a Ros2Settings,
        ctx: &'a FrontEndContext,
    ) -> LocalBoxFuture<'a, Result<Ros2FrontEnd, Ros2Error>> {
        Box::pin(start(settings, ctx))
    }

    fn describe(settings: &Ros2Settings, _base_dir: &std::path::Path) -> String {
        if !settings.enabled {
            return "ros2 front end: off".into();
        }
        format!(
            "ros2 front end: {} mode, domain {}, listen {:?}, connect {:?}, cmd_vel {}",
            settings.mode,
            settings.domain_id,
            settings.listen,
            settings.connect,
            if settings.write { "obeyed" } else { "ignored" }
        )
    }
}

/// Why the front end could not start.
#[derive(Debug, Error)]
pub enum Ros2Error {
    /// The section is inconsistent.
    #[error(transparent)]
    Settings(#[from] settings::Ros2SettingsError),
    /// Zenoh refused something.
    #[error("ros2: {0}")]
    Zenoh(String),
}

/// The Zenoh session and, per robot, its tokens, subscribers and queryables (dropping
/// them undeclares them).
type Session = (zenoh::Session, Vec<NodeEntities>);

/// Undeclares the robots' entities and closes the session (blocks).
fn close((session, declared): Session) {
    drop(declared);
    let _ = session.close().wait();
}

/// The running front end: the Zenoh session and one node per robot.
pub struct Ros2FrontEnd {
    session: BridgeSession<Session>,
    nodes: Vec<Addr<RobotNode>>,
    zid: String,
    log: Logger,
}

/// One robot's node started, waiting for its entities: what its declaration needs.
struct Planned {
    plan: RobotPlan,
    to: Callbacks,
    /// Its static transforms (`tf_static`'s one message).
    tf_static: Vec<u8>,
}

/// Plans robot `r`'s node (its topics from its readable devices, `cmd_vel` if it has a
/// base that takes commands and `write` is on) and starts it on `arbiter`; `several`: the
/// front end serves more than one robot.
fn start_node(
    settings: &Ros2Settings,
    r: &RobotHandle,
    several: bool,
    boot: Time,
    ctx: &FrontEndContext,
    arbiter: &Arbiter,
) -> Planned {
    let readable: Vec<u8> = r
        .devices
        .iter()
        .filter(|(s, _)| s.readable)
        .map(|(s, _)| s.code)
        .collect();
    let topics = plan(&readable);
    let commands = settings.write
        && r.devices
            .iter()
            .any(|(s, _)| s.code == device::POSITION && s.command_size.is_some());
    let initialpose = settings.write && readable.contains(&device::LOCALIZE);
    let goals = settings.write
        && r.devices
            .iter()
            .any(|(s, _)| s.code == device::PLANNER && s.command_size.is_some());
    let frames = settings.frames_of(&r.name, several);
    let laser = topics.iter().any(|t| matches!(t, Topic::Scan(_)));
    let tf_static = encode_tf(&convert::static_transforms(
        boot,
        &frames,
        laser.then_some(settings.laser_pose),
        topics.contains(&Topic::Sonar),
    ));
    let (mailbox, estop) = (Arc::new(Mailbox::default()), Arc::new(Slot::default()));
    let options = NodeOptions {
        frames,
        laser_range_max: settings.laser_range_max,
        write: settings.write,
        holdings: Holdings::new(r.registry.clone(), ctx.ids.next(), "ros2"),
        topics: topics.clone(),
        mailbox: mailbox.clone(),
        estop: estop.clone(),
        log: ctx
            .log
            .new(slog::o!("robot" => r.name.clone(), "front" => "ros2")),
    };
    let addr = RobotNode::start_in_arbiter(&arbiter.handle(), move |_| RobotNode::new(options));
    Planned {
        plan: RobotPlan {
            name: r.name.clone(),
            namespace: settings.namespace_of(&r.name, several),
            topics,
            commands,
            initialpose,
            goals,
        },
        to: Callbacks {
            addr,
            mailbox,
            estop,
        },
        tf_static,
    }
}

/// Starts the ROS 2 front end for the robots of `ctx` that `settings` serves. Must run
/// inside an actix system.
pub async fn start(
    settings: &Ros2Settings,
    ctx: &FrontEndContext,
) -> Result<Ros2FrontEnd, Ros2Error> {
    let names: Vec<String> = ctx.robots.iter().map(|r| r.name.clone()).collect();
    settings.check(&names, &AccessRules::of(&ctx.access))?;
    let config = settings.zenoh_config()?;
    let served: Vec<&RobotHandle> = ctx
        .robots
        .iter()
        .filter(|r| settings.serves(&r.name))
        .collect();
    let several = served.len() > 1;
    let arbiter = Arbiter::new();
    let boot = Time::from_sec_usec(
        (now_ns() / 1_000_000_000) as u32,
        ((now_ns() / 1000) % 1_000_000) as u32,
    );
    let planned: Vec<Planned> = served
        .into_iter()
        .map(|r| start_node(settings, r, several, boot, ctx, &arbiter))
        .collect();
    let nodes: Vec<Addr<RobotNode>> = planned.iter().map(|p| p.to.addr.clone()).collect();
    let s = settings.clone();
    let failed = Ros2Error::Zenoh("the setup thread failed".into());
    let (session, all) = set_up("ros2", &arbiter, failed, move || {
        let session = zenoh::open(config)
            .wait()
            .map_err(|e| Ros2Error::Zenoh(format!("cannot open the Zenoh session: {e}")))?;
        let mut ids = 0u64;
        let mut all = Vec::new();
        for p in planned {
            match node::declare(&session, &s, &p.plan, &mut ids, &p.to, &p.tf_static) {
                Ok((pubs, declared)) => all.push((pubs, declared, p)),
                Err(e) => {
                    let _ = session.close().wait();
                    return Err(Ros2Error::Zenoh(format!("robot '{}': {e}", p.plan.name)));
                }
            }
        }
        Ok((session, all))
    })
    .await?;
    let zid = session.zid().to_string();
    let mut declared = Vec::new();
    for (mut pubs, d, p) in all {
        // tf_static once for whoever is there now; late joiners query the history.
        for publisher in pubs.iter_mut().filter(|x| x.topic == Topic::TfStatic) {
            let _ = publisher.put(p.tf_static.clone());
        }
        p.to.addr.do_send(Attach::<Vec<Pub>>(pubs));
        declared.push(d);
    }
    info!(ctx.log, "ros2 front end up"; "zid" => &zid, "domain" => settings.domain_id,
        "mode" => &settings.mode, "listen" => settings.listen.join(", "),
        "connect" => settings.connect.join(", "), "cmd_vel" => settings.write);
    Ok(Ros2FrontEnd {
        session: BridgeSession::new("ros2", (session, declared), close, arbiter, ctx.log.clone()),
        nodes,
        zid,
        log: ctx.log.clone(),
    })
}

impl Ros2FrontEnd {
    /// The Zenoh id of the front end's session (the `<zid>` of its tokens).
    pub fn zid(&self) -> &str {
        &self.zid
    }

    /// Stops: the nodes leave their registries (a base they commanded stops), the tokens
    /// go, the session closes.
    pub async fn shutdown(self) {
        self.session.shutdown(self.nodes).await;
        info!(self.log, "ros2 front end stopped");
    }
}

impl FrontEnd for Ros2FrontEnd {
    fn name(&self) -> &str {
        "ros2"
    }

    fn stop(self: Box<Self>) -> LocalBoxFuture<'static, ()> {
        Box::pin((*self).shutdown())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
