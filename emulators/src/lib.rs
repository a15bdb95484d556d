//! Device emulators: stand-ins for the Pioneer base, the SICK laser, the Sony camera and the
//! ACTS server that speak the real byte protocols, so the real drivers can be run and
//! tested without hardware.
//!
//! The serial devices sit behind a pseudo-terminal ([`pty`]): the driver opens the slave
//! path as if it were `/dev/ttyS0`. [`SerialEmulator`] runs one device on its own thread:
//! it feeds the device the bytes the driver writes, lets it speak on its own schedule,
//! checks that the driver's line speed matches the device's (a mismatch garbles both
//! directions, as on a real line), and applies the faults a test asks for through
//! [`Faults`]: silence, corrupted frames, junk between frames, truncated frames, unplugging
//! and plugging back in. The emulated devices read the world from one shared simulated robot
//! ([`EmuWorld`]), so the emulated Pioneer moves in the room and the emulated laser sees it.
//! The `player-emulate` program (`src/bin/player-emulate.rs` of the `player` package) runs
//! them from the command line.
//!
//! The devices are in [`p2os`], [`sick`], [`ptz`], [`acts`], [`create`] and [`urg`] (a Hokuyo, on a
//! pty or, through [`TcpEmulator`], a TCP port); the room the newer lasers and bases see in
//! [`scene`]; pseudo-terminals in [`pty`].
#![deny(missing_docs)]

pub mod acts;
pub mod create;
pub mod p2os;
pub mod pty;
pub mod ptz;
pub mod rplidar;
pub mod scene;
pub mod sick;
pub mod urg;

use player_sim::{RobotParams, SimRobot, WorldMap};
use pty::{Pty, Ready};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The physics step of the shared world, seconds.
const STEP: f64 = 0.01;

struct WorldState {
    robot: SimRobot,
    last: Instant,
    pending: f64,
}

/// One simulated robot in a world, shared by the emulators (cheap to clone). Every access
/// first advances the physics to the present in fixed steps.
#[derive(Clone)]
pub struct EmuWorld(Arc<Mutex<WorldState>>);

impl EmuWorld {
    /// A robot in `map`, motors off (as a real P2OS starts).
    pub fn new(map: WorldMap) -> EmuWorld {
        let params = RobotParams {
            motors_on_at_start: false,
            ..RobotParams::default()
        };
        EmuWorld(Arc::new(Mutex::new(WorldState {
            robot: SimRobot::new(Arc::new(map), params),
            last: Instant::now(),
            pending: 0.0,
        })))
    }

    /// A robot in the built-in room.
    pub fn room() -> EmuWorld {
        EmuWorld::new(WorldMap::default_room())
    }

    /// Runs `f` on the robot, advanced to now.
    pub fn with<R>(&self, f: impl FnOnce(&mut SimRobot) -> R) -> R {
        let mut w = lock(&self.0);
        let now = Instant::now();
        w.pending = (w.pending + now.duration_since(w.last).as_secs_f64()).min(1.0);
        w.last = now;
        while w.pending >= STEP {
            w.robot.step(STEP);
            w.pending -= STEP;
        }
        f(&mut w.robot)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A device behind a serial line, driven by [`SerialEmulator`].
pub trait SerialDevice: Send + 'static {
    /// The line speed the device talks at now.
    fn baud(&self) -> u32;
    /// Bytes from the driver (at the right speed); frames to send back go to `out`.
    fn receive(&mut self, bytes: &[u8], now: Instant, out: &mut Vec<Vec<u8>>);
    /// Called about every 5 ms; frames the device sends on its own go to `out`.
    fn tick(&mut self, now: Instant, out: &mut Vec<Vec<u8>>);
}

/// Faults a test (or the command line) can inject into a serial emulator.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// The device ignores the line and sends nothing (a hung or powered-off device).
    pub silent: bool,
    /// Flip a bit in the last byte (checksum or CRC) of this many coming frames.
    pub corrupt: u32,
    /// Put junk bytes before this many coming frames.
    pub junk: u32,
    /// Cut this many coming frames short (the rest of the frame is lost).
    pub truncate: u32,
}

