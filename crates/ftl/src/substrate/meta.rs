//! Metadata writers: how a metadata stream's units reach flash.
//!
//! The checkpoint region ([`super::region`]) stores a scheme's byte stream as a sequence of
//! units, each with a header; a [`MetaWriter`] decides what a unit is and how it is
//! programmed and read back. [`WholePage`] (today's writer) programs a unit as the data area
//! of a whole page — in SLC mode on multi-level chips, so only the LSB pages of a region
//! block are used — protected like any page by the controller's BCH code and data CRC.
//! [`Subpage`] is SPFTL's (Ref. 001, §III.B): a unit is one subpage of such a page,
//! programmed alone — the block becomes an SP block using one subpage partition until its
//! next erase. The region's generations and log work over either unchanged.

use super::{Payload, Sense, Sensed, Substrate};
use crate::{Cause, FtlError};
use ::alloc::vec::Vec;
use controller::OobRecord;
use nand::{ErrorModel, Nanos, Storage};

/// How metadata units are programmed and read.
///
/// Contract: slots of a block are programmed in increasing order, each at most once between
/// two erases of the block (the region erases a block before its first slot); `program`
/// returns `Ok(false)` when the chip failed the program (the block is retired: the region
/// continues in another block) and an error for anything else; `read` returns the unit's
/// record and fills `unit` when the slot holds a unit that decodes ([`Unit::Record`]), says
/// whether a slot without one reads as erased or does not decode (a torn write, or one worn
/// past its code by retention), and charges what it reads to the op log.
pub(crate) trait MetaWriter<S: Storage, M: ErrorModel>: Send {
    /// Name in reports.
    fn name(&self) -> &'static str;
    /// Bytes of one unit.
    fn unit_bytes(&self, sub: &Substrate<S, M>) -> usize;
    /// Unit slots in one region block.
    fn slots(&self) -> u32;
    /// Programs `unit` (exactly `unit_bytes`) with record `rec` at slot `slot` of block `b`.
    #[allow(clippy::too_many_arguments)]
    fn program(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
        slot: u32,
        unit: &[u8],
        rec: OobRecord,
    ) -> Result<bool, FtlError>;
    /// Reads slot `slot` of block `b` into `unit`, charged to `cause` (a mount's reads,
    /// or a demand-paged map's misses).
    #[allow(clippy::too_many_arguments)]
    fn read(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
        slot: u32,
        unit: &mut [u8],
        cause: Cause,
    ) -> Result<Unit, FtlError>;
}

/// What a read of a metadata unit found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// A unit that decodes, with its OOB record (its bytes in the caller's buffer).
    Record(OobRecord),
    /// An erased slot: nothing was programmed there since the block's last erase.
    Erased,
    /// A programmed slot that does not decode, retries included.
    Unreadable,
}

impl Unit {
    /// The record of a unit that decodes; `None` for an erased or unreadable slot.
    pub fn record(self) -> Option<OobRecord> {
        match self {
            Unit::Record(r) => Some(r),
            Unit::Erased | Unit::Unreadable => None,
        }
    }
}

/// The writer `kind` names, for `sub`'s chip.
pub(crate) fn writer_for<S: Storage, M: ErrorModel>(
    kind: crate::policy::MetaWriterKind,
    sub: &Substrate<S, M>,
) -> ::alloc::boxed::Box<dyn MetaWriter<S, M>> {
    match kind {
        crate::policy::MetaWriterKind::WholePage => ::alloc::boxed::Box::new(WholePage::new(sub)),
        crate::policy::MetaWriterKind::Subpage => ::alloc::boxed::Box::new(Subpage {
            whole: WholePage::new(sub),
            parts: sub.geo.subpages_per_page.max(1),
            known: ::alloc::vec![false; sub.state.len()],
        }),
    }
}

/// Reads a region unit with `read` (a page or subpage read of block `b`), sensing a unit
/// that does not decode again (read-retry) before it counts as absent: a committed
/// checkpoint unit read once at a bad moment must not send mount back to an older
/// generation. A torn unit fails every time.
fn read_with_retries<S: Storage, M: ErrorModel>(
    sub: &mut Substrate<S, M>,
    now: Nanos,
    phys: u32,
    part: Option<u32>,
    unit: &mut [u8],
    cause: Cause,
) -> Result<Unit, FtlError> {
    let mut retries = sub.cfg.read_retries;
    loop {
        let how = match part {
            Some(p) => Sense::Subpage(p, &mut *unit),
            None => Sense::Meta(&mut *unit),
        };
        match sub.sense(now, phys, how, cause)?.0 {
            Sensed::Data(info) => {
                sub.meta_corrected = info.corrected;
                return Ok(Unit::Record(info.record));
            }
            Sensed::Erased => return Ok(Unit::Erased),
            Sensed::Failed => {
                if retries == 0 {
                    return Ok(Unit::Unreadable);
                }
                retries -= 1;
                sub.log.counters.read_retries += 1;
            }
        }
    }
}

