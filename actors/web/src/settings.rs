//! The web viewer's section of the configuration, `[web]`: what every robot's web endpoint
//! shares (each robot's port is its own `web_port`).
//!
//! Today that is TLS: `tls_cert` and `tls_key`, PEM files (relative to the configuration
//! file's folder), both or neither. With them every web endpoint speaks only `https://`
//! (the page) and `wss://` (the Foxglove WebSocket); [`crate::tls`] loads them.

use player_core::settings::{Settings, SettingsError};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The `[web]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebSettings {
    /// The certificate chain, PEM (the server's certificate first); empty: plain `http://`
    /// and `ws://`. Relative to the configuration file's folder.
    pub tls_cert: String,
    /// The certificate's private key, PEM (PKCS#8, PKCS#1 RSA or SEC1 EC). Relative to the
    /// configuration file's folder.
    pub tls_key: String,
}

impl WebSettings {
    /// The `[web]` section of settings read with [`crate::SYNTAX`] (the defaults when
    /// there is none), checked; errors name the key.
    pub fn from_settings(settings: &Settings) -> Result<Self, SettingsError> {
        let s: WebSettings = settings.section("web")?;
        s.check(&settings.origin)?;
        Ok(s)
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
