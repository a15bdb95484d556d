//! What drivers ask of their robot's registry (`player_kit::source`): reading another
//! device, holding one for reading and writing (its commands then pass the guard as a
//! client's do, `commands.rs`), sending a config to one (the path every config takes, a
//! client's too), the world's solids of the first driver that has a world, a map
//! device's occupancy grid from the driver serving it, and a driver's notice for the
//! client whose command it could not carry out.

use super::table::Internal;
use super::{DeviceError, Registry, RouteConfig, Sent, Subscribe, Tapped};
use actix::prelude::*;
use bytes::Bytes;
use player_kit::answer::AnswerTo;
use player_kit::driver::{Config, GridMap, GridRequest, WorldRequest, WorldSolids};
use player_kit::source::{DeviceWriter, Held, HoldDevice, ReadDevice, SendConfig, TellClient};
use std::sync::Arc;
use std::time::Duration;

impl Registry {
    /// Passes a config on to `device`'s driver (under its own code) and to the taps; its
    /// answer goes to `answer`. The error names an unknown device.
    fn route_config(
        &self,
        device: u8,
        payload: Bytes,
        client: String,
        answer: AnswerTo,
    ) -> Result<(), DeviceError> {
        let Some(d) = self.table.devices.get(&device) else {
            return Err(DeviceError::Unknown(device));
        };
        for (t, _) in self.taps.iter().filter(|(_, name)| *name != client) {
            t.do_send(Tapped {
                kind: Sent::Config,
                device,
                payload: payload.clone(),
                timestamp: player_kit::driver::Timestamp::now(),
            });
        }
        d.driver.config.do_send(Config {
            device: d.own,
            payload,
            client,
            answer,
        });
        Ok(())
    }
}

impl Handler<RouteConfig> for Registry {
    type Result = Result<(), DeviceError>;

    fn handle(&mut self, msg: RouteConfig, _ctx: &mut Self::Context) -> Self::Result {
        let answer = msg
            .answer
            .map_or_else(AnswerTo::none, |r| AnswerTo::new(msg.device, r))
            .holding(msg.place);
        self.route_config(msg.device, msg.payload, msg.client, answer)
    }
}

impl Handler<SendConfig> for Registry {
    type Result = Result<(), DeviceError>;

    /// A driver's config to another device: routed as a client's, its answer where the
    /// driver says (a relayed client's config keeps its client's answer).
    fn handle(&mut self, msg: SendConfig, _ctx: &mut Self::Context) -> Self::Result {
        self.route_config(msg.device, msg.payload, msg.client.to_string(), msg.answer)
    }
}

impl Handler<ReadDevice> for Registry {
    type Result = ResponseActFuture<Self, Result<(), DeviceError>>;

    /// A driver reading another device (a virtual device): a read-only holder, set up and
    /// released like a session's (it never gets write access, so it never stops a device).
    fn handle(&mut self, msg: ReadDevice, ctx: &mut Self::Context) -> Self::Result {
        if !msg.on {
            self.release(msg.session, msg.device, ctx);
            return Box::pin(fut::ready(Ok(())));
        }
        if self
            .table
            .devices
            .get(&msg.device)
            .is_some_and(|d| !d.spec.readable)
        {
            return Box::pin(fut::ready(Err(DeviceError::Unreadable(msg.device))));
        }
        let subscribe = Subscribe {
            session: msg.session,
            device: msg.device,
            read: true,
            write: false,
            recipient: msg.recipient,
            client: format!("driver reader {}", msg.session).into(),
        };
        Box::pin(
            <Self as Handler<Subscribe>>::handle(self, subscribe, ctx).map(|r, _, _| r.map(|_| ())),
        )
    }
}

impl Handler<HoldDevice> for Registry {
    type Result = ResponseActFuture<Self, Result<Held, DeviceError>>;

