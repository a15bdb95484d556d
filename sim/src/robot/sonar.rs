//! The robot's 16 sonars: each cone cast as seven rays at the map and the solid bodies
//! near it, the echoes' geometry kept while nothing it came from moved, and the noise of a
//! real Pioneer's sonar (grazing echoes lost, dropouts, a range error that follows the spot
//! the echo comes from) drawn on it.

use super::{
    within, Body, SimRobot, Solids, SONAR_HALF_CONE_DEG, SONAR_MAX_MM, SONAR_POSES, SONAR_RAYS,
};
use crate::cast::{CastKind, SonarEcho};
use crate::geom::Vec2;
use crate::map::{NearSolids, ROBOT_RADIUS_MM};
use crate::noise;

/// The unit direction of ray `ray` of sonar `k` in the robot's frame.
fn sonar_ray(k: usize, ray: usize) -> Vec2 {
    static RAYS: std::sync::OnceLock<[[Vec2; SONAR_RAYS]; 16]> = std::sync::OnceLock::new();
    RAYS.get_or_init(|| {
        let half = SONAR_HALF_CONE_DEG.to_radians();
        let span = (SONAR_RAYS - 1) as f64;
        let mut t = [[Vec2::new(0.0, 0.0); SONAR_RAYS]; 16];
        for (k, rays) in t.iter_mut().enumerate() {
            let axis = SONAR_POSES[k].2.to_radians();
            for (r, v) in rays.iter_mut().enumerate() {
                *v = Vec2::from_angle(axis - half + 2.0 * half * r as f64 / span);
            }
        }
        t
    })[k][ray]
}

impl SimRobot {
    /// The 16 sonar ranges in mm, nearest obstacle in each +-15 degree cone, 5000 for nothing.
    /// With noise (see [`SimRobot::set_noise`]), rays meeting a surface at a grazing angle may
    /// get no echo, a reading may be lost (5000), and ranges err: whether and by how much
    /// follow the spot of the surface the echo comes from (a robot standing still reads
    /// the same bar a millimetre's jitter a metre), see [`Noise`](crate::Noise).
    pub fn sonar(&self) -> [u16; 16] {
        self.sonar_among(&[])
    }

    /// As [`SimRobot::sonar`], with `others` in the world (solid ones echo).
    pub fn sonar_among(&self, others: &[Body]) -> [u16; 16] {
        let (x, y, _) = self.pose;
        let centre = Vec2::new(x, y);
        let near = within(others, centre, SONAR_MAX_MM + ROBOT_RADIUS_MM);
        self.sonar_seen(CastKind::SonarList, centre, &near, || near.as_slice())
    }

    /// As [`SimRobot::sonar`], with `solids` (other robots and solid bodies) in the world.
    pub fn sonar_with(&self, solids: &impl Solids) -> [u16; 16] {
        self.sonar_finish(&self.sonar_echoes(solids))
    }

    /// As [`SimRobot::sonar_with`] with the solids `view()` gives, a view of `bodies` (and
    /// of nothing else) taken from `from`: the echoes' geometry is reused when this robot,
    /// `bodies`, `from` and the settings are the same to the bit as at the last such reading
    /// (see [`crate::cast`]), and only the fresh draws are made.
    pub(crate) fn sonar_seen<S: Solids>(
        &self,
        kind: CastKind,
        from: Vec2,
        bodies: &[Body],
        view: impl FnOnce() -> S,
    ) -> [u16; 16] {
        let inputs = self.cast_inputs(kind, from, bodies);
        self.castings.sonar.read(
            &inputs,
            || self.sonar_echoes(&view()),
            |echoes| self.sonar_finish(echoes),
        )
    }

