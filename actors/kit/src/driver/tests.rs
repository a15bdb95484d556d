//! The publisher's and the inbox's tests: batches, newcomers, the shelf.
use super::*;
use std::sync::Mutex;

#[derive(Default)]
struct Seen {
    singles: Vec<u8>,
    batches: Vec<Vec<u8>>,
}

struct Collector(Arc<Mutex<Seen>>);

impl Actor for Collector {
    type Context = Context<Self>;
}

impl Handler<DeviceData> for Collector {
    type Result = ();
    fn handle(&mut self, msg: DeviceData, _: &mut Self::Context) {
        self.0.lock().unwrap().singles.push(msg.device);
    }
}

impl Handler<DeviceDataBatch> for Collector {
    type Result = ();
    fn handle(&mut self, msg: DeviceDataBatch, _: &mut Self::Context) {
        let devices = msg.0.iter().map(|d| d.device).collect();
        self.0.lock().unwrap().batches.push(devices);
    }
}

/// A publisher of `devices` to one session (id 1) that has an inbox, its readings seen
/// by a collector: the inbox, the publisher and what came as messages.
fn inbox_reader(devices: [u8; 2]) -> (Arc<Inbox>, Publisher, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let inbox = Inbox::new();
    let r = DataRecipient::with_inbox(&Collector(seen.clone()).start(), inbox.clone());
    let mut p = Publisher::new();
    for device in devices {
        p.set_subscribers(Subscribers {
            device,
            session: SessionId::from(1),
            recipient: Some(r.clone()),
        });
    }
    (inbox, p, seen)
}

#[actix_rt::test]
async fn a_batch_reaches_each_reader_once_and_newcomers_get_the_latest() {
    let seen_a = Arc::new(Mutex::new(Seen::default()));
    let seen_b = Arc::new(Mutex::new(Seen::default()));
    let a = DataRecipient::of(&Collector(seen_a.clone()).start());
    let b = DataRecipient::of(&Collector(seen_b.clone()).start());
    let mut p = Publisher::new();
    // Session 1 reads p and s, session 2 reads only l.
    for (device, session, r) in [(b'p', 1, &a), (b's', 1, &a), (b'l', 2, &b)] {
        p.set_subscribers(Subscribers {
            device,
            session: SessionId::from(session),
            recipient: Some(r.clone()),
        });
    }
    let batch = vec![
        (b'p', Bytes::from_static(&[1])),
        (b's', Bytes::from_static(&[2])),
    ];
    p.publish_batch(batch, Timestamp::now());
    // Session 2 starts reading s: it is sent s's latest reading at once.
    p.set_subscribers(Subscribers {
        device: b's',
        session: SessionId::from(2),
        recipient: Some(b.clone()),
    });
    // Session 1 stops reading p and s: later batches do not reach it.
    for device in [b'p', b's'] {
        p.set_subscribers(Subscribers {
            device,
            session: SessionId::from(1),
            recipient: None,
        });
    }
    p.publish_batch(vec![(b's', Bytes::from_static(&[3]))], Timestamp::now());
    actix_rt::time::sleep(std::time::Duration::from_millis(50)).await;
    let a = seen_a.lock().unwrap();
    assert_eq!(
        a.batches,
        vec![vec![b'p', b's']],
        "one message, both devices"
    );
    assert!(a.singles.is_empty());
    let b = seen_b.lock().unwrap();
    assert_eq!(b.singles, vec![b's']);
    assert_eq!(b.batches, vec![vec![b's']]);
}

#[actix_rt::test]
async fn an_inbox_keeps_the_newest_reading_per_device_while_its_owner_wants_no_message() {
    let (inbox, mut p, seen) = inbox_reader([b'p', b's']);
    // Wanting messages (the default): a batch is a message.
    p.publish_batch(vec![(b'p', Bytes::from_static(&[1]))], Timestamp::now());
    let mut got = Vec::new();
    inbox.take(false, &mut got);
    assert!(got.is_empty());
    // Not wanting them: readings wait in the inbox, newest per device, no message.
    for v in 2..5u8 {
        p.publish_batch(
            vec![(b'p', Bytes::from(vec![v])), (b's', Bytes::from(vec![v]))],
            Timestamp::now(),
        );
    }
    p.publish(b's', Bytes::from_static(&[9]));
    inbox.take(true, &mut got);
    got.sort_by_key(|d| d.device);
    let kept: Vec<(u8, u8)> = got.iter().map(|d| (d.device, d.data[0])).collect();
    assert_eq!(kept, vec![(b'p', 4), (b's', 9)]);
    // Wanting messages again: the next reading is sent.
    p.publish(b'p', Bytes::from_static(&[7]));
    inbox.take(true, &mut got);
    assert!(got.is_empty());
    actix_rt::time::sleep(std::time::Duration::from_millis(50)).await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.batches, vec![vec![b'p']]);
    assert_eq!(seen.singles, vec![b'p']);
}

