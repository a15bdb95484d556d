//! Answers to configs: a driver may answer a config with data for the client that sent it
//! (a map's tile, the particles of a localizer, a plan's waypoints).
//!
//! Every [`Config`](crate::driver::Config) carries an [`AnswerTo`]: where its answer goes
//! (the TCP session that sent it, a front end, or nowhere). A driver that answers calls
//! [`AnswerTo::send`] once, with one or more packet bodies, each the device's answer layout
//! (`player_proto::nav`: the map's tile as the issue gives it, `<u32 map_id, col, row, w,
//! h>` and the cells; a localizer's particles and a planner's waypoints as Player 1.6.5's,
//! the config code in the subtype's place); the session writes each body as a `y` packet
//! of the device's kind (`y <u16 size> <device> <body>`,
//! `player_proto::ext::answer_packet`), between rounds, whether or not the client turned
//! notices on. A driver that does not answer ignores the
//! field: nothing is sent.
//!
//! Answers are bounded: one per config (`send` takes the `AnswerTo`), each body at most
//! [`MAX_ANSWER_BODY`] bytes, all of one answer at most [`MAX_ANSWER_BYTES`]. A larger
//! result is cut by the driver into pieces the client asks for one by one (a map's tiles)
//! or that carry their place in the whole (the particles' index).
//!
//! So are the configs waiting at drivers: a sender (a client's session, a front end's
//! robot) takes a [`ConfigPlace`] from its [`ConfigPlaces`] for each config it sends, and
//! the place travels in the config's `AnswerTo` until the driver has answered or dropped
//! it. A sender with [`MAX_CONFIGS_WAITING`] configs waiting has the next refused, so a
//! client that sends configs faster than a driver takes them (a localizer busy with its
//! filter) cannot grow the driver's mailbox without end.

use actix::prelude::*;
use bytes::Bytes;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The most configs one sender may have waiting at drivers (sent and neither answered nor
/// dropped): far more than any client pipelines (a whole map's tiles at once), a few tens
/// of kilobytes held per client.
pub const MAX_CONFIGS_WAITING: usize = 256;

/// One sender's count of its configs waiting at drivers.
#[derive(Debug, Clone, Default)]
pub struct ConfigPlaces(Arc<AtomicUsize>);

impl ConfigPlaces {
    /// A place for one more config, or why not while [`MAX_CONFIGS_WAITING`] wait.
    pub fn take(&self) -> Result<ConfigPlace, ConfigsWaiting> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_CONFIGS_WAITING).then_some(n + 1)
            })
            .map(|_| ConfigPlace(self.0.clone()))
            .map_err(|_| ConfigsWaiting)
    }

    /// How many configs wait.
    pub fn waiting(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

/// Why a sender's config was refused, in the words every front end tells its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{MAX_CONFIGS_WAITING} of this client's configs wait at their drivers already")]
pub struct ConfigsWaiting;

/// One config's place among its sender's: given back when dropped (with the config's
/// [`AnswerTo`], once the driver has answered or dropped it).
#[derive(Debug)]
pub struct ConfigPlace(Arc<AtomicUsize>);

impl Drop for ConfigPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

pub use player_proto::ext::MAX_ANSWER_BODY;

/// The most bytes of bodies one answer may carry (100 particles of 5000 in 50 packets
/// take about 82 KiB).
pub const MAX_ANSWER_BYTES: usize = 128 * 1024;

/// Driver → the sender of a config: the answer. `bodies` are written each as one `y`
/// packet of kind `device`, in order.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct ConfigAnswer {
    /// The device that answers, as the robot serves it (the packets' kind).
    pub device: u8,
    /// The packets' bodies, each the device's answer layout.
    pub bodies: Arc<[Bytes]>,
}

/// Why an answer was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// A body is empty or over [`MAX_ANSWER_BODY`].
    #[error("an answer's body must hold 1 to {MAX_ANSWER_BODY} bytes")]
    BadBody,
    /// The bodies add up to more than [`MAX_ANSWER_BYTES`].
    #[error("an answer of {0} bytes is over the bound of {MAX_ANSWER_BYTES}")]
    TooBig(usize),
    /// The device's code is a notice kind: a client could not tell its answers from
    /// notices (`player_proto::ext::kind::ALL`).
    #[error("device {} cannot answer: its code is a notice kind", crate::log::code(*.0))]
    Unanswerable(u8),
}

/// Where a config's answer goes: the sender's address and the device's code as the robot
/// serves it, or nowhere.
#[derive(Clone, Default)]
pub struct AnswerTo {
    device: u8,
    to: Option<Recipient<ConfigAnswer>>,
    /// The config's place among its sender's, given back when the last copy is dropped.
    place: Option<Arc<ConfigPlace>>,
}

