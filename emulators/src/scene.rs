//! The scene the laser and base emulators see: a rectangular room (walls at x = 0, x =
//! width, y = 0, y = height, metres) with round obstacles, and a pose in it. Pure geometry,
//! shared with the tests, which compute the truth the drivers' readings must match.

/// A round obstacle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Circle {
    /// Centre x, m.
    pub x: f64,
    /// Centre y, m.
    pub y: f64,
    /// Radius, m.
    pub r: f64,
}

/// A pose: position (m) and heading (rad, counter-clockwise from +x).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pose {
    /// x, m.
    pub x: f64,
    /// y, m.
    pub y: f64,
    /// Heading, rad.
    pub heading: f64,
}

/// A room with round obstacles.
#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    /// Room size along x, m.
    pub width: f64,
    /// Room size along y, m.
    pub height: f64,
    /// The obstacles.
    pub circles: Vec<Circle>,
}

/// Where the emulated lasers sit in [`Scene::room`]: facing +x, 2 m from the left wall.
pub const LASER_POSE: Pose = Pose {
    x: 2.0,
    y: 3.0,
    heading: 0.0,
};

impl Scene {
    /// The default scene: an 8 m x 6 m room with two round obstacles, both seen from
    /// [`LASER_POSE`] on its left only (60 degrees left at 1.2 m; 30 degrees left at
    /// 2.5 m), so a laser whose angles run the wrong way sees them on the right.
    pub fn room() -> Scene {
        let at = |deg: f64, d: f64, r: f64| Circle {
            x: LASER_POSE.x + d * deg.to_radians().cos(),
            y: LASER_POSE.y + d * deg.to_radians().sin(),
            r,
        };
        Scene {
            width: 8.0,
            height: 6.0,
            circles: vec![at(60.0, 1.2, 0.3), at(30.0, 2.5, 0.25)],
        }
    }

    /// An empty room (for a base that should drive freely).
    pub fn empty(width: f64, height: f64) -> Scene {
        Scene {
            width,
            height,
            circles: Vec::new(),
        }
    }

    /// The distance (m) from `pose` along the direction `angle` (rad, counter-clockwise
    /// from the pose's heading) to the first wall or obstacle.
    pub fn range(&self, pose: Pose, angle: f64) -> f64 {
        let a = pose.heading + angle;
        let (dx, dy) = (a.cos(), a.sin());
        let mut best = f64::INFINITY;
        // Walls: the ray leaves the room through one of them.
        if dx > 1e-12 {
            best = best.min((self.width - pose.x) / dx);
        } else if dx < -1e-12 {
            best = best.min(-pose.x / dx);
        }
        if dy > 1e-12 {
            best = best.min((self.height - pose.y) / dy);
        } else if dy < -1e-12 {
            best = best.min(-pose.y / dy);
        }
        for c in &self.circles {
            let (ox, oy) = (pose.x - c.x, pose.y - c.y);
            let b = ox * dx + oy * dy;
            let cc = ox * ox + oy * oy - c.r * c.r;
            let disc = b * b - cc;
            if disc >= 0.0 {
                let t = -b - disc.sqrt();
                if t > 0.0 {
                    best = best.min(t);
                }
            }
        }
        best.max(0.0)
    }

    /// Whether a disc of `radius` at (`x`, `y`) touches a wall or an obstacle; if so, the
    /// direction (rad, world frame) from its centre to the contact.
    pub fn contact(&self, x: f64, y: f64, radius: f64) -> Option<f64> {
        let mut hits = Vec::new();
        if x - radius <= 0.0 {
            hits.push(std::f64::consts::PI);
        }
        if x + radius >= self.width {
            hits.push(0.0);
        }
        if y - radius <= 0.0 {
            hits.push(-std::f64::consts::FRAC_PI_2);
        }
        if y + radius >= self.height {
            hits.push(std::f64::consts::FRAC_PI_2);
        }
        for c in &self.circles {
            if (c.x - x).hypot(c.y - y) <= c.r + radius {
                hits.push((c.y - y).atan2(c.x - x));
            }
        }
        hits.first().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_hit_walls_and_the_obstacles_on_the_left() {
        let s = Scene::room();
        assert!((s.range(LASER_POSE, 0.0) - 6.0).abs() < 1e-9);
        assert!((s.range(LASER_POSE, std::f64::consts::PI) - 2.0).abs() < 1e-9);
        assert!((s.range(LASER_POSE, 60f64.to_radians()) - 0.9).abs() < 1e-9);
        // The mirror direction sees the wall at y = 0.
        let right = s.range(LASER_POSE, -60f64.to_radians());
        assert!((right - 3.0 / 60f64.to_radians().sin()).abs() < 1e-9);
        assert!((s.range(LASER_POSE, 30f64.to_radians()) - 2.25).abs() < 1e-9);
    }

    #[test]
    fn contact_with_walls_and_obstacles() {
        let s = Scene::room();
        assert_eq!(s.contact(4.0, 3.0, 0.17), None);
        assert_eq!(s.contact(7.9, 3.0, 0.17), Some(0.0));
        let c = s.circles[0];
        assert!(s.contact(c.x - 0.4, c.y, 0.17).is_some());
    }
}
