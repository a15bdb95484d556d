//! The `wavefront` driver's parameters (`[robot.driver.params]`), as the configuration
//! writes them (millimetres, degrees), and their check into the navigator's SI units and
//! the devices the driver reads. Every refusal names the parameter and the reason.

use super::navigator::{ControllerKind, NavParams};
use player_kit::driver::DriverError;
use player_nav::control::Tolerance;
use player_nav::plan::{Algorithm, CostParams};
use serde::Deserialize;

/// Parameters of the `wavefront` driver.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WavefrontParams {
    /// `"wavefront"` (Player's full-grid wavefront; the default) or `"astar"`.
    #[serde(default = "default_algorithm")]
    pub algorithm: String,
    /// `"vfh"` (VFH+, Player's defaults; the default) or `"pure_pursuit"` (regulated).
    #[serde(default = "default_controller")]
    pub controller: String,
    /// Extra clearance kept where the map allows, m (default 0.25).
    #[serde(default = "quarter")]
    pub safety_dist: f64,
    /// The reach of the cost near obstacles, m (default 1.0).
    #[serde(default = "one")]
    pub max_radius: f64,
    /// The robot's radius, m: the planner keeps its centre this far from the map's
    /// obstacles (default 0.25).
    #[serde(default = "quarter")]
    pub robot_radius: f64,
    /// Top speed, mm/s (default 200 with vfh, Player's; 500 with pure_pursuit, Nav2's).
    #[serde(default)]
    pub max_speed: Option<f64>,
    /// Top turn rate, deg/s (default 40 with vfh, Player's; 100 with pure_pursuit).
    #[serde(default)]
    pub max_turn: Option<f64>,
    /// `[mm, deg]` within which the goal counts as reached (default [250, 15]).
    #[serde(default = "default_tolerance")]
    pub goal_tolerance: [f64; 2],
    /// Seconds between replans while driving (default 2).
    #[serde(default = "two")]
    pub replan_period: f64,
    /// The map device read (default `"M"`).
    #[serde(default = "map_device")]
    pub map: String,
    /// Where the pose on the map comes from (default `"p"`): a position device (the
    /// 21-byte layout, a map-frame `p`), `"P"` (the 25-byte full-precision odometry) or
    /// `"H"` (a localizer's best hypothesis); told apart by the reading's size.
    #[serde(default = "base_device")]
    pub pose: String,
    /// The base driven (and read for its speed; default `"p"`).
    #[serde(default = "base_device")]
    pub base: String,
    /// The laser read (its 361-bin 0.7.4a view; default `"l"`).
    #[serde(default = "laser_device")]
    pub laser: String,
    /// Where the laser sits on the robot, `[x mm, y mm, heading deg]` (default at the
    /// centre, facing forward).
    #[serde(default)]
    pub laser_pose: [f64; 3],
    /// Where the pose device's frame lies on the map, `[x mm, y mm, heading deg]`
    /// (default the map's own): for odometry read as the pose without a localizer (the
    /// simulator's `p` starts at 0 where the robot starts: give the start pose here).
    #[serde(default)]
    pub pose_origin: [f64; 3],
}

fn default_algorithm() -> String {
    "wavefront".into()
}
fn default_controller() -> String {
    "vfh".into()
}
fn quarter() -> f64 {
    0.25
}
fn one() -> f64 {
    1.0
}
fn two() -> f64 {
    2.0
}
fn default_tolerance() -> [f64; 2] {
    [250.0, 15.0]
}
fn map_device() -> String {
    "M".into()
}
fn base_device() -> String {
    "p".into()
}
fn laser_device() -> String {
    "l".into()
}

/// The devices the driver reads and drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Devices {
    /// The map.
    pub map: u8,
    /// The pose on the map.
    pub pose: u8,
    /// The base (driven, and read for its speed).
    pub base: u8,
    /// The laser.
    pub laser: u8,
}

/// The checked parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Checked {
    /// The navigator's.
    pub nav: NavParams,
    /// The devices.
    pub devices: Devices,
    /// The laser's mount: x, y (m), heading (rad).
    pub laser_pose: [f64; 3],
    /// The pose device's frame on the map: x, y (m), heading (rad).
    pub pose_origin: [f64; 3],
}

fn bad(key: &str, why: impl std::fmt::Display) -> DriverError {
    DriverError::params(format!("wavefront parameter '{key}': {why}"))
}

fn code(key: &str, s: &str) -> Result<u8, DriverError> {
    match s.as_bytes() {
        [c] if c.is_ascii_graphic() => Ok(*c),
        _ => Err(bad(key, format!("'{s}' is not one device code"))),
    }
}

