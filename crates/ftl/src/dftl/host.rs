//! The user partition: host writes, reads and trims through the update block, the
//! update-block switch (write-back, GXT, victim), the victim's collection, and sealing
//! exposed lower pages.

use super::{bst, BitEntry, DftlFtl, NONE, PAD_TAG, TOMB_TAG};
use crate::substrate::{Payload, Prog, Programmed, Sense, Sensed, NO_UPPER};
use crate::{Cause, FtlError};
use alloc::vec::Vec;
use controller::{DataClass, OobRecord, PageKind};
use nand::{ErrorModel, Lpn, Nanos, Storage};

/// A user page's record field: the logical page (31 bits), the tombstone flag, and the
/// physical page it supersedes (`u32::MAX`: none) in the high half.
pub(crate) mod field {
    /// The logical page.
    pub const LPN: u64 = 0x7FFF_FFFF;
    /// A trim: the logical page maps to nothing.
    pub const TOMB: u64 = 1 << 31;

    /// Packs a record field.
    pub const fn pack(l: u32, tomb: bool, old: u32) -> u64 {
        (old as u64) << 32 | if tomb { TOMB } else { 0 } | l as u64
    }

    /// The physical page a record's write superseded.
    pub const fn old(f: u64) -> u32 {
        (f >> 32) as u32
    }
}

impl<S: Storage, M: ErrorModel> DftlFtl<S, M> {
    /// Programs user page `p` (flat) with `rec`.
    pub(crate) fn program_user(
        &mut self,
        now: Nanos,
        p: u32,
        payload: Payload<'_>,
        rec: OobRecord,
        cause: Cause,
        after: Option<u32>,
    ) -> Result<Prog, FtlError> {
        let t = self.cfg.ecc_t;
        match self
            .s
            .program_classified(now, p, payload, t, rec, cause, after)?
        {
            Programmed::Done(..) => Ok(Prog::Done),
            Programmed::Failed => {
                self.s.counters_mut().retired_blocks += 1;
                Ok(Prog::Bad)
            }
            Programmed::Conflict(_) => Ok(Prog::Conflict),
        }
    }

    /// Whether flat page `p` is a lower page of the update block a power cut while its
    /// upper page is programmed could still corrupt.
    pub(crate) fn exposed(&self, p: u32) -> bool {
        if p == NONE || p / self.ppb != self.u {
            return false;
        }
        let q = p % self.ppb;
        let up = self.s.upper[q as usize];
        q < self.u_wp && up != NO_UPPER && up >= self.u_wp && self.u_data[q as usize]
    }

    /// Whether the update block holds an exposed page.
    fn any_exposed(&self) -> bool {
        if self.u == NONE {
            return false;
        }
        let lo = self.u_wp.saturating_sub(self.s.window + 1);
        (lo..self.u_wp).any(|q| self.exposed(self.u * self.ppb + q))
    }

    /// Pads the update block until no lower page of it is exposed (multi-level chips).
    pub(crate) fn seal(&mut self, now: Nanos) -> Result<(), FtlError> {
        while self.any_exposed() && self.u_wp < self.ppb {
            let p = self.u * self.ppb + self.u_wp;
            self.u_wp += 1;
            let rec = OobRecord::new(u64::MAX, self.s.next_seq(), PageKind::Meta(PAD_TAG));
            let zeros = core::mem::take(&mut self.zeros);
            let r = self.program_user(now, p, Payload::Data(&zeros), rec, Cause::Meta, None);
            self.zeros = zeros;
            self.u_data[(p % self.ppb) as usize] = false;
            match r? {
                Prog::Done => self.s.counters_mut().pad_pages += 1,
                Prog::Conflict => {}
                Prog::Bad => self.u_wp = self.ppb,
            }
        }
        Ok(())
    }

    /// A host write of logical page `l` (`None`: a trim's tombstone).
    pub(crate) fn host_write(
        &mut self,
        now: Nanos,
        l: u32,
        data: Option<(&[u8], DataClass)>,
    ) -> Result<(), FtlError> {
        let (p, old) = self.place(now, l, data)?;
        self.pmt_set(now, l, if data.is_some() { p } else { NONE })?;
        if data.is_some() {
            self.bit_add(now, self.u, 1)?;
        }
        if old != NONE {
            self.bit_add(now, old / self.ppb, -1)?;
        }
        Ok(())
    }

