//! Block trace readers: MSR Cambridge CSV, MQSim/DiskSim ASCII, blkparse text and SPC
//! (UMass) CSV. A malformed line is an error naming the file, the line and the field.
//! Addresses past the device are rejected unless the reader is told to wrap them.
//!
//! | format | line | units |
//! |---|---|---|
//! | `mqsim` | `time dev lba sectors type` (type 0 = write, 1 = read) | ns, 512-B sectors |
//! | `msr` | `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` | Windows filetime (100 ns), bytes |
//! | `blkparse` | `maj,min cpu seq time pid action rwbs sector + count [proc]`, action `Q` events only | s, 512-B sectors; `D` = discard, `F` = flush |
//! | `spc` | `ASU,LBA,Size,Opcode,Timestamp` (ASU ignored: one address space) | 512-B sectors, bytes, s |
//!
//! Times are rebased so the first request arrives at 0.

use crate::request::{ReqKind, Request};
use crate::workload::RequestSource;
use crate::SimError;
use nand::Nanos;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// A trace file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// MQSim / DiskSim ASCII.
    Mqsim,
    /// MSR Cambridge CSV.
    Msr,
    /// blkparse text output.
    Blkparse,
    /// SPC / UMass CSV.
    Spc,
}

impl TraceFormat {
    /// Parses a format name.
    pub fn from_name(s: &str) -> Option<TraceFormat> {
        match s.to_ascii_lowercase().as_str() {
            "mqsim" | "disksim" => Some(TraceFormat::Mqsim),
            "msr" => Some(TraceFormat::Msr),
            "blkparse" => Some(TraceFormat::Blkparse),
            "spc" | "umass" => Some(TraceFormat::Spc),
            _ => None,
        }
    }
}

/// Reads requests from a trace file.
pub struct TraceReader {
    path: PathBuf,
    lines: std::io::Lines<Box<dyn BufRead>>,
    line: u64,
    format: TraceFormat,
    capacity: u64,
    wrap: bool,
    origin: Option<u64>,
    last: Nanos,
}

impl std::fmt::Debug for TraceReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceReader")
            .field("path", &self.path)
            .field("line", &self.line)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

fn parse<T: std::str::FromStr>(s: Option<&str>) -> Result<T, String> {
    let s = s.ok_or_else(|| "missing".to_string())?.trim();
    s.parse::<T>()
        .map_err(|_| format!("{s:?} is not a valid number"))
}

impl TraceReader {
    /// Opens `path` as `format` for a device of `capacity` bytes; `wrap` folds addresses past
    /// the end back into the device instead of rejecting them.
    pub fn open(
        path: &Path,
        format: TraceFormat,
        capacity: u64,
        wrap: bool,
    ) -> Result<Self, SimError> {
        let file = File::open(path)
            .map_err(|e| SimError::Io(format!("cannot open trace {}: {e}", path.display())))?;
        Ok(Self::from_reader(
            path,
            Box::new(BufReader::new(file)),
            format,
            capacity,
            wrap,
        ))
    }

    /// Reads from any buffered reader; `path` names it in errors.
    pub fn from_reader(
        path: &Path,
        r: Box<dyn BufRead>,
        format: TraceFormat,
        capacity: u64,
        wrap: bool,
    ) -> Self {
        TraceReader {
            path: path.to_path_buf(),
            lines: r.lines(),
            line: 0,
            format,
            capacity,
            wrap,
            origin: None,
            last: Nanos::ZERO,
        }
    }

    fn err(&self, field: &str, msg: impl Into<String>) -> SimError {
        SimError::Trace {
            file: self.path.display().to_string(),
            line: self.line,
            field: field.to_string(),
            message: msg.into(),
        }
    }

