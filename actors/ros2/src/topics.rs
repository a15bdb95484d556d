//! The topics a robot's node publishes and how ([`plan`]: which devices give which
//! topics, with their types and QoS), and a publisher with its rmw_zenoh identity ([`Pub`]:
//! the GID and sequence numbers every sample's attachment carries).

use crate::rmw::{self, Attachment, Qos};
use crate::types::{self, RosType};
use player_proto::device;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use zenoh::pubsub::Publisher;
use zenoh::Wait;

/// History depth written in the publishers' tokens.
pub const DEPTH: usize = 10;

/// What a publisher carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    /// `scan` from this laser device (`L` or `l`).
    Scan(u8),
    /// `odom` from `p`.
    Odom,
    /// `tf` from `p`.
    Tf,
    /// `tf_static`.
    TfStatic,
    /// `sonar` from `s`.
    Sonar,
    /// `battery` from `m`.
    Battery,
    /// `map` from `M`: the whole map, downloaded by tiles (transient local).
    Map,
    /// `amcl_pose` from `H`: the heaviest hypothesis.
    AmclPose,
    /// `particlecloud` from `H`'s `x H g` answers, at a bounded rate.
    Particles,
    /// `tf` from `H` and `p`: `map` -> `odom`.
    TfMap,
    /// `plan` from `G`'s `x G w` answers.
    Plan,
}

impl Topic {
    /// The topic's name relative to the robot's namespace.
    pub fn name(self) -> &'static str {
        match self {
            Topic::Scan(_) => "scan",
            Topic::Odom => "odom",
            Topic::Tf => "tf",
            Topic::TfStatic => "tf_static",
            Topic::Sonar => "sonar",
            Topic::Battery => "battery",
            Topic::Map => "map",
            Topic::AmclPose => "amcl_pose",
            Topic::Particles => "particlecloud",
            Topic::TfMap => "tf",
            Topic::Plan => "plan",
        }
    }

    /// Its message type.
    pub fn ros_type(self) -> RosType {
        match self {
            Topic::Scan(_) => types::LASER_SCAN,
            Topic::Odom => types::ODOMETRY,
            Topic::Tf | Topic::TfStatic | Topic::TfMap => types::TF_MESSAGE,
            Topic::Sonar => types::RANGE,
            Topic::Battery => types::BATTERY_STATE,
            Topic::Map => types::OCCUPANCY_GRID,
            Topic::AmclPose => types::POSE_WITH_COVARIANCE_STAMPED,
            Topic::Particles => types::POSE_ARRAY,
            Topic::Plan => types::PATH,
        }
    }

    /// The device it is made from.
    pub fn device(self) -> Option<u8> {
        match self {
            Topic::Scan(code) => Some(code),
            Topic::Odom | Topic::Tf => Some(device::POSITION),
            Topic::TfStatic => None,
            Topic::Sonar => Some(device::SONAR),
            Topic::Battery => Some(device::MISC),
            Topic::Map => Some(device::MAP),
            Topic::AmclPose | Topic::Particles | Topic::TfMap => Some(device::LOCALIZE),
            Topic::Plan => Some(device::PLANNER),
        }
    }

    /// Its QoS (`tf_static` and `map` transient local, depth 1).
    pub fn qos(self) -> Qos {
        match self {
            Topic::TfStatic | Topic::Map => Qos::latched(1),
            _ => Qos::reliable(DEPTH),
        }
    }
}

