//! The power-cut harness: run a workload with periodic flushes on a page-level FTL in bytes
//! mode, cut power at the N-th chip operation with one of the emulator's cut modes, power
//! on, recover, and check every logical page against the durability contract (see the
//! `ftl` crate docs):
//!
//! - a page whose last write (or trim) before the cut was followed by a completed flush
//!   reads back exactly that value;
//! - any other page reads back its value at the last completed flush or one of the values
//!   written (or trimmed: zeros) since — never anything else, and never an error.
//!
//! After the check the volume must keep working: a short second workload runs, is flushed,
//! the chip is remounted and checked again.
//!
//! Modes: [`Plan::Linear`] tries every operation index with every cut mode;
//! [`Plan::Random`] a seeded sample; [`Plan::Nested`] adds a second cut during the mount
//! and the first workload after it. Every case has a [`CaseId`] (`seed:n:mode` or
//! `seed:n:mode/k:mode`) that replays it exactly with the same [`CrashConfig`]
//! (`nandlab crashtest --replay ID` plus the run's other flags). To see where a logical page
//! lives on the chip after each mount of a case, set `NANDLAB_CRASH_LPN=<page>`: the
//! harness prints every block's records.

mod cut;
mod model;

pub use cut::CutInfo;
pub use model::{check_after_kill, pattern, Checker};
use model::{verify, Model};

use controller::{Controller, ControllerConfig};
use ftl::{BoxedVolume, Ftl, FtlError, PageFtlConfig, SchemeConfig};
use nand::{Chip, ChipConfig, ConstantRber, CutMode, Lpn, NandError, Nanos, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::collections::BTreeMap;
use std::fmt;

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
    codes: CodeCache,
}

/// Sector codes shared by a configuration's cases. A code is a pure function of the
/// sector size and t, so sharing one changes no result; building them was a fifth of a
/// crash test's time (each case formats a new controller, and FLARES's strengths need a
/// code each).
#[derive(Clone, Default)]
struct CodeCache(std::sync::Arc<std::sync::Mutex<Codes>>);

/// A sector size and the codes for it, by strength (index t).
type Codes = (usize, Vec<Option<std::sync::Arc<ecc::Bch>>>);

impl fmt::Debug for CodeCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let built = g.1.iter().filter(|c| c.is_some()).count();
        write!(f, "CodeCache({built} codes of {}-byte sectors)", g.0)
    }
}

impl CodeCache {
    /// Gives `ctl` the codes built so far (for its sector size).
    fn lend(&self, ctl: &mut Controller<RamStorage, ConstantRber>) {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        ctl.adopt_codes(g.0, &g.1);
    }

    /// Keeps the codes `ctl` built (the first sector size seen; others are not kept).
    fn keep(&self, ctl: &Controller<RamStorage, ConstantRber>) {
        let (size, codes) = ctl.built_codes();
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if g.1.is_empty() {
            g.0 = size;
        }
        if g.0 != size {
            return;
        }
        if g.1.len() < codes.len() {
            g.1.resize_with(codes.len(), || None);
        }
        for (mine, theirs) in g.1.iter_mut().zip(codes) {
            if mine.is_none() {
                mine.clone_from(theirs);
            }
        }
    }
}

impl CrashConfig {
    /// A small MLC chip (`tiny-mlc`) and a workload that fills it, overwrites, trims and
    /// garbage-collects: a few hundred chip operations.
    pub fn small(seed: u64) -> Self {
        let mut chip = ChipConfig::preset("tiny-mlc").expect("preset");
        chip.seed = seed;
        chip.reliability.wear_fail_rate = 0.0;
        chip.reliability.wear_fail_growth = 0.0;
        CrashConfig {
            chip,
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
        cfg.chip = ChipConfig::preset(preset).expect("preset");
        cfg.chip.seed = seed;
        cfg.chip.reliability.wear_fail_rate = 0.0;
        cfg.chip.reliability.wear_fail_growth = 0.0;
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
        cfg.chip = ChipConfig::preset(preset).expect("preset");
        cfg.chip.seed = seed;
        cfg.chip.reliability.wear_fail_rate = 0.0;
        cfg.chip.reliability.wear_fail_growth = 0.0;
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
        cfg.chip = ChipConfig::preset(preset).expect("preset");
        cfg.chip.seed = seed;
        cfg.chip.reliability.wear_fail_rate = 0.0;
        cfg.chip.reliability.wear_fail_growth = 0.0;
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
    fn wrapped(&self, dev: Dev) -> Dev {
        match self.wrap {
            Some(w) => w(dev),
            None => dev,
        }
    }

    /// A freshly formatted volume of this configuration (wrapped, if asked).
    fn formatted(&self, t: Nanos) -> Result<Dev, String> {
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

/// A second cut, counted from power-on (mount and the after-recovery workload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nested {
    /// Operation index from power-on (1-based).
    pub at: u64,
    /// Cut mode.
    pub mode: CutMode,
}

/// One crash case: the replay id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaseId {
    /// Workload and chip seed.
    pub seed: u64,
    /// Chip operation (1-based, counted after format) the cut fires at.
    pub at: u64,
    /// Cut mode.
    pub mode: CutMode,
    /// A second cut during recovery and the work after it.
    pub nested: Option<Nested>,
}

impl fmt::Display for CaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.seed, self.at, self.mode.name())?;
        if let Some(n) = self.nested {
            write!(f, "/{}:{}", n.at, n.mode.name())?;
        }
        Ok(())
    }
}

