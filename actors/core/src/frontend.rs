//! The front-end kit: what a front end (the web viewer, the recorder, the Zenoh bridge, the
//! ROS 2 front end, ...) is given and how it is attached to a running server, the
//! counterpart of the driver kit (`player_kit`).
//!
//! A front end is a subscriber of the robots' registries like a TCP client's session. The
//! server starts the robots ([`crate::server::Server::start`]) and hands out a
//! [`FrontEndContext`]: one [`RobotHandle`] per robot, the session threads, the session id
//! allocator, the access policy and the server settings a front end obeys. Each front-end
//! crate describes itself as a [`FrontEndKind`] (its settings, flags, checks, summary line);
//! its `start` takes its own settings and this context and returns a [`FrontEnd`], which
//! the binary [attaches](crate::server::Server::attach); the server stops it at shutdown,
//! after the TCP listeners and before the devices shut down.
//!
//! [`Holdings`] is the bookkeeping every front end needs to hold devices at a registry:
//! the access wanted per device, the `Subscribe`/`Unsubscribe` sent when it changes
//! ([`Holdings::want_in`], which hands the front end the registry's reply only while no
//! later change has superseded its request), and leaving. Its pure part is [`Wants`]. A front end that serves several robots with one
//! actor tells them apart through a [`tap::RobotTap`] per robot.

pub mod bridge;
pub mod kind;
pub mod tap;

pub use kind::{FrontEndKind, ListenPort};

use crate::access::{AccessSettings, Policy};
use crate::registry::{Disconnect, Grant, Registry, SessionId, Subscribe, Unsubscribe};
use crate::settings::ServerSettings;
use actix::prelude::*;
use futures::future::LocalBoxFuture;
use player_kit::driver::{DataRecipient, DeviceData, DeviceError, DeviceSpec};
use slog::Logger;
use std::any::Any;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Numbers the sessions of every registry of the server: the TCP listeners', the front
/// ends' and the drivers' own sources share it, so an id is never used twice.
#[derive(Debug, Clone)]
pub struct SessionIds(Arc<AtomicU64>);

impl SessionIds {
    /// A fresh allocator (the first id is 1).
    pub fn new() -> Self {
        SessionIds(Arc::new(AtomicU64::new(1)))
    }

    /// The next unused id.
    pub fn next(&self) -> SessionId {
        SessionId::next(&self.0)
    }
}

impl Default for SessionIds {
    fn default() -> Self {
        Self::new()
    }
}

/// One robot of the server as a front end sees it.
#[derive(Clone)]
pub struct RobotHandle {
    /// Its name (from the configuration).
    pub name: String,
    /// Its place in the configuration (0 for the first robot).
    pub index: usize,
    /// The address its TCP port listens on (`bind`).
    pub bind: String,
    /// Its registry.
    pub registry: Addr<Registry>,
    /// Its devices (command watchdog as configured) and the name of the driver behind
    /// each, in the configuration's driver order.
    pub devices: Vec<(DeviceSpec, String)>,
}

impl RobotHandle {
    /// The robot's device codes.
    pub fn codes(&self) -> Vec<u8> {
        self.devices.iter().map(|(s, _)| s.code).collect()
    }
}

/// What every front end is given.
#[derive(Clone)]
pub struct FrontEndContext {
    /// The robots, in configuration order.
    pub robots: Vec<RobotHandle>,
    /// The session threads (the first is the drivers' thread), for a front end's own
    /// sessions.
    pub workers: Vec<ArbiterHandle>,
    /// Session ids, shared with the TCP listeners.
    pub ids: SessionIds,
    /// Who may connect, read and command (the TCP listeners' policy).
    pub policy: Arc<Policy>,
    /// The `[access]` section the policy was made from (the shared key, ...).
    pub access: AccessSettings,
    /// The `[server]` section (`stall_timeout`, `max_clients`, `listen_backlog`, ...).
    pub server: ServerSettings,
    /// The directory relative paths of the configuration are resolved against.
    pub base_dir: PathBuf,
    /// The server's logger.
    pub log: Logger,
}

