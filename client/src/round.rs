//! The latest data of every device, as the C++ `CRobot` keeps it in its fields.

use std::collections::BTreeMap;
use std::fmt;

use player_proto::data::{
    DataError, Gripper, Laser, Misc, Position, Ptz, Sonar, Vision, ACTS_BLOB, ACTS_HEADER,
};
use player_proto::device;
use player_proto::nav::{Localize, MapInfo, Planner};
use player_proto::odometry::Odometry;
use player_proto::scan::Scan;

/// The latest reading of every device the client has received data from.
///
/// Each read ([`Client::read`], [`Client::read_new`], [`Client::read_packet`]) updates the
/// devices whose packets arrived and leaves the others as they were, like the fields of the
/// C++ `CRobot`. [`updated`](Round::updated) lists the devices of the last read.
///
/// [`Client::read`]: crate::Client::read
/// [`Client::read_new`]: crate::Client::read_new
/// [`Client::read_packet`]: crate::Client::read_packet
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round {
    /// Position (`p`): odometry, speed, compass, stall.
    pub position: Option<Position>,
    /// Sonar (`s`): 16 ranges in mm, 0 front-left clockwise to 15 rear-left.
    pub sonar: Option<Sonar>,
    /// Laser (`l`): 361 ranges in mm, 0 at the right counter-clockwise to 360 at the left.
    pub laser: Option<Laser>,
    /// Miscellaneous (`m`): bumpers and battery voltage.
    pub misc: Option<Misc>,
    /// Gripper (`g`): paddle, lift and beam state.
    pub gripper: Option<Gripper>,
    /// Pan-tilt-zoom camera (`z`): the camera's current pan, tilt and zoom.
    pub ptz: Option<Ptz>,
    /// Vision (`v`): ACTS colour blobs per channel.
    pub vision: Option<Vision>,
    /// Full scan (`L`, an extension): a laser's readings as the sensor measured them.
    pub scan: Option<Scan>,
    /// Map (`M`, an extension): which map, its size and where it lies; its cells come as
    /// tiles ([`Client::download_map`](crate::Client::download_map)).
    pub map: Option<MapInfo>,
    /// Localizer (`H`, an extension; Player 1.6.5's layout): pose hypotheses.
    pub localize: Option<Localize>,
    /// Planner (`G`, an extension; Player 1.6.5's layout and a state).
    pub planner: Option<Planner>,
    /// The base's own position (`O`, an extension: `p`'s layout, served so when another
    /// driver, a localizer, serves `p` in the map frame).
    pub odometry: Option<Position>,
    /// The base's odometry at full precision (`P`, an extension).
    pub precise: Option<Odometry>,
    /// Per device code, the timestamp (seconds, microseconds since the Unix epoch) of its
    /// latest packet, when timestamps are on ([`Client::set_timestamps`]). A device whose
    /// latest packet carried no timestamp has no entry.
    ///
    /// [`Client::set_timestamps`]: crate::Client::set_timestamps
    pub timestamps: BTreeMap<u8, (u32, u32)>,
    /// The latest raw payload of each device code this crate has no layout for
    /// (devices a server adds beyond the manual's seven), in order of first arrival.
    pub other: Vec<(u8, Vec<u8>)>,
    /// The devices whose packets arrived during the last read, in order of arrival
    /// (a device appears once even if several of its packets arrived).
    pub updated: Vec<u8>,
}

impl Round {
    /// An empty round: no device has sent anything yet.
    pub fn new() -> Round {
        Round::default()
    }

    /// The timestamp of `device`'s latest packet, if it carried one.
    pub fn timestamp(&self, device: u8) -> Option<(u32, u32)> {
        self.timestamps.get(&device).copied()
    }

    /// The latest raw payload of a device without a known layout.
    pub fn other(&self, device: u8) -> Option<&[u8]> {
        self.other
            .iter()
            .find(|(d, _)| *d == device)
            .map(|(_, p)| p.as_slice())
    }

