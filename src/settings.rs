//! The whole configuration: the core's sections (`[server]`, `[access]`, `[[robot]]`) and
//! every front end's (their sections, robot keys and flags: the list in
//! [`crate::frontends`]), composed.
//!
//! The file schema is one: an unknown section or key, in the core's sections or a front
//! end's, is an error naming it. The core reads its own sections and hands the front ends'
//! back raw; each front-end crate reads its own ([`FrontEndKind::settings`]) and applies its
//! own flags ([`FrontEndKind::apply_flag`]).
//!
//! [`FrontEndKind::settings`]: player_core::frontend::FrontEndKind::settings
//! [`FrontEndKind::apply_flag`]: player_core::frontend::FrontEndKind::apply_flag

pub use crate::frontends::{Settings, SYNTAX as FRONT_ENDS};
pub use player_core::settings::{
    absolute, check_seconds, DriverSettings, FlagSpec, FrontEndSyntax, GivenFlag, RobotSettings,
    ServerSettings, Settings as CoreSettings, SettingsError, DEFAULT_CONFIG,
};
use player_kit::catalog::Catalog;
pub use player_record::RecordSettings;
pub use player_ros2::Ros2Settings;
pub use player_web::{WebSettings, DEFAULT_WEB_PORT};
pub use player_zenoh::ZenohSettings;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};

impl Deref for Settings {
    type Target = CoreSettings;

    fn deref(&self) -> &CoreSettings {
        &self.core
    }
}

impl DerefMut for Settings {
    fn deref_mut(&mut self) -> &mut CoreSettings {
        &mut self.core
    }
}

impl Settings {
    /// Parses TOML text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Settings, SettingsError> {
        Self::compose(CoreSettings::from_toml_with(text, origin, FRONT_ENDS)?)
    }

    /// Reads a TOML file.
    pub fn from_file(path: &Path) -> Result<Settings, SettingsError> {
        Self::compose(CoreSettings::from_file_with(path, FRONT_ENDS)?)
    }

    /// The shipped default configuration.
    pub fn default_config() -> Settings {
        Self::compose(CoreSettings::default_config_with(FRONT_ENDS))
            .expect("the shipped default configuration is valid")
    }
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Invocation {
    /// Run the server.
    Run {
        /// The configuration, flags applied.
        settings: Box<Settings>,
        /// The directory relative paths in the configuration are resolved against.
        base_dir: PathBuf,
    },
    /// Print the help text.
    Help,
    /// Print the version.
    Version,
}

