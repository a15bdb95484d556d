//! `player --check-config FILE`: everything the server would refuse at start, found without
//! starting it, every error at once, each named by its key (and line).
//!
//! The file goes through the server's own parser and checks ([`Settings::from_toml`]) once
//! whole and once per part: each key of each section alone, each robot's own keys alone,
//! each `[[robot.driver]]` alone (in a robot of its own), each section whole (keys that
//! depend on each other). A part that fails alone is named by its key; a failure seen only
//! whole is named as the file's. Then what the server checks only when it starts: drivers
//! missing from the catalog, device codes served twice, ports two robots or a robot and a
//! front end (a web viewer) would both take, serial ports and files that do not exist, the
//! files a front end reads (the web viewer's TLS certificate and key, unreadable or not a
//! pair: [`Scope::Start`]).
//!
//! A reload (SIGHUP) runs the same checks on the file but not the ones about the machine
//! ([`Scope::Reload`]: a serial adapter unplugged for a moment does not block a new key).

use crate::catalog::Catalog;
use crate::settings::{Settings, SettingsError};
use std::fmt;
use std::path::{Path, PathBuf};

/// One error in a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where: a key path such as `server.max_clients`, `robot[0].driver[1]`, or `file`.
    pub key: String,
    /// The line of the file, where known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{} (line {l}): {}", self.key, self.message),
            None => write!(f, "{}: {}", self.key, self.message),
        }
    }
}

/// Which checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything start would refuse, the machine included (serial ports, files).
    Start,
    /// The file only (a reload of a running server).
    Reload,
}

/// A checked configuration: the settings and the folder its relative paths start from.
#[derive(Debug)]
pub struct Checked {
    /// The settings, as the server would run them.
    pub settings: Settings,
    /// The configuration file's folder.
    pub base_dir: PathBuf,
}

/// Checks the configuration file at `path` against the drivers of `catalog`.
pub fn check_file(path: &Path, catalog: &Catalog, scope: Scope) -> Result<Checked, Vec<Problem>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        vec![Problem {
            key: "file".into(),
            line: None,
            message: format!("cannot read '{}': {e}", path.display()),
        }]
    })?;
    let base_dir = path
        .parent()
        .map(Path::to_path_buf)
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| PathBuf::from("."));
    let (settings, mut problems) = check_parts(&text, &path.display().to_string());
    let Some(settings) = settings else {
        return Err(problems);
    };
    // The parts already found wrong were taken out (a driver or robot left empty): what
    // the start checks say of them is not news.
    let removed: Vec<String> = problems.iter().map(|p| p.key.clone()).collect();
    problems.extend(
        check_settings(&settings, catalog, &base_dir, scope, Some(&text))
            .into_iter()
            .filter(|p| !removed.iter().any(|k| p.key.starts_with(k.as_str()))),
    );
    if problems.is_empty() {
        Ok(Checked { settings, base_dir })
    } else {
        problems.sort_by_key(|p| p.line.unwrap_or(usize::MAX));
        Err(problems)
    }
}

/// The server's parser on `doc` (a TOML table) as text.
fn parse(doc: &toml::Table, origin: &str) -> Result<Settings, String> {
    let text = toml::to_string(doc).map_err(|e| e.to_string())?;
    Settings::from_toml(&text, origin).map_err(|e| {
        let e = e.to_string();
        e.strip_prefix(origin)
            .and_then(|s| s.strip_prefix(": "))
            .map_or_else(|| e.clone(), str::to_string)
    })
}

fn table(pairs: impl IntoIterator<Item = (String, toml::Value)>) -> toml::Table {
    pairs.into_iter().collect()
}

/// A document of one part: `section` holding `value`, beside one empty robot (the
/// parser wants one) unless the part is the robots.
fn alone(section: &str, value: toml::Value) -> toml::Table {
    let mut doc = table([(section.to_string(), value)]);
    if section != "robot" {
        doc.insert(
            "robot".into(),
            toml::Value::Array(vec![toml::Value::Table(toml::Table::new())]),
        );
    }
    doc
}

