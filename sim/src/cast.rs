//! The noise-free geometry of a robot's last laser and sonar castings, kept with every input
//! it was cast from, so that a robot whose view has not changed (the common case of a served
//! robot nobody drives, read ten times a second) only draws fresh noise.
//!
//! A casting is a pure function of the robot's pose, its laser (field of view, resolution,
//! range, mount), its noise settings and seed (the sonar's spot draws and misses follow
//! them), the static map and the other bodies it was cast among. The key holds each of
//! these, compared bit for bit (so `-0.0` and `0.0` differ, and a NaN never matches), the
//! bodies in their order; the map is the robot's own `Arc<WorldMap>`, which never changes.
//! Whatever moved (this robot, another robot in reach, one placed by hand), its bits
//! differ from the key's and the casting is done afresh: nothing has to remember to
//! invalidate the cache.
//!
//! The draws that depend on the instant (the laser's jitter, the sonar's fresh share) are
//! made after the lookup, the same draws in the same order whether the geometry was cast or
//! reused, so the readings are those of casting every time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::geom::{Body, Vec2};
use crate::laser::LaserSpec;
use crate::noise::Noise;

/// Which casting a key is for: the solids given as a plain list, or through a view of
/// the same list (the world's sonar ring), or the laser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastKind {
    /// The sonar among a list of bodies.
    SonarList,
    /// The sonar among a list of bodies seen through the world's ring of them.
    SonarRing,
    /// The laser among a list of bodies.
    Laser,
}

/// Everything a casting depends on besides the map, as bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CastKey {
    kind: CastKind,
    /// The robot's true pose: x, y, heading.
    pose: [u64; 3],
    /// Where the caller's view of the bodies was taken from (the sonar ring's centre).
    from: [u64; 2],
    /// The laser: field of view, resolution, range, and its mount ahead of the centre.
    laser: [u64; 4],
    /// Noise settings and seed (odometry's only as `Noise::is_none` reads them).
    noise: [u64; 8],
    /// Each body's centre, radius and solidity, in order.
    bodies: Vec<[u64; 4]>,
}

/// The inputs of one casting, borrowed, to compare with a key without building one.
#[derive(Debug, Clone, Copy)]
pub struct CastInputs<'a> {
    /// Which casting.
    pub kind: CastKind,
    /// The robot's true pose: x, y mm, heading radians.
    pub pose: (f64, f64, f64),
    /// Where the caller's view of `bodies` was taken from.
    pub from: Vec2,
    /// The robot's laser.
    pub laser: LaserSpec,
    /// The laser's mount, mm ahead of the centre.
    pub laser_x_mm: f64,
    /// The robot's noise settings.
    pub noise: &'a Noise,
    /// The robot's noise seed.
    pub seed: u64,
    /// The bodies cast among.
    pub bodies: &'a [Body],
}

fn body_bits(b: &Body) -> [u64; 4] {
    [
        b.center.x.to_bits(),
        b.center.y.to_bits(),
        b.radius.to_bits(),
        u64::from(b.solid),
    ]
}

impl CastInputs<'_> {
    fn pose_bits(&self) -> [u64; 3] {
        [
            self.pose.0.to_bits(),
            self.pose.1.to_bits(),
            self.pose.2.to_bits(),
        ]
    }

    fn view_bits(&self) -> [u64; 2] {
        [self.from.x.to_bits(), self.from.y.to_bits()]
    }

    fn laser_bits(&self) -> [u64; 4] {
        [
            self.laser.fov_deg.to_bits(),
            self.laser.resolution_deg.to_bits(),
            self.laser.max_mm.to_bits(),
            self.laser_x_mm.to_bits(),
        ]
    }

    fn noise_bits(&self) -> [u64; 8] {
        let n = self.noise;
        let (odometry, t, r) = match n.odometry {
            Some((t, r)) => (1, t.to_bits(), r.to_bits()),
            None => (0, 0, 0),
        };
        [
            odometry,
            t,
            r,
            n.sonar_sigma.to_bits(),
            n.sonar_dropout.to_bits(),
            n.sonar_specular_deg.to_bits(),
            n.laser_sigma_mm.to_bits(),
            self.seed,
        ]
    }

    /// The key of these inputs.
    pub fn key(&self) -> CastKey {
        CastKey {
            kind: self.kind,
            pose: self.pose_bits(),
            from: self.view_bits(),
            laser: self.laser_bits(),
            noise: self.noise_bits(),
            bodies: self.bodies.iter().map(body_bits).collect(),
        }
    }

    /// Whether `key` is of these inputs, bit for bit.
    pub fn matches(&self, key: &CastKey) -> bool {
        key.kind == self.kind
            && key.pose == self.pose_bits()
            && key.from == self.view_bits()
            && key.laser == self.laser_bits()
            && key.noise == self.noise_bits()
            && key.bodies.len() == self.bodies.len()
            && key
                .bodies
                .iter()
                .zip(self.bodies)
                .all(|(k, b)| *k == body_bits(b))
    }
}

