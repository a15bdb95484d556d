//! Maps and localization for player, pure and deterministic.
#![deny(missing_docs)]

pub mod control;
pub mod distance;
pub mod likelihood;
pub mod map;
pub mod plan;
pub mod pose;
pub mod rng;
