//! The checkpoint region: generations of an opaque byte stream (a scheme's snapshot) and an
//! append-only log of fixed-size entries after each generation (the page-level FTL's trim
//! log), in blocks reserved at format.
//!
//! **Region.** The first blocks of every die are reserved (state `Region`) and, on
//! multi-level chips, put in SLC mode (only their LSB pages are programmed): a checkpoint
//! page is then never exposed to paired-page corruption and never shares a word line with
//! user data. Region blocks are used in a fixed interleaved order (block 0 of every die, then
//! block 1, …), so checkpoint pages are spread over the dies and read back in parallel.
//!
//! **Generations.** A generation's stream is cut into pages, each with a 32-byte header:
//! magic, version, kind (body or log), generation, page index within the generation, body
//! page count, payload length. A new generation is written only into region blocks that do
//! not hold the committed one, so a torn write leaves the previous generation intact;
//! [`Region::load`] takes the newest generation whose body is complete and which the scheme
//! accepts (its own stream CRC); every page is also protected by the controller's BCH code
//! and data CRC.
//!
//! **Generations in steps.** A generation can also be written a unit at a time
//! ([`Region::begin`], [`Region::step`]: each step one region-block erase or one unit
//! program) while the committed one stays committed and its log keeps growing: the new
//! generation's blocks are kept apart from the committed generation's, and it commits —
//! on flash and in RAM — with the program of its last body page. That page is a
//! *trailer*: log entries (kind byte 2) the scheme hands over at that step (the trims taken
//! since its snapshot was encoded, which the committed generation's log holds and the new
//! one must too); [`Region::load`] returns them with the log. A generation abandoned
//! half-written (a whole one is wanted instead, or a cut) is never loaded: generation
//! numbers are never reused, not even across a mount (the next is above every one seen).
//! Steps never rotate the region (a swap writes an anchor record and erases twice: more
//! than a step, and counting it in every generation's steps would raise the per-write
//! bound by a step); whole generations and log growth do, and a scheme whose checkpoints go
//! in steps swaps ahead at its flushes and in idle time ([`Region::rotate_ahead`]: the
//! block the next generation opens first). Without that the combined profile's region
//! took every checkpoint's erase: 41 on its most-worn block against a mean of 2.8
//! (`tests/integration/combined.rs`, 30,000 writes with a flush every 16); with it, 7 against 3.1.
//!
//! **Log.** Entries are appended as log pages after the committed generation's body; when
//! the region has no room for another log page while keeping room for a whole new
//! generation, [`Region::append_log`] says so and the scheme writes a new generation.
//!
//! **Rotation (wear levelling of the region).** Checkpoints and trim logs erase region
//! blocks far more often than data blocks are erased, so the region moves through the
//! block pool: when a region block about to be reused has been erased more than
//! [`ROTATE_SPREAD`] times more than the least-worn free block of its die, the two swap —
//! the free block (erased, put in SLC mode) joins the region and the worn one, erased and
//! back in native mode, joins the free pool. The current list of region blocks lives in
//! the **anchor**: the first two blocks of the configured region (fixed, SLC mode), which
//! hold anchor records (magic, sequence number, the list, a CRC32C), appended one a page
//! and written only at format and at a swap. Mount reads both anchor blocks and takes the
//! newest valid record; the next record goes to the block not holding it (erased first),
//! so the newest record is never erased and a torn record never hides an older one. A swap
//! erases the worn block, then writes the new record: a cut before the record leaves the
//! old list (the worn block an erased region block, the free block merely in SLC mode), a
//! cut after it the new one (the old block, no longer region and empty, is scanned by
//! recovery like any data block). The record once came first, and a cut between it and the
//! erase left region units in a block recovery scans as data: on a chip with subpages it
//! resumed an SP block of checkpoint units as a half-written data block, whose next full-
//! page program the chip refused (crash harness, linear cuts, `--meta-writer subpage`: 25
//! of 12,876 cases). The committed generation is
//! never in the block swapped out (a new generation only uses blocks not holding it). A
//! region of fewer than six blocks, or a volume formatted before anchors existed (no valid
//! record), keeps a fixed region.
//!
//! **Anchor refresh.** Checkpoint pages are rewritten at every generation, but an anchor
//! record only at a swap — so on a worn chip under weak ECC the newest record could sit for
//! months and age past what the code corrects, and the volume would not mount (measured: at
//! t = 8 on a 3000 P/E chip with month-long idle periods). A generation, whole or in steps,
//! therefore first rewrites the record when it is [`ANCHOR_REFRESH`] old or older, or when
//! its age is unknown (the first generation after a mount: the record carries no time) —
//! one unit program, and an erase of the other anchor block every `slots` records; in a
//! stepped generation each is a step of its own. Mount finds the end of each anchor
//! block's records by bisection (records fill a block's slots in order: about log2(slots)
//! reads, not one per record) and takes the last record that decodes, reading back past
//! ones that do not; anchor records that exist but none of which decodes are an error, not
//! a fixed region.
//!
//! **Idle-time scrub.** Host activity alone may write no generation for weeks — a host
//! that rewrites a few pages and flushes fills no log and reaches no checkpoint interval —
//! while the committed generation and the anchor record age like any page; the data they
//! describe may be fresh (rewritten, or scrubbed by FLARES), yet a crash would leave a
//! volume that does not mount. So the kernel's idle-time hook reads the committed
//! generation's first body page (its oldest page; at most once per [`PROBE_EVERY`], a
//! charged read) and, as UBI scrubs a block whose reads need many corrections, writes a
//! whole new generation — which refreshes the anchor record by the rule above — when that
//! page needed half its code's strength or did not decode (`Region::scrub_due`). A period
//! would not fit every chip: a day is needed on a worn chip under weak ECC, and would
//! rewrite the whole map daily on a young one; the probe rewrites when the errors say so.
//! The anchor record is at most [`ANCHOR_REFRESH`] older than the generation written with
//! it, and shares its blocks' mode and code, so the generation's probe speaks for it too.

