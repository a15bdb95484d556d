//! The engine's own limit (issue 33): a minimal publisher of our own, no actix and no
//! server, that puts the same bytes on the same keys at the same rates with the same Zenoh
//! configuration as the server's Zenoh bridge and ROS 2 front end. `benches/ros2.rs` and
//! `benches/fleet.rs` run it as a second process (their own binary, re-executed with
//! [`FLAG`]) on ports of its own, so the same keys never meet the server's, and print
//! their routes' ratios to it.
//!
//! What it does per key, and nothing more: a plain thread sleeps to the next tick of the
//! key's rate; while a subscriber matches the key (the publisher's matching listener, as
//! the server's bridges read a device only then) it copies the captured payload into a
//! fresh buffer, writes the tick's wall-clock time where the route carries its timestamp
//! (the attachment of a plain key, the header stamp of a CDR message, plus rmw_zenoh's
//! attachment) and puts it with the server's publisher options (congestion control
//! "drop", express as the server's). Its process CPU above its own idle ticking is the
//! engine's cost per message; its stamp-to-receipt time the engine's latency.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use zenoh::Wait;

/// The first argument that makes a bench binary the reference publisher.
pub const FLAG: &str = "--zenoh-reference";

/// Where a payload carries its timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stamp {
    /// A plain key of the Zenoh bridge: 8 bytes of attachment, u32 s and u32 us big-endian.
    Attachment,
    /// A CDR message whose `builtin_interfaces/Time` (i32 s, u32 ns, little-endian) is at
    /// this offset, with rmw_zenoh's 33-byte attachment.
    Cdr(usize),
}

/// One key the reference publishes.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The key (the server's, on another Zenoh network).
    pub key: String,
    /// The payload, as captured from the server.
    pub payload: Vec<u8>,
    /// Publications per second.
    pub rate_hz: f64,
    /// Where the timestamp goes.
    pub stamp: Stamp,
    /// Whether the server's publisher of this key is express.
    pub express: bool,
}

/// Which of the server's Zenoh configurations a session copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// The Zenoh bridge's (`[zenoh]`).
    Zenoh,
    /// The ROS 2 front end's (`[ros2]`).
    Ros2,
}

/// The server's Zenoh configuration for `front`, listening on 127.0.0.1:`port` (peer mode,
/// as the bench configures the server).
pub fn config(front: Front, port: u16) -> zenoh::Config {
    let listen = vec![format!("tcp/127.0.0.1:{port}")];
    match front {
        Front::Zenoh => player::zenoh::ZenohSettings {
            enabled: true,
            listen,
            ..Default::default()
        }
        .zenoh_config()
        .expect("the bridge's configuration"),
        Front::Ros2 => player::ros2::settings::Ros2Settings {
            enabled: true,
            listen,
            connect: Vec::new(),
            ..Default::default()
        }
        .zenoh_config()
        .expect("the ROS 2 front end's configuration"),
    }
}

/// Writes `specs` for the reference process into `dir` (one payload file each and a list),
/// returning the arguments that start it: `FLAG`, the list's path, the ports of its
/// Zenoh-bridge and ROS 2 sessions.
pub fn arguments(
    dir: &std::path::Path,
    specs: &[(Front, Spec)],
    zport: u16,
    rport: u16,
) -> Vec<String> {
    let mut list = String::new();
    for (i, (front, s)) in specs.iter().enumerate() {
        let file = dir.join(format!("reference-{i}.bin"));
        std::fs::write(&file, &s.payload).unwrap();
        let stamp = match s.stamp {
            Stamp::Attachment => "a".to_string(),
            Stamp::Cdr(at) => at.to_string(),
        };
        let front = if *front == Front::Zenoh { "z" } else { "r" };
        list.push_str(&format!(
            "{front} {} {} {stamp} {} {}\n",
            s.key,
            s.rate_hz,
            u8::from(s.express),
            file.display()
        ));
    }
    let path = dir.join("reference.txt");
    std::fs::write(&path, list).unwrap();
    vec![
        FLAG.to_string(),
        path.display().to_string(),
        zport.to_string(),
        rport.to_string(),
    ]
}

