//! What a web session sends on the client's subscriptions: each reading to the
//! subscriptions of its channel (encoded once per reading per thread and encoding, shared
//! by the sessions there), the walls and where each robot's odometry lies in the map
//! (`/walls`, `/tf_map`), a robot's device list (`/devices`), and on an endpoint serving several
//! robots the world's overview (`/robots`: every robot's name and newest pose in the map,
//! once a second).

use super::WebSession;
use crate::foxglove;
use crate::protobuf::{EncodeReadings, Encoding};
use crate::schema::{self, Channel, Source};
use crate::shared::Shared;
use crate::world::Robots;
use actix::prelude::*;
use bytes::Bytes;
use player_core::registry::{GetMap, ListDevices};
use player_kit::driver::{DeviceData, Timestamp};
use player_proto::device;
use player_proto::ext::DeviceEntry;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

/// A channel's newest encoded payload: the reading's sequence number and timestamp, and
/// its encoding (`None` when it did not decode).
type Encoded = (u64, Timestamp, Option<Bytes>);

thread_local! {
    /// Encoded payloads by (endpoint, channel, encoding): the newest reading's, so the
    /// sessions on one thread encode each reading once per encoding.
    static ENCODED: RefCell<HashMap<(u64, u32, Encoding), Encoded>> =
        RefCell::new(HashMap::new());
}

/// Robot `robot`'s reading `d` on `channel` in `encoding`, encoded (frames under the
/// robot's name where the endpoint serves several robots).
fn encoded(
    shared: &Shared,
    robot: usize,
    channel: &Channel,
    encoding: Encoding,
    d: &DeviceData,
) -> Option<Bytes> {
    let encoding = encoding.for_channel(channel);
    ENCODED.with(|cache| {
        let mut cache = cache.borrow_mut();
        let key = (shared.uid, Robots::channel_id(robot, channel), encoding);
        if let Some((seq, ts, bytes)) = cache.get(&key) {
            if *seq == d.seq && *ts == d.timestamp {
                return bytes.clone();
            }
        }
        let bytes = encoding
            .encode_in(channel, d, frame_prefix(shared, robot))
            .map(Bytes::from);
        cache.insert(key, (d.seq, d.timestamp, bytes.clone()));
        bytes
    })
}

/// The prefix of robot `robot`'s frames (its name) where the endpoint serves several robots.
fn frame_prefix(shared: &Shared, robot: usize) -> Option<&str> {
    match shared.robots.get(robot) {
        Some(r) if shared.robots.several() => Some(&r.name),
        _ => None,
    }
}

/// For the world's `/robots`: each robot's newest odometry pose and where its odometry
/// lies in the map.
#[derive(Default)]
pub(super) struct Overview {
    /// x, y (m), heading (rad), speed (m/s), in its odometry frame.
    poses: HashMap<usize, (f64, f64, f64, f64)>,
    /// Where its odometry frame lies in the map: x, y (m), heading (rad).
    origins: HashMap<usize, [f64; 3]>,
}

impl Overview {
    /// Robot `k`'s entry: its name and, once it has a pose, the pose in the map.
    fn entry(&self, k: usize, name: &str) -> Value {
        let Some(&(x, y, th, v)) = self.poses.get(&k) else {
            return serde_json::json!({"name": name});
        };
        let [ox, oy, oth] = self.origins.get(&k).copied().unwrap_or([0.0; 3]);
        let (c, s) = (oth.cos(), oth.sin());
        serde_json::json!({"name": name, "x": ox + c * x - s * y,
            "y": oy + s * x + c * y, "heading": oth + th, "speed": v})
    }
}

impl WebSession {
    /// Robot `k`'s reading `d`, to every subscription of its channels.
    pub(super) fn on_reading(&mut self, k: usize, d: &DeviceData) {
        let Some(rs) = self.robots.get_mut(&k) else {
            return;
        };
        if !rs.holdings.take(d) {
            return;
        }
        // A replay's readings carry the recording's time (Foxglove's timeline).
        let replayed = self.replay.as_ref().map(|r| r.recorded(d));
        let d = replayed.as_ref().unwrap_or(d);
        rs.devices.entry(d.device).or_default().count += 1;
        if d.device == device::MAP {
            self.map_reading(k, d);
        }
        let robots = &self.shared.robots;
        if d.device == device::POSITION && robots.several() {
            if let Ok(p) = player_proto::data::Position::decode(&d.data) {
                let pose = (
                    f64::from(p.x) / 1000.0,
                    f64::from(p.y) / 1000.0,
                    f64::from(p.heading).to_radians(),
                    f64::from(p.speed) / 1000.0,
                );
                if !self.subs.overview(robots).is_empty() {
                    self.overview.poses.insert(k, pose);
                }
            }
        }
        let mut frames = Vec::new();
        for (sub, ch) in self.subs.iter() {
            let Some((r, channel)) = robots.channel(ch) else {
                continue;
            };
            if r != k || channel.source != Source::Device(d.device) {
                continue;
            }
            if let Some(payload) = encoded(&self.shared, k, channel, self.encoding, d) {
                frames.push((sub, d.timestamp.nanos(), payload));
            }
        }
        let now = Instant::now();
        for (sub, ns, payload) in frames {
            if !self.ops.rate_allows(sub, now) {
                continue;
            }
            self.send_reading(sub, ns, payload);
        }
    }

