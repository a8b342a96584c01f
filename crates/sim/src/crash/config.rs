//! What a crash test runs on ([`CrashConfig`]) and the workloads it generates ([`HostOp`]).

use super::codes::CodeCache;
use super::model::Checker;
use controller::{Controller, ControllerConfig};
use ftl::{BoxedVolume, PageFtlConfig, SchemeConfig};
use nand::{Chip, ChipConfig, ConstantRber, Nanos, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// One host operation of a crash-test workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostOp {
    /// Write version `v` of a logical page.
    Write(u64, u64),
    /// Trim a logical page.
    Trim(u64),
    /// Trim logical pages `first .. first + count` as one discard (one request).
    TrimRange(u64, u64),
    /// Flush.
    Flush,
    /// An idle period: the clock moves on by [`IDLE_GAP`] and the FTL gets its idle-time
    /// hook until it reports no more work (at most [`IDLE_TICKS`] calls) — GC and refresh
    /// jobs, erases of collected blocks, FLARES's scrub, the checkpoint's probe and scrub.
    Idle,
}

/// How long an [`HostOp::Idle`] period lasts: over the checkpoint probe's hour, so every
/// idle period probes.
pub const IDLE_GAP: Nanos = Nanos(2 * 3600 * 1_000_000_000);
/// Idle-time hook calls per [`HostOp::Idle`] at most.
pub const IDLE_TICKS: usize = 64;

/// The volumes the harness tests.
pub type CrashVolume = BoxedVolume<RamStorage, ConstantRber>;

/// A function wrapping every volume the harness formats or mounts.
pub type Wrapper = fn(CrashVolume) -> CrashVolume;

/// What a crash test runs on.
#[derive(Debug, Clone)]
pub struct CrashConfig {
    /// Chip.
    pub chip: ChipConfig,
    /// The FTL scheme and its configuration (its recovery picks the procedure under test).
    pub scheme: SchemeConfig,
    /// Check the volume's invariants (`Volume::verify`) after every host operation and
    /// every mount.
    pub verify: bool,
    /// Workload seed (also the chip's).
    pub seed: u64,
    /// Host operations before the cut.
    pub ops: usize,
    /// A flush every this many operations.
    pub flush_every: usize,
    /// An idle period ([`HostOp::Idle`]) every this many operations (0: none), so cuts
    /// also land in idle-time work.
    pub idle_every: usize,
    /// Percent of operations that are trims.
    pub trim_pct: u32,
    /// A discard of a range every this many operations (0: none): every other one the
    /// whole volume (mkfs's discard), the others a random run of the span.
    pub discard_every: usize,
    /// Logical pages the workload touches, as a fraction of the volume.
    pub span: f64,
    /// Fill the span once (and flush) before the cut is armed, so the cuts land in a
    /// full device with garbage collection running.
    pub warmup: bool,
    /// Host operations of the after-recovery workload.
    pub tail_ops: usize,
    /// Writes of every this-many-th logical page carry the critical hint (0: none); with
    /// AP's placement, `verify` then checks that no critical page sits in an LSB page.
    pub critical_every: u64,
    /// Percent of writes that continue a sequential run (the next logical page after the
    /// last such write) instead of picking a page at random: what fills a block-level
    /// FTL's primaries in order.
    pub seq_pct: u32,
    /// Wraps every volume the harness formats or mounts (none: the scheme's own). The
    /// harness's self-test swaps in deliberately broken behaviour here and checks that the
    /// harness catches it.
    pub wrap: Option<Wrapper>,
    /// How pages are checked after recovery (the contract; weakened only by the
    /// self-test).
    pub checker: Checker,
    /// The sector codes the cases built, lent to every later case of this configuration
    /// (and its clones).
    pub(super) codes: CodeCache,
}

/// Chip `preset` seeded with `seed`, without wear-out failures (a cut, not a worn block,
/// is what a crash test exercises).
fn test_chip(preset: &str, seed: u64) -> ChipConfig {
    let mut chip = ChipConfig::preset(preset).expect("preset");
    chip.seed = seed;
    chip.reliability.wear_fail_rate = 0.0;
    chip.reliability.wear_fail_growth = 0.0;
    chip
}

