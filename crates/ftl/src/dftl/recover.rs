//! Power-off recovery of the demand-paged kernels (`recover`), in named phases: the
//! metadata blocks' headers, the newest complete GXT and its fields, the metadata units
//! written after it and the partitions' free blocks, the BIT and the victims erased since
//! the GXT, the user update block, and the newest whole writes found there, applied.

use super::gxt::Gxt;
use super::host::field;
use super::meta::{decode_bit, INDEX_BITS};
use super::{
    bst, BitEntry, DftlFtl, MetaMode, PartKind, BIT_LOG_TAG, BIT_TAG, GXT_TAG, NONE, PMT_LOG_TAG,
    PMT_TAG,
};
use crate::recovery::RecoveryReport;
use crate::substrate::{Sense, Sensed};
use crate::{Cause, FtlError};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use controller::{OobRecord, PageKind};
use nand::{BlockStatus, ErrorModel, Nanos, Storage};

impl<S: Storage, M: ErrorModel> DftlFtl<S, M> {
    /// Recovery (see the module docs).
    pub(super) fn recover(&mut self, now: Nanos) -> Result<RecoveryReport, FtlError> {
        let n = self.s.geo().total_blocks();
        let reads0 = self.s.counters_mut().reads[Cause::Mount.index()]
            + self.s.counters_mut().reads[Cause::Meta.index()];
        let mut max_seq = 0u64;
        for b in 0..n {
            self.s.adopt_state(b, crate::substrate::BState::Region);
        }
        // 1. Every metadata block's header; 2. the newest complete GXT.
        let headers = self.read_meta_headers(now)?;
        let mut gxt_damaged = false;
        let NewestGxt {
            gxt,
            seq: gxt_seq,
            newest,
        } = self.newest_gxt(now, &headers, &mut max_seq, &mut gxt_damaged)?;
        let MetaHeaders {
            holds,
            slot_end,
            hdr_part,
        } = headers;
        // 3. The GXT's fields; 4. the units written after it; 4b. the partitions' free
        // blocks.
        self.apply_gxt(&gxt, &hdr_part)?;
        self.scan_meta_after_gxt(now, &slot_end, &mut max_seq)?;
        if gxt_damaged {
            self.moved_on_meta(now, gxt_seq, &holds)?;
        }
        self.rebuild_meta_free(now, &holds)?;
        // 5. The whole BIT; 6. the victims erased since the GXT; 7. the user update block.
        let (bit, bit_stamp) = self.read_bit(now)?;
        let fix = self.victims_erased_since(now, &gxt.victims, &bit)?;
        if gxt_damaged {
            self.moved_on_user(now, gxt_seq, &bit, &fix)?;
        }
        self.refresh_free_from_bit(&bit, &fix);
        let (pages, mut undecodable) = self.scan_user_update_block(now, &mut max_seq)?;
        self.s.seq = self.s.seq.max(max_seq + 1);
        // 8. The newest whole writes; 9. applied, the update block sealed.
        let (changes, damaged) = self.newest_whole_writes(now, &pages)?;
        undecodable += damaged.len() as u64;
        let deltas = self.count_deltas(&pages, &damaged, &bit_stamp);
        let found = Recovered {
            changes,
            deltas,
            damaged,
            undecodable,
        };
        self.apply_recovered(now, &pages, &found, &fix)?;
        // 10. SPFTL_log: a whole GXT, the base of the GXT logs to come.
        if self.mode == MetaMode::Log {
            self.gxt_base = None;
            self.write_gxt(now)?;
        }
        // 11. The simulator's records of what the flash holds (raw, uncharged).
        self.rebuild_shadows()?;
        for b in 0..self.user_first {
            self.s.keep_whole(b);
        }
        let c = &self.s.counters_mut();
        let reads = c.reads[Cause::Mount.index()] + c.reads[Cause::Meta.index()] - reads0;
        let (_, time) = self.s.recovery_time(&[Cause::Mount, Cause::Meta]);
        Ok(RecoveryReport {
            procedure: String::from("gxt+update-blocks"),
            checkpoint_gen: newest.map_or(0, |f| f.0),
            checkpoint_pages: newest.map_or(0, |f| f.1 as u64),
            blocks_scanned: 1,
            pages_scanned: pages.len() as u64 + undecodable,
            pages_read: reads,
            time,
            mapped_pages: self.truth.iter().filter(|&&p| p != NONE).count() as u64,
        })
    }