/// Counters of a serial emulator's line.
#[derive(Debug, Clone, Default)]
pub struct LineStats {
    /// Frames written to the line.
    pub frames: u64,
    /// Frames corrupted, given junk or cut short on purpose.
    pub faulted: u64,
    /// Bytes from the driver thrown away because the speeds differed or the device was
    /// silent.
    pub garbled_in: u64,
    /// Frames sent garbled because the speeds differed.
    pub garbled_out: u64,
    /// Whether the driver has the port open now.
    pub port_open: bool,
    /// How many times the driver opened the port.
    pub opens: u64,
    /// When the last frame finished going out.
    pub last_frame: Option<Instant>,
}

struct Shared<D> {
    device: Mutex<D>,
    faults: Mutex<Faults>,
    stats: Mutex<LineStats>,
    path: Mutex<PathBuf>,
    link: Option<PathBuf>,
    unplugged: AtomicBool,
    stop: AtomicBool,
}

/// A serial device emulator running on its own thread behind a pty. Dropping it stops it
/// (and removes the symlink, if it made one).
pub struct SerialEmulator<D: SerialDevice> {
    shared: Arc<Shared<D>>,
    thread: Option<JoinHandle<()>>,
}

impl<D: SerialDevice> SerialEmulator<D> {
    /// Starts `device` behind a new pty. With `link`, also makes a symlink at that path to
    /// the slave, kept pointing at the current slave across unplug/replug.
    pub fn start(device: D, link: Option<&Path>) -> std::io::Result<SerialEmulator<D>> {
        let pty = Pty::open()?;
        if let Some(l) = link {
            pty::relink(l, pty.slave_path())?;
        }
        let shared = Arc::new(Shared {
            device: Mutex::new(device),
            faults: Mutex::new(Faults::default()),
            stats: Mutex::new(LineStats::default()),
            path: Mutex::new(pty.slave_path().to_path_buf()),
            link: link.map(Path::to_path_buf),
            unplugged: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("serial-emulator".into())
            .spawn(move || run(s, pty))?;
        Ok(SerialEmulator {
            shared,
            thread: Some(thread),
        })
    }

    /// The path a driver should open: the symlink if there is one, else the slave.
    pub fn path(&self) -> PathBuf {
        self.shared
            .link
            .clone()
            .unwrap_or_else(|| lock(&self.shared.path).clone())
    }

    /// The current slave path (`/dev/pts/N`).
    pub fn slave_path(&self) -> PathBuf {
        lock(&self.shared.path).clone()
    }

    /// Runs `f` on the emulated device (to read its state or change it).
    pub fn device<R>(&self, f: impl FnOnce(&mut D) -> R) -> R {
        f(&mut lock(&self.shared.device))
    }

    /// Runs `f` on the fault settings.
    pub fn faults<R>(&self, f: impl FnOnce(&mut Faults) -> R) -> R {
        f(&mut lock(&self.shared.faults))
    }

    /// The line counters.
    pub fn stats(&self) -> LineStats {
        lock(&self.shared.stats).clone()
    }

    /// Pulls the cable: the pty closes, the driver's port fails and the slave path
    /// vanishes. The device keeps its state (it stays powered).
    pub fn unplug(&self) {
        self.shared.unplugged.store(true, Ordering::SeqCst);
    }

    /// Plugs the cable back in: a new pty, the symlink pointed at it.
    pub fn replug(&self) {
        self.shared.unplugged.store(false, Ordering::SeqCst);
    }

    /// Stops the emulator thread.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(l) = &self.shared.link {
            let _ = std::fs::remove_file(l);
        }
    }
}

