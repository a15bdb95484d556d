//! The life of a driver's link task, as its actor sees it: start a task (after the previous
//! one has finished with the port), wait in `Setup` until it is up or has failed, and close
//! it, waiting (with timeouts) for it to say it has closed.
//!
//! The task itself (opening, serving, reconnecting) stays in each driver; it reports its
//! [`LinkState`] through the `watch` sender [`LinkSupervisor::start`] hands it, and answers
//! a close request with the acknowledgement it is given. How that request reaches it is the
//! driver's [`LinkHandle`]: a [`CloseSender`] for a task that takes nothing else, or the
//! driver's own channel where the close must stay in order with other requests.

use super::{Done, LinkError};
use crate::driver::{DeviceState, DriverError, StatusSink};
use std::future::Future;
use std::time::Duration;
use tokio::sync::{oneshot, watch};

/// How long a new task waits for the previous one to finish before it opens the port.
const PREVIOUS_BEFORE_START: Duration = Duration::from_secs(5);
/// How long a close waits for the task's acknowledgement.
const CLOSE_ACK: Duration = Duration::from_secs(3);
/// How long a close then waits for the task to have ended.
const PREVIOUS_AFTER_CLOSE: Duration = Duration::from_secs(3);

/// Where a link task is, as it reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    /// Opening for the first time; setup waits.
    Connecting,
    /// The device answers.
    Up,
    /// It was up, was lost, and is being reopened with backoff.
    Reconnecting,
    /// The first opening failed (why); the task has ended.
    Failed(LinkError),
}

/// The acknowledgement a link task sends once it has closed.
pub type CloseAck = oneshot::Sender<()>;

/// A task's end of a [`close_channel`]: resolves with the acknowledgement to send once the
/// task has closed (or with an error if the driver dropped the link without asking).
pub type CloseReceiver = oneshot::Receiver<CloseAck>;

/// What a driver keeps of a running link task besides its state: at least the way to ask
/// the task to close. A closed link's handle is dropped only after the wait for the
/// acknowledgement, so the task never sees its other channels end before the request.
pub trait LinkHandle {
    /// Asks the task to close, handing it `ack` to send once it has; false if the task can
    /// no longer be asked (it has ended).
    fn request_close(&mut self, ack: CloseAck) -> bool;
}

/// The driver's end of a [`close_channel`], for a task that takes nothing but the request
/// to close.
pub struct CloseSender(Option<oneshot::Sender<CloseAck>>);

/// A channel that carries one request to close.
pub fn close_channel() -> (CloseSender, CloseReceiver) {
    let (tx, rx) = oneshot::channel();
    (CloseSender(Some(tx)), rx)
}

impl LinkHandle for CloseSender {
    fn request_close(&mut self, ack: CloseAck) -> bool {
        self.0.take().is_some_and(|close| close.send(ack).is_ok())
    }
}

/// Forwards a link's state changes to the registry until the link task ends. The first
/// `Up` is not reported (setup's answer says it); a loss and every recovery after it are.
async fn forward_states(
    mut state: watch::Receiver<LinkState>,
    sink: StatusSink,
    devices: Vec<u8>,
    name: &'static str,
) {
    let mut was_lost = false;
    while state.changed().await.is_ok() {
        let now = state.borrow_and_update().clone();
        match now {
            LinkState::Up if was_lost => {
                was_lost = false;
                sink.report(
                    &devices,
                    DeviceState::Up,
                    &format!("{name} link is up again"),
                );
            }
            LinkState::Reconnecting => {
                was_lost = true;
                sink.report(
                    &devices,
                    DeviceState::Reconnecting,
                    &format!("{name} link lost; reconnecting"),
                );
            }
            LinkState::Failed(why) => {
                sink.report(&devices, DeviceState::Failed, &format!("{name}: {why}"));
            }
            LinkState::Up | LinkState::Connecting => {}
        }
    }
}

struct Running<H> {
    handle: H,
    state: watch::Receiver<LinkState>,
}

/// A driver's link: the running task's handle and state, if any, and the end of the task
/// before it, which a new task and a close both wait for.
pub struct LinkSupervisor<H = CloseSender> {
    name: &'static str,
    link: Option<Running<H>>,
    previous: Option<Done>,
    status: Option<(StatusSink, Vec<u8>)>,
}