mod anchor;
mod header;
mod steps;

use super::meta::{MetaWriter, Unit};
use super::{BState, Substrate};
use crate::{Cause, FtlError};
use ::alloc::boxed::Box;
use ::alloc::format;
use ::alloc::string::String;
use ::alloc::vec;
use ::alloc::vec::Vec;
use controller::{MetaTag, OobRecord, PageKind};
use nand::{ErrorModel, Nanos, Storage};

/// A checkpoint region's blocks on `chip`: flat block indices in use order (block `i` of
/// every die, then `i + 1`, …), the same at format and mount. `per_die` blocks per die when
/// configured (> 0); else enough for two generations of a `snapshot_bytes` snapshot in
/// headed units of `unit` bytes (a generation's pages are LSB pages of SLC-mode blocks),
/// plus `spare` blocks, and never fewer than can rotate ([`MIN_ROTATING`]).
pub fn layout(
    chip: &nand::ChipConfig,
    per_die: u32,
    snapshot_bytes: u64,
    unit: u64,
    spare: u64,
) -> Vec<u32> {
    let geo = chip.geometry;
    let ndies = geo.total_dies();
    let bpd = geo.planes_per_die * geo.blocks_per_plane;
    let per_die = if per_die > 0 {
        per_die
    } else {
        let usable = (geo.pages_per_block / chip.cell.bits_per_cell()).max(1) as u64;
        let payload = unit.saturating_sub(HEADER as u64).max(1);
        let body_blocks = snapshot_bytes.div_ceil(payload).div_ceil(usable);
        (2 * body_blocks + spare)
            .max(MIN_ROTATING as u64)
            .div_ceil(ndies as u64) as u32
    };
    let per_die = per_die.min(bpd);
    (0..per_die)
        .flat_map(|i| (0..ndies).map(move |d| d * bpd + i))
        .collect()
}
use header::{versioned, VERSION};
pub(crate) use header::{PageHeader, HEADER};
pub(crate) use steps::{Pending, Step};

/// Page kind of checkpoint pages in the OOB record.
pub(crate) const CP_KIND: MetaTag = MetaTag::new(1);
/// Page kind of padding pages (sealing an MLC block's exposed lower pages).
pub(crate) const PAD_KIND: MetaTag = MetaTag::new(2);
/// Page kind of log pages (trim-log entries appended after a checkpoint body). Volumes
/// written before this tag existed carry [`CP_KIND`] on log pages too; both are read, and
/// the page's own header says which it is.
pub(crate) const LOG_KIND: MetaTag = MetaTag::new(3);

