//! A web session's connection: the WebSocket's two halves, what waits for the socket
//! ([`Unsent`]) and the writer task that hands it over.
//!
//! The rules, in [`Unsent`] and unit-tested: control messages (status, advertise,
//! parameter values, service responses) go first, in order, at most [`MAX_CONTROL`] of
//! them (a client with that many waiting does not read at all and is disconnected); then
//! the next chunk of an endpoint's channels while they are being advertised (made only
//! when the socket has taken the chunk before); then the server's clock; then data, at
//! most one frame per subscription: a newer frame takes the place of one the socket has
//! not taken (newest wins), counted as dropped when its subscription had had something
//! waiting for [`DROP_AFTER`] or longer (a connection that reads slower than the data
//! comes; two readings that came together, faster than the writer gets a turn, are not
//! the connection's doing). A client that has left something waiting and taken nothing
//! for the stall timeout is stalled.
//!
//! The writer task frames what [`Unsent::next`] gives into one buffer until nothing waits
//! (tungstenite's own replies first: see [`super::socket`]) and hands the socket the
//! buffer in one write, and sleeps when nothing waits until the session wakes it; so a
//! slow browser loses rounds, never delays the drivers or anyone else, and never queues a
//! backlog. A reading's `messageData` waits as its 13-byte header and the payload shared
//! by every subscriber, and is put together only in that buffer.

use super::socket::{self, ReadSide, Replies, Socket};
use bytes::Bytes;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// Most status and advertise messages waiting for the socket; past this the client is
/// not reading at all and is disconnected.
pub(super) const MAX_CONTROL: usize = 256;

/// How long a subscription's frame waits for the socket before a newer one taking its
/// place counts as dropped (the client told, `ops.rs`): longer than a burst of readings
/// takes to come (a driver on a thread of its own catching up after the machine starved
/// it sends two readings microseconds apart), shorter than any device's period.
pub(super) const DROP_AFTER: Duration = Duration::from_millis(20);

/// Largest write buffer a writer keeps between rounds (a bigger one, after a map say, is
/// given back).
const KEEP_BUFFER: usize = 256 * 1024;

/// How long the writer may go on sending (a close frame, the last messages) after the
/// session has ended.
const WRITER_GRACE: Duration = Duration::from_secs(2);

/// Makes the `advertise` chunk that starts with robot `k` of those picked (`None`: all),
/// and says which robot the next chunk starts with (`None`: that was the last).
pub(super) type Advertiser = Box<dyn FnMut(Option<&[usize]>, usize) -> (String, Option<usize>)>;

/// A data message waiting for the socket.
pub(super) enum Data {
    /// A whole binary message.
    Whole(Bytes),
    /// A reading's `messageData`: its header (opcode, subscription, time) and the payload
    /// shared with every other subscriber of the reading.
    Reading([u8; 13], Bytes),
}

impl From<Bytes> for Data {
    fn from(b: Bytes) -> Data {
        Data::Whole(b)
    }
}

/// The next thing for the socket.
pub(super) enum Out {
    /// A message (control, an `advertise` chunk, the clock, whole data).
    Message(Message),
    /// A reading's `messageData`, header and payload.
    Reading([u8; 13], Bytes),
}

impl Out {
    /// Appends its frame to `out`; true when it was the close frame.
    fn frame_into(&self, out: &mut Vec<u8>) -> bool {
        match self {
            Out::Message(m) => socket::message_into(out, m),
            Out::Reading(head, payload) => {
                socket::frame_into(out, socket::OP_BINARY, &[head, payload]);
                false
            }
        }
    }
}

/// What the socket is waiting to take.
pub(super) struct Unsent {
    control: VecDeque<Message>,
    /// The newest frame per subscription, oldest first, with when the subscription's
    /// place was taken (a newer frame keeps it).
    data: VecDeque<(u32, Data, Instant)>,
    /// The robot whose channels the next `advertise` chunk starts with, while an endpoint
    /// serving several robots has not advertised them all (see [`crate::world`]).
    adverts: Option<usize>,
    /// The robots whose channels are advertised (`?robots=`; `None`: all).
    picked: Option<Arc<[usize]>>,
    /// The session has ended: the writer stops once the rest is sent.
    closed: bool,
    /// When the writer last finished a send (or the outbox was last empty).
    progress: Instant,
    /// Frames replaced before the socket took them, their place [`DROP_AFTER`] or more
    /// old.
    dropped: u64,
    /// The server's clock, newest wins; sent after the control messages, before data.
    time: Option<Bytes>,
}

