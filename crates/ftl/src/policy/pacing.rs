//! The GC-pacing slot: how much collection a request may do ([`GcBudget`]) from what
//! its die has left ([`DieSpace`]) — run to completion ([`Foreground`]), a few steps per
//! write ([`Incremental`]), one bounded partial step per write ([`WaoGc`]), or one whole
//! victim when the write needs it ([`OnDemand`]) — and the policies by name
//! ([`PacingKind`]).

use alloc::boxed::Box;
use serde::{Deserialize, Serialize};

/// How much GC work to do at a point of the request stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GcBudget {
    /// None.
    Nothing,
    /// At most this many steps (a step is one valid-page copy or one erase), starting a
    /// job if none is running and the die is below its GC threshold.
    Steps(u32),
    /// Collect until the die is back at its GC threshold.
    UntilThreshold,
    /// Collect one whole victim (every valid-page copy, then its erase) — the full GC on
    /// demand of the pure page-level scheme and RTGC.
    Victim,
    /// One partial step of a real-time scheme: at most this many valid-page copies of the
    /// running job, or its erase (never both), starting a job when the die is down to its
    /// last free block (the one taking the writes and copies).
    Partial(u32),
}

/// What a pacing policy knows about a die.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DieSpace {
    /// Free blocks on the die.
    pub free: usize,
    /// The scheme's GC threshold (free blocks).
    pub threshold: usize,
    /// A GC job is in progress on the die.
    pub collecting: bool,
}

/// When garbage collection runs and how much of it.
///
/// Contract: whatever the policy answers, the FTL still collects until the threshold
/// before a write that finds its die with fewer than two free blocks (one for the write,
/// one for the copies of a victim), so no policy can make the device run out of space
/// while reclaimable blocks exist.
pub trait GcPacing: Send {
    /// Name in reports and configuration files.
    fn name(&self) -> &'static str;
    /// Before a host write on a die.
    fn before_write(&mut self, space: &DieSpace) -> GcBudget;
    /// After a host write on the same die.
    fn after_write(&mut self, _space: &DieSpace) -> GcBudget {
        GcBudget::Nothing
    }
    /// True if the policy is [`Foreground`]'s rule exactly (collect to the threshold before
    /// a write, nothing after): the FTL then applies it inline (asked once).
    fn is_foreground(&self) -> bool {
        false
    }
    /// True if the policy guarantees a latency bound by itself (WAO-GC): the FTL then
    /// skips the safety rule above (a real-time die runs with no free block besides the
    /// one taking writes and copies) and keeps every other foreground duty out of a
    /// request's way (see [`WaoGc`]).
    fn is_real_time(&self) -> bool {
        false
    }
    /// True if host writes and GC copies share one destination block per die and GC
    /// starts only when the die is down to it (the trigger of WAO-GC's Table I, threshold
    /// 1): the FTL then keeps each logical page on one die, skips the safety rule, and
    /// refuses what would take blocks outside GC (wear levelling, refresh, replicas).
    fn shares_destination(&self) -> bool {
        self.is_real_time()
    }
}

/// Free blocks per die a scheme with one shared destination keeps besides it: GC starts
/// when a die is down to this many. The one block in reserve is what a power cut needs:
/// recovery closes a destination it finds torn, and the victim the cut interrupted is then
/// collected into the reserve block (the bounds count it out of the data blocks).
///
/// It is also the die's whole margin for program failures at its low-water mark (the
/// destination full, this block and one more free): a die survives one block going bad
/// there — the other block becomes the destination, and GC runs whole victims into it
/// until the reserve is back (an overrun) — but if the next block it opens fails too,
/// before a victim is reclaimed and every victim still holds a valid page, the die has no
/// page left for GC's copies and writes on it fail with `NoSpace` — nothing is lost (the
/// interrupted job copies the page again later); reads, trims and other dies keep working,
/// and once trims empty a block GC erases it and writes resume. Keeping more blocks back would tolerate
/// more and raise σ for every write (eq. 7); the paper keeps none.
pub const RESERVE: usize = 1;

/// Full GC on demand with one destination (the pure page-level scheme and RTGC of WAO-GC's
/// Table I): after the host write that leaves a die no free block besides the destination
/// and its [`RESERVE`],
/// one whole victim — the greedy choice — is collected at once, its copies into the
/// destination (which has room: a victim never holds π valid pages). The write pays for
/// it: U(t) = U(e_w) + λ (t_rd + t_wr) + t_er.
#[derive(Debug, Clone, Copy, Default)]
pub struct OnDemand;

