//! The combined profile (`[ftl] scheme = "combined"`): one page-level FTL with the
//! techniques of nandlab's five papers that compose on the page kernel, each as the policy
//! its paper defines, their conflicts settled where they meet (see ARCHITECTURE.md,
//! "The combined profile"):
//!
//! - **AP** (Ref. 000): critical pages kept out of LSB pages — MSB allocation
//!   ([`PlacementKind::MsbCritical`]) and asymmetric GC ([`CopyOrderKind::Asymmetric`]);
//! - **FLARES** (Ref. 002): per-page BCH strength from Alg. 1/2 with rewrite alarms and
//!   the idle-time scrub ([`EccKind::Flares`]); metadata pages at `ecc_t`, the worst case;
//! - **WAO-GC** (Ref. 003): one partial GC step after each write, writes and copies sharing
//!   one destination per die ([`PacingKind::WaoGc`]), its bound re-derived with AP's pads and
//!   FLARES's decode at `t_max`, rewrites paced as writes in idle time;
//! - **DCR's idea over the page map** (Ref. 004): checkpoint plus deterministic
//!   roll-forward of the blocks the allocator can have opened since
//!   ([`RecoveryKind::RollForward`]), its young blocks left out of WAO-GC's σ, its
//!   checkpoints written in bounded steps beside the writes (a snapshot encoded at a
//!   point, a region erase or page per step, the old checkpoint committed until the new
//!   one's last page: `page::cpstep`) or at flushes and in idle time.
//!
//! SPFTL (Ref. 001) is not part of it yet. Its subpage programming is available for the
//! page kernel's metadata units (`meta_writer = "subpage"`: the checkpoint region's
//! checkpoint pages and log records as subpages of SLC-mode SP blocks) but off by default:
//! measured (`reproduce combined`, part `combined-spftl`), it saves 21 % of the profile's
//! metadata bytes for a 7 % higher NWI at 1.28× its recovery time — the page kernel's
//! checkpoints write its whole map, which fills subpages as it fills pages, while an SP
//! block holds half a page block's bytes per erase (while the profile checkpointed every
//! three blocks per die the subpage region's larger log also saved checkpoints: −40 %
//! bytes, −16 % NWI). SPFTL gains with small
//! updates, i.e. with its demand-paged map, which lives in its own kernel (`ftl::dftl`) so
//! far.
//!
//! The profile fits itself to the chip at format and mount (both apply the same rule, so
//! they agree): on a single-level chip AP has no MSB page to prefer and is left out
//! (striped placement, ascending copies); FLARES's `t_max` (and `ecc_t`, the strength of
//! metadata pages) is capped to the largest strength whose parity and PPROF codeword fit
//! the spare area; on a chip without subpages (or whose subpage spare cannot hold a
//! unit's record and parity) SPFTL's units are left out (whole pages), and where they
//! stay `ecc_t` is capped to what a subpage's spare slice holds. Over-provisioning starts at the profile's 0.3 and is raised at format
//! to the first hundredth WAO-GC's bound holds at (U(σ) with the young blocks left out);
//! a value given explicitly is taken as given, and refused naming the key if the bound
//! cannot hold.

use crate::flares::FlaresConfig;
use crate::policy::{CopyOrderKind, EccKind, MetaWriterKind, PacingKind, PlacementKind};
use crate::{FtlError, PageFtlConfig, RecoveryKind, VictimKind};
use alloc::format;
use controller::Controller;
use nand::{CellType, ErrorModel, Storage};

