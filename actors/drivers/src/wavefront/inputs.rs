//! What the `wavefront` driver reads, decoded: the pose on the map (a position device, the
//! full-precision odometry `P`, or a localizer's `H`, told apart by the reading's size),
//! the base's speed, the laser's 361-bin view, and the map, put together from the tiles
//! the map device answers (asked for inside the server: the answers' bodies come to the
//! driver as messages, never through a client's connection).

use player_nav::map::{self as navmap, Map};
use player_nav::pose::Pose;
use player_proto::data::{Laser, Position};
use player_proto::nav::{Localize, MapInfo, Tile, TileRequest};
use player_proto::odometry::{Odometry, ARCSEC_PER_RAD};

/// The pose a reading gives: 21 bytes a position (mm, mm, whole degrees), 25 bytes the
/// full-precision odometry (mm, mm, arc-seconds), otherwise a localizer's reading (its
/// best hypothesis; none while it has none).
pub fn pose_of(data: &[u8]) -> Option<Pose> {
    match data.len() {
        Position::SIZE => {
            let p = Position::decode(data).ok()?;
            Some(Pose::new(
                f64::from(p.x) / 1000.0,
                f64::from(p.y) / 1000.0,
                f64::from(p.heading).to_radians(),
            ))
        }
        Odometry::SIZE => {
            let o = Odometry::decode(data).ok()?;
            Some(Pose::new(
                f64::from(o.x) / 1000.0,
                f64::from(o.y) / 1000.0,
                f64::from(o.heading) / ARCSEC_PER_RAD,
            ))
        }
        _ => {
            let h = Localize::decode(data).ok()?;
            let best = h.hypotheses.first()?;
            Some(Pose::new(
                f64::from(best.mean[0]) / 1000.0,
                f64::from(best.mean[1]) / 1000.0,
                f64::from(best.mean[2]) / ARCSEC_PER_RAD,
            ))
        }
    }
}

/// The base's forward speed (m/s) from its position reading (either layout).
pub fn speed_of(data: &[u8]) -> Option<f64> {
    match data.len() {
        Position::SIZE => Position::decode(data)
            .ok()
            .map(|p| f64::from(p.speed) / 1000.0),
        Odometry::SIZE => Odometry::decode(data)
            .ok()
            .map(|o| f64::from(o.speed) / 1000.0),
        _ => None,
    }
}

/// The laser's 361 ranges (mm).
pub fn laser_of(data: &[u8]) -> Option<[u16; 361]> {
    Laser::decode(data).ok().map(|l| l.ranges)
}

/// A map being put together from its tiles.
#[derive(Debug)]
pub struct MapLoad {
    info: MapInfo,
    cells: Vec<i8>,
    /// Cells still missing.
    missing: usize,
    /// Which tiles have come.
    got: Vec<bool>,
    tiles: Vec<TileRequest>,
}

impl MapLoad {
    /// A load of the map `info` describes; its size checked before anything is allocated.
    pub fn new(info: MapInfo) -> Result<MapLoad, String> {
        navmap::check_size(
            "the map device's map",
            info.width.into(),
            info.height.into(),
        )
        .map_err(|e| e.to_string())?;
        if info.resolution == 0 {
            return Err("the map device's resolution is 0".into());
        }
        let n = info.width as usize * info.height as usize;
        let tiles = info.tiles();
        Ok(MapLoad {
            info,
            cells: vec![0; n],
            missing: n,
            got: vec![false; tiles.len()],
            tiles,
        })
    }

    /// The map's `M` reading.
    pub fn info(&self) -> &MapInfo {
        &self.info
    }

    /// The tiles to ask for.
    pub fn tiles(&self) -> &[TileRequest] {
        &self.tiles
    }

