//! The region's anchor (see the module docs, "Rotation"): the records naming the current
//! region blocks, written at format and at a swap and read at mount, and the swap itself.

use super::{versioned, Region, ANCHOR_KIND, ANCHOR_REFRESH, ROTATE_SPREAD, VERSION};
use crate::bounded::Cap;
use crate::substrate::meta::Unit;
use crate::substrate::{BState, Substrate};
use crate::{Cause, FtlError};
use ::alloc::vec;
use ::alloc::vec::Vec;
use controller::{OobRecord, PageKind};
use nand::{ErrorModel, Nanos, Storage};

const ANCHOR_MAGIC: [u8; 4] = *b"NLAN";

/// An anchor record's sequence number and list of region blocks.
type AnchorRecord = (u64, Vec<u32>);

/// What one [`Region::anchor_op`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AnchorOp {
    /// Erased the block the record goes to; its program is next.
    Erased,
    /// Programmed the record (or the region has no anchor).
    Written,
    /// The anchor cannot take a record (see [`Region::write_anchor`]).
    Failed,
}

/// The CRC32C of an anchor record: its sequence number, count and blocks (bytes 8..20 and
/// 24..), not the CRC field itself.
fn anchor_crc(crc32c: fn(&[u8]) -> u32, record: &[u8]) -> u32 {
    let mut v = Vec::with_capacity(record.len() - 12);
    v.extend_from_slice(&record[8..20]);
    v.extend_from_slice(&record[24..]);
    crc32c(&v)
}

impl<S: Storage, M: ErrorModel> Region<S, M> {
    /// An anchor record: magic, sequence number, block count, CRC32C of what follows the
    /// CRC, then the blocks (little-endian).
    fn anchor_record(&self, sub: &Substrate<S, M>, seq: u64) -> Vec<u8> {
        let mut page = vec![0u8; self.writer.unit_bytes(sub)];
        page[..4].copy_from_slice(&ANCHOR_MAGIC);
        page[4] = VERSION;
        page[8..16].copy_from_slice(&seq.to_le_bytes());
        page[16..20].copy_from_slice(&(self.blocks.len() as u32).to_le_bytes());
        for (i, b) in self.blocks.iter().enumerate() {
            page[24 + 4 * i..28 + 4 * i].copy_from_slice(&b.to_le_bytes());
        }
        let end = 24 + 4 * self.blocks.len();
        let crc = anchor_crc(sub.ctl.crc32c_fn(), &page[..end]);
        page[20..24].copy_from_slice(&crc.to_le_bytes());
        page
    }

    /// Parses an anchor record: its sequence number and block list, if it is whole and
    /// names only distinct blocks of the chip other than the anchors; an error if it is a
    /// record of a version this build does not read (a newer build's region list).
    fn parse_anchor(
        &self,
        sub: &Substrate<S, M>,
        page: &[u8],
    ) -> Result<Option<AnchorRecord>, FtlError> {
        if !versioned(page, 24, &ANCHOR_MAGIC, "checkpoint region's anchor record")? {
            return Ok(None);
        }
        Ok(self.parse_anchor_record(sub, page))
    }

    /// [`parse_anchor`](Region::parse_anchor) of a record of this version.
    fn parse_anchor_record(&self, sub: &Substrate<S, M>, page: &[u8]) -> Option<AnchorRecord> {
        let u32_at = |o: usize| u32::from_le_bytes(page[o..o + 4].try_into().expect("4 bytes"));
        let seq = u64::from_le_bytes(page[8..16].try_into().expect("8 bytes"));
        let n = u32_at(16) as usize;
        let end = 24usize.checked_add(n.checked_mul(4)?)?;
        if n == 0 || end > page.len() {
            return None;
        }
        if anchor_crc(sub.ctl.crc32c_fn(), &page[..end]) != u32_at(20) {
            return None;
        }
        let blocks: Vec<u32> = (0..n).map(|i| u32_at(24 + 4 * i)).collect();
        let nblocks = sub.state.len() as u32;
        let mut sorted = blocks.clone();
        sorted.sort_unstable();
        sorted.dedup();
        let ok = sorted.len() == n
            && blocks
                .iter()
                .all(|&b| b < nblocks && !self.anchors.contains(&b));
        ok.then_some((seq, blocks))
    }

    /// Appends a record of the current list to the anchor (see the module docs): the
    /// erase of the block it goes to, if that comes first, and its program.
    /// `Ok(false)`: the anchor cannot take it — the block the record would go to is bad or
    /// failed (the block holding the newest record is never erased for a retry), so the
    /// caller keeps the list the anchor has.
    pub fn write_anchor(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
    ) -> Result<bool, FtlError> {
        // An erase of the block the record goes to (when it needs one), then the record.
        let mut cap = Cap::new(2, "an anchor record took more than an erase and a program");
        loop {
            cap.tick()?;
            match self.anchor_op(sub, now)? {
                AnchorOp::Erased => continue,
                AnchorOp::Written => return Ok(true),
                AnchorOp::Failed => return Ok(false),
            }
        }
    }

