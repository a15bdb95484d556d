//! The `player` binary as systemd runs it, without the package: `--check-config` on good
//! and broken files, the sd_notify messages read from a Unix datagram socket of ours
//! (`READY=1` after the port listens, `WATCHDOG=1` at half of `WATCHDOG_USEC`, `STATUS=`,
//! `STOPPING=1`; none while the process is stopped), SIGHUP reloading the access policy
//! (old key reads but cannot command, new key commands, a bad file is refused whole, a
//! client the new policy refuses is closed), journal priorities and no colour codes.
//!
//! The same behaviours of the installed package are tested by `tests/package/run.sh`.

// Unsafe code: kill(2), pipe2(2) and the descriptors they give (Linux calls).
#![allow(unsafe_code)]

use player_client::Client;
use player_proto::ext::{kind, Notice};
use player_testkit::check_config;
use std::io::Read;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PLAYER: &str = env!("CARGO_BIN_EXE_player");
const TIMEOUT: Duration = Duration::from_secs(10);

/// A folder of its own for one test.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("player-daemon-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A configuration of the simulated robot on `port` with `access` as its `[access]`.
fn config(port: u16, access: &str) -> String {
    format!(
        "[access]\n{access}\n\n[[robot]]\nname = \"pioneer\"\nport = {port}\nbind = \"127.0.0.1\"\n\
         web_port = 0\n\n[[robot.driver]]\ndriver = \"sim\"\n\
         devices = [\"p\", \"s\", \"m\", \"g\", \"l\", \"z\", \"v\"]\n\
         [robot.driver.params]\nworld = \"room\"\nmotors_on = true\n"
    )
}

/// A `player` process with its log collected and, when asked, a notify socket.
struct Daemon {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
    notify: Option<UnixDatagram>,
    dir: PathBuf,
}

impl Daemon {
    /// Starts `player --config FILE` (FILE written from `text`) with `env`; with `notify`,
    /// NOTIFY_SOCKET points at a socket the test reads.
    fn start(name: &str, port: u16, text: &str, notify: bool, env: &[(&str, &str)]) -> Daemon {
        let dir = temp_dir(name);
        let file = dir.join("robot.toml");
        std::fs::write(&file, text).unwrap();
        let mut cmd = Command::new(PLAYER);
        cmd.arg("--config")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env_remove("NOTIFY_SOCKET")
            .env_remove("WATCHDOG_USEC")
            .env_remove("JOURNAL_STREAM");
        let sock = notify.then(|| {
            let path = dir.join("notify.sock");
            let s = UnixDatagram::bind(&path).unwrap();
            cmd.env("NOTIFY_SOCKET", &path);
            s
        });
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("player starts");
        let log = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Daemon {
            child,
            port,
            log,
            notify: sock,
            dir,
        }
    }

    fn file(&self) -> PathBuf {
        self.dir.join("robot.toml")
    }

    /// The next notify datagram within `wait`.
    fn message(&self, wait: Duration) -> Option<String> {
        let s = self.notify.as_ref().expect("a notify socket");
        s.set_read_timeout(Some(wait)).unwrap();
        let mut buf = [0u8; 4096];
        match s.recv(&mut buf) {
            Ok(n) => Some(String::from_utf8_lossy(&buf[..n]).into_owned()),
            Err(_) => None,
        }
    }

