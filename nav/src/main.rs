//! `player-nav`: offline maps and localization (the commands come with the filter).

fn main() {}
