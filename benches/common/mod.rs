//! What the load benches share is the test harness's `bench` module (server processes,
//! CPU time and memory, percentiles, the loading clients); this adds only the path of the
//! `player` binary cargo built for the bench, which only a bench can name.

#![allow(dead_code, unused_imports)]

pub use player_testkit::bench::*;

/// The maze tour with the localizer in the loop (`tests/common/tour.rs`, shared with
/// `tests/wavefront.rs`).
#[path = "../../tests/common/tour.rs"]
pub mod tour;
pub use player_testkit::free_port;

/// Path of the `player` binary cargo built for this bench.
pub fn player_binary() -> String {
    env!("CARGO_BIN_EXE_player").to_string()
}
