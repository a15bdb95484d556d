//! The simulated Sony EVI-D30 pan-tilt-zoom camera and the ACTS colour-blob tracker that looks
//! through it.
//!
//! The PTZ head slews toward its commanded pan/tilt/zoom at fixed rates. Vision projects each
//! coloured object of the world through a pinhole camera into a 160 x 120 image and reports a
//! blob for every object whose centre bearing is inside the horizontal field of view and whose
//! centre is in line of sight (partial occlusion is not modelled: an object is either seen
//! whole or not at all). Other robots with a colour marking, and coloured pucks, are seen the
//! same way, and robots hide what is behind them.
//!
//! Camera model: the camera sits at the robot centre, `CAMERA_HEIGHT_MM` above the floor, and
//! looks along the robot heading plus pan; tilt raises the optical axis. Square pixels; the
//! focal length (in pixels) grows linearly with zoom from the wide end (48.8 degrees horizontal
//! field of view at zoom 0) to the tele end (4.4 degrees at zoom 1023), because optical zoom
//! scales the focal length. The vertical field of view follows from the 4:3 image.

use crate::geom::{normalize_angle, ray_circle, Body, Vec2};
use crate::map::{ColouredObject, ObjectShape, Owner, WorldMap};

/// Pan range, degrees (positive counter-clockwise).
pub const PAN_LIMIT_DEG: i16 = 100;
/// Tilt range, degrees (positive up).
pub const TILT_LIMIT_DEG: i16 = 25;
/// Largest zoom value (tele end); 0 is wide.
pub const ZOOM_MAX: i16 = 1023;
/// Pan slew rate, degrees per second (EVI-D30 top speed).
pub const PAN_RATE_DEG_S: f64 = 80.0;
/// Tilt slew rate, degrees per second (EVI-D30 top speed).
pub const TILT_RATE_DEG_S: f64 = 50.0;
/// Zoom slew rate, zoom units per second.
pub const ZOOM_RATE_S: f64 = 1000.0;
/// Horizontal field of view at zoom 0, degrees.
pub const FOV_WIDE_DEG: f64 = 48.8;
/// Horizontal field of view at zoom 1023, degrees.
pub const FOV_TELE_DEG: f64 = 4.4;
/// ACTS image width, pixels.
pub const IMAGE_WIDTH: u32 = 160;
/// ACTS image height, pixels.
pub const IMAGE_HEIGHT: u32 = 120;
/// Height of the camera's optical centre above the floor, mm.
pub const CAMERA_HEIGHT_MM: f64 = 300.0;
/// ACTS reports at most this many blobs per channel.
pub const MAX_BLOBS_PER_CHANNEL: usize = 10;

/// Angles are kept this far inside +-90 degrees before taking a tangent.
const MAX_ANGLE: f64 = 89.0 * std::f64::consts::PI / 180.0;

/// One colour blob as ACTS reports it (before the wire's +1 offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blob {
    /// ACTS channel 0..31 (the colour).
    pub channel: u8,
    /// Area in pixels (bounding-box width x height).
    pub area: u32,
    /// Centroid column, 0..159 (0 = left edge of the image).
    pub x: u8,
    /// Centroid row, 0..119 (0 = top of the image).
    pub y: u8,
    /// Bounding box left column.
    pub left: u8,
    /// Bounding box right column.
    pub right: u8,
    /// Bounding box top row.
    pub top: u8,
    /// Bounding box bottom row.
    pub bottom: u8,
}

/// Current camera pose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtzReading {
    /// Pan, degrees, -100..100, positive counter-clockwise.
    pub pan: i16,
    /// Tilt, degrees, -25..25, positive up.
    pub tilt: i16,
    /// Zoom 0 (wide) ..1023 (tele).
    pub zoom: i16,
}

/// The pan-tilt-zoom head: where it is and where it is going.
#[derive(Debug, Clone, PartialEq)]
pub struct Ptz {
    pan: f64,
    tilt: f64,
    zoom: f64,
    target: (f64, f64, f64),
}

impl Default for Ptz {
    /// Centred, level, fully wide.
    fn default() -> Ptz {
        Ptz {
            pan: 0.0,
            tilt: 0.0,
            zoom: 0.0,
            target: (0.0, 0.0, 0.0),
        }
    }
}

fn slew(current: f64, target: f64, max_step: f64) -> f64 {
    current + (target - current).clamp(-max_step, max_step)
}

impl Ptz {
    /// Sets the targets, clamped to the camera's ranges.
    pub fn command(&mut self, pan: i16, tilt: i16, zoom: i16) {
        self.target = (
            f64::from(pan.clamp(-PAN_LIMIT_DEG, PAN_LIMIT_DEG)),
            f64::from(tilt.clamp(-TILT_LIMIT_DEG, TILT_LIMIT_DEG)),
            f64::from(zoom.clamp(0, ZOOM_MAX)),
        );
    }

