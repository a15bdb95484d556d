use super::*;
use player_proto::nav::MAX_TILE_CELLS;

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
