//! Format and the full-scan mount of the real-time block-level kernels: every good block's
//! header, every programmed page's record; the newest sequence number of each logical
//! page wins; a logical block whose newest copies are not where its read path looks (a job
//! cut short) is merged into a fresh block; blocks holding no newest copy are erased.

use super::{
    pst, rec, BufEntry, Lb, Prog, Role, RtBlockConfig, RtBlockFtl, RtKind, Sense, Sensed, NONE,
    TOMB_BIT,
};
use crate::recovery::{RecoveryReport, SEQ_LIMIT};
use crate::substrate::BState;
use crate::{Cause, Ftl, FtlError, MountFailure};
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use controller::Controller;
use core::cmp::Reverse;
use nand::{BlockStatus, ErrorModel, Nanos, Storage};

/// One logical page's newest copy found by the scan.
#[derive(Debug, Clone, Copy)]
struct Newest {
    seq: u64,
    phys: u32,
    tomb: bool,
}

/// What the scan found in one block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    /// No programmed page.
    Empty,
    /// Programmed pages, none decodable as this kernel's: erased at mount.
    Garbage,
    /// Pages of this kernel: the role their records give and the logical block (NONE for
    /// GFTL's buffer), and the lowest sequence number (allocation order).
    Used { role: Role, lbn: u32, first: u64 },
}

impl Found {
    /// This block with one more page of `role` and logical block `lbn`, sequence number
    /// `seq`; `Corrupt` if the block already holds pages of another role or logical block.
    fn with(self, role: Role, lbn: u32, seq: u64) -> Result<Found, FtlError> {
        match self {
            Found::Used {
                role: r0,
                lbn: l0,
                first,
            } => {
                if r0 != role || l0 != lbn {
                    return Err(FtlError::Corrupt(
                        "a block holds pages of two roles or logical blocks",
                    ));
                }
                Ok(Found::Used {
                    role,
                    lbn,
                    first: first.min(seq),
                })
            }
            _ => Ok(Found::Used {
                role,
                lbn,
                first: seq,
            }),
        }
    }
}

impl<S: Storage, M: ErrorModel> RtBlockFtl<S, M> {
    /// Formats the chip behind `ctl` with scheme `kind` and builds an empty volume.
    pub fn format(
        ctl: Controller<S, M>,
        kind: RtKind,
        cfg: RtBlockConfig,
        now: Nanos,
    ) -> Result<Self, FtlError> {
        let mut ctl = ctl;
        let alpha = Self::check_config(&mut ctl, kind, &cfg)?;
        let mut ftl = Self::empty(ctl, kind, cfg, alpha);
        for b in 0..ftl.s.geo().total_blocks() {
            if ftl.s.format_block(now, b)?.is_none() {
                ftl.set_bad(b);
                continue;
            }
            ftl.blk[b as usize] = super::Blk::FREE;
            ftl.s.adopt_state(b, BState::Free);
        }
        ftl.size_volume()?;
        ftl.refill_pool();
        crate::debug_verify("format", || ftl.verify());
        Ok(ftl)
    }

    /// Mounts a volume of scheme `kind` (after a clean shutdown or a crash).
    pub fn mount(
        ctl: Controller<S, M>,
        kind: RtKind,
        cfg: RtBlockConfig,
        now: Nanos,
    ) -> Result<Self, FtlError> {
        Self::try_mount(ctl, kind, cfg, now).map_err(|f| f.error)
    }

    /// Like [`mount`](RtBlockFtl::mount), handing the controller back on failure.
    pub fn try_mount(
        ctl: Controller<S, M>,
        kind: RtKind,
        cfg: RtBlockConfig,
        now: Nanos,
    ) -> Result<Self, Box<MountFailure<S, M>>> {
        let mut ctl = ctl;
        let alpha = match Self::check_config(&mut ctl, kind, &cfg) {
            Ok(a) => a,
            Err(error) => return Err(MountFailure::boxed(error, ctl)),
        };
        let mut ftl = Self::empty(ctl, kind, cfg, alpha);
        let recovered = ftl.scan_and_rebuild(now);
        ftl.mounted(recovered, true)
    }

