//! A client's messages on the channels it advertised, and its service calls, made into
//! what the robot is to be told: pure, the JSON in, an [`Action`] (a [`Call`] for a
//! service) out.
//!
//! Foxglove publishes in one of the encodings the server lists in `supportedEncodings`;
//! this server lists only `json` (a client channel advertised with another encoding is
//! refused), so every payload here is JSON: `geometry_msgs/Twist` on `/cmd_vel` (the
//! Teleop panel), `geometry_msgs/PoseStamped` (a goal for the planner `G`), `PointStamped`
//! and `PoseWithCovarianceStamped` (a pose estimate for the localizer `H`) from the 3D
//! panel's tools, and our own small objects on
//! the other topics and services. A number that is missing, not a number or not finite
//! counts as 0 (an empty twist stops the robot); numbers are rounded and clamped to the
//! range of the Player field, never wrapped. A goal's or pose estimate's heading is the
//! yaw of the rotation its quaternion stands for, of any length (as ROS reads one).
//!
//! Who may do what is not decided here but where the action is taken (the web viewer's
//! session, `player-web`), except for service calls, whose refusal comes before their
//! arguments are looked at ([`service`]). The goal and the pose estimate are made into
//! the planner's and the localizer's layouts by `player_proto::nav::si`, as every front
//! end makes them. The fuzz target `foxglove_commands` (`fuzz/`, docs/fuzzing.md) feeds
//! every target and service any JSON.

use bytes::Bytes;
use player_proto::data::{GripperCommand, PositionCommand, Ptz};
use player_proto::nav::si as fnav;
use player_proto::{config as codes, device};
use serde_json::Value;

/// What the client's published messages on a channel do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `geometry_msgs/Twist` (m/s, rad/s) → position command.
    CmdVel,
    /// `{pan_deg, tilt_deg, zoom}` → PTZ command.
    Ptz,
    /// `{command, arg}` → gripper command.
    Gripper,
    /// `{on}` → motor power config of the position device.
    MotorPower,
    /// `{latch}` → the robot's emergency stop (anyone may latch it; releasing it takes
    /// write rights).
    EStop,
    /// A tool of Foxglove's 3D panel that moves nothing (`/clicked_point`): accepted and
    /// logged.
    Tool(&'static str),
    /// `geometry_msgs/PoseStamped` (`/goal_pose`, `/move_base_simple/goal`: the 3D panel's
    /// goal) → the planner's (`G`) command, through the guard like `/cmd_vel`.
    Goal,
    /// `geometry_msgs/PoseWithCovarianceStamped` (`/initialpose`: the 3D panel's pose
    /// estimate) → the localizer's (`H`) `x H s` config; write rights needed.
    PoseEstimate,
}

/// The topics a client may publish on, for messages naming them.
pub const PUBLISH_TOPICS: &str = "/cmd_vel, /ptz/cmd, /gripper/cmd, /motor_power, /estop, \
/goal_pose, /move_base_simple/goal, /clicked_point, /initialpose";

/// Most characters of a tool's frame id repeated back to the client and the log.
const MAX_FRAME_ID: usize = 64;

/// Most argument bytes of a `/config` service call.
const MAX_CONFIG_ARGS: usize = 64;

/// What the robot is to be told.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A command for `device` (its Player command body), through the device's grant.
    Command {
        /// The device code.
        device: u8,
        /// The command body.
        payload: Bytes,
    },
    /// The position device's motors on or off (a config, through the registry).
    MotorPower(bool),
    /// A config for `device` (its code and arguments), through the registry; write rights
    /// needed.
    Config {
        /// The device code.
        device: u8,
        /// The config code and arguments.
        payload: Bytes,
    },
    /// Latch (`true`) or release the robot's emergency stop.
    EStop {
        /// Latch or release.
        latch: bool,
    },
    /// A 3D panel tool was used: noted, nothing moves.
    Tool(ToolUse),
}

/// What a service call asks, answered when the registry has done it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// Latch (`true`) or release the robot's emergency stop.
    EStop {
        /// Latch or release.
        latch: bool,
    },
    /// A config for `device` (the config code and its arguments), through the registry.
    Config {
        /// The device code.
        device: u8,
        /// The config code and its arguments.
        payload: Bytes,
    },
}

/// A 3D panel tool's point or pose.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    /// The tool's topic.
    pub topic: &'static str,
    /// Where, in metres in `frame`.
    pub x: f64,
    /// Where, in metres in `frame`.
    pub y: f64,
    /// The frame the client named (at most `MAX_FRAME_ID` characters).
    pub frame: String,
}

