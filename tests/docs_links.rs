//! The user guide's links: every relative link in `README.md`, `ARCHITECTURE.md` and every
//! `docs/**/*.md` must lead somewhere. A link `[text](path)` must name a file or folder that
//! exists (relative to the page); `[text](path#anchor)` into a Markdown page, or
//! `[text](#anchor)` within one, must also name one of that page's headings, slugged as
//! GitHub does (lower case; letters, digits, `-`, `_` kept, spaces made `-`, everything else
//! dropped; a repeated heading gets `-1`, `-2`, ...). Links with a scheme (`https:`,
//! `mailto:`) are not followed. Text in code blocks and code spans is not Markdown, so
//! nothing there is a link.
//!
//! The guide is plain Markdown, not an mdBook, so this check needs no tool beyond `cargo`;
//! `cargo test --test docs_links` runs it alone.

use std::collections::HashMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// A link that does not resolve, for the failure message.
#[derive(Debug, PartialEq, Eq)]
struct Broken {
    /// The page it is on, as given.
    page: PathBuf,
    /// Its line on that page (1-based).
    line: usize,
    /// The link target as written.
    target: String,
    /// What is wrong.
    why: String,
}

/// The pages checked: README.md and ARCHITECTURE.md at `root`, and every `.md` under
/// `root/docs`, in a stable order.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut found = Vec::new();
    walk(&root.join("docs"), &mut found);
    found.sort();
    out.extend(found);
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The Markdown text with fenced code blocks and code spans blanked out (replaced by spaces,
/// newlines kept, so byte offsets still give the right line).
fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |m| trimmed.chars().take_while(|c| *c == m).count());
        match (fence, marker) {
            (None, Some(m)) if run >= 3 => {
                fence = Some((m, run));
                out.push_str(&blank(line));
            }
            (Some((m, n)), Some(c)) if c == m && run >= n && trimmed[run..].trim().is_empty() => {
                fence = None;
                out.push_str(&blank(line));
            }
            (Some(_), _) => out.push_str(&blank(line)),
            (None, _) => out.push_str(line),
        }
    }
    without_code_spans(&out)
}

/// `s` with every character but newlines replaced by a space.
fn blank(s: &str) -> String {
    s.chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect()
}

/// Blanks code spans: a run of n backticks up to the next run of exactly n backticks.
fn without_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let n = chars[i..].iter().take_while(|c| **c == '`').count();
        let mut j = i + n;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let m = chars[j..].iter().take_while(|c| **c == '`').count();
                if m == n {
                    close = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        let end = close.unwrap_or(i + n);
        for c in &chars[i..end] {
            out.push(if *c == '\n' { '\n' } else { ' ' });
        }
        i = end;
    }
    out
}

/// Every link target on a page, with its line: inline links and images `](target)`, and
/// reference definitions `[label]: target`.
fn links(text: &str) -> Vec<(usize, String)> {
    let text = prose(text);
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("](") {
        let start = from + at + 2;
        let mut depth = 0usize;
        let mut end = None;
        for (k, c) in text[start..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = Some(start + k);
                    break;
                }
                ')' => depth -= 1,
                '\n' => break,
                _ => {}
            }
        }
        if let Some(end) = end {
            if let Some(target) = destination(&text[start..end]) {
                out.push((line_of(start), target));
            }
            from = end;
        } else {
            from = start;
        }
    }
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('[') {
            if let Some(close) = rest.find(']') {
                let label = &rest[..close];
                if !label.is_empty() && !label.contains('[') && rest[close + 1..].starts_with(':') {
                    if let Some(target) = destination(&rest[close + 2..]) {
                        out.push((line_of(offset), target));
                    }
                }
            }
        }
        offset += line.len();
    }
    out
}

/// The destination of a link's `(...)`: without a title, `<...>` unwrapped; `None` if empty.
fn destination(inside: &str) -> Option<String> {
    let inside = inside.trim();
    let dest = if let Some(rest) = inside.strip_prefix('<') {
        rest.split('>').next().unwrap_or("")
    } else {
        inside.split_whitespace().next().unwrap_or("")
    };
    (!dest.is_empty()).then(|| dest.to_string())
}

/// Whether a target leaves the repository's files: a URL with a scheme.
fn is_external(target: &str) -> bool {
    match target.find(':') {
        Some(i) => {
            let scheme = &target[..i];
            !scheme.is_empty()
                && !scheme.contains(['/', '#', '.'])
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-')
        }
        None => false,
    }
}

