//! Fuzzes the simulator's world-file parser (`WorldMap::from_toml_str`) and, for each world
//! it accepts, what the simulator does with it first: geometry queries from the start pose,
//! then the simulated world built from it, a few physics steps and every sensor reading. Inputs naming a `file` are skipped: a bitmap file is read from disk,
//! and the fuzzer must not read the machine's files.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_sim::geom::Vec2;
use player_sim::map::WorldMap;
use player_sim::simworld::SimWorld;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.contains("file") {
        return;
    }
    let Ok(map) = WorldMap::from_toml_str(text) else {
        return;
    };
    let (x, y, heading) = map.start_pose();
    let origin = Vec2::new(x, y);
    for k in 0..8 {
        let r = map.range(origin, heading + f64::from(k) * 0.785, 8000.0);
        assert!(r.is_nan() || r >= 0.0, "negative range {r}");
    }
    let _ = map.clearance(origin, 250.0);
    for r in map.robots() {
        let _ = map.clearance(Vec2::new(r.pose.0, r.pose.1), 250.0);
    }
    let mut world = SimWorld::new(Arc::new(map));
    // Every robot drives off turning, so collisions and stalls are reached too.
    for i in 0..world.len() {
        world.robot_mut(i).set_velocity(700, 90);
    }
    // Events within the half second fire (robots carried, random places drawn).
    world.run(0.5);
    for c in world.carries() {
        let _ = c.truth_line(player_sim::TruthFormat::Csv);
    }
    for i in 0..world.len() {
        let _ = world.position(i);
        let _ = world.sonar(i);
        let _ = world.laser(i);
        let _ = world.misc(i);
        let _ = world.ptz(i);
        let _ = world.vision(i);
        let _ = world.gripper(i);
    }
    let _ = world.truth();
});
