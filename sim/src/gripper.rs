//! The simulated Pioneer 2 gripper: paddles that open and close in about 1 s and a lift that
//! goes up or down in about 2 s, driven by the P2OS gripper command numbers, reporting the
//! state and DIGIN bytes of the Player 0.7.4a gripper data (manual Table 7).
//!
//! The paddles can close on a puck (the world decides when one is between them, see
//! [`crate::SimWorld`]): they then stop at the puck and report closed. The break beams see
//! whatever solid lies straight ahead of the robot, and pucks between the paddles.

/// Seconds for the paddles to go from fully closed to fully open (or back).
pub const PADDLE_TRAVEL_S: f64 = 1.0;
/// Seconds for the lift to go from fully down to fully up (or back).
pub const LIFT_TRAVEL_S: f64 = 2.0;
/// P2OS gripper command numbers.
pub mod cmd {
    /// Open the paddles.
    pub const GRIP_OPEN: u8 = 1;
    /// Close the paddles.
    pub const GRIP_CLOSE: u8 = 2;
    /// Stop the paddles.
    pub const GRIP_STOP: u8 = 3;
    /// Raise the lift.
    pub const LIFT_UP: u8 = 4;
    /// Lower the lift.
    pub const LIFT_DOWN: u8 = 5;
    /// Stop the lift.
    pub const LIFT_STOP: u8 = 6;
    /// Close the paddles and raise the lift.
    pub const GRIP_STORE: u8 = 7;
    /// Open the paddles and lower the lift.
    pub const GRIP_DEPLOY: u8 = 8;
    /// Stop paddles and lift.
    pub const GRIP_HALT: u8 = 15;
    /// Close the paddles (the press time argument is ignored: there is nothing to grip).
    pub const GRIP_PRESS: u8 = 16;
    /// Move the lift for `arg` x 20 ms; `arg` as a signed byte, negative = down.
    pub const LIFT_CARRY: u8 = 17;
}

/// Gripper state byte bits (first byte of the `g` data).
pub mod state {
    /// Paddles fully open.
    pub const PADDLES_OPEN: u8 = 1 << 0;
    /// Paddles fully closed.
    pub const PADDLES_CLOSED: u8 = 1 << 1;
    /// Paddles moving.
    pub const PADDLES_MOVING: u8 = 1 << 2;
    /// Lift fully up.
    pub const LIFT_UP: u8 = 1 << 4;
    /// Lift fully down.
    pub const LIFT_DOWN: u8 = 1 << 5;
    /// Lift moving.
    pub const LIFT_MOVING: u8 = 1 << 6;
}

/// Gripper beams byte bits (second byte of the `g` data, the P2OS DIGIN byte).
pub mod beams {
    /// The paddles are at a limit of their travel (fully open or fully closed).
    pub const GRIP_LIMIT: u8 = 1 << 0;
    /// The lift is at a limit of its travel (fully up or fully down).
    pub const LIFT_LIMIT: u8 = 1 << 1;
    /// Outer break beam obstructed.
    pub const OUTER_BEAM: u8 = 1 << 2;
    /// Inner break beam obstructed.
    pub const INNER_BEAM: u8 = 1 << 3;
    /// Left paddle open.
    pub const LEFT_OPEN: u8 = 1 << 4;
    /// Right paddle open.
    pub const RIGHT_OPEN: u8 = 1 << 5;
}

/// Something closer than this (mm) ahead of the robot's front breaks the outer beam.
pub const OUTER_BEAM_MM: f64 = 150.0;
/// Something closer than this (mm) ahead of the robot's front breaks the inner beam.
pub const INNER_BEAM_MM: f64 = 75.0;

/// Paddle opening (0 closed .. 1 open) at which closing paddles stop on a held puck.
pub const HOLD_POSITION: f64 = 0.3;

/// Paddle and lift positions and motions.
#[derive(Debug, Clone, PartialEq)]
pub struct Gripper {
    /// A puck is between the closed paddles.
    holding: bool,
    /// 0 = closed, 1 = open.
    paddles: f64,
    /// -1 closing, 0 still, +1 opening.
    paddle_dir: f64,
    /// 0 = down, 1 = up.
    lift: f64,
    /// -1 lowering, 0 still, +1 raising.
    lift_dir: f64,
    /// Remaining time of a LIFTcarry move, seconds.
    lift_timer: Option<f64>,
}

impl Default for Gripper {
    /// Stored: paddles closed, lift up.
    fn default() -> Gripper {
        Gripper {
            holding: false,
            paddles: 0.0,
            paddle_dir: 0.0,
            lift: 1.0,
            lift_dir: 0.0,
            lift_timer: None,
        }
    }
}

