//! The page kernel's schemes with one destination per die (WAO-GC and the full GC on
//! demand of its Table I, Ref. 003): what their bounds need of the configuration, and the
//! bounds themselves for a sized volume.

use super::map::MapStore;
use super::{PageFtl, PageFtlConfig};
use crate::policy::{PlacementKind, RESERVE};
use crate::rt_bounds::WaoBounds;
use crate::substrate::BState;
use crate::RecoveryKind;
use crate::{FtlError, LatencyBound};
use alloc::format;
use controller::Controller;
use nand::{ErrorModel, Storage};

/// The fewest blocks per die an automatic young budget keeps (a real-time pacing with
/// roll-forward recovery): see `PageFtl::young_budget_for`.
pub(super) const YOUNG_MIN: u32 = 3;
/// An automatic young budget lets the writes between two checkpoints program at least this
/// many times the checkpoint's pages (its cost at most about 3 % of what the flash writes).
pub(super) const YOUNG_AMORTISE: u64 = 8;

impl<S: Storage, M: ErrorModel> PageFtl<S, M> {
    /// What WAO-GC's bound needs of the rest of the configuration (the σ check comes when
    /// the volume is sized). Each refusal names the key.
    pub(super) fn check_real_time(
        ctl: &mut Controller<S, M>,
        cfg: &PageFtlConfig,
    ) -> Result<(), FtlError> {
        let name = cfg.gc_pacing.policy(1).name();
        let refuse = |key: &str, why: &str| {
            Err(FtlError::Config(format!(
                "gc_pacing = \"{name}\" needs {key}: {why}"
            )))
        };
        if cfg.gc_pacing.is_real_time() {
            Self::wao_alpha(ctl, cfg)?;
        }
        if cfg.wear_leveling.is_some() {
            return refuse(
                "wear_leveling off",
                "a migration would take the die's last free block outside the partial steps (wear is levelled only as blocks are opened: the least-worn free block first)",
            );
        }
        if cfg.replicas > 0 {
            return refuse(
                "replicas = 0",
                "backup copies are programs the bound does not count",
            );
        }
        if cfg.placement == PlacementKind::HintStreams {
            return refuse(
                "placement = \"striped\" or \"msb-critical\"",
                "writes and copies share one destination block per die: there is no cold stream",
            );
        }
        Ok(())
    }

    /// WAO-GC's α on `ctl`'s chip under `cfg.wao_alpha`: eq. 4 in array times, or with
    /// each copy charged its two page transfers (data and spare) and the worst decode at
    /// the strongest correction the volume programs ([`crate::rt_bounds::AlphaRule`]). Errors, naming the
    /// keys, when no copy fits within an erase.
    pub(super) fn wao_alpha(
        ctl: &mut Controller<S, M>,
        cfg: &PageFtlConfig,
    ) -> Result<u32, FtlError> {
        cfg.wao_alpha.alpha(ctl, cfg.strongest_t()).map_err(|e| {
            FtlError::Config(format!(
                "gc_pacing = \"wao-gc\" with wao_alpha = \"{}\": {e}",
                cfg.wao_alpha.name()
            ))
        })
    }

    /// WAO-GC's bounds for a volume of `logical` pages: σ is the worst die's share of the logical pages
    /// (a logical page always lives on die `lpn mod dies`) over the pages of its good data
    /// blocks but the destination and the reserve, so eq. 7's greedy
    /// argument holds on every die; on multi-level chips a victim's erase may wait the
    /// pairing window for its copies to be sealed ([`WaoBounds::with_wait`]).
    ///
    /// [`WaoBounds::with_wait`]: crate::rt_bounds::WaoBounds::with_wait
    fn real_time_bounds(&self, logical: u64) -> Result<WaoBounds, FtlError> {
        let sigma = self.die_sigma(logical);
        let chip = self.s.controller().chip().config();
        let b = WaoBounds::with_alpha(chip, sigma, self.s.window, self.alpha).map_err(|e| {
            let young = match self.young_budget_for(logical) {
                0 => alloc::string::String::new(),
                y => format!(
                    " and roll-forward recovery (checkpoint_interval = {y}: up to {y} blocks per die written since the last checkpoint are kept from GC and left out of σ's blocks)"
                ),
            };
            FtlError::Config(format!(
                "gc_pacing = \"wao-gc\" with over_provisioning = {}{young}: {e}",
                self.cfg.over_provisioning
            ))
        })?;
        let (pads, t_pad) = self.pads_per_program();
        let steps = if self.young_budget_for(logical) > 0 {
            self.steps_per_write(logical, b.alpha, pads, b.pad_slack())
        } else {
            0
        };
        Ok(b.with_pads(pads, t_pad).with_checkpoint_steps(steps))
    }

