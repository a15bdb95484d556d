//! TLS on the web endpoint: `https://` for the page and `wss://` for the Foxglove
//! WebSocket, on the robot's web port, with the certificate and key of `[web] tls_cert` and
//! `tls_key` ([`crate::WebSettings`]). rustls on the ring provider: no OpenSSL.
//!
//! With TLS on, a port speaks nothing else. A plain connection (`http://`, `ws://`) gets a
//! `400` that says to use `https://` or `wss://`, and is closed; a failed handshake (a
//! browser that does not trust the certificate yet, a scanner) is closed. Both are logged,
//! at most one line per [`LOG_EVERY`] with the count of those not logged. A handshake runs
//! on the connection's own task with a deadline ([`HANDSHAKE_TIMEOUT`]), and at most
//! [`MAX_HANDSHAKES`] at once per endpoint (more are closed at once): a slow or silent
//! client delays no other and holds no memory for long.
//!
//! The access policy (`[access]`, the `?key=` of the URL) applies after the handshake,
//! exactly as without TLS.

use slog::{warn, Logger};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// How long a client may take from connecting to the end of its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Most TLS handshakes under way at once on one endpoint; a connection past it is closed
/// (each holds a task, a socket and rustls' state for at most [`HANDSHAKE_TIMEOUT`]).
pub const MAX_HANDSHAKES: usize = 256;

/// At most one log line per this long for refused plain connections, and one for failed
/// handshakes.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

/// Largest certificate or key file read (a chain of a few certificates is a few KiB).
const MAX_PEM_FILE: u64 = 1024 * 1024;

/// The first byte of a TLS record carrying a handshake (a ClientHello starts with it).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Largest plain request head read before answering it (the rest is not read).
const MAX_PLAIN_HEAD: usize = 16 * 1024;

/// What a plain `http://` or `ws://` request on a TLS port is answered.
const PLAIN_REFUSAL: &str =
    "this port speaks TLS only: open https:// (the page) or wss:// (Foxglove WebSocket)\n";

/// Why the certificate and key cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file cannot be read, or holds no usable PEM certificate.
    #[error("web.tls_cert: certificate file '{}': {why}", path.display())]
    Certificate {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The key file cannot be read, or holds no usable PEM private key.
    #[error("web.tls_key: key file '{}': {why}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The key is not the certificate's.
    #[error("web.tls_key: key file '{}' is not the private key of certificate '{}' (web.tls_cert)", key.display(), cert.display())]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
}

impl TlsError {
    /// The configuration key the error is about: `web.tls_cert` or `web.tls_key`.
    pub fn key(&self) -> &'static str {
        match self {
            TlsError::Certificate { .. } => "web.tls_cert",
            TlsError::Key { .. } | TlsError::Mismatch { .. } => "web.tls_key",
        }
    }
}

/// The certificate and key files of `[web]`, paths resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
}

/// A PEM file's bytes, at most [`MAX_PEM_FILE`].
fn read_pem(path: &Path) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file"));
    }
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut io::Read::take(file, MAX_PEM_FILE + 1), &mut bytes)?;
    if bytes.len() as u64 > MAX_PEM_FILE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {MAX_PEM_FILE} bytes: not a certificate or key"),
        ));
    }
    Ok(bytes)
}

fn pem_why(e: pem::Error, what: &str, marker: &str) -> String {
    match e {
        pem::Error::NoItemsFound => format!("no PEM {what} ({marker}) in it"),
        e => format!("not a PEM {what}: {e}"),
    }
}

