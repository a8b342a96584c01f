//! The line parsers of each trace format (the table in the module above): fields checked
//! and named, times and sizes converted, nothing accepted silently.

use super::{Parsed, TraceFormat, TraceReader};
use crate::request::ReqKind;
use crate::SimError;

impl TraceReader {
    /// Seconds (a decimal number) to ns: a finite, non-negative number of seconds that
    /// fits 64-bit nanoseconds, or an error naming the field.
    fn seconds(&self, field: &str, text: &str) -> Result<u64, SimError> {
        let v: f64 = text
            .trim()
            .parse()
            .map_err(|_| self.err(field, format!("{:?} is not a number", text.trim())))?;
        if !v.is_finite() || v < 0.0 || v * 1e9 >= u64::MAX as f64 {
            return Err(self.err(field, format!("{v} s is not a time")));
        }
        Ok((v * 1e9) as u64)
    }

    /// An integer time in units of `unit_ns`, to ns without overflow.
    fn ticks(&self, field: &str, text: &str, unit_ns: u64) -> Result<u64, SimError> {
        let v: u64 = parse(Some(text)).map_err(|m| self.err(field, m))?;
        v.checked_mul(unit_ns)
            .ok_or_else(|| self.err(field, format!("{v} overflows 64-bit nanoseconds")))
    }

    /// Parses one line: `Ok(None)` for lines that carry no request (comments, headers,
    /// blkparse summaries and events of other actions).
    pub(super) fn parse_line(&mut self, t: &str) -> Result<Option<Parsed>, SimError> {
        let t = t.trim();
        if t.is_empty() || t.starts_with('#') {
            return Ok(None);
        }
        // A header: before the first request, a first field that starts with a letter.
        if self.counts.requests == 0
            && self.origin.is_none()
            && t.starts_with(|c: char| c.is_ascii_alphabetic())
            && self.format != TraceFormat::Blkparse
        {
            self.counts.headers += 1;
            return Ok(None);
        }
        match self.format {
            TraceFormat::Mqsim => self.parse_mqsim(t),
            TraceFormat::Msr => self.parse_msr(t),
            TraceFormat::Blkparse => self.parse_blkparse(t),
            TraceFormat::Spc => self.parse_spc(t),
        }
    }

    /// A numeric field `name`'s parse, or an error naming it.
    fn field(&self, name: &str, r: Result<u64, String>) -> Result<u64, SimError> {
        r.map_err(|m| self.err(name, m))
    }

    /// Sector count `v` of field `name` in bytes, checked: a huge LBA must not wrap to a
    /// small offset.
    fn sectors(&self, name: &str, v: u64) -> Result<u64, SimError> {
        v.checked_mul(512).ok_or_else(|| {
            self.err(
                name,
                format!("{v} sectors of 512 bytes overflow a 64-bit byte offset"),
            )
        })
    }

    /// An MQSim line: `time device lba size type` (sectors; type 0 write, 1 read).
    fn parse_mqsim(&self, t: &str) -> Result<Option<Parsed>, SimError> {
        let mut it = t.split_whitespace();
        let time = self.ticks("time", it.next().unwrap_or(""), 1)?;
        let dev = it.next().ok_or_else(|| self.err("device", "missing"))?;
        let lba = self.field("lba", parse(it.next()))?;
        let size = self.field("size", parse(it.next()))?;
        let kind = match it.next() {
            Some("0") => ReqKind::Write,
            Some("1") => ReqKind::Read,
            Some(o) => return Err(self.err("type", format!("{o:?} is not 0 (write) or 1 (read)"))),
            None => return Err(self.err("type", "missing")),
        };
        if let Some(extra) = it.next() {
            return Err(self.err("line", format!("unexpected extra field {extra:?}")));
        }
        Ok(Some(one(
            dev,
            time,
            kind,
            self.sectors("lba", lba)?,
            self.sectors("size", size)?,
        )))
    }