fn within(key: &str, v: f64, lo: f64, hi: f64) -> Result<f64, DriverError> {
    if v.is_finite() && v > lo && v <= hi {
        Ok(v)
    } else {
        Err(bad(key, format!("{v} must be above {lo} and at most {hi}")))
    }
}

impl WavefrontParams {
    /// Checks every value; the navigator's parameters in SI units.
    pub fn check(&self) -> Result<Checked, DriverError> {
        let algorithm: Algorithm = self.algorithm.parse().map_err(|e| bad("algorithm", e))?;
        let controller = match self.controller.as_str() {
            "vfh" => ControllerKind::Vfh,
            "pure_pursuit" => ControllerKind::PurePursuit,
            other => {
                return Err(bad(
                    "controller",
                    format!("'{other}': expected \"vfh\" or \"pure_pursuit\""),
                ))
            }
        };
        let (speed, turn) = match controller {
            ControllerKind::Vfh => (200.0, 40.0),
            ControllerKind::PurePursuit => (500.0, 100.0),
        };
        let max_speed = within("max_speed", self.max_speed.unwrap_or(speed), 0.0, 5000.0)?;
        let max_turn = within("max_turn", self.max_turn.unwrap_or(turn), 0.0, 360.0)?;
        let [tol_mm, tol_deg] = self.goal_tolerance;
        within("goal_tolerance", tol_mm, 0.0, 10_000.0)?;
        within("goal_tolerance", tol_deg, 0.0, 180.0)?;
        within("robot_radius", self.robot_radius, 0.0, 10.0)?;
        within("replan_period", self.replan_period, 0.0, 3600.0)?;
        let cost = CostParams {
            radius: self.robot_radius,
            safety_dist: self.safety_dist,
            max_radius: self.max_radius,
            ..CostParams::default()
        };
        cost.check().map_err(|e| bad("safety_dist", e))?;
        for (key, v) in [
            ("laser_pose", self.laser_pose),
            ("pose_origin", self.pose_origin),
        ] {
            if !v.iter().all(|x| x.is_finite() && x.abs() <= 1e9) {
                return Err(bad(key, "must be three finite numbers"));
            }
        }
        let si = |v: [f64; 3]| [v[0] / 1000.0, v[1] / 1000.0, v[2].to_radians()];
        let devices = Devices {
            map: code("map", &self.map)?,
            pose: code("pose", &self.pose)?,
            base: code("base", &self.base)?,
            laser: code("laser", &self.laser)?,
        };
        Ok(Checked {
            nav: NavParams {
                algorithm,
                cost,
                controller,
                max_speed: max_speed / 1000.0,
                max_turn: max_turn.to_radians(),
                tolerance: Tolerance {
                    distance: tol_mm / 1000.0,
                    heading: tol_deg.to_radians(),
                },
                replan_period: self.replan_period,
            },
            devices,
            laser_pose: si(self.laser_pose),
            pose_origin: si(self.pose_origin),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Checked, String> {
        let v: WavefrontParams = config::Config::builder()
            .add_source(config::File::from_str(text, config::FileFormat::Toml))
            .build()
            .and_then(|c| c.try_deserialize())
            .map_err(|e| e.to_string())?;
        v.check().map_err(|e| e.text)
    }

    #[test]
    fn defaults_are_the_issues_and_the_controllers() {
        let c = parse("").unwrap();
        assert_eq!(c.nav.algorithm, Algorithm::Wavefront);
        assert_eq!(c.nav.controller, ControllerKind::Vfh);
        assert_eq!((c.nav.max_speed, c.nav.cost.safety_dist), (0.2, 0.25));
        assert_eq!(c.nav.cost.max_radius, 1.0);
        assert_eq!(c.nav.tolerance.distance, 0.25);
        assert!((c.nav.tolerance.heading - 15f64.to_radians()).abs() < 1e-12);
        assert_eq!(c.devices.pose, b'p');
        let c =
            parse("controller = \"pure_pursuit\"\nalgorithm = \"astar\"\npose = \"H\"").unwrap();
        assert_eq!(c.nav.max_speed, 0.5);
        assert_eq!(c.nav.algorithm, Algorithm::AStar);
        assert_eq!(c.devices.pose, b'H');
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        for (text, key) in [
            ("algorithm = \"dijkstra\"", "algorithm"),
            ("controller = \"dwa\"", "controller"),
            ("max_speed = -1.0", "max_speed"),
            ("goal_tolerance = [0.0, 15.0]", "goal_tolerance"),
            ("replan_period = 0.0", "replan_period"),
            ("pose = \"HH\"", "pose"),
            ("safety_dist = -0.1", "safety_dist"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(&format!("'{key}'")), "{text}: {e}");
        }
        assert!(parse("speed = 1.0").unwrap_err().contains("speed"));
    }
}