/// A part of the document an error can be pinned on, finest first.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// `key` of table `section`.
    SectionKey(String, String),
    /// Robot `i`'s own `key`.
    RobotKey(usize, String),
    /// Robot `i`'s driver `j`.
    Driver(usize, usize),
    /// Robot `i`.
    Robot(usize),
    /// A top-level key (a section, or a stray value).
    Top(String),
}

fn robots(doc: &toml::Table) -> &[toml::Value] {
    match doc.get("robot") {
        Some(toml::Value::Array(a)) => a,
        _ => &[],
    }
}

fn robot(doc: &toml::Table, i: usize) -> Option<&toml::Table> {
    robots(doc).get(i).and_then(toml::Value::as_table)
}

impl Part {
    /// Every part of `doc`, finest first.
    fn all(doc: &toml::Table) -> Vec<Part> {
        let mut fine = Vec::new();
        let mut coarse = Vec::new();
        for (name, value) in doc {
            if name == "robot" {
                for (i, r) in robots(doc).iter().enumerate() {
                    if let Some(r) = r.as_table() {
                        for k in r.keys().filter(|k| *k != "driver") {
                            fine.push(Part::RobotKey(i, k.clone()));
                        }
                        if let Some(toml::Value::Array(ds)) = r.get("driver") {
                            fine.extend((0..ds.len()).map(|j| Part::Driver(i, j)));
                        }
                    }
                    coarse.push(Part::Robot(i));
                }
                if !matches!(value, toml::Value::Array(_)) {
                    coarse.push(Part::Top(name.clone()));
                }
                continue;
            }
            if let toml::Value::Table(t) = value {
                fine.extend(t.keys().map(|k| Part::SectionKey(name.clone(), k.clone())));
            }
            coarse.push(Part::Top(name.clone()));
        }
        fine.extend(coarse);
        fine
    }

    /// The part alone in a document (what the parser says of it without the rest): a
    /// section's key beside robots that have only their names (a section may name them),
    /// a robot's key or driver in a robot that has only its name besides.
    fn isolated(&self, doc: &toml::Table) -> Option<toml::Table> {
        let one_robot = |r: toml::Table| alone("robot", toml::Value::Array(vec![r.into()]));
        let name_of = |i: usize| -> toml::Table {
            robot(doc, i)
                .and_then(|r| r.get("name"))
                .map(|n| table([("name".to_string(), n.clone())]))
                .unwrap_or_default()
        };
        Some(match self {
            Part::SectionKey(sec, k) => {
                let v = doc.get(sec)?.as_table()?.get(k)?.clone();
                let mut part = alone(sec, toml::Value::Table(table([(k.clone(), v)])));
                let names: Vec<toml::Value> = (0..robots(doc).len())
                    .map(|i| toml::Value::Table(name_of(i)))
                    .collect();
                if !names.is_empty() {
                    part.insert("robot".into(), toml::Value::Array(names));
                }
                part
            }
            Part::RobotKey(i, k) => {
                let v = robot(doc, *i)?.get(k)?.clone();
                let mut r = name_of(*i);
                r.insert(k.clone(), v);
                one_robot(r)
            }
            Part::Driver(i, j) => {
                let d = robot(doc, *i)?.get("driver")?.as_array()?.get(*j)?.clone();
                let mut r = name_of(*i);
                r.insert("driver".into(), toml::Value::Array(vec![d]));
                one_robot(r)
            }
            Part::Robot(i) => alone(
                "robot",
                toml::Value::Array(vec![robots(doc).get(*i)?.clone()]),
            ),
            Part::Top(k) => alone(k, doc.get(k)?.clone()),
        })
    }

