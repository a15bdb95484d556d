//! Playback control of a replay: a short drive recorded with the in-process server, served
//! again by the `replay` driver with the web endpoint on, and controlled over the Foxglove
//! WebSocket protocol (binary playback control requests, as Foxglove's timeline sends them)
//! while a 0.7.4a client reads over TCP: pause stops the data, a seek back brings the
//! recorded readings of that time to both clients, speed 2 plays twice as fast, the end is
//! announced to every client and nothing follows it. Without
//! write access (a server with an access key, a client without it) a request is refused.

use futures::SinkExt;
use player::drivers::replay::recording;
use player_testkit::foxglove_ws::{
    channel_id, connect, next_frame, next_op, runtime as rt, subscribe, Ws, WAIT,
};
use player_testkit::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

const SEC: u64 = 1_000_000_000;

/// A recording of the simulated robot driven for 5 s, made once for the tests here.
fn recorded_drive() -> &'static Path {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("playback-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("drive.mcap");
        let mut settings = default_settings();
        settings.record.path = file.display().to_string();
        let server = start_server_with(settings, player::builtin_catalog());
        let mut c = Client::connect(server.addr());
        c.request(&[(b'p', b'a')]);
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            c.drive(300, 20);
            let next = Instant::now() + Duration::from_millis(100);
            while Instant::now() < next {
                let _ = c.read_message_within(Duration::from_millis(20));
            }
        }
        c.drive(0, 0);
        server.shutdown();
        file
    })
}

/// The replay of `file` with the web endpoint on; its web port.
fn replay_server(file: &Path, key: Option<&str>) -> (TestServer, u16) {
    let mut s = default_settings();
    let text = |v: &str| config::Value::new(None, config::ValueKind::String(v.into()));
    s.assign(
        "replay",
        b"psmglzv",
        vec![("file", text(&file.display().to_string()))],
    );
    let port = free_port();
    s.web.viewer_mut(0).web_port = Some(port);
    if let Some(k) = key {
        s.access.key = k.into();
    }
    (start_server_with(s, player::builtin_catalog()), port)
}

/// A binary playback control request: play (0) or pause (1), the speed, a seek.
fn control(command: u8, speed: f32, seek: Option<u64>, id: &str) -> Message {
    let mut b = vec![3u8, command];
    b.extend_from_slice(&speed.to_le_bytes());
    b.push(u8::from(seek.is_some()));
    b.extend_from_slice(&seek.unwrap_or(0).to_le_bytes());
    b.extend_from_slice(&(id.len() as u32).to_le_bytes());
    b.extend_from_slice(id.as_bytes());
    Message::Binary(b.into())
}

/// A playback state: status (0 playing, 1 paused, 3 ended), current time, speed, did seek.
#[derive(Debug, Clone, Copy, PartialEq)]
struct State {
    status: u8,
    current: u64,
    speed: f32,
    did_seek: bool,
}

fn parse_state(b: &[u8]) -> State {
    State {
        status: b[1],
        current: u64::from_le_bytes(b[2..10].try_into().unwrap()),
        speed: f32::from_le_bytes(b[10..14].try_into().unwrap()),
        did_seek: b[14] != 0,
    }
}

/// The playback state answering request `id`.
async fn answer(ws: &mut Ws, id: &str) -> State {
    next_frame(ws, &format!("playback state '{id}'"), WAIT, |m| match m {
        Message::Binary(b) if b[0] == 5 => {
            let len = u32::from_le_bytes(b[15..19].try_into().unwrap()) as usize;
            (&b[19..19 + len] == id.as_bytes()).then(|| parse_state(&b))
        }
        _ => None,
    })
    .await
}

