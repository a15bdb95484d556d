//! World events (`[[event]]`): their schema and its errors, and carries: exact in simulated
//! time, odometry untouched, velocity zeroed, fixed, cycled and random destinations, a
//! destination another robot stands on, the truth log's carry lines, and many carries.

use super::*;
use crate::geom::Vec2;
use crate::simworld::STEP_S;

/// A 6 m x 4 m world with a box in the middle, one robot (or the `robots` given), and the
/// `events` (TOML text of `[[event]]` tables).
fn world_text(robots: &str, events: &str) -> String {
    format!(
        "[world]\nwidth = 6000\nheight = 4000\n\
         [[box]]\nmin = [2800, 1800]\nmax = [3200, 2200]\n{robots}\n{events}\n"
    )
}

const ONE: &str = "[robot]\npose = [1000, 1000, 0]\n";
const TWO: &str = "[[robot]]\nname = \"a\"\npose = [1000, 1000, 0]\n\
                   [[robot]]\nname = \"b\"\npose = [5000, 3000, 180]\n";

fn map_of(robots: &str, events: &str) -> WorldMap {
    WorldMap::from_toml_str(&world_text(robots, events)).unwrap_or_else(|e| panic!("{e}"))
}

fn err_of(robots: &str, events: &str) -> String {
    err(&world_text(robots, events))
}

