//! At the descriptor limit the server keeps serving its clients, closes newcomers at once
//! (a reserve descriptor lets it take and close them instead of leaving them queued
//! unserved), and logs once a second, not per attempt. The `player` binary runs with a
//! low descriptor limit; the clients are this test's.

// Unsafe code: setrlimit(2) in the child before exec (a Linux call).
#![allow(unsafe_code)]

use player_testkit::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn at_the_descriptor_limit_newcomers_are_closed_and_clients_kept() {
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_player"));
    cmd.args(["-gp", &port.to_string(), "-bind", "127.0.0.1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; it runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("start player");
    let log = collect_stderr(&mut child);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let streamer = Streamer::start(addr, &[(b'p', b'r')], None);
    streamer.wait_rounds(3);
    let from = Instant::now();
    // Far more clients than the server has descriptors for.
    let mut served = 0;
    let mut closed = 0;
    let mut clients = Vec::new();
    for _ in 0..120 {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(&player_proto::message::request(&[(b'm', b'r')]));
        clients.push(s);
    }
    for s in &mut clients {
        let mut head = [0u8; 3];
        match s.read_exact(&mut head) {
            Ok(()) => served += 1,
            Err(e) => {
                assert!(
                    !matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                    "a newcomer was left waiting unserved; the server's log:\n{}",
                    log.lock().unwrap()
                );
                closed += 1;
            }
        }
    }
    // Two more seconds at the limit, newcomers knocking all the while.
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end {
        if let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            let _ = s.write_all(b"dr");
        }
        // The newcomers' pace (two seconds of them at the limit).
        std::thread::sleep(Duration::from_millis(20));
    }
    let at_limit = Instant::now();
    assert!(served > 10, "served only {served}");
    assert!(closed > 10, "closed only {closed}: was the limit reached?");
    streamer.assert_rate(from, at_limit, 10.0, "an existing client at the limit");
    // Once a second at most, however many were refused.
    let lines = log
        .lock()
        .unwrap()
        .lines()
        .filter(|l| l.contains("accept failed"))
        .count();
    let secs = from.elapsed().as_secs() as usize + 1;
    assert!(
        lines <= secs + 1,
        "{lines} accept-failure lines in {secs} s"
    );
    // Descriptors back: newcomers are served again.
    drop(clients);
    wait_until(TIMEOUT, "a newcomer to be answered", || {
        let mut c = Client::connect(addr);
        c.send_request(&[(b'p', b'r')]);
        matches!(
            c.read_message_within_or_closed(Duration::from_secs(1)),
            Some((b'r', _))
        )
    });
    assert_fresh_client_served(addr);
    let _ = child.kill();
    let _ = child.wait();
}
