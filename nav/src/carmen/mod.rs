//! CARMEN laser logs: the reader of their `FLASER` lines, the map built from them
//! ([`mapping`]) and the seeded noisy odometry made from their reference motion
//! ([`odometry`]).
//!
//! A `FLASER` line is `FLASER n r1 .. rn x y theta odom_x odom_y odom_theta
//! ipc_timestamp host logger_timestamp`: `n` ranges in metres, then two poses (metres and
//! radians). In the "corrected" logs of the Radish repository both poses are the scan
//! matcher's estimate (the reference pose) and the `ODOM` lines are zero. Other lines
//! (`ODOM`, `PARAM`, `NEFF`, comments) are skipped.
//!
//! The beams' bearings are CARMEN's own guess for a front SICK laser, from the count alone
//! (its `carmen_laser_guess_fov` and `..._angle_increment`): 180 or 181 beams are 1 degree
//! apart, 360 or 361 half a degree, 400 or 401 a quarter, anything else spreads over 180
//! degrees; the scan is centred on the robot's heading. So 181 beams span -90 to +90
//! degrees and 180 beams -89.5 to +89.5 (CARMEN's "last beam ignored").
//!
//! Bounds, checked before anything grows: a line at most [`MAX_LINE`] bytes, a scan at
//! most [`MAX_BEAMS`] beams, a log at most [`MAX_SCANS`] scans and [`MAX_BYTES`] bytes
//! (decompressed). Gzip is recognised by its magic bytes, whatever the file's name.

pub mod mapping;
pub mod odometry;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use crate::amcl::sensor::Scan;
use crate::pose::Pose;

/// The longest line read, bytes.
pub const MAX_LINE: usize = 256 * 1024;
/// The most beams in one scan.
pub const MAX_BEAMS: usize = 8192;
/// The most scans in one log.
pub const MAX_SCANS: usize = 1_000_000;
/// The most bytes read from one log (after decompression).
pub const MAX_BYTES: u64 = 2 << 30;

/// Why a log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CarmenError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("{path}: line {line}: {reason}")]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The log is larger than the bounds, or has no scan.
    #[error("{path}: {reason}")]
    Log {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// One `FLASER` record.
#[derive(Debug, Clone, PartialEq)]
pub struct LaserRecord {
    /// Ranges, metres.
    pub ranges: Vec<f64>,
    /// The reference pose of the scan (the first pose of the line).
    pub pose: Pose,
    /// The second pose of the line ("odometry"; a copy of the first in corrected logs).
    pub odom: Pose,
    /// The logger's timestamp, seconds.
    pub timestamp: f64,
    /// The line it came from.
    pub line: usize,
}

/// A whole log.
#[derive(Debug, Clone, PartialEq)]
pub struct Log {
    /// The file's name without `.log` or `.log.gz` (and without `.gz`).
    pub name: String,
    /// The scans, in file order.
    pub scans: Vec<LaserRecord>,
    /// The largest range of the log: the laser's "no return" reading.
    pub max_range: f64,
}

/// A log's name: its file name without `.gz` and then `.log`.
pub fn log_name(path: &Path) -> String {
    let n = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = n.strip_suffix(".gz").unwrap_or(&n);
    n.strip_suffix(".log").unwrap_or(n).to_string()
}

/// The bearing of the first beam and the angle between beams for `n` beams (CARMEN's
/// guess, see the module doc).
pub fn beam_angles(n: usize) -> (f64, f64) {
    let deg = std::f64::consts::PI / 180.0;
    let inc = match n {
        180 | 181 => deg,
        360 | 361 => deg / 2.0,
        400 | 401 => deg / 4.0,
        0 | 1 => 0.0,
        _ => std::f64::consts::PI / (n - 1) as f64,
    };
    (-(n.saturating_sub(1) as f64) * inc / 2.0, inc)
}

impl Log {
    /// Record `i` as a scan for the filter: CARMEN's bearings, the log's maximum range,
    /// the sensor at the robot's centre.
    pub fn scan(&self, i: usize) -> Scan {
        let r = &self.scans[i];
        let (start, inc) = beam_angles(r.ranges.len());
        Scan::evenly(r.ranges.clone(), start, inc, self.max_range)
    }

    /// The reference poses, in order.
    pub fn poses(&self) -> Vec<Pose> {
        self.scans.iter().map(|s| s.pose).collect()
    }
}

/// Reads a log file, plain or gzipped.
pub fn read(path: &Path) -> Result<Log, CarmenError> {
    let f = File::open(path).map_err(|e| CarmenError::Io {
        path: path.to_path_buf(),
        source: e,
    })?;
    read_from(f, path)
}

/// Reads a log, plain or gzipped (told by its first bytes), from `input`; `path` names it.
pub fn read_from(input: impl Read, path: &Path) -> Result<Log, CarmenError> {
    let mut input = BufReader::new(input);
    let gzip = input
        .fill_buf()
        .map_err(|e| CarmenError::Io {
            path: path.to_path_buf(),
            source: e,
        })?
        .starts_with(&[0x1f, 0x8b]);
    let reader: Box<dyn Read> = if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(input))
    } else {
        Box::new(input)
    };
    parse(BufReader::new(reader.take(MAX_BYTES)), path)
}

