//! WAO-GC's analytic bounds (Ref. 003, §IV): how many valid-page copies fit in one partial
//! GC step, how many steps reclaim a victim, the most valid pages a victim may hold, and the
//! largest logical/physical ratio for which partial GC can keep up — the numbers a
//! real-time configuration is checked against before it runs, and that its measured worst
//! cases are compared with.
//!
//! With `t_rd`, `t_wr`, `t_er` the chip's page read, page program and block erase times and
//! `π` its pages per block:
//!
//! - α = ⌊t_er / (t_rd + t_wr)⌋ (eq. 4): copies per partial step, so that a step (α copies,
//!   or the erase) never takes longer than one erase;
//! - U(λ) = ⌈σ·π⌉ (eq. 7): with the logical space a share σ of the physical one and greedy
//!   victims, a victim holds at most this many valid pages;
//! - k = ⌈λ/α⌉ + 1 (eq. 5): partial steps to reclaim a victim of λ valid pages;
//! - U(σ) = (π − 1)·α / ((α + 1)·π) (eq. 8): the largest σ with k + λ ≤ π (eq. 6), i.e. one
//!   free block always suffices for the writes and copies made while a victim is collected.
//!   Eq. 8 solves eq. 6 without its ceilings; with them a σ just under U(σ) can still give
//!   k + U(λ) = π + 1 (π = 32, α = 6, σ = 0.815: U(λ) = 27, k = 6). So the check here is the
//!   exact one — U(λ) at most the largest λ with ⌈λ/α⌉ + 1 + λ ≤ π — beside the paper's
//!   U(σ); on the paper's chip (π = 64, α = 6) both give 54/64 = 84.38 %;
//! - a request's worst latency: its own operation plus at most one partial step — a write
//!   `t_er + t_wr`, a read `t_er + t_rd` when steps follow reads too (WAO-GC runs them after
//!   writes only, so its reads wait at most for a step already under way).
//!
//! On multi-level chips the slowest page kind is taken for `t_rd` and `t_wr` (an upper-page
//! program is the longest), so the bounds hold for every page. Bus transfer and ECC decode
//! time come on top of these array times; the measured worst cases are compared with the
//! bound plus them, each decode at its strength's worst-case time — which, with
//! `error_weight = 0`, is what every decode is charged, so a measured worst case can meet
//! its bound exactly. The bounds are one die's: a request's pages on other dies of the same
//! channel share its bus and its decode engine ([`crate::timeline`]), and that wait is not
//! in them (WAO-GC's evaluation serves one page at a time, where it cannot arise).

use alloc::format;
use alloc::string::String;
use nand::{BitKind, ChipConfig};
use serde::{Deserialize, Serialize};

/// How α, the valid-page copies of one partial step, is derived (`[ftl.page] wao_alpha`,
/// `[ftl.gftl] alpha`, `[ftl.rftl] alpha`).
///
/// Eq. 4 divides the erase by a copy's *array* time (`t_rd + t_wr`). A copy through a real
/// controller also moves the page over the bus twice and decodes it; with those charged,
/// α array-time copies can outlast the erase (on K9K8G08U0B with a 1-bit code: six copies
/// of ~408 µs, 2.45 ms, against a 1.5 ms erase), which breaks the paper's premise that no
/// step takes longer than one erase. [`Charged`](AlphaRule::Charged) divides by the charged
/// copy instead (α = 3 there), at the price of a lower U(σ): more over-provisioning for the
/// same bound, and a worst write of the erase plus one program and transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlphaRule {
    /// α = ⌊t_er / (t_rd + t_wr)⌋: the paper's eq. 4, array times only (the default).
    #[default]
    Array,
    /// α = ⌊t_er / (t_rd + 2·t_xfer + t_dec + t_wr)⌋: each copy's read, its transfer out,
    /// its decode at the strongest correction the volume programs, its transfer in and its
    /// program, as the controller charges them.
    Charged,
}

