//! The filter's parameters, with their defaults and why each is what it is. Where Player's
//! `amcl` or Nav2's `nav2_amcl` documents a parameter, ours has its name and, unless said
//! otherwise, its default; docs/navigation.md has the same table with the measurements.

use super::cluster::Bins;
use super::motion::MotionNoise;
use super::search::SearchParams;
use super::sensor::BeamParams;
use crate::likelihood::FieldParams;

/// Which sensor model weighs the particles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Thrun's likelihood field (Nav2's default and ours).
    LikelihoodField,
    /// Thrun's beam model, by ray casting.
    Beam,
}

/// Every parameter of the filter, with its default and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// The sensor model: the likelihood field (Nav2's default; smooth in the pose, one
    /// table read per beam) or the beam model (a ray cast per beam, several times slower).
    pub model: Model,
    /// Fewest particles KLD-sampling keeps: 500, Player's and issue 31's default.
    pub min_particles: usize,
    /// Most particles: 5000, Nav2's and Player's default; also the count after
    /// [`crate::amcl::Filter::set_pose`] and [`crate::amcl::Filter::global`].
    pub max_particles: usize,
    /// Odometry noise: Nav2's alpha1-4, 0.2 each as Nav2 documents them, drawn per piece
    /// of at most 0.25 m and 0.2 rad (with pieces longer than the driver's updates, this
    /// is Nav2's model; longer motions get noise that grows with the distance, not its
    /// square).
    pub motion: MotionNoise,
    /// The filter updates when the robot has moved this far: 0.2 m, Player's `update_min`
    /// [200 mm, 10 deg] (Nav2's 0.25 m, 0.2 rad are close) ...
    pub update_min_d: f64,
    /// ... or turned this much: 10 degrees.
    pub update_min_a: f64,
    /// Recovery on (the default): expansion resetting when a scan fits badly, augmented
    /// MCL's random injection when the fit stays bad. Nav2 ships it off; issue 31 wants
    /// a kidnapped robot found again.
    pub recovery: bool,
    /// Decay of the long-term fit average: 0.001, Nav2's `recovery_alpha_slow`.
    pub alpha_slow: f64,
    /// Decay of the short-term average: 0.1, Nav2's `recovery_alpha_fast`.
    pub alpha_fast: f64,
    /// Injection starts once the short-term average falls below this share of the
    /// long-term one, `1 - w_fast / (recovery_ratio * w_slow)` of the draws: 0.75.
    /// Thrun's rule (1.0) injects on every dip of the fit: measured, 5.6% of the particles
    /// of the Orebro log's updates (and 1.2% of the Intel log's) are random poses while
    /// tracking well, none at 0.75; a kidnapping drops the fit far below either.
    pub recovery_ratio: f64,
    /// KLD-sampling's error bound: 0.05, Nav2's `pf_err`. (0.02 lowers the ATE on the
    /// CARMEN logs by 0.3-0.8 cm at about twice the time.)
    pub kld_err: f64,
    /// KLD-sampling's standard normal quantile: 3.0 (99.87%, Beluga's `kld_z`; Nav2's
    /// `pf_z` of 0.99 is the probability, not the quantile, and would mean z = 0.99).
    pub kld_z: f64,
    /// The bins KLD-sampling counts: 0.1 m and 2 degrees, the scale of what a scan can
    /// tell apart, so that a wide moved cloud gets more particles. Player's 0.5 m and 10
    /// degrees keep about 500 for a 1 m step whose spread is 10-40 cm and 10-20 degrees;
    /// measured on the CARMEN logs (6 seeds), every run passes either way, with 0.4-0.9 cm
    /// more ATE at Player's bins, in about a third of the time.
    pub kld_bins: Bins,
    /// The bins the hypotheses are clustered from: Player's 0.5 m and 10 degrees.
    pub cluster_bins: Bins,
    /// The likelihood field: Nav2's `z_hit` 0.5, `z_rand` 0.5, `sigma_hit` 0.2 m,
    /// `laser_likelihood_max_dist` 2.0 m. (On the CARMEN logs, sigma 0.1-0.15 m, z_hit 0.9
    /// or 120 beams change the ATE by under 0.5 cm.)
    pub field: FieldParams,
    /// The beam model: Nav2's `z_hit` 0.5, `z_short` 0.05, `z_max` 0.05, `z_rand` 0.5,
    /// `sigma_hit` 0.2 m, `lambda_short` 0.1.
    pub beam: BeamParams,
    /// Beams of a scan used per update, evenly spaced: 60, Nav2's `max_beams`.
    pub max_beams: usize,
    /// Resample only when the effective sample size is below this share of the count:
    /// 0.5 (Grisetti et al.'s selective resampling; Nav2 resamples every update or every
    /// `resample_interval`). Weights carry over between updates otherwise.
    pub resample_ess: f64,
    /// Temper the likelihood (raise it to a power below 1) just enough that the effective
    /// sample size stays at least this share of the count: 0.01. It keeps a broad cloud
    /// (global localization, injected poses) from collapsing on the first lucky pose: the
    /// synthetic floor's global localization fails without it. Tracking hardly needs it
    /// (at 0.02 the CARMEN logs' ATE grows by 0.2-0.7 cm).
    pub min_ess: f64,
    /// Expansion resetting (Ueda et al., 2004): when a scan's fit falls below this share
    /// of its long-term average (0.8), the motion step is redone with more noise ...
    pub expand_ratio: f64,
    /// ... at most this many times (2) ...
    pub expand_steps: u32,
    /// ... each time with the alphas multiplied by this (4: twice the spread). The best
    /// try is kept. Odometry that slipped more than modelled (a turn with a few
    /// centimetres of sideways creep reads as a large turn) is caught in the same update
    /// instead of losing the robot.
    pub expand_factor: f64,
    /// Scan-matched recovery ([`super::search`]; with `recovery` on, the likelihood
    /// field only).
    pub search: SearchParams,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            model: Model::LikelihoodField,
            min_particles: 500,
            max_particles: 5000,
            motion: MotionNoise::default(),
            update_min_d: 0.2,
            update_min_a: 10f64.to_radians(),
            recovery: true,
            alpha_slow: 0.001,
            alpha_fast: 0.1,
            recovery_ratio: 0.75,
            kld_err: 0.05,
            kld_z: 3.0,
            kld_bins: Bins {
                size_d: 0.1,
                size_a: 2f64.to_radians(),
            },
            cluster_bins: Bins {
                size_d: 0.5,
                size_a: 10f64.to_radians(),
            },
            field: FieldParams::default(),
            beam: BeamParams::default(),
            max_beams: 60,
            resample_ess: 0.5,
            min_ess: 0.01,
            expand_ratio: 0.8,
            expand_steps: 2,
            expand_factor: 4.0,
            search: SearchParams::default(),
        }
    }
}