    /// Puts every `Free` block not yet in the pool into it.
    fn refill_pool(&mut self) {
        let mut in_pool = vec![false; self.blk.len()];
        for Reverse((_, b)) in self.free.iter() {
            in_pool[*b as usize] = true;
        }
        for (b, seen) in in_pool.into_iter().enumerate() {
            if self.blk[b].role == Role::Free && !seen {
                self.s.adopt_state(b as u32, BState::Free);
                self.free.push(Reverse((self.s.erase[b], b as u32)));
            }
        }
    }

    /// Erases block `b` at mount (to the pool, or bad).
    fn mount_erase(&mut self, now: Nanos, b: u32) -> Result<(), FtlError> {
        let ppb = self.ppb;
        self.torn.retain(|&p| p / ppb != b);
        self.tab.remove(&b);
        self.pstate.remove(&b);
        if self.s.erase_block(now, b, Cause::Mount)? {
            self.blk[b as usize] = super::Blk::FREE;
            self.s.adopt_state(b, BState::Free);
        } else {
            self.set_bad(b);
        }
        Ok(())
    }

    /// Mount: every block's header (charged reads) — erase count, bad, whether it holds
    /// anything — where each programmed block's pages end (`Substrate::write_pointer`:
    /// read from the top), and the blocks whose erase was interrupted (to erase again).
    fn read_headers(&mut self, now: Nanos) -> Result<(Vec<u32>, Vec<u32>), FtlError> {
        let nblocks = self.s.geo().total_blocks();
        let mut next = vec![0u32; nblocks as usize];
        let mut dirty = Vec::new();
        for b in 0..nblocks {
            let info = self.s.read_header(now, b, Cause::Mount)?;
            self.s.adopt_erase_count(b, info.erase_count);
            if info.status != BlockStatus::Good {
                self.set_bad(b);
                continue;
            }
            self.blk[b as usize] = super::Blk::FREE;
            self.s.adopt_state(b, BState::Free);
            if info.needs_erase {
                dirty.push(b);
                continue;
            }
            // From the top: an RFTL primary's fixed offsets may skip pages.
            let ppb = self.ppb;
            next[b as usize] = self
                .s
                .write_pointer(now, b, &info, ppb, |i| i, Cause::Mount)?;
        }
        Ok((next, dirty))
    }

    /// Mount: block `b`'s pages up to `next[b]` — the last one read whole (only it can have
    /// been torn by a cut), the others by their records — each newest copy of a logical
    /// page kept in `newest`; what the block holds (`Found`). A torn last page closes the
    /// block (`next[b]` set to its end).
    fn scan_block(
        &mut self,
        now: Nanos,
        b: u32,
        next: &mut [u32],
        logical: u64,
        newest: &mut [Option<Newest>],
        max_seq: &mut u64,
    ) -> Result<Found, FtlError> {
        let (ppb, n) = (self.ppb, next[b as usize]);
        let mut f = Found::Garbage;
        let mut scratch = core::mem::take(&mut self.zeros);
        for page in 0..n {
            let phys = b * ppb + page;
            // Only a block's last programmed page can have been torn by a cut: it is
            // read whole (its record can decode while its data do not); the others by
            // their records. A block whose last page is torn takes no more pages, so
            // that page stays the one the next mount reads whole.
            let how = if page + 1 == n {
                Sense::Page(&mut scratch)
            } else {
                Sense::Record
            };
            let r = match self.s.sense_in(now, b, page, how, Cause::Mount)?.0 {
                Sensed::Data(controller::ReadInfo { record: r, .. }) => r,
                Sensed::Erased | Sensed::Failed => {
                    self.torn.insert(phys);
                    if page + 1 == n {
                        next[b as usize] = ppb;
                    }
                    continue;
                }
            };
            let (role, lbn, lpn, flags) = self.role_of(&r, page, logical)?;
            f = f.with(role, lbn, r.seq)?;
            *max_seq = (*max_seq).max(r.seq);
            let slot = &mut newest[lpn as usize];
            if slot.is_none_or(|n| n.seq < r.seq) {
                *slot = Some(Newest {
                    seq: r.seq,
                    phys,
                    tomb: flags & rec::TOMB != 0,
                });
            }
        }
        scratch.fill(0);
        self.zeros = scratch;
        Ok(f)
    }

