//! The crate boundaries the architecture promises, checked from the workspace's metadata
//! (ARCHITECTURE.md, "Crates"):
//!
//! - a crate is built on actix (depends on it directly) if and only if it lives under
//!   `actors/`;
//! - the core depends on no other actor crate than the driver kit: no driver, no front end;
//! - drivers depend on nothing of ours but the kit, `player-proto` and the simulated world
//!   (`player-sim`);
//! - front ends (the actor crates built on the core) depend on nothing of ours but the
//!   core, the kit and `player-proto` (the recorder also on the web viewer, whose Foxglove
//!   channels a recording carries);
//! - the kit depends on nothing of ours but `player-proto`;
//! - the one dev-only actor crate (`publish = false`), the test harness `player-testkit`,
//!   is none of these: it starts the whole server in-process for the tests and benches;
//! - no source file picks its module file with a path attribute, except the tests' and
//!   benches' shared helpers.
//!
//! (A `use player_web` in the core then fails to compile: the crate is not there to name.)

use std::path::{Path, PathBuf};
use std::process::Command;

/// One package of the workspace: its name, its folder relative to the workspace root, and
/// its normal and build dependencies, and whether it is dev-only (`publish = false`).
struct Package {
    name: String,
    dir: PathBuf,
    deps: Vec<String>,
    dev_only: bool,
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn workspace() -> Vec<Package> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    m["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().unwrap());
            let dir = manifest
                .parent()
                .unwrap()
                .strip_prefix(root())
                .unwrap_or_else(|_| panic!("{} is outside the workspace", manifest.display()))
                .to_path_buf();
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null() || d["kind"] == "build")
                .map(|d| d["name"].as_str().unwrap().to_string())
                .collect();
            Package {
                name: p["name"].as_str().unwrap().to_string(),
                dir,
                deps,
                dev_only: p["publish"].as_array().is_some_and(Vec::is_empty),
            }
        })
        .collect()
}

fn package<'a>(all: &'a [Package], name: &str) -> &'a Package {
    all.iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no package {name} in the workspace"))
}

/// The workspace packages `p` depends on, but for those in `allowed`.
fn ours_but<'a>(all: &[Package], p: &'a Package, allowed: &[&str]) -> Vec<&'a str> {
    p.deps
        .iter()
        .filter(|d| all.iter().any(|q| &q.name == *d) && !allowed.contains(&d.as_str()))
        .map(String::as_str)
        .collect()
}

fn under_actors(p: &Package) -> bool {
    p.dir.starts_with("actors")
}

#[test]
fn the_only_dev_only_crate_is_the_test_harness() {
    let all = workspace();
    let dev_only: Vec<&str> = all
        .iter()
        .filter(|p| p.dev_only)
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(dev_only, ["player-testkit"]);
}

#[test]
fn actix_crates_and_only_they_live_under_actors() {
    let all = workspace();
    for p in &all {
        let on_actix = p.deps.iter().any(|d| d == "actix");
        assert_eq!(
            on_actix,
            under_actors(p),
            "package {} in '{}': {}",
            p.name,
            p.dir.display(),
            if on_actix {
                "depends on actix but is not under actors/"
            } else {
                "is under actors/ but is not built on actix"
            }
        );
    }
}

#[test]
fn the_core_depends_on_no_driver_and_no_front_end() {
    let all = workspace();
    let core = package(&all, "player-core");
    assert!(
        core.deps.iter().any(|d| d == "player-kit"),
        "{:?}",
        core.deps
    );
    let wrong = ours_but(&all, core, &["player-kit", "player-proto"]);
    assert!(
        wrong.is_empty(),
        "player-core depends on {wrong:?}: the core knows drivers only through the kit \
         and front ends only through player_core::frontend"
    );
}

