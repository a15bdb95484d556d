//! Property-based round trips (proptest) of every byte layout the server and its clients
//! share: each client message encoded by `player_proto` and decoded by the server's
//! `ClientDecoder`, also as one stream split at random points; each server message through
//! the client's `decode_server`; each device's data and command type; and the hardware
//! codecs' framing (P2OS packets and SIPs, SICK telegrams and scans, VISCA positions, ACTS
//! headers); and the extensions' notices and device lists.
//!
//! Failing cases are shrunk and printed by proptest; `PROPTEST_CASES` sets how many cases
//! each property runs (default 256).

use bytes::{Bytes, BytesMut};
use player::codec::{ClientDecoder, ClientMessage, MAX_PAYLOAD};
use player_devices::acts::blob_bytes;
use player_devices::p2os;
use player_devices::sick;
use player_devices::visca;
use player_proto::data::{
    Blob, Gripper, GripperCommand, Laser, Misc, Position, PositionCommand, Ptz, Sonar, Vision,
    ACTS_CHANNELS, ACTS_HEADER, ACTS_MAX_BLOBS,
};
use player_proto::ext;
use player_proto::message::{self, ServerMessage};
use proptest::collection::vec;
use proptest::prelude::*;

// ----- client messages ------------------------------------------------------------------------

/// A client message as a test case: its bytes and what the server's decoder must make of
/// them.
#[derive(Debug, Clone)]
struct Case {
    bytes: Vec<u8>,
    expect: ClientMessage,
}

fn request_case() -> impl Strategy<Value = Case> {
    vec((any::<u8>(), any::<u8>()), 0..40).prop_map(|pairs| Case {
        bytes: message::request(&pairs),
        expect: ClientMessage::Request {
            second: b'r',
            pairs,
            odd_byte: None,
        },
    })
}

fn odd_request_case() -> impl Strategy<Value = Case> {
    (any::<u8>(), vec(any::<u8>(), 0..40), any::<u8>()).prop_map(|(second, mut body, odd)| {
        body.truncate(body.len() / 2 * 2);
        let pairs = body.chunks(2).map(|p| (p[0], p[1])).collect();
        body.push(odd);
        let mut bytes = vec![b'd', second];
        bytes.extend((body.len() as u16).to_be_bytes());
        bytes.extend(&body);
        Case {
            bytes,
            expect: ClientMessage::Request {
                second,
                pairs,
                odd_byte: Some(odd),
            },
        }
    })
}

fn command_case() -> impl Strategy<Value = Case> {
    (any::<u8>(), vec(any::<u8>(), 0..64)).prop_map(|(device, payload)| Case {
        bytes: message::command(device, &payload),
        expect: ClientMessage::Command {
            device,
            payload: Bytes::from(payload),
        },
    })
}

fn config_case() -> impl Strategy<Value = Case> {
    (any::<u8>(), any::<u8>(), vec(any::<u8>(), 0..64)).prop_map(|(device, code, args)| {
        let mut payload = vec![code];
        payload.extend(&args);
        Case {
            bytes: message::config(device, code, &args),
            expect: ClientMessage::Config {
                device,
                payload: Bytes::from(payload),
            },
        }
    })
}

/// A command or config right at the bound: buffered whole.
fn largest_case() -> impl Strategy<Value = Case> {
    (any::<u8>(), any::<u8>()).prop_map(|(device, fill)| {
        let payload = vec![fill; MAX_PAYLOAD];
        Case {
            bytes: message::command(device, &payload),
            expect: ClientMessage::Command {
                device,
                payload: Bytes::from(payload),
            },
        }
    })
}

/// A message of an unknown type: skipped, framing kept.
fn unknown_case() -> impl Strategy<Value = Case> {
    (
        any::<u8>().prop_filter("an unknown type", |k| !matches!(k, b'd' | b'c' | b'x')),
        any::<u8>(),
        vec(any::<u8>(), 0..64),
    )
        .prop_map(|(kind, second, payload)| {
            let mut bytes = vec![kind, second];
            bytes.extend((payload.len() as u16).to_be_bytes());
            bytes.extend(&payload);
            Case {
                bytes,
                expect: ClientMessage::Unknown {
                    kind,
                    second,
                    size: payload.len(),
                },
            }
        })
}

/// A known message larger than the bound: skipped without being buffered.
fn oversized_case() -> impl Strategy<Value = Case> {
    (
        prop_oneof![Just(b'd'), Just(b'c'), Just(b'x')],
        any::<u8>(),
        MAX_PAYLOAD + 1..=MAX_PAYLOAD + 300,
        any::<u8>(),
    )
        .prop_map(|(kind, second, size, fill)| {
            let mut bytes = vec![kind, second];
            bytes.extend((size as u16).to_be_bytes());
            bytes.extend(vec![fill; size]);
            Case {
                bytes,
                expect: ClientMessage::Oversized { kind, second, size },
            }
        })
}

