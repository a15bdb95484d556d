//! A laser obstacle avoider that wanders a building for as long as it is left running: a
//! client of the 0.7.4a `l` device (361 ranges, index `i` at `i / 2 - 90` degrees, 0 the
//! robot's right) and the position device, written as a pure step over one scan so that the
//! same code drives a robot over TCP (the `laser_avoid` example) and a simulated world in
//! fast simulated time (the simulator's tests, which drive it for ten simulated minutes in
//! `config/worlds/office-maze.toml`).
//!
//! Each round it works out, for headings every 5 degrees from 80 right to 80 left, how far
//! the robot (a disc of [`ROBOT_RADIUS_MM`] plus a margin) could drive that way before it
//! touched anything the scan shows, and steers toward the freest heading, preferring
//! straight ahead and the heading it chose last (so it neither weaves nor swaps between two
//! equally open ways). Its speed grows with the room ahead and shrinks as it turns. Where no
//! heading has room (a dead end, a corner met head-on) it turns on the spot, always the same
//! way until a way is open: the way the scan had more room when it started turning.
//!
//! ```
//! use player_client::avoid::LaserAvoider;
//! let mut avoider = LaserAvoider::default();
//! // A wall 400 mm ahead across the whole view: no room, so it turns on the spot.
//! let wall: Vec<u16> = (0..361)
//!     .map(|i| {
//!         let a = (f64::from(i) / 2.0 - 90.0).to_radians();
//!         (400.0 / a.cos().max(0.05)).min(8000.0) as u16
//!     })
//!     .collect();
//! let (speed, turn) = avoider.step(&wall);
//! assert_eq!(speed, 0);
//! assert_ne!(turn, 0);
//! ```

/// The radius of the robot's body, mm (the Pioneer 2-DX's, as the simulator has it).
pub const ROBOT_RADIUS_MM: f64 = 250.0;

/// How much wider than the robot the way it drives must be on each side, mm.
const MARGIN_MM: f64 = 60.0;

/// The headings it considers, degrees from straight ahead (positive left).
const HEADINGS: std::ops::RangeInclusive<i32> = -16..=16;
/// The step between them, degrees.
const HEADING_STEP: f64 = 5.0;

/// Room beyond this (mm) counts no more: a long way and a longer one are as good.
const ENOUGH_MM: f64 = 3000.0;

/// Below this much room along every heading it turns on the spot, mm.
const NO_ROOM_MM: f64 = 200.0;

/// Top speed, mm/s.
const TOP_SPEED: f64 = 400.0;

/// Turn rate on the spot, degrees per second.
const SPIN_DEG_S: i16 = 40;

/// The most turn rate it commands while driving, degrees per second.
const MAX_TURN_DEG_S: f64 = 60.0;

/// A laser avoider's state between rounds: the heading it chose last and, while it turns
/// on the spot, the way it turns.
#[derive(Debug, Clone, Default)]
pub struct LaserAvoider {
    /// The heading chosen last round, degrees from straight ahead.
    last: f64,
    /// While turning on the spot: +1 left, -1 right.
    spin: Option<i16>,
}

impl LaserAvoider {
    /// One round: from the `l` device's ranges (361 readings, mm, 0.5 degrees apart from
    /// the robot's right to its left; fewer are read as far as they go, missing ones as no
    /// return), the position command to send, `(speed mm/s, turn rate degrees/s
    /// counter-clockwise)`.
    pub fn step(&mut self, ranges: &[u16]) -> (i16, i16) {
        let points = points(ranges);
        let room = |deg: f64| room_along(&points, deg);
        if let Some(dir) = self.spin {
            // Turning on the spot until a way ahead is open enough to drive.
            if room(0.0) > 3.0 * NO_ROOM_MM + ROBOT_RADIUS_MM {
                self.spin = None;
                self.last = 0.0;
            } else {
                return (0, dir * SPIN_DEG_S);
            }
        }
        let mut best: Option<(f64, f64, f64)> = None;
        for k in HEADINGS {
            let deg = f64::from(k) * HEADING_STEP;
            let free = room(deg);
            let score = free.min(ENOUGH_MM) - 8.0 * deg.abs() - 6.0 * (deg - self.last).abs();
            if best.is_none_or(|(s, _, _)| score > s) {
                best = Some((score, deg, free));
            }
        }
        let Some((_, deg, free)) = best else {
            return (0, 0);
        };
        if free < NO_ROOM_MM {
            // No way open: turn on the spot toward the side with more room, and keep to it.
            let left: f64 = points
                .iter()
                .filter(|p| p.1 > 0.0)
                .map(|p| p.0.hypot(p.1))
                .sum();
            let right: f64 = points
                .iter()
                .filter(|p| p.1 < 0.0)
                .map(|p| p.0.hypot(p.1))
                .sum();
            let dir = if left >= right { 1 } else { -1 };
            self.spin = Some(dir);
            return (0, dir * SPIN_DEG_S);
        }
        self.last = deg;
        let ahead = room(0.0);
        let turn = (1.5 * deg).clamp(-MAX_TURN_DEG_S, MAX_TURN_DEG_S);
        // Slow for room ahead (to stop within it) and for a sharp turn.
        let speed =
            (0.8 * (ahead - 100.0)).clamp(0.0, TOP_SPEED) * (1.0 - deg.abs() / 90.0).max(0.0);
        (speed.round() as i16, turn.round() as i16)
    }
}

