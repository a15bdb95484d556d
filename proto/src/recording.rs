//! Reading a recording back (feature `recording`): the raw 0.7.4a channels of one robot of
//! an MCAP file written by the recorder (`player::record`), in time order. The replay
//! driver (`-replay`) plays what this reads; it is here, in the pure protocol crate, so the
//! fuzz target `replay_reader` reaches it without an actor crate.
//!
//! The file is read front to back with the `mcap` crate's streaming reader, so a recording
//! whose writer was killed (no summary, no footer) reads up to its last complete record.
//! Every record's length is bounded before anything is allocated for it, and the file's
//! size is checked against a limit before it is read. A reading larger than a data packet
//! may carry ([`crate::MAX_PAYLOAD`]) is skipped and counted.

use crate::nav::{MapInfo, MAX_MAP_CELLS};
use crate::{MAX_PAYLOAD, RAW_ENCODING};
use bytes::Bytes;
use mcap::records::Record;
use mcap::sans_io::linear_reader::{LinearReadEvent, LinearReader, LinearReaderOptions};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

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

/// A map recorded whole (`/<robot>/M/map`: its 28-byte `M` reading, then `width * height`
/// `i8` cells row by row from the lower-left, -1 free, 0 unknown, +1 occupied), so a
/// replay answers the map's tiles as the live map device did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedMap {
    /// The map's `M` reading.
    pub info: MapInfo,
    /// Its cells.
    pub cells: Arc<[i8]>,
}

impl RecordedMap {
    /// The map from one message of a `/<robot>/M/map` channel, if it is one: at least the
    /// 28-byte description, at most [`MAX_MAP_CELLS`] cells, and exactly the cells it
    /// says.
    pub fn decode(data: &[u8]) -> Option<RecordedMap> {
        let info = MapInfo::decode(data.get(..MapInfo::SIZE)?).ok()?;
        let n = u64::from(info.width) * u64::from(info.height);
        if n > MAX_MAP_CELLS || data.len() as u64 != MapInfo::SIZE as u64 + n {
            return None;
        }
        let cells = data[MapInfo::SIZE..].iter().map(|&c| c as i8).collect();
        Some(RecordedMap { info, cells })
    }

    /// The message the recorder writes for it ([`RecordedMap::decode`] reads it back).
    pub fn encode(info: &MapInfo, cells: &[i8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(MapInfo::SIZE + cells.len());
        v.extend_from_slice(&info.encode());
        v.extend(cells.iter().map(|&c| c as u8));
        v
    }
}

/// The most maps (distinct map ids) a recording's reader keeps for one robot; a map
/// recorded again under an id it has replaces the earlier copy.
pub const MAX_RECORDED_MAPS: usize = 16;

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
    /// The maps recorded whole (`/<robot>/M/map`), in the order first seen, at most
    /// [`MAX_RECORDED_MAPS`]; messages of that channel that are not a map are skipped.
    pub maps: Vec<RecordedMap>,
}

struct RawChannel {
    robot: String,
    device: u8,
    command_size: Option<usize>,
    /// The channel of whole maps (`/<robot>/M/map`), not of readings.
    map: bool,
}

/// `/<robot>/M/map`, as the recorder names the channel of whole maps: the robot.
fn parse_map_topic(topic: &str) -> Option<&str> {
    let robot = topic.strip_prefix('/')?.strip_suffix("/M/map")?;
    (!robot.is_empty()).then_some(robot)
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
    let file = File::open(path).map_err(|e| format!("cannot open recording '{name}': {e}"))?;
    let len = file
        .metadata()
        .map_err(|e| format!("recording '{name}': {e}"))?
        .len();
    if len > max_bytes {
        return Err(format!(
            "recording '{name}' is {len} bytes, more than max_bytes ({max_bytes})"
        ));
    }
    read(file, &name.to_string(), robot)
}

