//! The channels the client advertised to publish on ([`ClientChannels`]) and what its
//! messages on them do: `advertise` admits a channel whose topic has a [`Target`] (a
//! commanding one only for a client that may command) and holds its device for writing;
//! a message is parsed, made into an [`Action`] ([`Target::command`], pure) and the action
//! taken.

use super::commands::{Action, Target, PUBLISH_TOPICS};
use super::rights::Admission;
use super::WebSession;
use crate::foxglove::{self, Level};
use actix::prelude::*;
use bytes::Bytes;
use player_core::registry::{EStop, RouteConfig};
use player_proto::{config as codes, device};
use slog::info;
use std::collections::HashMap;

/// Client channel id → the robot and what the channel commands there.
#[derive(Default)]
pub(super) struct ClientChannels {
    target_of: HashMap<u32, (usize, Target)>,
}

impl ClientChannels {
    /// Whether the client commands robot `k`'s device `code` (a channel targets it).
    pub(super) fn writes(&self, k: usize, code: u8) -> bool {
        self.target_of
            .values()
            .any(|&(r, t)| r == k && t.writes() == Some(code))
    }

    /// The robots the client publishes to.
    pub(super) fn robots(&self) -> impl Iterator<Item = usize> + '_ {
        self.target_of.values().map(|&(k, _)| k)
    }

    /// Drops every channel a client that may not command may not have (all but the
    /// harmless ones); gives back what they wrote to, by robot and device, and how many
    /// were dropped.
    fn drop_commanding(&mut self) -> (Vec<(usize, u8)>, usize) {
        let before = self.target_of.len();
        let mut written = Vec::new();
        self.target_of.retain(|_, &mut (k, t)| {
            if t.harmless() {
                return true;
            }
            written.extend(t.writes().map(|code| (k, code)));
            false
        });
        written.sort_unstable();
        written.dedup();
        (written, before - self.target_of.len())
    }
}

impl WebSession {
    /// `advertise`: each channel on a topic with a target, in JSON, is admitted (one that
    /// commands only if the client may command) and its device held for writing; the
    /// client is told why any other is not.
    pub(super) fn advertise(
        &mut self,
        channels: Vec<foxglove::ClientChannel>,
        ctx: &mut Context<Self>,
    ) {
        for c in channels {
            if self.pubs.target_of.len() >= foxglove::MAX_CLIENT_CHANNELS {
                self.status(Level::Error, "too many client channels", ctx);
                break;
            }
            let robots = &self.shared.robots;
            let found = robots
                .split_topic(&c.topic)
                .and_then(|(k, t)| Target::of_topic(t).map(|t| (k, t)))
                .map(|(k, t)| {
                    let devices = robots.get(k).map_or(&[][..], |r| &r.devices[..]);
                    (k, t.on_robot(devices))
                });
            let Some((k, target)) = found else {
                let m = format!(
                    "topic '{}' is not accepted; publish on {}{PUBLISH_TOPICS}",
                    c.topic.chars().take(60).collect::<String>(),
                    if robots.several() {
                        "a robot's name followed by one of "
                    } else {
                        ""
                    }
                );
                self.status(Level::Warning, &m, ctx);
                continue;
            };
            if c.encoding != "json" {
                let m = format!("topic '{}': only json encoding is accepted", c.topic);
                self.status(Level::Warning, &m, ctx);
                continue;
            }
            if !target.harmless() && !self.admission.may_write() {
                let why = Admission::refusal(&self.shared.policy);
                let m = format!("topic '{}' refused: {why}", c.topic);
                self.status(Level::Warning, &m, ctx);
                continue;
            }
            self.pubs.target_of.insert(c.id, (k, target));
            self.robot(k, ctx);
            if let Some(code) = target.writes() {
                self.sync_device(k, code, ctx);
            }
        }
    }

    /// `unadvertise`: the channels leave, the devices no longer commanded are released.
    pub(super) fn unadvertise(&mut self, ids: Vec<u32>, ctx: &mut Context<Self>) {
        for id in ids {
            let left = self.pubs.target_of.remove(&id);
            if let Some((k, code)) = left.and_then(|(k, t)| t.writes().map(|c| (k, c))) {
                self.sync_device(k, code, ctx);
            }
        }
    }