impl Gripper {
    /// Applies a P2OS gripper command. Unknown commands are ignored.
    pub fn command(&mut self, c: u8, arg: u8) {
        match c {
            cmd::GRIP_OPEN => self.paddle_dir = 1.0,
            cmd::GRIP_CLOSE | cmd::GRIP_PRESS => self.paddle_dir = -1.0,
            cmd::GRIP_STOP => self.paddle_dir = 0.0,
            cmd::LIFT_UP => self.move_lift(1.0, None),
            cmd::LIFT_DOWN => self.move_lift(-1.0, None),
            cmd::LIFT_STOP => self.move_lift(0.0, None),
            cmd::GRIP_STORE => {
                self.paddle_dir = -1.0;
                self.move_lift(1.0, None);
            }
            cmd::GRIP_DEPLOY => {
                self.paddle_dir = 1.0;
                self.move_lift(-1.0, None);
            }
            cmd::GRIP_HALT => {
                self.paddle_dir = 0.0;
                self.move_lift(0.0, None);
            }
            cmd::LIFT_CARRY => {
                let signed = arg as i8;
                let dir = f64::from(signed.signum());
                self.move_lift(dir, Some(f64::from(signed.unsigned_abs()) * 0.02));
            }
            _ => {}
        }
        self.settle();
    }

    fn move_lift(&mut self, dir: f64, timer: Option<f64>) {
        self.lift_dir = dir;
        self.lift_timer = timer;
    }

    /// Paddle opening, 0 (closed) .. 1 (open).
    pub fn paddles(&self) -> f64 {
        self.paddles
    }

    /// Lift height, 0 (down) .. 1 (up).
    pub fn lift(&self) -> f64 {
        self.lift
    }

    /// Whether the paddles are closing.
    pub fn closing(&self) -> bool {
        self.paddle_dir < 0.0
    }

    /// Whether the paddles hold a puck.
    pub fn holding(&self) -> bool {
        self.holding
    }

    /// The world says a puck is (or is no longer) held between the paddles. While one is, the
    /// paddles cannot close past [`HOLD_POSITION`].
    pub fn set_holding(&mut self, holding: bool) {
        self.holding = holding;
        if holding {
            self.paddles = self.paddles.max(HOLD_POSITION);
        }
        self.settle();
    }

    /// How far the paddles can close: fully, or onto the held puck.
    fn closed_limit(&self) -> f64 {
        if self.holding {
            HOLD_POSITION
        } else {
            0.0
        }
    }

    /// Stops motions that have nowhere left to go.
    fn settle(&mut self) {
        if (self.paddle_dir > 0.0 && self.paddles >= 1.0)
            || (self.paddle_dir < 0.0 && self.paddles <= self.closed_limit())
        {
            self.paddle_dir = 0.0;
        }
        if (self.lift_dir > 0.0 && self.lift >= 1.0)
            || (self.lift_dir < 0.0 && self.lift <= 0.0)
            || self.lift_timer.is_some_and(|t| t <= 0.0)
        {
            self.lift_dir = 0.0;
            self.lift_timer = None;
        }
    }

    /// Moves paddles and lift on by `dt` seconds.
    pub fn advance(&mut self, dt: f64) {
        self.paddles =
            (self.paddles + self.paddle_dir * dt / PADDLE_TRAVEL_S).clamp(self.closed_limit(), 1.0);
        let mut lift_dt = dt;
        if let Some(t) = self.lift_timer.as_mut() {
            lift_dt = lift_dt.min(*t);
            *t -= dt;
        }
        self.lift = (self.lift + self.lift_dir * lift_dt / LIFT_TRAVEL_S).clamp(0.0, 1.0);
        self.settle();
    }

    /// The state byte (manual Table 7, first gripper byte).
    pub fn state_byte(&self) -> u8 {
        let mut s = 0;
        if self.paddles >= 1.0 {
            s |= state::PADDLES_OPEN;
        }
        if self.paddles <= self.closed_limit() {
            s |= state::PADDLES_CLOSED;
        }
        if self.paddle_dir != 0.0 {
            s |= state::PADDLES_MOVING;
        }
        if self.lift >= 1.0 {
            s |= state::LIFT_UP;
        }
        if self.lift <= 0.0 {
            s |= state::LIFT_DOWN;
        }
        if self.lift_dir != 0.0 {
            s |= state::LIFT_MOVING;
        }
        s
    }

