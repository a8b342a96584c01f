//! FLARES (Di Carlo et al., TACO 2014): a per-page ECC correction capability chosen from
//! an RBER model (P/E cycles and retention, eq. 5) mixed with the errors the decoder
//! measures, with page-rewrite alarms when a page nears the retention its strength allows.
//!
//! The pieces, one per concern:
//!
//! - [`FlaresConfig`]: every constant of the paper (Table Ib, WSIZE, MIX, target UBER,
//!   REQ_RET_TIME, the t range, the eq. 5 fit), defaults from the paper, checked by
//!   [`FlaresConfig::validate`] naming the key.
//! - [`FlaresTables`]: what the paper precomputes — `corr_table` (the smallest p per RBER
//!   range at the target UBER) and `max_ret_time(p, pecycles)` — built once at mount, so a
//!   read costs table look-ups, never a binomial sum.
//! - [`Pprof`]: the page run-time profile of §3 (p_cur, p_next, pecycles, writestamp,
//!   errc, failc) plus Alg. 2's counters, with Table II's field widths enforced
//!   (saturating).
//! - [`FlaresCore`]: Alg. 1 (`upPage`) and Alg. 2 (`FLARES`) over one profile, as pure
//!   functions of the profile, the tables and the time: the simulator's validation runs
//!   (the paper's Fig. 5) and the FTL policy ([`FlaresStrength`]) share them.
//!
//! Choices the paper leaves open (a careful firmware engineer's, written down):
//!
//! - **Codeword**: the paper encodes a whole 4 KiB page as one codeword; here the codeword
//!   is the controller's sector (`n` = sector bits), so a 4096-byte sector is the paper's
//!   setting and 512-byte sectors give the per-sector p for the same UBER.
//! - **meas_rber** divides the window's errors by the *page's* data bits and WSIZE, as
//!   Alg. 2 row 5 does; on a failed decode errc grows by p_cur + 1 (Alg. 1 row 6).
//! - **The retention check runs on every access**, not only at the end of a window: an
//!   alarm must not wait for WSIZE − 1 more reads of a page that is already past its
//!   limit. The estimation (rows 5–31) runs when WSIZE operations have been seen.
//! - **Failure zone**: "invalidate page" becomes a rewrite alarm (the FTL relocates the
//!   page, re-encoded at the new p_next); the data were read or lost by the FTL's own
//!   retry path, never returned wrong.
//! - **Wear between estimations**: p_next is estimated at the P/E count of the page's last
//!   program; when the page is programmed again after more cycles, p_next is raised by
//!   what the model's required p grew over those cycles (never lowered), so the estimate
//!   does not lag the wear (found by the smooth-aging test: without it FLARES chose 9
//!   where the model needed 10 right after a P/E boundary).
//! - **Over-correction must be sustained**: Alg. 2 resets `overc` only when it acts, so
//!   sporadic OC windows spread over a page's life (a noisy estimate near a p boundary)
//!   add up and step p down below what the model needs. Here any window that is not OC
//!   resets `overc`: p falls only after MAXOVER + 1 *consecutive* over-correction windows
//!   (§3's "the current correction capability is overestimated"), which the smooth-aging
//!   test showed is what keeps FLARES from under-correcting.
//! - **A window is WSIZE reads**: programs carry no error measurement, so they neither
//!   count in the window nor reset it (Alg. 1 only updates pecycles and the writestamp
//!   on a program); dividing errc by operations that include programs would understate
//!   the RBER by the read share.
//! - **Which retention meas_rber subtracts** (row 5's RBER_rd(pecycles, t), t unnamed): the
//!   *smallest* any of the window's reads saw, in whole hours rounded down
//!   (`Pprof::win_ret_h`, 16 bits in the profile's padding; a read after a reprogram sees
//!   the new data's small retention). The retention part grows over a window, so the
//!   errors its reads measured hold less of it than the retention at the window's end
//!   implies: subtracting that one (this code's first reading) biased meas_rber low and
//!   left FLARES one unit short right where the model's requirement steps up (25 of 3,000
//!   programs in the smooth-aging test with WSIZE 100). Subtracting the smallest never
//!   subtracts more than any read of the window held, so the blend is never pulled below
//!   the model by the window's length; the cost is a slight over-estimate in long windows
//!   of ageing data. (Zero after a reprogram inside the window, tried first, over-corrects
//!   data read a year after their program: Fig. 5d chose 63 where 49 was needed.)
//! - **p outside the RBER table**: a projected RBER above what t_max corrects selects
//!   t_max (and is counted as `beyond_range`); the FTL relies on refresh alarms then.
//! - **max_ret_time** is tabulated on a P/E grid of `pe_step` cycles (default [`PE_STEP`]), each entry
//!   computed at the grid point *above* (more wear, shorter retention), so the table never
//!   promises more retention than the model; beyond the grid the page gets zero retention
//!   (an immediate alarm): the chip is past any endurance the tables were built for.

