//! An emulated ACTS server on loopback TCP: it accepts connections (one at a time, as
//! ACTS), answers each `'0'` with one blob packet of what the robot's camera sees in the
//! [`EmuWorld`], paced at the camera's frame rate, and closes on `'1'` (docs/reference/acts.md
//! §6). Faults for tests: never answering, a short header, closing in the middle of a packet, a
//! zero count byte.

use crate::EmuWorld;
use player_devices::acts as codec;
use player_proto::data::{Blob, Vision, ACTS_CHANNELS};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Faults to inject.
#[derive(Debug, Clone, Default)]
pub struct ActsFaults {
    /// Read requests, answer nothing.
    pub silent: bool,
    /// Send only part of the header, then close, this many times.
    pub short_header: u32,
    /// Send the header and part of the blobs, then close, this many times.
    pub close_mid_packet: u32,
    /// Send a header with a count byte of 0 this many times.
    pub zero_count: u32,
}

/// Counters.
#[derive(Debug, Clone, Default)]
pub struct ActsStats {
    /// Connections accepted.
    pub connections: u64,
    /// `'0'` requests.
    pub requests: u64,
    /// `'1'` quits.
    pub quits: u64,
    /// Packets sent.
    pub packets: u64,
    /// When the last packet went out.
    pub last_packet: Option<Instant>,
}

struct Shared {
    world: EmuWorld,
    faults: Mutex<ActsFaults>,
    stats: Mutex<ActsStats>,
    stop: AtomicBool,
    frame: Duration,
}

/// A running ACTS emulator. Dropping it stops it.
pub struct ActsEmulator {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The blob packet for what the camera sees.
pub fn packet(blobs: &[player_sim::Blob]) -> Vec<u8> {
    let mut channels = vec![Vec::new(); ACTS_CHANNELS];
    for b in blobs {
        if let Some(c) = channels.get_mut(usize::from(b.channel)) {
            c.push(Blob {
                area: b.area,
                x: b.x,
                y: b.y,
                left: b.left,
                right: b.right,
                top: b.top,
                bottom: b.bottom,
            });
        }
    }
    Vision { channels }.encode()
}

impl ActsEmulator {
    /// Listens on 127.0.0.1:`port` (0 for any free port), answering at 30 frames/s.
    pub fn start(world: EmuWorld, port: u16) -> std::io::Result<ActsEmulator> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            world,
            faults: Mutex::new(ActsFaults::default()),
            stats: Mutex::new(ActsStats::default()),
            stop: AtomicBool::new(false),
            frame: Duration::from_secs_f64(1.0 / 30.0),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("acts-emulator".into())
            .spawn(move || serve(listener, s))?;
        Ok(ActsEmulator {
            addr,
            shared,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Runs `f` on the fault settings.
    pub fn faults<R>(&self, f: impl FnOnce(&mut ActsFaults) -> R) -> R {
        f(&mut lock(&self.shared.faults))
    }

    /// The counters.
    pub fn stats(&self) -> ActsStats {
        lock(&self.shared.stats).clone()
    }
}

impl Drop for ActsEmulator {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: TcpListener, shared: Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                lock(&shared.stats).connections += 1;
                connection(stream, &shared);
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn connection(mut s: TcpStream, shared: &Shared) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let mut next_frame = Instant::now();
    let mut buf = [0u8; 64];
    while !shared.stop.load(Ordering::SeqCst) {
        let n = match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        };
        for &b in &buf[..n] {
            match b {
                codec::QUIT => {
                    lock(&shared.stats).quits += 1;
                    return;
                }
                codec::REQUEST => {
                    lock(&shared.stats).requests += 1;
                    let faults = lock(&shared.faults).clone();
                    if faults.silent {
                        continue;
                    }
                    // Answer with the next frame.
                    let now = Instant::now();
                    if next_frame > now {
                        std::thread::sleep(next_frame - now);
                    }
                    next_frame = Instant::now().max(next_frame) + shared.frame;
                    let mut p = packet(&shared.world.with(|r| r.vision()));
                    let mut f = lock(&shared.faults);
                    if f.short_header > 0 {
                        f.short_header -= 1;
                        drop(f);
                        let _ = s.write_all(&p[..30]);
                        return;
                    }
                    if f.close_mid_packet > 0 && p.len() > 64 {
                        f.close_mid_packet -= 1;
                        drop(f);
                        let _ = s.write_all(&p[..p.len() - 5]);
                        return;
                    }
                    if f.zero_count > 0 {
                        f.zero_count -= 1;
                        p[1] = 0;
                    }
                    drop(f);
                    if s.write_all(&p).is_err() {
                        return;
                    }
                    let mut st = lock(&shared.stats);
                    st.packets += 1;
                    st.last_packet = Some(Instant::now());
                }
                _ => {}
            }
        }
    }
}
