//! What every laser driver shares: the devices a laser serves (`l`, the 0.7.4a view, and
//! `L`, the full scan; docs/extensions.md) and the readings one scan makes for them.

use bytes::Bytes;
use player_kit::driver::{DeviceSpec, DriverError};
use player_proto::device;
use player_proto::scan::Scan;

/// The devices a modern laser driver serves.
pub const DEVICES: [u8; 2] = [device::LASER, device::FULL_SCAN];

/// Checks that a configuration gives `driver` only laser devices (and at least one).
pub fn check_devices(driver: &str, devices: &[u8]) -> Result<(), DriverError> {
    if devices.is_empty() || devices.iter().any(|d| !DEVICES.contains(d)) {
        return Err(DriverError::params(format!(
            "the {driver} driver serves the laser devices 'l' and 'L' only"
        )));
    }
    Ok(())
}

/// The device specs of a laser driver (read-only devices).
pub fn specs(devices: &[u8]) -> Vec<DeviceSpec> {
    devices.iter().map(|&d| DeviceSpec::read_only(d)).collect()
}

/// The readings of one scan for the `devices` served: `l` as the 0.7.4a view (no return and
/// outside the field of view read `max_range_mm`), `L` as measured. A scan that cannot be
/// encoded (over 10000 readings) gives no `L`.
pub fn readings(scan: &Scan, max_range_mm: u32, devices: &[u8]) -> Vec<(u8, Bytes)> {
    devices
        .iter()
        .filter_map(|&d| match d {
            device::LASER => Some((d, Bytes::from(scan.laser_view(max_range_mm).encode()))),
            device::FULL_SCAN => scan.encode().ok().map(|b| (d, Bytes::from(b))),
            _ => None,
        })
        .collect()
}