    /// What record `r` of page `page` says: the role and logical block of its block, its
    /// logical page and flags. `Corrupt` for a record this scheme never writes.
    fn role_of(
        &self,
        r: &controller::OobRecord,
        page: u32,
        logical: u64,
    ) -> Result<(Role, u32, u64, u64), FtlError> {
        let ppb = self.ppb as u64;
        let lpn = r.lpn & rec::LPN;
        let flags = r.lpn & !rec::LPN;
        if r.kind.data_class().is_none()
            || flags & !rec::FLAGS != 0
            || lpn >= logical
            || r.seq > SEQ_LIMIT
        {
            return Err(FtlError::Corrupt(
                "a page's record is not one of this scheme's (another scheme's volume?)",
            ));
        }
        let append = flags & rec::APPEND != 0;
        let (role, lbn) = match (self.kind, append) {
            (RtKind::Gftl, true) => (Role::Buffer, NONE),
            (RtKind::Gftl, false) => (Role::Data, (lpn / ppb) as u32),
            (RtKind::Rftl, true) => (Role::Append, (lpn / ppb) as u32),
            (RtKind::Rftl, false) => {
                if lpn % ppb != page as u64 {
                    return Err(FtlError::Corrupt(
                        "an RFTL primary page is not at its offset",
                    ));
                }
                (Role::Data, (lpn / ppb) as u32)
            }
        };
        Ok((role, lbn, lpn, flags))
    }

    /// Mount: the RAM tables of the blocks kept, from the newest copies — the shadow map
    /// (each logical page's newest copy, trims dropped), and RFTL's page states of each
    /// primary and offset tables of each replacement (logical blocks to merge excepted).
    fn rebuild_rftl_tables(&mut self, newest: &[Option<Newest>], merge: &[u32]) {
        let (ppb, logical) = (self.ppb, newest.len());
        let mut shadow = vec![NONE; logical];
        for (lpn, n) in newest.iter().enumerate() {
            let Some(n) = n else { continue };
            if !n.tomb {
                shadow[lpn] = n.phys;
            }
        }
        self.shadow = shadow;
        if self.kind == RtKind::Rftl {
            for x in 0..self.lbns {
                let e = self.map[x as usize];
                if merge.contains(&x) {
                    continue;
                }
                if e.d != NONE {
                    let mut st = vec![pst::NONE; ppb as usize];
                    for (o, s) in st.iter_mut().enumerate() {
                        let lpn = x as u64 * ppb as u64 + o as u64;
                        if let Some(n) = newest[lpn as usize] {
                            if n.phys == e.d * ppb + o as u32 {
                                *s = if n.tomb { pst::TOMB } else { pst::DATA };
                            }
                        }
                    }
                    self.pstate.insert(e.d, st);
                }
                if e.r != NONE {
                    let mut t = vec![0u16; ppb as usize];
                    for (o, v) in t.iter_mut().enumerate() {
                        let lpn = x as u64 * ppb as u64 + o as u64;
                        if let Some(n) = newest[lpn as usize] {
                            if n.phys / ppb == e.r {
                                *v = (n.phys % ppb + 1) as u16 | if n.tomb { TOMB_BIT } else { 0 };
                            }
                        }
                    }
                    self.tab.insert(e.r, t);
                }
            }
        }
    }

    /// Mount: GFTL's write buffer — its map from the newest copies in buffer blocks
    /// (`buffers`: (oldest sequence number, block), oldest first); a buffer block holding
    /// none is erased.
    fn rebuild_gftl_buffer(
        &mut self,
        now: Nanos,
        buffers: &[(u64, u32)],
        newest: &[Option<Newest>],
    ) -> Result<(), FtlError> {
        let ppb = self.ppb;
        let mut pages_of: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        for &(_, b) in buffers {
            pages_of.insert(b, vec![u64::MAX; ppb as usize]);
        }
        for (lpn, n) in newest.iter().enumerate() {
            let Some(n) = n else { continue };
            let b = n.phys / ppb;
            if let Some(v) = pages_of.get_mut(&b) {
                v[(n.phys % ppb) as usize] = lpn as u64;
                self.buf.insert(
                    lpn as u64,
                    BufEntry {
                        phys: n.phys,
                        tomb: n.tomb,
                    },
                );
                self.buf_live[b as usize] += 1;
            }
        }
        for &(_, b) in buffers {
            if self.buf_live[b as usize] == 0 {
                self.mount_erase(now, b)?;
            } else {
                self.buf_blocks.push_back(b);
                self.buf_pages
                    .insert(b, pages_of.remove(&b).unwrap_or_default());
            }
        }
        Ok(())
    }

