//! The scheme factory: one place that formats and mounts any FTL scheme from its
//! configuration, so simulators, harnesses and servers never name a scheme's type.
//!
//! A [`SchemeConfig`] names a scheme and carries its settings (and through them its policy
//! objects: victim choice, recovery procedure, …). [`SchemeConfig::format`] and
//! [`SchemeConfig::mount`] return a boxed [`Volume`]: the [`Ftl`] interface plus what a
//! harness needs around it (the controller, the mount's recovery report, invariant checks).
//! [`Volume`] has one blanket implementation over the kernels (a sealed trait that each
//! kernel's `volume_kernel!` line implements from its own `mapping`, `free_blocks` and
//! `verify`). A new scheme is a new variant here and one such line; no consumer changes.

use crate::policy::Registry;
use crate::recovery::{RecoveryKind, RecoveryReport};
use crate::{
    BlockFtl, BlockFtlConfig, DftlConfig, DftlFtl, Ftl, FtlError, Invariant, MetaMode,
    MountFailure, PageFtl, PageFtlConfig, RtBlockConfig, RtBlockFtl, RtKind,
};
use alloc::boxed::Box;
use alloc::vec::Vec;
use controller::Controller;
use nand::{ChipConfig, ErrorModel, Nanos, PhysAddr, Storage};
use serde::{Deserialize, Serialize};

/// A formatted or mounted volume of any scheme.
pub trait Volume<S: Storage, M: ErrorModel>: Ftl {
    /// The scheme's name in reports.
    fn scheme(&self) -> &'static str;
    /// The controller (ECC statistics, chip).
    fn controller(&self) -> &Controller<S, M>;
    /// The controller, mutably (fault injection in tests and harnesses).
    fn controller_mut(&mut self) -> &mut Controller<S, M>;
    /// Consumes the volume, returning its controller (to remount the same chip).
    fn into_controller(self: Box<Self>) -> Controller<S, M>;
    /// What the last mount did, if this volume was mounted.
    fn recovery_report(&self) -> Option<&RecoveryReport>;
    /// Where logical page `lpn` lives (`None` if unmapped, trimmed or lost).
    fn mapping(&self, lpn: u64) -> Option<PhysAddr>;
    /// Free blocks on each die.
    fn free_blocks(&self) -> Vec<usize>;
    /// The checkpoint region's current blocks, for schemes that keep one (page and block
    /// level; empty for the others): where its rotation has taken it.
    fn region_blocks(&self) -> Vec<u32> {
        Vec::new()
    }
    /// Checks every invariant the scheme states; `Err` names the first one broken. A pass
    /// over the scheme's tables: for tests, harnesses and debug builds.
    fn verify(&self) -> Result<(), Invariant>;
}

/// What the blanket [`Volume`] implementation asks of a kernel. Sealed (a public trait in
/// a private module): only this crate's kernels implement it. The controller and the last
/// mount's report come from what every kernel has (its substrate and its recovery report);
/// the rest are the kernel's own answers.
mod sealed {
    use crate::recovery::RecoveryReport;
    use crate::{Ftl, Invariant};
    use alloc::vec::Vec;
    use controller::Controller;
    use nand::{ErrorModel, PhysAddr, Storage};

    pub trait VolumeKernel<S: Storage, M: ErrorModel>: Ftl {
        /// The scheme's name in reports.
        fn scheme_name(&self) -> &'static str;
        /// The substrate's controller.
        fn ctl(&self) -> &Controller<S, M>;
        /// The substrate's controller, mutably.
        fn ctl_mut(&mut self) -> &mut Controller<S, M>;
        /// Consumes the kernel, returning its substrate's controller.
        fn into_ctl(self) -> Controller<S, M>;
        /// What the last mount did.
        fn last_recovery(&self) -> Option<&RecoveryReport>;
        /// [`Volume::mapping`](super::Volume::mapping).
        fn where_is(&self, lpn: u64) -> Option<PhysAddr>;
        /// [`Volume::free_blocks`](super::Volume::free_blocks).
        fn free_per_die(&self) -> Vec<usize>;
        /// [`Volume::region_blocks`](super::Volume::region_blocks).
        fn region_now(&self) -> Vec<u32> {
            Vec::new()
        }
        /// [`Volume::verify`](super::Volume::verify).
        fn check_all(&self) -> Result<(), Invariant>;
    }
}