use crate::policy::EccPolicyCounters;
use alloc::vec::Vec;
use nand::{FlaresRber, Nanos};
use serde::{Deserialize, Serialize};

/// Default P/E cycles per row of the precomputed tables (`FlaresConfig::pe_step`).
pub const PE_STEP: u32 = 64;
/// P/E cycles the tables cover: 2^14, Table II's pecycles width.
pub const PE_SPAN: u32 = 1 << 14;
/// Nanoseconds per hour.
const NS_PER_HOUR: f64 = 3.6e12;

/// Table II field widths (bits).
pub mod width {
    /// p_cur and p_next.
    pub const P: u32 = 6;
    /// pecycles.
    pub const PECYCLES: u32 = 14;
    /// writestamp (seconds).
    pub const WRITESTAMP: u32 = 32;
    /// errc.
    pub const ERRC: u32 = 13;
    /// failc.
    pub const FAILC: u32 = 2;
    /// The whole profile.
    pub const TOTAL: u32 = 2 * P + PECYCLES + WRITESTAMP + ERRC + FAILC;
}

/// FLARES's constants. Defaults: the paper (Table Ib, §5: WSIZE 100, MIX 0.5, UBER 1e-11,
/// one year of retention, t from 3 to 50, the Table III fit of eq. 5).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FlaresConfig {
    /// Operations per estimation window (WSIZE).
    pub wsize: u32,
    /// Weight of the measured RBER against the model's (MIX, 0..=1).
    pub mix: f64,
    /// Critical zone: the projected RBER within this fraction of p_cur's limit
    /// (SAFERANGE).
    pub saferange: f64,
    /// Failures in a window that force a stronger code (MAXFAIL).
    pub maxfail: u32,
    /// Critical-zone windows before p grows by one (MAXCRITICAL).
    pub maxcritical: u32,
    /// Over-correction windows before p shrinks by one (MAXOVER).
    pub maxover: u32,
    /// Target uncorrectable bit error rate.
    pub target_uber: f64,
    /// Retention every page must survive, in hours (REQ_RET_TIME; 8760 = 1 year).
    pub req_ret_hours: f64,
    /// Weakest correction capability used.
    pub t_min: u32,
    /// Strongest correction capability used.
    pub t_max: u32,
    /// The RBER model (eq. 5).
    pub model: FlaresRber,
    /// Pages whose retention the idle-time scrub checks per call of the FTL's `tick`.
    pub scrub_pages: u32,
    /// P/E cycles per row of the precomputed tables (1..=1024; each row computed at its
    /// upper end). 64 keeps them at ~100 KiB for t up to 50; chips that cycle fast relative
    /// to their wear curve (test chips) want finer rows.
    pub pe_step: u32,
    /// A deliberate bug (test builds with the `sabotage` feature only).
    #[cfg(feature = "sabotage")]
    #[serde(skip)]
    pub sabotage: crate::sabotage::Sabotage,
}

impl Default for FlaresConfig {
    fn default() -> Self {
        FlaresConfig {
            wsize: 100,
            mix: 0.5,
            saferange: 0.05,
            maxfail: 3,
            maxcritical: 5,
            maxover: 15,
            target_uber: 1e-11,
            req_ret_hours: 8760.0,
            t_min: 3,
            t_max: 50,
            model: FlaresRber::default(),
            scrub_pages: 4096,
            pe_step: PE_STEP,
            #[cfg(feature = "sabotage")]
            sabotage: crate::sabotage::Sabotage::None,
        }
    }
}

