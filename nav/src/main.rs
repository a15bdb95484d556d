//! `player-nav`: offline maps, localization and planning on public data (docs/navigation.md).
//!
//! ```text
//! player-nav localize carmen FILE.log[.gz] [--seed N] [--global] [--noise A1,A2,A3,A4]
//!                                          [--model likelihood_field|beam] [--particles MIN,MAX]
//!                                          [--set KEY=VALUE]... [--trace]
//! player-nav map carmen FILE.log[.gz] -o OUT.yaml
//! player-nav cells MAP.yaml -o CELLS.bin
//! player-nav cells --player IMAGE --resolution M [--negate] -o CELLS.bin
//! player-nav distance MAP.yaml -o DIST.bin
//! player-nav plan MAP.yaml [--pairs N] [--seed S] [--algorithm astar|wavefront] [--radius M]
//! ```
//!
//! - `localize`: runs the filter over a CARMEN log (map built from the log, seeded noisy
//!   odometry) and prints, as its last line, `localize: log=NAME scans=N ate_cm=X.X
//!   ate_deg=Y.Y max_cm=Z diverged=D seconds=S`. `--trace` prints every update's error.
//! - `map`: writes the map built from a log as PGM + YAML (map_server's format).
//! - `cells`: loads a map (map_server's rule from its YAML, or Player's from an image and a
//!   resolution) and writes its cells, one signed byte each (-1 free, 0 unknown, +1
//!   occupied), row-major from the lower-left; prints the size.
//! - `distance`: writes every cell's distance to the nearest occupied cell, in cells, as
//!   little-endian f32 (infinite when the map has no occupied cell), in the same order.
//!
//! Exit status: 0 on success, 1 when a file cannot be read or written, 2 on a usage error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use player_nav::amcl::Model;
use player_nav::carmen::{self, mapping::BuildParams, odometry::DEFAULT_NOISE};
use player_nav::distance::DistanceField;
use player_nav::localize::{self, Options};
use player_nav::map::{self, Map};

const USAGE: &str = "usage:
  player-nav localize carmen FILE.log[.gz] [--seed N] [--global] [--noise A1,A2,A3,A4]
                                           [--model likelihood_field|beam] [--particles MIN,MAX]
                                           [--set KEY=VALUE]... [--trace]
  player-nav map carmen FILE.log[.gz] -o OUT.yaml
  player-nav cells MAP.yaml -o CELLS.bin
  player-nav cells --player IMAGE --resolution M [--negate] -o CELLS.bin
  player-nav distance MAP.yaml -o DIST.bin
  player-nav plan MAP.yaml [--pairs N] [--seed S] [--algorithm astar|wavefront] [--radius M]
                          [--safety-dist M] [--max-radius M]";

/// A failure: a usage error (exit 2) or a run-time one (exit 1).
enum Failure {
    Usage(String),
    Run(String),
}

fn usage(msg: impl Into<String>) -> Failure {
    Failure::Usage(msg.into())
}

fn run_err(e: impl std::fmt::Display) -> Failure {
    Failure::Run(e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => {
            eprintln!("player-nav: {m}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Run(m)) => {
            eprintln!("player-nav: {m}");
            ExitCode::from(1)
        }
    }
}

fn dispatch(args: &[String]) -> Result<(), Failure> {
    match args.first().map(String::as_str) {
        Some("localize") => localize_cmd(&args[1..]),
        Some("map") => map_cmd(&args[1..]),
        Some("cells") => cells_cmd(&args[1..]),
        Some("distance") => distance_cmd(&args[1..]),
        Some("plan") => player_nav::plan::cli::run(&args[1..]).map_err(|e| match e {
            player_nav::plan::cli::CliError::Usage(m) => Failure::Usage(m),
            player_nav::plan::cli::CliError::Run(m) => Failure::Run(m),
        }),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(usage(format!("unknown command '{other}'"))),
        None => Err(usage("a command is needed")),
    }
}

/// The command line after the command: positional arguments and `--flag [value]` options.
struct Args {
    positional: Vec<String>,
    flags: Vec<(String, Option<String>)>,
}

/// Splits `args`; `valued` lists the flags that take a value.
fn split(args: &[String], valued: &[&str], bare: &[&str]) -> Result<Args, Failure> {
    let mut out = Args {
        positional: Vec::new(),
        flags: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if valued.contains(&a.as_str()) {
            let v = it
                .next()
                .ok_or_else(|| usage(format!("{a} needs a value")))?;
            out.flags.push((a.clone(), Some(v.clone())));
        } else if bare.contains(&a.as_str()) {
            out.flags.push((a.clone(), None));
        } else if a.starts_with('-') && a.len() > 1 {
            return Err(usage(format!("unknown option '{a}'")));
        } else {
            out.positional.push(a.clone());
        }
    }
    Ok(out)
}

impl Args {
    fn value(&self, flag: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(f, _)| f == flag)
            .and_then(|(_, v)| v.as_deref())
    }

    fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|(f, _)| f == flag)
    }

    fn output(&self) -> Result<PathBuf, Failure> {
        self.value("-o")
            .map(PathBuf::from)
            .ok_or_else(|| usage("-o OUTPUT is needed"))
    }
}

