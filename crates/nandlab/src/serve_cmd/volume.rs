//! The served volume: byte addressing over the FTL's pages (read-modify-write of partial
//! pages), its simulated clock, the service-time statistics, idle-time work, and the NBD
//! export (with timing emulation's hooks).

use super::emulation::Emulation;
use super::recorder::Recorder;
use crate::nbd::{self, Export};
use crate::volume_cmd::{self, Vol};
use anyhow::{Context, Result};
use ftl::FtlError;
use nand::{Lpn, Nanos};
use std::time::{Duration, Instant};

/// No request for this long, and the FTL gets idle time (see the module docs); a replay
/// of a recorded trace with `--idle-after 0.2` does the same.
pub(super) const IDLE_AFTER: Duration = Duration::from_nanos(sim::trace::SERVE_IDLE_AFTER.0);
/// Idle-time calls per pass of the accept loop (the lock is released between passes).
pub(super) const IDLE_TICKS: usize = 16;
/// After the FTL said it has no idle-time work, it is asked again this long later if no
/// request came meanwhile (a request makes it due again [`IDLE_AFTER`] after it).
pub(super) const IDLE_RECHECK: Duration = Duration::from_secs(1);

/// What to do with a whole page: (volume, logical page, offset in the request's data).
type WholePage<'a> = dyn FnMut(&mut Volume, u64, usize) -> Result<(), u32> + 'a;
/// What to do with a partial page's image: (page buffer, bytes of the request in it,
/// offset in the request's data).
type PartialPage<'a> = dyn FnMut(&mut [u8], std::ops::Range<usize>, usize) + 'a;

/// A volume with byte addressing and a simulated clock that follows the wall clock from
/// where the image's saved clock left off (data served again a day later is a day older),
/// advancing at least 1 µs per operation.
pub(super) struct Volume {
    pub(super) vol: Vol,
    t: Nanos,
    /// Simulated time at `started`.
    base: Nanos,
    started: std::time::Instant,
    pub(super) page: usize,
    pub(super) size: u64,
    closed: bool,
    pub(super) recorder: Option<Recorder>,
    /// The FTL's flash operations of the last call (drained after every call, so the log
    /// never grows).
    ops: Vec<ftl::FlashOp>,
    /// Simulated service time of page reads, page writes, trims (one per discard range)
    /// and flushes (index 0 to 3).
    service: [Service; 4],
    /// When the last request was served (idle time starts [`IDLE_AFTER`] later).
    last_request: Instant,
    /// When the FTL last said it had no idle-time work (`None`: a request came since).
    idle_exhausted: Option<Instant>,
    /// Idle-time hook calls that reported work, and errors it returned.
    idle_ticks: u64,
    idle_errors: u64,
    /// `--timing emulate`: the device's timelines and the replies' lag.
    pub(super) emulation: Option<Emulation>,
}

/// Simulated service time of one kind of page operation: the operations a call issued,
/// one after another (array, transfer and decode time: what they take on one die).
#[derive(Debug, Clone, Copy, Default)]
struct Service {
    count: u64,
    total_ns: u64,
    max_ns: u64,
}

impl Service {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "count": self.count,
            "mean_us": if self.count > 0 { self.total_ns as f64 / self.count as f64 / 1e3 } else { 0.0 },
            "max_us": self.max_ns as f64 / 1e3,
        })
    }
}

impl Volume {
    pub(super) fn new(vol: Vol, now: Nanos) -> Self {
        let page = vol.page_size();
        let size = vol.logical_pages() * page as u64;
        let mut v = Volume {
            vol,
            t: now,
            base: now,
            started: std::time::Instant::now(),
            page,
            size,
            closed: false,
            recorder: None,
            ops: Vec::new(),
            service: [Service::default(); 4],
            last_request: Instant::now(),
            idle_exhausted: None,
            idle_ticks: 0,
            idle_errors: 0,
            emulation: None,
        };
        // What format or mount did is not a host request's.
        v.drain(None);
        v
    }

    /// Drains the FTL's operation log; for a page read (`Some(0)`) or write (`Some(1)`)
    /// books their time. With timing emulation the operations go on the device's
    /// timelines at the current simulated time.
    fn drain(&mut self, kind: Option<usize>) {
        self.vol.take_ops(&mut self.ops);
        if let Some(em) = self.emulation.as_mut() {
            em.schedule(&self.ops, self.t);
        }
        if let Some(k) = kind {
            let ns: u64 = self
                .ops
                .iter()
                .map(|o| o.array.0 + o.transfer.0 + o.ecc.0)
                .sum();
            let s = &mut self.service[k];
            s.count += 1;
            s.total_ns += ns;
            s.max_ns = s.max_ns.max(ns);
        }
        self.ops.clear();
    }

