//! What the bridges to another middleware (the Zenoh bridge and the ROS 2 front end, both
//! on Zenoh) share about their setup, their robot actors and their shutdown: a network
//! library whose calls block (Zenoh refuses to block inside a single-threaded tokio
//! runtime, which every actix arbiter is), one actor per robot on an arbiter of their own
//! that publishes readings as they come, and a session with the entities declared on it
//! that must be closed off the arbiters, at shutdown or when the front end is dropped.
//!
//! [`off_runtime`] runs a blocking call on a plain thread and awaits it; a [`Blocking`]
//! holds the session (any type: the front end says how to close it) and the arbiter, and
//! [`Blocking::shutdown`] tells each robot actor to [`Detach`] (leave its registry: a
//! device it commanded stops), closes the session off the runtime and stops the arbiter.
//! A robot actor keeps its readings not yet published in [`Waiting`] (the newest per
//! device) and counts what it did in [`Stats`]. The library's own types stay in the
//! front-end crates; this module knows none of them.

use actix::prelude::*;
use futures::channel::oneshot;
use player_kit::driver::DeviceData;
use slog::{info, warn, Logger};
use std::collections::HashMap;
use std::time::Duration;

/// How long each robot actor may take to leave its registry at shutdown.
pub const DETACH_WAIT: Duration = Duration::from_secs(3);

/// How long closing the session may take at shutdown before it is left to finish alone.
pub const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Front end → one of its robot actors: leave the registry (a device it commanded stops),
/// drop what it publishes on and stop (server shutdown).
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "()")]
pub struct Detach;

/// Runs `f` on a plain thread named `thread` (no tokio runtime there: a blocking call may
/// block) and waits for its result without blocking the arbiter. `None` if the thread
/// could not start or `f` panicked.
pub async fn off_runtime<T: Send + 'static>(
    thread: impl Into<String>,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name(thread.into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .ok()?;
    rx.await.ok()
}

/// A front end's session (`S`: the session and what is declared on it), closed off the
/// arbiters by the `close` it was made with, and the arbiter its robot actors run on.
pub struct Blocking<S: Send + 'static> {
    session: Option<S>,
    close: fn(S),
    arbiter: Option<Arbiter>,
    name: &'static str,
    log: Logger,
}

impl<S: Send + 'static> Blocking<S> {
    /// Holds `session` (closed by `close`, which may block) and `arbiter`, for the front
    /// end `name` (thread names and log lines).
    pub fn new(
        name: &'static str,
        session: S,
        close: fn(S),
        arbiter: Arbiter,
        log: Logger,
    ) -> Self {
        Blocking {
            session: Some(session),
            close,
            arbiter: Some(arbiter),
            name,
            log,
        }
    }

    /// The session (until shutdown).
    pub fn session(&self) -> Option<&S> {
        self.session.as_ref()
    }

    /// The session, to change what is declared on it (until shutdown).
    pub fn session_mut(&mut self) -> Option<&mut S> {
        self.session.as_mut()
    }

    /// The arbiter the robot actors run on.
    pub fn arbiter(&self) -> Option<ArbiterHandle> {
        self.arbiter.as_ref().map(Arbiter::handle)
    }

    /// Stops: each of `actors` is told to [`Detach`] (waiting up to [`DETACH_WAIT`] each),
    /// then the session is closed off the runtime (waiting up to [`CLOSE_WAIT`]), then the
    /// arbiter stops.
    pub async fn shutdown<A>(mut self, actors: Vec<Addr<A>>)
    where
        A: Actor<Context = Context<A>> + Handler<Detach>,
    {
        for a in actors {
            let _ = a.send(Detach).timeout(DETACH_WAIT).await;
        }
        if let Some(s) = self.session.take() {
            let close = self.close;
            let closed = off_runtime(format!("{}-close", self.name), move || close(s));
            if tokio::time::timeout(CLOSE_WAIT, closed).await.is_err() {
                warn!(
                    self.log,
                    "{}: the session did not close within {CLOSE_WAIT:?}", self.name
                );
            }
        }
        if let Some(a) = self.arbiter.take() {
            a.stop();
            let _ = a.join();
        }
    }
}

