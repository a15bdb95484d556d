//! The Foxglove WebSocket protocol's wire (`foxglove.websocket.v1`, also offered as
//! `foxglove.sdk.v1`), pure: no actors, no sockets, no async runtime, no WebSocket library.
//! The web viewer (`player-web`, an actor crate) wraps it: it owns the connections and the
//! sessions, this crate owns the bytes.
//!
//! By part: [`protocol`] parses what a client sends (`parse_text`: the JSON operations;
//! `parse_binary`: `clientPublish` message data and service call requests) and makes the
//! server's messages (`serverInfo`, `advertise`, `messageData`, ...); [`playback`] parses a
//! client's playback control request (the other binary frame a client sends); [`channels`]
//! is the table of channels a client may subscribe to; [`encoding`] is how a client wants
//! them (protobuf or JSON) with each one's schema; [`jsonschema`] the JSON schemas;
//! [`commands`] makes a client's published JSON messages and service calls into what the
//! robot is to be told (commands and configs in the devices' layouts).
//!
//! Everything a client sends is bounded here before anything is kept: the fuzz targets
//! `foxglove_client` and `foxglove_commands` (`fuzz/`, docs/fuzzing.md) feed the parsers
//! any bytes.

pub mod channels;
pub mod commands;
pub mod encoding;
pub mod jsonschema;
pub mod playback;
pub mod protocol;