    /// The simulated time of a call: the wall clock since the start, at least a step past
    /// the last call's (1 µs; 1 ns with timing emulation, whose simulated time must not
    /// run ahead of the wall clock).
    fn tick(&mut self) -> Nanos {
        let wall = self.base + Nanos(self.started.elapsed().as_nanos() as u64);
        let step = if self.emulation.is_some() {
            Nanos(1)
        } else {
            Nanos::from_us(1)
        };
        self.t = (self.t + step).max(wall);
        self.t
    }

    /// The simulated time of wall-clock instant `at`.
    fn sim_of(&self, at: Instant) -> Nanos {
        self.base + Nanos(at.saturating_duration_since(self.started).as_nanos() as u64)
    }

    /// The wall-clock instant of simulated time `t`.
    fn wall_of(&self, t: Nanos) -> Instant {
        self.started + Duration::from_nanos(t.0.saturating_sub(self.base.0))
    }

    fn lpn(&self, l: u64) -> Result<Lpn, u32> {
        Lpn::checked(l, self.vol.logical_pages()).map_err(|_| nbd::EINVAL)
    }

    fn errno(e: FtlError) -> u32 {
        match e {
            FtlError::NoSpace => nbd::ENOSPC,
            FtlError::OutOfRange { .. } | FtlError::BufferSize { .. } => nbd::EINVAL,
            _ => nbd::EIO,
        }
    }

    /// Discards the whole pages of the byte range as one range (the FTL logs it as one
    /// record); a range past the export is refused before anything is discarded.
    fn trim_whole(&mut self, offset: u64, len: u64) -> Result<(), u32> {
        let ps = self.page as u64;
        let first = offset.div_ceil(ps);
        let end = offset.saturating_add(len) / ps;
        if end <= first {
            return Ok(());
        }
        let lpn = self.lpn(first)?;
        let t = self.tick();
        let r = self
            .vol
            .trim_range(t, lpn, end - first)
            .map_err(Self::errno);
        self.drain(Some(2));
        r
    }

    fn read_page(&mut self, l: u64, buf: &mut [u8]) -> Result<(), u32> {
        let t = self.tick();
        let lpn = self.lpn(l)?;
        let r = self.vol.read(t, lpn, buf).map_err(Self::errno);
        self.drain(Some(0));
        r
    }

    fn write_page(&mut self, l: u64, buf: &[u8]) -> Result<(), u32> {
        let t = self.tick();
        let lpn = self.lpn(l)?;
        let r = self.vol.write(t, lpn, buf).map_err(Self::errno);
        self.drain(Some(1));
        r
    }

    fn check(&self) -> Result<(), u32> {
        if self.closed {
            Err(nbd::ESHUTDOWN)
        } else {
            Ok(())
        }
    }

    /// The pieces of a byte range, page by page: (logical page, range within the page,
    /// offset of the piece within the range).
    fn spans(&self, offset: u64, len: u64) -> Vec<(u64, std::ops::Range<usize>, usize)> {
        let ps = self.page as u64;
        let (mut pos, end) = (offset, offset + len);
        let mut out = Vec::new();
        while pos < end {
            let in_page = (pos % ps) as usize;
            let n = ((ps - in_page as u64).min(end - pos)) as usize;
            out.push((pos / ps, in_page..in_page + n, (pos - offset) as usize));
            pos += n as u64;
        }
        out
    }

    /// Applies `whole` to every page the byte range covers entirely, and `partial` to the
    /// image of every page it covers in part (read-modify-write).
    fn each_page(
        &mut self,
        offset: u64,
        len: u64,
        whole: &mut WholePage<'_>,
        partial: &mut PartialPage<'_>,
    ) -> Result<(), u32> {
        let mut buf = vec![0u8; self.page];
        for (l, r, at) in self.spans(offset, len) {
            if r.len() == self.page {
                whole(self, l, at)?;
            } else {
                self.read_page(l, &mut buf)?;
                partial(&mut buf, r, at);
                self.write_page(l, &buf)?;
            }
        }
        Ok(())
    }

    fn fua(&mut self, fua: bool) -> Result<(), u32> {
        if fua {
            self.sync()
        } else {
            Ok(())
        }
    }

    /// The FTL's flush, the clock saved, the image synced, and the trace written out.
    fn sync(&mut self) -> Result<(), u32> {
        let t = self.tick();
        let r = self.vol.flush(t).map_err(Self::errno);
        self.drain(Some(3));
        r?;
        volume_cmd::save_clock(&mut self.vol, t).map_err(|_| nbd::EIO)?;
        if let Some(r) = self.recorder.as_mut() {
            if let Err(e) = r.flush() {
                eprintln!("--record-trace: {e}; recording stopped");
                self.recorder = None;
            }
        }
        self.vol
            .controller_mut()
            .chip_mut()
            .sync()
            .map_err(|_| nbd::EIO)
    }