/// A running front end, attached to the server that stops it.
pub trait FrontEnd {
    /// Its name, for logs and errors (`"web"`, `"record"`, `"zenoh"`, `"ros2"`).
    fn name(&self) -> &str;

    /// Stops it: its sessions leave their registries (a device it commanded stops), its
    /// sockets and files close. Called once, at shutdown.
    fn stop(self: Box<Self>) -> LocalBoxFuture<'static, ()>;

    /// The access policy was reloaded (SIGHUP; the shared [`Policy`] holds the new rules):
    /// re-check what each of its clients may do, by the rule the TCP sessions follow (one
    /// no longer admitted is closed with the reason, one whose write rights changed gets
    /// them changed). Returns how many clients were told. The default: a front end whose
    /// clients have no rights of their own to re-check.
    fn recheck(&self) -> usize {
        0
    }

    /// Itself, so the binary and tests can ask a front end of a known type for what only
    /// it knows (the web viewer's addresses, the Zenoh session's id).
    fn as_any(&self) -> &dyn Any;
}

/// Read and write access to one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// The device's data is wanted.
    pub read: bool,
    /// Commands are to be sent to it.
    pub write: bool,
}

impl Access {
    /// `read` and `write` as given.
    pub fn new(read: bool, write: bool) -> Self {
        Access { read, write }
    }

    /// Whether anything at all is wanted.
    pub fn any(self) -> bool {
        self.read || self.write
    }
}

/// One `Subscribe` request: which device and which of the requests for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket {
    /// The device code.
    pub code: u8,
    n: u64,
}

/// What to tell the registry after a change of the access wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Ask for this access (`Subscribe`); the reply carries the ticket.
    Ask(Access, Ticket),
    /// Nothing is wanted any more (`Unsubscribe`).
    Release,
}

/// The access wanted per device and the newest request for each: the pure part of
/// [`Holdings`].
#[derive(Debug, Default)]
pub struct Wants {
    /// Per device held (or asked for): the access and the newest request's number.
    held: HashMap<u8, (Access, u64)>,
    next: u64,
    /// Per device read: the newest reading taken ([`player_kit::fresh`]).
    taken: HashMap<u8, player_kit::fresh::SeqGate>,
}

impl Wants {
    /// Nothing wanted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wants `access` to `code` from now on: what to tell the registry, or `None` when that
    /// is what is held (or asked for) already.
    pub fn want(&mut self, code: u8, access: Access) -> Option<Step> {
        if !access.any() {
            return self.held.remove(&code).map(|_| Step::Release);
        }
        if self.held.get(&code).is_some_and(|(a, _)| *a == access) {
            return None;
        }
        self.next += 1;
        self.held.insert(code, (access, self.next));
        Some(Step::Ask(access, Ticket { code, n: self.next }))
    }

    /// The reply to `ticket` came: `granted` or not. Returns false when a later change
    /// superseded the request (the reply is to be dropped). A refusal of the current
    /// request leaves nothing held, so the next [`Wants::want`] asks again.
    pub fn settle(&mut self, ticket: Ticket, granted: bool) -> bool {
        match self.held.get(&ticket.code) {
            Some(&(_, n)) if n == ticket.n => {
                if !granted {
                    self.held.remove(&ticket.code);
                }
                true
            }
            _ => false,
        }
    }

    /// The access held (or asked for) to `code`.
    pub fn held(&self, code: u8) -> Option<Access> {
        self.held.get(&code).map(|(a, _)| *a)
    }

    /// Whether `code`'s data is wanted (its readings are to be taken).
    pub fn reads(&self, code: u8) -> bool {
        self.held(code).is_some_and(|a| a.read)
    }

    /// Whether `reading` of `code` is to be taken: the device is read and the reading is
    /// new by the kit's one rule ([`player_kit::fresh`]: newer than the last one taken, or
    /// of a driver that numbers afresh; the registry sends a new reader the newest reading,
    /// which it may have had already).
    pub fn take(&mut self, code: u8, reading: player_kit::fresh::Stamp) -> bool {
        if !self.reads(code) {
            return false;
        }
        self.taken.entry(code).or_default().take(reading).is_some()
    }

