//! Simulation step cost for 1, 10 and 100 robots with all sensors: `cargo bench --bench sim`.
//!
//! Every robot drives a circle in a 20 m x 20 m arena with walls, pillars, coloured objects
//! and pucks, its camera panning, its sensors noisy as a world file's are by default. One "step" is one physics tick of the whole world plus one
//! reading of every sensor of every robot (laser, sonar, vision, gripper, position, misc,
//! PTZ). The server ticks physics at 100 Hz and reads sensors at 10 Hz, so the last column is
//! the share of one core a served world of that size needs in real time.
//!
//! Prints a table (medians over repeated runs) and how the cost grows with the robot count.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use player_sim::{
    ColouredObject, Noise, ObjectShape, PuckPlacement, RobotPlacement, SimWorld, WorldMap,
};

/// The arena with `n` robots on a grid, 1.8 m apart.
fn arena(n: usize) -> SimWorld {
    let mut map = WorldMap::new("bench", 20000.0, 20000.0)
        .with_wall((0.0, 10000.0), (3000.0, 10000.0))
        .with_wall((17000.0, 10000.0), (20000.0, 10000.0))
        .with_box((9000.0, 500.0), (11000.0, 900.0));
    for k in 0..8 {
        let t = f64::from(k);
        map = map.with_pillar((1000.0 + 2400.0 * t, 19300.0), 150.0);
        map = map.with_object(ColouredObject {
            channel: k as u8,
            center: (19300.0, 1000.0 + 2400.0 * t),
            shape: ObjectShape::Circle { radius: 150.0 },
            height: 300.0,
        });
        map = map.with_puck(PuckPlacement {
            center: (600.0, 1000.0 + 2400.0 * t),
            radius: 40.0,
            channel: Some(6),
        });
    }
    for i in 0..n {
        let (row, col) = (i / 10, i % 10);
        map = map.with_robot(RobotPlacement {
            name: format!("r{i}"),
            pose: (
                1900.0 + 1800.0 * col as f64,
                1900.0 + 1800.0 * row as f64,
                (i as f64 * 37.0).to_radians(),
            ),
            channel: Some((i % 8) as u8),
            port: None,
            devices: None,
            laser: Default::default(),
        });
    }
    // Noisy sensors and odometry, as every world file has by default.
    let mut w = SimWorld::new(Arc::new(map.with_noise(Noise::PIONEER)));
    for i in 0..w.len() {
        w.robot_mut(i).set_velocity(300, 20);
        w.robot_mut(i).set_ptz(60, 0, 300);
    }
    // Get everyone moving.
    w.run(0.5);
    w
}

fn read_all(w: &SimWorld) {
    for i in 0..w.len() {
        black_box(w.laser(i));
        black_box(w.sonar(i));
        black_box(w.vision(i));
        black_box(w.gripper(i));
        black_box(w.position(i));
        black_box(w.misc(i));
        black_box(w.ptz(i));
    }
}

/// Median time of `f` over repeated runs lasting about `budget` (at least 5 runs).
fn median(budget: Duration, mut f: impl FnMut()) -> Duration {
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || (start.elapsed() < budget && times.len() < 10_000) {
        let t = Instant::now();
        f();
        times.push(t.elapsed());
    }
    times.sort_unstable();
    times[times.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is accepted and ignored.
    let budget = Duration::from_millis(700);
    println!("simulation step cost (median), all sensors of every robot read each step");
    println!();
    println!(
        "| robots | physics tick | all sensors | step | per robot | step growth | real-time load |"
    );
    println!(
        "|-------:|-------------:|------------:|-----:|----------:|------------:|---------------:|"
    );
    let mut previous: Option<(usize, f64)> = None;
    for n in [1usize, 10, 100] {
        let mut w = arena(n);
        let tick = median(budget, || w.tick());
        let sensors = median(budget, || read_all(&w));
        let step = median(budget, || {
            w.tick();
            read_all(&w);
        });
        let step_us = us(step);
        let growth = match previous {
            Some((pn, p)) => format!("x{:.1} for x{} robots", step_us / p, n / pn.max(1)),
            None => "-".to_string(),
        };
        // 100 ticks and 10 sensor rounds per simulated second.
        let load = (100.0 * us(tick) + 10.0 * us(sensors)) / 1e6;
        println!(
            "| {n:>6} | {:>9.1} us | {:>8.1} us | {:>7.1} us | {:>6.1} us | {growth} | {:.1}% of a core |",
            us(tick),
            us(sensors),
            step_us,
            step_us / n as f64,
            load * 100.0
        );
        previous = Some((n, step_us));
    }
    println!();
    println!(
        "physics is O(n^2) in robots (each checks every other), sensing O(n) rays per robot \
         against O(walls + n) shapes, so a step grows between linearly and quadratically."
    );
}
