//! Shared helpers of the integration tests: an in-process server on a background thread,
//! a raw byte-level client over `std::net::TcpStream`, and a background "streamer" client
//! that records when each of its rounds arrived, to measure rates.
//!
//! Every test starts its own server on 127.0.0.1 port 0, so tests run in parallel. Timeouts
//! are generous (the suite must not be flaky on a loaded two-core machine); rates are
//! measured over seconds and checked with wide tolerance.
//!
//! Set `PLAYER_TEST_LOG=1` to see the server's log on standard error.
#![allow(dead_code)]

pub mod netns;

use player::catalog::Catalog;
use player::settings::Settings;
use player_proto::data::Position;
use player_proto::message::{self, ServerMessage};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A TCP port on 127.0.0.1 that was free a moment ago (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Collects a child process's standard error (which must be piped) into a string, on a
/// thread of its own, so a test can read the log while the process runs.
pub fn collect_stderr(child: &mut std::process::Child) -> Arc<Mutex<String>> {
    let log = Arc::new(Mutex::new(String::new()));
    let mut pipe = child.stderr.take().expect("stderr is piped");
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
    log
}

/// How long any single expected read may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// One data packet or reply: the first byte and the payload.
pub type Packet = (u8, Vec<u8>);

// ----- the server ---------------------------------------------------------------------------

/// A server running in-process on its own thread and actix system. Dropping it shuts the
/// server down (`Server::shutdown`) and joins the thread.
pub struct TestServer {
    addrs: Vec<SocketAddr>,
    started: Instant,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: mpsc::Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

fn test_logger() -> slog::Logger {
    if std::env::var_os("PLAYER_TEST_LOG").is_some() {
        player::logging::terminal(true)
    } else {
        player::logging::discard()
    }
}

/// The shipped default configuration (the simulated Pioneer with all seven devices).
pub fn default_settings() -> Settings {
    Settings::default_config()
}

/// Starts the default server with the command watchdog's timeout set to `secs` (tests of
/// the other ways a robot stops use a long one, so only what they test can stop it).
pub fn start_server_command_timeout(secs: f64) -> TestServer {
    let mut settings = default_settings();
    settings.robot[0].command_timeout = Some(secs);
    start_server_with(settings, player::builtin_catalog())
}

/// Starts the default server (simulated Pioneer, devices l s p g m v z).
pub fn start_server() -> TestServer {
    start_server_with(default_settings(), player::builtin_catalog())
}

/// Starts a server with these settings (every robot moved to port 0, and to 127.0.0.1
/// unless the settings name another address to bind) and
/// catalog.
pub fn start_server_with(settings: Settings, catalog: Catalog) -> TestServer {
    start_server_logged(settings, catalog, test_logger())
}

/// Starts a server like [`start_server_with`], logging to `logger`.
pub fn start_server_logged(
    mut settings: Settings,
    catalog: Catalog,
    logger: slog::Logger,
) -> TestServer {
    for r in &mut settings.robot {
        r.port = 0;
        if r.bind == "0.0.0.0" {
            r.bind = "127.0.0.1".into();
        }
        // The web viewer only where a test asks for it (on a port it chose).
        r.web_port.get_or_insert(0);
    }
    let (ready_tx, ready_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("player-server".into())
        .spawn(move || {
            let system = actix_rt::System::new();
            system.block_on(async move {
                let started = Instant::now();
                let base = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
                match player::server::start(&settings, &catalog, base, logger).await {
                    Ok(server) => {
                        let _ = ready_tx.send(Ok((server.local_addrs(), started)));
                        let _ = stop_rx.await;
                        server.shutdown().await;
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                    }
                }
            });
            drop(system);
            let _ = done_tx.send(());
        })
        .expect("spawn the server thread");
    let (addrs, started) = match ready_rx.recv_timeout(TIMEOUT) {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => panic!("server did not start: {e}"),
        Err(e) => panic!("server did not start within {TIMEOUT:?}: {e}"),
    };
    TestServer {
        addrs,
        started,
        stop: Some(stop_tx),
        done: done_rx,
        thread: Some(thread),
    }
}

impl TestServer {
    /// The first robot's address.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// Every robot's address, in configuration order.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// An upper bound of the server's "ms since the server started" clock (the position
    /// device's time field) right now: the instant was taken just before `player::server::start`.
    pub fn server_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Shuts the server down and waits for its thread; fails if that takes over 15 s.
    pub fn shutdown(mut self) -> Duration {
        let t = Instant::now();
        self.stop_and_join();
        t.elapsed()
    }

    fn stop_and_join(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let Some(thread) = self.thread.take() else {
            return;
        };
        match self.done.recv_timeout(Duration::from_secs(15)) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = thread.join();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if !std::thread::panicking() {
                    panic!("the server did not shut down within 15 s");
                }
            }
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

// ----- the raw client -----------------------------------------------------------------------

/// A byte-level Player client. Every read fails the test after [`TIMEOUT`].
pub struct Client {
    pub stream: TcpStream,
    /// The position command this client holds (sent again with each position reading).
    held: Option<Vec<u8>>,
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl Client {
    /// Connects (retrying for a while, for a server that is still starting).
    pub fn connect(addr: SocketAddr) -> Client {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            match TcpStream::connect_timeout(&addr, TIMEOUT) {
                Ok(stream) => return Client::from_stream(stream),
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => panic!("cannot connect to {addr}: {e}"),
            }
        }
    }

    /// Wraps a connected stream.
    pub fn from_stream(stream: TcpStream) -> Client {
        stream.set_nodelay(true).expect("nodelay");
        stream.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        stream
            .set_write_timeout(Some(TIMEOUT))
            .expect("write timeout");
        Client { stream, held: None }
    }

    /// Sends raw bytes.
    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send to the server");
    }

    /// Sends a device request (`dr`) built by the proto crate. Closing the position
    /// device or dropping it to read-only ends the command this client holds.
    pub fn send_request(&mut self, pairs: &[(u8, u8)]) {
        if pairs
            .iter()
            .any(|&(d, a)| d == b'p' && matches!(a, b'c' | b'r'))
        {
            self.held = None;
        }
        self.send(&message::request(pairs));
    }

    /// Sends a command `c<device><size><payload>`.
    pub fn command(&mut self, device: u8, payload: &[u8]) {
        self.send(&message::command(device, payload));
    }

    /// Sends a config `x<device><size><code><args>`.
    pub fn config(&mut self, device: u8, code: u8, args: &[u8]) {
        self.send(&message::config(device, code, args));
    }

    /// Sets this client's data frequency (`x y f`).
    pub fn frequency(&mut self, hz: u16) {
        self.config(b'y', b'f', &hz.to_be_bytes());
    }

    /// Sets this client's data mode (`x y r`).
    pub fn data_mode(&mut self, mode: u8) {
        self.config(b'y', b'r', &[mode]);
    }

    /// Asks for one round (`x y d`).
    pub fn request_round(&mut self) {
        self.config(b'y', b'd', &[]);
    }

    /// Turns timestamps on or off (`x y t`).
    pub fn timestamps(&mut self, on: bool) {
        self.config(b'y', b't', &[u8::from(on)]);
    }

    /// Sends a position command (speed mm/s, turn rate degrees/s) and holds it: like the
    /// manual's examples, the client sends it again with every position reading it reads
    /// through [`Client::next_position`], so the command watchdog sees a live controller.
    pub fn drive(&mut self, speed: i16, turn_rate: i16) {
        let c = player_proto::data::PositionCommand { speed, turn_rate }.encode();
        self.hold(&message::command(b'p', &c));
    }

    /// Sends a whole command message and holds it (see [`Client::drive`]).
    pub fn hold(&mut self, msg: &[u8]) {
        self.send(msg);
        self.held = Some(msg.to_vec());
    }

    /// Sends the held command again, if any (a controller's command of this round).
    pub fn resend_held(&mut self) {
        if let Some(c) = self.held.clone() {
            self.send(&c);
        }
    }

    /// Sends one position command without holding it (a controller that then hangs).
    pub fn drive_once(&mut self, speed: i16, turn_rate: i16) {
        let c = player_proto::data::PositionCommand { speed, turn_rate }.encode();
        self.command(b'p', &c);
        self.held = None;
    }

    /// Reads exactly `n` bytes (fails the test after [`TIMEOUT`]).
    pub fn read_exact(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0; n];
        if let Err(e) = self.stream.read_exact(&mut buf) {
            panic!("reading {n} bytes from the server: {e}");
        }
        buf
    }

    /// Reads one server message: the first byte of the 3-byte header and the payload.
    pub fn read_message(&mut self) -> Packet {
        let head = self.read_exact(message::SERVER_HEADER);
        let size = usize::from(u16::from_be_bytes([head[1], head[2]]));
        let payload = self.read_exact(size);
        (head[0], payload)
    }

    /// Reads one message if its first byte arrives within `wait`; `None` otherwise.
    pub fn read_message_within(&mut self, wait: Duration) -> Option<Packet> {
        self.stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .unwrap();
        let mut first = [0u8; 1];
        let r = self.stream.read(&mut first);
        self.stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        match r {
            Ok(0) => panic!("the server closed the connection"),
            Ok(_) => {}
            Err(e) if is_timeout(&e) => return None,
            Err(e) => panic!("reading from the server: {e}"),
        }
        let rest = self.read_exact(2);
        let size = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        Some((first[0], self.read_exact(size)))
    }

    /// Like [`Client::read_message_within`], but a closed or reset connection is `None`
    /// too.
    pub fn read_message_within_or_closed(&mut self, wait: Duration) -> Option<Packet> {
        self.stream
            .set_read_timeout(Some(wait.max(Duration::from_millis(1))))
            .unwrap();
        let mut head = [0u8; 3];
        let r = self.stream.read_exact(&mut head);
        self.stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        match r {
            Ok(()) => {}
            Err(_) => return None,
        }
        let size = usize::from(u16::from_be_bytes([head[1], head[2]]));
        Some((head[0], self.read_exact(size)))
    }

    /// Reads the next message, which must be a reply (`r`); returns its payload.
    pub fn read_reply(&mut self) -> Vec<u8> {
        let (kind, payload) = self.read_message();
        assert_eq!(
            kind,
            b'r',
            "expected a reply, got a message of type {:?} ({} bytes)",
            char::from(kind),
            payload.len()
        );
        payload
    }

    /// Reads messages until a reply (data packets of earlier requests may come first, as
    /// the manual's footnote 7 allows); returns the data read before it and the reply.
    pub fn read_reply_skipping_data(&mut self) -> (Vec<Packet>, Vec<u8>) {
        let mut before = Vec::new();
        loop {
            let (kind, payload) = self.read_message();
            if kind == b'r' {
                return (before, payload);
            }
            before.push((kind, payload));
        }
    }

    /// Sends a request and returns its reply's payload (skipping data that came first).
    pub fn request(&mut self, pairs: &[(u8, u8)]) -> Vec<u8> {
        self.send_request(pairs);
        self.read_reply_skipping_data().1
    }

    /// Reads `n` messages.
    pub fn read_round(&mut self, n: usize) -> Vec<Packet> {
        (0..n).map(|_| self.read_message()).collect()
    }

    /// Reads `n` messages and returns their device codes.
    pub fn read_round_codes(&mut self, n: usize) -> Vec<u8> {
        self.read_round(n).into_iter().map(|(d, _)| d).collect()
    }

    /// Reads messages until none arrives for `quiet` (fails if data keeps coming for
    /// [`TIMEOUT`]: only for clients that are not streaming).
    pub fn drain(&mut self, quiet: Duration) -> Vec<Packet> {
        let deadline = Instant::now() + TIMEOUT;
        let mut out = Vec::new();
        while let Some(m) = self.read_message_within(quiet) {
            out.push(m);
            assert!(
                Instant::now() < deadline,
                "drain: data kept coming for {TIMEOUT:?}"
            );
        }
        out
    }

    /// Fails if any byte arrives within `ms` milliseconds.
    pub fn expect_silence(&mut self, ms: u64) {
        self.stream
            .set_read_timeout(Some(Duration::from_millis(ms)))
            .unwrap();
        let mut buf = [0u8; 64];
        let r = self.stream.read(&mut buf);
        self.stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        match r {
            Err(e) if is_timeout(&e) => {}
            Ok(0) => panic!("expected silence, but the server closed the connection"),
            Ok(n) => panic!(
                "expected silence for {ms} ms, got {n} bytes: {:?}",
                &buf[..n]
            ),
            Err(e) => panic!("expected silence, got an error: {e}"),
        }
    }

    /// Reads and discards until the server closes the connection (EOF or reset); fails if
    /// that does not happen within `within`.
    pub fn expect_closed(&mut self, within: Duration) {
        let deadline = Instant::now() + within;
        let mut buf = vec![0u8; 65536];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the server did not close the connection within {within:?}"
            );
            self.stream.set_read_timeout(Some(left)).unwrap();
            match self.stream.read(&mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    return
                }
                Err(e) => panic!("unexpected error while waiting for close: {e}"),
            }
        }
    }

    /// Reads data until a position packet arrives; returns it decoded.
    pub fn next_position(&mut self) -> Position {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            assert!(
                Instant::now() < deadline,
                "no position packet within {TIMEOUT:?}"
            );
            let (d, payload) = self.read_message();
            if d == b'p' {
                self.resend_held();
                return Position::decode(&payload).expect("a 21-byte position packet");
            }
        }
    }

    /// Reads data for about `d` and returns the last position packet seen (at least one).
    pub fn position_after(&mut self, d: Duration) -> Position {
        let end = Instant::now() + d;
        let mut last = self.next_position();
        while Instant::now() < end {
            last = self.next_position();
        }
        last
    }
}