impl FlaresConfig {
    /// Checks the constants; the error names the key and the value.
    pub fn validate(&self) -> Result<(), alloc::string::String> {
        use alloc::format;
        if !(0.0..=1.0).contains(&self.mix) {
            return Err(format!("flares.mix = {} must be in [0, 1]", self.mix));
        }
        if self.wsize == 0 || self.wsize > 255 {
            return Err(format!(
                "flares.wsize = {} must be in 1..=255 (operations per window)",
                self.wsize
            ));
        }
        if !(self.target_uber > 0.0 && self.target_uber < 1.0) {
            return Err(format!(
                "flares.target_uber = {:e} must be in (0, 1)",
                self.target_uber
            ));
        }
        if !(self.req_ret_hours > 0.0 && self.req_ret_hours.is_finite()) {
            return Err(format!(
                "flares.req_ret_hours = {} must be positive",
                self.req_ret_hours
            ));
        }
        if !(0.0..1.0).contains(&self.saferange) {
            return Err(format!(
                "flares.saferange = {} must be in [0, 1)",
                self.saferange
            ));
        }
        let pmax = (1u32 << width::P) - 1;
        if self.t_min == 0 || self.t_min > self.t_max || self.t_max > pmax {
            return Err(format!(
                "flares.t_min = {}, flares.t_max = {}: need 1 ≤ t_min ≤ t_max ≤ {pmax} (p is a {}-bit field)",
                self.t_min,
                self.t_max,
                width::P
            ));
        }
        if self.pe_step == 0 || self.pe_step > 1024 {
            return Err(format!(
                "flares.pe_step = {} must be in 1..=1024",
                self.pe_step
            ));
        }
        if self.maxfail > (1 << width::FAILC) {
            return Err(format!(
                "flares.maxfail = {} does not fit failc's {} bits (at most {})",
                self.maxfail,
                width::FAILC,
                1 << width::FAILC
            ));
        }
        Ok(())
    }
}

/// The precomputed tables of one configuration and codeword size.
#[derive(Debug, Clone)]
pub struct FlaresTables {
    cfg: FlaresConfig,
    /// Codeword bits (n of eq. 1).
    pub codeword_bits: u64,
    /// Page data bits (Alg. 2's PAGESIZE).
    pub page_bits: u64,
    /// `max_rber[p - 1]`: the largest RBER capability p keeps at the target UBER,
    /// p = 1..=t_max.
    max_rber: Vec<f64>,
    /// `ret[row · t_max + p - 1]`: max_ret_time(p, pecycles) for pecycles in row's range,
    /// computed at the row's upper end.
    ret: Vec<Nanos>,
    /// Retention the whole table horizon allows (a page that holds this long holds for
    /// good as far as the tables know).
    horizon: Nanos,
    /// `required[row]`: the model's p for REQ_RET_TIME at the row's upper P/E end, and
    /// whether it was beyond t_max (a program's look-up).
    required: Vec<(u8, bool)>,
    /// `pe_step`'s base-2 logarithm when it is a power of two (the default, 64): a row is
    /// found on every program and read, and a shift is the cheapest division.
    pe_shift: Option<u32>,
}

/// Horizon of the retention table: 100 years.
const HORIZON_HOURS: f64 = 876_000.0;

impl FlaresTables {
    /// Builds the tables for `codeword_bits`-bit codewords in pages of `page_bits` data
    /// bits (eq. 1 inverted by bisection per p, eq. 5 inverted per p and P/E row).
    pub fn new(cfg: FlaresConfig, codeword_bits: u64, page_bits: u64) -> Self {
        let np = cfg.t_max as usize;
        let rows = ecc::reliability::corr_table(codeword_bits, 1, np as u64, cfg.target_uber);
        let max_rber: Vec<f64> = rows.iter().map(|r| r.max_rber).collect();
        let m = cfg.model;
        let (step, rows) = (cfg.pe_step.max(1), PE_SPAN / cfg.pe_step.max(1));
        let mut ret = Vec::with_capacity(rows as usize * np);
        for row in 0..rows {
            let pe = ((row + 1) * step) as f64;
            let wr = m.write_part(pe);
            let pe_n = libm::pow(pe, m.n);
            for &limit in &max_rber {
                // eq. 5 inverted: RBER_wr(pe) + Bo·(pe^n·t)^m = limit.
                let hours = if wr >= limit {
                    0.0
                } else {
                    let x = (limit - wr) / m.bo;
                    let t = libm::pow(x, 1.0 / m.m) / pe_n;
                    t.min(HORIZON_HOURS)
                };
                ret.push(Nanos((hours * NS_PER_HOUR) as u64));
            }
        }
        let mut t = FlaresTables {
            cfg,
            codeword_bits,
            page_bits,
            max_rber,
            ret,
            horizon: Nanos((HORIZON_HOURS * NS_PER_HOUR) as u64),
            required: Vec::new(),
            pe_shift: step.is_power_of_two().then(|| step.trailing_zeros()),
        };
        t.required = t.required_rows(step, rows);
        t
    }

