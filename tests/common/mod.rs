//! Helpers shared by the integration tests (`mod common;` in a test): [`navstub`], the
//! stand-in localizer and planner.

pub mod navstub;
