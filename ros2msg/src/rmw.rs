//! `rmw_zenoh`'s wire conventions (its `docs/design.md`; ROS 2 Jazzy from rmw_zenoh_cpp
//! 0.2.4 on, Humble 0.1.2, Kilted and Rolling 0.6.0):
//!
//! - a topic's data key: `<domain>/<topic without its outer slashes>/<dds type>/<hash>`,
//!   e.g. `0/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_64c1…` ([`topic_key`]);
//! - discovery by liveliness tokens, one per node and one per publisher or subscription:
//!   `@ros2_lv/<domain>/<zid>/<nid>/<id>/<NN|MP|MS>/<enclave>/<namespace>/<node>` and, for a
//!   publisher or subscription, `/<topic>/<dds type>/<hash>/<qos>`, every `/` inside a
//!   field written `%` ([`Token`]);
//! - the QoS chunk `<reliability>:<durability>:<history>,<depth>:<deadline s>,<ns>:
//!   <lifespan s>,<ns>:<liveliness>,<lease s>,<ns>`, a component left empty where it is
//!   `rmw_zenoh`'s default ([`Qos::keyexpr`]);
//! - an entity's GID: the XXH3-128 of its token's key, low 64 bits first ([`gid`]);
//! - on every sample an attachment of 33 bytes: sequence number (i64 LE, from 1), source
//!   timestamp (i64 LE, ns since the epoch), `0x10` (the GID's length as a LEB128) and the
//!   publisher's 16-byte GID ([`Attachment`]). Releases before the ones named above
//!   (Jazzy up to 0.2.3) wrote a self-describing map instead and do not talk to us.

use crate::types::RosType;
use thiserror::Error;

/// The liveliness admin space of ROS 2 entities.
pub const ADMIN_SPACE: &str = "@ros2_lv";

/// Bytes of a GID.
pub const GID_LEN: usize = 16;

/// Bytes of a sample's attachment.
pub const ATTACHMENT_LEN: usize = 8 + 8 + 1 + GID_LEN;

/// Writes every `/` of a token field as `%`.
pub fn mangle(field: &str) -> String {
    field.replace('/', "%")
}

/// Reads a token field back: every `%` is a `/`.
pub fn demangle(field: &str) -> String {
    field.replace('%', "/")
}

/// `name` without one leading and one trailing `/`.
pub fn strip_slashes(name: &str) -> &str {
    let s = name.strip_prefix('/').unwrap_or(name);
    s.strip_suffix('/').unwrap_or(s)
}

/// The fully qualified name of `topic` in `namespace`: `/` + `scan` is `/scan`,
/// `/robot1` + `scan` is `/robot1/scan`; a topic starting with `/` is already absolute.
pub fn qualify(namespace: &str, topic: &str) -> String {
    if topic.starts_with('/') {
        return topic.to_string();
    }
    let ns = strip_slashes(namespace);
    if ns.is_empty() {
        format!("/{topic}")
    } else {
        format!("/{ns}/{topic}")
    }
}

/// The key a topic's samples are published on: `<domain>/<name>/<dds type>/<hash>`, the
/// name (fully qualified) without its outer slashes.
pub fn topic_key(domain: u32, name: &str, ty: &RosType) -> String {
    format!(
        "{domain}/{}/{}/{}",
        strip_slashes(name),
        ty.dds_name(),
        ty.hash
    )
}

/// What a token announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityKind {
    /// A node (`NN`).
    Node,
    /// A publisher (`MP`).
    Publisher,
    /// A subscription (`MS`).
    Subscription,
    /// A service server (`SS`).
    Service,
    /// A service client (`SC`).
    Client,
}

impl EntityKind {
    /// The token chunk.
    pub fn chunk(self) -> &'static str {
        match self {
            EntityKind::Node => "NN",
            EntityKind::Publisher => "MP",
            EntityKind::Subscription => "MS",
            EntityKind::Service => "SS",
            EntityKind::Client => "SC",
        }
    }

    fn from_chunk(s: &str) -> Option<Self> {
        Some(match s {
            "NN" => EntityKind::Node,
            "MP" => EntityKind::Publisher,
            "MS" => EntityKind::Subscription,
            "SS" => EntityKind::Service,
            "SC" => EntityKind::Client,
            _ => return None,
        })
    }
}

/// QoS reliability (numbers of `rmw_qos_reliability_policy_e`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    /// Every sample delivered (`RELIABLE` = 1, `rmw_zenoh`'s default).
    Reliable = 1,
    /// Samples may be lost (`BEST_EFFORT` = 2).
    BestEffort = 2,
}

