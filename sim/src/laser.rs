//! The simulated scanning laser's description: field of view, resolution and range (the
//! Pioneer's SICK by default, or a 360-degree laser like an RPLIDAR's). World files set it per
//! robot (`map.rs`); the robot casts its rays by it (`robot.rs`).

/// Laser maximum range (reported when nothing is hit), mm.
pub const LASER_MAX_MM: f64 = 8000.0;

/// A simulated scanning laser, centred on straight ahead.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaserSpec {
    /// Field of view, degrees (at most 360; 360 is a full circle, like an RPLIDAR's).
    pub fov_deg: f64,
    /// Angle between readings, degrees.
    pub resolution_deg: f64,
    /// Maximum range, mm: a ray that hits nothing closer is no return.
    pub max_mm: f64,
}

impl Default for LaserSpec {
    /// The SICK LMS-200 of the Pioneer: 180 degrees at 0.5 degree steps, 8 m.
    fn default() -> LaserSpec {
        LaserSpec {
            fov_deg: 180.0,
            resolution_deg: 0.5,
            max_mm: LASER_MAX_MM,
        }
    }
}

impl LaserSpec {
    /// Whether the readings go all the way round (the last one a step short of the first).
    pub fn full_circle(&self) -> bool {
        self.fov_deg >= 360.0 - self.resolution_deg * 0.5
    }

    /// Number of readings per scan: both ends of the field of view, or one turn's worth
    /// for a full circle.
    pub fn count(&self) -> usize {
        let steps = (self.fov_deg / self.resolution_deg).round() as usize;
        if self.full_circle() {
            steps
        } else {
            steps + 1
        }
    }

    /// Angle of the first reading (the right end of the field of view), degrees, counter-
    /// clockwise from straight ahead.
    pub fn first_deg(&self) -> f64 {
        -self.fov_deg / 2.0
    }
}
