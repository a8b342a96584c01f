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

mod codes;
mod config;
mod cut;
mod model;

pub use config::{CrashConfig, CrashVolume, HostOp, Wrapper, IDLE_GAP, IDLE_TICKS};
pub use cut::CutInfo;
pub use model::{check_after_kill, pattern, Checker};
use model::{verify, Model};

use controller::Controller;
use ftl::{Ftl, FtlError};
use nand::{ConstantRber, CutMode, Lpn, NandError, Nanos, RamStorage};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use std::collections::BTreeMap;
use std::fmt;

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
