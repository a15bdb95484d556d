//! Telling robots apart: a front end that serves several robots with one actor (a web
//! session on a shared port, the recorder) subscribes to each robot's registry through a
//! [`RobotTap`], which forwards what that registry sends it ([`DeviceData`],
//! [`DeviceDataBatch`], [`Notice`], [`Tapped`]) and the answers to the configs it sends
//! through it ([`ConfigAnswer`]) to the front end's actor as
//! [`Tagged`] with the robot's index: the registry's messages do not say which robot they
//! are from.
//!
//! The tap forwards each message as it comes with `do_send`, one message for one (a batch
//! stays one batch): what the front end bounds (an outbox, newest-wins slots) it bounds as
//! if the registry had sent to it directly, and nothing waits on it. It handles only the
//! messages its front end takes tagged: a [`RobotTap`] of an actor without a
//! `Handler<Tagged<Tapped>>` is no [`Tapped`] recipient.

use crate::notice::Notice;
use crate::registry::Tapped;
use actix::dev::ToEnvelope;
use actix::prelude::*;
use player_kit::answer::ConfigAnswer;
use player_kit::driver::{DeviceData, DeviceDataBatch};

/// A message of robot `robot` (its index among the front end's robots), forwarded by its
/// [`RobotTap`].
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct Tagged<T> {
    /// The robot's index.
    pub robot: usize,
    /// What its registry sent.
    pub message: T,
}

/// Forwards one robot's readings, notices and passed-on commands and configs to the front
/// end's actor `A`, [`Tagged`] with the robot. Start it on the thread of `A` (or the one
/// `A` reads from); it ends when its registry and its front end let go of its address.
pub struct RobotTap<A: Actor> {
    robot: usize,
    to: Addr<A>,
}

impl<A: Actor> RobotTap<A> {
    /// A tap for robot `robot` that forwards to `to` (not started).
    pub fn new(robot: usize, to: Addr<A>) -> Self {
        RobotTap { robot, to }
    }

    fn forward<T>(&self, message: T)
    where
        T: Send + 'static,
        A: Handler<Tagged<T>>,
        A::Context: ToEnvelope<A, Tagged<T>>,
    {
        self.to.do_send(Tagged {
            robot: self.robot,
            message,
        });
    }
}

impl<A: Actor> Actor for RobotTap<A> {
    type Context = Context<Self>;
}

/// One handler per message the registry sends, each forwarding it tagged where the front
/// end takes it tagged.
macro_rules! forward {
    ($($m:ty),*) => {$(
        impl<A> Handler<$m> for RobotTap<A>
        where
            A: Actor + Handler<Tagged<$m>>,
            A::Context: ToEnvelope<A, Tagged<$m>>,
        {
            type Result = ();

            fn handle(&mut self, msg: $m, _ctx: &mut Self::Context) {
                self.forward(msg);
            }
        }
    )*};
}

forward!(DeviceData, DeviceDataBatch, Notice, Tapped, ConfigAnswer);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Sent;
    use bytes::Bytes;
    use player_kit::driver::{DataRecipient, Timestamp};
    use std::sync::Arc;

    /// Keeps what it is sent, as (robot, what).
    #[derive(Default)]
    struct Log(Vec<(usize, String)>);

    impl Actor for Log {
        type Context = Context<Self>;
    }

    impl<T: std::fmt::Debug + Send + 'static> Handler<Tagged<T>> for Log {
        type Result = ();

        fn handle(&mut self, msg: Tagged<T>, _ctx: &mut Self::Context) {
            self.0.push((msg.robot, format!("{:?}", msg.message)));
        }
    }

    #[derive(Message)]
    #[rtype(result = "Vec<(usize, String)>")]
    struct Take;

    impl Handler<Take> for Log {
        type Result = MessageResult<Take>;

        fn handle(&mut self, _: Take, _ctx: &mut Self::Context) -> Self::Result {
            MessageResult(std::mem::take(&mut self.0))
        }
    }

    fn reading(device: u8, seq: u64) -> DeviceData {
        DeviceData {
            device,
            data: Bytes::from_static(b"ab"),
            timestamp: Timestamp::default(),
            seq,
        }
    }

    #[actix_rt::test]
    async fn each_message_reaches_the_front_end_once_tagged_with_its_robot_in_order_per_robot() {
        let log = Log::default().start();
        let second = RobotTap::new(2, log.clone()).start();
        let fifth = RobotTap::new(5, log.clone()).start();
        let data = DataRecipient::of(&second);
        data.send_single(reading(b'p', 1));
        data.send_batch(DeviceDataBatch(Arc::from(vec![
            reading(b'p', 2),
            reading(b's', 2),
        ])));
        second.do_send(Notice::new(1, b'p', "up"));
        fifth.do_send(Tapped {
            kind: Sent::Command,
            device: b'p',
            payload: Bytes::from_static(b"cmd"),
            timestamp: Timestamp::default(),
        });
        second.do_send(reading(b'p', 3));
        // A tap answers `Ping` after forwarding all sent to it before, so by then the
        // forwards are in the log's mailbox, ahead of `Take`.
        second.send(Ping).await.unwrap();
        fifth.send(Ping).await.unwrap();
        let got = log.send(Take).await.unwrap();
        // In order per robot (two taps' turns may interleave either way).
        let of = |robot| -> Vec<&str> {
            got.iter()
                .filter(|(r, _)| *r == robot)
                .map(|(_, m)| m.as_str())
                .collect()
        };
        let (second, fifth) = (of(2), of(5));
        assert_eq!((second.len(), fifth.len()), (4, 1), "{got:?}");
        assert!(second[0].contains("seq: 1"), "{got:?}");
        assert!(
            second[1].starts_with("DeviceDataBatch") && second[1].contains("seq: 2"),
            "a batch stays one batch: {got:?}"
        );
        assert!(second[2].contains("\"up\""), "{got:?}");
        assert!(second[3].contains("seq: 3"), "{got:?}");
        assert!(fifth[0].starts_with("Tapped { kind: Command"), "{got:?}");
    }

    /// Answered by a tap once it has handled everything sent to it before.
    #[derive(Message)]
    #[rtype(result = "()")]
    struct Ping;

    impl Handler<Ping> for RobotTap<Log> {
        type Result = ();

        fn handle(&mut self, _: Ping, _ctx: &mut Self::Context) {}
    }
}
