//! The client library's navigation devices against the real server (in-process, real
//! TCP): the simulated world's map downloaded tile by tile (`mapfile`, `map = "world"`),
//! the base's own position under `O` with its full-precision odometry `P`, and
//! `player-cli print map` run as a process.

use std::process::Command;
use std::time::Duration;

use player::settings::Settings;
use player_client::{device, Client};
use player_testkit::{start_server_with, TestServer};

const PATIENCE: Duration = Duration::from_secs(20);

/// A simulated robot whose base is served as `O` beside `P`, and the world's map as `M`.
fn server() -> TestServer {
    let text = r#"
[[robot]]
[[robot.driver]]
driver = "sim"
devices = ["p as O", "P", "s", "l"]

[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
map = "world"
resolution = 0.02
"#;
    let settings = Settings::from_toml(text, "client nav test").unwrap();
    start_server_with(settings, player::builtin_catalog())
}

fn connect(server: &TestServer) -> Client {
    let mut c = Client::connect(server.addr()).unwrap();
    c.set_read_timeout(Some(PATIENCE)).unwrap();
    c
}

#[test]
fn the_map_downloads_tile_by_tile_and_matches_the_world() {
    let server = server();
    let mut c = connect(&server);
    c.request("Mr").unwrap().check().unwrap();
    let info = c.map_info().unwrap();
    assert_eq!(info.resolution, 20_000);
    assert!(info.tiles().len() > 1, "{info:?}: several tiles at 2 cm");
    let cells = c.download_map(&info).unwrap();
    // The same cells as the simulator's world rasterised here.
    let room = player_sim::WorldMap::default_room();
    let shapes: Vec<_> = room.solids().iter().map(|(s, _)| *s).collect();
    let grid = player_sim::raster::rasterise(
        &shapes,
        player_sim::geom::Vec2::new(0.0, 0.0),
        player_sim::geom::Vec2::new(room.width(), room.height()),
        20.0,
    )
    .unwrap();
    assert_eq!(cells, grid.cells);
    // A single tile: the rectangle asked for, cut to the map.
    let t = c
        .map_tile(player_client::proto::nav::TileRequest {
            col: info.width - 5,
            row: 0,
            width: 100,
            height: 2,
        })
        .unwrap();
    assert_eq!((t.rect.width, t.rect.height, t.map_id), (5, 2, info.map_id));
    // Answers never reach the notice queue.
    assert!(c.take_notices().is_empty());
}

#[test]
fn the_bases_own_position_reads_as_o_beside_its_precise_odometry() {
    let server = server();
    let mut c = connect(&server);
    c.request("OaPr").unwrap().check().unwrap();
    c.command(
        device::ODOMETRY,
        &player_client::proto::data::PositionCommand {
            speed: 0,
            turn_rate: 30,
        }
        .encode(),
    )
    .unwrap();
    let r = loop {
        let r = c.read().unwrap();
        if r.odometry.is_some_and(|o| o.turn_rate > 20) && r.precise.is_some() {
            break r.clone();
        }
    };
    let (o, p) = (r.odometry.unwrap(), r.precise.unwrap());
    assert_eq!(o.time, p.time, "one instant");
    let diff = (f64::from(p.heading) / 3600.0 - f64::from(o.heading)).rem_euclid(360.0);
    assert!(diff <= 0.5 || diff >= 359.5, "{o:?} vs {p:?}");
    assert!((f64::from(p.turn_rate) / 3600.0 - f64::from(o.turn_rate)).abs() <= 1.0);
    let text = r.to_string();
    assert!(
        text.contains("odometry: ") && text.contains("precise odometry: "),
        "{text}"
    );
}

#[test]
fn player_cli_prints_the_map_and_counts_its_cells() {
    let server = server();
    let out = Command::new(env!("CARGO_BIN_EXE_player-cli"))
        .args(["-h", &server.addr().to_string(), "print", "map", "-n", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("map (M)"), "{text}");
    assert!(text.contains("cells of 20 mm"), "{text}");
    let cells = text
        .lines()
        .find(|l| l.contains("cells:"))
        .unwrap_or_else(|| panic!("no cell counts: {text}"));
    assert!(
        cells.contains("0 unknown") && !cells.contains(" 0 occupied"),
        "{cells}"
    );
}
