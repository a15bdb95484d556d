//! The test harness of the player server, shared by the integration tests (`tests/`), the
//! client's tests and the benches: one implementation of each helper they need.
//!
//! - [`TestServer`]: the server in-process on its own thread and actix system, every robot
//!   on 127.0.0.1 port 0, so tests run in parallel; dropping it shuts the server down.
//! - [`Client`]: a raw byte-level Player client over `std::net::TcpStream`, and
//!   [`Streamer`]: a client on a thread of its own that records when each round arrived,
//!   to measure rates.
//! - Waits on events rather than on the clock: [`wait_until`], a server log a test can
//!   search and wait on ([`LogCapture`]), a child process's standard error
//!   ([`collect_stderr`], [`wait_for_text`]), [`Client::expect_closed`],
//!   [`Client::wait_notice`], [`Streamer::wait_rounds`].
//! - [`netns`]: network namespaces and veth pairs for tests of real links (root only).
//! - [`hw`]: what the hardware-driver tests (`tests/hw_*.rs`) share, with the one check of
//!   a missing port and of a silent port every serial driver gets.
//! - [`foxglove_ws`]: a Foxglove WebSocket client for the web endpoint's tests, over plain
//!   TCP or TLS.
//! - [`zenoh_client`]: a Zenoh session to the server's bridge.
//! - [`bench`](mod@bench): what the load benches share (server processes, CPU time, the round reader).
//! - [`random`]: random clients of the protocol (seeded), for fuzzing a running server.
//!
//! Timeouts are generous (the suite must not be flaky on a loaded two-core machine); rates
//! are measured over seconds and checked with wide tolerance. Set `PLAYER_TEST_LOG=1` to
//! see the server's log on standard error.
#![deny(missing_docs)]

pub mod bench;
mod client;
pub mod foxglove_ws;
pub mod hw;
pub mod netns;
pub mod random;
mod server;
mod streamer;
mod wait;
mod zenoh_session;

pub use client::{
    assert_fresh_client_served, assert_rate, count_rounds, heading_near_zero, pairs_bytes, Client,
    Packet,
};
pub use server::{
    check_config, default_settings, start_server, start_server_command_timeout,
    start_server_logged, start_server_with, TestServer,
};
pub use streamer::Streamer;
pub use wait::{
    collect_stderr, free_port, sleep_until, wait_for_text, wait_until, LogCapture, TIMEOUT,
};
pub use zenoh_session::zenoh_client;
