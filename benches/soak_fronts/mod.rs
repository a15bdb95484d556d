//! The soak bench's load on the front ends beside its TCP clients (`benches/soak.rs`):
//!
//! - web: a Foxglove WebSocket watcher reading `/laser` (counted); clients churning
//!   (connect, subscribe to every channel, read a few seconds or not at all, close); a
//!   client that subscribes to everything with a tiny receive buffer and never reads
//!   (the server must close it after `stall_timeout`), replaced after twice that;
//! - Zenoh: a session of the bridge reading robot A's readings (counted) and commanding
//!   its base at 10 Hz; sessions opened, subscribed to everything and closed every few
//!   seconds;
//! - ROS 2: a session of the ROS 2 front end reading `odom` (counted) and publishing
//!   `cmd_vel` at 10 Hz as rmw_zenoh does, every tenth sample malformed; the session
//!   closed and opened again every 30 s (a teleop that vanishes and comes back);
//! - the recorder: robot A recorded, a new file every minute; the bench deletes all but
//!   the newest two and counts the bytes written.
//!
//! Every loop is bounded by timeouts and the bench's stop flag; an error counts and the
//! loop goes on after a pause.

use futures::{SinkExt, StreamExt};
use player::ros2::msg::{Twist, Vector3};
use player::ros2::rmw::{self, Attachment};
use player::ros2::types;
use player_proto::data::PositionCommand;
use player_testkit::foxglove_ws::{connect_with, handshake, runtime, Ws, SUBPROTOCOL};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_tungstenite::tungstenite::Message;
use zenoh::Wait;

/// What the front-end load counts; the sampler takes the rates.
#[derive(Default)]
pub struct Fronts {
    /// `/laser` messages the web watcher got.
    pub web: AtomicU64,
    /// Web connections opened by the churn and the stalled client.
    pub web_churn: AtomicU64,
    /// Zenoh readings of robot A the watcher got.
    pub zenoh: AtomicU64,
    /// ROS 2 `odom` samples the watcher got.
    pub ros2: AtomicU64,
    /// Malformed `cmd_vel` samples sent.
    pub ros2_bad: AtomicU64,
    /// Sessions opened (Zenoh churn, ROS 2 reopen).
    pub sessions: AtomicU64,
    /// Errors of the front-end load (each followed by a pause).
    pub errors: AtomicU64,
    /// Bytes of recordings deleted so far (their sizes).
    pub recorded_deleted: AtomicU64,
}

/// Ports of the front ends.
#[derive(Clone, Copy)]
pub struct Ports {
    /// Robot A's web viewer.
    pub web: u16,
    /// The Zenoh bridge's listen port.
    pub zenoh: u16,
    /// The ROS 2 front end's listen port.
    pub ros2: u16,
}

/// The configuration sections for the front ends (robot A is `sim`).
pub fn config(ports: Ports, dir: &Path) -> String {
    format!(
        "[zenoh]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{z}\"]\nwrite = true\nrobots = [\"sim\"]\n\n\
         [ros2]\nenabled = true\nlisten = [\"tcp/127.0.0.1:{r}\"]\nwrite = true\nrobots = [\"sim\"]\n\n\
         [record]\npath = \"{rec}\"\nmax_seconds = 60.0\n\n",
        z = ports.zenoh,
        r = ports.ros2,
        rec = dir.join("soak.mcap").display()
    )
}

/// Sleeps up to `d`, waking early when `stop` is set. False once stopped.
fn nap(stop: &AtomicBool, d: Duration) -> bool {
    let end = Instant::now() + d;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
    false
}

/// A Zenoh client session of the front end on `port`, retried every 500 ms until it opens
/// (the front ends come up after robot A's TCP port); `None` once stopped.
fn open(stop: &AtomicBool, f: &Fronts, port: u16) -> Option<zenoh::Session> {
    loop {
        let mut c = zenoh::Config::default();
        let ok = c.insert_json5("mode", "\"client\"").is_ok()
            && c.insert_json5("connect/endpoints", &format!("[\"tcp/127.0.0.1:{port}\"]"))
                .is_ok()
            && c.insert_json5("scouting/multicast/enabled", "false")
                .is_ok();
        assert!(ok, "a Zenoh client configuration");
        match zenoh::open(c).wait() {
            Ok(z) => {
                f.sessions.fetch_add(1, Ordering::Relaxed);
                return Some(z);
            }
            Err(_) => {
                f.errors.fetch_add(1, Ordering::Relaxed);
                if !nap(stop, Duration::from_millis(500)) {
                    return None;
                }
            }
        }
    }
}

