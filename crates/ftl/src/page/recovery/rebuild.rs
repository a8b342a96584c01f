//! The rebuild both procedures share: the checkpoint loaded, block headers and block scans,
//! versions applied by sequence number, replicas reinstalled, the pages at each cut point
//! verified, and the kernel's state finished from what was found.

use super::{Found, Rebuild, Rebuildable, RecoveryReport, SEQ_LIMIT};
use crate::page::snapshot::code;
use crate::page::{INVALID, LOST};
use crate::substrate::Header;
use crate::substrate::{BState, Sense, Sensed};
use crate::{Cause, FtlError};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec;
use alloc::vec::Vec;
use controller::PageKind;
use core::cmp::Reverse;
use nand::{BlockStatus, Nanos};

impl Rebuild {
    pub(super) fn start<K: Rebuildable>(ftl: &mut K, now: Nanos) -> Result<Self, FtlError> {
        // Block modes are learnt from the headers recovery reads; the rest are set when
        // a block is next opened.
        ftl.sub_mut().slc.fill(None);
        let Some((snap, trims)) = ftl.load_checkpoint(now)? else {
            return Err(FtlError::Corrupt(
                "no valid checkpoint in the region: not a formatted nandlab volume",
            ));
        };
        let checkpoint_pages = ftl.sub().log().ops.len() as u64;
        if snap.logical == 0 || snap.logical >= ftl.sub_mut().geo().total_pages() {
            return Err(FtlError::Corrupt("checkpoint volume size out of range"));
        }
        if snap.erase.len() != ftl.sub_mut().state.len()
            || snap.frontiers.len() != ftl.sub_mut().dies.len()
        {
            return Err(FtlError::Corrupt("checkpoint does not match the geometry"));
        }
        // Blocks in use at the checkpoint in SLC mode (the flush buffer's): known without
        // a header read (a block erased and reopened since has its header read anyway).
        for (b, &slc) in snap.slc.iter().enumerate() {
            if slc
                && !ftl.sub().state[b].reserved()
                && matches!(snap.states[b], code::FULL | code::OPEN | code::RETIRING)
            {
                ftl.sub_mut().slc[b] = Some(true);
            }
        }
        // Region blocks the checkpoint knows as bad stay bad.
        for (b, &st) in snap.states.iter().enumerate() {
            if ftl.sub_mut().state[b].reserved() && st == code::BAD {
                ftl.sub_mut().adopt_state(b as u32, BState::Bad);
            }
        }
        ftl.resize(snap.logical)?;
        let logical = ftl.logical() as usize;
        if snap.l2p.len() != logical {
            return Err(FtlError::Corrupt("checkpoint map size mismatch"));
        }
        let max_seq = snap.seq.max(
            trims
                .iter()
                .map(|t| t.seq.saturating_add(1))
                .max()
                .unwrap_or(0),
        );
        let page = vec![
            0u8;
            if ftl.sub_mut().digest {
                0
            } else {
                ftl.sub_mut().geo().page_size as usize
            }
        ];
        let left_region = snap
            .states
            .iter()
            .enumerate()
            .filter(|&(b, &st)| st == code::REGION && !ftl.sub().state[b].reserved())
            .map(|(b, _)| b as u32)
            .collect();
        Ok(Rebuild {
            left_region,
            trims,
            best: vec![0; logical],
            max_seq,
            snap,
            scanned: BTreeSet::new(),
            free: BTreeSet::new(),
            kept_free: BTreeSet::new(),
            full: BTreeSet::new(),
            emptied: Vec::new(),
            checkpoint_pages,
            pages_scanned: 0,
            page,
            partial: Vec::new(),
            young: BTreeSet::new(),
            headers: BTreeMap::new(),
            versions: BTreeMap::new(),
            replicas: Vec::new(),
            full_scan: false,
            now,
        })
    }