fn any_case() -> impl Strategy<Value = Case> {
    prop_oneof![
        4 => request_case(),
        2 => odd_request_case(),
        4 => command_case(),
        4 => config_case(),
        1 => largest_case(),
        2 => unknown_case(),
        1 => oversized_case(),
    ]
}

/// Decodes `stream` fed in pieces ending at `cuts` (sorted offsets), checking after each
/// piece that no more than one bounded message stays buffered.
fn decode_in_pieces(
    stream: &[u8],
    cuts: &[usize],
) -> (Vec<ClientMessage>, ClientDecoder, BytesMut) {
    let mut d = ClientDecoder::new();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain(std::iter::once(&stream.len())) {
        let to = to.clamp(from, stream.len());
        buf.extend_from_slice(&stream[from..to]);
        from = to;
        while let Some(m) = d.decode(&mut buf) {
            out.push(m);
        }
        assert!(buf.len() < message::CLIENT_HEADER + MAX_PAYLOAD);
    }
    (out, d, buf)
}

proptest! {
    #[test]
    fn each_client_message_decodes_to_what_was_encoded(case in any_case()) {
        let (got, d, buf) = decode_in_pieces(&case.bytes, &[]);
        prop_assert_eq!(got, vec![case.expect]);
        prop_assert!(d.decode_eof(&buf).is_ok());
    }

    #[test]
    fn a_stream_of_client_messages_decodes_the_same_split_anywhere(
        cases in vec(any_case(), 1..12),
        cuts in vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let stream: Vec<u8> = cases.iter().flat_map(|c| c.bytes.clone()).collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(stream.len() + 1)).collect();
        cuts.sort_unstable();
        let (got, d, buf) = decode_in_pieces(&stream, &cuts);
        let expect: Vec<ClientMessage> = cases.into_iter().map(|c| c.expect).collect();
        prop_assert_eq!(got, expect);
        prop_assert!(d.decode_eof(&buf).is_ok());
    }

    #[test]
    fn a_stream_cut_short_is_reported_as_truncated(
        cases in vec(any_case(), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let stream: Vec<u8> = cases.iter().flat_map(|c| c.bytes.clone()).collect();
        let cut = cut.index(stream.len());
        // Ends inside a message unless `cut` is a message boundary.
        let mut boundaries = vec![0];
        for c in &cases {
            boundaries.push(boundaries.last().unwrap() + c.bytes.len());
        }
        let (_, d, buf) = decode_in_pieces(&stream[..cut], &[]);
        prop_assert_eq!(d.decode_eof(&buf).is_ok(), boundaries.contains(&cut));
    }
}

// ----- server messages ------------------------------------------------------------------------

fn server_message() -> impl Strategy<Value = (ServerMessage, bool)> {
    prop_oneof![
        (vec((any::<u8>(), any::<u8>()), 0..20), any::<bool>())
            .prop_map(|(pairs, ts)| (ServerMessage::Reply(pairs), ts)),
        (
            any::<u8>().prop_filter("not the reply byte", |d| *d != message::REPLY),
            vec(any::<u8>(), 0..800),
            any::<(u32, u32)>(),
            any::<bool>(),
        )
            .prop_map(|(device, payload, stamp, ts)| (
                ServerMessage::Data {
                    device,
                    timestamp: ts.then_some(stamp),
                    payload,
                },
                ts
            )),
    ]
}

fn encode_server(m: &ServerMessage) -> Vec<u8> {
    match m {
        ServerMessage::Reply(pairs) => message::reply(pairs),
        ServerMessage::Data {
            device,
            timestamp,
            payload,
        } => message::data(*device, *timestamp, payload),
    }
}

proptest! {
    #[test]
    fn each_server_message_decodes_to_what_was_encoded((m, ts) in server_message()) {
        let bytes = encode_server(&m);
        for short in 0..bytes.len().min(8) {
            prop_assert_eq!(message::decode_server(&bytes[..short], ts), Ok(None));
        }
        prop_assert_eq!(
            message::decode_server(&bytes, ts),
            Ok(Some((m, bytes.len())))
        );
    }
}

// ----- device data and commands ---------------------------------------------------------------