/// Page kind of anchor pages (the current list of region blocks, see the module docs).
pub(crate) const ANCHOR_KIND: MetaTag = MetaTag::new(4);

/// What a metadata page kind holds: `"checkpoint"`, `"trim-log"`, `"pad"`, `"anchor"`, or `None` for a
/// tag no scheme writes. For tools that account for pages (the crash harness's per-class
/// cut counts).
pub fn meta_tag_name(tag: MetaTag) -> Option<&'static str> {
    match tag {
        CP_KIND => Some("checkpoint"),
        LOG_KIND => Some("trim-log"),
        PAD_KIND => Some("pad"),
        ANCHOR_KIND => Some("anchor"),
        _ => None,
    }
}

/// A region block is swapped for the least-worn free block of its die once it has been
/// erased this many times more.
pub(crate) const ROTATE_SPREAD: u32 = 4;
/// The newest anchor record is rewritten (same list, next sequence number) by the first
/// generation written this long after it (one simulated day), and by the first after a
/// mount: see the module docs, "Anchor refresh".
pub(crate) const ANCHOR_REFRESH: Nanos = Nanos(24 * 3600 * 1_000_000_000);
/// Idle time probes the committed generation at most this often (one simulated hour): see
/// the module docs, "Idle-time scrub".
pub(crate) const PROBE_EVERY: Nanos = Nanos(3600 * 1_000_000_000);
/// Fewest configured region blocks for rotation (two anchors, at least four rotating);
/// the automatic region sizes never go below it: a region that cannot rotate is erased at
/// every checkpoint while the data blocks share the writes, so it wears out first (a
/// 4-block region reached 3,486 erases — past `tiny-mlc-sp`'s 3,000 — while the data
/// blocks averaged 156, and the volume ran out of space).
pub(crate) const MIN_ROTATING: usize = 6;
/// The committed generation and where its log continues.
#[derive(Debug, Clone, Default)]
pub(crate) struct CpState {
    /// Generation number (0: none yet).
    pub gen: u64,
    /// Region blocks holding this generation, in page order.
    pub blocks: Vec<u32>,
    /// Pages used in the last of `blocks` (region page slots).
    pub used: u32,
    /// Pages of the generation so far (body and log).
    pub pages: u32,
    /// Body pages.
    pub body_pages: u32,
}

/// The checkpoint region of a chip (see the module docs).
pub(crate) struct Region<S: Storage, M: ErrorModel> {
    /// Region blocks in use order (interleaved over dies).
    pub blocks: Vec<u32>,
    /// The two anchor blocks (empty: a fixed region).
    pub anchors: Vec<u32>,
    /// Sequence number of the newest anchor record.
    anchor_seq: u64,
    /// The anchor block the next record goes to, and its next slot (`None`: the block not
    /// holding the newest record, erased before its first record).
    anchor_at: Option<(usize, u32)>,
    /// The anchor block holding the newest record.
    anchor_newest: usize,
    /// When this mount wrote the newest anchor record (`None`: before it — its age is
    /// unknown).
    anchor_written: Option<Nanos>,
    /// How units are programmed and read.
    pub writer: Box<dyn MetaWriter<S, M>>,
    /// The committed generation.
    pub cp: CpState,
    /// A generation being written in steps.
    pub pending: Option<Pending>,
    /// The highest generation number written or seen on the chip (the next is above it).
    max_gen: u64,
    /// The last `load` found checkpoint pages (whether or not a generation was complete).
    pub seen: bool,
    /// When [`scrub_due`](Self::scrub_due) last read the committed generation, or when
    /// this mount wrote it (`None`: loaded at mount, not probed yet).
    probed: Option<Nanos>,
}

impl<S: Storage, M: ErrorModel> core::fmt::Debug for Region<S, M> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Region")
            .field("blocks", &self.blocks)
            .field("writer", &self.writer.name())
            .field("cp", &self.cp)
            .field("pending", &self.pending)
            .finish()
    }
}

impl<S: Storage, M: ErrorModel> Region<S, M> {
    /// The region of `blocks` (flat indices, in use order) with `writer`: the first two are
    /// the anchor if there are at least six (see the module docs).
    pub fn new(mut blocks: Vec<u32>, writer: Box<dyn MetaWriter<S, M>>) -> Self {
        let anchors = if blocks.len() >= MIN_ROTATING {
            blocks.drain(..2).collect()
        } else {
            Vec::new()
        };
        Region {
            blocks,
            anchors,
            anchor_seq: 0,
            anchor_at: None,
            anchor_newest: 1,
            anchor_written: None,
            writer,
            cp: CpState::default(),
            pending: None,
            max_gen: 0,
            seen: false,
            probed: None,
        }
    }