#[actix_rt::test]
async fn an_inbox_takes_a_reading_numbered_afresh_but_never_an_older_one() {
    let (inbox, mut p, _seen) = inbox_reader([b'p', b's']);
    let mut got = Vec::new();
    inbox.take(false, &mut got);
    let at = |sec| Timestamp { sec, usec: 0 };
    p.publish_at(b'p', Bytes::from_static(&[1]), at(10));
    p.publish_at(b'p', Bytes::from_static(&[2]), at(11));
    // Numbered afresh (seq 1 again), taken later: it replaces the old numbering's 2.
    p.renumber(b'p');
    p.publish_at(b'p', Bytes::from_static(&[3]), at(12));
    // Numbered afresh again but taken earlier than the shelved one: older, kept out.
    p.renumber(b'p');
    p.publish_at(b'p', Bytes::from_static(&[4]), at(5));
    inbox.take(false, &mut got);
    let kept: Vec<(u8, u64)> = got.iter().map(|d| (d.data[0], d.seq)).collect();
    assert_eq!(kept, vec![(3, 1)]);
}

#[actix_rt::test]
async fn take_each_hands_over_the_newest_reading_per_device_once_and_sets_the_switch() {
    let (inbox, mut p, seen) = inbox_reader([b'p', b's']);
    assert_eq!(inbox.take_each(false, |_| panic!("nothing shelved yet")), 0);
    for v in 2..5u8 {
        p.publish_batch(
            vec![(b'p', Bytes::from(vec![v])), (b's', Bytes::from(vec![v]))],
            Timestamp::now(),
        );
    }
    p.publish(b'p', Bytes::from_static(&[8]));
    // Room for the two devices seen, no more.
    assert_eq!(inbox.lock().readings.capacity(), 2);
    let mut got = Vec::new();
    let n = inbox.take_each(false, |d| got.push((d.device, d.data[0])));
    got.sort();
    assert_eq!((n, got), (2, vec![(b'p', 8), (b's', 4)]));
    // Taken once: nothing is left (the room stays for the next readings), and readings
    // still wait while no message is wanted.
    assert_eq!(inbox.take_each(false, |_| panic!("taken twice")), 0);
    assert_eq!(inbox.lock().readings.capacity(), 2);
    p.publish(b's', Bytes::from_static(&[9]));
    let mut got = Vec::new();
    assert_eq!(inbox.take_each(true, |d| got.push(d.data[0])), 1);
    assert_eq!(got, vec![9]);
    // Wanting messages: the next reading is a message, not shelved.
    p.publish(b'p', Bytes::from_static(&[7]));
    assert_eq!(
        inbox.take_each(true, |_| panic!("shelved a wanted message")),
        0
    );
    assert_eq!(first_singles(&seen).await, vec![b'p']);
}

