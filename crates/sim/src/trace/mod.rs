//! Block trace readers: MSR Cambridge CSV, MQSim/DiskSim (and SSDSim, the same) ASCII,
//! blkparse text and SPC (UMass) CSV. A malformed line is an error naming the file, the line
//! and the field; nothing is accepted silently.
//!
//! | format | line | units |
//! |---|---|---|
//! | `mqsim` (`ssdsim`) | `time dev lba sectors type` (type 0 = write, 1 = read) | ns, 512-B sectors |
//! | `msr` | `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` | Windows filetime (100 ns), bytes |
//! | `blkparse` | `maj,min cpu seq time pid action rwbs sector + count [proc]`, events of one action (`Q` by default; `D` or `C` by choice) | s, 512-B sectors; `D` = discard, `F` = flush |
//! | `spc` | `ASU,LBA,Size,Opcode,Timestamp` | 512-B sectors, bytes, s |
//!
//! The rules, the same for every format:
//! - **Devices**: a trace may mix devices (MQSim device, MSR disk number, SPC ASU, blkparse
//!   `maj,min`); they are not merged into one address space silently. The device named in
//!   [`TraceOptions::device`] is replayed, by default the first one seen; requests of the
//!   others are skipped and counted. `all` merges them, on request.
//! - **Time**: a timestamp must be a finite, non-negative number; more than
//!   [`MAX_TRACE_SECONDS`] after the first request is an error.
//! - **Headers**: lines before the first request whose first field starts with a letter
//!   (`Timestamp,…`, `ASU,…`, `time …`) are headers and skipped; `#` lines are comments.
//!   Times are rebased so the first request arrives at 0; one earlier than the previous
//!   request's is clamped to it (traces from several CPUs jitter) and counted.
//! - **Sizes**: a zero-length read or write is skipped and counted (SPC allows them);
//!   offsets are checked, never wrapped by overflow.
//! - **Past the device**: an error naming both remedies, unless [`TraceOptions::wrap`]: then
//!   every byte address a maps to a mod capacity — the same place whatever the request's
//!   size, so overwrites stay overwrites and aligned requests stay aligned (the capacity is
//!   a whole number of pages) — and a request that crosses the end is split in two at it.
//!   A trim longer than the device (mkfs discards the whole disk) is clipped to the device.
//! - **Fitted device** ([`TraceOptions::fit`], `--fit`): the device is sized to hold the
//!   highest address the trace reads or writes ([`TraceReader::extent`]); trims are not
//!   counted in that size (mkfs discards the whole disk the trace came from), and one that
//!   reaches past the end is clipped to it, or skipped if it starts past it, and counted.
//! - **blkparse flags**: a write with `F` before the `W` (preflush) is a flush then the
//!   write; with `F` after it (FUA) the write is followed by a flush.
//! - **Empty**: a trace that yields no request is an error.
//!
//! [`TraceReader::counted`] lists the counted events; the report carries them (`input_notes`).

use crate::request::{ReqKind, Request};
use crate::workload::RequestSource;
use crate::SimError;
use nand::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

mod formats;
mod repeat;
pub use repeat::{Reopen, Repeated};

/// The latest timestamp accepted, in seconds after the trace's first request (about 31.7
/// years).
pub const MAX_TRACE_SECONDS: f64 = 1e9;

/// [`TraceOptions::device`] value that replays every device in one address space (their
/// addresses merged, as the trace's authors' own tools sometimes did).
pub const ALL_DEVICES: &str = "all";

/// Which blkparse events are requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BlkAction {
    /// `Q`: queued (what the application asked for).
    #[default]
    Q,
    /// `D`: issued to the driver (many published traces hold only these).
    D,
    /// `C`: completed.
    C,
}

impl BlkAction {
    fn letter(self) -> &'static str {
        match self {
            BlkAction::Q => "Q",
            BlkAction::D => "D",
            BlkAction::C => "C",
        }
    }
}