    /// Moves toward the targets for `dt` seconds.
    pub fn advance(&mut self, dt: f64) {
        self.pan = slew(self.pan, self.target.0, PAN_RATE_DEG_S * dt);
        self.tilt = slew(self.tilt, self.target.1, TILT_RATE_DEG_S * dt);
        self.zoom = slew(self.zoom, self.target.2, ZOOM_RATE_S * dt);
    }

    /// The current pose, rounded to whole units.
    pub fn reading(&self) -> PtzReading {
        PtzReading {
            pan: self.pan.round() as i16,
            tilt: self.tilt.round() as i16,
            zoom: self.zoom.round() as i16,
        }
    }

    /// Current pan, radians.
    pub fn pan_rad(&self) -> f64 {
        self.pan.to_radians()
    }

    /// Current tilt, radians.
    pub fn tilt_rad(&self) -> f64 {
        self.tilt.to_radians()
    }

    /// Focal length in pixels at the current zoom.
    pub fn focal_px(&self) -> f64 {
        focal_px(self.zoom)
    }
}

/// Focal length in pixels at `zoom` (0..1023): linear between the wide and tele ends.
pub fn focal_px(zoom: f64) -> f64 {
    let half_w = f64::from(IMAGE_WIDTH) / 2.0;
    let wide = half_w / (FOV_WIDE_DEG / 2.0).to_radians().tan();
    let tele = half_w / (FOV_TELE_DEG / 2.0).to_radians().tan();
    let k = (zoom / f64::from(ZOOM_MAX)).clamp(0.0, 1.0);
    wide + (tele - wide) * k
}

/// Horizontal field of view in radians at `zoom`.
pub fn horizontal_fov(zoom: f64) -> f64 {
    2.0 * (f64::from(IMAGE_WIDTH) / 2.0 / focal_px(zoom)).atan()
}

/// Where the camera is and how it is set.
#[derive(Debug, Clone, Copy)]
pub struct CameraView {
    /// Optical centre in the world plane, mm.
    pub position: Vec2,
    /// Direction of the optical axis in the world plane, radians.
    pub axis: f64,
    /// Tilt of the optical axis, radians, positive up.
    pub tilt: f64,
    /// Focal length, pixels.
    pub focal: f64,
}

impl CameraView {
    /// Image column of a horizontal bearing relative to the axis (positive = left).
    fn column(&self, bearing: f64) -> f64 {
        f64::from(IMAGE_WIDTH) / 2.0 - self.focal * bearing.clamp(-MAX_ANGLE, MAX_ANGLE).tan()
    }

    /// Image row of an elevation angle (positive = up).
    fn row(&self, elevation: f64) -> f64 {
        let e = (elevation - self.tilt).clamp(-MAX_ANGLE, MAX_ANGLE);
        f64::from(IMAGE_HEIGHT) / 2.0 - self.focal * e.tan()
    }

    /// Every blob the camera sees in `map`, sorted by channel, then by area (largest first),
    /// at most `MAX_BLOBS_PER_CHANNEL` per channel.
    pub fn blobs(&self, map: &WorldMap) -> Vec<Blob> {
        self.blobs_among(map, &[])
    }

    /// Every blob the camera sees in `map` among `others` (robots and pucks: those with a
    /// colour are seen; solid ones hide what is behind them), sorted by channel, then by area
    /// (largest first), at most `MAX_BLOBS_PER_CHANNEL` per channel.
    pub fn blobs_among(&self, map: &WorldMap, others: &[Body]) -> Vec<Blob> {
        let half_fov = (f64::from(IMAGE_WIDTH) / 2.0 / self.focal).atan();
        let mut out = Vec::new();
        // Outside the field of view (by the centre's bearing, as `project` judges)?
        let outside =
            |c: Vec2| normalize_angle((c - self.position).angle() - self.axis).abs() > half_fov;
        for (i, obj) in map.objects().iter().enumerate() {
            let center = Vec2::new(obj.center.0, obj.center.1);
            if outside(center)
                || !map.line_of_sight(self.position, center, Some(Owner::Object(i)))
                || self.hidden_by(others, center, None)
            {
                continue;
            }
            out.extend(self.project(obj, half_fov));
        }
        for (k, body) in others.iter().enumerate() {
            let Some(channel) = body.channel else {
                continue;
            };
            if outside(body.center)
                || !map.line_of_sight(self.position, body.center, None)
                || self.hidden_by(others, body.center, Some(k))
            {
                continue;
            }
            let obj = ColouredObject {
                channel,
                center: (body.center.x, body.center.y),
                shape: ObjectShape::Circle {
                    radius: body.radius,
                },
                height: body.height,
            };
            out.extend(self.project(&obj, half_fov));
        }
        out.sort_by(|a, b| a.channel.cmp(&b.channel).then(b.area.cmp(&a.area)));
        let mut kept: Vec<Blob> = Vec::with_capacity(out.len());
        for blob in out {
            let same = kept.iter().filter(|k| k.channel == blob.channel).count();
            if same < MAX_BLOBS_PER_CHANNEL {
                kept.push(blob);
            }
        }
        kept
    }

