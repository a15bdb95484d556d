//! Global path planning on an occupancy map, as Player's `wavefront` driver did it and as
//! the `G` planner device and `player-nav plan` use it: a costmap built once per map
//! ([`costmap`]: hard inflation by the robot's radius, a soft cost near obstacles), two
//! exact planners sharing flat search arrays ([`search`]: A* and Player's full-grid
//! wavefront), the reduction of a path to waypoints ([`path`]), and the pieces of the
//! offline benchmark: an independent Dijkstra ([`dijkstra`]), CPython's random generator
//! ([`pyrandom`]) and Nav2's start/goal pairs ([`pairs`]). docs/navigation.md, "Planning",
//! gives every parameter and the figures measured.

pub mod bucket;
pub mod cli;
pub mod costmap;
pub mod dijkstra;
pub mod edt;
pub mod heap;
pub mod pairs;
pub mod path;
pub mod pyrandom;
pub mod search;

pub use costmap::{CostParams, Costmap, Unknown};
pub use path::Plan;
pub use search::{Algorithm, PlanError, Planner};