    /// One chip operation of appending a record to the anchor: the erase of the block the
    /// record goes to when it needs one, else the record's program. The anchor's state is
    /// consistent after either (an erased block holds no record, and the newest record is
    /// in the other one), so a stepped checkpoint may run the two as separate steps.
    pub(super) fn anchor_op(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
    ) -> Result<AnchorOp, FtlError> {
        if self.anchors.is_empty() {
            return Ok(AnchorOp::Written);
        }
        let (i, slot) = match self.anchor_at {
            Some((i, slot)) if slot < self.writer.slots() => (i, slot),
            _ => {
                let i = 1 - self.anchor_newest;
                let b = self.anchors[i];
                if sub.state[b as usize] != BState::Region
                    || !sub.erase_block(now, b, Cause::Meta)?
                {
                    return Ok(AnchorOp::Failed);
                }
                self.anchor_at = Some((i, 0));
                return Ok(AnchorOp::Erased);
            }
        };
        let seq = self.anchor_seq + 1;
        let page = self.anchor_record(sub, seq);
        let rec = OobRecord::new(seq, 0, PageKind::Meta(ANCHOR_KIND));
        if !self
            .writer
            .program(sub, now, self.anchors[i], slot, &page, rec)?
        {
            // The block was retired; the other one still holds the newest record.
            self.anchor_at = None;
            return Ok(AnchorOp::Failed);
        }
        self.anchor_seq = seq;
        self.anchor_newest = i;
        self.anchor_at = Some((i, slot + 1));
        self.anchor_written = Some(now);
        let c = &mut sub.log.counters;
        c.meta_bytes += page.len() as u64;
        c.meta_bytes_by_kind.checkpoint += page.len() as u64;
        Ok(AnchorOp::Written)
    }

    /// Whether the newest anchor record is due to be rewritten at `now`: it was written
    /// [`ANCHOR_REFRESH`] or more ago, or before this mount (its age is unknown: the record
    /// carries no time). The checkpoint pages are rewritten at every generation, but the
    /// anchor only at a swap, so without a refresh its record would age past what the
    /// code corrects on a worn chip under weak ECC (measured: at t = 8 on a 3000 P/E chip
    /// a month-old record no longer decoded and the volume did not mount).
    pub(super) fn anchor_due(&self, now: Nanos) -> bool {
        !self.anchors.is_empty()
            && self
                .anchor_written
                .is_none_or(|t| now.0.saturating_sub(t.0) >= ANCHOR_REFRESH.0)
    }

    /// Writes the first anchor record at format; a region whose anchor cannot take it is
    /// kept fixed (the anchors become region blocks like the others).
    pub fn init_anchor(&mut self, sub: &mut Substrate<S, M>, now: Nanos) -> Result<(), FtlError> {
        if !self.write_anchor(sub, now)? {
            self.make_fixed();
        }
        Ok(())
    }

    /// The anchors become ordinary region blocks: the region no longer rotates.
    pub(super) fn make_fixed(&mut self) {
        let mut all: Vec<u32> = self.anchors.drain(..).collect();
        all.append(&mut self.blocks);
        self.blocks = all;
    }

    /// Reads both anchor blocks and adopts the newest valid record's list (charged reads;
    /// see the module docs for how few).
    /// Blocks that left the region become `Bad` placeholders for recovery to settle; blocks
    /// that joined it become region blocks. Without any valid record the region is the
    /// configured one, fixed (a volume formatted before anchors existed).
    pub(super) fn load_anchor(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
    ) -> Result<(), FtlError> {
        let mut newest: Option<(u64, usize, Vec<u32>)> = None;
        let mut unreadable = false;
        for i in 0..self.anchors.len() {
            let (found, worn) = self.newest_in_block(sub, now, self.anchors[i])?;
            unreadable |= worn;
            if let Some((seq, list)) = found {
                if newest.as_ref().is_none_or(|n| seq > n.0) {
                    newest = Some((seq, i, list));
                }
            }
        }
        let Some((seq, i, list)) = newest else {
            if unreadable {
                // Records were written but none decodes: the configured list may be stale,
                // and a fixed region read from it could find an old generation or none.
                return Err(FtlError::Corrupt(
                    "the checkpoint region's anchor does not decode: the list of region blocks is lost",
                ));
            }
            // A fixed region: the anchors are region blocks like the others.
            self.make_fixed();
            return Ok(());
        };
        for &b in &self.blocks {
            if !list.contains(&b) && sub.state[b as usize] == BState::Region {
                sub.adopt_state(b, BState::Bad);
            }
        }
        for &b in &list {
            sub.adopt_state(b, BState::Region);
        }
        self.blocks = list;
        self.anchor_seq = seq;
        self.anchor_newest = i;
        // The next record goes to the other block, erased first; the newest record's age
        // is unknown, so the next generation rewrites it.
        self.anchor_at = None;
        self.anchor_written = None;
        Ok(())
    }