/// How a trace is fitted to the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceOptions {
    /// The device's logical capacity in bytes.
    pub capacity: u64,
    /// Fold addresses past the device back into it (see the module docs).
    pub wrap: bool,
    /// The device was sized to the trace's reads and writes (`--fit`): a trim reaching
    /// past its end is clipped to it (one starting past the end is skipped), both counted.
    pub fit: bool,
    /// blkparse: the action whose events are requests.
    pub blkparse_action: BlkAction,
    /// The device to replay (MQSim device, MSR `host/disk`, SPC ASU, blkparse `maj,min`);
    /// `None`: the first one seen; [`ALL_DEVICES`]: all of them, merged into one address
    /// space (explicitly).
    pub device: Option<String>,
    /// A gap between two requests longer than this is a host idle period: the FTL's
    /// background hook runs from this long after the earlier request until the later one
    /// arrives (as `nandlab serve` gives a volume idle time after
    /// [`SERVE_IDLE_AFTER`] without requests). `None`: the trace has no idle periods,
    /// only arrivals.
    pub idle_after: Option<Nanos>,
    /// This trace is the later part of one recording whose earlier part was replayed
    /// first (`nandlab run --warmup-trace`): its times count from the earlier part's first
    /// request, and the gap between the parts is idle like any other.
    pub resume: Option<Resume>,
}

/// How long `nandlab serve` waits without a request before it gives the FTL idle time; a
/// replay of a trace it recorded uses the same (`[trace] idle_after_s`).
pub const SERVE_IDLE_AFTER: Nanos = Nanos(200_000_000);

/// Where the earlier part of a recording began and ended: the raw trace times (ns) of
/// its first and last requests ([`TraceReader::span`]). A later part that starts before
/// the earlier one ended is not its continuation: its times count from its own first
/// request, as without `resume`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    /// Raw time of the earlier part's first request.
    pub first: u64,
    /// Raw time of its last request.
    pub last: u64,
}

impl TraceOptions {
    /// Defaults for a device of `capacity` bytes.
    pub fn new(capacity: u64) -> TraceOptions {
        TraceOptions {
            capacity,
            wrap: false,
            fit: false,
            blkparse_action: BlkAction::Q,
            device: None,
            idle_after: None,
            resume: None,
        }
    }
}

/// One parsed line: the device, the time in ns, and what it asks for (a blkparse FUA or
/// preflush write is more than one request).
struct Parsed {
    device: String,
    time: u64,
    reqs: Vec<(ReqKind, u64, u64)>,
}

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
            // SSDSim's ASCII traces are MQSim's format.
            "mqsim" | "disksim" | "ssdsim" => Some(TraceFormat::Mqsim),
            "msr" => Some(TraceFormat::Msr),
            "blkparse" => Some(TraceFormat::Blkparse),
            "spc" | "umass" => Some(TraceFormat::Spc),
            _ => None,
        }
    }
}

/// How far a trace reaches ([`TraceReader::extent`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceExtent {
    /// One past the highest byte a read or write touches (0: none).
    pub data_end: u64,
    /// One past the highest byte a trim touches (0: none).
    pub trim_end: u64,
}

/// Counted events of a replay (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    requests: u64,
    headers: u64,
    other_devices: u64,
    zero_length: u64,
    backwards: u64,
    folded: u64,
    split: u64,
    trims_clipped: u64,
}

/// Reads requests from a trace file.
pub struct TraceReader {
    path: PathBuf,
    input: Box<dyn BufRead>,
    line: u64,
    format: TraceFormat,
    opts: TraceOptions,
    origin: Option<u64>,
    last: Nanos,
    device: Option<String>,
    pending: VecDeque<Request>,
    counts: Counts,
    done: bool,
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

impl TraceReader {
    /// Opens `path` as `format`, fitted to the device as `opts` says.
    pub fn open(path: &Path, format: TraceFormat, opts: &TraceOptions) -> Result<Self, SimError> {
        let file = File::open(path)
            .map_err(|e| SimError::Io(format!("cannot open trace {}: {e}", path.display())))?;
        Ok(Self::from_reader(
            path,
            Box::new(BufReader::new(file)),
            format,
            opts,
        ))
    }

    /// Reads from any buffered reader; `path` names it in errors.
    pub fn from_reader(
        path: &Path,
        r: Box<dyn BufRead>,
        format: TraceFormat,
        opts: &TraceOptions,
    ) -> Self {
        TraceReader {
            path: path.to_path_buf(),
            input: r,
            line: 0,
            format,
            opts: opts.clone(),
            origin: None,
            last: Nanos::ZERO,
            device: opts.device.clone(),
            pending: VecDeque::new(),
            counts: Counts::default(),
            done: false,
        }
    }

