//! `/map`: the map device's cells (`M`, put together by the front-end kit's
//! [`MapDownload`](player_core::frontend::nav::MapDownload)) as a `foxglove.Grid`, in
//! protobuf and in JSON. Pure: a whole map in, bytes out.
//!
//! The grid lies in the `map` frame with its pose at the map's origin (the lower-left
//! cell's outer corner, turned by the map's heading) and 1 cm below the floor, so the walls,
//! particles and plan drawn at the floor's height stay on top. One cell per byte, rows from
//! the lower-left as the `M` tiles give them (Foxglove's row order too), in one `uint8`
//! field, [`FIELD`]: the grey of the map's image as ROS's map_server saves it (and
//! `player-nav map` writes it): [`OCCUPIED`] 0, [`UNKNOWN`] 205, [`FREE`] 254. Studio's 3D
//! panel draws that as the map's picture with the colour rule the preset layout gives it
//! (gradient from black at 0 to white at 255, `docs/foxglove-layout.json`); without one it
//! picks a colour map over the field's range, where the three values still stand apart.

use base64::Engine;
use foxglove::messages as fg;
use player_core::frontend::nav::GridMap;
use player_kit::driver::Timestamp;
use prost::Message;
use serde_json::json;

/// The grid's one field.
pub const FIELD: &str = "shade";

/// [`FIELD`] of an occupied cell (Player's +1).
pub const OCCUPIED: u8 = 0;

/// [`FIELD`] of an unknown cell (Player's 0).
pub const UNKNOWN: u8 = 205;

/// [`FIELD`] of a free cell (Player's -1).
pub const FREE: u8 = 254;

/// How far below the `map` frame's floor the grid lies, m.
pub const BELOW_FLOOR: f64 = 0.01;

/// `foxglove.PackedElementField`'s `UINT8`.
const UINT8: i32 = fg::packed_element_field::NumericType::Uint8 as i32;

/// A cell of Player's (-1 free, 0 unknown, +1 occupied) as [`FIELD`]'s value.
pub fn shade(cell: i8) -> u8 {
    match cell {
        c if c < 0 => FREE,
        0 => UNKNOWN,
        _ => OCCUPIED,
    }
}

/// The grid's bytes: one [`shade`] per cell, in the map's row order.
pub fn shades(m: &GridMap) -> Vec<u8> {
    m.cells.iter().map(|&c| shade(c)).collect()
}

/// The grid's geometry: the pose's position (x, y, z in m) and heading (rad), the cell
/// size (m) and the column count.
fn geometry(m: &GridMap) -> ([f64; 3], f64, f64, u32) {
    let [x, y, th] = m.origin();
    ([x, y, -BELOW_FLOOR], th, m.resolution_m(), m.info.width)
}

/// The `/map` message for the whole map `m`, stamped `t`, in protobuf.
pub fn protobuf(m: &GridMap, t: Timestamp) -> Vec<u8> {
    let ([x, y, z], th, cell, columns) = geometry(m);
    fg::Grid {
        timestamp: Some(fg::Timestamp::new(t.sec, t.usec.min(999_999) * 1000)),
        frame_id: "map".into(),
        pose: Some(fg::Pose {
            position: Some(fg::Vector3 { x, y, z }),
            orientation: Some(fg::Quaternion {
                x: 0.0,
                y: 0.0,
                z: (th / 2.0).sin(),
                w: (th / 2.0).cos(),
            }),
        }),
        column_count: columns,
        cell_size: Some(fg::Vector2 { x: cell, y: cell }),
        row_stride: columns,
        cell_stride: 1,
        fields: vec![fg::PackedElementField {
            name: FIELD.into(),
            offset: 0,
            r#type: UINT8,
        }],
        data: shades(m).into(),
    }
    .encode_to_vec()
}

