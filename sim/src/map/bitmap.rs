//! A `[grid]`'s bitmap: its solid cells read from text (`#` solid) or from a PNG (dark
//! pixels solid), and merged into as few rectangles as the picture allows.

use std::path::Path;

use super::WorldError;

/// Most pixels a PNG map may have (a 4000 x 4000 picture).
const MAX_PIXELS: usize = 16_000_000;

/// The grid's solid cells, row 0 at the top: from `rows` (`#` solid, anything else free) or
/// from a bitmap `file` (`.png`: dark pixels solid; anything else: text like `rows`).
/// Exactly one of the two must be given; errors name `grid` or `grid.file`.
pub(super) fn grid_cells(
    origin: &str,
    rows: Option<&str>,
    file: Option<&Path>,
) -> Result<Vec<Vec<bool>>, WorldError> {
    let cells =
        match (rows, file) {
            (Some(rows), None) => text_cells(rows),
            (None, Some(path)) => {
                let cannot = |e: String| {
                    WorldError::key(
                        origin,
                        "grid.file",
                        format!("cannot read {}: {e}", path.display()),
                    )
                };
                if path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("png"))
                {
                    png_cells(path).map_err(cannot)?
                } else {
                    let text = std::fs::read_to_string(path).map_err(|e| cannot(e.to_string()))?;
                    text_cells(&text)
                }
            }
            _ => return Err(WorldError::key(
                origin,
                "grid",
                "give exactly one of `rows` (the bitmap as text) or `file` (a .png or text file)",
            )),
        };
    if cells.is_empty() {
        return Err(WorldError::key(origin, "grid", "the bitmap has no rows"));
    }
    Ok(cells)
}

/// Text bitmap: one line per row, `#` solid. Blank lines at the start and end are dropped.
pub(super) fn text_cells(text: &str) -> Vec<Vec<bool>> {
    let mut rows: Vec<Vec<bool>> = text
        .lines()
        .map(|l| l.trim_end().chars().map(|c| c == '#').collect())
        .collect();
    while rows.first().is_some_and(|r| r.is_empty()) {
        rows.remove(0);
    }
    while rows.last().is_some_and(|r| r.is_empty()) {
        rows.pop();
    }
    rows
}

/// PNG bitmap: a pixel darker than mid-grey (and not transparent) is solid.
pub(super) fn png_cells(path: &Path) -> Result<Vec<Vec<bool>>, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let (w, h) = {
        let info = reader.info();
        (info.width as usize, info.height as usize)
    };
    if w.saturating_mul(h) > MAX_PIXELS {
        return Err(format!("{w} x {h} pixels is too big a map"));
    }
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| "image too large".to_string())?;
    let mut buf = vec![0; size];
    let frame = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    let channels = frame.color_type.samples();
    let stride = frame.line_size;
    Ok((0..h)
        .map(|y| {
            (0..w)
                .map(|x| solid(&buf[y * stride + x * channels..][..channels]))
                .collect()
        })
        .collect())
}

/// Whether one pixel (grey, grey and alpha, RGB or RGBA samples) is solid: opaque enough
/// and darker than mid-grey.
fn solid(px: &[u8]) -> bool {
    let (lum, alpha) = match px {
        [g] => (u32::from(*g), 255),
        [g, a] => (u32::from(*g), *a),
        [r, g, b] => ((u32::from(*r) + u32::from(*g) + u32::from(*b)) / 3, 255),
        [r, g, b, a, ..] => ((u32::from(*r) + u32::from(*g) + u32::from(*b)) / 3, *a),
        [] => (255, 0),
    };
    alpha >= 128 && lum < 128
}

/// The runs of solid cells along one row, as `(start, end)`, end-exclusive.
fn runs(row: &[bool]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut x = 0;
    while x < row.len() {
        if row[x] {
            let s = x;
            while x < row.len() && row[x] {
                x += 1;
            }
            out.push((s, x));
        } else {
            x += 1;
        }
    }
    out
}

/// Merges solid cells into rectangles: runs along each row, stacked downwards while the
/// run below is identical. Returns `(x0, x1, top, bottom)` in cells, end-exclusive.
pub(super) fn merge_cells(cells: &[Vec<bool>]) -> Vec<(usize, usize, usize, usize)> {
    let all: Vec<Vec<(usize, usize)>> = cells.iter().map(|r| runs(r)).collect();
    let mut used: Vec<Vec<bool>> = all.iter().map(|r| vec![false; r.len()]).collect();
    let mut rects = Vec::new();
    for y in 0..all.len() {
        for (k, &(x0, x1)) in all[y].iter().enumerate() {
            if used[y][k] {
                continue;
            }
            used[y][k] = true;
            let mut bottom = y + 1;
            while bottom < all.len() {
                match all[bottom].iter().position(|&r| r == (x0, x1)) {
                    Some(j) if !used[bottom][j] => {
                        used[bottom][j] = true;
                        bottom += 1;
                    }
                    _ => break,
                }
            }
            rects.push((x0, x1, y, bottom));
        }
    }
    rects
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(text: &str) -> Vec<Vec<bool>> {
        text_cells(text)
    }

    #[test]
    fn text_rows_drop_blank_lines_at_both_ends_only() {
        let c = cells("\n\n#.#\n\n##\n\n");
        assert_eq!(
            c,
            vec![vec![true, false, true], vec![], vec![true, true]],
            "{c:?}"
        );
    }

    #[test]
    fn identical_runs_stack_into_one_rectangle_and_others_stay_apart() {
        // Rows 0-1 share the run 0..2; row 2's run 0..3 differs, so it stands alone.
        let c = cells("##..#\n##...\n###..");
        assert_eq!(
            merge_cells(&c),
            vec![(0, 2, 0, 2), (4, 5, 0, 1), (0, 3, 2, 3)]
        );
    }

    #[test]
    fn a_pixel_is_solid_when_dark_and_opaque() {
        assert!(solid(&[0]));
        assert!(!solid(&[200]));
        assert!(!solid(&[0, 100]), "transparent");
        assert!(solid(&[10, 20, 30]));
        assert!(!solid(&[10, 20, 30, 0]), "transparent");
        assert!(!solid(&[]));
    }

    #[test]
    fn neither_or_both_sources_is_an_error_naming_the_grid() {
        let e = grid_cells("t", None, None).unwrap_err().to_string();
        assert!(e.contains("grid") && e.contains("exactly one"), "{e}");
        let e = grid_cells("t", Some("#"), Some(Path::new("x.png")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exactly one"), "{e}");
        let e = grid_cells("t", Some("\n\n"), None).unwrap_err().to_string();
        assert!(e.contains("no rows"), "{e}");
    }
}