    /// The highest byte address the trace's reads and writes reach, and its trims' (a
    /// pass over the whole file with no device limit, with `opts`' device and blkparse
    /// action): what `--fit` sizes the device by.
    pub fn extent(
        path: &Path,
        format: TraceFormat,
        opts: &TraceOptions,
    ) -> Result<TraceExtent, SimError> {
        let unbounded = TraceOptions {
            capacity: u64::MAX,
            wrap: false,
            fit: false,
            ..opts.clone()
        };
        let mut r = TraceReader::open(path, format, &unbounded)?;
        let mut e = TraceExtent::default();
        while let Some(q) = r.next_request() {
            let q = q?;
            // `place` checked that the end does not overflow.
            let end = q.offset + q.len;
            match q.kind {
                ReqKind::Trim => e.trim_end = e.trim_end.max(end),
                ReqKind::Flush => {}
                _ => e.data_end = e.data_end.max(end),
            }
        }
        Ok(e)
    }

    /// The raw times (ns) of the first and last requests `opts` replays from the trace
    /// (`None` if it has none): what a later part of the same recording resumes from.
    pub fn span(
        path: &Path,
        format: TraceFormat,
        opts: &TraceOptions,
    ) -> Result<Option<Resume>, SimError> {
        let unbounded = TraceOptions {
            capacity: u64::MAX,
            wrap: false,
            fit: false,
            resume: None,
            ..opts.clone()
        };
        let mut r = TraceReader::open(path, format, &unbounded)?;
        while let Some(q) = r.next_request() {
            q?;
        }
        Ok(r.origin.map(|first| Resume {
            first,
            last: first + r.last.0,
        }))
    }

    /// What the replay skipped, clamped, folded or split, in words (empty if nothing).
    pub fn counted(&self) -> Vec<String> {
        let c = &self.counts;
        let dev = self.device.as_deref().unwrap_or("?");
        [
            (c.headers, "header lines skipped".to_string()),
            (
                c.other_devices,
                format!("requests of other devices skipped (replayed device {dev}; pick one with --device)"),
            ),
            (c.zero_length, "zero-length requests skipped".to_string()),
            (
                c.backwards,
                "timestamps earlier than the previous request's, clamped to it".to_string(),
            ),
            (c.folded, "requests folded into the device (--wrap)".to_string()),
            (c.split, "folded requests split at the device's end".to_string()),
            (
                c.trims_clipped,
                "trims reaching past the device's end clipped to it (or skipped if wholly past it)"
                    .to_string(),
            ),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect()
    }

    fn err(&self, field: &str, msg: impl Into<String>) -> SimError {
        SimError::Trace {
            file: self.path.display().to_string(),
            line: self.line,
            field: field.to_string(),
            message: msg.into(),
        }
    }

    /// One request placed on the device: checked, or folded and split (`wrap`).
    fn place(
        &mut self,
        arrival: Nanos,
        kind: ReqKind,
        offset: u64,
        len: u64,
        idle_before: Nanos,
    ) -> Result<(), SimError> {
        let cap = self.opts.capacity;
        // (The idle period goes before the first piece only.)
        let mut idle = Some(idle_before);
        let mut push = |me: &mut TraceReader, offset, len| {
            me.pending.push_back(Request {
                arrival,
                kind,
                offset,
                len,
                class: ftl::DataClass::NORMAL,
                idle_before: idle.take().unwrap_or(Nanos::ZERO),
            })
        };
        if kind == ReqKind::Flush {
            push(self, 0, 0);
            return Ok(());
        }
        let Some(end) = offset.checked_add(len) else {
            return Err(self.err(
                "offset",
                format!("{offset} + {len} bytes overflow a 64-bit byte offset"),
            ));
        };
        if end <= cap {
            push(self, offset, len);
            return Ok(());
        }
        if kind == ReqKind::Trim && self.opts.fit && !self.opts.wrap {
            self.counts.trims_clipped += 1;
            if offset < cap {
                push(self, offset, cap - offset);
            }
            return Ok(());
        }
        if !self.opts.wrap {
            return Err(self.err(
                "offset",
                format!(
                    "bytes {offset}..{end} are past the device's {cap} bytes: use a device of at least {end} bytes (--fit), or fold addresses into this one (--wrap, `wrap = true` under [trace])"
                ),
            ));
        }
        if len >= cap {
            if kind == ReqKind::Trim {
                self.counts.trims_clipped += 1;
                push(self, 0, cap);
                return Ok(());
            }
            return Err(self.err(
                "size",
                format!("{len} bytes exceed the device's {cap} bytes"),
            ));
        }
        // Every byte address a goes to a mod cap; a request crossing the end is split.
        self.counts.folded += 1;
        let at = offset % cap;
        let first = len.min(cap - at);
        push(self, at, first);
        if first < len {
            self.counts.split += 1;
            push(self, 0, len - first);
        }
        Ok(())
    }

    /// The next line as text: blkparse may carry Latin-1 process names (taken as they
    /// are); elsewhere bytes that are not UTF-8 are an error naming the line.
    fn next_line(&mut self) -> Option<Result<String, SimError>> {
        let mut buf = Vec::new();
        match self.input.read_until(b'\n', &mut buf) {
            Ok(0) => None,
            Ok(_) => {
                self.line += 1;
                Some(match String::from_utf8(buf) {
                    Ok(s) => Ok(s),
                    Err(e) if self.format == TraceFormat::Blkparse => {
                        Ok(String::from_utf8_lossy(e.as_bytes()).into_owned())
                    }
                    Err(e) => Err(self.err(
                        "line",
                        format!(
                            "not UTF-8 text (byte {} of the line)",
                            e.utf8_error().valid_up_to() + 1
                        ),
                    )),
                })
            }
            Err(e) => Some(Err(SimError::Io(format!("{}: {e}", self.path.display())))),
        }
    }
}

impl RequestSource for TraceReader {
    fn notes(&self) -> Vec<String> {
        self.counted()
    }

