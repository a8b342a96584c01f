//! [`FlaresStrength`]: FLARES as the FTL's ECC-strength policy over [`FlaresCore`].

use super::{stamp, width, FlaresConfig, FlaresCore, FlaresTables, Outcome, Pprof};
use crate::policy::EccPolicyCounters;
use alloc::vec::Vec;
use nand::Nanos;

/// FLARES as the FTL's ECC-strength policy: one [`Pprof`] per physical page in controller
/// RAM, Alg. 1 on every program and read, Alg. 2 every WSIZE operations, rewrite alarms
/// for retention (on reads and by the idle-time scrub) and for the failure zone.
///
/// Storage of the profile (§4.2): the critical part — p_cur, p_next, pecycles and the
/// writestamp, 58 bits — is written with every program into the page's spare area as its
/// own BCH codeword (GF(2^7), t = 5: [`controller::PprofRecord`], enabled on the controller
/// by the FTL at format and mount), read with the page (its errors drawn and decoded like
/// the rest of the spare) so nothing extra is read; the strength is also in the
/// triplicated header, which the decoder reads first. The non-critical part — errc, failc
/// and the zone counters, plus p_next's later updates — lives here in controller RAM
/// ([`Pprof`], loaded on demand: a page's entry fills from its PPROF at its first read
/// after mount). A clean shutdown saves it — 3 bytes per page (p_next, errc, failc: 21
/// bits) — in its checkpoint, in the checkpoint region, whose pages take the worst-case
/// strength (`ecc_t`): the paper's reserved pages; mount restores it. A power cut loses
/// it, which FLARES tolerates (it is re-measured over the next windows). A PPROF
/// that fails its own ECC falls back to the header's t, the block's erase count and the
/// read's time (counted as `pprof_fallbacks`). Metadata pages (the checkpoint region)
/// take the configured worst-case strength and are not watched.
#[derive(Debug, Clone)]
pub struct FlaresStrength {
    core: FlaresCore,
    prof: Vec<Pprof>,
    ppb: u32,
    meta_t: u32,
    cursor: usize,
}

impl FlaresStrength {
    /// A policy for a chip of `pages` pages, `ppb` per block, with `codeword_bits`-bit
    /// codewords in pages of `page_bits` data bits; metadata pages at `meta_t`.
    pub fn new(
        cfg: FlaresConfig,
        pages: u64,
        ppb: u32,
        codeword_bits: u64,
        page_bits: u64,
        meta_t: u32,
    ) -> Self {
        FlaresStrength {
            core: FlaresCore::new(FlaresTables::new(cfg, codeword_bits, page_bits)),
            prof: alloc::vec![Pprof::default(); pages as usize],
            ppb,
            meta_t,
            cursor: 0,
        }
    }

    /// The core (tables and counters).
    pub fn core(&self) -> &FlaresCore {
        &self.core
    }

    /// Hints the profile one cache line after that of flat page `i` (page `page` of its
    /// block), when it is in the same block.
    #[inline]
    fn prefetch_ahead(&self, i: usize, page: u32) {
        const AHEAD: u32 = (64 / core::mem::size_of::<Pprof>()) as u32;
        if page + AHEAD < self.ppb {
            nand::hint::prefetch(&self.prof, i + AHEAD as usize);
        }
    }

    /// Fills flat page `i`'s profile, not cached (first access since mount) or a metadata
    /// page, at its read `fb`; `false`: the page is not watched (a strength outside
    /// FLARES's range). Out of line: the read path's rare branch.
    #[cold]
    #[inline(never)]
    fn load(
        &mut self,
        i: usize,
        fb: &crate::policy::ReadFeedback,
        c: &mut EccPolicyCounters,
    ) -> bool {
        let p = &mut self.prof[i];
        // Not cached (first access since mount) or a metadata page: load the critical
        // part from the page's spare-area PPROF (read with the page, no extra
        // operation); without one (it failed its own ECC, counted by the controller)
        // fall back to the header's t, the block's erase count and the read's time.
        let t = fb.t;
        if t < self.core.tables.config().t_min || t > self.core.tables.config().t_max {
            return false;
        }
        // A p_next restored from a clean shutdown's checkpoint is newer than the one
        // written with the page.
        let restored = p.p_next;
        match fb.pprof {
            Some(r) => {
                p.p_cur = r.p_cur;
                p.p_next = if restored != 0 { restored } else { r.p_next };
                p.pecycles = r.pecycles;
                p.writestamp = r.writestamp;
            }
            None => {
                c.pprof_fallbacks += 1;
                p.p_cur = t as u8;
                p.p_next = if restored != 0 { restored } else { t as u8 };
                p.pecycles = fb.erase_count.min((1 << width::PECYCLES) - 1) as u16;
                p.writestamp = stamp(fb.now);
            }
        }
        true
    }

    /// Alg. 1 (and 2) for a read of a page whose profile is cached.
    #[inline(always)]
    fn read_cached(
        &mut self,
        fb: &crate::policy::ReadFeedback,
        c: &mut EccPolicyCounters,
    ) -> Option<crate::policy::Alarm> {
        let i = fb.phys as usize;
        let out = self
            .core
            .read(&mut self.prof[i], fb.corrected, fb.failed, fb.now, c);
        (out == Outcome::Rewrite).then_some(crate::policy::Alarm::Rewrite { page: i as u32 })
    }

