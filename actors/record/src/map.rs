//! A map device's cells, recorded whole: the recorder downloads them once per `map_id` as a
//! client would (`x M t` tiles one at a time through the registry, the front-end kit's
//! [`MapDownload`]; the answers come tagged through the robot's `RobotTap`) and writes the
//! map raw on `/<robot>/M/map` ([`RecordedMap`], which the replay answers tiles from) and as
//! the viewer's `foxglove.Grid` on `/<robot>/map`. The newest whole map of each robot is
//! kept, and written again at the start of each rotated file.

use crate::output::{grid_channel, Stream};
use crate::Recorder;
use actix::prelude::*;
use bytes::Bytes;
use player_core::frontend::nav::{GridMap, MapDownload};
use player_core::frontend::tap::Tagged;
use player_core::registry::RouteConfig;
use player_kit::answer::ConfigAnswer;
use player_kit::driver::{DeviceData, Timestamp};
use player_proto::device;
use player_proto::nav::MapInfo;
use player_proto::recording::RecordedMap;
use player_web::protobuf::EncodeReadings;
use slog::{info, warn};
use std::time::Instant;

/// One robot's map as the recorder has it.
#[derive(Default)]
pub(crate) struct RobotMap {
    download: MapDownload,
    /// The newest whole map as written, for the next file.
    whole: Option<WholeMap>,
}

/// A whole map's messages, encoded once: written when the map is whole and again, the same
/// bytes, at the start of each rotated file.
#[derive(Clone)]
pub(crate) struct WholeMap {
    /// When it was taken (the messages' publish time).
    taken: Timestamp,
    /// `/<robot>/M/map` ([`RecordedMap`]).
    raw: Bytes,
    /// `/<robot>/map` and the Foxglove channel's id, when Foxglove channels are recorded.
    grid: Option<(u32, Bytes)>,
}

impl Recorder {
    /// Robot `robot`'s `M` reading: a new map (id or size) starts its download.
    pub(crate) fn map_reading(&mut self, robot: usize, d: &DeviceData) {
        let Ok(info) = MapInfo::decode(&d.data) else {
            return;
        };
        let rm = self.maps.entry(robot).or_default();
        match rm.download.reading(info) {
            Ok(true) => {
                info!(self.log, "recording the map"; "robot" => &self.sources[robot].robot,
                    "map_id" => info.map_id, "width" => info.width, "height" => info.height);
                rm.whole = None;
                self.ask_tile(robot);
            }
            Ok(false) => {}
            // Once per map (the same reading again is `Ok(false)`).
            Err(e) => {
                warn!(self.log, "map not recorded"; "robot" => &self.sources[robot].robot, "error" => %e);
                rm.whole = None;
            }
        }
    }

    /// Asks robot `robot`'s map device for the next tile of its map, if one is due (the
    /// first, the next after an answer, or one whose answer is overdue).
    pub(crate) fn ask_tile(&mut self, robot: usize) {
        if self.finishing {
            return;
        }
        let (Some(rm), Some(src), Some(tap)) = (
            self.maps.get_mut(&robot),
            self.sources.get(robot),
            self.taps.get(robot),
        ) else {
            return;
        };
        if let Some(t) = rm.download.ask(Instant::now()) {
            src.registry.do_send(RouteConfig {
                device: device::MAP,
                payload: Bytes::from(t.encode()),
                client: crate::RECORDER.into(),
                answer: Some(tap.clone().recipient()),
                place: None,
            });
        }
    }

    /// Encodes robot `robot`'s map `m`, taken at `t`: raw for `/<robot>/M/map`, and as
    /// the viewer's `foxglove.Grid` for `/<robot>/map`.
    fn encode_map(&self, t: Timestamp, m: &GridMap) -> WholeMap {
        let grid = grid_channel().filter(|_| self.settings.foxglove).map(|f| {
            let e = self.settings.foxglove_encoding.for_channel(f);
            (f.id, Bytes::from(e.encode_grid(m, t)))
        });
        WholeMap {
            taken: t,
            raw: Bytes::from(RecordedMap::encode(&m.info, &m.cells)),
            grid,
        }
    }

    /// Writes robot `robot`'s whole map `w` with log time `now`.
    pub(crate) fn write_map(&mut self, robot: usize, w: &WholeMap, now: u64) {
        self.write((robot, device::MAP, Stream::Map), w.taken, 0, &w.raw, now);
        if let Some((id, grid)) = &w.grid {
            let key = (robot, device::MAP, Stream::Foxglove(*id));
            self.write(key, w.taken, 0, grid, now);
        }
    }

    /// The whole maps kept (their bytes shared), to write again at the start of a file.
    pub(crate) fn whole_maps(&self) -> Vec<(usize, WholeMap)> {
        self.maps
            .iter()
            .filter_map(|(&r, rm)| rm.whole.clone().map(|w| (r, w)))
            .collect()
    }
}

impl Handler<Tagged<ConfigAnswer>> for Recorder {
    type Result = ();

    /// A tile of a robot's map: placed; the whole map, once it is, written; the next
    /// tile asked.
    fn handle(&mut self, msg: Tagged<ConfigAnswer>, _ctx: &mut Self::Context) {
        let robot = msg.robot;
        if msg.message.device != device::MAP {
            return;
        }
        let Some(rm) = self.maps.get_mut(&robot) else {
            return;
        };
        let whole = msg
            .message
            .bodies
            .iter()
            .filter_map(|b| rm.download.answer(b))
            .last();
        if let Some(m) = whole {
            let t = Timestamp::now();
            info!(self.log, "map recorded"; "robot" => &self.sources[robot].robot,
                "map_id" => m.info.map_id, "cells" => m.cells.len());
            // What came before it first, so the file keeps the order.
            self.drain();
            let w = self.encode_map(t, &m);
            self.write_map(robot, &w, t.nanos());
            if let Some(rm) = self.maps.get_mut(&robot) {
                rm.whole = Some(w);
            }
        }
        self.ask_tile(robot);
    }
}
