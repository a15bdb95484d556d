//! Map images decoded into what the occupancy rules read: for every pixel, the sum of its
//! channels, with the channel count and the largest sample value.
//!
//! Formats: PGM (binary `P5` and ASCII `P2`, any maxval up to 65535, comments in the
//! header) by our own reader, and PNG (every colour type and bit depth) by the `png` crate,
//! palettes expanded to RGB, `tRNS` transparency to an alpha channel and bit depths below 8
//! scaled to 0-255. Which image kind a file is comes from its first bytes, not its name.
//!
//! The pixel's value on the 0-255 scale ([`Raster::avg255`]) is the average of all its
//! channels, alpha included: ROS 1's map_server and Nav2's map_io both average alpha (255
//! opaque) in with the colour channels in `trinary` mode, "to preserve existing behavior",
//! so a grey pixel `g` with alpha `a` reads as `(3g + a) / 4` in both, and so here. A
//! 16-bit sample is divided by 257 (65535 -> 255), a PGM sample by `maxval / 255`.
//!
//! Sizes are checked against [`super::MAX_CELLS`] before any pixel buffer is allocated.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::{check_size, MapError};

/// A decoded image, rows from the top as files store them.
#[derive(Debug, Clone, PartialEq)]
pub struct Raster {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// Channels averaged per pixel: 1 grey, 3 RGB, 4 RGBA, and 4 for grey + alpha, counted
    /// as R = G = B = grey plus alpha (as map_server, which sees every image as RGB(A)).
    pub channels: u32,
    /// The largest sample value (255 for 8-bit images, 65535 for 16-bit PNG, a PGM's maxval).
    pub maxval: u32,
    /// Per pixel, the sum of its channels; row-major from the top-left.
    pub sums: Vec<u32>,
}

impl Raster {
    /// Pixel `i`'s value on the 0-255 scale: the channels' average (`sum / channels`, in
    /// f64), scaled by `255 / maxval` unless maxval is 255 (then exact as map_server's).
    pub fn avg255(&self, i: usize) -> f64 {
        let avg = f64::from(self.sums[i]) / f64::from(self.channels);
        match self.maxval {
            255 => avg,
            65535 => avg / 257.0,
            m => avg * 255.0 / f64::from(m),
        }
    }
}

