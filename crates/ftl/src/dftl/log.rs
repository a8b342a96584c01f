//! SPFTL_log (§IV-C): metadata updates logged by subpages, and the paths every mode shares
//! to read and commit a metadata unit's entries.
//!
//! SPFTL_log keeps DFTL_por's metadata pages (whole pages of SLC-mode blocks) and adds one
//! **logging partition** per metadata type, of SP blocks programmed only by subpages:
//!
//! - **PMT logs**: (logical page u32, physical page u32) entries; **BIT logs**: (block u32,
//!   BIT entry 8 bytes: valid count, state, erase count). A log subpage belongs to one
//!   metadata unit and holds `count u16 | 0 u16 | entries, ascending by key`; its record
//!   names the unit and carries a stamp (as a unit's: every change it holds is older).
//! - **Coalescing**: committing a unit's dirty entries reads the unit's current log (the
//!   merge buffer), adds the entries (a newer value replaces an older one of the same key)
//!   and programs the result as the unit's new log subpage; the **LID** (per unit: its log's
//!   address) moves to it. The old subpage is garbage.
//! - **Merge**: when the entries no longer fit one subpage, the unit is read, every log
//!   entry applied and the unit written anew (a whole page, stamped), and its LID entry
//!   cleared.
//! - **Lookups**: a CPMT / CBIT miss whose unit has a log reads the log subpage first (the
//!   paper's LID lookup on the critical path) and the unit only if the log lacks the key.
//! - The logging partitions are log-structured like the others, each with its own greedy GC
//!   (live logs copied forward, their bytes counted as PMT-GC / BIT-GC). By default they
//!   are sized like the partitions they log for (at most one live log per unit), the
//!   firmware choice that never forces a merge storm. The paper names one logging block
//!   per type and leaves what happens when it fills open; `log_blocks = 2` is that block
//!   and the one it switches into: a victim whose live logs do not fit the block being
//!   written has them merged into their units instead ([`merge_block_logs`]), the GXT
//!   written, then the victim erased. Measured on the paper's chip (`reproduce spftl`),
//!   that reading writes more metadata than DFTL_por: the paper's saving needs a logging
//!   area that holds most units' logs.
//!
//! [`merge_block_logs`]: DftlFtl::merge_block_logs
//! - **GXT logs** go to the GXT-log partition (see `gxt`): the GXT's changes since the last
//!   whole GXT, coalesced; the whole GXT is written when they outgrow a subpage.
//!
//! Crash consistency: a merged unit's stamp is above its log's, so a mount that finds a
//! unit written after the GXT drops a log (the GXT's or the scan's) whose stamp is older.

use super::gxt;
use super::meta::INDEX_BITS;
use super::{DftlFtl, MetaMode, PartKind, BIT_ENTRY, NONE, PMT_ENTRY};
use crate::{Cause, FtlError};
use alloc::vec;
use alloc::vec::Vec;
use nand::{ErrorModel, Nanos, Storage};

/// Bytes before a log subpage's entries.
const LOG_HEAD: usize = 4;

/// A unit's changes: (key, value) ascending by key. A PMT value is the physical page; a
/// BIT value the 8-byte entry, little-endian.
pub(crate) type Entries = Vec<(u32, u64)>;

/// Bytes of one entry of a `kind` unit on flash (PMT 4, BIT 8).
pub(crate) fn entry_bytes(kind: PartKind) -> usize {
    if kind == PartKind::Pmt {
        PMT_ENTRY
    } else {
        BIT_ENTRY
    }
}

/// The logging partition of a metadata type.
pub(crate) fn log_kind(kind: PartKind) -> PartKind {
    if kind == PartKind::Pmt {
        PartKind::PmtLog
    } else {
        PartKind::BitLog
    }
}

/// Adds `changes` to `entries` (both ascending; a change replaces an entry of its key).
pub(crate) fn coalesce(entries: &mut Entries, changes: &[(u32, u64)]) {
    for &(k, v) in changes {
        match entries.binary_search_by_key(&k, |e| e.0) {
            Ok(i) => entries[i].1 = v,
            Err(i) => entries.insert(i, (k, v)),
        }
    }
}

