//! Request strings (manual 3.3) and what the server granted for them.

use player_proto::access;

use crate::error::Error;

/// Most pairs one request can carry: the size field counts 2 bytes per pair in a u16.
pub const MAX_PAIRS: usize = u16::MAX as usize / 2;

/// Parses a request string such as `"srpw"` into `(device, access)` pairs.
///
/// The string is the manual's `<device><access>...` (section 3.3, Appendix A.3): an even
/// number of ASCII characters, each access one of `r` (read), `w` (write), `a` (all) or `c`
/// (close). The device codes are not checked: a device the server does not know is
/// answered with `e`. The empty string is valid (the server answers an empty reply).
///
/// ```
/// assert_eq!(
///     player_client::parse_spec("srpw").unwrap(),
///     vec![(b's', b'r'), (b'p', b'w')]
/// );
/// assert!(player_client::parse_spec("srp").is_err());
/// ```
pub fn parse_spec(spec: &str) -> Result<Vec<(u8, u8)>, Error> {
    let bad = |reason| Error::BadSpec {
        spec: spec.to_owned(),
        reason,
    };
    if !spec.is_ascii() {
        return Err(bad("device and access codes are single ASCII characters"));
    }
    let bytes = spec.as_bytes();
    if bytes.len() % 2 != 0 {
        return Err(bad(
            "it must be pairs of a device code and an access code, and has an odd length",
        ));
    }
    if bytes.len() / 2 > MAX_PAIRS {
        return Err(bad("too many pairs for one request"));
    }
    bytes
        .chunks(2)
        .map(|p| match p[1] {
            access::READ | access::WRITE | access::ALL | access::CLOSE => Ok((p[0], p[1])),
            access::ERROR => Err(bad("access 'e' is only used by the server")),
            _ => Err(bad("an access code must be one of 'r', 'w', 'a' or 'c'")),
        })
        .collect()
}

/// Whether holding `granted` gives what asking for `requested` wanted: the same access,
/// or `a` (read and write) when `r` or `w` was asked. `e` never does.
pub fn satisfies(requested: u8, granted: u8) -> bool {
    granted != access::ERROR
        && (granted == requested
            || (granted == access::ALL
                && (requested == access::READ || requested == access::WRITE)))
}

/// The server's answer to one device request.
///
/// `granted` is the reply as sent: the requested devices in request order, each with the
/// access the client now holds, `e` where the device is unknown or failed to set up.
/// The server merges accesses: asking `w` while holding `r` grants `a`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    requested: Vec<(u8, u8)>,
    granted: Vec<(u8, u8)>,
}

impl Grant {
    /// A grant from the pairs sent and the pairs the server replied with.
    pub fn new(requested: Vec<(u8, u8)>, granted: Vec<(u8, u8)>) -> Grant {
        Grant { requested, granted }
    }

    /// The pairs that were requested.
    pub fn requested(&self) -> &[(u8, u8)] {
        &self.requested
    }

    /// The pairs of the server's reply.
    pub fn granted(&self) -> &[(u8, u8)] {
        &self.granted
    }

    /// The access the reply gives `device` (its last pair), if the reply lists it.
    pub fn access(&self, device: u8) -> Option<u8> {
        self.granted
            .iter()
            .rev()
            .find(|&&(d, _)| d == device)
            .map(|&(_, a)| a)
    }

    /// Whether the reply is byte for byte the request: the C++ `CRobot::Request` test of
    /// success (manual 3.3). An `a` granted for a `w` is not exact.
    pub fn is_exact(&self) -> bool {
        self.requested == self.granted
    }

    /// Whether the reply lists the requested devices in order and each one's access gives
    /// what was asked (see [`satisfies`]): no `e`, and `a` counts for `r` or `w`.
    pub fn all_granted(&self) -> bool {
        self.requested.len() == self.granted.len()
            && self
                .requested
                .iter()
                .zip(&self.granted)
                .all(|(&(rd, ra), &(gd, ga))| rd == gd && satisfies(ra, ga))
    }

