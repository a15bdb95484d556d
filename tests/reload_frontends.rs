//! The front ends follow a reload (SIGHUP) of `[access]` as the TCP sessions do: the
//! `player` binary started on a configuration file, a client connected, the file
//! rewritten, SIGHUP sent, the outcome checked from the client's side and the log.
//!
//! - Web (Foxglove WebSocket): a client whose `?key=` is no longer the key loses write
//!   access (its command channel is dropped and the robot it drove stops, though it keeps
//!   publishing; setting a parameter is refused); one whose address is no longer admitted
//!   gets a `status` error and a close frame (1008) naming the reason, and the log names
//!   the client; one the new rules let command may command.
//! - Zenoh: commands carrying the old key no longer hold the robot (it stops though they
//!   keep coming), the new key commands it, and a Zenoh subscriber's readings go on
//!   through the reload without a gap.

// Unsafe code: kill(2) to send SIGHUP to the server (a Linux call).
#![allow(unsafe_code)]

use futures::SinkExt;
use player_proto::data::PositionCommand;
use player_testkit::foxglove_ws::{
    connect, next_frame, next_op, next_text, runtime, send_json, Ws,
};
use player_testkit::{collect_stderr, free_port, wait_for_text, zenoh_client, Client};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use zenoh::Wait;

const PLAYER: &str = env!("CARGO_BIN_EXE_player");
const TIMEOUT: Duration = Duration::from_secs(15);

/// The simulated robot on `port` (web viewer on `web`), `access` as its `[access]` and
/// `extra` (whole sections) before the robot.
fn config(port: u16, web: u16, access: &str, extra: &str) -> String {
    format!(
        "[access]\n{access}\n\n{extra}\n[[robot]]\nname = \"pioneer\"\nport = {port}\n\
         bind = \"127.0.0.1\"\nweb_port = {web}\n\n[[robot.driver]]\ndriver = \"sim\"\n\
         devices = [\"p\", \"s\", \"m\", \"l\"]\n\
         [robot.driver.params]\nworld = \"room\"\nmotors_on = true\n"
    )
}

/// A `player --config FILE` process and its log.
struct Daemon {
    child: Child,
    port: u16,
    file: std::path::PathBuf,
    log: Arc<Mutex<String>>,
}

