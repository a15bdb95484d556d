//! The driver program as a child process: starting it (its own process group, killed if
//! the server dies), the tasks on its three pipes (frames in, frames out with the limits on
//! their size and rate, standard error logged), killing it, and its supervision (a failed
//! program is dropped, its devices reported failed, and it is started again after a
//! backoff).

use super::outbox::Outbox;
use super::{ProgramDriver, CHUNK, MAX_LINE, STABLE};
use actix::prelude::*;
use player_kit::driver::{DataRecipient, DeviceState, DriverError};
use player_kit::log::{escape, Throttle};
use player_kit::program::frame::{FrameReader, FromProgram, ToProgram};
use slog::{info, warn, Logger};
use std::cell::RefCell;
use std::process::Stdio;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::oneshot;
use tokio::sync::Notify;

/// A running program.
pub(super) struct Running {
    /// Which run it is (a message from an earlier run is stale).
    pub gen: u64,
    pid: i32,
    started: Instant,
    /// The frames waiting for its input.
    pub outbox: Rc<RefCell<Outbox>>,
    wake: Rc<Notify>,
    /// Resolves when it has exited.
    pub exited: Option<oneshot::Receiver<()>>,
}

impl Running {
    /// Queues `frame` for its input; how many frames wait now.
    pub fn send(&self, frame: ToProgram) -> usize {
        let mut o = self.outbox.borrow_mut();
        o.push(frame);
        self.wake.notify_one();
        o.queue.len()
    }

    /// Kills the program's whole process group (its children too).
    // Unsafe code: kill(2) on the program's process group (a Linux call).
    #[allow(unsafe_code)]
    fn kill(&self) {
        // SAFETY: kill(2) on the process group the program leads (it was started with
        // process_group(0), so its pgid is its pid); no memory is involved.
        unsafe {
            libc::kill(-self.pid, libc::SIGKILL);
        }
        self.outbox.borrow_mut().closed = true;
        self.wake.notify_one();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A parsed frame from the program `gen`.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct FromChild {
    pub gen: u64,
    pub frame: FromProgram,
}

/// The program `gen` must be dropped: why.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Failed {
    pub gen: u64,
    pub reason: String,
    /// Its output ended: wait a moment for its exit status, which says more.
    pub eof: bool,
}

impl ProgramDriver {
    /// Spawns the program of the plan with its three pipes, in a process group of its own.
    // Unsafe code: prctl(PR_SET_PDEATHSIG) in the child before exec (a Linux call).
    #[allow(unsafe_code)]
    fn spawn(&self) -> std::io::Result<Child> {
        let mut cmd = tokio::process::Command::new(&self.plan.argv[0]);
        cmd.args(&self.plan.argv[1..])
            .envs(&self.plan.env)
            .current_dir(&self.plan.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        // SAFETY: the closure runs in the child between fork and exec and only calls
        // prctl(2), which is async-signal-safe: the program is killed if the thread that
        // started it (the server's drivers' thread) dies, so a crashed server leaves no
        // orphan.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        cmd.spawn()
    }

    /// Starts the program (unless the server is stopping or it runs), greets it and sets
    /// up again the devices that still have clients.
    pub(super) fn start_program(&mut self, ctx: &mut Context<Self>) {
        if self.terminating || self.child.is_some() {
            return;
        }
        self.gen += 1;
        self.answers.clear();
        let gen = self.gen;
        let mut child = match self.spawn() {
            Ok(c) => c,
            Err(e) => {
                let reason = format!("cannot start {:?}: {e}", self.plan.argv);
                self.after_failure(reason, Duration::ZERO, ctx);
                return;
            }
        };
        let pid = child.id().map_or(0, |p| p as i32);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            self.after_failure("its pipes were not opened".into(), Duration::ZERO, ctx);
            return;
        };
        info!(self.log, "driver program started"; "pid" => pid, "command" => escape(self.plan.argv.join(" ").as_bytes(), 300));
        let outbox = Rc::new(RefCell::new(Outbox::default()));
        let wake = Rc::new(Notify::new());
        let (exit_tx, exit_rx) = oneshot::channel();
        let me = ctx.address();
        actix::spawn(async move {
            let status = child.wait().await;
            let _ = exit_tx.send(());
            let reason = match status {
                Ok(s) => format!("exited ({s})"),
                Err(e) => format!("could not be waited for: {e}"),
            };
            me.do_send(Failed {
                gen,
                reason,
                eof: false,
            });
        });
        actix::spawn(write_frames(stdin, outbox.clone(), wake.clone()));
        let (max_frame, max_rate) = (self.plan.max_frame, self.plan.max_rate);
        actix::spawn(read_frames(stdout, ctx.address(), gen, max_frame, max_rate));
        actix::spawn(log_stderr(stderr, self.log.clone()));
        let running = Running {
            gen,
            pid,
            started: Instant::now(),
            outbox,
            wake,
            exited: Some(exit_rx),
        };
        running.send(ToProgram::Hello(self.hello.clone()));
        self.child = Some(running);
        // The devices that still have clients are set up again.
        for device in self.up.clone() {
            self.setup_on_program(device, None, ctx);
        }
    }

