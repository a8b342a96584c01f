//! Metadata units: their programs and reads (page or subpage), the partitions' update
//! blocks and greedy GC, the GXT write, and the CPMT / CBIT with their write-backs and
//! the BIT scan that refills the free-block queue and the BSI.

use super::gxt::Gxt;
use super::{
    bst, BitEntry, DftlFtl, MetaMode, PartKind, BIT_ENTRY, BIT_TAG, GXT_TAG, NONE, PMT_TAG,
};
use crate::bounded::Cap;
use crate::substrate::{Payload, Programmed, Sense, Sensed};
use crate::{Cause, FtlError};
use alloc::vec;
use alloc::vec::Vec;
use controller::{MetaTag, OobRecord, PageKind};
use nand::{ErrorModel, Nanos, Storage};

/// Packing of a metadata unit's record field: unit index in the low 24 bits, the unit's
/// content stamp above (the sequence number every change it holds is older than).
pub(crate) const INDEX_BITS: u32 = 24;

/// Reads of a metadata unit before it counts as unreadable.
const UNIT_READS: u32 = 3;

/// Which byte counter a unit write adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bytes {
    Pmt,
    Bit,
    Gxt,
    PmtGc,
    BitGc,
}

impl<S: Storage, M: ErrorModel> DftlFtl<S, M> {
    // ----- addressing -------------------------------------------------------------------

    /// Block and slot of unit address `a`.
    pub(crate) fn unit_at(&self, a: u32) -> (u32, u32) {
        (a / self.slots(), a % self.slots())
    }

    /// Partition-local form of unit address `a` (PMD/BID on flash).
    pub(crate) fn to_local(&self, kind: PartKind, a: u32) -> u16 {
        if a == NONE {
            return 0xFFFF;
        }
        let (b, slot) = self.unit_at(a);
        ((b - self.parts[kind as usize].first) * self.slots() + slot) as u16
    }

    /// Partition `kind`'s directory in partition-local form (the GXT's).
    pub(crate) fn local_dir(&self, kind: PartKind) -> Vec<u16> {
        self.dir(kind)
            .iter()
            .map(|&a| self.to_local(kind, a))
            .collect()
    }

    /// Global unit address of a partition-local one (`NONE` for `0xFFFF` or out of range).
    pub(crate) fn local_to_global(&self, kind: PartKind, l: u16) -> u32 {
        let p = &self.parts[kind as usize];
        if l == 0xFFFF || l as u32 >= p.len * self.slots() {
            return NONE;
        }
        (p.first + l as u32 / self.slots()) * self.slots() + l as u32 % self.slots()
    }

    // ----- unit I/O ---------------------------------------------------------------------

