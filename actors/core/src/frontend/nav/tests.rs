use super::*;
use player_proto::nav::{Particle, MAX_TILE_CELLS};

fn info(id: u32, w: u32, h: u32) -> MapInfo {
    MapInfo {
        map_id: id,
        width: w,
        height: h,
        resolution: 50_000,
        origin_x: -1000,
        origin_y: 2000,
        origin_heading: 0,
    }
}

/// The cell at (col, row) of a made-up map: -1, 0 or +1.
fn cell(col: u32, row: u32) -> i8 {
    ((col * 7 + row * 3) % 3) as i8 - 1
}

/// The answer to `t` as a driver would send it, cut from the made-up map.
fn answer(id: u32, t: TileRequest) -> Vec<u8> {
    let cells = (t.row..t.row + t.height)
        .flat_map(|r| (t.col..t.col + t.width).map(move |c| cell(c, r)))
        .collect();
    Tile {
        map_id: id,
        rect: t,
        cells,
    }
    .encode()
    .unwrap()
}

#[test]
fn a_map_of_several_tiles_is_put_together_cell_for_cell() {
    // 300 columns: 200 rows a tile, 3 tiles for 450 rows.
    let mut d = MapDownload::new();
    assert_eq!(d.reading(info(7, 300, 450)), Ok(true));
    assert_eq!(d.reading(info(7, 300, 450)), Ok(false));
    let now = Instant::now();
    let mut whole = None;
    let mut asked = 0;
    while let Some(t) = d.ask(now) {
        assert!(t.cells().unwrap() <= MAX_TILE_CELLS);
        assert_eq!(d.ask(now), None, "one tile at a time");
        // An old map's tile is ignored.
        assert_eq!(d.answer(&answer(6, t)), None);
        whole = d.answer(&answer(7, t));
        asked += 1;
    }
    assert_eq!(asked, 3);
    let m = whole.expect("the map is whole after its last tile");
    assert!(d.done());
    for row in 0..450 {
        for col in 0..300 {
            assert_eq!(m.cells[(row * 300 + col) as usize], cell(col, row));
        }
    }
    let ros = m.ros_cells();
    assert_eq!((ros[0], cell(0, 0)), (0, -1), "free");
    assert_eq!((ros[1], cell(1, 0)), (-1, 0), "unknown");
    assert_eq!((ros[2], cell(2, 0)), (100, 1), "occupied");
    assert_eq!(m.origin(), [-1.0, 2.0, 0.0]);
}

#[test]
fn a_new_map_id_starts_again_and_an_unanswered_tile_is_asked_again() {
    let mut d = MapDownload::new();
    d.reading(info(1, 10, 10)).unwrap();
    let t0 = Instant::now();
    let t = d.ask(t0).unwrap();
    assert_eq!(d.ask(t0 + Duration::from_millis(500)), None);
    assert_eq!(d.ask(t0 + ANSWER_WAIT), Some(t), "asked again when overdue");
    assert!(d.answer(&answer(1, t)).is_some());
    assert_eq!(d.reading(info(2, 10, 10)), Ok(true));
    assert!(!d.done());
    assert_eq!(d.ask(t0), Some(t));
    assert_eq!(
        d.reading(info(3, 6000, 6000)),
        Err(MapRefused::TooBig(36_000_000))
    );
    assert_eq!(d.ask(t0), None);
}

#[test]
fn a_tile_never_answered_is_asked_again_less_and_less_often() {
    let mut d = MapDownload::new();
    // Three tiles (as above).
    d.reading(info(1, 300, 450)).unwrap();
    let mut now = Instant::now();
    let first = d.ask(now).unwrap();
    // Asked again at 2, 4, 8, 16, 32, 64, 64... s after the previous ask.
    let mut gaps = Vec::new();
    let mut last = now;
    while gaps.len() < 8 {
        now += Duration::from_millis(500);
        if let Some(t) = d.ask(now) {
            assert_eq!(t, first);
            gaps.push(now.duration_since(last).as_secs());
            last = now;
        }
    }
    assert_eq!(gaps, [2, 4, 8, 16, 32, 64, 64, 64]);
    // An answer: the next tile is asked at once, and waited for 2 s again.
    assert_eq!(d.answer(&answer(1, first)), None);
    let next = d.ask(now).expect("the next tile at once");
    assert_ne!(next, first);
    assert_eq!(d.wait(), ANSWER_WAIT);
    assert_eq!(d.ask(now + ANSWER_WAIT), Some(next));
}

