//! The `player-nav` binary, run as a user runs it: on a synthetic CARMEN log made here (so
//! CI without the public data runs it too), on maps it writes and reads back, on bad
//! command lines and files, and on the public logs of `shared/nav/carmen` when they are
//! beside the checkout (one seed each, the goal line checked).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use player_nav::carmen::{self, mapping};
use player_nav::distance::DistanceField;
use player_nav::map::load::load_yaml;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_player-nav"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("player-nav runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh folder for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("player-nav-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The synthetic floor's tour as a gzipped CARMEN log.
fn synthetic_log(dir: &Path) -> PathBuf {
    let text = player_nav::synthetic::carmen_log(0.5, 7);
    let path = dir.join("floor-synthetic.log.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    gz.write_all(text.as_bytes()).unwrap();
    gz.finish().unwrap();
    path
}

/// The fields of the goal line `localize: log=NAME scans=N ate_cm=X.X ate_deg=Y.Y
/// max_cm=Z diverged=D seconds=S`, checked for exactly that shape.
fn goal_line(out: &str) -> Vec<(String, String)> {
    let last = out.lines().last().expect("some output");
    let mut words = last.split(' ');
    assert_eq!(words.next(), Some("localize:"), "{last}");
    let fields: Vec<(String, String)> = words
        .map(|w| {
            let (k, v) = w.split_once('=').unwrap_or_else(|| panic!("{w} in {last}"));
            (k.to_string(), v.to_string())
        })
        .collect();
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        ["log", "scans", "ate_cm", "ate_deg", "max_cm", "diverged", "seconds"],
        "{last}"
    );
    for (k, v) in &fields[1..] {
        match k.as_str() {
            "scans" | "max_cm" | "diverged" => assert!(v.parse::<u64>().is_ok(), "{k}={v}"),
            _ => {
                let (whole, frac) = v.split_once('.').unwrap_or_else(|| panic!("{k}={v}"));
                assert!(whole.parse::<u64>().is_ok() && frac.len() == 1, "{k}={v}");
            }
        }
    }
    fields
}

fn field<'a>(f: &'a [(String, String)], key: &str) -> &'a str {
    &f.iter().find(|(k, _)| k == key).unwrap().1
}