/// The next message within 5 s, as a result.
async fn next<S>(ws: &mut tokio_tungstenite::WebSocketStream<S>) -> Result<Message, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
        Ok(Some(Ok(m))) => Ok(m),
        Ok(Some(Err(e))) => Err(e.to_string()),
        Ok(None) => Err("closed".into()),
        Err(_) => Err("nothing for 5 s".into()),
    }
}

/// Waits for `advertise` and subscribes to the channels `pick` accepts (by topic), as
/// subscriptions 1, 2, ...; how many.
async fn subscribe<S>(
    ws: &mut tokio_tungstenite::WebSocketStream<S>,
    pick: impl Fn(&str) -> bool,
) -> Result<usize, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        let Message::Text(t) = next(ws).await? else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&t).map_err(|e| e.to_string())?;
        if v["op"] != "advertise" {
            continue;
        }
        let subs: Vec<serde_json::Value> = v["channels"]
            .as_array()
            .map(|a| a.as_slice())
            .unwrap_or_default()
            .iter()
            .filter(|c| c["topic"].as_str().is_some_and(&pick))
            .enumerate()
            .map(|(i, c)| serde_json::json!({"id": i + 1, "channelId": c["id"]}))
            .collect();
        let n = subs.len();
        let m = serde_json::json!({"op": "subscribe", "subscriptions": subs});
        ws.send(Message::Text(m.to_string().into()))
            .await
            .map_err(|e| e.to_string())?;
        return Ok(n);
    }
}