    /// Takes the part out of `doc` (a robot or driver is replaced by an empty one, so the
    /// others keep their numbers).
    fn remove(&self, doc: &mut toml::Table) {
        fn robots(doc: &mut toml::Table) -> Option<&mut Vec<toml::Value>> {
            match doc.get_mut("robot") {
                Some(toml::Value::Array(a)) => Some(a),
                _ => None,
            }
        }
        match self {
            Part::SectionKey(sec, k) => {
                if let Some(t) = doc.get_mut(sec).and_then(toml::Value::as_table_mut) {
                    t.remove(k);
                }
            }
            Part::RobotKey(i, k) => {
                if let Some(r) = robots(doc)
                    .and_then(|a| a.get_mut(*i))
                    .and_then(toml::Value::as_table_mut)
                {
                    r.remove(k);
                }
            }
            Part::Driver(i, j) => {
                let empty = table([
                    ("driver".to_string(), toml::Value::String("removed".into())),
                    ("devices".to_string(), toml::Value::Array(Vec::new())),
                ]);
                if let Some(d) = robots(doc)
                    .and_then(|a| a.get_mut(*i))
                    .and_then(toml::Value::as_table_mut)
                    .and_then(|r| r.get_mut("driver"))
                    .and_then(toml::Value::as_array_mut)
                    .and_then(|ds| ds.get_mut(*j))
                {
                    *d = toml::Value::Table(empty);
                }
            }
            Part::Robot(i) => {
                if let Some(r) = robots(doc).and_then(|a| a.get_mut(*i)) {
                    *r = toml::Value::Table(toml::Table::new());
                }
            }
            Part::Top(k) => {
                doc.remove(k);
            }
        }
    }

    fn key(&self) -> String {
        match self {
            Part::SectionKey(sec, k) => format!("{sec}.{k}"),
            Part::RobotKey(i, k) => format!("robot[{i}].{k}"),
            Part::Driver(i, j) => format!("robot[{i}].driver[{j}]"),
            Part::Robot(i) => format!("robot[{i}]"),
            Part::Top(k) => k.clone(),
        }
    }

    /// The line the error `message` of this part points at: the key it names (an
    /// unknown field, the device list), else the part's own line.
    fn line(&self, loc: &Locator, message: &str) -> Option<usize> {
        let field = message
            .split_once("unknown field `")
            .and_then(|(_, rest)| rest.split_once('`'))
            .map(|(f, _)| f);
        match self {
            Part::SectionKey(sec, k) => loc.key(&format!("[{sec}]"), 0, k),
            Part::RobotKey(i, k) => loc.key("[[robot]]", *i, k),
            Part::Driver(i, j) => field
                .and_then(|f| loc.driver_key(*i, *j, f))
                .or_else(|| {
                    message
                        .contains("device")
                        .then(|| loc.driver_key(*i, *j, "devices"))
                        .flatten()
                })
                .or_else(|| loc.driver(*i, *j)),
            Part::Robot(i) => loc.header("[[robot]]", *i),
            Part::Top(k) => loc
                .header(&format!("[{k}]"), 0)
                .or_else(|| loc.key_from(0, k)),
        }
    }
}

/// Parses and checks TOML text as the server does, every error at once: the whole file is
/// parsed; its error is pinned on the finest part that gives the same error alone (or,
/// for errors between parts, whose removal makes it go), that part is taken out, and the
/// rest parsed again, until it parses.
pub fn check_text(text: &str, origin: &str) -> Result<Settings, Vec<Problem>> {
    match check_parts(text, origin) {
        (Some(s), p) if p.is_empty() => Ok(s),
        (_, p) => Err(p),
    }
}

