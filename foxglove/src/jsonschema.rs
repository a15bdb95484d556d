//! The JSON schemas of the channels' messages as an `advertise` carries them
//! (`schemaEncoding: "jsonschema"`): Foxglove's own `foxglove.*` types, ours (`player.*`),
//! and what a client may publish (`geometry_msgs/Twist`). Pure: names in, schema text out.
//!
//! Each is one Foxglove's JSON-schema reader accepts: every object has its properties and
//! every array item a type.

use serde_json::{json, Value};

fn time_schema() -> Value {
    json!({"type": "object", "properties": {
        "sec": {"type": "integer", "minimum": 0},
        "nsec": {"type": "integer", "minimum": 0, "maximum": 999_999_999}}})
}

fn vec3_schema() -> Value {
    json!({"type": "object", "properties": {
        "x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}}})
}

fn quat_schema() -> Value {
    json!({"type": "object", "properties": {
        "x": {"type": "number"}, "y": {"type": "number"},
        "z": {"type": "number"}, "w": {"type": "number"}}})
}

fn pose_schema() -> Value {
    json!({"type": "object", "properties": {
        "position": vec3_schema(), "orientation": quat_schema()}})
}

fn color_schema() -> Value {
    json!({"type": "object", "properties": {
        "r": {"type": "number"}, "g": {"type": "number"},
        "b": {"type": "number"}, "a": {"type": "number"}}})
}

fn point2_schema() -> Value {
    json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}})
}

fn object(title: &str, properties: Value) -> Value {
    json!({"title": title, "type": "object", "properties": properties})
}