impl<S: Storage, M: ErrorModel, K: sealed::VolumeKernel<S, M>> Volume<S, M> for K {
    fn scheme(&self) -> &'static str {
        self.scheme_name()
    }
    fn controller(&self) -> &Controller<S, M> {
        self.ctl()
    }
    fn controller_mut(&mut self) -> &mut Controller<S, M> {
        self.ctl_mut()
    }
    fn into_controller(self: Box<Self>) -> Controller<S, M> {
        (*self).into_ctl()
    }
    fn recovery_report(&self) -> Option<&RecoveryReport> {
        self.last_recovery()
    }
    fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        self.where_is(lpn)
    }
    fn free_blocks(&self) -> Vec<usize> {
        self.free_per_die()
    }
    fn region_blocks(&self) -> Vec<u32> {
        self.region_now()
    }
    fn verify(&self) -> Result<(), Invariant> {
        self.check_all()
    }
}

/// Each kernel's answers, and what every kernel has the same way: the controller of its
/// substrate (`s.controller()`) and its last mount's report (`recovery`) as inherent methods; its
/// own inherent `mapping`, `free_blocks`, `verify` (and `region_blocks` where it keeps a
/// region) behind the sealed trait.
macro_rules! volume_kernel {
    ($ty:ident, |$v:ident| $scheme:expr $(, region: $region:ident)?) => {
        impl<S: Storage, M: ErrorModel> $ty<S, M> {
            /// The controller (ECC statistics, chip).
            pub fn controller(&self) -> &Controller<S, M> {
                self.s.controller()
            }

            /// The controller, mutably (fault injection in tests and harnesses).
            pub fn controller_mut(&mut self) -> &mut Controller<S, M> {
                self.s.controller_for_harness()
            }

            /// Consumes the volume, returning its controller (to remount the same chip).
            pub fn into_controller(self) -> Controller<S, M> {
                self.s.into_controller()
            }

            /// What the last mount did (procedure, pages and blocks read, simulated time;
            /// `None` for a volume formatted, not mounted).
            pub fn recovery_report(&self) -> Option<&RecoveryReport> {
                self.recovery.as_ref()
            }

            /// Ends a mount: the report kept and, with `verify`, the volume checked in
            /// debug builds ([`crate::debug_verify`]); or the error with the controller
            /// handed back.
            pub(crate) fn mounted(
                mut self,
                recovered: Result<RecoveryReport, FtlError>,
                verify: bool,
            ) -> Result<Self, Box<crate::MountFailure<S, M>>> {
                match recovered {
                    Ok(report) => {
                        self.recovery = Some(report);
                        if verify {
                            crate::debug_verify("mount", || self.verify());
                        }
                        Ok(self)
                    }
                    Err(error) => Err(crate::MountFailure::boxed(error, self.s.into_controller())),
                }
            }
        }

        impl<S: Storage, M: ErrorModel> sealed::VolumeKernel<S, M> for $ty<S, M> {
            fn scheme_name(&self) -> &'static str {
                let $v = self;
                $scheme
            }
            fn ctl(&self) -> &Controller<S, M> {
                $ty::controller(self)
            }
            fn ctl_mut(&mut self) -> &mut Controller<S, M> {
                $ty::controller_mut(self)
            }
            fn into_ctl(self) -> Controller<S, M> {
                $ty::into_controller(self)
            }
            fn last_recovery(&self) -> Option<&RecoveryReport> {
                $ty::recovery_report(self)
            }
            fn where_is(&self, lpn: u64) -> Option<PhysAddr> {
                $ty::mapping(self, lpn)
            }
            fn free_per_die(&self) -> Vec<usize> {
                $ty::free_blocks(self)
            }
            $(fn region_now(&self) -> Vec<u32> {
                $ty::$region(self)
            })?
            fn check_all(&self) -> Result<(), Invariant> {
                $ty::verify(self)
            }
        }
    };
}

volume_kernel!(PageFtl, |_v| "page", region: region_blocks);
volume_kernel!(BlockFtl, |_v| "block", region: region_blocks);
volume_kernel!(RtBlockFtl, |v| v.kind().name());
volume_kernel!(DftlFtl, |v| v.mode().scheme());

/// A boxed volume over controller `Controller<S, M>` (`Send`: a server may hand it to
/// another thread behind a lock).
pub type BoxedVolume<S, M> = Box<dyn Volume<S, M> + Send>;