    /// A demand-paged map's worst cost of one map update (a miss: the translation page's
    /// read, transfer and decode at `ecc_t`, and its log's with `map_log`; a dirty
    /// eviction: its transfer and program in an SLC-mode block, a log's being a subpage's)
    /// and of one upkeep step (that copy, or a partition block's erase), ns, with a page's transfer `xfer` and the worst decode `decode` (of the strongest t:
    /// a bound for a unit's); (0, 0) with the map in RAM.
    fn map_costs(&self, xfer: u64, decode: u64) -> (u64, u64) {
        let super::map::MapSlot::Paged(p) = &self.map else {
            return (0, 0);
        };
        let t = &self.s.controller().chip().config().timing;
        let lsb = nand::BitKind::Lsb;
        // With SPFTL_log a miss reads the page and its log (a subpage: bounded by a page).
        let reads = if p.has_logs() { 2 } else { 1 };
        let miss = reads * (t.read(lsb).0 + xfer + decode);
        let write_back = xfer + t.program(lsb).0;
        let update = miss + write_back;
        (update, t.erase_ns.max(update))
    }

    /// The most padding pages the placement can program before one page (the longest run
    /// of unreliable pages in a block, when the placement keeps critical pages out of
    /// them; 0 otherwise) and the slowest program of such a page, ns.
    fn pads_per_program(&self) -> (u32, u64) {
        if !self.s.placement.protects_critical() {
            return (0, 0);
        }
        let (mut run, mut longest) = (0u32, 0u32);
        for &bit in &self.s.bits {
            run = if bit == nand::BitKind::Msb {
                0
            } else {
                run + 1
            };
            longest = longest.max(run);
        }
        let t = &self.s.controller().chip().config().timing;
        let t_pad = [nand::BitKind::Lsb, nand::BitKind::Csb]
            .iter()
            .map(|&k| t.program(k).0)
            .max()
            .unwrap_or(0);
        (longest, t_pad)
    }

    /// The latency bound of a scheme with one destination per die on a volume of `logical`
    /// pages (WAO-GC's checked bounds, or full GC on demand's), with this controller's
    /// transfer and worst decode (sets `rt` for WAO-GC).
    pub(super) fn shared_destination_bound(
        &mut self,
        logical: u64,
    ) -> Result<LatencyBound, FtlError> {
        let xfer = self.s.controller().chip().config().page_transfer().0;
        let strongest = self.cfg.strongest_t();
        let decode = self
            .s
            .worst_decode(strongest)
            .map_err(|e| FtlError::Config(format!("ecc t = {strongest}: {e}")))?
            .0;
        let read_ns = WaoBounds::read_bound(self.s.controller().chip().config(), xfer, decode);
        if self.cfg.gc_pacing.is_real_time() {
            let (update, upkeep) = self.map_costs(xfer, decode);
            let b = self.real_time_bounds(logical)?.with_map(update, upkeep);
            self.rt = Some(b);
            // Pads while a victim is collected stay within eq. 6's slack (AP's placement).
            self.s.pad_slack = b.pad_slack();
            self.s.young_budget = self.young_budget_for(logical);
            self.s.young_lambda = b.u_lambda;
            self.s.settle_young();
            self.cp_steps_per_write = b.cp_steps.max(1);
            for d in &mut self.s.dies {
                d.pads_left = d.pads_left.min(b.pad_slack());
            }
            let ndies = self.s.dies.len() as u32;
            let seal = ndies * 2 * self.s.window;
            let (cp_programs, cp_erases) = self.checkpoint_steps_split(logical);
            return Ok(LatencyBound {
                write_ns: b.worst_write_with(xfer, decode),
                read_ns: b.worst_read_with(xfer, decode),
                array_write_ns: b.worst_write(),
                u_lambda: b.u_lambda,
                l_buf: b.k,
                alpha: b.alpha,
                trim_ns: b.worst_trim_with(xfer),
                flush_ns: b.worst_flush_with(xfer, decode, ndies, seal, cp_programs, cp_erases),
            });
        }
        let sigma = self.die_sigma(logical);
        let (u_lambda, array, full) = crate::rt_bounds::on_demand_bound(
            self.s.controller().chip().config(),
            sigma,
            xfer,
            decode,
        );
        Ok(LatencyBound {
            write_ns: full,
            read_ns,
            array_write_ns: array,
            u_lambda,
            l_buf: 0,
            ..LatencyBound::default()
        })
    }

