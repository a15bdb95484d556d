//! Driver programs (docs/plugins.md) through the `player` binary, with real processes over
//! real TCP: the shipped virtual device of `config/obstacle.toml` (a Python program reading
//! the laser), and misbehaving programs from `tests/programs/` (silent, flooding, a 1 GiB
//! frame, a command device under the watchdog); and an in-process virtual device reading
//! the laser through its `DeviceSource`. python3 must be on the PATH.

// Unsafe code: kill(2) on the server and on a driver program (a Linux call).
#![allow(unsafe_code)]

use actix::prelude::*;
use bytes::Bytes;
use player::catalog::{DriverContext, StartedDriver};
use player::driver::{
    DataRecipient, DeviceData, DeviceDataBatch, DeviceSpec, DriverError, Publisher, Setup, Shutdown,
};
use player::source::DeviceSource;
use player_kit::plain::{Driver, Reply};
use player_testkit::{
    collect_stderr, free_port, pairs_bytes, wait_for_text, wait_until, Client, Packet, Streamer,
    TIMEOUT,
};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PLAYER: &str = env!("CARGO_BIN_EXE_player");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The first byte of a notice packet (the error channel).
const NOTICE: u8 = player_proto::ext::PACKET;

/// The binary running, its standard error collected; killed on drop.
struct Player {
    child: Child,
    port: u16,
    stderr: Arc<Mutex<String>>,
    dir: Option<PathBuf>,
}

impl Player {
    /// `player --config <config> -gp <free port>`.
    fn start(config: &Path, port: u16, dir: Option<PathBuf>) -> Player {
        let mut child = Command::new(PLAYER)
            .args([
                "--config",
                config.to_str().unwrap(),
                "-gp",
                &port.to_string(),
            ])
            .args(["-web", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start player");
        let stderr = collect_stderr(&mut child);
        Player {
            child,
            port,
            stderr,
            dir,
        }
    }

    /// The binary serving `config/obstacle.toml` as shipped.
    fn obstacle() -> Player {
        let config = Path::new(ROOT).join("config/obstacle.toml");
        Player::start(&config, free_port(), None)
    }

    /// The binary serving a simulated robot (`p`, `l`) plus the driver programs described
    /// by `programs` (TOML `[[robot.driver]]` entries; `{PORT}`-free).
    fn with_programs(name: &str, programs: &str) -> Player {
        let dir =
            std::env::temp_dir().join(format!("player-program-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let port = free_port();
        let text = format!(
            "[[robot]]\nname = \"r\"\nport = {port}\nbind = \"127.0.0.1\"\n\n\
             [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\", \"l\"]\n\
             [robot.driver.params]\nworld = \"room\"\nmotors_on = true\n\n{programs}"
        );
        let config = dir.join("player.toml");
        std::fs::write(&config, text).unwrap();
        Player::start(&config, port, Some(dir))
    }

    fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until the log contains `text`; fails with the log after `within`.
    fn wait_log(&self, text: &str, within: Duration) {
        wait_for_text(&self.stderr, text, within);
    }

    /// Waits until `n` lines of the log contain every one of `parts`; fails with the log
    /// after `within`.
    fn wait_log_lines(&self, parts: &[&str], n: usize, within: Duration) {
        let count = || {
            self.log()
                .lines()
                .filter(|l| parts.iter().all(|p| l.contains(p)))
                .count()
        };
        wait_until(within, &format!("{n} log lines saying {parts:?}"), || {
            count() >= n
        });
    }

    fn assert_running(&mut self) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "the server exited; its log:\n{}",
            self.log()
        );
    }

    /// Pids of this server's child processes whose command line contains `name`.
    fn children_named(&self, name: &str) -> Vec<i32> {
        let me = self.child.id().to_string();
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ppid ...: comm may hold spaces, so split after the ')'.
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                continue;
            };
            let ppid = rest.split_whitespace().nth(1).unwrap_or("");
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            if ppid == me && String::from_utf8_lossy(&cmdline).contains(name) {
                out.push(pid);
            }
        }
        out
    }

    /// Waits for exactly one child named `name`; its pid.
    fn child_named(&self, name: &str) -> i32 {
        let mut pids = Vec::new();
        wait_until(TIMEOUT, &format!("a single child process {name:?}"), || {
            pids = self.children_named(name);
            pids.len() == 1
        });
        pids[0]
    }
}

