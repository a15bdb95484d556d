//! Framing tests against a scripted peer: a real loopback `TcpListener` playing the server
//! byte for byte, so that splits, timeouts and closes happen on a real socket.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use player_proto::data::{Laser, Misc, Position, Sonar};
use player_proto::message::{data, reply, ServerMessage};

use crate::{Client, DataMode, Error};

const PATIENCE: Duration = Duration::from_secs(5);

/// The server side of a test connection.
struct Peer {
    s: TcpStream,
}

impl Peer {
    /// Reads exactly `bytes.len()` bytes and checks they are `bytes`.
    fn expect(&mut self, bytes: &[u8]) {
        let mut got = vec![0; bytes.len()];
        self.s
            .read_exact(&mut got)
            .expect("peer reads what the client sent");
        assert_eq!(got, bytes, "the client sent other bytes");
    }

    fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("peer writes");
    }

    /// Sends `bytes` in pieces of `piece` bytes with a pause after each.
    fn send_in_pieces(&mut self, bytes: &[u8], piece: usize) {
        for chunk in bytes.chunks(piece) {
            self.send(chunk);
            thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits until the client closes the connection, checking it sent nothing more.
    fn expect_close(&mut self) {
        let mut rest = Vec::new();
        self.s
            .read_to_end(&mut rest)
            .expect("peer reads to the end");
        assert!(
            rest.is_empty(),
            "unexpected bytes from the client: {rest:?}"
        );
    }
}

/// Runs `script` as the server and `test` as the client, then checks both finished.
fn with_peer(script: impl FnOnce(Peer) + Send + 'static, test: impl FnOnce(&mut Client)) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server: JoinHandle<()> = thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        script(Peer { s });
    });
    let mut client = Client::connect(addr).unwrap();
    client.set_read_timeout(Some(PATIENCE)).unwrap();
    test(&mut client);
    drop(client);
    server.join().expect("the scripted server panicked");
}

fn sonar(first: u16) -> Sonar {
    let mut s = Sonar::default();
    for (i, r) in s.ranges.iter_mut().enumerate() {
        *r = first + i as u16;
    }
    s
}

fn position(x: i32) -> Position {
    Position {
        time: 1000,
        x,
        y: 250,
        heading: 90,
        speed: -50,
        turn_rate: 10,
        compass: 180,
        stall: 0,
    }
}

fn misc(voltage: u8) -> Misc {
    Misc {
        front_bumpers: 0,
        rear_bumpers: 0,
        voltage,
    }
}

const SRPW: [u8; 8] = [0x64, 0x72, 0x00, 0x04, 0x73, 0x72, 0x70, 0x77];

#[test]
fn request_discards_data_before_a_reply_in_pieces() {
    with_peer(
        |mut p| {
            p.expect(&SRPW);
            // A round of earlier devices, then the reply a byte at a time.
            p.send(&data(b's', None, &sonar(1).encode()));
            p.send(&data(b'p', None, &position(3).encode()));
            p.send_in_pieces(&[0x72, 0x00, 0x04, 0x73, 0x72, 0x70, 0x77], 1);
            p.expect_close();
        },
        |c| {
            let g = c.request("srpw").unwrap();
            assert!(g.is_exact() && g.all_granted());
            assert_eq!(c.access(b's'), Some(b'r'));
            assert_eq!(c.access(b'p'), Some(b'w'));
            assert_eq!(c.devices(), &[(b's', b'r'), (b'p', b'w')]);
            assert_eq!(c.readable(), vec![b's']);
            assert_eq!(c.round().sonar, None, "data before the reply is discarded");
        },
    );
}

#[test]
fn read_takes_one_packet_per_readable_device() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x06, b's', b'r', b'p', b'w', b'm', b'r']);
            p.send(&reply(&[(b's', b'r'), (b'p', b'w'), (b'm', b'r')]));
            // Two rounds, one byte at a time, the first in the other order.
            let mut rounds = data(b'm', None, &misc(120).encode());
            rounds.extend(data(b's', None, &sonar(100).encode()));
            rounds.extend(data(b's', None, &sonar(200).encode()));
            rounds.extend(data(b'm', None, &misc(121).encode()));
            p.send_in_pieces(&rounds, 7);
            p.expect_close();
        },
        |c| {
            c.request("srpwmr").unwrap().check().unwrap();
            let r = c.read().unwrap();
            assert_eq!(r.sonar, Some(sonar(100)));
            assert_eq!(r.misc, Some(misc(120)));
            assert_eq!(r.updated, vec![b'm', b's']);
            assert_eq!(r.position, None, "position is write only");
            let r = c.read().unwrap();
            assert_eq!(r.sonar, Some(sonar(200)));
            assert_eq!(r.misc, Some(misc(121)));
            assert_eq!(r.updated, vec![b's', b'm']);
        },
    );
}

