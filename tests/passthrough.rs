//! The `passthrough` driver against a real remote server: the `player` binary serving the
//! simulated robot on a loopback port, and an in-process server whose devices are the
//! remote's, with one device of its own (`m`, a local simulated robot's misc).
//!
//! Checked: readings relayed byte for byte with the remote's timestamps; commands
//! forwarded move the remote robot; a local writer leaving, the local watchdog and the
//! local e-stop stop it (the remote's own watchdog is set to 60 s, so only the forwarded
//! stop can); killing the remote server makes the device report `f` on the error channel
//! while the local device keeps streaming, a new request for another remote device gets `e`
//! meanwhile, and the device reports `u` and streams again once the remote is back on the
//! same port; a remote with a key; a remote spoken to without the extensions; and
//! `config/fleet.toml` serving the arena's three robots.

use player::settings::Settings;
use player_proto::data::Position;
use player_proto::ext::{decode, Extension};
use player_testkit::*;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PLAYER: &str = env!("CARGO_BIN_EXE_player");

/// The remote server: the `player` binary with the simulated robot on a fixed port.
struct Remote {
    child: Option<Child>,
    port: u16,
    config: std::path::PathBuf,
}

impl Remote {
    /// Starts it on a free port, its command watchdog set to `command_timeout` seconds.
    fn start(command_timeout: f64) -> Remote {
        let port = free_port();
        let config = std::env::temp_dir().join(format!(
            "player-passthrough-{}-{port}.toml",
            std::process::id()
        ));
        std::fs::write(
            &config,
            format!(
                "[[robot]]\nname = \"remote\"\nport = {port}\nbind = \"127.0.0.1\"\nweb_port = 0\n\
                 command_timeout = {command_timeout}\n\
                 [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\", \"s\", \"m\", \"l\"]\n"
            ),
        )
        .unwrap();
        let mut r = Remote {
            child: None,
            port,
            config,
        };
        r.restart();
        r
    }

    /// Starts the process (again, on the same port) and waits until it accepts.
    fn restart(&mut self) {
        let child = Command::new(PLAYER)
            .arg("--config")
            .arg(&self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the player binary");
        self.child = Some(child);
        let addr = self.addr();
        wait_until(TIMEOUT, "the remote server to start", || {
            std::net::TcpStream::connect(addr).is_ok()
        });
    }

    /// SIGKILL: the server vanishes without shutting anything down.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(&self.config);
    }
}

/// The local server: `p l s` from the remote through one passthrough connection, `m` from
/// a local simulated robot.
fn start_local(remote_port: u16, command_timeout: f64) -> TestServer {
    let text = format!(
        "[[robot]]\nname = \"fleet\"\ncommand_timeout = {command_timeout}\n\
         [[robot.driver]]\ndriver = \"passthrough\"\ndevices = [\"p\", \"l\", \"s\"]\n\
         [robot.driver.params]\nport = {remote_port}\nsilence = 1.0\n\
         [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"m\"]\n"
    );
    let settings = Settings::from_toml(&text, "passthrough test").unwrap();
    start_server_with(settings, player::builtin_catalog())
}

/// A reading with the timestamp extension on: device, (seconds, microseconds), data.
type Stamped = (u8, (u32, u32), Vec<u8>);

fn split_stamp(code: u8, payload: &[u8]) -> Stamped {
    assert!(
        payload.len() >= 8,
        "no timestamp on a '{}' packet",
        code as char
    );
    let be = |i: usize| u32::from_be_bytes(payload[i..i + 4].try_into().unwrap());
    (code, (be(0), be(4)), payload[8..].to_vec())
}

/// A client reading `pairs` with timestamps, in push-new mode at 100 Hz (each new reading
/// once).
fn stamped_reader(addr: SocketAddr, pairs: &[(u8, u8)]) -> Client {
    let mut c = Client::connect(addr);
    c.timestamps(true);
    c.data_mode(2);
    c.frequency(100);
    assert_eq!(c.request(pairs), pairs_bytes(pairs));
    c
}