/// [`check_text`]'s work: the problems, and the settings of what is left once the parts
/// with problems are taken out (`None` when the text is not TOML or nothing is left).
fn check_parts(text: &str, origin: &str) -> (Option<Settings>, Vec<Problem>) {
    let mut doc: toml::Table = match text.parse() {
        Ok(d) => d,
        Err(e) => {
            let line = e.span().map(|s| line_of(text, s.start));
            let problem = Problem {
                key: "file".into(),
                line,
                message: e.message().trim().to_string(),
            };
            return (None, vec![problem]);
        }
    };
    let loc = Locator::new(text);
    let mut problems: Vec<Problem> = Vec::new();
    for _ in 0..100 {
        let message = match parse(&doc, origin) {
            Ok(s) => return (Some(s), problems),
            Err(m) => m,
        };
        if problems.iter().any(|p| p.message == message) {
            // Taking its part out did not make it go: say it once, as the file's.
            break;
        }
        let parts = Part::all(&doc);
        let culprit = parts
            .iter()
            .find(|p| {
                p.isolated(&doc)
                    .is_some_and(|d| parse(&d, origin).err().as_ref() == Some(&message))
            })
            .or_else(|| {
                // An error between parts: the part without which the file parses, else
                // the first without which the error goes.
                let without = |p: &Part| {
                    let mut d = doc.clone();
                    p.remove(&mut d);
                    parse(&d, origin)
                };
                parts.iter().find(|p| without(p).is_ok()).or_else(|| {
                    parts
                        .iter()
                        .find(|p| without(p).err().as_ref() != Some(&message))
                })
            });
        match culprit {
            Some(p) => {
                problems.push(Problem {
                    key: p.key(),
                    line: p.line(&loc, &message),
                    message,
                });
                p.remove(&mut doc);
            }
            None => {
                problems.push(Problem {
                    key: "file".into(),
                    line: None,
                    message,
                });
                break;
            }
        }
    }
    (None, problems)
}

/// What the server checks only when it starts: drivers in the catalog, device codes served
/// twice, ports taken twice, and with [`Scope::Start`] serial ports and files that must
/// exist. `text` (the file) gives lines.
pub fn check_settings(
    settings: &Settings,
    catalog: &Catalog,
    base_dir: &Path,
    scope: Scope,
    text: Option<&str>,
) -> Vec<Problem> {
    let loc = Locator::new(text.unwrap_or(""));
    let mut problems = Vec::new();
    let mut ports: Vec<(u16, String, String)> = Vec::new();
    let front_end_ports = settings.front_ends().ports();
    for (i, robot) in settings.robot.iter().enumerate() {
        let mut codes: Vec<(u8, &str)> = Vec::new();
        // As the server binds: an address, or a name that resolves.
        let addr = format!("{}:{}", robot.bind, robot.port);
        if let Err(e) = std::net::ToSocketAddrs::to_socket_addrs(&addr) {
            problems.push(Problem {
                key: format!("robot[{i}].bind"),
                line: loc.key("[[robot]]", i, "bind"),
                message: format!("robot '{}': cannot listen on {addr}: {e}", robot.name),
            });
        }
        for (j, d) in robot.driver.iter().enumerate() {
            let key = format!("robot[{i}].driver[{j}]");
            if catalog.get(&d.driver).is_none() {
                problems.push(Problem {
                    key: format!("{key}.driver"),
                    line: loc.driver_key(i, j, "driver"),
                    message: format!(
                        "robot '{}': no driver named '{}' (available: {})",
                        robot.name,
                        d.driver,
                        catalog.names().join(", ")
                    ),
                });
            }
            for c in d.served_codes().unwrap_or_default() {
                if let Some((_, other)) = codes.iter().find(|(k, _)| *k == c) {
                    problems.push(Problem {
                        key: format!("{key}.devices"),
                        line: loc.driver_key(i, j, "devices"),
                        message: format!(
                            "robot '{}': device '{}' is served by both driver '{other}' and driver '{}'",
                            robot.name,
                            char::from(c),
                            d.driver
                        ),
                    });
                } else {
                    codes.push((c, &d.driver));
                }
            }
            if scope == Scope::Start {
                problems.extend(missing_paths(d, base_dir, &key, &loc, i, j));
            }
        }
        if robot.port != 0 {
            ports.push((
                robot.port,
                format!("robot[{i}].port"),
                format!("robot '{}'", robot.name),
            ));
        }
        // The front ends' ports for this robot (robots given the same web port share one
        // endpoint: only the first of them listens).
        for p in front_end_ports.iter().filter(|p| p.robot == i) {
            ports.push((p.port, p.key.clone(), p.who.clone()));
        }
    }
    // The files the front ends read at start (the web viewer's certificate and key), read
    // as the server would.
    if scope == Scope::Start {
        let origin = "configuration";
        for e in settings.front_ends().check_files(base_dir, origin) {
            problems.push(match e {
                SettingsError::Value { key, why, .. } => {
                    let (section, field) = key.split_once('.').unwrap_or((&key, ""));
                    Problem {
                        line: loc.key(&format!("[{section}]"), 0, field),
                        key,
                        message: why,
                    }
                }
                other => Problem {
                    key: "file".into(),
                    line: None,
                    message: other.to_string(),
                },
            });
        }
    }
    for (n, (port, key, who)) in ports.iter().enumerate() {
        if let Some((_, _, first)) = ports[..n].iter().find(|(p, _, _)| p == port) {
            let (section, field) = key.split_once('.').unwrap_or((key, ""));
            let i: usize = section
                .trim_start_matches("robot[")
                .trim_end_matches(']')
                .parse()
                .unwrap_or(0);
            problems.push(Problem {
                key: key.clone(),
                line: loc.key("[[robot]]", i, field),
                message: format!("{who} and {first} would both listen on port {port}"),
            });
        }
    }
    problems
}

