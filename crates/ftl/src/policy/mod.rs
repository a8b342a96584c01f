//! Policies: the small traits a scheme is configured from, each with today's behaviour as
//! its default. A paper's scheme and its baselines differ by which objects fill these slots,
//! not by forks of the FTL.
//!
//! | slot | trait | default | also |
//! |---|---|---|---|
//! | victim choice | [`VictimPolicy`](crate::VictimPolicy) | greedy | cost-benefit, AP-weighted |
//! | placement | [`Placement`] | [`Striped`] | [`HintStreams`], [`MsbCritical`] (AP) |
//! | ECC strength | [`EccStrength`] | [`FixedStrength`] | |
//! | GC pacing | [`GcPacing`] | [`Foreground`] | [`Incremental`], [`WaoGc`], [`OnDemand`] |
//! | copy order | [`CopyOrder`] | [`Ascending`] | [`Asymmetric`] (AP) |
//! | recovery | `Recovery` (chosen by [`RecoveryKind`](crate::RecoveryKind)) | roll-forward | full scan |
//!
//! Victim and placement policies of your own register by name in a [`Registry`] passed to
//! the calls that build a volume; configurations then name them like the built-in ones.
//!
//! Every trait is object safe and `Send`; policies hold no clock and no global RNG (what
//! they need is passed in), so schemes stay deterministic.

use crate::DataClass;
use alloc::boxed::Box;
use nand::{BitKind, Nanos};
use serde::{Deserialize, Serialize};

pub mod flares;
mod pacing;
mod registry;
pub use pacing::*;
pub(crate) use registry::named_kind;
pub use registry::{PlacementFactory, PolicyName, Registry, VictimFactory, MAX_POLICY_NAME};

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
    /// One bit per cell: a single-level chip, or a multi-level block in SLC mode (its
    /// pages have no partner and a single-level cell's reliability, whatever `bit` says).
    pub slc: bool,
}

