//! The robot's laser: its rays cast at the map (each solid only at the rays of the angle it
//! covers) and at the bodies near it, kept while nothing they met moved, with the laser's
//! noise drawn on them; read as the 0.7.4a `l` device and as the full scan `L`.

use player_proto::scan::{self, Scan};

use super::{within, Body, SimRobot, Solids, LASER_SAMPLES};
use crate::cast::CastKind;
use crate::geom::{normalize_angle, ray_circle, Shape, Vec2};
use crate::laser::LaserSpec;
use crate::map::ROBOT_RADIUS_MM;
use crate::noise;

impl SimRobot {
    /// The 361 laser ranges in mm of the 0.7.4a `l` device: index 0 at the robot's right,
    /// 180 straight ahead, 360 at its left, 0.5 degrees apart; the laser's maximum range
    /// when nothing is hit. For the default laser (a SICK LMS-200) these are its own rays;
    /// for any other ([`SimRobot::set_laser`]) the `l` view of its scan
    /// ([`player_proto::scan::laser_view`]: bins outside its field of view read its maximum
    /// range).
    pub fn laser(&self) -> [u16; LASER_SAMPLES] {
        self.laser_among(&[])
    }

    /// As [`SimRobot::laser`], with `others` in the world (solid ones reflect).
    pub fn laser_among(&self, others: &[Body]) -> [u16; LASER_SAMPLES] {
        if self.params.laser == LaserSpec::default() {
            // The rays are the `l` bins: noise and rounding straight into them.
            let mut out = [0u16; LASER_SAMPLES];
            self.cast_among(others, |ranges| self.finish_rays_into(ranges, &mut out));
            return out;
        }
        self.view(self.rays_among(others))
    }

    /// As [`SimRobot::laser`], with `solids` (other robots and solid bodies) in the world:
    /// each ray is cast at the map, then at the solids up to what the map gave.
    pub fn laser_with(&self, solids: &impl Solids) -> [u16; LASER_SAMPLES] {
        self.view(self.rays_with(solids))
    }

    /// The full scan (`L`) of this robot's laser: its own rays, counter-clockwise from the
    /// right end of its field of view, 0 where a ray hits nothing within its range.
    pub fn scan(&self) -> Scan {
        self.scan_among(&[])
    }

    /// As [`SimRobot::scan`], with `others` in the world (solid ones reflect).
    pub fn scan_among(&self, others: &[Body]) -> Scan {
        self.scan_of(self.rays_among(others))
    }

    /// As [`SimRobot::scan`], with `solids` (other robots and solid bodies) in the world.
    pub fn scan_with(&self, solids: &impl Solids) -> Scan {
        self.scan_of(self.rays_with(solids))
    }

    /// [`SimRobot::laser_among`] and [`SimRobot::scan_among`] of the same instant from one
    /// casting of the rays (the same readings as the two calls).
    pub fn laser_and_scan_among(&self, others: &[Body]) -> ([u16; LASER_SAMPLES], Scan) {
        let rays = self.rays_among(others);
        (self.view(rays.clone()), self.scan_of(rays))
    }

    /// The laser this robot carries.
    pub fn laser_spec(&self) -> LaserSpec {
        self.params.laser
    }

    /// Gives this robot another laser (field of view, resolution, range).
    pub fn set_laser(&mut self, laser: LaserSpec) {
        self.params.laser = laser;
    }

    fn scan_of(&self, rays: Vec<u16>) -> Scan {
        let l = self.params.laser;
        let far = l.max_mm.round() as u16;
        Scan {
            angle_min: scan::to_urad(l.first_deg().to_radians()),
            angle_increment: scan::to_urad(l.resolution_deg.to_radians()),
            ranges: rays
                .into_iter()
                .map(|r| if r >= far { 0 } else { r })
                .collect(),
            intensities: None,
        }
    }

    /// The `l` reading of the rays: the rays themselves for the default laser (whose rays
    /// are the `l` bins), else the `l` view of the scan.
    fn view(&self, rays: Vec<u16>) -> [u16; LASER_SAMPLES] {
        if self.params.laser == LaserSpec::default() {
            let mut out = [0u16; LASER_SAMPLES];
            out.copy_from_slice(&rays);
            return out;
        }
        let max = self.params.laser.max_mm.round() as u32;
        self.scan_of(rays).laser_view(max).ranges
    }