    /// A driver holding another device: a holder like a session (set up for the first,
    /// shut down after the last, stopped when it lets go of write access), marked as a
    /// driver's so its commands can yield to clients and it is told what happens to its
    /// holding.
    fn handle(&mut self, msg: HoldDevice, ctx: &mut Self::Context) -> Self::Result {
        let Some(hold) = msg.hold else {
            self.guard.forget_writer(msg.session);
            self.release(msg.session, msg.device, ctx);
            let spec = self.table.devices.get(&msg.device).map(|d| d.spec);
            return Box::pin(fut::ready(
                spec.map(|spec| Held { spec, writer: None })
                    .ok_or(DeviceError::Unknown(msg.device)),
            ));
        };
        let Some(d) = self.table.devices.get(&msg.device) else {
            return Box::pin(fut::ready(Err(DeviceError::Unknown(msg.device))));
        };
        if hold.read && !d.spec.readable {
            return Box::pin(fut::ready(Err(DeviceError::Unreadable(msg.device))));
        }
        if !hold.yields {
            self.guard.forget_writer(msg.session);
        }
        let subscribe = Subscribe {
            session: msg.session,
            device: msg.device,
            read: hold.read,
            write: hold.write,
            recipient: hold.recipient,
            client: msg.name.clone(),
        };
        let (session, device) = (msg.session, msg.device);
        let granted = <Self as Handler<Subscribe>>::handle(self, subscribe, ctx);
        // The holder is in the table now (a setup may still be under way): mark it a
        // driver's before any command of it can arrive.
        if let Some(h) = self
            .table
            .devices
            .get_mut(&device)
            .and_then(|d| d.holders.get_mut(&session))
        {
            h.internal = Some(Box::new(Internal {
                yields: hold.yields,
                events: hold.events,
            }));
        }
        Box::pin(granted.map(move |r, _, _| {
            r.map(|grant| Held {
                spec: grant.spec,
                writer: grant
                    .command
                    .zip(grant.spec.command_size)
                    .map(|(to, size)| DeviceWriter {
                        device,
                        session,
                        size,
                        to,
                    }),
            })
        }))
    }
}

impl Handler<WorldRequest> for Registry {
    type Result = ResponseFuture<Option<Arc<WorldSolids>>>;

    /// The world's solids from the first driver that has a world (the simulator).
    fn handle(&mut self, _msg: WorldRequest, _ctx: &mut Self::Context) -> Self::Result {
        let asks: Vec<_> = self
            .table
            .drivers
            .iter()
            .filter_map(|(_, h)| h.world.clone())
            .collect();
        Box::pin(async move {
            for ask in asks {
                let answer = ask.send(WorldRequest).timeout(Duration::from_secs(5)).await;
                if let Ok(Some(world)) = answer {
                    return Some(world);
                }
            }
            None
        })
    }
}

impl Handler<TellClient> for Registry {
    type Result = ();

    /// A driver's notice for the client whose command it could not carry out (kind `c`,
    /// as the guard's own refusals are told).
    fn handle(&mut self, msg: TellClient, _ctx: &mut Self::Context) {
        self.notify(
            msg.session,
            crate::notice::Notice::new(crate::notice::kind::COMMAND, msg.device, msg.text),
        );
    }
}

impl Handler<GridRequest> for Registry {
    type Result = ResponseFuture<Option<Arc<GridMap>>>;

    /// The occupancy grid of map device `device`, from the driver serving it (asked under
    /// its own code).
    fn handle(&mut self, msg: GridRequest, _ctx: &mut Self::Context) -> Self::Result {
        let ask = self
            .table
            .devices
            .get(&msg.device)
            .and_then(|d| d.driver.grid.clone().map(|g| (g, d.own)));
        Box::pin(async move {
            let (grid, own) = ask?;
            grid.send(GridRequest { device: own })
                .timeout(Duration::from_secs(5))
                .await
                .ok()
                .flatten()
        })
    }
}