impl TlsFiles {
    /// Reads and checks the certificate and key: readable, PEM, and the key the
    /// certificate's (a mismatch is found here, not at a client's handshake).
    pub fn load(&self) -> Result<TlsConfig, TlsError> {
        let cert_error = |why: String| TlsError::Certificate {
            path: self.cert.clone(),
            why,
        };
        let key_error = |why: String| TlsError::Key {
            path: self.key.clone(),
            why,
        };
        let cert_pem = read_pem(&self.cert).map_err(|e| cert_error(format!("cannot read: {e}")))?;
        let chain = CertificateDer::pem_slice_iter(&cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| cert_error(pem_why(e, "certificate", "BEGIN CERTIFICATE")))?;
        if chain.is_empty() {
            return Err(cert_error(pem_why(
                pem::Error::NoItemsFound,
                "certificate",
                "BEGIN CERTIFICATE",
            )));
        }
        let key_pem = read_pem(&self.key).map_err(|e| key_error(format!("cannot read: {e}")))?;
        let key = PrivateKeyDer::from_pem_slice(&key_pem)
            .map_err(|e| key_error(pem_why(e, "private key", "BEGIN PRIVATE KEY")))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| key_error(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| match e {
                rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                    TlsError::Mismatch {
                        cert: self.cert.clone(),
                        key: self.key.clone(),
                    }
                }
                e => key_error(format!("cannot be used with the certificate: {e}")),
            })?;
        // HTTP/1.1 only (WebSocket upgrades are HTTP/1.1).
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(TlsConfig {
            config: Arc::new(config),
        })
    }
}

/// A loaded certificate and key, ready to serve ([`TlsFiles::load`]).
#[derive(Clone)]
pub struct TlsConfig {
    config: Arc<ServerConfig>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsConfig")
    }
}

/// Counts events and says when one may be logged: the first, then at most one per
/// [`LOG_EVERY`], with how many were not logged since.
struct RateLimited {
    state: Mutex<(Option<Instant>, u64)>,
}

impl RateLimited {
    fn new() -> Self {
        RateLimited {
            state: Mutex::new((None, 0)),
        }
    }

    /// `Some(not logged since the last line)` when this one is to be logged.
    fn hit(&self) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match s.0 {
            Some(last) if now.duration_since(last) < LOG_EVERY => {
                s.1 += 1;
                None
            }
            _ => {
                s.0 = Some(now);
                Some(std::mem::take(&mut s.1))
            }
        }
    }
}

/// One endpoint's TLS: the certificate, the handshakes under way, the rate-limited logs.
pub struct TlsEndpoint {
    acceptor: TlsAcceptor,
    handshakes: AtomicUsize,
    plain_log: RateLimited,
    failed_log: RateLimited,
}

/// A place among the [`MAX_HANDSHAKES`], given back when dropped.
struct HandshakeSlot<'a>(&'a AtomicUsize);

impl Drop for HandshakeSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How one connection's handshake ended, when it did not succeed.
enum Refused {
    /// A plain HTTP request, answered with a 400.
    Plain,
    /// The TLS handshake failed.
    Failed(io::Error),
    /// The client started its handshake but took longer than [`HANDSHAKE_TIMEOUT`].
    TimedOut,
    /// The client sent nothing within [`HANDSHAKE_TIMEOUT`] (a browser's spare connection,
    /// a port scan): closed, logged at debug level only.
    Silent,
    /// The client closed before sending anything.
    Closed,
}

impl TlsEndpoint {
    /// Serves `config` on one endpoint.
    pub fn new(config: &TlsConfig) -> Self {
        TlsEndpoint {
            acceptor: TlsAcceptor::from(config.config.clone()),
            handshakes: AtomicUsize::new(0),
            plain_log: RateLimited::new(),
            failed_log: RateLimited::new(),
        }
    }