    /// Reads notify messages until one contains `what`; returns it and when it came.
    fn wait_message(&self, what: &str) -> (String, Instant) {
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            if let Some(m) = self.message(Duration::from_millis(200)) {
                if m.contains(what) {
                    return (m, Instant::now());
                }
            }
        }
        panic!("no {what} within {TIMEOUT:?}; log:\n{}", self.log());
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn wait_log(&self, what: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while !self.log().contains(what) {
            assert!(
                Instant::now() < deadline,
                "no log line with {what:?}; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until the port accepts connections (for tests without a notify socket).
    fn wait_listening(&self) {
        let deadline = Instant::now() + TIMEOUT;
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "not listening:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, sig: i32) {
        let r = unsafe { libc::kill(self.child.id() as i32, sig) };
        assert_eq!(r, 0, "kill({sig})");
    }

    fn client(&self) -> Client {
        let mut c = Client::connect(("127.0.0.1", self.port)).expect("connects");
        c.set_read_timeout(Some(TIMEOUT)).unwrap();
        c
    }

    fn stop(mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                let _ = std::fs::remove_dir_all(&self.dir);
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "no exit after SIGTERM; state {:?}; log:\n{}",
                std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| l.starts_with("State") || l.starts_with("Sig"))
                    .collect::<Vec<_>>(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn check_config_accepts_the_packaged_file_and_prints_what_it_would_serve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in ["packaging/robot.toml", "config/default.toml"] {
        let (code, out, err) = check_config(PLAYER, &root.join(f));
        assert_eq!(code, 0, "{f}: {err}");
        assert!(out.contains("OK"), "{out}");
        assert!(out.contains("robot 'pioneer' on 0.0.0.0:6665"), "{out}");
        assert!(
            out.contains("driver 'sim': p (position), s (sonar)"),
            "{out}"
        );
        assert!(out.contains("recording: off") && out.contains("zenoh bridge: off"));
    }
}

/// Each file of tests/package/broken/ says the errors it must produce, one
/// `# expect: KEY (line N)` comment each; the check must name every one and exit 1.
#[test]
fn check_config_names_every_error_of_each_broken_file_with_key_and_line() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/package/broken");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .collect();
        assert!(!expected.is_empty(), "{} expects nothing", path.display());
        let (code, out, err) = check_config(PLAYER, &path);
        assert_eq!(code, 1, "{}: {out}{err}", path.display());
        for e in &expected {
            assert!(
                err.contains(&format!("  {e}: ")),
                "{}: {e} not named in:\n{err}",
                path.display()
            );
        }
        let listed = err.lines().filter(|l| l.starts_with("  ")).count();
        assert_eq!(listed, expected.len(), "{}:\n{err}", path.display());
        files += 1;
    }
    assert!(files >= 8);
}

#[test]
fn check_config_of_a_missing_file_says_so() {
    let (code, _, err) = check_config(PLAYER, Path::new("/no/such/robot.toml"));
    assert_eq!(code, 1);
    assert!(err.contains("cannot read '/no/such/robot.toml'"), "{err}");
}

#[test]
fn notify_says_ready_after_the_port_listens_then_pets_the_watchdog_and_says_stopping() {
    let port = free_port();
    let d = Daemon::start(
        "notify",
        port,
        &config(port, ""),
        true,
        &[("WATCHDOG_USEC", "400000")],
    );
    let (ready, _) = d.wait_message("READY=1");
    // The port listens once READY=1 has been sent.
    std::net::TcpStream::connect(("127.0.0.1", port)).expect("listening at READY=1");
    assert!(
        ready.contains("STATUS=serving: 1 robot, 0 clients, 7 devices"),
        "{ready}"
    );
    // WATCHDOG=1 every 200 ms (half of 400 ms).
    let (_, mut last) = d.wait_message("WATCHDOG=1");
    let mut gaps = Vec::new();
    while gaps.len() < 8 {
        let (_, at) = d.wait_message("WATCHDOG=1");
        gaps.push(at - last);
        last = at;
    }
    for g in &gaps {
        assert!(
            *g >= Duration::from_millis(120) && *g <= Duration::from_millis(350),
            "watchdog gaps {gaps:?}"
        );
    }
    // STATUS= is refreshed and counts a client.
    let _c = d.client();
    let (status, _) = d.wait_message("STATUS=serving: 1 robot, 1 client");
    assert!(status.contains("all devices fine"), "{status}");
    d.signal(libc::SIGTERM);
    let (stopping, _) = d.wait_message("STOPPING=1");
    assert!(stopping.contains("STATUS=stopping (SIGTERM)"), "{stopping}");
    assert!(d.stop().success());
}

#[test]
fn ready_waits_for_the_devices_set_up_at_start_and_status_names_the_one_that_failed() {
    let port = free_port();
    // The recorder sets every device up at start; the base's serial port does not exist.
    let dir = temp_dir("early-record");
    let text = format!(
        "[record]\npath = \"{}\"\n\n[[robot]]\nname = \"pioneer\"\nport = {port}\n\
         bind = \"127.0.0.1\"\nweb_port = 0\n[[robot.driver]]\ndriver = \"sim\"\n\
         devices = [\"s\", \"l\"]\n[[robot.driver]]\ndriver = \"p2os\"\ndevices = [\"p\"]\n\
         [robot.driver.params]\nport = \"/dev/ttyNoSuchPortForTheTest\"\n",
        dir.join("run.mcap").display()
    );
    let d = Daemon::start("early", port, &text, true, &[]);
    let (ready, _) = d.wait_message("READY=1");
    assert!(
        ready.contains(
            "STATUS=serving: 1 robot, 0 clients, 3 devices; in trouble: pioneer:p (failed)"
        ),
        "{ready}"
    );
    // With its reason in the log.
    d.wait_log("cannot open serial port /dev/ttyNoSuchPortForTheTest");
    assert!(d.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_stopped_server_stops_petting_the_watchdog() {
    let port = free_port();
    let d = Daemon::start(
        "stall",
        port,
        &config(port, ""),
        true,
        &[("WATCHDOG_USEC", "200000")],
    );
    d.wait_message("READY=1");
    d.wait_message("WATCHDOG=1");
    d.signal(libc::SIGSTOP);
    // Drain what was sent before the stop took effect, then nothing for a second: this
    // wait is the proof that no WATCHDOG=1 comes (systemd would kill it at 200 ms).
    while d.message(Duration::from_millis(150)).is_some() {}
    let silent_until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < silent_until {
        if let Some(m) = d.message(Duration::from_millis(100)) {
            panic!("a stopped server sent {m:?}");
        }
    }
    d.signal(libc::SIGCONT);
    d.wait_message("WATCHDOG=1");
    assert!(d.stop().success());
}

fn notice_of(c: &mut Client, k: u8) -> Notice {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no notice of kind {}", char::from(k));
        if let Some(n) = c.wait_notice(left).expect("connection open") {
            if n.kind == k {
                return n;
            }
        }
    }
}

/// Reads rounds until the robot's speed satisfies `f`.
fn until_speed(c: &mut Client, what: &str, f: impl Fn(i16) -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let speed = c.read().expect("reads").position.unwrap().speed;
        if f(speed) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

/// Drives at `speed` from `driver` (10 Hz) while `watcher` reads, until the watcher sees
/// the robot move.
fn drive_until_moving(driver: &mut Client, watcher: &mut Client, speed: i16) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        driver.set_speed(speed, 0).unwrap();
        let seen = watcher.read().expect("reads").position.unwrap().speed;
        if seen >= 150 {
            return;
        }
        assert!(Instant::now() < deadline, "the robot did not move");
    }
}

#[test]
fn sighup_with_a_new_key_old_key_keeps_reading_but_cannot_command_new_key_can() {
    let port = free_port();
    let d = Daemon::start("hup", port, &config(port, "key = \"old-key\""), true, &[]);
    d.wait_message("READY=1");
    let mut old = d.client();
    old.set_notices(true).unwrap();
    old.present_key(b"old-key").unwrap();
    assert_eq!(
        notice_of(&mut old, kind::ACCESS).text,
        "key accepted: write access"
    );
    old.request("pa").unwrap().check().unwrap();
    old.set_speed(200, 0).unwrap();
    until_speed(&mut old, "the old key to drive", |s| s >= 150);

    std::fs::write(d.file(), config(port, "key = \"new-key\"")).unwrap();
    d.signal(libc::SIGHUP);
    let n = notice_of(&mut old, kind::ACCESS);
    assert!(
        n.text
            .starts_with("configuration reloaded: write access withdrawn"),
        "{n:?}"
    );
    d.wait_log("configuration reloaded");
    // Its command is refused, and the robot (whose writer left) stops.
    old.set_speed(300, 0).unwrap();
    let n = notice_of(&mut old, kind::COMMAND);
    assert!(n.text.contains("no write access"), "{n:?}");
    until_speed(&mut old, "the robot to stop", |s| s == 0);
    // It keeps reading.
    for _ in 0..3 {
        old.read().expect("the old key keeps reading");
    }

    let mut new = d.client();
    new.set_notices(true).unwrap();
    new.present_key(b"new-key").unwrap();
    assert_eq!(
        notice_of(&mut new, kind::ACCESS).text,
        "key accepted: write access"
    );
    new.request("pa").unwrap().check().unwrap();
    drive_until_moving(&mut new, &mut old, 250);

    // The old key no longer opens anything.
    let mut late = d.client();
    late.set_notices(true).unwrap();
    late.present_key(b"old-key").unwrap();
    assert!(notice_of(&mut late, kind::ACCESS)
        .text
        .starts_with("wrong key"));
    assert!(d.stop().success());
}

#[test]
fn a_bad_file_on_reload_is_refused_whole_and_the_running_policy_kept() {
    let port = free_port();
    let d = Daemon::start(
        "badhup",
        port,
        &config(port, "key = \"old-key\""),
        true,
        &[],
    );
    d.wait_message("READY=1");
    let mut c = d.client();
    c.set_notices(true).unwrap();
    c.present_key(b"old-key").unwrap();
    notice_of(&mut c, kind::ACCESS);
    c.request("pa").unwrap().check().unwrap();
    // A new key, and an error elsewhere in the file: nothing of it is applied.
    let bad = config(port, "key = \"new-key\"").replace("[[robot]]", "[[robot]]\ncolour = 1");
    std::fs::write(d.file(), bad).unwrap();
    d.signal(libc::SIGHUP);
    d.wait_log("reload refused");
    assert!(d.log().contains("colour"), "{}", d.log());
    let mut watcher = d.client();
    watcher.request("pr").unwrap().check().unwrap();
    drive_until_moving(&mut c, &mut watcher, 250);
    assert!(c.take_notices().iter().all(|n| n.kind != kind::COMMAND));
    assert!(d.stop().success());
}

#[test]
fn sighup_closes_a_client_the_new_policy_refuses_and_names_what_needs_a_restart() {
    let port = free_port();
    let d = Daemon::start("admit", port, &config(port, ""), true, &[]);
    d.wait_message("READY=1");
    let mut c = d.client();
    c.set_notices(true).unwrap();
    c.request("pr").unwrap().check().unwrap();
    c.read().unwrap();
    // Only 10.0.0.0/8 may connect now; and a server key that needs a restart changed.
    let text = config(port, "read_allow = [\"10.0.0.0/8\"]")
        .replace("[access]", "[server]\nmax_clients = 7\n\n[access]");
    std::fs::write(d.file(), text).unwrap();
    d.signal(libc::SIGHUP);
    let n = notice_of(&mut c, kind::ACCESS);
    assert_eq!(
        n.text,
        "configuration reloaded: address not in access.read_allow; closing"
    );
    d.wait_log("restart_needed_for: [server]");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port))
        .map(|mut s| {
            // Refused at accept: closed without a byte of the banner's 32.
            s.set_read_timeout(Some(TIMEOUT)).unwrap();
            let mut b = [0u8; 32];
            s.read(&mut b).unwrap_or(0)
        })
        .is_ok_and(|n| n == 0));
    assert!(d.stop().success());
}

