//! The navigation devices recorded and replayed: a server with the `mapfile` driver (`M`)
//! and a stand-in localizer and planner (`common/navstub.rs`: `H`, `G`) is recorded to
//! MCAP while a client moves the pose estimate and sends goals (so `H` and `G` change), the
//! file's raw channels carry the devices' layouts, and the `replay` driver serves `M`, `H`
//! and `G` to a 0.7.4a-style client byte for byte as recorded, at 1x and at 8x. The map's
//! cells are in the file whole (`/nav/M/map`, and `/nav/map` as a `foxglove.Grid`), cell
//! for cell the map file's, and the replay answers `x M t` from them.

mod common;

use common::navstub;

use player::record::RAW_ENCODING;
use player::settings::Settings;
use player_proto::ext;
use player_proto::nav::{self, Goal, MapInfo, SetPose, Tile, TileRequest};
use player_proto::recording::RecordedMap;
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

/// The map file's cells as map_server's rule reads them, row by row from the lower-left:
/// black (0) occupied (+1), white (254) free (-1).
fn map_file_cells() -> Vec<i8> {
    let (w, h) = (20usize, 10usize);
    let mut cells = Vec::with_capacity(w * h);
    for r in 0..h {
        for c in 0..w {
            let pixel = (h - 1 - r) * w + c;
            cells.push(if pixel % 7 == 0 { 1 } else { -1 });
        }
    }
    cells
}

/// Asks `c` for one tile and reads until its answer.
fn tile(c: &mut Client, rect: TileRequest) -> Tile {
    c.send(&nav::tile_config(rect));
    let deadline = Instant::now() + TIMEOUT;
    loop {
        assert!(Instant::now() < deadline, "no tile answer for {rect:?}");
        let Some((code, payload)) = c.read_message_within(Duration::from_millis(200)) else {
            continue;
        };
        if code != b'y' {
            continue;
        }
        let Some(a) = ext::decode_answer(&payload) else {
            continue;
        };
        assert_eq!((a.device, a.code), (b'M', nav::code::TILE));
        return Tile::decode(a.body).expect("a tile");
    }
}

#[test]
fn the_map_is_recorded_whole_and_the_replay_answers_its_tiles() {
    let dir = scratch("map");
    let file = record(&dir);
    let recorded = raw_payloads(&file);
    let info = MapInfo::decode(recorded[&b'M'].last().unwrap()).expect("28 bytes of M");
    // The whole map, once, on its own channel; and the viewer's grid of it.
    let bytes = std::fs::read(&file).unwrap();
    let (mut whole, mut grids) = (Vec::new(), Vec::new());
    let mut configs: BTreeMap<String, usize> = BTreeMap::new();
    for m in mcap::MessageStream::new(&bytes).unwrap() {
        let m = m.unwrap();
        if m.channel.topic.ends_with("/cfg") {
            *configs.entry(m.channel.topic.clone()).or_default() += 1;
        }
        match m.channel.topic.as_str() {
            "/nav/M/map" => {
                assert_eq!(m.channel.message_encoding, RAW_ENCODING);
                whole.push(RecordedMap::decode(&m.data).expect("a whole map"));
            }
            "/nav/map" => {
                let schema = m.channel.schema.as_ref().expect("a schema");
                assert_eq!(schema.name, "foxglove.Grid");
                grids.push(m.data.len());
            }
            _ => {}
        }
    }
    assert_eq!(whole.len(), 1, "one map, recorded once");
    assert_eq!(whole[0].info, info, "the map M served");
    assert_eq!(
        &whole[0].cells[..],
        &map_file_cells()[..],
        "the file's cells"
    );
    assert_eq!(grids.len(), 1, "its grid for Foxglove");
    // The client's configs are recorded; the recorder's own tile requests are not.
    assert_eq!(configs.get("/nav/H/cfg"), Some(&15), "{configs:?}");
    assert_eq!(configs.get("/nav/M/cfg"), None, "{configs:?}");
    assert!(grids[0] > 200, "{} bytes of grid", grids[0]);

    // The replay answers tiles from it: the whole map, a rectangle, one cut to the map.
    let text = format!(
        r#"
[[robot]]
name = "nav"
[[robot.driver]]
driver = "replay"
devices = ["M", "H"]
[robot.driver.params]
file = "{}"
"#,
        file.display()
    );
    let settings = Settings::from_toml(&text, "replay map").unwrap();
    let server = start_server_with(settings, player::builtin_catalog());
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'M', b'r')]), b"Mr");
    let rect = |col, row, width, height| TileRequest {
        col,
        row,
        width,
        height,
    };
    let all = rect(0, 0, 20, 10);
    let t = tile(&mut c, all);
    assert_eq!((t.map_id, t.rect), (info.map_id, all));
    assert_eq!(t.cells, map_file_cells());
    let part = rect(3, 2, 5, 4);
    let want = Tile::cut(&info, &map_file_cells(), part).unwrap();
    assert_eq!(tile(&mut c, part), want);
    let past = rect(15, 8, 100, 100);
    let t = tile(&mut c, past);
    assert_eq!((t.rect.width, t.rect.height), (5, 2), "cut to the map");
    assert_eq!(t, Tile::cut(&info, &map_file_cells(), past).unwrap());
    server.shutdown();
}