    /// Programs unit slot `slot` of metadata block `b`. `Ok(false)`: the program failed
    /// (the block is now bad) or the slot cannot take a program (skipped).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn program_unit(
        &mut self,
        now: Nanos,
        b: u32,
        slot: u32,
        data: &[u8],
        field: u64,
        tag: MetaTag,
        bytes: Bytes,
    ) -> Result<bool, FtlError> {
        let phys = b * self.ppb + self.lsb[slot as usize];
        let rec = OobRecord::new(field, self.s.next_seq(), PageKind::Meta(tag));
        let ecc = self.cfg.meta_ecc_t;
        let payload = if self.is_sub(b) {
            Payload::Subpage(self.sp_part[b as usize] as u32, data)
        } else {
            Payload::Meta(data)
        };
        match self
            .s
            .program_classified(now, phys, payload, ecc, rec, Cause::Meta, None)?
        {
            Programmed::Done(..) => {
                let c = self.s.counters_mut();
                let n = data.len() as u64;
                c.meta_bytes += n;
                c.meta_programs += 1;
                let k = &mut c.meta_bytes_by_kind;
                match bytes {
                    Bytes::Pmt => k.pmt += n,
                    Bytes::Bit => k.bit += n,
                    Bytes::Gxt => k.gxt += n,
                    Bytes::PmtGc => k.pmt_gc += n,
                    Bytes::BitGc => k.bit_gc += n,
                }
                Ok(true)
            }
            Programmed::Failed => {
                self.s.counters_mut().retired_blocks += 1;
                self.mark_meta_bad(b);
                Ok(false)
            }
            // The slot cannot be programmed (a unit torn to all ones by a power cut reads
            // as erased, so a mount's scan stopped before it; or a full-page program that
            // is no unit of ours landed in an SP block, where the chip then refuses every
            // subpage program until the erase): skipped.
            Programmed::Conflict(_) => Ok(false),
        }
    }

    /// Metadata block `b` is bad: out of its partition's free list and update block.
    pub(crate) fn mark_meta_bad(&mut self, b: u32) {
        if let Some(k) = self.part_of(b) {
            let p = &mut self.parts[k as usize];
            p.bad[(b - p.first) as usize] = true;
            p.free.retain(|&x| x != b);
            if p.upd == b {
                p.wp = self.lsb.len() as u32;
            }
        }
        self.s.set_state(b, crate::substrate::BState::Bad);
    }

    /// One charged read of unit `a`: its record and, into `buf` (a unit), its bytes.
    /// `Ok(None)`: erased. A unit that does not decode is read again, up to three reads;
    /// then `Err(Corrupt)` — or `Ok(None)` with `*failed = true` when the caller can
    /// live without it (a scan).
    pub(crate) fn read_unit(
        &mut self,
        now: Nanos,
        a: u32,
        buf: &mut [u8],
        cause: Cause,
        failed: Option<&mut bool>,
    ) -> Result<Option<OobRecord>, FtlError> {
        let (b, slot) = self.unit_at(a);
        let phys = b * self.ppb + self.lsb[slot as usize];
        for _ in 0..UNIT_READS {
            let how = if self.is_sub(b) {
                Sense::Subpage(self.sp_part[b as usize] as u32, &mut *buf)
            } else {
                Sense::Meta(&mut *buf)
            };
            match self.s.sense(now, phys, how, cause)?.0 {
                Sensed::Data(info) => return Ok(Some(info.record)),
                Sensed::Erased => return Ok(None),
                Sensed::Failed => {}
            }
            self.s.counters_mut().read_retries += 1;
            if self.is_sub(b) {
                // Pong-pong: this partition is worn; the next erase moves to the next.
                self.sp_bump[b as usize] = true;
            }
        }
        match failed {
            Some(f) => {
                *f = true;
                Ok(None)
            }
            None => Err(FtlError::Corrupt("a metadata unit does not decode")),
        }
    }

    /// Reads unit `a` a directory names into `buf` (a unit); its being erased means the
    /// directory is wrong: `Corrupt`.
    pub(crate) fn read_named_unit(
        &mut self,
        now: Nanos,
        a: u32,
        buf: &mut [u8],
        cause: Cause,
    ) -> Result<OobRecord, FtlError> {
        self.read_unit(now, a, buf, cause, None)?
            .ok_or(FtlError::Corrupt(
                "a metadata unit its directory names is erased",
            ))
    }

    /// The record of unit `a` (a scan): a spare-area read of a page unit, a whole subpage
    /// read of a subpage unit. `Ok(None)` with `*failed` set: programmed but unreadable.
    pub(crate) fn unit_record(
        &mut self,
        now: Nanos,
        a: u32,
        cause: Cause,
        failed: &mut bool,
    ) -> Result<Option<OobRecord>, FtlError> {
        *failed = false;
        let (b, slot) = self.unit_at(a);
        if self.is_sub(b) {
            let mut buf = vec![0u8; self.unit_len(b)];
            return self.read_unit(now, a, &mut buf, cause, Some(failed));
        }
        let phys = b * self.ppb + self.lsb[slot as usize];
        Ok(match self.s.sense(now, phys, Sense::Record, cause)?.0 {
            Sensed::Data(info) => Some(info.record),
            Sensed::Erased => None,
            Sensed::Failed => {
                *failed = true;
                None
            }
        })
    }

    /// Erases metadata block `b` (its partition's GC, a GXT block's reuse, mount).
    /// `Ok(false)`: it went bad.
    pub(crate) fn erase_meta(
        &mut self,
        now: Nanos,
        b: u32,
        cause: Cause,
    ) -> Result<bool, FtlError> {
        if !self.s.erase_block(now, b, cause)? {
            self.mark_meta_bad(b);
            return Ok(false);
        }
        if self.is_sub(b) {
            self.s.counters_mut().sp_erases += 1;
            if self.sp_bump[b as usize] {
                self.sp_bump[b as usize] = false;
                let n = self.s.geo().subpages_per_page as u8;
                self.sp_part[b as usize] = (self.sp_part[b as usize] + 1) % n;
            }
        }
        Ok(true)
    }

    // ----- partitions -------------------------------------------------------------------

    /// A unit slot in partition `kind`'s update block, opening the next block (and
    /// writing the GXT, and collecting a victim when no free block is left) when it is
    /// full.
    fn take_slot(&mut self, now: Nanos, kind: PartKind) -> Result<(u32, u32), FtlError> {
        let slots = self.slots();
        for _ in 0..=self.parts[kind as usize].len {
            let p = &self.parts[kind as usize];
            if p.upd != NONE && p.wp < slots {
                return Ok((p.upd, p.wp));
            }
            self.switch_part(now, kind)?;
        }
        Err(FtlError::NoSpace)
    }

    /// Opens partition `kind`'s next update block from its free list; writes the GXT (the
    /// update block changed) and, if that was the last free block, collects a victim into
    /// the new block.
    fn switch_part(&mut self, now: Nanos, kind: PartKind) -> Result<(), FtlError> {
        let k = kind as usize;
        let Some(b) = self.parts[k].free.pop_front() else {
            return Err(FtlError::Corrupt(
                "a metadata partition has no free block left",
            ));
        };
        self.parts[k].upd = b;
        self.parts[k].wp = 0;
        self.write_gxt(now)?;
        if self.parts[k].free.is_empty() {
            self.meta_gc(now, kind)?;
        }
        Ok(())
    }

    /// The directory of partition `kind` (PMD, BID, or a LID).
    pub(crate) fn dir(&self, kind: PartKind) -> &Vec<u32> {
        match kind {
            PartKind::Pmt => &self.pmd,
            PartKind::Bit => &self.bid,
            PartKind::PmtLog => &self.plid,
            _ => &self.blid,
        }
    }

    /// The directory of partition `kind`, mutably.
    pub(crate) fn dir_mut(&mut self, kind: PartKind) -> &mut Vec<u32> {
        match kind {
            PartKind::Pmt => &mut self.pmd,
            PartKind::Bit => &mut self.bid,
            PartKind::PmtLog => &mut self.plid,
            _ => &mut self.blid,
        }
    }

    /// Live units per block of partition `kind` (from its directory).
    pub(crate) fn live_units(&self, kind: PartKind) -> Vec<u32> {
        let p = &self.parts[kind as usize];
        let mut live = vec![0u32; p.len as usize];
        for &a in self.dir(kind) {
            if a != NONE {
                live[(a / self.slots() - p.first) as usize] += 1;
            }
        }
        live
    }

    /// Greedy GC of partition `kind`: the block of fewest live units (not the update block)
    /// has them copied into the update block and is erased.
    pub(crate) fn meta_gc(&mut self, now: Nanos, kind: PartKind) -> Result<(), FtlError> {
        let k = kind as usize;
        let live = self.live_units(kind);
        let p = &self.parts[k];
        let victim = (0..p.len)
            .map(|i| p.first + i)
            .filter(|&b| b != p.upd && !p.bad[(b - p.first) as usize] && !p.free.contains(&b))
            .min_by_key(|&b| (live[(b - p.first) as usize], b));
        let Some(v) = victim else {
            return Ok(());
        };
        let slots = self.slots();
        if live[(v - p.first) as usize] + p.wp >= slots {
            if matches!(kind, PartKind::PmtLog | PartKind::BitLog) {
                // A small logging partition (`log_blocks`): the victim's logs go into
                // their units instead of forward.
                self.merge_block_logs(now, kind, v)?;
                // The directory without the merged logs is durable before the block
                // that held them is erased: a mount never follows a LID into it.
                self.write_gxt(now)?;
                if self.erase_meta(now, v, Cause::Meta)? {
                    self.parts[k].free.push_back(v);
                }
                return Ok(());
            }
            return Err(FtlError::Corrupt(
                "a metadata partition is full of live units (raise meta_spare)",
            ));
        }
        let (tag, _) = tag_of(kind);
        let bytes = match kind {
            PartKind::Pmt | PartKind::PmtLog => Bytes::PmtGc,
            _ => Bytes::BitGc,
        };
        let n = self.dir(kind).len() as u32;
        let mut buf = vec![0u8; self.unit_len(v)];
        for i in 0..n {
            let a = self.dir(kind)[i as usize];
            if a == NONE || a / slots != v {
                continue;
            }
            let rec = self.read_named_unit(now, a, &mut buf, Cause::Meta)?;
            loop {
                let p = &self.parts[k];
                if p.wp >= slots {
                    return Err(FtlError::Corrupt(
                        "a metadata partition's GC ran out of room",
                    ));
                }
                let (ub, slot) = (p.upd, p.wp);
                self.parts[k].wp += 1;
                if self.program_unit(now, ub, slot, &buf, rec.lpn, tag, bytes)? {
                    self.dir_mut(kind)[i as usize] = ub * slots + slot;
                    break;
                }
            }
        }
        if self.erase_meta(now, v, Cause::Meta)? {
            self.parts[k].free.push_back(v);
        }
        Ok(())
    }

    /// Writes unit `index` of partition `kind` with `data`, stamped `stamp`; returns its
    /// address.
    pub(crate) fn write_unit(
        &mut self,
        now: Nanos,
        kind: PartKind,
        index: u32,
        stamp: u64,
        data: &[u8],
    ) -> Result<u32, FtlError> {
        let (tag, bytes) = tag_of(kind);
        let field = (stamp << INDEX_BITS) | index as u64;
        for _ in 0..(self.parts[kind as usize].len + 1) * self.slots() {
            let (b, slot) = self.take_slot(now, kind)?;
            self.parts[kind as usize].wp += 1;
            if self.program_unit(now, b, slot, data, field, tag, bytes)? {
                return Ok(b * self.slots() + slot);
            }
        }
        Err(FtlError::NoSpace)
    }

    /// The GXT as it stands.
    pub(crate) fn gxt(&self) -> Gxt {
        let meta = self.user_first as usize;
        Gxt {
            mode: self.mode as u8,
            u: self.u,
            pmt_upd: self.parts[PartKind::Pmt as usize].upd,
            pmt_wp: self.parts[PartKind::Pmt as usize].wp,
            bit_upd: self.parts[PartKind::Bit as usize].upd,
            bit_wp: self.parts[PartKind::Bit as usize].wp,
            victims: [0, 1].map(|i| self.victims.get(i).map_or(NONE, |v| v.0)),
            free_total: self.free_total,
            drift: self.drift.min(u32::MAX as u64) as u32,
            free_q: self.free_q.iter().copied().collect(),
            bsi: self.bsi.clone(),
            sp_part: self.sp_part[..meta].to_vec(),
            pmd: self.local_dir(PartKind::Pmt),
            bid: self.local_dir(PartKind::Bit),
            plog_upd: self.parts[PartKind::PmtLog as usize].upd,
            plog_wp: self.parts[PartKind::PmtLog as usize].wp,
            blog_upd: self.parts[PartKind::BitLog as usize].upd,
            blog_wp: self.parts[PartKind::BitLog as usize].wp,
            plid: self.local_dir(PartKind::PmtLog),
            blid: self.local_dir(PartKind::BitLog),
        }
    }

    /// Writes the GXT (one or more units in consecutive slots of one GXT block; the part
    /// numbers and count in each record), moving to the partition's next block — erased
    /// first — when the current one cannot hold it.
    pub(crate) fn write_gxt(&mut self, now: Nanos) -> Result<(), FtlError> {
        if self.mode == MetaMode::Log && self.write_gxt_log(now)? {
            return Ok(());
        }
        self.write_whole_gxt(now)?;
        if self.mode == MetaMode::Log {
            let cells = self.gxt().cells(&self.cfg);
            self.gxt_base = Some((self.s.seq - 1, cells));
            self.next_gxt_log_block(now)?;
        }
        Ok(())
    }

    /// Writes the whole GXT into the GXT partition (see [`write_gxt`](Self::write_gxt)).
    fn write_whole_gxt(&mut self, now: Nanos) -> Result<(), FtlError> {
        let nblocks = self.s.geo().total_blocks();
        let mut bytes = self
            .gxt()
            .encode(nblocks, &self.cfg, self.s.controller().crc32c_fn());
        let n = bytes.len().div_ceil(self.unit) as u32;
        bytes.resize(n as usize * self.unit, 0xFF);
        let slots = self.slots();
        let g = PartKind::Gxt as usize;
        for _ in 0..2 * self.parts[g].len + 2 {
            let p = &self.parts[g];
            if p.upd == NONE || p.wp + n > slots {
                // The next good block of the partition after the current one.
                let start = if p.upd == NONE {
                    0
                } else {
                    p.upd - p.first + 1
                };
                let Some(b) = (0..p.len)
                    .map(|i| p.first + (start + i) % p.len)
                    .find(|&b| !p.bad[(b - p.first) as usize] && b != p.upd)
                else {
                    return Err(FtlError::Corrupt("the GXT partition has no good block"));
                };
                if !self.erase_meta(now, b, Cause::Meta)? {
                    continue;
                }
                self.parts[g].upd = b;
                self.parts[g].wp = 0;
                continue;
            }
            let (b, start) = (p.upd, p.wp);
            let mut ok = true;
            for part in 0..n {
                self.parts[g].wp += 1;
                let chunk = &bytes[(part as usize) * self.unit..(part as usize + 1) * self.unit];
                let field = part as u64 | (n as u64) << 8;
                if !self.program_unit(now, b, start + part, chunk, field, GXT_TAG, Bytes::Gxt)? {
                    ok = false;
                    break;
                }
            }
            if ok {
                return Ok(());
            }
        }
        Err(FtlError::Corrupt("no GXT block takes the GXT"))
    }

    // ----- CPMT -------------------------------------------------------------------------

    /// The physical page logical page `l` maps to (`NONE`: unmapped), through the CPMT.
    pub(crate) fn pmt_get(&mut self, now: Nanos, l: u32) -> Result<u32, FtlError> {
        if let Some(v) = self.cpmt.get(l) {
            self.s.counters_mut().cpmt_hits += 1;
            return Ok(v);
        }
        self.s.counters_mut().cpmt_misses += 1;
        let v = self
            .lookup(now, PartKind::Pmt, l)?
            .map_or(NONE, |x| x as u32);
        self.cpmt_room(now)?;
        self.cpmt.insert(l, v, false);
        Ok(v)
    }

    /// Maps logical page `l` to `v` (dirty in the CPMT).
    pub(crate) fn pmt_set(&mut self, now: Nanos, l: u32, v: u32) -> Result<(), FtlError> {
        if !self.cpmt.update(l, v, true) {
            self.cpmt_room(now)?;
            self.cpmt.insert(l, v, true);
        }
        self.truth[l as usize] = v;
        Ok(())
    }

    /// Evicts the least recently used CPMT entry while the CPMT is full (writing back
    /// its unit if it is dirty).
    ///
    /// A dirty entry whose unit also holds an entry pointing at an exposed page is passed
    /// over (moved to the front) while another can go: writing it back would need the
    /// update block sealed first (padding pages).
    fn cpmt_room(&mut self, now: Nanos) -> Result<(), FtlError> {
        let mut passes = self.cpmt_cap;
        // Each round passes an entry over (at most `passes` times) or evicts one.
        let rounds = passes as u64 + self.cpmt.capacity() as u64 + 1;
        let mut cap = Cap::new(rounds, "making room in the CPMT ran past its entries");
        while self.cpmt.is_full() {
            cap.tick()?;
            let (k, _, dirty) = self.cpmt.lru().expect("full cache");
            if dirty {
                let i = k / self.pmt_per_unit;
                if passes > 0 && self.unit_exposed(i) {
                    passes -= 1;
                    self.cpmt.get(k);
                    continue;
                }
                self.writeback_pmt(now, i)?;
            }
            self.cpmt.remove(k);
        }
        Ok(())
    }

    /// Whether a dirty CPMT entry of PMT unit `i` points at an exposed page.
    fn unit_exposed(&self, i: u32) -> bool {
        let lo = i * self.pmt_per_unit;
        let hi = (lo + self.pmt_per_unit).min(self.lpns);
        self.cpmt
            .dirty_in(lo, hi)
            .iter()
            .any(|&(_, v)| self.exposed(v))
    }

    /// Writes PMT unit `i` back: read, every dirty CPMT entry of it applied, programmed
    /// anew; those entries become clean. A page it would point at that a power cut could
    /// still corrupt (an exposed lower page of the update block) is sealed first.
    pub(crate) fn writeback_pmt(&mut self, now: Nanos, i: u32) -> Result<(), FtlError> {
        let per = self.pmt_per_unit;
        let lo = i * per;
        let hi = (lo + per).min(self.lpns);
        let dirty = self.cpmt.dirty_in(lo, hi);
        if dirty.iter().any(|&(_, v)| self.exposed(v)) {
            self.seal(now)?;
        }
        let changes: Vec<(u32, u64)> = dirty.iter().map(|&(k, v)| (k, v as u64)).collect();
        self.commit(now, PartKind::Pmt, i, &changes)?;
        for &(k, v) in &dirty {
            self.flash_pmt[k as usize] = v;
            self.cpmt.clean(k);
        }
        Ok(())
    }

    // ----- CBIT -------------------------------------------------------------------------

    /// Block `b`'s information, through the CBIT.
    pub(crate) fn bit_get(&mut self, now: Nanos, b: u32) -> Result<BitEntry, FtlError> {
        if let Some(e) = self.cbit.get(b) {
            self.s.counters_mut().cbit_hits += 1;
            return Ok(e);
        }
        self.s.counters_mut().cbit_misses += 1;
        let e = self
            .lookup(now, PartKind::Bit, b)?
            .map_or(BitEntry::default(), bit_of);
        self.cbit_room(now)?;
        self.cbit.insert(b, e, false);
        Ok(e)
    }

    /// Sets block `b`'s information (dirty in the CBIT) and keeps the BSI.
    pub(crate) fn bit_set(&mut self, now: Nanos, b: u32, e: BitEntry) -> Result<(), FtlError> {
        if !self.cbit.update(b, e, true) {
            self.cbit_room(now)?;
            self.cbit.insert(b, e, true);
        }
        self.bsi_note(b, e);
        Ok(())
    }

    /// Adds `d` to block `b`'s valid count.
    pub(crate) fn bit_add(&mut self, now: Nanos, b: u32, d: i32) -> Result<(), FtlError> {
        let mut e = self.bit_get(now, b)?;
        e.valid = (e.valid as i32 + d).clamp(0, u16::MAX as i32) as u16;
        self.bit_set(now, b, e)
    }

    fn cbit_room(&mut self, now: Nanos) -> Result<(), FtlError> {
        // Each round evicts one entry.
        let rounds = self.cbit.capacity() as u64 + 1;
        let mut cap = Cap::new(rounds, "making room in the CBIT ran past its entries");
        while self.cbit.is_full() {
            cap.tick()?;
            let (k, _, dirty) = self.cbit.lru().expect("full cache");
            if dirty {
                self.writeback_bit(now, k / self.bit_per_unit)?;
            }
            self.cbit.remove(k);
        }
        Ok(())
    }

    /// Writes BIT unit `j` back (as [`writeback_pmt`](Self::writeback_pmt)).
    pub(crate) fn writeback_bit(&mut self, now: Nanos, j: u32) -> Result<(), FtlError> {
        let per = self.bit_per_unit;
        let lo = j * per;
        let hi = (lo + per).min(self.s.geo().total_blocks());
        let dirty = self.cbit.dirty_in(lo, hi);
        let changes: Vec<(u32, u64)> = dirty.iter().map(|&(k, e)| (k, bit_value(e))).collect();
        self.commit(now, PartKind::Bit, j, &changes)?;
        for &(k, e) in &dirty {
            self.flash_bit[k as usize] = e;
            self.cbit.clean(k);
        }
        Ok(())
    }

    /// Writes back every dirty CPMT and CBIT entry (a unit at a time).
    pub(crate) fn writeback_all(&mut self, now: Nanos) -> Result<(), FtlError> {
        let mut units: Vec<u32> = self
            .cpmt
            .dirty_keys()
            .into_iter()
            .map(|k| k / self.pmt_per_unit)
            .collect();
        units.dedup();
        for i in units {
            self.writeback_pmt(now, i)?;
        }
        let mut units: Vec<u32> = self
            .cbit
            .dirty_keys()
            .into_iter()
            .map(|k| k / self.bit_per_unit)
            .collect();
        units.dedup();
        for j in units {
            self.writeback_bit(now, j)?;
        }
        Ok(())
    }

    // ----- BSI and the BIT scan -----------------------------------------------------------

    /// Keeps the BSI: a used user block (not the update block) whose count changed enters
    /// it if it has room or beats its worst; a block that is no longer used leaves it.
    pub(crate) fn bsi_note(&mut self, b: u32, e: BitEntry) {
        if let Some(i) = self.bsi.iter().position(|&(x, _)| x == b) {
            if e.state == bst::USED {
                self.bsi[i].1 = e.valid as u32;
            } else {
                self.bsi.swap_remove(i);
            }
            return;
        }
        if e.state != bst::USED || b == self.u || b < self.user_first {
            return;
        }
        let v = e.valid as u32;
        if self.bsi.len() < self.cfg.bsi_entries as usize {
            self.bsi.push((b, v));
        } else if let Some((i, _)) = self
            .bsi
            .iter()
            .enumerate()
            .max_by_key(|(_, &(x, w))| (w, x))
            .filter(|(_, &(_, w))| v < w)
        {
            self.bsi[i] = (b, v);
        }
    }

    /// Reads every BIT unit (charged; the CBIT's entries are newer) and refills the
    /// free-block queue (least worn first) and the BSI (fewest valid pages).
    pub(crate) fn bit_scan(&mut self, now: Nanos) -> Result<(), FtlError> {
        let n = self.s.geo().total_blocks();
        let mut free: Vec<(u32, u32)> = Vec::new();
        let mut cands: Vec<(u32, u32)> = Vec::new();
        let mut buf = vec![0u8; self.unit];
        for j in 0..self.bit_units {
            if self.bid[j as usize] == NONE {
                continue;
            }
            self.read_current(now, PartKind::Bit, j, &mut buf, Cause::Meta)?;
            let lo = j * self.bit_per_unit;
            for k in 0..self.bit_per_unit {
                let b = lo + k;
                if b >= n || b < self.user_first || b == self.u {
                    continue;
                }
                let e = match self.cbit.peek(b) {
                    Some((e, _)) => e,
                    None => decode_bit(&buf, k as usize),
                };
                match e.state {
                    bst::FREE if !self.free_q.contains(&b) => free.push((e.erase, b)),
                    bst::USED if (e.valid as u32) < self.ppb => cands.push((e.valid as u32, b)),
                    _ => {}
                }
            }
        }
        free.sort_unstable();
        for (_, b) in free {
            if self.free_q.len() >= self.cfg.free_queue as usize {
                break;
            }
            self.free_q.push_back(b);
        }
        cands.sort_unstable();
        self.bsi = cands
            .into_iter()
            .take(self.cfg.bsi_entries as usize)
            .map(|(v, b)| (b, v))
            .collect();
        Ok(())
    }
}