impl AlphaRule {
    /// The rule's name in a configuration file.
    pub const fn name(self) -> &'static str {
        match self {
            AlphaRule::Array => "array",
            AlphaRule::Charged => "charged",
        }
    }

    /// α under this rule on `ctl`'s chip, a copy's decode taken at strength `t` (the
    /// strongest the volume programs), or why no copy fits within an erase.
    pub fn alpha<S: nand::Storage, M: nand::ErrorModel>(
        self,
        ctl: &mut controller::Controller<S, M>,
        t: u32,
    ) -> Result<u32, String> {
        let extra = match self {
            AlphaRule::Array => 0,
            AlphaRule::Charged => {
                let decode = ctl
                    .worst_decode(t)
                    .map_err(|e| format!("ecc t = {t}: {e}"))?;
                self.copy_extra(ctl.chip().config().page_transfer().0, decode.0)
            }
        };
        WaoBounds::alpha_with(ctl.chip().config(), extra)
    }

    /// What a copy costs beyond its array times under this rule, ns: nothing for
    /// [`Array`](AlphaRule::Array); two transfers of `xfer` and a decode of `decode` for
    /// [`Charged`](AlphaRule::Charged).
    pub fn copy_extra(self, xfer: u64, decode: u64) -> u64 {
        match self {
            AlphaRule::Array => 0,
            AlphaRule::Charged => 2 * xfer + decode,
        }
    }
}

/// WAO-GC's bounds for one chip and space configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaoBounds {
    /// Valid-page copies per partial step (α, eq. 4).
    pub alpha: u32,
    /// Pages per block (π).
    pub pi: u32,
    /// Logical / physical space ratio (σ).
    pub sigma: f64,
    /// The paper's largest σ (U(σ), eq. 8).
    pub u_sigma: f64,
    /// The largest victim eq. 6 allows with its ceilings: λ with ⌈λ/α⌉ + 1 + λ ≤ π.
    pub lambda_max: u32,
    /// The most valid pages a victim holds (U(λ), eq. 7).
    pub u_lambda: u32,
    /// Partial steps to reclaim a victim of U(λ) valid pages (k, eq. 5).
    pub k: u32,
    /// Page read time (the slowest page kind), ns.
    pub t_rd: u64,
    /// Page program time (the slowest page kind), ns.
    pub t_wr: u64,
    /// Block erase time, ns.
    pub t_er: u64,
    /// Padding pages a placement that keeps critical pages out of unreliable slots (AP's
    /// MSB allocation) may program before one page: the longest run of unreliable pages in
    /// a block (0 without such a placement; see [`with_pads`](WaoBounds::with_pads)).
    pub pads: u32,
    /// Program time of a padding page (an unreliable page's), ns.
    pub t_pad: u64,
    /// Checkpoint steps a write may run after its partial step (a real-time pacing with
    /// roll-forward recovery writes its checkpoints in steps; 0 otherwise — see
    /// [`with_checkpoint_steps`](WaoBounds::with_checkpoint_steps)).
    pub cp_steps: u32,
    /// A demand-paged map's worst cost of one map update, controller costs included (a
    /// miss's read, transfer and decode and a dirty eviction's transfer and program), ns;
    /// 0 with the map in RAM (see [`with_map`](WaoBounds::with_map)).
    pub map_update: u64,
    /// A demand-paged map's upkeep per host request (one translation-page copy or one
    /// partition-block erase), ns; 0 with the map in RAM.
    pub map_upkeep: u64,
}

impl WaoBounds {
    /// The bounds of `chip` at logical/physical ratio `sigma`. Errors (naming the computed
    /// bound) when the erase is shorter than one page copy (α = 0: no copy fits a partial
    /// step) or when `sigma` exceeds U(σ).
    pub fn new(chip: &ChipConfig, sigma: f64) -> Result<WaoBounds, String> {
        Self::with_wait(chip, sigma, 0)
    }

    /// Copies per partial step on `chip` (α, eq. 4, array times), or why none fits.
    pub fn alpha(chip: &ChipConfig) -> Result<u32, String> {
        Self::alpha_with(chip, 0)
    }

