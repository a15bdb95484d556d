//! What the `wavefront` driver reads, decoded: the pose on the map (a position device, the
//! full-precision odometry `P`, or a localizer's `H`, told apart by the reading's size),
//! the base's speed (both odometry layouts through [`crate::odom`], the decoder `amcl`
//! uses too), the laser's 361-bin view, and the map, made from the occupancy grid the map
//! driver hands over inside the server ([`player_kit::world::GridMap`]).

use crate::odom;
use player_kit::world::GridMap;
use player_nav::map::Map;
use player_nav::pose::Pose;
use player_proto::data::{Laser, Position};
use player_proto::nav::Localize;
use player_proto::odometry::{Odometry, ARCSEC_PER_RAD};

/// Whether a reading has one of the odometry layouts (21 bytes `p`, 25 bytes `P`).
fn is_odometry(data: &[u8]) -> bool {
    data.len() == Position::SIZE || data.len() == Odometry::SIZE
}

/// The pose a reading of the pose device gives, and in which frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PoseReading {
    /// An odometry layout: in the pose device's own frame, which an
    /// [`odom::OdomFrame`] places on the map (it may start again at zero).
    Odometry(Pose),
    /// A localizer's best hypothesis: on the map.
    Localized(Pose),
}

/// The pose a reading gives: 21 bytes a position (mm, mm, whole degrees), 25 bytes the
/// full-precision odometry (mm, mm, arc-seconds), otherwise a localizer's reading (its
/// best hypothesis; none while it has none).
pub fn pose_of(data: &[u8]) -> Option<PoseReading> {
    if is_odometry(data) {
        return odom::odometry(data).map(|o| PoseReading::Odometry(o.pose));
    }
    let h = Localize::decode(data).ok()?;
    let best = h.hypotheses.first()?;
    Some(PoseReading::Localized(Pose::new(
        f64::from(best.mean[0]) / 1000.0,
        f64::from(best.mean[1]) / 1000.0,
        f64::from(best.mean[2]) / ARCSEC_PER_RAD,
    )))
}

/// The base's forward speed (m/s) from its position reading (either layout).
pub fn speed_of(data: &[u8]) -> Option<f64> {
    if !is_odometry(data) {
        return None;
    }
    odom::odometry(data).map(|o| f64::from(o.speed) / 1000.0)
}

/// The laser's 361 ranges (mm).
pub fn laser_of(data: &[u8]) -> Option<[u16; 361]> {
    Laser::decode(data).ok().map(|l| l.ranges)
}

/// The map of a map driver's grid (its size checked by [`Map::with_cells`]).
pub fn map_of(g: &GridMap) -> Result<Map, String> {
    let (w, h) = (g.width as usize, g.height as usize);
    if g.cells.len() != w.saturating_mul(h) {
        return Err(format!(
            "the map's grid has {} cells, not {w} x {h}",
            g.cells.len()
        ));
    }
    Map::with_cells(
        w,
        h,
        g.resolution,
        Pose::new(g.origin[0], g.origin[1], g.origin[2]),
        g.cells.to_vec(),
    )
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    use player_proto::nav::Hypothesis;

    #[test]
    fn each_pose_layout_is_read_by_its_size() {
        let p = Position {
            x: 1500,
            y: -200,
            heading: 90,
            ..Position::default()
        };
        let Some(PoseReading::Odometry(q)) = pose_of(&p.encode()) else {
            panic!("a position is odometry");
        };
        assert_eq!((q.x, q.y), (1.5, -0.2));
        assert!((q.theta - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        let o = Odometry {
            x: 10,
            heading: 648_000,
            speed: 300,
            ..Odometry::default()
        };
        let Some(PoseReading::Odometry(q)) = pose_of(&o.encode()) else {
            panic!("P is odometry");
        };
        assert!((q.theta - std::f64::consts::PI).abs() < 1e-12);
        assert_eq!(speed_of(&o.encode()), Some(0.3));
        let h = Localize {
            hypotheses: vec![Hypothesis {
                mean: [2000, 3000, 324_000],
                cov: [[0; 3]; 3],
                alpha: 1_000_000,
            }],
            ..Localize::default()
        };
        let Some(PoseReading::Localized(q)) = pose_of(&h.encode().unwrap()) else {
            panic!("H is on the map");
        };
        assert_eq!((q.x, q.y), (2.0, 3.0));
        assert_eq!(speed_of(&h.encode().unwrap()), None);
        assert_eq!(pose_of(&Localize::default().encode().unwrap()), None);
        assert_eq!(pose_of(&[1, 2, 3]), None);
    }

    #[test]
    fn a_grid_becomes_the_map_and_a_grid_of_the_wrong_size_is_refused() {
        let cells: Vec<i8> = (0..400 * 300)
            .map(|i| if i % 5 == 0 { 1 } else { -1 })
            .collect();
        let g = GridMap {
            map_id: 7,
            width: 400,
            height: 300,
            resolution: 0.05,
            origin: [-1.0, 0.5, 0.0],
            cells: cells.into(),
        };
        let map = map_of(&g).unwrap();
        assert_eq!((map.width(), map.height()), (400, 300));
        assert_eq!(map.origin().x, -1.0);
        assert_eq!(map.get(5, 0), Some(1));
        assert_eq!(map.get(6, 0), Some(-1));
        let short = GridMap {
            cells: vec![0i8; 10].into(),
            ..g.clone()
        };
        assert!(map_of(&short).unwrap_err().contains("cells"));
        let huge = GridMap {
            width: 100_000,
            height: 100_000,
            cells: Vec::new().into(),
            ..g
        };
        assert!(map_of(&huge).is_err());
    }
}