/// Every data packet read within `d`.
fn read_for(c: &mut Client, d: Duration) -> Vec<Stamped> {
    let end = Instant::now() + d;
    let mut out = Vec::new();
    while Instant::now() < end {
        if let Some((code, payload)) = c.read_message_within(Duration::from_millis(200)) {
            if code != b'y' && code != b'r' {
                out.push(split_stamp(code, &payload));
            }
        }
    }
    out
}

#[test]
fn readings_are_relayed_byte_for_byte_with_the_remote_timestamps() {
    let remote = Remote::start(0.5);
    let local = start_local(remote.port, 0.5);
    // The remote's own reader starts first, so it sees every reading the local one can.
    let mut direct = stamped_reader(remote.addr(), &[(b'l', b'r'), (b'p', b'r')]);
    let seen_direct = std::thread::spawn(move || read_for(&mut direct, Duration::from_secs(6)));
    // A sleep on purpose: the remote's own reader is reading before the relayed
    // one starts (nothing shows it from outside).
    std::thread::sleep(Duration::from_millis(300));
    let mut relayed = stamped_reader(local.addr(), &[(b'l', b'r'), (b'p', b'r')]);
    let got = read_for(&mut relayed, Duration::from_secs(3));
    let direct: HashMap<(u8, (u32, u32)), Vec<u8>> = seen_direct
        .join()
        .unwrap()
        .into_iter()
        .map(|(d, ts, data)| ((d, ts), data))
        .collect();
    let mut matched: HashMap<u8, usize> = HashMap::new();
    for (d, ts, data) in &got {
        let want = direct.get(&(*d, *ts)).unwrap_or_else(|| {
            panic!(
                "relayed '{}' reading stamped {ts:?} was never published by the remote",
                *d as char
            )
        });
        assert_eq!(want, data, "relayed '{}' payload differs", *d as char);
        *matched.entry(*d).or_default() += 1;
    }
    for (d, size) in [(b'l', 722), (b'p', 21)] {
        let n = matched.get(&d).copied().unwrap_or(0);
        assert!(n >= 5, "only {n} '{}' readings relayed in 3 s", d as char);
        assert!(got.iter().filter(|r| r.0 == d).all(|r| r.2.len() == size));
    }
    // Each relayed reading is relayed once (push-new at both hops).
    let mut stamps: Vec<_> = got.iter().map(|(d, ts, _)| (*d, *ts)).collect();
    let n = stamps.len();
    stamps.sort();
    stamps.dedup();
    assert_eq!(stamps.len(), n, "a reading was relayed twice");
}

