//! Recording to MCAP and replaying a recording.
//!
//! The files the server writes are read back by a reader no one here wrote: the Python
//! `mcap` package from PyPI (and Google's `protobuf`, which decodes the Foxglove channels by
//! the descriptors the files carry), installed in this test's own virtual environment (under
//! Cargo's target tmp directory, made once and reused), running `tests/mcap/check.py`.
//! Those tests are skipped, with a message, only when `python3` is absent.
//!
//! The binary tests run the real `player` with `-record` and stop it with SIGINT or kill it
//! with SIGKILL; the replay tests record with an in-process server, then serve the file with
//! the `replay` driver and compare what a 0.7.4a client receives with the file, byte for
//! byte.

// Unsafe code: kill(2) to signal the server (a Linux call).
#![allow(unsafe_code)]

use player::record::RAW_ENCODING;
use player_testkit::*;
use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const PLAYER: &str = env!("CARGO_BIN_EXE_player");
const CHECKER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcap/check.py");

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("record-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The virtual environment's python with the `mcap` package, made on first use; `None`
/// when this machine has no python3.
fn python() -> Option<PathBuf> {
    static VENV: OnceLock<Mutex<Option<Option<PathBuf>>>> = OnceLock::new();
    let lock = VENV.get_or_init(|| Mutex::new(None));
    let mut slot = lock.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = &*slot {
        return p.clone();
    }
    let found = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("SKIPPED: python3 is not installed, so the Python mcap reader cannot run");
        *slot = Some(None);
        return None;
    }
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcap-venv");
    let py = venv.join("bin").join("python");
    let has_mcap = |py: &Path| {
        Command::new(py)
            .args([
                "-c",
                "import mcap.reader, mcap.stream_reader, google.protobuf.message_factory",
            ])
            .status()
            .is_ok_and(|s| s.success())
    };
    if !has_mcap(&py) {
        let st = Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv)
            .status()
            .expect("run python3 -m venv");
        assert!(st.success(), "python3 -m venv {} failed", venv.display());
        let st = Command::new(&py)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "mcap>=1.1,<2",
                "protobuf>=4.21,<7",
            ])
            .status()
            .expect("run pip");
        assert!(st.success(), "pip install mcap protobuf failed");
        assert!(
            has_mcap(&py),
            "the mcap and protobuf packages do not import after pip install"
        );
    }
    *slot = Some(Some(py.clone()));
    Some(py)
}

/// Runs the checker on `file` with `args`; fails the test with its output unless it passes.
fn check(py: &Path, file: &Path, args: &[&str]) -> String {
    let out = Command::new(py)
        .arg(CHECKER)
        .arg(file)
        .args(args)
        .output()
        .expect("run check.py");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("check.py {} {args:?}:\n{text}", file.display());
    assert!(
        out.status.success(),
        "check.py failed on {}:\n{text}",
        file.display()
    );
    assert!(text.contains("\nOK"), "{text}");
    text
}

/// The `player` binary recording to `file`, its log in a file beside it.
struct Recording {
    child: Child,
    addr: SocketAddr,
    log: PathBuf,
}

impl Recording {
    fn start(file: &Path, extra: &[&str]) -> Recording {
        let port = free_port();
        let log = file.with_extension("log");
        let mut child = Command::new(PLAYER)
            .args(["-gp", &port.to_string(), "-record"])
            .arg(file)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start player");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        wait_until(TIMEOUT, &format!("player to listen on {addr}"), || {
            if let Ok(Some(st)) = child.try_wait() {
                panic!(
                    "player exited with {st}: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
        });
        Recording { child, addr, log }
    }