    /// Forgets everything (the session left the registry), the readings taken too.
    pub fn clear(&mut self) {
        self.held.clear();
        self.taken.clear();
    }
}

/// What [`Holdings::want_in`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing: that access is held or asked for already.
    Same,
    /// `Unsubscribe` was sent.
    Released,
    /// `Subscribe` was sent; its reply goes to the front end unless a later change
    /// supersedes it.
    Asked,
}

/// A front end's session at one registry: the devices it holds, kept in line with the
/// access it wants ([`Wants`]), replies of superseded requests told apart.
pub struct Holdings {
    registry: Addr<Registry>,
    session: SessionId,
    client: String,
    wants: Wants,
}

impl Holdings {
    /// Holds nothing yet at `registry` as `session`; `client` names it in the registry's
    /// log lines.
    pub fn new(registry: Addr<Registry>, session: SessionId, client: impl Into<String>) -> Self {
        Holdings {
            registry,
            session,
            client: client.into(),
            wants: Wants::new(),
        }
    }

    /// The session id.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// The registry.
    pub fn registry(&self) -> &Addr<Registry> {
        &self.registry
    }

    /// Wants `access` to `code` from now on and tells the registry if that changes what is
    /// held; `recipient` (called only when asking) is where the data goes.
    ///
    /// When it asks (`Subscribe`), the registry's reply comes back on the actor `A`
    /// whose context is `ctx`: `holdings` finds these holdings in it again (the reply is
    /// settled there, [`Wants::settle`]), and `then` gets the reply only if no later
    /// change superseded the request: the grant, or why not (a registry that has stopped
    /// answers [`DeviceError::RegistryStopped`]). A refusal leaves nothing held, so the
    /// next call asks again.
    pub fn want_in<A>(
        &mut self,
        ctx: &mut Context<A>,
        code: u8,
        access: Access,
        recipient: impl FnOnce() -> DataRecipient,
        holdings: impl FnOnce(&mut A) -> Option<&mut Holdings> + 'static,
        then: impl FnOnce(&mut A, Result<Grant, DeviceError>, &mut Context<A>) + 'static,
    ) -> Change
    where
        A: Actor<Context = Context<A>>,
    {
        let (access, ticket) = match self.wants.want(code, access) {
            None => return Change::Same,
            Some(Step::Release) => {
                self.registry.do_send(Unsubscribe {
                    session: self.session,
                    device: code,
                });
                return Change::Released;
            }
            Some(Step::Ask(access, ticket)) => (access, ticket),
        };
        let reply = self.registry.send(Subscribe {
            session: self.session,
            device: code,
            read: access.read,
            write: access.write,
            recipient: recipient(),
            client: self.client.as_str().into(),
        });
        ctx.spawn(fut::wrap_future::<_, A>(reply).map(move |r, act, ctx| {
            let granted = r.unwrap_or(Err(DeviceError::RegistryStopped));
            let current = holdings(act).is_some_and(|h| h.wants.settle(ticket, granted.is_ok()));
            if current {
                then(act, granted, ctx);
            }
        }));
        Change::Asked
    }

    /// The access held (or asked for) to `code`.
    pub fn held(&self, code: u8) -> Option<Access> {
        self.wants.held(code)
    }

    /// Whether `code`'s readings are wanted.
    pub fn reads(&self, code: u8) -> bool {
        self.wants.reads(code)
    }

    /// Whether reading `d` is to be taken (see [`Wants::take`]).
    pub fn take(&mut self, d: &DeviceData) -> bool {
        self.wants.take(d.device, d.stamp())
    }