    /// The idle-time probe (see the module docs, "Idle-time scrub"): at most once per
    /// [`PROBE_EVERY`] (counted from the generation's write, too), reads the committed
    /// generation's first body page (its oldest; charged) and says whether the generation
    /// should be rewritten — the page did not decode, or needed half of what its code
    /// corrects (corrected bits at least `t / 2` per codeword on average).
    pub fn scrub_due(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<bool, FtlError> {
        if self.cp.gen == 0
            || self.cp.blocks.is_empty()
            || self
                .probed
                .is_some_and(|t| now.0.saturating_sub(t.0) < PROBE_EVERY.0)
        {
            return Ok(false);
        }
        self.probed = Some(now);
        let mut page = vec![0u8; self.writer.unit_bytes(sub)];
        let b = self.cp.blocks[0];
        let unit = self.writer.read(sub, now, b, 0, &mut page, Cause::Meta)?;
        let codewords = page.len().div_ceil(sub.ctl.config().sector_size) as u32;
        Ok(match unit {
            Unit::Record(rec) => 2 * sub.meta_corrected >= rec.t as u32 * codewords,
            Unit::Unreadable | Unit::Erased => true,
        })
    }

    /// Body pages of the committed generation (0 before the first).
    pub fn body_pages(&self) -> u32 {
        self.cp.body_pages
    }

    /// Keeps the region fixed where an anchor record would not fit one unit (a region of
    /// more blocks than a page can list): the anchors become region blocks like the others.
    pub fn fit_anchor(&mut self, sub: &Substrate<S, M>) {
        if !self.anchors.is_empty() && 24 + 4 * self.blocks.len() > self.writer.unit_bytes(sub) {
            self.make_fixed();
        }
    }

    /// The region's blocks (anchors and rotating ones) are distinct and in state `Region`
    /// (or `Bad`), and no other block is `Region`.
    pub fn verify(&self, sub: &Substrate<S, M>) -> Result<(), String> {
        let mut member = vec![false; sub.state.len()];
        for b in self.all_blocks() {
            let i = b as usize;
            if i >= member.len() || member[i] {
                return Err(format!("region block {b} out of range or listed twice"));
            }
            member[i] = true;
            if !matches!(sub.state[i], BState::Region | BState::Bad) {
                return Err(format!("region block {b} is {:?}", sub.state[i]));
            }
        }
        if let Some(i) = (0..member.len()).find(|&i| sub.state[i] == BState::Region && !member[i]) {
            return Err(format!("block {i} is Region but not in the region"));
        }
        if let Some(p) = &self.pending {
            if let Some(b) = p.blocks.iter().find(|b| self.cp.blocks.contains(b)) {
                return Err(format!(
                    "region block {b} holds both the committed generation and the one being written"
                ));
            }
            if let Some(b) = p
                .blocks
                .iter()
                .find(|&&b| !member.get(b as usize).copied().unwrap_or(false))
            {
                return Err(format!(
                    "the generation being written uses block {b}, not a region block"
                ));
            }
            if p.index >= p.body_pages || p.gen <= self.cp.gen || p.gen > self.max_gen {
                return Err(format!(
                    "the generation being written is inconsistent: {p:?} beside committed generation {}",
                    self.cp.gen
                ));
            }
        }
        Ok(())
    }

    /// Every block the region holds: the anchors and the rotating blocks.
    pub fn all_blocks(&self) -> impl Iterator<Item = u32> + '_ {
        self.anchors.iter().chain(self.blocks.iter()).copied()
    }

    /// Bytes a new generation can hold: the blocks it may use (not the committed
    /// generation's, not bad ones) less one kept for a block that goes bad mid-write.
    pub fn capacity(&self, sub: &Substrate<S, M>) -> usize {
        let blocks = self.order(sub).len().saturating_sub(1);
        blocks * self.writer.slots() as usize * self.payload(sub)
    }

    /// Payload bytes of a region unit.
    pub fn payload(&self, sub: &Substrate<S, M>) -> usize {
        self.writer.unit_bytes(sub) - HEADER
    }

