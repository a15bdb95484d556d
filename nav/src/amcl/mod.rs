//! Adaptive Monte Carlo localization: a particle filter over the robot's pose on a map
//! (Thrun, Burgard and Fox, Probabilistic Robotics, chapter 8), as Player's `amcl` and
//! Nav2's `nav2_amcl` do it, with the parameters they document.
//!
//! One filter update ([`Filter::update`]), when the robot has moved `update_min` since the
//! last (or on the first scan after a start):
//!
//! 1. **Motion**: every particle moves by the odometry since the last update, with noise
//!    ([`motion`]: Nav2's differential model, alpha1-4, per piece of motion). If the
//!    previous update asked for resampling, the particles are drawn anew from the weighted
//!    set as they are moved, with KLD-sampling (Fox 2003): drawing stops once the sample
//!    count is enough for the bins the *moved* samples occupy (at least `min`, at most
//!    `max`), from a shuffled systematic comb (low-variance resampling). With recovery
//!    injecting, a share of the draws are poses uniform over free space instead.
//! 2. **Sensor**: each weight is multiplied by the scan's likelihood ([`sensor`]: the
//!    likelihood field by default, or the beam model), in the log domain, tempered if the
//!    effective sample size would otherwise fall below `min_ess` of the count.
//! 3. **Expansion resetting** (Ueda et al. 2004): if the scan fits badly (the posterior-
//!    weighted per-beam likelihood below `expand_ratio` of its long-term average), the
//!    motion step is redone with more noise, and the best try kept.
//! 4. **Recovery** (augmented MCL, Thrun et al. table 8.3): short- and long-term averages
//!    of that fit (`alpha_fast`, `alpha_slow`); once the short one falls below
//!    `recovery_ratio` of the long one, the next resampling injects random poses.
//!    Then the scan-matched search ([`search`]): every few updates the map is searched for
//!    the poses the scan fits best; one that fits clearly better than every particle
//!    replaces the lightest particles (a wrong pose held from the start, or a carried
//!    robot, is found in seconds rather than minutes or never).
//! 5. **Hypotheses**: the weighted particles are clustered ([`cluster`]), heaviest first.
//! 6. **Resampling** is asked for the next update only when the effective sample size
//!    `1 / sum w^2` falls below `resample_ess` times the count (selective resampling,
//!    Grisetti et al. 2007), or when recovery wants to inject.
//!
//! [`Params`] has every parameter, its default and why.
//!
//! The filter is deterministic: all randomness comes from one seeded [`Rng`], there is no
//! clock, no thread and no hash-order iteration, so the same inputs and seed give the same
//! particles, bit for bit.

pub mod cluster;
pub mod motion;
mod params;
pub mod search;
pub mod sensor;
#[cfg(test)]
mod tests;

use std::sync::{Arc, OnceLock};

use crate::distance::DistanceField;
use crate::likelihood::LikelihoodField;
use crate::map::Map;
use crate::pose::{angle_diff, normalize, Pose};
use crate::rng::Rng;
use cluster::{hypotheses, kld_bound, BinCounter, Hypothesis};
use motion::Piece;
pub use params::{Model, Params};
use sensor::Scan;

/// A map with what the filter precomputes on it, shared by every filter on that map: the
/// distance transform to occupied cells (the likelihood field's), the one to cells that
/// are not free (the beam model's ray casting; made on first use) and the free cells
/// (where global localization and recovery draw poses).
#[derive(Debug)]
pub struct MapModel {
    map: Map,
    occupied: Arc<DistanceField>,
    blocked: OnceLock<DistanceField>,
    free: Vec<u32>,
}

impl MapModel {
    /// Precomputes on `map` (its distance transform: tens of milliseconds for a large map).
    pub fn new(map: Map) -> MapModel {
        let occupied = Arc::new(DistanceField::to_occupied(&map));
        let free = map.free_cells();
        MapModel {
            map,
            occupied,
            blocked: OnceLock::new(),
            free,
        }
    }

    /// The map.
    pub fn map(&self) -> &Map {
        &self.map
    }

    /// Distances to the nearest occupied cell.
    pub fn occupied(&self) -> &Arc<DistanceField> {
        &self.occupied
    }

    /// Distances to the nearest cell that is not free.
    pub fn blocked(&self) -> &DistanceField {
        self.blocked
            .get_or_init(|| DistanceField::to_not_free(&self.map))
    }