impl Slot {
    /// Whether a page here is as reliable as the chip allows: an MSB page or a page of one
    /// bit per cell (AP's rule for critical pages).
    pub fn reliable(&self) -> bool {
        self.slc || self.bit == BitKind::Msb
    }
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
/// others after it in order, so any answer is safe; `peek_die` is what `host_die` would
/// answer now, without advancing any state. `slot` is asked only when
/// [`wants_slots`](Placement::wants_slots) is true, once per offered slot; it must not
/// answer `Pad` forever (the FTL pads at most a block's worth of slots for one write and
/// then takes the slot). Policies see only what they are given: no chip access.
pub trait Placement: Send {
    /// Name in reports and configuration files.
    fn name(&self) -> &'static str;
    /// The first die to try for a host write of `lpn`.
    fn host_die(&mut self, dies: usize, lpn: u64, class: DataClass) -> usize;
    /// What [`host_die`](Placement::host_die) would answer now (no state changes).
    fn peek_die(&self, dies: usize, lpn: u64, class: DataClass) -> usize;
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
    fn slot(&self, _slot: &Slot, _write: WriteKind) -> SlotChoice {
        SlotChoice::Take
    }
    /// True if the policy keeps critical pages out of unreliable slots (every slot it takes
    /// for a critical page is [`Slot::reliable`]): the FTL then checks that invariant in
    /// `verify` and refuses single-level chips, where the policy means nothing.
    fn protects_critical(&self) -> bool {
        false
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
    fn peek_die(&self, dies: usize, _lpn: u64, _class: DataClass) -> usize {
        self.next % dies.max(1)
    }
}

/// The die choice of a placement that stripes like [`Striped`] (its `stripe` field).
macro_rules! striped_dies {
    () => {
        fn host_die(&mut self, dies: usize, lpn: u64, class: DataClass) -> usize {
            self.stripe.host_die(dies, lpn, class)
        }
        fn peek_die(&self, dies: usize, lpn: u64, class: DataClass) -> usize {
            self.stripe.peek_die(dies, lpn, class)
        }
    };
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
    striped_dies!();
    fn host_stream(&self, class: DataClass) -> Stream {
        match class.temperature {
            crate::Temperature::Cold => Stream::Cold,
            _ => Stream::Host,
        }
    }
}

/// AP's MSB allocation (Alg. 1): host writes stripe over dies like [`Striped`], but a
/// critical page — a host write or a GC copy — is never placed in an LSB (or CSB) page of
/// a multi-level block: such a slot is refused and padded, and the page takes the next
/// slot. The paper's *request feedback* (a queued non-critical write served first so it
/// fills the LSB slot instead of a pad) is the engine's: it asks the FTL
/// ([`Ftl::feedback_wanted`](crate::Ftl::feedback_wanted)) before a critical write. Each
/// judged slot of a critical page is one look-up in the chip's shared-pages table
/// (counted in `pairing_lookups`; the simulator charges its time). Pages of SLC-mode
/// blocks (the checkpoint region, the flush buffer) are taken: one bit per cell is more
/// reliable than an MSB page.
#[derive(Debug, Clone, Copy, Default)]
pub struct MsbCritical {
    stripe: Striped,
}

impl Placement for MsbCritical {
    fn name(&self) -> &'static str {
        "msb-critical"
    }
    striped_dies!();
    fn wants_slots(&self) -> bool {
        true
    }
    fn slot(&self, slot: &Slot, write: WriteKind) -> SlotChoice {
        if write.class().critical && !slot.reliable() {
            SlotChoice::Pad
        } else {
            SlotChoice::Take
        }
    }
    fn protects_critical(&self) -> bool {
        true
    }
}

/// What an ECC-strength policy knows about a program: built for every program under an
/// adaptive policy, so it carries the page's position as the FTL already has it (no
/// die, bit or SLC look-ups a policy would not use).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramContext {
    /// Flat block index.
    pub block: u32,
    /// Page within the block.
    pub page: u32,
    /// The same page as a flat page index (block · pages per block + page).
    pub phys: u32,
    /// P/E cycles of the block.
    pub erase_count: u32,
    /// The page takes FTL metadata (a checkpoint-region page: the paper's reserved pages,
    /// always at the worst-case strength).
    pub meta: bool,
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
    /// The same page as a flat page index (block · pages per block + page).
    pub phys: u32,
    /// Bits the decoder corrected.
    pub corrected: u32,
    /// The page could not be decoded.
    pub failed: bool,
    /// The strength the page was encoded with, from its header (0 when the read failed).
    pub t: u32,
    /// P/E cycles of the block (the FTL's erase-count table).
    pub erase_count: u32,
    /// The page's PPROF codeword from its spare area (FLARES: strength, P/E cycles and
    /// time of its program), when the controller writes one and it decoded.
    pub pprof: Option<controller::PprofRecord>,
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
    /// Rewrite one page elsewhere (FLARES's rewrite alarm: the page nears the retention
    /// its strength allows, or failed too often): the FTL relocates it — re-encoded at
    /// the strength the policy then gives its new page — if it still holds valid data.
    Rewrite {
        /// Flat page index.
        page: u32,
    },
}

/// What an ECC-strength policy counts (reported with the FTL's counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EccPolicyCounters {
    /// Estimation windows closed per FLARES zone (FS, OC, CR, FA, SZ).
    pub zones: [u64; 5],
    /// Rewrite alarms for retention (on a read or by the scrub).
    pub retention_alarms: u64,
    /// Rewrite alarms of the failure zone.
    pub failure_alarms: u64,
    /// Estimations whose projected RBER was beyond the strongest t.
    pub beyond_range: u64,
    /// Pages the idle-time scrub checked.
    pub scrubbed_pages: u64,
    /// Profiles loaded after mount without a decodable spare-area PPROF (rebuilt from the
    /// header's t, the block's erase count and the read's time).
    #[serde(default)]
    pub pprof_fallbacks: u64,
    /// Pages the scrub found past their retention.
    pub scrub_alarms: u64,
    /// Relocated pages (GC, refresh, wear levelling) re-encoded at another strength than
    /// their source's.
    #[serde(default)]
    pub reencoded_copies: u64,
    /// Programs per strength chosen (index = t, up to 63).
    #[serde(with = "serde_t_hist")]
    pub programs_by_t: [u64; 64],
}

