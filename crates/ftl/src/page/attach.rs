//! Attaching a volume: format (erase, size, first checkpoint), mount (recovery over the
//! configured strategy), the configuration checks both run, and sizing the volume from
//! the good blocks (UBI's "attach" concern).

use super::*;
use crate::policy::Registry;

impl<S: Storage, M: ErrorModel> PageFtl<S, M> {
    /// Formats the chip behind `ctl` (erasing every good block that holds data) and builds an
    /// empty volume.
    pub fn format(ctl: Controller<S, M>, cfg: PageFtlConfig, now: Nanos) -> Result<Self, FtlError> {
        Self::format_in(ctl, cfg, now, &Registry::default())
    }

    /// [`format`](PageFtl::format) with the victim and placement policies the configuration
    /// names resolved in `registry` (policies of your own; the built-in names as always).
    pub fn format_in(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        now: Nanos,
        registry: &Registry,
    ) -> Result<Self, FtlError> {
        Self::empty(ctl, cfg, registry)?.format_chip(now)
    }

    /// [`format`](PageFtl::format) with `store` as the map store instead of the RAM map.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn format_with_map(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        store: Box<dyn MapStore<S, M>>,
        now: Nanos,
    ) -> Result<Self, FtlError> {
        let mut ftl = Self::empty(ctl, cfg, &Registry::default())?;
        ftl.map = MapSlot::Other(store);
        ftl.format_chip(now)
    }

    /// Erases every good block that holds data, sets block modes, sizes the volume and
    /// writes the first checkpoint.
    pub(super) fn format_chip(self, now: Nanos) -> Result<Self, FtlError> {
        let mut ftl = self;
        let multi = ftl.s.controller().chip().config().cell != nand::CellType::Slc;
        for b in 0..ftl.s.geo().total_blocks() {
            let in_region = ftl.s.state[b as usize].reserved();
            match ftl.s.format_block(now, b)? {
                Some(info) => {
                    // Data blocks in native mode, region blocks in SLC mode.
                    if multi && info.slc_mode != in_region {
                        ftl.s.set_slc_mode(b, in_region)?;
                    }
                    if !in_region {
                        ftl.s.adopt_free(b);
                    }
                }
                // (A failed erase already marked it bad.)
                None if ftl.s.state[b as usize] == BState::Bad => {}
                None => ftl.s.adopt_state(b, BState::Bad),
            }
        }
        ftl.size_volume()?;
        ftl.region.init_anchor(&mut ftl.s, now)?;
        ftl.write_checkpoint(now)?;
        crate::debug_verify("format", || ftl.verify());
        Ok(ftl)
    }
    /// Mounts a volume after a clean shutdown or a crash, with the recovery procedure the
    /// configuration names (see [`RecoveryKind`](crate::RecoveryKind)).
    pub fn mount(ctl: Controller<S, M>, cfg: PageFtlConfig, now: Nanos) -> Result<Self, FtlError> {
        Self::try_mount(ctl, cfg, now).map_err(|f| f.error)
    }

    /// [`mount`](PageFtl::mount) with the policies resolved in `registry` (see
    /// [`format_in`](PageFtl::format_in)).
    pub fn mount_in(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        now: Nanos,
        registry: &Registry,
    ) -> Result<Self, FtlError> {
        Self::try_mount_in(ctl, cfg, now, registry).map_err(|f| f.error)
    }

    /// Like [`mount`](PageFtl::mount), but a failed mount hands the controller back (to
    /// power the chip on again after a cut during recovery, or to inspect it).
    pub fn try_mount(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        now: Nanos,
    ) -> Result<Self, Box<MountFailure<S, M>>> {
        Self::try_mount_in(ctl, cfg, now, &Registry::default())
    }

    /// [`try_mount`](PageFtl::try_mount) with the policies resolved in `registry`.
    pub fn try_mount_in(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        now: Nanos,
        registry: &Registry,
    ) -> Result<Self, Box<MountFailure<S, M>>> {
        match cfg.recovery {
            crate::RecoveryKind::FullScan => {
                Self::try_mount_with(ctl, cfg, now, &recovery::FullScan, registry)
            }
            crate::RecoveryKind::RollForward => {
                Self::try_mount_with(ctl, cfg, now, &recovery::RollForward, registry)
            }
        }
    }

    /// Mounts with a given recovery procedure, handing the controller back on failure.
    pub(crate) fn try_mount_with<R: recovery::Recovery>(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        now: Nanos,
        procedure: &R,
        registry: &Registry,
    ) -> Result<Self, Box<MountFailure<S, M>>> {
        let mut ctl = ctl;
        let chosen = match Chosen::resolve(&cfg, registry) {
            Ok(c) => c,
            Err(error) => return Err(MountFailure::boxed(error, ctl)),
        };
        if let Err(error) = Self::check_config(&mut ctl, &cfg, &chosen) {
            return Err(MountFailure::boxed(error, ctl));
        }
        let mut ftl = Self::empty_checked(ctl, cfg, chosen);
        let recovered = procedure.recover(&mut ftl, now).and_then(|report| {
            if ftl.cfg.gc_pacing.shares_destination() {
                // The blocks are known now (bad ones included): the bound for this chip.
                ftl.rt_latency = Some(ftl.shared_destination_bound(ftl.logical)?);
            }
            // Lapses (WAO-GC's pad slack, or a GC job that could not pad) are kept in RAM:
            // rebuilt from the recovered map, whatever the pacing.
            ftl.note_lapses_after_mount();
            if let MapSlot::Paged(p) = &mut ftl.map {
                // The recovered map in the cache (its dirty pages), then a checkpoint: the
                // partition's pinned versions become this one's.
                p.settle(&ftl.s);
                p.maintain(&mut ftl.s, now)?;
                ftl.write_checkpoint(now)?;
            }
            ftl.checkpoint_at_mount_if_short(now)?;
            Ok(report)
        });
        ftl.mounted(recovered, true)
    }

    pub(super) fn empty(
        ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        registry: &Registry,
    ) -> Result<Self, FtlError> {
        let mut ctl = ctl;
        let chosen = Chosen::resolve(&cfg, registry)?;
        Self::check_config(&mut ctl, &cfg, &chosen)?;
        Ok(Self::empty_checked(ctl, cfg, chosen))
    }

    /// Rejects configurations this FTL cannot run with on `ctl`'s chip.
    pub(super) fn check_config(
        ctl: &mut Controller<S, M>,
        cfg: &PageFtlConfig,
        chosen: &Chosen,
    ) -> Result<(), FtlError> {
        if !(cfg.over_provisioning > 0.0 && cfg.over_provisioning < 1.0) {
            return Err(FtlError::Config(format!(
                "over_provisioning = {} must be in (0, 1)",
                cfg.over_provisioning
            )));
        }
        if cfg.gc_threshold < 2 {
            return Err(FtlError::Config(format!(
                "gc_threshold = {} must be at least 2",
                cfg.gc_threshold
            )));
        }
        ctl.layout(cfg.ecc_t)
            .map_err(|e| FtlError::Config(format!("ecc_t = {}: {e}", cfg.ecc_t)))?;
        Self::check_ecc(ctl, cfg)?;
        if cfg.replicas > MAX_REPLICAS {
            return Err(FtlError::Config(format!(
                "replicas = {} exceeds the {MAX_REPLICAS} backup copies a critical page may have",
                cfg.replicas
            )));
        }
        if chosen.placement.protects_critical() && ctl.chip().config().cell == nand::CellType::Slc {
            return Err(FtlError::Config(format!(
                "placement = \"{}\" keeps critical pages in MSB pages, but chip {} is single-level (it has no MSB pages)",
                chosen.placement.name(),
                ctl.chip().config().name
            )));
        }
        if cfg.gc_pacing.shares_destination() {
            Self::check_real_time(ctl, cfg)?;
        }
        if cfg.meta_writer == crate::policy::MetaWriterKind::Subpage {
            // Region units take the metadata strength: `ecc_t` (FLARES keeps it for
            // metadata too).
            ctl.subpage_layout(cfg.ecc_t).map_err(|e| {
                FtlError::Config(format!(
                    "meta_writer = \"subpage\" with ecc_t = {} on chip {}: {e}",
                    cfg.ecc_t,
                    ctl.chip().config().name
                ))
            })?;
        }
        Self::check_map(ctl, cfg)?;
        let geo = *ctl.chip().geometry();
        if geo.total_pages() >= LOST as u64 {
            return Err(FtlError::Config(format!(
                "{} pages exceed the page-level map's 32-bit entries",
                geo.total_pages()
            )));
        }
        Ok(())
    }

    /// The ECC settings: FLARES's constants and its range of strengths fit the chip's spare
    /// area, with its critical profile (PPROF) there too.
    fn check_ecc(ctl: &mut Controller<S, M>, cfg: &PageFtlConfig) -> Result<(), FtlError> {
        if let crate::policy::EccKind::Flares(f) = &cfg.ecc {
            f.validate().map_err(FtlError::Config)?;
            // FLARES's critical profile part lives in every page's spare area.
            ctl.enable_pprof()
                .map_err(|e| FtlError::Config(format!("flares: {e}")))?;
            for t in [f.t_min, f.t_max] {
                ctl.layout(t).map_err(|e| {
                    FtlError::Config(format!(
                        "flares t range {}..={}: t = {t} does not fit this chip's spare area ({e})",
                        f.t_min, f.t_max
                    ))
                })?;
            }
        }
        Ok(())
    }

    /// The demand-paged map's settings (`map_cache_pages`, `map_log`): the pacing and
    /// recovery that bound it, no replicas, and partitions that leave data blocks.
    fn check_map(ctl: &mut Controller<S, M>, cfg: &PageFtlConfig) -> Result<(), FtlError> {
        if cfg.map_cache_pages > 0 {
            if cfg.gc_pacing.shares_destination()
                && !(cfg.gc_pacing.is_real_time()
                    && cfg.recovery == crate::RecoveryKind::RollForward)
            {
                return Err(FtlError::Config(format!(
                    "map_cache_pages = {}: under a shared-destination gc_pacing a demand-paged map is bounded only with gc_pacing = \"wao-gc\" and recovery = \"roll-forward\" (its checkpoints then go in steps beside the writes); use map_cache_pages = 0",
                    cfg.map_cache_pages
                )));
            }
            if cfg.replicas > 0 {
                return Err(FtlError::Config(format!(
                    "map_cache_pages = {} with replicas = {}: Meta-Cure's replicas need the map in RAM",
                    cfg.map_cache_pages, cfg.replicas
                )));
            }
            let chip = &ctl.chip().config().clone();
            let bpd = chip.geometry.planes_per_die * chip.geometry.blocks_per_plane;
            let region = cfg.region_blocks_per_die_effective(chip);
            let map = cfg.map_blocks(chip).len() as u32;
            let ndies = chip.geometry.total_dies().max(1);
            if map < 3 || region + map.div_ceil(ndies) + 2 > bpd {
                return Err(FtlError::Config(format!(
                    "map_blocks_per_die = {}: the map partition needs at least 3 blocks, and with the region's {region} per die must leave data blocks on each die of {bpd}",
                    map.div_ceil(ndies)
                )));
            }
            if cfg.map_log {
                if chip.geometry.subpages_per_page < 2 {
                    return Err(FtlError::Config(format!(
                        "map_log = true on chip {}: SPFTL_log's logs are subpages, and its pages have none",
                        chip.name
                    )));
                }
                ctl.subpage_layout(cfg.ecc_t).map_err(|e| {
                    FtlError::Config(format!(
                        "map_log = true with ecc_t = {} on chip {}: {e}",
                        cfg.ecc_t, chip.name
                    ))
                })?;
                let logs = cfg.map_log_blocks(chip).len() as u32;
                if logs < 3 || region + (map + logs).div_ceil(ndies) + 2 > bpd {
                    return Err(FtlError::Config(format!(
                        "map_log = true: the map-log partition needs at least 3 blocks, and with the region's {region} and the map partition's {} per die must leave data blocks on each die of {bpd}",
                        map.div_ceil(ndies)
                    )));
                }
            }
        } else if cfg.map_log {
            return Err(FtlError::Config(
                "map_log = true with map_cache_pages = 0: SPFTL_log logs a demand-paged map's updates; set map_cache_pages > 0".into(),
            ));
        }
        Ok(())
    }

    pub(super) fn empty_checked(
        mut ctl: Controller<S, M>,
        cfg: PageFtlConfig,
        chosen: Chosen,
    ) -> Self {
        let geo = *ctl.chip().geometry();
        // `check_config` has refused a real-time pacing whose α is 0.
        let alpha = if cfg.gc_pacing.is_real_time() {
            Self::wao_alpha(&mut ctl, &cfg).unwrap_or(1)
        } else {
            1
        };
        let chip_cfg = ctl.chip().config().clone();
        let scfg = SubstrateConfig {
            ecc_t: cfg.ecc_t,
            read_retries: cfg.read_retries,
            gc_threshold: cfg.gc_threshold,
            wear_leveling: cfg.wear_leveling,
            young_rule: cfg.recovery == crate::RecoveryKind::RollForward,
            #[cfg(feature = "sabotage")]
            sabotage: cfg.sabotage,
        };
        let policies = Policies {
            placement: chosen.placement,
            ecc: match cfg.ecc {
                crate::policy::EccKind::Fixed => Box::new(FixedStrength(cfg.ecc_t)),
                crate::policy::EccKind::Flares(f) => Box::new(crate::flares::FlaresStrength::new(
                    f,
                    geo.total_pages(),
                    geo.pages_per_block,
                    (ctl.config().sector_size * 8) as u64,
                    geo.page_size as u64 * 8,
                    cfg.ecc_t,
                )),
            },
            pacing: cfg.gc_pacing.policy(alpha),
            copy_order: cfg.copy_order.policy(),
        };
        let mut s = Substrate::new(ctl, scfg, chosen.victim, policies);
        s.sp_region = cfg.meta_writer == crate::policy::MetaWriterKind::Subpage;
        let writer = crate::substrate::meta::writer_for(cfg.meta_writer, &s);
        let mut region = Region::new(cfg.region_blocks(&chip_cfg), writer);
        region.fit_anchor(&s);
        for b in region.all_blocks() {
            s.adopt_state(b, BState::Region);
        }
        let map = if cfg.map_cache_pages > 0 {
            let blocks = cfg.map_blocks(&chip_cfg);
            let logs = cfg.map_log.then(|| cfg.map_log_blocks(&chip_cfg));
            for &b in blocks.iter().chain(logs.iter().flatten()) {
                s.adopt_state(b, BState::Map);
            }
            let sp = s.sp_region;
            for &b in blocks.iter().filter(|_| sp).chain(logs.iter().flatten()) {
                s.sp_blocks[b as usize] = true;
            }
            let mut p = paged::PagedMap::new(
                &s,
                cfg.meta_writer,
                blocks,
                logs,
                cfg.map_cache_pages,
                cfg.map_tp_entries,
            );
            // Under WAO-GC every request does one bounded upkeep step at most.
            p.set_bounded(cfg.gc_pacing.is_real_time());
            MapSlot::Paged(Box::new(p))
        } else {
            MapSlot::Ram(RamMap::default())
        };
        PageFtl {
            s,
            cfg,
            logical: 0,
            map,
            p2l: vec![INVALID; geo.total_pages() as usize],
            region,
            pending_trims: Vec::new(),
            critical: Vec::new(),
            replicas: replica::Replicas::new(),
            replica_buf: Vec::new(),
            recovery: None,
            rt: None,
            alpha,
            rt_latency: None,
            cp_buf: Vec::new(),
            steps: None,
            cp_steps_per_write: 1,
        }
    }

    pub(super) fn size_volume(&mut self) -> Result<(), FtlError> {
        self.size_volume_to(None)
    }

    /// Sizes the volume: from the good blocks, or to `fixed` logical pages (a mounted
    /// volume keeps the size its checkpoint records, whatever blocks went bad since).
    pub(super) fn size_volume_to(&mut self, fixed: Option<u64>) -> Result<(), FtlError> {
        let good = self.s.data_blocks();
        let ndies = self.s.dies.len() as u64;
        let ppb = self.s.ppb() as u64;
        let physical = good * ppb;
        let mut logical =
            fixed.unwrap_or((physical as f64 * (1.0 - self.cfg.over_provisioning)) as u64);
        // A scheme with one destination per die needs one block besides its data (the
        // destination of writes and copies); WAO-GC's σ check bounds the rest.
        let reserve = if self.cfg.gc_pacing.shares_destination() {
            ndies * (1 + crate::policy::RESERVE as u64)
        } else {
            ndies * (self.cfg.gc_threshold as u64 + 2)
        };
        let max = good.saturating_sub(reserve + 1) * ppb;
        // (A mount checks the bound once recovery knows the blocks: `try_mount_with`.)
        if self.cfg.gc_pacing.shares_destination() && logical > 0 && fixed.is_none() {
            // The bound's own check first (WAO-GC's message names U(σ)); with automatic
            // over-provisioning, raised in hundredths until it holds (at most 90 tries).
            let start = self.cfg.over_provisioning;
            let bound = loop {
                match self.shared_destination_bound(logical) {
                    Err(_)
                        if self.cfg.auto_over_provisioning && self.cfg.over_provisioning < 0.9 =>
                    {
                        let op = (libm::round(self.cfg.over_provisioning * 100.0) + 1.0) / 100.0;
                        self.cfg.over_provisioning = op;
                        logical = (physical as f64 * (1.0 - op)) as u64;
                    }
                    Err(FtlError::Config(e)) if self.cfg.over_provisioning != start => {
                        return Err(FtlError::Config(format!(
                            "{e} (auto_over_provisioning: no value from {start} to 0.9 holds)"
                        )));
                    }
                    r => break r?,
                }
            };
            self.rt_latency = Some(bound);
        }
        if logical == 0 || logical > max.max(fixed.unwrap_or(0)) {
            return Err(FtlError::Config(format!(
                "over_provisioning = {} leaves {logical} logical pages; with {good} good blocks and {reserve} reserved for GC at most {max} fit",
                self.cfg.over_provisioning
            )));
        }
        if logical >= super::trimlog::MAX_LOGICAL {
            return Err(FtlError::Config(format!(
                "{logical} logical pages: the page kernel's volumes hold fewer than 2^31 (its trim records' page field); use larger pages or a smaller device"
            )));
        }
        self.logical = logical;
        // Keep mappings found by mount within the new volume.
        for lpn in logical..self.map.len() {
            match self.map.peek(lpn) {
                Some(p) if p != INVALID && p != LOST => {
                    self.p2l[p as usize] = INVALID;
                    let b = self.s.block_of(p);
                    self.s.adopt_valid(b, false);
                }
                _ => {}
            }
        }
        self.map.resize(logical);
        self.critical.resize(logical.div_ceil(64) as usize, 0);
        if !logical.is_multiple_of(64) {
            let last = self.critical.len() - 1;
            self.critical[last] &= (1u64 << (logical % 64)) - 1;
        }
        Ok(())
    }
}

/// The victim and placement objects a configuration names, resolved before anything is
/// built (an unknown name fails the format or mount with a configuration error).
pub(super) struct Chosen {
    victim: Box<dyn crate::VictimPolicy>,
    placement: Box<dyn crate::policy::Placement>,
}

impl Chosen {
    fn resolve(cfg: &PageFtlConfig, registry: &Registry) -> Result<Chosen, FtlError> {
        Ok(Chosen {
            victim: registry.victim(cfg.victim)?,
            placement: registry.placement(cfg.placement)?,
        })
    }
}
