//! Pictures of worlds: the renderer puts robots, walls, objects and sensor fans where the
//! geometry says, the PNG round-trips, and truth log lines parse back. (The `player-render`
//! command line is tested in its own package, `render/tests/cli.rs`.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use player_sim::render::{channel_colour, render, RenderOptions, FLOOR_COLOUR, MARGIN_COLOUR};
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