/// The `/map` message for the whole map `m`, stamped `t`, in JSON (the bytes in base64).
pub fn json(m: &GridMap, t: Timestamp) -> Vec<u8> {
    let ([x, y, z], th, cell, columns) = geometry(m);
    let data = base64::engine::general_purpose::STANDARD.encode(shades(m));
    let stamp = json!({"sec": t.sec, "nsec": u64::from(t.usec.min(999_999)) * 1000});
    let v = json!({"timestamp": stamp, "frame_id": "map",
        "pose": {"position": {"x": x, "y": y, "z": z},
            "orientation": {"x": 0.0, "y": 0.0, "z": (th / 2.0).sin(), "w": (th / 2.0).cos()}},
        "column_count": columns, "cell_size": {"x": cell, "y": cell},
        "row_stride": columns, "cell_stride": 1,
        "fields": [{"name": FIELD, "offset": 0, "type": UINT8}],
        "data": data});
    serde_json::to_vec(&v).unwrap_or_default()
}

/// The JSON schema of `foxglove.Grid` (in the pure crate, beside the other schemas).
pub use player_foxglove::jsonschema::grid as json_schema;

#[cfg(test)]
mod tests {
    use super::*;
    use player_proto::nav::MapInfo;
    use serde_json::Value;

    /// A 3 x 2 map of 0.05 m cells, its lower-left corner at (-1 m, 2 m), turned 90
    /// degrees: row 0 free, unknown, occupied; row 1 occupied, free, free.
    fn map() -> GridMap {
        GridMap {
            info: MapInfo {
                map_id: 7,
                width: 3,
                height: 2,
                resolution: 50_000,
                origin_x: -1000,
                origin_y: 2000,
                origin_heading: 90 * 3600,
            },
            cells: vec![-1, 0, 1, 1, -1, -1],
        }
    }

    fn stamp() -> Timestamp {
        Timestamp {
            sec: 1_700_000_000,
            usec: 250_000,
        }
    }

    #[test]
    fn cells_are_the_grey_of_the_map_image() {
        assert_eq!(shades(&map()), [254, 205, 0, 0, 254, 254]);
    }

    #[test]
    fn protobuf_and_json_carry_the_same_grid() {
        let g = fg::Grid::decode(&protobuf(&map(), stamp())[..]).unwrap();
        assert_eq!(g.frame_id, "map");
        assert_eq!((g.column_count, g.row_stride, g.cell_stride), (3, 3, 1));
        let cell = g.cell_size.unwrap();
        assert!((cell.x - 0.05).abs() < 1e-12 && cell.x == cell.y);
        assert_eq!(g.fields.len(), 1);
        assert_eq!((g.fields[0].name.as_str(), g.fields[0].r#type), (FIELD, 1));
        assert_eq!(&g.data[..], &[254, 205, 0, 0, 254, 254]);
        let pose = g.pose.unwrap();
        let p = pose.position.unwrap();
        assert_eq!((p.x, p.y, p.z), (-1.0, 2.0, -BELOW_FLOOR));
        let q = pose.orientation.unwrap();
        assert!(
            (q.z - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-9,
            "{q:?}"
        );
        let ts = g.timestamp.unwrap();
        assert_eq!((ts.sec(), ts.nsec()), (1_700_000_000, 250_000_000));

        let v: Value = serde_json::from_slice(&json(&map(), stamp())).unwrap();
        assert_eq!(v["frame_id"], "map");
        assert_eq!(v["column_count"], 3);
        assert_eq!(v["row_stride"], 3);
        assert_eq!(v["cell_stride"], 1);
        assert_eq!(v["cell_size"]["x"], cell.x);
        assert_eq!(
            v["fields"],
            json!([{"name": FIELD, "offset": 0, "type": 1}])
        );
        assert_eq!(v["pose"]["position"]["z"], -BELOW_FLOOR);
        assert_eq!(v["pose"]["orientation"]["z"], q.z);
        assert_eq!(v["timestamp"]["nsec"], 250_000_000);
        let data = base64::engine::general_purpose::STANDARD
            .decode(v["data"].as_str().unwrap())
            .unwrap();
        assert_eq!(data, &g.data[..]);
    }
}