impl Unsent {
    /// Nothing waiting, as of `now`.
    fn new(now: Instant) -> Unsent {
        Unsent {
            control: VecDeque::new(),
            data: VecDeque::new(),
            adverts: None,
            picked: None,
            closed: false,
            progress: now,
            dropped: 0,
            time: None,
        }
    }

    /// Whether anything waits for the socket.
    fn pending(&self) -> bool {
        !self.control.is_empty() || !self.data.is_empty() || self.adverts.is_some()
    }

    /// Queues a control message; false (and nothing queued) when [`MAX_CONTROL`] wait
    /// already.
    fn control(&mut self, message: Message) -> bool {
        if self.control.len() >= MAX_CONTROL {
            return false;
        }
        self.control.push_back(message);
        true
    }

    /// Puts `frame` in `sub`'s place: instead of the frame waiting there, or last. True
    /// when the one replaced counts as dropped (its place taken [`DROP_AFTER`] or more
    /// before `now`). When nothing waited, the stall clock starts at `now`.
    fn frame(&mut self, sub: u32, frame: impl Into<Data>, now: Instant) -> bool {
        let frame = frame.into();
        if let Some(slot) = self.data.iter_mut().find(|(s, _, _)| *s == sub) {
            slot.1 = frame;
            let dropped = now.saturating_duration_since(slot.2) >= DROP_AFTER;
            self.dropped += u64::from(dropped);
            return dropped;
        }
        if self.data.is_empty() && self.control.is_empty() {
            self.progress = now;
        }
        self.data.push_back((sub, frame, now));
        false
    }

    /// The next message for the socket (see the module's rules), or `None` when nothing
    /// waits; `advertise` makes the next chunk of channels.
    fn next(&mut self, advertise: &mut Advertiser) -> Option<Out> {
        if let Some(m) = self.control.pop_front() {
            return Some(Out::Message(m));
        }
        if let Some(k) = self.adverts {
            let (text, next) = advertise(self.picked.as_deref(), k);
            self.adverts = next;
            return Some(Out::Message(Message::Text(text.into())));
        }
        if let Some(t) = self.time.take() {
            return Some(Out::Message(Message::Binary(t)));
        }
        self.data.pop_front().map(|(_, d, _)| match d {
            Data::Whole(b) => Out::Message(Message::Binary(b)),
            Data::Reading(head, payload) => Out::Reading(head, payload),
        })
    }

    /// Whether something has waited and nothing was taken for longer than `stall` (zero:
    /// never stalled).
    fn stalled(&self, stall: Duration, now: Instant) -> bool {
        !stall.is_zero() && self.pending() && now.saturating_duration_since(self.progress) > stall
    }
}

/// The connection: the socket until the session starts, then what waits for the socket,
/// the writer task and its wake-up.
pub(super) struct Connection {
    unsent: Rc<RefCell<Unsent>>,
    wake: Rc<Notify>,
    socket: Option<Socket>,
    /// The writer task, ended at the latest [`WRITER_GRACE`] after the session (a client
    /// that reads nothing would hold it for ever).
    writer: Option<tokio::task::JoinHandle<()>>,
}

impl Connection {
    /// The connection of `socket`, not started.
    pub(super) fn new(socket: Socket) -> Connection {
        Connection {
            unsent: Rc::new(RefCell::new(Unsent::new(Instant::now()))),
            wake: socket.wake.clone(),
            socket: Some(socket),
            writer: None,
        }
    }

    /// Advertises only the robots `picked` (`?robots=`).
    pub(super) fn pick(&self, picked: Option<Vec<usize>>) {
        self.unsent.borrow_mut().picked = picked.map(Arc::from);
    }

    /// Starts the writer task (on the session's thread), which makes the chunks of an
    /// endpoint's channels with `advertise`; gives back the stream of the client's
    /// messages (once).
    pub(super) fn start(&mut self, advertise: Advertiser) -> Option<WebSocketStream<ReadSide>> {
        let s = self.socket.take()?;
        let task = write_out(
            s.write,
            s.replies,
            self.unsent.clone(),
            self.wake.clone(),
            advertise,
        );
        self.writer = Some(actix_rt::spawn(task));
        Some(s.stream)
    }