    /// Programs the next page of the update block for `l` (switching blocks as needed);
    /// returns the page and the one it supersedes, looked up after any switch (whose
    /// collection may have moved `l`).
    fn place(
        &mut self,
        now: Nanos,
        l: u32,
        data: Option<(&[u8], DataClass)>,
    ) -> Result<(u32, u32), FtlError> {
        // Bounded: each round uses a page of the update block or switches blocks.
        for _ in 0..4 * self.ppb + 8 {
            // (A look-up that evicts may pad the update block: room is checked after it.)
            let old = self.pmt_get(now, l)?;
            if self.u == NONE || self.u_wp >= self.ppb {
                self.switch(now)?;
                continue;
            }
            // The entries this write changes are fetched first, so that no write-back
            // runs between its program and their update: a unit written back after the
            // page's program (a larger stamp) then always holds the page's effect.
            self.bit_get(now, self.u)?;
            if old != NONE {
                self.bit_get(now, old / self.ppb)?;
            }
            if self.u_wp >= self.ppb {
                continue;
            }
            let p = self.u * self.ppb + self.u_wp;
            self.u_wp += 1;
            let kind = match data {
                Some((_, c)) => PageKind::User(c),
                None => PageKind::Meta(TOMB_TAG),
            };
            let rec = OobRecord::new(field::pack(l, data.is_none(), old), self.s.next_seq(), kind);
            let zeros = core::mem::take(&mut self.zeros);
            let payload = Payload::Data(data.map_or(&zeros[..], |(d, _)| d));
            let r = self.program_user(now, p, payload, rec, Cause::Host, None);
            self.zeros = zeros;
            self.u_data[(p % self.ppb) as usize] = true;
            match r? {
                Prog::Done => return Ok((p, old)),
                Prog::Conflict => {}
                Prog::Bad => self.u_wp = self.ppb,
            }
        }
        Err(FtlError::NoSpace)
    }

    /// One charged record read of user page `p`: its record (`None`: erased or
    /// undecodable) and whether it reads erased.
    pub(crate) fn page_record(
        &mut self,
        now: Nanos,
        p: u32,
        cause: Cause,
    ) -> Result<(Option<OobRecord>, bool), FtlError> {
        Ok(match self.s.sense(now, p, Sense::Record, cause)?.0 {
            Sensed::Data(info) => (Some(info.record), false),
            Sensed::Erased => (None, true),
            Sensed::Failed => (None, false),
        })
    }

    /// A host read of logical page `l`.
    pub(crate) fn host_read(
        &mut self,
        now: Nanos,
        l: u32,
        lpn: Lpn,
        data: &mut [u8],
    ) -> Result<(), FtlError> {
        // A map unit that cannot be read loses the pages it maps: they are unreadable.
        let p = match self.pmt_get(now, l) {
            Err(FtlError::Corrupt(_)) => return Err(FtlError::Unreadable(lpn)),
            r => r?,
        };
        if p == NONE {
            data.fill(0);
            self.s.counters_mut().unmapped_reads += 1;
            return Ok(());
        }
        if p / self.ppb < self.user_first || p / self.ppb >= self.s.geo().total_blocks() {
            return Err(FtlError::Unreadable(lpn));
        }
        let ok = match self.s.sense(now, p, Sense::Page(data), Cause::Host)?.0 {
            Sensed::Data(info) => {
                info.record.lpn & (field::LPN | field::TOMB) == l as u64
                    && info.record.kind.data_class().is_some()
            }
            Sensed::Erased | Sensed::Failed => false,
        };
        if ok {
            Ok(())
        } else {
            Err(FtlError::Unreadable(lpn))
        }
    }

    /// The update block is full: a free block takes its place, every dirty cached entry
    /// is written back, the GXT is written (naming the new update block and, when free
    /// blocks run low, the victim), and the victim is collected.
    pub(crate) fn switch(&mut self, now: Nanos) -> Result<(), FtlError> {
        // The last switch's victims had their copies programmed into the update block,
        // now full (nothing exposed): they are erased now, while the GXT still names them
        // (a mount compares their erase counts with the chip's).
        for (v, done) in self.victims.clone() {
            if done {
                self.erase_victim(now, v)?;
            }
        }
        if self.free_q.is_empty() {
            self.bit_scan(now)?;
        }
        let Some(b) = self.free_q.pop_front() else {
            return Err(FtlError::NoSpace);
        };
        self.free_total = self.free_total.saturating_sub(1);
        let mut e = self.bit_get(now, b)?;
        if e.state != bst::FREE {
            return Err(FtlError::Corrupt(
                "a queued free block is not free in the BIT",
            ));
        }
        // In use from now on (so no BIT scan queues it again); the GXT names it only once
        // the closed block's changes are written back.
        e.state = bst::USED;
        e.valid = 0;
        self.bit_set(now, b, e)?;
        self.bsi.retain(|&(x, _)| x != b);
        // One victim when free blocks are below the threshold, two when more than one
        // short (a mount can leave a collected victim unerased).
        let want = match self.free_total {
            f if f + 1 < self.cfg.gc_threshold => 2,
            f if f < self.cfg.gc_threshold => 1,
            _ => 0,
        };
        let mut victims: Vec<(u32, bool)> = Vec::new();
        for _ in 0..want {
            if self.bsi.is_empty() {
                self.bit_scan(now)?;
            }
            let pick = self
                .bsi
                .iter()
                .filter(|&&(x, _)| x != self.u && x != b && victims.iter().all(|v| v.0 != x))
                .min_by_key(|&&(x, v)| (v, x))
                .map(|&(x, _)| x);
            match pick {
                Some(v) => victims.push((v, false)),
                None => break,
            }
        }
        // Everything the closed update block's pages changed goes to flash before a GXT
        // names the new one (a GXT written meanwhile still names the old block).
        self.writeback_all(now)?;
        self.u = b;
        self.u_wp = 0;
        self.u_data.fill(false);
        self.victims = victims;
        self.write_gxt(now)?;
        for i in 0..self.victims.len() {
            let v = self.victims[i].0;
            // A second victim only if its pages fit beside the first's.
            if i > 0 {
                let need = self.bit_get(now, v)?.valid as u32;
                if self.u_wp + need + 1 >= self.ppb {
                    self.victims.truncate(i);
                    break;
                }
            }
            if !self.collect(now, v)? {
                break;
            }
            self.victims[i].1 = true;
        }
        Ok(())
    }