    /// Blocks per die roll-forward recovery keeps from GC: DCR's rule (a block written
    /// since the last checkpoint is not erased before the next one) applies to every block
    /// opened since it, and with a real-time pacing a flush writes the checkpoint once
    /// [`checkpoint_interval_blocks`](Self::checkpoint_interval_blocks) have opened on any
    /// one die (`checkpoint_due`) — so, for a host that flushes (or idles) at least that
    /// often, at most that many blocks per die are young. 0 with full-scan recovery.
    ///
    /// Eq. 7's greedy argument then runs over the other blocks: they hold every valid page
    /// when the young ones hold none, so σ is the die's share over its data blocks but the
    /// destination, the reserve and these. A write that finds only young victims writes the
    /// checkpoint itself and counts an overrun (the bound's premise — a flush every that
    /// many blocks — broke). This is the worst case, a die full of live data outside its
    /// young blocks: a die with free blocks to spare, or whose young blocks hold enough of
    /// the live data, may open more before the checkpoint is due
    /// ([`Substrate::young_left`](crate::substrate::Substrate::young_left)).
    ///
    /// For a volume of `logical` pages. Configured
    /// (`checkpoint_interval` > 0), it is that. Automatic under a real-time pacing, it
    /// amortises the checkpoint: at least [`YOUNG_MIN`] blocks per die, and enough that
    /// the writes between two checkpoints, spread over the dies, program at least
    /// [`YOUNG_AMORTISE`] times the checkpoint's pages. A whole-map checkpoint of a large
    /// volume is hundreds of pages: three blocks per die between two of them would make
    /// it most of what the flash writes (a 1 GiB volume on `tiny-mlc` under ext4: 197
    /// checkpoints and 255 MB of metadata for mkfs and a few MB of files). The price is
    /// over-provisioning (these blocks are left out of σ) and roll-forward's scan (at most
    /// this many blocks per die), both in proportion to the map.
    pub(super) fn young_budget_for(&self, logical: u64) -> u32 {
        if self.cfg.recovery != RecoveryKind::RollForward {
            return 0;
        }
        if self.cfg.checkpoint_interval > 0 || !self.cfg.gc_pacing.is_real_time() {
            return self.checkpoint_interval_blocks();
        }
        let ndies = self.s.dies.len().max(1) as u64;
        let len = super::snapshot::max_snapshot_len(self.s.dies.len(), self.s.state.len(), logical);
        let body = (len as u64).div_ceil(self.region.payload(&self.s).max(1) as u64);
        let per_die = (YOUNG_AMORTISE * body).div_ceil(self.s.ppb().max(1) as u64 * ndies);
        (per_die as u32).max(YOUNG_MIN)
    }

    /// The worst die's share of `logical` pages over the pages of its good data blocks but
    /// the destination, the reserve (neither holds a victim when GC starts) and the blocks
    /// roll-forward recovery keeps from GC ([`young_budget_for`](Self::young_budget_for)).
    fn die_sigma(&self, logical: u64) -> f64 {
        let ndies = self.s.dies.len() as u64;
        let bpd = self.s.blocks_per_die;
        let worst = (0..ndies as u32)
            .map(|d| {
                (d * bpd..(d + 1) * bpd)
                    .filter(|&b| {
                        !matches!(
                            self.s.state[b as usize],
                            BState::Bad | BState::Region | BState::Map
                        )
                    })
                    .count() as u64
            })
            .min()
            .unwrap_or(0);
        let kept = 1 + RESERVE as u64 + self.young_budget_for(logical) as u64;
        let pages = worst.saturating_sub(kept) * self.s.ppb() as u64;
        logical.div_ceil(ndies) as f64 / pages.max(1) as f64
    }

    /// After a mount: critical pages the recovered map finds in unreliable slots are lapses
    /// (the RAM set of them did not survive; what flash holds is the state to keep). A RAM
    /// pass over the map and the critical-page bitmap, no flash access.
    pub(super) fn note_lapses_after_mount(&mut self) {
        if !self.s.placement.protects_critical() {
            return;
        }
        for lpn in 0..self.logical {
            let Some(p) = self.map.peek(lpn) else {
                continue;
            };
            if p != super::INVALID
                && p != super::LOST
                && self.is_critical(lpn)
                && !self.s.slot(p).reliable()
            {
                self.s.mark_lapse(p, true);
            }
        }
    }

    /// WAO-GC's bounds for this volume (`None` unless `gc_pacing = "wao-gc"`).
    pub fn wao_bounds(&self) -> Option<&WaoBounds> {
        self.rt.as_ref()
    }
}
