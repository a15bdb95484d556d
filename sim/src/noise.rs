//! How far a simulated robot's sensors and odometry stray from the truth, and the seeded
//! random numbers that make them stray the same way on every run.
//!
//! A real Pioneer's readings are never exact: its sonars jitter by about a percent of the
//! range, lose an echo now and then and get none at all from a wall met at a grazing angle
//! (the ultrasound reflects away like light off a mirror); its SICK laser jitters by a few
//! millimetres; its odometry drifts. [`Noise`] holds those magnitudes; [`Noise::PIONEER`] is
//! the default of every world, [`Noise::NONE`] the exact sensors of a geometry test.
//!
//! Sensor noise is a pure function of the seed, the sensor's own index and either the
//! physics sub-step the reading is taken in or the spot of the world it sees ([`NoiseKey`]):
//! reading a sensor twice in the same instant gives the same value, and how many clients
//! read it, or how often, never changes a run.
//!
//! The laser's jitter is fresh at every instant, as a SICK's is. A sonar's error is not: a
//! Polaroid ranger standing still reads almost the same every time. Its misses (an echo
//! reflected away from a surface met at a grazing angle, an echo lost) and most of its range
//! error follow where the echo comes from: they are keyed on the spot of the surface and
//! change as the robot moves (the range error smoothly, over [`RANGE_CELL_MM`]); only a
//! small share ([`SONAR_JITTER_SHARE`]) is fresh at every reading.

use crate::rng::Rng;

/// Noise magnitudes of one simulated robot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Odometry drift, one standard deviation: `(translation, rotation)` as fractions of the
    /// distance driven (per metre) and of the angle turned (per full turn); `None` for
    /// exact odometry.
    pub odometry: Option<(f64, f64)>,
    /// Sonar range noise, one standard deviation as a fraction of the range (of
    /// [`SONAR_SIGMA_FLOOR_RANGE_MM`] for nearer echoes: the transducer's timing does not get
    /// finer close up).
    pub sonar_sigma: f64,
    /// Probability that a sonar reading is lost (no echo: it reads the maximum range).
    pub sonar_dropout: f64,
    /// Angle of incidence (degrees from the surface's normal) beyond which a sonar ray
    /// starts to miss: its echo reflects away. Rays miss more and more often up to
    /// `SPECULAR_RAMP_DEG` past this angle, and always beyond. 90 or more: never.
    pub sonar_specular_deg: f64,
    /// Laser range noise, one standard deviation, mm.
    pub laser_sigma_mm: f64,
}

/// Below this range the sonar's range noise stops shrinking, mm.
pub const SONAR_SIGMA_FLOOR_RANGE_MM: f64 = 1000.0;

/// Degrees past [`Noise::sonar_specular_deg`] over which a grazing sonar ray goes from
/// always echoing to never echoing.
pub const SPECULAR_RAMP_DEG: f64 = 15.0;

impl Noise {
    /// Exact sensors and odometry.
    pub const NONE: Noise = Noise {
        odometry: None,
        sonar_sigma: 0.0,
        sonar_dropout: 0.0,
        sonar_specular_deg: 90.0,
        laser_sigma_mm: 0.0,
    };

    /// A Pioneer 2-DX as it behaves: odometry drifting 2% per metre and per turn, sonar
    /// ranges jittering by 1% (10 mm under a metre), 2% of sonar readings lost, sonar rays more than 60 degrees
    /// off a surface's normal reflecting away (all of them past 75), laser ranges jittering
    /// by 5 mm.
    pub const PIONEER: Noise = Noise {
        odometry: Some((0.02, 0.02)),
        sonar_sigma: 0.01,
        sonar_dropout: 0.02,
        sonar_specular_deg: 60.0,
        laser_sigma_mm: 5.0,
    };

    /// Whether nothing is noisy.
    pub fn is_none(&self) -> bool {
        self.odometry.is_none()
            && self.sonar_sigma == 0.0
            && self.sonar_dropout == 0.0
            && self.sonar_specular_deg >= 90.0
            && self.laser_sigma_mm == 0.0
    }

    /// Checks the magnitudes: finite, not negative, probabilities at most 1. The error
    /// names the field.
    pub fn validate(&self) -> Result<(), String> {
        let mut fields = vec![
            ("sonar_sigma", self.sonar_sigma),
            ("sonar_dropout", self.sonar_dropout),
            ("sonar_specular_deg", self.sonar_specular_deg),
            ("laser_sigma_mm", self.laser_sigma_mm),
        ];
        if let Some((t, r)) = self.odometry {
            fields.push(("odometry_noise", t));
            fields.push(("odometry_noise", r));
        }
        for (name, v) in fields {
            if !v.is_finite() || v < 0.0 {
                return Err(format!("{name} must be a finite number >= 0, got {v}"));
            }
        }
        if self.sonar_dropout > 1.0 {
            return Err(format!(
                "sonar_dropout is a probability (0 to 1), got {}",
                self.sonar_dropout
            ));
        }
        Ok(())
    }

