//! The control steps of the Player 0.7.4a manual's two sonar examples, as pure functions of
//! one round's sonar ranges, so the same code drives a robot over TCP (the `hello` and
//! `sonar_avoid` examples) and a simulated world in fast simulated time (the simulator's
//! tests).
//!
//! Both take the 16 ranges of the Pioneer sonar ring in mm (index 0 on the robot's left,
//! numbering clockwise: 3 and 4 look ahead, 7 right, 8..15 the rear ring) and return the
//! position command to send this round, `(speed mm/s, turn rate degrees/s counter-clockwise)`.
//!
//! ```
//! use player_client::manual;
//! // Something 200 mm ahead: the figure stops and turns; the Java example backs off.
//! let mut sonar = [5000u16; 16];
//! sonar[3] = 200;
//! sonar[4] = 200;
//! assert_eq!(manual::hello_step(&sonar), (0, 20));
//! let (speed, _turn) = manual::sonar_avoid_step(&sonar);
//! assert!(speed < 0);
//! ```

/// One round of the manual's "hello world" (Figure 3): turn away from the nearer side at
/// 20 degrees per second, and drive at 100 mm/s unless something is within 500 mm of the
/// front sonar 3 (then stand and turn).
pub fn hello_step(sonar: &[u16; 16]) -> (i16, i16) {
    let turn =
        if u32::from(sonar[0]) + u32::from(sonar[1]) < u32::from(sonar[6]) + u32::from(sonar[7]) {
            -20 // turn 20 degrees per second
        } else {
            20
        };
    let speed = if sonar[3] < 500 { 0 } else { 100 };
    (speed, turn)
}

/// One round of the manual's Java "Obstacle avoidance using sonar" (Appendix C.4): the
/// nearest range of the left front sonars (1 to 3) sets the right wheel's share and that of
/// the right front sonars (4 to 6) the left's, each `100 * range / 300 - 100` capped at 150,
/// with Java's integer arithmetic (division truncates toward zero).
pub fn sonar_avoid_step(sonar: &[u16; 16]) -> (i16, i16) {
    let min_l = sonar[1..4]
        .iter()
        .copied()
        .map(i32::from)
        .min()
        .unwrap_or(0);
    let min_r = sonar[4..7]
        .iter()
        .copied()
        .map(i32::from)
        .min()
        .unwrap_or(0);
    let l = ((100 * min_r) / 300 - 100).min(150);
    let r = ((100 * min_l) / 300 - 100).min(150);
    // l and r are within -100..=150, so both sums fit an i16.
    ((r + l) as i16, (r - l) as i16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_turns_away_from_the_nearer_side_and_stops_before_obstacles() {
        let mut s = [3000u16; 16];
        s[0] = 800; // something on the left
        assert_eq!(hello_step(&s), (100, -20));
        let mut s = [3000u16; 16];
        s[7] = 800; // on the right
        assert_eq!(hello_step(&s), (100, 20));
        s[3] = 499;
        assert_eq!(hello_step(&s), (0, 20));
        s[3] = 500;
        assert_eq!(hello_step(&s), (100, 20));
    }

    #[test]
    fn sonar_avoid_matches_the_java_arithmetic() {
        // Open space: both shares capped at 150, straight ahead at 300 mm/s.
        assert_eq!(sonar_avoid_step(&[5000; 16]), (300, 0));
        // Left front at 200 mm, right clear: r = 100*200/300-100 = -34 (truncated), l = 150.
        let mut s = [5000u16; 16];
        s[2] = 200;
        assert_eq!(sonar_avoid_step(&s), (116, -184));
        // Only sonars 1..=6 count.
        let mut s = [5000u16; 16];
        s[0] = 100;
        s[7] = 100;
        s[12] = 100;
        assert_eq!(sonar_avoid_step(&s), (300, 0));
        // Both sides at 300 mm: parks.
        let mut s = [5000u16; 16];
        s[3] = 300;
        s[4] = 300;
        assert_eq!(sonar_avoid_step(&s), (0, 0));
    }
}
