//! One recording file: the MCAP writer on a file that counts its bytes, and every channel
//! of the recorded robots declared with its schema.

use crate::layout;
use crate::{RecordError, RecordSettings, RecordSource, RAW_ENCODING, RAW_SCHEMA_ENCODING};
use mcap::{WriteOptions, Writer};
pub use player_core::registry::Sent;
use player_proto::device;
use player_web::schema::{self as foxglove, Source};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A file that counts what is written to it and answers "where am I" without a system
/// call: the MCAP writer asks for its position and never seeks otherwise (its chunks are
/// built in memory, then written in one go). The count is shared so the recorder can read
/// it while the writer owns the file.
pub(crate) struct CountingFile {
    file: File,
    written: Arc<AtomicU64>,
}

impl Write for CountingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Seek for CountingFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match pos {
            SeekFrom::Current(0) => Ok(self.written.load(Ordering::Relaxed)),
            _ => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the recording file is written front to back",
            )),
        }
    }
}

/// What a channel carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Stream {
    Data,
    Sent(Sent),
    Foxglove(u32),
    /// A map device's whole map (`/<robot>/M/map`).
    Map,
}

/// The viewer's `/map` channel (`foxglove.Grid`), recorded from the whole map.
pub(crate) fn grid_channel() -> Option<&'static foxglove::Channel> {
    foxglove::CHANNELS.iter().find(|c| c.source == Source::Grid)
}

/// The schema data of the whole-map channel.
const MAP_LAYOUT: &[u8] = b"A map device's whole map, once per map_id: the 28 bytes of its M \
reading (u32 map_id, u32 width, u32 height (cells), u32 resolution um per cell, i32 origin_x mm, \
i32 origin_y mm, i32 origin_heading arc-seconds; big-endian), then width * height i8 cells row \
by row from the lower-left cell: -1 free, 0 unknown, +1 occupied (the cells of x M t's answers).";

/// The web endpoint's Foxglove channels converted from `code`'s readings.
pub(crate) fn foxglove_channels(code: u8) -> impl Iterator<Item = &'static foxglove::Channel> {
    foxglove::CHANNELS
        .iter()
        .filter(move |c| c.source == Source::Device(code))
}

/// One open MCAP file.
pub(crate) struct Output {
    pub(crate) writer: Writer<CountingFile>,
    written: Arc<AtomicU64>,
    pub(crate) path: PathBuf,
    pub(crate) opened: Instant,
    pub(crate) channels: HashMap<(usize, u8, Stream), u16>,
    /// Messages written since the last chunk was closed by the timer.
    pub(crate) pending: u64,
}

/// The schema data of every device's configs channel.
const CONFIG_LAYOUT: &[u8] =
    b"Player 0.7.4a config: u8 config code, then its arguments, as received.";

/// The schema name of a device's raw channel.
fn schema_name(code: u8, what: &str) -> String {
    match device::name(code) {
        "unknown" => format!("player.device_{}.{what}", char::from(code)),
        name => format!("player.{name}.{what}"),
    }
}

impl Output {
    /// Creates file `path` and declares every channel of `sources`.
    pub(crate) fn open(
        path: &Path,
        settings: &RecordSettings,
        sources: &[RecordSource],
    ) -> Result<Output, RecordError> {
        let file = File::create(path).map_err(|source| RecordError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        let written = Arc::new(AtomicU64::new(0));
        let sink = CountingFile {
            file,
            written: written.clone(),
        };
        let what = |source| RecordError::Write {
            path: path.to_path_buf(),
            source,
        };
        let mut writer = WriteOptions::new()
            .compression(None)
            .chunk_size(Some(settings.chunk_bytes))
            .disable_seeking(true)
            .profile("")
            .library(format!("player {}", env!("CARGO_PKG_VERSION")))
            .create(sink)
            .map_err(what)?;
        let mut channels = HashMap::new();
        for (ri, src) in sources.iter().enumerate() {
            for (spec, driver) in &src.devices {
                let code = spec.code;
                let c = char::from(code);
                let mut meta = BTreeMap::new();
                meta.insert("robot".to_string(), src.robot.clone());
                meta.insert("device".to_string(), c.to_string());
                meta.insert(
                    "device_name".to_string(),
                    player_kit::log::device(code).to_string(),
                );
                meta.insert("driver".to_string(), driver.clone());
                if let Some(n) = spec.command_size {
                    meta.insert("command_size".to_string(), n.to_string());
                }
                let topic = format!("/{}/{c}", src.robot);
                let mut add = |stream, schema: (&str, &str, &[u8]), topic: &str, encoding: &str| {
                    let id = declare(&mut writer, schema, topic, encoding, &meta).map_err(what)?;
                    channels.insert((ri, code, stream), id);
                    Ok::<_, RecordError>(())
                };
                if spec.readable {
                    let (name, layout) = (schema_name(code, "data"), layout::layout(code));
                    let schema = (&name[..], RAW_SCHEMA_ENCODING, layout.as_bytes());
                    add(Stream::Data, schema, &topic, RAW_ENCODING)?;
                    let grid = grid_channel().filter(|_| code == device::MAP);
                    for f in foxglove_channels(code)
                        .chain(grid)
                        .filter(|_| settings.foxglove)
                    {
                        let e = settings.foxglove_encoding.for_channel(f);
                        let data = e.schema_data(f.schema_name);
                        let schema = (f.schema_name, e.schema_encoding(), &data[..]);
                        let topic = format!("/{}{}", src.robot, f.topic);
                        add(Stream::Foxglove(f.id), schema, &topic, e.name())?;
                    }
                    if code == device::MAP {
                        let schema = ("player.map.whole", RAW_SCHEMA_ENCODING, MAP_LAYOUT);
                        add(Stream::Map, schema, &format!("{topic}/map"), RAW_ENCODING)?;
                    }
                }
                if spec.command_size.is_some() {
                    let (name, layout) =
                        (schema_name(code, "command"), layout::command_layout(code));
                    let schema = (&name[..], RAW_SCHEMA_ENCODING, layout.as_bytes());
                    let topic = format!("{topic}/cmd");
                    add(Stream::Sent(Sent::Command), schema, &topic, RAW_ENCODING)?;
                }
                let schema = ("player.config", RAW_SCHEMA_ENCODING, CONFIG_LAYOUT);
                let topic = format!("{topic}/cfg");
                add(Stream::Sent(Sent::Config), schema, &topic, RAW_ENCODING)?;
            }
        }
        // No flush here: the schemas and channels go in the first chunk with the first
        // messages (an early flush would close a chunk without messages, which has no
        // message index and a zero start time; Foxglove refuses such a file).
        Ok(Output {
            writer,
            written,
            path: path.to_path_buf(),
            opened: Instant::now(),
            channels,
            pending: 0,
        })
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

/// Declares a channel on `topic` in message `encoding` and its `schema` (name, encoding,
/// data; the writer declares a schema once however many channels name it); returns the
/// channel's id.
fn declare(
    writer: &mut Writer<CountingFile>,
    (name, schema_encoding, data): (&str, &str, &[u8]),
    topic: &str,
    encoding: &str,
    meta: &BTreeMap<String, String>,
) -> Result<u16, mcap::McapError> {
    let schema = writer.add_schema(name, schema_encoding, data)?;
    writer.add_channel(schema, topic, encoding, meta)
}