/// Every scheme by name: the one registry the configuration's `[ftl] scheme`, the command
/// line's `--scheme` and the reports' scheme names are derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchemeKind {
    /// Page-level mapping ([`PageFtl`]).
    #[default]
    Page,
    /// Block-level mapping ([`BlockFtl`]; DCR's setting).
    Block,
    /// GFTL ([`RtBlockFtl`], WAO-GC's Table I).
    Gftl,
    /// RFTL ([`RtBlockFtl`], WAO-GC's Table I).
    Rftl,
    /// DFTL_por ([`DftlFtl`], SPFTL's baseline).
    DftlPor,
    /// SPFTL ([`DftlFtl`] with subpage metadata units).
    Spftl,
    /// SPFTL_log ([`DftlFtl`] with subpage logs).
    SpftlLog,
    /// The combined profile ([`PageFtl`] configured by [`crate::combined`]).
    Combined,
}

impl SchemeKind {
    /// Every scheme, in the order help texts list them.
    pub const ALL: [SchemeKind; 8] = [
        SchemeKind::Page,
        SchemeKind::Block,
        SchemeKind::Gftl,
        SchemeKind::Rftl,
        SchemeKind::DftlPor,
        SchemeKind::Spftl,
        SchemeKind::SpftlLog,
        SchemeKind::Combined,
    ];

    /// Its name in files, on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            SchemeKind::Page => "page",
            SchemeKind::Block => "block",
            SchemeKind::Gftl => "gftl",
            SchemeKind::Rftl => "rftl",
            SchemeKind::DftlPor => "dftl-por",
            SchemeKind::Spftl => "spftl",
            SchemeKind::SpftlLog => "spftl-log",
            SchemeKind::Combined => "combined",
        }
    }

    /// One line on what it is (for help texts).
    pub const fn about(self) -> &'static str {
        match self {
            SchemeKind::Page => "the page-level mapping FTL",
            SchemeKind::Block => {
                "the block-level mapping FTL (DCR's setting: roll-forward recovery is DCR, \
                 full-scan the version-based scan)"
            }
            SchemeKind::Gftl => "GFTL (WAO-GC's Table I; SLC chips; full-scan recovery)",
            SchemeKind::Rftl => "RFTL (WAO-GC's Table I; SLC chips; full-scan recovery)",
            SchemeKind::DftlPor => "DFTL_por (SPFTL's baseline: metadata in whole SLC-mode pages)",
            SchemeKind::Spftl => "SPFTL (metadata units in subpages; a chip with subpages)",
            SchemeKind::SpftlLog => "SPFTL_log (metadata updates logged by subpages)",
            SchemeKind::Combined => {
                "the combined profile (AP, FLARES, WAO-GC and roll-forward recovery on the \
                 page-level FTL)"
            }
        }
    }

    /// The scheme named `name` (as [`name`](Self::name) spells it).
    pub fn from_name(name: &str) -> Option<SchemeKind> {
        SchemeKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Chips of this many pages or more get a packed digest-mode store
/// ([`SchemeConfig::digest_storage`]): 2²⁶ pages (256 GiB of 4 KiB pages), where the
/// spare prefixes alone would take 2 GiB. Below it the simulator keeps the faster
/// unpacked slots: packing costs about a tenth of the NAND operations per second on a
/// 1 GiB device (`nandlab bench --pack-mib 1024`: 0.88× random writes, 0.91× 70/30; a
/// parity and a check recomputed per program and per read; docs/performance.md).
pub const PACK_SPARE_FROM_PAGES: u64 = 1 << 26;

/// Every scheme by name, with its settings.
///
/// In an experiment file: `[ftl] scheme = "page"` and the scheme's table (`[ftl.page]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchemeConfig {
    /// The page-level mapping FTL ([`PageFtl`]).
    Page(PageFtlConfig),
    /// The block-level mapping FTL ([`BlockFtl`]; DCR's setting).
    Block(BlockFtlConfig),
    /// GFTL ([`RtBlockFtl`], WAO-GC's Table I): block-level map, central write buffer and
    /// GC queue, partial steps after every request.
    Gftl(RtBlockConfig),
    /// RFTL ([`RtBlockFtl`], WAO-GC's Table I): primary, replacement and buffer block per
    /// logical block, distributed partial GC.
    Rftl(RtBlockConfig),
    /// DFTL_por ([`DftlFtl`], SPFTL's baseline): demand-paged page map (CPMT), block
    /// information (CBIT), GXT, metadata in whole SLC-mode pages.
    DftlPor(DftlConfig),
    /// SPFTL ([`DftlFtl`]): DFTL_por with every metadata unit a subpage of an SP block.
    Spftl(DftlConfig),
    /// SPFTL_log ([`DftlFtl`]): DFTL_por whose metadata updates are logged by subpages in
    /// SP logging blocks (coalesced per unit, merged when a log subpage fills).
    SpftlLog(DftlConfig),
    /// The combined profile ([`PageFtl`] configured by [`crate::combined`]: AP, FLARES,
    /// WAO-GC and roll-forward recovery together), fitted to the chip at format and mount.
    Combined(PageFtlConfig),
}

