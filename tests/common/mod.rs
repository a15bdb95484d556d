//! Helpers shared by the integration tests (`mod common;` in a test): [`navstub`], the
//! stand-in localizer and planner, and [`tour`], the maze tour with the localizer in the
//! loop (also `benches/nav_tour.rs`'s, through `benches/common`).

pub mod navstub;
pub mod tour;