    /// `required[row]` for every row: `required_p_exact` at the row's upper P/E end. The
    /// model's projected RBER grows with P/E cycles, so the requirement never falls from
    /// one row to the next: each run of equal rows is found by bisection (a few dozen model
    /// evaluations where [`required_rows_each`](Self::required_rows_each) takes one per
    /// row: 16,384 at `pe_step = 1`; a test compares the two).
    ///
    /// A model whose constants make it fall with wear somewhere (a·b < 0, Bo < 0 or
    /// n·m < 0: never a fitted chip's) is filled row by row.
    fn required_rows(&self, step: u32, rows: u32) -> Vec<(u8, bool)> {
        let m = &self.cfg.model;
        if m.a * m.b < 0.0 || m.bo < 0.0 || m.n * m.m < 0.0 {
            return self.required_rows_each(step, rows);
        }
        let mut out = Vec::with_capacity(rows as usize);
        // Bounded: each pass fills at least one row.
        while (out.len() as u32) < rows {
            let first = out.len() as u32;
            let v = self.required_row(step, first);
            // The last row with v: row lo has v; hi is past it (or the end).
            let (mut lo, mut hi) = (first, rows);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if self.required_row(step, mid) == v {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            out.resize(hi as usize, v);
        }
        out
    }

    /// The required rows filled one by one.
    fn required_rows_each(&self, step: u32, rows: u32) -> Vec<(u8, bool)> {
        (0..rows).map(|row| self.required_row(step, row)).collect()
    }

    /// `required[row]`: `required_p_exact` at the row's upper P/E end.
    fn required_row(&self, step: u32, row: u32) -> (u8, bool) {
        let (p, beyond) = self.required_p_exact((row + 1) * step);
        (p as u8, beyond)
    }

    /// The configuration.
    pub fn config(&self) -> &FlaresConfig {
        &self.cfg
    }

    /// The largest RBER capability `p` sustains at the target UBER.
    pub fn max_rber(&self, p: u32) -> f64 {
        let i = (p.clamp(1, self.cfg.t_max) - 1) as usize;
        self.max_rber[i]
    }

    /// `search(corr_table, rber)`: the smallest p in t_min..=t_max whose limit is at least
    /// `rber`, and whether `rber` was beyond t_max's limit (then t_max).
    pub fn p_for(&self, rber: f64) -> (u32, bool) {
        let lo = (self.cfg.t_min - 1) as usize;
        let i = lo + self.max_rber[lo..].partition_point(|&m| m < rber);
        if i >= self.max_rber.len() {
            (self.cfg.t_max, true)
        } else {
            (i as u32 + 1, false)
        }
    }

    /// `max_ret_time(p, pecycles)` (table look-up; see the module docs for the rounding).
    #[inline]
    pub fn max_ret(&self, p: u32, pecycles: u32) -> Nanos {
        let np = self.cfg.t_max as usize;
        // (`max`/`min`, not `clamp`: t_max ≥ 1 by validation; this runs on every read.)
        let at = self.row(pecycles) as usize * np + (p.max(1).min(self.cfg.t_max) - 1) as usize;
        self.ret.get(at).copied().unwrap_or(Nanos::ZERO)
    }

    /// The tables' P/E row of `pecycles`.
    #[inline]
    pub fn row(&self, pecycles: u32) -> u32 {
        match self.pe_shift {
            Some(s) => pecycles >> s,
            None => pecycles / self.cfg.pe_step,
        }
    }

    /// The table horizon (100 years).
    pub fn horizon(&self) -> Nanos {
        self.horizon
    }

    /// RBER_wr(pecycles) (eq. 4).
    pub fn rber_wr(&self, pecycles: u32) -> f64 {
        self.cfg.model.write_part(pecycles as f64).max(0.0)
    }

    /// RBER_rd(pecycles, t) (eq. 3's retention term).
    pub fn rber_rd(&self, pecycles: u32, retention: Nanos) -> f64 {
        self.cfg
            .model
            .retention_part(pecycles as f64, retention.0 as f64 / NS_PER_HOUR)
    }

    /// The p the model alone requires at `pecycles` after REQ_RET_TIME (the "required t"
    /// of the paper's Fig. 5), and whether it lies beyond t_max: a table look-up, at the
    /// upper P/E end of `pecycles`' row (never less than the exact value).
    #[inline]
    pub fn required_p(&self, pecycles: u32) -> (u32, bool) {
        match self.required.get(self.row(pecycles) as usize) {
            Some(&(p, beyond)) => (p as u32, beyond),
            None => self.required_p_exact(pecycles),
        }
    }

    /// [`required_p`](Self::required_p) computed from the model at exactly `pecycles`
    /// (beyond the tables only: out of the inlined program path).
    #[cold]
    #[inline(never)]
    pub fn required_p_exact(&self, pecycles: u32) -> (u32, bool) {
        let proj = self.rber_wr(pecycles)
            + self
                .cfg
                .model
                .retention_part(pecycles as f64, self.cfg.req_ret_hours);
        self.p_for(proj)
    }

    /// The smallest p whose UBER at `rber` meets the target, unbounded by t_max (up to
    /// 63): the analytic requirement a test compares FLARES's choice with.
    pub fn analytic_p(&self, rber: f64) -> u32 {
        (1..=self.cfg.t_max)
            .find(|&p| self.max_rber(p) >= rber)
            .unwrap_or(self.cfg.t_max + 1)
    }
}

/// Zones of Alg. 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Zone {
    /// Fast zone: p rose, p_next follows at once.
    Fs,
    /// Over-correction zone: p fell (p_next drops by one after MAXOVER windows).
    Oc,
    /// Critical zone: p equal, the RBER within SAFERANGE of its limit.
    Cr,
    /// Failure zone: more than MAXFAIL failed decodes.
    Fa,
    /// Safe zone.
    Sz,
}

