//! Several robots on one web port: the topic and channel naming of an endpoint that serves
//! a whole world.
//!
//! The rule: an endpoint serving one robot advertises the topics of [`schema::CHANNELS`] as
//! they are (`/pose`, `/laser`, ...; channel ids 1 to 19). An endpoint serving several
//! robots (a large `-stage` world, or robots configured with the same `web_port`) puts each
//! robot's topics under its name, `/<robot>/pose`, `/<robot>/laser`, ..., its frames under
//! its name too (`<robot>/odom`, `<robot>/base_link`; `map` stays the world's), and
//! advertises the walls once as `/walls` (a robot's map device is its own,
//! `/<robot>/map`). Robot `k` of the endpoint (configuration order) has the channel ids
//! `k * 64 + id`, so robot 0's are the single robot's and a reconnecting client sees the
//! same ids. A client publishes on `/<robot>/cmd_vel` (and
//! the other command topics under a robot's name) to command that robot.
//!
//! The world's own channel `/robots` (id [`ROBOTS_CHANNEL`]) gives, once a second while a
//! client subscribes to it, every robot's name and pose in the map (x, y metres, heading
//! radians): the page's view of all robots at once. It holds every robot's position
//! device for that client, so it costs in proportion to the robots only while someone
//! watches it.
//!
//! A client may ask for some robots' channels only: `?robots=NAME,NAME,...` on the
//! WebSocket URL (a name ending in `*` takes every robot whose name begins with the rest;
//! an empty list takes none, leaving the world's `/walls` and `/robots`). Without it every
//! robot's channels are advertised.
//!
//! Advertising is in chunks of at most [`ADVERTISE_CHUNK`] channels per message, each
//! made when the socket has taken the one before, so a client of a 10 000-robot world
//! never has more than one chunk waiting and the server builds no list of every channel.

use super::protobuf::Encoding;
use super::schema::{self, Channel, Source};
use actix::Addr;
use player_core::registry::Registry;
use player_kit::driver::DeviceSpec;
use std::collections::HashMap;
use std::sync::OnceLock;

/// Channel ids per robot: robot `k` of an endpoint has `k * ROBOT_STRIDE + id` for each
/// channel `id` of [`schema::CHANNELS`] (all below it).
pub const ROBOT_STRIDE: u32 = 64;

/// Most channels in one `advertise` message of an endpoint serving several robots.
pub const ADVERTISE_CHUNK: usize = 500;

/// The id of the world's `/robots` channel (in robot 0's block, above every channel of
/// [`schema::CHANNELS`]).
pub const ROBOTS_CHANNEL: u32 = ROBOT_STRIDE - 1;

/// The `/robots` topic.
pub const ROBOTS_TOPIC: &str = "/robots";

/// The JSON schema of `/robots` messages.
pub fn robots_schema() -> String {
    serde_json::json!({"title": "player.Robots", "type": "object", "properties": {
        "timestamp": {"type": "object", "properties": {
            "sec": {"type": "integer"}, "nsec": {"type": "integer"}}},
        "robots": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "x": {"type": "number"}, "y": {"type": "number"},
            "heading": {"type": "number"}, "speed": {"type": "number"}}}}}})
    .to_string()
}

/// One robot served by an endpoint.
pub struct WebRobot {
    /// Its name (the prefix of its topics when the endpoint serves several robots).
    pub name: String,
    /// Its registry.
    pub registry: Addr<Registry>,
    /// Its device codes.
    pub devices: Vec<u8>,
    /// Its devices (command watchdog as configured) and their drivers, for the read-only
    /// parameters.
    pub specs: Vec<(DeviceSpec, String)>,
    /// The channels advertised for it (those of its devices; the map where there is one).
    pub channels: Vec<Channel>,
}

/// The robots an endpoint serves and how their channels are named.
pub struct Robots {
    list: Vec<WebRobot>,
    by_name: HashMap<String, usize>,
}