    /// Region blocks in the order a new generation uses them: after the committed
    /// generation's last block, skipping its blocks, a stepped generation's and bad ones.
    fn order(&self, sub: &Substrate<S, M>) -> Vec<u32> {
        let stepped = self.pending.as_ref().map_or(&[][..], |p| &p.blocks[..]);
        self.order_without(sub, stepped)
    }

    /// [`order`](Self::order) skipping `also` too.
    fn order_without(&self, sub: &Substrate<S, M>, also: &[u32]) -> Vec<u32> {
        let n = self.blocks.len();
        let start = self
            .cp
            .blocks
            .last()
            .and_then(|b| self.blocks.iter().position(|r| r == b))
            .map_or(0, |i| i + 1);
        (0..n)
            .map(|k| self.blocks[(start + k) % n])
            .filter(|b| {
                !self.cp.blocks.contains(b)
                    && !also.contains(b)
                    && sub.state[*b as usize] == BState::Region
            })
            .collect()
    }

    /// Programs one region unit at slot `slot` of block `b`. `Ok(false)`: the program
    /// failed and the block is retired.
    fn program(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
        slot: u32,
        page: &[u8],
        h: &PageHeader,
    ) -> Result<bool, FtlError> {
        let kind = if h.log { LOG_KIND } else { CP_KIND };
        let log_bytes = h.log || h.trailer;
        let rec = OobRecord::new(h.gen, h.index as u64, PageKind::Meta(kind));
        let ok = self.writer.program(sub, now, b, slot, page, rec)?;
        if ok {
            let c = &mut sub.log.counters;
            c.meta_bytes += page.len() as u64;
            if log_bytes {
                c.meta_bytes_by_kind.log += page.len() as u64;
            } else {
                c.meta_bytes_by_kind.checkpoint += page.len() as u64;
            }
        }
        Ok(ok)
    }

    /// Swaps the block the next generation opens first now, if it is due to swap (see
    /// "Rotation" in the module docs): a stepped generation never swaps, so a scheme whose
    /// checkpoints go in steps calls this where whole operations are allowed — a flush and
    /// idle time. At most a free block's erase, an anchor record (its block's erase and its
    /// program) and the worn block's erase. `Ok(true)`: a swap was made.
    pub fn rotate_ahead(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
    ) -> Result<bool, FtlError> {
        let Some(&b) = self.order(sub).first() else {
            return Ok(false);
        };
        Ok(self.rotate(sub, now, b)? != b)
    }

    /// The next generation number: above the committed one and every one written or seen.
    fn next_gen(&mut self) -> u64 {
        self.max_gen = self.max_gen.max(self.cp.gen) + 1;
        self.max_gen
    }

    /// Writes `bytes` as a new generation (its log starts empty) and commits it.
    pub fn write_generation(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        bytes: &[u8],
    ) -> Result<(), FtlError> {
        // A generation being written in steps is abandoned (never loaded: its number is
        // not reused).
        self.pending = None;
        if self.anchor_due(now) {
            // Not written (an anchor block gone bad): the next generation tries again.
            self.write_anchor(sub, now)?;
        }
        let payload = self.payload(sub);
        let body_pages = bytes.len().div_ceil(payload) as u32;
        let gen = self.next_gen();
        let slots = self.writer.slots();
        let mut order = self.order(sub).into_iter();
        let mut blocks: Vec<u32> = Vec::new();
        let mut used = slots; // forces a block on the first page
        let mut page = vec![0u8; self.writer.unit_bytes(sub)];
        let mut index = 0u32;
        while index < body_pages {
            if used == slots {
                let Some(b) = order.next() else {
                    // Too many region blocks went bad for another generation.
                    return Err(FtlError::NoSpace);
                };
                let b = self.rotate(sub, now, b)?;
                if !sub.erase_block(now, b, Cause::Meta)? {
                    continue;
                }
                blocks.push(b);
                used = 0;
            }
            let chunk =
                &bytes[index as usize * payload..((index as usize + 1) * payload).min(bytes.len())];
            let h = PageHeader {
                log: false,
                trailer: false,
                gen,
                index,
                body_pages,
                len: chunk.len() as u32,
            };
            page.fill(0);
            h.write(&mut page);
            page[HEADER..HEADER + chunk.len()].copy_from_slice(chunk);
            let b = *blocks.last().expect("a block is open");
            if self.program(sub, now, b, used, &page, &h)? {
                used += 1;
                index += 1;
            } else {
                // Retired mid-write: continue in the next region block.
                used = slots;
            }
        }
        self.cp = CpState {
            gen,
            blocks,
            used,
            pages: body_pages,
            body_pages,
        };
        self.probed = Some(now);
        Ok(())
    }

