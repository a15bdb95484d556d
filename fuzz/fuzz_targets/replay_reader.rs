//! Fuzzes the reader of recordings given to `-replay` (`player_proto::recording::read`: the
//! raw 0.7.4a channels of an MCAP file, streamed, every record bounded before it is
//! allocated). Checked on what it accepts: the readings are in time order, none is larger
//! than a data packet may carry, each is of a device the recording lists, and asking for
//! the robot it found gives the same readings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_proto::recording::read;
use player_proto::MAX_PAYLOAD;

fuzz_target!(|data: &[u8]| {
    let Ok(rec) = read(data, "fuzz.mcap", None) else {
        return;
    };
    assert!(!rec.readings.is_empty());
    assert!(rec.readings.windows(2).all(|w| w[0].time <= w[1].time));
    for r in &rec.readings {
        assert!(r.data.len() <= MAX_PAYLOAD);
        assert!(rec.devices.contains_key(&r.device));
    }
    let again = read(data, "fuzz.mcap", Some(&rec.robot)).expect("the robot it found");
    assert_eq!(again.readings.len(), rec.readings.len());
});
