//! A small strict reader for the flat YAML of a map description (ROS map_server's format):
//! top-level `key: value` lines whose values are scalars (plain, 'single' or "double"
//! quoted) or sequences of scalars, either in flow style (`origin: [-10, -10, 0]`) or as a
//! block (`origin:` then `- -10` lines).
//!
//! Why not a YAML crate: serde_yaml is archived, and a full YAML parser (anchors, tags,
//! nested maps, multi-documents) accepts far more than a map description ever holds, with
//! more to go wrong on hostile input. This reader accepts exactly the flat subset
//! map_server's files use (every file from map_saver, Nav2's and the shipped maps), bounds
//! the file's size and line count, and rejects anything else with the line number and the
//! reason: a nested map, an anchor or a tag, a duplicate key, an unclosed quote or bracket.

use std::path::Path;

use super::MapError;

/// The largest YAML file read (a map description is a few hundred bytes).
pub const MAX_YAML_BYTES: usize = 64 * 1024;

/// A value: a scalar or a sequence of scalars, each with the line it came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A scalar, unquoted.
    Scalar(String),
    /// A sequence of scalars.
    Seq(Vec<String>),
}

/// The key/value pairs of a file, in file order, each with its 1-based line.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    entries: Vec<(String, Value, usize)>,
}

impl Doc {
    /// The value of `key`, with its line.
    pub fn get(&self, key: &str) -> Option<(&Value, usize)> {
        self.entries
            .iter()
            .find(|(k, _, _)| k == key)
            .map(|(_, v, l)| (v, *l))
    }

    /// Every key, in file order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _, _)| k.as_str())
    }
}

fn err(path: &Path, line: usize, reason: impl Into<String>) -> MapError {
    MapError::Yaml {
        path: path.to_path_buf(),
        line,
        reason: reason.into(),
    }
}

/// Strips a comment (`#` at the start or after whitespace, outside quotes) and trailing
/// whitespace.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev_space = true;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && prev_space => return line[..i].trim_end(),
            None => {}
        }
        prev_space = c == ' ' || c == '\t';
    }
    line.trim_end()
}

/// One scalar: a quoted string (the quotes removed, `''` in single quotes and `\"`/`\\` in
/// double quotes unescaped) or a plain word.
fn scalar(text: &str, path: &Path, line: usize) -> Result<String, MapError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(err(path, line, "empty value"));
    }
    let first = t.chars().next().unwrap_or(' ');
    if first == '\'' || first == '"' {
        if t.len() < 2 || !t.ends_with(first) {
            return Err(err(path, line, "unclosed quote"));
        }
        let inner = &t[1..t.len() - 1];
        return Ok(if first == '\'' {
            inner.replace("''", "'")
        } else {
            let mut out = String::new();
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    match chars.next() {
                        Some('"') => out.push('"'),
                        Some('\\') => out.push('\\'),
                        Some('/') => out.push('/'),
                        other => {
                            return Err(err(
                                path,
                                line,
                                format!("unsupported escape \\{}", other.unwrap_or(' ')),
                            ))
                        }
                    }
                } else {
                    out.push(c);
                }
            }
            out
        });
    }
    if matches!(first, '&' | '*' | '!' | '{' | '|' | '>' | '%' | '@' | '`') {
        return Err(err(
            path,
            line,
            format!(
                "'{first}' (anchors, tags, maps and block text are not part of a map description)"
            ),
        ));
    }
    Ok(t.to_string())
}

fn flow_seq(text: &str, path: &Path, line: usize) -> Result<Vec<String>, MapError> {
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| err(path, line, "unclosed '['"))?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    if inner.contains('[') || inner.contains(']') {
        return Err(err(
            path,
            line,
            "nested sequences are not part of a map description",
        ));
    }
    inner.split(',').map(|s| scalar(s, path, line)).collect()
}

