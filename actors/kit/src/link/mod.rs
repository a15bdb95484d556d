//! Plumbing shared by the drivers whose devices sit behind a link (a serial port, a socket):
//! opening a serial port with an error that names it, changing its speed, reading with a
//! deadline, reconnect backoff, rate-limited logging of bad frames, the life of a link task
//! as its actor sees it (start, wait for setup, close: [`LinkSupervisor`]), the one
//! reconnect loop ([`run_link`]) and the actor's message handlers ([`LinkDriver`]) written
//! once for all of them ([`driver`]). Byte layouts stay in each device's codec module.

pub mod driver;
mod requests;
mod supervisor;

pub use driver::{run_link, Closer, Ended, Link, LinkDriver, LinkParts, LinkUp};
pub use requests::{request_channel, Commanded, Incoming, Request, RequestReceiver, RequestSender};
pub use supervisor::{
    close_channel, CloseAck, CloseReceiver, CloseSender, LinkHandle, LinkState, LinkSupervisor,
};

use crate::driver::{DriverError, DriverErrorKind};
use std::io;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio_serial::{SerialPort, SerialPortBuilderExt, SerialStream};

/// What went wrong with a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkErrorKind {
    /// The port or host is not there (no such device, nothing listening).
    NoDevice,
    /// The device did not answer in time, or went silent.
    Timeout,
    /// Opening, reading or writing failed.
    Io(io::ErrorKind),
    /// The device answered, but not as it should (bad replies, a refusal, the other end
    /// closing the connection).
    Protocol,
}

/// Why a link could not be opened, or was lost: the port (a serial device's path, a
/// host and port), what kind of failure, and a text for a person (what the log and a
/// failed setup say).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct LinkError {
    /// The port, path or address of the link.
    pub port: String,
    /// What went wrong.
    pub kind: LinkErrorKind,
    /// Why, for a person.
    pub text: String,
}

impl LinkError {
    /// A failure of `kind` on `port`, saying `text`.
    pub fn new(port: impl Into<String>, kind: LinkErrorKind, text: impl Into<String>) -> Self {
        LinkError {
            port: port.into(),
            kind,
            text: text.into(),
        }
    }

    /// The port or host is not there.
    pub fn no_device(port: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(port, LinkErrorKind::NoDevice, text)
    }

    /// No answer in time.
    pub fn timeout(port: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(port, LinkErrorKind::Timeout, text)
    }

    /// An I/O error `e` (its kind is kept; a missing device or a refused connection is
    /// [`LinkErrorKind::NoDevice`], a timed-out one [`LinkErrorKind::Timeout`]).
    pub fn io(port: impl Into<String>, e: &io::Error, text: impl Into<String>) -> Self {
        let kind = match e.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => LinkErrorKind::NoDevice,
            io::ErrorKind::TimedOut => LinkErrorKind::Timeout,
            k => LinkErrorKind::Io(k),
        };
        Self::new(port, kind, text)
    }

    /// The device answered, but not as it should.
    pub fn protocol(port: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(port, LinkErrorKind::Protocol, text)
    }
}

impl From<LinkError> for DriverError {
    /// A link that timed out is a [`DriverErrorKind::Timeout`]; any other link failure a
    /// [`DriverErrorKind::Link`]. The text is the link error's.
    fn from(e: LinkError) -> Self {
        let kind = match e.kind {
            LinkErrorKind::Timeout => DriverErrorKind::Timeout,
            _ => DriverErrorKind::Link,
        };
        DriverError { kind, text: e.text }
    }
}

/// Opens `path` raw, 8N1, no flow control, at `baud`, and discards anything already
/// waiting in the input buffer. The error names the port.
pub fn open_serial(path: &str, baud: u32) -> Result<SerialStream, LinkError> {
    let port = tokio_serial::new(path, baud)
        .data_bits(tokio_serial::DataBits::Eight)
        .parity(tokio_serial::Parity::None)
        .stop_bits(tokio_serial::StopBits::One)
        .flow_control(tokio_serial::FlowControl::None)
        .open_native_async()
        .map_err(|e| {
            let kind = match e.kind() {
                tokio_serial::ErrorKind::NoDevice => LinkErrorKind::NoDevice,
                tokio_serial::ErrorKind::Io(io::ErrorKind::NotFound) => LinkErrorKind::NoDevice,
                tokio_serial::ErrorKind::Io(k) => LinkErrorKind::Io(k),
                _ => LinkErrorKind::Io(io::ErrorKind::Other),
            };
            LinkError::new(path, kind, format!("cannot open serial port {path}: {e}"))
        })?;
    let _ = port.clear(tokio_serial::ClearBuffer::Input);
    Ok(port)
}

