//! The `amcl` driver's conversions between the devices' layouts and the filter's units:
//! odometry (`P`, or a device of `p`'s layout) and scans (`L`, `l`) in, the localize
//! reading `H`, its particles answer and the map-frame `p` out. Metres and radians inside,
//! millimetres, degrees and arc-seconds on the wire.

use bytes::Bytes;
use player_nav::amcl::cluster::Hypothesis as NavHypothesis;
use player_nav::pose::{angle_diff, normalize, Pose};
use player_nav::scan::Scan;
use player_proto::data::{Laser, Position};
use player_proto::nav::{Hypothesis, Localize, Particle, Particles, SetPose};
use player_proto::nav::{MAX_HYPOTHESES, MAX_PARTICLES_PER_ANSWER};
use player_proto::odometry::ARCSEC_PER_RAD;
use player_proto::scan::Scan as FullScan;

pub use crate::odom::{odometry, Odom};

/// The pose `t` of the way from `a` to `b` (0 at `a`, 1 at `b`): position and heading
/// each linearly.
pub fn between(a: &Pose, b: &Pose, t: f64) -> Pose {
    Pose::new(
        a.x + (b.x - a.x) * t,
        a.y + (b.y - a.y) * t,
        normalize(a.theta + angle_diff(b.theta, a.theta) * t),
    )
}

/// A full scan `L` as the filter reads it: 0 (no return) becomes the laser's range.
pub fn full_scan(b: &[u8], max_range: f64, offset: Pose) -> Option<Scan> {
    let s = FullScan::decode(b).ok()?;
    let ranges = s
        .ranges
        .iter()
        .map(|&r| {
            if r == 0 {
                max_range
            } else {
                f64::from(r) / 1000.0
            }
        })
        .collect();
    let angles = (0..s.ranges.len()).map(|i| s.angle(i)).collect();
    Some(Scan {
        ranges,
        angles,
        max_range,
        min_range: 0.01,
        offset,
    })
}

/// A 0.7.4a laser reading `l` (361 ranges from -90 to +90 degrees, half a degree apart)
/// as the filter reads it: readings at or beyond the laser's range are no return.
pub fn laser(b: &[u8], max_range: f64, offset: Pose) -> Option<Scan> {
    let l = Laser::decode(b).ok()?;
    let mut s = Scan::evenly(
        l.ranges
            .iter()
            .map(|&r| (f64::from(r) / 1000.0).min(max_range))
            .collect(),
        -std::f64::consts::FRAC_PI_2,
        0.5f64.to_radians(),
        max_range,
    );
    s.min_range = 0.01;
    s.offset = offset;
    Some(s)
}

/// Radians to arc-seconds, rounded.
fn arcsec(rad: f64) -> i32 {
    (rad * ARCSEC_PER_RAD).round() as i32
}

/// A pose as the wire's `[x mm, y mm, heading arc-seconds]` (heading in (-180, 180]
/// degrees, as Player's amcl reported it).
pub fn mean(p: &Pose) -> [i32; 3] {
    [
        (p.x * 1000.0).round() as i32,
        (p.y * 1000.0).round() as i32,
        arcsec(normalize(p.theta)),
    ]
}

/// The hypotheses as `H` carries them: mean, covariance in mm², mm·arc-seconds and
/// arc-seconds², weight x 10^6; heaviest first, at most 10.
pub fn localize(hyps: &[NavHypothesis], pending: u16, time: (u32, u32)) -> Localize {
    let scale = [1000.0, 1000.0, ARCSEC_PER_RAD];
    let hypotheses = hyps
        .iter()
        .take(MAX_HYPOTHESES)
        .map(|h| {
            let mut cov = [[0i64; 3]; 3];
            for (i, row) in cov.iter_mut().enumerate() {
                for (j, c) in row.iter_mut().enumerate() {
                    *c = (h.cov[i][j] * scale[i] * scale[j]).round() as i64;
                }
            }
            Hypothesis {
                mean: mean(&h.mean),
                cov,
                alpha: (h.weight.clamp(0.0, 1.0) * 1e6).round() as u32,
            }
        })
        .collect();
    Localize {
        pending_count: pending,
        pending_time_sec: time.0,
        pending_time_usec: time.1,
        hypotheses,
    }
}