    /// A read of a page whose profile is not cached: loaded first (`load`), then as
    /// [`read_cached`](Self::read_cached); nothing for a page FLARES does not watch.
    #[cold]
    #[inline(never)]
    fn read_uncached(
        &mut self,
        fb: &crate::policy::ReadFeedback,
        c: &mut EccPolicyCounters,
    ) -> Option<crate::policy::Alarm> {
        if !self.load(fb.phys as usize, fb, c) {
            return None;
        }
        self.read_cached(fb, c)
    }

    /// The profile of flat page `page`.
    pub fn profile(&self, page: u32) -> Pprof {
        self.prof[page as usize]
    }
}

impl crate::policy::EccStrength for FlaresStrength {
    fn name(&self) -> &'static str {
        "flares"
    }

    fn t_for(&mut self, ctx: &crate::policy::ProgramContext) -> u32 {
        if ctx.meta {
            return self.meta_t;
        }
        let i = ctx.phys as usize;
        // A block's pages are programmed in order: fetch the profiles' next cache line
        // while this one is used (dozens of blocks fill at once, too many streams for
        // the CPU's own prefetcher).
        self.prefetch_ahead(i, ctx.page);
        self.core
            .program(&mut self.prof[i], ctx.erase_count, ctx.now)
    }

    fn on_read(
        &mut self,
        fb: &crate::policy::ReadFeedback,
        c: &mut crate::policy::EccPolicyCounters,
    ) -> Option<crate::policy::Alarm> {
        let i = fb.phys as usize;
        // (GC reads a victim's pages in order.)
        self.prefetch_ahead(i, fb.page);
        if self.prof[i].p_cur == 0 {
            // (A tail call: the common path saves no registers for it.)
            return self.read_uncached(fb, c);
        }
        self.read_cached(fb, c)
    }

    fn on_erase(&mut self, block: u32) {
        let b = (block * self.ppb) as usize;
        for p in &mut self.prof[b..b + self.ppb as usize] {
            // pecycles and p_next describe the cells and stay; the data are gone.
            p.writestamp = 0;
            p.p_cur = 0;
            p.errc = 0;
            p.ops = 0;
            p.failc = 0;
        }
    }

    fn forget(&mut self, page: u32) {
        let p = &mut self.prof[page as usize];
        p.writestamp = 0;
        p.p_cur = 0;
    }

    fn scrub(&mut self, now: Nanos, out: &mut Vec<u32>, c: &mut EccPolicyCounters) {
        let n = self.prof.len();
        for _ in 0..(self.core.tables.config().scrub_pages as usize).min(n) {
            let i = self.cursor;
            self.cursor = if i + 1 == n { 0 } else { i + 1 };
            let p = &self.prof[i];
            if p.writestamp == 0 {
                continue;
            }
            c.scrubbed_pages += 1;
            if self.core.past_retention(p, now) {
                c.scrub_alarms += 1;
                out.push(i as u32);
            }
        }
    }

    fn prefetch(&self, page: u32) {
        nand::hint::prefetch(&self.prof, page as usize);
    }

    fn ram_bytes(&self) -> u64 {
        (self.prof.len() * core::mem::size_of::<Pprof>()) as u64
    }

    /// Three bytes per physical page: p_next (6 bits), errc (13), failc (2) — Table II's
    /// non-critical part, 21 bits.
    fn stash(&self) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(self.prof.len() * 3);
        for p in &self.prof {
            let v = (p.p_next as u32 & 0x3F)
                | (p.errc as u32 & 0x1FFF) << 6
                | (p.failc.min(3) as u32) << 19;
            out.extend_from_slice(&v.to_le_bytes()[..3]);
        }
        Some(out)
    }

    fn restore(&mut self, bytes: &[u8]) {
        if bytes.len() != self.prof.len() * 3 {
            return;
        }
        for (p, b) in self.prof.iter_mut().zip(bytes.chunks_exact(3)) {
            let v = u32::from_le_bytes([b[0], b[1], b[2], 0]);
            p.p_next = (v & 0x3F) as u8;
            p.errc = (v >> 6 & 0x1FFF) as u16;
            p.failc = (v >> 19 & 0x3) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stash_and_restore_round_trip() {
        use crate::policy::EccStrength;
        let mut a = FlaresStrength::new(FlaresConfig::default(), 8, 4, 32768, 32768, 50);
        for (i, p) in a.prof.iter_mut().enumerate() {
            p.p_next = (i as u8 * 7) % 64;
            p.errc = (i as u16 * 1000) % 8192;
            p.failc = i as u8 % 4;
            p.p_cur = 9;
            p.writestamp = 5;
        }
        let bytes = a.stash().unwrap();
        assert_eq!(bytes.len(), 8 * 3);
        let mut b = FlaresStrength::new(FlaresConfig::default(), 8, 4, 32768, 32768, 50);
        b.restore(&bytes);
        for (x, y) in a.prof.iter().zip(&b.prof) {
            assert_eq!((x.p_next, x.errc, x.failc), (y.p_next, y.errc, y.failc));
            // The critical part comes from the pages themselves, not the stash.
            assert_eq!((y.p_cur, y.writestamp), (0, 0));
        }
        // Bytes of another shape are ignored.
        let mut c = FlaresStrength::new(FlaresConfig::default(), 8, 4, 32768, 32768, 50);
        c.restore(&bytes[..5]);
        assert!(c.prof.iter().all(|p| p.p_next == 0));
    }
}