    /// The cosine of [`Noise::sonar_specular_deg`]: a ray meeting a surface with a smaller
    /// cosine of incidence may miss.
    pub fn specular_cos(&self) -> f64 {
        self.sonar_specular_deg.min(90.0).to_radians().cos()
    }

    /// The probability that a sonar ray meeting a surface `incidence_deg` off its normal
    /// gets no echo back.
    pub fn specular_miss(&self, incidence_deg: f64) -> f64 {
        ((incidence_deg - self.sonar_specular_deg) / SPECULAR_RAMP_DEG).clamp(0.0, 1.0)
    }
}

impl Default for Noise {
    /// [`Noise::PIONEER`].
    fn default() -> Noise {
        Noise::PIONEER
    }
}

/// Which random draw: a robot's seed, the physics sub-step, the sensor and the draw's index
/// within it. Equal keys give equal numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoiseKey {
    /// The robot's seed.
    pub seed: u64,
    /// The physics sub-step the reading is taken after.
    pub step: u64,
    /// The sensor ([`SONAR`], [`LASER`]) and the draw's index within its reading.
    pub draw: u64,
}

/// Draws of the sonar ([`NoiseKey::draw`] base).
pub const SONAR: u64 = 1 << 32;
/// Draws of the laser ([`NoiseKey::draw`] base).
pub const LASER: u64 = 2 << 32;
/// Draws of the sonar keyed on the spot of the world an echo comes from ([`NoiseKey::draw`]
/// base, plus [`RANGE`], [`DROPOUT`] or [`SPECULAR`]; the key's `step` is then the spot's
/// cell).
pub const SONAR_SPOT: u64 = 3 << 32;
/// The sonar's range error at a spot (added to [`SONAR_SPOT`]).
pub const RANGE: u64 = 0;
/// Whether the sonar's echo from a spot is lost (added to [`SONAR_SPOT`]).
pub const DROPOUT: u64 = 1;
/// The critical angle of a stretch of surface (added to [`SONAR_SPOT`]).
pub const SPECULAR: u64 = 2;

/// The spacing of the points between which a sonar's range error varies smoothly, mm.
pub const RANGE_CELL_MM: f64 = 100.0;
/// The size of a spot of surface whose echo is lost or not as a whole, mm.
pub const DROPOUT_CELL_MM: f64 = 20.0;
/// The size of a stretch of surface with one critical angle for sonar echoes (met at a
/// more grazing angle than it, an echo reflects away), mm.
pub const SPECULAR_CELL_MM: f64 = 500.0;
/// The share (in standard deviations) of the sonar's range error that is fresh at every
/// reading: a robot standing still sees its readings jitter by this much of
/// [`Noise::sonar_sigma`].
pub const SONAR_JITTER_SHARE: f64 = 0.1;
/// The share of the sonar's range error that follows the spot (the two shares' squares add
/// up to one, so the error's standard deviation over many spots is [`Noise::sonar_sigma`]).
pub const SONAR_SPOT_SHARE: f64 = 0.994_987_437_106_62;

impl NoiseKey {
    /// A generator for this key: the key's bits mixed so that neighbouring keys give
    /// unrelated sequences.
    pub fn rng(self) -> Rng {
        let mut mix = Rng::new(self.seed ^ 0x6A09_E667_F3BC_C909);
        let a = mix.next_u64() ^ self.step.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut mix = Rng::new(a);
        let b = mix.next_u64() ^ self.draw.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        Rng::new(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_repeatable_and_distinct() {
        let k = NoiseKey {
            seed: 3,
            step: 10,
            draw: SONAR + 4,
        };
        assert_eq!(k.rng().next_u64(), k.rng().next_u64());
        let others = [
            NoiseKey { seed: 4, ..k },
            NoiseKey { step: 11, ..k },
            NoiseKey {
                draw: SONAR + 5,
                ..k
            },
            NoiseKey {
                draw: LASER + 4,
                ..k
            },
        ];
        for o in others {
            assert_ne!(k.rng().next_u64(), o.rng().next_u64(), "{o:?}");
        }
        // Neighbouring steps are uncorrelated: the mean of many is near 0.5.
        let n = 10_000;
        let mean = (0..n)
            .map(|s| NoiseKey { step: s, ..k }.rng().uniform())
            .sum::<f64>()
            / n as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    #[test]
    fn specular_ramp_and_validation() {
        let n = Noise::PIONEER;
        assert_eq!(n.specular_miss(30.0), 0.0);
        assert_eq!(n.specular_miss(60.0), 0.0);
        assert!((n.specular_miss(67.5) - 0.5).abs() < 1e-9);
        assert_eq!(n.specular_miss(80.0), 1.0);
        assert_eq!(Noise::NONE.specular_miss(89.9), 0.0);
        assert!(Noise::NONE.is_none() && !n.is_none());
        assert!(n.validate().is_ok());
        let bad = Noise {
            sonar_dropout: 1.5,
            ..n
        };
        assert!(bad.validate().unwrap_err().contains("sonar_dropout"));
        let bad = Noise {
            laser_sigma_mm: f64::NAN,
            ..n
        };
        assert!(bad.validate().unwrap_err().contains("laser_sigma_mm"));
    }
}