#[test]
fn timestamps_are_stripped_even_across_the_switch() {
    with_peer(
        |mut p| {
            p.expect(&[0x78, 0x79, 0x00, 0x02, b't', 0x01]);
            p.expect(&[0x64, 0x72, 0x00, 0x04, b'm', b'r', b'l', b'r']);
            p.send(&reply(&[(b'm', b'r'), (b'l', b'r')]));
            // A round written before the switch took effect: no timestamps.
            p.send(&data(b'm', None, &misc(100).encode()));
            p.send(&data(b'l', None, &Laser::default().encode()));
            // Then rounds with them (the size counts the 8 bytes).
            let mut laser = Laser::default();
            laser.ranges[180] = 4321;
            p.send(&data(b'm', Some((1_000_000, 7)), &misc(101).encode()));
            p.send(&data(b'l', Some((1_000_000, 9)), &laser.encode()));
            p.expect(&[0x78, 0x79, 0x00, 0x02, b't', 0x00]);
            p.send(&data(b'm', None, &misc(102).encode()));
            p.send(&data(b'l', None, &laser.encode()));
            p.expect_close();
        },
        |c| {
            c.set_timestamps(true).unwrap();
            assert!(c.timestamps());
            c.request("mrlr").unwrap().check().unwrap();
            let r = c.read().unwrap();
            assert_eq!(r.misc, Some(misc(100)));
            assert_eq!(r.timestamp(b'm'), None);
            let r = c.read().unwrap();
            assert_eq!(r.misc, Some(misc(101)));
            assert_eq!(r.laser.as_ref().unwrap().ranges[180], 4321);
            assert_eq!(r.timestamp(b'm'), Some((1_000_000, 7)));
            assert_eq!(r.timestamp(b'l'), Some((1_000_000, 9)));
            c.set_timestamps(false).unwrap();
            let r = c.read().unwrap();
            assert_eq!(r.misc, Some(misc(102)));
            assert_eq!(r.timestamp(b'm'), None);
            assert_eq!(r.timestamp(b'l'), None);
        },
    );
}

#[test]
fn a_timeout_keeps_the_stream_in_step() {
    let (go, wait) = mpsc::channel::<()>();
    with_peer(
        move |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x02, b's', b'r']);
            p.send(&reply(&[(b's', b'r')]));
            let packet = data(b's', None, &sonar(40).encode());
            p.send(&packet[..10]);
            wait.recv().unwrap();
            p.send(&packet[10..]);
            p.expect_close();
        },
        |c| {
            c.request("sr").unwrap().check().unwrap();
            c.set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let t = Instant::now();
            assert!(matches!(c.read(), Err(Error::Timeout)));
            assert!(t.elapsed() >= Duration::from_millis(90));
            go.send(()).unwrap();
            c.set_read_timeout(Some(PATIENCE)).unwrap();
            assert_eq!(c.read().unwrap().sonar, Some(sonar(40)));
        },
    );
}

#[test]
fn a_close_in_the_middle_of_a_packet_is_reported() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x02, b's', b'r']);
            p.send(&reply(&[(b's', b'r')]));
            p.send(&data(b's', None, &sonar(1).encode())[..5]);
        },
        |c| {
            c.request("sr").unwrap();
            match c.read() {
                Err(Error::Disconnected { pending: 5 }) => {}
                other => panic!("{other:?}"),
            }
            assert!(matches!(
                c.read(),
                Err(Error::Disconnected { .. } | Error::Io(_))
            ));
        },
    );
}