    /// Drops the program `gen`: kills it, fails its devices, schedules a restart.
    pub(super) fn fail(&mut self, gen: u64, reason: String, ctx: &mut Context<Self>) {
        if !self.running(gen) {
            return;
        }
        let child = self.child.take().expect("running");
        let ran = child.started.elapsed();
        drop(child);
        self.after_failure(reason, ran, ctx);
    }

    /// After a program that ran for `ran` failed (or could not start): answers the setups
    /// waiting with the failure, reports its devices failed, gives back the devices it
    /// read, and starts it again after the backoff.
    fn after_failure(&mut self, reason: String, ran: Duration, ctx: &mut Context<Self>) {
        if ran >= STABLE {
            self.backoff.reset();
        }
        let wait = self.backoff.next_delay();
        if !self.terminating {
            if let Some(unlogged) = self.throttle.allow("failed") {
                warn!(self.log, "driver program failed: killed, restarting"; "reason" => escape(reason.as_bytes(), 300), "restart_in_s" => wait.as_secs_f64(), "failures_unlogged" => unlogged);
            }
        }
        let text = format!("driver program '{}' {reason}", self.plan.name);
        for (_, (_, waiters)) in self.pending.drain() {
            for w in waiters {
                let _ = w.send(Err(DriverError::link(text.clone())));
            }
        }
        let failed: Vec<u8> = self.up.iter().copied().collect();
        self.status.report(&failed, DeviceState::Failed, &text);
        self.failed.extend(failed);
        // The next run's readings are a new stream, numbered afresh; every consumer takes
        // them at once (player_kit::fresh).
        for d in &self.plan.devices {
            self.publisher.clear(d.code);
            self.publisher.renumber(d.code);
        }
        let me = DataRecipient::of(&ctx.address());
        for device in std::mem::take(&mut self.reads) {
            let release = self.source.read(device, me.clone(), false);
            actix::spawn(async move {
                let _ = release.await;
            });
        }
        if !self.terminating {
            ctx.run_later(wait, |act, ctx| act.start_program(ctx));
        }
    }
}

/// Writes queued frames to the program's input until it is closed.
async fn write_frames(mut stdin: ChildStdin, outbox: Rc<RefCell<Outbox>>, wake: Rc<Notify>) {
    loop {
        let (bytes, closed) = {
            let mut o = outbox.borrow_mut();
            (o.take(), o.closed)
        };
        if closed {
            return;
        }
        if bytes.is_empty() {
            wake.notified().await;
            continue;
        }
        if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
            // The program is gone; its exit is reported by the task waiting for it.
            return;
        }
    }
}

/// Reads frames from the program's output in bounded chunks, yielding between chunks,
/// and hands them to the actor one at a time (each waits until the actor took the last).
async fn read_frames(
    mut stdout: ChildStdout,
    me: Addr<ProgramDriver>,
    gen: u64,
    max_frame: usize,
    max_rate: u32,
) {
    let fail = |reason: String, eof: bool| me.do_send(Failed { gen, reason, eof });
    let mut reader = FrameReader::new(max_frame);
    let mut buf = vec![0u8; CHUNK];
    let mut tokens = f64::from(max_rate);
    let mut refilled = Instant::now();
    loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) => return fail("closed its output".into(), true),
            Ok(n) => n,
            Err(e) => return fail(format!("output unreadable: {e}"), false),
        };
        reader.extend(&buf[..n]);
        loop {
            let frame = match reader.next_frame() {
                Ok(None) => break,
                Ok(Some((kind, body))) => FromProgram::decode(kind, body),
                Err(e) => return fail(format!("broke the protocol: {e}"), false),
            };
            let frame = match frame {
                Ok(f) => f,
                Err(e) => return fail(format!("broke the protocol: {e}"), false),
            };
            let now = Instant::now();
            tokens = (tokens + now.duration_since(refilled).as_secs_f64() * f64::from(max_rate))
                .min(f64::from(max_rate));
            refilled = now;
            if tokens < 1.0 {
                return fail(
                    format!("floods: more than {max_rate} frames a second (max_rate)"),
                    false,
                );
            }
            tokens -= 1.0;
            if me.send(FromChild { gen, frame }).await.is_err() {
                return;
            }
        }
        tokio::task::yield_now().await;
    }
}

/// Logs the program's standard error line by line (cut at [`MAX_LINE`], escaped, at most
/// 50 lines a second with a count of the rest).
async fn log_stderr(mut stderr: ChildStderr, log: Logger) {
    let mut buf = vec![0u8; 4096];
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut throttle = Throttle::new(Duration::from_secs(1), 50);
    let emit = |line: &[u8], throttle: &mut Throttle| {
        if let Some(unlogged) = throttle.allow("stderr") {
            info!(log, "driver program: {}", escape(line, MAX_LINE); "stderr_lines_unlogged" => unlogged);
        }
    };
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        for &b in &buf[..n] {
            if b == b'\n' {
                if !cut {
                    emit(&line, &mut throttle);
                }
                line.clear();
                cut = false;
            } else if !cut {
                line.push(b);
                if line.len() >= MAX_LINE {
                    emit(&line, &mut throttle);
                    line.clear();
                    cut = true;
                }
            }
        }
        tokio::task::yield_now().await;
    }
    if !line.is_empty() && !cut {
        emit(&line, &mut throttle);
    }
}
