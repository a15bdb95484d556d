//! The out-of-tree example crate (`examples/odometer/`, its own workspace, on the driver kit
//! by path) builds, and the `player` binary serves its device: `d`, the distance the robot
//! drove, computed by the plugin program from the position device it reads through the
//! server, matches the distance the robot's own odometry says it drove.

// Unsafe code: kill(2) on the server process (a Linux call).
#![allow(unsafe_code)]

use player_testkit::{collect_stderr, free_port, Client};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PLAYER: &str = env!("CARGO_BIN_EXE_player");

/// Builds the example crate with cargo (its own workspace, its own target directory under
/// this build's); the path of its binary.
fn build_example() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("odometer-example");
    let out = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "--manifest-path"])
        .arg(root.join("examples/odometer/Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "the example crate does not build:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = target.join("debug/odometer-plugin");
    assert!(bin.is_file(), "{} was not built", bin.display());
    bin
}

struct Player {
    child: Child,
    log: Arc<Mutex<String>>,
}

impl Drop for Player {
    fn drop(&mut self) {
        // SIGTERM: an orderly shutdown that also ends the plugin program.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

#[test]
fn the_out_of_tree_odometer_plugin_measures_the_distance_driven() {
    let plugin = build_example();
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("odometer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let config = dir.join("odometer.toml");
    std::fs::write(
        &config,
        format!(
            "[[robot]]\nname = \"pioneer\"\nport = {port}\nbind = \"127.0.0.1\"\nweb_port = 0\n\n\
             [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\"]\n[robot.driver.params]\n\
             world = \"room\"\nmotors_on = true\nnoise = false\n\n\
             [[robot.driver]]\ndriver = \"program\"\ndevices = [\"d\"]\n[robot.driver.params]\n\
             command = [\"{}\"]\nname = \"odometer\"\n\
             [[robot.driver.params.device]]\ncode = \"d\"\ndata_size = 4\naccess = \"r\"\n",
            plugin.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(PLAYER)
        .arg("--config")
        .arg(&config)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("player starts");
    let log = collect_stderr(&mut child);
    let player = Player { child, log };

    let mut c = Client::connect(([127, 0, 0, 1], port).into());
    let reply = c.request(&[(b'p', b'a'), (b'd', b'r')]);
    assert_eq!(
        reply,
        vec![b'p', b'a', b'd', b'r'],
        "both devices granted; log:\n{}",
        player.log.lock().unwrap()
    );
    // Forward, then a turn, then forward again: about 2.5 s in all.
    let mut last_p = None;
    let mut last_d = None;
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(2500) {
        let turning = (800..1500).contains(&start.elapsed().as_millis());
        c.drive(300, if turning { 40 } else { 0 });
        let until = Instant::now() + Duration::from_millis(100);
        while Instant::now() < until {
            if let Some((code, payload)) = c.read_message_within(Duration::from_millis(50)) {
                match code {
                    b'p' => last_p = Some(player_proto::data::Position::decode(&payload).unwrap()),
                    b'd' => last_d = Some(u32::from_be_bytes(payload[..4].try_into().unwrap())),
                    _ => {}
                }
            }
        }
    }
    c.drive(0, 0);
    // Let both settle: the last position and the distance computed from it.
    let settle = Instant::now() + Duration::from_millis(800);
    while Instant::now() < settle {
        if let Some((code, payload)) = c.read_message_within(Duration::from_millis(50)) {
            match code {
                b'p' => last_p = Some(player_proto::data::Position::decode(&payload).unwrap()),
                b'd' => last_d = Some(u32::from_be_bytes(payload[..4].try_into().unwrap())),
                _ => {}
            }
        }
    }
    let p = last_p.expect("position readings");
    let d = f64::from(last_d.expect("odometer readings from the plugin"));
    // The path bends, so the distance driven is at least the straight line to where the
    // robot is now, and no more than what 300 mm/s for the time commanded allows.
    let straight = f64::from(p.x).hypot(f64::from(p.y));
    assert!(straight > 300.0, "the robot moved: {p:?}");
    assert!(
        d >= straight - 20.0 && d <= 300.0 * 3.0 + 50.0,
        "odometer {d} mm against a straight line of {straight:.0} mm; log:\n{}",
        player.log.lock().unwrap()
    );
}
