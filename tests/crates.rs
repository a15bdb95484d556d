//! The crate boundaries the architecture promises, checked from the workspace's metadata:
//! the core never depends on a driver, drivers never depend on the core, and the driver
//! kit depends on neither. (A `use player_drivers` in the core, or `use player_core` in a
//! driver, then fails to compile: the crate is not there to name.)

use std::process::Command;

fn dependencies(metadata: &serde_json::Value, package: &str) -> Vec<String> {
    let p = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == package)
        .unwrap_or_else(|| panic!("no package {package} in the workspace"));
    p["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"].is_null() || d["kind"] == "build")
        .map(|d| d["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_core_and_the_drivers_only_meet_in_the_kit() {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let core = dependencies(&m, "player-core");
    let drivers = dependencies(&m, "player-drivers");
    let kit = dependencies(&m, "player-kit");
    assert!(core.contains(&"player-kit".to_string()), "{core:?}");
    assert!(drivers.contains(&"player-kit".to_string()), "{drivers:?}");
    assert!(
        !core
            .iter()
            .any(|d| d == "player-drivers" || d == "player-emulators"),
        "core depends on drivers: {core:?}"
    );
    assert!(
        !drivers.contains(&"player-core".to_string()),
        "drivers depend on the core: {drivers:?}"
    );
    assert!(
        !kit.iter()
            .any(|d| d.starts_with("player-") && d != "player-proto"),
        "kit: {kit:?}"
    );
}
