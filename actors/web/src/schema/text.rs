//! JSON messages written straight into their buffer: the scan and the sonar, whose many
//! numbers made the `Value` tree the most of a JSON browser message's encoding cost. Each
//! writes byte for byte what `serde_json` makes of the same message as a `Value` (its keys
//! in order): the tests compare the two.

use super::{identity_pose, rgba, sonar_cones, time};
use player_kit::driver::Timestamp;

/// A `foxglove.LaserScan` in JSON written straight from the ranges (mm): byte for byte what
/// `serde_json` makes of the same message as a `Value` (keys in order, each range in its
/// shortest form: `1.234`, `0.05`, `2.0`), without a `Value` per range (the scan was most
/// of a JSON browser message's encoding cost).
pub(super) fn scan_json(
    t: Timestamp,
    start: f64,
    end: f64,
    ranges_mm: &[u16],
    intensities: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(320 + 7 * ranges_mm.len() + 4 * intensities.len());
    out.extend_from_slice(b"{\"end_angle\":");
    push_json(&mut out, &end);
    out.extend_from_slice(b",\"frame_id\":\"base_link\",\"intensities\":[");
    for (i, &v) in intensities.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_int(&mut out, u32::from(v));
    }
    out.extend_from_slice(b"],\"pose\":");
    push_json(&mut out, &identity_pose());
    out.extend_from_slice(b",\"ranges\":[");
    for (i, &r) in ranges_mm.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_metres(&mut out, r);
    }
    out.extend_from_slice(b"],\"start_angle\":");
    push_json(&mut out, &start);
    out.extend_from_slice(b",\"timestamp\":");
    push_json(&mut out, &time(t));
    out.push(b'}');
    out
}

/// The sonar's `foxglove.SceneUpdate` in JSON: one entity, its cones as triangles
/// ([`sonar_cones`]) and the ranges (mm) in its metadata. Written straight into the
/// buffer, byte for byte what `serde_json` makes of the same message as a `Value` (keys in
/// order), without a map per point.
pub(super) fn sonar_json(t: Timestamp, ranges: &[u16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1200 + 60 * ranges.len());
    out.extend_from_slice(
        b"{\"deletions\":[],\"entities\":[{\"arrows\":[],\"cubes\":[],\"cylinders\":[],\
        \"frame_id\":\"base_link\",\"frame_locked\":true,\"id\":\"sonar\",\
        \"lifetime\":{\"nsec\":0,\"sec\":0},\"lines\":[],\
        \"metadata\":[{\"key\":\"ranges_mm\",\"value\":\"",
    );
    for (i, &r) in ranges.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_int(&mut out, u32::from(r));
    }
    out.extend_from_slice(b"\"}],\"models\":[],\"spheres\":[],\"texts\":[],\"timestamp\":");
    push_json(&mut out, &time(t));
    out.extend_from_slice(b",\"triangles\":[{\"color\":");
    push_json(&mut out, &rgba(0.16, 0.47, 1.0, 0.25));
    out.extend_from_slice(b",\"colors\":[],\"indices\":[],\"points\":[");
    for (i, [x, y]) in sonar_cones(ranges).into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"x\":");
        push_json(&mut out, &x);
        out.extend_from_slice(b",\"y\":");
        push_json(&mut out, &y);
        out.extend_from_slice(b",\"z\":0.0}");
    }
    out.extend_from_slice(b"],\"pose\":");
    push_json(&mut out, &identity_pose());
    out.extend_from_slice(b"}]}]}");
    out
}

/// `v` as `serde_json` writes it (into a vector, which cannot fail).
fn push_json(out: &mut Vec<u8>, v: &impl serde::Serialize) {
    let _ = serde_json::to_writer(out, v);
}

/// `n` in decimal.
fn push_int(out: &mut Vec<u8>, n: u32) {
    let mut digits = [0u8; 10];
    let mut k = digits.len();
    let mut n = n;
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[k..]);
}

/// `mm` millimetres in metres, as the shortest decimal that reads back as `mm / 1000.0`
/// (what `serde_json` writes for that double): the exact decimal, trailing zeros dropped,
/// at least one digit after the point.
fn push_metres(out: &mut Vec<u8>, mm: u16) {
    push_int(out, u32::from(mm / 1000));
    out.push(b'.');
    let frac = mm % 1000;
    let digits = [
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ];
    let keep = digits.iter().rposition(|&c| c != b'0').map_or(1, |i| i + 1);
    out.extend_from_slice(&digits[..keep]);
}

#[cfg(test)]
mod tests {
    use super::super::scene_entity;
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn the_sonar_in_json_is_what_serde_json_makes_of_it() {
        let t = Timestamp {
            sec: 1_700_000_000,
            usec: 999_999,
        };
        for ranges in [
            vec![0u16; 16],
            (0..16).map(|i| 137 * i + 3).collect(),
            vec![5000; 16],
        ] {
            let points: Vec<Value> = sonar_cones(&ranges)
                .into_iter()
                .map(|[x, y]| json!({"x": x, "y": y, "z": 0.0}))
                .collect();
            let text: Vec<String> = ranges.iter().map(u16::to_string).collect();
            let mut e = scene_entity(t, "base_link", "sonar");
            e.insert(
                "metadata".into(),
                json!([{"key": "ranges_mm", "value": text.join(",")}]),
            );
            e.insert(
                "triangles".into(),
                json!([{"pose": identity_pose(), "points": points,
                    "color": rgba(0.16, 0.47, 1.0, 0.25), "colors": [], "indices": []}]),
            );
            let by_value = json!({"deletions": [], "entities": [Value::Object(e)]});
            assert_eq!(
                String::from_utf8(sonar_json(t, &ranges)).unwrap(),
                serde_json::to_string(&by_value).unwrap()
            );
        }
    }

    #[test]
    fn a_scan_in_json_is_what_serde_json_makes_of_it() {
        let t = Timestamp {
            sec: 1_700_000_000,
            usec: 123_456,
        };
        let ranges: Vec<u16> = (0..=u16::MAX)
            .step_by(7)
            .chain([0, 1, 10, 50, 100, 999, 1000, 1001, 1200, 65_535])
            .collect();
        let intensities: Vec<u8> = (0..=255).collect();
        for (start, end, ints) in [
            (
                -std::f64::consts::FRAC_PI_2,
                std::f64::consts::FRAC_PI_2,
                &[][..],
            ),
            (-2.356194490192345, 2.356194490192345, &intensities[..]),
        ] {
            let metres: Vec<f64> = ranges.iter().map(|&r| f64::from(r) / 1000.0).collect();
            let by_value = json!({"timestamp": time(t), "frame_id": "base_link",
                "pose": identity_pose(), "start_angle": start, "end_angle": end,
                "ranges": metres, "intensities": ints});
            assert_eq!(
                String::from_utf8(scan_json(t, start, end, &ranges, ints)).unwrap(),
                serde_json::to_string(&by_value).unwrap()
            );
        }
    }
}
