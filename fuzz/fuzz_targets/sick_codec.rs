//! Fuzzes the SICK LMS-200 codec: the telegram parser fed the input in chunks (sizes from
//! the input), each telegram re-built from its address and data to the same telegram, and
//! each telegram's data (and the raw input) read as a scan, whose ranges re-encode to a
//! scan telegram that parses back to them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player_devices::sick::{telegram, Event, Parser, Scan, MAX_LEN};

fn check_scan(data: &[u8]) {
    if let Ok(scan) = Scan::parse(data) {
        assert!(scan.flagged <= scan.ranges.len());
        let t = Scan::telegram(&scan.ranges, scan.status);
        let mut p = Parser::new();
        p.push(&t);
        match p.next_event() {
            Some(Event::Telegram { data, .. }) => {
                let again = Scan::parse(&data).expect("a built scan parses");
                assert_eq!(again.ranges, scan.ranges);
                assert_eq!(again.status, scan.status);
                assert_eq!(again.flagged, 0);
            }
            other => panic!("a built scan telegram parsed as {other:?}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let step = usize::from(data.first().copied().unwrap_or(1) % 17) + 1;
    let mut parser = Parser::new();
    for chunk in data.chunks(step) {
        parser.push(chunk);
        while let Some(e) = parser.next_event() {
            if let Event::Telegram { addr, data } = e {
                assert!(!data.is_empty() && data.len() <= MAX_LEN);
                let mut again = Parser::new();
                again.push(&telegram(addr, &data));
                assert_eq!(
                    again.next_event(),
                    Some(Event::Telegram {
                        addr,
                        data: data.clone()
                    })
                );
                check_scan(&data);
            }
        }
    }
    check_scan(data);
});