    /// Appends `entries` (whole entries of `entry` bytes each) to the committed
    /// generation's log. `Ok(false)`: the region has no room left for the log beside a
    /// whole new generation — the caller writes a new generation instead (entries appended
    /// before that are harmless: the new generation supersedes them).
    pub fn append_log(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        entries: &[u8],
        entry: usize,
    ) -> Result<bool, FtlError> {
        let per_page = self.payload(sub) / entry * entry;
        let slots = self.writer.slots();
        let mut page = vec![0u8; self.writer.unit_bytes(sub)];
        let mut done = 0;
        while done < entries.len() {
            if self.cp.used == slots {
                // Grow the log only while a whole new generation (or the rest of the one
                // being written in steps) still fits beside it.
                let order = self.order(sub);
                let body_blocks = match &self.pending {
                    Some(p) => self.blocks_still_needed(p),
                    None => self.cp.body_pages.div_ceil(slots) as usize,
                };
                if order.len() <= body_blocks {
                    return Ok(false);
                }
                let b = self.rotate(sub, now, order[0])?;
                if !sub.erase_block(now, b, Cause::Meta)? {
                    continue;
                }
                self.cp.blocks.push(b);
                self.cp.used = 0;
            }
            let n = per_page.min(entries.len() - done);
            let h = PageHeader {
                log: true,
                trailer: false,
                gen: self.cp.gen,
                index: self.cp.pages,
                body_pages: self.cp.body_pages,
                len: n as u32,
            };
            page.fill(0);
            h.write(&mut page);
            page[HEADER..HEADER + n].copy_from_slice(&entries[done..done + n]);
            let b = *self.cp.blocks.last().expect("generation has a block");
            if self.program(sub, now, b, self.cp.used, &page, &h)? {
                self.cp.used += 1;
                self.cp.pages += 1;
                done += n;
            } else {
                self.cp.used = slots;
            }
        }
        Ok(true)
    }