    /// An MSR Cambridge line: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
    fn parse_msr(&self, t: &str) -> Result<Option<Parsed>, SimError> {
        let cols: Vec<&str> = t.split(',').collect();
        if cols.len() != 7 {
            return Err(self.err(
                "line",
                format!("{} comma-separated fields, expected 7", cols.len()),
            ));
        }
        let time = self.ticks("Timestamp", cols[0], 100)?;
        let kind = match cols[3].trim().to_ascii_lowercase().as_str() {
            "read" => ReqKind::Read,
            "write" => ReqKind::Write,
            o => return Err(self.err("Type", format!("{o:?} is not Read or Write"))),
        };
        let off = self.field("Offset", parse(Some(cols[4])))?;
        let size = self.field("Size", parse(Some(cols[5])))?;
        let disk = format!("{}/{}", cols[1].trim(), cols[2].trim());
        Ok(Some(one(&disk, time, kind, off, size)))
    }

    /// A blkparse event line of the configured action (other lines carry no request); a
    /// preflush or FUA flag adds a flush before or after the request.
    fn parse_blkparse(&self, t: &str) -> Result<Option<Parsed>, SimError> {
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
        if cols[5] != self.opts.blkparse_action.letter() {
            return Ok(None);
        }
        let time = self.seconds("time", cols[3])?;
        let rwbs = cols[6];
        let sized = cols.len() >= 10 && cols[8] == "+";
        let count: u64 = if sized {
            self.field("count", parse(Some(cols[9])))?
        } else {
            0
        };
        let dev = cols[0];
        // A flush carries no data ("FWS 0 + 0" or "FN").
        if rwbs.contains('F') && count == 0 {
            return Ok(Some(one(dev, time, ReqKind::Flush, 0, 0)));
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
        let sector = self.field("sector", parse(Some(cols[7])))?;
        let req = (
            kind,
            self.sectors("sector", sector)?,
            self.sectors("count", count)?,
        );
        // F before the operation letter: preflush; F after it: FUA.
        let (pre, fua) = match (rwbs.find(['W', 'D', 'R']), rwbs.find('F'), rwbs.rfind('F')) {
            (Some(op), Some(first), Some(last)) => (first < op, last > op),
            _ => (false, false),
        };
        let mut reqs = Vec::with_capacity(3);
        if pre {
            reqs.push((ReqKind::Flush, 0, 0));
        }
        reqs.push(req);
        if fua {
            reqs.push((ReqKind::Flush, 0, 0));
        }
        Ok(Some(Parsed {
            device: dev.to_string(),
            time,
            reqs,
        }))
    }

    /// An SPC line: `ASU,LBA,Size,Opcode,Timestamp`.
    fn parse_spc(&self, t: &str) -> Result<Option<Parsed>, SimError> {
        let cols: Vec<&str> = t.split(',').collect();
        if cols.len() < 5 {
            return Err(self.err(
                "line",
                format!("{} comma-separated fields, expected 5", cols.len()),
            ));
        }
        let asu: u64 = self.field("ASU", parse(Some(cols[0])))?;
        let lba = self.field("LBA", parse(Some(cols[1])))?;
        let size = self.field("Size", parse(Some(cols[2])))?;
        let kind = match cols[3].trim() {
            "r" | "R" => ReqKind::Read,
            "w" | "W" => ReqKind::Write,
            o => return Err(self.err("Opcode", format!("{o:?} is not r or w"))),
        };
        let time = self.seconds("Timestamp", cols[4])?;
        Ok(Some(one(
            &asu.to_string(),
            time,
            kind,
            self.sectors("LBA", lba)?,
            size,
        )))
    }
}

fn parse<T: std::str::FromStr>(s: Option<&str>) -> Result<T, String> {
    let s = s.ok_or_else(|| "missing".to_string())?.trim();
    s.parse::<T>()
        .map_err(|_| format!("{s:?} is not a valid number"))
}

/// A trace line's one request.
fn one(device: &str, time: u64, kind: ReqKind, off: u64, len: u64) -> Parsed {
    Parsed {
        device: device.to_string(),
        time,
        reqs: vec![(kind, off, len)],
    }
}