impl<S: Storage, M: ErrorModel> DftlFtl<S, M> {
    /// Entries per `kind` unit.
    pub(crate) fn per_unit(&self, kind: PartKind) -> u32 {
        if kind == PartKind::Pmt {
            self.pmt_per_unit
        } else {
            self.bit_per_unit
        }
    }

    /// Keys (logical pages or blocks) in all of `kind`.
    fn keys(&self, kind: PartKind) -> u32 {
        if kind == PartKind::Pmt {
            self.lpns
        } else {
            self.s.geo().total_blocks()
        }
    }

    /// Entries a log subpage of `kind` holds.
    pub(crate) fn log_capacity(&self, kind: PartKind) -> usize {
        (self.log_unit - LOG_HEAD) / (4 + entry_bytes(kind))
    }

    /// A log subpage's bytes.
    fn encode_log(&self, kind: PartKind, entries: &[(u32, u64)]) -> Vec<u8> {
        let eb = entry_bytes(kind);
        let mut out = vec![0xFFu8; self.log_unit];
        out[..2].copy_from_slice(&(entries.len() as u16).to_le_bytes());
        out[2..4].copy_from_slice(&[0, 0]);
        for (n, &(k, v)) in entries.iter().enumerate() {
            let o = LOG_HEAD + n * (4 + eb);
            out[o..o + 4].copy_from_slice(&k.to_le_bytes());
            out[o + 4..o + 4 + eb].copy_from_slice(&v.to_le_bytes()[..eb]);
        }
        out
    }

    /// A log subpage of unit `i` parsed; `None` if it is not one (count beyond capacity,
    /// keys outside the unit or not ascending).
    pub(crate) fn decode_log(&self, kind: PartKind, i: u32, buf: &[u8]) -> Option<Entries> {
        let eb = entry_bytes(kind);
        let n = u16::from_le_bytes([buf[0], buf[1]]) as usize;
        if n > self.log_capacity(kind) || buf[2..4] != [0, 0] {
            return None;
        }
        let lo = i * self.per_unit(kind);
        let hi = (lo + self.per_unit(kind)).min(self.keys(kind));
        let mut out: Entries = Vec::with_capacity(n);
        for e in 0..n {
            let o = LOG_HEAD + e * (4 + eb);
            let k = u32::from_le_bytes(buf[o..o + 4].try_into().ok()?);
            let mut v = [0u8; 8];
            v[..eb].copy_from_slice(&buf[o + 4..o + 4 + eb]);
            if k < lo || k >= hi || out.last().is_some_and(|l| l.0 >= k) {
                return None;
            }
            out.push((k, u64::from_le_bytes(v)));
        }
        Some(out)
    }

    /// Reads the log the LID names for unit `i` of `kind` (a charged subpage read): its
    /// entries and its stamp.
    pub(crate) fn read_log(
        &mut self,
        now: Nanos,
        kind: PartKind,
        i: u32,
        cause: Cause,
    ) -> Result<(Entries, u64), FtlError> {
        let a = self.dir(log_kind(kind))[i as usize];
        let mut buf = vec![0u8; self.log_unit];
        let rec = self.read_named_unit(now, a, &mut buf, cause)?;
        if (rec.lpn & ((1 << INDEX_BITS) - 1)) as u32 != i {
            return Err(FtlError::Corrupt(
                "a log the LID names belongs to another unit",
            ));
        }
        let e = self
            .decode_log(kind, i, &buf)
            .ok_or(FtlError::Corrupt("a log subpage does not parse"))?;
        Ok((e, rec.lpn >> INDEX_BITS))
    }

    /// Whether unit `i` of `kind` has a log (SPFTL_log).
    pub(crate) fn has_log(&self, kind: PartKind, i: u32) -> bool {
        self.mode == MetaMode::Log && self.dir(log_kind(kind))[i as usize] != NONE
    }