fn parse(line: &str) -> (Front, Spec) {
    let f: Vec<&str> = line.split(' ').collect();
    assert_eq!(f.len(), 6, "a reference line: {line}");
    let front = if f[0] == "z" {
        Front::Zenoh
    } else {
        Front::Ros2
    };
    let stamp = match f[3] {
        "a" => Stamp::Attachment,
        at => Stamp::Cdr(at.parse().unwrap()),
    };
    let spec = Spec {
        key: f[1].to_string(),
        rate_hz: f[2].parse().unwrap(),
        stamp,
        express: f[4] == "1",
        payload: std::fs::read(f[5]).unwrap(),
    };
    (front, spec)
}

/// The reference process: `args` as [`arguments`] made them (after [`FLAG`]). Runs until
/// its standard input closes (the bench dropped it).
pub fn serve(args: &[String]) {
    let list = std::fs::read_to_string(&args[0]).unwrap();
    let ports: [u16; 2] = [args[1].parse().unwrap(), args[2].parse().unwrap()];
    let specs: Vec<(Front, Spec)> = list.lines().map(parse).collect();
    let open = |front: Front, port: u16| zenoh::open(config(front, port)).wait().unwrap();
    let sessions = [open(Front::Zenoh, ports[0]), open(Front::Ros2, ports[1])];
    let mut threads = Vec::new();
    for (front, spec) in specs {
        let session = sessions[usize::from(front == Front::Ros2)].clone();
        threads.push(std::thread::spawn(move || publish(&session, spec)));
    }
    // The bench closes our standard input to stop us.
    let _ = std::io::Read::read(&mut std::io::stdin(), &mut [0u8; 1]);
    std::process::exit(0);
}

/// Wall-clock time since the Unix epoch.
fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Publishes `spec` at its rate while a subscriber matches it, forever.
fn publish(session: &zenoh::Session, spec: Spec) {
    let publisher = session
        .declare_publisher(spec.key.clone())
        .congestion_control(zenoh::qos::CongestionControl::Drop)
        .express(spec.express)
        .wait()
        .unwrap();
    let matched = Arc::new(AtomicBool::new(false));
    let m = matched.clone();
    publisher
        .matching_listener()
        .callback(move |s| m.store(s.matching(), Ordering::Relaxed))
        .background()
        .wait()
        .unwrap();
    // A GID of our own, as a ROS 2 publisher has one.
    let gid: [u8; 16] = std::array::from_fn(|i| spec.key.len() as u8 ^ i as u8);
    let period = Duration::from_secs_f64(1.0 / spec.rate_hz);
    let mut next = Instant::now() + period;
    let mut seq = 0i64;
    loop {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        next += period;
        if !matched.load(Ordering::Relaxed) {
            continue;
        }
        let t = now();
        let mut payload = spec.payload.clone();
        let put = match spec.stamp {
            Stamp::Attachment => {
                let mut a = [0u8; 8];
                a[..4].copy_from_slice(&(t.as_secs() as u32).to_be_bytes());
                a[4..].copy_from_slice(&t.subsec_micros().to_be_bytes());
                publisher.put(payload).attachment(a.to_vec())
            }
            Stamp::Cdr(at) => {
                payload[at..at + 4].copy_from_slice(&(t.as_secs() as i32).to_le_bytes());
                payload[at + 4..at + 8].copy_from_slice(&t.subsec_nanos().to_le_bytes());
                seq += 1;
                let a = player::ros2::rmw::Attachment {
                    seq,
                    timestamp_ns: t.as_nanos() as i64,
                    gid,
                };
                publisher.put(payload).attachment(a.encode().to_vec())
            }
        };
        let _ = put.wait();
    }
}