/// The reply payload a request gets when every device is granted as asked: the request's
/// own pairs.
pub fn pairs_bytes(pairs: &[(u8, u8)]) -> Vec<u8> {
    pairs.iter().flat_map(|&(d, a)| [d, a]).collect()
}

/// Whether a heading (degrees 0..359) is within `tol` degrees of 0.
pub fn heading_near_zero(h: u16, tol: u16) -> bool {
    h <= tol || h >= 360 - tol
}

// ----- the streamer -------------------------------------------------------------------------

struct StreamState {
    rounds: Vec<(Instant, Vec<Packet>)>,
    ended: Option<String>,
}

/// A client on its own thread that requests devices, then reads continuously and records
/// each round (the packets of all its read devices) with its arrival time.
pub struct Streamer {
    state: Arc<Mutex<StreamState>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    per_round: usize,
}

impl Streamer {
    /// Connects, optionally sets the frequency, requests `pairs` (which must all be granted)
    /// and starts reading rounds of one packet per `r`/`a` device.
    pub fn start(addr: SocketAddr, pairs: &[(u8, u8)], hz: Option<u16>) -> Streamer {
        let mut c = Client::connect(addr);
        if let Some(hz) = hz {
            c.frequency(hz);
        }
        let reply = c.request(pairs);
        assert_eq!(reply, pairs_bytes(pairs), "streamer's request not granted");
        let per_round = pairs
            .iter()
            .filter(|(_, a)| matches!(a, b'r' | b'a'))
            .count();
        assert!(per_round > 0);
        let state = Arc::new(Mutex::new(StreamState {
            rounds: Vec::new(),
            ended: None,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let state = state.clone();
            let stop = stop.clone();
            std::thread::spawn(move || stream_loop(c.stream, per_round, state, stop))
        };
        Streamer {
            state,
            stop,
            thread: Some(thread),
            per_round,
        }
    }

    /// Waits until at least `n` rounds have arrived.
    pub fn wait_rounds(&self, n: usize) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            {
                let s = self.state.lock().unwrap();
                if s.rounds.len() >= n {
                    return;
                }
                if let Some(e) = &s.ended {
                    panic!("streamer ended before {n} rounds: {e}");
                }
            }
            assert!(
                Instant::now() < deadline,
                "streamer got fewer than {n} rounds within {TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Rounds that arrived in `[from, to)`.
    pub fn rounds_between(&self, from: Instant, to: Instant) -> Vec<(Instant, Vec<Packet>)> {
        let s = self.state.lock().unwrap();
        s.rounds
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .cloned()
            .collect()
    }

    /// Checks that the stream is alive and ran at `hz` (within 20 %) during `[from, to)`,
    /// with no gap over one second.
    pub fn assert_rate(&self, from: Instant, to: Instant, hz: f64, what: &str) {
        if let Some(e) = &self.state.lock().unwrap().ended {
            panic!("{what}: the streaming client's connection ended: {e}");
        }
        let rounds = self.rounds_between(from, to);
        let secs = to.duration_since(from).as_secs_f64();
        let rate = rounds.len() as f64 / secs;
        assert!(
            rate >= 0.8 * hz && rate <= 1.2 * hz,
            "{what}: the streaming client got {} rounds in {secs:.2} s ({rate:.1}/s), expected about {hz}/s",
            rounds.len()
        );
        let mut prev = from;
        for (t, _) in &rounds {
            let gap = t.duration_since(prev);
            assert!(
                gap < Duration::from_secs(1),
                "{what}: the streaming client waited {gap:?} for a round"
            );
            prev = *t;
        }
        let tail = to.duration_since(prev);
        assert!(
            tail < Duration::from_secs(1),
            "{what}: no round in the last {tail:?}"
        );
    }

    /// Every round so far.
    pub fn rounds(&self) -> Vec<(Instant, Vec<Packet>)> {
        self.state.lock().unwrap().rounds.clone()
    }

    /// Packets per round.
    pub fn per_round(&self) -> usize {
        self.per_round
    }
}

impl Drop for Streamer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn stream_loop(
    mut stream: TcpStream,
    per_round: usize,
    state: Arc<Mutex<StreamState>>,
    stop: Arc<AtomicBool>,
) {
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut chunk = vec![0u8; 1 << 16];
    let mut round: Vec<Packet> = Vec::new();
    let end = |why: String| state.lock().unwrap().ended = Some(why);
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut chunk) {
            Ok(0) => return end("the server closed the connection".into()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if is_timeout(&e) => continue,
            Err(e) => return end(format!("read error: {e}")),
        }
        loop {
            match message::decode_server(&buf, false) {
                Ok(Some((m, used))) => {
                    buf.drain(..used);
                    match m {
                        ServerMessage::Data {
                            device, payload, ..
                        } => round.push((device, payload)),
                        ServerMessage::Reply(r) => {
                            return end(format!("unexpected reply {r:?}"));
                        }
                    }
                    if round.len() == per_round {
                        let r = std::mem::take(&mut round);
                        state.lock().unwrap().rounds.push((Instant::now(), r));
                    }
                }
                Ok(None) => break,
                Err(e) => return end(format!("framing error: {e}")),
            }
        }
    }
}

// ----- checks -------------------------------------------------------------------------------

/// A fresh client asks for position, sonar and laser and gets the echo and two full rounds
/// with the manual's sizes.
pub fn assert_fresh_client_served(addr: SocketAddr) {
    let mut c = Client::connect(addr);
    let pairs = [(b'p', b'r'), (b's', b'r'), (b'l', b'r')];
    c.send_request(&pairs);
    let reply = c.read_reply();
    assert_eq!(reply, pairs_bytes(&pairs), "fresh client's reply");
    for _ in 0..2 {
        let round = c.read_round(3);
        let got: Vec<(u8, usize)> = round.iter().map(|(d, p)| (*d, p.len())).collect();
        assert_eq!(got, vec![(b'p', 21), (b's', 32), (b'l', 722)]);
    }
}

/// Sleeps until `t`.
pub fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// Counts complete rounds of `per_round` messages read during `d` after the first round,
/// returning (rounds, seconds).
pub fn count_rounds(c: &mut Client, per_round: usize, d: Duration) -> (usize, f64) {
    c.read_round(per_round);
    let t0 = Instant::now();
    let mut n = 0;
    while t0.elapsed() < d {
        c.read_round(per_round);
        n += 1;
    }
    (n, t0.elapsed().as_secs_f64())
}

/// Asserts a measured rate is within 20 % of `hz`.
pub fn assert_rate(n: usize, secs: f64, hz: f64, what: &str) {
    let rate = n as f64 / secs;
    assert!(
        rate >= 0.8 * hz && rate <= 1.2 * hz,
        "{what}: {n} rounds in {secs:.2} s = {rate:.1}/s, expected about {hz}/s"
    );
}