    /// Block `b`'s header (bad-block marker, erase counter): read from the chip once, as a
    /// charged read, then remembered.
    pub(super) fn header<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
    ) -> Result<Header, FtlError> {
        if let Some(h) = self.headers.get(&b) {
            return Ok(*h);
        }
        let h = ftl.sub_mut().read_header(now, b, Cause::Mount)?;
        if !ftl.sub().state[b as usize].reserved() {
            ftl.sub_mut().slc[b as usize] = Some(h.slc_mode && ftl.sub().window > 0);
        }
        // A block leaves the factory bad or good, never turns factory-bad later: a record
        // saying so of a block the checkpoint has in use (free, open, full, retiring) is a
        // damaged block table. Both procedures report it rather than skip the block (a full
        // scan would otherwise serve older versions of its pages, or zeros).
        let in_use = matches!(
            self.snap.states.get(b as usize),
            Some(&(code::FREE | code::FULL | code::OPEN | code::RETIRING))
        );
        if h.status == BlockStatus::FactoryBad && in_use {
            return Err(FtlError::Corrupt(
                "a block the checkpoint has in use is recorded factory-bad: the block table is damaged",
            ));
        }
        self.headers.insert(b, h);
        Ok(h)
    }

    /// Applies the trim log's records newer than the snapshot: every page of a record's
    /// range (clipped to the volume) unmapped at its sequence number. A trim sets no replica version: a page it
    /// leaves unmapped has no replicas, and a page written after it carries the newer
    /// number of that write.
    pub(super) fn apply_trims<K: Rebuildable>(&mut self, ftl: &mut K) -> Result<(), FtlError> {
        let trims = core::mem::take(&mut self.trims);
        let logical = ftl.logical();
        for t in &trims {
            if t.seq < self.snap.seq {
                // Older than the snapshot, which reflects it (a data page it would unmap
                // may be a newer write the snapshot maps without a sequence number).
                continue;
            }
            for lpn in t.first as u64..t.end().min(logical) {
                self.apply(ftl, lpn, INVALID, t.seq, false)?;
            }
        }
        self.trims = trims;
        Ok(())
    }

    /// Makes `phys` (or INVALID for a trim) the mapping of `lpn` if `seq` is newer, with
    /// the class its record carries.
    pub(super) fn apply<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        lpn: u64,
        phys: u32,
        seq: u64,
        critical: bool,
    ) -> Result<(), FtlError> {
        let i = lpn as usize;
        if seq <= self.best[i] {
            return Ok(());
        }
        self.best[i] = seq;
        let old = ftl.entry(lpn);
        if old != INVALID && old != LOST {
            let ob = (old / ftl.sub_mut().ppb()) as usize;
            ftl.sub_mut().adopt_valid(ob as u32, false);
            if ftl.sub_mut().valid[ob] == 0 {
                self.emptied.push(ob as u32);
            }
        }
        ftl.set_entry(self.now, lpn, phys)?;
        ftl.set_critical(lpn, critical);
        if phys != INVALID {
            let ppb = ftl.sub().ppb();
            ftl.sub_mut().adopt_valid(phys / ppb, true);
        }
        Ok(())
    }

    /// Reads block `b` from page `from` up to its first erased page, applying every data
    /// record with sequence number ≥ `min_seq`. Returns the first erased page (the write
    /// point; `ppb` if none).
    pub(super) fn scan_block<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
        from: u32,
        min_seq: u64,
    ) -> Result<u32, FtlError> {
        self.scanned.insert(b);
        let ppb = ftl.sub().ppb();
        let read = self.read_records(ftl, now, b, from, min_seq)?;
        let wp = read.wp;
        if wp > 0 || from > 0 {
            self.full.insert(b);
        }
        let clean = self.apply_found(ftl, now, b, wp, read.found)? && read.clean;
        self.partial.retain(|x| x.0 != b);
        if wp > from && wp < ppb && clean {
            self.partial.push((b, wp, read.seqs));
        }
        Ok(wp)
    }

    /// The records of block `b` from page `from` to its first erased page (the write
    /// point): those with sequence number ≥ `min_seq` that name a logical page.
    fn read_records<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
        from: u32,
        min_seq: u64,
    ) -> Result<BlockRecords, FtlError> {
        let ppb = ftl.sub().ppb();
        // An SLC-mode block (the flush buffer) holds its LSB pages only: the others are
        // skipped, and its write point is its first erased LSB page. The header says which
        // (read once, charged, and already read on every path that scans a block).
        let slc = self.header(ftl, now, b)?.slc_mode && ftl.sub().window > 0;
        let mut out = BlockRecords {
            found: Vec::new(),
            seqs: vec![0; ppb as usize],
            wp: ppb,
            clean: true,
        };
        for p in from..ppb {
            if slc && ftl.sub().next_lsb[p as usize] != p {
                continue;
            }
            self.pages_scanned += 1;
            match ftl
                .sub_mut()
                .sense_in(now, b, p, Sense::Record, Cause::Mount)?
                .0
            {
                Sensed::Data(ri) => {
                    let rec = ri.record;
                    self.max_seq = self.max_seq.max(rec.seq.saturating_add(1));
                    out.seqs[p as usize] = rec.seq;
                    if rec.seq >= self.snap.seq {
                        self.young.insert(b);
                    }
                    if rec.seq >= min_seq {
                        out.found.extend(Found::of(p, &rec, ftl.logical()));
                    }
                }
                Sensed::Erased => {
                    out.wp = p;
                    break;
                }
                // A torn or scrambled page holds nothing; later pages may (its read is
                // charged like any other). It makes the block unfit to resume: a later
                // roll-forward would no longer see it at the write point.
                Sensed::Failed => out.clean = false,
            }
        }
        Ok(out)
    }

    /// Applies the records `found` in block `b` (write point `wp`): each newer version
    /// wins its logical page; replicas are kept for later. Pages at the write point are
    /// read in full whether or not they win (a damaged one rules out resuming the block:
    /// `false`).
    fn apply_found<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
        wp: u32,
        found: Vec<Found>,
    ) -> Result<bool, FtlError> {
        let ppb = ftl.sub().ppb();
        let tail = wp.saturating_sub(ftl.sub().window + 1);
        let mut clean = true;
        for f in found {
            let p = f.page;
            #[cfg(feature = "sabotage")]
            let p_checked =
                p >= tail && ftl.sub().cfg.sabotage != crate::sabotage::Sabotage::NoTornCheck;
            #[cfg(not(feature = "sabotage"))]
            let p_checked = p >= tail;
            if p_checked && !self.verify(ftl, now, b, p)? {
                clean = false;
                continue;
            }
            if let Some(version) = f.replica_of {
                self.replicas
                    .push((b * ppb + p, f.lpn as u32, version, f.seq));
                continue;
            }
            if f.user && f.seq >= self.snap.seq {
                // A host write since the checkpoint: the version replicas must copy.
                let v = self.versions.entry(f.lpn as u32).or_insert(0);
                *v = (*v).max(f.seq);
            }
            if f.seq > self.best[f.lpn as usize] {
                self.apply(ftl, f.lpn, b * ppb + p, f.seq, f.critical)?;
            }
        }
        Ok(clean)
    }

    /// Meta-Cure's replica sets after the map is final (see the `replica` module): for each
    /// mapped critical page, the replicas of the version it ends up with — records found
    /// by the scans whose version matches, and (roll-forward) the checkpoint's replicas
    /// whose block was not erased since — newest first, at most the configured number.
    pub(super) fn install_replicas<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
    ) -> Result<(), FtlError> {
        let limit = ftl.replica_limit();
        let snap_sets = core::mem::take(&mut self.snap.replicas);
        let mut lpns: BTreeSet<u32> = self.replicas.iter().map(|r| r.1).collect();
        lpns.extend(snap_sets.keys().copied());
        for l in lpns {
            let lpn = l as u64;
            let primary = ftl.entry(lpn);
            if lpn >= ftl.logical() || primary == INVALID || primary == LOST || !ftl.critical(lpn) {
                continue;
            }
            // The version the map ends up with.
            let version = match (self.versions.get(&l), snap_sets.get(&l)) {
                (Some(&v), _) => v,
                (None, Some(set)) => set.version,
                (None, None) => continue,
            };
            let tag = version as u32;
            let mut pages: Vec<(u64, u32)> = self
                .replicas
                .iter()
                .filter(|&&(_, rl, t, _)| rl == l && t == tag)
                .map(|&(p, _, _, seq)| (seq, p))
                .collect();
            if !self.full_scan {
                if let Some(set) = snap_sets.get(&l).filter(|s| s.version == version) {
                    for &p in &set.pages {
                        if !ftl.entry_ok(p) || p == INVALID || p == LOST {
                            continue;
                        }
                        let b = p / ftl.sub().ppb();
                        if self.headers.contains_key(&b) || self.scanned.contains(&b) {
                            let h = self.header(ftl, now, b)?;
                            if h.erase_count != self.snap.erase[b as usize] {
                                continue;
                            }
                        }
                        pages.push((0, p));
                    }
                }
            }
            pages.sort_unstable_by(|a, b| b.cmp(a));
            let mut kept: Vec<u32> = Vec::new();
            for (_, p) in pages {
                if kept.len() < limit
                    && p != primary
                    && !kept.contains(&p)
                    && ftl.owner(p).is_none()
                {
                    kept.push(p);
                }
            }
            ftl.install_replicas(lpn, version, kept);
        }
        Ok(())
    }

    /// Reads page `p` of block `b` in full: whether its data decodes and matches its CRC.
    pub(super) fn verify<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
        p: u32,
    ) -> Result<bool, FtlError> {
        // A page that does not decode is sensed again (read-retry) before it is taken for
        // torn: dropping a good page here would bring back an older version of its data.
        let mut retries = ftl.sub().cfg.read_retries;
        loop {
            self.pages_scanned += 1;
            let page = Sense::Page(&mut self.page);
            match ftl.sub_mut().sense_in(now, b, p, page, Cause::Mount)?.0 {
                Sensed::Data(_) => return Ok(true),
                Sensed::Erased => return Ok(false),
                Sensed::Failed => {
                    if retries == 0 {
                        return Ok(false);
                    }
                    retries -= 1;
                    ftl.sub_mut().counters_mut().read_retries += 1;
                }
            }
        }
    }

    /// Sets block states from what was found, rebuilds the reverse map and the indexes.
    pub(super) fn finish<K: Rebuildable>(
        mut self,
        ftl: &mut K,
        now: Nanos,
        name: &str,
    ) -> Result<RecoveryReport, FtlError> {
        ftl.rebuild_reverse(now)?;
        if ftl.replica_limit() > 0 {
            self.install_replicas(ftl, now)?;
        }
        for b in 0..ftl.sub().geo().total_blocks() {
            self.adopt_block(ftl, now, b)?;
        }
        let partial = core::mem::take(&mut self.partial);
        resume_frontiers(ftl, partial);
        // What superseded each block's pages is unknown: no victim is erased while any
        // page is exposed (see `PageFtl::erase_dirty`).
        ftl.sub_mut().superseded.fill(u64::MAX - 1);
        if self.max_seq > SEQ_LIMIT {
            // No volume writes 2^62 pages (a century at a billion per second): a record or
            // trim this new is forged or corrupt, and adopting it would overflow the
            // counter on the next write.
            return Err(FtlError::Corrupt(
                "a sequence number on the chip is beyond any this FTL writes",
            ));
        }
        let seq = ftl.sub().seq.max(self.max_seq).max(1);
        ftl.sub_mut().seq = seq;
        self.adopt_young(ftl);
        Ok(self.report(ftl, name))
    }

    /// Block `b`'s erase count, and its state from what was found: bad, free (suspect: it
    /// is erased again before its first use), full, or — neither — bad.
    fn adopt_block<K: Rebuildable>(
        &mut self,
        ftl: &mut K,
        now: Nanos,
        b: u32,
    ) -> Result<(), FtlError> {
        let i = b as usize;
        // Erase count and bad-block status: from the header where it was read (every
        // block in a full scan; the candidates and the checkpoint region in a
        // roll-forward), else the checkpoint's (such a block was not erased since; one
        // that went bad since shows it at its next program or erase).
        let (status, erase_count) =
            if self.headers.contains_key(&b) || ftl.sub().state[i].reserved() {
                let h = self.header(ftl, now, b)?;
                (h.status, h.erase_count)
            } else if self.snap.states[i] == code::BAD {
                (BlockStatus::GrownBad, self.snap.erase[i])
            } else {
                (BlockStatus::Good, self.snap.erase[i])
            };
        let s = ftl.sub_mut();
        s.adopt_erase_count(b, erase_count);
        if s.state[i].reserved() {
            if status != BlockStatus::Good {
                s.adopt_state(b, BState::Bad);
            }
            return Ok(());
        }
        if s.state[i] == BState::Bad
            && self.snap.states[i] == code::REGION
            && !self.left_region.contains(&b)
        {
            return Ok(());
        }
        if status != BlockStatus::Good {
            s.adopt_grown_bad(b);
        } else if self.free.contains(&b) && s.valid[i] == 0 {
            // A block found free may hold a program torn to all ones or an interrupted
            // erase: it is erased before its first use. A real-time scheme erases it now,
            // in the mount (whose time is not bounded, and counts the erases): at its
            // first use the erase would land in a host write beside that write's partial
            // GC step, past the bound (an erase and α copies). It trusts the blocks free
            // at the checkpoint that no phase had reason to read: the allocator opens free
            // blocks in order and roll-forward read each one it could have opened, and a
            // real-time volume leaves no untrusted free block behind a mount, so a
            // checkpoint's free block is erased (one that is not — an image last mounted
            // by a deferring scheme, or damaged — refuses its mode change, and is erased
            // then, an overrun counted, or its first program, which the kernel passes
            // over). Other schemes defer the erase to the allocation that takes the block
            // (a faster mount). An erase that fails leaves the block bad (`erase_block`).
            if !s.real_time {
                s.adopt_free(b);
                s.suspect[i] = true;
            } else if self.kept_free.contains(&b) || s.erase_block(now, b, Cause::Mount)? {
                s.adopt_free(b);
            }
        } else if self.full.contains(&b) || s.valid[i] > 0 {
            s.adopt_state(b, BState::Full);
            s.index_insert(b);
        } else {
            s.adopt_state(b, BState::Bad);
        }
        Ok(())
    }

    /// The blocks opened since the checkpoint are young again (kept from GC until the
    /// next checkpoint), and counted as opened.
    fn adopt_young<K: Rebuildable>(&self, ftl: &mut K) {
        let rule = ftl.sub().cfg.young_rule;
        for &b in &self.young {
            let die = ftl.sub().die_of(b) as usize;
            let s = ftl.sub_mut();
            s.young[b as usize] = rule;
            s.opened_per_die[die] += 1;
        }
        ftl.sub_mut().opened_since_cp = self.young.len() as u32;
    }

    /// What the mount did.
    fn report<K: Rebuildable>(&self, ftl: &K, name: &str) -> RecoveryReport {
        let mapped = (0..ftl.logical())
            .filter(|&l| {
                let p = ftl.entry(l);
                p != INVALID && p != LOST
            })
            .count() as u64;
        let (reads, time) = ftl.sub().recovery_time(&[Cause::Mount]);
        RecoveryReport {
            procedure: name.into(),
            checkpoint_gen: ftl.checkpoint_gen(),
            checkpoint_pages: self.checkpoint_pages,
            blocks_scanned: self.scanned.len() as u64,
            pages_scanned: self.pages_scanned,
            pages_read: reads,
            time,
            mapped_pages: mapped,
        }
    }
}

