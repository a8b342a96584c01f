//! The deterministic simulation engine: a request queue with a pluggable scheduler in front
//! of an FTL, per-die/per-channel timelines, open-loop replay and closed-loop load, and
//! per-request latency.
//!
//! The FTL runs each dispatched request to completion at once (its logical state changes
//! immediately); the flash operations it performed are then placed on the timelines, no
//! earlier than the request's dispatch time, and the request completes when its last
//! operation does. Foreground GC therefore shows up in the latency of the write that
//! triggered it, and GC on one die does not delay requests served by another.
//!
//! Requests are split into logical pages: a write touching part of a page rewrites the whole
//! page (as a page-mapped FTL without sub-page mapping does; no read-modify-write is
//! simulated), and a trim discards only the pages it covers completely.
//!
//! Trims and flushes are **barriers**, as SATA's non-queued DSM TRIM and FLUSH CACHE are:
//! one starts when every die and channel has finished the work issued before it, then its
//! own flash operations run (a flush's sealing pads and trim-log page; a trim's log page when
//! it fills one), and a trim adds the firmware time of its map updates
//! ([`Engine::set_map_update_cost`] per mapped page dropped). A trim behind seconds of
//! queued writes therefore waits for them, as it does on a drive.

mod load;

use self::load::Lookahead;
use crate::metrics::Metrics;
use crate::request::{ReqKind, Request};
use crate::timeline::Timeline;
use crate::workload::RequestSource;
use crate::SimError;
use ftl::{DataClass, FlashOp, Ftl, FtlCounters, FtlError};
use nand::{Lpn, Nanos};
use std::collections::VecDeque;

/// Default firmware time to drop one mapped page on a trim: 100 ns, a few dozen cycles of an
/// embedded controller core for the map entry, the block's valid count and the trim list
/// (a RAM update; the trim-log page, when one fills, is a real program on the timeline).
pub const DEFAULT_MAP_UPDATE: Nanos = Nanos(100);

/// Default firmware time of one search of the chip's shared-pages table: AP §6.1's figure
/// (~300 ns per entry on its 800 MHz Cortex-A9), charged per look-up the FTL counts.
pub const DEFAULT_PAIRING_LOOKUP: Nanos = Nanos(300);

/// At most this many queued writes are served ahead of one critical page (request
/// feedback); a block's LSB run is far shorter on every pairing layout.
const FEEDBACK_LIMIT: u32 = 64;

/// Whether request `q` writes any critical page (its hint, or a page in `ranges`).
fn writes_critical(ranges: &[(u64, u64)], page: u64, q: &Request) -> bool {
    if q.class.critical {
        return true;
    }
    if q.len == 0 || ranges.is_empty() {
        return false;
    }
    let (first, last) = (q.offset / page, (q.offset + q.len - 1) / page);
    let i = ranges.partition_point(|r| r.1 <= first);
    ranges.get(i).is_some_and(|r| r.0 <= last)
}

/// Chooses which queued request the FTL serves next.
pub trait Scheduler {
    /// Short name.
    fn name(&self) -> &'static str;
    /// Queues an arrived request.
    fn push(&mut self, r: Request);
    /// The next request to dispatch.
    fn pop(&mut self) -> Option<Request>;
    /// Requests waiting.
    fn len(&self) -> usize;
    /// The first queued request (in dispatch order) that `pred` accepts, left queued.
    fn peek_first(&self, pred: &mut dyn FnMut(&Request) -> bool) -> Option<&Request>;
    /// Takes the first queued request (in dispatch order) that `pred` accepts, out of
    /// order: what AP's request feedback does with "the next queued non-critical write".
    fn take_first(&mut self, pred: &mut dyn FnMut(&Request) -> bool) -> Option<Request>;
    /// Whether nothing waits.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// First in, first out.
#[derive(Debug, Default)]
pub struct Fifo(VecDeque<Request>);

impl Scheduler for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn push(&mut self, r: Request) {
        self.0.push_back(r);
    }
    fn pop(&mut self) -> Option<Request> {
        self.0.pop_front()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn peek_first(&self, pred: &mut dyn FnMut(&Request) -> bool) -> Option<&Request> {
        self.0.iter().find(|r| pred(r))
    }
    fn take_first(&mut self, pred: &mut dyn FnMut(&Request) -> bool) -> Option<Request> {
        let i = self.0.iter().position(pred)?;
        self.0.remove(i)
    }
}

/// When the engine gives the FTL its background hook ([`Ftl::tick`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Background {
    /// During host idle periods only (the default: request streams are served as before).
    #[default]
    Idle,
    /// Also after every request.
    EveryRequest,
}