/// Reads the readings of `robot` (the first robot in the file when `None`) from the MCAP
/// bytes `file` gives, up to its end; `name` names the recording in errors.
///
/// Chunks are taken whole (the `mcap` crate's `emit_chunks`) and the records inside are
/// walked here, each length checked against what is left of its chunk: the crate's own
/// walk subtracts a record's claimed length from the chunk's remainder unchecked (0.26; an
/// overflow panic where overflow checks are on, records read past the chunk where not).
pub fn read(mut file: impl Read, name: &str, robot: Option<&str>) -> Result<Recording, String> {
    let mut reader = LinearReader::new_with_options(
        LinearReaderOptions::default()
            .with_record_length_limit(RECORD_LIMIT)
            .with_emit_chunks(true),
    );
    let mut r = Reading {
        channels: HashMap::new(),
        rec: Recording {
            robot: robot.unwrap_or_default().to_string(),
            ..Default::default()
        },
        seen: 0,
    };
    while let Some(event) = reader.next_event() {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                r.rec.truncated = Some(e.to_string());
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
                if let Err(e) = r.record(opcode, data) {
                    r.rec.truncated = Some(e);
                    break;
                }
            }
        }
    }
    let Reading { mut rec, seen, .. } = r;
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

/// What a read has gathered so far.
struct Reading {
    channels: HashMap<u16, RawChannel>,
    rec: Recording,
    /// Messages seen, of any channel.
    seen: usize,
}

/// Bytes before a record's body: its opcode (1) and length (8, little-endian).
const RECORD_HEAD: usize = 9;

impl Reading {
    /// Takes record `opcode` with body `data`; a chunk's records one by one. An error says
    /// why the file cannot be read on.
    fn record(&mut self, opcode: u8, data: &[u8]) -> Result<(), String> {
        match mcap::parse_record(opcode, data).map_err(|e| e.to_string())? {
            Record::Chunk { header, data } => {
                if !header.compression.is_empty() {
                    return Err(format!(
                        "a chunk compressed with '{}' (the recorder writes them uncompressed)",
                        header.compression
                    ));
                }
                let mut rest: &[u8] = &data;
                while !rest.is_empty() {
                    let Some(head) = rest.get(..RECORD_HEAD) else {
                        return Err("a chunk ends inside a record's header".into());
                    };
                    let mut len = [0u8; 8];
                    len.copy_from_slice(&head[1..]);
                    let len = u64::from_le_bytes(len);
                    let body = usize::try_from(len)
                        .ok()
                        .and_then(|n| rest.get(RECORD_HEAD..RECORD_HEAD.checked_add(n)?))
                        .ok_or_else(|| {
                            format!("a record of {len} bytes runs past the end of its chunk")
                        })?;
                    self.take(mcap::parse_record(head[0], body).map_err(|e| e.to_string())?);
                    rest = &rest[RECORD_HEAD + body.len()..];
                }
                Ok(())
            }
            record => {
                self.take(record);
                Ok(())
            }
        }
    }

