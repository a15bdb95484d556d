//! Pictures of worlds: the renderer puts robots, walls, objects and sensor fans where the
//! geometry says, the PNG round-trips, and the `player-render` command line works.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use player_sim::render::{
    channel_colour, render, RenderOptions, FLOOR_COLOUR, MARGIN_COLOUR, ROBOT_COLOUR,
};
use player_sim::{SimWorld, TruthFormat, TruthRecord, WorldMap};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("config/worlds")
        .join(name)
}

fn arena() -> SimWorld {
    SimWorld::new(Arc::new(
        WorldMap::from_file(&shipped("arena.toml")).unwrap(),
    ))
}

/// The pixel at world (x, y) mm with the default 50 px/m and 10 px margin.
fn at(img: &player_sim::render::Image, x: f64, y: f64) -> [u8; 4] {
    let px = 10.0 + x / 1000.0 * 50.0;
    let py = f64::from(img.height()) - 10.0 - y / 1000.0 * 50.0;
    img.pixel(px as u32, py as u32).unwrap()
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("player-sim-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn robots_walls_and_objects_are_where_the_world_says() {
    let w = arena();
    let plain = render(
        &w,
        &RenderOptions {
            laser: false,
            sonar: false,
            ..RenderOptions::default()
        },
    );
    // 16 m x 10 m at 50 px/m, 10 px margin all round.
    assert_eq!((plain.width(), plain.height()), (820, 520));
    assert_eq!(plain.pixel(2, 2), Some(MARGIN_COLOUR));
    // The robots in their colours (leader red, left green, right blue).
    assert_eq!(at(&plain, 3900.0, 5100.0), channel_colour(0));
    assert_eq!(at(&plain, 2400.0, 6300.0), channel_colour(1));
    assert_eq!(at(&plain, 2400.0, 3700.0), channel_colour(2));
    // The yellow ball and the magenta box; open floor between them.
    assert_eq!(at(&plain, 15000.0, 5000.0), channel_colour(3));
    assert_eq!(at(&plain, 12500.0, 1500.0), channel_colour(4));
    assert_eq!(at(&plain, 7250.0, 5550.0), FLOOR_COLOUR);

    // With the laser, the floor in front of the leader is tinted red; behind the pillar
    // (in its shadow) it is not.
    let full = render(
        &w,
        &RenderOptions {
            sonar: false,
            ..RenderOptions::default()
        },
    );
    let lit = at(&full, 7250.0, 5550.0);
    assert_ne!(lit, FLOOR_COLOUR);
    assert!(lit[0] > lit[1] && lit[0] > lit[2], "{lit:?}");
    assert_eq!(at(&full, 11650.0, 5050.0), FLOOR_COLOUR);
    // With the sonar, the floor right behind the leader is tinted blue.
    let sonar = render(
        &w,
        &RenderOptions {
            laser: false,
            ..RenderOptions::default()
        },
    );
    let p = at(&sonar, 3450.0, 5000.0);
    assert!(p[2] > p[0], "{p:?}");
}

#[test]
fn png_round_trips() {
    let img = render(&arena(), &RenderOptions::default());
    let mut bytes = Vec::new();
    img.write_png(&mut bytes).unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (img.width(), img.height()));
    assert_eq!(&buf[..info.buffer_size()], img.pixels());
}

fn render_cmd(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_player-render"))
        .args(args)
        .output()
        .unwrap()
}

fn decode(path: &Path) -> (u32, u32, Vec<u8>) {
    let file = std::fs::File::open(path).unwrap();
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

#[test]
fn player_render_draws_a_world_file() {
    let dir = temp_dir("render");
    let out = dir.join("maze.png");
    let o = render_cmd(&[
        shipped("maze.toml").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--scale",
        "20",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (w, h, _) = decode(&out);
    assert_eq!((w, h), (220, 220));

    // A truth log puts the robot at its last pose.
    let log = dir.join("truth.csv");
    let mut text = TruthRecord::header(TruthFormat::Csv).unwrap().to_string();
    for (t, x) in [(0.0, 2000.0), (0.1, 5000.0)] {
        text += &TruthRecord {
            time: t,
            robot: "robot0".into(),
            x,
            y: 4000.0,
            heading: 0.0,
        }
        .line(TruthFormat::Csv);
    }
    std::fs::write(&log, text).unwrap();
    let out2 = dir.join("room.png");
    let o = render_cmd(&[
        "room",
        "--truth",
        log.to_str().unwrap(),
        "--no-laser",
        "--no-sonar",
        "-o",
        out2.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (w, h, px) = decode(&out2);
    assert_eq!((w, h), (520, 420));
    let pixel = |x: u32, y: u32| {
        let i = ((y * w + x) * 4) as usize;
        [px[i], px[i + 1], px[i + 2], px[i + 3]]
    };
    // (5000, 3900): just below the centre of the robot at (5000, 4000).
    assert_eq!(pixel(10 + 250, 420 - 10 - 195), ROBOT_COLOUR);

    let bad = render_cmd(&["room", "--scale", "huge"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--scale"));
    let missing = render_cmd(&["/no/such/world.toml", "-o", out.to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/no/such/world.toml"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn truth_lines_parse_back() {
    for format in [TruthFormat::Csv, TruthFormat::JsonLines] {
        let r = TruthRecord {
            time: 12.34,
            robot: "left".into(),
            x: 1234.5,
            y: -6.0,
            heading: -90.25,
        };
        assert_eq!(TruthRecord::parse(&r.line(format)), Some(r));
    }
    assert_eq!(TruthRecord::parse("time,robot,x,y,heading"), None);
    assert_eq!(TruthRecord::parse(""), None);
}
