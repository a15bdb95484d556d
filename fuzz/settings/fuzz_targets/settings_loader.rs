//! Fuzzes the configuration loader (`Settings::from_toml`) and what the server does first
//! with a configuration it accepts: the per-session options (with the access policy), the
//! device setup timeout, and each driver's device codes and command watchdog timeout.
#![no_main]

use libfuzzer_sys::fuzz_target;
use player::settings::{CoreSettings, Settings};
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(settings) = Settings::from_toml(text, "fuzz") else {
        return;
    };
    let _ = settings.session_options();
    // As `Server::start` uses it.
    let _ = Duration::from_secs_f64(settings.server.setup_timeout);
    for r in &settings.robot {
        for d in &r.driver {
            d.device_codes().expect("checked by the loader");
            let _ = CoreSettings::command_timeout(r, d, Some(Duration::from_millis(500)));
        }
    }
});