#[test]
fn events_are_read_with_their_defaults() {
    let map = map_of(
        ONE,
        "[[event]]\nat = 60\nmove_to = [4500, 1000, 90]\n\
         [[event]]\nat = 2.5\nevery = 10\ntimes = 200\nto = [[500, 500, 0], [5500, 3500, -90]]\n\
         [[event]]\nat = 0\nevery = 0.5\nmove_to = \"random\"\n",
    );
    let ev = map.events();
    assert_eq!(ev.len(), 3);
    assert_eq!(
        (ev[0].at, ev[0].every, ev[0].times, ev[0].robot),
        (60.0, None, Some(1), 0)
    );
    assert_eq!(
        ev[0].destination,
        Destination::Poses(vec![(4500.0, 1000.0, 90f64.to_radians())])
    );
    assert_eq!((ev[1].every, ev[1].times), (Some(10.0), Some(200)));
    match &ev[1].destination {
        Destination::Poses(p) => assert_eq!(p.len(), 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        (ev[2].times, &ev[2].destination),
        (None, &Destination::Random)
    );
    // Firing instants, in whole steps.
    assert_eq!(ev[0].tick_of(0), Some(6000));
    assert_eq!(ev[0].tick_of(1), None);
    assert_eq!(ev[1].tick_of(199), Some(250 + 199 * 1000));
    assert_eq!(ev[1].tick_of(200), None);
    assert_eq!(ev[2].tick_of(7), Some(350));
    // Two robots: each event names one.
    let map = map_of(
        TWO,
        "[[event]]\nat = 1\nrobot = \"b\"\nmove_to = [500, 3500, 0]\n",
    );
    assert_eq!(map.events()[0].robot, 1);
    // A file that places no robot has robot0 at the start pose.
    let map = WorldMap::from_toml_str(
        "[world]\nwidth = 4000\nheight = 4000\n\
         [[event]]\nat = 1\nrobot = \"robot0\"\nmove_to = [500, 500, 0]\n",
    )
    .unwrap();
    assert_eq!(map.events()[0].robot, 0);
}

#[test]
fn bad_events_are_named() {
    let cases: [(&str, &str, &[&str]); 16] = [
        (
            ONE,
            "[[event]]\nat = -1\nmove_to = [500, 500, 0]\n",
            &["event[0].at", "-1"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\nevery = 0\nmove_to = [500, 500, 0]\n",
            &["event[0].every"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\nevery = 0.001\nmove_to = \"random\"\n",
            &["event[0].every"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\ntimes = 3\nmove_to = [500, 500, 0]\n",
            &["event[0].times", "every"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\nevery = 1\ntimes = 0\nmove_to = [500, 500, 0]\n",
            &["event[0].times"],
        ),
        (
            TWO,
            "[[event]]\nat = 1\nmove_to = [500, 500, 0]\n",
            &["event[0].robot", "a, b"],
        ),
        (
            TWO,
            "[[event]]\nat = 1\nrobot = \"c\"\nmove_to = [500, 500, 0]\n",
            &["event[0].robot", "`c`", "a, b"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\nrobot = \"robot1\"\nmove_to = [500, 500, 0]\n",
            &["event[0].robot", "robot1"],
        ),
        (ONE, "[[event]]\nat = 1\n", &["event[0]", "move_to"]),
        (
            ONE,
            "[[event]]\nat = 1\nmove_to = \"random\"\nto = [[500, 500, 0]]\n",
            &["event[0]", "not both"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\nmove_to = \"elsewhere\"\n",
            &["event[0].move_to", "elsewhere"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\nmove_to = [500, 500]\n",
            &["event[0].move_to", "heading"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\nmove_to = [3000, 2000, 0]\n",
            &["event[0].move_to", "box[0]"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\nto = [[500, 500, 0], [100, 2000, 0]]\n",
            &["event[0].to[1]", "west edge"],
        ),
        (
            ONE,
            "[[event]]\nat = 1\nmove_to = [500, 500, 0]\nwhen = 3\n",
            &["event[0]", "when"],
        ),
        (
            ONE,
            "[event]\nat = 1\nmove_to = [500, 500, 0]\n",
            &["event", "[[event]]"],
        ),
    ];
    for (robots, events, words) in cases {
        let e = err_of(robots, events);
        for w in words {
            assert!(e.contains(w), "{events:?}: {e:?} does not say {w:?}");
        }
    }
    let e = err_of(ONE, "[[event]]\nat = 1\nto = []\n");
    assert!(e.contains("event[0].to"), "{e}");
    // The first bad event is the one named.
    let e = err_of(
        ONE,
        "[[event]]\nat = 1\nmove_to = [500, 500, 0]\n[[event]]\nat = 1\nmove_to = [0, 0, 0]\n",
    );
    assert!(e.contains("event[1].move_to"), "{e}");
}

/// Runs `world` until its time is `t` (to the step).
fn run_to(world: &mut SimWorld, t: f64) {
    while world.ticks() < (t / STEP_S).round() as u64 {
        world.tick();
    }
}

#[test]
fn a_carry_happens_at_its_instant_and_leaves_odometry_alone() {
    for noise in [false, true] {
        let map = map_of(ONE, "[[event]]\nat = 3\nmove_to = [4500, 3000, 90]\n");
        let map = if noise {
            map.with_noise(Noise::PIONEER)
        } else {
            map.with_noise(Noise::NONE)
        };
        let mut w = SimWorld::new(Arc::new(map));
        w.controls(0).set_velocity(200, 10);
        run_to(&mut w, 2.99);
        let (x0, _, _) = w.robot(0).true_pose();
        assert!(x0 > 1300.0, "driving: {x0}");
        let before = w.position(0);
        assert!(w.carries().is_empty());
        w.tick();
        // The step that ends at 3 s carries it: it is at the destination, standing.
        assert_eq!(w.time(), 3.0);
        let (x, y, th) = w.robot(0).true_pose();
        assert_eq!((x, y), (4500.0, 3000.0));
        assert!(near(th, std::f64::consts::FRAC_PI_2, 1e-12), "{th}");
        let after = w.position(0);
        assert_eq!((after.speed, after.turn_rate), (0, 0), "noise {noise}");
        // Odometry went on as over any other step: a step's motion at most.
        let moved = f64::from(after.x - before.x).hypot(f64::from(after.y - before.y));
        assert!(moved <= 3.0, "noise {noise}: odometry jumped {moved} mm");
        assert!(
            (i32::from(after.heading) - i32::from(before.heading)).abs() <= 1,
            "noise {noise}: {before:?} -> {after:?}"
        );
        let c = w.carries();
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].time, c[0].event, c[0].firing, c[0].robot),
            (3.0, 0, 0, 0)
        );
        assert!(near(c[0].from.0, x0, 3.0), "{:?}", c[0]);
        assert_eq!(c[0].to, Some((4500.0, 3000.0, th)));
        // It drives on from there (the command is kept), and odometry with it.
        w.run(1.0);
        assert!(w.carries().is_empty());
        let (x2, y2, _) = w.robot(0).true_pose();
        assert!(
            y2 > 3000.0 + 100.0 && near(x2, 4500.0, 200.0),
            "({x2}, {y2})"
        );
        let later = w.position(0);
        let odo = f64::from(later.x - after.x).hypot(f64::from(later.y - after.y));
        assert!(near(odo, (x2 - 4500.0).hypot(y2 - 3000.0), 20.0), "{odo}");
    }
}

#[test]
fn carry_to_keeps_the_odometry_reading_exactly_without_noise() {
    let mut r = robot_in(WorldMap::new("w", 6000.0, 6000.0), 1000.0, 1000.0, 30.0);
    r.set_velocity(300, 20);
    run(&mut r, 2.0);
    let before = r.position();
    r.carry_to(4000.0, 5000.0, -2.0);
    let after = r.position();
    assert_eq!(
        (after.x, after.y, after.heading),
        (before.x, before.y, before.heading)
    );
    assert_eq!(r.true_pose(), (4000.0, 5000.0, -2.0));
    assert_eq!(after.compass, 246); // -2 rad = -114.6 degrees: 245.4, to even degrees.
}

#[test]
fn repeated_events_cycle_their_destinations_a_given_number_of_times() {
    let map = map_of(
        ONE,
        "[[event]]\nat = 0\nevery = 0.5\ntimes = 5\n\
         to = [[500, 500, 0], [5500, 500, 90], [5500, 3500, 180]]\n",
    );
    let mut w = SimWorld::new(Arc::new(map));
    // At 0, as the world is made.
    assert_eq!(w.carries().len(), 1);
    assert_eq!(w.robot(0).true_pose().0, 500.0);
    let mut seen = vec![w.carries()[0].clone()];
    for _ in 0..500 {
        w.tick();
        seen.extend(w.carries().iter().cloned());
    }
    let times: Vec<f64> = seen.iter().map(|c| c.time).collect();
    assert_eq!(times, [0.0, 0.5, 1.0, 1.5, 2.0]);
    let xs: Vec<(f64, f64)> = seen
        .iter()
        .map(|c| c.to.map(|p| (p.0, p.1)).unwrap())
        .collect();
    assert_eq!(
        xs,
        [
            (500.0, 500.0),
            (5500.0, 500.0),
            (5500.0, 3500.0),
            (500.0, 500.0),
            (5500.0, 500.0)
        ]
    );
}

#[test]
fn a_robot_standing_on_the_destination_pushes_the_carried_one_to_the_nearest_free_spot() {
    let map = map_of(
        TWO,
        "[[event]]\nat = 1\nrobot = \"a\"\nmove_to = [5000, 3000, 45]\n",
    );
    let mut w = SimWorld::new(Arc::new(map));
    run_to(&mut w, 1.0);
    let c = &w.carries()[0];
    let (x, y, th) = c.to.expect("a free spot");
    assert_eq!(c.wanted, Some((5000.0, 3000.0, 45f64.to_radians())));
    assert_eq!(th, 45f64.to_radians());
    // Next to robot b, touching at most, and no farther than the first ring that is free.
    let d = (x - 5000.0).hypot(y - 3000.0);
    assert!((500.0..=550.0).contains(&d), "{d}");
    let (clear, _) = w.map().clearance(Vec2::new(x, y), ROBOT_RADIUS_MM);
    assert!(clear >= 0.0);
}

#[test]
fn random_carries_are_seeded_clear_and_reachable() {
    // A closed triangle of walls: free inside, but no robot can get there.
    let walls = "[[polygon]]\npoints = [[300, 2600], [2300, 2600], [1300, 3900]]\n";
    let run = |seed: u64| {
        let map = map_of(
            &format!("{ONE}{walls}"),
            "[[event]]\nat = 0.1\nevery = 0.1\ntimes = 300\nmove_to = \"random\"\n",
        )
        .with_seed(seed);
        let mut w = SimWorld::new(Arc::new(map));
        let mut to = Vec::new();
        for _ in 0..3000 {
            w.tick();
            to.extend(
                w.carries()
                    .iter()
                    .map(|c| c.to.expect("a random free spot")),
            );
        }
        (to, w)
    };
    let (a, w) = run(5);
    assert_eq!(a.len(), 300);
    assert_eq!(a, run(5).0, "the same seed, the same places");
    assert_ne!(a, run(6).0, "another seed, other places");
    let inside = |x: f64, y: f64| y > 2600.0 && (x - 1300.0).abs() < (3900.0 - y) * 1000.0 / 1300.0;
    for &(x, y, th) in &a {
        let (clear, _) = w.map().clearance(Vec2::new(x, y), ROBOT_RADIUS_MM);
        assert!(clear >= 0.0, "({x}, {y}) overlaps");
        assert!(!inside(x, y), "({x}, {y}) is inside the closed triangle");
        assert!((-std::f64::consts::PI..=std::f64::consts::PI).contains(&th));
    }
    // They spread over the world: every quarter of it gets some.
    for (qx, qy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
        let n = a
            .iter()
            .filter(|p| ((p.0 >= 3000.0) as i32, (p.1 >= 2000.0) as i32) == (qx, qy))
            .count();
        assert!(n > 20, "quarter ({qx}, {qy}): {n} of 300");
    }
}

#[test]
fn two_hundred_carries_of_a_driven_robot_among_others() {
    let map = map_of(
        TWO,
        "[[event]]\nat = 1\nevery = 1\ntimes = 200\nrobot = \"a\"\nmove_to = \"random\"\n\
         [[event]]\nat = 0.5\nevery = 1\nrobot = \"b\"\nto = [[1000, 1000, 0], [5000, 3000, 0]]\n",
    );
    let mut w = SimWorld::new(Arc::new(map));
    let mut carried = [0, 0];
    for t in 0..21_000 {
        // Both drive in circles, into walls and each other.
        if t % 10 == 0 {
            w.controls(0).set_velocity(400, 30);
            w.controls(1).set_velocity(300, -20);
        }
        w.tick();
        for c in w.carries() {
            carried[c.robot] += usize::from(c.to.is_some());
        }
        let (a, b) = (w.robot(0).true_pose(), w.robot(1).true_pose());
        let apart = (a.0 - b.0).hypot(a.1 - b.1);
        assert!(
            apart >= 2.0 * ROBOT_RADIUS_MM - 1e-6,
            "t {t}: overlap {apart}"
        );
    }
    assert_eq!(carried[0], 200);
    assert_eq!(carried[1], 210);
}

#[test]
fn a_world_with_events_runs_the_same_every_time() {
    let map = Arc::new(map_of(
        TWO,
        "[[event]]\nat = 0.3\nevery = 0.7\nrobot = \"a\"\nmove_to = \"random\"\n\
         [[event]]\nat = 1\nrobot = \"b\"\nmove_to = [1500, 3000, 10]\n",
    ));
    let trace = || {
        let mut w = SimWorld::new(map.clone());
        let mut out = Vec::new();
        for t in 0..500 {
            w.controls(0).set_velocity(300, (t % 7) as i16 * 5);
            w.tick();
            out.push((w.robot(0).true_pose(), w.position(0), w.laser(1)[180]));
        }
        out
    };
    assert_eq!(trace(), trace());
}

#[test]
fn carry_lines_in_the_truth_log() {
    let map = map_of(ONE, "[[event]]\nat = 0.5\nmove_to = [4500, 3000, 90]\n");
    let mut w = SimWorld::new(Arc::new(map));
    run_to(&mut w, 0.5);
    let c = &w.carries()[0];
    let csv = c.truth_line(TruthFormat::Csv).unwrap();
    assert_eq!(csv, "0.500,robot0,4500.0,3000.0,90.00,carried\n");
    let json = c.truth_line(TruthFormat::JsonLines).unwrap();
    assert_eq!(
        json,
        "{\"time\":0.500,\"robot\":\"robot0\",\"x\":4500.0,\"y\":3000.0,\"heading\":90.00,\
         \"event\":\"carried\"}\n"
    );
    for line in [&csv, &json] {
        let (r, event) = TruthRecord::parse_with_event(line).unwrap();
        assert_eq!((r.x, r.y, r.heading), (4500.0, 3000.0, 90.0));
        assert_eq!(event.as_deref(), Some("carried"));
        assert_eq!(TruthRecord::parse(line), Some(r));
    }
    // Ordinary lines have no event; the header of a world with events has its column.
    let plain = w.truth()[0].line(TruthFormat::Csv);
    assert_eq!(TruthRecord::parse_with_event(&plain).unwrap().1, None);
    assert_eq!(
        TruthRecord::header_with_events(TruthFormat::Csv),
        Some("time,robot,x,y,heading,event\n")
    );
    assert_eq!(
        TruthRecord::parse_with_event("time,robot,x,y,heading,event"),
        None
    );
    // A carry that found no spot writes no line.
    let stuck = Carry {
        to: None,
        ..c.clone()
    };
    assert_eq!(stuck.truth_line(TruthFormat::Csv), None);
}
