//! Random clients of the Player protocol (issue 8, fuzzing; issue 34, the log under a
//! client flood): a seeded generator and a client that connects, sends a random number of
//! messages and leaves (closing, resetting, or closing in the middle of a message), then
//! connects again, until its time is up. Its messages are mostly validly framed ones with
//! random contents: device requests with random devices and access codes, commands to every
//! device (of the size the device takes, or not), configs to every device (the server's
//! own `y` codes and the position device's with plausible arguments, or random codes),
//! messages of unknown types, and messages over the server's size bound; now and then it
//! sends raw random bytes with no framing at all. A thread per connection reads whatever
//! the server sends.

use crate::TIMEOUT;
use player_proto::message;
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A small seeded generator (SplitMix64): the same seed gives the same messages.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A random byte.
    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    /// One of `from`.
    pub fn pick(&mut self, from: &[u8]) -> u8 {
        from[self.below(from.len())]
    }

    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

/// The server's devices, its own `y`, and now and then any byte.
fn device(rng: &mut Rng) -> u8 {
    if rng.below(10) == 0 {
        rng.byte()
    } else {
        rng.pick(b"lspgmvzy")
    }
}

/// A payload size: usually small, sometimes near or over the server's bound.
fn size(rng: &mut Rng) -> usize {
    match rng.below(20) {
        0 => 4000 + rng.below(1000),
        1..=3 => rng.below(300),
        _ => rng.below(12),
    }
}

fn framed(kind: u8, second: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![kind, second];
    v.extend((payload.len() as u16).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// One validly framed message with random contents.
/// One random message (see the module's documentation).
pub fn random_message(rng: &mut Rng) -> Vec<u8> {
    match rng.below(20) {
        // Device requests.
        0..=4 => {
            let pairs: Vec<(u8, u8)> = (0..1 + rng.below(8))
                .map(|_| {
                    let access = if rng.below(10) == 0 {
                        rng.byte()
                    } else {
                        rng.pick(b"rwacrrwe")
                    };
                    (device(rng), access)
                })
                .collect();
            let mut m = message::request(&pairs);
            if rng.below(10) == 0 {
                m[1] = rng.byte(); // 0.7.4a does not check the `r`
            }
            m
        }
        // Commands: of the device's size, or any size.
        5..=10 => {
            let d = device(rng);
            let n = match (d, rng.below(3)) {
                (b'p', 0 | 1) => 4,
                (b'z', 0 | 1) => 6,
                (b'g', 0 | 1) => 2,
                _ => size(rng),
            };
            message::command(d, &rng.bytes(n))
        }
        // Configs: known codes with plausible arguments, or random ones.
        11..=16 => {
            let d = device(rng);
            let (code, n) = match (d, rng.below(4)) {
                (b'y', 0..=2) => {
                    let code = rng.pick(b"frdteEkl");
                    let n = match code {
                        b'f' => 2,
                        b'd' | b'l' => 0,
                        b'k' => rng.below(70),
                        _ => 1,
                    };
                    (code, n)
                }
                (b'p', 0..=2) => {
                    let code = rng.pick(b"mvR");
                    (code, usize::from(code != b'R'))
                }
                _ => (rng.byte(), size(rng)),
            };
            let mut args = rng.bytes(n);
            if d == b'y' && code == b'f' {
                // Mostly sane frequencies, so the server also streams at high rates.
                let hz = match rng.below(4) {
                    0 => rng.next_u64() as u16,
                    _ => 1 + rng.below(200) as u16,
                };
                args = hz.to_be_bytes().to_vec();
            }
            if d == b'y' && code == b'E' {
                args = vec![rng.byte() & 1];
            }
            if rng.below(30) == 0 {
                // A config with no code at all.
                return framed(b'x', d, &[]);
            }
            message::config(d, code, &args)
        }
        // Unknown message types.
        17 | 18 => {
            let kind = loop {
                let k = rng.byte();
                if !matches!(k, b'd' | b'c' | b'x') {
                    break k;
                }
            };
            let n = size(rng);
            framed(kind, rng.byte(), &rng.bytes(n))
        }
        // A known type over the server's bound.
        _ => {
            let kind = rng.pick(b"dcx");
            let n = 4097 + rng.below(3000);
            framed(kind, device(rng), &rng.bytes(n))
        }
    }
}

/// Reads and discards what the server sends until the connection ends.
fn drain(mut s: TcpStream, received: Arc<AtomicUsize>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            received.fetch_add(n, Ordering::Relaxed);
        }
    })
}

/// What one random client did.
#[derive(Debug, Default)]
pub struct Tally {
    /// Connections made.
    pub connections: usize,
    /// Framed messages sent.
    pub framed: usize,
    /// Runs of raw bytes sent without framing.
    pub unframed: usize,
    /// Connections refused.
    pub refused: usize,
}

/// Connects to `addr` again and again until `until`, sending random messages seeded by
/// `seed`; with `from`, every connection comes from that local address (any of 127.0.0.0/8
/// on loopback), so that several random clients are several hosts to the server. Counts
/// what it sent in its [`Tally`] and the bytes the server sent back in `received`.
pub fn random_client(
    addr: SocketAddr,
    from: Option<IpAddr>,
    seed: u64,
    until: Instant,
    received: Arc<AtomicUsize>,
) -> Tally {
    let mut rng = Rng(seed);
    let mut t = Tally::default();
    let mut readers = Vec::new();
    while Instant::now() < until {
        let s = match connect_from(addr, from) {
            Ok(s) => s,
            Err(_) => {
                t.refused += 1;
                // Before connecting again.
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        t.connections += 1;
        s.set_nodelay(true).unwrap();
        s.set_write_timeout(Some(TIMEOUT)).unwrap();
        readers.push(drain(s.try_clone().unwrap(), received.clone()));
        let mut s = s;
        let messages = 1 + rng.below(150);
        let mut alive = true;
        for _ in 0..messages {
            if Instant::now() >= until {
                break;
            }
            let bytes = if rng.below(25) == 0 {
                t.unframed += 1;
                let n = 1 + rng.below(2000);
                rng.bytes(n)
            } else {
                t.framed += 1;
                random_message(&mut rng)
            };
            if s.write_all(&bytes).is_err() {
                // The server closed this one (a refused key, say): connect again.
                alive = false;
                break;
            }
            if rng.below(8) == 0 {
                // The random client's pace.
                std::thread::sleep(Duration::from_millis(rng.below(20) as u64));
            }
        }
        if alive {
            match rng.below(4) {
                0 => {
                    // Reset instead of an orderly close.
                    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
                }
                1 => {
                    // Close in the middle of a message.
                    let m = random_message(&mut rng);
                    let cut = 1 + rng.below(m.len() - 1);
                    let _ = s.write_all(&m[..cut]);
                }
                _ => {}
            }
        }
        let _ = s.shutdown(Shutdown::Both);
        drop(s);
        readers.retain(|h: &JoinHandle<()>| !h.is_finished());
    }
    for h in readers {
        let _ = h.join();
    }
    t
}

/// A connection to `addr`, from the local address `from` if given.
fn connect_from(addr: SocketAddr, from: Option<IpAddr>) -> std::io::Result<TcpStream> {
    let Some(ip) = from else {
        return TcpStream::connect_timeout(&addr, TIMEOUT);
    };
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        None,
    )?;
    s.bind(&SocketAddr::new(ip, 0).into())?;
    s.connect_timeout(&addr.into(), TIMEOUT)?;
    Ok(s.into())
}
