//! Pictures of a world: walls, obstacles, coloured objects, pucks and robots, with each
//! robot's laser scan and sonar cones as the robot currently senses them, drawn into an RGBA
//! image and written as PNG. For the README and for anyone debugging a controller (a truth
//! log's trajectories can be drawn over it).
//!
//! The picture is north-up: world x to the right, world y up, `scale` pixels per metre, with a
//! margin round the world rectangle. Drawing is plain software rasterisation (no
//! anti-aliasing), deterministic to the pixel.

use std::io::Write;

use crate::geom::Vec2;
use crate::map::{ObjectShape, WorldMap};
use crate::robot::{SONAR_HALF_CONE_DEG, SONAR_POSES};
use crate::simworld::{SimWorld, MOUTH_HALF_WIDTH_MM, PADDLE_TIP_MM};
use crate::ROBOT_RADIUS_MM;

/// An RGBA colour.
pub type Rgba = [u8; 4];

/// Background outside the world.
pub const MARGIN_COLOUR: Rgba = [236, 236, 236, 255];
/// The world's floor.
pub const FLOOR_COLOUR: Rgba = [255, 255, 255, 255];
/// Walls and obstacle outlines.
pub const WALL_COLOUR: Rgba = [40, 40, 40, 255];
/// Box and pillar fill.
pub const OBSTACLE_COLOUR: Rgba = [150, 150, 150, 255];
/// A robot without a colour marking.
pub const ROBOT_COLOUR: Rgba = [120, 120, 120, 255];
/// The laser's scanned area (translucent).
pub const LASER_FILL: Rgba = [255, 60, 60, 32];
/// The laser's hit points.
pub const LASER_HIT: Rgba = [220, 0, 0, 255];
/// Sonar cones (translucent).
pub const SONAR_FILL: Rgba = [40, 120, 255, 26];
/// Trajectories.
pub const PATH_COLOUR: Rgba = [0, 0, 0, 150];

/// The colour drawn for ACTS channel `channel`: the eight named colours of the world file
/// format for 0..7, then a wheel of hues.
pub fn channel_colour(channel: u8) -> Rgba {
    const NAMED: [Rgba; 8] = [
        [220, 40, 40, 255],
        [40, 170, 60, 255],
        [50, 90, 220, 255],
        [235, 200, 30, 255],
        [200, 60, 200, 255],
        [40, 190, 200, 255],
        [245, 140, 30, 255],
        [120, 60, 170, 255],
    ];
    if let Some(c) = NAMED.get(usize::from(channel)) {
        return *c;
    }
    // Hue wheel for the rest.
    let h = f64::from(channel - 8) / 24.0 * 6.0;
    let x = 1.0 - (h % 2.0 - 1.0).abs();
    let (r, g, b) = match h as u32 {
        0 => (1.0, x, 0.0),
        1 => (x, 1.0, 0.0),
        2 => (0.0, 1.0, x),
        3 => (0.0, x, 1.0),
        4 => (x, 0.0, 1.0),
        _ => (1.0, 0.0, x),
    };
    let c = |v: f64| (40.0 + v * 180.0) as u8;
    [c(r), c(g), c(b), 255]
}

/// What to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderOptions {
    /// Pixels per metre.
    pub scale: f64,
    /// Margin round the world, pixels.
    pub margin: u32,
    /// Draw each robot's laser scan.
    pub laser: bool,
    /// Draw each robot's sonar cones.
    pub sonar: bool,
    /// Trajectories to draw (world mm), e.g. from a truth log.
    pub paths: Vec<Vec<(f64, f64)>>,
}

impl Default for RenderOptions {
    fn default() -> RenderOptions {
        RenderOptions {
            scale: 50.0,
            margin: 10,
            laser: true,
            sonar: true,
            paths: Vec::new(),
        }
    }
}