impl Params {
    /// Sets one parameter by name from its text (for command lines and configuration):
    /// `model`, `min_particles`, `max_particles`, `alpha1`..`alpha4`, `piece_d`,
    /// `piece_a` (rad), `update_min_d`, `update_min_a` (rad), `recovery`, `alpha_slow`,
    /// `alpha_fast`, `recovery_ratio`, `kld_err`, `kld_z`, `kld_bin_d`, `kld_bin_a` (rad), `cluster_bin_d`,
    /// `cluster_bin_a` (rad), `z_hit`, `z_rand`, `sigma_hit`, `max_dist`, `beam_z_hit`,
    /// `beam_z_short`, `beam_z_max`, `beam_z_rand`, `beam_sigma_hit`, `lambda_short`,
    /// `max_beams`, `resample_ess`, `min_ess`, `expand_ratio`, `expand_steps`,
    /// `expand_factor`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let num = || -> Result<f64, String> {
            let v: f64 = value
                .parse()
                .map_err(|_| format!("{key}: '{value}' is not a number"))?;
            if v.is_finite() && v >= 0.0 {
                Ok(v)
            } else {
                Err(format!("{key}: '{value}' is not a number 0 or more"))
            }
        };
        let count = || -> Result<usize, String> {
            match value.parse::<usize>() {
                Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
                _ => Err(format!("{key}: '{value}' is not a count from 1 to 1000000")),
            }
        };
        match key {
            "model" => {
                self.model = match value {
                    "likelihood_field" => Model::LikelihoodField,
                    "beam" => Model::Beam,
                    _ => return Err(format!("model: '{value}' is not likelihood_field or beam")),
                }
            }
            "recovery" => {
                self.recovery = match value {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    _ => return Err(format!("recovery: '{value}' is not true or false")),
                }
            }
            "min_particles" => self.min_particles = count()?,
            "max_particles" => self.max_particles = count()?,
            "max_beams" => self.max_beams = count()?,
            "alpha1" => self.motion.alpha[0] = num()?,
            "alpha2" => self.motion.alpha[1] = num()?,
            "alpha3" => self.motion.alpha[2] = num()?,
            "alpha4" => self.motion.alpha[3] = num()?,
            "piece_d" => self.motion.piece_d = num()?,
            "piece_a" => self.motion.piece_a = num()?,
            "update_min_d" => self.update_min_d = num()?,
            "update_min_a" => self.update_min_a = num()?,
            "alpha_slow" => self.alpha_slow = num()?,
            "alpha_fast" => self.alpha_fast = num()?,
            "recovery_ratio" => self.recovery_ratio = num()?,
            "kld_err" => self.kld_err = num()?,
            "kld_z" => self.kld_z = num()?,
            "kld_bin_d" => self.kld_bins.size_d = num()?,
            "kld_bin_a" => self.kld_bins.size_a = num()?,
            "cluster_bin_d" => self.cluster_bins.size_d = num()?,
            "cluster_bin_a" => self.cluster_bins.size_a = num()?,
            "z_hit" => self.field.z_hit = num()?,
            "z_rand" => self.field.z_rand = num()?,
            "sigma_hit" => self.field.sigma_hit = num()?,
            "max_dist" => self.field.max_dist = num()?,
            "beam_z_hit" => self.beam.z_hit = num()?,
            "beam_z_short" => self.beam.z_short = num()?,
            "beam_z_max" => self.beam.z_max = num()?,
            "beam_z_rand" => self.beam.z_rand = num()?,
            "beam_sigma_hit" => self.beam.sigma_hit = num()?,
            "lambda_short" => self.beam.lambda_short = num()?,
            "resample_ess" => self.resample_ess = num()?,
            "min_ess" => self.min_ess = num()?,
            "expand_ratio" => self.expand_ratio = num()?,
            "expand_factor" => self.expand_factor = num()?,
            "search_candidates" => self.search.candidates = num()? as usize,
            "search_coarse_beams" => self.search.coarse_beams = count()?,
            "search_coarse_sigma" => self.search.coarse_sigma = num()?,
            "search_keep" => self.search.keep = count()?,
            "search_rounds" => self.search.rounds = num()? as u32,
            "search_tries" => self.search.tries = num()? as u32,
            "search_margin" => self.search.margin = num()?,
            "search_every" => self.search.every = count()? as u32,
            "search_share" => self.search.share = num()?,
            "expand_steps" => {
                self.expand_steps = match value.parse::<u32>() {
                    Ok(n) if n <= 8 => n,
                    _ => return Err(format!("expand_steps: '{value}' is not 0 to 8")),
                }
            }
            _ => return Err(format!("no parameter '{key}'")),
        }
        let positive = |v: f64| v > 0.0;
        if !(positive(self.kld_bins.size_d)
            && positive(self.kld_bins.size_a)
            && positive(self.cluster_bins.size_d)
            && positive(self.cluster_bins.size_a))
        {
            return Err(format!("{key}: bin sizes must be above 0"));
        }
        Ok(())
    }
}