    /// Mount phase 3: the GXT's fields — the partitions' directories, the user update
    /// block, the free queue and counts, the SP blocks' partitions (the headers' where an
    /// SP block says), each partition's update block and write pointer. Errors if the GXT
    /// names a block that cannot be.
    fn apply_gxt(&mut self, gxt: &Gxt, hdr_part: &[Option<u8>]) -> Result<(), FtlError> {
        let n = self.s.geo().total_blocks();
        let slots = self.slots();
        for (k, local) in [
            (PartKind::Pmt, &gxt.pmd),
            (PartKind::Bit, &gxt.bid),
            (PartKind::PmtLog, &gxt.plid),
            (PartKind::BitLog, &gxt.blid),
        ] {
            let dir = local.iter().map(|&l| self.local_to_global(k, l)).collect();
            *self.dir_mut(k) = dir;
        }
        let valid_block = |b: u32| b == NONE || b < n;
        if !(valid_block(gxt.u)
            && gxt.victims.iter().all(|&v| valid_block(v))
            && gxt.u != NONE
            && gxt.u >= self.user_first)
        {
            return Err(FtlError::Corrupt(
                "the GXT names an impossible update block",
            ));
        }
        self.u = gxt.u;
        self.free_total = gxt.free_total;
        self.drift = gxt.drift as u64;
        self.free_q = gxt
            .free_q
            .iter()
            .copied()
            .filter(|&b| b < n && b >= self.user_first)
            .collect();
        self.bsi = gxt
            .bsi
            .iter()
            .copied()
            .filter(|&(b, _)| b < n && b >= self.user_first)
            .collect();
        self.sp_part[..self.user_first as usize].copy_from_slice(&gxt.sp_part);
        for (b, k) in hdr_part.iter().enumerate() {
            if let Some(k) = k {
                self.sp_part[b] = *k;
            }
        }
        for (k, upd, wp) in [
            (PartKind::Pmt, gxt.pmt_upd, gxt.pmt_wp),
            (PartKind::Bit, gxt.bit_upd, gxt.bit_wp),
            (PartKind::PmtLog, gxt.plog_upd, gxt.plog_wp),
            (PartKind::BitLog, gxt.blog_upd, gxt.blog_wp),
        ] {
            let p = &mut self.parts[k as usize];
            if upd != NONE && !p.contains(upd) {
                return Err(FtlError::Corrupt(
                    "the GXT names an update block outside its partition",
                ));
            }
            p.upd = upd;
            p.wp = wp.min(slots);
        }
        Ok(())
    }

    /// Mount phase 4: the units (and SPFTL_log's logs) written after the GXT in each
    /// partition's update block, up to the chip's write pointer, taken into the
    /// directories; with SPFTL_log, a unit newer than its log unlinks the log.
    fn scan_meta_after_gxt(
        &mut self,
        now: Nanos,
        slot_end: &[u32],
        max_seq: &mut u64,
    ) -> Result<(), FtlError> {
        let slots = self.slots();
        let mut scanned: [BTreeMap<u32, u64>; 4] = Default::default();
        for (n, (k, tag)) in [
            (PartKind::Pmt, PMT_TAG),
            (PartKind::Bit, BIT_TAG),
            (PartKind::PmtLog, PMT_LOG_TAG),
            (PartKind::BitLog, BIT_LOG_TAG),
        ]
        .into_iter()
        .enumerate()
        {
            let (upd, wp) = (self.parts[k as usize].upd, self.parts[k as usize].wp);
            if upd == NONE {
                continue;
            }
            let end = slot_end[upd as usize].max(wp);
            let mut whole = vec![0u8; self.unit_len(upd)];
            for slot in wp..end {
                let a = upd * slots + slot;
                // Whole units: a torn one may keep its record.
                let mut failed = false;
                let r = self.read_unit(now, a, &mut whole, Cause::Mount, Some(&mut failed))?;
                let Some(r) = r.filter(|r| r.kind == PageKind::Meta(tag)) else {
                    continue;
                };
                *max_seq = (*max_seq).max(r.seq);
                let i = (r.lpn & ((1 << INDEX_BITS) - 1)) as usize;
                let dir = self.dir_mut(k);
                if i < dir.len() {
                    dir[i] = a;
                    scanned[n].insert(i as u32, r.lpn >> INDEX_BITS);
                }
            }
            self.parts[k as usize].wp = end;
        }
        // SPFTL_log: a unit written after the GXT with a newer stamp than its log merged it.
        if self.mode == MetaMode::Log {
            for (n, k) in [(0, PartKind::Pmt), (1, PartKind::Bit)] {
                let lk = super::log::log_kind(k);
                for (&i, &su) in &scanned[n] {
                    if self.dir(lk)[i as usize] == NONE {
                        continue;
                    }
                    let sl = match scanned[n + 2].get(&i) {
                        Some(&s) => s,
                        None => self.stamp_at(now, self.dir(lk)[i as usize])?,
                    };
                    if su > sl {
                        self.dir_mut(lk)[i as usize] = NONE;
                    }
                }
            }
        }
        Ok(())
    }

