//! The client library's extensions against the real server (in-process, real TCP): the
//! device list, the error channel's notices, the emergency stop and the shared key; and
//! `player-cli list` and `estop`, run as processes.

use std::process::Command;
use std::time::{Duration, Instant};

use player::settings::Settings;
use player_client::proto::ext::{kind, state};
use player_client::{device, Client, Error, Notice};
use player_testkit::{start_server, start_server_with, TestServer};

/// How long anything a test waits for may take on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

fn connect(server: &TestServer) -> Client {
    let mut c = Client::connect(server.addr()).unwrap();
    c.set_read_timeout(Some(PATIENCE)).unwrap();
    c
}

/// Waits for a notice of `kind`, skipping others; fails the test after `PATIENCE`.
fn notice_of(c: &mut Client, k: u8) -> Notice {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no notice of kind '{}'", char::from(k));
        if let Some(n) = c.wait_notice(left).unwrap() {
            if n.kind == k {
                return n;
            }
        }
    }
}

#[test]
fn the_device_list_names_every_device_with_its_driver_state_and_readers() {
    let server = start_server();
    let mut c = connect(&server);
    let list = c.device_list().unwrap();
    let mut codes: Vec<u8> = list.iter().map(|d| d.code).collect();
    codes.sort_unstable();
    let mut all = device::ALL.to_vec();
    all.sort_unstable();
    assert_eq!(codes, all, "{list:?}");
    for d in &list {
        assert_eq!(d.driver, "sim");
        assert_eq!(d.state, state::IDLE, "nobody holds {d:?}");
        assert_eq!((d.readers, d.writers), (0, 0));
    }
    let p = list.iter().find(|d| d.code == b'p').unwrap();
    assert_eq!(p.access, b'a');

    // Two readers of the position device, one writer; rounds flowing.
    let mut reader = connect(&server);
    reader.request("pr").unwrap().check().unwrap();
    c.request("pa").unwrap().check().unwrap();
    let deadline = Instant::now() + PATIENCE;
    let p = loop {
        // Read a round or two (the list asks while data streams to this client).
        reader.read().unwrap();
        c.set_speed(0, 0).unwrap();
        let list = c.device_list().unwrap();
        let p = list.into_iter().find(|d| d.code == b'p').unwrap();
        if p.rate_x10 > 0 || Instant::now() > deadline {
            break p;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(p.state, state::UP, "{p:?}");
    assert_eq!((p.readers, p.writers), (2, 1), "{p:?}");
    assert_eq!(p.data_size, 21, "{p:?}");
    assert!(p.rate_hz() > 0.0, "{p:?}");
    // The list did not disturb this client's rounds.
    assert!(c.read().unwrap().position.is_some());
}

#[test]
fn notices_say_why_a_request_and_a_command_were_refused() {
    let server = start_server();
    let mut c = connect(&server);
    c.set_notices(true).unwrap();
    c.set_timestamps(true).unwrap();
    let g = c.request("prqr").unwrap();
    assert!(!g.all_granted());
    let n = notice_of(&mut c, kind::REFUSED);
    assert_eq!(n.device, b'q', "{n}");
    // A command to a device held read-only: ignored, and told.
    c.command(
        b'p',
        &player_client::proto::data::PositionCommand {
            speed: 100,
            turn_rate: 0,
        }
        .encode(),
    )
    .unwrap();
    let n = notice_of(&mut c, kind::COMMAND);
    assert_eq!(n.device, b'p', "{n}");
    assert!(!n.to_string().is_empty());
    // Rounds (with timestamps) still read right around the notices.
    let r = c.read().unwrap();
    assert!(r.timestamp(b'p').is_some());
    // Off: no more notices.
    c.set_notices(false).unwrap();
    c.take_notices();
    c.request("zr").unwrap();
    c.command(b'p', &[0; 4]).unwrap();
    assert_eq!(c.wait_notice(Duration::from_millis(800)).unwrap(), None);
}

#[test]
fn estop_latches_for_every_client_and_a_writer_releases_it() {
    let server = start_server();
    let mut driver = connect(&server);
    driver.set_notices(true).unwrap();
    driver.request("pa").unwrap().check().unwrap();
    let mut bystander = connect(&server);
    bystander.set_notices(true).unwrap();
    bystander.estop(true).unwrap();
    let n = notice_of(&mut driver, kind::ESTOP);
    assert_eq!(n.kind_name(), "e-stop latched");
    notice_of(&mut bystander, kind::ESTOP);
    // Commands are ignored while latched: the robot stays still.
    let end = Instant::now() + Duration::from_secs(1);
    while Instant::now() < end {
        driver.set_speed(200, 0).unwrap();
        let p = driver.read().unwrap().position.unwrap();
        assert_eq!(p.speed, 0, "moved while latched");
    }
    driver.estop(false).unwrap();
    notice_of(&mut bystander, kind::ESTOP_RELEASED);
    let deadline = Instant::now() + PATIENCE;
    loop {
        driver.set_speed(200, 0).unwrap();
        if driver.read().unwrap().position.unwrap().speed > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "never moved after the release");
    }
    driver.set_speed(0, 0).unwrap();
}

fn keyed() -> Settings {
    let mut s = Settings::default_config();
    s.access.key = "sesame".into();
    s
}

#[test]
fn the_key_gives_write_access_and_a_wrong_one_ends_the_connection() {
    let server = start_server_with(keyed(), player::builtin_catalog());
    let mut c = connect(&server);
    c.set_notices(true).unwrap();
    let g = c.request("pa").unwrap();
    assert_eq!(
        c.access(b'p'),
        Some(b'r'),
        "read-only without the key: {g:?}"
    );
    assert!(matches!(
        c.set_speed(100, 0),
        Err(Error::NotWritable { .. })
    ));
    c.present_key(b"sesame").unwrap();
    c.request("pa").unwrap().check().unwrap();
    c.set_speed(0, 0).unwrap();

    let mut wrong = connect(&server);
    wrong.set_notices(true).unwrap();
    wrong.present_key(b"open sesame").unwrap();
    let n = notice_of(&mut wrong, kind::ACCESS);
    assert!(n.text.contains("key"), "{n}");
    let deadline = Instant::now() + PATIENCE;
    loop {
        match wrong.wait_notice(Duration::from_millis(200)) {
            Err(Error::Disconnected { .. }) | Err(Error::Io(_)) => break,
            Ok(_) => assert!(Instant::now() < deadline, "still connected"),
            Err(e) => panic!("{e}"),
        }
    }
    assert!(matches!(
        c.present_key(&[b'k'; 65]),
        Err(Error::InvalidArgument(_))
    ));
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_player-cli"))
        .args(args)
        .output()
        .expect("player-cli runs")
}

#[test]
fn player_cli_lists_devices_and_latches_and_releases_the_estop() {
    let server = start_server_with(keyed(), player::builtin_catalog());
    let addr = server.addr().to_string();
    // A reader, so one row shows it.
    let mut reader = connect(&server);
    reader.request("lr").unwrap().check().unwrap();
    reader.read().unwrap();

    let out = cli(&["-h", &addr, "list"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 7, "{text}");
    let laser = rows.iter().find(|r| r[0] == "l").expect("a laser row");
    assert_eq!(&laser[..5], &["l", "laser", "sim", "read", "up"], "{text}");
    assert_eq!(laser[5], "1", "one reader: {text}");
    assert_eq!(laser[7], "722", "{text}");

    let mut watcher = connect(&server);
    watcher.set_notices(true).unwrap();
    let out = cli(&["-h", &addr, "estop", "on"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("e-stop latched"));
    notice_of(&mut watcher, kind::ESTOP);
    // Without the key the release is refused, and the tool says so.
    let out = cli(&["-h", &addr, "estop", "off"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let out = cli(&["-h", &addr, "-k", "sesame", "estop", "off"]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("e-stop released"));
    notice_of(&mut watcher, kind::ESTOP_RELEASED);
}
