//! Fuzzes the map image decoders (`player_nav::map::image::decode`: PGM `P5`/`P2` by our
//! own reader, PNG by the `png` crate, told apart by their first bytes), then what the map
//! loaders do with an image they accept: map_server's and Player's trinary rules, the map
//! built from the cells and, on small maps, the distance transform. Checked: one sum per
//! pixel, every pixel's value on the 0-255 scale, every cell free, unknown or occupied.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_nav::distance::DistanceField;
use player_nav::map::image::decode;
use player_nav::map::load::{trinary, PLAYER_FREE, PLAYER_OCCUPIED};
use player_nav::map::Map;
use player_nav::pose::Pose;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(r) = decode(data, Path::new("fuzz.img")) else {
        return;
    };
    assert_eq!(r.sums.len(), r.width * r.height);
    assert!((1..=4).contains(&r.channels), "{} channels", r.channels);
    for i in 0..r.sums.len() {
        let v = r.avg255(i);
        assert!((0.0..=255.0).contains(&v), "pixel {i}: {v}");
    }
    for (negate, occupied, free) in [(false, 0.65, 0.196), (true, PLAYER_OCCUPIED, PLAYER_FREE)] {
        let cells = trinary(&r, negate, occupied, free);
        assert_eq!(cells.len(), r.sums.len());
        let map = Map::with_cells(r.width, r.height, 0.05, Pose::new(-1.0, -2.0, 0.3), cells)
            .expect("a map of a decoded image");
        if r.sums.len() <= 1 << 16 {
            let d = DistanceField::to_occupied(&map);
            assert_eq!(d.squared().len(), r.sums.len());
        }
    }
});