impl Robots {
    /// The robots of an endpoint, in configuration order (at least one). Where several
    /// robots are served, only the first keeps the walls' channel (`/walls`, the world's,
    /// advertised once).
    pub fn new(mut list: Vec<WebRobot>) -> Robots {
        if list.len() > 1 {
            for r in list.iter_mut().skip(1) {
                r.channels.retain(|c| c.source != Source::Map);
            }
        }
        let by_name = list
            .iter()
            .enumerate()
            .map(|(k, r)| (r.name.clone(), k))
            .collect();
        Robots { list, by_name }
    }

    /// Whether the endpoint serves more than one robot (topics are then under the robots'
    /// names).
    pub fn several(&self) -> bool {
        self.list.len() > 1
    }

    /// How many robots.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none (never, for a started endpoint).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Robot `k`.
    pub fn get(&self, k: usize) -> Option<&WebRobot> {
        self.list.get(k)
    }

    /// Every robot, in order.
    pub fn iter(&self) -> impl Iterator<Item = &WebRobot> {
        self.list.iter()
    }

    /// The robot named `name`.
    pub fn by_name(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// What channel id `id` is: the robot and the channel of [`schema::CHANNELS`], when
    /// the endpoint advertises it.
    pub fn channel(&self, id: u32) -> Option<(usize, &'static Channel)> {
        let k = usize::try_from(id / ROBOT_STRIDE).ok()?;
        let local = id % ROBOT_STRIDE;
        let r = self.list.get(k)?;
        if !r.channels.iter().any(|c| c.id == local) {
            return None;
        }
        schema::CHANNELS
            .iter()
            .find(|c| c.id == local)
            .map(|c| (k, c))
    }

    /// The id robot `k`'s `channel` is advertised with.
    pub fn channel_id(k: usize, channel: &Channel) -> u32 {
        u32::try_from(k)
            .unwrap_or(u32::MAX / ROBOT_STRIDE)
            .saturating_mul(ROBOT_STRIDE)
            .saturating_add(channel.id)
    }

    /// The topic robot `k`'s `channel` is advertised as.
    pub fn topic(&self, k: usize, channel: &Channel) -> String {
        match self.list.get(k) {
            Some(r) if self.several() && channel.source != Source::Map => {
                format!("/{}{}", r.name, channel.topic)
            }
            _ => channel.topic.to_string(),
        }
    }

    /// A topic a client publishes on, split into the robot and the topic's name within
    /// it: `/<robot>/cmd_vel` → (the robot, `/cmd_vel`) where several robots are served,
    /// the topic as it is (robot 0) where one is.
    pub fn split_topic<'t>(&self, topic: &'t str) -> Option<(usize, &'t str)> {
        if !self.several() {
            return Some((0, topic));
        }
        let rest = topic.strip_prefix('/')?;
        // A robot's name may itself hold a '/': the shortest name that matches wins.
        rest.match_indices('/')
            .find_map(|(i, _)| self.by_name(&rest[..i]).map(|k| (k, &topic[i + 1..])))
    }

    /// The robot's frame `frame` (`odom`, `base_link`) as its messages name it.
    pub fn frame(&self, k: usize, frame: &str) -> String {
        match self.list.get(k) {
            Some(r) if self.several() => format!("{}/{frame}", r.name),
            _ => frame.to_string(),
        }
    }

    /// The robots a client's `?robots=` value picks (see the module's documentation), in
    /// the endpoint's order.
    pub fn select(&self, value: &str) -> Vec<usize> {
        let picks: Vec<&str> = value.split(',').filter(|p| !p.is_empty()).collect();
        (0..self.list.len())
            .filter(|&k| {
                let name = self.list[k].name.as_str();
                picks.iter().any(|p| match p.strip_suffix('*') {
                    Some(head) => name.starts_with(head),
                    None => name == *p,
                })
            })
            .collect()
    }

