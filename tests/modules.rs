//! No import cycles between modules, in every crate of the workspace: the modules of a crate
//! (and the sibling modules inside each module folder) form a graph by their `crate::x` and
//! `super::x` paths, and that graph must have no cycle. A cycle means two modules can only
//! be understood (and changed) together; the layering ARCHITECTURE.md draws is the order in
//! which they can be read.
//!
//! The scan is textual: comments are dropped, then every `crate::name`, `crate::{a, b}` and
//! (between siblings) `super::name` counts as an edge. That over-approximates (a path in a
//! string counts too), which errs on the side of a failing test a person then looks at.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace's crates' source folders, found from their manifests.
fn crate_sources() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![root.join("src")];
    for dir in ["actors", "."] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let src = e.path().join("src");
            if e.path().join("Cargo.toml").is_file() && src.is_dir() && e.path() != root {
                out.push(src);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The text without `//` comments (line and doc comments).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn ident_at(s: &str) -> Option<&str> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0 && s.as_bytes()[0].is_ascii_lowercase()).then(|| &s[..end])
}

/// The module names a text refers to after `prefix` (`crate::` or `super::`), including the
/// names in a `prefix{a, b::c}` group.
fn referenced(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices(prefix) {
        // `my_crate::x` is not `crate::x`.
        if code[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for part in group.split(',') {
                if let Some(name) = ident_at(part.trim()) {
                    out.insert(name.to_string());
                }
            }
        } else if let Some(name) = ident_at(rest) {
            out.insert(name.to_string());
        }
    }
    out
}

/// A cycle in `graph`, if it has one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        u: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(u.to_string(), 1);
        stack.push(u.to_string());
        for v in graph.get(u).into_iter().flatten() {
            match state.get(v.as_str()) {
                Some(1) => {
                    let at = stack.iter().position(|s| s == v).unwrap();
                    let mut c = stack[at..].to_vec();
                    c.push(v.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(v, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(u.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for u in graph.keys() {
        if !state.contains_key(u.as_str()) {
            if let Some(c) = visit(u, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// The name of the module a file is (or is inside of) at `depth` folders below `base`.
fn module_of(base: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(base).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main" | "mod")).then(|| name.to_string())
}

/// The module graph of the modules directly under `base` (a crate's `src` or a module
/// folder), from the files under it; `prefix` is how those modules are named from inside
/// (`crate::` at the top, `super::` between siblings).
fn graph_of(base: &Path, prefix: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(base, &mut files);
    let names: BTreeSet<String> = files.iter().filter_map(|f| module_of(base, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let Some(me) = module_of(base, f) else {
            continue;
        };
        // Between siblings only a direct child file's `super::` names a sibling.
        if prefix == "super::" && f.parent() != Some(base) {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        for to in referenced(&code, prefix) {
            if to != me && names.contains(&to) {
                graph.entry(me.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

fn module_folders(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            out.push(e.path());
            module_folders(&e.path(), out);
        }
    }
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let mut cycles = Vec::new();
    let sources = crate_sources();
    assert!(sources.len() >= 5, "found only {sources:?}");
    for src in &sources {
        if let Some(c) = find_cycle(&graph_of(src, "crate::")) {
            cycles.push(format!("{}: {}", src.display(), c.join(" -> ")));
        }
        let mut folders = Vec::new();
        module_folders(src, &mut folders);
        for folder in folders {
            if let Some(c) = find_cycle(&graph_of(&folder, "super::")) {
                cycles.push(format!("{}: {}", folder.display(), c.join(" -> ")));
            }
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_scan_finds_a_cycle_and_ignores_comments_and_other_crates() {
    let code = code_of("use crate::{a, b::c};\n// crate::d\nlet x = my_crate::e; crate::f::g();");
    let found: Vec<_> = referenced(&code, "crate::").into_iter().collect();
    assert_eq!(found, ["a", "b", "f"]);
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    assert_eq!(find_cycle(&g), None);
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "c", "a"]);
}
