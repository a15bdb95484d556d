//! The frames waiting for a driver program's input: in order, except that commands,
//! readings of the devices it reads and subscriber counts keep only the newest unsent one
//! per device, and a stop voids its device's unsent command. So the input never queues
//! without bound whatever the clients send (configs are counted: the actor drops those
//! beyond [`MAX_QUEUED_CONFIGS`](super::MAX_QUEUED_CONFIGS)).

use player_kit::program::frame::ToProgram;
use std::collections::VecDeque;

/// The frames waiting for the program's input, in order, with the newest-wins slots
/// merged in place.
#[derive(Default)]
pub(super) struct Outbox {
    /// The frames, in the order they go.
    pub queue: VecDeque<ToProgram>,
    /// How many of them are configs.
    pub configs: usize,
    /// The program is gone: its writer stops.
    pub closed: bool,
}

impl Outbox {
    /// Replaces a queued frame `same` matches, or appends `frame`.
    fn merge(&mut self, frame: ToProgram, same: impl Fn(&ToProgram) -> bool) {
        match self.queue.iter_mut().find(|f| same(f)) {
            Some(slot) => *slot = frame,
            None => self.queue.push_back(frame),
        }
    }

    /// Queues `frame` (merged with the unsent one it replaces, if any).
    pub fn push(&mut self, frame: ToProgram) {
        match &frame {
            ToProgram::Command { device, .. } => {
                let d = *device;
                self.merge(
                    frame,
                    |f| matches!(f, ToProgram::Command { device, .. } if *device == d),
                )
            }
            ToProgram::Subscribers { device, .. } => {
                let d = *device;
                self.merge(
                    frame,
                    |f| matches!(f, ToProgram::Subscribers { device, .. } if *device == d),
                )
            }
            ToProgram::Reading { device, .. } => {
                let d = *device;
                self.merge(
                    frame,
                    |f| matches!(f, ToProgram::Reading { device, .. } if *device == d),
                )
            }
            ToProgram::Stop { device, .. } => {
                let d = *device;
                // The unsent command of this device is void: the stop must be its last word.
                self.queue
                    .retain(|f| !matches!(f, ToProgram::Command { device, .. } if *device == d));
                self.merge(
                    frame,
                    |f| matches!(f, ToProgram::Stop { device, .. } if *device == d),
                )
            }
            ToProgram::Config { .. } => {
                self.configs += 1;
                self.queue.push_back(frame)
            }
            _ => self.queue.push_back(frame),
        }
    }

    /// Every queued frame, encoded.
    pub fn take(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        for f in self.queue.drain(..) {
            f.encode(&mut out);
        }
        self.configs = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_kit::program::frame::{self, FrameReader};

    fn frames(o: &mut Outbox) -> Vec<ToProgram> {
        let bytes = o.take();
        let mut r = FrameReader::new(frame::MAX_FRAME);
        r.extend(&bytes);
        let mut out = Vec::new();
        while let Some((k, body)) = r.next_frame().unwrap() {
            out.push(ToProgram::decode(k, body).unwrap());
        }
        out
    }

    #[test]
    fn the_outbox_keeps_the_newest_and_a_stop_voids_the_unsent_command() {
        let mut o = Outbox::default();
        let cmd = |v: u8| ToProgram::Command {
            device: b'k',
            payload: vec![0, v],
        };
        let reading = |v: u8| ToProgram::Reading {
            device: b'l',
            sec: 1,
            usec: 0,
            payload: vec![v],
        };
        o.push(ToProgram::Setup { device: b'k' });
        o.push(cmd(1));
        o.push(reading(1));
        o.push(cmd(2));
        o.push(reading(2));
        assert_eq!(
            frames(&mut o),
            vec![ToProgram::Setup { device: b'k' }, cmd(2), reading(2)]
        );
        o.push(cmd(3));
        o.push(ToProgram::Stop {
            device: b'k',
            reason: frame::stop::WATCHDOG,
        });
        o.push(cmd(4));
        assert_eq!(
            frames(&mut o),
            vec![
                ToProgram::Stop {
                    device: b'k',
                    reason: frame::stop::WATCHDOG
                },
                cmd(4)
            ]
        );
    }

    #[test]
    fn configs_are_kept_in_order_and_counted_until_taken() {
        let mut o = Outbox::default();
        let config = |id: u32| ToProgram::Config {
            device: b'k',
            id,
            payload: vec![1],
        };
        let subs = |count: u32| ToProgram::Subscribers {
            device: b'k',
            count,
        };
        o.push(config(1));
        o.push(subs(1));
        o.push(config(2));
        o.push(subs(2));
        assert_eq!(o.configs, 2);
        assert_eq!(frames(&mut o), vec![config(1), subs(2), config(2)]);
        assert_eq!(o.configs, 0);
    }
}