/// An RGBA picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Image {
    /// A `width` x `height` picture filled with `colour`.
    pub fn new(width: u32, height: u32, colour: Rgba) -> Image {
        let n = width as usize * height as usize;
        let mut pixels = Vec::with_capacity(n * 4);
        for _ in 0..n {
            pixels.extend_from_slice(&colour);
        }
        Image {
            width,
            height,
            pixels,
        }
    }

    /// Width, pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height, pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The RGBA bytes, row by row from the top.
    pub fn pixels(&self) -> &[u8] {
        &self.pixels
    }

    /// The colour at (x, y) (0, 0 = top left), if inside.
    pub fn pixel(&self, x: u32, y: u32) -> Option<Rgba> {
        if x >= self.width || y >= self.height {
            return None;
        }
        let i = (y as usize * self.width as usize + x as usize) * 4;
        let p = &self.pixels[i..i + 4];
        Some([p[0], p[1], p[2], p[3]])
    }

    /// Blends `c` (with its alpha) over the pixel at (x, y), if inside.
    fn blend(&mut self, x: i64, y: i64, c: Rgba) {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return;
        }
        let i = (y as usize * self.width as usize + x as usize) * 4;
        let a = u32::from(c[3]);
        for (dst, &src) in self.pixels[i..i + 3].iter_mut().zip(&c[..3]) {
            *dst = ((u32::from(src) * a + u32::from(*dst) * (255 - a)) / 255) as u8;
        }
        self.pixels[i + 3] = 255;
    }

    /// Fills the pixels whose centres lie in the rectangle (pixel coordinates).
    fn fill_rect(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, c: Rgba) {
        let (xa, xb) = (x0.min(x1), x0.max(x1));
        let (ya, yb) = (y0.min(y1), y0.max(y1));
        for y in (ya - 0.5).ceil() as i64..=(yb - 0.5).floor() as i64 {
            for x in (xa - 0.5).ceil() as i64..=(xb - 0.5).floor() as i64 {
                self.blend(x, y, c);
            }
        }
    }

    /// Fills a disc (pixel coordinates).
    fn fill_circle(&mut self, cx: f64, cy: f64, r: f64, c: Rgba) {
        let r = r.max(0.5);
        for y in (cy - r).floor() as i64..=(cy + r).ceil() as i64 {
            for x in (cx - r).floor() as i64..=(cx + r).ceil() as i64 {
                let (dx, dy) = (x as f64 + 0.5 - cx, y as f64 + 0.5 - cy);
                if dx * dx + dy * dy <= r * r {
                    self.blend(x, y, c);
                }
            }
        }
    }

    /// Draws a line `width` pixels wide (pixel coordinates).
    fn line(&mut self, a: (f64, f64), b: (f64, f64), width: f64, c: Rgba) {
        let h = (width / 2.0).max(0.5);
        let (ax, ay) = a;
        let (bx, by) = b;
        let (ex, ey) = (bx - ax, by - ay);
        let len2 = ex * ex + ey * ey;
        for y in (ay.min(by) - h).floor() as i64..=(ay.max(by) + h).ceil() as i64 {
            for x in (ax.min(bx) - h).floor() as i64..=(ax.max(bx) + h).ceil() as i64 {
                let (px, py) = (x as f64 + 0.5, y as f64 + 0.5);
                let s = if len2 > 0.0 {
                    (((px - ax) * ex + (py - ay) * ey) / len2).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                let (qx, qy) = (ax + ex * s - px, ay + ey * s - py);
                if qx * qx + qy * qy <= h * h {
                    self.blend(x, y, c);
                }
            }
        }
    }

    /// Fills a polygon (pixel coordinates; even-odd rule; each pixel blended once).
    fn fill_polygon(&mut self, pts: &[(f64, f64)], c: Rgba) {
        if pts.len() < 3 {
            return;
        }
        let ymin = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let ymax = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        let mut xs = Vec::new();
        for y in (ymin - 0.5).ceil() as i64..=(ymax - 0.5).floor() as i64 {
            let sy = y as f64 + 0.5;
            xs.clear();
            for k in 0..pts.len() {
                let (x0, y0) = pts[k];
                let (x1, y1) = pts[(k + 1) % pts.len()];
                if (y0 <= sy && sy < y1) || (y1 <= sy && sy < y0) {
                    xs.push(x0 + (sy - y0) / (y1 - y0) * (x1 - x0));
                }
            }
            xs.sort_by(f64::total_cmp);
            for span in xs.chunks_exact(2) {
                for x in (span[0] - 0.5).ceil() as i64..=(span[1] - 0.5).floor() as i64 {
                    self.blend(x, y, c);
                }
            }
        }
    }

    /// Writes the picture as an 8-bit RGBA PNG.
    pub fn write_png<W: Write>(&self, out: W) -> Result<(), png::EncodingError> {
        let mut enc = png::Encoder::new(out, self.width, self.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header()?;
        w.write_image_data(&self.pixels)?;
        w.finish()
    }
}

/// World mm to picture pixels.
struct Frame {
    scale: f64,
    margin: f64,
    height_px: f64,
}

impl Frame {
    fn px(&self, p: Vec2) -> (f64, f64) {
        (
            self.margin + p.x / 1000.0 * self.scale,
            self.height_px - self.margin - p.y / 1000.0 * self.scale,
        )
    }

    /// The pixel of world point (x, y) mm.
    fn at(&self, x: f64, y: f64) -> (f64, f64) {
        self.px(Vec2::new(x, y))
    }

    fn len(&self, mm: f64) -> f64 {
        mm / 1000.0 * self.scale
    }
}

/// Draws `world` as it is now.
pub fn render(world: &SimWorld, opts: &RenderOptions) -> Image {
    let map = world.map();
    let scale = opts.scale.clamp(1.0, 1000.0);
    let margin = f64::from(opts.margin);
    let w = (map.width() / 1000.0 * scale + 2.0 * margin)
        .ceil()
        .min(16384.0) as u32;
    let h = (map.height() / 1000.0 * scale + 2.0 * margin)
        .ceil()
        .min(16384.0) as u32;
    let f = Frame {
        scale,
        margin,
        height_px: f64::from(h),
    };
    let mut img = Image::new(w, h, MARGIN_COLOUR);
    draw_floor(&mut img, &f, map);
    // Sensing first, so that the world is drawn over the translucent fans.
    for i in 0..world.len() {
        if opts.sonar {
            draw_sonar(&mut img, &f, world, i);
        }
        if opts.laser {
            draw_laser(&mut img, &f, world, i);
        }
    }
    draw_solids(&mut img, &f, map);
    for path in &opts.paths {
        for seg in path.windows(2) {
            img.line(
                f.at(seg[0].0, seg[0].1),
                f.at(seg[1].0, seg[1].1),
                1.5,
                PATH_COLOUR,
            );
        }
    }
    for i in 0..world.len() {
        let c = world.channel(i).map_or(ROBOT_COLOUR, channel_colour);
        draw_robot(&mut img, &f, world.robot(i).true_pose(), c);
    }
    for p in world.pucks() {
        let (cx, cy) = f.px(p.center);
        let c = p.channel.map_or(OBSTACLE_COLOUR, channel_colour);
        img.fill_circle(cx, cy, f.len(p.radius).max(3.0), WALL_COLOUR);
        img.fill_circle(cx, cy, f.len(p.radius).max(3.0) - 1.0, c);
    }
    img
}

/// The floor of the world, with a light grid every metre.
fn draw_floor(img: &mut Image, f: &Frame, map: &WorldMap) {
    let (x0, y0) = f.at(0.0, 0.0);
    let (x1, y1) = f.at(map.width(), map.height());
    img.fill_rect(x0, y0, x1, y1, FLOOR_COLOUR);
    let grid = [225, 225, 225, 255];
    let mut gx = 1000.0;
    while gx < map.width() {
        img.line(f.at(gx, 0.0), f.at(gx, map.height()), 1.0, grid);
        gx += 1000.0;
    }
    let mut gy = 1000.0;
    while gy < map.height() {
        img.line(f.at(0.0, gy), f.at(map.width(), gy), 1.0, grid);
        gy += 1000.0;
    }
}

/// Robot `i`'s sonar cones, each as long as its reading.
fn draw_sonar(img: &mut Image, f: &Frame, world: &SimWorld, i: usize) {
    let (x, y, th) = world.robot(i).true_pose();
    let sonar = world.sonar(i);
    for (k, &(sx, sy, sh)) in SONAR_POSES.iter().enumerate() {
        let origin = Vec2::new(x, y) + Vec2::new(sx, sy).rotated(th);
        let axis = th + sh.to_radians();
        let half = SONAR_HALF_CONE_DEG.to_radians();
        let r = f64::from(sonar[k]);
        let mut pts = vec![f.px(origin)];
        for s in 0..=12 {
            let a = axis - half + 2.0 * half * f64::from(s) / 12.0;
            pts.push(f.px(origin + Vec2::from_angle(a) * r));
        }
        img.fill_polygon(&pts, SONAR_FILL);
    }
}

/// Robot `i`'s laser scan: the scanned area, and a dot where a ray met something.
fn draw_laser(img: &mut Image, f: &Frame, world: &SimWorld, i: usize) {
    let robot = world.robot(i);
    let (_, _, th) = robot.true_pose();
    let laser = world.laser(i);
    let origin = robot.laser_origin();
    let mut pts = vec![f.px(origin)];
    let hits: Vec<Vec2> = laser
        .iter()
        .enumerate()
        .map(|(k, &r)| {
            let a = th + (-90.0 + 0.5 * k as f64).to_radians();
            origin + Vec2::from_angle(a) * f64::from(r)
        })
        .collect();
    pts.extend(hits.iter().map(|&p| f.px(p)));
    img.fill_polygon(&pts, LASER_FILL);
    for (k, &p) in hits.iter().enumerate() {
        if laser[k] < crate::LASER_MAX_MM as u16 {
            let (hx, hy) = f.px(p);
            img.fill_circle(hx, hy, (f.scale / 50.0).max(1.0), LASER_HIT);
        }
    }
}

/// Boxes, pillars, walls, the world's edge and the coloured objects.
fn draw_solids(img: &mut Image, f: &Frame, map: &WorldMap) {
    for b in map.boxes() {
        let (ax, ay) = f.at(b.min.0, b.min.1);
        let (bx, by) = f.at(b.max.0, b.max.1);
        img.fill_rect(ax, ay, bx, by, OBSTACLE_COLOUR);
        outline(img, (ax, ay), (bx, by), 1.0);
    }
    for p in map.pillars() {
        let (cx, cy) = f.at(p.center.0, p.center.1);
        img.fill_circle(cx, cy, f.len(p.radius), WALL_COLOUR);
        img.fill_circle(cx, cy, f.len(p.radius) - 1.0, OBSTACLE_COLOUR);
    }
    let wall_px = (f.scale / 25.0).max(2.0);
    for wall in map.walls() {
        img.line(
            f.at(wall.from.0, wall.from.1),
            f.at(wall.to.0, wall.to.1),
            wall_px,
            WALL_COLOUR,
        );
    }
    // The world's edge is solid.
    outline(
        img,
        f.at(0.0, 0.0),
        f.at(map.width(), map.height()),
        wall_px,
    );
    for o in map.objects() {
        let c = channel_colour(o.channel);
        let (cx, cy) = f.at(o.center.0, o.center.1);
        match o.shape {
            ObjectShape::Circle { radius } => {
                img.fill_circle(cx, cy, f.len(radius), WALL_COLOUR);
                img.fill_circle(cx, cy, f.len(radius) - 1.0, c);
            }
            ObjectShape::Rect { dx, dy } => {
                let (hx, hy) = (f.len(dx) / 2.0, f.len(dy) / 2.0);
                img.fill_rect(cx - hx, cy - hy, cx + hx, cy + hy, WALL_COLOUR);
                img.fill_rect(
                    cx - hx + 1.0,
                    cy - hy + 1.0,
                    cx + hx - 1.0,
                    cy + hy - 1.0,
                    c,
                );
            }
        }
    }
}

/// The four sides of the rectangle with corners `a` and `b` (pixels), `width` wide.
fn outline(img: &mut Image, (ax, ay): (f64, f64), (bx, by): (f64, f64), width: f64) {
    for (p, q) in [
        ((ax, ay), (bx, ay)),
        ((bx, ay), (bx, by)),
        ((bx, by), (ax, by)),
        ((ax, by), (ax, ay)),
    ] {
        img.line(p, q, width, WALL_COLOUR);
    }
}

/// A robot at `pose` in colour `c`: the gripper's paddles, then the body, then a heading
/// line.
fn draw_robot(img: &mut Image, f: &Frame, (x, y, th): (f64, f64, f64), c: Rgba) {
    let centre = Vec2::new(x, y);
    let (cx, cy) = f.px(centre);
    for side in [-1.0, 1.0] {
        let root =
            centre + Vec2::new(ROBOT_RADIUS_MM - 60.0, side * MOUTH_HALF_WIDTH_MM).rotated(th);
        let tip = centre + Vec2::new(PADDLE_TIP_MM, side * MOUTH_HALF_WIDTH_MM).rotated(th);
        img.line(
            f.px(root),
            f.px(tip),
            (f.scale / 30.0).max(1.5),
            WALL_COLOUR,
        );
    }
    let r = f.len(ROBOT_RADIUS_MM);
    img.fill_circle(cx, cy, r, WALL_COLOUR);
    img.fill_circle(cx, cy, r - (f.scale / 40.0).max(1.0), c);
    let nose = f.px(centre + Vec2::from_angle(th) * ROBOT_RADIUS_MM);
    img.line((cx, cy), nose, (f.scale / 25.0).max(1.5), WALL_COLOUR);
}