    /// Queues a control message; false when the client does not read at all.
    pub(super) fn control(&self, message: Message) -> bool {
        let queued = self.unsent.borrow_mut().control(message);
        if queued {
            self.wake.notify_one();
        }
        queued
    }

    /// Queues the close frame, whatever waits already.
    pub(super) fn close_with(&self, frame: CloseFrame) {
        let mut unsent = self.unsent.borrow_mut();
        unsent.control.push_back(Message::Close(Some(frame)));
        drop(unsent);
        self.wake.notify_one();
    }

    /// Puts `frame` in subscription `sub`'s place; true when the one it replaced counts
    /// as dropped ([`DROP_AFTER`]).
    pub(super) fn frame(&self, sub: u32, frame: impl Into<Data>) -> bool {
        let replaced = self.unsent.borrow_mut().frame(sub, frame, Instant::now());
        self.wake.notify_one();
        replaced
    }

    /// Sets the server's clock to send.
    pub(super) fn time(&self, frame: Bytes) {
        self.unsent.borrow_mut().time = Some(frame);
        self.wake.notify_one();
    }

    /// Forgets the frame waiting for subscription `sub` (unsubscribed).
    pub(super) fn forget(&self, sub: u32) {
        self.unsent.borrow_mut().data.retain(|(s, _, _)| *s != sub);
    }

    /// Advertises every robot picked, a chunk at a time, starting with the first.
    pub(super) fn advertise_all(&self) {
        self.unsent.borrow_mut().adverts = Some(0);
    }

    /// Frames replaced before the socket took them, after [`DROP_AFTER`].
    pub(super) fn dropped(&self) -> u64 {
        self.unsent.borrow().dropped
    }

    /// See [`Unsent::stalled`].
    pub(super) fn stalled(&self, stall: Duration) -> bool {
        self.unsent.borrow().stalled(stall, Instant::now())
    }

    /// The session ended: the writer sends what waits and stops, or is stopped
    /// [`WRITER_GRACE`] later.
    pub(super) fn end(&mut self) {
        self.unsent.borrow_mut().closed = true;
        self.wake.notify_one();
        if let Some(w) = self.writer.take() {
            actix_rt::spawn(async move {
                tokio::time::sleep(WRITER_GRACE).await;
                w.abort();
            });
        }
    }
}