impl EccPolicyCounters {
    /// What was counted since `before` (an earlier copy of these counters).
    pub fn since(&self, before: &Self) -> Self {
        let d = |x: u64, y: u64| x.saturating_sub(y);
        EccPolicyCounters {
            zones: core::array::from_fn(|i| d(self.zones[i], before.zones[i])),
            retention_alarms: d(self.retention_alarms, before.retention_alarms),
            failure_alarms: d(self.failure_alarms, before.failure_alarms),
            beyond_range: d(self.beyond_range, before.beyond_range),
            scrubbed_pages: d(self.scrubbed_pages, before.scrubbed_pages),
            pprof_fallbacks: d(self.pprof_fallbacks, before.pprof_fallbacks),
            scrub_alarms: d(self.scrub_alarms, before.scrub_alarms),
            reencoded_copies: d(self.reencoded_copies, before.reencoded_copies),
            programs_by_t: core::array::from_fn(|i| {
                d(self.programs_by_t[i], before.programs_by_t[i])
            }),
        }
    }
}

impl Default for EccPolicyCounters {
    fn default() -> Self {
        EccPolicyCounters {
            zones: [0; 5],
            retention_alarms: 0,
            failure_alarms: 0,
            beyond_range: 0,
            scrubbed_pages: 0,
            pprof_fallbacks: 0,
            scrub_alarms: 0,
            reencoded_copies: 0,
            programs_by_t: [0; 64],
        }
    }
}

mod serde_t_hist {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    pub fn serialize<S: Serializer>(v: &[u64; 64], s: S) -> Result<S::Ok, S::Error> {
        v.as_slice().serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u64; 64], D::Error> {
        let v = alloc::vec::Vec::<u64>::deserialize(d)?;
        let mut out = [0; 64];
        for (o, x) in out.iter_mut().zip(v) {
            *o = x;
        }
        Ok(out)
    }
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
    /// The strength for a program (host data, metadata, or a relocated page that is
    /// re-encoded when the policy is not fixed).
    fn t_for(&mut self, ctx: &ProgramContext) -> u32;
    /// Feedback after a read.
    fn on_read(&mut self, _read: &ReadFeedback, _c: &mut EccPolicyCounters) -> Option<Alarm> {
        None
    }
    /// Block `block` was erased: its pages hold no data any more.
    fn on_erase(&mut self, _block: u32) {}
    /// Flat page `page` holds no valid data (found by a scrub): stop watching it.
    fn forget(&mut self, _page: u32) {}
    /// Idle-time scrub: checks a bounded number of pages' retention (from what the policy
    /// keeps in RAM; no flash read) and appends those that need a rewrite to `out`.
    fn scrub(&mut self, _now: Nanos, _out: &mut alloc::vec::Vec<u32>, _c: &mut EccPolicyCounters) {}
    /// A hint: flat page `page` will be read soon (load its state into the cache). No
    /// effect on behaviour.
    fn prefetch(&self, _page: u32) {}
    /// Bytes of controller RAM the policy's per-page state takes.
    fn ram_bytes(&self) -> u64 {
        0
    }
    /// The state a clean shutdown saves in the checkpoint (FLARES: the non-critical part
    /// of every page's profile); `None`: nothing to save.
    fn stash(&self) -> Option<alloc::vec::Vec<u8>> {
        None
    }
    /// Takes back what [`stash`](EccStrength::stash) saved (at mount; bytes of another
    /// shape are ignored).
    fn restore(&mut self, _bytes: &[u8]) {}
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

/// A victim page as a copy-order policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VictimPage {
    /// Holds no valid data (or was copied already).
    Invalid,
    /// Holds a valid page of this criticality (what the FTL keeps in RAM for it: no read).
    Valid {
        /// The page is critical.
        critical: bool,
    },
}

/// Where a GC job of a copy-order policy stands: two ascending cursors over the victim's
/// pages, one for non-critical and one for critical pages (an ascending order uses `next`
/// only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CopyCursor {
    /// First page not yet considered (non-critical pages, or all pages).
    pub next: u32,
    /// First page not yet considered among critical pages.
    pub next_critical: u32,
}

