//! Driver programs in Rust: the protocol's frames ([`frame`]) and a small blocking runtime
//! ([`run`]) for a program that serves devices over its standard input and output.
//!
//! The server starts a driver program named in its configuration (`driver = "program"`,
//! `docs/plugins.md`), sends it frames on its standard input and reads frames from its
//! standard output. A Rust program implements [`ProgramDriver`] (every callback has a
//! default, so it writes only what its devices need) and hands it to [`run`]:
//!
//! ```no_run
//! use player_kit::program::{run, Output, ProgramDriver};
//! use std::time::Duration;
//!
//! /// Device `c`: a counter, published ten times a second.
//! struct Counter(u32);
//!
//! impl ProgramDriver for Counter {
//!     fn tick(&mut self, out: &mut Output) {
//!         self.0 += 1;
//!         out.publish(b'c', &self.0.to_be_bytes());
//!     }
//! }
//!
//! fn main() -> std::io::Result<()> {
//!     run(Counter(0), Some(Duration::from_millis(100)))
//! }
//! ```
//!
//! This module needs no actix or tokio: build the kit with `default-features = false`
//! to get only it.

pub mod frame;

pub use frame::Refusal;
use frame::{FrameReader, FromProgram, Hello, ToProgram, MAX_FRAME};
use std::io::{self, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What a driver program does with the server's frames. Every callback has a default: a
/// program implements what its devices need.
pub trait ProgramDriver {
    /// The first frame: the robot's name, the devices the configuration gives the program
    /// and its options. Default: nothing.
    fn hello(&mut self, _hello: &Hello, _out: &mut Output) {}
    /// Open `device` (a client asked for it). `Err` says why it cannot be (the client gets
    /// `e`). Default: ok.
    fn setup(&mut self, _device: u8, _out: &mut Output) -> Result<(), Refusal> {
        Ok(())
    }
    /// The last client left `device`. Default: nothing.
    fn shutdown(&mut self, _device: u8, _out: &mut Output) {}
    /// `device` has `count` readers now. Default: nothing.
    fn subscribers(&mut self, _device: u8, _count: u32, _out: &mut Output) {}
    /// A client's command (the 0.7.4a command bytes, already past the server's access
    /// control, watchdog and e-stop). Default: ignored.
    fn command(&mut self, _device: u8, _payload: &[u8], _out: &mut Output) {}
    /// A client's configuration request; the returned bytes are the reply. Default: an
    /// empty reply.
    fn config(&mut self, _device: u8, _payload: &[u8], _out: &mut Output) -> Vec<u8> {
        Vec::new()
    }
    /// Put `device` in its safe state (`reason`: [`frame::stop`]). Default: nothing.
    fn stop(&mut self, _device: u8, _reason: u8, _out: &mut Output) {}
    /// A reading of another device this program reads ([`Output::read`]). Default:
    /// nothing.
    fn reading(&mut self, _device: u8, _sec: u32, _usec: u32, _payload: &[u8], _out: &mut Output) {}
    /// The server's answer to [`Output::read`]. Default: a failure is logged.
    fn read_answer(&mut self, device: u8, result: Result<(), Refusal>, out: &mut Output) {
        if let Err(e) = result {
            out.log(
                frame::level::WARNING,
                &format!("cannot read '{}': {e}", char::from(device)),
            );
        }
    }
    /// Called every `tick` given to [`run`]. Default: nothing.
    fn tick(&mut self, _out: &mut Output) {}
}

/// Where a program's frames go: its standard output, one write per callback.
pub struct Output {
    buf: Vec<u8>,
}

impl Output {
    /// Publishes a reading of `device` taken now.
    pub fn publish(&mut self, device: u8, payload: &[u8]) {
        self.frame(FromProgram::Data {
            device,
            timestamp: None,
            payload: payload.to_vec(),
        });
    }

    /// Publishes a reading of `device` taken at `at`.
    pub fn publish_at(&mut self, device: u8, payload: &[u8], at: SystemTime) {
        let d = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        self.frame(FromProgram::Data {
            device,
            timestamp: Some((d.as_secs() as u32, d.subsec_micros())),
            payload: payload.to_vec(),
        });
    }

    /// A line for the server's log ([`frame::level`]).
    pub fn log(&mut self, level: u8, text: &str) {
        self.frame(FromProgram::Log {
            level,
            text: text.to_string(),
        });
    }

    /// Reports `device` failed (clients with the error channel are told).
    pub fn error(&mut self, device: u8, text: &str) {
        self.frame(FromProgram::Error {
            device,
            text: text.to_string(),
        });
    }

    /// Starts (`on`) or stops reading another device of the robot; its readings come to
    /// [`ProgramDriver::reading`].
    pub fn read(&mut self, device: u8, on: bool) {
        self.frame(FromProgram::Read { device, on });
    }

    fn frame(&mut self, f: FromProgram) {
        f.encode(&mut self.buf);
    }

    fn flush(&mut self, w: &mut impl Write) -> io::Result<()> {
        if !self.buf.is_empty() {
            w.write_all(&self.buf)?;
            w.flush()?;
            self.buf.clear();
        }
        Ok(())
    }
}

/// Runs `driver` on standard input and output until the server closes standard input
/// (it is stopping, or has restarted the program). `tick`: how often
/// [`ProgramDriver::tick`] is called (`None`: never). A frame the server should never
/// send, or a broken stream, ends it with an error.
pub fn run<D: ProgramDriver>(driver: D, tick: Option<Duration>) -> io::Result<()> {
    run_on(driver, tick, io::stdin(), io::stdout().lock())
}

/// [`run`] on any input and output (for tests and embedding).
pub fn run_on<D: ProgramDriver>(
    mut driver: D,
    tick: Option<Duration>,
    input: impl Read + Send + 'static,
    mut output: impl Write,
) -> io::Result<()> {
    let frames = spawn_reader(input);
    let mut out = Output { buf: Vec::new() };
    let mut next_tick = tick.map(|t| Instant::now() + t);
    loop {
        let received = match next_tick {
            Some(at) => frames.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => frames
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(Ok(frame)) => dispatch(&mut driver, frame, &mut out),
            Ok(Err(e)) => return Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                driver.tick(&mut out);
                if let (Some(at), Some(t)) = (next_tick.as_mut(), tick) {
                    *at += t;
                    // Behind (the machine was busy): skip, do not burst.
                    if *at < Instant::now() {
                        *at = Instant::now() + t;
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                out.flush(&mut output)?;
                return Ok(());
            }
        }
        out.flush(&mut output)?;
    }
}

fn dispatch<D: ProgramDriver>(driver: &mut D, frame: ToProgram, out: &mut Output) {
    match frame {
        ToProgram::Hello(h) => driver.hello(&h, out),
        ToProgram::Setup { device } => {
            let result = driver.setup(device, out);
            out.frame(FromProgram::SetupAnswer { device, result });
        }
        ToProgram::Shutdown { device } => driver.shutdown(device, out),
        ToProgram::Subscribers { device, count } => driver.subscribers(device, count, out),
        ToProgram::Command { device, payload } => driver.command(device, &payload, out),
        ToProgram::Config {
            device,
            id,
            payload,
        } => {
            let reply = driver.config(device, &payload, out);
            out.frame(FromProgram::ConfigReply { id, payload: reply });
        }
        ToProgram::Stop { device, reason } => driver.stop(device, reason, out),
        ToProgram::Reading {
            device,
            sec,
            usec,
            payload,
        } => driver.reading(device, sec, usec, &payload, out),
        ToProgram::ReadAnswer { device, result } => driver.read_answer(device, result, out),
    }
}

/// Reads frames on a thread of their own (standard input blocks), a few at most waiting.
fn spawn_reader(mut input: impl Read + Send + 'static) -> mpsc::Receiver<io::Result<ToProgram>> {
    let (tx, rx) = mpsc::sync_channel(16);
    std::thread::spawn(move || {
        let mut reader = FrameReader::new(MAX_FRAME);
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match input.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            reader.extend(&buf[..n]);
            loop {
                let frame = match reader.next_frame() {
                    Ok(None) => break,
                    Ok(Some((kind, body))) => ToProgram::decode(kind, body),
                    Err(e) => Err(e),
                };
                let frame = frame.map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e));
                let bad = frame.is_err();
                if tx.send(frame).is_err() || bad {
                    return;
                }
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo {
        ticks: u32,
    }

    impl ProgramDriver for Echo {
        fn command(&mut self, device: u8, payload: &[u8], out: &mut Output) {
            out.publish(device, payload);
        }
        fn setup(&mut self, device: u8, _out: &mut Output) -> Result<(), Refusal> {
            if device == b'x' {
                Err("no x here".into())
            } else {
                Ok(())
            }
        }
        fn tick(&mut self, _out: &mut Output) {
            self.ticks += 1;
        }
    }

    fn frames(bytes: &[u8]) -> Vec<FromProgram> {
        let mut r = FrameReader::new(MAX_FRAME);
        r.extend(bytes);
        let mut v = Vec::new();
        while let Some((k, b)) = r.next_frame().unwrap() {
            v.push(FromProgram::decode(k, b).unwrap());
        }
        v
    }

    #[test]
    fn answers_setup_and_relays_commands_until_input_ends() {
        let mut input = Vec::new();
        ToProgram::Setup { device: b'c' }.encode(&mut input);
        ToProgram::Setup { device: b'x' }.encode(&mut input);
        ToProgram::Command {
            device: b'c',
            payload: vec![1, 2, 3, 4],
        }
        .encode(&mut input);
        let mut output = Vec::new();
        run_on(Echo { ticks: 0 }, None, io::Cursor::new(input), &mut output).unwrap();
        assert_eq!(
            frames(&output),
            vec![
                FromProgram::SetupAnswer {
                    device: b'c',
                    result: Ok(())
                },
                FromProgram::SetupAnswer {
                    device: b'x',
                    result: Err("no x here".into())
                },
                FromProgram::Data {
                    device: b'c',
                    timestamp: None,
                    payload: vec![1, 2, 3, 4]
                },
            ]
        );
    }

    #[test]
    fn a_garbage_length_ends_the_run_with_an_error() {
        let input = vec![0xff, 0xff, 0xff, 0xff, b'S'];
        let r = run_on(Echo { ticks: 0 }, None, io::Cursor::new(input), Vec::new());
        assert_eq!(r.unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
