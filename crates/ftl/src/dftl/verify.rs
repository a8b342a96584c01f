//! The kernel's invariants (what `verify` checks): caches against the simulator's record of
//! the flash units, directories against partitions, free lists against the chip, BIT counts
//! against the map within `drift`, the free-block count.

use super::{bst, BitEntry, DftlFtl, PartKind, NONE};
use alloc::format;
use alloc::string::String;
use alloc::vec;
use nand::{ErrorModel, Storage};

impl<S: Storage, M: ErrorModel> DftlFtl<S, M> {
    /// The BIT's valid counts against the map: no block counts more valid pages than the
    /// map puts in it, a free block holds none, and all counts together fall short of the
    /// map by at most `drift` (lower pages lost to power cuts).
    ///
    /// Apart from [`check`](Self::check) because a damaged image can break it with no bug:
    /// recovery takes a decodable record forged into an update block for a write, and
    /// decrements the count of the page it claims to supersede.
    pub(crate) fn check_counts(&self) -> Result<(), String> {
        let n = self.s.geo().total_blocks();
        let view = |b: u32| -> BitEntry {
            self.cbit
                .peek(b)
                .map_or(self.flash_bit[b as usize], |(e, _)| e)
        };
        let mut count = vec![0u32; n as usize];
        for &v in &self.truth {
            if v != NONE {
                count[(v / self.ppb) as usize] += 1;
            }
        }
        let mut short = 0u64;
        for b in self.user_first..n {
            let e = view(b);
            let have = count[b as usize];
            if (e.valid as u32) > have {
                return Err(format!(
                    "block {b}: BIT says {} valid pages, the map {have}",
                    e.valid
                ));
            }
            short += (have - e.valid as u32) as u64;
            if e.state == bst::FREE && have > 0 {
                return Err(format!("free block {b} holds {have} mapped pages"));
            }
        }
        if short > self.drift {
            return Err(format!(
                "valid counts {short} pages short of the map, more than the {} recovery allows",
                self.drift
            ));
        }
        Ok(())
    }

    /// The chip against the kernel's view of it: free metadata blocks hold nothing, and
    /// the update block's write pointer is the chip's (or one short: a page torn to all
    /// ones reads as erased, the scan stops before it, and the next program skips it).
    /// A mirror like the counts: a damaged image (pages programmed behind the kernel's
    /// back) breaks it with no bug.
    pub(crate) fn check_chip(&self) -> Result<(), String> {
        let next_page = |b: u32| {
            self.s
                .controller()
                .chip()
                .block_info(self.s.block_addr(b))
                .map(|i| i.next_page)
                .map_err(|e| format!("{e}"))
        };
        for (k, p) in self.parts.iter().enumerate() {
            for &b in &p.free {
                if next_page(b)? > 0 {
                    return Err(format!("metadata partition {k}: free block {b} holds data"));
                }
            }
        }
        let wp = next_page(self.u)?;
        if wp < self.u_wp || wp > self.u_wp + 1 {
            return Err(format!(
                "update block {}: write pointer {} but the chip's is {wp}",
                self.u, self.u_wp
            ));
        }
        Ok(())
    }

    /// Every invariant (what `verify` checks).
    pub(crate) fn check(&self) -> Result<(), String> {
        let n = self.s.geo().total_blocks();
        let slots = self.slots();
        self.cpmt.check().map_err(|e| format!("CPMT: {e}"))?;
        self.cbit.check().map_err(|e| format!("CBIT: {e}"))?;
        for (k, v, dirty) in self.cpmt.entries() {
            if self.truth[k as usize] != v {
                return Err(format!(
                    "CPMT entry {k} → {v:#x}, the map says {:#x}",
                    self.truth[k as usize]
                ));
            }
            if !dirty && self.flash_pmt[k as usize] != v {
                return Err(format!(
                    "clean CPMT entry {k} → {v:#x} differs from its PMT unit ({:#x})",
                    self.flash_pmt[k as usize]
                ));
            }
        }
        for (l, &v) in self.truth.iter().enumerate() {
            if self.cpmt.peek(l as u32).is_none() && self.flash_pmt[l] != v {
                return Err(format!(
                    "logical page {l}: uncached, its PMT unit says {:#x}, the map {v:#x}",
                    self.flash_pmt[l]
                ));
            }
            if v != NONE && (v / self.ppb < self.user_first || v / self.ppb >= n) {
                return Err(format!(
                    "logical page {l} maps outside the user partition ({v:#x})"
                ));
            }
        }
        // Directories point into their partitions; partitions are consistent.
        for k in [
            PartKind::Pmt,
            PartKind::Bit,
            PartKind::PmtLog,
            PartKind::BitLog,
        ] {
            let dir = self.dir(k);
            let p = &self.parts[k as usize];
            for (i, &a) in dir.iter().enumerate() {
                if a != NONE && !p.contains(a / slots) {
                    return Err(format!("{k:?} unit {i} at {a:#x}, outside its partition"));
                }
                if a != NONE && a / slots == p.upd && a % slots >= p.wp {
                    return Err(format!(
                        "{k:?} unit {i} beyond its update block's write pointer"
                    ));
                }
            }
            for &b in &p.free {
                if !p.contains(b) || b == p.upd || p.bad[(b - p.first) as usize] {
                    return Err(format!("{k:?} free block {b} is not a free block of it"));
                }
            }
            if p.wp > slots {
                return Err(format!("{k:?} write pointer {} past the block", p.wp));
            }
        }
        // The update block, the free queue, the BIT's view against the map.
        if self.u < self.user_first || self.u >= n {
            return Err(format!(
                "update block {} outside the user partition",
                self.u
            ));
        }
        let view = |b: u32| -> BitEntry {
            self.cbit
                .peek(b)
                .map_or(self.flash_bit[b as usize], |(e, _)| e)
        };
        let mut free = 0;
        for b in self.user_first..n {
            let e = view(b);
            if e.erase != self.s.erase[b as usize] {
                return Err(format!(
                    "block {b}: BIT erase count {} but {} erases",
                    e.erase, self.s.erase[b as usize]
                ));
            }
            match e.state {
                bst::FREE => free += 1,
                bst::USED | bst::BAD => {}
                s => return Err(format!("user block {b} in state {s}")),
            }
        }
        if view(self.u).state != bst::USED {
            return Err(format!("update block {} is not in use in the BIT", self.u));
        }
        if free != self.free_total {
            return Err(format!(
                "{free} free user blocks in the BIT, the UFP counts {}",
                self.free_total
            ));
        }
        for (i, &b) in self.free_q.iter().enumerate() {
            if view(b).state != bst::FREE || self.free_q.iter().skip(i + 1).any(|&x| x == b) {
                return Err(format!(
                    "queued free block {b} is not free (or queued twice)"
                ));
            }
        }
        for &(b, _) in &self.bsi {
            if view(b).state != bst::USED {
                return Err(format!("BSI candidate {b} is not a used block"));
            }
        }
        Ok(())
    }
}
