//! `player-cli`: a command-line tool for a Player server, built on `player-client`.
//!
//! ```text
//! player-cli [-h HOST[:PORT]] [-k KEY] list
//! player-cli [-h HOST[:PORT]] [-k KEY] print DEVICE [-n ROUNDS] [-f HZ]
//! player-cli [-h HOST[:PORT]] [-k KEY] joy [-s MM_PER_S] [-t DEG_PER_S]
//! player-cli [-h HOST[:PORT]] [-k KEY] estop on|off
//! player-cli [-h HOST[:PORT]] [-k KEY] goto X Y [A] [-t SECONDS]
//! player-cli [-h HOST[:PORT]] [-k KEY] cancel
//! player-cli [-h HOST[:PORT]] [-k KEY] localize X Y [A] [-s MM] [-r DEG] | localize global
//! ```
//!
//! - `list`: the robot's devices (the device-list extension): code, name, driver, the
//!   access each allows, state, readers, writers, data size and publish rate.
//! - `print`: one device's readings decoded, every field, one block per round (like the
//!   0.7.4a `playerprint`). Notices of the error channel go to standard error. The
//!   navigation devices too: `print map` (and the map's cells counted, downloaded tile by
//!   tile whenever the map changes), `print localize` (the hypotheses), `print planner`,
//!   `print odometry` (`O`), `print P` (the precise odometry).
//! - `joy`: drives the base from the keyboard (like `playerjoy`). The arrow keys (or
//!   w a s d) move while held: commands go out at 10 Hz while a key is down (its repeats
//!   keep arriving), and a zero command as soon as no repeat came for 0.3 s (the first
//!   repeat of a held key may take up to 0.7 s), on space, and on exit (q, Esc, Ctrl-C,
//!   SIGTERM, SIGHUP). `+` and `-` change the speed.
//! - `estop on|off`: latches or releases the robot's emergency stop.
//! - `goto`, `cancel`, `localize`: the planner and the localizer (`nav.rs`).
//!
//! The server defaults to `localhost:6665`; `-k` presents the server's shared key first.
//! Exit status: 0 on success, 1 when the server failed or refused, 2 on a usage error.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod nav;

use player_client::proto::ext::kind;
use player_client::{device, with_default_port, Client, DeviceEntry, Error, Round};

const USAGE: &str = "usage: player-cli [-h HOST[:PORT]] [-k KEY] COMMAND
commands:
  list                                  the robot's devices, their drivers, state and rates
  print DEVICE [-n ROUNDS] [-f HZ]      a device's readings decoded (DEVICE: p s l m g z v,
                                        L M H G O P, or a name such as laser, map, localize,
                                        planner); ROUNDS 0 (default) = for ever
  joy [-s MM_PER_S] [-t DEG_PER_S]      drive with the arrow keys; q, Esc or Ctrl-C quits
  estop on|off                          latch or release the emergency stop
  goto X Y [A] [-t SECONDS]             send the planner a goal (mm, mm, degrees) and follow
                                        it until reached (exit 0) or not; Ctrl-C cancels it
  cancel                                cancel the planner's goal (the robot stops)
  localize X Y [A] [-s MM] [-r DEG]     set the localizer's pose estimate (sd 500 mm, 15°)
  localize global                       spread the localizer's particles over the map";

/// How long a request, the device list or a round may take before the tool gives up.
const PATIENCE: Duration = Duration::from_secs(15);

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Options {
    addr: String,
    key: Option<String>,
    command: Command,
}

/// The subcommands.
#[derive(Debug, PartialEq)]
enum Command {
    List,
    Print {
        device: u8,
        rounds: u64,
        hz: u16,
    },
    Joy {
        speed: i16,
        turn: i16,
    },
    Estop {
        latch: bool,
    },
    Goto {
        goal: [i32; 3],
        timeout: Option<Duration>,
    },
    Cancel,
    /// A pose (mm, mm, degrees) and its standard deviations (mm, degrees); `None`: global.
    Localize {
        pose: Option<([i32; 3], [f64; 2])>,
    },
}

