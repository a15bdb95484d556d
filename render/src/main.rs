//! `player-render`: draws a simulator world file to PNG: walls, obstacles, coloured objects,
//! pucks and robots, with every robot's laser scan and sonar cones as it senses them from its
//! pose. Robots can be placed by hand (`--pose`) or where a ground-truth log left them
//! (`--truth`, which also draws their paths), so a picture shows what a controller saw.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use player_sim::render::{render, RenderOptions};
use player_sim::{SimWorld, TruthRecord, WorldMap};

const HELP: &str = "\
player-render: draw a simulator world to PNG

USAGE:
    player-render WORLD [OPTIONS]

WORLD is a world file (TOML, see config/worlds/room.toml) or `room` for the built-in room.

OPTIONS:
    -o, --output FILE        The PNG to write (default: the world's name + .png)
    --scale PX               Pixels per metre (default 50)
    --no-laser               Leave out the laser scans
    --no-sonar               Leave out the sonar cones
    --pose NAME=X,Y,DEG      Put robot NAME at X, Y (mm) facing DEG degrees (repeatable)
    --ptz NAME=PAN,TILT,ZOOM Point robot NAME's camera (drawn robots sense from there)
    --truth LOG              Draw each robot's path from a ground-truth log (CSV or JSON
                             lines, as the [truth] section writes) and put it at its last pose
    --drive NAME=SPEED,TURN  Drive robot NAME at SPEED mm/s and TURN degrees/s during --run
                             (repeatable); its path is drawn
    --run SECONDS            Step the world this long before drawing (cameras slew to their
                             --ptz targets, --drive robots move)
    -h, --help               Print this text
";

struct Args {
    world: String,
    output: Option<PathBuf>,
    opts: RenderOptions,
    poses: Vec<(String, f64, f64, f64)>,
    ptz: Vec<(String, i16, i16, i16)>,
    drive: Vec<(String, i16, i16)>,
    truth: Option<PathBuf>,
    run: f64,
}

fn named_triple<T: std::str::FromStr>(flag: &str, v: &str) -> Result<(String, [T; 3]), String> {
    let bad = || format!("{flag} '{v}': expected NAME=A,B,C");
    let (name, rest) = v.split_once('=').ok_or_else(bad)?;
    let nums: Vec<T> = rest
        .split(',')
        .map(|s| s.trim().parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    let [a, b, c]: [T; 3] = nums.try_into().map_err(|_| bad())?;
    Ok((name.to_string(), [a, b, c]))
}

fn parse(args: &[String]) -> Result<Option<Args>, String> {
    let mut out = Args {
        world: String::new(),
        output: None,
        opts: RenderOptions::default(),
        poses: Vec::new(),
        ptz: Vec::new(),
        drive: Vec::new(),
        truth: None,
        run: 0.0,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value (see --help)"))
        };
        match a.as_str() {
            "-h" | "--help" => return Ok(None),
            "-o" | "--output" => out.output = Some(PathBuf::from(value()?)),
            "--scale" => {
                let v = value()?;
                out.opts.scale = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && (1.0..=1000.0).contains(s))
                    .ok_or_else(|| format!("--scale '{v}': pixels per metre, 1 to 1000"))?;
            }
            "--no-laser" => out.opts.laser = false,
            "--no-sonar" => out.opts.sonar = false,
            "--pose" => {
                let (name, [x, y, d]) = named_triple::<f64>(a, &value()?)?;
                out.poses.push((name, x, y, d));
            }
            "--ptz" => {
                let (name, [p, t, z]) = named_triple::<i16>(a, &value()?)?;
                out.ptz.push((name, p, t, z));
            }
            "--drive" => {
                let v = value()?;
                let bad = || format!("--drive '{v}': expected NAME=SPEED,TURN");
                let (name, rest) = v.split_once('=').ok_or_else(bad)?;
                let (speed, turn) = rest.split_once(',').ok_or_else(bad)?;
                let speed = speed.trim().parse().map_err(|_| bad())?;
                let turn = turn.trim().parse().map_err(|_| bad())?;
                out.drive.push((name.to_string(), speed, turn));
            }
            "--truth" => out.truth = Some(PathBuf::from(value()?)),
            "--run" => {
                let v = value()?;
                out.run = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && (0.0..=3600.0).contains(s))
                    .ok_or_else(|| format!("--run '{v}': seconds, 0 to 3600"))?;
            }
            s if s.starts_with('-') => return Err(format!("unknown option '{s}' (see --help)")),
            s if out.world.is_empty() => out.world = s.to_string(),
            s => return Err(format!("one world at a time: '{s}' is extra")),
        }
    }
    if out.world.is_empty() {
        return Err("which world? (see --help)".into());
    }
    Ok(Some(out))
}

