//! `/map`: a robot's map device as a `foxglove.Grid` ([`crate::grid`]). While a client
//! reads a robot's `/map` the session holds its `M` for reading; each `M` reading says
//! which map is served, and a new `map_id` (or size) starts a download through the
//! front-end kit's [`MapDownload`]: `x M t` tiles asked one at a time, their answers
//! coming through the robot's answer tap (`nav.rs`), at most
//! [`MAX_MAP_CELLS`](player_core::frontend::nav::MAX_MAP_CELLS) cells (a larger map is
//! refused before anything is allocated, and the client told). The whole map is encoded
//! once and sent to every subscription of the robot's `/map`, then to each new one as it
//! subscribes, and again when the map's id changes.

use super::WebSession;
use crate::foxglove::{self, Level};
use crate::protobuf::EncodeReadings;
use crate::schema::Source;
use actix::prelude::*;
use bytes::Bytes;
use player_core::frontend::nav::MapDownload;
use player_core::registry::RouteConfig;
use player_kit::answer::ConfigAnswer;
use player_kit::driver::{DeviceData, Timestamp};
use player_proto::device;
use player_proto::nav::MapInfo;
use slog::{info, warn};
use std::collections::HashMap;
use std::time::Instant;

/// Per robot whose `/map` is read here: its download and its newest whole map.
#[derive(Default)]
pub(super) struct Maps {
    robots: HashMap<usize, RobotMap>,
}

/// One robot's map as this session has it.
#[derive(Default)]
struct RobotMap {
    download: MapDownload,
    /// Why the newest map is not served, until the client is told (at the next tick).
    refused: Option<String>,
    /// The newest whole map's message and its stamp.
    message: Option<(Timestamp, Bytes)>,
}

impl WebSession {
    /// A subscription `sub` of robot `k`'s `/map`: the robot's answers tapped, and the
    /// newest whole map sent at once if there is one (the next `M` reading starts the
    /// download otherwise).
    pub(super) fn watch_map(&mut self, k: usize, sub: u32, ctx: &mut Context<Self>) {
        self.answer_tap(k, ctx);
        let rm = self.maps.robots.entry(k).or_default();
        if let Some((ts, payload)) = rm.message.clone() {
            self.send_frame(sub, foxglove::message_data(sub, ts.nanos(), &payload));
        }
    }

    /// Forgets robot `k`'s map when nobody here reads its `/map` any more.
    pub(super) fn unwatch_map(&mut self, k: usize) {
        if self
            .subs
            .of(&self.shared.robots, k, Source::Grid)
            .is_empty()
        {
            self.maps.robots.remove(&k);
        }
    }

    /// Robot `k`'s `M` reading: a new map starts its download.
    pub(super) fn map_reading(&mut self, k: usize, d: &DeviceData) {
        let Some(rm) = self.maps.robots.get_mut(&k) else {
            return;
        };
        let Ok(info) = MapInfo::decode(&d.data) else {
            return;
        };
        match rm.download.reading(info) {
            Ok(true) => {
                info!(self.log, "web: downloading the map"; "robot" => k,
                    "map_id" => info.map_id, "width" => info.width, "height" => info.height);
                rm.message = None;
                rm.refused = None;
                self.ask_tile(k);
            }
            Ok(false) => {}
            // Once per map (the same reading again is `Ok(false)`).
            Err(e) => {
                warn!(self.log, "web: map not served"; "robot" => k, "error" => %e);
                rm.message = None;
                rm.refused = Some(format!("/map not served: {e}"));
            }
        }
    }

    /// Asks robot `k`'s map device for the next tile, if one is due.
    fn ask_tile(&mut self, k: usize) {
        let (Some(registry), Some(tap)) = (self.registry(k), self.nav.tap(k)) else {
            return;
        };
        let Some(rm) = self.maps.robots.get_mut(&k) else {
            return;
        };
        if let Some(t) = rm.download.ask(Instant::now()) {
            registry.do_send(RouteConfig {
                device: device::MAP,
                payload: Bytes::from(t.encode()),
                client: self.client.clone(),
                answer: Some(tap),
                place: None,
            });
        }
    }

    /// Every tick: a tile asked again where its answer is overdue, and a refused map told.
    pub(super) fn map_tick(&mut self, ctx: &mut Context<Self>) {
        let robots: Vec<usize> = self.maps.robots.keys().copied().collect();
        for k in robots {
            self.answer_tap(k, ctx);
            self.ask_tile(k);
            let told = self
                .maps
                .robots
                .get_mut(&k)
                .and_then(|rm| rm.refused.take());
            if let Some(m) = told {
                self.status(Level::Warning, &m, ctx);
            }
        }
    }

    /// Robot `k`'s answer to `x M t`: the tile placed; the whole map, once it is, sent to
    /// every subscription of the robot's `/map`; the next tile asked.
    pub(super) fn on_tiles(&mut self, k: usize, answer: &ConfigAnswer) {
        let Some(rm) = self.maps.robots.get_mut(&k) else {
            return;
        };
        let whole = answer
            .bodies
            .iter()
            .filter_map(|b| rm.download.answer(b))
            .last();
        if let Some(m) = whole {
            let ts = Timestamp::now();
            let payload = Bytes::from(self.encoding.encode_grid(&m, ts));
            info!(self.log, "web: map served"; "robot" => k, "map_id" => m.info.map_id,
                "bytes" => payload.len());
            rm.message = Some((ts, payload.clone()));
            for sub in self.subs.of(&self.shared.robots, k, Source::Grid) {
                self.send_frame(sub, foxglove::message_data(sub, ts.nanos(), &payload));
            }
        }
        self.ask_tile(k);
    }
}