/// Reads a log from `input`; `path` names it (in errors, and its name).
pub fn parse(mut input: impl BufRead, path: &Path) -> Result<Log, CarmenError> {
    let mut scans = Vec::new();
    let mut buf = Vec::new();
    let mut line = 0usize;
    let mut max_range: f64 = 0.0;
    loop {
        buf.clear();
        let n = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| CarmenError::Io {
                path: path.to_path_buf(),
                source: e,
            })?;
        if n == 0 {
            break;
        }
        line += 1;
        if buf.len() > MAX_LINE {
            return Err(CarmenError::Line {
                path: path.to_path_buf(),
                line,
                reason: format!("longer than {MAX_LINE} bytes"),
            });
        }
        if !buf.starts_with(b"FLASER") {
            continue;
        }
        let text = std::str::from_utf8(&buf).map_err(|_| CarmenError::Line {
            path: path.to_path_buf(),
            line,
            reason: "not UTF-8 text".into(),
        })?;
        let rec = parse_flaser(text, line).map_err(|reason| CarmenError::Line {
            path: path.to_path_buf(),
            line,
            reason,
        })?;
        if scans.len() == MAX_SCANS {
            return Err(CarmenError::Log {
                path: path.to_path_buf(),
                reason: format!("more than {MAX_SCANS} scans"),
            });
        }
        max_range = rec.ranges.iter().copied().fold(max_range, f64::max);
        scans.push(rec);
    }
    if scans.is_empty() {
        return Err(CarmenError::Log {
            path: path.to_path_buf(),
            reason: "no FLASER line".into(),
        });
    }
    Ok(Log {
        name: log_name(path),
        scans,
        max_range,
    })
}

fn number(tok: Option<&str>, what: &str) -> Result<f64, String> {
    let t = tok.ok_or_else(|| format!("the line ends before {what}"))?;
    let v: f64 = t
        .parse()
        .map_err(|_| format!("{what}: '{t}' is not a number"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("{what}: '{t}' is not finite"))
    }
}

