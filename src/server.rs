//! Starting the whole server: the core's robots ([`Server::start`]), then the front ends
//! the settings turn on, each attached to the server that stops them.

pub use player_core::server::*;

use crate::settings::Settings;
use player_kit::catalog::Catalog;
use slog::Logger;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Starts every robot of `settings` with drivers from `catalog`, then the web viewer (TLS
/// with `[web] tls_cert`/`tls_key`), the
/// recorder (with `[record] path` set), the Zenoh bridge (`[zenoh] enabled`) and the ROS 2
/// front end (`[ros2] enabled`). A front
/// end that cannot start stops what was started and is the error. Must run inside an
/// actix system; `base_dir` resolves relative paths in the configuration.
pub async fn start(
    settings: &Settings,
    catalog: &Catalog,
    base_dir: PathBuf,
    log: Logger,
) -> Result<Server, StartError> {
    let mut server = Server::start(&settings.core, catalog, base_dir, log).await?;
    match attach_front_ends(&mut server, settings).await {
        Ok(()) => Ok(server),
        Err(e) => {
            server.shutdown().await;
            Err(e)
        }
    }
}

async fn attach_front_ends(server: &mut Server, settings: &Settings) -> Result<(), StartError> {
    let ctx = server.context().clone();
    let web = player_web::start(&settings.web, &ctx)
        .await
        .map_err(|e| StartError::front_end("web", e))?;
    server.attach(Box::new(web));
    // The recorder subscribes like a client, on a thread of its own.
    if settings.record.enabled() {
        let r = player_record::start(&settings.record, &ctx)
            .map_err(|e| StartError::front_end("record", e))?;
        server.attach(Box::new(r));
    }
    // The Zenoh bridge: one session for the process, a registry session per robot.
    if settings.zenoh.enabled {
        let z = player_zenoh::start(&settings.zenoh, &ctx)
            .await
            .map_err(|e| StartError::front_end("zenoh", e))?;
        server.attach(Box::new(z));
    }
    // ROS 2 (rmw_zenoh's conventions): a Zenoh session of its own, a node per robot.
    if settings.ros2.enabled {
        let r = player_ros2::start(&settings.ros2, &ctx)
            .await
            .map_err(|e| StartError::front_end("ros2", e))?;
        server.attach(Box::new(r));
    }
    Ok(())
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
