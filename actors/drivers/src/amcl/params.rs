//! The `amcl` driver's parameters (`[robot.driver.params]`), checked into the filter's
//! settings: every key the configuration may give, its default, and the bounds each value
//! is held to before anything is allocated.

use player_kit::driver::DriverError;
use player_nav::amcl::{self, Init, Model};
use player_nav::pose::Pose;
use player_proto::device;
use serde::Deserialize;

/// The most particles a filter may have (a bound before the filter allocates).
pub const MAX_PARTICLES: usize = 100_000;

/// The most beams of a scan the driver lets the sensor model weigh (a UTM-30LX's full
/// scan).
pub const MAX_BEAMS: u64 = 1081;

/// The longest laser range the driver takes, mm (the `L` layout's u16).
const MAX_LASER_MM: f64 = 65_535.0;

/// Parameters of the `amcl` driver, as the configuration gives them.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AmclParams {
    /// `"likelihood_field"` (the default) or `"beam"`.
    #[serde(default)]
    pub model: Option<String>,
    /// `[min, max]` particles of KLD sampling (default [500, 5000]).
    #[serde(default)]
    pub particles: Option<[u64; 2]>,
    /// Everything random comes from it (default 1).
    #[serde(default)]
    pub seed: Option<u64>,
    /// `[x mm, y mm, heading deg, sx mm, sy mm, sheading deg]` (a Gaussian: mean and
    /// standard deviations), or `"global"` (uniform over free space; the default).
    #[serde(default)]
    pub initial_pose: Option<InitialPose>,
    /// Detect a lost filter and inject particles (default true).
    #[serde(default)]
    pub recovery: Option<bool>,
    /// `[mm, deg]`: the filter updates when the robot has moved or turned so far (default
    /// [200, 10]).
    #[serde(default)]
    pub update_min: Option<[f64; 2]>,
    /// Beams of each scan the sensor model weighs, evenly spaced (default 60, Nav2's
    /// `max_beams`; 1 to [`MAX_BEAMS`]): fewer make an update cheaper.
    #[serde(default)]
    pub max_beams: Option<u64>,
    /// Rotation noise from rotation (Nav2's alpha1; default 0.2).
    #[serde(default)]
    pub alpha1: Option<f64>,
    /// Rotation noise from translation (alpha2; default 0.2).
    #[serde(default)]
    pub alpha2: Option<f64>,
    /// Translation noise from translation (alpha3; default 0.2).
    #[serde(default)]
    pub alpha3: Option<f64>,
    /// Translation noise from rotation (alpha4; default 0.2).
    #[serde(default)]
    pub alpha4: Option<f64>,
    /// Standard deviation of the likelihood field's hit, mm (default 100: half Nav2's
    /// 0.2 m; a laser within a few centimetres on a map drawn from the world's own solids
    /// places the robot closer with it, measured in benches/nav_sim.rs).
    #[serde(default)]
    pub sigma_hit_mm: Option<f64>,
    /// The base's odometry it reads: `"P"` (full precision, the default), or a device with
    /// `p`'s layout (`"O"`, `"p"`: whole degrees).
    #[serde(default)]
    pub odometry: Option<String>,
    /// The laser it reads: `"L"` or `"l"` (default: `L` where the robot serves it, else
    /// `l`).
    #[serde(default)]
    pub laser: Option<String>,
    /// The map device it reads (default `"M"`).
    #[serde(default)]
    pub map: Option<String>,
    /// Where the commands and configs of its map-frame `p` go: the base's own position,
    /// served under another code (default `"O"`).
    #[serde(default)]
    pub base: Option<String>,
    /// The laser's range, mm: an `l` reading at or beyond it, or an `L` reading of 0, is
    /// no return (default 8000, the simulated and the SICK laser's).
    #[serde(default)]
    pub laser_max_mm: Option<f64>,
    /// Where the laser sits on the robot: `[x mm, y mm, heading deg]` (default [0, 0, 0]).
    #[serde(default)]
    pub laser_pose: Option<[f64; 3]>,
}

/// `initial_pose`: six numbers or a word.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum InitialPose {
    /// `[x mm, y mm, heading deg, sx mm, sy mm, sheading deg]`.
    Pose([f64; 6]),
    /// `"global"`.
    Word(String),
}

/// The checked settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The filter's parameters.
    pub filter: amcl::Params,
    /// Its seed.
    pub seed: u64,
    /// How it starts (and restarts when the map changes).
    pub init: Init,
    /// The odometry device's code.
    pub odometry: u8,
    /// The laser's code, if the configuration chose it.
    pub laser: Option<u8>,
    /// The map device's code.
    pub map: u8,
    /// The base's code (where the map-frame `p`'s commands and configs go).
    pub base: u8,
    /// The laser's range, m.
    pub laser_max: f64,
    /// The laser's pose on the robot.
    pub laser_pose: Pose,
}

