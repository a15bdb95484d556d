//! What every link-backed driver shares, written once: the reconnect loop its link task runs
//! ([`run_link`] over a [`Link`]), and the actor's message handlers ([`LinkDriver`] plus
//! [`link_driver_handlers!`](crate::link_driver_handlers)), so a driver implements only
//! what is its own (opening and serving its device, its commands and configs).

use super::{
    Backoff, CloseAck, CloseReceiver, CloseSender, LinkError, LinkHandle, LinkState,
    LinkSupervisor, Request, RequestSender,
};
use crate::catalog::DriverContext;
use crate::driver::{Command, Config, DriverError, Publisher, Stop};
use actix::prelude::*;
use slog::{debug, info, warn, Logger};
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use tokio::sync::watch;

/// How a served connection ended.
#[derive(Debug)]
pub enum Ended {
    /// Closed on request (the serve loop acknowledged it); the task ends.
    Closed,
    /// Lost (silence, I/O error, the peer went away), with why; the loop reconnects, or,
    /// if the link was never up, reports the failure and ends.
    Lost(LinkError),
}

impl Ended {
    /// A close request served: sends the acknowledgement `ack` (if the driver still waits
    /// for it) and returns [`Ended::Closed`].
    pub fn acknowledged(ack: Result<CloseAck, tokio::sync::oneshot::error::RecvError>) -> Ended {
        if let Ok(ack) = ack {
            let _ = ack.send(());
        }
        Ended::Closed
    }
}

/// The way a link task hears that it must close, while it is connecting or waiting out a
/// backoff (a served connection watches it itself, to leave the device in a safe state
/// before acknowledging).
pub trait Closer {
    /// Resolves when the driver asks the task to close, with the acknowledgement to send
    /// once it has (`None` if the driver went away without asking). Must be cancel-safe:
    /// it is raced against connecting and sleeping.
    fn closed(&mut self) -> impl Future<Output = Option<CloseAck>>;
}

impl Closer for CloseReceiver {
    async fn closed(&mut self) -> Option<CloseAck> {
        self.await.ok()
    }
}

/// The link task's view of the link being up: [`LinkUp::mark`] it once the device
/// answers (after publishing the first reading, if the device gave one while connecting).
pub struct LinkUp<'a> {
    state: &'a watch::Sender<LinkState>,
    ever_up: &'a mut bool,
}

impl LinkUp<'_> {
    /// Reports the link up (setup waits for this).
    pub fn mark(&mut self) {
        let _ = self.state.send(LinkState::Up);
        *self.ever_up = true;
    }

    /// Whether the link has been up since the task started.
    pub fn ever_up(&self) -> bool {
        *self.ever_up
    }
}

/// One device link (a serial port, a socket) as the shared reconnect loop drives it.
pub trait Link {
    /// An open connection.
    type Conn;
    /// How the task hears it must close.
    type Close: Closer;
    /// The link's name in log lines ("laser": "laser link lost; reopening with backoff").
    const NAME: &'static str;

    /// The task's logger.
    fn log(&self) -> &Logger;

    /// Opens the device (`ever_up`: whether it has been up before, for a shorter patience
    /// on reconnects); the error says why it could not.
    fn connect(&self, ever_up: bool) -> impl Future<Output = Result<Self::Conn, LinkError>>;

    /// Serves an open connection until it is lost or `close` asks it to close (then it
    /// leaves the device in a safe state, acknowledges and returns [`Ended::Closed`]).
    /// Marks `up` once the device answers.
    fn serve(
        &mut self,
        conn: Self::Conn,
        close: &mut Self::Close,
        up: LinkUp<'_>,
    ) -> impl Future<Output = Ended>;

    /// Runs once when the task ends for good (closed, or failed before ever being up),
    /// before a close is acknowledged: stop a helper process, say goodbye. Default: nothing.
    fn finish(&mut self) -> impl Future<Output = ()> {
        async {}
    }
}

