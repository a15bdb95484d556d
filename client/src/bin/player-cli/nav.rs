//! `player-cli goto`, `cancel` and `localize`: the planner and the localizer from a
//! terminal (the navigation extensions, docs/extensions.md).
//!
//! - `goto X Y [A] [-t SECONDS]` sends the planner `G` a goal (mm, mm, degrees) and
//!   follows it: a line when its state changes and every second while it drives (where
//!   the robot is, how far is left, which waypoint), then how it ended. Exit status 0 when
//!   the goal is reached, 1 when it is not (no path, e-stop, pre-empted, cancelled,
//!   timed out). Ctrl-C, SIGTERM, SIGHUP and `-t` cancel the goal (`x G c`: the robot
//!   stops) before exiting; a `goto` killed outright stops the robot too, since the server
//!   stops a device whose writer left.
//! - `cancel` cancels the planner's goal, whoever sent it.
//! - `localize X Y [A] [-s MM] [-r DEG]` sets the localizer's `H` pose estimate (standard
//!   deviations 500 mm and 15° unless given) and prints its best hypothesis once it has
//!   taken it; `localize global` spreads its particles over the free space.

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use player_client::proto::nav::{Localize, Planner, PlannerState};
use player_client::{device, Client, Error, GoalWatch};

/// How often `goto` prints where the robot is while nothing else changes.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// How long `cancel` and `localize` wait for the planner or the localizer to show what
/// they asked (idle; the pose given).
const CONFIRM_WITHIN: Duration = Duration::from_secs(5);

/// A planner reading on one line: its state, the robot's pose, what is left to go to
/// `goal`.
fn planner_line(p: &Planner, goal: [i32; 3]) -> String {
    let left = f64::from(goal[0] - p.pose[0]).hypot(f64::from(goal[1] - p.pose[1]));
    let mut s = format!(
        "{:<10} at ({}, {}) mm {}°  {:.2} m to go",
        p.state.name(),
        p.pose[0],
        p.pose[1],
        p.pose[2],
        left / 1000.0
    );
    if p.waypoint_count > 0 && p.curr_waypoint >= 0 {
        s.push_str(&format!(
            "  waypoint {} of {}",
            p.curr_waypoint + 1,
            p.waypoint_count
        ));
    }
    s
}

/// `goto`: the goal sent and followed until it ends, `timeout` passes, or a signal comes.
pub fn goto(c: &mut Client, goal: [i32; 3], timeout: Option<Duration>) -> Result<ExitCode, Error> {
    let quit = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&quit))?;
    }
    c.set_notices(true)?;
    c.request_pairs(&[(device::PLANNER, b'a')])?.check()?;
    c.set_goal(goal[0], goal[1], goal[2])?;
    println!("goal ({}, {}) mm {}° sent", goal[0], goal[1], goal[2]);
    let mut watch = GoalWatch::new(goal);
    let mut out = std::io::stdout().lock();
    let mut shown: Option<(PlannerState, Instant)> = None;
    loop {
        let why = if quit.load(Ordering::Relaxed) {
            Some("cancelled")
        } else if timeout.is_some_and(|t| watch.elapsed() > t) {
            Some("timed out: cancelled")
        } else {
            None
        };
        if let Some(why) = why {
            c.planner_cancel()?;
            println!(
                "{why} after {:.1} s; the robot stops",
                watch.elapsed().as_secs_f64()
            );
            return Ok(ExitCode::FAILURE);
        }
        let round = c.read()?;
        let planner = round.planner;
        super::print_notices(c);
        let Some(p) = planner else { continue };
        if watch.ended(&p) {
            let ok = p.state == PlannerState::Reached && p.goal == goal;
            println!(
                "{} in {:.1} s",
                planner_line(&p, goal),
                watch.elapsed().as_secs_f64()
            );
            return Ok(if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        let due =
            shown.is_none_or(|(state, at)| state != p.state || at.elapsed() >= PROGRESS_EVERY);
        if p.goal == goal && !p.state.ends_goal() && due {
            if writeln!(out, "{}", planner_line(&p, goal))
                .and_then(|_| out.flush())
                .is_err()
            {
                return Ok(ExitCode::SUCCESS); // stdout closed: the goal goes on
            }
            shown = Some((p.state, Instant::now()));
        }
    }
}

/// `cancel`: the planner's goal cancelled.
pub fn cancel(c: &mut Client) -> Result<ExitCode, Error> {
    c.request_pairs(&[(device::PLANNER, b'a')])?.check()?;
    c.planner_cancel()?;
    let deadline = Instant::now() + CONFIRM_WITHIN;
    while Instant::now() < deadline {
        if let Some(p) = c.read()?.planner {
            if p.state == PlannerState::Idle {
                println!(
                    "cancelled: the planner is idle, the robot at ({}, {}) mm {}°",
                    p.pose[0], p.pose[1], p.pose[2]
                );
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    println!("cancel sent; the planner did not say idle within 5 s");
    Ok(ExitCode::FAILURE)
}

/// The best hypothesis of a localizer reading, on one line.
fn hypothesis_line(l: &Localize) -> String {
    match l.hypotheses.first() {
        Some(h) => format!("{h}  ({} hypotheses)", l.hypotheses.len()),
        None => "no hypothesis".into(),
    }
}

/// `localize`: the pose estimate set (`pose` mm, mm, degrees with standard deviations
/// `sd` mm and degrees), or global localization started (`None`); the localizer's best
/// hypothesis printed once it shows it.
pub fn localize(c: &mut Client, pose: Option<([i32; 3], [f64; 2])>) -> Result<ExitCode, Error> {
    c.set_notices(true)?;
    c.request_pairs(&[(device::LOCALIZE, b'r')])?.check()?;
    let Some((at, sd)) = pose else {
        c.global_localization()?;
        // The particles spread at once; a second of readings shows them.
        let until = Instant::now() + Duration::from_secs(1);
        let mut last = None;
        while Instant::now() < until || last.is_none() {
            if let Some(l) = c.read()?.localize.clone() {
                last = Some(l);
            }
            super::print_notices(c);
        }
        if let Some(l) = last {
            println!("global localization: {}", hypothesis_line(&l));
        }
        return Ok(ExitCode::SUCCESS);
    };
    c.set_pose(at[0], at[1], f64::from(at[2]), sd[0], sd[1])?;
    // Taken when the best hypothesis lies within the standard deviation given.
    let near = |l: &Localize| {
        l.hypotheses.first().is_some_and(|h| {
            f64::from(h.mean[0] - at[0]).hypot(f64::from(h.mean[1] - at[1])) <= sd[0].max(1.0)
        })
    };
    let deadline = Instant::now() + CONFIRM_WITHIN;
    let mut last = None;
    while Instant::now() < deadline {
        super::print_notices(c);
        if let Some(l) = c.read()?.localize.clone() {
            if near(&l) {
                println!("{}", hypothesis_line(&l));
                return Ok(ExitCode::SUCCESS);
            }
            last = Some(l);
        }
    }
    match last {
        Some(l) => println!(
            "the localizer did not show the pose within 5 s; its best: {}",
            hypothesis_line(&l)
        ),
        None => println!("no reading of the localizer within 5 s"),
    }
    Ok(ExitCode::FAILURE)
}
