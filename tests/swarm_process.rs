//! A world of 10 000 robots run by the `player` binary as a user runs it (`-stage FILE -gp
//! 0`): it gets ready, holds about one descriptor per robot (its listening socket: no
//! reserve descriptor per listener, no second descriptor of any kind per robot), and a
//! SIGTERM shuts it down in order, promptly, with exit code 0 (terminating 10 000
//! simulated robots of one world must not advance the world's physics once per robot).

// Unsafe code: kill(2) on the server process (a Linux call).
#![allow(unsafe_code)]

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROBOTS: usize = 10_000;

/// Reads what the child has written to `log` so far.
fn log_text(path: &std::path::Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut s);
    }
    s
}

#[test]
fn a_world_of_10_000_robots_starts_holds_one_descriptor_per_robot_and_stops_on_sigterm() {
    let dir = player_testkit::hw::scratch_dir("swarm_process");
    let world = dir.join("swarm.toml");
    std::fs::write(
        &world,
        format!(
            "[world]\nwidth = 100000\nheight = 100000\nseed = 7\n\n\
             [[swarm]]\ncount = {ROBOTS}\nkind = \"simple\"\n"
        ),
    )
    .unwrap();
    let log = dir.join("player.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_player"))
        .args(["-stage", world.to_str().unwrap(), "-gp", "0"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Ready: every robot listens and the daemon's ready line is out (a debug build on a
    // busy machine takes seconds; the bound only catches a hang).
    let start = Instant::now();
    while !log_text(&log).contains("INFO ready") {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("player exited early ({status}):\n{}", log_text(&log));
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "not ready after 120 s:\n{}",
            log_text(&log)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("{ROBOTS} robots ready after {:?}", start.elapsed());
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    println!("{fds} open descriptors");
    assert!(
        (ROBOTS..=ROBOTS + 200).contains(&fds),
        "{fds} descriptors for {ROBOTS} robots: expected one listening socket each and a few more"
    );
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGTERM) }, 0);
    let stop = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if stop.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("still running 60 s after SIGTERM:\n{}", log_text(&log));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    println!("stopped {:?} after SIGTERM", stop.elapsed());
    assert_eq!(status.code(), Some(0), "{}", log_text(&log));
    assert!(log_text(&log).contains("shutdown complete"));
}
