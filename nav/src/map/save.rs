//! Writing a map as map_server reads it: a binary PGM (`P5`, occupied 0, free 254, unknown
//! 205, as ROS's map_saver writes them, top row first) and a YAML description beside it
//! (`image` relative, `mode: trinary`, `negate: 0`, `occupied_thresh: 0.65`,
//! `free_thresh: 0.196`: 254 reads as p = 0.004, free; 205 as p = 0.196078, just above
//! 0.196, unknown; 0 as p = 1, occupied). Numbers are written in Rust's shortest form that
//! reads back to the same f64, so a saved map loads back cell for cell and metre for metre.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Map, MapError, FREE, OCCUPIED};

/// The PGM value of an occupied cell.
pub const PGM_OCCUPIED: u8 = 0;
/// The PGM value of a free cell.
pub const PGM_FREE: u8 = 254;
/// The PGM value of an unknown cell.
pub const PGM_UNKNOWN: u8 = 205;

fn io(path: &Path, source: std::io::Error) -> MapError {
    MapError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The map's image as PGM bytes.
pub fn pgm_bytes(map: &Map) -> Vec<u8> {
    let (w, h) = (map.width(), map.height());
    let mut out = format!(
        "P5\n# player-nav map, {} m/cell\n{w} {h}\n255\n",
        map.resolution()
    )
    .into_bytes();
    out.reserve(w * h);
    for row in (0..h).rev() {
        for &c in &map.cells()[row * w..(row + 1) * w] {
            out.push(match c {
                OCCUPIED => PGM_OCCUPIED,
                FREE => PGM_FREE,
                _ => PGM_UNKNOWN,
            });
        }
    }
    out
}

/// Writes `yaml_path` and the PGM beside it (the YAML's name with `.pgm`); returns the
/// PGM's path.
pub fn save(map: &Map, yaml_path: &Path) -> Result<PathBuf, MapError> {
    let stem = yaml_path
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| MapError::BadValue {
            path: yaml_path.to_path_buf(),
            key: "output".into(),
            reason: "the output needs a file name".into(),
        })?;
    let image_name = format!("{stem}.pgm");
    let pgm = yaml_path.with_file_name(&image_name);
    std::fs::write(&pgm, pgm_bytes(map)).map_err(|e| io(&pgm, e))?;
    let o = map.origin();
    let mut y = Vec::new();
    // Quote the image name only when it needs it.
    let plain = image_name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c));
    let image = if plain {
        image_name.clone()
    } else {
        format!(
            "\"{}\"",
            image_name.replace('\\', "\\\\").replace('"', "\\\"")
        )
    };
    writeln!(y, "image: {image}").unwrap();
    writeln!(y, "mode: trinary").unwrap();
    writeln!(y, "resolution: {:?}", map.resolution()).unwrap();
    writeln!(y, "origin: [{:?}, {:?}, {:?}]", o.x, o.y, o.theta).unwrap();
    writeln!(y, "negate: 0").unwrap();
    writeln!(y, "occupied_thresh: 0.65").unwrap();
    writeln!(y, "free_thresh: 0.196").unwrap();
    std::fs::write(yaml_path, y).map_err(|e| io(yaml_path, e))?;
    Ok(pgm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::load::load_yaml;
    use crate::pose::Pose;

    #[test]
    fn a_saved_map_loads_back_cell_for_cell() {
        let d = std::env::temp_dir().join(format!("player-nav-save-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let cells: Vec<i8> = (0..7 * 5)
            .map(|i| ((i * 7 + i / 3) % 3) as i8 - 1)
            .collect();
        let m = Map::with_cells(7, 5, 0.05, Pose::new(-3.2, 1.0 / 3.0, 0.1), cells).unwrap();
        let yaml = d.join("my map.yaml");
        let pgm = save(&m, &yaml).unwrap();
        assert_eq!(pgm, d.join("my map.pgm"));
        let back = load_yaml(&yaml).unwrap();
        assert_eq!(back, m);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
