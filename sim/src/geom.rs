//! Plane geometry for the simulator: a small 2-D vector type, the three obstacle shapes
//! (segment, circle, axis-aligned box) and the queries the simulation needs on them: where a
//! ray first hits a shape, and how far a point is from a shape (signed: negative inside).
//!
//! All lengths are millimetres and all angles radians; nothing here knows about robots.

use std::ops::{Add, Mul, Neg, Sub};

/// Below this a cross product or length is treated as zero.
const EPS: f64 = 1e-12;

/// A point or direction in the world plane (mm).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Vec2 {
    /// x (east) component, mm.
    pub x: f64,
    /// y (north) component, mm.
    pub y: f64,
}

impl Vec2 {
    /// The vector (x, y).
    pub const fn new(x: f64, y: f64) -> Vec2 {
        Vec2 { x, y }
    }

    /// The unit vector at `angle` radians counter-clockwise from +x.
    pub fn from_angle(angle: f64) -> Vec2 {
        let (s, c) = angle.sin_cos();
        Vec2::new(c, s)
    }

    /// Dot product.
    pub fn dot(self, o: Vec2) -> f64 {
        self.x * o.x + self.y * o.y
    }

    /// z component of the 3-D cross product (positive when `o` is counter-clockwise of `self`).
    pub fn cross(self, o: Vec2) -> f64 {
        self.x * o.y - self.y * o.x
    }

    /// Euclidean length (a square root of the sum of squares: world coordinates never
    /// come near overflowing it, and it is several times cheaper than `hypot`).
    pub fn length(self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }

    /// This vector rotated `angle` radians counter-clockwise.
    pub fn rotated(self, angle: f64) -> Vec2 {
        let (s, c) = angle.sin_cos();
        self.rotated_by(s, c)
    }

    /// This vector rotated by the angle whose sine and cosine are `s` and `c` (the same
    /// as [`Vec2::rotated`] by that angle, bit for bit).
    pub fn rotated_by(self, s: f64, c: f64) -> Vec2 {
        Vec2::new(c * self.x - s * self.y, s * self.x + c * self.y)
    }

    /// Angle of this vector, radians in (-pi, pi].
    pub fn angle(self) -> f64 {
        self.y.atan2(self.x)
    }
}

impl Add for Vec2 {
    type Output = Vec2;
    fn add(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x + o.x, self.y + o.y)
    }
}

impl Sub for Vec2 {
    type Output = Vec2;
    fn sub(self, o: Vec2) -> Vec2 {
        Vec2::new(self.x - o.x, self.y - o.y)
    }
}

impl Mul<f64> for Vec2 {
    type Output = Vec2;
    fn mul(self, k: f64) -> Vec2 {
        Vec2::new(self.x * k, self.y * k)
    }
}

impl Neg for Vec2 {
    type Output = Vec2;
    fn neg(self) -> Vec2 {
        Vec2::new(-self.x, -self.y)
    }
}

/// Wraps an angle into (-pi, pi].
pub fn normalize_angle(a: f64) -> f64 {
    let mut r = a.rem_euclid(std::f64::consts::TAU);
    if r > std::f64::consts::PI {
        r -= std::f64::consts::TAU;
    }
    r
}

/// Distance along the ray `origin + t * dir` (`dir` a unit vector, `t >= 0`) to the segment
/// `a`-`b`, or `None` if the ray misses it. A ray parallel to the segment never hits it
/// (segments have no thickness).
pub fn ray_segment(origin: Vec2, dir: Vec2, a: Vec2, b: Vec2) -> Option<f64> {
    let e = b - a;
    let denom = dir.cross(e);
    if denom.abs() < EPS {
        return None;
    }
    let ao = a - origin;
    let t = ao.cross(e) / denom;
    let s = ao.cross(dir) / denom;
    if t >= 0.0 && (0.0..=1.0).contains(&s) {
        Some(t)
    } else {
        None
    }
}

/// Distance along the ray (unit `dir`) to the circle of `radius` around `center`; 0 when the
/// origin is inside the circle; `None` if the ray misses it.
pub fn ray_circle(origin: Vec2, dir: Vec2, center: Vec2, radius: f64) -> Option<f64> {
    let m = origin - center;
    let b = m.dot(dir);
    let c = m.dot(m) - radius * radius;
    if c <= 0.0 {
        return Some(0.0);
    }
    if b > 0.0 {
        return None;
    }
    let disc = b * b - c;
    if disc < 0.0 {
        return None;
    }
    Some((-b - disc.sqrt()).max(0.0))
}

