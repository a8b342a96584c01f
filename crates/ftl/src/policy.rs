//! Policies: the small traits a scheme is configured from, each with today's behaviour as
//! its default. A paper's scheme and its baselines differ by which objects fill these slots,
//! not by forks of the FTL.
//!
//! | slot | trait | default | also |
//! |---|---|---|---|
//! | victim choice | [`VictimPolicy`](crate::VictimPolicy) | greedy | cost-benefit, AP-weighted |
//! | placement | [`Placement`] | [`Striped`] | [`HintStreams`] |
//! | ECC strength | [`EccStrength`] | [`FixedStrength`] | |
//! | GC pacing | [`GcPacing`] | [`Foreground`] | [`Incremental`] |
//! | copy order | [`CopyOrder`] | [`Ascending`] | |
//! | recovery | `Recovery` (chosen by [`RecoveryKind`](crate::RecoveryKind)) | roll-forward | full scan |
//!
//! Every trait is object safe and `Send`; policies hold no clock and no global RNG (what
//! they need is passed in), so schemes stay deterministic.

use crate::DataClass;
use alloc::boxed::Box;
use nand::{BitKind, Nanos};
use serde::{Deserialize, Serialize};

/// A physical slot a frontier offers to the next program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Flat die index.
    pub die: u32,
    /// Flat block index.
    pub block: u32,
    /// Page within the block.
    pub page: u32,
    /// The page's bit kind on its word line (LSB/CSB/MSB; `Lsb` on SLC chips).
    pub bit: BitKind,
}

/// What is about to be programmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// A host write of this class.
    Host(DataClass),
    /// A GC, wear-levelling or relocation copy of a page of this class.
    Copy(DataClass),
}

impl WriteKind {
    /// The class of the data.
    pub fn class(self) -> DataClass {
        match self {
            WriteKind::Host(c) | WriteKind::Copy(c) => c,
        }
    }
}

/// A placement policy's answer for an offered slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotChoice {
    /// Program the data here.
    Take,
    /// Leave this slot to padding (a real program of a pad page, counted in `pad_pages`)
    /// and offer the write the next slot. Only sensible where the next slot is better
    /// (AP: an LSB slot skipped so a critical page lands in an MSB slot).
    Pad,
}

/// Frontier streams a placement may direct a host write to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The host frontier (hot data).
    Host,
    /// The cold frontier GC copies go to.
    Cold,
}

/// Where writes go.
///
/// Contract: `host_die` returns a die below `dies`; the FTL tries that die first and the
/// others after it in order, so any answer is safe. `slot` is asked only when
/// [`wants_slots`](Placement::wants_slots) is true, once per offered slot; it must not
/// answer `Pad` forever (the FTL pads at most a block's worth of slots for one write and
/// then takes the slot). Policies see only what they are given: no chip access.
pub trait Placement: Send {
    /// Name in reports and configuration files.
    fn name(&self) -> &'static str;
    /// The first die to try for a host write of `lpn`.
    fn host_die(&mut self, dies: usize, lpn: u64, class: DataClass) -> usize;
    /// The frontier stream of a host write.
    fn host_stream(&self, _class: DataClass) -> Stream {
        Stream::Host
    }
    /// Whether [`slot`](Placement::slot) should be asked (a per-write cost otherwise
    /// skipped; asked once, when the scheme is built).
    fn wants_slots(&self) -> bool {
        false
    }
    /// Take or pad the slot offered to `write`.
    fn slot(&mut self, _slot: &Slot, _write: WriteKind) -> SlotChoice {
        SlotChoice::Take
    }
}

/// Today's placement: host writes stripe over dies round-robin on the host frontier; every
/// slot is taken.
#[derive(Debug, Clone, Copy, Default)]
pub struct Striped {
    next: usize,
}

impl Placement for Striped {
    fn name(&self) -> &'static str {
        "striped"
    }
    fn host_die(&mut self, dies: usize, _lpn: u64, _class: DataClass) -> usize {
        let d = self.next % dies.max(1);
        self.next = (d + 1) % dies.max(1);
        d
    }
}

/// Striped over dies, but a host write hinted cold goes to the cold frontier (with GC
/// copies, which are cold by survival): hot/cold separation from the host's own hints.
#[derive(Debug, Clone, Copy, Default)]
pub struct HintStreams {
    stripe: Striped,
}

impl Placement for HintStreams {
    fn name(&self) -> &'static str {
        "hint-streams"
    }
    fn host_die(&mut self, dies: usize, lpn: u64, class: DataClass) -> usize {
        self.stripe.host_die(dies, lpn, class)
    }
    fn host_stream(&self, class: DataClass) -> Stream {
        match class.temperature {
            crate::Temperature::Cold => Stream::Cold,
            _ => Stream::Host,
        }
    }
}