impl std::str::FromStr for CaseId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("replay id `{s}`: expected seed:n:mode or seed:n:mode/k:mode");
        let (first, nested) = match s.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        let mut it = first.split(':');
        let (Some(seed), Some(at), Some(mode), None) = (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(bad());
        };
        let nested = match nested {
            None => None,
            Some(n) => {
                let (k, m) = n.split_once(':').ok_or_else(bad)?;
                Some(Nested {
                    at: k.parse().map_err(|_| bad())?,
                    mode: CutMode::from_name(m).ok_or_else(bad)?,
                })
            }
        };
        Ok(CaseId {
            seed: seed.parse().map_err(|_| bad())?,
            at: at.parse().map_err(|_| bad())?,
            mode: CutMode::from_name(mode).ok_or_else(bad)?,
            nested,
        })
    }
}

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The cut fired and the contract held.
    Passed,
    /// The workload ended before operation N (nothing was cut).
    NotReached,
    /// A nested case whose first cut fired and checked out, but whose second cut lay past
    /// the mount and the after-recovery workload (it cut once: not counted as passed).
    SecondNotReached,
    /// After recovery the volume refused a write for lack of space (a liveness failure:
    /// nothing read back wrong).
    OutOfSpace(String),
    /// The contract was broken, or something panicked or errored.
    Failed(String),
}

/// Which cases to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Every operation index × every cut mode.
    Linear,
    /// Every operation index, each with one mode in `step` (the modes rotate with the
    /// index, so every index is cut and every mode meets every `step`-th index): `Linear`
    /// at a `step`-th of its cases — the fast test tier's form of it.
    Thinned {
        /// Modes per operation index: one in this many (1 = `Linear`).
        step: usize,
    },
    /// `samples` seeded (operation, mode) pairs.
    Random {
        /// Cases.
        samples: usize,
    },
    /// `samples` seeded cases with a second cut after power-on.
    Nested {
        /// Cases.
        samples: usize,
    },
}

/// Totals of a crash-test run.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Cases run.
    pub cases: u64,
    /// Cases where the cut fired and everything checked out.
    pub passed: u64,
    /// Cases whose cut point lay past the workload.
    pub not_reached: u64,
    /// Nested cases whose second cut lay past the work after power-on.
    pub second_not_reached: u64,
    /// Failures: replay id and message.
    pub failures: Vec<(CaseId, String)>,
    /// Cases that ran out of space after recovery (replay id and message).
    pub out_of_space: Vec<(CaseId, String)>,
    /// Chip operations of the cut-free workload (the linear range).
    pub workload_ops: u64,
    /// FTL counters at the end of the cut-free workload (what the cuts can land in).
    pub workload: ftl::FtlCounters,
    /// First cuts that fired, by what they hit ([`CutInfo::class`]).
    pub cut_classes: BTreeMap<&'static str, u64>,
}

impl fmt::Display for Summary {
    /// A line of totals, then the first failures with their replay ids.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "cuts:      {} cases over {} workload chip ops: {} passed, {} past the end of the workload, {} with the second cut past the end, {} out of space after recovery, {} broke the contract",
            self.cases,
            self.workload_ops,
            self.passed,
            self.not_reached,
            self.second_not_reached,
            self.out_of_space.len(),
            self.failures.len()
        )?;
        if !self.cut_classes.is_empty() {
            let classes: Vec<String> = CutInfo::CLASSES
                .iter()
                .filter_map(|c| self.cut_classes.get(c).map(|n| format!("{c} {n}")))
                .collect();
            writeln!(f, "cut hit:   {}", classes.join(", "))?;
        }
        for (id, m) in self.out_of_space.iter().take(5) {
            writeln!(f, "NO SPACE   replay {id}: {m}")?;
        }
        for (id, m) in self.failures.iter().take(20) {
            writeln!(f, "FAILED     replay {id}: {m}")?;
        }
        Ok(())
    }
}