    /// A pose drawn uniformly over free space (over the whole map if nothing is free).
    pub fn random_pose(&self, rng: &mut Rng) -> Pose {
        let w = self.map.width();
        let cell = if self.free.is_empty() {
            rng.below((w * self.map.height()) as u64) as usize
        } else {
            self.free[rng.below(self.free.len() as u64) as usize] as usize
        };
        let (col, row) = (cell % w, cell / w);
        let gx = col as f64 + rng.uniform();
        let gy = row as f64 + rng.uniform();
        let (x, y) = self.map.grid_to_world(gx, gy);
        Pose::new(x, y, rng.range(-std::f64::consts::PI, std::f64::consts::PI))
    }
}

/// How a filter starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// Around a pose: a Gaussian with this mean and covariance (x, y, heading; m^2, rad^2).
    Pose(Pose, [[f64; 3]; 3]),
    /// Anywhere: uniform over free space (global localization).
    Global,
}

/// A diagonal covariance from standard deviations (m, m, rad).
pub fn diagonal(sx: f64, sy: f64, sa: f64) -> [[f64; 3]; 3] {
    [
        [sx * sx, 0.0, 0.0],
        [0.0, sy * sy, 0.0],
        [0.0, 0.0, sa * sa],
    ]
}

/// What one update did (for logs, tests and benches).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UpdateStats {
    /// Particles after the motion step.
    pub particles: usize,
    /// Whether this update drew the particles anew.
    pub resampled: bool,
    /// Poses injected by recovery.
    pub injected: usize,
    /// Effective sample size after weighting.
    pub ess: f64,
    /// The measurement's average per-beam likelihood (the recovery statistic).
    pub w_avg: f64,
    /// The power the likelihood was raised to (1 untempered).
    pub beta: f64,
    /// How many times the motion step was redone with more noise (expansion resetting).
    pub expansions: u32,
    /// When the map was searched: how much better (nats per beam) the best pose found
    /// fits than the best particle (0 when not searched).
    pub search: f64,
}

/// The particle filter.
#[derive(Debug)]
pub struct Filter {
    model: Arc<MapModel>,
    params: Params,
    field: LikelihoodField,
    /// The smoothed field the search scores its candidates on, and its table.
    coarse: LikelihoodField,
    coarse_table: Vec<f32>,
    rng: Rng,
    /// The last weighing's log prior weights and log-likelihoods, per particle.
    prior: Vec<f64>,
    loglik: Vec<f64>,
    /// Updates since the last search.
    since_search: u32,
    poses: Vec<Pose>,
    weights: Vec<f64>,
    /// Which particles recovery has just drawn at random (left out of the recovery
    /// statistic, which would otherwise read their poor fit as the filter's).
    fresh: Vec<bool>,
    w_slow: f64,
    w_fast: f64,
    /// Odometry at the last update (None before the first scan).
    last_odom: Option<Pose>,
    /// Update on the next scan whatever the motion (after an initialisation).
    force: bool,
    resample_pending: bool,
    hyps: Vec<Hypothesis>,
    table: (f64, Vec<f32>),
    stats: UpdateStats,
    updates: u64,
}