impl ToolUse {
    /// What the client is told.
    pub fn reply(&self) -> String {
        let what = match self.topic {
            "/move_base_simple/goal" => "goal ignored: player has no planner",
            "/initialpose" => "pose estimate ignored: player has no localizer",
            _ => "point noted",
        };
        let ToolUse { topic, x, y, frame } = self;
        format!("{topic} ({x:.2}, {y:.2}) in '{frame}': {what}")
    }
}

/// Why a message or a service call does nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The payload is not JSON.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// The client may not do this (the access policy).
    #[error("this client may not command the robot (access policy)")]
    Refused,
    /// A `/config` call's `device` or `code` is not one character.
    #[error("device and code are one character each")]
    DeviceAndCode,
    /// A `/config` call's `args` are too many or not bytes.
    #[error("args: at most 64 bytes (0 to 255)")]
    Args,
}

/// `payload` as JSON.
pub fn parse(payload: &[u8]) -> Result<Value, CommandError> {
    serde_json::from_slice(payload).map_err(|e| CommandError::NotJson(e.to_string()))
}

/// The number at `path` in `v`; 0 where it is missing, not a number or not finite.
fn num(v: &Value, path: &[&str]) -> f64 {
    let mut at = v;
    for k in path {
        at = &at[*k];
    }
    at.as_f64().filter(|x| x.is_finite()).unwrap_or(0.0)
}

/// `x` rounded into an `i16`.
fn i16_of(x: f64) -> i16 {
    x.round().clamp(f64::from(i16::MIN), f64::from(i16::MAX)) as i16
}

/// `x` rounded into a byte.
fn byte_of(x: f64) -> u8 {
    x.round().clamp(0.0, 255.0) as u8
}

impl Target {
    /// The target of messages on `topic` (a robot's own topic name, without the prefix of
    /// an endpoint serving several robots).
    pub fn of_topic(topic: &str) -> Option<Target> {
        match topic {
            "/cmd_vel" => Some(Target::CmdVel),
            "/ptz/cmd" => Some(Target::Ptz),
            "/gripper/cmd" => Some(Target::Gripper),
            "/motor_power" => Some(Target::MotorPower),
            "/estop" => Some(Target::EStop),
            "/goal_pose" | "/move_base_simple/goal" => Some(Target::Goal),
            "/clicked_point" => Some(Target::Tool("/clicked_point")),
            "/initialpose" => Some(Target::PoseEstimate),
            _ => None,
        }
    }

    /// The target on a robot serving `devices`: a goal or a pose estimate for a robot
    /// with no planner (`G`) or localizer (`H`) is the 3D panel's tool as before (accepted
    /// from anyone, logged, the client told nothing moves), so a panel that advertises its
    /// tools holds nothing and lists no problem.
    pub fn on_robot(self, devices: &[u8]) -> Target {
        match self {
            Target::Goal if !devices.contains(&device::PLANNER) => {
                Target::Tool("/move_base_simple/goal")
            }
            Target::PoseEstimate if !devices.contains(&device::LOCALIZE) => {
                Target::Tool("/initialpose")
            }
            t => t,
        }
    }

    /// The device the target commands (and needs write access to).
    pub fn writes(self) -> Option<u8> {
        match self {
            Target::CmdVel => Some(device::POSITION),
            Target::Ptz => Some(device::PTZ),
            Target::Gripper => Some(device::GRIPPER),
            Target::Goal => Some(device::PLANNER),
            Target::MotorPower | Target::EStop | Target::Tool(_) | Target::PoseEstimate => None,
        }
    }

    /// Whether a client that may not command may publish on it (the e-stop, whose
    /// release is checked per message, and the 3D panel's tools, which move nothing).
    pub fn harmless(self) -> bool {
        matches!(self, Target::EStop | Target::Tool(_))
    }

