//! The navigation devices from a client (extensions, docs/extensions.md): the map `M`
//! downloaded tile by tile, the localizer `H` (its particles, setting its pose, global
//! localization) and the planner `G` (goals, waypoints, enable, cancel). Readings of `M`,
//! `H`, `G`, `O` and `P` are in [`Round`](crate::Round); these are the configs and
//! commands, whose answers [`Client::ask`] waits for.

use crate::client::Client;
use crate::error::Error;
use player_proto::device;
use player_proto::nav::{
    self, code, Goal, MapInfo, Particle, Particles, Planner, SetPose, Tile, TileRequest, Waypoints,
};
use player_proto::odometry::ARCSEC_PER_RAD;
use std::time::{Duration, Instant};

/// How long after a goal is sent a planner reading that says it ended is believed without
/// one that showed the goal under way first: the rounds read in that time may have been
/// built before the server took the goal.
pub const GOAL_SETTLE: Duration = Duration::from_millis(500);

/// Tells when a goal sent to the planner has ended, from the planner's readings that
/// follow ([`Client::goto`] uses it; a client with its own loop can too). A reading that
/// says "ended" counts once a reading showed this goal under way, or [`GOAL_SETTLE`]
/// after the goal was sent: before that it may be about the previous goal (the same goal
/// reached before, or a goal that had no path).
#[derive(Debug, Clone, Copy)]
pub struct GoalWatch {
    goal: [i32; 3],
    sent: Instant,
    under_way: bool,
}

impl GoalWatch {
    /// Watches `goal` (mm, mm, degrees), sent now.
    pub fn new(goal: [i32; 3]) -> Self {
        GoalWatch {
            goal,
            sent: Instant::now(),
            under_way: false,
        }
    }

    /// How long ago it was sent.
    pub fn elapsed(&self) -> Duration {
        self.sent.elapsed()
    }

    /// Whether planner reading `p` says the goal has ended (then `p.state` says how).
    pub fn ended(&mut self, p: &Planner) -> bool {
        if p.goal == self.goal && !p.state.ends_goal() {
            self.under_way = true;
        }
        (self.under_way || self.sent.elapsed() >= GOAL_SETTLE) && p.goal_ended(self.goal)
    }
}

/// A decoding error of an answer of `device`.
fn bad(device: u8) -> impl Fn(player_proto::data::DataError) -> Error {
    move |error| Error::Data { device, error }
}

impl Client {
    /// Reads until the map device's reading (`M`, which the client must read) is in the
    /// round, and returns it (the round's if one came already).
    pub fn map_info(&mut self) -> Result<MapInfo, Error> {
        loop {
            if let Some(m) = self.round().map {
                return Ok(m);
            }
            self.read_packet()?;
        }
    }

    /// One tile of the map (`x M t`): the cells of the rectangle asked for, cut to the map
    /// and to [`nav::MAX_TILE_CELLS`] (the answer says which rectangle it holds).
    pub fn map_tile(&mut self, rect: TileRequest) -> Result<Tile, Error> {
        let args = rect.encode();
        let body = self.ask(device::MAP, code::TILE, &args[1..])?;
        Tile::decode(&body).map_err(bad(device::MAP))
    }

    /// The whole map of `info` (from [`Client::map_info`]), tile by tile: its cells row by
    /// row from the lower-left (-1 free, 0 unknown, +1 occupied). Fails if the map changes
    /// meanwhile (a tile of another `map_id`): read the new `M` and download again.
    pub fn download_map(&mut self, info: &MapInfo) -> Result<Vec<i8>, Error> {
        let w = info.width as usize;
        let mut cells = vec![0i8; w * info.height as usize];
        for rect in info.tiles() {
            let t = self.map_tile(rect)?;
            if t.map_id != info.map_id || t.rect != rect {
                return Err(Error::Data {
                    device: device::MAP,
                    error: player_proto::data::DataError::BadNav(
                        "the map changed during its download",
                    ),
                });
            }
            let (tw, th) = (rect.width as usize, rect.height as usize);
            for r in 0..th {
                let at = (rect.row as usize + r) * w + rect.col as usize;
                cells[at..at + tw].copy_from_slice(&t.cells[r * tw..(r + 1) * tw]);
            }
        }
        Ok(cells)
    }

    /// The localizer's particles (`x H g`), every answer of the one config put together:
    /// the set's mean and variance and all its particles (`first` 0, `total` their count).
    pub fn particles(&mut self) -> Result<Particles, Error> {
        let body = self.ask(device::LOCALIZE, code::PARTICLES, &[])?;
        let mut all = Particles::decode(&body).map_err(bad(device::LOCALIZE))?;
        let total = all.total as usize;
        let mut got: Vec<Particle> = std::mem::take(&mut all.particles);
        while got.len() < total {
            let body = self.wait_answer(device::LOCALIZE, code::PARTICLES)?;
            let more = Particles::decode(&body).map_err(bad(device::LOCALIZE))?;
            if more.first as usize != got.len() || more.particles.is_empty() {
                return Err(Error::Data {
                    device: device::LOCALIZE,
                    error: player_proto::data::DataError::BadNav("particle answers out of order"),
                });
            }
            got.extend(more.particles);
        }
        all.particles = got;
        all.first = 0;
        Ok(all)
    }

