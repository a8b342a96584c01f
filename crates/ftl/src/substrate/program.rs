//! The one program path and the one erase path: every program of every kernel goes
//! through [`Substrate::program_page`] (the substrate's policy on a failure: retire the
//! block, close a resumed block that refuses a page) or [`Substrate::program_classified`]
//! (the same program and classification, [`Programmed`], for a kernel that decides
//! itself), and every erase through [`Substrate::erase_block`]; block headers are read by
//! [`Substrate::read_header`] (charged). Reads are `sense`.

use super::sense::{Sense, Sensed};
use super::{BState, Substrate};
use crate::policy::ProgramContext;
use crate::{Cause, FtlError, OpKind};
use controller::{CtlError, OobRecord};
use nand::{ErrorModel, NandError, Nanos, OpTiming, Storage};

/// What a program writes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Payload<'a> {
    /// Host data (a data page of the volume).
    Data(&'a [u8]),
    /// The page in the controller's page register, corrected, with its parity (a GC copy
    /// after `read_for_relocation`).
    Relocated,
    /// FTL metadata (checkpoint pages: SLC-mode region blocks).
    Meta(&'a [u8]),
    /// A metadata unit in one subpage of the page (the first field: an SP block's
    /// partition).
    Subpage(u32, &'a [u8]),
}

/// How a program ended: the one classification of the chip's answers.
#[derive(Debug)]
pub(crate) enum Programmed {
    /// Programmed and logged: its chip time and its operation's index in the batch.
    Done(OpTiming, u32),
    /// The program failed: the block has gone bad (its programmed pages stay readable).
    Failed,
    /// The page cannot take a program, and nothing was written: a block resumed after a
    /// crash whose next page was torn to all ones (it reads erased, so a scan stopped
    /// before it), or a full-page program that landed in an SP block (which then refuses
    /// every subpage program until its erase).
    Conflict(NandError),
}

/// How a program in a block its kernel keeps (a block-level kernel's block, a DFTL user
/// block) ended, as such a kernel acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prog {
    /// Programmed and logged.
    Done,
    /// The block cannot take this page (a torn page after a crash, which reads erased):
    /// nothing was written; the kernel skips the page.
    Conflict,
    /// The program failed; the block is bad (its programmed pages stay readable).
    Bad,
}

/// Program errors that mean the page cannot take a program (see [`Programmed::Conflict`]).
fn resume_conflict(e: &NandError) -> bool {
    matches!(
        e,
        NandError::NotErased(_)
            | NandError::OutOfOrder { .. }
            | NandError::LowerPageNotProgrammed { .. }
            | NandError::NeedsErase(_)
            | NandError::SubpageInFullPageBlock(_)
    )
}

impl<S: Storage, M: ErrorModel> Substrate<S, M> {
    /// Programs flat page `phys` with `payload` and record `rec` — the one program path of
    /// the FTL. `Ok(Some(t))`: programmed and logged (as operation index `op` in the
    /// batch, returned in the pair). `Ok(None)`: the program failed and the block was
    /// retired, or (after a crash) the block cannot take this page and was closed; the
    /// caller takes another page. Region blocks are never closed: a conflict there is an
    /// error.
    #[inline]
    pub fn program_page(
        &mut self,
        now: Nanos,
        phys: u32,
        payload: Payload<'_>,
        rec: OobRecord,
        cause: Cause,
        after: Option<u32>,
    ) -> Result<Option<(OpTiming, u32)>, FtlError> {
        let (b, p) = self.issue(now, phys, payload, None, rec, cause, after)?;
        self.settle(b, p)
    }

    /// Issues the program of flat page `phys` when its die is free, at strength `t` (`None`:
    /// the policy's), and classifies the chip's answer: what every program path shares.
    /// Returns the page's block beside the outcome.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn issue(
        &mut self,
        now: Nanos,
        phys: u32,
        payload: Payload<'_>,
        t: Option<u32>,
        rec: OobRecord,
        cause: Cause,
        after: Option<u32>,
    ) -> Result<(u32, Programmed), FtlError> {
        let addr = self.phys_addr(phys);
        let b = self.block_of(phys);
        let now = self.op_time(self.die_of(b), now);
        let t = t.unwrap_or_else(|| {
            let meta = matches!(payload, Payload::Meta(_) | Payload::Subpage(..));
            self.strength_for(phys, meta, now)
        });
        let r = self.program_at(now, addr, payload, t, rec);
        Ok((b, self.classify_program(now, b, r, cause, after)?))
    }

    /// The controller's program of `payload` at `addr` and strength `t`.
    #[inline]
    fn program_at(
        &mut self,
        now: Nanos,
        addr: nand::PhysAddr,
        payload: Payload<'_>,
        t: u32,
        rec: OobRecord,
    ) -> Result<OpTiming, CtlError> {
        match payload {
            Payload::Data(d) => self.ctl.program(now, addr, d, rec, t),
            // A fixed strength moves data with their parity; an adaptive one re-encodes
            // at the destination page's strength.
            Payload::Relocated if self.fixed_t.is_some() => {
                self.ctl.program_relocated(now, addr, rec)
            }
            Payload::Relocated => {
                if self.ctl.relocation_t() != Some(t) {
                    self.log.counters.ecc_policy.reencoded_copies += 1;
                }
                self.ctl.program_relocated_as(now, addr, rec, t)
            }
            Payload::Meta(d) => self.ctl.program_meta(now, addr, d, rec, t),
            Payload::Subpage(part, d) => self.ctl.program_subpage(now, addr, part, d, rec, t),
        }
    }

    /// Programs flat page `phys` with `payload` at strength `t`, issued when its die is
    /// free, and classifies the outcome, leaving what a failed or refused program means to
    /// the caller: for a kernel that manages its blocks outside the substrate's lifecycle
    /// (DFTL's partitions). A failed program counts a retry.
    #[allow(clippy::too_many_arguments)]
    pub fn program_classified(
        &mut self,
        now: Nanos,
        phys: u32,
        payload: Payload<'_>,
        t: u32,
        rec: OobRecord,
        cause: Cause,
        after: Option<u32>,
    ) -> Result<Programmed, FtlError> {
        Ok(self
            .issue(now, phys, payload, Some(t), rec, cause, after)?
            .1)
    }

    /// Programs page `page` of block `b`, a block its kernel keeps outside the substrate's
    /// lifecycle (the block-level kernels), with a record naming `field` (the kernel's
    /// packing of logical page and flags) at the policy's strength. A failed program marks
    /// the block `Bad` and counts it retired; a refused one changes nothing (the kernel
    /// skips the page).
    ///
    /// Requires: `b` is no checkpoint-region or map block (a refusal there is an error).
    #[allow(clippy::too_many_arguments)]
    pub fn program_kept(
        &mut self,
        now: Nanos,
        b: u32,
        page: u32,
        payload: Payload<'_>,
        field: u64,
        kind: controller::PageKind,
        cause: Cause,
        after: Option<u32>,
    ) -> Result<Prog, FtlError> {
        debug_assert!(
            !self.state[b as usize].reserved(),
            "block {b}: a kept program into a reserved block"
        );
        let phys = b * self.ppb + page;
        let rec = OobRecord::new(field, self.next_seq(), kind);
        Ok(
            match self.issue(now, phys, payload, None, rec, cause, after)?.1 {
                Programmed::Done(..) => Prog::Done,
                Programmed::Failed => {
                    self.log.counters.retired_blocks += 1;
                    self.set_state(b, BState::Bad);
                    Prog::Bad
                }
                Programmed::Conflict(_) => Prog::Conflict,
            },
        )
    }

    /// Programs subpage `part` of flat page `phys` (a checkpoint-region block in SP use)
    /// with metadata unit `unit`, at the policy's metadata strength. `Ok(false)`: the
    /// program failed and the block is retired.
    pub fn program_subpage_unit(
        &mut self,
        now: Nanos,
        phys: u32,
        part: u32,
        unit: &[u8],
        rec: OobRecord,
    ) -> Result<bool, FtlError> {
        let unit = Payload::Subpage(part, unit);
        let r = self.program_page(now, phys, unit, rec, Cause::Meta, None)?;
        Ok(r.is_some())
    }

    /// The strength of a program of flat page `phys` at `now` (the policy's; `meta`: a
    /// metadata unit), counted by strength.
    fn strength_for(&mut self, phys: u32, meta: bool, now: Nanos) -> u32 {
        let t = match self.fixed_t {
            Some(t) => t,
            None => {
                let (block, page) = self.split(phys);
                let ctx = ProgramContext {
                    block,
                    page,
                    phys,
                    erase_count: self.erase[block as usize],
                    meta,
                    now,
                };
                let t = self.ecc.t_for(&ctx);
                self.ctl.set_next_pecycles(ctx.erase_count);
                t
            }
        };
        self.log.counters.ecc_policy.programs_by_t[(t as usize).min(63)] += 1;
        t
    }

    /// The substrate's policy on program outcome `p` in block `b`: its timing and op,
    /// `None` if the chip failed it (the block retired) or a resumed data block cannot take
    /// it (closed), or the error (a refusal in a region or map block).
    fn settle(&mut self, b: u32, p: Programmed) -> Result<Option<(OpTiming, u32)>, FtlError> {
        match p {
            Programmed::Done(timing, op) => Ok(Some((timing, op))),
            Programmed::Failed => {
                self.retire(b);
                Ok(None)
            }
            Programmed::Conflict(e) if self.state[b as usize].reserved() => Err(e.into()),
            Programmed::Conflict(_) => {
                self.close_block(b);
                Ok(None)
            }
        }
    }

    /// What the controller's answer `r` to a program in block `b` issued at `now` means;
    /// a program that happened is logged and keeps its die busy.
    #[inline]
    fn classify_program(
        &mut self,
        now: Nanos,
        b: u32,
        r: Result<OpTiming, CtlError>,
        cause: Cause,
        after: Option<u32>,
    ) -> Result<Programmed, FtlError> {
        let die = self.die_of(b);
        match r {
            Ok(timing) => {
                self.occupy(die, now, timing);
                let op = self
                    .log
                    .push(die, OpKind::Program, cause, timing, Nanos::ZERO, after);
                Ok(Programmed::Done(timing, op))
            }
            Err(CtlError::Nand(NandError::ProgramFailed(_) | NandError::BadBlock(_))) => {
                self.log.counters.program_retries += 1;
                Ok(Programmed::Failed)
            }
            Err(CtlError::Nand(e)) if resume_conflict(&e) => Ok(Programmed::Conflict(e)),
            Err(e) => Err(e.into()),
        }
    }

    /// Erases block `b` — the one erase path of the FTL. `Ok(true)`: erased, logged and its
    /// erase count advanced. `Ok(false)`: the erase failed and the block is now bad.
    pub fn erase_block(&mut self, now: Nanos, b: u32, cause: Cause) -> Result<bool, FtlError> {
        let addr = self.block_addr(b);
        let die = self.die_of(b);
        let now = self.op_time(die, now);
        match self.ctl.erase(now, addr) {
            Ok(t) => {
                self.occupy(die, now, t);
                self.push_erase(b, cause, t);
                self.count_erase(b);
                if self.sp_blocks[b as usize]
                    || (self.sp_region && self.state[b as usize] == BState::Region)
                {
                    self.log.counters.sp_erases += 1;
                }
                if self.fixed_t.is_none() {
                    self.ecc.on_erase(b);
                }
                Ok(true)
            }
            // A block that went bad since the last checkpoint is found bad on use.
            Err(NandError::EraseFailed(_) | NandError::BadBlock(_)) => {
                self.set_state(b, BState::Bad);
                self.log.counters.retired_blocks += 1;
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Reads block `b`'s header — page 0's spare area — as a charged read logged with
    /// `cause`: what firmware learns from it ([`Header`]), not the write pointer (that is
    /// [`write_pointer`](Self::write_pointer)'s search).
    pub fn read_header(&mut self, now: Nanos, b: u32, cause: Cause) -> Result<Header, FtlError> {
        let (info, t) = self.ctl.read_block_header(now, self.block_addr(b))?;
        self.push_op(b, OpKind::Read, cause, t, Nanos::ZERO, None);
        Ok(Header::from(&info))
    }

    /// Where block `b`'s programmed pages end among the `slots` pages its mode programs
    /// (slot `i` is page `page_of(i)`, in program order: every page of a native block, the
    /// pages an SLC-mode block uses): one past the last slot that does not read erased,
    /// found as firmware finds it — from the top, each slot's record read (charged, with
    /// `cause`) until one is not erased: `slots − end + 1` reads, none when the header says
    /// the block holds nothing. Bisection would be cheaper but is not sound: programs go in
    /// ascending order but may skip pages (an RFTL primary's fixed offsets; a page a cut
    /// tore, which the kernel passes over after a mount).
    ///
    /// A page a cut tore to all ones reads erased, as it would to any controller: if it is
    /// the last, the end stops below it, and a later program there is refused by the chip
    /// (`Prog::Refused`) and passed over by the kernel.
    pub fn write_pointer(
        &mut self,
        now: Nanos,
        b: u32,
        header: &Header,
        slots: u32,
        page_of: impl Fn(u32) -> u32,
        cause: Cause,
    ) -> Result<u32, FtlError> {
        if !header.programmed {
            return Ok(0);
        }
        for slot in (0..slots).rev() {
            let page = b * self.ppb + page_of(slot);
            if !matches!(
                self.sense(now, page, Sense::Record, cause)?.0,
                Sensed::Erased
            ) {
                return Ok(slot + 1);
            }
        }
        Ok(0)
    }

    /// A format's first step on block `b`, the same in every kernel: its header read
    /// (charged), its erase count adopted, and, if it is good and holds data (or was left
    /// needing an erase), its erase. `Some(header)`: good and erased (the header tells the
    /// mode it was in); `None`: bad — factory or grown bad, or its erase failed (which
    /// already marked it `Bad`).
    pub fn format_block(&mut self, now: Nanos, b: u32) -> Result<Option<Header>, FtlError> {
        let info = self.read_header(now, b, Cause::Mount)?;
        self.adopt_erase_count(b, info.erase_count);
        let good = info.status == nand::BlockStatus::Good
            && (!info.holds_data() || self.erase_block(now, b, Cause::Mount)?);
        Ok(good.then_some(info))
    }
}

/// What firmware learns from a block's header, page 0's spare area: the bad-block marker,
/// the erase counter (an erase-counter header, as UBI keeps one), how the block is being
/// programmed (its mode and, for subpage use, its partition), whether it holds anything,
/// and whether an erase was cut short (the chip model flags it; its programmed pages were
/// partly erased, so they read as neither erased nor a record). Not where its written
/// pages end: that costs reads ([`Substrate::write_pointer`]).
///
/// "Holds anything" is page 0's state — programs go in order, so a block with a
/// programmed page has page 0 programmed — with one simplification: a page 0 a cut tore
/// to all ones, which the kernel passed over, still counts (the model reports the block
/// as programmed where a real controller would see an erased page 0; the kernels never
/// leave page 0 to be skipped otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Good, or factory or grown bad.
    pub status: nand::BlockStatus,
    /// P/E cycles so far.
    pub erase_count: u32,
    /// In SLC mode.
    pub slc_mode: bool,
    /// How it is being programmed since its erase.
    pub usage: nand::Usage,
    /// Some page is programmed since the erase (see the type's docs).
    pub programmed: bool,
    /// Caught in an interrupted erase.
    pub needs_erase: bool,
}

impl Header {
    /// The block holds data, or what an interrupted erase left: it must be erased before use.
    pub fn holds_data(&self) -> bool {
        self.programmed || self.needs_erase
    }
}

impl From<&nand::BlockInfo> for Header {
    fn from(i: &nand::BlockInfo) -> Self {
        Header {
            status: i.status,
            erase_count: i.erase_count,
            slc_mode: i.slc_mode,
            usage: i.usage,
            // Programs go in order: page 0 is programmed iff anything is (see above).
            programmed: i.next_page > 0,
            needs_erase: i.needs_erase,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::substrate::SubstrateConfig;
    use controller::{DataClass, PageKind};

    /// The write pointer is found by reading from the top, one charged read per slot down
    /// to the last programmed page, past a skipped page (programs go in ascending order
    /// but need not be contiguous); a block that holds nothing costs no read beyond its
    /// header.
    #[test]
    fn the_write_pointer_is_read_from_the_top_past_skipped_pages() {
        let mut ctl = crate::testkit::controller("tiny-slc", 1);
        let ppb = ctl.chip().geometry().pages_per_block;
        let zeros = alloc::vec![0u8; ctl.chip().geometry().page_size as usize];
        let block = 3u32;
        for page in [0u32, 1, 4] {
            // The substrate's flat block `b` is the geometry's `block_at(b)`.
            let addr = ctl.chip().geometry().block_at(block).unwrap();
            let addr = addr.page(page).unwrap();
            let record = OobRecord::new(
                page as u64,
                1 + page as u64,
                PageKind::User(DataClass::default()),
            );
            ctl.program(Nanos::ZERO, addr, &zeros, record, 1).unwrap();
        }
        let mut s = Substrate::block_level(ctl, SubstrateConfig::block_level(1));
        let reads = |s: &Substrate<_, _>| s.counters().reads.iter().sum::<u64>();
        let h = s.read_header(Nanos::ZERO, block, Cause::Mount).unwrap();
        assert!(h.programmed && h.holds_data() && !h.needs_erase);
        let before = reads(&s);
        let end = s
            .write_pointer(Nanos::ZERO, block, &h, ppb, |i| i, Cause::Mount)
            .unwrap();
        assert_eq!(end, 5, "past the skipped pages 2 and 3");
        // Pages ppb-1 down to 4: one read each.
        assert_eq!(reads(&s) - before, (ppb - 4) as u64);
        let empty = s.read_header(Nanos::ZERO, block + 1, Cause::Mount).unwrap();
        assert!(!empty.programmed);
        let before = reads(&s);
        let end = s
            .write_pointer(Nanos::ZERO, block + 1, &empty, ppb, |i| i, Cause::Mount)
            .unwrap();
        assert_eq!((end, reads(&s) - before), (0, 0));
    }
}
