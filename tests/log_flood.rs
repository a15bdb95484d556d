//! The log under a flood of client bytes (issue 34): the `player` binary, its log on a pipe
//! as under a service manager, and four hosts (127.0.0.2 to 127.0.0.5 on loopback) each
//! running the protocol fuzzer's random client (`player_testkit::random`): connecting
//! again and again, requesting, commanding and configuring devices at random, sending
//! unknown and oversized messages and raw bytes.
//!
//! Afterwards the log must show:
//! - no record lost: neither slog-async's "dropped messages due to channel overflow" nor our
//!   own "log records dropped";
//! - every host's folded count: a line of it carrying `folded: N` (or the "log lines folded"
//!   line the server writes for a host that fell silent);
//! - the limits: no message of one host more than 5 times, and no host more than 40 lines,
//!   in any 10 s window of the run (a message counted by its text, which is at most by its
//!   place in the code): at most 4 lines a second per host, however hard it tries.
//!
//! The short run (12 s: more than one 10 s window) is in the normal test run; the 60 s run
//! is `#[ignore]`d there and run by CI (`.ci/run`).

// Unsafe code: kill(2) on the server process (a Linux call).
#![allow(unsafe_code)]

use player_testkit::random::random_client;
use player_testkit::*;
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lines of one client per place per window, in all per window, and the window (the
/// server's `logging::limits::CLIENT_BURST`, `CLIENT_TOTAL` and `CLIENT_WINDOW`).
const BURST: usize = 5;
const TOTAL: usize = 40;
const WINDOW_S: u64 = 10;
/// The fuzzing hosts.
const HOSTS: [u8; 4] = [2, 3, 4, 5];

fn host(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))
}

/// The host a log line is about: the address of its `client:` or `opened_by:` value.
fn host_of(line: &str) -> Option<u8> {
    ["client: 127.0.0.", "opened_by: 127.0.0."]
        .iter()
        .find_map(|k| {
            let at = line.find(k)? + k.len();
            let digits: String = line[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().ok()
        })
        .filter(|n| HOSTS.contains(n))
}

/// A line's message: the text after the level, up to the first key-value pair.
fn message(line: &str) -> &str {
    let after = ["INFO ", "WARN ", "ERRO ", "CRIT ", "DEBG "]
        .iter()
        .find_map(|l| line.find(l).map(|i| &line[i + l.len()..]))
        .unwrap_or(line);
    after.split(", ").next().unwrap_or(after)
}

fn flood(secs: u64) {
    let dir = std::env::temp_dir().join(format!("player-log-flood-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let config = dir.join("player.toml");
    let mut f = std::fs::File::create(&config).unwrap();
    write!(
        f,
        "[[robot]]\nname = \"pioneer\"\nport = {port}\nbind = \"127.0.0.1\"\nweb_port = 0\n\n\
         [[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\", \"s\", \"m\", \"g\", \"l\", \"z\", \"v\"]\n\
         [robot.driver.params]\nworld = \"room\"\nmotors_on = true\n"
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_player"))
        .args(["--config", config.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the player binary starts");
    let log = collect_stderr(&mut child);
    wait_for_text(&log, "listening", TIMEOUT);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));

    let t0 = Instant::now();
    let until = t0 + Duration::from_secs(secs);
    let received = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = HOSTS
        .iter()
        .map(|&n| {
            let received = received.clone();
            std::thread::spawn(move || {
                random_client(addr, Some(host(n)), 0x34 ^ u64::from(n), until, received)
            })
        })
        .collect();
    let tallies: Vec<_> = clients.into_iter().map(|h| h.join().unwrap()).collect();
    let elapsed = t0.elapsed().as_secs_f64();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    wait_until(Duration::from_secs(15), "player to exit", || {
        child.try_wait().unwrap().is_some()
    });
    let text = log.lock().unwrap().clone();
    let lines: Vec<&str> = text.lines().collect();
    let framed: usize = tallies.iter().map(|t| t.framed).sum();
    eprintln!(
        "log flood: {secs} s, {framed} messages in {} connections, {} log lines",
        tallies.iter().map(|t| t.connections).sum::<usize>(),
        lines.len()
    );

    // No record lost.
    for l in &lines {
        assert!(
            !l.contains("channel overflow") && !l.contains("log records dropped"),
            "the log lost records: {l}"
        );
    }
    // Per host: lines, folded counts, and each message's count per window.
    let mut per_host: HashMap<u8, Vec<&str>> = HashMap::new();
    for l in &lines {
        if let Some(h) = host_of(l) {
            per_host.entry(h).or_default().push(l);
        }
    }
    let windows = (secs / WINDOW_S + 1) as usize;
    for n in HOSTS {
        let mine = per_host.get(&n).map(Vec::as_slice).unwrap_or_default();
        let folded: u64 = mine
            .iter()
            .filter_map(|l| {
                let at = l.find("folded: ")? + "folded: ".len();
                l[at..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        let mut by_message: HashMap<&str, usize> = HashMap::new();
        for l in mine {
            *by_message.entry(message(l)).or_default() += 1;
        }
        let rate = mine.len() as f64 / elapsed;
        eprintln!(
            "log flood: 127.0.0.{n}: {} lines ({rate:.1}/s) of {} messages, {folded} folded",
            mine.len(),
            by_message.len()
        );
        assert!(
            folded > 0,
            "127.0.0.{n}: no folded count in the log:\n{}",
            mine.join("\n")
        );
        for (m, count) in &by_message {
            assert!(
                *count <= BURST * windows,
                "127.0.0.{n}: {count} lines of {m:?} in {secs} s (at most {BURST} per {WINDOW_S} s)"
            );
        }
        assert!(
            mine.len() <= TOTAL * windows,
            "127.0.0.{n}: {} lines in {secs} s (at most {TOTAL} per {WINDOW_S} s)",
            mine.len()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn four_fuzzing_hosts_for_12_s_lose_no_record_and_each_is_limited_with_its_folded_count() {
    flood(12);
}

/// The issue's own measure: 60 s. Run by CI (`.ci/run`) with `--ignored`.
#[test]
#[ignore]
fn four_fuzzing_hosts_for_60_s_lose_no_record_and_each_is_limited_with_its_folded_count() {
    flood(60);
}
