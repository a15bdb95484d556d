//! The crate boundaries the architecture promises, checked from the workspace's metadata
//! (ARCHITECTURE.md, "Crates"):
//!
//! - a crate is built on actix (depends on it directly) if and only if it lives under
//!   `actors/`;
//! - the core depends on no other actor crate than the driver kit: no driver, no front end;
//! - no crate outside `actors/` has actix or tokio among its dependencies, direct or not
//!   (but the root package, the `player` binary that runs the actor crates); their tests
//!   may use them;
//! - the pure crates (`player-proto`, `player-foxglove`, `player-sim`, `player-devices`,
//!   `player-ros2-msg`, and `player-nav` when it is there) depend on no actor crate, direct
//!   or not;
//! - the emulators depend on nothing of ours but the pure crates `player-proto`,
//!   `player-devices` and `player-sim`, and `player-render` on nothing of ours but
//!   `player-sim`;
//! - the fuzz targets (`fuzz/`, a crate outside the workspace) depend on no actor crate,
//!   direct or not, and not on actix or tokio; the one exception, the configuration
//!   loader's target, is the only target of its own crate (`fuzz/settings/`);
//! - drivers depend on nothing of ours but the kit and the pure crates;
//! - front ends (the actor crates built on the core) depend on nothing of ours but the
//!   core, the kit and `player-proto` (the web viewer also on its wire, `player-foxglove`;
//!   the ROS 2 front end also on its wire, `player-ros2-msg`; the recorder also on the web
//!   viewer, whose Foxglove channels and readings' encoders a recording carries);
//! - the kit depends on nothing of ours but `player-proto`;
//! - the one dev-only actor crate (`publish = false`), the test harness `player-testkit`,
//!   is none of these: it starts the whole server in-process for the tests and benches;
//! - no source file picks its module file with a path attribute, except the tests' and
//!   benches' shared helpers;
//! - every package of the workspace is named in README.md's layout table.
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

/// What `cargo` with `args` prints, run at the workspace root; it must succeed.
fn cargo<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `cargo metadata` of the package(s) of `manifest` (relative to the workspace root),
/// without their dependencies.
fn metadata(manifest: &str) -> serde_json::Value {
    let manifest = root().join(manifest);
    let out = cargo(&[
        "metadata".as_ref(),
        "--format-version=1".as_ref(),
        "--no-deps".as_ref(),
        "--offline".as_ref(),
        "--manifest-path".as_ref(),
        manifest.as_os_str(),
    ]);
    serde_json::from_str(&out).unwrap()
}

