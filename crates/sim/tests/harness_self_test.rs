//! The crash harness is tested itself: FTLs with deliberately broken behaviour — wrapped
//! (`CrashConfig::wrap`: trims dropped, a flush that does nothing) or broken inside (the
//! `ftl` crate's `sabotage` feature: recovery skipping a block, a victim erased before its
//! copies are sealed, torn pages believed without a CRC check) — must make it report
//! contract violations, and the same plan over the unbroken FTL must not. A deliberately
//! weakened checker lets a known-bad FTL through, so the real checker's strength is what
//! these tests measure. If a change to the harness loses its teeth, this fails.

use controller::Controller;
use ftl::sabotage::Sabotage;
use ftl::SchemeConfig;
use ftl::{BoxedVolume, DataClass, FlashOp, Ftl, FtlCounters, FtlError, RecoveryReport, Volume};
use nand::{ConstantRber, CutMode, Lpn, Nanos, PhysAddr, RamStorage};
use sim::crash::{run_plan, Checker, CrashConfig, Plan, Summary};

mod common;

type Dev = BoxedVolume<RamStorage, ConstantRber>;

/// What the broken FTL gets wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bug {
    /// Nothing: the control.
    None,
    /// Trims are acknowledged and forgotten.
    DropTrims,
    /// `flush` returns at once: nothing is sealed, no trim logged, no checkpoint written.
    NoopFlush,
}

/// A volume that forwards everything to the real one except what its bug breaks.
struct Broken {
    inner: Dev,
    bug: Bug,
}

impl Ftl for Broken {
    fn logical_pages(&self) -> u64 {
        self.inner.logical_pages()
    }
    fn page_size(&self) -> usize {
        self.inner.page_size()
    }
    fn write_with(
        &mut self,
        now: Nanos,
        lpn: Lpn,
        data: &[u8],
        hint: DataClass,
    ) -> Result<(), FtlError> {
        self.inner.write_with(now, lpn, data, hint)
    }
    fn read(&mut self, now: Nanos, lpn: Lpn, data: &mut [u8]) -> Result<(), FtlError> {
        self.inner.read(now, lpn, data)
    }
    fn trim(&mut self, now: Nanos, lpn: Lpn) -> Result<(), FtlError> {
        if self.bug == Bug::DropTrims {
            return Ok(());
        }
        self.inner.trim(now, lpn)
    }
    fn flush(&mut self, now: Nanos) -> Result<(), FtlError> {
        if self.bug == Bug::NoopFlush {
            return Ok(());
        }
        self.inner.flush(now)
    }
    fn tick(&mut self, now: Nanos) -> Result<bool, FtlError> {
        self.inner.tick(now)
    }
    fn take_ops(&mut self, out: &mut Vec<FlashOp>) {
        self.inner.take_ops(out)
    }
    fn counters(&self) -> &FtlCounters {
        self.inner.counters()
    }
    fn ecc_stats(&self) -> controller::EccStats {
        self.inner.ecc_stats()
    }
    fn erase_counts(&self) -> &[u32] {
        self.inner.erase_counts()
    }
}

impl Volume<RamStorage, ConstantRber> for Broken {
    fn scheme(&self) -> &'static str {
        "broken"
    }
    fn controller(&self) -> &Controller<RamStorage, ConstantRber> {
        self.inner.controller()
    }
    fn controller_mut(&mut self) -> &mut Controller<RamStorage, ConstantRber> {
        self.inner.controller_mut()
    }
    fn into_controller(self: Box<Self>) -> Controller<RamStorage, ConstantRber> {
        self.inner.into_controller()
    }
    fn recovery_report(&self) -> Option<&RecoveryReport> {
        self.inner.recovery_report()
    }
    fn mapping(&self, lpn: u64) -> Option<PhysAddr> {
        self.inner.mapping(lpn)
    }
    fn free_blocks(&self) -> Vec<usize> {
        self.inner.free_blocks()
    }
    fn verify(&self) -> Result<(), ftl::Invariant> {
        self.inner.verify()
    }
}

fn wrap_none(d: Dev) -> Dev {
    Box::new(Broken {
        inner: d,
        bug: Bug::None,
    })
}
fn wrap_drop_trims(d: Dev) -> Dev {
    Box::new(Broken {
        inner: d,
        bug: Bug::DropTrims,
    })
}
fn wrap_noop_flush(d: Dev) -> Dev {
    Box::new(Broken {
        inner: d,
        bug: Bug::NoopFlush,
    })
}

fn failures(wrap: fn(Dev) -> Dev, seed: u64) -> (usize, u64) {
    failures_checked(wrap, seed, Checker::Contract)
}

/// Failures and passes of a random plan over the wrapped FTL, checked by `checker`.
fn failures_checked(wrap: fn(Dev) -> Dev, seed: u64, checker: Checker) -> (usize, u64) {
    let mut cfg = CrashConfig::small(seed);
    cfg.trim_pct = 20;
    cfg.wrap = Some(wrap);
    cfg.checker = checker;
    let s = run_plan(
        &cfg,
        Plan::Random { samples: 150 },
        &CutMode::ALL,
        &mut |_, _| {},
    )
    .unwrap();
    eprint!("{s}");
    (s.failures.len(), s.passed)
}