fn numbers(text: &str, n: usize, what: &str) -> Result<Vec<f64>, Failure> {
    let v: Vec<f64> = text
        .split(',')
        .map(|s| s.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| {
            usage(format!(
                "{what}: '{text}' is not {n} numbers separated by commas"
            ))
        })?;
    if v.len() != n || v.iter().any(|x| !x.is_finite() || *x < 0.0) {
        return Err(usage(format!(
            "{what}: '{text}' is not {n} numbers, each 0 or more"
        )));
    }
    Ok(v)
}

fn carmen_file(a: &Args) -> Result<PathBuf, Failure> {
    match a.positional.as_slice() {
        [kind, file] if kind == "carmen" => Ok(PathBuf::from(file)),
        [kind, _] => Err(usage(format!("unknown log kind '{kind}' (only 'carmen')"))),
        _ => Err(usage("expected: carmen FILE")),
    }
}

fn localize_cmd(args: &[String]) -> Result<(), Failure> {
    let started = Instant::now();
    let a = split(
        args,
        &["--seed", "--noise", "--model", "--particles", "--set"],
        &["--global", "--trace"],
    )?;
    let file = carmen_file(&a)?;
    let seed = match a.value("--seed") {
        Some(s) => s
            .parse::<u64>()
            .map_err(|_| usage(format!("--seed: '{s}' is not a whole number")))?,
        None => 1,
    };
    let noise = match a.value("--noise") {
        Some(t) => {
            let v = numbers(t, 4, "--noise")?;
            [v[0], v[1], v[2], v[3]]
        }
        None => DEFAULT_NOISE,
    };
    let mut opts = Options::new(seed, a.has("--global"), noise);
    match a.value("--model") {
        None | Some("likelihood_field") => {}
        Some("beam") => opts.params.model = Model::Beam,
        Some(m) => {
            return Err(usage(format!(
                "--model: '{m}' is not likelihood_field or beam"
            )))
        }
    }
    if let Some(t) = a.value("--particles") {
        let v = numbers(t, 2, "--particles")?;
        if v[0] < 1.0 || v[0] > v[1] || v[1] > 1e6 || v.iter().any(|x| x.fract() != 0.0) {
            return Err(usage(format!(
                "--particles: '{t}' is not MIN,MAX with 1 <= MIN <= MAX <= 1000000"
            )));
        }
        opts.params.min_particles = v[0] as usize;
        opts.params.max_particles = v[1] as usize;
    }
    for (flag, value) in &a.flags {
        if flag == "--set" {
            let v = value.as_deref().unwrap_or_default();
            let (key, val) = v
                .split_once('=')
                .ok_or_else(|| usage(format!("--set: '{v}' is not KEY=VALUE")))?;
            opts.params
                .set(key, val)
                .map_err(|e| usage(format!("--set: {e}")))?;
        }
    }
    let log = carmen::read(&file).map_err(run_err)?;
    let name = log.name.clone();
    let prep = localize::prepare(log, &BuildParams::default()).map_err(run_err)?;
    let m = prep.model.map();
    println!(
        "map: {} x {} cells at {} m, built from {} scans",
        m.width(),
        m.height(),
        m.resolution(),
        prep.scans.len()
    );
    let outcome = localize::run(&prep, &opts);
    if a.has("--trace") {
        for (k, ((d, t), s)) in outcome.errors.iter().zip(&outcome.stats).enumerate() {
            println!(
                "update {k}: {:.1} cm {:.2} deg particles {} resampled {} injected {} ess {:.0} beta {:.3} fit {:.3} expansions {}",
                d * 100.0,
                t.to_degrees(),
                s.particles,
                u8::from(s.resampled),
                s.injected,
                s.ess,
                s.beta,
                s.w_avg,
                s.expansions
            );
        }
    }
    println!(
        "updates: {} in {:.2} s of filter time ({:.2} ms each)",
        outcome.updates,
        outcome.filter_seconds,
        outcome.filter_seconds * 1e3 / outcome.updates.max(1) as f64
    );
    println!(
        "{}",
        localize::goal_line(&name, &outcome, started.elapsed().as_secs_f64())
    );
    Ok(())
}

