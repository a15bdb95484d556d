//! The rules of `commands.rs`, per topic and service, on the JSON Foxglove sends.

use super::*;
use serde_json::json;

fn on(target: Target, v: Value) -> Result<Action, CommandError> {
    target.command(v.to_string().as_bytes())
}

fn position(speed: i16, turn_rate: i16) -> Action {
    Action::Command {
        device: device::POSITION,
        payload: Bytes::from(PositionCommand { speed, turn_rate }.encode()),
    }
}

fn config(device: u8, payload: &[u8]) -> Result<Call, CommandError> {
    Ok(Call::Config {
        device,
        payload: Bytes::copy_from_slice(payload),
    })
}

/// A `std_msgs/Header` as Foxglove's 3D panel stamps it.
fn header(frame: &str) -> Value {
    json!({"stamp": {"sec": 1_700_000_000, "nsec": 250_000_000}, "frame_id": frame})
}

#[test]
fn every_publish_topic_has_a_target_and_only_those() {
    for topic in PUBLISH_TOPICS.split(", ") {
        assert!(Target::of_topic(topic).is_some(), "{topic}");
    }
    assert_eq!(Target::of_topic("/cmd_vel"), Some(Target::CmdVel));
    assert_eq!(Target::of_topic("/pose"), None);
    assert_eq!(Target::of_topic("cmd_vel"), None);
}

#[test]
fn only_the_e_stop_and_the_tools_are_harmless_and_only_devices_are_written() {
    let all = PUBLISH_TOPICS.split(", ").filter_map(Target::of_topic);
    for t in all {
        let harmless = matches!(t, Target::EStop | Target::Tool(_));
        assert_eq!(t.harmless(), harmless, "{t:?}");
        if harmless || t == Target::MotorPower {
            assert_eq!(t.writes(), None, "{t:?}");
        }
    }
    assert_eq!(Target::CmdVel.writes(), Some(device::POSITION));
    assert_eq!(Target::Ptz.writes(), Some(device::PTZ));
    assert_eq!(Target::Gripper.writes(), Some(device::GRIPPER));
}

#[test]
fn a_twist_drives_at_its_linear_x_in_mm_s_and_turns_at_its_angular_z_in_degrees_s() {
    // Foxglove's Teleop panel: a full geometry_msgs/Twist.
    let twist = json!({"linear": {"x": 0.25, "y": 0.0, "z": 0.0},
        "angular": {"x": 0.0, "y": 0.0, "z": 0.5}});
    assert_eq!(on(Target::CmdVel, twist), Ok(position(250, 29)));
    let back = json!({"linear": {"x": -0.1}, "angular": {"z": -1.0}});
    assert_eq!(on(Target::CmdVel, back), Ok(position(-100, -57)));
}

#[test]
fn a_twist_missing_fields_or_with_non_numbers_counts_them_as_zero_so_an_empty_one_stops() {
    assert_eq!(on(Target::CmdVel, json!({})), Ok(position(0, 0)));
    let odd = json!({"linear": {"x": "fast"}, "angular": {"z": null}});
    assert_eq!(on(Target::CmdVel, odd), Ok(position(0, 0)));
}

#[test]
fn a_twist_beyond_the_player_range_is_clamped_not_wrapped() {
    let far = json!({"linear": {"x": 1e9}, "angular": {"z": -1e9}});
    assert_eq!(on(Target::CmdVel, far), Ok(position(i16::MAX, i16::MIN)));
}

#[test]
fn a_ptz_command_takes_degrees_and_zoom_rounded() {
    let v = json!({"pan_deg": 30.4, "tilt_deg": -10.6, "zoom": 512});
    let z = Ptz {
        pan: 30,
        tilt: -11,
        zoom: 512,
    };
    let want = Action::Command {
        device: device::PTZ,
        payload: Bytes::from(z.encode()),
    };
    assert_eq!(on(Target::Ptz, v), Ok(want));
}