/// The anchors of a Markdown page's headings (ATX `#` headings and setext underlines),
/// slugged as GitHub does.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    let mut add = |heading: &str| {
        let slug = slug(heading);
        let n = seen.entry(slug.clone()).or_insert(0);
        out.push(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    };
    let plain = prose(text);
    let original: Vec<&str> = text.lines().collect();
    let lines: Vec<&str> = plain.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && (t.len() == hashes || t[hashes..].starts_with(' ')) {
            // The heading's own text, code spans included (blanked only in `plain`).
            let raw = original[i].trim_start()[hashes..].trim();
            add(raw.trim_end_matches('#').trim_end());
        } else if i > 0
            && !line.trim().is_empty()
            && line.trim().chars().all(|c| c == '=' || c == '-')
            && !lines[i - 1].trim().is_empty()
            && !lines[i - 1].trim_start().starts_with(['|', '-', '*', '#'])
            && (line.trim().starts_with('=') || line.trim().len() >= 2)
        {
            add(original[i - 1].trim());
        }
    }
    out
}

/// GitHub's anchor for a heading: inline links reduced to their text, lower case, every
/// character but letters, digits, `-`, `_` and spaces dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](url)` -> `text`
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](") else {
            break;
        };
        let Some(close) = rest[open + mid..].find(')') else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..open + mid]);
        rest = &rest[open + mid + close + 1..];
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `%20` and the like decoded (ASCII only; anything else is left as written).
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// `path` with `.` and `..` resolved lexically (so a link cannot pass through a missing
/// folder).
fn normalised(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Every broken relative link on the given pages of the repository at `root`: a link to a
/// file that does not exist, to a heading a Markdown page does not have, or out of the
/// repository (a reader of the repository elsewhere would not have it).
fn check(root: &Path, pages: &[PathBuf]) -> Vec<Broken> {
    let root = normalised(root);
    let mut broken = Vec::new();
    let mut headings: HashMap<PathBuf, Vec<String>> = HashMap::new();
    for page in pages {
        let text = match fs::read_to_string(page) {
            Ok(t) => t,
            Err(e) => {
                broken.push(Broken {
                    page: page.clone(),
                    line: 0,
                    target: String::new(),
                    why: format!("cannot read the page: {e}"),
                });
                continue;
            }
        };
        let dir = page.parent().unwrap_or(Path::new("."));
        for (line, target) in links(&text) {
            if is_external(&target) {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                normalised(&dir.join(percent_decoded(path)))
            };
            let mut fail = |why: String| {
                broken.push(Broken {
                    page: page.clone(),
                    line,
                    target: target.clone(),
                    why,
                })
            };
            let shown = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            if !file.starts_with(&root) {
                fail(format!("{} is outside the repository", file.display()));
                continue;
            }
            if !file.exists() {
                fail(format!("{shown} does not exist"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if file.extension().is_none_or(|e| e != "md") || file.is_dir() {
                continue;
            }
            let known = headings.entry(file.clone()).or_insert_with(|| {
                fs::read_to_string(&file)
                    .map(|t| anchors(&t))
                    .unwrap_or_default()
            });
            if !known.iter().any(|a| a == anchor) {
                fail(format!("{shown} has no heading with the anchor #{anchor}"));
            }
        }
    }
    broken
}

fn report(broken: &[Broken]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    broken
        .iter()
        .map(|b| {
            let page = b.page.strip_prefix(root).unwrap_or(&b.page);
            format!("{}:{}: ({}): {}", page.display(), b.line, b.target, b.why)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_relative_link_in_the_readme_architecture_and_guide_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = pages(root);
    assert!(
        pages.len() > 10 && pages.iter().all(|p| p.exists()),
        "README.md, ARCHITECTURE.md and the guide's pages under docs/: {pages:?}"
    );
    let checked: usize = pages
        .iter()
        .map(|p| links(&fs::read_to_string(p).unwrap_or_default()).len())
        .sum();
    assert!(
        checked > 100,
        "only {checked} links found: is the parser blind?"
    );
    let broken = check(root, &pages);
    assert!(
        broken.is_empty(),
        "{} broken link(s) in the documentation:\n{}",
        broken.len(),
        report(&broken)
    );
}

// ----- the checker itself, on pages made up for the purpose ----------------------------------

/// A fresh folder with the given files (path, contents), for one test.
fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("docs_links-{name}"));
    let _ = fs::remove_dir_all(&dir);
    for (path, text) in files {
        let p = dir.join(path);
        fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        fs::write(&p, text).expect("write");
    }
    dir
}

#[test]
fn a_link_to_a_missing_file_is_reported_with_its_page_and_line() {
    let dir = scratch(
        "missing",
        &[
            ("README.md", "# Top\n\nSee [the guide](docs/README.md).\n"),
            ("ARCHITECTURE.md", "# Map\n"),
            (
                "docs/README.md",
                "# Guide\n\nText.\n\nAnd [gone](nowhere.md) here.\n",
            ),
        ],
    );
    let broken = check(&dir, &pages(&dir));
    assert_eq!(broken.len(), 1, "{}", report(&broken));
    assert_eq!(broken[0].page, dir.join("docs/README.md"));
    assert_eq!(broken[0].line, 5);
    assert_eq!(broken[0].target, "nowhere.md");
}

#[test]
fn an_anchor_that_names_no_heading_is_reported_and_one_that_does_is_not() {
    let dir = scratch(
        "anchors",
        &[
            (
                "README.md",
                "# Top\n\n[ok](docs/a.md#slow-links) [ok](docs/a.md#robotdriver) \
                 [ok](docs/a.md#what-is-forwarded-1) [ok](#top) [ok](docs/a.md#two-words-here)\n\
                 [bad](docs/a.md#slow-link) [bad](#nope)\n",
            ),
            ("ARCHITECTURE.md", "# Map\n"),
            (
                "docs/a.md",
                "# A\n\n## Slow links\n\n## `[[robot.driver]]`\n\n### What is forwarded\n\n\
                 ### What is forwarded\n\nTwo words: here\n---\n",
            ),
        ],
    );
    let broken = check(&dir, &pages(&dir));
    let targets: Vec<&str> = broken.iter().map(|b| b.target.as_str()).collect();
    assert_eq!(
        targets,
        ["docs/a.md#slow-link", "#nope"],
        "{}",
        report(&broken)
    );
}

#[test]
fn links_inside_code_blocks_and_code_spans_are_not_links_and_urls_are_not_followed() {
    let dir = scratch(
        "code",
        &[
            (
                "README.md",
                "# Top\n\n```md\n[no](missing-in-fence.md)\n```\n\n`[no](missing-in-span.md)` \
                 [web](https://example.org/x.md) [mail](mailto:a@b.c) <https://example.org>\n\n\
                 ~~~\n[no](tilde-fence.md)\n~~~\n\n[yes](missing-after-fences.md)\n",
            ),
            ("ARCHITECTURE.md", "# Map\n"),
        ],
    );
    let broken = check(&dir, &pages(&dir));
    let targets: Vec<&str> = broken.iter().map(|b| b.target.as_str()).collect();
    assert_eq!(targets, ["missing-after-fences.md"], "{}", report(&broken));
}

#[test]
fn relative_paths_resolve_from_the_page_that_holds_the_link() {
    let dir = scratch(
        "relative",
        &[
            ("README.md", "# Top\n\n[in docs](docs/hardware/p.md)\n"),
            ("ARCHITECTURE.md", "# Map\n"),
            (
                "docs/hardware/p.md",
                "# P\n\n[up](../../README.md#top) [sheet](../reference/s.md) \
                 [folder](../reference/) [image](pic.png) [ref]\n\n[ref]: ../../ARCHITECTURE.md#nope\n",
            ),
            ("docs/reference/s.md", "# S\n"),
        ],
    );
    let broken = check(&dir, &pages(&dir));
    let targets: Vec<&str> = broken.iter().map(|b| b.target.as_str()).collect();
    assert_eq!(
        targets,
        ["pic.png", "../../ARCHITECTURE.md#nope"],
        "{}",
        report(&broken)
    );
}

#[test]
fn a_link_out_of_the_repository_is_reported_even_if_the_file_exists_there() {
    let dir = scratch(
        "outside",
        &[
            (
                "repo/README.md",
                "# Top\n\n[sheet](../shared/reference/p2os.md)\n",
            ),
            ("repo/ARCHITECTURE.md", "# Map\n"),
            ("shared/reference/p2os.md", "# P2OS\n"),
        ],
    );
    let root = dir.join("repo");
    let broken = check(&root, &pages(&root));
    assert_eq!(broken.len(), 1, "{}", report(&broken));
    assert!(
        broken[0].why.contains("outside the repository"),
        "{}",
        report(&broken)
    );
}

#[test]
fn headings_are_slugged_as_github_does() {
    assert_eq!(slug("Slow links"), "slow-links");
    assert_eq!(slug("`[[robot.driver]]`"), "robotdriver");
    assert_eq!(
        slug("Safety: where the watchdog and the limits live"),
        "safety-where-the-watchdog-and-the-limits-live"
    );
    assert_eq!(
        slug("Passthrough: one server serves the fleet"),
        "passthrough-one-server-serves-the-fleet"
    );
    assert_eq!(
        slug("1. In this repository (Rust, in process)"),
        "1-in-this-repository-rust-in-process"
    );
    assert_eq!(
        slug("`p2os`: the Pioneer 2 base"),
        "p2os-the-pioneer-2-base"
    );
    assert_eq!(
        slug("See [the guide](docs/README.md) now"),
        "see-the-guide-now"
    );
    assert_eq!(slug("A & B"), "a--b");
}