    /// The `(device, requested, granted)` triples not granted as asked.
    pub fn refused(&self) -> Vec<(u8, u8, u8)> {
        self.requested
            .iter()
            .zip(&self.granted)
            .filter(|(&(rd, ra), &(gd, ga))| rd == gd && !satisfies(ra, ga))
            .map(|(&(d, ra), &(_, ga))| (d, ra, ga))
            .collect()
    }

    /// This grant if [`all_granted`](Grant::all_granted), otherwise the first refusal as
    /// [`Error::Refused`] (or [`Error::ReplyMismatch`] when the reply does not list the
    /// requested devices in order).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), player_client::Error> {
    /// let mut robot = player_client::Client::connect("localhost:6665")?;
    /// robot.request("srpw")?.check()?; // fails naming the device if one was refused
    /// # Ok(())
    /// # }
    /// ```
    pub fn check(self) -> Result<Grant, Error> {
        let lined_up = self.requested.len() == self.granted.len()
            && self
                .requested
                .iter()
                .zip(&self.granted)
                .all(|(r, g)| r.0 == g.0);
        if !lined_up {
            return Err(Error::ReplyMismatch {
                requested: self.requested,
                reply: self.granted,
            });
        }
        match self.refused().first() {
            Some(&(device, requested, granted)) => Err(Error::Refused {
                device,
                requested,
                granted,
            }),
            None => Ok(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parses_pairs() {
        assert_eq!(
            parse_spec("srpw").unwrap(),
            vec![(b's', b'r'), (b'p', b'w')]
        );
        assert_eq!(
            parse_spec("scpc").unwrap(),
            vec![(b's', b'c'), (b'p', b'c')]
        );
        assert_eq!(parse_spec("").unwrap(), vec![]);
        // Unknown devices are the server's business: it answers 'e'.
        assert_eq!(parse_spec("qa").unwrap(), vec![(b'q', b'a')]);
    }

    #[test]
    fn spec_refuses_what_is_not_pairs() {
        for bad in ["s", "srp", "sx", "se", "sr pw", "sé"] {
            match parse_spec(bad) {
                Err(Error::BadSpec { spec, .. }) => assert_eq!(spec, bad),
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn exact_grant() {
        let g = Grant::new(parse_spec("srpw").unwrap(), parse_spec("srpw").unwrap());
        assert!(g.is_exact());
        assert!(g.all_granted());
        assert!(g.refused().is_empty());
        assert_eq!(g.access(b'p'), Some(b'w'));
        assert_eq!(g.access(b'l'), None);
        assert!(g.check().is_ok());
    }

    #[test]
    fn merged_access_is_granted_but_not_exact() {
        let g = Grant::new(vec![(b'p', b'w')], vec![(b'p', b'a')]);
        assert!(!g.is_exact());
        assert!(g.all_granted());
        assert!(g.check().is_ok());
    }

    #[test]
    fn error_access_is_refused() {
        let g = Grant::new(
            vec![(b'l', b'r'), (b'p', b'a')],
            vec![(b'l', b'e'), (b'p', b'a')],
        );
        assert!(!g.all_granted());
        assert_eq!(g.refused(), vec![(b'l', b'r', b'e')]);
        match g.check() {
            Err(Error::Refused {
                device: b'l',
                requested: b'r',
                granted: b'e',
            }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_reply_that_does_not_line_up_is_a_mismatch() {
        let g = Grant::new(vec![(b's', b'r')], vec![]);
        assert!(!g.all_granted());
        assert!(matches!(g.check(), Err(Error::ReplyMismatch { .. })));
        let g = Grant::new(vec![(b's', b'r')], vec![(b'p', b'r')]);
        assert!(!g.all_granted());
        assert!(matches!(g.check(), Err(Error::ReplyMismatch { .. })));
    }
}
