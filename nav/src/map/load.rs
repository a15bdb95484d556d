//! Loading maps by the two rules the map device documents.
//!
//! **map_server's** (ROS 1 map_server, Nav2's map_io): a YAML description names the image
//! (relative to the YAML's folder), `resolution` (m/cell), `origin: [x, y, yaw]` (the
//! lower-left pixel's outer corner), `negate`, `occupied_thresh`, `free_thresh` and
//! optionally `mode` (only `trinary`, the default: our cells have three states, so `scale`
//! and `raw` are refused). For each pixel, with `v` its value on the 0-255 scale
//! ([`super::image::Raster::avg255`]): `p = (255 - v) / 255`, or `p = v / 255` when
//! negate is set; occupied when `p > occupied_thresh`, free when `p < free_thresh`, unknown
//! otherwise. The image's top row is the map's top row (row `height - 1`).
//!
//! **Player's** (`mapfile` in Player 1.6): the image and a `resolution` only; the same `p`
//! (negate likewise), occupied when `p > 0.95`, free when `p < 0.1`, unknown otherwise, and
//! the map centred on the world's origin (Player 1.6's map has no origin of its own: the
//! image's centre is (0, 0)), so the lower-left corner is at `(-w/2, -h/2) * resolution`.

use std::path::{Path, PathBuf};

use super::image::{self, Raster};
use super::yaml::{self, Value};
use super::{Map, MapError, FREE, OCCUPIED, UNKNOWN};
use crate::pose::Pose;

/// Player's `mapfile` thresholds: occupied above, free below.
pub const PLAYER_OCCUPIED: f64 = 0.95;
/// See [`PLAYER_OCCUPIED`].
pub const PLAYER_FREE: f64 = 0.1;

/// The contents of a map_server YAML description.
#[derive(Debug, Clone, PartialEq)]
pub struct MapYaml {
    /// The image, resolved against the YAML's folder.
    pub image: PathBuf,
    /// Metres per cell.
    pub resolution: f64,
    /// Lower-left corner pose: x, y (m) and yaw (rad).
    pub origin: Pose,
    /// Dark is free and light occupied when set.
    pub negate: bool,
    /// Occupied when `p` is above this.
    pub occupied_thresh: f64,
    /// Free when `p` is below this.
    pub free_thresh: f64,
}

fn bad(path: &Path, key: &str, reason: impl Into<String>) -> MapError {
    MapError::BadValue {
        path: path.to_path_buf(),
        key: key.to_string(),
        reason: reason.into(),
    }
}

fn scalar<'a>(doc: &'a yaml::Doc, path: &Path, key: &'static str) -> Result<&'a str, MapError> {
    match doc.get(key) {
        None => Err(MapError::MissingKey {
            path: path.to_path_buf(),
            key,
        }),
        Some((Value::Scalar(s), _)) => Ok(s),
        Some((Value::Seq(_), line)) => Err(bad(
            path,
            key,
            format!("line {line}: a sequence where a single value belongs"),
        )),
    }
}

fn number(text: &str, path: &Path, key: &str) -> Result<f64, MapError> {
    let v: f64 = text
        .parse()
        .map_err(|_| bad(path, key, format!("'{text}' is not a number")))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(bad(path, key, format!("'{text}' is not finite")))
    }
}

fn threshold(doc: &yaml::Doc, path: &Path, key: &'static str) -> Result<f64, MapError> {
    let v = number(scalar(doc, path, key)?, path, key)?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(bad(path, key, format!("{v} is not between 0 and 1")))
    }
}

