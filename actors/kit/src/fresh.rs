//! The one rule for telling a new reading of a device from one already taken, used by every
//! consumer of readings in the server: the registry's health check, the sessions (their
//! device lists and inboxes), the front ends' holdings and the recorder.
//!
//! A reading is known by its [`Stamp`]
//! ([`DeviceData::stamp`](crate::driver::DeviceData::stamp)): its number
//! ([`DeviceData::seq`](crate::driver::DeviceData::seq), counted by the driver's
//! [`Publisher`](crate::driver::Publisher), 0 for a driver that does not number) and when
//! it was taken. Numbers rise with every reading, but a driver may number afresh
//! (a restarted driver program, a plugin that made a new publisher): its next readings
//! carry numbers no higher than before. And a consumer may be handed a reading it has
//! already taken (a new reader is sent the newest reading at once), or an older one
//! overtaken by a newer (a message still in a session's mailbox when its inbox gave it the
//! newest). The rule:
//!
//! - the first reading, and one without a number, is new;
//! - a higher number is new, and stands for every reading numbered since the last taken;
//! - a number no higher than the last taken is a new numbering, new and followed from then
//!   on, when the reading was taken later than the last taken one;
//! - otherwise it is that reading again, or an older one: not new.

/// What identifies a reading of one device: its number and when it was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stamp {
    /// [`DeviceData::seq`](crate::driver::DeviceData::seq) (0: the driver does not number).
    pub seq: u64,
    /// [`DeviceData::timestamp`](crate::driver::DeviceData::timestamp): seconds and
    /// microseconds since the Unix epoch.
    pub at: (u32, u32),
}

/// What a reading is to a consumer, by the rule of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The first reading the consumer sees (or the first since it forgot).
    First,
    /// Numbered higher than the last taken: new, standing for this many readings.
    Next(u64),
    /// Numbered no higher, but taken later: the driver numbers afresh; new.
    Renumbered,
    /// Not numbered: new.
    Unnumbered,
    /// The last reading taken, again.
    Same,
    /// Older than the last reading taken (overtaken by it).
    Overtaken,
}

impl Verdict {
    /// Whether the reading is to be taken.
    pub fn is_new(self) -> bool {
        !matches!(self, Verdict::Same | Verdict::Overtaken)
    }

    /// How many readings of the device it stands for (since the last taken): 0 if it is
    /// not new.
    pub fn readings(self) -> u64 {
        match self {
            Verdict::Next(n) => n,
            Verdict::First | Verdict::Renumbered | Verdict::Unnumbered => 1,
            Verdict::Same | Verdict::Overtaken => 0,
        }
    }
}

/// The rule: what `next` is to a consumer whose last reading taken is `last`.
pub fn judge(last: Option<Stamp>, next: Stamp) -> Verdict {
    let Some(last) = last else {
        return Verdict::First;
    };
    if next.seq == 0 {
        return Verdict::Unnumbered;
    }
    if next.seq > last.seq {
        // After an unnumbered reading, a numbered one counts as one.
        return Verdict::Next(if last.seq == 0 {
            1
        } else {
            next.seq - last.seq
        });
    }
    if next.at > last.at {
        Verdict::Renumbered
    } else if next == last {
        Verdict::Same
    } else {
        Verdict::Overtaken
    }
}

/// A consumer's view of one device: the last reading it took, and [`judge`] applied to the
/// next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeqGate(Option<Stamp>);

impl SeqGate {
    /// Nothing taken yet: the next reading is new.
    pub fn new() -> Self {
        Self::default()
    }

    /// A gate that has taken `last`.
    pub fn after(last: Stamp) -> Self {
        SeqGate(Some(last))
    }

    /// What `next` is to this gate (nothing is taken).
    pub fn judge(&self, next: Stamp) -> Verdict {
        judge(self.0, next)
    }

