//! The `mapfile` driver over real TCP: a map file's cells downloaded tile by tile and
//! compared cell for cell with the file (read here by the test's own reading of the PGM and
//! map_server's rule), a bad file refusing the configuration with its key and reason, and
//! `map = "world"` serving the simulated world's walls.

use player::settings::Settings;
use player_proto::ext;
use player_proto::nav::{self, MapInfo, Tile, TileRequest};
use player_testkit::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("player-mapfile-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A `w` x `h` binary PGM of a made-up floor plan: a frame of walls, a box, stripes of
/// grey (unknown) and free floor.
fn floor_plan(w: usize, h: usize) -> Vec<u8> {
    let mut px = vec![254u8; w * h];
    for y in 0..h {
        for x in 0..w {
            let v = if x < 3 || y < 3 || x >= w - 3 || y >= h - 3 {
                0
            } else if (100..160).contains(&x) && (40..90).contains(&y) {
                10
            } else if (x / 37 + y / 23) % 7 == 0 {
                205
            } else {
                ((x * 31 + y * 17) % 256) as u8
            };
            px[y * w + x] = v;
        }
    }
    let mut v = format!("P5\n# made up\n{w} {h}\n255\n").into_bytes();
    v.extend_from_slice(&px);
    v
}

/// The file's cells by map_server's trinary rule, read here from the PGM bytes (rows from
/// the bottom: the image's last row is row 0).
fn expected_cells(pgm: &[u8], w: usize, h: usize, occupied: f64, free: f64) -> Vec<i8> {
    let px = &pgm[pgm.len() - w * h..];
    let mut cells = Vec::with_capacity(w * h);
    for row in 0..h {
        for col in 0..w {
            let v = f64::from(px[(h - 1 - row) * w + col]);
            let p = (255.0 - v) / 255.0;
            cells.push(if p > occupied {
                1
            } else if p < free {
                -1
            } else {
                0
            });
        }
    }
    cells
}

fn settings(driver: &str) -> Settings {
    let text = format!(
        r#"
[[robot]]
[[robot.driver]]
driver = "sim"
devices = ["p", "s", "l"]

[[robot.driver]]
{driver}
"#
    );
    Settings::from_toml(&text, "mapfile test").unwrap_or_else(|e| panic!("{e}"))
}

/// Reads messages until `M` data arrives; returns it decoded.
fn map_info(c: &mut Client) -> MapInfo {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        assert!(Instant::now() < deadline, "no M data");
        let (code, payload) = c.read_message();
        if code == b'M' {
            return MapInfo::decode(&payload).expect("28 bytes of M");
        }
    }
}

/// Asks for one tile and reads until its answer (a `y` packet of kind `M`).
fn tile(c: &mut Client, rect: TileRequest) -> Tile {
    c.send(&nav::tile_config(rect));
    let deadline = Instant::now() + TIMEOUT;
    loop {
        assert!(Instant::now() < deadline, "no tile answer for {rect:?}");
        let (code, payload) = c.read_message();
        if code != b'y' {
            continue;
        }
        let Some(a) = ext::decode_answer(&payload) else {
            continue;
        };
        assert_eq!((a.device, a.code), (b'M', nav::code::TILE));
        // The issue's layout, read here without the decoder: kind `M`, then `<u32 map_id,
        // col, row, w, h>` and w*h i8 cells, nothing before the map id.
        let be = |at: usize| u32::from_be_bytes(payload[at..at + 4].try_into().unwrap());
        assert_eq!(payload[0], b'M');
        let (w, h) = (be(13) as usize, be(17) as usize);
        assert_eq!(payload.len(), 1 + 20 + w * h, "kind, 5 x u32, the cells");
        assert_eq!((be(5), be(9)), (rect.col, rect.row));
        let t = Tile::decode(a.body).expect("a tile");
        assert_eq!(
            (t.map_id, t.rect.width, t.rect.height),
            (be(1), w as u32, h as u32)
        );
        return t;
    }
}

/// The whole map, tile by tile, as a client downloads it.
fn download(c: &mut Client, info: &MapInfo) -> Vec<i8> {
    let (w, h) = (info.width as usize, info.height as usize);
    let mut cells = vec![i8::MIN; w * h];
    for rect in info.tiles() {
        let t = tile(c, rect);
        assert_eq!(t.map_id, info.map_id);
        assert_eq!(t.rect, rect, "a tile inside the map comes whole");
        for r in 0..rect.height as usize {
            for k in 0..rect.width as usize {
                let at = (rect.row as usize + r) * w + rect.col as usize + k;
                cells[at] = t.cells[r * rect.width as usize + k];
            }
        }
    }
    assert!(cells.iter().all(|&c| c != i8::MIN), "every cell came");
    cells
}

fn write_map(d: &Path) -> (Vec<u8>, usize, usize) {
    let (w, h) = (420, 310);
    let pgm = floor_plan(w, h);
    std::fs::write(d.join("floor.pgm"), &pgm).unwrap();
    std::fs::write(
        d.join("floor.yaml"),
        "image: floor.pgm\nresolution: 0.05\norigin: [-10.5, -7.75, 0.0]\nnegate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n",
    )
    .unwrap();
    (pgm, w, h)
}