impl<D: SerialDevice> Drop for SerialEmulator<D> {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Whether the driver's line speed (if known) is the device's.
fn speeds_match(line: Option<u32>, device: u32) -> bool {
    match line {
        Some(b) => b == device,
        None => true,
    }
}

/// What a line at the wrong speed makes of a frame: fewer bytes, none of them right.
fn garble(frame: &[u8]) -> Vec<u8> {
    frame
        .iter()
        .step_by(3)
        .map(|b| (b ^ 0x5A).rotate_left(3) | 0x80)
        .collect()
}

fn run<D: SerialDevice>(shared: Arc<Shared<D>>, pty: Pty) {
    let mut pty = Some(pty);
    let mut buf = [0u8; 4096];
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut junk_seed: u8 = 0x3C;
    // A new pty reports no hang-up before its slave is first opened, so "open" is known
    // only from bytes arriving or from a hang-up ending.
    let mut seen_hangup = false;
    while !shared.stop.load(Ordering::SeqCst) {
        // Unplug and replug.
        if shared.unplugged.load(Ordering::SeqCst) {
            if pty.take().is_some() {
                lock(&shared.stats).port_open = false;
                seen_hangup = false;
            }
            std::thread::sleep(Duration::from_millis(5));
            // The device keeps running (and dropping its output) while unplugged.
            let mut d = lock(&shared.device);
            out.clear();
            d.tick(Instant::now(), &mut out);
            continue;
        }
        let p = match &pty {
            Some(p) => p,
            None => match Pty::open() {
                Ok(p) => {
                    if let Some(l) = &shared.link {
                        let _ = pty::relink(l, p.slave_path());
                    }
                    *lock(&shared.path) = p.slave_path().to_path_buf();
                    pty.insert(p)
                }
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            },
        };
        let ready = p.wait(Duration::from_millis(5));
        {
            let mut st = lock(&shared.stats);
            match ready {
                Ready::Hangup => {
                    st.port_open = false;
                    seen_hangup = true;
                }
                Ready::Data => {
                    if !st.port_open {
                        st.opens += 1;
                    }
                    st.port_open = true;
                }
                Ready::Timeout => {
                    // A hang-up that ended: someone opened the slave.
                    if !st.port_open && seen_hangup {
                        st.opens += 1;
                        st.port_open = true;
                    }
                }
            }
        }
        if ready == Ready::Hangup {
            // No one has the port open; the device runs on, its output goes nowhere.
            std::thread::sleep(Duration::from_millis(5));
        }
        let faults = lock(&shared.faults).clone();
        let mut d = lock(&shared.device);
        // Replies go out at the speed the device had when the request came (a speed
        // change takes effect after its reply); what it sends on its own, at the new one.
        let baud_before = d.baud();
        let matched = speeds_match(p.baud(), baud_before);
        out.clear();
        if ready == Ready::Data {
            let n = p.read(&mut buf).unwrap_or(0);
            if n > 0 {
                if faults.silent || !matched {
                    lock(&shared.stats).garbled_in += n as u64;
                } else {
                    d.receive(&buf[..n], Instant::now(), &mut out);
                }
            }
        }
        let replies = out.len();
        d.tick(Instant::now(), &mut out);
        let baud_after = d.baud();
        drop(d);
        if faults.silent {
            continue;
        }
        for (i, frame) in out.drain(..).enumerate() {
            let device_baud = if i < replies { baud_before } else { baud_after };
            let matched = speeds_match(p.baud(), device_baud);
            let mut bytes = frame;
            let mut f = lock(&shared.faults);
            let mut faulted = false;
            if f.corrupt > 0 && !bytes.is_empty() {
                f.corrupt -= 1;
                let last = bytes.len() - 1;
                bytes[last] ^= 0x01;
                faulted = true;
            }
            if f.truncate > 0 && bytes.len() > 2 {
                f.truncate -= 1;
                bytes.truncate(bytes.len() / 2);
                faulted = true;
            }
            if f.junk > 0 {
                f.junk -= 1;
                let mut j: Vec<u8> = (0..7)
                    .map(|_| {
                        junk_seed = junk_seed.wrapping_mul(73).wrapping_add(41);
                        junk_seed
                    })
                    .collect();
                j.extend_from_slice(&bytes);
                bytes = j;
                faulted = true;
            }
            drop(f);
            if !matched {
                bytes = garble(&bytes);
            }
            p.write(&bytes);
            let mut st = lock(&shared.stats);
            st.frames += 1;
            st.faulted += u64::from(faulted);
            st.garbled_out += u64::from(!matched);
            st.last_frame = Some(Instant::now());
        }
    }
}

/// A device behind a TCP port (an Ethernet sensor), driven like a [`SerialDevice`] (its
/// speed is ignored): one client at a time, on 127.0.0.1 and a port the kernel picks. The
/// faults of [`Faults`] apply (silence, corrupted last bytes, junk before frames).
/// Dropping it stops it.
pub struct TcpEmulator<D: SerialDevice> {
    shared: Arc<TcpShared<D>>,
    addr: std::net::SocketAddr,
    thread: Option<JoinHandle<()>>,
}

struct TcpShared<D> {
    device: Mutex<D>,
    faults: Mutex<Faults>,
    drop_client: AtomicBool,
    connections: Mutex<u64>,
    stop: AtomicBool,
}

impl<D: SerialDevice> TcpEmulator<D> {
    /// Starts `device` listening on 127.0.0.1, a port the kernel picks.
    pub fn start(device: D) -> std::io::Result<TcpEmulator<D>> {
        TcpEmulator::start_on(device, "127.0.0.1:0")
    }