/// QoS durability (numbers of `rmw_qos_durability_policy_e`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Late joiners get the last samples (`TRANSIENT_LOCAL` = 1).
    TransientLocal = 1,
    /// Late joiners get nothing old (`VOLATILE` = 2, `rmw_zenoh`'s default).
    Volatile = 2,
}

/// The QoS of a publisher or subscription as far as its token tells (history is
/// `KEEP_LAST`; deadline, lifespan and lease infinite; liveliness automatic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Qos {
    /// Reliability.
    pub reliability: Reliability,
    /// Durability.
    pub durability: Durability,
    /// History depth.
    pub depth: usize,
}

/// `rmw_zenoh`'s default depth.
pub const DEFAULT_DEPTH: usize = 42;

impl Qos {
    /// Reliable, volatile, keeping `depth` samples.
    pub fn reliable(depth: usize) -> Self {
        Qos {
            reliability: Reliability::Reliable,
            durability: Durability::Volatile,
            depth,
        }
    }

    /// Reliable, transient local (late joiners get the last `depth` samples): `tf_static`.
    pub fn latched(depth: usize) -> Self {
        Qos {
            durability: Durability::TransientLocal,
            ..Qos::reliable(depth)
        }
    }

    /// The token chunk, defaults left empty as `rmw_zenoh` writes them.
    pub fn keyexpr(&self) -> String {
        let rel = match self.reliability {
            Reliability::Reliable => String::new(),
            r => (r as u8).to_string(),
        };
        let dur = match self.durability {
            Durability::Volatile => String::new(),
            d => (d as u8).to_string(),
        };
        let depth = if self.depth == DEFAULT_DEPTH {
            String::new()
        } else {
            self.depth.to_string()
        };
        format!("{rel}:{dur}:,{depth}:,:,:,,")
    }
}

/// A topic as a publisher or subscription token names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// Fully qualified name, e.g. `/scan`.
    pub name: String,
    /// `sensor_msgs::msg::dds_::LaserScan_`.
    pub dds_type: String,
    /// `RIHS01_…`.
    pub hash: String,
    /// The QoS chunk as written.
    pub qos: String,
}

/// One liveliness token of `rmw_zenoh`'s graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// ROS domain id.
    pub domain: u32,
    /// The Zenoh session's id, as Zenoh prints it.
    pub zid: String,
    /// The node's id within the session.
    pub nid: u64,
    /// The entity's id within the session (a node's token repeats its `nid`).
    pub id: u64,
    /// What it announces.
    pub kind: EntityKind,
    /// The security enclave (`/` when none).
    pub enclave: String,
    /// The node's namespace (`/` at the root).
    pub namespace: String,
    /// The node's name.
    pub node: String,
    /// The topic of a publisher or subscription.
    pub topic: Option<TopicInfo>,
}

/// Why a key is not an `rmw_zenoh` token.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TokenError {
    /// Not under `@ros2_lv`, or the wrong number of chunks for its kind.
    #[error("not an rmw_zenoh liveliness token: {0}")]
    Shape(String),
    /// A number chunk is not a number.
    #[error("bad number '{0}' in a liveliness token")]
    Number(String),
}

impl Token {
    /// The token of node `node` in `namespace`.
    pub fn node(domain: u32, zid: &str, nid: u64, namespace: &str, node: &str) -> Self {
        Token {
            domain,
            zid: zid.to_string(),
            nid,
            id: nid,
            kind: EntityKind::Node,
            enclave: "/".into(),
            namespace: namespace.to_string(),
            node: node.to_string(),
            topic: None,
        }
    }

    /// The token of a publisher or subscription `id` of this node's token.
    pub fn entity(&self, id: u64, kind: EntityKind, name: &str, ty: &RosType, qos: Qos) -> Self {
        Token {
            id,
            kind,
            topic: Some(TopicInfo {
                name: name.to_string(),
                dds_type: ty.dds_name(),
                hash: ty.hash.to_string(),
                qos: qos.keyexpr(),
            }),
            ..self.clone()
        }
    }

    /// The key expression to declare.
    pub fn key(&self) -> String {
        let mut k = format!(
            "{ADMIN_SPACE}/{}/{}/{}/{}/{}/{}/{}/{}",
            self.domain,
            self.zid,
            self.nid,
            self.id,
            self.kind.chunk(),
            mangle(&self.enclave),
            mangle(&self.namespace),
            mangle(&self.node)
        );
        if let Some(t) = &self.topic {
            k.push_str(&format!(
                "/{}/{}/{}/{}",
                mangle(&t.name),
                mangle(&t.dds_type),
                mangle(&t.hash),
                t.qos
            ));
        }
        k
    }

