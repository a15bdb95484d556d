//! The navigation layouts, checked against bytes written by hand from the layout text of
//! docs/extensions.md (and Player 1.6.5's player.h for `H` and `G`), not from the encoders.

use super::*;

/// Big-endian bytes of each value, concatenated: the test's own writer.
fn be(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn map_data_is_28_bytes_of_id_size_resolution_and_origin() {
    let b = be(&[
        &7u32.to_be_bytes(),
        &640u32.to_be_bytes(),
        &480u32.to_be_bytes(),
        &50_000u32.to_be_bytes(), // 0.05 m
        &(-16_000i32).to_be_bytes(),
        &(-12_000i32).to_be_bytes(),
        &(-3600i32).to_be_bytes(),
    ]);
    assert_eq!(b.len(), 28);
    let m = MapInfo::decode(&b).unwrap();
    assert_eq!(
        m,
        MapInfo {
            map_id: 7,
            width: 640,
            height: 480,
            resolution: 50_000,
            origin_x: -16_000,
            origin_y: -12_000,
            origin_heading: -3600,
        }
    );
    assert_eq!(m.resolution_m(), 0.05);
    assert_eq!(m.encode(), b);
    assert!(MapInfo::decode(&b[..27]).is_err());
}

#[test]
fn a_tile_request_is_t_and_four_u32_and_its_answer_carries_the_cells() {
    let req = be(&[
        b"t",
        &3u32.to_be_bytes(),
        &2u32.to_be_bytes(),
        &2u32.to_be_bytes(),
        &3u32.to_be_bytes(),
    ]);
    let r = TileRequest::decode(&req).unwrap();
    assert_eq!(
        r,
        TileRequest {
            col: 3,
            row: 2,
            width: 2,
            height: 3
        }
    );
    assert_eq!(r.encode(), req);
    assert_eq!(
        tile_config(r),
        be(&[b"xM", &17u16.to_be_bytes(), &req]),
        "x M <size 17> t ..."
    );
    // The answer (the `y` payload after the kind `M`), exactly as the issue gives it: map
    // id, col, row, width, height, then the 6 cells as i8 row by row from the lower-left.
    // No config code comes first.
    let ans = be(&[
        &9u32.to_be_bytes(),
        &3u32.to_be_bytes(),
        &2u32.to_be_bytes(),
        &2u32.to_be_bytes(),
        &3u32.to_be_bytes(),
        &[0xff, 0x00, 0x01, 0x01, 0xff, 0xff],
    ]);
    assert_eq!(ans.len(), 20 + 6);
    let t = Tile::decode(&ans).unwrap();
    assert_eq!(t.map_id, 9);
    assert_eq!(t.rect, r);
    assert_eq!(t.cells, vec![-1, 0, 1, 1, -1, -1]);
    assert_eq!(t.encode().unwrap(), ans);
    assert_eq!(answered_code(b'M', &ans), Some(b't'), "M's one answer");
    assert_eq!(answered_code(b'H', b"g..."), Some(b'g'), "1.6.5's subtype");
    // Cut short, a cell too many, a rectangle over the bound.
    assert!(Tile::decode(&ans[..ans.len() - 1]).is_err());
    assert!(Tile::decode(&[&ans[..], &[0]].concat()).is_err());
    assert!(Tile::decode(&ans[..19]).is_err());
    let huge = be(&[
        &0u32.to_be_bytes(),
        &0u32.to_be_bytes(),
        &0u32.to_be_bytes(),
        &300u32.to_be_bytes(),
        &201u32.to_be_bytes(),
    ]);
    assert!(Tile::decode(&huge).is_err(), "60300 cells > 60000");
    let huge_request = [&[b't'][..], &huge[4..]].concat();
    assert!(TileRequest::decode(&huge_request)
        .unwrap()
        .cells()
        .is_none());
}

#[test]
fn the_tiles_of_a_map_cover_it_once_within_the_bound() {
    for (w, h) in [(1, 1), (640, 480), (2000, 2000), (8192, 8192), (61_000, 2)] {
        let m = MapInfo {
            width: w,
            height: h,
            ..MapInfo::default()
        };
        let mut seen = 0u64;
        for t in m.tiles() {
            assert!(t.cells().is_some(), "{t:?}");
            assert!(t.col + t.width <= w && t.row + t.height <= h);
            seen += u64::from(t.width) * u64::from(t.height);
        }
        assert_eq!(seen, u64::from(w) * u64::from(h));
    }
}

/// One 1.6.5 hypothesis: mean (i32 x 3), cov (i64 x 9), alpha (u32).
fn hypothesis_bytes(mean: [i32; 3], cov_diag: i64, alpha: u32) -> Vec<u8> {
    let mut v = Vec::new();
    for m in mean {
        v.extend_from_slice(&m.to_be_bytes());
    }
    for k in 0..9 {
        let c = if k % 4 == 0 { cov_diag } else { -1 };
        v.extend_from_slice(&c.to_be_bytes());
    }
    v.extend_from_slice(&alpha.to_be_bytes());
    v
}

#[test]
fn localize_data_is_player_1_6_5s() {
    // u16 pending_count, u32 pending_time_sec, u32 pending_time_usec, u32 hypoth_count,
    // then 88 bytes per hypothesis.
    let b = be(&[
        &3u16.to_be_bytes(),
        &1_700_000_000u32.to_be_bytes(),
        &250_000u32.to_be_bytes(),
        &2u32.to_be_bytes(),
        &hypothesis_bytes([1000, -2000, 648_000], 2500, 900_000),
        &hypothesis_bytes([5, 6, 7], 1 << 40, 100_000),
    ]);
    assert_eq!(b.len(), 14 + 2 * 88);
    let l = Localize::decode(&b).unwrap();
    assert_eq!(l.pending_count, 3);
    assert_eq!(
        (l.pending_time_sec, l.pending_time_usec),
        (1_700_000_000, 250_000)
    );
    assert_eq!(l.hypotheses.len(), 2);
    let h = l.hypotheses[0];
    assert_eq!(h.mean, [1000, -2000, 648_000]);
    assert_eq!(h.cov, [[2500, -1, -1], [-1, 2500, -1], [-1, -1, 2500]]);
    assert_eq!(h.alpha, 900_000);
    assert_eq!(l.hypotheses[1].cov[2][2], 1 << 40);
    assert_eq!(l.encode().unwrap(), b);
    // A count that the size does not carry, or over 10.
    assert!(Localize::decode(&b[..b.len() - 1]).is_err());
    let mut eleven = b[..14].to_vec();
    eleven[10..14].copy_from_slice(&11u32.to_be_bytes());
    eleven.extend(std::iter::repeat_n(0, 11 * 88));
    assert!(Localize::decode(&eleven).is_err());
    assert!(Localize {
        hypotheses: vec![Hypothesis::default(); 11],
        ..Localize::default()
    }
    .encode()
    .is_err());
    // No hypothesis: 14 bytes.
    let empty = Localize::decode(&[0; 14]).unwrap();
    assert!(empty.hypotheses.is_empty());
}

#[test]
fn set_pose_is_s_mean_and_covariance() {
    let body = hypothesis_bytes([-500, 700, 3600], 90_000, 0);
    let payload = be(&[b"s", &body[..84]]);
    assert_eq!(payload.len(), 85);
    let p = SetPose::decode(&payload).unwrap();
    assert_eq!(p.mean, [-500, 700, 3600]);
    assert_eq!(p.cov[1][1], 90_000);
    assert_eq!(p.cov[0][1], -1);
    assert_eq!(p.encode(), payload);
    assert_eq!(&set_pose_config(p)[..4], &[b'x', b'H', 0, 85]);
    assert!(SetPose::decode(&payload[..84]).is_err());
}

#[test]
fn a_particles_answer_is_1_6_5s_get_particles_then_first_and_total() {
    // u8 code 'g', i32 mean[3], u64 variance, u32 count, count x (i32 pose[3], u32
    // alpha), then u32 first, u32 total.
    let b = be(&[
        b"g",
        &10i32.to_be_bytes(),
        &20i32.to_be_bytes(),
        &30i32.to_be_bytes(),
        &123_456u64.to_be_bytes(),
        &2u32.to_be_bytes(),
        &1i32.to_be_bytes(),
        &2i32.to_be_bytes(),
        &3i32.to_be_bytes(),
        &500_000u32.to_be_bytes(),
        &(-4i32).to_be_bytes(),
        &5i32.to_be_bytes(),
        &6i32.to_be_bytes(),
        &500_000u32.to_be_bytes(),
        &100u32.to_be_bytes(),
        &102u32.to_be_bytes(),
    ]);
    assert_eq!(b.len(), 25 + 32 + 8);
    let p = Particles::decode(&b).unwrap();
    assert_eq!(p.mean, [10, 20, 30]);
    assert_eq!(p.variance, 123_456);
    assert_eq!(
        p.particles,
        vec![
            Particle {
                pose: [1, 2, 3],
                alpha: 500_000
            },
            Particle {
                pose: [-4, 5, 6],
                alpha: 500_000
            }
        ]
    );
    assert_eq!((p.first, p.total), (100, 102));
    assert_eq!(p.encode().unwrap(), b);
    assert!(Particles::decode(&b[..b.len() - 1]).is_err());
    let mut many = b[..25].to_vec();
    many[21..25].copy_from_slice(&101u32.to_be_bytes());
    many.extend(std::iter::repeat_n(0, 101 * 16 + 8));
    assert!(Particles::decode(&many).is_err(), "over 100");
    assert_eq!(particles_config(), [b'x', b'H', 0, 1, b'g']);
    assert_eq!(global_config(), [b'x', b'H', 0, 1, b'G']);
}

#[test]
fn planner_layouts_are_player_1_6_5s_plus_a_state() {
    // Command: i32 gx mm, i32 gy mm, i32 ga deg.
    let cmd = be(&[
        &1500i32.to_be_bytes(),
        &(-250i32).to_be_bytes(),
        &90i32.to_be_bytes(),
    ]);
    assert_eq!(
        Goal::decode(&cmd).unwrap(),
        Goal {
            x: 1500,
            y: -250,
            a: 90
        }
    );
    assert_eq!(Goal::decode(&cmd).unwrap().encode(), cmd);
    // Data: u8 valid, u8 done, pose, goal, waypoint (i32 x 3 each), i16 curr_waypoint,
    // u16 waypoint_count, u8 state.
    let data = be(&[
        &[1, 0],
        &100i32.to_be_bytes(),
        &200i32.to_be_bytes(),
        &45i32.to_be_bytes(),
        &1500i32.to_be_bytes(),
        &(-250i32).to_be_bytes(),
        &90i32.to_be_bytes(),
        &700i32.to_be_bytes(),
        &0i32.to_be_bytes(),
        &0i32.to_be_bytes(),
        &(-1i16).to_be_bytes(),
        &12u16.to_be_bytes(),
        &[2],
    ]);
    assert_eq!(data.len(), 43);
    let p = Planner::decode(&data).unwrap();
    assert!(p.valid && !p.done);
    assert_eq!(p.pose, [100, 200, 45]);
    assert_eq!(p.goal, [1500, -250, 90]);
    assert_eq!(p.waypoint, [700, 0, 0]);
    assert_eq!((p.curr_waypoint, p.waypoint_count), (-1, 12));
    assert_eq!(p.state, PlannerState::Driving);
    assert_eq!(p.encode(), data);
    assert!(Planner::decode(&data[..42]).is_err());
    for k in 0..=8u8 {
        assert_eq!(PlannerState::from_code(k).code(), k);
    }
    assert_eq!(PlannerState::from_code(7).name(), "pre-empted");
    // Waypoints answer: 'w', u16 count, count x (i32 x, y, a).
    let w = be(&[
        b"w",
        &2u16.to_be_bytes(),
        &1i32.to_be_bytes(),
        &2i32.to_be_bytes(),
        &3i32.to_be_bytes(),
        &4i32.to_be_bytes(),
        &5i32.to_be_bytes(),
        &6i32.to_be_bytes(),
    ]);
    let ws = Waypoints::decode(&w).unwrap();
    assert_eq!(ws.0, vec![[1, 2, 3], [4, 5, 6]]);
    assert_eq!(ws.encode().unwrap(), w);
    assert!(Waypoints::decode(&w[..w.len() - 1]).is_err());
    assert!(Waypoints(vec![[0; 3]; 129]).encode().is_err());
    assert_eq!(waypoints_config(), [b'x', b'G', 0, 1, b'w']);
    assert_eq!(enable_config(false), [b'x', b'G', 0, 2, b'e', 0]);
    assert_eq!(cancel_config(), [b'x', b'G', 0, 1, b'c']);
}