impl GcPacing for OnDemand {
    fn name(&self) -> &'static str {
        "on-demand"
    }
    fn before_write(&mut self, _space: &DieSpace) -> GcBudget {
        GcBudget::Nothing
    }
    fn after_write(&mut self, space: &DieSpace) -> GcBudget {
        if space.free <= RESERVE {
            GcBudget::Victim
        } else {
            GcBudget::Nothing
        }
    }
    fn shares_destination(&self) -> bool {
        true
    }
}

/// WAO-GC's pacing (Ref. 003, §IV-B): GC starts only when a die is down to its last
/// free block — the destination that takes host writes *and* GC copies; here also one
/// block in [`RESERVE`] for power cuts — and after every
/// host write (never after a read) runs exactly one partial step: up to `alpha` valid-page
/// copies of the greedy victim, or its erase. With the victim's valid pages bounded by
/// over-provisioning (U(λ) = ⌈σπ⌉), k = ⌈λ/α⌉ + 1 steps reclaim it while the destination
/// takes k writes and λ copies, k + λ ≤ π: one free block always suffices, and no write
/// waits for more than its own program plus one step (t_er + t_wr). `alpha` comes from the
/// chip ([`crate::rt_bounds::WaoBounds`]).
#[derive(Debug, Clone, Copy)]
pub struct WaoGc {
    /// Valid-page copies per partial step (α, eq. 4).
    pub alpha: u32,
}

impl GcPacing for WaoGc {
    fn name(&self) -> &'static str {
        "wao-gc"
    }
    fn before_write(&mut self, _space: &DieSpace) -> GcBudget {
        GcBudget::Nothing
    }
    fn after_write(&mut self, space: &DieSpace) -> GcBudget {
        if space.collecting || space.free <= RESERVE {
            GcBudget::Partial(self.alpha)
        } else {
            GcBudget::Nothing
        }
    }
    fn is_real_time(&self) -> bool {
        true
    }
}

/// Today's pacing: before a write, collect to completion while the die is below the
/// threshold.
#[derive(Debug, Clone, Copy, Default)]
pub struct Foreground;

impl GcPacing for Foreground {
    fn name(&self) -> &'static str {
        "foreground"
    }
    fn before_write(&mut self, space: &DieSpace) -> GcBudget {
        if space.free < space.threshold {
            GcBudget::UntilThreshold
        } else {
            GcBudget::Nothing
        }
    }
    fn is_foreground(&self) -> bool {
        true
    }
}

/// Partial GC: after each host write on a die below the threshold, at most `steps` GC
/// steps; the full collection only when the die is down to its last free block (the
/// safety rule of [`GcPacing`]). Spreads GC over writes, shortening the worst write.
#[derive(Debug, Clone, Copy)]
pub struct Incremental {
    /// Steps per write.
    pub steps: u32,
}

impl GcPacing for Incremental {
    fn name(&self) -> &'static str {
        "incremental"
    }
    fn before_write(&mut self, _space: &DieSpace) -> GcBudget {
        GcBudget::Nothing
    }
    fn after_write(&mut self, space: &DieSpace) -> GcBudget {
        if space.free < space.threshold || space.collecting {
            GcBudget::Steps(self.steps)
        } else {
            GcBudget::Nothing
        }
    }
}

/// GC pacing policies by name (`gc_pacing = "foreground"`,
/// `gc_pacing = { incremental = { steps = 4 } }`, `gc_pacing = "wao-gc"` or
/// `gc_pacing = "on-demand"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PacingKind {
    /// [`Foreground`].
    #[default]
    Foreground,
    /// [`Incremental`].
    Incremental {
        /// Steps per write.
        steps: u32,
    },
    /// [`WaoGc`]: α from the chip's timing.
    WaoGc,
    /// [`OnDemand`].
    OnDemand,
}

impl PacingKind {
    /// The policy object; `alpha` is WAO-GC's copies per partial step for the chip it runs
    /// on (ignored by the others).
    pub fn policy(self, alpha: u32) -> Box<dyn GcPacing> {
        match self {
            PacingKind::Foreground => Box::new(Foreground),
            PacingKind::Incremental { steps } => Box::new(Incremental {
                steps: steps.max(1),
            }),
            PacingKind::WaoGc => Box::new(WaoGc {
                alpha: alpha.max(1),
            }),
            PacingKind::OnDemand => Box::new(OnDemand),
        }
    }

    /// Whether writes and copies share one destination ([`GcPacing::shares_destination`]).
    pub fn shares_destination(self) -> bool {
        self.policy(1).shares_destination()
    }

    /// Whether this is a real-time pacing ([`GcPacing::is_real_time`]).
    pub fn is_real_time(self) -> bool {
        self.policy(1).is_real_time()
    }
}
