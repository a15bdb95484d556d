//! What every driver without a link shares, written once: the actor's message handlers
//! ([`Driver`] plus [`driver_handlers!`](crate::driver_handlers)), so a driver that serves
//! its devices from inside the server (the simulator, a recording, a child program, another
//! server's devices, a virtual device over its robot's other devices) writes only the
//! hooks that are its own.
//!
//! The shared handlers forward each driver message to its hook, forget a device's last
//! reading at its shutdown ([`Driver::forget`]), hand a change of readers to the driver's
//! [`Publisher`] and stop the actor once its [`Driver::terminate`] is done. A hook answers
//! at once or later ([`Reply`]): a setup that waits for a child program or a remote server
//! answers when they do. A driver behind a serial port or socket is a
//! [`LinkDriver`](crate::link::driver::LinkDriver) instead, whose handlers also start,
//! wait for and close its link.
//!
//! ```
//! use actix::prelude::*;
//! use player_kit::driver::{Command, DriverError, Publisher, Setup};
//! use player_kit::plain::{Driver, Reply};
//!
//! /// Device `q`: the last command, published as it comes.
//! struct Echo {
//!     publisher: Publisher,
//! }
//!
//! impl Actor for Echo {
//!     type Context = Context<Self>;
//! }
//!
//! impl Driver for Echo {
//!     fn publisher(&mut self) -> &mut Publisher {
//!         &mut self.publisher
//!     }
//!     fn setup(&mut self, _msg: Setup, _ctx: &mut Context<Self>) -> Reply<Self, Result<(), DriverError>> {
//!         Reply::Now(Ok(()))
//!     }
//!     fn command(&mut self, msg: Command, _ctx: &mut Context<Self>) {
//!         self.publisher.publish(msg.device, msg.payload);
//!     }
//! }
//!
//! player_kit::driver_handlers!(Echo);
//! ```

use crate::driver::{Command, Config, DriverError, Publisher, Setup, Shutdown, Stop, Subscribers};
use actix::prelude::*;

/// A hook's answer: now, or when a future running on the actor resolves (the actor goes on
/// handling other messages meanwhile).
pub enum Reply<A: Actor, T> {
    /// The answer, now.
    Now(T),
    /// The answer, when this future resolves.
    Later(ResponseActFuture<A, T>),
}

impl<A: Actor, T: 'static> Reply<A, T> {
    /// The answer `fut` resolves to.
    pub fn later(fut: impl ActorFuture<A, Output = T> + 'static) -> Self {
        Reply::Later(Box::pin(fut))
    }

    /// As the message response actix sends back.
    pub fn into_response(self) -> ActorResponse<A, T>
    where
        A::Context: AsyncContext<A>,
    {
        match self {
            Reply::Now(v) => ActorResponse::reply(v),
            Reply::Later(fut) => ActorResponse::r#async(fut),
        }
    }
}

/// A driver actor without a link. With [`driver_handlers!`](crate::driver_handlers) it
/// gets every driver message handler; each goes to the hook of the same name, whose default
/// suits a driver with nothing to do there. A driver writes [`Driver::publisher`] and the
/// hooks its devices need (most: `setup`, `shutdown`, `command`; a driver that moves
/// something: `stop`).
pub trait Driver: Actor<Context = Context<Self>> {
    /// The publisher of the driver's readings.
    fn publisher(&mut self) -> &mut Publisher;

    /// The first client subscribed to `msg.device`: open it. The answer is the client's
    /// (an error: it gets `e`). Default: ready at once.
    fn setup(
        &mut self,
        _msg: Setup,
        _ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        Reply::Now(Ok(()))
    }
    /// The last client left `msg.device` (its last reading is already forgotten: see
    /// [`Driver::forget`]). The registry waits for the answer before setting the device
    /// up again. Default: nothing.
    fn shutdown(&mut self, _msg: Shutdown, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        Reply::Now(())
    }
    /// Forgets `device`'s last reading as it is shut down, so the next setup's first reader
    /// is not sent a stale one. Default: the publisher forgets it.
    fn forget(&mut self, device: u8) {
        self.publisher().clear(device);
    }
    /// A command (already past the registry's guard: access, watchdog, e-stop). Default:
    /// ignored.
    fn command(&mut self, _msg: Command, _ctx: &mut Context<Self>) {}
    /// A client's config request. Default: ignored.
    fn config(&mut self, _msg: Config, _ctx: &mut Context<Self>) {}
    /// Put `msg.device` in its safe state, its command zeroed (a writer left, the watchdog,
    /// the e-stop). Default: nothing (a device that moves nothing).
    fn stop(&mut self, _msg: Stop, _ctx: &mut Context<Self>) {}
    /// A session starts or stops reading a device. Default: the publisher takes the change
    /// (and sends a new reader the device's latest reading at once).
    fn subscribers(&mut self, msg: Subscribers, _ctx: &mut Context<Self>) {
        self.publisher().set_subscribers(msg);
    }
    /// The server is exiting: leave the devices safe, end what the driver runs. The actor
    /// stops once the answer comes. Default: nothing more to do.
    fn terminate(&mut self, _ctx: &mut Context<Self>) -> Reply<Self, ()> {
        Reply::Now(())
    }
}