fn bad(path: &Path, reason: impl Into<String>) -> MapError {
    MapError::Image {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn io(path: &Path, source: std::io::Error) -> MapError {
    MapError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Reads a PGM or PNG file.
pub fn read(path: &Path) -> Result<Raster, MapError> {
    let mut f = File::open(path).map_err(|e| io(path, e))?;
    let mut magic = [0u8; 8];
    let mut got = 0;
    while got < magic.len() {
        match f.read(&mut magic[got..]).map_err(|e| io(path, e))? {
            0 => break,
            n => got += n,
        }
    }
    match kind(&magic[..got]) {
        Some(k) => {
            let len = f.metadata().map_err(|e| io(path, e))?.len();
            let limit = match k {
                Kind::Png => PNG_LIMIT,
                Kind::Pgm { ascii } => pgm_limit(ascii),
            };
            if len > limit {
                return Err(bad(
                    path,
                    format!("{len} bytes is larger than any map image"),
                ));
            }
            let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
            decode(&bytes, path)
        }
        None => Err(not_an_image(path)),
    }
}

/// The largest PNG file read: as much as its decoded pixels may take.
const PNG_LIMIT: u64 = 1 << 29;

/// Decodes a PGM or PNG image held in memory; `path` names it in errors.
pub fn decode(bytes: &[u8], path: &Path) -> Result<Raster, MapError> {
    match kind(bytes) {
        Some(Kind::Png) => decode_png(bytes, path),
        Some(Kind::Pgm { ascii }) if bytes.len() as u64 > pgm_limit(ascii) => Err(bad(
            path,
            format!("{} bytes is larger than any map PGM", bytes.len()),
        )),
        Some(Kind::Pgm { .. }) => parse_pgm(bytes, path),
        None => Err(not_an_image(path)),
    }
}

/// The image kinds read, told by their first bytes.
enum Kind {
    Png,
    Pgm { ascii: bool },
}

fn kind(magic: &[u8]) -> Option<Kind> {
    if magic.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(Kind::Png)
    } else if magic.starts_with(b"P5") || magic.starts_with(b"P2") {
        Some(Kind::Pgm {
            ascii: magic[1] == b'2',
        })
    } else {
        None
    }
}

/// The largest PGM: 2^26 two-byte samples plus a header; ASCII takes more per sample.
fn pgm_limit(ascii: bool) -> u64 {
    if ascii {
        24u64 << 26
    } else {
        (2u64 << 26) + 4096
    }
}

fn not_an_image(path: &Path) -> MapError {
    bad(
        path,
        "not a PGM (P5 or P2) or PNG image (other formats: convert to PGM or PNG)",
    )
}

/// Skips whitespace and `#` comments, then reads one decimal number of the PGM header or
/// ASCII body; returns it and the position after it.
fn pgm_number(b: &[u8], mut i: usize, path: &Path, what: &str) -> Result<(u64, usize), MapError> {
    loop {
        match b.get(i) {
            Some(c) if c.is_ascii_whitespace() => i += 1,
            Some(b'#') => {
                while b.get(i).is_some_and(|&c| c != b'\n' && c != b'\r') {
                    i += 1;
                }
            }
            _ => break,
        }
    }
    let start = i;
    let mut v: u64 = 0;
    while let Some(c) = b.get(i).filter(|c| c.is_ascii_digit()) {
        v = v.saturating_mul(10).saturating_add(u64::from(c - b'0'));
        i += 1;
        if i - start > 12 {
            return Err(bad(path, format!("PGM {what}: too many digits")));
        }
    }
    if i == start {
        return Err(bad(
            path,
            format!("PGM {what}: expected a number at byte {i}"),
        ));
    }
    Ok((v, i))
}

/// Parses a whole PGM file (`P5` or `P2`).
pub fn parse_pgm(b: &[u8], path: &Path) -> Result<Raster, MapError> {
    let ascii = match b.get(..2) {
        Some(b"P5") => false,
        Some(b"P2") => true,
        _ => {
            return Err(bad(
                path,
                "not a PGM: the file does not start with P5 or P2",
            ))
        }
    };
    let (w, i) = pgm_number(b, 2, path, "width")?;
    let (h, i) = pgm_number(b, i, path, "height")?;
    let (maxval, i) = pgm_number(b, i, path, "maxval")?;
    check_size(&path.display().to_string(), w, h)?;
    if !(1..=65535).contains(&maxval) {
        return Err(bad(path, format!("PGM maxval {maxval} is not in 1..65535")));
    }
    let n = (w * h) as usize;
    let maxval = maxval as u32;
    // Room for the samples the bytes can hold, not for what the header claims: an ASCII
    // sample takes at least a digit and a separator, a binary one a byte or two (checked
    // below before any is read).
    let room = (b.len() - i) / 2 + 1;
    let mut sums = Vec::with_capacity(n.min(if ascii { room } else { 2 * room }));
    if ascii {
        let mut at = i;
        for k in 0..n {
            let (v, next) = pgm_number(b, at, path, "sample")
                .map_err(|_| bad(path, format!("PGM: {n} samples expected, {k} found")))?;
            if v > u64::from(maxval) {
                return Err(bad(
                    path,
                    format!("PGM sample {k} is {v}, above maxval {maxval}"),
                ));
            }
            sums.push(v as u32);
            at = next;
        }
    } else {
        // Exactly one whitespace byte separates the header from the samples.
        if !b.get(i).is_some_and(u8::is_ascii_whitespace) {
            return Err(bad(path, "PGM: no whitespace after maxval"));
        }
        let data = &b[i + 1..];
        let wide = maxval > 255;
        let need = if wide { 2 * n } else { n };
        if data.len() < need {
            return Err(bad(
                path,
                format!(
                    "PGM: {need} bytes of samples expected, {} found",
                    data.len()
                ),
            ));
        }
        if wide {
            for (k, s) in data[..need].chunks_exact(2).enumerate() {
                let v = u32::from(u16::from_be_bytes([s[0], s[1]]));
                if v > maxval {
                    return Err(bad(
                        path,
                        format!("PGM sample {k} is {v}, above maxval {maxval}"),
                    ));
                }
                sums.push(v);
            }
        } else {
            for (k, &v) in data[..need].iter().enumerate() {
                if u32::from(v) > maxval {
                    return Err(bad(
                        path,
                        format!("PGM sample {k} is {v}, above maxval {maxval}"),
                    ));
                }
                sums.push(u32::from(v));
            }
        }
    }
    Ok(Raster {
        width: w as usize,
        height: h as usize,
        channels: 1,
        maxval,
        sums,
    })
}

/// Checks what the `png` crate (0.18) takes on trust before it decodes: a palette (`PLTE`)
/// of whole RGB entries. A palette whose length is not a multiple of 3 makes its palette
/// expansion panic (image-rs/image-png#694); the chunks up to the first `IDAT` are walked
/// and such a file is refused here. A chunk running past the end is left to the decoder
/// (it reports it).
fn check_png_chunks(bytes: &[u8], path: &Path) -> Result<(), MapError> {
    let mut at = 8;
    while let Some(head) = bytes.get(at..at + 8) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        match &head[4..8] {
            b"PLTE" if len % 3 != 0 => {
                return Err(bad(
                    path,
                    format!("PNG: a palette (PLTE) of {len} bytes is not whole RGB entries"),
                ))
            }
            b"IDAT" => break,
            _ => {}
        }
        at = at.saturating_add(12).saturating_add(len);
    }
    Ok(())
}

/// Decodes a PNG image; `path` names it in errors.
fn decode_png(bytes: &[u8], path: &Path) -> Result<Raster, MapError> {
    check_png_chunks(bytes, path)?;
    let mut dec = png::Decoder::new_with_limits(
        std::io::Cursor::new(bytes),
        png::Limits {
            bytes: PNG_LIMIT as usize,
        },
    );
    dec.set_transformations(png::Transformations::EXPAND);
    let mut reader = dec
        .read_info()
        .map_err(|e| bad(path, format!("PNG: {e}")))?;
    let (w, h) = reader.info().size();
    check_size(&path.display().to_string(), u64::from(w), u64::from(h))?;
    let (color, depth) = reader.output_color_type();
    // Grey + alpha counts as R = G = B = grey plus alpha, as map_server sees it.
    let ga = color == png::ColorType::GrayscaleAlpha;
    let channels = if ga { 4 } else { color.samples() as u32 };
    let wide = depth == png::BitDepth::Sixteen;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| bad(path, "PNG: image too large"))?;
    let mut buf = vec![0u8; size];
    let frame = reader
        .next_frame(&mut buf)
        .map_err(|e| bad(path, format!("PNG: {e}")))?;
    let (w, h) = (w as usize, h as usize);
    let stride = frame.line_size;
    let ch = color.samples();
    let mut sums = Vec::with_capacity(w * h);
    for row in 0..h {
        let line = &buf[row * stride..];
        for col in 0..w {
            let mut s = 0u32;
            for k in 0..ch {
                let v = if wide {
                    let at = 2 * (col * ch + k);
                    u32::from(u16::from_be_bytes([line[at], line[at + 1]]))
                } else {
                    u32::from(line[col * ch + k])
                };
                s += if ga && k == 0 { 3 * v } else { v };
            }
            sums.push(s);
        }
    }
    Ok(Raster {
        width: w,
        height: h,
        channels,
        maxval: if wide { 65535 } else { 255 },
        sums,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgm_binary_and_ascii_with_comments() {
        let p = Path::new("t.pgm");
        let mut b = b"P5\n# made by hand\n3 2\n# another\n255\n".to_vec();
        b.extend_from_slice(&[0, 128, 255, 1, 2, 3]);
        let r = parse_pgm(&b, p).unwrap();
        assert_eq!((r.width, r.height, r.maxval), (3, 2, 255));
        assert_eq!(r.sums, [0, 128, 255, 1, 2, 3]);
        let a = parse_pgm(b"P2 3 2 15\n0 15 7\n# mid\n1 2 3\n", p).unwrap();
        assert_eq!(a.sums, [0, 15, 7, 1, 2, 3]);
        assert_eq!(a.avg255(1), 255.0);
        assert_eq!(a.avg255(2), 119.0);
        let mut w = b"P5 2 1 65535\n".to_vec();
        w.extend_from_slice(&[0xff, 0xff, 0x01, 0x01]);
        let r = parse_pgm(&w, p).unwrap();
        assert_eq!((r.avg255(0), r.avg255(1)), (255.0, 1.0));
    }

    /// A PNG chunk with its CRC.
    fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut crc = !0u32;
        for &byte in kind.iter().chain(data) {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        c.extend_from_slice(kind);
        c.extend_from_slice(data);
        c.extend_from_slice(&(!crc).to_be_bytes());
        c
    }

    #[test]
    fn a_png_palette_of_broken_entries_is_refused_not_a_panic() {
        use std::io::Write;
        // A 2 x 1 palette image whose PLTE chunk is 4 bytes (one entry and a byte): the
        // png crate's palette expansion panics on it (found by the map_image fuzz target).
        let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
        b.extend(chunk(b"IHDR", &[0, 0, 0, 2, 0, 0, 0, 1, 8, 3, 0, 0, 0]));
        b.extend(chunk(b"PLTE", &[10, 20, 30, 40]));
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&[0, 0, 1]).unwrap();
        b.extend(chunk(b"IDAT", &z.finish().unwrap()));
        b.extend(chunk(b"IEND", &[]));
        let e = decode(&b, Path::new("t.png")).unwrap_err().to_string();
        assert!(e.contains("palette (PLTE) of 4 bytes"), "{e}");
    }

    #[test]
    fn pgm_errors_say_what_is_wrong() {
        let p = Path::new("t.pgm");
        for (b, what) in [
            (&b"P5 3 2 255\n\x00\x01"[..], "6 bytes of samples expected"),
            (b"P2 2 1 10\n3 11\n", "above maxval"),
            (b"P2 2 1 10\n3\n", "2 samples expected, 1 found"),
            (b"P5 100000 100000 255\n", "2^26"),
            (b"P5 0 5 255\n", "at least one cell"),
            (b"P5 3 x 255\n", "height"),
            (b"P5 3 2 70000\n", "maxval"),
            (b"P6 3 2 255\n", "P5 or P2"),
        ] {
            let e = parse_pgm(b, p).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        }
    }
}
