//! World files: the shipped room, the schema, and errors that name the key or the file.

use super::*;

#[test]
fn shipped_room_parses() {
    let map = WorldMap::default_room();
    assert_eq!(map.name(), "room");
    assert_eq!((map.width(), map.height()), (10000.0, 8000.0));
    assert_eq!(map.start_pose(), (2000.0, 2000.0, (-18f64).to_radians()));
    // Sensors and odometry of a world file are noisy unless it says otherwise.
    assert_eq!(*map.noise(), Noise::PIONEER);
    assert!(map.walls().len() >= 4);
    assert!(!map.boxes().is_empty() && !map.pillars().is_empty());
    let channels: Vec<u8> = map.objects().iter().map(|o| o.channel).collect();
    assert_eq!(channels, [0, 1, 2]);
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/worlds/room.toml");
    assert_eq!(WorldMap::from_file(&file).unwrap().objects(), map.objects());

    // From the start pose the red ball (channel 0) is in view, 18 degrees to the left of
    // the axis (left of the image's centre column, 80), and straight ahead is the south wall,
    // met obliquely: nothing in the room sits squarely on the start axis.
    let r = SimRobot::new(Arc::new(map), RobotParams::default());
    let blobs = r.vision();
    let red: Vec<_> = blobs.iter().filter(|b| b.channel == 0).collect();
    assert_eq!(red.len(), 1, "{blobs:?}");
    assert!(red[0].x < 40, "{red:?}");
    assert_eq!(
        f64::from(r.laser()[180]),
        (2000.0 / 18f64.to_radians().sin()).round()
    );
}

/// The crate embeds its own copy of the shipped room (`sim/worlds/room.toml`, so the crate
/// builds alone); `config/worlds/room.toml` is the copy users read and serve. They must
/// stay the same file.
#[test]
fn the_embedded_room_is_the_shipped_config_worlds_room_toml() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/worlds/room.toml");
    let shipped = std::fs::read_to_string(&file).unwrap();
    assert!(
        shipped == ROOM_TOML,
        "config/worlds/room.toml and sim/worlds/room.toml differ: edit both (the sim crate \
         embeds its copy, users read config's)"
    );
}

#[test]
fn toml_schema_round_trip() {
    let map = WorldMap::from_toml_str(
        r#"
        [world]
        width = 5000
        height = 4000.5
        [robot]
        pose = [1000, 1000, 90]
        [[wall]]
        from = [2500, 0]
        to = [2500, 2000]
        [[box]]
        min = [3000, 3000]
        max = [3500, 3500]
        [[pillar]]
        center = [4000, 1000]
        radius = 100
        [[object]]
        channel = 31
        center = [1000, 3000]
        size = [200, 300]
        "#,
    )
    .unwrap();
    assert_eq!(map.name(), "world");
    assert_eq!(map.height(), 4000.5);
    let (x, y, th) = map.start_pose();
    assert_eq!((x, y), (1000.0, 1000.0));
    assert!(near(th, std::f64::consts::FRAC_PI_2, 1e-12));
    assert_eq!(map.objects()[0].height, 300.0);
    assert_eq!(
        map.objects()[0].shape,
        ObjectShape::Rect {
            dx: 200.0,
            dy: 300.0
        }
    );
    // 4 edges + 1 wall + 1 box + 1 pillar + 1 object.
    assert_eq!(map.solids().len(), 8);
}

#[test]
fn unknown_keys_are_named() {
    let base = "[world]\nwidth = 5000\nheight = 5000\n";
    let e = err(&format!(
        "{base}[[wall]]\nfrom = [0, 0]\nto = [1, 1]\ncolour = \"red\"\n"
    ));
    assert!(e.contains("colour") && e.contains("wall[0]"), "{e}");
    let e = err(&format!(
        "{base}[[box]]\nmin = [0, 0]\nmax = [1, 1]\n[[boxes]]\nmin = [0, 0]\n"
    ));
    assert!(e.contains("boxes"), "{e}");
    let e = err("[world]\nwidth = 5000\nheight = 5000\ndepth = 3\n");
    assert!(e.contains("depth") && e.contains("world"), "{e}");
    let e = err(&format!("{base}[robot]\npose = [100, 100]\n"));
    assert!(e.contains("robot.pose"), "{e}");
}

#[test]
fn bad_values_are_named() {
    let base = "[world]\nwidth = 5000\nheight = 5000\n";
    let e = err(&format!(
        "{base}[[pillar]]\ncenter = [1000, 1000]\nradius = \"big\"\n"
    ));
    assert!(e.contains("pillar[0]") && e.contains("radius"), "{e}");
    let e = err(&format!(
        "{base}[[pillar]]\ncenter = [1000, 1000]\nradius = -5\n"
    ));
    assert!(e.contains("pillar[0].radius"), "{e}");
    let e = err(&format!(
        "{base}[[object]]\nchannel = 32\ncenter = [1, 1]\nradius = 5\n"
    ));
    assert!(e.contains("object[0].channel"), "{e}");
    let e = err(&format!("{base}[[object]]\nchannel = 3\ncenter = [1, 1]\n"));
    assert!(e.contains("object[0]") && e.contains("radius"), "{e}");
    let e = err(&format!(
        "{base}[[box]]\nmin = [100, 100]\nmax = [50, 200]\n"
    ));
    assert!(e.contains("box[0].max"), "{e}");
    let e = err(&format!("{base}[[wall]]\nfrom = [0, 0]\n"));
    assert!(e.contains("wall[0]") && e.contains("to"), "{e}");
    let e = err(&format!("{base}[wall]\nfrom = [0, 0]\nto = [1, 1]\n"));
    assert!(e.contains("[[wall]]"), "{e}");
    let e = err("[robot]\npose = [1, 1, 0]\n");
    assert!(e.contains("[world]"), "{e}");
    let e = err(&format!("{base}[robot]\npose = [100, 2500, 0]\n"));
    assert!(e.contains("robot.pose") && e.contains("west edge"), "{e}");
    let e = err(&format!(
        "{base}[robot]\npose = [1000, 1000, 0]\n[[box]]\nmin = [900, 900]\nmax = [1100, 1100]\n"
    ));
    assert!(e.contains("overlaps box[0]"), "{e}");
    let e = err("[world\nwidth = 1");
    assert!(e.contains("syntax"), "{e}");
}

#[test]
fn file_errors_name_the_file() {
    let missing = std::path::Path::new("/nonexistent/dir/nowhere.toml");
    let e = WorldMap::from_file(missing).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/dir/nowhere.toml"), "{e}");

    let dir = std::env::temp_dir().join(format!("player-world-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "[world]\nwidth = 100\nheight = 100\nfloor = \"wood\"\n",
    )
    .unwrap();
    let e = WorldMap::from_file(&path).unwrap_err().to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(e.contains("bad.toml") && e.contains("floor"), "{e}");
}