    /// The laser's rays, mm (its maximum range where nothing is hit), with `others`.
    fn rays_among(&self, others: &[Body]) -> Vec<u16> {
        self.cast_among(others, |ranges| self.finish_rays(ranges))
    }

    /// `read` of the laser's rays before noise, mm, with `others`: the last casting's when
    /// this robot, the others within the laser's reach and the settings are the same to
    /// the bit as then (see [`crate::cast`]), else a fresh one.
    fn cast_among<R>(&self, others: &[Body], read: impl FnOnce(&[f64]) -> R) -> R {
        let (x, y, _) = self.pose;
        let centre = Vec2::new(x, y);
        let near = within(others, centre, self.params.laser.max_mm + ROBOT_RADIUS_MM);
        let inputs = self.cast_inputs(CastKind::Laser, centre, &near);
        self.castings
            .laser
            .read(&inputs, || self.cast_rays(&near), |ranges| read(ranges))
    }

    /// The laser's rays before noise, mm (its maximum range where nothing is hit), with
    /// `near`, the solid bodies within its reach.
    fn cast_rays(&self, near: &[Body]) -> Vec<f64> {
        let l = self.params.laser;
        let n = l.count();
        let th = self.pose.2;
        let origin = self.laser_origin();
        let first = l.first_deg();
        let res = l.resolution_deg;
        let angle = |i: usize| th + (first + res * i as f64).to_radians();
        let walls = self.map.solids_near(origin, l.max_mm);
        let dirs: Vec<Vec2> = (0..n).map(|i| Vec2::from_angle(angle(i))).collect();
        // Each ray's range is the nearest of the map's hits (or the maximum): each solid is
        // cast only at the rays of the angle it covers, the others cannot meet it. The
        // nearest of the same hits, so the same ranges as casting every ray at every solid.
        let mut ranges = vec![l.max_mm; n];
        walls.each_shape(|shape| {
            let Some((lo, hi)) = ray_span(shape_window(origin, shape), th, first, res, n) else {
                return;
            };
            for (r, &dir) in ranges[lo..=hi].iter_mut().zip(&dirs[lo..=hi]) {
                if let Some(t) = shape.ray_hit(origin, dir) {
                    if t < *r {
                        *r = t;
                    }
                }
            }
        });
        // Each body only against the rays of the angle it covers (a full circle: all rays,
        // as the window may wrap).
        for b in near {
            let (lo, hi) = match angular_window(origin, b) {
                Some((bearing, width)) if !l.full_circle() => {
                    let rel = normalize_angle(bearing - th).to_degrees();
                    let w = width.to_degrees();
                    let lo = ((rel - w - first) / res).floor();
                    let hi = ((rel + w - first) / res).ceil();
                    if hi < 0.0 || lo > (n - 1) as f64 {
                        continue;
                    }
                    (lo.max(0.0) as usize, (hi as usize).min(n - 1))
                }
                _ => (0, n - 1),
            };
            for (r, &dir) in ranges[lo..=hi].iter_mut().zip(&dirs[lo..=hi]) {
                if let Some(t) = ray_circle(origin, dir, b.center, b.radius) {
                    *r = r.min(t);
                }
            }
        }
        ranges
    }

    /// The laser's rays, mm (its maximum range where nothing is hit), with `solids`.
    fn rays_with(&self, solids: &impl Solids) -> Vec<u16> {
        let l = self.params.laser;
        let th = self.pose.2;
        let origin = self.laser_origin();
        let walls = self.map.solids_near(origin, l.max_mm);
        let mut ranges = vec![0.0f64; l.count()];
        for (i, r) in ranges.iter_mut().enumerate() {
            let angle = th + (l.first_deg() + l.resolution_deg * i as f64).to_radians();
            let dir = Vec2::from_angle(angle);
            let d = walls.range(origin, dir, l.max_mm);
            *r = match solids.first_hit(origin, dir, d) {
                Some((t, _)) => t.min(d),
                None => d,
            };
        }
        self.finish_rays(&ranges)
    }

    /// Noise on the rays that hit something, then whole millimetres.
    fn finish_rays(&self, ranges: &[f64]) -> Vec<u16> {
        let mut out = vec![0u16; ranges.len()];
        self.finish_rays_into(ranges, &mut out);
        out
    }

