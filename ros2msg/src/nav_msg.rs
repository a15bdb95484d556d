//! The navigation messages of the ROS 2 front end, with their Jazzy field layouts, in CDR:
//! published `nav_msgs/OccupancyGrid` (`map`), `geometry_msgs/PoseWithCovarianceStamped`
//! (`amcl_pose`), `geometry_msgs/PoseArray` (`particlecloud`) and `nav_msgs/Path`
//! (`plan`); taken `geometry_msgs/PoseWithCovarianceStamped` (`initialpose`) and
//! `geometry_msgs/PoseStamped` (`goal_pose`).

use crate::cdr::{CdrError, Reader, Writer};
use crate::msg::{Header, Quaternion, Time, Vector3};

/// `geometry_msgs/Pose`: a position (m) and an orientation.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pose {
    /// Position, m.
    pub position: Vector3,
    /// Orientation.
    pub orientation: Quaternion,
}

impl Pose {
    /// The pose at `x`, `y` (m) turned `yaw` (rad) about Z.
    pub fn planar(x: f64, y: f64, yaw: f64) -> Self {
        Pose {
            position: Vector3 { x, y, z: 0.0 },
            orientation: Quaternion::from_yaw(yaw),
        }
    }

    /// Its x, y (m) and yaw (rad).
    pub fn xy_yaw(&self) -> [f64; 3] {
        [self.position.x, self.position.y, self.orientation.yaw()]
    }

    fn write(&self, w: &mut Writer) {
        self.position.write(w);
        self.orientation.write(w);
    }

    fn read(r: &mut Reader) -> Result<Self, CdrError> {
        Ok(Pose {
            position: Vector3::read(r)?,
            orientation: Quaternion::read(r)?,
        })
    }
}

/// `nav_msgs/OccupancyGrid`: the map, row-major from the cell at `origin`, 0 free, 100
/// occupied, -1 unknown.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OccupancyGrid {
    /// Stamp and the map frame.
    pub header: Header,
    /// `info.map_load_time`.
    pub map_load_time: Time,
    /// m per cell.
    pub resolution: f32,
    /// Cells per row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// The cell (0, 0)'s corner in the map frame.
    pub origin: Pose,
    /// The cells.
    pub data: Vec<i8>,
}

impl OccupancyGrid {
    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(128 + self.header.frame_id.len() + self.data.len());
        self.header.write(&mut w);
        self.map_load_time.write(&mut w);
        w.f32(self.resolution).u32(self.width).u32(self.height);
        self.origin.write(&mut w);
        w.i8_seq(&self.data);
        w.finish()
    }
}

/// `geometry_msgs/PoseWithCovarianceStamped`: a pose estimate with its 6 x 6 covariance
/// of (x, y, z, roll, pitch, yaw).
#[derive(Debug, Clone, PartialEq)]
pub struct PoseWithCovarianceStamped {
    /// Stamp and frame.
    pub header: Header,
    /// The pose.
    pub pose: Pose,
    /// Row-major 6 x 6 covariance.
    pub covariance: [f64; 36],
}

impl Default for PoseWithCovarianceStamped {
    fn default() -> Self {
        PoseWithCovarianceStamped {
            header: Header::default(),
            pose: Pose::default(),
            covariance: [0.0; 36],
        }
    }
}

