//! A small synthetic world for tests, benches and demonstrations: a floor of rooms with
//! doors and pillars (no symmetry a filter could be fooled by for long), a tour through it,
//! scans ray cast from the true poses, and the whole as a CARMEN log. Nothing here is
//! used by the filter itself.

use std::fmt::Write;

use crate::distance::DistanceField;
use crate::map::{Map, FREE, OCCUPIED};
use crate::pose::Pose;
use crate::rng::Rng;
use crate::scan::{cast, sensor_in_grid, Scan};

/// The floor: 16 m x 12 m at 0.05 m, origin (-8, -6): outer walls, two inner walls with
/// doors, a corridor stub and pillars placed unevenly.
pub fn floor() -> Map {
    let res = 0.05;
    let mut m = Map::new(320, 240, res, Pose::new(-8.0, -6.0, 0.0), FREE).expect("fixed size");
    let wall = |m: &mut Map, x0: f64, y0: f64, x1: f64, y1: f64| {
        let (c0, r0) = m.world_to_cell(x0.min(x1), y0.min(y1));
        let (c1, r1) = m.world_to_cell(x0.max(x1), y0.max(y1));
        for r in r0.max(0)..=r1.min(239) {
            for c in c0.max(0)..=c1.min(319) {
                m.set(c as usize, r as usize, OCCUPIED);
            }
        }
    };
    // Outer walls.
    wall(&mut m, -8.0, -6.0, 7.95, -5.95);
    wall(&mut m, -8.0, 5.95, 7.95, 6.0);
    wall(&mut m, -8.0, -6.0, -7.95, 6.0);
    wall(&mut m, 7.95, -6.0, 8.0, 6.0);
    // A wall at x = -2 with a door between y = 1 and 2.
    wall(&mut m, -2.0, -6.0, -1.9, 1.0);
    wall(&mut m, -2.0, 2.0, -1.9, 6.0);
    // A wall at y = 1 from x = 2 to 8 with a door between x = 4 and 5.
    wall(&mut m, 2.0, 1.0, 4.0, 1.1);
    wall(&mut m, 5.0, 1.0, 8.0, 1.1);
    // A corridor stub and pillars.
    wall(&mut m, -7.95, -2.0, -6.2, -1.9);
    for &(x, y, r) in &[
        (-5.0, 3.5, 0.3),
        (3.0, -3.0, 0.25),
        (6.0, 4.0, 0.4),
        (0.5, 4.5, 0.2),
    ] {
        wall_disc(&mut m, x, y, r);
    }
    m
}

fn wall_disc(m: &mut Map, x: f64, y: f64, r: f64) {
    let (c0, r0) = m.world_to_cell(x - r, y - r);
    let (c1, r1) = m.world_to_cell(x + r, y + r);
    for row in r0..=r1 {
        for col in c0..=c1 {
            let (cx, cy) = m.cell_center(col, row);
            if (cx - x).hypot(cy - y) <= r && m.get(col, row).is_some() {
                m.set(col as usize, row as usize, OCCUPIED);
            }
        }
    }
}

/// A tour of the floor through both doors and back: poses every `step` metres along
/// straight legs, the heading along the leg (turns on the spot at the corners, in steps of
/// at most 0.3 rad).
pub fn tour(step: f64) -> Vec<Pose> {
    let corners: [(f64, f64); 9] = [
        (-5.0, -4.0),
        (-5.0, 1.5),
        (0.0, 1.5),
        (0.0, -3.5),
        (4.5, -2.0),
        (4.5, 3.5),
        (1.0, 2.2),
        (-4.0, 1.5),
        (-6.0, -4.5),
    ];
    let mut out: Vec<Pose> = Vec::new();
    for w in corners.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        let heading = (y1 - y0).atan2(x1 - x0);
        if let Some(last) = out.last().copied() {
            let turn = crate::pose::angle_diff(heading, last.theta);
            let n = (turn.abs() / 0.3).ceil() as usize;
            for k in 1..=n {
                let th = last.theta + turn * k as f64 / n as f64;
                out.push(Pose::new(last.x, last.y, crate::pose::normalize(th)));
            }
        }
        let len = (x1 - x0).hypot(y1 - y0);
        let n = (len / step).ceil().max(1.0) as usize;
        let start = usize::from(!out.is_empty());
        for k in start..=n {
            let f = k as f64 / n as f64;
            out.push(Pose::new(x0 + f * (x1 - x0), y0 + f * (y1 - y0), heading));
        }
    }
    out
}

/// A scan of `beams` beams over 180 degrees (from -90), ray cast in `map` from `pose`, each
/// range with Gaussian noise of `sigma` metres; nothing beyond `max_range`.
pub fn scan(
    map: &Map,
    blocked: &DistanceField,
    pose: &Pose,
    beams: usize,
    max_range: f64,
    sigma: f64,
    rng: &mut Rng,
) -> Scan {
    let inc = std::f64::consts::PI / (beams.max(2) - 1) as f64;
    let (gx, gy, th) = sensor_in_grid(map, pose, &Pose::default());
    let ranges = (0..beams)
        .map(|i| {
            let a = th - std::f64::consts::FRAC_PI_2 + inc * i as f64;
            let r = cast(map, blocked, gx, gy, a.cos(), a.sin(), max_range);
            if r >= max_range {
                max_range
            } else {
                (r + rng.normal(sigma)).max(0.01)
            }
        })
        .collect();
    Scan::evenly(ranges, -std::f64::consts::FRAC_PI_2, inc, max_range)
}

/// A CARMEN log of the tour on the floor: one `FLASER` line per pose, 181 beams over 180
/// degrees, ranges with 1 cm noise, the reference pose in both pose fields.
pub fn carmen_log(step: f64, seed: u64) -> String {
    let map = floor();
    let blocked = DistanceField::to_not_free(&map);
    let mut rng = Rng::new(seed);
    let mut out = String::from("# synthetic log: player-nav's floor\n");
    for (k, p) in tour(step).iter().enumerate() {
        let s = scan(&map, &blocked, p, 181, 30.0, 0.01, &mut rng);
        let _ = write!(out, "FLASER {}", s.ranges.len());
        for r in &s.ranges {
            let _ = write!(out, " {r:.3}");
        }
        let t = k as f64 * 0.5;
        let _ = writeln!(
            out,
            " {:.6} {:.6} {:.6} {:.6} {:.6} {:.6} {t:.3} synth {t:.3}",
            p.x, p.y, p.theta, p.x, p.y, p.theta
        );
    }
    out
}
