//! What a web session holds of each robot of its endpoint ([`RobotState`], made when the
//! client first touches the robot: a world of 10 000 robots costs a client nothing until
//! it subscribes): the devices it holds at the robot's registry and what came of each
//! request, the grants it commands through and the pace of its commands, the robot's
//! e-stop, and where the robot's readings and notices reach the session.
//!
//! A command that comes while write access to its device is still being asked for (a
//! Foxglove client publishing a goal right after advertising its channel) waits for the
//! answer: the newest one per device, sent once the grant comes, dropped with a warning if
//! access is refused or the answer takes longer than [`HELD_COMMAND_MAX_AGE`].
//!
//! The access held to a device follows the client's subscriptions (read) and command
//! channels (write): [`WebSession::sync_device`] asks the registry through
//! [`Holdings::want_in`], which hands back only the reply to the newest request.

use super::WebSession;
use crate::foxglove::Level;
use actix::prelude::*;
use bytes::Bytes;
use player_core::frontend::tap::RobotTap;
use player_core::frontend::{Access, Change, Holdings};
use player_core::notice::{kind, Notice};
use player_core::registry::{CommandHold, Grant, Registry, Watch, MAX_COMMAND_HOLD};
use player_kit::driver::{Command, DataRecipient, DeviceError, Inbox};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What this session holds of one robot of its endpoint.
pub(super) struct RobotState {
    /// The devices this session holds at the robot's registry.
    pub(super) holdings: Holdings,
    /// Whether the robot's emergency stop is latched, and by whom (from the registry's
    /// notices).
    pub(super) estop: Option<String>,
    /// Per device this session asked for: what came of it.
    pub(super) devices: HashMap<u8, HeldDevice>,
    /// The devices this session may command, and where their commands go.
    commands: HashMap<u8, Recipient<Command>>,
    /// Where the robot's readings and notices go (robot `k > 0`): tagged with `k`.
    pub(super) tap: Option<Addr<RobotTap<WebSession>>>,
    /// Where its readings wait, newest per device, while only `/robots` reads it (picked
    /// up once a second instead of a message per reading).
    pub(super) inbox: Arc<Inbox>,
}

/// Per device: what this session asked of the registry and what came of it.
#[derive(Default)]
pub(super) struct HeldDevice {
    /// A request is on its way.
    setting_up: bool,
    /// Why the last request failed.
    pub(super) failed: Option<String>,
    /// Readings taken since the last tick, and the rate that made per second.
    pub(super) count: u32,
    pub(super) rate: f64,
    /// The client's command rate: when its last command came, the gaps before it.
    pacing: Pacing,
    /// The hold last told to the registry ([`CommandHold`]).
    hold_sent: Option<Duration>,
    /// The newest command that came while write access was being asked for, and when.
    held: Option<(Bytes, Instant)>,
}

/// How long a command may wait for write access to its device: one that waited longer is
/// dropped (with a warning) rather than carried out late.
pub const HELD_COMMAND_MAX_AGE: Duration = Duration::from_secs(5);

/// How many of a writer's latest gaps between commands its hold follows.
const PACING_WINDOW: usize = 4;

/// When a web client's commands to one device came.
#[derive(Default)]
struct Pacing {
    last: Option<Instant>,
    gaps: VecDeque<Duration>,
}

impl Pacing {
    /// Notes a command at `now`. A gap longer than [`MAX_COMMAND_HOLD`] starts afresh
    /// (the device was stopped in between: a new press, not a rate).
    fn note(&mut self, now: Instant) {
        match self.last.map(|t| now.saturating_duration_since(t)) {
            Some(gap) if gap <= MAX_COMMAND_HOLD => {
                if self.gaps.len() == PACING_WINDOW {
                    self.gaps.pop_front();
                }
                self.gaps.push_back(gap);
            }
            _ => self.gaps.clear(),
        }
        self.last = Some(now);
    }

    /// The rule for web writers: a command holds for 1.25 times the longest of the
    /// writer's latest gaps between commands, rounded up to 50 ms, at most
    /// [`MAX_COMMAND_HOLD`]; before it has kept a rate, [`MAX_COMMAND_HOLD`]. (The registry
    /// never lets it fall below the device's `command_timeout`.) So a panel that repeats its
    /// command at 1 Hz drives without a stop between messages, stops at most 1.2 s after
    /// its last one (release, a frozen tab, a lost link), and a 10 Hz page keeps the
    /// device's own 0.5 s.
    fn hold(&self) -> Duration {
        let Some(&longest) = self.gaps.iter().max() else {
            return MAX_COMMAND_HOLD;
        };
        let step = 50u128;
        let ms = (longest.as_millis() * 5).div_ceil(4).div_ceil(step) * step;
        Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX)).min(MAX_COMMAND_HOLD)
    }
}

