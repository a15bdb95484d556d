//! The base's odometry readings decoded into metres and radians, one decoder for every
//! driver that reads a base: the full-precision `P` (25 bytes) or a position device's
//! layout (21 bytes, `p`). The `amcl` driver carries its filter forward with it; the
//! `wavefront` driver reads the pose on the map and the base's speed with it. Both follow
//! the odometry's frame across a reset with [`OdomFrame`].

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

/// Where a base's odometry frame lies in a frame that outlives it (the map's for the
/// `wavefront` driver, the `amcl` filter's own odometry frame), kept across the driver's
/// sessions.
///
/// A base's odometry starts again at zero each time the base is opened (the simulator's
/// and a Pioneer's do), and the base is closed when the driver reading it is (its last
/// holder gone): read against the first origin, the robot would jump back at the next
/// session to where it started. So when the first reading of a session is at the
/// odometry's zero and the last reading before was not, the odometry was reset, the
/// robot is taken to be where it was left, and the frame moves to keep it there. (A robot
/// moved while nobody held its base is not seen; a localizer sees it.) Within a session a
/// jump the driver's own rule calls a reset ([`OdomFrame::pose`]) moves it the same way.
#[derive(Debug, Clone, Copy)]
pub struct OdomFrame {
    origin: Pose,
    /// The last reading's pose in the odometry's frame, and whether a session has
    /// started since (the next reading is its first).
    last: Option<Pose>,
    fresh: bool,
}

/// A reading closer to the odometry's zero than this (m, rad) is at zero.
const AT_ZERO: f64 = 0.01;

fn at_zero(p: &Pose) -> bool {
    p.x.hypot(p.y) < AT_ZERO && p.theta.abs() < AT_ZERO
}

impl OdomFrame {
    /// The odometry's zero at `origin`.
    pub fn new(origin: Pose) -> Self {
        OdomFrame {
            origin,
            last: None,
            fresh: false,
        }
    }

    /// A new session starts: its first reading may show a reset.
    pub fn reopened(&mut self) {
        self.fresh = true;
    }

    /// The pose in the outer frame of a reading at `raw` in the odometry's frame, and
    /// whether the frame moved (a reset seen: at a session's start as above, or within a
    /// session when `jumped` says so of the last reading's `raw`).
    pub fn pose(&mut self, raw: Pose, jumped: impl FnOnce(&Pose) -> bool) -> (Pose, bool) {
        let reset = match self.last {
            Some(l) if self.fresh => at_zero(&raw) && !at_zero(&l),
            Some(l) => jumped(&l),
            None => false,
        };
        if let (true, Some(last)) = (reset, self.last) {
            let left_at = self.origin.compose(&last);
            self.origin = left_at.compose(&raw.relative(&Pose::default()));
        }
        self.fresh = false;
        self.last = Some(raw);
        (self.origin.compose(&raw), reset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jump_the_drivers_rule_calls_a_reset_keeps_the_robot_where_it_was() {
        let mut f = OdomFrame::new(Pose::default());
        f.pose(Pose::new(3.0, 1.0, 0.5), |_| false);
        // Reset by hand mid-session (a client's `x p R`): the rule says it jumped.
        let (p, reset) = f.pose(Pose::default(), |last| {
            last.distance(&Pose::default()) > 0.5
        });
        assert!(reset);
        assert!(p.distance(&Pose::new(3.0, 1.0, 0.5)) < 1e-9 && (p.theta - 0.5).abs() < 1e-9);
        // A step the rule calls motion is motion.
        let (q, reset) = f.pose(Pose::new(0.1, 0.0, 0.0), |_| false);
        assert!(!reset);
        assert!((q.distance(&p) - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_session_that_starts_at_zero_after_one_that_did_not_keeps_the_robot_where_it_was() {
        let mut f = OdomFrame::new(Pose::new(1.0, 1.0, 0.0));
        // First session: from zero to 1.9 m ahead, turned 80 degrees.
        assert_eq!(
            f.pose(Pose::default(), |_| false),
            (Pose::new(1.0, 1.0, 0.0), false)
        );
        let left = f
            .pose(Pose::new(1.9, 0.03, 80f64.to_radians()), |_| false)
            .0;
        // The base reopened: its odometry starts at zero again.
        f.reopened();
        let (p, reset) = f.pose(Pose::default(), |_| false);
        assert!(reset);
        assert!(
            p.distance(&left) < 1e-9 && (p.theta - left.theta).abs() < 1e-9,
            "{p:?}"
        );
        // Driving on from there: 1 m ahead of the robot's heading.
        let (q, again) = f.pose(Pose::new(1.0, 0.0, 0.0), |_| false);
        assert!(!again);
        let ahead = left.compose(&Pose::new(1.0, 0.0, 0.0));
        assert!(q.distance(&ahead) < 1e-9, "{q:?} {ahead:?}");
    }

    #[test]
    fn odometry_that_went_on_or_a_jump_within_a_session_moves_no_frame() {
        let o = Pose::new(1.0, 1.0, 0.0);
        let mut f = OdomFrame::new(o);
        f.pose(Pose::new(2.0, 0.0, 0.0), |_| false);
        // The base stayed open (another holder): its odometry went on from 2 m.
        f.reopened();
        assert_eq!(
            f.pose(Pose::new(2.5, 0.0, 0.0), |_| false),
            (o.compose(&Pose::new(2.5, 0.0, 0.0)), false)
        );
        // A localizer's map-frame pose that jumps within a session is taken as it is.
        assert_eq!(f.pose(Pose::default(), |_| false), (o, false));
        // A first session that starts anywhere: nothing to keep.
        let mut g = OdomFrame::new(o);
        g.reopened();
        assert_eq!(g.pose(Pose::default(), |_| false), (o, false));
    }

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