    fn next_request(&mut self) -> Option<Result<Request, SimError>> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                self.counts.requests += 1;
                return Some(Ok(r));
            }
            if self.done {
                return None;
            }
            let text = match self.next_line() {
                Some(Ok(t)) => t,
                Some(Err(e)) => return Some(Err(e)),
                None => {
                    self.done = true;
                    if self.counts.requests == 0 {
                        let hint = match self.format {
                            TraceFormat::Blkparse => format!(
                                "; blkparse: no {} events — many traces hold only D events (--blkparse-action D)",
                                self.opts.blkparse_action.letter()
                            ),
                            _ if self.counts.other_devices > 0 => {
                                "; every request was for another device (--device)".into()
                            }
                            _ => String::new(),
                        };
                        return Some(Err(SimError::Io(format!(
                            "no requests in {}{hint}",
                            self.path.display()
                        ))));
                    }
                    return None;
                }
            };
            let parsed = match self.parse_line(&text) {
                Ok(Some(p)) => p,
                Ok(None) => continue,
                Err(e) => return Some(Err(e)),
            };
            let device = self.device.get_or_insert_with(|| parsed.device.clone());
            if device != ALL_DEVICES && *device != parsed.device {
                self.counts.other_devices += 1;
                continue;
            }
            if self.origin.is_none() {
                // The later part of a recording counts from the earlier part's start (its
                // last request is this one's previous).
                if let Some(r) = self.opts.resume.filter(|r| parsed.time >= r.last) {
                    self.origin = Some(r.first);
                    self.last = Nanos(r.last - r.first);
                }
            }
            // `last` is the previous request's arrival once there is one.
            let had_previous = self.origin.is_some();
            let origin = *self.origin.get_or_insert(parsed.time);
            let since = parsed.time.saturating_sub(origin);
            if since as f64 > MAX_TRACE_SECONDS * 1e9 {
                return Some(Err(self.err(
                    "time",
                    format!(
                        "{:.0} s after the first request: past the latest time accepted ({MAX_TRACE_SECONDS:e} s)",
                        since as f64 / 1e9
                    ),
                )));
            }
            let mut arrival = Nanos(since);
            if parsed.time < origin || arrival < self.last {
                self.counts.backwards += 1;
                arrival = self.last;
            }
            // A long enough gap since the previous request is idle time for the FTL.
            let mut idle = match self.opts.idle_after {
                Some(after) if had_previous => arrival.saturating_sub(self.last + after),
                _ => Nanos::ZERO,
            };
            self.last = arrival;
            for (kind, offset, len) in parsed.reqs {
                if kind != ReqKind::Flush && len == 0 {
                    self.counts.zero_length += 1;
                    continue;
                }
                if let Err(e) = self.place(arrival, kind, offset, len, idle) {
                    return Some(Err(e));
                }
                idle = Nanos::ZERO;
            }
        }
    }
}
