//! The ACTS driver end to end: a TCP client, the server, the real `acts` driver, a TCP link
//! and the emulated ACTS server; packets forwarded unchanged; faults (nothing listening,
//! short or cut packets, a zero count byte, silence) and the quit at shutdown.

use player::emulators::acts::{packet, ActsEmulator};
use player::emulators::EmuWorld;
use player_client::device;
use player_testkit::hw::*;

fn acts_toml(port: u16, extra: &str) -> String {
    robot_toml(&[("acts", "v", &format!("port = {port}\n{extra}"))])
}

#[test]
fn blob_packets_reach_the_client_unchanged() {
    let world = EmuWorld::room();
    let emu = ActsEmulator::start(world.clone(), 0).unwrap();
    let server = start_server(&acts_toml(emu.addr().port(), ""));
    let mut c = server.client();
    c.request("vr").unwrap().check().unwrap();
    let got = c.read().unwrap().vision.clone().expect("vision");
    let want = player_client::Vision::decode(&packet(&world.with(|r| r.vision()))).unwrap();
    assert_eq!(got, want);
    assert!(
        got.channels.iter().any(|c| !c.is_empty()),
        "the robot faces a coloured ball in the room"
    );
    assert!(emu.stats().requests >= 1);
}

#[test]
fn nothing_listening_gives_e_and_a_log_line_naming_the_address() {
    // A port nobody listens on: bind, note it, close.
    let port = player_testkit::free_port();
    assert_unreachable(
        &acts_toml(port, "connect_timeout = 0.3"),
        "vr",
        device::VISION,
        &[&format!("127.0.0.1:{port}")],
    );
}

#[test]
fn broken_packets_are_skipped_and_the_connection_is_reopened() {
    let emu = ActsEmulator::start(EmuWorld::room(), 0).unwrap();
    let server = start_server(&acts_toml(emu.addr().port(), "silence = 0.5"));
    let mut c = server.client();
    c.request("vr").unwrap().check().unwrap();
    c.set_timestamps(true).unwrap();
    c.read().unwrap();
    emu.faults(|f| {
        f.short_header = 1;
        f.close_mid_packet = 1;
        f.zero_count = 1;
    });
    wait_for("the faults to go out", || {
        emu.faults(|f| f.short_header == 0 && f.close_mid_packet == 0 && f.zero_count == 0)
    });
    emu.faults(|f| f.silent = true);
    server
        .log
        .wait_for_all(&["ACTS link lost", "no packet within"]);
    emu.faults(|f| f.silent = false);
    let t0 = c.read().unwrap().timestamp(device::VISION);
    read_until(&mut c, "fresh vision data", |r| {
        r.timestamp(device::VISION) > t0
    });
    assert!(
        server.log.has(&["bad ACTS header skipped"]),
        "{}",
        server.log.dump()
    );
    assert!(emu.stats().connections >= 4, "{:?}", emu.stats());
}

#[test]
fn closing_vision_sends_quit() {
    let emu = ActsEmulator::start(EmuWorld::room(), 0).unwrap();
    let server = start_server(&acts_toml(emu.addr().port(), ""));
    let mut c = server.client();
    c.request("vr").unwrap().check().unwrap();
    c.read().unwrap();
    c.request("vc").unwrap();
    wait_for("the quit", || emu.stats().quits == 1);
}
