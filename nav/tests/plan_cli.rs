//! `player-nav plan` run as a program: on a map made here (always) and on Nav2's benchmark
//! map (when ../shared/nav is there), its last line's exact form, its figures, and its
//! errors.

use std::path::PathBuf;
use std::process::{Command, Output};

use player_nav::map::{save::save, Map, FREE, OCCUPIED};
use player_nav::pose::Pose;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_player-nav"))
        .arg("plan")
        .args(args)
        .output()
        .expect("player-nav runs")
}

/// The `key=value` fields of the last line, checked against the documented form.
fn last_line(out: &Output) -> Vec<(String, String)> {
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let line = text.lines().last().expect("some output");
    let fields: Vec<(String, String)> = line
        .strip_prefix("plan: ")
        .unwrap_or_else(|| panic!("last line {line:?}"))
        .split(' ')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    let keys: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "map",
            "pairs",
            "found",
            "median_ms",
            "p95_ms",
            "max_ms",
            "cost_ratio"
        ],
        "{line}"
    );
    for (k, v) in &fields[3..6] {
        assert!(v.parse::<f64>().is_ok_and(|x| x >= 0.0), "{k}={v}");
    }
    fields
}

fn field<'a>(f: &'a [(String, String)], key: &str) -> &'a str {
    &f.iter().find(|(k, _)| k == key).unwrap().1
}

/// A 400 x 300 map of 0.05 m cells: walls round the edge, a wall across the middle with
/// two doors, a block of obstacles.
fn synthetic_map() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("player-nav-plan-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut m = Map::new(400, 300, 0.05, Pose::new(-3.0, 2.0, 0.0), FREE).unwrap();
    for c in 0..400 {
        m.set(c, 0, OCCUPIED);
        m.set(c, 299, OCCUPIED);
    }
    for r in 0..300 {
        m.set(0, r, OCCUPIED);
        m.set(399, r, OCCUPIED);
        if !(120..140).contains(&r) && !(200..215).contains(&r) {
            m.set(200, r, OCCUPIED);
        }
    }
    for r in 150..170 {
        for c in 120..160 {
            m.set(c, r, OCCUPIED);
        }
    }
    let yaml = dir.join("walls_and_doors.yaml");
    save(&m, &yaml).unwrap();
    yaml
}

#[test]
fn plans_on_a_synthetic_map_with_both_algorithms() {
    let yaml = synthetic_map();
    let y = yaml.to_str().unwrap();
    for alg in ["astar", "wavefront"] {
        let out = run(&[y, "--pairs", "12", "--algorithm", alg]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let f = last_line(&out);
        assert_eq!(field(&f, "map"), "walls_and_doors");
        assert_eq!(field(&f, "pairs"), "12");
        assert_eq!(field(&f, "found"), "12", "{alg}");
        assert_eq!(field(&f, "cost_ratio"), "1.000000", "{alg}");
    }
    // A radius too wide for the doors (0.75 m and 1 m) cuts the map in two.
    let out = run(&[y, "--pairs", "12", "--radius", "0.6"]);
    let f = last_line(&out);
    let found: usize = field(&f, "found").parse().unwrap();
    assert!(found < 12, "found {found} with the doors closed");
    let _ = std::fs::remove_dir_all(yaml.parent().unwrap());
}

#[test]
fn errors_have_exit_statuses() {
    let out = run(&["/nonexistent/map.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/map.yaml"));
    for bad in [
        &["m.yaml", "--algorithm", "dstar"][..],
        &["m.yaml", "--pairs"],
        &[],
    ] {
        let out = run(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
    }
}

#[test]
fn nav2_benchmark_map_all_pairs_found() {
    let Some(dir) = player_nav::data::dir(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap(),
    ) else {
        eprintln!("skipped: no ../shared/nav (set PLAYER_NAV_DATA)");
        return;
    };
    let yaml = dir.join("maps/100by100_20.yaml");
    if !yaml.exists() {
        eprintln!("skipped: {} is not there", yaml.display());
        return;
    }
    let out = run(&[yaml.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = last_line(&out);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(field(&f, "map"), "100by100_20");
    assert_eq!(field(&f, "pairs"), "100");
    assert_eq!(field(&f, "found"), "100");
    assert_eq!(field(&f, "cost_ratio"), "1.000000");
}