/// `code` as the client reads it: `'p' (position)`.
fn shown(code: u8) -> String {
    format!("'{}' ({})", char::from(code), player_kit::log::device(code))
}

impl WebSession {
    /// What this session holds of robot `k`, made on first use: its holdings, and the
    /// registry told where its notices go (`Watch`).
    pub(super) fn robot(&mut self, k: usize, ctx: &mut Context<Self>) -> &mut RobotState {
        let id = self.id;
        let client = &self.client;
        let shared = &self.shared;
        self.robots.entry(k).or_insert_with(|| {
            let registry = shared
                .robots
                .get(k)
                .map(|r| r.registry.clone())
                .expect("robot index from the endpoint's own list");
            let tap = (k > 0).then(|| RobotTap::new(k, ctx.address()).start());
            let recipient = match &tap {
                Some(t) => t.clone().recipient(),
                None => ctx.address().recipient(),
            };
            registry.do_send(Watch {
                session: id,
                recipient: Some(recipient),
            });
            RobotState {
                inbox: Inbox::new(),
                holdings: Holdings::new(registry, id, client.clone()),
                estop: None,
                devices: HashMap::new(),
                commands: HashMap::new(),
                tap,
            }
        })
    }

    /// Robot `k`'s registry.
    pub(super) fn registry(&self, k: usize) -> Option<Addr<Registry>> {
        self.shared.robots.get(k).map(|r| r.registry.clone())
    }

    /// Brings robot `k`'s registry's view of this session's access to `code` in line with
    /// its subscriptions (read) and advertised command channels (write).
    pub(super) fn sync_device(&mut self, k: usize, code: u8, ctx: &mut Context<Self>) {
        let read = self.subs.reads(&self.shared.robots, k, code);
        let write = self.pubs.writes(k, code);
        let me = ctx.address();
        self.settle_inbox(k, ctx);
        let rs = self.robot(k, ctx);
        let tap = rs.tap.clone();
        let inbox = rs.inbox.clone();
        let change = rs.holdings.want_in(
            ctx,
            code,
            Access::new(read, write),
            || match &tap {
                Some(t) => DataRecipient::with_inbox(t, inbox),
                None => DataRecipient::with_inbox(&me, inbox),
            },
            move |act: &mut Self| act.robots.get_mut(&k).map(|rs| &mut rs.holdings),
            move |act, granted, ctx| act.granted(k, code, write, granted, ctx),
        );
        if change == Change::Same {
            return;
        }
        let st = rs.devices.entry(code).or_default();
        if !write {
            st.hold_sent = None;
            st.pacing = Pacing::default();
            st.held = None;
            rs.commands.remove(&code);
        }
        st.setting_up = change == Change::Asked;
        if change == Change::Asked {
            st.failed = None;
        }
    }

    /// Robot `k`'s registry's answer to the newest request for `code` (asked with write
    /// access when `write`).
    fn granted(
        &mut self,
        k: usize,
        code: u8,
        write: bool,
        granted: Result<Grant, DeviceError>,
        ctx: &mut Context<Self>,
    ) {
        let Some(rs) = self.robots.get_mut(&k) else {
            return;
        };
        let st = rs.devices.entry(code).or_default();
        st.setting_up = false;
        let held = st.held.take();
        match granted {
            Ok(grant) => {
                if let Some(c) = grant.command {
                    rs.commands.insert(code, c);
                } else if write {
                    let m = format!("device {} takes no commands", shown(code));
                    self.status(Level::Warning, &m, ctx);
                }
            }
            // The server is stopping: nothing to tell the client.
            Err(e @ DeviceError::RegistryStopped) => {
                st.failed = Some(e.to_string());
                return;
            }
            Err(e) => {
                st.failed = Some(e.to_string());
                let m = format!("device {}: {e}", shown(code));
                self.status(Level::Error, &m, ctx);
            }
        }
        if let Some((payload, at)) = held {
            self.send_held(k, code, payload, at, ctx);
        }
    }

    /// A command that waited for the answer to the request for write access: sent if
    /// access came and it has not waited too long, else dropped with a warning.
    fn send_held(
        &mut self,
        k: usize,
        code: u8,
        payload: Bytes,
        at: Instant,
        ctx: &mut Context<Self>,
    ) {
        let waited = at.elapsed();
        let granted = self
            .robots
            .get(&k)
            .is_some_and(|rs| rs.commands.contains_key(&code));
        let why = if !granted {
            "write access was not granted"
        } else if waited > HELD_COMMAND_MAX_AGE {
            "write access took too long"
        } else {
            return self.command(k, code, payload, ctx);
        };
        let m = format!(
            "command dropped: device {}: {why} ({:.1} s after the command)",
            shown(code),
            waited.as_secs_f64()
        );
        self.status(Level::Warning, &m, ctx);
    }

