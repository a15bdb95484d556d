//! The streamer: a client on a thread of its own that reads continuously and records when
//! each round arrived, to measure rates.

use crate::client::{is_timeout, pairs_bytes, Client, Packet};
use crate::wait::TIMEOUT;
use player_proto::message::{self, ServerMessage};
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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
