//! Who may connect, read and command: the server's access policy.
//!
//! Built from the configuration's `[access]` section (and `-bind`, which lives on each
//! robot). The defaults keep 0.7.4a behaviour: no key, every address may connect and
//! command. With a shared `key`, a client gets write access only after presenting it
//! (`x y k <key>`, docs/extensions.md); without it the client is read-only, or refused
//! (`keyless = "refuse"`). `read_allow` limits who may connect at all and `write_allow` who
//! may ever command, by address or network (`10.0.0.0/8`, `::1`). Every front end (TCP
//! sessions, the web viewer, bridges) asks the same [`Policy`].
//!
//! A [`Policy`] is a handle on the rules in force: its clones share them, and
//! [`Policy::replace`] (a reload on SIGHUP) changes them for every holder at once. Each
//! check reads the rules once, so it never mixes old and new ones.

use arc_swap::ArcSwap;
use ipnet::IpNet;
use serde::Deserialize;
use std::net::IpAddr;
use std::sync::Arc;

/// The `[access]` section of the configuration.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccessSettings {
    /// A shared key; a client that presents it gets write access. Empty: no key.
    pub key: String,
    /// What a client that has not presented the key may do when a key is set: `"read"`
    /// (read-only; the default) or `"refuse"` (closed unless its first message is the
    /// key).
    pub keyless: String,
    /// Addresses or networks that may connect (empty: all).
    pub read_allow: Vec<String>,
    /// Addresses or networks that may command (empty: all that may connect).
    pub write_allow: Vec<String>,
    /// Most connections from one address per robot port (0: no limit).
    pub max_per_address: usize,
}

impl Default for AccessSettings {
    fn default() -> Self {
        AccessSettings {
            key: String::new(),
            keyless: "read".into(),
            read_allow: Vec::new(),
            write_allow: Vec::new(),
            max_per_address: 0,
        }
    }
}

/// What one client may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rights {
    /// It may command devices (and release the emergency stop).
    pub write: bool,
    /// It must present the key before anything else (it is closed otherwise).
    pub must_present_key: bool,
}

/// The access policy in force; cheap to clone into every session. Clones share the rules:
/// [`Policy::replace`] changes them for all.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rules: Arc<ArcSwap<Rules>>,
}

/// The rules of one `[access]` section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Rules {
    key: Option<Vec<u8>>,
    refuse_keyless: bool,
    read_allow: Vec<IpNet>,
    write_allow: Vec<IpNet>,
    max_per_address: usize,
}

fn parse_nets(key: &str, list: &[String]) -> Result<Vec<IpNet>, String> {
    list.iter()
        .map(|s| {
            s.parse::<IpNet>()
                .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| format!("access.{key}: '{s}' is not an address or network"))
        })
        .collect()
}

/// Whether `ip` is in `nets` (an IPv4 address mapped into IPv6 counts as IPv4).
fn contains(nets: &[IpNet], ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    nets.iter().any(|n| n.contains(&ip))
}

impl Policy {
    /// The policy of an `[access]` section; errors name the key.
    pub fn new(s: &AccessSettings) -> Result<Policy, String> {
        let refuse_keyless = match s.keyless.as_str() {
            "read" => false,
            "refuse" => true,
            other => {
                return Err(format!(
                    "access.keyless: '{other}' is neither \"read\" nor \"refuse\""
                ))
            }
        };
        if s.key.len() > player_proto::ext::MAX_KEY {
            return Err(format!(
                "access.key: longer than {} bytes",
                player_proto::ext::MAX_KEY
            ));
        }
        let rules = Rules {
            key: (!s.key.is_empty()).then(|| s.key.as_bytes().to_vec()),
            refuse_keyless,
            read_allow: parse_nets("read_allow", &s.read_allow)?,
            write_allow: parse_nets("write_allow", &s.write_allow)?,
            max_per_address: s.max_per_address,
        };
        Ok(Policy {
            rules: Arc::new(ArcSwap::from_pointee(rules)),
        })
    }

    /// Puts the rules of `new` in force for every holder of this policy (and its clones);
    /// returns whether they differ from the rules they replace. Sessions re-check their
    /// rights afterwards (a reload tells them).
    pub fn replace(&self, new: &Policy) -> bool {
        let new = new.rules.load_full();
        let old = self.rules.swap(new.clone());
        old != new
    }