fn blob() -> impl Strategy<Value = Blob> {
    (0u32..1 << 24, vec(0u8..=254, 6)).prop_map(|(area, c)| Blob {
        area,
        x: c[0],
        y: c[1],
        left: c[2],
        right: c[3],
        top: c[4],
        bottom: c[5],
    })
}

fn vision() -> impl Strategy<Value = Vision> {
    // Mostly empty channels, as a camera sees them; every one may hold up to 10 blobs.
    vec(
        prop_oneof![3 => Just(Vec::new()), 1 => vec(blob(), 0..=ACTS_MAX_BLOBS)],
        ACTS_CHANNELS,
    )
    .prop_map(|channels| Vision { channels })
}

proptest! {
    #[test]
    fn position_round_trips(
        (time, x, y, heading) in any::<(u32, i32, i32, u16)>(),
        (speed, turn_rate, compass, stall) in any::<(i16, i16, u16, u8)>(),
    ) {
        let p = Position { time, x, y, heading, speed, turn_rate, compass, stall };
        let b = p.encode();
        prop_assert_eq!(b.len(), Position::SIZE);
        prop_assert_eq!(Position::decode(&b), Ok(p));
    }

    #[test]
    fn sonar_round_trips(r in vec(any::<u16>(), 16)) {
        let s = Sonar { ranges: r.try_into().unwrap() };
        prop_assert_eq!(Sonar::decode(&s.encode()), Ok(s));
    }

    #[test]
    fn laser_round_trips(r in vec(any::<u16>(), 361)) {
        let l = Laser { ranges: r.try_into().unwrap() };
        let b = l.encode();
        prop_assert_eq!(b.len(), Laser::SIZE);
        prop_assert_eq!(Laser::decode(&b), Ok(l));
    }

    #[test]
    fn misc_gripper_and_ptz_round_trip(
        (front_bumpers, rear_bumpers, voltage) in any::<(u8, u8, u8)>(),
        (state, beams) in any::<(u8, u8)>(),
        (pan, tilt, zoom) in any::<(i16, i16, i16)>(),
    ) {
        let m = Misc { front_bumpers, rear_bumpers, voltage };
        prop_assert_eq!(Misc::decode(&m.encode()), Ok(m));
        let g = Gripper { state, beams };
        prop_assert_eq!(Gripper::decode(&g.encode()), Ok(g));
        let z = Ptz { pan, tilt, zoom };
        prop_assert_eq!(Ptz::decode(&z.encode()), Ok(z));
    }

    #[test]
    fn commands_round_trip(
        (speed, turn_rate) in any::<(i16, i16)>(),
        (command, arg) in any::<(u8, u8)>(),
    ) {
        let c = PositionCommand { speed, turn_rate };
        prop_assert_eq!(PositionCommand::decode(&c.encode()), Ok(c));
        let g = GripperCommand { command, arg };
        prop_assert_eq!(GripperCommand::decode(&g.encode()), Ok(g));
    }

    #[test]
    fn wrong_sizes_are_refused(len in 0usize..800) {
        prop_assert_eq!(Position::decode(&vec![0; len]).is_ok(), len == Position::SIZE);
        prop_assert_eq!(Sonar::decode(&vec![0; len]).is_ok(), len == Sonar::SIZE);
        prop_assert_eq!(Laser::decode(&vec![0; len]).is_ok(), len == Laser::SIZE);
        prop_assert_eq!(Misc::decode(&vec![0; len]).is_ok(), len == Misc::SIZE);
        prop_assert_eq!(Gripper::decode(&vec![0; len]).is_ok(), len == Gripper::SIZE);
        prop_assert_eq!(Ptz::decode(&vec![0; len]).is_ok(), len == Ptz::SIZE);
        prop_assert_eq!(
            PositionCommand::decode(&vec![0; len]).is_ok(),
            len == PositionCommand::SIZE
        );
        prop_assert_eq!(
            GripperCommand::decode(&vec![0; len]).is_ok(),
            len == GripperCommand::SIZE
        );
    }

    #[test]
    fn vision_round_trips_and_its_header_says_its_size(v in vision()) {
        let b = v.encode();
        let blobs: usize = v.channels.iter().map(Vec::len).sum();
        prop_assert_eq!(b.len(), ACTS_HEADER + 10 * blobs);
        let header: [u8; ACTS_HEADER] = b[..ACTS_HEADER].try_into().unwrap();
        prop_assert_eq!(blob_bytes(&header), Ok(10 * blobs));
        prop_assert_eq!(Vision::decode(&b), Ok(v));
    }
}

// ----- hardware codecs ------------------------------------------------------------------------