#[test]
fn a_replay_pauses_seeks_back_to_the_recorded_readings_plays_twice_as_fast_and_ends() {
    let file = recorded_drive();
    let rec = recording::load(file, None, 1 << 30).unwrap();
    let (start, end) = (rec.readings[0].time, rec.readings.last().unwrap().time);
    let positions: Vec<(u64, Vec<u8>)> = rec
        .readings
        .iter()
        .filter(|r| r.device == b'p')
        .map(|r| (r.time, r.data.to_vec()))
        .collect();
    // While the robot moves each position differs from every other: a payload names its
    // recorded instant. Standing still (before the first command took effect on a busy
    // machine, after the last) it repeats: such a payload names its first instant.
    let mut when: HashMap<&[u8], u64> = HashMap::new();
    for (t, p) in &positions {
        if let Some(first) = when.insert(&p[..], *t) {
            when.insert(&p[..], first);
            let at_rest = player_proto::data::Position::decode(p)
                .is_ok_and(|q| q.speed == 0 && q.turn_rate == 0);
            assert!(
                at_rest,
                "a moving robot's position repeats (recorded at {t})"
            );
        }
    }
    assert!(
        when.len() > positions.len() * 3 / 4,
        "the robot hardly moved"
    );
    // Each device's latest reading at or before recording time `t`.
    let at = |t: u64| -> BTreeMap<u8, Vec<u8>> {
        let mut m = BTreeMap::new();
        for r in rec.readings.iter().take_while(|r| r.time <= t) {
            m.insert(r.device, r.data.to_vec());
        }
        m
    };

    let (server, port) = replay_server(file, None);
    let mut tcp = Client::push_all(server.addr());
    let rt = rt();
    let mut ws = rt.block_on(async {
        let mut ws = connect(port, "").await;
        let info = next_op(&mut ws, "serverInfo").await;
        let caps = info["capabilities"].as_array().unwrap();
        assert!(caps.iter().any(|c| c == "playbackControl"), "{info}");
        assert!(caps.iter().any(|c| c == "time"), "{info}");
        let span =
            |v: &serde_json::Value| v["sec"].as_u64().unwrap() * SEC + v["nsec"].as_u64().unwrap();
        assert_eq!(span(&info["dataStartTime"]), start);
        assert_eq!(span(&info["dataEndTime"]), end);
        let adv = next_op(&mut ws, "advertise").await;
        let pose = channel_id(&adv, "/position");
        subscribe(&mut ws, &[(1, pose)]).await;
        ws
    });

    // Playing: wait until the replay is past 1.5 s of the recording.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "the replay did not reach 1.5 s");
        if let Some((b'p', p)) = tcp.read_message_within(Duration::from_millis(200)) {
            if when[&p[..]] > start + 3 * SEC / 2 {
                break;
            }
        }
    }

    // Pause: nothing more comes.
    let paused = rt.block_on(async {
        ws.send(control(1, 1.0, None, "pause")).await.unwrap();
        answer(&mut ws, "pause").await
    });
    assert_eq!(paused.status, 1, "{paused:?}");
    assert!(
        paused.current > start + 3 * SEC / 2 && paused.current <= end,
        "{paused:?}"
    );
    tcp.drain(Duration::from_millis(300)); // readings published before the pause
                                           // A sleep that proves nothing: no reading may arrive for a second while paused.
    tcp.expect_silence(1000);

    // Seek back to 0.8 s while paused: both clients get the readings recorded then.
    let t = start + 4 * SEC / 5;
    // The answer and the browser's position message at the sought recording time, in
    // either order (the readings go straight from the driver, the answer through the
    // registry).
    let sought = rt.block_on(async {
        ws.send(control(1, 1.0, Some(t), "seek")).await.unwrap();
        let (mut state, mut position) = (None, false);
        while state.is_none() || !position {
            let m = next_frame(
                &mut ws,
                "the seek's answer and /position",
                WAIT,
                |m| match m {
                    Message::Binary(b) => Some(b.to_vec()),
                    _ => None,
                },
            )
            .await;
            match m[0] {
                1 => position |= u64::from_le_bytes(m[5..13].try_into().unwrap()) == t,
                5 if m.ends_with(b"seek") => state = Some(parse_state(&m)),
                _ => {}
            }
        }
        state.unwrap()
    });
    assert_eq!(
        sought,
        State {
            status: 1,
            current: t,
            speed: 1.0,
            did_seek: true
        }
    );
    let want = at(t);
    let mut got: BTreeMap<u8, Vec<u8>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < want.len() {
        assert!(
            Instant::now() < deadline,
            "after the seek only {:?} of {:?} came",
            got.keys().map(|&c| char::from(c)).collect::<String>(),
            want.keys().map(|&c| char::from(c)).collect::<String>()
        );
        if let Some((code, payload)) = tcp.read_message_within(Duration::from_millis(200)) {
            got.insert(code, payload);
        }
    }
    assert_eq!(got, want, "the readings at the sought time");
    tcp.expect_silence(300); // still paused

    // Play at speed 2: positions continue from the sought time, twice as fast.
    let fast = rt.block_on(async {
        ws.send(control(0, 2.0, None, "fast")).await.unwrap();
        answer(&mut ws, "fast").await
    });
    assert_eq!((fast.status, fast.speed, fast.did_seek), (0, 2.0, false));
    let mut seen: Vec<(Instant, u64)> = Vec::new();
    let stop = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < stop {
        if let Some((b'p', p)) = tcp.read_message_within(Duration::from_millis(100)) {
            seen.push((Instant::now(), when[&p[..]]));
        }
    }
    assert!(
        seen.len() >= 10,
        "{} positions in 1.5 s at speed 2",
        seen.len()
    );
    let after: Vec<u64> = positions
        .iter()
        .map(|(t, _)| *t)
        .filter(|&x| x > t)
        .collect();
    assert_eq!(seen[0].1, after[0], "playing resumes after the sought time");
    assert!(
        seen.windows(2).all(|w| w[0].1 < w[1].1),
        "positions in recorded order"
    );
    let (first, last) = (seen[0], seen[seen.len() - 1]);
    let ratio = (last.1 - first.1) as f64 / 1e9 / (last.0 - first.0).as_secs_f64();
    eprintln!(
        "speed 2: {} positions, recording time ran {ratio:.2}x the wall clock",
        seen.len()
    );
    assert!(
        (1.6..=2.5).contains(&ratio),
        "recording time ran {ratio:.2} times as fast as the wall clock"
    );
    // The browser's clock is the recording's, moving.
    rt.block_on(async {
        next_frame(
            &mut ws,
            "a time message past the sought time",
            WAIT,
            |m| match m {
                Message::Binary(b) if b[0] == 2 => {
                    let ts = u64::from_le_bytes(b[1..9].try_into().unwrap());
                    (ts > t && ts <= end).then_some(())
                }
                _ => None,
            },
        )
        .await
    });

    // A seek to just before the end while playing: the last readings play, then every
    // client is told playback ended (a state without a request id) and nothing more comes.
    let ended = rt.block_on(async {
        ws.send(control(0, 2.0, Some(end - SEC / 5), "near-end"))
            .await
            .unwrap();
        next_frame(&mut ws, "the ended state", WAIT, |m| match m {
            Message::Binary(b) if b[0] == 5 && b[15..19] == [0, 0, 0, 0] && b[1] == 3 => {
                Some(parse_state(&b))
            }
            _ => None,
        })
        .await
    });
    assert_eq!((ended.current, ended.did_seek), (end, false));
    tcp.drain(Duration::from_millis(300)); // the last readings
                                           // A sleep that proves nothing: after the end no reading comes.
    tcp.expect_silence(500);
    drop(ws);
    server.shutdown();
}

#[test]
fn playback_control_is_refused_to_a_client_without_the_servers_key() {
    let file = recorded_drive();
    let (server, port) = replay_server(file, Some("sesame"));
    let mut tcp = Client::push_all(server.addr());
    assert!(tcp.read_message_within(Duration::from_secs(10)).is_some());
    let rt = rt();
    rt.block_on(async {
        let mut ws = connect(port, "").await;
        next_op(&mut ws, "serverInfo").await;
        ws.send(control(1, 1.0, None, "no-key")).await.unwrap();
        let st = answer(&mut ws, "no-key").await;
        assert_eq!(st.status, 0, "still playing: {st:?}");
        let status = next_op(&mut ws, "status").await;
        assert!(
            status["message"].as_str().unwrap().contains("refused"),
            "{status}"
        );
        let mut ws = connect(port, "?key=sesame").await;
        next_op(&mut ws, "serverInfo").await;
        ws.send(control(1, 1.0, None, "key")).await.unwrap();
        assert_eq!(answer(&mut ws, "key").await.status, 1, "paused");
    });
    server.shutdown();
}