/// The devices `print` knows by name, beyond the manual's seven.
const NAMED: [u8; 6] = [
    device::FULL_SCAN,
    device::MAP,
    device::LOCALIZE,
    device::PLANNER,
    device::ODOMETRY,
    device::PRECISE_ODOMETRY,
];

fn device_code(s: &str) -> Option<u8> {
    if let [c] = s.as_bytes() {
        return Some(*c).filter(|c| c.is_ascii_graphic());
    }
    device::ALL
        .into_iter()
        .chain(NAMED)
        .find(|&d| device::name(d).eq_ignore_ascii_case(s))
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut addr = String::new();
    let mut key = None;
    let mut rest = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--host" => addr = it.next().ok_or("-h needs HOST[:PORT]")?.clone(),
            "-k" | "--key" => key = Some(it.next().ok_or("-k needs a key")?.clone()),
            "--help" => return Err(String::new()),
            _ => rest.push(a.as_str()),
        }
    }
    let number = |flag: &str, v: Option<&&str>| -> Result<u64, String> {
        v.and_then(|v| v.parse::<u64>().ok())
            .ok_or(format!("{flag} needs a number"))
    };
    let command = match rest.as_slice() {
        ["list"] => Command::List,
        ["print", dev, opts @ ..] => {
            let device = device_code(dev).ok_or(format!("unknown device '{dev}'"))?;
            let (mut rounds, mut hz) = (0, 10);
            let mut o = opts.iter();
            while let Some(flag) = o.next() {
                match *flag {
                    "-n" => rounds = number("-n", o.next())?,
                    "-f" => {
                        hz = u16::try_from(number("-f", o.next())?)
                            .ok()
                            .filter(|&h| h > 0)
                            .ok_or("-f needs a frequency of 1 to 65535 Hz")?
                    }
                    other => return Err(format!("unknown option '{other}' for print")),
                }
            }
            Command::Print { device, rounds, hz }
        }
        ["joy", opts @ ..] => {
            let (mut speed, mut turn) = (200, 40);
            let mut o = opts.iter();
            while let Some(flag) = o.next() {
                let v = i16::try_from(number(flag, o.next())?)
                    .map_err(|_| format!("{flag} is at most {}", i16::MAX))?;
                match *flag {
                    "-s" => speed = v,
                    "-t" => turn = v,
                    other => return Err(format!("unknown option '{other}' for joy")),
                }
            }
            Command::Joy { speed, turn }
        }
        ["estop", "on"] => Command::Estop { latch: true },
        ["estop", "off"] => Command::Estop { latch: false },
        ["goto", x, y, opts @ ..] => {
            let (heading, opts) = heading_of(opts)?;
            let mut timeout = None;
            let mut o = opts.iter();
            while let Some(flag) = o.next() {
                match *flag {
                    "-t" => timeout = Some(Duration::from_secs(number("-t", o.next())?)),
                    other => return Err(format!("unknown option '{other}' for goto")),
                }
            }
            Command::Goto {
                goal: [millimetres(x)?, millimetres(y)?, heading],
                timeout,
            }
        }
        ["cancel"] => Command::Cancel,
        ["localize", "global"] => Command::Localize { pose: None },
        ["localize", x, y, opts @ ..] => {
            let (heading, opts) = heading_of(opts)?;
            let mut sd = [500.0, 15.0];
            let mut o = opts.iter();
            while let Some(flag) = o.next() {
                let v = o
                    .next()
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| v.is_finite() && *v > 0.0)
                    .ok_or(format!("{flag} needs a positive number"))?;
                match *flag {
                    "-s" => sd[0] = v,
                    "-r" => sd[1] = v,
                    other => return Err(format!("unknown option '{other}' for localize")),
                }
            }
            Command::Localize {
                pose: Some(([millimetres(x)?, millimetres(y)?, heading], sd)),
            }
        }
        [] => return Err("no command given".into()),
        other => return Err(format!("cannot understand '{}'", other.join(" "))),
    };
    Ok(Options {
        addr: with_default_port(&addr),
        key,
        command,
    })
}