    /// Collects victim `v` into the update block: each page's record read, its logical
    /// page looked up, the valid ones copied. The victim is erased at the next switch
    /// (when the copies can no longer be corrupted by a cut upper-page program).
    /// `Ok(false)`: the update block could not hold every valid page; the victim keeps
    /// the rest.
    fn collect(&mut self, now: Nanos, v: u32) -> Result<bool, FtlError> {
        for q in 0..self.ppb {
            let src = v * self.ppb + q;
            let Some(rec) = self.page_record(now, src, Cause::Gc)?.0 else {
                continue;
            };
            let Some(class) = rec.kind.data_class() else {
                continue;
            };
            let l = (rec.lpn & field::LPN) as u32;
            if l >= self.lpns || self.pmt_get(now, l)? != src {
                continue;
            }
            if !self.copy(now, src, l, class)? {
                return Ok(false);
            }
        }
        // Its erase waits for the next switch (see `switch`): the copies may sit in
        // exposed lower pages until the update block fills.
        Ok(true)
    }

    /// Erases collected victim `v` and returns it to the free blocks.
    fn erase_victim(&mut self, now: Nanos, v: u32) -> Result<(), FtlError> {
        let mut e = self.bit_get(now, v)?;
        if self.s.erase_block(now, v, Cause::Gc)? {
            e = BitEntry {
                valid: 0,
                state: bst::FREE,
                erase: e.erase + 1,
            };
            self.free_total += 1;
            if self.free_q.len() < self.cfg.free_queue as usize {
                self.free_q.push_back(v);
            }
        } else {
            e.state = bst::BAD;
            e.valid = 0;
        }
        self.bit_set(now, v, e)?;
        self.s.counters_mut().gc_victims += 1;
        Ok(())
    }

    /// Copies logical page `l` from `src` into the update block. `Ok(false)`: no room.
    fn copy(&mut self, now: Nanos, src: u32, l: u32, class: DataClass) -> Result<bool, FtlError> {
        let vb = src / self.ppb;
        let op = match self.s.sense(now, src, Sense::Relocate, Cause::Gc)? {
            (Sensed::Data(_), op) => op,
            (Sensed::Erased | Sensed::Failed, _) => {
                // Unreadable (the read is charged all the same): the page is lost, its
                // logical page then reads as an error.
                self.s.counters_mut().lost_pages += 1;
                return Ok(true);
            }
        };
        // Fetched before the program (see `place`).
        self.bit_get(now, self.u)?;
        self.bit_get(now, vb)?;
        loop {
            if self.u_wp >= self.ppb {
                return Ok(false);
            }
            let p = self.u * self.ppb + self.u_wp;
            self.u_wp += 1;
            let rec = OobRecord::new(
                field::pack(l, false, src),
                self.s.next_seq(),
                PageKind::GcCopy(class),
            );
            self.u_data[(p % self.ppb) as usize] = true;
            match self.program_user(now, p, Payload::Relocated, rec, Cause::Gc, Some(op))? {
                Prog::Done => {
                    self.pmt_set(now, l, p)?;
                    self.bit_add(now, self.u, 1)?;
                    self.bit_add(now, vb, -1)?;
                    self.s.counters_mut().valid_copies += 1;
                    return Ok(true);
                }
                Prog::Conflict => {}
                Prog::Bad => {
                    self.u_wp = self.ppb;
                    return Ok(false);
                }
            }
        }
    }
}