/// The pose and covariance (m, rad) of `x H s`.
pub fn set_pose(s: &SetPose) -> (Pose, [[f64; 3]; 3]) {
    let scale = [1000.0, 1000.0, ARCSEC_PER_RAD];
    let mut cov = [[0.0; 3]; 3];
    for (i, row) in cov.iter_mut().enumerate() {
        for (j, c) in row.iter_mut().enumerate() {
            *c = s.cov[i][j] as f64 / (scale[i] * scale[j]);
        }
    }
    let m = &s.mean;
    (
        Pose::new(
            f64::from(m[0]) / 1000.0,
            f64::from(m[1]) / 1000.0,
            normalize(f64::from(m[2]) / ARCSEC_PER_RAD),
        ),
        cov,
    )
}

/// The answer to `x H g`: the particles in packets of at most 100, each with the set's
/// weighted mean, the variance of its position (mm²), the index of its first particle and
/// the set's size. At most `max_packets` packets (what one answer may carry): a larger set
/// is answered from its start, `total` telling the client how many there are.
pub fn particles(poses: &[Pose], weights: &[f64], max_packets: usize) -> Vec<Bytes> {
    let wsum: f64 = weights.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let (mut mx, mut my, mut sc, mut ss) = (0.0, 0.0, 0.0, 0.0);
    for (p, w) in poses.iter().zip(weights) {
        mx += w * p.x;
        my += w * p.y;
        sc += w * p.theta.cos();
        ss += w * p.theta.sin();
    }
    (mx, my) = (mx / wsum, my / wsum);
    let var = poses
        .iter()
        .zip(weights)
        .map(|(p, w)| w * ((p.x - mx).powi(2) + (p.y - my).powi(2)))
        .sum::<f64>()
        / wsum;
    let set_mean = mean(&Pose::new(mx, my, ss.atan2(sc)));
    let total = poses.len() as u32;
    poses
        .chunks(MAX_PARTICLES_PER_ANSWER)
        .zip(weights.chunks(MAX_PARTICLES_PER_ANSWER))
        .take(max_packets)
        .enumerate()
        .filter_map(|(k, (ps, ws))| {
            let body = Particles {
                mean: set_mean,
                variance: (var * 1e6).round() as u64,
                particles: ps
                    .iter()
                    .zip(ws)
                    .map(|(p, w)| Particle {
                        pose: mean(p),
                        alpha: ((w / wsum).clamp(0.0, 1.0) * 1e6).round() as u32,
                    })
                    .collect(),
                first: (k * MAX_PARTICLES_PER_ANSWER) as u32,
                total,
            }
            .encode()
            .ok()?;
            Some(Bytes::from(body))
        })
        .collect()
}

/// The map-frame `p` reading: the pose on the map (whole degrees, 0 to 359), the base's
/// speeds, compass and stall.
pub fn map_position(pose: &Pose, o: &Odom, compass: u16) -> Position {
    let clamp16 = |v: f64| v.round().clamp(f64::from(i16::MIN), f64::from(i16::MAX)) as i16;
    let deg = pose.theta.to_degrees().round().rem_euclid(360.0) as u16 % 360;
    Position {
        time: o.time,
        x: (pose.x * 1000.0).round() as i32,
        y: (pose.y * 1000.0).round() as i32,
        heading: deg,
        speed: clamp16(f64::from(o.speed)),
        turn_rate: clamp16(o.turn_rate),
        compass: o.compass.unwrap_or(compass),
        stall: o.stall,
    }
}
