//! Maps and localization for player, pure and deterministic.
#![deny(missing_docs)]

pub mod amcl;
pub mod carmen;
pub mod distance;
pub mod likelihood;
pub mod localize;
pub mod map;
pub mod pose;
pub mod rng;
pub mod synthetic;