/// What an ECC-strength policy knows about a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramContext {
    /// The slot.
    pub slot: Slot,
    /// P/E cycles of the block.
    pub erase_count: u32,
    /// Simulated time.
    pub now: Nanos,
}

/// A read's outcome, as the decoder saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadFeedback {
    /// Flat block index.
    pub block: u32,
    /// Page within the block.
    pub page: u32,
    /// Bits the decoder corrected.
    pub corrected: u32,
    /// The page could not be decoded.
    pub failed: bool,
    /// Simulated time.
    pub now: Nanos,
}

/// What an ECC-strength policy may ask of the FTL after a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alarm {
    /// Rewrite the block's valid data elsewhere soon (its pages near their correction
    /// limit): the FTL queues the block for background relocation (if it is full and
    /// collectable) and counts the alarm.
    Refresh {
        /// Flat block index.
        block: u32,
    },
}

/// The BCH correction capability of each program.
///
/// Contract: `t_for` returns a strength the controller's spare area can hold (the FTL
/// checks the configured default at format; a policy returning more gets the program
/// refused with a configuration error). GC copies keep the strength their source page was
/// encoded with (data and parity move together), so `t_for` is asked for host and metadata
/// programs only. `on_read` sees every decoded read (host and GC) and may raise an alarm.
pub trait EccStrength: Send {
    /// Name in reports and configuration files.
    fn name(&self) -> &'static str;
    /// The strength for a program.
    fn t_for(&mut self, ctx: &ProgramContext) -> u32;
    /// Feedback after a read.
    fn on_read(&mut self, _read: &ReadFeedback) -> Option<Alarm> {
        None
    }
    /// `Some(t)` if every program gets `t` whatever its context and reads are of no
    /// interest: the FTL then skips building contexts and calling the policy (asked once,
    /// when the scheme is built).
    fn fixed(&self) -> Option<u32> {
        None
    }
}

/// Today's strength: one `t` for every page.
#[derive(Debug, Clone, Copy)]
pub struct FixedStrength(pub u32);

impl EccStrength for FixedStrength {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn t_for(&mut self, _ctx: &ProgramContext) -> u32 {
        self.0
    }
    fn fixed(&self) -> Option<u32> {
        Some(self.0)
    }
}

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

/// Which valid page of a victim GC copies next.
///
/// Contract: `next` returns a page at or after `from` for which `valid` is true, or `None`
/// when no such page is left; the FTL calls it with increasing `from`, so every valid page
/// is copied exactly once whatever the order within that rule.
pub trait CopyOrder: Send {
    /// Name in reports and configuration files.
    fn name(&self) -> &'static str;
    /// The next page to copy.
    fn next(&mut self, from: u32, pages: u32, valid: &mut dyn FnMut(u32) -> bool) -> Option<u32>;
    /// True if the order is plain ascending: the FTL then scans inline (no call per page;
    /// asked once).
    fn ascending(&self) -> bool {
        false
    }
}

/// Today's order: ascending page index.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ascending;

impl CopyOrder for Ascending {
    fn name(&self) -> &'static str {
        "ascending"
    }
    fn next(&mut self, from: u32, pages: u32, valid: &mut dyn FnMut(u32) -> bool) -> Option<u32> {
        (from..pages).find(|&p| valid(p))
    }
    fn ascending(&self) -> bool {
        true
    }
}

/// Placement policies by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementKind {
    /// [`Striped`].
    #[default]
    Striped,
    /// [`HintStreams`].
    HintStreams,
}

impl PlacementKind {
    /// The policy object.
    pub fn policy(self) -> Box<dyn Placement> {
        match self {
            PlacementKind::Striped => Box::new(Striped::default()),
            PlacementKind::HintStreams => Box::new(HintStreams::default()),
        }
    }
}

/// GC pacing policies by name (`gc_pacing = "foreground"` or
/// `gc_pacing = { incremental = { steps = 4 } }`).
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
}

impl PacingKind {
    /// The policy object.
    pub fn policy(self) -> Box<dyn GcPacing> {
        match self {
            PacingKind::Foreground => Box::new(Foreground),
            PacingKind::Incremental { steps } => Box::new(Incremental {
                steps: steps.max(1),
            }),
        }
    }
}

/// The policy objects of a scheme, beside its victim policy and recovery procedure.
pub struct Policies {
    /// Placement.
    pub placement: Box<dyn Placement>,
    /// ECC strength.
    pub ecc: Box<dyn EccStrength>,
    /// GC pacing.
    pub pacing: Box<dyn GcPacing>,
    /// Copy order.
    pub copy_order: Box<dyn CopyOrder>,
}

impl core::fmt::Debug for Policies {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Policies")
            .field("placement", &self.placement.name())
            .field("ecc", &self.ecc.name())
            .field("pacing", &self.pacing.name())
            .field("copy_order", &self.copy_order.name())
            .finish()
    }
}