    fn signal(&mut self, sig: i32) -> std::process::ExitStatus {
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        unsafe { libc::kill(self.child.id() as i32, sig) };
        let mut status = None;
        wait_until(
            Duration::from_secs(20),
            &format!("player to exit on signal {sig}"),
            || {
                status = self.child.try_wait().unwrap();
                status.is_some()
            },
        );
        status.expect("exited")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Drives the robot for `d` with a client holding the position device, sending a command
/// every 100 ms; returns how many commands were sent.
fn drive_for(addr: SocketAddr, d: Duration) -> usize {
    let mut c = Client::connect(addr);
    c.request(&[(b'p', b'a')]);
    c.config(b'p', b'm', &[1]); // motors on: a config for the recording
    let end = Instant::now() + d;
    let mut n = 0;
    while Instant::now() < end {
        c.drive(300, 20);
        n += 1;
        let next = Instant::now() + Duration::from_millis(100);
        while Instant::now() < next {
            let _ = c.read_message_within(Duration::from_millis(20));
        }
    }
    c.drive(0, 0);
    n + 1
}

#[test]
fn the_binary_records_every_device_and_the_python_mcap_package_reads_the_file() {
    let Some(py) = python() else { return };
    let dir = scratch("binary");
    let file = dir.join("run.mcap");
    let mut p = Recording::start(&file, &[]);
    let t0 = Instant::now();
    // No client for a while: the recorder holds the devices open by itself. A sleep on
    // purpose: nothing but the recorder reads for these two seconds, and the recording
    // must cover them (`--min-seconds` below).
    std::thread::sleep(Duration::from_secs(2));
    let sent = drive_for(p.addr, Duration::from_secs(2));
    let st = p.signal(libc::SIGINT);
    let secs = t0.elapsed().as_secs_f64();
    let log = p.log();
    assert_eq!(st.code(), Some(0), "exit status {st}; log:\n{log}");
    assert!(log.contains("recording finished"), "{log}");
    // The commands and the config the client sent are recorded too.
    let min = format!("{:.1}", secs - 1.5);
    let commands = (sent / 2).to_string();
    let args = [
        "--min-seconds",
        &min,
        "--commands",
        &commands,
        "--configs",
        "1",
    ];
    let out = check(&py, &file, &args);
    assert!(out.contains("/pioneer/laser"), "{out}");
}

#[test]
fn a_recording_killed_with_sigkill_stays_readable_up_to_its_last_chunk() {
    let dir = scratch("sigkill");
    let file = dir.join("killed.mcap");
    let mut p = Recording::start(&file, &[]);
    // Until the chunks closed so far hold what is checked below (the file only grows).
    wait_until(
        Duration::from_secs(30),
        "2.5 s of every device in closed chunks",
        || recorded_enough(&file, 2.5, 7 * 25),
    );
    let st = p.signal(libc::SIGKILL);
    assert_eq!(st.code(), None, "killed by a signal");
    let len = std::fs::metadata(&file).unwrap().len();
    assert!(len > 10_000, "only {len} bytes reached the file");
    // Chunks close every second: at least three of the four and a half seconds are there.
    if let Some(py) = python() {
        check(&py, &file, &["--truncated", "--min-seconds", "2.5"]);
    }
    // Our own replay reads it too, up to where it ends.
    let rec = player::drivers::replay::recording::load(&file, None, 1 << 30).unwrap();
    assert_eq!(rec.robot, "pioneer");
    let codes: Vec<u8> = rec.devices.keys().copied().collect();
    assert_eq!(codes, b"glmpsvz");
    assert!(
        rec.readings.len() >= 7 * 25,
        "{} readings",
        rec.readings.len()
    );
}

#[test]
fn files_rotate_by_age_and_each_is_complete() {
    let dir = scratch("rotate-age");
    let file = dir.join("rot.mcap");
    let mut settings = default_settings();
    settings.record.path = file.display().to_string();
    settings.record.max_seconds = 1.5;
    let server = start_server_with(settings, player::builtin_catalog());
    // Until three files exist and the finished ones (a file is finished when the next one
    // opens) hold the readings counted below.
    wait_until(
        Duration::from_secs(30),
        "three files holding 7 x 40 readings",
        || {
            let finished: Vec<PathBuf> = (1..8)
                .take_while(|&n| player::record::rotated_path(&file, n).exists())
                .map(|n| player::record::rotated_path(&file, n - 1))
                .collect();
            let readings: usize = finished
                .iter()
                .map(|f| raw_payloads(f).values().map(Vec::len).sum::<usize>())
                .sum();
            finished.len() >= 2 && readings >= 7 * 40
        },
    );
    server.shutdown();
    let files: Vec<PathBuf> = (0..8)
        .map(|n| player::record::rotated_path(&file, n))
        .filter(|p| p.exists())
        .collect();
    assert!(files.len() >= 3, "files: {files:?}");
    assert_eq!(files[1], dir.join("rot.1.mcap"));
    let mut total = 0;
    for f in &files {
        let readings = raw_payloads(f);
        total += readings.values().map(Vec::len).sum::<usize>();
        if let Some(py) = python() {
            if f != files.last().unwrap() {
                check(&py, f, &["--min-seconds", "0.5"]);
            }
        }
    }
    // 10 Hz x 7 devices over about five seconds, none lost between files.
    assert!(total >= 7 * 40, "{total} readings in {} files", files.len());
}

#[test]
fn the_map_is_recorded_whole_in_every_rotated_file() {
    let dir = scratch("rotate-map");
    let file = dir.join("map.mcap");
    let mut settings = player::settings::Settings::from_toml(
        r#"
[[robot]]
name = "pioneer"
[[robot.driver]]
driver = "sim"
devices = ["p", "s", "l", "m", "g", "z", "v"]
[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
map = "world"
resolution = 0.1
"#,
        "record map",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    settings.record.path = file.display().to_string();
    settings.record.max_seconds = 2.0;
    let server = start_server_with(settings, player::builtin_catalog());
    let second = player::record::rotated_path(&file, 1);
    wait_until(Duration::from_secs(30), "a second file", || {
        player::record::rotated_path(&file, 2).exists()
    });
    server.shutdown();
    // Each finished file holds the map whole (the second has it because the recorder
    // wrote it again as the file opened, not because the map changed), read by Python's
    // mcap package; and the replay's reader finds it in each.
    let mut maps = Vec::new();
    for f in [&file, &second] {
        if let Some(py) = python() {
            let out = check(&py, f, &["--map", "--min-seconds", "0.5"]);
            assert!(out.contains("/pioneer/map: foxglove.Grid"), "{out}");
        }
        let rec = player::drivers::replay::recording::load(f, None, 1 << 30).unwrap();
        assert_eq!(rec.maps.len(), 1, "{}", f.display());
        maps.push(rec.maps[0].clone());
    }
    assert_eq!(maps[0], maps[1], "the same map in both files");
    let cells = &maps[0].cells;
    assert_eq!(cells.len() as u32, maps[0].info.width * maps[0].info.height);
    assert!(cells.contains(&1) && cells.contains(&-1), "walls and floor");
}

#[test]
fn files_rotate_by_size() {
    let dir = scratch("rotate-size");
    let file = dir.join("size.mcap");
    let mut settings = default_settings();
    settings.record.path = file.display().to_string();
    settings.record.max_bytes = 12_000;
    settings.record.chunk_bytes = 4096;
    settings.record.foxglove = false;
    let server = start_server_with(settings, player::builtin_catalog());
    // Until four files exist: three full ones to check.
    wait_until(Duration::from_secs(30), "the fourth file", || {
        player::record::rotated_path(&file, 3).exists()
    });
    server.shutdown();
    let files: Vec<PathBuf> = (0..50)
        .map(|n| player::record::rotated_path(&file, n))
        .filter(|p| p.exists())
        .collect();
    // About 11 kB/s of readings and headers: three and a half seconds fill several files.
    assert!(files.len() >= 2, "{files:?}");
    for f in &files[..files.len() - 1] {
        let len = std::fs::metadata(f).unwrap().len();
        assert!(
            (12_000..12_000 + 16_384).contains(&len),
            "{}: {len} bytes",
            f.display()
        );
        raw_payloads(f);
    }
}

/// Whether the recording being written to `file` holds, in its closed chunks, at least
/// `secs` seconds of readings of each of its devices and `n` readings in all (read with our
/// replay's reader, which stops at the last complete chunk).
fn recorded_enough(file: &Path, secs: f64, n: usize) -> bool {
    let Ok(rec) = player::drivers::replay::recording::load(file, None, 1 << 30) else {
        return false;
    };
    let spans_enough = rec.devices.len() == 7
        && rec.devices.keys().all(|&d| {
            let mut times = rec
                .readings
                .iter()
                .filter(|r| r.device == d)
                .map(|r| r.time);
            let first = times.next().unwrap_or(0);
            let last = times.last().unwrap_or(first);
            (last - first) as f64 / 1e9 >= secs
        });
    spans_enough && rec.readings.len() >= n
}

/// The raw payloads of each device of robot `pioneer`, in file order, read with the
/// `mcap` crate (the file must be complete).
fn raw_payloads(file: &Path) -> BTreeMap<u8, Vec<(u64, Vec<u8>)>> {
    let bytes = std::fs::read(file).unwrap();
    let mut out: BTreeMap<u8, Vec<(u64, Vec<u8>)>> = BTreeMap::new();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        if m.channel.message_encoding != RAW_ENCODING {
            continue;
        }
        let Some(code) = m.channel.topic.strip_prefix("/pioneer/") else {
            continue;
        };
        if let [c] = code.as_bytes() {
            out.entry(*c)
                .or_default()
                .push((m.log_time, m.data.into_owned()));
        }
    }
    out
}

/// Records the default simulated robot, driven, for `secs`, in-process; returns the file.
fn record_driven(name: &str, secs: u64) -> PathBuf {
    let dir = scratch(name);
    let file = dir.join("drive.mcap");
    let mut settings = default_settings();
    settings.record.path = file.display().to_string();
    let server = start_server_with(settings, player::builtin_catalog());
    drive_for(server.addr(), Duration::from_secs(secs));
    server.shutdown();
    file
}

fn replay_server(file: &Path, params: &[(&str, config::Value)]) -> TestServer {
    let mut settings = default_settings();
    let mut p = vec![("file", text(&file.display().to_string()))];
    p.extend(params.iter().cloned());
    settings.assign("replay", b"psmglzv", p);
    start_server_with(settings, player::builtin_catalog())
}

fn text(s: &str) -> config::Value {
    config::Value::new(None, config::ValueKind::String(s.into()))
}

/// Whether `got` appears in `want` in order (each element found after the previous one).
fn in_order(got: &[Vec<u8>], want: &[(u64, Vec<u8>)]) -> Result<(), String> {
    let mut at = 0;
    for (i, g) in got.iter().enumerate() {
        match want[at..].iter().position(|(_, w)| w == g) {
            Some(k) => at += k + 1,
            None => {
                return Err(format!(
                    "payload {i} of {} is not recorded after the previous one",
                    got.len()
                ))
            }
        }
    }
    Ok(())
}

#[test]
fn replay_serves_the_recorded_payloads_byte_for_byte_and_ignores_commands() {
    let file = record_driven("bytes", 3);
    let recorded = raw_payloads(&file);
    assert_eq!(recorded.keys().copied().collect::<Vec<u8>>(), b"glmpsvz");
    let positions = &recorded[&b'p'];
    // The robot moved: the recorded positions differ (and carry a time field), so matching
    // them in order is not matching a constant.
    let distinct: std::collections::HashSet<&Vec<u8>> = positions.iter().map(|(_, p)| p).collect();
    assert!(
        distinct.len() > positions.len() * 9 / 10,
        "{} of {}",
        distinct.len(),
        positions.len()
    );
    let span = Duration::from_nanos(positions.last().unwrap().0 - positions[0].0);

    let server = replay_server(&file, &[]);
    let mut c = Client::push_all(server.addr());
    // A 0.7.4a client in the default mode reads too, and commands the replayed base.
    let mut old = Client::connect(server.addr());
    old.request(&[(b'p', b'a'), (b'l', b'r')]);
    let mut got: BTreeMap<u8, Vec<Vec<u8>>> = BTreeMap::new();
    let end = Instant::now() + span + Duration::from_secs(3);
    while Instant::now() < end {
        if let Some((code, payload)) = c.read_message_within(Duration::from_millis(200)) {
            got.entry(code).or_default().push(payload);
        }
        old.drive(500, 90);
    }
    let mut old_packets = Vec::new();
    let stop = Instant::now() + Duration::from_millis(500);
    while Instant::now() < stop {
        old_packets.extend(old.read_message_within(Duration::from_millis(100)));
    }
    for (code, want) in &recorded {
        let g = got.get(code).map(Vec::as_slice).unwrap_or(&[]);
        in_order(g, want).unwrap_or_else(|e| panic!("device {}: {e}", char::from(*code)));
        assert!(
            g.len() + 2 >= want.len(),
            "device {}: {} of {} recorded readings served",
            char::from(*code),
            g.len(),
            want.len()
        );
    }
    // Everything the 0.7.4a client got was recorded; the commands moved nothing.
    assert!(!old_packets.is_empty());
    for (code, payload) in old_packets {
        assert!(
            recorded[&code].iter().any(|(_, w)| *w == payload),
            "device {}: a payload that was never recorded",
            char::from(code)
        );
    }
}

#[test]
fn replay_plays_from_an_offset_at_a_speed_factor_and_loops() {
    let file = record_driven("speed", 3);
    let recorded = raw_payloads(&file);
    let positions = &recorded[&b'p'];
    // Playback starts at the first reading of any device at or after one second in.
    let t0 = recorded.values().map(|v| v[0].0).min().unwrap();
    let start = positions
        .iter()
        .position(|(t, _)| *t >= t0 + 1_000_000_000)
        .unwrap();
    let first = positions[start].1.clone();
    let rest = Duration::from_nanos(positions.last().unwrap().0 - positions[start].0);

    let speed = 4.0;
    let server = replay_server(
        &file,
        &[
            (
                "speed",
                config::Value::new(None, config::ValueKind::Float(speed)),
            ),
            (
                "offset",
                config::Value::new(None, config::ValueKind::Float(1.0)),
            ),
            (
                "loop",
                config::Value::new(None, config::ValueKind::Boolean(true)),
            ),
        ],
    );
    let mut c = Client::push_all(server.addr());
    let mut seen: Vec<(Instant, Vec<u8>)> = Vec::new();
    let end = Instant::now() + rest.mul_f64(2.5 / speed) + Duration::from_secs(3);
    while Instant::now() < end {
        if let Some((b'p', payload)) = c.read_message_within(Duration::from_millis(200)) {
            seen.push((Instant::now(), payload));
        }
    }
    assert!(!seen.is_empty());
    // The first reading served is the one at the offset (or, on a slow machine that set
    // the client up late at 4x, one of the next two).
    assert!(
        positions[start..start + 3]
            .iter()
            .any(|(_, p)| *p == seen[0].1),
        "playback does not start at the offset"
    );
    let at: Vec<Instant> = seen
        .iter()
        .filter(|(_, p)| *p == first)
        .map(|(t, _)| *t)
        .collect();
    assert!(
        at.len() >= 2,
        "the recording did not loop in {} readings",
        seen.len()
    );
    // One pass of the rest of the recording at 4x: timers never fire early, and a loaded
    // machine may make them late.
    let pass = at[1] - at[0];
    let expected = rest.div_f64(speed);
    assert!(
        pass >= expected.mul_f64(0.8) && pass <= expected * 3 + Duration::from_secs(1),
        "one pass took {pass:?}, expected about {expected:?}"
    );
    // In between, the positions were the recorded ones in order.
    let one_pass: Vec<Vec<u8>> = seen
        .iter()
        .filter(|(t, _)| *t >= at[0] && *t < at[1])
        .map(|(_, p)| p.clone())
        .collect();
    in_order(&one_pass, &positions[start..]).unwrap();
    assert!(one_pass.len() + 2 >= positions.len() - start);
}

#[test]
fn record_and_replay_flags_and_keys() {
    use player::parse_args;
    use player::settings::{Invocation, Settings, SettingsError};
    let run = |a: &[&str]| match parse_args(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>()) {
        Ok(Invocation::Run { settings, .. }) => Ok(*settings),
        Ok(other) => panic!("{other:?}"),
        Err(e) => Err(e),
    };
    let s = run(&["-record", "x.mcap"]).unwrap();
    assert!(Path::new(&s.record.path).is_absolute());
    assert!(s.record.path.ends_with("x.mcap"));
    let e = run(&["-replay", "/no/such/file.mcap"]).unwrap_err();
    assert!(
        matches!(&e, SettingsError::Flag { flag, why } if flag == "-replay"
            && why.contains("/no/such/file.mcap")),
        "{e}"
    );
    let e = Settings::from_toml(
        "[record]\npath = \"a\"\nmax_bytez = 3\n[[robot]]\n",
        "t.toml",
    )
    .unwrap_err();
    assert!(
        matches!(&e, SettingsError::Value { key, why, .. } if key == "record"
            && why.contains("max_bytez")),
        "{e}"
    );
    let e = Settings::from_toml("[record]\nchunk_seconds = -1\n[[robot]]\n", "t.toml").unwrap_err();
    assert!(
        matches!(&e, SettingsError::Value { key, .. } if key == "record.chunk_seconds"),
        "{e}"
    );
    // A recording path that cannot be created stops the start with its name.
    let (code, _, err) = {
        let out = Command::new(PLAYER)
            .args([
                "-gp",
                &free_port().to_string(),
                "-record",
                "/no/such/dir/x.mcap",
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            (),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/no/such/dir/x.mcap"), "{err}");
}

#[test]
fn a_full_scan_is_recorded_raw_and_on_the_viewers_scan_channel() {
    use player::emulators::scene::Scene;
    use player::emulators::urg::{Model, UrgEmulator};
    use player::emulators::TcpEmulator;
    use player_client::proto::scan::Scan;
    let emu = TcpEmulator::start(UrgEmulator::new(Model::utm_30lx(), Scene::room())).unwrap();
    let toml = hw::robot_toml(&[("urg", "lL", &format!("address = \"{}\"", emu.addr()))]);
    let mut settings = player::settings::Settings::from_toml(&toml, "test").unwrap();
    let file = scratch("full-scan").join("scan.mcap");
    settings.record.path = file.display().to_string();
    let server = start_server_with(settings, player::builtin_catalog());
    let mut c = player_client::Client::connect(server.addr()).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    c.request("Lr").unwrap().check().unwrap();
    let mut scans = 0;
    hw::read_until(&mut c, "five full scans", |r| {
        scans += usize::from(r.scan.is_some());
        scans >= 5
    });
    drop(c);
    server.shutdown();
    let bytes = std::fs::read(&file).unwrap();
    let (mut raw, mut foxglove) = (0, 0);
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        match m.channel.topic.as_str() {
            "/hw/L" => {
                assert_eq!(m.channel.message_encoding, RAW_ENCODING);
                let s = Scan::decode(&m.data).expect("an L payload");
                assert_eq!(s.ranges.len(), 1081);
                raw += 1;
            }
            "/hw/scan" => {
                use prost::Message;
                // As the viewer serves it by default: protobuf, with its descriptor.
                let schema = m.channel.schema.as_ref().expect("a schema");
                assert_eq!(schema.name, "foxglove.LaserScan");
                assert_eq!(schema.encoding, "protobuf");
                assert_eq!(m.channel.message_encoding, "protobuf");
                let s = foxglove::messages::LaserScan::decode(&m.data[..]).unwrap();
                assert_eq!(s.ranges.len(), 1081);
                assert_eq!(s.ranges[780], 0.9);
                foxglove += 1;
            }
            _ => {}
        }
    }
    assert!(raw >= 1, "no raw L messages");
    assert_eq!(raw, foxglove, "one /hw/scan message per L reading");
}

#[test]
fn a_recording_has_message_indexes_a_summary_and_log_times_from_one_clock() {
    let file = record_driven("indexed", 3);
    let bytes = std::fs::read(&file).unwrap();
    let summary = mcap::Summary::read(&bytes)
        .unwrap()
        .expect("a summary section");
    assert!(!summary.chunk_indexes.is_empty());
    for c in &summary.chunk_indexes {
        // Foxglove reads no chunk without message indexes (nor one whose times are zero).
        assert!(
            c.message_index_length > 0,
            "chunk without message indexes: {c:?}"
        );
        assert!(!c.message_index_offsets.is_empty(), "{c:?}");
        assert!(c.message_start_time > 1_600_000_000_000_000_000, "{c:?}");
    }
    let stats = summary.stats.expect("statistics");
    assert!(stats.message_start_time > 1_600_000_000_000_000_000);
    // Every channel's log times on one clock: the whole file spans the recording's seconds,
    // and log times never go back in file order.
    let span = stats.message_end_time - stats.message_start_time;
    assert!(span < 10_000_000_000, "{span} ns");
    let mut last = 0;
    let mut channels = std::collections::HashSet::new();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        assert!(m.log_time >= last, "{} before {last}", m.log_time);
        assert!(m.publish_time > 0, "{}", m.channel.topic);
        last = m.log_time;
        channels.insert(m.channel.topic.clone());
    }
    assert!(channels.contains("/pioneer/laser") && channels.contains("/pioneer/l"));
}

#[test]
fn each_robot_of_a_world_is_recorded_under_its_own_name_with_its_own_commands() {
    // Three robots of one world in one process, one recorder: the registries' messages do
    // not name the robot, so what each robot's tap passes on must land on its own topics.
    let file = scratch("world").join("world.mcap");
    let world = concat!(env!("CARGO_MANIFEST_DIR"), "/config/worlds/arena.toml");
    let args: Vec<String> = ["-stage", world, "-gp", "0", "-record"]
        .iter()
        .map(|s| s.to_string())
        .chain([file.display().to_string()])
        .collect();
    let settings = match player::parse_args(&args) {
        Ok(player::settings::Invocation::Run { settings, .. }) => *settings,
        other => panic!("{other:?}"),
    };
    let server = TestServer::start(settings, player::builtin_catalog());
    assert_eq!(server.addrs().len(), 3);
    // Only the right follower (the third robot) is driven, and given the motor config.
    let sent = drive_for(server.addrs()[2], Duration::from_secs(2));
    server.shutdown();

    let bytes = std::fs::read(&file).unwrap();
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    let mut farthest: BTreeMap<String, i32> = BTreeMap::new();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        let topic = m.channel.topic.clone();
        *count.entry(topic.clone()).or_default() += 1;
        if topic.ends_with("/p") {
            let p = player_proto::data::Position::decode(&m.data).unwrap();
            let far = farthest.entry(topic).or_default();
            *far = (*far).max(p.x.abs().max(p.y.abs()));
        }
    }
    let n = |t: &str| count.get(t).copied().unwrap_or(0);
    for robot in ["leader", "left", "right"] {
        for topic in ["p", "s", "l", "laser", "tf"] {
            let topic = format!("/{robot}/{topic}");
            assert!(n(&topic) > 0, "nothing on {topic}: {count:?}");
        }
    }
    assert!(
        n("/right/p/cmd") >= sent / 2,
        "{sent} commands sent: {count:?}"
    );
    assert_eq!(n("/right/p/cfg"), 1, "{count:?}");
    for robot in ["leader", "left"] {
        assert_eq!(n(&format!("/{robot}/p/cmd")), 0, "{count:?}");
        assert_eq!(n(&format!("/{robot}/p/cfg")), 0, "{count:?}");
        assert_eq!(farthest[&format!("/{robot}/p")], 0, "{farthest:?}");
    }
    assert!(farthest["/right/p"] > 100, "{farthest:?}");
}