    /// [`SimRobot::finish_rays`] into `out` (as long as `ranges`): the noise drawn ray by
    /// ray in order, only for the rays that hit something.
    fn finish_rays_into(&self, ranges: &[f64], out: &mut [u16]) {
        let max = self.params.laser.max_mm;
        let sigma = self.noise.laser_sigma_mm;
        let mut rng = (sigma > 0.0).then(|| self.noise_rng(noise::LASER));
        for (o, &r) in out.iter_mut().zip(ranges) {
            let mut r = r;
            if let Some(rng) = rng.as_mut().filter(|_| r < max) {
                r += rng.gaussian() * sigma;
            }
            *o = r.round().clamp(0.0, max) as u16;
        }
    }

    /// Where the laser sits in the world, mm.
    pub fn laser_origin(&self) -> Vec2 {
        let (x, y, th) = self.pose;
        Vec2::new(x, y) + Vec2::from_angle(th) * self.params.laser_x_mm
    }
}

/// The bearing (radians) of a body's centre seen from `origin`, and the half-angle its disc
/// covers; `None` when `origin` is inside the disc (it covers every direction).
fn angular_window(origin: Vec2, b: &Body) -> Option<(f64, f64)> {
    let d = b.center - origin;
    let dist = d.length();
    if dist <= b.radius {
        return None;
    }
    Some((d.angle(), (b.radius / dist).asin()))
}

/// How much wider than the geometry the ray windows of the laser are, degrees: far more
/// than the rounding of a ray's direction (about 1e-14 radians), so no ray that can meet a
/// solid is left out.
const WINDOW_MARGIN_DEG: f64 = 0.01;

/// The angle (radians, from `.0` counter-clockwise to `.1`, less than a half turn apart)
/// within which a ray from `origin` can meet `shape`; `None` when rays in any direction can
/// (the origin within a millimetre of the shape, or of a segment's line).
fn shape_window(origin: Vec2, shape: &Shape) -> Option<(f64, f64)> {
    const NEAR_MM: f64 = 1.0;
    let mut points = [Vec2::new(0.0, 0.0); 4];
    let (centre, k) = match *shape {
        Shape::Circle(c, r) => {
            let d = c - origin;
            let dist = d.length();
            if dist <= r + NEAR_MM {
                return None;
            }
            let (bearing, half) = (d.angle(), (r / dist).asin());
            return Some((bearing - half, bearing + half));
        }
        Shape::Segment(a, b) => {
            let e = b - a;
            let len = e.length();
            if len < NEAR_MM || (origin - a).cross(e).abs() / len < NEAR_MM {
                return None;
            }
            points[0] = a;
            points[1] = b;
            ((a + b) * 0.5, 2)
        }
        Shape::Rect(lo, hi) => {
            let inside = |v: f64, lo: f64, hi: f64| v > lo - NEAR_MM && v < hi + NEAR_MM;
            if inside(origin.x, lo.x, hi.x) && inside(origin.y, lo.y, hi.y) {
                return None;
            }
            points = [lo, Vec2::new(hi.x, lo.y), hi, Vec2::new(lo.x, hi.y)];
            ((lo + hi) * 0.5, 4)
        }
    };
    // A convex shape seen from outside covers less than a half turn, its centre's
    // direction within it: its corners' angles from that direction bound it.
    let axis = (centre - origin).angle();
    let (mut from, mut to) = (0.0f64, 0.0f64);
    for p in &points[..k] {
        let rel = normalize_angle((*p - origin).angle() - axis);
        from = from.min(rel);
        to = to.max(rel);
    }
    Some((axis + from, axis + to))
}

/// The rays (first and last index, of `n` from `first` degrees off the heading `th` at
/// `res` degree steps) that a window of [`shape_window`] covers, with a margin; every ray
/// when the window is `None` or reaches round behind the laser; `None` when it covers no
/// ray.
fn ray_span(
    window: Option<(f64, f64)>,
    th: f64,
    first: f64,
    res: f64,
    n: usize,
) -> Option<(usize, usize)> {
    let Some((from, to)) = window else {
        return Some((0, n - 1));
    };
    let lo = normalize_angle(from - th).to_degrees() - WINDOW_MARGIN_DEG;
    let hi = lo + (to - from).to_degrees() + 2.0 * WINDOW_MARGIN_DEG;
    if lo <= -180.0 || hi >= 180.0 {
        return Some((0, n - 1));
    }
    let lo = ((lo - first) / res).floor();
    let hi = ((hi - first) / res).ceil();
    if hi < 0.0 || lo > (n - 1) as f64 {
        return None;
    }
    Some((lo.max(0.0) as usize, (hi as usize).min(n - 1)))
}