impl Drop for Player {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            // Polls for the exit (killed below if it does not come).
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// A `[[robot.driver]]` entry running `tests/programs/<script>` with `extra` parameters
/// and one device.
fn program_entry(code: char, script: &str, extra: &str, device: &str) -> String {
    format!(
        "[[robot.driver]]\ndriver = \"program\"\ndevices = [\"{code}\"]\n\
         [robot.driver.params]\ncommand = [\"python3\", \"{ROOT}/tests/programs/{script}\"]\n\
         env = {{ PYTHONPATH = \"{ROOT}/python\" }}\n{extra}\n\
         [[robot.driver.params.device]]\ncode = \"{code}\"\n{device}\n\n"
    )
}

/// A data packet's timestamp (timestamps on) and the data after it.
fn stamped(p: &Packet) -> ((u32, u32), &[u8]) {
    let b = &p.1;
    let sec = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let usec = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
    ((sec, usec), &b[8..])
}

/// What `o` must say of a laser scan: the closest return and its bearing (see
/// config/plugins/obstacle.py), computed here independently.
fn nearest(scan: &[u8]) -> (u16, i16) {
    let ranges: Vec<u16> = scan
        .chunks(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(ranges.len(), 361);
    let best = ranges
        .iter()
        .enumerate()
        .filter(|(_, &r)| r > 0 && r < 8000)
        .min_by_key(|(i, &r)| (r, *i));
    match best {
        None => (65535, 0),
        Some((i, &r)) => {
            let half = i as i32 - 180;
            let deg = (half.abs() + 1) / 2;
            (r, if half >= 0 { deg } else { -deg } as i16)
        }
    }
}

/// A push-new client with timestamps reading `pairs`.
fn push_client(addr: SocketAddr, pairs: &[(u8, u8)]) -> Client {
    let mut c = Client::connect(addr);
    c.timestamps(true);
    c.data_mode(2);
    let reply = c.request(pairs);
    assert_eq!(reply, pairs_bytes(pairs), "request not granted");
    c
}

#[test]
fn the_obstacle_device_is_the_closest_laser_return_of_each_scan() {
    let player = Player::obstacle();
    let mut c = push_client(player.addr(), &[(b'o', b'r'), (b'l', b'r')]);
    let mut scans = std::collections::HashMap::new();
    let mut obstacles = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while obstacles.len() < 20 {
        assert!(
            Instant::now() < deadline,
            "only {} o readings; log:\n{}",
            obstacles.len(),
            player.log()
        );
        let p = c.read_message();
        let (ts, data) = stamped(&p);
        match p.0 {
            b'l' => {
                scans.insert(ts, data.to_vec());
            }
            b'o' => {
                assert_eq!(data.len(), 4, "o is 4 bytes");
                obstacles.push((ts, data.to_vec()));
            }
            other => panic!("unexpected packet {:?}", char::from(other)),
        }
    }
    // Every `o` carries its scan's timestamp: pair them and recompute.
    let mut matched = 0;
    for (ts, o) in &obstacles {
        let Some(scan) = scans.get(ts) else { continue };
        let range = u16::from_be_bytes([o[0], o[1]]);
        let bearing = i16::from_be_bytes([o[2], o[3]]);
        assert_eq!(
            (range, bearing),
            nearest(scan),
            "o at {ts:?} does not match its scan"
        );
        matched += 1;
    }
    assert!(
        matched >= 15,
        "only {matched} of {} o readings matched a scan of the same round",
        obstacles.len()
    );
    // In a room there is always something within 8 m.
    let (range, _) = nearest(&scans[&obstacles[0].0]);
    assert!(range > 0 && range < 8000);
}

#[test]
fn a_killed_program_is_restarted_and_nothing_else_stops() {
    let mut player = Player::obstacle();
    let streamer = Streamer::start(player.addr(), &[(b'p', b'r'), (b'l', b'r')], Some(10));
    let mut o = Client::connect(player.addr());
    o.config(b'y', b'e', &[1]); // the error channel: notices of failures
    o.timestamps(true);
    o.data_mode(2);
    assert_eq!(o.request(&[(b'o', b'r')]), b"or");
    for _ in 0..3 {
        assert_eq!(o.read_message().0, b'o');
    }
    let pid = player.child_named("obstacle.py");
    let killed = Instant::now();
    let killed_wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    // SAFETY: kill(2) on a child process of the server we started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    player.wait_log("driver program failed", TIMEOUT);
    // `o` resumes from the restarted program: a reading of a scan taken after the kill
    // (each `o` carries its scan's timestamp), which the killed program cannot have made.
    let deadline = killed + Duration::from_secs(30);
    let mut notices = Vec::new();
    let resumed = loop {
        assert!(
            Instant::now() < deadline,
            "o did not resume; log:\n{}",
            player.log()
        );
        if let Some(p) = o.read_message_within(Duration::from_millis(200)) {
            if p.0 == NOTICE {
                notices.push((p.1[0], p.1[1]));
                continue;
            }
            assert_eq!(p.0, b'o');
            let ((sec, usec), _) = stamped(&p);
            let at = Duration::new(u64::from(sec), usec * 1000);
            if at > killed_wall + Duration::from_millis(100) {
                break Instant::now();
            }
        }
    };
    // The client with the error channel was told: o failed, then o is up again.
    let failed = notices.iter().position(|n| *n == (b'f', b'o'));
    let up = notices.iter().position(|n| *n == (b'u', b'o'));
    assert!(
        matches!((failed, up), (Some(f), Some(u)) if f < u),
        "notices {notices:?}: expected f then u for o"
    );
    let new_pid = player.child_named("obstacle.py");
    assert_ne!(new_pid, pid, "a new program runs");
    // A sleep on purpose: for a second after the restart nothing may happen (the server
    // keeps running, the stream keeps its rate).
    std::thread::sleep(Duration::from_secs(1));
    player.assert_running();
    // Position and laser streamed on at their rate through it all.
    streamer.assert_rate(
        killed - Duration::from_millis(500),
        Instant::now(),
        10.0,
        "p and l while the program was killed and restarted",
    );
    let log = player.log();
    assert!(log.contains("program: obstacle"), "{log}");
    assert!(resumed.duration_since(killed) < Duration::from_secs(30));
}

#[test]
fn a_program_that_never_answers_setup_gets_e_within_its_setup_timeout() {
    let entry = program_entry('q', "silent.py", "setup_timeout = 2.0", "data_size = 2");
    let player = Player::with_programs("silent", &entry);
    let mut c = Client::connect(player.addr());
    let t = Instant::now();
    let reply = c.request(&[(b'q', b'r')]);
    let took = t.elapsed();
    assert_eq!(reply, b"qe", "the client gets e");
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(10),
        "the setup failed after {took:?}, setup_timeout is 2 s"
    );
    player.wait_log("did not answer the setup", TIMEOUT);
    assert!(player.log().contains("program: silent"), "{}", player.log());
    // Other devices are served meanwhile.
    let reply = c.request(&[(b'p', b'r')]);
    assert_eq!(reply, b"pr");
}

#[test]
fn flooding_and_oversized_programs_are_dropped_while_clients_keep_their_rate() {
    let entries = program_entry('q', "flood.py", "max_rate = 500", "data_size = 2")
        + &program_entry('h', "huge.py", "", "data_size = 4");
    let mut player = Player::with_programs("flood", &entries);
    let streamer = Streamer::start(player.addr(), &[(b'p', b'r'), (b'l', b'r')], Some(10));
    streamer.wait_rounds(5);
    let from = Instant::now();
    // Reading q sets it up: the program floods.
    let mut q = Client::connect(player.addr());
    q.data_mode(2);
    assert_eq!(q.request(&[(b'q', b'r')]), b"qr");
    player.wait_log(
        "floods: more than 500 frames a second",
        Duration::from_secs(20),
    );
    player.wait_log("frame length 1073741824", Duration::from_secs(20));
    // The flood restarts with every restart of the program (q still has a client): until
    // the program has been started again.
    player.wait_log_lines(
        &["driver program started", "program: flood"],
        2,
        Duration::from_secs(20),
    );
    let log = player.log();
    assert!(log.contains("program: flood"), "{log}");
    assert!(log.contains("program: huge"), "{log}");
    player.assert_running();
    streamer.assert_rate(
        from,
        Instant::now(),
        10.0,
        "p and l while programs misbehaved",
    );
    drop(q);
}

/// Reads `k` packets until one satisfies `want` (fails after `within`).
fn wait_k(c: &mut Client, within: Duration, what: &str, want: impl Fn(u16, u8, u8) -> bool) {
    let deadline = Instant::now() + within;
    loop {
        assert!(Instant::now() < deadline, "k never showed {what}");
        let Some((code, data)) = c.read_message_within(Duration::from_millis(500)) else {
            continue;
        };
        assert_eq!(code, b'k');
        let value = u16::from_be_bytes([data[0], data[1]]);
        if want(value, data[2], data[3]) {
            return;
        }
    }
}

#[test]
fn a_programs_moving_device_is_stopped_by_the_watchdog_and_when_its_writer_leaves() {
    let entry = program_entry(
        'k',
        "mover.py",
        "",
        "data_size = 4\ncommand_size = 2\naccess = \"a\"\nmoving = true",
    );
    let player = Player::with_programs("mover", &entry);
    let mut a = Client::connect(player.addr());
    a.data_mode(2);
    assert_eq!(a.request(&[(b'k', b'a')]), b"ka");
    a.command(b'k', &[0, 5]);
    wait_k(&mut a, TIMEOUT, "the command 5", |v, _, _| v == 5);
    // No more commands: the registry's watchdog (0.5 s) stops it.
    wait_k(&mut a, TIMEOUT, "a watchdog stop", |v, n, why| {
        v == 0 && n >= 1 && why == 1
    });
    player.wait_log("command watchdog", TIMEOUT);
    // Its standard error is logged under its name.
    player.wait_log("driver program: mover ready", TIMEOUT);
    // Another client reads; the writer commands again and leaves at once.
    let mut b = Client::connect(player.addr());
    b.data_mode(2);
    assert_eq!(b.request(&[(b'k', b'r')]), b"kr");
    a.command(b'k', &[0, 7]);
    wait_k(&mut b, TIMEOUT, "the command 7", |v, _, _| v == 7);
    drop(a);
    wait_k(&mut b, TIMEOUT, "a writer-left stop", |v, _, why| {
        v == 0 && why == 2
    });
}

// ----- an in-process virtual device ------------------------------------------------------

/// Device `q`: the laser's first range (u16, mm) of every scan, with the scan's timestamp,
/// read through the driver's `DeviceSource` while `q` is set up.
struct FirstRay {
    source: DeviceSource,
    publisher: Publisher,
}

impl Actor for FirstRay {
    type Context = Context<Self>;
}

impl Driver for FirstRay {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        _msg: Setup,
        ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        let read = self
            .source
            .read(b'l', DataRecipient::of(&ctx.address()), true);
        Reply::later(
            read.into_actor(self)
                .map(|r, _, _| r.map_err(DriverError::from)),
        )
    }