    /// The value of entry `key` of `kind` from flash: its unit's log first (when the LID
    /// names one), then the unit. `None`: the unit was never written.
    pub(crate) fn lookup(
        &mut self,
        now: Nanos,
        kind: PartKind,
        key: u32,
    ) -> Result<Option<u64>, FtlError> {
        let i = key / self.per_unit(kind);
        if self.has_log(kind, i) {
            let (e, _) = self.read_log(now, kind, i, Cause::Meta)?;
            if let Ok(x) = e.binary_search_by_key(&key, |e| e.0) {
                return Ok(Some(e[x].1));
            }
        }
        let a = self.dir(kind)[i as usize];
        if a == NONE {
            return Ok(None);
        }
        let mut buf = vec![0u8; self.unit];
        self.read_named_unit(now, a, &mut buf, Cause::Meta)?;
        let eb = entry_bytes(kind);
        let o = (key % self.per_unit(kind)) as usize * eb;
        let mut v = [0u8; 8];
        v[..eb].copy_from_slice(&buf[o..o + eb]);
        Ok(Some(u64::from_le_bytes(v)))
    }

    /// Unit `i` of `kind` as it stands on flash (its log applied) into `buf` (a unit; a
    /// never-written unit reads as all unmapped / zero); returns its stamp (0: never
    /// written).
    pub(crate) fn read_current(
        &mut self,
        now: Nanos,
        kind: PartKind,
        i: u32,
        buf: &mut [u8],
        cause: Cause,
    ) -> Result<u64, FtlError> {
        let mut stamp = self.read_page_unit(now, kind, i, buf, cause)?;
        if self.has_log(kind, i) {
            let (e, s) = self.read_log(now, kind, i, cause)?;
            self.patch(kind, i, buf, &e);
            stamp = stamp.max(s);
        }
        Ok(stamp)
    }

    /// Unit `i` of `kind` itself (not its log) into `buf` (a never-written unit reads as
    /// all unmapped / zero); returns its stamp (0: never written).
    fn read_page_unit(
        &mut self,
        now: Nanos,
        kind: PartKind,
        i: u32,
        buf: &mut [u8],
        cause: Cause,
    ) -> Result<u64, FtlError> {
        let a = self.dir(kind)[i as usize];
        if a == NONE {
            buf.fill(if kind == PartKind::Pmt { 0xFF } else { 0 });
            return Ok(0);
        }
        Ok(self.read_named_unit(now, a, buf, cause)?.lpn >> INDEX_BITS)
    }

    /// Applies `entries` to unit `i`'s bytes.
    pub(crate) fn patch(&self, kind: PartKind, i: u32, buf: &mut [u8], entries: &[(u32, u64)]) {
        let eb = entry_bytes(kind);
        let lo = i * self.per_unit(kind);
        for &(k, v) in entries {
            let o = (k - lo) as usize * eb;
            buf[o..o + eb].copy_from_slice(&v.to_le_bytes()[..eb]);
        }
    }

    /// Commits `changes` (ascending) to unit `i` of `kind`: DFTL_por and SPFTL rewrite the
    /// unit; SPFTL_log logs them (coalesced into the unit's log) and merges the log into
    /// the unit when it would outgrow its subpage.
    pub(crate) fn commit(
        &mut self,
        now: Nanos,
        kind: PartKind,
        i: u32,
        changes: &[(u32, u64)],
    ) -> Result<(), FtlError> {
        let mut all: Entries = Vec::new();
        if self.mode == MetaMode::Log {
            let lk = log_kind(kind);
            if self.has_log(kind, i) {
                all = self.read_log(now, kind, i, Cause::Meta)?.0;
            }
            coalesce(&mut all, changes);
            if all.len() <= self.log_capacity(kind) {
                let bytes = self.encode_log(kind, &all);
                let stamp = self.s.seq;
                let na = self.write_unit(now, lk, i, stamp, &bytes)?;
                self.dir_mut(lk)[i as usize] = na;
                return Ok(());
            }
            self.s.counters_mut().log_merges += 1;
        } else {
            all.extend_from_slice(changes);
        }
        let mut buf = vec![0u8; self.unit];
        self.read_page_unit(now, kind, i, &mut buf, Cause::Meta)?;
        self.patch(kind, i, &mut buf, &all);
        let stamp = self.s.seq;
        let na = self.write_unit(now, kind, i, stamp, &buf)?;
        self.dir_mut(kind)[i as usize] = na;
        if self.mode == MetaMode::Log {
            self.dir_mut(log_kind(kind))[i as usize] = NONE;
        }
        Ok(())
    }