    /// Copies per partial step on `chip` when each copy costs `extra` ns beyond its array
    /// times ([`AlphaRule::copy_extra`]), or why none fits.
    pub fn alpha_with(chip: &ChipConfig, extra: u64) -> Result<u32, String> {
        let (t_rd, t_wr, t_er) = worst_times(chip);
        let alpha = (t_er / (t_rd + t_wr + extra).max(1)) as u32;
        if alpha == 0 {
            let charged = if extra > 0 {
                format!(" + transfers and decode {extra} ns")
            } else {
                String::new()
            };
            return Err(format!(
                "chip {}: an erase ({t_er} ns) is shorter than one page copy (read {t_rd} ns + program {t_wr} ns{charged}): α = 0, so no partial GC step can copy a page within the time of an erase",
                chip.name
            ));
        }
        Ok(alpha)
    }

    /// [`new`](WaoBounds::new) for a scheme whose victim may wait `wait` more steps for its
    /// erase after its last copy (on multi-level chips, until the copies' upper partners
    /// are programmed: the pairing window, one page per host write): k = ⌈λ/α⌉ + 1 + wait,
    /// and eq. 6 with it.
    pub fn with_wait(chip: &ChipConfig, sigma: f64, wait: u32) -> Result<WaoBounds, String> {
        Self::with_alpha(chip, sigma, wait, Self::alpha(chip)?)
    }

    /// [`with_wait`](WaoBounds::with_wait) with `alpha` copies per partial step (from
    /// [`alpha_with`](WaoBounds::alpha_with) under an [`AlphaRule`]): U(σ), U(λ) and k
    /// follow from it as eqs. 5–8 do from eq. 4's.
    pub fn with_alpha(
        chip: &ChipConfig,
        sigma: f64,
        wait: u32,
        alpha: u32,
    ) -> Result<WaoBounds, String> {
        let (t_rd, t_wr, t_er) = worst_times(chip);
        let pi = chip.geometry.pages_per_block;
        let alpha = alpha.max(1);
        let u_sigma = ((pi - 1) as f64 * alpha as f64) / ((alpha + 1) as f64 * pi as f64);
        let lambda_max = (0..pi)
            .rev()
            .find(|&l| l.div_ceil(alpha) + 1 + wait + l <= pi)
            .unwrap_or(0);
        let u_lambda = libm::ceil(sigma * pi as f64) as u32;
        if !(sigma > 0.0 && sigma <= u_sigma && u_lambda <= lambda_max) {
            return Err(format!(
                "logical/physical ratio σ = {sigma:.4} is above {limit:.4}, the highest the bound allows for chip {} (U(σ) = {u_sigma:.4} with α = {alpha}, π = {pi}; with eq. 6's ceilings{} at most {lambda_max} valid pages per victim, σ ≤ {:.4}): partial GC could not reclaim a victim before the last free block fills",
                chip.name,
                if wait > 0 {
                    format!(" and {wait} steps waiting for the erase")
                } else {
                    String::new()
                },
                lambda_max as f64 / pi as f64,
                limit = u_sigma.min(lambda_max as f64 / pi as f64),
            ));
        }
        let k = u_lambda.div_ceil(alpha) + 1 + wait;
        Ok(WaoBounds {
            alpha,
            pi,
            sigma,
            u_sigma,
            lambda_max,
            u_lambda,
            k,
            t_rd,
            t_wr,
            t_er,
            pads: 0,
            t_pad: 0,
            cp_steps: 0,
            map_update: 0,
            map_upkeep: 0,
        })
    }

    /// The same bounds for a scheme whose map is demand-paged: every map update — the
    /// write's own and each GC copy's — may miss and evict a dirty translation page
    /// (`update` ns with the controller's costs), and every request runs one upkeep step
    /// of the map partition (`upkeep` ns: a translation-page copy or a partition-block
    /// erase). Eq. 4's α is kept; the step and the write are re-derived with them, and a
    /// read adds its own update and the upkeep.
    pub fn with_map(mut self, update: u64, upkeep: u64) -> WaoBounds {
        self.map_update = update;
        self.map_upkeep = upkeep;
        self
    }

    /// The same bounds for a scheme whose placement may pad up to `pads` pages of program
    /// time `t_pad` before any page it programs, host write or GC copy (AP's MSB allocation
    /// on the shared destination; the combined profile). Eq. 4's α is kept, so a step of α
    /// copies with their pads may outlast an erase: the write bound is re-derived as the
    /// write's program and pads plus the longer of an erase and α copies with theirs. The
    /// pads also take destination pages: eq. 6 leaves [`pad_slack`](WaoBounds::pad_slack)
    /// of them per destination, and the FTL pads no more than that while a victim is being
    /// collected (a critical page then takes the unreliable slot, counted as a lapse).
    pub fn with_pads(mut self, pads: u32, t_pad: u64) -> WaoBounds {
        self.pads = pads;
        self.t_pad = t_pad;
        self
    }

