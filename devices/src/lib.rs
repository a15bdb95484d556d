//! The device protocols of the player robot server: how each supported piece of hardware
//! frames, checksums and encodes what it says and what it is told, as pure code (slices in,
//! typed values out, and back), with no I/O, no clock and no actors.
//!
//! - [`p2os`]: the Pioneer's P2OS serial protocol (packets, SIPs, commands).
//! - [`sick`]: the SICK LMS-200's telegrams (CRC-16, scans).
//! - [`urg`]: Hokuyo's SCIP 2.0 (URG/UTM lasers).
//! - [`rplidar`]: Slamtec's RPLIDAR protocol (descriptors, standard and express scans).
//! - [`create`]: the iRobot Create 2 Open Interface (sensor stream, odometry).
//! - [`visca`]: Sony VISCA for the EVI-D30 pan-tilt-zoom camera.
//! - [`acts`]: the ACTS colour tracker's request/reply protocol.
//!
//! Each protocol has both sides where the emulators need them: the drivers in
//! `player-drivers` talk to the hardware with these, the emulators in `player-emulators`
//! play the hardware with them, and the fuzz targets feed them bytes. Each module's tests
//! are its specification's rules. The layouts of the client protocol itself are
//! `player_proto`'s.
#![deny(missing_docs)]

pub mod acts;
pub mod create;
pub mod p2os;
pub mod rplidar;
pub mod sick;
pub mod urg;
pub mod visca;

/// What the protocols' tests share.
#[cfg(test)]
mod testing {
    /// Bytes written as the fact sheets print them: hex pairs separated by spaces
    /// (`"FA FB 03"`).
    pub fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }
}
