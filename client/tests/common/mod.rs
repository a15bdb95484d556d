//! The server the client tests talk to: `player` in-process on its own thread and actix
//! system, every robot moved to 127.0.0.1 port 0, so tests run in parallel.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use player::settings::Settings;

/// How long anything a test waits for may take on a loaded machine.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A running server; dropping it shuts it down.
pub struct TestServer {
    /// The first robot's address.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// The shipped default configuration: the simulated Pioneer with all seven devices.
    pub fn start() -> TestServer {
        TestServer::start_with(Settings::default_config())
    }

    /// A server with these settings.
    pub fn start_with(mut settings: Settings) -> TestServer {
        for r in &mut settings.robot {
            r.port = 0;
            r.bind = "127.0.0.1".into();
        }
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let system = actix_rt::System::new();
            system.block_on(async move {
                let catalog = player::builtin_catalog();
                let base = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
                let server =
                    player::server::start(&settings, &catalog, base, player::logging::discard())
                        .await
                        .expect("the server starts");
                let _ = ready_tx.send(server.local_addrs()[0]);
                let _ = stop_rx.await;
                server.shutdown().await;
            });
        });
        let addr = ready_rx.recv_timeout(PATIENCE).expect("server up");
        TestServer {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