    /// [`load`](Region::load) for a scheme whose snapshot names its format version:
    /// `version_of` reads it from a whole body (`None`: not a snapshot of this scheme). A
    /// generation of a version above `newest` stops the mount with
    /// [`FtlError::UnknownFormat`] naming `what`, rather than falling back to an older
    /// generation, which would lose what the newer one holds.
    pub fn load_versioned<T>(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        (what, newest): (&'static str, u8),
        version_of: impl Fn(&[u8]) -> Option<u8>,
        mut accept: impl FnMut(&[u8]) -> Option<T>,
    ) -> Result<Option<(T, Vec<u8>)>, FtlError> {
        let mut unknown = None;
        let loaded = self.load(sub, now, |body| match version_of(body) {
            _ if unknown.is_some() => None,
            Some(v) if v > newest => {
                unknown = Some(v);
                None
            }
            _ => accept(body),
        })?;
        match unknown {
            Some(v) => Err(FtlError::UnknownFormat {
                what,
                version: v as u32,
                newest: newest as u32,
            }),
            None => Ok(loaded),
        }
    }

    /// Reads the newest complete generation that `accept` takes (it parses the body and
    /// checks it): the parsed body and the log's bytes. Positions the log after its last
    /// valid page. `None` if the region holds no such generation.
    pub fn load<T>(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        mut accept: impl FnMut(&[u8]) -> Option<T>,
    ) -> Result<Option<(T, Vec<u8>)>, FtlError> {
        if !self.anchors.is_empty() {
            self.load_anchor(sub, now)?;
        }
        let mut page = vec![0u8; self.writer.unit_bytes(sub)];
        // The first page of every region block: which generation and page it starts with.
        let mut starts: Vec<(u64, u32, u32)> = Vec::new();
        for i in 0..self.blocks.len() {
            let b = self.blocks[i];
            if sub.state[b as usize] == BState::Bad {
                continue;
            }
            if let Some(h) = self.read_page(sub, now, b, 0, &mut page)? {
                starts.push((h.gen, h.index, b));
            }
        }
        self.seen = !starts.is_empty();
        let mut gens: Vec<u64> = starts.iter().map(|s| s.0).collect();
        gens.sort_unstable_by(|a, b| b.cmp(a));
        gens.dedup();
        // Numbers of generations found (complete or not) are never written again.
        self.max_gen = self.max_gen.max(gens.first().copied().unwrap_or(0));
        self.pending = None;
        let slots = self.writer.slots();
        for gen in gens {
            let g = self.read_generation(sub, now, gen, &starts, &mut page)?;
            let (body, log, expect, body_pages, last, order) =
                (g.body, g.log, g.pages, g.body_pages, g.last, g.order);
            let Some(bp) = body_pages else { continue };
            if expect < bp {
                continue;
            }
            let Some(parsed) = accept(&body) else {
                continue;
            };
            let used_blocks: Vec<u32> = order
                .iter()
                .copied()
                .take(order.iter().position(|&b| b == last.0).map_or(0, |i| i + 1))
                .collect();
            // The log continues in a fresh block: the slot after the last valid page may
            // hold a torn program that reads as erased.
            self.cp = CpState {
                gen,
                blocks: used_blocks,
                used: slots,
                pages: expect,
                body_pages: bp,
            };
            return Ok(Some((parsed, log)));
        }
        Ok(None)
    }

    /// Reads generation `gen` from the blocks whose first unit belongs to it (`starts`:
    /// generation, first unit index, block), in unit order, up to the first unit missing or
    /// out of place.
    fn read_generation(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        gen: u64,
        starts: &[(u64, u32, u32)],
        page: &mut [u8],
    ) -> Result<GenRead, FtlError> {
        let slots = self.writer.slots();
        let mut blocks: Vec<(u32, u32)> = starts
            .iter()
            .filter(|s| s.0 == gen)
            .map(|s| (s.1, s.2))
            .collect();
        blocks.sort_unstable();
        let mut body: Vec<u8> = Vec::new();
        let mut log: Vec<u8> = Vec::new();
        let mut expect = 0u32;
        let mut body_pages = None;
        let mut last = (0u32, 0u32);
        let mut order = Vec::new();
        'blocks: for &(first, b) in &blocks {
            if first != expect {
                break;
            }
            order.push(b);
            for slot in 0..slots {
                let Some(h) = self.read_page(sub, now, b, slot, page)? else {
                    break;
                };
                if h.gen != gen || h.index != expect {
                    break;
                }
                let bp = *body_pages.get_or_insert(h.body_pages);
                if h.body_pages != bp
                    || h.log != (h.index >= bp)
                    || (h.trailer && h.index + 1 != bp)
                {
                    break 'blocks;
                }
                let data = &page[HEADER..HEADER + h.len as usize];
                if h.log || h.trailer {
                    log.extend_from_slice(data);
                } else {
                    body.extend_from_slice(data);
                }
                expect += 1;
                last = (b, slot + 1);
            }
        }
        Ok(GenRead {
            body,
            log,
            pages: expect,
            body_pages,
            last,
            order,
        })
    }

    /// Reads region unit `slot` of block `b`; its header if it is a valid checkpoint unit.
    fn read_page(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
        slot: u32,
        page: &mut [u8],
    ) -> Result<Option<PageHeader>, FtlError> {
        let Some(rec) = self
            .writer
            .read(sub, now, b, slot, page, Cause::Mount)?
            .record()
        else {
            return Ok(None);
        };
        if rec.kind != PageKind::Meta(CP_KIND) && rec.kind != PageKind::Meta(LOG_KIND) {
            return Ok(None);
        }
        Ok(PageHeader::read(page)?.filter(|h| {
            h.gen == rec.lpn
                && h.index as u64 == rec.seq
                && (rec.kind == PageKind::Meta(CP_KIND) || h.log)
        }))
    }
}

/// What `Region::read_generation` read of one generation.
struct GenRead {
    /// Its body's bytes, and its log's (log and trailer units).
    body: Vec<u8>,
    log: Vec<u8>,
    /// Units read in order.
    pages: u32,
    /// The body's units, as the first unit's header says (`None`: no unit read).
    body_pages: Option<u32>,
    /// The block and the slot after the last unit read.
    last: (u32, u32),
    /// Its blocks, in unit order.
    order: Vec<u32>,
}
