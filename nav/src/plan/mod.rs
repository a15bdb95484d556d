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

/// Where the public navigation data are (`maps/`, `carmen/`; not part of the repository):
/// the folder `PLAYER_NAV_DATA` names, else the first `shared/nav` found beside the
/// checkout or beside one of its parent folders (`../shared/nav` for a checkout in
/// `/work/main`, `../../shared/nav` for a worktree one level deeper). `None` when there is
/// none: tests and benches then say so and skip.
pub fn shared_data_dir() -> Option<std::path::PathBuf> {
    if let Some(dir) = std::env::var_os("PLAYER_NAV_DATA") {
        let dir = std::path::PathBuf::from(dir);
        return dir.is_dir().then_some(dir);
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    root.ancestors()
        .skip(1)
        .map(|a| a.join("shared").join("nav"))
        .find(|d| d.is_dir())
}