/// Parses the text of a map description. `path` only names the file in errors.
pub fn parse(text: &str, path: &Path) -> Result<Doc, MapError> {
    if text.len() > MAX_YAML_BYTES {
        return Err(err(path, 1, format!("larger than {MAX_YAML_BYTES} bytes")));
    }
    let mut doc = Doc::default();
    // A key whose value is an indented block sequence, still open.
    let mut open: Option<(String, Vec<String>, usize)> = None;
    let mut ended = false;
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let l = strip_comment(raw);
        if l.trim().is_empty() {
            continue;
        }
        if ended {
            return Err(err(
                path,
                line,
                "text after the end of the document ('...')",
            ));
        }
        if l.contains('\t') {
            return Err(err(
                path,
                line,
                "tab characters are not allowed in YAML indentation",
            ));
        }
        if l == "---" && doc.entries.is_empty() && open.is_none() {
            continue;
        }
        if l == "..." {
            ended = true;
            continue;
        }
        let trimmed = l.trim_start();
        if let Some(item) = trimmed
            .strip_prefix('-')
            .filter(|r| r.is_empty() || r.starts_with(' '))
        {
            let Some((_, items, _)) = open.as_mut() else {
                return Err(err(path, line, "a sequence item outside a key"));
            };
            items.push(scalar(item, path, line)?);
            continue;
        }
        if l.starts_with(' ') {
            return Err(err(
                path,
                line,
                "unexpected indentation (nested maps are not part of a map description)",
            ));
        }
        if let Some((k, items, kl)) = open.take() {
            doc.entries.push((k, Value::Seq(items), kl));
        }
        let Some((key, value)) = l.split_once(':') else {
            return Err(err(path, line, "expected 'key: value'"));
        };
        if !value.is_empty() && !value.starts_with(' ') {
            return Err(err(path, line, "expected a space after ':'"));
        }
        let key = key.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(path, line, format!("bad key '{key}'")));
        }
        if doc.get(key).is_some() || open.as_ref().is_some_and(|(k, _, _)| k == key) {
            return Err(err(path, line, format!("duplicate key '{key}'")));
        }
        let value = value.trim();
        if value.is_empty() {
            open = Some((key.to_string(), Vec::new(), line));
        } else if value.starts_with('[') {
            doc.entries.push((
                key.to_string(),
                Value::Seq(flow_seq(value, path, line)?),
                line,
            ));
        } else {
            doc.entries.push((
                key.to_string(),
                Value::Scalar(scalar(value, path, line)?),
                line,
            ));
        }
    }
    if let Some((k, items, kl)) = open.take() {
        if items.is_empty() {
            return Err(err(path, kl, format!("key '{k}' has no value")));
        }
        doc.entries.push((k, Value::Seq(items), kl));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &str) -> Result<Doc, MapError> {
        parse(t, Path::new("m.yaml"))
    }

    #[test]
    fn reads_the_map_server_forms() {
        let d = p("image: \"my map.pgm\"  # the picture\nresolution: 0.050000\norigin: [-10.0, -10, 0.0]\nnegate: 0\nmode: trinary\n").unwrap();
        assert_eq!(
            d.get("image").unwrap().0,
            &Value::Scalar("my map.pgm".into())
        );
        assert_eq!(
            d.get("origin").unwrap(),
            (
                &Value::Seq(vec!["-10.0".into(), "-10".into(), "0.0".into()]),
                3
            )
        );
        let b = p("---\norigin:\n- -1.5\n-   2\n  - 0\nfree_thresh: 0.196\n...\n").unwrap();
        assert_eq!(
            b.get("origin").unwrap().0,
            &Value::Seq(vec!["-1.5".into(), "2".into(), "0".into()])
        );
        assert_eq!(b.keys().collect::<Vec<_>>(), ["origin", "free_thresh"]);
        assert_eq!(
            p("image: 'it''s#1.pgm'\n").unwrap().get("image").unwrap().0,
            &Value::Scalar("it's#1.pgm".into())
        );
    }

    #[test]
    fn rejects_what_a_map_description_never_holds() {
        for (text, line, what) in [
            ("a: 1\na: 2\n", 2, "duplicate"),
            ("a:\n  b: 1\n", 2, "indentation"),
            ("a: [1, 2\n", 1, "unclosed"),
            ("a: 'x\n", 1, "unclosed quote"),
            ("a: &x 1\n", 1, "anchors"),
            ("- 1\n", 1, "outside a key"),
            ("just words\n", 1, "key: value"),
            ("a:1\n", 1, "space after"),
            ("a:\n", 1, "no value"),
            ("a: [[1]]\n", 1, "nested"),
            ("a: 1\n...\nb: 2\n", 3, "after the end"),
        ] {
            let e = p(text).unwrap_err();
            match &e {
                MapError::Yaml {
                    line: l, reason, ..
                } => {
                    assert_eq!(*l, line, "{text:?}: {e}");
                    assert!(reason.contains(what), "{text:?}: {e}");
                }
                other => panic!("{other}"),
            }
        }
        assert!(p(&"a: 1\n".repeat(20_000)).is_err());
    }
}
