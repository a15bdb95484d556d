//! The client's subscriptions to the endpoint's channels ([`Subscriptions`]: which
//! subscription reads which channel, what each implies), and the session taking
//! `subscribe` and `unsubscribe`: a device channel holds the device for reading, `/walls`
//! and `/tf_map` fetch the walls, `/map` holds the map device (`map.rs`), `/devices` the
//! device list, and the world's `/robots`
//! holds every robot's position device while it is read ([`crate::world`]).

use super::WebSession;
use crate::foxglove::{self, Level};
use crate::playback;
use crate::schema::Source;
use crate::world::{self, Robots};
use actix::prelude::*;
use player_proto::device;
use std::collections::{HashMap, HashSet};

/// Subscription id → channel id, and what was sent once.
#[derive(Default)]
pub(super) struct Subscriptions {
    channel_of: HashMap<u32, u32>,
    /// `/walls` subscriptions already sent the walls.
    map_sent: HashSet<u32>,
}

impl Subscriptions {
    /// Every subscription and its channel.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.channel_of.iter().map(|(s, c)| (*s, *c))
    }

    /// Subscription `sub`'s channel.
    pub(super) fn channel(&self, sub: u32) -> Option<u32> {
        self.channel_of.get(&sub).copied()
    }

    /// The subscriptions of the world's `/robots` (none where one robot is served).
    pub(super) fn overview(&self, robots: &Robots) -> Vec<u32> {
        self.channel_of
            .iter()
            .filter(|(_, c)| **c == world::ROBOTS_CHANNEL && robots.several())
            .map(|(s, _)| *s)
            .collect()
    }

    /// Whether the world's `/robots` is read.
    fn reads_overview(&self, robots: &Robots) -> bool {
        robots.several()
            && self
                .channel_of
                .values()
                .any(|c| *c == world::ROBOTS_CHANNEL)
    }

    /// The subscriptions of robot `k`'s channels of `source`.
    pub(super) fn of(&self, robots: &Robots, k: usize, source: Source) -> Vec<u32> {
        self.channel_of
            .iter()
            .filter(|(_, c)| {
                robots
                    .channel(**c)
                    .is_some_and(|(r, ch)| r == k && ch.source == source)
            })
            .map(|(s, _)| *s)
            .collect()
    }

    /// Whether robot `k`'s device `code` is read: a channel of it is subscribed, or (the
    /// position device) the world's `/robots` is, or (the map device) its `/map` is.
    pub(super) fn reads(&self, robots: &Robots, k: usize, code: u8) -> bool {
        !self.of(robots, k, Source::Device(code)).is_empty()
            || (code == device::POSITION && self.reads_overview(robots))
            || (code == device::MAP && !self.of(robots, k, Source::Grid).is_empty())
    }

    /// Whether robot `k`'s readings are to come as messages: a device channel of it is
    /// subscribed, or `/robots` is not read (else they wait for the next `/robots`).
    pub(super) fn wants_messages(&self, robots: &Robots, k: usize) -> bool {
        !self.reads_overview(robots)
            || self.channel_of.values().any(|&c| {
                robots
                    .channel(c)
                    .is_some_and(|(r, ch)| r == k && matches!(ch.source, Source::Device(_)))
            })
    }

    /// The robots whose `/particles` or `/plan` are read, with which, in order.
    pub(super) fn nav_reads(&self, robots: &Robots) -> Vec<(usize, Source)> {
        let mut list: Vec<(usize, Source)> = self
            .channel_of
            .values()
            .filter_map(|c| robots.channel(*c))
            .filter(|(_, ch)| matches!(ch.source, Source::Particles | Source::Plan))
            .map(|(k, ch)| (k, ch.source))
            .collect();
        list.sort_unstable_by_key(|&(k, s)| (k, s == Source::Plan));
        list.dedup();
        list
    }

    /// The robots whose `/devices`, and those whose `/tf_map`, are read, in order.
    pub(super) fn device_lists_and_transforms(&self, robots: &Robots) -> (Vec<usize>, Vec<usize>) {
        let mut devices = Vec::new();
        let mut tf = Vec::new();
        for c in self.channel_of.values() {
            match robots.channel(*c) {
                Some((k, ch)) if ch.source == Source::Devices => devices.push(k),
                Some((k, ch)) if ch.source == Source::MapTransform => tf.push(k),
                _ => {}
            }
        }
        for list in [&mut devices, &mut tf] {
            list.sort_unstable();
            list.dedup();
        }
        (devices, tf)
    }

    /// Whether `/walls` subscription `sub` is yet to be sent the walls (it is from now on).
    pub(super) fn first_walls(&mut self, sub: u32) -> bool {
        self.map_sent.insert(sub)
    }
}

