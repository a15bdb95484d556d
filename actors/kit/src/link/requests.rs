//! The two ways a driver talks to its running link task besides asking it to close: a
//! channel of requests applied in order, the close among them ([`request_channel`]), and
//! a client's newest-wins command beside the link's handle ([`Commanded`]).

use super::{CloseAck, Closer, LinkHandle};
use slog::Logger;
use std::fmt;
use tokio::sync::{mpsc, watch};

/// A driver's own request to its link task (a config, a stop), applied in order.
pub trait Request: fmt::Debug {
    /// Logs a request dropped because the device is away (the link is connecting or
    /// waiting out a backoff: there is nothing to apply it to).
    fn dropped(self, log: &Logger);
}

/// What a link task takes from a [`request_channel`]: one of the driver's requests, or the
/// request to close.
#[derive(Debug)]
pub enum Incoming<R> {
    /// A request of the driver's own.
    Request(R),
    /// The request to close, with the acknowledgement to send once closed.
    Close(CloseAck),
}

/// The driver's end of a [`request_channel`]: the close request goes through it like
/// every other request, so it is applied after the requests sent before it.
pub struct RequestSender<R>(mpsc::UnboundedSender<Incoming<R>>);

impl<R> RequestSender<R> {
    /// Sends `request`; false if the task has ended.
    pub fn send(&self, request: R) -> bool {
        self.0.send(Incoming::Request(request)).is_ok()
    }
}

impl<R> LinkHandle for RequestSender<R> {
    fn request_close(&mut self, ack: CloseAck) -> bool {
        self.0.send(Incoming::Close(ack)).is_ok()
    }
}

/// The link task's end of a [`request_channel`]. While the device is away (as a
/// [`Closer`]) a close request ends the task and other requests are dropped (logged by
/// [`Request::dropped`]); a served connection takes them with [`RequestReceiver::recv`].
pub struct RequestReceiver<R> {
    rx: mpsc::UnboundedReceiver<Incoming<R>>,
    log: Logger,
}

impl<R> RequestReceiver<R> {
    /// The next request; `None` once the driver has dropped its end. Cancel-safe.
    pub async fn recv(&mut self) -> Option<Incoming<R>> {
        self.rx.recv().await
    }
}

impl<R: Request> Closer for RequestReceiver<R> {
    async fn closed(&mut self) -> Option<CloseAck> {
        loop {
            match self.rx.recv().await? {
                Incoming::Close(ack) => return Some(ack),
                Incoming::Request(other) => other.dropped(&self.log),
            }
        }
    }
}

/// A channel of requests to a link task, applied in order; `log` is where the task logs
/// the requests it drops.
pub fn request_channel<R>(log: Logger) -> (RequestSender<R>, RequestReceiver<R>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (RequestSender(tx), RequestReceiver { rx, log })
}

/// What a driver keeps of a running link that takes a client's command: the link's
/// `handle` (which closes it) and the sender of the newest command (newest wins; the task
/// watches the receiver [`Commanded::new`] returns).
pub struct Commanded<H, M> {
    /// The link's handle.
    pub handle: H,
    /// The newest command.
    pub command: watch::Sender<M>,
}

impl<H, M> Commanded<H, M> {
    /// `handle` and a command starting at `command`, with the task's receiver.
    pub fn new(handle: H, command: M) -> (Self, watch::Receiver<M>) {
        let (tx, rx) = watch::channel(command);
        (
            Commanded {
                handle,
                command: tx,
            },
            rx,
        )
    }
}

impl<H: LinkHandle, M> LinkHandle for Commanded<H, M> {
    fn request_close(&mut self, ack: CloseAck) -> bool {
        self.handle.request_close(ack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Debug)]
    enum Ctl {
        Power(bool),
    }

    /// The requests dropped, as `dropped` saw them.
    static DROPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

    impl Request for Ctl {
        fn dropped(self, _log: &Logger) {
            DROPPED.lock().unwrap().push(format!("{self:?}"));
        }
    }

    #[test]
    fn while_away_requests_before_the_close_are_dropped_in_order_and_the_close_is_answered() {
        actix_rt::System::new().block_on(async {
            let log = Logger::root(slog::Discard, slog::o!());
            let (tx, mut rx) = request_channel::<Ctl>(log);
            let (mut link, mut command) = Commanded::new(tx, 0u8);
            assert!(link.handle.send(Ctl::Power(true)));
            link.command.send_replace(7);
            let (ack, acked) = tokio::sync::oneshot::channel();
            assert!(link.request_close(ack));
            assert!(link.handle.send(Ctl::Power(false)));
            let close = rx.closed().await.expect("the close request");
            let _ = close.send(());
            acked.await.unwrap();
            assert_eq!(*DROPPED.lock().unwrap(), ["Power(true)"]);
            // A served connection takes what came after the close itself.
            let next = rx.recv().await;
            assert!(matches!(next, Some(Incoming::Request(Ctl::Power(false)))));
            assert_eq!(*command.borrow_and_update(), 7);
            drop(link);
            assert!(rx.closed().await.is_none(), "the driver went away");
        });
    }
}