    /// Whether `device`'s data arrived during the last read.
    pub fn is_updated(&self, device: u8) -> bool {
        self.updated.contains(&device)
    }

    /// Whether any data of `device` has arrived (in any read).
    pub fn has(&self, device: u8) -> bool {
        match device {
            device::POSITION => self.position.is_some(),
            device::SONAR => self.sonar.is_some(),
            device::LASER => self.laser.is_some(),
            device::MISC => self.misc.is_some(),
            device::GRIPPER => self.gripper.is_some(),
            device::PTZ => self.ptz.is_some(),
            device::VISION => self.vision.is_some(),
            device::FULL_SCAN => self.scan.is_some(),
            device::MAP => self.map.is_some(),
            device::LOCALIZE => self.localize.is_some(),
            device::PLANNER => self.planner.is_some(),
            device::ODOMETRY => self.odometry.is_some(),
            device::PRECISE_ODOMETRY => self.precise.is_some(),
            d => self.other(d).is_some(),
        }
    }

    /// Decodes one data packet's payload into the device's field and records its timestamp
    /// and that it was updated.
    ///
    /// A payload that does not fit the device's layout (manual Table 7) leaves the
    /// device's previous reading in place and is returned as the error.
    pub fn apply(
        &mut self,
        device: u8,
        timestamp: Option<(u32, u32)>,
        payload: &[u8],
    ) -> Result<(), DataError> {
        match device {
            device::POSITION => self.position = Some(Position::decode(payload)?),
            device::SONAR => self.sonar = Some(Sonar::decode(payload)?),
            device::LASER => self.laser = Some(Laser::decode(payload)?),
            device::MISC => self.misc = Some(Misc::decode(payload)?),
            device::GRIPPER => self.gripper = Some(Gripper::decode(payload)?),
            device::PTZ => self.ptz = Some(Ptz::decode(payload)?),
            device::VISION => self.vision = Some(Vision::decode(payload)?),
            device::FULL_SCAN => self.scan = Some(Scan::decode(payload)?),
            device::MAP => self.map = Some(MapInfo::decode(payload)?),
            device::LOCALIZE => self.localize = Some(Localize::decode(payload)?),
            device::PLANNER => self.planner = Some(Planner::decode(payload)?),
            device::ODOMETRY => self.odometry = Some(Position::decode(payload)?),
            device::PRECISE_ODOMETRY => self.precise = Some(Odometry::decode(payload)?),
            d => match self.other.iter_mut().find(|(od, _)| *od == d) {
                Some((_, p)) => {
                    p.clear();
                    p.extend_from_slice(payload);
                }
                None => self.other.push((d, payload.to_vec())),
            },
        }
        match timestamp {
            Some(t) => {
                self.timestamps.insert(device, t);
            }
            None => {
                self.timestamps.remove(&device);
            }
        }
        if !self.updated.contains(&device) {
            self.updated.push(device);
        }
        Ok(())
    }
}

/// Whether a `<data>` field fits `device`'s layout, or `None` for a device without a known
/// layout. Used to tell a packet with a timestamp from one without around the moment
/// timestamps are switched on or off (the two never fit the same layout).
pub(crate) fn layout_fits(device: u8, payload: &[u8]) -> Option<bool> {
    let len = payload.len();
    let size = match device {
        device::POSITION => Position::SIZE,
        device::SONAR => Sonar::SIZE,
        device::LASER => Laser::SIZE,
        device::MISC => Misc::SIZE,
        device::GRIPPER => Gripper::SIZE,
        device::PTZ => Ptz::SIZE,
        device::VISION => {
            return Some(len >= ACTS_HEADER && (len - ACTS_HEADER) % ACTS_BLOB == 0);
        }
        device::FULL_SCAN => return Some(Scan::decode(payload).is_ok()),
        device::MAP => MapInfo::SIZE,
        device::LOCALIZE => return Some(Localize::decode(payload).is_ok()),
        device::PLANNER => Planner::SIZE,
        device::ODOMETRY => Position::SIZE,
        device::PRECISE_ODOMETRY => Odometry::SIZE,
        _ => return None,
    };
    Some(len == size)
}