    fn shutdown(&mut self, _msg: Shutdown, ctx: &mut Context<Self>) -> Reply<Self, ()> {
        let release = self
            .source
            .read(b'l', DataRecipient::of(&ctx.address()), false);
        actix::spawn(async move {
            let _ = release.await;
        });
        Reply::Now(())
    }
}

player_kit::driver_handlers!(FirstRay);

impl FirstRay {
    fn reading(&mut self, d: &DeviceData) {
        if d.device == b'l' {
            let first = Bytes::copy_from_slice(&d.data[..2]);
            self.publisher.publish_at(b'q', first, d.timestamp);
        }
    }
}

impl Handler<DeviceData> for FirstRay {
    type Result = ();
    fn handle(&mut self, msg: DeviceData, _ctx: &mut Self::Context) {
        self.reading(&msg);
    }
}

impl Handler<DeviceDataBatch> for FirstRay {
    type Result = ();
    fn handle(&mut self, msg: DeviceDataBatch, _ctx: &mut Self::Context) {
        for d in msg.0.iter() {
            self.reading(d);
        }
    }
}

#[test]
fn an_in_process_driver_reads_another_device_through_its_device_source() {
    let mut settings = player_testkit::default_settings();
    let extra = player::settings::Settings::from_toml(
        "[[robot]]\n[[robot.driver]]\ndriver = \"first-ray\"\ndevices = [\"q\"]\n",
        "test",
    )
    .unwrap();
    settings.robot[0]
        .driver
        .extend(extra.robot[0].driver.iter().cloned());
    let mut catalog = player::builtin_catalog();
    catalog.register("first-ray", |ctx: DriverContext| {
        let addr = FirstRay {
            source: ctx.source.clone(),
            publisher: Publisher::new(),
        }
        .start();
        Ok(StartedDriver::of(&addr, vec![DeviceSpec::read_only(b'q')]))
    });
    let server = player_testkit::start_server_with(settings, catalog);
    let mut c = push_client(server.addr(), &[(b'q', b'r'), (b'l', b'r')]);
    let mut scans = std::collections::HashMap::new();
    let mut matched = 0;
    let deadline = Instant::now() + TIMEOUT;
    let mut firsts = Vec::new();
    while matched < 5 {
        assert!(Instant::now() < deadline, "q never matched its scans");
        let p = c.read_message();
        let (ts, data) = stamped(&p);
        match p.0 {
            b'l' => {
                scans.insert(ts, data[..2].to_vec());
            }
            b'q' => firsts.push((ts, data.to_vec())),
            other => panic!("unexpected packet {:?}", char::from(other)),
        }
        matched = firsts
            .iter()
            .filter(|(ts, q)| scans.get(ts) == Some(q))
            .count();
        for (ts, q) in &firsts {
            if let Some(scan) = scans.get(ts) {
                assert_eq!(scan, q, "q at {ts:?} is not its scan's first ray");
            }
        }
    }
    drop(c);
    server.shutdown();
}
