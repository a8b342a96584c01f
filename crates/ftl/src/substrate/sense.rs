//! The one charged read path: every data-page read a kernel issues (host reads, GC and
//! merge copies, scans of records at mount and on demand) goes through
//! [`Substrate::sense`], which issues it when its die is free, keeps the die busy for its
//! chip time, logs it with its decode time, and classifies what came back.
//!
//! A read that finds an erased page or a page that does not decode happened all the same:
//! it is charged like one that decoded (no free oracles). What a kernel does with the
//! outcome (retry, read feedback to the ECC policy, a replica, a lost page) stays its own.
//!
//! Region and map units are read through the metadata writers (`meta`), which sense
//! units rather than pages.

use super::Substrate;
use crate::{Cause, FtlError, OpKind};
use controller::{CtlError, PageRead, ReadInfo};
use nand::{ErrorModel, Nanos, Storage};

/// How much of a page a read takes.
pub(crate) enum Sense<'a> {
    /// The spare area only: the record (a scan).
    Record,
    /// The whole page into the buffer.
    Page(&'a mut [u8]),
    /// The whole page, kept in the controller for a copy program (GC, merges).
    Relocate,
    /// A metadata unit filling a whole page's data area into the buffer.
    Meta(&'a mut [u8]),
    /// Subpage `part` of the page (a subpage-programmed metadata unit) into the buffer.
    Subpage(u32, &'a mut [u8]),
}

/// What a read found.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Sensed {
    /// The page decoded (its record, bits corrected, timing, and the data where asked).
    Data(ReadInfo),
    /// Erased.
    Erased,
    /// Programmed but not decodable (torn, scrambled, worn).
    Failed,
}

impl<S: Storage, M: ErrorModel> Substrate<S, M> {
    /// One charged read of flat page `phys`, issued when its die is free and logged with
    /// `cause`; returns what it found and the operation's index in the batch (for an
    /// operation that must follow it, like a copy's program).
    #[inline]
    pub fn sense(
        &mut self,
        now: Nanos,
        phys: u32,
        how: Sense<'_>,
        cause: Cause,
    ) -> Result<(Sensed, u32), FtlError> {
        let addr = self.phys_addr(phys);
        let b = self.block_of(phys);
        let die = self.die_of(b);
        let at = self.op_time(die, now);
        let r = match how {
            Sense::Record => self.ctl.read_record(at, addr),
            Sense::Page(buf) => self.ctl.read(at, addr, buf),
            Sense::Relocate => self.ctl.read_for_relocation(at, addr),
            Sense::Meta(buf) => self.ctl.read_meta(at, addr, buf),
            Sense::Subpage(part, buf) => self.ctl.read_subpage(at, addr, part, buf),
        };
        let (found, timing, ecc) = match r {
            Ok(PageRead::Data(info)) => (Sensed::Data(info), info.timing, info.ecc),
            Ok(PageRead::Erased { timing }) => (Sensed::Erased, timing, Nanos::ZERO),
            Err(CtlError::Uncorrectable { timing, ecc, .. }) => (Sensed::Failed, timing, ecc),
            Err(e) => return Err(e.into()),
        };
        self.occupy(die, at, timing);
        let op = self.push_op(b, OpKind::Read, cause, timing, ecc, None);
        Ok((found, op))
    }

    /// [`sense`](Self::sense) of page `page` of block `b`.
    #[inline]
    pub fn sense_in(
        &mut self,
        now: Nanos,
        b: u32,
        page: u32,
        how: Sense<'_>,
        cause: Cause,
    ) -> Result<(Sensed, u32), FtlError> {
        debug_assert!(page < self.ppb, "page {page} of block {b}");
        self.sense(now, b * self.ppb + page, how, cause)
    }
}
