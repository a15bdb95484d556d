//! The laser's sensor models: the log-likelihood of a scan seen from a particle's pose.
//!
//! - **Likelihood field** (the default; Thrun et al., table 6.3): each beam's endpoint is
//!   looked up in the [`LikelihoodField`]; beams at or beyond the laser's maximum range (no
//!   return) or below its minimum are skipped, as Nav2 does; an endpoint off the map reads
//!   as `max_dist` away.
//! - **Beam model** (table 6.1): the range each beam should have read is found by casting
//!   a ray through the map to the first cell that is not free (Player's rule: unknown cells
//!   stop a ray too, and so does the map's edge), marching by the distance to the nearest
//!   such cell so that open space costs a few steps. The reading's likelihood mixes a
//!   Gaussian hit around the expected range (`sigma_hit`), an exponential short reading
//!   (`lambda_short`), the maximum-range reading and a uniform random one, with Nav2's
//!   weights.
//!
//! Beams are subsampled to at most `max_beams`, evenly across the scan. Each model returns
//! the sum of the beams' `ln p`: the scan's log-likelihood when beams are independent.

use crate::distance::DistanceField;
use crate::likelihood::LikelihoodField;
use crate::map::Map;
pub use crate::scan::{cast, sensor_in_grid, Scan};

/// The beam model's parameters (Nav2's names and defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeamParams {
    /// Weight of the hit part (0.5).
    pub z_hit: f64,
    /// Weight of the short-reading part (0.05).
    pub z_short: f64,
    /// Weight of the maximum-range part (0.05).
    pub z_max: f64,
    /// Weight of the random part (0.5).
    pub z_rand: f64,
    /// Standard deviation of the hit part, metres (0.2).
    pub sigma_hit: f64,
    /// Rate of the short-reading part, 1/m (0.1).
    pub lambda_short: f64,
}

impl Default for BeamParams {
    fn default() -> Self {
        BeamParams {
            z_hit: 0.5,
            z_short: 0.05,
            z_max: 0.05,
            z_rand: 0.5,
            sigma_hit: 0.2,
            lambda_short: 0.1,
        }
    }
}

/// The beams of a scan the models read: the subsample, in the sensor frame, in grid cells.
#[derive(Debug, Clone, Default)]
pub struct Beams {
    /// Endpoint offsets in cells (range / resolution times cos, sin of the bearing).
    pub end: Vec<(f64, f64)>,
    /// Unit directions (cos, sin of the bearing).
    pub dir: Vec<(f64, f64)>,
    /// Ranges, metres.
    pub range: Vec<f64>,
    /// Whether each beam is a valid return (within the minimum and maximum range).
    pub valid: Vec<bool>,
    /// How many are valid.
    pub n_valid: usize,
}

/// Picks at most `max_beams` beams of `scan`, evenly spaced (the first and last included).
pub fn select(scan: &Scan, max_beams: usize, resolution: f64) -> Beams {
    let n = scan.ranges.len().min(scan.angles.len());
    let m = max_beams.min(n);
    let mut b = Beams::default();
    for k in 0..m {
        let i = if m == 1 {
            0
        } else {
            (k * (n - 1) + (m - 1) / 2) / (m - 1)
        };
        let (r, a) = (scan.ranges[i], scan.angles[i]);
        let ok = r.is_finite() && r < scan.max_range && r >= scan.min_range && r > 0.0;
        let (s, c) = a.sin_cos();
        let rc = if r.is_finite() { r / resolution } else { 0.0 };
        b.end.push((rc * c, rc * s));
        b.dir.push((c, s));
        b.range.push(if r.is_finite() { r } else { scan.max_range });
        b.valid.push(ok);
        b.n_valid += usize::from(ok);
    }
    b
}

/// Sum of `ln p` over the valid beams for the likelihood field, from a sensor at grid pose
/// `g` (see [`sensor_in_grid`]), with `table` from [`LikelihoodField::log_table`].
#[inline]
pub fn field_log_likelihood(
    map: &Map,
    field: &LikelihoodField,
    table: &[f32],
    beams: &Beams,
    g: (f64, f64, f64),
) -> f64 {
    let (gx, gy, th) = g;
    let (s, c) = th.sin_cos();
    let (w, h) = (map.width() as i64, map.height() as i64);
    let off = table[field.off_map_slot()];
    let mut sum = 0.0f64;
    for (k, &(bx, by)) in beams.end.iter().enumerate() {
        if !beams.valid[k] {
            continue;
        }
        let ex = gx + c * bx - s * by;
        let ey = gy + s * bx + c * by;
        let (col, row) = (ex.floor() as i64, ey.floor() as i64);
        let v = if col >= 0 && row >= 0 && col < w && row < h {
            table[field.slot((row * w + col) as usize)]
        } else {
            off
        };
        sum += f64::from(v);
    }
    sum
}

