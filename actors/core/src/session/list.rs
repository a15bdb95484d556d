//! The client's device list: its devices in the order first requested, what it holds on
//! each and the newest reading of each, readings that came before their grant, the
//! requests in flight, and the inbox where drivers leave readings while the session wants
//! no message per reading.

use super::schedule::Schedule;
use super::Session;
use actix::prelude::*;
use player_kit::driver::{Command, DeviceData, Inbox};
use player_kit::fresh::{self, Stamp};
use player_proto::access;
use std::sync::Arc;

/// One device in the client's list.
pub(super) struct Slot {
    pub(super) code: u8,
    /// r, w, a, c or e.
    pub(super) access: u8,
    pub(super) readable: bool,
    /// Where its commands go and their size, for a device the client may command (boxed:
    /// most slots are only read).
    pub(super) command: Option<Box<(Recipient<Command>, usize)>>,
    pub(super) latest: Option<DeviceData>,
    /// The last reading sent to this client.
    pub(super) sent: Stamp,
}

impl Slot {
    pub(super) fn reads(&self) -> bool {
        self.readable && matches!(self.access, access::READ | access::ALL)
    }

    pub(super) fn writes(&self) -> bool {
        matches!(self.access, access::WRITE | access::ALL)
    }

    /// Leaves the device holding `access` (`c` or `e`): no commands, no data.
    pub(super) fn release(&mut self, access: u8) {
        self.access = access;
        self.command = None;
        self.latest = None;
    }

    /// Whether its newest reading has not been sent yet.
    pub(super) fn is_new(&self) -> bool {
        self.latest.as_ref().is_some_and(|d| d.stamp() != self.sent)
    }
}

/// The client's devices and their readings.
pub(super) struct DeviceList {
    /// In the order first requested.
    pub(super) slots: Vec<Slot>,
    /// Subscriptions in flight and readings that came before their grants: made when the
    /// first is asked for and let go once all are answered and applied.
    pending: Option<Box<Pending>>,
    /// Where the drivers leave readings while this session wants no message per reading.
    inbox: Arc<Inbox>,
    /// Whether the inbox was last told to have readings sent as messages.
    inbox_messages: bool,
}

impl DeviceList {
    pub(super) fn new() -> Self {
        DeviceList {
            slots: Vec::new(),
            pending: None,
            inbox: Inbox::new(),
            inbox_messages: true,
        }
    }

    /// Asks the processor for what a round reaches through pointers: the device slots and
    /// the inbox (each session's own allocations, cold after the other sessions' rounds).
    pub(super) fn prefetch(&self) {
        let slots = &self.slots;
        crate::timer::prefetch(slots.as_ptr().cast(), std::mem::size_of_val(&slots[..]));
        crate::timer::prefetch(
            Arc::as_ptr(&self.inbox).cast(),
            std::mem::size_of::<Inbox>(),
        );
    }

    /// An empty list on the same inbox: what the session holds while it lends its list to
    /// its thread's tick (`park.rs`).
    pub(super) fn lent(&self) -> Self {
        DeviceList {
            slots: Vec::new(),
            pending: None,
            inbox: self.inbox.clone(),
            inbox_messages: self.inbox_messages,
        }
    }

    /// The inbox the drivers leave this session's readings in.
    pub(super) fn inbox(&self) -> Arc<Inbox> {
        self.inbox.clone()
    }

    /// Whether every read device has a reading.
    pub(super) fn ready(&self) -> bool {
        self.slots.iter().all(|s| !s.reads() || s.latest.is_some())
    }

    /// Whether the client reads any device.
    pub(super) fn any_reads(&self) -> bool {
        self.slots.iter().any(Slot::reads)
    }

    /// Whether a read device has a reading the client has not had.
    pub(super) fn any_new(&self) -> bool {
        self.slots.iter().any(|s| s.reads() && s.is_new())
    }

    /// The read devices with no reading yet, for the log.
    pub(super) fn quiet_devices(&self) -> Vec<String> {
        self.slots
            .iter()
            .filter(|s| s.reads() && s.latest.is_none())
            .map(|s| player_kit::log::device(s.code))
            .collect()
    }

    /// The access the client holds on `dev` (one of `r w a c e`); `None` when the device is
    /// not in its list.
    pub(super) fn access_of(&self, dev: u8) -> Option<u8> {
        self.slots.iter().find(|s| s.code == dev).map(|s| s.access)
    }

    /// A subscription to `dev` is in flight.
    pub(super) fn requesting(&mut self, dev: u8) {
        self.pending
            .get_or_insert_with(Default::default)
            .requesting
            .push(dev);
    }