fn workspace() -> Vec<Package> {
    let m = metadata("Cargo.toml");
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

/// The pure crates: no actors, no I/O runtime; each may be absent but for those the
/// tests below require.
const PURE: &[&str] = &[
    "player-proto",
    "player-foxglove",
    "player-sim",
    "player-devices",
    "player-ros2-msg",
    "player-nav",
];

/// The actor runtime's crates, which only `actors/` (and the binary running it) may use.
const RUNTIME: &[&str] = &["actix", "actix-rt", "tokio"];

/// One package a package depends on: its name, and its folder relative to the workspace
/// root when it is one of ours.
struct Dep {
    name: String,
    dir: Option<PathBuf>,
}

/// Every package `package` of `manifest` (relative to the workspace root) depends on,
/// directly or not, as a normal or build dependency (not dev), for this machine's target,
/// as `cargo tree` resolves them.
fn closure(manifest: &str, package: &str) -> Vec<Dep> {
    let manifest = root().join(manifest);
    // The resolution below is offline (no index update per test), so the packages must be
    // here: on a fresh machine those of the manifests outside the workspace (the fuzz
    // targets') are not until fetched. Fetching what is here already needs no network;
    // a failure shows in the offline resolution's own error.
    let _ = Command::new(env!("CARGO"))
        .args([
            "fetch".as_ref(),
            "--manifest-path".as_ref(),
            manifest.as_os_str(),
        ])
        .current_dir(root())
        .output();
    let text = cargo(&[
        "tree".as_ref(),
        "--offline".as_ref(),
        "--edges=normal,build".as_ref(),
        "--prefix=none".as_ref(),
        "--format={p}".as_ref(),
        "--manifest-path".as_ref(),
        manifest.as_os_str(),
        "--package".as_ref(),
        package.as_ref(),
    ]);
    let deps: Vec<Dep> = text
        .lines()
        .skip(1)
        .map(|l| {
            let l = l.trim_end_matches(" (*)");
            let name = l.split(' ').next().unwrap_or_default().to_string();
            let dir = l
                .split_once(" (")
                .and_then(|(_, p)| p.strip_suffix(')'))
                .and_then(|p| Path::new(p).strip_prefix(root()).ok())
                .map(Path::to_path_buf);
            Dep { name, dir }
        })
        .collect();
    assert!(
        text.lines().next().is_some_and(|l| l.starts_with(package)),
        "cargo tree printed: {text}"
    );
    deps
}

/// What in `deps` is an actor crate of ours or the actor runtime, as "name (why)".
fn actor_parts(deps: &[Dep]) -> Vec<String> {
    let mut out: Vec<String> = deps
        .iter()
        .filter_map(|n| {
            if n.dir.as_ref().is_some_and(|d| d.starts_with("actors")) {
                Some(format!("{} (an actor crate)", n.name))
            } else if RUNTIME.contains(&n.name.as_str()) {
                Some(format!("{} (the actor runtime)", n.name))
            } else {
                None
            }
        })
        .collect();
    out.sort();
    out.dedup();
    out
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
fn no_crate_outside_actors_depends_on_actix_or_tokio_even_through_another() {
    let all = workspace();
    let mut checked = 0;
    for p in all
        .iter()
        .filter(|p| !under_actors(p) && p.name != "player")
    {
        let runtime: Vec<String> = actor_parts(&closure("Cargo.toml", &p.name))
            .into_iter()
            .filter(|w| w.ends_with("(the actor runtime)"))
            .collect();
        assert!(
            runtime.is_empty(),
            "rule \"no crate outside actors/ depends on actix or tokio\": package {} in '{}' \
             depends on {runtime:?}",
            p.name,
            p.dir.display()
        );
        checked += 1;
    }
    assert!(checked >= 6, "checked only {checked} packages");
}

#[test]
fn pure_crates_depend_on_no_actor_crate() {
    let all = workspace();
    let present: Vec<&str> = PURE
        .iter()
        .copied()
        .filter(|n| all.iter().any(|p| p.name == *n))
        .collect();
    for required in [
        "player-proto",
        "player-foxglove",
        "player-sim",
        "player-devices",
        "player-ros2-msg",
    ] {
        assert!(present.contains(&required), "{present:?}");
    }
    for name in present {
        let p = package(&all, name);
        assert!(
            !under_actors(p),
            "rule \"pure crates live outside actors/\": {name} is in '{}'",
            p.dir.display()
        );
        let wrong = actor_parts(&closure("Cargo.toml", name));
        assert!(
            wrong.is_empty(),
            "rule \"pure crates depend on no actor crate\": {name} depends on {wrong:?}"
        );
    }
}

#[test]
fn emulators_depend_on_the_pure_crates_only() {
    let all = workspace();
    let emulators = package(&all, "player-emulators");
    let wrong = ours_but(
        &all,
        emulators,
        &["player-proto", "player-devices", "player-sim"],
    );
    assert!(
        wrong.is_empty(),
        "rule \"the emulators depend on no actor crate, only player-proto, player-devices \
         and player-sim\": player-emulators depends on {wrong:?}"
    );
    let wrong = actor_parts(&closure("Cargo.toml", "player-emulators"));
    assert!(
        wrong.is_empty(),
        "rule \"the emulators depend on no actor crate\": player-emulators depends, through \
         another crate, on {wrong:?}"
    );
}

#[test]
fn player_render_depends_on_player_sim_only() {
    let all = workspace();
    let render = package(&all, "player-render");
    assert!(
        render.deps.iter().any(|d| d == "player-sim"),
        "{:?}",
        render.deps
    );
    let wrong = ours_but(&all, render, &["player-sim"]);
    assert!(
        wrong.is_empty(),
        "rule \"player-render depends on no crate of ours but player-sim\": it depends on \
         {wrong:?}"
    );
}

#[test]
fn fuzz_targets_depend_on_no_actor_crate() {
    let wrong = actor_parts(&closure("fuzz/Cargo.toml", "player-fuzz"));
    assert!(
        wrong.is_empty(),
        "rule \"the fuzz targets depend on no actor crate\": fuzz/Cargo.toml's targets depend \
         (directly or not) on {wrong:?}"
    );
    // The exception: the configuration loader's target needs the whole server (the core's
    // schema composed with the front ends'), in a crate of its own with no other target.
    let m = metadata("fuzz/settings/Cargo.toml");
    let targets: Vec<&str> = m["packages"][0]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        ["settings_loader"],
        "rule \"the fuzz targets depend on no actor crate\": fuzz/settings/ is the one \
         exception and holds the configuration loader's target only"
    );
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
fn drivers_depend_on_the_kit_and_the_pure_crates_and_the_kit_on_the_protocol_only() {
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
        let wrong = ours_but(&all, d, &[&["player-kit"][..], PURE].concat());
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
        if f.name == "player-web" {
            allowed.push("player-foxglove");
        }
        if f.name == "player-record" {
            allowed.push("player-web");
        }
        if f.name == "player-ros2" {
            allowed.push("player-ros2-msg");
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
    cargo(&args)
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

#[test]
fn every_workspace_crate_is_named_in_the_readme_layout_table() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let layout = readme
        .split("\n## Layout\n")
        .nth(1)
        .expect("README.md has a \"## Layout\" section");
    let layout = layout.split("\n## ").next().unwrap_or(layout);
    let rows: Vec<&str> = layout.lines().filter(|l| l.starts_with('|')).collect();
    let missing: Vec<String> = workspace()
        .iter()
        .filter(|p| {
            let name = format!("`{}`", p.name);
            let dir = format!("`{}/`", p.dir.display());
            !rows
                .iter()
                .any(|r| r.contains(&name) && (p.dir.as_os_str().is_empty() || r.contains(&dir)))
        })
        .map(|p| format!("{} ({})", p.name, p.dir.display()))
        .collect();
    assert!(
        missing.is_empty(),
        "rule \"every crate is in README.md's layout table\" (a row naming its folder and its \
         package name): missing {missing:?}"
    );
}
