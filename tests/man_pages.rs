//! The manual pages under `packaging/man/` against the code, so they cannot drift: every
//! flag the binaries take, every section and key the configuration accepts (and every
//! driver's parameters), the signals `player` handles and the environment variables it
//! reads are in their page, and the page names none the code does not have.
//!
//! The pages are hand-written roff. A page's option or key is a `.TP` entry: the line after
//! `.TP` is its tag (`.B key`, `.BI \-gp " port"`, `.BR \-\-help ", " \-h`). The keys the
//! code accepts come from the settings' own parsers: a key the section does not know is an
//! error listing every key it does (`deny_unknown_fields`).

use player::frontends::ALL as FRONT_ENDS;
use player::settings::Settings;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path))
        .unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// Roff text without font escapes, with `\-` as `-` and `\(dq` as `"`.
fn plain(s: &str) -> String {
    let mut s = s.replace("\\-", "-").replace("\\(dq", "\"");
    for f in ["\\fB", "\\fI", "\\fR", "\\fP"] {
        s = s.replace(f, "");
    }
    s
}

/// A page's sections and subsections (`.SH`, `.SS`): the heading (unquoted, plain) and its
/// lines up to the next heading.
fn sections(page: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in page.lines() {
        if let Some(h) = line.strip_prefix(".SH ").or(line.strip_prefix(".SS ")) {
            out.push((plain(h.trim().trim_matches('"')), Vec::new()));
        } else if let Some((_, lines)) = out.last_mut() {
            lines.push(line.to_string());
        }
    }
    out
}

/// The lines of the section headed `heading`.
fn section<'a>(all: &'a [(String, Vec<String>)], heading: &str) -> &'a [String] {
    all.iter()
        .find(|(h, _)| h == heading)
        .map(|(_, l)| l.as_slice())
        .unwrap_or_else(|| panic!("no section '{heading}' in the page"))
}

/// The tag lines of the `.TP` entries of `lines`, plain.
fn tags(lines: &[String]) -> Vec<String> {
    lines
        .windows(2)
        .filter(|w| w[0].trim() == ".TP")
        .map(|w| plain(&w[1]))
        .collect()
}

