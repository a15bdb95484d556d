//! The web viewer's part of the configuration: the `[web]` section, what every robot's web
//! endpoint shares, and each robot's port, its `web_port` key in `[[robot]]` (which the core
//! keeps raw for this crate) or the `-web` flag.
//!
//! The section holds TLS: `tls_cert` and `tls_key`, PEM files (relative to the configuration
//! file's folder), both or neither. With them every web endpoint speaks only `https://`
//! (the page) and `wss://` (the Foxglove WebSocket); [`crate::tls`] loads them.

use player_core::settings::{Settings, SettingsError};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The first robot's web viewer port when none is configured (Foxglove's default port).
pub const DEFAULT_WEB_PORT: u16 = 8765;

/// `-stage` gives each robot of a world with at most this many robots a web viewer port
/// of its own; a larger world is served on one web viewer port, the first robot's, with
/// every robot's topics under its name ([`Viewer::shared`]).
pub const STAGE_WEB_VIEWERS_MAX: usize = 64;

/// The `[web]` section, and each robot's viewer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebSettings {
    /// The certificate chain, PEM (the server's certificate first); empty: plain `http://`
    /// and `ws://`. Relative to the configuration file's folder.
    pub tls_cert: String,
    /// The certificate's private key, PEM (PKCS#8, PKCS#1 RSA or SEC1 EC). Relative to the
    /// configuration file's folder.
    pub tls_key: String,
    /// Each robot's viewer, in configuration order (not a key of the section: read from the
    /// robots' keys, `-stage` and `-web`); a robot past its end has the defaults.
    #[serde(skip)]
    pub viewers: Vec<Viewer>,
}

/// One robot's web viewer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Viewer {
    /// Its `web_port`: 0 turns it off; unset, robot `i` of the configuration gets
    /// [`DEFAULT_WEB_PORT`]` + i`, and a busy default port is logged, not fatal (a
    /// configured one that cannot be bound is an error).
    pub web_port: Option<u16>,
    /// Served on the first robot's port, whatever its own `web_port` (a robot of a `-stage`
    /// world of more than [`STAGE_WEB_VIEWERS_MAX`] robots; not a key).
    pub shared: bool,
}

/// The robot keys this crate reads ([`crate::SYNTAX`]'s `robot_keys`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RobotKeys {
    web_port: Option<u16>,
}

impl WebSettings {
    /// The `[web]` section of settings read with [`crate::SYNTAX`] (the defaults when
    /// there is none) and each robot's viewer, checked; errors name the key.
    pub fn from_settings(settings: &Settings) -> Result<Self, SettingsError> {
        let mut s: WebSettings = settings.section("web")?;
        let keys: Vec<RobotKeys> = settings.robot_keys(crate::SYNTAX.robot_keys)?;
        // A large world: one web viewer port (the first robot's) serving every robot, not
        // a listening port per robot.
        let large = settings.staged > STAGE_WEB_VIEWERS_MAX;
        s.viewers = keys
            .into_iter()
            .enumerate()
            .map(|(i, k)| Viewer {
                web_port: k.web_port,
                shared: large && i > 0 && i < settings.staged,
            })
            .collect();
        s.check(&settings.origin)?;
        Ok(s)
    }

    /// Robot `index`'s viewer.
    pub fn viewer(&self, index: usize) -> Viewer {
        self.viewers.get(index).copied().unwrap_or_default()
    }

    /// Robot `index`'s viewer, to change it (the list grows to it).
    pub fn viewer_mut(&mut self, index: usize) -> &mut Viewer {
        if self.viewers.len() <= index {
            self.viewers.resize(index + 1, Viewer::default());
        }
        &mut self.viewers[index]
    }

    /// Robot `index`'s own web viewer port and whether it was configured (a configured
    /// port that cannot be bound stops the server; the default, [`DEFAULT_WEB_PORT`]`
    /// + index`, is best effort); `None` when off.
    pub fn port_of(&self, index: usize) -> Option<(u16, bool)> {
        match self.viewer(index).web_port {
            Some(0) => None,
            Some(p) => Some((p, true)),
            None => u16::try_from(usize::from(DEFAULT_WEB_PORT) + index)
                .ok()
                .map(|p| (p, false)),
        }
    }

    /// Applies `-web <value>`: robot `i` gets port `value + i` (0: every viewer off); a
    /// robot served on the first robot's port (a large `-stage` world) stays there.
    pub fn apply_flag(&mut self, value: &str) -> Result<(), SettingsError> {
        let base: u16 = value.parse().map_err(|_| {
            SettingsError::flag("-web", format!("'{value}' is not a TCP port number"))
        })?;
        for (i, v) in self.viewers.iter_mut().enumerate() {
            if v.shared {
                continue;
            }
            v.web_port = Some(if base == 0 {
                0
            } else {
                u16::try_from(usize::from(base) + i).map_err(|_| {
                    SettingsError::flag(
                        "-web",
                        format!("robot {i}'s port {base} + {i} is past 65535"),
                    )
                })?
            });
        }
        Ok(())
    }

    /// Checks the values (not the files: [`crate::tls::TlsFiles::load`] reads them);
    /// errors name the key.
    pub fn check(&self, origin: &str) -> Result<(), SettingsError> {
        match (self.tls_cert.is_empty(), self.tls_key.is_empty()) {
            (false, true) => Err(SettingsError::value(
                origin,
                "web.tls_cert",
                "needs web.tls_key too (the certificate's private key)",
            )),
            (true, false) => Err(SettingsError::value(
                origin,
                "web.tls_key",
                "needs web.tls_cert too (the certificate the key belongs to)",
            )),
            _ => Ok(()),
        }
    }

    /// Whether the web endpoints speak TLS.
    pub fn tls(&self) -> bool {
        !self.tls_cert.is_empty() && !self.tls_key.is_empty()
    }

    /// The certificate and key files, relative paths taken from `base_dir` (the
    /// configuration file's folder); `None` without TLS.
    pub fn tls_files(&self, base_dir: &Path) -> Option<crate::tls::TlsFiles> {
        let resolve = |p: &str| -> PathBuf {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                base_dir.join(p)
            }
        };
        self.tls().then(|| crate::tls::TlsFiles {
            cert: resolve(&self.tls_cert),
            key: resolve(&self.tls_key),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web(cert: &str, key: &str) -> WebSettings {
        WebSettings {
            tls_cert: cert.into(),
            tls_key: key.into(),
            viewers: Vec::new(),
        }
    }

    #[test]
    fn the_certificate_and_key_go_together() {
        assert!(web("", "").check("t").is_ok());
        assert!(web("c.pem", "k.pem").check("t").is_ok());
        let e = web("c.pem", "").check("t").unwrap_err();
        assert!(
            matches!(&e, SettingsError::Value { key, .. } if key == "web.tls_cert"),
            "{e}"
        );
        let e = web("", "k.pem").check("t").unwrap_err();
        assert!(
            matches!(&e, SettingsError::Value { key, .. } if key == "web.tls_key"),
            "{e}"
        );
    }

    #[test]
    fn relative_files_are_taken_from_the_configuration_folder() {
        assert!(web("", "").tls_files(Path::new("/etc/player")).is_none());
        let f = web("c.pem", "/abs/k.pem")
            .tls_files(Path::new("/etc/player"))
            .unwrap();
        assert_eq!(f.cert, Path::new("/etc/player/c.pem"));
        assert_eq!(f.key, Path::new("/abs/k.pem"));
    }
}
