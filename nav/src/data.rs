//! Where the public navigation data lives (the CARMEN logs and Nav2's maps of
//! `shared/nav/`): not in the repository, but beside the checkout. Tests and benches look
//! here and skip, saying so, when it is absent.

use std::path::{Path, PathBuf};

/// The environment variable that names the data folder explicitly.
pub const ENV: &str = "PLAYER_NAV_DATA";

/// The data folder: `$PLAYER_NAV_DATA` if set, else the first `shared/nav` beside the
/// checkout whose root is `repo_root` or beside one of its parent folders (`../shared/nav`
/// for a checkout in `/work/main`, `../../shared/nav` for a worktree one level deeper);
/// `None` if there is none.
pub fn dir(repo_root: &Path) -> Option<PathBuf> {
    if let Some(v) = std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        let d = PathBuf::from(v);
        return d.is_dir().then_some(d);
    }
    repo_root
        .ancestors()
        .skip(1)
        .map(|a| a.join("shared").join("nav"))
        .find(|d| d.is_dir())
}

/// The CARMEN logs in the data folder (`carmen/*.log` and `*.log.gz`), sorted by name.
pub fn carmen_logs(data: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data.join("carmen"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let n = p.to_string_lossy();
                    n.ends_with(".log") || n.ends_with(".log.gz")
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The map descriptions in the data folder (`maps/*.yaml`), sorted by name.
pub fn maps(data: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data.join("maps"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}