/// Serial ports (`port` given as a path) and files (`file`, a world `*.toml`) a driver's
/// parameters name that do not exist.
fn missing_paths(
    d: &crate::settings::DriverSettings,
    base_dir: &Path,
    key: &str,
    loc: &Locator,
    i: usize,
    j: usize,
) -> Vec<Problem> {
    let mut out = Vec::new();
    let Ok(params) = d.params.clone().into_table() else {
        return out;
    };
    for (name, what) in [
        ("port", "serial port"),
        ("file", "file"),
        ("world", "world file"),
    ] {
        let Some(v) = params.get(name) else { continue };
        let Ok(s) = v.clone().into_string() else {
            continue;
        };
        let is_path = match name {
            "port" => s.contains('/'),
            "world" => s.ends_with(".toml"),
            _ => true,
        };
        if !is_path {
            continue;
        }
        let p = if Path::new(&s).is_absolute() {
            PathBuf::from(&s)
        } else {
            base_dir.join(&s)
        };
        if !p.exists() {
            out.push(Problem {
                key: format!("{key}.params.{name}"),
                line: loc.params_key(i, j, name),
                message: format!("driver '{}': {what} '{s}' does not exist", d.driver),
            });
        }
    }
    out
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Finds the lines of headers and keys in the file's text (by reading it as written: a
/// header `[x]` or `[[x]]` alone on its line, a key at the start of its line).
struct Locator<'a> {
    lines: Vec<&'a str>,
}

impl<'a> Locator<'a> {
    fn new(text: &'a str) -> Self {
        Locator {
            lines: text.lines().collect(),
        }
    }

    fn header_of(line: &str) -> Option<&str> {
        let t = line.split('#').next().unwrap_or("").trim();
        (t.starts_with('[') && t.ends_with(']')).then_some(t)
    }

    /// The line (index) of the `n`th (0-based) occurrence of `header`.
    fn header_index(&self, header: &str, n: usize) -> Option<usize> {
        self.lines
            .iter()
            .enumerate()
            .filter(|(_, l)| Self::header_of(l) == Some(header))
            .nth(n)
            .map(|(i, _)| i)
    }

    fn header(&self, header: &str, n: usize) -> Option<usize> {
        self.header_index(header, n).map(|i| i + 1)
    }

    /// `key = ...` in the lines from `from` to the next header (exclusive).
    fn key_from(&self, from: usize, key: &str) -> Option<usize> {
        for (i, l) in self.lines.iter().enumerate().skip(from) {
            if i > from && Self::header_of(l).is_some() {
                return None;
            }
            let t = l.trim_start();
            if let Some(rest) = t.strip_prefix(key) {
                if rest.trim_start().starts_with('=') {
                    return Some(i + 1);
                }
            }
        }
        None
    }

    /// `key` under the `n`th `header`.
    fn key(&self, header: &str, n: usize, key: &str) -> Option<usize> {
        self.key_from(self.header_index(header, n)?, key)
    }