    /// Whether a solid body of `others` (other than `except`) lies between the camera and
    /// `target`.
    fn hidden_by(&self, others: &[Body], target: Vec2, except: Option<usize>) -> bool {
        let d = target - self.position;
        let len = d.length();
        if len <= 0.0 {
            return false;
        }
        let dir = d * (1.0 / len);
        others.iter().enumerate().any(|(k, b)| {
            Some(k) != except
                && b.solid
                && ray_circle(self.position, dir, b.center, b.radius).is_some_and(|t| t < len)
        })
    }

    /// The blob of one object in plain view, if it is inside the field of view.
    fn project(&self, obj: &ColouredObject, half_fov: f64) -> Option<Blob> {
        let center = Vec2::new(obj.center.0, obj.center.1);
        let outline = obj.outline();
        let to_center = center - self.position;
        let dist = to_center.length();
        // Camera inside the object (cannot happen with a robot that does not overlap it).
        if outline.signed_distance(self.position) <= 0.0 {
            return None;
        }
        let bearing = normalize_angle(to_center.angle() - self.axis);
        if bearing.abs() > half_fov {
            return None;
        }
        // Horizontal extent: bearings of the object's silhouette edges.
        let (left_b, right_b) = match obj.shape {
            ObjectShape::Circle { radius } => {
                let a = (radius / dist).min(1.0).asin();
                (bearing + a, bearing - a)
            }
            ObjectShape::Rect { dx, dy } => {
                let mut lo = bearing;
                let mut hi = bearing;
                for (sx, sy) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
                    let corner = center + Vec2::new(sx * dx / 2.0, sy * dy / 2.0);
                    let b = normalize_angle((corner - self.position).angle() - self.axis);
                    lo = lo.min(b);
                    hi = hi.max(b);
                }
                (hi, lo)
            }
        };
        // Vertical extent: floor to top of the object at its nearest face.
        let near = outline.signed_distance(self.position).max(1.0);
        let top_e = (obj.height - CAMERA_HEIGHT_MM).atan2(near);
        let bottom_e = (-CAMERA_HEIGHT_MM).atan2(near);
        let mid_e = (obj.height / 2.0 - CAMERA_HEIGHT_MM).atan2(dist);

        let left = self.column(left_b);
        let right = self.column(right_b);
        let top = self.row(top_e);
        let bottom = self.row(bottom_e);
        let max_x = f64::from(IMAGE_WIDTH - 1);
        let max_y = f64::from(IMAGE_HEIGHT - 1);
        if right < 0.0 || left > max_x || bottom < 0.0 || top > max_y {
            return None;
        }
        let l = left.round().clamp(0.0, max_x);
        let r = right.round().clamp(0.0, max_x);
        let t = top.round().clamp(0.0, max_y);
        let b = bottom.round().clamp(0.0, max_y);
        let x = self.column(bearing).round().clamp(l, r);
        let y = self.row(mid_e).round().clamp(t, b);
        let area = (r - l + 1.0) * (b - t + 1.0);
        Some(Blob {
            channel: obj.channel,
            area: area as u32,
            x: x as u8,
            y: y as u8,
            left: l as u8,
            right: r as u8,
            top: t as u8,
            bottom: b as u8,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fov_spans_wide_to_tele() {
        assert!((horizontal_fov(0.0).to_degrees() - 48.8).abs() < 1e-9);
        assert!((horizontal_fov(1023.0).to_degrees() - 4.4).abs() < 1e-9);
        let mid = horizontal_fov(512.0).to_degrees();
        assert!(mid > 4.4 && mid < 48.8);
    }

    #[test]
    fn ptz_slews_and_clamps() {
        let mut p = Ptz::default();
        p.command(500, -90, 5000);
        assert_eq!(p.target, (100.0, -25.0, 1023.0));
        p.command(-500, 90, -7);
        assert_eq!(p.target, (-100.0, 25.0, 0.0));
        p.command(40, 10, 100);
        p.advance(0.1);
        assert_eq!(
            p.reading(),
            PtzReading {
                pan: 8,
                tilt: 5,
                zoom: 100
            }
        );
        p.advance(1.0);
        assert_eq!(
            p.reading(),
            PtzReading {
                pan: 40,
                tilt: 10,
                zoom: 100
            }
        );
    }
}
