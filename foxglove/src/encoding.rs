//! How a client wants the channels' messages encoded, and each channel's schema in that
//! encoding: protobuf (Foxglove's own `foxglove.*` message types, their
//! `FileDescriptorSet`s from the `foxglove` crate) or JSON (the JSON schemas of
//! [`jsonschema`]). Pure: names in, names and schemas out.
//!
//! A client chooses per connection, with `?encoding=` on the WebSocket URL: `protobuf` (the
//! default) sends every channel whose schema Foxglove defines in protobuf, `json` sends
//! every channel as JSON. Our own schemas (`player.*`) are JSON either way. The readings'
//! encoders themselves are the web viewer's (`player_web::protobuf`), on the server's
//! reading types.

use crate::channels::Channel;
use crate::jsonschema;
use base64::Engine;
use foxglove::messages as fg;
use foxglove::Encode;

/// How a client wants its channels, and how one channel is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Protobuf where Foxglove defines the schema, JSON elsewhere (the default).
    #[default]
    Protobuf,
    /// JSON with JSON schemas, every channel.
    Json,
}

/// An `?encoding=` value we do not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown encoding '{0}': use json or protobuf")]
pub struct UnknownEncoding(pub String);

impl Encoding {
    /// The encoding named `name` (`json` or `protobuf`, as on the URL).
    pub fn parse(name: &str) -> Result<Encoding, UnknownEncoding> {
        match name {
            "protobuf" => Ok(Encoding::Protobuf),
            "json" => Ok(Encoding::Json),
            other => Err(UnknownEncoding(other.chars().take(40).collect())),
        }
    }

    /// The message encoding's name in an `advertise` and in MCAP (`json`, `protobuf`).
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Protobuf => "protobuf",
            Encoding::Json => "json",
        }
    }

    /// The schema encoding's name (`jsonschema`, `protobuf`).
    pub fn schema_encoding(self) -> &'static str {
        match self {
            Encoding::Protobuf => "protobuf",
            Encoding::Json => "jsonschema",
        }
    }

    /// How `channel` is sent to a client that prefers `self`: protobuf where asked for and
    /// Foxglove defines the schema, otherwise JSON.
    pub fn for_channel(self, channel: &Channel) -> Encoding {
        match self {
            Encoding::Protobuf if descriptor(channel.schema_name).is_some() => Encoding::Protobuf,
            _ => Encoding::Json,
        }
    }

    /// The schema of `schema_name` in this encoding, as bytes (MCAP's schema data): the
    /// JSON schema's text, or the binary `FileDescriptorSet`.
    pub fn schema_data(self, schema_name: &str) -> Vec<u8> {
        match (self, descriptor(schema_name)) {
            (Encoding::Protobuf, Some(d)) => d.to_vec(),
            _ => jsonschema::schema(schema_name).into_bytes(),
        }
    }

    /// The schema of `schema_name` in this encoding as an `advertise` carries it: the JSON
    /// schema's text, or the `FileDescriptorSet` in base64.
    pub fn schema_text(self, schema_name: &str) -> String {
        match (self, descriptor(schema_name)) {
            (Encoding::Protobuf, Some(d)) => base64::engine::general_purpose::STANDARD.encode(d),
            _ => jsonschema::schema(schema_name),
        }
    }
}

/// The `FileDescriptorSet` of a `foxglove.*` schema we serve, `None` for any other name.
pub fn descriptor(schema_name: &str) -> Option<&'static [u8]> {
    fn data<T: Encode>() -> Option<&'static [u8]> {
        match T::get_schema()?.data {
            std::borrow::Cow::Borrowed(b) => Some(b),
            std::borrow::Cow::Owned(_) => None,
        }
    }
    match schema_name {
        "foxglove.FrameTransform" => data::<fg::FrameTransform>(),
        "foxglove.PoseInFrame" => data::<fg::PoseInFrame>(),
        "foxglove.PosesInFrame" => data::<fg::PosesInFrame>(),
        "foxglove.LaserScan" => data::<fg::LaserScan>(),
        "foxglove.SceneUpdate" => data::<fg::SceneUpdate>(),
        "foxglove.ImageAnnotations" => data::<fg::ImageAnnotations>(),
        "foxglove.Grid" => data::<fg::Grid>(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::CHANNELS;

    #[test]
    fn names_parse_back_and_other_names_are_refused() {
        for e in [Encoding::Protobuf, Encoding::Json] {
            assert_eq!(Encoding::parse(e.name()), Ok(e));
        }
        assert_eq!(Encoding::default(), Encoding::Protobuf);
        assert_eq!(Encoding::Json.schema_encoding(), "jsonschema");
        let long = "x".repeat(100);
        assert_eq!(Encoding::parse(&long), Err(UnknownEncoding("x".repeat(40))));
    }

    #[test]
    fn protobuf_where_foxglove_defines_the_schema_json_elsewhere() {
        for c in CHANNELS {
            let proto = Encoding::Protobuf.for_channel(c);
            assert_eq!(
                proto == Encoding::Protobuf,
                descriptor(c.schema_name).is_some()
            );
            assert_eq!(Encoding::Json.for_channel(c), Encoding::Json);
            let json = Encoding::Json.schema_data(c.schema_name);
            assert_eq!(json, jsonschema::schema(c.schema_name).into_bytes());
        }
        assert!(descriptor("player.Misc").is_none());
    }
}
