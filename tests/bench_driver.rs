//! The `bench` driver (canned readings for load tests) over real TCP: every device's
//! reading has the size of the manual's Table 7, each device is published at the
//! configured rate while it is read and its readings do not change (a commanded base
//! included), and a code it was not given is refused.

use player::settings::Settings;
use player_testkit::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn server(hz: f64, devices: &str) -> TestServer {
    let text = format!(
        "[[robot]]\nname = \"bench\"\nport = 0\nbind = \"127.0.0.1\"\nweb_port = 0\n\n\
         [[robot.driver]]\ndriver = \"bench\"\ndevices = [{devices}]\n\
         [robot.driver.params]\nhz = {hz}\n"
    );
    let s = Settings::from_toml(&text, "bench driver test").unwrap_or_else(|e| panic!("{e}"));
    start_server_with(s, player::builtin_catalog())
}

#[test]
fn every_device_is_published_at_its_rate_with_the_sizes_of_table_7() {
    let server = server(20.0, "\"p\", \"s\", \"m\", \"g\", \"l\", \"z\", \"v\"");
    let mut c = Client::connect(server.addr());
    let pairs: Vec<(u8, u8)> = b"pslmgzv".iter().map(|&d| (d, b'r')).collect();
    let reply = c.request(&pairs);
    let granted: Vec<u8> = reply.chunks(2).map(|p| p[1]).collect();
    assert_eq!(granted, [b'r'; 7], "{reply:?}");
    // Push new, as fast as they come: each reading once, at the driver's rate.
    c.frequency(1000);
    c.data_mode(2);
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(300) {
        c.read_message_within(Duration::from_millis(100));
    }
    let mut seen: BTreeMap<u8, (usize, Vec<Vec<u8>>)> = BTreeMap::new();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        if let Some((code, payload)) = c.read_message_within(Duration::from_millis(200)) {
            let e = seen.entry(code).or_default();
            e.0 += 1;
            if !e.1.contains(&payload) {
                e.1.push(payload);
            }
        }
    }
    for (code, size) in [
        (b'p', 21),
        (b's', 32),
        (b'l', 722),
        (b'm', 3),
        (b'g', 2),
        (b'z', 6),
    ] {
        let (n, payloads) = &seen[&code];
        assert!(
            (30..=50).contains(n),
            "{}: {n} readings in 2 s at 20 Hz",
            char::from(code)
        );
        assert_eq!(
            payloads.len(),
            1,
            "{}: canned, always the same",
            char::from(code)
        );
        assert_eq!(payloads[0].len(), size, "{}", char::from(code));
    }
    assert!((30..=50).contains(&seen[&b'v'].0), "{:?}", seen[&b'v'].0);
    // The laser reads its canned range, 2 m, in every beam.
    let laser = &seen[&b'l'].1[0];
    assert!(laser.chunks(2).all(|r| r == 2000u16.to_be_bytes()));
    server.shutdown();
}

#[test]
fn the_base_is_granted_write_access_its_reading_stays_canned_and_other_codes_are_refused() {
    let server = server(10.0, "\"p\", \"l\"");
    let mut c = Client::connect(server.addr());
    let reply = c.request(&[(b'p', b'a')]);
    assert_eq!(reply, [b'p', b'a'], "write access to the base is granted");
    c.drive(300, 10);
    let first = loop {
        let (code, payload) = c.read_message();
        if code == b'p' {
            break payload;
        }
    };
    assert_eq!(
        first,
        vec![0; 21],
        "the base reads zero whatever it is told"
    );
    // A code the driver was not given is refused.
    let reply = c.request(&[(b's', b'r')]);
    assert_eq!(reply, [b's', b'e'], "{reply:?}");
    server.shutdown();
}