fn map_cmd(args: &[String]) -> Result<(), Failure> {
    let a = split(args, &["-o"], &[])?;
    let file = carmen_file(&a)?;
    let out = a.output()?;
    let log = carmen::read(&file).map_err(run_err)?;
    let m = carmen::mapping::build(&log, &BuildParams::default()).map_err(run_err)?;
    let pgm = map::save::save(&m, &out).map_err(run_err)?;
    let (f, u, o) = m.counts();
    println!(
        "map: log={} width={} height={} resolution={} free={f} unknown={u} occupied={o} yaml={} image={}",
        log.name,
        m.width(),
        m.height(),
        m.resolution(),
        out.display(),
        pgm.display()
    );
    Ok(())
}

fn load(a: &Args) -> Result<(Map, String), Failure> {
    if let Some(image) = a.value("--player") {
        let res = a
            .value("--resolution")
            .ok_or_else(|| usage("--player needs --resolution M"))?;
        let res: f64 = res
            .parse()
            .map_err(|_| usage(format!("--resolution: '{res}' is not a number")))?;
        let m =
            map::load::load_player(Path::new(image), res, a.has("--negate")).map_err(run_err)?;
        return Ok((m, image.to_string()));
    }
    match a.positional.as_slice() {
        [yaml] => {
            let m = map::load::load_yaml(Path::new(yaml)).map_err(run_err)?;
            Ok((m, yaml.clone()))
        }
        _ => Err(usage(
            "expected one MAP.yaml (or --player IMAGE --resolution M)",
        )),
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Failure> {
    std::fs::write(path, bytes).map_err(|e| Failure::Run(format!("{}: {e}", path.display())))
}

fn cells_cmd(args: &[String]) -> Result<(), Failure> {
    let a = split(args, &["-o", "--player", "--resolution"], &["--negate"])?;
    let out = a.output()?;
    let (m, name) = load(&a)?;
    let bytes: Vec<u8> = m.cells().iter().map(|&c| c as u8).collect();
    write(&out, &bytes)?;
    let (f, u, o) = m.counts();
    let org = m.origin();
    println!(
        "cells: map={name} width={} height={} resolution={} origin={},{},{} free={f} unknown={u} occupied={o}",
        m.width(),
        m.height(),
        m.resolution(),
        org.x,
        org.y,
        org.theta
    );
    Ok(())
}

fn distance_cmd(args: &[String]) -> Result<(), Failure> {
    let a = split(args, &["-o", "--player", "--resolution"], &["--negate"])?;
    let out = a.output()?;
    let (m, name) = load(&a)?;
    let started = Instant::now();
    let d = DistanceField::to_occupied(&m);
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let mut bytes = Vec::with_capacity(4 * m.cells().len());
    for i in 0..m.cells().len() {
        bytes.extend_from_slice(&(d.cells_at(i) as f32).to_le_bytes());
    }
    write(&out, &bytes)?;
    println!(
        "distance: map={name} width={} height={} transform_ms={ms:.1}",
        m.width(),
        m.height()
    );
    Ok(())
}