/// The keys of the `.TP` entries: the word after `.B`.
fn keys(lines: &[String]) -> BTreeSet<String> {
    tags(lines)
        .iter()
        .filter_map(|t| t.strip_prefix(".B "))
        .map(|k| k.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

fn is_flag(w: &str) -> bool {
    let name = w.trim_start_matches('-');
    (w.starts_with('-') && w.len() - name.len() <= 2)
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The flags named in the tags of the `.TP` entries of `lines`.
fn flags(lines: &[String]) -> BTreeSet<String> {
    tags(lines)
        .iter()
        .flat_map(|t| {
            t.split(|c: char| c.is_whitespace() || c == '"' || c == ',' || c == '|')
                .filter(|w| is_flag(w))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The string literals of a line of Rust.
fn literals(line: &str) -> Vec<String> {
    line.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The literals of the match arms (`"a" | "b" =>`) of `text` that are flags.
fn arm_flags(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.trim_start().starts_with('"') && l.contains("=>"))
        .flat_map(|l| {
            let arm = l.split("=>").next().unwrap_or("").to_string();
            literals(&arm)
        })
        .filter(|w| is_flag(w))
        .collect()
}

/// The part of `text` from `start` to `end`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text.find(start).unwrap_or_else(|| panic!("no '{start}'"));
    let rest = &text[from..];
    &rest[..rest
        .find(end)
        .unwrap_or_else(|| panic!("no '{end}' after '{start}'"))]
}

fn set(words: &[&str]) -> BTreeSet<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// Fails listing what one side has and the other lacks.
fn same(what: &str, in_code: &BTreeSet<String>, in_page: &BTreeSet<String>) {
    let missing: Vec<_> = in_code.difference(in_page).collect();
    let stale: Vec<_> = in_page.difference(in_code).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "{what}: in the code but not in the page: {missing:?}; in the page but not in the code: {stale:?}"
    );
}

/// The names a serde "unknown field" (or section) error lists as expected.
fn expected_names(error: &str) -> BTreeSet<String> {
    let list = error
        .split_once("expected one of")
        .or_else(|| error.split_once("expected"))
        .unwrap_or_else(|| panic!("no list of expected names in: {error}"))
        .1;
    // The config crate may name the key after the list ("... for key `server`").
    let list = list.split(" for key").next().unwrap_or(list);
    let ticked: BTreeSet<String> = literals(&list.replace('`', "\"")).into_iter().collect();
    if !ticked.is_empty() {
        return ticked;
    }
    // The sections' error: "(expected one of server, access, ...)".
    list.trim_end_matches(')')
        .split(',')
        .map(|w| w.trim().to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The keys of a configuration section: the names the error for an unknown key lists.
fn config_keys(toml: &str) -> BTreeSet<String> {
    let e = Settings::from_toml(toml, "t.toml").expect_err("zzzz is no key");
    let text = e.to_string();
    assert!(text.contains("zzzz"), "{text}");
    expected_names(&text)
}

/// The keys of a driver's parameters type.
fn param_keys<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> BTreeSet<String> {
    let e = config::Config::builder()
        .add_source(config::File::from_str("zzzz = 1", config::FileFormat::Toml))
        .build()
        .unwrap()
        .try_deserialize::<T>()
        .expect_err("zzzz is no parameter");
    expected_names(&e.to_string())
}

/// The fields of the private `struct <name>` of a source file, as serde names them.
fn struct_fields(path: &str, name: &str) -> BTreeSet<String> {
    let text = read(path);
    let body = between(&text, &format!("struct {name} {{"), "\n}");
    let mut rename = None;
    let mut out = BTreeSet::new();
    for line in body.lines().skip(1) {
        let t = line.trim();
        if t.starts_with("#[serde(") && t.contains("rename = \"") {
            rename = t
                .split("rename = \"")
                .nth(1)
                .and_then(|r| r.split('"').next());
        } else if let Some((field, _)) = t.trim_start_matches("pub ").split_once(':') {
            if !t.starts_with("//") && !t.starts_with('#') {
                out.insert(rename.take().unwrap_or(field).to_string());
            }
        }
    }
    out
}

#[test]
fn every_flag_of_player_is_in_its_page_and_every_flag_there_is_taken() {
    let mut code = arm_flags(between(
        &read("actors/core/src/settings.rs"),
        "pub fn parse_args_with(",
        "let (mut settings, base_dir)",
    ));
    code.extend(
        read("src/main.rs")
            .lines()
            .filter(|l| l.contains("== \"-"))
            .flat_map(literals)
            .filter(|w| is_flag(w)),
    );
    code.extend(
        FRONT_ENDS
            .iter()
            .flat_map(|e| e.syntax.flags)
            .map(|f| f.flag.to_string()),
    );
    // The drivers' flags (-pp, -lp, ...): registered with the catalog, each checked there.
    let catalog = player::builtin_catalog();
    for entry in std::fs::read_dir(Path::new(ROOT).join("actors/drivers/src")).unwrap() {
        // A driver is `<name>.rs` or `<name>/mod.rs`.
        let path = entry.unwrap().path();
        let file = if path.is_dir() {
            path.join("mod.rs")
        } else {
            path
        };
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for line in text.lines().filter(|l| l.trim().starts_with("flag: \"-")) {
            let flag = literals(line).remove(0);
            assert!(catalog.flag(&flag).is_some(), "{flag} is not registered");
            code.insert(flag);
        }
    }
    for must in [
        "-gp",
        "-pp",
        "-stage",
        "-record",
        "--config",
        "--check-config",
    ] {
        assert!(
            code.contains(must),
            "the scan of the code missed {must}: {code:?}"
        );
    }
    let page = read("packaging/man/player.1");
    let all = sections(&page);
    let mut documented = BTreeSet::new();
    for heading in ["OPTIONS", "The manual's flags", "Extensions", "Front ends"] {
        documented.extend(flags(section(&all, heading)));
    }
    same("player's flags", &code, &documented);

    // What `player --help` lists is in the page, and is a flag the code takes.
    let out = Command::new(env!("CARGO_BIN_EXE_player"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help: BTreeSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("    -"))
        .flat_map(|l| {
            l.split(|c: char| c.is_whitespace() || c == ',')
                .take_while(|w| !w.starts_with('<'))
                .filter(|w| is_flag(w))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(help.len() >= 18, "{help:?}");
    let unknown: Vec<_> = help.difference(&code).collect();
    assert!(
        unknown.is_empty(),
        "--help lists flags no parser takes: {unknown:?}"
    );
}

/// The environment variables the code under `dir` reads (`env::var("NAME")`), the
/// systemd watchdog's among them, leaving out tests: files named `tests.rs` and whatever
/// follows a file's first `#[cfg(test)]` (a variable only a test reads is not the server's).
fn env_read_in(dir: &Path) -> BTreeSet<String> {
    let mut read_vars = BTreeSet::new();
    let mut files = vec![dir.to_path_buf()];
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if p.extension().is_some_and(|e| e == "rs") && !p.ends_with("tests.rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for line in code.lines().filter(|l| l.contains("env::var")) {
                read_vars.extend(literals(line).into_iter().take(1));
            }
            if code.contains("sd_notify::watchdog_enabled") {
                read_vars.extend(set(&["WATCHDOG_USEC", "WATCHDOG_PID"]));
            }
        }
    }
    read_vars
}

#[test]
fn the_signals_player_handles_and_the_environment_it_reads_are_in_its_page() {
    let main = read("src/main.rs");
    let mut handled = BTreeSet::new();
    for (kind, signal) in [
        ("interrupt", "SIGINT"),
        ("terminate", "SIGTERM"),
        ("user_defined1", "SIGUSR1"),
        ("hangup", "SIGHUP"),
    ] {
        if main.contains(&format!("SignalKind::{kind}()")) {
            handled.insert(signal.to_string());
        }
    }
    assert_eq!(
        main.matches("SignalKind::").count(),
        handled.len(),
        "a signal handled in src/main.rs is not in this test's list"
    );
    let page = read("packaging/man/player.1");
    let all = sections(&page);
    same(
        "signals",
        &handled,
        &flags_or_words(section(&all, "SIGNALS")),
    );

    let mut read_vars = env_read_in(&Path::new(ROOT).join("src"));
    for crate_dir in std::fs::read_dir(Path::new(ROOT).join("actors")).unwrap() {
        let dir = crate_dir.unwrap().path();
        if !dir.ends_with("testkit") {
            read_vars.extend(env_read_in(&dir.join("src")));
        }
    }
    assert!(read_vars.contains("NOTIFY_SOCKET"), "{read_vars:?}");
    same(
        "environment variables",
        &read_vars,
        &flags_or_words(section(&all, "ENVIRONMENT")),
    )
}

/// The words of the `.TP` tags (signal and variable names).
fn flags_or_words(lines: &[String]) -> BTreeSet<String> {
    tags(lines)
        .iter()
        .flat_map(|t| {
            t.split(|c: char| c.is_whitespace() || c == '"' || c == ',')
                .filter(|w| !w.is_empty() && !w.starts_with('.'))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn every_section_and_key_of_the_configuration_is_in_player_toml_5_and_no_other() {
    let page = read("packaging/man/player.toml.5");
    let all = sections(&page);

    let e = Settings::from_toml("[zzzz]\n[[robot]]\n", "t.toml").expect_err("no section zzzz");
    let code: BTreeSet<String> = expected_names(&e.to_string())
        .into_iter()
        .map(|s| match s.as_str() {
            "robot" => "[[robot]]".to_string(),
            other => format!("[{other}]"),
        })
        .chain(["[[robot.driver]]".to_string()])
        .collect();
    assert!(
        code.contains("[ros2]") && code.contains("[web]"),
        "{code:?}"
    );
    let headed: BTreeSet<String> = all
        .iter()
        .map(|(h, _)| h.clone())
        .filter(|h| h.starts_with('['))
        .filter(|h| !h.contains(" of the "))
        .collect();
    same("sections", &code, &headed);

    let robot = "[[robot]]\n";
    let driver = "[[robot]]\n[[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\"]\n";
    let mut parts = vec![
        (
            "[server]".to_string(),
            format!("[server]\nzzzz = 1\n{robot}"),
        ),
        (
            "[access]".to_string(),
            format!("[access]\nzzzz = 1\n{robot}"),
        ),
        ("[[robot]]".to_string(), format!("{robot}zzzz = 1\n")),
        (
            "[[robot.driver]]".to_string(),
            format!("{driver}zzzz = 1\n"),
        ),
    ];
    for section in FRONT_ENDS.iter().flat_map(|e| e.syntax.sections) {
        parts.push((
            format!("[{section}]"),
            format!("[{section}]\nzzzz = 1\n{robot}"),
        ));
    }
    assert!(parts.len() >= 8, "{parts:?}");
    for (heading, toml) in parts {
        let code = config_keys(&toml);
        assert!(code.len() >= 2, "{heading}: {code:?}");
        same(&heading, &code, &keys(section(&all, &heading)));
    }
}

/// The lines of `--help` from the one starting with `from` to the next that starts with
/// none of the indent.
fn help_block(help: &str, from: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with(from))
        .skip(1)
        .take_while(|l| l.is_empty() || l.starts_with(' '))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_front_end_of_the_list_is_in_player_1_player_toml_5_and_the_help() {
    // The list holds every front-end crate: each that implements FrontEndKind.
    let mut crates = BTreeSet::new();
    for dir in std::fs::read_dir(Path::new(ROOT).join("actors")).unwrap() {
        let src = dir.unwrap().path().join("src");
        let Ok(files) = std::fs::read_dir(&src) else {
            continue;
        };
        for f in files {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap_or_default();
            for line in text
                .lines()
                .filter(|l| l.starts_with("impl FrontEndKind for "))
            {
                crates.insert(line.to_string());
            }
        }
    }
    assert_eq!(crates.len(), FRONT_ENDS.len(), "{crates:?}");
    let names: BTreeSet<String> = FRONT_ENDS.iter().map(|e| e.name.to_string()).collect();
    same(
        "front ends",
        &names,
        &set(&["web", "record", "zenoh", "ros2"]),
    );

    let out = Command::new(env!("CARGO_BIN_EXE_player"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let help_flags: BTreeSet<String> = help_block(&help, "FRONT ENDS")
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| is_flag(w))
        .map(str::to_string)
        .collect();
    let config = help_block(&help, "CONFIGURATION FILE");
    let man1 = sections(&read("packaging/man/player.1"));
    let man5 = sections(&read("packaging/man/player.toml.5"));
    let robot_keys = keys(section(&man5, "[[robot]]"));

    let listed: BTreeSet<String> = FRONT_ENDS
        .iter()
        .flat_map(|e| e.syntax.flags)
        .map(|f| f.flag.to_string())
        .collect();
    same(
        "front ends' flags in player(1)",
        &listed,
        &flags(section(&man1, "Front ends")),
    );
    same("front ends' flags in --help", &listed, &help_flags);
    for e in FRONT_ENDS {
        assert!(!e.syntax.flags.is_empty(), "{}", e.name);
        for s in e.syntax.sections {
            let heading = format!("[{s}]");
            assert!(
                man5.iter().any(|(h, _)| *h == heading),
                "{}: no {heading} in player.toml(5)",
                e.name
            );
            assert!(
                config.iter().any(|l| l.trim_start().starts_with(&heading)),
                "{}: no {heading} in --help",
                e.name
            );
        }
        for k in e.syntax.robot_keys {
            assert!(
                robot_keys.contains(*k),
                "{}: {k} not in player.toml(5)",
                e.name
            );
            assert!(
                config
                    .iter()
                    .any(|l| l.trim_start().starts_with(&format!("{k} ="))),
                "{}: {k} not in --help",
                e.name
            );
        }
    }
}

#[test]
fn every_driver_and_its_parameters_are_in_player_toml_5() {
    use player_drivers::{
        acts, amcl, bench, create, mapfile, p2os, passthrough, program, ptz, rplidar, sick, sim,
        urg, wavefront,
    };
    let page = read("packaging/man/player.toml.5");
    let all = sections(&page);
    let drivers: Vec<(&str, BTreeSet<String>)> = vec![
        ("sim", param_keys::<sim::SimParams>()),
        ("p2os", param_keys::<p2os::P2osParams>()),
        ("create", param_keys::<create::CreateParams>()),
        ("sicklms200", param_keys::<sick::SickParams>()),
        ("urg", param_keys::<urg::UrgParams>()),
        ("rplidar", param_keys::<rplidar::RplidarParams>()),
        ("sonyptz", param_keys::<ptz::PtzParams>()),
        ("acts", param_keys::<acts::ActsParams>()),
        (
            "replay",
            struct_fields("actors/drivers/src/replay/mod.rs", "Params"),
        ),
        (
            "passthrough",
            param_keys::<passthrough::PassthroughParams>(),
        ),
        ("program", param_keys::<program::ProgramParams>()),
        ("mapfile", param_keys::<mapfile::MapfileParams>()),
        (
            "wavefront",
            param_keys::<wavefront::params::WavefrontParams>(),
        ),
        ("amcl", param_keys::<amcl::AmclParams>()),
        ("bench", param_keys::<bench::BenchParams>()),
    ];
    let names: BTreeSet<String> = drivers.iter().map(|(n, _)| n.to_string()).collect();
    let registered: BTreeSet<String> = player::builtin_catalog()
        .names()
        .into_iter()
        .map(str::to_string)
        .collect();
    same("drivers (this test's list)", &registered, &names);
    let documented: BTreeSet<String> = all
        .iter()
        .filter_map(|(h, _)| h.strip_prefix("The ")?.strip_suffix(" driver"))
        .map(str::to_string)
        .collect();
    same("drivers", &registered, &documented);
    for (name, code) in &drivers {
        assert!(!code.is_empty(), "{name}");
        same(
            &format!("driver {name}"),
            code,
            &keys(section(&all, &format!("The {name} driver"))),
        );
    }
    assert!(
        drivers[8].1.contains("loop"),
        "replay's rename: {:?}",
        drivers[8].1
    );
    same(
        "program's devices",
        &param_keys::<program::DeviceParams>(),
        &keys(section(
            &all,
            "[[robot.driver.params.device]] of the program driver",
        )),
    );
    same(
        "program's restart_backoff",
        &param_keys::<program::BackoffParams>(),
        &keys(section(
            &all,
            "[robot.driver.params.restart_backoff] of the program driver",
        )),
    );
}

#[test]
fn the_example_of_player_toml_5_is_a_configuration_the_server_takes() {
    let page = read("packaging/man/player.toml.5");
    let all = sections(&page);
    let example = section(&all, "EXAMPLES");
    let start = example.iter().position(|l| l == ".nf").expect(".nf") + 1;
    let end = example.iter().position(|l| l == ".fi").expect(".fi");
    let toml = plain(&example[start..end].join("\n"));
    let s = Settings::from_toml(&toml, "player.toml(5) EXAMPLES").unwrap_or_else(|e| panic!("{e}"));
    assert!(s.record.enabled());
    // The drivers' parameters, which the drivers read when they start.
    let kinds: Vec<&str> = s.robot[0]
        .driver
        .iter()
        .map(|d| d.driver.as_str())
        .collect();
    assert_eq!(kinds, ["p2os", "sicklms200"]);
    let p2os: player_drivers::p2os::P2osParams = s.robot[0].driver[0]
        .params
        .clone()
        .try_deserialize()
        .unwrap_or_else(|e| panic!("p2os: {e}"));
    assert_eq!(p2os.port, "/dev/ttyS0");
    let sick: player_drivers::sick::SickParams = s.robot[0].driver[1]
        .params
        .clone()
        .try_deserialize()
        .unwrap_or_else(|e| panic!("sicklms200: {e}"));
    assert_eq!(sick.port, "/dev/ttyS1");
}

#[test]
fn every_command_and_option_of_player_cli_is_in_its_page() {
    let source = read("client/src/bin/player-cli/main.rs");
    let parse = between(&source, "fn parse(", "\nfn main");
    let code_flags: BTreeSet<String> = parse
        .lines()
        .flat_map(literals)
        .filter(|w| is_flag(w))
        .collect();
    let commands: BTreeSet<String> = parse
        .lines()
        .filter(|l| l.trim_start().starts_with("[\""))
        .filter_map(|l| literals(l).into_iter().next())
        .collect();
    assert_eq!(
        commands,
        set(&["list", "print", "joy", "estop", "goto", "cancel", "localize"])
    );
    let page = read("packaging/man/player-cli.1");
    let all = sections(&page);
    let mut page_flags = flags(section(&all, "OPTIONS"));
    page_flags.extend(flags(section(&all, "COMMANDS")));
    same("player-cli's options", &code_flags, &page_flags);
    let page_commands: BTreeSet<String> = tags(section(&all, "COMMANDS"))
        .iter()
        .filter_map(|t| t.split_whitespace().nth(1))
        .filter(|w| !w.starts_with('-'))
        .map(str::to_string)
        .collect();
    same("player-cli's commands", &commands, &page_commands);
}

#[test]
fn every_device_and_option_of_player_emulate_is_in_its_page() {
    let source = read("src/bin/player-emulate.rs");
    let code_flags = arm_flags(between(&source, "fn parse(", "\nfn serial"));
    let devices: BTreeSet<String> = between(&source, "match o.what.as_str()", "\nfn fault_cycle")
        .lines()
        .filter(|l| l.starts_with("        \"") && l.contains("=>"))
        .flat_map(|l| literals(l.split("=>").next().unwrap_or("")))
        .collect();
    assert!(
        devices.contains("all") && devices.contains("rplidar"),
        "{devices:?}"
    );
    let page = read("packaging/man/player-emulate.1");
    let all = sections(&page);
    same(
        "player-emulate's options",
        &code_flags,
        &flags(section(&all, "OPTIONS")),
    );
    same(
        "player-emulate's devices",
        &devices,
        &keys(section(&all, "DEVICES")),
    );
}

#[test]
fn the_pages_have_the_names_the_package_installs_them_under() {
    let manifest = read("Cargo.toml");
    for (file, th) in [
        ("player.1", ".TH PLAYER 1 "),
        ("player-cli.1", ".TH PLAYER-CLI 1 "),
        ("player-emulate.1", ".TH PLAYER-EMULATE 1 "),
        ("player.toml.5", ".TH PLAYER.TOML 5 "),
    ] {
        let page = read(&format!("packaging/man/{file}"));
        assert!(page.contains(th), "{file}: no '{th}'");
        let section = &file[file.rfind('.').unwrap() + 1..];
        let asset =
            format!("[\"packaging/man/{file}\", \"usr/share/man/man{section}/{file}\", \"644\"]");
        assert!(
            manifest.contains(&asset),
            "Cargo.toml's deb assets lack {asset}"
        );
    }
}