impl Filter {
    /// A filter on `model`'s map, started as `init`, all randomness from `seed`.
    pub fn new(model: Arc<MapModel>, params: Params, seed: u64, init: Init) -> Filter {
        let field = LikelihoodField::from_distance(model.occupied().clone(), params.field);
        let coarse = LikelihoodField::from_distance(
            model.occupied().clone(),
            crate::likelihood::FieldParams {
                sigma_hit: params.search.coarse_sigma,
                ..params.field
            },
        );
        let mut f = Filter {
            model,
            params,
            field,
            coarse,
            coarse_table: Vec::new(),
            rng: Rng::new(seed),
            prior: Vec::new(),
            loglik: Vec::new(),
            since_search: 0,
            poses: Vec::new(),
            weights: Vec::new(),
            fresh: Vec::new(),
            w_slow: 0.0,
            w_fast: 0.0,
            last_odom: None,
            force: true,
            resample_pending: false,
            hyps: Vec::new(),
            table: (f64::NAN, Vec::new()),
            stats: UpdateStats::default(),
            updates: 0,
        };
        f.params.max_particles = f.params.max_particles.max(1);
        f.params.min_particles = f.params.min_particles.clamp(1, f.params.max_particles);
        match init {
            Init::Pose(mean, cov) => f.set_pose(mean, cov),
            Init::Global => f.global(),
        }
        f
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The map and its precomputations.
    pub fn model(&self) -> &Arc<MapModel> {
        &self.model
    }

    /// Restarts around `mean` with covariance `cov` (x, y, heading): `max_particles` poses
    /// drawn from that Gaussian, taken as the robot's pose at the next scan (which updates
    /// the filter whatever the motion, and moves no particle).
    pub fn set_pose(&mut self, mean: Pose, cov: [[f64; 3]; 3]) {
        let l = cholesky(&cov);
        let n = self.params.max_particles;
        self.poses.clear();
        for _ in 0..n {
            let z = [
                self.rng.gaussian(),
                self.rng.gaussian(),
                self.rng.gaussian(),
            ];
            let d = [
                l[0][0] * z[0],
                l[1][0] * z[0] + l[1][1] * z[1],
                l[2][0] * z[0] + l[2][1] * z[1] + l[2][2] * z[2],
            ];
            self.poses.push(Pose::new(
                mean.x + d[0],
                mean.y + d[1],
                crate::pose::normalize(mean.theta + d[2]),
            ));
        }
        self.restart();
        // A pose given is believed at first: the search waits its turn.
        self.since_search = 0;
    }

    /// Restarts with `max_particles` poses uniform over free space (global localization).
    pub fn global(&mut self) {
        let n = self.params.max_particles;
        self.poses.clear();
        for _ in 0..n {
            let p = self.model.random_pose(&mut self.rng);
            self.poses.push(p);
        }
        self.restart();
    }

    fn restart(&mut self) {
        // The next scan starts the odometry afresh: the new particles are where the robot
        // is now, whatever the odometry did since the last update.
        self.last_odom = None;
        let n = self.poses.len();
        self.weights = vec![1.0 / n as f64; n];
        self.fresh = vec![false; n];
        self.w_slow = 0.0;
        self.w_fast = 0.0;
        // Global localization searches on its first update.
        self.since_search = u32::MAX;
        self.force = true;
        self.resample_pending = false;
        self.hyps = hypotheses(&self.poses, &self.weights, &self.params.cluster_bins);
    }

    /// The particles' poses.
    pub fn poses(&self) -> &[Pose] {
        &self.poses
    }

    /// The particles' weights (normalised).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The hypotheses of the last update (or initialisation), heaviest first, at most 10.
    pub fn hypotheses(&self) -> &[Hypothesis] {
        &self.hyps
    }

    /// The heaviest hypothesis.
    pub fn best(&self) -> Option<&Hypothesis> {
        self.hyps.first()
    }

    /// The odometry pose of the last update.
    pub fn last_odometry(&self) -> Option<Pose> {
        self.last_odom
    }

    /// The best estimate of the robot's pose on the map at odometry pose `odom`: the best
    /// hypothesis carried forward by the odometry since the last update.
    pub fn pose_at(&self, odom: &Pose) -> Option<Pose> {
        let best = self.best()?;
        Some(match self.last_odom {
            Some(last) => best.mean.compose(&last.relative(odom)),
            None => best.mean,
        })
    }

    /// What the last update did.
    pub fn stats(&self) -> UpdateStats {
        self.stats
    }

    /// The recovery statistic's long- and short-term averages (`w_slow`, `w_fast`).
    pub fn fit_averages(&self) -> (f64, f64) {
        (self.w_slow, self.w_fast)
    }

    /// How many updates the filter has made.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// Feeds one scan taken at odometry pose `odom`. Returns whether the filter updated
    /// (the robot moved `update_min` since the last update, or this is the first scan
    /// after an initialisation).
    pub fn update(&mut self, odom: Pose, scan: &Scan) -> bool {
        let prev = self.last_odom.unwrap_or(odom);
        let moved = prev.distance(&odom) >= self.params.update_min_d
            || angle_diff(odom.theta, prev.theta).abs() >= self.params.update_min_a;
        if !(moved || self.force) || self.poses.is_empty() {
            return false;
        }
        let Some(scorer) = self.scorer(scan) else {
            // No usable beam: the motion alone.
            let pieces = motion::pieces(&prev, &odom, &self.params.motion);
            self.stats = UpdateStats {
                injected: self.predict(&pieces),
                resampled: self.resample_pending,
                particles: self.poses.len(),
                beta: 1.0,
                ..UpdateStats::default()
            };
            self.finish(odom);
            return true;
        };
        // Expansion resetting: when the scan fits the moved particles badly, the odometry
        // erred more than modelled; the motion step is redone with more noise.
        let steps = if self.params.recovery {
            self.params.expand_steps
        } else {
            0
        };
        let saved =
            (steps > 0).then(|| (self.poses.clone(), self.weights.clone(), self.fresh.clone()));
        let mut best: Option<Attempt> = None;
        for step in 0..=steps {
            let mut noise = self.params.motion;
            let scale = self.params.expand_factor.powi(step as i32);
            noise.alpha.iter_mut().for_each(|a| *a *= scale);
            let pieces = motion::pieces(&prev, &odom, &noise);
            if step > 0 {
                if let Some((p, w, f)) = &saved {
                    self.poses.clone_from(p);
                    self.weights.clone_from(w);
                    self.fresh.clone_from(f);
                }
            }
            let mut stats = UpdateStats {
                resampled: self.resample_pending,
                expansions: step,
                ..UpdateStats::default()
            };
            stats.injected = self.predict(&pieces);
            stats.particles = self.poses.len();
            (stats.w_avg, stats.beta) = self.weigh(scan, &scorer);
            let good = self.w_slow <= 0.0 || stats.w_avg >= self.params.expand_ratio * self.w_slow;
            let better = best.as_ref().is_none_or(|b| stats.w_avg > b.stats.w_avg);
            if good || step == steps {
                if !better {
                    if let Some(b) = best.take() {
                        (self.poses, self.weights, self.fresh) = (b.poses, b.weights, b.fresh);
                        stats = b.stats;
                    }
                }
                self.stats = stats;
                break;
            }
            if better {
                best = Some(Attempt {
                    poses: self.poses.clone(),
                    weights: self.weights.clone(),
                    fresh: self.fresh.clone(),
                    stats,
                });
            }
        }
        self.learn_fit(self.stats.w_avg);
        self.rescue(scan, &scorer);
        self.stats.ess = 1.0 / self.weights.iter().map(|w| w * w).sum::<f64>();
        self.finish(odom);
        true
    }

    /// The motion step: moves every particle by `pieces` (drawing them anew with
    /// KLD-sampling when resampling is due); returns how many poses recovery injected.
    fn predict(&mut self, pieces: &[Piece]) -> usize {
        if self.resample_pending {
            return self.resample_moving(pieces);
        }
        for p in &mut self.poses {
            for piece in pieces {
                motion::sample(p, piece, &mut self.rng);
            }
        }
        self.fresh.iter_mut().for_each(|f| *f = false);
        0
    }

    /// After the weights: hypotheses, whether to resample next time, the odometry.
    fn finish(&mut self, odom: Pose) {
        let ess = 1.0 / self.weights.iter().map(|w| w * w).sum::<f64>();
        self.hyps = hypotheses(&self.poses, &self.weights, &self.params.cluster_bins);
        self.resample_pending =
            ess < self.params.resample_ess * self.poses.len() as f64 || self.injection() > 0.0;
        self.last_odom = Some(odom);
        self.force = false;
        self.updates += 1;
    }

    /// Updates the recovery averages with one measurement's fit.
    fn learn_fit(&mut self, fit: f64) {
        if fit <= 0.0 {
            // Nothing measured (every particle drawn at random, or no beam).
        } else if self.w_slow == 0.0 {
            self.w_slow = fit;
            self.w_fast = fit;
        } else {
            self.w_slow += self.params.alpha_slow * (fit - self.w_slow);
            self.w_fast += self.params.alpha_fast * (fit - self.w_fast);
        }
    }

    /// The share of draws recovery replaces by random poses at the next resampling.
    fn injection(&self) -> f64 {
        if !self.params.recovery || self.w_slow <= 0.0 || self.params.recovery_ratio <= 0.0 {
            return 0.0;
        }
        (1.0 - self.w_fast / (self.params.recovery_ratio * self.w_slow)).max(0.0)
    }

    /// KLD-sampling from the weighted set, moving each draw by `pieces`; returns how many
    /// poses were injected.
    fn resample_moving(&mut self, pieces: &[Piece]) -> usize {
        let nmax = self.params.max_particles;
        let inject = self.injection();
        // A systematic comb of nmax teeth over the cumulative weights, in random order.
        let mut comb = Vec::with_capacity(nmax);
        let total: f64 = self.weights.iter().sum();
        let step = total / nmax as f64;
        let mut u = self.rng.uniform() * step;
        let mut acc = self.weights[0];
        let mut i = 0;
        for _ in 0..nmax {
            while u > acc && i + 1 < self.weights.len() {
                i += 1;
                acc += self.weights[i];
            }
            comb.push(i);
            u += step;
        }
        for k in (1..comb.len()).rev() {
            let j = self.rng.below(k as u64 + 1) as usize;
            comb.swap(k, j);
        }
        let mut counter = BinCounter::new(self.params.kld_bins);
        let mut out = Vec::with_capacity(nmax);
        self.fresh.clear();
        let mut injected = 0;
        for &idx in &comb {
            let random = inject > 0.0 && self.rng.uniform() < inject;
            self.fresh.push(random);
            let p = if random {
                injected += 1;
                self.model.random_pose(&mut self.rng)
            } else {
                let mut p = self.poses[idx];
                for piece in pieces {
                    motion::sample(&mut p, piece, &mut self.rng);
                }
                p
            };
            let k = counter.add(&p);
            out.push(p);
            let n = out.len();
            if n >= self.params.min_particles
                && n as f64 >= kld_bound(k, self.params.kld_err, self.params.kld_z)
            {
                break;
            }
        }
        let n = out.len();
        self.poses = out;
        self.weights = vec![1.0 / n as f64; n];
        injected
    }

    /// The beams of `scan` the model reads (None when none is usable), and the likelihood
    /// table for its maximum range made ready.
    fn scorer(&mut self, scan: &Scan) -> Option<Scorer> {
        let beams = sensor::select(scan, self.params.max_beams, self.model.map().resolution());
        let used = match self.params.model {
            Model::LikelihoodField => beams.n_valid,
            Model::Beam => beams.range.iter().filter(|&&r| r > 0.0).count(),
        };
        if used == 0 {
            return None;
        }
        if self.params.model == Model::LikelihoodField && self.table.0 != scan.max_range {
            self.table = (scan.max_range, self.field.log_table(scan.max_range));
            self.coarse_table = self.coarse.log_table(scan.max_range);
        }
        Some(Scorer { beams, used })
    }

    /// Multiplies the weights by the scan's likelihood (tempered if need be) and normalises
    /// them; returns the fit (the posterior-weighted mean per-beam likelihood of the
    /// particles not just drawn at random) and the tempering power.
    fn weigh(&mut self, scan: &Scan, scorer: &Scorer) -> (f64, f64) {
        let map = self.model.map();
        let beams = &scorer.beams;
        let mut loglik = Vec::with_capacity(self.poses.len());
        for p in &self.poses {
            let g = sensor::sensor_in_grid(map, p, &scan.offset);
            loglik.push(match self.params.model {
                Model::LikelihoodField => {
                    sensor::field_log_likelihood(map, &self.field, &self.table.1, beams, g)
                }
                Model::Beam => sensor::beam_log_likelihood(
                    map,
                    self.model.blocked(),
                    &self.params.beam,
                    beams,
                    scan.max_range,
                    g,
                ),
            });
        }
        let prior: Vec<f64> = self.weights.iter().map(|w| w.ln()).collect();
        let beta = temper(&prior, &loglik, self.params.min_ess, &mut self.weights);
        let (mut sw, mut swl) = (0.0, 0.0);
        for ((w, l), &fresh) in self.weights.iter().zip(&loglik).zip(&self.fresh) {
            if !fresh {
                sw += w;
                swl += w * (l / scorer.used as f64).exp();
            }
        }
        self.prior = prior;
        self.loglik = loglik;
        (if sw > 0.0 { swl / sw } else { 0.0 }, beta)
    }

    /// Scan-matched recovery ([`search`]): every `search.every` updates, or every update
    /// while the fit is below its long-term average, the map is searched for the poses
    /// the scan fits best; one that fits clearly better than every particle (by
    /// `search.margin` nats per beam) replaces the lightest `search.share` of the
    /// particles with a small cloud around it, weighed with the same scan, and the
    /// recovery averages start afresh (as Nav2 does after injecting).
    fn rescue(&mut self, scan: &Scan, scorer: &Scorer) {
        let sp = self.params.search;
        if !self.params.recovery
            || sp.candidates == 0
            || self.params.model != Model::LikelihoodField
            || self.loglik.len() != self.poses.len()
            || self.poses.is_empty()
        {
            return;
        }
        self.since_search = self.since_search.saturating_add(1);
        let dropping = self.w_fast < self.w_slow;
        if !(dropping || self.since_search >= sp.every.max(1)) {
            return;
        }
        self.since_search = 0;
        let used = scorer.used.max(1) as f64;
        let here = self
            .loglik
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
            / used;
        let coarse_beams = search::subsample(&scorer.beams, sp.coarse_beams);
        let nc = coarse_beams.n_valid.max(1) as f64;
        let (model, field, table, coarse, ctable) = (
            &self.model,
            &self.field,
            &self.table.1,
            &self.coarse,
            &self.coarse_table,
        );
        let map = model.map();
        let offset = scan.offset;
        let fine = |q: &Pose| {
            sensor::field_log_likelihood(
                map,
                field,
                table,
                &scorer.beams,
                sensor::sensor_in_grid(map, q, &offset),
            ) / used
        };
        let rough = |q: &Pose| {
            sensor::field_log_likelihood(
                map,
                coarse,
                ctable,
                &coarse_beams,
                sensor::sensor_in_grid(map, q, &offset),
            ) / nc
        };
        let found = search::search(&mut self.rng, &sp, |r| model.random_pose(r), rough, fine);
        let Some(&(pose, score)) = found.first() else {
            return;
        };
        self.stats.search = score - here;
        if score < here + sp.margin {
            return;
        }
        // The lightest particles make way (ties in index order: deterministic).
        let n = self.poses.len();
        let k = ((sp.share * n as f64).ceil() as usize).clamp(1, n);
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| self.weights[a].total_cmp(&self.weights[b]));
        let mean_prior = -(n as f64).ln();
        for &i in &order[..k] {
            let q = Pose::new(
                pose.x + self.rng.normal(sp.step_d * 0.25),
                pose.y + self.rng.normal(sp.step_d * 0.25),
                normalize(pose.theta + self.rng.normal(sp.step_a * 0.25)),
            );
            self.poses[i] = q;
            self.prior[i] = mean_prior;
            self.loglik[i] = fine(&q) * used;
            self.fresh[i] = true;
        }
        self.stats.beta = temper(
            &self.prior,
            &self.loglik,
            self.params.min_ess,
            &mut self.weights,
        );
        self.stats.injected += k;
        self.w_slow = 0.0;
        self.w_fast = 0.0;
    }
}