/// Parses the command line (without the program name): the core's and the drivers' flags
/// (`catalog`), then each front end's, in command-line order.
pub fn parse_args_with(args: &[String], catalog: &Catalog) -> Result<Invocation, SettingsError> {
    use player_core::settings::Invocation as Core;
    let (core, base_dir, flags) =
        match player_core::settings::parse_args_with(args, catalog, FRONT_ENDS)? {
            Core::Help => return Ok(Invocation::Help),
            Core::Version => return Ok(Invocation::Version),
            Core::Run {
                settings,
                base_dir,
                flags,
            } => (settings, base_dir, flags),
        };
    let mut settings = Settings::compose(*core)?;
    // After -stage (the core applied it): every robot of a world gets its web port.
    for GivenFlag { flag, value } in flags {
        settings.apply_front_end_flag(flag, value.as_deref())?;
    }
    // After -stage and --zenoh: the robots' names and the sections as they are now.
    settings
        .front_ends()
        .check(&settings.core.robot, &settings.core.access, "command line")?;
    Ok(Invocation::Run {
        settings: Box::new(settings),
        base_dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(a: &[&str]) -> Result<Settings, SettingsError> {
        let args: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        match parse_args_with(&args, &crate::builtin_catalog())? {
            Invocation::Run { settings, .. } => Ok(*settings),
            other => panic!("{other:?}"),
        }
    }

    fn web_port_of(s: &Settings, i: usize) -> Option<(u16, bool)> {
        s.web.port_of(i)
    }

    #[test]
    fn web_ports_default_per_robot_and_the_flag_sets_or_turns_them_off() {
        let s = run(&[]).unwrap();
        assert_eq!(web_port_of(&s, 0), Some((DEFAULT_WEB_PORT, false)));
        let s = run(&["-web", "9000"]).unwrap();
        assert_eq!(web_port_of(&s, 0), Some((9000, true)));
        let s = run(&["-web", "0"]).unwrap();
        assert_eq!(web_port_of(&s, 0), None);
        let e = run(&["-web", "x"]).unwrap_err();
        assert!(
            matches!(&e, SettingsError::Flag { flag, .. } if flag == "-web"),
            "{e}"
        );
        let t = "[[robot]]\nweb_port = 0\n[[robot]]\nport = 7\n[[robot]]\nweb_port = 9100\n";
        let s = Settings::from_toml(t, "t").unwrap();
        assert_eq!(web_port_of(&s, 0), None);
        assert_eq!(web_port_of(&s, 1), Some((DEFAULT_WEB_PORT + 1, false)));
        assert_eq!(web_port_of(&s, 2), Some((9100, true)));
    }

    #[test]
    fn unknown_sections_and_front_end_keys_are_errors_naming_the_key() {
        let e = Settings::from_toml("[recordz]\n[[robot]]\n", "t.toml").unwrap_err();
        assert!(
            matches!(&e, SettingsError::Value { origin, key, .. } if origin == "t.toml" && key == "recordz"),
            "{e}"
        );
        let e = Settings::from_toml("[zenoh]\nmodez = 1\n[[robot]]\n", "t.toml").unwrap_err();
        assert!(
            matches!(&e, SettingsError::Value { key, why, .. } if key == "zenoh" && why.contains("modez")),
            "{e}"
        );
        let e = Settings::from_toml("[web]\ntls_certz = \"c\"\n[[robot]]\n", "t.toml").unwrap_err();
        assert!(
            matches!(&e, SettingsError::Value { key, why, .. } if key == "web" && why.contains("tls_certz")),
            "{e}"
        );
        let e =
            Settings::from_toml("[server]\nmax_clientz = 3\n[[robot]]\n", "t.toml").unwrap_err();
        assert!(matches!(&e, SettingsError::Parse { .. }), "{e}");
        assert!(e.to_string().contains("max_clientz"), "{e}");
    }

    #[test]
    fn the_web_section_takes_a_tls_certificate_and_key_together() {
        let s = Settings::from_toml(
            "[web]\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n[[robot]]\n",
            "t.toml",
        )
        .unwrap();
        assert!(s.web.tls());
        assert!(!run(&[]).unwrap().web.tls());
        let e =
            Settings::from_toml("[web]\ntls_key = \"k.pem\"\n[[robot]]\n", "t.toml").unwrap_err();
        assert!(
            matches!(&e, SettingsError::Value { key, .. } if key == "web.tls_key"),
            "{e}"
        );
    }

    #[test]
    fn the_ros2_section_and_flag_turn_the_ros2_front_end_on_and_are_checked() {
        assert!(!run(&[]).unwrap().ros2.enabled);
        assert!(run(&["--ros2"]).unwrap().ros2.enabled);
        let s = Settings::from_toml("[ros2]\ndomain_id = 7\n[[robot]]\n", "t.toml").unwrap();
        assert_eq!((s.ros2.enabled, s.ros2.domain_id), (false, 7));
        let e = Settings::from_toml("[ros2]\nwritez = 1\n[[robot]]\n", "t.toml").unwrap_err();
        assert!(
            matches!(&e, SettingsError::Value { key, why, .. } if key == "ros2" && why.contains("writez")),
            "{e}"
        );
        // ROS 2 commands carry no key: write with [access] key needs ros2.public.
        let t = "[access]\nkey = \"k\"\n[ros2]\nenabled = true\nwrite = true\n[[robot]]\n";
        let e = Settings::from_toml(t, "t.toml").unwrap_err();
        assert!(e.to_string().contains("ros2.public"), "{e}");
    }

    #[test]
    fn shipped_config_files_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "toml") {
                Settings::from_file(&p).unwrap_or_else(|e| panic!("{e}"));
                n += 1;
            }
        }
        assert!(n >= 1);
    }
}
