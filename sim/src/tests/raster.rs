//! The world's solids as an occupancy grid: each kind of solid against cells worked out by
//! hand, the segment walk against an independent test of every cell's square, and the
//! bounds.

use crate::geom::{Shape, Vec2};
use crate::raster::{rasterise, RasterError, FREE, OCCUPIED};
use crate::rng::Rng;

fn v(x: f64, y: f64) -> Vec2 {
    Vec2::new(x, y)
}

/// The occupied cells of a 10 x 10 grid of 100 mm cells over [0, 1000]^2, as (col, row).
fn occupied(shapes: &[Shape]) -> Vec<(usize, usize)> {
    let g = rasterise(shapes, v(0.0, 0.0), v(1000.0, 1000.0), 100.0).unwrap();
    assert_eq!((g.width, g.height), (10, 10));
    let mut out = Vec::new();
    for row in 0..g.height {
        for col in 0..g.width {
            match g.get(col, row).unwrap() {
                OCCUPIED => out.push((col, row)),
                FREE => {}
                other => panic!("cell {other}"),
            }
        }
    }
    out
}

#[test]
fn a_rectangle_occupies_the_cells_its_area_overlaps() {
    // [150, 320] x [100, 200): columns 1..=3, row 1 only (200 is row 2's lower edge, which
    // the rectangle only touches).
    assert_eq!(
        occupied(&[Shape::Rect(v(150.0, 100.0), v(320.0, 200.0))]),
        vec![(1, 1), (2, 1), (3, 1)]
    );
    // A rectangle of no width still occupies its cells.
    assert_eq!(
        occupied(&[Shape::Rect(v(250.0, 450.0), v(250.0, 450.0))]),
        vec![(2, 4)]
    );
}

#[test]
fn a_disc_occupies_the_cells_within_its_radius() {
    // Centre (500, 500), radius 120: the four cells around the centre, and the four
    // beyond each edge (their squares come within 20 mm), not the diagonal ones beyond
    // (their corners are 141 mm away).
    let mut got = occupied(&[Shape::Circle(v(500.0, 500.0), 120.0)]);
    got.sort();
    let mut want = vec![
        (4, 4),
        (5, 4),
        (4, 5),
        (5, 5),
        (3, 4),
        (3, 5),
        (6, 4),
        (6, 5),
        (4, 3),
        (5, 3),
        (4, 6),
        (5, 6),
    ];
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn the_worlds_edges_occupy_the_outer_cells() {
    let edges = [
        Shape::Segment(v(0.0, 0.0), v(1000.0, 0.0)),
        Shape::Segment(v(1000.0, 0.0), v(1000.0, 1000.0)),
        Shape::Segment(v(1000.0, 1000.0), v(0.0, 1000.0)),
        Shape::Segment(v(0.0, 1000.0), v(0.0, 0.0)),
    ];
    let got = occupied(&edges);
    assert_eq!(got.len(), 36, "the ring of 10 x 10 cells");
    assert!(got
        .iter()
        .all(|&(c, r)| c == 0 || r == 0 || c == 9 || r == 9));
}

/// Whether segment a-b meets the square [x0, x0 + s] x [y0, y0 + s] with its edges
/// (`closed`), or its open interior: the separating-axis test (the boxes overlap, and the
/// segment's line has square corners on both sides), the test's own check.
fn meets(a: Vec2, b: Vec2, x0: f64, y0: f64, s: f64, closed: bool) -> bool {
    let (x1, y1) = (x0 + s, y0 + s);
    let overlap = |lo: f64, hi: f64, a: f64, b: f64| {
        let (min, max) = (a.min(b), a.max(b));
        if closed {
            min <= hi && max >= lo
        } else {
            min < hi && max > lo
        }
    };
    if !overlap(x0, x1, a.x, b.x) || !overlap(y0, y1, a.y, b.y) {
        return false;
    }
    let side = |x: f64, y: f64| (b.x - a.x) * (y - a.y) - (b.y - a.y) * (x - a.x);
    let f = [side(x0, y0), side(x1, y0), side(x0, y1), side(x1, y1)];
    let (min, max) = (
        f.iter().copied().fold(f64::INFINITY, f64::min),
        f.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    if closed {
        min <= 0.0 && max >= 0.0
    } else {
        min < 0.0 && max > 0.0
    }
}

#[test]
fn a_segment_occupies_every_cell_it_crosses_and_no_cell_it_misses() {
    let mut rng = Rng::new(7);
    for k in 0..4000 {
        // Half of them on a 50 mm lattice: ends on cell edges and corners, walls along
        // grid lines, diagonals through corners.
        let lattice = k % 2 == 0;
        let mut p = || {
            let (x, y) = (rng.uniform() * 1000.0, rng.uniform() * 1000.0);
            if lattice {
                v((x / 50.0).round() * 50.0, (y / 50.0).round() * 50.0)
            } else {
                v(x, y)
            }
        };
        let (a, b) = (p(), p());
        let g = rasterise(
            &[Shape::Segment(a, b)],
            v(0.0, 0.0),
            v(1000.0, 1000.0),
            100.0,
        )
        .unwrap();
        for row in 0..10 {
            for col in 0..10 {
                let (x0, y0) = (col as f64 * 100.0, row as f64 * 100.0);
                let marked = g.get(col, row) == Some(OCCUPIED);
                if meets(a, b, x0, y0, 100.0, false) {
                    assert!(marked, "{a:?}-{b:?} crosses ({col}, {row}) unmarked");
                }
                if marked {
                    assert!(
                        meets(a, b, x0, y0, 100.0, true),
                        "{a:?}-{b:?} marks ({col}, {row}) it misses"
                    );
                }
            }
        }
    }
}

#[test]
fn solids_outside_are_cut_and_sizes_are_checked_first() {
    // A wall from far outside crossing row 5 only inside the grid.
    assert_eq!(
        occupied(&[Shape::Segment(v(-5000.0, 550.0), v(150.0, 550.0))]),
        vec![(0, 5), (1, 5)]
    );
    assert!(occupied(&[Shape::Segment(v(-50.0, -50.0), v(-10.0, 2000.0))]).is_empty());
    // The bounds round up to whole cells.
    let g = rasterise(&[], v(-100.0, 0.0), v(950.0, 420.0), 100.0).unwrap();
    assert_eq!((g.width, g.height, g.origin), (11, 5, v(-100.0, 0.0)));
    assert!(g.cells.iter().all(|&c| c == FREE));
    assert_eq!(
        rasterise(&[], v(0.0, 0.0), v(1e9, 1e9), 1.0),
        Err(RasterError::TooBig {
            width: 1_000_000_000,
            height: 1_000_000_000
        })
    );
    assert_eq!(
        rasterise(&[], v(0.0, 0.0), v(1.0, 1.0), 0.0),
        Err(RasterError::BadCell(0.0))
    );
    assert_eq!(
        rasterise(&[], v(0.0, 0.0), v(0.0, 1.0), 1.0),
        Err(RasterError::BadBounds)
    );
}
