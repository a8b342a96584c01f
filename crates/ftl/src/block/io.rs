//! The block-level kernel's operations: the charged read and program paths, host reads,
//! writes and trims, allocation from the lists, checkpoints and sealing. Merges and wear
//! levelling are in `merge`, the on-demand scan after a mount in `resolve`.

use super::{rec, Blk, BlockFtl, Lists, Role, Use, NONE, ROFF_TOMB};
use crate::bounded::Cap;
use crate::substrate::region::PAD_KIND;
use crate::substrate::{Payload, Prog, Sense, Sensed};
use crate::{Cause, FtlError};
use alloc::vec;
use controller::{DataClass, PageKind};
use nand::{ErrorModel, Lpn, Nanos, Storage};

/// Blocks a full device frees by merging before it writes the checkpoint that returns them
/// to the lists.
const ROOM_BATCH: u32 = 8;

/// Where a merge takes an offset's data from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Src<'a> {
    /// A page on the chip (flat index).
    Page(u32),
    /// The host page being written.
    Host(&'a [u8], DataClass),
}

impl<S: Storage, M: ErrorModel> BlockFtl<S, M> {
    pub(crate) fn multi(&self) -> bool {
        self.s.window > 0
    }

    // ----- programs and reads ------------------------------------------------------------

    /// Programs page `page` of block `b` with a record naming `lpn_field` (packed logical
    /// page and flags) — every program of the kernel.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn program(
        &mut self,
        now: Nanos,
        b: u32,
        page: u32,
        payload: Payload<'_>,
        lpn_field: u64,
        kind: PageKind,
        cause: Cause,
        after: Option<u32>,
    ) -> Result<Prog, FtlError> {
        let r = self
            .s
            .program_kept(now, b, page, payload, lpn_field, kind, cause, after)?;
        if r != Prog::Bad {
            // A refused page (torn after a crash) is skipped and remembered.
            if r == Prog::Conflict {
                self.torn.insert(b * self.ppb() + page);
            }
            self.blk[b as usize].next = (page + 1) as u16;
        }
        if r == Prog::Done && self.multi() && self.touched.last() != Some(&b) {
            self.touched.push(b);
        }
        Ok(r)
    }

    /// Programs a padding page (holds nothing) at page `page` of block `b`.
    pub(crate) fn pad(&mut self, now: Nanos, b: u32, page: u32) -> Result<Prog, FtlError> {
        let zeros = core::mem::take(&mut self.zeros);
        let r = self.program(
            now,
            b,
            page,
            Payload::Data(&zeros),
            u64::MAX,
            PageKind::Meta(PAD_KIND),
            Cause::Meta,
            None,
        );
        self.zeros = zeros;
        let r = r?;
        if r == Prog::Done {
            self.s.counters_mut().pad_pages += 1;
        }
        Ok(r)
    }

    /// Pads block `b` from its write pointer up to (not including) page `to` (multi-level
    /// blocks fill without gaps). Anything but `Done` stops.
    pub(crate) fn pad_to(&mut self, now: Nanos, b: u32, to: u32) -> Result<Prog, FtlError> {
        while (self.blk[b as usize].next as u32) < to {
            let page = self.blk[b as usize].next as u32;
            match self.pad(now, b, page)? {
                Prog::Done | Prog::Conflict => {}
                Prog::Bad => return Ok(Prog::Bad),
            }
        }
        Ok(Prog::Done)
    }

    /// Reads flat page `phys` for the host into `data`: `Some(record)` if it holds data of
    /// logical page `want` (zeros are left in `data` otherwise).
    fn read_data(
        &mut self,
        now: Nanos,
        phys: u32,
        want: Lpn,
        data: &mut [u8],
    ) -> Result<bool, FtlError> {
        let (b, page) = self.s.split(phys);
        match self
            .s
            .sense_in(now, b, page, Sense::Page(data), Cause::Host)?
            .0
        {
            Sensed::Data(info) => {
                let r = info.record;
                Ok(r.kind.data_class().is_some()
                    && r.lpn & rec::TOMB == 0
                    && r.lpn & rec::LPN == want.get())
            }
            Sensed::Erased => Ok(false),
            Sensed::Failed => Err(FtlError::Unreadable(want)),
        }
    }

    /// The page holding offset `o` of logical block `x` (resolved blocks): the
    /// replacement's newest copy, else the primary's page; `None` if trimmed or never
    /// written.
    pub(crate) fn where_is(&self, x: u32, o: u32) -> Option<u32> {
        let e = self.map[x as usize];
        let ppb = self.ppb();
        if e.r != NONE {
            let v = self.roff.get(&e.r).map_or(0, |t| t[o as usize]);
            if v & ROFF_TOMB != 0 {
                return None;
            }
            if v != 0 {
                return Some(e.r * ppb + (v as u32 - 1));
            }
        }
        if e.p != NONE && o < self.blk[e.p as usize].next as u32 {
            let phys = e.p * ppb + o;
            if !self.torn.contains(&phys) {
                return Some(phys);
            }
        }
        None
    }

    // ----- host operations -------------------------------------------------------------

    pub(crate) fn host_read(
        &mut self,
        now: Nanos,
        x: u32,
        o: u32,
        lpn: Lpn,
        data: &mut [u8],
    ) -> Result<(), FtlError> {
        let e = self.map[x as usize];
        for b in [e.p, e.r] {
            if b != NONE {
                self.resolve(now, b)?;
            }
        }
        if let Some(phys) = self.where_is(x, o) {
            if self.read_data(now, phys, lpn, data)? {
                return Ok(());
            }
        }
        self.s.counters_mut().unmapped_reads += 1;
        data.fill(0);
        Ok(())
    }

    pub(crate) fn host_trim(&mut self, now: Nanos, x: u32, o: u32) -> Result<(), FtlError> {
        self.maybe_checkpoint(now)?;
        let e = self.map[x as usize];
        if e.p == NONE {
            return Ok(());
        }
        for b in [e.p, e.r] {
            if b != NONE {
                self.resolve(now, b)?;
            }
        }
        if self.where_is(x, o).is_none() {
            return Ok(());
        }
        self.s.counters_mut().trimmed_pages += 1;
        self.append(now, x, o, None)?;
        self.maybe_wear_level(now)
    }

    /// A host write of offset `o` of logical block `x`.
    pub(crate) fn host_write(
        &mut self,
        now: Nanos,
        x: u32,
        o: u32,
        d: &[u8],
        hint: DataClass,
    ) -> Result<(), FtlError> {
        self.maybe_checkpoint(now)?;
        if self.map[x as usize].p == NONE {
            let b = self.alloc(now, Use::Fresh)?.ok_or(FtlError::NoSpace)?;
            self.blk[b as usize].role = Role::Primary;
            self.blk[b as usize].lbn = x;
            self.map[x as usize].p = b;
        }
        let e = self.map[x as usize];
        for b in [e.p, e.r] {
            if b != NONE {
                self.resolve(now, b)?;
            }
        }
        if !self.write_primary(now, x, o, d, hint)? {
            self.append(now, x, o, Some((d, hint)))?;
        }
        self.maybe_wear_level(now)
    }

    /// Writes offset `o` into the primary if the chip lets it (see the module docs).
    /// `false`: it goes to the replacement.
    fn write_primary(
        &mut self,
        now: Nanos,
        x: u32,
        o: u32,
        d: &[u8],
        hint: DataClass,
    ) -> Result<bool, FtlError> {
        let e = self.map[x as usize];
        let p = e.p;
        let next = self.blk[p as usize].next as u32;
        // The replacement's copy (or tombstone) of `o`, if any, is newer than anything
        // the primary could hold: a write there would be shadowed.
        let in_repl = e.r != NONE && self.roff.get(&e.r).is_some_and(|t| t[o as usize] != 0);
        // On a multi-level chip the primary fills without gaps: at most the pairing
        // window of pages is padded — except in a fresh primary, which always takes its
        // first write (an allocated block is programmed before the next allocation: DCR
        // stops each list at its first empty block).
        if o < next || in_repl || self.multi() && next > 0 && o - next > self.s.window {
            return Ok(false);
        }
        if self.multi() {
            if self.pad_to(now, p, o)? == Prog::Bad {
                self.merge(now, x, Some((o, Some(Src::Host(d, hint)))))?;
                return Ok(true);
            }
            if (self.blk[p as usize].next as u32) != o {
                return Ok(false);
            }
        }
        let lpn = (x * self.ppb() + o) as u64;
        match self.program(
            now,
            p,
            o,
            Payload::Data(d),
            lpn,
            PageKind::User(hint),
            Cause::Host,
            None,
        )? {
            Prog::Done => Ok(true),
            Prog::Conflict => Ok(false),
            Prog::Bad => {
                // The write lands with the merge that moves the data off the bad block.
                self.merge(now, x, Some((o, Some(Src::Host(d, hint)))))?;
                Ok(true)
            }
        }
    }

    /// Appends offset `o` (data, or a tombstone) to logical block `x`'s replacement,
    /// allocating one or merging a full one.
    fn append(
        &mut self,
        now: Nanos,
        x: u32,
        o: u32,
        data: Option<(&[u8], DataClass)>,
    ) -> Result<(), FtlError> {
        let ppb = self.ppb();
        for _ in 0..ppb + 2 {
            let mut r = self.map[x as usize].r;
            if r == NONE {
                let Some(b) = self.alloc(now, Use::Fresh)? else {
                    return Err(FtlError::NoSpace);
                };
                // Allocation may have merged other blocks; `x` is unchanged.
                self.blk[b as usize].role = Role::Replacement;
                self.blk[b as usize].lbn = x;
                self.map[x as usize].r = b;
                self.roff.insert(b, vec![0; ppb as usize]);
                r = b;
            }
            let page = self.blk[r as usize].next as u32;
            if page >= ppb {
                return self.merge(now, x, Some((o, self.src_of(data))));
            }
            let lpn = (x * ppb + o) as u64 | rec::REPL;
            let (payload_data, lpn, class) = match data {
                Some((d, c)) => (d, lpn, c),
                None => (&[][..], lpn | rec::TOMB, DataClass::NORMAL),
            };
            let zeros = core::mem::take(&mut self.zeros);
            let payload = if data.is_some() {
                payload_data
            } else {
                &zeros[..]
            };
            let r2 = self.program(
                now,
                r,
                page,
                Payload::Data(payload),
                lpn,
                PageKind::User(class),
                Cause::Host,
                None,
            );
            self.zeros = zeros;
            match r2? {
                Prog::Done => {
                    let tomb = if data.is_none() { ROFF_TOMB } else { 0 };
                    if let Some(t) = self.roff.get_mut(&r) {
                        t[o as usize] = (page + 1) as u16 | tomb;
                    }
                    return Ok(());
                }
                Prog::Conflict => continue,
                Prog::Bad => return self.merge(now, x, Some((o, self.src_of(data)))),
            }
        }
        Err(FtlError::NoSpace)
    }

    /// The merge source of a host page (`None`: a trim).
    fn src_of<'a>(&self, data: Option<(&'a [u8], DataClass)>) -> Option<Src<'a>> {
        data.map(|(d, c)| Src::Host(d, c))
    }

    // ----- allocation and checkpoints --------------------------------------------------

    /// The next block of the list `use_` takes from (see the module docs), erased; `None`
    /// for wear levelling when the hot list is used up. A fresh allocation keeps one block
    /// for a merge: with fewer, a checkpoint returns the blocks freed since the last one to
    /// the lists, and if that is not enough the logical block with the fullest replacement
    /// is merged first.
    pub(crate) fn alloc(&mut self, now: Nanos, use_: Use) -> Result<Option<u32>, FtlError> {
        let bound = self.blk.len() + 8;
        for _ in 0..bound {
            let l = &self.lists;
            let short = match use_ {
                // The regular list only, and two blocks left after it: one for a merge,
                // one more should that merge's block fail or its victims' erases.
                Use::Fresh => l.qi >= l.q.len() || l.left() < 3,
                Use::Merge => l.left() == 0,
                Use::Wl => false,
            };
            if short {
                // Room comes back at a checkpoint. Before writing one for a fresh block,
                // merge logical blocks (fullest replacement first) while the lists can
                // feed the merges, until a batch of blocks waits for it: one checkpoint
                // per batch rather than one per allocation on a full device.
                if use_ == Use::Fresh {
                    // Each merge ends a replacement: at most one per logical block.
                    let mut cap = Cap::new(self.lbns as u64 + 1, "merging for room ran past");
                    while self.freed_since_cp < ROOM_BATCH && self.lists.left() >= 2 {
                        cap.tick()?;
                        match self.fullest_replacement() {
                            Some(y) => self.merge(now, y, None)?,
                            None => break,
                        }
                    }
                }
                if self.allocs_since_cp > 0 || self.freed_since_cp > 0 {
                    self.write_checkpoint(now, false)?;
                    continue;
                }
                if use_ == Use::Merge {
                    return Err(FtlError::NoSpace);
                }
                match self.fullest_replacement() {
                    Some(y) => {
                        self.merge(now, y, None)?;
                        continue;
                    }
                    None => return Err(FtlError::NoSpace),
                }
            }
            let l = &mut self.lists;
            let b = match use_ {
                Use::Fresh => {
                    l.qi += 1;
                    l.q[l.qi - 1]
                }
                Use::Merge if l.qi < l.q.len() => {
                    l.qi += 1;
                    l.q[l.qi - 1]
                }
                Use::Merge => {
                    l.si += 1;
                    l.s[l.si - 1]
                }
                Use::Wl => {
                    if l.hi >= l.h.len() {
                        return Ok(None);
                    }
                    l.hi += 1;
                    l.h[l.hi - 1]
                }
            };
            if self.blk[b as usize].role != Role::Free {
                continue;
            }
            if self.blk[b as usize].needs_erase {
                if !self.s.erase_block(now, b, Cause::Gc)? {
                    self.set_bad(b);
                    continue;
                }
                self.clear_torn(b);
                self.erases_since_wl += 1;
            }
            self.allocs_since_cp += 1;
            self.blk[b as usize] = Blk {
                young: true,
                ..Blk::FREE
            };
            return Ok(Some(b));
        }
        Err(FtlError::NoSpace)
    }

    /// The logical block whose replacement holds the most pages (a scan of the map: on
    /// the allocation path only when the lists run dry).
    pub(crate) fn fullest_replacement(&self) -> Option<u32> {
        (0..self.lbns)
            .filter(|&y| self.map[y as usize].r != NONE)
            .max_by_key(|&y| self.blk[self.map[y as usize].r as usize].next)
    }

    /// A checkpoint when `checkpoint_interval` blocks were allocated since the last.
    pub(crate) fn maybe_checkpoint(&mut self, now: Nanos) -> Result<(), FtlError> {
        if self.allocs_since_cp >= self.cfg.checkpoint_interval {
            self.write_checkpoint(now, false)?;
        }
        Ok(())
    }

    /// Writes a checkpoint: dead blocks become free (needs-erase), nothing is young, the
    /// lists are derived anew. `clean`: a shutdown's (nothing follows it).
    pub(crate) fn write_checkpoint(&mut self, now: Nanos, clean: bool) -> Result<(), FtlError> {
        for k in self.blk.iter_mut() {
            if k.role == Role::Dead {
                *k = Blk {
                    needs_erase: true,
                    ..Blk::FREE
                };
            }
            k.young = false;
        }
        self.lists = Lists::derive(&self.blk, &self.s.erase, self.spare_len, self.hot_len);
        self.allocs_since_cp = 0;
        self.freed_since_cp = 0;
        let bytes = self.snapshot(clean).encode(self.s.controller().crc32c_fn());
        self.region.write_generation(&mut self.s, now, &bytes)?;
        self.s.counters_mut().checkpoints += 1;
        crate::debug_verify("checkpoint", || self.verify());
        Ok(())
    }

    /// Seals multi-level blocks programmed since the last flush: pads the upper partners
    /// of their lower pages below the write pointer.
    pub(crate) fn seal(&mut self, now: Nanos) -> Result<(), FtlError> {
        let touched = core::mem::take(&mut self.touched);
        for b in touched {
            self.seal_block(now, b)?;
        }
        Ok(())
    }

    /// Pads the upper partners of block `b`'s programmed lower pages at its write point.
    pub(crate) fn seal_block(&mut self, now: Nanos, b: u32) -> Result<(), FtlError> {
        let k = self.blk[b as usize];
        if !matches!(k.role, Role::Primary | Role::Replacement | Role::Dead) {
            return Ok(());
        }
        let next = k.next as u32;
        let from = next.saturating_sub(self.s.window);
        let target = (from..next)
            .map(|l| self.s.upper[l as usize])
            .filter(|&u| u != crate::substrate::NO_UPPER && u >= next)
            .max();
        if let Some(u) = target {
            if self.pad_to(now, b, u + 1)? == Prog::Bad && k.role != Role::Dead {
                self.merge(now, k.lbn, None)?;
            }
        }
        Ok(())
    }
}
