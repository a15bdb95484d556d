//! `odometer-plugin`: a virtual device in a driver program, on the player driver kit.
//!
//! It serves device `d`, "odometer": 4 bytes, the distance the robot has driven (u32, mm,
//! big-endian) since the device was opened, computed from the robot's own position device
//! `p`, which it reads through the server. The server starts it (`driver = "program"`,
//! see README.md here) and talks to it over standard input and output.

use player_kit::program::{frame, run, Output, ProgramDriver, Refusal};
use player_proto::data::Position;

/// The device this program serves.
const ODOMETER: u8 = b'd';
/// The device it reads.
const POSITION: u8 = b'p';

#[derive(Default)]
struct Odometer {
    /// Whether a client holds `d` (then `p` is read).
    open: bool,
    /// The last position seen (x, y in mm).
    last: Option<(i32, i32)>,
    /// Distance so far, mm (fractions kept).
    travelled: f64,
}

impl ProgramDriver for Odometer {
    fn setup(&mut self, device: u8, out: &mut Output) -> Result<(), Refusal> {
        if device != ODOMETER {
            return Err(format!(
                "odometer-plugin serves only 'd', not '{}'",
                char::from(device)
            )
            .into());
        }
        self.open = true;
        self.last = None;
        self.travelled = 0.0;
        out.read(POSITION, true);
        out.publish(ODOMETER, &0u32.to_be_bytes());
        out.log(
            frame::level::INFO,
            "odometer open; reading the position device",
        );
        Ok(())
    }

    fn shutdown(&mut self, _device: u8, out: &mut Output) {
        self.open = false;
        out.read(POSITION, false);
    }

    fn reading(&mut self, device: u8, sec: u32, usec: u32, payload: &[u8], out: &mut Output) {
        if device != POSITION || !self.open {
            return;
        }
        let Ok(p) = Position::decode(payload) else {
            out.log(
                frame::level::WARNING,
                "a position reading of the wrong size skipped",
            );
            return;
        };
        if let Some((x, y)) = self.last {
            let (dx, dy) = (f64::from(p.x - x), f64::from(p.y - y));
            self.travelled += dx.hypot(dy);
        }
        self.last = Some((p.x, p.y));
        // The odometer reading carries the position reading's own time.
        let at = std::time::UNIX_EPOCH
            + std::time::Duration::new(u64::from(sec), usec.saturating_mul(1000));
        let mm = self.travelled.min(f64::from(u32::MAX)) as u32;
        out.publish_at(ODOMETER, &mm.to_be_bytes(), at);
    }
}

fn main() -> std::io::Result<()> {
    run(Odometer::default(), None)
}