    /// The line index of robot `i`'s driver `j` header.
    fn driver_index(&self, i: usize, j: usize) -> Option<usize> {
        let start = self.header_index("[[robot]]", i)?;
        let end = self
            .header_index("[[robot]]", i + 1)
            .unwrap_or(self.lines.len());
        self.lines[start..end]
            .iter()
            .enumerate()
            .filter(|(_, l)| Self::header_of(l) == Some("[[robot.driver]]"))
            .nth(j)
            .map(|(k, _)| start + k)
    }

    fn driver(&self, i: usize, j: usize) -> Option<usize> {
        self.driver_index(i, j).map(|k| k + 1)
    }

    fn driver_key(&self, i: usize, j: usize, key: &str) -> Option<usize> {
        self.key_from(self.driver_index(i, j)?, key)
    }

    fn params_key(&self, i: usize, j: usize, key: &str) -> Option<usize> {
        let d = self.driver_index(i, j)?;
        let params = self.lines[d..]
            .iter()
            .enumerate()
            .skip(1)
            .take_while(|(_, l)| {
                !matches!(
                    Self::header_of(l),
                    Some("[[robot]]") | Some("[[robot.driver]]")
                )
            })
            .find(|(_, l)| Self::header_of(l) == Some("[robot.driver.params]"))
            .map(|(k, _)| d + k)?;
        self.key_from(params, key)
    }
}

/// What a checked configuration would serve, for `--check-config` to print: each robot
/// (its drivers, and what each front end does for it), each front end's line, the access
/// policy.
pub fn describe(c: &Checked) -> String {
    use std::fmt::Write as _;
    let s = &c.settings;
    let mut out = String::new();
    for (i, r) in s.robot.iter().enumerate() {
        let _ = writeln!(out, "robot '{}' on {}:{}", r.name, r.bind, r.port);
        for d in &r.driver {
            let codes = d.served().unwrap_or_default();
            let devices: Vec<String> = codes
                .iter()
                .map(|&(own, c)| {
                    let name = player_proto::device::name(c);
                    if own == c {
                        format!("{} ({name})", char::from(c))
                    } else {
                        format!(
                            "{} ({name}; the driver's {})",
                            char::from(c),
                            char::from(own)
                        )
                    }
                })
                .collect();
            let _ = writeln!(out, "  driver '{}': {}", d.driver, devices.join(", "));
        }
        for line in s.front_ends().describe_robot(i) {
            let _ = writeln!(out, "  {line}");
        }
    }
    for line in s.front_ends().describe(&c.base_dir) {
        let _ = writeln!(out, "{line}");
    }
    let a = &s.access;
    let _ = writeln!(
        out,
        "access: {}, keyless clients {}, read_allow {:?}, write_allow {:?}, max_per_address {}",
        if a.key.is_empty() {
            "no key"
        } else {
            "key set"
        },
        if a.key.is_empty() {
            "may command"
        } else if a.keyless == "refuse" {
            "refused"
        } else {
            "read-only"
        },
        a.read_allow,
        a.write_allow,
        a.max_per_address
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_has_a_line_for_every_front_end_of_the_list() {
        let text = "[ros2]\nenabled = true\nwrite = true\n[[robot]]\nname = \"pioneer\"\n";
        let settings = check_text(text, "t.toml").unwrap();
        let out = describe(&Checked {
            settings,
            base_dir: PathBuf::from("."),
        });
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.contains(&"  web viewer: port 8765 (default; skipped if busy)"));
        for line in [
            "web viewer TLS: off (http and ws)",
            "recording: off",
            "zenoh bridge: off",
            "ros2 front end: peer mode, domain 0, listen [\"tcp/localhost:0\"], \
             connect [\"tcp/localhost:7447\"], cmd_vel obeyed",
        ] {
            assert!(lines.contains(&line), "no '{line}' in:\n{out}");
        }
        assert_eq!(
            lines.len(),
            2 + crate::frontends::ALL.len() + 1,
            "the robot (no driver) and its web viewer, a line per front end, access:\n{out}"
        );
    }
}