/// At most this many background steps per idle period or request (each `tick` call is one
/// step; an FTL's tick does a bounded amount of work).
const MAX_TICKS: u32 = 1024;

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadMode {
    /// At their own timestamps (trace replay, rate-limited synthetic load).
    OpenLoop,
    /// `queue_depth` requests outstanding: a new one arrives when one completes.
    ClosedLoop {
        /// Outstanding requests.
        queue_depth: u32,
    },
}

/// Progress of a run, for progress bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Requests completed.
    pub done: u64,
    /// Requests still to come, if known.
    pub remaining: Option<u64>,
    /// Simulated time.
    pub now: Nanos,
}

/// Page-granular deterministic data for (logical page, version): what bytes mode writes and
/// checks reads against.
pub fn page_pattern(lpn: u64, version: u32, out: &mut [u8]) {
    nand::pattern::fill(out, lpn << 32 ^ version as u64);
}

/// Whether `data` is [`page_pattern`]`(lpn, version)`.
pub fn page_matches(lpn: u64, version: u32, data: &[u8]) -> bool {
    nand::pattern::matches(data, lpn << 32 ^ version as u64)
}

/// The engine.
pub struct Engine {
    ftl: crate::SimVolume,
    /// Firmware time per mapped page a trim drops.
    map_update: Nanos,
    /// Firmware time per shared-pages table look-up.
    pairing_lookup: Nanos,
    /// Completion times of requests served ahead of their turn by request feedback since
    /// the run loop last collected them (they occupy device slots like any other).
    fed: Vec<Nanos>,
    timeline: Timeline,
    sched: Box<dyn Scheduler>,
    page: u64,
    logical: u64,
    bytes_mode: bool,
    /// Version of each logical page's current content (0 = never written / trimmed).
    shadow: Vec<u32>,
    ops: Vec<FlashOp>,
    buf: Vec<u8>,
    metrics: Metrics,
    clock: Nanos,
    /// Logical page ranges whose writes are critical (sorted, disjoint, half-open).
    critical: Vec<(u64, u64)>,
    background: Background,
    /// Simulated time the host spent idle.
    idle_time: Nanos,
    /// Requests the device serves at once (`None`: every queued request is dispatched at
    /// once); the others wait in the scheduler.
    slots: Option<usize>,
    /// Total time requests waited in the scheduler before dispatch.
    queue_wait: Nanos,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("logical_pages", &self.logical)
            .field("bytes_mode", &self.bytes_mode)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// An engine over `ftl` on a chip with `dies` dies and `channels` channels. In bytes mode
    /// (`bytes_mode`) the engine writes real page patterns and verifies every read.
    pub fn new(mut ftl: crate::SimVolume, dies: usize, channels: usize, bytes_mode: bool) -> Self {
        // Operations of formatting or mounting happened before time starts: they count in
        // the FTL's counters but are not charged to the first request.
        ftl.take_ops(&mut Vec::new());
        let page = ftl.page_size() as u64;
        let logical = ftl.logical_pages();
        // The controller's decode engines are a resource of the timeline.
        let engines = ftl.controller().config().ecc_engines;
        Engine {
            map_update: DEFAULT_MAP_UPDATE,
            pairing_lookup: DEFAULT_PAIRING_LOOKUP,
            fed: Vec::new(),
            timeline: Timeline::new(dies, channels, engines),
            sched: Box::new(Fifo::default()),
            page,
            logical,
            bytes_mode,
            shadow: if bytes_mode {
                vec![0; logical as usize]
            } else {
                Vec::new()
            },
            ops: Vec::new(),
            buf: vec![0; if bytes_mode { page as usize } else { 0 }],
            metrics: Metrics::default(),
            clock: Nanos::ZERO,
            critical: Vec::new(),
            background: Background::Idle,
            idle_time: Nanos::ZERO,
            slots: None,
            queue_wait: Nanos::ZERO,
            ftl,
        }
    }

