//! The likelihood field of the laser's "likelihood field" sensor model (Thrun, Burgard and
//! Fox, Probabilistic Robotics, section 6.4): for a beam endpoint at distance `d` from the
//! nearest occupied cell, `p = z_hit * exp(-d^2 / (2 sigma_hit^2)) + z_rand / max_range`,
//! with `d` capped at `max_dist` (Nav2's `laser_likelihood_max_dist`, 2.0 m): further than
//! that, every endpoint is equally unlikely.
//!
//! The field is the map's exact distance transform ([`crate::distance`]) plus a table from
//! each capped squared distance (an integer number of cells squared) to `ln p`, so a beam
//! costs one array read and one table read. The table depends on the laser's maximum range
//! (through `z_rand / max_range`) and is rebuilt when that changes; the distances never are.

use std::sync::Arc;

use crate::distance::{DistanceField, NONE};
use crate::map::Map;

/// The parameters of the field (Nav2's names and defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldParams {
    /// Weight of the Gaussian "hit" part (Nav2 `z_hit`, 0.5).
    pub z_hit: f64,
    /// Weight of the uniform "random" part (Nav2 `z_rand`, 0.5).
    pub z_rand: f64,
    /// Standard deviation of the hit part, metres (Nav2 `sigma_hit`, 0.2).
    pub sigma_hit: f64,
    /// Distances beyond this count as this, metres (Nav2 `laser_likelihood_max_dist`, 2.0).
    pub max_dist: f64,
}

impl Default for FieldParams {
    fn default() -> Self {
        FieldParams {
            z_hit: 0.5,
            z_rand: 0.5,
            sigma_hit: 0.2,
            max_dist: 2.0,
        }
    }
}

/// The largest `max_dist / resolution` the table covers (beyond, the cap is lowered).
const MAX_CAP_CELLS: f64 = 4096.0;

/// The distance transform to occupied cells with the capped distances the model reads.
#[derive(Debug, Clone)]
pub struct LikelihoodField {
    dist: Arc<DistanceField>,
    params: FieldParams,
    /// Squared distances above this read as `max_dist`.
    cap_sq: u32,
}

impl LikelihoodField {
    /// Builds the field of `map` (its distance transform: the costly part).
    pub fn new(map: &Map, params: FieldParams) -> LikelihoodField {
        LikelihoodField::from_distance(Arc::new(DistanceField::to_occupied(map)), params)
    }

    /// The field over an existing distance transform to occupied cells (shared: filters
    /// with other parameters on the same map need no transform of their own).
    pub fn from_distance(dist: Arc<DistanceField>, params: FieldParams) -> LikelihoodField {
        let cells = (params.max_dist.max(0.0) / dist.resolution()).min(MAX_CAP_CELLS);
        let cap_sq = (cells * cells).floor() as u32;
        LikelihoodField {
            dist,
            params,
            cap_sq,
        }
    }

    /// The distance transform underneath.
    pub fn distance(&self) -> &DistanceField {
        &self.dist
    }

    /// The parameters.
    pub fn params(&self) -> &FieldParams {
        &self.params
    }

    /// Cell `i`'s index into a [`LikelihoodField::log_table`]: its squared distance in
    /// cells, capped.
    #[inline]
    pub fn slot(&self, i: usize) -> usize {
        let s = self.dist.squared()[i];
        (if s > self.cap_sq { self.cap_sq + 1 } else { s }) as usize
    }

    /// The slot of an endpoint off the map (as far as the cap).
    pub fn off_map_slot(&self) -> usize {
        self.cap_sq as usize + 1
    }

    /// `ln p` for every slot, for a laser whose maximum range is `max_range` metres.
    pub fn log_table(&self, max_range: f64) -> Vec<f32> {
        let p = &self.params;
        let rand = if max_range > 0.0 {
            p.z_rand / max_range
        } else {
            0.0
        };
        let denom = 2.0 * p.sigma_hit * p.sigma_hit;
        let res = self.dist.resolution();
        let max_d = p.max_dist.max(0.0);
        (0..=self.cap_sq as usize + 1)
            .map(|s| {
                let d = if s > self.cap_sq as usize {
                    max_d
                } else {
                    ((s as f64).sqrt() * res).min(max_d)
                };
                let hit = if denom > 0.0 {
                    p.z_hit * (-d * d / denom).exp()
                } else {
                    0.0
                };
                let v = hit + rand;
                (if v > 0.0 { v.ln() } else { -1e30 }) as f32
            })
            .collect()
    }

    /// The distance in metres that the model sees for cell `i` (capped at `max_dist`).
    pub fn capped_metres(&self, i: usize) -> f64 {
        let s = self.dist.squared()[i];
        if s == NONE || s > self.cap_sq {
            self.params.max_dist
        } else {
            (f64::from(s).sqrt() * self.dist.resolution()).min(self.params.max_dist)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{FREE, OCCUPIED};
    use crate::pose::Pose;

    #[test]
    fn table_follows_the_gaussian_and_caps() {
        let mut m = Map::new(100, 1, 0.05, Pose::default(), FREE).unwrap();
        m.set(0, 0, OCCUPIED);
        let f = LikelihoodField::new(&m, FieldParams::default());
        let t = f.log_table(20.0);
        let at = |col: usize| f64::from(t[f.slot(col)]);
        // On the obstacle: 0.5 + 0.5/20.
        assert!((at(0) - (0.525f64).ln()).abs() < 1e-6);
        // 10 cells = 0.5 m: 0.5 exp(-0.25/0.08) + 0.025.
        let want = (0.5 * (-0.25f64 / 0.08).exp() + 0.025).ln();
        assert!((at(10) - want).abs() < 1e-6);
        // Beyond 2 m (40 cells) every cell reads the same as 2 m.
        let cap = (0.5 * (-4.0f64 / 0.08).exp() + 0.025).ln();
        assert!((at(40) - cap).abs() < 1e-6 && (at(99) - cap).abs() < 1e-6);
        assert_eq!(f.slot(99), f.off_map_slot());
        assert!((f.capped_metres(99) - 2.0).abs() < 1e-12);
        assert!((f.capped_metres(7) - 0.35).abs() < 1e-12);
    }
}
