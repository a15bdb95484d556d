//! Recording to MCAP: every device's readings as the drivers publish them, whoever reads them.
//!
//! The [`Recorder`] is a subscriber of each robot's registry like a client session: it asks
//! for read access to every readable device (so recording holds the devices open with or
//! without clients) and writes each reading it is sent to an MCAP file with the `mcap`
//! crate, on its own thread so a slow disk never delays a driver or a client.
//!
//! What a file holds:
//!
//! - one channel per device, topic `/<robot>/<code>`, message encoding
//!   [`RAW_ENCODING`]: each message is the `<data>` field of the 0.7.4a data packet, byte for
//!   byte, with the recorder's clock as log time (one clock for every channel), the
//!   driver's timestamp as publish time and the driver's reading
//!   number as sequence; its schema names the device's Table 7 layout;
//! - the web viewer's Foxglove channels of each device, converted as the live endpoint
//!   converts them by default ([`player_web::protobuf`]: the `foxglove.*` schemas in
//!   protobuf, ours in JSON; `foxglove_encoding = "json"` for JSON throughout), under
//!   `/<robot>` (`/<robot>/tf` as
//!   `foxglove.FrameTransform`, `/<robot>/laser` as `foxglove.LaserScan`, sonar cones as a
//!   `foxglove.SceneUpdate`, ...), so Foxglove shows a recording as it shows the robot;
//! - the commands and configs clients send, on `/<robot>/<code>/cmd` and `/<robot>/<code>/cfg`
//!   (raw bytes as received), as the registry passes them on to the drivers (its
//!   [`player_core::registry::Tap`]);
//! - a map device's cells, whole, once per map (`map_id`): the recorder downloads them
//!   tile by tile as a client would (`x M t`, [`player_core::frontend::nav::MapDownload`])
//!   and writes the map on `/<robot>/M/map` (the 28-byte `M` reading and the cells,
//!   [`player_proto::recording::RecordedMap`], which the replay answers tiles from) and as
//!   the viewer's `foxglove.Grid` on `/<robot>/map`; again at the start of each rotated
//!   file.
//!
//! The readings reach the recorder through a queue ([`queue`]): the drivers leave them
//! there on their own threads, stamped with the log time, and the recorder's thread wakes
//! only at its tick (every `chunk_seconds`) to write what came, not once per publish.
//!
//! Chunks are small (`chunk_bytes`, and closed at least every `chunk_seconds`), built in
//! memory and written with one `write` each, so a server killed with SIGKILL leaves a file
//! readable up to its last complete chunk (at most about `chunk_seconds` of readings are
//! lost with it, queued or in the open chunk). Files rotate by size or age: the first is the
//! named path, then `<stem>.1.<ext>`, `<stem>.2.<ext>`, ...
//!
//! A front end of the server ([`player_core::frontend`]): the `[record]` section
//! ([`RecordSettings`]) and the `-record FILE` flag ([`SYNTAX`], [`apply_flag`]) are this
//! crate's; [`start`] returns the [`Recording`] the server attaches.
#![deny(missing_docs)]

pub mod layout;
mod map;
mod output;
pub mod queue;