impl fmt::Debug for AnswerTo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnswerTo")
            .field("device", &crate::log::code(self.device))
            .field("wanted", &self.to.is_some())
            .finish()
    }
}

impl AnswerTo {
    /// Answers for `device` (its served code) go to `to`.
    pub fn new(device: u8, to: Recipient<ConfigAnswer>) -> Self {
        AnswerTo {
            device,
            to: Some(to),
            place: None,
        }
    }

    /// The same, holding the config's place among its sender's until dropped.
    pub fn holding(mut self, place: Option<ConfigPlace>) -> Self {
        self.place = place.map(Arc::new);
        self
    }

    /// Answers go nowhere (the sender takes none).
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether anyone takes the answer (a driver may skip the work when nobody does).
    pub fn wanted(&self) -> bool {
        self.to.is_some()
    }

    /// The device the answer is of (its served code), 0 when nobody takes it.
    pub fn device(&self) -> u8 {
        self.device
    }

    /// Sends the answer: `bodies`, each one `y` packet. Checked against the bounds first;
    /// nothing is sent when one is broken. Sending where nobody takes it succeeds.
    pub fn send(self, bodies: Vec<Bytes>) -> Result<(), AnswerError> {
        let Some(to) = self.to else {
            return Ok(());
        };
        if self.device == 0 || player_proto::ext::kind::ALL.contains(&self.device) {
            return Err(AnswerError::Unanswerable(self.device));
        }
        if bodies
            .iter()
            .any(|b| b.is_empty() || b.len() > MAX_ANSWER_BODY)
        {
            return Err(AnswerError::BadBody);
        }
        let total: usize = bodies.iter().map(Bytes::len).sum();
        if total > MAX_ANSWER_BYTES {
            return Err(AnswerError::TooBig(total));
        }
        to.do_send(ConfigAnswer {
            device: self.device,
            bodies: bodies.into(),
        });
        Ok(())
    }

    /// Sends an answer of one body.
    pub fn send_one(self, body: impl Into<Bytes>) -> Result<(), AnswerError> {
        self.send(vec![body.into()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Taker(Arc<Mutex<Vec<ConfigAnswer>>>);

    impl Actor for Taker {
        type Context = Context<Self>;
    }

    impl Handler<ConfigAnswer> for Taker {
        type Result = ();
        fn handle(&mut self, msg: ConfigAnswer, _: &mut Self::Context) {
            self.0.lock().unwrap().push(msg);
        }
    }

    #[actix_rt::test]
    async fn an_answer_within_the_bounds_arrives_once_and_others_are_refused() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let to = Taker(got.clone()).start().recipient();
        let a = AnswerTo::new(b'M', to.clone());
        assert!(a.wanted());
        a.send(vec![Bytes::from_static(b"t123"), Bytes::from_static(b"t4")])
            .unwrap();
        let over = vec![Bytes::from(vec![b'g'; MAX_ANSWER_BODY]); 3];
        assert_eq!(
            AnswerTo::new(b'H', to.clone()).send(over),
            Err(AnswerError::TooBig(3 * MAX_ANSWER_BODY))
        );
        assert_eq!(
            AnswerTo::new(b'H', to.clone()).send(vec![Bytes::new()]),
            Err(AnswerError::BadBody)
        );
        assert_eq!(
            AnswerTo::new(b'c', to.clone()).send_one(&b"x"[..]),
            Err(AnswerError::Unanswerable(b'c'))
        );
        assert_eq!(AnswerTo::none().send_one(&b"x"[..]), Ok(()));
        for _ in 0..100 {
            if !got.lock().unwrap().is_empty() {
                break;
            }
            actix_rt::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        actix_rt::time::sleep(std::time::Duration::from_millis(20)).await;
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].device, b'M');
        assert_eq!(&got[0].bodies[..], &[&b"t123"[..], &b"t4"[..]]);
    }

    #[test]
    fn a_sender_has_at_most_the_bound_of_configs_waiting_each_given_back_with_its_answer() {
        let places = ConfigPlaces::default();
        let mut held: Vec<AnswerTo> = (0..MAX_CONFIGS_WAITING)
            .map(|_| AnswerTo::none().holding(places.take().ok()))
            .collect();
        assert_eq!(places.waiting(), MAX_CONFIGS_WAITING);
        assert_eq!(
            places.take().err(),
            Some(ConfigsWaiting),
            "one past the bound"
        );
        // A copy of the answer keeps the place; the last copy gives it back.
        let copy = held[0].clone();
        held.remove(0);
        assert!(places.take().is_err());
        assert_eq!(copy.send_one(&b"x"[..]), Ok(()));
        let again = places.take().expect("a place given back");
        assert_eq!(places.waiting(), MAX_CONFIGS_WAITING);
        drop(again);
        held.clear();
        assert_eq!(places.waiting(), 0);
    }
}
