//! The `player-render` command line: it draws a world file (or the built-in room) to PNG at
//! the scale asked, puts a robot where a truth log left it, and names a bad option or a
//! missing world with exit codes 2 and 1.

use std::path::{Path, PathBuf};
use std::process::Command;

use player_sim::render::ROBOT_COLOUR;
use player_sim::{TruthFormat, TruthRecord};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../config/worlds")
        .join(name)
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("player-render-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
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