    /// The same bounds for a scheme whose writes each run up to `steps` checkpoint steps
    /// after their partial step: an erase of a checkpoint-region block, or the program of
    /// a checkpoint page or a sealing pad (the combined profile's checkpoints). Each adds
    /// the longer of an erase and a program (with its transfer, in
    /// [`worst_write_with`](WaoBounds::worst_write_with)).
    pub fn with_checkpoint_steps(mut self, steps: u32) -> WaoBounds {
        self.cp_steps = steps;
        self
    }

    /// Destination pages eq. 6 leaves beyond the k writes and U(λ) copies of one victim's
    /// collection: π − k − U(λ), the padding pages a destination may take while it runs.
    pub fn pad_slack(&self) -> u32 {
        self.pi.saturating_sub(self.k + self.u_lambda)
    }

    /// The worst partial step in array times: the erase, or α copies each with its pads.
    fn worst_step(&self) -> u64 {
        let copy = self.t_rd + self.t_wr + self.pads as u64 * self.t_pad;
        self.t_er.max(self.alpha as u64 * copy)
    }

    /// The worst latency of a write (its program and pads plus one partial step and its
    /// checkpoint steps), ns; with no pads and no checkpoint steps t_er + t_wr (eq. 4 makes α copies no longer than an erase).
    pub fn worst_write(&self) -> u64 {
        self.t_wr
            + self.pads as u64 * self.t_pad
            + self.worst_step()
            + self.cp_steps as u64 * self.t_er.max(self.t_wr)
    }

    /// The worst latency of a read that may wait for one partial step, ns.
    pub fn worst_read(&self) -> u64 {
        self.t_er + self.t_rd
    }

    /// The worst write latency with the controller's costs on top of the array times (what
    /// the measured worst case is checked against): the write's own transfer and program,
    /// then one partial step — an erase, or α copies each charged in full (read, transfer
    /// out, decode, transfer in, program), whichever is longer. `xfer` is one page's bus
    /// transfer (data and spare), `decode` the decode of a page at its strength's limit.
    /// Eq. 4 counts array times only, so with transfers α copies can outlast an erase.
    pub fn worst_write_with(&self, xfer: u64, decode: u64) -> u64 {
        self.t_wr
            + xfer
            + self.pads as u64 * (self.t_pad + xfer)
            + self.map_update
            + self.map_upkeep
            + self.worst_step_with(xfer, decode)
            + self.cp_steps as u64 * self.t_er.max(self.t_wr + xfer)
    }

    /// The longest partial step with the controller's costs (see
    /// [`worst_write_with`](WaoBounds::worst_write_with)); each copy with its pads.
    pub fn worst_step_with(&self, xfer: u64, decode: u64) -> u64 {
        let copy = self.t_rd
            + xfer
            + decode
            + xfer
            + self.t_wr
            + self.pads as u64 * (self.t_pad + xfer)
            + self.map_update;
        self.t_er.max(self.alpha as u64 * copy)
    }

    /// A trim's worst flash work (`LatencyBound::trim_ns`): one log page programmed and
    /// transferred, after the erase of the region block it opens and a region swap (an
    /// erase of the worn block, an anchor record, an erase of the other anchor block).
    pub fn worst_trim_with(&self, xfer: u64) -> u64 {
        3 * self.t_er + 2 * (self.t_wr + xfer)
    }

