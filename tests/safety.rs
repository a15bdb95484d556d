//! Safety over real TCP: the command watchdog stops a hung controller's robot, the
//! emergency stop latches and releases, the error channel says why, the access policy
//! (key, read-only, allow-lists, connection limits) holds, unknown devices take no slot,
//! and a client that never reads its replies stays bounded and is disconnected.

use player::settings::Settings;
use player_proto::data::Position;
use player_testkit::*;
use std::io::Write;
use std::time::{Duration, Instant};

/// Turns the error channel on.
fn notices_on(c: &mut Client) {
    c.config(b'y', b'e', &[1]);
}

/// Reads position readings until `f` accepts one; returns it and when it came.
fn watch_until(c: &mut Client, what: &str, f: impl Fn(&Position) -> bool) -> (Position, Instant) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let p = c.next_position();
        if f(&p) {
            return (p, Instant::now());
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

fn settings_with(f: impl FnOnce(&mut Settings)) -> Settings {
    let mut s = default_settings();
    f(&mut s);
    s
}

#[test]
fn a_hung_controller_is_stopped_by_the_watchdog_and_resumes_with_a_fresh_command() {
    let server = start_server();
    let mut watcher = Client::connect(server.addr());
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    let mut c = Client::connect(server.addr());
    notices_on(&mut c);
    assert_eq!(c.request(&[(b'p', b'w')]), b"pw");
    // One command, then the controller hangs (stays connected, sends nothing).
    c.drive_once(200, 0);
    let sent = Instant::now();
    let (cruise, _) = watch_until(&mut watcher, "the robot to move", |p| p.speed >= 100);
    // The watchdog (0.5 s by default) zeroes the command: the robot slows and stops.
    let (_, slowing) = watch_until(&mut watcher, "the robot to slow down", |p| {
        p.speed < cruise.speed.max(100)
    });
    let took = slowing.duration_since(sent);
    assert!(
        took >= Duration::from_millis(400),
        "stopped after only {took:?}: not the watchdog"
    );
    // command_timeout + 0.2 s, plus slack for a loaded machine's scheduling.
    assert!(
        took <= Duration::from_millis(700 + 800),
        "still driving {took:?} after the last command"
    );
    watch_until(&mut watcher, "the robot to stop", |p| p.speed == 0);
    // The hung controller's error channel says why (once, not per tick).
    let (dev, text) = c.wait_notice(b'w', Duration::from_secs(3));
    assert_eq!(dev, b'p');
    assert!(text.contains("command_timeout"), "{text}");
    // It stays stopped ...
    let still = watcher.position_after(Duration::from_millis(1000));
    assert_eq!(still.speed, 0, "{still:?}");
    // ... until a fresh command arrives.
    c.drive_once(200, 0);
    watch_until(&mut watcher, "the robot to move again", |p| p.speed >= 100);
}

#[test]
fn a_controller_that_keeps_commanding_keeps_driving() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    c.drive(150, 0);
    // Two seconds at 10 Hz with a command per round: never cut.
    let end = Instant::now() + Duration::from_secs(2);
    watch_until(&mut c, "the robot to move", |p| p.speed >= 100);
    while Instant::now() < end {
        let p = c.next_position();
        assert!(p.speed >= 100, "cut while commanded: {p:?}");
    }
}

#[test]
fn command_timeout_zero_disables_the_watchdog() {
    let server = start_server_command_timeout(0.0);
    let mut watcher = Client::connect(server.addr());
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'p', b'w')]), b"pw");
    c.drive_once(200, 0);
    watch_until(&mut watcher, "the robot to move", |p| p.speed >= 100);
    let later = watcher.position_after(Duration::from_millis(1500));
    assert!(later.speed >= 100, "{later:?}");
}

#[test]
fn the_emergency_stop_latches_until_released_and_everyone_watching_is_told() {
    let server = start_server();
    let mut driver = Client::connect(server.addr());
    notices_on(&mut driver);
    assert_eq!(driver.request(&[(b'p', b'a')]), b"pa");
    driver.drive(200, 0);
    watch_until(&mut driver, "the robot to move", |p| p.speed >= 100);

    // Any client may latch it: this one holds no device at all.
    let mut bystander = Client::connect(server.addr());
    notices_on(&mut bystander);
    bystander.config(b'y', b'E', &[1]);
    let (dev, text) = bystander.wait_notice(b'E', Duration::from_secs(3));
    assert_eq!(dev, 0);
    assert!(text.contains("127.0.0.1"), "names who latched it: {text}");
    driver.wait_notice(b'E', Duration::from_secs(3));
    // The driver keeps commanding (its held command, every round): ignored, told why.
    let (dev, text) = driver.wait_notice(b'c', Duration::from_secs(3));
    assert_eq!(dev, b'p');
    assert!(text.contains("emergency stop"), "{text}");
    watch_until(&mut driver, "the robot to stop", |p| p.speed == 0);
    let held = driver.position_after(Duration::from_millis(1000));
    assert_eq!(
        held.speed, 0,
        "held stopped while commands arrive: {held:?}"
    );

    // Released explicitly: the next commands drive again.
    bystander.config(b'y', b'E', &[0]);
    driver.wait_notice(b'e', Duration::from_secs(3));
    watch_until(&mut driver, "the robot to move again", |p| p.speed >= 100);
}