    /// Leaves the registry (`Disconnect`: every device held is released, a device this
    /// session commanded is stopped) and forgets every holding.
    pub fn leave(&mut self) {
        self.registry.do_send(Disconnect {
            session: self.session,
        });
        self.wants.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: Access = Access {
        read: true,
        write: false,
    };
    const RW: Access = Access {
        read: true,
        write: true,
    };
    const NONE: Access = Access {
        read: false,
        write: false,
    };

    fn ask(step: Option<Step>) -> Ticket {
        match step {
            Some(Step::Ask(_, t)) => t,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    #[test]
    fn asking_for_what_is_held_sends_nothing() {
        let mut w = Wants::new();
        let t = ask(w.want(b'p', R));
        assert_eq!(w.want(b'p', R), None, "asked already, reply pending");
        assert!(w.settle(t, true));
        assert_eq!(w.want(b'p', R), None);
        assert_eq!(w.held(b'p'), Some(R));
        assert!(w.reads(b'p'));
    }

    #[test]
    fn wanting_nothing_releases_only_what_is_held() {
        let mut w = Wants::new();
        assert_eq!(w.want(b'p', NONE), None, "never held: nothing to release");
        ask(w.want(b'p', RW));
        assert_eq!(w.want(b'p', NONE), Some(Step::Release));
        assert_eq!(w.held(b'p'), None);
        assert_eq!(w.want(b'p', NONE), None);
    }

    #[test]
    fn a_reply_to_a_superseded_request_is_dropped() {
        let mut w = Wants::new();
        let first = ask(w.want(b'p', R));
        let second = ask(w.want(b'p', RW));
        assert!(!w.settle(first, true), "superseded by the write request");
        assert!(!w.settle(first, false), "a late refusal changes nothing");
        assert_eq!(w.held(b'p'), Some(RW));
        assert!(w.settle(second, true));
    }

    #[test]
    fn a_reply_after_release_and_ask_again_is_told_from_the_new_one() {
        // Same access asked twice with a release between: only the newest reply counts.
        let mut w = Wants::new();
        let first = ask(w.want(b'l', R));
        assert_eq!(w.want(b'l', NONE), Some(Step::Release));
        let again = ask(w.want(b'l', R));
        assert!(!w.settle(first, false));
        assert_eq!(
            w.held(b'l'),
            Some(R),
            "the old refusal did not drop the new ask"
        );
        assert!(w.settle(again, true));
    }

    #[test]
    fn a_refusal_leaves_nothing_held_so_the_next_want_asks_again() {
        let mut w = Wants::new();
        let t = ask(w.want(b'z', RW));
        assert!(w.settle(t, false));
        assert_eq!(w.held(b'z'), None);
        assert!(!w.reads(b'z'));
        ask(w.want(b'z', RW));
    }

    /// Reading number `seq`, taken at second `sec`.
    fn r(seq: u64, sec: u32) -> player_kit::fresh::Stamp {
        player_kit::fresh::Stamp { seq, at: (sec, 0) }
    }

    #[test]
    fn readings_are_taken_once_in_order_and_only_while_read() {
        let mut w = Wants::new();
        assert!(!w.take(b'l', r(1, 1)), "not held");
        let t = ask(w.want(b'l', R));
        assert!(
            w.take(b'l', r(1, 1)),
            "asked for: readings may come before the reply"
        );
        assert!(w.settle(t, true));
        assert!(!w.take(b'l', r(1, 1)), "the same reading again");
        assert!(w.take(b'l', r(3, 3)));
        assert!(!w.take(b'l', r(2, 2)), "older than the last taken");
        ask(w.want(b'l', Access::new(false, true)));
        assert!(!w.take(b'l', r(4, 4)), "held for writing only");
        ask(w.want(b'l', R));
        assert!(!w.take(b'l', r(3, 3)), "taken before the change");
        assert!(w.take(b'l', r(5, 5)));
    }

    #[test]
    fn a_driver_that_numbers_afresh_is_taken_at_once() {
        let mut w = Wants::new();
        let t = ask(w.want(b'l', R));
        assert!(w.settle(t, true));
        assert!(w.take(b'l', r(900, 10)));
        assert!(w.take(b'l', r(1, 11)), "numbered afresh, taken later");
        assert!(w.take(b'l', r(2, 12)));
        assert!(
            !w.take(b'l', r(1, 11)),
            "the new numbering's own older reading"
        );
    }

    #[test]
    fn after_clear_the_newest_reading_is_taken_again() {
        let mut w = Wants::new();
        let t = ask(w.want(b'l', R));
        assert!(w.settle(t, true));
        assert!(w.take(b'l', r(7, 7)));
        w.clear();
        // Back at the registry: it sends the newest reading, which was taken before.
        let t = ask(w.want(b'l', R));
        assert!(w.settle(t, true));
        assert!(w.take(b'l', r(7, 7)));
    }

    #[test]
    fn devices_are_held_independently_and_clear_forgets_all() {
        let mut w = Wants::new();
        let p = ask(w.want(b'p', R));
        let s = ask(w.want(b's', RW));
        assert!(w.settle(s, true));
        assert!(w.settle(p, true));
        assert_eq!((w.held(b'p'), w.held(b's')), (Some(R), Some(RW)));
        w.clear();
        assert_eq!((w.held(b'p'), w.held(b's')), (None, None));
        assert!(!w.settle(s, true), "nothing held after clear");
    }

    // ----- Holdings::want_in against a real registry ------------------------------------

    use player_kit::driver::{
        Command, Config, DataRecipient, DeviceData, DeviceDataBatch, DeviceSpec, DriverError,
        DriverHandle, Setup, Shutdown, Stop, Subscribers, Terminate,
    };
    use std::time::Duration;

    /// A driver whose devices set up at once and ignore what they are sent.
    struct Toy;

    impl Actor for Toy {
        type Context = Context<Self>;
    }

    macro_rules! ignores {
        ($($m:ty),*) => {$(
            impl Handler<$m> for Toy {
                type Result = ();

                fn handle(&mut self, _: $m, _: &mut Self::Context) {}
            }
        )*};
    }

    ignores!(Shutdown, Command, Config, Stop, Subscribers, Terminate);

    impl Handler<Setup> for Toy {
        type Result = Result<(), DriverError>;

        fn handle(&mut self, _: Setup, _: &mut Self::Context) -> Self::Result {
            Ok(())
        }
    }

    /// A registry with one device, `p`, which takes commands of 4 bytes.
    fn registry() -> Registry {
        let log = Logger::root(slog::Discard, slog::o!());
        let mut r = Registry::new("toy", Duration::from_secs(2), log);
        let toy = Toy.start();
        r.add_driver(
            "toy",
            DriverHandle::of(&toy),
            &[DeviceSpec::read_write(b'p', 4)],
        )
        .unwrap();
        r
    }

    /// A front end holding devices at one registry: the replies it was handed, and how
    /// many replies came at all (superseded or not).
    struct Front {
        holdings: Holdings,
        replies: Vec<(u8, Result<bool, String>)>,
        came: usize,
    }

    impl Actor for Front {
        type Context = Context<Self>;
    }

    impl Handler<DeviceData> for Front {
        type Result = ();

        fn handle(&mut self, _: DeviceData, _: &mut Self::Context) {}
    }

    impl Handler<DeviceDataBatch> for Front {
        type Result = ();

        fn handle(&mut self, _: DeviceDataBatch, _: &mut Self::Context) {}
    }

    /// Wants these accesses, one after the other in one turn of the actor (so no reply is
    /// handled between them); answers what each changed.
    #[derive(Message)]
    #[rtype(result = "Vec<Change>")]
    struct WantIt(Vec<(u8, Access)>);

    impl Handler<WantIt> for Front {
        type Result = MessageResult<WantIt>;

        fn handle(&mut self, WantIt(wants): WantIt, ctx: &mut Self::Context) -> Self::Result {
            let me = ctx.address();
            let mut changes = Vec::new();
            for (code, access) in wants {
                changes.push(self.holdings.want_in(
                    ctx,
                    code,
                    access,
                    || DataRecipient::of(&me),
                    |f: &mut Front| {
                        f.came += 1;
                        Some(&mut f.holdings)
                    },
                    move |f, granted, _| {
                        let r = granted
                            .map(|g| g.command.is_some())
                            .map_err(|e| e.to_string());
                        f.replies.push((code, r));
                    },
                ));
            }
            MessageResult(changes)
        }
    }

    /// The replies handed over once `came` replies have come, and what is held of `p`.
    #[derive(Message)]
    #[rtype(result = "Option<(Vec<(u8, Result<bool, String>)>, Option<Access>)>")]
    struct After(usize);

    impl Handler<After> for Front {
        type Result = MessageResult<After>;

        fn handle(&mut self, After(n): After, _: &mut Self::Context) -> Self::Result {
            MessageResult(
                (self.came >= n).then(|| (self.replies.clone(), self.holdings.held(b'p'))),
            )
        }
    }

    fn front(registry: Addr<Registry>) -> Addr<Front> {
        Front {
            holdings: Holdings::new(registry, SessionIds::new().next(), "test"),
            replies: Vec::new(),
            came: 0,
        }
        .start()
    }

    /// What `front` was handed once `n` replies have come (within 5 s).
    async fn after(
        front: &Addr<Front>,
        n: usize,
    ) -> (Vec<(u8, Result<bool, String>)>, Option<Access>) {
        for _ in 0..1000 {
            if let Some(seen) = front.send(After(n)).await.unwrap() {
                return seen;
            }
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("{n} replies did not come");
    }

    #[actix_rt::test]
    async fn only_the_reply_to_the_newest_request_reaches_the_front_end() {
        let f = front(registry().start());
        let changes = f.send(WantIt(vec![(b'p', R), (b'p', RW)])).await.unwrap();
        assert_eq!(changes, vec![Change::Asked, Change::Asked]);
        let (replies, held) = after(&f, 2).await;
        assert_eq!(
            replies,
            vec![(b'p', Ok(true))],
            "the read-only grant was superseded"
        );
        assert_eq!(held, Some(RW));
    }

    #[actix_rt::test]
    async fn a_release_supersedes_the_pending_request_and_what_is_held_asks_nothing() {
        let f = front(registry().start());
        let wants = vec![(b'p', R), (b'p', R), (b'p', NONE), (b'p', NONE)];
        let changes = f.send(WantIt(wants)).await.unwrap();
        use Change::*;
        assert_eq!(changes, vec![Asked, Same, Released, Same]);
        let (replies, held) = after(&f, 1).await;
        assert_eq!(replies, vec![], "the grant came after the release");
        assert_eq!(held, None);
    }

    #[actix_rt::test]
    async fn a_refusal_reaches_the_front_end_and_the_next_want_asks_again() {
        let f = front(registry().start());
        let ask = || f.send(WantIt(vec![(b'z', R)]));
        assert_eq!(ask().await.unwrap(), vec![Change::Asked]);
        let (replies, _) = after(&f, 1).await;
        assert_eq!(
            replies,
            vec![(b'z', Err("no device 'z' on this robot".into()))]
        );
        assert_eq!(ask().await.unwrap(), vec![Change::Asked]);
    }

    #[actix_rt::test]
    async fn a_registry_that_has_stopped_answers_registry_stopped() {
        let arbiter = Arbiter::new();
        let r = Registry::start_in_arbiter(&arbiter.handle(), |_| registry());
        arbiter.stop();
        for _ in 0..1000 {
            if !r.connected() {
                break;
            }
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        }
        let f = front(r);
        let changes = f.send(WantIt(vec![(b'p', RW)])).await.unwrap();
        assert_eq!(changes, vec![Change::Asked]);
        let (replies, held) = after(&f, 1).await;
        let stopped = DeviceError::RegistryStopped.to_string();
        assert_eq!(replies, vec![(b'p', Err(stopped))]);
        assert_eq!(held, None, "a failed request leaves nothing held");
    }
}