#[test]
fn sighup_sets_the_log_level() {
    let port = free_port();
    let d = Daemon::start("level", port, &config(port, ""), true, &[]);
    d.wait_message("READY=1");
    let text = config(port, "").replace("[access]", "[server]\ndebug = true\n\n[access]");
    std::fs::write(d.file(), text).unwrap();
    d.signal(libc::SIGHUP);
    d.wait_log("debug: true");
    // Written at debug level: in the log only if the level changed.
    d.wait_log("DEBG debug records are logged");
    assert!(d.stop().success());
}

/// The device and inode of the pipe (both ends share them).
fn dev_ino(fd: i32) -> String {
    use std::os::fd::BorrowedFd;
    use std::os::unix::fs::MetadataExt;
    let fd = unsafe { BorrowedFd::borrow_raw(fd) }
        .try_clone_to_owned()
        .unwrap();
    let m = std::fs::File::from(fd).metadata().unwrap();
    format!("{}:{}", m.dev(), m.ino())
}

#[test]
fn under_the_journal_each_line_carries_its_priority_and_no_colour() {
    // A pipe of our own for its standard error, named in JOURNAL_STREAM as systemd does.
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let stream = dev_ino(fds[0]);
    let port = free_port();
    let dir = temp_dir("journal");
    std::fs::write(dir.join("robot.toml"), config(port, "")).unwrap();
    let write_end = unsafe { std::os::fd::OwnedFd::from_raw_fd(fds[1]) };
    let mut child = Command::new(PLAYER)
        .arg("--config")
        .arg(dir.join("robot.toml"))
        .env("JOURNAL_STREAM", &stream)
        .env_remove("NOTIFY_SOCKET")
        .stderr(Stdio::from(write_end))
        .spawn()
        .unwrap();
    let mut read_end = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    let deadline = Instant::now() + TIMEOUT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(20));
    }
    // A warning: a client that sends an unknown message type.
    let mut c = Client::connect(("127.0.0.1", port)).unwrap();
    c.send_raw(b"qq\x00\x00").unwrap();
    std::thread::sleep(Duration::from_millis(200)); // let the log thread write it
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap();
    let mut log = String::new();
    read_end.read_to_string(&mut log).unwrap();
    assert!(!log.contains('\x1b'), "colour codes in {log}");
    assert!(log.lines().all(|l| l.starts_with('<')), "{log}");
    assert!(log.contains("<6>INFO listening"), "{log}");
    assert!(log.contains("<4>WARN unknown message type"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_piped_log_has_no_colour_codes() {
    let port = free_port();
    let d = Daemon::start("plain", port, &config(port, ""), false, &[]);
    d.wait_listening();
    d.wait_log("listening");
    let log = d.log();
    assert!(!log.contains('\x1b') && !log.starts_with('<'), "{log}");
    assert!(d.stop().success());
}

#[test]
fn the_watchdogs_first_stop_names_the_key_restoring_0_7_4a() {
    let port = free_port();
    let d = Daemon::start("watchdog", port, &config(port, ""), false, &[]);
    d.wait_listening();
    let mut c = d.client();
    c.request("pa").unwrap().check().unwrap();
    c.set_speed(200, 0).unwrap();
    until_speed(&mut c, "the robot to move", |s| s >= 150);
    until_speed(&mut c, "the watchdog to stop it", |s| s == 0);
    d.wait_log("restore_0_7_4a: command_timeout = 0 in [[robot]] 'pioneer' (or in its [[robot.driver]] 'sim')");
    assert!(d.log().contains("docs/clients-of-2000.md"));
    assert!(d.stop().success());
}