/// One slot: the last casting of one sensor and its key.
///
/// A casting is kept only when the robot stood still since the sensor's last reading
/// (its pose the same to the bit): a robot on the move would seldom read the same inputs
/// twice, and keeping its castings would cost it the key's copy and the memory for nothing.
/// Which castings are kept never changes a reading; only the key decides when one is
/// reused.
#[derive(Debug)]
pub struct CastSlot<T> {
    last: Mutex<Kept<T>>,
    /// How many times the slot was cast afresh (kept or not).
    casts: AtomicU64,
}

/// What a slot remembers.
#[derive(Debug)]
struct Kept<T> {
    /// The robot's pose (bits) at the sensor's last reading.
    pose: Option<[u64; 3]>,
    /// The last casting kept, with its key.
    casting: Option<Box<(CastKey, T)>>,
}

impl<T> Default for CastSlot<T> {
    /// An empty slot.
    fn default() -> CastSlot<T> {
        CastSlot {
            last: Mutex::new(Kept {
                pose: None,
                casting: None,
            }),
            casts: AtomicU64::new(0),
        }
    }
}

impl<T> Clone for CastSlot<T> {
    /// A copy starts empty (a robot kept aside for a tick's retry casts afresh).
    fn clone(&self) -> CastSlot<T> {
        CastSlot::default()
    }
}

impl<T> CastSlot<T> {
    /// `read` of the casting of `inputs`: the kept one when its key matches, else `cast()`'s
    /// (kept for next time when the robot has not moved since the last reading). When
    /// another thread holds the slot, casts without it.
    pub fn read<R>(
        &self,
        inputs: &CastInputs<'_>,
        cast: impl FnOnce() -> T,
        read: impl FnOnce(&T) -> R,
    ) -> R {
        let Ok(mut last) = self.last.try_lock() else {
            self.casts.fetch_add(1, Ordering::Relaxed);
            return read(&cast());
        };
        let last = &mut *last;
        if let Some(kept) = last.casting.as_deref() {
            if inputs.matches(&kept.0) {
                return read(&kept.1);
            }
        }
        self.casts.fetch_add(1, Ordering::Relaxed);
        let pose = inputs.pose_bits();
        let value = cast();
        let out = read(&value);
        if last.pose == Some(pose) {
            match last.casting.as_deref_mut() {
                Some(kept) => *kept = (inputs.key(), value),
                None => last.casting = Some(Box::new((inputs.key(), value))),
            }
        } else {
            last.pose = Some(pose);
            last.casting = None;
        }
        out
    }

    /// How many readings through this slot were cast afresh (the others reused a casting).
    pub fn casts(&self) -> u64 {
        self.casts.load(Ordering::Relaxed)
    }
}

/// The kept castings of one robot.
#[derive(Debug, Default, Clone)]
pub struct Castings {
    /// The laser's rays before noise, mm (its range where nothing is hit).
    pub laser: CastSlot<Vec<f64>>,
    /// Each sonar's echo before the fresh draw.
    pub sonar: CastSlot<[SonarEcho; 16]>,
}

/// One sonar's reading before the draw that is fresh at every instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SonarEcho {
    /// The reading itself, mm: no fresh draw is made (no echo, a lost echo, or no noise).
    Reading(u16),
    /// An echo at `nearest` mm whose error is `sigma * (spot * SONAR_SPOT_SHARE + fresh *
    /// SONAR_JITTER_SHARE)`, `fresh` drawn at the instant of the reading.
    Jitter {
        /// The echo's range, mm.
        nearest: f64,
        /// The range error's standard deviation there, mm.
        sigma: f64,
        /// The spot's share of the error, in standard deviations.
        spot: f64,
    },
}