    /// Starts `device` listening on `addr`.
    pub fn start_on(device: D, addr: &str) -> std::io::Result<TcpEmulator<D>> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(TcpShared {
            device: Mutex::new(device),
            faults: Mutex::new(Faults::default()),
            drop_client: AtomicBool::new(false),
            connections: Mutex::new(0),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("tcp-emulator".into())
            .spawn(move || run_tcp(s, listener))?;
        Ok(TcpEmulator {
            shared,
            addr,
            thread: Some(thread),
        })
    }

    /// The address a driver should connect to.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Runs `f` on the emulated device.
    pub fn device<R>(&self, f: impl FnOnce(&mut D) -> R) -> R {
        f(&mut lock(&self.shared.device))
    }

    /// Runs `f` on the fault settings.
    pub fn faults<R>(&self, f: impl FnOnce(&mut Faults) -> R) -> R {
        f(&mut lock(&self.shared.faults))
    }

    /// Closes the current client's connection (a sensor that restarts drops it).
    pub fn drop_client(&self) {
        self.shared.drop_client.store(true, Ordering::SeqCst);
    }

    /// How many connections it has accepted.
    pub fn connections(&self) -> u64 {
        *lock(&self.shared.connections)
    }
}

impl<D: SerialDevice> Drop for TcpEmulator<D> {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run_tcp<D: SerialDevice>(shared: Arc<TcpShared<D>>, listener: std::net::TcpListener) {
    use std::io::{Read, Write};
    let mut client: Option<std::net::TcpStream> = None;
    let mut buf = [0u8; 4096];
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut junk_seed: u8 = 0x5D;
    while !shared.stop.load(Ordering::SeqCst) {
        if shared.drop_client.swap(false, Ordering::SeqCst) {
            client = None;
        }
        if let Ok((s, _)) = listener.accept() {
            let _ = s.set_nonblocking(true);
            let _ = s.set_nodelay(true);
            *lock(&shared.connections) += 1;
            client = Some(s);
        }
        let faults = lock(&shared.faults).clone();
        out.clear();
        let mut d = lock(&shared.device);
        if let Some(c) = client.as_mut() {
            match c.read(&mut buf) {
                Ok(0) => client = None,
                Ok(n) if !faults.silent => d.receive(&buf[..n], Instant::now(), &mut out),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => client = None,
            }
        }
        d.tick(Instant::now(), &mut out);
        drop(d);
        if let (Some(c), false) = (client.as_mut(), faults.silent) {
            for frame in out.drain(..) {
                let mut bytes = frame;
                let mut f = lock(&shared.faults);
                if f.corrupt > 0 && !bytes.is_empty() {
                    f.corrupt -= 1;
                    let last = bytes.len() - 1;
                    bytes[last] ^= 0x01;
                }
                if f.junk > 0 {
                    f.junk -= 1;
                    let mut j: Vec<u8> = (0..7)
                        .map(|_| {
                            junk_seed = junk_seed.wrapping_mul(73).wrapping_add(41);
                            junk_seed
                        })
                        .collect();
                    j.extend_from_slice(&bytes);
                    bytes = j;
                }
                drop(f);
                let _ = c.set_nonblocking(false);
                let _ = c.set_write_timeout(Some(Duration::from_millis(200)));
                let ok = c.write_all(&bytes).is_ok();
                let _ = c.set_nonblocking(true);
                if !ok {
                    client = None;
                    break;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(3));
    }
}
