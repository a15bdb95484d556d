//! The map of a CARMEN log, built from every scan at its reference pose: each beam is
//! traced through the grid (Bresenham's line from the sensor's cell to the endpoint's),
//! the cells it crosses counted as seen free ("misses") and its endpoint's cell as seen
//! occupied ("hits"). A beam at the laser's maximum range (no return) marks nothing: it
//! says nothing certain about where it ended (glass, open doors, the sensor's limit).
//!
//! The counts become the trinary cells: occupied when a cell was hit at least once and in
//! at least `occupied_ratio` of the beams that reached it (hits / (hits + misses)), free
//! when seen otherwise, unknown when never seen. The ratio (default 0.25) keeps a wall
//! that grazing beams sometimes cross through, and drops a person who walked by.
//!
//! The grid covers every pose and endpoint with a margin, at `resolution` (0.05 m).

use super::Log;
use crate::map::{check_size, Map, MapError, FREE, OCCUPIED, UNKNOWN};
use crate::pose::Pose;

/// How a map is built from a log.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BuildParams {
    /// Metres per cell (0.05).
    pub resolution: f64,
    /// Free space around the seen area, metres (1.0).
    pub margin: f64,
    /// Occupied when hits / (hits + misses) is at least this (0.25).
    pub occupied_ratio: f64,
}

impl Default for BuildParams {
    fn default() -> Self {
        BuildParams {
            resolution: 0.05,
            margin: 1.0,
            occupied_ratio: 0.25,
        }
    }
}

/// Whether a reading is a return (not the laser's "no return" maximum).
pub fn is_return(r: f64, max_range: f64) -> bool {
    r > 0.0 && r < max_range - 0.01
}

/// Every beam endpoint of record `i` in the world, returns only.
fn endpoints(log: &Log, i: usize) -> impl Iterator<Item = (f64, f64)> + '_ {
    let rec = &log.scans[i];
    let (start, inc) = super::beam_angles(rec.ranges.len());
    let p = rec.pose;
    rec.ranges.iter().enumerate().filter_map(move |(k, &r)| {
        if !is_return(r, log.max_range) {
            return None;
        }
        let a = p.theta + start + inc * k as f64;
        Some((p.x + r * a.cos(), p.y + r * a.sin()))
    })
}

/// Builds the map of `log`.
pub fn build(log: &Log, params: &BuildParams) -> Result<Map, MapError> {
    let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for i in 0..log.scans.len() {
        let p = log.scans[i].pose;
        for (x, y) in std::iter::once((p.x, p.y)).chain(endpoints(log, i)) {
            x0 = x0.min(x);
            y0 = y0.min(y);
            x1 = x1.max(x);
            y1 = y1.max(y);
        }
    }
    let res = params.resolution;
    if !(res.is_finite() && res > 0.0) {
        return Err(MapError::BadValue {
            path: log.name.clone().into(),
            key: "resolution".into(),
            reason: format!("{res} is not positive"),
        });
    }
    let origin = Pose::new(
        ((x0 - params.margin) / res).floor() * res,
        ((y0 - params.margin) / res).floor() * res,
        0.0,
    );
    let w = ((x1 + params.margin - origin.x) / res).ceil().max(1.0) as u64;
    let h = ((y1 + params.margin - origin.y) / res).ceil().max(1.0) as u64;
    check_size(&format!("the map of {}", log.name), w, h)?;
    let (w, h) = (w as usize, h as usize);
    let mut map = Map::new(w, h, res, origin, UNKNOWN)?;
    let mut hits = vec![0u32; w * h];
    let mut misses = vec![0u32; w * h];
    for i in 0..log.scans.len() {
        let p = log.scans[i].pose;
        let (sc, sr) = map.world_to_cell(p.x, p.y);
        for (x, y) in endpoints(log, i) {
            let (ec, er) = map.world_to_cell(x, y);
            trace(sc, sr, ec, er, |c, r, last| {
                if c >= 0 && r >= 0 && (c as usize) < w && (r as usize) < h {
                    let k = r as usize * w + c as usize;
                    if last {
                        hits[k] = hits[k].saturating_add(1);
                    } else {
                        misses[k] = misses[k].saturating_add(1);
                    }
                }
            });
        }
    }
    for r in 0..h {
        for c in 0..w {
            let k = r * w + c;
            let (hi, mi) = (f64::from(hits[k]), f64::from(misses[k]));
            let v = if hits[k] > 0 && hi >= params.occupied_ratio * (hi + mi) {
                OCCUPIED
            } else if hits[k] > 0 || misses[k] > 0 {
                FREE
            } else {
                UNKNOWN
            };
            map.set(c, r, v);
        }
    }
    Ok(map)
}

/// Bresenham's line from (c0, r0) to (c1, r1), both included; `f(col, row, is_last)`.
fn trace(c0: i64, r0: i64, c1: i64, r1: i64, mut f: impl FnMut(i64, i64, bool)) {
    let (dx, dy) = ((c1 - c0).abs(), -(r1 - r0).abs());
    let (sx, sy) = (if c0 < c1 { 1 } else { -1 }, if r0 < r1 { 1 } else { -1 });
    let (mut c, mut r, mut err) = (c0, r0, dx + dy);
    loop {
        let last = c == c1 && r == r1;
        f(c, r, last);
        if last {
            break;
        }
        let e2 = 2 * err;
        if e2 >= dy {
            err += dy;
            c += sx;
        }
        if e2 <= dx {
            err += dx;
            r += sy;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::carmen::LaserRecord;

    #[test]
    fn bresenham_visits_a_connected_line() {
        let mut cells = Vec::new();
        trace(0, 0, 5, -2, |c, r, last| cells.push((c, r, last)));
        assert_eq!(cells.first(), Some(&(0, 0, false)));
        assert_eq!(cells.last(), Some(&(5, -2, true)));
        assert_eq!(cells.len(), 6);
        assert!(cells
            .windows(2)
            .all(|w| (w[1].0 - w[0].0).abs() <= 1 && (w[1].1 - w[0].1).abs() <= 1));
    }

    #[test]
    fn a_wall_seen_from_a_pose_is_occupied_behind_free_space() {
        // 181 beams, all 2 m except one at the maximum range.
        let mut ranges = vec![2.0; 181];
        ranges[0] = 30.0;
        let log = Log {
            name: "t".into(),
            scans: vec![LaserRecord {
                ranges,
                pose: Pose::new(0.0, 0.0, 0.0),
                odom: Pose::default(),
                timestamp: 0.0,
                line: 1,
            }],
            max_range: 30.0,
        };
        let m = build(&log, &BuildParams::default()).unwrap();
        let at = |x: f64, y: f64| {
            let (c, r) = m.world_to_cell(x, y);
            m.get(c, r).unwrap()
        };
        assert_eq!(at(2.0, 0.0), OCCUPIED);
        assert_eq!(at(0.0, 1.99), OCCUPIED);
        assert_eq!(at(1.0, 0.0), FREE);
        assert_eq!(at(0.5, 0.5), FREE);
        assert_eq!(at(-0.5, 0.0), UNKNOWN);
        // The map spans the pose and the endpoints plus a metre.
        assert!((m.origin().x + 1.0).abs() < 1e-9 && (m.origin().y + 3.0).abs() < 0.051);
        assert!(m.get(((3.0 + 1.0) / 0.05) as i64 - 1, 0).is_some());
    }
}
