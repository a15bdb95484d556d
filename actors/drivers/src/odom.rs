//! The base's odometry readings decoded into metres and radians, one decoder for every
//! driver that reads a base: the full-precision `P` (25 bytes) or a position device's
//! layout (21 bytes, `p`). The `amcl` driver carries its filter forward with it; the
//! `wavefront` driver reads the pose on the map and the base's speed with it.

use player_nav::pose::{normalize, Pose};
use player_proto::data::Position;
use player_proto::odometry::Odometry;

/// One odometry reading in SI units, with what a map-frame `p` copies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Odom {
    /// The pose in the odometry frame (heading in (-pi, pi]).
    pub pose: Pose,
    /// The reading's time field, ms since the server started.
    pub time: u32,
    /// Speed, mm/s.
    pub speed: i32,
    /// Turn rate, degrees/s.
    pub turn_rate: f64,
    /// The compass, degrees (a `p`-layout reading only).
    pub compass: Option<u16>,
    /// Stall.
    pub stall: u8,
}

/// Decodes odometry: 25 bytes of `P`, or 21 bytes of `p`'s layout; `None` otherwise.
pub fn odometry(b: &[u8]) -> Option<Odom> {
    if b.len() == Odometry::SIZE {
        let o = Odometry::decode(b).ok()?;
        return Some(Odom {
            pose: Pose::new(
                f64::from(o.x) / 1000.0,
                f64::from(o.y) / 1000.0,
                normalize(o.heading_rad()),
            ),
            time: o.time,
            speed: o.speed,
            turn_rate: f64::from(o.turn_rate) / 3600.0,
            compass: None,
            stall: o.stall,
        });
    }
    let p = Position::decode(b).ok()?;
    Some(Odom {
        pose: Pose::new(
            f64::from(p.x) / 1000.0,
            f64::from(p.y) / 1000.0,
            normalize(f64::from(p.heading).to_radians()),
        ),
        time: p.time,
        speed: i32::from(p.speed),
        turn_rate: f64::from(p.turn_rate),
        compass: Some(p.compass),
        stall: p.stall,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_layouts_decode_with_the_heading_normalised() {
        let p = Position {
            x: 1500,
            y: -200,
            heading: 270,
            speed: -120,
            ..Position::default()
        };
        let o = odometry(&p.encode()).unwrap();
        assert_eq!((o.pose.x, o.pose.y, o.speed), (1.5, -0.2, -120));
        assert!((o.pose.theta + std::f64::consts::FRAC_PI_2).abs() < 1e-12);
        let q = Odometry {
            x: 10,
            heading: 648_000,
            speed: 300,
            ..Odometry::default()
        };
        let o = odometry(&q.encode()).unwrap();
        assert!((o.pose.theta - std::f64::consts::PI).abs() < 1e-12);
        assert_eq!((o.speed, o.compass), (300, None));
        assert_eq!(odometry(&[1, 2, 3]), None);
    }
}