#[test]
fn a_gripper_command_and_argument_are_bytes_clamped_to_0_255() {
    let g = |command, arg| Action::Command {
        device: device::GRIPPER,
        payload: Bytes::from(GripperCommand { command, arg }.encode()),
    };
    assert_eq!(on(Target::Gripper, json!({"command": 1})), Ok(g(1, 0)));
    let v = json!({"command": 300, "arg": -5});
    assert_eq!(on(Target::Gripper, v), Ok(g(255, 0)));
}

#[test]
fn motor_power_is_off_unless_on_is_true() {
    let m = |v| on(Target::MotorPower, v);
    assert_eq!(m(json!({"on": true})), Ok(Action::MotorPower(true)));
    assert_eq!(m(json!({"on": false})), Ok(Action::MotorPower(false)));
    assert_eq!(m(json!({"on": 1})), Ok(Action::MotorPower(false)));
    assert_eq!(m(json!({})), Ok(Action::MotorPower(false)));
}

#[test]
fn the_e_stop_latches_unless_latch_is_false() {
    let e = |v| on(Target::EStop, v);
    assert_eq!(e(json!({"latch": true})), Ok(Action::EStop { latch: true }));
    assert_eq!(e(json!({})), Ok(Action::EStop { latch: true }));
    assert_eq!(
        e(json!({"latch": false})),
        Ok(Action::EStop { latch: false })
    );
}

#[test]
fn a_goal_from_the_3d_panel_is_noted_at_its_pose_and_nothing_moves() {
    // geometry_msgs/PoseStamped.
    let goal = json!({"header": header("map"), "pose": {
        "position": {"x": 1.5, "y": -2.0, "z": 0.0},
        "orientation": {"x": 0.0, "y": 0.0, "z": 0.6, "w": 0.8}}});
    let topic = "/move_base_simple/goal";
    let Ok(Action::Tool(t)) = on(Target::Tool(topic), goal) else {
        panic!("a tool use");
    };
    assert_eq!((t.x, t.y, t.frame.as_str()), (1.5, -2.0, "map"));
    assert_eq!(
        t.reply(),
        "/move_base_simple/goal (1.50, -2.00) in 'map': goal ignored: player has no planner"
    );
}