#[test]
fn commands_and_configs_are_the_manual_bytes() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x06, b'p', b'a', b'z', b'w', b'g', b'w']);
            p.send(&reply(&[(b'p', b'a'), (b'z', b'w'), (b'g', b'w')]));
            p.expect(&[0x63, 0x70, 0x00, 0x04, 0xFF, 0x38, 0x00, 0x2D]);
            p.expect(&[0x63, 0x7A, 0x00, 0x06, 0xFF, 0x9C, 0x00, 0x19, 0x03, 0xFF]);
            p.expect(&[0x63, 0x67, 0x00, 0x02, 16, 20]);
            p.expect(&[0x63, b'q', 0x00, 0x01, 9]);
            p.expect(&[0x78, 0x79, 0x00, 0x03, 0x66, 0x00, 0x05]);
            p.expect(&[0x78, 0x79, 0x00, 0x02, 0x72, 0x03]);
            p.expect(&[0x78, 0x79, 0x00, 0x01, 0x64]);
            p.expect(&[0x78, 0x70, 0x00, 0x02, 0x6D, 0x01]);
            // Velocity mode to the position device, not the C++ client's `x v`.
            p.expect(&[0x78, 0x70, 0x00, 0x02, 0x76, 0x01]);
            p.expect(&[0x78, 0x70, 0x00, 0x01, 0x52]);
            p.expect(&[0x78, 0x79, 0x00, 0x02, 0x72, 0x00]);
            p.expect_close();
        },
        |c| {
            // Nothing is sent without write access, or for a frequency of 0.
            assert!(matches!(
                c.set_speed(1, 1),
                Err(Error::NotWritable {
                    device: b'p',
                    access: None
                })
            ));
            assert!(matches!(c.set_frequency(0), Err(Error::InvalidArgument(_))));
            c.request("pazwgw").unwrap().check().unwrap();
            c.set_speed(-200, 45).unwrap();
            c.set_ptz(-100, 25, 1023).unwrap();
            c.gripper(crate::grip::PRESS, 20).unwrap();
            c.command(b'q', &[9]).unwrap();
            c.set_frequency(5).unwrap();
            c.set_data_mode(DataMode::PullNew).unwrap();
            assert_eq!(c.data_mode(), DataMode::PullNew);
            c.request_data().unwrap();
            c.set_motor_power(true).unwrap();
            c.set_velocity_mode(true).unwrap();
            c.reset_odometry().unwrap();
            c.config(b'y', b'r', &[0]).unwrap();
            assert_eq!(c.data_mode(), DataMode::Continuous);
        },
    );
}

#[test]
fn a_closed_device_keeps_its_slot_and_is_no_longer_read() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x04, b's', b'r', b'p', b'r']);
            p.send(&reply(&[(b's', b'r'), (b'p', b'r')]));
            p.expect(&[0x64, 0x72, 0x00, 0x02, b's', b'c']);
            p.send(&data(b's', None, &sonar(1).encode()));
            p.send(&data(b'p', None, &position(1).encode()));
            p.send(&reply(&[(b's', b'c')]));
            p.send(&data(b'p', None, &position(2).encode()));
            p.expect(&[0x64, 0x72, 0x00, 0x04, b'v', b'r', b'l', b'r']);
            p.send(&reply(&[(b'v', b'e'), (b'l', b'r')]));
            p.expect(&[0x64, 0x72, 0x00, 0x02, b's', b'r']);
            p.send(&reply(&[(b's', b'r')]));
            p.expect_close();
        },
        |c| {
            c.request("srpr").unwrap().check().unwrap();
            c.request("sc").unwrap().check().unwrap();
            let r = c.read().unwrap();
            assert_eq!(r.position, Some(position(2)));
            assert_eq!(r.sonar, None);
            match c.request("vrlr").unwrap().check() {
                Err(e @ Error::Refused { .. }) => assert_eq!(
                    e.to_string(),
                    "device 'v' (vision) was not granted: asked 'r' (read), got 'e' (error)"
                ),
                other => panic!("{other:?}"),
            }
            c.request("sr").unwrap().check().unwrap();
            assert_eq!(
                c.devices(),
                &[(b's', b'r'), (b'p', b'r'), (b'v', b'e'), (b'l', b'r')]
            );
            assert_eq!(c.readable(), vec![b's', b'p', b'l']);
        },
    );
}