fn bad(key: &str, why: impl std::fmt::Display) -> DriverError {
    DriverError::params(format!("amcl parameter '{key}': {why}"))
}

/// A device code from a one-character text.
fn code(key: &str, v: &Option<String>, default: u8) -> Result<u8, DriverError> {
    let Some(s) = v else {
        return Ok(default);
    };
    match s.as_bytes() {
        [c] if c.is_ascii_graphic() => Ok(*c),
        _ => Err(bad(
            key,
            format!("'{s}' is not a one-character device code"),
        )),
    }
}

fn finite(key: &str, v: f64, lo: f64, hi: f64) -> Result<f64, DriverError> {
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(bad(key, format!("{v} is not between {lo} and {hi}")))
    }
}

impl AmclParams {
    /// Checks every value; the error names the key and why.
    pub fn check(&self) -> Result<Settings, DriverError> {
        let mut f = amcl::Params::default();
        if let Some(m) = &self.model {
            f.model = match m.as_str() {
                "likelihood_field" => Model::LikelihoodField,
                "beam" => Model::Beam,
                _ => {
                    return Err(bad(
                        "model",
                        format!("'{m}' is not \"likelihood_field\" or \"beam\""),
                    ))
                }
            };
        }
        if let Some([min, max]) = self.particles {
            if min < 1 || min > max || max > MAX_PARTICLES as u64 {
                return Err(bad(
                    "particles",
                    format!(
                        "[{min}, {max}] is not [min, max] with 1 <= min <= max <= {MAX_PARTICLES}"
                    ),
                ));
            }
            (f.min_particles, f.max_particles) = (min as usize, max as usize);
        }
        if let Some(r) = self.recovery {
            f.recovery = r;
        }
        if let Some(n) = self.max_beams {
            if !(1..=MAX_BEAMS).contains(&n) {
                return Err(bad(
                    "max_beams",
                    format!("{n} is not between 1 and {MAX_BEAMS}"),
                ));
            }
            f.max_beams = n as usize;
        }
        if let Some([d, a]) = self.update_min {
            f.update_min_d = finite("update_min", d, 0.0, 100_000.0)? / 1000.0;
            f.update_min_a = finite("update_min", a, 0.0, 360.0)?.to_radians();
        }
        for (k, (key, v)) in [
            ("alpha1", self.alpha1),
            ("alpha2", self.alpha2),
            ("alpha3", self.alpha3),
            ("alpha4", self.alpha4),
        ]
        .into_iter()
        .enumerate()
        {
            if let Some(v) = v {
                f.motion.alpha[k] = finite(key, v, 0.0, 100.0)?;
            }
        }
        f.field.sigma_hit = finite(
            "sigma_hit_mm",
            self.sigma_hit_mm.unwrap_or(100.0),
            1.0,
            10_000.0,
        )? / 1000.0;
        let init = match &self.initial_pose {
            None => Init::Global,
            Some(InitialPose::Word(w)) if w == "global" => Init::Global,
            Some(InitialPose::Word(w)) => {
                return Err(bad(
                    "initial_pose",
                    format!("'{w}' is not \"global\" or [x_mm, y_mm, heading_deg, sx_mm, sy_mm, sheading_deg]"),
                ))
            }
            Some(InitialPose::Pose(p)) => {
                let lim = 1e9;
                for (i, v) in p.iter().enumerate() {
                    let lo = if i >= 3 { 0.0 } else { -lim };
                    finite("initial_pose", *v, lo, lim)?;
                }
                Init::Pose(
                    Pose::new(p[0] / 1000.0, p[1] / 1000.0, p[2].to_radians()),
                    amcl::diagonal(p[3] / 1000.0, p[4] / 1000.0, p[5].to_radians()),
                )
            }
        };
        let laser = match &self.laser {
            None => None,
            Some(_) => match code("laser", &self.laser, 0)? {
                c @ (device::FULL_SCAN | device::LASER) => Some(c),
                _ => return Err(bad("laser", "is not \"L\" or \"l\"")),
            },
        };
        let laser_max = finite(
            "laser_max_mm",
            self.laser_max_mm.unwrap_or(8000.0),
            1.0,
            MAX_LASER_MM,
        )? / 1000.0;
        let lp = self.laser_pose.unwrap_or([0.0; 3]);
        for v in lp {
            finite("laser_pose", v, -100_000.0, 100_000.0)?;
        }
        Ok(Settings {
            filter: f,
            seed: self.seed.unwrap_or(1),
            init,
            odometry: code("odometry", &self.odometry, device::PRECISE_ODOMETRY)?,
            laser,
            map: code("map", &self.map, device::MAP)?,
            base: code("base", &self.base, device::ODOMETRY)?,
            laser_max,
            laser_pose: Pose::new(lp[0] / 1000.0, lp[1] / 1000.0, lp[2].to_radians()),
        })
    }
}