/// The web watcher: `/laser` as subscription 1, counted; reconnects after an error.
pub fn web_watcher(stop: &AtomicBool, f: &Fronts, port: u16) {
    let rt = runtime();
    while !stop.load(Ordering::Relaxed) {
        let r: Result<(), String> = rt.block_on(async {
            let mut ws: Ws = connect_with(port, SUBPROTOCOL, "").await?;
            subscribe(&mut ws, |t| t == "/laser").await?;
            while !stop.load(Ordering::Relaxed) {
                if let Message::Binary(b) = next(&mut ws).await? {
                    if b.first() == Some(&1) && b.get(1..5) == Some(&1u32.to_le_bytes()[..]) {
                        f.web.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Ok(())
        });
        if r.is_err() {
            f.errors.fetch_add(1, Ordering::Relaxed);
            nap(stop, Duration::from_millis(500));
        }
    }
}

/// Web clients churning: every channel subscribed, read for 0 to 3 s, closed.
pub fn web_churn(stop: &AtomicBool, f: &Fronts, port: u16) {
    let rt = runtime();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let r: Result<(), String> = rt.block_on(async {
            let mut ws: Ws = connect_with(port, SUBPROTOCOL, "").await?;
            f.web_churn.fetch_add(1, Ordering::Relaxed);
            subscribe(&mut ws, |_| true).await?;
            let until = Instant::now() + Duration::from_millis(n % 4 * 1000);
            while Instant::now() < until {
                next(&mut ws).await?;
            }
            let _ = ws.close(None).await;
            Ok(())
        });
        if r.is_err() {
            f.errors.fetch_add(1, Ordering::Relaxed);
        }
        nap(stop, Duration::from_millis(200));
    }
}

/// A web client subscribed to everything with a 4 KiB receive buffer that never reads,
/// replaced every `hold`.
pub fn web_stalled(stop: &AtomicBool, f: &Fronts, port: u16, hold: Duration) {
    let rt = runtime();
    while !stop.load(Ordering::Relaxed) {
        let r: Result<(), String> = rt.block_on(async {
            let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                .map_err(|e| e.to_string())?;
            sock.set_recv_buffer_size(4096).map_err(|e| e.to_string())?;
            let addr: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
            sock.connect(&addr.into()).map_err(|e| e.to_string())?;
            sock.set_nonblocking(true).map_err(|e| e.to_string())?;
            let stream = tokio::net::TcpStream::from_std(sock.into()).map_err(|e| e.to_string())?;
            let mut ws = handshake(stream, &format!("ws://127.0.0.1:{port}/")).await?;
            f.web_churn.fetch_add(1, Ordering::Relaxed);
            subscribe(&mut ws, |_| true).await?;
            // Never reads: the server closes it after its stall timeout.
            let end = tokio::time::Instant::now() + hold;
            while tokio::time::Instant::now() < end && !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(())
        });
        if r.is_err() {
            f.errors.fetch_add(1, Ordering::Relaxed);
            nap(stop, Duration::from_millis(500));
        }
    }
}

/// The Zenoh watcher and commander of robot A (`sim`): its readings counted, its base
/// turned slowly at 10 Hz; a second session opened, subscribed to everything and closed
/// every 5 s.
pub fn zenoh_load(stop: &AtomicBool, f: &Arc<Fronts>, port: u16) {
    let Some(z) = open(stop, f, port) else {
        return;
    };
    let counted = Arc::clone(f);
    let sub = z
        .declare_subscriber("player/sim/*")
        .callback(move |_| {
            counted.zenoh.fetch_add(1, Ordering::Relaxed);
        })
        .wait()
        .expect("a Zenoh subscriber");
    let publisher = z
        .declare_publisher("player/sim/p/cmd")
        .wait()
        .expect("a Zenoh publisher");
    let cmd = PositionCommand {
        speed: 0,
        turn_rate: 10,
    }
    .encode();
    let mut last_churn = Instant::now();
    while nap(stop, Duration::from_millis(100)) {
        if publisher.put(cmd.clone()).wait().is_err() {
            f.errors.fetch_add(1, Ordering::Relaxed);
        }
        if last_churn.elapsed() >= Duration::from_secs(5) {
            last_churn = Instant::now();
            let Some(other) = open(stop, f, port) else {
                break;
            };
            let s = other
                .declare_subscriber("player/**")
                .callback(|_| {})
                .wait();
            nap(stop, Duration::from_secs(1));
            drop(s);
            let _ = other.close().wait();
        }
    }
    drop(sub);
    drop(publisher);
    let _ = z.close().wait();
}

/// The ROS 2 watcher (`odom`) and `cmd_vel` publisher, every tenth sample malformed; the
/// session closed and opened again every 30 s.
pub fn ros2_load(stop: &AtomicBool, f: &Arc<Fronts>, port: u16) {
    let mut seq = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let Some(z) = open(stop, f, port) else {
            return;
        };
        let counted = Arc::clone(f);
        let sub = z
            .declare_subscriber("0/odom/**")
            .callback(move |_| {
                counted.ros2.fetch_add(1, Ordering::Relaxed);
            })
            .wait()
            .expect("a ROS 2 subscriber");
        let publisher = z
            .declare_publisher(rmw::topic_key(0, "/cmd_vel", &types::TWIST))
            .wait()
            .expect("a cmd_vel publisher");
        let twist = Twist {
            linear: Vector3::default(),
            angular: Vector3 {
                z: 0.1,
                ..Vector3::default()
            },
        }
        .encode();
        let opened = Instant::now();
        while opened.elapsed() < Duration::from_secs(30) && nap(stop, Duration::from_millis(100)) {
            seq += 1;
            let ns = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as i64)
                .unwrap_or(0);
            let att = Attachment {
                seq,
                timestamp_ns: ns,
                gid: [5; rmw::GID_LEN],
            }
            .encode();
            let payload = if seq % 10 == 0 {
                f.ros2_bad.fetch_add(1, Ordering::Relaxed);
                twist[..twist.len() / 2].to_vec()
            } else {
                twist.clone()
            };
            if publisher
                .put(payload)
                .attachment(att.to_vec())
                .wait()
                .is_err()
            {
                f.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(sub);
        drop(publisher);
        let _ = z.close().wait();
    }
}

/// Deletes all but the newest two recordings in `dir`, counting the bytes deleted; the
/// bytes recorded so far (deleted and present).
pub fn recorded(f: &Fronts, dir: &Path) -> u64 {
    let mut files: Vec<(SystemTime, u64, std::path::PathBuf)> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "mcap"))
                .filter_map(|e| {
                    let m = e.metadata().ok()?;
                    Some((m.modified().ok()?, m.len(), e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let keep = files.len().saturating_sub(2);
    for (_, len, path) in files.drain(..keep) {
        if std::fs::remove_file(&path).is_ok() {
            f.recorded_deleted.fetch_add(len, Ordering::Relaxed);
        }
    }
    f.recorded_deleted.load(Ordering::Relaxed) + files.iter().map(|(_, l, _)| l).sum::<u64>()
}