#[test]
fn a_device_left_out_of_a_round_is_waited_for() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x04, b's', b'r', b'p', b'r']);
            p.send(&reply(&[(b's', b'r'), (b'p', b'r')]));
            p.send(&data(b's', None, &sonar(1).encode()));
            p.send(&data(b's', None, &sonar(2).encode()));
            p.send(&data(b'p', None, &position(2).encode()));
            p.send(&data(b's', None, &sonar(3).encode()));
            p.send(&data(b'p', None, &position(3).encode()));
            p.expect_close();
        },
        |c| {
            c.request("srpr").unwrap();
            let r = c.read().unwrap();
            assert_eq!((r.sonar, r.position), (Some(sonar(2)), Some(position(2))));
            let r = c.read().unwrap();
            assert_eq!((r.sonar, r.position), (Some(sonar(3)), Some(position(3))));
        },
    );
}

#[test]
fn bad_packets_are_reported_after_the_round() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x04, b's', b'r', b'm', b'r']);
            p.send(&reply(&[(b's', b'r'), (b'm', b'r')]));
            // A laser packet nobody asked for, a short sonar packet, a good misc packet.
            p.send(&data(b'l', None, &Laser::default().encode()));
            p.send(&data(b's', None, &[0; 31]));
            p.send(&data(b'm', None, &misc(99).encode()));
            // Then a good round.
            p.send(&data(b's', None, &sonar(5).encode()));
            p.send(&data(b'm', None, &misc(98).encode()));
            p.expect_close();
        },
        |c| {
            c.request("srmr").unwrap();
            match c.read() {
                Err(e @ Error::UnexpectedDevice { device: b'l', .. }) => assert_eq!(
                    e.to_string(),
                    "data packet from 'l' (laser) although this client never requested it \
                     and no read access"
                ),
                other => panic!("{other:?}"),
            }
            assert_eq!(
                c.round().misc,
                Some(misc(99)),
                "the rest of the round was read"
            );
            assert_eq!(c.round().sonar, None);
            let r = c.read().unwrap();
            assert_eq!((r.sonar, r.misc), (Some(sonar(5)), Some(misc(98))));
        },
    );
}

#[test]
fn a_malformed_reply_is_skipped() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x02, b's', b'r']);
            p.send(&[0x72, 0x00, 0x03, b's', b'r', b'x']);
            p.send(&reply(&[(b's', b'r')]));
            p.expect_close();
        },
        |c| {
            assert!(matches!(c.request("sr"), Err(Error::Frame(_))));
            // The next message is framed right.
            assert_eq!(
                c.read_packet().unwrap(),
                ServerMessage::Reply(vec![(b's', b'r')])
            );
            assert!(c.can_read(b's'));
        },
    );
}

#[test]
fn a_late_reply_is_applied_by_the_next_read() {
    let (go, wait) = mpsc::channel::<()>();
    with_peer(
        move |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x02, b's', b'r']);
            wait.recv().unwrap();
            p.send(&reply(&[(b's', b'r')]));
            p.send(&data(b's', None, &sonar(8).encode()));
            p.expect_close();
        },
        |c| {
            c.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            assert!(matches!(c.request("sr"), Err(Error::Timeout)));
            assert_eq!(c.access(b's'), None);
            assert!(matches!(c.read(), Err(Error::NothingToRead)));
            go.send(()).unwrap();
            c.set_read_timeout(Some(PATIENCE)).unwrap();
            assert_eq!(
                c.read_packet().unwrap(),
                ServerMessage::Reply(vec![(b's', b'r')])
            );
            assert_eq!(c.read().unwrap().sonar, Some(sonar(8)));
        },
    );
}