#[test]
fn an_initial_pose_is_read_from_inside_its_covariance_wrapper() {
    // geometry_msgs/PoseWithCovarianceStamped.
    let pose = json!({"header": header("odom"), "pose": {"pose": {
        "position": {"x": 0.5, "y": 0.25, "z": 0.0},
        "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}},
        "covariance": vec![0.0; 36]}});
    let Ok(Action::Tool(t)) = on(Target::Tool("/initialpose"), pose) else {
        panic!("a tool use");
    };
    assert_eq!((t.x, t.y, t.frame.as_str()), (0.5, 0.25, "odom"));
    assert!(t
        .reply()
        .ends_with("pose estimate ignored: player has no localizer"));
}

#[test]
fn a_clicked_point_is_read_from_its_point() {
    // geometry_msgs/PointStamped.
    let point = json!({"header": header("base_link"), "point": {"x": 3.0, "y": 4.0, "z": 0.0}});
    let Ok(Action::Tool(t)) = on(Target::Tool("/clicked_point"), point) else {
        panic!("a tool use");
    };
    assert_eq!(
        t.reply(),
        "/clicked_point (3.00, 4.00) in 'base_link': point noted"
    );
}

#[test]
fn a_tool_s_frame_id_is_cut_to_its_bound() {
    let long = "f".repeat(1000);
    let v = json!({"header": header(&long), "point": {"x": 0, "y": 0}});
    let Ok(Action::Tool(t)) = on(Target::Tool("/clicked_point"), v) else {
        panic!("a tool use");
    };
    assert_eq!(t.frame.len(), MAX_FRAME_ID);
}

#[test]
fn a_message_that_is_not_json_is_an_error_naming_why() {
    for target in [
        Target::CmdVel,
        Target::EStop,
        Target::Tool("/clicked_point"),
    ] {
        let e = target.command(b"{\"linear\":").unwrap_err();
        assert!(
            matches!(&e, CommandError::NotJson(why) if why.contains("EOF")),
            "{e}"
        );
        assert!(e.to_string().starts_with("not JSON: "), "{e}");
    }
}

#[test]
fn anyone_may_latch_the_e_stop_by_service_and_only_a_writer_release_it() {
    let latch = json!({"latch": true});
    let release = json!({"latch": false});
    assert_eq!(
        service("/estop", &latch, false),
        Ok(Call::EStop { latch: true })
    );
    assert_eq!(
        service("/estop", &json!({}), false),
        Ok(Call::EStop { latch: true })
    );
    assert_eq!(
        service("/estop", &release, false),
        Err(CommandError::Refused)
    );
    assert_eq!(
        service("/estop", &release, true),
        Ok(Call::EStop { latch: false })
    );
}

#[test]
fn every_other_service_is_refused_without_write_rights_before_its_arguments_are_read() {
    for name in ["/motor_power", "/reset_odometry", "/config"] {
        assert_eq!(
            service(name, &json!({"device": "too long"}), false),
            Err(CommandError::Refused),
            "{name}"
        );
    }
}

#[test]
fn motor_power_and_odometry_reset_are_configs_of_the_position_device() {
    let on = service("/motor_power", &json!({"on": true}), true);
    assert_eq!(on, config(b'p', &[codes::MOTOR_POWER, 1]));
    let off = service("/motor_power", &json!({}), true);
    assert_eq!(off, config(b'p', &[codes::MOTOR_POWER, 0]));
    let reset = service("/reset_odometry", &json!({}), true);
    assert_eq!(reset, config(b'p', &[codes::RESET_ODOMETRY]));
}

#[test]
fn a_config_call_names_device_and_code_by_one_character_with_at_most_64_byte_args() {
    let c = |v: Value| service("/config", &v, true);
    assert_eq!(
        c(json!({"device": "p", "code": "m", "args": [1]})),
        config(b'p', b"m\x01")
    );
    assert_eq!(c(json!({"device": "z", "code": "Z"})), config(b'z', b"Z"));
    let max = vec![255; 64];
    let mut want = vec![b'x'];
    want.extend_from_slice(&max);
    assert_eq!(
        c(json!({"device": "p", "code": "x", "args": max})),
        config(b'p', &want)
    );
    let two = json!({"device": "pp", "code": "m"});
    assert_eq!(c(two), Err(CommandError::DeviceAndCode));
    assert_eq!(c(json!({"code": "m"})), Err(CommandError::DeviceAndCode));
    let many = json!({"device": "p", "code": "m", "args": vec![0; 65]});
    assert_eq!(c(many), Err(CommandError::Args));
    let wide = json!({"device": "p", "code": "m", "args": [256]});
    assert_eq!(c(wide), Err(CommandError::Args));
    let negative = json!({"device": "p", "code": "m", "args": [-1]});
    assert_eq!(c(negative), Err(CommandError::Args));
}

#[test]
fn a_goal_becomes_the_planners_command_and_a_pose_estimate_its_config() {
    use player_proto::nav::{Goal, SetPose};
    for topic in ["/goal_pose", "/move_base_simple/goal"] {
        assert_eq!(Target::of_topic(topic), Some(Target::Goal));
    }
    assert_eq!(Target::Goal.writes(), Some(device::PLANNER));
    assert!(!Target::Goal.harmless() && !Target::PoseEstimate.harmless());
    // Yaw 2 * atan2(0.6, 0.8) = 73.7 degrees.
    let goal = json!({"header": header("map"), "pose": {
        "position": {"x": 1.5, "y": -2.0, "z": 0.0},
        "orientation": {"x": 0.0, "y": 0.0, "z": 0.6, "w": 0.8}}});
    let Ok(Action::Command { device: d, payload }) = on(Target::Goal, goal) else {
        panic!("a command");
    };
    assert_eq!(d, device::PLANNER);
    let g = Goal::decode(&payload).unwrap();
    assert_eq!((g.x, g.y, g.a), (1500, -2000, 74));
    assert_eq!(Target::of_topic("/initialpose"), Some(Target::PoseEstimate));
    // A robot with no planner or localizer: the tools as before.
    assert_eq!(
        Target::Goal.on_robot(b"psl"),
        Target::Tool("/move_base_simple/goal")
    );
    assert_eq!(
        Target::PoseEstimate.on_robot(b"psl"),
        Target::Tool("/initialpose")
    );
    assert_eq!(Target::Goal.on_robot(b"pG"), Target::Goal);
    let mut cov = vec![0.0; 36];
    cov[0] = 0.25;
    cov[35] = 0.0685;
    let pose = json!({"header": header("map"), "pose": {"pose": {
        "position": {"x": 0.5, "y": 0.25, "z": 0.0},
        "orientation": {"x": 0.0, "y": 0.0, "z": 0.0, "w": 1.0}},
        "covariance": cov}});
    let Ok(Action::Config { device: d, payload }) = on(Target::PoseEstimate, pose) else {
        panic!("a config");
    };
    assert_eq!(d, device::LOCALIZE);
    let p = SetPose::decode(&payload).unwrap();
    assert_eq!(p.mean, [500, 250, 0]);
    assert_eq!(p.cov[0][0], 250_000);
}

/// The goal a `/goal_pose` message with `orientation` commands, decoded.
fn goal_of(orientation: Value) -> player_proto::nav::Goal {
    let goal = json!({"header": header("map"), "pose": {
        "position": {"x": 1.0, "y": 2.0, "z": 0.0}, "orientation": orientation}});
    let Ok(Action::Command { device: d, payload }) = on(Target::Goal, goal) else {
        panic!("a command");
    };
    assert_eq!(d, device::PLANNER);
    assert_eq!(
        payload.len(),
        player_proto::nav::Goal::SIZE,
        "the planner's command size"
    );
    player_proto::nav::Goal::decode(&payload).unwrap()
}

#[test]
fn a_goal_of_a_quaternion_not_of_unit_length_turns_as_the_rotation_it_stands_for() {
    // Hand-written in Foxglove's Publish panel: a quarter turn, not normalized.
    assert_eq!(goal_of(json!({"z": 1, "w": 1})).a, 90);
    assert_eq!(goal_of(json!({"z": -0.5, "w": 0.5})).a, -90);
    assert_eq!(goal_of(json!({"z": 1e-200, "w": 1e-200})).a, 90);
    assert_eq!(goal_of(json!({})).a, 0, "no orientation, no turn");
}

#[test]
fn a_goal_or_pose_estimate_of_a_quaternion_too_large_to_square_keeps_its_layouts_size() {
    // w z and x y overflow to +inf and -inf: their sum was NaN, and the payload empty.
    let q = json!({"x": -1e200, "y": 2e200, "z": 3e200, "w": 1e200});
    // Normalized: yaw atan2(2 (3 - 2), 1 + 1 - 4 - 9) = 169.7 degrees.
    let g = goal_of(q.clone());
    assert_eq!((g.x, g.y, g.a), (1000, 2000, 170));
    let pose = json!({"header": header("map"), "pose": {"pose": {
        "position": {"x": 0.5, "y": 0.25, "z": 0.0}, "orientation": q},
        "covariance": vec![0.0; 36]}});
    let Ok(Action::Config { device: d, payload }) = on(Target::PoseEstimate, pose) else {
        panic!("a config");
    };
    assert_eq!(d, device::LOCALIZE);
    assert_eq!(payload.len(), player_proto::nav::SetPose::SIZE);
    let s = player_proto::nav::SetPose::decode(&payload).unwrap();
    let want = 2f64.atan2(-11.0).to_degrees() * 3600.0;
    assert!((f64::from(s.mean[2]) - want).abs() <= 0.5, "{s:?}");
}
