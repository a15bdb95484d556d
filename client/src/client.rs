//! The blocking connection to one Player server.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use player_proto::data::{GripperCommand, PositionCommand, Ptz};
use player_proto::ext::{self, DeviceEntry, Extension, Notice};
use player_proto::message::{self, decode_server, FrameError, ServerMessage, SERVER_HEADER};
use player_proto::{access, config, device, DataMode};

use crate::error::Error;
use crate::grant::{parse_spec, Grant, MAX_PAIRS};
use crate::round::{layout_fits, Round};

/// How many bytes one socket read asks for.
const CHUNK: usize = 8192;

/// How many notices are kept until taken; past this the oldest are dropped (and counted).
pub const MAX_QUEUED_NOTICES: usize = 256;

/// How many config answers are kept until taken; past this the oldest are dropped.
pub const MAX_QUEUED_ANSWERS: usize = 256;

/// One packet of a device's answer to a config (`y` of the device's kind,
/// docs/extensions.md): the device, the config it answers and the body.
/// [`player_proto::nav`] decodes the navigation devices' bodies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The device that answered.
    pub device: u8,
    /// The config code it answers ([`player_proto::nav::answered_code`]).
    pub code: u8,
    /// The body: the device's answer layout (for `H` and `G`, Player 1.6.5's with the
    /// config code first; for `M`, the tile: map id, rectangle, cells).
    pub body: Vec<u8>,
}

/// What [`Client::decode_next`] took off the buffer.
enum Decoded {
    /// A reply or a data packet.
    Message(ServerMessage),
    /// A `y` packet, filed in the notice queue or the device list slot.
    Extension,
}

/// How one socket read may wait.
#[derive(Clone, Copy)]
enum Wait {
    /// Block, up to this long (`None`: for ever).
    Timeout(Option<Duration>),
    /// Take only what has already arrived.
    Poll,
}

/// Whether a data message's payload fits its device's layout (`None`: a reply, or a device
/// without a known layout).
fn fits(m: &ServerMessage) -> Option<bool> {
    match m {
        ServerMessage::Data {
            device, payload, ..
        } => layout_fits(*device, payload),
        ServerMessage::Reply(_) => None,
    }
}

/// A connection to a Player server: the Rust counterpart of the C++ `CRobot`.
///
/// All calls block. Requests ([`request`](Client::request)) wait for the server's reply;
/// reads ([`read`](Client::read)) wait for data; commands and configs are sent at once and
/// never answered (manual 3.4, 3.6).
///
/// Received bytes are buffered and framed by [`player_proto::message::decode_server`], so a
/// message that arrives in pieces is put back together, and a read that times out keeps the
/// bytes it got: the connection stays in step after an [`Error::Timeout`].
#[derive(Debug)]
pub struct Client {
    stream: TcpStream,
    peer: SocketAddr,
    /// Bytes received; `buf[start..]` is not yet decoded.
    buf: Vec<u8>,
    start: usize,
    /// Every device this client asked for, in order of first request, with the access the
    /// server's latest reply gives it.
    devices: Vec<(u8, u8)>,
    round: Round,
    mode: DataMode,
    timestamps: bool,
    read_timeout: Option<Duration>,
    /// The read timeout the socket currently has, to avoid a system call per read.
    socket_timeout: Option<Duration>,
    /// Notices received and not yet taken, oldest first, at most [`MAX_QUEUED_NOTICES`].
    notices: VecDeque<Notice>,
    /// Notices dropped because the queue was full.
    notices_dropped: u64,
    /// The latest device list received and not yet taken.
    device_list: Option<Vec<DeviceEntry>>,
    /// Config answers received and not yet taken, oldest first.
    pub(crate) answers: VecDeque<Answer>,
}

impl Client {
    /// The server's default TCP port (manual 2.2, `-gp`).
    pub const DEFAULT_PORT: u16 = 6665;

    /// Connects to a Player server, e.g. `Client::connect("localhost:6665")`.
    ///
    /// The server sends nothing until the client requests devices (manual 3.2).
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<Client> {
        Client::from_stream(TcpStream::connect(addr)?)
    }