    /// Merges every live log in block `v` of logging partition `lk` into its unit (the
    /// unit read, the log applied, the unit written anew with its log's stamp, its LID
    /// cleared): how a logging partition too small to copy its live logs forward reclaims
    /// a block (`log_blocks`). Each merge counts in `log_merges`. A cut before the caller
    /// makes the directory durable leaves the logs named and intact: a mount applies them
    /// to units that already hold them, which changes nothing.
    pub(crate) fn merge_block_logs(
        &mut self,
        now: Nanos,
        lk: PartKind,
        v: u32,
    ) -> Result<(), FtlError> {
        let kind = if lk == PartKind::PmtLog {
            PartKind::Pmt
        } else {
            PartKind::Bit
        };
        let slots = self.slots();
        let units: Vec<u32> = (0..self.dir(lk).len() as u32)
            .filter(|&i| {
                let a = self.dir(lk)[i as usize];
                a != NONE && a / slots == v
            })
            .collect();
        let mut buf = vec![0u8; self.unit];
        for i in units {
            // The unit as it stands on flash, stamped with what it holds (its log's stamp
            // at most): not the current sequence number — the cache may hold newer
            // changes of it that are not in it, and a mount replays writes from its stamp.
            let stamp = self.read_current(now, kind, i, &mut buf, Cause::Meta)?;
            let na = self.write_unit(now, kind, i, stamp, &buf)?;
            self.dir_mut(kind)[i as usize] = na;
            self.dir_mut(lk)[i as usize] = NONE;
            self.s.counters_mut().log_merges += 1;
        }
        Ok(())
    }

    // ----- GXT logs ------------------------------------------------------------------

    /// Writes the GXT as a log (SPFTL_log): `Ok(false)` when there is no base, the
    /// changes outgrow a subpage or the GXT-log block is full — the caller writes the whole
    /// GXT.
    pub(crate) fn write_gxt_log(&mut self, now: Nanos) -> Result<bool, FtlError> {
        let Some((base_seq, base)) = &self.gxt_base else {
            return Ok(false);
        };
        let cur = self.gxt().cells(&self.cfg);
        let crc = self.s.controller().crc32c_fn();
        let Some(mut bytes) = gxt::encode_log(*base_seq, base, &cur, self.log_unit, crc) else {
            return Ok(false);
        };
        bytes.resize(self.log_unit, 0xFF);
        let (tag, counter) = super::meta::tag_of(PartKind::GxtLog);
        let k = PartKind::GxtLog as usize;
        while self.parts[k].upd != NONE && self.parts[k].wp < self.slots() {
            let (b, slot) = (self.parts[k].upd, self.parts[k].wp);
            self.parts[k].wp += 1;
            if self.program_unit(now, b, slot, &bytes, 0, tag, counter)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// After a whole GXT: the GXT-log partition's next good block, erased, takes the logs
    /// (none left: every GXT is written whole).
    pub(crate) fn next_gxt_log_block(&mut self, now: Nanos) -> Result<(), FtlError> {
        let k = PartKind::GxtLog as usize;
        let p = &self.parts[k];
        let start = if p.upd == NONE {
            0
        } else {
            p.upd - p.first + 1
        };
        let (first, len, old) = (p.first, p.len, p.upd);
        self.parts[k].upd = NONE;
        for i in 0..len {
            let b = first + (start + i) % len;
            if self.parts[k].bad[(b - first) as usize] || (b == old && len > 1) {
                continue;
            }
            if self.erase_meta(now, b, Cause::Meta)? {
                self.parts[k].upd = b;
                self.parts[k].wp = 0;
                return Ok(());
            }
        }
        Ok(())
    }
}
