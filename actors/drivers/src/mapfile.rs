//! The `mapfile` driver: an occupancy grid map served as the map device `M`
//! (docs/navigation.md, the layout in docs/extensions.md).
//!
//! Where the map comes from (`[robot.driver.params]`):
//!
//! - `yaml = "map.yaml"`: a ROS map_server description (its image, resolution, origin,
//!   negate and thresholds, map_server's trinary rule exactly); `image` beside it replaces
//!   the image the description names;
//! - `image = "map.pgm"` with `style = "player"` and `resolution` (m per cell): Player's
//!   rule (occupied above 0.95, free below 0.1, `negate` to swap dark and light), the map
//!   centred on the origin;
//! - `map = "world"`: the robot's simulated world, its walls and obstacles rasterised at
//!   `resolution` (default 0.05 m), asked of the simulator through the registry.
//!
//! A file is read when the server starts: a bad one refuses the configuration with the key
//! and the reason. The world is asked for at the first setup (the simulator is another
//! driver, reachable only once the robot runs); without a simulated robot the setup fails,
//! saying so.
//!
//! `M` is published once a second (the same 28 bytes: its `map_id`, a hash of the map,
//! changes only when the map does). The cells come as answers to `x M t` (a tile of at most
//! 60 000 cells, cut to the map and to that bound; the answer says which rectangle it
//! holds). Another driver of the robot (the `amcl` localizer) gets the cells whole, shared,
//! with a [`GridRequest`] while `M` is set up. The loaders are `player_nav::map`'s and the
//! rasteriser `player_sim::raster`.

use actix::prelude::*;
use bytes::Bytes;
use player_kit::catalog::{Catalog, DriverContext, StartedDriver};
use player_kit::driver::{
    Config, DeviceSpec, DriverError, DriverHandle, GridMap, GridRequest, Publisher, Setup,
    Shutdown, WorldSolids,
};
use player_kit::plain::{Driver, Reply};
use player_kit::source::DeviceSource;
use player_kit::timer::RunEvery;
use player_kit::world::Solid;
use player_nav::map::{self as navmap, Map};
use player_proto::nav::{code, MapInfo, Tile, TileRequest};
use player_proto::{device, odometry};
use serde::Deserialize;
use slog::{info, warn, Logger};
use std::sync::Arc;
use std::time::Duration;

/// How often `M` is published (it never changes by itself; a reading a second keeps it
/// from being taken for silent).
const PERIOD: Duration = Duration::from_secs(1);

/// The default resolution of a rasterised world, m per cell.
const WORLD_RESOLUTION: f64 = 0.05;

/// Parameters of the `mapfile` driver.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct MapfileParams {
    /// A ROS map_server YAML description.
    #[serde(default)]
    pub yaml: Option<String>,
    /// The image (PGM P5/P2 or PNG): with `yaml`, instead of the one it names; with
    /// `style = "player"`, the map.
    #[serde(default)]
    pub image: Option<String>,
    /// `"ros"` (map_server's rule, with `yaml`; the default) or `"player"` (Player's rule,
    /// with `image` and `resolution`).
    #[serde(default)]
    pub style: Option<String>,
    /// Metres per cell: Player's style, or the rasterised world (default 0.05).
    #[serde(default)]
    pub resolution: Option<f64>,
    /// Player's style: dark is free and light occupied.
    #[serde(default)]
    pub negate: bool,
    /// `"world"`: the simulated world's walls and obstacles.
    #[serde(default)]
    pub map: Option<String>,
}

/// Where the map comes from, checked.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    /// Loaded at start.
    File,
    /// The simulated world at this resolution (m per cell), asked for at setup.
    World(f64),
}

fn bad(key: &str, why: impl std::fmt::Display) -> DriverError {
    DriverError::params(format!("mapfile parameter '{key}': {why}"))
}

/// A loaded map: its `M` reading and its cells.
#[derive(Debug, Clone, PartialEq)]
struct Loaded {
    info: MapInfo,
    cells: Arc<[i8]>,
}