    /// What a message `payload` on this target asks.
    pub fn command(self, payload: &[u8]) -> Result<Action, CommandError> {
        let v = parse(payload)?;
        let command = |device, payload: Vec<u8>| Action::Command {
            device,
            payload: Bytes::from(payload),
        };
        Ok(match self {
            Target::CmdVel => {
                let c = PositionCommand {
                    speed: i16_of(num(&v, &["linear", "x"]) * 1000.0),
                    turn_rate: i16_of(num(&v, &["angular", "z"]).to_degrees()),
                };
                command(device::POSITION, c.encode())
            }
            Target::Ptz => {
                let z = Ptz {
                    pan: i16_of(num(&v, &["pan_deg"])),
                    tilt: i16_of(num(&v, &["tilt_deg"])),
                    zoom: i16_of(num(&v, &["zoom"])),
                };
                command(device::PTZ, z.encode())
            }
            Target::Gripper => {
                let g = GripperCommand {
                    command: byte_of(num(&v, &["command"])),
                    arg: byte_of(num(&v, &["arg"])),
                };
                command(device::GRIPPER, g.encode())
            }
            Target::MotorPower => Action::MotorPower(v["on"].as_bool().unwrap_or(false)),
            Target::EStop => Action::EStop {
                latch: v["latch"].as_bool().unwrap_or(true),
            },
            Target::Tool(topic) => Action::Tool(tool_use(topic, &v)),
            Target::Goal => {
                // Never refused: `planar`'s values are finite (so is every covariance below).
                let goal = fnav::goal(planar(&v["pose"])).unwrap_or_default();
                command(device::PLANNER, goal)
            }
            Target::PoseEstimate => {
                let pose = &v["pose"];
                let c = |i: usize| pose["covariance"][i].as_f64().filter(|x| x.is_finite());
                let idx = [0, 1, 5];
                let mut cov = [[0.0; 3]; 3];
                for (i, &a) in idx.iter().enumerate() {
                    for (j, &b) in idx.iter().enumerate() {
                        cov[i][j] = c(a * 6 + b).unwrap_or(0.0);
                    }
                }
                let payload = fnav::set_pose(planar(&pose["pose"]), cov).unwrap_or_default();
                Action::Config {
                    device: device::LOCALIZE,
                    payload: Bytes::from(payload),
                }
            }
        })
    }
}

/// A `geometry_msgs/Pose`'s x, y (m) and yaw (rad), all finite: the yaw of the rotation
/// its quaternion stands for, whatever the quaternion's length (a missing orientation,
/// all zero, is no turn).
fn planar(pose: &Value) -> [f64; 3] {
    let q = ["x", "y", "z", "w"].map(|k| num(pose, &["orientation", k]));
    [
        num(pose, &["position", "x"]),
        num(pose, &["position", "y"]),
        fnav::yaw(q),
    ]
}

/// A 3D panel tool's message: `geometry_msgs/PoseStamped` (`/move_base_simple/goal`),
/// `PointStamped` (`/clicked_point`) or `PoseWithCovarianceStamped` (`/initialpose`).
fn tool_use(topic: &'static str, v: &Value) -> ToolUse {
    let pose = if v["pose"]["pose"].is_object() {
        &v["pose"]["pose"]
    } else {
        &v["pose"]
    };
    let (x, y) = if topic == "/clicked_point" {
        (num(v, &["point", "x"]), num(v, &["point", "y"]))
    } else {
        (num(pose, &["position", "x"]), num(pose, &["position", "y"]))
    };
    let frame = v["header"]["frame_id"]
        .as_str()
        .unwrap_or("")
        .chars()
        .take(MAX_FRAME_ID)
        .collect();
    ToolUse { topic, x, y, frame }
}

/// A service call `name` with `request` (a service the endpoint advertises), for a
/// client that may command or not: the e-stop's (`{latch}`, latch by default; anyone may
/// latch it, releasing takes write rights), `/motor_power` (`{on}`), `/reset_odometry`,
/// and any device config (`{device, code, args}`: one character each and at most 64
/// bytes), the last three with write rights only, refused before their arguments are
/// looked at.
pub fn service(name: &str, request: &Value, may_write: bool) -> Result<Call, CommandError> {
    if name == "/estop" {
        let latch = request["latch"].as_bool().unwrap_or(true);
        if !latch && !may_write {
            return Err(CommandError::Refused);
        }
        return Ok(Call::EStop { latch });
    }
    if !may_write {
        return Err(CommandError::Refused);
    }
    let config = |device, payload: Vec<u8>| {
        Ok(Call::Config {
            device,
            payload: Bytes::from(payload),
        })
    };
    match name {
        "/motor_power" => {
            let on = request["on"].as_bool().unwrap_or(false);
            config(device::POSITION, vec![codes::MOTOR_POWER, u8::from(on)])
        }
        "/reset_odometry" => config(device::POSITION, vec![codes::RESET_ODOMETRY]),
        _ => {
            let one_char = |k: &str| match request[k].as_str().map(str::as_bytes) {
                Some([c]) => Some(*c),
                _ => None,
            };
            let (Some(device), Some(code)) = (one_char("device"), one_char("code")) else {
                return Err(CommandError::DeviceAndCode);
            };
            let args: Option<Vec<u8>> = match request["args"].as_array() {
                None => Some(Vec::new()),
                Some(a) if a.len() <= MAX_CONFIG_ARGS => a
                    .iter()
                    .map(|x| x.as_u64().and_then(|n| u8::try_from(n).ok()))
                    .collect(),
                Some(_) => None,
            };
            let Some(args) = args else {
                return Err(CommandError::Args);
            };
            let mut payload = vec![code];
            payload.extend_from_slice(&args);
            config(device, payload)
        }
    }
}

#[cfg(test)]
mod tests;
