//! Helpers shared by the integration tests (`mod common;` in a test): [`navstub`], the
//! stand-in localizer and planner, [`tour`], the maze tour with the localizer in the
//! loop (also `benches/nav_tour.rs`'s, through `benches/common`), and [`wait_closed`].

pub mod navstub;
pub mod tour;

/// Waits until device `code` of the server at `addr` is closed (idle: its last holder
/// gone), asked through the device list as any client may; fails after 20 s.
#[allow(dead_code)]
pub fn wait_closed(addr: std::net::SocketAddr, code: u8) {
    use std::time::{Duration, Instant};
    let mut c = player_client::Client::connect(addr).expect("a client for the device list");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = c.device_list().expect("the device list");
        let idle = list
            .iter()
            .any(|d| d.code == code && d.state == player_proto::ext::state::IDLE);
        if idle {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "device '{}' still open after 20 s: {list:?}",
            char::from(code)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
