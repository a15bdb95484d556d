//! Starting the whole server: the core's robots ([`Server::start`]), then the front ends
//! the settings turn on, each attached to the server that stops them.

pub use player_core::server::*;

use crate::settings::Settings;
use player_kit::catalog::Catalog;
use slog::Logger;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Starts every robot of `settings` with drivers from `catalog`, then each front end the
/// settings turn on ([`crate::frontends`]: the web viewer, the recorder with `[record]
/// path`, the Zenoh bridge with `[zenoh] enabled`, the ROS 2 front end with `[ros2]
/// enabled`). A front end that cannot start stops what was started and is the error. Must
/// run inside an actix system; `base_dir` resolves relative paths in the configuration.
pub async fn start(
    settings: &Settings,
    catalog: &Catalog,
    base_dir: PathBuf,
    log: Logger,
) -> Result<Server, StartError> {
    let mut server = Server::start(&settings.core, catalog, base_dir, log).await?;
    match settings.front_ends().start(&mut server).await {
        Ok(()) => Ok(server),
        Err(e) => {
            server.shutdown().await;
            Err(e)
        }
    }
}

/// Each robot's web viewer address (`None` where it is off or its default port was busy),
/// in configuration order.
pub fn web_addrs(server: &Server) -> Vec<Option<SocketAddr>> {
    server
        .front_end::<player_web::WebViewer>()
        .map(player_web::WebViewer::addrs)
        .unwrap_or_default()
}

/// The Zenoh id of the bridge's session, when the bridge runs.
pub fn zenoh_zid(server: &Server) -> Option<String> {
    server
        .front_end::<player_zenoh::ZenohBridge>()
        .map(player_zenoh::ZenohBridge::zid)
}

/// The Zenoh id of the ROS 2 front end's session (the `<zid>` of its liveliness tokens),
/// when it runs.
pub fn ros2_zid(server: &Server) -> Option<String> {
    server
        .front_end::<player_ros2::Ros2FrontEnd>()
        .map(|r| r.zid().to_string())
}
