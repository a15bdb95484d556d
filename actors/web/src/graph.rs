//! The connection graph (`connectionGraphUpdate`): who reads and who writes each device of
//! the robot, from the registry's holders ([`DeviceHolders`]). Pure.
//!
//! Each device is a topic its driver publishes, named after the device (`/laser`,
//! `/position`, `/sonar`, ...), whose subscribers are the sessions reading it; a device
//! that takes commands also has a command topic (`/cmd_vel` for the position device,
//! `/ptz/cmd`, `/gripper/cmd`, else `/<device>/cmd`) which its writers publish and its
//! driver subscribes to. Ids name who it is: `driver <name>`, `tcp <address>` for a
//! 0.7.4a client, `web <address>`, `zenoh`, `ros2`, `recorder` (a name two sessions share
//! gets ` #<session>`), and `+N more` where a device has more holders than the registry
//! lists. The services are advertised by the server itself.

use player_core::registry::{DeviceHolders, HolderEntry};
use player_proto::device;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;

/// Ids per name (topic or service).
type Ids = BTreeMap<String, BTreeSet<String>>;

/// One snapshot of the graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    /// Topic → who publishes it.
    pub published: Ids,
    /// Topic → who subscribes to it.
    pub subscribed: Ids,
    /// Service → who provides it.
    pub services: Ids,
}

/// The topic of a device's readings.
pub fn reading_topic(code: u8) -> String {
    match device::name(code) {
        "unknown" => format!("/device_{}", char::from(code)),
        name => format!("/{name}"),
    }
}

/// The topic of a device's commands (the web viewer's own where it has one).
pub fn command_topic(code: u8) -> String {
    match code {
        device::POSITION => "/cmd_vel".into(),
        device::PTZ => "/ptz/cmd".into(),
        device::GRIPPER => "/gripper/cmd".into(),
        _ => format!("{}/cmd", reading_topic(code)),
    }
}

/// How a holder is named: a plain socket address is a TCP client of the 0.7.4a protocol;
/// front ends name themselves. Cut to 64 characters.
pub fn label(client: &str) -> String {
    let name = if client.parse::<SocketAddr>().is_ok() {
        format!("tcp {client}")
    } else {
        client.to_string()
    };
    name.chars().take(64).collect()
}

/// The graph of `devices`, the services provided by `server`.
pub fn build(devices: &[DeviceHolders], server: &str, services: &[&str]) -> Graph {
    let mut g = Graph::default();
    // One id per session, unique even where two share a name.
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut taken: HashMap<String, u64> = HashMap::new();
    let mut id_of = |h: &HolderEntry| -> String {
        let session = h.session.get();
        if let Some(n) = names.get(&session) {
            return n.clone();
        }
        let base = label(&h.client);
        let name = match taken.get(&base) {
            Some(&other) if other != session => format!("{base} #{session}"),
            _ => base,
        };
        taken.entry(name.clone()).or_insert(session);
        names.insert(session, name.clone());
        name
    };
    for d in devices {
        let driver = format!("driver {}", d.driver);
        let more = (d.more > 0).then(|| format!("+{} more", d.more));
        if d.readable {
            let topic = reading_topic(d.code);
            g.published
                .entry(topic.clone())
                .or_default()
                .insert(driver.clone());
            let readers = g.subscribed.entry(topic).or_default();
            for h in d.holders.iter().filter(|h| h.read) {
                readers.insert(id_of(h));
            }
            readers.extend(more.clone());
        }
        if d.commandable {
            let topic = command_topic(d.code);
            g.subscribed
                .entry(topic.clone())
                .or_default()
                .insert(driver.clone());
            let writers = g.published.entry(topic).or_default();
            for h in d.holders.iter().filter(|h| h.write) {
                writers.insert(id_of(h));
            }
            writers.extend(more);
        }
    }
    for s in services {
        g.services
            .entry(s.to_string())
            .or_default()
            .insert(server.to_string());
    }
    g
}