    /// The entity's GID ([`gid`] of its key).
    pub fn gid(&self) -> [u8; GID_LEN] {
        gid(&self.key())
    }

    /// Reads a token's key (any node's: ours or another's).
    pub fn parse(key: &str) -> Result<Self, TokenError> {
        let parts: Vec<&str> = key.split('/').collect();
        let shape = || TokenError::Shape(key.chars().take(200).collect());
        if parts.len() < 9 || parts[0] != ADMIN_SPACE {
            return Err(shape());
        }
        let num = |s: &str| s.parse::<u64>().map_err(|_| TokenError::Number(s.into()));
        let kind = EntityKind::from_chunk(parts[5]).ok_or_else(shape)?;
        let topic = match (kind, parts.len()) {
            (EntityKind::Node, 9) => None,
            // Rolling may add a tenth chunk after the QoS (buffer back ends).
            (EntityKind::Node, _) => return Err(shape()),
            (_, 13 | 14) => Some(TopicInfo {
                name: demangle(parts[9]),
                dds_type: demangle(parts[10]),
                hash: demangle(parts[11]),
                qos: parts[12].to_string(),
            }),
            _ => return Err(shape()),
        };
        Ok(Token {
            domain: u32::try_from(num(parts[1])?)
                .map_err(|_| TokenError::Number(parts[1].into()))?,
            zid: parts[2].to_string(),
            nid: num(parts[3])?,
            id: num(parts[4])?,
            kind,
            enclave: demangle(parts[6]),
            namespace: demangle(parts[7]),
            node: demangle(parts[8]),
            topic,
        })
    }
}

/// An entity's GID as `rmw_zenoh` makes it: XXH3-128 (seed 0) of its token's key, the
/// low 64 bits then the high 64 bits, each little-endian.
pub fn gid(token_key: &str) -> [u8; GID_LEN] {
    let h = xxhash_rust::xxh3::xxh3_128(token_key.as_bytes());
    let mut g = [0u8; GID_LEN];
    g[..8].copy_from_slice(&(h as u64).to_le_bytes());
    g[8..].copy_from_slice(&((h >> 64) as u64).to_le_bytes());
    g
}

/// The attachment of every sample: who sent it, its number and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attachment {
    /// Per publisher, from 1, rising by one.
    pub seq: i64,
    /// When it was sent, ns since the Unix epoch.
    pub timestamp_ns: i64,
    /// The publisher's GID.
    pub gid: [u8; GID_LEN],
}

/// Why an attachment was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AttachmentError {
    /// Not 33 bytes.
    #[error("rmw_zenoh attachment must be {ATTACHMENT_LEN} bytes, got {0}")]
    Size(usize),
    /// The GID length byte is not 16.
    #[error("rmw_zenoh attachment GID length {0}, expected 16")]
    GidLength(u8),
}

impl Attachment {
    /// The 33 bytes.
    pub fn encode(&self) -> [u8; ATTACHMENT_LEN] {
        let mut b = [0u8; ATTACHMENT_LEN];
        b[..8].copy_from_slice(&self.seq.to_le_bytes());
        b[8..16].copy_from_slice(&self.timestamp_ns.to_le_bytes());
        b[16] = GID_LEN as u8;
        b[17..].copy_from_slice(&self.gid);
        b
    }