/// BIT entry `k` of a unit's bytes.
pub(crate) fn decode_bit(buf: &[u8], k: usize) -> BitEntry {
    let o = k * BIT_ENTRY;
    BitEntry {
        valid: u16::from_le_bytes([buf[o], buf[o + 1]]),
        state: buf[o + 2],
        erase: u32::from_le_bytes(buf[o + 4..o + 8].try_into().expect("4 bytes")),
    }
}

/// Writes BIT entry `k` into a unit's bytes.
pub(crate) fn encode_bit(buf: &mut [u8], k: usize, e: BitEntry) {
    let o = k * BIT_ENTRY;
    buf[o..o + 2].copy_from_slice(&e.valid.to_le_bytes());
    buf[o + 2] = e.state;
    buf[o + 3] = 0;
    buf[o + 4..o + 8].copy_from_slice(&e.erase.to_le_bytes());
}

/// Record tag and byte counter of a unit write into partition `kind`.
pub(crate) fn tag_of(kind: PartKind) -> (MetaTag, Bytes) {
    match kind {
        PartKind::Pmt => (PMT_TAG, Bytes::Pmt),
        PartKind::Bit => (BIT_TAG, Bytes::Bit),
        PartKind::PmtLog => (super::PMT_LOG_TAG, Bytes::Pmt),
        PartKind::BitLog => (super::BIT_LOG_TAG, Bytes::Bit),
        PartKind::Gxt => (GXT_TAG, Bytes::Gxt),
        PartKind::GxtLog => (super::GXT_LOG_TAG, Bytes::Gxt),
    }
}

/// A BIT entry as a log value (its 8 bytes on flash, little-endian).
pub(crate) fn bit_value(e: BitEntry) -> u64 {
    let mut b = [0u8; BIT_ENTRY];
    encode_bit(&mut b, 0, e);
    u64::from_le_bytes(b)
}

/// The BIT entry of a log value.
pub(crate) fn bit_of(v: u64) -> BitEntry {
    decode_bit(&v.to_le_bytes(), 0)
}
