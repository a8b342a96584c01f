//! Metadata writers: how a metadata stream's units reach flash.
//!
//! The checkpoint region ([`super::region`]) stores a scheme's byte stream as a sequence of
//! units, each with a header; a [`MetaWriter`] decides what a unit is and how it is
//! programmed and read back. [`WholePage`] (today's writer) programs a unit as the data area
//! of a whole page — in SLC mode on multi-level chips, so only the LSB pages of a region
//! block are used — protected like any page by the controller's BCH code and data CRC.
//! SPFTL's writers (subpage programming in SP blocks, a log of small records) will be
//! other implementations of the same trait, and the region's generations and log work over
//! them unchanged.

use super::{Payload, Substrate};
use crate::{Cause, FtlError, OpKind};
use ::alloc::vec::Vec;
use controller::{CtlError, OobRecord, PageRead};
use nand::{ErrorModel, Nanos, Storage};

/// How metadata units are programmed and read.
///
/// Contract: slots of a block are programmed in increasing order, each at most once between
/// two erases of the block (the region erases a block before its first slot); `program`
/// returns `Ok(false)` when the chip failed the program (the block is retired: the region
/// continues in another block) and an error for anything else; `read` returns the unit's
/// record and fills `unit` when the slot holds a unit that decodes, `None` when it is
/// erased or does not decode (a torn write), and charges what it reads to the op log.
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
    /// Reads slot `slot` of block `b` into `unit`.
    fn read(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
        slot: u32,
        unit: &mut [u8],
    ) -> Result<Option<OobRecord>, FtlError>;
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
        let phys = b * sub.ppb + self.pages[slot as usize];
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
    ) -> Result<Option<OobRecord>, FtlError> {
        let addr = sub
            .block_addr(b)
            .page(self.pages[slot as usize])
            .expect("region page in block");
        // A unit that does not decode is sensed again (read-retry) before it counts as
        // absent: a committed checkpoint page read once at a bad moment must not send
        // mount back to an older generation. A torn page fails every time.
        let mut retries = sub.cfg.read_retries;
        loop {
            match sub.ctl.read_meta(now, addr, unit) {
                Ok(PageRead::Data(info)) => {
                    sub.push_op(b, OpKind::Read, Cause::Mount, info.timing, info.ecc, None);
                    return Ok(Some(info.record));
                }
                Ok(PageRead::Erased { timing }) => {
                    sub.push_op(b, OpKind::Read, Cause::Mount, timing, Nanos::ZERO, None);
                    return Ok(None);
                }
                Err(CtlError::Uncorrectable { timing, ecc, .. }) => {
                    sub.push_op(b, OpKind::Read, Cause::Mount, timing, ecc, None);
                    if retries == 0 {
                        return Ok(None);
                    }
                    retries -= 1;
                    sub.log.counters.read_retries += 1;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}