    /// A client's call: idle time starts again [`IDLE_AFTER`] from now.
    pub(super) fn requested(&mut self) {
        self.last_request = Instant::now();
        self.idle_exhausted = None;
    }

    /// The FTL's idle-time hook, if no request came for [`IDLE_AFTER`] (and, once the FTL
    /// said it had nothing to do, not again before [`IDLE_RECHECK`] unless a request came):
    /// at most [`IDLE_TICKS`] calls, stopping when one reports no more work. An error is
    /// logged (the data path reports its own to the clients) and ends the pass. Called on
    /// every pass of the accept loop, so idle time starts [`IDLE_AFTER`] after the last
    /// request, as a replay with `--idle-after` gives it.
    ///
    /// With timing emulation a step starts only once the previous step's operations have
    /// completed on the emulated device, as the simulator gives idle time: one background
    /// step in flight, so a request that arrives meanwhile waits for at most that one.
    /// Returns when to call again if the emulated device is busy with a step (`None`: at
    /// the accept loop's own pace).
    pub(super) fn idle_work(&mut self) -> Option<Instant> {
        if self.closed
            || self.last_request.elapsed() < IDLE_AFTER
            || self
                .idle_exhausted
                .is_some_and(|t| t.elapsed() < IDLE_RECHECK)
        {
            return None;
        }
        for _ in 0..IDLE_TICKS {
            let t = self.tick();
            if let Some(em) = self.emulation.as_mut() {
                // The device is still busy with the previous step (no request has come for
                // IDLE_AFTER, so nothing else is on its timelines).
                let free = em.all_free();
                if free > t {
                    return Some(self.wall_of(free));
                }
                // Placed when issued, not at the last request's arrival.
                em.start(None);
            }
            let r = self.vol.tick(t);
            self.drain(None);
            match r {
                Ok(true) => self.idle_ticks += 1,
                Ok(false) => {
                    self.idle_exhausted = Some(Instant::now());
                    return None;
                }
                Err(e) => {
                    self.idle_errors += 1;
                    self.idle_exhausted = Some(Instant::now());
                    eprintln!("idle-time work: {e}");
                    return None;
                }
            }
        }
        None
    }

    /// Flushes and writes a checkpoint; further requests fail with `ESHUTDOWN`.
    pub(super) fn close(&mut self) -> Result<()> {
        if !self.closed {
            self.closed = true;
            let t = self.tick();
            let r = self.vol.shutdown(t);
            self.drain(None);
            r?;
            volume_cmd::save_clock(&mut self.vol, t)?;
            if let Some(r) = self.recorder.as_mut() {
                r.flush().context("--record-trace")?;
            }
            self.vol.controller_mut().chip_mut().sync()?;
        }
        Ok(())
    }

    pub(super) fn stats_json(&self) -> serde_json::Value {
        // Per-cause arrays as objects keyed by cause name.
        let mut counters = serde_json::to_value(self.vol.counters()).expect("serialises");
        for key in ["reads", "programs", "erases"] {
            if let Some(serde_json::Value::Array(a)) = counters.get(key).cloned() {
                let labelled: serde_json::Map<String, serde_json::Value> = ftl::Cause::ALL
                    .iter()
                    .zip(a)
                    .map(|(c, v)| (c.name().to_string(), v))
                    .collect();
                counters[key] = serde_json::Value::Object(labelled);
            }
        }
        serde_json::json!({
            "counters": counters,
            "waf": self.vol.counters().waf(),
            "page_read": self.service[0].json(),
            "page_write": self.service[1].json(),
            "trim": self.service[2].json(),
            "flush": self.service[3].json(),
            "latency_bound": self.vol.latency_bound(),
            "ecc": {
                "reads": self.vol.controller().stats().reads,
                "corrected_bits": self.vol.controller().stats().corrected_bits,
                "max_codeword_errors": self.vol.controller().stats().max_codeword_errors,
                "uncorrectable_normal": self.vol.controller().stats().uncorrectable_normal,
                "uncorrectable_critical": self.vol.controller().stats().uncorrectable_critical,
                "miscorrections_caught": self.vol.controller().stats().miscorrections_caught,
            },
            "erase_counts": {
                "max": self.vol.erase_counts().iter().max(),
                "min": self.vol.erase_counts().iter().min(),
            },
            "idle": { "calls_with_work": self.idle_ticks, "errors": self.idle_errors },
            "emulation": self.emulation.as_ref().map(Emulation::json),
        })
    }
}