/// Changes the port's speed (both directions).
pub fn set_baud(port: &mut SerialStream, baud: u32) -> io::Result<()> {
    port.set_baud_rate(baud).map_err(io::Error::other)
}

/// Discards what is waiting in the port's input buffer.
pub fn flush_input(port: &SerialStream) {
    let _ = port.clear(tokio_serial::ClearBuffer::Input);
}

/// Reads what is available within `timeout`: `Ok(None)` if nothing came, an error if the
/// port failed or reached its end (a vanished device).
pub async fn read_some<R: AsyncReadExt + Unpin>(
    port: &mut R,
    buf: &mut [u8],
    timeout: Duration,
) -> io::Result<Option<usize>> {
    match tokio::time::timeout(timeout, port.read(buf)).await {
        Err(_) => Ok(None),
        Ok(Ok(0)) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the device closed the line",
        )),
        Ok(Ok(n)) => Ok(Some(n)),
        Ok(Err(e)) => Err(e),
    }
}

/// Waits at most `timeout` for `take` to find what is waited for in `parser`: `take` looks
/// first at what `parser` holds already, then again after each read from `port` (into
/// `buf`) is given to `parser` with `push`. `Ok(None)` if nothing was found in time; an
/// error if the port failed or reached its end (see [`read_some`]).
pub async fn read_until<R: AsyncReadExt + Unpin, P, T>(
    port: &mut R,
    buf: &mut [u8],
    timeout: Duration,
    parser: &mut P,
    push: fn(&mut P, &[u8]),
    mut take: impl FnMut(&mut P) -> Option<T>,
) -> io::Result<Option<T>> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(found) = take(parser) {
            return Ok(Some(found));
        }
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        if let Some(n) = read_some(port, buf, left).await? {
            push(parser, &buf[..n]);
        }
    }
}

/// Reads what a served connection's device sends next (waiting as long as it takes; the
/// caller races it against its silence deadline): the byte count, or why the link is
/// lost: "the `line` reached its end" (`line` is "port" or "line") or "read failed: ...".
/// `place` names the port or address in the error. Cancel-safe.
pub async fn read_served<R: AsyncReadExt + Unpin>(
    port: &mut R,
    buf: &mut [u8],
    place: &str,
    line: &str,
) -> Result<usize, LinkError> {
    match port.read(buf).await {
        Ok(0) => Err(LinkError::protocol(
            place,
            format!("the {line} reached its end"),
        )),
        Ok(n) => Ok(n),
        Err(e) => Err(LinkError::io(place, &e, format!("read failed: {e}"))),
    }
}

/// How long a write to a device may take before the line is taken for stuck.
pub const WRITE_TIMEOUT: Duration = Duration::from_millis(500);

/// Writes all of `bytes` within `timeout` (a line no one drains must not hang a driver).
pub async fn write_all<W: tokio::io::AsyncWriteExt + Unpin>(
    port: &mut W,
    bytes: &[u8],
    timeout: Duration,
) -> io::Result<()> {
    match tokio::time::timeout(timeout, port.write_all(bytes)).await {
        Ok(r) => r,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the line did not take the bytes",
        )),
    }
}

/// Writes all of `bytes` and waits for the port to send them, each within
/// [`WRITE_TIMEOUT`]: the last words to a device before its port closes (a stop, a close).
/// A flush that does not finish in time is not an error (the bytes were taken).
pub async fn write_flushed<W: tokio::io::AsyncWriteExt + Unpin>(
    port: &mut W,
    bytes: &[u8],
) -> io::Result<()> {
    write_all(port, bytes, WRITE_TIMEOUT).await?;
    let _ = tokio::time::timeout(WRITE_TIMEOUT, port.flush()).await;
    Ok(())
}

/// Exponential reconnect backoff.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Starts at `first`, doubles up to `max`.
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// The next wait.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    /// Back to the first wait (after a success).
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(Duration::from_millis(200), Duration::from_secs(5))
    }
}

/// Decides which of a stream of repeated events to log: the first ten, then every
/// hundredth, so a noisy line is visible but cannot flood the log.
#[derive(Debug, Default, Clone)]
pub struct LogThrottle {
    seen: u64,
}

impl LogThrottle {
    /// Counts one event; true if this one should be logged.
    pub fn hit(&mut self) -> bool {
        self.seen += 1;
        self.seen <= 10 || self.seen % 100 == 0
    }

    /// Events counted so far.
    pub fn count(&self) -> u64 {
        self.seen
    }
}

/// Held by a link task while it runs; dropping it (the task ended, or was dropped with its
/// arbiter) tells every [`Done`] watcher.
pub struct DoneGuard(tokio::sync::watch::Sender<bool>);