impl Zone {
    /// Every zone, in report order.
    pub const ALL: [Zone; 5] = [Zone::Fs, Zone::Oc, Zone::Cr, Zone::Fa, Zone::Sz];
    /// Index into per-zone arrays.
    pub fn index(self) -> usize {
        self as usize
    }
    /// Short name.
    pub fn name(self) -> &'static str {
        ["FS", "OC", "CR", "FA", "SZ"][self as usize]
    }
}

/// One page's run-time profile (§3, Table II widths, saturating) and Alg. 2's counters.
/// `p_cur == 0` means "not known" (never programmed under FLARES, or not cached since
/// mount).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pprof {
    /// Strength the page's data were encoded with.
    pub p_cur: u8,
    /// Strength for the page's next program.
    pub p_next: u8,
    /// P/E cycles of the page when it was last programmed (14 bits, saturating).
    pub pecycles: u16,
    /// Failed decodes in this window (2 bits + the overflow the test needs).
    pub failc: u8,
    /// Over-correction windows.
    pub overc: u8,
    /// Critical-zone windows.
    pub criticalc: u8,
    /// Operations seen in this window.
    pub ops: u8,
    /// The smallest retention of the page's data any read of this window saw, whole hours
    /// rounded down (saturating): the retention meas_rber subtracts (see the module docs).
    pub win_ret_h: u16,
    /// Errors detected in this window (13 bits, saturating).
    pub errc: u16,
    /// Program time in whole seconds + 1 (32 bits; 0 = unknown or erased).
    pub writestamp: u32,
}

// The window's retention lives in what was the profile's padding: 16 bytes per page.
const _: () = assert!(core::mem::size_of::<Pprof>() == 16);