/// Reads the remote's position until `f` holds; fails after `within`.
fn watch_until(c: &mut Client, within: Duration, what: &str, f: impl Fn(&Position) -> bool) {
    let deadline = Instant::now() + within;
    loop {
        if f(&c.next_position()) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

#[test]
fn commands_move_the_remote_robot_and_a_leaving_writer_stops_it() {
    // Both watchdogs at 60 s: only the forwarded writer-left stop can stop the robot.
    let remote = Remote::start(60.0);
    let local = start_local(remote.port, 60.0);
    let mut watcher = Client::connect(remote.addr());
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    // A local reader keeps the device open, so the remote device is not closed when the
    // writer leaves: the stop must come from the forwarded zero command.
    let mut reader = Client::connect(local.addr());
    assert_eq!(reader.request(&[(b'p', b'r')]), b"pr");
    let mut writer = Client::connect(local.addr());
    assert_eq!(writer.request(&[(b'p', b'a')]), b"pa");
    writer.drive(200, 0);
    watch_until(&mut watcher, TIMEOUT, "the remote robot to move", |p| {
        p.speed >= 150
    });
    drop(writer);
    let left = Instant::now();
    watch_until(&mut watcher, TIMEOUT, "the remote robot to stop", |p| {
        p.speed == 0
    });
    assert!(
        left.elapsed() < Duration::from_secs(30),
        "stopped only after {:?}",
        left.elapsed()
    );
    // The local reader still gets relayed readings (the remote device stayed open).
    let p = reader.position_after(Duration::from_millis(500));
    assert_eq!(p.speed, 0);
}

#[test]
fn the_local_watchdog_stops_the_remote_robot_when_commands_cease() {
    // The remote's watchdog at 60 s, the local one at the default 0.5 s.
    let remote = Remote::start(60.0);
    let local = start_local(remote.port, 0.5);
    let mut watcher = Client::connect(remote.addr());
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    let mut controller = Client::connect(local.addr());
    assert_eq!(controller.request(&[(b'p', b'a')]), b"pa");
    // One command, then nothing: the controller hangs while holding write access.
    controller.drive_once(200, 0);
    let sent = Instant::now();
    watch_until(&mut watcher, TIMEOUT, "the remote robot to move", |p| {
        p.speed >= 100
    });
    watch_until(&mut watcher, TIMEOUT, "the remote robot to stop", |p| {
        p.speed == 0
    });
    assert!(
        sent.elapsed() < Duration::from_secs(30),
        "stopped only after {:?}",
        sent.elapsed()
    );
    // A fresh command resumes it: the watchdog holds nothing against a controller.
    controller.drive_once(200, 0);
    watch_until(
        &mut watcher,
        TIMEOUT,
        "the remote robot to move again",
        |p| p.speed >= 100,
    );
}

/// Reads and drops whatever comes for `d`.
fn drain_for(c: &mut Client, d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        let _ = c.read_message_within(Duration::from_millis(50));
    }
}

/// The next notice of `kind` about `device`, counting the data packets of each device read
/// meanwhile.
fn wait_notice(
    c: &mut Client,
    kind: u8,
    device: u8,
    counts: &mut HashMap<u8, usize>,
) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let Some((code, payload)) = c.read_message_within(Duration::from_millis(200)) else {
            continue;
        };
        if code != b'y' {
            *counts.entry(code).or_default() += 1;
            continue;
        }
        if let Ok(Extension::Notice(n)) = decode(&payload) {
            if n.kind == kind && n.device == device {
                return Some(n.text);
            }
        }
    }
    None
}

#[test]
fn a_killed_remote_is_reported_failed_and_comes_back_on_the_same_port() {
    let mut remote = Remote::start(0.5);
    let local = start_local(remote.port, 0.5);
    let mut c = Client::connect(local.addr());
    c.config(b'y', b'e', &[1]);
    c.data_mode(2);
    assert_eq!(c.request(&[(b'p', b'r'), (b'm', b'r')]), b"prmr");
    let mut counts = HashMap::new();
    let start = Instant::now();
    while counts.get(&b'p').copied().unwrap_or(0) < 3 || counts.get(&b'm').copied().unwrap_or(0) < 3
    {
        assert!(
            start.elapsed() < TIMEOUT,
            "no data before the kill: {counts:?}"
        );
        if let Some((code, _)) = c.read_message_within(Duration::from_millis(200)) {
            *counts.entry(code).or_default() += 1;
        }
    }
    remote.kill();
    let killed = Instant::now();
    let mut during = HashMap::new();
    let why = wait_notice(&mut c, b'f', b'p', &mut during)
        .expect("no 'f' notice for the relayed device after the remote was killed");
    assert!(why.contains("reconnecting"), "{why}");
    // While the remote is away: the local device streams on, the relayed one is silent,
    // and another remote device cannot be set up.
    // (Readings the dead remote had already sent may still be on their way for a moment.)
    let mut other = Client::connect(local.addr());
    assert_eq!(other.request(&[(b'l', b'r')]), b"le");
    drain_for(&mut c, Duration::from_millis(500));
    let mut away = HashMap::new();
    let since = Instant::now();
    while since.elapsed() < Duration::from_secs(2) {
        if let Some((code, _)) = c.read_message_within(Duration::from_millis(200)) {
            *away.entry(code).or_default() += 1;
        }
    }
    assert_eq!(
        away.get(&b'p').copied().unwrap_or(0),
        0,
        "relayed readings while the remote was dead"
    );
    let m_away = away.get(&b'm').copied().unwrap_or(0);
    let secs = since.elapsed().as_secs_f64();
    assert!(
        m_away as f64 >= secs * 3.0,
        "the local device slowed to {m_away} readings in {secs:.1} s while the remote was away \
         (killed {:.1} s ago)",
        killed.elapsed().as_secs_f64()
    );
    remote.restart();
    let mut after = HashMap::new();
    let why = wait_notice(&mut c, b'u', b'p', &mut after)
        .expect("no 'u' notice after the remote came back");
    assert!(why.contains("again"), "{why}");
    let back = Instant::now();
    while after.get(&b'p').copied().unwrap_or(0) < 3 {
        assert!(
            back.elapsed() < TIMEOUT,
            "no relayed readings after the 'u' notice"
        );
        if let Some((code, _)) = c.read_message_within(Duration::from_millis(200)) {
            *after.entry(code).or_default() += 1;
        }
    }
    // And the other remote device can be set up again.
    assert_eq!(other.request(&[(b'l', b'r')]), b"lr");
}