fn sip() -> impl Strategy<Value = p2os::Sip> {
    (
        prop_oneof![Just(p2os::SIP_STOPPED), Just(p2os::SIP_MOVING)],
        any::<(u16, u16, i16, i16, i16, u8, u8, u8)>(),
        any::<(i16, u16, u8, u16, u8, u8, u8)>(),
        vec(any::<(u8, u16)>(), 0..=57),
    )
        .prop_map(
            |(
                status,
                (xpos, ypos, thpos, lvel, rvel, battery, stall_low, stall_high),
                (control, ptu, compass, timer, analog, digin, digout),
                sonars,
            )| p2os::Sip {
                status,
                xpos,
                ypos,
                thpos,
                lvel,
                rvel,
                battery,
                stall_low,
                stall_high,
                control,
                ptu,
                compass,
                sonars,
                timer,
                analog,
                digin,
                digout,
            },
        )
}

/// Feeds `bytes` to `push` in pieces ending at `cuts`, collecting what `take` yields.
fn in_pieces<T>(
    bytes: &[u8],
    cuts: &[prop::sample::Index],
    mut push: impl FnMut(&[u8]),
    mut take: impl FnMut() -> Option<T>,
) -> Vec<T> {
    let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
    cuts.push(bytes.len());
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for to in cuts {
        push(&bytes[from..to]);
        from = to;
        while let Some(x) = take() {
            out.push(x);
        }
    }
    out
}

proptest! {
    #[test]
    fn p2os_packets_frame_any_payload_split_anywhere(
        payloads in vec(vec(any::<u8>(), 0..=198), 1..5),
        junk in vec(any::<u8>().prop_filter("not a header byte", |b| *b != 0xFA), 0..20),
        cuts in vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut line = junk.clone();
        for p in &payloads {
            line.extend(p2os::packet(p));
        }
        let parser = std::cell::RefCell::new(p2os::Parser::new());
        let got = in_pieces(
            &line,
            &cuts,
            |b| parser.borrow_mut().push(b),
            || parser.borrow_mut().next_packet(),
        );
        let want: Vec<Result<Vec<u8>, p2os::FrameError>> =
            payloads.into_iter().map(Ok).collect();
        prop_assert_eq!(got, want);
        prop_assert_eq!(parser.borrow().junk, junk.len() as u64);
    }

    #[test]
    fn p2os_sips_round_trip(s in sip()) {
        let b = s.encode();
        prop_assert!(p2os::Sip::is_sip(&b));
        prop_assert_eq!(p2os::Sip::parse(&b), Ok(s));
    }

    #[test]
    fn p2os_integer_commands_read_back(cmd in any::<u8>(), value in -65535i32..=65535) {
        let packet = p2os::command_int(cmd, value);
        let mut parser = p2os::Parser::new();
        parser.push(&packet);
        let payload = parser.next_packet().unwrap().unwrap();
        let c = p2os::HostCommand::parse(&payload).unwrap();
        prop_assert_eq!(c.code, cmd);
        prop_assert_eq!(c.arg, Some(value));
    }

    #[test]
    fn p2os_identity_round_trips(
        name in "[a-zA-Z0-9 _-]{0,20}",
        class in "[a-zA-Z0-9]{0,12}",
        subclass in "[a-zA-Z0-9]{0,12}",
    ) {
        let id = p2os::Identity { name, class, subclass };
        prop_assert_eq!(p2os::Identity::parse(&id.encode()), id);
    }

    #[test]
    fn sick_telegrams_frame_any_data_split_anywhere(
        telegrams in vec((any::<u8>(), vec(any::<u8>(), 1..=sick::MAX_LEN)), 1..4),
        acks in vec(prop_oneof![Just(sick::ACK), Just(sick::NAK)], 0..3),
        cuts in vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let mut line = acks.clone();
        for (addr, data) in &telegrams {
            line.extend(sick::telegram(*addr, data));
        }
        let parser = std::cell::RefCell::new(sick::Parser::new());
        let got = in_pieces(
            &line,
            &cuts,
            |b| parser.borrow_mut().push(b),
            || parser.borrow_mut().next_event(),
        );
        let mut want: Vec<sick::Event> = acks
            .iter()
            .map(|&a| if a == sick::ACK { sick::Event::Ack } else { sick::Event::Nak })
            .collect();
        want.extend(
            telegrams
                .into_iter()
                .map(|(addr, data)| sick::Event::Telegram { addr, data }),
        );
        prop_assert_eq!(got, want);
    }

    #[test]
    fn sick_scans_round_trip(r in vec(0u16..=sick::RANGE_MASK, 361), status in any::<u8>()) {
        let ranges: [u16; sick::SCAN_VALUES] = r.try_into().unwrap();
        let mut parser = sick::Parser::new();
        parser.push(&sick::Scan::telegram(&ranges, status));
        let Some(sick::Event::Telegram { addr, data }) = parser.next_event() else {
            panic!("a scan telegram did not parse");
        };
        prop_assert_eq!(addr, sick::LMS_ADDR);
        let scan = sick::Scan::parse(&data).unwrap();
        prop_assert_eq!(scan, sick::Scan { ranges, flagged: 0, status });
    }

    #[test]
    fn visca_positions_round_trip(pan in any::<i16>(), tilt in any::<i16>(), zoom in any::<i16>()) {
        prop_assert_eq!(visca::from_nibbles(&visca::nibbles(pan)), pan);
        let (p, t, z) = visca::to_camera(pan, tilt, zoom);
        prop_assert_eq!(
            visca::from_camera(p, t, z),
            (
                pan.clamp(-visca::MAX_PAN, visca::MAX_PAN),
                tilt.clamp(-visca::MAX_TILT, visca::MAX_TILT),
                zoom.clamp(0, visca::MAX_ZOOM)
            )
        );
        // The absolute pan/tilt command carries the camera units as nibbles.
        let c = visca::absolute_pan_tilt(p, t);
        prop_assert_eq!(visca::from_nibbles(&c[6..10]), p);
        prop_assert_eq!(visca::from_nibbles(&c[10..14]), t);
        prop_assert_eq!(visca::from_nibbles(&visca::zoom_direct(z)[4..8]), z);
    }

    #[test]
    fn visca_replies_parse_after_junk_split_anywhere(
        socket in 0u8..16,
        info in vec(0u8..0x10, 1..10),
        junk in vec(any::<u8>().prop_filter("no header or end", |b| *b != 0x90 && *b != 0xFF), 0..10),
        cuts in vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let mut line = junk.clone();
        line.extend([visca::FROM_CAMERA, 0x40 | socket, visca::END]);
        line.extend([visca::FROM_CAMERA, 0x50 | socket, visca::END]);
        line.push(visca::FROM_CAMERA);
        line.push(0x50);
        line.extend(&info);
        line.push(visca::END);
        line.extend([visca::FROM_CAMERA, 0x60 | socket, 0x41, visca::END]);
        let parser = std::cell::RefCell::new(visca::Parser::new());
        let got = in_pieces(
            &line,
            &cuts,
            |b| parser.borrow_mut().push(b),
            || parser.borrow_mut().next_reply(),
        );
        prop_assert_eq!(
            got,
            vec![
                Ok(visca::Reply::Ack(socket)),
                Ok(visca::Reply::Completion(socket)),
                Ok(visca::Reply::Info(info)),
                Ok(visca::Reply::Error(socket, 0x41)),
            ]
        );
    }
}