/// The scan as points in the robot's frame (x ahead, y left), mm; readings of 0 (no return)
/// are left out.
fn points(ranges: &[u16]) -> Vec<(f64, f64)> {
    ranges
        .iter()
        .take(361)
        .enumerate()
        .filter(|(_, &r)| r > 0)
        .map(|(i, &r)| {
            let a = (i as f64 / 2.0 - 90.0).to_radians();
            let r = f64::from(r);
            (r * a.cos(), r * a.sin())
        })
        .collect()
}

/// How far the robot, widened by the margin, can drive straight along `deg` (degrees from
/// ahead) before it touches one of `points`, mm (negative when it touches one already;
/// [`ENOUGH_MM`] and more when nothing is in the way).
fn room_along(points: &[(f64, f64)], deg: f64) -> f64 {
    let (s, c) = deg.to_radians().sin_cos();
    let half = ROBOT_RADIUS_MM + MARGIN_MM;
    let mut room = 2.0 * ENOUGH_MM;
    for &(x, y) in points {
        let along = x * c + y * s;
        let across = (y * c - x * s).abs();
        if along > 0.0 && across < half {
            room = room.min(along - (half * half - across * across).sqrt());
        }
    }
    room
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan of a straight wall `d` mm away at `wall_deg` degrees from ahead (positive
    /// left), no return elsewhere.
    fn wall_scan(d: f64, wall_deg: f64) -> Vec<u16> {
        (0..361)
            .map(|i| {
                let a = (f64::from(i) / 2.0 - 90.0 - wall_deg).to_radians();
                if a.cos() > 0.02 {
                    (d / a.cos()).min(8000.0) as u16
                } else {
                    0
                }
            })
            .collect()
    }

    #[test]
    fn open_space_straight_ahead_at_top_speed() {
        let mut a = LaserAvoider::default();
        assert_eq!(a.step(&[0u16; 361]), (400, 0));
        assert_eq!(a.step(&[8000u16; 361]), (400, 0));
    }

    #[test]
    fn a_wall_ahead_slows_it_and_one_in_its_face_turns_it_on_the_spot_one_way() {
        let mut a = LaserAvoider::default();
        let (speed, _) = a.step(&wall_scan(900.0, 0.0));
        assert!(speed > 0 && speed < 400, "{speed}");
        let mut a = LaserAvoider::default();
        let (speed, turn) = a.step(&wall_scan(300.0, 0.0));
        assert_eq!(speed, 0);
        // Still turning the same way a few rounds later, while nothing is open.
        for _ in 0..5 {
            assert_eq!(a.step(&wall_scan(300.0, 0.0)), (0, turn));
        }
    }

    #[test]
    fn a_wall_met_at_an_angle_steers_it_away() {
        // A wall ahead-left, slanting: it turns right (clockwise, negative).
        let mut a = LaserAvoider::default();
        let (_, turn) = a.step(&wall_scan(900.0, 40.0));
        assert!(turn < 0, "{turn}");
        let mut a = LaserAvoider::default();
        let (_, turn) = a.step(&wall_scan(900.0, -40.0));
        assert!(turn > 0, "{turn}");
    }
}
