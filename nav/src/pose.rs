//! Planar poses (x, y in metres, theta in radians) and the angle arithmetic every part of
//! the crate shares: normalising to (-pi, pi], differences, composing and inverting poses.

use std::f64::consts::PI;

/// A pose in the plane: position in metres, heading in radians (counter-clockwise from +x).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pose {
    /// x, metres.
    pub x: f64,
    /// y, metres.
    pub y: f64,
    /// Heading, radians.
    pub theta: f64,
}

impl Pose {
    /// A pose from its three parts.
    pub const fn new(x: f64, y: f64, theta: f64) -> Pose {
        Pose { x, y, theta }
    }

    /// `self` followed by `d` given in `self`'s frame (the pose of `d` in the outer frame).
    pub fn compose(&self, d: &Pose) -> Pose {
        let (s, c) = self.theta.sin_cos();
        Pose {
            x: self.x + c * d.x - s * d.y,
            y: self.y + s * d.x + c * d.y,
            theta: normalize(self.theta + d.theta),
        }
    }

    /// The pose of `other` seen from `self` (so that `self.compose(&self.relative(other))`
    /// is `other`).
    pub fn relative(&self, other: &Pose) -> Pose {
        let (s, c) = self.theta.sin_cos();
        let (dx, dy) = (other.x - self.x, other.y - self.y);
        Pose {
            x: c * dx + s * dy,
            y: -s * dx + c * dy,
            theta: angle_diff(other.theta, self.theta),
        }
    }

    /// Euclidean distance between the positions of two poses.
    pub fn distance(&self, other: &Pose) -> f64 {
        (self.x - other.x).hypot(self.y - other.y)
    }
}

/// `a` brought into (-pi, pi].
pub fn normalize(a: f64) -> f64 {
    if a > -PI && a <= PI {
        return a;
    }
    let r = a.rem_euclid(2.0 * PI);
    if r > PI {
        r - 2.0 * PI
    } else {
        r
    }
}

/// `a - b`, normalised into (-pi, pi].
pub fn angle_diff(a: f64, b: f64) -> f64 {
    normalize(a - b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_keeps_the_half_open_interval() {
        assert_eq!(normalize(PI), PI);
        assert!((normalize(-PI) - PI).abs() < 1e-12);
        assert!((normalize(3.0 * PI) - PI).abs() < 1e-12);
        assert!((normalize(-0.5 - 4.0 * PI) + 0.5).abs() < 1e-12);
        assert_eq!(normalize(0.25), 0.25);
    }

    #[test]
    fn compose_and_relative_are_inverse() {
        let a = Pose::new(1.0, -2.0, 2.5);
        let b = Pose::new(-3.0, 0.5, -2.9);
        let d = a.relative(&b);
        let back = a.compose(&d);
        assert!((back.x - b.x).abs() < 1e-12 && (back.y - b.y).abs() < 1e-12);
        assert!(angle_diff(back.theta, b.theta).abs() < 1e-12);
        assert!((a.distance(&b) - d.x.hypot(d.y)).abs() < 1e-12);
    }
}