    /// Sets the localizer's pose estimate (`x H s`): `x`, `y` mm and `heading` degrees,
    /// with standard deviations `sd_xy` mm and `sd_heading` degrees.
    pub fn set_pose(
        &mut self,
        x: i32,
        y: i32,
        heading: f64,
        sd_xy: f64,
        sd_heading: f64,
    ) -> Result<(), Error> {
        let arcsec = |deg: f64| deg.to_radians() * ARCSEC_PER_RAD;
        let var_xy = (sd_xy * sd_xy).round() as i64;
        let var_th = arcsec(sd_heading).powi(2).round() as i64;
        let pose = SetPose {
            mean: [x, y, arcsec(heading).round() as i32],
            cov: [[var_xy, 0, 0], [0, var_xy, 0], [0, 0, var_th]],
        };
        self.send_raw(&nav::set_pose_config(pose))
    }

    /// Starts global localization (`x H G`): the particles spread over the free space.
    pub fn global_localization(&mut self) -> Result<(), Error> {
        self.send_raw(&nav::global_config())
    }

    /// Sends the planner a goal (`c G`, which needs write access): `x`, `y` mm and the
    /// heading `a` in degrees. A new goal replaces the old.
    pub fn set_goal(&mut self, x: i32, y: i32, a: i32) -> Result<(), Error> {
        self.command(device::PLANNER, &Goal { x, y, a }.encode())
    }

    /// Sends the planner the goal `x`, `y` mm, heading `a` degrees, and reads rounds until
    /// it has ended ([`GoalWatch`]); returns the planner's reading then, whose `state`
    /// says how (`Reached`, or `NoPath`, `EStopped`, `Preempted`, `Idle` when cancelled).
    /// The client must read `G` and have write access to it (`request("Ga")`).
    /// [`Error::Timeout`] after `timeout` (the goal is left as it is: cancel it with
    /// [`Client::planner_cancel`], or close the connection, which stops the robot).
    pub fn goto(
        &mut self,
        x: i32,
        y: i32,
        a: i32,
        timeout: Option<Duration>,
    ) -> Result<Planner, Error> {
        self.set_goal(x, y, a)?;
        let mut watch = GoalWatch::new([x, y, a]);
        loop {
            if timeout.is_some_and(|t| watch.elapsed() > t) {
                return Err(Error::Timeout);
            }
            if let Some(p) = self.read()?.planner {
                if watch.ended(&p) {
                    return Ok(p);
                }
            }
        }
    }

    /// The plan's waypoints (`x G w`): x mm, y mm, heading degrees, at most
    /// [`nav::MAX_WAYPOINTS`].
    pub fn waypoints(&mut self) -> Result<Vec<[i32; 3]>, Error> {
        let body = self.ask(device::PLANNER, code::WAYPOINTS, &[])?;
        Ok(Waypoints::decode(&body).map_err(bad(device::PLANNER))?.0)
    }

    /// Enables (`true`) or disables the planner's motion (`x G e`).
    pub fn planner_enable(&mut self, on: bool) -> Result<(), Error> {
        self.send_raw(&nav::enable_config(on))
    }

    /// Cancels the planner's goal (`x G c`); the base stops.
    pub fn planner_cancel(&mut self) -> Result<(), Error> {
        self.send_raw(&nav::cancel_config())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_proto::nav::PlannerState;

    fn planner(state: PlannerState, goal: [i32; 3]) -> Planner {
        Planner {
            state,
            goal,
            ..Planner::default()
        }
    }

    #[test]
    fn a_goal_ends_only_on_a_reading_about_it() {
        let goal = [2000, 1000, 90];
        let mut w = GoalWatch::new(goal);
        // The same goal reached before, and a refusal of an earlier goal: read at once
        // after sending, they may be from before it.
        assert!(!w.ended(&planner(PlannerState::Reached, goal)));
        assert!(!w.ended(&planner(PlannerState::NoPath, [0; 3])));
        // Under way: from then on its end counts.
        assert!(!w.ended(&planner(PlannerState::Planning, goal)));
        assert!(!w.ended(&planner(PlannerState::Blocked, goal)));
        assert!(!w.ended(&planner(PlannerState::Reached, [1, 2, 3])));
        assert!(w.ended(&planner(PlannerState::Reached, goal)));
        let mut w = GoalWatch::new(goal);
        assert!(!w.ended(&planner(PlannerState::Driving, goal)));
        assert!(w.ended(&planner(PlannerState::Idle, goal)), "cancelled");
        // A refusal ends it whatever goal it names.
        let mut w = GoalWatch::new(goal);
        w.under_way = true;
        assert!(w.ended(&planner(PlannerState::EStopped, [0; 3])));
    }
}