/// The single readings the collector has got, once it has got any (waits up to 2 s).
async fn first_singles(seen: &Arc<Mutex<Seen>>) -> Vec<u8> {
    for _ in 0..400 {
        if !seen.lock().unwrap().singles.is_empty() {
            break;
        }
        actix_rt::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    seen.lock().unwrap().singles.clone()
}

#[actix_rt::test]
async fn a_take_of_an_empty_shelf_still_sets_the_switch() {
    let (inbox, mut p, seen) = inbox_reader([b'p', b's']);
    // Empty twice over (the second take finds nothing shelved and the switch as it
    // is), then an empty take that turns messages back on: the next reading is sent.
    assert_eq!(inbox.take_each(false, |_| panic!("empty")), 0);
    assert_eq!(inbox.take_each(false, |_| panic!("empty")), 0);
    p.publish(b'p', Bytes::from_static(&[1]));
    assert_eq!(inbox.take_each(false, |d| assert_eq!(d.data[0], 1)), 1);
    assert_eq!(inbox.take_each(true, |_| panic!("empty")), 0);
    p.publish(b's', Bytes::from_static(&[2]));
    assert_eq!(
        inbox.take_each(true, |_| panic!("shelved a wanted message")),
        0
    );
    assert_eq!(first_singles(&seen).await, vec![b's']);
    // And off again with nothing shelved: the next reading waits on the shelf.
    assert_eq!(inbox.take_each(false, |_| panic!("empty")), 0);
    p.publish(b'p', Bytes::from_static(&[3]));
    assert_eq!(inbox.take_each(false, |d| assert_eq!(d.data[0], 3)), 1);
}

#[actix_rt::test]
async fn a_round_taken_while_a_batch_is_shelved_sees_all_of_the_batch_or_none() {
    let (inbox, mut p, _) = inbox_reader([b'l', b'L']);
    let mut got = Vec::new();
    inbox.take(false, &mut got);
    // The owner takes rounds on its own thread while the batches of one scan (`l` and
    // `L` with the same value) are shelved: every take has both at the same value.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let owner = {
        let (inbox, stop) = (inbox.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut mixed = 0;
            let mut takes = 0;
            let mut got = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                inbox.take(false, &mut got);
                if got.is_empty() {
                    continue;
                }
                takes += 1;
                let l = got
                    .iter()
                    .find(|d| d.device == b'l')
                    .map(|d| d.data.clone());
                let big = got
                    .iter()
                    .find(|d| d.device == b'L')
                    .map(|d| d.data.clone());
                if l != big {
                    mixed += 1;
                }
            }
            (takes, mixed)
        })
    };
    for v in 0..20_000u32 {
        let b = Bytes::from(v.to_be_bytes().to_vec());
        p.publish_batch(vec![(b'l', b.clone()), (b'L', b)], Timestamp::now());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (takes, mixed) = owner.join().unwrap();
    assert!(takes > 0, "the owner took nothing");
    assert_eq!(
        mixed, 0,
        "{mixed} of {takes} takes had l and L of different scans"
    );
}

#[derive(Default)]
struct Labelled(Vec<(u8, u8)>);

struct LabelCollector(Arc<Mutex<Labelled>>);

impl Actor for LabelCollector {
    type Context = Context<Self>;
}

impl Handler<DeviceData> for LabelCollector {
    type Result = ();
    fn handle(&mut self, msg: DeviceData, _: &mut Self::Context) {
        self.0.lock().unwrap().0.push((msg.device, msg.data[0]));
    }
}

impl Handler<DeviceDataBatch> for LabelCollector {
    type Result = ();
    fn handle(&mut self, msg: DeviceDataBatch, _: &mut Self::Context) {
        let mut s = self.0.lock().unwrap();
        s.0.extend(msg.0.iter().map(|d| (d.device, d.data[0])));
    }
}

#[actix_rt::test]
async fn a_labelled_publisher_stamps_readings_with_the_served_code() {
    use crate::labels::Labels;
    let seen = Arc::new(Mutex::new(Labelled::default()));
    let r = DataRecipient::of(&LabelCollector(seen.clone()).start());
    // The driver's `p` is served as `O`; its `s` as itself.
    let mut p = Publisher::labelled(Labels::new([(b'p', b'O')]));
    p.set_subscribers(Subscribers {
        device: b'p',
        session: SessionId::from(1),
        recipient: Some(r.clone()),
    });
    p.publish_batch(
        vec![
            (b'p', Bytes::from_static(&[1])),
            (b's', Bytes::from_static(&[2])),
        ],
        Timestamp::now(),
    );
    p.publish(b'p', Bytes::from_static(&[3]));
    // A newcomer to `s` gets its latest, under `s`.
    p.set_subscribers(Subscribers {
        device: b's',
        session: SessionId::from(1),
        recipient: Some(r),
    });
    for _ in 0..400 {
        if seen.lock().unwrap().0.len() >= 4 {
            break;
        }
        actix_rt::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let got = seen.lock().unwrap().0.clone();
    assert_eq!(got, vec![(b'O', 1), (b's', 2), (b'O', 3), (b's', 2)]);
}