type Dev = CrashVolume;

fn controller(cfg: &CrashConfig) -> Result<Controller<RamStorage, ConstantRber>, String> {
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

fn is_power_loss(e: &FtlError) -> bool {
    matches!(
        e,
        FtlError::Controller(controller::CtlError::Nand(NandError::PowerLoss))
    )
}

/// Performs one host operation on a volume (writes store [`pattern`] bytes; with
/// `critical_every` > 0, writes of every `critical_every`-th logical page carry the
/// critical hint).
pub fn apply_op(
    dev: &mut dyn Ftl,
    op: HostOp,
    t: Nanos,
    critical_every: u64,
) -> Result<(), FtlError> {
    let n = dev.logical_pages();
    let lpn = |l: u64| Lpn::checked(l, n).map_err(|_| FtlError::OutOfRange { lpn: l, count: n });
    match op {
        HostOp::Write(l, v) => {
            let data = pattern(dev.page_size(), l, v);
            let class = if critical_every > 0 && l.is_multiple_of(critical_every) {
                ftl::DataClass::CRITICAL
            } else {
                ftl::DataClass::NORMAL
            };
            dev.write_with(t, lpn(l)?, &data, class)
        }
        HostOp::Trim(l) => dev.trim(t, lpn(l)?),
        HostOp::TrimRange(first, count) => dev.trim_range(t, lpn(first)?, count),
        HostOp::Flush => dev.flush(t),
        HostOp::Idle => {
            for _ in 0..IDLE_TICKS {
                if !dev.tick(t)? {
                    break;
                }
            }
            Ok(())
        }
    }
}

/// Runs `ops` on `dev`, updating `model`; stops at a power loss (`Ok(false)`). With
/// `check`, the volume's invariants are verified after every operation that completed.
fn run_ops(
    dev: &mut Dev,
    model: &mut Model,
    ops: &[HostOp],
    t: &mut Nanos,
    cfg: &CrashConfig,
) -> Result<bool, String> {
    let (check, critical_every) = (cfg.verify, cfg.critical_every);
    for (i, &op) in ops.iter().enumerate() {
        *t += if op == HostOp::Idle {
            IDLE_GAP
        } else {
            Nanos::from_us(50)
        };
        model.issue(op);
        let r = apply_op(&mut **dev, op, *t, critical_every);
        match r {
            Ok(()) if op == HostOp::Flush => model.flushed(),
            Ok(()) => {}
            Err(e) if is_power_loss(&e) => {
                model.in_flight = Some((i, op));
                return Ok(false);
            }
            Err(e) => return Err(format!("host op {i} ({op:?}): {e}")),
        }
        if check {
            dev.verify()
                .map_err(|e| format!("invariant after host op {i} ({op:?}): {e}"))?;
        }
    }
    Ok(true)
}

fn mount(
    ctl: Controller<RamStorage, ConstantRber>,
    cfg: &CrashConfig,
    t: Nanos,
) -> Result<Dev, FtlError> {
    let dev = cfg.wrapped(cfg.scheme.mount(ctl, t)?);
    if cfg.verify {
        if let Err(e) = dev.verify() {
            return Err(FtlError::Config(format!("invariant after mount: {e}")));
        }
    }
    Ok(dev)
}

fn debug_dump(dev: &mut Dev, t: Nanos, what: &str) {
    let Some(l) = std::env::var("NANDLAB_CRASH_LPN")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    eprintln!(
        "== {what}: lpn {l} -> {:?}; {:?}",
        dev.mapping(l),
        dev.recovery_report()
    );
    let geo = *dev.controller().chip().geometry();
    for bi in 0..geo.total_blocks() {
        let blk = geo.block_at(bi).unwrap();
        let info = dev.controller().chip().block_info(blk).unwrap();
        let mut line = format!("blk{bi} ec{} np{}:", info.erase_count, info.next_page);
        for p in 0..info.next_page {
            let a = blk.page(p).unwrap();
            match dev.controller_mut().read_record(t, a) {
                Ok(controller::PageRead::Data(i)) if i.record.lpn == l => {
                    line += &format!(" [{}@{}]", i.record.lpn as i64, i.record.seq)
                }
                Ok(controller::PageRead::Data(i)) => {
                    line += &format!(" {}@{}", i.record.lpn as i64, i.record.seq)
                }
                _ => line += " ?",
            }
        }
        eprintln!("{line}");
    }
}

/// Runs one case.
pub fn run_case(cfg: &CrashConfig, id: CaseId) -> Outcome {
    run_case_described(cfg, id).0
}

/// Runs one case; also says what its first cut hit (when it fired).
pub fn run_case_described(cfg: &CrashConfig, id: CaseId) -> (Outcome, Option<CutInfo>) {
    let mut cfg = cfg.clone();
    cfg.seed = id.seed;
    cfg.chip.seed = id.seed;
    let mut info = None;
    let outcome = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        case_inner(&cfg, id, &mut info)
    })) {
        Ok(Ok(o)) => o,
        Ok(Err(m)) if m.contains(&FtlError::NoSpace.to_string()) => Outcome::OutOfSpace(m),
        Ok(Err(m)) => Outcome::Failed(m),
        Err(p) => Outcome::Failed(format!(
            "panic: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    };
    (outcome, info)
}

fn case_inner(
    cfg: &CrashConfig,
    id: CaseId,
    info: &mut Option<CutInfo>,
) -> Result<Outcome, String> {
    let mut t = Nanos::ZERO;
    let mut dev = cfg.formatted(t)?;
    let logical = dev.logical_pages();
    let mut model = Model::new(logical).with_checker(cfg.checker);
    if !run_ops(&mut dev, &mut model, &cfg.warmup_ops(logical), &mut t, cfg)? {
        return Err("power loss during the warm-up".into());
    }
    dev.controller_mut().chip_mut().arm_cut(id.at, id.mode);
    let ops = cfg.workload(0, logical);
    let completed = run_ops(&mut dev, &mut model, &ops, &mut t, cfg)?;
    if completed {
        return Ok(Outcome::NotReached);
    }
    // Power on and recover (with an optional second cut).
    let mut ctl = dev.into_controller();
    cfg.codes.keep(&ctl);
    *info = CutInfo::of(&ctl, &cfg.scheme.keep_whole_blocks(&cfg.chip)).map(|mut c| {
        if let Some((i, op)) = model.in_flight {
            c.text += &format!("; host op {i} of the workload in flight: {op:?}");
        }
        c
    });
    ctl.chip_mut().disarm_cut();
    ctl.chip_mut().power_on();
    t += Nanos::from_ms(1);
    let tail = cfg.workload(1, logical);
    if let Some(n) = id.nested {
        let ops0 = ctl.chip().ops();
        ctl.chip_mut().arm_cut(n.at, n.mode);
        // Whether the second cut fired (in the mount or in the work after it).
        let mut second = true;
        ctl = match cfg.scheme.try_mount(ctl, t).map(|d| cfg.wrapped(d)) {
            Ok(mut dev) => {
                // Check (with the cut held back), then run the after-recovery workload,
                // which may be cut too.
                let used = dev.controller().chip().ops() - ops0;
                dev.controller_mut().chip_mut().disarm_cut();
                if cfg.verify {
                    dev.verify()
                        .map_err(|e| format!("invariant after the first mount: {e}"))?;
                }
                debug_dump(&mut dev, t, "first mount");
                verify(&mut *dev, &mut model, t)
                    .map_err(|e| format!("after the first mount: {e}"))?;
                dev.controller_mut()
                    .chip_mut()
                    .arm_cut(n.at.saturating_sub(used), n.mode);
                second = !run_ops(&mut dev, &mut model, &tail, &mut t, cfg)?;
                dev.into_controller()
            }
            // Cut during recovery: power on and recover again.
            Err(f) if is_power_loss(&f.error) => f.controller,
            Err(f) => return Err(format!("mount after the first cut: {}", f.error)),
        };
        ctl.chip_mut().disarm_cut();
        ctl.chip_mut().power_on();
        t += Nanos::from_ms(1);
        let mut dev = mount(ctl, cfg, t).map_err(|e| format!("mount after the second cut: {e}"))?;
        debug_dump(&mut dev, t, "second mount");
        verify(&mut *dev, &mut model, t)?;
        return Ok(if second {
            Outcome::Passed
        } else {
            Outcome::SecondNotReached
        });
    }
    let mut dev = mount(ctl, cfg, t).map_err(|e| format!("mount: {e}"))?;
    debug_dump(&mut dev, t, "first mount");
    verify(&mut *dev, &mut model, t)?;
    // The volume keeps working: more writes, a flush, a remount.
    if !run_ops(&mut dev, &mut model, &tail, &mut t, cfg)? {
        return Err("power loss without a cut".into());
    }
    dev.flush(t)
        .map_err(|e| format!("flush after recovery: {e}"))?;
    model.flushed();
    let ctl = dev.into_controller();
    let mut dev = mount(ctl, cfg, t).map_err(|e| format!("second mount: {e}"))?;
    debug_dump(&mut dev, t, "second mount");
    verify(&mut *dev, &mut model, t).map_err(|e| format!("after the second mount: {e}"))?;
    Ok(Outcome::Passed)
}

/// Chip operations (after format) of the cut-free workload, and of a mount plus the
/// after-recovery workload.
pub fn workload_ops(cfg: &CrashConfig) -> Result<(u64, u64), String> {
    dry_run(cfg).map(|(a, b, _)| (a, b))
}

fn dry_run(cfg: &CrashConfig) -> Result<(u64, u64, ftl::FtlCounters), String> {
    let mut t = Nanos::ZERO;
    let mut dev = cfg.formatted(t)?;
    let logical = dev.logical_pages();
    let mut model = Model::new(logical);
    run_ops(&mut dev, &mut model, &cfg.warmup_ops(logical), &mut t, cfg)?;
    let start = dev.controller().chip().ops();
    run_ops(&mut dev, &mut model, &cfg.workload(0, logical), &mut t, cfg)?;
    let mid = dev.controller().chip().ops();
    let counters = *dev.counters();
    let ctl = dev.into_controller();
    let mut dev = mount(ctl, cfg, t).map_err(|e| e.to_string())?;
    run_ops(&mut dev, &mut model, &cfg.workload(1, logical), &mut t, cfg)?;
    let end = dev.controller().chip().ops();
    Ok((mid - start, end - mid, counters))
}

/// Runs a plan; `progress` is called after every case.
pub fn run_plan(
    cfg: &CrashConfig,
    plan: Plan,
    modes: &[CutMode],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Summary, String> {
    let (ops, after, counters) = dry_run(cfg)?;
    if ops == 0 {
        return Err("the workload performs no chip operation: there is nothing to cut".into());
    }
    let mut cases: Vec<CaseId> = Vec::new();
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0xC07);
    let pick = |rng: &mut ChaCha8Rng, n: u64| 1 + rng.next_u64() % n.max(1);
    match plan {
        Plan::Linear => {
            for at in 1..=ops {
                for &mode in modes {
                    cases.push(CaseId {
                        seed: cfg.seed,
                        at,
                        mode,
                        nested: None,
                    });
                }
            }
        }
        Plan::Thinned { step } => {
            let step = step.max(1);
            for at in 1..=ops {
                for (i, &mode) in modes.iter().enumerate() {
                    if (at as usize + i).is_multiple_of(step) {
                        cases.push(CaseId {
                            seed: cfg.seed,
                            at,
                            mode,
                            nested: None,
                        });
                    }
                }
            }
        }
        Plan::Random { samples } | Plan::Nested { samples } => {
            let nested = matches!(plan, Plan::Nested { .. });
            for _ in 0..samples {
                let at = pick(&mut rng, ops);
                let mode = modes[rng.next_u64() as usize % modes.len()];
                let nested = nested.then(|| Nested {
                    at: pick(&mut rng, after),
                    mode: modes[rng.next_u64() as usize % modes.len()],
                });
                cases.push(CaseId {
                    seed: cfg.seed,
                    at,
                    mode,
                    nested,
                });
            }
        }
    }
    let mut s = Summary {
        workload_ops: ops,
        workload: counters,
        ..Summary::default()
    };
    let total = cases.len() as u64;
    for id in cases {
        s.cases += 1;
        let (outcome, info) = run_case_described(cfg, id);
        if let Some(i) = &info {
            *s.cut_classes.entry(i.class).or_default() += 1;
        }
        let with_cut = |m: String| match &info {
            Some(i) => format!("{m} [{}]", i.text),
            None => m,
        };
        match outcome {
            Outcome::Passed => s.passed += 1,
            Outcome::NotReached => s.not_reached += 1,
            Outcome::SecondNotReached => s.second_not_reached += 1,
            Outcome::OutOfSpace(m) => s.out_of_space.push((id, with_cut(m))),
            Outcome::Failed(m) => s.failures.push((id, with_cut(m))),
        }
        progress(s.cases, total);
    }
    Ok(s)
}
