//! `[[event]]`: what happens to a world at set instants of simulated time, read from the
//! world file and checked against its robots and solids. The one kind so far is a carry: a
//! robot picked up and put down elsewhere, as someone carries a real robot (its true pose
//! jumps; its odometry does not), once or every so often, to one place, to each of a list
//! in turn, or to a random free place drawn from the world's seed.
//!
//! Checks run in a fixed order (`at`, `every`, `times`, `robot`, then the destination), so
//! the same bad file always gets the same error, naming its key (`event[2].robot`,
//! `event[0].to[3]`). A fixed destination where the robot would overlap a wall or obstacle,
//! or leave the world, is refused here; firing the events is [`crate::SimWorld`]'s.

use config::{Value, ValueKind};
use serde::Deserialize;

use super::{WorldError, WorldMap, ROBOT_RADIUS_MM};
use crate::geom::Vec2;
use crate::STEP_S;

/// The most `[[event]]`s a world file may hold.
pub const MAX_EVENTS: usize = 10_000;

/// The most destinations one event's `to` list may hold.
pub const MAX_DESTINATIONS: usize = 10_000;

/// `[[event]]`, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EventSpec {
    at: f64,
    robot: Option<String>,
    move_to: Option<Value>,
    to: Option<Vec<Vec<f64>>>,
    every: Option<f64>,
    times: Option<u64>,
}

/// Where a carry puts the robot down.
#[derive(Debug, Clone, PartialEq)]
pub enum Destination {
    /// These poses (x mm, y mm, heading radians): the first firing to the first, the next
    /// to the next, cycling (`move_to = [x, y, deg]` is a list of one).
    Poses(Vec<(f64, f64, f64)>),
    /// A random pose (`move_to = "random"`): a place clear of the solids and of the other
    /// robots, reachable from where the world's robots start, facing anywhere; drawn from
    /// the world's seed, so the same seed gives the same places.
    Random,
}

/// One `[[event]]` of a world file, checked: robot `robot` is carried to `destination` at
/// `at` seconds of simulated time, then every `every` seconds, `times` times in all.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldEvent {
    /// Simulated seconds since the world started at which it first fires (0 or more).
    pub at: f64,
    /// Simulated seconds between firings, if it repeats (at least one physics step).
    pub every: Option<f64>,
    /// How many times it fires in all: 1 without `every`; with it, the file's `times` or
    /// `None`, for ever.
    pub times: Option<u64>,
    /// The robot carried: its index in [`WorldMap::robots`] (0 when the file places none
    /// and one robot stands at the start pose).
    pub robot: usize,
    /// Where it is put down.
    pub destination: Destination,
}

impl WorldEvent {
    /// The physics step (counted from the world's start) at whose end firing number `n`
    /// (from 0) falls, or `None` when it never fires that often.
    pub fn tick_of(&self, n: u64) -> Option<u64> {
        if self.times.is_some_and(|t| n >= t) {
            return None;
        }
        let first = ticks(self.at);
        match self.every {
            None => (n == 0).then_some(first),
            Some(every) => n
                .checked_mul(ticks(every).max(1))
                .and_then(|d| d.checked_add(first)),
        }
    }
}

/// Simulated seconds as whole physics steps (rounded; saturating).
fn ticks(seconds: f64) -> u64 {
    // `as` saturates: a time past the end of u64 steps never comes.
    (seconds / STEP_S).round() as u64
}

impl WorldMap {
    /// The `[[event]]`s, after the robots are placed (an event names one).
    pub(super) fn add_events(
        &mut self,
        origin: &str,
        events: &[EventSpec],
    ) -> Result<(), WorldError> {
        if events.len() > MAX_EVENTS {
            return Err(WorldError::key(
                origin,
                "event",
                format!(
                    "a world holds at most {MAX_EVENTS} events, got {}",
                    events.len()
                ),
            ));
        }
        for (i, spec) in events.iter().enumerate() {
            let event = self.event(origin, i, spec)?;
            self.events.push(event);
        }
        Ok(())
    }

    /// `[[event]]` number `i` checked.
    fn event(&self, origin: &str, i: usize, spec: &EventSpec) -> Result<WorldEvent, WorldError> {
        let key = format!("event[{i}]");
        let bad = |k: &str, why: String| WorldError::key(origin, format!("{key}.{k}"), why);
        if !(spec.at.is_finite() && spec.at >= 0.0) {
            return Err(bad(
                "at",
                format!(
                    "expected seconds of simulated time since the world started, 0 or more, \
                     got {}",
                    spec.at
                ),
            ));
        }
        if let Some(every) = spec.every {
            if !(every.is_finite() && every >= STEP_S) {
                return Err(bad(
                    "every",
                    format!(
                        "expected seconds between firings, at least one physics step \
                         ({STEP_S}), got {every}"
                    ),
                ));
            }
        }
        let times = match (spec.times, spec.every) {
            (Some(0), _) => return Err(bad("times", "expected 1 or more, got 0".into())),
            (Some(t), Some(_)) => Some(t),
            (Some(_), None) => {
                return Err(bad(
                    "times",
                    "`times` counts the firings of a repeating event: give `every` too".into(),
                ))
            }
            (None, Some(_)) => None,
            (None, None) => Some(1),
        };
        let robot = self.event_robot(origin, &key, spec.robot.as_deref())?;
        let destination = match (&spec.move_to, &spec.to) {
            (Some(_), Some(_)) => {
                return Err(WorldError::key(
                    origin,
                    key,
                    "give `move_to` or `to`, not both",
                ))
            }
            (None, None) => {
                return Err(WorldError::key(
                    origin,
                    key,
                    "an event needs an action: `move_to = [x, y, heading_degrees]`, \
                     `move_to = \"random\"` or `to = [[x, y, heading_degrees], ...]`",
                ))
            }
            (Some(v), None) => self.move_to(origin, &format!("{key}.move_to"), v)?,
            (None, Some(list)) => self.destinations(origin, &format!("{key}.to"), list)?,
        };
        Ok(WorldEvent {
            at: spec.at,
            every: spec.every,
            times,
            robot,
            destination,
        })
    }

