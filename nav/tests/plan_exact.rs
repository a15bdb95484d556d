//! The planners' paths against independent Dijkstras: the `pathfinding` crate's and the
//! tool's own, on random synthetic grids (always) and on crops of the public maps (when
//! ../shared/nav is there): equal least costs, and paths that are valid and cost what the
//! planner says.

use pathfinding::prelude::dijkstra;
use player_nav::map::{load::load_yaml, Map, FREE, OCCUPIED, UNKNOWN};
use player_nav::plan::costmap::{LETHAL, W_FREE};
use player_nav::plan::{dijkstra as own, Algorithm, CostParams, Costmap, Planner, Unknown};
use player_nav::pose::Pose;
use player_nav::rng::Rng;

/// The least cost by the `pathfinding` crate, stepping by the rule written out afresh: 8
/// neighbours, no lethal cell, no diagonal past a lethal side cell, cost = step length
/// units x (weight + weight).
fn reference(cm: &Costmap, start: (u32, u32), goal: (u32, u32)) -> Option<u64> {
    let ok = |c: i64, r: i64| cm.weight(c, r).filter(|&w| w != LETHAL);
    ok(i64::from(start.0), i64::from(start.1))?;
    let successors = |&(c, r): &(i64, i64)| {
        let here = u64::from(ok(c, r).unwrap());
        let mut next = Vec::with_capacity(8);
        for (dc, dr) in [
            (1, 0),
            (-1, 0),
            (0, 1),
            (0, -1),
            (1, 1),
            (1, -1),
            (-1, 1),
            (-1, -1),
        ] {
            let Some(w) = ok(c + dc, r + dr) else {
                continue;
            };
            let diagonal = dc != 0 && dr != 0;
            if diagonal && (ok(c + dc, r).is_none() || ok(c, r + dr).is_none()) {
                continue;
            }
            let len = if diagonal { 577 } else { 408 };
            next.push(((c + dc, r + dr), len * (here + u64::from(w))));
        }
        next
    };
    let goal = (i64::from(goal.0), i64::from(goal.1));
    dijkstra(
        &(i64::from(start.0), i64::from(start.1)),
        successors,
        |&n| n == goal,
    )
    .map(|(_, cost)| cost)
}

/// Plans `pairs` random traversable pairs on `cm` with both planners and compares:
/// (pairs joined, pairs not joined, searches run again with 64-bit costs).
fn compare(cm: &Costmap, rng: &mut Rng, pairs: usize, label: &str) -> (usize, usize, usize) {
    let traversable: Vec<(u32, u32)> = (0..cm.height() as u32)
        .flat_map(|r| (0..cm.width() as u32).map(move |c| (c, r)))
        .filter(|&(c, r)| cm.traversable(i64::from(c), i64::from(r)))
        .collect();
    if traversable.len() < 2 {
        return (0, 0, 0);
    }
    let mut planner = Planner::new(cm.clone());
    let (mut found, mut none) = (0, 0);
    for k in 0..pairs {
        let s = traversable[rng.below(traversable.len() as u64) as usize];
        let g = traversable[rng.below(traversable.len() as u64) as usize];
        let expected = reference(cm, s, g);
        assert_eq!(
            own::least_cost(cm, s, g),
            expected,
            "{label} pair {k}: own Dijkstra"
        );
        for alg in [Algorithm::AStar, Algorithm::Wavefront] {
            match (planner.plan(alg, s, g), expected) {
                (Ok(plan), Some(best)) => {
                    assert_eq!(plan.cost, best, "{label} pair {k} {alg:?}: {s:?} -> {g:?}");
                    assert_eq!(
                        cm.path_cost(&plan.cells),
                        Some(best),
                        "{label} pair {k} {alg:?}"
                    );
                    assert_eq!(plan.cells.first(), Some(&s));
                    assert_eq!(plan.cells.last(), Some(&g));
                    assert_eq!(plan.waypoints.first(), Some(&s));
                    assert_eq!(plan.waypoints.last(), Some(&g));
                }
                (Err(e), None) => assert_eq!(e.to_string(), "no path from the start to the goal"),
                (got, want) => panic!("{label} pair {k} {alg:?}: {got:?} but expected {want:?}"),
            }
        }
        // The wavefront's field serves any other start to the same goal.
        let s2 = traversable[rng.below(traversable.len() as u64) as usize];
        let again = planner
            .replan_from(s2, g)
            .expect("the field is for this goal");
        assert_eq!(
            again.ok().map(|p| p.cost),
            reference(cm, s2, g),
            "{label} pair {k} replan"
        );
        if expected.is_some() {
            found += 1;
        } else {
            none += 1;
        }
    }
    (found, none, planner.wide_searches())
}