/// The `connectionGraphUpdate` taking a client from `old` (the default graph for a new
/// subscriber: everything) to `new`; `None` when nothing changed.
pub fn update(old: &Graph, new: &Graph) -> Option<String> {
    let changed = |o: &Ids, n: &Ids, key: &str| -> Vec<Value> {
        n.iter()
            .filter(|(name, ids)| o.get(*name) != Some(*ids))
            .map(|(name, ids)| json!({"name": name, key: ids}))
            .collect()
    };
    let published = changed(&old.published, &new.published, "publisherIds");
    let subscribed = changed(&old.subscribed, &new.subscribed, "subscriberIds");
    let services = changed(&old.services, &new.services, "providerIds");
    let topics = |g: &Graph| -> BTreeSet<String> {
        g.published
            .keys()
            .chain(g.subscribed.keys())
            .cloned()
            .collect()
    };
    let removed_topics: Vec<String> = topics(old).difference(&topics(new)).cloned().collect();
    let removed_services: Vec<&String> = old
        .services
        .keys()
        .filter(|s| !new.services.contains_key(*s))
        .collect();
    if published.is_empty()
        && subscribed.is_empty()
        && services.is_empty()
        && removed_topics.is_empty()
        && removed_services.is_empty()
    {
        return None;
    }
    Some(
        json!({"op": "connectionGraphUpdate", "publishedTopics": published,
            "subscribedTopics": subscribed, "advertisedServices": services,
            "removedTopics": removed_topics, "removedServices": removed_services})
        .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_core::registry::SessionId;

    fn holder(session: u64, client: &str, read: bool, write: bool) -> HolderEntry {
        HolderEntry {
            session: SessionId::from(session),
            client: client.into(),
            read,
            write,
        }
    }

    fn robot(holders_p: Vec<HolderEntry>, holders_l: Vec<HolderEntry>) -> Vec<DeviceHolders> {
        vec![
            DeviceHolders {
                code: b'l',
                driver: "sim".into(),
                readable: true,
                commandable: false,
                holders: holders_l,
                more: 0,
            },
            DeviceHolders {
                code: b'p',
                driver: "sim".into(),
                readable: true,
                commandable: true,
                holders: holders_p,
                more: 0,
            },
        ]
    }

    #[test]
    fn readers_subscribe_to_a_devices_topic_and_writers_publish_its_commands() {
        let g = build(
            &robot(
                vec![
                    holder(3, "web 127.0.0.1:9", false, true),
                    holder(4, "zenoh", true, false),
                ],
                vec![
                    holder(2, "127.0.0.1:4000", true, false),
                    holder(5, "recorder", true, false),
                ],
            ),
            "player",
            &["/estop"],
        );
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(g.published["/laser"], set(&["driver sim"]));
        assert_eq!(
            g.subscribed["/laser"],
            set(&["tcp 127.0.0.1:4000", "recorder"])
        );
        assert_eq!(g.subscribed["/position"], set(&["zenoh"]));
        assert_eq!(g.published["/cmd_vel"], set(&["web 127.0.0.1:9"]));
        assert_eq!(g.subscribed["/cmd_vel"], set(&["driver sim"]));
        assert!(
            !g.published.contains_key("/laser/cmd"),
            "the laser takes no commands"
        );
        assert_eq!(g.services["/estop"], set(&["player"]));
    }

    #[test]
    fn two_sessions_of_one_name_get_ids_of_their_own_and_the_uncounted_are_counted() {
        let mut r = robot(
            vec![holder(7, "ros2", true, true)],
            vec![
                holder(6, "ros2", true, false),
                holder(7, "ros2", true, false),
            ],
        );
        r[0].more = 40;
        let g = build(&r, "player", &[]);
        let laser = &g.subscribed["/laser"];
        assert!(laser.contains("ros2") && laser.contains("ros2 #7") && laser.contains("+40 more"));
        assert!(
            g.published["/cmd_vel"].contains("ros2 #7"),
            "the same id everywhere"
        );
    }

    #[test]
    fn an_update_carries_what_changed_and_nothing_when_nothing_did() {
        let before = build(&robot(vec![], vec![]), "player", &["/estop"]);
        let full: Value =
            serde_json::from_str(&update(&Graph::default(), &before).unwrap()).unwrap();
        assert_eq!(full["op"], "connectionGraphUpdate");
        assert_eq!(full["publishedTopics"].as_array().unwrap().len(), 3);
        assert_eq!(full["advertisedServices"][0]["providerIds"][0], "player");
        assert_eq!(update(&before, &before), None);
        let after = build(
            &robot(vec![], vec![holder(2, "127.0.0.1:4000", true, false)]),
            "player",
            &["/estop"],
        );
        let d: Value = serde_json::from_str(&update(&before, &after).unwrap()).unwrap();
        assert_eq!(d["publishedTopics"], json!([]));
        assert_eq!(
            d["subscribedTopics"],
            json!([{"name": "/laser", "subscriberIds": ["tcp 127.0.0.1:4000"]}])
        );
        let gone: Value =
            serde_json::from_str(&update(&after, &Graph::default()).unwrap()).unwrap();
        assert_eq!(gone["removedTopics"].as_array().unwrap().len(), 3);
        assert_eq!(gone["removedServices"], json!(["/estop"]));
    }
}