#[test]
fn localizes_a_synthetic_log_and_repeats_it() {
    let d = scratch("synthetic");
    let log = synthetic_log(&d);
    let a = run(&["localize", "carmen", log.to_str().unwrap(), "--seed", "3"]);
    assert!(a.status.success(), "{}", stderr(&a));
    let fa = goal_line(&stdout(&a));
    assert_eq!(field(&fa, "log"), "floor-synthetic");
    assert_eq!(field(&fa, "diverged"), "0");
    let ate: f64 = field(&fa, "ate_cm").parse().unwrap();
    let deg: f64 = field(&fa, "ate_deg").parse().unwrap();
    assert!(ate <= 10.0 && deg <= 3.0, "{}", stdout(&a));
    let scans: usize = field(&fa, "scans").parse().unwrap();
    assert_eq!(scans, player_nav::synthetic::tour(0.5).len());
    // The same seed: the same result, but for the wall time.
    let b = run(&["localize", "carmen", log.to_str().unwrap(), "--seed", "3"]);
    let fb = goal_line(&stdout(&b));
    assert_eq!(fa[..6], fb[..6]);
    // A noisier odometry and the beam model run too.
    let c = run(&[
        "localize",
        "carmen",
        log.to_str().unwrap(),
        "--noise",
        "0.2,0.2,0.2,0.2",
        "--model",
        "beam",
        "--particles",
        "300,1500",
    ]);
    assert!(c.status.success(), "{}", stderr(&c));
    let fc = goal_line(&stdout(&c));
    assert_eq!(field(&fc, "diverged"), "0", "{}", stdout(&c));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_map_of_a_log_is_written_for_map_server_and_reads_back() {
    let d = scratch("map");
    let log = synthetic_log(&d);
    let yaml = d.join("out.yaml");
    let o = run(&[
        "map",
        "carmen",
        log.to_str().unwrap(),
        "-o",
        yaml.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(d.join("out.pgm").is_file());
    let text = std::fs::read_to_string(&yaml).unwrap();
    for key in [
        "image: out.pgm",
        "mode: trinary",
        "resolution: 0.05",
        "origin: [",
        "negate: 0",
    ] {
        assert!(text.contains(key), "{text}");
    }
    let back = load_yaml(&yaml).unwrap();
    let built = mapping::build(
        &carmen::read(&log).unwrap(),
        &mapping::BuildParams::default(),
    )
    .unwrap();
    assert_eq!(back.cells(), built.cells());
    assert_eq!(
        (back.width(), back.height()),
        (built.width(), built.height())
    );
    assert!((back.origin().x - built.origin().x).abs() < 1e-12);
    // cells and distance dump what the library loads and computes.
    let cells = d.join("cells.bin");
    let o = run(&[
        "cells",
        yaml.to_str().unwrap(),
        "-o",
        cells.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("width={} height={}", back.width(), back.height())));
    let bytes = std::fs::read(&cells).unwrap();
    assert_eq!(bytes.len(), back.cells().len());
    assert!(bytes.iter().zip(back.cells()).all(|(&b, &c)| b as i8 == c));
    let dist = d.join("dist.bin");
    let o = run(&[
        "distance",
        yaml.to_str().unwrap(),
        "-o",
        dist.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let df = DistanceField::to_occupied(&back);
    let raw = std::fs::read(&dist).unwrap();
    assert_eq!(raw.len(), 4 * back.cells().len());
    for (i, ch) in raw.chunks_exact(4).enumerate() {
        let v = f32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]);
        assert_eq!(v, df.cells_at(i) as f32);
    }
    // Player's rule on the same image: centred on the origin.
    let o = run(&[
        "cells",
        "--player",
        d.join("out.pgm").to_str().unwrap(),
        "--resolution",
        "0.05",
        "-o",
        cells.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let w = back.width() as f64 * 0.05 / 2.0;
    assert!(
        stdout(&o).contains(&format!("origin={},", -w)),
        "{}",
        stdout(&o)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_command_lines_and_files_are_refused_clearly() {
    let d = scratch("bad");
    for (args, want) in [
        (vec![], "a command is needed"),
        (vec!["fly"], "unknown command 'fly'"),
        (vec!["localize", "rosbag", "x"], "unknown log kind 'rosbag'"),
        (vec!["localize", "carmen", "x", "--noise", "1,2"], "--noise"),
        (vec!["localize", "carmen", "x", "--seed", "-1"], "--seed"),
        (
            vec!["localize", "carmen", "x", "--particles", "10,5"],
            "--particles",
        ),
        (
            vec!["localize", "carmen", "x", "--set", "nope=1"],
            "no parameter 'nope'",
        ),
        (
            vec!["localize", "carmen", "x", "--bogus"],
            "unknown option '--bogus'",
        ),
        (vec!["cells", "m.yaml"], "-o OUTPUT"),
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("usage:"), "{args:?}");
    }
    // A file that is not there, and a malformed log: exit 1, naming the file and line.
    let missing = d.join("none.log");
    let o = run(&["localize", "carmen", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("none.log"), "{}", stderr(&o));
    let bad = d.join("bad.log");
    std::fs::write(&bad, "PARAM x 1 h 0\nFLASER 2 1.0 oops 0 0 0 0 0 0 1 h 1\n").unwrap();
    let o = run(&["localize", "carmen", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("bad.log: line 2: range 2: 'oops'"),
        "{}",
        stderr(&o)
    );
    let yaml = d.join("m.yaml");
    std::fs::write(&yaml, "image: m.pgm\nresolution: 0.05\n").unwrap();
    let o = run(&[
        "cells",
        yaml.to_str().unwrap(),
        "-o",
        d.join("c").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("missing key 'origin'"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_public_logs_meet_the_goal_with_one_seed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let Some(data) = player_nav::data::dir(&root) else {
        eprintln!(
            "skipped: no navigation data at ../shared/nav beside the checkout (or ${})",
            player_nav::data::ENV
        );
        return;
    };
    let logs = player_nav::data::carmen_logs(&data);
    assert!(!logs.is_empty(), "no CARMEN log in {}", data.display());
    for log in logs {
        let o = run(&["localize", "carmen", log.to_str().unwrap(), "--seed", "1"]);
        assert!(o.status.success(), "{}: {}", log.display(), stderr(&o));
        let f = goal_line(&stdout(&o));
        let ate: f64 = field(&f, "ate_cm").parse().unwrap();
        let deg: f64 = field(&f, "ate_deg").parse().unwrap();
        assert!(
            ate <= 10.0 && deg <= 3.0 && field(&f, "diverged") == "0",
            "{}",
            stdout(&o).lines().last().unwrap()
        );
        eprintln!("{}", stdout(&o).lines().last().unwrap());
    }
}