    /// When the FTL's background hook runs.
    pub fn set_background(&mut self, b: Background) {
        self.background = b;
    }

    /// Limits the requests the device serves at once (its internal queue): a request is
    /// dispatched only while fewer than `slots` are in service; the others wait in the
    /// scheduler, where a scheme can look at them (`Scheduler::peek_first`). `None` (the
    /// default) dispatches every request as soon as it is queued.
    pub fn set_device_slots(&mut self, slots: Option<usize>) {
        self.slots = slots.map(|s| s.max(1));
    }

    /// The controller's firmware time to drop one mapped page on a trim (map entry, valid
    /// count, trim list); default [`DEFAULT_MAP_UPDATE`].
    pub fn set_map_update_cost(&mut self, t: Nanos) {
        self.map_update = t;
    }

    /// The controller's firmware time per search of the shared-pages table (AP's
    /// placement and GC; the FTL counts them); default [`DEFAULT_PAIRING_LOOKUP`].
    pub fn set_pairing_lookup_cost(&mut self, t: Nanos) {
        self.pairing_lookup = t;
    }

    /// Total time requests have waited in the scheduler for a device slot.
    pub fn queue_wait(&self) -> Nanos {
        self.queue_wait
    }

    /// Simulated time the host has spent idle (idle periods of the workload).
    pub fn idle_time(&self) -> Nanos {
        self.idle_time
    }

    /// Gives the FTL its background hook at `at` until it reports no more work (bounded);
    /// the operations it performs go on the timelines from `at` on, charged to no request.
    fn background_work(&mut self, at: Nanos) -> Result<(), SimError> {
        for _ in 0..MAX_TICKS {
            if !self.background_step(at)?.0 {
                break;
            }
        }
        Ok(())
    }

    /// One call of the FTL's background hook at `at`, its operations placed on the
    /// timelines from `at` on: whether it did work, and when its operations complete
    /// (`at` if it issued none).
    fn background_step(&mut self, at: Nanos) -> Result<(bool, Nanos), SimError> {
        let worked = self.ftl.tick(at)?;
        self.ops.clear();
        self.ftl.take_ops(&mut self.ops);
        let done = if self.ops.is_empty() {
            at
        } else {
            at.max(self.timeline.schedule(&self.ops, at))
        };
        Ok((worked, done))
    }

    /// The host's idle period before open-loop request `r`: the gap is already in its
    /// arrival time, so the host went quiet once the clock reached the gap's start.
    fn idle_before(&mut self, r: &Request) -> Result<(), SimError> {
        if r.idle_before > Nanos::ZERO {
            let from = r.arrival.saturating_sub(r.idle_before).max(self.clock);
            self.idle(from, r.arrival.saturating_sub(from))?;
        }
        Ok(())
    }

    /// A host idle period of `len` from `from`: the FTL's background hook one step at a
    /// time, then the clock moves on. A step starts when the previous step's operations
    /// have completed, and none starts at or after the period's end: the firmware keeps one
    /// background step in flight and issues none once a host request has arrived, so the
    /// request after the period waits for at most one step (WAO-GC's partial steps are
    /// what bounds it). `nandlab serve` gives idle time the same way, on the wall clock.
    /// At most [`MAX_TICKS`] steps per period.
    fn idle(&mut self, from: Nanos, len: Nanos) -> Result<(), SimError> {
        let end = from + len;
        let mut at = from;
        for _ in 0..MAX_TICKS {
            if at >= end {
                break;
            }
            let (worked, done) = self.background_step(at)?;
            at = done;
            if !worked {
                break;
            }
        }
        self.idle_time += len;
        self.clock = self.clock.max(from + len);
        self.timeline.advance_to(self.clock);
        Ok(())
    }