#[test]
fn the_harness_catches_a_volume_that_forgets_trims() {
    let (f, _) = failures(wrap_drop_trims, 41);
    assert!(f > 0, "an FTL that drops trims went unnoticed");
}

#[test]
fn the_harness_catches_a_flush_that_persists_nothing() {
    let (f, _) = failures(wrap_noop_flush, 42);
    assert!(f > 0, "an FTL whose flush does nothing went unnoticed");
}

#[test]
fn the_control_passes_through_the_same_wrapper() {
    let (f, passed) = failures(wrap_none, 41);
    assert_eq!(f, 0);
    assert!(passed > 140);
}

/// A linear or random plan on an FTL carrying `bug`, checked by `checker`.
fn sabotaged(bug: Sabotage, checker: Checker, seed: u64, plan: Plan, modes: &[CutMode]) -> Summary {
    let mut cfg = CrashConfig::small(seed);
    cfg.trim_pct = 20;
    cfg.checker = checker;
    // The invariant checks (`Volume::verify`) catch some of these bugs on their own, even in
    // the cut-free dry run; off, so what is measured is the contract checker.
    cfg.verify = false;
    let SchemeConfig::Page(p) = &mut cfg.scheme else {
        unreachable!("a page-level configuration")
    };
    p.sabotage = bug;
    let s = run_plan(&cfg, plan, modes, &mut |_, _| {}).unwrap();
    eprintln!("{bug:?} / {checker:?}:\n{s}");
    s
}

fn broken(s: &Summary) -> usize {
    s.failures.len()
}

#[test]
fn the_harness_catches_recovery_skipping_a_block() {
    let s = sabotaged(
        Sabotage::SkipRecoveryBlock,
        Checker::Contract,
        43,
        Plan::Random { samples: 150 },
        &CutMode::ALL,
    );
    assert!(broken(&s) > 0, "recovery that skips a block went unnoticed");
}

#[test]
fn the_harness_catches_a_victim_erased_before_its_copies_are_sealed() {
    // Only a cut that scrambles the lower pages of an upper-page program exposes it: every
    // such cut point of the workload.
    let s = sabotaged(
        Sabotage::EraseVictimEarly,
        Checker::Contract,
        44,
        Plan::Linear,
        &[CutMode::PairedPage],
    );
    assert!(
        broken(&s) > 0,
        "erasing a victim before its copies are sealed went unnoticed"
    );
}

#[test]
fn the_harness_catches_torn_pages_believed_without_a_crc_check() {
    let s = sabotaged(
        Sabotage::NoTornCheck,
        Checker::Contract,
        45,
        Plan::Linear,
        &[
            CutMode::TornProgram(nand::TornFill::Random),
            CutMode::PairedPage,
        ],
    );
    assert!(
        broken(&s) > 0,
        "torn pages believed without their CRC went unnoticed"
    );
}

#[test]
fn the_harness_catches_a_victim_erased_before_its_trims_are_logged() {
    let s = sabotaged(
        Sabotage::EraseBeforeTrimLog,
        Checker::Contract,
        46,
        Plan::Random { samples: 300 },
        &CutMode::ALL,
    );
    assert!(
        broken(&s) > 0,
        "erasing a victim before the trims that superseded its pages are logged went unnoticed"
    );
}

#[test]
fn a_weakened_checker_lets_a_known_bad_ftl_through() {
    // The same FTL that forgets trims, the same cuts: the contract checker fails it (a
    // trimmed page comes back with its old data), a checker that accepts any version ever
    // written does not. The self-tests above therefore depend on the checker's full
    // strength, and would notice it weakened.
    let run = |checker| failures_checked(wrap_drop_trims, 41, checker).0;
    assert!(run(Checker::Contract) > 0);
    assert_eq!(
        run(Checker::AnyVersion),
        0,
        "the weakened checker caught it: it is not weak"
    );
}

#[test]
fn the_unbroken_ftl_passes_the_same_plans() {
    let torn = [
        CutMode::TornProgram(nand::TornFill::Random),
        CutMode::PairedPage,
    ];
    // The fast test tier (`NANDLAB_TEST_TIER=fast`) samples 40 cut points per plan instead
    // of every one: this is the control, the sabotaged runs keep their plans.
    let fast = common::fast_tier();
    for (seed, plan, modes) in [
        (43, Plan::Random { samples: 150 }, &CutMode::ALL[..]),
        (44, Plan::Linear, &[CutMode::PairedPage][..]),
        (45, Plan::Linear, &torn[..]),
    ] {
        let plan = if fast {
            Plan::Random { samples: 40 }
        } else {
            plan
        };
        let s = sabotaged(Sabotage::None, Checker::Contract, seed, plan, modes);
        assert_eq!(broken(&s), 0, "seed {seed}: {s}");
        assert!(s.passed as usize > s.cases as usize * 9 / 10, "{s}");
    }
}