use actix::prelude::*;
use futures::future::LocalBoxFuture;
pub use layout::{RAW_ENCODING, RAW_SCHEMA_ENCODING};
use map::RobotMap;
use mcap::records::MessageHeader;
use output::{foxglove_channels, Output, Stream};
use player_core::access::AccessSettings;
use player_core::frontend::tap::{RobotTap, Tagged};
use player_core::frontend::{Access, FrontEnd, FrontEndContext, FrontEndKind, Holdings};
use player_core::registry::{Grant, Registry, SessionId, Tap};
pub use player_core::registry::{Sent, Tapped};
use player_core::settings::{
    check_seconds, FlagSpec, FrontEndSyntax, RobotSettings, Settings, SettingsError,
};
use player_kit::driver::{DataRecipient, DeviceData, DeviceError, DeviceSpec, Timestamp};
use player_kit::timer::RunEvery;
use player_proto::device;
use player_web::protobuf::{EncodeReadings, Encoding};
use queue::{Queue, Queued};
use serde::Deserialize;
use slog::{error, info, warn, Logger};
use std::any::Any;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Recording settings (`[record]` in the configuration file; `-record FILE` sets `path`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecordSettings {
    /// The MCAP file to write; empty: no recording. Relative to the configuration file.
    pub path: String,
    /// Start a new file once this many bytes are written (0: never).
    pub max_bytes: u64,
    /// Start a new file after this many seconds (0: never).
    pub max_seconds: f64,
    /// Close a chunk once it holds this many bytes.
    pub chunk_bytes: u64,
    /// Close a chunk at least this often, in seconds: at most this much is lost when the
    /// server is killed.
    pub chunk_seconds: f64,
    /// Also write the web viewer's Foxglove channels of each device.
    pub foxglove: bool,
    /// Their encoding, as the viewer's `?encoding=`: `protobuf` (the default, what the viewer
    /// serves by default: the `foxglove.*` channels in protobuf, ours in JSON) or `json`.
    pub foxglove_encoding: Encoding,
    /// Seconds between tries to open a device whose setup failed.
    pub retry_seconds: f64,
}

impl Default for RecordSettings {
    fn default() -> Self {
        RecordSettings {
            path: String::new(),
            max_bytes: 0,
            max_seconds: 0.0,
            chunk_bytes: 256 * 1024,
            chunk_seconds: 1.0,
            foxglove: true,
            foxglove_encoding: Encoding::default(),
            retry_seconds: 5.0,
        }
    }
}

impl RecordSettings {
    /// Whether recording is on.
    pub fn enabled(&self) -> bool {
        !self.path.is_empty()
    }

    /// The `[record]` section of settings read with [`SYNTAX`] (the defaults when there
    /// is none), checked; errors name the key.
    pub fn from_settings(settings: &Settings) -> Result<Self, SettingsError> {
        let s: RecordSettings = settings.section("record")?;
        s.check(&settings.origin)?;
        Ok(s)
    }

    /// Checks the values; errors name the key.
    pub fn check(&self, origin: &str) -> Result<(), SettingsError> {
        for (key, v) in [
            ("record.max_seconds", self.max_seconds),
            ("record.chunk_seconds", self.chunk_seconds),
            ("record.retry_seconds", self.retry_seconds),
        ] {
            check_seconds(origin, key, v)?;
        }
        if !(0.01..=3600.0).contains(&self.chunk_seconds) {
            return Err(SettingsError::value(
                origin,
                "record.chunk_seconds",
                "must be between 0.01 and 3600",
            ));
        }
        if !(0.1..=3600.0).contains(&self.retry_seconds) {
            return Err(SettingsError::value(
                origin,
                "record.retry_seconds",
                "must be between 0.1 and 3600",
            ));
        }
        if self.chunk_bytes < 1024 || self.chunk_bytes > 64 * 1024 * 1024 {
            return Err(SettingsError::value(
                origin,
                "record.chunk_bytes",
                "must be between 1024 and 67108864",
            ));
        }
        Ok(())
    }
}

/// The recorder's section and flag: `[record]`, `-record FILE`.
pub const SYNTAX: FrontEndSyntax = FrontEndSyntax {
    sections: &["record"],
    robot_keys: &[],
    flags: &[FlagSpec {
        flag: "-record",
        takes_value: true,
    }],
};

/// Applies `-record <file>`: records to `file`, relative to the current directory (not to
/// the configuration file's).
pub fn apply_flag(settings: &mut RecordSettings, file: &str) {
    settings.path = player_core::settings::absolute(file).display().to_string();
}

/// The recorder's client name at the registries: its holdings, and the configs it sends
/// itself (a map's tiles), which its tap is not sent back.
pub(crate) const RECORDER: &str = "recorder";

/// The recorder as a front end of the server: on when `[record] path` (or `-record`) names
/// a file.
pub struct Record;

impl FrontEndKind for Record {
    const NAME: &'static str = "record";
    const SYNTAX: FrontEndSyntax = SYNTAX;
    type Settings = RecordSettings;
    type Running = Recording;
    type Error = RecordError;

    fn settings(core: &Settings) -> Result<RecordSettings, SettingsError> {
        RecordSettings::from_settings(core)
    }

    fn apply_flag(
        settings: &mut RecordSettings,
        _flag: &str,
        value: Option<&str>,
    ) -> Result<(), SettingsError> {
        apply_flag(settings, value.unwrap_or_default());
        Ok(())
    }

    fn check(
        settings: &RecordSettings,
        _robots: &[RobotSettings],
        _access: &AccessSettings,
        origin: &str,
    ) -> Result<(), SettingsError> {
        settings.check(origin)
    }

    fn enabled(settings: &RecordSettings) -> bool {
        settings.enabled()
    }

    fn start<'a>(
        settings: &'a RecordSettings,
        ctx: &'a FrontEndContext,
    ) -> LocalBoxFuture<'a, Result<Recording, RecordError>> {
        Box::pin(async move { start(settings, ctx) })
    }

    fn describe(settings: &RecordSettings, base_dir: &Path) -> String {
        if !settings.enabled() {
            return "recording: off".into();
        }
        let p = Path::new(&settings.path);
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            base_dir.join(p)
        };
        format!("recording: to {}", p.display())
    }
}