/// Distance along the ray (unit `dir`) to the axis-aligned box `min`..`max` (slab method); 0
/// when the origin is inside the box; `None` if the ray misses it.
pub fn ray_aabb(origin: Vec2, dir: Vec2, min: Vec2, max: Vec2) -> Option<f64> {
    let mut t_near = 0.0_f64;
    let mut t_far = f64::INFINITY;
    for (o, d, lo, hi) in [
        (origin.x, dir.x, min.x, max.x),
        (origin.y, dir.y, min.y, max.y),
    ] {
        if d.abs() < EPS {
            if o < lo || o > hi {
                return None;
            }
        } else {
            let t1 = (lo - o) / d;
            let t2 = (hi - o) / d;
            let (t1, t2) = if t1 <= t2 { (t1, t2) } else { (t2, t1) };
            t_near = t_near.max(t1);
            t_far = t_far.min(t2);
            if t_near > t_far {
                return None;
            }
        }
    }
    Some(t_near)
}

/// The point of segment `a`-`b` nearest to `p`.
pub fn closest_on_segment(p: Vec2, a: Vec2, b: Vec2) -> Vec2 {
    let e = b - a;
    let len2 = e.dot(e);
    if len2 < EPS {
        return a;
    }
    let s = ((p - a).dot(e) / len2).clamp(0.0, 1.0);
    a + e * s
}

/// An obstacle outline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// A wall of no thickness from the first point to the second.
    Segment(Vec2, Vec2),
    /// A disc: centre and radius.
    Circle(Vec2, f64),
    /// An axis-aligned rectangle: lower-left and upper-right corners.
    Rect(Vec2, Vec2),
}

impl Shape {
    /// Distance along the ray (unit `dir`) to this shape, or `None` if it misses.
    pub fn ray_hit(&self, origin: Vec2, dir: Vec2) -> Option<f64> {
        match *self {
            Shape::Segment(a, b) => ray_segment(origin, dir, a, b),
            Shape::Circle(c, r) => ray_circle(origin, dir, c, r),
            Shape::Rect(lo, hi) => ray_aabb(origin, dir, lo, hi),
        }
    }

    /// The point of the shape's outline (or of the segment) nearest to `p`.
    pub fn closest_point(&self, p: Vec2) -> Vec2 {
        match *self {
            Shape::Segment(a, b) => closest_on_segment(p, a, b),
            Shape::Circle(c, r) => {
                let d = p - c;
                let len = d.length();
                if len < EPS {
                    c + Vec2::new(r, 0.0)
                } else {
                    c + d * (r / len)
                }
            }
            Shape::Rect(lo, hi) => {
                let q = Vec2::new(p.x.clamp(lo.x, hi.x), p.y.clamp(lo.y, hi.y));
                if q != p {
                    return q;
                }
                // Inside: project onto the nearest side.
                let sides = [
                    (p.x - lo.x, Vec2::new(lo.x, p.y)),
                    (hi.x - p.x, Vec2::new(hi.x, p.y)),
                    (p.y - lo.y, Vec2::new(p.x, lo.y)),
                    (hi.y - p.y, Vec2::new(p.x, hi.y)),
                ];
                sides
                    .iter()
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|s| s.1)
                    .unwrap_or(p)
            }
        }
    }

    /// The unit normal of the outline at `p`, a point on it (a ray's hit point): for a
    /// segment either of its two normals, for a circle the outward one, for a rectangle the
    /// outward normal of the side nearest to `p`.
    pub fn normal_at(&self, p: Vec2) -> Vec2 {
        match *self {
            Shape::Segment(a, b) => {
                let e = b - a;
                let len = e.length();
                if len < EPS {
                    Vec2::new(1.0, 0.0)
                } else {
                    Vec2::new(-e.y / len, e.x / len)
                }
            }
            Shape::Circle(c, _) => {
                let d = p - c;
                let len = d.length();
                if len < EPS {
                    Vec2::new(1.0, 0.0)
                } else {
                    d * (1.0 / len)
                }
            }
            Shape::Rect(lo, hi) => {
                let sides = [
                    ((p.x - lo.x).abs(), Vec2::new(-1.0, 0.0)),
                    ((p.x - hi.x).abs(), Vec2::new(1.0, 0.0)),
                    ((p.y - lo.y).abs(), Vec2::new(0.0, -1.0)),
                    ((p.y - hi.y).abs(), Vec2::new(0.0, 1.0)),
                ];
                sides
                    .iter()
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map_or(Vec2::new(1.0, 0.0), |s| s.1)
            }
        }
    }

    /// Signed distance from `p` to the shape: positive outside, negative inside a circle or
    /// rectangle (segments are never "inside": the distance is then never negative).
    pub fn signed_distance(&self, p: Vec2) -> f64 {
        match *self {
            Shape::Segment(a, b) => (p - closest_on_segment(p, a, b)).length(),
            Shape::Circle(c, r) => (p - c).length() - r,
            Shape::Rect(lo, hi) => {
                let dx = (lo.x - p.x).max(p.x - hi.x);
                let dy = (lo.y - p.y).max(p.y - hi.y);
                if dx <= 0.0 && dy <= 0.0 {
                    dx.max(dy)
                } else {
                    dx.max(0.0).hypot(dy.max(0.0))
                }
            }
        }
    }
}