/// Which valid page of a victim GC copies next.
///
/// Contract: `next` returns a page below `pages` whose [`VictimPage`] is `Valid`, advancing
/// `cursor` past it, or `None` when no valid page is left; a page it returned is copied at
/// once (then `Invalid`), so every valid page is copied exactly once whatever the order.
/// `dest` is the slot the copy will be offered first (the die's cold frontier; `None` if
/// a new block opens for it, whose first page is an LSB page).
pub trait CopyOrder: Send {
    /// Name in reports and configuration files.
    fn name(&self) -> &'static str;
    /// The next page to copy.
    fn next(
        &mut self,
        cursor: &mut CopyCursor,
        pages: u32,
        dest: Option<Slot>,
        page: &mut dyn FnMut(u32) -> VictimPage,
    ) -> Option<u32>;
    /// True if the order is plain ascending: the FTL then scans inline (no call per page;
    /// asked once).
    fn ascending(&self) -> bool {
        false
    }
    /// True if the order consults the destination slot and the pages' classes (each copy
    /// then counts a shared-pages table look-up, as AP's Alg. 2 does).
    fn asymmetric(&self) -> bool {
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
    fn next(
        &mut self,
        cursor: &mut CopyCursor,
        pages: u32,
        _dest: Option<Slot>,
        page: &mut dyn FnMut(u32) -> VictimPage,
    ) -> Option<u32> {
        let p = (cursor.next..pages).find(|&p| page(p) != VictimPage::Invalid)?;
        cursor.next = p + 1;
        Some(p)
    }
    fn ascending(&self) -> bool {
        true
    }
}

/// AP's asymmetric GC (Alg. 2): an unreliable destination slot (LSB) takes the victim's
/// next non-critical page; a reliable one (MSB, SLC mode) its next critical page, else its
/// next non-critical page. With only critical pages left, a critical page is offered the
/// LSB slot anyway and the placement ([`MsbCritical`]) pads it. The paper buffers the
/// victim's valid pages first; here the FTL knows every page's class in RAM and copies
/// one page per GC step in the same order (each class ascending).
#[derive(Debug, Clone, Copy, Default)]
pub struct Asymmetric;

impl CopyOrder for Asymmetric {
    fn name(&self) -> &'static str {
        "asymmetric"
    }
    fn next(
        &mut self,
        cursor: &mut CopyCursor,
        pages: u32,
        dest: Option<Slot>,
        page: &mut dyn FnMut(u32) -> VictimPage,
    ) -> Option<u32> {
        let reliable = dest.is_some_and(|s| s.reliable());
        // A class's cursor passes every page it looked at: a victim's pages never become
        // valid again, so a search that found none leaves the cursor at the end (without
        // that, each reliable slot would rescan the rest of a victim with no critical page).
        let mut find = |from: &mut u32, critical: bool| {
            let found = (*from..pages).find(|&p| page(p) == VictimPage::Valid { critical });
            *from = found.map_or(pages, |p| p + 1);
            found
        };
        if reliable {
            find(&mut cursor.next_critical, true).or_else(|| find(&mut cursor.next, false))
        } else {
            find(&mut cursor.next, false).or_else(|| find(&mut cursor.next_critical, true))
        }
    }
    fn asymmetric(&self) -> bool {
        true
    }
}

/// Metadata writers by name (`meta_writer`): how the checkpoint region's units reach flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetaWriterKind {
    /// A unit is a whole page's data area (LSB pages of SLC-mode blocks on multi-level
    /// chips).
    #[default]
    WholePage,
    /// SPFTL's subpage programming (Ref. 001, §III.B): a unit is one subpage, programmed
    /// alone in an SP block (SLC or SLC mode) — a trim-log or roll-forward record costs a
    /// subpage instead of a page. Needs a chip with subpages.
    Subpage,
}

impl MetaWriterKind {
    /// Units per page: 1, or the chip's subpages.
    pub fn units_per_page(self, geo: &nand::Geometry) -> u32 {
        match self {
            MetaWriterKind::WholePage => 1,
            MetaWriterKind::Subpage => geo.subpages_per_page.max(1),
        }
    }
}

/// Copy orders by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CopyOrderKind {
    /// [`Ascending`].
    #[default]
    Ascending,
    /// [`Asymmetric`].
    Asymmetric,
}