fn run(args: Args) -> Result<PathBuf, String> {
    let map = if args.world == "room" {
        WorldMap::default_room()
    } else {
        WorldMap::from_file(Path::new(&args.world)).map_err(|e| e.to_string())?
    };
    let mut world = SimWorld::new(Arc::new(map));
    let index = |world: &SimWorld, name: &str| {
        world.index_of(name).ok_or_else(|| {
            format!(
                "the world has no robot '{name}' (it has: {})",
                world.names().join(", ")
            )
        })
    };
    let mut opts = args.opts;
    if let Some(path) = &args.truth {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut paths: BTreeMap<String, Vec<TruthRecord>> = BTreeMap::new();
        for r in text.lines().filter_map(TruthRecord::parse) {
            paths.entry(r.robot.clone()).or_default().push(r);
        }
        if paths.is_empty() {
            return Err(format!("{}: no truth records in it", path.display()));
        }
        for (name, records) in &paths {
            let i = index(&world, name)?;
            if let Some(last) = records.last() {
                world
                    .robot_mut(i)
                    .set_true_pose(last.x, last.y, last.heading.to_radians());
            }
            opts.paths
                .push(records.iter().map(|r| (r.x, r.y)).collect::<Vec<_>>());
        }
    }
    for (name, x, y, deg) in &args.poses {
        let i = index(&world, name)?;
        world.robot_mut(i).set_true_pose(*x, *y, deg.to_radians());
    }
    for (name, p, t, z) in &args.ptz {
        let i = index(&world, name)?;
        world.robot_mut(i).set_ptz(*p, *t, *z);
    }
    let mut driven = Vec::new();
    for (name, speed, turn) in &args.drive {
        let i = index(&world, name)?;
        world.robot_mut(i).set_velocity(*speed, *turn);
        driven.push(i);
    }
    let mut trails: Vec<Vec<(f64, f64)>> = vec![Vec::new(); driven.len()];
    let ticks = (args.run / 0.01).round() as u64;
    for t in 0..=ticks {
        if t % 10 == 0 || t == ticks {
            for (trail, &i) in trails.iter_mut().zip(&driven) {
                let (x, y, _) = world.robot(i).true_pose();
                trail.push((x, y));
            }
        }
        if t < ticks {
            world.tick();
        }
    }
    opts.paths.extend(trails);
    let image = render(&world, &opts);
    let output = args
        .output
        .unwrap_or_else(|| PathBuf::from(format!("{}.png", world.map().name())));
    let file = std::fs::File::create(&output)
        .map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    image
        .write_png(std::io::BufWriter::new(file))
        .map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    Ok(output)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args) {
        Ok(None) => {
            print!("{HELP}");
            ExitCode::SUCCESS
        }
        Ok(Some(a)) => match run(a) {
            Ok(out) => {
                println!("{}", out.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("player-render: {e}");
                ExitCode::from(1)
            }
        },
        Err(e) => {
            eprintln!("player-render: {e}");
            ExitCode::from(2)
        }
    }
}