impl Loaded {
    /// The map's id: FNV-1a of its geometry and cells (so it changes when the map does and
    /// is the same for the same map on every run).
    fn with_id(mut info: MapInfo, cells: Vec<i8>) -> Loaded {
        info.map_id = 0;
        let mut h: u32 = 0x811c_9dc5;
        for b in info
            .encode()
            .into_iter()
            .chain(cells.iter().map(|&c| c as u8))
        {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
        info.map_id = h;
        Loaded {
            info,
            cells: cells.into(),
        }
    }

    /// A map of `player_nav`'s, in the device's units.
    fn of_map(map: &Map) -> Loaded {
        let o = map.origin();
        let info = MapInfo {
            map_id: 0,
            width: map.width() as u32,
            height: map.height() as u32,
            resolution: (map.resolution() * 1e6).round() as u32,
            origin_x: (o.x * 1000.0).round() as i32,
            origin_y: (o.y * 1000.0).round() as i32,
            origin_heading: (o.theta * odometry::ARCSEC_PER_RAD).round() as i32,
        };
        Loaded::with_id(info, map.cells().to_vec())
    }

    /// The world's solids rasterised at `resolution` m per cell.
    fn of_world(world: &WorldSolids, resolution: f64) -> Result<Loaded, String> {
        use player_sim::geom::{Shape, Vec2};
        let mm = |p: [f64; 2]| Vec2::new(p[0] * 1000.0, p[1] * 1000.0);
        let shapes: Vec<Shape> = world
            .solids
            .iter()
            .map(|s| match *s {
                Solid::Segment { a, b } => Shape::Segment(mm(a), mm(b)),
                Solid::Rect { min, max } => Shape::Rect(mm(min), mm(max)),
                Solid::Circle { center, radius } => Shape::Circle(mm(center), radius * 1000.0),
            })
            .collect();
        let grid = player_sim::raster::rasterise(
            &shapes,
            mm(world.min),
            mm(world.max),
            resolution * 1000.0,
        )
        .map_err(|e| e.to_string())?;
        let info = MapInfo {
            map_id: 0,
            width: grid.width as u32,
            height: grid.height as u32,
            resolution: (resolution * 1e6).round() as u32,
            origin_x: grid.origin.x.round() as i32,
            origin_y: grid.origin.y.round() as i32,
            origin_heading: 0,
        };
        Ok(Loaded::with_id(info, grid.cells))
    }

    /// The answer to a tile request ([`Tile::cut`]).
    fn tile(&self, req: TileRequest) -> Tile {
        Tile::cut(&self.info, &self.cells, req).unwrap_or_default()
    }
}

/// Checks the parameters and loads a file map (`None` for the world, asked for later).
fn load(ctx: &DriverContext, p: &MapfileParams) -> Result<(Source, Option<Loaded>), DriverError> {
    let style = p.style.as_deref().unwrap_or("ros");
    if !matches!(style, "ros" | "player") {
        return Err(bad(
            "style",
            format!("'{style}' is not \"ros\" or \"player\""),
        ));
    }
    let file_err = |key: &str, e: navmap::MapError| bad(key, e);
    if let Some(m) = &p.map {
        if m != "world" {
            return Err(bad("map", format!("'{m}' is not \"world\"")));
        }
        if p.yaml.is_some() || p.image.is_some() {
            return Err(bad("map", "\"world\" takes no yaml or image"));
        }
        let res = p.resolution.unwrap_or(WORLD_RESOLUTION);
        if !(res.is_finite() && res > 0.0 && res <= 100.0) {
            return Err(bad(
                "resolution",
                format!("{res} is not between 0 and 100 m"),
            ));
        }
        return Ok((Source::World(res), None));
    }
    let map = match (style, &p.yaml, &p.image) {
        ("ros", Some(yaml), image) => {
            if p.resolution.is_some() || p.negate {
                return Err(bad(
                    "resolution",
                    "resolution and negate come from the YAML description in style \"ros\"",
                ));
            }
            let path = ctx.path(yaml);
            let mut y = navmap::load::read_yaml(&path).map_err(|e| file_err("yaml", e))?;
            let image_key = if let Some(i) = image {
                y.image = ctx.path(i);
                "image"
            } else {
                "yaml"
            };
            let raster = navmap::image::read(&y.image).map_err(|e| file_err(image_key, e))?;
            let cells = navmap::load::trinary(&raster, y.negate, y.occupied_thresh, y.free_thresh);
            Map::with_cells(raster.width, raster.height, y.resolution, y.origin, cells)
                .map_err(|e| file_err(image_key, e))?
        }
        ("ros", None, _) => {
            return Err(bad(
                "yaml",
                "missing: give yaml (a map_server description), or image with style = \"player\", or map = \"world\"",
            ))
        }
        (_, Some(_), _) => return Err(bad("yaml", "style \"player\" takes an image, not a yaml")),
        (_, None, None) => return Err(bad("image", "missing: style \"player\" needs an image")),
        (_, None, Some(image)) => {
            let Some(res) = p.resolution else {
                return Err(bad("resolution", "missing: style \"player\" needs the metres per cell"));
            };
            navmap::load::load_player(&ctx.path(image), res, p.negate)
                .map_err(|e| file_err("image", e))?
        }
    };
    Ok((Source::File, Some(Loaded::of_map(&map))))
}

/// The `mapfile` driver's actor.
pub struct MapfileDriver {
    source: Source,
    map: Option<Loaded>,
    devices: DeviceSource,
    publisher: Publisher,
    timer: Option<SpawnHandle>,
    up: bool,
    log: Logger,
}

impl MapfileDriver {
    fn new(ctx: &DriverContext) -> Result<MapfileDriver, DriverError> {
        if ctx.devices != [device::MAP] {
            return Err(DriverError::params(
                "driver 'mapfile' serves exactly one device, \"M\"",
            ));
        }
        let params: MapfileParams = ctx.params()?;
        let (source, map) = load(ctx, &params)?;
        if let Some(m) = &map {
            info!(ctx.logger, "map loaded"; "width" => m.info.width, "height" => m.info.height,
                "resolution_m" => f64::from(m.info.resolution) / 1e6, "map_id" => m.info.map_id);
        }
        Ok(MapfileDriver {
            source,
            map,
            devices: ctx.source.clone(),
            publisher: ctx.publisher(),
            timer: None,
            up: false,
            log: ctx.logger.clone(),
        })
    }