#[test]
fn the_fleet_configuration_serves_the_three_arena_robots_as_one_table() {
    let world = concat!(env!("CARGO_MANIFEST_DIR"), "/config/worlds/arena.toml");
    let args: Vec<String> = ["-stage", world, "-gp", "0"].map(String::from).to_vec();
    let arena = match player::parse_args(&args) {
        Ok(player::settings::Invocation::Run { settings, .. }) => *settings,
        other => panic!("{other:?}"),
    };
    let arena = start_server_with(arena, player::builtin_catalog());
    let ports: Vec<u16> = arena.addrs().iter().map(|a| a.port()).collect();
    assert_eq!(ports.len(), 3);
    // config/fleet.toml as shipped, pointed at the ports this arena got.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config/fleet.toml");
    let mut text = std::fs::read_to_string(path).unwrap();
    for (shipped, port) in [6665, 6666, 6667].iter().zip(&ports) {
        let from = format!("port = {shipped}\n");
        assert!(text.contains(&from), "fleet.toml has no {from:?}");
        text = text.replace(&from, &format!("port = {port}\n"));
    }
    text = text.replace("web_port = 8768", "web_port = 0");
    let fleet = start_server_with(
        Settings::from_toml(&text, "config/fleet.toml").unwrap(),
        player::builtin_catalog(),
    );
    let mut c = Client::connect(fleet.addr());
    c.data_mode(2);
    let pairs: Vec<(u8, u8)> = b"psPSlLtk"
        .iter()
        .map(|&d| (d, b'r'))
        .chain([(b'q', b'a')])
        .collect();
    assert_eq!(c.request(&pairs), pairs_bytes(&pairs));
    // Every robot's devices stream, with their standard sizes.
    let mut sizes: HashMap<u8, usize> = HashMap::new();
    let start = Instant::now();
    while sizes.len() < 9 {
        assert!(
            start.elapsed() < TIMEOUT,
            "not every device streamed: {sizes:?}"
        );
        let (code, payload) = c.read_message();
        sizes.insert(code, payload.len());
    }
    for (codes, size) in [(b"pPq", 21), (b"sSt", 32), (b"lLk", 722)] {
        for d in codes {
            assert_eq!(sizes[d], size, "device '{}'", *d as char);
        }
    }
    // Drive the right follower (`q`), resending its command with each of its readings like
    // a controller: it moves, the leader and the left follower do not.
    let forward = player_proto::data::PositionCommand {
        speed: 300,
        turn_rate: 0,
    }
    .encode();
    c.command(b'q', &forward);
    let mut last: HashMap<u8, Position> = HashMap::new();
    let start = Instant::now();
    while last.get(&b'q').is_none_or(|p| p.x <= 300) {
        assert!(start.elapsed() < TIMEOUT, "the right follower did not move");
        let (code, payload) = c.read_message();
        if matches!(code, b'p' | b'P' | b'q') {
            last.insert(code, Position::decode(&payload).unwrap());
        }
        if code == b'q' {
            c.command(b'q', &forward);
        }
    }
    c.command(b'q', &[0, 0, 0, 0]);
    for d in [b'p', b'P'] {
        let p = &last[&d];
        assert_eq!(
            (p.x, p.y, p.speed),
            (0, 0, 0),
            "robot '{}' moved",
            d as char
        );
    }
    // The arena's own right follower, read directly, is where the fleet says it is.
    let mut direct = Client::connect(arena.addrs()[2]);
    assert_eq!(direct.request(&[(b'p', b'r')]), b"pr");
    assert!(direct.next_position().x > 300);
}