/// The combined profile's configuration before it is fitted to a chip.
///
/// Over-provisioning 0.3 (WAO-GC's σ with three young blocks per die left out, on the
/// FLARES and AP chips' geometries at their 2–3 copies per step), raised at format in
/// hundredths to the first value WAO-GC's bound holds at on a chip that needs more (fewer
/// copies per step, fewer blocks per die: `auto_over_provisioning`); a budget of blocks per
/// die opened since the last checkpoint (the young blocks roll-forward needs kept from GC),
/// automatic (`checkpoint_interval = 0`): three, or enough that the writes between two
/// checkpoints program 8 times the checkpoint's pages when the map is large
/// (`PageFtl::young_budget_for`; three rather than two on the paper-scale chips: on the
/// real-trace replays half the checkpoints, 7–8 % lower mean response, the same recovery
/// time — ARCHITECTURE.md), and more on a die whose free blocks or whose valid pages
/// outside the young blocks allow it (`Substrate::young_left`, `settle_young`: the budget
/// is what a full die needs). A checkpoint is written in steps beside the writes before a
/// die would open a block past its allowance, and at a flush as the page kernel's rule has
/// it (four blocks per die, more for a large checkpoint) within it; no static wear
/// levelling (a migration would take a block outside the partial steps; wear is levelled
/// only as blocks are opened, the least-worn free block first); the flush buffer, its SLC-mode destinations only while the die
/// has a free block to spare beyond the reserve, so GC always collects into a native
/// block of the π pages the bound counts (`Substrate::opens_slc`).
pub fn profile() -> PageFtlConfig {
    PageFtlConfig {
        over_provisioning: 0.3,
        auto_over_provisioning: true,
        victim: VictimKind::Greedy,
        placement: PlacementKind::MsbCritical,
        copy_order: CopyOrderKind::Asymmetric,
        gc_pacing: PacingKind::WaoGc,
        wear_leveling: None,
        ecc_t: 50,
        ecc: EccKind::Flares(FlaresConfig::default()),
        checkpoint_interval: 0,
        recovery: RecoveryKind::RollForward,
        flush_buffer: true,
        ..PageFtlConfig::default()
    }
}

/// `cfg` fitted to the chip behind `ctl` (see the module docs): AP left out on a
/// single-level chip; FLARES's `t_max`, `t_min` and `ecc_t` capped to the strongest code
/// the spare area holds beside the PPROF codeword; SPFTL's subpage metadata units (and
/// SPFTL_log's map logs) left out on a chip without subpages, and where they stay, `ecc_t`
/// (their strength) capped to what a subpage's spare slice holds. Errors if not even
/// t = 1 fits.
pub fn fit<S: Storage, M: ErrorModel>(
    mut cfg: PageFtlConfig,
    ctl: &mut Controller<S, M>,
) -> Result<PageFtlConfig, FtlError> {
    if ctl.chip().config().cell == CellType::Slc {
        cfg.placement = PlacementKind::Striped;
        cfg.copy_order = CopyOrderKind::Ascending;
    }
    if let EccKind::Flares(mut f) = cfg.ecc {
        ctl.enable_pprof()
            .map_err(|e| FtlError::Config(format!("flares: {e}")))?;
        let strongest = ctl
            .strongest_fitting(f.t_max.max(cfg.ecc_t))
            .ok_or_else(|| {
                FtlError::Config(format!(
                    "combined: no BCH strength fits chip {}'s spare area beside the PPROF codeword",
                    ctl.chip().config().name
                ))
            })?;
        f.t_max = f.t_max.min(strongest);
        f.t_min = f.t_min.min(f.t_max);
        cfg.ecc_t = cfg.ecc_t.min(strongest);
        cfg.ecc = EccKind::Flares(f);
    } else {
        cfg.ecc_t = cfg.ecc_t.min(ctl.max_t().max(1));
    }
    if cfg.meta_writer == MetaWriterKind::Subpage || cfg.map_log {
        // Metadata units (or the paged map's logs) are subpages: their strength (`ecc_t`)
        // is capped to what a subpage's spare slice holds. A chip without subpages, or
        // whose subpage spare cannot hold a unit's record and parity, leaves SPFTL's units
        // and logs out (whole pages).
        match (1..=cfg.ecc_t)
            .rev()
            .find(|&t| ctl.subpage_layout(t).is_ok())
        {
            Some(t) => cfg.ecc_t = t,
            None => {
                cfg.meta_writer = MetaWriterKind::WholePage;
                cfg.map_log = false;
            }
        }
    }
    Ok(cfg)
}
