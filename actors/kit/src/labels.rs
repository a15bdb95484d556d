//! Devices served under another code than their driver's own: the configuration's
//! `devices = ["p as O", ...]` serves the driver's `p` as `O`, so another driver (a
//! localizer) can serve `p`.
//!
//! The driver keeps using its own codes everywhere (setup, commands, configs, stops,
//! publishing). The registry files the device under the served code and sends the driver
//! its own; the driver's [`Publisher`](crate::driver::Publisher), made with the
//! instance's [`Labels`] ([`DriverContext::publisher`](crate::catalog::DriverContext::publisher)),
//! stamps each reading with the served code as it is recorded, so batches stay one
//! message shared by every reader; the [`StatusSink`](crate::driver::StatusSink) of the
//! instance reports the served codes too.

use std::sync::Arc;

/// One driver instance's renames: its own code to the code the robot serves it as, for
/// each device served under another code. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels(Arc<[(u8, u8)]>);

impl Labels {
    /// Renames from `(own, served)` pairs (pairs that rename nothing are dropped).
    pub fn new(pairs: impl IntoIterator<Item = (u8, u8)>) -> Self {
        let v: Vec<(u8, u8)> = pairs.into_iter().filter(|(a, b)| a != b).collect();
        Labels(v.into())
    }

    /// No renames.
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether nothing is renamed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The code the robot serves the driver's `own` device as.
    #[inline]
    pub fn served(&self, own: u8) -> u8 {
        self.0
            .iter()
            .find(|(o, _)| *o == own)
            .map_or(own, |(_, s)| *s)
    }

    /// The driver's own code of the device the robot serves as `served`.
    pub fn own(&self, served: u8) -> u8 {
        self.0
            .iter()
            .find(|(_, s)| *s == served)
            .map_or(served, |(o, _)| *o)
    }

    /// The `(own, served)` pairs.
    pub fn pairs(&self) -> &[(u8, u8)] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_maps_both_ways_and_leaves_the_rest() {
        let l = Labels::new([(b'p', b'O'), (b's', b's')]);
        assert_eq!(l.pairs(), &[(b'p', b'O')]);
        assert_eq!((l.served(b'p'), l.own(b'O')), (b'O', b'p'));
        assert_eq!((l.served(b's'), l.own(b's')), (b's', b's'));
        assert!(!l.is_empty() && Labels::none().is_empty());
    }
}