/// A few lines in the spirit of `CRobot::Print()`: one per device that has data.
impl fmt::Display for Round {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.position {
            writeln!(
                f,
                "position: time {} ms, x {} mm, y {} mm, heading {}°, speed {} mm/s, \
                 turn {}°/s, compass {}°, stall {}",
                p.time, p.x, p.y, p.heading, p.speed, p.turn_rate, p.compass, p.stall
            )?;
        }
        if let Some(s) = &self.sonar {
            f.write_str("sonar:")?;
            for r in s.ranges {
                write!(f, " {r}")?;
            }
            writeln!(f)?;
        }
        if let Some(l) = &self.laser {
            let r = &l.ranges;
            writeln!(
                f,
                "laser: right {} mm, front-right {} mm, front {} mm, front-left {} mm, left {} mm",
                r[0], r[90], r[180], r[270], r[360]
            )?;
        }
        if let Some(s) = &self.scan {
            let near = s.ranges.iter().filter(|&&r| r > 0).min();
            writeln!(
                f,
                "scan: {} readings from {:.1}° every {:.3}°, nearest {} mm",
                s.ranges.len(),
                s.angle(0).to_degrees(),
                (f64::from(s.angle_increment) / 1e6).to_degrees(),
                near.map_or("-".to_string(), |r| r.to_string())
            )?;
        }
        if let Some(o) = &self.odometry {
            writeln!(
                f,
                "odometry: time {} ms, x {} mm, y {} mm, heading {}°, speed {} mm/s, turn {}°/s",
                o.time, o.x, o.y, o.heading, o.speed, o.turn_rate
            )?;
        }
        if let Some(o) = &self.precise {
            writeln!(
                f,
                "precise odometry: time {} ms, x {} mm, y {} mm, heading {:.4}°, speed {} mm/s, \
                 turn {:.3}°/s, stall {}",
                o.time,
                o.x,
                o.y,
                f64::from(o.heading) / 3600.0,
                o.speed,
                f64::from(o.turn_rate) / 3600.0,
                o.stall
            )?;
        }
        self.fmt_navigation(f)?;
        if let Some(m) = &self.misc {
            writeln!(
                f,
                "misc: front bumpers {:05b}, rear bumpers {:05b}, battery {}.{} V",
                m.front_bumpers & 0x1F,
                m.rear_bumpers & 0x1F,
                m.voltage / 10,
                m.voltage % 10
            )?;
        }
        if let Some(g) = &self.gripper {
            writeln!(f, "gripper: state {:08b}, beams {:08b}", g.state, g.beams)?;
        }
        if let Some(z) = &self.ptz {
            writeln!(f, "ptz: pan {}°, tilt {}°, zoom {}", z.pan, z.tilt, z.zoom)?;
        }
        if let Some(v) = &self.vision {
            let blobs: usize = v.channels.iter().map(Vec::len).sum();
            let active = v.channels.iter().filter(|c| !c.is_empty()).count();
            writeln!(f, "vision: {blobs} blobs on {active} channels")?;
        }
        for (d, p) in &self.other {
            writeln!(f, "{}: {} bytes", crate::error::Dev(*d), p.len())?;
        }
        Ok(())
    }
}