    /// The TLS handshake of a new connection; `None` (the connection closed, the reason
    /// logged, rate-limited) when it is plain, fails, takes too long or is past
    /// [`MAX_HANDSHAKES`].
    pub async fn accept(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        log: &Logger,
    ) -> Option<TlsStream<TcpStream>> {
        if self.handshakes.fetch_add(1, Ordering::Relaxed) >= MAX_HANDSHAKES {
            self.handshakes.fetch_sub(1, Ordering::Relaxed);
            if let Some(n) = self.failed_log.hit() {
                warn!(log, "TLS connection closed: too many handshakes under way"; "client" => %peer, "limit" => MAX_HANDSHAKES, "not_logged" => n);
            }
            return None;
        }
        let _slot = HandshakeSlot(&self.handshakes);
        let deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
        match self.handshake(stream, deadline).await {
            Ok(tls) => Some(tls),
            Err(Refused::Plain) => {
                if let Some(n) = self.plain_log.hit() {
                    warn!(log, "plain connection on the TLS web port refused (use https:// or wss://)"; "client" => %peer, "not_logged" => n);
                }
                None
            }
            Err(Refused::Closed) => None,
            Err(Refused::Silent) => {
                slog::debug!(log, "web connection closed: no TLS handshake started"; "client" => %peer, "within" => ?HANDSHAKE_TIMEOUT);
                None
            }
            Err(why) => {
                if let Some(n) = self.failed_log.hit() {
                    let error = match why {
                        Refused::Failed(e) => e.to_string(),
                        _ => format!("no handshake within {HANDSHAKE_TIMEOUT:?}"),
                    };
                    warn!(log, "TLS handshake failed (a browser that does not trust the certificate yet ends it so)"; "client" => %peer, "error" => error, "not_logged" => n);
                }
                None
            }
        }
    }

    /// The handshake (or the refusal of a plain request), all of it by `deadline`.
    async fn handshake(
        &self,
        mut stream: TcpStream,
        deadline: tokio::time::Instant,
    ) -> Result<TlsStream<TcpStream>, Refused> {
        let mut first = [0u8; 1];
        match tokio::time::timeout_at(deadline, stream.peek(&mut first)).await {
            Err(_) => return Err(Refused::Silent),
            Ok(Ok(0)) => return Err(Refused::Closed),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(Refused::Failed(e)),
        }
        if first[0] != TLS_HANDSHAKE_RECORD {
            let _ = tokio::time::timeout_at(deadline, refuse_plain(&mut stream)).await;
            return Err(Refused::Plain);
        }
        tokio::time::timeout_at(deadline, self.acceptor.accept(stream))
            .await
            .map_err(|_| Refused::TimedOut)?
            .map_err(Refused::Failed)
    }
}

/// Answers a plain request with a 400 naming the right scheme: its head read first (so
/// closing does not reset the connection under the answer), then the answer, then a close.
async fn refuse_plain(stream: &mut TcpStream) {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while head.len() < MAX_PLAIN_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{PLAIN_REFUSAL}",
        PLAIN_REFUSAL.len()
    );
    if stream.write_all(answer.as_bytes()).await.is_ok() {
        let _ = stream.shutdown().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("player-web-tls-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn unreadable_or_non_pem_files_are_errors_naming_the_file_and_key() {
        let d = scratch("bad");
        let files = TlsFiles {
            cert: d.join("missing.pem"),
            key: d.join("key.pem"),
        };
        let e = files.load().unwrap_err();
        assert_eq!(e.key(), "web.tls_cert");
        assert!(e.to_string().contains("missing.pem"), "{e}");
        assert!(e.to_string().contains("cannot read"), "{e}");
        std::fs::write(d.join("cert.pem"), "hello\n").unwrap();
        let files = TlsFiles {
            cert: d.join("cert.pem"),
            key: d.join("key.pem"),
        };
        let e = files.load().unwrap_err();
        assert_eq!(e.key(), "web.tls_cert");
        assert!(e.to_string().contains("BEGIN CERTIFICATE"), "{e}");
        // A directory is not a file.
        let files = TlsFiles {
            cert: d.clone(),
            key: d.join("key.pem"),
        };
        assert_eq!(files.load().unwrap_err().key(), "web.tls_cert");
    }

    #[test]
    fn plain_logs_are_rate_limited_and_count_what_they_skip() {
        let r = RateLimited::new();
        assert_eq!(r.hit(), Some(0));
        assert_eq!(r.hit(), None);
        assert_eq!(r.hit(), None);
        r.state.lock().unwrap().0 = Some(Instant::now() - LOG_EVERY);
        assert_eq!(r.hit(), Some(2));
    }
}