/// What Alg. 2 concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The page must be rewritten (retention past max_ret_time, or failure zone).
    Rewrite,
    /// A window closed in this zone.
    Window(Zone),
    /// Nothing to do yet.
    Nothing,
}

/// Alg. 1 and Alg. 2 over profiles; what they decide is counted in the caller's
/// [`EccPolicyCounters`] (the FTL's own, or a validation run's).
#[derive(Debug, Clone)]
pub struct FlaresCore {
    /// The tables.
    pub tables: FlaresTables,
}

fn stamp(now: Nanos) -> u32 {
    ((now.0 / 1_000_000_000).min(u32::MAX as u64 - 1) + 1) as u32
}

impl FlaresCore {
    /// A core over `tables`.
    pub fn new(tables: FlaresTables) -> Self {
        FlaresCore { tables }
    }

    /// Alg. 1 for a program at `now` of a page on a block with `pecycles` cycles: returns
    /// the strength to encode with (p_next, or the model's p for a page with no profile).
    #[inline]
    pub fn program(&self, p: &mut Pprof, pecycles: u32, now: Nanos) -> u32 {
        // The common case: an estimate made at this P/E row. The other case is a tail
        // call, so this path saves no registers.
        if p.p_next == 0 || self.tables.row(pecycles) > self.tables.row(p.pecycles as u32) {
            return self.program_new_row(p, pecycles, now);
        }
        self.programmed(p, p.p_next as u32, pecycles, now)
    }

    /// [`program`](Self::program) for a page with no estimate (the model's requirement)
    /// or one made at a lower P/E row: p_next was estimated at the wear of the page's last
    /// program and the cells have cycled since, so the estimate is carried forward by what
    /// the model's requirement grew over those cycles (0 or more): wear between two
    /// estimations never leaves the page under-corrected. Once per page per P/E row: out
    /// of the inlined program path.
    #[inline(never)]
    fn program_new_row(&self, p: &mut Pprof, pecycles: u32, now: Nanos) -> u32 {
        let t = if p.p_next == 0 {
            self.tables.required_p(pecycles).0
        } else {
            let then = self.tables.required_p(p.pecycles as u32).0;
            let now_p = self.tables.required_p(pecycles).0;
            p.p_next as u32 + now_p.saturating_sub(then)
        };
        self.programmed(p, t, pecycles, now)
    }

    /// Records a program at strength `t` (bounded to t_min..=t_max) in the profile.
    #[inline(always)]
    fn programmed(&self, p: &mut Pprof, t: u32, pecycles: u32, now: Nanos) -> u32 {
        // (`max`/`min`, not `clamp`: `validate` ensures t_min ≤ t_max, and `clamp`'s own
        // check of that would sit on every program.)
        let t = t.max(self.tables.cfg.t_min).min(self.tables.cfg.t_max);
        p.p_cur = t as u8;
        p.p_next = t as u8;
        p.pecycles = pecycles.min((1 << width::PECYCLES) - 1) as u16;
        p.writestamp = stamp(now);
        t
    }

    /// The page's retention at `now` (zero if unknown).
    #[inline]
    pub fn retention(p: &Pprof, now: Nanos) -> Nanos {
        if p.writestamp == 0 {
            return Nanos::ZERO;
        }
        let written = (p.writestamp as u64 - 1) * 1_000_000_000;
        Nanos(now.0.saturating_sub(written))
    }

    /// Whether the page has outlived `max_ret_time(p_cur, pecycles)` at `now`.
    #[inline]
    pub fn past_retention(&self, p: &Pprof, now: Nanos) -> bool {
        self.outlived(p, Self::retention(p, now))
    }

    /// [`past_retention`](Self::past_retention) for a page whose retention is `ret`.
    #[inline]
    fn outlived(&self, p: &Pprof, ret: Nanos) -> bool {
        p.writestamp != 0
            && p.p_cur != 0
            && ret > self.tables.max_ret(p.p_cur as u32, p.pecycles as u32)
    }