    /// Parses one line: `Ok(None)` for lines that carry no request (comments, headers,
    /// blkparse summaries and non-queue events).
    fn parse_line(&self, text: &str) -> Result<Option<(u64, ReqKind, u64, u64)>, SimError> {
        let t = text.trim();
        if t.is_empty() || t.starts_with('#') {
            return Ok(None);
        }
        let f = |name: &str, r: Result<u64, String>| r.map_err(|m| self.err(name, m));
        // Sector counts to bytes, checked: a huge LBA must not wrap to a small offset.
        let sectors = |name: &str, v: u64| {
            v.checked_mul(512).ok_or_else(|| {
                self.err(
                    name,
                    format!("{v} sectors of 512 bytes overflow a 64-bit byte offset"),
                )
            })
        };
        match self.format {
            TraceFormat::Mqsim => {
                let mut it = t.split_whitespace();
                let time = f("time", parse(it.next()))?;
                let _dev: u64 = f("device", parse(it.next()))?;
                let lba = f("lba", parse(it.next()))?;
                let size = f("size", parse(it.next()))?;
                let kind = match it.next() {
                    Some("0") => ReqKind::Write,
                    Some("1") => ReqKind::Read,
                    Some(o) => {
                        return Err(self.err("type", format!("{o:?} is not 0 (write) or 1 (read)")))
                    }
                    None => return Err(self.err("type", "missing")),
                };
                if let Some(extra) = it.next() {
                    return Err(self.err("line", format!("unexpected extra field {extra:?}")));
                }
                Ok(Some((
                    time,
                    kind,
                    sectors("lba", lba)?,
                    sectors("size", size)?,
                )))
            }
            TraceFormat::Msr => {
                let cols: Vec<&str> = t.split(',').collect();
                if cols.len() != 7 {
                    return Err(self.err(
                        "line",
                        format!("{} comma-separated fields, expected 7", cols.len()),
                    ));
                }
                if cols[0].trim().eq_ignore_ascii_case("timestamp") {
                    return Ok(None);
                }
                let ticks = f("Timestamp", parse(Some(cols[0])))?;
                let kind = match cols[3].trim().to_ascii_lowercase().as_str() {
                    "read" => ReqKind::Read,
                    "write" => ReqKind::Write,
                    o => return Err(self.err("Type", format!("{o:?} is not Read or Write"))),
                };
                let off = f("Offset", parse(Some(cols[4])))?;
                let size = f("Size", parse(Some(cols[5])))?;
                Ok(Some((ticks.saturating_mul(100), kind, off, size)))
            }
            TraceFormat::Blkparse => {
                let cols: Vec<&str> = t.split_whitespace().collect();
                // Event lines start with "maj,min"; everything else is summary output.
                let is_event = cols.first().is_some_and(|c| {
                    let mut p = c.split(',');
                    matches!((p.next(), p.next()), (Some(a), Some(b)) if a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
                });
                if !is_event {
                    return Ok(None);
                }
                if cols.len() < 7 {
                    return Err(self.err(
                        "line",
                        format!("{} fields, expected at least 7", cols.len()),
                    ));
                }
                if cols[5] != "Q" {
                    return Ok(None);
                }
                let secs: f64 = cols[3]
                    .parse()
                    .map_err(|_| self.err("time", format!("{:?} is not a number", cols[3])))?;
                let rwbs = cols[6];
                let time = (secs * 1e9) as u64;
                let sized = cols.len() >= 10 && cols[8] == "+";
                let count: u64 = if sized {
                    f("count", parse(Some(cols[9])))?
                } else {
                    0
                };
                // A flush carries no data ("FWS 0 + 0"); a write with F set and data is FUA.
                if rwbs.contains('F') && count == 0 {
                    return Ok(Some((time, ReqKind::Flush, 0, 0)));
                }
                let kind = if rwbs.contains('D') {
                    ReqKind::Trim
                } else if rwbs.contains('W') {
                    ReqKind::Write
                } else if rwbs.contains('R') {
                    ReqKind::Read
                } else {
                    return Err(self.err("rwbs", format!("{rwbs:?} has no R, W, D or F")));
                };
                if !sized {
                    return Err(self.err("sector", "expected `sector + count`"));
                }
                let sector = f("sector", parse(Some(cols[7])))?;
                Ok(Some((
                    time,
                    kind,
                    sectors("sector", sector)?,
                    sectors("count", count)?,
                )))
            }
            TraceFormat::Spc => {
                let cols: Vec<&str> = t.split(',').collect();
                if cols.len() < 5 {
                    return Err(self.err(
                        "line",
                        format!("{} comma-separated fields, expected 5", cols.len()),
                    ));
                }
                let _asu: u64 = f("ASU", parse(Some(cols[0])))?;
                let lba = f("LBA", parse(Some(cols[1])))?;
                let size = f("Size", parse(Some(cols[2])))?;
                let kind = match cols[3].trim() {
                    "r" | "R" => ReqKind::Read,
                    "w" | "W" => ReqKind::Write,
                    o => return Err(self.err("Opcode", format!("{o:?} is not r or w"))),
                };
                let secs: f64 = cols[4].trim().parse().map_err(|_| {
                    self.err("Timestamp", format!("{:?} is not a number", cols[4].trim()))
                })?;
                Ok(Some((
                    (secs * 1e9) as u64,
                    kind,
                    sectors("LBA", lba)?,
                    size,
                )))
            }
        }
    }
}

impl RequestSource for TraceReader {
    fn next_request(&mut self) -> Option<Result<Request, SimError>> {
        loop {
            let text = match self.lines.next()? {
                Ok(t) => t,
                Err(e) => return Some(Err(SimError::Io(format!("{}: {e}", self.path.display())))),
            };
            self.line += 1;
            let parsed = match self.parse_line(&text) {
                Ok(Some(p)) => p,
                Ok(None) => continue,
                Err(e) => return Some(Err(e)),
            };
            let (time, kind, mut offset, len) = parsed;
            if kind != ReqKind::Flush {
                if len == 0 {
                    return Some(Err(self.err("size", "zero-length request")));
                }
                if len > self.capacity {
                    return Some(Err(self.err(
                        "size",
                        format!("{len} bytes exceed the device's {} bytes", self.capacity),
                    )));
                }
                let Some(end) = offset.checked_add(len) else {
                    return Some(Err(self.err(
                        "offset",
                        format!("{offset} + {len} bytes overflow a 64-bit byte offset"),
                    )));
                };
                if end > self.capacity {
                    if !self.wrap {
                        return Some(Err(self.err(
                            "offset",
                            format!(
                                "bytes {offset}..{end} are past the device's {} bytes (fold addresses with --wrap, or `wrap = true` under [trace])",
                                self.capacity
                            ),
                        )));
                    }
                    offset %= self.capacity - len + 1;
                    offset -= offset % 512;
                }
            }
            let origin = *self.origin.get_or_insert(time);
            let mut arrival = Nanos(time.saturating_sub(origin));
            // Traces are time-ordered; tolerate jitter by never going back in time.
            if arrival < self.last {
                arrival = self.last;
            }
            self.last = arrival;
            return Some(Ok(Request {
                arrival,
                kind,
                offset,
                len,
                class: ftl::DataClass::NORMAL,
                idle_before: Nanos::ZERO,
            }));
        }
    }
}
