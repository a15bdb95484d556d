//! What the client may do: command (its address may, and it presented the key when one is
//! set), and whether it must present the key before anything else. The policy is the
//! server's ([`crate::access::Policy`]); this is one client's standing under it.

use crate::access::Policy;
use std::net::IpAddr;

/// How a presented key was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KeyOutcome {
    /// The key is right; the client may command if its address may.
    Accepted {
        /// Whether it may command now.
        write: bool,
    },
    /// Wrong, or no key is configured (why); the client is closed.
    Refused(&'static str),
}

/// One client's rights.
pub(super) struct Rights {
    may_write: bool,
    must_present_key: bool,
    /// The key it presented and had accepted (checked again when the policy is reloaded).
    presented_key: Option<Box<[u8]>>,
}

impl Rights {
    /// The rights of a client connecting from `ip`.
    pub(super) fn admit(policy: &Policy, ip: IpAddr) -> Self {
        let r = policy.admit(ip).unwrap_or(crate::access::Rights {
            write: false,
            must_present_key: false,
        });
        Rights {
            may_write: r.write,
            must_present_key: r.must_present_key,
            presented_key: None,
        }
    }

    /// Whether the client may command.
    pub(super) fn may_write(&self) -> bool {
        self.may_write
    }

    /// Whether the client must present the key before anything else.
    pub(super) fn must_present_key(&self) -> bool {
        self.must_present_key
    }

    /// A key presented by the client at `ip` (one guess per connection).
    pub(super) fn present_key(&mut self, policy: &Policy, ip: IpAddr, key: &[u8]) -> KeyOutcome {
        if policy.key_matches(key) {
            self.must_present_key = false;
            self.presented_key = Some(key.into());
            self.may_write = policy.may_write(ip);
            KeyOutcome::Accepted {
                write: self.may_write,
            }
        } else if policy.has_key() {
            KeyOutcome::Refused("wrong key")
        } else {
            KeyOutcome::Refused("no key is configured")
        }
    }

    /// Checks this client's standing again after the policy in force changed (a reload):
    /// the reason when the policy no longer admits it, else whether it may command now. A
    /// client still within its time to present the key is checked by address only (its
    /// key is checked when it comes).
    pub(super) fn recheck(&mut self, policy: &Policy, ip: IpAddr) -> Result<bool, &'static str> {
        let r = if self.must_present_key {
            policy.admit(ip)?
        } else {
            policy.recheck(ip, self.presented_key.as_deref())?
        };
        self.may_write = r.write;
        self.must_present_key = r.must_present_key;
        Ok(self.may_write)
    }

    /// Why a client at `ip` may not command.
    pub(super) fn read_only_reason(policy: &Policy, ip: IpAddr) -> &'static str {
        if !policy.may_write(ip) {
            "read-only: this address may not command (access.write_allow)"
        } else {
            "read-only: present the key (x y k <key>) for write access"
        }
    }
}
