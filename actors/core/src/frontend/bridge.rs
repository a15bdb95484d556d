//! What the bridges to another middleware (the Zenoh bridge and the ROS 2 front end, both
//! on Zenoh) share about their setup, their robot actors and their shutdown: a network
//! library whose calls block (Zenoh refuses to block inside a single-threaded tokio
//! runtime, which every actix arbiter is), one actor per robot on an arbiter of their own
//! that publishes readings as they come and takes commands, and a session with the
//! entities declared on it that must be closed off the arbiters, at shutdown or when the
//! front end is dropped.
//!
//! [`off_runtime`] runs a blocking call on a plain thread and awaits it, [`set_up`] the
//! whole setup (open the session, declare each robot's entities); a [`BridgeSession`] holds
//! the session (any type: the front end says how to close it) and the arbiter, and
//! [`BridgeSession::shutdown`] tells each robot actor to [`Detach`] (leave its registry: a
//! device it commanded stops), closes the session off the runtime and stops the arbiter.
//! The robot actor itself is [`BridgeRobot`] and the shared handlers ([`robot`]). The
//! library's own types stay in the front-end crates; this module knows none of them.

pub mod clock;
pub mod direct;
pub mod robot;

pub use clock::Stamp;
pub use direct::{Direct, PublishNow};
pub use robot::{
    attach, detach, estop, flush, stopped, sync, take_reading, tick_as_needed, Attach, BridgeParts,
    BridgeRobot, CommandsReady, Detach, Flush, Mailbox, Matching, Slot, Stats, Waiting, QUIET_TICK,
    TICK,
};

use actix::prelude::*;
use futures::channel::oneshot;
use slog::{warn, Logger};
use std::time::Duration;

/// How long each robot actor may take to leave its registry at shutdown.
pub const DETACH_WAIT: Duration = Duration::from_secs(3);

/// How long closing the session may take at shutdown before it is left to finish alone.
pub const CLOSE_WAIT: Duration = Duration::from_secs(5);

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

/// Runs a bridge's setup (opening its session and declaring each robot's entities, calls
/// that block) on a plain thread named `<name>-setup`. When it fails, or the thread does
/// (`failed`), `arbiter` (the robot actors') is stopped and that is the error.
pub async fn set_up<T, E>(
    name: &str,
    arbiter: &Arbiter,
    failed: E,
    setup: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, E>
where
    T: Send + 'static,
    E: Send + 'static,
{
    let done = off_runtime(format!("{name}-setup"), setup)
        .await
        .unwrap_or(Err(failed));
    if done.is_err() {
        arbiter.stop();
    }
    done
}

/// A front end's session (`S`: the session and what is declared on it), closed off the
/// arbiters by the `close` it was made with, and the arbiter its robot actors run on.
pub struct BridgeSession<S: Send + 'static> {
    session: Option<S>,
    close: fn(S),
    arbiter: Option<Arbiter>,
    name: &'static str,
    log: Logger,
}

impl<S: Send + 'static> BridgeSession<S> {
    /// Holds `session` (closed by `close`, which may block) and `arbiter`, for the front
    /// end `name` (thread names and log lines).
    pub fn new(
        name: &'static str,
        session: S,
        close: fn(S),
        arbiter: Arbiter,
        log: Logger,
    ) -> Self {
        BridgeSession {
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

impl<S: Send + 'static> Drop for BridgeSession<S> {
    /// Dropped without [`BridgeSession::shutdown`]: the session is still closed, on a thread of
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