    /// A flush's worst flash work (`LatencyBound::flush_ns`) on `dies` dies with `seal`
    /// padding pages to seal every frontier and a checkpoint of `cp_programs` page programs
    /// (its own seal pads included) and `cp_erases` region-block erases: every die's
    /// running job finished (at most U(λ) copies charged in full and the victim's erase),
    /// the seal, the trim log's page, the checkpoint and a region swap ahead of it.
    pub fn worst_flush_with(
        &self,
        xfer: u64,
        decode: u64,
        dies: u32,
        seal: u32,
        cp_programs: u32,
        cp_erases: u32,
    ) -> u64 {
        let copy =
            self.t_rd + xfer + decode + xfer + self.t_wr + self.pads as u64 * (self.t_pad + xfer);
        let jobs = dies as u64 * (self.u_lambda as u64 * copy + self.t_er);
        let page = self.t_pad.max(self.t_wr) + xfer;
        let pads = seal as u64 * page;
        let checkpoint = cp_programs as u64 * page + cp_erases as u64 * self.t_er;
        jobs + pads + self.worst_trim_with(xfer) + checkpoint + 2 * self.t_er + self.t_wr + xfer
    }

    /// The worst read latency with the controller's costs: WAO-GC runs no step after a
    /// read, so a read that finds its die idle takes its own read, transfer and decode.
    pub fn worst_read_with(&self, xfer: u64, decode: u64) -> u64 {
        self.t_rd + xfer + decode + self.map_update + self.map_upkeep
    }

    /// The same read bound for any scheme that runs no GC step after a read.
    pub fn read_bound(chip: &ChipConfig, xfer: u64, decode: u64) -> u64 {
        worst_times(chip).0 + xfer + decode
    }

    /// Whether collecting a victim of U(λ) valid pages fits one free block: k + U(λ) ≤ π
    /// (eq. 6).
    pub fn fits_one_block(&self) -> bool {
        self.k + self.u_lambda <= self.pi
    }
}

/// Full GC on demand with greedy victims (the pure page-level scheme and RTGC): the most
/// valid pages a victim holds at logical/physical ratio `sigma` (eq. 7's argument; never
/// π, since a block of π valid pages frees nothing) and the worst write, in array times
/// (`array`) and with every cost (`full`: `xfer` each way and `decode` per copy).
pub fn on_demand_bound(chip: &ChipConfig, sigma: f64, xfer: u64, decode: u64) -> (u32, u64, u64) {
    let (t_rd, t_wr, t_er) = worst_times(chip);
    let pi = chip.geometry.pages_per_block;
    let lambda = (libm::ceil(sigma * pi as f64) as u32).min(pi - 1);
    let array = t_wr + lambda as u64 * (t_rd + t_wr) + t_er;
    let full = t_wr + xfer + lambda as u64 * (t_rd + 2 * xfer + decode + t_wr) + t_er;
    (lambda, array, full)
}

/// The slowest page read, page program and block erase of `chip`, ns.
fn worst_times(chip: &ChipConfig) -> (u64, u64, u64) {
    let t = &chip.timing;
    let kinds = [BitKind::Lsb, BitKind::Csb, BitKind::Msb];
    let t_rd = kinds.iter().map(|&k| t.read(k).0).max().unwrap_or(0);
    let t_wr = kinds.iter().map(|&k| t.program(k).0).max().unwrap_or(0);
    (t_rd, t_wr, t.erase().0)
}

/// The schemes of WAO-GC's Table I.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtScheme {
    /// Pure page-level mapping, full GC on demand (the paper's "Ideal" column).
    PurePageLevel,
    /// RTGC: page-level, over-provisioned (σ), full GC at the trigger.
    Rtgc,
    /// GFTL: block-level map, LPNs in OOB, central partial-GC queue and write buffer.
    Gftl,
    /// RFTL: primary, replacement and buffer block per logical block, distributed partial GC.
    Rftl,
    /// WAO-GC: page-level, partial GC after writes, over-provisioning to U(σ).
    WaoGc,
}

impl RtScheme {
    /// Every scheme, in Table I's order.
    pub const ALL: [RtScheme; 5] = [
        RtScheme::PurePageLevel,
        RtScheme::Rtgc,
        RtScheme::Gftl,
        RtScheme::Rftl,
        RtScheme::WaoGc,
    ];

    /// Name in reports.
    pub const fn name(self) -> &'static str {
        match self {
            RtScheme::PurePageLevel => "pure-page-level",
            RtScheme::Rtgc => "rtgc",
            RtScheme::Gftl => "gftl",
            RtScheme::Rftl => "rftl",
            RtScheme::WaoGc => "wao-gc",
        }
    }
}