    /// Alg. 1 for a read (`deterr` corrected bits, or a failed decode) and then, every
    /// WSIZE operations, Alg. 2; the retention check runs on every read. (Always inlined:
    /// it is the policy's per-read path.)
    #[inline(always)]
    pub fn read(
        &self,
        p: &mut Pprof,
        deterr: u32,
        fail: bool,
        now: Nanos,
        c: &mut EccPolicyCounters,
    ) -> Outcome {
        if p.p_cur == 0 {
            return Outcome::Nothing;
        }
        let errc_max = (1u32 << width::ERRC) - 1;
        if fail {
            p.failc = p.failc.saturating_add(1).min((1 << width::FAILC) as u8 + 1);
            p.errc = (p.errc as u32 + p.p_cur as u32 + 1).min(errc_max) as u16;
        } else {
            p.errc = (p.errc as u32 + deterr).min(errc_max) as u16;
        }
        let ret = Self::retention(p, now);
        let hours = (ret.0 / NS_PER_HOUR as u64).min(u16::MAX as u64) as u16;
        p.win_ret_h = if p.ops == 0 {
            hours
        } else {
            p.win_ret_h.min(hours)
        };
        p.ops = p.ops.saturating_add(1);
        if self.outlived(p, ret) {
            c.retention_alarms += 1;
            return Outcome::Rewrite;
        }
        if (p.ops as u32) < self.tables.cfg.wsize {
            return Outcome::Nothing;
        }
        let zone = self.estimate(p, c);
        if zone == Zone::Fa {
            Outcome::Rewrite
        } else {
            Outcome::Window(zone)
        }
    }

    /// Alg. 2 rows 5–31 over the window just closed (once per WSIZE reads: kept out of
    /// the inlined read path).
    #[inline(never)]
    pub fn estimate(&self, p: &mut Pprof, counts: &mut EccPolicyCounters) -> Zone {
        let c = self.tables.cfg;
        let pe = p.pecycles as u32;
        let ret = Nanos(p.win_ret_h as u64 * NS_PER_HOUR as u64);
        let window = p.ops.max(1) as f64;
        let meas =
            (p.errc as f64 / self.tables.page_bits as f64) / window - self.tables.rber_rd(pe, ret);
        let model = self.tables.rber_wr(pe);
        #[cfg(feature = "sabotage")]
        let meas = if c.sabotage == crate::sabotage::Sabotage::ZoneIgnoresMeasuredErrors {
            model
        } else {
            meas
        };
        let avg = c.mix * meas + (1.0 - c.mix) * model;
        let proj = avg + c.model.retention_part(pe as f64, c.req_ret_hours);
        let (need, beyond) = self.tables.p_for(proj);
        if beyond {
            counts.beyond_range += 1;
        }
        let max_rber = self.tables.max_rber(need);
        let cur = p.p_cur as u32;
        let zone = if p.failc as u32 > c.maxfail {
            p.p_next = (cur + 1).max(need).min(c.t_max) as u8;
            p.failc = 0;
            Zone::Fa
        } else if need > cur {
            p.p_next = need as u8;
            p.overc = 0;
            Zone::Fs
        } else if need < cur {
            p.overc = p.overc.saturating_add(1);
            if p.overc as u32 > c.maxover {
                p.p_next = (cur - 1).max(c.t_min) as u8;
                p.overc = 0;
                p.criticalc = 0;
            }
            Zone::Oc
        } else if proj > max_rber - max_rber * c.saferange {
            // Alg. 2 row 22 prints `max_rber − max_rber·(1 − SAFERANGE)`, which would put
            // every RBER above 5 % of the limit in the critical zone; §3's text — "falls in
            // a neighborhood of max_rber defined by SAFERANGE" — is the within-5 % reading
            // used here.
            p.overc = 0;
            p.criticalc = p.criticalc.saturating_add(1);
            if p.criticalc as u32 > c.maxcritical {
                p.p_next = (cur + 1).min(c.t_max) as u8;
                p.overc = 0;
                p.criticalc = 0;
            }
            Zone::Cr
        } else {
            p.p_next = cur as u8;
            p.overc = 0;
            Zone::Sz
        };
        p.errc = 0;
        p.ops = 0;
        counts.zones[zone.index()] += 1;
        if zone == Zone::Fa {
            counts.failure_alarms += 1;
        }
        zone
    }
}

mod strength;
pub use strength::FlaresStrength;

#[cfg(test)]
mod tests;