    /// The full scan and the rebuild (see the module docs).
    fn scan_and_rebuild(&mut self, now: Nanos) -> Result<RecoveryReport, FtlError> {
        let ppb = self.ppb;
        let scan = self.scan_all(now)?;
        let newest = scan.newest;
        // Which blocks hold a newest copy.
        let mut holds = vec![false; self.s.geo().total_blocks() as usize];
        for n in newest.iter().flatten() {
            holds[(n.phys / ppb) as usize] = true;
        }
        let (cands, buffers) = self.adopt_found(&scan.found);
        let (merge, stale) = self.assign_blocks(&cands, &holds);
        for b in stale {
            self.mount_erase(now, b)?;
        }
        // The RAM tables of the blocks kept (the shadow map, RFTL's page states and tables).
        self.rebuild_rftl_tables(&newest, &merge);
        // GFTL's buffer: its map from the newest copies in buffer blocks, oldest block first.
        if self.kind == RtKind::Gftl {
            self.rebuild_gftl_buffer(now, &buffers, &newest)?;
        }
        self.refill_pool();
        // Merges: every newest copy of the logical block into a fresh block, in offset
        // order; then its other blocks go.
        for x in merge {
            self.mount_merge(now, x, &newest)?;
        }
        if self.kind == RtKind::Gftl {
            for x in 0..self.lbns {
                let d = self.map[x as usize].d;
                if d != NONE && self.blk[d as usize].next >= ppb {
                    self.queued[x as usize] = true;
                    self.queue.push_back(x);
                }
            }
        }
        let (reads, time) = self.s.recovery_time(&[Cause::Mount]);
        let mapped = self.shadow.iter().filter(|&&p| p != NONE).count() as u64;
        Ok(RecoveryReport {
            procedure: "full-scan".into(),
            checkpoint_gen: 0,
            checkpoint_pages: 0,
            blocks_scanned: scan.blocks_scanned,
            pages_scanned: scan.pages_scanned,
            pages_read: reads,
            time,
            mapped_pages: mapped,
        })
    }

    /// The scan: every block's header (the good blocks size the volume), then every
    /// programmed page's record; blocks holding only garbage are erased.
    fn scan_all(&mut self, now: Nanos) -> Result<Scan, FtlError> {
        let nblocks = self.s.geo().total_blocks();
        let (mut next, mut dirty) = self.read_headers(now)?;
        self.size_volume()?;
        let logical = self.logical_pages();
        let mut out = Scan {
            newest: vec![None; logical as usize],
            found: vec![Found::Empty; nblocks as usize],
            blocks_scanned: 0,
            pages_scanned: 0,
        };
        let mut max_seq = 0u64;
        for b in 0..nblocks {
            let n = next[b as usize];
            if n == 0 || self.blk[b as usize].role == Role::Bad {
                continue;
            }
            out.blocks_scanned += 1;
            out.pages_scanned += n as u64;
            let f = self.scan_block(now, b, &mut next, logical, &mut out.newest, &mut max_seq)?;
            out.found[b as usize] = f;
            self.blk[b as usize].next = next[b as usize];
            if f == Found::Garbage {
                dirty.push(b);
            }
        }
        self.s.seq = max_seq + 1;
        for b in dirty {
            self.mount_erase(now, b)?;
        }
        Ok(out)
    }

    /// The roles the scan found become the blocks' (open to the substrate); returns the
    /// candidates per logical block, newest first, and GFTL's buffer blocks, oldest first.
    fn adopt_found(&mut self, found: &[Found]) -> (Candidates, Vec<(u64, u32)>) {
        let mut cands: Candidates = BTreeMap::new();
        let mut buffers: Vec<(u64, u32)> = Vec::new();
        for (b, f) in found.iter().enumerate() {
            if let Found::Used { role, lbn, first } = *f {
                let b = b as u32;
                self.blk[b as usize].role = role;
                self.blk[b as usize].lbn = lbn;
                self.s.adopt_state(b, BState::Open);
                if role == Role::Buffer {
                    buffers.push((first, b));
                } else {
                    cands.entry(lbn).or_default().push((first, b, role));
                }
            }
        }
        buffers.sort_unstable();
        for v in cands.values_mut() {
            v.sort_unstable_by(|a, b| b.cmp(a));
        }
        (cands, buffers)
    }