// ----- extension packets ----------------------------------------------------------------------

fn device_entry() -> impl Strategy<Value = ext::DeviceEntry> {
    (
        any::<(u8, u8, u8)>(),
        any::<(u16, u16, u16, u16)>(),
        "[a-z0-9]{0,20}",
    )
        .prop_map(
            |((code, access, state), (readers, writers, data_size, rate_x10), driver)| {
                ext::DeviceEntry {
                    code,
                    access,
                    state,
                    readers,
                    writers,
                    data_size,
                    rate_x10,
                    driver,
                }
            },
        )
}

proptest! {
    #[test]
    fn notices_decode_to_their_cleaned_text(kind in any::<u8>(), device in any::<u8>(), text in ".{0,80}") {
        prop_assume!(kind != ext::kind::DEVICE_LIST);
        let packet = ext::notice(kind, device, &text);
        let Ok(Some((ServerMessage::Data { device: y, payload, .. }, used))) =
            message::decode_server(&packet, false)
        else {
            panic!("a notice is not one server packet");
        };
        prop_assert_eq!((y, used), (ext::PACKET, packet.len()));
        let want = ext::Extension::Notice(ext::Notice { kind, device, text: ext::clean_text(&text) });
        prop_assert_eq!(ext::decode(&payload), Ok(want));
    }

    #[test]
    fn device_lists_round_trip(entries in vec(device_entry(), 0..40)) {
        let packet = ext::device_list(&entries);
        let Ok(Some((ServerMessage::Data { device: y, payload, .. }, used))) =
            message::decode_server(&packet, false)
        else {
            panic!("a device list is not one server packet");
        };
        prop_assert_eq!((y, used), (ext::PACKET, packet.len()));
        prop_assert_eq!(ext::decode(&payload), Ok(ext::Extension::DeviceList(entries)));
    }
}
