//! Reading a recording back: the raw 0.7.4a channels of one robot of an MCAP file written
//! by the recorder (`player::record`), in time order.
//!
//! The file is read front to back with the `mcap` crate's streaming reader, so a recording
//! whose writer was killed (no summary, no footer) reads up to its last complete record.
//! Every record's length is bounded before anything is allocated for it, and the file's
//! size is checked against a limit before it is read. A reading larger than a data packet
//! may carry (`player_proto::MAX_PAYLOAD`) is skipped and counted.

use bytes::Bytes;
use mcap::records::Record;
use mcap::sans_io::linear_reader::{LinearReadEvent, LinearReader, LinearReaderOptions};
use player_proto::MAX_PAYLOAD;
use player_proto::RAW_ENCODING;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The largest record the reader accepts (chunks included): the recorder's chunks are at
/// most 64 MiB.
const RECORD_LIMIT: usize = 80 * 1024 * 1024;

/// One recorded reading.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// When it was taken (the driver's timestamp), nanoseconds since the Unix epoch.
    pub time: u64,
    /// The device code.
    pub device: u8,
    /// The `<data>` field exactly as recorded.
    pub data: Bytes,
}

/// One robot's readings from a recording.
#[derive(Debug, Clone, Default)]
pub struct Recording {
    /// The robot's name.
    pub robot: String,
    /// Each recorded device and its command size, if it took commands.
    pub devices: BTreeMap<u8, Option<usize>>,
    /// The readings in time order (stable: readings of one instant keep their order).
    pub readings: Vec<Recorded>,
    /// Why the file ended early, when it did (a killed recorder leaves no footer).
    pub truncated: Option<String>,
    /// Readings skipped because they were larger than a data packet may be.
    pub oversized: u64,
}

struct RawChannel {
    robot: String,
    device: u8,
    command_size: Option<usize>,
}

/// `/<robot>/<code>` with a one-character code, as the recorder names raw data channels.
fn parse_topic(topic: &str) -> Option<(String, u8)> {
    let rest = topic.strip_prefix('/')?;
    let (robot, code) = rest.rsplit_once('/')?;
    match code.as_bytes() {
        [c] if !robot.is_empty() => Some((robot.to_string(), *c)),
        _ => None,
    }
}

/// Reads the readings of `robot` (the first robot in the file when `None`) from the MCAP
/// file at `path`, refusing files larger than `max_bytes`.
pub fn load(path: &Path, robot: Option<&str>, max_bytes: u64) -> Result<Recording, String> {
    let name = path.display();
    let mut file = File::open(path).map_err(|e| format!("cannot open recording '{name}': {e}"))?;
    let len = file
        .metadata()
        .map_err(|e| format!("recording '{name}': {e}"))?
        .len();
    if len > max_bytes {
        return Err(format!(
            "recording '{name}' is {len} bytes, more than max_bytes ({max_bytes})"
        ));
    }
    let mut reader = LinearReader::new_with_options(
        LinearReaderOptions::default().with_record_length_limit(RECORD_LIMIT),
    );
    let mut channels: HashMap<u16, RawChannel> = HashMap::new();
    let mut rec = Recording {
        robot: robot.unwrap_or_default().to_string(),
        ..Default::default()
    };
    let mut seen = 0usize;
    while let Some(event) = reader.next_event() {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                rec.truncated = Some(e.to_string());
                break;
            }
        };
        match event {
            LinearReadEvent::ReadRequest(need) => {
                let n = file
                    .read(reader.insert(need.min(1 << 20)))
                    .map_err(|e| format!("recording '{name}': {e}"))?;
                reader.notify_read(n);
            }
            LinearReadEvent::Record { opcode, data } => {
                let record = match mcap::parse_record(opcode, data) {
                    Ok(r) => r,
                    Err(e) => {
                        rec.truncated = Some(e.to_string());
                        break;
                    }
                };
                match record {
                    Record::Channel(ch) if ch.message_encoding == RAW_ENCODING => {
                        let Some((r, device)) = parse_topic(&ch.topic) else {
                            continue;
                        };
                        if rec.robot.is_empty() {
                            rec.robot = r.clone();
                        }
                        let command_size = ch
                            .metadata
                            .get("command_size")
                            .and_then(|s| s.parse::<usize>().ok());
                        channels.insert(
                            ch.id,
                            RawChannel {
                                robot: r,
                                device,
                                command_size,
                            },
                        );
                    }
                    Record::Message { header, data } => {
                        seen += 1;
                        let Some(ch) = channels.get(&header.channel_id) else {
                            continue;
                        };
                        if ch.robot != rec.robot {
                            continue;
                        }
                        if data.len() > MAX_PAYLOAD {
                            rec.oversized += 1;
                            continue;
                        }
                        rec.devices.insert(ch.device, ch.command_size);
                        rec.readings.push(Recorded {
                            time: header.log_time,
                            device: ch.device,
                            data: Bytes::copy_from_slice(&data),
                        });
                    }
                    _ => {}
                }
            }
        }
    }
    if rec.readings.is_empty() {
        let why = match (&rec.truncated, robot) {
            (Some(e), _) => format!(": the file ends after {seen} messages ({e})"),
            (None, Some(r)) => format!(" of robot '{r}'"),
            (None, None) => String::new(),
        };
        return Err(format!("recording '{name}' holds no device readings{why}"));
    }
    rec.readings.sort_by_key(|r| r.time);
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_topics_name_robot_and_code() {
        assert_eq!(parse_topic("/pioneer/l"), Some(("pioneer".into(), b'l')));
        assert_eq!(parse_topic("/a/b/p"), Some(("a/b".into(), b'p')));
        assert_eq!(parse_topic("/pioneer/l/scan"), None);
        assert_eq!(parse_topic("//l"), None);
        assert_eq!(parse_topic("pioneer/l"), None);
    }
}