#[test]
fn equal_costs_on_random_synthetic_grids() {
    let mut rng = Rng::new(20_260_101);
    let (mut found, mut none) = (0, 0);
    for trial in 0..60 {
        let (w, h) = (5 + rng.below(70) as usize, 5 + rng.below(70) as usize);
        let res = [0.05, 0.1, 0.2][trial % 3];
        let mut m = Map::new(w, h, res, Pose::default(), FREE).unwrap();
        // Random blobs of obstacles and a few unknown cells.
        let density = [0.0, 0.01, 0.03, 0.08][trial % 4];
        for r in 0..h {
            for c in 0..w {
                let u = rng.uniform();
                if u < density {
                    m.set(c, r, OCCUPIED);
                } else if u < density * 1.3 {
                    m.set(c, r, UNKNOWN);
                }
            }
        }
        let params = CostParams {
            radius: [0.0, 0.1, 0.25][trial % 3],
            safety_dist: rng.range(0.0, 0.4),
            max_radius: rng.range(0.0, 1.5),
            dist_penalty: rng.range(0.0, 3.0),
            unknown: [Unknown::Lethal, Unknown::Obstacle, Unknown::Free][trial % 3],
        };
        let cm = Costmap::new(&m, params).unwrap();
        let (f, n, _) = compare(&cm, &mut rng, 6, &format!("trial {trial} ({w}x{h})"));
        found += f;
        none += n;
    }
    // Both outcomes were exercised.
    assert!(found > 100 && none > 5, "found {found}, none {none}");
}

#[test]
fn equal_costs_on_crops_of_the_public_maps() {
    let Some(dir) = player_nav::data::dir(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap(),
    ) else {
        eprintln!("skipped: no ../shared/nav (set PLAYER_NAV_DATA)");
        return;
    };
    let mut rng = Rng::new(5);
    let mut maps = 0;
    for name in ["100by100_20", "tb3_sandbox", "depot", "warehouse"] {
        let path = dir.join("maps").join(format!("{name}.yaml"));
        let Ok(map) = load_yaml(&path) else {
            eprintln!("{}: not there, skipped", path.display());
            continue;
        };
        maps += 1;
        for k in 0..3 {
            let cw = map.width().min(160);
            let ch = map.height().min(160);
            let c0 = rng.below((map.width() - cw + 1) as u64) as usize;
            let r0 = rng.below((map.height() - ch + 1) as u64) as usize;
            let cells: Vec<i8> = (r0..r0 + ch)
                .flat_map(|r| (c0..c0 + cw).map(move |c| (c, r)))
                .map(|(c, r)| map.get(c as i64, r as i64).unwrap())
                .collect();
            let crop = Map::with_cells(cw, ch, map.resolution(), Pose::default(), cells).unwrap();
            let cm = Costmap::new(&crop, CostParams::default()).unwrap();
            compare(
                &cm,
                &mut rng,
                5,
                &format!("{name} crop {k} at ({c0}, {r0})"),
            );
        }
    }
    eprintln!("{maps} public maps compared");
}

#[test]
fn free_space_paths_cost_the_octile_distance() {
    // Far from every obstacle each step costs its length x 2 x W_FREE: a straight path of
    // 30 cells and a diagonal one of 20.
    let mut m = Map::new(200, 200, 0.05, Pose::default(), FREE).unwrap();
    m.set(0, 0, OCCUPIED);
    let cm = Costmap::new(&m, CostParams::default()).unwrap();
    let mut p = Planner::new(cm);
    let unit = 2 * u64::from(W_FREE);
    let plan = p.plan(Algorithm::AStar, (100, 100), (130, 100)).unwrap();
    assert_eq!(plan.cost, 30 * 408 * unit);
    assert_eq!(plan.waypoints, [(100, 100), (130, 100)]);
    let plan = p
        .plan(Algorithm::Wavefront, (100, 100), (120, 120))
        .unwrap();
    assert_eq!(plan.cost, 20 * 577 * unit);
    assert_eq!(plan.cells.len(), 21);
}

/// A costmap where every cell weighs the most a weight can (65535) but those near one
/// obstacle: a straight step costs 408 x 131070, so 81 of them pass 32 bits.
fn heavy_corridor() -> Costmap {
    let mut m = Map::new(300, 10, 0.05, Pose::default(), FREE).unwrap();
    m.set(299, 9, OCCUPIED);
    let params = CostParams {
        max_radius: 100.0,
        dist_penalty: 100.0,
        ..CostParams::default()
    };
    let cm = Costmap::new(&m, params).unwrap();
    assert_eq!(cm.weight(0, 0), Some(u16::MAX));
    cm
}

