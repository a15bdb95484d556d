//! The configuration parser's tests: defaults, flags, the front ends' sections, keys and
//! flags, errors naming their key.

use super::*;

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A catalog with device flags shaped like the shipped drivers' (the core's tests
/// cannot see the drivers).
fn catalog() -> Catalog {
    let mut c = Catalog::new();
    let flags: [(
        &'static str,
        &'static str,
        &'static [u8],
        &'static str,
        FlagValue,
    ); 6] = [
        ("-pp", "p2os", b"psmg", "port", FlagValue::Text),
        ("-lp", "sicklms200", b"l", "port", FlagValue::Text),
        ("-zp", "sonyptz", b"z", "port", FlagValue::Text),
        ("-vp", "acts", b"v", "port", FlagValue::Port),
        ("-vc", "acts", b"v", "config", FlagValue::Text),
        (
            "-replay",
            "replay",
            b"psmglzvLOPMHG",
            "file",
            FlagValue::File,
        ),
    ];
    for (flag, driver, devices, key, value) in flags {
        c.add_flag(DeviceFlag {
            flag,
            driver,
            devices,
            key,
            value,
        });
    }
    c
}

fn run(a: &[&str]) -> Result<Settings, SettingsError> {
    match parse_args_with(&args(a), &catalog(), &[])? {
        Invocation::Run { settings, .. } => Ok(*settings),
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_arguments_serve_the_simulated_robot_on_6665() {
    let s = run(&[]).unwrap();
    assert_eq!(s.robot.len(), 1);
    assert_eq!(s.robot[0].port, 6665);
    assert_eq!(s.robot[0].driver.len(), 1);
    assert_eq!(s.robot[0].driver[0].driver, "sim");
    let mut codes = s.robot[0].driver[0].device_codes().unwrap();
    codes.sort_unstable();
    assert_eq!(codes, b"glmpsvz");
}

#[test]
fn flags_override_the_file() {
    let s = run(&["-gp", "7000", "-debug", "-exp"]).unwrap();
    assert_eq!(s.robot[0].port, 7000);
    assert!(s.server.debug && s.server.experimental);
}

#[test]
fn device_flags_switch_devices_to_real_drivers() {
    let s = run(&["-pp", "/dev/ttyS0", "-lp", "/dev/ttyS1"]).unwrap();
    let names: Vec<(&str, Vec<u8>)> = s.robot[0]
        .driver
        .iter()
        .map(|d| (d.driver.as_str(), d.device_codes().unwrap()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("sim", b"zv".to_vec()),
            ("p2os", b"psmg".to_vec()),
            ("sicklms200", b"l".to_vec())
        ]
    );
}

#[test]
fn bad_flags_name_themselves() {
    let e = run(&["-gp", "seventy"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "flag -gp: 'seventy' is not a TCP port number"
    );
    assert!(matches!(e, SettingsError::Flag { ref flag, .. } if flag == "-gp"));
    let e = run(&["-gp"]).unwrap_err();
    assert!(
        matches!(&e, SettingsError::Flag { flag, why } if flag == "-gp" && why.contains("needs a value")),
        "{e}"
    );
    let e = run(&["-bogus"]).unwrap_err();
    assert!(
        matches!(&e, SettingsError::UnknownFlag { flag } if flag == "-bogus"),
        "{e}"
    );
    let e = run(&["-stage", "/no/such/world.toml"]).unwrap_err();
    assert!(
        matches!(&e, SettingsError::Flag { flag, why } if flag == "-stage" && why.contains("/no/such/world.toml")),
        "{e}"
    );
}

#[test]
fn front_end_flags_and_sections_are_taken_only_when_declared_and_handed_back() {
    const SYNTAX: FrontEndSyntax = FrontEndSyntax {
        sections: &["extra"],
        robot_keys: &[],
        flags: &[
            FlagSpec {
                flag: "-x",
                takes_value: true,
            },
            FlagSpec {
                flag: "--y",
                takes_value: false,
            },
        ],
    };
    let Invocation::Run { flags, .. } = parse_args_with(
        &args(&["--y", "-x", "v", "-gp", "7"]),
        &catalog(),
        &[SYNTAX],
    )
    .unwrap() else {
        panic!("not a run")
    };
    let given: Vec<(&str, Option<&str>)> =
        flags.iter().map(|g| (g.flag, g.value.as_deref())).collect();
    assert_eq!(given, [("--y", None), ("-x", Some("v"))]);
    assert!(matches!(
        run(&["-x", "v"]),
        Err(SettingsError::UnknownFlag { .. })
    ));
    let e = parse_args_with(&args(&["-x"]), &catalog(), &[SYNTAX]).unwrap_err();
    assert!(
        matches!(&e, SettingsError::Flag { flag, .. } if flag == "-x"),
        "{e}"
    );
    let text = "[extra]\na = 1\n[[robot]]\n";
    let s = Settings::from_toml_with(text, "t", &[SYNTAX]).unwrap();
    assert_eq!(s.sections.keys().collect::<Vec<_>>(), ["extra"]);
    let e = Settings::from_toml(text, "t").unwrap_err();
    assert!(
        matches!(&e, SettingsError::Value { key, .. } if key == "extra"),
        "{e}"
    );
}

#[test]
fn a_front_ends_robot_keys_are_kept_raw_for_it_and_named_like_the_cores() {
    const SYNTAX: FrontEndSyntax = FrontEndSyntax {
        sections: &[],
        robot_keys: &["viewer_port"],
        flags: &[],
    };
    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default)]
    struct Keys {
        viewer_port: Option<u16>,
    }
    let text = "[[robot]]\nname = \"a\"\n[[robot]]\nname = \"b\"\nviewer_port = 9\n";
    let s = Settings::from_toml_with(text, "t", &[SYNTAX]).unwrap();
    assert!(s.robot[0].front_end_keys.is_empty());
    let keys: Vec<Keys> = s.robot_keys(SYNTAX.robot_keys).unwrap();
    let given = Keys {
        viewer_port: Some(9),
    };
    assert_eq!(keys, [Keys::default(), given]);
    let e = Settings::from_toml(text, "t").unwrap_err();
    assert!(
        e.to_string().contains("unknown field `viewer_port`"),
        "not declared: {e}"
    );
    let e = Settings::from_toml_with("[[robot]]\nzzzz = 1\n", "t", &[SYNTAX]).unwrap_err();
    assert!(
        e.to_string().ends_with(
            "unknown field `zzzz`, expected one of `name`, `port`, `bind`, \
             `command_timeout`, `driver`, `viewer_port`"
        ),
        "{e}"
    );
    let text = "[[robot]]\n[[robot]]\nviewer_port = \"x\"\n";
    let e = Settings::from_toml_with(text, "t", &[SYNTAX])
        .unwrap()
        .robot_keys::<Keys>(SYNTAX.robot_keys)
        .unwrap_err();
    assert!(
        matches!(&e, SettingsError::Parse { origin, .. } if origin == "t"),
        "{e}"
    );
    assert!(
        e.to_string().ends_with("for key `robot[1]viewer_port`"),
        "{e}"
    );
    // Every key the core lists is one its robots take.
    let all = "[[robot]]\nname = \"a\"\nport = 1\nbind = \"::\"\ncommand_timeout = 1.0\n\
               driver = []\n";
    Settings::from_toml(all, "t").unwrap();
}

#[test]
fn unknown_keys_are_errors_naming_the_key() {
    let e = Settings::from_toml("[server]\nmax_clientz = 3\n[[robot]]\n", "test.toml").unwrap_err();
    assert!(
        matches!(&e, SettingsError::Parse { origin, source } if origin == "test.toml"
            && source.to_string().contains("max_clientz")),
        "{e}"
    );
    let e = Settings::from_toml("[[robot]]\nport = \"x\"\n", "t").unwrap_err();
    assert!(
        matches!(&e, SettingsError::Parse { source, .. } if source.to_string().contains("port")),
        "{e}"
    );
    let e = Settings::from_toml(
        "[[robot]]\n[[robot.driver]]\ndriver = \"sim\"\ndevices = [\"pp\"]\n",
        "t",
    )
    .unwrap_err();
    assert!(
        matches!(&e, SettingsError::Value { key, why, .. } if key == "robot 'robot'" && why.contains("'pp'")),
        "{e}"
    );
    let e = Settings::from_toml("[serverz]\n[[robot]]\n", "t").unwrap_err();
    assert!(
        matches!(&e, SettingsError::Value { key, .. } if key == "serverz"),
        "{e}"
    );
}

#[test]
fn a_device_flag_takes_devices_by_the_code_the_robot_serves() {
    // The localized robot of config/amcl.toml: the base's `p` served as `O`, the
    // localizer's map-frame pose as `p`. A replay of all of it takes every one.
    let mut s = Settings::from_toml(
        r#"
[[robot]]
[[robot.driver]]
driver = "sim"
devices = ["p as O", "P", "s", "l", "L"]
[[robot.driver]]
driver = "mapfile"
devices = ["M"]
[[robot.driver]]
driver = "amcl"
devices = ["H", "p"]
"#,
        "assign test",
    )
    .unwrap();
    s.assign("replay", b"psmglzvLOPMHG", vec![]);
    let drivers: Vec<(&str, Vec<u8>)> = s.robot[0]
        .driver
        .iter()
        .map(|d| (d.driver.as_str(), d.served_codes().unwrap()))
        .collect();
    assert_eq!(drivers, vec![("replay", b"psmglzvLOPMHG".to_vec())]);
    // A flag for some devices leaves the others where they were, renamed or not.
    let mut s = Settings::from_toml(
        r#"
[[robot]]
[[robot.driver]]
driver = "sim"
devices = ["p as O", "s", "l"]
"#,
        "assign test",
    )
    .unwrap();
    s.assign("sicklms200", b"l", vec![]);
    assert_eq!(s.robot[0].driver[0].served_codes().unwrap(), b"Os");
}