impl CrashConfig {
    /// A small MLC chip (`tiny-mlc`) and a workload that fills it, overwrites, trims and
    /// garbage-collects: a few hundred chip operations.
    pub fn small(seed: u64) -> Self {
        CrashConfig {
            chip: test_chip("tiny-mlc", seed),
            scheme: SchemeConfig::Page(PageFtlConfig {
                over_provisioning: 0.25,
                gc_threshold: 3,
                ecc_t: 8,
                checkpoint_interval: 6,
                ..PageFtlConfig::default()
            }),
            verify: true,
            seed,
            ops: 400,
            flush_every: 16,
            idle_every: 0,
            trim_pct: 8,
            discard_every: 0,
            span: 0.9,
            warmup: true,
            tail_ops: 60,
            critical_every: 0,
            seq_pct: 0,
            wrap: None,
            checker: Checker::Contract,
            codes: CodeCache::default(),
        }
    }

    /// The combined profile ([`ftl::combined`]) on `tiny-mlc`: over-provisioning 0.7 (the
    /// chip's 16-page blocks take one copy per partial step, α = 1, so U(σ) is 0.47, and
    /// three young blocks per die come out of σ's blocks), every third logical page written
    /// critical (AP's placement), FLARES's strengths capped to the spare area.
    pub fn small_combined(seed: u64) -> Self {
        let mut cfg = CrashConfig::small(seed);
        cfg.scheme = SchemeConfig::Combined(PageFtlConfig {
            over_provisioning: 0.7,
            ..ftl::combined::profile()
        });
        cfg.critical_every = 3;
        cfg.ops = 700;
        cfg
    }

    /// The block-level kernel ([`ftl::BlockFtl`]) on `preset` (`tiny-mlc` or `tiny-slc`):
    /// 30 % over-provisioning (its replacements and lists), a checkpoint every 4 block
    /// allocations, wear levelling every 4 erases at a spread of 3, and a workload of
    /// runs of sequential writes mixed with random ones (merges, tombstones, wear
    /// levelling and all three allocation lists get cut).
    pub fn small_block(seed: u64, preset: &str) -> Self {
        let mut cfg = CrashConfig::small(seed);
        cfg.chip = test_chip(preset, seed);
        cfg.scheme = SchemeConfig::Block(ftl::BlockFtlConfig {
            over_provisioning: 0.3,
            checkpoint_interval: 4,
            ecc_t: 8,
            wear_leveling: Some(ftl::WearLevelConfig {
                spread: 3,
                check_every: 4,
            }),
            ..ftl::BlockFtlConfig::default()
        });
        cfg.seq_pct = 40;
        cfg
    }

    /// GFTL or RFTL ([`ftl::RtBlockFtl`], WAO-GC's Table I) on `preset` (an SLC chip, e.g.
    /// `tiny-slc`): a workload of sequential runs and random writes, so data blocks fill,
    /// jobs run and the buffer's blocks are erased between the cuts.
    pub fn small_rt(seed: u64, preset: &str, kind: ftl::RtKind) -> Self {
        let mut cfg = CrashConfig::small(seed);
        cfg.chip = test_chip(preset, seed);
        let rt = ftl::RtBlockConfig::default();
        cfg.scheme = match kind {
            ftl::RtKind::Gftl => SchemeConfig::Gftl(rt),
            ftl::RtKind::Rftl => SchemeConfig::Rftl(rt),
        };
        cfg.seq_pct = 40;
        cfg
    }

    /// DFTL_por, SPFTL or SPFTL_log (`mode`) on `preset` (one with subpages for the
    /// latter two), with a small memory budget so that the CPMT and CBIT evict all the
    /// time (SPFTL_log: a smaller volume, its logging partitions taking blocks).
    pub fn small_dftl(seed: u64, preset: &str, mode: ftl::MetaMode) -> Self {
        let mut cfg = CrashConfig::small(seed);
        cfg.chip = test_chip(preset, seed);
        let d = ftl::DftlConfig {
            overprovision: if mode == ftl::MetaMode::Log {
                0.32
            } else {
                0.25
            },
            memory: ftl::MemoryBudget {
                cpmt: 16 * ftl::dftl::CPMT_ENTRY_BYTES,
                cbit: 8 * ftl::dftl::CBIT_ENTRY_BYTES,
                ..Default::default()
            },
            ..Default::default()
        };
        cfg.scheme = match mode {
            ftl::MetaMode::Page => SchemeConfig::DftlPor(d),
            ftl::MetaMode::Subpage => SchemeConfig::Spftl(d),
            ftl::MetaMode::Log => SchemeConfig::SpftlLog(d),
        };
        cfg.seq_pct = 30;
        cfg
    }