/// A coordinate in millimetres.
fn millimetres(s: &str) -> Result<i32, String> {
    s.parse()
        .map_err(|_| format!("'{s}' is not a whole number of millimetres"))
}

/// The optional heading (whole degrees, -360 to 360) first among `opts`, and the rest.
fn heading_of<'a>(opts: &'a [&'a str]) -> Result<(i32, &'a [&'a str]), String> {
    match opts.split_first() {
        Some((a, rest)) if !a.starts_with('-') || a.parse::<i32>().is_ok() => {
            let h = a
                .parse::<i32>()
                .ok()
                .filter(|h| h.abs() <= 360)
                .ok_or(format!("'{a}' is not a heading in whole degrees"))?;
            Ok((h, rest))
        }
        _ => Ok((0, opts)),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(why) => {
            if why.is_empty() {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            eprintln!("player-cli: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("player-cli: {}: {e}", o.addr);
            ExitCode::FAILURE
        }
    }
}

/// The notices of the error channel that came, on standard error.
fn print_notices(c: &mut Client) {
    for notice in c.take_notices() {
        eprintln!("notice: {notice}");
    }
}

fn connect(o: &Options) -> Result<Client, Error> {
    let mut c = Client::connect_timeout(&o.addr, PATIENCE)?;
    c.set_read_timeout(Some(PATIENCE))?;
    c.set_write_timeout(Some(PATIENCE))?;
    if let Some(k) = &o.key {
        c.present_key(k.as_bytes())?;
    }
    Ok(c)
}

fn run(o: &Options) -> Result<ExitCode, Error> {
    let mut c = connect(o)?;
    match o.command {
        Command::List => list(&mut c),
        Command::Print { device, rounds, hz } => print(&mut c, device, rounds, hz),
        Command::Joy { speed, turn } => joy(c, speed, turn),
        Command::Estop { latch } => estop(&mut c, latch),
        Command::Goto { goal, timeout } => return nav::goto(&mut c, goal, timeout),
        Command::Cancel => return nav::cancel(&mut c),
        Command::Localize { pose } => return nav::localize(&mut c, pose),
    }
    .map(|()| ExitCode::SUCCESS)
}

// ----- list ----------------------------------------------------------------------------

fn list(c: &mut Client) -> Result<(), Error> {
    let devices = match c.device_list() {
        Err(Error::Timeout) => {
            eprintln!(
                "player-cli: no device list within {} s: does the server have the \
                 device-list extension?",
                PATIENCE.as_secs()
            );
            return Err(Error::Timeout);
        }
        r => r?,
    };
    print!("{}", device_table(&devices));
    Ok(())
}

fn device_table(devices: &[DeviceEntry]) -> String {
    // The name and driver columns as wide as their longest entry ("precise odometry").
    let width = |f: &dyn Fn(&DeviceEntry) -> usize, least: usize| {
        devices.iter().map(f).max().unwrap_or(0).max(least)
    };
    let nw = width(&|d| device::name(d.code).len(), 9);
    let dw = width(&|d| d.driver.chars().count(), 12);
    let mut out = format!(
        "{:<4} {:<nw$} {:<dw$} {:<6} {:<12} {:>7} {:>7} {:>6} {:>8}\n",
        "code", "name", "driver", "access", "state", "readers", "writers", "size", "rate Hz"
    );
    for d in devices {
        let access = match d.access {
            b'r' => "read",
            b'w' => "write",
            b'a' => "all",
            _ => "?",
        };
        let code = if d.code.is_ascii_graphic() {
            char::from(d.code).to_string()
        } else {
            format!("0x{:02x}", d.code)
        };
        out.push_str(&format!(
            "{:<4} {:<nw$} {:<dw$} {:<6} {:<12} {:>7} {:>7} {:>6} {:>8.1}\n",
            code,
            device::name(d.code),
            d.driver,
            access,
            d.state_name(),
            d.readers,
            d.writers,
            d.data_size,
            d.rate_hz()
        ));
    }
    out
}

// ----- print ---------------------------------------------------------------------------

/// The navigation devices' fields (`M`, `H`, `G`, `O`, `P`).
fn describe_nav(r: &Round, dev: u8, s: &mut String) {
    let deg = |arcsec: i32| f64::from(arcsec) / 3600.0;
    match dev {
        device::MAP => {
            if let Some(m) = &r.map {
                s.push_str(&format!(
                    "  map id {:08x}\n  {} x {} cells of {} mm\n  origin ({}, {}) mm, {:.4}°\n",
                    m.map_id,
                    m.width,
                    m.height,
                    f64::from(m.resolution) / 1000.0,
                    m.origin_x,
                    m.origin_y,
                    deg(m.origin_heading)
                ));
            }
        }
        device::LOCALIZE => {
            if let Some(l) = &r.localize {
                s.push_str(&format!(
                    "  pending {} (last at {}.{:06})\n  {} hypotheses\n",
                    l.pending_count,
                    l.pending_time_sec,
                    l.pending_time_usec,
                    l.hypotheses.len()
                ));
                for h in &l.hypotheses {
                    s.push_str(&format!("    {h}\n"));
                }
            }
        }
        device::PLANNER => {
            if let Some(p) = &r.planner {
                s.push_str(&format!(
                    "  state {}  valid {}  done {}\n  pose ({}, {}) mm {}°\n  goal ({}, {}) mm {}°\n  waypoint {} of {}: ({}, {}) mm {}°\n",
                    p.state.name(),
                    u8::from(p.valid),
                    u8::from(p.done),
                    p.pose[0],
                    p.pose[1],
                    p.pose[2],
                    p.goal[0],
                    p.goal[1],
                    p.goal[2],
                    p.curr_waypoint,
                    p.waypoint_count,
                    p.waypoint[0],
                    p.waypoint[1],
                    p.waypoint[2]
                ));
            }
        }
        device::ODOMETRY => {
            if let Some(p) = &r.odometry {
                s.push_str(&format!(
                    "  time {} ms\n  x {} mm  y {} mm  heading {}°\n  speed {} mm/s  turn rate {}°/s\n  compass {}°  stall {}\n",
                    p.time, p.x, p.y, p.heading, p.speed, p.turn_rate, p.compass, p.stall
                ));
            }
        }
        _ => {
            if let Some(o) = &r.precise {
                s.push_str(&format!(
                    "  time {} ms\n  x {} mm  y {} mm  heading {:.4}°\n  speed {} mm/s  turn rate {:.4}°/s  stall {}\n",
                    o.time,
                    o.x,
                    o.y,
                    deg(o.heading),
                    o.speed,
                    deg(o.turn_rate),
                    o.stall
                ));
            }
        }
    }
}

fn print(c: &mut Client, dev: u8, rounds: u64, hz: u16) -> Result<(), Error> {
    c.set_notices(true)?;
    c.set_frequency(hz)?;
    c.set_timestamps(true)?;
    c.request_pairs(&[(dev, b'r')])?.check()?;
    let mut n = 0;
    let mut out = std::io::stdout().lock();
    let mut cells_of = None;
    while rounds == 0 || n < rounds {
        let round = c.read()?;
        let mut text = describe(round, dev);
        // A map's cells: downloaded whenever the map changes, counted.
        if let Some(info) = round
            .map
            .filter(|m| dev == device::MAP && cells_of != Some(m.map_id))
        {
            let cells = c.download_map(&info)?;
            let count = |v: i8| cells.iter().filter(|&&x| x == v).count();
            text.push_str(&format!(
                "  cells: {} free, {} unknown, {} occupied\n",
                count(-1),
                count(0),
                count(1)
            ));
            cells_of = Some(info.map_id);
        }
        print_notices(c);
        if writeln!(out, "{text}").and_then(|_| out.flush()).is_err() {
            return Ok(()); // stdout closed (a pipe into head): done
        }
        n += 1;
    }
    Ok(())
}

/// Every field of `dev`'s latest reading, as a block of lines.
fn describe(r: &Round, dev: u8) -> String {
    let mut s = match r.timestamp(dev) {
        Some((sec, us)) => format!(
            "{} ({}) at {sec}.{us:06}\n",
            device::name(dev),
            char::from(dev)
        ),
        None => format!("{} ({})\n", device::name(dev), char::from(dev)),
    };
    let rows = |s: &mut String, values: &[u16], per_row: usize, what: &str| {
        for (i, row) in values.chunks(per_row).enumerate() {
            s.push_str(&format!("  {what} {:>3}:", i * per_row));
            for v in row {
                s.push_str(&format!(" {v:>5}"));
            }
            s.push('\n');
        }
    };
    match dev {
        device::POSITION => {
            if let Some(p) = &r.position {
                s.push_str(&format!(
                    "  time {} ms\n  x {} mm  y {} mm  heading {}°\n  speed {} mm/s  turn rate {}°/s\n  compass {}°  stall {}\n",
                    p.time, p.x, p.y, p.heading, p.speed, p.turn_rate, p.compass, p.stall
                ));
            }
        }
        device::SONAR => {
            if let Some(so) = &r.sonar {
                rows(&mut s, &so.ranges, 8, "sonar");
            }
        }
        device::LASER => {
            if let Some(l) = &r.laser {
                s.push_str("  361 ranges in mm, 0.5° apart, right (0) to left (360):\n");
                rows(&mut s, &l.ranges, 10, "ray");
            }
        }
        device::MISC => {
            if let Some(m) = &r.misc {
                s.push_str(&format!(
                    "  front bumpers {:05b}  rear bumpers {:05b}\n  battery {}.{} V\n",
                    m.front_bumpers & 0x1F,
                    m.rear_bumpers & 0x1F,
                    m.voltage / 10,
                    m.voltage % 10
                ));
            }
        }
        device::GRIPPER => {
            if let Some(g) = &r.gripper {
                s.push_str(&format!("  state {:08b}  beams {:08b}\n", g.state, g.beams));
            }
        }
        device::PTZ => {
            if let Some(z) = &r.ptz {
                s.push_str(&format!(
                    "  pan {}°  tilt {}°  zoom {}\n",
                    z.pan, z.tilt, z.zoom
                ));
            }
        }
        device::VISION => {
            if let Some(v) = &r.vision {
                for (ch, blobs) in v.channels.iter().enumerate() {
                    if blobs.is_empty() {
                        continue;
                    }
                    s.push_str(&format!("  channel {ch}: {} blobs\n", blobs.len()));
                    for b in blobs {
                        s.push_str(&format!(
                            "    area {} at ({}, {}) box left {} right {} top {} bottom {}\n",
                            b.area, b.x, b.y, b.left, b.right, b.top, b.bottom
                        ));
                    }
                }
                if v.channels.iter().all(Vec::is_empty) {
                    s.push_str("  no blobs\n");
                }
            }
        }
        device::MAP
        | device::LOCALIZE
        | device::PLANNER
        | device::ODOMETRY
        | device::PRECISE_ODOMETRY => describe_nav(r, dev, &mut s),
        other => {
            if let Some(p) = r.other(other) {
                s.push_str(&format!("  {} bytes:", p.len()));
                for (i, b) in p.iter().enumerate() {
                    if i % 16 == 0 {
                        s.push_str("\n   ");
                    }
                    s.push_str(&format!(" {b:02x}"));
                }
                s.push('\n');
            }
        }
    }
    s
}

// ----- estop ---------------------------------------------------------------------------

fn estop(c: &mut Client, latch: bool) -> Result<(), Error> {
    c.set_notices(true)?;
    c.estop(latch)?;
    // The server confirms with an E (latched) or e (released) notice, or says why it
    // refused. (Turning notices on while the stop is latched also brings an E first.)
    let want = if latch {
        kind::ESTOP
    } else {
        kind::ESTOP_RELEASED
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match c.wait_notice(left)? {
            Some(n) if n.kind == want => {
                println!("{n}");
                return Ok(());
            }
            Some(n) if n.kind == kind::ACCESS || n.kind == kind::CONFIG => {
                eprintln!("notice: {n}");
                return Err(Error::InvalidArgument(
                    "the server refused the emergency stop change",
                ));
            }
            Some(_) => {}
            None => break,
        }
    }
    println!(
        "e-stop {} sent; the server did not confirm within 5 s",
        if latch { "latch" } else { "release" }
    );
    Ok(())
}

// ----- joy -----------------------------------------------------------------------------

/// How often `joy` sends a command while a key is held.
const JOY_PERIOD: Duration = Duration::from_millis(100);
/// No repeat of a held key for this long: the key was released.
const RELEASE_AFTER: Duration = Duration::from_millis(300);
/// The wait for a held key's first repeat (terminals start repeating after 0.25-0.7 s).
const FIRST_REPEAT: Duration = Duration::from_millis(700);

/// One axis of the joystick (forward/back or left/right), driven by key presses and their
/// repeats: it is held while presses keep arriving.
#[derive(Debug, Default, Clone, Copy)]
struct Axis {
    /// -1, 0 or 1.
    dir: i8,
    /// When the current key went down, and when it was last seen (press or repeat).
    pressed: Option<(Instant, Instant)>,
    /// Whether a repeat has been seen since the press.
    repeating: bool,
}

impl Axis {
    /// A press (or auto-repeat) of the key for `dir` at `now`.
    fn press(&mut self, dir: i8, now: Instant) {
        match self.pressed {
            Some((_, ref mut last)) if self.dir == dir => {
                *last = now;
                self.repeating = true;
            }
            _ => {
                self.dir = dir;
                self.pressed = Some((now, now));
                self.repeating = false;
            }
        }
    }

    /// Lets go at once.
    fn release(&mut self) {
        *self = Axis::default();
    }

    /// The direction held at `now` (0 once the key's repeats have stopped).
    fn held(&mut self, now: Instant) -> i8 {
        if let Some((_, last)) = self.pressed {
            let grace = if self.repeating {
                RELEASE_AFTER
            } else {
                FIRST_REPEAT
            };
            if now.duration_since(last) > grace {
                self.release();
            }
        }
        self.dir
    }
}

/// What a key does in `joy`.
#[derive(Debug, PartialEq)]
enum JoyKey {
    Forward,
    Back,
    Left,
    Right,
    Faster,
    Slower,
    Stop,
    Quit,
    Other,
}

fn joy_key(k: &crossterm::event::KeyEvent) -> JoyKey {
    use crossterm::event::{KeyCode, KeyModifiers};
    let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
    match k.code {
        KeyCode::Char('c' | 'd') if ctrl => JoyKey::Quit,
        KeyCode::Up | KeyCode::Char('w') => JoyKey::Forward,
        KeyCode::Down | KeyCode::Char('s') => JoyKey::Back,
        KeyCode::Left | KeyCode::Char('a') => JoyKey::Left,
        KeyCode::Right | KeyCode::Char('d') => JoyKey::Right,
        KeyCode::Char('+' | '=') => JoyKey::Faster,
        KeyCode::Char('-' | '_') => JoyKey::Slower,
        KeyCode::Char(' ') => JoyKey::Stop,
        KeyCode::Char('q' | 'Q') | KeyCode::Esc => JoyKey::Quit,
        _ => JoyKey::Other,
    }
}

/// Raw mode for as long as it lives; restores the terminal on drop (also on a panic).
struct RawTerminal;

impl RawTerminal {
    fn enter() -> std::io::Result<RawTerminal> {
        crossterm::terminal::enable_raw_mode()?;
        Ok(RawTerminal)
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = std::io::stdout().write_all(b"\r\n");
        let _ = std::io::stdout().flush();
    }
}

fn joy(mut c: Client, mut speed: i16, mut turn: i16) -> Result<(), Error> {
    c.set_notices(true)?;
    c.request("pa")?.check()?;
    // SIGTERM and SIGHUP end the loop like q does, so the zero command still goes out.
    let quit = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&quit))?;
    }
    let terminal = RawTerminal::enter()?;
    let result = joy_loop(&mut c, &mut speed, &mut turn, &quit);
    // Stop the robot whatever ended the loop, then give the terminal back.
    let stopped = c.set_speed(0, 0);
    drop(terminal);
    print_notices(&mut c);
    println!("stopped; bye");
    result.and(stopped)
}

