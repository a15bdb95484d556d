//! What one publish of the simulated Pioneer costs the simulator: the default `room` world,
//! its robot standing still with the default noise, and per publish what the driver does
//! at 10 Hz: ten 10 ms physics steps, then position, sonar and laser. Prints the CPU time
//! per publish (the best of five windows of `PUBLISHES` publishes, 300 by default).
//!
//! `cargo run --release -p player-sim --example sim_publish`

use std::sync::Arc;
use std::time::Instant;

use player_sim::{SimWorld, WorldMap};

fn main() {
    let publishes: usize = std::env::var("PUBLISHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut world = SimWorld::new(Arc::new(WorldMap::default_room()));
    let mut sink = 0u64;
    let mut window = |world: &mut SimWorld, what: &str| {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = Instant::now();
            for _ in 0..publishes {
                match what {
                    "physics" => world.run(0.1),
                    _ => {
                        world.run(0.1);
                        let p = world.position(0);
                        let s = world.sonar(0);
                        let l = world.laser(0);
                        sink = sink
                            .wrapping_add(p.x as u64)
                            .wrapping_add(u64::from(s[3]))
                            .wrapping_add(u64::from(l[180]));
                    }
                }
            }
            best = best.min(start.elapsed().as_secs_f64() * 1e6 / publishes as f64);
        }
        println!("{what:>24}: {best:8.2} us per publish");
    };
    window(&mut world, "physics");
    window(&mut world, "physics + p, s, l");
    println!("(checksum {sink})");
}