impl Drop for DoneGuard {
    fn drop(&mut self) {
        let _ = self.0.send(true);
    }
}

/// Watches whether a link task has ended, so that a new link never opens the port before
/// the old one has closed it, and shutdown waits for the close to be sent.
#[derive(Clone)]
pub struct Done(tokio::sync::watch::Receiver<bool>);

impl Done {
    /// A guard for a task and the watcher of its end.
    pub fn new() -> (DoneGuard, Done) {
        let (tx, rx) = tokio::sync::watch::channel(false);
        (DoneGuard(tx), Done(rx))
    }

    /// Waits until the task has ended, at most `timeout`.
    pub async fn wait(mut self, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.0.wait_for(|d| *d)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[test]
    fn backoff_doubles_to_the_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(500));
        let d: Vec<u64> = (0..5).map(|_| b.next_delay().as_millis() as u64).collect();
        assert_eq!(d, vec![100, 200, 400, 500, 500]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(100));
    }

    #[test]
    fn throttle_logs_the_first_ten_then_every_hundredth() {
        let mut t = LogThrottle::default();
        let logged = (0..300).filter(|_| t.hit()).count();
        assert_eq!(logged, 10 + 3);
        assert_eq!(t.count(), 300);
    }

    /// A parser that keeps whole lines.
    #[derive(Default)]
    struct Lines(Vec<u8>);

    impl Lines {
        fn push(&mut self, bytes: &[u8]) {
            self.0.extend_from_slice(bytes);
        }
        fn next(&mut self) -> Option<String> {
            let end = self.0.iter().position(|&b| b == b'\n')?;
            let line: Vec<u8> = self.0.drain(..=end).collect();
            Some(String::from_utf8_lossy(&line[..end]).into_owned())
        }
    }

    #[test]
    fn read_until_finds_what_the_parser_holds_then_reads_until_found_or_timeout() {
        actix_rt::System::new().block_on(async {
            let (mut ours, mut device) = tokio::io::duplex(64);
            let mut lines = Lines::default();
            let mut buf = [0u8; 16];
            let want_ok = |l: &mut Lines| std::iter::from_fn(|| l.next()).find(|s| s == "OK");
            // Already held: found without a read.
            lines.push(b"junk\nOK\nrest");
            let t = Duration::from_millis(50);
            let got = read_until(&mut ours, &mut buf, t, &mut lines, Lines::push, want_ok);
            assert_eq!(got.await.unwrap().as_deref(), Some("OK"));
            // Read in pieces, the rest of a line first.
            device.write_all(b"\nnoise\nO").await.unwrap();
            let later = async {
                // Only splits the line over two reads: the wait must span them.
                tokio::time::sleep(Duration::from_millis(20)).await;
                device.write_all(b"K\n").await.unwrap();
                device
            };
            let t = Duration::from_secs(5);
            let wait = read_until(&mut ours, &mut buf, t, &mut lines, Lines::push, want_ok);
            let (got, mut device) = tokio::join!(wait, later);
            assert_eq!(got.unwrap().as_deref(), Some("OK"));
            // Nothing wanted comes: None after the timeout.
            device.write_all(b"nope\n").await.unwrap();
            let t = Duration::from_millis(50);
            let got = read_until(&mut ours, &mut buf, t, &mut lines, Lines::push, want_ok);
            assert_eq!(got.await.unwrap(), None);
            // The device goes away: an error.
            drop(device);
            let got = read_until(&mut ours, &mut buf, t, &mut lines, Lines::push, want_ok);
            assert_eq!(got.await.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        });
    }

    #[test]
    fn a_served_read_names_the_port_when_the_line_ends() {
        actix_rt::System::new().block_on(async {
            let (mut ours, mut device) = tokio::io::duplex(64);
            let mut buf = [0u8; 16];
            device.write_all(b"abc").await.unwrap();
            assert_eq!(
                read_served(&mut ours, &mut buf, "/dev/x", "port").await,
                Ok(3)
            );
            drop(device);
            let e = read_served(&mut ours, &mut buf, "/dev/x", "line")
                .await
                .unwrap_err();
            assert_eq!(e, LinkError::protocol("/dev/x", "the line reached its end"));
        });
    }

    #[test]
    fn opening_a_missing_port_names_it() {
        let e = open_serial("/dev/does-not-exist-player", 9600).unwrap_err();
        assert_eq!(e.port, "/dev/does-not-exist-player");
        assert_eq!(e.kind, LinkErrorKind::NoDevice, "{e}");
        assert!(e.to_string().contains("/dev/does-not-exist-player"), "{e}");
    }
}
