//! The on-demand scan of a block after a mount: write pointer, the replacement's offset
//! table, torn pages at the write point; then the block is sealed.

use super::{rec, BlockFtl, Role, ROFF_TOMB};
use crate::substrate::{Sense, Sensed};
use crate::{Cause, FtlError};
use alloc::vec;
use alloc::vec::Vec;
use nand::{ErrorModel, Nanos, Storage};

impl<S: Storage, M: ErrorModel> BlockFtl<S, M> {
    // ----- after a mount ---------------------------------------------------------------

    /// Scans block `b` the first time it is touched after a mount (see the module docs):
    /// write pointer, the replacement's offset table, torn pages at the write point.
    pub(crate) fn resolve(&mut self, now: Nanos, b: u32) -> Result<(), FtlError> {
        if !self.blk[b as usize].unresolved {
            return Ok(());
        }
        let k = self.blk[b as usize];
        let ppb = self.ppb();
        let torn_before = self.torn.len();
        let repl = k.role == Role::Replacement;
        let contiguous = repl || self.multi();
        let start = if repl { 0 } else { k.next as u32 };
        let mut last: Option<u32> = None;
        let mut recs: Vec<(u32, u64)> = Vec::new();
        for page in start..ppb {
            if self.torn.contains(&(b * ppb + page)) {
                // Torn by an earlier cut (it may read as erased): the block went on after it.
                last = Some(page);
                continue;
            }
            match self
                .s
                .sense_in(now, b, page, Sense::Record, Cause::Mount)?
                .0
            {
                Sensed::Data(ri) => {
                    last = Some(page);
                    if ri.record.seq > crate::recovery::SEQ_LIMIT {
                        // Forged or corrupt: never data.
                        self.torn.insert(b * ppb + page);
                    } else if ri.record.kind.data_class().is_some() {
                        recs.push((page, ri.record.lpn));
                    }
                }
                Sensed::Erased if contiguous => break,
                Sensed::Erased => {}
                Sensed::Failed => {
                    last = Some(page);
                    self.torn.insert(b * ppb + page);
                }
            }
        }
        if let Some(h) = last {
            self.blk[b as usize].next = self.blk[b as usize].next.max((h + 1) as u16);
            self.check_write_point(now, b, h)?;
        }
        if repl {
            let table = self.offset_table(b, k.lbn, &recs);
            self.roff.insert(b, table);
        }
        self.blk[b as usize].unresolved = false;
        if self.torn.len() > torn_before {
            // A torn page found now is known only in RAM, and only while it sits at the
            // write point: once anything is programmed after it (the seal below, the next
            // append), a later scan no longer reads it in full, and a crash before the next
            // checkpoint would bring back its record — the newest copy of its page, with
            // data that does not decode. Checkpoint the torn list first (found by the crash
            // harness: a paired-page cut tearing a replacement's lower page, then a second
            // cut after more appends).
            self.write_checkpoint(now, false)?;
        }
        // What the mount recovered is durable: lower pages the crash left exposed are
        // sealed before anything else is programmed here.
        if self.multi() {
            self.seal_block(now, b)?;
        }
        Ok(())
    }

    /// Reads in full the page at block `b`'s write point `h` and the lower pages an
    /// upper-page cut there scrambles: one that does not decode is torn.
    fn check_write_point(&mut self, now: Nanos, b: u32, h: u32) -> Result<(), FtlError> {
        let ppb = self.ppb();
        let mut check: Vec<u32> = vec![h];
        check.extend(self.s.controller().chip().pairing().lower_pages(h));
        let len = if self.s.digest {
            0
        } else {
            self.s.geo().page_size as usize
        };
        let mut buf = vec![0u8; len];
        for page in check {
            let phys = b * ppb + page;
            if self.torn.contains(&phys) {
                continue;
            }
            if let Sensed::Failed = self
                .s
                .sense_in(now, b, page, Sense::Page(&mut buf), Cause::Mount)?
                .0
            {
                self.torn.insert(phys);
            }
        }
        Ok(())
    }

    /// Replacement `b`'s offset table from its records `recs` (page, record field): for
    /// each offset of logical block `lbn`, its newest page (+1) or tombstone; torn pages
    /// and other blocks' records left out.
    fn offset_table(&self, b: u32, lbn: u32, recs: &[(u32, u64)]) -> Vec<u16> {
        let ppb = self.ppb();
        let mut table = vec![0u16; ppb as usize];
        for &(page, lpn) in recs {
            let l = lpn & rec::LPN;
            if lpn & rec::REPL == 0
                || l / ppb as u64 != lbn as u64
                || self.torn.contains(&(b * ppb + page))
            {
                continue;
            }
            let tomb = if lpn & rec::TOMB != 0 { ROFF_TOMB } else { 0 };
            table[(l % ppb as u64) as usize] = (page + 1) as u16 | tomb;
        }
        table
    }
}