#[test]
fn a_read_only_client_may_latch_but_not_release_the_emergency_stop() {
    let server = start_server_with(
        settings_with(|s| s.access.key = "sesame".into()),
        player::builtin_catalog(),
    );
    let mut ro = Client::connect(server.addr());
    notices_on(&mut ro);
    ro.config(b'y', b'E', &[1]);
    ro.wait_notice(b'E', Duration::from_secs(3));
    ro.config(b'y', b'E', &[0]);
    let (_, text) = ro.wait_notice(b'a', Duration::from_secs(3));
    assert!(text.contains("write access"), "{text}");
    // Still latched: a client with the key releases it.
    let mut rw = Client::connect(server.addr());
    rw.config(b'y', b'k', b"sesame");
    notices_on(&mut rw);
    let (_, text) = rw.wait_notice(b'E', Duration::from_secs(3));
    assert!(
        text.contains("latched"),
        "a new watcher learns it is latched: {text}"
    );
    rw.config(b'y', b'E', &[0]);
    ro.wait_notice(b'e', Duration::from_secs(3));
}

#[test]
fn without_the_key_a_client_is_read_only_and_with_it_may_drive() {
    let server = start_server_with(
        settings_with(|s| s.access.key = "sesame".into()),
        player::builtin_catalog(),
    );
    let mut c = Client::connect(server.addr());
    notices_on(&mut c);
    assert_eq!(c.request(&[(b'p', b'a'), (b's', b'r')]), b"prsr");
    let (dev, text) = c.wait_notice(b'r', Duration::from_secs(3));
    assert_eq!(dev, b'p');
    assert!(text.contains("key"), "{text}");
    assert_eq!(c.request(&[(b'g', b'w')]), b"ge");
    // A command anyway: ignored and told.
    c.drive_once(100, 0);
    let (_, text) = c.wait_notice(b'c', Duration::from_secs(3));
    assert!(text.contains("no write access"), "{text}");
    // The key: write access.
    c.config(b'y', b'k', b"sesame");
    let (_, text) = c.wait_notice(b'a', Duration::from_secs(3));
    assert!(text.contains("accepted"), "{text}");
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    c.drive(200, 0);
    watch_until(&mut c, "the robot to move", |p| p.speed >= 100);
}

#[test]
fn a_wrong_key_closes_the_connection() {
    let server = start_server_with(
        settings_with(|s| s.access.key = "sesame".into()),
        player::builtin_catalog(),
    );
    let mut c = Client::connect(server.addr());
    notices_on(&mut c);
    c.config(b'y', b'k', b"open sesame");
    let (_, text) = c.wait_notice(b'a', Duration::from_secs(3));
    assert!(text.contains("wrong key"), "{text}");
    c.expect_closed(Duration::from_secs(5));
    assert_fresh_client_served(server.addr());
}

#[test]
fn with_keyless_refuse_the_key_must_come_first() {
    let server = start_server_with(
        settings_with(|s| {
            s.access.key = "sesame".into();
            s.access.keyless = "refuse".into();
        }),
        player::builtin_catalog(),
    );
    let mut c = Client::connect(server.addr());
    c.send_request(&[(b'p', b'r')]);
    c.expect_closed(Duration::from_secs(5));
    let mut c = Client::connect(server.addr());
    c.config(b'y', b'k', b"sesame");
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
}

#[test]
fn allow_lists_refuse_or_make_read_only_and_say_why() {
    let server = start_server_with(
        settings_with(|s| s.access.read_allow = vec!["10.0.0.0/8".into()]),
        player::builtin_catalog(),
    );
    let mut c = Client::connect(server.addr());
    notices_on(&mut c);
    let (_, text) = c.wait_notice(b'a', Duration::from_secs(3));
    assert!(text.contains("read_allow"), "{text}");
    c.expect_closed(Duration::from_secs(5));

    let server = start_server_with(
        settings_with(|s| s.access.write_allow = vec!["10.0.0.0/8".into()]),
        player::builtin_catalog(),
    );
    let mut c = Client::connect(server.addr());
    notices_on(&mut c);
    assert_eq!(c.request(&[(b'p', b'a')]), b"pr");
    let (_, text) = c.wait_notice(b'r', Duration::from_secs(3));
    assert!(text.contains("write_allow"), "{text}");
}