    /// Clean logical blocks take their blocks (the primary: the block holding a newest
    /// copy, else the newest; the replacement: the one holding a newest copy); returns the
    /// logical blocks to merge (two holders of a role, or a replacement without a primary)
    /// and the blocks no logical block keeps.
    fn assign_blocks(&mut self, cands: &Candidates, holds: &[bool]) -> (Vec<u32>, Vec<u32>) {
        let mut merge = Vec::new();
        let mut stale = Vec::new();
        for (&x, v) in cands {
            let holders: Vec<(u32, Role)> = v
                .iter()
                .filter(|c| holds[c.1 as usize])
                .map(|c| (c.1, c.2))
                .collect();
            let data_holders = holders.iter().filter(|h| h.1 == Role::Data).count();
            let app_holders = holders.iter().filter(|h| h.1 == Role::Append).count();
            if data_holders > 1 || app_holders > 1 {
                merge.push(x);
                continue;
            }
            let d = holders
                .iter()
                .find(|h| h.1 == Role::Data)
                .map(|h| h.0)
                .or_else(|| v.iter().find(|c| c.2 == Role::Data).map(|c| c.1));
            let r = holders.iter().find(|h| h.1 == Role::Append).map(|h| h.0);
            if r.is_some() && d.is_none() {
                // An RFTL replacement without a primary: merge it into one.
                merge.push(x);
                continue;
            }
            self.map[x as usize] = Lb {
                d: d.unwrap_or(NONE),
                r: r.unwrap_or(NONE),
                b: NONE,
            };
            stale.extend(
                v.iter()
                    .map(|c| c.1)
                    .filter(|&b| Some(b) != d && Some(b) != r),
            );
        }
        (merge, stale)
    }

    /// Merges logical block `x` at mount: its newest copies (GFTL: those not in the
    /// buffer) into a fresh block at their offsets, then every other block of `x` erased.
    fn mount_merge(
        &mut self,
        now: Nanos,
        x: u32,
        newest: &[Option<Newest>],
    ) -> Result<(), FtlError> {
        let ppb = self.ppb;
        let old: Vec<u32> = (0..self.blk.len() as u32)
            .filter(|&b| {
                let k = self.blk[b as usize];
                k.lbn == x && matches!(k.role, Role::Data | Role::Append)
            })
            .collect();
        let mut done = false;
        for _ in 0..4 {
            let Some(n) = self.take_free(Role::Data, x) else {
                return Err(FtlError::NoSpace);
            };
            let mut st = vec![pst::NONE; ppb as usize];
            let mut ok = true;
            for o in 0..ppb {
                let lpn = x as u64 * ppb as u64 + o as u64;
                let Some(nw) = newest[lpn as usize] else {
                    continue;
                };
                let src_block = nw.phys / ppb;
                if !old.contains(&src_block) {
                    continue;
                }
                let page = match self.kind {
                    RtKind::Rftl => o,
                    RtKind::Gftl => self.blk[n as usize].next,
                };
                match self.copy(now, nw.phys, nw.tomb, n, page, lpn)? {
                    Some(Prog::Done) => {
                        st[o as usize] = if nw.tomb { pst::TOMB } else { pst::DATA };
                        let to = if nw.tomb { NONE } else { n * ppb + page };
                        self.follow(lpn, nw.phys, to);
                    }
                    None => {}
                    Some(Prog::Conflict | Prog::Bad) => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                self.map[x as usize] = Lb {
                    d: n,
                    r: NONE,
                    b: NONE,
                };
                if self.kind == RtKind::Rftl {
                    self.pstate.insert(n, st);
                }
                done = true;
                break;
            }
            if self.s.state[n as usize] == BState::Bad {
                self.set_bad(n);
            } else {
                self.mount_erase(now, n)?;
                self.refill_pool();
            }
        }
        if !done {
            return Err(FtlError::NoSpace);
        }
        for b in old {
            self.mount_erase(now, b)?;
        }
        self.refill_pool();
        Ok(())
    }
}

/// Candidate blocks per logical block: (first sequence number, block, role), newest first.
type Candidates = BTreeMap<u32, Vec<(u64, u32, Role)>>;

/// What `scan_all` found.
struct Scan {
    /// The newest copy of each logical page.
    newest: Vec<Option<Newest>>,
    /// What each block holds.
    found: Vec<Found>,
    blocks_scanned: u64,
    pages_scanned: u64,
}