/// A local server whose `p` is the remote's through a passthrough with `params` (TOML
/// lines), its watchdog at 60 s.
fn start_local_with(remote: SocketAddr, params: &str) -> TestServer {
    let text = format!(
        "[[robot]]\nname = \"fleet\"\ncommand_timeout = 60\n\
         [[robot.driver]]\ndriver = \"passthrough\"\ndevices = [\"p\"]\n\
         [robot.driver.params]\nport = {}\n{params}\n",
        remote.port()
    );
    let settings = Settings::from_toml(&text, "passthrough test").unwrap();
    start_server_with(settings, player::builtin_catalog())
}

/// The remote: the simulated robot in-process, with `access` (TOML lines of `[access]`).
fn start_remote_with(access: &str) -> TestServer {
    let mut text = String::from("[access]\n");
    text.push_str(access);
    text.push_str(
        "\n[[robot]]\ncommand_timeout = 60\n[[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\"]\n",
    );
    let settings = Settings::from_toml(&text, "remote").unwrap();
    start_server_with(settings, player::builtin_catalog())
}

#[test]
fn a_remote_with_a_key_is_commanded_only_with_the_key() {
    let remote = start_remote_with("key = \"fleet-key\"\nkeyless = \"refuse\"");
    let mut watcher = Client::connect(remote.addr());
    watcher.config(b'y', b'k', b"fleet-key");
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    // With the key: granted, and commands reach the robot.
    let local = start_local_with(remote.addr(), "key = \"fleet-key\"");
    let mut c = Client::connect(local.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    c.drive(200, 0);
    let deadline = Instant::now() + TIMEOUT;
    while watcher.next_position().speed < 150 {
        c.next_position();
        assert!(Instant::now() < deadline, "the keyed remote did not move");
    }
    // Without it, a remote that refuses keyless clients closes the connection before
    // answering: the device cannot be set up.
    let keyless = start_local_with(remote.addr(), "connect_timeout = 2");
    let mut c = Client::connect(keyless.addr());
    assert_eq!(c.request(&[(b'p', b'r')]), b"pe");
}

#[test]
fn a_remote_without_the_extensions_is_served_too() {
    // `extensions = false`: the passthrough talks plain 0.7.4a (continuous rounds, no
    // timestamps, no error channel); readings are stamped on arrival.
    let remote = start_remote_with("");
    let local = start_local_with(remote.addr(), "extensions = false\nfrequency = 10");
    let mut watcher = Client::connect(remote.addr());
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    let mut c = Client::connect(local.addr());
    assert_eq!(c.request(&[(b'p', b'a')]), b"pa");
    c.drive(200, 0);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let relayed = c.next_position();
        let direct = watcher.next_position();
        if relayed.speed >= 150 && direct.speed >= 150 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no relayed motion: {relayed:?} {direct:?}"
        );
    }
    drop(c);
    watch_until(&mut watcher, TIMEOUT, "the remote robot to stop", |p| {
        p.speed == 0
    });
}

