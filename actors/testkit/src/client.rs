//! The raw client: a byte-level Player client over `std::net::TcpStream` that fails the
//! test on anything unexpected, and the checks built on it.

use crate::wait::TIMEOUT;
use player_proto::data::Position;
use player_proto::message;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// One data packet or reply: the first byte and the payload.
pub type Packet = (u8, Vec<u8>);

/// A byte-level Player client. Every read fails the test after [`TIMEOUT`].
pub struct Client {
    /// The connection (for tests that write or read bytes of their own).
    pub stream: TcpStream,
    /// The position command this client holds (sent again with each position reading).
    held: Option<Vec<u8>>,
}

/// Whether a read failed because its timeout passed.
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl Client {
    /// A push-new client (data mode 2 at 1000 Hz) reading all seven devices of the
    /// simulated robot (`p s l m g z v`) as they come; panics if one is refused.
    pub fn push_all(addr: SocketAddr) -> Client {
        let mut c = Client::connect(addr);
        c.frequency(1000);
        c.data_mode(2);
        let reply = c.request(&[
            (b'p', b'r'),
            (b's', b'r'),
            (b'l', b'r'),
            (b'm', b'r'),
            (b'g', b'r'),
            (b'z', b'r'),
            (b'v', b'r'),
        ]);
        assert!(!reply.contains(&b'e'), "a device was refused: {reply:?}");
        c
    }

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

    /// Reads messages until a notice (`y`) of `kind` arrives; returns its device and text.
    /// Other packets (data, other notices) are skipped; a held command is sent again with
    /// every position reading, as a live controller would. Fails after `within`.
    pub fn wait_notice(&mut self, kind: u8, within: Duration) -> (u8, String) {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no notice of kind '{}' within {within:?}",
                char::from(kind)
            );
            let Some((code, payload)) = self.read_message_within(left) else {
                continue;
            };
            if code == b'p' {
                self.resend_held();
            }
            if code == b'y' && payload.first() == Some(&kind) {
                let text = String::from_utf8_lossy(&payload[2..]).into_owned();
                return (payload[1], text);
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