impl CopyOrderKind {
    /// The policy object.
    pub fn policy(self) -> Box<dyn CopyOrder> {
        match self {
            CopyOrderKind::Ascending => Box::new(Ascending),
            CopyOrderKind::Asymmetric => Box::new(Asymmetric),
        }
    }
}

/// Placement policies by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlacementKind {
    /// [`Striped`].
    #[default]
    Striped,
    /// [`HintStreams`].
    HintStreams,
    /// [`MsbCritical`].
    MsbCritical,
    /// A policy registered under this name ([`Registry`]).
    Named(PolicyName),
}

impl PlacementKind {
    const BUILTIN: [(&'static str, PlacementKind); 3] = [
        ("striped", PlacementKind::Striped),
        ("hint-streams", PlacementKind::HintStreams),
        ("msb-critical", PlacementKind::MsbCritical),
    ];

    /// The built-in policy object (`None` for a registered name: see
    /// [`Registry::placement`]).
    pub fn builtin(self) -> Option<Box<dyn Placement>> {
        match self {
            PlacementKind::Striped => Some(Box::new(Striped::default())),
            PlacementKind::HintStreams => Some(Box::new(HintStreams::default())),
            PlacementKind::MsbCritical => Some(Box::new(MsbCritical::default())),
            PlacementKind::Named(_) => None,
        }
    }
}

named_kind!(PlacementKind);

/// ECC-strength policies by name (`ecc = "fixed"`: every page at `ecc_t`; or
/// `ecc = { flares = { wsize = 100, mix = 0.5, … } }`: FLARES, with metadata pages at
/// `ecc_t`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EccKind {
    /// [`FixedStrength`] at `ecc_t`.
    #[default]
    Fixed,
    /// [`crate::flares::FlaresStrength`].
    Flares(crate::flares::FlaresConfig),
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// Copies a victim of `classes` (None: invalid) with `order`, destinations alternating
    /// LSB / MSB; returns the copy order and the page look-ups it took.
    fn copy_all(order: &mut dyn CopyOrder, classes: &[Option<bool>]) -> (Vec<u32>, usize) {
        let mut state = classes.to_vec();
        let mut cursor = CopyCursor::default();
        let (mut copied, mut looks) = (Vec::new(), 0usize);
        for i in 0.. {
            let dest = Slot {
                die: 0,
                block: 0,
                page: i,
                bit: if i % 2 == 0 {
                    BitKind::Lsb
                } else {
                    BitKind::Msb
                },
                slc: false,
            };
            let pages = state.len() as u32;
            let next = order.next(&mut cursor, pages, Some(dest), &mut |p| {
                looks += 1;
                match state[p as usize] {
                    None => VictimPage::Invalid,
                    Some(critical) => VictimPage::Valid { critical },
                }
            });
            let Some(p) = next else { break };
            assert!(
                state[p as usize].is_some(),
                "page {p} copied twice or invalid"
            );
            state[p as usize] = None;
            copied.push(p);
        }
        (copied, looks)
    }

    #[test]
    fn asymmetric_copies_every_valid_page_once_in_linear_look_ups() {
        let n = 256usize;
        for pattern in 0..4u32 {
            let classes: Vec<Option<bool>> = (0..n)
                .map(|i| match pattern {
                    0 => Some(false),                        // no critical page at all
                    1 => Some(true),                         // only critical pages
                    2 => (i % 3 != 0).then_some(i % 5 == 0), // mixed, some invalid
                    _ => (i % 7 == 0).then_some(true),       // sparse critical
                })
                .collect();
            let (copied, looks) = copy_all(&mut Asymmetric, &classes);
            let mut sorted = copied.clone();
            sorted.sort_unstable();
            let valid: Vec<u32> = (0..n as u32)
                .filter(|&p| classes[p as usize].is_some())
                .collect();
            assert_eq!(sorted, valid, "pattern {pattern}");
            // Each class's cursor passes each page once, plus the final empty searches.
            assert!(looks <= 2 * n + 4, "pattern {pattern}: {looks} look-ups");
            // Reliable slots took critical pages first.
            if pattern == 2 {
                let first_crit = copied
                    .iter()
                    .position(|&p| classes[p as usize] == Some(true));
                assert_eq!(first_crit, Some(1));
            }
        }
    }
}