/// The reconnect loop every link task runs: connect (a close request wins), serve until
/// lost, report [`LinkState::Reconnecting`] and reopen with backoff. A link that fails
/// before it was ever up reports [`LinkState::Failed`] and ends (the setup that waited
/// gets the error). The whole backoff is slept whatever arrives, so a flood of requests
/// cannot turn it into a busy loop of reconnects.
pub async fn run_link<L: Link>(mut link: L, mut close: L::Close, state: watch::Sender<LinkState>) {
    let mut backoff = Backoff::default();
    let mut ever_up = false;
    // The reason of the last reconnect failure logged: each new reason is logged once (a
    // sensor that is back but answers wrongly says so), a repeated one only at debug.
    let mut last_failure: Option<String> = None;
    loop {
        let result = tokio::select! {
            r = link.connect(ever_up) => r,
            ack = close.closed() => return finish(&mut link, ack).await,
        };
        match result {
            Ok(conn) => {
                let up = LinkUp {
                    state: &state,
                    ever_up: &mut ever_up,
                };
                last_failure = None;
                match link.serve(conn, &mut close, up).await {
                    Ended::Closed => return link.finish().await,
                    Ended::Lost(why) if ever_up => {
                        backoff.reset();
                        warn!(link.log(), "{} link lost; reopening with backoff", L::NAME; "why" => %why);
                        let _ = state.send(LinkState::Reconnecting);
                    }
                    Ended::Lost(why) => return fail(&mut link, &state, why).await,
                }
            }
            Err(e) if !ever_up => return fail(&mut link, &state, e).await,
            Err(e) if last_failure.as_deref() == Some(e.text.as_str()) => {
                debug!(link.log(), "{} reconnect failed", L::NAME; "error" => %e)
            }
            Err(e) => {
                info!(link.log(), "{} reconnect failed; retrying with backoff", L::NAME; "error" => %e);
                last_failure = Some(e.text);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff.next_delay()) => {}
            ack = close.closed() => return finish(&mut link, ack).await,
        }
    }
}

async fn fail<L: Link>(link: &mut L, state: &watch::Sender<LinkState>, why: LinkError) {
    warn!(link.log(), "{} setup failed", L::NAME; "error" => %why);
    link.finish().await;
    let _ = state.send(LinkState::Failed(why));
}

async fn finish<L: Link>(link: &mut L, ack: Option<CloseAck>) {
    link.finish().await;
    if let Some(ack) = ack {
        let _ = ack.send(());
    }
}

/// What every [`LinkDriver`] holds for the shared handlers: its link's supervisor, the
/// publisher of its readings, its logger, the devices it serves and those set up. A driver
/// keeps one as a field and hands it out through [`LinkDriver::parts`].
pub struct LinkParts<H = CloseSender> {
    /// The link's supervisor.
    pub link: LinkSupervisor<H>,
    /// The publisher of the driver's readings.
    pub publisher: Publisher,
    /// The driver's logger.
    pub log: Logger,
    /// The devices this instance serves (the configuration's, checked by the driver).
    pub devices: Vec<u8>,
    /// The devices set up: a setup succeeded and no shutdown came since.
    pub up: BTreeSet<u8>,
    /// The client whose request started the running link (its setup), for the link
    /// task's log lines ([`LinkParts::task_log`]).
    pub opened_by: Arc<str>,
}

impl<H: LinkHandle + 'static> LinkParts<H> {
    /// The parts of a driver serving `ctx.devices` over a link named `link` (in setup
    /// errors, "the `link` link ended during setup", and in the state changes reported to
    /// `ctx.status`), logging to `log`.
    pub fn new(link: &'static str, ctx: &DriverContext, log: Logger) -> Self {
        LinkParts {
            link: LinkSupervisor::new(link).report_to(ctx.status.clone(), ctx.devices.clone()),
            publisher: ctx.publisher(),
            log,
            devices: ctx.devices.clone(),
            up: BTreeSet::new(),
            opened_by: "".into(),
        }
    }

    /// The logger for a link task started now: the driver's, naming the client whose
    /// request opened the link (`opened_by`), so the log's limits count the task's lines
    /// (found, streaming, lost, closed) as that client's. Use it in `start_link`.
    pub fn task_log(&self) -> Logger {
        self.log
            .new(slog::o!("opened_by" => self.opened_by.to_string()))
    }

    /// Starts `task` on the current arbiter under the shared reconnect loop
    /// ([`run_link`]), through [`LinkSupervisor::start`]: the supervisor keeps `handle`, the
    /// task hears through `close` that it must close. Call it from `start_link`.
    pub fn start<L: Link + 'static>(&mut self, handle: H, close: L::Close, task: L)
    where
        L::Close: 'static,
    {
        self.link
            .start(handle, |state| run_link(task, close, state));
    }

    /// Whether a link is running and its device answers now (not connecting, lost or
    /// failed).
    pub fn link_up(&self) -> bool {
        self.link
            .state()
            .is_some_and(|s| matches!(*s, LinkState::Up))
    }
}