#[test]
fn connection_limits_refuse_newcomers_and_keep_serving_the_others() {
    let server = start_server_with(
        settings_with(|s| s.access.max_per_address = 2),
        player::builtin_catalog(),
    );
    let streamer = Streamer::start(server.addr(), &[(b'p', b'r')], None);
    let _second = Client::connect(server.addr());
    let mut third = Client::connect(server.addr());
    notices_on(&mut third);
    let (_, text) = third.wait_notice(b'a', Duration::from_secs(3));
    assert!(text.contains("max_per_address"), "{text}");
    third.expect_closed(Duration::from_secs(5));
    let from = Instant::now();
    // A sleep on purpose: the first client's rate is measured over these two seconds.
    std::thread::sleep(Duration::from_secs(2));
    streamer.assert_rate(from, Instant::now(), 10.0, "the first client, meanwhile");

    let server = start_server_with(
        settings_with(|s| s.server.max_clients = 1),
        player::builtin_catalog(),
    );
    let mut first = Client::connect(server.addr());
    assert_eq!(first.request(&[(b'p', b'r')]), b"pr");
    let mut second = Client::connect(server.addr());
    notices_on(&mut second);
    let (_, text) = second.wait_notice(b'a', Duration::from_secs(3));
    assert!(text.contains("max_clients"), "{text}");
    second.expect_closed(Duration::from_secs(5));
    first.next_position();
}

#[test]
fn unknown_devices_take_no_slot() {
    let server = start_server();
    let mut c = Client::connect(server.addr());
    notices_on(&mut c);
    // 38 codes no robot serves, then the laser and the position device.
    let unknown: Vec<u8> = (b'A'..=b'Z').chain(b'0'..=b'9').chain(*b"#$").collect();
    assert_eq!(unknown.len(), 38);
    let mut pairs: Vec<(u8, u8)> = unknown.iter().map(|&d| (d, b'r')).collect();
    pairs.push((b'l', b'r'));
    pairs.push((b'p', b'r'));
    let reply = c.request(&pairs);
    let want: Vec<u8> = unknown
        .iter()
        .flat_map(|&d| [d, b'e'])
        .chain(*b"lrpr")
        .collect();
    assert_eq!(reply, want);
    let (dev, text) = c.wait_notice(b'r', Duration::from_secs(3));
    assert_eq!(dev, b'A');
    assert!(text.contains("no device"), "{text}");
    // Both real devices stream.
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let (d, _) = c.read_message();
        if d != b'y' && !seen.contains(&d) {
            seen.push(d);
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, b"lp");
}

#[test]
fn a_client_that_floods_requests_without_reading_is_bounded_and_disconnected() {
    let server = start_server_with(
        settings_with(|s| s.server.stall_timeout = 2.0),
        player::builtin_catalog(),
    );
    let streamer = Streamer::start(server.addr(), &[(b'p', b'r')], None);
    streamer.wait_rounds(3);
    let mut flooder = Client::connect(server.addr());
    flooder
        .stream
        .set_write_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let request = player_proto::message::request(&[(b'p', b'r'), (b's', b'r'), (b'l', b'r')]);
    let burst: Vec<u8> = request.repeat(6000);
    let from = Instant::now();
    let mut sent = 0usize;
    let ended = loop {
        assert!(
            from.elapsed() < Duration::from_secs(60),
            "still connected after {sent} bytes of requests"
        );
        // Whole bursts only (a cut request would break the framing).
        match flooder.stream.write_all(&burst) {
            Ok(()) => sent += burst.len(),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => break e,
        }
    };
    // What the server took is bounded by its output limit and the socket buffers, not by
    // what the client could send in the time.
    assert!(sent < 32 << 20, "the server took {sent} bytes of requests");
    assert!(
        matches!(
            ended.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
        "{ended}"
    );
    streamer.assert_rate(from, Instant::now(), 10.0, "a watcher during the flood");
}

#[test]
fn a_message_left_unfinished_ends_the_session_after_partial_timeout() {
    let server = start_server_with(
        settings_with(|s| s.server.partial_timeout = 1.0),
        player::builtin_catalog(),
    );
    let streamer = Streamer::start(server.addr(), &[(b'p', b'r')], None);
    // Half a header, and half a request; then nothing.
    let mut half_header = Client::connect(server.addr());
    half_header.send(b"dr");
    let mut half_request = Client::connect(server.addr());
    half_request.send(&[b'd', b'r', 0, 4, b'p']);
    let from = Instant::now();
    half_header.expect_closed(Duration::from_secs(5));
    half_request.expect_closed(Duration::from_secs(5));
    assert!(
        from.elapsed() >= Duration::from_millis(800),
        "{:?}",
        from.elapsed()
    );
    // A slow but steady client is not cut: one byte every 200 ms, finished in time.
    let mut slow = Client::connect(server.addr());
    for b in player_proto::message::request(&[(b'p', b'r')]) {
        slow.send(&[b]);
        // The slow client's pace.
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(slow.read_reply_skipping_data().1, b"pr");
    streamer.assert_rate(from, Instant::now(), 10.0, "a watcher meanwhile");
}
