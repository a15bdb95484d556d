//! The seeded dump of several worlds, for comparing two builds of the simulator byte for byte.

use super::*;

/// A seeded run of `world` for `ticks` ticks, every reading of every robot written to
/// `out`: each tick the true poses (bits) and `p`; every few ticks (a cadence per robot)
/// sonar, laser, full scan, gripper and misc, some read twice in the same tick and some
/// through the batch readers. Robots drive by a per-index plan: `i % 4 == 0` stand still,
/// 1 wander (turning away from what the front sonars see), 2 turn on the spot then stand,
/// 3 drive a while then stand with its gripper working; robot 1 is moved by hand once.
fn dump_world(name: &str, mut world: SimWorld, ticks: u64, out: &mut String) {
    use std::fmt::Write as _;
    let n = world.len();
    let _ = writeln!(out, "world {name} robots {n} pucks {}", world.pucks().len());
    for t in 0..ticks {
        for i in 0..n {
            let phase = t / 200;
            match i % 4 {
                1 => {
                    let s = world.sonar(i);
                    let front = s[2..6].iter().copied().min().unwrap_or(5000);
                    if front < 700 {
                        world.controls(i).set_velocity(0, 40);
                    } else {
                        world
                            .controls(i)
                            .set_velocity(300, (phase as i16 % 3 - 1) * 10);
                    }
                }
                2 if phase < 3 => world.controls(i).set_velocity(0, 30),
                2 => world.controls(i).set_velocity(0, 0),
                3 if phase % 2 == 0 => world.controls(i).set_velocity(200, 0),
                3 => {
                    world.controls(i).set_velocity(0, 0);
                    if t % 200 == 0 {
                        world.controls(i).gripper_command(cmd::GRIP_OPEN, 0);
                    }
                    if t % 200 == 100 {
                        world.controls(i).gripper_command(cmd::GRIP_CLOSE, 0);
                    }
                }
                _ => {}
            }
        }
        if t == ticks / 2 && n > 1 {
            let (x, y, th) = world.robot(1).true_pose();
            world.robot_mut(1).set_true_pose(x + 30.0, y, th + 0.1);
        }
        world.tick();
        for i in 0..n {
            let (x, y, th) = world.robot(i).true_pose();
            let _ = writeln!(
                out,
                "{t} {i} pose {:x} {:x} {:x} p {:?}",
                x.to_bits(),
                y.to_bits(),
                th.to_bits(),
                world.position(i)
            );
            let every = 5 + (i as u64 % 3) * 5;
            if t % every == 0 {
                let _ = writeln!(out, "{t} {i} s {:?}", world.sonar(i));
                let _ = writeln!(out, "{t} {i} l {:?}", world.laser(i));
                if i % 2 == 0 {
                    // Twice in the same instant: the same readings.
                    let _ = writeln!(out, "{t} {i} s2 {:?}", world.sonar(i));
                    let (l, scan) = world.laser_and_scan(i);
                    let _ = writeln!(out, "{t} {i} lL {:?} {:?}", l, scan.ranges);
                }
                let _ = writeln!(
                    out,
                    "{t} {i} g {:?} m {:?}",
                    world.gripper(i),
                    world.misc(i)
                );
            }
        }
        if t % 50 == 25 {
            let all: Vec<usize> = (0..n).collect();
            let _ = writeln!(out, "{t} many s {:?}", world.sonar_many(&all));
            let _ = writeln!(out, "{t} many l {:?}", world.laser_many(&all));
        }
        for (k, p) in world.pucks().iter().enumerate() {
            let _ = writeln!(
                out,
                "{t} puck {k} {:x} {:x} {:?}",
                p.center.x.to_bits(),
                p.center.y.to_bits(),
                p.held_by
            );
        }
    }
}

/// Writes the seeded dump of several worlds (30 simulated seconds each) to the file named
/// by `SIM_DUMP`, to compare two builds of the simulator byte for byte (md5 of the file):
/// `SIM_DUMP=/tmp/a.txt cargo test -p player-sim --lib -- --ignored seeded_dump`.
#[test]
#[ignore = "writes a file for comparing builds; run by hand with SIM_DUMP set"]
fn seeded_dump_of_worlds_for_comparing_builds() {
    let Ok(path) = std::env::var("SIM_DUMP") else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/worlds");
    let ticks = 3000;
    let mut out = String::new();
    dump_world(
        "room",
        SimWorld::new(Arc::new(WorldMap::default_room())),
        ticks,
        &mut out,
    );
    for file in ["arena", "maze", "turtlebot"] {
        let map = WorldMap::from_file(&dir.join(format!("{file}.toml"))).unwrap();
        dump_world(file, SimWorld::new(Arc::new(map)), ticks, &mut out);
    }
    // Twelve robots in the room, three pucks among them, a seed of its own.
    let mut map = WorldMap::default_room().with_seed(99);
    for k in 0..12 {
        let (x, y) = (
            1500.0 + 1100.0 * (k % 4) as f64,
            1500.0 + 1300.0 * (k / 4) as f64,
        );
        map = map.with_robot(RobotPlacement {
            name: format!("r{k}"),
            pose: (x, y, f64::from(k) * 0.7),
            channel: Some((k % 8) as u8),
            port: None,
            devices: None,
            laser: LaserSpec::default(),
        });
    }
    let mut world = SimWorld::new(Arc::new(map));
    for k in 0..3 {
        let (x, y, th) = world.robot(4 * k + 3).true_pose();
        world.add_puck(PuckPlacement {
            center: (x + 600.0 * th.cos(), y + 600.0 * th.sin()),
            radius: 40.0,
            channel: Some(1),
        });
    }
    dump_world("room12", world, ticks, &mut out);
    std::fs::write(path, out).unwrap();
}