impl Default for SchemeConfig {
    fn default() -> Self {
        SchemeConfig::Page(PageFtlConfig::default())
    }
}

impl SchemeConfig {
    /// The scheme's name.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Which scheme.
    pub fn kind(&self) -> SchemeKind {
        match self {
            SchemeConfig::Page(_) => SchemeKind::Page,
            SchemeConfig::Block(_) => SchemeKind::Block,
            SchemeConfig::Gftl(_) => SchemeKind::Gftl,
            SchemeConfig::Rftl(_) => SchemeKind::Rftl,
            SchemeConfig::DftlPor(_) => SchemeKind::DftlPor,
            SchemeConfig::Spftl(_) => SchemeKind::Spftl,
            SchemeConfig::SpftlLog(_) => SchemeKind::SpftlLog,
            SchemeConfig::Combined(_) => SchemeKind::Combined,
        }
    }

    /// Formats the chip behind `ctl` with this scheme.
    pub fn format<S: Storage + Send + 'static, M: ErrorModel + Send + 'static>(
        &self,
        ctl: Controller<S, M>,
        now: Nanos,
    ) -> Result<BoxedVolume<S, M>, FtlError> {
        self.format_in(ctl, now, &Registry::default())
    }

    /// [`format`](SchemeConfig::format) with the page-level kernel's victim and placement
    /// policies resolved in `registry` (policies of your own; the other kernels have no
    /// such slots and ignore it).
    pub fn format_in<S: Storage + Send + 'static, M: ErrorModel + Send + 'static>(
        &self,
        ctl: Controller<S, M>,
        now: Nanos,
        registry: &Registry,
    ) -> Result<BoxedVolume<S, M>, FtlError> {
        match *self {
            SchemeConfig::Page(cfg) => Ok(Box::new(PageFtl::format_in(ctl, cfg, now, registry)?)),
            SchemeConfig::Block(cfg) => Ok(Box::new(BlockFtl::format(ctl, cfg, now)?)),
            SchemeConfig::Gftl(cfg) => {
                Ok(Box::new(RtBlockFtl::format(ctl, RtKind::Gftl, cfg, now)?))
            }
            SchemeConfig::Rftl(cfg) => {
                Ok(Box::new(RtBlockFtl::format(ctl, RtKind::Rftl, cfg, now)?))
            }
            SchemeConfig::DftlPor(cfg) => {
                Ok(Box::new(DftlFtl::format(ctl, MetaMode::Page, cfg, now)?))
            }
            SchemeConfig::Spftl(cfg) => {
                Ok(Box::new(DftlFtl::format(ctl, MetaMode::Subpage, cfg, now)?))
            }
            SchemeConfig::SpftlLog(cfg) => {
                Ok(Box::new(DftlFtl::format(ctl, MetaMode::Log, cfg, now)?))
            }
            SchemeConfig::Combined(cfg) => {
                let mut ctl = ctl;
                let cfg = crate::combined::fit(cfg, &mut ctl)?;
                Ok(Box::new(PageFtl::format_in(ctl, cfg, now, registry)?))
            }
        }
    }

    /// Mounts a volume of this scheme after a clean shutdown or a crash.
    pub fn mount<S: Storage + Send + 'static, M: ErrorModel + Send + 'static>(
        &self,
        ctl: Controller<S, M>,
        now: Nanos,
    ) -> Result<BoxedVolume<S, M>, FtlError> {
        self.try_mount(ctl, now).map_err(|f| f.error)
    }

