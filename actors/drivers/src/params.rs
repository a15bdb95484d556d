//! What the drivers' parameters share: the defaults several of them give (for
//! `#[serde(default = "crate::params::...")]`) and the range check of their numbers, so
//! that a bad value is refused with the same words by every driver.

use player_kit::driver::DriverError;

/// 1: one second (the usual `silence` and `reply_timeout`), a recording's own speed.
pub(crate) fn one() -> f64 {
    1.0
}

/// 3: seconds of silence before a network link is taken for lost.
pub(crate) fn three() -> f64 {
    3.0
}

/// 5: seconds to keep trying a first connection.
pub(crate) fn five() -> f64 {
    5.0
}

/// 10: readings a second (the Pioneer's rates), seconds to wait for a setup or restart.
pub(crate) fn ten() -> f64 {
    10.0
}

/// Yes (a switch on by default).
pub(crate) fn yes() -> bool {
    true
}

/// This machine (the host of a server or bridge reached over TCP).
pub(crate) fn localhost() -> String {
    "127.0.0.1".into()
}

/// 0.3 s: the wait for a reply of a device on a 9600-baud line.
pub(crate) fn short_reply() -> f64 {
    0.3
}

/// 115200 baud: the line speed of USB devices.
pub(crate) fn baud_115200() -> u32 {
    115_200
}

/// Checks that each `(name, value)` of `driver`'s parameters is a number of seconds above
/// 0 and at most `max`: "DRIVER parameter NAME = V: must be between 0 and MAX s".
pub(crate) fn check_seconds(
    driver: &str,
    max: f64,
    values: &[(&str, f64)],
) -> Result<(), DriverError> {
    for &(name, v) in values {
        if !(v.is_finite() && v > 0.0 && v <= max) {
            return Err(DriverError::params(format!(
                "{driver} parameter {name} = {v}: must be between 0 and {max} s"
            )));
        }
    }
    Ok(())
}

/// Checks that each `(name, value, max)` of `driver`'s parameters is above 0 and at most
/// its `max`: "DRIVER parameter NAME = V: must be above 0 and at most MAX".
pub(crate) fn check_positive(driver: &str, values: &[(&str, f64, f64)]) -> Result<(), DriverError> {
    for &(name, v, max) in values {
        if !(v.is_finite() && v > 0.0 && v <= max) {
            return Err(DriverError::params(format!(
                "{driver} parameter {name} = {v}: must be above 0 and at most {max}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_out_of_range_is_refused_in_the_old_words() {
        let e = check_seconds("p2os", 60.0, &[("silence", 0.0)]).unwrap_err();
        assert_eq!(
            e.text,
            "p2os parameter silence = 0: must be between 0 and 60 s"
        );
        let e = check_seconds(
            "acts",
            600.0,
            &[("silence", 1.0), ("connect_timeout", 601.5)],
        )
        .unwrap_err();
        assert_eq!(
            e.text,
            "acts parameter connect_timeout = 601.5: must be between 0 and 600 s"
        );
        assert!(check_seconds("urg", 60.0, &[("silence", 60.0)]).is_ok());
        let e = check_positive(
            "sonyptz",
            &[("rate", 10.0, 100.0), ("silence", f64::NAN, 60.0)],
        )
        .unwrap_err();
        assert_eq!(
            e.text,
            "sonyptz parameter silence = NaN: must be above 0 and at most 60"
        );
        assert!(check_positive("rplidar", &[("max_range", 65.0, 65.0)]).is_ok());
    }
}