#[test]
fn read_new_takes_partial_rounds() {
    let (go, wait) = mpsc::channel::<()>();
    let (sent, first_piece) = mpsc::channel::<()>();
    with_peer(
        move |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x06, b's', b'r', b'p', b'r', b'm', b'r']);
            p.send(&reply(&[(b's', b'r'), (b'p', b'r'), (b'm', b'r')]));
            p.expect(&[0x78, 0x79, 0x00, 0x02, 0x72, 0x03]);
            p.expect(&[0x78, 0x79, 0x00, 0x01, 0x64]);
            // Only position and misc are new: one write.
            let mut round = data(b'p', None, &position(1).encode());
            round.extend(data(b'm', None, &misc(1).encode()));
            p.send(&round);
            // Nothing new at all: nothing is written.
            p.expect(&[0x78, 0x79, 0x00, 0x01, 0x64]);
            // Sonar arrives in two pieces, a while apart.
            p.expect(&[0x78, 0x79, 0x00, 0x01, 0x64]);
            let packet = data(b's', None, &sonar(9).encode());
            p.send(&packet[..20]);
            sent.send(()).unwrap();
            wait.recv().unwrap();
            p.send(&packet[20..]);
            p.expect_close();
        },
        |c| {
            c.request("srprmr").unwrap().check().unwrap();
            c.set_data_mode(DataMode::PullNew).unwrap();
            c.request_data().unwrap();
            let r = c.read_new(PATIENCE).unwrap();
            assert_eq!(r.updated, vec![b'p', b'm']);
            assert_eq!((r.position, r.misc), (Some(position(1)), Some(misc(1))));

            c.request_data().unwrap();
            let t = Instant::now();
            let r = c.read_new(Duration::from_millis(100)).unwrap();
            assert!(r.updated.is_empty());
            assert!(t.elapsed() >= Duration::from_millis(90));

            c.request_data().unwrap();
            // The first piece has arrived; the rest follows long after the wait has run out.
            first_piece.recv().unwrap();
            let helper = thread::spawn(move || {
                thread::sleep(Duration::from_millis(100));
                go.send(()).unwrap();
            });
            let r = c.read_new(Duration::from_millis(1)).unwrap();
            assert_eq!(r.updated, vec![b's']);
            assert_eq!(r.sonar, Some(sonar(9)));
            helper.join().unwrap();
        },
    );
}

#[test]
fn a_bad_request_string_sends_nothing() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x00]);
            p.send(&reply(&[]));
            p.expect_close();
        },
        |c| {
            assert!(matches!(c.request("srp"), Err(Error::BadSpec { .. })));
            assert!(matches!(c.request("sz"), Err(Error::BadSpec { .. })));
            let g = c.request("").unwrap();
            assert!(g.granted().is_empty() && g.all_granted());
            assert!(matches!(c.read(), Err(Error::NothingToRead)));
        },
    );
}

// ---------------------------------------------------------------------------------------
// Extensions: `y` packets (notices, device list) interleaved with data
// ---------------------------------------------------------------------------------------

use player_proto::ext::{self, DeviceEntry, Notice};

fn notice(kind: u8, device: u8, text: &str) -> Notice {
    Notice {
        kind,
        device,
        text: text.into(),
    }
}

#[test]
fn notices_between_timestamped_rounds_are_queued_not_read_as_data() {
    with_peer(
        |mut p| {
            p.expect(&ext::error_channel(true));
            p.expect(&[0x78, 0x79, 0x00, 0x02, b't', 0x01]);
            p.expect(&[0x64, 0x72, 0x00, 0x02, b'm', b'r']);
            // A refusal notice can come before the reply.
            p.send(&ext::notice(b'r', b'm', "no"));
            p.send(&reply(&[(b'm', b'r')]));
            let mut bytes = data(b'm', Some((5, 6)), &misc(100).encode());
            // Short notices (2 + text < 8 bytes) must not be taken for timestamped data.
            bytes.extend(ext::notice(b'E', 0, ""));
            bytes.extend(ext::notice(b'f', b'p', "link lost"));
            bytes.extend(data(b'm', Some((5, 7)), &misc(101).encode()));
            p.send_in_pieces(&bytes, 3);
            p.expect_close();
        },
        |c| {
            c.set_notices(true).unwrap();
            c.set_timestamps(true).unwrap();
            c.request("mr").unwrap().check().unwrap();
            assert_eq!(c.read().unwrap().misc, Some(misc(100)));
            assert_eq!(c.read().unwrap().misc, Some(misc(101)));
            assert_eq!(c.round().timestamp(b'm'), Some((5, 7)));
            let got = c.take_notices();
            assert_eq!(
                got,
                vec![
                    notice(b'r', b'm', "no"),
                    notice(b'E', 0, ""),
                    notice(b'f', b'p', "link lost")
                ]
            );
            assert!(c.take_notices().is_empty());
            assert_eq!(c.notices_dropped(), 0);
        },
    );
}

