//! The web endpoint over TLS (`[web] tls_cert`/`tls_key`): a self-signed certificate made at
//! test time, the server started with it, and real TLS clients over real TCP trusting that
//! certificate: `wss://` speaking `foxglove.websocket.v1` and the page over `https://`; the
//! access key still applies; plain `ws://` and `http://` on the TLS port are refused without
//! hurting a TLS client; two robots sharing one web port are served over TLS alike; a
//! certificate or key that cannot be used stops the start and is named by `--check-config`.

use player::settings::Settings;
use player_testkit::foxglove_ws::{
    channel_id, handshake, next_json, next_op, runtime as rt, subscribe,
};
use player_testkit::hw::scratch_dir;
use player_testkit::{
    check_config, default_settings, free_port, start_server_logged, LogCapture, TestServer,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;
use tokio_tungstenite::WebSocketStream;

const PLAYER: &str = env!("CARGO_BIN_EXE_player");

/// A self-signed certificate for `localhost` and 127.0.0.1, written as PEM files.
struct Cert {
    cert: PathBuf,
    key: PathBuf,
    der: CertificateDer<'static>,
}

fn make_cert(dir: &Path, name: &str) -> Cert {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    Cert {
        cert,
        key,
        der: ck.cert.der().clone(),
    }
}

fn tls_settings(cert: &Cert, adjust: impl FnOnce(&mut Settings)) -> (Settings, u16) {
    let mut s = default_settings();
    let port = free_port();
    s.web.viewer_mut(0).web_port = Some(port);
    s.web.tls_cert = cert.cert.display().to_string();
    s.web.tls_key = cert.key.display().to_string();
    adjust(&mut s);
    (s, port)
}

fn tls_server(cert: &Cert, adjust: impl FnOnce(&mut Settings)) -> (TestServer, u16, LogCapture) {
    let (s, port) = tls_settings(cert, adjust);
    let log = LogCapture::default();
    let server = start_server_logged(s, player::builtin_catalog(), log.logger());
    (server, port, log)
}

/// A TLS client trusting `trusted` only (ring, as the server).
fn connector(trusted: &[&CertificateDer<'static>]) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    for c in trusted {
        roots.add((*c).clone()).unwrap();
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

type Tls = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

async fn tls_connect(port: u16, trusted: &[&CertificateDer<'static>]) -> std::io::Result<Tls> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let name = ServerName::try_from("localhost").unwrap();
    connector(trusted).connect(name, tcp).await
}

/// A `wss://` Foxglove client trusting `cert` (`query` asks `?encoding=json`
/// where [`next_json`] reads the scan); the error's text when refused.
async fn wss(
    port: u16,
    cert: &CertificateDer<'static>,
    query: &str,
) -> Result<WebSocketStream<Tls>, String> {
    let tls = tls_connect(port, &[cert])
        .await
        .map_err(|e| e.to_string())?;
    handshake(tls, &format!("wss://localhost:{port}/{query}")).await
}

/// Subscribes to `/laser` as subscription `sub` (after the advertisement).
async fn subscribe_laser<S: AsyncRead + AsyncWrite + Unpin>(ws: &mut WebSocketStream<S>, sub: u32) {
    let adv = next_op(ws, "advertise").await;
    subscribe(ws, &[(u64::from(sub), channel_id(&adv, "/laser"))]).await;
}

/// A whole HTTP/1.1 exchange (`Connection: close`) over `stream`.
async fn http_get<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, path: &str) -> String {
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut out))
        .await
        .expect("the answer within 20 s");
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_wss_client_trusting_the_certificate_gets_server_info_laser_scans_and_the_page_over_https() {
    let dir = scratch_dir("web-tls-ok");
    let cert = make_cert(&dir, "robot");
    let (server, port, log) = tls_server(&cert, |_| {});
    log.wait_for_all(&[
        "web viewer listening",
        &format!("https://127.0.0.1:{port}/"),
    ]);
    rt().block_on(async {
        let mut ws = wss(port, &cert.der, "?encoding=json").await.unwrap();
        let info = next_op(&mut ws, "serverInfo").await;
        assert!(info["name"].is_string(), "{info}");
        subscribe_laser(&mut ws, 7).await;
        let scan = next_json(&mut ws, 7, Duration::from_secs(20)).await;
        assert_eq!(scan["ranges"].as_array().unwrap().len(), 361);
        ws.close(None).await.unwrap();

        // The page over https (the page itself picks wss:// when loaded so).
        let page = http_get(tls_connect(port, &[&cert.der]).await.unwrap(), "/").await;
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("viewer.js"), "{page}");
        let js = http_get(tls_connect(port, &[&cert.der]).await.unwrap(), "/viewer.js").await;
        assert!(
            js.contains("location.protocol === \"https:\" ? \"wss\""),
            "page picks wss"
        );
    });
    server.shutdown();
}

#[test]
fn over_tls_the_access_key_still_applies() {
    let dir = scratch_dir("web-tls-key");
    let cert = make_cert(&dir, "robot");
    let (server, port, _log) = tls_server(&cert, |s| {
        s.access.key = "sesame".into();
        s.access.keyless = "refuse".into();
    });
    rt().block_on(async {
        let e = wss(port, &cert.der, "?key=wrong").await.unwrap_err();
        assert!(e.contains("403"), "{e}");
        let e = wss(port, &cert.der, "").await.unwrap_err();
        assert!(e.contains("403"), "{e}");
        let mut ws = wss(port, &cert.der, "?key=sesame").await.unwrap();
        let info = next_op(&mut ws, "serverInfo").await;
        assert!(info["capabilities"].is_array(), "{info}");
        ws.close(None).await.unwrap();
    });
    server.shutdown();
}

#[test]
fn plain_and_failed_connections_on_the_tls_port_are_refused_without_hurting_a_wss_client() {
    let dir = scratch_dir("web-tls-plain");
    let cert = make_cert(&dir, "robot");
    let other = make_cert(&dir, "other");
    let (server, port, log) = tls_server(&cert, |_| {});
    rt().block_on(async {
        let mut ws = wss(port, &cert.der, "?encoding=json").await.unwrap();
        subscribe_laser(&mut ws, 1).await;
        next_json(&mut ws, 1, Duration::from_secs(20)).await;

        // A connection that says nothing holds its handshake open: others go on.
        let silent_since = tokio::time::Instant::now();
        let mut silent = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        // And one that starts a handshake and stalls in it.
        let stalled_since = tokio::time::Instant::now();
        let mut stalled = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        stalled.write_all(&[0x16, 3, 1]).await.unwrap();

        // ws:// on the TLS port: refused with a 400 that names the right scheme.
        for _ in 0..5 {
            let e = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/"))
                .await
                .unwrap_err();
            assert!(e.to_string().contains("400"), "{e}");
        }
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let answer = http_get(tcp, "/").await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(
            answer.contains("https://") && answer.contains("wss://"),
            "{answer}"
        );

        // A client that does not trust the certificate (as a browser before it is told
        // to) fails its handshake; so does one that sends a TLS record of garbage.
        let e = tls_connect(port, &[&other.der]).await.unwrap_err();
        assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
        let mut garbage = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        garbage
            .write_all(&[0x16, 3, 1, 0, 4, 9, 9, 9, 9])
            .await
            .unwrap();
        let mut buf = [0u8; 64];
        let _ = tokio::time::timeout(Duration::from_secs(20), garbage.read(&mut buf))
            .await
            .expect("the server ends a garbage handshake");

        // Meanwhile the wss client is served on, and a new one connects.
        next_json(&mut ws, 1, Duration::from_secs(5)).await;
        let mut second = wss(port, &cert.der, "?encoding=json").await.unwrap();
        next_op(&mut second, "serverInfo").await;
        next_json(&mut ws, 1, Duration::from_secs(5)).await;
        // The silent one is closed once its handshake's time is up (10 s), not before.
        let n = tokio::time::timeout(Duration::from_secs(30), silent.read(&mut buf))
            .await
            .expect("the server closes a silent connection");
        assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
        let held = silent_since.elapsed();
        assert!(held >= Duration::from_secs(9), "closed after {held:?}");
        // So is the one that stalled in its handshake.
        let n = tokio::time::timeout(Duration::from_secs(30), stalled.read(&mut buf))
            .await
            .expect("the server closes a stalled handshake");
        assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
        let held = stalled_since.elapsed();
        assert!(held >= Duration::from_secs(9), "closed after {held:?}");
        next_json(&mut ws, 1, Duration::from_secs(5)).await;
        second.close(None).await.unwrap();
        ws.close(None).await.unwrap();
    });
    // Six plain connections: one log line for them (rate-limited), none per connection.
    log.wait_for("plain connection on the TLS web port refused");
    log.wait_for("TLS handshake failed");
    let plain_lines = log
        .dump()
        .lines()
        .filter(|l| l.contains("plain connection on the TLS web port refused"))
        .count();
    assert_eq!(plain_lines, 1, "{}", log.dump());
    server.shutdown();
}

/// A configuration file with this `[web]` section (and the default robot).
fn config_with_web(dir: &Path, web: &str) -> PathBuf {
    let path = dir.join("robot.toml");
    let text = format!(
        "[web]\n{web}\n[[robot]]\nname = \"pioneer\"\nport = {}\nweb_port = {}\n[[robot.driver]]\ndriver = \"sim\"\ndevices = [\"p\", \"l\"]\n",
        free_port(),
        free_port()
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn an_unusable_certificate_or_key_stops_the_start_and_check_config_names_the_file() {
    let dir = scratch_dir("web-tls-bad");
    let cert = make_cert(&dir, "robot");
    let other = make_cert(&dir, "other");
    let missing = dir.join("missing.crt");
    let cases: [(&Path, &Path, &str, &str); 3] = [
        (&missing, &cert.key, "web.tls_cert", "missing.crt"),
        // The key of another certificate.
        (
            &cert.cert,
            &other.key,
            "web.tls_key",
            "is not the private key",
        ),
        // A certificate where the key should be.
        (&cert.cert, &other.cert, "web.tls_key", "other.crt"),
    ];
    for (c, k, key, says) in cases {
        let files = Cert {
            cert: c.to_path_buf(),
            key: k.to_path_buf(),
            der: cert.der.clone(),
        };
        let (s, _) = tls_settings(&files, |_| {});
        let e = TestServer::try_start(s, player::builtin_catalog(), player::logging::discard())
            .err()
            .unwrap_or_else(|| panic!("started with {c:?} and {k:?}"));
        let e = e.to_string();
        assert!(e.contains(key) && e.contains(says), "{e}");

        let file = config_with_web(
            &dir,
            &format!(
                "tls_cert = \"{}\"\ntls_key = \"{}\"",
                c.display(),
                k.display()
            ),
        );
        let (code, out, err) = check_config(PLAYER, &file);
        assert_eq!(code, 1, "{out}{err}");
        assert!(err.contains(&format!("  {key} (line ")), "{err}");
        assert!(err.contains(says), "{err}");
    }
    // Relative to the configuration file's folder; the pair is good.
    let file = config_with_web(&dir, "tls_cert = \"robot.crt\"\ntls_key = \"robot.key\"");
    let (code, out, err) = check_config(PLAYER, &file);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("web viewer TLS: https and wss only"), "{out}");
    // One without the other.
    let file = config_with_web(&dir, "tls_cert = \"robot.crt\"");
    let (code, out, err) = check_config(PLAYER, &file);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("  web.tls_cert (line 2): "), "{err}");
    assert!(err.contains("web.tls_key"), "{err}");
}

#[test]
fn past_max_handshakes_under_way_a_new_connection_is_closed_until_they_end() {
    let dir = scratch_dir("web-tls-many");
    let cert = make_cert(&dir, "robot");
    let (server, port, log) = tls_server(&cert, |_| {});
    rt().block_on(async {
        let connect = || tokio::net::TcpStream::connect(("127.0.0.1", port));
        let mut silent = Vec::new();
        for _ in 0..player::web::tls::MAX_HANDSHAKES {
            silent.push(connect().await.unwrap());
        }
        // Each takes its place on its own task: wait until one more finds none (closed at
        // once, without a byte) rather than guess when they all have.
        let mut buf = [0u8; 16];
        let mut refused = false;
        for _ in 0..50 {
            let mut extra = connect().await.unwrap();
            match tokio::time::timeout(Duration::from_secs(1), extra.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    refused = true;
                    break;
                }
                Ok(Ok(n)) => panic!("{n} bytes to a silent client"),
                Err(_) => silent.push(extra),
            }
        }
        assert!(refused, "no connection refused past the limit");
        // When they go, their places are free again.
        drop(silent);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut ws = loop {
            match wss(port, &cert.der, "").await {
                Ok(ws) => break ws,
                Err(e) => assert!(tokio::time::Instant::now() < deadline, "{e}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        next_op(&mut ws, "serverInfo").await;
        ws.close(None).await.unwrap();
    });
    log.wait_for("too many handshakes under way");
    server.shutdown();
}

#[test]
fn two_robots_sharing_one_tls_port_are_served_over_wss_each_under_its_name() {
    let dir = scratch_dir("web-tls-world");
    let cert = make_cert(&dir, "robot");
    // A world of two simple robots (wheels, sonar), both given one web port.
    let world = dir.join("world.toml");
    std::fs::write(
        &world,
        "[world]\nwidth = 20000\nheight = 20000\n\
         [[swarm]]\ncount = 2\nspacing = 1200\nkind = \"simple\"\n",
    )
    .unwrap();
    let args = vec!["-stage".to_string(), world.display().to_string()];
    let mut s = match player::parse_args(&args) {
        Ok(player::settings::Invocation::Run { settings, .. }) => *settings,
        other => panic!("{other:?}"),
    };
    let port = free_port();
    for i in 0..s.robot.len() {
        s.web.viewer_mut(i).web_port = Some(port);
    }
    s.web.tls_cert = cert.cert.display().to_string();
    s.web.tls_key = cert.key.display().to_string();
    let log = LogCapture::default();
    let server = start_server_logged(s, player::builtin_catalog(), log.logger());
    log.wait_for_all(&[
        "web viewer listening",
        &format!("https://127.0.0.1:{port}/"),
    ]);
    rt().block_on(async {
        // A plain WebSocket on the shared port is refused as on any TLS port.
        let plain = format!("ws://127.0.0.1:{port}/");
        assert!(tokio_tungstenite::connect_async(plain).await.is_err());

        // JSON, as the pose is read below (the default is protobuf).
        let mut ws = wss(port, &cert.der, "?encoding=json").await.unwrap();
        let info = next_op(&mut ws, "serverInfo").await;
        assert_eq!(info["name"], "player (2 robots)", "{info}");
        // The second robot's pose, advertised under its name with its block of ids.
        let mut pose = None;
        while pose.is_none() {
            let adv = next_op(&mut ws, "advertise").await;
            pose = adv["channels"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["topic"] == "/robot1/pose")
                .map(|c| c["id"].as_u64().unwrap());
        }
        let pose = pose.unwrap();
        assert!(pose > 64, "robot 1's block of ids: {pose}");
        subscribe(&mut ws, &[(9, pose)]).await;
        let v = next_json(&mut ws, 9, Duration::from_secs(20)).await;
        assert_eq!(v["frame_id"], "robot1/odom", "{v}");
    });
    server.shutdown();
}