    /// The beams byte, given the free distance (mm) straight ahead of the robot's front.
    pub fn beams_byte(&self, ahead_of_front_mm: f64) -> u8 {
        self.beams_byte_with(ahead_of_front_mm, false, false)
    }

    /// The beams byte, given the free distance (mm) straight ahead of the robot's front and
    /// whether a puck between the paddles breaks the outer and the inner beam.
    pub fn beams_byte_with(
        &self,
        ahead_of_front_mm: f64,
        outer_puck: bool,
        inner_puck: bool,
    ) -> u8 {
        let mut b = 0;
        if self.paddle_dir == 0.0 && (self.paddles <= self.closed_limit() || self.paddles >= 1.0) {
            b |= beams::GRIP_LIMIT;
        }
        if self.lift_dir == 0.0 && (self.lift <= 0.0 || self.lift >= 1.0) {
            b |= beams::LIFT_LIMIT;
        }
        if ahead_of_front_mm < OUTER_BEAM_MM || outer_puck {
            b |= beams::OUTER_BEAM;
        }
        if ahead_of_front_mm < INNER_BEAM_MM || inner_puck {
            b |= beams::INNER_BEAM;
        }
        if self.paddles >= 1.0 {
            b |= beams::LEFT_OPEN | beams::RIGHT_OPEN;
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(g: &mut Gripper, seconds: f64) {
        for _ in 0..(seconds * 100.0).round() as usize {
            g.advance(0.01);
        }
    }

    #[test]
    fn starts_stored() {
        let g = Gripper::default();
        assert_eq!(g.state_byte(), state::PADDLES_CLOSED | state::LIFT_UP);
        assert_eq!(g.beams_byte(1000.0), beams::GRIP_LIMIT | beams::LIFT_LIMIT);
    }

    #[test]
    fn open_takes_about_a_second() {
        let mut g = Gripper::default();
        g.command(cmd::GRIP_OPEN, 0);
        run(&mut g, 0.5);
        assert_eq!(g.state_byte(), state::PADDLES_MOVING | state::LIFT_UP);
        run(&mut g, 0.6);
        assert_eq!(g.state_byte(), state::PADDLES_OPEN | state::LIFT_UP);
        let b = g.beams_byte(1000.0);
        assert_eq!(b & (beams::LEFT_OPEN | beams::RIGHT_OPEN), 0x30);
    }

    #[test]
    fn deploy_then_store() {
        let mut g = Gripper::default();
        g.command(cmd::GRIP_DEPLOY, 0);
        run(&mut g, 1.0);
        // Paddles are open, lift still on its way down.
        assert_eq!(g.state_byte(), state::PADDLES_OPEN | state::LIFT_MOVING);
        run(&mut g, 1.1);
        assert_eq!(g.state_byte(), state::PADDLES_OPEN | state::LIFT_DOWN);
        g.command(cmd::GRIP_STORE, 0);
        assert_eq!(
            g.state_byte(),
            state::PADDLES_OPEN | state::PADDLES_MOVING | state::LIFT_DOWN | state::LIFT_MOVING
        );
        run(&mut g, 2.1);
        assert_eq!(g.state_byte(), state::PADDLES_CLOSED | state::LIFT_UP);
    }

    #[test]
    fn halt_stops_midway() {
        let mut g = Gripper::default();
        g.command(cmd::GRIP_DEPLOY, 0);
        run(&mut g, 0.5);
        g.command(cmd::GRIP_HALT, 0);
        run(&mut g, 1.0);
        // Neither open nor closed, neither up nor down, nothing moving.
        assert_eq!(g.state_byte(), 0);
    }

    #[test]
    fn lift_carry_moves_for_the_given_time() {
        let mut g = Gripper::default();
        // -50 x 20 ms = 1 s down: half the travel.
        g.command(cmd::LIFT_CARRY, (-50i8) as u8);
        run(&mut g, 0.5);
        assert_ne!(g.state_byte() & state::LIFT_MOVING, 0);
        run(&mut g, 1.0);
        assert_eq!(g.state_byte(), state::PADDLES_CLOSED);
        assert!((g.lift - 0.5).abs() < 0.02);
    }

    #[test]
    fn beams_see_close_things() {
        let g = Gripper::default();
        assert_ne!(g.beams_byte(100.0) & beams::OUTER_BEAM, 0);
        assert_eq!(g.beams_byte(100.0) & beams::INNER_BEAM, 0);
        assert_ne!(g.beams_byte(10.0) & beams::INNER_BEAM, 0);
    }
}