/// The writer task: frames what waits (tungstenite's replies first) into one buffer and
/// hands it to the socket in one write (a tick's frames and the clock before them together,
/// not a write each); sleeps until woken when nothing waits; at the end, the close frame
/// unless one was sent, and the socket shut.
async fn write_out(
    mut write: socket::WriteSide,
    replies: Replies,
    unsent: Rc<RefCell<Unsent>>,
    wake: Rc<Notify>,
    mut advertise: Advertiser,
) {
    let mut out: Vec<u8> = Vec::new();
    let mut closing = false;
    loop {
        out.clear();
        out.append(&mut replies.borrow_mut());
        {
            let mut unsent = unsent.borrow_mut();
            while !closing {
                let Some(next) = unsent.next(&mut advertise) else {
                    break;
                };
                closing = next.frame_into(&mut out);
            }
        }
        if out.is_empty() {
            if closing || unsent.borrow().closed {
                break;
            }
            wake.notified().await;
            continue;
        }
        if write.write_all(&out).await.is_err() {
            return;
        }
        unsent.borrow_mut().progress = Instant::now();
        if out.capacity() > KEEP_BUFFER {
            out = Vec::new();
        }
    }
    let end = async {
        if !closing {
            out.clear();
            socket::message_into(&mut out, &Message::Close(None));
            write.write_all(&out).await?;
        }
        write.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), end).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(m: Option<Out>) -> String {
        match m {
            Some(Out::Message(Message::Text(t))) => t.to_string(),
            Some(Out::Message(Message::Binary(b))) => {
                format!("bin {}", String::from_utf8_lossy(&b))
            }
            Some(Out::Message(other)) => panic!("{other:?}"),
            Some(Out::Reading(head, payload)) => format!("reading {head:?} {payload:?}"),
            None => panic!("nothing"),
        }
    }

    fn no_adverts() -> Advertiser {
        Box::new(|_, _| panic!("nothing to advertise"))
    }

    #[test]
    fn a_newer_frame_takes_the_place_of_the_one_waiting_for_its_subscription() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut u = Unsent::new(t0);
        assert!(!u.frame(1, Bytes::from_static(b"a1"), t0));
        assert!(!u.frame(2, Bytes::from_static(b"b1"), t0));
        assert!(u.frame(1, Bytes::from_static(b"a2"), ms(20)), "replaced");
        assert_eq!(u.dropped, 1);
        let mut adv = no_adverts();
        assert_eq!(text(u.next(&mut adv)), "bin a2", "in the first one's place");
        assert_eq!(text(u.next(&mut adv)), "bin b1");
        assert!(u.next(&mut adv).is_none());
        assert!(
            !u.frame(1, Bytes::from_static(b"a3"), t0),
            "taken: a new place"
        );
    }

    #[test]
    fn a_frame_replaced_within_drop_after_is_not_dropped_but_a_place_kept_waiting_is() {
        // Two readings of one channel that come together (a driver catching up) replace
        // each other before the writer has had a turn: not the connection's doing.
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut u = Unsent::new(t0);
        assert!(!u.frame(1, Bytes::from_static(b"a1"), t0));
        assert!(!u.frame(1, Bytes::from_static(b"a2"), ms(1)), "a burst");
        assert!(
            !u.frame(1, Bytes::from_static(b"a3"), ms(19)),
            "still within"
        );
        assert_eq!(u.dropped, 0);
        // The place keeps its age: a socket that takes nothing makes every later one a
        // drop, however fast the readings come.
        assert!(u.frame(1, Bytes::from_static(b"a4"), ms(20)));
        assert!(u.frame(1, Bytes::from_static(b"a5"), ms(21)));
        assert_eq!(u.dropped, 2);
        let mut adv = no_adverts();
        assert_eq!(text(u.next(&mut adv)), "bin a5", "newest wins either way");
        assert!(
            !u.frame(1, Bytes::from_static(b"a6"), ms(22)),
            "taken: a new place"
        );
    }

    #[test]
    fn control_goes_first_then_the_channels_advertised_then_the_clock_then_data() {
        let t0 = Instant::now();
        let mut u = Unsent::new(t0);
        u.frame(1, Bytes::from_static(b"data"), t0);
        u.time = Some(Bytes::from_static(b"time"));
        u.adverts = Some(0);
        u.picked = Some(Arc::from(vec![3, 4]));
        assert!(u.control(Message::Text("status".into())));
        let mut made = Vec::new();
        let mut adv: Advertiser = Box::new(move |picked, k| {
            made.push(k);
            assert_eq!(picked, Some(&[3, 4][..]));
            (format!("advertise from {k}"), (k == 0).then_some(1))
        });
        let sent: Vec<String> = std::iter::from_fn(|| u.next(&mut adv).map(Some))
            .map(text)
            .collect();
        assert_eq!(
            sent,
            [
                "status",
                "advertise from 0",
                "advertise from 1",
                "bin time",
                "bin data"
            ]
        );
        assert!(!u.pending());
    }

    #[test]
    fn a_client_that_leaves_max_control_messages_waiting_gets_no_more() {
        let mut u = Unsent::new(Instant::now());
        for i in 0..MAX_CONTROL {
            assert!(u.control(Message::Text(format!("{i}").into())), "{i}");
        }
        assert!(!u.control(Message::Text("one too many".into())));
        assert_eq!(u.control.len(), MAX_CONTROL);
    }

    #[test]
    fn a_client_is_stalled_only_while_something_waits_untaken_past_the_timeout() {
        let t0 = Instant::now();
        let s = |n| Duration::from_secs(n);
        let mut u = Unsent::new(t0);
        assert!(!u.stalled(s(5), t0 + s(60)), "nothing waits");
        u.frame(1, Bytes::from_static(b"x"), t0 + s(50));
        assert!(
            !u.stalled(s(5), t0 + s(54)),
            "the clock starts with the frame"
        );
        assert!(u.stalled(s(5), t0 + s(56)));
        assert!(!u.stalled(Duration::ZERO, t0 + s(600)), "zero: never");
        u.progress = t0 + s(56);
        assert!(!u.stalled(s(5), t0 + s(60)), "something was taken");
    }
}