    /// Reads 33 bytes.
    pub fn decode(b: &[u8]) -> Result<Self, AttachmentError> {
        if b.len() != ATTACHMENT_LEN {
            return Err(AttachmentError::Size(b.len()));
        }
        if b[16] != GID_LEN as u8 {
            return Err(AttachmentError::GidLength(b[16]));
        }
        let i64_at = |at: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[at..at + 8]);
            i64::from_le_bytes(a)
        };
        let mut gid = [0u8; GID_LEN];
        gid.copy_from_slice(&b[17..]);
        Ok(Attachment {
            seq: i64_at(0),
            timestamp_ns: i64_at(8),
            gid,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types;

    #[test]
    fn topic_keys_drop_the_outer_slashes_only() {
        assert_eq!(
            topic_key(0, "/scan", &types::LASER_SCAN),
            "0/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_64c191398013af96509d518dac71d5164f9382553fce5c1f8cca5be7924bd828"
        );
        assert!(topic_key(7, "/robot1/odom", &types::ODOMETRY)
            .starts_with("7/robot1/odom/nav_msgs::msg::dds_::Odometry_/RIHS01_"));
        assert_eq!(qualify("/", "scan"), "/scan");
        assert_eq!(qualify("", "scan"), "/scan");
        assert_eq!(qualify("/robot1", "sonar/3"), "/robot1/sonar/3");
        assert_eq!(qualify("/robot1/", "scan"), "/robot1/scan");
        assert_eq!(qualify("/robot1", "/tf"), "/tf");
    }

    #[test]
    fn qos_chunks_leave_rmw_zenoh_defaults_empty() {
        // design.md's talker: depth 7, the rest default.
        assert_eq!(Qos::reliable(7).keyexpr(), "::,7:,:,:,,");
        assert_eq!(Qos::reliable(DEFAULT_DEPTH).keyexpr(), "::,:,:,:,,");
        assert_eq!(Qos::latched(1).keyexpr(), ":1:,1:,:,:,,");
        let be = Qos {
            reliability: Reliability::BestEffort,
            ..Qos::reliable(5)
        };
        assert_eq!(be.keyexpr(), "2::,5:,:,:,,");
    }

    #[test]
    fn tokens_follow_the_documented_grammar() {
        // The two examples of rmw_zenoh's design.md, rebuilt.
        let zid = "aac3178e146ba6f1fc6e6a4085e77f21";
        assert_eq!(
            Token::node(0, zid, 0, "/", "listener").key(),
            "@ros2_lv/0/aac3178e146ba6f1fc6e6a4085e77f21/0/0/NN/%/%/listener"
        );
        let talker = Token::node(0, "8b20917502ee955ac4476e0266340d5c", 0, "/", "talker");
        let string = RosType {
            package: "std_msgs",
            name: "String",
            hash: "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18",
        };
        let p = talker.entity(
            10,
            EntityKind::Publisher,
            "/chatter",
            &string,
            Qos::reliable(7),
        );
        assert_eq!(
            p.key(),
            "@ros2_lv/0/8b20917502ee955ac4476e0266340d5c/0/10/MP/%/%/talker/%chatter/\
             std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18/::,7:,:,:,,"
        );
        assert_eq!(Token::parse(&p.key()).unwrap(), p);
        let n = Token::node(3, zid, 2, "/robot1", "player");
        let s = n.entity(
            5,
            EntityKind::Subscription,
            "/robot1/cmd_vel",
            &types::TWIST,
            Qos::reliable(10),
        );
        assert!(s
            .key()
            .contains("/MS/%/%robot1/player/%robot1%cmd_vel/geometry_msgs::msg::dds_::Twist_/"));
        assert_eq!(Token::parse(&s.key()).unwrap(), s);
        assert_eq!(Token::parse(&n.key()).unwrap(), n);
    }

    #[test]
    fn foreign_keys_are_not_tokens() {
        for k in [
            "",
            "player/x/@alive",
            "@ros2_lv/0/z/0/0/XX/%/%/n",
            "@ros2_lv/0/z/a/0/NN/%/%/n",
            "@ros2_lv/0/z/0/0/NN/%/%/n/extra",
            "@ros2_lv/0/z/0/1/MP/%/%/n/%t",
            "@ros2_lv/99999999999/z/0/0/NN/%/%/n",
        ] {
            assert!(Token::parse(k).is_err(), "{k}");
        }
    }

    #[test]
    fn gids_are_the_xxh3_128_of_the_token_low_half_first() {
        // XXH3-128 of the empty input (the reference implementation's test vector):
        // 99aa06d3014798d86001c324468d497f.
        let g = gid("");
        assert_eq!(&g[..8], &0x6001_c324_468d_497fu64.to_le_bytes());
        assert_eq!(&g[8..], &0x99aa_06d3_0147_98d8u64.to_le_bytes());
        let a = Token::node(0, "ab", 0, "/", "player");
        let b = Token::node(0, "ab", 1, "/", "player");
        assert_eq!(a.gid(), a.gid());
        assert_ne!(a.gid(), b.gid());
    }

    #[test]
    fn attachments_are_33_bytes_with_a_leb128_gid_length() {
        let a = Attachment {
            seq: 1,
            timestamp_ns: 1_700_000_000_123_456_789,
            gid: [7; GID_LEN],
        };
        let b = a.encode();
        assert_eq!(b.len(), 33);
        assert_eq!(&b[..8], &[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[8..16], &1_700_000_000_123_456_789i64.to_le_bytes());
        assert_eq!(b[16], 0x10);
        assert_eq!(&b[17..], &[7; 16]);
        assert_eq!(Attachment::decode(&b).unwrap(), a);
        assert_eq!(
            Attachment::decode(&b[..32]).unwrap_err(),
            AttachmentError::Size(32)
        );
        let mut bad = b;
        bad[16] = 8;
        assert_eq!(
            Attachment::decode(&bad).unwrap_err(),
            AttachmentError::GidLength(8)
        );
    }
}