/// Half-written blocks (`partial`: block, write point, the sequence numbers of its pages)
/// become the frontiers again, up to two per die, newest first, so the space a crash left
/// in them is not lost: a full device may have nothing else to copy into. Their lower
/// pages written before the cut count as exposed.
fn resume_frontiers<K: Rebuildable>(ftl: &mut K, mut partial: Vec<(u32, u32, Vec<u64>)>) {
    partial.sort_by_key(|p| Reverse(p.2.iter().copied().max().unwrap_or(0)));
    let ppb = ftl.sub().ppb();
    for (b, wp, seqs) in partial {
        let die = ftl.sub().die_of(b) as usize;
        // Only a block whose pages from the write point on map nothing (an image whose
        // checkpoint maps pages of an erased block fails this).
        let base = b * ppb;
        if ftl.sub().state[b as usize] != BState::Full
            || (wp..ppb).any(|p| ftl.owner(base + p).is_some())
        {
            continue;
        }
        let Some(s) = ftl.sub().dies[die]
            .frontier
            .iter()
            .position(|f| f.is_none())
        else {
            continue;
        };
        ftl.sub_mut().resume_frontier(die, s, b, wp, &seqs);
    }
}

/// What a scan of one block read (`Rebuild::read_records`).
struct BlockRecords {
    /// The records that name a logical page, in page order.
    found: Vec<Found>,
    /// The sequence number of each page read (0: not read, or no record).
    seqs: Vec<u64>,
    /// The first erased page (the write point; `ppb` if none).
    wp: u32,
    /// Every page read decoded.
    clean: bool,
}

impl Found {
    /// The record `rec` of page `page`, if it names a logical page below `logical`: a data
    /// page's (its class says whether critical) or a replica's (critical, with the
    /// version it copies).
    fn of(page: u32, rec: &controller::OobRecord, logical: u64) -> Option<Found> {
        if let Some(class) = rec.kind.data_class() {
            (rec.lpn < logical).then_some(Found {
                page,
                lpn: rec.lpn,
                seq: rec.seq,
                critical: class.critical,
                user: matches!(rec.kind, PageKind::User(_)),
                replica_of: None,
            })
        } else {
            let (lpn, version) = rec.replica_of()?;
            (lpn < logical).then_some(Found {
                page,
                lpn,
                seq: rec.seq,
                critical: true,
                user: false,
                replica_of: Some(version),
            })
        }
    }
}