    /// Puts one tile answer's cells in place (a tile of another map, or one not asked for,
    /// or one already in, is ignored); true once every cell is in.
    pub fn put(&mut self, tile: &Tile) -> bool {
        if tile.map_id != self.info.map_id {
            return false;
        }
        let Some(k) = self.tiles.iter().position(|t| *t == tile.rect) else {
            return false;
        };
        let r = tile.rect;
        if self.got[k] || tile.cells.len() != r.width as usize * r.height as usize {
            return false;
        }
        self.got[k] = true;
        let w = self.info.width as usize;
        for (i, row) in tile.cells.chunks(r.width as usize).enumerate() {
            let at = (r.row as usize + i) * w + r.col as usize;
            self.cells[at..at + row.len()].copy_from_slice(row);
        }
        self.missing -= tile.cells.len();
        self.missing == 0
    }

    /// The whole map, once every tile is in.
    pub fn map(self) -> Result<Map, String> {
        let i = self.info;
        Map::with_cells(
            i.width as usize,
            i.height as usize,
            i.resolution_m(),
            Pose::new(
                f64::from(i.origin_x) / 1000.0,
                f64::from(i.origin_y) / 1000.0,
                f64::from(i.origin_heading) / ARCSEC_PER_RAD,
            ),
            self.cells,
        )
        .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_proto::nav::{Hypothesis, MAX_TILE_CELLS};

    #[test]
    fn each_pose_layout_is_read_by_its_size() {
        let p = Position {
            x: 1500,
            y: -200,
            heading: 90,
            ..Position::default()
        };
        let q = pose_of(&p.encode()).unwrap();
        assert_eq!((q.x, q.y), (1.5, -0.2));
        assert!((q.theta - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        let o = Odometry {
            x: 10,
            heading: 648_000,
            speed: 300,
            ..Odometry::default()
        };
        assert!((pose_of(&o.encode()).unwrap().theta - std::f64::consts::PI).abs() < 1e-12);
        assert_eq!(speed_of(&o.encode()), Some(0.3));
        let h = Localize {
            hypotheses: vec![Hypothesis {
                mean: [2000, 3000, 324_000],
                cov: [[0; 3]; 3],
                alpha: 1_000_000,
            }],
            ..Localize::default()
        };
        let q = pose_of(&h.encode().unwrap()).unwrap();
        assert_eq!((q.x, q.y), (2.0, 3.0));
        assert_eq!(pose_of(&Localize::default().encode().unwrap()), None);
        assert_eq!(pose_of(&[1, 2, 3]), None);
    }

    #[test]
    fn a_map_is_put_together_from_its_tiles_and_foreign_tiles_are_ignored() {
        let info = MapInfo {
            map_id: 7,
            width: 400,
            height: 300,
            resolution: 50_000,
            origin_x: -1000,
            origin_y: 500,
            origin_heading: 0,
        };
        let mut load = MapLoad::new(info).unwrap();
        let tiles = load.tiles().to_vec();
        assert!(tiles.len() > 1, "more than one tile: {}", MAX_TILE_CELLS);
        let cell = |c: u32, r: u32| if (c + r) % 5 == 0 { 1 } else { -1 };
        let mut done = false;
        for (k, t) in tiles.iter().enumerate() {
            let mut cells = Vec::new();
            for r in t.row..t.row + t.height {
                for c in t.col..t.col + t.width {
                    cells.push(cell(c, r));
                }
            }
            let tile = Tile {
                map_id: 7,
                rect: *t,
                cells,
            };
            assert!(!load.put(&Tile {
                map_id: 8,
                ..tile.clone()
            }));
            done = load.put(&tile);
            assert_eq!(done, k + 1 == tiles.len());
            assert!(!load.put(&tile), "a tile twice counts once");
        }
        assert!(done);
        let map = load.map().unwrap();
        assert_eq!((map.width(), map.height()), (400, 300));
        assert_eq!(map.origin().x, -1.0);
        assert_eq!(map.get(399, 299), Some(cell(399, 299)));
        assert_eq!(map.get(5, 0), Some(1));
        let huge = MapInfo {
            width: 100_000,
            height: 100_000,
            ..info
        };
        assert!(MapLoad::new(huge).unwrap_err().contains("cells"));
    }
}