    /// Mount phase 4b: each metadata partition's free blocks — those holding no live unit,
    /// erased if they hold anything — and, where a cut left a partition none, a collection
    /// into its update block now.
    fn rebuild_meta_free(&mut self, now: Nanos, holds: &[bool]) -> Result<(), FtlError> {
        let slots = self.slots();
        let kinds = [
            PartKind::Pmt,
            PartKind::Bit,
            PartKind::PmtLog,
            PartKind::BitLog,
        ];
        for k in kinds {
            let live = self.live_units(k);
            let p = self.parts[k as usize].clone();
            let mut free = alloc::collections::VecDeque::new();
            for i in 0..p.len {
                let b = p.first + i;
                if p.bad[i as usize] || b == p.upd || live[i as usize] > 0 {
                    continue;
                }
                if holds[b as usize] && !self.erase_meta(now, b, Cause::Mount)? {
                    continue;
                }
                free.push_back(b);
            }
            self.parts[k as usize].free = free;
        }
        // A cut between taking a partition's last free block and collecting a victim
        // into it leaves none: collect now (the update block has the room).
        for k in kinds {
            let p = &self.parts[k as usize];
            if p.free.is_empty() && p.upd != NONE && p.wp < slots {
                self.meta_gc(now, k)?;
            }
        }
        Ok(())
    }

    /// Mount phase 5: the whole BIT (each user block's erase count, state and valid
    /// count; each unit's stamp), its erase counts and bad marks taken.
    fn read_bit(&mut self, now: Nanos) -> Result<(Vec<BitEntry>, Vec<u64>), FtlError> {
        let n = self.s.geo().total_blocks();
        let mut bit = vec![BitEntry::default(); n as usize];
        let mut bit_stamp = vec![0u64; self.bit_units as usize];
        let mut buf = vec![0u8; self.unit];
        for j in 0..self.bit_units {
            if self.bid[j as usize] == NONE {
                continue;
            }
            bit_stamp[j as usize] =
                self.read_current(now, PartKind::Bit, j, &mut buf, Cause::Mount)?;
            for k in 0..self.bit_per_unit {
                let b = j * self.bit_per_unit + k;
                if b < n {
                    bit[b as usize] = decode_bit(&buf, k as usize);
                }
            }
        }
        // A unit that decodes can still hold what no write put there (a damaged image):
        // a user block's entry must name a user block's state and at most a block of
        // valid pages, or the volume is refused rather than mounted on it.
        for e in &bit[self.user_first as usize..] {
            if !matches!(e.state, bst::FREE | bst::USED | bst::BAD) || e.valid as u32 > self.ppb {
                return Err(FtlError::Corrupt("a BIT entry names no user block's state"));
            }
        }
        self.flash_bit.clone_from(&bit);
        for b in self.user_first..n {
            self.s.adopt_erase_count(b, bit[b as usize].erase);
            if bit[b as usize].state == bst::BAD {
                self.s.adopt_state(b, crate::substrate::BState::Bad);
            }
        }
        Ok((bit, bit_stamp))
    }