    /// The subscriptions in flight have been answered.
    pub(super) fn answered(&mut self) {
        if let Some(p) = &mut self.pending {
            p.requesting.clear();
        }
        self.let_pending_go();
    }

    /// Whether a subscription is in flight.
    pub(super) fn awaiting_grants(&self) -> bool {
        self.pending
            .as_ref()
            .is_some_and(|p| !p.requesting.is_empty())
    }

    /// The reading of `dev` that came before its grant, if any (and forgets it).
    pub(super) fn take_early(&mut self, dev: u8) -> Option<DeviceData> {
        let p = self.pending.as_mut()?;
        let d = p
            .early
            .iter()
            .position(|d| d.device == dev)
            .map(|i| p.early.swap_remove(i));
        self.let_pending_go();
        d
    }

    /// Drops the pending state once nothing is in flight or early: it exists only while
    /// grants are asked for and applied, not for the session's life.
    fn let_pending_go(&mut self) {
        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.requesting.is_empty() && p.early.is_empty())
        {
            self.pending = None;
        }
    }

    /// Takes one reading. `Some(first)`: it is now its device's newest (`first`: the
    /// device had none). `pending_only`: keep a reading for a device not (yet) in the
    /// list only if a request for it is in flight (a batch carries devices this client
    /// never asked for).
    pub(super) fn take(&mut self, msg: DeviceData, pending_only: bool) -> Option<bool> {
        take_reading(&mut self.slots, &mut self.pending, msg, pending_only)
    }
}

/// What a session has while it asks the registry for devices.
#[derive(Default)]
struct Pending {
    /// Readings that arrived for a device before its grant was applied, one per device.
    early: Vec<DeviceData>,
    /// Devices whose subscription is in flight.
    requesting: Vec<u8>,
}

/// [`DeviceList::take`] on the list's parts (so the inbox can hand readings over while it
/// is borrowed).
fn take_reading(
    slots: &mut [Slot],
    pending: &mut Option<Box<Pending>>,
    msg: DeviceData,
    pending_only: bool,
) -> Option<bool> {
    let requested = |pending: &Option<Box<Pending>>| {
        pending
            .as_ref()
            .is_some_and(|p| p.requesting.contains(&msg.device))
    };
    let Some(slot) = slots.iter_mut().find(|s| s.code == msg.device) else {
        if !pending_only || requested(pending) {
            keep_early(pending, msg);
        }
        return None;
    };
    if !slot.reads() {
        if slot.access != access::CLOSE && (!pending_only || requested(pending)) {
            keep_early(pending, msg);
        }
        return None;
    }
    if slot
        .latest
        .as_ref()
        .is_some_and(|l| !fresh::judge(Some(l.stamp()), msg.stamp()).is_new())
    {
        return None;
    }
    let first = slot.latest.is_none();
    slot.latest = Some(msg);
    Some(first)
}

/// Keeps `msg` as its device's early reading, replacing an older one (never a newer: the
/// rule of [`fresh`]). Readings reach a session by two ways that can cross, the mailbox
/// (a device's current reading, sent as it is subscribed) and the inbox (the next ones,
/// shelved while the session wants no messages): the tick can take a newer reading from
/// the inbox before the mailbox hands over the older one, and a round built then would
/// pair the older reading of one device with the newer of another from the same batch.
fn keep_early(pending: &mut Option<Box<Pending>>, msg: DeviceData) {
    let early = &mut pending.get_or_insert_with(Default::default).early;
    match early.iter_mut().find(|d| d.device == msg.device) {
        Some(d) => {
            if fresh::judge(Some(d.stamp()), msg.stamp()).is_new() {
                *d = msg;
            }
        }
        None => early.push(msg),
    }
}

impl Session {
    /// Takes one reading; returns whether it may make something sendable.
    pub(super) fn take(&mut self, msg: DeviceData, pending_only: bool) -> bool {
        self.list
            .take(msg, pending_only)
            .is_some_and(|first| self.timers.schedule().reading_matters(first))
    }

    /// Whether this session needs a message per reading now: unless it sends rounds on
    /// deadlines, has every first reading and no round waits for data, a reading must wake
    /// it. Otherwise its next tick picks the newest readings up from the inbox.
    pub(super) fn wants_messages(&self) -> bool {
        wants_messages(&self.list, &self.timers.schedule())
    }

    /// Takes the readings left in the inbox (as if they had come as messages) and tells it
    /// whether readings should come as messages from now on, until both agree.
    pub(super) fn sync_inbox(&mut self, ctx: &mut Context<Self>) {
        while self.list.drain_inbox(&self.timers.schedule()) {
            self.after_change(ctx);
        }
    }