impl Round {
    /// The navigation devices' lines of [`Round`]'s `Display`: map, localize, planner.
    fn fmt_navigation(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.map {
            writeln!(
                f,
                "map: id {:08x}, {} x {} cells of {} mm, origin ({}, {}) mm, {:.2}°",
                m.map_id,
                m.width,
                m.height,
                f64::from(m.resolution) / 1000.0,
                m.origin_x,
                m.origin_y,
                f64::from(m.origin_heading) / 3600.0
            )?;
        }
        if let Some(l) = &self.localize {
            write!(f, "localize: {} hypotheses", l.hypotheses.len())?;
            if let Some(h) = l.hypotheses.first() {
                write!(f, ", best {h}")?;
            }
            writeln!(f)?;
        }
        if let Some(p) = &self.planner {
            writeln!(
                f,
                "planner: {}, goal ({}, {}) mm {}°, waypoint {} of {} ({}, {}) mm, pose ({}, {}) mm {}°",
                p.state.name(),
                p.goal[0],
                p.goal[1],
                p.goal[2],
                p.curr_waypoint,
                p.waypoint_count,
                p.waypoint[0],
                p.waypoint[1],
                p.pose[0],
                p.pose[1],
                p.pose[2]
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use player_proto::data::Blob;

    #[test]
    fn apply_decodes_each_device() {
        let mut r = Round::new();
        let p = Position {
            time: 1000,
            x: -100,
            y: 250,
            heading: 90,
            speed: -50,
            turn_rate: 10,
            compass: 180,
            stall: 0,
        };
        r.apply(b'p', None, &p.encode()).unwrap();
        let mut s = Sonar::default();
        s.ranges[3] = 499;
        r.apply(b's', Some((7, 8)), &s.encode()).unwrap();
        let mut l = Laser::default();
        l.ranges[180] = 1234;
        r.apply(b'l', None, &l.encode()).unwrap();
        let m = Misc {
            front_bumpers: 1,
            rear_bumpers: 2,
            voltage: 131,
        };
        r.apply(b'm', None, &m.encode()).unwrap();
        let g = Gripper { state: 1, beams: 4 };
        r.apply(b'g', None, &g.encode()).unwrap();
        let z = Ptz {
            pan: -10,
            tilt: 5,
            zoom: 100,
        };
        r.apply(b'z', None, &z.encode()).unwrap();
        let mut v = Vision {
            channels: vec![Vec::new(); 32],
        };
        v.channels[1].push(Blob {
            area: 9,
            x: 1,
            y: 2,
            left: 0,
            right: 3,
            top: 0,
            bottom: 4,
        });
        r.apply(b'v', None, &v.encode()).unwrap();
        r.apply(b'q', None, &[1, 2]).unwrap();
        r.apply(b'q', None, &[3]).unwrap();

        assert_eq!(r.position, Some(p));
        assert_eq!(r.sonar, Some(s));
        assert_eq!(r.laser, Some(l));
        assert_eq!(r.misc, Some(m));
        assert_eq!(r.gripper, Some(g));
        assert_eq!(r.ptz, Some(z));
        assert_eq!(r.vision, Some(v));
        assert_eq!(r.other(b'q'), Some(&[3u8][..]));
        assert_eq!(r.other.len(), 1);
        assert_eq!(r.timestamp(b's'), Some((7, 8)));
        assert_eq!(r.timestamp(b'p'), None);
        assert_eq!(r.updated, b"pslmgzvq".to_vec());
        assert!(r.has(b'v') && r.has(b'q') && !r.has(b'x'));
        let text = r.to_string();
        assert!(text.contains("battery 13.1 V"), "{text}");
        assert!(text.contains("vision: 1 blobs on 1 channels"), "{text}");
    }

    #[test]
    fn apply_decodes_the_navigation_devices() {
        use player_proto::nav::{Hypothesis, PlannerState};
        let mut r = Round::new();
        let m = MapInfo {
            map_id: 0xabcd,
            width: 10,
            height: 20,
            resolution: 50_000,
            origin_x: -500,
            origin_y: 0,
            origin_heading: 0,
        };
        r.apply(b'M', None, &m.encode()).unwrap();
        let l = Localize {
            hypotheses: vec![Hypothesis {
                mean: [1000, 2000, 324_000],
                cov: [[2500, 0, 0], [0, 2500, 0], [0, 0, 3600 * 3600]],
                alpha: 1_000_000,
            }],
            ..Localize::default()
        };
        r.apply(b'H', None, &l.encode().unwrap()).unwrap();
        let g = Planner {
            state: PlannerState::Driving,
            waypoint_count: 4,
            ..Planner::default()
        };
        r.apply(b'G', None, &g.encode()).unwrap();
        let o = Position {
            x: 5,
            ..Position::default()
        };
        r.apply(b'O', None, &o.encode()).unwrap();
        let p = Odometry {
            heading: 1_295_999,
            ..Odometry::default()
        };
        r.apply(b'P', None, &p.encode()).unwrap();
        assert_eq!(
            (r.map, r.localize.clone(), r.planner, r.odometry, r.precise),
            (Some(m), Some(l.clone()), Some(g), Some(o), Some(p))
        );
        let text = r.to_string();
        assert!(
            text.contains("map: id 0000abcd, 10 x 20 cells of 50 mm"),
            "{text}"
        );
        assert!(
            text.contains("best (1000, 2000) mm 90.00° (sd 50 mm, 50 mm, 1.00°)"),
            "{text}"
        );
        assert!(text.contains("planner: driving"), "{text}");
        assert!(r.has(b'M') && r.has(b'P'));
        // Each fits its own layout, and not with 8 bytes more (a timestamp).
        for (d, bytes) in [
            (b'M', m.encode()),
            (b'G', g.encode()),
            (b'O', o.encode()),
            (b'P', p.encode()),
            (b'H', l.encode().unwrap()),
        ] {
            assert_eq!(layout_fits(d, &bytes), Some(true), "{}", d as char);
            let mut stamped = vec![0x65, 0, 0, 0, 0, 0, 0x10, 0];
            stamped.extend_from_slice(&bytes);
            assert_eq!(layout_fits(d, &stamped), Some(false), "{}", d as char);
        }
    }

    #[test]
    fn a_bad_payload_keeps_the_previous_reading() {
        let mut r = Round::new();
        let mut s = Sonar::default();
        s.ranges[0] = 5;
        r.apply(b's', Some((1, 1)), &s.encode()).unwrap();
        r.updated.clear();
        assert!(r.apply(b's', None, &[0; 31]).is_err());
        assert_eq!(r.sonar, Some(s));
        assert_eq!(r.timestamp(b's'), Some((1, 1)));
        assert!(r.updated.is_empty());
    }

    #[test]
    fn a_packet_without_timestamp_clears_the_old_one() {
        let mut r = Round::new();
        r.apply(b'm', Some((1, 2)), &[0, 0, 120]).unwrap();
        r.apply(b'm', None, &[0, 0, 121]).unwrap();
        assert_eq!(r.timestamp(b'm'), None);
    }

    #[test]
    fn layouts_with_and_without_timestamp_never_collide() {
        for d in player_proto::device::ALL {
            for len in 0..2000 {
                if layout_fits(d, &vec![0; len]) == Some(true) {
                    assert_eq!(
                        layout_fits(d, &vec![0; len + 8]),
                        Some(false),
                        "{} {len}",
                        d as char
                    );
                }
            }
        }
        let scan = Scan {
            angle_min: -2_356_194,
            angle_increment: 4363,
            ranges: vec![1234; 1081],
            intensities: None,
        }
        .encode()
        .unwrap();
        assert_eq!(layout_fits(b'L', &scan), Some(true));
        let mut stamped = vec![0x65, 0, 0, 0, 0, 0, 0x10, 0];
        stamped.extend_from_slice(&scan);
        assert_eq!(layout_fits(b'L', &stamped), Some(false));
        assert_eq!(layout_fits(b'q', &[0; 3]), None);
    }
}