/// Something else in the world that moves: another robot or a puck, as a disc. The robot's
/// sensors and bumpers take these into account in the `*_among` methods.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Body {
    /// Centre, mm.
    pub center: Vec2,
    /// Radius, mm.
    pub radius: f64,
    /// Height, mm (for the camera).
    pub height: f64,
    /// The ACTS channel of its colour, if cameras should see it.
    pub channel: Option<u8>,
    /// Whether it stops robots and reflects sonar and laser (robots do; pucks lie below the
    /// sensors and are pushed, not bumped into).
    pub solid: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn ray_hits_segment_in_front_only() {
        let o = Vec2::new(0.0, 0.0);
        let a = Vec2::new(100.0, -50.0);
        let b = Vec2::new(100.0, 50.0);
        assert!(close(
            ray_segment(o, Vec2::new(1.0, 0.0), a, b).unwrap(),
            100.0
        ));
        assert_eq!(ray_segment(o, Vec2::new(-1.0, 0.0), a, b), None);
        assert_eq!(ray_segment(o, Vec2::new(0.0, 1.0), a, b), None);
        // 45 degrees hits the end point exactly.
        let d = Vec2::from_angle(std::f64::consts::FRAC_PI_4);
        let t = ray_segment(Vec2::new(50.0, 0.0), d, a, b).unwrap();
        assert!(close(t, 50.0 * std::f64::consts::SQRT_2));
    }

    #[test]
    fn ray_hits_circle_near_side() {
        let o = Vec2::new(0.0, 0.0);
        let c = Vec2::new(500.0, 0.0);
        assert!(close(
            ray_circle(o, Vec2::new(1.0, 0.0), c, 100.0).unwrap(),
            400.0
        ));
        assert_eq!(ray_circle(o, Vec2::new(-1.0, 0.0), c, 100.0), None);
        assert_eq!(ray_circle(o, Vec2::new(0.0, 1.0), c, 100.0), None);
        assert_eq!(ray_circle(c, Vec2::new(0.0, 1.0), c, 100.0), Some(0.0));
    }

    #[test]
    fn ray_hits_box_faces() {
        let lo = Vec2::new(100.0, 100.0);
        let hi = Vec2::new(200.0, 300.0);
        let o = Vec2::new(0.0, 200.0);
        assert!(close(
            ray_aabb(o, Vec2::new(1.0, 0.0), lo, hi).unwrap(),
            100.0
        ));
        assert_eq!(ray_aabb(o, Vec2::new(-1.0, 0.0), lo, hi), None);
        assert_eq!(ray_aabb(o, Vec2::new(0.0, 1.0), lo, hi), None);
        let below = Vec2::new(150.0, 0.0);
        assert!(close(
            ray_aabb(below, Vec2::new(0.0, 1.0), lo, hi).unwrap(),
            100.0
        ));
        assert_eq!(
            ray_aabb(Vec2::new(150.0, 150.0), Vec2::new(1.0, 0.0), lo, hi),
            Some(0.0)
        );
    }

    #[test]
    fn signed_distances() {
        let r = Shape::Rect(Vec2::new(0.0, 0.0), Vec2::new(100.0, 100.0));
        assert!(close(r.signed_distance(Vec2::new(50.0, 50.0)), -50.0));
        assert!(close(r.signed_distance(Vec2::new(103.0, 104.0)), 5.0));
        assert!(close(r.signed_distance(Vec2::new(50.0, 120.0)), 20.0));
        let c = Shape::Circle(Vec2::new(0.0, 0.0), 10.0);
        assert!(close(c.signed_distance(Vec2::new(30.0, 40.0)), 40.0));
        let s = Shape::Segment(Vec2::new(0.0, 0.0), Vec2::new(100.0, 0.0));
        assert!(close(s.signed_distance(Vec2::new(50.0, -7.0)), 7.0));
        assert!(close(s.signed_distance(Vec2::new(103.0, 4.0)), 5.0));
        assert_eq!(r.closest_point(Vec2::new(10.0, 50.0)), Vec2::new(0.0, 50.0));
    }

    #[test]
    fn angles_wrap() {
        assert!(close(
            normalize_angle(3.0 * std::f64::consts::PI),
            std::f64::consts::PI
        ));
        assert!(close(
            normalize_angle(-std::f64::consts::FRAC_PI_2),
            -std::f64::consts::FRAC_PI_2
        ));
        assert!(close(
            Vec2::new(1.0, 0.0).rotated(std::f64::consts::FRAC_PI_2).y,
            1.0
        ));
    }
}