    /// Connects like [`connect`](Client::connect), giving up on each resolved address after
    /// `timeout`.
    pub fn connect_timeout(addr: impl ToSocketAddrs, timeout: Duration) -> io::Result<Client> {
        let mut last = None;
        for a in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(s) => return Client::from_stream(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the address resolved to nothing",
            )
        }))
    }

    /// Wraps a connected stream (sets `TCP_NODELAY`, so each message leaves at once).
    pub fn from_stream(stream: TcpStream) -> io::Result<Client> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(None)?;
        let peer = stream.peer_addr()?;
        Ok(Client {
            stream,
            peer,
            buf: Vec::with_capacity(2 * CHUNK),
            start: 0,
            devices: Vec::new(),
            round: Round::new(),
            mode: DataMode::Continuous,
            timestamps: false,
            read_timeout: None,
            socket_timeout: None,
            notices: VecDeque::new(),
            notices_dropped: 0,
            device_list: None,
            answers: VecDeque::new(),
        })
    }

    /// The server's address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.peer
    }

    /// Sets how long any read (a request's reply, a round of data, one packet) may wait for
    /// the server before failing with [`Error::Timeout`]. `None` (the default, as in the
    /// C++ client) waits for ever. The wait is per socket read: data that keeps trickling
    /// in keeps the read alive.
    ///
    /// Note that setting up a device can take the server seconds (the manual says "a few
    /// seconds"; an ACTS vision setup takes more than 6), so a request needs a generous
    /// timeout.
    ///
    /// A zero duration is refused with [`io::ErrorKind::InvalidInput`], as by
    /// [`TcpStream::set_read_timeout`].
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        if timeout == Some(Duration::ZERO) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a read timeout of zero is not allowed",
            ));
        }
        self.read_timeout = timeout;
        Ok(())
    }

    /// The read timeout set with [`set_read_timeout`](Client::set_read_timeout).
    pub fn read_timeout(&self) -> Option<Duration> {
        self.read_timeout
    }

    /// Sets how long sending one message may block (`None`, the default: for ever).
    pub fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.stream.set_write_timeout(timeout)
    }

    // ----------------------------------------------------------------------------------
    // Device requests
    // ----------------------------------------------------------------------------------

    /// Requests access to devices with the manual's request string, e.g. `"srpw"`: read
    /// the sonar, write the position device (manual 3.3, Appendix A.3).
    ///
    /// Sends one `dr` message and waits for the server's `r` reply. Data packets that
    /// arrive before the reply (rounds of devices requested earlier) are discarded, as the
    /// C++ `CRobot::Request` does. The reply updates the access this client holds on each
    /// device, even when something was refused; the returned [`Grant`] tells what was
    /// granted ([`Grant::all_granted`], [`Grant::check`]).
    ///
    /// A device keeps the place of its first request: closing it with `c` keeps its slot,
    /// and reopening it later puts it back there (the server sends data in that order).
    ///
    /// In request/reply and pull modes, do not leave a `y d` unanswered across a request:
    /// the round it releases may arrive before the reply and be discarded.
    pub fn request(&mut self, spec: &str) -> Result<Grant, Error> {
        let pairs = parse_spec(spec)?;
        self.request_pairs(&pairs)
    }

    /// Requests access with `(device, access)` pairs. Unlike [`request`](Client::request),
    /// the codes are not checked: any bytes are sent as they are.
    pub fn request_pairs(&mut self, pairs: &[(u8, u8)]) -> Result<Grant, Error> {
        if pairs.len() > MAX_PAIRS {
            return Err(Error::TooLarge {
                what: "device request",
                len: 2 * pairs.len(),
            });
        }
        self.send(&message::request(pairs))?;
        loop {
            match self.next_message()? {
                ServerMessage::Reply(granted) => {
                    self.apply_reply(&granted);
                    return Ok(Grant::new(pairs.to_vec(), granted));
                }
                ServerMessage::Data { .. } => {}
            }
        }
    }

    /// The access this client holds on `device` according to the server's replies
    /// (`r w a c e`), or `None` if it never asked for it.
    pub fn access(&self, device: u8) -> Option<u8> {
        self.devices
            .iter()
            .find(|&&(d, _)| d == device)
            .map(|&(_, a)| a)
    }

    /// Every device this client has asked for, in order of first request, with the access
    /// it holds now (`c` once closed, `e` if refused).
    pub fn devices(&self) -> &[(u8, u8)] {
        &self.devices
    }

    /// Whether this client holds read access (`r` or `a`) on `device`.
    pub fn can_read(&self, device: u8) -> bool {
        matches!(self.access(device), Some(access::READ | access::ALL))
    }

    /// Whether this client holds write access (`w` or `a`) on `device`.
    pub fn can_write(&self, device: u8) -> bool {
        matches!(self.access(device), Some(access::WRITE | access::ALL))
    }

    /// The devices held with read access, in order of first request: the devices of a
    /// full round.
    pub fn readable(&self) -> Vec<u8> {
        self.devices
            .iter()
            .filter(|&&(_, a)| a == access::READ || a == access::ALL)
            .map(|&(d, _)| d)
            .collect()
    }

    fn apply_reply(&mut self, pairs: &[(u8, u8)]) {
        for &(d, a) in pairs {
            match self.devices.iter_mut().find(|(od, _)| *od == d) {
                Some(entry) => entry.1 = a,
                None => self.devices.push((d, a)),
            }
        }
    }

    // ----------------------------------------------------------------------------------
    // Reading data
    // ----------------------------------------------------------------------------------

    /// Reads one round: blocks until every device held with read access has delivered a
    /// packet, like `CRobot::Read()` (manual A.4), and returns the latest data of every
    /// device.
    ///
    /// Use it in continuous mode (the default: the server sends a round every 1/frequency
    /// seconds) and in request/reply mode (after [`request_data`](Client::request_data)).
    /// Each round then carries every readable device once, so this reads exactly one
    /// packet per device. Should a device's packet come twice before another's (a server
    /// that left a device out of a round), the newest is kept and the read goes on until
    /// the missing device has delivered: the client does not drift out of step. In
    /// push-new mode this waits until every device has new data; for pull-new mode use
    /// [`read_new`](Client::read_new).
    ///
    /// A packet that does not fit its device's layout, or a packet from a device not held
    /// with read access, does not stop the round: the rest of it is read, then the first
    /// such problem is returned as the error ([`Error::Data`], [`Error::UnexpectedDevice`]).
    /// A reply to an earlier request that timed out is applied to the access table.
    ///
    /// Fails with [`Error::NothingToRead`] if no device is held with read access.
    pub fn read(&mut self) -> Result<&Round, Error> {
        let mut waiting = self.readable();
        if waiting.is_empty() {
            return Err(Error::NothingToRead);
        }
        self.round.updated.clear();
        let mut deferred = None;
        while !waiting.is_empty() {
            match self.next_message() {
                Ok(ServerMessage::Reply(pairs)) => {
                    self.apply_reply(&pairs);
                    waiting.retain(|&d| self.can_read(d));
                }
                Ok(ServerMessage::Data {
                    device,
                    timestamp,
                    payload,
                }) => {
                    if let Err(e) = self.take_data(device, timestamp, &payload) {
                        deferred.get_or_insert(e);
                    }
                    waiting.retain(|&d| d != device);
                }
                Err(e @ (Error::Frame(_) | Error::Extension(_))) => {
                    deferred.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        match deferred {
            Some(e) => Err(e),
            None => Ok(&self.round),
        }
    }

    /// Reads exactly one message from the server and returns it as framed.
    ///
    /// A data packet also updates [`round`](Client::round) (its
    /// [`updated`](Round::updated) then lists just that device); a reply updates the access
    /// table. For push-new and pull-new modes, where a round holds only the devices with
    /// new data, or to handle packets one at a time.
    ///
    /// A data packet that does not fit its device's layout is returned as
    /// [`Error::Data`], one from a device not held with read access as
    /// [`Error::UnexpectedDevice`]; either way the packet has been consumed.
    pub fn read_packet(&mut self) -> Result<ServerMessage, Error> {
        self.round.updated.clear();
        let m = self.next_message()?;
        match &m {
            ServerMessage::Reply(pairs) => self.apply_reply(pairs),
            ServerMessage::Data {
                device,
                timestamp,
                payload,
            } => self.take_data(*device, *timestamp, payload)?,
        }
        Ok(m)
    }

    /// Waits up to `timeout` for data, then takes every packet that has arrived by then
    /// (completing a packet already begun) and returns the latest data, with
    /// [`updated`](Round::updated) listing the devices that delivered, possibly none.
    ///
    /// Made for push-new mode (the server sends each device's data when it is new) and
    /// pull-new mode (call [`request_data`](Client::request_data) first; the server then
    /// sends only the devices with new data, and nothing at all when nothing is new). The
    /// server writes a round at once, so one call takes a whole round.
    ///
    /// Problems with single packets are reported after the packets have been taken, as by
    /// [`read`](Client::read).
    pub fn read_new(&mut self, timeout: Duration) -> Result<&Round, Error> {
        self.round.updated.clear();
        let deadline = Instant::now() + timeout;
        let mut got_any = false;
        let mut deferred = None;
        loop {
            match self.decode_buffered() {
                Ok(Some(m)) => {
                    got_any = true;
                    match m {
                        ServerMessage::Reply(pairs) => self.apply_reply(&pairs),
                        ServerMessage::Data {
                            device,
                            timestamp,
                            payload,
                        } => {
                            if let Err(e) = self.take_data(device, timestamp, &payload) {
                                deferred.get_or_insert(e);
                            }
                        }
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    got_any = true;
                    deferred.get_or_insert(e);
                    continue;
                }
            }
            // Nothing complete is buffered.
            if self.start < self.buf.len() {
                // A message has begun: finish it, however long the deadline.
                self.fill(Wait::Timeout(self.read_timeout))?;
                continue;
            }
            let now = Instant::now();
            let wait = if got_any || now >= deadline {
                Wait::Poll
            } else {
                Wait::Timeout(Some(deadline - now))
            };
            match self.fill(wait) {
                Ok(true) => {}
                Ok(false) | Err(Error::Timeout) => break,
                Err(e) => return Err(e),
            }
        }
        match deferred {
            Some(e) => Err(e),
            None => Ok(&self.round),
        }
    }

    /// The latest data of every device, as left by the reads so far.
    pub fn round(&self) -> &Round {
        &self.round
    }

    fn take_data(
        &mut self,
        device: u8,
        timestamp: Option<(u32, u32)>,
        payload: &[u8],
    ) -> Result<(), Error> {
        self.round
            .apply(device, timestamp, payload)
            .map_err(|error| Error::Data { device, error })?;
        if self.can_read(device) {
            Ok(())
        } else {
            Err(Error::UnexpectedDevice {
                device,
                access: self.access(device),
            })
        }
    }

    /// The next message, waiting with the read timeout.
    fn next_message(&mut self) -> Result<ServerMessage, Error> {
        loop {
            if let Some(m) = self.decode_buffered()? {
                return Ok(m);
            }
            self.fill(Wait::Timeout(self.read_timeout))?;
        }
    }

    /// Takes one complete message off the buffer, if there is one.
    ///
    /// Whether a data packet carries a timestamp is what this client last asked for, except
    /// for the devices of the manual, whose packet size tells: around the moment timestamps
    /// are switched, packets the server wrote before it saw the switch are still read right.
    /// A message that cannot be framed is consumed and returned as the error.
    ///
    /// `y` packets (notices, the device list) are taken here, never returned (see
    /// [`decode_next`](Client::decode_next)).
    fn decode_buffered(&mut self) -> Result<Option<ServerMessage>, Error> {
        loop {
            match self.decode_next()? {
                None => return Ok(None),
                Some(Decoded::Message(m)) => return Ok(Some(m)),
                Some(Decoded::Extension) => {}
            }
        }
    }

    /// Takes one complete message off the buffer, if there is one, filing a `y` packet
    /// (which never carries a timestamp) in the notice queue or the device list slot. A
    /// `y` packet that cannot be decoded is consumed and returned as [`Error::Extension`].
    fn decode_next(&mut self) -> Result<Option<Decoded>, Error> {
        if self.buf.get(self.start) == Some(&device::SERVER) {
            let bytes = &self.buf[self.start..];
            if bytes.len() < SERVER_HEADER {
                return Ok(None);
            }
            let end = SERVER_HEADER + usize::from(u16::from_be_bytes([bytes[1], bytes[2]]));
            if bytes.len() < end {
                return Ok(None);
            }
            if let Some(a) = ext::decode_answer(&bytes[SERVER_HEADER..end]) {
                let answer = Answer {
                    device: a.device,
                    code: a.code,
                    body: a.body.to_vec(),
                };
                self.consume(end);
                if self.answers.len() == MAX_QUEUED_ANSWERS {
                    self.answers.pop_front();
                }
                self.answers.push_back(answer);
                return Ok(Some(Decoded::Extension));
            }
            let filed = ext::decode(&bytes[SERVER_HEADER..end]);
            self.consume(end);
            self.file_extension(filed.map_err(Error::Extension)?);
            return Ok(Some(Decoded::Extension));
        }
        let bytes = &self.buf[self.start..];
        let decoded = match decode_server(bytes, self.timestamps) {
            Ok(None) => return Ok(None),
            Ok(Some((m, n))) if fits(&m) == Some(false) => {
                match decode_server(bytes, !self.timestamps) {
                    Ok(Some((other, n))) if fits(&other) == Some(true) => Ok((other, n)),
                    _ => Ok((m, n)),
                }
            }
            Ok(Some(found)) => Ok(found),
            Err(e @ FrameError::NoTimestamp { size, .. }) => match decode_server(bytes, false) {
                Ok(Some(found)) if fits(&found.0) == Some(true) => Ok(found),
                _ => Err((e, size)),
            },
            Err(e @ FrameError::OddReply(size)) => Err((e, size)),
        };
        match decoded {
            Ok((m, n)) => {
                self.consume(n);
                Ok(Some(Decoded::Message(m)))
            }
            Err((e, size)) => {
                self.consume(SERVER_HEADER + size);
                Err(Error::Frame(e))
            }
        }
    }

    /// Files a `y` packet: a notice in the queue, a device list in its slot.
    fn file_extension(&mut self, packet: Extension) {
        match packet {
            Extension::Notice(n) => {
                if self.notices.len() == MAX_QUEUED_NOTICES {
                    self.notices.pop_front();
                    self.notices_dropped += 1;
                }
                self.notices.push_back(n);
            }
            Extension::DeviceList(list) => self.device_list = Some(list),
        }
    }

    /// Applies a message read while waiting for something else (a notice, the device
    /// list): a reply updates the access table, a data packet the round; a packet that does
    /// not fit its layout is dropped.
    fn apply_in_passing(&mut self, m: ServerMessage) {
        match m {
            ServerMessage::Reply(pairs) => self.apply_reply(&pairs),
            ServerMessage::Data {
                device,
                timestamp,
                payload,
            } => {
                let _ = self.take_data(device, timestamp, &payload);
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    /// Reads once from the socket into the buffer. `Ok(false)` when polling found nothing.
    fn fill(&mut self, wait: Wait) -> Result<bool, Error> {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        match wait {
            Wait::Timeout(t) => {
                if t != self.socket_timeout {
                    self.stream.set_read_timeout(t)?;
                    self.socket_timeout = t;
                }
            }
            Wait::Poll => self.stream.set_nonblocking(true)?,
        }
        let len = self.buf.len();
        self.buf.resize(len + CHUNK, 0);
        let result = loop {
            match self.stream.read(&mut self.buf[len..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        if let Wait::Poll = wait {
            self.stream.set_nonblocking(false)?;
        }
        match result {
            Ok(0) => {
                self.buf.truncate(len);
                Err(Error::Disconnected { pending: len })
            }
            Ok(n) => {
                self.buf.truncate(len + n);
                Ok(true)
            }
            Err(e) => {
                self.buf.truncate(len);
                match (wait, e.kind()) {
                    (Wait::Poll, io::ErrorKind::WouldBlock) => Ok(false),
                    _ => Err(e.into()),
                }
            }
        }
    }

    // ----------------------------------------------------------------------------------
    // Commands
    // ----------------------------------------------------------------------------------

    /// Commands the position device: `speed` in mm/s (positive forward), `turn_rate` in
    /// degrees/s (positive counter-clockwise). Needs write access to `p`. The C++ client's
    /// `newspeed`, `newturnrate` and `Write()`; the Java client's `setSpeed`.
    pub fn set_speed(&mut self, speed: i16, turn_rate: i16) -> Result<(), Error> {
        let cmd = PositionCommand { speed, turn_rate };
        self.checked_command(device::POSITION, &cmd.encode())
    }

    /// Commands the pan-tilt-zoom camera to an absolute position: pan -100 to 100 degrees
    /// (positive counter-clockwise), tilt -25 to 25 degrees (positive up), zoom 0 (wide) to
    /// 1023 (telephoto). Needs write access to `z`.
    pub fn set_ptz(&mut self, pan: i16, tilt: i16, zoom: i16) -> Result<(), Error> {
        let cmd = Ptz { pan, tilt, zoom };
        self.checked_command(device::PTZ, &cmd.encode())
    }

    /// Commands the gripper (see [`crate::grip`] for the commands; `arg` is used only by
    /// [`grip::PRESS`](crate::grip::PRESS) and [`grip::CARRY`](crate::grip::CARRY)). Needs
    /// write access to `g`. Note that Player 0.7.4a stores gripper commands without
    /// sending them to the robot (manual Table 4).
    pub fn gripper(&mut self, command: u8, arg: u8) -> Result<(), Error> {
        let cmd = GripperCommand { command, arg };
        self.checked_command(device::GRIPPER, &cmd.encode())
    }

    /// Sends a command `c<device><size><payload>` as it is, without checking the access
    /// held or the payload (the server ignores, with a log line, what it cannot use).
    pub fn command(&mut self, device: u8, payload: &[u8]) -> Result<(), Error> {
        if payload.len() > usize::from(u16::MAX) {
            return Err(Error::TooLarge {
                what: "command",
                len: payload.len(),
            });
        }
        self.send(&message::command(device, payload))
    }

    fn checked_command(&mut self, device: u8, payload: &[u8]) -> Result<(), Error> {
        if !self.can_write(device) {
            return Err(Error::NotWritable {
                device,
                access: self.access(device),
            });
        }
        self.command(device, payload)
    }

    // ----------------------------------------------------------------------------------
    // Configuration
    // ----------------------------------------------------------------------------------

    /// Sets this client's data frequency in Hz (`x y f`; the default is 10). A frequency of
    /// 0 is refused without sending anything.
    pub fn set_frequency(&mut self, hz: u16) -> Result<(), Error> {
        if hz == 0 {
            return Err(Error::InvalidArgument(
                "a data frequency must be at least 1 Hz",
            ));
        }
        self.config(device::SERVER, config::FREQUENCY, &hz.to_be_bytes())
    }

    /// Sets this client's data mode (`x y r <mode>`): continuous (the default),
    /// request/reply (one round per [`request_data`](Client::request_data)), push-new or
    /// pull-new (extensions: only devices with new data).
    ///
    /// A server switching to request/reply may still send the one round that was due.
    pub fn set_data_mode(&mut self, mode: DataMode) -> Result<(), Error> {
        self.config(device::SERVER, config::DATA_MODE, &[mode.code()])
    }

    /// The data mode last set by this client.
    pub fn data_mode(&self) -> DataMode {
        self.mode
    }

    /// Asks for one round of data (`x y d`), in request/reply and pull-new modes.
    pub fn request_data(&mut self) -> Result<(), Error> {
        self.config(device::SERVER, config::REQUEST_DATA, &[])
    }

    /// Turns the timestamp extension on or off (`x y t <0|1>`). When on, each data packet
    /// carries the driver's timestamp, found in [`Round::timestamps`].
    ///
    /// Packets the server wrote before it saw the switch are still decoded right for the
    /// manual's seven devices (their sizes tell); for other device codes, switch while no
    /// data of them is under way.
    pub fn set_timestamps(&mut self, on: bool) -> Result<(), Error> {
        self.config(device::SERVER, config::TIMESTAMPS, &[u8::from(on)])
    }

    /// Whether this client last turned timestamps on.
    pub fn timestamps(&self) -> bool {
        self.timestamps
    }

    /// Turns the robot's motor power on or off (`x p m <0|1>`). Effective only once one of
    /// the position, sonar, misc or gripper devices is open. USE WITH CAUTION (manual 3.6).
    pub fn set_motor_power(&mut self, on: bool) -> Result<(), Error> {
        self.config(device::POSITION, config::MOTOR_POWER, &[u8::from(on)])
    }

    /// Chooses separate translational and rotational velocity control (`true`) or direct
    /// wheel control (`false`, the default), sent as `x p <2> v <mode>`.
    ///
    /// (The C++ client's `ChangeVelocityControl` sends this to the vision device by
    /// mistake, so with it the mode never changed; this sends it to the position device.)
    pub fn set_velocity_mode(&mut self, separate: bool) -> Result<(), Error> {
        self.config(
            device::POSITION,
            config::VELOCITY_MODE,
            &[u8::from(separate)],
        )
    }

    /// Resets the robot's odometry to (0, 0, 0) (`x p R`).
    pub fn reset_odometry(&mut self) -> Result<(), Error> {
        self.config(device::POSITION, config::RESET_ODOMETRY, &[])
    }

    /// Sends a config `x<device><size><code><args>` as it is. Configs of the `y` device
    /// that set the data mode or timestamps are also recorded by the client.
    pub fn config(&mut self, device: u8, code: u8, args: &[u8]) -> Result<(), Error> {
        if args.len() >= usize::from(u16::MAX) {
            return Err(Error::TooLarge {
                what: "config",
                len: 1 + args.len(),
            });
        }
        self.send(&message::config(device, code, args))?;
        if device == device::SERVER {
            match (code, args) {
                (config::DATA_MODE, &[m]) => self.mode = DataMode::from_code(m),
                (config::TIMESTAMPS, &[t]) => self.timestamps = t != 0,
                _ => {}
            }
        }
        Ok(())
    }

    // ----------------------------------------------------------------------------------
    // Extensions: error channel, emergency stop, key, device list
    // ----------------------------------------------------------------------------------

    /// Turns the server's error channel on or off (`x y e <0|1>`, an extension). While it
    /// is on, the server sends notices (a refused request, an ignored command or config, a
    /// watchdog stop, the e-stop latched or released, a device failed or up again, ...);
    /// the client queues them as they arrive during any read, to be taken with
    /// [`take_notices`](Client::take_notices) or waited for with
    /// [`wait_notice`](Client::wait_notice).
    pub fn set_notices(&mut self, on: bool) -> Result<(), Error> {
        self.send(&ext::error_channel(on))
    }

    /// Takes every notice received so far, oldest first. The client keeps at most
    /// [`MAX_QUEUED_NOTICES`]; older ones are dropped and counted by
    /// [`notices_dropped`](Client::notices_dropped).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        self.notices.drain(..).collect()
    }

    /// How many notices were dropped because nobody took them in time.
    pub fn notices_dropped(&self) -> u64 {
        self.notices_dropped
    }

    /// Returns the oldest queued notice, or waits up to `timeout` for one (`Ok(None)` if
    /// none came). Data packets and replies that arrive meanwhile are applied to
    /// [`round`](Client::round) and the access table as by
    /// [`read_packet`](Client::read_packet); data that does not fit its layout is dropped.
    pub fn wait_notice(&mut self, timeout: Duration) -> Result<Option<Notice>, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(n) = self.notices.pop_front() {
                return Ok(Some(n));
            }
            match self.decode_next()? {
                Some(Decoded::Message(m)) => {
                    self.apply_in_passing(m);
                    continue;
                }
                Some(Decoded::Extension) => continue,
                None => {}
            }
            if self.start < self.buf.len() {
                // A message has begun: finish it within the ordinary read timeout.
                self.fill(Wait::Timeout(self.read_timeout))?;
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            match self.fill(Wait::Timeout(Some(deadline - now))) {
                Ok(_) => {}
                Err(Error::Timeout) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// Latches (`true`) or releases (`false`) the robot's emergency stop (`x y E`, an
    /// extension). Any client may latch it; releasing needs write access to a device. While
    /// it is latched the robot's moving devices are stopped and commands to them ignored;
    /// with the error channel on, every client that enabled it gets an `E` or `e` notice.
    pub fn estop(&mut self, latch: bool) -> Result<(), Error> {
        self.send(&ext::estop(latch))
    }

    /// Presents the server's shared access key (`x y k`, an extension), at most
    /// [`ext::MAX_KEY`] bytes. A server configured with a key refuses requests until the
    /// right one is presented, and closes the connection on a wrong one.
    pub fn present_key(&mut self, key: &[u8]) -> Result<(), Error> {
        let msg = ext::key(key).map_err(|e| Error::InvalidArgument(e.0))?;
        self.send(&msg)
    }

    /// Asks the server for its device list (`x y l`, an extension) and waits for it: every
    /// device the robot has, with its driver, the access it allows, its state, readers and
    /// writers, latest data size and publish rate.
    ///
    /// Data packets and replies that arrive first are applied as by
    /// [`wait_notice`](Client::wait_notice). A server without the extension never answers:
    /// set a [read timeout](Client::set_read_timeout) to get [`Error::Timeout`] then.
    pub fn device_list(&mut self) -> Result<Vec<DeviceEntry>, Error> {
        self.device_list = None;
        self.send(&ext::device_list_request())?;
        loop {
            if let Some(list) = self.device_list.take() {
                return Ok(list);
            }
            match self.decode_next()? {
                Some(Decoded::Message(m)) => self.apply_in_passing(m),
                Some(Decoded::Extension) => {}
                None => {
                    self.fill(Wait::Timeout(self.read_timeout))?;
                }
            }
        }
    }

    /// Sends a config (`x <device> <code> <args>`) and waits for `device`'s answer to
    /// `code` (docs/extensions.md): its body (the device's answer layout). Answers of other configs
    /// that arrive meanwhile stay queued; data packets and replies are applied as by
    /// [`wait_notice`](Client::wait_notice). A device that does not answer never does: set
    /// a [read timeout](Client::set_read_timeout) to get [`Error::Timeout`] then.
    pub fn ask(&mut self, device: u8, code: u8, args: &[u8]) -> Result<Vec<u8>, Error> {
        self.send(&message::config(device, code, args))?;
        self.wait_answer(device, code)
    }

    /// Waits for the next answer of `device` to config `code` (one already queued first);
    /// returns its body.
    pub fn wait_answer(&mut self, device: u8, code: u8) -> Result<Vec<u8>, Error> {
        loop {
            let at = self
                .answers
                .iter()
                .position(|a| a.device == device && a.code == code);
            if let Some(i) = at {
                return Ok(self.answers.remove(i).expect("found").body);
            }
            match self.decode_next()? {
                Some(Decoded::Message(m)) => self.apply_in_passing(m),
                Some(Decoded::Extension) => {}
                None => {
                    self.fill(Wait::Timeout(self.read_timeout))?;
                }
            }
        }
    }

    /// Takes every config answer received and not yet taken, oldest first.
    pub fn take_answers(&mut self) -> Vec<Answer> {
        self.answers.drain(..).collect()
    }

    /// Sends bytes as they are, for testing a server with malformed input. The client's
    /// own state (access, mode) is not updated.
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.send(bytes)
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.stream.write_all(bytes).map_err(Error::from)
    }

    /// Closes the connection. The server then closes this client's devices (and stops the
    /// motors if it held write access to the position device). Dropping the client does
    /// the same.
    pub fn close(self) -> io::Result<()> {
        match self.stream.shutdown(Shutdown::Both) {
            Err(e) if e.kind() != io::ErrorKind::NotConnected => Err(e),
            _ => Ok(()),
        }
    }
}