/// The topics a robot with these readable devices publishes: `scan` from `L` if there is
/// one, else from `l`; `odom` and `tf` from `p`; `sonar` from `s`; `battery` from `m`;
/// `tf_static` when there is anything to place on the body; `map` from `M`; `amcl_pose`,
/// `particlecloud` and (with `p`) `map` -> `odom` on `tf` from `H`; `plan` from `G`.
pub fn plan(readable: &[u8]) -> Vec<Topic> {
    let has = |c: u8| readable.contains(&c);
    let mut v = Vec::new();
    if has(b'L') {
        v.push(Topic::Scan(b'L'));
    } else if has(device::LASER) {
        v.push(Topic::Scan(device::LASER));
    }
    if has(device::POSITION) {
        v.extend([Topic::Odom, Topic::Tf]);
    }
    if has(device::SONAR) {
        v.push(Topic::Sonar);
    }
    if has(device::MISC) {
        v.push(Topic::Battery);
    }
    if v.iter().any(|t| matches!(t, Topic::Scan(_) | Topic::Sonar)) {
        v.push(Topic::TfStatic);
    }
    if has(device::MAP) {
        v.push(Topic::Map);
    }
    if has(device::LOCALIZE) {
        v.extend([Topic::AmclPose, Topic::Particles]);
        if has(device::POSITION) {
            v.push(Topic::TfMap);
        }
    }
    if has(device::PLANNER) {
        v.push(Topic::Plan);
    }
    v
}

/// Nanoseconds since the Unix epoch.
pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The newest payload of a transient-local publisher, which its history queryable
/// answers late joiners with (empty: nothing yet).
pub type Latest = Arc<Mutex<Vec<u8>>>;

/// One publisher: its Zenoh publisher, GID and sequence numbers.
pub struct Pub {
    /// What it carries.
    pub topic: Topic,
    publisher: Publisher<'static>,
    gid: [u8; rmw::GID_LEN],
    /// The last sequence number sent (the node's thread and the registry's both publish:
    /// [`crate::node::Readings`]).
    seq: AtomicI64,
    latest: Option<Latest>,
}

impl Pub {
    /// A publisher of `topic` whose entity's GID is `gid`; no sample sent yet.
    pub fn new(topic: Topic, publisher: Publisher<'static>, gid: [u8; rmw::GID_LEN]) -> Self {
        Pub {
            topic,
            publisher,
            gid,
            seq: AtomicI64::new(0),
            latest: None,
        }
    }

    /// Keeps each payload put in `latest` too (for the history queryable).
    pub fn keeping(mut self, latest: Latest) -> Self {
        self.latest = Some(latest);
        self
    }

    /// Publishes `payload` with the attachment rmw_zenoh expects (sequence number, time,
    /// GID).
    pub fn put(&self, payload: Vec<u8>) -> zenoh::Result<()> {
        if let Some(l) = &self.latest {
            l.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone_from(&payload);
        }
        let a = Attachment {
            seq: self.seq.fetch_add(1, Ordering::Relaxed) + 1,
            timestamp_ns: now_ns(),
            gid: self.gid,
        };
        self.publisher.put(payload).attachment(a.encode()).wait()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_scan_is_preferred_and_static_transforms_follow_the_sensors() {
        assert_eq!(
            plan(b"plLsm"),
            vec![
                Topic::Scan(b'L'),
                Topic::Odom,
                Topic::Tf,
                Topic::Sonar,
                Topic::Battery,
                Topic::TfStatic
            ]
        );
        assert_eq!(
            plan(b"lp"),
            vec![Topic::Scan(b'l'), Topic::Odom, Topic::Tf, Topic::TfStatic]
        );
        assert_eq!(plan(b"p"), vec![Topic::Odom, Topic::Tf]);
        assert_eq!(
            plan(b"pMHG"),
            vec![
                Topic::Odom,
                Topic::Tf,
                Topic::Map,
                Topic::AmclPose,
                Topic::Particles,
                Topic::TfMap,
                Topic::Plan
            ]
        );
        assert_eq!(plan(b"H"), vec![Topic::AmclPose, Topic::Particles]);
        assert_eq!(Topic::Map.qos().keyexpr(), ":1:,1:,:,:,,");
        assert!(plan(b"gzv").is_empty());
    }

    #[test]
    fn tf_static_is_latched_and_the_rest_reliable() {
        assert_eq!(Topic::TfStatic.qos().keyexpr(), ":1:,1:,:,:,,");
        assert_eq!(Topic::Odom.qos().keyexpr(), "::,10:,:,:,,");
        assert_eq!(Topic::Tf.ros_type(), types::TF_MESSAGE);
    }
}