#[test]
fn the_local_emergency_stop_stops_the_remote_robot_and_latches_its_own() {
    let remote = Remote::start(60.0);
    let local = start_local(remote.port, 60.0);
    let mut watcher = Client::connect(remote.addr());
    assert_eq!(watcher.request(&[(b'p', b'r')]), b"pr");
    let mut controller = Client::connect(local.addr());
    assert_eq!(controller.request(&[(b'p', b'a')]), b"pa");
    controller.drive(200, 0);
    let deadline = Instant::now() + TIMEOUT;
    while watcher.next_position().speed < 150 {
        controller.next_position();
        assert!(Instant::now() < deadline, "the remote robot did not move");
    }
    // Any local client latches the e-stop; the controller goes on commanding every round.
    let mut bystander = Client::connect(local.addr());
    bystander.config(b'y', b'E', &[1]);
    let deadline = Instant::now() + TIMEOUT;
    while watcher.next_position().speed != 0 {
        controller.next_position();
        assert!(
            Instant::now() < deadline,
            "the e-stop did not stop the remote robot"
        );
    }
    // Held: the controller's commands do not reach the remote while it is latched.
    for _ in 0..10 {
        controller.next_position();
        assert_eq!(
            watcher.next_position().speed,
            0,
            "moved while the e-stop was latched"
        );
    }
    // The remote robot's own e-stop is latched too: a controller on the remote itself
    // cannot drive it either, even once the local e-stop is released.
    let mut direct = Client::connect(remote.addr());
    assert_eq!(direct.request(&[(b'p', b'a')]), b"pa");
    bystander.config(b'y', b'E', &[0]);
    for _ in 0..10 {
        direct.drive(200, 0);
        direct.next_position();
        assert_eq!(
            watcher.next_position().speed,
            0,
            "a client of the remote drove it while the fleet's e-stop was latched"
        );
    }
    // Released on the robot's own server, it drives again.
    direct.config(b'y', b'E', &[0]);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        direct.drive(200, 0);
        direct.next_position();
        if watcher.next_position().speed >= 150 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the remote robot did not move after its e-stop was released"
        );
    }
}

#[test]
fn a_local_reader_leaving_does_not_stop_a_robot_driven_on_the_remote() {
    // The remote's watchdog at 60 s: its controller sends one command.
    let remote = Remote::start(60.0);
    let local = start_local(remote.port, 60.0);
    let mut driver = Client::connect(remote.addr());
    assert_eq!(driver.request(&[(b'p', b'a')]), b"pa");
    driver.drive_once(200, 0);
    watch_until(&mut driver, TIMEOUT, "the remote robot to move", |p| {
        p.speed >= 150
    });
    // A local reader comes and goes through the passthrough: the remote sees a reader,
    // not a writer, so its leaving stops nothing.
    let mut reader = Client::connect(local.addr());
    assert_eq!(reader.request(&[(b'p', b'r')]), b"pr");
    assert!(reader.next_position().speed >= 150);
    drop(reader);
    let p = driver.position_after(Duration::from_secs(1));
    assert!(p.speed >= 150, "the remote robot slowed to {}", p.speed);
}

#[test]
fn a_remote_that_accepts_but_never_answers_fails_the_setup() {
    // A "server" that takes the connection and reads what it is sent, but never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut conns = Vec::new();
        for s in listener.incoming().flatten() {
            let mut reader = s.try_clone().unwrap();
            std::thread::spawn(move || {
                let mut sink = [0u8; 1024];
                while matches!(std::io::Read::read(&mut reader, &mut sink), Ok(n) if n > 0) {}
            });
            conns.push(s);
        }
    });
    let local = start_local_with(addr, "silence = 1.0");
    let mut c = Client::connect(local.addr());
    let asked = Instant::now();
    assert_eq!(c.request(&[(b'p', b'r')]), b"pe");
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "took {:?}",
        asked.elapsed()
    );
}
