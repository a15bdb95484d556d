//! The client library's navigation devices against the real server (in-process, real
//! TCP): the simulated world's map downloaded tile by tile (`mapfile`, `map = "world"`),
//! the base's own position under `O` with its full-precision odometry `P`, and
//! `player-cli print map` run as a process; goals followed to the end by `Client::goto`
//! and `player-cli goto` (reached, refused, cancelled on Ctrl-C) and the localizer's
//! pose set by `player-cli localize`, on the maze with `amcl` and `wavefront`.

// Unsafe code: kill(2) to send `goto` its Ctrl-C (a Linux call).
#![allow(unsafe_code)]

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

/// The maze (config/worlds/maze.toml) with its walls as `M`, `amcl` serving `H`, and the
/// `wavefront` planner on `G` posed from the exact odometry `P` (noise off).
fn navigating_server() -> TestServer {
    let world = concat!(env!("CARGO_MANIFEST_DIR"), "/../config/worlds/maze.toml");
    let text = format!(
        r#"
[[robot]]
command_timeout = 0.5

[[robot.driver]]
driver = "sim"
devices = ["p", "P", "l"]
[robot.driver.params]
world = "{world}"
noise = false

[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[robot.driver.params]
map = "world"

[[robot.driver]]
driver = "amcl"
devices = ["H"]
[robot.driver.params]
initial_pose = [1000, 1000, 0, 100, 100, 5]
particles = [200, 500]
odometry = "P"
laser = "l"

[[robot.driver]]
driver = "wavefront"
devices = ["G"]
[robot.driver.params]
pose = "P"
pose_origin = [1000, 1000, 0]
"#
    );
    let settings = Settings::from_toml(&text, "client nav test").unwrap();
    start_server_with(settings, player::builtin_catalog())
}

fn player_cli(server: &TestServer, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_player-cli"))
        .args(["-h", &server.addr().to_string()])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn finished(child: std::process::Child) -> (Option<i32>, String, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn goto_follows_a_goal_until_reached_says_why_one_is_refused_and_cancels_on_ctrl_c() {
    use player_client::proto::nav::PlannerState;
    let server = navigating_server();
    // The library: 1.5 m east along the bottom corridor.
    let mut c = connect(&server);
    c.request("Ga").unwrap().check().unwrap();
    let p = c
        .goto(2500, 1000, 0, Some(Duration::from_secs(60)))
        .unwrap();
    assert_eq!((p.state, p.goal), (PlannerState::Reached, [2500, 1000, 0]));
    drop(c);
    // The tool, from where the library left the robot: reached, exit 0.
    let (code, out, err) = finished(player_cli(
        &server,
        &["goto", "4000", "1000", "90", "-t", "60"],
    ));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.starts_with("goal (4000, 1000) mm 90° sent\n"), "{out}");
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("reached    at (") && last.contains(" in "),
        "{out}"
    );
    assert!(
        out.contains("driving    at (2"),
        "it started from 2.5 m: {out}"
    );
    // A goal in a wall: exit 1, the planner's reason on standard error.
    let (code, out, err) = finished(player_cli(&server, &["goto", "5000", "3000"]));
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        out.lines()
            .last()
            .unwrap_or_default()
            .starts_with("no path "),
        "{out}"
    );
    assert!(
        err.contains("goal refused") && err.contains("obstacle"),
        "{err}"
    );
    // Ctrl-C while driving: the goal cancelled, the robot stopped, exit 1.
    let mut watcher = connect(&server);
    watcher.request("prGr").unwrap().check().unwrap();
    let child = player_cli(&server, &["goto", "8000", "1000"]);
    let deadline = std::time::Instant::now() + PATIENCE;
    while watcher
        .read()
        .unwrap()
        .position
        .is_none_or(|p| p.speed < 100)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the robot never moved"
        );
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (code, out, err) = finished(child);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(out.contains("cancelled after"), "{out}");
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let r = watcher.read().unwrap();
        let idle = r.planner.is_some_and(|g| g.state == PlannerState::Idle);
        if idle && r.position.is_some_and(|p| p.speed == 0) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not idle and still: {r:?}"
        );
    }
}

#[test]
fn localize_sets_the_pose_estimate_and_starts_global_localization() {
    let server = navigating_server();
    let (code, out, err) = finished(player_cli(
        &server,
        &["localize", "1500", "1200", "-90", "-s", "100", "-r", "5"],
    ));
    assert_eq!(code, Some(0), "{out}{err}");
    // The best hypothesis near the pose given.
    let mean: Vec<f64> = out
        .trim_start_matches('(')
        .split([',', ')'])
        .take(2)
        .map(|v| v.trim().parse().unwrap())
        .collect();
    assert!((mean[0] - 1500.0).hypot(mean[1] - 1200.0) <= 100.0, "{out}");
    let (code, out, err) = finished(player_cli(&server, &["localize", "global"]));
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.starts_with("global localization: ("), "{out}");
    // A usage error: exit 2.
    let (code, _, err) = finished(player_cli(&server, &["localize", "1500"]));
    assert_eq!(code, Some(2), "{err}");
}