#[test]
fn wait_notice_reads_data_meanwhile_and_times_out_with_none() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x02, b's', b'r']);
            p.send(&reply(&[(b's', b'r')]));
            p.send(&data(b's', None, &sonar(7).encode()));
            p.send(&ext::notice(b'w', b'p', "no command for 1 s"));
            p.expect_close();
        },
        |c| {
            c.request("sr").unwrap().check().unwrap();
            let n = c.wait_notice(PATIENCE).unwrap();
            assert_eq!(n, Some(notice(b'w', b'p', "no command for 1 s")));
            assert_eq!(c.round().sonar, Some(sonar(7)), "data read on the way");
            let t = Instant::now();
            assert_eq!(c.wait_notice(Duration::from_millis(200)).unwrap(), None);
            assert!(t.elapsed() >= Duration::from_millis(200));
        },
    );
}

#[test]
fn device_list_skips_rounds_and_notices_until_the_list() {
    let list = vec![
        DeviceEntry {
            code: b'p',
            access: b'a',
            state: ext::state::UP,
            readers: 1,
            writers: 1,
            data_size: 21,
            rate_x10: 100,
            driver: "p2os".into(),
        },
        DeviceEntry {
            code: b'l',
            access: b'r',
            state: ext::state::IDLE,
            readers: 0,
            writers: 0,
            data_size: 0,
            rate_x10: 0,
            driver: "sicklms200".into(),
        },
    ];
    let sent = list.clone();
    with_peer(
        move |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x02, b'p', b'r']);
            p.send(&reply(&[(b'p', b'r')]));
            p.expect(&ext::device_list_request());
            p.send(&data(b'p', None, &position(1).encode()));
            p.send(&ext::notice(b'u', b'p', ""));
            let mut packet = ext::device_list(&sent);
            packet.extend(data(b'p', None, &position(2).encode()));
            p.send_in_pieces(&packet, 5);
            p.expect(&ext::estop(true));
            p.expect(&ext::key(b"secret").unwrap());
            p.expect_close();
        },
        |c| {
            c.request("pr").unwrap().check().unwrap();
            assert_eq!(c.device_list().unwrap(), list);
            assert_eq!(c.round().position, Some(position(1)));
            assert_eq!(c.take_notices().len(), 1);
            assert_eq!(c.read().unwrap().position, Some(position(2)));
            c.estop(true).unwrap();
            assert!(matches!(
                c.present_key(&[b'k'; 65]),
                Err(Error::InvalidArgument(_))
            ));
            c.present_key(b"secret").unwrap();
        },
    );
}

#[test]
fn a_bad_y_packet_is_reported_and_skipped() {
    with_peer(
        |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x02, b'm', b'r']);
            p.send(&reply(&[(b'm', b'r')]));
            // A device list that declares 3 entries and holds none.
            p.send(&[b'y', 0, 3, b'l', 0, 3]);
            p.send(&data(b'm', None, &misc(1).encode()));
            p.send(&data(b'm', None, &misc(2).encode()));
            p.expect_close();
        },
        |c| {
            c.request("mr").unwrap().check().unwrap();
            let e = c.read().unwrap_err();
            assert!(matches!(e, Error::Extension(_)), "{e}");
            assert_eq!(
                c.round().misc,
                Some(misc(1)),
                "the round was read to its end"
            );
            assert_eq!(c.read().unwrap().misc, Some(misc(2)));
        },
    );
}

#[test]
fn the_notice_queue_is_bounded() {
    let extra = 10;
    with_peer(
        move |mut p| {
            p.expect(&[0x64, 0x72, 0x00, 0x02, b'm', b'r']);
            p.send(&reply(&[(b'm', b'r')]));
            let mut bytes = Vec::new();
            for i in 0..crate::MAX_QUEUED_NOTICES + extra {
                bytes.extend(ext::notice(b'c', b'p', &i.to_string()));
            }
            bytes.extend(data(b'm', None, &misc(1).encode()));
            p.send(&bytes);
            p.expect_close();
        },
        |c| {
            c.request("mr").unwrap().check().unwrap();
            c.read().unwrap();
            let got = c.take_notices();
            assert_eq!(got.len(), crate::MAX_QUEUED_NOTICES);
            assert_eq!(got[0].text, extra.to_string(), "the oldest were dropped");
            assert_eq!(c.notices_dropped(), extra as u64);
        },
    );
}