    /// Mount phase 6: the GXT's victims erased after it (the chip counts more erases than
    /// the BIT): their corrected BIT entries, each put back in the free queue if it has
    /// room, and out of the collection candidates.
    fn victims_erased_since(
        &mut self,
        now: Nanos,
        victims: &[u32],
        bit: &[BitEntry],
    ) -> Result<BTreeMap<u32, BitEntry>, FtlError> {
        let mut fix: BTreeMap<u32, BitEntry> = BTreeMap::new();
        for &v in victims {
            if v == NONE || v < self.user_first {
                continue;
            }
            let info = self.s.read_header(now, v, Cause::Mount)?;
            if info.erase_count > bit[v as usize].erase || info.status != BlockStatus::Good {
                let e = BitEntry {
                    valid: 0,
                    state: if info.status == BlockStatus::Good {
                        bst::FREE
                    } else {
                        bst::BAD
                    },
                    erase: info.erase_count,
                };
                self.s.adopt_erase_count(v, info.erase_count);
                if e.state == bst::FREE
                    && self.free_q.len() < self.cfg.free_queue as usize
                    && !self.free_q.contains(&v)
                {
                    self.free_q.push_back(v);
                }
                self.bsi.retain(|&(x, _)| x != v);
                fix.insert(v, e);
            }
        }
        Ok(fix)
    }

    /// The free-block count, the free queue and the collection candidates, from the BIT
    /// itself with `fix` applied (the GXT's may be one behind or ahead of a victim's erase).
    fn refresh_free_from_bit(&mut self, bit: &[BitEntry], fix: &BTreeMap<u32, BitEntry>) {
        let n = self.s.geo().total_blocks();
        self.free_total = (self.user_first..n)
            .filter(|&b| {
                fix.get(&b).map_or(bit[b as usize].state, |e| e.state) == bst::FREE && b != self.u
            })
            .count() as u32;
        let fq: Vec<u32> = self.free_q.iter().copied().collect();
        self.free_q = fq
            .into_iter()
            .filter(|&b| {
                fix.get(&b).map_or(bit[b as usize].state, |e| e.state) == bst::FREE && b != self.u
            })
            .collect();
        let cands: Vec<(u32, u32)> = self.bsi.clone();
        self.bsi = cands
            .into_iter()
            .filter(|&(b, _)| {
                fix.get(&b).map_or(bit[b as usize].state, |e| e.state) == bst::USED && b != self.u
            })
            .collect();
    }

    /// Mount phase 7: the user update block's pages from its first to its write pointer
    /// (`Substrate::write_pointer`, read from the top: a torn page the kernel passed over
    /// may leave an erased-looking page below it): the records that decode, and how many
    /// do not.
    fn scan_user_update_block(
        &mut self,
        now: Nanos,
        max_seq: &mut u64,
    ) -> Result<(Vec<(u32, OobRecord)>, u64), FtlError> {
        let u = self.u;
        let mut pages: Vec<(u32, OobRecord)> = Vec::new();
        let mut undecodable = 0u64;
        let info = self.s.read_header(now, u, Cause::Mount)?;
        let ppb = self.ppb;
        self.u_wp = self
            .s
            .write_pointer(now, u, &info, ppb, |i| i, Cause::Mount)?;
        for q in 0..self.u_wp {
            let p = u * self.ppb + q;
            let (rec, erased) = self.page_record(now, p, Cause::Mount)?;
            if erased {
                continue; // torn to all ones
            }
            match rec {
                Some(r) => {
                    *max_seq = (*max_seq).max(r.seq);
                    self.u_data[q as usize] = r.kind != PageKind::Meta(super::PAD_TAG);
                    pages.push((p, r));
                }
                None => undecodable += 1,
            }
        }
        Ok((pages, undecodable))
    }