impl PoseWithCovarianceStamped {
    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(360 + self.header.frame_id.len());
        self.header.write(&mut w);
        self.pose.write(&mut w);
        w.f64_array(&self.covariance);
        w.finish()
    }

    /// Decodes a payload (the frame id bounded by [`crate::msg::MAX_FRAME_ID`]).
    pub fn decode(payload: &[u8]) -> Result<Self, CdrError> {
        let mut r = Reader::new(payload)?;
        let header = Header::read(&mut r)?;
        let pose = Pose::read(&mut r)?;
        let mut covariance = [0.0; 36];
        for c in &mut covariance {
            *c = r.f64()?;
        }
        Ok(PoseWithCovarianceStamped {
            header,
            pose,
            covariance,
        })
    }

    /// The planar covariance (x, y, yaw) out of the 6 x 6 one.
    pub fn planar_covariance(&self) -> [[f64; 3]; 3] {
        let idx = [0, 1, 5];
        let mut c = [[0.0; 3]; 3];
        for (i, &a) in idx.iter().enumerate() {
            for (j, &b) in idx.iter().enumerate() {
                c[i][j] = self.covariance[a * 6 + b];
            }
        }
        c
    }

    /// The 6 x 6 covariance with the planar one (x, y, yaw) in place, the rest zero.
    pub fn from_planar(c: [[f64; 3]; 3]) -> [f64; 36] {
        let idx = [0, 1, 5];
        let mut out = [0.0; 36];
        for (i, &a) in idx.iter().enumerate() {
            for (j, &b) in idx.iter().enumerate() {
                out[a * 6 + b] = c[i][j];
            }
        }
        out
    }
}

/// `geometry_msgs/PoseArray`: the particles.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PoseArray {
    /// Stamp and frame.
    pub header: Header,
    /// The poses.
    pub poses: Vec<Pose>,
}

impl PoseArray {
    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(32 + self.header.frame_id.len() + 56 * self.poses.len());
        self.header.write(&mut w);
        w.seq_len(self.poses.len());
        for p in &self.poses {
            p.write(&mut w);
        }
        w.finish()
    }
}

/// `geometry_msgs/PoseStamped`: a goal, or a pose of a path.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PoseStamped {
    /// Stamp and frame.
    pub header: Header,
    /// The pose.
    pub pose: Pose,
}

impl PoseStamped {
    fn write(&self, w: &mut Writer) {
        self.header.write(w);
        self.pose.write(w);
    }

    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(80 + self.header.frame_id.len());
        self.write(&mut w);
        w.finish()
    }

    /// Decodes a payload (the frame id bounded by [`crate::msg::MAX_FRAME_ID`]).
    pub fn decode(payload: &[u8]) -> Result<Self, CdrError> {
        let mut r = Reader::new(payload)?;
        Ok(PoseStamped {
            header: Header::read(&mut r)?,
            pose: Pose::read(&mut r)?,
        })
    }
}

/// `nav_msgs/Path`: the plan's waypoints.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Path {
    /// Stamp and frame.
    pub header: Header,
    /// The waypoints, each stamped.
    pub poses: Vec<PoseStamped>,
}

impl Path {
    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(32 + 96 * self.poses.len());
        self.header.write(&mut w);
        w.seq_len(self.poses.len());
        for p in &self.poses {
            p.write(&mut w);
        }
        w.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            stamp: Time { sec: 5, nanosec: 6 },
            frame_id: "map".into(),
        }
    }

    #[test]
    fn a_pose_estimate_and_a_goal_come_back_as_they_went() {
        let p = PoseWithCovarianceStamped {
            header: header(),
            pose: Pose::planar(1.0, -2.0, 0.5),
            covariance: PoseWithCovarianceStamped::from_planar([
                [0.25, 0.01, 0.0],
                [0.01, 0.25, 0.0],
                [0.0, 0.0, 0.07],
            ]),
        };
        let back = PoseWithCovarianceStamped::decode(&p.encode()).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.planar_covariance()[0][1], 0.01);
        assert_eq!(back.covariance[35], 0.07);
        let g = PoseStamped {
            header: header(),
            pose: Pose::planar(3.0, 4.0, -1.0),
        };
        let back = PoseStamped::decode(&g.encode()).unwrap();
        assert!((back.pose.xy_yaw()[2] + 1.0).abs() < 1e-12);
        assert!(PoseStamped::decode(&g.encode()[..40]).is_err());
    }

    #[test]
    fn a_grid_carries_its_cells_after_its_metadata() {
        let g = OccupancyGrid {
            header: header(),
            resolution: 0.05,
            width: 2,
            height: 1,
            data: vec![100, -1],
            ..OccupancyGrid::default()
        };
        let b = g.encode();
        assert_eq!(&b[b.len() - 6..], &[2, 0, 0, 0, 100, 0xff]);
    }
}