    /// The index of the robot an event names; with one robot in the world the name may be
    /// left out.
    fn event_robot(
        &self,
        origin: &str,
        key: &str,
        name: Option<&str>,
    ) -> Result<usize, WorldError> {
        // A world file that places no robot has one, `robot0`, at the start pose.
        let names: Vec<&str> = if self.robots.is_empty() {
            vec!["robot0"]
        } else {
            self.robots.iter().map(|r| r.name.as_str()).collect()
        };
        let listed = || {
            let mut shown = names.iter().take(8).copied().collect::<Vec<_>>().join(", ");
            if names.len() > 8 {
                shown += &format!(", ... ({} robots)", names.len());
            }
            shown
        };
        match name {
            None if names.len() == 1 => Ok(0),
            None => Err(WorldError::key(
                origin,
                format!("{key}.robot"),
                format!(
                    "the world has {} robots: name the one carried (one of: {})",
                    names.len(),
                    listed()
                ),
            )),
            Some(name) => names.iter().position(|n| *n == name).ok_or_else(|| {
                WorldError::key(
                    origin,
                    format!("{key}.robot"),
                    format!(
                        "no robot named `{name}` in the world (one of: {})",
                        listed()
                    ),
                )
            }),
        }
    }

    /// `move_to`: a pose `[x, y, heading_degrees]` or `"random"`.
    fn move_to(&self, origin: &str, key: &str, v: &Value) -> Result<Destination, WorldError> {
        let expected = "expected [x, y, heading_degrees] (mm, mm, degrees) or \"random\"";
        match &v.kind {
            ValueKind::String(s) if s == "random" => Ok(Destination::Random),
            ValueKind::String(s) => Err(WorldError::key(
                origin,
                key,
                format!("{expected}, got \"{s}\""),
            )),
            ValueKind::Array(items) => {
                let nums: Vec<f64> = items
                    .iter()
                    .map(|item| match item.kind {
                        ValueKind::I64(n) => Some(n as f64),
                        ValueKind::U64(n) => Some(n as f64),
                        ValueKind::Float(x) => Some(x),
                        _ => None,
                    })
                    .collect::<Option<_>>()
                    .ok_or_else(|| WorldError::key(origin, key, format!("{expected}, got {v}")))?;
                Ok(Destination::Poses(vec![
                    self.destination(origin, key, &nums)?
                ]))
            }
            _ => Err(WorldError::key(origin, key, format!("{expected}, got {v}"))),
        }
    }

    /// `to`: a list of poses, cycled through.
    fn destinations(
        &self,
        origin: &str,
        key: &str,
        list: &[Vec<f64>],
    ) -> Result<Destination, WorldError> {
        if list.is_empty() || list.len() > MAX_DESTINATIONS {
            return Err(WorldError::key(
                origin,
                key,
                format!(
                    "expected 1 to {MAX_DESTINATIONS} poses [[x, y, heading_degrees], ...], \
                     got {}",
                    list.len()
                ),
            ));
        }
        list.iter()
            .enumerate()
            .map(|(k, p)| self.destination(origin, &format!("{key}[{k}]"), p))
            .collect::<Result<_, _>>()
            .map(Destination::Poses)
    }

    /// One destination `[x, y, heading_degrees]`: the robot put down there must be in the
    /// world and clear of every wall and obstacle. Heading in radians.
    fn destination(
        &self,
        origin: &str,
        key: &str,
        v: &[f64],
    ) -> Result<(f64, f64, f64), WorldError> {
        let [x, y, deg] = match v {
            [x, y, deg] if v.iter().all(|n| n.is_finite()) => [*x, *y, *deg],
            _ => {
                return Err(WorldError::key(
                    origin,
                    key,
                    format!("expected [x, y, heading_degrees] (mm, mm, degrees), got {v:?}"),
                ))
            }
        };
        let (clear, what) = self.clearance(Vec2::new(x, y), ROBOT_RADIUS_MM);
        if clear < 0.0 {
            let hit = what.map_or_else(|| "something".to_string(), |(_, owner)| owner.to_string());
            return Err(WorldError::key(
                origin,
                key,
                format!(
                    "the robot (radius {ROBOT_RADIUS_MM} mm) put down at ({x}, {y}) would \
                     overlap {hit}"
                ),
            ));
        }
        Ok((x, y, deg.to_radians()))
    }
}