    /// [`Self::sync_inbox`] when whether this session wants messages has changed.
    pub(super) fn refresh_inbox(&mut self, ctx: &mut Context<Self>) {
        if self.wants_messages() != self.list.inbox_messages {
            self.sync_inbox(ctx);
        }
    }
}

/// [`Session::wants_messages`] of a device list and a schedule.
pub(super) fn wants_messages(list: &DeviceList, schedule: &Schedule) -> bool {
    schedule.wants_every_reading() || list.awaiting_grants() || !list.ready()
}

impl DeviceList {
    /// Takes the readings left in the inbox and tells it whether readings should come as
    /// messages from now on; returns whether a reading may have made something sendable
    /// (then the session looks, and drains again), false when the inbox was empty or
    /// nothing it held mattered and both agree.
    pub(super) fn drain_inbox(&mut self, schedule: &Schedule) -> bool {
        loop {
            let want = wants_messages(self, schedule);
            let mut changed = false;
            let DeviceList {
                slots,
                pending,
                inbox,
                ..
            } = self;
            let taken = inbox.take_each(want, |d| {
                changed |= take_reading(slots, pending, d, true)
                    .is_some_and(|first| schedule.reading_matters(first));
            });
            self.inbox_messages = want;
            if taken == 0 {
                return false;
            }
            if changed {
                return true;
            }
        }
    }

    /// Whether the inbox was last told to have readings sent as messages.
    pub(super) fn inbox_messages(&self) -> bool {
        self.inbox_messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use player_kit::driver::Timestamp;

    fn reading(device: u8, seq: u64) -> DeviceData {
        DeviceData {
            device,
            data: Bytes::from_static(&[1]),
            timestamp: Timestamp { sec: 0, usec: 0 },
            seq,
        }
    }

    /// Reading number `seq` of the laser, taken at second `sec`.
    fn laser(seq: u64, sec: u32) -> DeviceData {
        DeviceData {
            timestamp: Timestamp { sec, usec: 0 },
            ..reading(b'l', seq)
        }
    }

    #[test]
    fn a_slot_takes_a_reading_numbered_afresh_at_once_and_never_an_older_one() {
        let mut l = DeviceList::new();
        l.slots.push(Slot {
            code: b'l',
            access: access::READ,
            readable: true,
            command: None,
            latest: None,
            sent: Stamp::default(),
        });
        assert_eq!(l.take(laser(500, 10), false), Some(true), "the first");
        assert!(l.slots[0].is_new());
        l.slots[0].sent = l.slots[0].latest.as_ref().unwrap().stamp();
        assert!(!l.slots[0].is_new(), "sent");
        assert_eq!(l.take(laser(500, 10), false), None, "the same again");
        assert_eq!(l.take(laser(499, 9), false), None, "older");
        assert_eq!(l.take(laser(1, 11), false), Some(false), "numbered afresh");
        assert!(l.slots[0].is_new());
        assert_eq!(l.slots[0].latest.as_ref().map(|d| d.seq), Some(1));
    }

    #[test]
    fn a_reading_before_its_grant_waits_for_it_and_the_wait_leaves_nothing_behind() {
        let mut l = DeviceList::new();
        l.requesting(b'p');
        assert!(l.awaiting_grants());
        // In a batch: kept for a device asked for, dropped for one that was not.
        assert_eq!(l.take(reading(b'p', 1), true), None);
        assert_eq!(l.take(reading(b'p', 2), true), None);
        assert_eq!(l.take(reading(b's', 1), true), None);
        l.answered();
        assert!(!l.awaiting_grants());
        assert!(l.take_early(b's').is_none());
        assert_eq!(l.take_early(b'p').map(|d| d.seq), Some(2));
        assert!(l.take_early(b'p').is_none());
        assert!(l.pending.is_none());
        // A single reading for a device not listed is kept even with nothing asked for.
        assert_eq!(l.take(reading(b'l', 3), false), None);
        assert!(!l.awaiting_grants());
        assert_eq!(l.take_early(b'l').map(|d| d.seq), Some(3));
        assert!(l.pending.is_none());
    }

    #[test]
    fn an_early_reading_is_never_replaced_by_an_older_one() {
        // The inbox's reading 4 taken before the mailbox's reading 3 of the same device
        // (its current reading, sent as it was subscribed): 4 stays the first.
        let mut l = DeviceList::new();
        l.requesting(b'O');
        assert_eq!(l.take(reading(b'O', 4), true), None);
        assert_eq!(l.take(reading(b'O', 3), false), None);
        assert_eq!(l.take(reading(b'O', 5), true), None);
        l.answered();
        assert_eq!(l.take_early(b'O').map(|d| d.seq), Some(5));
    }
}