impl<H: LinkHandle + 'static> LinkSupervisor<H> {
    /// No link yet. `name` names the link in the setup error when the task ends before it
    /// reports ("the `name` link ended during setup").
    pub fn new(name: &'static str) -> Self {
        LinkSupervisor {
            name,
            link: None,
            previous: None,
            status: None,
        }
    }

    /// Reports each later link's state changes (lost, reconnecting, up again) for
    /// `devices` to `sink` (the registry, which tells clients and the device list).
    pub fn report_to(mut self, sink: StatusSink, devices: Vec<u8>) -> Self {
        self.status = Some((sink, devices));
        self
    }

    /// Whether a link is held (started and neither closed nor abandoned).
    pub fn is_running(&self) -> bool {
        self.link.is_some()
    }

    /// The running link's handle.
    pub fn handle(&self) -> Option<&H> {
        self.link.as_ref().map(|l| &l.handle)
    }

    /// The running link's state as last reported.
    pub fn state(&self) -> Option<watch::Ref<'_, LinkState>> {
        self.link.as_ref().map(|l| l.state.borrow())
    }

    /// Starts a link task on the current arbiter: `task` is given the sender of its state
    /// (at first [`LinkState::Connecting`]), and runs once the previous task has ended (at
    /// most 5 s). `handle` is kept until the link is closed or abandoned; a link still held
    /// is dropped. Call it from the actor's context.
    pub fn start<F>(&mut self, handle: H, task: impl FnOnce(watch::Sender<LinkState>) -> F)
    where
        F: Future<Output = ()> + 'static,
    {
        let (state_tx, state_rx) = watch::channel(LinkState::Connecting);
        if let Some((sink, devices)) = self.status.clone() {
            actix::spawn(forward_states(state_rx.clone(), sink, devices, self.name));
        }
        let task = task(state_tx);
        let previous = self.previous.take();
        let (guard, done) = Done::new();
        actix::spawn(async move {
            if let Some(p) = previous {
                p.wait(PREVIOUS_BEFORE_START).await;
            }
            task.await;
            drop(guard);
        });
        self.previous = Some(done);
        self.link = Some(Running {
            handle,
            state: state_rx,
        });
    }

    /// Resolves when the running link is up (or reconnecting: it has been up), or with the
    /// error it failed with, or with "the `name` link ended during setup" if the task ended
    /// without saying (or no link is held).
    pub fn wait_ready(&self) -> impl Future<Output = Result<(), DriverError>> {
        let state = self.link.as_ref().map(|l| l.state.clone());
        let ended = format!("the {} link ended during setup", self.name);
        async move {
            let Some(mut state) = state else {
                return Err(DriverError::link(ended));
            };
            loop {
                match &*state.borrow_and_update() {
                    LinkState::Up | LinkState::Reconnecting => return Ok(()),
                    LinkState::Failed(e) => return Err(DriverError::from(e.clone())),
                    LinkState::Connecting => {}
                }
                if state.changed().await.is_err() {
                    return Err(DriverError::link(ended));
                }
            }
        }
    }

    /// Drops the running link without asking it to close (after a failed setup: the task
    /// has ended, or ends when it finds its channels closed).
    pub fn abandon(&mut self) {
        self.link = None;
    }

    /// Asks the running link to close and resolves when it has acknowledged (at most 3 s)
    /// and the last task started has ended (at most 3 s more). With no link held, only
    /// waits for the last task.
    pub fn close(&mut self) -> impl Future<Output = ()> {
        let link = self.link.take();
        let previous = self.previous.clone();
        async move {
            if let Some(mut link) = link {
                let (tx, rx) = oneshot::channel();
                if link.handle.request_close(tx) {
                    let _ = tokio::time::timeout(CLOSE_ACK, rx).await;
                }
            }
            if let Some(p) = previous {
                p.wait(PREVIOUS_AFTER_CLOSE).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::pin::Pin;
    use std::rc::Rc;

    type Log = Rc<RefCell<Vec<String>>>;

    /// A task that reports `states` in turn, then waits for its close request (or for the
    /// driver to drop it) and takes 20 ms to close; it logs when it starts and ends.
    fn task(
        name: &'static str,
        states: Vec<LinkState>,
        close: CloseReceiver,
        log: &Log,
    ) -> impl FnOnce(watch::Sender<LinkState>) -> Pin<Box<dyn Future<Output = ()>>> {
        let log = log.clone();
        move |tx| {
            Box::pin(async move {
                log.borrow_mut().push(format!("{name} started"));
                for s in states {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    let _ = tx.send(s);
                }
                let ack = close.await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                log.borrow_mut().push(format!("{name} closed"));
                if let Ok(ack) = ack {
                    let _ = ack.send(());
                }
            })
        }
    }

    #[test]
    fn setup_waits_for_up_and_close_waits_for_the_ack() {
        actix_rt::System::new().block_on(async {
            let log = Log::default();
            let mut link = LinkSupervisor::new("test");
            let (close, rx) = close_channel();
            let states = vec![LinkState::Connecting, LinkState::Up];
            link.start(close, task("first", states, rx, &log));
            assert_eq!(link.wait_ready().await, Ok(()));
            assert_eq!(link.state().map(|s| s.clone()), Some(LinkState::Up));
            link.close().await;
            assert!(!link.is_running());
            assert_eq!(*log.borrow(), ["first started", "first closed"]);
        });
    }

    #[test]
    fn setup_fails_with_the_reason_or_when_the_task_ends() {
        actix_rt::System::new().block_on(async {
            let log = Log::default();
            let mut link = LinkSupervisor::new("test");
            let (close, rx) = close_channel();
            let why = LinkError::timeout("/dev/x", "no answer on /dev/x");
            link.start(close, task("first", vec![LinkState::Failed(why)], rx, &log));
            let e = link.wait_ready().await.unwrap_err();
            assert_eq!(e, DriverError::timeout("no answer on /dev/x"));
            link.abandon();
            assert!(!link.is_running());
            let ended = DriverError::link("the test link ended during setup");
            assert_eq!(link.wait_ready().await.unwrap_err(), ended);
            let (close, _) = close_channel();
            link.start(close, |_state| async {});
            assert_eq!(link.wait_ready().await.unwrap_err(), ended);
        });
    }

    #[test]
    fn a_new_link_starts_only_after_the_previous_task_has_ended() {
        actix_rt::System::new().block_on(async {
            let log = Log::default();
            let mut link = LinkSupervisor::new("test");
            let (close, rx) = close_channel();
            link.start(close, task("first", vec![LinkState::Up], rx, &log));
            link.wait_ready().await.unwrap();
            // Abandoned, not closed: the first task is still closing when the second is
            // started.
            link.abandon();
            let (close, rx) = close_channel();
            link.start(close, task("second", vec![LinkState::Up], rx, &log));
            link.wait_ready().await.unwrap();
            link.close().await;
            let want = [
                "first started",
                "first closed",
                "second started",
                "second closed",
            ];
            assert_eq!(*log.borrow(), want);
        });
    }
}