impl<H: LinkHandle + 'static> LinkParts<H> {
    /// Hands `request`, made from the config `msg`, to the running link task through the
    /// request sender `requests` finds in the link's handle, if the link is up or one of
    /// its devices is set up; otherwise logs that the config is ignored and what to do
    /// first (`hint`: "open position or misc first").
    pub fn send_config<R: Request>(
        &self,
        msg: &Config,
        request: R,
        hint: &str,
        requests: impl FnOnce(&H) -> &RequestSender<R>,
    ) {
        match self.link.handle() {
            Some(handle) if self.link_up() || !self.up.is_empty() => {
                info!(self.log, "config"; "request" => format!("{request:?}"), "client" => &msg.client);
                requests(handle).send(request);
            }
            _ => {
                let code = msg.payload.first().copied().unwrap_or_default();
                warn!(self.log, "config ignored: {}", hint; "client" => &msg.client, "code" => crate::log::code(code));
            }
        }
    }
}

impl LinkParts<CloseSender> {
    /// [`LinkParts::start`] for a task that takes nothing but the request to close.
    pub fn start_task<L: Link<Close = CloseReceiver> + 'static>(&mut self, task: L) {
        let (close, close_rx) = super::close_channel();
        self.start(close, close_rx, task);
    }
}

/// A driver actor whose devices ride one supervised link. With
/// [`link_driver_handlers!`](crate::link_driver_handlers) it gets every driver message
/// handler: setup of a device it serves starts the link (if none runs) and waits for it to
/// be up; shutdown of its last device closes it; terminate closes it and stops the actor;
/// subscribers go to its [`Publisher`]; commands, configs and stops go to the methods
/// below, which by default ignore them (a sensor). A driver writes [`LinkDriver::parts`]
/// and [`LinkDriver::start_link`], and overrides what is its own.
pub trait LinkDriver: Actor<Context = Context<Self>> {
    /// The handle the supervisor keeps of a running link.
    type Handle: LinkHandle + 'static;
    /// The driver's name in the catalog ("sicklms200").
    const DRIVER: &'static str;
    /// The link's name in log lines ("laser").
    const LINK: &'static str;

    /// The driver's link, publisher, logger and devices.
    fn parts(&mut self) -> &mut LinkParts<Self::Handle>;
    /// Starts the link task (through [`LinkSupervisor::start`]); setup calls it when no
    /// link is running.
    fn start_link(&mut self, ctx: &mut Context<Self>);

    /// `device` is set up (the link is up). Default: counted among the devices up.
    fn device_up(&mut self, device: u8) {
        self.parts().up.insert(device);
    }
    /// `device` was shut down; returns whether the link should now close. Default: when
    /// no device is up any more.
    fn device_down(&mut self, device: u8) -> bool {
        let parts = self.parts();
        parts.up.remove(&device);
        parts.up.is_empty()
    }
    /// Whether a failed setup drops the link. Default: yes. A link serving several
    /// devices keeps one that is still trying (it reports [`LinkState::Failed`] if not).
    fn drop_on_setup_error(&mut self) -> bool {
        true
    }
    /// The server is stopping; the link is about to close. Default: no device is up.
    fn terminating(&mut self) {
        self.parts().up.clear();
    }
    /// A command (already past the registry's guard). Default: ignored.
    fn command(&mut self, _msg: Command, _ctx: &mut Context<Self>) {}
    /// A config request. Default: logged and ignored.
    fn config(&mut self, msg: Config, _ctx: &mut Context<Self>) {
        info!(self.parts().log, "config ignored: the {} takes no configs", Self::LINK; "client" => &msg.client);
    }
    /// Stop moving (watchdog, writer left, e-stop). Default: nothing (a sensor).
    fn stop(&mut self, _msg: Stop, _ctx: &mut Context<Self>) {}
}