/// Shutdown on a [`Driver`]: the device's last reading forgotten, then the hook.
pub fn shutdown<D: Driver>(d: &mut D, msg: Shutdown, ctx: &mut Context<D>) -> ActorResponse<D, ()> {
    d.forget(msg.device);
    d.shutdown(msg, ctx).into_response()
}

/// Terminate on a [`Driver`]: the hook, then the actor stops.
pub fn terminate<D: Driver>(d: &mut D, ctx: &mut Context<D>) -> ActorResponse<D, ()> {
    match d.terminate(ctx) {
        Reply::Now(()) => {
            ctx.stop();
            ActorResponse::reply(())
        }
        Reply::Later(fut) => ActorResponse::r#async(fut.map(|(), _, ctx| ctx.stop())),
    }
}

/// Implements every driver message handler (`Setup`, `Shutdown`, `Command`, `Config`,
/// `Stop`, `Subscribers`, `Terminate`) for a [`Driver`](crate::plain::Driver), by its hooks
/// and the shared bodies in [`player_kit::plain`](crate::plain).
#[macro_export]
macro_rules! driver_handlers {
    ($t:ty) => {
        impl $crate::__actix::Handler<$crate::driver::Setup> for $t {
            type Result = $crate::__actix::ActorResponse<
                Self,
                ::std::result::Result<(), $crate::driver::DriverError>,
            >;
            fn handle(
                &mut self,
                msg: $crate::driver::Setup,
                ctx: &mut $crate::__actix::Context<Self>,
            ) -> Self::Result {
                $crate::plain::Driver::setup(self, msg, ctx).into_response()
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Shutdown> for $t {
            type Result = $crate::__actix::ActorResponse<Self, ()>;
            fn handle(
                &mut self,
                msg: $crate::driver::Shutdown,
                ctx: &mut $crate::__actix::Context<Self>,
            ) -> Self::Result {
                $crate::plain::shutdown(self, msg, ctx)
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Terminate> for $t {
            type Result = $crate::__actix::ActorResponse<Self, ()>;
            fn handle(
                &mut self,
                _msg: $crate::driver::Terminate,
                ctx: &mut $crate::__actix::Context<Self>,
            ) -> Self::Result {
                $crate::plain::terminate(self, ctx)
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Subscribers> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::Subscribers,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::plain::Driver::subscribers(self, msg, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Command> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::Command,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::plain::Driver::command(self, msg, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Config> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::Config,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::plain::Driver::config(self, msg, ctx);
            }
        }
        impl $crate::__actix::Handler<$crate::driver::Stop> for $t {
            type Result = ();
            fn handle(
                &mut self,
                msg: $crate::driver::Stop,
                ctx: &mut $crate::__actix::Context<Self>,
            ) {
                $crate::plain::Driver::stop(self, msg, ctx);
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::{
        DataRecipient, DeviceData, DeviceDataBatch, DriverHandle, SessionId, StopReason, Terminate,
    };
    use bytes::Bytes;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    /// Device `q`: a lamp whose setup takes 20 ms, whose reading is its brightness (set by a
    /// command, zeroed by a stop), and which takes 20 ms to switch off at the end. `said`
    /// is what its hooks saw, in order.
    struct Lamp {
        publisher: Publisher,
        level: u8,
        said: Arc<Mutex<Vec<String>>>,
    }

    impl Lamp {
        fn say(&self, what: String) {
            self.said.lock().unwrap().push(what);
        }
        fn show(&mut self) {
            let level = Bytes::copy_from_slice(&[self.level]);
            self.publisher.publish(b'q', level);
        }
    }

    impl Actor for Lamp {
        type Context = Context<Self>;
    }

    impl Driver for Lamp {
        fn publisher(&mut self) -> &mut Publisher {
            &mut self.publisher
        }
        fn setup(
            &mut self,
            msg: Setup,
            _: &mut Context<Self>,
        ) -> Reply<Self, Result<(), DriverError>> {
            self.say(format!("setup {}", char::from(msg.device)));
            let warm_up = actix::clock::sleep(Duration::from_millis(20));
            Reply::later(warm_up.into_actor(self).map(|(), act, _| {
                act.show();
                Ok(())
            }))
        }
        fn shutdown(&mut self, msg: Shutdown, _: &mut Context<Self>) -> Reply<Self, ()> {
            self.say(format!(
                "shutdown {} by {}",
                char::from(msg.device),
                msg.client
            ));
            Reply::Now(())
        }
        fn command(&mut self, msg: Command, _: &mut Context<Self>) {
            self.level = msg.payload[0];
            self.show();
        }
        fn stop(&mut self, msg: Stop, _: &mut Context<Self>) {
            self.say(format!("stop: {}", msg.reason));
            self.level = 0;
            self.show();
        }
        fn terminate(&mut self, _: &mut Context<Self>) -> Reply<Self, ()> {
            let off = actix::clock::sleep(Duration::from_millis(20));
            Reply::later(off.into_actor(self).map(|(), act, _| act.say("off".into())))
        }
    }

    crate::driver_handlers!(Lamp);

    /// Readings a session got.
    struct Reader(Arc<Mutex<Vec<u8>>>);

    impl Actor for Reader {
        type Context = Context<Self>;
    }

    impl Handler<DeviceData> for Reader {
        type Result = ();
        fn handle(&mut self, msg: DeviceData, _: &mut Context<Self>) {
            self.0.lock().unwrap().push(msg.data[0]);
        }
    }

    impl Handler<DeviceDataBatch> for Reader {
        type Result = ();
        fn handle(&mut self, msg: DeviceDataBatch, _: &mut Context<Self>) {
            let mut got = self.0.lock().unwrap();
            got.extend(msg.0.iter().map(|d| d.data[0]));
        }
    }

    fn lamp() -> (DriverHandle, Arc<Mutex<Vec<String>>>, Addr<Lamp>) {
        let said = Arc::new(Mutex::new(Vec::new()));
        let addr = Lamp {
            publisher: Publisher::new(),
            level: 7,
            said: said.clone(),
        }
        .start();
        (DriverHandle::of(&addr), said, addr)
    }

    /// Session `id` starts reading `q`; what it gets.
    async fn read(h: &DriverHandle, id: u64) -> Arc<Mutex<Vec<u8>>> {
        let got = Arc::new(Mutex::new(Vec::new()));
        let recipient = DataRecipient::of(&Reader(got.clone()).start());
        let msg = Subscribers {
            device: b'q',
            session: SessionId::from(id),
            recipient: Some(recipient),
        };
        h.subscribers.send(msg).await.unwrap();
        got
    }

    async fn settle() {
        actix::clock::sleep(Duration::from_millis(10)).await;
    }

    #[actix_rt::test]
    async fn each_message_reaches_its_hook_and_a_shutdown_forgets_the_reading() {
        let (h, said, _addr) = lamp();
        let setup = Setup {
            device: b'q',
            client: "ann".into(),
        };
        // The setup is answered when the lamp has warmed up, with its first reading kept
        // for the first reader.
        assert!(h.setup.send(setup.clone()).await.unwrap().is_ok());
        let first = read(&h, 1).await;
        let command = Command {
            device: b'q',
            payload: Bytes::from_static(&[9]),
            session: SessionId::from(1),
        };
        h.command.send(command).await.unwrap();
        let stop = Stop {
            device: b'q',
            reason: StopReason::Watchdog,
            client: "ann".into(),
        };
        h.stop.send(stop).await.unwrap();
        settle().await;
        assert_eq!(*first.lock().unwrap(), [7, 9, 0]);
        let shutdown = Shutdown {
            device: b'q',
            client: "ann".into(),
        };
        h.shutdown.send(shutdown).await.unwrap();
        // A reader after the shutdown is sent nothing stale.
        let late = read(&h, 2).await;
        settle().await;
        assert!(late.lock().unwrap().is_empty());
        assert_eq!(
            *said.lock().unwrap(),
            [
                "setup q",
                "stop: command watchdog: no command within command_timeout",
                "shutdown q by ann"
            ]
        );
    }

    #[actix_rt::test]
    async fn terminate_answers_after_the_hook_and_then_the_actor_stops() {
        let (h, said, addr) = lamp();
        h.terminate.send(Terminate).await.unwrap();
        assert_eq!(*said.lock().unwrap(), ["off"]);
        settle().await;
        assert!(!addr.connected());
    }
}
