//! Maps and localization for player: pure and deterministic.
//!
//! This crate holds the navigation algorithms; the `mapfile` and `amcl` drivers wrap them
//! as devices, and the `player-nav` binary runs them offline on public data
//! (docs/navigation.md). It depends on no actix, no tokio and no crate of ours, reads no
//! clock and starts no thread; everything random comes from a seeded generator of its own,
//! so the same inputs and seed give the same outputs bit for bit.
//!
//! - [`map`]: occupancy grids with Player's cell semantics (-1 free, 0 unknown, +1
//!   occupied), loaded by map_server's rule from a YAML description or by Player's
//!   `mapfile` rule from an image (PGM P5/P2, PNG), and written back as PGM + YAML.
//! - [`distance`]: the exact Euclidean distance transform (Felzenszwalb-Huttenlocher) and
//!   inflation: the distance from every cell to the nearest obstacle.
//! - [`likelihood`]: the likelihood field of the laser model, over that transform.
//! - [`amcl`]: the particle filter (motion model, sensor models, KLD-sampling, recovery,
//!   hypotheses).
//! - [`carmen`]: CARMEN laser logs, the map built from a log, seeded noisy odometry.
//! - [`localize`]: the offline run of the filter over a log, and its goal line.
//! - [`pose`], [`rng`], [`scan`]: poses and angles; the seeded random generator; a laser
//!   scan and the ray cast through a map.
//! - [`synthetic`]: a small synthetic world for tests and benches; [`data`]: where the
//!   public data lives.
#![deny(missing_docs)]

pub mod amcl;
pub mod carmen;
pub mod control;
pub mod data;
pub mod distance;
pub mod likelihood;
pub mod localize;
pub mod map;
pub mod plan;
pub mod pose;
pub mod rng;
pub mod scan;
pub mod synthetic;