    /// Mount phase 8: which scanned writes are newer than what the PMT units hold. For each
    /// logical page the newest such write whose page reads back whole wins (a lower page a
    /// cut upper-page program damaged, or a page a cut tore, may keep a decodable record:
    /// it is read whole before the map takes it; one that fails is damaged — its write
    /// never happened — and the next older one is tried). Returns the map changes and the
    /// damaged pages.
    fn newest_whole_writes(
        &mut self,
        now: Nanos,
        pages: &[(u32, OobRecord)],
    ) -> Result<(BTreeMap<u32, u32>, BTreeSet<u32>), FtlError> {
        let u = self.u;
        let mut pmt_stamp: BTreeMap<u32, u64> = BTreeMap::new();
        let mut by_lpn: BTreeMap<u32, Vec<(u32, OobRecord)>> = BTreeMap::new();
        for &(p, r) in pages {
            let tomb = r.kind == PageKind::Meta(super::TOMB_TAG);
            if r.kind.data_class().is_none() && !tomb {
                continue; // padding
            }
            let l = (r.lpn & field::LPN) as u32;
            if l < self.lpns {
                by_lpn.entry(l).or_default().push((p, r));
            }
        }
        let mut changes: BTreeMap<u32, u32> = BTreeMap::new();
        let mut damaged: BTreeSet<u32> = BTreeSet::new();
        let mut data = vec![
            0u8;
            if self.s.digest {
                0
            } else {
                self.s.geo().page_size as usize
            }
        ];
        for (&l, list) in &by_lpn {
            let i = l / self.pmt_per_unit;
            let stamp = match pmt_stamp.get(&i) {
                Some(&s) => s,
                None => {
                    let a = if self.has_log(PartKind::Pmt, i) {
                        self.plid[i as usize]
                    } else {
                        self.pmd[i as usize]
                    };
                    let s = if a == NONE { 0 } else { self.stamp_at(now, a)? };
                    pmt_stamp.insert(i, s);
                    s
                }
            };
            for &(p, r) in list.iter().rev() {
                if r.seq < stamp {
                    break;
                }
                if r.kind == PageKind::Meta(super::TOMB_TAG) {
                    changes.insert(l, NONE);
                    break;
                }
                debug_assert_eq!(self.s.block_of(p), u, "page {p} of update block {u}");
                let (found, _) = self.s.sense(now, p, Sense::Page(&mut data), Cause::Mount)?;
                if let Sensed::Data(_) = found {
                    changes.insert(l, p);
                    break;
                }
                damaged.insert(p);
                self.u_data[(p % self.ppb) as usize] = false;
            }
        }
        Ok((changes, damaged))
    }

    /// The valid-count changes the scanned writes make to the blocks of their old pages,
    /// where the BIT unit holding that block is older than the write.
    fn count_deltas(
        &self,
        pages: &[(u32, OobRecord)],
        damaged: &BTreeSet<u32>,
        bit_stamp: &[u64],
    ) -> BTreeMap<u32, i32> {
        let (n, u) = (self.s.geo().total_blocks(), self.u);
        let mut deltas: BTreeMap<u32, i32> = BTreeMap::new();
        for &(p, r) in pages {
            let tomb = r.kind == PageKind::Meta(super::TOMB_TAG);
            if (r.kind.data_class().is_none() && !tomb) || damaged.contains(&p) {
                continue;
            }
            let old = field::old(r.lpn);
            if old != NONE && old / self.ppb != u && old / self.ppb < n {
                let ob = old / self.ppb;
                if r.seq >= bit_stamp[(ob / self.bit_per_unit) as usize] {
                    *deltas.entry(ob).or_default() -= 1;
                }
            }
        }
        deltas
    }

    /// Mount phase 9: the update block sealed, then the recovered state applied — the map
    /// changes, the valid-count deltas, the victims' fixes and the update block's own
    /// count — and, if a page of it did not decode, the block closed.
    fn apply_recovered(
        &mut self,
        now: Nanos,
        pages: &[(u32, OobRecord)],
        found: &Recovered,
        fix: &BTreeMap<u32, BitEntry>,
    ) -> Result<(), FtlError> {
        let u = self.u;
        let Recovered {
            changes,
            deltas,
            damaged,
            undecodable,
        } = found;
        let undecodable = *undecodable;
        self.seal(now)?;
        for (&l, &p) in changes {
            self.pmt_get(now, l)?;
            self.pmt_set(now, l, p)?;
        }
        for (&b, &d) in deltas {
            if fix.contains_key(&b) {
                continue;
            }
            self.bit_add(now, b, d)?;
        }
        for (&b, &e) in fix {
            self.bit_set(now, b, e)?;
        }
        // The update block's own count, recounted.
        let mut count = 0u16;
        for &(p, r) in pages {
            if r.kind.data_class().is_none() || damaged.contains(&p) {
                continue;
            }
            let l = (r.lpn & field::LPN) as u32;
            if l < self.lpns && self.pmt_get(now, l)? == p {
                count += 1;
            }
        }
        let mut e = self.bit_get(now, u)?;
        e.valid = count;
        e.state = bst::USED;
        self.bit_set(now, u, e)?;
        self.drift += undecodable;
        // A lower page lost to the cut stays in this block: close it (its changes written
        // back, the GXT naming a new update block), so that no later mount scans it and
        // takes a damaged page whose record survived for data.
        if undecodable > 0 {
            self.switch(now)?;
        }
        Ok(())
    }

