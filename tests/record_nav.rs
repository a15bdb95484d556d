//! The navigation devices recorded and replayed: a server with the `mapfile` driver (`M`)
//! and a stand-in localizer and planner (`common/navstub.rs`: `H`, `G`) is recorded to
//! MCAP while a client moves the pose estimate and sends goals (so `H` and `G` change), the
//! file's raw channels carry the devices' layouts, and the `replay` driver serves `M`, `H`
//! and `G` to a 0.7.4a-style client byte for byte as recorded, at 1x and at 8x.

mod common;

use common::navstub;

use player::record::RAW_ENCODING;
use player::settings::Settings;
use player_proto::nav::{Goal, SetPose};
use player_testkit::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("record-nav-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 20 x 10 map file (PGM and YAML) in `dir`.
fn map_file(dir: &Path) -> PathBuf {
    let mut pgm = b"P5\n20 10\n255\n".to_vec();
    pgm.extend((0..200).map(|i| if i % 7 == 0 { 0u8 } else { 254 }));
    std::fs::write(dir.join("m.pgm"), pgm).unwrap();
    let yaml = dir.join("m.yaml");
    std::fs::write(
        &yaml,
        "image: m.pgm\nresolution: 0.05\norigin: [0.0, 0.0, 0.0]\nnegate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n",
    )
    .unwrap();
    yaml
}

/// Records `M`, `H` and `G` for about 3 s while a client sets poses and goals.
fn record(dir: &Path) -> PathBuf {
    let file = dir.join("nav.mcap");
    let text = format!(
        r#"
[[robot]]
name = "nav"
[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
yaml = "{}"
[[robot.driver]]
driver = "navstub"
devices = ["H", "G"]
"#,
        map_file(dir).display()
    );
    let mut settings = Settings::from_toml(&text, "record nav").unwrap();
    settings.record.path = file.display().to_string();
    let mut catalog = player::builtin_catalog();
    navstub::register(&mut catalog);
    let server = start_server_with(settings, catalog);
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'G', b'a')]), b"Ga");
    for k in 0..15i32 {
        let pose = SetPose {
            mean: [100 * k, -50 * k, 3600 * k],
            cov: [[k.into(), 0, 0], [0, 1, 0], [0, 0, 1]],
        }
        .encode();
        c.config(b'H', pose[0], &pose[1..]);
        let goal = Goal {
            x: 1000 + k,
            y: -k,
            a: k,
        };
        c.command(b'G', &goal.encode());
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(c);
    server.shutdown();
    file
}

/// The raw payloads of robot `nav`'s devices, in file order.
fn raw_payloads(file: &Path) -> BTreeMap<u8, Vec<Vec<u8>>> {
    let bytes = std::fs::read(file).unwrap();
    let mut out: BTreeMap<u8, Vec<Vec<u8>>> = BTreeMap::new();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        if m.channel.message_encoding != RAW_ENCODING {
            continue;
        }
        if let Some(&[c]) = m.channel.topic.strip_prefix("/nav/").map(str::as_bytes) {
            let schema = m.channel.schema.as_ref().expect("a schema");
            let layout = String::from_utf8_lossy(&schema.data).into_owned();
            assert!(!layout.contains("raw bytes"), "{}: {layout}", char::from(c));
            out.entry(c).or_default().push(m.data.into_owned());
        }
    }
    out
}

/// What a push-mode client of a replay of `file` at `speed` reads of `M`, `H` and `G`
/// within `span`.
fn replayed(file: &Path, speed: f64, span: Duration) -> BTreeMap<u8, Vec<Vec<u8>>> {
    let text = format!(
        r#"
[[robot]]
name = "nav"
[[robot.driver]]
driver = "replay"
devices = ["M", "H", "G"]
[robot.driver.params]
file = "{}"
speed = {speed}
"#,
        file.display()
    );
    let settings = Settings::from_toml(&text, "replay nav").unwrap();
    let server = start_server_with(settings, player::builtin_catalog());
    let mut c = Client::connect(server.addr());
    c.frequency(1000);
    c.data_mode(2);
    assert_eq!(
        c.request(&[(b'M', b'r'), (b'H', b'r'), (b'G', b'r')]),
        b"MrHrGr"
    );
    let mut got: BTreeMap<u8, Vec<Vec<u8>>> = BTreeMap::new();
    let end = Instant::now() + span;
    while Instant::now() < end {
        if let Some((code, payload)) = c.read_message_within(Duration::from_millis(100)) {
            got.entry(code).or_default().push(payload);
        }
    }
    got
}

/// Every recorded payload of `code` served, in order, byte for byte, to the last (the
/// first few may be missed while the client subscribes; consecutive readings may be equal, so
/// each served payload is looked for after the previous one's match).
fn check_served(code: u8, got: &BTreeMap<u8, Vec<Vec<u8>>>, want: &[Vec<u8>]) {
    let g = got.get(&code).map(Vec::as_slice).unwrap_or(&[]);
    let c = char::from(code);
    // Readings come every 50 ms: up to half a second of them may pass while a loaded
    // machine sets the client up; the rest, to the last one, is served.
    assert!(
        g.len() + 10 >= want.len(),
        "{c}: {} of {}",
        g.len(),
        want.len()
    );
    assert_eq!(
        g.last(),
        want.last(),
        "{c}: served to the last recorded reading"
    );
    let mut at = 0;
    for (i, payload) in g.iter().enumerate() {
        match want[at..].iter().position(|w| w == payload) {
            Some(k) => at += k + 1,
            None => panic!(
                "{c}: payload {i} of {} not recorded after the previous",
                g.len()
            ),
        }
    }
}

#[test]
fn h_and_g_replay_byte_for_byte_at_1x_and_faster() {
    let dir = scratch("bytes");
    let file = record(&dir);
    let recorded = raw_payloads(&file);
    assert_eq!(recorded.keys().copied().collect::<Vec<u8>>(), b"GHM");
    // The readings changed while recording: matching them in order matches something.
    for code in [b'H', b'G'] {
        let distinct: std::collections::HashSet<&Vec<u8>> = recorded[&code].iter().collect();
        assert!(
            distinct.len() >= 10,
            "{}: {}",
            char::from(code),
            distinct.len()
        );
    }
    let span = Duration::from_millis(3_500);
    let at1 = replayed(&file, 1.0, span);
    for code in [b'H', b'G', b'M'] {
        check_served(code, &at1, &recorded[&code]);
    }
    let at8 = replayed(&file, 8.0, span / 4);
    for code in [b'H', b'G'] {
        check_served(code, &at8, &recorded[&code]);
    }
    // Both replays served the same bytes of H.
    assert_eq!(at1[&b'H'].last(), at8[&b'H'].last());
}
