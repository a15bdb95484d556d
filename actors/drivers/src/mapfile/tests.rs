//! The mapfile driver's pure parts: a map's reading and id, tiles cut to the map and the
//! bound, the parameters' errors naming their key, the world rasterised.

use super::*;
use player_kit::catalog::DriverContext;
use player_kit::driver::StatusSink;
use player_kit::labels::Labels;
use player_kit::source::DeviceSource;

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mapfile-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A context for the driver with `params` (a TOML table) and `base` as the config dir.
fn context(params: &str, base: &std::path::Path) -> DriverContext {
    let value = config::Config::builder()
        .add_source(config::File::from_str(params, config::FileFormat::Toml))
        .build()
        .unwrap()
        .cache;
    DriverContext {
        driver: "mapfile".into(),
        robot: "r".into(),
        devices: vec![b'M'],
        labels: Labels::none(),
        params: value,
        base_dir: base.to_path_buf(),
        logger: slog::Logger::root(slog::Discard, slog::o!()),
        started: std::time::Instant::now(),
        status: StatusSink::none(),
        source: DeviceSource::none(),
    }
}

fn loaded(params: &str, base: &std::path::Path) -> Result<(Source, Option<Loaded>), DriverError> {
    let ctx = context(params, base);
    load(&ctx, &ctx.params().unwrap())
}

/// A 4 x 3 PGM: rows top to bottom 0 (black: occupied), 255 (white: free), 205 (unknown).
fn write_pgm(path: &std::path::Path) {
    let mut v = b"P5\n4 3\n255\n".to_vec();
    v.extend_from_slice(&[0, 0, 255, 255, 255, 255, 255, 255, 205, 205, 205, 0]);
    std::fs::write(path, v).unwrap();
}

#[test]
fn a_yaml_map_is_read_by_map_servers_rule_and_its_reading_says_where_it_lies() {
    let d = dir("yaml");
    write_pgm(&d.join("m.pgm"));
    std::fs::write(
        d.join("m.yaml"),
        "image: m.pgm\nresolution: 0.05\norigin: [-1.0, 2.5, 0.0]\nnegate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n",
    )
    .unwrap();
    let (src, m) = loaded("yaml = \"m.yaml\"", &d).unwrap();
    assert_eq!(src, Source::File);
    let m = m.unwrap();
    assert_eq!(
        (m.info.width, m.info.height, m.info.resolution),
        (4, 3, 50_000)
    );
    assert_eq!(
        (m.info.origin_x, m.info.origin_y, m.info.origin_heading),
        (-1000, 2500, 0)
    );
    // Row 0 is the image's bottom row.
    assert_eq!(&m.cells[..], &[0, 0, 0, 1, -1, -1, -1, -1, 1, 1, -1, -1]);
    // The same map, the same id; another map, another.
    let again = loaded("yaml = \"m.yaml\"", &d).unwrap().1.unwrap();
    assert_eq!(again.info.map_id, m.info.map_id);
    let player = loaded(
        "image = \"m.pgm\"\nstyle = \"player\"\nresolution = 0.05",
        &d,
    )
    .unwrap()
    .1
    .unwrap();
    assert_ne!(player.info.map_id, m.info.map_id);
    // Player's: centred on the origin.
    assert_eq!((player.info.origin_x, player.info.origin_y), (-100, -75));
}

#[test]
fn bad_parameters_and_files_name_the_key_and_the_reason() {
    let d = dir("bad");
    std::fs::write(d.join("junk.pgm"), b"not an image").unwrap();
    std::fs::write(
        d.join("nokey.yaml"),
        "image: junk.pgm\nresolution: 0.05\norigin: [0, 0, 0]\nnegate: 0\nfree_thresh: 0.2\n",
    )
    .unwrap();
    for (params, key, reason) in [
        ("yaml = \"missing.yaml\"", "'yaml'", "missing.yaml"),
        ("yaml = \"nokey.yaml\"", "'yaml'", "occupied_thresh"),
        (
            "image = \"junk.pgm\"\nstyle = \"player\"\nresolution = 0.05",
            "'image'",
            "junk.pgm",
        ),
        (
            "image = \"junk.pgm\"\nstyle = \"player\"",
            "'resolution'",
            "missing",
        ),
        ("style = \"stage\"", "'style'", "stage"),
        ("map = \"moon\"", "'map'", "moon"),
        ("map = \"world\"\nresolution = -1.0", "'resolution'", "-1"),
        ("", "'yaml'", "missing"),
    ] {
        let e = loaded(params, &d).unwrap_err();
        assert!(
            e.text.contains(key) && e.text.contains(reason),
            "{params}: {}",
            e.text
        );
    }
    let (src, m) = loaded("map = \"world\"", &d).unwrap();
    assert_eq!((src, m), (Source::World(0.05), None));
}

#[test]
fn tiles_are_cut_to_the_map_and_to_the_bound() {
    let info = MapInfo {
        width: 400,
        height: 300,
        resolution: 50_000,
        ..MapInfo::default()
    };
    let cells: Vec<i8> = (0..120_000).map(|i| [(-1i8), 0, 1][i % 3]).collect();
    let m = Loaded::with_id(info, cells.clone());
    // Inside: the cells row by row.
    let t = m.tile(TileRequest {
        col: 10,
        row: 20,
        width: 3,
        height: 2,
    });
    assert_eq!(t.map_id, m.info.map_id);
    let at = |c: usize, r: usize| cells[r * 400 + c];
    assert_eq!(
        t.cells,
        vec![
            at(10, 20),
            at(11, 20),
            at(12, 20),
            at(10, 21),
            at(11, 21),
            at(12, 21)
        ]
    );
    // Past the edges: cut to the map.
    let t = m.tile(TileRequest {
        col: 398,
        row: 299,
        width: 10,
        height: 10,
    });
    assert_eq!((t.rect.width, t.rect.height, t.cells.len()), (2, 1, 2));
    // Off the map: an empty tile.
    let t = m.tile(TileRequest {
        col: 500,
        row: 0,
        width: 10,
        height: 10,
    });
    assert_eq!((t.rect.col, t.rect.width, t.cells.len()), (400, 0, 0));
    // Over the bound: fewer rows.
    let t = m.tile(TileRequest {
        col: 0,
        row: 0,
        width: 400,
        height: 300,
    });
    assert_eq!((t.rect.width, t.rect.height), (400, 150));
    assert!(t.encode().is_ok());
}

#[test]
fn the_world_is_rasterised_at_the_resolution() {
    let world = WorldSolids {
        min: [0.0, 0.0],
        max: [1.0, 0.5],
        solids: vec![
            Solid::Segment {
                a: [0.0, 0.0],
                b: [1.0, 0.0],
            },
            Solid::Rect {
                min: [0.5, 0.2],
                max: [0.6, 0.3],
            },
        ],
    };
    let m = Loaded::of_world(&world, 0.1).unwrap();
    assert_eq!(
        (m.info.width, m.info.height, m.info.resolution),
        (10, 5, 100_000)
    );
    assert!(m.cells[..10].iter().all(|&c| c == 1), "the south wall");
    assert_eq!(m.cells[2 * 10 + 5], 1, "the box");
    assert_eq!(m.cells[2 * 10 + 4], -1);
    assert_eq!(m.cells.iter().filter(|&&c| c == 1).count(), 11);
    assert!(Loaded::of_world(&world, 1e-6).is_err(), "too many cells");
}
