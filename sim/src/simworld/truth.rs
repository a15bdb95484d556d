//! The ground-truth log's lines: every robot's true pose at a simulated instant (and, in a
//! world with events, the carries), written as CSV or JSON lines and read back.

use crate::map::TruthFormat;

/// One line of the ground-truth log.
#[derive(Debug, Clone, PartialEq)]
pub struct TruthRecord {
    /// Simulated seconds since the world started.
    pub time: f64,
    /// The robot's name.
    pub robot: String,
    /// True x, mm.
    pub x: f64,
    /// True y, mm.
    pub y: f64,
    /// True heading, degrees counter-clockwise from +x, in (-180, 180].
    pub heading: f64,
}

impl TruthRecord {
    /// The record as one line (with its newline) in `format`.
    pub fn line(&self, format: TruthFormat) -> String {
        self.line_marked(format, None)
    }

    /// The record as one line (with its newline) in `format`, marked as the pose an event
    /// left the robot in: `event` (a word, such as `carried`) is a sixth CSV field, under
    /// the `event` column of [`TruthRecord::header_with_events`], or the JSON object's
    /// `"event"` member.
    pub fn line_with_event(&self, format: TruthFormat, event: &str) -> String {
        self.line_marked(format, Some(event))
    }

    fn line_marked(&self, format: TruthFormat, event: Option<&str>) -> String {
        match format {
            TruthFormat::Csv => {
                let event = event.map(|e| format!(",{e}")).unwrap_or_default();
                format!(
                    "{:.3},{},{:.1},{:.1},{:.2}{event}\n",
                    self.time, self.robot, self.x, self.y, self.heading
                )
            }
            TruthFormat::JsonLines => {
                let event = event
                    .map(|e| format!(",\"event\":\"{}\"", json_escape(e)))
                    .unwrap_or_default();
                format!(
                    "{{\"time\":{:.3},\"robot\":\"{}\",\"x\":{:.1},\"y\":{:.1},\"heading\":{:.2}{event}}}\n",
                    self.time,
                    json_escape(&self.robot),
                    self.x,
                    self.y,
                    self.heading
                )
            }
        }
    }

    /// Parses one line of a truth log in either format (a JSON line starts with `{`); `None`
    /// for a header, blank or malformed line. A line marked with an event is the pose the
    /// event left the robot in, read as any other.
    pub fn parse(line: &str) -> Option<TruthRecord> {
        TruthRecord::parse_with_event(line).map(|(r, _)| r)
    }

    /// As [`TruthRecord::parse`], with the event the line is marked with, if any (as
    /// [`TruthRecord::line_with_event`] writes it).
    pub fn parse_with_event(line: &str) -> Option<(TruthRecord, Option<String>)> {
        let line = line.trim();
        if line.starts_with('{') {
            let field = |key: &str| -> Option<&str> {
                let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
                let rest = &line[at..];
                if let Some(s) = rest.strip_prefix('"') {
                    // A string: up to the first unescaped quote.
                    let mut end = 0;
                    let bytes = s.as_bytes();
                    while end < bytes.len() && bytes[end] != b'"' {
                        end += if bytes[end] == b'\\' { 2 } else { 1 };
                    }
                    s.get(..end)
                } else {
                    rest.split([',', '}']).next()
                }
            };
            let unescape = |s: &str| s.replace("\\\"", "\"").replace("\\\\", "\\");
            let record = TruthRecord {
                time: field("time")?.trim().parse().ok()?,
                robot: unescape(field("robot")?),
                x: field("x")?.trim().parse().ok()?,
                y: field("y")?.trim().parse().ok()?,
                heading: field("heading")?.trim().parse().ok()?,
            };
            Some((record, field("event").map(unescape)))
        } else {
            let mut parts = line.split(',');
            let time = parts.next()?.parse().ok()?;
            let robot = parts.next()?.to_string();
            let x = parts.next()?.parse().ok()?;
            let y = parts.next()?.parse().ok()?;
            let heading = parts.next()?.parse().ok()?;
            let event = parts.next().filter(|e| !e.is_empty()).map(str::to_string);
            let record = TruthRecord {
                time,
                robot,
                x,
                y,
                heading,
            };
            parts.next().is_none().then_some((record, event))
        }
    }

    /// The header line a log file in `format` starts with, if any.
    pub fn header(format: TruthFormat) -> Option<&'static str> {
        match format {
            TruthFormat::Csv => Some("time,robot,x,y,heading\n"),
            TruthFormat::JsonLines => None,
        }
    }

    /// The header line a log file in `format` of a world with events starts with, if any:
    /// in CSV, [`TruthRecord::header`]'s with an `event` column, which only the lines an
    /// event wrote fill (other lines have five fields, as in any truth log).
    pub fn header_with_events(format: TruthFormat) -> Option<&'static str> {
        match format {
            TruthFormat::Csv => Some("time,robot,x,y,heading,event\n"),
            TruthFormat::JsonLines => None,
        }
    }
}

fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
