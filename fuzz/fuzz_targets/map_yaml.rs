//! Fuzzes the map_server YAML reader (`player_nav::map::load::yaml_from_str`, the text of a
//! map's `.yaml` that `player-nav` and the map device read): what it accepts is a usable
//! description (a positive finite resolution, a finite origin, thresholds in [0, 1] with
//! free at most occupied, the image resolved against the YAML's folder unless absolute). Nothing is read
//! from disk.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_nav::map::load::yaml_from_str;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("maps/fuzz.yaml");
    let Ok(y) = yaml_from_str(text, path) else {
        return;
    };
    assert!(y.resolution.is_finite() && y.resolution > 0.0, "{y:?}");
    assert!(y.origin.x.is_finite() && y.origin.y.is_finite() && y.origin.theta.is_finite());
    assert!((0.0..=1.0).contains(&y.free_thresh), "{y:?}");
    assert!((0.0..=1.0).contains(&y.occupied_thresh), "{y:?}");
    assert!(y.free_thresh <= y.occupied_thresh, "{y:?}");
    // Relative to the YAML's folder, or absolute as written.
    assert!(
        y.image.starts_with("maps") || y.image.is_absolute(),
        "{y:?}"
    );
});