impl<S: Send + 'static> Drop for Blocking<S> {
    /// Dropped without [`Blocking::shutdown`]: the session is still closed, on a thread of
    /// its own (closing blocks), and the arbiter stopped.
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            let close = self.close;
            let _ = std::thread::Builder::new()
                .name(format!("{}-close", self.name))
                .spawn(move || close(s));
        }
        if let Some(a) = self.arbiter.take() {
            a.stop();
        }
    }
}

/// What a bridge's robot actor counts, logged when it leaves ([`Stats::log_leave`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Samples published.
    pub published: u64,
    /// Readings replaced by a newer one of their device before they were published.
    pub replaced: u64,
    /// Commands passed to a device.
    pub commands: u64,
    /// Commands (and e-stop releases) ignored: not allowed, or the wrong size.
    pub ignored: u64,
}

impl Stats {
    /// Logs `what` (the actor leaving its robot) with the counts and `refused` (samples
    /// its network callbacks refused before they reached it).
    pub fn log_leave(&self, log: &Logger, what: &str, refused: u64) {
        info!(log, "{}", what; "published" => self.published, "replaced_unsent" => self.replaced,
            "commands" => self.commands, "ignored" => self.ignored, "refused" => refused);
    }
}

/// A robot actor's readings not published yet: the newest per device (a slow network
/// loses the older ones, never delays the drivers), and whether the actor's message to
/// itself to publish them (a flush) is on its way.
#[derive(Debug, Default)]
pub struct Waiting {
    readings: HashMap<u8, DeviceData>,
    flush_sent: bool,
}

impl Waiting {
    /// Keeps `d`, replacing a reading of its device not published yet (counted in
    /// `stats`). Returns whether the actor is to send itself a flush now (none is on its
    /// way).
    pub fn keep(&mut self, d: &DeviceData, stats: &mut Stats) -> bool {
        if self.readings.insert(d.device, d.clone()).is_some() {
            stats.replaced += 1;
        }
        self.wake()
    }

    /// Whether the actor is to send itself a flush now: readings wait and none is on its
    /// way (say, when it has just got somewhere to publish them).
    pub fn wake(&mut self) -> bool {
        if self.readings.is_empty() || self.flush_sent {
            return false;
        }
        self.flush_sent = true;
        true
    }

    /// The flush came: the readings waiting, taken.
    pub fn take(&mut self) -> HashMap<u8, DeviceData> {
        self.flush_sent = false;
        std::mem::take(&mut self.readings)
    }

    /// The flush came but there is nowhere to publish yet: the readings keep waiting (the
    /// next reading, or [`Waiting::wake`], asks for a flush again).
    pub fn postpone(&mut self) {
        self.flush_sent = false;
    }

    /// Drops device `code`'s reading (no one listens to it now).
    pub fn forget(&mut self, code: u8) {
        self.readings.remove(&code);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use player_kit::driver::Timestamp;

    fn reading(device: u8, seq: u64) -> DeviceData {
        DeviceData {
            device,
            seq,
            data: Bytes::from(vec![seq as u8]),
            timestamp: Timestamp { sec: 0, usec: 0 },
        }
    }

    #[test]
    fn one_flush_is_asked_for_and_the_newest_reading_per_device_waits() {
        let (mut w, mut stats) = (Waiting::default(), Stats::default());
        assert!(!w.wake(), "nothing waits");
        assert!(w.keep(&reading(b'p', 1), &mut stats));
        assert!(
            !w.keep(&reading(b'p', 2), &mut stats),
            "a flush is on its way"
        );
        assert!(!w.keep(&reading(b'l', 1), &mut stats));
        assert_eq!(stats.replaced, 1);
        let taken = w.take();
        assert_eq!(taken.len(), 2);
        assert_eq!(taken[&b'p'].seq, 2);
        assert!(
            w.keep(&reading(b'p', 3), &mut stats),
            "the flush came: a new one"
        );
        w.take();
        w.keep(&reading(b'l', 2), &mut stats);
        w.postpone();
        assert!(w.wake(), "postponed: asked for again");
        w.forget(b'l');
        assert!(w.take().is_empty());
        assert!(!w.wake());
    }
}
