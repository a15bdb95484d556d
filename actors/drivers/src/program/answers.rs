//! Config answers from a driver program: a program serving one of the devices that answer
//! configs (the navigation extensions `M`, `H`, `G`: docs/extensions.md) answers a client's
//! config with `x` reply frames, each sent to that client as one answer packet (`y` of the
//! device's kind). Devices of the 0.7.4a manual get no answers (its clients would not know
//! the packet): their replies are only logged, as before.
//!
//! The return addresses of the most recent [`MAX_PENDING`] answerable configs are kept; a
//! program may send several replies to one config (particles in pieces), until its address
//! is pushed out by newer configs or the program restarts.

use player_kit::answer::AnswerTo;
use player_proto::device;
use std::collections::VecDeque;

/// Most configs whose answers a program may still send.
pub const MAX_PENDING: usize = 64;

/// Whether configs of a device with this code are answered (the program's own code).
pub fn answers_configs(code: u8) -> bool {
    matches!(code, device::MAP | device::LOCALIZE | device::PLANNER)
}

/// The return addresses of recent answerable configs, by the id sent to the program.
#[derive(Default)]
pub struct PendingAnswers {
    recent: VecDeque<(u32, AnswerTo)>,
}

impl PendingAnswers {
    /// Keeps `to` for config `id` of device `code`, if the device answers and someone
    /// takes the answer; the oldest address goes past [`MAX_PENDING`].
    pub fn expect(&mut self, id: u32, code: u8, to: AnswerTo) {
        if !answers_configs(code) || !to.wanted() {
            return;
        }
        if self.recent.len() == MAX_PENDING {
            self.recent.pop_front();
        }
        self.recent.push_back((id, to));
    }

    /// Where a reply to config `id` goes, if anywhere (the address stays for more).
    pub fn to(&self, id: u32) -> Option<AnswerTo> {
        self.recent
            .iter()
            .rev()
            .find(|(i, _)| *i == id)
            .map(|(_, to)| to.clone())
    }

    /// Forgets every address (the program restarted: its ids start again).
    pub fn clear(&mut self) {
        self.recent.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix::prelude::*;
    use player_kit::answer::ConfigAnswer;

    struct Sink;

    impl Actor for Sink {
        type Context = Context<Self>;
    }

    impl Handler<ConfigAnswer> for Sink {
        type Result = ();
        fn handle(&mut self, _: ConfigAnswer, _: &mut Self::Context) {}
    }

    #[test]
    fn only_answering_devices_with_a_taker_are_kept_and_the_bound_holds() {
        System::new().block_on(async {
            let to = Sink.start().recipient::<ConfigAnswer>();
            let mut p = PendingAnswers::default();
            p.expect(1, b'H', AnswerTo::none());
            assert!(p.to(1).is_none(), "nobody takes it");
            p.expect(2, b'p', AnswerTo::new(b'p', to.clone()));
            assert!(p.to(2).is_none(), "p is the manual's: no answers");
            let n = MAX_PENDING as u32 + 6;
            for id in 0..n {
                p.expect(id, b'G', AnswerTo::new(b'G', to.clone()));
            }
            assert_eq!(p.recent.len(), MAX_PENDING);
            assert!((0..6).all(|id| p.to(id).is_none()), "the oldest went");
            assert!((6..n).all(|id| p.to(id).is_some_and(|a| a.device() == b'G')));
            assert!(p.to(9).is_some(), "an address stays for more replies");
            p.clear();
            assert!(p.to(n - 1).is_none());
        });
    }
}