    /// Takes `next` if it is new: how many readings it stands for, or `None` if it is not
    /// new (the gate is unchanged).
    pub fn take(&mut self, next: Stamp) -> Option<u64> {
        let v = self.judge(next);
        if !v.is_new() {
            return None;
        }
        self.0 = Some(next);
        Some(v.readings())
    }

    /// The last reading taken.
    pub fn last(&self) -> Option<Stamp> {
        self.0
    }

    /// Forgets the last reading (the consumer stopped reading the device): the next one is
    /// new, whatever it is.
    pub fn forget(&mut self) {
        self.0 = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reading number `seq` taken at second `sec`.
    fn r(seq: u64, sec: u32) -> Stamp {
        Stamp { seq, at: (sec, 0) }
    }

    #[test]
    fn the_first_reading_is_new() {
        assert_eq!(SeqGate::new().judge(r(41, 1)), Verdict::First);
        assert_eq!(SeqGate::new().take(r(41, 1)), Some(1));
    }

    #[test]
    fn a_higher_number_is_new_and_stands_for_every_reading_since() {
        let mut g = SeqGate::after(r(10, 1));
        assert_eq!(g.take(r(11, 2)), Some(1));
        assert_eq!(g.take(r(15, 3)), Some(4), "four readings since 11");
        // Even one taken at the same instant, or earlier (a clock stepped back, a replay
        // that loops back to its recording's start).
        assert_eq!(g.take(r(16, 3)), Some(1));
        assert_eq!(g.take(r(17, 1)), Some(1));
    }

    #[test]
    fn the_same_reading_again_is_not_new() {
        let mut g = SeqGate::after(r(10, 5));
        assert_eq!(g.judge(r(10, 5)), Verdict::Same);
        assert_eq!(g.take(r(10, 5)), None);
        assert_eq!(g.last(), Some(r(10, 5)));
    }

    #[test]
    fn an_older_reading_overtaken_by_a_newer_one_is_not_new() {
        let mut g = SeqGate::after(r(10, 5));
        assert_eq!(g.judge(r(8, 4)), Verdict::Overtaken);
        assert_eq!(g.judge(r(10, 4)), Verdict::Overtaken);
        assert_eq!(
            g.take(r(9, 5)),
            None,
            "taken at the same instant: not later"
        );
        assert_eq!(g.last(), Some(r(10, 5)));
    }

    #[test]
    fn a_lower_number_taken_later_is_a_new_numbering_and_is_followed() {
        let mut g = SeqGate::after(r(5000, 5));
        assert_eq!(g.judge(r(1, 6)), Verdict::Renumbered);
        assert_eq!(g.take(r(1, 6)), Some(1));
        assert_eq!(g.take(r(2, 6)), Some(1), "the new numbering goes on");
        assert_eq!(g.take(r(1, 6)), None, "and its own older readings stay old");
        // Seen late (the newest only): still at once.
        let mut g = SeqGate::after(r(5000, 5));
        assert_eq!(g.take(r(4000, 9)), Some(1));
    }

    #[test]
    fn an_equal_number_taken_later_is_a_new_numbering() {
        let mut g = SeqGate::after(r(3, 5));
        assert_eq!(g.judge(r(3, 6)), Verdict::Renumbered);
        assert_eq!(g.take(r(3, 6)), Some(1));
    }

    #[test]
    fn readings_without_a_number_are_always_new() {
        let mut g = SeqGate::after(r(7, 5));
        assert_eq!(g.take(r(0, 1)), Some(1));
        assert_eq!(g.take(r(0, 1)), Some(1));
        assert_eq!(
            g.judge(r(3, 2)),
            Verdict::Next(1),
            "a number after none: one"
        );
    }

    #[test]
    fn a_gate_that_forgot_takes_anything() {
        let mut g = SeqGate::after(r(10, 5));
        g.forget();
        assert_eq!(
            g.take(r(10, 5)),
            Some(1),
            "the newest, sent again to a new reader"
        );
    }
}