    /// Sends a command to robot `k`'s device `code` through its grant, telling the
    /// registry first how long it holds when the client's pace changed it. While write
    /// access is being asked for, the command waits for the answer (the newest per
    /// device); without a grant otherwise the client is told why it was ignored.
    pub(super) fn command(&mut self, k: usize, code: u8, payload: Bytes, ctx: &mut Context<Self>) {
        let Some(registry) = self.registry(k) else {
            return;
        };
        let id = self.id;
        let rs = self.robot(k, ctx);
        let Some(grant) = rs.commands.get(&code) else {
            let why = match rs.devices.get_mut(&code) {
                Some(s) if s.setting_up => {
                    s.held = Some((payload, Instant::now()));
                    return;
                }
                Some(s) if s.failed.is_some() => "failed",
                _ => "is not writable for this client",
            };
            let m = format!("command ignored: device {} {why}", shown(code));
            return self.status(Level::Warning, &m, ctx);
        };
        let st = rs.devices.entry(code).or_default();
        st.pacing.note(Instant::now());
        let hold = st.pacing.hold();
        if st.hold_sent != Some(hold) {
            st.hold_sent = Some(hold);
            registry.do_send(CommandHold {
                session: id,
                device: code,
                hold: Some(hold),
            });
        }
        grant.do_send(Command {
            device: code,
            payload,
            session: id,
        });
    }

    /// Robot `k`'s notices become Foxglove status messages (beginning with the robot's
    /// name where the endpoint serves several); the e-stop's also update its `/devices` at
    /// once.
    pub(super) fn on_notice(&mut self, k: usize, n: Notice, ctx: &mut Context<Self>) {
        let level = match n.kind {
            kind::UP | kind::ESTOP_RELEASED => Level::Info,
            kind::ESTOP | kind::FAILED => Level::Error,
            _ => Level::Warning,
        };
        let mut text = String::new();
        if self.shared.robots.several() {
            if let Some(r) = self.shared.robots.get(k) {
                text.push_str(&format!("{}: ", r.name));
            }
        }
        if n.device != 0 {
            // Named once: a link's own reports already begin with its name (`laser: cannot
            // open serial port ...`), which for most drivers is the device's.
            let name = format!("{}: ", player_kit::log::device(n.device));
            if !n.text.starts_with(&name) {
                text.push_str(&name);
            }
        }
        text.push_str(&n.text);
        if let Some(rs) = self.robots.get_mut(&k) {
            match n.kind {
                kind::ESTOP => rs.estop = Some(n.text.clone()),
                kind::ESTOP_RELEASED => rs.estop = None,
                _ => {}
            }
        }
        if matches!(n.kind, kind::ESTOP | kind::ESTOP_RELEASED) {
            self.fetch_devices(k, ctx);
        }
        self.notice_status(k, n.kind, n.device, level, &text, ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paced(gaps_ms: &[u64]) -> Pacing {
        let mut p = Pacing::default();
        let mut t = Instant::now();
        p.note(t);
        for &g in gaps_ms {
            t += Duration::from_millis(g);
            p.note(t);
        }
        p
    }

    #[test]
    fn a_first_command_holds_the_longest() {
        assert_eq!(paced(&[]).hold(), MAX_COMMAND_HOLD);
    }

    #[test]
    fn a_1_hz_writer_holds_past_its_next_message_and_no_longer_than_the_bound() {
        assert_eq!(paced(&[1000, 1000]).hold(), MAX_COMMAND_HOLD);
        assert_eq!(paced(&[800, 790]).hold(), Duration::from_millis(1000));
    }

    #[test]
    fn a_10_hz_writer_holds_briefly_and_follows_its_slowest_recent_gap() {
        assert_eq!(paced(&[100, 100, 100]).hold(), Duration::from_millis(150));
        assert_eq!(
            paced(&[100, 300, 100, 100]).hold(),
            Duration::from_millis(400)
        );
        // Only the latest four gaps count.
        assert_eq!(
            paced(&[300, 100, 100, 100, 100]).hold(),
            Duration::from_millis(150)
        );
    }

    #[test]
    fn a_pause_longer_than_any_hold_starts_afresh() {
        assert_eq!(paced(&[100, 100, 5000]).hold(), MAX_COMMAND_HOLD);
    }
}