/// One `FLASER` line (without its line number in errors).
pub fn parse_flaser(text: &str, line: usize) -> Result<LaserRecord, String> {
    let mut toks = text.split_ascii_whitespace();
    if toks.next() != Some("FLASER") {
        return Err("not a FLASER line".into());
    }
    let n_tok = toks.next().ok_or("no beam count")?;
    let n: usize = n_tok
        .parse()
        .map_err(|_| format!("beam count '{n_tok}' is not a number"))?;
    if n == 0 || n > MAX_BEAMS {
        return Err(format!("beam count {n} is not in 1..{MAX_BEAMS}"));
    }
    let mut ranges = Vec::with_capacity(n);
    for i in 0..n {
        let r = number(toks.next(), &format!("range {}", i + 1))?;
        if r < 0.0 {
            return Err(format!("range {} is negative ({r})", i + 1));
        }
        ranges.push(r);
    }
    let mut p = [0.0; 6];
    for (k, name) in ["x", "y", "theta", "odom_x", "odom_y", "odom_theta"]
        .iter()
        .enumerate()
    {
        p[k] = number(toks.next(), name)?;
    }
    let _ipc = number(toks.next(), "ipc_timestamp")?;
    toks.next().ok_or("the line ends before host")?;
    let timestamp = number(toks.next(), "logger_timestamp")?;
    if let Some(extra) = toks.next() {
        return Err(format!(
            "unexpected '{extra}' after logger_timestamp ({n} beams announced)"
        ));
    }
    Ok(LaserRecord {
        ranges,
        pose: Pose::new(p[0], p[1], p[2]),
        odom: Pose::new(p[3], p[4], p[5]),
        timestamp,
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(text: &str) -> Result<Log, CarmenError> {
        parse(text.as_bytes(), Path::new("dir/lab-corrected.log.gz"))
    }

    #[test]
    fn reads_flaser_lines_and_skips_the_rest() {
        let l = log("# a comment\nPARAM robot_use_laser on nohost 0\nODOM 0 0 0 0 0 0 0.1 pippo 0.1\nFLASER 3 1.0 2.5 81.83 0.5 -0.25 1.5 0.5 -0.25 1.5 21.0 pippo 21.01\nNEFF 30\nFLASER 2 3 4 1 2 3 4 5 6 7 h 8\n").unwrap();
        assert_eq!(l.name, "lab-corrected");
        assert_eq!(l.scans.len(), 2);
        assert_eq!(l.scans[0].ranges, [1.0, 2.5, 81.83]);
        assert_eq!(l.scans[0].pose, Pose::new(0.5, -0.25, 1.5));
        assert_eq!((l.scans[0].line, l.scans[1].line), (4, 6));
        assert_eq!(l.scans[1].odom, Pose::new(4.0, 5.0, 6.0));
        assert_eq!(l.max_range, 81.83);
        assert_eq!(log_name(Path::new("a/intel.log")), "intel");
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        for (text, want) in [
            (
                "FLASER 3 1 2 0.5 0.5 1.5 0.5 0 1.5 21 p 21\n",
                "line 1: ipc_timestamp: 'p'",
            ),
            (
                "FLASER 3 1 2 3 0.5 1.5 0.5 0 1.5 21 9 p\n",
                "line 1: the line ends before logger_timestamp",
            ),
            ("\nFLASER 2 1 x 0 0 0 0 0 0 1 p 1\n", "line 2: range 2: 'x'"),
            ("FLASER 2 1 2 0 0 0 0 0 0 1 p 1 9\n", "unexpected '9'"),
            ("FLASER 99999 1\n", "beam count 99999"),
            ("FLASER 1 -1 0 0 0 0 0 0 1 p 1\n", "negative"),
            ("FLASER 1 1 0 0 nan 0 0 0 1 p 1\n", "theta"),
            ("ODOM 0 0 0\n", "no FLASER line"),
        ] {
            let e = log(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.starts_with("dir/lab-corrected.log.gz"), "{e}");
        }
        let long = format!("FLASER 1 {}\n", "1".repeat(MAX_LINE));
        assert!(log(&long).unwrap_err().to_string().contains("longer than"));
    }

    #[test]
    fn carmen_bearings() {
        let deg = std::f64::consts::PI / 180.0;
        let (s, i) = beam_angles(181);
        assert!((s + 90.0 * deg).abs() < 1e-12 && (i - deg).abs() < 1e-12);
        let (s, _) = beam_angles(180);
        assert!((s + 89.5 * deg).abs() < 1e-12);
        let (s, i) = beam_angles(361);
        assert!((s + 90.0 * deg).abs() < 1e-12 && (i - deg / 2.0).abs() < 1e-12);
        let (s, i) = beam_angles(91);
        assert!((s + 90.0 * deg).abs() < 1e-12 && (i - 2.0 * deg).abs() < 1e-12);
    }
}