#[test]
fn costs_beyond_32_bits_fall_back_to_wide_searches() {
    let cm = heavy_corridor();
    let mut p = Planner::new(cm.clone());
    let step = 408 * 2 * u64::from(u16::MAX);
    // 50 steps fit 32 bits: A* stays narrow.
    let plan = p.plan(Algorithm::AStar, (0, 5), (50, 5)).unwrap();
    assert_eq!(plan.cost, 50 * step);
    assert_eq!(p.wide_searches(), 0);
    // 250 steps do not: the narrow A* cannot reach the goal and runs again wide.
    let plan = p.plan(Algorithm::AStar, (0, 5), (250, 5)).unwrap();
    assert!(plan.cost > u64::from(u32::MAX));
    assert_eq!(plan.cost, 250 * step);
    assert_eq!(Some(plan.cost), reference(&cm, (0, 5), (250, 5)));
    assert_eq!(cm.path_cost(&plan.cells), Some(plan.cost));
    assert_eq!(p.wide_searches(), 1);
    // The wavefront's field covers cells beyond 32 bits even for a near start.
    let plan = p.plan(Algorithm::Wavefront, (40, 5), (0, 5)).unwrap();
    assert_eq!(plan.cost, 40 * step);
    assert_eq!(p.wide_searches(), 2);
    // ... and serves a far one from the same (wide) field.
    let far = p.replan_from((280, 2), (0, 5)).unwrap().unwrap();
    assert_eq!(Some(far.cost), reference(&cm, (280, 2), (0, 5)));
    assert_eq!(cm.path_cost(&far.cells), Some(far.cost));
    // A narrow search after a wide one reads its costs from the nodes again.
    let plan = p.plan(Algorithm::AStar, (10, 1), (20, 8)).unwrap();
    assert_eq!(Some(plan.cost), reference(&cm, (10, 1), (20, 8)));
    assert_eq!(p.wide_searches(), 2);

    // Mixed weights (all far above a free cell's: the wavefront's buckets are far wider)
    // with obstacles: equal costs, narrow and wide.
    let mut rng = Rng::new(32);
    let mut m = Map::new(220, 40, 0.05, Pose::default(), FREE).unwrap();
    for r in 0..40 {
        for c in 0..220 {
            if rng.uniform() < 0.01 {
                m.set(c, r, OCCUPIED);
            }
        }
    }
    let params = CostParams {
        radius: 0.05,
        max_radius: 2.0,
        dist_penalty: 100.0,
        ..CostParams::default()
    };
    let cm = Costmap::new(&m, params).unwrap();
    let heaviest = cm.weights().iter().max().copied().unwrap();
    let lightest = cm
        .weights()
        .iter()
        .filter(|&&w| w != 0)
        .min()
        .copied()
        .unwrap();
    assert!(
        lightest > 10_000 && lightest < heaviest,
        "{lightest} {heaviest}"
    );
    let (found, _, wide) = compare(&cm, &mut rng, 12, "heavy mixed");
    assert!(
        found >= 8 && wide >= 6,
        "found {found}, wide searches {wide}"
    );
}

#[test]
fn many_searches_across_the_generation_wrap() {
    // More searches than a mark's generations (2047): the marks are cleared and the
    // costs stay exact.
    let mut rng = Rng::new(9);
    let mut m = Map::new(40, 30, 0.1, Pose::default(), FREE).unwrap();
    for r in 0..30 {
        for c in 0..40 {
            if rng.uniform() < 0.05 {
                m.set(c, r, OCCUPIED);
            }
        }
    }
    let cm = Costmap::new(
        &m,
        CostParams {
            radius: 0.0,
            ..CostParams::default()
        },
    )
    .unwrap();
    let cells: Vec<(u32, u32)> = (0..30u32)
        .flat_map(|r| (0..40u32).map(move |c| (c, r)))
        .filter(|&(c, r)| cm.traversable(i64::from(c), i64::from(r)))
        .collect();
    let mut p = Planner::new(cm.clone());
    for k in 0..2300 {
        let s = cells[rng.below(cells.len() as u64) as usize];
        let g = cells[rng.below(cells.len() as u64) as usize];
        let alg = [Algorithm::AStar, Algorithm::Wavefront][k % 2];
        let got = p.plan(alg, s, g).ok().map(|plan| plan.cost);
        assert_eq!(got, own::least_cost(&cm, s, g), "search {k} {alg:?}");
    }
}