/// Reads and checks a map_server YAML description (not the image).
pub fn read_yaml(path: &Path) -> Result<MapYaml, MapError> {
    let meta = std::fs::metadata(path).map_err(|e| MapError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    if meta.len() > yaml::MAX_YAML_BYTES as u64 {
        return Err(MapError::Yaml {
            path: path.to_path_buf(),
            line: 1,
            reason: format!("larger than {} bytes", yaml::MAX_YAML_BYTES),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| MapError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    yaml_from_str(&text, path)
}

/// Checks the text of a map_server YAML description read from `path` (which names it in
/// errors and is the folder the image is resolved against); nothing is read from disk.
pub fn yaml_from_str(text: &str, path: &Path) -> Result<MapYaml, MapError> {
    let doc = yaml::parse(text, path)?;
    let image = scalar(&doc, path, "image")?;
    if image.is_empty() {
        return Err(bad(path, "image", "empty file name"));
    }
    let image = path.parent().unwrap_or_else(|| Path::new("")).join(image);
    let resolution = number(scalar(&doc, path, "resolution")?, path, "resolution")?;
    if resolution <= 0.0 {
        return Err(bad(
            path,
            "resolution",
            format!("{resolution} is not positive"),
        ));
    }
    let origin = match doc.get("origin") {
        None => {
            return Err(MapError::MissingKey {
                path: path.to_path_buf(),
                key: "origin",
            })
        }
        Some((Value::Seq(items), _)) if items.len() == 3 => Pose::new(
            number(&items[0], path, "origin")?,
            number(&items[1], path, "origin")?,
            number(&items[2], path, "origin")?,
        ),
        Some((_, line)) => {
            return Err(bad(
                path,
                "origin",
                format!("line {line}: expected [x, y, yaw]"),
            ))
        }
    };
    let negate = match scalar(&doc, path, "negate")? {
        "0" | "false" | "False" | "FALSE" => false,
        "1" | "true" | "True" | "TRUE" => true,
        other => return Err(bad(path, "negate", format!("'{other}' is not 0 or 1"))),
    };
    let occupied_thresh = threshold(&doc, path, "occupied_thresh")?;
    let free_thresh = threshold(&doc, path, "free_thresh")?;
    if free_thresh > occupied_thresh {
        return Err(bad(
            path,
            "free_thresh",
            format!("{free_thresh} is above occupied_thresh {occupied_thresh}"),
        ));
    }
    match doc.get("mode") {
        None => {}
        Some((Value::Scalar(m), _)) if m == "trinary" => {}
        Some((Value::Scalar(m), _)) if m == "scale" || m == "raw" => {
            return Err(bad(
                path,
                "mode",
                format!(
                    "'{m}' is not supported: the map's cells are trinary (free, unknown, occupied)"
                ),
            ))
        }
        Some((v, _)) => {
            return Err(bad(
                path,
                "mode",
                format!("{v:?} is not trinary, scale or raw"),
            ))
        }
    }
    Ok(MapYaml {
        image,
        resolution,
        origin,
        negate,
        occupied_thresh,
        free_thresh,
    })
}

/// The trinary rule over a raster: occupied when `p > occupied`, free when `p < free`,
/// unknown otherwise, `p = (255 - v) / 255` (`v / 255` with `negate`). Returns the cells
/// row-major from the lower-left (the image's bottom row first).
pub fn trinary(raster: &Raster, negate: bool, occupied: f64, free: f64) -> Vec<i8> {
    let (w, h) = (raster.width, raster.height);
    let mut cells = vec![UNKNOWN; w * h];
    for row in 0..h {
        let src = (h - 1 - row) * w;
        for col in 0..w {
            let v = raster.avg255(src + col);
            let p = if negate {
                v / 255.0
            } else {
                (255.0 - v) / 255.0
            };
            cells[row * w + col] = if p > occupied {
                OCCUPIED
            } else if p < free {
                FREE
            } else {
                UNKNOWN
            };
        }
    }
    cells
}

/// Loads a map by map_server's rule from its YAML description.
pub fn load_yaml(path: &Path) -> Result<Map, MapError> {
    let y = read_yaml(path)?;
    let raster = image::read(&y.image)?;
    let cells = trinary(&raster, y.negate, y.occupied_thresh, y.free_thresh);
    Map::with_cells(raster.width, raster.height, y.resolution, y.origin, cells)
}

/// Loads an image by Player's `mapfile` rule at `resolution` m/cell, centred on (0, 0).
pub fn load_player(image_path: &Path, resolution: f64, negate: bool) -> Result<Map, MapError> {
    if !(resolution.is_finite() && resolution > 0.0) {
        return Err(bad(
            image_path,
            "resolution",
            format!("{resolution} is not a positive number of metres"),
        ));
    }
    let raster = image::read(image_path)?;
    let cells = trinary(&raster, negate, PLAYER_OCCUPIED, PLAYER_FREE);
    let origin = Pose::new(
        -(raster.width as f64) * resolution / 2.0,
        -(raster.height as f64) * resolution / 2.0,
        0.0,
    );
    Map::with_cells(raster.width, raster.height, resolution, origin, cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("player-nav-load-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_trinary_rule_at_its_edges() {
        // v: 0 (black), 89 (p = 0.651), 90 (p = 0.647), 204 (p = 0.2), 205, 255.
        let r = Raster {
            width: 6,
            height: 1,
            channels: 1,
            maxval: 255,
            sums: vec![0, 89, 90, 204, 205, 255],
        };
        assert_eq!(trinary(&r, false, 0.65, 0.196), [1, 1, 0, 0, 0, -1]);
        // p = 51/255 is 0.2 exactly: not below free_thresh 0.2.
        assert_eq!(trinary(&r, false, 0.65, 0.2), [1, 1, 0, 0, -1, -1]);
        assert_eq!(trinary(&r, true, 0.65, 0.196), [-1, 0, 0, 1, 1, 1]);
        assert_eq!(
            trinary(&r, false, PLAYER_OCCUPIED, PLAYER_FREE),
            [1, 0, 0, 0, 0, -1]
        );
        // Alpha averaged in: grey 255 with alpha 0 is (3 * 255 + 0) / 4 = 191.25, p = 0.25.
        let a = Raster {
            width: 1,
            height: 2,
            channels: 4,
            maxval: 255,
            sums: vec![3 * 255, 3 * 255 + 255],
        };
        // Row 0 is the image's bottom row.
        assert_eq!(trinary(&a, false, 0.65, 0.196), [-1, 0]);
    }

    #[test]
    fn yaml_and_image_load_with_origin_and_rows_flipped() {
        let d = dir("ok");
        std::fs::write(d.join("m.pgm"), b"P2 2 2 255\n0 255\n255 255\n").unwrap();
        std::fs::write(
            d.join("m.yaml"),
            "image: m.pgm\nresolution: 0.5\norigin: [-1.0, 2.0, 0.0]\nnegate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n",
        )
        .unwrap();
        let m = load_yaml(&d.join("m.yaml")).unwrap();
        assert_eq!((m.width(), m.height(), m.resolution()), (2, 2, 0.5));
        assert_eq!(m.origin(), Pose::new(-1.0, 2.0, 0.0));
        // The black pixel is the image's top-left: the map's row 1.
        assert_eq!(m.cells(), [-1, -1, 1, -1]);
        let p = load_player(&d.join("m.pgm"), 0.1, false).unwrap();
        assert_eq!(p.origin(), Pose::new(-0.1, -0.1, 0.0));
        assert_eq!(p.cells(), [-1, -1, 1, -1]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn yaml_errors_name_the_key() {
        let d = dir("bad");
        std::fs::write(d.join("m.pgm"), b"P2 1 1 255\n0\n").unwrap();
        let base = "image: m.pgm\nresolution: 0.5\norigin: [0, 0, 0]\nnegate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n";
        for (from, to, want) in [
            ("resolution: 0.5", "resolution: -1", "'resolution'"),
            ("resolution: 0.5\n", "", "missing key 'resolution'"),
            ("origin: [0, 0, 0]", "origin: [0, 0]", "'origin'"),
            ("negate: 0", "negate: 2", "'negate'"),
            ("free_thresh: 0.196", "free_thresh: 0.7", "'free_thresh'"),
            (
                "occupied_thresh: 0.65",
                "occupied_thresh: x",
                "'occupied_thresh'",
            ),
            ("image: m.pgm", "image: none.pgm", "none.pgm"),
            ("negate: 0", "negate: 0\nmode: scale", "'mode'"),
        ] {
            std::fs::write(d.join("m.yaml"), base.replace(from, to)).unwrap();
            let e = load_yaml(&d.join("m.yaml")).unwrap_err().to_string();
            assert!(e.contains(want), "{to:?}: {e}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