#[test]
fn drivers_and_the_kit_depend_on_the_kit_and_the_protocol_only() {
    let all = workspace();
    let kit = package(&all, "player-kit");
    let wrong = ours_but(&all, kit, &["player-proto"]);
    assert!(wrong.is_empty(), "player-kit depends on {wrong:?}");
    // Every actor crate that is not the core and not built on it is a driver crate.
    let drivers: Vec<&Package> = all
        .iter()
        .filter(|p| under_actors(p) && p.name != "player-kit" && p.name != "player-core")
        .filter(|p| !p.deps.iter().any(|d| d == "player-core") && !p.dev_only)
        .collect();
    assert!(drivers.iter().any(|p| p.name == "player-drivers"));
    for d in drivers {
        let wrong = ours_but(
            &all,
            d,
            &["player-kit", "player-proto", "player-sim", "player-devices"],
        );
        assert!(
            wrong.is_empty(),
            "driver crate {} depends on {wrong:?}: drivers know the server only through \
             the kit (and use the pure crates)",
            d.name
        );
    }
}

#[test]
fn front_ends_depend_on_the_core_kit_and_protocol_only() {
    let all = workspace();
    let front_ends: Vec<&Package> = all
        .iter()
        .filter(|p| under_actors(p) && p.deps.iter().any(|d| d == "player-core") && !p.dev_only)
        .collect();
    let names: Vec<&str> = front_ends.iter().map(|p| p.name.as_str()).collect();
    for expected in ["player-web", "player-record", "player-zenoh"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    for f in front_ends {
        let mut allowed = vec!["player-core", "player-kit", "player-proto"];
        if f.name == "player-record" {
            allowed.push("player-web");
        }
        let wrong = ours_but(&all, f, &allowed);
        assert!(
            wrong.is_empty(),
            "front end {} depends on {wrong:?}: front ends know the server only through \
             the core's front-end kit",
            f.name
        );
    }
}

/// Whether `path` (relative to the workspace root) is in a tests' or benches' shared
/// helper folder, where a path attribute may share a module between test crates.
fn shared_helper(path: &Path) -> bool {
    let parts: Vec<&str> = path.iter().filter_map(|c| c.to_str()).collect();
    parts
        .windows(2)
        .any(|w| matches!(w[0], "tests" | "benches") && matches!(w[1], "common" | "hw_support"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        if p.is_dir() {
            rust_files(&p, out);
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_is_found_by_a_path_attribute_outside_shared_test_helpers() {
    // Spelled in two pieces, so this file does not find itself.
    let needle = ["#[", "path"].concat();
    let mut files = Vec::new();
    rust_files(root(), &mut files);
    assert!(files.len() > 50, "found only {} .rs files", files.len());
    let offenders: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(root()).unwrap();
            if shared_helper(rel) {
                return None;
            }
            let text = std::fs::read_to_string(f).ok()?;
            text.contains(&needle).then(|| rel.display().to_string())
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "module path attributes outside tests' shared helpers: {offenders:?}"
    );
}

/// Each dependency's features as `cargo tree` resolves them, with or without the
/// dev-dependencies: `name version` -> features.
fn resolved_features(with_dev: bool) -> std::collections::BTreeMap<String, String> {
    let mut args = vec![
        "tree",
        "--workspace",
        "--prefix",
        "none",
        "--format",
        "{p}|{f}",
    ];
    if !with_dev {
        args.extend(["--edges", "no-dev"]);
    }
    let out = Command::new(env!("CARGO"))
        .args(&args)
        .current_dir(root())
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('|'))
        .filter(|(p, _)| !p.starts_with("player"))
        .map(|(p, f)| {
            let p = p.trim_end_matches(" (*)").to_string();
            (p, f.trim_end_matches(" (*)").to_string())
        })
        .collect()
}

/// `cargo build` and `cargo test` resolve the same features for every dependency they share,
/// so neither rebuilds Zenoh (or anything) after the other: a dev-dependency that turns on a
/// feature of a build dependency must have that feature turned on in the build too (the root
/// `Cargo.toml`, "Feature unification").
#[test]
fn dev_dependencies_change_no_feature_of_a_build_dependency() {
    let build = resolved_features(false);
    let test = resolved_features(true);
    let differ: Vec<String> = build
        .iter()
        .filter_map(|(p, f)| {
            let t = test.get(p)?;
            (t != f).then(|| format!("{p}: build [{f}], test [{t}]"))
        })
        .collect();
    assert!(
        build.len() > 100,
        "cargo tree listed {} packages",
        build.len()
    );
    assert!(differ.is_empty(), "features differ:\n{}", differ.join("\n"));
}