    /// Starts (`on`) or ends holding every robot's position for `/robots`; starting also
    /// asks each robot once where its odometry lies in the map.
    pub(super) fn watch_all(&mut self, on: bool, ctx: &mut Context<Self>) {
        for k in 0..self.shared.robots.len() {
            if !on && !self.robots.contains_key(&k) {
                continue;
            }
            self.sync_device(k, device::POSITION, ctx);
            if on && !self.overview.origins.contains_key(&k) {
                let Some(registry) = self.registry(k) else {
                    continue;
                };
                let fut = registry.send(GetMap { walls: false });
                ctx.spawn(fut.into_actor(self).map(move |r, act, _| {
                    if let Ok(Some(m)) = r {
                        act.overview.origins.insert(k, m.odometry_origin);
                    }
                }));
            }
        }
        if !on {
            self.overview.poses.clear();
        }
    }

    /// Picks up robot `k`'s readings waiting in its inbox, and sets whether its readings
    /// come as messages: yes while a channel of it is subscribed (or `/robots` is not),
    /// else they wait for the next `/robots`.
    pub(super) fn settle_inbox(&mut self, k: usize, ctx: &mut Context<Self>) {
        let messages = self.subs.wants_messages(&self.shared.robots, k);
        let inbox = self.robot(k, ctx).inbox.clone();
        let mut waiting = Vec::new();
        inbox.take(messages, &mut waiting);
        for d in &waiting {
            self.on_reading(k, d);
        }
    }

    /// Sends `/robots`: every robot's name and newest pose in the map.
    pub(super) fn send_overview(&mut self, ctx: &mut Context<Self>) {
        let subs = self.subs.overview(&self.shared.robots);
        if subs.is_empty() {
            return;
        }
        let touched: Vec<usize> = self.robots.keys().copied().collect();
        for k in touched {
            self.settle_inbox(k, ctx);
        }
        let robots = &self.shared.robots;
        let list: Vec<Value> = robots
            .iter()
            .enumerate()
            .map(|(k, r)| self.overview.entry(k, &r.name))
            .collect();
        let ts = Timestamp::now();
        let message = serde_json::json!({"timestamp": schema::time(ts), "robots": list});
        let payload = serde_json::to_vec(&message).unwrap_or_default();
        for sub in subs {
            self.send_frame(sub, foxglove::message_data(sub, ts.nanos(), &payload));
        }
    }

    /// Asks robot `k`'s registry for the map (`walls`) or only where its odometry lies,
    /// and sends it to the subscriptions of its map channels.
    pub(super) fn fetch_map(&mut self, k: usize, walls: bool, ctx: &mut Context<Self>) {
        let Some(registry) = self.registry(k) else {
            return;
        };
        let fut = registry.send(GetMap { walls });
        ctx.spawn(fut.into_actor(self).map(move |r, act, _| {
            let Ok(Some(m)) = r else {
                return;
            };
            let now = Timestamp::now();
            let m = Rc::new(m);
            let subs: Vec<(u32, u32)> = act.subs.iter().collect();
            for (sub, ch) in subs {
                let source = act
                    .shared
                    .robots
                    .channel(ch)
                    .filter(|(r, _)| *r == k)
                    .map(|(_, c)| c.source);
                let payload = match source {
                    Some(Source::Map) if walls && act.subs.first_walls(sub) => {
                        act.encoding.encode_map(&m, now)
                    }
                    Some(Source::MapTransform) => {
                        let prefix = frame_prefix(&act.shared, k);
                        act.encoding.encode_map_transform(&m, now, prefix)
                    }
                    _ => continue,
                };
                act.send_frame(sub, foxglove::message_data(sub, now.nanos(), &payload));
            }
        }));
    }

    /// Asks robot `k`'s registry for its device list and sends `/devices`: each device's
    /// state, publish rate, readers and writers (every front end), and this client's access
    /// and the rate it received.
    pub(super) fn fetch_devices(&mut self, k: usize, ctx: &mut Context<Self>) {
        if self
            .subs
            .of(&self.shared.robots, k, Source::Devices)
            .is_empty()
        {
            return;
        }
        let Some(registry) = self.registry(k) else {
            return;
        };
        let fut = registry.send(ListDevices);
        ctx.spawn(fut.into_actor(self).map(move |r, act, _| {
            if let Ok(list) = r {
                act.send_devices(k, &list);
            }
        }));
    }

    fn send_devices(&mut self, k: usize, list: &[DeviceEntry]) {
        let subs = self.subs.of(&self.shared.robots, k, Source::Devices);
        let Some(rs) = self.robots.get(&k) else {
            return;
        };
        let devices: Vec<Value> = list
            .iter()
            .map(|e| {
                let code = e.code;
                let st = rs.devices.get(&code);
                let access = match rs.holdings.held(code).map(|a| (a.read, a.write)) {
                    Some((true, true)) => "a",
                    Some((true, false)) => "r",
                    Some((false, true)) => "w",
                    _ => "-",
                };
                serde_json::json!({"code": char::from(code).to_string(),
                    "name": player_kit::log::device(code), "driver": e.driver,
                    "state": e.state_name(), "rate_hz": f64::from(e.rate_x10) / 10.0,
                    "received_hz": st.map_or(0.0, |s| s.rate),
                    "readers": e.readers, "writers": e.writers, "access": access,
                    "error": st.and_then(|s| s.failed.clone())})
            })
            .collect();
        let ts = Timestamp::now();
        let name = self.shared.robots.get(k).map_or("", |r| r.name.as_str());
        let payload = serde_json::to_vec(&serde_json::json!({
            "timestamp": schema::time(ts), "robot": name,
            "estop": rs.estop.is_some(), "estop_by": rs.estop,
            "may_write": self.admission.may_write(), "dropped": self.conn.dropped(),
            "devices": devices}))
        .unwrap_or_default();
        for sub in subs {
            self.send_frame(sub, foxglove::message_data(sub, ts.nanos(), &payload));
        }
    }
}