impl WebSession {
    /// `subscribe`: each subscription joins the table, its device held for reading, its
    /// walls, map, device list or robots' overview sent.
    pub(super) fn subscribe(&mut self, list: Vec<foxglove::Subscription>, ctx: &mut Context<Self>) {
        let mut touched = HashSet::new();
        for s in list {
            if self.subs.channel_of.len() >= foxglove::MAX_SUBSCRIPTIONS {
                self.status(Level::Error, "too many subscriptions", ctx);
                break;
            }
            if s.id == playback::TIME_SLOT && self.replay.is_some() {
                let m = format!("subscription id {} is reserved here", s.id);
                self.status(Level::Error, &m, ctx);
                continue;
            }
            if self.subs.channel_of.contains_key(&s.id) {
                let m = format!("subscription id {} is already in use", s.id);
                self.status(Level::Error, &m, ctx);
                continue;
            }
            if s.channel_id == world::ROBOTS_CHANNEL && self.shared.robots.several() {
                let first = !self.subs.reads_overview(&self.shared.robots);
                self.subs.channel_of.insert(s.id, s.channel_id);
                if first {
                    self.watch_all(true, ctx);
                }
                self.send_overview(ctx);
                continue;
            }
            let Some((k, channel)) = self.shared.robots.channel(s.channel_id) else {
                let m = format!("no channel {}", s.channel_id);
                self.status(Level::Error, &m, ctx);
                continue;
            };
            self.subs.channel_of.insert(s.id, s.channel_id);
            match channel.source {
                Source::Device(code) => {
                    touched.insert((k, code));
                }
                Source::Map | Source::MapTransform => self.fetch_map(k, true, ctx),
                Source::Grid => {
                    self.watch_map(k, s.id, ctx);
                    touched.insert((k, device::MAP));
                }
                Source::Devices => {
                    self.robot(k, ctx);
                    self.fetch_devices(k, ctx)
                }
                // Asked for at the next tick (`nav.rs`).
                Source::Particles | Source::Plan => {}
            }
        }
        for (k, code) in touched {
            self.sync_device(k, code, ctx);
        }
    }

    /// `unsubscribe`: each subscription leaves the table (its waiting frame too), and the
    /// devices no longer read are released.
    pub(super) fn unsubscribe(&mut self, ids: Vec<u32>, ctx: &mut Context<Self>) {
        let mut touched = HashSet::new();
        for id in ids {
            let Some(ch) = self.subs.channel_of.remove(&id) else {
                continue;
            };
            self.subs.map_sent.remove(&id);
            self.ops.forget(id);
            self.conn.forget(id);
            if ch == world::ROBOTS_CHANNEL && !self.subs.reads_overview(&self.shared.robots) {
                self.watch_all(false, ctx);
            }
            match self.shared.robots.channel(ch).map(|(k, c)| (k, c.source)) {
                Some((k, Source::Device(code))) => {
                    touched.insert((k, code));
                }
                Some((k, Source::Grid)) => {
                    self.unwatch_map(k);
                    touched.insert((k, device::MAP));
                }
                _ => {}
            }
        }
        for (k, code) in touched {
            self.sync_device(k, code, ctx);
        }
    }
}