    /// Drops every client channel that commands and gives the devices' write access back
    /// (the client may no longer command). Returns how many were dropped.
    pub(super) fn withdraw_write(&mut self, ctx: &mut Context<Self>) -> usize {
        let (written, dropped) = self.pubs.drop_commanding();
        for (k, code) in written {
            self.sync_device(k, code, ctx);
        }
        dropped
    }

    /// A message on client channel `channel`: parsed, made into an action, taken.
    pub(super) fn publish(&mut self, channel: u32, payload: &[u8], ctx: &mut Context<Self>) {
        let Some(&(k, target)) = self.pubs.target_of.get(&channel) else {
            let m = format!("client channel {channel} was not advertised");
            return self.status(Level::Warning, &m, ctx);
        };
        match target.command(payload) {
            Ok(action) => self.act(k, action, ctx),
            Err(e) => {
                let m = format!("message on client channel {channel} is {e}");
                self.status(Level::Warning, &m, ctx);
            }
        }
    }

    /// Takes a client message's action on robot `k`.
    fn act(&mut self, k: usize, action: Action, ctx: &mut Context<Self>) {
        let Some(registry) = self.registry(k) else {
            return;
        };
        match action {
            Action::Command { device, payload } => self.command(k, device, payload, ctx),
            Action::MotorPower(on) => {
                let place = match self.configs.take() {
                    Ok(place) => place,
                    Err(e) => return self.status(Level::Warning, &format!("refused: {e}"), ctx),
                };
                registry.do_send(RouteConfig {
                    device: device::POSITION,
                    payload: Bytes::from(vec![codes::MOTOR_POWER, u8::from(on)]),
                    client: self.client.clone(),
                    answer: None,
                    place: Some(place),
                });
                info!(self.log, "motor power asked"; "on" => on);
            }
            Action::Config { device, payload } => {
                if !self.admission.may_write() {
                    let m = "only a client that may command the robot can set its pose estimate";
                    return self.status(Level::Warning, m, ctx);
                }
                let place = match self.configs.take() {
                    Ok(place) => place,
                    Err(e) => return self.status(Level::Warning, &format!("refused: {e}"), ctx),
                };
                info!(self.log, "pose estimate"; "device" => %char::from(device));
                let fut = registry.send(RouteConfig {
                    device,
                    payload,
                    client: self.client.clone(),
                    answer: None,
                    place: Some(place),
                });
                ctx.spawn(fut.into_actor(self).map(move |r, act, ctx| {
                    let m = match r {
                        Ok(Ok(())) => return,
                        Ok(Err(e)) => format!("pose estimate ignored: {e}"),
                        Err(e) => format!("pose estimate ignored: {e}"),
                    };
                    act.status(Level::Warning, &m, ctx);
                }));
            }
            Action::EStop { latch } => {
                if !latch && !self.admission.may_write() {
                    let m =
                        "only a client that may command the robot can release the emergency stop";
                    return self.status(Level::Warning, m, ctx);
                }
                registry.do_send(EStop {
                    latch,
                    client: self.client.clone(),
                });
            }
            Action::Tool(t) => {
                info!(self.log, "3D panel tool"; "topic" => t.topic, "x" => t.x, "y" => t.y, "frame" => &t.frame);
                self.status(Level::Info, &t.reply(), ctx);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn withdrawing_write_drops_the_commanding_channels_and_keeps_the_e_stop_and_tools() {
        let mut c = ClientChannels::default();
        c.target_of.insert(1, (0, Target::CmdVel));
        c.target_of.insert(2, (0, Target::EStop));
        c.target_of.insert(3, (1, Target::Tool("/clicked_point")));
        c.target_of.insert(4, (1, Target::Gripper));
        c.target_of.insert(5, (0, Target::MotorPower));
        c.target_of.insert(6, (0, Target::CmdVel));
        assert!(c.writes(0, device::POSITION) && c.writes(1, device::GRIPPER));
        let (written, dropped) = c.drop_commanding();
        assert_eq!(dropped, 4);
        assert_eq!(written, vec![(0, device::POSITION), (1, device::GRIPPER)]);
        let mut left: Vec<u32> = c.target_of.keys().copied().collect();
        left.sort_unstable();
        assert_eq!(left, vec![2, 3]);
        assert!(!c.writes(0, device::POSITION));
    }
}
