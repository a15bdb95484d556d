//! Device driver actors. Each driver lives in its own module and registers a factory in
//! the catalog under its name; the core never names a device model.
//!
//! - [`sim`]: the simulated Pioneer 2-DX (every device).
//! - [`p2os`]: a real Pioneer 2 base over a serial line (`p s m g`).
//! - [`sick`]: a real SICK LMS-200 laser over a serial line (`l`).
//! - [`ptz`]: a real Sony EVI-D30 pan-tilt-zoom camera over a serial line (`z`).
//! - [`acts`]: ACTS colour vision over TCP (`v`).
//! - [`passthrough`]: a device of another Player server served as a local device.
//! - [`replay`]: a recording (MCAP, as `-record` writes it) served as the robot's devices.
//! - [`emulators`]: emulated devices speaking the real protocols over pseudo-terminals and
//!   TCP, for trying and testing the hardware drivers without hardware.
//! - [`link`]: serial-port plumbing shared by the hardware drivers.

use crate::catalog::Catalog;

pub mod acts;
pub mod emulators;
pub mod link;
pub mod p2os;
pub mod passthrough;
pub mod ptz;
pub mod replay;
pub mod sick;
pub mod sim;

/// Registers every shipped driver.
pub fn register_all(catalog: &mut Catalog) {
    sim::register(catalog);
    p2os::register(catalog);
    sick::register(catalog);
    ptz::register(catalog);
    acts::register(catalog);
    replay::register(catalog);
    passthrough::register(catalog);
}