    /// Marks writes to the logical pages of these byte ranges `(offset, len)` critical (AP:
    /// the file system's metadata), whatever the request's own hint; a page is critical if
    /// the range covers any byte of it. Ranges must lie within the volume.
    pub fn set_critical_ranges(&mut self, ranges: &[(u64, u64)]) -> Result<(), SimError> {
        let mut pages = Vec::with_capacity(ranges.len());
        for &(offset, len) in ranges {
            let end = offset
                .checked_add(len)
                .filter(|&e| len > 0 && e <= self.capacity());
            let Some(end) = end else {
                return Err(SimError::OutOfRange {
                    offset,
                    len,
                    capacity: self.capacity(),
                });
            };
            pages.push((offset / self.page, end.div_ceil(self.page)));
        }
        pages.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(pages.len());
        for (a, b) in pages {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.critical = merged;
        Ok(())
    }

    /// The class a write of `lpn` carries: the request's hint, made critical inside a
    /// critical range.
    fn class_of(&self, lpn: u64, class: DataClass) -> DataClass {
        if self.critical.is_empty() {
            return class;
        }
        let i = self.critical.partition_point(|r| r.1 <= lpn);
        let critical = self.critical.get(i).is_some_and(|r| r.0 <= lpn);
        DataClass {
            critical: class.critical || critical,
            ..class
        }
    }

    /// Replaces the scheduler.
    pub fn set_scheduler(&mut self, s: Box<dyn Scheduler>) {
        self.sched = s;
    }

    /// Bytes the volume exposes.
    pub fn capacity(&self) -> u64 {
        self.logical * self.page
    }

    /// The FTL.
    pub fn ftl(&self) -> &dyn Ftl {
        &*self.ftl
    }

    /// The FTL as a volume of its scheme (its controller, recovery report, invariants).
    pub fn volume(&self) -> &crate::SimVolume {
        &self.ftl
    }

    /// The metrics so far.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Simulated time reached.
    pub fn clock(&self) -> Nanos {
        self.clock
    }

    /// Per-die busy time.
    pub fn die_busy(&self) -> &[Nanos] {
        self.timeline.die_busy()
    }

    /// Brings the device to steady state without timing: writes every logical page of the
    /// first `footprint` share of the volume once (if `fill`), then overwrites uniformly
    /// random pages of it in windows of a quarter of the volume until the write
    /// amplification of a window is within `tolerance` of the previous one, or
    /// `max_overwrite` × the volume has been written. The rest of the volume stays
    /// unwritten. Returns the pages written.
    pub fn precondition(
        &mut self,
        fill: bool,
        max_overwrite: f64,
        tolerance: f64,
        footprint: f64,
        seed: u64,
    ) -> Result<u64, SimError> {
        let mut written = 0;
        let mut t = self.clock;
        let span = ((self.logical as f64 * footprint.clamp(0.0, 1.0)) as u64).max(1);
        if fill {
            for lpn in 0..span {
                self.write_page(t, lpn, DataClass::NORMAL)?;
                written += 1;
                t += Nanos::from_us(1);
                self.ops.clear();
                self.ftl.take_ops(&mut self.ops);
            }
        }
        let window = (self.logical / 4).max(1);
        let limit = (self.logical as f64 * max_overwrite) as u64;
        let mut x = seed | 1;
        let mut prev: Option<f64> = None;
        let mut done = 0;
        while done < limit {
            let before = *self.ftl.counters();
            for _ in 0..window.min(limit - done) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let lpn = ((x as u128 * span as u128) >> 64) as u64;
                self.write_page(t, lpn, DataClass::NORMAL)?;
                t += Nanos::from_us(1);
                self.ops.clear();
                self.ftl.take_ops(&mut self.ops);
            }
            done += window;
            written += window;
            let after = self.ftl.counters();
            let w = (after.total_programs() - before.total_programs()) as f64
                / (after.host_writes - before.host_writes).max(1) as f64;
            if let Some(p) = prev {
                if (w - p).abs() <= tolerance * p {
                    break;
                }
            }
            prev = Some(w);
        }
        self.ops.clear();
        self.clock = t;
        self.timeline.advance_to(t);
        Ok(written)
    }

    fn write_page(&mut self, now: Nanos, lpn: u64, class: DataClass) -> Result<(), SimError> {
        let l = Lpn::checked(lpn, self.logical).expect("engine keeps pages in range");
        let class = self.class_of(lpn, class);
        if self.bytes_mode {
            let v = self.shadow[lpn as usize].wrapping_add(1).max(1);
            page_pattern(lpn, v, &mut self.buf);
            self.ftl.write_with(now, l, &self.buf, class)?;
            self.shadow[lpn as usize] = v;
        } else {
            self.ftl.write_with(now, l, &[], class)?;
        }
        Ok(())
    }