    /// Takes one record that is not a chunk: a raw channel, a reading of one.
    fn take(&mut self, record: Record<'_>) {
        let rec = &mut self.rec;
        match record {
            Record::Channel(ch) if ch.message_encoding == RAW_ENCODING => {
                if let Some(r) = parse_map_topic(&ch.topic) {
                    let raw = RawChannel {
                        robot: r.to_string(),
                        device: crate::device::MAP,
                        command_size: None,
                        map: true,
                    };
                    self.channels.insert(ch.id, raw);
                    return;
                }
                let Some((r, device)) = parse_topic(&ch.topic) else {
                    return;
                };
                if rec.robot.is_empty() {
                    rec.robot = r.clone();
                }
                let command_size = ch
                    .metadata
                    .get("command_size")
                    .and_then(|s| s.parse::<usize>().ok());
                self.channels.insert(
                    ch.id,
                    RawChannel {
                        robot: r,
                        device,
                        command_size,
                        map: false,
                    },
                );
            }
            Record::Message { header, data } => {
                self.seen += 1;
                let Some(ch) = self.channels.get(&header.channel_id) else {
                    return;
                };
                if ch.robot != rec.robot {
                    return;
                }
                if ch.map {
                    if let Some(m) = RecordedMap::decode(&data) {
                        let maps = &mut rec.maps;
                        match maps.iter().position(|k| k.info.map_id == m.info.map_id) {
                            Some(i) => maps[i] = m,
                            None if maps.len() < MAX_RECORDED_MAPS => maps.push(m),
                            None => {}
                        }
                    }
                    return;
                }
                if data.len() > MAX_PAYLOAD {
                    rec.oversized += 1;
                    return;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Record `opcode` with `body`, framed.
    fn record(opcode: u8, body: &[u8]) -> Vec<u8> {
        let mut r = vec![opcode];
        r.extend_from_slice(&(body.len() as u64).to_le_bytes());
        r.extend_from_slice(body);
        r
    }

    #[test]
    fn a_record_claiming_more_than_its_chunk_holds_is_an_error() {
        // Magic, a header, then a chunk whose one record claims 100 bytes with 4 in the
        // chunk, and zeros after the chunk (found by the replay_reader fuzz target: the
        // mcap crate's walk of a chunk subtracted the 100 from the 4 left).
        let mut f = b"\x89MCAP0\r\n".to_vec();
        let mut header = Vec::new();
        for s in ["", "test"] {
            header.extend_from_slice(&(s.len() as u32).to_le_bytes());
            header.extend_from_slice(s.as_bytes());
        }
        f.extend(record(0x01, &header));
        let mut inner = vec![0x03];
        inner.extend_from_slice(&100u64.to_le_bytes());
        inner.extend_from_slice(&[0; 4]);
        let mut chunk = Vec::new();
        chunk.extend_from_slice(&0u64.to_le_bytes());
        chunk.extend_from_slice(&0u64.to_le_bytes());
        chunk.extend_from_slice(&(inner.len() as u64).to_le_bytes());
        chunk.extend_from_slice(&0u32.to_le_bytes());
        chunk.extend_from_slice(&0u32.to_le_bytes());
        chunk.extend_from_slice(&(inner.len() as u64).to_le_bytes());
        chunk.extend_from_slice(&inner);
        f.extend(record(0x06, &chunk));
        f.extend_from_slice(&[0; 256]);
        let e = read(&f[..], "broken.mcap", None).unwrap_err();
        assert!(
            e.contains("a record of 100 bytes runs past the end of its chunk"),
            "{e}"
        );
    }

    #[test]
    fn a_recorded_map_is_its_description_and_exactly_its_cells() {
        let info = MapInfo {
            map_id: 7,
            width: 3,
            height: 2,
            resolution: 50_000,
            origin_x: -100,
            origin_y: 200,
            origin_heading: 0,
        };
        let cells = [-1i8, 0, 1, 1, 0, -1];
        let m = RecordedMap::encode(&info, &cells);
        assert_eq!(m.len(), 28 + 6);
        let back = RecordedMap::decode(&m).unwrap();
        assert_eq!((back.info, &back.cells[..]), (info, &cells[..]));
        assert_eq!(RecordedMap::decode(&m[..33]), None, "a cell short");
        assert_eq!(RecordedMap::decode(&m[..20]), None, "no description");
        let huge = MapInfo {
            width: 5001,
            height: 5000,
            ..info
        };
        assert_eq!(RecordedMap::decode(&huge.encode()), None, "over the bound");
        assert_eq!(parse_map_topic("/nav/M/map"), Some("nav"));
        assert_eq!(parse_map_topic("/a/b/M/map"), Some("a/b"));
        assert_eq!(parse_map_topic("/M/map"), None);
        assert_eq!(parse_topic("/nav/M/map"), None);
    }

    #[test]
    fn raw_topics_name_robot_and_code() {
        assert_eq!(parse_topic("/pioneer/l"), Some(("pioneer".into(), b'l')));
        assert_eq!(parse_topic("/a/b/p"), Some(("a/b".into(), b'p')));
        assert_eq!(parse_topic("/pioneer/l/scan"), None);
        assert_eq!(parse_topic("//l"), None);
        assert_eq!(parse_topic("pioneer/l"), None);
    }
}