    /// Mount phase 1: every metadata block's header (charged reads) — erase count, bad,
    /// whether it holds data, the slots below the chip's write pointer (a unit torn to
    /// all ones reads as erased, and scans must not go past it), and an SP block's
    /// subpage partition.
    fn read_meta_headers(&mut self, now: Nanos) -> Result<MetaHeaders, FtlError> {
        let mut holds = vec![false; self.user_first as usize];
        // Per metadata block: the slots below the chip's write pointer (the header says
        // where it is: a unit torn to all ones reads as erased, and scans go past it).
        let mut slot_end = vec![0u32; self.user_first as usize];
        let mut hdr_part: Vec<Option<u8>> = vec![None; self.user_first as usize];
        for b in 0..self.user_first {
            let info = self.s.read_header(now, b, Cause::Mount)?;
            self.s.adopt_erase_count(b, info.erase_count);
            if info.status != BlockStatus::Good {
                self.mark_meta_bad(b);
            }
            holds[b as usize] = info.holds_data();
            if info.status == BlockStatus::Good {
                let lsb = core::mem::take(&mut self.lsb);
                let end = self.s.write_pointer(
                    now,
                    b,
                    &info,
                    lsb.len() as u32,
                    |i| lsb[i as usize],
                    Cause::Mount,
                );
                self.lsb = lsb;
                slot_end[b as usize] = end?;
            }
            // An SP block in use says which subpage partition it uses.
            if let nand::Usage::Subpage(k) = info.usage {
                hdr_part[b as usize] = Some(k);
                self.sp_part[b as usize] = k;
            }
        }
        Ok(MetaHeaders {
            holds,
            slot_end,
            hdr_part,
        })
    }

    /// The whole runs of GXT parts in the GXT partition, newest first — (sequence number
    /// of the last part, block, first slot, parts) — and where each block's units end. A
    /// GXT unit that does not decode (torn by a cut, or worn) sets `damaged`: the mount then
    /// checks that nothing was written after the GXT it uses (see `moved_on_meta`).
    fn gxt_runs(
        &mut self,
        now: Nanos,
        h: &MetaHeaders,
        max_seq: &mut u64,
        damaged: &mut bool,
    ) -> Result<(Vec<GxtRun>, BTreeMap<u32, u32>), FtlError> {
        let (holds, slot_end) = (&h.holds, &h.slot_end);
        let slots = self.slots();
        let g = self.parts[PartKind::Gxt as usize].clone();
        let mut found: Vec<GxtRun> = Vec::new();
        let mut gxt_end: BTreeMap<u32, u32> = BTreeMap::new();
        for b in g.first..g.first + g.len {
            if g.bad[(b - g.first) as usize] || !holds[b as usize] {
                continue;
            }
            let mut run: Vec<Option<OobRecord>> = Vec::new();
            let end = slot_end[b as usize];
            for slot in 0..end {
                let mut failed = false;
                let r = self.unit_record(now, b * slots + slot, Cause::Mount, &mut failed)?;
                *damaged |= failed;
                run.push(r.filter(|r| r.kind == PageKind::Meta(GXT_TAG)));
            }
            gxt_end.insert(b, end);
            for (i, r) in run.iter().enumerate() {
                let Some(r) = r else { continue };
                *max_seq = (*max_seq).max(r.seq);
                let (part, parts) = ((r.lpn & 0xFF) as usize, ((r.lpn >> 8) & 0xFF) as usize);
                if parts == 0 || part + 1 != parts || i + 1 < parts {
                    continue;
                }
                let first = i + 1 - parts;
                let whole = (0..parts).all(|k| {
                    run[first + k].is_some_and(|x| {
                        (x.lpn & 0xFF) as usize == k
                            && ((x.lpn >> 8) & 0xFF) as usize == parts
                            && x.seq + (parts - k) as u64 == r.seq + 1
                    })
                });
                if whole {
                    found.push((r.seq, b, first as u32, parts as u32));
                }
            }
        }
        found.sort_unstable_by(|a, b| b.cmp(a));
        Ok((found, gxt_end))
    }