    fn read_page(&mut self, now: Nanos, lpn: u64) -> Result<(), SimError> {
        let l = Lpn::checked(lpn, self.logical).expect("engine keeps pages in range");
        let critical = self.class_of(lpn, DataClass::NORMAL).critical;
        let decodes = if critical {
            self.metrics.critical_reads += 1;
            self.ftl.ecc_stats().page_decodes
        } else {
            0
        };
        let r = if self.bytes_mode {
            self.ftl.read(now, l, &mut self.buf)
        } else {
            self.ftl.read(now, l, &mut [])
        };
        if critical {
            self.note_critical_risk(decodes, r.is_err());
        }
        match r {
            Ok(()) => {
                if self.bytes_mode {
                    let v = self.shadow[lpn as usize];
                    let good = if v == 0 {
                        self.buf.iter().all(|&b| b == 0)
                    } else {
                        page_matches(lpn, v, &self.buf)
                    };
                    self.metrics.verified_reads += 1;
                    if !good {
                        self.metrics.mismatches += 1;
                    }
                }
                Ok(())
            }
            Err(FtlError::Unreadable(_)) => {
                self.metrics.read_errors += 1;
                if critical {
                    self.metrics.critical_read_errors += 1;
                }
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Books a critical read that decoded exactly one page (`decodes`: the controller's
    /// decode count before it) beside the error model's failure probability for it.
    fn note_critical_risk(&mut self, decodes: u64, failed: bool) {
        if self.ftl.ecc_stats().page_decodes != decodes + 1 {
            return;
        }
        let Some(risk) = self.ftl.last_read_risk() else {
            return;
        };
        let c = &mut self.metrics.critical_risk;
        c.decodes += 1;
        c.failures += failed as u64;
        c.lsb += risk.lsb as u64;
        c.expected += risk.p;
        c.expected_lsb += risk.p_lsb;
        c.expected_msb += risk.p_msb;
    }

    /// Serves one request dispatched at `at`; returns its completion time.
    fn dispatch(&mut self, r: &Request, at: Nanos) -> Result<Nanos, SimError> {
        if r.kind != ReqKind::Flush
            && (r.len == 0 || r.offset.saturating_add(r.len) > self.capacity())
        {
            return Err(SimError::OutOfRange {
                offset: r.offset,
                len: r.len,
                capacity: self.capacity(),
            });
        }
        let ps = self.page;
        self.ftl.sync_dies(self.timeline.die_free());
        let mut dropped = 0;
        let lookups = self.ftl.counters().pairing_lookups;
        // Completion of this request's operations scheduled before a feedback request.
        let mut partial = at;
        // Look-ups of the requests served ahead of this one (charged to them).
        let mut fed_lookups = 0;
        match r.kind {
            ReqKind::Write | ReqKind::Read => {
                let first = r.offset / ps;
                let last = (r.offset + r.len - 1) / ps;
                for lpn in first..=last {
                    if r.kind == ReqKind::Write {
                        fed_lookups += self.feedback(lpn, r.class, at, &mut partial)?;
                        self.write_page(at, lpn, r.class)?;
                    } else {
                        self.read_page(at, lpn)?;
                    }
                }
            }
            ReqKind::Trim => {
                // Only whole pages are discarded.
                dropped = self.ftl.counters().trimmed_pages;
                let first = r.offset.div_ceil(ps);
                let end = (r.offset + r.len) / ps;
                if end > first {
                    // One discard, one range: the FTL logs it as one record.
                    let lpn = Lpn::checked(first, self.logical).expect("in range");
                    self.ftl.trim_range(at, lpn, end - first)?;
                    if self.bytes_mode {
                        self.shadow[first as usize..end as usize].fill(0);
                    }
                }
            }
            ReqKind::Flush => self.ftl.flush(at)?,
        }
        self.ops.clear();
        self.ftl.take_ops(&mut self.ops);
        // The request's own service: its operations on idle dies, plus its firmware work.
        let own = self.timeline.isolated(&self.ops);
        let (done, service) = match r.kind {
            ReqKind::Trim | ReqKind::Flush => {
                let start = at.max(self.timeline.all_free());
                let dropped = self.ftl.counters().trimmed_pages - dropped;
                let map = Nanos(self.map_update.0.saturating_mul(dropped));
                if let Some(b) = self.ftl.latency_bound() {
                    // The barrier's own flash work against the scheme's derived bound.
                    let (bound, over) = match r.kind {
                        ReqKind::Trim => (b.trim_ns, &mut self.metrics.trim_overruns),
                        _ => (b.flush_ns, &mut self.metrics.flush_overruns),
                    };
                    if bound > 0 && own.0 > bound {
                        *over += 1;
                    }
                }
                let done = self.timeline.schedule(&self.ops, start).max(start) + map;
                (done, own + map)
            }
            _ => {
                let firmware = self.ftl.counters().pairing_lookups - lookups - fed_lookups;
                let lookups = Nanos(self.pairing_lookup.0.saturating_mul(firmware));
                let done = partial.max(self.timeline.schedule(&self.ops, at)) + lookups;
                (done, own + lookups)
            }
        };
        self.metrics.record(r.kind, r.len, r.arrival, service, done);
        self.queue_wait += at.saturating_sub(r.arrival);
        self.clock = self.clock.max(at);
        if self.background == Background::EveryRequest {
            self.background_work(at)?;
        }
        Ok(done)
    }

    /// AP's request feedback before a write of `lpn` with hint `hint` dispatched at `at`:
    /// while the page is critical and the FTL says its next slot would be refused (an LSB
    /// page), serve the first queued write that holds no critical page ahead of it, so it
    /// fills the slot instead of a pad. The current request's operations so far go on the
    /// timelines first (`partial`: their completion). Returns the look-ups the served
    /// requests were charged.
    fn feedback(
        &mut self,
        lpn: u64,
        hint: DataClass,
        at: Nanos,
        partial: &mut Nanos,
    ) -> Result<u64, SimError> {
        let class = self.class_of(lpn, hint);
        let mut charged = 0;
        if !class.critical || self.sched.is_empty() {
            return Ok(0);
        }
        for _ in 0..FEEDBACK_LIMIT {
            if !self.ftl.feedback_wanted(lpn, class) {
                break;
            }
            let (ranges, page) = (&self.critical, self.page);
            let Some(q) = self.sched.take_first(&mut |q| {
                q.kind == ReqKind::Write && q.arrival <= at && !writes_critical(ranges, page, q)
            }) else {
                break;
            };
            self.ops.clear();
            self.ftl.take_ops(&mut self.ops);
            *partial = (*partial).max(self.timeline.schedule(&self.ops, at));
            let before = self.ftl.counters().pairing_lookups;
            let done = self.dispatch(&q, at)?;
            charged += self.ftl.counters().pairing_lookups - before;
            self.fed.push(done);
            self.metrics.request_feedbacks += 1;
        }
        Ok(charged)
    }

    /// Runs every request of `source`. Arrival times are offset by the engine's clock at
    /// the start (so a run after preconditioning starts then). `progress` is called every
    /// few thousand requests.
    pub fn run(
        &mut self,
        source: &mut dyn RequestSource,
        mode: LoadMode,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), SimError> {
        self.run_from(self.clock, source, mode, progress)
    }

    /// [`run`](Engine::run) with arrivals counted from `base` rather than from now: a
    /// trace that continues an earlier part's times (whose run started at `base`). An
    /// arrival already past is served when the device is free.
    pub fn run_from(
        &mut self,
        base: Nanos,
        source: &mut dyn RequestSource,
        mode: LoadMode,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<(), SimError> {
        debug_assert!(base <= self.clock, "arrivals count from the past or now");
        let mut source = Lookahead::new(source);
        let done = match mode {
            LoadMode::OpenLoop if self.slots.is_some() => {
                self.run_open_slots(&mut source, base, progress)?
            }
            LoadMode::OpenLoop => self.run_open(&mut source, base, progress)?,
            LoadMode::ClosedLoop { queue_depth } => {
                self.run_closed(&mut source, base, queue_depth, progress)?
            }
        };
        self.clock = self.clock.max(self.metrics.end);
        progress(Progress {
            done,
            remaining: Some(0),
            now: self.clock,
        });
        Ok(())
    }

    /// Forgets the metrics so far (a warm-up's requests are not measured); the clock,
    /// the device and its timelines go on.
    pub fn reset_metrics(&mut self) {
        self.metrics = Metrics::default();
    }

    /// FTL counters now.
    pub fn counters(&self) -> FtlCounters {
        *self.ftl.counters()
    }
}