    /// Whether `ip` may connect; the error is the reason to log and tell the client.
    pub fn admit(&self, ip: IpAddr) -> Result<Rights, &'static str> {
        self.rules.load().admit(ip)
    }

    /// Whether `ip` may ever command (with the key, when one is set).
    pub fn may_write(&self, ip: IpAddr) -> bool {
        self.rules.load().may_write(ip)
    }

    /// Whether a key is configured.
    pub fn has_key(&self) -> bool {
        self.rules.load().key.is_some()
    }

    /// Whether `presented` is the key (compared in constant time for keys of the same
    /// length). False when no key is configured.
    pub fn key_matches(&self, presented: &[u8]) -> bool {
        self.rules.load().key_matches(presented)
    }

    /// Most connections from one address (0: no limit).
    pub fn max_per_address(&self) -> usize {
        self.rules.load().max_per_address
    }

    /// What a client at `ip` that is already connected may do under the rules in force,
    /// given the key it presented (if any): after a reload, a client the rules no longer
    /// admit gets the reason; one whose key is no longer the key keeps reading but may not
    /// command; one that presented the new key may.
    pub fn recheck(&self, ip: IpAddr, presented: Option<&[u8]>) -> Result<Rights, &'static str> {
        let r = self.rules.load();
        let rights = r.admit(ip)?;
        let key_ok = presented.is_some_and(|k| r.key_matches(k));
        if rights.must_present_key && !key_ok {
            return Err("access.keyless = \"refuse\" and this client has not presented the key");
        }
        Ok(Rights {
            write: rights.write || (key_ok && r.may_write(ip)),
            must_present_key: false,
        })
    }
}

impl Rules {
    fn admit(&self, ip: IpAddr) -> Result<Rights, &'static str> {
        if !self.read_allow.is_empty() && !contains(&self.read_allow, ip) {
            return Err("address not in access.read_allow");
        }
        Ok(Rights {
            write: self.may_write(ip) && self.key.is_none(),
            must_present_key: self.key.is_some() && self.refuse_keyless,
        })
    }

    fn may_write(&self, ip: IpAddr) -> bool {
        self.write_allow.is_empty() || contains(&self.write_allow, ip)
    }

    fn key_matches(&self, presented: &[u8]) -> bool {
        let Some(key) = &self.key else {
            return false;
        };
        if key.len() != presented.len() {
            return false;
        }
        key.iter()
            .zip(presented)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(f: impl FnOnce(&mut AccessSettings)) -> Policy {
        let mut s = AccessSettings::default();
        f(&mut s);
        Policy::new(&s).unwrap()
    }

    #[test]
    fn the_default_lets_everyone_read_and_write() {
        let p = policy(|_| {});
        let r = p.admit("203.0.113.9".parse().unwrap()).unwrap();
        assert!(r.write && !r.must_present_key);
    }

    #[test]
    fn allow_lists_and_keys() {
        let p = policy(|s| {
            s.read_allow = vec!["127.0.0.0/8".into(), "::1".into()];
            s.write_allow = vec!["127.0.0.1".into()];
        });
        assert!(p.admit("10.1.2.3".parse().unwrap()).is_err());
        assert!(p.admit("127.0.0.1".parse().unwrap()).unwrap().write);
        assert!(!p.admit("127.0.0.2".parse().unwrap()).unwrap().write);
        assert!(!p.admit("::1".parse().unwrap()).unwrap().write);
        // An IPv4 client on a dual-stack socket.
        assert!(p.admit("::ffff:127.0.0.1".parse().unwrap()).unwrap().write);

        let p = policy(|s| s.key = "sesame".into());
        let r = p.admit("127.0.0.1".parse().unwrap()).unwrap();
        assert!(!r.write && !r.must_present_key);
        assert!(p.key_matches(b"sesame"));
        assert!(!p.key_matches(b"sesamE") && !p.key_matches(b"sesam") && !p.key_matches(b""));

        let p = policy(|s| {
            s.key = "sesame".into();
            s.keyless = "refuse".into();
        });
        assert!(
            p.admit("127.0.0.1".parse().unwrap())
                .unwrap()
                .must_present_key
        );
    }

    #[test]
    fn bad_settings_name_their_key() {
        let mut s = AccessSettings {
            read_allow: vec!["nonsense".into()],
            ..AccessSettings::default()
        };
        assert!(Policy::new(&s).unwrap_err().contains("access.read_allow"));
        s.read_allow.clear();
        s.keyless = "maybe".into();
        assert!(Policy::new(&s).unwrap_err().contains("access.keyless"));
    }

    #[test]
    fn a_replaced_policy_is_in_force_for_every_clone_and_rechecks_keys() {
        let running = policy(|s| s.key = "old".into());
        let session_copy = running.clone();
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(!session_copy.recheck(ip, None).unwrap().write);
        assert!(session_copy.recheck(ip, Some(b"old")).unwrap().write);
        assert!(running.replace(&policy(|s| s.key = "new".into())));
        assert!(
            !running.replace(&policy(|s| s.key = "new".into())),
            "same rules"
        );
        // The old key reads but no longer commands; the new key commands.
        assert!(!session_copy.recheck(ip, Some(b"old")).unwrap().write);
        assert!(session_copy.recheck(ip, Some(b"new")).unwrap().write);
        running.replace(&policy(|s| {
            s.key = "new".into();
            s.keyless = "refuse".into();
        }));
        assert!(session_copy.recheck(ip, Some(b"old")).is_err());
        assert!(session_copy.recheck(ip, Some(b"new")).is_ok());
        running.replace(&policy(|s| s.read_allow = vec!["10.0.0.0/8".into()]));
        assert_eq!(
            session_copy.recheck(ip, None).unwrap_err(),
            "address not in access.read_allow"
        );
    }
}