/// Normalised weights `prior + beta * loglik` into `out` with the largest `beta` in
/// (0, 1] whose effective sample size is at least `min_ess` of the count; returns `beta`.
fn temper(prior: &[f64], loglik: &[f64], min_ess: f64, out: &mut [f64]) -> f64 {
    let target = min_ess * prior.len() as f64;
    if posterior(prior, loglik, 1.0, out) >= target {
        return 1.0;
    }
    // The largest power whose effective sample size reaches the target.
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..30 {
        let mid = 0.5 * (lo + hi);
        if posterior(prior, loglik, mid, out) >= target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    posterior(prior, loglik, lo, out);
    lo
}

/// The beams of one scan, ready for weighing.
struct Scorer {
    beams: sensor::Beams,
    used: usize,
}

/// One try of the motion and sensor steps (expansion resetting keeps the best).
struct Attempt {
    poses: Vec<Pose>,
    weights: Vec<f64>,
    fresh: Vec<bool>,
    stats: UpdateStats,
}

/// Normalised weights `prior + beta * loglik` (log domain) into `out`; returns their
/// effective sample size.
fn posterior(prior: &[f64], loglik: &[f64], beta: f64, out: &mut [f64]) -> f64 {
    let top = prior
        .iter()
        .zip(loglik)
        .map(|(p, l)| p + beta * l)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0.0;
    for ((o, p), l) in out.iter_mut().zip(prior).zip(loglik) {
        *o = (p + beta * l - top).exp();
        sum += *o;
    }
    if !(sum > 0.0 && sum.is_finite()) {
        let n = out.len() as f64;
        out.iter_mut().for_each(|w| *w = 1.0 / n);
        return n;
    }
    let mut sq = 0.0;
    for o in out.iter_mut() {
        *o /= sum;
        sq += *o * *o;
    }
    1.0 / sq
}

/// The lower Cholesky factor of a covariance (variances floored at zero; a matrix that is
/// not positive definite falls back to its diagonal).
fn cholesky(c: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let mut l = [[0.0; 3]; 3];
    for i in 0..3 {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                let d = c[i][i] - s;
                if d.is_nan() || d <= 0.0 {
                    let mut diag = [[0.0; 3]; 3];
                    for k in 0..3 {
                        diag[k][k] = c[k][k].max(0.0).sqrt();
                    }
                    return diag;
                }
                l[i][i] = d.sqrt();
            } else {
                l[i][j] = (c[i][j] - s) / l[j][j];
            }
        }
    }
    l
}
