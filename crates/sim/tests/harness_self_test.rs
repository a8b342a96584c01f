//! The crash harness is tested itself: FTLs with deliberately broken behaviour, swapped in
//! through `CrashConfig::wrap`, must make it report contract violations — and the same plan
//! over the unbroken FTL must not. If a change to the harness loses its teeth, this fails.

use controller::Controller;
use ftl::{BoxedVolume, DataClass, FlashOp, Ftl, FtlCounters, FtlError, RecoveryReport, Volume};
use nand::{ConstantRber, CutMode, Lpn, Nanos, PhysAddr, RamStorage};
use sim::crash::{run_plan, CrashConfig, Plan};

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
    let mut cfg = CrashConfig::small(seed);
    cfg.trim_pct = 20;
    cfg.wrap = Some(wrap);
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