    /// [`mount`](SchemeConfig::mount) with policies resolved in `registry` (see
    /// [`format_in`](SchemeConfig::format_in)).
    pub fn mount_in<S: Storage + Send + 'static, M: ErrorModel + Send + 'static>(
        &self,
        ctl: Controller<S, M>,
        now: Nanos,
        registry: &Registry,
    ) -> Result<BoxedVolume<S, M>, FtlError> {
        self.try_mount_in(ctl, now, registry).map_err(|f| f.error)
    }

    /// Like [`mount`](SchemeConfig::mount), but a failed mount hands the controller back
    /// (to power the chip on again after a cut during recovery, or to inspect it).
    pub fn try_mount<S: Storage + Send + 'static, M: ErrorModel + Send + 'static>(
        &self,
        ctl: Controller<S, M>,
        now: Nanos,
    ) -> Result<BoxedVolume<S, M>, Box<MountFailure<S, M>>> {
        self.try_mount_in(ctl, now, &Registry::default())
    }

    /// [`try_mount`](SchemeConfig::try_mount) with policies resolved in `registry`.
    pub fn try_mount_in<S: Storage + Send + 'static, M: ErrorModel + Send + 'static>(
        &self,
        ctl: Controller<S, M>,
        now: Nanos,
        registry: &Registry,
    ) -> Result<BoxedVolume<S, M>, Box<MountFailure<S, M>>> {
        match *self {
            SchemeConfig::Page(cfg) => {
                Ok(Box::new(PageFtl::try_mount_in(ctl, cfg, now, registry)?))
            }
            SchemeConfig::Block(cfg) => Ok(Box::new(BlockFtl::try_mount(ctl, cfg, now)?)),
            SchemeConfig::Gftl(cfg) => Ok(Box::new(RtBlockFtl::try_mount(
                ctl,
                RtKind::Gftl,
                cfg,
                now,
            )?)),
            SchemeConfig::Rftl(cfg) => Ok(Box::new(RtBlockFtl::try_mount(
                ctl,
                RtKind::Rftl,
                cfg,
                now,
            )?)),
            SchemeConfig::DftlPor(cfg) => {
                Ok(Box::new(DftlFtl::try_mount(ctl, MetaMode::Page, cfg, now)?))
            }
            SchemeConfig::Spftl(cfg) => Ok(Box::new(DftlFtl::try_mount(
                ctl,
                MetaMode::Subpage,
                cfg,
                now,
            )?)),
            SchemeConfig::SpftlLog(cfg) => {
                Ok(Box::new(DftlFtl::try_mount(ctl, MetaMode::Log, cfg, now)?))
            }
            SchemeConfig::Combined(cfg) => {
                let mut ctl = ctl;
                match crate::combined::fit(cfg, &mut ctl) {
                    Ok(cfg) => Ok(Box::new(PageFtl::try_mount_in(ctl, cfg, now, registry)?)),
                    Err(error) => Err(MountFailure::boxed(error, ctl)),
                }
            }
        }
    }

