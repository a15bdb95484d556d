//! A Zenoh session for the tests and benches of the server's Zenoh bridge.

use zenoh::Wait;

/// A Zenoh session in client mode connected to the bridge listening on `port` on loopback
/// (no multicast scouting); panics if it cannot open.
pub fn zenoh_client(port: u16) -> zenoh::Session {
    let mut c = zenoh::Config::default();
    c.insert_json5("mode", "\"client\"").unwrap();
    c.insert_json5("connect/endpoints", &format!("[\"tcp/127.0.0.1:{port}\"]"))
        .unwrap();
    c.insert_json5("scouting/multicast/enabled", "false")
        .unwrap();
    zenoh::open(c)
        .wait()
        .expect("a Zenoh session to the bridge")
}