    fn publish(&mut self) {
        if let Some(m) = &self.map {
            self.publisher
                .publish(device::MAP, Bytes::from(m.info.encode()));
        }
    }

    /// Up: a first reading now, then one a period.
    fn start(&mut self, ctx: &mut Context<Self>) {
        self.up = true;
        self.publish();
        if self.timer.is_none() {
            self.timer = Some(ctx.run_every(PERIOD, |act, _| act.publish()));
        }
    }
}

impl Actor for MapfileDriver {
    type Context = Context<Self>;
}

impl Driver for MapfileDriver {
    fn publisher(&mut self) -> &mut Publisher {
        &mut self.publisher
    }

    fn setup(
        &mut self,
        msg: Setup,
        ctx: &mut Context<Self>,
    ) -> Reply<Self, Result<(), DriverError>> {
        if msg.device != device::MAP {
            return Reply::Now(Err(DriverError::not_served(
                "the mapfile driver serves only 'M'",
            )));
        }
        let Source::World(resolution) = self.source else {
            self.start(ctx);
            return Reply::Now(Ok(()));
        };
        if self.map.is_some() {
            self.start(ctx);
            return Reply::Now(Ok(()));
        }
        Reply::later(self.devices.world().into_actor(self).map(
            move |world, act, ctx| {
                let Some(world) = world else {
                    return Err(DriverError::not_served(
                        "mapfile map = \"world\": this robot has no simulated world (no sim driver)",
                    ));
                };
                let m = Loaded::of_world(&world, resolution)
                    .map_err(|e| DriverError::params(format!("mapfile map = \"world\": {e}")))?;
                info!(act.log, "world rasterised"; "width" => m.info.width, "height" => m.info.height,
                    "resolution_m" => resolution, "map_id" => m.info.map_id, "opened_by" => &*msg.client);
                act.map = Some(m);
                act.start(ctx);
                Ok(())
            },
        ))
    }

    /// The last client left `M`: no more readings (the last one is forgotten by the shared
    /// handler); the map is kept for the next setup.
    fn shutdown(&mut self, msg: Shutdown, ctx: &mut Context<Self>) -> Reply<Self, ()> {
        if msg.device == device::MAP {
            self.up = false;
            if let Some(h) = self.timer.take() {
                ctx.cancel_future(h);
            }
        }
        Reply::Now(())
    }

    /// `x M t`: a tile of cells, answered.
    fn config(&mut self, msg: Config, _ctx: &mut Context<Self>) {
        let Some(m) = self.map.as_ref().filter(|_| self.up) else {
            warn!(self.log, "config ignored: the map is not set up"; "client" => &msg.client);
            return;
        };
        if msg.payload.first() != Some(&code::TILE) {
            warn!(self.log, "config ignored: the map answers only 't' (a tile)"; "code" => player_kit::log::code(msg.payload.first().copied().unwrap_or(0)), "client" => &msg.client);
            return;
        }
        let req = match TileRequest::decode(&msg.payload) {
            Ok(r) => r,
            Err(e) => {
                warn!(self.log, "tile request ignored"; "error" => %e, "client" => &msg.client);
                return;
            }
        };
        let body = match m.tile(req).encode() {
            Ok(b) => b,
            Err(e) => {
                warn!(self.log, "tile not encoded"; "error" => %e);
                return;
            }
        };
        if let Err(e) = msg.answer.send_one(body) {
            warn!(self.log, "tile not answered"; "error" => %e, "client" => &msg.client);
        }
    }
}

player_kit::driver_handlers!(MapfileDriver);

impl Handler<GridRequest> for MapfileDriver {
    type Result = Option<Arc<GridMap>>;

    /// The map's cells, shared, while `M` is set up.
    fn handle(&mut self, msg: GridRequest, _ctx: &mut Self::Context) -> Self::Result {
        let m = self
            .map
            .as_ref()
            .filter(|_| self.up && msg.device == device::MAP)?;
        Some(Arc::new(GridMap::of(&m.info, m.cells.clone())))
    }
}

/// Registers the `mapfile` driver.
pub fn register(catalog: &mut Catalog) {
    catalog.register("mapfile", |ctx: DriverContext| {
        let driver = MapfileDriver::new(&ctx)?;
        let addr = driver.start();
        Ok(StartedDriver {
            handle: DriverHandle::of(&addr).with_grid(addr.clone().recipient()),
            devices: vec![DeviceSpec::read_only(device::MAP)],
        })
    });
}

#[cfg(test)]
mod tests;