    /// The newest valid record in anchor block `b`, and whether a record read on the way
    /// did not decode. Records are appended in slot order after an erase, so the programmed
    /// slots are a prefix: its end by bisection (about log2(slots) reads, not one per
    /// record), then the last record that decodes, reading back from the end.
    fn newest_in_block(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
    ) -> Result<(Option<AnchorRecord>, bool), FtlError> {
        let mut page = vec![0u8; self.writer.unit_bytes(sub)];
        let (mut lo, mut hi) = (0u32, self.writer.slots());
        // The last slot the bisection found decoding, with its record and bytes.
        let mut seen: Option<(u32, OobRecord)> = None;
        let mut seen_page = vec![0u8; page.len()];
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self
                .writer
                .read(sub, now, b, mid, &mut page, Cause::Mount)?
            {
                Unit::Erased => hi = mid,
                Unit::Record(rec) => {
                    seen = Some((mid, rec));
                    seen_page.copy_from_slice(&page);
                    lo = mid + 1;
                }
                Unit::Unreadable => lo = mid + 1,
            }
        }
        let mut unreadable = false;
        for slot in (0..lo).rev() {
            let rec = match seen {
                Some((at, rec)) if at == slot => {
                    page.copy_from_slice(&seen_page);
                    rec
                }
                _ => match self
                    .writer
                    .read(sub, now, b, slot, &mut page, Cause::Mount)?
                {
                    Unit::Record(rec) => rec,
                    // A record worn past the code, or a torn one: an older one may still
                    // decode.
                    Unit::Unreadable => {
                        unreadable = true;
                        continue;
                    }
                    Unit::Erased => continue,
                },
            };
            if rec.kind != PageKind::Meta(ANCHOR_KIND) {
                // Not an anchor block (a volume formatted before anchors existed).
                break;
            }
            if let Some(found) = self.parse_anchor(sub, &page)? {
                return Ok((Some(found), unreadable));
            }
        }
        Ok((None, unreadable))
    }

    /// The region block to reuse next in place of `b` (about to be erased for a generation
    /// or a log page): `b` itself, or — when `b` has been erased [`ROTATE_SPREAD`] times more
    /// than the least-worn free block of its die — that free block, swapped into the region
    /// (anchor record first, then `b` erased into the free pool; see the module docs).
    pub(super) fn rotate(
        &mut self,
        sub: &mut Substrate<S, M>,
        now: Nanos,
        b: u32,
    ) -> Result<u32, FtlError> {
        if self.anchors.is_empty() {
            return Ok(b);
        }
        let die = sub.die_of(b) as usize;
        let Some(&core::cmp::Reverse((least, f))) = sub.dies[die].free.peek() else {
            return Ok(b);
        };
        if sub.erase[b as usize] < least.saturating_add(ROTATE_SPREAD) {
            return Ok(b);
        }
        sub.dies[die].free.pop();
        // The free block, erased and in SLC mode, keeping whole pages in a digest store.
        if sub.suspect[f as usize] {
            sub.suspect[f as usize] = false;
            if !sub.erase_block(now, f, Cause::Meta)? {
                return Ok(b);
            }
        }
        let fa = sub.block_addr(f);
        if sub.window > 0 {
            if let Err(e) = sub.ctl.set_slc_mode(fa, true) {
                return match e {
                    nand::NandError::BadBlock(_) => {
                        sub.set_state(f, BState::Bad);
                        sub.log.counters.retired_blocks += 1;
                        Ok(b)
                    }
                    e => Err(e.into()),
                };
            }
        }
        sub.ctl.keep_whole(f, true);
        let at = self
            .blocks
            .iter()
            .position(|&x| x == b)
            .expect("b is a region block");
        self.blocks[at] = f;
        sub.set_state(f, BState::Region);
        // The worn block is erased before the record names the new list: once it does, a
        // mount scans `b` like any data block, and must not find region units there (an SP
        // block's subpage units would be resumed as a half-written data block).
        let erased = sub.erase_block(now, b, Cause::Meta)?;
        if !self.write_anchor(sub, now)? {
            // The anchor keeps the old list: so does the region (`b` erased, or bad); `f`
            // goes back to the pool (in SLC mode, which its next opening sets as needed).
            self.blocks[at] = b;
            sub.ctl.keep_whole(f, false);
            sub.slc[f as usize] = Some(sub.window > 0);
            sub.push_free(f);
            return Ok(b);
        }
        // The worn block leaves: native mode, into the free pool.
        if erased {
            let ba = sub.block_addr(b);
            if sub.window > 0 {
                sub.ctl.set_slc_mode(ba, false)?;
            }
            sub.ctl.keep_whole(b, false);
            sub.slc[b as usize] = Some(false);
            sub.young[b as usize] = false;
            sub.push_free(b);
        }
        sub.log.counters.region_swaps += 1;
        Ok(f)
    }
}