    /// Mount phase 2: the newest complete GXT — every GXT unit's record in the GXT
    /// partition, the whole runs of parts found newest first, the first that reads and
    /// decodes (with SPFTL_log, its logs applied). A unit that does not decode sets
    /// `damaged` (the mount then checks that nothing was written after the GXT it uses).
    fn newest_gxt(
        &mut self,
        now: Nanos,
        h: &MetaHeaders,
        max_seq: &mut u64,
        damaged: &mut bool,
    ) -> Result<NewestGxt, FtlError> {
        let slots = self.slots();
        let (found, gxt_end) = self.gxt_runs(now, h, max_seq, damaged)?;

        let mut gxt = None;
        let mut gxt_seq = 0;
        for &(seq, b, first, parts) in &found {
            let mut bytes = Vec::with_capacity(parts as usize * self.unit);
            let mut buf = vec![0u8; self.unit];
            let mut ok = true;
            for k in 0..parts {
                let mut failed = false;
                if self
                    .read_unit(
                        now,
                        b * slots + first + k,
                        &mut buf,
                        Cause::Mount,
                        Some(&mut failed),
                    )?
                    .is_none()
                {
                    ok = false;
                    break;
                }
                bytes.extend_from_slice(&buf);
            }
            if !ok {
                *damaged = true;
                continue;
            }
            if let Some(v) = super::gxt::other_version(&bytes) {
                return Err(FtlError::UnknownFormat {
                    what: "GXT",
                    version: v as u32,
                    newest: super::gxt::GXT_VERSION as u32,
                });
            }
            if let Some(x) = Gxt::decode(
                &bytes,
                &self.shape(),
                &self.cfg,
                self.s.controller().crc32c_fn(),
            ) {
                self.parts[PartKind::Gxt as usize].upd = b;
                self.parts[PartKind::Gxt as usize].wp = gxt_end.get(&b).copied().unwrap_or(slots);
                gxt_seq = seq;
                gxt = Some(if self.mode == MetaMode::Log {
                    let (x, s) =
                        self.apply_gxt_log(now, seq, x, (&h.holds, &h.slot_end), max_seq, damaged)?;
                    gxt_seq = s;
                    x
                } else {
                    x
                });
                break;
            }
            *damaged = true;
        }
        let Some(gxt) = gxt else {
            return Err(FtlError::Corrupt(
                "no readable GXT: not a DFTL_por/SPFTL volume of this configuration",
            ));
        };
        if gxt.mode != self.mode as u8 {
            return Err(FtlError::Corrupt(
                "the volume was formatted with another metadata writer (DFTL_por vs SPFTL)",
            ));
        }
        Ok(NewestGxt {
            gxt,
            seq: gxt_seq,
            newest: found.first().map(|f| (f.0, f.3)),
        })
    }
}

/// What the metadata blocks' headers say (mount phase 1), per metadata block.
struct MetaHeaders {
    /// It holds data (written, or an erase was interrupted).
    holds: Vec<bool>,
    /// Its slots below the chip's write pointer.
    slot_end: Vec<u32>,
    /// An SP block's subpage partition.
    hdr_part: Vec<Option<u8>>,
}

/// The GXT a mount starts from (mount phase 2).
struct NewestGxt {
    gxt: Gxt,
    /// Its sequence number (with SPFTL_log, its newest log's).
    seq: u64,
    /// The newest whole run of GXT parts found: (sequence number, parts).
    newest: Option<(u64, u32)>,
}

/// What a mount found newer than the metadata units (mount phase 8), to apply.
struct Recovered {
    /// Logical page → its newest whole page (`NONE`: trimmed).
    changes: BTreeMap<u32, u32>,
    /// Block → the change to its valid count.
    deltas: BTreeMap<u32, i32>,
    /// Pages whose record decodes but whose data does not: writes that never completed.
    damaged: BTreeSet<u32>,
    /// Pages of the update block that did not decode, the damaged ones included.
    undecodable: u64,
}

/// A whole run of GXT parts in a block: (sequence number of its last part, block, first
/// slot, parts).
type GxtRun = (u64, u32, u32, u32);