    /// The `advertise` message for the channels of the robots `picked[from..]` (all robots
    /// when `picked` is `None`), at most [`ADVERTISE_CHUNK`] channels (whole robots, at
    /// least one), and where the next chunk starts (`None`: that was the last). The first
    /// chunk of an endpoint serving several robots also has the world's `/robots`. Each
    /// channel is advertised in `encoding` where it has it ([`Encoding::for_channel`]).
    pub fn advertise_from(
        &self,
        picked: Option<&[usize]>,
        from: usize,
        encoding: Encoding,
    ) -> (String, Option<usize>) {
        let mut out = String::from(r#"{"op":"advertise","channels":["#);
        let mut n = 0;
        if from == 0 && self.several() {
            let schema = serde_json::Value::from(robots_schema()).to_string();
            out.push_str(&format!(
                r#"{{"id":{ROBOTS_CHANNEL},"topic":"{ROBOTS_TOPIC}","encoding":"json","schemaName":"player.Robots","schema":{schema},"schemaEncoding":"jsonschema"}}"#
            ));
            n += 1;
            // The world's walls whoever is picked.
            if let Some(map) = self.list[0]
                .channels
                .iter()
                .find(|c| c.source == Source::Map)
            {
                if picked.is_some_and(|p| !p.contains(&0)) {
                    out.push_str(&format!(
                        r#",{{"id":{},"topic":"{}",{}}}"#,
                        map.id,
                        map.topic,
                        schema_fields(map, encoding)
                    ));
                    n += 1;
                }
            }
        }
        let len = picked.map_or(self.list.len(), <[usize]>::len);
        let mut i = from;
        while i < len {
            let k = picked.map_or(i, |p| p[i]);
            let r = &self.list[k];
            if n > 0 && n + r.channels.len() > ADVERTISE_CHUNK {
                break;
            }
            for c in &r.channels {
                if n > 0 {
                    out.push(',');
                }
                let topic = serde_json::Value::from(self.topic(k, c)).to_string();
                out.push_str(&format!(
                    r#"{{"id":{},"topic":{topic},{}}}"#,
                    Self::channel_id(k, c),
                    schema_fields(c, encoding)
                ));
                n += 1;
            }
            i += 1;
        }
        out.push_str("]}");
        (out, (i < len).then_some(i))
    }
}

/// The encoding and schema fields of a channel's advertisement in `encoding` (made once
/// per schema and encoding).
fn schema_fields(c: &Channel, encoding: Encoding) -> &'static str {
    static FIELDS: OnceLock<Vec<(u32, Encoding, String)>> = OnceLock::new();
    let all = FIELDS.get_or_init(|| {
        let mut all = Vec::new();
        for c in schema::CHANNELS.iter() {
            for asked in [Encoding::Json, Encoding::Protobuf] {
                let e = asked.for_channel(c);
                let v = serde_json::json!({"encoding": e.name(), "schemaName": c.schema_name,
                    "schema": e.schema_text(c.schema_name),
                    "schemaEncoding": e.schema_encoding()});
                let s = v.to_string();
                // The object's fields without its braces, to follow "id" and "topic".
                all.push((c.id, asked, s[1..s.len() - 1].to_string()));
            }
        }
        all
    });
    all.iter()
        .find(|(id, e, _)| *id == c.id && *e == encoding)
        .map_or("", |(_, _, s)| s.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_channel_id_is_below_the_stride() {
        assert!(schema::CHANNELS
            .iter()
            .all(|c| c.id > 0 && c.id < ROBOT_STRIDE));
    }

    #[test]
    fn schema_fields_are_a_json_object_s_inside() {
        for c in schema::CHANNELS {
            let v: serde_json::Value =
                serde_json::from_str(&format!("{{{}}}", schema_fields(c, Encoding::Json))).unwrap();
            assert_eq!(v["schemaName"], c.schema_name);
            assert_eq!(v["encoding"], "json");
            assert!(v["schema"].as_str().is_some_and(|s| s.starts_with('{')));
            // Protobuf where the channel has it: the descriptor set in base64.
            let v: serde_json::Value =
                serde_json::from_str(&format!("{{{}}}", schema_fields(c, Encoding::Protobuf)))
                    .unwrap();
            let e = Encoding::Protobuf.for_channel(c);
            assert_eq!(v["encoding"], e.name());
            assert_eq!(v["schemaEncoding"], e.schema_encoding());
            assert_eq!(v["schema"], e.schema_text(c.schema_name));
        }
    }
}