/// Sum of `ln p` over the beams for the beam model, from a sensor at grid pose `g`.
pub fn beam_log_likelihood(
    map: &Map,
    blocked: &DistanceField,
    p: &BeamParams,
    beams: &Beams,
    max_range: f64,
    g: (f64, f64, f64),
) -> f64 {
    let (gx, gy, th) = g;
    let (s, c) = th.sin_cos();
    let denom = 2.0 * p.sigma_hit * p.sigma_hit;
    let mut sum = 0.0;
    for (k, &(ux, uy)) in beams.dir.iter().enumerate() {
        let z = beams.range[k];
        if z.is_nan() || z <= 0.0 {
            continue;
        }
        let (dx, dy) = (c * ux - s * uy, s * ux + c * uy);
        let expect = cast(map, blocked, gx, gy, dx, dy, max_range);
        let e = z - expect;
        let mut pz = if denom > 0.0 {
            p.z_hit * (-e * e / denom).exp()
        } else {
            0.0
        };
        if z < expect {
            pz += p.z_short * p.lambda_short * (-p.lambda_short * z).exp();
        }
        if z >= max_range {
            pz += p.z_max;
        } else {
            pz += p.z_rand / max_range;
        }
        sum += if pz > 0.0 { pz.ln() } else { -1e30 };
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::likelihood::FieldParams;
    use crate::map::{FREE, OCCUPIED};
    use crate::pose::Pose;

    /// A 10 m x 10 m room at 0.05 m, walls on its four sides.
    fn room() -> Map {
        let mut m = Map::new(200, 200, 0.05, Pose::new(-5.0, -5.0, 0.0), FREE).unwrap();
        for i in 0..200 {
            m.set(i, 0, OCCUPIED);
            m.set(i, 199, OCCUPIED);
            m.set(0, i, OCCUPIED);
            m.set(199, i, OCCUPIED);
        }
        m
    }

    fn scan_from(map: &Map, blocked: &DistanceField, pose: &Pose) -> Scan {
        let angles: Vec<f64> = (0..181).map(|i| (i as f64 - 90.0).to_radians()).collect();
        let ranges = angles
            .iter()
            .map(|a| {
                let (gx, gy, th) = sensor_in_grid(map, pose, &Pose::default());
                cast(map, blocked, gx, gy, (th + a).cos(), (th + a).sin(), 30.0)
            })
            .collect();
        Scan {
            ranges,
            angles,
            max_range: 30.0,
            min_range: 0.0,
            offset: Pose::default(),
        }
    }

    #[test]
    fn ray_casting_finds_the_walls() {
        let m = room();
        let blocked = DistanceField::to_not_free(&m);
        let (gx, gy, _) = sensor_in_grid(&m, &Pose::new(0.0, 0.0, 0.0), &Pose::default());
        // East wall: cell 199 starts at x = 4.95 m.
        let r = cast(&m, &blocked, gx, gy, 1.0, 0.0, 30.0);
        assert!((r - 4.95).abs() < 0.06, "{r}");
        let r = cast(&m, &blocked, gx, gy, -1.0, 0.0, 30.0);
        assert!((r - 4.95).abs() < 0.06, "{r}");
        let d = std::f64::consts::FRAC_1_SQRT_2;
        let r = cast(&m, &blocked, gx, gy, d, d, 30.0);
        assert!((r - 4.95 * 2f64.sqrt()).abs() < 0.1, "{r}");
        assert_eq!(cast(&m, &blocked, gx, gy, 1.0, 0.0, 2.0), 2.0);
    }

    #[test]
    fn both_models_prefer_the_true_pose() {
        let m = room();
        let blocked = DistanceField::to_not_free(&m);
        let field = LikelihoodField::new(&m, FieldParams::default());
        let truth = Pose::new(1.0, -2.0, 0.7);
        // A room is symmetric; break it with a short wall.
        let mut m2 = m.clone();
        for i in 120..160 {
            m2.set(i, 140, OCCUPIED);
        }
        let blocked2 = DistanceField::to_not_free(&m2);
        let field2 = LikelihoodField::new(&m2, FieldParams::default());
        let scan = scan_from(&m2, &blocked2, &truth);
        let beams = select(&scan, 60, m2.resolution());
        assert_eq!(beams.end.len(), 60);
        let table = field2.log_table(scan.max_range);
        let lf = |p: &Pose| {
            field_log_likelihood(
                &m2,
                &field2,
                &table,
                &beams,
                sensor_in_grid(&m2, p, &scan.offset),
            )
        };
        let bm = |p: &Pose| {
            beam_log_likelihood(
                &m2,
                &blocked2,
                &BeamParams::default(),
                &beams,
                scan.max_range,
                sensor_in_grid(&m2, p, &scan.offset),
            )
        };
        for wrong in [
            Pose::new(1.2, -2.0, 0.7),
            Pose::new(1.0, -1.8, 0.7),
            Pose::new(1.0, -2.0, 0.8),
            Pose::new(-1.0, 2.0, 0.7 + std::f64::consts::PI),
        ] {
            assert!(lf(&truth) > lf(&wrong) + 1.0, "field {wrong:?}");
            assert!(bm(&truth) > bm(&wrong) + 1.0, "beam {wrong:?}");
        }
        let _ = (field, blocked);
    }
}