/// Why recording could not start (or go on).
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The file cannot be created.
    #[error("cannot create recording file '{}': {source}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The MCAP writer failed.
    #[error("recording file '{}': {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: mcap::McapError,
    },
}

/// A running recording: the front end [`start`] returns.
pub struct Recording {
    handle: RecorderHandle,
}

impl FrontEnd for Recording {
    fn name(&self) -> &str {
        "record"
    }

    fn stop(self: Box<Self>) -> futures::future::LocalBoxFuture<'static, ()> {
        Box::pin(async move {
            self.handle.finish().await;
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Starts recording every robot of `ctx` to `settings.path` (relative to the configuration
/// file's folder), on a thread of its own. Must run inside an actix system.
pub fn start(settings: &RecordSettings, ctx: &FrontEndContext) -> Result<Recording, RecordError> {
    let sources = ctx
        .robots
        .iter()
        .map(|r| RecordSource {
            robot: r.name.clone(),
            registry: r.registry.clone(),
            devices: r.devices.clone(),
            session: ctx.ids.next(),
        })
        .collect();
    let handle = RecorderHandle::start(settings, &ctx.base_dir, sources, ctx.log.clone())?;
    for (i, robot) in ctx.robots.iter().enumerate() {
        if let Some(recipient) = handle.tap(i) {
            robot.registry.do_send(Tap {
                recipient,
                name: RECORDER.into(),
            });
        }
    }
    Ok(Recording { handle })
}

/// The path of file number `n` of a recording to `path` (0 is `path` itself).
pub fn rotated_path(path: &Path, n: u32) -> PathBuf {
    if n == 0 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "recording".into());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{n}"),
    };
    path.with_file_name(name)
}

/// One robot the recorder records.
pub struct RecordSource {
    /// The robot's name (the first part of its topics).
    pub robot: String,
    /// Its registry.
    pub registry: Addr<Registry>,
    /// Its devices and the name of the driver behind each.
    pub devices: Vec<(DeviceSpec, String)>,
    /// The session id the recorder uses with this registry.
    pub session: SessionId,
}

/// Totals of a finished recording.
#[derive(Debug, Clone, Default)]
pub struct RecordStats {
    /// The files written, in order.
    pub files: Vec<PathBuf>,
    /// Messages written on the raw data channels.
    pub readings: u64,
    /// Commands and configs written.
    pub sent: u64,
    /// Bytes written to all files.
    pub bytes: u64,
    /// Readings not recorded because the recorder fell too far behind (its queue full).
    pub dropped: u64,
}

/// Server → recorder: stop recording; unsubscribe, finish the file (summary and footer),
/// and reply with the totals.
#[derive(Message)]
#[rtype(result = "RecordStats")]
pub struct Finish;

/// The recorder actor (one per server, on its own thread).
pub struct Recorder {
    settings: RecordSettings,
    path: PathBuf,
    sources: Vec<RecordSource>,
    taps: Vec<Addr<RobotTap<Recorder>>>,
    out: Option<Output>,
    file_no: u32,
    stats: RecordStats,
    last_seq: HashMap<(usize, u8), player_kit::fresh::SeqGate>,
    /// Per robot (in the order of `sources`): the devices held at its registry.
    holdings: Vec<Holdings>,
    refused: HashMap<(usize, u8), u32>,
    finishing: bool,
    /// The latest log time written (nanoseconds since the epoch).
    last_log_time: u64,
    /// Where the subscriptions leave the readings.
    queue: Arc<Queue>,
    /// The readings taken from the queue, being written (kept empty in between, for its
    /// room).
    drained: Vec<Queued>,
    /// Per robot whose map device is recorded: its map's download and the newest whole
    /// map (written again at the start of each rotated file).
    maps: HashMap<usize, RobotMap>,
    log: Logger,
}

impl Recorder {
    /// Writes one message on channel `key`, come at `log_time` (nanoseconds since the
    /// epoch); rotates the file first when it is due.
    fn write(
        &mut self,
        key: (usize, u8, Stream),
        t: Timestamp,
        seq: u32,
        data: &[u8],
        log_time: u64,
    ) {
        self.rotate_if_due(log_time);
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let Some(&channel_id) = out.channels.get(&key) else {
            return;
        };
        // One clock for every channel's log time: the recorder's, when the message came
        // (never going back); the driver's own timestamp, when it has one, is the publish
        // time.
        let now = log_time.max(self.last_log_time);
        self.last_log_time = now;
        let published = match t.nanos() {
            0 => now,
            t => t,
        };
        let header = MessageHeader {
            channel_id,
            sequence: seq,
            log_time: now,
            publish_time: published,
        };
        match out.writer.write_to_known_channel(&header, data) {
            Ok(()) => out.pending += 1,
            Err(e) => self.fail(&e.to_string()),
        }
    }

    /// Writes everything queued, in the order it came.
    fn drain(&mut self) {
        let mut drained = std::mem::take(&mut self.drained);
        let dropped = self.queue.take(&mut drained);
        if dropped > 0 {
            self.stats.dropped += dropped;
            warn!(self.log, "recording fell behind: readings not recorded"; "readings" => dropped);
        }
        for q in &drained {
            for d in q.readings.as_slice() {
                self.reading(q.robot, d, q.log_time);
            }
        }
        drained.clear();
        self.drained = drained;
    }

    fn reading(&mut self, robot: usize, d: &DeviceData, log_time: u64) {
        // The same reading again (sent to a newly subscribed reader) or an older one is
        // not written; a driver that numbers afresh is (the kit's one rule).
        let gate = self.last_seq.entry((robot, d.device)).or_default();
        if gate.take(d.stamp()).is_none() {
            return;
        }
        if self.out.is_none() {
            return;
        }
        self.write(
            (robot, d.device, Stream::Data),
            d.timestamp,
            d.seq as u32,
            &d.data,
            log_time,
        );
        self.stats.readings += 1;
        if self.settings.foxglove {
            for f in foxglove_channels(d.device) {
                if let Some(bytes) = self.settings.foxglove_encoding.encode(f, d) {
                    self.write(
                        (robot, d.device, Stream::Foxglove(f.id)),
                        d.timestamp,
                        d.seq as u32,
                        &bytes,
                        log_time,
                    );
                }
            }
        }
        if d.device == device::MAP {
            self.map_reading(robot, d);
        }
    }

    /// An I/O error: recording stops (the server goes on), with one log line.
    fn fail(&mut self, e: &str) {
        if let Some(out) = self.out.take() {
            error!(self.log, "recording stopped: cannot write"; "file" => %out.path.display(), "error" => e);
            self.stats.bytes += out.bytes();
            // Dropping the writer would try to finish the file on the failing disk.
            std::mem::forget(out.writer);
        }
    }

    /// Closes the file: the open chunk, the summary and the footer.
    fn close(&mut self) {
        if let Some(mut out) = self.out.take() {
            match out.writer.finish() {
                Ok(_) => {
                    info!(self.log, "recording file closed"; "file" => %out.path.display(), "bytes" => out.bytes())
                }
                Err(e) => {
                    error!(self.log, "recording file not finished"; "file" => %out.path.display(), "error" => %e)
                }
            }
            self.stats.bytes += out.bytes();
        }
    }

    /// Opens the next file when the size or age limit is reached; `log_time` is the log
    /// time of what is written next (the maps written again at the new file's start take
    /// it: a later one would hold every log time after it back to it).
    fn rotate_if_due(&mut self, log_time: u64) {
        let Some(out) = &self.out else {
            return;
        };
        let s = &self.settings;
        let full = s.max_bytes > 0 && out.bytes() >= s.max_bytes;
        let old = s.max_seconds > 0.0 && out.opened.elapsed().as_secs_f64() >= s.max_seconds;
        if !(full || old) {
            return;
        }
        self.close();
        self.file_no += 1;
        let path = rotated_path(&self.path, self.file_no);
        match Output::open(&path, &self.settings, &self.sources) {
            Ok(out) => {
                info!(self.log, "recording to a new file"; "file" => %path.display());
                self.stats.files.push(path);
                self.out = Some(out);
                // Each file holds the maps it needs: the whole ones again.
                for (r, w) in self.whole_maps() {
                    self.write_map(r, &w, log_time);
                }
            }
            Err(e) => error!(self.log, "recording stopped"; "error" => %e),
        }
    }

    /// Asks robot `ri`'s registry for read access to `code`; retries later if the device
    /// cannot be set up.
    fn subscribe(&mut self, ri: usize, code: u8, ctx: &mut Context<Self>) {
        if self.finishing {
            return;
        }
        let Some(holdings) = self.holdings.get_mut(ri) else {
            return;
        };
        let queue = &self.queue;
        holdings.want_in(
            ctx,
            code,
            Access::new(true, false),
            || DataRecipient::sink(queue.sink(ri)),
            move |act: &mut Self| act.holdings.get_mut(ri),
            move |act, granted, ctx| act.granted(ri, code, granted, ctx),
        );
    }

    /// The registry's answer to the newest request for robot `ri`'s `code`: recorded, or
    /// asked again in `retry_seconds`.
    fn granted(
        &mut self,
        ri: usize,
        code: u8,
        granted: Result<Grant, DeviceError>,
        ctx: &mut Context<Self>,
    ) {
        let robot = self.sources[ri].robot.clone();
        match granted {
            Ok(_) => {
                self.refused.remove(&(ri, code));
                info!(self.log, "recording device"; "robot" => robot, "device" => player_kit::log::device(code), "code" => %char::from(code));
            }
            Err(DeviceError::RegistryStopped) => {} // the server is exiting
            Err(e) => {
                let retry = Duration::from_secs_f64(self.settings.retry_seconds);
                let n = self.refused.entry((ri, code)).or_insert(0);
                *n += 1;
                if *n == 1 {
                    warn!(self.log, "cannot record device, will retry"; "robot" => robot, "device" => player_kit::log::device(code), "error" => %e, "every_s" => retry.as_secs_f64());
                }
                ctx.run_later(retry, move |act, ctx| act.subscribe(ri, code, ctx));
            }
        }
    }
}

impl Actor for Recorder {
    type Context = Context<Self>;

    // Unsafe code: prctl(PR_SET_NAME) names the recorder's thread (a Linux call).
    #[allow(unsafe_code)]
    fn started(&mut self, ctx: &mut Self::Context) {
        // The arbiter's thread is the recorder's alone: name it, so its CPU time can be
        // told apart (`top -H`, /proc/PID/task/*/comm, the record bench).
        // SAFETY: PR_SET_NAME with a NUL-terminated name of at most 16 bytes.
        unsafe {
            libc::prctl(
                libc::PR_SET_NAME,
                c"player-record".as_ptr() as libc::c_ulong,
                0,
                0,
                0,
            );
        }
        // On the thread's precise timer: one wake-up a period (tokio's interval wakes twice
        // beyond 64 ms).
        let every = Duration::from_secs_f64(self.settings.chunk_seconds);
        ctx.run_every(every, |act, _| {
            act.drain();
            let downloading: Vec<usize> = act.maps.keys().copied().collect();
            for robot in downloading {
                act.ask_tile(robot);
            }
            act.rotate_if_due(act.last_log_time);
            if let Some(out) = act.out.as_mut() {
                if out.pending > 0 {
                    out.pending = 0;
                    if let Err(e) = out.writer.flush() {
                        act.fail(&e.to_string());
                    }
                }
            }
        });
    }
}

/// Handle → recorder: the per-robot taps are running; subscribe to every readable device.
#[derive(Message)]
#[rtype(result = "()")]
struct Begin(Vec<Addr<RobotTap<Recorder>>>);

impl Handler<Begin> for Recorder {
    type Result = ();

    fn handle(&mut self, msg: Begin, ctx: &mut Self::Context) {
        self.taps = msg.0;
        let wanted: Vec<(usize, u8)> = self
            .sources
            .iter()
            .enumerate()
            .flat_map(|(ri, s)| {
                s.devices
                    .iter()
                    .filter(|(spec, _)| spec.readable)
                    .map(move |(spec, _)| (ri, spec.code))
            })
            .collect();
        for (ri, code) in wanted {
            self.subscribe(ri, code, ctx);
        }
    }
}

/// Queue → recorder: much is queued; drain before the tick.
#[derive(Message)]
#[rtype(result = "()")]
struct Drain;

impl Handler<Drain> for Recorder {
    type Result = ();

    fn handle(&mut self, _msg: Drain, _ctx: &mut Self::Context) {
        self.drain();
    }
}

impl Handler<Tagged<Tapped>> for Recorder {
    type Result = ();

    fn handle(&mut self, msg: Tagged<Tapped>, _ctx: &mut Self::Context) {
        // The readings that came before it first, so the file keeps the order.
        self.drain();
        let t = msg.message;
        self.stats.sent += 1;
        let seq = self.stats.sent as u32;
        self.write(
            (msg.robot, t.device, Stream::Sent(t.kind)),
            t.timestamp,
            seq,
            &t.payload,
            Timestamp::now().nanos(),
        );
    }
}

impl Handler<Finish> for Recorder {
    type Result = MessageResult<Finish>;

    fn handle(&mut self, _msg: Finish, ctx: &mut Self::Context) -> Self::Result {
        self.finishing = true;
        for h in &mut self.holdings {
            h.leave();
        }
        self.drain();
        self.queue.close();
        self.close();
        info!(self.log, "recording finished"; "files" => self.stats.files.len(), "readings" => self.stats.readings, "commands_and_configs" => self.stats.sent, "bytes" => self.stats.bytes, "dropped" => self.stats.dropped);
        ctx.stop();
        MessageResult(std::mem::take(&mut self.stats))
    }
}

/// A running recorder: its address and its thread.
pub struct RecorderHandle {
    addr: Addr<Recorder>,
    taps: Vec<Addr<RobotTap<Recorder>>>,
    arbiter: Arbiter,
}

impl RecorderHandle {
    /// Opens the first file (an error names it) and starts recording `sources` on a thread
    /// of its own. `base_dir` resolves a relative path. Must run inside an actix system.
    pub fn start(
        settings: &RecordSettings,
        base_dir: &Path,
        sources: Vec<RecordSource>,
        log: Logger,
    ) -> Result<RecorderHandle, RecordError> {
        let path = base_dir.join(&settings.path);
        let out = Output::open(&path, settings, &sources)?;
        let robots = sources.len();
        info!(log, "recording"; "file" => %path.display(), "robots" => sources.len());
        let holdings = sources
            .iter()
            .map(|s| Holdings::new(s.registry.clone(), s.session, RECORDER))
            .collect();
        let recorder = Recorder {
            settings: settings.clone(),
            path: path.clone(),
            sources,
            taps: Vec::new(),
            out: Some(out),
            file_no: 0,
            stats: RecordStats {
                files: vec![path],
                ..Default::default()
            },
            last_seq: HashMap::new(),
            holdings,
            refused: HashMap::new(),
            finishing: false,
            last_log_time: 0,
            queue: Queue::new(|| {}),
            drained: Vec::new(),
            maps: HashMap::new(),
            log,
        };
        let arbiter = Arbiter::new();
        let addr = Recorder::start_in_arbiter(&arbiter.handle(), move |ctx| {
            // Weak: the queue lives as long as the subscriptions, not the recorder.
            let me = ctx.address().downgrade();
            Recorder {
                queue: Queue::new(move || {
                    if let Some(me) = me.upgrade() {
                        me.do_send(Drain);
                    }
                }),
                ..recorder
            }
        });
        let taps: Vec<Addr<RobotTap<Recorder>>> = (0..robots)
            .map(|robot| {
                let recorder = addr.clone();
                RobotTap::start_in_arbiter(&arbiter.handle(), move |_| {
                    RobotTap::new(robot, recorder)
                })
            })
            .collect();
        addr.do_send(Begin(taps.clone()));
        Ok(RecorderHandle {
            addr,
            taps,
            arbiter,
        })
    }

    /// Where robot `robot`'s registry sends the commands and configs it passes on
    /// ([`Tapped`]); robots are numbered in the order of the sources given to `start`.
    pub fn tap(&self, robot: usize) -> Option<Recipient<Tapped>> {
        self.taps.get(robot).map(|t| t.clone().recipient())
    }

    /// Stops recording: the devices are released and the file finished. Returns the totals.
    pub async fn finish(self) -> RecordStats {
        let stats = self.addr.send(Finish).await.unwrap_or_default();
        self.arbiter.stop();
        let _ = self.arbiter.join();
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_files_number_themselves_before_the_extension() {
        let p = Path::new("/tmp/run.mcap");
        assert_eq!(rotated_path(p, 0), p);
        assert_eq!(rotated_path(p, 2), Path::new("/tmp/run.2.mcap"));
        assert_eq!(rotated_path(Path::new("rec"), 1), Path::new("rec.1"));
    }

    #[test]
    fn settings_are_checked_naming_the_key() {
        assert!(RecordSettings::default().check("t").is_ok());
        for (s, key) in [
            (
                RecordSettings {
                    chunk_seconds: 0.0,
                    ..Default::default()
                },
                "chunk_seconds",
            ),
            (
                RecordSettings {
                    max_seconds: f64::NAN,
                    ..Default::default()
                },
                "max_seconds",
            ),
            (
                RecordSettings {
                    chunk_bytes: 10,
                    ..Default::default()
                },
                "chunk_bytes",
            ),
            (
                RecordSettings {
                    retry_seconds: 1e12,
                    ..Default::default()
                },
                "retry_seconds",
            ),
        ] {
            let e = s.check("t").unwrap_err();
            assert!(
                matches!(&e, SettingsError::Value { key: k, .. } if k.ends_with(key)),
                "{e}"
            );
        }
    }
}