fn joy_loop(
    c: &mut Client,
    speed: &mut i16,
    turn: &mut i16,
    quit: &AtomicBool,
) -> Result<(), Error> {
    use crossterm::event::{self, Event, KeyEventKind};
    let mut out = std::io::stdout();
    let _ = write!(
        out,
        "joy: arrows (or w a s d) drive, +/- speed, space stops, q quits\r\n"
    );
    let mut forward = Axis::default();
    let mut sideways = Axis::default();
    let mut last_sent = (0i16, 0i16);
    let mut next_tick = Instant::now();
    let mut notice_line = String::new();
    loop {
        if quit.load(Ordering::Relaxed) {
            return Ok(());
        }
        // Keys until the next tick.
        let now = Instant::now();
        if now < next_tick && event::poll(next_tick - now)? {
            if let Event::Key(k) = event::read()? {
                let now = Instant::now();
                if k.kind == KeyEventKind::Release {
                    match joy_key(&k) {
                        JoyKey::Forward | JoyKey::Back => forward.release(),
                        JoyKey::Left | JoyKey::Right => sideways.release(),
                        _ => {}
                    }
                    continue;
                }
                match joy_key(&k) {
                    JoyKey::Forward => forward.press(1, now),
                    JoyKey::Back => forward.press(-1, now),
                    JoyKey::Left => sideways.press(1, now),
                    JoyKey::Right => sideways.press(-1, now),
                    JoyKey::Faster => {
                        *speed = speed.saturating_add(50).min(2000);
                        *turn = turn.saturating_add(10).min(360);
                    }
                    JoyKey::Slower => {
                        *speed = speed.saturating_sub(50).max(50);
                        *turn = turn.saturating_sub(10).max(10);
                    }
                    JoyKey::Stop => {
                        forward.release();
                        sideways.release();
                    }
                    JoyKey::Quit => return Ok(()),
                    JoyKey::Other => {}
                }
            }
            continue;
        }
        // A tick: send while a key is held, one zero when released.
        next_tick += JOY_PERIOD;
        let now = Instant::now();
        if next_tick < now {
            next_tick = now + JOY_PERIOD;
        }
        let want = (
            i16::from(forward.held(now)) * *speed,
            i16::from(sideways.held(now)) * *turn,
        );
        if want != (0, 0) || last_sent != (0, 0) {
            c.set_speed(want.0, want.1)?;
            last_sent = want;
        }
        // Take the readings that arrived and show them.
        let pos = c.read_new(Duration::ZERO).ok().and_then(|r| r.position);
        if let Some(n) = c.take_notices().pop() {
            notice_line = format!(" | {n}");
        }
        if let Some(p) = pos {
            let _ = write!(
                out,
                "\r\x1b[K cmd {:>5} mm/s {:>4}°/s | at ({}, {}) mm {}° speed {} mm/s{}{}",
                want.0,
                want.1,
                p.x,
                p.y,
                p.heading,
                p.speed,
                if p.stall != 0 { " STALL" } else { "" },
                notice_line
            );
            let _ = out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn command_lines_parse() {
        let o = parse(&args("-h robot:7000 -k sesame print laser -n 3 -f 5")).unwrap();
        assert_eq!(o.addr, "robot:7000");
        assert_eq!(o.key.as_deref(), Some("sesame"));
        assert_eq!(
            o.command,
            Command::Print {
                device: b'l',
                rounds: 3,
                hz: 5
            }
        );
        assert_eq!(parse(&args("list")).unwrap().addr, "localhost:6665");
        assert_eq!(
            parse(&args("joy -s 300")).unwrap().command,
            Command::Joy {
                speed: 300,
                turn: 40
            }
        );
        assert_eq!(
            parse(&args("estop off")).unwrap().command,
            Command::Estop { latch: false }
        );
        assert_eq!(
            parse(&args("print p")).unwrap().command,
            Command::Print {
                device: b'p',
                rounds: 0,
                hz: 10
            }
        );
        assert_eq!(
            parse(&args("goto -1500 2000 -90 -t 30")).unwrap().command,
            Command::Goto {
                goal: [-1500, 2000, -90],
                timeout: Some(Duration::from_secs(30))
            }
        );
        assert_eq!(
            parse(&args("goto 1500 2000 -t 5")).unwrap().command,
            Command::Goto {
                goal: [1500, 2000, 0],
                timeout: Some(Duration::from_secs(5))
            }
        );
        assert_eq!(parse(&args("cancel")).unwrap().command, Command::Cancel);
        assert_eq!(
            parse(&args("localize 10 -20 45 -s 200")).unwrap().command,
            Command::Localize {
                pose: Some(([10, -20, 45], [200.0, 15.0]))
            }
        );
        assert_eq!(
            parse(&args("localize global")).unwrap().command,
            Command::Localize { pose: None }
        );
        for bad in [
            "goto 1.5 2",
            "goto 1000",
            "goto 1000 1000 400",
            "goto 1000 1000 -x",
            "localize 1 2 3 -s -4",
            "localize 1 2 3 -r nan",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad}");
        }
        for (name, code) in [
            ("map", b'M'),
            ("localize", b'H'),
            ("planner", b'G'),
            ("odometry", b'O'),
            ("P", b'P'),
        ] {
            assert_eq!(
                parse(&args(&format!("print {name}"))).unwrap().command,
                Command::Print {
                    device: code,
                    rounds: 0,
                    hz: 10
                }
            );
        }
        for bad in [
            "",
            "estop maybe",
            "print",
            "print nosuch",
            "print p -f 0",
            "joy -s 99999",
            "frobnicate",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn a_held_key_is_released_when_its_repeats_stop() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut a = Axis::default();
        a.press(1, t0);
        // Before the first repeat: held for up to FIRST_REPEAT.
        assert_eq!(a.held(ms(500)), 1);
        a.press(1, ms(600));
        // Repeating: held while repeats come every 40 ms.
        for t in (640..2000).step_by(40) {
            a.press(1, ms(t));
            assert_eq!(a.held(ms(t + 20)), 1);
        }
        // No repeat for RELEASE_AFTER: released.
        assert_eq!(a.held(ms(1960 + 250)), 1);
        assert_eq!(a.held(ms(1960 + 301)), 0);
        // A single tap stops after FIRST_REPEAT.
        a.press(-1, ms(3000));
        assert_eq!(a.held(ms(3000 + 701)), 0);
        // The other direction takes over at once.
        a.press(1, ms(4000));
        a.press(-1, ms(4010));
        assert_eq!(a.held(ms(4020)), -1);
    }

    #[test]
    fn device_table_has_a_row_per_device() {
        let d = DeviceEntry {
            code: b'p',
            access: b'a',
            state: b'u',
            readers: 3,
            writers: 1,
            data_size: 21,
            rate_x10: 99,
            driver: "sim".into(),
        };
        let t = device_table(&[d]);
        let row = t.lines().nth(1).unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cols,
            ["p", "position", "sim", "all", "up", "3", "1", "21", "9.9"]
        );
    }

    #[test]
    fn describe_prints_every_laser_ray() {
        let mut r = Round::new();
        let mut l = player_client::Laser::default();
        l.ranges[360] = 4242;
        r.apply(b'l', Some((1, 2)), &l.encode()).unwrap();
        let s = describe(&r, b'l');
        assert!(s.starts_with("laser (l) at 1.000002\n"));
        assert_eq!(s.lines().filter(|l| l.contains("ray")).count(), 37);
        assert!(s.contains("ray 360:  4242"));
    }
}
