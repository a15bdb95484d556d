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

/// The folders whose `.rs` files the size rules cover (README, "Standards").
const SIZED: [&str; 6] = ["actors", "sim", "nav", "src", "proto", "client"];

/// The `.rs` files under `SIZED`, as paths relative to the workspace root.
fn sized_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in SIZED {
        rust_files(&root.join(dir), &mut files);
    }
    let mut out: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.strip_prefix(root).ok().map(Path::to_path_buf))
        .filter(|f| !f.components().any(|c| c.as_os_str() == "target"))
        .collect();
    out.sort();
    out
}

/// The most lines a file at `path` (relative to the root) may have: 500 in the web
/// session's folder, 1,000 elsewhere. An inline test module counts; a long one goes to a
/// `tests.rs` beside the file.
fn line_limit(path: &Path) -> usize {
    if path.starts_with("actors/web/src/session") {
        500
    } else {
        1000
    }
}

#[test]
fn no_source_file_is_over_its_line_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = sized_files();
    assert!(files.len() > 100, "found only {} files", files.len());
    let over: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(root.join(f))
                .unwrap()
                .lines()
                .count();
            (lines > line_limit(f)).then(|| format!("{}: {lines} lines", f.display()))
        })
        .collect();
    assert!(
        over.is_empty(),
        "files over their line limit:\n{}",
        over.join("\n")
    );
}

/// The most lines a function outside test code may have, unless a comment just above it
/// says (with the word "long") why it must be longer.
const FN_LIMIT: usize = 120;

/// `text` with its comments, string literals and character literals turned to spaces
/// (newlines kept), so that the braces left are the code's own.
fn blank_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut i = 0;
    while i < c.len() {
        let prev_ident = i > 0 && ident(c[i - 1]);
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if !prev_ident && (c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'))) && {
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            c.get(j) == Some(&'"')
        } {
            // A raw string: r"..." or r#"..."# (and byte raw strings).
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while c[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            while j < c.len() {
                if c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for &ch in &c[i..j.min(c.len())] {
                blank(&mut out, ch);
            }
            i = j;
        } else if c[i] == '"' {
            blank(&mut out, c[i]);
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    blank(&mut out, c[i]);
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
            if i < c.len() {
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '\'' && (c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            let mut j = i + 1;
            if c[j] == '\\' {
                j += 2;
            } else {
                j += 1;
            }
            while j < c.len() && c[j] != '\'' {
                j += 1;
            }
            for &ch in &c[i..(j + 1).min(c.len())] {
                blank(&mut out, ch);
            }
            i = j + 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Whether `line` (blanked) opens a function item: `fn name` after only qualifiers.
fn opens_fn(line: &str) -> bool {
    let t = line.trim_start();
    let Some(at) = t.find("fn ") else {
        return false;
    };
    (at == 0 || t[..at].ends_with(' '))
        && t[..at].split_whitespace().all(|w| {
            matches!(
                w,
                "pub" | "const" | "async" | "unsafe" | "extern" | "default"
            ) || w.starts_with("pub(")
        })
}

/// From line `from` of `lines` (blanked), the line of the `}` closing the first `{` met
/// outside brackets and parentheses; `None` if a `;` comes first (a declaration, no body).
fn body_end(lines: &[&str], from: usize) -> Option<usize> {
    let (mut nest, mut depth) = (0i32, 0i32);
    for (n, line) in lines.iter().enumerate().skip(from) {
        for ch in line.chars() {
            match ch {
                '(' | '[' if depth == 0 => nest += 1,
                ')' | ']' if depth == 0 => nest -= 1,
                ';' if depth == 0 && nest == 0 => return None,
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(n);
                    }
                }
                _ => {}
            }
        }
    }
    None
}

/// Whether a comment in the attributes and comments right above line `at` says, with the
/// word "long", why the function there is long.
fn says_why_long(lines: &[&str], at: usize) -> bool {
    lines[..at]
        .iter()
        .rev()
        .map(|l| l.trim_start())
        .take_while(|l| l.starts_with('#') || l.starts_with("//") || l.starts_with("/*"))
        .filter(|l| !l.starts_with('#'))
        .any(|l| {
            l.split(|ch: char| !ch.is_alphabetic())
                .any(|w| w.eq_ignore_ascii_case("long"))
        })
}

/// The functions of `text` outside test code longer than `FN_LIMIT` lines without a
/// comment saying why: (first line, lines, name) each.
fn long_fns(text: &str) -> Vec<(usize, usize, String)> {
    let blanked = blank_literals(text);
    let code: Vec<&str> = blanked.lines().collect();
    let original: Vec<&str> = text.lines().collect();
    // The line ranges of `#[cfg(test)]` items (inline test modules and helpers).
    let mut tests = Vec::new();
    for (n, line) in code.iter().enumerate() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(") && t.contains("test") && !t.contains("not(test") {
            if let Some(end) = body_end(&code, n + 1) {
                tests.push(n..=end);
            }
        }
    }
    let mut out = Vec::new();
    for (n, line) in code.iter().enumerate() {
        if !opens_fn(line) || tests.iter().any(|r| r.contains(&n)) {
            continue;
        }
        let Some(end) = body_end(&code, n) else {
            continue;
        };
        let len = end - n + 1;
        if len > FN_LIMIT && !says_why_long(&original, n) {
            let name = line.trim_start();
            let name = &name[name.find("fn ").unwrap() + 3..];
            let name = name
                .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .next();
            out.push((n + 1, len, name.unwrap_or("").to_string()));
        }
    }
    out
}

#[test]
fn no_function_outside_tests_is_over_its_line_limit_without_saying_why() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut over = Vec::new();
    for f in sized_files() {
        // Test code: integration tests, benches and `tests.rs` modules beside their files.
        if f.components()
            .any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "benches")))
            || f.file_name().is_some_and(|n| n == "tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(root.join(&f)).unwrap();
        for (line, len, name) in long_fns(&text) {
            over.push(format!("{}:{line}: fn {name}, {len} lines", f.display()));
        }
    }
    assert!(
        over.is_empty(),
        "functions over {FN_LIMIT} lines with no comment above saying why they are long:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_fn_scan_counts_bodies_past_literals_and_skips_tests_and_explained_ones() {
    let body = "    let x = 1;\n".repeat(FN_LIMIT);
    let tricky = "    let s = \"}\"; let c = '}'; let r = r#\"{\"#; // }\n";
    let text = format!(
        "//! m\n\n/// Short.\npub(crate) fn short<'a>(x: &'a [u8; 4]) -> &'a u8 {{\n{tricky}    &x[0]\n}}\n\n\
         /// Too big.\npub async fn big() {{\n{tricky}{body}}}\n\n\
         /// Long: one table.\nfn explained() {{\n{body}}}\n\n\
         #[cfg(test)]\nmod tests {{\n    fn helper() {{\n{body}    }}\n}}\n"
    );
    let found = long_fns(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].2, "big");
    assert_eq!(found[0].1, FN_LIMIT + 3);
    assert!(blank_literals("'a' \"{\" /* } */ x")
        .trim_end()
        .ends_with('x'));
    assert!(!blank_literals("'a' \"{\" /* } */ x").contains(['{', '}']));
}