impl Daemon {
    fn start(name: &str, port: u16, text: &str, ready: &str) -> Daemon {
        let dir = std::env::temp_dir().join(format!("player-reload-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("robot.toml");
        std::fs::write(&file, text).unwrap();
        let mut child = Command::new(PLAYER)
            .arg("--config")
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env_remove("NOTIFY_SOCKET")
            .env_remove("JOURNAL_STREAM")
            .spawn()
            .expect("player starts");
        let log = collect_stderr(&mut child);
        let d = Daemon {
            child,
            port,
            file,
            log,
        };
        d.wait_log(ready);
        d
    }

    fn wait_log(&self, text: &str) {
        wait_for_text(&self.log, text, TIMEOUT);
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Rewrites the configuration file and sends SIGHUP; returns when the reload is done.
    fn reload(&self, text: &str) {
        let before = self.log().matches("configuration reloaded").count();
        std::fs::write(&self.file, text).unwrap();
        // SAFETY: a signal to our own child.
        assert_eq!(
            unsafe { libc::kill(self.child.id() as i32, libc::SIGHUP) },
            0
        );
        let deadline = Instant::now() + TIMEOUT;
        while self.log().matches("configuration reloaded").count() == before {
            assert!(Instant::now() < deadline, "no reload; log:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A TCP client reading the position device.
    fn watcher(&self) -> Client {
        let mut w = Client::connect(([127, 0, 0, 1], self.port).into());
        assert_eq!(w.request(&[(b'p', b'r')]), b"pr");
        w
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(dir) = self.file.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A Twist at 0.3 m/s on client channel 7.
fn twist() -> Message {
    let mut frame = vec![1u8];
    frame.extend_from_slice(&7u32.to_le_bytes());
    frame.extend_from_slice(br#"{"linear":{"x":0.3,"y":0,"z":0},"angular":{"x":0,"y":0,"z":0}}"#);
    Message::Binary(frame.into())
}

fn advertise_cmd_vel() -> serde_json::Value {
    serde_json::json!({"op": "advertise", "channels": [
        {"id": 7, "topic": "/cmd_vel", "encoding": "json", "schemaName": "geometry_msgs/Twist"}]})
}

/// A status message whose text starts with `prefix`.
fn status_starting(prefix: &'static str) -> impl FnMut(&serde_json::Value) -> bool {
    move |v| v["op"] == "status" && v["message"].as_str().is_some_and(|m| m.starts_with(prefix))
}

/// A server with the web viewer on, `access` as its `[access]`; its web port.
fn web_daemon(name: &str, access: &str) -> (Daemon, u16) {
    let (port, web) = (free_port(), free_port());
    let text = config(port, web, access, "");
    (
        Daemon::start(name, port, &text, "web viewer listening"),
        web,
    )
}

/// Publishes a Twist per position reading the watcher `w` takes (10 Hz) until it reads a
/// speed `f` accepts.
async fn drive_until(ws: &mut Ws, w: &mut Client, what: &str, f: impl Fn(i16) -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        ws.send(twist()).await.unwrap();
        if f(w.next_position().speed) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
    }
}

#[test]
fn a_web_client_whose_key_is_no_longer_the_key_loses_write_access_and_its_robot_stops() {
    let (d, web) = web_daemon("webkey", "key = \"old-key\"");
    let port = d.port;
    let mut w = d.watcher();
    runtime().block_on(async {
        let mut ws = connect(web, "?key=old-key").await;
        next_op(&mut ws, "advertise").await;
        send_json(&mut ws, advertise_cmd_vel()).await;
        // Drive (one Twist per position reading, 10 Hz) until the robot moves.
        drive_until(&mut ws, &mut w, "the web client to drive", |s| s >= 150).await;
        d.reload(&config(port, web, "key = \"new-key\"", ""));
        let st = next_text(
            &mut ws,
            "the withdrawal",
            TIMEOUT,
            status_starting("configuration reloaded"),
        )
        .await;
        assert_eq!(st["level"], 1, "{st}");
        assert!(
            st["message"]
                .as_str()
                .unwrap()
                .starts_with("configuration reloaded: write access withdrawn"),
            "{st}"
        );
        // It keeps publishing; the robot stops all the same (its writer left).
        drive_until(&mut ws, &mut w, "the robot to stop", |s| s == 0).await;
        let refused = next_text(
            &mut ws,
            "the refusal",
            TIMEOUT,
            status_starting("client channel 7 was not advertised"),
        )
        .await;
        assert_eq!(refused["level"], 1);
        // And stays stopped while the commands go on (20 readings, 2 s).
        for _ in 0..20 {
            ws.send(twist()).await.unwrap();
            assert_eq!(
                w.next_position().speed,
                0,
                "a withdrawn writer moved the robot"
            );
        }
        // Nor may it set a parameter (the position's watchdog timeout).
        send_json(
            &mut ws,
            serde_json::json!({"op": "setParameters", "id": "set", "parameters": [
                {"name": "p.command_timeout", "value": 0.9}]}),
        )
        .await;
        let st = next_text(
            &mut ws,
            "the refused parameters",
            TIMEOUT,
            status_starting("parameters not set (p.command_timeout)"),
        )
        .await;
        assert_eq!(st["level"], 2, "{st}");
        // Advertising the channel again is refused now.
        send_json(&mut ws, advertise_cmd_vel()).await;
        next_text(
            &mut ws,
            "the refused advertisement",
            TIMEOUT,
            status_starting("topic '/cmd_vel' refused: this client may not command"),
        )
        .await;
    });
    assert!(
        d.log().contains("web client's write access withdrawn"),
        "{}",
        d.log()
    );
}

#[test]
fn a_web_client_no_longer_admitted_is_told_why_and_closed() {
    let (d, web) = web_daemon("webadmit", "");
    let port = d.port;
    runtime().block_on(async {
        let mut ws = connect(web, "").await;
        next_op(&mut ws, "advertise").await;
        d.reload(&config(port, web, "read_allow = [\"10.0.0.0/8\"]", ""));
        let st = next_op(&mut ws, "status").await;
        assert_eq!(st["level"], 2, "{st}");
        assert_eq!(
            st["message"],
            "configuration reloaded: address not in access.read_allow; closing"
        );
        let close = next_frame(&mut ws, "the close frame", TIMEOUT, |m| match m {
            Message::Close(c) => Some(c),
            _ => None,
        })
        .await
        .expect("a close frame with a reason");
        assert_eq!(close.code, CloseCode::Policy);
        assert!(close.reason.contains("access.read_allow"), "{close:?}");
        // And a new connection is refused at the upgrade.
        let e = player_testkit::foxglove_ws::connect_with(web, "foxglove.websocket.v1", "")
            .await
            .unwrap_err();
        assert!(e.contains("403"), "{e}");
    });
    d.wait_log("web client no longer admitted; closing");
    let line = d
        .log()
        .lines()
        .find(|l| l.contains("web client no longer admitted"))
        .unwrap()
        .to_string();
    assert!(
        line.contains("web 127.0.0.1:") && line.contains("access.read_allow"),
        "the line names the client and the reason: {line}"
    );
}

#[test]
fn a_read_only_web_client_may_command_once_a_reload_drops_the_key() {
    let (d, web) = web_daemon("webgrant", "key = \"k\"");
    let port = d.port;
    let mut w = d.watcher();
    runtime().block_on(async {
        let mut ws = connect(web, "").await;
        next_op(&mut ws, "advertise").await;
        send_json(&mut ws, advertise_cmd_vel()).await;
        next_text(
            &mut ws,
            "the refusal",
            TIMEOUT,
            status_starting("topic '/cmd_vel' refused"),
        )
        .await;
        d.reload(&config(port, web, "", ""));
        let st = next_text(
            &mut ws,
            "the grant",
            TIMEOUT,
            status_starting("configuration reloaded"),
        )
        .await;
        assert_eq!(
            st["message"],
            "configuration reloaded: write access granted"
        );
        assert_eq!(st["level"], 0);
        send_json(&mut ws, advertise_cmd_vel()).await;
        drive_until(&mut ws, &mut w, "the granted client to drive", |s| s >= 150).await;
    });
}

#[test]
fn zenoh_commands_follow_the_reloaded_key_and_readings_go_on_through_the_reload() {
    let (port, zport) = (free_port(), free_port());
    let zenoh =
        format!("[zenoh]\nenabled = true\nwrite = true\nlisten = [\"tcp/127.0.0.1:{zport}\"]\n");
    let d = Daemon::start(
        "zenohkey",
        port,
        &config(port, 0, "key = \"old-key\"", &zenoh),
        "zenoh bridge up",
    );
    let z = zenoh_client(zport);
    // Every position reading's arrival on Zenoh.
    let arrivals = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let a = arrivals.clone();
    let _sub = z
        .declare_subscriber("player/pioneer/p")
        .callback(move |_| a.lock().unwrap().push(Instant::now()))
        .wait()
        .unwrap();
    let mut w = d.watcher();
    let command = PositionCommand {
        speed: 250,
        turn_rate: 0,
    }
    .encode();
    // One command per position reading (10 Hz) with `key` until `f` holds for the speed.
    let drive = |w: &mut Client, key: &'static [u8], what: &str, f: &dyn Fn(i16) -> bool| {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            z.put("player/pioneer/p/cmd", command.clone())
                .attachment(key)
                .wait()
                .unwrap();
            if f(w.next_position().speed) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
        }
    };
    drive(&mut w, b"old-key", "the old key to drive", &|s| s >= 150);
    wait_until_some(&arrivals);
    let reload_at = Instant::now();
    d.reload(&config(port, 0, "key = \"new-key\"", &zenoh));
    d.wait_log("the zenoh commands' key is no longer the key; write access given back");
    drive(&mut w, b"old-key", "the robot to stop", &|s| s == 0);
    // It stays stopped while old-key commands go on (20 readings, 2 s).
    let mut seen = Vec::new();
    for _ in 0..20 {
        z.put("player/pioneer/p/cmd", command.clone())
            .attachment(&b"old-key"[..])
            .wait()
            .unwrap();
        seen.push(w.next_position().speed);
    }
    assert!(
        seen.iter().all(|&s| s == 0),
        "old key moved the robot: {seen:?}"
    );
    drive(&mut w, b"new-key", "the new key to drive", &|s| s >= 150);
    // Readings went on through the reload: no gap over 1 s around it (10 Hz readings).
    let t = arrivals.lock().unwrap().clone();
    let around: Vec<&Instant> = t
        .iter()
        .filter(|x| **x + Duration::from_secs(3) > reload_at)
        .collect();
    assert!(
        around.len() > 20,
        "{} readings around the reload",
        around.len()
    );
    let gap = around
        .windows(2)
        .map(|p| p[1].duration_since(*p[0]))
        .max()
        .unwrap();
    eprintln!(
        "zenoh readings around the reload: {}, longest gap {gap:?}",
        around.len()
    );
    assert!(gap < Duration::from_secs(1), "a gap of {gap:?}");
    z.close().wait().unwrap();
}

/// Waits until the Zenoh subscriber has had a reading.
fn wait_until_some(arrivals: &Mutex<Vec<Instant>>) {
    player_testkit::wait_until(TIMEOUT, "a reading on Zenoh", || {
        !arrivals.lock().unwrap().is_empty()
    });
}