impl Export for Volume {
    fn observe(&mut self, cmd: nbd::Command, offset: u64, len: u64) {
        use nbd::Command as C;
        let Some(r) = self.recorder.as_mut() else {
            return;
        };
        match cmd {
            C::Read => r.record("R", offset, len),
            C::Write { fua } | C::WriteZeroes { fua, no_hole: true } => {
                r.record(if fua { "WFS" } else { "W" }, offset, len)
            }
            C::Flush => r.record("FN", 0, 0),
            C::Trim { fua }
            | C::WriteZeroes {
                fua,
                no_hole: false,
            } => {
                r.record("D", offset, len);
                if fua {
                    r.record("FN", 0, 0);
                }
            }
        }
    }

    fn read_at(&mut self, offset: u64, out: &mut [u8]) -> Result<(), u32> {
        self.check()?;
        let mut buf = vec![0u8; self.page];
        for (l, r, at) in self.spans(offset, out.len() as u64) {
            let n = r.len();
            if n == self.page {
                self.read_page(l, &mut out[at..at + n])?;
            } else {
                self.read_page(l, &mut buf)?;
                out[at..at + n].copy_from_slice(&buf[r]);
            }
        }
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8], fua: bool) -> Result<(), u32> {
        self.check()?;
        let page = self.page;
        self.each_page(
            offset,
            data.len() as u64,
            &mut |v, l, at| v.write_page(l, &data[at..at + page]),
            &mut |buf, r, at| {
                let n = r.len();
                buf[r].copy_from_slice(&data[at..at + n]);
            },
        )?;
        self.fua(fua)
    }

    fn trim(&mut self, offset: u64, len: u64, fua: bool) -> Result<(), u32> {
        self.check()?;
        // Whole pages are discarded; the partial pages at the ends keep their data (a trim
        // is advisory).
        self.trim_whole(offset, len)?;
        self.fua(fua)
    }

    fn write_zeroes(&mut self, offset: u64, len: u64, fua: bool, no_hole: bool) -> Result<(), u32> {
        self.check()?;
        // Whole pages: a trim reads back as zeros (a hole) — one range, however long — or
        // with NO_HOLE a page of zeros written; partial pages: read-modify-write.
        let zeros = vec![0u8; self.page];
        let ps = self.page as u64;
        let (first, end) = (offset.div_ceil(ps) * ps, (offset + len) / ps * ps);
        if !no_hole && end > first {
            // The partial head and tail, then the whole pages between as one trim.
            let mut fill = |buf: &mut [u8], r: std::ops::Range<usize>, _| buf[r].fill(0);
            let mut never = |_: &mut Volume, _, _| Ok(());
            self.each_page(offset, first - offset, &mut never, &mut fill)?;
            self.each_page(end, offset + len - end, &mut never, &mut fill)?;
            self.trim_whole(first, end - first)?;
            return self.fua(fua);
        }
        self.each_page(
            offset,
            len,
            &mut |v, l, _| {
                if no_hole {
                    return v.write_page(l, &zeros);
                }
                v.trim_whole(l * ps, ps)
            },
            &mut |buf, r, _| buf[r].fill(0),
        )?;
        self.fua(fua)
    }

    fn extents(&mut self, offset: u64, len: u64, max: usize) -> Result<Vec<(u32, bool)>, u32> {
        self.check()?;
        // The FTL's map (in RAM) says which pages hold data; the rest read as zeros.
        let ps = self.page as u64;
        let end = offset + len;
        let mut runs: Vec<(u32, bool)> = Vec::new();
        let mut pos = offset;
        while pos < end {
            let l = pos / ps;
            let mapped = self.vol.mapping(l).is_some();
            let n = (ps - pos % ps).min(end - pos);
            match runs.last_mut() {
                Some((len, m)) if *m == mapped && (*len as u64 + n) <= u32::MAX as u64 => {
                    *len += n as u32
                }
                _ => {
                    if runs.len() == max {
                        break;
                    }
                    runs.push((n as u32, mapped));
                }
            }
            pos += n;
        }
        Ok(runs)
    }

    fn flush(&mut self) -> Result<(), u32> {
        self.check()?;
        self.sync()
    }

    fn timing_start(&mut self, arrival: Option<Instant>) {
        let ready = arrival.map(|a| self.sim_of(a));
        if let Some(em) = self.emulation.as_mut() {
            em.start(ready);
        }
    }

    fn timing_end(&mut self) -> Option<Instant> {
        let done = self.emulation.as_mut()?.take_done()?;
        Some(self.wall_of(done))
    }

    fn timing_reply(&mut self, arrival: Instant, device: Duration, lag: Duration) {
        let since_start = arrival.saturating_duration_since(self.started);
        if let Some(em) = self.emulation.as_mut() {
            em.reply(since_start, device, lag);
        }
    }
}