#[test]
fn a_map_files_tiles_reassemble_to_the_file_cell_for_cell() {
    let d = dir("file");
    let (pgm, w, h) = write_map(&d);
    let yaml = d.join("floor.yaml");
    let server = start_server_with(
        settings(&format!(
            "driver = \"mapfile\"\ndevices = [\"M\"]\n[robot.driver.params]\nyaml = \"{}\"",
            yaml.display()
        )),
        player::builtin_catalog(),
    );
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'M', b'r')]), b"Mr");
    let info = map_info(&mut c);
    assert_eq!((info.width, info.height), (w as u32, h as u32));
    assert_eq!(info.resolution, 50_000);
    assert_eq!(
        (info.origin_x, info.origin_y, info.origin_heading),
        (-10_500, -7_750, 0)
    );
    assert!(info.tiles().len() > 1, "a map of several tiles");
    // Answers come without the error channel, between the rounds of M.
    let cells = download(&mut c, &info);
    assert_eq!(cells, expected_cells(&pgm, w, h, 0.65, 0.196));
    // The same map keeps its id; a tile past the edge is cut to the map.
    assert_eq!(map_info(&mut c).map_id, info.map_id);
    let t = tile(
        &mut c,
        TileRequest {
            col: 400,
            row: 300,
            width: 100,
            height: 100,
        },
    );
    assert_eq!((t.rect.width, t.rect.height, t.cells.len()), (20, 10, 200));
    // A 0.7.4a client reading the simulator sees nothing of it.
    let mut old = Client::connect(server.addr());
    assert_eq!(old.request(&[(b'p', b'r')]), b"pr");
    for _ in 0..5 {
        assert_eq!(old.read_message().0, b'p');
    }
}

#[test]
fn a_bad_map_file_refuses_the_configuration_naming_the_key_and_the_reason() {
    let d = dir("bad");
    std::fs::write(d.join("broken.pgm"), b"P5\n4 4\n255\nxx").unwrap();
    let cases = [
        (
            format!("yaml = \"{}\"", d.join("nothere.yaml").display()),
            "'yaml'",
            "nothere.yaml",
        ),
        (
            format!(
                "image = \"{}\"\nstyle = \"player\"\nresolution = 0.1",
                d.join("broken.pgm").display()
            ),
            "'image'",
            "broken.pgm",
        ),
    ];
    for (params, key, reason) in cases {
        let s = settings(&format!(
            "driver = \"mapfile\"\ndevices = [\"M\"]\n[robot.driver.params]\n{params}"
        ));
        let Err(e) =
            TestServer::try_start(s, player::builtin_catalog(), player::logging::discard())
        else {
            panic!("{params}: the server started");
        };
        let text = e.to_string();
        assert!(
            text.contains("mapfile") && text.contains(key) && text.contains(reason),
            "{text}"
        );
    }
}

#[test]
fn the_simulated_world_is_served_as_a_map() {
    let server = start_server_with(
        settings("driver = \"mapfile\"\ndevices = [\"M\"]\n[robot.driver.params]\nmap = \"world\"\nresolution = 0.05"),
        player::builtin_catalog(),
    );
    let mut c = Client::connect(server.addr());
    assert_eq!(c.request(&[(b'M', b'r')]), b"Mr");
    let info = map_info(&mut c);
    assert_ne!(info.map_id, 0);
    // The built-in room, as the simulator has it, rasterised here on its own.
    let room = player_sim::WorldMap::default_room();
    let shapes: Vec<_> = room.solids().iter().map(|(s, _)| *s).collect();
    let grid = player_sim::raster::rasterise(
        &shapes,
        player_sim::geom::Vec2::new(0.0, 0.0),
        player_sim::geom::Vec2::new(room.width(), room.height()),
        50.0,
    )
    .unwrap();
    assert_eq!(
        (info.width, info.height),
        (grid.width as u32, grid.height as u32)
    );
    assert_eq!(
        (info.origin_x, info.origin_y, info.resolution),
        (0, 0, 50_000)
    );
    let cells = download(&mut c, &info);
    assert_eq!(cells, grid.cells);
    // The walls are occupied, and where the robot starts is free.
    let (w, h) = (grid.width, grid.height);
    assert!((0..w).all(|x| cells[x] == 1 && cells[(h - 1) * w + x] == 1));
    let (sx, sy, _) = room.start_pose();
    let at = (sy / 50.0) as usize * w + (sx / 50.0) as usize;
    assert_eq!(cells[at], -1, "the start pose is free");
}

#[test]
fn a_world_map_without_a_simulator_fails_its_setup_saying_why() {
    let text = r#"
[[robot]]
[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
map = "world"
"#;
    let server = start_server_with(
        Settings::from_toml(text, "no sim").unwrap(),
        player::builtin_catalog(),
    );
    let mut c = Client::connect(server.addr());
    c.config(b'y', b'e', &[1]);
    assert_eq!(c.request(&[(b'M', b'r')]), b"Me");
    let (dev, why) = c.wait_notice(ext::kind::REFUSED, Duration::from_secs(5));
    assert_eq!(dev, b'M');
    assert!(why.contains("no simulated world"), "{why}");
}