/// One column of Table I: a scheme's service guarantees on a chip (times in ns, array
/// times only, as the paper's; an OOB read senses a whole page, so it costs `t_rd`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TableI {
    /// Worst time of a page read request's own work, U(e_r).
    pub u_er: u64,
    /// Worst time of a page write request's own work, U(e_w).
    pub u_ew: u64,
    /// The most valid pages a victim may hold, U(λ).
    pub u_lambda: u32,
    /// Worst request latency, U(t).
    pub u_t: u64,
    /// When GC starts: free blocks left (`Some(1)`), or `None` — when the logical block's
    /// physical block is full (GFTL, RFTL) or as the tasks' space use says (RTGC).
    pub threshold: Option<u32>,
    /// Buffer pages the scheme sets aside (`None`: none).
    pub l_buf: Option<u64>,
    /// Share of the physical pages the host can use.
    pub space_utilisation: f64,
}

/// Table I for `scheme` on `chip`: `sigma` is RTGC's and WAO-GC's logical/physical ratio
/// (the paper runs RTGC at 0.75 and WAO-GC at U(σ)). Where the paper is terse, the choices:
/// the full GC of the pure page-level scheme and RTGC copies U(λ) pages and erases, after
/// the write that triggered it (U(e_G) = U(λ)(t_rd + t_wr) + t_er); GFTL's partial step
/// copies α pages like WAO-GC's, so its k = ⌈π/α⌉ + 1 and its buffer N(k + 1)/2 pages for N
/// blocks (10.16 % of the paper's chip, as its §V says); RFTL's buffer is two blocks per
/// logical block (2πN pages for N logical blocks, a third of the chip each).
pub fn table_i(chip: &ChipConfig, scheme: RtScheme, sigma: f64) -> Result<TableI, String> {
    let pi = chip.geometry.pages_per_block;
    let blocks = chip.geometry.total_blocks() as u64;
    let wao_sigma = match scheme {
        RtScheme::WaoGc | RtScheme::Rtgc => sigma,
        // The others carry no σ of their own: take the bounds at a small ratio.
        _ => 0.01,
    };
    let b = match scheme {
        // RTGC is not bound by U(σ): only α must exist for its bounds.
        RtScheme::Rtgc => WaoBounds::new(chip, 0.01)?,
        _ => WaoBounds::new(chip, wao_sigma)?,
    };
    let (t_rd, t_wr, t_er) = (b.t_rd, b.t_wr, b.t_er);
    let t_oob = t_rd;
    let full_gc = |lambda: u32| lambda as u64 * (t_rd + t_wr) + t_er;
    Ok(match scheme {
        RtScheme::PurePageLevel => TableI {
            u_er: t_rd,
            u_ew: t_wr,
            u_lambda: pi,
            u_t: t_wr + full_gc(pi),
            threshold: Some(1),
            l_buf: None,
            space_utilisation: 1.0,
        },
        RtScheme::Rtgc => {
            let lambda = libm::ceil(sigma * pi as f64) as u32;
            TableI {
                u_er: t_rd,
                u_ew: t_wr,
                u_lambda: lambda,
                u_t: t_wr + full_gc(lambda),
                threshold: None,
                l_buf: None,
                space_utilisation: sigma,
            }
        }
        RtScheme::Gftl => {
            let u_er = t_rd + pi as u64 * t_oob;
            let k = pi.div_ceil(b.alpha) as u64 + 1;
            let l_buf = blocks * (k + 1) / 2;
            TableI {
                u_er,
                u_ew: t_wr,
                u_lambda: pi,
                u_t: t_er + u_er.max(t_wr),
                threshold: None,
                l_buf: Some(l_buf),
                space_utilisation: 1.0 - l_buf as f64 / (blocks * pi as u64) as f64,
            }
        }
        RtScheme::Rftl => {
            let u_er = t_rd + t_oob;
            let u_ew = t_wr + t_oob;
            let logical = blocks / 3;
            TableI {
                u_er,
                u_ew,
                u_lambda: pi,
                u_t: u_er.max(t_er + u_ew),
                threshold: None,
                l_buf: Some(2 * pi as u64 * logical),
                space_utilisation: 1.0 / 3.0,
            }
        }
        RtScheme::WaoGc => TableI {
            u_er: t_rd,
            u_ew: t_wr,
            u_lambda: b.u_lambda,
            u_t: t_rd.max(t_er + t_wr),
            threshold: Some(1),
            l_buf: Some(b.k as u64),
            space_utilisation: sigma,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nand::Timing;

    fn chip(read_us: u64, prog_us: u64, erase_us: u64, pi: u32) -> ChipConfig {
        let mut c = ChipConfig::preset("k9k8g08u0b").unwrap();
        c.timing = Timing::uniform(read_us * 1000, prog_us * 1000, erase_us * 1000, 25_000);
        c.geometry.pages_per_block = pi;
        c
    }

    /// The paper's chip (§V): α = 6, U(σ) = 84.38 %, worst write t_er + t_wr = 1,700 µs.
    #[test]
    fn k9k8g08u0b_matches_the_paper() {
        let c = ChipConfig::preset("k9k8g08u0b").unwrap();
        let b = WaoBounds::new(&c, 0.84).unwrap();
        assert_eq!(b.alpha, 6);
        assert!((b.u_sigma - 0.84375).abs() < 1e-9, "{}", b.u_sigma);
        assert_eq!(b.worst_write(), 1_700_000);
        assert!(b.fits_one_block(), "{b:?}");
    }

    /// α from the charged copy on the paper's chip with 2,112-byte transfers of 52.8 µs and
    /// a 50 µs decode: ⌊1500 / (25 + 105.6 + 50 + 200)⌋ = 3, so U(σ) = 63·3 / (4·64) and the
    /// step of three charged copies (1,141.8 µs) stays under the erase: the worst write is
    /// the erase, the program and its transfer (1,752.8 µs), where eq. 4's six copies give
    /// 2,536.4 µs.
    #[test]
    fn charged_alpha_keeps_the_step_within_an_erase() {
        let c = ChipConfig::preset("k9k8g08u0b").unwrap();
        let (xfer, decode) = (52_800, 50_000);
        let extra = AlphaRule::Charged.copy_extra(xfer, decode);
        assert_eq!(AlphaRule::Array.copy_extra(xfer, decode), 0);
        let alpha = WaoBounds::alpha_with(&c, extra).unwrap();
        assert_eq!(alpha, 3);
        assert!(WaoBounds::with_alpha(&c, 0.84, 0, alpha).is_err());
        let b = WaoBounds::with_alpha(&c, 0.73, 0, alpha).unwrap();
        assert!(
            (b.u_sigma - 63.0 * 3.0 / 256.0).abs() < 1e-9,
            "{}",
            b.u_sigma
        );
        assert!(b.fits_one_block(), "{b:?}");
        assert_eq!(b.worst_step_with(xfer, decode), b.t_er);
        assert_eq!(b.worst_write_with(xfer, decode), 1_752_800);
        let paper = WaoBounds::new(&c, 0.84).unwrap();
        assert_eq!(paper.worst_write_with(xfer, decode), 2_536_400);
        let slow = WaoBounds::alpha_with(&c, 2_000_000).unwrap_err();
        assert!(slow.contains("transfers and decode"), "{slow}");
    }

    /// The worked example of Fig. 4: 60/600/1500 µs, π = 8, σ = 0.5 → α = 2, U(σ) ≈ 0.583,
    /// U(λ) = 4, k = 3, k + λ = 7 ≤ 8.
    #[test]
    fn figure_4_example() {
        let b = WaoBounds::new(&chip(60, 600, 1500, 8), 0.5).unwrap();
        assert_eq!((b.alpha, b.u_lambda, b.k), (2, 4, 3));
        assert!((b.u_sigma - 14.0 / 24.0).abs() < 1e-9);
        assert!(b.fits_one_block());
    }

    /// Every σ accepted keeps k + U(λ) ≤ π (eq. 6), and every σ refused below the
    /// paper's U(σ) is one whose ceilings break it (π = 32, α = 6, σ = 0.815 is one).
    #[test]
    fn accepted_ratios_fit_one_block() {
        let mut refused_below_u = 0;
        for (rd, wr, er) in [
            (25, 200, 1500),
            (50, 900, 3000),
            (60, 600, 1500),
            (20, 300, 700),
        ] {
            for pi in [8, 32, 64, 128, 256] {
                let c = chip(rd, wr, er, pi);
                let u = WaoBounds::new(&c, 0.01).unwrap().u_sigma;
                for step in 1..=50 {
                    let sigma = u * step as f64 / 50.0;
                    match WaoBounds::new(&c, sigma) {
                        Ok(b) => {
                            assert!(b.fits_one_block(), "{rd}/{wr}/{er} π={pi} σ={sigma}: {b:?}")
                        }
                        Err(_) => {
                            let lambda = libm::ceil(sigma * pi as f64) as u32;
                            let alpha = (er / (rd + wr)) as u32;
                            assert!(lambda.div_ceil(alpha) + 1 + lambda > pi);
                            refused_below_u += 1;
                        }
                    }
                }
            }
        }
        assert!(refused_below_u > 0);
        let e = WaoBounds::new(&chip(25, 200, 1500, 32), 0.815).unwrap_err();
        assert!(e.contains("at most 26 valid pages"), "{e}");
    }

    #[test]
    fn bad_configurations_name_the_bound() {
        let e = WaoBounds::new(&chip(25, 200, 1500, 64), 0.9).unwrap_err();
        assert!(e.contains("U(σ) = 0.8438") && e.contains("α = 6"), "{e}");
        let e = WaoBounds::new(&chip(100, 1000, 1000, 64), 0.5).unwrap_err();
        assert!(e.contains("α = 0"), "{e}");
    }

    /// Table I on the paper's chip: WAO-GC's bound is t_er + t_wr (1,700 µs); GFTL's
    /// buffer costs 10.16 % of the chip (§V), RFTL two thirds; the pure page-level scheme's
    /// worst case is a write plus a whole-block GC.
    #[test]
    fn table_i_on_the_paper_chip() {
        let c = ChipConfig::preset("k9k8g08u0b").unwrap();
        let u = WaoBounds::new(&c, 0.5).unwrap().u_sigma;
        let row = |s| table_i(&c, s, if s == RtScheme::Rtgc { 0.75 } else { u }).unwrap();
        let wao = row(RtScheme::WaoGc);
        assert_eq!(wao.u_t, 1_700_000);
        assert_eq!(
            (wao.u_lambda, wao.l_buf, wao.threshold),
            (54, Some(10), Some(1))
        );
        assert!((wao.space_utilisation - 0.84375).abs() < 1e-9);
        let gftl = row(RtScheme::Gftl);
        assert!(
            (1.0 - gftl.space_utilisation - 0.1016).abs() < 1e-3,
            "{gftl:?}"
        );
        assert_eq!(gftl.u_er, 25_000 + 64 * 25_000);
        assert_eq!(gftl.u_t, 1_500_000 + gftl.u_er);
        let rftl = row(RtScheme::Rftl);
        assert_eq!(rftl.u_t, 1_500_000 + 200_000 + 25_000);
        assert!((rftl.space_utilisation - 1.0 / 3.0).abs() < 1e-9);
        let ideal = row(RtScheme::PurePageLevel);
        assert_eq!(ideal.u_t, 200_000 + 64 * 225_000 + 1_500_000);
        let rtgc = row(RtScheme::Rtgc);
        assert_eq!(rtgc.u_lambda, 48);
        assert_eq!(rtgc.u_t, 200_000 + 48 * 225_000 + 1_500_000);
        // WAO-GC has the lowest worst case of the five.
        for s in RtScheme::ALL {
            assert!(row(s).u_t >= wao.u_t, "{}", s.name());
        }
    }

    /// On MLC the slowest page kind bounds both times.
    #[test]
    fn multi_level_chips_take_the_slowest_page() {
        let c = ChipConfig::preset("tiny-mlc").unwrap();
        let b = WaoBounds::new(&c, 0.3).unwrap();
        assert_eq!(
            b.t_rd,
            c.timing
                .read(BitKind::Msb)
                .0
                .max(c.timing.read(BitKind::Lsb).0)
        );
        assert_eq!(
            b.t_wr,
            c.timing
                .program(BitKind::Msb)
                .0
                .max(c.timing.program(BitKind::Lsb).0)
        );
    }
}