    /// `dev` through the configured wrapper, if any.
    pub(super) fn wrapped(&self, dev: CrashVolume) -> CrashVolume {
        match self.wrap {
            Some(w) => w(dev),
            None => dev,
        }
    }

    /// A freshly formatted volume of this configuration (wrapped, if asked).
    pub(super) fn formatted(&self, t: Nanos) -> Result<CrashVolume, String> {
        self.scheme
            .format(controller(self)?, t)
            .map(|d| self.wrapped(d))
            .map_err(|e| format!("format: {e}"))
    }

    /// Logical pages the workload touches on a volume of `logical` pages.
    pub fn span_pages(&self, logical: u64) -> u64 {
        ((logical as f64 * self.span.clamp(0.0, 1.0)) as u64).clamp(1, logical.max(1))
    }

    /// The warm-up: every page of the span written once, then a flush.
    pub fn warmup_ops(&self, logical: u64) -> Vec<HostOp> {
        if !self.warmup {
            return Vec::new();
        }
        let mut v: Vec<HostOp> = (0..self.span_pages(logical))
            .map(|l| HostOp::Write(l, 3 << 40 | l))
            .collect();
        v.push(HostOp::Flush);
        v
    }

    /// Lowers the ECC strength to what the chip's spare area holds, if needed.
    pub fn fit_ecc(&mut self) -> Result<(), String> {
        let mut ctl = controller(self)?;
        let t = self.scheme.ecc_t().min(ctl.max_t()).max(1);
        self.scheme.set_ecc_t(t);
        Ok(())
    }

    /// The host operations of phase `phase` (0: before the cut, 1: after recovery).
    pub fn workload(&self, phase: u64, logical: u64) -> Vec<HostOp> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ (0x5EED_0000 + phase));
        let n = if phase == 0 { self.ops } else { self.tail_ops };
        let span = self.span_pages(logical);
        let mut version = phase << 40;
        let mut run = rng.next_u64() % span;
        (0..n)
            .map(|i| {
                if (i + 1) % self.flush_every.max(1) == 0 {
                    return HostOp::Flush;
                }
                if self.idle_every > 0 && (i + 1) % self.idle_every == 0 {
                    return HostOp::Idle;
                }
                if self.discard_every > 0 && (i + 1) % self.discard_every == 0 {
                    if ((i + 1) / self.discard_every).is_multiple_of(2) {
                        return HostOp::TrimRange(0, logical);
                    }
                    let first = rng.next_u64() % span;
                    let count = 1 + rng.next_u64() % (span - first);
                    return HostOp::TrimRange(first, count);
                }
                let mut lpn = rng.next_u64() % span;
                if self.seq_pct > 0 && (rng.next_u32() % 100) < self.seq_pct {
                    lpn = run % span;
                    run += 1;
                }
                if (rng.next_u32() % 100) < self.trim_pct {
                    HostOp::Trim(lpn)
                } else {
                    version += 1;
                    HostOp::Write(lpn, version)
                }
            })
            .collect()
    }
}

/// A fresh controller over a fresh chip of `cfg`'s, with the codes earlier cases built.
pub(super) fn controller(
    cfg: &CrashConfig,
) -> Result<Controller<RamStorage, ConstantRber>, String> {
    let chip = Chip::ram(cfg.chip.clone()).map_err(|e| e.to_string())?;
    let mut ctl = Controller::new(
        chip,
        ConstantRber(0.0),
        ControllerConfig {
            seed: cfg.seed,
            ..Default::default()
        },
    )
    .map_err(|e| e.to_string())?;
    ctl.set_crc32c(crc32c::crc32c);
    cfg.codes.lend(&mut ctl);
    Ok(ctl)
}