fn array_of(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

fn number() -> Value {
    json!({"type": "number"})
}

fn scene_update_schema() -> Value {
    // Every primitive spelled out: Foxglove's JSON-schema reader needs a type for each array
    // item and properties for each object (it refuses `{}`).
    let line = json!({"type": "object", "properties": {
        "type": {"type": "integer", "enum": [0, 1, 2]},
        "pose": pose_schema(), "thickness": number(),
        "scale_invariant": {"type": "boolean"}, "points": array_of(vec3_schema()),
        "color": color_schema(), "colors": array_of(color_schema()),
        "indices": array_of(json!({"type": "integer"}))}});
    let triangles = json!({"type": "object", "properties": {
        "pose": pose_schema(), "points": array_of(vec3_schema()), "color": color_schema(),
        "colors": array_of(color_schema()), "indices": array_of(json!({"type": "integer"}))}});
    let arrow = json!({"type": "object", "properties": {
        "pose": pose_schema(), "shaft_length": number(), "shaft_diameter": number(),
        "head_length": number(), "head_diameter": number(), "color": color_schema()}});
    let sized = json!({"type": "object", "properties": {
        "pose": pose_schema(), "size": vec3_schema(), "color": color_schema()}});
    let cylinder = json!({"type": "object", "properties": {
        "pose": pose_schema(), "size": vec3_schema(), "bottom_scale": number(),
        "top_scale": number(), "color": color_schema()}});
    let text = json!({"type": "object", "properties": {
        "pose": pose_schema(), "billboard": {"type": "boolean"}, "font_size": number(),
        "scale_invariant": {"type": "boolean"}, "color": color_schema(),
        "text": {"type": "string"}}});
    let model = json!({"type": "object", "properties": {
        "pose": pose_schema(), "scale": vec3_schema(), "color": color_schema(),
        "override_color": {"type": "boolean"}, "url": {"type": "string"},
        "media_type": {"type": "string"},
        "data": {"type": "string", "contentEncoding": "base64"}}});
    let kv = json!({"type": "object", "properties": {
        "key": {"type": "string"}, "value": {"type": "string"}}});
    let entity = json!({"type": "object", "properties": {
        "timestamp": time_schema(), "frame_id": {"type": "string"}, "id": {"type": "string"},
        "lifetime": time_schema(), "frame_locked": {"type": "boolean"},
        "metadata": array_of(kv), "arrows": array_of(arrow), "cubes": array_of(sized.clone()),
        "spheres": array_of(sized), "cylinders": array_of(cylinder),
        "lines": array_of(line), "triangles": array_of(triangles),
        "texts": array_of(text), "models": array_of(model)}});
    let deletion = json!({"type": "object", "properties": {
        "timestamp": time_schema(), "type": {"type": "integer", "enum": [0, 1]},
        "id": {"type": "string"}}});
    object(
        "foxglove.SceneUpdate",
        json!({"deletions": array_of(deletion), "entities": array_of(entity)}),
    )
}

/// The JSON schema (as text) of a schema name used in [`crate::channels::CHANNELS`] (or
/// of a client channel's, `geometry_msgs/Twist`); a bare object for any other name.
pub fn schema(name: &str) -> String {
    let v = match name {
        "foxglove.FrameTransform" => object(
            name,
            json!({"timestamp": time_schema(), "parent_frame_id": {"type": "string"},
                "child_frame_id": {"type": "string"}, "translation": vec3_schema(),
                "rotation": quat_schema()}),
        ),
        "foxglove.PoseInFrame" => object(
            name,
            json!({"timestamp": time_schema(), "frame_id": {"type": "string"},
                "pose": pose_schema()}),
        ),
        "foxglove.PosesInFrame" => object(
            name,
            json!({"timestamp": time_schema(), "frame_id": {"type": "string"},
                "poses": array_of(pose_schema())}),
        ),
        "foxglove.LaserScan" => object(
            name,
            json!({"timestamp": time_schema(), "frame_id": {"type": "string"},
                "pose": pose_schema(), "start_angle": {"type": "number"},
                "end_angle": {"type": "number"}, "ranges": array_of(json!({"type": "number"})),
                "intensities": array_of(json!({"type": "number"}))}),
        ),
        "foxglove.SceneUpdate" => scene_update_schema(),
        "foxglove.Grid" => grid(),
        "foxglove.ImageAnnotations" => {
            let circle = json!({"type": "object", "properties": {
                "timestamp": time_schema(), "position": point2_schema(),
                "diameter": {"type": "number"}, "thickness": {"type": "number"},
                "fill_color": color_schema(), "outline_color": color_schema()}});
            let points = json!({"type": "object", "properties": {
                "timestamp": time_schema(), "type": {"type": "integer", "enum": [0, 1, 2, 3, 4]},
                "points": array_of(point2_schema()), "outline_color": color_schema(),
                "outline_colors": array_of(color_schema()), "fill_color": color_schema(),
                "thickness": {"type": "number"}}});
            let text = json!({"type": "object", "properties": {
                "timestamp": time_schema(), "position": point2_schema(),
                "text": {"type": "string"}, "font_size": number(),
                "text_color": color_schema(), "background_color": color_schema()}});
            object(
                name,
                json!({"circles": array_of(circle), "points": array_of(points),
                    "texts": array_of(text)}),
            )
        }
        "player.Position" => object(
            name,
            json!({"timestamp": time_schema(), "time_ms": {"type": "integer"},
                "x_mm": {"type": "integer"}, "y_mm": {"type": "integer"},
                "heading_deg": {"type": "integer"}, "speed_mm_s": {"type": "integer"},
                "turn_rate_deg_s": {"type": "integer"}, "compass_deg": {"type": "integer"},
                "stall": {"type": "boolean"}}),
        ),
        "player.Misc" => object(
            name,
            json!({"timestamp": time_schema(),
                "front_bumpers": array_of(json!({"type": "boolean"})),
                "rear_bumpers": array_of(json!({"type": "boolean"})),
                "battery_volts": {"type": "number"}}),
        ),
        "player.Gripper" => object(
            name,
            json!({"timestamp": time_schema(), "state": {"type": "integer"},
                "beams": {"type": "integer"}, "paddles_open": {"type": "boolean"},
                "paddles_closed": {"type": "boolean"}, "lift_up": {"type": "boolean"},
                "lift_down": {"type": "boolean"}, "outer_beam": {"type": "boolean"},
                "inner_beam": {"type": "boolean"}}),
        ),
        "player.Ptz" => object(
            name,
            json!({"timestamp": time_schema(), "pan_deg": {"type": "integer"},
                "tilt_deg": {"type": "integer"}, "zoom": {"type": "integer"}}),
        ),
        "player.Blobs" => {
            let blob = json!({"type": "object", "properties": {
                "channel": {"type": "integer"}, "area": {"type": "integer"},
                "x": {"type": "integer"}, "y": {"type": "integer"},
                "left": {"type": "integer"}, "right": {"type": "integer"},
                "top": {"type": "integer"}, "bottom": {"type": "integer"}}});
            object(
                name,
                json!({"timestamp": time_schema(), "width": {"type": "integer"},
                    "height": {"type": "integer"}, "blobs": array_of(blob)}),
            )
        }
        "player.Devices" => {
            let dev = json!({"type": "object", "properties": {
                "code": {"type": "string"}, "name": {"type": "string"},
                "state": {"type": "string"}, "rate_hz": {"type": "number"},
                "access": {"type": "string"}}});
            object(
                name,
                json!({"timestamp": time_schema(), "estop": {"type": "boolean"},
                    "devices": array_of(dev)}),
            )
        }
        // Client channels (what clientPublish accepts).
        "geometry_msgs/Twist" => object(
            name,
            json!({"linear": vec3_schema(), "angular": vec3_schema()}),
        ),
        _ => json!({"type": "object"}),
    };
    v.to_string()
}

/// The JSON schema of `foxglove.Grid` (the fields of Foxglove's own schema; `data` in
/// base64, as Foxglove's JSON carries bytes).
pub fn grid() -> Value {
    let number = json!({"type": "number"});
    let integer = json!({"type": "integer", "minimum": 0});
    let vec3 = json!({"type": "object", "properties": {
        "x": number, "y": number, "z": number}});
    let quat = json!({"type": "object", "properties": {
        "x": number, "y": number, "z": number, "w": number}});
    let field = json!({"type": "object", "properties": {
        "name": {"type": "string"}, "offset": integer,
        "type": {"type": "integer", "minimum": 0, "maximum": 8}}});
    json!({"title": "foxglove.Grid", "type": "object", "properties": {
        "timestamp": {"type": "object", "properties": {
            "sec": integer, "nsec": {"type": "integer", "minimum": 0, "maximum": 999_999_999}}},
        "frame_id": {"type": "string"},
        "pose": {"type": "object", "properties": {"position": vec3, "orientation": quat}},
        "column_count": integer,
        "cell_size": {"type": "object", "properties": {"x": number, "y": number}},
        "row_stride": integer,
        "cell_stride": integer,
        "fields": {"type": "array", "items": field},
        "data": {"type": "string", "contentEncoding": "base64"}}})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::CHANNELS;
    use foxglove::messages as fg;

    #[test]
    fn every_schema_is_json() {
        for c in CHANNELS {
            let s: Value = serde_json::from_str(&schema(c.schema_name)).unwrap();
            assert_eq!(s["type"], "object", "{}", c.topic);
        }
    }

    /// Why a JSON schema is one Foxglove's reader (Studio's `parseJsonSchema`) refuses: an
    /// object without properties, an array item without a type it knows, a field of no type.
    fn foxglove_refuses(v: &Value, path: &str) -> Option<String> {
        let props = match v["properties"].as_object() {
            Some(p) if v["type"] == "object" => p,
            _ => return Some(format!("{path}: not an object with properties")),
        };
        for (k, f) in props {
            let at = format!("{path}.{k}");
            let known = |t: &Value| {
                matches!(
                    t.as_str(),
                    Some("boolean" | "string" | "number" | "integer" | "object")
                )
            };
            match f["type"].as_str() {
                Some("object") => {
                    if let Some(why) = foxglove_refuses(f, &at) {
                        return Some(why);
                    }
                }
                Some("array") => {
                    let item = &f["items"];
                    if !known(&item["type"]) {
                        return Some(format!("{at}: array item of type {}", item["type"]));
                    }
                    if item["type"] == "object" {
                        if let Some(why) = foxglove_refuses(item, &at) {
                            return Some(why);
                        }
                    }
                }
                Some("boolean" | "string" | "number" | "integer") => {}
                other => return Some(format!("{at}: type {other:?}")),
            }
        }
        None
    }

    #[test]
    fn every_schema_is_one_foxglove_parses() {
        let mut names: Vec<&str> = CHANNELS.iter().map(|c| c.schema_name).collect();
        names.push("geometry_msgs/Twist");
        for name in names {
            let v: Value = serde_json::from_str(&schema(name)).unwrap();
            assert_eq!(foxglove_refuses(&v, name), None);
        }
    }

    #[test]
    fn the_json_schema_names_every_field_of_foxgloves() {
        let s = grid();
        let props = s["properties"].as_object().unwrap();
        // Foxglove's own message type, field for field (no `..`: a field added to it
        // stops this compiling until the schema has it too).
        let fg::Grid {
            timestamp: _,
            frame_id: _,
            pose: _,
            column_count: _,
            cell_size: _,
            row_stride: _,
            cell_stride: _,
            fields: _,
            data: _,
        } = fg::Grid::default();
        for name in [
            "timestamp",
            "frame_id",
            "pose",
            "column_count",
            "cell_size",
            "row_stride",
            "cell_stride",
            "fields",
            "data",
        ] {
            assert!(props.contains_key(name), "{name}");
        }
        assert_eq!(props.len(), 9);
    }
}