#[test]
fn the_best_hypothesis_is_in_metres_and_radians() {
    let l = Localize {
        hypotheses: vec![Hypothesis {
            mean: [1500, -250, 324_000],
            cov: [[10_000, 0, 0], [0, 40_000, 0], [0, 0, 1_296_000_000]],
            alpha: 750_000,
        }],
        ..Localize::default()
    };
    let (m, c, w) = best_pose(&l).unwrap();
    assert_eq!(m[..2], [1.5, -0.25]);
    assert!((m[2] - std::f64::consts::FRAC_PI_2).abs() < 1e-12);
    assert!((c[0][0] - 0.01).abs() < 1e-12 && (c[1][1] - 0.04).abs() < 1e-12);
    assert!((c[2][2] - 10f64.to_radians().powi(2)).abs() < 1e-12);
    assert_eq!(w, 0.75);
    assert!(best_pose(&Localize::default()).is_none());
}

#[test]
fn the_odometry_frame_lands_where_the_two_poses_agree() {
    let map = [2.0, 1.0, std::f64::consts::FRAC_PI_2];
    let odom = [1.0, 0.0, 0.0];
    let t = map_to_odom(map, odom);
    // The odometry pose carried by t gives the map pose back.
    let (s, c) = t[2].sin_cos();
    let back = [
        t[0] + c * odom[0] - s * odom[1],
        t[1] + s * odom[0] + c * odom[1],
        t[2] + odom[2],
    ];
    for k in 0..3 {
        assert!((back[k] - map[k]).abs() < 1e-12, "{back:?}");
    }
}

#[test]
fn particles_of_several_bodies_come_in_index_order() {
    let body = |first: u32, n: i32| {
        Particles {
            particles: (0..n)
                .map(|i| Particle {
                    pose: [first as i32 + i, 0, 0],
                    alpha: 1000,
                })
                .collect(),
            first,
            total: 150,
            ..Particles::default()
        }
        .encode()
        .unwrap()
    };
    let (a, b) = (body(0, 100), body(100, 50));
    let p = particles([&b[..], &a[..], &b"junk"[..]]);
    assert_eq!(p.len(), 150);
    for (i, (pose, w)) in p.iter().enumerate() {
        assert_eq!(pose[0], i as f64 / 1000.0);
        assert_eq!(*w, 0.001);
    }
}

#[test]
fn a_pose_estimate_and_a_goal_become_the_devices_layouts() {
    let cov = [[0.25, 0.0, 0.0], [0.0, 0.25, 0.0], [0.0, 0.0, 0.0685]];
    let p = set_pose([1.0, -2.0, -std::f64::consts::FRAC_PI_2], cov).unwrap();
    let s = SetPose::decode(&p).unwrap();
    assert_eq!(s.mean, [1000, -2000, -324_000]);
    assert_eq!(s.cov[0][0], 250_000);
    assert!(set_pose([f64::NAN, 0.0, 0.0], cov).is_none());
    let g = Goal::decode(&goal([3.0, -0.4, std::f64::consts::FRAC_PI_4]).unwrap()).unwrap();
    assert_eq!((g.x, g.y, g.a), (3000, -400, 45));
    assert!(goal([0.0, f64::INFINITY, 0.0]).is_none());
    let w = Waypoints(vec![[500, 0, 90]]).encode().unwrap();
    let got = waypoints(&w).unwrap();
    assert_eq!(got[0][..2], [0.5, 0.0]);
    assert!((yaw([0.0, 0.0, (0.3f64).sin(), (0.3f64).cos()]) - 0.6).abs() < 1e-12);
}

#[test]
fn asking_waits_for_the_period_and_the_answer() {
    let mut a = Asking::new(Duration::from_millis(500));
    let t0 = Instant::now();
    assert!(a.due(t0));
    assert!(!a.due(t0 + Duration::from_millis(600)), "still waiting");
    assert!(a.due(t0 + ANSWER_WAIT), "the answer was lost");
    a.answered();
    let t1 = t0 + ANSWER_WAIT;
    assert!(!a.due(t1 + Duration::from_millis(100)));
    a.soon();
    assert!(a.due(t1 + Duration::from_millis(100)));
}