/// Today's writer: a unit is a whole page's data area (LSB pages only on multi-level
/// chips, whose region blocks are in SLC mode).
#[derive(Debug, Clone)]
pub(crate) struct WholePage {
    /// Page indices programmable in a region block.
    pages: Vec<u32>,
}

impl WholePage {
    /// The writer for `sub`'s chip.
    pub fn new<S: Storage, M: ErrorModel>(sub: &Substrate<S, M>) -> Self {
        let multi = sub.ctl.chip().config().cell != nand::CellType::Slc;
        let pages = if multi {
            sub.ctl
                .chip()
                .pairing()
                .pages_of_kind(nand::BitKind::Lsb)
                .collect()
        } else {
            (0..sub.ppb).collect()
        };
        WholePage { pages }
    }
}

impl WholePage {
    /// The flat page of slot `slot` in region block `b`.
    fn phys<S: Storage, M: ErrorModel>(&self, sub: &Substrate<S, M>, b: u32, slot: u32) -> u32 {
        b * sub.ppb + self.pages[slot as usize]
    }
}

impl<S: Storage, M: ErrorModel> MetaWriter<S, M> for WholePage {
    fn name(&self) -> &'static str {
        "whole-page"
    }

    fn unit_bytes(&self, sub: &Substrate<S, M>) -> usize {
        sub.geo.page_size as usize
    }

    fn slots(&self) -> u32 {
        self.pages.len() as u32
    }

    fn program(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
        slot: u32,
        unit: &[u8],
        rec: OobRecord,
    ) -> Result<bool, FtlError> {
        let phys = self.phys(sub, b, slot);
        let r = sub.program_page(now, phys, Payload::Meta(unit), rec, Cause::Meta, None)?;
        Ok(r.is_some())
    }

    fn read(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
        slot: u32,
        unit: &mut [u8],
        cause: Cause,
    ) -> Result<Unit, FtlError> {
        let phys = self.phys(sub, b, slot);
        read_with_retries(sub, now, phys, None, unit, cause)
    }
}

/// SPFTL's writer (Ref. 001, §III.B): a unit is one subpage of the pages [`WholePage`]
/// uses. A region block is an SP block: after each erase it takes one subpage partition —
/// partition `erase count mod subpages`, so the partitions take turns and a mount learns
/// the partition from the block's header (one charged read per region block, before its
/// first unit is read) — and its slots are that subpage of each page, in page order. A unit's bytes and its
/// program are a subpage's: a trim-log or roll-forward record costs a subpage, not a page
/// (SPFTL's saving); a block then holds a page's worth of units at a subpage each, so the
/// region takes `subpages` times the blocks (`PageFtlConfig::region_blocks`).
#[derive(Debug, Clone)]
pub(crate) struct Subpage {
    /// The pages whose subpages are the slots.
    whole: WholePage,
    /// Subpages per page.
    parts: u32,
    /// Blocks whose erase count the substrate knows since this writer was made (read from
    /// the header, or erased by the FTL since: the erase-count mirror is exact).
    known: Vec<bool>,
}

impl Subpage {
    /// Block `b`'s partition in its current erase cycle.
    fn part<S: Storage, M: ErrorModel>(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
    ) -> Result<u32, FtlError> {
        if !self.known[b as usize] {
            let info = sub.read_header(now, b, Cause::Mount)?;
            sub.adopt_erase_count(b, info.erase_count);
            self.known[b as usize] = true;
        }
        Ok(sub.erase[b as usize] % self.parts)
    }
}

impl<S: Storage, M: ErrorModel> MetaWriter<S, M> for Subpage {
    fn name(&self) -> &'static str {
        "subpage"
    }

    fn unit_bytes(&self, sub: &Substrate<S, M>) -> usize {
        sub.geo.subpage_size()
    }

    fn slots(&self) -> u32 {
        self.whole.pages.len() as u32
    }

    fn program(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
        slot: u32,
        unit: &[u8],
        rec: OobRecord,
    ) -> Result<bool, FtlError> {
        // The region erased the block before its first slot: the count is exact.
        self.known[b as usize] = true;
        let part = sub.erase[b as usize] % self.parts;
        let phys = self.whole.phys(sub, b, slot);
        sub.program_subpage_unit(now, phys, part, unit, rec)
    }

    fn read(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
        slot: u32,
        unit: &mut [u8],
        cause: Cause,
    ) -> Result<Unit, FtlError> {
        let part = self.part(sub, now, b)?;
        let phys = self.whole.phys(sub, b, slot);
        read_with_retries(sub, now, phys, Some(part), unit, cause)
    }
}