/// Setup of `device` for `client` on a [`LinkDriver`]: the shared handler's body.
pub fn setup<D: LinkDriver>(
    d: &mut D,
    device: u8,
    client: Arc<str>,
    ctx: &mut Context<D>,
) -> ResponseActFuture<D, Result<(), DriverError>> {
    if !d.parts().devices.contains(&device) {
        let e = DriverError::not_served(format!(
            "the {} driver does not serve '{}' here",
            D::DRIVER,
            char::from(device)
        ));
        return Box::pin(actix::fut::ready(Err(e)));
    }
    if !d.parts().link.is_running() {
        d.parts().opened_by = client.clone();
        d.start_link(ctx);
    }
    let wait = d.parts().link.wait_ready();
    Box::pin(wait.into_actor(d).map(move |res, act, _| {
        match &res {
            Ok(()) => act.device_up(device),
            Err(e) => {
                warn!(act.parts().log, "{} setup failed", D::LINK; "device" => player_proto::device::name(device), "error" => %e, "client" => &*client);
                let failed = act
                    .parts()
                    .link
                    .state()
                    .is_none_or(|s| matches!(*s, LinkState::Failed(_)));
                if failed || act.drop_on_setup_error() {
                    act.parts().link.abandon();
                }
            }
        }
        res
    }))
}

/// Shutdown of `device`, left last by `client`, on a [`LinkDriver`]: the shared handler's
/// body.
pub fn shutdown<D: LinkDriver>(d: &mut D, device: u8, client: &str) -> ResponseActFuture<D, ()> {
    d.parts().publisher.clear(device);
    if d.device_down(device) && d.parts().link.is_running() {
        info!(d.parts().log, "{} closed; closing the link", D::LINK; "device" => player_proto::device::name(device), "client" => client);
        let close = d.parts().link.close();
        return Box::pin(close.into_actor(d));
    }
    Box::pin(actix::fut::ready(()))
}

/// Terminate on a [`LinkDriver`]: close the link, then stop the actor.
pub fn terminate<D: LinkDriver>(d: &mut D) -> ResponseActFuture<D, ()> {
    d.terminating();
    let close = d.parts().link.close();
    Box::pin(close.into_actor(d).map(|_, act, ctx| {
        info!(act.parts().log, "{} driver stopped", D::DRIVER);
        ctx.stop();
    }))
}

/// Implements every driver message handler (`Setup`, `Shutdown`, `Command`, `Config`,
/// `Stop`, `Subscribers`, `Terminate`) for a [`LinkDriver`], by the shared bodies in
/// [`player_kit::link::driver`](crate::link::driver).
#[macro_export]
macro_rules! link_driver_handlers {
    ($t:ty) => {
        impl $crate::__actix::Handler<$crate::driver::Setup> for $t {
            type Result = $crate::__actix::ResponseActFuture<
                Self,
                ::std::result::Result<(), $crate::driver::DriverError>,
            >;
            fn handle(
                &mut self,
                msg: $crate::driver::Setup,
                ctx: &mut $crate::__actix::Context<Self>,
            ) -> Self::Result {
                $crate::link::driver::setup(self, msg.device, msg.client, ctx)
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Shutdown> for $t {
            type Result = $crate::__actix::ResponseActFuture<Self, ()>;
            fn handle(
                &mut self,
                msg: $crate::driver::Shutdown,
                _ctx: &mut $crate::__actix::Context<Self>,
            ) -> Self::Result {
                $crate::link::driver::shutdown(self, msg.device, &msg.client)
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Terminate> for $t {
            type Result = $crate::__actix::ResponseActFuture<Self, ()>;
            fn handle(
                &mut self,
                _msg: $crate::driver::Terminate,
                _ctx: &mut $crate::__actix::Context<Self>,
            ) -> Self::Result {
                $crate::link::driver::terminate(self)
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Subscribers> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::Subscribers,
                _ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::link::driver::LinkDriver::parts(self)
                    .publisher
                    .set_subscribers(msg);
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Command> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::Command,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::link::driver::LinkDriver::command(self, msg, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Config> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::Config,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::link::driver::LinkDriver::config(self, msg, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Stop> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::Stop,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::link::driver::LinkDriver::stop(self, msg, ctx);
            }
        }
    };
}