    /// Each sonar's echo among `solids`, all but the draws fresh at every instant.
    fn sonar_echoes(&self, solids: &impl Solids) -> [SonarEcho; 16] {
        let (x, y, th) = self.pose;
        let centre = Vec2::new(x, y);
        let mut out = [SonarEcho::Reading(0); 16];
        let noisy = !self.noise.is_none();
        let half = SONAR_HALF_CONE_DEG.to_radians();
        let (sin_th, cos_th) = th.sin_cos();
        let turn = |v: Vec2| Vec2::new(cos_th * v.x - sin_th * v.y, sin_th * v.x + cos_th * v.y);
        let mut cone: Vec<Body> = Vec::new();
        // The map's solids within a sonar's reach (transducers sit within a robot radius of
        // the centre): one lookup for all 112 rays.
        let walls = self.map.solids_near(centre, SONAR_MAX_MM + ROBOT_RADIUS_MM);
        for (k, (reading, &(sx, sy, sh))) in out.iter_mut().zip(SONAR_POSES.iter()).enumerate() {
            let origin = centre + turn(Vec2::new(sx, sy));
            let axis = turn(Vec2::from_angle(sh.to_radians()));
            // Only the solids that can be in this cone (when they are known as a list).
            let narrowed = solids.cone(origin, axis, half, &mut cone);
            if narrowed && cone.is_empty() && walls.is_empty() {
                // Nothing within reach of this cone: no ray can echo.
                *reading = SonarEcho::Reading(SONAR_MAX_MM as u16);
                continue;
            }
            let mut nearest = SONAR_MAX_MM;
            // Where the nearest echo came from (its noise follows that spot).
            let mut echo_at = None;
            for ray in 0..SONAR_RAYS {
                let dir = turn(sonar_ray(k, ray));
                let echo = if narrowed {
                    echo_with(&walls, origin, dir, SONAR_MAX_MM, &cone.as_slice())
                } else {
                    echo_with(&walls, origin, dir, SONAR_MAX_MM, solids)
                };
                let Some((d, cos_incidence)) = echo else {
                    continue;
                };
                let at = origin + dir * d;
                if noisy && cos_incidence < self.noise.specular_cos() {
                    // A ray meeting the surface far from its normal reflects away. Whether
                    // it does is the surface's and the angle's doing, not chance at each
                    // ping: each stretch of surface has its own critical angle within the
                    // ramp, and a ray met beyond it never echoes.
                    let incidence = cos_incidence.clamp(0.0, 1.0).acos().to_degrees();
                    let critical =
                        self.spot_uniform(k, noise::SPECULAR, at, noise::SPECULAR_CELL_MM);
                    if critical < self.noise.specular_miss(incidence) {
                        continue;
                    }
                }
                if d < nearest {
                    nearest = d;
                    echo_at = Some(at);
                }
            }
            if let (true, Some(at)) = (noisy, echo_at) {
                // Whether the echo is lost and most of its range error follow the spot it
                // came from: a robot standing still reads the same, bar a fresh jitter of
                // SONAR_JITTER_SHARE of the error; as the robot moves they change.
                if self.spot_uniform(k, noise::DROPOUT, at, noise::DROPOUT_CELL_MM)
                    < self.noise.sonar_dropout
                {
                    nearest = SONAR_MAX_MM;
                } else {
                    let sigma =
                        self.noise.sonar_sigma * nearest.max(noise::SONAR_SIGMA_FLOOR_RANGE_MM);
                    let spot = self.spot_gaussian(k, at);
                    *reading = SonarEcho::Jitter {
                        nearest,
                        sigma,
                        spot,
                    };
                    continue;
                }
            }
            *reading = SonarEcho::Reading(nearest.round().clamp(0.0, SONAR_MAX_MM) as u16);
        }
        out
    }

    /// The readings of `echoes`, with the draws fresh at this instant.
    fn sonar_finish(&self, echoes: &[SonarEcho; 16]) -> [u16; 16] {
        let mut out = [0u16; 16];
        for (k, (reading, echo)) in out.iter_mut().zip(echoes).enumerate() {
            *reading = match *echo {
                SonarEcho::Reading(r) => r,
                SonarEcho::Jitter {
                    mut nearest,
                    sigma,
                    spot,
                } => {
                    let fresh = self.noise_rng(noise::SONAR + k as u64).gaussian();
                    nearest += sigma
                        * (spot * noise::SONAR_SPOT_SHARE + fresh * noise::SONAR_JITTER_SHARE);
                    nearest.round().clamp(0.0, SONAR_MAX_MM) as u16
                }
            };
        }
        out
    }
}

/// Distance along a ray to the first solid of the map (of `walls`, those near the ray's
/// origin) or of `solids` within `max`, and the cosine of the angle between the ray and that
/// surface's normal; `None` if nothing is that close.
fn echo_with(
    walls: &NearSolids<'_>,
    origin: Vec2,
    dir: Vec2,
    max: f64,
    solids: &impl Solids,
) -> Option<(f64, f64)> {
    let best = walls
        .cast_ray_within(origin, dir, max)
        .map(|h| (h.distance, h.normal.dot(dir).abs()));
    let limit = best.map_or(max, |(d, _)| d);
    match solids.first_hit(origin, dir, limit) {
        Some((t, center)) if t < limit => {
            let n = origin + dir * t - center;
            let len = n.length();
            let cos = if len > 0.0 {
                n.dot(dir).abs() / len
            } else {
                1.0
            };
            Some((t, cos))
        }
        _ => best,
    }
}