    /// The recovery procedure a mount runs (GFTL and RFTL: always the full scan; DFTL_por
    /// and SPFTL: always the GXT and the blocks written after it, reported as roll-forward).
    pub fn recovery(&self) -> RecoveryKind {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => cfg.recovery,
            SchemeConfig::Block(cfg) => cfg.recovery,
            SchemeConfig::Gftl(_) | SchemeConfig::Rftl(_) => RecoveryKind::FullScan,
            SchemeConfig::DftlPor(_) | SchemeConfig::Spftl(_) | SchemeConfig::SpftlLog(_) => {
                RecoveryKind::RollForward
            }
        }
    }

    /// Chooses the recovery procedure a mount runs (GFTL and RFTL have only the full
    /// scan: ignored).
    pub fn set_recovery(&mut self, kind: RecoveryKind) {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => cfg.recovery = kind,
            SchemeConfig::Block(cfg) => cfg.recovery = kind,
            SchemeConfig::Gftl(_)
            | SchemeConfig::Rftl(_)
            | SchemeConfig::DftlPor(_)
            | SchemeConfig::Spftl(_)
            | SchemeConfig::SpftlLog(_) => {}
        }
    }

    /// The BCH correction capability the scheme programs data pages with.
    pub fn ecc_t(&self) -> u32 {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => cfg.ecc_t,
            SchemeConfig::Block(cfg) => cfg.ecc_t,
            SchemeConfig::Gftl(cfg) | SchemeConfig::Rftl(cfg) => cfg.ecc_t,
            SchemeConfig::DftlPor(cfg) | SchemeConfig::Spftl(cfg) | SchemeConfig::SpftlLog(cfg) => {
                cfg.ecc_t
            }
        }
    }

    /// Sets the BCH correction capability of data pages.
    pub fn set_ecc_t(&mut self, t: u32) {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => cfg.ecc_t = t,
            SchemeConfig::Block(cfg) => cfg.ecc_t = t,
            SchemeConfig::Gftl(cfg) | SchemeConfig::Rftl(cfg) => cfg.ecc_t = t,
            SchemeConfig::DftlPor(cfg) | SchemeConfig::Spftl(cfg) | SchemeConfig::SpftlLog(cfg) => {
                cfg.ecc_t = t
            }
        }
    }

    /// Flat indices of the blocks whose bytes the scheme reads back as data even in a
    /// digest-mode simulation (its checkpoint region): a digest-mode store must keep them
    /// whole. Depends only on the chip and the scheme's configuration.
    pub fn keep_whole_blocks(&self, chip: &ChipConfig) -> Vec<u32> {
        match self {
            SchemeConfig::Page(cfg) | SchemeConfig::Combined(cfg) => {
                // The region, and a demand-paged map's partitions (its logs' too).
                let mut v = cfg.region_blocks(chip);
                v.extend(cfg.map_blocks(chip));
                v.extend(cfg.map_log_blocks(chip));
                v
            }
            SchemeConfig::Block(cfg) => cfg.region_blocks(chip),
            // No checkpoint region: records only.
            SchemeConfig::Gftl(_) | SchemeConfig::Rftl(_) => Vec::new(),
            // The metadata partitions (fixed, at the start of the chip).
            SchemeConfig::DftlPor(cfg) => crate::dftl::metadata_blocks(chip, MetaMode::Page, cfg),
            SchemeConfig::Spftl(cfg) => crate::dftl::metadata_blocks(chip, MetaMode::Subpage, cfg),
            SchemeConfig::SpftlLog(cfg) => crate::dftl::metadata_blocks(chip, MetaMode::Log, cfg),
        }
    }

    /// A digest-mode store for `chip` (a spare prefix of each page) that keeps the pages of
    /// [`keep_whole_blocks`](SchemeConfig::keep_whole_blocks) whole; blocks that join or
    /// leave the region later are switched by the scheme itself. On a chip of
    /// [`PACK_SPARE_FROM_PAGES`] pages or more the spare prefixes are packed
    /// ([`digest_storage_packed`](SchemeConfig::digest_storage_packed)).
    pub fn digest_storage(&self, chip: &ChipConfig) -> nand::RamStorage {
        let pack = chip.geometry.total_pages() >= PACK_SPARE_FROM_PAGES;
        self.digest_storage_packed(chip, pack)
    }

    /// [`digest_storage`](SchemeConfig::digest_storage), its spare prefixes packed or not
    /// as `pack` says. Packing ([`controller::layout::RecordPacker`]: 16 bytes a page
    /// instead of 32, for the schemes without FLARES's PPROF codeword) never changes a
    /// result; it trades the simulator's time for its memory.
    pub fn digest_storage_packed(&self, chip: &ChipConfig, pack: bool) -> nand::RamStorage {
        let g = chip.geometry;
        let mut mask = alloc::vec![false; g.total_blocks() as usize];
        for b in self.keep_whole_blocks(chip) {
            mask[b as usize] = true;
        }
        let prefix = match self {
            SchemeConfig::Page(p) | SchemeConfig::Combined(p)
                if matches!(p.ecc, crate::policy::EccKind::Flares(_)) =>
            {
                controller::layout::DIGEST_SPARE_BYTES_PPROF
            }
            _ => controller::layout::DIGEST_SPARE_BYTES,
        };
        let store = nand::RamStorage::digest(&g, prefix).with_full_blocks(&g, mask);
        if pack && prefix == controller::layout::DIGEST_SPARE_BYTES {
            let packer = controller::layout::RecordPacker::new().expect("the record code is valid");
            store.with_packer(alloc::sync::Arc::new(packer))
        } else {
            store
        }
    }
}
